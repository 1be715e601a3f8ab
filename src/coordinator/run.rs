//! The scheduling loop: run every ready task, up to `max_parallel` at once, record each result
//! as one event, and stop at a pause, at completion, or on a signal (Ctrl-C, SIGTERM, SIGHUP).
//!
//! The loop is the only writer of the session branch while it runs. It owns the store on one
//! thread (a current-thread tokio runtime); agents run on the blocking pool. Everything a
//! task's completion implies — its files, run record, collected signals, specialist
//! injection, the IMPL tasks of a plan, a gate pause — is written in the same event, so a
//! crash leaves either all of it or none of it, and `resume` just runs the loop again.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

mod batch;
mod candidates;
mod stops;

use super::lease::{Held, Mode, RemoteMode, WorkerOptions};
use super::pipeline::PipelineSpec;
use super::worker::{WorkResult, work};
use super::{followup, record};
use crate::agents::roster::Roster;
use crate::agents::{CodeTree, TaskInput};
use crate::quality::QualityContext;
use tlv4_core::error::{Error, Result};
use tlv4_core::model::{
    Event, EventKind, Owner, Pause, PauseKind, Role, SessionId, SessionStatus, State, TaskId,
    TaskStatus,
};
use tlv4_core::trust::Configuration;
use tlv4_store::store::{Store, Txn, Written, session_dir};
use tlv4_store::worktree;

/// How long an interrupted loop waits for its workers to clean up after their processes
/// were stopped.
const WORKERS_AFTER_SIGNAL: std::time::Duration = std::time::Duration::from_secs(20);
/// How often the token counts of running tasks are looked at for the progress line.
const METER_TICK: std::time::Duration = std::time::Duration::from_secs(1);

/// What the loop reports while it runs.
#[derive(Debug, Clone)]
pub enum Progress {
    /// A task was claimed and handed to a worker.
    Started {
        /// The task.
        task: TaskId,
        /// Its role.
        role: String,
    },
    /// A task finished.
    Finished {
        /// The task.
        task: TaskId,
        /// Whether it completed.
        ok: bool,
        /// Its one-line summary.
        summary: String,
        /// How long it ran.
        seconds: f64,
    },
    /// Tokens of a running task's answer have arrived, or it started a step (sent about
    /// once a second while either changes).
    Tokens {
        /// The task.
        task: TaskId,
        /// Its role.
        role: String,
        /// The tokens counted so far over the task's answers.
        tokens: u64,
        /// The step it is at (`agent builtin running`, `running the tests`), or empty.
        step: String,
    },
    /// Something worth a line (tasks dispatched, a specialist injected, a pause).
    Note(String),
    /// The ready tasks wait for a usage limit to reset (sent about once a second while the
    /// loop waits, for a countdown).
    Waiting {
        /// What waits for what (`IMPL-002 waits for claude's usage limit`).
        why: String,
        /// Milliseconds left.
        left_ms: u64,
    },
    /// Tasks completed and total, after each recorded result.
    Count {
        /// Completed.
        done: usize,
        /// All.
        total: usize,
    },
}

/// Why the loop stopped.
#[derive(Debug, Clone)]
pub enum RunEnd {
    /// Every task is done.
    Completed,
    /// The session waits for the user.
    Paused(Pause),
    /// The user aborted the session.
    Aborted,
    /// A signal (Ctrl-C, SIGTERM, SIGHUP; its number first): these running tasks were
    /// returned to pending.
    Interrupted(i32, Vec<TaskId>),
    /// Nothing is left for this process, but tasks are in progress under other owners: the
    /// session is not stalled, it waits for them (nothing is written).
    RunningElsewhere(Vec<Elsewhere>),
    /// A worker (`git tlv4 worker --once`) found ready tasks only of roles it does not take.
    Waiting(Vec<TaskId>),
}

/// A task in progress under an owner other than the loop that stopped.
#[derive(Debug, Clone)]
pub struct Elsewhere {
    /// The task.
    pub task: TaskId,
    /// `host:pid`, or `nobody`.
    pub owner: String,
    /// Whether the owner still runs (always assumed on another host).
    pub alive: bool,
}

/// The tasks of `state` in progress, with their owners and whether those still run.
pub fn in_progress(state: &State) -> Vec<Elsewhere> {
    let host = tlv4_core::host::name();
    state
        .tasks
        .values()
        .filter(|t| t.status == TaskStatus::InProgress)
        .map(|t| Elsewhere {
            task: t.id.clone(),
            owner: t
                .owner
                .as_ref()
                .map_or("nobody".into(), |o| format!("{}:{}", o.host, o.pid)),
            alive: t.owner.as_ref().is_some_and(|o| o.alive_here(&host)),
        })
        .collect()
}

/// Whether nothing can run although work is left: no task in progress (under any owner), none
/// ready to run, and not every task done. Only such a state is a stall; a pause `stalled`
/// written for a state that is no longer one has lost its cause.
pub fn stalled(state: &State) -> bool {
    let done = state
        .tasks
        .values()
        .all(|t| t.status == TaskStatus::Completed || followup::is_revised(state, &t.id));
    !done
        && !state
            .tasks
            .values()
            .any(|t| t.status == TaskStatus::InProgress)
        && schedulable(state, &BTreeMap::new()).is_empty()
}

/// Whether `state` is paused on a stall whose cause is gone (a task finished elsewhere, a
/// failed one was retried or revised, an orphaned one recovered): `resume` clears such a pause.
pub fn stall_cleared(state: &State) -> bool {
    state.session.status == SessionStatus::Paused
        && state
            .control
            .pause
            .as_ref()
            .is_some_and(|p| p.kind == PauseKind::Stalled)
        && !stalled(state)
}

/// The configuration session `sid` started with, not the working tree's.
fn pinned(store: &Store, sid: &SessionId) -> Result<Configuration> {
    let (files, _) = tlv4_store::pin::pinned(store, sid)?;
    Configuration::of(files, store.workdir())
}

