//! Phase 5: epics and stories. One epic per component, one story per requirement it
//! implements plus one that tests and documents the whole; one more epic for the
//! non-functional requirements.
//!
//! This module decides what the epics are; the text is in the templates `epic.md` and
//! `epics-index.md` of `specs/templates/builtin/`.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::{Ctx, Draft, Folder, Moscow, Phase, Step};
use tlv4_specdoc::spec::{
    self, Adr, Architecture, Component as ComponentRow, Goal as GoalRow, Req as ReqRow,
    Requirements,
};

/// What kind of work a story is; its text follows from it.
#[derive(Serialize, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
enum StoryKind {
    /// Delivers one functional requirement.
    #[default]
    Feature,
    /// Tests and documents a whole epic end to end.
    Whole,
    /// Meets one non-functional requirement.
    Quality,
}

#[derive(Serialize, Default)]
struct Story {
    /// `STORY-<epic>-NNN`, given by [`Inputs::epic`].
    id: String,
    kind: StoryKind,
    /// The requirement it delivers or meets (none for `whole`): its title, its user story
    /// and acceptance criteria (`feature`), its metric and target (`quality`).
    req: Option<ReqRow>,
    /// Goals whose success metric this story checks first (`feature`).
    metrics: Vec<GoalRow>,
    size: &'static str,
    traces: Vec<String>,
}

/// What kind of epic; its description follows from it.
#[derive(Serialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum EpicKind {
    /// Builds one component.
    Component,
    /// Requirements no component implements.
    Orphans,
    /// The non-functional requirements.
    Quality,
}

#[derive(Serialize)]
struct Epic {
    id: String,
    kind: EpicKind,
    title: String,
    priority: Moscow,
    mvp: bool,
    size: &'static str,
    reqs: Vec<String>,
    adrs: Vec<String>,
    deps: Vec<String>,
    component: Option<ComponentRow>,
    /// The goals the epic's requirements serve, and the text of those the brief has.
    goals: Vec<String>,
    goal_texts: Vec<String>,
    stories: Vec<Story>,
    /// The file name, in `spec/epics/`.
    file: String,
}

/// The data of one epic file.
#[derive(Serialize)]
struct EpicDoc<'a> {
    #[serde(flatten)]
    epic: &'a Epic,
    requirements: Vec<&'a ReqRow>,
    decisions: Vec<&'a Adr>,
    user: &'a str,
}

/// The data of the index.
#[derive(Serialize)]
struct IndexDoc<'a> {
    epics: &'a [Epic],
    order: Vec<&'a Epic>,
    mvp_fallback: bool,
    /// How many functional requirements there are.
    functional: usize,
    goals: &'a [GoalRow],
    /// Every requirement, and the stories of every epic, in order.
    reqs: Vec<&'a ReqRow>,
    stories: Vec<&'a Story>,
    /// The decisions of the architecture.
    adrs: &'a [Adr],
}

/// What the epics are cut from.
struct Inputs {
    goals: Vec<GoalRow>,
    reqs: Requirements,
    arch: Architecture,
}

impl Inputs {
    fn req(&self, id: &str) -> Option<&ReqRow> {
        self.reqs.all().find(|r| r.id == id)
    }

    /// Epic number `n` of `kind` over the requirements `rows`, with its stories, numbered;
    /// it has the highest priority of its requirements and is in the MVP when that is Must.
    fn epic(
        &self,
        n: usize,
        kind: EpicKind,
        title: String,
        rows: &[&ReqRow],
        mut stories: Vec<Story>,
    ) -> Epic {
        for (i, s) in stories.iter_mut().enumerate() {
            s.id = format!("STORY-{n:03}-{:03}", i + 1);
        }
        let ids: Vec<String> = rows.iter().map(|r| r.id.clone()).collect();
        let priority = (rows.iter().map(|r| r.moscow()).min()).unwrap_or(Moscow::Should);
        let id = format!("EPIC-{n:03}");
        Epic {
            file: format!("{id}-{}.md", super::text::slug(&title, "epic")),
            id,
            kind,
            title,
            priority,
            mvp: priority == Moscow::Must,
            size: epic_size(&stories),
            adrs: self.adrs_for(&ids),
            reqs: ids,
            deps: Vec::new(),
            component: None,
            goals: Vec::new(),
            goal_texts: Vec::new(),
            stories,
        }
    }

