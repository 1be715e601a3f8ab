//! Quality: discuss rounds (not built yet).

use super::DiscussOutcome;
use crate::agents::{TaskInput, TaskOutput};
use crate::error::Result;

/// Runs discuss round `round` on what `produced` wrote; `None` when no round was run.
pub fn run_round(_round: &str, _input: &TaskInput, _produced: &TaskOutput) -> Result<Option<DiscussOutcome>> {
    Ok(None)
}
