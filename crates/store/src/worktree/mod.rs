//! Isolated checkouts for workers: a task worktree on its own branch, snapshotted into one
//! commit, and a read-only view of the session tip for document tasks.
//!
//! A worker never runs in the user's checkout. Its task gets the branch
//! `tlv4/<SID>.<TASK>`, forked from the session tip, checked out by `git worktree add` in a
//! fresh temporary directory and locked there while the worker runs. The git CLI does the
//! checkout and staging (not gix) because it applies what the user configured for this
//! repository: LFS and other smudge/clean filters, attributes — but never the user's git
//! hooks (see [`tlv4_core::git`]), and never a sparse checkout: task checkouts are full.
//!
//! What the worker changed becomes one commit on the task branch ([`TaskWorktree::snapshot`]),
//! but only after every changed path passed the checks in [`SnapshotLimits`] (no symlink out
//! of the worktree, no `.git` below the root, no huge files, not too many files). Changes
//! under `.tlv4/` are never taken: only the tool writes the pipeline folder; new files in
//! generated trees (`node_modules/`…) are left out. The changes are staged into a private
//! index filled from the base, so what the worker did to its own index or `HEAD` does not
//! change what is recorded. A refused snapshot does not move the branch: what passes the
//! checks is kept under `refs/tlv4/runs/<SID>/<TASK>/<n>` instead ([`keep_run`]).
//!
//! Nothing a worker produced is lost: the worktree is removed ([`TaskWorktree::remove`], or
//! when dropped) only once what it holds beyond its last snapshot is kept under a run ref;
//! when that cannot be written, the checkout stays, locked, for `resume`.
//!
//! Merging a task branch back is an in-memory tree merge ([`merge_task`]) whose result the
//! coordinator records as a merge event with [`crate::store::Txn::merge`].

mod check;
mod merge;
pub mod pool;
pub mod prepare;
mod scratch;
#[cfg(test)]
mod tests;

pub use check::{
    Change, ChangeKind, GENERATED_DIRS, Inspection, LeftOut, Rejection, Rule, SnapshotLimits,
};
pub use merge::{MergeOutcome, merge_change, merge_task, overlapping};
pub use scratch::{ReadOnlyView, ScratchCheckout};

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use gix::ObjectId;

use crate::store::{Store, session_dir};
use tlv4_core::error::{Error, Result};
use tlv4_core::model::{SessionId, Task, TaskId};
use tlv4_core::text::one_line;

/// The `Tlv4-Event` trailer of a snapshot commit on a task branch.
pub const SNAPSHOT_EVENT: &str = "task_snapshot";

/// The folder only the tool writes; a worker's changes there are left out of its snapshot.
pub const PIPELINE_FOLDER: &str = ".tlv4";

/// The ref names of task branches and kept work, re-exported from the one module that
/// builds ref names.
pub use crate::store::refs::{RUNS_REF_PREFIX, attempt_ref, candidate_ref, task_ref};

/// Keeps `commit`, work of attempt `attempt` of `task`, under the first free
/// [`attempt_ref`] from `attempt` up (attempt 0 counts as 1); one that already points at
/// `commit` is reused. Returns the ref. Create-only: no existing ref is moved.
pub fn keep_run(
    store: &Store,
    sid: &SessionId,
    task: &TaskId,
    attempt: u32,
    commit: ObjectId,
    why: &str,
) -> Result<String> {
    let first = attempt.max(1);
    for n in first..first.saturating_add(1000) {
        let name = attempt_ref(sid, task, n);
        if store.create_ref(&name, commit, &format!("git-tlv4: {why}"))?
            || store.try_ref(&name)? == Some(commit)
        {
            return Ok(name);
        }
    }
    let runs = crate::store::refs::runs_prefix(sid, task);
    Err(Error::state(
        format!("no free ref under {runs} to keep {commit} ({why}) in"),
        Some(format!(
            "look at them with `git for-each-ref {runs}` and delete those not needed"
        )),
    ))
}

/// Before attempt `attempt` of `task` starts at `from`: when the task branch holds commits
/// `from` does not contain (an earlier attempt whose work was not merged), keeps them under
/// [`attempt_ref`] of the previous attempt and moves the branch to `from`. Returns the ref
/// that keeps them. A branch checked out somewhere is left alone.
pub fn set_aside(
    store: &Store,
    sid: &SessionId,
    task: &TaskId,
    from: ObjectId,
    attempt: u32,
) -> Result<Option<String>> {
    let branch = task_ref(sid, task);
    let Some(tip) = store.try_ref(&branch)? else {
        return Ok(None);
    };
    if tip == from || !store.checked_out_in(&branch).is_empty() {
        return Ok(None);
    }
    let base = store
        .repo()
        .merge_base(from, tip)
        .map_err(|e| Error::git(&format!("cannot compare `{branch}` with {from}"), e))?
        .map(|b| b.detach());
    if base == Some(from) || base == Some(tip) {
        return Ok(None);
    }
    let n = attempt.saturating_sub(1);
    let keep = keep_run(store, sid, task, n, tip, &format!("attempt {n} of {task}"))?;
    store.update_ref(
        &branch,
        tip,
        from,
        &format!("git-tlv4: attempt {attempt} of {task}"),
    )?;
    Ok(Some(keep))
}

/// A ref that keeps work of a worker: a commit on top of the snapshot base holding what could
/// be recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    /// The full ref name, under `refs/tlv4/runs/`.
    pub name: String,
    /// The commit it points at.
    pub commit: ObjectId,
}

/// What a snapshot recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The new commit on the task branch; `None` when the worker changed nothing that is
    /// taken, or when the snapshot was refused.
    pub commit: Option<ObjectId>,
    /// The paths the commit changes (or, when refused, the kept commit), in path order.
    pub changed: Vec<Change>,
    /// Paths under `.tlv4/` the worker changed, which were left out.
    pub ignored: Vec<String>,
    /// Generated directories whose new files were left out.
    pub left_out: Vec<LeftOut>,
    /// Why the snapshot was refused: each path and the rule it breaks. Empty when taken.
    pub refused: Vec<Rejection>,
    /// When refused: the ref keeping the changes that pass the checks (`None` when no change
    /// did).
    pub kept: Option<Kept>,
}

