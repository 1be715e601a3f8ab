//! What a task's completion implies, applied inside the same event: signals collected,
//! specialists injected, IMPL tasks created from the plan, gates paused.

use super::pipeline::PipelineSpec;
use crate::agents::TaskOutput;
use tlv4_core::error::{Error, Result};
use tlv4_core::model::{
    ImplDispatch, Pause, PauseKind, Priority, Role, SessionStatus, State, Task, TaskId, TaskStatus,
};

/// Roles whose tech-profile signals count (the reference's emitters).
const EMITTERS: [Role; 3] = [Role::Analyst, Role::Planner, Role::Executor];
/// Paths whose change counts as a CI configuration change.
const CI_PATHS: [&str; 5] = [
    ".github/workflows/",
    ".gitlab-ci.yml",
    ".circleci/",
    "Jenkinsfile",
    ".ci/",
];

/// Merges the task's reported signals (and their evidence) into the session's.
pub fn collect_signals(state: &mut State, task: &Task, output: &TaskOutput) {
    if !EMITTERS.contains(&task.role) {
        return;
    }
    let c = &mut state.control;
    let mut add = |signal: &str, paths: &[String]| {
        if !c.signals.iter().any(|s| s == signal) {
            c.signals.push(signal.to_owned());
            c.signals.sort();
        }
        let ev = c.evidence.entry(signal.to_owned()).or_default();
        for p in paths {
            if ev.len() < 5 && !ev.contains(p) {
                ev.push(p.clone());
            }
        }
    };
    if let Some(profile) = &output.state_update.tech_profile {
        for s in &profile.signals {
            add(
                s,
                profile
                    .evidence
                    .get(s)
                    .map(Vec::as_slice)
                    .unwrap_or_default(),
            );
        }
    }
    if task.role == Role::Executor {
        let ci: Vec<String> = output
            .state_update
            .files_modified
            .iter()
            .filter(|f| CI_PATHS.iter().any(|p| f.starts_with(p)))
            .cloned()
            .collect();
        if !ci.is_empty() {
            add("ci_config_changed", &ci);
        }
    }
}

/// Creates the specialist tasks whose signals are all present and that did not run yet.
/// P0 specialists also block the pending tasks that waited for `task`.
pub fn inject_specialists(
    spec: &PipelineSpec,
    state: &mut State,
    task: &Task,
) -> Result<Vec<TaskId>> {
    if !EMITTERS.contains(&task.role) {
        return Ok(Vec::new());
    }
    let mut made = Vec::new();
    for (name, s) in spec.specialists() {
        let c = &state.control;
        if c.specialists.contains(name) || !s.signals.iter().all(|sig| c.signals.contains(sig)) {
            continue;
        }
        let id: TaskId = format!("{}-001", s.prefix)
            .parse()
            .map_err(|e: tlv4_core::model::IdError| Error::Invalid(e.to_string()))?;
        if state.tasks.contains_key(&id) {
            continue;
        }
        let evidence: Vec<String> = s
            .signals
            .iter()
            .flat_map(|sig| c.evidence.get(sig).cloned().unwrap_or_default())
            .collect();
        if s.priority == Priority::P0 {
            // Downstream work waits; specialists injected beside this one do not.
            for t in state.tasks.values_mut() {
                if t.status == TaskStatus::Pending
                    && t.phase != "specialist"
                    && t.blocked_by.contains(&task.id)
                {
                    t.blocked_by.push(id.clone());
                }
            }
        }
        let description = spec.specialist_description(name, &state.session.id, &evidence);
        state.tasks.insert(
            id.clone(),
            Task {
                id: id.clone(),
                role: Role::from(name.as_str()),
                status: TaskStatus::Pending,
                blocked_by: vec![task.id.clone()],
                phase: "specialist".into(),
                priority: s.priority,
                discuss: None,
                inner_loop: false,
                attempts: 0,
                description,
                owner: None,
                result: None,
            },
        );
        state.control.specialists.push(name.clone());
        made.push(id);
    }
    Ok(made)
}

#[derive(serde::Deserialize)]
struct Plan {
    complexity: String,
    tasks: Vec<PlanTask>,
}

#[derive(serde::Deserialize)]
struct PlanTask {
    id: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    files: Vec<serde_json::Value>,
    #[serde(default)]
    depends_on: Vec<String>,
}

