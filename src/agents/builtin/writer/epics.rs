//! Phase 5: epics and stories. One epic per component, one story per requirement it
//! implements plus one that tests and documents the whole; one more epic for the
//! non-functional requirements.
//!
//! This module decides what the epics are; the text is in the templates `epic.md` and
//! `epics-index.md` of `specs/templates/builtin/`.

use std::collections::BTreeSet;

use serde::Serialize;

use super::{Ctx, Draft, Folder, Moscow, Phase, Step};
use crate::specdoc::spec::{
    self, Adr, Architecture, Component as ComponentRow, Goal as GoalRow, Req as ReqRow,
    Requirements,
};

/// What kind of work a story is; its text follows from it.
#[derive(Serialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum StoryKind {
    /// Delivers one functional requirement.
    Feature,
    /// Tests and documents a whole epic end to end.
    Whole,
    /// Meets one non-functional requirement.
    Quality,
}

#[derive(Serialize)]
struct Story {
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
    test_command: Option<&'a str>,
}

/// One row of the traceability matrix.
#[derive(Serialize)]
struct TraceRow {
    id: String,
    epics: Vec<String>,
    stories: Vec<String>,
    adrs: Vec<String>,
}

/// The data of the index.
#[derive(Serialize)]
struct IndexDoc<'a> {
    dependencies: Vec<String>,
    title: &'a str,
    epics: &'a [Epic],
    order: Vec<&'a Epic>,
    mvp_fallback: bool,
    /// How many functional requirements there are.
    functional: usize,
    must_reqs: Vec<String>,
    goals: Vec<String>,
    test_command: Option<&'a str>,
    traces: Vec<TraceRow>,
    /// The decisions of the architecture.
    adrs: &'a [Adr],
}

/// What the epics are cut from.
struct Inputs<'a> {
    goals: Vec<GoalRow>,
    reqs: Requirements,
    arch: Architecture,
    test_command: Option<&'a str>,
    ctx: &'a Ctx<'a>,
}

impl Inputs<'_> {
    fn req(&self, id: &str) -> Option<&ReqRow> {
        self.reqs.all().find(|r| r.id == id)
    }

    /// Epic number `n` of `kind` over the requirements `rows`, with its stories; it has the
    /// highest priority of its requirements and is in the MVP when that is Must.
    fn epic(
        &self,
        n: usize,
        kind: EpicKind,
        title: String,
        rows: &[&ReqRow],
        stories: Vec<Story>,
    ) -> Epic {
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

fn points(size: &str) -> u32 {
    match size {
        "S" => 1,
        "M" => 2,
        "L" => 3,
        _ => 5,
    }
}

fn epic_size(stories: &[Story]) -> &'static str {
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
pub fn write(ctx: &Ctx, folder: &Folder) -> Step<Draft> {
    ctx.require(folder, spec::BRIEF, Phase::Epics)?;
    ctx.require(folder, spec::REQUIREMENTS_INDEX, Phase::Epics)?;
    ctx.require(folder, spec::ARCHITECTURE_INDEX, Phase::Epics)?;
    let read = spec::Spec::read(folder);
    let brief = read.brief.unwrap_or_default();
    let inputs = Inputs {
        goals: brief.goals,
        reqs: read.requirements.unwrap_or_default(),
        arch: read.architecture.unwrap_or_default(),
        test_command: ctx.discovery.code.test_command(),
        ctx,
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
            test_command: inputs.test_command,
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
                id: format!("STORY-{n:03}-{:03}", stories.len() + 1),
                kind: StoryKind::Feature,
                req: Some((*r).clone()),
                size: story_size(criteria + metrics.len()),
                metrics,
                traces: vec![r.id.clone()],
            });
        }
        stories.push(Story {
            id: format!("STORY-{n:03}-{:03}", stories.len() + 1),
            kind: StoryKind::Whole,
            req: None,
            metrics: Vec::new(),
            size: "S",
            traces: ids.clone(),
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
    for i in 0..epics.len() {
        let deps: Vec<String> = epics[i]
            .component
            .as_ref()
            .map(|c| {
                c.depends_on
                    .iter()
                    .filter_map(|d| {
                        epics
                            .iter()
                            .find(|e| e.component.as_ref().is_some_and(|x| x.id == *d))
                            .map(|e| e.id.clone())
                    })
                    .filter(|e| *e != epics[i].id)
                    .collect()
            })
            .unwrap_or_default();
        epics[i].deps = deps;
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
        .enumerate()
        .map(|(i, r)| Story {
            id: format!("STORY-{n:03}-{:03}", i + 1),
            kind: StoryKind::Quality,
            req: Some(r.clone()),
            metrics: Vec::new(),
            size: "M",
            traces: vec![r.id.clone()],
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
    let traces = inputs
        .reqs
        .all()
        .map(|r| {
            let mut row = TraceRow {
                id: r.id.clone(),
                epics: Vec::new(),
                stories: Vec::new(),
                adrs: inputs.adrs_for(std::slice::from_ref(&r.id)),
            };
            for e in epics {
                for s in e.stories.iter().filter(|s| s.traces.contains(&r.id)) {
                    row.stories.push(s.id.clone());
                    if !row.epics.contains(&e.id) {
                        row.epics.push(e.id.clone());
                    }
                }
            }
            row
        })
        .collect();
    let ctx = inputs.ctx;
    IndexDoc {
        dependencies: ctx.dependency_paths(&[
            spec::BRIEF,
            spec::REQUIREMENTS_INDEX,
            spec::ARCHITECTURE_INDEX,
        ]),
        title: &ctx.title,
        epics,
        order,
        mvp_fallback,
        functional: inputs.reqs.functional.len(),
        must_reqs: inputs
            .reqs
            .all()
            .filter(|r| r.moscow() == Moscow::Must)
            .map(|r| r.id.clone())
            .collect(),
        goals: inputs.goals.iter().map(|g| g.id.clone()).collect(),
        test_command: inputs.test_command,
        traces,
        adrs: &inputs.arch.adrs,
    }
}
