//! The pipeline folder as one typed model: the analyst's discovery context (read by
//! [`super::discovery`]), the four spec documents (product brief, requirements, architecture, epics), the readiness report and the
//! plan, with the layout they live in ([`Kind`] and the paths).
//!
//! [`Spec`] is the one reading of the spec documents: the supervisor checkpoints and the
//! discuss critics measure by it, and the builtin writer and planner read the earlier phases
//! with it. It takes what the ids, tables, headings and frontmatter give ([`md::CHECKPOINT`],
//! the most lenient dialect: a document from any agent is read as far as it goes) and leaves
//! the rest empty (a missing title is the id, a missing decision status `Proposed`); an
//! index's rows and the item files complete each other, and items come in id order; `FR-NNN`,
//! the reference's other spelling of a functional requirement, is read as one too. The spec
//! gate and the builtin writer's checks read the same layout with the same primitives into
//! a view of their own ([`super::audit`]), which keeps an index's values apart from its
//! files' to report where they disagree.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::sync::LazyLock;

use serde_json::Value;

use super::discovery::{Discovery, list, path, text};
use super::md::{self, CHECKPOINT as MD};
use tlv4_core::text::one_line;

/// Pipeline-folder files by relative path.
pub type Folder = BTreeMap<String, Vec<u8>>;

/// The analyst's report.
pub const DISCOVERY: &str = "spec/discovery-context.json";
/// The product brief.
pub const BRIEF: &str = "spec/product-brief.md";
/// The requirements folder.
pub const REQUIREMENTS_DIR: &str = "spec/requirements";
/// The requirements index.
pub const REQUIREMENTS_INDEX: &str = "spec/requirements/_index.md";
/// The architecture folder.
pub const ARCHITECTURE_DIR: &str = "spec/architecture";
/// The architecture index.
pub const ARCHITECTURE_INDEX: &str = "spec/architecture/_index.md";
/// The epics folder.
pub const EPICS_DIR: &str = "spec/epics";
/// The epics index.
pub const EPICS_INDEX: &str = "spec/epics/_index.md";
/// The plan's folder.
pub const PLAN_DIR: &str = "plan";
/// The plan.
pub const PLAN: &str = "plan/plan.json";
/// The plan's task files.
pub const PLAN_TASKS_DIR: &str = "plan/.task";
/// Where the readiness report may be: `artifacts/` (v4-current) or `spec/` (earlier versions
/// and the pipeline's EXPECTED line). Both are read.
pub const READINESS: [&str; 2] = ["artifacts/readiness-report.md", "spec/readiness-report.md"];

/// The part of `path` inside the folder `dir`.
pub fn under<'p>(path: &'p str, dir: &str) -> Option<&'p str> {
    path.strip_prefix(dir)?.strip_prefix('/')
}

/// The entries of `files` inside the folder `dir` (at any depth), in path order, as (path,
/// path inside `dir`, value).
pub fn files_in<'f, V>(
    files: &'f BTreeMap<String, V>,
    dir: &'f str,
) -> impl Iterator<Item = (&'f str, &'f str, &'f V)> {
    files
        .range::<str, _>((Bound::Included(dir), Bound::Unbounded))
        .take_while(move |(p, _)| p.starts_with(dir))
        .filter_map(move |(p, v)| Some((p.as_str(), under(p, dir)?, v)))
}

/// One kind of document of the pipeline folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// `spec/discovery-context.json`.
    Discovery,
    /// `spec/product-brief.md`.
    Brief,
    /// `spec/requirements/`.
    Requirements,
    /// `spec/architecture/`.
    Architecture,
    /// `spec/epics/`.
    Epics,
    /// The readiness report.
    Readiness,
    /// `plan/plan.json` and `plan/.task/`.
    Plan,
}

impl Kind {
    /// Every kind, in pipeline order.
    pub const ALL: [Kind; 7] = [
        Kind::Discovery,
        Kind::Brief,
        Kind::Requirements,
        Kind::Architecture,
        Kind::Epics,
        Kind::Readiness,
        Kind::Plan,
    ];

