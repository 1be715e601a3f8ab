//! What stops tasks from running that is not the tasks' doing: the budget (a pause of the
//! kind `budget`), an agent's usage limit (the task waits for the reset, or goes to the next
//! agent of its role's fail-over list, or the session pauses with the kind `limit`), an
//! agent's service that failed (the next agent of the list takes the task).

use super::{Pick, Progress, RunEnd, Runner, UNKNOWN_RESET, millis};
use crate::coordinator::worker::{Stopped, WorkResult};
use tlv4_core::error::Result;
use tlv4_core::model::{
    Event, EventKind, Pause, PauseKind, SessionStatus, Task, TaskId, TaskStatus,
};

impl Runner<'_> {
    /// The agent `task` goes to now: the first of its role's fail-over list whose service
    /// is not limited and has not failed on it; or, when every one is limited, the earliest
    /// reset to wait for.
    pub(super) fn pick(&mut self, task: &Task) -> Pick {
        if task.role.is_quality() {
            return Pick::Run(None);
        }
        let now = tlv4_core::clock::now_ms();
        self.limited.retain(|_, until| *until > now);
        let skip = self.failed_over.get(&task.id);
        let list = self.roster.failover(task.role.as_str());
        let mut earliest: Option<(u64, String)> = None;
        for d in list
            .iter()
            .filter(|d| skip.is_none_or(|s| !s.contains(d.name())))
        {
            match self.limited.get(d.name()) {
                None => return Pick::Run(Some(std::sync::Arc::clone(d))),
                Some(u) if earliest.as_ref().is_none_or(|(e, _)| u < e) => {
                    earliest = Some((*u, d.name().to_owned()));
                }
                Some(_) => {}
            }
        }
        match earliest {
            Some((until, agent)) => Pick::Wait(
                until,
                format!("{} waits for agent {agent}'s usage limit", task.id),
            ),
            // Every agent failed on it: the first takes it again (and its failure counts).
            None => Pick::Run(list.first().cloned()),
        }
    }

    /// Handles a run its task did not end, before it is recorded as a result: a usage limit
    /// or a failed service with an agent left to try sends the task back to pending (not a
    /// failed attempt). `true` when it did.
    pub(super) fn stopped(&mut self, id: &TaskId, role: &str, result: &WorkResult) -> Result<bool> {
        let agent = result.agent.clone();
        let why = match &result.stopped {
            Some(Stopped::Limited { until_ms, detail }) => {
                let until =
                    until_ms.unwrap_or_else(|| tlv4_core::clock::now_ms() + millis(UNKNOWN_RESET));
                self.limited.insert(agent.clone(), until);
                let next = self.next_agent(id, role, &agent);
                format!(
                    "agent {agent} hit a usage limit ({detail}); {id} returned to pending{}, {}",
                    match until_ms {
                        Some(ms) => format!(" until {}", tlv4_core::clock::rfc3339_ms(*ms)),
                        None => " (no reset time given)".to_owned(),
                    },
                    match next {
                        Some(n) => format!("agent {n} takes it next"),
                        None => "it waits for the reset".to_owned(),
                    }
                )
            }
            Some(Stopped::Service(detail)) => {
                let Some(next) = self.next_agent(id, role, &agent) else {
                    return Ok(false);
                };
                self.failed_over
                    .entry(id.clone())
                    .or_default()
                    .insert(agent.clone());
                format!(
                    "agent {agent}'s service failed ({detail}); {id} returned to pending, agent {next} takes it next"
                )
            }
            _ => return Ok(false),
        };
        self.requeue(id, result, &why)?;
        Ok(true)
    }

    /// The agent after `agent` in `role`'s fail-over list that is neither limited nor failed
    /// on task `id`.
    fn next_agent(&self, id: &TaskId, role: &str, agent: &str) -> Option<String> {
        let skip = self.failed_over.get(id);
        self.roster
            .failover(role)
            .iter()
            .map(|d| d.name().to_owned())
            .find(|n| {
                n != agent && !self.limited.contains_key(n) && skip.is_none_or(|s| !s.contains(n))
            })
    }

    /// Returns `id` to pending with one event saying `why`, keeping what its run cost (a
    /// `usage.json` of its attempt, for the ledger) and what its checkout held.
    fn requeue(&mut self, id: &TaskId, result: &WorkResult, why: &str) -> Result<()> {
        let (sid, mode) = (self.sid.clone(), &self.mode);
        let written = mode.transact(self.store, &sid, |txn| {
            if !mode.gives_back(txn, &sid, id)? {
                return Ok(None);
            }
            let Some(t) = txn.state.tasks.get_mut(id) else {
                return Ok(None);
            };
            if t.status != TaskStatus::InProgress {
                return Ok(None);
            }
            t.status = TaskStatus::Pending;
            t.owner = None;
            let (role, attempt) = (t.role.clone(), t.attempts);
            if let Some(run) = &result.run {
                let u = &run.usage;
                let mut usage = serde_json::json!({
                    "task": id, "role": role, "attempt": attempt, "agent": result.agent,
                    "model": u.model, "input_tokens": u.input_tokens, "output_tokens": u.output_tokens,
                    "cost_usd": u.cost_usd, "seconds": u.seconds, "outcome": "returned to pending",
                });
                if u.cached_input_tokens > 0 {
                    usage["cached_input_tokens"] = serde_json::json!(u.cached_input_tokens);
                }
                let mut bytes = serde_json::to_vec_pretty(&usage).unwrap_or_default();
                bytes.push(b'\n');
                txn.write_record(&format!("runs/{id}/{attempt}/usage.json"), bytes)?;
            }
            Ok(Some(
                Event::session(EventKind::TasksInterrupted, why.to_owned())
                    .with("Returned", id.to_string())
                    .with("Agent", result.agent.clone()),
            ))
        })?;
        if let Some(w) = written {
            // Its lease went with the event.
            self.mode.take_held(id);
            if let Some(snap) = &result.snapshot {
                let task = &w.state.tasks[id];
                let keep = format!(
                    "work of {id}, attempt {}, whose agent stopped",
                    task.attempts
                );
                self.mode.keep_unmerged(
                    self.store,
                    &self.sid,
                    id,
                    task.attempts,
                    snap.commit,
                    &keep,
                )?;
            }
            self.latest = Some(w.state);
            (self.on)(Progress::Note(why.to_owned()));
        }
        Ok(())
    }

    /// Pauses the session with `pause` (one event), unless it is no longer active.
    pub(super) fn pause_for(&mut self, pause: Pause) -> Result<RunEnd> {
        let written = self.transact(|txn| {
            if txn.state.session.status != SessionStatus::Active {
                return Ok(None);
            }
            let summary = format!("{}\nNext: {}", pause.reason, pause.next.join(" | "));
            let mut event = Event::session(EventKind::SessionPaused, summary)
                .with("Paused", pause.kind.as_str());
            if let Some(until) = &pause.until {
                event = event.with("Until", until.clone());
            }
            txn.state.session.status = SessionStatus::Paused;
            txn.state.control.pause = Some(pause.clone());
            Ok(Some(event))
        })?;
        if let Some(w) = written {
            self.latest = Some(w.state);
        }
        self.finish()
    }

    /// Waits until `until` (ms since the epoch) for a usage limit, saying so about once a
    /// second; the signal that ended the wait early, if one did.
    pub(super) async fn wait_for(
        &mut self,
        until: u64,
        why: &str,
        signals: &mut tlv4_core::process::signals::Subscription,
    ) -> Option<i32> {
        loop {
            let left = until.saturating_sub(tlv4_core::clock::now_ms());
            if left == 0 {
                return None;
            }
            (self.on)(Progress::Waiting {
                why: why.to_owned(),
                left_ms: left,
            });
            let step = std::time::Duration::from_millis(left.min(1000));
            tokio::select! {
                _ = tokio::time::sleep(step) => {}
                sig = signals.received() => return Some(sig),
            }
        }
    }
}

/// The pause of a session whose ready tasks wait for a usage limit that resets at `until`,
/// later than `[limits] wait_up_to`.
pub(super) fn limit_pause(until: u64, why: &str) -> Pause {
    let at = tlv4_core::clock::rfc3339_ms(until);
    Pause {
        kind: PauseKind::Limit,
        task: None,
        reason: format!("{why}, which resets at {at}"),
        next: vec![
            "git tlv4 resume --wait".into(),
            "git tlv4 resume".into(),
            "git tlv4 abort".into(),
        ],
        until: Some(at),
    }
}

/// The pause of a session whose task `id` was stopped at its bound (`detail`).
pub(super) fn bound_pause(id: &TaskId, detail: &str) -> Pause {
    Pause {
        kind: PauseKind::Budget,
        task: Some(id.clone()),
        reason: format!(
            "{id} was stopped at its task bound ({detail}); what it did is kept as a failed run's"
        ),
        next: vec![
            "git tlv4 resume --retry".into(),
            "git tlv4 cost".into(),
            "git tlv4 abort".into(),
        ],
        until: None,
    }
}
