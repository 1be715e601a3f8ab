//! The spec read file by file, for auditing: the four documents of the pipeline folder read
//! into goals, requirements, components, decisions, epics and stories, with every file and
//! the template part it follows, and an index's values kept apart from its files' so that
//! the checks can say where documents disagree. The readiness gate scores it and the builtin
//! writer checks its own documents by it, both through the rules of [`super::check`].
//! Lenient: whatever is missing is simply absent, and the rules say so.

use std::collections::BTreeMap;

use super::md::{self, GATE as MD, Table};
use super::spec::{BRIEF, Folder, Goal, Kind, Moscow, files_in};
use super::template::Part;

/// One file the spec has or should have.
#[derive(Debug, Clone)]
pub struct SpecFile {
    /// The document it belongs to.
    pub doc: Kind,
    /// The template part it follows.
    pub part: Part,
    /// The item id, for item files.
    pub id: Option<String>,
    /// Its path relative to the pipeline folder.
    pub path: String,
    /// Its text; `None` when an index lists it but the file is missing.
    pub text: Option<String>,
}

impl SpecFile {
    /// Its frontmatter, if it has one.
    pub fn frontmatter(&self) -> Option<BTreeMap<String, String>> {
        self.text.as_deref().and_then(|t| MD.frontmatter(t))
    }
}

/// One requirement, functional or not.
#[derive(Debug, Clone, Default)]
pub struct Requirement {
    /// `REQ-NNN` or `NFR-<cat>-NNN`.
    pub id: String,
    /// Whether it is a `REQ-`.
    pub functional: bool,
    /// The title in the index.
    pub index_title: Option<String>,
    /// The title in its file.
    pub file_title: Option<String>,
    /// The priority in its file's frontmatter.
    pub priority: Option<String>,
    /// The priority in the index.
    pub index_priority: Option<String>,
    /// The goals its file's `traces_to` names.
    pub traces: Vec<String>,
    /// The goals its index row names.
    pub index_traces: Option<Vec<String>>,
    /// Its acceptance criteria.
    pub criteria: Vec<String>,
    /// Its user story.
    pub user_story: String,
    /// The NFR category.
    pub category: String,
    /// Metric, target and measurement method of an NFR.
    pub measure: [String; 3],
    /// Its file.
    pub path: Option<String>,
}

impl Requirement {
    /// Its title, from the index or its file.
    pub fn title(&self) -> &str {
        self.index_title
            .as_deref()
            .or(self.file_title.as_deref())
            .unwrap_or(&self.id)
    }

    /// Its priority, from its file or the index.
    pub fn moscow(&self) -> Option<&str> {
        self.priority.as_deref().or(self.index_priority.as_deref())
    }

    /// Whether it is a Must.
    pub fn is_must(&self) -> bool {
        self.moscow()
            .is_some_and(|p| md::norm(p).trim_matches(['[', ']']) == "must")
    }

    /// The goals it traces to, from its file or else its index row.
    pub fn goals(&self) -> Vec<String> {
        if self.traces.is_empty() {
            self.index_traces.clone().unwrap_or_default()
        } else {
            self.traces.clone()
        }
    }
}

/// One component of the architecture.
#[derive(Debug, Clone)]
pub struct Component {
    /// `COMP-NNN`.
    pub id: String,
    /// Its name.
    pub name: String,
    /// Its responsibility.
    pub responsibility: String,
    /// Its technology.
    pub technology: String,
    /// The REQ ids it implements.
    pub implements: Vec<String>,
}

/// One architecture decision.
#[derive(Debug, Clone, Default)]
pub struct Adr {
    /// `ADR-NNN`.
    pub id: String,
    /// Title in the index.
    pub index_title: Option<String>,
    /// Title in its file.
    pub file_title: Option<String>,
    /// Status in its file, else in the index.
    pub status: Option<String>,
    /// Requirement ids of its file's `traces_to`.
    pub traces: Vec<String>,
    /// Requirement ids of its index row.
    pub index_traces: Option<Vec<String>>,
    /// Rows of its Alternatives Considered table: (option, pros, cons).
    pub alternatives: Vec<[String; 3]>,
    /// Text of its Context section.
    pub context: String,
    /// Text of its Consequences section.
    pub consequences: String,
    /// Its file.
    pub path: Option<String>,
}

