//! `git tlv4 reset TASK`: discard a task's result and its dependents', then run them again.

use tlv4_core::error::Result;
use tlv4_core::model::TaskId;

use super::Ctx;
use super::drive::{RunFlags, drive};

/// Arguments of `reset`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The task whose result to discard
    #[arg(value_name = "TASK")]
    pub task: TaskId,
    /// Loop options
    #[command(flatten)]
    pub run: RunFlags,
}

pub(crate) fn run(ctx: &Ctx<'_>, args: Args) -> Result<()> {
    let (store, sid) = ctx.session()?;
    let reset = crate::coordinator::reset::reset(&store, &sid, &args.task)?;
    let list: Vec<&str> = reset.tasks.iter().map(|t| t.as_str()).collect();
    ctx.ui.status(format!(
        "reset {}: to run again: {}",
        args.task,
        list.join(", ")
    ));
    if !reset.reverted.is_empty() {
        let r: Vec<&str> = reset.reverted.iter().map(|t| t.as_str()).collect();
        ctx.ui.status(format!(
            "the code they merged was reverted: {}",
            r.join(", ")
        ));
    }
    drive(ctx, &store, &sid, &args.run)
}
