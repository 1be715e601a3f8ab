//! `git tlv4 fork --at EVENT`: a new session branch that starts from an earlier event.

use tlv4_core::error::{Error, Result};
use tlv4_core::model::SessionId;

use super::Ctx;
use tlv4_core::text::short_id;

/// Arguments of `fork`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The event commit to start from (or a task id: its latest completion)
    #[arg(long, value_name = "EVENT")]
    pub at: String,
    /// Name of the new session: a full `TLV4-…` id, or a few words to build one from
    #[arg(long, value_name = "NEW")]
    pub name: Option<String>,
    /// Start the fork's ledger at zero: what the origin spent does not count against the
    /// fork's budget (by default a fork starts with its origin's spend up to the fork)
    #[arg(long)]
    pub fresh_budget: bool,
}

pub(crate) fn run(ctx: &Ctx<'_>, args: Args) -> Result<()> {
    let (store, sid) = ctx.session()?;
    let tip = store.tip(&sid)?;
    let target = crate::coordinator::recover::find_event(&store, &sid, tip, &args.at)?;
    let at: gix::ObjectId = target
        .commit
        .parse()
        .map_err(|_| Error::Git(format!("bad commit id {}", target.commit)))?;
    // The new id must be free against refs (live, archived, the bus) and the fork point's
    // tree, so the fork neither reuses an archived id nor inherits anyone's messages or runs.
    let at_tree = store.commit_tree(at)?;
    let new = match &args.name {
        Some(name) if name.starts_with(SessionId::PREFIX) => {
            let id: SessionId = name
                .parse()
                .map_err(|e: tlv4_core::model::IdError| Error::Invalid(e.to_string()))?;
            if id == sid || store.id_taken(&id, at_tree)? {
                return Err(Error::state(
                    format!("session id `{id}` is taken"),
                    Some("name the fork with another id, or a few words: --name WORDS".into()),
                ));
            }
            id
        }
        other => {
            let (_, state) = store.read_state(&sid)?;
            let text = other
                .clone()
                .unwrap_or_else(|| format!("{} fork", state.session.task));
            let date = tlv4_core::clock::today_compact();
            store.free_id(&text, &date, 1, at_tree)?.0
        }
    };
    let w = store.fork_session(
        &sid,
        at,
        &new,
        format!(
            "Forked from {sid} at {} ({})",
            short_id(&target.commit),
            target.subject
        ),
        args.fresh_budget,
    )?;
    // The fork runs with the configuration its origin was pinned to.
    if let Ok((files, _)) = tlv4_store::pin::pinned(&store, &sid) {
        let agents = tlv4_store::pin::pinned_agents(&store, &sid).unwrap_or_default();
        tlv4_store::pin::pin(&store, &new, &files, &agents)?;
    }
    ctx.ui.status(format!(
        "forked {new} from {sid} at {} ({})",
        short_id(&target.commit),
        short_id(&w.commit.to_string())
    ));
    ctx.ui.out(new.as_str());
    Ok(())
}
