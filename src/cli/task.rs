//! `git tlv4 task claim|complete|fail`: the plumbing workers (and people) use.

use tlv4_core::error::{Error, Result};
use tlv4_core::layout::validate_pipeline_path;
use tlv4_core::model::{Event, EventKind, Owner, TaskId, TaskResult, TaskStatus};

use super::Ctx;
use tlv4_core::text::short_id;

/// Arguments of `task`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// What to do
    #[command(subcommand)]
    pub action: Action,
}

/// The task actions.
#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// Claim a ready task: record its owner and start an attempt
    Claim {
        /// The task id
        task: TaskId,
        /// Process id of the owner (default: the process that runs this command)
        #[arg(long)]
        pid: Option<u32>,
    },
    /// Complete a claimed task, writing its artifacts into the pipeline folder
    Complete {
        /// The task id
        task: TaskId,
        /// One-line summary of the outcome
        #[arg(long, default_value = "")]
        summary: String,
        /// Artifact to store: PATH in the pipeline folder, FILE on disk (repeatable)
        #[arg(long, value_name = "PATH=FILE")]
        artifact: Vec<String>,
    },
    /// Fail a claimed task, recording why
    Fail {
        /// The task id
        task: TaskId,
        /// Why the attempt failed
        #[arg(long, alias = "reason", default_value = "")]
        summary: String,
    },
}

/// Reads `PATH=FILE` pairs, validating each path before anything is written.
fn read_artifacts(ctx: &Ctx<'_>, specs: &[String]) -> Result<Vec<(String, Vec<u8>)>> {
    let mut out = Vec::new();
    for spec in specs {
        let Some((path, file)) = spec.split_once('=') else {
            return Err(Error::Invalid(format!(
                "--artifact `{spec}` is not PATH=FILE"
            )));
        };
        validate_pipeline_path(path)?;
        let file = ctx.cwd.join(file);
        let bytes = std::fs::read(&file)
            .map_err(|e| Error::io(format!("cannot read artifact file {}", file.display()), e))?;
        out.push((path.to_owned(), bytes));
    }
    Ok(out)
}

pub(crate) fn run(ctx: &Ctx<'_>, args: Args) -> Result<()> {
    let (store, sid) = ctx.session()?;
    let written = match args.action {
        Action::Claim { task, pid } => {
            let owner_pid = pid.unwrap_or_else(tlv4_core::host::parent_pid);
            store.transact(&sid, |txn| {
                let ready = {
                    let t = txn.state.task(&task)?;
                    match t.status {
                        TaskStatus::InProgress => {
                            let by = t.owner.as_ref().map_or("someone".into(), |o| format!("{}:{} since {}", o.host, o.pid, o.started_at));
                            return Err(Error::conflict(format!("task `{task}` is already claimed by {by}"), None));
                        }
                        TaskStatus::Completed => {
                            return Err(Error::state(
                                format!("task `{task}` is already completed"),
                                Some("to run it again, roll back to before its completion: `git tlv4 rollback --to EVENT`".into()),
                            ));
                        }
                        TaskStatus::Pending | TaskStatus::Failed => txn.state.is_unblocked(t),
                    }
                };
                if !ready {
                    let t = txn.state.task(&task)?;
                    let waiting: Vec<String> = t
                        .blocked_by
                        .iter()
                        .filter(|d| txn.state.tasks.get(*d).is_none_or(|x| x.status != TaskStatus::Completed))
                        .map(ToString::to_string)
                        .collect();
                    return Err(Error::state(format!("task `{task}` is blocked by {}", waiting.join(", ")), None));
                }
                let t = txn.state.task_mut(&task)?;
                t.status = TaskStatus::InProgress;
                t.attempts += 1;
                t.owner = Some(Owner { host: tlv4_core::host::name(), pid: owner_pid, started_at: tlv4_core::clock::now_rfc3339(), start_time: tlv4_core::host::process_start_time(owner_pid) });
                let summary = format!("Claimed by {}:{owner_pid}, attempt {}", tlv4_core::host::name(), t.attempts);
                Ok(Some(Event::task(EventKind::TaskClaimed, t, summary)))
            })?
        }
        Action::Complete {
            task,
            summary,
            artifact,
        } => {
            let artifacts = read_artifacts(ctx, &artifact)?;
            store.transact(&sid, |txn| {
                let t = txn.state.task(&task)?;
                must_be_claimed(&task, t.status, "complete")?;
                for (path, bytes) in &artifacts {
                    txn.write_file(path, bytes.clone())?;
                }
                let t = txn.state.task_mut(&task)?;
                t.status = TaskStatus::Completed;
                t.owner = None;
                t.result = Some(TaskResult {
                    summary: summary.clone(),
                    reason: None,
                    artifacts: artifacts.iter().map(|(p, _)| p.clone()).collect(),
                    finished_at: tlv4_core::clock::now_rfc3339(),
                });
                let t = txn.state.task(&task)?.clone();
                let unblocked: Vec<String> = txn
                    .state
                    .dependents(&task)
                    .filter(|d| d.status == TaskStatus::Pending && txn.state.is_unblocked(d))
                    .map(|d| d.id.to_string())
                    .collect();
                let mut body = if summary.is_empty() {
                    "Completed".to_owned()
                } else {
                    summary.clone()
                };
                for (p, _) in &artifacts {
                    body.push_str(&format!("\nArtifact: {p}"));
                }
                if !unblocked.is_empty() {
                    body.push_str(&format!("\nUnblocked: {}", unblocked.join(", ")));
                }
                Ok(Some(Event::task(EventKind::TaskCompleted, &t, body)))
            })?
        }
        Action::Fail { task, summary } => store.transact(&sid, |txn| {
            let t = txn.state.task(&task)?;
            must_be_claimed(&task, t.status, "fail")?;
            let t = txn.state.task_mut(&task)?;
            t.status = TaskStatus::Failed;
            t.owner = None;
            let reason = if summary.is_empty() {
                "no reason given".to_owned()
            } else {
                summary.clone()
            };
            t.result = Some(TaskResult {
                summary: String::new(),
                reason: Some(reason.clone()),
                artifacts: Vec::new(),
                finished_at: tlv4_core::clock::now_rfc3339(),
            });
            Ok(Some(Event::task(EventKind::TaskFailed, t, reason)))
        })?,
    };
    if let Some(w) = written {
        ctx.ui.status(format!(
            "{} ({})",
            w.event.subject(),
            short_id(&w.commit.to_string())
        ));
    }
    Ok(())
}

fn must_be_claimed(task: &TaskId, status: TaskStatus, verb: &str) -> Result<()> {
    match status {
        TaskStatus::InProgress => Ok(()),
        TaskStatus::Completed => Err(Error::state(
            format!("task `{task}` is already completed"),
            None,
        )),
        TaskStatus::Pending | TaskStatus::Failed => Err(Error::state(
            format!(
                "task `{task}` is not claimed ({}); cannot {verb} it",
                status.as_str()
            ),
            Some(format!("claim it first: `git tlv4 task claim {task}`")),
        )),
    }
}
