//! The `openai` driver's configuration and bounds: the agent's section read into a driver,
//! the output bound of each role and the prompt budget that `context_tokens` or
//! `prompt_budget` leave.

use std::path::Path;
use std::sync::atomic::AtomicBool;

use super::OpenAiDriver;
use crate::config::AgentSpec;
use crate::process::{self, RetryPolicy};
use crate::prompt::{self, PROMPT_LIMIT, RoleSpecs};
use tlv4_core::error::{Error, Result};
use tlv4_core::model::Role;

/// The environment variable holding the API key, in the agent's `env` or the process's.
pub const API_KEY_ENV: &str = "OPENAI_API_KEY";

/// Tokens kept free in `context_tokens` for the chat template the server wraps the messages
/// in.
pub(super) const TEMPLATE_TOKENS: u64 = 256;
/// The smallest prompt `context_tokens` must leave room for beside `max_output_tokens`.
pub(super) const MIN_PROMPT_TOKENS: u64 = 1024;

/// The output bound of a role when `max_output_tokens` is not set. Documents (a brief,
/// requirements, an architecture, epics, a plan) and code (a diff and the result block) get
/// the most; the analyst's research is a short context document; an opinion or a critique is
/// a few findings.
pub fn default_output_tokens(role: &Role) -> u64 {
    match role {
        Role::Writer | Role::Planner | Role::Executor => 8192,
        Role::Analyst | Role::Supervisor | Role::Tester => 4096,
        // critics, the reviewer's opinion, specialists' reports
        _ => 2048,
    }
}

impl OpenAiDriver {
    /// The driver for agent `agent` configured as `spec`; fails when `url` or `model` is
    /// missing, the url is not http(s), the `timeout` is bad or role overrides unreadable.
    pub fn new(agent: &str, spec: &AgentSpec, repo_root: &Path) -> Result<OpenAiDriver> {
        Self::build(agent, spec, repo_root, |k| std::env::var(k).ok())
    }

    /// The same driver with prompts built from `specs`.
    pub(crate) fn with_specs(mut self, specs: RoleSpecs) -> OpenAiDriver {
        self.specs = specs;
        self
    }

