//! Phase 5: epics and stories. One epic per component, one story per requirement it
//! implements plus one that tests and documents the whole; one more epic for the
//! non-functional requirements.

use std::collections::BTreeSet;

use super::brief::count;
use super::parse::{self, ComponentRow, ReqRow};
use super::text;
use super::{Ctx, Draft, EPICS_TEMPLATE, Folder, Moscow, Phase, Step, template};
use crate::specdoc::spec;

struct Story {
    id: String,
    title: String,
    user_story: String,
    criteria: Vec<String>,
    size: &'static str,
    traces: Vec<String>,
    component: String,
}

struct Epic {
    id: String,
    title: String,
    description: String,
    priority: Moscow,
    mvp: bool,
    reqs: Vec<String>,
    adrs: Vec<String>,
    deps: Vec<String>,
    component: Option<ComponentRow>,
    stories: Vec<Story>,
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
    let brief = ctx.require(folder, spec::BRIEF, Phase::Epics)?;
    ctx.require(folder, spec::REQUIREMENTS_INDEX, Phase::Epics)?;
    ctx.require(folder, spec::ARCHITECTURE_INDEX, Phase::Epics)?;
    let goals = parse::goals(brief);
    let users = parse::users(brief);
    let reqs = parse::requirements(folder);
    let arch = parse::architecture(folder);
    if reqs.functional.is_empty() {
        return Err(format!(
            "cannot write the epics: `{}` lists no REQ-NNN requirement",
            spec::REQUIREMENTS_INDEX
        ));
    }
    if arch.components.is_empty() {
        return Err(format!(
            "cannot write the epics: `{}` lists no COMP-NNN component",
            spec::ARCHITECTURE_INDEX
        ));
    }
    let user = users.first().cloned().unwrap_or_else(|| "Developer".into());
    let actor = format!("{} {}", text::article(&user), user.to_lowercase());
    let test_command = ctx
        .discovery
        .code
        .test_framework
        .as_ref()
        .filter(|t| !t.command.is_empty())
        .map(|t| t.command.clone());
    let req = |id: &str| reqs.all().find(|r| r.id == id);
    let adrs_for = |ids: &[String]| -> Vec<String> {
        arch.adrs
            .iter()
            .filter(|a| a.traces.iter().any(|t| ids.contains(t)))
            .map(|a| a.id.clone())
            .collect()
    };

