//! `git tlv4 log`: the event history, newest first, from commits and their trailers.

use crate::error::Result;

use super::Ctx;

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
    let events = store.log(&sid, args.max_count)?;
    if args.json {
        ctx.ui.json(&events);
        return Ok(());
    }
    let mut out = String::new();
    for e in &events {
        // A merge event says what it merged; a conflict, where.
        let mut extra = String::new();
        if let Some(m) = e.trailer("Merged") {
            extra = format!("  [merged {}]", super::short(m));
        } else if let Some(c) = e.trailer("Conflict") {
            extra = format!("  [conflict in {c}]");
        }
        out.push_str(&format!(
            "{} {:>4} {} {}{extra}\n",
            super::short(&e.commit),
            e.seq.map_or("-".into(), |s| format!("#{s}")),
            e.time,
            e.subject
        ));
    }
    ctx.ui.out(out.trim_end());
    Ok(())
}
