//! `git tlv4 resume`: recover what a crashed process left behind.

use std::time::Duration;

use tlv4_core::error::Result;
use tlv4_core::model::{Event, EventKind, SessionId, SessionStatus, TaskId, TaskStatus};
use tlv4_core::store::Store;

use super::Ctx;

/// A ref lock older than this was left by a dead process: writers hold one for microseconds,
/// and give up waiting for one after 3 seconds.
const STALE_LOCK_AGE: Duration = Duration::from_secs(5);

/// How much longer than the grace period a dead tool's run may take to end.
const RUN_END_SLACK: Duration = Duration::from_secs(2);

/// Arguments of `resume`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Also recover tasks owned by processes on other hosts
    #[arg(long)]
    pub force: bool,
    /// Run failed tasks again
    #[arg(long)]
    pub retry: bool,
    /// Run with the working tree's configuration (.tlv4.toml, .tlv4/specs/) from now on,
    /// instead of the one the session was pinned to when it started, and give agents a shell
    /// only if this kernel's sandbox is full
    #[arg(long)]
    pub reconfigure: bool,
    /// Loop options
    #[command(flatten)]
    pub run: super::drive::RunFlags,
}

pub(crate) fn run(ctx: &Ctx<'_>, args: Args) -> Result<()> {
    // Locks first, before a session is chosen: a lock of the review notes blocks every
    // review, in a repository with no session too.
    let store = ctx.store()?;
    clear_stale_locks(ctx, &store)?;
    let sid = store.resolve_session(ctx.session.as_deref())?;
    ctx.address(&store, &sid);
    // A discussion resumes at its next round; it has no tasks to recover.
    if crate::coordinator::discussion::is_discussion(&store.read_state(&sid)?.1) {
        return super::discuss::go(ctx, &store, &sid, &args.run);
    }
    let busy = clear_stale_checkouts(ctx, &store, &sid)?;
    recover_orphans(ctx, &store, &sid, &busy, args.force)?;
    adopt_manual_revisions(ctx, &store, &sid)?;
    if args.reconfigure {
        reconfigure(ctx, &store, &sid)?;
    }
    if args.retry {
        retry(ctx, &store, &sid)?;
    }
    clear_stall(ctx, &store, &sid)?;
    go_on(ctx, &store, &sid, &args.run)
}

/// Removes the stale locks of the repository, once every younger one is gone or old enough.
fn clear_stale_locks(ctx: &Ctx<'_>, store: &Store) -> Result<()> {
    // A younger lock is a live writer's (held for microseconds) or was left by a process
    // killed a moment ago: wait until each one is gone or old enough to be stale, so that a
    // resume right after a crash clears what the crash left.
    let deadline = std::time::Instant::now() + STALE_LOCK_AGE + Duration::from_millis(200);
    while store.locks().iter().any(|(_, age)| *age < STALE_LOCK_AGE)
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(100));
    }
    for lock in store.stale_locks(STALE_LOCK_AGE) {
        std::fs::remove_file(&lock)
            .map_err(|e| tlv4_core::Error::io(format!("cannot remove {}", lock.display()), e))?;
        ctx.ui
            .status(format!("removed stale lock {}", lock.display()));
    }
    Ok(())
}

