//! Giving the plan its shape: one draft task per work item with the files it touches, then
//! merged or split into 2 to 7 tasks, its complexity from the modules touched, and the
//! dependencies that complexity calls for.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};

use super::code::{self, Code, Layout, Match};
use super::spec::Item;
use super::text::{Level, WORDS};
use crate::builtin::words::unique;

/// The fewest and most tasks a plan has.
pub(super) const MIN_TASKS: usize = 2;
pub(super) const MAX_TASKS: usize = 7;
/// A file must score this much to be planned.
const MIN_SCORE: u32 = 8;
/// At most this many existing files are planned per work item.
const FILES_PER_ITEM: usize = 3;
/// At most this many reference files per task.
const REFERENCES: usize = 6;

/// How a planned file changes; in the plan, `modify` or `create`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum Change {
    /// The file exists and is changed.
    Modify,
    /// The file is new.
    Create,
}

impl Change {
    /// The name in the plan.
    pub(super) fn as_str(self) -> &'static str {
        ["modify", "create"][self as usize]
    }
}

/// A file a task touches, as the plan and its task files list it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub(super) struct PlannedFile {
    /// Path relative to the repository root.
    pub path: String,
    /// How it changes.
    pub change: Change,
}

/// A task before it is numbered.
#[derive(Debug, Clone)]
pub(super) struct Draft {
    /// Title.
    pub title: String,
    /// What to do.
    pub description: String,
    /// The work items it covers (`EPIC-001`, `clause 2`).
    pub sources: Vec<String>,
    /// Files it touches.
    pub files: Vec<PlannedFile>,
    /// For each modified file, the keywords it matched.
    pub matched: BTreeMap<String, Vec<String>>,
    /// Acceptance criteria from the spec.
    pub criteria: Vec<String>,
    /// Requirement ids.
    pub requirements: Vec<String>,
    /// Indices of earlier drafts it depends on (from the epics).
    pub after: BTreeSet<usize>,
    /// Files to read, not to change.
    pub reference: Vec<String>,
    /// The keywords of its work items.
    pub keywords: Vec<String>,
}

/// The draft for one work item: the best-matching files (at most three, each scoring at
/// least [`MIN_SCORE`] and half the best), or a new file when none does.
pub(super) fn draft(
    item: &Item,
    code: &Code,
    cached: &BTreeSet<String>,
    creates: &mut BTreeSet<String>,
) -> (Draft, Vec<Match>) {
    let matches = code.matches(&item.keywords, cached);
    let cut = matches
        .first()
        .map_or(MIN_SCORE, |m| MIN_SCORE.max(m.score.div_ceil(2)));
    let chosen: Vec<&Match> = matches
        .iter()
        .filter(|m| m.score >= cut)
        .take(FILES_PER_ITEM)
        .collect();
    let mut files = Vec::new();
    let mut matched = BTreeMap::new();
    for m in &chosen {
        files.push(PlannedFile {
            path: m.path.clone(),
            change: Change::Modify,
        });
        matched.insert(m.path.clone(), m.words.clone());
    }
    if files.is_empty() {
        let words = if item.keywords.is_empty() {
            crate::builtin::words::camel_words(&item.title)
        } else {
            item.keywords.clone()
        };
        let path = code.layout.new_file(&words);
        // A file an earlier task creates exists by the time this one runs.
        let change = if code.exists(&path) || !creates.insert(path.clone()) {
            Change::Modify
        } else {
            Change::Create
        };
        files.push(PlannedFile { path, change });
    }
    let near = matches.iter().skip(chosen.len());
    let near = near.filter(|m| m.score >= MIN_SCORE / 2).take(3);
    let entries = files
        .iter()
        .filter_map(|f| code.entry_file(code::parent(&f.path)));
    let reference = references(near.map(|m| m.path.clone()).chain(entries), &files);
    let draft = Draft {
        title: item.title.clone(),
        description: item.description.clone(),
        sources: vec![item.key.clone()],
        files,
        matched,
        criteria: item.criteria.clone(),
        requirements: item.requirements.clone(),
        after: item.after.clone(),
        reference,
        keywords: item.keywords.clone(),
    };
    (draft, matches)
}

/// At most [`REFERENCES`] of `candidates` as reference files, once each and none of them a
/// planned one.
fn references(candidates: impl IntoIterator<Item = String>, files: &[PlannedFile]) -> Vec<String> {
    let others = candidates
        .into_iter()
        .filter(|r| !files.iter().any(|f| &f.path == r));
    unique(others).into_iter().take(REFERENCES).collect()
}