    /// The four spec documents, in pipeline order.
    pub const SPEC: [Kind; 4] = [
        Kind::Brief,
        Kind::Requirements,
        Kind::Architecture,
        Kind::Epics,
    ];

    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Discovery => "discovery context",
            Kind::Brief => "product brief",
            Kind::Requirements => "requirements",
            Kind::Architecture => "architecture",
            Kind::Epics => "epics",
            Kind::Readiness => "readiness report",
            Kind::Plan => "plan",
        }
    }

    /// Its name at the start of a line.
    pub fn title(self) -> &'static str {
        match self {
            Kind::Discovery => "Discovery context",
            Kind::Brief => "Product brief",
            Kind::Requirements => "Requirements",
            Kind::Architecture => "Architecture",
            Kind::Epics => "Epics",
            Kind::Readiness => "Readiness report",
            Kind::Plan => "Plan",
        }
    }

    /// Its main file: the document itself, or its folder's index.
    pub fn index(self) -> &'static str {
        match self {
            Kind::Discovery => DISCOVERY,
            Kind::Brief => BRIEF,
            Kind::Requirements => REQUIREMENTS_INDEX,
            Kind::Architecture => ARCHITECTURE_INDEX,
            Kind::Epics => EPICS_INDEX,
            Kind::Readiness => READINESS[0],
            Kind::Plan => PLAN,
        }
    }

    /// Its folder, for the kinds that are one.
    pub fn dir(self) -> Option<&'static str> {
        match self {
            Kind::Requirements => Some(REQUIREMENTS_DIR),
            Kind::Architecture => Some(ARCHITECTURE_DIR),
            Kind::Epics => Some(EPICS_DIR),
            Kind::Plan => Some(PLAN_DIR),
            Kind::Discovery | Kind::Brief | Kind::Readiness => None,
        }
    }

    /// Whether the file at `path` belongs to this kind.
    pub fn owns(self, path: &str) -> bool {
        match self {
            Kind::Discovery => path == DISCOVERY,
            Kind::Brief => path == BRIEF,
            Kind::Readiness => READINESS.contains(&path),
            _ => self.dir().is_some_and(|d| under(path, d).is_some()),
        }
    }

    /// The kind of an EXPECTED path of a task (`spec/requirements/`, `plan/plan.json`, …).
    pub fn of_expected(path: &str) -> Option<Kind> {
        if path.contains("readiness-report") {
            return Some(Kind::Readiness);
        }
        let dir = if path.ends_with('/') {
            path.to_owned()
        } else {
            format!("{path}/")
        };
        Kind::ALL.into_iter().find(|k| k.owns(path) || k.owns(&dir))
    }

    /// The kind a task phase produces, for tasks whose description names no path.
    pub fn of_phase(phase: &str) -> Option<Kind> {
        match phase {
            "research" => Some(Kind::Discovery),
            "product-brief" => Some(Kind::Brief),
            "requirements" => Some(Kind::Requirements),
            "architecture" => Some(Kind::Architecture),
            "epics" => Some(Kind::Epics),
            "readiness" => Some(Kind::Readiness),
            "planning" => Some(Kind::Plan),
            _ => None,
        }
    }
}

/// Every document read from one pipeline folder.
#[derive(Debug, Clone, Default)]
pub struct Spec {
    /// The discovery context, if present.
    pub discovery: Option<Discovery>,
    /// The product brief, if present.
    pub brief: Option<Brief>,
    /// The requirements, if any file of the folder is present.
    pub requirements: Option<Requirements>,
    /// The architecture, if any file of the folder is present.
    pub architecture: Option<Architecture>,
    /// The epics, if any file of the folder is present.
    pub epics: Option<Epics>,
    /// The readiness report, if present.
    pub readiness: Option<Readiness>,
    /// The plan, if present.
    pub plan: Option<Plan>,
    /// The text of every document above, by path.
    pub texts: BTreeMap<String, String>,
}

impl Spec {
    /// Reads every document of `folder`.
    pub fn read(folder: &Folder) -> Spec {
        let texts: BTreeMap<String, String> = folder
            .iter()
            .filter(|(p, _)| Kind::ALL.iter().any(|k| k.owns(p)))
            .filter_map(|(p, b)| Some((p.clone(), String::from_utf8(b.clone()).ok()?)))
            .collect();
        let present = |k: Kind| texts.keys().any(|p| k.owns(p));
        Spec {
            discovery: (texts.get(DISCOVERY))
                .map(|t| Discovery::parse(t.as_bytes()).unwrap_or_default()),
            brief: texts.get(BRIEF).map(|t| Brief::read(t)),
            requirements: present(Kind::Requirements).then(|| Requirements::read(&texts)),
            architecture: present(Kind::Architecture).then(|| Architecture::read(&texts)),
            epics: present(Kind::Epics).then(|| Epics::read(&texts)),
            readiness: READINESS
                .iter()
                .find_map(|p| texts.get(*p).map(|t| Readiness::read(p, t))),
            plan: texts.get(PLAN).map(|t| Plan::read(t, &texts)),
            texts,
        }
    }

    /// Whether a document of `kind` is present.
    pub fn has(&self, kind: Kind) -> bool {
        self.texts.keys().any(|p| kind.owns(p))
    }

    /// The texts of the documents of `kind`, by path.
    pub fn texts_of(&self, kind: Kind) -> impl Iterator<Item = (&str, &str)> {
        self.texts
            .iter()
            .filter(move |(p, _)| kind.owns(p))
            .map(|(p, t)| (p.as_str(), t.as_str()))
    }

    /// Every id named anywhere in the documents of `kind`.
    pub fn ids_in(&self, kind: Kind) -> BTreeSet<String> {
        self.texts_of(kind)
            .flat_map(|(_, t)| MD.unique_ids(t))
            .collect()
    }

    /// The ids each kind defines: goals in the brief, requirements in the requirements,
    /// components and decisions in the architecture, epics and stories in the epics.
    pub fn defined(&self, kind: Kind) -> BTreeSet<String> {
        match kind {
            Kind::Brief => self
                .brief
                .iter()
                .flat_map(|b| b.goals.iter().map(|g| g.id.clone()))
                .collect(),
            Kind::Requirements => self
                .requirements
                .iter()
                .flat_map(|r| r.all().map(|x| x.id.clone()))
                .collect(),
            Kind::Architecture => self
                .architecture
                .iter()
                .flat_map(|a| {
                    a.components
                        .iter()
                        .map(|c| c.id.clone())
                        .chain(a.adrs.iter().map(|d| d.id.clone()))
                })
                .collect(),
            Kind::Epics => self
                .epics
                .iter()
                .flat_map(|e| {
                    e.epics.iter().flat_map(|x| {
                        std::iter::once(x.id.clone()).chain(x.stories.iter().map(|s| s.id.clone()))
                    })
                })
                .collect(),
            Kind::Discovery | Kind::Readiness | Kind::Plan => BTreeSet::new(),
        }
    }

