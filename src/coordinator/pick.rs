//! Best of N, looked at and overruled: reading a task's candidates (`runs/<TASK>/<attempt>/
//! candidates.json`, `specs/state-format.md` §7) and `git tlv4 pick TASK N`, the user's
//! decision to take candidate N instead of the one the rule picked.
//!
//! A pick is one event. Its tree is the session's code with the first pick's change taken
//! back (and, before it, the code of the tasks downstream that ran on it, which run again)
//! and candidate N's change made; candidate N's commit is the event's second parent, as a
//! task's merge has its snapshot. The record says who picked: `picked_by` is `user` from
//! then on. The task branch moves to the new candidate after the event
//! ([`pick`]); `pull` makes the decision again through [`super::decide`].

use gix::ObjectId;
use tlv4_core::error::{Error, Result};
use tlv4_core::model::{Event, SessionId, State, Task, TaskId, TaskResult, TaskStatus};
use tlv4_store::store::{Store, Txn, session_dir};
use tlv4_store::worktree::{self, MergeOutcome, task_ref};

use super::decide::Decision;

pub(crate) use super::bestof::record::{Candidate, Candidates, FILE as RECORD};

/// A candidate's snapshot commit and the commit it forked from, when it has both.
fn commits(c: &Candidate) -> Option<(ObjectId, ObjectId)> {
    let id = |s: &Option<String>| s.as_deref().and_then(|s| s.parse().ok());
    id(&c.commit).zip(id(&c.parent))
}

/// A task's candidates record as found in a tree.
#[derive(Debug, Clone)]
pub(crate) struct Found {
    /// The attempt it belongs to.
    pub attempt: u32,
    /// The record.
    pub record: Candidates,
    /// The record as written, every field kept.
    pub raw: serde_json::Value,
}

/// Parses a candidates record.
pub(crate) fn parse(bytes: &[u8]) -> Result<(Candidates, serde_json::Value)> {
    let bad = |e: serde_json::Error| Error::state(format!("cannot read {RECORD}: {e}"), None);
    let raw: serde_json::Value = serde_json::from_slice(bytes).map_err(bad)?;
    let record = serde_json::from_value(raw.clone()).map_err(bad)?;
    Ok((record, raw))
}

/// The candidates record of `task`'s latest attempt that has one, in session `sid`'s
/// folder of `tree`.
pub(crate) fn latest(
    store: &Store,
    tree: ObjectId,
    sid: &SessionId,
    task: &Task,
) -> Result<Option<Found>> {
    let dir = session_dir(sid);
    find(task, |rel| {
        store.read_blob_at(tree, &format!("{dir}/{rel}"))
    })
}

/// [`latest`] as the change `txn` leaves the session's folder so far.
fn latest_in(txn: &Txn<'_>, task: &Task) -> Result<Option<Found>> {
    let sid = txn.state.session.id.clone();
    find(task, |rel| txn.read_file(&sid, rel))
}

/// The record of `task`'s latest attempt that has one, each read by `read` (a path in the
/// session's folder).
fn find(task: &Task, read: impl Fn(&str) -> Result<Option<Vec<u8>>>) -> Result<Option<Found>> {
    for attempt in (1..=task.attempts).rev() {
        if let Some(bytes) = read(&format!("runs/{}/{attempt}/{RECORD}", task.id))? {
            let (record, raw) = parse(&bytes)?;
            return Ok(Some(Found {
                attempt,
                record,
                raw,
            }));
        }
    }
    Ok(None)
}

/// Every task of `state` that ran candidates, with its latest record, in task order.
pub(crate) fn all(
    store: &Store,
    tip: ObjectId,
    sid: &SessionId,
    state: &State,
) -> Result<Vec<(TaskId, Found)>> {
    let tree = store.commit_tree(tip)?;
    let mut out = Vec::new();
    for t in state.ordered() {
        if let Some(found) = latest(store, tree, sid, t)? {
            out.push((t.id.clone(), found));
        }
    }
    Ok(out)
}

/// `task`'s latest candidates record at the tip of session `sid`: an error naming the fix
/// when the task is unknown or ran none.
pub(crate) fn of_task(store: &Store, sid: &SessionId, task: &TaskId) -> Result<Found> {
    let (tip, state) = store.read_state(sid)?;
    let t = state.task(task)?;
    latest(store, store.commit_tree(tip)?, sid, t)?.ok_or_else(|| none(task))
}

