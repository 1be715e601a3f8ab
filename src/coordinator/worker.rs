//! One task on a worker thread: the quality machinery for its roles, the role's agent
//! otherwise — in a task worktree (code tasks) or a read-only view of the session tip
//! (document tasks) when the agent works in a checkout — then the task's discuss round.
//!
//! A code task's changes are snapshotted into a commit on its task branch before the
//! worktree goes; the loop merges that commit when it records the result.

use gix::ObjectId;

use crate::agents::command::{DriverOutput, RunContext, Usage};
use crate::agents::prompt::writes_code;
use crate::agents::roster::Roster;
use crate::agents::{Outcome, StateUpdate, TaskInput, TaskOutput};
use crate::error::Result;
use crate::hooks::Hooks;
use crate::model::Verdict;
use crate::quality::{self, DiscussOutcome, FixRequest, QualityContext};
use crate::store::Store;
use crate::worktree::{self, ReadOnlyView, SnapshotLimits, TaskWorktree};

/// What a worker hands back.
pub(crate) struct WorkResult {
    pub output: TaskOutput,
    pub fix: Option<FixRequest>,
    pub verdict: Option<Verdict>,
    pub warnings: Vec<String>,
    pub discuss: Option<(String, DiscussOutcome)>,
    /// The agent's name (`quality` for the quality roles).
    pub agent: String,
    /// What the run record keeps of an agent's run.
    pub run: Option<RunData>,
    /// The commit a code task's changes were snapshotted into.
    pub snapshot: Option<SnapshotData>,
    /// Lines for the progress display (work set aside, a kept worktree).
    pub notes: Vec<String>,
}

/// An agent's run, for `runs/<TASK>/<attempt>/`.
pub(crate) struct RunData {
    pub prompt: String,
    pub raw: String,
    pub transcript: Option<String>,
    pub usage: Usage,
}

/// A code task's snapshot.
pub(crate) struct SnapshotData {
    pub commit: ObjectId,
    pub parent: ObjectId,
    pub changed: Vec<String>,
}

impl WorkResult {
    /// A failure before the agent produced anything.
    pub fn failed(agent: &str, reason: String) -> WorkResult {
        WorkResult {
            output: TaskOutput {
                outcome: Outcome::Failed(reason.clone()),
                summary: format!("error: {reason}"),
                files: Vec::new(),
                state_update: StateUpdate::default(),
            },
            fix: None,
            verdict: None,
            warnings: Vec::new(),
            discuss: None,
            agent: agent.to_owned(),
            run: None,
            snapshot: None,
            notes: Vec::new(),
        }
    }
}

/// Runs one task.
pub(crate) fn work(
    roster: &Roster,
    input: &TaskInput,
    qctx: &QualityContext,
    limits: &SnapshotLimits,
    hooks: &Hooks,
) -> Result<WorkResult> {
    let quality_role = quality::ROLES.contains(&input.task.role.as_str());
    let task = &input.task;
    let payload = serde_json::json!({
        "event": "before-task", "session": input.session.id, "task": task.id, "role": task.role,
        "attempt": task.attempts, "description": task.description,
    });
    if let Some(run) = hooks.run("before-task", &payload, &repo_root(qctx))
        && !run.ok
    {
        let agent = if quality_role {
            "quality".to_owned()
        } else {
            roster.for_role(&task.role).name().to_owned()
        };
        return Ok(WorkResult::failed(&agent, crate::hooks::veto(&run)));
    }
    let mut result = if quality_role {
        let q = quality::run(input, qctx)?;
        let (mut output, mut verdict, mut warnings) = (q.output, q.verdict, q.warnings);
        let mut agent = "quality".to_owned();
        let mut run = None;
        // A code review may get an agent's opinion on top of the rules'.
        if task.id.prefix() == "REVIEW"
            && let Some(driver) = roster.opinion(&task.role)
        {
            let (ran, said) = super::opinion::add(&*driver, input, qctx, &mut output, &mut verdict);
            warnings.extend(said);
            if ran.is_some() {
                agent = format!("quality+{}", driver.name());
            }
            run = ran;
        }
        WorkResult {
            output,
            fix: q.fix,
            verdict,
            warnings,
            discuss: None,
            agent,
            run,
            snapshot: None,
            notes: Vec::new(),
        }
    } else {
        run_agent(roster, input, qctx, limits, hooks)?
    };
    if let (Some(round), Outcome::Completed) = (&input.task.discuss, &result.output.outcome) {
        result.discuss = quality::discuss(round, input, &result.output, roster.perspectives())?
            .map(|d| (round.clone(), d));
    }
    Ok(result)
}

