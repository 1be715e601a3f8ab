//! One task on a worker thread: the quality machinery for its roles, the role's agent
//! otherwise — in a task worktree (code tasks) or a read-only view of the session tip
//! (document tasks) when the agent works in a checkout — then the task's discuss round.
//!
//! A code task's changes are snapshotted into a commit on its task branch before the
//! worktree goes; the loop merges that commit when it records the result.

use gix::ObjectId;

use crate::agents::command::{Driver, DriverOutput, RunContext, Shell, TestCommand, Usage};
use crate::agents::meter::Meter;
use crate::agents::roster::Roster;
use crate::agents::{Outcome, TaskInput, TaskOutput};
use crate::quality::{self, DiscussOutcome, FixRequest, QualityContext};
use tlv4_core::error::Result;
use tlv4_core::hooks::Hooks;
use tlv4_core::model::Verdict;
use tlv4_core::store::Store;
use tlv4_core::worktree::{self, ReadOnlyView, SnapshotLimits, TaskWorktree};

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
    /// Why the agent's run was stopped by something other than the task (a usage limit, its
    /// service, its bound), if it was.
    pub stopped: Option<Stopped>,
    /// A best-of task's candidates, measured, and their runs.
    pub candidates: Option<Box<super::bestof::Chosen>>,
}

/// A run the task itself did not end.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Stopped {
    /// The agent's service refused work until `until_ms` (if it said): the task waits for it,
    /// or goes to the next agent of its role's fail-over list. Not a failed attempt.
    Limited {
        until_ms: Option<u64>,
        detail: String,
    },
    /// The agent's service failed (unreachable, 5xx, refused credentials): the next agent of
    /// the fail-over list takes the task, when there is one.
    Service(String),
    /// The run crossed its task's bound and was stopped.
    OverBound(String),
}

/// An agent's run, for `runs/<TASK>/<attempt>/`.
pub(crate) struct RunData {
    pub prompt: String,
    pub raw: String,
    pub transcript: Option<String>,
    pub usage: Usage,
    /// What the kernel's sandbox refused the agent outside its checkout, as its output
    /// reported it (see [`tlv4_core::sandbox::refusals`]).
    pub refusals: Vec<String>,
}

/// A code task's snapshot (or, for a refused one, the commit keeping what passed the checks).
pub(crate) struct SnapshotData {
    pub commit: ObjectId,
    pub parent: ObjectId,
    pub changed: Vec<String>,
    /// Refused paths, each with its reason; empty when the snapshot was taken.
    pub refused: Vec<String>,
    /// Generated directories left out, with their file counts.
    pub left_out: Vec<String>,
    /// The `refs/tlv4/runs/…` ref keeping a refused snapshot's commit.
    pub kept: Option<String>,
}

impl WorkResult {
    /// A failure before the agent produced anything.
    pub(super) fn failed(agent: &str, reason: String) -> WorkResult {
        WorkResult {
            output: TaskOutput::failed(reason.clone(), format!("error: {reason}")),
            fix: None,
            verdict: None,
            warnings: Vec::new(),
            discuss: None,
            agent: agent.to_owned(),
            run: None,
            snapshot: None,
            notes: Vec::new(),
            stopped: None,
            candidates: None,
        }
    }
}