impl Adr {
    /// Its title.
    pub fn title(&self) -> &str {
        self.index_title
            .as_deref()
            .or(self.file_title.as_deref())
            .unwrap_or(&self.id)
    }

    /// The requirements it traces to, from its file or else its index row.
    pub fn requirements(&self) -> Vec<String> {
        if self.traces.is_empty() {
            self.index_traces.clone().unwrap_or_default()
        } else {
            self.traces.clone()
        }
    }
}

/// One epic.
#[derive(Debug, Clone, Default)]
pub struct Epic {
    /// `EPIC-NNN`.
    pub id: String,
    /// Title in the index.
    pub index_title: Option<String>,
    /// Title in its file.
    pub file_title: Option<String>,
    /// Priority (file, else index).
    pub priority: Option<String>,
    /// Whether it is part of the MVP (file, else index).
    pub mvp: bool,
    /// Its size.
    pub size: Option<String>,
    /// The requirements its frontmatter lists.
    pub requirements: Vec<String>,
    /// The story count its index row gives.
    pub index_stories: Option<usize>,
    /// Its stories.
    pub stories: Vec<Story>,
    /// Its file.
    pub path: Option<String>,
}

impl Epic {
    /// Its title.
    pub fn title(&self) -> &str {
        self.index_title
            .as_deref()
            .or(self.file_title.as_deref())
            .unwrap_or(&self.id)
    }
}

/// One story of an epic.
#[derive(Debug, Clone, Default)]
pub struct Story {
    /// `STORY-EEE-NNN`.
    pub id: String,
    /// Its "As a …" line.
    pub user_story: Option<String>,
    /// The role of its user story.
    pub role: Option<String>,
    /// Its acceptance criteria.
    pub criteria: Vec<String>,
    /// Its size.
    pub size: Option<String>,
    /// Ids on its `Traces:` line.
    pub traces: Vec<String>,
    /// Its `Component:` line.
    pub component: Option<String>,
}

/// The whole spec.
#[derive(Debug, Clone, Default)]
pub struct Spec {
    /// Every file found or listed, per document, index first.
    pub files: Vec<SpecFile>,
    /// Goals of the brief.
    pub goals: Vec<Goal>,
    /// User groups of the brief (headings under Target Users).
    pub personas: Vec<String>,
    /// Requirements, functional first, by id.
    pub requirements: Vec<Requirement>,
    /// Components.
    pub components: Vec<Component>,
    /// Decisions.
    pub adrs: Vec<Adr>,
    /// Epics.
    pub epics: Vec<Epic>,
    /// The requirements index's Goal → Requirements matrix.
    pub goal_matrix: Vec<(String, Vec<String>)>,
    /// The epics index's Requirement → Epics matrix.
    pub requirement_matrix: Vec<(String, Vec<String>)>,
    /// Ids defined more than once, with where.
    pub duplicates: Vec<(String, String)>,
    /// Paths an index links to that do not exist.
    pub dangling_links: Vec<(String, String)>,
    /// Item files no index lists, with their id.
    pub unlisted: Vec<(String, String)>,
    /// Item files whose frontmatter id differs from their name.
    pub misnamed: Vec<(String, String, String)>,
}

/// Text of a folder file.
fn text(folder: &Folder, path: &str) -> Option<String> {
    folder
        .get(path)
        .map(|b| String::from_utf8_lossy(b).replace("\r\n", "\n"))
}

impl Spec {
    /// Reads the spec documents of `folder`.
    pub fn read(folder: &Folder) -> Spec {
        let mut spec = Spec::default();
        spec.read_brief(folder);
        spec.read_requirements(folder);
        spec.read_architecture(folder);
        spec.read_epics(folder);
        spec
    }

    /// Whether `doc`'s main file exists.
    pub fn has(&self, doc: Kind) -> bool {
        self.files
            .iter()
            .any(|f| f.doc == doc && !f.part.is_item() && f.text.is_some())
    }

    /// The text of `doc`'s main file.
    pub fn index_text(&self, doc: Kind) -> Option<&str> {
        self.files
            .iter()
            .find(|f| f.doc == doc && !f.part.is_item())
            .and_then(|f| f.text.as_deref())
    }

