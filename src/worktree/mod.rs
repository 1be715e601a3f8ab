//! Isolated checkouts for workers: a task worktree on its own branch, snapshotted into one
//! commit, and a read-only view of the session tip for document tasks.
//!
//! A worker never runs in the user's checkout. Its task gets the branch
//! `tlv4/<SID>.<TASK>`, forked from the session tip, checked out by `git worktree add` in a
//! fresh temporary directory and locked there while the worker runs. The git CLI does the
//! checkout, staging and commit (not gix) because it applies what the user configured for
//! this repository: `post-checkout` hooks, LFS and other smudge/clean filters, attributes.
//!
//! What the worker changed becomes one commit on the task branch ([`TaskWorktree::snapshot`]),
//! but only after every changed path passed the checks in [`SnapshotLimits`] (no symlink out
//! of the worktree, no `.git` below the root, no huge files, not too many files). Changes
//! under `.tlv4/` are never taken: only the tool writes the pipeline folder. The worktree is
//! removed ([`TaskWorktree::remove`]) only once the task branch points at that snapshot, so
//! nothing a worker produced is lost; a worktree dropped without `remove` is removed on a
//! best-effort basis (its branch stays).
//!
//! Merging a task branch back is an in-memory tree merge ([`merge_task`]) whose result the
//! coordinator records as a merge event with [`crate::store::Txn::merge`].

mod check;
mod merge;
#[cfg(test)]
mod tests;

pub use check::{Change, ChangeKind, Inspection, Rejection, Rule, SnapshotLimits};
pub use merge::{MergeOutcome, merge_task, overlapping};

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use gix::ObjectId;

use crate::error::{Error, Result};
use crate::model::{SessionId, Task, TaskId};
use crate::store::{SESSION_REF_PREFIX, Store, session_dir};

/// The `Tlv4-Event` trailer of a snapshot commit on a task branch.
pub const SNAPSHOT_EVENT: &str = "task_snapshot";

/// The folder only the tool writes; a worker's changes there are left out of its snapshot.
pub const PIPELINE_FOLDER: &str = ".tlv4";

/// The full ref name of the branch of task `task` in session `sid`.
pub fn task_ref(sid: &SessionId, task: &TaskId) -> String {
    format!("{SESSION_REF_PREFIX}{sid}.{task}")
}

/// The ref that keeps the unmerged work of attempt `attempt` of `task`.
pub fn attempt_ref(sid: &SessionId, task: &TaskId, attempt: u32) -> String {
    format!("refs/tlv4/runs/{sid}/{task}/{attempt}")
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
    let mut n = attempt.saturating_sub(1).max(1);
    let keep = loop {
        let name = attempt_ref(sid, task, n);
        if store.create_ref(&name, tip, &format!("git-tlv4: attempt {n} of {task}"))? {
            break name;
        }
        if store.try_ref(&name)? == Some(tip) {
            break name;
        }
        n += 1;
    };
    store.update_ref(
        &branch,
        tip,
        from,
        &format!("git-tlv4: attempt {attempt} of {task}"),
    )?;
    Ok(Some(keep))
}

/// What a snapshot recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The new commit on the task branch; `None` when the worker changed nothing that is taken.
    pub commit: Option<ObjectId>,
    /// The paths the commit changes, in path order.
    pub changed: Vec<Change>,
    /// Paths under `.tlv4/` the worker changed, which were left out.
    pub ignored: Vec<String>,
}

/// A worker's checkout: the task branch in a locked linked worktree under a temporary
/// directory.
pub struct TaskWorktree {
    checkout: Checkout,
    repo: gix::ThreadSafeRepository,
    sid: SessionId,
    task: TaskId,
    branch: String,
    from: ObjectId,
    run: Option<(String, u32)>,
    identity: (String, String),
    recorded: Mutex<Recorded>,
}