/// Keeps the work of and removes the checkouts that processes that are gone left behind;
/// returns the tasks of `sid` whose checkout a run that still goes on holds.
fn clear_stale_checkouts(ctx: &Ctx<'_>, store: &Store, sid: &SessionId) -> Result<Vec<TaskId>> {
    let common = std::path::absolute(store.repo().common_dir())
        .map_err(|e| tlv4_core::Error::io("cannot resolve the git directory", e))?;
    // Tasks whose checkout is left to a run that still goes on.
    let mut busy = Vec::new();
    for wt in tlv4_core::git::stale_worktrees(store.repo().common_dir()) {
        // The process that made it is gone, but a run it started may still be at work there.
        // A dead tool's runs end within the grace period (their death signal and its
        // watchdog see to it): wait that long, and never remove a checkout under a live run.
        if let Some(pid) = tlv4_core::git::live_run(&wt) {
            ctx.ui.status(format!(
                "waiting for process {pid} in {}, started by a git-tlv4 that is gone, to end",
                wt.display()
            ));
            let deadline =
                std::time::Instant::now() + tlv4_core::process::KILL_GRACE + RUN_END_SLACK;
            while tlv4_core::git::live_run(&wt).is_some() && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(100));
            }
            if let Some(pid) = tlv4_core::git::live_run(&wt) {
                ctx.ui.warn(format!(
                    "left the checkout {} in place: process {pid}, started there by a git-tlv4 that is gone, still runs; resume again once it has ended",
                    wt.display()
                ));
                // Its task stays in progress: run again now, it would meet its own checkout.
                if let Some((s, task)) = tlv4_core::worktree::checkout_task(&common, &wt)
                    && s == *sid
                {
                    busy.push(task);
                }
                continue;
            }
        }
        // Its owner is gone: a lock in its admin folder (the index, mostly) is a leftover
        // that would make keeping its work fail.
        for lock in admin_locks(store.repo().common_dir(), &wt) {
            match std::fs::remove_file(&lock) {
                Ok(()) => ctx
                    .ui
                    .status(format!("removed stale lock {}", lock.display())),
                Err(e) => ctx
                    .ui
                    .warn(format!("cannot remove stale lock {}: {e}", lock.display())),
            }
        }
        // A task's checkout may hold what its agent wrote before the process died.
        match keep_interrupted_work(store, &wt) {
            Ok(Some(kept)) => ctx.ui.status(format!(
                "kept the unrecorded work in {} at {kept}",
                wt.display()
            )),
            Ok(None) => {}
            Err(e) => {
                ctx.ui.warn(format!(
                    "left the checkout {} in place: its work could not be kept: {e}",
                    wt.display()
                ));
                continue;
            }
        }
        if tlv4_core::worktree::pool::give_back(&common, &wt) {
            ctx.ui.status(format!(
                "returned the checkout {} of a process that is gone to the pool",
                wt.display()
            ));
            continue;
        }
        match tlv4_core::git::remove_worktree(store.repo().common_dir(), &wt) {
            Ok(()) => {
                tlv4_core::worktree::pool::forget(&wt);
                ctx.ui.status(format!(
                    "removed the checkout {} of a process that is gone",
                    wt.display()
                ))
            }
            Err(e) => ctx.ui.warn(format!(
                "cannot remove the stale checkout {}: {e}",
                wt.display()
            )),
        }
    }
    Ok(busy)
}

/// Returns to pending the tasks left in progress by processes that are gone (but those in
/// `busy`; one on another host only when `force`).
fn recover_orphans(
    ctx: &Ctx<'_>,
    store: &Store,
    sid: &SessionId,
    busy: &[TaskId],
    force: bool,
) -> Result<()> {
    let host = tlv4_core::host::name();
    let mut elsewhere = Vec::new();
    let written = store.transact(sid, |txn| {
        elsewhere.clear();
        let mut recovered = Vec::new();
        for task in txn
            .state
            .tasks
            .values_mut()
            .filter(|t| t.status == TaskStatus::InProgress)
        {
            if busy.contains(&task.id) {
                continue;
            }
            let gone = match &task.owner {
                None => true,
                Some(o) if o.host == host => !o.alive_here(&host),
                Some(o) => {
                    if !force {
                        elsewhere.push(format!("{} ({}:{})", task.id, o.host, o.pid));
                    }
                    force
                }
            };
            if gone {
                let owner = task
                    .owner
                    .take()
                    .map_or("nobody".into(), |o| format!("{}:{}", o.host, o.pid));
                task.status = TaskStatus::Pending;
                recovered.push(format!("{} (was {owner})", task.id));
            }
        }
        if recovered.is_empty() {
            return Ok(None);
        }
        Ok(Some(Event::session(
            EventKind::TasksRecovered,
            format!(
                "Returned to pending, their owners are gone:\n{}",
                recovered.join("\n")
            ),
        )))
    })?;
    match written {
        Some(w) => ctx.ui.status(w.event.summary.replace('\n', "\n  ")),
        None => ctx
            .ui
            .status("no task was left running by a process that is gone"),
    }
    for e in &elsewhere {
        ctx.ui.warn(format!(
            "{e} runs on another host; left as it is (use --force to recover it)"
        ));
    }
    Ok(())
}