    /// Ids named in the documents of `kinds` that the document defining their kind (also
    /// among `kinds`, and present) does not define: id → the first path naming it.
    pub fn undefined(&self, kinds: &BTreeSet<Kind>) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        let defined: BTreeMap<Kind, BTreeSet<String>> = kinds
            .iter()
            .filter(|k| self.has(**k))
            .map(|k| (*k, self.defined(*k)))
            .collect();
        for k in kinds {
            for (path, text) in self.texts_of(*k) {
                for id in MD.unique_ids(text) {
                    let Some(set) = definer(&id).and_then(|d| defined.get(&d)) else {
                        continue;
                    };
                    if !set.contains(&id) {
                        out.entry(id).or_insert_with(|| path.to_owned());
                    }
                }
            }
        }
        out
    }

    /// Open questions of the documents of `kind`, with the path they are in.
    pub fn open_questions(&self, kind: Kind) -> Vec<(String, String)> {
        if kind == Kind::Discovery {
            return self
                .discovery
                .iter()
                .flat_map(|d| {
                    d.open_questions
                        .iter()
                        .map(|q| (DISCOVERY.to_owned(), q.clone()))
                })
                .collect();
        }
        self.texts_of(kind)
            .filter(|(p, _)| p.ends_with(".md"))
            .flat_map(|(p, t)| {
                MD.section(t, "Open Questions")
                    .map(|s| MD.items(s))
                    .unwrap_or_default()
                    .into_iter()
                    .map(move |q| (p.to_owned(), q))
            })
            .collect()
    }
}

/// A MoSCoW priority, written as its word.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum Moscow {
    /// Needed for the change to make sense.
    Must,
    /// Important, not vital.
    Should,
    /// Wanted if there is room.
    Could,
    /// Agreed to be left out this time.
    #[serde(rename = "Won't")]
    Wont,
}

impl Moscow {
    /// Reads the word back, in any case, with or without brackets or emphasis: `Must`,
    /// `[should]`, `**Could**`, `Won't`, also `Must have` and `P0`–`P2`.
    pub fn parse(text: &str) -> Option<Moscow> {
        let t = md::plain(text)
            .trim_matches(['[', ']', '*'])
            .trim()
            .to_ascii_lowercase();
        match t.as_str() {
            "must" | "must have" | "p0" => Some(Moscow::Must),
            "should" | "should have" | "p1" => Some(Moscow::Should),
            "could" | "could have" | "p2" => Some(Moscow::Could),
            "won't" | "wont" | "won't have" | "will not" => Some(Moscow::Wont),
            _ => None,
        }
    }
}

/// One goal of the brief.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Goal {
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

/// The product brief.
#[derive(Debug, Clone, Default)]
pub struct Brief {
    /// Its goals, in table order.
    pub goals: Vec<Goal>,
    /// User groups (headings or items under Target Users).
    pub users: Vec<String>,
    /// In Scope items.
    pub in_scope: Vec<String>,
    /// Out of Scope items.
    pub out_of_scope: Vec<String>,
    /// Constraints and dependencies.
    pub constraints: Vec<String>,
    /// The frontmatter's `dependencies`.
    pub dependencies: Vec<String>,
}

impl Brief {
    fn read(text: &str) -> Brief {
        let mut goals: Vec<Goal> = Vec::new();
        for k in MD.keyed(&MD.tables(text), &["G-"]) {
            if goals.iter().any(|g| g.id == k.id) {
                continue;
            }
            let cell = |names: &[&str]| k.cell(names).map(|c| MD.plain(c)).unwrap_or_default();
            let goal = k
                .cell(&["goal"])
                .or_else(|| k.row.get(1).map(String::as_str));
            goals.push(Goal {
                text: MD.strip_id(&MD.plain(goal.unwrap_or_default())),
                priority: k
                    .cell(&["priority"])
                    .and_then(Moscow::parse)
                    .unwrap_or(Moscow::Must),
                metric: cell(&["success metric", "metric", "success"]),
                target: cell(&["target"]),
                id: k.id,
            });
        }
        let items = |title: &str| MD.section(text, title).map(|s| MD.items(s));
        let users = MD
            .section(text, "Target Users")
            .map(|s| {
                let heads: Vec<String> = MD.headings(s).into_iter().map(|h| h.text).collect();
                if heads.is_empty() { MD.items(s) } else { heads }
            })
            .unwrap_or_default();
        Brief {
            goals,
            users,
            in_scope: items("In Scope").unwrap_or_default(),
            out_of_scope: items("Out of Scope").unwrap_or_default(),
            constraints: items("Constraints").unwrap_or_default(),
            dependencies: MD
                .frontmatter(text)
                .and_then(|fm| fm.get("dependencies").map(|d| md::list(d)))
                .unwrap_or_default(),
        }
    }
}

/// One requirement, functional or not.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Req {
    /// `REQ-NNN` (or `FR-NNN`) or `NFR-<cat>-NNN`.
    pub id: String,
    /// Its title (its id when it has none).
    pub title: String,
    /// Its priority, when given.
    pub priority: Option<Moscow>,
    /// Ids it traces to (goals for a REQ).
    pub traces: Vec<String>,
    /// Its file, when there is one.
    pub path: Option<String>,
    /// Its description, on one line.
    pub description: String,
    /// Its user story, on one line.
    pub story: String,
    /// Its acceptance criteria (the list items of that section).
    pub criteria: Vec<String>,
    /// The category of an NFR.
    pub category: String,
    /// The metric of an NFR.
    pub metric: String,
    /// The target of an NFR.
    pub target: String,
    /// Whether an NFR names a metric and a target (or its index row a target).
    pub measurable: bool,
}

