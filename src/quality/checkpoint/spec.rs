//! Reading the pipeline folder's documents back, leniently: the analyst's discovery context,
//! the four spec documents, the readiness report and the plan.
//!
//! The checkpoints and the discuss critics measure these documents; they may come from the
//! builtin writer or from any agent, so every reader takes what the ids, tables, headings and
//! frontmatter give and leaves the rest empty instead of failing. Ids follow the templates
//! (`G-NNN`, `REQ-NNN`, `NFR-<cat>-NNN`, `COMP-NNN`, `ADR-NNN`, `EPIC-NNN`, `STORY-EEE-NNN`);
//! `FR-NNN`, the reference's other spelling of a functional requirement, is read as one too.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use serde_json::Value;

/// Pipeline-folder files by relative path.
pub type Folder = BTreeMap<String, Vec<u8>>;

/// The analyst's report.
pub const DISCOVERY: &str = "spec/discovery-context.json";
/// The product brief.
pub const BRIEF: &str = "spec/product-brief.md";
/// The requirements folder.
pub const REQUIREMENTS_DIR: &str = "spec/requirements/";
/// The architecture folder.
pub const ARCHITECTURE_DIR: &str = "spec/architecture/";
/// The epics folder.
pub const EPICS_DIR: &str = "spec/epics/";
/// The plan.
pub const PLAN: &str = "plan/plan.json";
/// The plan's task files.
pub const PLAN_TASKS_DIR: &str = "plan/.task/";
/// Where the readiness report may be: `artifacts/` (v4-current) or `spec/` (earlier versions
/// and the pipeline's EXPECTED line). Both are read.
pub const READINESS: [&str; 2] = ["artifacts/readiness-report.md", "spec/readiness-report.md"];

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

    /// Whether the file at `path` belongs to this kind.
    pub fn owns(self, path: &str) -> bool {
        match self {
            Kind::Discovery => path == DISCOVERY,
            Kind::Brief => path == BRIEF,
            Kind::Requirements => path.starts_with(REQUIREMENTS_DIR),
            Kind::Architecture => path.starts_with(ARCHITECTURE_DIR),
            Kind::Epics => path.starts_with(EPICS_DIR),
            Kind::Readiness => READINESS.contains(&path),
            Kind::Plan => path.starts_with("plan/"),
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
            discovery: texts.get(DISCOVERY).map(|t| Discovery::read(t)),
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
        self.texts_of(kind).flat_map(|(_, t)| ids(t)).collect()
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
                for id in ids(text) {
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
                section(t, "Open Questions")
                    .map(items)
                    .unwrap_or_default()
                    .into_iter()
                    .map(move |q| (p.to_owned(), q))
            })
            .collect()
    }
}

/// The analyst's findings.
#[derive(Debug, Clone, Default)]
pub struct Discovery {
    /// Whether the file is a JSON object.
    pub valid: bool,
    /// The problem statement (or the task text when it has none).
    pub problem: String,
    /// User groups named.
    pub users: Vec<String>,
    /// Explore angles.
    pub dimensions: Vec<String>,
    /// Constraints found in the request.
    pub constraints: Vec<String>,
    /// What the analyst could not know.
    pub open_questions: Vec<String>,
    /// Advice for the next roles.
    pub recommendations: Vec<String>,
    /// Tech-profile signals.
    pub signals: Vec<String>,
    /// Whether code facts were reported (`codebase_context` not null).
    pub has_codebase: bool,
}

impl Discovery {
    fn read(text: &str) -> Discovery {
        let Ok(v) = serde_json::from_str::<Value>(text) else {
            return Discovery::default();
        };
        if !v.is_object() {
            return Discovery::default();
        }
        let seed = &v["seed_analysis"];
        let pick = |key: &str| {
            if seed[key].is_null() {
                &v[key]
            } else {
                &seed[key]
            }
        };
        let mut problem = string(pick("problem_statement"));
        if problem.is_empty() {
            problem = string(&v["task_text"]);
        }
        let profile = if v["tech_profile"].is_null() {
            &v["signals"]
        } else {
            &v["tech_profile"]["signals"]
        };
        Discovery {
            valid: true,
            problem,
            users: strings(pick("target_users")),
            dimensions: strings(pick("exploration_dimensions")),
            constraints: strings(pick("constraints")),
            open_questions: strings(&v["open_questions"]),
            recommendations: strings(&v["recommendations"]),
            signals: strings(profile),
            has_codebase: v["codebase_context"].is_object(),
        }
    }
}

