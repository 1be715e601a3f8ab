//! `git tlv4 resume`: recover what a crashed process left behind (the recovery itself is
//! `coordinator::recover`; this command says what it did and runs the loop again).

use tlv4_core::error::Result;
use tlv4_core::model::{SessionId, SessionStatus, TaskId};
use tlv4_store::store::Store;

use super::Ctx;
use crate::coordinator::recover::{self, Cleared};

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
    /// Raise the session's dollar budget by N (+N), or make it N; a recorded decision that
    /// ends a pause for the budget
    #[arg(long, value_name = "[+]USD", allow_hyphen_values = false)]
    pub budget_usd: Option<recover::BudgetChange>,
    /// Raise the session's token budget by N (+N), or make it N
    #[arg(long, value_name = "[+]N")]
    pub budget_tokens: Option<recover::BudgetChange>,
    /// When the session waits for a usage limit to reset, sleep until then and go on
    #[arg(long)]
    pub wait: bool,
    /// Loop options
    #[command(flatten)]
    pub run: super::drive::RunFlags,
}

pub(crate) fn run(ctx: &Ctx<'_>, args: Args) -> Result<()> {
    // Locks first, before a session is chosen: a lock of the review notes blocks every
    // review, in a repository with no session too.
    let store = ctx.store()?;
    for lock in recover::clear_stale_locks(&store)? {
        ctx.ui
            .status(format!("removed stale lock {}", lock.display()));
    }
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
        match recover::retry(&store, &sid)? {
            Some(w) => ctx.ui.status(w.event.summary),
            None => ctx.ui.status("no failed task to retry"),
        }
    }
    if (args.budget_usd.is_some() || args.budget_tokens.is_some())
        && let Some(w) = recover::change_budget(&store, &sid, args.budget_usd, args.budget_tokens)?
    {
        ctx.ui.status(w.event.summary);
    }
    if args.wait {
        wait_for_reset(ctx, &store, &sid)?;
    }
    if let Some(w) = recover::clear_limit(&store, &sid)? {
        ctx.ui.status(w.event.summary);
    }
    if let Some(w) = recover::clear_stall(&store, &sid)? {
        ctx.ui.status(w.event.summary);
    }
    go_on(ctx, &store, &sid, &args.run)
}

/// Keeps the work of and removes the checkouts that processes that are gone left behind,
/// saying what was done; returns the tasks of `sid` whose checkout a run that still goes on
/// holds.
fn clear_stale_checkouts(ctx: &Ctx<'_>, store: &Store, sid: &SessionId) -> Result<Vec<TaskId>> {
    let done = recover::clear_stale_checkouts(store, sid, |wt, pid| {
        ctx.ui.status(format!(
            "waiting for process {pid} in {}, started by a git-tlv4 that is gone, to end",
            wt.display()
        ));
    })?;
    for cleared in done.cleared {
        match cleared {
            Cleared::StillRunning { checkout, pid } => ctx.ui.warn(format!(
                "left the checkout {} in place: process {pid}, started there by a git-tlv4 that is gone, still runs; resume again once it has ended",
                checkout.display()
            )),
            Cleared::LockRemoved(lock) => ctx
                .ui
                .status(format!("removed stale lock {}", lock.display())),
            Cleared::LockKept { lock, error } => ctx
                .ui
                .warn(format!("cannot remove stale lock {}: {error}", lock.display())),
            Cleared::WorkKept { checkout, at } => ctx.ui.status(format!(
                "kept the unrecorded work in {} at {at}",
                checkout.display()
            )),
            Cleared::WorkNotKept { checkout, error } => ctx.ui.warn(format!(
                "left the checkout {} in place: its work could not be kept: {error}",
                checkout.display()
            )),
            Cleared::Returned(checkout) => ctx.ui.status(format!(
                "returned the checkout {} of a process that is gone to the pool",
                checkout.display()
            )),
            Cleared::Removed(checkout) => ctx.ui.status(format!(
                "removed the checkout {} of a process that is gone",
                checkout.display()
            )),
            Cleared::NotRemoved { checkout, error } => ctx.ui.warn(format!(
                "cannot remove the stale checkout {}: {error}",
                checkout.display()
            )),
        }
    }
    Ok(done.busy)
}

/// Returns to pending the tasks left in progress by processes that are gone (but those in
/// `busy`; one on another host only when `force`), and says so.
fn recover_orphans(
    ctx: &Ctx<'_>,
    store: &Store,
    sid: &SessionId,
    busy: &[TaskId],
    force: bool,
) -> Result<()> {
    let orphans = recover::recover_orphans(store, sid, busy, force)?;
    match orphans.written {
        Some(w) => ctx.ui.status(w.event.summary.replace('\n', "\n  ")),
        None => ctx
            .ui
            .status("no task was left running by a process that is gone"),
    }
    for e in &orphans.elsewhere {
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
    let done = recover::reconfigure(store, sid)?;
    match done.changed {
        Some(changed) => ctx.ui.status(format!(
            "session {sid} runs with the working tree's configuration from now on (changed: {})",
            changed.join(", ")
        )),
        None => ctx.ui.status(format!(
            "session {sid} already runs with the working tree's configuration"
        )),
    }
    if let Some(w) = done.shell {
        ctx.ui.status(w.event.summary);
    }
    Ok(())
}

/// `--wait`: sleeps until the usage limit session `sid` is paused for resets (Ctrl-C ends
/// the wait and the command, and changes nothing).
fn wait_for_reset(ctx: &Ctx<'_>, store: &Store, sid: &SessionId) -> Result<()> {
    let (_, state) = store.read_state(sid)?;
    let Some(until) = recover::limit_until(&state) else {
        return Ok(());
    };
    let mut said = None;
    loop {
        let left = until.saturating_sub(tlv4_core::clock::now_ms());
        if left == 0 {
            return Ok(());
        }
        // Once at the start, then every minute.
        if said != Some(left / 60_000) {
            ctx.ui.status(format!(
                "waiting for the usage limit to reset at {}: {} left",
                tlv4_core::clock::rfc3339_ms(until),
                tlv4_core::process::duration::format_duration(std::time::Duration::from_millis(
                    left
                ))
            ));
            said = Some(left / 60_000);
        }
        std::thread::sleep(std::time::Duration::from_millis(left.min(1000)));
    }
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
