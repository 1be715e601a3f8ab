//! Plain types shared by every layer: sessions, tasks, events and messages.
//!
//! Nothing here knows about git, the file system or async runtimes; the store turns these
//! into TOML blobs, commit trailers and notes, and the CLI renders them.

mod control;
mod ids;
mod message;
mod open;
mod session;
mod task;

pub use control::{
    Analysis, BestOf, Completion, Control, ImplDispatch, Pause, PauseKind, Settings, Verdict,
};
pub use ids::{IdError, SessionId, TaskId};
pub use message::Message;
pub use session::{
    ForkOrigin, SCHEMA_CLAIM_REFS, SCHEMA_NEWEST, SCHEMA_VERSION, Session, SessionStatus,
};
pub use task::{Owner, Priority, Role, Task, TaskResult, TaskStatus};

use std::collections::BTreeMap;

/// The whole state of a session as materialised in the tip tree of its branch.
#[derive(Debug, Clone, PartialEq)]
pub struct State {
    /// `session.toml`.
    pub session: Session,
    /// `tasks/<TASK>.toml`, keyed by id.
    pub tasks: BTreeMap<TaskId, Task>,
    /// `control.toml`: the coordinator's decisions (absent file: defaults).
    pub control: Control,
}

/// How far a session has come, counted over its tasks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Progress {
    /// Tasks in the session.
    pub total: usize,
    /// Tasks completed.
    pub completed: usize,
    /// Tasks running now.
    pub in_progress: usize,
    /// Tasks that failed.
    pub failed: usize,
}

impl State {
    /// Whether every task `task` waits for is completed.
    pub fn is_unblocked(&self, task: &Task) -> bool {
        task.blocked_by.iter().all(|dep| {
            self.tasks
                .get(dep)
                .is_some_and(|t| t.status == TaskStatus::Completed)
        })
    }

    /// Pending tasks whose dependencies are all completed, in id order.
    pub fn ready(&self) -> Vec<&Task> {
        self.tasks
            .values()
            .filter(|t| t.status == TaskStatus::Pending && self.is_unblocked(t))
            .collect()
    }

    /// The tasks that name `id` in their `blocked_by`.
    pub fn dependents(&self, id: &TaskId) -> impl Iterator<Item = &Task> {
        let id = id.clone();
        self.tasks
            .values()
            .filter(move |t| t.blocked_by.contains(&id))
    }

    /// Counts of tasks by status.
    pub fn progress(&self) -> Progress {
        let mut p = Progress {
            total: self.tasks.len(),
            ..Progress::default()
        };
        for t in self.tasks.values() {
            match t.status {
                TaskStatus::Completed => p.completed += 1,
                TaskStatus::InProgress => p.in_progress += 1,
                TaskStatus::Failed => p.failed += 1,
                TaskStatus::Pending => {}
            }
        }
        p
    }

    /// The task `id`, or an error naming the tasks that exist.
    pub fn task(&self, id: &TaskId) -> Result<&Task, UnknownTask> {
        self.tasks.get(id).ok_or_else(|| self.unknown_task(id))
    }

    /// The task `id` for editing, or an error naming the tasks that exist.
    pub fn task_mut(&mut self, id: &TaskId) -> Result<&mut Task, UnknownTask> {
        if !self.tasks.contains_key(id) {
            return Err(self.unknown_task(id));
        }
        Ok(self.tasks.get_mut(id).expect("presence was just checked"))
    }

    fn unknown_task(&self, id: &TaskId) -> UnknownTask {
        UnknownTask {
            session: self.session.id.clone(),
            task: id.clone(),
            known: self.tasks.keys().cloned().collect(),
        }
    }
}

/// A task id that the session does not have.
#[derive(Debug, Clone, thiserror::Error)]
#[error("session `{session}` has no task `{task}`")]
pub struct UnknownTask {
    /// The session searched.
    pub session: SessionId,
    /// The id asked for.
    pub task: TaskId,
    /// The ids the session does have.
    pub known: Vec<TaskId>,
}

