//! Revisions and the user's decisions at a pause: approve, revise, feedback, recheck, improve,
//! abort, retry. Each is applied to the state in one event by the caller.

use super::followup::is_revised;
use crate::quality::DiscussOutcome;
use tlv4_core::error::{Error, Result};
use tlv4_core::model::{Pause, PauseKind, Role, SessionStatus, State, Task, TaskId, TaskStatus};

/// Where a discuss round's divergence leads.
pub enum DiscussRoute {
    /// Low divergence: go on.
    Continue,
    /// Medium: go on, and log these lines to `wisdom/issues.md`.
    Warn(Vec<String>),
    /// High: this revision task was created.
    Revised(TaskId),
}

/// Routes a discuss verdict: HIGH makes one revision (or pauses at the final round or when the
/// task was revised already), MEDIUM is logged, LOW passes.
pub fn route_discuss(
    state: &mut State,
    task: &Task,
    round: &str,
    d: &DiscussOutcome,
) -> Result<DiscussRoute> {
    // A surface consensus asks the user, as a standalone discussion does, unless the session
    // approves by itself (--yes): then it is adopted, and the warning says so. (A HIGH
    // divergence of the rules is routed as such: the document is revised anyway.)
    if d.surface_consensus
        && d.verdict.verdict != "HIGH"
        && state.session.status != SessionStatus::Paused
    {
        if state.control.settings.auto_approve {
            return Ok(DiscussRoute::Warn(
                std::iter::once(format!(
                    "{round}: surface consensus adopted without asking (--yes): {}",
                    d.verdict.summary
                ))
                .chain(d.action_items.iter().cloned())
                .collect(),
            ));
        }
        state.session.status = SessionStatus::Paused;
        state.control.pause = Some(Pause {
            until: None,
            kind: PauseKind::Discuss,
            task: Some(task.id.clone()),
            reason: format!(
                "{round} on {}: every seat agrees, for much the same reasons; check the diversity of the reasoning before building on it",
                task.id
            ),
            next: vec![
                "git tlv4 approve   (adopt the consensus)".into(),
                format!(
                    "git tlv4 revise {} --feedback TEXT   (challenge it: revised, then discussed again)",
                    task.id
                ),
                "git tlv4 abort".into(),
            ],
        });
    }
    match d.verdict.verdict.as_str() {
        "HIGH" => {
            let final_round = task.id.prefix() == "QUALITY";
            let base = base_id(&task.id);
            if final_round || is_revised(state, &base) || base != task.id {
                state.session.status = SessionStatus::Paused;
                state.control.pause = Some(Pause {
                    until: None,
                    kind: PauseKind::Discuss,
                    task: Some(task.id.clone()),
                    reason: format!(
                        "{round} on {} diverged (HIGH): {}",
                        task.id, d.verdict.summary
                    ),
                    // A task gets one revision: `revise` is offered only while it has none.
                    next: std::iter::once("git tlv4 approve   (accept as it is)".to_owned())
                        .chain(
                            (!is_revised(state, &base) && base == task.id)
                                .then(|| format!("git tlv4 revise {} --feedback TEXT", task.id)),
                        )
                        .chain(std::iter::once("git tlv4 abort".to_owned()))
                        .collect(),
                });
                return Ok(DiscussRoute::Continue);
            }
            let feedback = format!(
                "{round} found high divergence: {}",
                d.action_items.join("; ")
            );
            let made = revise(state, &task.id, &feedback, false)?;
            Ok(DiscussRoute::Revised(made[0].clone()))
        }
        "MEDIUM" => Ok(DiscussRoute::Warn(
            std::iter::once(format!("{round}: medium divergence: {}", d.verdict.summary))
                .chain(d.action_items.iter().cloned())
                .collect(),
        )),
        _ => Ok(DiscussRoute::Continue),
    }
}

/// `IMPL-001-R1` → `IMPL-001`.
pub(crate) fn base_id(id: &TaskId) -> TaskId {
    let s = id.as_str();
    match s.rfind("-R") {
        Some(at) if s[at + 2..].chars().all(|c| c.is_ascii_digit()) && at + 2 < s.len() => {
            s[..at].parse().unwrap_or_else(|_| id.clone())
        }
        _ => id.clone(),
    }
}