fn none(task: &TaskId) -> Error {
    Error::state(
        format!("task `{task}` ran no candidates: it did not run best of N"),
        Some("a session started with `--best-of N` runs N candidates of each code task".into()),
    )
}

/// What a pick did.
#[derive(Debug, Clone)]
pub struct Picked {
    /// The tasks that run again.
    pub rerun: Vec<TaskId>,
    /// The event's summary.
    pub summary: String,
    /// The task branch (`tlv4/<SID>.<TASK>`).
    pub branch: String,
    /// The candidate's commit the task branch now points at.
    pub commit: ObjectId,
    /// Why the task branch did not move, when it did not (the event is written all the same).
    pub branch_note: Option<String>,
}

/// `git tlv4 pick TASK N`: records the decision as one event, then moves the task branch
/// to candidate N's commit (compare-and-swap).
pub fn pick(store: &Store, sid: &SessionId, task: &TaskId, number: u32) -> Result<Picked> {
    let decision = Decision::Pick {
        task: task.clone(),
        number,
    };
    let mut done = None;
    store.transact(sid, |txn| {
        let (summary, rerun, commit) = apply_pick(txn, task, number)?;
        done = Some((summary.clone(), rerun, commit));
        Ok(Some(decision.event(summary)))
    })?;
    let (summary, rerun, commit) = done.expect("a pick always writes an event");
    let branch = task_ref(sid, task);
    let branch_was = store.try_ref(&branch)?;
    let reflog = format!("git-tlv4: candidate {number} of {task} picked by the user");
    // The session has the change whatever becomes of the branch: a branch someone has checked
    // out stays where it is, as the loop leaves it (`bestof::move_branch`).
    let checked_out = store.checked_out_in(&branch);
    let moved = match branch_was {
        Some(was) if was == commit => Ok(()),
        _ if !checked_out.is_empty() => {
            Err(format!("it is checked out in {}", checked_out[0].display()))
        }
        Some(was) => store
            .update_ref(&branch, was, commit, &reflog)
            .map_err(|e| e.to_string()),
        None => store
            .create_ref(&branch, commit, &reflog)
            .map(|_| ())
            .map_err(|e| e.to_string()),
    };
    let short = tlv4_store::store::refs::short_branch(&branch).to_owned();
    Ok(Picked {
        rerun,
        summary,
        branch_note: moved.err().map(|why| {
            format!("{short} was not moved to candidate {number} ({why}); the session has its change all the same")
        }),
        branch: short,
        commit,
    })
}

/// Applies the pick of candidate `number` of `task` to the change `txn`: the event's summary.
pub fn apply(txn: &mut Txn<'_>, task: &TaskId, number: u32) -> Result<String> {
    apply_pick(txn, task, number).map(|(summary, ..)| summary)
}

/// The event's summary, the tasks to run again, and the commit of the candidate taken.
type Applied = (String, Vec<TaskId>, ObjectId);

