//! Reconciling a session whose branch has events on both sides, the remote's including user
//! decisions (`pull`, `specs/state-format.md` §18.3).
//!
//! Two people who decide on the same session while apart meant both decisions: they are not
//! two trees to merge file by file but two lists of commands. So the remote's events up to
//! its first decision are merged as any other events (the store's tree merge), and then its
//! decisions are made again, one by one in the order of their (committer date, commit id), on
//! top of the local side, through the same [`decide::apply`] the commands run — as if they
//! had been made one after the other here. The merge event joins both histories (its second
//! parent is the remote's tip) and each decision made again is an event of its own after it;
//! all of them are written with one move of the branch, or none.
//!
//! Decisions that cannot both hold — one side aborted, the other decided to go on; a decision
//! that no longer applies after the local events (a `revise` of a task reset here) — are
//! refused: nothing is written, and the refusal names both events and the command on each
//! side that resolves it (an `undo`, which appends: nothing is lost).

use std::cell::RefCell;

use gix::ObjectId;

use super::decide::{self, Decision, Quote};
use super::revise;
use tlv4_core::error::{Error, Result};
use tlv4_core::model::{EventKind, SessionStatus, State, TaskStatus};
use tlv4_core::text::short_id;
use tlv4_store::store::{ChainStep, Diverged, LoggedEvent, Remote, Store, Txn, session_ref};

/// Decisions of the two sides that cannot both hold.
#[derive(Debug, Clone)]
pub struct Conflict {
    /// What conflicts, both events named.
    pub why: String,
    /// The command that takes theirs, run here (then `pull` again).
    pub here: String,
    /// The command that keeps ours, run on the clone that made theirs (then `push` there).
    pub there: String,
}

/// How a session with decisions on the remote's side came out.
#[derive(Debug)]
pub enum Reconciled {
    /// Merged: the new tip, and the decisions made again (their commands).
    Merged(ObjectId, Vec<String>),
    /// The events do not merge (as the store's reconcile refuses: tasks or files changed on
    /// both sides); nothing was written.
    Refused(String),
    /// Decisions that cannot both hold; nothing was written.
    Conflict(Conflict),
}

