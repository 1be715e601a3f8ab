//! The writer's checks on its own output, run on the written text as any reader would see
//! it: the rules every spec is held to (`specdoc::check`, which the readiness gate runs too)
//! on the files it wrote and on the links its phase makes, what the spec templates fix
//! (frontmatter values, headings, one title), and that the phase wrote something to link.

use std::collections::BTreeSet;

use super::brief::count;
use super::{Ctx, Draft, Folder, Phase, Step};
use tlv4_specdoc::audit::Spec;
use tlv4_specdoc::check::{self, Violations};
use tlv4_specdoc::md::GATE as MD;
use tlv4_specdoc::spec::DISCOVERY;

/// The rules each phase answers for besides those broken in the files it wrote, in
/// [`Phase::ALL`] order: the links it makes.
const LINKS: [&[&str]; 4] = [
    &[],
    &["goal-requirement", "acceptance-criteria"],
    &[
        "requirement-component",
        "adr-count",
        "adr-requirement",
        "adr-alternatives",
    ],
    &["requirement-story", "component-story", "story-format"],
];

/// The options every decision weighs: the rows of the ADR template's table.
const ALTERNATIVES: usize = 3;

/// Checks what `draft` wrote for `phase`, with `folder` already holding it. Returns a line
/// for `verification`, or the problems found.
pub(super) fn phase(ctx: &Ctx, phase: Phase, draft: &Draft, folder: &Folder) -> Step<String> {
    let spec = Spec::read(folder);
    let written = |path: &str| draft.files.iter().any(|(p, _)| p == path);
    // Ids the user or the analyst wrote are quoted, not defined.
    let discovery = folder
        .get(DISCOVERY)
        .and_then(|b| std::str::from_utf8(b).ok());
    let quoted: BTreeSet<String> = (ctx.feedback.iter().map(String::as_str))
        .chain([ctx.task_text.as_str(), discovery.unwrap_or("")])
        .flat_map(|t| MD.ids(t))
        .collect();
    let mut found = Violations::default();
    check::frontmatter(&spec, |p| p.frontmatter().into_keys().collect(), &mut found);
    check::references(&spec, &quoted, &mut found);
    check::links(&spec, &mut found, &mut Vec::new());
    check::items(&spec, ALTERNATIVES, &mut found);
    let mut problems: Vec<String> = (found.out.into_iter())
        .filter(|v| written(&v.place) || LINKS[phase as usize].contains(&v.rule))
        .map(|v| format!("{}: {}", v.place, v.message))
        .collect();
    let mut sections = 0;
    for (path, doc) in &draft.files {
        sections += document(&spec, path, doc, &mut problems);
    }
    let references: usize = draft.files.iter().map(|(_, doc)| MD.ids(doc).len()).sum();
    let trace = trace(phase, &spec, &mut problems);
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

/// Checks one written document against its spec template: the frontmatter values the
/// template fixes, an id that is its file's, every heading with something under it, one
/// title. Returns the number of headings checked.
fn document(spec: &Spec, path: &str, doc: &str, problems: &mut Vec<String>) -> usize {
    let Some(file) = spec.files.iter().find(|f| f.path == path) else {
        problems.push(format!("`{path}` is not a path the writer should write"));
        return 0;
    };
    let fm = MD.frontmatter(doc).unwrap_or_default();
    for (key, value) in file.part.frontmatter() {
        if !value.contains("{{") && fm.get(&key).is_some_and(|v| *v != value) {
            problems.push(format!("`{path}` has the wrong {key}"));
        }
    }
    if let Some((_, name_id, id)) = spec.misnamed.iter().find(|(p, ..)| p == path) {
        problems.push(format!(
            "`{path}` has the id `{id}`, not its file's {name_id}"
        ));
    }
    let sections = file.part.sections(doc);
    for (title, body) in &sections {
        match body {
            None => problems.push(format!("`{path}`: section \"{title}\" is missing")),
            Some(b) if b.trim().is_empty() => {
                problems.push(format!("`{path}`: section \"{title}\" is empty"))
            }
            Some(_) => {}
        }
    }
    if MD.headings(doc).iter().filter(|h| h.level == 1).count() != 1 {
        problems.push(format!("`{path}` must have exactly one H1 title"));
    }
    sections.len()
}

/// What `phase` links, for `verification`, after the checks no rule of the gate makes: that
/// the phase wrote goals, requirements that trace to one, and epics with stories.
fn trace(phase: Phase, spec: &Spec, problems: &mut Vec<String>) -> String {
    let goals = spec.goals.len();
    let reqs = spec.requirements.iter().filter(|r| r.functional).count();
    match phase {
        Phase::Brief => {
            if goals == 0 {
                problems.push("the brief has no goal".into());
            }
            format!("{goals} goals")
        }
        Phase::Requirements => {
            if reqs == 0 {
                problems.push("no REQ was written".into());
            }
            for r in spec.requirements.iter().filter(|r| r.goals().is_empty()) {
                problems.push(format!("{} traces to no goal", r.id));
            }
            format!("every one of {goals} goals traced by a REQ")
        }
        Phase::Architecture => format!("every one of {reqs} REQ implemented by a component"),
        Phase::Epics => {
            for e in spec.epics.iter().filter(|e| e.stories.is_empty()) {
                problems.push(format!("{} has no story", e.id));
            }
            let stories = spec.stories().count();
            format!("every one of {reqs} REQ covered by one of {stories} stories")
        }
    }
}
