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
use tlv4_core::store::ChainStep;

/// At most this many refused batches in a row while a worker waits for nothing else.
const FORCED_TRIES: u32 = 60;

/// A finished task waiting to be recorded.
pub(crate) struct Done {
    pub id: TaskId,
    pub result: WorkResult,
    pub seconds: f64,
    /// The result as checked against the contract ([`crate::coordinator::record::vet`]).
    pub output: TaskOutput,
}

impl Done {
    pub(crate) fn new(id: TaskId, result: WorkResult, seconds: f64) -> Done {
        let output = crate::coordinator::record::vet(&result);
        Done {
            id,
            result,
            seconds,
            output,
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
    /// takes it, waiting out the gaps — the worker has nothing else to do). A refused batch
    /// stays queued, its leases renewed meanwhile.
    pub(super) fn flush(&mut self, force: bool) -> Result<()> {
        let mut tries = 0;
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
            let fetch = r.flush_fetches();
            let remote = r.opts.remote.clone();
            let queue = std::mem::take(&mut self.queue);
            let mut applied: Vec<Applied> = queue.iter().map(|_| Applied::default()).collect();
            let pushed = {
                let this = &*self;
                let mut steps: Vec<ChainStep<'_>> = queue
                    .iter()
                    .zip(applied.iter_mut())
                    .map(|(done, out)| {
                        Box::new(move |txn: &mut tlv4_core::store::Txn<'_>| {
                            this.apply(txn, done, out)
                        }) as ChainStep<'_>
                    })
                    .collect();
                self.store
                    .transact_remote_batch(&remote, &self.sid, fetch, &mut steps)
            };
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
                if !force {
                    return Ok(());
                }
                if tries >= FORCED_TRIES {
                    return Err(Error::conflict(
                        format!(
                            "session `{}` on `{}` moved under {tries} batches in a row",
                            self.sid, remote.name
                        ),
                        Some("run the worker again: the results are kept on their task branches and the tasks are run again once their leases run out".to_owned()),
                    ));
                }
                continue;
            };
            self.latest = None;
            for ((done, written), applied) in queue.into_iter().zip(written).zip(applied) {
                self.recorded(done, written, applied)?;
            }
        }
        Ok(())
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