impl Req {
    /// Whether it is functional.
    pub fn functional(&self) -> bool {
        !self.id.starts_with("NFR-")
    }

    /// Whether it is a Must.
    pub fn must(&self) -> bool {
        self.priority == Some(Moscow::Must)
    }

    /// Its priority; a requirement that gives none is a Should.
    pub fn moscow(&self) -> Moscow {
        self.priority.unwrap_or(Moscow::Should)
    }

    /// Whether it has a user story ("As a …").
    pub fn has_story(&self) -> bool {
        let lower = self.story.to_lowercase();
        lower.contains("as a ") || lower.contains("as an ")
    }
}

/// The requirements folder.
#[derive(Debug, Clone, Default)]
pub struct Requirements {
    /// Functional requirements, by id.
    pub functional: Vec<Req>,
    /// Non-functional requirements, by id.
    pub non_functional: Vec<Req>,
}

impl Requirements {
    /// Every requirement, functional first.
    pub fn all(&self) -> impl Iterator<Item = &Req> {
        self.functional.iter().chain(&self.non_functional)
    }

    fn read(texts: &BTreeMap<String, String>) -> Requirements {
        let mut found: BTreeMap<String, Req> = BTreeMap::new();
        if let Some(index) = texts.get(REQUIREMENTS_INDEX) {
            for k in MD.keyed(&MD.tables(index), &["REQ-", "FR-", "NFR-"]) {
                let r = found.entry(k.id.clone()).or_insert_with(|| Req {
                    id: k.id.clone(),
                    ..Req::default()
                });
                let cell =
                    |names: &[&str]| k.cell(names).map(|c| MD.plain(c)).filter(|c| !c.is_empty());
                if r.title.is_empty() {
                    r.title = cell(&["title", "requirement", "name"]).unwrap_or_default();
                }
                if r.priority.is_none() {
                    r.priority = cell(&["priority"]).and_then(|p| Moscow::parse(&p));
                }
                if r.category.is_empty() {
                    r.category = cell(&["category"]).unwrap_or_default();
                }
                if let Some(t) = cell(&["traces to", "traces", "goal"]) {
                    merge(&mut r.traces, MD.unique_ids(&t));
                }
                if cell(&["target"]).is_some_and(|t| !MD.is_blank(&t)) {
                    r.measurable = true;
                }
            }
        }
        for (path, id, fm, text) in item_files(texts, REQUIREMENTS_DIR, "") {
            let r = found.entry(id.clone()).or_insert_with(|| Req {
                id: id.clone(),
                ..Req::default()
            });
            r.path.get_or_insert_with(|| path.to_owned());
            if let Some(t) = MD.title(text)
                && r.title.is_empty()
            {
                r.title = t;
            }
            if let Some(p) = fm.get("priority").and_then(|p| Moscow::parse(p)) {
                r.priority = Some(p);
            }
            if let Some(c) = fm.get("category").filter(|c| !c.is_empty()) {
                r.category = c.clone();
            }
            if let Some(t) = fm.get("traces_to") {
                merge(&mut r.traces, MD.unique_ids(t));
            }
            if let Some(s) = MD.section(text, "Acceptance Criteria") {
                let items = MD.items(s);
                if items.len() > r.criteria.len() {
                    r.criteria = items;
                }
            }
            r.description = one_line(MD.section(text, "Description").unwrap_or_default());
            r.story = one_line(MD.section(text, "User Story").unwrap_or_default());
            if let Some(t) = MD.section_table(text, "Metric")
                && let Some(row) = t.rows.first()
            {
                let cell = |h: &str| t.get(row, h).map(|c| MD.plain(c)).unwrap_or_default();
                (r.metric, r.target) = (cell("metric"), cell("target"));
                r.measurable |= !MD.is_blank(&r.metric) && !MD.is_blank(&r.target);
            }
        }
        let (non_functional, functional): (Vec<Req>, Vec<Req>) = found
            .into_values()
            .map(|mut r| {
                if r.title.is_empty() {
                    r.title = r.id.clone();
                }
                r
            })
            .partition(|r| r.id.starts_with("NFR-"));
        Requirements {
            functional,
            non_functional,
        }
    }
}

/// One component of the architecture.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Component {
    /// `COMP-NNN`.
    pub id: String,
    /// Its name (its id when it has none).
    pub name: String,
    /// The requirement ids it implements.
    pub implements: Vec<String>,
    /// The components it depends on.
    pub depends_on: Vec<String>,
}

/// One architecture decision.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Adr {
    /// `ADR-NNN`.
    pub id: String,
    /// Its title (its id when it has none).
    pub title: String,
    /// `Accepted`, `Proposed` (when none is given), …
    pub status: String,
    /// Rows of its Alternatives Considered table.
    pub alternatives: usize,
    /// Ids it traces to.
    pub traces: Vec<String>,
    /// Its file, when there is one.
    pub path: Option<String>,
}

/// One row of a risk table.
#[derive(Debug, Clone, Default)]
pub struct Risk {
    /// The risk.
    pub risk: String,
    /// Its mitigation (empty when none is given).
    pub mitigation: String,
}

/// The architecture folder.
#[derive(Debug, Clone, Default)]
pub struct Architecture {
    /// Components, in index order.
    pub components: Vec<Component>,
    /// Decisions, by id.
    pub adrs: Vec<Adr>,
    /// Rows of Risks & Mitigations.
    pub risks: Vec<Risk>,
}