/// A worker's checkout: the task branch in a locked linked worktree under a temporary
/// directory.
///
/// It is removed only once everything in it that can be recorded is referenced by a ref: by
/// [`TaskWorktree::remove`], or when dropped, both of which first keep what is not recorded
/// yet under `refs/tlv4/runs/…` ([`keep_run`]). When even that fails, the checkout stays,
/// registered and locked in this process's name, for `resume` to recover.
pub struct TaskWorktree {
    checkout: Checkout,
    store: Store,
    sid: SessionId,
    task: TaskId,
    branch: String,
    from: ObjectId,
    run: Option<(String, u32)>,
    /// A candidate's number (best of N): the checkout is detached at `from`, and its snapshot
    /// goes to `branch`, the candidate's own `refs/tlv4/runs/…` ref, created there.
    candidate: Option<u32>,
    /// Trailers a candidate's snapshot adds (its agent, outcome and spend), as `Key: value`.
    trailers: Vec<String>,
    recorded: Mutex<Recorded>,
}

/// Where the worker's work stands as far as this worktree knows.
#[derive(Debug, Clone)]
struct Recorded {
    /// The commit the worker's changes are measured against: the branch tip at creation,
    /// then the last snapshot.
    base: ObjectId,
    /// The ref and commit that keep the worktree's content beyond `base` as last recorded:
    /// the task branch after a snapshot, a `refs/tlv4/runs/…` ref after a refused one.
    kept: Option<(String, ObjectId)>,
    /// The limits of the last snapshot, for keeping work when the worktree is removed.
    limits: SnapshotLimits,
}

/// The worktree's changes over a base, staged into a private index and written as a tree.
struct Built {
    inspection: Inspection,
    /// The base with the changes that pass the checks.
    tree: ObjectId,
    /// The base's own tree.
    base_tree: ObjectId,
    /// The task branch's tip.
    tip: Option<ObjectId>,
}

impl TaskWorktree {
    /// Checks out the branch of `task` (created at `from`, the session tip; an existing one is
    /// reused when it points at `from` or a descendant of it) in a new locked worktree.
    ///
    /// The role and attempt recorded by snapshots are the task's at `from`; call
    /// [`TaskWorktree::with_run`] when the task is not in the state there.
    pub fn create(
        store: &Store,
        sid: &SessionId,
        task: &TaskId,
        from: ObjectId,
    ) -> Result<TaskWorktree> {
        let branch = task_ref(sid, task);
        // Checked for first: a branch someone has checked out is never moved. An idle kept
        // checkout still on it (a run killed while giving it back) holds nothing: it is
        // detached where the branch is.
        let common = store.repo().common_dir().to_path_buf();
        let holders: Vec<PathBuf> = store
            .checked_out_in(&branch)
            .into_iter()
            .filter(|dir| !pool::detach_if_idle(&common, dir, &branch))
            .collect();
        if let Some(dir) = holders.into_iter().next() {
            return Err(Error::state(
                format!(
                    "task branch `{}` is already checked out in `{}`",
                    short(&branch),
                    dir.display()
                ),
                Some(format!(
                    "if no worker runs there any more, remove it: git worktree unlock {0}; git worktree remove --force {0}",
                    dir.display()
                )),
            ));
        }
        let base = if store.create_ref(&branch, from, &format!("task branch of {task}"))? {
            from
        } else {
            existing_branch(store, &branch, from)?
        };
        // The reason names this process, so `resume` can clear the checkout of one that died.
        let reason = format!("{} ({sid} {task})", tlv4_core::git::lock_reason());
        let checkout = Checkout::for_agent(store, &reason, pool::Target::Branch(&branch))?;
        Ok(TaskWorktree {
            checkout,
            store: Store::from_repo(store.repo().clone())?,
            sid: sid.clone(),
            task: task.clone(),
            branch,
            from,
            run: task_at(store, sid, task, from).map(|t| (t.role.to_string(), t.attempts)),
            candidate: None,
            trailers: Vec::new(),
            recorded: Mutex::new(Recorded {
                base,
                kept: None,
                limits: SnapshotLimits::default(),
            }),
        })
    }

    /// A checkout for candidate `number` of attempt `attempt` of `task` (best of N), detached
    /// at `from`, the session tip: no branch moves. Its snapshot is a commit on `from` that
    /// [`candidate_ref`] keeps (created only), taken also when the candidate changed nothing,
    /// so that every candidate is kept whatever becomes of it.
    pub fn candidate(
        store: &Store,
        sid: &SessionId,
        task: &TaskId,
        from: ObjectId,
        (role, attempt): (&str, u32),
        number: u32,
    ) -> Result<TaskWorktree> {
        let reason = format!(
            "{} ({sid} {task} candidate {number})",
            tlv4_core::git::lock_reason()
        );
        let checkout = Checkout::for_agent(store, &reason, pool::Target::Detached(from))?;
        Ok(TaskWorktree {
            checkout,
            store: Store::from_repo(store.repo().clone())?,
            sid: sid.clone(),
            task: task.clone(),
            branch: candidate_ref(sid, task, attempt, number),
            from,
            run: Some((role.to_owned(), attempt)),
            candidate: Some(number),
            trailers: Vec::new(),
            recorded: Mutex::new(Recorded {
                base: from,
                kept: None,
                limits: SnapshotLimits::default(),
            }),
        })
    }

