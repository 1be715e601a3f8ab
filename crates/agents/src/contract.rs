//! The result contract's loop, one for every driver that talks to a model: ask, read the
//! answer, send it back with what is wrong, give up after [`CONTRACT_TRIES`] answers.
//!
//! A driver supplies one turn — asking with a prompt and judging what came back — and gets
//! back how the exchange settled. Everything else (the program or the HTTP request, the
//! transcript, usage) stays the driver's.

use super::{Outcome, StateUpdate, TaskOutput, prompt};
use tlv4_core::error::Result;

/// How many answers a task gets before a broken result contract fails it.
pub const CONTRACT_TRIES: u32 = 3;

/// What one answer came to, as the asker judged it: `T` is what a good answer gives (a
/// driver's [`TaskOutput`], a discussion member's contribution).
#[derive(Debug)]
pub enum Turn<T = TaskOutput> {
    /// What the answer gave: the exchange is over.
    Done(T),
    /// The agent failed as a program or a service, not by its answer: the reason. Not sent
    /// back.
    Failed(String),
    /// The answer broke the contract: `problem` is sent back with (a bounded part of) the
    /// `answer`, unless it was the last one allowed.
    Rejected { problem: String, answer: String },
}

/// How the exchange settled: the task's output (completed, or failed as the agent itself
/// reported), or why the agent failed, without its name (see [`failed`]).
pub type Settled = std::result::Result<TaskOutput, String>;

/// How an exchange ended without a good answer.
#[derive(Debug, PartialEq, Eq)]
pub enum Unsettled {
    /// The agent failed ([`Turn::Failed`]): the reason.
    Failed(String),
    /// Every one of the [`CONTRACT_TRIES`] answers broke the contract: the last problem.
    Rejected(String),
}

/// The contract loop itself: `turn(n, prompt)` asks with `prompt` for answer number `n` —
/// first `base`, then what `send_back(problem, answer)` makes of the last rejected answer —
/// until an answer is good, the agent fails, or [`CONTRACT_TRIES`] answers were rejected. An
/// error of `turn` ends the exchange as it is.
pub fn exchange<T>(
    base: &str,
    mut send_back: impl FnMut(&str, &str) -> String,
    mut turn: impl FnMut(u32, &str) -> Result<Turn<T>>,
) -> Result<std::result::Result<T, Unsettled>> {
    let mut prompt = base.to_owned();
    for answer_no in 1.. {
        match turn(answer_no, &prompt)? {
            Turn::Done(got) => return Ok(Ok(got)),
            Turn::Failed(reason) => return Ok(Err(Unsettled::Failed(reason))),
            Turn::Rejected { problem, answer } => {
                if answer_no >= CONTRACT_TRIES {
                    return Ok(Err(Unsettled::Rejected(problem)));
                }
                prompt = send_back(&problem, &answer);
            }
        }
    }
    unreachable!("the loop returns by CONTRACT_TRIES")
}

/// [`exchange`] for a driver: the problem and answer are sent back appended to `base`, kept
/// within the prompt's budget by `retry_reserve` bytes; the last rejection fails the task
/// naming its problem's first line.
pub fn negotiate(
    base: &str,
    retry_reserve: usize,
    turn: impl FnMut(u32, &str) -> Result<Turn>,
) -> Result<Settled> {
    let send_back = |problem: &str, answer: &str| {
        prompt::retry_prompt_within(base, problem, answer, retry_reserve)
    };
    Ok(
        exchange(base, send_back, turn)?.map_err(|unsettled| match unsettled {
            Unsettled::Failed(reason) => reason,
            Unsettled::Rejected(problem) => {
                let first = problem.lines().next().unwrap_or_default();
                format!("its result was rejected {CONTRACT_TRIES} times; the last problem: {first}")
            }
        }),
    )
}

/// The output of a task whose agent (`label`: ``agent `NAME` (DRIVER)``) failed: the reason
/// in full, and its first line (at most 200 characters) as the summary.
pub fn failed(label: &str, reason: &str) -> TaskOutput {
    let reason = format!("{label}: {reason}");
    let first: String = reason
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(200)
        .collect();
    TaskOutput::failed(reason, format!("failed: {first}"))
}

impl TaskOutput {
    /// A failed output: `reason` for the record, `summary` for the event line; no files, an
    /// empty report.
    pub fn failed(reason: impl Into<String>, summary: impl Into<String>) -> TaskOutput {
        TaskOutput {
            outcome: Outcome::Failed(reason.into()),
            summary: summary.into(),
            files: Vec::new(),
            state_update: StateUpdate::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn done() -> TaskOutput {
        TaskOutput {
            outcome: Outcome::Completed,
            summary: "ok".into(),
            files: Vec::new(),
            state_update: StateUpdate::default(),
        }
    }

    #[test]
    fn a_rejected_answer_is_sent_back_with_its_problem_until_the_last_try() {
        let mut prompts = Vec::new();
        let settled = negotiate("BASE", 1000, |n, p| {
            prompts.push(p.to_owned());
            Ok(if n < 3 {
                Turn::Rejected {
                    problem: format!("problem {n}\nmore"),
                    answer: format!("answer {n}"),
                }
            } else {
                Turn::Done(done())
            })
        })
        .unwrap();
        assert!(settled.is_ok());
        assert_eq!(prompts.len(), 3);
        assert_eq!(prompts[0], "BASE");
        assert!(prompts[1].starts_with("BASE") && prompts[1].contains("problem 1"));
        assert!(prompts[2].contains("problem 2") && prompts[2].contains("answer 2"));

        let settled = negotiate("BASE", 1000, |n, _| {
            Ok(Turn::Rejected {
                problem: format!("problem {n}\nmore"),
                answer: String::new(),
            })
        })
        .unwrap();
        let reason = settled.unwrap_err();
        assert_eq!(
            reason,
            "its result was rejected 3 times; the last problem: problem 3"
        );
    }

    #[test]
    fn a_failure_is_not_sent_back_and_an_error_ends_the_exchange() {
        let mut asked = 0;
        let settled = negotiate("B", 100, |_, _| {
            asked += 1;
            Ok(Turn::Failed("gone".into()))
        })
        .unwrap();
        assert_eq!(settled.unwrap_err(), "gone");
        assert_eq!(asked, 1);
        let err = negotiate("B", 100, |_, _| Err(tlv4_core::Error::Invalid("x".into())));
        assert!(err.is_err());
    }

    #[test]
    fn a_failed_output_names_the_agent_and_summarises_the_first_line() {
        let out = failed(
            "agent `a` (claude)",
            &format!("{}\nsecond", "x".repeat(300)),
        );
        assert!(matches!(&out.outcome, Outcome::Failed(r) if r.ends_with("\nsecond")));
        assert_eq!(out.summary.chars().count(), "failed: ".len() + 200);
        assert!(out.summary.starts_with("failed: agent `a` (claude): xxx"));
    }
}
