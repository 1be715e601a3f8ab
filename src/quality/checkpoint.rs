//! Quality: checkpoint (not built yet).

use super::{QualityContext, QualityResult};
use crate::agents::TaskInput;
use crate::error::Result;

/// Runs a checkpoint task.
pub fn run_task(input: &TaskInput, _ctx: &QualityContext) -> Result<QualityResult> {
    super::not_built(input)
}
