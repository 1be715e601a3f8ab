//! What a review looks at: a revision range (`A..B`, `A...B`, `REV` for `REV^..REV`) or the
//! change a task of a session made, and the session context that goes with a task (its
//! acceptance criteria, and the earlier version of a revised task).

use gix::ObjectId;

use super::requirements::Requirements;
use tlv4_core::error::{Error, Result};
use tlv4_core::model::{SessionId, State, TaskId, TaskStatus};
use tlv4_store::store::{Store, session_dir};

/// Two trees to compare, and the commits they came from.
#[derive(Debug, Clone)]
pub struct Target {
    /// The old side (a commit, or a tree when there is no commit).
    pub old: ObjectId,
    /// The new side (a commit, or a tree).
    pub new: ObjectId,
    /// The old side's tree.
    pub old_tree: ObjectId,
    /// The new side's tree.
    pub new_tree: ObjectId,
    /// The commit the review note goes on (the new side, when it is a commit).
    pub note_commit: Option<ObjectId>,
    /// How the user named it (`HEAD~1..HEAD`, `IMPL-001`, …).
    pub label: String,
}

impl Target {
    /// The change from commit `old` (or the empty tree) to commit `new`.
    pub fn commits(
        repo: &gix::Repository,
        old: Option<ObjectId>,
        new: ObjectId,
        label: String,
    ) -> Result<Target> {
        let old_tree = match old {
            Some(c) => tree_of(repo, c)?,
            None => ObjectId::empty_tree(repo.object_hash()),
        };
        Ok(Target {
            old: old.unwrap_or(old_tree),
            new,
            old_tree,
            new_tree: tree_of(repo, new)?,
            note_commit: Some(new),
            label,
        })
    }

    /// Resolves a revision range: `A..B`, `A...B` (from their merge base) or a single `REV`
    /// (`REV^..REV`; a root commit is compared with the empty tree).
    pub fn range(repo: &gix::Repository, spec: &str) -> Result<Target> {
        if let Some((a, b)) = spec.split_once("...") {
            let a = commit_of(repo, or_head(a))?;
            let b = commit_of(repo, or_head(b))?;
            let base = repo
                .merge_base(a, b)
                .map_err(|e| Error::git(&format!("cannot find the merge base of `{spec}`"), e))?
                .ok_or_else(|| {
                    Error::Invalid(format!("`{spec}`: the two sides have no common ancestor"))
                })?
                .detach();
            return Target::commits(repo, Some(base), b, spec.to_owned());
        }
        if let Some((a, b)) = spec.split_once("..") {
            let old = object_of(repo, or_head(a))?;
            let new = object_of(repo, or_head(b))?;
            return Ok(Target {
                old: old.0,
                new: new.0,
                old_tree: old.1,
                new_tree: new.1,
                note_commit: new.2.then_some(new.0),
                label: spec.to_owned(),
            });
        }
        let new = commit_of(repo, spec)?;
        let parent = repo
            .find_commit(new)
            .map_err(|e| Error::git(&format!("cannot read `{spec}`"), e))?
            .parent_ids()
            .next()
            .map(|p| p.detach());
        Target::commits(repo, parent, new, spec.to_owned())
    }
}

fn or_head(side: &str) -> &str {
    if side.is_empty() { "HEAD" } else { side }
}

fn tree_of(repo: &gix::Repository, commit: ObjectId) -> Result<ObjectId> {
    let c = repo
        .find_commit(commit)
        .map_err(|e| Error::git(&format!("cannot read commit {commit}"), e))?;
    c.tree_id()
        .map(|t| t.detach())
        .map_err(|e| Error::git(&format!("cannot read commit {commit}"), e))
}

fn bad_revision(spec: &str) -> Error {
    Error::Invalid(format!(
        "`{spec}` is neither a revision range nor a task of the session"
    ))
}

/// The commit `spec` names.
fn commit_of(repo: &gix::Repository, spec: &str) -> Result<ObjectId> {
    let id = repo
        .rev_parse_single(spec)
        .map_err(|_| bad_revision(spec))?;
    let commit = id
        .object()
        .and_then(|o| o.peel_to_commit())
        .map_err(|_| Error::Invalid(format!("`{spec}` does not name a commit")))?;
    Ok(commit.id)
}

