//! Candidates shared between a remote's workers: candidate `k` of a task is claimed by a lease
//! of its own, `refs/tlv4/claims/<SID>/<TASK>/c<k>` (a protocol-2 claim: created only if
//! absent, or over one that ran out), renewed while its agent runs and deleted once the
//! candidate's ref is on the remote. The worker that holds the task claims its candidates a
//! wave at a time; an idle worker claims one of a task another worker holds, from the last,
//! and runs it beside; the holder takes what the others sent.
//!
//! The claims live under a prefix of their own because they are pushed from the threads that
//! run candidates, while the loop looks at the remote: the loop never fetches them, so no two
//! threads of one worker write the same mirror ref.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use gix::ObjectId;

use crate::coordinator::run::millis;
use tlv4_core::error::Result;
use tlv4_core::model::{SessionId, TaskId};
use tlv4_store::store::refs::{candidate_claim_ref, candidate_claims_prefix};
use tlv4_store::store::{Lease, Remote, Store, now_ms};

/// How a worker claims candidates on its remote.
#[derive(Debug, Clone)]
pub(crate) struct Claims {
    pub remote: Remote,
    /// `<host>:<pid>`, as its task leases say.
    pub holder: String,
    /// How long a claim lasts unless renewed.
    pub lease: Duration,
    /// The clock difference allowed between workers.
    pub skew: Duration,
}

impl Claims {
    /// Claims candidate `k` of attempt `attempt` of `task` (as the remote was last fetched):
    /// its keeper, which renews the claim until dropped and then deletes it; `None` when
    /// another worker holds it or took it first.
    pub(crate) fn claim(
        &self,
        store: &Store,
        repo: &gix::ThreadSafeRepository,
        sid: &SessionId,
        (task, attempt, k, from): (&TaskId, u32, u32, ObjectId),
    ) -> Result<Option<Keeper>> {
        let name = candidate_claim_ref(sid, task, k);
        let current = match store.remote_value(&self.remote, &name)? {
            Some(c) => Some((c, store.read_lease(c)?)),
            None => None,
        };
        if current.as_ref().is_some_and(|(_, l)| !self.expired(l)) {
            return Ok(None);
        }
        let lease = Lease {
            session: sid.clone(),
            task: task.clone(),
            attempt,
            holder: self.holder.clone(),
            expires_ms: now_ms() + millis(self.lease),
            from: Some(from),
        };
        let previous = current.map(|(c, _)| c);
        Ok(store
            .claim_at(&self.remote, &name, &lease, previous)?
            .map(|commit| Keeper::start(repo.clone(), self.clone(), name, lease, commit)))
    }

    /// The session tip the candidates of `task` start from, as a claim on one of them says
    /// (as last fetched: see [`Claims::look`]).
    pub(crate) fn start_of(
        &self,
        store: &Store,
        sid: &SessionId,
        task: &TaskId,
    ) -> Result<Option<ObjectId>> {
        let prefix = self.remote.mirror(&candidate_claims_prefix(sid, task));
        for (_, commit) in store.refs_with_prefix(&prefix)? {
            if let Some(from) = store.read_lease(commit)?.from {
                return Ok(Some(from));
            }
        }
        Ok(None)
    }

    /// Fetches the claims on `task`'s candidates into the mirror (a thread that holds none of
    /// them: the task's own between its waves), so that [`Claims::claim`] sees which ran out.
    pub(crate) fn look(&self, store: &Store, sid: &SessionId, task: &TaskId) -> Result<()> {
        store.fetch_prefix(&self.remote, &candidate_claims_prefix(sid, task))?;
        Ok(())
    }

    /// Whether `lease` ran out, allowing for the skew.
    pub(crate) fn expired(&self, lease: &Lease) -> bool {
        lease.expired(now_ms(), millis(self.skew))
    }
}

/// A candidate claim held: renewed on a thread of its own a few times per lease, deleted on
/// the remote when dropped.
pub(crate) struct Keeper {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Keeper {
    fn start(
        repo: gix::ThreadSafeRepository,
        claims: Claims,
        name: String,
        mut lease: Lease,
        commit: ObjectId,
    ) -> Keeper {
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let Ok(store) = Store::from_repo(repo.to_thread_local()) else {
                return;
            };
            let mut current = commit;
            let every = claims.lease / 3;
            let mut last = Instant::now();
            while !stopped.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(50));
                if last.elapsed() < every {
                    continue;
                }
                last = Instant::now();
                lease.expires_ms = now_ms() + millis(claims.lease);
                // A renewal that fails is tried again next time; a claim that ran out is
                // another worker's to take, which is no loss: the candidate's ref is what counts.
                if let Ok(Some(new)) = store.renew_at(&claims.remote, &name, current, &lease) {
                    current = new;
                }
            }
            let _ = store.release_at(&claims.remote, &name, current);
        });
        Keeper {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Keeper {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