/// One goal of the brief.
#[derive(Debug, Clone)]
pub struct Goal {
    /// `G-NNN`.
    pub id: String,
    /// The goal.
    pub text: String,
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
        for table in tables(text) {
            for row in &table.rows {
                let Some(id) = row.first().map(|c| plain(c)).filter(|c| is_id(c, "G-")) else {
                    continue;
                };
                if goals.iter().any(|g| g.id == id) {
                    continue;
                }
                let text = table
                    .column(&["goal"], 1)
                    .and_then(|i| row.get(i))
                    .map(|c| strip_id(&plain(c)))
                    .unwrap_or_default();
                let cell = |names: &[&str]| {
                    table
                        .column(names, 1)
                        .and_then(|i| row.get(i))
                        .map(|c| plain(c))
                        .unwrap_or_default()
                };
                goals.push(Goal {
                    metric: cell(&["success metric", "metric", "success"]),
                    target: cell(&["target"]),
                    id,
                    text,
                });
            }
        }
        let users = section(text, "Target Users")
            .map(|s| {
                let heads: Vec<String> = headings(s).into_iter().map(|(_, t)| t).collect();
                if heads.is_empty() { items(s) } else { heads }
            })
            .unwrap_or_default();
        let mut constraints = Vec::new();
        if let Some(s) = section(text, "Constraints") {
            constraints = items(s);
        }
        Brief {
            goals,
            users,
            in_scope: section(text, "In Scope").map(items).unwrap_or_default(),
            out_of_scope: section(text, "Out of Scope").map(items).unwrap_or_default(),
            constraints,
            dependencies: frontmatter(text)
                .get("dependencies")
                .map(|d| list(d))
                .unwrap_or_default(),
        }
    }
}

/// One requirement, functional or not.
#[derive(Debug, Clone, Default)]
pub struct Req {
    /// `REQ-NNN` (or `FR-NNN`) or `NFR-<cat>-NNN`.
    pub id: String,
    /// Its title.
    pub title: String,
    /// `Must`, `Should`, `Could` or `Won't`, when given.
    pub priority: Option<String>,
    /// Ids it traces to (goals for a REQ).
    pub traces: Vec<String>,
    /// Number of acceptance criteria.
    pub criteria: usize,
    /// Whether it has a user story ("As a …").
    pub story: bool,
    /// The category of an NFR.
    pub category: String,
    /// Whether an NFR names a metric and a target.
    pub measurable: bool,
}

impl Req {
    /// Whether it is functional.
    pub fn functional(&self) -> bool {
        !self.id.starts_with("NFR-")
    }

