//! Recovery, undo and rollback: the session transactions and the clean-up behind `git tlv4
//! resume`, `undo` and `rollback` (and the checkout clean-up `gc` shares).
//!
//! Each step is a function that does its work and returns what it did as plain data; the
//! command decides what to print and in which words. The steps stay separate so that the
//! command reports each one before the next runs (and an error stops it after what was done
//! is said).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tlv4_core::error::{Error, Result};
use tlv4_core::model::{Event, EventKind, SessionId, SessionStatus, TaskId, TaskStatus};
use tlv4_core::text::short_id;
use tlv4_store::store::{LoggedEvent, Store, Written};

/// A ref lock older than this was left by a dead process: writers hold one for microseconds,
/// and give up waiting for one after 3 seconds.
const STALE_LOCK_AGE: Duration = Duration::from_secs(5);

/// How much longer than the grace period a dead tool's run may take to end.
const RUN_END_SLACK: Duration = Duration::from_secs(2);

/// Removes the stale locks of the repository, once every younger one is gone or old enough;
/// returns the locks removed.
pub fn clear_stale_locks(store: &Store) -> Result<Vec<PathBuf>> {
    // A younger lock is a live writer's (held for microseconds) or was left by a process
    // killed a moment ago: wait until each one is gone or old enough to be stale, so that a
    // resume right after a crash clears what the crash left.
    let deadline = Instant::now() + STALE_LOCK_AGE + Duration::from_millis(200);
    while store.locks().iter().any(|(_, age)| *age < STALE_LOCK_AGE) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut removed = Vec::new();
    for lock in store.stale_locks(STALE_LOCK_AGE) {
        std::fs::remove_file(&lock)
            .map_err(|e| Error::io(format!("cannot remove {}", lock.display()), e))?;
        removed.push(lock);
    }
    Ok(removed)
}

/// What [`clear_stale_checkouts`] did with one checkout of a process that is gone, in the
/// order it happened.
#[derive(Debug, Clone)]
pub enum Cleared {
    /// A run the dead process started still works in `checkout` after the wait: it is left
    /// in place, and its task stays in progress.
    StillRunning {
        /// The checkout.
        checkout: PathBuf,
        /// The run's process.
        pid: u32,
    },
    /// A lock in the checkout's admin folder was removed.
    LockRemoved(PathBuf),
    /// A lock in the checkout's admin folder could not be removed.
    LockKept {
        /// The lock file.
        lock: PathBuf,
        /// Why.
        error: String,
    },
    /// The unrecorded work in `checkout` was kept under the ref `at`.
    WorkKept {
        /// The checkout.
        checkout: PathBuf,
        /// The ref that keeps it.
        at: String,
    },
    /// The work in `checkout` could not be kept: the checkout is left in place.
    WorkNotKept {
        /// The checkout.
        checkout: PathBuf,
        /// Why.
        error: String,
    },
    /// The checkout went back to its pool.
    Returned(PathBuf),
    /// The checkout was removed.
    Removed(PathBuf),
    /// The checkout could not be removed.
    NotRemoved {
        /// The checkout.
        checkout: PathBuf,
        /// Why.
        error: String,
    },
}

/// What [`clear_stale_checkouts`] did.
#[derive(Debug, Clone, Default)]
pub struct Checkouts {
    /// What was done, checkout by checkout, in order.
    pub cleared: Vec<Cleared>,
    /// The tasks of the session whose checkout a run that still goes on holds.
    pub busy: Vec<TaskId>,
}