/// Where the task branch stands as far as this worktree knows.
#[derive(Debug, Clone, Copy)]
struct Recorded {
    /// The commit the worker's changes are measured against: the branch tip at creation,
    /// then the last snapshot.
    base: ObjectId,
    /// What the branch must point at for the worktree to be removed: set by a snapshot.
    snapshot: Option<ObjectId>,
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
        // Checked for first: a branch someone has checked out is never moved.
        if let Some(dir) = store.checked_out_in(&branch).into_iter().next() {
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
        let reason = format!("{} ({sid} {task})", crate::git::lock_reason());
        let checkout = Checkout::add(
            store,
            &format!("tlv4-{sid}.{task}-"),
            task.as_str(),
            &reason,
            &[short(&branch)],
        )?;
        let sig = store.signature();
        Ok(TaskWorktree {
            checkout,
            repo: store.repo().clone().into_sync(),
            sid: sid.clone(),
            task: task.clone(),
            branch,
            from,
            run: task_at(store, sid, task, from).map(|t| (t.role, t.attempts)),
            identity: (sig.name.to_string(), sig.email.to_string()),
            recorded: Mutex::new(Recorded {
                base,
                snapshot: None,
            }),
        })
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
    /// against `limits`, without committing. Commits the worker made on the task branch are
    /// undone into uncommitted changes first (a snapshot takes them as one commit), and
    /// anything it staged is unstaged; its files are left as they are.
    pub fn inspect(&self, limits: &SnapshotLimits) -> Result<Inspection> {
        let base = self.recorded().base;
        self.inspect_from(base, limits)
    }

    fn inspect_from(&self, base: ObjectId, limits: &SnapshotLimits) -> Result<Inspection> {
        check_environment()?;
        self.rewind(base)?;
        let mut entries = self.status()?;
        if entries.iter().any(check::StatusEntry::is_staged) {
            self.checkout.git_here(&["reset", "-q"])?;
            entries = self.status()?;
        }
        Ok(check::inspect(&self.checkout.path, entries, limits))
    }

    /// Records what the worker changed as one commit on the task branch: subject
    /// `<TASK>: snapshot (<role>)`, trailers `Tlv4-Session`, `Tlv4-Task`, `Tlv4-Role`,
    /// `Tlv4-Event: task_snapshot` and `Tlv4-Attempt`, authored by the store's identity.
    ///
    /// Every changed path is checked first ([`TaskWorktree::inspect`]); if any is rejected,
    /// nothing is committed and the error names each path and the rule it breaks. Changes
    /// under `.tlv4/` are left out and listed in [`Snapshot::ignored`]. No change, no commit.
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
        let base = recorded.base;
        let inspection = self.inspect_from(base, limits)?;
        if !inspection.rejected.is_empty() {
            return Err(self.rejected(&inspection.rejected));
        }
        if inspection.changed.is_empty() {
            recorded.snapshot = Some(base);
            return Ok(Snapshot {
                commit: None,
                changed: Vec::new(),
                ignored: inspection.ignored,
            });
        }
        let exclude = format!(":(exclude){PIPELINE_FOLDER}");
        self.checkout
            .git_here(&["add", "-A", "--", ".", exclude.as_str()])?;
        let message = snapshot_message(&self.sid, &self.task, &role, attempt, &inspection);
        let (name, email) = &self.identity;
        let user_name = format!("user.name={name}");
        let user_email = format!("user.email={email}");
        let author = format!("{name} <{email}>");
        // An unattended commit cannot ask for a signing passphrase.
        self.checkout.git_here(&[
            "-c",
            &user_name,
            "-c",
            &user_email,
            "-c",
            "commit.gpgSign=false",
            "commit",
            "--no-verify",
            "-q",
            "--author",
            &author,
            "-m",
            &message,
        ])?;
        let commit = self
            .branch_tip()?
            .ok_or_else(|| Error::Git(format!("task branch `{}` vanished", short(&self.branch))))?;
        let parent = self.first_parent(commit)?;
        if parent != Some(base) {
            return Err(Error::Git(format!(
                "the snapshot {commit} of {} is not a child of {base}",
                self.task
            )));
        }
        recorded.base = commit;
        recorded.snapshot = Some(commit);
        Ok(Snapshot {
            commit: Some(commit),
            changed: inspection.changed,
            ignored: inspection.ignored,
        })
    }

    /// Unlocks and removes the worktree, once the task branch points at the last snapshot.
    ///
    /// Before a snapshot, or when the branch has moved since, the worktree is kept (still
    /// registered and locked) so that no work is lost, and the error says where it is.
    pub fn remove(mut self) -> Result<()> {
        let snapshot = self.recorded().snapshot;
        let tip = match self.branch_tip() {
            Ok(tip) => tip,
            Err(e) => {
                // Whether the work is recorded is unknown: keep it.
                self.checkout.keep();
                return Err(e);
            }
        };
        let refusal = match snapshot {
            None => Some("no snapshot of it was taken".to_owned()),
            Some(s) if tip != Some(s) => Some(format!(
                "its branch `{}` no longer points at the snapshot {s}",
                short(&self.branch)
            )),
            Some(_) => None,
        };
        if let Some(why) = refusal {
            let path = self.checkout.keep();
            return Err(Error::state(
                format!(
                    "the worktree of {} was not removed: {why}; it is kept at `{}`",
                    self.task,
                    path.display()
                ),
                Some(format!(
                    "when nothing there is needed any more: git worktree unlock {0}; git worktree remove --force {0}",
                    path.display()
                )),
            ));
        }
        self.checkout.teardown()
    }

