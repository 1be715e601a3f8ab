//! `tasks/<TASK>.toml`: one unit of work, its place in the graph and its outcome.

use super::TaskId;
use super::open::open_enum;

/// One task, stored as `.tlv4/sessions/<SID>/tasks/<TASK>.toml`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Task {
    /// The task id.
    pub id: TaskId,
    /// The role that does the work.
    pub role: Role,
    /// Where the task stands.
    pub status: TaskStatus,
    /// Tasks that must be completed before this one may start.
    #[serde(default)]
    pub blocked_by: Vec<TaskId>,
    /// The pipeline phase (`research`, `requirements`, …).
    pub phase: String,
    /// Scheduling priority; P0 runs before P1 before P2.
    pub priority: Priority,
    /// The discuss round that follows this task, if any (`DISCUSS-001`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discuss: Option<String>,
    /// Whether one worker takes this task and the serial chain of same-role tasks after it.
    pub inner_loop: bool,
    /// How many times the task has been claimed.
    pub attempts: u32,
    /// The structured description given to the worker.
    pub description: String,
    /// Who runs the task now (set while `in_progress`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<Owner>,
    /// The outcome of the last attempt that finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<TaskResult>,
}

open_enum! {
    /// Who does a task's work: a role of `pipelines.toml`, or a seat of a discussion. The
    /// builtin roles, each with instructions of its own under `specs/roles/`, are variants;
    /// a role a repository defines in its own `pipelines.toml` is `Other`.
    pub enum Role {
        /// Scans the repository and the task text (`RESEARCH-*`).
        Analyst = "analyst",
        /// Writes the spec documents (`DRAFT-*`).
        Writer = "writer",
        /// Turns the spec into `plan.json` (`PLAN-*`).
        Planner = "planner",
        /// Changes the code (`IMPL-*`, fixes, specialists).
        Executor = "executor",
        /// Runs the tests and the fix cycle (`TEST-*`).
        Tester = "tester",
        /// Reviews the change and gates the spec (`REVIEW-*`, `QUALITY-*`, `IMPROVE-*`).
        Reviewer = "reviewer",
        /// Runs the checkpoints (`CHECKPOINT-*`).
        Supervisor = "supervisor",
        /// A discuss round's perspective, when an agent plays it.
        Critic = "critic",
        /// A member of a discussion (`git tlv4 discuss`).
        Member = "member",
        /// The moderator of a discussion.
        Moderator = "moderator",
    }
}

impl Role {
    /// Whether the role's tasks are run by the quality machinery (review rules, tester,
    /// checkpoints) rather than by an agent alone.
    pub fn is_quality(&self) -> bool {
        matches!(self, Role::Reviewer | Role::Tester | Role::Supervisor)
    }

    /// Whether the role changes code in its working directory (rather than returning
    /// documents).
    pub fn writes_code(&self) -> bool {
        *self == Role::Executor
    }
}

/// Where a task stands. "Ready" and "blocked" are derived: a pending task is ready when every
/// task in its `blocked_by` is completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Not started.
    Pending,
    /// Claimed by an owner.
    InProgress,
    /// Done; its artifacts are in the pipeline folder.
    Completed,
    /// The last attempt failed; `result.reason` says why.
    Failed,
}

impl TaskStatus {
    /// The name used in files, trailers and output.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Pending => "pending",
            TaskStatus::InProgress => "in_progress",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
        }
    }
}

/// Scheduling priority.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum Priority {
    /// On the critical path.
    P0,
    /// Beside it (checkpoints, specialists).
    P1,
    /// Improvements.
    P2,
}

/// The process that claimed a task.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Owner {
    /// Host name of the machine the owner runs on.
    pub host: String,
    /// Process id of the owner on that host.
    pub pid: u32,
    /// When the claim was made (RFC 3339).
    pub started_at: String,
    /// When the owner process started (field 22 of `/proc/<pid>/stat`), so that a later
    /// process reusing the pid is not taken for the owner; absent where `/proc` is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<u64>,
}

impl Owner {
    /// Whether the owner still runs: on another host it is assumed to; here its pid must be
    /// alive, not a zombie, and (when recorded) have started when the claim says.
    pub fn alive_here(&self, host: &str) -> bool {
        self.host != host || crate::host::process_alive(self.pid, self.start_time)
    }
}

/// How the last finished attempt ended.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskResult {
    /// One-line summary given by the worker.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub summary: String,
    /// Why the attempt failed (failed tasks only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Paths of the artifacts written, relative to the pipeline folder.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<String>,
    /// When the attempt finished (RFC 3339).
    pub finished_at: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_and_repository_roles_are_stored_by_name() {
        let task = |role: &str| {
            format!(
                "id = \"SECURITY-001\"\nrole = \"{role}\"\nstatus = \"pending\"\nblocked_by = []\n\
                 phase = \"specialist\"\npriority = \"P1\"\ninner_loop = false\nattempts = 0\n\
                 description = \"d\"\n"
            )
        };
        for role in Role::KNOWN {
            let text = task(role.as_str());
            let read: Task = toml::from_str(&text).unwrap();
            assert_eq!(&read.role, role);
            assert_eq!(toml::to_string(&read).unwrap(), text, "{role}");
        }
        // A specialist, or a role of the repository's own `pipelines.toml`.
        let text = task("security-expert");
        let read: Task = toml::from_str(&text).unwrap();
        assert_eq!(read.role, Role::Other("security-expert".into()));
        assert!(!read.role.is_quality() && !read.role.writes_code());
        assert_eq!(toml::to_string(&read).unwrap(), text);
    }

    #[test]
    fn the_quality_roles_and_the_code_writer() {
        let quality: Vec<&Role> = Role::KNOWN.iter().filter(|r| r.is_quality()).collect();
        assert_eq!(quality, [&Role::Tester, &Role::Reviewer, &Role::Supervisor]);
        let code: Vec<&Role> = Role::KNOWN.iter().filter(|r| r.writes_code()).collect();
        assert_eq!(code, [&Role::Executor]);
    }
}