/// Runs one task; a code task as several candidates when `best` asks for them.
#[allow(clippy::too_many_arguments)]
pub(crate) fn work(
    roster: &Roster,
    driver: Option<std::sync::Arc<dyn Driver>>,
    best: Option<&super::bestof::Ask>,
    input: &TaskInput,
    qctx: &QualityContext,
    limits: &SnapshotLimits,
    hooks: &Hooks,
    meter: &Meter,
) -> Result<WorkResult> {
    let quality_role = input.task.role.is_quality();
    let task = &input.task;
    let payload = serde_json::json!({
        "event": "before-task", "session": input.session.id, "task": task.id, "role": task.role,
        "attempt": task.attempts, "description": task.description,
    });
    if let Some(run) = hooks.run("before-task", &payload, &repo_root(qctx))
        && !run.ok
    {
        let agent = match &driver {
            _ if quality_role => "quality".to_owned(),
            Some(d) => d.name().to_owned(),
            None => roster.for_role(task.role.as_str()).name().to_owned(),
        };
        return Ok(WorkResult::failed(&agent, tlv4_core::hooks::veto(&run)));
    }
    let mut result = if quality_role {
        meter.step(match task.id.prefix() {
            "TEST" => "running the tests",
            "REVIEW" => "reviewing the change",
            "QUALITY" => "scoring the spec",
            "CHECKPOINT" => "checking the work so far",
            _ => "checking",
        });
        let q = quality::run(input, qctx)?;
        let (mut output, mut verdict, mut warnings) = (q.output, q.verdict, q.warnings);
        let mut agent = "quality".to_owned();
        let mut run = None;
        // A code review may get an agent's opinion on top of the rules'.
        if task.id.prefix() == "REVIEW"
            && let Some(driver) = roster.opinion(task.role.as_str())
        {
            meter.step(format!("asking agent {} for its review", driver.name()));
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
            stopped: None,
            candidates: None,
        }
    } else {
        let driver = driver.unwrap_or_else(|| roster.for_role(task.role.as_str()));
        match best.filter(|_| task.role.writes_code()) {
            Some(ask) => super::bestof::run(ask, input, qctx, limits, hooks, meter)?,
            None => run_agent(driver, input, qctx, limits, hooks, meter)?,
        }
    };
    if let (Some(round), Outcome::Completed) = (&input.task.discuss, &result.output.outcome) {
        meter.step(format!("discuss round {round}"));
        result.discuss = quality::discuss(round, input, &result.output, &roster.discuss_agents())?
            .map(|d| (round.clone(), d));
    }
    Ok(result)
}

/// What running an agent left: its answer (or error), lines for the progress display, the
/// snapshot of a code task, and why a failed run's snapshot was refused or not taken.
struct Ran {
    ran: Result<DriverOutput>,
    notes: Vec<String>,
    snapshot: Option<SnapshotData>,
    refused: Option<String>,
    /// The checkout the agent worked in, if any.
    workdir: Option<std::path::PathBuf>,
}

impl Ran {
    fn bare(ran: Result<DriverOutput>, notes: Vec<String>) -> Ran {
        Ran {
            ran,
            notes,
            snapshot: None,
            refused: None,
            workdir: None,
        }
    }
}

/// The role's agent, in the checkout it needs.
fn run_agent(
    driver: std::sync::Arc<dyn Driver>,
    input: &TaskInput,
    qctx: &QualityContext,
    limits: &SnapshotLimits,
    hooks: &Hooks,
    meter: &Meter,
) -> Result<WorkResult> {
    let name = driver.name().to_owned();
    let ran = if !driver.checkout() {
        let ctx = RunContext {
            max_usd: meter.max_usd(),
            workdir: std::env::temp_dir(),
            run_dir: None,
            attempt: input.task.attempts,
            meter: meter.clone(),
            deadline: None,
            env: None,
            shell: None,
        };
        meter.step(format!("agent {name} running"));
        Ran::bare(driver.run(input, &ctx), Vec::new())
    } else {
        let store = Store::from_repo(qctx.repo.to_thread_local())?;
        if input.task.role.writes_code() {
            in_task_worktree(&store, &*driver, input, qctx, limits, hooks, meter)?
        } else {
            in_view(&store, &*driver, input, qctx, meter)?
        }
    };
    Ok(work_result(name, ran, meter))
}

