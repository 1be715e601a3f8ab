//! Recording one finished task: the named steps of the event the scheduling loop writes when
//! a worker hands back its result, and of what the loop does once that event is written.
//!
//! The event's closure may run more than once (once per lost compare-and-swap), so every step
//! inside it is a function of the transaction's state and of a [`Recording`] built afresh on
//! each try: the steps read them and add to them, and nothing outside the transaction is
//! touched there. What reaches outside — keeping an unmerged snapshot under a ref, the
//! progress lines, the user's hooks, the bus message — happens after the event is written,
//! in the steps at the end of this file.

use super::lease::Mode;
use super::pipeline::PipelineSpec;
use super::worker::WorkResult;
use super::{followup, revise};
use crate::agents::{Outcome, TaskOutput};
use tlv4_core::error::Result;
use tlv4_core::model::{
    Event, EventKind, Message, Role, SessionId, SessionStatus, State, Task, TaskId, TaskResult,
    TaskStatus,
};
use tlv4_core::store::{Txn, Written};
use tlv4_core::worktree::{self, MergeOutcome};

/// The output of `result` as it may be recorded: anything the agent wrote outside the
/// pipeline folder fails the task (and nothing of it is kept), a plan IMPL tasks cannot be
/// made from fails the planner, and so does an invalid `state_update`.
pub(super) fn vet(result: &WorkResult) -> TaskOutput {
    let mut output = result.output.clone();
    if let Some(bad) = output
        .files
        .iter()
        .find_map(|(p, _)| tlv4_core::store::validate_pipeline_path(p).err())
    {
        output.outcome = Outcome::Failed(format!("rejected output: {bad}"));
        output.files.clear();
    }
    if let (Outcome::Completed, Some(Err(e))) =
        (&output.outcome, plan_of(&output).map(followup::check_plan))
    {
        output.outcome = Outcome::Failed(e.to_string());
    }
    if let (Outcome::Completed, Err(e)) = (&output.outcome, output.state_update.validate()) {
        output.outcome = Outcome::Failed(format!("invalid state_update: {e}"));
    }
    output
}

/// The `plan/plan.json` a task wrote, if it wrote one.
fn plan_of(output: &TaskOutput) -> Option<&[u8]> {
    output
        .files
        .iter()
        .find(|(p, _)| p == "plan/plan.json")
        .map(|(_, b)| b.as_slice())
}

/// The change recording one result makes, described as it is built: the task as it was
/// claimed, the output as it will be recorded, and what the event says besides the state.
#[derive(Debug, Clone)]
pub(super) struct Recording {
    /// The task as the tip has it, before this event.
    pub task: Task,
    /// The vetted output; a conflicting merge fails it.
    pub output: TaskOutput,
    /// Git's account of the conflict, when the task's change conflicts with the session.
    pub conflict: Option<String>,
    /// The event's trailers beyond the task's own (`Merged`, `Injected`, `Paused`…).
    pub extra: Vec<(String, String)>,
    /// Lines for the progress display.
    pub notes: Vec<String>,
    /// Lines for `wisdom/issues.md`.
    pub warnings: Vec<String>,
}

impl Recording {
    /// The start of a recording of `output` for `task`, with the worker's `warnings`.
    pub(super) fn new(task: Task, output: TaskOutput, warnings: Vec<String>) -> Recording {
        Recording {
            task,
            output,
            conflict: None,
            extra: Vec::new(),
            notes: Vec::new(),
            warnings,
        }
    }

    /// Whether the task completed (so far as the steps run have judged).
    pub(super) fn completed(&self) -> bool {
        self.output.outcome == Outcome::Completed
    }

    fn trailer(&mut self, key: &str, value: String) {
        self.extra.push((key.to_owned(), value));
    }
}

/// Whose result it is to record, as the tip (and a worker's remote) says.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Holder {
    /// The task is gone, or — a local run — no longer in progress: nothing to record.
    Nobody,
    /// A worker lost the task's lease: the result is kept aside, not recorded.
    Lost,
    /// This loop's: the task as claimed, and — a worker — the lease commit it holds.
    Us(Box<Task>, Option<gix::ObjectId>),
}

