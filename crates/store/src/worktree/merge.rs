//! Merging a task branch back into its session, in memory, and finding IMPL tasks whose
//! planned files overlap (which the coordinator runs one after the other).
//!
//! The merge is gix's three-way commit merge (merge base found, recursive on several bases),
//! whose tree is the one `git merge-tree --write-tree` writes. It touches no index and no
//! working tree; the coordinator records a clean result as a merge event.

use gix::ObjectId;
use gix::bstr::BStr;
use gix::merge::tree::{Resolution, ResolutionFailure, TreatAsUnresolved};

use crate::store::Store;
use tlv4_core::error::{Error, Result};
use tlv4_core::model::TaskId;

/// The result of merging a task branch into the session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeOutcome {
    /// Merged without conflicts: the tree to give [`crate::store::Txn::merge`].
    Clean {
        /// The merged tree (written to the object database).
        tree: ObjectId,
    },
    /// Some changes conflict; nothing is to be recorded.
    Conflict {
        /// The conflicting paths, sorted.
        paths: Vec<String>,
        /// One line per conflict: the path and what clashed.
        detail: String,
    },
}

/// Merges `task_tip` into `session_tip` the way `git merge` would, without touching any
/// working tree: the merged tree, or the paths that conflict.
pub fn merge_task(
    store: &Store,
    session_tip: ObjectId,
    task_tip: ObjectId,
) -> Result<MergeOutcome> {
    let repo = store.repo();
    let what = format!("cannot merge {task_tip} into {session_tip}");
    let options = repo
        .tree_merge_options()
        .map_err(|e| Error::git(&what, e))?;
    let labels = gix::merge::blob::builtin_driver::text::Labels {
        ancestor: None,
        current: Some(BStr::new("session")),
        other: Some(BStr::new("task")),
    };
    let mut out = repo
        .merge_commits(session_tip, task_tip, labels, options.into())
        .map_err(|e| Error::git(&what, e))?;
    let how = TreatAsUnresolved::git();
    if out.tree_merge.has_unresolved_conflicts(how) {
        let mut paths = Vec::new();
        let mut lines = Vec::new();
        for conflict in out
            .tree_merge
            .conflicts
            .iter()
            .filter(|c| c.is_unresolved(how))
        {
            let (ours, theirs) = conflict.changes_in_resolution();
            let mut here = vec![ours.location().to_string()];
            if theirs.location() != ours.location() {
                here.push(theirs.location().to_string());
            }
            lines.push(format!(
                "{}: {}",
                here.join(" / "),
                describe(&conflict.resolution)
            ));
            paths.extend(here);
        }
        paths.sort();
        paths.dedup();
        return Ok(MergeOutcome::Conflict {
            paths,
            detail: lines.join("\n"),
        });
    }
    let tree = out
        .tree_merge
        .tree
        .write()
        .map_err(|e| Error::git(&what, e))?
        .detach();
    Ok(MergeOutcome::Clean { tree })
}

/// Applies to `tree` the change that turns tree `from` into tree `to` (a three-way merge of
/// trees with `from` as the base), without touching any working tree: the new tree, or the
/// paths where the change clashes with `tree`. With a task's snapshot as `from` and its
/// parent as `to`, it takes the task's change back; the other way round, it makes it again.
pub fn merge_change(
    store: &Store,
    tree: ObjectId,
    from: ObjectId,
    to: ObjectId,
    label: &str,
) -> Result<MergeOutcome> {
    let repo = store.repo();
    let what = format!("cannot apply the change {from}..{to} to {tree}");
    let options = repo
        .tree_merge_options()
        .map_err(|e| Error::git(&what, e))?;
    let labels = gix::merge::blob::builtin_driver::text::Labels {
        ancestor: None,
        current: Some(BStr::new("session")),
        other: Some(BStr::new(label)),
    };
    let mut out = repo
        .merge_trees(from, tree, to, labels, options)
        .map_err(|e| Error::git(&what, e))?;
    let how = TreatAsUnresolved::git();
    if out.has_unresolved_conflicts(how) {
        let mut paths = Vec::new();
        let mut lines = Vec::new();
        for conflict in out.conflicts.iter().filter(|c| c.is_unresolved(how)) {
            let path = conflict.ours.location().to_string();
            lines.push(format!("{path}: {}", describe(&conflict.resolution)));
            paths.push(path);
        }
        paths.sort();
        paths.dedup();
        return Ok(MergeOutcome::Conflict {
            paths,
            detail: lines.join("\n"),
        });
    }
    let tree = out.tree.write().map_err(|e| Error::git(&what, e))?.detach();
    Ok(MergeOutcome::Clean { tree })
}

