//! The builtin analyst.

use crate::agents::{Outcome, StateUpdate, TaskInput, TaskOutput};
use crate::error::Result;

/// Runs the analyst on `input`.
pub fn run(input: &TaskInput) -> Result<TaskOutput> {
    Ok(TaskOutput {
        outcome: Outcome::Failed(format!(
            "the builtin analyst is not written yet ({})",
            input.task.id
        )),
        summary: String::new(),
        files: Vec::new(),
        state_update: StateUpdate::default(),
    })
}
