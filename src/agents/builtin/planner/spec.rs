//! Reading what the earlier roles wrote: the discovery context, the requirements and the
//! epics. Everything is read leniently: any file may be missing or partly malformed, and what
//! cannot be read becomes a note, never a failure. The result is the list of work items the
//! plan is cut from: one per epic in dependency order, else one per requirement, else one per
//! clause of the task text.

use std::collections::BTreeMap;

use serde_json::Value;

use super::text;
use crate::agents::{TaskInput, TechProfile};

/// Where the analyst writes the discovery context.
pub const DISCOVERY: &str = "spec/discovery-context.json";
const REQUIREMENTS: &str = "spec/requirements/";
const EPICS: &str = "spec/epics/";

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
    let Some(raw) = input.folder.get(DISCOVERY) else {
        return Discovery::default();
    };
    let v: Value = match serde_json::from_slice(raw) {
        Ok(v) => v,
        Err(e) => {
            notes.push(format!(
                "{DISCOVERY} does not parse ({e}); planned without it"
            ));
            return Discovery::default();
        }
    };
    let ctx = &v["codebase_context"];
    let test_command = ctx["test_framework"]["command"]
        .as_str()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned);
    Discovery {
        test_command,
        languages: names(&ctx["languages"]),
        source_dirs: dirs(&ctx["layout"]["source_dirs"]),
        test_dirs: dirs(&ctx["layout"]["test_dirs"]),
        upstream: tech_profile(&v["tech_profile"]),
    }
}

/// Language names from a list of names, a list of `{name}` objects, or a map from name to a
/// share (number, or an object with `bytes` or `files`), largest share first.
fn names(v: &Value) -> Vec<String> {
    match v {
        Value::String(s) => vec![s.clone()],
        Value::Array(items) => items
            .iter()
            .filter_map(|x| match x {
                Value::String(s) => Some(s.clone()),
                Value::Object(o) => ["name", "language"]
                    .iter()
                    .find_map(|k| o.get(*k).and_then(Value::as_str).map(str::to_owned)),
                _ => None,
            })
            .collect(),
        Value::Object(map) => {
            let share = |x: &Value| {
                x.as_f64()
                    .or_else(|| x["bytes"].as_f64())
                    .or_else(|| x["files"].as_f64())
                    .unwrap_or(0.0)
            };
            let mut by_share: Vec<(f64, &String)> =
                map.iter().map(|(name, x)| (share(x), name)).collect();
            by_share.sort_by(|a, b| {
                b.0.partial_cmp(&a.0)
                    .unwrap_or(std::cmp::Ordering::Equal)
                    .then(a.1.cmp(b.1))
            });
            by_share.into_iter().map(|(_, n)| n.clone()).collect()
        }
        _ => Vec::new(),
    }
}

/// Directories from a list of paths or of `{path}` objects, without `./` and trailing `/`.
fn dirs(v: &Value) -> Vec<String> {
    let Some(items) = v.as_array() else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|x| match x {
            Value::String(s) => Some(s.as_str()),
            Value::Object(o) => o.get("path").and_then(Value::as_str),
            _ => None,
        })
        .map(|s| {
            s.trim()
                .trim_start_matches("./")
                .trim_end_matches('/')
                .to_owned()
        })
        .filter(|s| !s.is_empty() && s != "." && !s.contains(".."))
        .collect()
}

fn tech_profile(v: &Value) -> Option<TechProfile> {
    let signals: Vec<String> = v["signals"]
        .as_array()?
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    let mut evidence = BTreeMap::new();
    if let Some(map) = v["evidence"].as_object() {
        for (signal, paths) in map {
            let paths: Vec<String> = match paths {
                Value::Array(a) => a
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect(),
                Value::String(s) => vec![s.clone()],
                _ => Vec::new(),
            };
            evidence.insert(signal.clone(), paths);
        }
    }
    Some(TechProfile {
        signals,
        evidence,
        confidence: v["confidence"].as_str().unwrap_or("medium").to_owned(),
    })
}

/// A markdown document with front matter.
struct Doc {
    /// Front-matter keys; a scalar is a one-element list.
    front: BTreeMap<String, Vec<String>>,
    /// Everything after the front matter.
    body: String,
}