/// What clashed, in a few words.
fn describe(resolution: &std::result::Result<Resolution, ResolutionFailure>) -> String {
    match resolution {
        Ok(_) => "both sides changed the same lines".to_owned(),
        Err(ResolutionFailure::OursModifiedTheirsDeleted) => {
            "changed on one side, deleted on the other".to_owned()
        }
        Err(ResolutionFailure::OursDeletedTheirsRenamed) => {
            "deleted on one side, renamed on the other".to_owned()
        }
        Err(ResolutionFailure::OursAddedTheirsAddedTypeMismatch { .. }) => {
            "added on both sides as different kinds of entry".to_owned()
        }
        Err(ResolutionFailure::OursRenamedTheirsRenamedDifferently { .. }) => {
            "renamed differently on each side".to_owned()
        }
        Err(ResolutionFailure::OursRenamedTheirsRenamedToSameLocation) => {
            "different files renamed to the same path".to_owned()
        }
        Err(
            ResolutionFailure::OursModifiedTheirsDirectoryThenOursRenamed { .. }
            | ResolutionFailure::OursDirectoryTheirsNonDirectoryTheirsRenamed { .. },
        ) => "a file on one side, a directory on the other".to_owned(),
        Err(other) => format!("{other:?}"),
    }
}

/// The pairs of IMPL tasks (in the order given, each pair once) whose planned files overlap:
/// the same file, or one inside a directory the other plans (`src/` and `src/lib.rs`). An
/// empty path or `.` stands for the whole repository.
pub fn overlapping(plans: &[(TaskId, Vec<String>)]) -> Vec<(TaskId, TaskId)> {
    let impls: Vec<(&TaskId, Vec<String>)> = plans
        .iter()
        .filter(|(task, _)| task.prefix() == "IMPL")
        .map(|(task, files)| (task, files.iter().map(|f| normalize(f)).collect()))
        .collect();
    let mut pairs = Vec::new();
    for (i, (a, a_files)) in impls.iter().enumerate() {
        for (b, b_files) in &impls[i + 1..] {
            if a != b
                && a_files
                    .iter()
                    .any(|x| b_files.iter().any(|y| same_or_inside(x, y)))
            {
                pairs.push(((*a).clone(), (*b).clone()));
            }
        }
    }
    pairs
}

/// `path` without `./` prefixes, repeated or trailing slashes, or backslashes.
fn normalize(path: &str) -> String {
    path.trim()
        .replace('\\', "/")
        .split('/')
        .filter(|part| !part.is_empty() && *part != ".")
        .collect::<Vec<_>>()
        .join("/")
}

/// Whether two normalised paths are the same or one lies under the other.
fn same_or_inside(a: &str, b: &str) -> bool {
    let under = |inner: &str, outer: &str| {
        outer.is_empty()
            || inner
                .strip_prefix(outer)
                .is_some_and(|rest| rest.starts_with('/'))
    };
    a == b || under(a, b) || under(b, a)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> TaskId {
        s.parse().unwrap()
    }

    fn plan(task: &str, files: &[&str]) -> (TaskId, Vec<String>) {
        (id(task), files.iter().map(|f| (*f).to_owned()).collect())
    }

    #[test]
    fn overlapping_pairs_of_impl_tasks() {
        let plans = vec![
            plan("IMPL-001", &["src/lib.rs", "src/a.rs"]),
            plan("IMPL-002", &["./src/a.rs"]),
            plan("IMPL-003", &["docs/"]),
            plan("IMPL-004", &["docs/guide.md", "src/libx.rs"]),
            plan("TEST-001", &["src/lib.rs"]),
            plan("IMPL-005", &[]),
            plan("IMPL-006", &["src/lib"]),
        ];
        assert_eq!(
            overlapping(&plans),
            vec![
                (id("IMPL-001"), id("IMPL-002")),
                (id("IMPL-003"), id("IMPL-004")),
            ],
            "`src/lib` is not `src/lib.rs`, `src/libx.rs` is not under `src/lib`, TEST tasks and empty plans take no part"
        );
        let whole = vec![plan("IMPL-001", &["."]), plan("IMPL-002", &["x"])];
        assert_eq!(overlapping(&whole), vec![(id("IMPL-001"), id("IMPL-002"))]);
        assert!(overlapping(&[]).is_empty());
    }
}
