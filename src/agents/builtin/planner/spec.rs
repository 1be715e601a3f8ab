//! Reading what the earlier roles wrote: the discovery context, the requirements and the
//! epics. Everything is read leniently: any file may be missing or partly malformed, and what
//! cannot be read becomes a note, never a failure. The result is the list of work items the
//! plan is cut from: one per epic in dependency order, else one per requirement, else one per
//! clause of the task text.

use std::collections::BTreeMap;

use super::text;
use crate::agents::{TaskInput, TechProfile};
use crate::specdoc::discovery::Discovery as Report;
use crate::specdoc::md;
use crate::specdoc::spec::{DISCOVERY, EPICS_DIR, REQUIREMENTS_DIR, files_in};

/// How many keywords a work item keeps.
const KEYWORDS: usize = 12;

/// What the discovery context says that the planner uses.
#[derive(Debug, Default)]
pub struct Discovery {
    /// The command that runs the tests.
    pub test_command: Option<String>,
    /// Languages, the main one first.
    pub languages: Vec<String>,
    /// Source directories, the main one first.
    pub source_dirs: Vec<String>,
    /// Test directories.
    pub test_dirs: Vec<String>,
    /// The analyst's signals, merged into the planner's.
    pub upstream: Option<TechProfile>,
}

/// Reads the discovery context, if there is one.
pub fn discovery(input: &TaskInput, notes: &mut Vec<String>) -> Discovery {
    let d = match input.folder.get(DISCOVERY).map(|raw| Report::parse(raw)) {
        None => return Discovery::default(),
        Some(Ok(d)) => d,
        Some(Err(e)) => {
            notes.push(format!(
                "{DISCOVERY} does not parse ({e}); planned without it"
            ));
            return Discovery::default();
        }
    };
    let code = d.codebase.unwrap_or_default();
    Discovery {
        test_command: code
            .test_framework
            .map(|t| t.command)
            .filter(|c| !c.is_empty()),
        languages: code.languages.into_iter().map(|l| l.name).collect(),
        source_dirs: dirs(code.source_dirs),
        test_dirs: dirs(code.test_dirs),
        upstream: Some(d.tech_profile),
    }
}

/// Directories without `./` and trailing `/`; the root and paths leaving it are left out.
fn dirs(paths: Vec<String>) -> Vec<String> {
    let clean = |s: String| s.trim_start_matches("./").trim_end_matches('/').to_owned();
    let mut out: Vec<String> = paths.into_iter().map(clean).collect();
    out.retain(|s| !s.is_empty() && s != "." && !s.contains(".."));
    out
}

/// A markdown document with front matter.
struct Doc {
    /// Front-matter keys; a scalar is a one-element list.
    front: BTreeMap<String, Vec<String>>,
    /// Everything after the front matter.
    body: String,
}

