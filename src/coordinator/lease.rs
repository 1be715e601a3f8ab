//! How the run loop runs ([`Mode`]: here, or as a worker on a remote), and what it keeps when
//! it is a worker (`git tlv4 worker`): its options, and the leases it holds on the tasks it
//! claimed (the protocol: `tlv4_store::store`'s lease
//! module, `specs/state-format.md` §18.6–§18.9).

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use gix::ObjectId;

use tlv4_core::error::{Error, Result};
use tlv4_core::model::{Event, Owner, SessionId, State, Task, TaskId, TaskStatus};
use tlv4_store::store::{Lease, Remote, Store, Txn, Written};

/// How often a waiting worker looks at the remote again.
const POLL: Duration = Duration::from_millis(300);

/// How a worker runs.
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    /// The remote every event goes through.
    pub remote: Remote,
    /// The roles it takes tasks of (empty: every role).
    pub roles: Vec<String>,
    /// At most this many tasks at once (default: the session's `max_parallel`).
    pub max_parallel: Option<u32>,
    /// Stop once nothing is ready for it, instead of waiting for other workers' tasks.
    pub once: bool,
    /// How long a claim holds a task without renewal.
    pub lease: Duration,
    /// How far apart the clocks of two workers may be: a lease is judged run out only this
    /// long after its end.
    pub skew: Duration,
}

/// The run loop's worker state.
pub(crate) struct RemoteMode {
    /// The options.
    pub opts: WorkerOptions,
    /// The leases this worker holds, by task (renewed from inside a write's retries too,
    /// hence the cell).
    pub held: RefCell<BTreeMap<TaskId, Held>>,
    /// Lines for the progress display that renewals made.
    pub notes: RefCell<Vec<String>>,
    /// Tasks that finished here but whose result the remote did not take (it was out of reach).
    pub unrecorded: Vec<TaskId>,
    /// Since when renewals have failed because the remote was out of reach, and the last
    /// such error's remote and detail; `None` while they go through.
    pub out_of_reach: RefCell<Option<(Instant, String, String)>>,
    /// Tasks seen in progress with no lease on the remote, with when this worker first saw
    /// each so (by its own monotonic clock).
    unleased: RefCell<BTreeMap<TaskId, Instant>>,
    /// When the remote was last fetched.
    last_poll: Instant,
    /// `<host>:<pid>` of this worker, as in the owner of the tasks it claims.
    holder: String,
    /// When the next batch of completions may be pushed (see [`RemoteMode::flushed`]).
    pace: Cell<Pace>,
    /// How many other workers the last look at the remote showed holding leases: then the
    /// session ref is likely to move under a batch written on the mirror's tip, and the more
    /// there are, the longer a turn is waited for.
    others: Cell<usize>,
    /// A claim was refused since the last fetch: the view is stale.
    pub stale: Cell<bool>,
    /// Looks at the remote in a row that found nothing to do.
    idle: Cell<u32>,
}

/// How often a worker pushes its batch of completions: after a refused push it waits a gap
/// that each refusal doubles and each taken batch shortens by a fifth, jittered. With `u` = 2
/// and `d` = 4/5 the gap settles where `u^refused * d^taken` = 1, that is at
/// ln(5/4) / ln 2 ≈ 0.32 refused pushes per batch taken, whatever the number of workers:
/// the more there are, the longer each waits and the more completions a batch carries.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pace {
    /// The gap between two tries; zero while no push was refused lately.
    gap: Duration,
    /// Not before then.
    next: Instant,
}

/// The first gap after a refused batch.
const PACE_MIN: Duration = Duration::from_millis(50);

/// The longest gap with a few workers about: a worker that waits on others' batches waits no
/// longer than this (a turn is held for a fetch and a push)...
const PACE_MAX: Duration = Duration::from_millis(400);

