//! `[agents.*]`, `[roles]` and `[discuss.perspectives]` of `.tlv4.toml`: which agent does
//! which work, and how each agent is run.

use std::collections::BTreeMap;

/// One configured agent (`[agents.<name>]`).
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    /// `command`, `claude`, `codex`, `gemini`, `qwen`, `opencode`, `aider`, `openai`, `replay`
    /// or `builtin`.
    pub driver: String,
    /// The executable (presets default to their CLI's name).
    #[serde(default)]
    pub program: Option<String>,
    /// Extra arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// The model, where the driver takes one.
    #[serde(default)]
    pub model: Option<String>,
    /// Added to the agent's environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// A config home to use instead of a fresh isolated one.
    #[serde(default)]
    pub home: Option<String>,
    /// Wall-clock limit, e.g. `20m`, `90s`.
    #[serde(default)]
    pub timeout: Option<String>,
    /// Endpoint of an OpenAI-compatible server (`openai` driver).
    #[serde(default)]
    pub url: Option<String>,
    /// The session to replay (`replay` driver).
    #[serde(default)]
    pub session: Option<String>,
    /// The most tokens one answer may have (`openai` driver: sent as `max_tokens`); the
    /// default depends on the role.
    #[serde(default)]
    pub max_output_tokens: Option<u64>,
    /// The model's context window in tokens (`openai` driver): prompts are built to fit in
    /// it beside the output bound.
    #[serde(default)]
    pub context_tokens: Option<u64>,
    /// The most a prompt may be, in estimated tokens (characters / 3); the default comes
    /// from `context_tokens`, else the driver's own limit.
    #[serde(default)]
    pub prompt_budget: Option<u64>,
    /// More places the agent may write under its sandbox (`~/` is the user's home): its CLI's
    /// own configuration or cache, when it keeps them outside its home.
    #[serde(default)]
    pub writes: Vec<String>,
    /// More places the agent may read under its sandbox.
    #[serde(default)]
    pub reads: Vec<String>,
}

/// `[discuss]`.
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiscussConfig {
    /// Agent per discuss perspective (`product = "mine"`).
    #[serde(default)]
    pub perspectives: BTreeMap<String, String>,
    /// Agent per discussion seat (`git tlv4 discuss`): a topic member's role, `devil` (the
    /// devil's advocate), `moderator`, or `default` for every seat not named.
    #[serde(default)]
    pub members: BTreeMap<String, String>,
    /// The round set of the pipelines: `current` (three rounds, the default) or `early`
    /// (the six rounds of seed 000).
    #[serde(default)]
    pub rounds: Option<String>,
    /// How a round runs, by round (`DISCUSS-002 = "protocol"`): `critique` (the default),
    /// or the discussion protocol with its preset (`protocol`, `protocol-quick`,
    /// `protocol-deep`).
    #[serde(default)]
    pub mode: BTreeMap<String, String>,
}