impl Doc {
    /// Reads `text`: a front matter between `---` lines (keys lower-cased; a value is a
    /// scalar, an inline `[a, b]` list or a block of `- item` lines), then the body.
    fn parse(text: &str) -> Doc {
        let text = text.replace("\r\n", "\n");
        let lines: Vec<&str> = text.lines().collect();
        let end = (lines.first().map(|l| l.trim()) == Some("---"))
            .then(|| lines.iter().skip(1).position(|l| l.trim() == "---"))
            .flatten()
            .map_or(0, |end| end + 1);
        let mut front: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut key: Option<String> = None;
        for line in lines.iter().take(end).skip(1) {
            let trimmed = line.trim();
            if let Some(item) = trimmed.strip_prefix("- ")
                && line.starts_with([' ', '-'])
                && let Some(k) = &key
            {
                front.entry(k.clone()).or_default().push(unquote(item));
                continue;
            }
            let Some((k, value)) = trimmed.split_once(':').filter(|_| !line.starts_with(' '))
            else {
                continue;
            };
            let k = k.trim().to_ascii_lowercase();
            let value = value.trim();
            let values = match value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) {
                Some(list) => list
                    .split(',')
                    .map(unquote)
                    .filter(|s| !s.is_empty())
                    .collect(),
                None if value.is_empty() => Vec::new(),
                None => vec![unquote(value)],
            };
            front.insert(k.clone(), values);
            key = Some(k);
        }
        let start = if end > 0 { end + 1 } else { 0 };
        Doc {
            front,
            body: lines[start.min(lines.len())..].join("\n"),
        }
    }

    fn scalar(&self, key: &str) -> Option<&str> {
        self.front.get(key)?.first().map(String::as_str)
    }

    fn list(&self, key: &str) -> Vec<String> {
        self.front.get(key).cloned().unwrap_or_default()
    }

    /// The title: front matter `title`, else the first `# ` heading, without the id.
    fn title(&self, id: &str) -> String {
        let heading = || self.body.lines().find_map(|l| l.strip_prefix("# "));
        let raw = self
            .scalar("title")
            .or_else(heading)
            .unwrap_or_default()
            .trim();
        let stripped = raw
            .strip_prefix(id)
            .map(|rest| rest.trim_start_matches([':', '-', '—', '–', '.', ' ']))
            .unwrap_or(raw)
            .trim();
        // The plan is JSON: its titles are text, not the Markdown source of the headings.
        if stripped.is_empty() {
            id.to_owned()
        } else {
            md::unescape(stripped)
        }
    }

    /// The text of the `## <name>` section (up to the next heading of level 1 or 2), with
    /// its lines joined.
    fn section(&self, name: &str) -> String {
        let mut inside = false;
        let mut out = Vec::new();
        for line in self.body.lines() {
            let level = line.len() - line.trim_start_matches('#').len();
            if (1..=2).contains(&level) {
                if inside {
                    break;
                }
                inside = line[level..].trim().eq_ignore_ascii_case(name);
            } else if inside && !line.trim().is_empty() && level == 0 {
                out.push(line.trim());
            }
        }
        out.join(" ")
    }
}

fn unquote(s: &str) -> String {
    s.trim().trim_matches(['"', '\'']).trim().to_owned()
}

/// The text of a `- [ ]` / `- [x]` line.
fn checkbox(line: &str) -> Option<String> {
    let t = line.trim_start();
    let t = t.strip_prefix("- ").or_else(|| t.strip_prefix("* "))?;
    let rest = ["[ ]", "[x]", "[X]"]
        .iter()
        .find_map(|b| t.strip_prefix(b))?;
    Some(rest.trim().to_owned()).filter(|r| !r.is_empty())
}

/// Unique ids like `REQ-001` in `text`.
fn ids_in(text: &str, prefix: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for token in text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')) {
        if let Some(num) = token.strip_prefix(prefix)
            && !num.is_empty()
            && num.chars().all(|c| c.is_ascii_digit())
            && !out.iter().any(|o| o == token)
        {
            out.push(token.to_owned());
        }
    }
    out
}

/// A requirement or epic file, as far as the planner reads it.
struct Entry {
    id: String,
    title: String,
    description: String,
    criteria: Vec<String>,
    /// Whether a requirement is a Won't.
    wont: bool,
    /// An epic's story titles.
    stories: Vec<String>,
    /// An epic's requirement ids.
    requirements: Vec<String>,
    /// An epic's dependencies (epic ids).
    dependencies: Vec<String>,
}