    /// Whether it is a Must.
    pub fn must(&self) -> bool {
        self.priority.as_deref() == Some("Must")
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
        let index = texts.get(&format!("{REQUIREMENTS_DIR}_index.md"));
        if let Some(index) = index {
            for table in tables(index) {
                for row in &table.rows {
                    let Some(id) = row.first().map(|c| plain(c)) else {
                        continue;
                    };
                    if !(is_id(&id, "REQ-") || is_id(&id, "FR-") || is_id(&id, "NFR-")) {
                        continue;
                    }
                    let r = found.entry(id.clone()).or_insert_with(|| Req {
                        id: id.clone(),
                        ..Req::default()
                    });
                    let cell = |names: &[&str]| {
                        table
                            .column(names, 1)
                            .and_then(|i| row.get(i))
                            .map(|c| plain(c))
                            .filter(|c| !c.is_empty())
                    };
                    if r.title.is_empty() {
                        r.title = cell(&["title", "requirement", "name"]).unwrap_or_default();
                    }
                    if r.priority.is_none() {
                        r.priority = cell(&["priority"]).and_then(|p| moscow(&p));
                    }
                    if r.category.is_empty() {
                        r.category = cell(&["category"]).unwrap_or_default();
                    }
                    if let Some(t) = cell(&["traces to", "traces", "goal"]) {
                        merge(&mut r.traces, ids(&t));
                    }
                    if cell(&["target"]).is_some_and(|t| !is_blank(&t)) {
                        r.measurable = true;
                    }
                }
            }
        }
        for (path, text) in texts.range::<String, _>(REQUIREMENTS_DIR.to_owned()..) {
            if !path.starts_with(REQUIREMENTS_DIR) {
                break;
            }
            let name = &path[REQUIREMENTS_DIR.len()..];
            if name.starts_with('_') || !name.ends_with(".md") {
                continue;
            }
            let fm = frontmatter(text);
            let id = fm
                .get("id")
                .map(|i| plain(i))
                .filter(|i| is_id(i, ""))
                .or_else(|| {
                    ids(name)
                        .into_iter()
                        .next()
                        .filter(|i| name.starts_with(i.as_str()))
                });
            let Some(id) = id else { continue };
            let r = found.entry(id.clone()).or_insert_with(|| Req {
                id: id.clone(),
                ..Req::default()
            });
            if let Some(t) = h1_title(text)
                && r.title.is_empty()
            {
                r.title = t;
            }
            if let Some(p) = fm.get("priority").and_then(|p| moscow(p)) {
                r.priority = Some(p);
            }
            if let Some(c) = fm.get("category").filter(|c| !c.is_empty()) {
                r.category = c.clone();
            }
            if let Some(t) = fm.get("traces_to") {
                merge(&mut r.traces, ids(t));
            }
            if let Some(s) = section(text, "Acceptance Criteria") {
                r.criteria = r.criteria.max(items(s).len());
            }
            if let Some(s) = section(text, "User Story") {
                let lower = s.to_lowercase();
                r.story |= lower.contains("as a ") || lower.contains("as an ");
            }
            if let Some(s) = section(text, "Metric")
                && let Some(t) = tables(s).into_iter().next()
                && let Some(row) = t.rows.first()
            {
                let metric = t.column(&["metric"], 0).and_then(|i| row.get(i));
                let target = t.column(&["target"], 0).and_then(|i| row.get(i));
                if metric.is_some_and(|m| !is_blank(m)) && target.is_some_and(|t| !is_blank(t)) {
                    r.measurable = true;
                }
            }
        }
        let (non_functional, functional): (Vec<Req>, Vec<Req>) =
            found.into_values().partition(|r| r.id.starts_with("NFR-"));
        Requirements {
            functional,
            non_functional,
        }
    }
}

/// One component of the architecture.
#[derive(Debug, Clone, Default)]
pub struct Component {
    /// `COMP-NNN`.
    pub id: String,
    /// Its name.
    pub name: String,
    /// The requirement ids it implements.
    pub implements: Vec<String>,
}