/// The role's agent, in the checkout it needs.
fn run_agent(
    roster: &Roster,
    input: &TaskInput,
    qctx: &QualityContext,
    limits: &SnapshotLimits,
    hooks: &Hooks,
) -> Result<WorkResult> {
    let driver = roster.for_role(&input.task.role);
    let name = driver.name().to_owned();
    let task = &input.task;
    let mut notes = Vec::new();
    let mut snapshot = None;
    let ran = if !driver.checkout() {
        let ctx = RunContext {
            workdir: std::env::temp_dir(),
            run_dir: None,
            attempt: task.attempts,
        };
        driver.run(input, &ctx)
    } else {
        let store = Store::from_repo(qctx.repo.to_thread_local())?;
        let sid = &input.session.id;
        if writes_code(&task.role) {
            if let Some(kept) = worktree::set_aside(&store, sid, &task.id, qctx.tip, task.attempts)?
            {
                notes.push(format!(
                    "{}: the unmerged work of an earlier attempt is kept at {kept}",
                    task.id
                ));
            }
            let wt = TaskWorktree::create(&store, sid, &task.id, qctx.tip)?;
            let ctx = RunContext {
                workdir: wt.path().to_path_buf(),
                run_dir: None,
                attempt: task.attempts,
            };
            let mut ran = driver.run(input, &ctx);
            match wt.snapshot(limits) {
                Ok(snap) => {
                    if let Some(commit) = snap.commit {
                        let data = SnapshotData {
                            commit,
                            parent: wt.from(),
                            changed: snap.changed.iter().map(|c| c.path.clone()).collect(),
                        };
                        if let Ok(out) = &mut ran {
                            before_merge(hooks, input, &data, wt.path(), &mut out.output);
                        }
                        snapshot = Some(data);
                    }
                    if !snap.ignored.is_empty() {
                        notes.push(format!(
                            "{}: changes under .tlv4/ were left out: {}",
                            task.id,
                            snap.ignored.join(", ")
                        ));
                    }
                    if let Err(e) = wt.remove() {
                        notes.push(e.to_string());
                    }
                    ran
                }
                // Changes that break the rules are not taken; the worktree goes with them.
                Err(e) => ran.map(|mut out| {
                    out.output = rejected(&name, &e.to_string(), out.output);
                    out
                }),
            }
        } else {
            let view = ReadOnlyView::create(&store, qctx.tip)?;
            let ctx = RunContext {
                workdir: view.path().to_path_buf(),
                run_dir: None,
                attempt: task.attempts,
            };
            let ran = driver.run(input, &ctx);
            if let Err(e) = view.remove() {
                notes.push(e.to_string());
            }
            ran
        }
    };
    let DriverOutput {
        output,
        prompt,
        raw,
        transcript,
        usage,
    } = match ran {
        Ok(out) => out,
        Err(e) => {
            let mut failed = WorkResult::failed(&name, reason(&name, &e));
            failed.notes = notes;
            failed.snapshot = snapshot;
            return Ok(failed);
        }
    };
    Ok(WorkResult {
        output,
        fix: None,
        verdict: None,
        warnings: Vec::new(),
        discuss: None,
        agent: name,
        run: Some(RunData {
            prompt,
            raw,
            transcript,
            usage,
        }),
        snapshot,
        notes,
    })
}

/// The reason a task failed on error `e` of agent `agent`: the error naming the agent once,
/// with its hints — the reason is all the user sees of it later.
pub(crate) fn reason(agent: &str, e: &crate::error::Error) -> String {
    let mut reason = e.to_string();
    if !reason.starts_with(&format!("agent `{agent}`")) {
        reason = format!("agent `{agent}`: {reason}");
    }
    for hint in e.hints() {
        reason.push_str(&format!(" (hint: {hint})"));
    }
    reason
}

/// The `before-merge` hook of a completed code task: a veto fails the task (its snapshot is
/// then kept, not merged).
fn before_merge(
    hooks: &Hooks,
    input: &TaskInput,
    snap: &SnapshotData,
    workdir: &std::path::Path,
    output: &mut TaskOutput,
) {
    if output.outcome != Outcome::Completed {
        return;
    }
    let task = &input.task;
    let payload = serde_json::json!({
        "event": "before-merge", "session": input.session.id, "task": task.id, "role": task.role,
        "attempt": task.attempts, "snapshot": snap.commit.to_string(),
        "parent": snap.parent.to_string(), "changed": snap.changed,
        "branch": crate::worktree::task_ref(&input.session.id, &task.id),
    });
    if let Some(run) = hooks.run("before-merge", &payload, workdir)
        && !run.ok
    {
        let reason = crate::hooks::veto(&run);
        output.summary = format!("failed: {}", reason.lines().next().unwrap_or_default());
        output.outcome = Outcome::Failed(reason);
    }
}

/// The root of the user's working tree, where hooks run.
fn repo_root(qctx: &QualityContext) -> std::path::PathBuf {
    qctx.repo
        .work_dir()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_else(std::env::temp_dir)
}

/// The output of a run whose changes were refused.
fn rejected(agent: &str, why: &str, mut output: TaskOutput) -> TaskOutput {
    output.outcome = Outcome::Failed(format!(
        "agent `{agent}`: its changes were refused, nothing was taken: {why}"
    ));
    output.summary = format!(
        "failed: changes refused: {}",
        why.lines().next().unwrap_or_default()
    );
    output.files.clear();
    output
}
