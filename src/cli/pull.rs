//! `git tlv4 pull`: bring a remote's sessions here without losing anything of this clone's.

use tlv4_core::error::{Error, Result};
use tlv4_store::store::Remote;

use super::Ctx;
use crate::coordinator::reconcile::{self, Reconciled};
use tlv4_core::text::short_id;

/// Arguments of `pull`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The remote (a configured remote or a URL)
    #[arg(default_value = "origin")]
    pub remote: String,
}

pub(crate) fn run(ctx: &Ctx<'_>, args: Args) -> Result<()> {
    let remote = Remote::new(&args.remote)?;
    let store = ctx.store()?;
    let mut pulled = store.pull_sessions(&remote)?;
    // Sessions whose remote side made decisions: those are made again here.
    let mut conflicts = Vec::new();
    for d in std::mem::take(&mut pulled.to_replay) {
        match reconcile::reconcile(&store, &remote, &d, tlv4_specdoc::md::inline)? {
            Reconciled::Merged(commit, replayed) => {
                ctx.ui.status(format!(
                    "made the decisions of `{}` again on {}: {}",
                    remote.name,
                    d.sid,
                    replayed.join("; ")
                ));
                pulled.merged.push((d.sid, commit));
            }
            Reconciled::Refused(why) => pulled.diverged.push((d.sid, d.ours, d.theirs, why)),
            Reconciled::Conflict(c) => conflicts.push((d, c)),
        }
    }
    for name in &pulled.created {
        ctx.ui.status(format!("new {name}"));
    }
    for name in &pulled.forwarded {
        ctx.ui.status(format!("fast-forwarded {name}"));
    }
    for name in &pulled.merged_notes {
        ctx.ui.status(format!("merged notes {name}"));
    }
    for sid in &pulled.archived {
        ctx.ui.status(format!(
            "archived {sid} (as `{}` did; its events are under refs/tlv4/archive/{sid})",
            remote.name
        ));
    }
    for name in &pulled.ahead {
        ctx.ui.status(format!(
            "{name} is ahead of `{}`; `git tlv4 push {}` sends it",
            remote.name, remote.name
        ));
    }
    for (name, why) in &pulled.kept {
        ctx.ui.warn(format!("kept {name} as it is: {why}"));
    }
    for (sid, commit) in &pulled.merged {
        ctx.ui.status(format!(
            "merged the events of `{}` into {sid} ({})",
            remote.name,
            short_id(&commit.to_string())
        ));
    }
    if let Some((d, _)) = conflicts.first() {
        let why: Vec<String> = conflicts
            .iter()
            .map(|(d, c)| format!("`{}`: {}", d.sid, c.why))
            .collect();
        let hints: Vec<String> = conflicts
            .iter()
            .map(|(_, c)| {
                format!(
                    "to take theirs, here: `{}`; to keep yours, on the clone that made theirs: `{}`",
                    c.here, c.there
                )
            })
            .collect();
        return Err(Error::conflict(
            format!(
                "decisions made here and on `{}` cannot both hold, on {}; the local branch is \
                 unchanged and the remote's tip is kept under {}",
                remote.name,
                why.join("; "),
                remote.mirror(&tlv4_store::store::session_ref(&d.sid))
            ),
            Some(format!(
                "{} (undo appends: nothing is lost)",
                hints.join("\n")
            )),
        ));
    }
    if let Some((sid, _, _, _)) = pulled.diverged.first() {
        let list: Vec<String> = pulled
            .diverged
            .iter()
            .map(|(sid, ours, theirs, why)| {
                format!(
                    "`{sid}` (here {}, on `{}` {}): {why}",
                    short_id(&ours.to_string()),
                    remote.name,
                    short_id(&theirs.to_string())
                )
            })
            .collect();
        return Err(Error::conflict(
            format!(
                "both this clone and `{}` added events that do not merge, to {}; the local \
                 branch is unchanged and the remote's tip is kept under {}",
                remote.name,
                list.join("; "),
                remote.mirror(&tlv4_store::store::session_ref(sid))
            ),
            Some(format!(
                "to take theirs, undo your events since the last pull (`git tlv4 log` shows \
                 them; `git tlv4 undo -n N` appends, nothing is lost) and pull again; to keep \
                 yours, continue them in a new session: `git tlv4 fork --session {sid} --at EVENT`"
            )),
        ));
    }
    if pulled.created.is_empty()
        && pulled.forwarded.is_empty()
        && pulled.merged_notes.is_empty()
        && pulled.archived.is_empty()
        && pulled.merged.is_empty()
    {
        ctx.ui.status(format!("up to date with `{}`", remote.name));
    }
    Ok(())
}
