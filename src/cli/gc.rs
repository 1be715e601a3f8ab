//! `git tlv4 gc`: remove what the tool left that no longer holds anything of its own.
//!
//! * Task branches `tlv4/<SID>.<TASK>` whose work the session merged (the branch tip is an
//!   ancestor of the session tip), of tasks not running, and not checked out anywhere.
//! * Checkouts of dead runs: task worktrees locked by a git-tlv4 process of this host that is
//!   gone, with no run of it still at work there. What its agent left is kept under
//!   `refs/tlv4/runs/<SID>/<TASK>/<n>` first, as `resume` does; a checkout whose work cannot
//!   be kept stays.
//!
//! * Run transcripts of old archived sessions: an archive whose tip is older than
//!   `--compact-after` days (90 unless told) has its history written again without what its
//!   agents were told and said (`prompt.md`, `answer.txt`, `transcript.txt` under `runs/`), and
//!   a `session_compacted` event on top names the tip it replaced. Every event, state file and
//!   result record stays. An archive that another ref still holds (a fork, a pushed mirror, a
//!   branch made from it) is left whole: rewriting it would free nothing.
//!
//! Unmerged task branches, kept runs and exports are never touched.

use tlv4_core::error::Result;
use tlv4_core::model::TaskStatus;
use tlv4_store::store::{SESSION_REF_PREFIX, session_ref};

use super::Ctx;

/// Arguments of `gc`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Say what would be removed, and change nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Compact archived sessions archived at least this many days ago (0: every archive)
    #[arg(long, value_name = "DAYS", default_value_t = 90)]
    pub compact_after: u64,
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
    for wt in tlv4_core::git::stale_worktrees(&common) {
        if let Some(pid) = tlv4_core::git::live_run(&wt) {
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
        for lock in crate::coordinator::recover::admin_locks(&common, &wt) {
            let _ = std::fs::remove_file(&lock);
        }
        match crate::coordinator::recover::keep_interrupted_work(&store, &wt) {
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
        tlv4_core::git::remove_worktree(&common, &wt)?;
        tlv4_store::worktree::pool::forget(&wt);
        ctx.ui.status(format!(
            "{verb} the checkout {} of a process that is gone",
            wt.display()
        ));
        removed += 1;
    }
    // The kept checkouts (agents' and the tester's), with their installed dependencies and
    // build outputs: idle ones are freed; one a run leases now is left to it.
    let pool = tlv4_store::worktree::pool::Pool::open(&store, None)?;
    if args.dry_run {
        let idle: Vec<_> = pool.list().into_iter().filter(|s| !s.busy).collect();
        if !idle.is_empty() {
            let bytes: u64 = idle.iter().map(|s| s.bytes).sum();
            ctx.ui.status(format!(
                "would remove {} kept checkout(s) in {} ({} MiB)",
                idle.len(),
                pool.root().display(),
                bytes >> 20
            ));
        }
    } else {
        for gone in pool.clear_orphans() {
            ctx.ui.status(format!(
                "removed {}: the kept checkouts of a repository that is gone",
                gone.display()
            ));
        }
        let (n, bytes) = pool.clear(&store)?;
        if n > 0 {
            ctx.ui.status(format!(
                "removed {n} kept checkout(s) in {} ({} MiB freed)",
                pool.root().display(),
                bytes >> 20
            ));
        }
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
            let short = tlv4_store::store::refs::short_branch(&name);
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
    let compacted = compact_archives(ctx, &store, &args)?;
    ctx.ui.status(format!(
        "gc: {} {removed}, kept {kept}{compacted}",
        if args.dry_run {
            "would remove"
        } else {
            "removed"
        }
    ));
    Ok(())
}

/// Compacts the archives older than `--compact-after` days; the words the summary line ends
/// with (`, compacted 2 archives (3.1 MiB of transcripts)`), empty when none was.
fn compact_archives(
    ctx: &Ctx<'_>,
    store: &tlv4_store::store::Store,
    args: &Args,
) -> Result<String> {
    use tlv4_store::store::{Compaction, human_bytes};
    let min_age = args.compact_after.saturating_mul(86_400);
    let (mut archives, mut total) = (0usize, 0u64);
    for sid in store.archived()? {
        let verb = if args.dry_run {
            "would compact"
        } else {
            "compacted"
        };
        match store.compact_archive(&sid, min_age, args.dry_run) {
            Ok(Compaction::Done {
                commits,
                files,
                bytes,
                ..
            }) => {
                ctx.ui.status(format!(
                    "{verb} archived session {sid}: {files} run records ({}) out of {commits} commits",
                    human_bytes(bytes)
                ));
                archives += 1;
                total += bytes;
            }
            Ok(Compaction::HeldBy(name)) => ctx.ui.status(format!(
                "kept archived session {sid} whole: {name} holds its history, so compacting it would free nothing"
            )),
            Ok(Compaction::TooYoung | Compaction::AlreadyCompacted | Compaction::NothingToRemove) => {}
            Err(e) => ctx
                .ui
                .warn(format!("kept archived session {sid} whole: {e}")),
        }
    }
    if archives == 0 {
        return Ok(String::new());
    }
    Ok(format!(
        ", {} {archives} archive{} ({} of transcripts)",
        if args.dry_run {
            "would compact"
        } else {
            "compacted"
        },
        if archives == 1 { "" } else { "s" },
        human_bytes(total)
    ))
}