/// Keeps the work of and removes the checkouts that processes that are gone left behind.
/// `waiting` is told, before the wait, of each checkout where a run such a process started
/// still works (its path and the run's pid).
pub fn clear_stale_checkouts(
    store: &Store,
    sid: &SessionId,
    mut waiting: impl FnMut(&Path, u32),
) -> Result<Checkouts> {
    let common = std::path::absolute(store.repo().common_dir())
        .map_err(|e| Error::io("cannot resolve the git directory", e))?;
    let mut out = Checkouts::default();
    for wt in tlv4_core::git::stale_worktrees(store.repo().common_dir()) {
        // The process that made it is gone, but a run it started may still be at work there.
        // A dead tool's runs end within the grace period (their death signal and its
        // watchdog see to it): wait that long, and never remove a checkout under a live run.
        if let Some(pid) = tlv4_core::git::live_run(&wt) {
            waiting(&wt, pid);
            let deadline = Instant::now() + tlv4_core::process::KILL_GRACE + RUN_END_SLACK;
            while tlv4_core::git::live_run(&wt).is_some() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(100));
            }
            if let Some(pid) = tlv4_core::git::live_run(&wt) {
                // Its task stays in progress: run again now, it would meet its own checkout.
                if let Some((s, task)) = tlv4_store::worktree::checkout_task(&common, &wt)
                    && s == *sid
                {
                    out.busy.push(task);
                }
                out.cleared
                    .push(Cleared::StillRunning { checkout: wt, pid });
                continue;
            }
        }
        // Its owner is gone: a lock in its admin folder (the index, mostly) is a leftover
        // that would make keeping its work fail.
        for lock in admin_locks(store.repo().common_dir(), &wt) {
            out.cleared.push(match std::fs::remove_file(&lock) {
                Ok(()) => Cleared::LockRemoved(lock),
                Err(e) => Cleared::LockKept {
                    lock,
                    error: e.to_string(),
                },
            });
        }
        // A task's checkout may hold what its agent wrote before the process died.
        match keep_interrupted_work(store, &wt) {
            Ok(Some(at)) => out.cleared.push(Cleared::WorkKept {
                checkout: wt.clone(),
                at,
            }),
            Ok(None) => {}
            Err(e) => {
                out.cleared.push(Cleared::WorkNotKept {
                    checkout: wt,
                    error: e.to_string(),
                });
                continue;
            }
        }
        if tlv4_store::worktree::pool::give_back(&common, &wt) {
            out.cleared.push(Cleared::Returned(wt));
            continue;
        }
        out.cleared.push(
            match tlv4_core::git::remove_worktree(store.repo().common_dir(), &wt) {
                Ok(()) => {
                    tlv4_store::worktree::pool::forget(&wt);
                    Cleared::Removed(wt)
                }
                Err(e) => Cleared::NotRemoved {
                    checkout: wt,
                    error: e.to_string(),
                },
            },
        );
    }
    Ok(out)
}

/// What [`recover_orphans`] did.
#[derive(Debug, Clone)]
pub struct Orphans {
    /// The event that returned tasks to pending, when there were any.
    pub written: Option<Written>,
    /// The tasks in progress on other hosts left as they are (`TASK (HOST:PID)`).
    pub elsewhere: Vec<String>,
}

/// Returns to pending the tasks left in progress by processes that are gone (but those in
/// `busy`; one on another host only when `force`).
pub fn recover_orphans(
    store: &Store,
    sid: &SessionId,
    busy: &[TaskId],
    force: bool,
) -> Result<Orphans> {
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
    Ok(Orphans { written, elsewhere })
}

/// What [`reconfigure`] did.
#[derive(Debug, Clone)]
pub struct Reconfigured {
    /// What of the pinned configuration changed; `None` when the session already ran with
    /// the working tree's.
    pub changed: Option<Vec<String>>,
    /// The event that turned the agents' shell on or off, when it changed.
    pub shell: Option<Written>,
}

/// `resume --reconfigure`: the session runs with the working tree's configuration from now
/// on, and whether its agents get a shell is decided again on this kernel.
pub fn reconfigure(store: &Store, sid: &SessionId) -> Result<Reconfigured> {
    let current = tlv4_core::trust::Files::read(store.workdir())?;
    // A configuration that does not load would stop the session: check it first.
    current.config(store.workdir())?;
    super::pipeline::PipelineSpec::from_files(&current)?;
    tlv4_review::RuleSet::from_files(&current)?;
    crate::agents::prompt::RoleSpecs::from_files(&current)?;
    let changed = tlv4_store::pin::repin(store, sid, &current)?;
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
    Ok(Reconfigured {
        changed,
        shell: written,
    })
}

