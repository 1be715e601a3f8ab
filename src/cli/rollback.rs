//! `git tlv4 rollback --to EVENT|TASK`: append an event that restores an earlier state.

use tlv4_core::error::Result;

use super::Ctx;
use tlv4_core::text::short_id;

/// Arguments of `rollback`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// An event commit of the session, or a task id (the state right after its last completion)
    #[arg(long, value_name = "EVENT_OR_TASK")]
    pub to: String,
}

pub(crate) fn run(ctx: &Ctx<'_>, args: Args) -> Result<()> {
    let (store, sid) = ctx.session()?;
    if let Some(w) = crate::coordinator::recover::rollback(&store, &sid, &args.to)? {
        ctx.ui.status(format!(
            "{} ({})",
            w.event.summary,
            short_id(&w.commit.to_string())
        ));
    }
    Ok(())
}