/// Checks that `plan_json` is a plan IMPL tasks can be made from, without changing anything.
pub fn check_plan(plan_json: &[u8]) -> Result<()> {
    let plan: Plan = serde_json::from_slice(plan_json)
        .map_err(|e| Error::Invalid(format!("plan/plan.json: {e}")))?;
    if plan.tasks.is_empty() {
        return Err(Error::Invalid("plan/plan.json has no tasks".into()));
    }
    if !["Low", "Medium", "High"].contains(&plan.complexity.as_str()) {
        return Err(Error::Invalid(format!(
            "plan/plan.json: unknown complexity `{}`",
            plan.complexity
        )));
    }
    let mut seen: Vec<&str> = Vec::new();
    for t in &plan.tasks {
        if let Some(d) = t.depends_on.iter().find(|d| !seen.contains(&d.as_str())) {
            return Err(Error::Invalid(format!(
                "plan/plan.json: {} depends on {d}, which comes later or does not exist",
                t.id
            )));
        }
        seen.push(&t.id);
    }
    Ok(())
}

/// Replaces the pipeline's pending IMPL tasks with tasks made from `plan/plan.json`:
/// Low → one IMPL task for the whole plan; Medium → one per plan task, in parallel;
/// High → one per plan task, in the plan's dependency order.
pub fn dispatch_impl(state: &mut State, plan_task: &Task, plan_json: &[u8]) -> Result<Vec<TaskId>> {
    let plan: Plan = serde_json::from_slice(plan_json)
        .map_err(|e| Error::Invalid(format!("plan/plan.json of {}: {e}", plan_task.id)))?;
    if plan.tasks.is_empty() {
        return Err(Error::Invalid(format!(
            "plan/plan.json of {} has no tasks",
            plan_task.id
        )));
    }
    let (old, base) = take_pending_impl(state, &plan_task.id);
    let next_free = next_free_impl;
    let mut n = 0;
    let level = plan.complexity.as_str();
    let sid = state.session.id.clone();
    let describe = |items: &[&PlanTask]| impl_description(&plan_task.id, &sid, items);
    let mut made: Vec<TaskId> = Vec::new();
    let mut planned: Vec<(TaskId, Vec<String>)> = Vec::new();
    let mut serialized: Vec<String> = Vec::new();
    let mut by_plan: std::collections::BTreeMap<&str, TaskId> = Default::default();
    let topology = match level {
        "Low" => {
            let id = next_free(state, &mut n);
            let items: Vec<&PlanTask> = plan.tasks.iter().collect();
            let d = describe(&items);
            state
                .tasks
                .insert(id.clone(), impl_task(&id, base.clone(), true, d));
            made.push(id);
            "single"
        }
        "Medium" | "High" => {
            for t in &plan.tasks {
                let id = next_free(state, &mut n);
                // Medium plans run in parallel except where the planner ordered tasks that
                // share files; High plans follow every dependency.
                let mut deps = base.clone();
                {
                    for d in &t.depends_on {
                        let Some(dep) = by_plan.get(d.as_str()) else {
                            return Err(Error::Invalid(format!(
                                "plan task {} depends on {d}, which comes later or does not exist",
                                t.id
                            )));
                        };
                        deps.push(dep.clone());
                    }
                }
                let d = describe(&[t]);
                state
                    .tasks
                    .insert(id.clone(), impl_task(&id, deps, false, d));
                by_plan.insert(&t.id, id.clone());
                planned.push((id.clone(), files_of(t)));
                made.push(id);
            }
            // Tasks whose planned files overlap would conflict when merged: the later one
            // waits for the earlier one instead of running beside it.
            for (earlier, later) in tlv4_store::worktree::overlapping(&planned) {
                let t = state.tasks.get_mut(&later).expect("just made");
                if !t.blocked_by.contains(&earlier) {
                    t.blocked_by.push(earlier.clone());
                    serialized.push(format!("{later} after {earlier}"));
                }
            }
            if level == "High" { "dag" } else { "parallel" }
        }
        other => {
            return Err(Error::Invalid(format!(
                "plan/plan.json of {}: unknown complexity `{other}`",
                plan_task.id
            )));
        }
    };
    wait_for_new(state, &old, &made);
    state.control.implementation = Some(ImplDispatch {
        plan_task: plan_task.id.clone(),
        complexity: plan.complexity.clone(),
        topology: topology.into(),
        tasks: made.clone(),
        serialized,
    });
    Ok(made)
}

/// Removes the IMPL tasks a plan replaces (those of the pipeline, or of an earlier plan, not
/// started); returns them and what they waited for (`plan_task` when nothing).
fn take_pending_impl(state: &mut State, plan_task: &TaskId) -> (Vec<TaskId>, Vec<TaskId>) {
    let old: Vec<TaskId> = state
        .tasks
        .values()
        .filter(|t| t.id.prefix() == "IMPL" && t.status == TaskStatus::Pending && t.attempts == 0)
        .map(|t| t.id.clone())
        .collect();
    let mut base: Vec<TaskId> = Vec::new();
    for id in &old {
        for d in &state.tasks[id].blocked_by {
            if !old.contains(d) && !base.contains(d) {
                base.push(d.clone());
            }
        }
    }
    if base.is_empty() {
        base.push(plan_task.clone());
    }
    for id in &old {
        state.tasks.remove(id);
    }
    (old, base)
}