/// What kind of change an event commit records; the value of its `Tlv4-Event` trailer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// A session branch was created.
    SessionStarted,
    /// The pipeline's tasks were written.
    TasksDispatched,
    /// A task was claimed by an owner.
    TaskClaimed,
    /// A task finished and its artifacts were written.
    TaskCompleted,
    /// A task attempt failed.
    TaskFailed,
    /// Tasks left running by a process that is gone were returned to pending.
    TasksRecovered,
    /// The tree of an earlier event was restored by `undo`.
    Undo,
    /// The tree of an earlier event was restored by `rollback`.
    Rollback,
    /// A session was forked from an earlier event of another one.
    SessionForked,
    /// The session stopped to wait for the user (gate, checkpoint block, discuss, stall).
    SessionPaused,
    /// The user decided at a pause: approve, revise, feedback, recheck, improve, abort.
    UserDecision,
    /// Running tasks were returned to pending because the run was interrupted.
    TasksInterrupted,
    /// Every task is done.
    SessionCompleted,
    /// The completion action ran (archive, keep, export).
    CompletionAction,
    /// A task's result was discarded (and its dependents'), to run again.
    TaskReset,
    /// Commits a user made on a task branch were merged as a manual revision.
    TaskAdopted,
    /// Events added elsewhere (another clone, pulled) were merged with this branch's.
    SessionMerged,
    /// A round of a discussion (`git tlv4 discuss`) was recorded.
    DiscussRound,
    /// `gc` wrote an archived session's history again without its run transcripts.
    SessionCompacted,
    /// The session's state format was raised (remote workers claiming on refs of their own).
    SessionUpgraded,
}

impl EventKind {
    /// Every kind, for parsing.
    pub const ALL: [EventKind; 20] = [
        EventKind::SessionStarted,
        EventKind::TasksDispatched,
        EventKind::TaskClaimed,
        EventKind::TaskCompleted,
        EventKind::TaskFailed,
        EventKind::TasksRecovered,
        EventKind::Undo,
        EventKind::Rollback,
        EventKind::SessionForked,
        EventKind::SessionPaused,
        EventKind::UserDecision,
        EventKind::TasksInterrupted,
        EventKind::SessionCompleted,
        EventKind::CompletionAction,
        EventKind::TaskReset,
        EventKind::TaskAdopted,
        EventKind::SessionMerged,
        EventKind::DiscussRound,
        EventKind::SessionCompacted,
        EventKind::SessionUpgraded,
    ];

    /// The trailer value, e.g. `task_completed`.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::SessionStarted => "session_started",
            EventKind::TasksDispatched => "tasks_dispatched",
            EventKind::TaskClaimed => "task_claimed",
            EventKind::TaskCompleted => "task_completed",
            EventKind::TaskFailed => "task_failed",
            EventKind::TasksRecovered => "tasks_recovered",
            EventKind::Undo => "undo",
            EventKind::Rollback => "rollback",
            EventKind::SessionForked => "session_forked",
            EventKind::SessionPaused => "session_paused",
            EventKind::UserDecision => "user_decision",
            EventKind::TasksInterrupted => "tasks_interrupted",
            EventKind::SessionCompleted => "session_completed",
            EventKind::CompletionAction => "completion_action",
            EventKind::TaskReset => "task_reset",
            EventKind::TaskAdopted => "task_adopted",
            EventKind::SessionMerged => "session_merged",
            EventKind::DiscussRound => "discuss_round",
            EventKind::SessionCompacted => "session_compacted",
            EventKind::SessionUpgraded => "session_upgraded",
        }
    }

    /// The words used in the commit subject, e.g. `completed`.
    pub fn verb(self) -> &'static str {
        match self {
            EventKind::SessionStarted => "started",
            EventKind::TasksDispatched => "tasks dispatched",
            EventKind::TaskClaimed => "claimed",
            EventKind::TaskCompleted => "completed",
            EventKind::TaskFailed => "failed",
            EventKind::TasksRecovered => "tasks recovered",
            EventKind::Undo => "undo",
            EventKind::Rollback => "rollback",
            EventKind::SessionForked => "forked",
            EventKind::SessionPaused => "paused",
            EventKind::UserDecision => "user decision",
            EventKind::TasksInterrupted => "interrupted",
            EventKind::SessionCompleted => "completed",
            EventKind::CompletionAction => "completion action",
            EventKind::TaskReset => "reset",
            EventKind::TaskAdopted => "manual revision adopted",
            EventKind::SessionMerged => "merged",
            EventKind::DiscussRound => "discussion round",
            EventKind::SessionCompacted => "compacted",
            EventKind::SessionUpgraded => "format upgraded",
        }
    }
}