impl Architecture {
    fn read(texts: &BTreeMap<String, String>) -> Architecture {
        let mut out = Architecture::default();
        let mut adrs: BTreeMap<String, Adr> = BTreeMap::new();
        if let Some(index) = texts.get(ARCHITECTURE_INDEX) {
            for k in MD.keyed(&MD.tables(index), &["COMP-", "ADR-"]) {
                let cell = |names: &[&str]| k.cell(names).map(|c| MD.plain(c)).unwrap_or_default();
                if k.id.starts_with("ADR-") {
                    let a = adrs.entry(k.id.clone()).or_insert_with(|| Adr {
                        id: k.id.clone(),
                        ..Adr::default()
                    });
                    a.title = cell(&["title", "decision"]);
                    a.status = cell(&["status"]);
                    merge(
                        &mut a.traces,
                        MD.unique_ids(&cell(&["traces to", "traces"])),
                    );
                } else if !out.components.iter().any(|c| c.id == k.id) {
                    let name = cell(&["component", "name"]);
                    out.components.push(Component {
                        name: if name.is_empty() { k.id.clone() } else { name },
                        implements: MD
                            .unique_ids(&cell(&["implements"]))
                            .into_iter()
                            .filter(|i| requirement_id(i))
                            .collect(),
                        depends_on: MD.ids_of(&cell(&["dependencies"]), &["COMP-"]),
                        id: k.id.clone(),
                    });
                }
            }
            if let Some(s) = MD.section(index, "Risks") {
                out.risks = risks(s);
            }
        }
        for (path, id, fm, text) in item_files(texts, ARCHITECTURE_DIR, "ADR-") {
            let a = adrs.entry(id.clone()).or_insert_with(|| Adr {
                id: id.clone(),
                ..Adr::default()
            });
            a.path.get_or_insert_with(|| path.to_owned());
            if a.title.is_empty() {
                a.title = MD.title(text).unwrap_or_default();
            }
            if let Some(s) = fm.get("status").filter(|s| !s.is_empty()) {
                a.status = s.clone();
            }
            if let Some(t) = fm.get("traces_to") {
                merge(&mut a.traces, MD.unique_ids(t));
            }
            a.alternatives = MD
                .section_table(text, "Alternatives Considered")
                .map_or(0, |t| t.rows.len());
        }
        out.adrs = adrs
            .into_values()
            .map(|mut a| {
                if a.title.is_empty() {
                    a.title = a.id.clone();
                }
                if a.status.is_empty() {
                    a.status = "Proposed".into();
                }
                a
            })
            .collect();
        out
    }
}

/// One story of an epic.
#[derive(Debug, Clone, Default)]
pub struct Story {
    /// `STORY-EEE-NNN`.
    pub id: String,
    /// Its title.
    pub title: String,
    /// Ids on its `Traces:` line.
    pub traces: Vec<String>,
    /// Ids on its `Component:` line.
    pub components: Vec<String>,
    /// Its acceptance criteria (its list items but `Traces`, `Size` and `Component`).
    pub criteria: Vec<String>,
}

/// One epic.
#[derive(Debug, Clone, Default)]
pub struct Epic {
    /// `EPIC-NNN`.
    pub id: String,
    /// Its title.
    pub title: String,
    /// Whether it is part of the MVP.
    pub mvp: bool,
    /// Its file, when there is one.
    pub path: Option<String>,
    /// Its description, on one line.
    pub description: String,
    /// The requirements it covers: its frontmatter's `requirements`, else the REQ ids of its
    /// Requirements section.
    pub requirements: Vec<String>,
    /// The epics it waits for: its frontmatter's `dependencies`, else the EPIC ids of its
    /// Dependencies section; never itself.
    pub dependencies: Vec<String>,
    /// Its stories.
    pub stories: Vec<Story>,
}

/// The epics folder.
#[derive(Debug, Clone, Default)]
pub struct Epics {
    /// Epics, by id.
    pub epics: Vec<Epic>,
}

impl Epics {
    /// Every story.
    pub fn stories(&self) -> impl Iterator<Item = &Story> {
        self.epics.iter().flat_map(|e| &e.stories)
    }

    fn read(texts: &BTreeMap<String, String>) -> Epics {
        let mut epics: BTreeMap<String, Epic> = BTreeMap::new();
        if let Some(index) = texts.get(EPICS_INDEX) {
            for k in MD.keyed(&MD.tables(index), &["EPIC-"]) {
                let e = epics.entry(k.id.clone()).or_insert_with(|| Epic {
                    id: k.id.clone(),
                    ..Epic::default()
                });
                if let Some(t) = k.cell(&["title"])
                    && e.title.is_empty()
                {
                    e.title = MD.plain(t);
                }
                if let Some(m) = k.cell(&["mvp"]) {
                    e.mvp |= truthy(m);
                }
            }
        }
        for (path, id, fm, text) in item_files(texts, EPICS_DIR, "EPIC-") {
            let e = epics.entry(id.clone()).or_insert_with(|| Epic {
                id: id.clone(),
                ..Epic::default()
            });
            e.path.get_or_insert_with(|| path.to_owned());
            if let Some(t) = MD.title(text) {
                e.title = t;
            }
            e.mvp |= fm.get("mvp").is_some_and(|m| truthy(m));
            e.description = one_line(MD.section(text, "Description").unwrap_or_default());
            let listed = |key: &str, section: &str, prefix: &str| {
                let listed = fm.get(key).map(|v| md::list(v)).unwrap_or_default();
                if listed.is_empty() {
                    let s = MD.section(text, section).unwrap_or_default();
                    MD.ids_of(s, &[prefix])
                } else {
                    listed
                }
            };
            e.requirements = listed("requirements", "Requirements", "REQ-");
            e.dependencies = listed("dependencies", "Dependencies", "EPIC-");
            e.dependencies.retain(|d| *d != id);
            e.stories = stories(text);
        }
        Epics {
            epics: epics.into_values().collect(),
        }
    }
}