/// The next `IMPL-<n>` not taken in `state`, counting on from `n`.
fn next_free_impl(state: &State, n: &mut u32) -> TaskId {
    loop {
        *n += 1;
        let id: TaskId = format!("IMPL-{n:03}").parse().expect("a valid id");
        if !state.tasks.contains_key(&id) {
            return id;
        }
    }
}

/// The files a plan task names (`{ "path": … }` or a bare path).
fn files_of(t: &PlanTask) -> Vec<String> {
    t.files
        .iter()
        .filter_map(|f| {
            f.get("path")
                .and_then(|p| p.as_str())
                .or(f.as_str())
                .map(str::to_owned)
        })
        .collect()
}

/// The description of an IMPL task doing `items` of the plan of `plan_task` in session `sid`.
fn impl_description(
    plan_task: &TaskId,
    sid: &tlv4_core::model::SessionId,
    items: &[&PlanTask],
) -> String {
    let mut d = format!(
        "PURPOSE: Implement {} of plan {} | Success: the plan's convergence criteria hold\nTASK:\n",
        if items.len() == 1 {
            "one task"
        } else {
            "the tasks"
        },
        plan_task
    );
    for t in items {
        let files = files_of(t);
        d.push_str(&format!(
            "  - {}: {} (files: {})\n",
            t.id,
            t.title,
            files.join(", ")
        ));
    }
    d.push_str(&format!("CONTEXT:\n  - Session: {sid}\n  - Plan: plan/plan.json, plan/.task/<TASK>.json\nEXPECTED: a commit on the task branch\nCONSTRAINTS: Work only in the task worktree\n"));
    d
}

/// What waited for the `old` IMPL tasks now waits for all the `made` ones (which may reuse
/// their ids, and keep the edges just made).
fn wait_for_new(state: &mut State, old: &[TaskId], made: &[TaskId]) {
    for t in state.tasks.values_mut() {
        if !made.contains(&t.id) && t.blocked_by.iter().any(|d| old.contains(d)) {
            t.blocked_by.retain(|d| !old.contains(d));
            for m in made {
                if !t.blocked_by.contains(m) && t.id != *m {
                    t.blocked_by.push(m.clone());
                }
            }
        }
    }
}

fn impl_task(id: &TaskId, blocked_by: Vec<TaskId>, inner_loop: bool, description: String) -> Task {
    Task {
        id: id.clone(),
        role: Role::Executor,
        status: TaskStatus::Pending,
        blocked_by,
        phase: "implementation".into(),
        priority: Priority::P0,
        discuss: None,
        inner_loop,
        attempts: 0,
        description: format!(
            "{description}---\nInnerLoop: {inner_loop}\nRoleSpec: specs/roles/executor.md\n"
        ),
        owner: None,
        result: None,
    }
}

/// After a test run below the pass target: an executor fix task with the failures, and the
/// next test iteration after it (`TEST-001-I2`, …). What waited for the test waits for the
/// new iteration.
pub fn fix_iteration(
    state: &mut State,
    test: &Task,
    fix: &crate::quality::FixRequest,
) -> Vec<TaskId> {
    let mut n = 0;
    let fix_id = loop {
        n += 1;
        let id: TaskId = format!("FIX-{n:03}").parse().expect("a valid id");
        if !state.tasks.contains_key(&id) {
            break id;
        }
    };
    let base = test
        .id
        .as_str()
        .rsplit_once("-I")
        .filter(|(_, n)| n.chars().all(|c| c.is_ascii_digit()))
        .map_or(test.id.as_str(), |(b, _)| b);
    let next: TaskId = format!("{base}-I{}", fix.iteration + 1)
        .parse()
        .expect("a valid id");
    let failures: String = fix.failures.chars().take(4000).collect();
    state.tasks.insert(
        fix_id.clone(),
        Task {
            id: fix_id.clone(),
            role: Role::Executor,
            status: TaskStatus::Pending,
            blocked_by: vec![test.id.clone()],
            phase: "fix".into(),
            priority: Priority::P0,
            discuss: None,
            inner_loop: false,
            attempts: 0,
            description: format!(
                "PURPOSE: Make the failing tests pass (iteration {}, {}) | Success: the next test run passes at 95% or more\nTASK:\n  - Strategy: {}\n  - Fix the failures below; change behaviour only where the tests are right\nCONTEXT:\n  - Session: {}\n  - Test task: {}\nFAILURES:\n{failures}\nEXPECTED: a commit on the task branch\nCONSTRAINTS: Work only in the task worktree\n---\nInnerLoop: false\nRoleSpec: specs/roles/executor.md\n",
                fix.iteration,
                fix.pass_rate.map_or(
                    "test counts unknown: the tests failed before any was counted".to_owned(),
                    |r| format!("pass rate {r:.1}%")
                ),
                fix.strategy,
                state.session.id,
                test.id
            ),
            owner: None,
            result: None,
        },
    );
    let mut retest = test.clone();
    retest.id = next.clone();
    retest.status = TaskStatus::Pending;
    retest.blocked_by = vec![fix_id.clone()];
    retest.attempts = 0;
    retest.owner = None;
    retest.result = None;
    for t in state.tasks.values_mut() {
        if t.status == TaskStatus::Pending && t.id != fix_id {
            for d in &mut t.blocked_by {
                if *d == test.id {
                    *d = next.clone();
                }
            }
        }
    }
    state.tasks.insert(next.clone(), retest);
    vec![fix_id, next]
}