/// ...and with many, this much per other worker seen (up to 5 × [`PACE_MAX`]), so that those
/// waiting for the turn do not take the server's time from the one holding it.
const PACE_PER_WORKER: Duration = Duration::from_millis(25);

/// A lease held: its commit on the remote, and what it says.
#[derive(Debug, Clone)]
pub(crate) struct Held {
    /// The lease commit the remote holds (as this worker last pushed it).
    pub commit: ObjectId,
    /// Its content.
    pub lease: Lease,
    /// When it was last pushed.
    pushed: Instant,
    /// When the task was claimed (RFC 3339), for the owner its completion records.
    claimed_at: String,
    /// The lease that had run out, when the claim took the task over from another worker.
    pub taken_from: Option<Lease>,
    /// The remote refused a renewal: the lease was taken back.
    pub lost: bool,
}

impl Held {
    /// A lease just created by a claim.
    pub(crate) fn new(commit: ObjectId, lease: Lease) -> Held {
        Held {
            commit,
            lease,
            pushed: Instant::now(),
            claimed_at: tlv4_core::clock::now_rfc3339(),
            taken_from: None,
            lost: false,
        }
    }

    /// Whether a renewal is due: a third of a lease of `length` has passed since the last push.
    pub(crate) fn due(&self, length: Duration) -> bool {
        !self.lost && self.pushed.elapsed() >= length / 3
    }

    /// The remote took the renewal `commit` carrying `lease`.
    pub(crate) fn renewed(&mut self, commit: ObjectId, lease: Lease) {
        self.commit = commit;
        self.lease = lease;
        self.pushed = Instant::now();
    }
}

impl RemoteMode {
    pub(crate) fn new(opts: WorkerOptions) -> RemoteMode {
        RemoteMode {
            opts,
            held: RefCell::new(BTreeMap::new()),
            notes: RefCell::new(Vec::new()),
            unrecorded: Vec::new(),
            out_of_reach: RefCell::new(None),
            unleased: RefCell::new(BTreeMap::new()),
            last_poll: Instant::now(),
            holder: format!("{}:{}", tlv4_core::host::name(), std::process::id()),
            pace: Cell::new(Pace {
                gap: Duration::ZERO,
                next: Instant::now(),
            }),
            others: Cell::new(0),
            stale: Cell::new(false),
            idle: Cell::new(0),
        }
    }

    /// Whether a batch of completions may be pushed now.
    pub(crate) fn flush_due(&self) -> bool {
        Instant::now() >= self.pace.get().next
    }

    /// How long until a batch may be pushed.
    pub(crate) fn flush_wait(&self) -> Duration {
        self.pace
            .get()
            .next
            .saturating_duration_since(Instant::now())
    }

    /// Whether the next batch fetches the session first: after refusals, or when other
    /// workers hold tasks, the tip as last seen is likely stale, and a stale one costs a
    /// refusal.
    pub(crate) fn flush_fetches(&self) -> bool {
        !self.pace.get().gap.is_zero() || self.others.get() > 0
    }

    /// A batch was pushed (`taken`) or refused: the gap to the next try (see [`Pace`]),
    /// never above a quarter of the lease, so completions wait less than the leases last.
    pub(crate) fn flushed(&self, taken: bool) {
        let Pace { gap, .. } = self.pace.get();
        let gap = if taken {
            let shorter = gap * 4 / 5;
            if shorter < PACE_MIN / 2 {
                Duration::ZERO
            } else {
                shorter
            }
        } else {
            // Each other worker may hold the turn before this one: the cap grows with them.
            let cap = (PACE_PER_WORKER * u32::try_from(self.others.get()).unwrap_or(u32::MAX))
                .clamp(PACE_MAX, PACE_MAX * 5);
            (gap * 2).max(PACE_MIN).min(cap).min(self.opts.lease / 4)
        };
        let next = Instant::now() + gap / 2 + tlv4_core::clock::jitter(gap / 2);
        self.pace.set(Pace { gap, next });
    }