/// Reconciles `d` as the module comment says. `quote` puts user text in a Markdown line.
pub fn reconcile(store: &Store, remote: &Remote, d: &Diverged, quote: Quote) -> Result<Reconciled> {
    let sid = &d.sid;
    if let Err(e) = store.ensure_not_checked_out(&session_ref(sid)) {
        return Ok(Reconciled::Refused(e.to_string()));
    }
    let theirs = store.events_since(sid, d.base, d.theirs)?;
    let ours = store.events_since(sid, d.base, d.ours)?;
    let mut replays: Vec<(&LoggedEvent, Decision)> = Vec::new();
    for &i in &live_decisions(&theirs) {
        let e = &theirs[i];
        match Decision::of_event(e) {
            Some(Ok(decision)) => replays.push((e, decision)),
            Some(Err(err)) => return Ok(Reconciled::Refused(err.to_string())),
            // Budget raises count from the history, which the merge joins.
            None if e.trailer("Decision") == Some("budget") => {}
            None => {
                return Ok(Reconciled::Refused(format!(
                    "their `{}` decision ({}) cannot be made again here",
                    e.trailer("Decision").unwrap_or("?"),
                    short_id(&e.commit)
                )));
            }
        }
    }
    replays.sort_by(|a, b| (&a.0.time, &a.0.commit).cmp(&(&b.0.time, &b.0.commit)));
    let our_decisions: Vec<(&LoggedEvent, Decision)> = live_decisions(&ours)
        .into_iter()
        .filter_map(|i| match Decision::of_event(&ours[i]) {
            Some(Ok(decision)) => Some((&ours[i], decision)),
            _ => None,
        })
        .collect();

    // Their events before their first decision merge as any events do.
    let upto = match replays.iter().map(|(e, _)| position(&theirs, e)).min() {
        Some(0) => d.base,
        Some(p) => hex(&theirs[p - 1].commit)?,
        None => d.theirs,
    };
    let (tree, mut merged) = match store.merge_sides(sid, d.base, d.ours, upto)? {
        Ok(m) => m,
        Err(why) => return Ok(Reconciled::Refused(why)),
    };
    // Every event of both sides counts (the merge joins their history); the merge adds one.
    let (b, t) = (store.state_at(sid, d.base)?, store.state_at(sid, d.theirs)?);
    merged.session.events += t.session.events.saturating_sub(b.session.events);
    let theirs_hex = d.theirs.to_string();
    let summary = format!(
        "Merged {} event(s) from {} ({}) with {} event(s) here{}",
        theirs.len(),
        remote.name,
        short_id(&theirs_hex),
        ours.len(),
        if replays.is_empty() {
            String::new()
        } else {
            format!("; their {} decision(s) made again after it", replays.len())
        }
    );
    let conflict: RefCell<Option<Conflict>> = RefCell::new(None);
    let side = Sides {
        theirs: &theirs,
        ours: &ours,
        our_decisions: &our_decisions,
        remote,
        store,
        d,
    };
    let mut steps: Vec<ChainStep<'_>> = Vec::new();
    steps.push(Box::new(|txn: &mut Txn<'_>| {
        txn.state = merged.clone();
        txn.merge(d.theirs, tree);
        Ok(Some(
            tlv4_core::model::Event::session(EventKind::SessionMerged, summary.clone())
                .with("Merged", theirs_hex.clone()),
        ))
    }));
    for (event, decision) in &replays {
        let (side, conflict) = (&side, &conflict);
        steps.push(Box::new(move |txn: &mut Txn<'_>| {
            match side.replay(txn, event, decision, quote) {
                Ok(summary) => Ok(Some(
                    decision
                        .event(summary)
                        .with("Replayed", event.commit.clone()),
                )),
                Err(c) => {
                    *conflict.borrow_mut() = Some(c);
                    Err(Error::state("decisions conflict", None))
                }
            }
        }));
    }
    let written = store.transact_chain(sid, d.ours, &mut steps);
    drop(steps);
    match written {
        Ok(written) => {
            let tip = written.last().map_or(d.ours, |w| w.commit);
            Ok(Reconciled::Merged(
                tip,
                replays.iter().map(|(_, d)| d.command()).collect(),
            ))
        }
        Err(e) => match conflict.borrow_mut().take() {
            Some(c) => Ok(Reconciled::Conflict(c)),
            None => Err(e),
        },
    }
}

/// The two sides' events since they met, oldest first.
struct Sides<'a> {
    theirs: &'a [LoggedEvent],
    ours: &'a [LoggedEvent],
    our_decisions: &'a [(&'a LoggedEvent, Decision)],
    remote: &'a Remote,
    store: &'a Store,
    d: &'a Diverged,
}

