//! `git tlv4 fork --at EVENT`: a new session branch that starts from an earlier event.

use crate::error::{Error, Result};
use crate::model::SessionId;
use crate::store::session_ref;

use super::Ctx;

/// Arguments of `fork`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The event commit to start from (or a task id: its latest completion)
    #[arg(long, value_name = "EVENT")]
    pub at: String,
    /// Name of the new session: a full `TLV4-…` id, or a few words to build one from
    #[arg(long, value_name = "NEW")]
    pub name: Option<String>,
}

pub(crate) fn run(ctx: &Ctx<'_>, args: Args) -> Result<()> {
    let (store, sid) = ctx.session()?;
    let tip = store.tip(&sid)?;
    let target = super::rollback::find_event(&store, &sid, tip, &args.at)?;
    let at: gix::ObjectId = target
        .commit
        .parse()
        .map_err(|_| Error::Git(format!("bad commit id {}", target.commit)))?;
    let new = match &args.name {
        Some(name) if name.starts_with(SessionId::PREFIX) => {
            let id: SessionId = name
                .parse()
                .map_err(|e: crate::model::IdError| Error::Invalid(e.to_string()))?;
            if store.try_ref(&session_ref(&id))?.is_some() {
                return Err(Error::state(format!("session `{id}` already exists"), None));
            }
            id
        }
        other => {
            let (_, state) = store.read_state(&sid)?;
            let text = other
                .clone()
                .unwrap_or_else(|| format!("{} fork", state.session.task));
            let date = crate::clock::today_compact();
            let mut n = 1;
            loop {
                let id = SessionId::from_text(&text, &date, n);
                if store.try_ref(&session_ref(&id))?.is_none() {
                    break id;
                }
                n += 1;
            }
        }
    };
    let w = store.fork_session(
        &sid,
        at,
        &new,
        format!(
            "Forked from {sid} at {} ({})",
            super::short(&target.commit),
            target.subject
        ),
    )?;
    // The fork runs with the configuration its origin was pinned to.
    if let Ok((files, _)) = crate::trust::pinned(&store, &sid) {
        let agents = crate::trust::pinned_agents(&store, &sid).unwrap_or_default();
        crate::trust::pin(&store, &new, &files, &agents)?;
    }
    ctx.ui.status(format!(
        "forked {new} from {sid} at {} ({})",
        super::short(&target.commit),
        super::short(&w.commit.to_string())
    ));
    ctx.ui.out(new.as_str());
    Ok(())
}