    /// Adds trailers (`Tlv4-` and the key, then the value on one line) to a candidate's
    /// snapshot commit: what a later run needs to know of it without running it again.
    pub fn add_trailers<'a>(&mut self, trailers: impl IntoIterator<Item = (&'a str, String)>) {
        for (key, value) in trailers {
            self.trailers
                .push(format!("Tlv4-{key}: {}", one_line(&value)));
        }
    }

    /// Prepares the checkout by `plan` at the commit it was made from, like the tester's
    /// ([`ScratchCheckout::prepare`]), for agents that run commands.
    pub fn prepare(
        &mut self,
        plan: &tlv4_core::environment::Plan,
        timeout: std::time::Duration,
    ) -> Result<std::result::Result<prepare::Prepared, prepare::NotPrepared>> {
        let repo = self.store.repo().clone();
        let from = self.recorded().base;
        self.checkout.prepare(&repo, from, plan, timeout)
    }

    /// Bounds the disk its pool keeps by `max_disk` (`[environment] max_disk`) when it goes
    /// back.
    pub fn bound(&mut self, max_disk: Option<u64>) {
        if let Some(l) = &mut self.checkout.lease {
            l.bound(max_disk);
        }
    }

    /// The commits the agent made in its checkout's own git directory (see
    /// [`pool::Lease::private_git`]), newest first, as `<short id> <subject>`: read with gix,
    /// with no configuration of that directory's (which the agent could have written), and only
    /// the commits the repository does not have. At most [`AGENT_COMMITS_SHOWN`].
    fn agent_commits(&self) -> Vec<String> {
        let Some(dir) = self.checkout.lease.as_ref().and_then(|l| l.own_git()) else {
            return Vec::new();
        };
        let Ok(own) = gix::open_opts(&dir, gix::open::Options::isolated()) else {
            return Vec::new();
        };
        let Ok(head) = own.head_id() else {
            return Vec::new();
        };
        let ours = self.store.repo();
        let mut out = Vec::new();
        let mut next = Some(head.detach());
        while let Some(id) = next.take() {
            if ours.has_object(id) || out.len() >= AGENT_COMMITS_SHOWN {
                break;
            }
            let Ok(commit) = own.find_commit(id) else {
                break;
            };
            let message = commit.message_raw_sloppy().to_string();
            let subject = message.lines().next().unwrap_or_default();
            out.push(format!("{} {}", id.to_hex_with_len(7), one_line(subject)));
            next = commit.parent_ids().next().map(|p| p.detach());
        }
        out
    }

    /// Sets the role and attempt number that snapshot commits record.
    pub fn with_run(mut self, role: impl Into<String>, attempt: u32) -> TaskWorktree {
        self.run = Some((role.into(), attempt));
        self
    }

    /// The root of the checkout, where the worker runs.
    pub fn path(&self) -> &Path {
        &self.checkout.path
    }

    /// The full name of the task branch.
    pub fn branch(&self) -> &str {
        &self.branch
    }

    /// The session tip the worktree was created from.
    pub fn from(&self) -> ObjectId {
        self.from
    }

    /// The commit the next snapshot is taken on: the branch tip when the worktree was made,
    /// then the last snapshot.
    pub fn base(&self) -> ObjectId {
        self.recorded().base
    }

    /// The task.
    pub fn task(&self) -> &TaskId {
        &self.task
    }

    fn recorded(&self) -> std::sync::MutexGuard<'_, Recorded> {
        // A panic while holding the lock leaves plain data behind, still valid.
        self.recorded
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Lists what the worker changed relative to [`TaskWorktree::base`] and checks every path
    /// against `limits`, without recording anything. Commits the worker made on the task
    /// branch count as its changes (a snapshot takes them as one commit); what it staged in
    /// its own index does not matter. Nothing in the worktree is changed.
    pub fn inspect(&self, limits: &SnapshotLimits) -> Result<Inspection> {
        let base = self.recorded().base;
        Ok(self.build(base, limits, false)?.inspection)
    }

    /// Records what the worker changed as one commit on the task branch: subject
    /// `<TASK>: snapshot (<role>)`, trailers `Tlv4-Session`, `Tlv4-Task`, `Tlv4-Role`,
    /// `Tlv4-Event: task_snapshot` and `Tlv4-Attempt`, authored by the store's identity.
    ///
    /// Every changed path is checked first ([`TaskWorktree::inspect`]). If any is refused
    /// (or the worker moved `HEAD` or the branch), the branch is not moved: the changes that
    /// pass the checks are committed on the base as `<TASK>: refused snapshot (<role>)`
    /// (`Tlv4-Event: task_snapshot_refused`) and kept under `refs/tlv4/runs/<SID>/<TASK>/<n>`
    /// ([`Snapshot::kept`]), and [`Snapshot::refused`] names each refused path and the rule
    /// it breaks. Changes under `.tlv4/` are left out ([`Snapshot::ignored`]), and so are new
    /// files in generated directories ([`Snapshot::left_out`]). No change, no commit.
    ///
    /// The changes are staged into a private index filled from the base, never the worker's
    /// own, so neither a sparse checkout nor what the worker did to its index or `HEAD`
    /// changes what is recorded.
    pub fn snapshot(&self, limits: &SnapshotLimits) -> Result<Snapshot> {
        let (role, attempt) = self.run.clone().ok_or_else(|| {
            Error::state(
                format!(
                    "task {} is not in the state of session `{}` at {}, so a snapshot does not know its role and attempt",
                    self.task, self.sid, self.from
                ),
                Some("create the worktree from the session tip after claiming the task, or set them with `with_run`".to_owned()),
            )
        })?;
        let mut recorded = self.recorded();
        recorded.limits = limits.clone();
        let base = recorded.base;
        let Built {
            inspection,
            tree,
            base_tree,
            tip,
        } = self.build(base, limits, true)?;
        let mut snap = Snapshot {
            commit: None,
            changed: inspection.changed,
            ignored: inspection.ignored,
            left_out: inspection.left_out,
            refused: inspection.rejected,
            kept: None,
        };
        if let Some(number) = self.candidate {
            let mut message = if snap.refused.is_empty() {
                snapshot_message(
                    &self.sid,
                    &self.task,
                    &role,
                    attempt,
                    &snap,
                    &self.agent_commits(),
                )
            } else {
                kept_message(
                    &self.sid,
                    &self.task,
                    &role,
                    attempt,
                    "refused snapshot",
                    REFUSED_EVENT,
                    &snap,
                )
            };
            message.push_str(&format!("Tlv4-Candidate: {number}\n"));
            for t in &self.trailers {
                message.push_str(t);
                message.push('\n');
            }
            let commit = self.write_commit(tree, base, &message)?;
            if !self.store.create_ref(
                &self.branch,
                commit,
                &format!("git-tlv4: candidate {number} of {}", self.task),
            )? {
                return Err(Error::state(
                    format!(
                        "`{}` exists already; candidate {number} of {} is not kept there",
                        self.branch, self.task
                    ),
                    Some(format!("look at it with `git show --stat {}`", self.branch)),
                ));
            }
            recorded.kept = Some((self.branch.clone(), commit));
            if snap.refused.is_empty() {
                if tree == base_tree {
                    snap.changed.clear();
                }
                snap.commit = Some(commit);
            } else {
                snap.kept = Some(Kept {
                    name: self.branch.clone(),
                    commit,
                });
            }
            return Ok(snap);
        }
        if !snap.refused.is_empty() {
            if tree != base_tree {
                let message = kept_message(
                    &self.sid,
                    &self.task,
                    &role,
                    attempt,
                    "refused snapshot",
                    REFUSED_EVENT,
                    &snap,
                );
                let commit = self.write_commit(tree, base, &message)?;
                let name = keep_run(
                    &self.store,
                    &self.sid,
                    &self.task,
                    attempt,
                    commit,
                    &format!("refused snapshot of {}, attempt {attempt}", self.task),
                )?;
                recorded.kept = Some((name.clone(), commit));
                snap.kept = Some(Kept { name, commit });
            }
            return Ok(snap);
        }
        let tip = tip
            .ok_or_else(|| Error::Git(format!("task branch `{}` vanished", short(&self.branch))))?;
        if tree == base_tree {
            // Nothing to take; commits the worker made that undo each other are dropped.
            if tip != base {
                self.store.update_ref(
                    &self.branch,
                    tip,
                    base,
                    &format!("git-tlv4: {} changed nothing", self.task),
                )?;
            }
            recorded.kept = Some((self.branch.clone(), base));
            snap.changed.clear();
            return Ok(snap);
        }
        let commits = self.agent_commits();
        let message = snapshot_message(&self.sid, &self.task, &role, attempt, &snap, &commits);
        let commit = self.write_commit(tree, base, &message)?;
        // The worker's own commits on the branch are in the snapshot: it replaces them.
        self.store.update_ref(
            &self.branch,
            tip,
            commit,
            &format!("git-tlv4: snapshot of {}", self.task),
        )?;
        // The worktree's index follows its branch (best effort: it is removed next).
        let _ = self.checkout.git_here(&["reset", "-q"]);
        recorded.base = commit;
        recorded.kept = Some((self.branch.clone(), commit));
        snap.commit = Some(commit);
        Ok(snap)
    }

    /// Removes the worktree (unlocked, its directory deleted), once what it holds is recorded:
    /// changes made since the last snapshot (or without one) are first kept under
    /// `refs/tlv4/runs/<SID>/<TASK>/<n>` (`<TASK>: unrecorded work (<role>)`,
    /// `Tlv4-Event: task_work_kept`), which is returned. Only what no snapshot may take
    /// (refused paths, `.tlv4/`, generated directories) goes with the worktree.
    ///
    /// When that cannot be recorded, the worktree is kept (still registered and locked) so that
    /// no work is lost, and the error says where it is.
    pub fn remove(mut self) -> Result<Option<Kept>> {
        match self.keep_unrecorded() {
            Ok(kept) => {
                self.checkout.teardown()?;
                Ok(kept)
            }
            Err(e) => {
                let path = self.checkout.keep();
                Err(Error::state(
                    format!(
                        "the worktree of {} was not removed: its work could not be recorded ({e}); it is kept at `{}`",
                        self.task,
                        path.display()
                    ),
                    Some(format!(
                        "`git tlv4 resume` keeps its work on the task branch and removes it once this process is gone; or by hand: git worktree unlock {0}; git worktree remove --force {0}",
                        path.display()
                    )),
                ))
            }
        }
    }

    /// Keeps what the worktree holds beyond what is recorded under a `refs/tlv4/runs/…` ref;
    /// the ref, when one was written.
    fn keep_unrecorded(&self) -> Result<Option<Kept>> {
        let mut recorded = self.recorded();
        let base = recorded.base;
        let limits = recorded.limits.clone();
        let built = self.build(base, &limits, true)?;
        let (role, attempt) = self.run.clone().unwrap_or_else(|| ("worker".to_owned(), 0));
        let keep = |commit: ObjectId, why: &str| {
            keep_run(&self.store, &self.sid, &self.task, attempt, commit, why)
        };
        if built.tree == built.base_tree {
            // Nothing beyond the base; the base itself stays referenced.
            if base != self.from
                && built.tip != Some(base)
                && recorded.kept.as_ref().map(|k| k.1) != Some(base)
            {
                let name = keep(base, &format!("snapshot of {}", self.task))?;
                recorded.kept = Some((name.clone(), base));
                return Ok(Some(Kept { name, commit: base }));
            }
            return Ok(None);
        }
        if let Some((name, commit)) = &recorded.kept
            && self.store.try_ref(name)? == Some(*commit)
            && self.store.commit_tree(*commit)? == built.tree
        {
            return Ok(None);
        }
        // Kept before (by an earlier process, or an earlier call): the same tree on the same base.
        let runs = crate::store::refs::runs_prefix(&self.sid, &self.task);
        for (_, id) in self.store.refs_with_prefix(&runs)? {
            let same = self.store.commit_tree(id)? == built.tree
                && self
                    .store
                    .repo()
                    .find_commit(id)
                    .ok()
                    .and_then(|c| c.parent_ids().next().map(|p| p.detach()))
                    == Some(base);
            if same {
                return Ok(None);
            }
        }
        let snap = Snapshot {
            commit: None,
            changed: built.inspection.changed,
            ignored: built.inspection.ignored,
            left_out: built.inspection.left_out,
            refused: built.inspection.rejected,
            kept: None,
        };
        let message = kept_message(
            &self.sid,
            &self.task,
            &role,
            attempt,
            "unrecorded work",
            KEPT_EVENT,
            &snap,
        );
        let commit = self.write_commit(built.tree, base, &message)?;
        let name = keep(commit, &format!("unrecorded work of {}", self.task))?;
        recorded.kept = Some((name.clone(), commit));
        Ok(Some(Kept { name, commit }))
    }

    /// Lists the worktree's changes over `base` in a private index filled from `base`, checks
    /// them, and (when `stage`) stages those that pass and writes the tree.
    fn build(&self, base: ObjectId, limits: &SnapshotLimits, stage: bool) -> Result<Built> {
        check_environment()?;
        let mut moved = Vec::new();
        let head = std::fs::read_to_string(self.checkout.admin.join("HEAD"))
            .map_err(|e| Error::io("cannot read the HEAD of the task worktree", e))?;
        let head = head.trim();
        let expected = match self.candidate {
            Some(_) => head.parse::<ObjectId>().ok() == Some(self.from),
            None => head.strip_prefix("ref: ") == Some(self.branch.as_str()),
        };
        if !expected {
            moved.push(Rejection {
                path: "HEAD".to_owned(),
                rule: Rule::HeadMoved {
                    head: head.to_owned(),
                },
            });
        }
        // A candidate has no branch: its snapshot is made on its base, always.
        let tip = match self.candidate {
            Some(_) => Some(base),
            None => self.branch_tip()?,
        };
        let builds_on_base = match tip {
            Some(t) if t == base => true,
            Some(t) => self
                .store
                .repo()
                .merge_base(base, t)
                .ok()
                .flatten()
                .is_some_and(|b| b.detach() == base),
            None => false,
        };
        if !builds_on_base {
            moved.push(Rejection {
                path: short(&self.branch).to_owned(),
                rule: Rule::BranchMoved {
                    tip: tip
                        .map_or_else(|| "nothing (it was deleted)".to_owned(), |t| t.to_string()),
                },
            });
        }
        let scratch = tempfile::tempdir()
            .map_err(|e| Error::io("cannot make a temporary directory for an index", e))?;
        let index = scratch.path().join("index");
        let hex = base.to_string();
        // A fresh index, not a copy of the worker's: its flags (`assume-unchanged`,
        // `skip-worktree`) and stat data could hide changes. Every file's content is compared.
        self.git_index(&index, &["read-tree", &hex])?;
        let out = self.git_index(
            &index,
            &[
                "status",
                "--porcelain=v1",
                "-z",
                "--untracked-files=all",
                "--ignored=no",
                "--no-renames",
            ],
        )?;
        // `git::run` decodes output as UTF-8; NUL-separated porcelain output survives that
        // for every UTF-8 path, and a path that is not UTF-8 comes back with U+FFFD in it,
        // which the checks reject (git would then add a file that is not there).
        let entries = check::parse_status(out.as_bytes())?;
        let base_tree = self.store.commit_tree(base)?;
        let repo = self.store.repo();
        let root = repo
            .find_tree(base_tree)
            .map_err(|e| Error::git(&format!("cannot read the tree of {base}"), e))?;
        let has_dir = |dir: &str| {
            root.lookup_entry_by_path(dir)
                .ok()
                .flatten()
                .is_some_and(|e| e.mode().is_tree())
        };
        let mut inspection = check::inspect(&self.checkout.path, entries, limits, &has_dir);
        inspection.rejected.splice(0..0, moved);
        let mut tree = base_tree;
        if stage && !inspection.changed.is_empty() {
            let list = scratch.path().join("paths");
            let mut bytes = Vec::new();
            for c in &inspection.changed {
                bytes.extend_from_slice(c.path.as_bytes());
                bytes.push(0);
            }
            std::fs::write(&list, bytes)
                .map_err(|e| Error::io("cannot write the list of paths to take", e))?;
            let from_file = format!("--pathspec-from-file={}", utf8(&list)?);
            self.git_index(
                &index,
                &[
                    "--literal-pathspecs",
                    "add",
                    "-A",
                    &from_file,
                    "--pathspec-file-nul",
                ],
            )?;
            tree = self
                .git_index(&index, &["write-tree"])?
                .trim()
                .parse()
                .map_err(|_| Error::Git("`git write-tree` did not print a tree id".to_owned()))?;
        }
        Ok(Built {
            inspection,
            tree,
            base_tree,
            tip,
        })
    }

    /// Runs git in the worktree with the index at `index`.
    fn git_index(&self, index: &Path, args: &[&str]) -> Result<String> {
        let mut all = self.checkout.git_args()?;
        all.extend_from_slice(args);
        tlv4_core::git::run_with_index(&self.checkout.path, index, &all)
    }

    /// Writes a commit of `tree` on `base` with the store's identity.
    fn write_commit(&self, tree: ObjectId, base: ObjectId, message: &str) -> Result<ObjectId> {
        let sig = self.store.signature();
        let commit = gix::objs::Commit {
            tree,
            parents: [base].into_iter().collect(),
            author: sig.clone(),
            committer: sig,
            encoding: None,
            message: message.into(),
            extra_headers: Vec::new(),
        };
        Ok(self
            .store
            .repo()
            .write_object(&commit)
            .map_err(|e| Error::git(&format!("cannot write the snapshot of {}", self.task), e))?
            .detach())
    }

    fn branch_tip(&self) -> Result<Option<ObjectId>> {
        self.store.try_ref(&self.branch)
    }
}

