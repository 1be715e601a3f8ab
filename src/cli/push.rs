//! `git tlv4 push`: send sessions to a remote, never overwriting what this clone has not seen.

use tlv4_core::error::Result;
use tlv4_store::store::Remote;

use super::Ctx;
use tlv4_core::text::short_id;

/// Arguments of `push`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The remote (a configured remote or a URL)
    #[arg(default_value = "origin")]
    pub remote: String,
    /// Push every session (default: the one `--session` names, is checked out, or the only one)
    #[arg(long)]
    pub all: bool,
}

pub(crate) fn run(ctx: &Ctx<'_>, args: Args) -> Result<()> {
    let remote = Remote::new(&args.remote)?;
    let store = ctx.store()?;
    if args.all && ctx.session.is_some() {
        return Err(tlv4_core::Error::Invalid(
            "`--all` and `--session` cannot be used together".to_owned(),
        ));
    }
    let sessions = if args.all {
        let mut all = store.sessions()?;
        all.extend(store.archived()?);
        all.sort();
        all.dedup();
        all
    } else {
        vec![store.resolve_session(ctx.session.as_deref())?]
    };
    let pushed = store.push_sessions(&remote, &sessions)?;
    for (name, id) in &pushed.updated {
        ctx.ui
            .status(format!("pushed {name} -> {}", short_id(&id.to_string())));
    }
    for name in &pushed.deleted {
        ctx.ui.status(format!("deleted {name} (archived)"));
    }
    if pushed.updated.is_empty() && pushed.deleted.is_empty() {
        ctx.ui.status(format!("`{}` is up to date", remote.name));
    }
    Ok(())
}