/// The readiness report.
#[derive(Debug, Clone, Default)]
pub struct Readiness {
    /// Where it was found.
    pub path: String,
    /// The overall score, 0–100, when it states one.
    pub score: Option<f64>,
    /// `PASS`, `REVIEW` or `FAIL`, when it states one.
    pub gate: Option<String>,
}

impl Readiness {
    fn read(path: &str, text: &str) -> Readiness {
        static NUMBER: LazyLock<regex::Regex> = LazyLock::new(|| {
            regex::Regex::new(r"([0-9]+(?:\.[0-9]+)?)\s*(%|/\s*100)?").expect("a valid regex")
        });
        static GATE: LazyLock<regex::Regex> = LazyLock::new(|| {
            regex::Regex::new(r"(?i)\b(PASS|REVIEW|FAIL)\b").expect("a valid regex")
        });
        let lines: Vec<&str> = text.lines().collect();
        let score = lines
            .iter()
            .filter(|l| {
                let l = l.to_lowercase();
                l.contains("overall") || l.contains("score")
            })
            .find_map(|l| {
                let after = l.split_once(':').map_or(*l, |(_, v)| v);
                let c = NUMBER.captures(after)?;
                let n: f64 = c[1].parse().ok()?;
                Some(if c.get(2).is_none() && n <= 1.0 {
                    n * 100.0
                } else {
                    n
                })
            })
            .filter(|n| (0.0..=100.0).contains(n));
        let gate = lines
            .iter()
            .filter(|l| l.to_lowercase().contains("gate"))
            .chain(lines.iter())
            .find_map(|l| GATE.captures(l).map(|c| c[1].to_uppercase()));
        Readiness {
            path: path.to_owned(),
            score,
            gate,
        }
    }
}

/// One task of the plan.
#[derive(Debug, Clone, Default)]
pub struct PlanTask {
    /// `TASK-NNN`.
    pub id: String,
    /// Ids of the tasks it waits for.
    pub depends_on: Vec<String>,
    /// Files it touches.
    pub files: Vec<String>,
}

/// The plan.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// Whether `plan.json` is a JSON object.
    pub valid: bool,
    /// `Low`, `Medium` or `High` as written.
    pub complexity: String,
    /// Modules it touches (from `modules`, else the top directories of its files).
    pub modules: Vec<String>,
    /// Its tasks.
    pub tasks: Vec<PlanTask>,
    /// Ids of the files under `plan/.task/`.
    pub task_files: Vec<String>,
}

impl Plan {
    fn read(json: &str, texts: &BTreeMap<String, String>) -> Plan {
        let task_files = texts
            .keys()
            .filter_map(|p| under(p, PLAN_TASKS_DIR))
            .filter_map(|n| n.strip_suffix(".json"))
            .map(str::to_owned)
            .collect();
        let Ok(v) = serde_json::from_str::<Value>(json) else {
            return Plan {
                task_files,
                ..Plan::default()
            };
        };
        let tasks: Vec<PlanTask> = v["tasks"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| PlanTask {
                id: text(&t["id"]),
                depends_on: ["depends_on", "dependsOn", "blocked_by"]
                    .iter()
                    .map(|k| list(&t[*k], text))
                    .find(|d| !d.is_empty())
                    .unwrap_or_default(),
                files: list(&t["files"], path),
            })
            .collect();
        let mut modules = list(&v["modules"], text);
        if modules.is_empty() {
            let dirs: BTreeSet<String> = tasks
                .iter()
                .flat_map(|t| &t.files)
                .map(|f| f.rsplit_once('/').map_or(".", |(d, _)| d).to_owned())
                .collect();
            modules = dirs.into_iter().collect();
        }
        Plan {
            valid: v.is_object(),
            complexity: text(&v["complexity"]),
            modules,
            tasks,
            task_files,
        }
    }
}

/// The kind of document that defines ids like `id`.
pub fn definer(id: &str) -> Option<Kind> {
    if id.starts_with("G-") {
        Some(Kind::Brief)
    } else if requirement_id(id) {
        Some(Kind::Requirements)
    } else if id.starts_with("COMP-") || id.starts_with("ADR-") {
        Some(Kind::Architecture)
    } else if id.starts_with("EPIC-") || id.starts_with("STORY-") {
        Some(Kind::Epics)
    } else {
        None
    }
}

/// Whether `id` names a requirement (functional or not).
pub fn requirement_id(id: &str) -> bool {
    id.starts_with("REQ-") || id.starts_with("FR-") || id.starts_with("NFR-")
}