/// One architecture decision.
#[derive(Debug, Clone, Default)]
pub struct Adr {
    /// `ADR-NNN`.
    pub id: String,
    /// Its title.
    pub title: String,
    /// `Accepted`, `Proposed`, …
    pub status: String,
    /// Rows of its Alternatives Considered table.
    pub alternatives: usize,
    /// Ids it traces to.
    pub traces: Vec<String>,
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
        if let Some(index) = texts.get(&format!("{ARCHITECTURE_DIR}_index.md")) {
            for table in tables(index) {
                for row in &table.rows {
                    let Some(id) = row.first().map(|c| plain(c)) else {
                        continue;
                    };
                    let cell = |names: &[&str]| {
                        table
                            .column(names, 1)
                            .and_then(|i| row.get(i))
                            .map(|c| plain(c))
                            .unwrap_or_default()
                    };
                    if is_id(&id, "COMP-") && !out.components.iter().any(|c| c.id == id) {
                        out.components.push(Component {
                            name: cell(&["component", "name"]),
                            implements: ids(&cell(&["implements"]))
                                .into_iter()
                                .filter(|i| requirement_id(i))
                                .collect(),
                            id,
                        });
                    } else if is_id(&id, "ADR-") {
                        let a = adrs.entry(id.clone()).or_insert_with(|| Adr {
                            id: id.clone(),
                            ..Adr::default()
                        });
                        a.title = cell(&["title", "decision"]);
                        a.status = cell(&["status"]);
                        merge(&mut a.traces, ids(&cell(&["traces to", "traces"])));
                    }
                }
            }
            if let Some(s) = section(index, "Risks") {
                out.risks = risks(s);
            }
        }
        for (path, text) in texts.range::<String, _>(ARCHITECTURE_DIR.to_owned()..) {
            if !path.starts_with(ARCHITECTURE_DIR) {
                break;
            }
            let name = &path[ARCHITECTURE_DIR.len()..];
            if !name.starts_with("ADR-") || !name.ends_with(".md") {
                continue;
            }
            let fm = frontmatter(text);
            let Some(id) = fm
                .get("id")
                .map(|i| plain(i))
                .filter(|i| is_id(i, "ADR-"))
                .or_else(|| ids(name).into_iter().next())
            else {
                continue;
            };
            let a = adrs.entry(id.clone()).or_insert_with(|| Adr {
                id: id.clone(),
                ..Adr::default()
            });
            if a.title.is_empty() {
                a.title = h1_title(text).unwrap_or_default();
            }
            if let Some(s) = fm.get("status").filter(|s| !s.is_empty()) {
                a.status = s.clone();
            }
            if let Some(t) = fm.get("traces_to") {
                merge(&mut a.traces, ids(t));
            }
            a.alternatives = section(text, "Alternatives Considered")
                .and_then(|s| tables(s).into_iter().next())
                .map_or(0, |t| t.rows.len());
        }
        out.adrs = adrs.into_values().collect();
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
    /// Number of acceptance criteria.
    pub criteria: usize,
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
        if let Some(index) = texts.get(&format!("{EPICS_DIR}_index.md")) {
            for table in tables(index) {
                for row in &table.rows {
                    let Some(id) = row.first().map(|c| plain(c)) else {
                        continue;
                    };
                    if !is_id(&id, "EPIC-") {
                        continue;
                    }
                    let e = epics.entry(id.clone()).or_insert_with(|| Epic {
                        id: id.clone(),
                        ..Epic::default()
                    });
                    if let Some(t) = table.column(&["title"], 1).and_then(|i| row.get(i))
                        && e.title.is_empty()
                    {
                        e.title = plain(t);
                    }
                    if let Some(m) = table.column(&["mvp"], 1).and_then(|i| row.get(i)) {
                        e.mvp |= truthy(m);
                    }
                }
            }
        }
        for (path, text) in texts.range::<String, _>(EPICS_DIR.to_owned()..) {
            if !path.starts_with(EPICS_DIR) {
                break;
            }
            let name = &path[EPICS_DIR.len()..];
            if !name.starts_with("EPIC-") || !name.ends_with(".md") {
                continue;
            }
            let fm = frontmatter(text);
            let Some(id) = fm
                .get("id")
                .map(|i| plain(i))
                .filter(|i| is_id(i, "EPIC-"))
                .or_else(|| ids(name).into_iter().next())
            else {
                continue;
            };
            let e = epics.entry(id.clone()).or_insert_with(|| Epic {
                id: id.clone(),
                ..Epic::default()
            });
            if let Some(t) = h1_title(text) {
                e.title = t;
            }
            e.mvp |= fm.get("mvp").is_some_and(|m| truthy(m));
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
    fn read(text: &str, texts: &BTreeMap<String, String>) -> Plan {
        let task_files = texts
            .keys()
            .filter_map(|p| p.strip_prefix(PLAN_TASKS_DIR))
            .filter_map(|n| n.strip_suffix(".json"))
            .map(str::to_owned)
            .collect();
        let Ok(v) = serde_json::from_str::<Value>(text) else {
            return Plan {
                task_files,
                ..Plan::default()
            };
        };
        let tasks: Vec<PlanTask> = v["tasks"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|t| {
                        let deps = ["depends_on", "dependsOn", "blocked_by"]
                            .iter()
                            .map(|k| strings(&t[*k]))
                            .find(|d| !d.is_empty())
                            .unwrap_or_default();
                        let files = t["files"]
                            .as_array()
                            .map(|f| {
                                f.iter()
                                    .filter_map(|x| {
                                        x.as_str().or_else(|| x["path"].as_str()).map(str::to_owned)
                                    })
                                    .collect()
                            })
                            .unwrap_or_default();
                        PlanTask {
                            id: string(&t["id"]),
                            depends_on: deps,
                            files,
                        }
                    })
                    .collect()
            })
            .unwrap_or_default();
        let mut modules = strings(&v["modules"]);
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
            complexity: string(&v["complexity"]),
            modules,
            tasks,
            task_files,
        }
    }
}

// ---------------------------------------------------------------------------------------
// Markdown and id helpers.