    /// The decisions that trace to any of `ids`.
    fn adrs_for(&self, ids: &[String]) -> Vec<String> {
        self.arch
            .adrs
            .iter()
            .filter(|a| a.traces.iter().any(|t| ids.contains(t)))
            .map(|a| a.id.clone())
            .collect()
    }
}

fn epic_size(stories: &[Story]) -> &'static str {
    let points = |size: &str| match size {
        "S" => 1,
        "M" => 2,
        "L" => 3,
        _ => 5,
    };
    match stories.iter().map(|s| points(s.size)).sum::<u32>() {
        0..=2 => "S",
        3..=5 => "M",
        6..=9 => "L",
        _ => "XL",
    }
}

fn story_size(criteria: usize) -> &'static str {
    match criteria {
        0..=2 => "S",
        3..=4 => "M",
        _ => "L",
    }
}

/// Writes `spec/epics/_index.md` and one file per epic.
pub(super) fn write(ctx: &Ctx, folder: &Folder) -> Step<Draft> {
    let read = spec::Spec::read(folder);
    let brief = read.brief.unwrap_or_default();
    let inputs = Inputs {
        goals: brief.goals,
        reqs: read.requirements.unwrap_or_default(),
        arch: read.architecture.unwrap_or_default(),
    };
    if inputs.reqs.functional.is_empty() {
        return Err(format!(
            "cannot write the epics: `{}` lists no REQ-NNN requirement",
            spec::REQUIREMENTS_INDEX
        ));
    }
    if inputs.arch.components.is_empty() {
        return Err(format!(
            "cannot write the epics: `{}` lists no COMP-NNN component",
            spec::ARCHITECTURE_INDEX
        ));
    }
    let user = brief.users.first().map_or("Developer", String::as_str);
    let mut epics = feature_epics(&inputs);
    if let Some(quality) = quality_epic(&inputs, &epics) {
        epics.push(quality);
    }
    let mvp_fallback = !epics.iter().any(|e| e.mvp);
    if mvp_fallback {
        epics[0].mvp = true;
    }

    let mut files = Vec::new();
    for e in &epics {
        let path = format!("spec/epics/{}", e.file);
        let doc = EpicDoc {
            epic: e,
            requirements: e.reqs.iter().filter_map(|id| inputs.req(id)).collect(),
            decisions: (inputs.arch.adrs.iter())
                .filter(|a| e.adrs.contains(&a.id))
                .collect(),
            user,
        };
        files.push((path.clone(), ctx.fill(&path, "epic.md", &doc)?));
    }
    let index = index(&inputs, &epics, mvp_fallback);
    ctx.draft(Phase::Epics, &index, files)
}