fn apply_pick(txn: &mut Txn<'_>, task: &TaskId, number: u32) -> Result<Applied> {
    let sid = txn.state.session.id.clone();
    let t = txn.state.task(task)?.clone();
    if !matches!(t.status, TaskStatus::Completed | TaskStatus::Failed) {
        return Err(Error::state(
            format!(
                "task `{task}` is {}; a candidate is picked once the task has run",
                t.status.as_str()
            ),
            Some(match t.status {
                TaskStatus::InProgress => "wait for it to finish".to_owned(),
                _ => "it has not run yet: its candidates will be measured when it does".to_owned(),
            }),
        ));
    }
    if super::followup::is_revised(&txn.state, task) {
        let latest = super::revise::latest(&txn.state, task);
        return Err(Error::state(
            format!("task `{task}` was replaced by its revision `{latest}`"),
            Some(format!(
                "pick among the revision's: git tlv4 candidates {latest}"
            )),
        ));
    }
    let store = txn.store();
    let tip_tree = store.commit_tree(txn.tip)?;
    let found = latest_in(txn, &t)?.ok_or_else(|| none(task))?;
    if found.attempt != t.attempts {
        return Err(Error::state(
            format!(
                "the candidates of `{task}` are of attempt {}, and attempt {} ran after them",
                found.attempt, t.attempts
            ),
            Some(format!(
                "only the latest attempt's result can change: git tlv4 revise {task}"
            )),
        ));
    }
    let record = &found.record;
    let count = record.candidates.len();
    let Some(chosen) = record.get(number) else {
        return Err(Error::Invalid(format!(
            "`{task}` has {count} candidate{}: there is no candidate {number} (see git tlv4 candidates {task})",
            if count == 1 { "" } else { "s" }
        )));
    };
    if record.picked == Some(number) && t.status == TaskStatus::Completed {
        return Err(Error::state(
            format!("candidate {number} of `{task}` is already picked"),
            Some(format!("see the others: git tlv4 candidates {task}")),
        ));
    }
    let Some((commit, parent)) = commits(chosen) else {
        return Err(Error::state(
            format!(
                "candidate {number} of `{task}` left no commit to take ({})",
                chosen.outcome
            ),
            Some(format!("pick one that did: git tlv4 candidates {task}")),
        ));
    };
    if let Some(running) = txn
        .state
        .ordered()
        .into_iter()
        .find(|d| d.status == TaskStatus::InProgress && depends_on(&txn.state, &d.id, task))
    {
        return Err(Error::state(
            format!(
                "`{}` depends on `{task}` and is running: it would go on with the code it has",
                running.id
            ),
            Some("pick when it has finished".to_owned()),
        ));
    }

    // The code downstream first (newest first), then the first pick's change.
    let mut affected = super::reset::downstream(&txn.state, task);
    affected.retain(|d| d != task);
    let (tree, _) = super::reset::revert_code(txn, &sid, &affected, tip_tree)?;
    let before_commits = record
        .picked
        .filter(|_| t.status == TaskStatus::Completed)
        .and_then(|k| record.get(k))
        .and_then(commits)
        .map(|(c, p)| Ok::<_, Error>((c, p, store.is_ancestor(c, txn.tip)?)))
        .transpose()?
        .filter(|(.., merged)| *merged)
        .map(|(c, p, _)| (c, p));
    let tree = swap(store, tree, before_commits, (commit, parent)).map_err(|e| match e {
        Swapped::Back(paths) => Error::state(
            format!(
                "the change of candidate {} cannot be taken back: later changes touch {}",
                record.picked.unwrap_or_default(),
                paths.join(", ")
            ),
            Some(format!("reset the task that changed them first, or `git tlv4 revise {task}`")),
        ),
        Swapped::In(paths) => Error::state(
            format!(
                "candidate {number} of `{task}` conflicts with the session now in {}",
                paths.join(", ")
            ),
            Some(format!(
                "pick another candidate, or redo the task on the current code: git tlv4 revise {task}"
            )),
        ),
        Swapped::Failed(e) => e,
    })?;
    txn.merge(commit, tree);

    super::reset::reopen(&mut txn.state, &affected);
    let was = match (record.picked, record.by_user()) {
        (Some(k), true) => format!("candidate {k}, picked by the user"),
        (Some(k), false) => format!("candidate {k}, picked by the rule"),
        (None, _) => "no candidate (every one fell short)".to_owned(),
    };
    let summary_line = format!("picked candidate {number} by the user: {}", chosen.summary);
    {
        let t = txn.state.task_mut(task)?;
        t.status = TaskStatus::Completed;
        t.owner = None;
        let artifacts = t
            .result
            .as_ref()
            .map(|r| r.artifacts.clone())
            .unwrap_or_default();
        t.result = Some(TaskResult {
            summary: summary_line.trim_end_matches(": ").to_owned(),
            reason: None,
            artifacts,
            finished_at: tlv4_core::clock::now_rfc3339(),
        });
    }
    let dir = format!("runs/{task}/{}", found.attempt);
    let mut raw = found.raw.clone();
    raw["picked"] = number.into();
    raw["picked_by"] = "user".into();
    raw["why"] = format!("picked by the user with `git tlv4 pick` instead of {was}").into();
    txn.write_record(&format!("{dir}/{RECORD}"), pretty(&raw))?;
    // The task's run record names the snapshot merged, which a later reset takes back.
    let result_path = format!("{dir}/result.json");
    let mut result: serde_json::Value = txn
        .read_file(&sid, &result_path)?
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_else(|| serde_json::json!({ "task": task, "attempt": found.attempt }));
    result["outcome"] = "completed".into();
    result["summary"] = chosen.summary.clone().into();
    result["agent"] = chosen.agent.clone().into();
    result["best_of"] = serde_json::json!({ "candidates": count, "picked": number });
    result["snapshot"] = serde_json::json!({
        "commit": commit.to_string(), "parent": parent.to_string(), "changed": chosen.changed,
        "refused": [], "left_out": [], "kept": chosen.reference,
    });
    txn.write_record(&result_path, pretty(&result))?;

    let rerun: Vec<&str> = affected.iter().map(TaskId::as_str).collect();
    let summary = format!(
        "{task}: candidate {number} instead of {was}\nTo run again: {}",
        if rerun.is_empty() {
            "nothing".to_owned()
        } else {
            rerun.join(", ")
        }
    );
    Ok((summary, affected, commit))
}

