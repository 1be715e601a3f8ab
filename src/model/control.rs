//! `control.toml`: the coordinator's decisions for a session — its analysis, settings, pause,
//! approvals, collected signals, injected specialists and the implementation dispatch.

use std::collections::BTreeMap;

use super::TaskId;

/// The coordinator's record, stored as `.tlv4/sessions/<SID>/control.toml`.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Control {
    /// Why this pipeline and how complex the task looks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub analysis: Option<Analysis>,
    /// How the session runs.
    #[serde(default)]
    pub settings: Settings,
    /// Why the session is paused and what the user can do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause: Option<Pause>,
    /// Gates the user approved (QUALITY and CHECKPOINT task ids).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approved: Vec<TaskId>,
    /// Tech-profile signals reported so far, sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub signals: Vec<String>,
    /// Files that show each signal.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub evidence: BTreeMap<String, Vec<String>>,
    /// Specialists injected so far (each at most once).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub specialists: Vec<String>,
    /// The implementation tasks created from the plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub implementation: Option<ImplDispatch>,
    /// Verdicts of checkpoints, quality gates and discuss rounds, by task id.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub verdicts: BTreeMap<String, Verdict>,
}

/// Pipeline choice and complexity, from the task text.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Analysis {
    /// How the pipeline was chosen (`--pipeline`, the config, or keywords).
    pub pipeline_reason: String,
    /// Capabilities found in the text (`analyst`, `executor`, …).
    pub capabilities: Vec<String>,
    /// Complexity score.
    pub score: u32,
    /// `Low` (1–3), `Medium` (4–6) or `High` (7+).
    pub level: String,
    /// What added to the score.
    pub reasons: Vec<String>,
}

/// How a session runs.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Settings {
    /// At most this many tasks run at once.
    pub max_parallel: u32,
    /// Gates whose verdict passes are approved without asking (`start --yes`).
    pub auto_approve: bool,
    /// What happens when every task is done: `interactive`, `archive`, `keep` or `export`.
    pub completion: String,
    /// `--agent` values given to `start`, used by every later run of the session that gives
    /// none of its own.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<String>,
    /// `--replay SID` given to `start`, likewise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay: Option<String>,
    /// Whether the agents of code tasks get their CLI's shell, inside the kernel's sandbox.
    /// `start` decides it once: on where the sandbox is full. Every later run keeps it, so a
    /// session never changes tool sets under its tasks: a run where the sandbox is not full
    /// refuses, and `resume --reconfigure` decides again on the machine it runs on.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub shell: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            max_parallel: 3,
            auto_approve: false,
            completion: "interactive".into(),
            agents: Vec::new(),
            replay: None,
            shell: false,
        }
    }
}

/// Why a session waits for the user.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pause {
    /// `gate`, `checkpoint`, `discuss`, `stalled` or `completion`.
    pub kind: String,
    /// The task that caused it, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskId>,
    /// What happened, in one or two sentences.
    pub reason: String,
    /// Commands the user can run next.
    pub next: Vec<String>,
}

/// IMPL tasks made from `plan/plan.json`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImplDispatch {
    /// The plan task whose plan was used (`PLAN-001` or a revision).
    pub plan_task: TaskId,
    /// The plan's complexity.
    pub complexity: String,
    /// `single`, `parallel` or `dag`.
    pub topology: String,
    /// The IMPL tasks created.
    pub tasks: Vec<TaskId>,
    /// Tasks made to wait for another because their planned files overlap
    /// (`IMPL-003 after IMPL-001`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub serialized: Vec<String>,
}

/// A verdict of a quality step.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Verdict {
    /// `pass`, `warn`, `block` (checkpoints); `PASS`, `REVIEW`, `FAIL` (gates); …
    pub verdict: String,
    /// Score, when the step scores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    /// One line.
    pub summary: String,
}
