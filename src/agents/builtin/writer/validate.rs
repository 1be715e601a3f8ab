//! The writer's checks on its own output, run on the written text as any reader would see
//! it: frontmatter, the headings of the template, ids that resolve to earlier documents, and
//! the traceability rules of the phase.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use serde::Deserialize;

use super::brief::count;
use super::{Ctx, Draft, Folder, Phase, Step};
use crate::specdoc::md::{self, WRITER as MD};
use crate::specdoc::spec;
use crate::specdoc::template as contract;

/// What the documents at a path must look like; see `writer-shapes.toml`.
#[derive(Deserialize)]
struct Shape {
    path: String,
    template: String,
    part: String,
    document_type: String,
    keys: Vec<String>,
}

/// The shapes, read once; a test parses the file.
static SHAPES: LazyLock<Vec<Shape>> = LazyLock::new(|| {
    #[derive(Deserialize)]
    struct File {
        shape: Vec<Shape>,
    }
    let file: File = crate::agents::builtin::template::data(builtin!("writer-shapes.toml"));
    file.shape
});

/// Part `part` of the spec template `name` (`specs/templates/<name>.md`): what a document
/// must contain, the same contract agents and the readiness gate read.
fn spec_part(name: &str, part: &str) -> Result<&'static str, String> {
    contract::named(name)
        .and_then(|t| contract::part(t, part))
        .ok_or_else(|| format!("the spec template `{name}` has no part `{part}`"))
}

/// Checks one document: frontmatter and template headings. Returns the number of headings
/// checked.
fn document(phase: Phase, path: &str, doc: &str, problems: &mut Vec<String>) -> Step<usize> {
    let Some(shape) = SHAPES.iter().find(|s| path.starts_with(&s.path)) else {
        problems.push(format!("`{path}` is not a path the writer should write"));
        return Ok(0);
    };
    match MD.frontmatter(doc) {
        None => problems.push(format!("`{path}` has no frontmatter")),
        Some(fm) => {
            for key in &shape.keys {
                match fm.get(key) {
                    None => problems.push(format!("`{path}` lacks the frontmatter key `{key}`")),
                    Some(v) if v.is_empty() => {
                        problems.push(format!("`{path}` has an empty `{key}`"))
                    }
                    Some(v) if key == "traces_to" && md::list(v).is_empty() => {
                        problems.push(format!("`{path}` traces to nothing"))
                    }
                    _ => {}
                }
            }
            if let Some(id) = fm.get("id") {
                let name = path.rsplit('/').next().unwrap_or(path);
                if !name.starts_with(&format!("{id}-")) {
                    problems.push(format!("`{path}` has the id `{id}`, not its file's"));
                }
            }
            if fm
                .get("phase")
                .is_some_and(|p| *p != phase.number().to_string())
            {
                problems.push(format!("`{path}` has the wrong phase"));
            }
            if fm
                .get("document_type")
                .is_some_and(|t| *t != shape.document_type)
            {
                problems.push(format!("`{path}` has the wrong document_type"));
            }
        }
    }
    let part = spec_part(&shape.template, &shape.part)?;
    let required = contract::literal_headings(&MD, part);
    let found: Vec<(usize, String)> = MD
        .headings(doc)
        .into_iter()
        .map(|h| (h.level, h.text))
        .collect();
    let mut at = 0;
    for (level, title) in &required {
        match found[at..]
            .iter()
            .position(|(l, t)| l == level && t == title)
        {
            Some(i) => {
                at += i + 1;
                let body = MD.section(doc, title).unwrap_or("");
                if body.trim().is_empty() {
                    problems.push(format!("`{path}`: section \"{title}\" is empty"));
                }
            }
            None => problems.push(format!(
                "`{path}`: section \"{title}\" is missing or out of order"
            )),
        }
    }
    if MD.headings(doc).iter().filter(|h| h.level == 1).count() != 1 {
        problems.push(format!("`{path}` must have exactly one H1 title"));
    }
    Ok(required.len())
}

/// Checks what `draft` wrote for `phase`, with `folder` already holding it. Returns a line
/// for `verification`, or the problems found.
pub fn phase(ctx: &Ctx, phase: Phase, draft: &Draft, folder: &Folder) -> Step<String> {
    let mut problems = Vec::new();
    let mut sections = 0;
    for (path, doc) in &draft.files {
        sections += document(phase, path, doc, &mut problems)?;
    }
    let written = Written::read(phase, folder);
    let references = references(ctx, draft, folder, &written, &mut problems);
    let trace = trace(phase, &written, &mut problems);
    if problems.is_empty() {
        let documents = count(draft.files.len(), "document");
        return Ok(format!(
            "self-validated {documents}: frontmatter, {sections} template sections, \
             {references} id references resolved, {trace}"
        ));
    }
    let more = problems.len().saturating_sub(5);
    problems.truncate(5);
    let more = if more > 0 {
        format!(" (and {more} more)")
    } else {
        String::new()
    };
    Err(format!("{}{more}", problems.join("; ")))
}

/// What the documents of each phase up to the one checked define.
struct Written {
    goals: Vec<spec::Goal>,
    reqs: spec::Requirements,
    arch: spec::Architecture,
    epics: Vec<spec::Epic>,
}

