//! The builtin agent: offline and deterministic. It scans, writes and plans for real from
//! the repository and the task text; it cannot write code, and says so.

#[macro_use]
pub(crate) mod template;

mod analyst;
mod code;
mod planner;
mod specialist;
mod words;
mod writer;

use super::{Agent, Outcome, StateUpdate, TaskInput, TaskOutput};
use tlv4_core::error::Result;
use tlv4_core::model::Role;

/// The offline agent.
#[derive(Debug, Default, Clone, Copy)]
pub struct Builtin;

impl Agent for Builtin {
    fn name(&self) -> &str {
        "builtin"
    }

    fn run(&self, input: &TaskInput) -> Result<TaskOutput> {
        match &input.task.role {
            Role::Analyst => analyst::run(input),
            Role::Writer => writer::run(input),
            Role::Planner => planner::run(input),
            Role::Executor => Ok(executor(input)),
            _ if input.task.phase == "specialist" => specialist::run(input),
            other => Ok(TaskOutput::failed(
                format!("the builtin agent has no `{other}` role"),
                format!("no builtin {other}"),
            )),
        }
    }
}

/// `value` as pretty JSON with a final newline: how every role writes a JSON file.
fn json_bytes(value: &impl serde::Serialize) -> Vec<u8> {
    let mut out = serde_json::to_vec_pretty(value).expect("the builtin documents serialise");
    out.push(b'\n');
    out
}

/// The builtin executor cannot write code: it completes with no change and says so.
fn executor(input: &TaskInput) -> TaskOutput {
    let summary =
        "no change: the builtin agent cannot write code; configure an agent for the executor role"
            .to_owned();
    TaskOutput {
        outcome: Outcome::Completed,
        summary: summary.clone(),
        files: Vec::new(),
        state_update: StateUpdate {
            key_findings: vec!["No code was written: the builtin agent cannot write code".into()],
            decisions: vec![format!("{} left for a real agent", input.task.id)],
            files_modified: Vec::new(),
            verification: "none: nothing changed".into(),
            tech_profile: None,
        },
    }
}
