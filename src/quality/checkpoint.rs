//! Supervisor checkpoints (`CHECKPOINT-*`): process and consistency checks at fixed points of
//! the pipeline, scored by rules, with a verdict the coordinator acts on.
//!
//! A checkpoint looks back on its *scope*: the tasks it waits for and everything they depend
//! on. It reads their documents from the pipeline folder, the session state at the tip it
//! started from, the event log and the message bus, and scores each check pass 1.0, warn 0.5
//! or fail 0.0. The overall score is the mean of the checks that apply; pass ≥ 0.8 proceeds,
//! warn 0.5–0.79 proceeds with one line per weak check in `wisdom/issues.md`, block < 0.5
//! pauses the session for Override (`approve`), Revise upstream (`revise`) or Abort. Every
//! run writes `artifacts/CHECKPOINT-NNN-report.md`, a trivial pass included, as the audit trail.
//!
//! Every checkpoint runs the general checks of the reference: terminology consistency, the
//! upstream consumed, artifacts exist, the decision chain, error and retry patterns, and the
//! quality trend against the previous checkpoint's report. The tasks it waits for directly
//! add their phase's checks: scope consistency after the requirements (CHECKPOINT-001),
//! architecture ↔ epics alignment and critical open questions after the epics
//! (CHECKPOINT-002), and plan coverage, complexity sanity and the dependency chain after the
//! plan (CHECKPOINT-003).
//!
//! Decisions where the reference is open or does not fit:
//! - The reference names requirements `FR-NNN`; the templates use `REQ-NNN`. Both are read.
//! - Reference state fields no producer emits (`terminology_keys`, `open_questions`,
//!   `upstream_refs_consumed`, `quality_self_score`) are measured from the documents instead:
//!   terms are the names documents give to ids, upstream consumption is the share of upstream
//!   ids a document names, and the trend compares checkpoint scores.
//! - "Decisions carried forward" means: every task in scope published its decisions on the
//!   bus (a task without a state update but with its artifact is weak, as the reference's
//!   "missing state → read the artifact"), and every entry of `wisdom/decisions.md` that
//!   concerns the scope (user feedback) has at least half of its key words in the documents
//!   or decisions that followed.
//! - A failed attempt also sends an `error` message, so a role's errors are the larger of the
//!   two counts plus its `blocker` messages; three or more fail the health check.
//! - The first checkpoint has no trend; the trend check is then not applicable, not a pass.
//! - "Execution method appropriate" (agent for Low, CLI for Medium and above) is not checked:
//!   here the executor's driver comes from the configuration, not from the plan.

mod checks;
mod history;
mod report;

use super::{QualityContext, QualityResult};
use crate::agents::{Outcome, StateUpdate, TaskInput, TaskOutput};
use tlv4_core::error::Result;
use tlv4_core::model::Verdict;
use tlv4_specdoc::spec;

use checks::{Check, Inputs};
use history::{History, Scope};
use tlv4_core::text::clip;

/// A score at or above this passes.
pub const PASS: f64 = 0.8;
/// A score at or above this (and below [`PASS`]) warns; below it blocks.
pub const WARN: f64 = 0.5;

/// A checkpoint verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Proceed.
    Pass,
    /// Proceed; risks are logged.
    Warn,
    /// Stop for the user.
    Block,
}

impl Level {
    /// The verdict for `score`.
    pub fn of(score: f64) -> Level {
        if score >= PASS {
            Level::Pass
        } else if score >= WARN {
            Level::Warn
        } else {
            Level::Block
        }
    }

    /// `pass`, `warn` or `block`.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Pass => "pass",
            Level::Warn => "warn",
            Level::Block => "block",
        }
    }
}

/// Runs a checkpoint task.
pub fn run_task(input: &TaskInput, ctx: &QualityContext) -> Result<QualityResult> {
    let history = History::read(input, ctx);
    let spec = spec::Spec::read(&input.folder);
    let scope = Scope::of(input, history.state.as_ref(), &spec);
    let x = Inputs {
        input,
        scope: &scope,
        spec: &spec,
        history: &history,
    };
    let mut all = checks::run(&x);
    let before = mean(&all);
    let previous = report::previous(input);
    let (trend, trend_label) = checks::trend(previous.as_ref(), before, &all);
    all.push(trend);
    let score = mean(&all);
    let level = Level::of(score);

    let weak: Vec<&Check> = {
        let mut w: Vec<&Check> = all
            .iter()
            .filter(|c| c.score.is_some_and(|s| s < 1.0))
            .collect();
        w.sort_by(|a, b| a.score.partial_cmp(&b.score).expect("scores are finite"));
        w
    };
    let risks: Vec<String> = if level == Level::Warn {
        weak.iter()
            .map(|c| {
                format!(
                    "{} {} ({:.1}): {}",
                    c.name,
                    c.result(),
                    c.score.unwrap_or(0.0),
                    c.summary
                )
            })
            .collect()
    } else {
        Vec::new()
    };
    let id = input.task.id.as_str();
    let path = report::path(id);
    let text = report::Report {
        input,
        scope: &scope,
        checks: &all,
        score,
        level,
        trend: trend_label,
        risks: &risks,
        problems: &history.problems,
    }
    .render();

    let weakest: Vec<String> = weak
        .iter()
        .take(3)
        .map(|c| format!("{} {:.1}", c.key, c.score.unwrap_or(0.0)))
        .collect();
    let scored = all.iter().filter(|c| c.score.is_some()).count();
    let line = if weakest.is_empty() {
        format!("{} {score:.2}: all {scored} checks pass", level.as_str())
    } else {
        format!(
            "{} {score:.2} over {scored} checks; weakest: {}",
            level.as_str(),
            weakest.join(", ")
        )
    };
    let mut findings = vec![clip(&format!("{id}: {line}"), 98)];
    findings.extend(
        weak.iter()
            .take(3)
            .map(|c| clip(&format!("{}: {}", c.name, c.summary), 98)),
    );
    findings.push(clip(&format!("quality trend: {trend_label}"), 98));
    let update = StateUpdate {
        key_findings: findings,
        decisions: vec![
            format!(
                "verdict {} from the mean {score:.2} of {scored} checks: pass ≥ {PASS}, warn ≥ {WARN}, block below",
                level.as_str()
            ),
            format!(
                "scope: {}",
                scope
                    .tasks
                    .iter()
                    .map(|t| t.id.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ],
        files_modified: vec![path.clone()],
        verification: "self-validated".into(),
        tech_profile: None,
    };
    Ok(QualityResult {
        output: TaskOutput {
            outcome: Outcome::Completed,
            summary: format!("{id} {line}"),
            files: vec![(path, text.into_bytes())],
            state_update: update,
        },
        verdict: Some(Verdict {
            verdict: level.as_str().to_owned(),
            score: Some((score * 1000.0).round() / 1000.0),
            summary: line,
        }),
        warnings: risks,
        fix: None,
    })
}

/// The mean of the scored checks; 1.0 when none applies (a trivial pass).
fn mean(checks: &[Check]) -> f64 {
    let scores: Vec<f64> = checks.iter().filter_map(|c| c.score).collect();
    if scores.is_empty() {
        1.0
    } else {
        scores.iter().sum::<f64>() / scores.len() as f64
    }
}

#[cfg(test)]
pub(crate) mod tests;