/// The newest task of `base`'s revision chain (`base` itself when it was never revised).
pub fn latest(state: &State, base: &TaskId) -> TaskId {
    let mut best = (0u32, base.clone());
    let prefix = format!("{base}-R");
    for k in state.tasks.keys() {
        if let Some(n) = k
            .as_str()
            .strip_prefix(&prefix)
            .and_then(|n| n.parse::<u32>().ok())
            && n > best.0
        {
            best = (n, k.clone());
        }
    }
    best.1
}

fn next_revision(state: &State, base: &TaskId) -> TaskId {
    let mut n = 1;
    loop {
        let id: TaskId = format!("{base}-R{n}").parse().expect("a valid id");
        if !state.tasks.contains_key(&id) {
            return id;
        }
        n += 1;
    }
}

/// Creates the revision of `target` (at most one per task unless `again`), with feedback, and
/// revisions of every completed task downstream of it (checkpoints excepted). Pending tasks
/// that waited for a revised task wait for its revision instead. Returns the new ids, the
/// revision of `target` first.
pub fn revise(
    state: &mut State,
    target: &TaskId,
    feedback: &str,
    again: bool,
) -> Result<Vec<TaskId>> {
    let task = state.task(target)?.clone();
    if !matches!(task.status, TaskStatus::Completed | TaskStatus::Failed) {
        return Err(Error::state(
            format!(
                "task `{target}` is {}; only completed or failed tasks can be revised",
                task.status.as_str()
            ),
            Some("to change what it will do, use `git tlv4 feedback TEXT`".into()),
        ));
    }
    let base = base_id(target);
    if !again && (base != *target || is_revised(state, &base)) {
        return Err(Error::state(
            format!(
                "task `{base}` was revised once already ({}); a task gets at most one revision",
                latest(state, &base)
            ),
            Some("decide yourself: `git tlv4 approve` to accept, or `git tlv4 abort`".into()),
        ));
    }
    // Which tasks get revisions: the target, then completed tasks downstream, in order.
    let order: Vec<TaskId> = state.ordered().into_iter().map(|t| t.id.clone()).collect();
    let mut revised: Vec<(TaskId, TaskId)> = Vec::new();
    let mut affected: Vec<TaskId> = vec![target.clone()];
    for id in &order {
        let t = &state.tasks[id];
        if id == target || t.status != TaskStatus::Completed || t.role == Role::Supervisor {
            continue;
        }
        if t.blocked_by
            .iter()
            .any(|d| affected.contains(d) || revised_from(&affected, state, d))
        {
            affected.push(id.clone());
        }
    }
    for id in &affected {
        let original = state.tasks[id].clone();
        let rid = next_revision(state, &base_id(id));
        let mut deps: Vec<TaskId> = Vec::new();
        for d in &original.blocked_by {
            // A checkpoint between two revised tasks is not revised: the revision waits
            // for the revisions the checkpoint waited for instead.
            let through: Vec<TaskId> = match state.tasks.get(d) {
                Some(cp)
                    if cp.role == Role::Supervisor
                        && cp
                            .blocked_by
                            .iter()
                            .any(|b| revised.iter().any(|(o, _)| o == b)) =>
                {
                    cp.blocked_by.clone()
                }
                _ => vec![d.clone()],
            };
            for d in through {
                let d = revised
                    .iter()
                    .find(|(o, _)| *o == d)
                    .map_or(d.clone(), |(_, r)| r.clone());
                if !deps.contains(&d) {
                    deps.push(d);
                }
            }
        }
        // One line: the description is read line by line, and feedback is data.
        let feedback = feedback.split_whitespace().collect::<Vec<_>>().join(" ");
        let note = if id == target {
            format!("Feedback: {feedback}")
        } else {
            format!("Feedback: cascade from the revision of {target}: {feedback}")
        };
        state.tasks.insert(
            rid.clone(),
            Task {
                id: rid.clone(),
                status: TaskStatus::Pending,
                blocked_by: deps,
                attempts: 0,
                owner: None,
                result: None,
                description: format!(
                    "{}\nRevision of: {id}\n{note}\n",
                    original.description.trim_end()
                ),
                ..original
            },
        );
        revised.push((id.clone(), rid));
    }
    rewire(state, &revised);
    state.session.status = SessionStatus::Active;
    state.control.pause = None;
    Ok(revised.into_iter().map(|(_, r)| r).collect())
}

/// How many revisions a merge conflict may create in one task's chain.
pub const CONFLICT_REVISIONS: u32 = 2;

