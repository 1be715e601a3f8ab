//! The rules every spec is held to, whoever wrote it, over its [`audit`](super::audit)
//! reading: frontmatter with its keys, ids that resolve, files that exist, and the links of
//! the traceability chain (goal → requirement → component → story, decisions to
//! requirements). The readiness gate runs them all and classes what they find by
//! `specs/quality-gates.toml`; the builtin writer runs them on the documents it has just
//! written and hands none back that breaks one. Each rule is implemented here once, under the
//! id the gate's data file gives it.

use std::collections::{BTreeMap, BTreeSet};

use super::audit::{Requirement, Spec};
use super::md::{self, GATE as MD};
use super::spec::Kind;
use super::template::Part;

/// One violation of a rule, before anyone classes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    /// The rule id.
    pub rule: &'static str,
    /// Whether its subject is a Must requirement (some rules weigh those more).
    pub must: bool,
    /// Where: a path or an id.
    pub place: String,
    /// What is wrong, in one sentence.
    pub message: String,
}

/// The violations found so far, each once.
#[derive(Debug, Default)]
pub struct Violations {
    /// In the order they were found.
    pub out: Vec<Violation>,
}

impl Violations {
    /// Adds a violation of `rule` at `place`.
    pub fn add(&mut self, rule: &'static str, place: &str, message: String) {
        self.add_req(rule, false, place, message);
    }

    /// Adds a violation about a requirement, `must` when it is a Must requirement.
    pub fn add_req(&mut self, rule: &'static str, must: bool, place: &str, message: String) {
        let v = Violation {
            rule,
            must,
            place: place.to_owned(),
            message,
        };
        if !self.out.contains(&v) {
            self.out.push(v);
        }
    }
}

/// `s` unless `n` is 1.
pub fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// `text` reduced for a loose comparison of names.
pub fn loose(text: &str) -> String {
    md::words(&md::plain(text)).join(" ")
}

/// `frontmatter`: every file has frontmatter, with the `keys` its part needs, none empty.
pub fn frontmatter(spec: &Spec, keys: impl Fn(Part) -> Vec<String>, v: &mut Violations) {
    for file in &spec.files {
        let Some(text) = &file.text else { continue };
        let Some(fm) = MD.frontmatter(text) else {
            v.add("frontmatter", &file.path, "has no frontmatter".into());
            continue;
        };
        let missing: Vec<String> = keys(file.part)
            .into_iter()
            .filter(|k| fm.get(k).is_none_or(|v| v.is_empty()))
            .collect();
        if !missing.is_empty() {
            v.add(
                "frontmatter",
                &file.path,
                format!("frontmatter lacks {}", missing.join(", ")),
            );
        }
    }
}

/// Every id the spec defines.
fn defined(spec: &Spec) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    out.extend(spec.goals.iter().map(|g| g.id.clone()));
    out.extend(spec.requirements.iter().map(|r| r.id.clone()));
    out.extend(spec.components.iter().map(|c| c.id.clone()));
    out.extend(spec.adrs.iter().map(|a| a.id.clone()));
    out.extend(spec.epics.iter().map(|e| e.id.clone()));
    out.extend(spec.stories().map(|(_, s)| s.id.clone()));
    out
}

/// `reference` and `unique-id`: ids named that no document defines (nor `quoted`, the ids the
/// documents quote from elsewhere), dangling links, listed files that are missing, ids defined
/// twice.
pub fn references(spec: &Spec, quoted: &BTreeSet<String>, v: &mut Violations) {
    let known = defined(spec);
    let mut unknown: BTreeMap<String, String> = BTreeMap::new();
    for file in &spec.files {
        let Some(text) = &file.text else { continue };
        for id in MD.ids(text) {
            if !known.contains(&id) && !quoted.contains(&id) {
                unknown.entry(id).or_insert_with(|| file.path.clone());
            }
        }
    }
    for (id, path) in unknown {
        v.add(
            "reference",
            &path,
            format!("names {id}, which no document defines"),
        );
    }
    for (index, target) in &spec.dangling_links {
        v.add(
            "reference",
            index,
            format!("links `{target}`, which does not exist"),
        );
    }
    for file in spec.files.iter().filter(|x| x.part.is_item()) {
        let id = file.id.as_deref().unwrap_or("an item");
        // A dangling link of the same item already says so.
        let linked = spec
            .dangling_links
            .iter()
            .any(|(_, target)| target.rsplit('/').next().is_some_and(|n| n.starts_with(id)));
        if file.text.is_none() && !linked {
            v.add(
                "reference",
                file.doc.index(),
                format!("lists {id}, but its file is missing"),
            );
        }
    }
    for (id, place) in &spec.duplicates {
        v.add(
            "unique-id",
            place,
            format!("{id} is defined more than once"),
        );
    }
}