/// `files` without a second entry for one path, in order.
pub(super) fn unique_files<'a>(
    files: impl IntoIterator<Item = &'a PlannedFile>,
) -> Vec<PlannedFile> {
    let mut seen = BTreeSet::new();
    files
        .into_iter()
        .filter(|f| seen.insert(&f.path))
        .cloned()
        .collect()
}

/// Appends `more` to `list`, keeping each item once.
fn append(list: &mut Vec<String>, more: Vec<String>) {
    *list = unique(std::mem::take(list).into_iter().chain(more));
}

/// Brings the drafts within [`MIN_TASKS`]..=[`MAX_TASKS`]: merges the smallest draft into the
/// neighbour sharing most modules with it while there are too many; splits a lone draft by
/// module or by file, or adds a test task when it has a single file.
pub(super) fn bound(
    mut drafts: Vec<Draft>,
    code: &Code,
    decisions: &mut Vec<String>,
) -> Vec<Draft> {
    let layout = &code.layout;
    while drafts.len() > MAX_TASKS {
        let size = |i: usize| (drafts[i].files.len(), drafts[i].criteria.len(), Reverse(i));
        let smallest = (0..drafts.len()).min_by_key(|&i| size(i));
        let smallest = smallest.expect("there are drafts");
        let modules = |i: usize| -> BTreeSet<String> {
            drafts[i]
                .files
                .iter()
                .map(|f| layout.module_of(&f.path))
                .collect()
        };
        let own = modules(smallest);
        let shared = |i: usize| modules(i).intersection(&own).count();
        let first = if smallest == 0 {
            0
        } else if smallest + 1 < drafts.len() && shared(smallest + 1) > shared(smallest - 1) {
            smallest
        } else {
            smallest - 1
        };
        decisions.push(format!(
            "merged {} into {} to stay within {MAX_TASKS} tasks (smallest work item first)",
            drafts[first + 1].sources.join(", "),
            drafts[first].sources.join(", "),
        ));
        merge(&mut drafts, first);
    }
    if drafts.len() == 1 {
        let only = drafts.remove(0);
        drafts = split(only, code, decisions);
    }
    drafts
}

/// Merges draft `at + 1` into draft `at`.
fn merge(drafts: &mut Vec<Draft>, at: usize) {
    let next = drafts.remove(at + 1);
    let d = &mut drafts[at];
    d.title = format!("{}; {}", d.title, next.title);
    d.description = format!("{}\n\n{}", d.description, next.description);
    d.sources.extend(next.sources);
    d.files = unique_files(d.files.iter().chain(&next.files));
    for (path, words) in next.matched {
        append(d.matched.entry(path).or_default(), words);
    }
    append(&mut d.criteria, next.criteria);
    append(&mut d.requirements, next.requirements);
    let reference = std::mem::take(&mut d.reference)
        .into_iter()
        .chain(next.reference);
    d.reference = references(reference, &d.files);
    append(&mut d.keywords, next.keywords);
    d.after.extend(next.after);
    // Renumber: the removed draft is now `at`, later ones move down by one.
    for (i, d) in drafts.iter_mut().enumerate() {
        d.after = d
            .after
            .iter()
            .map(|&j| if j > at { j - 1 } else { j })
            .filter(|&j| j != i)
            .collect();
    }
}

