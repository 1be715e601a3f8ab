//! Which files of the pipeline folder a task's prompt shows, in the reference's reading order
//! (the discovery context, the documents the description names, the earlier phases the role
//! builds on, the wisdom, the exploration cache), and which it only lists.

use std::collections::{BTreeMap, BTreeSet};

use crate::TaskInput;
use tlv4_core::model::Role;

/// At most this many documents are shown; the rest are listed.
pub(super) const MAX_DOCUMENTS: usize = 60;
/// At most this many other files are listed.
pub(super) const MAX_LISTED: usize = 200;

/// `## Other files in the pipeline folder`: the files only listed, with their sizes.
pub(super) fn listing(selection: &Selection, folder_dir: &str) -> String {
    let mut listing = String::new();
    if !selection.listed.is_empty() {
        listing.push_str(&format!(
            "## Other files in the pipeline folder\n\nNot shown here; read them under \
             `{folder_dir}` if you need them.\n\n"
        ));
        for (path, size) in selection.listed.iter().take(MAX_LISTED) {
            listing.push_str(&format!("- {path} ({size} bytes)\n"));
        }
        if selection.listed.len() > MAX_LISTED {
            listing.push_str(&format!(
                "- … and {} more\n",
                selection.listed.len() - MAX_LISTED
            ));
        }
        listing.push('\n');
    }
    listing
}

/// `## Upstream tasks`: what each task this one builds on produced.
pub(super) fn upstream(selection: &Selection) -> String {
    let mut upstream = String::from("## Upstream tasks\n\n");
    if selection.upstream.is_empty() {
        upstream.push_str("None: this task starts from the request alone.\n\n");
    } else {
        for u in &selection.upstream {
            upstream.push_str(&format!("- {u}\n"));
        }
        upstream.push('\n');
    }
    upstream
}

/// Which part of the context a file goes in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Section {
    Documents,
    Wisdom,
    Explorations,
}

/// The files of the context, in order, and the rest.
pub(super) struct Selection {
    /// `ID: what it produced` for each upstream task.
    pub(super) upstream: Vec<String>,
    /// Files shown in full (or cut), in prompt order.
    pub(super) shown: Vec<(Section, String)>,
    /// Files only listed, with their sizes.
    pub(super) listed: Vec<(String, usize)>,
}

/// Directories of the pipeline folder each role builds on, in reading order.
pub(super) fn role_dirs(role: &Role) -> &'static [&'static str] {
    match role {
        Role::Analyst => &[],
        Role::Writer | Role::Planner => &["spec/"],
        Role::Executor => &["plan/"],
        Role::Tester => &["plan/", "artifacts/"],
        Role::Reviewer => &["spec/", "plan/", "artifacts/"],
        Role::Supervisor => &["spec/", "plan/", "artifacts/", "discussions/"],
        _ => &["plan/", "artifacts/"],
    }
}

/// Reading order of the spec documents: by phase, index files first.
pub(super) fn spec_rank(path: &str) -> (usize, bool, &str) {
    const PHASES: [&str; 8] = [
        "spec/discovery-context.json",
        "spec/spec-config.json",
        "spec/product-brief.md",
        "spec/requirements/",
        "spec/architecture/",
        "spec/epics/",
        "spec/readiness-report.md",
        "spec/spec-summary.md",
    ];
    let phase = PHASES
        .iter()
        .position(|p| path.starts_with(p))
        .unwrap_or(PHASES.len());
    let not_index = !path.ends_with("/_index.md") && path != "plan/plan.json";
    (phase, not_index, path)
}