    /// `<host>:<pid>` of this worker.
    pub(crate) fn holder(&self) -> &str {
        &self.holder
    }

    /// Whether the last look at the remote showed no other worker's lease.
    pub(crate) fn alone(&self) -> bool {
        self.others.get() == 0
    }

    /// The owner a claim of this worker stands for in the session, as protocol 1 recorded it.
    fn owner(&self, held: &Held) -> Owner {
        Owner {
            host: tlv4_core::host::name(),
            pid: std::process::id(),
            started_at: held.claimed_at.clone(),
            start_time: tlv4_core::host::own_start_time(),
        }
    }

    /// Claims `task` of `state` (protocol 2, `specs/state-format.md` §18.10): its lease is
    /// pushed on its own ref, created only if absent or replacing one that ran out; no
    /// session event. `false`: another worker holds it or took it first, or — an inner
    /// loop's task — another task of its role is in progress.
    pub(crate) fn claim(
        &self,
        store: &Store,
        sid: &SessionId,
        state: &State,
        task: &Task,
    ) -> Result<bool> {
        if task.inner_loop
            && state.tasks.values().any(|o| {
                o.id != task.id && o.role == task.role && o.status == TaskStatus::InProgress
            })
        {
            return Ok(false);
        }
        let current = store.remote_lease(&self.opts.remote, sid, &task.id)?;
        if current.as_ref().is_some_and(|(_, l)| !self.expired(l)) {
            return Ok(false);
        }
        // Taking over from a worker whose lease ran out counts its attempt too: the session
        // never recorded it, the lease did.
        let before = current.as_ref().map_or(0, |(_, l)| l.attempt);
        let lease = self.lease_for(sid, &task.id, task.attempts.max(before) + 1);
        let previous = current.as_ref().map(|(c, _)| *c);
        let Some(commit) = store.claim_lease(&self.opts.remote, &lease, previous)? else {
            self.stale.set(true);
            return Ok(false);
        };
        let mut held = Held::new(commit, lease);
        held.taken_from = current.map(|(_, l)| l);
        self.held.borrow_mut().insert(task.id.clone(), held);
        self.busy();
        Ok(true)
    }

    /// Shows in `state` the claim this worker holds on `id` as protocol 1 recorded claims: in
    /// progress, the lease's attempt, this worker as owner — so that a completion (or a
    /// task given back) is written as it always was. Nothing when the session moved past the
    /// claim (the task is not pending or failed at an attempt before the lease's).
    pub(crate) fn adopt(&self, state: &mut State, id: &TaskId) {
        let held = self.held.borrow();
        let Some(h) = held.get(id).filter(|h| !h.lost) else {
            return;
        };
        let Some(t) = state.tasks.get_mut(id) else {
            return;
        };
        if !matches!(t.status, TaskStatus::Pending | TaskStatus::Failed)
            || t.attempts >= h.lease.attempt
        {
            return;
        }
        t.status = TaskStatus::InProgress;
        t.attempts = h.lease.attempt;
        t.owner = Some(self.owner(h));
    }

    /// The loop's view of `state`: a task whose lease on the remote (as last fetched) is live
    /// shows as in progress by the lease's holder, since a claim writes no session event.
    pub(crate) fn overlay(&self, store: &Store, sid: &SessionId, state: &mut State) -> Result<()> {
        let leases = store.remote_leases(&self.opts.remote, sid)?;
        let mut others = std::collections::BTreeSet::new();
        for (id, (_, lease)) in leases {
            if self.expired(&lease) {
                continue;
            }
            if lease.holder != self.holder {
                others.insert(lease.holder.clone());
            }
            let Some(t) = state.tasks.get_mut(&id) else {
                continue;
            };
            if !matches!(t.status, TaskStatus::Pending | TaskStatus::Failed) {
                continue;
            }
            let (host, pid) = lease
                .holder
                .rsplit_once(':')
                .map_or((lease.holder.as_str(), "0"), |(h, p)| (h, p));
            t.status = TaskStatus::InProgress;
            t.attempts = t.attempts.max(lease.attempt);
            t.owner = Some(Owner {
                host: host.to_owned(),
                pid: pid.parse().unwrap_or(0),
                started_at: String::new(),
                start_time: None,
            });
        }
        self.others.set(others.len());
        Ok(())
    }