/// After `id`'s change failed to merge: its revision, carrying the conflict, unless the chain
/// had [`CONFLICT_REVISIONS`] already.
pub fn conflict_revision(state: &mut State, id: &TaskId, detail: &str) -> Result<Option<TaskId>> {
    let base = base_id(id);
    let n = id
        .as_str()
        .strip_prefix(&format!("{base}-R"))
        .and_then(|n| n.parse::<u32>().ok())
        .unwrap_or(0);
    if n >= CONFLICT_REVISIONS {
        return Ok(None);
    }
    let feedback = format!(
        "merge conflict: the change of {id} could not be merged, because the session changed the same places meanwhile:\n{detail}\nRedo the change on the current code of the session."
    );
    Ok(revise(state, id, &feedback, true)?.into_iter().next())
}

/// Whether `dep` is a checkpoint that waits for one of `affected` (checkpoints are not revised
/// but pass the cascade on).
fn revised_from(affected: &[TaskId], state: &State, dep: &TaskId) -> bool {
    state.tasks.get(dep).is_some_and(|t| {
        t.role == Role::Supervisor && t.blocked_by.iter().any(|d| affected.contains(d))
    })
}

/// Tasks not yet completed that wait for an original wait for its revision instead.
fn rewire(state: &mut State, revised: &[(TaskId, TaskId)]) {
    let new: Vec<&TaskId> = revised.iter().map(|(_, r)| r).collect();
    for t in state.tasks.values_mut() {
        if t.status == TaskStatus::Completed || new.contains(&&t.id) {
            continue;
        }
        for d in &mut t.blocked_by {
            if let Some((_, r)) = revised.iter().find(|(o, _)| o == d) {
                *d = r.clone();
            }
        }
    }
}

/// The spec document feedback is about, by keywords (the reference's routing table).
pub fn feedback_target(text: &str) -> Option<&'static str> {
    let t = text.to_lowercase();
    let table: [(&str, &[&str]); 4] = [
        ("DRAFT-001", &["vision", "market", "mvp", "scope"]),
        (
            "DRAFT-002",
            &["requirement", "feature", "nfr", "user story"],
        ),
        (
            "DRAFT-003",
            &["architecture", "adr", "component", "tech stack"],
        ),
        ("DRAFT-004", &["epic", "story", "sprint", "priority"]),
    ];
    table
        .iter()
        .find(|(_, keys)| keys.iter().any(|k| t.contains(k)))
        .map(|(id, _)| *id)
}

/// The result of `feedback`: what it was routed to.
pub enum FeedbackRoute {
    /// Revisions were created, the first for this task.
    Revised(Vec<TaskId>),
    /// The task has not run yet; its description now carries the feedback.
    Attached(TaskId),
    /// Implementation has started: the feedback is only logged.
    Logged,
}

/// Routes free feedback: to the spec document it concerns (a revision chain when that
/// document is done, the task's description when it has not run), or only to the log once
/// implementation started.
pub fn feedback(state: &mut State, text: &str) -> Result<FeedbackRoute> {
    let implementing = state
        .tasks
        .values()
        .any(|t| t.id.prefix() == "IMPL" && t.status != TaskStatus::Pending);
    if implementing {
        return Ok(FeedbackRoute::Logged);
    }
    let drafts: Vec<TaskId> = state
        .ordered()
        .into_iter()
        .filter(|t| t.role == Role::Writer)
        .map(|t| t.id.clone())
        .collect();
    let target = match feedback_target(text)
        .and_then(|id| id.parse::<TaskId>().ok())
        .filter(|id| state.tasks.contains_key(id))
    {
        Some(id) => latest(state, &id),
        // Unclear feedback: the earliest document not done yet, or else the last one done.
        None => match drafts
            .iter()
            .find(|id| state.tasks[*id].status != TaskStatus::Completed)
        {
            Some(id) => id.clone(),
            None => match drafts.iter().rev().find(|id| !is_revised(state, id)) {
                Some(id) => id.clone(),
                None => return Ok(FeedbackRoute::Logged),
            },
        },
    };
    let task = state.tasks.get_mut(&target).expect("target exists");
    if task.status == TaskStatus::Pending {
        task.description.push_str(&format!(
            "Feedback: {}\n",
            text.split_whitespace().collect::<Vec<_>>().join(" ")
        ));
        state.session.status = SessionStatus::Active;
        state.control.pause = None;
        return Ok(FeedbackRoute::Attached(target));
    }
    Ok(FeedbackRoute::Revised(revise(state, &target, text, true)?))
}