/// The `<prefix>…md` files of the folder `dir` (not `_…`) with the id each is about (its
/// frontmatter's `id` when that is one of `prefix`, else the id its name starts with):
/// (path, id, frontmatter, text).
fn item_files<'t>(
    texts: &'t BTreeMap<String, String>,
    dir: &'t str,
    prefix: &'t str,
) -> impl Iterator<Item = (&'t str, String, BTreeMap<String, String>, &'t str)> {
    files_in(texts, dir)
        .filter(move |(_, name, _)| {
            name.starts_with(prefix) && !name.starts_with('_') && name.ends_with(".md")
        })
        .filter_map(move |(path, name, text)| {
            let fm = MD.frontmatter(text).unwrap_or_default();
            let id = fm
                .get("id")
                .map(|i| MD.plain(i))
                .filter(|i| MD.is_id(i, prefix))
                .or_else(|| {
                    (MD.ids(name).into_iter().next()).filter(|i| name.starts_with(i.as_str()))
                })?;
            Some((path, id, fm, text.as_str()))
        })
}

fn merge(into: &mut Vec<String>, more: Vec<String>) {
    for m in more {
        if !into.contains(&m) {
            into.push(m);
        }
    }
}

/// The rows of the first table of `text` as risks with their mitigations.
fn risks(text: &str) -> Vec<Risk> {
    let Some(t) = MD.tables(text).into_iter().next() else {
        return Vec::new();
    };
    let m = t.column(&["mitigation"], 1);
    t.rows
        .iter()
        .filter(|r| r.first().is_some_and(|c| !MD.is_blank(c)))
        .map(|r| Risk {
            risk: MD.plain(&r[0]),
            mitigation: m
                .and_then(|i| r.get(i))
                .map(|c| MD.plain(c))
                .filter(|c| !MD.is_blank(c))
                .unwrap_or_default(),
        })
        .collect()
}

/// The stories of an epic file: headings naming a `STORY-…` id, with the lines under them.
fn stories(doc: &str) -> Vec<Story> {
    let mut out: Vec<Story> = Vec::new();
    let mut current: Option<(usize, Story, String)> = None;
    let flush = |c: Option<(usize, Story, String)>, out: &mut Vec<Story>| {
        if let Some((_, mut s, body)) = c {
            for line in body.lines() {
                let l = MD.plain(line.trim().trim_start_matches("- "));
                let lower = l.to_lowercase();
                if lower.starts_with("traces") {
                    merge(&mut s.traces, MD.unique_ids(&l));
                } else if lower.starts_with("component") {
                    merge(&mut s.components, MD.unique_ids(&l));
                }
            }
            s.criteria = MD
                .items(&body)
                .into_iter()
                .filter(|i| {
                    let l = i.to_lowercase();
                    !(l.starts_with("traces")
                        || l.starts_with("size")
                        || l.starts_with("component"))
                })
                .collect();
            out.push(s);
        }
    };
    for line in doc.lines() {
        if let Some((level, text)) = MD.heading(line) {
            if current.as_ref().is_some_and(|(open, _, _)| level <= *open) {
                flush(current.take(), &mut out);
            }
            if let Some(id) = MD
                .unique_ids(text)
                .into_iter()
                .next()
                .filter(|i| i.starts_with("STORY-"))
            {
                flush(current.take(), &mut out);
                current = Some((
                    level,
                    Story {
                        id,
                        title: MD.strip_id(text),
                        ..Story::default()
                    },
                    String::new(),
                ));
            }
            continue;
        }
        if let Some((_, _, body)) = &mut current {
            body.push_str(line);
            body.push('\n');
        }
    }
    flush(current.take(), &mut out);
    out
}

