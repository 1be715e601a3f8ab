//! Discarding results: `git tlv4 reset TASK` (the task and everything downstream of it run
//! again), and adopting a user's own commits on a task branch as a manual revision on
//! `resume` (merged, and what depends on the task runs again).
//!
//! Either way the history stays whole: the events are appended, earlier run records stay
//! under `runs/<TASK>/<attempt>/`, and code a discarded task had merged is reverted by a
//! three-way merge in the new event (the merge of the task stays in the history).

use gix::ObjectId;
use tlv4_store::store::refs::short_branch;

use tlv4_core::error::{Error, Result};
use tlv4_core::model::{Event, EventKind, SessionId, SessionStatus, State, TaskId, TaskStatus};
use tlv4_store::store::{Store, Txn, Written};
use tlv4_store::worktree::{self, MergeOutcome, task_ref};

/// What a reset did.
#[derive(Debug, Clone)]
pub struct Reset {
    /// The tasks returned to pending, the target first.
    pub tasks: Vec<TaskId>,
    /// The tasks whose merged code was reverted.
    pub reverted: Vec<TaskId>,
    /// The event.
    pub written: Written,
}

/// Discards the result of `target` and of every finished task downstream of it; they run
/// again on the next `resume`. Code they merged is reverted.
pub fn reset(store: &Store, sid: &SessionId, target: &TaskId) -> Result<Reset> {
    let mut done = (Vec::new(), Vec::new());
    let written = store.transact(sid, |txn| {
        let task = txn.state.task(target)?.clone();
        if !matches!(task.status, TaskStatus::Completed | TaskStatus::Failed) {
            return Err(Error::state(
                format!(
                    "task `{target}` is {}; only a completed or failed task can be reset",
                    task.status.as_str()
                ),
                Some(match task.status {
                    TaskStatus::InProgress => {
                        "wait for it to finish, or `git tlv4 resume` if its process is gone"
                            .to_owned()
                    }
                    _ => "it has not run yet: nothing to discard".to_owned(),
                }),
            ));
        }
        if super::followup::is_revised(&txn.state, target) {
            let latest = super::revise::latest(&txn.state, target);
            return Err(Error::state(
                format!("task `{target}` was replaced by its revision `{latest}`"),
                Some(format!(
                    "reset the revision instead: git tlv4 reset {latest}"
                )),
            ));
        }
        if txn.state.session.status == SessionStatus::Aborted {
            return Err(Error::state(
                format!("session `{sid}` is aborted"),
                Some(format!(
                    "fork it to continue: git tlv4 fork --session {sid} --at EVENT"
                )),
            ));
        }
        let affected = downstream(&txn.state, target);
        let tip_tree = txn.store().commit_tree(txn.tip)?;
        let (tree, reverted) = revert_code(txn, sid, &affected, tip_tree)?;
        if !reverted.is_empty() {
            txn.replace_tree(tree);
        }
        reopen(&mut txn.state, &affected);
        let list: Vec<&str> = affected.iter().map(TaskId::as_str).collect();
        let mut summary = format!("Reset {}; to run again: {}", target, list.join(", "));
        if !reverted.is_empty() {
            let r: Vec<&str> = reverted.iter().map(TaskId::as_str).collect();
            summary.push_str(&format!("\nCode reverted: {}", r.join(", ")));
        }
        done = (affected.clone(), reverted);
        let t = txn.state.task(target)?;
        Ok(Some(
            Event::task(EventKind::TaskReset, t, summary).with("Reset", list.join(",")),
        ))
    })?;
    let written = written.expect("a reset always writes an event");
    Ok(Reset {
        tasks: done.0,
        reverted: done.1,
        written,
    })
}

/// A manual revision taken over on `resume`.
#[derive(Debug, Clone)]
pub struct Adopted {
    /// The task whose branch had new commits.
    pub task: TaskId,
    /// How many commits were adopted.
    pub commits: usize,
    /// The tasks downstream that run again.
    pub rerun: Vec<TaskId>,
}

