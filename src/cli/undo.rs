//! `git tlv4 undo`: append an event that restores the state before the last N events.

use tlv4_core::error::{Error, Result};

use super::Ctx;
use tlv4_core::text::short_id;

/// Arguments of `undo`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// How many events to step back (an undo is an event too: undo twice to redo)
    #[arg(short = 'n', default_value_t = 1, value_name = "N")]
    pub n: usize,
}

pub(crate) fn run(ctx: &Ctx<'_>, args: Args) -> Result<()> {
    if args.n == 0 {
        return Err(Error::Invalid("-n must be at least 1".into()));
    }
    let (store, sid) = ctx.session()?;
    if let Some(w) = crate::coordinator::recover::undo(&store, &sid, args.n)? {
        ctx.ui.status(format!(
            "{} ({})",
            w.event.summary.replace('\n', "\n  "),
            short_id(&w.commit.to_string())
        ));
    }
    Ok(())
}