    /// Reorders `ready` (in priority order) so that workers looking at the same ready set
    /// try different tasks first: within each priority, the list is rotated by an offset of
    /// this worker's own. Fewer workers then race for the same claim.
    pub(crate) fn spread(&self, ready: &mut [tlv4_core::model::Task]) {
        use std::hash::BuildHasher;
        let seed = foldhash::fast::FixedState::default().hash_one(&self.holder);
        let mut start = 0;
        while start < ready.len() {
            let priority = ready[start].priority;
            let len = ready[start..]
                .iter()
                .take_while(|t| t.priority == priority)
                .count();
            let by = usize::try_from(seed % len as u64).unwrap_or(0);
            ready[start..start + len].rotate_left(by);
            start += len;
        }
    }

    /// The lease of `task` this worker holds, when the remote (as last fetched) still holds
    /// it as this worker last pushed it.
    pub(crate) fn still_held(
        &self,
        store: &tlv4_store::store::Store,
        sid: &SessionId,
        task: &TaskId,
    ) -> tlv4_core::error::Result<Option<Held>> {
        let on_remote =
            store.remote_value(&self.opts.remote, &tlv4_store::store::lease_ref(sid, task))?;
        let held = self.held.borrow().get(task).cloned();
        Ok(held.filter(|h| !h.lost && on_remote == Some(h.commit)))
    }