/// Step 1: whether the result of `id` is this loop's to record. A worker holds it while the
/// remote still has the lease it pushed for this attempt and owner (read afresh on each try:
/// a renewal between two tries moves it).
pub(super) fn holder(txn: &Txn<'_>, mode: &Mode, sid: &SessionId, id: &TaskId) -> Result<Holder> {
    let remote = mode.worker();
    let Ok(task) = txn.state.task(id) else {
        return Ok(Holder::Nobody);
    };
    if task.status != TaskStatus::InProgress {
        return Ok(match remote {
            Some(_) => Holder::Lost,
            None => Holder::Nobody,
        });
    }
    let task = task.clone();
    let Some(r) = remote else {
        return Ok(Holder::Us(Box::new(task), None));
    };
    let ours = r.still_held(txn.store(), sid, id)?.filter(|h| {
        h.lease.attempt == task.attempts
            && task
                .owner
                .as_ref()
                .is_some_and(|o| format!("{}:{}", o.host, o.pid) == h.lease.holder)
    });
    Ok(match ours {
        Some(h) => Holder::Us(Box::new(task), Some(h.commit)),
        None => Holder::Lost,
    })
}

/// Step 2 (a worker, which holds `lease`): the lease goes with the result, and the task
/// branch travels with it.
pub(super) fn push_with_result(
    txn: &mut Txn<'_>,
    mode: &Mode,
    sid: &SessionId,
    id: &TaskId,
    lease: Option<gix::ObjectId>,
    result: &WorkResult,
) -> Result<()> {
    let (Some(r), Some(lease)) = (mode.worker(), lease) else {
        return Ok(());
    };
    super::run::release(txn, sid, id, lease);
    // A best-of task's candidates travel with it (created only: one the remote has already
    // stays as it is).
    for c in result.candidates.iter().flat_map(|c| &c.record.candidates) {
        let (Some(name), Some(commit)) = (&c.reference, c.commit.as_deref()) else {
            continue;
        };
        let Ok(commit) = commit.parse() else {
            continue;
        };
        if txn.store().remote_value(&r.opts.remote, name)?.is_none() {
            txn.also_push(tlv4_core::store::RemoteEdit {
                name: name.clone(),
                expected: None,
                new: Some(commit),
            });
        }
    }
    if result.snapshot.is_none() {
        return Ok(());
    }
    let branch = worktree::task_ref(sid, id);
    if let Some(local) = txn.store().try_ref(&branch)? {
        let expected = txn.store().remote_value(&r.opts.remote, &branch)?;
        if expected != Some(local) {
            txn.also_push(tlv4_core::store::RemoteEdit {
                name: branch,
                expected,
                new: Some(local),
            });
        }
    }
    Ok(())
}

/// Step 3: a code task's change joins the session as a merge; one that conflicts fails the
/// task (and a revision carrying the conflict redoes it on the current code, step 8).
pub(super) fn merge(txn: &mut Txn<'_>, rec: &mut Recording, result: &WorkResult) -> Result<()> {
    // A best-of task says how many candidates ran and which one its change is.
    if let Some(chosen) = &result.candidates {
        rec.trailer("Best-Of", chosen.record.candidates.len().to_string());
        if let Some(k) = chosen.record.picked {
            rec.trailer("Picked", k.to_string());
        }
    }
    let Some(snap) = result.snapshot.as_ref().filter(|_| rec.completed()) else {
        return Ok(());
    };
    match worktree::merge_task(txn.store(), txn.tip, snap.commit)? {
        MergeOutcome::Clean { tree } => {
            txn.merge(snap.commit, tree);
            rec.trailer("Merged", snap.commit.to_string());
        }
        MergeOutcome::Conflict { paths, detail } => {
            rec.output.outcome = Outcome::Failed(format!(
                "its change conflicts with the session in {}",
                paths.join(", ")
            ));
            rec.trailer("Conflict", paths.join(","));
            rec.conflict = Some(detail);
        }
    }
    Ok(())
}