/// The description of one event, as the code that makes a change states it. The store turns
/// it into a commit subject, body and trailers.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// What happened.
    pub kind: EventKind,
    /// The task it happened to, if any.
    pub task: Option<TaskId>,
    /// The task's role, if any.
    pub role: Option<String>,
    /// The task's (or session's) status after the event.
    pub status: Option<String>,
    /// The attempt number, for task events.
    pub attempt: Option<u32>,
    /// Human summary: the commit body.
    pub summary: String,
    /// Extra trailers (`Tlv4-Restores`, …) as key/value pairs.
    pub extra: Vec<(String, String)>,
}

impl Event {
    /// A session-level event.
    pub fn session(kind: EventKind, summary: impl Into<String>) -> Event {
        Event {
            kind,
            task: None,
            role: None,
            status: None,
            attempt: None,
            summary: summary.into(),
            extra: Vec::new(),
        }
    }

    /// An event about `task`, recording its role, status and attempt as they are now.
    pub fn task(kind: EventKind, task: &Task, summary: impl Into<String>) -> Event {
        Event {
            kind,
            task: Some(task.id.clone()),
            role: Some(task.role.to_string()),
            status: Some(task.status.as_str().to_owned()),
            attempt: Some(task.attempts),
            summary: summary.into(),
            extra: Vec::new(),
        }
    }

    /// Adds a trailer.
    pub fn with(mut self, key: &str, value: impl Into<String>) -> Event {
        self.extra.push((key.to_owned(), value.into()));
        self
    }

    /// The commit subject: `<TASK>: <verb> (<role>)` or `session: <verb>`.
    pub fn subject(&self) -> String {
        match (&self.task, &self.role) {
            (Some(task), Some(role)) => format!("{task}: {} ({role})", self.kind.verb()),
            (Some(task), None) => format!("{task}: {}", self.kind.verb()),
            _ => format!("session: {}", self.kind.verb()),
        }
    }
}

impl State {
    /// Tasks in dependency order (each after what it waits for), ties broken by priority
    /// then by the order of the pipeline's phases as ids sort.
    pub fn ordered(&self) -> Vec<&Task> {
        let mut done: std::collections::BTreeSet<&TaskId> = std::collections::BTreeSet::new();
        let mut out = Vec::with_capacity(self.tasks.len());
        while out.len() < self.tasks.len() {
            let next = self
                .tasks
                .values()
                .filter(|t| !done.contains(&t.id))
                .filter(|t| {
                    t.blocked_by
                        .iter()
                        .all(|d| done.contains(d) || !self.tasks.contains_key(d))
                })
                .min_by(|a, b| (a.priority, &a.id).cmp(&(b.priority, &b.id)));
            match next {
                Some(t) => {
                    done.insert(&t.id);
                    out.push(t);
                }
                None => {
                    // A cycle (never written by dispatch): list the rest by id.
                    out.extend(self.tasks.values().filter(|t| !done.contains(&t.id)));
                    break;
                }
            }
        }
        out
    }

    /// The displayed state of a task: its status, with pending split into ready and blocked.
    pub fn display_status(&self, task: &Task) -> &'static str {
        match task.status {
            TaskStatus::Pending if self.is_unblocked(task) => "ready",
            TaskStatus::Pending => "blocked",
            other => other.as_str(),
        }
    }
}
