//! `git tlv4 gc`: remove what the tool left that no longer holds anything of its own.
//!
//! * Task branches `tlv4/<SID>.<TASK>` whose work the session merged (the branch tip is an
//!   ancestor of the session tip), of tasks not running, and not checked out anywhere.
//! * Checkouts of dead runs: task worktrees locked by a git-tlv4 process of this host that is
//!   gone, with no run of it still at work there. What its agent left is kept under
//!   `refs/tlv4/runs/<SID>/<TASK>/<n>` first, as `resume` does; a checkout whose work cannot
//!   be kept stays.
//!
//! Unmerged task branches, kept runs, archives and exports are never touched.

use crate::error::Result;
use crate::model::TaskStatus;
use crate::store::{SESSION_REF_PREFIX, session_ref};

use super::Ctx;

/// Arguments of `gc`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Say what would be removed, and change nothing
    #[arg(long)]
    pub dry_run: bool,
}

pub(crate) fn run(ctx: &Ctx<'_>, args: Args) -> Result<()> {
    let store = ctx.store()?;
    let verb = if args.dry_run {
        "would remove"
    } else {
        "removed"
    };
    let mut removed = 0usize;
    let mut kept = 0usize;
    // Dead runs' checkouts first: their branches are then free to go.
    let common = store.repo().common_dir().to_owned();
    for wt in crate::git::stale_worktrees(&common) {
        if let Some(pid) = crate::git::live_run(&wt) {
            ctx.ui.status(format!(
                "kept the checkout {}: process {pid} still runs there",
                wt.display()
            ));
            kept += 1;
            continue;
        }
        if args.dry_run {
            ctx.ui.status(format!(
                "{verb} the checkout {} of a process that is gone (its work kept first)",
                wt.display()
            ));
            removed += 1;
            continue;
        }
        for lock in super::resume::admin_locks(&common, &wt) {
            let _ = std::fs::remove_file(&lock);
        }
        match super::resume::keep_interrupted_work(&store, &wt) {
            Ok(Some(at)) => ctx
                .ui
                .status(format!("kept the work in {} at {at}", wt.display())),
            Ok(None) => {}
            Err(e) => {
                ctx.ui.warn(format!(
                    "kept the checkout {}: its work could not be kept: {e}",
                    wt.display()
                ));
                kept += 1;
                continue;
            }
        }
        crate::git::remove_worktree(&common, &wt)?;
        ctx.ui.status(format!(
            "{verb} the checkout {} of a process that is gone",
            wt.display()
        ));
        removed += 1;
    }
    for sid in store.sessions()? {
        let Ok((tip, state)) = store.read_state(&sid) else {
            continue;
        };
        let prefix = format!("{}.", session_ref(&sid));
        for (name, id) in store.refs_with_prefix(SESSION_REF_PREFIX)? {
            let Some(task) = name.strip_prefix(&prefix) else {
                continue;
            };
            let short = name.trim_start_matches("refs/heads/");
            let running = task
                .parse()
                .ok()
                .and_then(|t| state.tasks.get(&t))
                .is_some_and(|t| t.status == TaskStatus::InProgress);
            if running {
                continue;
            }
            if !store.is_ancestor(id, tip)? {
                ctx.ui.status(format!(
                    "kept {short}: it holds work the session never merged"
                ));
                kept += 1;
                continue;
            }
            if !store.checked_out_in(&name).is_empty() {
                ctx.ui.status(format!("kept {short}: it is checked out"));
                kept += 1;
                continue;
            }
            if !args.dry_run {
                store.delete_ref(&name, id)?;
            }
            ctx.ui.status(format!("{verb} {short} (merged)"));
            removed += 1;
        }
    }
    ctx.ui.status(format!(
        "gc: {} {removed}, kept {kept}",
        if args.dry_run {
            "would remove"
        } else {
            "removed"
        }
    ));
    Ok(())
}