/// The requirement (`REQ-`) or epic (`EPIC-`) files directly under `dir`, in id order, each
/// id once (the first file by path). The id is the front matter's, else the first two `-`
/// parts of the file name. A requirement's criteria are the checkboxes of its Acceptance
/// Criteria section (of the whole file without one); an epic's are all its checkboxes.
fn entries(input: &TaskInput, dir: &str, prefix: &str) -> Vec<Entry> {
    let mut out: Vec<Entry> = Vec::new();
    let files = files_in(&input.folder, dir).filter_map(|(_, name, bytes)| {
        let doc = !name.contains('/') && name.starts_with(prefix) && name.ends_with(".md");
        Some((name, std::str::from_utf8(bytes).ok().filter(|_| doc)?))
    });
    for (name, text) in files {
        let doc = Doc::parse(text);
        let stem = name.trim_end_matches(".md");
        let parts: Vec<&str> = stem.splitn(3, '-').collect();
        let id = match (doc.scalar("id"), parts.as_slice()) {
            (Some(id), _) => id.to_owned(),
            (None, [a, b, ..]) => format!("{a}-{b}"),
            (None, _) => stem.to_owned(),
        };
        let mut e = Entry {
            title: doc.title(&id),
            description: doc.section("Description"),
            criteria: Vec::new(),
            wont: doc
                .scalar("priority")
                .is_some_and(|p| p.to_ascii_lowercase().starts_with("won")),
            stories: Vec::new(),
            requirements: doc.list("requirements"),
            dependencies: doc.list("dependencies"),
            id,
        };
        if prefix == "EPIC-" {
            epic_body(&doc, &mut e);
        } else {
            let acceptance = |l: &str| {
                l.trim_start_matches('#')
                    .trim()
                    .eq_ignore_ascii_case("acceptance criteria")
            };
            let whole = !doc.body.lines().any(acceptance);
            let mut inside = whole;
            for line in doc.body.lines() {
                if line.starts_with('#') {
                    inside = whole || acceptance(line);
                } else if inside && let Some(c) = checkbox(line) {
                    e.criteria.push(c);
                }
            }
        }
        out.push(e);
    }
    out.sort_by(|a, b| a.id.cmp(&b.id));
    out.dedup_by(|a, b| a.id == b.id);
    out
}

/// An epic's stories and criteria, and its requirements and dependencies from its sections
/// when the front matter lists none.
fn epic_body(doc: &Doc, e: &mut Entry) {
    for line in doc.body.lines() {
        if let Some(h) = line.strip_prefix("### ") {
            let h = h.trim();
            if h.to_ascii_uppercase().starts_with("STORY") {
                e.stories
                    .push(md::unescape(h.split_once(':').map_or(h, |(_, t)| t).trim()));
            }
        } else if let Some(c) = checkbox(line)
            && !e.criteria.contains(&c)
        {
            e.criteria.push(c);
        }
    }
    if e.requirements.is_empty() {
        e.requirements = ids_in(&doc.section("Requirements"), "REQ-");
    }
    if e.dependencies.is_empty() {
        e.dependencies = ids_in(&doc.section("Dependencies"), "EPIC-");
    }
    e.dependencies.retain(|d| d != &e.id);
}

impl Entry {
    /// The work item of this requirement or epic.
    fn item(&self, criteria: Vec<String>, requirements: Vec<String>, after: Vec<usize>) -> Item {
        let secondary = format!(
            "{} {} {}",
            self.description,
            self.stories.join(" "),
            criteria.join(" ")
        );
        Item {
            key: self.id.clone(),
            title: self.title.clone(),
            description: if self.description.is_empty() {
                self.title.clone()
            } else {
                self.description.clone()
            },
            keywords: text::keywords(&self.title, &secondary, KEYWORDS),
            criteria,
            requirements,
            after,
        }
    }
}

/// One piece of work the plan covers.
#[derive(Debug, Clone, Default)]
pub struct Item {
    /// `EPIC-001`, `REQ-002` or `clause 1`.
    pub key: String,
    /// A short title.
    pub title: String,
    /// What to do.
    pub description: String,
    /// Acceptance criteria, as written in the spec.
    pub criteria: Vec<String>,
    /// Requirement ids it serves.
    pub requirements: Vec<String>,
    /// Indices of earlier items it depends on.
    pub after: Vec<usize>,
    /// The words files are matched against.
    pub keywords: Vec<String>,
}

/// Where the work items came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// `spec/epics/`.
    Epics,
    /// `spec/requirements/`.
    Requirements,
    /// The task text.
    TaskText,
}

