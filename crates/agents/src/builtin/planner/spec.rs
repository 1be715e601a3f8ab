//! Reading what the earlier roles wrote: the discovery context, the requirements and the
//! epics. Everything is read leniently: any file may be missing or partly malformed, and what
//! cannot be read becomes a note, never a failure. The result is the list of work items the
//! plan is cut from: one per epic in dependency order, else one per requirement, else one per
//! clause of the task text.

use std::collections::BTreeSet;

use super::text;
use crate::builtin::words::unique;
use crate::{TaskInput, TechProfile};
use tlv4_specdoc::discovery::Discovery as Report;
use tlv4_specdoc::md;
use tlv4_specdoc::spec::{DISCOVERY, Epic, Moscow, Req, Spec};

/// How many keywords a work item keeps.
const KEYWORDS: usize = 12;

/// What the discovery context says that the planner uses.
#[derive(Debug, Default)]
pub(super) struct Discovery {
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
pub(super) fn discovery(input: &TaskInput, notes: &mut Vec<String>) -> Discovery {
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

/// The work item of a requirement or an epic, without its criteria, requirements and order:
/// `title` is Markdown source (a heading or a cell), the plan is JSON, so the item's title is
/// the text it reads as. Its keywords come from the title, then from `description` and `more`
/// (stories, criteria).
fn item(id: &str, title: &str, description: &str, more: &[String]) -> Item {
    let title = md::unescape(title);
    let secondary = format!("{description} {}", more.join(" "));
    Item {
        key: id.to_owned(),
        description: if description.is_empty() {
            title.clone()
        } else {
            description.to_owned()
        },
        keywords: text::keywords(&title, &secondary, KEYWORDS),
        title,
        ..Item::default()
    }
}

/// One piece of work the plan covers.
#[derive(Debug, Clone, Default)]
pub(super) struct Item {
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
    pub after: BTreeSet<usize>,
    /// The words files are matched against.
    pub keywords: Vec<String>,
}

/// Where the work items came from; the planner's sentences call it `epics`, `requirements` or
/// `task text`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum Origin {
    /// `spec/epics/`.
    Epics,
    /// `spec/requirements/`.
    Requirements,
    /// The task text.
    #[serde(rename = "task text")]
    TaskText,
}

/// The work items: from the epics if any, else the requirements (but the Won't ones), else
/// the task text.
pub(super) fn items(input: &TaskInput, notes: &mut Vec<String>) -> (Vec<Item>, Origin) {
    let read = Spec::read(&input.folder);
    let reqs = read.requirements.map_or(Vec::new(), |r| r.functional);
    let epics = read.epics.map_or(Vec::new(), |e| e.epics);
    if !epics.is_empty() {
        return (epic_items(&epics, &reqs, notes), Origin::Epics);
    }
    let wanted: Vec<Item> = reqs
        .iter()
        .filter(|r| r.priority != Some(Moscow::Wont))
        .map(|r| Item {
            criteria: r.criteria.clone(),
            requirements: vec![r.id.clone()],
            ..item(&r.id, &r.title, &r.description, &r.criteria)
        })
        .collect();
    if !wanted.is_empty() {
        return (wanted, Origin::Requirements);
    }
    (clause_items(&input.session.task), Origin::TaskText)
}

/// One item per epic, each after the epics it depends on (ties by id; a cycle is broken by
/// id order and noted). An epic's criteria are its stories' (each once), else those of its
/// requirements.
fn epic_items(epics: &[Epic], reqs: &[Req], notes: &mut Vec<String>) -> Vec<Item> {
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
            let after = deps[i]
                .iter()
                .filter_map(|d| order.iter().position(|o| o == d))
                .filter(|&p| p < pos)
                .collect();
            let mut criteria = unique(e.stories.iter().flat_map(|s| s.criteria.clone()));
            if criteria.is_empty() {
                let theirs = reqs.iter().filter(|r| e.requirements.contains(&r.id));
                criteria = theirs.flat_map(|r| r.criteria.clone()).collect();
            }
            let stories = e.stories.iter().map(|s| md::unescape(&s.title));
            let more: Vec<String> = stories.chain(criteria.iter().cloned()).collect();
            Item {
                criteria,
                requirements: e.requirements.clone(),
                after,
                ..item(&e.id, &e.title, &e.description, &more)
            }
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
