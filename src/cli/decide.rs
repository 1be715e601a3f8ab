//! The user's decisions at a pause: `approve`, `revise`, `feedback`, `recheck`, `improve`,
//! `abort`. Each is one event; all but `abort` then run the pipeline on.

use crate::coordinator::revise::{self, FeedbackRoute};
use tlv4_core::error::{Error, Result};
use tlv4_core::model::{Event, EventKind, State, TaskId};

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

/// Arguments of `abort`.
#[derive(Debug, clap::Args)]
pub struct AbortArgs {}

/// Applies `decide` to the session as a `user_decision` event, then runs the loop.
fn decision(
    ctx: &Ctx<'_>,
    name: &str,
    flags: Option<&RunFlags>,
    mut decide: impl FnMut(&mut State, &mut tlv4_core::store::Txn<'_>) -> Result<String>,
) -> Result<()> {
    let (store, sid) = ctx.session()?;
    let written = store.transact(&sid, |txn| {
        if txn.state.session.status == tlv4_core::model::SessionStatus::Aborted {
            return Err(Error::state(
                format!("session `{sid}` was aborted; it takes no more decisions"),
                Some(format!(
                    "fork it to go on: git tlv4 fork --session {sid} --at EVENT"
                )),
            ));
        }
        let mut state = txn.state.clone();
        let summary = decide(&mut state, txn)?;
        txn.state = state;
        Ok(Some(
            Event::session(EventKind::UserDecision, summary).with("Decision", name),
        ))
    })?;
    if let Some(w) = written {
        ctx.ui
            .status(format!("{name}: {}", w.event.summary.replace('\n', "\n  ")));
    }
    match flags {
        Some(f) => drive(ctx, &store, &sid, f),
        None => Ok(()),
    }
}

pub(crate) fn approve(ctx: &Ctx<'_>, args: ApproveArgs) -> Result<()> {
    decision(ctx, "approve", Some(&args.run), |state, _| {
        revise::approve(state)
    })
}

pub(crate) fn revise(ctx: &Ctx<'_>, args: ReviseArgs) -> Result<()> {
    decision(ctx, "revise", Some(&args.run), |state, _| {
        let made = revise::revise(state, &args.task, &args.feedback, false)?;
        Ok(format!("revision of {}: {}", args.task, list(&made)))
    })
}

pub(crate) fn feedback(ctx: &Ctx<'_>, args: FeedbackArgs) -> Result<()> {
    let text = args.text.trim().to_owned();
    if text.is_empty() {
        return Err(Error::Invalid("the feedback is empty".into()));
    }
    let sid = ctx.session()?.1;
    decision(ctx, "feedback", Some(&args.run), |state, txn| {
        let route = revise::feedback(state, &text)?;
        let mut log = txn
            .read_file(&sid, "wisdom/decisions.md")?
            .unwrap_or_else(|| b"# Decisions\n".to_vec());
        let summary = match route {
            FeedbackRoute::Revised(made) => {
                format!("feedback routed to {}: revisions {}", made[0], list(&made))
            }
            FeedbackRoute::Attached(t) => {
                format!("feedback attached to {t}, which has not run yet")
            }
            FeedbackRoute::Logged => {
                "feedback logged to wisdom/decisions.md (implementation has started)".to_owned()
            }
        };
        let quoted = tlv4_specdoc::md::inline(&text);
        log.extend_from_slice(format!("- Feedback: {quoted} ({summary})\n").as_bytes());
        txn.write_file("wisdom/decisions.md", log)?;
        Ok(summary)
    })
}

pub(crate) fn recheck(ctx: &Ctx<'_>, args: RecheckArgs) -> Result<()> {
    decision(ctx, "recheck", Some(&args.run), |state, _| {
        Ok(format!("recheck: {}", revise::recheck(state)?))
    })
}

pub(crate) fn improve(ctx: &Ctx<'_>, args: ImproveArgs) -> Result<()> {
    let (_, sid) = ctx.session()?;
    decision(ctx, "improve", Some(&args.run), |state, txn| {
        let report = txn
            .read_file(&sid, "spec/readiness-report.md")?
            .ok_or_else(|| {
                Error::state(
                    "there is no readiness report yet (spec/readiness-report.md)",
                    Some("it is written by the QUALITY-001 gate".into()),
                )
            })?;
        let (imp, gate) = revise::improve(
            state,
            &String::from_utf8_lossy(&report),
            args.dimension.as_deref(),
        )?;
        Ok(format!("improve: {imp}, then {gate}"))
    })
}

pub(crate) fn abort(ctx: &Ctx<'_>, _args: AbortArgs) -> Result<()> {
    decision(ctx, "abort", None, |state, _| {
        revise::abort(state)?;
        Ok("aborted by the user; the history stays".into())
    })
}

fn list(ids: &[TaskId]) -> String {
    ids.iter()
        .map(TaskId::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}
