//! The writer's view of earlier phases' documents: the goals, requirements, components,
//! decisions and stories it writes the next documents from. Read with specdoc's primitives
//! in the writer's dialect ([`md::WRITER`]); lenient by design: a document written by another
//! agent is read as far as its ids and tables allow, and what is missing gets the defaults
//! the writer writes with (a goal is a Must, a requirement a Should).

use crate::specdoc::md::{self, Table, WRITER as MD};
use crate::specdoc::spec::{
    ARCHITECTURE_DIR, ARCHITECTURE_INDEX, EPICS_DIR, EPICS_INDEX, REQUIREMENTS_DIR,
    REQUIREMENTS_INDEX, files_in,
};

use super::{Folder, Moscow};

/// One goal of the product brief.
#[derive(Debug, Clone, serde::Serialize)]
pub struct GoalRow {
    /// `G-NNN`.
    pub id: String,
    /// The goal.
    pub text: String,
    /// Its priority (Must when the brief gives none).
    pub priority: Moscow,
    /// Its success metric.
    pub metric: String,
    /// The metric's target.
    pub target: String,
}

/// The goals of the product brief: table rows whose first cell is a `G-NNN` id.
pub fn goals(brief: &str) -> Vec<GoalRow> {
    let mut out: Vec<GoalRow> = Vec::new();
    for k in MD.keyed(&MD.tables(brief), &["G-"]) {
        if out.iter().any(|g| g.id == k.id) {
            continue;
        }
        let (table, row) = (k.table, k.row);
        let cell = |h: &str| table.get(row, h).map(|c| MD.plain(c)).unwrap_or_default();
        let text = table
            .get(row, "goal")
            .filter(|t| !MD.ids(t).contains(&k.id))
            .or_else(|| row.get(1).map(String::as_str))
            .map(|c| MD.plain(c))
            .unwrap_or_default();
        out.push(GoalRow {
            priority: table
                .get(row, "priority")
                .and_then(Moscow::parse)
                .unwrap_or(Moscow::Must),
            metric: cell("success"),
            target: cell("target"),
            id: k.id,
            text,
        });
    }
    out
}