impl Sides<'_> {
    /// Makes their `decision` (event `event`) again on the change `txn`: its summary, or why it
    /// cannot hold with ours.
    fn replay(
        &self,
        txn: &mut Txn<'_>,
        event: &LoggedEvent,
        decision: &Decision,
        quote: Quote,
    ) -> std::result::Result<String, Conflict> {
        let said = |what: String| format!("{} ({}): {what}", decision.name(), who(event));
        let state = &txn.state;
        match decision {
            // Both stopped it: that holds.
            Decision::Abort if state.session.status == SessionStatus::Aborted => {
                return Ok(said("aborted here too".into()));
            }
            // One stopped it, the other decided to go on: they cannot both hold.
            Decision::Abort => {
                if let Some((ours, _)) = self.our_decisions.last() {
                    return Err(self.conflict(
                        event,
                        ours,
                        "the session cannot both stop and go on",
                    ));
                }
            }
            // The same pause approved on both sides.
            Decision::Approve if state.session.status != SessionStatus::Paused => {
                if let Some((ours, _)) = self
                    .our_decisions
                    .iter()
                    .find(|(o, d)| *d == Decision::Approve && o.summary == event.summary)
                {
                    return Ok(said(format!(
                        "approved here too ({})",
                        short_id(&ours.commit)
                    )));
                }
                // The pause it approved is gone here (a decision here went on from it): the
                // approval is recorded, as it would have been there.
                if state.session.status != SessionStatus::Aborted
                    && let Some(pause) = self.state_before(event)?.control.pause
                {
                    if let Some(t) = pause.task
                        && !txn.state.control.approved.contains(&t)
                    {
                        txn.state.control.approved.push(t);
                    }
                    return Ok(format!(
                        "approved: {} (the session had gone on here; the approval is recorded)",
                        pause.reason
                    ));
                }
            }
            // A task revised here too: the feedback goes to its revision, as a second one
            // given here would.
            Decision::Revise { task, feedback } => {
                let base = revise::base_id(task);
                if super::followup::is_revised(state, &base) {
                    let latest = revise::latest(state, &base);
                    let mut state = state.clone();
                    let note = if state.tasks[&latest].status == TaskStatus::Pending {
                        let t = state.tasks.get_mut(&latest).expect("latest exists");
                        t.description.push_str(&format!(
                            "Feedback: {}\n",
                            feedback.split_whitespace().collect::<Vec<_>>().join(" ")
                        ));
                        format!("{latest}, revised here too and not run yet, carries it")
                    } else {
                        let made = revise::revise(&mut state, &latest, feedback, true)
                            .map_err(|e| self.refused(event, e))?;
                        format!("revisions {}", decide::list(&made))
                    };
                    txn.state = state;
                    return Ok(format!("revision of {task}: {note}"));
                }
            }
            // The same candidate picked here too.
            Decision::Pick { task, number } => {
                let here = super::pick::picked_here(txn, task, *number)
                    .map_err(|e| self.refused(event, e))?;
                if here {
                    return Ok(said(format!(
                        "candidate {number} of {task} picked here too"
                    )));
                }
            }
            _ => {}
        }
        decide::apply(decision, txn, quote).map_err(|e| self.refused(event, e))
    }

    /// The state their `event` was decided on.
    fn state_before(&self, event: &LoggedEvent) -> std::result::Result<State, Conflict> {
        let at = match position(self.theirs, event) {
            0 => Ok(self.d.base),
            p => hex(&self.theirs[p - 1].commit),
        };
        at.and_then(|at| self.store.state_at(&self.d.sid, at))
            .map_err(|e| self.refused(event, e))
    }

    /// Their `event` cannot be made after our events: `error` says why.
    fn refused(&self, event: &LoggedEvent, error: Error) -> Conflict {
        let ours = self
            .our_decisions
            .last()
            .map(|(e, _)| *e)
            .or(self.ours.last())
            .expect("both sides have events");
        let why = match error {
            Error::State { message, .. } => message,
            e => e.to_string(),
        };
        self.conflict(event, ours, &why)
    }

    /// Their `theirs` and our `ours` cannot both hold, because `why`.
    fn conflict(&self, theirs: &LoggedEvent, ours: &LoggedEvent, why: &str) -> Conflict {
        let after = |list: &[LoggedEvent], e: &LoggedEvent| list.len() - position(list, e);
        Conflict {
            why: format!(
                "their {} and your {} cannot both hold: {why}",
                describe(theirs),
                describe(ours)
            ),
            here: format!(
                "git tlv4 undo -n {} && git tlv4 pull {}",
                after(self.ours, ours),
                self.remote.name
            ),
            there: format!(
                "git tlv4 undo -n {} && git tlv4 push {}",
                after(self.theirs, theirs),
                self.remote.name
            ),
        }
    }
}

/// `` `revise DRAFT-001` (1a2b3c4, by Ada <ada@…>) `` — a decision event, for a message.
fn describe(e: &LoggedEvent) -> String {
    let what = match Decision::of_event(e) {
        Some(Ok(d)) => d.command().trim_start_matches("git tlv4 ").to_owned(),
        _ => e.trailer("Decision").unwrap_or(&e.subject).to_owned(),
    };
    format!("`{}` ({})", tlv4_core::text::clip(&what, 60), who(e))
}