impl Drop for TaskWorktree {
    fn drop(&mut self) {
        if !self.checkout.live {
            return;
        }
        // Never delete what is not recorded: keep it under a ref first, or keep the checkout.
        match self.keep_unrecorded() {
            Ok(_) => {
                let _ = self.checkout.teardown();
            }
            Err(_) => {
                self.checkout.keep();
            }
        }
    }
}

/// The session and task a task checkout at `path` works for, from the reason of its lock:
/// `git-tlv4 pid N on HOST … (SID TASK)`. `None` for any other checkout (a read-only view,
/// a test checkout, someone else's).
pub fn checkout_task(common_dir: &Path, path: &Path) -> Option<(SessionId, TaskId)> {
    admin_task(&admin_dir_of(common_dir, path)?)
}

/// [`checkout_task`] from the checkout's admin folder.
fn admin_task(admin: &Path) -> Option<(SessionId, TaskId)> {
    let reason = std::fs::read_to_string(admin.join("locked")).ok()?;
    let (s, t) = tlv4_core::git::LockReason::parse(&reason)?
        .what?
        .split_once(' ')?;
    Some((s.parse().ok()?, t.parse().ok()?))
}

/// Keeps the work left in `path`, the task checkout of a git-tlv4 process that is gone,
/// under `refs/tlv4/runs/<SID>/<TASK>/<n>`: what passes the snapshot checks (`limits`),
/// measured against the last recorded commit of the task branch (its last snapshot, or the
/// commit it forked from), commits the agent made on the branch included — the branch is then
/// moved back to that commit, so that no unchecked commit is ever merged. Returns the ref;
/// `None` when there was nothing to keep or `path` is not a task checkout (a read-only view,
/// a test checkout). The checkout itself is left for the caller to remove.
pub fn keep_abandoned(
    store: &Store,
    path: &Path,
    limits: &SnapshotLimits,
) -> Result<Option<String>> {
    let common_dir = std::path::absolute(store.repo().common_dir())
        .map_err(|e| Error::io("cannot resolve the git directory", e))?;
    let Some(admin) = admin_dir_of(&common_dir, path) else {
        return Ok(None);
    };
    let Some((sid, task)) = admin_task(&admin) else {
        return Ok(None);
    };
    let branch = task_ref(&sid, &task);
    let session_tip = store.tip(&sid)?;
    let tip = store.try_ref(&branch)?;
    let Some(tip) = tip else {
        return Err(Error::state(
            format!(
                "the task branch `{}` of the checkout `{}` is gone",
                short(&branch),
                path.display()
            ),
            Some(format!(
                "look at the checkout, then remove it: git worktree unlock {0}; git worktree remove --force {0}",
                path.display()
            )),
        ));
    };
    let base = last_recorded(store, tip, session_tip)?;
    let worktree = TaskWorktree {
        checkout: Checkout {
            common_dir,
            admin,
            path: path.to_path_buf(),
            parent: None,
            live: false,
            on_drop: OnDrop::Keep,
            lease: None,
            grown: false,
        },
        store: Store::from_repo(store.repo().clone())?,
        sid: sid.clone(),
        task: task.clone(),
        branch: branch.clone(),
        from: base,
        run: task_at(store, &sid, &task, session_tip).map(|t| (t.role.to_string(), t.attempts)),
        candidate: None,
        trailers: Vec::new(),
        recorded: Mutex::new(Recorded {
            base,
            kept: None,
            limits: limits.clone(),
        }),
    };
    let kept = worktree.keep_unrecorded()?;
    let elsewhere = store
        .checked_out_in(&branch)
        .into_iter()
        .any(|dir| std::fs::canonicalize(&dir).ok() != std::fs::canonicalize(path).ok());
    if tip != base && !elsewhere {
        store.update_ref(
            &branch,
            tip,
            base,
            &format!(
                "git-tlv4: unchecked commits of {task} kept under {}",
                crate::store::refs::RUNS_REF_PREFIX.trim_end_matches('/')
            ),
        )?;
    }
    Ok(kept.map(|k| k.name))
}