/// `recheck`: a new run of the quality gate on the current documents.
pub fn recheck(state: &mut State) -> Result<TaskId> {
    let base: TaskId = "QUALITY-001".parse().expect("a valid id");
    let current = latest(state, &base);
    let Some(task) = state.tasks.get(&current) else {
        return Err(Error::state("this session has no QUALITY-001 gate", None));
    };
    if task.status != TaskStatus::Completed {
        return Err(Error::state(
            format!("{current} has not completed; there is nothing to recheck yet"),
            None,
        ));
    }
    let made = revise(state, &current, "recheck requested", true)?;
    Ok(made[0].clone())
}

/// The spec dimensions `improve` knows, with the document each one improves.
pub const DIMENSIONS: [(&str, &str, &str); 5] = [
    ("completeness", "requirements", "fill the missing sections"),
    (
        "consistency",
        "architecture",
        "use the same terms in every document",
    ),
    (
        "traceability",
        "epics",
        "link every goal, requirement, component and story",
    ),
    (
        "depth",
        "architecture",
        "add acceptance criteria and decision detail",
    ),
    (
        "coverage",
        "requirements",
        "add requirements for what is not covered",
    ),
];

/// `improve [DIMENSION]`: a writer task for the dimension (the weakest one by default) and a
/// new quality gate after it.
pub fn improve(
    state: &mut State,
    report: &str,
    dimension: Option<&str>,
) -> Result<(TaskId, TaskId)> {
    let scores = dimension_scores(report);
    let dim = match dimension {
        Some(d) => {
            let d = d.to_lowercase();
            DIMENSIONS
                .iter()
                .find(|(n, _, _)| *n == d)
                .map(|(n, _, _)| *n)
                .ok_or_else(|| {
                    Error::Invalid(format!(
                        "unknown dimension `{d}`; use one of {}",
                        DIMENSIONS.map(|d| d.0).join(", ")
                    ))
                })?
        }
        None => scores
            .iter()
            .min_by(|a, b| a.1.partial_cmp(&b.1).unwrap_or(std::cmp::Ordering::Equal))
            .map(|(n, _)| *n)
            .ok_or_else(|| {
                Error::state(
                    "the readiness report has no dimension scores; name a dimension",
                    None,
                )
            })?,
    };
    let (_, phase, strategy) = DIMENSIONS
        .iter()
        .find(|(n, _, _)| *n == dim)
        .expect("a known dimension");
    let gate: TaskId = "QUALITY-001".parse().expect("a valid id");
    let current = latest(state, &gate);
    if !state.tasks.contains_key(&current) {
        return Err(Error::state("this session has no QUALITY-001 gate", None));
    }
    let mut n = 1;
    let improve_id = loop {
        let id: TaskId = format!("IMPROVE-{dim}-{n:03}").parse().expect("a valid id");
        if !state.tasks.contains_key(&id) {
            break id;
        }
        n += 1;
    };
    let score = scores
        .iter()
        .find(|(n, _)| *n == dim)
        .map_or("unknown".to_owned(), |(_, s)| format!("{s:.0}"));
    let template = state.tasks[&current].clone();
    state.tasks.insert(
        improve_id.clone(),
        Task {
            id: improve_id.clone(),
            role: Role::Writer,
            status: TaskStatus::Pending,
            blocked_by: Vec::new(),
            phase: (*phase).into(),
            priority: tlv4_core::model::Priority::P2,
            discuss: None,
            inner_loop: true,
            attempts: 0,
            description: format!(
                "PURPOSE: Raise {dim} from {score} to at least 80 | Success: the next quality gate scores {dim} at 80 or more\nTASK:\n  - {strategy}\nCONTEXT:\n  - Session: {}\n  - Report: spec/readiness-report.md\nEXPECTED: the {phase} documents, revised\nCONSTRAINTS: Documents only\nFeedback: improve {dim}: {strategy}\n---\nInnerLoop: true\nRoleSpec: specs/roles/writer.md\n",
                state.session.id
            ),
            owner: None,
            result: None,
        },
    );
    let recheck_id = next_revision(state, &gate);
    state.tasks.insert(
        recheck_id.clone(),
        Task {
            id: recheck_id.clone(),
            status: TaskStatus::Pending,
            blocked_by: vec![improve_id.clone()],
            attempts: 0,
            owner: None,
            result: None,
            description: format!(
                "{}\nRevision of: {current}\nFeedback: recheck after {improve_id}\n",
                template.description.trim_end()
            ),
            ..template
        },
    );
    rewire(state, &[(current, recheck_id.clone())]);
    state.session.status = SessionStatus::Active;
    state.control.pause = None;
    Ok((improve_id, recheck_id))
}