    /// The requirement `id`.
    pub fn requirement(&self, id: &str) -> Option<&Requirement> {
        self.requirements.iter().find(|r| r.id == id)
    }

    /// Every story with its epic.
    pub fn stories(&self) -> impl Iterator<Item = (&Epic, &Story)> {
        self.epics
            .iter()
            .flat_map(|e| e.stories.iter().map(move |s| (e, s)))
    }

    fn index_file(&mut self, folder: &Folder, doc: Kind, part: Part) -> Option<String> {
        let t = text(folder, doc.index());
        self.files.push(SpecFile {
            doc,
            part,
            id: None,
            path: doc.index().to_owned(),
            text: t.clone(),
        });
        t
    }

    fn read_brief(&mut self, folder: &Folder) {
        let Some(brief) = self.index_file(folder, Kind::Brief, Part::Brief) else {
            return;
        };
        // The goals table: the first table of the Goals section with `G-NNN` rows, else the
        // first such table anywhere. Other tables that start rows with a goal id (the
        // current/proposed state, …) refer to goals; they do not define them.
        let has_goals = |t: &Table| {
            t.rows
                .iter()
                .any(|r| r.first().and_then(|c| MD.sole_id(c, "G-")).is_some())
        };
        let table = MD
            .section(&brief, "Goals & Success Metrics")
            .and_then(|s| MD.tables(s).into_iter().find(|t| has_goals(t)))
            .or_else(|| MD.tables(&brief).into_iter().find(|t| has_goals(t)))
            .unwrap_or_default();
        for k in MD.keyed(std::slice::from_ref(&table), &["G-"]) {
            if self.goals.iter().any(|g| g.id == k.id) {
                self.duplicates.push((k.id, BRIEF.to_owned()));
                continue;
            }
            let cell = |h: &str| table.get(k.row, h).map(md::plain).unwrap_or_default();
            let goal = table
                .get(k.row, "goal")
                .filter(|c| MD.sole_id(c, "G-").is_none())
                .or_else(|| k.row.get(1).map(String::as_str))
                .map(md::plain)
                .unwrap_or_default();
            self.goals.push(Goal {
                text: goal,
                priority: Moscow::Must,
                metric: cell("success"),
                target: cell("target"),
                id: k.id,
            });
        }
        if let Some(users) = MD.section(&brief, "Target Users") {
            self.personas = users
                .lines()
                .filter_map(|t| MD.heading(t))
                .map(|(_, t)| md::plain(t))
                .collect();
        }
    }

    /// The items of an index (rows whose first cell is an id of `prefixes`) joined with the
    /// item files of `dir`: `(id, row and its table, file path, link target)`.
    fn items(
        &mut self,
        folder: &Folder,
        doc: Kind,
        index: Option<&str>,
        prefixes: &[&str],
        part_of: impl Fn(&str) -> Part,
    ) -> Vec<Item> {
        let dir = doc.dir().expect("a document of items is a folder");
        let mut out: Vec<Item> = Vec::new();
        let tables = index.map(|t| MD.tables(t)).unwrap_or_default();
        for k in MD.keyed(&tables, prefixes) {
            if let Some(known) = out.iter().find(|i| i.id == k.id) {
                // The same id again in another table (a matrix) refers to it; in the table
                // that defined it, it is defined twice.
                if known.table_index == Some(k.index) {
                    self.duplicates.push((k.id, doc.index().to_owned()));
                }
                continue;
            }
            out.push(Item {
                link: md::link(&k.row[0]).map(str::to_owned),
                row: k.row.to_vec(),
                table: Some(k.table.clone()),
                table_index: Some(k.index),
                path: None,
                id: k.id,
            });
        }
        // The item files of the folder, by the id their name starts with.
        let mut files: Vec<(String, String)> = Vec::new();
        for (path, name, _) in files_in(folder, dir) {
            if name.contains('/') || !name.ends_with(".md") || name.starts_with('_') {
                continue;
            }
            let Some(id) = MD.ids(name).into_iter().next() else {
                continue;
            };
            if name.starts_with(&id) && prefixes.iter().any(|p| id.starts_with(p)) {
                files.push((id, path.to_owned()));
            }
        }
        for item in &mut out {
            if let Some(link) = &item.link {
                let path = join(dir, link);
                if folder.contains_key(&path) {
                    item.path = Some(path);
                } else {
                    self.dangling_links.push((doc.index().to_owned(), path));
                }
            }
        }
        for (id, path) in files {
            match out.iter_mut().find(|i| i.id == id) {
                Some(item) if item.path.is_none() => item.path = Some(path),
                Some(item) if item.path.as_deref() != Some(path.as_str()) => {
                    self.duplicates.push((id, path));
                }
                Some(_) => {}
                None => {
                    if index.is_some() {
                        self.unlisted.push((path.clone(), id.clone()));
                    }
                    out.push(Item {
                        id,
                        link: None,
                        row: Vec::new(),
                        table: None,
                        table_index: None,
                        path: Some(path),
                    });
                }
            }
        }
        for item in &out {
            let path = item
                .path
                .clone()
                .unwrap_or_else(|| format!("{dir}/{}.md", item.id));
            let file = SpecFile {
                doc,
                part: part_of(&item.id),
                id: Some(item.id.clone()),
                text: item.path.as_deref().and_then(|p| text(folder, p)),
                path,
            };
            if let Some(fm_id) = file
                .frontmatter()
                .and_then(|fm| fm.get("id").cloned())
                .filter(|fm_id| !fm_id.is_empty() && *fm_id != item.id)
            {
                self.misnamed
                    .push((file.path.clone(), item.id.clone(), fm_id));
            }
            self.files.push(file);
        }
        out
    }

