//! `git tlv4 list`: every session with its status, pipeline, progress and base, read through
//! the store's cache of rows by tip (see [`tlv4_store::store::Summary`]).

use tlv4_core::error::Result;

use super::Ctx;
use tlv4_core::text::short_id;

/// Arguments of `list`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print JSON
    #[arg(long)]
    pub json: bool,
    /// List archived sessions too (marked `archived`)
    #[arg(long)]
    pub all: bool,
    /// List the sessions a remote holds (read with `git ls-remote`; nothing is fetched)
    #[arg(long, value_name = "REMOTE")]
    pub remote: Option<String>,
}

pub(crate) fn run(ctx: &Ctx<'_>, args: Args) -> Result<()> {
    let store = ctx.store()?;
    if let Some(remote) = &args.remote {
        return remote_list(ctx, &store, remote, args.json);
    }
    let rows = store.summaries(args.all)?;
    if args.json {
        ctx.ui.json(&super::listing("sessions", &rows));
        return Ok(());
    }
    if rows.is_empty() {
        ctx.ui
            .status("no sessions; start one with `git tlv4 start \"TASK TEXT\"`");
        return Ok(());
    }
    let table: Vec<[String; 5]> = rows
        .iter()
        .map(|r| {
            [
                r.id.clone(),
                if r.archived {
                    format!("{}, archived", r.status)
                } else {
                    r.status.clone()
                },
                r.pipeline.clone(),
                format!("{}/{}", r.progress.completed, r.progress.total),
                short_id(&r.base).to_owned(),
            ]
        })
        .collect();
    ctx.ui.out(
        super::status::table(&["SESSION", "STATUS", "PIPELINE", "DONE", "BASE"], &table).trim_end(),
    );
    Ok(())
}

/// `list --remote`: what the remote's refs say; the state inside is not fetched.
fn remote_list(
    ctx: &Ctx<'_>,
    store: &tlv4_store::store::Store,
    remote: &str,
    json: bool,
) -> Result<()> {
    let remote = tlv4_store::store::Remote::new(remote)?;
    let mut sessions = store.remote_sessions(&remote)?;
    // Who holds which task: the leases, fetched (small commits) when a session is live.
    if sessions.iter().any(|s| s.state == "live") {
        store.fetch_leases(&remote)?;
        for s in &mut sessions {
            if let Ok(sid) = s.id.parse::<tlv4_core::model::SessionId>() {
                s.held = store.holdings(&remote, &sid)?;
            }
        }
    }
    if json {
        ctx.ui.json(&super::listing("sessions", &sessions));
        return Ok(());
    }
    if sessions.is_empty() {
        ctx.ui
            .status(format!("`{}` holds no sessions", remote.name));
        return Ok(());
    }
    let table: Vec<[String; 5]> = sessions
        .iter()
        .map(|s| {
            [
                s.id.clone(),
                s.state.to_owned(),
                short_id(&s.tip).to_owned(),
                s.task_branches.to_string(),
                s.held.len().to_string(),
            ]
        })
        .collect();
    let mut out = super::status::table(
        &["SESSION", "STATE", "TIP", "TASK BRANCHES", "HELD"],
        &table,
    );
    for s in sessions.iter().filter(|s| !s.held.is_empty()) {
        out.push_str(&format!("\n{} — held by workers:\n", s.id));
        for h in &s.held {
            out.push_str(&format!("  {}  {}\n", h.task, h.describe()));
        }
    }
    ctx.ui.out(out.trim_end());
    Ok(())
}