/// Dimension scores from a readiness report: table rows whose first cell names a dimension;
/// the last number in the row is its score.
pub fn dimension_scores(report: &str) -> Vec<(&'static str, f64)> {
    let mut out = Vec::new();
    for line in report.lines().filter(|l| l.trim_start().starts_with('|')) {
        let cells: Vec<&str> = line
            .split('|')
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        let Some(first) = cells.first() else { continue };
        let Some((name, _, _)) = DIMENSIONS
            .iter()
            .find(|(n, _, _)| first.eq_ignore_ascii_case(n))
        else {
            continue;
        };
        let score = cells
            .iter()
            .rev()
            .find_map(|c| c.trim_end_matches('%').parse::<f64>().ok());
        if let (Some(score), false) = (score, out.iter().any(|(n, _)| n == name)) {
            out.push((*name, score));
        }
    }
    out
}

/// `approve`: accept what the session paused on.
pub fn approve(state: &mut State) -> Result<String> {
    if state.session.status != SessionStatus::Paused {
        return Err(Error::state(
            format!(
                "session `{}` is {}; there is nothing to approve",
                state.session.id,
                state.session.status.as_str()
            ),
            None,
        ));
    }
    let pause = state.control.pause.clone();
    match pause.as_ref().map(|p| &p.kind) {
        // A stall whose cause is gone is no longer one: approving just resumes.
        Some(PauseKind::Stalled) if !super::run::stalled(state) => {}
        Some(PauseKind::Stalled) => {
            let failed = state.tasks.values().any(|t| t.status == TaskStatus::Failed);
            return Err(Error::state(
                if failed {
                    "the session is stuck on failed tasks, not waiting for an approval"
                } else {
                    "the session is stalled (its pending tasks wait for tasks that cannot complete), not waiting for an approval"
                },
                Some("`git tlv4 resume --retry` runs failed tasks again; `git tlv4 revise TASK` redoes one with feedback; `git tlv4 status` shows what waits".into()),
            ));
        }
        Some(PauseKind::Budget) => {
            return Err(Error::state(
                "the session reached its budget; an approval does not raise it",
                Some("`git tlv4 resume --budget-usd +N` (or `--budget-tokens +N`) raises it, as a recorded decision; `git tlv4 cost` shows what was spent".into()),
            ));
        }
        // A usage limit is waited out, not approved: going on now only tries the agent again.
        Some(PauseKind::Limit) => {}
        None => {}
        // Any other pause, one a newer version wrote included, waits for this approval.
        Some(_) => {
            if let Some(t) = pause.as_ref().and_then(|p| p.task.clone())
                && !state.control.approved.contains(&t)
            {
                state.control.approved.push(t);
            }
        }
    }
    state.session.status = SessionStatus::Active;
    state.control.pause = None;
    Ok(pause.map_or("resumed".into(), |p| format!("approved: {}", p.reason)))
}

/// `abort`: stop the session for good (its history stays).
pub fn abort(state: &mut State) -> Result<()> {
    if matches!(
        state.session.status,
        SessionStatus::Aborted | SessionStatus::Completed
    ) {
        return Err(Error::state(
            format!(
                "session `{}` is already {}",
                state.session.id,
                state.session.status.as_str()
            ),
            None,
        ));
    }
    for t in state
        .tasks
        .values_mut()
        .filter(|t| t.status == TaskStatus::InProgress)
    {
        t.status = TaskStatus::Pending;
        t.owner = None;
    }
    state.session.status = SessionStatus::Aborted;
    state.control.pause = None;
    Ok(())
}

/// `resume --retry`: failed tasks go back to pending.
pub fn retry_failed(state: &mut State) -> Vec<TaskId> {
    let mut back = Vec::new();
    for t in state
        .tasks
        .values_mut()
        .filter(|t| t.status == TaskStatus::Failed)
    {
        t.status = TaskStatus::Pending;
        back.push(t.id.clone());
    }
    if !back.is_empty()
        && state.session.status == SessionStatus::Paused
        && state
            .control
            .pause
            .as_ref()
            .is_some_and(|p| p.kind == PauseKind::Stalled)
    {
        state.session.status = SessionStatus::Active;
        state.control.pause = None;
    }
    back
}
