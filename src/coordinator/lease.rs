//! What the run loop keeps when it is a worker on a remote (`git tlv4 worker`): its options,
//! and the leases it holds on the tasks it claimed (the protocol: `tlv4_core::store`'s lease
//! module, `docs/state-format.md` §18.6–§18.9).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use gix::ObjectId;

use tlv4_core::model::{SessionId, TaskId};
use tlv4_core::store::{Lease, Remote};

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
}

/// A lease held: its commit on the remote, and what it says.
#[derive(Debug, Clone)]
pub(crate) struct Held {
    /// The lease commit the remote holds (as this worker last pushed it).
    pub commit: ObjectId,
    /// Its content.
    pub lease: Lease,
    /// When it was last pushed.
    pushed: Instant,
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
        }
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
        store: &tlv4_core::store::Store,
        sid: &SessionId,
        task: &TaskId,
    ) -> tlv4_core::error::Result<Option<Held>> {
        let on_remote =
            store.remote_value(&self.opts.remote, &tlv4_core::store::lease_ref(sid, task))?;
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
            tlv4_core::store::now_ms(),
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
            expires_ms: tlv4_core::store::now_ms() + super::run::millis(self.opts.lease),
        }
    }

    /// How long a waiting worker sleeps before looking again: [`POLL`], up to half of it
    /// more (jittered, so workers do not knock in step).
    pub(crate) fn poll(&self) -> Duration {
        POLL + tlv4_core::clock::jitter(POLL / 2)
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