/// `resume --retry`: the failed tasks go back to pending; the event, when there were any.
pub fn retry(store: &Store, sid: &SessionId) -> Result<Option<Written>> {
    store.transact(sid, |txn| {
        let back = super::revise::retry_failed(&mut txn.state);
        if back.is_empty() {
            return Ok(None);
        }
        let list: Vec<&str> = back.iter().map(|t| t.as_str()).collect();
        let mut summary = format!(
            "retry: failed tasks returned to pending: {}",
            list.join(", ")
        );
        // A pause for a run stopped at its task bound ends when that task runs again.
        let bound_pause = txn.state.session.status == SessionStatus::Paused
            && txn.state.control.pause.as_ref().is_some_and(|p| {
                p.kind == tlv4_core::model::PauseKind::Budget
                    && p.task.as_ref().is_some_and(|t| back.contains(t))
            });
        if bound_pause {
            txn.state.control.pause = None;
            txn.state.session.status = SessionStatus::Active;
            summary.push_str("; the session is active again");
        }
        Ok(Some(
            Event::session(EventKind::UserDecision, summary).with("Decision", "retry"),
        ))
    })
}

/// A stall is a fact about the state, not a decision: when its cause is gone (a task that
/// ran elsewhere finished, a failed one was retried, an orphan recovered) the pause goes.
/// Returns the event, when the session was stalled and no longer is.
pub fn clear_stall(store: &Store, sid: &SessionId) -> Result<Option<Written>> {
    store.transact(sid, |txn| {
        if !super::run::stall_cleared(&txn.state) {
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
    })
}

/// `undo -n N`: appends an event that restores the state before the last `n` events (`n` at
/// least 1); the event.
pub fn undo(store: &Store, sid: &SessionId, n: usize) -> Result<Option<Written>> {
    store.transact(sid, |txn| {
        let history = store.log_from(sid, txn.tip, Some(n + 1))?;
        // The first event created the session folder; the state before it is no session at all.
        let Some(target) = history.get(n) else {
            return Err(Error::state(
                format!(
                    "session `{sid}` has {} events; undo can step back at most {}",
                    history.len(),
                    history.len().saturating_sub(1)
                ),
                None,
            ));
        };
        let id = target
            .commit
            .parse()
            .map_err(|_| Error::Git(format!("bad commit id {}", target.commit)))?;
        txn.restore(sid, id)?;
        let undone: Vec<String> = history[..n]
            .iter()
            .map(|e| format!("- {} {}", short_id(&e.commit), e.subject))
            .collect();
        Ok(Some(
            Event::session(
                EventKind::Undo,
                format!(
                    "Restored the state of {} ({}). Undone:\n{}",
                    short_id(&target.commit),
                    target.subject,
                    undone.join("\n")
                ),
            )
            .with("Restores", target.commit.clone()),
        ))
    })
}

/// `rollback --to WHAT`: appends an event that restores the state of the event `what` names
/// (see [`find_event`]); the event.
pub fn rollback(store: &Store, sid: &SessionId, what: &str) -> Result<Option<Written>> {
    store.transact(sid, |txn| {
        let target = find_event(store, sid, txn.tip, what)?;
        if target.commit == txn.tip {
            return Err(Error::state(
                format!("{} is already the current state", short_id(&target.commit)),
                None,
            ));
        }
        let id = target
            .commit
            .parse()
            .map_err(|_| Error::Git(format!("bad commit id {}", target.commit)))?;
        txn.restore(sid, id)?;
        Ok(Some(
            Event::session(
                EventKind::Rollback,
                format!(
                    "Restored the state of {} ({})",
                    short_id(&target.commit),
                    target.subject
                ),
            )
            .with("Restores", target.commit.clone()),
        ))
    })
}

/// Finds the event `what` names in the history of `sid` from `tip`: a task id means its
/// latest completion; anything else is a revision that must be an event of the session.
pub fn find_event(
    store: &Store,
    sid: &SessionId,
    tip: gix::ObjectId,
    what: &str,
) -> Result<LoggedEvent> {
    let history = store.log_from(sid, tip, None)?;
    // Task ids always hold a `-`; abbreviated commit ids never do.
    if let (Ok(task), true) = (what.parse::<TaskId>(), what.contains('-')) {
        return history
            .into_iter()
            .find(|e| {
                e.event == EventKind::TaskCompleted.as_str()
                    && e.task.as_deref() == Some(task.as_str())
            })
            .ok_or_else(|| {
                Error::state(
                    format!("task `{task}` has no completion event in session `{sid}`"),
                    None,
                )
            });
    }
    let id = store
        .repo()
        .rev_parse_single(what)
        .map_err(|_| Error::Invalid(format!("`{what}` is neither a task id nor a commit")))?
        .detach();
    history.into_iter().find(|e| e.commit == id).ok_or_else(|| {
        Error::state(
            format!(
                "{} is not an event of session `{sid}`",
                short_id(&id.to_string())
            ),
            Some("list its events with `git tlv4 log`".into()),
        )
    })
}

/// Keeps what a dead process's agent left in the task checkout `wt` under
/// `refs/tlv4/runs/<SID>/<TASK>/<n>`, through the snapshot checks, so that removing the
/// checkout loses nothing and nothing unchecked reaches the session. Returns the ref when
/// there was something to keep.
pub fn keep_interrupted_work(store: &Store, wt: &Path) -> Result<Option<String>> {
    // The limits of the session the checkout worked for, as it was pinned.
    let limits = std::path::absolute(store.repo().common_dir())
        .ok()
        .and_then(|common| tlv4_store::worktree::checkout_task(&common, wt))
        .and_then(|(sid, _)| tlv4_store::pin::pinned(store, &sid).ok())
        .and_then(|(files, _)| files.config(store.workdir()).ok())
        .and_then(|c| c.snapshot.limits().ok())
        .unwrap_or_default();
    tlv4_store::worktree::keep_abandoned(store, wt, &limits)
}

/// The lock files (`index.lock`, `HEAD.lock`, …) in the admin folder
/// `.git/worktrees/<name>/` of the checkout `wt` (found also when its directory is gone).
pub fn admin_locks(common: &Path, wt: &Path) -> Vec<PathBuf> {
    let Some(admin) = tlv4_store::worktree::admin_dir_of(common, wt) else {
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

/// A change of a session's budget on the command line (`--budget-usd +5`, `--budget-usd 20`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BudgetChange {
    /// `+N`: raise by N; `N`: make the budget N.
    pub relative: bool,
    /// N.
    pub value: f64,
}

impl std::str::FromStr for BudgetChange {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<BudgetChange, String> {
        let t = text.trim();
        let (relative, n) = match t.strip_prefix('+') {
            Some(rest) => (true, rest),
            None => (false, t),
        };
        match n.parse::<f64>() {
            Ok(v) if v.is_finite() && v >= 0.0 => Ok(BudgetChange { relative, value: v }),
            _ => Err(format!(
                "`{text}`: expected +N (raise by N) or N (the new budget), N a number of 0 or more"
            )),
        }
    }
}

/// `resume --budget-usd/--budget-tokens`: changes session `sid`'s budget as a recorded
/// decision (the raise is a trailer of the event, so raises made on two clones both count
/// after `pull`), and ends a pause of the kind `budget`. The event.
pub fn change_budget(
    store: &Store,
    sid: &SessionId,
    usd: Option<BudgetChange>,
    tokens: Option<BudgetChange>,
) -> Result<Option<Written>> {
    let mut ledger = tlv4_store::ledger::Ledger::default();
    ledger.refresh(store, store.tip(sid)?)?;
    store.transact(sid, |txn| {
        let settings = &mut txn.state.control.settings;
        let mut said = Vec::new();
        let mut event =
            Event::session(EventKind::UserDecision, String::new()).with("Decision", "budget");
        if let Some(c) = usd {
            match settings.budget_usd {
                None if c.relative => {
                    return Err(Error::state(
                        format!("session `{sid}` has no dollar budget to raise"),
                        Some(format!(
                            "give it one: `git tlv4 resume --budget-usd {}`",
                            c.value
                        )),
                    ));
                }
                None => {
                    settings.budget_usd = Some(c.value);
                    said.push(format!("a dollar budget of ${:.2}", c.value));
                }
                Some(base) => {
                    let now = base + ledger.raised_usd;
                    let delta = if c.relative { c.value } else { c.value - now };
                    event = event.with(tlv4_store::ledger::RAISE_USD, format!("{delta}"));
                    said.push(format!(
                        "the dollar budget from ${now:.2} to ${:.2}",
                        now + delta
                    ));
                }
            }
        }
        if let Some(c) = tokens {
            let value = c.value.round() as u64;
            match settings.budget_tokens {
                None if c.relative => {
                    return Err(Error::state(
                        format!("session `{sid}` has no token budget to raise"),
                        Some(format!(
                            "give it one: `git tlv4 resume --budget-tokens {value}`"
                        )),
                    ));
                }
                None => {
                    settings.budget_tokens = Some(value);
                    said.push(format!("a token budget of {value}"));
                }
                Some(base) => {
                    let now = i64::try_from(base).unwrap_or(i64::MAX) + ledger.raised_tokens;
                    let delta = if c.relative {
                        i64::try_from(value).unwrap_or(i64::MAX)
                    } else {
                        i64::try_from(value).unwrap_or(i64::MAX) - now
                    };
                    event = event.with(tlv4_store::ledger::RAISE_TOKENS, delta.to_string());
                    said.push(format!("the token budget from {now} to {}", now + delta));
                }
            }
        }
        if said.is_empty() {
            return Ok(None);
        }
        let mut summary = format!("resume: {}", said.join(" and "));
        let paused_on_budget = txn.state.session.status == SessionStatus::Paused
            && txn
                .state
                .control
                .pause
                .as_ref()
                .is_some_and(|p| p.kind == tlv4_core::model::PauseKind::Budget);
        if paused_on_budget {
            txn.state.control.pause = None;
            txn.state.session.status = SessionStatus::Active;
            summary.push_str("; the session is active again");
        }
        event.summary = summary;
        Ok(Some(event))
    })
}

/// When session `sid`'s pause for a usage limit ends (ms since the epoch), if it is paused
/// for one that said.
pub fn limit_until(state: &tlv4_core::model::State) -> Option<u64> {
    let pause = state.control.pause.as_ref()?;
    if state.session.status != SessionStatus::Paused
        || pause.kind != tlv4_core::model::PauseKind::Limit
    {
        return None;
    }
    pause
        .until
        .as_deref()
        .and_then(tlv4_core::clock::parse_rfc3339_ms)
}

/// `resume` on a session paused for a usage limit: ends the pause (the loop then tries the
/// agent again; if it is still limited, the session pauses again). The event.
pub fn clear_limit(store: &Store, sid: &SessionId) -> Result<Option<Written>> {
    store.transact(sid, |txn| {
        let limited = txn.state.session.status == SessionStatus::Paused
            && txn
                .state
                .control
                .pause
                .as_ref()
                .is_some_and(|p| p.kind == tlv4_core::model::PauseKind::Limit);
        if !limited {
            return Ok(None);
        }
        let was = txn
            .state
            .control
            .pause
            .take()
            .map(|p| p.reason)
            .unwrap_or_default();
        txn.state.session.status = SessionStatus::Active;
        Ok(Some(
            Event::session(
                EventKind::UserDecision,
                format!("resume: trying the agents again (the session waited: {was})"),
            )
            .with("Decision", "resume"),
        ))
    })
}