impl Doc {
    fn parse(text: &str) -> Doc {
        let text = text.replace("\r\n", "\n");
        let lines: Vec<&str> = text.lines().collect();
        let mut front = BTreeMap::new();
        let mut start = 0;
        if lines.first().map(|l| l.trim()) == Some("---")
            && let Some(end) = lines.iter().skip(1).position(|l| l.trim() == "---")
        {
            let end = end + 1;
            let mut key: Option<String> = None;
            for line in &lines[1..end] {
                let trimmed = line.trim();
                if let Some(item) = trimmed.strip_prefix("- ")
                    && line.starts_with([' ', '-'])
                    && let Some(k) = &key
                {
                    front
                        .entry(k.clone())
                        .or_insert_with(Vec::new)
                        .push(unquote(item));
                    continue;
                }
                if line.starts_with(' ') {
                    continue;
                }
                let Some((k, value)) = trimmed.split_once(':') else {
                    continue;
                };
                let k = k.trim().to_ascii_lowercase();
                let value = value.trim();
                let values =
                    if let Some(list) = value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) {
                        list.split(',')
                            .map(unquote)
                            .filter(|s| !s.is_empty())
                            .collect()
                    } else if value.is_empty() {
                        Vec::new()
                    } else {
                        vec![unquote(value)]
                    };
                front.insert(k.clone(), values);
                key = Some(k);
            }
            start = end + 1;
        }
        Doc {
            front,
            body: lines[start.min(lines.len())..].join("\n"),
        }
    }

    fn scalar(&self, key: &str) -> Option<&str> {
        self.front
            .get(key)
            .and_then(|v| v.first())
            .map(String::as_str)
    }

    fn list(&self, key: &str) -> Vec<String> {
        self.front.get(key).cloned().unwrap_or_default()
    }

    /// The title: front matter `title`, else the first `# ` heading, without the id.
    fn title(&self, id: &str) -> String {
        let raw = self
            .scalar("title")
            .map(str::to_owned)
            .or_else(|| {
                self.body
                    .lines()
                    .find_map(|l| l.strip_prefix("# ").map(|t| t.trim().to_owned()))
            })
            .unwrap_or_default();
        let stripped = raw
            .strip_prefix(id)
            .map(|rest| rest.trim_start_matches([':', '-', '—', '–', '.', ' ']))
            .unwrap_or(&raw)
            .trim();
        // The plan is JSON: its titles are text, not the Markdown source of the headings.
        if stripped.is_empty() {
            id.to_owned()
        } else {
            crate::specdoc::md::unescape(stripped)
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
                continue;
            }
            if inside && !line.trim().is_empty() && level == 0 {
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
        .find_map(|b| t.strip_prefix(b))?
        .trim();
    (!rest.is_empty()).then(|| rest.to_owned())
}

/// The id from a file name such as `REQ-001-login.md`: its first two `-` parts.
fn id_from_name(name: &str) -> String {
    let stem = name.trim_end_matches(".md");
    let mut parts = stem.splitn(3, '-');
    match (parts.next(), parts.next()) {
        (Some(a), Some(b)) => format!("{a}-{b}"),
        _ => stem.to_owned(),
    }
}

/// Ids like `REQ-001` in `text`.
fn ids_in(text: &str, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
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

/// Folder files under `dir` whose name starts with `prefix`, in path order.
fn docs<'a>(input: &'a TaskInput, dir: &str, prefix: &str) -> Vec<(String, &'a str)> {
    input
        .folder
        .iter()
        .filter_map(|(path, bytes)| {
            let name = path.strip_prefix(dir)?;
            if name.contains('/') || !name.starts_with(prefix) || !name.ends_with(".md") {
                return None;
            }
            let text = std::str::from_utf8(bytes).ok()?;
            Some((name.to_owned(), text))
        })
        .collect()
}

/// A requirement file.
struct Requirement {
    id: String,
    title: String,
    description: String,
    criteria: Vec<String>,
    wont: bool,
}

fn requirements(input: &TaskInput) -> Vec<Requirement> {
    let mut out: Vec<Requirement> = docs(input, REQUIREMENTS, "REQ-")
        .into_iter()
        .map(|(name, text)| {
            let doc = Doc::parse(text);
            let id = doc
                .scalar("id")
                .map(str::to_owned)
                .unwrap_or_else(|| id_from_name(&name));
            let mut criteria = Vec::new();
            let acceptance = doc.body.lines().any(|l| {
                l.trim_start_matches('#')
                    .trim()
                    .eq_ignore_ascii_case("acceptance criteria")
            });
            let mut inside = !acceptance;
            for line in doc.body.lines() {
                if line.starts_with('#') {
                    inside = !acceptance
                        || line
                            .trim_start_matches('#')
                            .trim()
                            .eq_ignore_ascii_case("acceptance criteria");
                    continue;
                }
                if inside && let Some(c) = checkbox(line) {
                    criteria.push(c);
                }
            }
            let wont = doc
                .scalar("priority")
                .is_some_and(|p| p.to_ascii_lowercase().starts_with("won"));
            Requirement {
                title: doc.title(&id),
                description: doc.section("Description"),
                criteria,
                wont,
                id,
            }
        })
        .collect();
    out.sort_by(|a, b| a.id.cmp(&b.id));
    out.dedup_by(|a, b| a.id == b.id);
    out
}

/// An epic file.
struct Epic {
    id: String,
    title: String,
    description: String,
    story_titles: Vec<String>,
    criteria: Vec<String>,
    requirements: Vec<String>,
    dependencies: Vec<String>,
}

fn epics(input: &TaskInput) -> Vec<Epic> {
    let mut out: Vec<Epic> = docs(input, EPICS, "EPIC-")
        .into_iter()
        .map(|(name, text)| {
            let doc = Doc::parse(text);
            let id = doc
                .scalar("id")
                .map(str::to_owned)
                .unwrap_or_else(|| id_from_name(&name));
            let mut story_titles = Vec::new();
            let mut criteria = Vec::new();
            for line in doc.body.lines() {
                if let Some(h) = line.strip_prefix("### ") {
                    let h = h.trim();
                    if h.to_ascii_uppercase().starts_with("STORY") {
                        let title = h.split_once(':').map_or(h, |(_, t)| t).trim();
                        story_titles.push(crate::specdoc::md::unescape(title));
                    }
                } else if let Some(c) = checkbox(line)
                    && !criteria.contains(&c)
                {
                    criteria.push(c);
                }
            }
            let mut requirements = doc.list("requirements");
            if requirements.is_empty() {
                requirements = ids_in(&doc.section("Requirements"), "REQ-");
            }
            let mut dependencies = doc.list("dependencies");
            if dependencies.is_empty() {
                dependencies = ids_in(&doc.section("Dependencies"), "EPIC-");
            }
            dependencies.retain(|d| d != &id);
            Epic {
                title: doc.title(&id),
                description: doc.section("Description"),
                story_titles,
                criteria,
                requirements,
                dependencies,
                id,
            }
        })
        .collect();
    out.sort_by(|a, b| a.id.cmp(&b.id));
    out.dedup_by(|a, b| a.id == b.id);
    out
}

/// One piece of work the plan covers.
#[derive(Debug, Clone)]
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
    /// Its name in the planner's sentences.
    pub fn name(self) -> &'static str {
        match self {
            Origin::Epics => "epics",
            Origin::Requirements => "requirements",
            Origin::TaskText => "task text",
        }
    }

    /// How a decision names the source.
    pub fn describe(self, n: usize) -> String {
        let (one, many) = match self {
            Origin::Epics => ("epic", "epics"),
            Origin::Requirements => ("requirement", "requirements"),
            Origin::TaskText => ("clause of the task text", "clauses of the task text"),
        };
        format!("{n} {}", if n == 1 { one } else { many })
    }
}

