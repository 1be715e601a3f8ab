//! The user's decisions as data: what `approve`, `revise`, `feedback`, `recheck`, `improve`,
//! `abort` and `pick` change in one event, and how their events record them so that `pull` can make
//! the same decision again on another clone's state (`specs/state-format.md` §8.1, §18.3).
//!
//! A decision event carries its command in `Tlv4-Decision` and its arguments in trailers of
//! their own (`Tlv4-Decision-Task`, `Tlv4-Feedback`, `Tlv4-Dimension`), so the event alone
//! says what was decided; the body stays the human summary.

use super::revise::{self, FeedbackRoute};
use tlv4_core::error::{Error, Result};
use tlv4_core::model::{Event, EventKind, SessionStatus, TaskId};
use tlv4_store::store::{LoggedEvent, Txn};

/// How text the user wrote goes into a Markdown line (`tlv4_specdoc::md::inline`, which the
/// command passes: the coordinator does not read spec documents).
pub type Quote = fn(&str) -> String;

/// One decision of the user at a pause.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Accept what the session paused on.
    Approve,
    /// Redo a completed or failed task with feedback.
    Revise {
        /// The task to redo.
        task: TaskId,
        /// What should change (may be empty).
        feedback: String,
    },
    /// Free feedback, routed to the document it concerns.
    Feedback {
        /// The text, on one line.
        text: String,
    },
    /// A new run of the quality gate.
    Recheck,
    /// A writer task for a dimension, then a new gate.
    Improve {
        /// The dimension named, if any (the weakest otherwise).
        dimension: Option<String>,
    },
    /// Stop the session for good.
    Abort,
    /// Take another candidate of a best-of task than the one the rule picked.
    Pick {
        /// The best-of task.
        task: TaskId,
        /// The candidate's number.
        number: u32,
    },
}

/// User text on one line, as trailers and task descriptions hold it.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl Decision {
    /// The command, the value of `Tlv4-Decision`.
    pub fn name(&self) -> &'static str {
        match self {
            Decision::Approve => "approve",
            Decision::Revise { .. } => "revise",
            Decision::Feedback { .. } => "feedback",
            Decision::Recheck => "recheck",
            Decision::Improve { .. } => "improve",
            Decision::Abort => "abort",
            Decision::Pick { .. } => "pick",
        }
    }

    /// The `user_decision` event recording this decision, with `summary` as its body.
    pub fn event(&self, summary: String) -> Event {
        let event = Event::session(EventKind::UserDecision, summary).with("Decision", self.name());
        match self {
            Decision::Revise { task, feedback } => {
                let event = event.with("Decision-Task", task.as_str());
                if feedback.trim().is_empty() {
                    event
                } else {
                    event.with("Feedback", one_line(feedback))
                }
            }
            Decision::Feedback { text } => event.with("Feedback", one_line(text)),
            Decision::Improve { dimension: Some(d) } => event.with("Dimension", d.clone()),
            Decision::Pick { task, number } => super::pick::trailers(event, task, *number),
            _ => event,
        }
    }

    /// The decision an event records: `None` for an event that is no decision of these
    /// (a budget raise, a retry, …); an error for one whose arguments are missing (written
    /// before decisions recorded them).
    pub fn of_event(event: &LoggedEvent) -> Option<Result<Decision>> {
        if event.event != EventKind::UserDecision.as_str() {
            return None;
        }
        let missing = |what: &str| {
            Error::state(
                format!(
                    "decision {} ({}) does not record its {what}: it was written by an older version",
                    tlv4_core::text::short_id(&event.commit),
                    event.trailer("Decision").unwrap_or("?")
                ),
                None,
            )
        };
        let decision = match event.trailer("Decision")? {
            "approve" => Ok(Decision::Approve),
            "recheck" => Ok(Decision::Recheck),
            "abort" => Ok(Decision::Abort),
            "improve" => Ok(Decision::Improve {
                dimension: event.trailer("Dimension").map(str::to_owned),
            }),
            "feedback" => event
                .trailer("Feedback")
                .map(|t| Decision::Feedback { text: t.to_owned() })
                .ok_or_else(|| missing("text")),
            "revise" => event
                .trailer("Decision-Task")
                .and_then(|t| t.parse().ok())
                .map(|task| Decision::Revise {
                    task,
                    feedback: event.trailer("Feedback").unwrap_or_default().to_owned(),
                })
                .ok_or_else(|| missing("task")),
            "pick" => event
                .trailer("Decision-Task")
                .and_then(|t| t.parse().ok())
                .zip(event.trailer("Picked").and_then(|n| n.parse().ok()))
                .map(|(task, number)| Decision::Pick { task, number })
                .ok_or_else(|| missing("task and candidate")),
            _ => return None,
        };
        Some(decision)
    }

    /// The command line that makes this decision.
    pub fn command(&self) -> String {
        let quoted = |t: &str| format!("\"{}\"", t.replace('\\', "\\\\").replace('"', "\\\""));
        match self {
            Decision::Revise { task, feedback } if feedback.is_empty() => {
                format!("git tlv4 revise {task}")
            }
            Decision::Revise { task, feedback } => {
                format!("git tlv4 revise {task} --feedback {}", quoted(feedback))
            }
            Decision::Feedback { text } => format!("git tlv4 feedback {}", quoted(text)),
            Decision::Improve { dimension: Some(d) } => format!("git tlv4 improve {d}"),
            Decision::Pick { task, number } => format!("git tlv4 pick {task} {number}"),
            other => format!("git tlv4 {}", other.name()),
        }
    }
}