/// Step 4: the run record, `runs/<TASK>/<attempt>/`: `result.json` (outcome, state update,
/// the files with their blob ids, the snapshot, what the sandbox refused the agent),
/// `usage.json` (what `git tlv4 cost` sums), and what the agent was told and said:
/// `prompt.md`, `answer.txt`, `transcript.txt`.
pub(super) fn write_run_record(
    txn: &mut Txn<'_>,
    id: &TaskId,
    rec: &Recording,
    result: &WorkResult,
    seconds: f64,
) -> Result<()> {
    let (task, output) = (&rec.task, &rec.output);
    let dir = format!("runs/{id}/{}", task.attempts);
    let hash = txn.store().repo().object_hash();
    let blob = |bytes: &[u8]| tlv4_core::git::blob_hex(hash, bytes);
    let files: serde_json::Map<String, serde_json::Value> = output
        .files
        .iter()
        .map(|(p, b)| (p.clone(), serde_json::Value::String(blob(b))))
        .collect();
    let usage = result
        .run
        .as_ref()
        .map(|r| r.usage.clone())
        .unwrap_or_default();
    let model = usage.model.clone();
    let cached = usage.cached_input_tokens;
    let mut record = serde_json::json!({
        "task": id, "role": task.role, "attempt": task.attempts, "agent": result.agent,
        "model": model, "seconds": seconds,
        "outcome": match &output.outcome { Outcome::Completed => "completed".to_owned(), Outcome::Failed(r) => format!("failed: {r}") },
        "summary": output.summary, "state_update": output.state_update, "files": files,
        "snapshot": result.snapshot.as_ref().map(|s| serde_json::json!({
            "commit": s.commit.to_string(), "parent": s.parent.to_string(), "changed": s.changed,
            "refused": s.refused, "left_out": s.left_out, "kept": s.kept,
        })),
    });
    // What the kernel's sandbox refused, as the agent's output reported it: only when there
    // was something.
    if let Some(run) = result.run.as_ref().filter(|r| !r.refusals.is_empty()) {
        record["sandbox_refusals"] = serde_json::json!(run.refusals);
    }
    if let Some(chosen) = &result.candidates {
        record["best_of"] = serde_json::json!({
            "candidates": chosen.record.candidates.len(),
            "picked": chosen.record.picked,
        });
    }
    txn.write_record(&format!("{dir}/result.json"), pretty(&record))?;
    // A best-of task's spend is its candidates', one record each.
    if let Some(chosen) = &result.candidates {
        return write_candidates(txn, &dir, rec, chosen);
    }
    let mut usage = serde_json::json!({
        "task": id, "role": task.role, "attempt": task.attempts, "agent": result.agent,
        "model": model, "input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
        "cost_usd": usage.cost_usd, "seconds": seconds,
    });
    // Only where the service said how much of the input came from its cache (priced apart).
    if cached > 0 {
        usage["cached_input_tokens"] = serde_json::json!(cached);
    }
    txn.write_record(&format!("{dir}/usage.json"), pretty(&usage))?;
    // Agent critics of the task's discuss round: one usage record each.
    for (perspective, agent, u) in result.discuss.iter().flat_map(|(_, d)| &d.usage) {
        let usage = serde_json::json!({
            "task": id, "role": Role::Critic, "perspective": perspective, "attempt": task.attempts,
            "agent": agent, "model": u.model, "input_tokens": u.input_tokens,
            "output_tokens": u.output_tokens, "cost_usd": u.cost_usd, "seconds": u.seconds,
        });
        txn.write_record(
            &format!("{dir}/critic-{perspective}/usage.json"),
            pretty(&usage),
        )?;
    }
    if let Some(run) = &result.run {
        for (name, text) in [("prompt.md", &run.prompt), ("answer.txt", &run.raw)] {
            if !text.is_empty() {
                txn.write_record(&format!("{dir}/{name}"), bounded(text))?;
            }
        }
        if let Some(t) = run.transcript.as_ref().filter(|t| !t.is_empty()) {
            txn.write_record(&format!("{dir}/transcript.txt"), bounded(t))?;
        }
    }
    Ok(())
}