fn truthy(text: &str) -> bool {
    matches!(
        MD.plain(text).to_lowercase().as_str(),
        "true" | "yes" | "y" | "x" | "✓" | "✔" | "mvp"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(files: &[(&str, &str)]) -> BTreeMap<String, String> {
        (files.iter())
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect()
    }

    #[test]
    fn moscow_words() {
        for (word, want) in [
            ("Must", Some(Moscow::Must)),
            ("[should]", Some(Moscow::Should)),
            ("**Could**", Some(Moscow::Could)),
            ("Won't", Some(Moscow::Wont)),
            ("will not", Some(Moscow::Wont)),
            ("Must have", Some(Moscow::Must)),
            ("P1", Some(Moscow::Should)),
            ("soon", None),
        ] {
            assert_eq!(Moscow::parse(word), want, "{word}");
        }
    }

    #[test]
    fn a_brief_gives_goals_with_their_defaults_and_users() {
        let brief = "# Product Brief: x\n\n## Target Users\n\n### Developer\n\n### Operator\n\n\
                     ## Goals & Success Metrics\n\n| ID | Goal | Priority | Success Metric | Target |\n\
                     |---|---|---|---|---|\n| G-001 | Add login | Could | logins | 1 |\n\
                     | G-002 | G-002: Add logout | | | |\n";
        let b = Brief::read(brief);
        assert_eq!(b.users, ["Developer", "Operator"]);
        let goals: Vec<(&str, &str, Moscow)> = (b.goals.iter())
            .map(|g| (g.id.as_str(), g.text.as_str(), g.priority))
            .collect();
        assert_eq!(
            goals,
            [
                ("G-001", "Add login", Moscow::Could),
                ("G-002", "Add logout", Moscow::Must)
            ]
        );
        assert_eq!(
            (b.goals[0].metric.as_str(), b.goals[0].target.as_str()),
            ("logins", "1")
        );
    }

    #[test]
    fn an_index_and_the_files_complete_each_other() {
        let t = texts(&[
            (
                REQUIREMENTS_INDEX,
                "| ID | Title | Priority | Traces To |\n|---|---|---|---|\n\
                 | [REQ-002](REQ-002-b.md) | Second | Must | G-001 |\n| REQ-003 | Third | | |\n",
            ),
            (
                "spec/requirements/REQ-002-b.md",
                "---\nid: REQ-002\npriority: Could\ntraces_to: [G-002]\n---\n\n# REQ-002: Second\n\n\
                 ## Description\n\nDoes\nthe second thing.\n\n## User Story\n\nAs a user, I want it.\n\n\
                 ## Acceptance Criteria\n\n- [ ] one\n- [x] two\n",
            ),
            (
                "spec/requirements/NFR-P-001-fast.md",
                "---\nid: NFR-P-001\ncategory: Performance\n---\n\n# NFR-P-001: Fast\n\n\
                 ## Metric & Target\n\n| Metric | Target |\n|---|---|\n| p95 latency | 200 ms |\n",
            ),
            ("spec/requirements/REQ-001-a.md", "# REQ-001: First\n"),
        ]);
        let r = Requirements::read(&t);
        let ids: Vec<&str> = r.all().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["REQ-001", "REQ-002", "REQ-003", "NFR-P-001"]);
        let [first, second, third] = &r.functional[..] else {
            panic!("three REQs")
        };
        assert_eq!((first.title.as_str(), first.priority), ("First", None));
        assert_eq!(first.moscow(), Moscow::Should);
        assert_eq!(second.priority, Some(Moscow::Could), "the file wins");
        assert_eq!(second.traces, ["G-001", "G-002"]);
        assert_eq!(
            second.path.as_deref(),
            Some("spec/requirements/REQ-002-b.md")
        );
        assert_eq!(second.description, "Does the second thing.");
        assert!(second.has_story());
        assert_eq!(second.criteria, ["one", "two"]);
        assert_eq!(
            (third.title.as_str(), third.path.as_deref()),
            ("Third", None)
        );
        let nfr = &r.non_functional[0];
        assert_eq!(nfr.category, "Performance");
        assert_eq!(
            (nfr.metric.as_str(), nfr.target.as_str()),
            ("p95 latency", "200 ms")
        );
        assert!(nfr.measurable);
    }

    #[test]
    fn epics_and_decisions_fill_in_from_their_files() {
        let t = texts(&[
            (
                ARCHITECTURE_INDEX,
                "| ID | Component | Dependencies | Implements |\n|---|---|---|---|\n\
                 | COMP-001 | Login | — | REQ-001, NFR-P-001 |\n| COMP-002 | | COMP-001 | REQ-002 |\n\n\
                 | ID | Title | Status |\n|---|---|---|\n| ADR-001 | Use Rust | |\n",
            ),
            (
                "spec/architecture/ADR-002-x.md",
                "---\nid: ADR-002\nstatus: Accepted\ntraces_to: [REQ-001]\n---\n\n# ADR-002: Cache\n",
            ),
            (
                EPICS_INDEX,
                "| Epic | Title | MVP |\n|---|---|---|\n| [EPIC-001](EPIC-001-a.md) | A | yes |\n",
            ),
            (
                "spec/epics/EPIC-001-a.md",
                "---\nid: EPIC-001\nrequirements: [REQ-001]\ndependencies: []\n---\n\n# EPIC-001: Login\n\n\
                 ## Dependencies\n\n- EPIC-002 and EPIC-001\n\n## Stories\n\n\
                 ### STORY-001-001: Log in\n\n- [ ] it works\n\nSize: S\nTraces: REQ-001\n\
                 Component: COMP-001\n",
            ),
        ]);
        let a = Architecture::read(&t);
        let c: Vec<(&str, &str, usize, usize)> = (a.components.iter())
            .map(|c| {
                (
                    c.id.as_str(),
                    c.name.as_str(),
                    c.implements.len(),
                    c.depends_on.len(),
                )
            })
            .collect();
        assert_eq!(
            c,
            [("COMP-001", "Login", 2, 0), ("COMP-002", "COMP-002", 1, 1)]
        );
        let d: Vec<(&str, &str, &str)> = (a.adrs.iter())
            .map(|a| (a.id.as_str(), a.title.as_str(), a.status.as_str()))
            .collect();
        assert_eq!(
            d,
            [
                ("ADR-001", "Use Rust", "Proposed"),
                ("ADR-002", "Cache", "Accepted")
            ]
        );
        let e = Epics::read(&t);
        let epic = &e.epics[0];
        assert_eq!((epic.title.as_str(), epic.mvp), ("Login", true));
        assert_eq!(epic.requirements, ["REQ-001"]);
        assert_eq!(epic.dependencies, ["EPIC-002"], "its section, never itself");
        let s = &epic.stories[0];
        assert_eq!(
            (s.id.as_str(), s.title.as_str()),
            ("STORY-001-001", "Log in")
        );
        assert_eq!(
            (s.traces.clone(), s.components.clone()),
            (vec!["REQ-001".to_owned()], vec!["COMP-001".to_owned()])
        );
        assert_eq!(s.criteria, ["it works"]);
    }

    #[test]
    fn readiness_score_and_gate() {
        let r = Readiness::read(
            "x",
            "# Readiness\n\n- Overall Score: 82.5%\n- Quality Gate: REVIEW (improvements needed)\n",
        );
        assert_eq!(r.score, Some(82.5));
        assert_eq!(r.gate.as_deref(), Some("REVIEW"));
        let r = Readiness::read("x", "Overall score: 0.91\nGate: pass\n");
        assert_eq!(r.score, Some(91.0));
        assert_eq!(r.gate.as_deref(), Some("PASS"));
    }
}