pub(super) fn select(input: &TaskInput) -> Selection {
    let folder = &input.folder;
    let task = &input.task;
    let hidden = |p: &str| p.starts_with("tasks/") || p.starts_with("runs/");
    let private = ["session.toml", "control.toml", "roles.lock", "config.lock"];
    let mut shown: Vec<(Section, String)> = Vec::new();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut add = |sec: Section, p: &str, shown: &mut Vec<(Section, String)>| {
        if folder.contains_key(p) && seen.insert(p.to_owned()) && shown.len() < MAX_DOCUMENTS {
            shown.push((sec, p.to_owned()));
        }
    };
    let under = |dir: &str| {
        let mut v: Vec<&String> = folder
            .keys()
            .filter(|k| k.starts_with(dir) && !k.starts_with("wisdom/"))
            .collect();
        v.sort_by(|a, b| spec_rank(a).cmp(&spec_rank(b)));
        v
    };

    // Upstream: what the description says the upstream tasks produced, else their ids.
    let upstream: Vec<String> = match task
        .description
        .lines()
        .find_map(|l| l.trim().strip_prefix("- Upstream artifacts:"))
    {
        Some(list) => list
            .split("; ")
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect(),
        None => task.blocked_by.iter().map(|t| t.to_string()).collect(),
    };

    // 1. The discovery context every later role starts from.
    add(
        Section::Documents,
        "spec/discovery-context.json",
        &mut shown,
    );
    // 2. Files and folders the description names (the upstream artifacts, the plan tasks).
    let mut named_plan_task = false;
    for token in task
        .description
        .split(|c: char| c.is_whitespace() || ",;()`'\"".contains(c))
        .map(|t| t.trim_end_matches(['.', ':']))
        .filter(|t| !t.is_empty())
    {
        if folder.contains_key(token) {
            add(Section::Documents, token, &mut shown);
        } else if token.ends_with('/') && token.contains('/') {
            for p in under(token) {
                add(Section::Documents, p, &mut shown);
            }
        } else if token.starts_with("TASK-") {
            let p = format!("plan/.task/{token}.json");
            if folder.contains_key(&p) {
                add(Section::Documents, "plan/plan.json", &mut shown);
                add(Section::Documents, &p, &mut shown);
                named_plan_task = true;
            }
        }
    }
    // 3. The documents of earlier phases the role builds on.
    for dir in role_dirs(&task.role) {
        for p in under(dir) {
            if named_plan_task && p.starts_with("plan/.task/") {
                continue;
            }
            add(Section::Documents, p, &mut shown);
        }
    }
    // 4. Wisdom, then the exploration cache.
    for p in under_all(folder, "wisdom/") {
        if p.ends_with(".md") && has_content(&folder[p]) {
            add(Section::Wisdom, p, &mut shown);
        }
    }
    let index = "explorations/cache-index.json";
    if folder
        .get(index)
        .is_some_and(|b| !String::from_utf8_lossy(b).contains("\"entries\": []"))
    {
        add(Section::Explorations, index, &mut shown);
    }
    if matches!(task.role, Role::Analyst | Role::Planner) {
        for p in under_all(folder, "explorations/") {
            add(Section::Explorations, p, &mut shown);
        }
    }
    // Sections in order: documents, wisdom, explorations (adds above already follow it,
    // but keep it true whatever the order of the loops).
    shown.sort_by_key(|(s, _)| *s as u8);

    let shown_set: BTreeSet<&str> = shown.iter().map(|(_, p)| p.as_str()).collect();
    let listed = folder
        .iter()
        .filter(|(k, _)| !shown_set.contains(k.as_str()))
        .filter(|(k, _)| !hidden(k) && !private.contains(&k.as_str()))
        .filter(|(k, _)| !k.starts_with("wisdom/") || has_content(&folder[*k]))
        .map(|(k, v)| (k.clone(), v.len()))
        .collect();
    Selection {
        upstream,
        shown,
        listed,
    }
}

pub(super) fn under_all<'a>(folder: &'a BTreeMap<String, Vec<u8>>, dir: &str) -> Vec<&'a String> {
    folder.keys().filter(|k| k.starts_with(dir)).collect()
}

/// Whether a markdown file holds more than headings.
pub(super) fn has_content(bytes: &[u8]) -> bool {
    String::from_utf8_lossy(bytes)
        .lines()
        .any(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
}