/// Merges commits a user made on the branch of a completed task (`tlv4/<SID>.<TASK>`) — or
/// of a failed one no revision replaced, on top of its last snapshot — into the session as a
/// manual revision (the task is then completed), and reopens what depends on that task. A branch whose
/// commits conflict with the session is an error naming the paths; nothing is changed.
pub fn adopt_manual(store: &Store, sid: &SessionId) -> Result<Vec<Adopted>> {
    let (tip, state) = store.read_state(sid)?;
    let prefix = format!("{}.", tlv4_store::store::session_ref(sid));
    let mut found = Vec::new();
    for (name, branch_tip) in store.refs_with_prefix(tlv4_store::store::SESSION_REF_PREFIX)? {
        let Some(task) = name.strip_prefix(&prefix) else {
            continue;
        };
        let Ok(task) = task.parse::<TaskId>() else {
            continue;
        };
        let Some(t) = state.tasks.get(&task) else {
            continue;
        };
        // A completed task, or a failed one nothing replaced (a fix by hand of a run that
        // failed or conflicted).
        let adoptable = match t.status {
            TaskStatus::Completed => true,
            TaskStatus::Failed => !super::followup::is_revised(&state, &task),
            _ => false,
        };
        if !adoptable || store.is_ancestor(branch_tip, tip)? {
            continue;
        }
        // Only commits on top of the task's last snapshot are a revision; a branch left by
        // an earlier attempt is not.
        let merged = last_snapshot(store, tip, sid, &task, t.attempts)?;
        let Some(merged) = merged else { continue };
        if branch_tip == merged || !store.is_ancestor(merged, branch_tip)? {
            continue;
        }
        let touched = tlv4_core::git::run(
            store.workdir(),
            &[
                "diff",
                "--name-only",
                &merged.to_string(),
                &branch_tip.to_string(),
                "--",
                ".tlv4",
            ],
        )?;
        if !touched.trim().is_empty() {
            return Err(Error::state(
                format!(
                    "the commits on {} change files under .tlv4/, which only git-tlv4 writes: {}",
                    short_branch(&name),
                    touched.split_whitespace().collect::<Vec<_>>().join(", ")
                ),
                Some("take those changes out of the branch (git revert or git rebase -i), then resume".to_owned()),
            ));
        }
        found.push((task, branch_tip, merged));
    }
    let mut adopted = Vec::new();
    for (task, branch_tip, merged) in found {
        let commits = count_commits(store, merged, branch_tip)?;
        let mut rerun = Vec::new();
        store.transact(sid, |txn| {
            let t = txn.state.task(&task)?.clone();
            if !matches!(t.status, TaskStatus::Completed | TaskStatus::Failed) {
                return Ok(None);
            }
            let merged_tree = match worktree::merge_task(txn.store(), txn.tip, branch_tip)? {
                MergeOutcome::Clean { tree } => tree,
                MergeOutcome::Conflict { paths, .. } => {
                    return Err(Error::state(
                        format!(
                            "the commits on {} conflict with the session in {}",
                            short_branch(&task_ref(sid, &task)),
                            paths.join(", ")
                        ),
                        Some(format!(
                            "merge the session into it first (git merge tlv4/{sid}), then resume"
                        )),
                    ));
                }
            };
            let mut affected = downstream(&txn.state, &task);
            affected.retain(|d| *d != task);
            // Dependents merged code on top of the old result: take it back before they rerun.
            let (tree, _) = revert_code(txn, sid, &affected, merged_tree)?;
            txn.merge(branch_tip, tree);
            reopen(&mut txn.state, &affected);
            let subject = commit_subject(txn.store(), branch_tip);
            // The record spans the whole change from where the task forked, so replay and
            // reset see the task's work and the user's revision together.
            let fork_point = txn
                .store()
                .repo()
                .find_commit(merged)
                .ok()
                .and_then(|c| c.parent_ids().next().map(|p| p.detach()))
                .unwrap_or(merged);
            let t = txn.state.task_mut(&task)?;
            t.attempts += 1;
            t.status = TaskStatus::Completed;
            t.owner = None;
            let artifacts = t.result.as_ref().map(|r| r.artifacts.clone()).unwrap_or_default();
            t.result = Some(tlv4_core::model::TaskResult {
                summary: format!("manual revision: {subject}"),
                reason: None,
                artifacts,
                finished_at: tlv4_core::clock::now_rfc3339(),
            });
            let record = serde_json::json!({
                "task": task, "role": t.role, "attempt": t.attempts, "agent": "manual",
                "outcome": "completed", "summary": format!("manual revision: {subject}"),
                "files": {}, "snapshot": { "commit": branch_tip.to_string(), "parent": fork_point.to_string(), "changed": [] },
            });
            let mut bytes = serde_json::to_vec_pretty(&record).expect("JSON serialises");
            bytes.push(b'\n');
            let attempt = t.attempts;
            let t = t.clone();
            txn.write_record(&format!("runs/{task}/{attempt}/result.json"), bytes)?;
            txn.state.session.status = SessionStatus::Active;
            txn.state.control.pause = None;
            rerun = affected.clone();
            let list: Vec<&str> = affected.iter().map(TaskId::as_str).collect();
            Ok(Some(
                Event::task(
                    EventKind::TaskAdopted,
                    &t,
                    format!(
                        "Adopted {commits} commit(s) of {} as a manual revision of {task}: {subject}\nTo run again: {}",
                        short_branch(&task_ref(sid, &task)),
                        if list.is_empty() { "nothing".to_owned() } else { list.join(", ") }
                    ),
                )
                .with("Merged", branch_tip.to_string()),
            ))
        })?;
        adopted.push(Adopted {
            task,
            commits,
            rerun,
        });
    }
    Ok(adopted)
}