    fn read_requirements(&mut self, folder: &Folder) {
        let index = self.index_file(folder, Kind::Requirements, Part::RequirementsIndex);
        let items = self.items(
            folder,
            Kind::Requirements,
            index.as_deref(),
            &["REQ-", "NFR-"],
            |id| {
                if id.starts_with("REQ-") {
                    Part::Functional
                } else {
                    Part::NonFunctional
                }
            },
        );
        for item in items {
            let doc = item.path.as_deref().and_then(|p| text(folder, p));
            let doc = doc.as_deref().unwrap_or("");
            let fm = MD.frontmatter(doc).unwrap_or_default();
            let cell = |h: &str| item.cell(h);
            let measure = MD
                .section_table(doc, "Metric & Target")
                .and_then(|t| {
                    let row = t.rows.first()?;
                    Some(
                        ["metric", "target", "measurement"]
                            .map(|h| t.get(row, h).map(md::plain).unwrap_or_default()),
                    )
                })
                .unwrap_or_default();
            self.requirements.push(Requirement {
                functional: item.id.starts_with("REQ-"),
                index_title: cell("title"),
                file_title: MD.title(doc),
                priority: fm.get("priority").cloned().filter(|p| !p.is_empty()),
                index_priority: cell("priority"),
                traces: fm
                    .get("traces_to")
                    .map(|t| MD.ids_of(&md::list(t).join(","), &["G-"]))
                    .unwrap_or_default(),
                index_traces: item.raw("traces").map(|c| MD.ids_of(c, &["G-"])),
                criteria: MD
                    .section(doc, "Acceptance Criteria")
                    .map(|t| MD.checkboxes(t))
                    .unwrap_or_default(),
                user_story: MD
                    .section(doc, "User Story")
                    .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
                    .unwrap_or_default(),
                category: fm
                    .get("category")
                    .cloned()
                    .or_else(|| cell("category"))
                    .unwrap_or_default(),
                measure,
                path: item.path.clone(),
                id: item.id,
            });
        }
        self.requirements
            .sort_by(|a, b| (!a.functional, &a.id).cmp(&(!b.functional, &b.id)));
        if let Some(matrix) = index
            .as_deref()
            .and_then(|i| MD.section(i, "Traceability Matrix"))
        {
            for k in MD.keyed(&MD.tables(matrix), &["G-"]) {
                let rest = k.row[1..].join(" ");
                self.goal_matrix
                    .push((k.id, MD.ids_of(&rest, &["REQ-", "NFR-"])));
            }
        }
    }

