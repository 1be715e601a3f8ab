//! The user's decisions at a pause: `approve`, `revise`, `feedback`, `recheck`, `improve`,
//! `abort`, `pick`. Each is one event; all but `abort` then run the pipeline on.

use crate::coordinator::decide::{self, Decision};
use tlv4_core::error::{Error, Result};
use tlv4_core::model::TaskId;

use super::Ctx;
use super::drive::{RunFlags, drive};

/// Arguments of `approve`.
#[derive(Debug, clap::Args)]
pub struct ApproveArgs {
    /// Loop options
    #[command(flatten)]
    pub run: RunFlags,
}

/// Arguments of `revise`.
#[derive(Debug, clap::Args)]
pub struct ReviseArgs {
    /// The completed or failed task to redo
    pub task: TaskId,
    /// What should change
    #[arg(long, default_value = "")]
    pub feedback: String,
    /// Loop options
    #[command(flatten)]
    pub run: RunFlags,
}

/// Arguments of `feedback`.
#[derive(Debug, clap::Args)]
pub struct FeedbackArgs {
    /// The feedback, routed to the document it concerns
    pub text: String,
    /// Loop options
    #[command(flatten)]
    pub run: RunFlags,
}

/// Arguments of `recheck`.
#[derive(Debug, clap::Args)]
pub struct RecheckArgs {
    /// Loop options
    #[command(flatten)]
    pub run: RunFlags,
}

/// Arguments of `improve`.
#[derive(Debug, clap::Args)]
pub struct ImproveArgs {
    /// completeness, consistency, traceability, depth or coverage (default: the weakest)
    pub dimension: Option<String>,
    /// Loop options
    #[command(flatten)]
    pub run: RunFlags,
}

/// Arguments of `pick`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
The session's code loses the change of the candidate picked first and gains candidate N's, \
in one event; the task branch moves to candidate N's commit, and the tasks that depend on \
TASK and have run go back to pending, to run again on the new code. A task whose candidates \
all fell short takes N and counts as completed. `git tlv4 candidates TASK` lists them.")]
pub struct PickArgs {
    /// The best-of task
    #[arg(value_name = "TASK")]
    pub task: TaskId,
    /// The candidate to take, by its number
    #[arg(value_name = "N")]
    pub number: u32,
    /// Loop options
    #[command(flatten)]
    pub run: RunFlags,
}

/// Arguments of `abort`.
#[derive(Debug, clap::Args)]
pub struct AbortArgs {}

/// Records `decision` as a `user_decision` event, then runs the loop (unless `flags` is
/// `None`, for `abort`).
fn decision(ctx: &Ctx<'_>, decision: Decision, flags: Option<&RunFlags>) -> Result<()> {
    let (store, sid) = ctx.session()?;
    let written = store.transact(&sid, |txn| {
        let summary = decide::apply(&decision, txn, tlv4_specdoc::md::inline)?;
        Ok(Some(decision.event(summary)))
    })?;
    if let Some(w) = written {
        ctx.ui.status(format!(
            "{}: {}",
            decision.name(),
            w.event.summary.replace('\n', "\n  ")
        ));
    }
    match flags {
        Some(f) => drive(ctx, &store, &sid, f),
        None => Ok(()),
    }
}

pub(crate) fn approve(ctx: &Ctx<'_>, args: ApproveArgs) -> Result<()> {
    decision(ctx, Decision::Approve, Some(&args.run))
}

pub(crate) fn revise(ctx: &Ctx<'_>, args: ReviseArgs) -> Result<()> {
    let d = Decision::Revise {
        task: args.task,
        feedback: args.feedback,
    };
    decision(ctx, d, Some(&args.run))
}

pub(crate) fn feedback(ctx: &Ctx<'_>, args: FeedbackArgs) -> Result<()> {
    let text = args.text.trim().to_owned();
    if text.is_empty() {
        return Err(Error::Invalid("the feedback is empty".into()));
    }
    decision(ctx, Decision::Feedback { text }, Some(&args.run))
}

pub(crate) fn recheck(ctx: &Ctx<'_>, args: RecheckArgs) -> Result<()> {
    decision(ctx, Decision::Recheck, Some(&args.run))
}

pub(crate) fn improve(ctx: &Ctx<'_>, args: ImproveArgs) -> Result<()> {
    let d = Decision::Improve {
        dimension: args.dimension,
    };
    decision(ctx, d, Some(&args.run))
}

pub(crate) fn abort(ctx: &Ctx<'_>, _args: AbortArgs) -> Result<()> {
    decision(ctx, Decision::Abort, None)
}

pub(crate) fn pick(ctx: &Ctx<'_>, args: PickArgs) -> Result<()> {
    let (store, sid) = ctx.session()?;
    let picked = crate::coordinator::pick::pick(&store, &sid, &args.task, args.number)?;
    ctx.ui
        .status(format!("pick: {}", picked.summary.replace('\n', "\n  ")));
    match &picked.branch_note {
        Some(note) => ctx.ui.warn(note),
        None => ctx.ui.status(format!(
            "branch {} now at candidate {} ({})",
            picked.branch,
            args.number,
            tlv4_core::text::short_id(&picked.commit.to_string())
        )),
    }
    drive(ctx, &store, &sid, &args.run)
}