/// Whether the user picked candidate `number` of `task` in the state of `txn` already (a
/// pick `pull` makes again that this side made too).
pub(super) fn picked_here(txn: &Txn<'_>, task: &TaskId, number: u32) -> Result<bool> {
    let Ok(t) = txn.state.task(task) else {
        return Ok(false);
    };
    Ok(latest_in(txn, t)?.is_some_and(|f| f.record.picked == Some(number) && f.record.by_user()))
}

/// Why [`swap`] could not change the code.
#[derive(Debug)]
pub(crate) enum Swapped {
    /// Taking the first change back clashes with later code in these paths.
    Back(Vec<String>),
    /// The new change clashes with the session in these paths.
    In(Vec<String>),
    /// Git failed.
    Failed(Error),
}

/// `tree` with the change of `old` (a snapshot commit and its parent) taken back, when
/// there is one, and the change of `new` made.
pub(crate) fn swap(
    store: &Store,
    tree: ObjectId,
    old: Option<(ObjectId, ObjectId)>,
    new: (ObjectId, ObjectId),
) -> std::result::Result<ObjectId, Swapped> {
    let trees = |(c, p): (ObjectId, ObjectId)| -> std::result::Result<_, Swapped> {
        Ok((
            store.commit_tree(c).map_err(Swapped::Failed)?,
            store.commit_tree(p).map_err(Swapped::Failed)?,
        ))
    };
    let mut tree = tree;
    if let Some(old) = old {
        let (c, p) = trees(old)?;
        tree = match worktree::merge_change(store, tree, c, p, "revert").map_err(Swapped::Failed)? {
            MergeOutcome::Clean { tree } => tree,
            MergeOutcome::Conflict { paths, .. } => return Err(Swapped::Back(paths)),
        };
    }
    let (c, p) = trees(new)?;
    match worktree::merge_change(store, tree, p, c, "candidate").map_err(Swapped::Failed)? {
        MergeOutcome::Clean { tree } => Ok(tree),
        MergeOutcome::Conflict { paths, .. } => Err(Swapped::In(paths)),
    }
}

/// Whether `id` waits for `target`, directly or not.
fn depends_on(state: &State, id: &TaskId, target: &TaskId) -> bool {
    let mut seen = Vec::new();
    let mut stack = vec![id.clone()];
    while let Some(next) = stack.pop() {
        let Some(t) = state.tasks.get(&next) else {
            continue;
        };
        for d in &t.blocked_by {
            if d == target {
                return true;
            }
            if !seen.contains(d) {
                seen.push(d.clone());
                stack.push(d.clone());
            }
        }
    }
    false
}

fn pretty(value: &serde_json::Value) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(value).expect("JSON serialises");
    bytes.push(b'\n');
    bytes
}