    fn read_architecture(&mut self, folder: &Folder) {
        let index = self.index_file(folder, Kind::Architecture, Part::ArchitectureIndex);
        let tables = index.as_deref().map(|t| MD.tables(t)).unwrap_or_default();
        for k in MD.keyed(&tables, &["COMP-"]) {
            if self.components.iter().any(|c| c.id == k.id) {
                self.duplicates
                    .push((k.id, Kind::Architecture.index().to_owned()));
                continue;
            }
            let (table, row) = (k.table, k.row);
            let cell = |h: &str| table.get(row, h).map(md::plain).unwrap_or_default();
            let implements = if table.has("implements") {
                table
                    .get(row, "implements")
                    .map(|c| MD.ids_of(c, &["REQ-", "NFR-"]))
                    .unwrap_or_default()
            } else {
                MD.ids_of(&row[1..].join(" "), &["REQ-", "NFR-"])
            };
            self.components.push(Component {
                name: Some(cell("component"))
                    .filter(|n| !n.is_empty())
                    .or_else(|| row.get(1).map(|c| md::plain(c)))
                    .unwrap_or_else(|| k.id.clone()),
                responsibility: cell("responsibility"),
                technology: cell("technology"),
                implements,
                id: k.id,
            });
        }
        let items = self.items(
            folder,
            Kind::Architecture,
            index.as_deref(),
            &["ADR-"],
            |_| Part::Adr,
        );
        for item in items {
            let doc = item.path.as_deref().and_then(|p| text(folder, p));
            let doc = doc.as_deref().unwrap_or("");
            let fm = MD.frontmatter(doc).unwrap_or_default();
            let alternatives = MD
                .section_table(doc, "Alternatives Considered")
                .map(|t| {
                    t.rows
                        .iter()
                        .map(|r| {
                            [
                                r.first().map(|c| md::plain(c)).unwrap_or_default(),
                                t.get(r, "pros").map(md::plain).unwrap_or_default(),
                                t.get(r, "cons").map(md::plain).unwrap_or_default(),
                            ]
                        })
                        .collect()
                })
                .unwrap_or_default();
            self.adrs.push(Adr {
                index_title: item.cell("title"),
                file_title: MD.title(doc),
                status: fm
                    .get("status")
                    .cloned()
                    .filter(|s| !s.is_empty())
                    .or_else(|| item.cell("status")),
                traces: fm
                    .get("traces_to")
                    .map(|t| MD.ids_of(t, &["REQ-", "NFR-"]))
                    .unwrap_or_default(),
                index_traces: item.raw("traces").map(|c| MD.ids_of(c, &["REQ-", "NFR-"])),
                alternatives,
                context: MD.section(doc, "Context").unwrap_or("").trim().to_owned(),
                consequences: MD
                    .section(doc, "Consequences")
                    .unwrap_or("")
                    .trim()
                    .to_owned(),
                path: item.path.clone(),
                id: item.id,
            });
        }
    }

    fn read_epics(&mut self, folder: &Folder) {
        let index = self.index_file(folder, Kind::Epics, Part::EpicsIndex);
        let items = self.items(folder, Kind::Epics, index.as_deref(), &["EPIC-"], |_| {
            Part::Epic
        });
        for item in items {
            let doc = item.path.as_deref().and_then(|p| text(folder, p));
            let doc = doc.as_deref().unwrap_or("");
            let fm = MD.frontmatter(doc).unwrap_or_default();
            let yes = |v: &str| {
                matches!(
                    md::norm(v).as_str(),
                    "true" | "yes" | "y" | "mvp" | "✓" | "✔" | "x"
                )
            };
            let stories = stories(doc, &mut self.duplicates, item.path.as_deref());
            self.epics.push(Epic {
                index_title: item.cell("title"),
                file_title: MD.title(doc),
                priority: fm
                    .get("priority")
                    .cloned()
                    .filter(|p| !p.is_empty())
                    .or_else(|| item.cell("priority")),
                mvp: fm
                    .get("mvp")
                    .map(|v| yes(v))
                    .or_else(|| item.cell("mvp").map(|v| yes(&v)))
                    .unwrap_or(false),
                size: fm
                    .get("size")
                    .cloned()
                    .filter(|s| !s.is_empty())
                    .or_else(|| item.cell("size")),
                requirements: fm
                    .get("requirements")
                    .map(|r| MD.ids_of(r, &["REQ-", "NFR-"]))
                    .unwrap_or_default(),
                index_stories: item.cell("stories").and_then(|s| s.parse().ok()),
                stories,
                path: item.path.clone(),
                id: item.id,
            });
        }
        if let Some(matrix) = index
            .as_deref()
            .and_then(|i| MD.section(i, "Traceability Matrix"))
        {
            for k in MD.keyed(&MD.tables(matrix), &["REQ-", "NFR-"]) {
                let epics = k
                    .table
                    .get(k.row, "epic")
                    .map(|c| MD.ids_of(c, &["EPIC-"]))
                    .unwrap_or_else(|| MD.ids_of(&k.row[1..].join(" "), &["EPIC-"]));
                self.requirement_matrix.push((k.id, epics));
            }
        }
    }
}