pub use tlv4_core::git::admin_dir_of;

/// The last commit on the first-parent line of `tip` that the tool recorded: one the session
/// at `session_tip` contains, or a snapshot commit; `tip` when there is none.
fn last_recorded(store: &Store, tip: ObjectId, session_tip: ObjectId) -> Result<ObjectId> {
    let repo = store.repo();
    let mut at = tip;
    for _ in 0..1000 {
        let in_session = at == session_tip
            || repo
                .merge_base(at, session_tip)
                .ok()
                .flatten()
                .is_some_and(|b| b.detach() == at);
        let commit = repo
            .find_commit(at)
            .map_err(|e| Error::git(&format!("cannot read commit {at}"), e))?;
        let message = commit.message_raw_sloppy().to_string();
        if in_session || message.contains(&format!("\nTlv4-Event: {SNAPSHOT_EVENT}\n")) {
            return Ok(at);
        }
        match commit.parent_ids().next() {
            Some(p) => at = p.detach(),
            None => break,
        }
    }
    Ok(tip)
}

/// The tip of an existing task branch, when it may be reused: it is `from` or descends
/// from it.
fn existing_branch(store: &Store, branch: &str, from: ObjectId) -> Result<ObjectId> {
    let tip = store.try_ref(branch)?.ok_or_else(|| {
        Error::conflict(
            format!(
                "task branch `{}` was deleted while it was being created",
                short(branch)
            ),
            Some("re-run the command".to_owned()),
        )
    })?;
    if tip == from {
        return Ok(tip);
    }
    let base = store
        .repo()
        .merge_base(from, tip)
        .map_err(|e| Error::git(&format!("cannot compare `{branch}` with {from}"), e))?
        .map(|b| b.detach());
    if base == Some(from) {
        return Ok(tip);
    }
    if base == Some(tip) {
        // Everything on the branch is in the session already (a merged earlier run): start
        // from the session tip.
        store.update_ref(
            branch,
            tip,
            from,
            "git-tlv4: task branch to the session tip",
        )?;
        return Ok(from);
    }
    Err(Error::state(
        format!(
            "task branch `{}` exists at {tip}, which does not build on the session tip {from}",
            short(branch)
        ),
        Some(format!(
            "look at it with `git log {}`; delete it (`git branch -D {0}`) to start the task afresh",
            short(branch)
        )),
    ))
}

