//! The quality machinery: code review of diffs, the spec gate, the tester, supervisor
//! checkpoints and discuss rounds. Deterministic rules decide; an agent's opinion may be
//! added on top, never instead.

pub mod checkpoint;
pub mod discuss;
pub mod gate;
pub mod protocol;
pub mod review;
pub mod tester;

use crate::agents::{TaskInput, TaskOutput};
use tlv4_core::error::Result;
use tlv4_core::model::{Role, Verdict};

/// What the coordinator needs besides the task input: where the code came from.
#[derive(Clone)]
pub struct QualityContext {
    /// The repository.
    pub repo: gix::ThreadSafeRepository,
    /// The commit the session forked from.
    pub base: gix::ObjectId,
    /// The session tip when the task started.
    pub tip: gix::ObjectId,
    /// The configuration the session runs with (pinned at its start), as the command read
    /// it once: the review rules, the tests' command, the trust record.
    pub conf: std::sync::Arc<tlv4_core::trust::Configuration>,
    /// Whether the agent of a code task gets its CLI's shell: the session runs with shell on
    /// (`settings.shell`) and this kernel's sandbox is full.
    pub shell: bool,
}

/// The result of a quality task.
#[derive(Debug, Clone)]
pub struct QualityResult {
    /// Files and report, as any task.
    pub output: TaskOutput,
    /// The verdict, recorded in `control.toml` under the task id.
    pub verdict: Option<Verdict>,
    /// Lines for `wisdom/issues.md`.
    pub warnings: Vec<String>,
    /// The tester asks for a fix iteration (its fix task and the next test run are created by
    /// the coordinator).
    pub fix: Option<FixRequest>,
}

/// A tester's request for another fix iteration.
#[derive(Debug, Clone, PartialEq)]
pub struct FixRequest {
    /// The iteration that just ran, from 1.
    pub iteration: u32,
    /// `conservative`, `surgical` or `aggressive`.
    pub strategy: String,
    /// Pass rate of this iteration, 0–100; `None` when the tests failed before the runner
    /// counted any (a compile error, a crash): then nothing says how many pass.
    pub pass_rate: Option<f64>,
    /// The failures to fix, with their output (trimmed), most severe first.
    pub failures: String,
}

/// Runs a reviewer, tester or supervisor task.
pub fn run(input: &TaskInput, ctx: &QualityContext) -> Result<QualityResult> {
    match (&input.task.role, input.task.id.prefix()) {
        (Role::Reviewer, "REVIEW") => return review::run_task(input, ctx),
        (Role::Reviewer, "QUALITY") => return gate::run_task(input, ctx),
        (Role::Tester, _) => return tester::run_task(input, ctx),
        (Role::Supervisor, _) => return checkpoint::run_task(input, ctx),
        _ => {}
    }
    not_built(input)
}

/// A quality task this build cannot run: it fails, naming what is missing.
pub(crate) fn not_built(input: &TaskInput) -> Result<QualityResult> {
    let missing = match input.task.role {
        Role::Reviewer => "the reviewer (diff review and spec quality gate)",
        Role::Tester => "the tester (framework detection, test runs, fix cycle)",
        _ => "the supervisor (checkpoint scoring)",
    };
    Ok(QualityResult {
        output: TaskOutput::failed(
            format!(
                "{missing} is not part of this build yet, so {} cannot be judged",
                input.task.id
            ),
            format!("not run: {missing} is missing"),
        ),
        verdict: None,
        warnings: Vec::new(),
        fix: None,
    })
}

/// How a discuss round ended.
#[derive(Debug, Clone)]
pub struct DiscussOutcome {
    /// `HIGH`, `MEDIUM` or `LOW` divergence, with the consensus verdict.
    pub verdict: Verdict,
    /// `discussions/<round>-discussion.md` and anything else to store.
    pub files: Vec<(String, Vec<u8>)>,
    /// Action items for a revision or for `wisdom/issues.md`.
    pub action_items: Vec<String>,
    /// What the agent critics cost: perspective, agent name, usage.
    pub usage: Vec<(String, String, crate::agents::command::Usage)>,
    /// The round ran as the protocol and ended at a surface consensus: every seat agrees for
    /// much the same reasons, which the user is asked to adopt or challenge.
    pub surface_consensus: bool,
}

/// Runs discuss round `round` on what `produced` wrote; `None` when no round was run.
pub fn discuss(
    round: &str,
    input: &TaskInput,
    produced: &TaskOutput,
    agents: &discuss::Perspectives,
) -> Result<Option<DiscussOutcome>> {
    discuss::run_round(round, input, produced, agents)
}