/// The user groups of the product brief: the headings under its Target Users section.
pub fn users(brief: &str) -> Vec<String> {
    MD.section(brief, "Target Users")
        .map(|s| {
            s.lines()
                .filter_map(|l| MD.heading(l))
                .map(|(_, t)| t.to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// One requirement, functional or not.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ReqRow {
    /// `REQ-NNN` or `NFR-<cat>-NNN`.
    pub id: String,
    /// Its title.
    pub title: String,
    /// Its priority.
    pub priority: Moscow,
    /// The goals it traces to.
    pub traces: Vec<String>,
    /// Its file, relative to the pipeline folder, when there is one.
    pub path: Option<String>,
    /// The `category` of an NFR.
    pub category: String,
    /// Its user story, if written.
    pub story: String,
    /// Its acceptance criteria.
    pub criteria: Vec<String>,
    /// The metric of an NFR.
    pub metric: String,
    /// The target of an NFR.
    pub target: String,
}

/// The requirements of a phase-3 folder.
#[derive(Debug, Clone, Default)]
pub struct Requirements {
    /// `REQ-NNN`, in id order.
    pub functional: Vec<ReqRow>,
    /// `NFR-…`, in index order.
    pub non_functional: Vec<ReqRow>,
}

impl Requirements {
    /// Every requirement, functional first.
    pub fn all(&self) -> impl Iterator<Item = &ReqRow> {
        self.functional.iter().chain(&self.non_functional)
    }
}

/// The file of an item listed in an index: the link in its row if the file exists, else the
/// first file of `dir` named after the id.
fn item_file(folder: &Folder, dir: &str, id: &str, row_link: Option<&str>) -> Option<String> {
    if let Some(target) = row_link {
        let path = format!("{dir}/{}", target.trim_start_matches("./"));
        if folder.contains_key(&path) {
            return Some(path);
        }
    }
    let prefix = format!("{dir}/{id}-");
    let exact = format!("{dir}/{id}.md");
    folder
        .keys()
        .find(|k| (k.starts_with(&prefix) || **k == exact) && k.ends_with(".md"))
        .cloned()
}

fn text<'f>(folder: &'f Folder, path: &str) -> Option<&'f str> {
    folder.get(path).and_then(|b| std::str::from_utf8(b).ok())
}

/// The requirements listed in `spec/requirements/_index.md`, completed from their files.
/// Without an index, the files of the folder are read instead.
pub fn requirements(folder: &Folder) -> Requirements {
    let mut rows: Vec<(String, Option<String>, Vec<String>, Table)> = Vec::new();
    if let Some(index) = text(folder, REQUIREMENTS_INDEX) {
        for k in MD.keyed(&MD.tables(index), &["REQ-", "NFR-"]) {
            if !rows.iter().any(|r| r.0 == k.id) {
                let link = md::link(&k.row[0]).map(str::to_owned);
                rows.push((k.id, link, k.row.to_vec(), k.table.clone()));
            }
        }
    }
    if rows.is_empty() {
        for (path, _, _) in files_in(folder, REQUIREMENTS_DIR) {
            let name = path.rsplit('/').next().unwrap_or(path);
            let id = MD.ids(name).into_iter().next();
            if let Some(id) = id.filter(|i| name.starts_with(i.as_str()))
                && !rows.iter().any(|r| r.0 == id)
            {
                rows.push((id, None, Vec::new(), Table::default()));
            }
        }
    }
    let mut out = Requirements::default();
    for (id, row_link, row, table) in rows {
        let path = item_file(folder, REQUIREMENTS_DIR, &id, row_link.as_deref());
        let doc = path.as_deref().and_then(|p| text(folder, p)).unwrap_or("");
        let fm = MD.frontmatter(doc).unwrap_or_default();
        let title = table
            .get(&row, "title")
            .map(|c| MD.plain(c))
            .filter(|t| !t.is_empty())
            .or_else(|| MD.title(doc))
            .unwrap_or_else(|| id.clone());
        let priority = fm
            .get("priority")
            .and_then(|p| Moscow::parse(p))
            .or_else(|| table.get(&row, "priority").and_then(Moscow::parse))
            .unwrap_or(Moscow::Should);
        let mut traces: Vec<String> = fm.get("traces_to").map(|t| md::list(t)).unwrap_or_default();
        if traces.is_empty() {
            traces = table
                .get(&row, "traces")
                .map(|t| MD.ids_of(t, &["G-"]))
                .unwrap_or_default();
        }
        let story = MD
            .section(doc, "User Story")
            .map(super::text::one_line)
            .unwrap_or_default();
        let criteria = MD
            .section(doc, "Acceptance Criteria")
            .map(|s| MD.checkboxes(s))
            .unwrap_or_default();
        let (metric, target) = MD
            .section_table(doc, "Metric & Target")
            .and_then(|t| {
                let row = t.rows.first()?;
                let cell = |h: &str| t.get(row, h).map(|c| MD.plain(c)).unwrap_or_default();
                Some((cell("metric"), cell("target")))
            })
            .unwrap_or_default();
        let r = ReqRow {
            category: fm
                .get("category")
                .cloned()
                .or_else(|| table.get(&row, "category").map(|c| MD.plain(c)))
                .unwrap_or_default(),
            title,
            priority,
            traces,
            path,
            story,
            criteria,
            metric,
            target,
            id: id.clone(),
        };
        if id.starts_with("REQ-") {
            out.functional.push(r);
        } else {
            out.non_functional.push(r);
        }
    }
    out.functional.sort_by(|a, b| a.id.cmp(&b.id));
    out
}

/// One component of the architecture.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ComponentRow {
    /// `COMP-NNN`.
    pub id: String,
    /// Its name.
    pub name: String,
    /// The REQ ids it implements.
    pub implements: Vec<String>,
    /// The components it depends on.
    pub depends_on: Vec<String>,
}

/// One architecture decision.
#[derive(Debug, Clone, serde::Serialize)]
pub struct AdrRow {
    /// `ADR-NNN`.
    pub id: String,
    /// Its title.
    pub title: String,
    /// `Accepted` or `Proposed`.
    pub status: String,
    /// The requirement ids it serves.
    pub traces: Vec<String>,
    /// Its file, when there is one.
    pub path: Option<String>,
    /// The rows of its Alternatives Considered table.
    pub alternatives: usize,
}

/// The architecture of a phase-4 folder.
#[derive(Debug, Clone, Default)]
pub struct Architecture {
    /// Components, in index order.
    pub components: Vec<ComponentRow>,
    /// Decisions, in index order.
    pub adrs: Vec<AdrRow>,
}