static ID: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(
        r"\b(?:STORY-[0-9]{3}-[0-9]{3}|NFR-[A-Z]{1,3}-[0-9]{3}|EPIC-[0-9]{3}|COMP-[0-9]{3}|REQ-[0-9]{3}|FR-[0-9]{3}|ADR-[0-9]{3}|G-[0-9]{3})\b",
    )
    .expect("a valid regex")
});

/// Every spec id in `text`, in order of appearance, each once.
pub fn ids(text: &str) -> Vec<String> {
    let mut seen = BTreeSet::new();
    ID.find_iter(text)
        .map(|m| m.as_str().to_owned())
        .filter(|i| seen.insert(i.clone()))
        .collect()
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

/// Whether `text` is exactly one id starting with `prefix`.
fn is_id(text: &str, prefix: &str) -> bool {
    ID.find(text)
        .is_some_and(|m| m.start() == 0 && m.end() == text.len() && m.as_str().starts_with(prefix))
}

fn merge(into: &mut Vec<String>, more: Vec<String>) {
    for m in more {
        if !into.contains(&m) {
            into.push(m);
        }
    }
}

/// The frontmatter of `doc` as key/value pairs (empty without one).
pub fn frontmatter(doc: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut lines = doc.trim_start_matches('\u{feff}').trim_start().lines();
    if lines.next().map(str::trim_end) != Some("---") {
        return out;
    }
    for line in lines {
        if line.trim_end() == "---" {
            return out;
        }
        if let Some((key, value)) = line.split_once(':')
            && !key.starts_with(' ')
            && !key.is_empty()
        {
            out.insert(key.trim().to_owned(), value.trim().to_owned());
        }
    }
    BTreeMap::new()
}

/// An inline YAML list (`[a, b]`) or a single value, as items.
pub fn list(value: &str) -> Vec<String> {
    let inner = value
        .trim()
        .strip_prefix('[')
        .and_then(|v| v.strip_suffix(']'))
        .unwrap_or(value);
    inner
        .split(',')
        .map(|s| s.trim().trim_matches(|c| c == '"' || c == '\'').to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

/// The headings of `text` outside code fences, as (level, text).
pub fn headings(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fence = !fence;
            continue;
        }
        if let Some(h) = heading(line).filter(|_| !fence) {
            out.push(h);
        }
    }
    out
}

fn heading(line: &str) -> Option<(usize, String)> {
    let level = line.bytes().take_while(|b| *b == b'#').count();
    if level == 0 || level > 6 {
        return None;
    }
    let rest = &line[level..];
    if !rest.starts_with(' ') {
        return None;
    }
    Some((level, rest.trim().trim_end_matches('#').trim().to_owned()))
}

/// Lower-case words of `text`, for matching headings loosely.
fn words(text: &str) -> String {
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty() && *w != "and")
        .collect::<Vec<_>>()
        .join(" ")
}

/// The body of the first section whose heading starts with the words of `title`, up to the
/// next heading of the same or a higher level.
pub fn section<'d>(doc: &'d str, title: &str) -> Option<&'d str> {
    let want = words(title);
    let mut offset = 0;
    let mut found: Option<(usize, usize)> = None;
    let mut fence = false;
    for line in doc.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        if line.trim_start().starts_with("```") {
            fence = !fence;
            continue;
        }
        let Some((level, text)) = heading(line.trim_end()).filter(|_| !fence) else {
            continue;
        };
        match found {
            None => {
                let have = words(&text);
                if have == want || have.starts_with(&format!("{want} ")) {
                    found = Some((level, offset));
                }
            }
            Some((open, body)) if level <= open => return Some(&doc[body..start]),
            _ => {}
        }
    }
    found.map(|(_, body)| &doc[body..])
}

/// A markdown table.
#[derive(Debug, Clone, Default)]
pub struct Table {
    /// Header cells, lower-case.
    pub headers: Vec<String>,
    /// Body rows.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// The index of the first header equal to one of `names` (tried in order), then of the
    /// first starting with one, from column `from` on.
    pub fn column(&self, names: &[&str], from: usize) -> Option<usize> {
        let find = |f: &dyn Fn(&str, &str) -> bool| {
            names.iter().find_map(|n| {
                self.headers
                    .iter()
                    .enumerate()
                    .skip(from)
                    .find(|(_, h)| f(h, n))
                    .map(|(i, _)| i)
            })
        };
        find(&|h, n| h == n).or_else(|| find(&|h, n| h.starts_with(n)))
    }
}