/// Whether `id` has been revised: a later task of its revision chain exists (`<id>-R1` for
/// `<id>`, `<base>-R2` for `<base>-R1`).
pub fn is_revised(state: &State, id: &TaskId) -> bool {
    let base = super::revise::base_id(id);
    let number = |t: &TaskId| -> Option<u32> {
        if *t == base {
            return Some(0);
        }
        t.as_str()
            .strip_prefix(&format!("{base}-R"))
            .filter(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
            .and_then(|n| n.parse().ok())
    };
    let Some(mine) = number(id) else {
        return false;
    };
    state
        .tasks
        .keys()
        .any(|k| number(k).is_some_and(|n| n > mine))
}

/// Pauses the session after a quality gate (unless auto-approved on a pass) and after a
/// checkpoint that blocks.
pub fn pause_if_needed(state: &mut State, task: &Task) {
    if state.session.status == SessionStatus::Paused {
        // An earlier pause of the same event (a discuss round) says more.
        return;
    }
    let verdict = state.control.verdicts.get(task.id.as_str()).cloned();
    let (kind, reason, next) = match task.id.prefix() {
        "QUALITY" => {
            let v = verdict.as_ref().map_or("no verdict".to_owned(), |v| {
                format!("{} ({})", v.verdict, v.summary)
            });
            if state.control.settings.auto_approve
                && verdict.as_ref().is_some_and(|v| v.verdict == "PASS")
            {
                state.control.approved.push(task.id.clone());
                return;
            }
            (
                PauseKind::Gate,
                format!(
                    "spec readiness gate after {}: {v}; approve before planning starts",
                    task.id
                ),
                vec![
                    "git tlv4 approve".to_owned(),
                    "git tlv4 revise TASK --feedback TEXT".to_owned(),
                    "git tlv4 feedback TEXT".to_owned(),
                    "git tlv4 recheck".to_owned(),
                    "git tlv4 improve [DIMENSION]".to_owned(),
                    "git tlv4 abort".to_owned(),
                ],
            )
        }
        "REVIEW" if verdict.as_ref().is_some_and(|v| v.verdict == "BLOCK") => {
            let v = verdict.expect("checked above");
            (
                PauseKind::Review,
                format!("{} blocks the change: {}", task.id, v.summary),
                vec![
                    "git tlv4 approve   (accept the change anyway)".to_owned(),
                    "git tlv4 revise IMPL-001 --feedback TEXT".to_owned(),
                    "git tlv4 abort".to_owned(),
                ],
            )
        }
        "TEST"
            if verdict
                .as_ref()
                .is_some_and(|v| v.verdict == "fix_required")
                && !state
                    .tasks
                    .values()
                    .any(|t| t.phase == "fix" && t.blocked_by.contains(&task.id)) =>
        {
            let v = verdict.expect("checked above");
            (
                PauseKind::Tests,
                format!(
                    "{}: the fix cycle ended below the pass target: {}",
                    task.id, v.summary
                ),
                vec![
                    "git tlv4 approve   (accept the failing tests)".to_owned(),
                    "git tlv4 revise IMPL-001 --feedback TEXT".to_owned(),
                    "git tlv4 abort".to_owned(),
                ],
            )
        }
        "CHECKPOINT" if verdict.as_ref().is_some_and(|v| v.verdict == "block") => {
            let v = verdict.expect("checked above");
            let upstream = task
                .blocked_by
                .first()
                .map_or("TASK".to_owned(), ToString::to_string);
            (
                PauseKind::Checkpoint,
                format!("{} blocks: {}", task.id, v.summary),
                vec![
                    "git tlv4 approve   (override the block)".to_owned(),
                    format!("git tlv4 revise {upstream} --feedback TEXT"),
                    "git tlv4 abort".to_owned(),
                ],
            )
        }
        _ => return,
    };
    state.session.status = SessionStatus::Paused;
    state.control.pause = Some(Pause {
        until: None,
        kind,
        task: Some(task.id.clone()),
        reason,
        next,
    });
}
