//! `git tlv4 resume`: recover what a crashed process left behind.

use std::time::Duration;

use crate::error::Result;
use crate::model::{Event, EventKind, TaskStatus};

use super::Ctx;

/// A ref lock older than this was left by a dead process: writers hold one for microseconds,
/// and give up waiting for one after 3 seconds.
const STALE_LOCK_AGE: Duration = Duration::from_secs(5);

/// Arguments of `resume`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Also recover tasks owned by processes on other hosts
    #[arg(long)]
    pub force: bool,
    /// Run failed tasks again
    #[arg(long)]
    pub retry: bool,
    /// Loop options
    #[command(flatten)]
    pub run: super::drive::RunFlags,
}

pub(crate) fn run(ctx: &Ctx<'_>, args: Args) -> Result<()> {
    let (store, sid) = ctx.session()?;
    for lock in store.stale_locks(&sid, STALE_LOCK_AGE) {
        std::fs::remove_file(&lock)
            .map_err(|e| crate::Error::io(format!("cannot remove {}", lock.display()), e))?;
        ctx.ui
            .status(format!("removed stale lock {}", lock.display()));
    }
    let host = crate::host::name();
    let mut elsewhere = Vec::new();
    let written = store.transact(&sid, |txn| {
        elsewhere.clear();
        let mut recovered = Vec::new();
        for task in txn
            .state
            .tasks
            .values_mut()
            .filter(|t| t.status == TaskStatus::InProgress)
        {
            let gone = match &task.owner {
                None => true,
                Some(o) if o.host == host => !crate::host::process_alive(o.pid),
                Some(o) => {
                    if !args.force {
                        elsewhere.push(format!("{} ({}:{})", task.id, o.host, o.pid));
                    }
                    args.force
                }
            };
            if gone {
                let owner = task
                    .owner
                    .take()
                    .map_or("nobody".into(), |o| format!("{}:{}", o.host, o.pid));
                task.status = TaskStatus::Pending;
                recovered.push(format!("{} (was {owner})", task.id));
            }
        }
        if recovered.is_empty() {
            return Ok(None);
        }
        Ok(Some(Event::session(
            EventKind::TasksRecovered,
            format!(
                "Returned to pending, their owners are gone:\n{}",
                recovered.join("\n")
            ),
        )))
    })?;
    match written {
        Some(w) => ctx.ui.status(w.event.summary.replace('\n', "\n  ")),
        None => ctx
            .ui
            .status("no task was left running by a process that is gone"),
    }
    for e in &elsewhere {
        ctx.ui.warn(format!(
            "{e} runs on another host; left as it is (use --force to recover it)"
        ));
    }
    ctx.ui
        .status("the scheduling loop is not part of this build yet: nothing more to continue");
    Ok(())
}