/// How [`run`] runs a session.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// The session's pinned configuration, when the caller has read it already; `None`: the
    /// configuration the session started with is read here (never the working tree's).
    pub conf: Option<Configuration>,
    /// Run as a worker of the remote these name: every event is written through the remote,
    /// every claim carries a lease (`super::lease`), and the loop waits for the tasks of other
    /// workers instead of stopping (unless `once`). `None`: run here, on the local branch.
    pub worker: Option<WorkerOptions>,
}

/// Runs session `sid` until it completes, pauses, is aborted, or is interrupted (or, a
/// worker, until nothing is left for it), as `opts` says.
pub fn run(
    store: &Store,
    sid: &SessionId,
    roster: Roster,
    opts: RunOptions,
    on: &mut dyn FnMut(Progress),
) -> Result<RunEnd> {
    let conf = match opts.conf {
        Some(conf) => conf,
        None => pinned(store, sid)?,
    };
    let mode = match opts.worker {
        None => Mode::Local,
        Some(worker) => Mode::Worker(Box::new(RemoteMode::new(worker))),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::io("cannot start the runtime", e))?;
    let spec = PipelineSpec::from_files(&conf.files)?;
    let budget = super::budget::Budget::new(
        conf.config.budget.clone(),
        conf.config.prices.clone(),
        super::budget::Medians::new(),
    );
    let wait_up_to = conf.config.limits.wait_up_to()?;
    let mut runner = Runner {
        store,
        sid: sid.clone(),
        roster: Arc::new(roster),
        spec,
        roles_lock: crate::agents::prompt::roles_lock(
            &crate::agents::prompt::RoleSpecs::from_files(&conf.files)?,
            store.repo().object_hash(),
        ),
        limits: conf.config.snapshot.limits()?,
        hooks: Arc::new(tlv4_core::hooks::Hooks::load(
            store.repo().common_dir(),
            store.workdir(),
            conf.config.hooks_path.as_deref(),
        )),
        conf: Arc::new(conf),
        code: None,
        latest: None,
        queue: Vec::new(),
        mode,
        budget,
        limited: BTreeMap::new(),
        failed_over: BTreeMap::new(),
        wait_up_to,
        helping: Vec::new(),
        on,
    };
    // A session that runs with shell on runs only where the sandbox can hold its agents.
    let (tip, state) = store.read_state(sid)?;
    runner
        .budget
        .read_history(store, sid, &state.control.settings)?;
    runner
        .roster
        .shell_here(sid, state.control.settings.shell)?;
    // The session pins what its prompts were built from; say so when that changed since.
    let pinned = store.read_blob_at(
        store.commit_tree(tip)?,
        &format!("{}/roles.lock", session_dir(sid)),
    )?;
    if let Some(pinned) = pinned.filter(|p| *p != runner.roles_lock.as_bytes()) {
        let changed = changed_specs(&String::from_utf8_lossy(&pinned), &runner.roles_lock);
        (runner.on)(Progress::Note(format!(
            "the role instructions changed since this session's roles.lock: {}; new prompts use the current ones",
            changed.join(", ")
        )));
    }
    // Workers of this build claim tasks on refs of their own: the session says so, and a
    // build whose workers claim through the session refuses it from now on (§18.10).
    if let Some(r) = runner.mode.worker() {
        store.check_atomic(&r.opts.remote, tip)?;
        // Marked already as this clone last saw it (`start --remote` marks it): no write.
        if state.session.schema < tlv4_core::model::SCHEMA_CLAIM_REFS {
            runner.transact(super::lease::mark_claim_refs)?;
        }
    }
    let end = rt.block_on(runner.run_loop());
    // Workers of an interrupted run may still be busy; they own nothing that must be waited for.
    rt.shutdown_background();
    end
}

struct Runner<'a> {
    store: &'a Store,
    sid: SessionId,
    roster: Arc<Roster>,
    spec: PipelineSpec,
    /// The `roles.lock` of the role instructions prompts are built from.
    roles_lock: String,
    /// What a code task's snapshot takes (`[snapshot]` of `.tlv4.toml`).
    limits: tlv4_store::worktree::SnapshotLimits,
    /// The user's lifecycle hooks.
    hooks: Arc<tlv4_core::hooks::Hooks>,
    /// The configuration the session runs with, for the quality tasks.
    conf: Arc<Configuration>,
    /// The code tree of the last tip, keyed by the root entries outside `.tlv4`.
    code: Option<(Vec<u8>, CodeTree)>,
    /// The state the last event of this loop wrote, to schedule from without a re-read.
    latest: Option<State>,
    /// A worker's results not yet in the session: pushed together, as a batch.
    queue: Vec<batch::Done>,
    /// Here, or a worker writing through a remote.
    mode: Mode,
    /// What the session may spend, and what it spent.
    budget: super::budget::Budget,
    /// Agents whose service refused work, with when it resets (ms since the epoch).
    limited: BTreeMap<String, u64>,
    /// Agents whose service failed on a task, which the task's fail-over list skips from now.
    failed_over: BTreeMap<TaskId, std::collections::BTreeSet<String>>,
    /// How long a usage limit is waited out before the session pauses.
    wait_up_to: std::time::Duration,
    /// A worker's runs of candidates of tasks other workers hold (best of N).
    helping: Vec<std::thread::JoinHandle<()>>,
    on: &'a mut dyn FnMut(Progress),
}

/// How long an agent whose limit gave no reset time is left alone.
const UNKNOWN_RESET: std::time::Duration = std::time::Duration::from_secs(15 * 60);

/// The agent a task goes to, or why it waits.
enum Pick {
    /// A quality task, or the agent of the role's list that is free now.
    Run(Option<Arc<dyn crate::agents::command::Driver>>),
    /// Every agent of the role's list is limited: the earliest reset.
    Wait(u64, String),
}

/// The tasks running on the blocking pool, each with its id, result and seconds.
type Running = tokio::task::JoinSet<(TaskId, Result<WorkResult>, f64)>;