/// Prepares the task checkout `wt` with the project's environment, as the tester prepares
/// its own: the setup the session's base declares (or `[environment] setup`), run only when
/// trusted and only when its inputs changed since this checkout last ran it. Returns the
/// environment the agent's commands run with. An agent whose checkout cannot be prepared
/// still runs, as before, with a note saying why: the tester, in its own checkout, is what
/// decides whether the code passes, and it reports an environment error there.
fn prepare_for_agent(
    store: &Store,
    wt: &mut TaskWorktree,
    qctx: &QualityContext,
    task: &tlv4_core::model::TaskId,
    notes: &mut Vec<String>,
) -> Option<tlv4_core::environment::isolate::RunEnv> {
    let config = &qctx.conf.config.environment;
    let plan = match worktree::prepare::session_plan(store.repo(), qctx.base, &qctx.conf) {
        Ok(p) => p,
        Err(worktree::prepare::PlanRefused::Unreadable(e)) => {
            notes.push(format!(
                "{task}: its checkout was not prepared: cannot read the environment setup: {e}"
            ));
            return None;
        }
        Err(worktree::prepare::PlanRefused::Untrusted(why)) => {
            let first = why.lines().next().unwrap_or_default();
            notes.push(format!(
                "{task}: its checkout was not prepared ({first}); the agent ran without the project's dependencies"
            ));
            return None;
        }
    };
    match wt.prepare(&plan, worktree::prepare::timeout(config)) {
        Ok(Ok(prepared)) => {
            for m in &prepared.made {
                notes.push(format!("{task}: its checkout's environment: {}", m.line()));
            }
            Some(prepared.env)
        }
        Ok(Err(why)) => {
            notes.push(format!(
                "{task}: its checkout's environment could not be made, the agent ran without it: {why}"
            ));
            None
        }
        Err(e) => {
            notes.push(format!("{task}: its checkout was not prepared: {e}"));
            None
        }
    }
}

/// How a code task's agent runs in its checkout `wt`: bounded on disk, prepared with the
/// project's environment when the agent runs commands, with its CLI's shell where the session
/// gives it one.
pub(super) fn checkout_context(
    store: &Store,
    driver: &dyn Driver,
    wt: &mut TaskWorktree,
    input: &TaskInput,
    qctx: &QualityContext,
    meter: &Meter,
    notes: &mut Vec<String>,
) -> RunContext {
    wt.bound(qctx.conf.config.environment.max_disk().ok().flatten());
    let env = if driver.runs_commands() {
        meter.step("preparing its checkout's environment");
        prepare_for_agent(store, wt, qctx, &input.task.id, notes)
    } else {
        None
    };
    let shell = (qctx.shell && driver.runs_commands()).then(|| Shell {
        tests: crate::quality::tester::suite_command(&qctx.conf, &input.code)
            .map(|(command, from)| TestCommand { command, from }),
        prepared: env.is_some(),
    });
    RunContext {
        max_usd: meter.max_usd(),
        workdir: wt.path().to_path_buf(),
        run_dir: None,
        attempt: input.task.attempts,
        meter: meter.clone(),
        deadline: None,
        env,
        shell,
    }
}