/// The work items: from the epics if any, else the requirements, else the task text.
pub fn items(input: &TaskInput, notes: &mut Vec<String>) -> (Vec<Item>, Origin) {
    let reqs = requirements(input);
    let epics = epics(input);
    if !epics.is_empty() {
        return (epic_items(epics, &reqs, notes), Origin::Epics);
    }
    let wanted: Vec<&Requirement> = reqs.iter().filter(|r| !r.wont).collect();
    if !wanted.is_empty() {
        let items = wanted
            .into_iter()
            .map(|r| Item {
                key: r.id.clone(),
                title: r.title.clone(),
                description: if r.description.is_empty() {
                    r.title.clone()
                } else {
                    r.description.clone()
                },
                criteria: r.criteria.clone(),
                requirements: vec![r.id.clone()],
                after: Vec::new(),
                keywords: text::keywords(
                    &r.title,
                    &format!("{} {}", r.description, r.criteria.join(" ")),
                    KEYWORDS,
                ),
            })
            .collect();
        return (items, Origin::Requirements);
    }
    (clause_items(&input.session.task), Origin::TaskText)
}

/// One item per epic, each after the epics it depends on (ties by id; a cycle is broken by
/// id order and noted).
fn epic_items(epics: Vec<Epic>, reqs: &[Requirement], notes: &mut Vec<String>) -> Vec<Item> {
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
    let mut done = vec![false; n];
    let mut order = Vec::with_capacity(n);
    while order.len() < n {
        let ready = (0..n).find(|&i| !done[i] && deps[i].iter().all(|&d| done[d]));
        let i = match ready {
            Some(i) => i,
            None => {
                let stuck: Vec<&str> = (0..n)
                    .filter(|&i| !done[i])
                    .map(|i| epics[i].id.as_str())
                    .collect();
                notes.push(format!(
                    "epic dependencies form a cycle among {}; those epics follow id order",
                    stuck.join(", ")
                ));
                (0..n).find(|&i| !done[i]).expect("an epic is left")
            }
        };
        done[i] = true;
        order.push(i);
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
            let secondary = format!(
                "{} {} {}",
                e.description,
                e.story_titles.join(" "),
                criteria.join(" ")
            );
            Item {
                key: e.id.clone(),
                title: e.title.clone(),
                description: if e.description.is_empty() {
                    e.title.clone()
                } else {
                    e.description.clone()
                },
                criteria,
                requirements: e.requirements.clone(),
                after,
                keywords: text::keywords(&e.title, &secondary, KEYWORDS),
            }
        })
        .collect()
}

/// One item per clause of the task text that has a keyword; the whole text when none has.
fn clause_items(task: &str) -> Vec<Item> {
    let clauses: Vec<String> = text::clauses(task)
        .into_iter()
        .filter(|c| !text::keywords(c, "", 1).is_empty())
        .collect();
    let clauses = if clauses.is_empty() {
        vec![task.trim().to_owned()]
    } else {
        clauses
    };
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
            criteria: Vec::new(),
            requirements: Vec::new(),
            after: Vec::new(),
            keywords: text::keywords(c, "", KEYWORDS),
        })
        .collect()
}