/// Splits a lone draft: one part per module when its files span several, else halves of its
/// files; a single file gets a second task that tests it.
fn split(only: Draft, code: &Code, decisions: &mut Vec<String>) -> Vec<Draft> {
    let layout = &code.layout;
    if only.files.len() == 1 {
        let source = only.files[0].path.clone();
        let test = layout.new_test(&only.keywords, &source);
        let change = if code.exists(&test) {
            Change::Modify
        } else {
            Change::Create
        };
        decisions.push(format!(
            "added a test task for `{test}`: one work item with one file makes a single task, and a plan has at least {MIN_TASKS}"
        ));
        let tester = Draft {
            title: format!("Test: {}", only.title),
            description: format!(
                "Cover the change of the first task with tests: {}",
                only.title
            ),
            files: vec![PlannedFile {
                path: test.clone(),
                change,
            }],
            matched: BTreeMap::new(),
            criteria: vec![format!(
                "A test in `{test}` fails without the change to `{source}` and passes with it"
            )],
            after: BTreeSet::from([0]),
            reference: vec![source],
            ..only.clone()
        };
        return vec![only, tester];
    }
    let mut groups: Vec<(String, Vec<PlannedFile>)> = Vec::new();
    for f in &only.files {
        let module = layout.module_of(&f.path);
        match groups.iter_mut().find(|g| g.0 == module) {
            Some(g) => g.1.push(f.clone()),
            None => groups.push((module, vec![f.clone()])),
        }
    }
    let parts: Vec<Vec<PlannedFile>> = if groups.len() >= MIN_TASKS {
        groups.into_iter().map(|g| g.1).collect()
    } else {
        let half = only.files.len().div_ceil(2);
        vec![only.files[..half].to_vec(), only.files[half..].to_vec()]
    };
    decisions.push(format!(
        "split {} into {} tasks by file: one work item makes a single task, and a plan has at least {MIN_TASKS}",
        only.sources.join(", "),
        parts.len()
    ));
    let n = parts.len();
    parts
        .into_iter()
        .enumerate()
        .map(|(i, files)| {
            let names: Vec<&str> = files.iter().map(|f| code::file_name(&f.path)).collect();
            let listed: Vec<String> = files.iter().map(|f| format!("`{}`", f.path)).collect();
            // The last part completes the work item, so it carries the spec's criteria.
            let criteria = if i + 1 == n {
                only.criteria.clone()
            } else {
                vec![format!(
                    "{} carry their part of \"{}\" and the project still builds",
                    listed.join(", "),
                    only.title
                )]
            };
            let matched = only
                .matched
                .iter()
                .filter(|(p, _)| files.iter().any(|f| &f.path == *p))
                .map(|(p, w)| (p.clone(), w.clone()))
                .collect();
            Draft {
                title: format!("{} ({})", only.title, names.join(", ")),
                files,
                matched,
                criteria,
                after: BTreeSet::new(),
                ..only.clone()
            }
        })
        .collect()
}

/// How much the plan touches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Complexity {
    /// 1–2 modules: one serial chain.
    Low,
    /// 3–4 modules: parallel tasks.
    Medium,
    /// 5 or more modules: a DAG.
    High,
}

impl Complexity {
    /// The complexity of a plan touching `modules` modules.
    pub(super) fn of(modules: usize) -> Complexity {
        match modules {
            0..=2 => Complexity::Low,
            3..=4 => Complexity::Medium,
            _ => Complexity::High,
        }
    }

    /// Its name in `plan.json`, the range of module counts it covers, its
    /// `recommended_execution` and how its tasks run (`planner-words.toml`).
    pub(super) fn says(self) -> &'static Level {
        &WORDS.complexity[self as usize]
    }
}

/// The modules the drafts touch, and the test files left out of the count. Test files count
/// only when a plan touches nothing else.
pub(super) fn modules(drafts: &[Draft], layout: &Layout) -> (Vec<String>, Vec<String>) {
    let paths = unique(
        drafts
            .iter()
            .flat_map(|d| d.files.iter().map(|f| f.path.clone())),
    );
    let (tests, code): (Vec<String>, Vec<String>) =
        paths.into_iter().partition(|p| layout.is_test(p));
    let (counted, left_out) = if code.is_empty() {
        (tests, Vec::new())
    } else {
        (code, tests)
    };
    let modules: BTreeSet<String> = counted.iter().map(|p| layout.module_of(p)).collect();
    (modules.into_iter().collect(), left_out)
}

/// Each draft's dependencies (indices of earlier drafts): Low plans are one chain; Medium
/// plans are parallel except that a task touching a file an earlier task touches waits for
/// it; High plans add the work items' own dependencies to that.
pub(super) fn dependencies(drafts: &[Draft], complexity: Complexity) -> Vec<BTreeSet<usize>> {
    let mut deps = vec![BTreeSet::new(); drafts.len()];
    if complexity == Complexity::Low {
        for (i, d) in deps.iter_mut().enumerate().skip(1) {
            d.insert(i - 1);
        }
        return deps;
    }
    let mut last: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, d) in drafts.iter().enumerate() {
        for f in &d.files {
            if let Some(&j) = last.get(f.path.as_str()) {
                deps[i].insert(j);
            }
            last.insert(&f.path, i);
        }
        if complexity == Complexity::High {
            deps[i].extend(d.after.iter().filter(|&&j| j < i));
        }
    }
    deps
}

/// For each draft, the earlier drafts that touch one of its files, with the file.
pub(super) fn overlaps(drafts: &[Draft]) -> Vec<Vec<(usize, String)>> {
    let earlier = |i: usize, path: &String| {
        let j = (0..i)
            .rev()
            .find(|&j| drafts[j].files.iter().any(|x| &x.path == path))?;
        Some((j, path.clone()))
    };
    drafts
        .iter()
        .enumerate()
        .map(|(i, d)| d.files.iter().filter_map(|f| earlier(i, &f.path)).collect())
        .collect()
}