/// A code task's agent in a task worktree, whose changes are snapshotted into a commit on the
/// task branch (what the snapshot refuses fails the task; what it cannot take is kept).
fn in_task_worktree(
    store: &Store,
    driver: &dyn Driver,
    input: &TaskInput,
    qctx: &QualityContext,
    limits: &SnapshotLimits,
    hooks: &Hooks,
    meter: &Meter,
) -> Result<Ran> {
    let name = driver.name().to_owned();
    let task = &input.task;
    let sid = &input.session.id;
    let mut notes = Vec::new();
    let mut snapshot = None;
    // Why a failed run's snapshot was refused or could not be taken, for its failure.
    let mut refused = None;
    if let Some(kept) = worktree::set_aside(store, sid, &task.id, qctx.tip, task.attempts)? {
        notes.push(format!(
            "{}: the unmerged work of an earlier attempt is kept at {kept}",
            task.id
        ));
    }
    meter.step("making its checkout");
    let mut wt = TaskWorktree::create(store, sid, &task.id, qctx.tip)?;
    let ctx = checkout_context(store, driver, &mut wt, input, qctx, meter, &mut notes);
    meter.step(format!("agent {name} running"));
    let mut ran = driver.run(input, &ctx);
    let workdir = ctx.workdir;
    let from = wt.from();
    meter.step("taking the snapshot of its checkout");
    let ran = match wt.snapshot(limits) {
        Ok(snap) => {
            let data = |commit| SnapshotData {
                commit,
                parent: from,
                changed: snap.changed.iter().map(|c| c.path.clone()).collect(),
                refused: snap.refused.iter().map(ToString::to_string).collect(),
                left_out: snap.left_out.iter().map(ToString::to_string).collect(),
                kept: snap.kept.as_ref().map(|k| k.name.clone()),
            };
            if let Some(commit) = snap.commit {
                let data = data(commit);
                if let Ok(out) = &mut ran {
                    meter.step("before-merge hook");
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
            if !snap.left_out.is_empty() {
                let line = left_out_line(&snap.left_out);
                notes.push(format!("{}: {line}", task.id));
                if let Ok(out) = &mut ran {
                    out.output.summary = format!("{} ({line})", out.output.summary);
                }
            }
            if !snap.refused.is_empty() {
                if let Some(k) = &snap.kept {
                    snapshot = Some(data(k.commit));
                }
                let why = refusal(&task.id, &snap);
                match &mut ran {
                    Ok(out) => out.output = rejected(&name, &why, out.output.clone()),
                    Err(_) => refused = Some(why),
                }
            }
            match wt.remove() {
                Ok(Some(k)) => notes.push(format!(
                    "{}: work not in its snapshot is kept at {} (git show --stat {0})",
                    task.id, k.name
                )),
                Ok(None) => {}
                Err(e) => notes.push(e.to_string()),
            }
            ran
        }
        // The snapshot could not be taken at all: what the checkout holds is kept
        // under a ref of its own, or the checkout stays.
        Err(e) => {
            let kept = match wt.remove() {
                Ok(Some(k)) => format!(
                    "; its work is kept at {0} (look at it: git show --stat {0})",
                    k.name
                ),
                Ok(None) => "; it had changed nothing".to_owned(),
                Err(kept) => format!("; {kept}"),
            };
            let why = format!("{e}{kept}");
            match &mut ran {
                Ok(out) => out.output = rejected(&name, &why, out.output.clone()),
                Err(_) => refused = Some(why),
            }
            ran
        }
    };
    Ok(Ran {
        ran,
        notes,
        snapshot,
        refused,
        workdir: Some(workdir),
    })
}

/// A document task's agent in a read-only view of the session tip.
fn in_view(
    store: &Store,
    driver: &dyn Driver,
    input: &TaskInput,
    qctx: &QualityContext,
    meter: &Meter,
) -> Result<Ran> {
    let view = ReadOnlyView::create(store, qctx.tip)?;
    let ctx = RunContext {
        max_usd: meter.max_usd(),
        workdir: view.path().to_path_buf(),
        run_dir: None,
        attempt: input.task.attempts,
        meter: meter.clone(),
        deadline: None,
        env: None,
        shell: None,
    };
    meter.step(format!("agent {} running", driver.name()));
    let ran = driver.run(input, &ctx);
    let mut notes = Vec::new();
    if let Err(e) = view.remove() {
        notes.push(e.to_string());
    }
    Ok(Ran {
        workdir: Some(ctx.workdir),
        ..Ran::bare(ran, notes)
    })
}

/// What a worker hands back for agent `name`'s run.
fn work_result(name: String, ran: Ran, meter: &Meter) -> WorkResult {
    let Ran {
        ran,
        mut notes,
        snapshot,
        refused,
        workdir,
    } = ran;
    let DriverOutput {
        output,
        prompt,
        raw,
        transcript,
        usage,
    } = match ran {
        Ok(out) => out,
        Err(e) => {
            let mut why = reason(&name, &e);
            if let Some(r) = refused {
                why = format!("{why}; {r}");
            }
            let mut failed = WorkResult::failed(&name, why);
            failed.stopped = match e {
                tlv4_core::error::Error::Limited {
                    until_ms, detail, ..
                } => Some(Stopped::Limited { until_ms, detail }),
                tlv4_core::error::Error::OverBound { detail, .. } => {
                    Some(Stopped::OverBound(detail))
                }
                _ => meter.api_failure().map(Stopped::Service),
            };
            // What a stopped run counted is spent all the same: the ledger keeps it.
            if meter.read() > 0 {
                failed.run = Some(RunData {
                    prompt: String::new(),
                    raw: String::new(),
                    transcript: None,
                    usage: Usage {
                        output_tokens: meter.read(),
                        ..Usage::default()
                    },
                    refusals: Vec::new(),
                });
            }
            failed.notes = notes;
            failed.snapshot = snapshot;
            return failed;
        }
    };
    // What the sandbox refused is noted, never a failure of its own: the agent's answer and
    // the snapshot's checks say whether the work is done.
    let refusals = match (&transcript, &workdir) {
        (Some(t), Some(w)) => tlv4_core::sandbox::refusals(t, &[w.as_path()]),
        _ => Vec::new(),
    };
    if let Some(first) = refusals.first() {
        notes.push(format!(
            "the sandbox refused agent {name} {} outside its checkout (kept in its run record), first: {first}",
            match refusals.len() {
                1 => "one access".to_owned(),
                n => format!("{n} accesses"),
            }
        ));
    }
    let service_failed = matches!(output.outcome, Outcome::Failed(_))
        .then(|| meter.api_failure().map(Stopped::Service))
        .flatten();
    WorkResult {
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
            refusals,
        }),
        snapshot,
        notes,
        // An answer that failed because the agent's service did (its driver said so on the
        // meter) may go to the next agent of the role's list.
        stopped: service_failed,
        candidates: None,
    }
}

