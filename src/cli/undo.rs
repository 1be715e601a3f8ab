//! `git tlv4 undo`: append an event that restores the state before the last N events.

use tlv4_core::error::{Error, Result};
use tlv4_core::model::{Event, EventKind};

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
    let written = store.transact(&sid, |txn| {
        let history = store.log_from(&sid, txn.tip, Some(args.n + 1))?;
        // The first event created the session folder; the state before it is no session at all.
        let Some(target) = history.get(args.n) else {
            return Err(Error::state(
                format!(
                    "session `{sid}` has {} events; undo can step back at most {}",
                    history.len(),
                    history.len().saturating_sub(1)
                ),
                None,
            ));
        };
        let id = target
            .commit
            .parse()
            .map_err(|_| Error::Git(format!("bad commit id {}", target.commit)))?;
        txn.restore(&sid, id)?;
        let undone: Vec<String> = history[..args.n]
            .iter()
            .map(|e| format!("- {} {}", short_id(&e.commit), e.subject))
            .collect();
        Ok(Some(
            Event::session(
                EventKind::Undo,
                format!(
                    "Restored the state of {} ({}). Undone:\n{}",
                    short_id(&target.commit),
                    target.subject,
                    undone.join("\n")
                ),
            )
            .with("Restores", target.commit.clone()),
        ))
    })?;
    if let Some(w) = written {
        ctx.ui.status(format!(
            "{} ({})",
            w.event.summary.replace('\n', "\n  "),
            short_id(&w.commit.to_string())
        ));
    }
    Ok(())
}