/// The decision `pick` as [`Event`] trailers add it (`Tlv4-Picked`).
pub(super) fn trailers(event: Event, task: &TaskId, number: u32) -> Event {
    event
        .with("Decision-Task", task.as_str())
        .with("Picked", number.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A repository with commit `base` (a.txt, b.txt) and a way to make commits on it.
    struct Repo {
        dir: tempfile::TempDir,
    }

    impl Repo {
        fn new() -> Repo {
            let repo = Repo {
                dir: tempfile::tempdir().unwrap(),
            };
            repo.git(&["init", "-q", "-b", "main"]);
            repo
        }

        fn git(&self, args: &[&str]) -> String {
            let out = std::process::Command::new("git")
                .current_dir(self.dir.path())
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .env("GIT_AUTHOR_NAME", "t")
                .env("GIT_AUTHOR_EMAIL", "t@example.com")
                .env("GIT_COMMITTER_NAME", "t")
                .env("GIT_COMMITTER_EMAIL", "t@example.com")
                .args(args)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8(out.stdout).unwrap().trim().to_owned()
        }

        /// A commit on `parent` (none: a root) whose files are `files`.
        fn commit(&self, parent: Option<ObjectId>, files: &[(&str, &str)]) -> ObjectId {
            for entry in std::fs::read_dir(self.dir.path()).unwrap() {
                let path = entry.unwrap().path();
                if path.is_file() {
                    std::fs::remove_file(path).unwrap();
                }
            }
            for (name, text) in files {
                std::fs::write(self.dir.path().join(name), text).unwrap();
            }
            self.git(&["add", "-A"]);
            let tree = self.git(&["write-tree"]);
            let mut args = vec!["commit-tree".to_owned(), tree, "-m".into(), "c".into()];
            if let Some(p) = parent {
                args.extend(["-p".to_owned(), p.to_string()]);
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            self.git(&args).parse().unwrap()
        }

        fn store(&self) -> Store {
            Store::discover(self.dir.path()).unwrap()
        }
    }

    fn read(store: &Store, tree: ObjectId, path: &str) -> Option<String> {
        store
            .read_blob_at(tree, path)
            .unwrap()
            .map(|b| String::from_utf8(b).unwrap())
    }

    #[test]
    fn swap_takes_the_first_change_back_and_makes_the_new_one_keeping_later_code() {
        let repo = Repo::new();
        let base = repo.commit(None, &[("a.txt", "a\n"), ("b.txt", "b\n")]);
        let one = repo.commit(Some(base), &[("a.txt", "one\n"), ("b.txt", "b\n")]);
        let two = repo.commit(
            Some(base),
            &[("a.txt", "two\n"), ("b.txt", "b\n"), ("c.txt", "new\n")],
        );
        // The session: candidate one merged, then b.txt changed by a later task.
        let session = repo.commit(Some(one), &[("a.txt", "one\n"), ("b.txt", "later\n")]);
        let store = repo.store();
        let tree = store.commit_tree(session).unwrap();

        let swapped = swap(&store, tree, Some((one, base)), (two, base)).unwrap();
        assert_eq!(read(&store, swapped, "a.txt").as_deref(), Some("two\n"));
        assert_eq!(read(&store, swapped, "b.txt").as_deref(), Some("later\n"));
        assert_eq!(read(&store, swapped, "c.txt").as_deref(), Some("new\n"));

        // Nothing to take back (every candidate fell short): only the new change.
        let plain = swap(&store, store.commit_tree(base).unwrap(), None, (two, base)).unwrap();
        assert_eq!(plain, store.commit_tree(two).unwrap());

        // And back again: the same tree as the first pick's.
        let again = swap(&store, swapped, Some((two, base)), (one, base)).unwrap();
        assert_eq!(again, tree);
    }

    #[test]
    fn swap_names_the_paths_where_either_change_clashes() {
        let repo = Repo::new();
        let base = repo.commit(None, &[("a.txt", "a\n"), ("b.txt", "b\n")]);
        let one = repo.commit(Some(base), &[("a.txt", "one\n"), ("b.txt", "b\n")]);
        let three = repo.commit(Some(base), &[("a.txt", "a\n"), ("b.txt", "three\n")]);
        let later = repo.commit(Some(one), &[("a.txt", "one\n"), ("b.txt", "later\n")]);
        let store = repo.store();
        let tree = store.commit_tree(later).unwrap();
        match swap(&store, tree, Some((one, base)), (three, base)) {
            Err(Swapped::In(paths)) => assert_eq!(paths, ["b.txt"]),
            other => panic!("{other:?}"),
        }
        let rewritten = repo.commit(Some(one), &[("a.txt", "changed later\n"), ("b.txt", "b\n")]);
        let tree = store.commit_tree(rewritten).unwrap();
        match swap(&store, tree, Some((one, base)), (three, base)) {
            Err(Swapped::Back(paths)) => assert_eq!(paths, ["a.txt"]),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn depends_on_follows_blocked_by_through_every_step() {
        let mut state = crate::coordinator::tests::state(
            "full-lifecycle",
            crate::coordinator::pipeline::Supervision::On,
        );
        let id = |s: &str| -> TaskId { s.parse().unwrap() };
        let first = state.ordered()[0].id.clone();
        let last = state.ordered().last().unwrap().id.clone();
        assert!(depends_on(&state, &last, &first));
        assert!(!depends_on(&state, &first, &last));
        state.tasks.retain(|k, _| *k == first);
        assert!(!depends_on(&state, &id("IMPL-404"), &first));
    }
}