/// The reason a task failed on error `e` of agent `agent`: the error naming the agent once,
/// with its hints — the reason is all the user sees of it later.
pub(crate) fn reason(agent: &str, e: &tlv4_core::error::Error) -> String {
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
pub(super) fn before_merge(
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
        "branch": tlv4_core::worktree::task_ref(&input.session.id, &task.id),
    });
    if let Some(run) = hooks.run("before-merge", &payload, workdir)
        && !run.ok
    {
        let reason = tlv4_core::hooks::veto(&run);
        output.summary = format!("failed: {}", reason.lines().next().unwrap_or_default());
        output.outcome = Outcome::Failed(reason);
    }
}

/// The root of the user's working tree, where hooks run.
pub(super) fn repo_root(qctx: &QualityContext) -> std::path::PathBuf {
    qctx.repo
        .work_dir()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_else(std::env::temp_dir)
}

/// The line saying which generated directories a snapshot left out.
fn left_out_line(left_out: &[worktree::LeftOut]) -> String {
    let dirs: Vec<String> = left_out.iter().map(ToString::to_string).collect();
    format!(
        "left out of the snapshot as generated: {} (the list is [snapshot] leave_out in .tlv4.toml)",
        dirs.join(", ")
    )
}

/// Why a snapshot was refused, and where what passed the checks is kept.
fn refusal(task: &tlv4_core::model::TaskId, snap: &worktree::Snapshot) -> String {
    let list: Vec<String> = snap.refused.iter().map(|r| format!("  {r}")).collect();
    let kept = match &snap.kept {
        Some(k) => format!(
            "the changes that pass the checks are kept, not merged, at {0}: look at them with `git show --stat {0}`, take them with `git cherry-pick {0}` or `git checkout {0} -- PATH`",
            k.name
        ),
        None => "no other change was made".to_owned(),
    };
    format!(
        "the snapshot of {task} was refused:\n{}\n{kept}",
        list.join("\n")
    )
}

/// The output of a run whose changes were refused.
fn rejected(agent: &str, why: &str, mut output: TaskOutput) -> TaskOutput {
    // A run that had failed already keeps its own reason first.
    let before = match &output.outcome {
        Outcome::Failed(r) => format!("{r}; "),
        Outcome::Completed => String::new(),
    };
    output.outcome = Outcome::Failed(format!(
        "{before}agent `{agent}`: its changes were not taken: {why}"
    ));
    output.summary = format!(
        "failed: changes refused: {}",
        why.lines().next().unwrap_or_default()
    );
    output.files.clear();
    output
}
