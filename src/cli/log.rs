//! `git tlv4 log`: the event history, newest first, from commits and their trailers.

use tlv4_core::error::Result;
use tlv4_store::store::HistoryEntry;

use super::Ctx;
use tlv4_core::text::short_id;

/// Arguments of `log`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Show at most N events
    #[arg(short = 'n', long, value_name = "N")]
    pub max_count: Option<usize>,
    /// Print JSON
    #[arg(long)]
    pub json: bool,
}

pub(crate) fn run(ctx: &Ctx<'_>, args: Args) -> Result<()> {
    let (store, sid) = ctx.session()?;
    let entries = store.history(&sid, args.max_count)?;
    if args.json {
        ctx.ui.json(&super::listing("events", &entries));
        return Ok(());
    }
    let mut out = String::new();
    for entry in &entries {
        let e = match entry {
            HistoryEntry::Event(e) => e,
            // A commit someone made on the branch: part of the history, not an event.
            HistoryEntry::Other(c) => {
                out.push_str(&format!(
                    "{} {:>4} {} {}  [not an event]\n",
                    short_id(&c.commit),
                    "-",
                    c.time,
                    c.subject
                ));
                continue;
            }
        };
        // A merge event says what it merged; a conflict, where.
        let mut extra = String::new();
        if let Some(m) = e.trailer("Merged") {
            extra = format!("  [merged {}]", short_id(m));
        } else if let Some(c) = e.trailer("Conflict") {
            extra = format!("  [conflict in {c}]");
        }
        out.push_str(&format!(
            "{} {:>4} {} {}{extra}\n",
            short_id(&e.commit),
            e.seq.map_or("-".into(), |s| format!("#{s}")),
            e.time,
            e.subject
        ));
    }
    ctx.ui.page(&ctx.cwd, out.trim_end());
    Ok(())
}