impl Origin {
    /// Its name in the planner's sentences, and how they count `n` of its items.
    pub fn names(self, n: usize) -> (&'static str, String) {
        let (name, one, many) = match self {
            Origin::Epics => ("epics", "epic", "epics"),
            Origin::Requirements => ("requirements", "requirement", "requirements"),
            Origin::TaskText => (
                "task text",
                "clause of the task text",
                "clauses of the task text",
            ),
        };
        (name, format!("{n} {}", if n == 1 { one } else { many }))
    }
}

/// The work items: from the epics if any, else the requirements, else the task text.
pub fn items(input: &TaskInput, notes: &mut Vec<String>) -> (Vec<Item>, Origin) {
    let reqs = entries(input, REQUIREMENTS_DIR, "REQ-");
    let epics = entries(input, EPICS_DIR, "EPIC-");
    if !epics.is_empty() {
        return (epic_items(epics, &reqs, notes), Origin::Epics);
    }
    let wanted: Vec<Item> = reqs
        .iter()
        .filter(|r| !r.wont)
        .map(|r| r.item(r.criteria.clone(), vec![r.id.clone()], Vec::new()))
        .collect();
    if !wanted.is_empty() {
        return (wanted, Origin::Requirements);
    }
    (clause_items(&input.session.task), Origin::TaskText)
}

/// One item per epic, each after the epics it depends on (ties by id; a cycle is broken by
/// id order and noted).
fn epic_items(epics: Vec<Entry>, reqs: &[Entry], notes: &mut Vec<String>) -> Vec<Item> {
    let n = epics.len();
    let deps: Vec<Vec<usize>> = epics
        .iter()
        .map(|e| {
            e.dependencies
                .iter()
                .filter_map(|d| epics.iter().position(|x| &x.id == d))
                .collect()
        })
        .collect();
    let mut order: Vec<usize> = Vec::with_capacity(n);
    while order.len() < n {
        let left: Vec<usize> = (0..n).filter(|i| !order.contains(i)).collect();
        let ready = left
            .iter()
            .find(|&&i| deps[i].iter().all(|d| order.contains(d)));
        order.push(match ready {
            Some(&i) => i,
            None => {
                let stuck: Vec<&str> = left.iter().map(|&i| epics[i].id.as_str()).collect();
                notes.push(format!(
                    "epic dependencies form a cycle among {}; those epics follow id order",
                    stuck.join(", ")
                ));
                left[0]
            }
        });
    }
    order
        .iter()
        .enumerate()
        .map(|(pos, &i)| {
            let e = &epics[i];
            let mut after: Vec<usize> = deps[i]
                .iter()
                .filter_map(|d| order.iter().position(|o| o == d))
                .filter(|&p| p < pos)
                .collect();
            after.sort_unstable();
            let mut criteria = e.criteria.clone();
            if criteria.is_empty() {
                for r in reqs.iter().filter(|r| e.requirements.contains(&r.id)) {
                    criteria.extend(r.criteria.iter().cloned());
                }
            }
            e.item(criteria, e.requirements.clone(), after)
        })
        .collect()
}
/// One item per clause of the task text that has a keyword; the whole text when none has.
fn clause_items(task: &str) -> Vec<Item> {
    let mut clauses: Vec<String> = text::clauses(task)
        .into_iter()
        .filter(|c| !text::keywords(c, "", 1).is_empty())
        .collect();
    if clauses.is_empty() {
        clauses.push(task.trim().to_owned());
    }
    clauses
        .iter()
        .enumerate()
        .map(|(i, c)| Item {
            key: format!("clause {}", i + 1),
            title: if c.is_empty() {
                "The requested change".to_owned()
            } else {
                text::sentence_case(&text::truncate(c, 80))
            },
            description: text::sentence_case(c.trim()),
            keywords: text::keywords(c, "", KEYWORDS),
            ..Item::default()
        })
        .collect()
}