/// A best-of task's `candidates.json`, and under `candidate-<k>/` each candidate's
/// `usage.json` (with `candidate`) and what its agent was told and said.
fn write_candidates(
    txn: &mut Txn<'_>,
    dir: &str,
    rec: &Recording,
    chosen: &super::bestof::Chosen,
) -> Result<()> {
    let task = &rec.task;
    let json = serde_json::to_value(&chosen.record).map_err(|e| {
        tlv4_core::Error::Invalid(format!("cannot write the candidates of {}: {e}", task.id))
    })?;
    txn.write_record(
        &format!("{dir}/{}", super::bestof::record::FILE),
        pretty(&json),
    )?;
    for c in &chosen.record.candidates {
        let Some(run) = chosen.runs.get(&c.number) else {
            continue;
        };
        let cdir = format!("{dir}/candidate-{}", c.number);
        let u = &run.usage;
        let mut usage = serde_json::json!({
            "task": task.id, "role": task.role, "attempt": task.attempts, "agent": c.agent,
            "candidate": c.number, "model": u.model, "input_tokens": u.input_tokens,
            "output_tokens": u.output_tokens, "cost_usd": u.cost_usd, "seconds": c.seconds,
        });
        if u.cached_input_tokens > 0 {
            usage["cached_input_tokens"] = serde_json::json!(u.cached_input_tokens);
        }
        txn.write_record(&format!("{cdir}/usage.json"), pretty(&usage))?;
        for (name, text) in [("prompt.md", &run.prompt), ("answer.txt", &run.raw)] {
            if !text.is_empty() {
                txn.write_record(&format!("{cdir}/{name}"), bounded(text))?;
            }
        }
        if let Some(t) = run.transcript.as_ref().filter(|t| !t.is_empty()) {
            txn.write_record(&format!("{cdir}/transcript.txt"), bounded(t))?;
        }
    }
    Ok(())
}

/// Step 5: a session's first prompt pins the role instructions it was built from.
pub(super) fn pin_roles_lock(
    txn: &mut Txn<'_>,
    sid: &SessionId,
    result: &WorkResult,
    roles_lock: &str,
) -> Result<()> {
    if result.run.as_ref().is_some_and(|r| !r.prompt.is_empty())
        && txn.read_file(sid, "roles.lock")?.is_none()
    {
        txn.write_roles_lock(roles_lock.to_owned());
    }
    Ok(())
}

/// Step 6: a completed task's files go into the pipeline folder.
pub(super) fn write_outputs(txn: &mut Txn<'_>, rec: &Recording) -> Result<()> {
    if rec.completed() {
        for (path, bytes) in &rec.output.files {
            txn.write_file(path, bytes.clone())?;
        }
    }
    Ok(())
}

/// Step 7: the task is completed or failed, with its result and no owner.
pub(super) fn settle(state: &mut State, id: &TaskId, rec: &Recording) -> Result<()> {
    let completed = rec.completed();
    let t = state.task_mut(id)?;
    t.owner = None;
    t.status = if completed {
        TaskStatus::Completed
    } else {
        TaskStatus::Failed
    };
    t.result = Some(TaskResult {
        summary: rec.output.summary.clone(),
        reason: match &rec.output.outcome {
            Outcome::Failed(r) => Some(r.clone()),
            Outcome::Completed => None,
        },
        artifacts: if completed {
            rec.output.files.iter().map(|(p, _)| p.clone()).collect()
        } else {
            Vec::new()
        },
        finished_at: tlv4_core::clock::now_rfc3339(),
    });
    Ok(())
}

/// Step 8: a conflicting change gets a revision that carries the conflict, while revisions
/// are left.
pub(super) fn revise_conflict(state: &mut State, id: &TaskId, rec: &mut Recording) -> Result<()> {
    let Some(detail) = rec.conflict.clone() else {
        return Ok(());
    };
    match revise::conflict_revision(state, id, &detail)? {
        Some(r) => {
            rec.notes.push(format!(
                "{id} conflicts with the session: revision {r} created"
            ));
            rec.trailer("Revision", r.to_string());
        }
        None => rec.notes.push(format!(
            "{id} conflicts with the session again; no more revisions"
        )),
    }
    Ok(())
}

/// Step 9a: the verdict a quality task reached is kept under the task's id.
pub(super) fn keep_verdict(
    state: &mut State,
    id: &TaskId,
    result: &WorkResult,
    rec: &mut Recording,
) {
    if let Some(v) = &result.verdict {
        state.control.verdicts.insert(id.to_string(), v.clone());
        rec.trailer("Verdict", v.verdict.clone());
    }
}