    fn rejected(&self, rejected: &[Rejection]) -> Error {
        let list: Vec<String> = rejected.iter().map(|r| format!("  {r}")).collect();
        Error::state(
            format!(
                "the changes of {} in `{}` cannot be taken:\n{}",
                self.task,
                self.checkout.path.display(),
                list.join("\n")
            ),
            Some("nothing was committed; fix or delete those paths, or discard the attempt".into()),
        )
    }

    /// Puts the task branch back at `base` when the worker committed on it (its commits
    /// become uncommitted changes), after checking `HEAD` is still on the branch.
    fn rewind(&self, base: ObjectId) -> Result<()> {
        let head = std::fs::read_to_string(self.checkout.admin.join("HEAD"))
            .map_err(|e| Error::io("cannot read the HEAD of the task worktree", e))?;
        let head = head.trim();
        if head.strip_prefix("ref: ") != Some(self.branch.as_str()) {
            return Err(Error::state(
                format!(
                    "the worker moved `HEAD` of the worktree of {} off its branch `{}` (it is `{head}`); its changes are not taken",
                    self.task,
                    short(&self.branch)
                ),
                Some(format!(
                    "switch `{}` back to `{}` or discard the attempt",
                    self.checkout.path.display(),
                    short(&self.branch)
                )),
            ));
        }
        if self.branch_tip()? != Some(base) {
            let hex = base.to_string();
            self.checkout.git_here(&["reset", "-q", &hex])?;
        }
        Ok(())
    }

    fn status(&self) -> Result<Vec<check::StatusEntry>> {
        let out = self.checkout.git_here_bytes(&[
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=all",
            "--ignored=no",
            "--no-renames",
        ])?;
        check::parse_status(&out)
    }

    fn branch_tip(&self) -> Result<Option<ObjectId>> {
        let repo = self.repo.to_thread_local();
        let found = repo
            .try_find_reference(self.branch.as_str())
            .map_err(|e| Error::git(&format!("cannot read `{}`", self.branch), e))?;
        match found {
            None => Ok(None),
            Some(mut r) => r
                .peel_to_id()
                .map(|id| Some(id.detach()))
                .map_err(|e| Error::git(&format!("cannot resolve `{}`", self.branch), e)),
        }
    }

    fn first_parent(&self, commit: ObjectId) -> Result<Option<ObjectId>> {
        let repo = self.repo.to_thread_local();
        let c = repo
            .find_commit(commit)
            .map_err(|e| Error::git(&format!("cannot read commit {commit}"), e))?;
        Ok(c.parent_ids().next().map(|id| id.detach()))
    }
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

/// The commit message of a snapshot.
fn snapshot_message(
    sid: &SessionId,
    task: &TaskId,
    role: &str,
    attempt: u32,
    inspection: &Inspection,
) -> String {
    let count = |kind: ChangeKind| inspection.changed.iter().filter(|c| c.kind == kind).count();
    let one_line = |s: &str| s.replace(['\n', '\r'], " ");
    let mut msg = format!("{task}: snapshot ({})\n\n", one_line(role));
    msg.push_str(&format!(
        "What the worker changed: {} added, {} modified, {} deleted.\n",
        count(ChangeKind::Added),
        count(ChangeKind::Modified),
        count(ChangeKind::Deleted)
    ));
    if !inspection.ignored.is_empty() {
        msg.push_str(&format!(
            "Left out: {} change(s) under {PIPELINE_FOLDER}/, which only git-tlv4 writes.\n",
            inspection.ignored.len()
        ));
    }
    msg.push_str(&format!(
        "\nTlv4-Session: {sid}\nTlv4-Task: {task}\nTlv4-Role: {}\nTlv4-Event: {SNAPSHOT_EVENT}\nTlv4-Attempt: {attempt}\n",
        one_line(role)
    ));
    msg
}

/// A branch name without `refs/heads/`, as the git CLI takes it.
fn short(full: &str) -> &str {
    full.strip_prefix("refs/heads/").unwrap_or(full)
}

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

/// A read-only checkout of a commit for document tasks: detached, locked, every file and
/// directory made read-only, removed after use (or when dropped).
pub struct ReadOnlyView {
    checkout: Checkout,
}

impl ReadOnlyView {
    /// Checks out `from` (the session tip) detached in a new locked worktree and makes it
    /// read-only.
    pub fn create(store: &Store, from: ObjectId) -> Result<ReadOnlyView> {
        let hex = from.to_string();
        let reason = format!("{} (read-only view of {hex})", crate::git::lock_reason());
        let checkout = Checkout::add(
            store,
            &format!("tlv4-view-{}-", &hex[..12]),
            "view",
            &reason,
            &["--detach", hex.as_str()],
        )?;
        let view = ReadOnlyView { checkout };
        set_writable(&view.checkout.path, false)
            .map_err(|e| Error::io("cannot make the read-only view read-only", e))?;
        Ok(view)
    }

