//! Best of N in the loop: how a best-of task's candidates run here, and — a remote's worker
//! with nothing to claim — running a candidate of a task another worker holds.

use std::sync::Arc;

use super::{Pick, Progress, Runner};
use crate::agents::roster::Roster;
use tlv4_core::error::Result;
use tlv4_core::model::{State, TaskStatus};
use tlv4_store::worktree;

impl Runner<'_> {
    /// A worker's claims on candidates (best of N), on its remote.
    pub(super) fn claims(&self) -> Option<crate::coordinator::bestof::claims::Claims> {
        self.mode
            .worker()
            .map(|r| crate::coordinator::bestof::claims::Claims {
                remote: r.opts.remote.clone(),
                holder: r.holder().to_owned(),
                lease: r.opts.lease,
                skew: r.opts.skew,
            })
    }

    /// A worker with nothing to claim runs a candidate of a best-of task another worker
    /// holds: the last one nobody claimed or sent yet, under a claim of its own, on a thread
    /// that counts as one of its slots. Nothing is recorded here: the holder takes it.
    pub(super) fn help(&mut self, state: &State) -> Result<()> {
        let Some(claims) = self.claims() else {
            return Ok(());
        };
        if !state
            .control
            .settings
            .best_of
            .as_ref()
            .is_some_and(|b| b.several())
        {
            return Ok(());
        }
        let leases = self.store.remote_leases(&claims.remote, &self.sid)?;
        for t in state.tasks.values() {
            if t.status != TaskStatus::InProgress || !t.role.writes_code() {
                continue;
            }
            let Some((_, lease)) = leases.get(&t.id) else {
                continue;
            };
            if lease.holder == claims.holder || claims.expired(lease) {
                continue;
            }
            let Pick::Run(Some(first)) = self.pick(t) else {
                continue;
            };
            let Some(ask) = bestof_ask(&self.roster, &state.control.settings, t, &first, 1) else {
                continue;
            };
            // What was sent already (a thread of this worker may be sending one: a look that
            // fails leaves this task for the next).
            let prefix = tlv4_store::store::refs::runs_prefix(&self.sid, &t.id);
            let Ok(sent) = self.store.fetch_prefix(&claims.remote, &prefix) else {
                continue;
            };
            // Where the holder's candidates start: a candidate here starts there too (its
            // claims say; none yet, nothing to run beside).
            if claims.look(self.store, &self.sid, &t.id).is_err() {
                continue;
            }
            let Some(from) = claims.start_of(self.store, &self.sid, &t.id)? else {
                continue;
            };
            for k in (1..=ask.drivers.len() as u32).rev() {
                let name = worktree::candidate_ref(&self.sid, &t.id, lease.attempt, k);
                if sent.iter().any(|(n, _)| *n == name) {
                    continue;
                }
                let what = (&t.id, lease.attempt, k, from);
                let Some(keeper) = claims.claim(
                    self.store,
                    &self.store.repo().clone().into_sync(),
                    &self.sid,
                    what,
                )?
                else {
                    continue;
                };
                let (mut input, qctx) = self.input(from, state, &t.id)?;
                input.task.attempts = lease.attempt;
                let limits = self.limits.clone();
                let ask = crate::coordinator::bestof::Ask {
                    claims: Some(claims.clone()),
                    ..ask
                };
                (self.on)(Progress::Note(format!(
                    "{}: running candidate {k} beside {}, which holds the task",
                    t.id, lease.holder
                )));
                self.helping.push(std::thread::spawn(move || {
                    let _ =
                        crate::coordinator::bestof::help(&ask, &input, &qctx, &limits, k, keeper);
                }));
                return Ok(());
            }
        }
        Ok(())
    }
}

/// How best-of task `task` runs its candidates, when the session asks for several and its
/// agent (`first`, the role's) works in a checkout: one driver per candidate (`first` for
/// each, or the agents the setting names), at most `free` of them at once.
pub(super) fn bestof_ask(
    roster: &Roster,
    settings: &tlv4_core::model::Settings,
    task: &tlv4_core::model::Task,
    first: &Arc<dyn crate::agents::command::Driver>,
    free: usize,
) -> Option<crate::coordinator::bestof::Ask> {
    let b = settings.best_of.as_ref().filter(|b| b.several())?;
    if !task.role.writes_code() {
        return None;
    }
    let drivers: Vec<Arc<dyn crate::agents::command::Driver>> = if b.agents.is_empty() {
        (0..b.count).map(|_| Arc::clone(first)).collect()
    } else {
        b.agents
            .iter()
            .map(|n| roster.named(n).unwrap_or_else(|| Arc::clone(first)))
            .collect()
    };
    // Candidates are checkouts' work: an agent that works without one (the builtin) runs the
    // task once, as it would.
    if !drivers.iter().all(|d| d.checkout()) {
        return None;
    }
    Some(crate::coordinator::bestof::Ask {
        width: drivers.len().min(free).max(1),
        drivers,
        accept_first: b.accept_first,
        claims: None,
    })
}
