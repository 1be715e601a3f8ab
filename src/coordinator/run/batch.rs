//! A worker's completions, pushed to the remote's session in batches (protocol 2,
//! `specs/state-format.md` §18.10). A finished task's result waits in the queue while its
//! lease is renewed; the queue is pushed as consecutive events with one atomic push that
//! moves the session ref once and deletes the leases of the tasks it records. A refused push
//! is not retried at once: the worker goes on with its next task and tries again after a
//! gap that refusals widen ([`crate::coordinator::lease::Pace`]), with everything finished
//! meanwhile in the same batch. So the session ref moves far less often than tasks change
//! hands, and the more workers write, the larger their batches.

use super::{Runner, TaskId, WorkResult};
use crate::agents::TaskOutput;
use tlv4_core::error::{Error, Result};
use tlv4_store::store::{ChainStep, RemoteEdit, turn_release};

/// At most this many refused batches in a row while a worker waits for nothing else.
const FORCED_TRIES: u32 = 60;

/// The shortest time a turn is held for (a dead holder's runs out after it).
const TURN_HOLD: std::time::Duration = std::time::Duration::from_secs(10);

/// A result waits at most about this long for others to join its batch while the worker
/// still has tasks to claim (then the pace decides).
const FLUSH_AGE: std::time::Duration = std::time::Duration::from_secs(1);

/// A finished task waiting to be recorded.
pub(crate) struct Done {
    pub id: TaskId,
    pub result: WorkResult,
    pub seconds: f64,
    /// The result as checked against the contract ([`crate::coordinator::record::vet`]).
    pub output: TaskOutput,
    /// When it was queued.
    at: std::time::Instant,
}

impl Done {
    pub(crate) fn new(id: TaskId, result: WorkResult, seconds: f64) -> Done {
        let output = crate::coordinator::record::vet(&result);
        Done {
            id,
            result,
            seconds,
            output,
            at: std::time::Instant::now(),
        }
    }
}

/// What applying a result found, for what follows it.
#[derive(Default)]
pub(crate) struct Applied {
    /// The task's lease was lost: the result is kept aside.
    pub lost: bool,
    /// Lines to show.
    pub notes: Vec<String>,
}