    /// The root of the checkout.
    pub fn path(&self) -> &Path {
        &self.checkout.path
    }

    /// Unlocks and removes the view.
    pub fn remove(mut self) -> Result<()> {
        self.checkout.teardown()
    }
}

/// Serialises this process's `git worktree add` and `remove`: git reads every registered
/// worktree while adding one, and fails on one that another thread is half-way through
/// creating.
static ADMIN: Mutex<()> = Mutex::new(());

/// Runs `f` while no other thread of this process adds or removes a worktree.
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
            crate::git::run(dir, args)
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

/// A linked worktree under a temporary directory, and how to run git in it. Removed when
/// dropped unless removed or kept before.
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
}

impl Checkout {
    /// Runs `git worktree add --lock --reason REASON <tmp>/<name> TARGET…`.
    fn add(
        store: &Store,
        prefix: &str,
        name: &str,
        reason: &str,
        target: &[&str],
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
        let path_str = utf8(&path)?;
        let common = utf8(&common_dir)?;
        let mut args = vec![
            "--git-dir",
            common,
            "worktree",
            "add",
            "--quiet",
            "--lock",
            "--reason",
            reason,
            path_str,
        ];
        args.extend_from_slice(target);
        add_worktree(parent.path(), &args)?;
        let gitfile = std::fs::read_to_string(path.join(".git"))
            .map_err(|e| Error::io("cannot read the `.git` file of a new worktree", e))?;
        let admin = gitfile
            .trim()
            .strip_prefix("gitdir: ")
            .map(|g| path.join(g))
            .ok_or_else(|| Error::Git(format!("`{}/.git` is not a gitfile", path.display())))?;
        Ok(Checkout {
            common_dir,
            admin,
            path,
            parent: Some(parent),
            live: true,
        })
    }

    /// Runs git on the worktree's own git directory, in its root.
    fn git_here(&self, args: &[&str]) -> Result<String> {
        let admin = utf8(&self.admin)?;
        let path = utf8(&self.path)?;
        let mut all = vec!["--git-dir", admin, "--work-tree", path];
        all.extend_from_slice(args);
        crate::git::run(&self.path, &all)
    }

    /// Like [`Checkout::git_here`], for output that must not be decoded lossily.
    fn git_here_bytes(&self, args: &[&str]) -> Result<Vec<u8>> {
        // `git::run` decodes output as UTF-8; NUL-separated porcelain output survives that
        // for every UTF-8 path, and a path that is not UTF-8 comes back with U+FFFD in it,
        // which the checks reject (git would then add a file that is not there).
        Ok(self.git_here(args)?.into_bytes())
    }

    /// Unlocks, removes (discarding changes) and prunes the worktree.
    fn teardown(&mut self) -> Result<()> {
        if !self.live {
            return Ok(());
        }
        // A read-only view's directories must be writable for their files to be deleted.
        let _ = set_writable(&self.path, true);
        let common = utf8(&self.common_dir)?;
        let path = utf8(&self.path)?;
        let run = |args: &[&str]| {
            let mut all = vec!["--git-dir", common];
            all.extend_from_slice(args);
            crate::git::run(&self.common_dir, &all)
        };
        let _admin = ADMIN
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Fails only when it is not locked (any more), which is what is wanted.
        let _ = run(&["worktree", "unlock", path]);
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
        if let Some(parent) = self.parent.take() {
            let _ = parent.keep();
        }
        self.path.clone()
    }
}

impl Drop for Checkout {
    fn drop(&mut self) {
        // Best effort: a worktree nobody removes would stay registered (and locked) forever.
        let _ = self.teardown();
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