/// `target` and every completed or failed task that waits for it, directly or not, in
/// dependency order.
pub(super) fn downstream(state: &State, target: &TaskId) -> Vec<TaskId> {
    let mut affected = vec![target.clone()];
    for t in state.ordered() {
        if affected.contains(&t.id)
            || !matches!(t.status, TaskStatus::Completed | TaskStatus::Failed)
        {
            continue;
        }
        if t.blocked_by.iter().any(|d| affected.contains(d)) {
            affected.push(t.id.clone());
        }
    }
    affected
}

/// Back to pending, results gone, attempts kept (the next run is a new attempt).
pub(super) fn reopen(state: &mut State, ids: &[TaskId]) {
    for id in ids {
        if let Some(t) = state.tasks.get_mut(id) {
            t.status = TaskStatus::Pending;
            t.result = None;
            t.owner = None;
        }
    }
    state.session.status = SessionStatus::Active;
    state.control.pause = None;
    for id in ids {
        state.control.verdicts.remove(id.as_str());
    }
}

/// Reverts in `tree`, newest first, the merged code of those of `ids` that merged a
/// snapshot; returns the new tree and those tasks. A revert that conflicts with later code
/// is an error naming the paths.
pub(super) fn revert_code(
    txn: &Txn<'_>,
    sid: &SessionId,
    ids: &[TaskId],
    mut tree: ObjectId,
) -> Result<(ObjectId, Vec<TaskId>)> {
    let store = txn.store();
    let mut reverted = Vec::new();
    for id in ids.iter().rev() {
        let t = &txn.state.tasks[id];
        if t.status != TaskStatus::Completed {
            continue;
        }
        let Some(snapshot) = snapshot_of(txn, sid, id, t.attempts)? else {
            continue;
        };
        let (commit, parent) = snapshot;
        if !store.is_ancestor(commit, txn.tip)? {
            continue;
        }
        let outcome = worktree::merge_change(
            store,
            tree,
            store.commit_tree(commit)?,
            store.commit_tree(parent)?,
            "revert",
        )?;
        tree = match outcome {
            MergeOutcome::Clean { tree } => tree,
            MergeOutcome::Conflict { paths, .. } => {
                return Err(Error::state(
                    format!(
                        "the code {id} merged cannot be taken back: later changes touch {}",
                        paths.join(", ")
                    ),
                    Some(format!(
                        "reset the task that changed them after {id} first, or `git tlv4 revise {id} --feedback TEXT`"
                    )),
                ));
            }
        };
        reverted.push(id.clone());
    }
    Ok((tree, reverted))
}

/// The snapshot commit and its parent in a run record (`result.json`).
fn record_snapshot(bytes: &[u8]) -> Option<(ObjectId, ObjectId)> {
    let record: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    let get = |k: &str| -> Option<ObjectId> { record["snapshot"][k].as_str()?.parse().ok() };
    get("commit").zip(get("parent"))
}

/// The snapshot commit and its parent recorded for attempt `attempt` of `id`.
fn snapshot_of(
    txn: &Txn<'_>,
    sid: &SessionId,
    id: &TaskId,
    attempt: u32,
) -> Result<Option<(ObjectId, ObjectId)>> {
    let bytes = txn.read_file(sid, &format!("runs/{id}/{attempt}/result.json"))?;
    Ok(bytes.as_deref().and_then(record_snapshot))
}

/// The snapshot commit of attempt `attempt` of `task` as the record at `tip` has it.
fn last_snapshot(
    store: &Store,
    tip: ObjectId,
    sid: &SessionId,
    task: &TaskId,
    attempt: u32,
) -> Result<Option<ObjectId>> {
    let path = format!(
        "{}/runs/{task}/{attempt}/result.json",
        tlv4_store::store::session_dir(sid)
    );
    let bytes = store.read_blob_at(store.commit_tree(tip)?, &path)?;
    Ok(bytes.as_deref().and_then(record_snapshot).map(|(c, _)| c))
}

fn count_commits(store: &Store, from: ObjectId, to: ObjectId) -> Result<usize> {
    let out = tlv4_core::git::run(
        store.workdir(),
        &["rev-list", "--count", &format!("{from}..{to}")],
    )?;
    Ok(out.trim().parse().unwrap_or(0))
}

fn commit_subject(store: &Store, commit: ObjectId) -> String {
    store
        .repo()
        .find_commit(commit)
        .ok()
        .and_then(|c| c.message().ok().map(|m| m.title.to_string()))
        .unwrap_or_default()
        .trim()
        .to_owned()
}