impl Runner<'_> {
    /// Pushes the queued results as one batch when the pace allows (`force`: until the remote
    /// takes it, waiting out the gaps — the worker has nothing else to do). With other
    /// workers about, the batch is pushed holding the session's turn, so batches do not race
    /// each other for the session ref. A batch not taken stays queued, its leases renewed.
    pub(super) fn flush(&mut self, force: bool) -> Result<()> {
        // Batches refused in a row, and turns waited for (a wait ends the worker only when the
        // session stood still for two leases: while others' batches land, it is a queue).
        let (mut tries, mut waits) = (0, 0u32);
        let started = std::time::Instant::now();
        while !self.queue.is_empty() {
            let Some(r) = self.mode.worker() else {
                return Ok(());
            };
            if !r.flush_due() {
                if !force {
                    return Ok(());
                }
                std::thread::sleep(r.flush_wait());
                r.renew(self.store);
            }
            let remote = r.opts.remote.clone();
            let skew = super::millis(r.opts.skew);
            let hold = super::millis((r.opts.lease / 6).max(TURN_HOLD));
            // Alone on the session as last seen: straight on the tip (a race costs one
            // refusal); with others, the turn first.
            let turn = match r.alone() {
                true => None,
                false => match self
                    .store
                    .take_turn(&remote, &self.sid, r.holder(), hold, skew)?
                {
                    Some(t) => Some(t),
                    None => {
                        r.flushed(false);
                        waits += 1;
                        if !force {
                            return Ok(());
                        }
                        let long = started.elapsed() > r.opts.lease * 2;
                        self.waited(waits, long, &remote)?;
                        continue;
                    }
                },
            };
            let fetch = turn.is_some() || r.flush_fetches();
            let also: Vec<RemoteEdit> = turn
                .map(|t| turn_release(&self.sid, t))
                .into_iter()
                .collect();
            let queue = std::mem::take(&mut self.queue);
            let mut applied: Vec<Applied> = queue.iter().map(|_| Applied::default()).collect();
            let pushed = {
                let this = &*self;
                let mut steps: Vec<ChainStep<'_>> = queue
                    .iter()
                    .zip(applied.iter_mut())
                    .map(|(done, out)| {
                        Box::new(move |txn: &mut tlv4_store::store::Txn<'_>| {
                            this.apply(txn, done, out)
                        }) as ChainStep<'_>
                    })
                    .collect();
                self.store
                    .transact_remote_batch(&remote, &self.sid, fetch, &mut steps, &also)
            };
            // The turn goes with a batch taken; otherwise it is given back here.
            let wrote = matches!(&pushed, Ok(Some(w)) if w.iter().any(Option::is_some));
            if let (Some(t), false) = (turn, wrote) {
                self.store.release_turn(&remote, &self.sid, t)?;
            }
            let pushed = match pushed {
                Ok(p) => p,
                Err(e) => {
                    self.queue = queue;
                    return Err(e);
                }
            };
            if let Some(r) = self.mode.worker() {
                r.flushed(pushed.is_some());
            }
            let Some(written) = pushed else {
                self.queue = queue;
                tries += 1;
                self.not_taken(force, tries, &remote)?;
                if !force {
                    return Ok(());
                }
                continue;
            };
            // The remote took the batch on the tip it was written on: no result of another
            // worker came in between, so its last state is the session now (claims made
            // meanwhile are guarded by their refs), and the loop schedules from it without
            // a fetch.
            self.latest = match written.iter().rev().flatten().next() {
                Some(last) => {
                    let mut view = last.state.clone();
                    if let Some(r) = self.mode.worker() {
                        r.overlay(self.store, &self.sid, &mut view)?;
                    }
                    Some(view)
                }
                None => None,
            };
            for ((done, written), applied) in queue.into_iter().zip(written).zip(applied) {
                self.recorded(done, written, applied)?;
            }
        }
        Ok(())
    }

    /// A batch was not taken (`tries` in a row): while forced, too many end the worker.
    fn not_taken(&self, force: bool, tries: u32, remote: &tlv4_store::store::Remote) -> Result<()> {
        if force && tries >= FORCED_TRIES {
            return Err(self.gave_up(&format!("in {tries} tries"), remote));
        }
        Ok(())
    }

    /// The turn was waited for `waits` times in this forced flush: every fourth wait fetches
    /// (a turn whose holder died shows once it ran out, and the session shows whether others'
    /// batches land); `long` (two leases) with the session standing still ends the worker.
    fn waited(&self, waits: u32, long: bool, remote: &tlv4_store::store::Remote) -> Result<()> {
        if !waits.is_multiple_of(4) {
            return Ok(());
        }
        let branch = tlv4_store::store::session_ref(&self.sid);
        let before = self.store.remote_value(remote, &branch)?;
        let now = self.store.fetch_session(remote, &self.sid)?;
        if long && before == Some(now) {
            return Err(self.gave_up("while its turn never came", remote));
        }
        Ok(())
    }

    /// The error of a worker whose results the session did not take.
    fn gave_up(&self, how: &str, remote: &tlv4_store::store::Remote) -> Error {
        Error::conflict(
            format!(
                "session `{}` on `{}` did not take this worker's results {how}",
                self.sid, remote.name
            ),
            Some("run the worker again: the results are kept on their task branches and the tasks are run again once their leases run out".to_owned()),
        )
    }

    /// Whether the oldest queued result has waited [`FLUSH_AGE`].
    pub(super) fn queue_aged(&self) -> bool {
        self.queue
            .first()
            .is_some_and(|d| d.at.elapsed() >= FLUSH_AGE)
    }

    /// The tasks finished here whose results are not in the session yet.
    pub(super) fn queued(&self) -> Vec<TaskId> {
        self.queue.iter().map(|d| d.id.clone()).collect()
    }
}

impl Runner<'_> {
    /// [`Runner::flush`], with the queued tasks counted as unrecorded when it fails (the
    /// worker stops, and says what became of them).
    pub(super) fn flush_queue(&mut self, force: bool) -> Result<()> {
        self.flush(force).inspect_err(|_| {
            for q in self.queued() {
                self.mode.unrecorded(q);
            }
        })
    }
}