impl Runner<'_> {
    async fn run_loop(&mut self) -> Result<RunEnd> {
        let mut running: Running = tokio::task::JoinSet::new();
        let mut roles: BTreeMap<TaskId, String> = BTreeMap::new();
        let end = match self.schedule(&mut running, &mut roles).await {
            Err(Error::Unreachable { remote, detail }) if self.mode.worker().is_some() => {
                Err(self.lost_remote(remote, detail, &mut running, &roles).await)
            }
            end => end,
        };
        // Candidates run for other workers end with their agents (a signal stops those).
        for h in self.helping.drain(..) {
            let _ = h.join();
        }
        end
    }

    /// The loop itself; `running` and `roles` (the role of each running task) are the
    /// caller's, so that it can stop what runs when the loop fails.
    async fn schedule(
        &mut self,
        running: &mut Running,
        roles: &mut BTreeMap<TaskId, String>,
    ) -> Result<RunEnd> {
        // Each running task's token meter, and the count last shown.
        let mut meters: BTreeMap<TaskId, (crate::agents::meter::Meter, u64, String)> =
            BTreeMap::new();
        // The slots each running task takes: its candidates run at once (best of N), else 1.
        let mut widths: BTreeMap<TaskId, usize> = BTreeMap::new();
        // A worker's tick also renews its leases, a few times per lease.
        let mut tick = tokio::time::interval(self.mode.tick(METER_TICK));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut signals = tlv4_core::process::signals::subscribe();
        loop {
            let state = match self.latest.take() {
                Some(s) => s,
                None => self.current_state()?,
            };
            let state = self.expire_leases(&state)?.unwrap_or(state);
            // What keeps ready tasks from starting: the budget, or their agents' limits.
            let mut refused = None;
            let mut waits: Option<(u64, String)> = None;
            let mut taken = 0;
            if state.session.status == SessionStatus::Active {
                let tip = self.store.tip(&self.sid)?;
                self.budget
                    .refresh(self.store, tip, &state.control.settings)?;
                let max = self.mode.max_parallel(state.control.settings.max_parallel);
                self.helping.retain(|h| !h.is_finished());
                let used: usize = roles
                    .keys()
                    .map(|id| widths.get(id).copied().unwrap_or(1))
                    .sum::<usize>()
                    + self.helping.len();
                let slots = (max as usize).saturating_sub(used);
                let mut filled = 0;
                let mut ready = schedulable(&state, roles);
                self.mode.pick(&mut ready);
                if let Some(r) = self.mode.worker() {
                    r.stale.set(false);
                }
                for task in ready {
                    if filled >= slots || self.mode.worker().is_some_and(|r| r.stale.get()) {
                        break;
                    }
                    if task.inner_loop && roles.values().any(|r| r == task.role.as_str()) {
                        continue;
                    }
                    let driver = match self.pick(&task) {
                        Pick::Run(d) => d,
                        Pick::Wait(until, why) => {
                            if waits.as_ref().is_none_or(|(u, _)| until < *u) {
                                waits = Some((until, why));
                            }
                            continue;
                        }
                    };
                    let claims = self.claims();
                    let best = driver.as_ref().and_then(|d| {
                        candidates::bestof_ask(
                            &self.roster,
                            &state.control.settings,
                            &task,
                            d,
                            slots - filled,
                        )
                        .map(|ask| super::bestof::Ask { claims, ..ask })
                    });
                    let admitted = match (&best, &driver) {
                        (Some(ask), _) => {
                            let names: Vec<&str> = ask.drivers.iter().map(|d| d.name()).collect();
                            self.budget.admit_all(&task.id, task.role.as_str(), &names)
                        }
                        (None, Some(d)) => {
                            self.budget.admit(&task.id, task.role.as_str(), d.name())
                        }
                        (None, None) => Ok(()),
                    };
                    if let Err(r) = admitted {
                        refused.get_or_insert(r);
                        continue;
                    }
                    let Some((input, qctx)) = self.claim(&state, &task.id)? else {
                        self.budget.release(&task.id);
                        continue;
                    };
                    roles.insert(task.id.clone(), task.role.to_string());
                    let width = best.as_ref().map_or(1, |a| a.width);
                    widths.insert(task.id.clone(), width);
                    (self.on)(Progress::Started {
                        task: task.id.clone(),
                        role: task.role.to_string(),
                    });
                    let roster = Arc::clone(&self.roster);
                    let limits = self.limits.clone();
                    let hooks = Arc::clone(&self.hooks);
                    let (max_usd, _) = self.budget.task_bounds(task.role.as_str());
                    let model = driver.as_ref().and_then(|d| self.roster.model_of(d.name()));
                    let max_tokens = self
                        .budget
                        .token_bound(task.role.as_str(), model.as_deref());
                    let meter = crate::agents::meter::Meter::bounded(max_tokens);
                    meter.set_max_usd(max_usd);
                    meters.insert(task.id.clone(), (meter.clone(), 0, String::new()));
                    running.spawn_blocking(move || {
                        let started = Instant::now();
                        let id = input.task.id.clone();
                        let result = work(
                            &roster,
                            driver,
                            best.as_ref(),
                            &input,
                            &qctx,
                            &limits,
                            &hooks,
                            &meter,
                        );
                        (id, result, started.elapsed().as_secs_f64())
                    });
                    taken += 1;
                    filled += width;
                }
                // Nothing to claim and a slot free: a candidate of a task another worker
                // holds (best of N).
                if taken == 0 && filled < slots {
                    self.help(&state)?;
                }
            }
            // A claim another worker took first: look at the remote again before the next.
            if taken == 0 && self.mode.worker().is_some_and(|r| r.stale.get()) {
                self.latest = None;
                if running.is_empty() {
                    continue;
                }
            }
            // A worker's results go to the session once nothing more could be claimed, or
            // once the oldest has waited long enough.
            if taken == 0 || self.queue_aged() {
                self.flush_queue(false)?;
            }
            if running.is_empty() {
                // Nothing runs: a worker's finished results go to the session first (they
                // may be what the rest waits for).
                if !self.queue.is_empty() {
                    self.flush_queue(true)?;
                    continue;
                }
                // Nothing runs, and the next task does not fit the budget: pause.
                if let Some(r) = refused {
                    return self.pause_for(self.budget.pause(&r));
                }
                // Nothing runs, and what is ready waits for a usage limit.
                if let Some((until, why)) = waits {
                    let left = until.saturating_sub(tlv4_core::clock::now_ms());
                    // A worker gave its task back: it waits, looking again now and then, and
                    // a worker on another account may take the task meanwhile.
                    if self.mode.worker().is_some() {
                        (self.on)(Progress::Waiting { why, left_ms: left });
                        let nap = self
                            .mode
                            .poll(METER_TICK)
                            .min(std::time::Duration::from_millis(left.max(1)));
                        tokio::select! {
                            _ = tokio::time::sleep(nap) => {}
                            sig = signals.received() => return Ok(RunEnd::Interrupted(sig, Vec::new())),
                        }
                        self.latest = None;
                        continue;
                    }
                    if left > millis(self.wait_up_to) {
                        return self.pause_for(stops::limit_pause(until, &why));
                    }
                    if let Some(sig) = self.wait_for(until, &why, &mut signals).await {
                        return Ok(RunEnd::Interrupted(sig, Vec::new()));
                    }
                    continue;
                }
                let end = self.finish()?;
                let wait = matches!(end, RunEnd::RunningElsewhere(_) | RunEnd::Waiting(_))
                    && self.mode.waits_for_others();
                if !wait {
                    return Ok(end);
                }
                // Other workers hold the rest: look again in a moment (their completions,
                // or their leases running out, make work for this one).
                tokio::select! {
                    _ = tokio::time::sleep(self.mode.poll(METER_TICK)) => {}
                    sig = signals.received() => return Ok(RunEnd::Interrupted(sig, Vec::new())),
                }
                continue;
            }
            let reset_due = waits.map(|(u, _)| u);
            // The meters' tick shows progress and waits on; only a finished task or a signal
            // goes back to the schedule (and reads the state again).
            loop {
                tokio::select! {
                    joined = running.join_next() => {
                        let Some(joined) = joined else { break };
                        let (id, result, seconds): (TaskId, Result<WorkResult>, f64) = joined.map_err(|e| Error::Git(format!("a worker panicked: {e}")))?;
                        let role = roles.remove(&id).unwrap_or_default();
                        meters.remove(&id);
                        widths.remove(&id);
                        self.budget.release(&id);
                        if let Err(e) = self.record(&id, &role, result, seconds) {
                            self.mode.unrecorded(id);
                            for q in self.queued() {
                                self.mode.unrecorded(q);
                            }
                            return Err(e);
                        }
                        break;
                    }
                    _ = tick.tick() => {
                        self.mode.renew(self.store);
                        if self.queue_aged() {
                            self.flush_queue(false)?;
                        }
                        self.show_notes();
                        // Renewals that cannot reach the remote for long: stop (the caller
                        // stops what runs and says what became of it).
                        if let Some(e) = self.mode.given_up() {
                            return Err(e);
                        }
                        // A limit that kept ready tasks waiting has reset: schedule them.
                        if reset_due.is_some_and(|u| tlv4_core::clock::now_ms() >= u) {
                            self.latest = None;
                            break;
                        }
                        // A worker with a free slot looks for work other workers made.
                        if self.mode.looks_again(running.len()) {
                            self.latest = None;
                            break;
                        }
                        for (id, (meter, shown, shown_step)) in &mut meters {
                            let tokens = meter.read();
                            let step = meter.current_step();
                            if tokens != *shown || step != *shown_step {
                                *shown = tokens;
                                shown_step.clone_from(&step);
                                let role = roles.get(id).cloned().unwrap_or_default();
                                (self.on)(Progress::Tokens { task: id.clone(), role, tokens, step });
                            }
                        }
                    }
                    sig = signals.received() => {
                        // The signal's handler stops every process group of ours (agents, the
                        // tester's commands); their tasks go back to pending.
                        let ids: Vec<TaskId> = roles.keys().cloned().collect();
                        self.interrupt(&ids)?;
                        // What finished here goes to the session before the worker stops.
                        self.flush_queue(true)?;
                        // Their workers end once their processes are gone; wait for them, so each
                        // removes its checkout. Their results are not recorded.
                        let _ = tokio::time::timeout(WORKERS_AFTER_SIGNAL, async {
                            while running.join_next().await.is_some() {}
                        })
                        .await;
                        return Ok(RunEnd::Interrupted(sig, ids));
                    }
                }
            }
        }
    }

    /// A worker lost its remote (`remote`, git said `detail`) while tasks ran: their agents are
    /// stopped and their checkouts removed; what it still holds is given back if the remote
    /// answers again, and otherwise its leases run out. The error says what became of each
    /// task; nothing here is lost (a finished task's work stays on its local task branch).
    async fn lost_remote(
        &mut self,
        remote: String,
        detail: String,
        running: &mut Running,
        roles: &BTreeMap<TaskId, String>,
    ) -> Error {
        let ids: Vec<TaskId> = roles.keys().cloned().collect();
        let Some(r) = self.mode.worker() else {
            return Error::Unreachable { remote, detail };
        };
        let mut said = vec![detail];
        let unrecorded = r.unrecorded.clone();
        let skew = millis(r.opts.skew);
        let until = r
            .held
            .borrow()
            .iter()
            .filter(|(id, _)| ids.contains(id) || unrecorded.contains(id))
            .map(|(_, h)| h.lease.expires_ms.saturating_add(skew))
            .max();
        if !ids.is_empty() {
            tlv4_core::process::stop_all(tlv4_core::process::signals::STOP_GRACE);
            let _ = tokio::time::timeout(WORKERS_AFTER_SIGNAL, async {
                while running.join_next().await.is_some() {}
            })
            .await;
        }
        let names = |ids: &[TaskId]| {
            ids.iter()
                .map(TaskId::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut back = ids.clone();
        back.extend(unrecorded.iter().cloned());
        let given = !back.is_empty() && self.interrupt(&back).is_ok();
        if !ids.is_empty() {
            said.push(format!("stopped the tasks running here: {}", names(&ids)));
        }
        for id in &unrecorded {
            said.push(format!(
                "{id} finished but its result could not be recorded; its work stays on the local branch {}",
                worktree::task_ref(&self.sid, id)
            ));
        }
        if given {
            said.push(format!(
                "returned to pending on `{remote}`: {}",
                names(&back)
            ));
        } else if !back.is_empty() {
            let when = until.map_or_else(String::new, |ms| format!(" by {}", rfc3339_ms(ms)));
            said.push(format!(
                "their leases on `{remote}` run out{when}; then any worker runs them again"
            ));
        }
        Error::Unreachable {
            remote,
            detail: said.join("; "),
        }
    }

    /// Claims `id` for this process and builds the worker's input: here with a claim event;
    /// a worker on the task's own ref on the remote, from `view` (its view of the remote's
    /// tip, see [`Mode::current_state`]).
    fn claim(&mut self, view: &State, id: &TaskId) -> Result<Option<(TaskInput, QualityContext)>> {
        if let Some(r) = self.mode.worker() {
            let Ok(task) = view.task(id) else {
                return Ok(None);
            };
            if !matches!(task.status, TaskStatus::Pending | TaskStatus::Failed)
                || !view.is_unblocked(task)
                || view.session.status != SessionStatus::Active
                || !r.claim(self.store, &self.sid, view, task)?
            {
                return Ok(None);
            }
            let mut state = view.clone();
            r.adopt(&mut state, id);
            let tip = self.store.tip(&self.sid)?;
            // The next claim reads the remote again: a view that does not show what others
            // finished meanwhile would claim their tasks.
            return self.input(tip, &state, id).map(Some);
        }
        let host = tlv4_core::host::name();
        let written = self.transact(|txn| {
            let state = &txn.state;
            let Ok(task) = state.task(id) else {
                return Ok(None);
            };
            if !matches!(task.status, TaskStatus::Pending | TaskStatus::Failed)
                || !state.is_unblocked(task)
                || state.session.status != SessionStatus::Active
            {
                return Ok(None);
            }
            let t = txn.state.task_mut(id)?;
            t.status = TaskStatus::InProgress;
            t.attempts += 1;
            t.owner = Some(Owner {
                host: host.clone(),
                pid: std::process::id(),
                started_at: tlv4_core::clock::now_rfc3339(),
                start_time: tlv4_core::host::own_start_time(),
            });
            let summary = format!(
                "Claimed by the coordinator ({host}:{}), attempt {}",
                std::process::id(),
                t.attempts
            );
            Ok(Some(Event::task(EventKind::TaskClaimed, t, summary)))
        })?;
        let Some(written) = written else {
            return Ok(None);
        };
        self.latest = Some(written.state.clone());
        self.input(written.commit, &written.state, id).map(Some)
    }

    /// The worker's input for task `id` of `state`, the session at commit `tip`.
    fn input(
        &mut self,
        tip: gix::ObjectId,
        state: &State,
        id: &TaskId,
    ) -> Result<(TaskInput, QualityContext)> {
        let tree = self.store.commit_tree(tip)?;
        let folder = self
            .store
            .read_folder(tree, &session_dir(&self.sid), &["tasks", "runs"])?;
        let folder = folder
            .into_iter()
            .filter(|(k, _)| k != "session.toml" && k != "control.toml")
            .collect();
        let code = self.code_tree(tree)?;
        let base: gix::ObjectId = state
            .session
            .base
            .parse()
            .map_err(|_| Error::Git(format!("bad base commit {}", state.session.base)))?;
        let task = state.tasks[id].clone();
        let qctx = QualityContext {
            repo: self.store.repo().clone().into_sync(),
            base,
            tip,
            conf: Arc::clone(&self.conf),
            // Never a shell without the box, whatever the session says (the run refused
            // such a session when it began; see `Roster::shell_here`).
            shell: state.control.settings.shell && tlv4_core::sandbox::level().active(),
        };
        Ok((
            TaskInput {
                session: state.session.clone(),
                task,
                folder,
                code,
            },
            qctx,
        ))
    }

    /// The code tree of `tree`, reused while the code outside `.tlv4` does not change.
    fn code_tree(&mut self, tree: gix::ObjectId) -> Result<CodeTree> {
        let root = self
            .store
            .repo()
            .find_tree(tree)
            .map_err(|e| Error::git("cannot read tree", e))?;
        let decoded = root
            .decode()
            .map_err(|e| Error::git("cannot read tree", e))?;
        let mut key = Vec::new();
        for e in decoded.entries.iter().filter(|e| e.filename != ".tlv4") {
            key.extend_from_slice(e.filename);
            key.extend_from_slice(e.oid.as_bytes());
        }
        if let Some((k, code)) = &self.code
            && *k == key
        {
            return Ok(code.clone());
        }
        let code = CodeTree::from_tree(self.store.repo(), tree)?;
        self.code = Some((key, code.clone()));
        Ok(code)
    }

    /// Records a finished task and everything its completion implies, as one event, then
    /// tells the user, the hooks and the bus. The steps are in [`super::record`]. A worker
    /// queues it, to be pushed with others in a batch (see [`batch`]).
    fn record(
        &mut self,
        id: &TaskId,
        role: &str,
        result: Result<WorkResult>,
        seconds: f64,
    ) -> Result<()> {
        let result = result.unwrap_or_else(|e| {
            if Role::from(role).is_quality() {
                return WorkResult::failed("quality", e.to_string());
            }
            let agent = self.roster.for_role(role);
            WorkResult::failed(agent.name(), super::worker::reason(agent.name(), &e))
        });
        // A run its task did not end (a usage limit, a failed service with another agent to
        // go to) sends the task back to pending rather than recording a result.
        if self.stopped(id, role, &result)? {
            return Ok(());
        }
        let done = batch::Done::new(id.clone(), result, seconds);
        if self.mode.worker().is_some() {
            // Until the session has it, the budget counts what the run spent.
            // A best-of task's runs are its candidates'.
            let usages: Vec<&crate::agents::command::Usage> = match &done.result.candidates {
                Some(c) => c.runs.values().map(|r| &r.usage).collect(),
                None => done.result.run.iter().map(|r| &r.usage).collect(),
            };
            if let Some(first) = usages.first() {
                let sum = |f: fn(&crate::agents::command::Usage) -> u64| {
                    usages.iter().map(|u| f(u)).sum::<u64>()
                };
                let cost_usd = usages.iter().map(|u| u.cost_usd).sum::<Option<f64>>();
                self.budget.hold_spent(
                    id,
                    role,
                    tlv4_store::ledger::RunUsage {
                        task: id.to_string(),
                        role: role.to_owned(),
                        agent: done.result.agent.clone(),
                        model: first.model.clone(),
                        input_tokens: sum(|u| u.input_tokens),
                        cached_input_tokens: sum(|u| u.cached_input_tokens),
                        output_tokens: sum(|u| u.output_tokens),
                        cost_usd,
                        seconds: usages.iter().map(|u| u.seconds).sum(),
                    },
                );
            }
            // Pushed with others once nothing else is to be claimed, or once it has waited
            // long enough (the loop and its tick see to it).
            self.queue.push(done);
            return Ok(());
        }
        let mut applied = batch::Applied::default();
        let written = self.transact(|txn| self.apply(txn, &done, &mut applied))?;
        self.recorded(done, written, applied)
    }

    /// The change that records `done` in `txn` (a worker's only while it holds the task's
    /// lease; `applied` says if it lost it, and the notes to show).
    fn apply(
        &self,
        txn: &mut Txn<'_>,
        done: &batch::Done,
        applied: &mut batch::Applied,
    ) -> Result<Option<Event>> {
        let (id, result, mode, sid) = (&done.id, &done.result, &self.mode, &self.sid);
        *applied = batch::Applied::default();
        mode.adopt(txn, id);
        let holder = record::holder(txn, mode, sid, id)?;
        applied.lost = holder == record::Holder::Lost;
        let record::Holder::Us(task, lease) = holder else {
            return Ok(None);
        };
        record::push_with_result(txn, mode, sid, id, lease, result)?;
        let mut rec = record::Recording::new(*task, done.output.clone(), result.warnings.clone());
        record::merge(txn, &mut rec, result)?;
        record::write_run_record(txn, id, &rec, result, done.seconds)?;
        record::pin_roles_lock(txn, sid, result, &self.roles_lock)?;
        record::write_outputs(txn, &rec)?;
        record::settle(&mut txn.state, id, &rec)?;
        record::revise_conflict(&mut txn.state, id, &mut rec)?;
        record::follow_ups(txn, &self.spec, id, result, &mut rec)?;
        record::log_warnings(txn, sid, id, &rec)?;
        applied.notes.clone_from(&rec.notes);
        let mut event = record::event(&txn.state, id, rec)?;
        if let Some(claim) = lease {
            event = event.with("Claim", claim.to_string());
        }
        let taken_from = mode
            .worker()
            .and_then(|r| r.held.borrow().get(id).and_then(|h| h.taken_from.clone()));
        if let Some(l) = taken_from {
            event = event.with(
                "Taken-From",
                format!(
                    "{} attempt {}, leased until {}",
                    l.holder,
                    l.attempt,
                    rfc3339_ms(l.expires_ms)
                ),
            );
        }
        Ok(Some(event))
    }

    /// What follows a task's result once the session has it (`written`), or once it was not
    /// this loop's to record.
    fn recorded(
        &mut self,
        done: batch::Done,
        written: Option<Written>,
        applied: batch::Applied,
    ) -> Result<()> {
        let batch::Done {
            id,
            result,
            seconds,
            output,
            ..
        } = done;
        let id = &id;
        // The session has it now (or it is not this worker's): the ledger counts it.
        self.budget.release(id);
        let bound = match &result.stopped {
            Some(super::worker::Stopped::OverBound(detail)) => Some(detail.clone()),
            _ => None,
        };
        let held = self.mode.take_held(id);
        let Some(written) = written else {
            if applied.lost {
                self.keep_late(id, held.clone(), &result)?;
                // A claim the session moved past (the task finished or reset meanwhile):
                // its lease goes, unless it was taken back already.
                if let (Some(r), Some(h)) = (self.mode.worker(), held.filter(|h| !h.lost)) {
                    self.store
                        .release_lease(&r.opts.remote, &self.sid, id, h.commit)?;
                }
            }
            return Ok(());
        };
        if self.mode.worker().is_none() {
            self.latest = Some(written.state.clone());
        }
        self.keep_unmerged(id, &written, &result)?;
        let ok = written.state.tasks[id].status == TaskStatus::Completed;
        (self.on)(Progress::Finished {
            task: id.clone(),
            ok,
            summary: written.event.summary.clone(),
            seconds,
        });
        for n in applied
            .notes
            .into_iter()
            .chain(result.notes.iter().cloned())
        {
            (self.on)(Progress::Note(n));
        }
        self.tell_hooks(id, &written);
        let p = written.state.progress();
        (self.on)(Progress::Count {
            done: p.completed,
            total: p.total,
        });
        let message = record::message(id, &written, &output);
        self.store.send_message(&self.sid, &message)?;
        // A run stopped at its task's bound pauses the session (what runs still finishes).
        if let Some(detail) = bound {
            self.pause_for(stops::bound_pause(id, &detail))?;
        }
        Ok(())
    }

    /// A snapshot the session did not merge (the run failed, or its change conflicted) is
    /// kept under a ref of its own: the task branch may be started afresh or deleted.
    fn keep_unmerged(&self, id: &TaskId, written: &Written, result: &WorkResult) -> Result<()> {
        let task = &written.state.tasks[id];
        let Some(snap) = result
            .snapshot
            .as_ref()
            .filter(|_| task.status != TaskStatus::Completed)
        else {
            return Ok(());
        };
        let why = format!("unmerged work of {id}, attempt {}", task.attempts);
        self.mode
            .keep_unmerged(self.store, &self.sid, id, task.attempts, snap.commit, &why)
    }

    /// The user's hooks hear of a recorded task; what they say is shown, it changes nothing.
    fn tell_hooks(&mut self, id: &TaskId, written: &Written) {
        for (event, payload) in record::hook_events(&self.sid, id, written) {
            if let Some(run) = self.hooks.run(event, &payload, self.store.workdir()) {
                let said = run.message.trim();
                if !run.ok {
                    (self.on)(Progress::Note(format!("the {event} hook failed: {said}")));
                } else if !said.is_empty() {
                    (self.on)(Progress::Note(format!("{event} hook: {said}")));
                }
            }
        }
    }

    /// Writes one event (see [`Mode::transact`]).
    fn transact(
        &self,
        change: impl FnMut(&mut Txn<'_>) -> Result<Option<Event>>,
    ) -> Result<Option<tlv4_store::store::Written>> {
        self.mode.transact(self.store, &self.sid, change)
    }

    /// The session's state now (see [`Mode::current_state`]).
    fn current_state(&mut self) -> Result<State> {
        self.mode.current_state(self.store, &self.sid)
    }

    /// A worker returns to pending the tasks whose lease ran out (other workers', or one it
    /// lost), with one event that deletes those leases in the same push, each with a lease on
    /// the value judged: a holder that renewed meanwhile keeps its task. The new state, when
    /// something was written.
    fn expire_leases(&mut self, state: &State) -> Result<Option<State>> {
        let Some(r) = self.mode.worker() else {
            return Ok(None);
        };
        let sid = self.sid.clone();
        let leases = self.store.remote_leases(&r.opts.remote, &sid)?;
        let overdue =
            |state: &State,
             leases: &BTreeMap<TaskId, (gix::ObjectId, tlv4_store::store::Lease)>| {
                leases
                    .iter()
                    .filter(|(id, (c, l))| {
                        r.expired(l)
                            && r.held
                                .borrow()
                                .get(*id)
                                .is_none_or(|h| h.commit != *c || h.lost)
                            && state
                                .tasks
                                .get(*id)
                                .is_some_and(|t| t.status == TaskStatus::InProgress)
                    })
                    .map(|(id, (c, l))| (id.clone(), *c, l.clone()))
                    .collect::<Vec<_>>()
            };
        let unleased = r.unleased_overdue(state, &leases);
        if overdue(state, &leases).is_empty() && unleased.is_empty() {
            return Ok(None);
        }
        let written = self.transact(|txn| {
            let leases = txn.store().remote_leases(&r.opts.remote, &sid)?;
            let (mut back, mut ids) = (Vec::new(), Vec::new());
            // Claimed by a run that was not a worker, and still without a lease: the session
            // ref's lease on this event's push makes sure none was made since.
            for id in &unleased {
                let Some(t) = txn.state.tasks.get_mut(id) else {
                    continue;
                };
                if t.status != TaskStatus::InProgress || leases.contains_key(id) {
                    continue;
                }
                let owner = t.owner.take().map_or("no owner".to_owned(), |o| {
                    format!("was {}:{}", o.host, o.pid)
                });
                t.status = TaskStatus::Pending;
                back.push(format!(
                    "{id} ({owner}, attempt {}, claimed without a lease, none for {:.1}s)",
                    t.attempts,
                    (r.opts.lease + r.opts.skew).as_secs_f64()
                ));
                ids.push(id.to_string());
            }
            for (id, commit, lease) in overdue(&txn.state, &leases) {
                let t = txn.state.task_mut(&id)?;
                t.status = TaskStatus::Pending;
                t.owner = None;
                back.push(format!(
                    "{id} (was {}, attempt {}, leased until {})",
                    lease.holder,
                    lease.attempt,
                    rfc3339_ms(lease.expires_ms)
                ));
                release(txn, &sid, &id, commit);
                ids.push(id.to_string());
            }
            if back.is_empty() {
                return Ok(None);
            }
            Ok(Some(
                Event::session(
                    EventKind::TasksRecovered,
                    format!(
                        "Returned to pending, their leases expired:\n{}",
                        back.join("\n")
                    ),
                )
                .with("Expired", ids.join(",")),
            ))
        })?;
        Ok(written.map(|w| {
            (self.on)(Progress::Note(w.event.summary.replace('\n', "\n  ")));
            w.state
        }))
    }

    /// Shows what renewals had to say.
    fn show_notes(&mut self) {
        for n in self.mode.take_notes() {
            (self.on)(Progress::Note(n));
        }
    }

    /// Keeps the result of a task whose lease this worker lost under
    /// `refs/tlv4/runs/<SID>/<TASK>/<n>` on the remote (its snapshot; a task without code
    /// has only its summary, which is reported).
    fn keep_late(&mut self, id: &TaskId, held: Option<Held>, result: &WorkResult) -> Result<()> {
        let Some(r) = self.mode.worker() else {
            return Ok(());
        };
        let attempt = held.map_or(0, |h| h.lease.attempt);
        let why = format!("late work of {id}, attempt {attempt}: its lease had run out");
        // A code task's snapshot holds its work; a document task's files are put in a commit
        // on the session's tip, beside which they are kept.
        let commit = match &result.snapshot {
            Some(snap) => snap.commit,
            None => {
                let tip = self.store.fetch_session(&r.opts.remote, &self.sid)?;
                let state = self.store.state_at(&self.sid, tip)?;
                let mut task = state.task(id)?.clone();
                task.attempts = attempt;
                self.store.write_late_result(
                    &self.sid,
                    &task,
                    &result.output.files,
                    &result.output.summary,
                    tip,
                )?
            }
        };
        let kept =
            self.store
                .keep_run_remote(&r.opts.remote, &self.sid, id, attempt, commit, &why)?;
        let note =
            format!("{id}: the lease ran out before the result came; not recorded, kept at {kept}");
        (self.on)(Progress::Note(note));
        Ok(())
    }

    /// Returns the running tasks to pending after Ctrl-C.
    fn interrupt(&mut self, ids: &[TaskId]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let (sid, mode) = (self.sid.clone(), &self.mode);
        mode.transact(self.store, &sid, |txn| {
            let mut back = Vec::new();
            for id in ids {
                // A worker gives back only what it still holds, and its lease with it.
                if !mode.gives_back(txn, &sid, id)? {
                    continue;
                }
                if let Some(t) = txn.state.tasks.get_mut(id)
                    && t.status == TaskStatus::InProgress
                {
                    t.status = TaskStatus::Pending;
                    t.owner = None;
                    back.push(id.to_string());
                }
            }
            if back.is_empty() {
                return Ok(None);
            }
            Ok(Some(Event::session(
                EventKind::TasksInterrupted,
                format!("Interrupted; returned to pending: {}", back.join(", ")),
            )))
        })?;
        Ok(())
    }

    /// Nothing runs any more: the session is done, paused, aborted, or stuck.
    fn finish(&mut self) -> Result<RunEnd> {
        let state = self.current_state()?;
        match state.session.status {
            SessionStatus::Paused => {
                return Ok(RunEnd::Paused(state.control.pause.clone().unwrap_or(
                    Pause {
                        until: None,
                        kind: PauseKind::Unrecorded,
                        task: None,
                        reason: "the session is paused".into(),
                        next: vec!["git tlv4 resume".into()],
                    },
                )));
            }
            SessionStatus::Aborted => return Ok(RunEnd::Aborted),
            SessionStatus::Completed => return Ok(RunEnd::Completed),
            SessionStatus::Active => {}
        }
        let mut elsewhere = Vec::new();
        let mut others = Vec::new();
        let leaves_others = self.mode.leaves_others();
        let written = self.transact(|txn| {
            elsewhere.clear();
            others.clear();
            if txn.state.session.status != SessionStatus::Active {
                return Ok(None);
            }
            // A worker that does not take every role leaves ready tasks to other workers.
            if leaves_others {
                others = schedulable(&txn.state, &BTreeMap::new())
                    .into_iter()
                    .map(|t| t.id)
                    .collect();
                if !others.is_empty() {
                    return Ok(None);
                }
            }
            // This loop runs nothing now: a task in progress is another process's (or one
            // that died, which `resume` recovers). Either way nothing is stalled.
            elsewhere = in_progress(&txn.state);
            if !elsewhere.is_empty() {
                return Ok(None);
            }
            if txn.state.tasks.values().all(|t| {
                t.status == TaskStatus::Completed || followup::is_revised(&txn.state, &t.id)
            }) {
                txn.state.session.status = SessionStatus::Completed;
                txn.state.control.pause = None;
                let p = txn.state.progress();
                return Ok(Some(
                    Event::session(
                        EventKind::SessionCompleted,
                        format!("All {} tasks completed", p.total),
                    )
                    .with("Status", "completed"),
                ));
            }
            let pause = stall(&txn.state);
            let summary = format!("{}\nNext: {}", pause.reason, pause.next.join(" | "));
            txn.state.session.status = SessionStatus::Paused;
            txn.state.control.pause = Some(pause);
            Ok(Some(
                Event::session(EventKind::SessionPaused, summary)
                    .with("Paused", PauseKind::Stalled.as_str()),
            ))
        })?;
        match written.map(|w| w.state) {
            Some(s) if s.session.status == SessionStatus::Completed => Ok(RunEnd::Completed),
            Some(s) => Ok(RunEnd::Paused(
                s.control.pause.expect("a stall sets a pause"),
            )),
            None if !elsewhere.is_empty() => Ok(RunEnd::RunningElsewhere(elsewhere)),
            None if !others.is_empty() => Ok(RunEnd::Waiting(others)),
            None => {
                self.latest = None;
                self.finish()
            }
        }
    }
}

/// Adds to `txn`'s push the deletion of the lease of `task` on the remote, with a lease on
/// `commit`, the value this worker judged: one that moved meanwhile fails the whole push.
pub(super) fn release(txn: &mut Txn<'_>, sid: &SessionId, task: &TaskId, commit: gix::ObjectId) {
    txn.also_push(tlv4_store::store::RemoteEdit {
        name: tlv4_store::store::lease_ref(sid, task),
        expected: Some(commit),
        new: None,
    });
}

/// Ready tasks not yet running, by priority then dependency order.
fn schedulable(state: &State, running: &BTreeMap<TaskId, String>) -> Vec<tlv4_core::model::Task> {
    let order: BTreeMap<&TaskId, usize> = state
        .ordered()
        .into_iter()
        .enumerate()
        .map(|(i, t)| (&t.id, i))
        .collect();
    let mut ready: Vec<&tlv4_core::model::Task> = state
        .tasks
        .values()
        .filter(|t| {
            t.status == TaskStatus::Pending && state.is_unblocked(t) && !running.contains_key(&t.id)
        })
        .collect();
    ready.sort_by_key(|t| (t.priority, order.get(&t.id).copied().unwrap_or(usize::MAX)));
    ready.into_iter().cloned().collect()
}

/// Why nothing can run although work is left.
fn stall(state: &State) -> Pause {
    let failed: Vec<&tlv4_core::model::Task> = state
        .tasks
        .values()
        .filter(|t| t.status == TaskStatus::Failed && !followup::is_revised(state, &t.id))
        .collect();
    if let Some(first) = failed.first() {
        let list: Vec<String> = failed
            .iter()
            .map(|t| {
                format!(
                    "{} ({})",
                    t.id,
                    t.result
                        .as_ref()
                        .and_then(|r| r.reason.clone())
                        .unwrap_or_default()
                )
            })
            .collect();
        return Pause {
            until: None,
            kind: PauseKind::Stalled,
            task: Some(first.id.clone()),
            reason: format!("nothing can run: failed {}", list.join("; ")),
            next: vec![
                format!("git tlv4 revise {} --feedback TEXT", first.id),
                "git tlv4 resume --retry".into(),
                "git tlv4 abort".into(),
            ],
        };
    }
    Pause {
        until: None,
        kind: PauseKind::Stalled,
        task: None,
        reason: "nothing can run: the pending tasks wait for tasks that cannot complete".into(),
        next: vec!["git tlv4 status".into(), "git tlv4 abort".into()],
    }
}

/// The role instructions and templates whose hash differs between two `roles.lock` texts.
fn changed_specs(pinned: &str, now: &str) -> Vec<String> {
    let entries = |text: &str| -> BTreeMap<String, String> {
        text.lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| {
                let mut parts = l.split_whitespace();
                let id = parts.next()?;
                let path = parts.next()?;
                Some((path.to_owned(), id.to_owned()))
            })
            .collect()
    };
    let (a, b) = (entries(pinned), entries(now));
    let mut changed: Vec<String> = a
        .keys()
        .chain(b.keys())
        .filter(|k| a.get(*k) != b.get(*k))
        .cloned()
        .collect();
    changed.sort();
    changed.dedup();
    changed
}

/// `ms` milliseconds since the epoch, RFC 3339 in UTC with milliseconds.
fn rfc3339_ms(ms: u64) -> String {
    tlv4_core::clock::rfc3339_ms(ms)
}

/// `d` in whole milliseconds.
pub(crate) fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