    // Feature epics: one per component; requirements no component implements get their own.
    let mut groups: Vec<(Option<ComponentRow>, Vec<String>)> = arch
        .components
        .iter()
        .map(|c| {
            let known: Vec<String> = c
                .implements
                .iter()
                .filter(|r| req(r).is_some())
                .cloned()
                .collect();
            (Some(c.clone()), known)
        })
        .filter(|(_, rs)| !rs.is_empty())
        .collect();
    let covered: BTreeSet<String> = groups.iter().flat_map(|(_, rs)| rs.clone()).collect();
    let orphans: Vec<String> = reqs
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
        let epic_id = format!("EPIC-{n:03}");
        let rows: Vec<&ReqRow> = ids.iter().filter_map(|i| req(i)).collect();
        let comp_label = component
            .as_ref()
            .map(|c| format!("{} {}", c.id, c.name))
            .unwrap_or_else(|| "no component yet".into());
        let mut stories = Vec::new();
        for r in &rows {
            let mut criteria = r.criteria.clone();
            if criteria.is_empty() {
                criteria.push(format!(
                    "Given the change is in place, when {actor} uses it, then this holds: {}",
                    text::lower_first(&r.title)
                ));
                criteria.push(
                    "Given invalid input, when it is used, then it is refused with a clear \
                     message"
                        .into(),
                );
            }
            for g in r
                .traces
                .iter()
                .filter_map(|t| goals.iter().find(|g| g.id == *t))
            {
                if !g.metric.is_empty() && metric_done.insert(g.id.clone()) {
                    criteria.push(format!(
                        "The success metric of {} holds: {} ({})",
                        g.id,
                        text::lower_first(&g.metric),
                        g.target
                    ));
                }
            }
            let user_story = if r.story.starts_with("As ") {
                r.story.clone()
            } else {
                format!(
                    "As {actor}, I want this to hold: {}, so that the requirement {} is met.",
                    text::lower_first(&r.title),
                    r.id
                )
            };
            stories.push(Story {
                id: format!("STORY-{n:03}-{:03}", stories.len() + 1),
                title: r.title.clone(),
                user_story,
                size: story_size(criteria.len()),
                criteria,
                traces: vec![r.id.clone()],
                component: comp_label.clone(),
            });
        }
        let name = component
            .as_ref()
            .map(|c| c.name.clone())
            .unwrap_or_else(|| "Remaining requirements".into());
        let mut criteria = vec![
            format!(
                "An end-to-end test exercises {} together and passes",
                text::and_list(&ids)
            ),
            "The new behaviour is described where users look for it (help text, README or \
             docs), with an example"
                .to_owned(),
        ];
        if let Some(cmd) = &test_command {
            criteria.push(format!("`{cmd}` passes with every test of this epic"));
        }
        stories.push(Story {
            id: format!("STORY-{n:03}-{:03}", stories.len() + 1),
            title: format!("Test and document {} end to end", text::lower_first(&name)),
            user_story: format!(
                "As a maintainer, I want {} checked together and documented, so that the part \
                 keeps working as a whole after later changes.",
                text::and_list(&ids)
            ),
            size: "S",
            criteria,
            traces: ids.clone(),
            component: comp_label.clone(),
        });
        let priority = rows
            .iter()
            .map(|r| r.priority)
            .min()
            .unwrap_or(Moscow::Should);
        let goal_ids: Vec<String> = rows
            .iter()
            .flat_map(|r| r.traces.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let description = match &component {
            Some(c) => format!(
                "Builds {} ({}), which serves {}: {}. It holds {}, one per requirement plus one \
                 that tests and documents the whole.",
                c.id,
                c.name,
                goal_ids.join(", "),
                text::and_list(
                    &goal_ids
                        .iter()
                        .filter_map(|g| goals.iter().find(|x| x.id == *g))
                        .map(|g| format!("\"{}\"", g.text))
                        .collect::<Vec<_>>()
                ),
                count(stories.len(), "story")
            ),
            None => format!(
                "Covers requirements that no component of the architecture implements yet ({}); \
                 the architecture should give them a home.",
                ids.join(", ")
            ),
        };
        epics.push(Epic {
            id: epic_id,
            title: name,
            description,
            priority,
            mvp: priority == Moscow::Must,
            adrs: adrs_for(&ids),
            reqs: ids,
            deps: Vec::new(),
            component,
            stories,
        });
    }
    // Dependencies follow the components'.
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
    if !reqs.non_functional.is_empty() {
        let n = epics.len() + 1;
        let ids: Vec<String> = reqs.non_functional.iter().map(|r| r.id.clone()).collect();
        let stories: Vec<Story> = reqs
            .non_functional
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let mut criteria = vec![format!(
                    "Given the finished change, when it is measured by \"{}\", then the result \
                     meets the target: {}",
                    if r.metric.is_empty() {
                        text::lower_first(&r.title)
                    } else {
                        text::lower_first(&r.metric)
                    },
                    if r.target.is_empty() {
                        "as stated in the requirement"
                    } else {
                        &r.target
                    }
                )];
                criteria.push(
                    "The measurement or check is recorded in the test or review report".into(),
                );
                Story {
                    id: format!("STORY-{n:03}-{:03}", i + 1),
                    title: r.title.clone(),
                    user_story: format!(
                        "As {actor}, I want the change to meet {} ({}), so that it can be \
                         trusted in daily use.",
                        r.id,
                        text::lower_first(&r.title)
                    ),
                    size: "M",
                    criteria,
                    traces: vec![r.id.clone()],
                    component: "all components".into(),
                }
            })
            .collect();
        let priority = reqs
            .non_functional
            .iter()
            .map(|r| r.priority)
            .min()
            .unwrap_or(Moscow::Should);
        let categories: Vec<String> = reqs
            .non_functional
            .iter()
            .map(|r| r.category.to_lowercase())
            .filter(|c| !c.is_empty())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        epics.push(Epic {
            id: format!("EPIC-{n:03}"),
            title: format!(
                "Cross-cutting quality: {}",
                if categories.is_empty() {
                    "non-functional requirements".to_owned()
                } else {
                    text::and_list(&categories)
                }
            ),
            description: format!(
                "Makes the whole change meet its non-functional requirements ({}). It comes \
                 after the feature epics it checks, because most of its criteria measure them.",
                ids.join(", ")
            ),
            priority,
            mvp: priority == Moscow::Must,
            adrs: adrs_for(&ids),
            deps: epics
                .iter()
                .filter(|e| e.mvp || priority != Moscow::Must)
                .map(|e| e.id.clone())
                .collect(),
            reqs: ids,
            component: None,
            stories,
        });
    }
    let mut mvp_note = String::new();
    if !epics.iter().any(|e| e.mvp) {
        epics[0].mvp = true;
        mvp_note = format!(
            " No epic is Must, so {} is taken as the MVP: it comes first in the request.",
            epics[0].id
        );
    }

    // Files.
    let dir = "spec/epics";
    let epic_part = template::part(EPICS_TEMPLATE, "epic")?;
    let story_part = template::part(EPICS_TEMPLATE, "story")?;
    let mut files = Vec::new();
    let mut epic_files = Vec::new();
    for e in &epics {
        let file = format!("{}-{}.md", e.id, text::slug(&e.title, "epic"));
        let path = format!("{dir}/{file}");
        let mut blocks = Vec::new();
        for s in &e.stories {
            blocks.push(template::render(
                story_part,
                &[
                    ("id", s.id.clone()),
                    ("title", s.title.clone()),
                    ("user_story", s.user_story.clone()),
                    ("acceptance_criteria", text::checkboxes(&s.criteria)),
                    ("size", s.size.to_owned()),
                    ("traces", s.traces.join(", ")),
                    ("component", s.component.clone()),
                ],
            )?);
        }
        let requirement_list: Vec<String> = e
            .reqs
            .iter()
            .filter_map(|id| req(id))
            .map(|r| {
                let id = match r.path.as_deref().and_then(|p| p.strip_prefix("spec/")) {
                    Some(p) => format!("[{}](../{p})", r.id),
                    None => r.id.clone(),
                };
                format!("{id} ({}): {}", r.priority.as_str(), r.title)
            })
            .collect();
        let mut architecture_list: Vec<String> = e
            .adrs
            .iter()
            .filter_map(|id| arch.adrs.iter().find(|a| a.id == *id))
            .map(|a| {
                let id = match a.path.as_deref().and_then(|p| p.strip_prefix("spec/")) {
                    Some(p) => format!("[{}](../{p})", a.id),
                    None => a.id.clone(),
                };
                format!("{id} ({}): {}", a.status, a.title)
            })
            .collect();
        architecture_list.push(match &e.component {
            Some(c) => format!("Component: {} {}", c.id, c.name),
            None => "Component: all components (cross-cutting)".into(),
        });
        let dependency_list: Vec<String> = e
            .deps
            .iter()
            .map(|d| {
                let why = if e.component.is_some() {
                    "it builds a component this epic uses"
                } else {
                    "its features are what this epic measures"
                };
                format!("{d}: blocking — {why}")
            })
            .collect();
        let mut values = ctx.common(&path);
        values.extend([
            ("id", e.id.clone()),
            ("priority", e.priority.as_str().to_owned()),
            ("mvp", e.mvp.to_string()),
            ("size", epic_size(&e.stories).to_owned()),
            ("requirements", text::yaml_list(&e.reqs)),
            ("architecture", text::yaml_list(&e.adrs)),
            ("dependencies", text::yaml_list(&e.deps)),
            ("title", e.title.clone()),
            (
                "summary",
                format!(
                    "A {} epic with {}, size {}{}. {}",
                    e.priority.as_str(),
                    count(e.stories.len(), "story"),
                    epic_size(&e.stories),
                    if e.mvp { ", part of the MVP" } else { "" },
                    if e.deps.is_empty() {
                        "It can start at once.".to_owned()
                    } else {
                        format!("It starts after {}.", text::and_list(&e.deps))
                    }
                ),
            ),
            ("description", e.description.clone()),
            ("requirement_list", text::bullets(&requirement_list, "")),
            ("architecture_list", text::bullets(&architecture_list, "")),
            (
                "dependency_list",
                text::bullets(&dependency_list, "None: this epic can start at once."),
            ),
            ("stories", blocks.join("\n")),
        ]);
        files.push((path, template::render(epic_part, &values)?));
        epic_files.push(file);
    }

    // The index.
    let story_count: usize = epics.iter().map(|e| e.stories.len()).sum();
    let epic_rows: Vec<String> = epics
        .iter()
        .zip(&epic_files)
        .map(|(e, file)| {
            format!(
                "| [{}]({file}) | {} | {} | {} | {} | {} |",
                e.id,
                text::cell(&e.title),
                e.priority.as_str(),
                if e.mvp { "yes" } else { "no" },
                e.stories.len(),
                epic_size(&e.stories)
            )
        })
        .collect();
    let node = |id: &str| id.replace('-', "");
    let mut diagram = vec!["```mermaid".to_owned(), "graph LR".to_owned()];
    for e in &epics {
        diagram.push(format!(
            "  {}[\"{}: {}\"]",
            node(&e.id),
            e.id,
            text::mermaid_label(&text::shorten(&e.title, 40))
        ));
    }
    for e in &epics {
        for d in &e.deps {
            diagram.push(format!("  {} --> {}", node(d), node(&e.id)));
        }
    }
    diagram.push("```".into());
    let notes: Vec<String> = epics
        .iter()
        .filter(|e| !e.deps.is_empty())
        .map(|e| match &e.component {
            Some(c) => format!(
                "{} waits for {}: its component {} depends on {} in the architecture.",
                e.id,
                text::and_list(&e.deps),
                c.id,
                text::and_list(&c.depends_on)
            ),
            None => format!(
                "{} waits for {}: it measures what they build.",
                e.id,
                text::and_list(&e.deps)
            ),
        })
        .collect();
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
    let execution: Vec<String> = order
        .iter()
        .enumerate()
        .map(|(i, e)| {
            format!(
                "{}. {}: {}{}",
                i + 1,
                e.id,
                e.title,
                if e.mvp { " (MVP)" } else { "" }
            )
        })
        .collect();
    let mvp: Vec<&Epic> = epics.iter().filter(|e| e.mvp).collect();
    let must_reqs: Vec<String> = reqs
        .all()
        .filter(|r| r.priority == Moscow::Must)
        .map(|r| r.id.clone())
        .collect();
    let mvp_scope = format!(
        "MVP epics: {}. Together they deliver {}.{mvp_note}",
        mvp.iter()
            .map(|e| format!("{} ({})", e.id, e.title))
            .collect::<Vec<_>>()
            .join(", "),
        if must_reqs.is_empty() {
            "the first goal of the brief".to_owned()
        } else {
            format!("every Must requirement: {}", must_reqs.join(", "))
        }
    );
    let mut done = vec!["Every acceptance criterion of the MVP stories passes".to_owned()];
    let metric_goals: Vec<String> = goals.iter().map(|g| g.id.clone()).collect();
    if !metric_goals.is_empty() {
        done.push(format!(
            "The success metrics of {} are measured and meet their targets",
            metric_goals.join(", ")
        ));
    }
    done.push(match &test_command {
        Some(cmd) => format!("`{cmd}` passes and the review verdict is approve"),
        None => "The tests pass and the review verdict is approve".to_owned(),
    });
    done.push("Open questions that block an MVP story are answered".into());
    let traceability_rows: Vec<String> = reqs
        .all()
        .map(|r| {
            let mut in_epics = Vec::new();
            let mut stories = Vec::new();
            for e in &epics {
                for s in &e.stories {
                    if s.traces.contains(&r.id) {
                        stories.push(s.id.clone());
                        if !in_epics.contains(&e.id) {
                            in_epics.push(e.id.clone());
                        }
                    }
                }
            }
            let adrs: Vec<String> = arch
                .adrs
                .iter()
                .filter(|a| a.traces.contains(&r.id))
                .map(|a| a.id.clone())
                .collect();
            format!(
                "| {} | {} | {} | {} |",
                r.id,
                in_epics.join(", "),
                stories.join(", "),
                if adrs.is_empty() {
                    "—".to_owned()
                } else {
                    adrs.join(", ")
                }
            )
        })
        .collect();
    let by_size = |size: &str| -> String {
        let ids: Vec<String> = epics
            .iter()
            .filter(|e| epic_size(&e.stories) == size)
            .map(|e| e.id.clone())
            .collect();
        if ids.is_empty() {
            "—".into()
        } else {
            format!("{} ({})", ids.len(), ids.join(", "))
        }
    };
    let estimation_rows = [
        format!("| S | small: a few days | {} |", by_size("S")),
        format!("| M | medium: about a week | {} |", by_size("M")),
        format!("| L | large: consider splitting | {} |", by_size("L")),
        format!("| XL | too large: must be split | {} |", by_size("XL")),
    ];
    let mut risk_rows = Vec::new();
    let big: Vec<String> = epics
        .iter()
        .filter(|e| matches!(epic_size(&e.stories), "L" | "XL"))
        .map(|e| e.id.clone())
        .collect();
    if !big.is_empty() {
        risk_rows.push(format!(
            "| Large epics are hard to finish in one go | {} | split them before planning |",
            big.join(", ")
        ));
    }
    let waiting: Vec<String> = epics
        .iter()
        .filter(|e| !e.deps.is_empty())
        .map(|e| e.id.clone())
        .collect();
    if !waiting.is_empty() {
        risk_rows.push(format!(
            "| A late epic delays the ones that wait for it | {} | start blocking epics first, \
             in the order above |",
            waiting.join(", ")
        ));
    }
    let proposed: Vec<String> = arch
        .adrs
        .iter()
        .filter(|a| a.status != "Accepted")
        .map(|a| a.id.clone())
        .collect();
    if !proposed.is_empty() {
        let touched: Vec<String> = epics
            .iter()
            .filter(|e| e.adrs.iter().any(|a| proposed.contains(a)))
            .map(|e| e.id.clone())
            .collect();
        risk_rows.push(format!(
            "| Proposed decisions ({}) may still change | {} | confirm them before these \
             epics start |",
            proposed.join(", "),
            if touched.is_empty() {
                "—".to_owned()
            } else {
                touched.join(", ")
            }
        ));
    }
    risk_rows.push(format!(
        "| Stories were cut offline by fixed rules | {} | review sizes and criteria at the \
         readiness gate |",
        epics
            .iter()
            .map(|e| e.id.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    ));
    let mut questions = ctx.common_questions();
    if !big.is_empty() {
        questions.push(format!("How should {} be split?", text::and_list(&big)));
    }
    questions.push("Are the story sizes right for the team that will do the work?".into());
    questions.push("Is the MVP the smallest set of epics worth releasing?".into());
    let references = [
        format!("Product brief: `{}`", spec::BRIEF),
        format!("Requirements: `{}`", spec::REQUIREMENTS_INDEX),
        format!("Architecture: `{}`", spec::ARCHITECTURE_INDEX),
        "Next: the readiness gate (QUALITY-001), then planning (PLAN-001, `plan/plan.json`)"
            .to_owned(),
    ];
    let summary = format!(
        "{} with {} cut the work into pieces that can be planned; {} form the MVP. Every \
         requirement is covered by at least one story, and every story has acceptance \
         criteria, a size and its traces.",
        count(epics.len(), "epic"),
        count(story_count, "story"),
        count(mvp.len(), "epic"),
    );
    let index_path = spec::EPICS_INDEX;
    let mut values = ctx.common(index_path);
    values.extend([
        (
            "dependencies",
            ctx.dependencies(&[
                spec::BRIEF,
                spec::REQUIREMENTS_INDEX,
                spec::ARCHITECTURE_INDEX,
            ]),
        ),
        ("title", ctx.title.clone()),
        ("summary", summary),
        ("epic_rows", epic_rows.join("\n")),
        ("dependency_diagram", diagram.join("\n")),
        (
            "dependency_notes",
            text::bullets(
                &notes,
                "No epic waits for another; all can start in parallel.",
            ),
        ),
        ("execution_order", execution.join("\n")),
        ("mvp_scope", mvp_scope),
        ("definition_of_done", text::checkboxes(&done)),
        ("traceability_rows", traceability_rows.join("\n")),
        ("estimation_rows", estimation_rows.join("\n")),
        ("risk_rows", risk_rows.join("\n")),
        ("revision_notes", ctx.revision_notes()),
        ("open_questions", text::checkboxes(&questions)),
        ("references", text::bullets(&references, "")),
    ]);
    let index = template::render(template::part(EPICS_TEMPLATE, "index")?, &values)?;
    files.insert(0, (index_path.to_owned(), index));

    let sizes: Vec<String> = ["S", "M", "L", "XL"]
        .iter()
        .map(|s| {
            format!(
                "{} {s}",
                epics.iter().filter(|e| epic_size(&e.stories) == *s).count()
            )
        })
        .collect();
    Ok(Draft {
        summary: format!(
            "epics: {} ({} MVP), {}, all {} REQ covered",
            count(epics.len(), "epic"),
            mvp.len(),
            count(story_count, "story"),
            reqs.functional.len()
        ),
        files,
        findings: vec![
            format!(
                "{}, {} MVP; {}",
                count(epics.len(), "epic"),
                mvp.len(),
                count(story_count, "story")
            ),
            format!(
                "All {} covered by stories",
                count(reqs.functional.len(), "REQ")
            ),
            format!("Epic sizes: {}", sizes.join(", ")),
            format!("{} open questions on the epics", questions.len()),
        ],
        decisions: vec![
            "One epic per component, one story per requirement plus one end-to-end story: \
             keeps REQ → component → story tracing direct"
                .into(),
            "Non-functional requirements get their own epic after the features it measures".into(),
        ],
    })
}