    /// The tasks of `state` in progress with no lease in `leases` (the remote's, as fetched)
    /// that this worker has seen so for a whole lease and skew of its own time. A worker's
    /// claim always creates its lease in the same push, so such a task was claimed by a run
    /// that was not a worker (a local run, crashed or not, whose session was then pushed):
    /// nothing renews it, and it is taken back like an expired lease (§18.9). Judged by this
    /// worker's monotonic clock, not the claim's time stamp, so no clock skew enters; a new
    /// worker waits that long before it takes such a task back.
    pub(crate) fn unleased_overdue(
        &self,
        state: &tlv4_core::model::State,
        leases: &BTreeMap<TaskId, (ObjectId, Lease)>,
    ) -> Vec<TaskId> {
        let held = self.held.borrow();
        let without: Vec<&TaskId> = state
            .tasks
            .values()
            .filter(|t| {
                t.status == tlv4_core::model::TaskStatus::InProgress
                    && !leases.contains_key(&t.id)
                    && !held.contains_key(&t.id)
            })
            .map(|t| &t.id)
            .collect();
        let mut seen = self.unleased.borrow_mut();
        seen.retain(|id, _| without.contains(&id));
        let now = Instant::now();
        for id in without {
            seen.entry(id.clone()).or_insert(now);
        }
        let wait = self.opts.lease + self.opts.skew;
        seen.iter()
            .filter(|(_, since)| now.duration_since(**since) >= wait)
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// The error to stop with when renewals have failed for half a lease because the remote
    /// is out of reach (as long as a worker's fetch is retried): the leases it holds are
    /// running out, so its tasks are others' to take soon.
    pub(crate) fn given_up(&self) -> Option<tlv4_core::error::Error> {
        let gone = self.out_of_reach.borrow();
        let (since, remote, detail) = gone.as_ref()?;
        (since.elapsed() >= self.opts.lease / 2).then(|| tlv4_core::error::Error::Unreachable {
            remote: remote.clone(),
            detail: detail.clone(),
        })
    }

    /// Whether this worker takes tasks of `role`.
    pub(crate) fn takes(&self, role: &str) -> bool {
        self.opts.roles.is_empty() || self.opts.roles.iter().any(|r| r == role)
    }

    /// Whether `lease` has run out by this machine's clock, with the skew margin.
    pub(crate) fn expired(&self, lease: &Lease) -> bool {
        lease.expired(
            tlv4_store::store::now_ms(),
            super::run::millis(self.opts.skew),
        )
    }

    /// A new lease on attempt `attempt` of `task`, held by this worker from now.
    pub(crate) fn lease_for(&self, sid: &SessionId, task: &TaskId, attempt: u32) -> Lease {
        Lease {
            session: sid.clone(),
            task: task.clone(),
            attempt,
            holder: self.holder.clone(),
            expires_ms: tlv4_store::store::now_ms() + super::run::millis(self.opts.lease),
            from: None,
        }
    }

    /// How long a waiting worker sleeps before looking again: [`POLL`], doubled after a look
    /// that found nothing, and up to half of it more (jittered, so workers do not knock in
    /// step).
    pub(crate) fn poll(&self) -> Duration {
        // A look that found nothing to do doubles the wait once: idle workers would
        // otherwise take the CPU and the server the busy ones need (more would make them
        // slow to see the session complete).
        let idle = self.idle.get();
        self.idle.set(idle.saturating_add(1));
        let base = POLL * (1 << idle.min(1));
        base + tlv4_core::clock::jitter(base / 2)
    }

    /// The worker found work: it looks again soon when it next waits.
    pub(crate) fn busy(&self) {
        self.idle.set(0);
    }

    /// Whether it is time to fetch again while tasks run.
    pub(crate) fn poll_due(&self) -> bool {
        self.last_poll.elapsed() >= POLL
    }

    /// The remote was just fetched.
    pub(crate) fn polled(&mut self) {
        self.last_poll = Instant::now();
    }
}

/// The change that marks a session for workers that claim on refs of their own (state
/// format 2, §18.10): `session_upgraded`, or nothing when it is marked already.
pub(crate) fn mark_claim_refs(txn: &mut Txn<'_>) -> Result<Option<Event>> {
    use tlv4_core::model::{EventKind, SCHEMA_CLAIM_REFS};
    if txn.state.session.schema >= SCHEMA_CLAIM_REFS {
        return Ok(None);
    }
    txn.state.session.schema = SCHEMA_CLAIM_REFS;
    Ok(Some(
        Event::session(
            EventKind::SessionUpgraded,
            format!(
                "Remote workers claim tasks on refs of their own from here on (state format {SCHEMA_CLAIM_REFS})"
            ),
        )
        .with("Schema", SCHEMA_CLAIM_REFS.to_string()),
    ))
}

/// How the run loop runs: here, on this repository's session branch, or as a worker through
/// a remote. The loop asks its mode what to do where the two differ, and never which one it
/// is: everything a worker does otherwise is in [`RemoteMode`].
pub(crate) enum Mode {
    /// A run here: events on the local session branch, claims without leases.
    Local,
    /// A worker (`git tlv4 worker`): every event through the remote, every claim with a
    /// lease, and the tasks of other workers waited for.
    Worker(Box<RemoteMode>),
}

impl Mode {
    /// The worker's state, for a worker.
    pub(crate) fn worker(&self) -> Option<&RemoteMode> {
        match self {
            Mode::Local => None,
            Mode::Worker(r) => Some(&**r),
        }
    }

    /// How often the loop ticks while tasks run: every `meter`, and a worker a few times per
    /// lease too (its tick renews its leases).
    pub(crate) fn tick(&self, meter: Duration) -> Duration {
        match self {
            Mode::Local => meter,
            Mode::Worker(r) => meter.min(r.opts.lease / 4),
        }
    }