/// `1a2b3c4 by Ada <ada@…>`.
fn who(e: &LoggedEvent) -> String {
    format!("{} by {}", short_id(&e.commit), e.author)
}

/// Where `e` is in `list`.
fn position(list: &[LoggedEvent], e: &LoggedEvent) -> usize {
    list.iter()
        .position(|x| x.commit == e.commit)
        .expect("an event of the list")
}

/// The indexes of the user decisions of `events` (oldest first) that an `undo` or `rollback`
/// later in the list did not take back.
fn live_decisions(events: &[LoggedEvent]) -> Vec<usize> {
    let mut kept: Vec<usize> = Vec::new();
    for (i, e) in events.iter().enumerate() {
        if e.event == EventKind::Undo.as_str() || e.event == EventKind::Rollback.as_str() {
            let restored = e
                .trailer("Restores")
                .and_then(|r| events[..i].iter().position(|x| x.commit == r));
            kept.retain(|&k| restored.is_some_and(|p| k <= p));
        } else if e.event == EventKind::UserDecision.as_str() {
            kept.push(i);
        }
    }
    kept
}

fn hex(commit: &str) -> Result<ObjectId> {
    ObjectId::from_hex(commit.as_bytes())
        .map_err(|_| Error::Invalid(format!("`{commit}` is not a commit id")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(commit: &str, kind: &str, trailers: &[(&str, &str)]) -> LoggedEvent {
        LoggedEvent {
            commit: commit.to_owned(),
            time: "2026-11-29T12:00:00Z".to_owned(),
            author: "a <a@a>".to_owned(),
            event: kind.to_owned(),
            seq: None,
            task: None,
            role: None,
            status: None,
            attempt: None,
            subject: String::new(),
            summary: String::new(),
            trailers: trailers
                .iter()
                .map(|(k, v)| (format!("Tlv4-{k}"), (*v).to_owned()))
                .collect(),
        }
    }

    #[test]
    fn an_undo_takes_back_the_decisions_after_the_event_it_restores() {
        let decide = |c: &str| event(c, "user_decision", &[("Decision", "approve")]);
        let events = [
            decide("a"),
            event("b", "task_completed", &[]),
            decide("c"),
            event("d", "undo", &[("Restores", "b")]),
            decide("e"),
        ];
        assert_eq!(live_decisions(&events), [0, 4]);
        // Back to before every event of the list (the merge base or earlier): all go.
        let events = [decide("a"), event("b", "undo", &[("Restores", "zzz")])];
        assert!(live_decisions(&events).is_empty());
    }

    #[test]
    fn a_decision_event_says_enough_to_make_it_again() {
        let decisions = [
            Decision::Approve,
            Decision::Revise {
                task: "DRAFT-002".parse().unwrap(),
                feedback: "more on the API".into(),
            },
            Decision::Revise {
                task: "DRAFT-002".parse().unwrap(),
                feedback: String::new(),
            },
            Decision::Feedback {
                text: "each story needs a priority".into(),
            },
            Decision::Recheck,
            Decision::Improve {
                dimension: Some("depth".into()),
            },
            Decision::Improve { dimension: None },
            Decision::Abort,
            Decision::Pick {
                task: "IMPL-001".parse().unwrap(),
                number: 3,
            },
        ];
        for d in decisions {
            let written = d.event("summary".into());
            let trailers: Vec<(&str, &str)> = written
                .extra
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            let read = event("a", "user_decision", &trailers);
            assert_eq!(Decision::of_event(&read).unwrap().unwrap(), d);
        }
        // Older feedback events lack the text: refused, not guessed.
        let old = event("a", "user_decision", &[("Decision", "feedback")]);
        assert!(Decision::of_event(&old).unwrap().is_err());
        let budget = event("a", "user_decision", &[("Decision", "budget")]);
        assert!(Decision::of_event(&budget).is_none());
    }
}