/// Applies `decision` to the change `txn` of session `sid` (its state and the files it
/// writes) and returns the event's summary. An aborted session takes no more decisions.
pub fn apply(decision: &Decision, txn: &mut Txn<'_>, quote: Quote) -> Result<String> {
    let sid = txn.state.session.id.clone();
    if txn.state.session.status == SessionStatus::Aborted {
        return Err(Error::state(
            format!("session `{sid}` was aborted; it takes no more decisions"),
            Some(format!(
                "fork it to go on: git tlv4 fork --session {sid} --at EVENT"
            )),
        ));
    }
    let mut state = txn.state.clone();
    let summary = match decision {
        Decision::Approve => revise::approve(&mut state)?,
        Decision::Revise { task, feedback } => {
            let made = revise::revise(&mut state, task, feedback, false)?;
            format!("revision of {task}: {}", list(&made))
        }
        Decision::Feedback { text } => {
            let route = revise::feedback(&mut state, text)?;
            let summary = match route {
                FeedbackRoute::Revised(made) => {
                    format!("feedback routed to {}: revisions {}", made[0], list(&made))
                }
                FeedbackRoute::Attached(t) => {
                    format!("feedback attached to {t}, which has not run yet")
                }
                FeedbackRoute::Logged => {
                    "feedback logged to wisdom/decisions.md (implementation has started)".to_owned()
                }
            };
            log_feedback(txn, text, &summary, quote)?;
            summary
        }
        Decision::Recheck => format!("recheck: {}", revise::recheck(&mut state)?),
        Decision::Improve { dimension } => {
            let report = txn
                .read_file(&sid, "spec/readiness-report.md")?
                .ok_or_else(|| {
                    Error::state(
                        "there is no readiness report yet (spec/readiness-report.md)",
                        Some("it is written by the QUALITY-001 gate".into()),
                    )
                })?;
            let (imp, gate) = revise::improve(
                &mut state,
                &String::from_utf8_lossy(&report),
                dimension.as_deref(),
            )?;
            format!("improve: {imp}, then {gate}")
        }
        Decision::Abort => {
            revise::abort(&mut state)?;
            "aborted by the user; the history stays".into()
        }
        // A pick changes the code and the task branch's record: it edits the change itself.
        Decision::Pick { task, number } => return super::pick::apply(txn, task, *number),
    };
    txn.state = state;
    Ok(summary)
}

/// Appends the feedback line to `wisdom/decisions.md`.
pub(crate) fn log_feedback(
    txn: &mut Txn<'_>,
    text: &str,
    summary: &str,
    quote: Quote,
) -> Result<()> {
    let sid = txn.state.session.id.clone();
    let mut log = txn
        .read_file(&sid, "wisdom/decisions.md")?
        .unwrap_or_else(|| b"# Decisions\n".to_vec());
    log.extend_from_slice(format!("- Feedback: {} ({summary})\n", quote(text)).as_bytes());
    txn.write_file("wisdom/decisions.md", log)
}

/// Task ids, comma-separated.
pub(crate) fn list(ids: &[TaskId]) -> String {
    ids.iter()
        .map(TaskId::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}