/// Step 9b: the signals the output carries are collected, and the specialists they call for
/// injected.
pub(super) fn collect_and_inject(
    spec: &PipelineSpec,
    state: &mut State,
    rec: &mut Recording,
) -> Result<()> {
    followup::collect_signals(state, &rec.task, &rec.output);
    for injected in followup::inject_specialists(spec, state, &rec.task)? {
        rec.trailer("Injected", injected.to_string());
        rec.notes.push(format!("specialist {injected} injected"));
    }
    Ok(())
}

/// `ids` joined with `sep`.
fn joined(ids: &[TaskId], sep: &str) -> String {
    ids.iter().map(TaskId::as_str).collect::<Vec<_>>().join(sep)
}

/// Step 9c: tests below the pass rate make a fix iteration.
pub(super) fn fix_iteration(state: &mut State, result: &WorkResult, rec: &mut Recording) {
    let Some(fix) = &result.fix else {
        return;
    };
    let ids = followup::fix_iteration(state, &rec.task, fix);
    let rate = fix
        .pass_rate
        .map_or("unknown (no test counted)".to_owned(), |r| {
            format!("{r:.0}%")
        });
    rec.notes.push(format!(
        "test pass rate {rate}: fix iteration {}",
        joined(&ids, ", ")
    ));
    rec.trailer("Fix", joined(&ids, ","));
}

/// Step 9d: a planner's `plan.json` dispatches the IMPL tasks.
pub(super) fn dispatch_plan(state: &mut State, rec: &mut Recording) -> Result<()> {
    if rec.task.role != Role::Planner {
        return Ok(());
    }
    let Some(plan) = plan_of(&rec.output).map(<[u8]>::to_vec) else {
        return Ok(());
    };
    let ids = followup::dispatch_impl(state, &rec.task, &plan)?;
    rec.notes
        .push(format!("implementation dispatched: {}", joined(&ids, ", ")));
    rec.trailer("Dispatched", joined(&ids, ","));
    Ok(())
}

/// Step 9e: the task's discuss round is stored, its verdict kept, and the verdict routed (on,
/// with warnings, or to a revision).
pub(super) fn route_discuss(
    txn: &mut Txn<'_>,
    result: &WorkResult,
    rec: &mut Recording,
) -> Result<()> {
    let Some((round, d)) = &result.discuss else {
        return Ok(());
    };
    for (p, b) in &d.files {
        txn.write_file(p, b.clone())?;
    }
    txn.state
        .control
        .verdicts
        .insert(round.clone(), d.verdict.clone());
    rec.trailer("Discuss", format!("{round} {}", d.verdict.verdict));
    match revise::route_discuss(&mut txn.state, &rec.task, round, d)? {
        revise::DiscussRoute::Continue => {}
        revise::DiscussRoute::Warn(lines) => rec.warnings.extend(lines),
        revise::DiscussRoute::Revised(r) => rec
            .notes
            .push(format!("{round} diverged: revision {r} created")),
    }
    Ok(())
}

/// Step 9: what a completed task implies — its verdict, signals and specialists, a fix
/// iteration, the IMPL tasks of a plan, its discuss round, and a gate's pause.
pub(super) fn follow_ups(
    txn: &mut Txn<'_>,
    spec: &PipelineSpec,
    id: &TaskId,
    result: &WorkResult,
    rec: &mut Recording,
) -> Result<()> {
    if !rec.completed() {
        return Ok(());
    }
    keep_verdict(&mut txn.state, id, result, rec);
    collect_and_inject(spec, &mut txn.state, rec)?;
    fix_iteration(&mut txn.state, result, rec);
    dispatch_plan(&mut txn.state, rec)?;
    route_discuss(txn, result, rec)?;
    followup::pause_if_needed(&mut txn.state, &rec.task);
    Ok(())
}

/// Step 10: the warnings are added to `wisdom/issues.md`, each naming the task.
pub(super) fn log_warnings(
    txn: &mut Txn<'_>,
    sid: &SessionId,
    id: &TaskId,
    rec: &Recording,
) -> Result<()> {
    if rec.warnings.is_empty() {
        return Ok(());
    }
    let mut issues = txn
        .read_file(sid, "wisdom/issues.md")?
        .unwrap_or_else(|| b"# Issues\n".to_vec());
    for w in &rec.warnings {
        issues.extend_from_slice(format!("- [{id}] {w}\n").as_bytes());
    }
    txn.write_file("wisdom/issues.md", issues)
}