/// Commits a user made on a completed task's branch are a manual revision.
fn adopt_manual_revisions(ctx: &Ctx<'_>, store: &Store, sid: &SessionId) -> Result<()> {
    for a in crate::coordinator::reset::adopt_manual(store, sid)? {
        let rerun: Vec<&str> = a.rerun.iter().map(|t| t.as_str()).collect();
        ctx.ui.status(format!(
            "adopted {} commit(s) of tlv4/{sid}.{} as a manual revision; to run again: {}",
            a.commits,
            a.task,
            if rerun.is_empty() {
                "nothing".to_owned()
            } else {
                rerun.join(", ")
            }
        ));
    }
    Ok(())
}

/// `--reconfigure`: the session runs with the working tree's configuration from now on.
fn reconfigure(ctx: &Ctx<'_>, store: &Store, sid: &SessionId) -> Result<()> {
    let current = tlv4_core::trust::Files::read(store.workdir())?;
    // A configuration that does not load would stop the session: check it first.
    current.config(store.workdir())?;
    crate::coordinator::pipeline::PipelineSpec::from_files(&current)?;
    tlv4_review::RuleSet::from_files(&current)?;
    crate::agents::prompt::RoleSpecs::from_files(&current)?;
    match tlv4_core::trust::repin(store, sid, &current)? {
        Some(changed) => ctx.ui.status(format!(
            "session {sid} runs with the working tree's configuration from now on (changed: {})",
            changed.join(", ")
        )),
        None => ctx.ui.status(format!(
            "session {sid} already runs with the working tree's configuration"
        )),
    }
    // Whether its agents get a shell is decided again, here: on only where this kernel's
    // sandbox is full and `[sandbox] shell` does not say otherwise.
    let level = tlv4_core::sandbox::level();
    let shell = current.config(store.workdir())?.sandbox.shell_on();
    let written = store.transact(sid, |txn| {
        if txn.state.control.settings.shell == shell {
            return Ok(None);
        }
        txn.state.control.settings.shell = shell;
        let summary = if shell {
            format!(
                "reconfigure: the agents of later code tasks get their CLI's shell, inside this kernel's sandbox ({})",
                level.describe()
            )
        } else if level.active() {
            "reconfigure: the agents of later code tasks get no shell (`[sandbox] shell = false`)"
                .to_owned()
        } else {
            format!(
                "reconfigure: the agents of later code tasks get no shell; this kernel's sandbox is {}",
                level.describe()
            )
        };
        Ok(Some(
            Event::session(EventKind::UserDecision, summary).with("Decision", "reconfigure"),
        ))
    })?;
    if let Some(w) = written {
        ctx.ui.status(w.event.summary);
    }
    Ok(())
}

/// `--retry`: the failed tasks go back to pending.
fn retry(ctx: &Ctx<'_>, store: &Store, sid: &SessionId) -> Result<()> {
    let written = store.transact(sid, |txn| {
        let back = crate::coordinator::revise::retry_failed(&mut txn.state);
        if back.is_empty() {
            return Ok(None);
        }
        let list: Vec<&str> = back.iter().map(|t| t.as_str()).collect();
        let summary = format!(
            "retry: failed tasks returned to pending: {}",
            list.join(", ")
        );
        Ok(Some(
            Event::session(EventKind::UserDecision, summary).with("Decision", "retry"),
        ))
    })?;
    match written {
        Some(w) => ctx.ui.status(w.event.summary),
        None => ctx.ui.status("no failed task to retry"),
    }

    Ok(())
}