    /// At most how many tasks run at once: the session's `max_parallel`, unless a worker was
    /// told otherwise.
    pub(crate) fn max_parallel(&self, session: u32) -> u32 {
        self.worker()
            .and_then(|r| r.opts.max_parallel)
            .unwrap_or(session)
    }

    /// The ready tasks (in priority order) this loop tries to claim, in the order it tries
    /// them: all of them here; a worker's, only of its roles, spread (see
    /// [`RemoteMode::spread`]).
    pub(crate) fn pick(&self, ready: &mut Vec<Task>) {
        if let Mode::Worker(r) = self {
            r.spread(ready);
            ready.retain(|t| r.takes(t.role.as_str()));
        }
    }

    /// Whether the loop waits, with nothing to run, for the tasks other processes hold or
    /// other workers take (a worker not told `--once`), rather than stopping.
    pub(crate) fn waits_for_others(&self) -> bool {
        self.worker().is_some_and(|r| !r.opts.once)
    }

    /// Whether ready tasks of roles this loop does not take are left to others (a worker's
    /// are), rather than stalling the session.
    pub(crate) fn leaves_others(&self) -> bool {
        self.worker().is_some()
    }

    /// How long a waiting loop sleeps before looking again (`local` when not a worker).
    pub(crate) fn poll(&self, local: Duration) -> Duration {
        self.worker().map_or(local, RemoteMode::poll)
    }

    /// Whether the loop, with `running` tasks running, looks at the state again on this tick
    /// for work others made (a worker with a free slot, once a poll is due).
    pub(crate) fn looks_again(&self, running: usize) -> bool {
        self.worker().is_some_and(|r| {
            running < r.opts.max_parallel.unwrap_or(u32::MAX) as usize && r.poll_due()
        })
    }

    /// Task `id` finished but its result could not be recorded.
    pub(crate) fn unrecorded(&mut self, id: TaskId) {
        if let Mode::Worker(r) = self {
            r.unrecorded.push(id);
        }
    }

    /// The error to stop with, when a worker's remote has been out of reach too long.
    pub(crate) fn given_up(&self) -> Option<Error> {
        self.worker().and_then(RemoteMode::given_up)
    }

    /// The lease held on `id`, no longer held once its result is recorded.
    pub(crate) fn take_held(&self, id: &TaskId) -> Option<Held> {
        self.worker().and_then(|r| r.held.borrow_mut().remove(id))
    }

    /// What renewals had to say since last asked.
    pub(crate) fn take_notes(&self) -> Vec<String> {
        self.worker()
            .map(|r| std::mem::take(&mut *r.notes.borrow_mut()))
            .unwrap_or_default()
    }

    /// A worker renews the leases it holds that are due (see [`RemoteMode::renew`]).
    pub(crate) fn renew(&self, store: &Store) {
        if let Mode::Worker(r) = self {
            r.renew(store);
        }
    }