/// An index row joined with its file.
struct Item {
    id: String,
    link: Option<String>,
    row: Vec<String>,
    table: Option<Table>,
    table_index: Option<usize>,
    path: Option<String>,
}

impl Item {
    /// The plain text of its row's cell under `header`, if not empty.
    fn cell(&self, header: &str) -> Option<String> {
        self.raw(header).map(md::plain).filter(|c| !c.is_empty())
    }

    /// Its row's cell under `header`.
    fn raw(&self, header: &str) -> Option<&str> {
        self.table.as_ref()?.get(&self.row, header)
    }
}

/// The stories of an epic file: headings naming a `STORY-` id, with the lines under them.
fn stories(doc: &str, duplicates: &mut Vec<(String, String)>, path: Option<&str>) -> Vec<Story> {
    let hs = MD.headings(doc);
    let mut out: Vec<Story> = Vec::new();
    for (i, h) in hs.iter().enumerate() {
        let Some(id) = MD.ids_of(&h.text, &["STORY-"]).into_iter().next() else {
            continue;
        };
        if out.iter().any(|s| s.id == id) {
            duplicates.push((id, path.unwrap_or("spec/epics").to_owned()));
            continue;
        }
        let body = md::section_at(doc, &hs, i);
        let user_story = body
            .lines()
            .map(|l| l.trim().trim_start_matches(['>', '*', '_', ' ']))
            .find(|l| l.starts_with("As ") || l.starts_with("As,"))
            .map(str::to_owned);
        let role = user_story.as_deref().and_then(role_of);
        out.push(Story {
            criteria: MD.checkboxes(body),
            size: md::field(body, "size")
                .map(md::plain)
                .filter(|s| !s.is_empty()),
            traces: md::field(body, "traces")
                .map(|t| MD.ids_of(t, &["REQ-", "NFR-"]))
                .unwrap_or_default(),
            component: md::field(body, "component")
                .map(md::plain)
                .filter(|c| !c.is_empty()),
            user_story,
            role,
            id,
        });
    }
    out
}

/// `link` resolved against the folder `dir` (`./x.md`, `../dir/x.md`), without an anchor.
fn join(dir: &str, link: &str) -> String {
    let link = link.split('#').next().unwrap_or(link);
    let mut parts: Vec<&str> = dir.split('/').collect();
    for seg in link.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    parts.join("/")
}

/// The role of a user story: `As a developer, I want …` gives `developer`.
pub fn role_of(story: &str) -> Option<String> {
    let rest = story.trim().strip_prefix("As ")?;
    let rest = ["a ", "an ", "the "]
        .iter()
        .find_map(|a| rest.strip_prefix(a))
        .unwrap_or(rest);
    let end = rest
        .find([',', ';'])
        .or_else(|| rest.find(" I "))
        .unwrap_or(rest.len());
    let role = md::plain(rest[..end].trim());
    (!role.is_empty()).then(|| role.to_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{EPICS_DIR, REQUIREMENTS_DIR};

    #[test]
    fn links_resolve_against_their_folder() {
        assert_eq!(
            join(REQUIREMENTS_DIR, "REQ-001-x.md"),
            "spec/requirements/REQ-001-x.md"
        );
        assert_eq!(
            join(EPICS_DIR, "./EPIC-001-x.md#top"),
            "spec/epics/EPIC-001-x.md"
        );
        assert_eq!(
            join(EPICS_DIR, "../requirements/REQ-001-x.md"),
            "spec/requirements/REQ-001-x.md"
        );
        assert_eq!(role_of("As an admin, I want").as_deref(), Some("admin"));
        assert_eq!(
            role_of("As a Support Agent I want x").as_deref(),
            Some("support agent")
        );
    }
}