/// The links of the traceability chain: `goal-requirement`, `requirement-component`,
/// `requirement-story`, `component-story` and `adr-requirement`. A rule whose documents are
/// missing is not checked and goes to `skipped`.
pub fn links(spec: &Spec, v: &mut Violations, skipped: &mut Vec<&'static str>) {
    let links = Links::of(spec);
    let brief = spec.has(Kind::Brief);
    let reqs = spec.has(Kind::Requirements);
    let arch = spec.has(Kind::Architecture);
    let epics = spec.has(Kind::Epics);
    let mut check = |rule, needed| applies(skipped, rule, needed);
    if check("goal-requirement", brief && reqs) {
        for g in &spec.goals {
            if links.requirements_of(spec, &g.id).is_empty() {
                v.add(
                    "goal-requirement",
                    &g.id,
                    format!("no requirement traces to {} \"{}\"", g.id, g.text),
                );
            }
        }
    }
    if check("requirement-component", reqs && arch) {
        for r in spec.requirements.iter().filter(|r| r.functional) {
            if !links.has_component(&r.id) {
                v.add_req(
                    "requirement-component",
                    r.is_must(),
                    &r.id,
                    format!("no component implements {} \"{}\"", r.id, r.title()),
                );
            }
        }
    }
    if check("requirement-story", reqs && epics) {
        for r in spec.requirements.iter().filter(|r| r.functional) {
            if !links.has_story(&r.id) {
                v.add_req(
                    "requirement-story",
                    r.is_must(),
                    &r.id,
                    format!("no story traces {} \"{}\"", r.id, r.title()),
                );
            }
        }
    }
    if check("component-story", arch && epics) {
        for c in &spec.components {
            let by_req = c.implements.iter().any(|r| links.has_story(r));
            let by_name = spec.stories().any(|(_, s)| {
                s.component.as_deref().is_some_and(|line| {
                    MD.ids(line).contains(&c.id) || loose(line).contains(&loose(&c.name))
                })
            });
            if !by_req && !by_name {
                v.add(
                    "component-story",
                    &c.id,
                    format!("no story implements {} \"{}\"", c.id, c.name),
                );
            }
        }
    }
    if check("adr-requirement", arch) {
        for a in &spec.adrs {
            if !a
                .requirements()
                .iter()
                .any(|r| spec.requirement(r).is_some())
            {
                v.add(
                    "adr-requirement",
                    &a.id,
                    format!("{} \"{}\" traces to no known requirement", a.id, a.title()),
                );
            }
        }
    }
}

/// What each item must hold: `acceptance-criteria` for a functional requirement with a file,
/// `adr-count` for the architecture, `adr-alternatives` (at least `min_alternatives`) for a
/// decision with a file, `story-format` for a story.
pub fn items(spec: &Spec, min_alternatives: usize, v: &mut Violations) {
    for r in &spec.requirements {
        if r.functional && r.path.is_some() && r.criteria.is_empty() {
            v.add_req(
                "acceptance-criteria",
                r.is_must(),
                &r.id,
                format!("{} has no `- [ ]` acceptance criteria", r.id),
            );
        }
    }
    if spec.has(Kind::Architecture) && spec.adrs.is_empty() {
        v.add(
            "adr-count",
            Kind::Architecture.index(),
            "the architecture records no decision (ADR)".into(),
        );
    }
    for a in spec.adrs.iter().filter(|a| a.path.is_some()) {
        if a.alternatives.len() < min_alternatives {
            v.add(
                "adr-alternatives",
                &a.id,
                format!(
                    "{} weighs {} option{}; at least {min_alternatives} are expected",
                    a.id,
                    a.alternatives.len(),
                    plural(a.alternatives.len())
                ),
            );
        }
    }
    for (_, s) in spec.stories() {
        let mut lacks = Vec::new();
        if s.user_story.is_none() {
            lacks.push("a user story");
        }
        if s.criteria.is_empty() {
            lacks.push("acceptance criteria");
        }
        if s.size.is_none() {
            lacks.push("a size");
        }
        if s.traces.is_empty() {
            lacks.push("traces to a requirement");
        }
        if !lacks.is_empty() {
            v.add(
                "story-format",
                &s.id,
                format!("{} has no {}", s.id, lacks.join(", ")),
            );
        }
    }
}

/// Who links to whom.
pub struct Links {
    /// Requirement → components implementing it.
    components: BTreeMap<String, Vec<String>>,
    /// Requirement → stories tracing it.
    stories: BTreeMap<String, Vec<String>>,
    /// Goal → requirements tracing to it.
    goals: BTreeMap<String, Vec<String>>,
}

impl Links {
    /// The links of `spec`.
    pub fn of(spec: &Spec) -> Links {
        let mut l = Links {
            components: BTreeMap::new(),
            stories: BTreeMap::new(),
            goals: BTreeMap::new(),
        };
        for c in &spec.components {
            for r in &c.implements {
                l.components
                    .entry(r.clone())
                    .or_default()
                    .push(c.id.clone());
            }
        }
        for (_, s) in spec.stories() {
            for r in &s.traces {
                l.stories.entry(r.clone()).or_default().push(s.id.clone());
            }
        }
        for r in &spec.requirements {
            for g in r.goals() {
                l.goals.entry(g).or_default().push(r.id.clone());
            }
        }
        l
    }

    /// Whether a component implements `req`.
    pub fn has_component(&self, req: &str) -> bool {
        self.components.get(req).is_some_and(|v| !v.is_empty())
    }

    /// Whether a story traces `req`.
    pub fn has_story(&self, req: &str) -> bool {
        self.stories.get(req).is_some_and(|v| !v.is_empty())
    }

    /// Known requirements tracing to `goal`.
    pub fn requirements_of<'s>(&self, spec: &'s Spec, goal: &str) -> Vec<&'s Requirement> {
        self.goals
            .get(goal)
            .map(|ids| ids.iter().filter_map(|id| spec.requirement(id)).collect())
            .unwrap_or_default()
    }
}

/// Whether `rule` is checked: it is when the documents it `needed` are there; when they are
/// not, it goes to `skipped`.
pub fn applies(skipped: &mut Vec<&'static str>, rule: &'static str, needed: bool) -> bool {
    if !needed {
        skipped.push(rule);
    }
    needed
}
