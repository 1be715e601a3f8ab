//! `control.toml`: the coordinator's decisions for a session — its analysis, settings, pause,
//! approvals, collected signals, injected specialists and the implementation dispatch.

use std::collections::BTreeMap;

use super::TaskId;
use super::open::open_enum;

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
    /// What happens when every task is done.
    pub completion: Completion,
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
    /// The session's dollar budget as it started (`start --budget-usd`, else `[budget]
    /// session_usd`); raises are decisions in the history (see `ledger`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_usd: Option<f64>,
    /// The session's token budget as it started, likewise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_tokens: Option<u64>,
    /// Several candidate runs of every code task, the best one by measurement merged
    /// (`start --best-of`, else `[best_of]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best_of: Option<BestOf>,
}

/// How many candidates of each code task run, by which agents, and whether the first perfect
/// one ends the others.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BestOf {
    /// How many candidates.
    pub count: u32,
    /// One candidate per agent named here, in order; empty: `count` candidates by the role's
    /// own agent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<String>,
    /// Start no further candidate once one passes every test with an APPROVE review, and stop
    /// those running (their work kept).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub accept_first: bool,
}

impl BestOf {
    /// Reads `--best-of`: a count (`3`) or the agents' names (`claude,codex`).
    pub fn parse(value: &str) -> Result<BestOf, String> {
        let value = value.trim();
        if let Ok(count) = value.parse::<u32>() {
            return match count {
                1..=10 => Ok(BestOf {
                    count,
                    ..BestOf::default()
                }),
                _ => Err(format!("`{value}`: the count is from 1 to 10")),
            };
        }
        let agents: Vec<String> = value.split(',').map(|a| a.trim().to_owned()).collect();
        if agents.iter().any(String::is_empty) {
            return Err(format!(
                "`{value}`: give a count (`3`) or agents' names separated by commas (`claude,codex`)"
            ));
        }
        if agents.len() > 10 {
            return Err(format!("`{value}`: at most 10 agents"));
        }
        Ok(BestOf {
            count: agents.len() as u32,
            agents,
            accept_first: false,
        })
    }

    /// `3`, or `claude,codex`, with ` (accept first)` when set: as `status` shows it.
    pub fn describe(&self) -> String {
        let what = if self.agents.is_empty() {
            self.count.to_string()
        } else {
            self.agents.join(",")
        };
        if self.accept_first {
            format!("{what} (accept first)")
        } else {
            what
        }
    }

    /// Whether more than one candidate runs.
    pub fn several(&self) -> bool {
        self.count > 1
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            max_parallel: 3,
            auto_approve: false,
            completion: Completion::Interactive,
            agents: Vec::new(),
            replay: None,
            shell: false,
            budget_usd: None,
            budget_tokens: None,
            best_of: None,
        }
    }
}

/// Why a session waits for the user.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pause {
    /// What the session waits for.
    pub kind: PauseKind,
    /// The task that caused it, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskId>,
    /// What happened, in one or two sentences.
    pub reason: String,
    /// Commands the user can run next.
    pub next: Vec<String>,
    /// When what the session waits for ends by itself (a usage limit's reset, RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
}

open_enum! {
    /// What a paused session waits for (`pause.kind`, the `Tlv4-Paused` trailer). A kind a
    /// newer version writes (a budget or a limit, say) reads as `Other`, shows as written,
    /// and is approved like a gate.
    pub enum PauseKind {
        /// The spec readiness gate (`QUALITY-*`), unless `--yes` approved a pass.
        Gate = "gate",
        /// A review (`REVIEW-*`) that blocks the change.
        Review = "review",
        /// Tests that stay below the pass target after the fix cycle.
        Tests = "tests",
        /// A checkpoint (`CHECKPOINT-*`) that blocks.
        Checkpoint = "checkpoint",
        /// A discuss round that escalates, or a consensus whose reasons are too alike.
        Discuss = "discuss",
        /// Nothing can run: tasks failed, or wait for tasks that cannot complete.
        Stalled = "stalled",
        /// The next task would take the session over its budget (`[budget]`, `--budget-usd`).
        Budget = "budget",
        /// The agents of the ready tasks hit a usage limit that resets later (`until`).
        Limit = "limit",
        /// A paused session whose pause is not recorded; the loop's stand-in, never stored.
        Unrecorded = "paused",
    }
}

open_enum! {
    /// What happens when every task of a session is done (`settings.completion`,
    /// `session.completion`, `--completion`).
    pub enum Completion {
        /// Ask on a terminal; keep the session otherwise (and under `--yes`).
        Interactive = "interactive",
        /// Move the session to `refs/tlv4/archive/<SID>` and remove its branches.
        Archive = "archive",
        /// Leave the session branch as it is.
        Keep = "keep",
        /// Write the result, without the run records, on `tlv4-export/<SID>`.
        Export = "export",
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A `control.toml` as the store writes it, with the pause kind and completion action
    /// given.
    fn control_toml(kind: &str, completion: &str) -> String {
        format!(
            "approved = [\"QUALITY-001\"]\n\n\
             [settings]\nmax_parallel = 3\nauto_approve = false\ncompletion = \"{completion}\"\n\n\
             [pause]\nkind = \"{kind}\"\ntask = \"QUALITY-001\"\nreason = \"waits\"\n\
             next = [\"git tlv4 approve\"]\n"
        )
    }

    #[test]
    fn every_known_pause_kind_and_completion_is_stored_as_before() {
        let kinds = [
            ("gate", PauseKind::Gate),
            ("review", PauseKind::Review),
            ("tests", PauseKind::Tests),
            ("checkpoint", PauseKind::Checkpoint),
            ("discuss", PauseKind::Discuss),
            ("stalled", PauseKind::Stalled),
        ];
        for (name, kind) in kinds {
            let text = control_toml(name, "interactive");
            let read: Control = toml::from_str(&text).unwrap();
            assert_eq!(read.pause.as_ref().unwrap().kind, kind);
            assert_eq!(toml::to_string(&read).unwrap(), text, "{name}");
        }
        let completions = [
            ("interactive", Completion::Interactive),
            ("archive", Completion::Archive),
            ("keep", Completion::Keep),
            ("export", Completion::Export),
        ];
        for (name, completion) in completions {
            let text = control_toml("gate", name);
            let read: Control = toml::from_str(&text).unwrap();
            assert_eq!(read.settings.completion, completion);
            assert_eq!(toml::to_string(&read).unwrap(), text, "{name}");
        }
        assert_eq!(
            Settings::default().completion.as_str(),
            "interactive",
            "the default stays what sessions without the key read as"
        );
    }

    #[test]
    fn a_pause_kind_or_completion_of_a_newer_version_is_kept_as_written() {
        // `quota` and `vacation` stand for pause kinds a later version adds; `pull-request`
        // for a completion action this build does not know.
        for kind in ["quota", "vacation"] {
            let text = control_toml(kind, "pull-request");
            let read: Control = toml::from_str(&text).unwrap();
            let pause = read.pause.as_ref().unwrap();
            assert_eq!(pause.kind, PauseKind::Other(kind.into()));
            assert_eq!(pause.kind.to_string(), kind);
            assert_eq!(
                read.settings.completion,
                Completion::Other("pull-request".into())
            );
            assert_eq!(toml::to_string(&read).unwrap(), text, "{kind}");
            let json = serde_json::to_value(pause).unwrap();
            assert_eq!(json["kind"], kind);
        }
    }
}