/// Step 11: the event — task completed or failed, its summary (the reason of a failure), and
/// the trailers the steps added, a pause's kind last.
pub(super) fn event(state: &State, id: &TaskId, mut rec: Recording) -> Result<Event> {
    if let Some(p) = &state.control.pause
        && state.session.status == SessionStatus::Paused
    {
        rec.trailer("Paused", p.kind.to_string());
    }
    let t = state.task(id)?;
    let summary = match &rec.output.outcome {
        Outcome::Completed => rec.output.summary.clone(),
        Outcome::Failed(r) => r.clone(),
    };
    let kind = if rec.completed() {
        EventKind::TaskCompleted
    } else {
        EventKind::TaskFailed
    };
    let mut event = Event::task(kind, t, summary);
    event.extra = rec.extra;
    Ok(event)
}

/// After the event: the hook events a recorded task fires, with their payload (`after-task`,
/// and `checkpoint` for a supervisor's).
pub(super) fn hook_events(
    sid: &SessionId,
    id: &TaskId,
    written: &Written,
) -> Vec<(&'static str, serde_json::Value)> {
    let task = &written.state.tasks[id];
    let mut payload = serde_json::json!({
        "event": "after-task", "session": sid, "task": id, "role": task.role,
        "attempt": task.attempts, "status": task.status.as_str(),
        "summary": written.event.summary, "commit": written.commit.to_string(),
        "verdict": written.state.control.verdicts.get(id.as_str()),
    });
    let mut events = vec!["after-task"];
    if task.role == Role::Supervisor {
        events.push("checkpoint");
    }
    events
        .into_iter()
        .map(|event| {
            payload["event"] = serde_json::json!(event);
            (event, payload.clone())
        })
        .collect()
}

/// After the event: the bus message a recorded task sends (`error` for a failed one), its
/// summary the event's first line.
pub(super) fn message(id: &TaskId, written: &Written, output: &TaskOutput) -> Message {
    let task = &written.state.tasks[id];
    let ok = task.status == TaskStatus::Completed;
    Message {
        id: tlv4_core::clock::unique_id(),
        ts: tlv4_core::clock::now_rfc3339(),
        from: task.role.to_string(),
        to: None,
        kind: if ok {
            message_type(task)
        } else {
            "error".into()
        },
        summary: written
            .event
            .summary
            .lines()
            .next()
            .unwrap_or_default()
            .to_owned(),
        data: Some(serde_json::json!({ "task": id, "state_update": output.state_update })),
    }
}

/// The bus message type a role sends when a task completes.
pub(super) fn message_type(task: &Task) -> String {
    let revision = task.id.as_str().contains("-R");
    match task.role {
        Role::Analyst => "research_ready".into(),
        Role::Writer if revision => "draft_revision".into(),
        Role::Writer => "draft_ready".into(),
        Role::Planner if revision => "plan_revision".into(),
        Role::Planner => "plan_ready".into(),
        Role::Executor => "impl_complete".into(),
        Role::Tester => "test_result".into(),
        Role::Reviewer if task.id.prefix() == "REVIEW" => "review_result".into(),
        Role::Reviewer => "quality_result".into(),
        Role::Supervisor => "supervision_report".into(),
        _ => format!("{}_report", task.id.prefix().to_ascii_lowercase()),
    }
}

/// The most of one text a run record keeps: its first and last quarter megabyte.
const RECORD_TEXT_LIMIT: usize = 512 << 10;

/// `text`, or its head and tail with a line saying how much was left out between them.
fn bounded(text: &str) -> Vec<u8> {
    if text.len() <= RECORD_TEXT_LIMIT {
        return text.as_bytes().to_vec();
    }
    let half = RECORD_TEXT_LIMIT / 2;
    let head = tlv4_core::process::floor_char_boundary(text, half);
    let tail = tlv4_core::process::floor_char_boundary(text, text.len() - half);
    format!(
        "{}\n[… git-tlv4 left out {} bytes of this record …]\n{}",
        &text[..head],
        tail - head,
        &text[tail..]
    )
    .into_bytes()
}

fn pretty(value: &serde_json::Value) -> Vec<u8> {
    let mut out = serde_json::to_vec_pretty(value).expect("a JSON value serialises");
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests;