/// One epic per component that implements a known functional requirement, then one for the
/// functional requirements no component implements; their dependencies follow the
/// components'.
fn feature_epics(inputs: &Inputs) -> Vec<Epic> {
    let mut groups: Vec<(Option<ComponentRow>, Vec<String>)> = inputs
        .arch
        .components
        .iter()
        .map(|c| {
            let known: Vec<String> = c
                .implements
                .iter()
                .filter(|r| inputs.req(r).is_some_and(ReqRow::functional))
                .cloned()
                .collect();
            (Some(c.clone()), known)
        })
        .filter(|(_, rs)| !rs.is_empty())
        .collect();
    let covered: BTreeSet<String> = groups.iter().flat_map(|(_, rs)| rs.clone()).collect();
    let orphans: Vec<String> = inputs
        .reqs
        .functional
        .iter()
        .filter(|r| !covered.contains(&r.id))
        .map(|r| r.id.clone())
        .collect();
    if !orphans.is_empty() {
        groups.push((None, orphans));
    }
    let mut metric_done: BTreeSet<String> = BTreeSet::new();
    let mut epics: Vec<Epic> = Vec::new();
    for (component, ids) in groups {
        let n = epics.len() + 1;
        let rows: Vec<&ReqRow> = ids.iter().filter_map(|i| inputs.req(i)).collect();
        let mut stories = Vec::new();
        for r in &rows {
            let metrics: Vec<GoalRow> = r
                .traces
                .iter()
                .filter_map(|t| inputs.goals.iter().find(|g| g.id == *t))
                .filter(|g| !g.metric.is_empty() && metric_done.insert(g.id.clone()))
                .cloned()
                .collect();
            // Without criteria of its own the story gets two general ones.
            let criteria = if r.criteria.is_empty() {
                2
            } else {
                r.criteria.len()
            };
            stories.push(Story {
                kind: StoryKind::Feature,
                req: Some((*r).clone()),
                size: story_size(criteria + metrics.len()),
                metrics,
                traces: vec![r.id.clone()],
                ..Story::default()
            });
        }
        stories.push(Story {
            kind: StoryKind::Whole,
            size: "S",
            traces: ids.clone(),
            ..Story::default()
        });
        let (kind, title) = match &component {
            Some(c) => (EpicKind::Component, c.name.clone()),
            None => (EpicKind::Orphans, "Remaining requirements".into()),
        };
        let mut epic = inputs.epic(n, kind, title, &rows, stories);
        epic.goals = (rows.iter().flat_map(|r| r.traces.clone()))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        epic.goal_texts = (epic.goals.iter())
            .filter_map(|g| inputs.goals.iter().find(|x| x.id == *g))
            .map(|g| g.text.clone())
            .collect();
        epic.component = component;
        epics.push(epic);
    }
    // An epic waits for the epics of the components its component depends on.
    let epic_of: BTreeMap<String, String> = (epics.iter())
        .filter_map(|e| Some((e.component.as_ref()?.id.clone(), e.id.clone())))
        .collect();
    for e in &mut epics {
        let depends_on = e.component.iter().flat_map(|c| &c.depends_on);
        e.deps = (depends_on.filter_map(|d| epic_of.get(d)))
            .filter(|d| **d != e.id)
            .cloned()
            .collect();
    }
    epics
}

/// The epic of the non-functional requirements, after the feature epics it measures.
fn quality_epic(inputs: &Inputs, features: &[Epic]) -> Option<Epic> {
    let nfrs = &inputs.reqs.non_functional;
    if nfrs.is_empty() {
        return None;
    }
    let n = features.len() + 1;
    let stories: Vec<Story> = nfrs
        .iter()
        .map(|r| Story {
            kind: StoryKind::Quality,
            req: Some(r.clone()),
            size: "M",
            traces: vec![r.id.clone()],
            ..Story::default()
        })
        .collect();
    let categories: Vec<String> = nfrs
        .iter()
        .map(|r| r.category.to_lowercase())
        .filter(|c| !c.is_empty())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let title = format!(
        "Cross-cutting quality: {}",
        if categories.is_empty() {
            "non-functional requirements".to_owned()
        } else {
            super::text::and_list(&categories)
        }
    );
    let rows: Vec<&ReqRow> = nfrs.iter().collect();
    let mut epic = inputs.epic(n, EpicKind::Quality, title, &rows, stories);
    epic.deps = (features.iter())
        .filter(|e| e.mvp || !epic.mvp)
        .map(|e| e.id.clone())
        .collect();
    Some(epic)
}

/// The data of the index: order, MVP, traceability, sizes and risks.
fn index<'a>(inputs: &'a Inputs, epics: &'a [Epic], mvp_fallback: bool) -> IndexDoc<'a> {
    // Execution order: dependencies first, then by id.
    let mut order: Vec<&Epic> = Vec::new();
    while order.len() < epics.len() {
        let next = epics
            .iter()
            .filter(|e| !order.iter().any(|o| o.id == e.id))
            .find(|e| e.deps.iter().all(|d| order.iter().any(|o| o.id == *d)))
            .or_else(|| epics.iter().find(|e| !order.iter().any(|o| o.id == e.id)));
        match next {
            Some(e) => order.push(e),
            None => break,
        }
    }
    IndexDoc {
        epics,
        order,
        mvp_fallback,
        functional: inputs.reqs.functional.len(),
        goals: &inputs.goals,
        reqs: inputs.reqs.all().collect(),
        stories: epics.iter().flat_map(|e| &e.stories).collect(),
        adrs: &inputs.arch.adrs,
    }
}