/// The task as stored at `commit`, when the session state there has it.
fn task_at(store: &Store, sid: &SessionId, task: &TaskId, commit: ObjectId) -> Option<Task> {
    let tree = store.commit_tree(commit).ok()?;
    let bytes = store
        .read_blob_at(tree, &format!("{}/tasks/{task}.toml", session_dir(sid)))
        .ok()??;
    toml::from_str(std::str::from_utf8(&bytes).ok()?).ok()
}

/// The `Tlv4-Event` of a refused snapshot's commit, kept under `refs/tlv4/runs/…`.
pub const REFUSED_EVENT: &str = "task_snapshot_refused";

/// The `Tlv4-Event` of the commit keeping unrecorded work when a worktree is removed.
pub const KEPT_EVENT: &str = "task_work_kept";

/// The commit message of a snapshot; `agent_commits` (see `TaskWorktree::agent_commits`) are
/// named before the trailers: what the agent committed, taken as files, not as history.
fn snapshot_message(
    sid: &SessionId,
    task: &TaskId,
    role: &str,
    attempt: u32,
    snap: &Snapshot,
    agent_commits: &[String],
) -> String {
    let mut msg = format!("{task}: snapshot ({})\n\n", one_line(role));
    msg.push_str(&summary_lines(snap));
    if !agent_commits.is_empty() {
        msg.push_str("\nCommits the agent made (their changes are in this snapshot):\n");
        for c in agent_commits {
            msg.push_str(&format!("  {c}\n"));
        }
    }
    msg.push_str(&trailers(sid, task, role, SNAPSHOT_EVENT, attempt));
    msg
}

/// How many of an agent's own commits a snapshot message names.
pub const AGENT_COMMITS_SHOWN: usize = 20;

/// The commit message of work kept under `refs/tlv4/runs/…`: a refused snapshot or work
/// found when the worktree was removed.
fn kept_message(
    sid: &SessionId,
    task: &TaskId,
    role: &str,
    attempt: u32,
    what: &str,
    event: &str,
    snap: &Snapshot,
) -> String {
    let mut msg = format!("{task}: {what} ({})\n\n", one_line(role));
    msg.push_str(&summary_lines(snap));
    if !snap.refused.is_empty() {
        msg.push_str("Not taken (refused):\n");
        for r in &snap.refused {
            msg.push_str(&format!("  {}\n", one_line(&r.to_string())));
        }
    }
    msg.push_str(&trailers(sid, task, role, event, attempt));
    msg
}

fn summary_lines(snap: &Snapshot) -> String {
    let count = |kind: ChangeKind| snap.changed.iter().filter(|c| c.kind == kind).count();
    let mut msg = format!(
        "What the worker changed: {} added, {} modified, {} deleted.\n",
        count(ChangeKind::Added),
        count(ChangeKind::Modified),
        count(ChangeKind::Deleted)
    );
    if !snap.ignored.is_empty() {
        msg.push_str(&format!(
            "Left out: {} change(s) under {PIPELINE_FOLDER}/, which only git-tlv4 writes.\n",
            snap.ignored.len()
        ));
    }
    if !snap.left_out.is_empty() {
        let dirs: Vec<String> = snap
            .left_out
            .iter()
            .map(|l| one_line(&l.to_string()))
            .collect();
        msg.push_str(&format!("Left out as generated: {}.\n", dirs.join(", ")));
    }
    msg
}