/// The tables of `text`, in order.
pub fn tables(text: &str) -> Vec<Table> {
    let mut out: Vec<Table> = Vec::new();
    let mut current: Option<Table> = None;
    for line in text.lines() {
        let line = line.trim();
        if !line.starts_with('|') {
            out.extend(current.take());
            continue;
        }
        let cells = cells(line);
        let separator = cells
            .iter()
            .all(|c| !c.is_empty() && c.chars().all(|ch| matches!(ch, '-' | ':' | ' ')));
        match &mut current {
            None => {
                current = Some(Table {
                    headers: cells.iter().map(|c| plain(c).to_lowercase()).collect(),
                    rows: Vec::new(),
                })
            }
            Some(_) if separator => {}
            Some(t) => t.rows.push(cells),
        }
    }
    out.extend(current);
    out
}

fn cells(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|');
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    let mut out = Vec::new();
    let mut cell = String::new();
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                cell.push('|');
                chars.next();
            }
            '|' => out.push(std::mem::take(&mut cell).trim().to_owned()),
            c => cell.push(c),
        }
    }
    out.push(cell.trim().to_owned());
    out
}

/// Text of a cell without links, emphasis and code marks: `[REQ-001](x.md)` gives `REQ-001`.
pub fn plain(cell: &str) -> String {
    let mut out = String::new();
    let mut rest = cell;
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find("](") {
            Some(mid) => {
                out.push_str(&after[..mid]);
                let tail = &after[mid + 2..];
                rest = tail.find(')').map_or("", |c| &tail[c + 1..]);
            }
            None => {
                out.push('[');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out.replace("**", "")
        .replace(['`', '*'], "")
        .trim()
        .to_owned()
}

/// `G-001: Let users …` gives `Let users …`.
fn strip_id(text: &str) -> String {
    match ID.find(text) {
        Some(m) if m.start() == 0 => text[m.end()..]
            .trim_start_matches([':', ' ', '-', '—'])
            .trim()
            .to_owned(),
        _ => text.to_owned(),
    }
}

/// The title in the H1 of `doc` after `<ID>: `, if any.
pub fn h1_title(doc: &str) -> Option<String> {
    headings(doc)
        .into_iter()
        .find(|(level, _)| *level == 1)
        .map(|(_, text)| strip_id(&text))
        .filter(|t| !t.is_empty())
}

/// Whether a cell or item says nothing (`—`, `TBD`, `none`, `n/a`).
pub fn is_blank(text: &str) -> bool {
    let t = plain(text).to_lowercase();
    let t = t.trim_matches(|c: char| c.is_whitespace() || c == '.');
    t.is_empty()
        || matches!(
            t,
            "-" | "—" | "–" | "tbd" | "tbc" | "none" | "n/a" | "na" | "todo" | "?" | "unknown"
        )
}

/// The list items of `text` (bullets, numbers and checkboxes), without markers; items that
/// say nothing (`None`, `—`, "No open questions") are left out.
pub fn items(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fence = false;
    for line in text.lines() {
        let l = line.trim_start();
        if l.starts_with("```") {
            fence = !fence;
            continue;
        }
        if fence {
            continue;
        }
        let rest = l
            .strip_prefix("- ")
            .or_else(|| l.strip_prefix("* "))
            .or_else(|| l.strip_prefix("+ "))
            .or_else(|| {
                let digits = l.bytes().take_while(u8::is_ascii_digit).count();
                (digits > 0)
                    .then(|| {
                        l[digits..]
                            .strip_prefix(". ")
                            .or_else(|| l[digits..].strip_prefix(") "))
                    })
                    .flatten()
            });
        let Some(rest) = rest else { continue };
        let rest = rest
            .strip_prefix("[ ] ")
            .or_else(|| rest.strip_prefix("[x] "))
            .or_else(|| rest.strip_prefix("[X] "))
            .unwrap_or(rest)
            .trim();
        let lower = rest.to_lowercase();
        if is_blank(rest) || lower.starts_with("no open question") || lower.starts_with("none ") {
            continue;
        }
        out.push(rest.to_owned());
    }
    out
}

/// The rows of the first table of `text` as risks with their mitigations.
fn risks(text: &str) -> Vec<Risk> {
    let Some(t) = tables(text).into_iter().next() else {
        return Vec::new();
    };
    let m = t.column(&["mitigation"], 1);
    t.rows
        .iter()
        .filter(|r| r.first().is_some_and(|c| !is_blank(c)))
        .map(|r| Risk {
            risk: plain(&r[0]),
            mitigation: m
                .and_then(|i| r.get(i))
                .map(|c| plain(c))
                .filter(|c| !is_blank(c))
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
                let l = plain(line.trim().trim_start_matches("- "));
                let lower = l.to_lowercase();
                if lower.starts_with("traces") {
                    merge(&mut s.traces, ids(&l));
                } else if lower.starts_with("component") {
                    merge(&mut s.components, ids(&l));
                }
            }
            s.criteria = items(&body)
                .iter()
                .filter(|i| {
                    let l = i.to_lowercase();
                    !(l.starts_with("traces")
                        || l.starts_with("size")
                        || l.starts_with("component"))
                })
                .count();
            out.push(s);
        }
    };
    for line in doc.lines() {
        if let Some((level, text)) = heading(line) {
            if current.as_ref().is_some_and(|(open, _, _)| level <= *open) {
                flush(current.take(), &mut out);
            }
            if let Some(id) = ids(&text)
                .into_iter()
                .next()
                .filter(|i| i.starts_with("STORY-"))
            {
                flush(current.take(), &mut out);
                current = Some((
                    level,
                    Story {
                        id,
                        title: strip_id(&text),
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

/// A MoSCoW word, normalised.
fn moscow(text: &str) -> Option<String> {
    let t = plain(text)
        .trim_matches(|c| c == '[' || c == ']')
        .to_ascii_lowercase();
    match t.as_str() {
        "must" | "must have" | "p0" => Some("Must".into()),
        "should" | "should have" | "p1" => Some("Should".into()),
        "could" | "could have" | "p2" => Some("Could".into()),
        "won't" | "wont" | "won't have" | "will not" => Some("Won't".into()),
        _ => None,
    }
}

fn truthy(text: &str) -> bool {
    matches!(
        plain(text).to_lowercase().as_str(),
        "true" | "yes" | "y" | "x" | "✓" | "✔" | "mvp"
    )
}

fn string(v: &Value) -> String {
    v.as_str().map(|s| s.trim().to_owned()).unwrap_or_default()
}

fn strings(v: &Value) -> Vec<String> {
    match v {
        Value::Array(a) => a
            .iter()
            .filter_map(|x| {
                x.as_str()
                    .map(str::to_owned)
                    .or_else(|| x["name"].as_str().map(str::to_owned))
                    .or_else(|| x["text"].as_str().map(str::to_owned))
            })
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect(),
        Value::String(s) if !s.trim().is_empty() => vec![s.trim().to_owned()],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_tables_sections_items() {
        assert_eq!(
            ids("REQ-001, NFR-SC-002, FR-003 and STORY-001-002; not XREQ-001, REQ-0011, G-01"),
            vec!["REQ-001", "NFR-SC-002", "FR-003", "STORY-001-002"]
        );
        let t = tables("| ID | Title |\n|---|---|\n| [REQ-001](a.md) | x \\| y |\n\ntext");
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].column(&["title"], 1), Some(1));
        assert_eq!(plain(&t[0].rows[0][0]), "REQ-001");
        assert_eq!(t[0].rows[0][1], "x | y");
        let doc = "# T\n\n## Goals & Success Metrics\n\na\n\n### B\n\nb\n\n## Open Questions\n\n- [ ] one?\n- None\n1. two?\n";
        assert_eq!(
            section(doc, "Goals and Success Metrics"),
            Some("\na\n\n### B\n\nb\n\n")
        );
        assert_eq!(
            items(section(doc, "Open Questions").unwrap()),
            vec!["one?", "two?"]
        );
        let fm = frontmatter("---\nid: REQ-001\ntraces_to: [G-001, G-002]\n---\n# REQ-001: x\n");
        assert_eq!(list(&fm["traces_to"]), vec!["G-001", "G-002"]);
        assert_eq!(h1_title("# REQ-001: Sign in\n"), Some("Sign in".into()));
        assert!(frontmatter("---\nid: x\nno end").is_empty());
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