    /// [`OpenAiDriver::new`], reading the process environment through `env`.
    pub(super) fn build(
        agent: &str,
        spec: &AgentSpec,
        repo_root: &Path,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<OpenAiDriver> {
        let url = spec.url.as_deref().map(str::trim).unwrap_or_default();
        if url.is_empty() {
            return Err(Error::state(
                format!("agent `{agent}`: the `openai` driver needs `url`"),
                Some(format!(
                    "set `url` under [agents.{agent}] in .tlv4.toml to the server's API base, \
                     such as http://127.0.0.1:11434/v1 (Ollama) or http://127.0.0.1:8080/v1 \
                     (llama-server)"
                )),
            ));
        }
        let model = spec.model.as_deref().map(str::trim).unwrap_or_default();
        if model.is_empty() {
            return Err(Error::state(
                format!("agent `{agent}`: the `openai` driver needs `model`"),
                Some(format!(
                    "set `model` under [agents.{agent}] in .tlv4.toml to the name the server \
                     knows the model by"
                )),
            ));
        }
        let base = url.trim_end_matches('/');
        let endpoint = if base.ends_with("/chat/completions") {
            base.to_owned()
        } else {
            format!("{base}/chat/completions")
        };
        let uri: ureq::http::Uri = endpoint.parse().map_err(|e| {
            Error::Invalid(format!("agent `{agent}`: `url` `{url}` is not a URL: {e}"))
        })?;
        if !matches!(uri.scheme_str(), Some("http" | "https")) {
            return Err(Error::Invalid(format!(
                "agent `{agent}`: `url` must start with http:// or https://, not `{url}`"
            )));
        }
        let host = uri.host().unwrap_or_default();
        if host.is_empty() {
            return Err(Error::Invalid(format!(
                "agent `{agent}`: `url` `{url}` names no host"
            )));
        }
        let timeout = match &spec.timeout {
            Some(t) => process::duration::parse_duration(t)
                .map_err(|e| Error::Invalid(format!("agent `{agent}`: `timeout`: {e}")))?,
            None => process::duration::DEFAULT_TIMEOUT,
        };
        let api_key = spec
            .env
            .get(API_KEY_ENV)
            .cloned()
            .or_else(|| env(API_KEY_ENV))
            .filter(|k| !k.trim().is_empty());

        let positive = |key: &str, v: Option<u64>| match v {
            Some(0) => Err(Error::Invalid(format!(
                "agent `{agent}`: `{key}` must be a positive number of tokens"
            ))),
            v => Ok(v),
        };
        let max_output = positive("max_output_tokens", spec.max_output_tokens)?;
        let context_tokens = positive("context_tokens", spec.context_tokens)?;
        let prompt_budget = positive("prompt_budget", spec.prompt_budget)?;
        if let (Some(ctx), Some(out)) = (context_tokens, max_output)
            && out + MIN_PROMPT_TOKENS + TEMPLATE_TOKENS > ctx
        {
            return Err(Error::state(
                format!(
                    "agent `{agent}`: `max_output_tokens` ({out}) leaves no room for a prompt in \
                     `context_tokens` ({ctx})"
                ),
                Some(format!(
                    "under [agents.{agent}], keep `max_output_tokens` at most {} for this context",
                    ctx.saturating_sub(MIN_PROMPT_TOKENS + TEMPLATE_TOKENS)
                )),
            ));
        }

        let mut config = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .user_agent(concat!("git-tlv4/", env!("CARGO_PKG_VERSION")));
        if is_loopback(host) {
            // A local server is never reached through a proxy of the environment.
            config = config.proxy(None);
        }
        Ok(OpenAiDriver {
            agent: agent.to_owned(),
            endpoint,
            model: model.to_owned(),
            api_key,
            specs: RoleSpecs::load(repo_root)?,
            timeout,
            retry: RetryPolicy::default(),
            http: config.build().into(),
            max_output,
            context_tokens,
            prompt_budget,
            completion_field: AtomicBool::new(false),
            plain: AtomicBool::new(false),
        })
    }

    /// The most tokens one answer of `role` may have: `max_output_tokens`, else the role's
    /// default ([`default_output_tokens`]), at most half of `context_tokens`.
    pub fn output_bound(&self, role: &Role) -> u64 {
        match (self.max_output, self.context_tokens) {
            (Some(n), _) => n,
            (None, Some(ctx)) => default_output_tokens(role).min(ctx / 2).max(1),
            (None, None) => default_output_tokens(role),
        }
    }

    /// The most bytes the prompt of a `role` task may have (system and user message, the
    /// retry's additions included): `prompt_budget`, else what `context_tokens` leaves beside
    /// the output bound and the chat template, else [`PROMPT_LIMIT`]; tokens are taken as
    /// [`prompt::CHARS_PER_TOKEN`] bytes each.
    pub fn prompt_limit(&self, role: &Role) -> usize {
        let tokens = match (self.prompt_budget, self.context_tokens) {
            (Some(b), _) => b,
            (None, Some(ctx)) => ctx.saturating_sub(self.output_bound(role) + TEMPLATE_TOKENS),
            (None, None) => return PROMPT_LIMIT,
        };
        usize::try_from(tokens)
            .unwrap_or(usize::MAX)
            .saturating_mul(prompt::CHARS_PER_TOKEN)
            .min(PROMPT_LIMIT)
    }

    /// The same driver with another policy for transient failures.
    #[cfg(test)]
    pub fn with_retry(mut self, retry: RetryPolicy) -> OpenAiDriver {
        self.retry = retry;
        self
    }

    /// The URL requests go to.
    #[cfg(test)]
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Where the prompt budget comes from, for the transcript.
    pub(super) fn budget_source(&self) -> String {
        match (self.prompt_budget, self.context_tokens) {
            (Some(b), _) => format!("prompt_budget {b} tokens"),
            (None, Some(c)) => format!(
                "context_tokens {c} less the output bound and {TEMPLATE_TOKENS} for the chat template"
            ),
            (None, None) => "the default limit".into(),
        }
    }
}

/// Whether `host` (as in a URL) is this machine.
pub(super) fn is_loopback(host: &str) -> bool {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    h.eq_ignore_ascii_case("localhost")
        || h.parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}