/// The object `spec` names: (id shown, its tree, whether it is a commit).
fn object_of(repo: &gix::Repository, spec: &str) -> Result<(ObjectId, ObjectId, bool)> {
    let id = repo
        .rev_parse_single(spec)
        .map_err(|_| bad_revision(spec))?;
    let object = id.object().map_err(|_| bad_revision(spec))?;
    if let Ok(commit) = object.clone().peel_to_commit() {
        return Ok((commit.id, tree_of(repo, commit.id)?, true));
    }
    let tree = object
        .peel_to_tree()
        .map_err(|_| Error::Invalid(format!("`{spec}` names neither a commit nor a tree")))?;
    Ok((tree.id, tree.id, false))
}

/// The change task `task` of session `sid` made: from the parent of its newest
/// `task_completed` event commit to that commit (searched from `tip`, the session tip by
/// default). `None` when the task never completed.
pub fn task_change(
    store: &Store,
    sid: &SessionId,
    task: &str,
    tip: Option<ObjectId>,
) -> Result<Option<Target>> {
    let tip = match tip {
        Some(t) => t,
        None => store.tip(sid)?,
    };
    let events = store.log_from(sid, tip, None)?;
    let Some(event) = events
        .iter()
        .find(|e| e.event == "task_completed" && e.task.as_deref() == Some(task))
    else {
        return Ok(None);
    };
    let commit: ObjectId = event
        .commit
        .parse()
        .map_err(|_| Error::Git(format!("bad event commit {}", event.commit)))?;
    let repo = store.repo();
    let parent = repo
        .find_commit(commit)
        .map_err(|e| Error::git("cannot read the event commit", e))?
        .parent_ids()
        .next()
        .map(|p| p.detach());
    Target::commits(repo, parent, commit, task.to_owned()).map(Some)
}

/// The `Feedback:` lines of a task description, joined.
pub fn feedback(description: &str) -> String {
    description
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("Feedback:"))
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" / ")
}

/// `IMPL-001-R2` → (`IMPL-001`, 2).
pub(crate) fn revision_of(id: &str) -> Option<(&str, u32)> {
    let at = id.rfind("-R")?;
    let n: u32 = id[at + 2..].parse().ok()?;
    (n > 0).then_some((&id[..at], n))
}

/// The task a revision revises: `IMPL-001-R1` → `IMPL-001`, `IMPL-001-R2` → `IMPL-001-R1`.
pub fn previous_of(id: &str) -> Option<String> {
    let (base, n) = revision_of(id)?;
    Some(if n == 1 {
        base.to_owned()
    } else {
        format!("{base}-R{}", n - 1)
    })
}

/// The completed IMPL revisions of a session, in id order.
pub fn impl_revisions(state: &State) -> Vec<TaskId> {
    state
        .tasks
        .values()
        .filter(|t| t.id.prefix() == "IMPL" && t.status == TaskStatus::Completed)
        .filter(|t| revision_of(t.id.as_str()).is_some())
        .map(|t| t.id.clone())
        .collect()
}

/// The plan tasks (`TASK-NNN`) an IMPL task's description names.
pub(crate) fn plan_tasks(description: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let bytes = description.as_bytes();
    let mut from = 0;
    while let Some(at) = description[from..].find("TASK-") {
        let start = from + at;
        let mut end = start + 5;
        while end < bytes.len() && bytes[end].is_ascii_digit() {
            end += 1;
        }
        if end > start + 5 {
            let id = description[start..end].to_owned();
            if !out.contains(&id) {
                out.push(id);
            }
        }
        from = end;
    }
    out
}

/// The acceptance criteria for a review of task `task` (an IMPL task: its plan tasks only;
/// anything else: the whole plan and the requirements), read from the pipeline folder at
/// `tip`.
pub fn task_requirements(
    store: &Store,
    sid: &SessionId,
    tip: ObjectId,
    state: &State,
    task: &str,
) -> Result<Requirements> {
    let dir = session_dir(sid);
    let tree = store.commit_tree(tip)?;
    let folder = store.read_folder(tree, &dir, &["tasks", "runs"])?;
    let only: Option<Vec<String>> = state
        .tasks
        .iter()
        .find(|(id, _)| id.as_str() == task)
        .filter(|(id, _)| id.prefix() == "IMPL")
        .map(|(_, t)| plan_tasks(&t.description))
        .filter(|t| !t.is_empty());
    Ok(Requirements::from_folder(&folder, &dir, only.as_deref()))
}

/// Whether `s` looks like a task id (`IMPL-001`, `REVIEW-001-R1`) rather than a revision.
pub fn looks_like_task(s: &str) -> bool {
    s.parse::<TaskId>().is_ok()
        && s.contains('-')
        && s.split('-')
            .next()
            .is_some_and(|p| p.chars().all(|c| c.is_ascii_uppercase()))
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}