    /// Writes one event: on the session branch here, or — a worker — through the remote
    /// (renewing its leases while it retries).
    pub(crate) fn transact(
        &self,
        store: &Store,
        sid: &SessionId,
        change: impl FnMut(&mut Txn<'_>) -> Result<Option<Event>>,
    ) -> Result<Option<Written>> {
        match self {
            Mode::Local => store.transact(sid, change),
            Mode::Worker(r) => {
                store.transact_remote_with(&r.opts.remote, sid, change, || r.renew(store))
            }
        }
    }

    /// The session's state now: at the local tip, or — a worker — at the remote's, fetched
    /// (with the leases) and fast-forwarded to.
    pub(crate) fn current_state(&mut self, store: &Store, sid: &SessionId) -> Result<State> {
        match self {
            Mode::Local => Ok(store.read_state(sid)?.1),
            Mode::Worker(r) => {
                // A remote out of reach is tried again for half a lease: longer, and the
                // leases this worker holds would run out unrenewed anyway.
                let give_up = Instant::now() + r.opts.lease / 2;
                let tip = loop {
                    match store.fetch_session(&r.opts.remote, sid) {
                        Err(Error::Unreachable { .. })
                            if Instant::now() < give_up
                                && tlv4_core::process::signals::received().is_none() =>
                        {
                            std::thread::sleep(r.poll());
                        }
                        fetched => break fetched?,
                    }
                };
                store.forward_local(sid, tip)?;
                r.polled();
                let mut state = store.state_at(sid, tip)?;
                r.overlay(store, sid, &mut state)?;
                Ok(state)
            }
        }
    }

    /// Keeps a snapshot the session did not merge, `commit` of attempt `attempt` of `id`,
    /// under a ref of its own: here, or — a worker — on the remote.
    pub(crate) fn keep_unmerged(
        &self,
        store: &Store,
        sid: &SessionId,
        id: &TaskId,
        attempt: u32,
        commit: ObjectId,
        why: &str,
    ) -> Result<()> {
        match self {
            Mode::Local => {
                let keep = tlv4_store::worktree::attempt_ref(sid, id, attempt);
                store.create_ref(&keep, commit, &format!("git-tlv4: {why}"))?;
            }
            Mode::Worker(r) => {
                store.keep_run_remote(&r.opts.remote, sid, id, attempt, commit, why)?;
            }
        }
        Ok(())
    }

    /// Shows in `txn`'s state the claim a worker holds on `id` (see [`RemoteMode::adopt`]);
    /// nothing for a run here, whose claims are session events.
    pub(crate) fn adopt(&self, txn: &mut Txn<'_>, id: &TaskId) {
        if let Mode::Worker(r) = self {
            r.adopt(&mut txn.state, id);
        }
    }

    /// Whether the in-progress task `id` is this loop's to give back in `txn`: a local run's
    /// always; a worker's only while it still holds its lease, which goes with it (added to
    /// the push).
    pub(crate) fn gives_back(
        &self,
        txn: &mut Txn<'_>,
        sid: &SessionId,
        id: &TaskId,
    ) -> Result<bool> {
        let Mode::Worker(r) = self else {
            return Ok(true);
        };
        r.adopt(&mut txn.state, id);
        Ok(match r.still_held(txn.store(), sid, id)? {
            Some(h) => {
                super::run::release(txn, sid, id, h.commit);
                true
            }
            None => false,
        })
    }
}

impl RemoteMode {
    /// Renews the leases this worker holds that are due (a third of the lease has passed
    /// since the last renewal). A renewal the remote refuses means the lease was taken back:
    /// the task's result will be kept aside, not recorded.
    pub(crate) fn renew(&self, store: &Store) {
        let length = self.opts.lease;
        let mut notes = self.notes.borrow_mut();
        for (id, h) in self
            .held
            .borrow_mut()
            .iter_mut()
            .filter(|(_, h)| h.due(length))
        {
            let mut lease = h.lease.clone();
            lease.expires_ms = tlv4_store::store::now_ms() + super::run::millis(length);
            let renewed = store.renew_lease(&self.opts.remote, h.commit, &lease);
            match &renewed {
                Err(Error::Unreachable { remote, detail }) => {
                    let mut gone = self.out_of_reach.borrow_mut();
                    let since = gone.as_ref().map_or_else(Instant::now, |g| g.0);
                    *gone = Some((since, remote.clone(), detail.clone()));
                }
                Ok(_) => *self.out_of_reach.borrow_mut() = None,
                Err(_) => {}
            }
            match renewed {
                Ok(Some(commit)) => h.renewed(commit, lease),
                Ok(None) => {
                    h.lost = true;
                    notes.push(format!(
                        "the lease of {id} was taken back (it ran out); its result will be kept aside"
                    ));
                }
                // The remote may be out of reach for a moment: the next tick tries again.
                Err(e) => notes.push(format!("cannot renew the lease of {id}: {e}")),
            }
        }
    }
}