/// A stall is a fact about the state, not a decision: when its cause is gone (a task that
/// ran elsewhere finished, a failed one was retried, an orphan recovered) the pause goes.
fn clear_stall(ctx: &Ctx<'_>, store: &Store, sid: &SessionId) -> Result<()> {
    let written = store.transact(sid, |txn| {
        if !crate::coordinator::run::stall_cleared(&txn.state) {
            return Ok(None);
        }
        let was = txn
            .state
            .control
            .pause
            .take()
            .map_or(String::new(), |p| p.reason);
        txn.state.session.status = SessionStatus::Active;
        Ok(Some(
            Event::session(
                EventKind::UserDecision,
                format!("resume: the stall is over, the session is active again (it was: {was})"),
            )
            .with("Decision", "resume"),
        ))
    })?;
    if let Some(w) = written {
        ctx.ui.status(w.event.summary);
    }
    Ok(())
}

/// Runs the loop when the session is active; says why not otherwise.
fn go_on(
    ctx: &Ctx<'_>,
    store: &Store,
    sid: &SessionId,
    flags: &super::drive::RunFlags,
) -> Result<()> {
    let (_, state) = store.read_state(sid)?;
    match state.session.status {
        SessionStatus::Active => super::drive::drive(ctx, store, sid, flags),
        SessionStatus::Paused => {
            let pause = state.control.pause.clone();
            let why = pause
                .as_ref()
                .map_or(String::new(), |p| format!(" ({}): {}", p.kind, p.reason));
            ctx.ui.status(format!("session {sid} is paused{why}"));
            ctx.exit.set(tlv4_core::error::exit::for_pause(
                pause
                    .as_ref()
                    .map_or(&tlv4_core::model::PauseKind::Unrecorded, |p| &p.kind),
            ));
            if let Some(p) = pause {
                ctx.ui.status("next:");
                for n in &p.next {
                    ctx.ui.status(format!("  {n}"));
                }
            }
            Ok(())
        }
        other => {
            ctx.ui.status(format!(
                "session {sid} is {}; nothing to continue",
                other.as_str()
            ));
            Ok(())
        }
    }
}

/// Keeps what a dead process's agent left in the task checkout `wt` under
/// `refs/tlv4/runs/<SID>/<TASK>/<n>`, through the snapshot checks, so that removing the
/// checkout loses nothing and nothing unchecked reaches the session. Returns the ref when
/// there was something to keep.
pub(crate) fn keep_interrupted_work(
    store: &tlv4_core::store::Store,
    wt: &std::path::Path,
) -> Result<Option<String>> {
    // The limits of the session the checkout worked for, as it was pinned.
    let limits = std::path::absolute(store.repo().common_dir())
        .ok()
        .and_then(|common| tlv4_core::worktree::checkout_task(&common, wt))
        .and_then(|(sid, _)| tlv4_core::trust::pinned(store, &sid).ok())
        .and_then(|(files, _)| files.config(store.workdir()).ok())
        .and_then(|c| c.snapshot.limits().ok())
        .unwrap_or_default();
    tlv4_core::worktree::keep_abandoned(store, wt, &limits)
}

/// The lock files (`index.lock`, `HEAD.lock`, …) in the admin folder
/// `.git/worktrees/<name>/` of the checkout `wt` (found also when its directory is gone).
pub(crate) fn admin_locks(
    common: &std::path::Path,
    wt: &std::path::Path,
) -> Vec<std::path::PathBuf> {
    let Some(admin) = tlv4_core::worktree::admin_dir_of(common, wt) else {
        return Vec::new();
    };
    let mut out: Vec<_> = std::fs::read_dir(&admin)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "lock") && p.is_file())
        .collect();
    out.sort();
    out
}
