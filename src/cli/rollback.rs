//! `git tlv4 rollback --to EVENT|TASK`: append an event that restores an earlier state.

use tlv4_core::error::{Error, Result};
use tlv4_core::model::{Event, EventKind, SessionId, TaskId};
use tlv4_core::store::{LoggedEvent, Store};

use super::Ctx;
use tlv4_core::text::short_id;

/// Arguments of `rollback`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// An event commit of the session, or a task id (the state right after its last completion)
    #[arg(long, value_name = "EVENT_OR_TASK")]
    pub to: String,
}

/// Finds the event `what` names in the history of `sid` from `tip`: a task id means its
/// latest completion; anything else is a revision that must be an event of the session.
pub(crate) fn find_event(
    store: &Store,
    sid: &SessionId,
    tip: gix::ObjectId,
    what: &str,
) -> Result<LoggedEvent> {
    let history = store.log_from(sid, tip, None)?;
    // Task ids always hold a `-`; abbreviated commit ids never do.
    if let (Ok(task), true) = (what.parse::<TaskId>(), what.contains('-')) {
        {
            return history
                .into_iter()
                .find(|e| {
                    e.event == EventKind::TaskCompleted.as_str()
                        && e.task.as_deref() == Some(task.as_str())
                })
                .ok_or_else(|| {
                    Error::state(
                        format!("task `{task}` has no completion event in session `{sid}`"),
                        None,
                    )
                });
        }
    }
    let id = store
        .repo()
        .rev_parse_single(what)
        .map_err(|_| Error::Invalid(format!("`{what}` is neither a task id nor a commit")))?
        .detach();
    history.into_iter().find(|e| e.commit == id).ok_or_else(|| {
        Error::state(
            format!(
                "{} is not an event of session `{sid}`",
                short_id(&id.to_string())
            ),
            Some("list its events with `git tlv4 log`".into()),
        )
    })
}

pub(crate) fn run(ctx: &Ctx<'_>, args: Args) -> Result<()> {
    let (store, sid) = ctx.session()?;
    let written = store.transact(&sid, |txn| {
        let target = find_event(&store, &sid, txn.tip, &args.to)?;
        if target.commit == txn.tip {
            return Err(Error::state(
                format!("{} is already the current state", short_id(&target.commit)),
                None,
            ));
        }
        let id = target
            .commit
            .parse()
            .map_err(|_| Error::Git(format!("bad commit id {}", target.commit)))?;
        txn.restore(&sid, id)?;
        Ok(Some(
            Event::session(
                EventKind::Rollback,
                format!(
                    "Restored the state of {} ({})",
                    short_id(&target.commit),
                    target.subject
                ),
            )
            .with("Restores", target.commit.clone()),
        ))
    })?;
    if let Some(w) = written {
        ctx.ui.status(format!(
            "{} ({})",
            w.event.summary,
            short_id(&w.commit.to_string())
        ));
    }
    Ok(())
}