impl Written {
    fn read(phase: Phase, folder: &Folder) -> Written {
        let read = spec::Spec::read(folder);
        Written {
            goals: read.brief.map(|b| b.goals).unwrap_or_default(),
            reqs: (read.requirements.filter(|_| phase >= Phase::Requirements)).unwrap_or_default(),
            arch: (read.architecture.filter(|_| phase >= Phase::Architecture)).unwrap_or_default(),
            epics: (read.epics.filter(|_| phase >= Phase::Epics)).map_or(Vec::new(), |e| e.epics),
        }
    }

    /// Every id these documents define.
    fn ids(&self) -> BTreeSet<String> {
        let mut defined: BTreeSet<String> = self.goals.iter().map(|g| g.id.clone()).collect();
        defined.extend(self.reqs.all().map(|r| r.id.clone()));
        defined.extend(self.arch.components.iter().map(|c| c.id.clone()));
        defined.extend(self.arch.adrs.iter().map(|a| a.id.clone()));
        for e in &self.epics {
            defined.insert(e.id.clone());
            defined.extend(e.stories.iter().map(|s| s.id.clone()));
        }
        defined
    }
}

/// Checks that every id the draft names is defined by a document or quoted from the user or
/// the analyst. Returns the number of ids named.
fn references(
    ctx: &Ctx,
    draft: &Draft,
    folder: &Folder,
    written: &Written,
    problems: &mut Vec<String>,
) -> usize {
    let defined = written.ids();
    // Ids the user or the analyst wrote are quoted, not defined.
    let mut quoted: BTreeSet<String> = MD.ids(&ctx.task_text).into_iter().collect();
    quoted.extend(ctx.feedback.iter().flat_map(|f| MD.ids(f)));
    if let Some(d) = folder
        .get(spec::DISCOVERY)
        .and_then(|b| std::str::from_utf8(b).ok())
    {
        quoted.extend(MD.ids(d));
    }
    let mut references = 0;
    let mut unknown: BTreeSet<String> = BTreeSet::new();
    for (_, doc) in &draft.files {
        for id in MD.ids(doc) {
            references += 1;
            if !defined.contains(&id) && !quoted.contains(&id) {
                unknown.insert(id);
            }
        }
    }
    if !unknown.is_empty() {
        problems.push(format!(
            "ids named but defined nowhere: {}",
            unknown.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    references
}

/// Checks the traceability rules of `phase`. Returns what was traced, for `verification`.
fn trace(phase: Phase, w: &Written, problems: &mut Vec<String>) -> String {
    let (goals, reqs, arch) = (&w.goals, &w.reqs, &w.arch);
    match phase {
        Phase::Brief => {
            if goals.is_empty() {
                problems.push("the brief has no goal".into());
            }
            format!("{} goals", goals.len())
        }
        Phase::Requirements => {
            if reqs.functional.is_empty() {
                problems.push("no REQ was written".into());
            }
            for g in goals {
                if !reqs.functional.iter().any(|r| r.traces.contains(&g.id)) {
                    problems.push(format!("{} is traced by no REQ", g.id));
                }
            }
            for r in reqs.all() {
                if r.traces.is_empty() {
                    problems.push(format!("{} traces to no goal", r.id));
                }
                if r.id.starts_with("REQ-") && r.criteria.len() < 2 {
                    problems.push(format!("{} has fewer than 2 acceptance criteria", r.id));
                }
            }
            format!("every one of {} goals traced by a REQ", goals.len())
        }
        Phase::Architecture => {
            for r in &reqs.functional {
                if !arch.components.iter().any(|c| c.implements.contains(&r.id)) {
                    problems.push(format!("{} is implemented by no component", r.id));
                }
            }
            if arch.adrs.is_empty() {
                problems.push("no ADR was written".into());
            }
            for a in &arch.adrs {
                if a.traces.is_empty() {
                    problems.push(format!("{} traces to no requirement", a.id));
                }
                if a.alternatives != 3 {
                    problems.push(format!("{} does not weigh 3 alternatives", a.id));
                }
            }
            format!(
                "every one of {} REQ implemented by a component",
                reqs.functional.len()
            )
        }
        Phase::Epics => {
            let stories: Vec<&spec::Story> =
                w.epics.iter().flat_map(|e| e.stories.iter()).collect();
            for r in &reqs.functional {
                if !stories.iter().any(|s| s.traces.contains(&r.id)) {
                    problems.push(format!("{} is covered by no story", r.id));
                }
            }
            for c in &arch.components {
                if !stories
                    .iter()
                    .any(|s| s.traces.iter().any(|t| c.implements.contains(t)))
                {
                    problems.push(format!("{} has no story", c.id));
                }
            }
            for e in &w.epics {
                if e.stories.is_empty() {
                    let path = e.path.as_deref().unwrap_or(spec::EPICS_INDEX);
                    problems.push(format!("{} (`{path}`) has no story", e.id));
                }
            }
            for s in &stories {
                if s.criteria.is_empty() || s.traces.is_empty() {
                    problems.push(format!("{} lacks acceptance criteria or traces", s.id));
                }
            }
            format!(
                "every one of {} REQ covered by one of {} stories",
                reqs.functional.len(),
                stories.len()
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shape_has_its_template_part() {
        assert_eq!(SHAPES.len(), 8);
        for s in SHAPES.iter() {
            let part = spec_part(&s.template, &s.part).unwrap();
            assert!(
                !contract::literal_headings(&MD, part).is_empty(),
                "{}",
                s.path
            );
        }
    }
}