fn trailers(sid: &SessionId, task: &TaskId, role: &str, event: &str, attempt: u32) -> String {
    format!(
        "\nTlv4-Session: {sid}\nTlv4-Task: {task}\nTlv4-Role: {}\nTlv4-Event: {event}\nTlv4-Attempt: {attempt}\n",
        one_line(role)
    )
}

// A branch name without `refs/heads/`, as the git CLI takes it.
use crate::store::refs::short_branch as short;

/// Refuses to run git in a worktree when the environment would send it elsewhere: git sets
/// `GIT_INDEX_FILE` for its hooks, and a command started from one would stage into the
/// user's index.
fn check_environment() -> Result<()> {
    if std::env::var_os("GIT_INDEX_FILE").is_some() {
        return Err(Error::state(
            "GIT_INDEX_FILE is set (git-tlv4 was started from a git hook?); a worker's changes would be staged into that index",
            Some("run git tlv4 outside git hooks, or unset GIT_INDEX_FILE".to_owned()),
        ));
    }
    Ok(())
}

/// Runs `f` while no other thread of this process adds or removes a worktree.
/// Serialises this process's `git worktree add` and `remove`: git reads every registered
/// worktree while adding one, and fails on one that another thread is half-way through
/// creating.
static ADMIN: Mutex<()> = Mutex::new(());

pub(crate) fn with_admin_lock<T>(f: impl FnOnce() -> T) -> T {
    let _admin = ADMIN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    f()
}

/// `git worktree add …`, one at a time in this process, retried a few times when another
/// process's half-made worktree got in the way.
fn add_worktree(dir: &Path, args: &[&str]) -> Result<()> {
    let mut tries = 0;
    loop {
        let done = {
            let _admin = ADMIN
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            tlv4_core::git::run(dir, args)
        };
        match done {
            Err(Error::Git(msg))
                if tries < 5 && msg.contains("/worktrees/") && msg.contains("failed to read") =>
            {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(20 * tries));
            }
            other => return other.map(|_| ()),
        }
    }
}

/// Adds or removes the write permission of every file and directory under `root` (not the
/// root's `.git` file, not through symlinks). Directories are made writable before their
/// contents and read-only after them.
fn set_writable(root: &Path, writable: bool) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fn walk(dir: &Path, top: bool, writable: bool) -> std::io::Result<()> {
        let set = |path: &Path, meta: &std::fs::Metadata| {
            let mode = meta.permissions().mode();
            let mode = if writable {
                mode | 0o200
            } else {
                mode & !0o222
            };
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        };
        let meta = std::fs::symlink_metadata(dir)?;
        if writable {
            set(dir, &meta)?;
        }
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            if top && entry.file_name() == ".git" {
                continue;
            }
            let path = entry.path();
            let meta = std::fs::symlink_metadata(&path)?;
            if meta.is_dir() {
                walk(&path, false, writable)?;
            } else if meta.is_file() {
                set(&path, &meta)?;
            }
        }
        if !writable {
            set(dir, &meta)?;
        }
        Ok(())
    }
    walk(root, true, writable)
}

/// What dropping a [`Checkout`] that was neither removed nor kept does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OnDrop {
    /// Removes it: nothing in it is anyone's work (a read-only view).
    Remove,
    /// Leaves it in place (its owner decides, see [`TaskWorktree`]'s `Drop`).
    Keep,
}

/// A linked worktree under a temporary directory, and how to run git in it.
///
/// Always a full checkout: a sparse-checkout of the user's (`git sparse-checkout`, cone or
/// not) is turned off for it, so a worker sees every file and its changes anywhere can be
/// taken.
struct Checkout {
    /// The repository's common git directory, for `git worktree` commands.
    common_dir: PathBuf,
    /// The worktree's own git directory (`<common>/worktrees/<name>`), read once when it was
    /// made: the worker can rewrite the `.git` file in its checkout, not this.
    admin: PathBuf,
    /// The checkout.
    path: PathBuf,
    /// The temporary directory holding it; `None` once kept.
    parent: Option<tempfile::TempDir>,
    /// Whether it still needs removing.
    live: bool,
    /// What a drop does while it is live.
    on_drop: OnDrop,
    /// The pool slot it is leased from; teardown gives it back instead of removing it.
    lease: Option<pool::Lease>,
    /// Whether what it holds beyond git grew (a setup ran): its size is measured on release.
    grown: bool,
}

/// Options for every git command on a checkout: no sparse checkout (the checkout is full
/// whatever the repository's worktrees use), no file-system monitor daemon.
const CHECKOUT_CONFIG: [&str; 4] = [
    "-c",
    "core.sparseCheckout=false",
    "-c",
    "core.fsmonitor=false",
];

impl Checkout {
    /// Runs `git worktree add --lock --reason REASON <tmp>/<name> TARGET…`. When that fails,
    /// whatever git registered of the new worktree is removed again.
    fn add(
        store: &Store,
        prefix: &str,
        name: &str,
        reason: &str,
        target: &[&str],
        on_drop: OnDrop,
    ) -> Result<Checkout> {
        check_environment()?;
        let parent = tempfile::Builder::new()
            .prefix(prefix)
            .tempdir()
            .map_err(|e| Error::io("cannot make a temporary directory for a worktree", e))?;
        let inside =
            |tmp: &Path, dir: &Path| match (std::fs::canonicalize(tmp), std::fs::canonicalize(dir))
            {
                (Ok(t), Ok(d)) => t.starts_with(d),
                _ => false,
            };
        let common_dir = std::path::absolute(store.repo().common_dir())
            .map_err(|e| Error::io("cannot resolve the git directory", e))?;
        if inside(parent.path(), store.workdir()) || inside(parent.path(), &common_dir) {
            return Err(Error::state(
                format!(
                    "the temporary directory `{}` is inside the repository; a worker must not run in your checkout",
                    parent.path().display()
                ),
                Some("point TMPDIR somewhere outside the repository".to_owned()),
            ));
        }
        let path = parent.path().join(name);
        Checkout::register(&common_dir, parent.path(), &path, reason, target)?;
        let mut checkout = Checkout {
            common_dir: common_dir.clone(),
            admin: PathBuf::new(),
            path: path.clone(),
            parent: Some(parent),
            live: true,
            on_drop: OnDrop::Remove,
            lease: None,
            grown: false,
        };
        let gitfile = std::fs::read_to_string(path.join(".git"))
            .map_err(|e| Error::io("cannot read the `.git` file of a new worktree", e))?;
        checkout.admin = gitfile
            .trim()
            .strip_prefix("gitdir: ")
            .map(|g| path.join(g))
            .ok_or_else(|| Error::Git(format!("`{}/.git` is not a gitfile", path.display())))?;
        // `worktree add` copies the sparse-checkout settings of the user's worktree into the
        // new one's config: turn them off there too, for the worker's own git commands.
        let own_config = checkout.admin.join("config.worktree");
        if own_config.exists() {
            let file = utf8(&own_config)?.to_owned();
            tlv4_core::git::run(
                &checkout.path,
                &["config", "--file", &file, "core.sparseCheckout", "false"],
            )?;
        }
        let _ = std::fs::remove_file(checkout.admin.join("info").join("sparse-checkout"));
        checkout.on_drop = on_drop;
        Ok(checkout)
    }