/// The components and decisions listed in `spec/architecture/_index.md`.
pub fn architecture(folder: &Folder) -> Architecture {
    let mut out = Architecture::default();
    let Some(index) = text(folder, ARCHITECTURE_INDEX) else {
        return out;
    };
    for k in MD.keyed(&MD.tables(index), &["COMP-", "ADR-"]) {
        let (table, row, id) = (k.table, k.row, k.id);
        let cell = |h: &str| table.get(row, h).map(|c| MD.plain(c));
        if id.starts_with("COMP-") {
            if !out.components.iter().any(|c| c.id == id) {
                out.components.push(ComponentRow {
                    name: cell("component").unwrap_or_else(|| id.clone()),
                    implements: table
                        .get(row, "implements")
                        .map(|c| MD.ids_of(c, &["REQ-"]))
                        .unwrap_or_default(),
                    depends_on: table
                        .get(row, "dependencies")
                        .map(|c| MD.ids_of(c, &["COMP-"]))
                        .unwrap_or_default(),
                    id,
                });
            }
        } else if !out.adrs.iter().any(|a| a.id == id) {
            let path = item_file(folder, ARCHITECTURE_DIR, &id, md::link(&row[0]));
            let doc = path.as_deref().and_then(|p| text(folder, p)).unwrap_or("");
            let fm = MD.frontmatter(doc).unwrap_or_default();
            let mut traces: Vec<String> =
                fm.get("traces_to").map(|t| md::list(t)).unwrap_or_default();
            if traces.is_empty() {
                traces = table
                    .get(row, "traces")
                    .map(|c| {
                        MD.ids(c)
                            .into_iter()
                            .filter(|i| i.starts_with("REQ-") || i.starts_with("NFR-"))
                            .collect()
                    })
                    .unwrap_or_default();
            }
            out.adrs.push(AdrRow {
                title: cell("title")
                    .or_else(|| MD.title(doc))
                    .unwrap_or_else(|| id.clone()),
                status: fm
                    .get("status")
                    .cloned()
                    .or_else(|| cell("status"))
                    .unwrap_or_else(|| "Proposed".into()),
                alternatives: MD
                    .section_table(doc, "Alternatives Considered")
                    .map_or(0, |t| t.rows.len()),
                traces,
                path,
                id,
            });
        }
    }
    out
}

/// One story of an epic.
#[derive(Debug, Clone)]
pub struct StoryRow {
    /// `STORY-EEE-NNN`.
    pub id: String,
    /// The requirement ids on its `Traces:` line.
    pub traces: Vec<String>,
    /// Its acceptance criteria.
    pub criteria: Vec<String>,
}

/// One epic and its stories.
#[derive(Debug, Clone)]
pub struct EpicRow {
    /// `EPIC-NNN`.
    pub id: String,
    /// Its file.
    pub path: String,
    /// Its stories.
    pub stories: Vec<StoryRow>,
}

/// The epics of a phase-5 folder, read from the epic files the index links to.
pub fn epics(folder: &Folder) -> Vec<EpicRow> {
    let mut out: Vec<EpicRow> = Vec::new();
    let Some(index) = text(folder, EPICS_INDEX) else {
        return out;
    };
    for k in MD.keyed(&MD.tables(index), &["EPIC-"]) {
        if out.iter().any(|e| e.id == k.id) {
            continue;
        }
        let Some(path) = item_file(folder, EPICS_DIR, &k.id, md::link(&k.row[0])) else {
            continue;
        };
        let doc = text(folder, &path).unwrap_or("");
        out.push(EpicRow {
            stories: stories(doc),
            id: k.id,
            path,
        });
    }
    out
}

/// The stories of an epic file: `### STORY-…` headings with the lines under them.
pub fn stories(doc: &str) -> Vec<StoryRow> {
    let mut out: Vec<StoryRow> = Vec::new();
    let mut body = String::new();
    let mut current: Option<String> = None;
    let flush = |id: Option<String>, body: &str, out: &mut Vec<StoryRow>| {
        if let Some(id) = id {
            let traces = body
                .lines()
                .filter_map(|l| l.trim().strip_prefix("Traces:"))
                .flat_map(|t| MD.ids(t))
                .collect();
            out.push(StoryRow {
                id,
                traces,
                criteria: MD.checkboxes(body),
            });
        }
    };
    for line in doc.lines() {
        if let Some((level, text)) = MD.heading(line)
            && level <= 3
        {
            flush(current.take(), &body, &mut out);
            body.clear();
            if level == 3 {
                current = MD
                    .ids(text)
                    .into_iter()
                    .next()
                    .filter(|i| i.starts_with("STORY-"));
            }
            continue;
        }
        body.push_str(line);
        body.push('\n');
    }
    flush(current.take(), &body, &mut out);
    out
}