    /// Runs `git worktree add --lock --reason REASON PATH TARGET…` from `cwd`. When that
    /// fails, whatever git registered of the new worktree is removed again.
    fn register(
        common_dir: &Path,
        cwd: &Path,
        path: &Path,
        reason: &str,
        target: &[&str],
    ) -> Result<()> {
        let path_str = utf8(path)?;
        let common = utf8(common_dir)?;
        let mut args = vec!["--git-dir", common];
        args.extend_from_slice(&CHECKOUT_CONFIG);
        args.extend_from_slice(&[
            "worktree", "add", "--quiet", "--lock", "--reason", reason, path_str,
        ]);
        args.extend_from_slice(target);
        if let Err(e) = add_worktree(cwd, &args) {
            // A checkout that failed half-way (a filter that failed, a full disk) may be
            // registered, and locked: nothing of anyone's is in it yet.
            with_admin_lock(|| {
                let run = |a: &[&str]| {
                    tlv4_core::git::run(common_dir, &[&["--git-dir", common], a].concat())
                };
                if run(&["worktree", "unlock", path_str]).is_ok() {
                    let _ = run(&["worktree", "remove", "--force", "--force", path_str]);
                }
            });
            return Err(e);
        }
        Ok(())
    }

    /// A checkout leased from the repository's pool of `purpose`, moved to `target`.
    /// An agent's checkout from the pool, kept when dropped (what it holds is recorded
    /// first); its agent commits into a git directory of its own, never the repository's.
    fn for_agent(store: &Store, reason: &str, target: pool::Target<'_>) -> Result<Checkout> {
        let checkout = Checkout::leased(store, pool::Purpose::Agent, reason, target, OnDrop::Keep)?;
        if let Some(lease) = &checkout.lease {
            lease.private_git(store)?;
        }
        Ok(checkout)
    }

    fn leased(
        store: &Store,
        purpose: pool::Purpose,
        reason: &str,
        target: pool::Target<'_>,
        on_drop: OnDrop,
    ) -> Result<Checkout> {
        check_environment()?;
        let pool = pool::Pool::open(store, None)?;
        let lease = pool.lease(store, purpose, reason, target)?;
        Ok(Checkout {
            common_dir: std::path::absolute(store.repo().common_dir())
                .map_err(|e| Error::io("cannot resolve the git directory", e))?,
            admin: lease.admin.clone(),
            path: lease.path.clone(),
            parent: None,
            live: true,
            on_drop,
            lease: Some(lease),
            grown: false,
        })
    }

    /// The options that run git on the worktree's own git directory, in its root.
    fn git_args(&self) -> Result<Vec<&str>> {
        let mut all = CHECKOUT_CONFIG.to_vec();
        all.extend_from_slice(&[
            "--git-dir",
            utf8(&self.admin)?,
            "--work-tree",
            utf8(&self.path)?,
        ]);
        Ok(all)
    }

    /// Runs git on the worktree's own git directory, in its root.
    fn git_here(&self, args: &[&str]) -> Result<String> {
        let mut all = self.git_args()?;
        all.extend_from_slice(args);
        tlv4_core::git::run(&self.path, &all)
    }

    /// Unlocks, removes (discarding changes) and prunes the worktree.
    fn teardown(&mut self) -> Result<()> {
        if !self.live {
            return Ok(());
        }
        if let Some(lease) = self.lease.take() {
            self.live = false;
            return lease.release(self.grown);
        }
        // A read-only view's directories must be writable for their files to be deleted.
        let _ = set_writable(&self.path, true);
        let common = utf8(&self.common_dir)?;
        let path = utf8(&self.path)?;
        let run = |args: &[&str]| {
            let mut all = vec!["--git-dir", common];
            all.extend_from_slice(args);
            tlv4_core::git::run(&self.common_dir, &all)
        };
        let _admin = ADMIN
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Fails only when it is not locked (any more), which is what is wanted.
        let _ = run(&["worktree", "unlock", path]);
        tlv4_core::git::point_back(&self.common_dir, &self.path);
        let removed = run(&["worktree", "remove", "--force", path]);
        self.live = false;
        if removed.is_err() {
            // Its directory may be gone already: drop the registration. (Not on the normal
            // path: a prune racing another process's `worktree add` can drop that one.)
            run(&["worktree", "prune"])?;
            removed?;
        }
        Ok(())
    }

    /// Leaves the worktree in place: registered, locked, its directory not deleted.
    fn keep(&mut self) -> PathBuf {
        self.live = false;
        // Left for a person: `git worktree remove` (the hint) needs the `.git` file to point
        // at the registered admin folder, not at the agent's own git directory.
        tlv4_core::git::point_back(&self.common_dir, &self.path);
        if let Some(parent) = self.parent.take() {
            let _ = parent.keep();
        }
        self.path.clone()
    }
}

impl Drop for Checkout {
    fn drop(&mut self) {
        if !self.live {
            return;
        }
        match self.on_drop {
            // Best effort: a worktree nobody removes would stay registered (and locked) forever.
            OnDrop::Remove => {
                let _ = self.teardown();
            }
            OnDrop::Keep => {
                self.keep();
            }
        }
    }
}

fn utf8(path: &Path) -> Result<&str> {
    path.to_str().ok_or_else(|| {
        Error::Invalid(format!(
            "`{}` is not valid UTF-8; git-tlv4 needs UTF-8 paths for its worktrees",
            path.display()
        ))
    })
}
