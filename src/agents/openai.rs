//! The `openai` driver: a model behind an OpenAI-compatible chat-completions endpoint
//! (Ollama, llama.cpp's `llama-server`, vLLM, hosted APIs), with no agent CLI in between.
//!
//! Configuration (`[agents.<name>]`): `driver = "openai"`, `url` (the API base, such as
//! `http://127.0.0.1:11434/v1`; `<url>/chat/completions` is called), `model`, and optionally
//! `timeout` (per answer, default [`process::DEFAULT_TIMEOUT`]) and `env.OPENAI_API_KEY`. The
//! key is taken from the agent's `env`, else from the process environment, else there is none
//! (local servers need none); it is sent as `Authorization: Bearer` only when there is one.
//! `max_output_tokens` bounds every answer (sent as `max_tokens`; the default depends on the
//! role, see [`default_output_tokens`]); `context_tokens` and `prompt_budget` bound the
//! prompt, whose largest documents are summarised to fit (see [`prompt::compose_within`]).
//!
//! Answers are streamed: the driver reads the server-sent events as they come, counts the
//! tokens on the task's meter, and stops reading once the result block is complete or the
//! output bound is passed, so a model that loops costs at most the bound. A server that
//! refuses a prompt for its length fails the task at once, with the prompt's size and the
//! server's limit.
//!
//! One run: the role's instructions are the system message, the prompt (built like the CLI
//! drivers' by [`prompt::compose`], plus a note that the model has no tools) the user
//! message. Transient failures (a refused or reset connection, HTTP 429, HTTP 5xx) are
//! retried with backoff; other HTTP errors fail the task at once with the server's message;
//! a request that takes longer than the timeout fails the task. Agent failures come back as
//! a `Failed` outcome, never as an error, with the raw response body kept in
//! [`DriverOutput::raw`].
//!
//! A chat model cannot touch files, so code tasks work differently: the prompt shows the
//! repository's files (those the task names, or all of them when the repository is small)
//! and asks for the change as one unified diff in a fenced `diff` block. The driver refuses a
//! diff that touches `.git/` or `.tlv4/` or leaves the tree, and applies the others with
//! `git apply` in the task's working directory. An answer whose result block breaks the
//! contract is sent back with the problem (at most [`CONTRACT_TRIES`] answers in all), and a
//! diff that does not apply is sent back once; nothing is applied until both are right.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::command::{Driver, DriverOutput, RunContext, Usage};
use super::config::AgentSpec;
use super::contract::{self, CONTRACT_TRIES, Turn};
use super::meter::Meter;
use super::process::{self, RetryPolicy};
use super::prompt::{self, PROMPT_LIMIT, RoleSpecs};
use super::result::{self, Deliverable};
use super::{Outcome, TaskInput, TaskOutput};
use tlv4_core::error::{Error, Result};
use tlv4_core::model::Role;

/// The environment variable holding the API key, in the agent's `env` or the process's.
pub const API_KEY_ENV: &str = "OPENAI_API_KEY";
/// The largest response body read.
const RESPONSE_LIMIT: u64 = 16 * 1024 * 1024;
/// Room in the prompt for the code of a code task: file contents…
const CODE_BUDGET: usize = 64 * 1024;
/// … and the listing of the files not shown.
const LISTING_BUDGET: usize = 24 * 1024;
/// A file larger than this is listed, not shown.
const CODE_FILE_LIMIT: usize = 32 * 1024;
/// How many answers may carry a diff that does not apply.
const PATCH_TRIES: u32 = 2;
/// Tokens kept free in `context_tokens` for the chat template the server wraps the messages
/// in.
const TEMPLATE_TOKENS: u64 = 256;
/// The smallest prompt `context_tokens` must leave room for beside `max_output_tokens`.
const MIN_PROMPT_TOKENS: u64 = 1024;
/// How many streamed chunks past the output bound are read before the stream is closed (a
/// server that ignores `max_tokens`; one that honours it stops at the bound by itself).
const BOUND_SLACK: u64 = 16;

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

/// What every prompt of this driver says about the setting.
const CHAT_NOTE: &str = "You are answering through a chat API: you cannot read or write files, \
    run commands or use tools. Everything you get is in this message; files that are only \
    listed by path are not available to you, so work from what is shown.";

/// How a code task hands over its change.
const HANDOVER: &str = "# How to hand over your change\n\n\
    You cannot edit files here, so the instructions above about changing the files of your \
    working directory mean this: give your whole change as ONE unified diff (the format of \
    `git diff`) in a fenced code block tagged `diff`, then end your answer with the result \
    block.\n\n\
    - Paths are relative to the repository root, with `a/` and `b/` prefixes: \
    `--- a/src/lib.rs` and `+++ b/src/lib.rs`. A new file has `--- /dev/null`, a deleted one \
    `+++ /dev/null`.\n\
    - Copy the context lines and the removed lines exactly from the files shown under \"The \
    code\": git-tlv4 applies the diff with `git apply`, and a diff that does not apply is sent \
    back once.\n\
    - Never touch `.git/` or `.tlv4/`.\n\
    - List the files the diff changes in `files_modified`. If no change is needed, send no \
    diff and leave `files_modified` empty.\n";

/// The driver of one agent on an OpenAI-compatible endpoint.
pub struct OpenAiDriver {
    agent: String,
    endpoint: String,
    model: String,
    api_key: Option<String>,
    specs: RoleSpecs,
    timeout: Duration,
    retry: RetryPolicy,
    http: ureq::Agent,
    /// `max_output_tokens`, if configured.
    max_output: Option<u64>,
    /// `context_tokens`, if configured.
    context_tokens: Option<u64>,
    /// `prompt_budget` (estimated tokens), if configured.
    prompt_budget: Option<u64>,
    /// Whether the server wants the bound as `max_completion_tokens` (it refused
    /// `max_tokens` once).
    completion_field: AtomicBool,
    /// Whether the server refused the streaming fields once: requests ask for a plain answer.
    plain: AtomicBool,
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
    fn build(
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
            Some(t) => process::parse_duration(t)
                .map_err(|e| Error::Invalid(format!("agent `{agent}`: `timeout`: {e}")))?,
            None => process::DEFAULT_TIMEOUT,
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
    pub fn with_retry(mut self, retry: RetryPolicy) -> OpenAiDriver {
        self.retry = retry;
        self
    }

    /// The URL requests go to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    fn failed(&self, reason: &str) -> TaskOutput {
        contract::failed(&format!("agent `{}` (openai)", self.agent), reason)
    }

    /// One question, with retries of transient failures. The answer is streamed when the
    /// server streams, read whole when it answers plain JSON.
    fn chat(&self, q: &Question<'_>, log: &mut String) -> Exchange {
        let tries = self.retry.tries.max(1);
        let mut pause = self.retry.backoff;
        let mut seconds = 0.0;
        let mut n = 0;
        let mut switched = false;
        loop {
            n += 1;
            let last = n >= tries;
            let field = if self.completion_field.load(Ordering::Relaxed) {
                "max_completion_tokens"
            } else {
                "max_tokens"
            };
            let plain = self.plain.load(Ordering::Relaxed);
            let body = self.request_body(q, field, plain);
            let started = Instant::now();
            let sent = self.post(&body, q);
            let took = started.elapsed().as_secs_f64();
            seconds += took;
            let after = if n > 1 {
                format!(" (after {n} tries)")
            } else {
                String::new()
            };
            self.log_answer(log, q, n, field, &sent, took);
            match sent {
                Ok(Response {
                    status,
                    text,
                    stream: Some(st),
                    ..
                }) if (200..300).contains(&status) => {
                    return self.streamed(q, st, text, seconds);
                }
                Ok(Response { status, text, .. }) if (200..300).contains(&status) => {
                    return answered(q, text, seconds);
                }
                Ok(Response { status, text, .. }) if status == 400 && too_long(&text) => {
                    let reason = self.too_long_reason(q, &text);
                    return failure(reason, text, seconds);
                }
                Ok(Response { status, text, .. })
                    if status == 400
                        && !switched
                        && field == "max_tokens"
                        && server_message(&text).contains("max_completion_tokens") =>
                {
                    // OpenAI's newer models take the bound under its newer name only.
                    switched = true;
                    self.completion_field.store(true, Ordering::Relaxed);
                    n -= 1;
                    continue;
                }
                Ok(Response { status, text, .. })
                    if status == 400 && !plain && refuses_streaming(&server_message(&text)) =>
                {
                    // A server that cannot stream (or does not know `stream_options`) is asked
                    // for a plain answer, now and from then on.
                    self.plain.store(true, Ordering::Relaxed);
                    n -= 1;
                    continue;
                }
                Ok(Response { status, .. }) if !last && (status == 429 || status >= 500) => {}
                Ok(Response { status, text, .. }) => {
                    return self.refused(q, status, text, &after, seconds);
                }
                Err(Sent::Timeout) => {
                    let reason = format!(
                        "{} did not answer within {}; the request was abandoned",
                        self.endpoint,
                        self.allowed(q)
                    );
                    return failure(reason, String::new(), seconds);
                }
                Err(Sent::Transient(_)) if !last => {}
                Err(Sent::Transient(e) | Sent::Other(e)) => {
                    let reason = format!("cannot reach {}{after}: {e}", self.endpoint);
                    q.meter.api_error(&reason);
                    return failure(reason, String::new(), seconds);
                }
            }
            // A server that says how long to wait is taken at its word.
            let asked = match &sent {
                Ok(r) => r.wait,
                Err(_) => None,
            };
            std::thread::sleep(asked.unwrap_or(pause));
            pause *= 2;
        }
    }

    /// The JSON body of one request: the two messages, the output bound under `field`, and
    /// streaming (with usage) unless the server answers `plain` only.
    fn request_body(&self, q: &Question<'_>, field: &str, plain: bool) -> String {
        let mut body = json!({
            "model": self.model,
            "messages": [
                {"role": "system", "content": q.system},
                {"role": "user", "content": q.user},
            ],
            "temperature": 0,
            "stream": !plain,
            field: q.bound,
        });
        if !plain {
            body["stream_options"] = json!({"include_usage": true});
        }
        body.to_string()
    }

    /// Appends request `n`'s answer to the exchange log: how it ended, how long it took, and
    /// the response text.
    fn log_answer(
        &self,
        log: &mut String,
        q: &Question<'_>,
        n: u32,
        field: &str,
        sent: &std::result::Result<Response, Sent>,
        took: f64,
    ) {
        let ending = match sent {
            Ok(r) => match &r.stream {
                Some(st) => format!(
                    "HTTP {}, streamed: {} chunks, {}",
                    r.status,
                    st.chunks,
                    st.ended.describe()
                ),
                None => format!("HTTP {}", r.status),
            },
            Err(e) => format!("no answer: {e}"),
        };
        log.push_str(&format!(
            "=== answer {} (request {n}): POST {} ({field} {}) ===\n{ending}, {took:.3}s\n\
             --- response ---\n{}\n",
            q.answer_no,
            self.endpoint,
            q.bound,
            sent.as_ref().map(|r| r.text.trim_end()).unwrap_or_default()
        ));
    }

    /// The exchange of a streamed answer: the answer, or why the stream did not give one.
    fn streamed(&self, q: &Question<'_>, st: Streamed, text: String, seconds: f64) -> Exchange {
        let mut usage = st.usage;
        usage.seconds = seconds;
        let cut = (st.ended == Ended::Bound || st.finish.as_deref() == Some("length"))
            .then(|| cut_problem(&st.answer, q.bound));
        let reply = match st.ended {
            Ended::Broke(e) => Err(format!(
                "the stream from {} broke off after {} chunks: {e}",
                self.endpoint, st.chunks
            )),
            Ended::Timeout => Err(format!(
                "{} did not finish its answer within {}; the stream was closed \
                 after {} chunks",
                self.endpoint,
                self.allowed(q),
                st.chunks
            )),
            Ended::Error(e) => Err(format!("the server reported an error in the stream: {e}")),
            _ if st.answer.trim().is_empty() => Err(format!(
                "the model's answer has no text (finish_reason: {})",
                st.finish.as_deref().unwrap_or("not given")
            )),
            _ => Ok(st.answer.clone()),
        };
        Exchange {
            reply,
            body: text,
            usage,
            cut,
        }
    }

    /// The exchange of an HTTP error that is not retried; the service's own failures (down,
    /// overloaded, refusing the credentials) are counted as API errors, not bad answers.
    fn refused(
        &self,
        q: &Question<'_>,
        status: u16,
        text: String,
        after: &str,
        seconds: f64,
    ) -> Exchange {
        let reason = format!(
            "{} answered HTTP {status}{after}: {}",
            self.endpoint,
            server_message(&text)
        );
        // The service is down, overloaded or refuses the credentials: an API
        // error, not a bad answer.
        if matches!(status, 401 | 403 | 429) || status >= 500 {
            q.meter.api_error(&reason);
        }
        failure(reason, text, seconds)
    }

    /// Why a prompt refused for its length failed the task: the server's words, the prompt's
    /// size, the limit where the server gives it, and what to set.
    fn too_long_reason(&self, q: &Question<'_>, body: &str) -> String {
        let chars = q.system.chars().count() + q.user.chars().count();
        let estimated = chars.div_ceil(prompt::CHARS_PER_TOKEN);
        let (limit, counted) = context_numbers(body);
        let mut reason = format!(
            "the server refused the prompt as longer than the model's context (HTTP 400: {}); \
             the prompt was {chars} characters, ~{estimated} tokens estimated",
            server_message(body)
        );
        if let Some(c) = counted {
            reason.push_str(&format!(" ({c} tokens as the server counted them)"));
        }
        match limit {
            Some(l) => reason.push_str(&format!("; the server's limit is {l} tokens")),
            None => reason.push_str("; the server did not say its limit"),
        }
        reason.push_str("; the prompt was not sent again. ");
        let agent = &self.agent;
        match (self.context_tokens, limit) {
            (None, Some(l)) => reason.push_str(&format!(
                "Set `context_tokens = {l}` under [agents.{agent}] in .tlv4.toml: prompts are \
                 then built to fit, the largest documents summarised"
            )),
            (None, None) => reason.push_str(&format!(
                "Set `context_tokens` under [agents.{agent}] in .tlv4.toml to the server's \
                 context size: prompts are then built to fit, the largest documents summarised"
            )),
            (Some(c), _) => reason.push_str(&format!(
                "`context_tokens` is {c}: lower it, `prompt_budget` or `max_output_tokens` under \
                 [agents.{agent}], or give the server a larger context"
            )),
        }
        reason
    }

    /// One request: the status and what came back (read whole, or streamed), or why nothing
    /// did.
    /// How long a request of `q` may take from now: the agent's timeout, cut short at the
    /// deadline of the run.
    fn limit(&self, q: &Question<'_>) -> Duration {
        super::command::bounded(self.timeout, q.deadline)
    }

    /// The time a request of `q` that ran out of it had, in words.
    fn allowed(&self, q: &Question<'_>) -> String {
        match q.deadline {
            Some(d) if Instant::now() >= d => {
                "the time the run had left (its deadline, a discussion turn's limit)".into()
            }
            _ => human(self.timeout),
        }
    }

    fn post(&self, body: &str, q: &Question<'_>) -> std::result::Result<Response, Sent> {
        let mut req = self
            .http
            .post(&self.endpoint)
            .header("Content-Type", "application/json")
            .header("Accept", "text/event-stream, application/json");
        if let Some(key) = &self.api_key {
            req = req.header("Authorization", format!("Bearer {}", key.trim()));
        }
        if q.deadline.is_some() {
            req = req.config().timeout_global(Some(self.limit(q))).build();
        }
        let mut resp = req.send(body.as_bytes()).map_err(Sent::from)?;
        let status = resp.status().as_u16();
        // How long a server asks to be left alone (a rate limit), up to a minute.
        let wait = resp
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(|s| Duration::from_secs(s.min(60)));
        let streamed = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.to_ascii_lowercase().contains("text/event-stream"));
        if streamed && (200..300).contains(&status) {
            let reader = resp.body_mut().with_config().limit(RESPONSE_LIMIT).reader();
            let st = read_stream(reader, q.bound, q.meter);
            // Dropping the response here closes a stream left unread.
            drop(resp);
            return Ok(Response {
                status,
                text: st.raw.clone(),
                wait,
                stream: Some(st),
            });
        }
        let text = resp
            .body_mut()
            .with_config()
            .limit(RESPONSE_LIMIT)
            .lossy_utf8(true)
            .read_to_string()
            .map_err(Sent::from)?;
        Ok(Response {
            status,
            text,
            wait,
            stream: None,
        })
    }

    /// The prompt of a task: the system message (the role's instructions) and the first user
    /// message.
    fn messages(&self, input: &TaskInput, workdir: &Path) -> Messages {
        let task = &input.task;
        let code = task.role.writes_code();
        let system = strip_comment(&self.specs.role(task.role.as_str()))
            .trim()
            .to_owned();
        let template = if task.role == Role::Writer {
            self.specs.template(&task.phase)
        } else {
            None
        };
        // The budget holds both messages and what a retry adds.
        let limit = self.prompt_limit(&task.role);
        let retry_reserve = prompt::RETRY_RESERVE.min(limit / 5);
        let avail = limit.saturating_sub(retry_reserve + system.len());
        let code_budget = CODE_BUDGET.min(avail * 2 / 5);
        let listing_budget = LISTING_BUDGET.min(avail / 10);
        let reserve = if code {
            code_budget + listing_budget + HANDOVER.len() + 1024
        } else {
            1024
        };
        let composed = prompt::compose_within(input, "", template, avail.saturating_sub(reserve));
        let base = &composed.text;
        // `compose` put the (here empty) role instructions under the first heading; they are
        // in the system message instead.
        let heading = format!("# Your role: {}\n\n", task.role);
        let mut user = match base.strip_prefix(&heading) {
            Some(rest) => format!(
                "{heading}Your instructions are in the system message.\n\n{CHAT_NOTE}\n\n{}",
                rest.trim_start_matches('\n')
            ),
            None => format!("{CHAT_NOTE}\n\n{base}"),
        };
        if code {
            let section = code_section(input, workdir, &user, code_budget, listing_budget);
            match user.rfind("\n# Result\n") {
                Some(at) => user.insert_str(at + 1, &section),
                None => user.push_str(&section),
            }
            user.push('\n');
            user.push_str(HANDOVER);
        }
        let size = system.len() + user.len();
        let mut report = composed.report();
        report.push_str(&format!(
            "; with the system message {} characters (~{} tokens estimated) of a budget of {limit} \
             bytes ({}), {retry_reserve} of them kept for a retry",
            system.chars().count() + user.chars().count(),
            (system.chars().count() + user.chars().count()).div_ceil(prompt::CHARS_PER_TOKEN),
            self.budget_source()
        ));
        if size + retry_reserve > limit {
            report.push_str("; OVER the budget: the parts that are never cut do not fit");
        }
        Messages {
            system,
            user,
            report,
            retry_reserve,
        }
    }

    /// Where the prompt budget comes from, for the transcript.
    fn budget_source(&self) -> String {
        match (self.prompt_budget, self.context_tokens) {
            (Some(b), _) => format!("prompt_budget {b} tokens"),
            (None, Some(c)) => format!(
                "context_tokens {c} less the output bound and {TEMPLATE_TOKENS} for the chat template"
            ),
            (None, None) => "the default limit".into(),
        }
    }

    /// Applies the diff of a code task's answer in `workdir`. `Ok` when it applied (or no
    /// change was needed); the problem otherwise.
    fn hand_over(
        &self,
        text: &str,
        output: &mut TaskOutput,
        workdir: &Path,
        scratch: &Path,
        answer_no: u32,
        log: &mut String,
    ) -> std::result::Result<(), Handover> {
        let patch = extract_patch(text).map_err(Handover::Patch)?;
        let Some(patch) = patch else {
            return if output.state_update.files_modified.is_empty() {
                Ok(())
            } else {
                Err(Handover::NoPatch)
            };
        };
        let file = scratch.join(format!("patch-{answer_no}.diff"));
        std::fs::write(&file, &patch).map_err(|e| {
            Handover::Local(Error::io(format!("cannot write {}", file.display()), e))
        })?;
        let paths = patch_paths(workdir, &file).map_err(|e| {
            log.push_str(&format!("--- git apply --numstat ---\n{e}\n"));
            Handover::Patch(format!("git cannot read your diff: {e}"))
        })?;
        for p in &paths {
            if let Some(why) = refusal(p) {
                log.push_str(&format!("--- refused ---\n{p}: {why}\n"));
                return Err(Handover::Patch(format!(
                    "your diff touches `{p}`, which {why}; nothing was applied"
                )));
            }
        }
        git_apply(workdir, &file).map_err(|e| {
            log.push_str(&format!("--- git apply ---\n{e}\n"));
            Handover::Patch(format!("your diff does not apply: {e}"))
        })?;
        log.push_str(&format!(
            "--- git apply ---\napplied: {}\n",
            paths.join(", ")
        ));
        if !paths.is_empty() {
            output.state_update.files_modified = paths;
        }
        Ok(())
    }
}

impl Driver for OpenAiDriver {
    fn name(&self) -> &str {
        &self.agent
    }

    fn run(&self, input: &TaskInput, ctx: &RunContext) -> Result<DriverOutput> {
        let deliverable = Deliverable::of(&input.task.role);
        let code = deliverable == Deliverable::Code;
        let Messages {
            system,
            user: base,
            report,
            retry_reserve,
        } = self.messages(input, &ctx.workdir);
        let bound = self.output_bound(&input.task.role);

        let scratch_dir = ctx.scratch()?;
        let scratch = scratch_dir.path().to_path_buf();

        let mut usage = Usage {
            model: Some(self.model.clone()),
            ..Usage::default()
        };
        let mut transcript = format!(
            "=== prompt: {report}; output bound {bound} tokens ===\n=== system message ===\n{system}\n"
        );
        let mut bad_patches = 0;
        // What the last question and its response were.
        let mut record = String::new();
        let mut raw = String::new();
        let settled = contract::negotiate(&base, retry_reserve, |answer_no, user| {
            record = format!("[system]\n{system}\n\n[user]\n{user}");
            if ctx.run_dir.is_some() {
                let file = scratch.join("prompt.md");
                std::fs::write(&file, &record)
                    .map_err(|e| Error::io(format!("cannot write {}", file.display()), e))?;
            }
            let q = Question {
                system: &system,
                user,
                bound,
                answer_no,
                meter: &ctx.meter,
                deadline: ctx.deadline,
            };
            let ex = self.chat(&q, &mut transcript);
            usage.add(&ex.usage);
            raw = ex.body.clone();
            let text = match &ex.reply {
                Ok(text) => text,
                Err(reason) => return Ok(Turn::Failed(reason.clone())),
            };
            let parsed = result::parse_in(text, deliverable, Some(&ctx.workdir));
            // An answer the bound cut short is sent back as that, whatever else is wrong.
            let parsed = match (parsed, &ex.cut) {
                (Err(e), Some(cut)) => Err(result::ContractError {
                    message: format!("{cut}\n\n(What git-tlv4 found: {e})"),
                }),
                (p, _) => p,
            };
            let problem = match parsed {
                Err(e) if code => format!(
                    "{e}\n\nNothing of this answer was applied: send the whole answer again, \
                     the ```diff block and the result block."
                ),
                Err(e) => e.message,
                Ok(output) if !code || output.outcome != Outcome::Completed => {
                    return Ok(Turn::Done(output));
                }
                Ok(mut output) => match self.hand_over(
                    text,
                    &mut output,
                    &ctx.workdir,
                    &scratch,
                    answer_no,
                    &mut transcript,
                ) {
                    Ok(()) => return Ok(Turn::Done(output)),
                    Err(Handover::Local(e)) => return Err(e),
                    // Sent back like any other broken contract.
                    Err(Handover::NoPatch) => "the answer carried no patch: it lists changed \
                                               files in `files_modified` but has no ```diff \
                                               block. Send the change as one ```diff block, \
                                               then the result block."
                        .to_owned(),
                    Err(Handover::Patch(p)) => {
                        bad_patches += 1;
                        if bad_patches >= PATCH_TRIES || answer_no >= CONTRACT_TRIES {
                            return Ok(Turn::Failed(format!("its change was not applied: {p}")));
                        }
                        format!(
                            "{p}\n\nThe files are unchanged, as shown above. Send the whole \
                             change again as one diff against them, then the result block."
                        )
                    }
                },
            };
            Ok(Turn::Rejected {
                problem,
                answer: text.clone(),
            })
        })?;
        let output = settled.unwrap_or_else(|reason| self.failed(&reason));
        if let Some(dir) = &ctx.run_dir {
            let _ = std::fs::write(dir.join("transcript.txt"), &transcript);
        }
        Ok(DriverOutput {
            output,
            prompt: record,
            raw,
            transcript: Some(transcript),
            usage,
        })
    }
}

/// The messages of a task's first question.
struct Messages {
    system: String,
    user: String,
    /// The prompt's size, budget and what was left out, for the transcript.
    report: String,
    /// Bytes kept free in the budget for what a retry adds.
    retry_reserve: usize,
}

/// The exchange of a plain (not streamed) successful answer: the completion's text, or
/// why the body is not one.
fn answered(q: &Question<'_>, text: String, seconds: f64) -> Exchange {
    let mut ex = match completion(&text) {
        Ok((answer, usage, finish)) => Exchange {
            cut: (finish.as_deref() == Some("length")).then(|| cut_problem(&answer, q.bound)),
            reply: Ok(answer),
            body: text,
            usage,
        },
        Err(reason) => failure(reason, text, seconds),
    };
    q.meter.add(ex.usage.output_tokens);
    ex.usage.seconds = seconds;
    ex
}

/// A failed exchange: `reason`, the response body, and the seconds spent so far.
fn failure(reason: String, body: String, seconds: f64) -> Exchange {
    Exchange {
        reply: Err(reason),
        body,
        usage: Usage {
            seconds,
            ..Usage::default()
        },
        cut: None,
    }
}

/// What one question came to.
struct Exchange {
    /// The answer's text, or why there is none.
    reply: std::result::Result<String, String>,
    /// The last response body (a stream: what arrived of it).
    body: String,
    /// Tokens, model and time.
    usage: Usage,
    /// The problem to send back when the answer was cut at the output bound and its result
    /// block is not valid.
    cut: Option<String>,
}

/// One question to the model.
struct Question<'a> {
    system: &'a str,
    user: &'a str,
    /// The output bound, in tokens.
    bound: u64,
    answer_no: u32,
    /// Counts the tokens as they arrive.
    meter: &'a Meter,
    /// When the run must be over (a discussion turn's limit), if sooner than the timeout.
    deadline: Option<Instant>,
}

/// One response.
struct Response {
    status: u16,
    /// The body as read; for a stream, the lines that arrived.
    text: String,
    /// What `Retry-After` asks for.
    wait: Option<Duration>,
    /// The answer assembled from a stream, if the server streamed.
    stream: Option<Streamed>,
}

/// An answer read from a server-sent event stream.
struct Streamed {
    /// The text of the content deltas, joined.
    answer: String,
    /// The lines that arrived, as they arrived (at most [`RESPONSE_LIMIT`] bytes).
    raw: String,
    /// Chunks that carried text (each about one token).
    chunks: u64,
    /// The last `finish_reason` given.
    finish: Option<String>,
    /// What the server reported (`usage` of the last chunk, with `include_usage`), else the
    /// chunks counted as output tokens.
    usage: Usage,
    ended: Ended,
}

/// How reading a stream ended.
#[derive(Debug, Clone, PartialEq)]
enum Ended {
    /// `data: [DONE]`.
    Done,
    /// The server closed the stream without `[DONE]`.
    Eof,
    /// The result block was complete: the rest was not read.
    Complete,
    /// More chunks than the output bound arrived: the rest was not read.
    Bound,
    /// An `error` object came in the stream.
    Error(String),
    /// The request's time ran out while reading.
    Timeout,
    /// The connection failed, or more than [`RESPONSE_LIMIT`] arrived.
    Broke(String),
}

impl Ended {
    fn describe(&self) -> String {
        match self {
            Ended::Done => "ended with [DONE]".into(),
            Ended::Eof => "closed by the server without [DONE]".into(),
            Ended::Complete => "result block complete, the stream closed by git-tlv4".into(),
            Ended::Bound => "past the output bound, the stream closed by git-tlv4".into(),
            Ended::Error(e) => format!("the server reported an error: {e}"),
            Ended::Timeout => "timed out".into(),
            Ended::Broke(e) => format!("broke off: {e}"),
        }
    }
}

/// Reads a chat-completions event stream: `data: {json}` lines with `choices[0].delta`, up to
/// `data: [DONE]`. Stops early, leaving the rest unread, when [`BOUND_SLACK`] more chunks
/// came after the answer's result block was complete (the contract says nothing follows it;
/// what does is not part of the answer), or when more than `bound` chunks (plus
/// [`BOUND_SLACK`]) came from a server that ignores the bound.
fn read_stream(reader: impl Read, bound: u64, meter: &Meter) -> Streamed {
    let mut reader = BufReader::new(reader);
    let mut st = Streamed {
        answer: String::new(),
        raw: String::new(),
        chunks: 0,
        finish: None,
        usage: Usage::default(),
        ended: Ended::Eof,
    };
    let mut reported = false;
    // Chunks read after the result block was complete.
    let mut after: Option<u64> = None;
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                st.ended = match e.kind() {
                    std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => Ended::Timeout,
                    _ => Ended::Broke(e.to_string()),
                };
                break;
            }
        }
        let text = String::from_utf8_lossy(&line);
        st.raw.push_str(&text);
        let Some(data) = text.trim_end().strip_prefix("data:") else {
            // Comments (`: ping`), `event:` and `id:` lines, blank separators.
            continue;
        };
        let data = data.trim();
        if data == "[DONE]" {
            st.ended = Ended::Done;
            break;
        }
        let Ok(chunk) = serde_json::from_str::<Value>(data) else {
            continue;
        };
        if chunk.get("error").is_some_and(|e| !e.is_null()) {
            st.ended = Ended::Error(server_message(data));
            break;
        }
        if let Some(m) = chunk["model"].as_str().filter(|m| !m.is_empty()) {
            st.usage.model = Some(m.to_owned());
        }
        if let Some(u) = chunk.get("usage").filter(|u| u.is_object()) {
            reported = true;
            st.usage.input_tokens = u["prompt_tokens"].as_u64().unwrap_or(0);
            st.usage.output_tokens = u["completion_tokens"].as_u64().unwrap_or(0);
        }
        let choice = &chunk["choices"][0];
        if let Some(f) = choice["finish_reason"].as_str() {
            st.finish = Some(f.to_owned());
        }
        let delta = &choice["delta"];
        let content = delta["content"].as_str().unwrap_or("");
        // Reasoning models stream their thinking apart from the answer: it counts as tokens.
        let thinking = delta["reasoning_content"]
            .as_str()
            .or(delta["reasoning"].as_str())
            .unwrap_or("");
        if content.is_empty() && thinking.is_empty() {
            continue;
        }
        st.chunks += 1;
        meter.add(1);
        if let Some(n) = after.as_mut() {
            // Past the result block: a few chunks are read for the usage and `[DONE]` that a
            // server sends right after the answer's end; a model that goes on is cut off.
            *n += 1;
            if *n > BOUND_SLACK {
                st.ended = Ended::Complete;
                break;
            }
            continue;
        }
        st.answer.push_str(content);
        if content.contains('`') && result_complete(&st.answer) {
            after = Some(0);
            continue;
        }
        if st.chunks >= bound.saturating_add(BOUND_SLACK) {
            st.ended = Ended::Bound;
            break;
        }
    }
    if !reported {
        st.usage.output_tokens = st.chunks;
    }
    st
}

/// Whether `text` just closed a fenced block and its result block is a complete result
/// object (one with `summary` and `state_update`).
fn result_complete(text: &str) -> bool {
    let last = text.trim_end().rsplit('\n').next().unwrap_or("").trim();
    if last.len() < 3 || !last.chars().all(|c| c == '`') {
        return false;
    }
    result::extract(text)
        .ok()
        .and_then(|body| serde_json::from_str::<Value>(body).ok())
        .is_some_and(|v| v.get("summary").is_some() && v.get("state_update").is_some())
}

/// The problem of an answer the output bound cut short, for the model.
fn cut_problem(answer: &str, bound: u64) -> String {
    let started = answer.contains("```json") || answer.contains("```JSON");
    let state = if started {
        "before its result block was closed"
    } else {
        "before its result block began"
    };
    format!(
        "your answer reached the output bound of {bound} tokens {state}, so it was cut off. \
         Answer again, shorter: no preamble and no repetition, the work itself and then the \
         result block."
    )
}

/// Whether an error message is about the streaming fields: `stream_options`, `stream`
/// quoted, or streaming.
fn refuses_streaming(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    [
        "stream_options",
        "streaming",
        "'stream'",
        "\"stream\"",
        "`stream`",
    ]
    .iter()
    .any(|w| m.contains(w))
}

/// Whether an HTTP 400 body says the prompt is longer than the model's context (llama.cpp's
/// `exceed_context_size_error`, OpenAI's `context_length_exceeded`, and the words servers use).
fn too_long(body: &str) -> bool {
    let b = body.to_ascii_lowercase();
    [
        "context_length_exceeded",
        "exceed_context_size",
        "exceeds the available context size",
        "maximum context length",
        "context length",
        "context window",
        "prompt is too long",
        "too many tokens",
    ]
    .iter()
    .any(|m| b.contains(m))
}

/// The context size and the prompt's tokens, as far as a refusal gives them: llama.cpp's
/// `n_ctx` and `n_prompt_tokens`, or OpenAI's "maximum context length is N tokens … resulted
/// in M tokens".
fn context_numbers(body: &str) -> (Option<u64>, Option<u64>) {
    let v: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let err = &v["error"];
    let field = |k: &str| err[k].as_u64().or(v[k].as_u64());
    let msg = server_message(body).to_ascii_lowercase();
    let after = |phrase: &str| {
        let at = msg.find(phrase)? + phrase.len();
        let digits: String = msg[at..]
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == ',')
            .filter(char::is_ascii_digit)
            .collect();
        digits.parse::<u64>().ok()
    };
    let limit = field("n_ctx")
        .or_else(|| after("maximum context length is"))
        .or_else(|| after("context size of"))
        .or_else(|| after("context length of"));
    let counted = field("n_prompt_tokens")
        .or_else(|| after("resulted in"))
        .or_else(|| after("you requested"));
    (limit, counted)
}

/// Why a request got no response.
enum Sent {
    /// It took longer than the timeout.
    Timeout,
    /// A failure that may pass (a refused or reset connection).
    Transient(String),
    /// Anything else.
    Other(String),
}

impl From<ureq::Error> for Sent {
    fn from(e: ureq::Error) -> Sent {
        use std::io::ErrorKind as K;
        match &e {
            ureq::Error::Timeout(_) => Sent::Timeout,
            ureq::Error::Io(io) if matches!(io.kind(), K::TimedOut | K::WouldBlock) => {
                Sent::Timeout
            }
            ureq::Error::Io(io)
                if matches!(
                    io.kind(),
                    K::ConnectionRefused
                        | K::ConnectionReset
                        | K::ConnectionAborted
                        | K::NotConnected
                        | K::BrokenPipe
                        | K::UnexpectedEof
                ) =>
            {
                Sent::Transient(e.to_string())
            }
            ureq::Error::ConnectionFailed | ureq::Error::Protocol(_) => {
                Sent::Transient(e.to_string())
            }
            _ => Sent::Other(e.to_string()),
        }
    }
}

impl std::fmt::Display for Sent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Sent::Timeout => f.write_str("timed out"),
            Sent::Transient(e) | Sent::Other(e) => f.write_str(e),
        }
    }
}

/// Why the change of a code task's answer was not applied.
enum Handover {
    /// The answer lists changed files but carries no diff.
    NoPatch,
    /// The diff is refused or does not apply; worded for the agent.
    Patch(String),
    /// A local failure (the run directory).
    Local(Error),
}

/// The answer's text and usage from a chat-completions response body.
fn completion(body: &str) -> std::result::Result<(String, Usage, Option<String>), String> {
    let value: Value = serde_json::from_str(body).map_err(|e| {
        format!(
            "the server's response is not valid JSON ({e}); it begins: {}",
            excerpt(body, 200)
        )
    })?;
    let Some(choice) = value
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
    else {
        return Err(match value.get("error") {
            Some(_) => format!("the server reported an error: {}", server_message(body)),
            None => format!(
                "the server's response has no `choices`; it begins: {}",
                excerpt(body, 200)
            ),
        });
    };
    let content = &choice["message"]["content"];
    let text = match content {
        Value::String(s) => s.clone(),
        // Some servers send a list of parts.
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    };
    if text.trim().is_empty() {
        let finish = choice["finish_reason"].as_str().unwrap_or("not given");
        return Err(format!(
            "the model's answer has no text (finish_reason: {finish})"
        ));
    }
    let tokens = |k: &str| value["usage"][k].as_u64().unwrap_or(0);
    let usage = Usage {
        input_tokens: tokens("prompt_tokens"),
        output_tokens: tokens("completion_tokens"),
        model: value["model"]
            .as_str()
            .filter(|m| !m.is_empty())
            .map(str::to_owned),
        ..Usage::default()
    };
    let finish = choice["finish_reason"].as_str().map(str::to_owned);
    Ok((text, usage, finish))
}

/// The error message in an error response (`{"error": {"message": …}}`, `{"error": "…"}`,
/// `{"detail": …}`), else the start of the body.
fn server_message(body: &str) -> String {
    if let Ok(v) = serde_json::from_str::<Value>(body) {
        let candidates = [
            &v["error"]["message"],
            &v["error"],
            &v["message"],
            &v["detail"],
        ];
        for c in candidates {
            if let Some(s) = c.as_str().filter(|s| !s.trim().is_empty()) {
                return excerpt(s, 500);
            }
        }
    }
    match excerpt(body, 500) {
        s if s.is_empty() => "(empty body)".to_owned(),
        s => s,
    }
}

/// The start of `text` on one line, at most `chars` characters.
fn excerpt(text: &str, chars: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > chars {
        format!("{}…", flat.chars().take(chars).collect::<String>())
    } else {
        flat
    }
}

/// Whether `host` (as in a URL) is this machine.
fn is_loopback(host: &str) -> bool {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    h.eq_ignore_ascii_case("localhost")
        || h.parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// `text` without a leading `<!-- … -->` comment.
fn strip_comment(text: &str) -> &str {
    let t = text.trim_start();
    match t
        .strip_prefix("<!--")
        .and_then(|r| r.find("-->").map(|i| &r[i + 3..]))
    {
        Some(rest) => rest.trim_start(),
        None => text,
    }
}

/// The files of `workdir` (tracked and untracked, not ignored), or of the task's code tree
/// when git cannot list them; never `.git` or `.tlv4`.
fn code_files(input: &TaskInput, workdir: &Path) -> Vec<String> {
    let listed = git(workdir)
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .split('\0')
                .filter(|p| !p.is_empty())
                .map(str::to_owned)
                .collect::<Vec<_>>()
        });
    let mut files =
        listed.unwrap_or_else(|| input.code.files().iter().map(|f| f.path.clone()).collect());
    files.retain(|p| refusal(p).is_none());
    files.sort();
    files.dedup();
    files
}

/// The code a code task sees: the text files `prompt` names (all of them when the repository
/// is small), within [`CODE_BUDGET`], and a listing of the rest.
fn code_section(
    input: &TaskInput,
    workdir: &Path,
    prompt: &str,
    code_budget: usize,
    listing_budget: usize,
) -> String {
    let file_limit = CODE_FILE_LIMIT.min(code_budget);
    let files = code_files(input, workdir);
    // Regular files only: a symlink might point anywhere.
    let sizes: Vec<Option<u64>> = files
        .iter()
        .map(|p| {
            std::fs::symlink_metadata(workdir.join(p))
                .ok()
                .filter(|m| m.is_file())
                .map(|m| m.len())
        })
        .collect();
    let total: u64 = sizes.iter().flatten().sum();
    let mut order: Vec<usize> = if total as usize <= code_budget {
        (0..files.len()).collect()
    } else {
        let mut named: Vec<(usize, usize)> = files
            .iter()
            .enumerate()
            .filter(|(_, p)| p.len() >= 3)
            .filter_map(|(i, p)| prompt.find(p.as_str()).map(|at| (at, i)))
            .collect();
        named.sort();
        named.into_iter().map(|(_, i)| i).collect()
    };
    let mut used = 0;
    let mut shown = vec![false; files.len()];
    let mut body = String::new();
    order.retain(|&i| sizes[i].is_some_and(|s| s as usize <= file_limit));
    for i in order {
        let Ok(bytes) = std::fs::read(workdir.join(&files[i])) else {
            continue;
        };
        let Ok(text) = String::from_utf8(bytes) else {
            continue;
        };
        if text.contains('\0') || used + text.len() > code_budget {
            continue;
        }
        used += text.len();
        shown[i] = true;
        body.push_str(&format!("## {}\n\n", files[i]));
        body.push_str(&fenced(&text));
        body.push('\n');
    }
    let mut out = String::from("# The code\n\n");
    let n = shown.iter().filter(|s| **s).count();
    if files.is_empty() {
        out.push_str("The repository has no files yet.\n\n");
        return out;
    }
    out.push_str(&format!(
        "The repository has {} files. {n} of them are shown in full here (the ones the task \
         names, or all of them when the repository is small), exactly as they are now; the \
         others are only listed.\n\n",
        files.len()
    ));
    out.push_str(&body);
    let mut listing = String::new();
    let mut left = 0;
    for (i, p) in files.iter().enumerate().filter(|(i, _)| !shown[*i]) {
        let line = match sizes[i] {
            Some(s) => format!("- {p} ({s} bytes)\n"),
            None => format!("- {p}\n"),
        };
        if listing.len() + line.len() > listing_budget {
            left += 1;
        } else {
            listing.push_str(&line);
        }
    }
    if !listing.is_empty() {
        out.push_str("## Other files (not shown)\n\n");
        out.push_str(&listing);
        if left > 0 {
            out.push_str(&format!("- … and {left} more\n"));
        }
        out.push('\n');
    }
    out
}

/// `text` in a fenced block whose fence no line of it can close.
fn fenced(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    let fence = "`".repeat((longest + 1).max(3));
    format!("{fence}\n{}\n{fence}\n", text.trim_end_matches('\n'))
}

/// The diff of an answer: the bodies of its fenced `diff` (or `patch`) blocks, joined; `None`
/// when there is none; the problem when a block is not closed.
fn extract_patch(text: &str) -> std::result::Result<Option<String>, String> {
    let mut patch = String::new();
    let mut found = false;
    let mut lines = text.split_inclusive('\n');
    while let Some(line) = lines.next() {
        let l = line.trim_end();
        let ticks = l.chars().take_while(|&c| c == '`').count();
        if ticks < 3 {
            continue;
        }
        let info = l[ticks..].trim();
        let is_diff = info
            .split_whitespace()
            .next()
            .is_some_and(|w| ["diff", "patch", "udiff"].contains(&w.to_ascii_lowercase().as_str()));
        let mut body = String::new();
        let mut closed = false;
        for inner in lines.by_ref() {
            let t = inner.trim_end();
            if t.len() >= ticks && t.chars().all(|c| c == '`') {
                closed = true;
                break;
            }
            body.push_str(inner);
        }
        if !is_diff {
            continue;
        }
        if !closed {
            return Err(
                "the ```diff block is not closed; the answer may have been cut off — \
                        end the block with a line of three backticks"
                    .to_owned(),
            );
        }
        if !body.trim().is_empty() {
            found = true;
            patch.push_str(&body);
            if !patch.ends_with('\n') {
                patch.push('\n');
            }
        }
    }
    Ok(found.then_some(patch))
}

/// Why the diff may not touch `path` (relative to the repository root), if it may not.
fn refusal(path: &str) -> Option<&'static str> {
    let mut parts = path.split('/').filter(|c| !c.is_empty() && *c != ".");
    if path.starts_with('/') || path.contains('\\') || path.contains('\0') {
        return Some("is not a path inside the repository");
    }
    if parts.clone().any(|c| c == "..") {
        return Some("is outside the repository");
    }
    if parts.clone().any(|c| c.eq_ignore_ascii_case(".git")) {
        return Some("belongs to git (`.git`)");
    }
    if parts
        .next()
        .is_some_and(|c| c.eq_ignore_ascii_case(".tlv4"))
    {
        return Some("belongs to git-tlv4 (`.tlv4/`)");
    }
    None
}

/// `git` in `dir`, with no git location inherited from the environment.
fn git(dir: &Path) -> Command {
    tlv4_core::git::command(dir)
}

/// Every path the diff in `patch` touches, as git reads it (both sides of a rename).
fn patch_paths(workdir: &Path, patch: &Path) -> std::result::Result<Vec<String>, String> {
    let out = git(workdir)
        .args(["apply", "--numstat", "-z", "--recount"])
        .arg(patch)
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_owned());
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut tokens = text.split('\0');
    let mut paths = Vec::new();
    while let Some(t) = tokens.next() {
        if t.is_empty() {
            continue;
        }
        match t.splitn(3, '\t').nth(2) {
            Some(p) if !p.is_empty() => paths.push(p.to_owned()),
            // A rename or copy: the two paths follow.
            _ => paths.extend(tokens.by_ref().take(2).map(str::to_owned)),
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    paths.retain(|p| seen.insert(p.clone()));
    Ok(paths)
}

/// Applies `patch` in `workdir` (all of it or nothing); git's complaint otherwise.
fn git_apply(workdir: &Path, patch: &Path) -> std::result::Result<(), String> {
    let out = git(workdir)
        .args(["apply", "--whitespace=nowarn", "--recount"])
        .arg(patch)
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        let err = String::from_utf8_lossy(&out.stderr).trim().to_owned();
        Err(if err.is_empty() {
            format!("git apply failed ({})", out.status)
        } else {
            err
        })
    }
}

/// `20m`, `90s`, `1h30m`, `300ms`.
fn human(d: Duration) -> String {
    let s = d.as_secs();
    if s == 0 {
        return format!("{}ms", d.as_millis());
    }
    let (h, m, s) = (s / 3600, s / 60 % 60, s % 60);
    let mut out = String::new();
    for (n, unit) in [(h, "h"), (m, "m"), (s, "s")] {
        if n > 0 {
            out.push_str(&format!("{n}{unit}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::{SocketAddr, TcpListener, TcpStream};
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex, mpsc};

    use super::*;
    use crate::agents::command::tests::{ctx, executor_input, failure, writer_input};
    use crate::agents::prompt::RETRY_HEADING;
    use tlv4_core::testutil::git as hermetic_git;

    /// What the scripted server does with one connection.
    enum Step {
        /// Answers with this status and body.
        Http(u16, String),
        /// Answers 429 with `Retry-After: <seconds>`.
        Limited(u64),
        /// Reads the request and never answers.
        Hang,
        /// Reads the request and closes the connection.
        Close,
        /// Streams these content deltas as server-sent events, then goes on as `Tail` says.
        Sse(Vec<String>, Tail),
    }

    /// How a scripted stream goes on after its deltas.
    enum Tail {
        /// A last chunk with `finish_reason` and `usage`, then `data: [DONE]`.
        Done(&'static str),
        /// Garbage deltas until the client hangs up.
        Forever,
    }

    /// One request the server read.
    #[derive(Debug, Clone)]
    struct Seen {
        line: String,
        headers: Vec<(String, String)>,
        body: String,
    }

    impl Seen {
        fn header(&self, name: &str) -> Option<&str> {
            self.headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_str())
        }

        fn json(&self) -> Value {
            serde_json::from_str(&self.body).expect("a JSON request body")
        }

        fn user(&self) -> String {
            self.json()["messages"][1]["content"]
                .as_str()
                .unwrap()
                .to_owned()
        }
    }

    /// An HTTP server on 127.0.0.1 that answers one connection per step of its script, in
    /// order, and records what it read.
    struct Server {
        addr: SocketAddr,
        seen: Arc<Mutex<Vec<Seen>>>,
        stop: Arc<AtomicBool>,
        /// How many garbage chunks each endless stream wrote before the client hung up.
        written: Arc<Mutex<Vec<u64>>>,
        _hold: mpsc::Sender<()>,
    }

    impl Server {
        fn start(script: Vec<Step>) -> Server {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            let seen = Arc::new(Mutex::new(Vec::new()));
            let stop = Arc::new(AtomicBool::new(false));
            let (hold, released) = mpsc::channel::<()>();
            let (seen2, stop2) = (seen.clone(), stop.clone());
            let written = Arc::new(Mutex::new(Vec::new()));
            let written2 = written.clone();
            std::thread::spawn(move || {
                for step in script {
                    let Ok((mut stream, _)) = listener.accept() else {
                        return;
                    };
                    if stop2.load(Ordering::SeqCst) {
                        return;
                    }
                    if let Some(req) = read_request(&stream) {
                        seen2.lock().unwrap().push(req);
                    }
                    match step {
                        Step::Http(status, body) => {
                            let _ = write!(
                                stream,
                                "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n\
                                 Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                                body.len()
                            );
                        }
                        Step::Limited(secs) => {
                            let body = "{\"error\": \"slow down\"}";
                            let _ = write!(
                                stream,
                                "HTTP/1.1 429 X\r\nRetry-After: {secs}\r\nContent-Type: application/json\r\n\
                                 Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                                body.len()
                            );
                        }
                        // Until the test is over.
                        Step::Hang => {
                            let _ = released.recv_timeout(Duration::from_secs(30));
                        }
                        Step::Close => {}
                        Step::Sse(deltas, tail) => {
                            let _ = write!(
                                stream,
                                "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
                                 Cache-Control: no-cache\r\nConnection: close\r\n\r\n"
                            );
                            let chunk = |content: &str| {
                                let c = json!({"id": "c1", "object": "chat.completion.chunk",
                                    "model": "streamed-model",
                                    "choices": [{"index": 0, "delta": {"content": content},
                                                 "finish_reason": null}]});
                                format!("data: {c}\n\n")
                            };
                            let mut open = stream.write_all(b": ping\n\n").is_ok();
                            for d in &deltas {
                                open = open && stream.write_all(chunk(d).as_bytes()).is_ok();
                            }
                            match tail {
                                Tail::Done(finish) => {
                                    let last = json!({"id": "c1", "model": "streamed-model",
                                        "choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
                                        "usage": {"prompt_tokens": 77, "completion_tokens": deltas.len()}});
                                    let _ = write!(stream, "data: {last}\n\ndata: [DONE]\n\n");
                                }
                                Tail::Forever => {
                                    let mut n = 0u64;
                                    while open && n < 10_000_000 {
                                        n += 1;
                                        open = stream
                                            .write_all(chunk(&format!("GARBAGE{n} ")).as_bytes())
                                            .is_ok();
                                    }
                                    written2.lock().unwrap().push(n);
                                }
                            }
                        }
                    }
                }
            });
            Server {
                addr,
                seen,
                stop,
                written,
                _hold: hold,
            }
        }

        fn url(&self) -> String {
            format!("http://{}/v1", self.addr)
        }

        fn seen(&self) -> Vec<Seen> {
            self.seen.lock().unwrap().clone()
        }
    }

    impl Drop for Server {
        fn drop(&mut self) {
            self.stop.store(true, Ordering::SeqCst);
            // Wakes an accept that waits for a request that will not come.
            let _ = TcpStream::connect(self.addr);
        }
    }

    fn read_request(stream: &TcpStream) -> Option<Seen> {
        let mut reader = BufReader::new(stream.try_clone().ok()?);
        let mut line = String::new();
        reader.read_line(&mut line).ok()?;
        let mut headers = Vec::new();
        loop {
            let mut h = String::new();
            reader.read_line(&mut h).ok()?;
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            let (k, v) = h.split_once(':')?;
            headers.push((k.trim().to_owned(), v.trim().to_owned()));
        }
        let find = |name: &str| {
            headers
                .iter()
                .find(|(k, _): &&(String, String)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.clone())
        };
        let mut body = Vec::new();
        if let Some(n) = find("content-length").and_then(|n| n.parse::<usize>().ok()) {
            body.resize(n, 0);
            reader.read_exact(&mut body).ok()?;
        } else if find("transfer-encoding").is_some_and(|t| t.contains("chunked")) {
            loop {
                let mut size = String::new();
                reader.read_line(&mut size).ok()?;
                let n = usize::from_str_radix(size.trim(), 16).ok()?;
                let mut chunk = vec![0; n + 2];
                reader.read_exact(&mut chunk).ok()?;
                if n == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..n]);
            }
        }
        Some(Seen {
            line: line.trim_end().to_owned(),
            headers,
            body: String::from_utf8_lossy(&body).into_owned(),
        })
    }

    /// A chat-completions response whose answer is `content`.
    fn completion_body(content: &str, prompt_tokens: u64, completion_tokens: u64) -> String {
        json!({
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": "test-model-q4",
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        })
        .to_string()
    }

    fn ok(content: &str) -> Step {
        Step::Http(200, completion_body(content, 120, 30))
    }

    const DOCUMENT_ANSWER: &str = "Here are the requirements.\n\n```json\n{\"summary\": \"wrote the \
        requirements\", \"state_update\": {\"key_findings\": [\"two goals\"], \"decisions\": \
        [\"REQ ids per goal, for traceability\"], \"verification\": \"self-validated\"}, \
        \"files\": {\"spec/requirements/_index.md\": \"# Requirements\\n\\n- REQ-001\\n\"}}\n```\n";

    fn spec(url: &str, timeout: &str, env: &[(&str, &str)]) -> AgentSpec {
        AgentSpec {
            driver: "openai".into(),
            url: Some(url.into()),
            model: Some("test-model".into()),
            timeout: Some(timeout.into()),
            env: env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            ..AgentSpec::default()
        }
    }

    /// A driver for `spec` that sees no process environment and retries fast.
    fn driver(spec: &AgentSpec, root: &Path) -> OpenAiDriver {
        OpenAiDriver::build("local", spec, root, |_| None)
            .unwrap()
            .with_retry(RetryPolicy {
                tries: 3,
                backoff: Duration::from_millis(10),
            })
    }

    #[test]
    fn a_document_task_completes_with_files_state_and_usage() {
        let server = Server::start(vec![ok(DOCUMENT_ANSWER), ok(DOCUMENT_ANSWER)]);
        let work = tempfile::tempdir().unwrap();
        let run_dir = work.path().join("run");
        let (_d, input) = writer_input();
        let keyed = spec(&server.url(), "20s", &[(API_KEY_ENV, "sk-test")]);
        let mut c = ctx(work.path());
        c.run_dir = Some(run_dir.clone());
        let out = driver(&keyed, work.path()).run(&input, &c).unwrap();
        assert_eq!(
            out.output.outcome,
            Outcome::Completed,
            "{:?}",
            out.transcript
        );
        assert_eq!(out.output.summary, "wrote the requirements");
        assert_eq!(
            out.output.files,
            vec![(
                "spec/requirements/_index.md".to_owned(),
                b"# Requirements\n\n- REQ-001\n".to_vec()
            )]
        );
        let update = &out.output.state_update;
        assert_eq!(update.key_findings, vec!["two goals"]);
        assert_eq!(update.files_modified, vec!["spec/requirements/_index.md"]);
        assert_eq!(out.usage.input_tokens, 120);
        assert_eq!(out.usage.output_tokens, 30);
        assert_eq!(out.usage.model.as_deref(), Some("test-model-q4"));
        assert!(out.usage.seconds > 0.0);
        assert!(out.raw.contains("chat.completion"), "{}", out.raw);
        assert_eq!(
            std::fs::read_to_string(run_dir.join("prompt.md")).unwrap(),
            out.prompt
        );
        assert!(
            std::fs::read_to_string(run_dir.join("transcript.txt"))
                .unwrap()
                .contains("HTTP 200")
        );

        // The request: the endpoint, the model, the role as the system message, the task as
        // the user message, and the key.
        let req = &server.seen()[0];
        assert_eq!(req.line, "POST /v1/chat/completions HTTP/1.1");
        assert_eq!(req.header("authorization"), Some("Bearer sk-test"));
        assert!(req.header("content-type").unwrap().contains("json"));
        let body = req.json();
        assert_eq!(body["model"], "test-model");
        assert_eq!(body["temperature"], 0);
        assert_eq!(body["messages"][0]["role"], "system");
        let system = body["messages"][0]["content"].as_str().unwrap();
        assert!(system.starts_with("You are the writer."), "{system}");
        assert_eq!(body["messages"][1]["role"], "user");
        let user = req.user();
        assert!(user.starts_with("# Your role: writer\n\nYour instructions are in the system"));
        assert!(
            user.contains("DRAFT-002") && user.contains("# Result"),
            "{user}"
        );
        assert!(user.contains("you cannot read or write files"));
        assert!(
            !user.contains("You are the writer."),
            "the role is sent once"
        );

        // No key anywhere: no Authorization header.
        let bare = spec(&server.url(), "20s", &[]);
        let out = driver(&bare, work.path())
            .run(&input, &ctx(work.path()))
            .unwrap();
        assert_eq!(out.output.outcome, Outcome::Completed);
        assert_eq!(server.seen()[1].header("authorization"), None);
    }

    #[test]
    fn the_key_comes_from_the_agent_env_then_the_process_env() {
        let root = tempfile::tempdir().unwrap();
        let from_process = |k: &str| (k == API_KEY_ENV).then(|| "sk-process".to_owned());
        let bare = spec("http://127.0.0.1:9/v1", "20s", &[]);
        let d = OpenAiDriver::build("local", &bare, root.path(), from_process).unwrap();
        assert_eq!(d.api_key.as_deref(), Some("sk-process"));
        let keyed = spec(
            "http://127.0.0.1:9/v1/",
            "20s",
            &[(API_KEY_ENV, "sk-agent")],
        );
        let d = OpenAiDriver::build("local", &keyed, root.path(), from_process).unwrap();
        assert_eq!(d.api_key.as_deref(), Some("sk-agent"));
        assert_eq!(d.endpoint(), "http://127.0.0.1:9/v1/chat/completions");
        let d = OpenAiDriver::build("local", &bare, root.path(), |_| None).unwrap();
        assert_eq!(d.api_key, None);
    }

    #[test]
    fn configuration_errors_name_the_agent() {
        let root = Path::new("/");
        let err = |spec: AgentSpec| match crate::agents::command::driver_for("mine", &spec, root) {
            Ok(_) => panic!("expected an error"),
            Err(e) => e.to_string(),
        };
        let mut s = spec("http://127.0.0.1:9/v1", "20s", &[]);
        assert!(crate::agents::command::driver_for("mine", &s, root).is_ok());
        s.url = None;
        assert!(err(s.clone()).contains("agent `mine`: the `openai` driver needs `url`"));
        s.url = Some("ftp://example.invalid/v1".into());
        let e = err(s.clone());
        assert!(
            e.contains("agent `mine`") && e.contains("http:// or https://"),
            "{e}"
        );
        s.url = Some("127.0.0.1:11434".into());
        assert!(err(s.clone()).contains("agent `mine`"));
        s.url = Some("http://127.0.0.1:9/v1".into());
        s.model = Some(" ".into());
        assert!(err(s.clone()).contains("agent `mine`: the `openai` driver needs `model`"));
        s.model = Some("m".into());
        s.timeout = Some("soon".into());
        assert!(err(s).contains("invalid duration `soon`"));
    }

    #[test]
    fn an_invalid_result_is_sent_back_with_the_error() {
        let broken =
            "```json\n{\"summary\": \"x\", \"state_update\": {\"key_findings\": [\"a\",]}}\n```\n";
        let server = Server::start(vec![ok(broken), ok(DOCUMENT_ANSWER)]);
        let work = tempfile::tempdir().unwrap();
        let (_d, input) = writer_input();
        let s = spec(&server.url(), "20s", &[]);
        let out = driver(&s, work.path())
            .run(&input, &ctx(work.path()))
            .unwrap();
        assert_eq!(out.output.outcome, Outcome::Completed);
        let seen = server.seen();
        assert_eq!(seen.len(), 2);
        assert!(!seen[0].user().contains(RETRY_HEADING));
        let retry = seen[1].user();
        assert!(retry.contains(RETRY_HEADING), "{retry}");
        assert!(retry.contains("not valid JSON"), "{retry}");
        assert!(retry.contains("[\"a\",]"), "the previous answer is quoted");
        assert_eq!(out.usage.input_tokens, 240, "usage adds up over answers");
        assert!(out.prompt.contains(RETRY_HEADING));

        // Three broken answers fail the task, keeping the last body.
        let server = Server::start(vec![ok(broken), ok(broken), ok(broken), ok(broken)]);
        let s = spec(&server.url(), "20s", &[]);
        let out = driver(&s, work.path())
            .run(&input, &ctx(work.path()))
            .unwrap();
        let why = failure(&out);
        assert!(why.contains("agent `local` (openai)"), "{why}");
        assert!(
            why.contains("rejected 3 times") && why.contains("not valid JSON"),
            "{why}"
        );
        assert!(out.raw.contains("[\\\"a\\\",]"), "{}", out.raw);
        assert_eq!(server.seen().len(), 3);
    }

    #[test]
    fn server_errors_and_rate_limits_are_retried() {
        let server = Server::start(vec![
            Step::Http(500, "{\"error\": \"loading model\"}".into()),
            Step::Close,
            ok(DOCUMENT_ANSWER),
        ]);
        let work = tempfile::tempdir().unwrap();
        let (_d, input) = writer_input();
        let s = spec(&server.url(), "20s", &[]);
        let out = driver(&s, work.path())
            .run(&input, &ctx(work.path()))
            .unwrap();
        assert_eq!(
            out.output.outcome,
            Outcome::Completed,
            "{:?}",
            out.transcript
        );
        assert_eq!(server.seen().len(), 3);
        assert!(out.transcript.unwrap().contains("HTTP 500"));

        // A rate limit that does not pass fails after the tries, with the server's words.
        let limited = "{\"error\": {\"message\": \"Rate limit reached\", \"type\": \"requests\"}}";
        let server = Server::start(
            (0..4)
                .map(|_| Step::Http(429, limited.to_owned()))
                .collect(),
        );
        let s = spec(&server.url(), "20s", &[]);
        let out = driver(&s, work.path())
            .run(&input, &ctx(work.path()))
            .unwrap();
        let why = failure(&out);
        assert!(
            why.contains("HTTP 429 (after 3 tries): Rate limit reached"),
            "{why}"
        );
        assert_eq!(server.seen().len(), 3);
        assert_eq!(out.raw, limited);

        // A server that says how long to wait is waited for (the test backoff is 10 ms).
        let server = Server::start(vec![Step::Limited(1), ok(DOCUMENT_ANSWER)]);
        let s = spec(&server.url(), "20s", &[]);
        let began = std::time::Instant::now();
        let out = driver(&s, work.path())
            .run(&input, &ctx(work.path()))
            .unwrap();
        assert_eq!(out.output.outcome, Outcome::Completed);
        assert!(
            began.elapsed() >= Duration::from_millis(900),
            "{:?}",
            began.elapsed()
        );
    }

    #[test]
    fn client_errors_fail_at_once_with_the_message() {
        let body =
            "{\"error\": {\"message\": \"model 'test-model' not found, try pulling it first\"}}";
        let server = Server::start(vec![Step::Http(400, body.into()), ok(DOCUMENT_ANSWER)]);
        let work = tempfile::tempdir().unwrap();
        let (_d, input) = writer_input();
        let s = spec(&server.url(), "20s", &[]);
        let out = driver(&s, work.path())
            .run(&input, &ctx(work.path()))
            .unwrap();
        let why = failure(&out);
        assert!(
            why.contains("answered HTTP 400: model 'test-model' not found"),
            "{why}"
        );
        assert!(!why.contains("tries"), "{why}");
        assert_eq!(server.seen().len(), 1);
        assert_eq!(out.raw, body);
    }

    #[test]
    fn bodies_that_are_not_completions_fail_clearly() {
        let work = tempfile::tempdir().unwrap();
        let (_d, input) = writer_input();
        let run = |body: &str| {
            let server = Server::start(vec![Step::Http(200, body.into())]);
            let s = spec(&server.url(), "20s", &[]);
            let out = driver(&s, work.path())
                .run(&input, &ctx(work.path()))
                .unwrap();
            assert_eq!(server.seen().len(), 1);
            out
        };
        let html = "<html><body>502 Bad Gateway</body></html>";
        let out = run(html);
        let why = failure(&out);
        assert!(
            why.contains("not valid JSON") && why.contains("<html>"),
            "{why}"
        );
        assert_eq!(out.raw, html);
        let out = run("{\"object\": \"list\", \"data\": []}");
        assert!(
            failure(&out).contains("has no `choices`"),
            "{}",
            failure(&out)
        );
        let empty = json!({"choices": [{"message": {"content": null}, "finish_reason": "length"}]});
        let out = run(&empty.to_string());
        assert!(failure(&out).contains("no text (finish_reason: length)"));
    }

    #[test]
    fn a_server_that_never_answers_times_out() {
        let server = Server::start(vec![Step::Hang, Step::Hang]);
        let work = tempfile::tempdir().unwrap();
        let (_d, input) = writer_input();
        let s = spec(&server.url(), "300ms", &[]);
        let started = Instant::now();
        let out = driver(&s, work.path())
            .run(&input, &ctx(work.path()))
            .unwrap();
        let why = failure(&out);
        assert!(why.contains("did not answer within 300ms"), "{why}");
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(server.seen().len(), 1, "a timeout is not repeated");
    }

    #[test]
    fn a_refused_connection_is_retried_then_fails() {
        let addr = {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        };
        let work = tempfile::tempdir().unwrap();
        let (_d, input) = writer_input();
        let s = spec(&format!("http://{addr}/v1"), "5s", &[]);
        let out = driver(&s, work.path())
            .run(&input, &ctx(work.path()))
            .unwrap();
        let why = failure(&out);
        assert!(
            why.contains("cannot reach") && why.contains("after 3 tries"),
            "{why}"
        );
    }

    /// `text` in pieces of `n` characters, as a server streams it.
    fn pieces(text: &str, n: usize) -> Vec<String> {
        let chars: Vec<char> = text.chars().collect();
        chars.chunks(n).map(|c| c.iter().collect()).collect()
    }

    #[test]
    fn every_request_carries_an_output_bound() {
        let work = tempfile::tempdir().unwrap();
        let (_d, input) = writer_input();
        let bound_of = |s: &AgentSpec| {
            let server = Server::start(vec![ok(DOCUMENT_ANSWER)]);
            let mut s = s.clone();
            s.url = Some(server.url());
            let out = driver(&s, work.path())
                .run(&input, &ctx(work.path()))
                .unwrap();
            assert_eq!(out.output.outcome, Outcome::Completed);
            let body = server.seen()[0].json();
            assert_eq!(body["stream"], true, "{body}");
            assert_eq!(body["stream_options"]["include_usage"], true);
            assert!(body.get("max_completion_tokens").is_none());
            assert!(out.transcript.unwrap().contains("output bound"));
            body["max_tokens"].clone()
        };
        let mut s = spec("http://127.0.0.1:9/v1", "20s", &[]);
        assert_eq!(bound_of(&s), 8192, "a writer's default");
        s.context_tokens = Some(4096);
        assert_eq!(bound_of(&s), 2048, "at most half the context");
        s.max_output_tokens = Some(300);
        assert_eq!(bound_of(&s), 300, "configured");

        // Roles: documents and code get the most, opinions the least.
        let d = driver(&spec("http://127.0.0.1:9/v1", "20s", &[]), work.path());
        assert_eq!(d.output_bound(&Role::Planner), 8192);
        assert_eq!(d.output_bound(&Role::Executor), 8192);
        assert_eq!(d.output_bound(&Role::Analyst), 4096);
        assert_eq!(d.output_bound(&Role::Critic), 2048);
        assert_eq!(d.output_bound(&Role::Reviewer), 2048);
        assert_eq!(d.prompt_limit(&Role::Writer), PROMPT_LIMIT);

        // A bound that leaves no room for a prompt, or a zero, is refused when the driver is made.
        let mut bad = spec("http://127.0.0.1:9/v1", "20s", &[]);
        bad.context_tokens = Some(2048);
        bad.max_output_tokens = Some(2000);
        let e = OpenAiDriver::build("local", &bad, work.path(), |_| None)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("agent `local`: `max_output_tokens` (2000) leaves no room"),
            "{e}"
        );
        bad.max_output_tokens = Some(0);
        let e = OpenAiDriver::build("local", &bad, work.path(), |_| None)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("`max_output_tokens` must be a positive"), "{e}");
    }

    #[test]
    fn a_server_that_wants_max_completion_tokens_gets_it() {
        let refusal = "{\"error\": {\"message\": \"Unsupported parameter: 'max_tokens' is not \
            supported with this model. Use 'max_completion_tokens' instead.\", \"type\": \
            \"invalid_request_error\", \"param\": \"max_tokens\", \"code\": \"unsupported_parameter\"}}";
        let server = Server::start(vec![Step::Http(400, refusal.into()), ok(DOCUMENT_ANSWER)]);
        let work = tempfile::tempdir().unwrap();
        let (_d, input) = writer_input();
        let s = spec(&server.url(), "20s", &[]);
        let out = driver(&s, work.path())
            .run(&input, &ctx(work.path()))
            .unwrap();
        assert_eq!(
            out.output.outcome,
            Outcome::Completed,
            "{:?}",
            out.transcript
        );
        let seen = server.seen();
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[0].json()["max_tokens"], 8192);
        assert_eq!(seen[1].json()["max_completion_tokens"], 8192);
        assert!(seen[1].json().get("max_tokens").is_none());
    }

    #[test]
    fn a_server_that_cannot_stream_is_asked_for_a_plain_answer() {
        let refusal = "{\"error\": {\"message\": \"Unrecognized request argument supplied: \
            stream_options\", \"type\": \"invalid_request_error\"}}";
        let server = Server::start(vec![
            Step::Http(400, refusal.into()),
            ok(DOCUMENT_ANSWER),
            ok(DOCUMENT_ANSWER),
        ]);
        let work = tempfile::tempdir().unwrap();
        let (_d, input) = writer_input();
        let s = spec(&server.url(), "20s", &[]);
        let d = driver(&s, work.path());
        let out = d.run(&input, &ctx(work.path())).unwrap();
        assert_eq!(
            out.output.outcome,
            Outcome::Completed,
            "{:?}",
            out.transcript
        );
        let out = d.run(&input, &ctx(work.path())).unwrap();
        assert_eq!(out.output.outcome, Outcome::Completed);
        let seen = server.seen();
        assert_eq!(seen.len(), 3);
        assert!(refuses_streaming("'stream' is not supported"));
        assert!(!refuses_streaming("the upstream model is missing"));
        assert_eq!(seen[0].json()["stream"], true);
        for later in &seen[1..] {
            let body = later.json();
            assert_eq!(body["stream"], false, "{body}");
            assert!(body.get("stream_options").is_none());
            assert_eq!(body["max_tokens"], 8192, "the bound stays");
        }
    }

    #[test]
    fn a_streamed_answer_is_assembled_and_the_rest_left_unread() {
        let server = Server::start(vec![
            Step::Sse(pieces(DOCUMENT_ANSWER, 5), Tail::Forever),
            Step::Sse(pieces(DOCUMENT_ANSWER, 3), Tail::Done("stop")),
        ]);
        let work = tempfile::tempdir().unwrap();
        let (_d, input) = writer_input();
        let s = spec(&server.url(), "20s", &[]);
        let mut c = ctx(work.path());
        c.meter = Meter::new();
        // Garbage after a complete result block: not waited for.
        let out = driver(&s, work.path()).run(&input, &c).unwrap();
        assert_eq!(
            out.output.outcome,
            Outcome::Completed,
            "{:?}",
            out.transcript
        );
        assert_eq!(out.output.summary, "wrote the requirements");
        assert_eq!(
            out.output.files,
            vec![(
                "spec/requirements/_index.md".to_owned(),
                b"# Requirements\n\n- REQ-001\n".to_vec()
            )]
        );
        // Read: the answer, then BOUND_SLACK + 1 garbage chunks, the last of which closes it.
        let n = pieces(DOCUMENT_ANSWER, 5).len() as u64 + BOUND_SLACK + 1;
        assert_eq!(c.meter.read(), n, "one token a chunk, counted as they came");
        assert_eq!(
            out.usage.output_tokens, n,
            "no usage came: the chunks are counted"
        );
        assert_eq!(out.usage.input_tokens, 0, "nothing is made up");
        assert_eq!(out.usage.model.as_deref(), Some("streamed-model"));
        assert_eq!(out.raw.matches("data: ").count() as u64, n, "{}", out.raw);
        assert!(
            out.raw.contains(&format!("GARBAGE{} ", BOUND_SLACK + 1)),
            "{}",
            out.raw
        );
        assert!(
            !out.raw.contains(&format!("GARBAGE{} ", BOUND_SLACK + 2)),
            "the raw record is what was read"
        );
        assert!(
            out.transcript
                .as_ref()
                .unwrap()
                .contains("result block complete, the stream closed by git-tlv4")
        );
        drop(out);
        // The server saw its client hang up.
        let written = loop {
            if let Some(w) = server.written.lock().unwrap().first().copied() {
                break w;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        assert!(written < 10_000_000, "{written}");

        // A stream that ends by itself, with usage in its last chunk.
        let out = driver(&s, work.path()).run(&input, &c).unwrap();
        assert_eq!(
            out.output.outcome,
            Outcome::Completed,
            "{:?}",
            out.transcript
        );
        assert_eq!(out.output.files.len(), 1);
        assert_eq!(out.usage.input_tokens, 77);
        assert_eq!(
            out.usage.output_tokens,
            pieces(DOCUMENT_ANSWER, 3).len() as u64
        );
    }

    #[test]
    fn a_stream_that_never_ends_is_closed_at_the_bound() {
        let forever = || Step::Sse(vec!["Let me think. ".into()], Tail::Forever);
        let server = Server::start(vec![forever(), forever(), forever(), forever()]);
        let work = tempfile::tempdir().unwrap();
        let (_d, input) = writer_input();
        let mut s = spec(&server.url(), "20s", &[]);
        s.max_output_tokens = Some(50);
        let mut c = ctx(work.path());
        c.meter = Meter::new();
        let out = driver(&s, work.path()).run(&input, &c).unwrap();
        let why = failure(&out);
        assert!(why.contains("rejected 3 times"), "{why}");
        assert!(
            why.contains("reached the output bound of 50 tokens before its result block began"),
            "{why}"
        );
        let seen = server.seen();
        assert_eq!(seen.len(), 3, "one request per answer, no more");
        assert!(seen.iter().all(|r| r.json()["max_tokens"] == 50));
        assert!(
            seen[1].user().contains("output bound of 50 tokens"),
            "sent back with the problem"
        );
        // What arrived of the last answer, up to where it was closed.
        let chunks = 50 + BOUND_SLACK;
        assert_eq!(
            out.raw.matches("data: ").count() as u64,
            chunks,
            "{}",
            out.raw
        );
        assert!(out.raw.starts_with(": ping") && out.raw.contains("Let me think."));
        assert!(out.raw.contains(&format!("GARBAGE{} ", chunks - 1)));
        assert_eq!(c.meter.read(), 3 * chunks);
        assert_eq!(out.usage.output_tokens, 3 * chunks);
        assert!(
            out.transcript
                .unwrap()
                .contains("past the output bound, the stream closed by git-tlv4")
        );
    }

    #[test]
    fn an_answer_cut_at_the_bound_is_sent_back_as_such() {
        let cut = Step::Http(
            200,
            json!({"choices": [{"message": {"content": "```json\n{\"summary\": \"x\", \"state"},
                                "finish_reason": "length"}],
                   "usage": {"prompt_tokens": 10, "completion_tokens": 2048}})
            .to_string(),
        );
        let server = Server::start(vec![cut, ok(DOCUMENT_ANSWER)]);
        let work = tempfile::tempdir().unwrap();
        let (_d, input) = writer_input();
        let s = spec(&server.url(), "20s", &[]);
        let out = driver(&s, work.path())
            .run(&input, &ctx(work.path()))
            .unwrap();
        assert_eq!(out.output.outcome, Outcome::Completed);
        let retry = server.seen()[1].user();
        assert!(
            retry.contains(
                "reached the output bound of 8192 tokens before its result block was closed"
            ),
            "{retry}"
        );
        assert!(
            retry.contains("not closed"),
            "the parser's words follow: {retry}"
        );
    }

    #[test]
    fn a_prompt_too_long_for_the_context_fails_at_once() {
        let llama = "{\"error\":{\"code\":400,\"message\":\"the request exceeds the available \
            context size, try increasing it\",\"type\":\"exceed_context_size_error\",\
            \"n_prompt_tokens\":8287,\"n_ctx\":8192}}";
        let server = Server::start(vec![Step::Http(400, llama.into()), ok(DOCUMENT_ANSWER)]);
        let work = tempfile::tempdir().unwrap();
        let (_d, input) = writer_input();
        let s = spec(&server.url(), "20s", &[]);
        let out = driver(&s, work.path())
            .run(&input, &ctx(work.path()))
            .unwrap();
        let why = failure(&out);
        let seen = server.seen();
        assert_eq!(seen.len(), 1, "not sent again");
        let body = seen[0].json();
        let chars = body["messages"][0]["content"]
            .as_str()
            .unwrap()
            .chars()
            .count()
            + body["messages"][1]["content"]
                .as_str()
                .unwrap()
                .chars()
                .count();
        assert!(why.starts_with("agent `local` (openai): the server refused the prompt as longer than the model's context"), "{why}");
        assert!(why.contains("exceeds the available context size"), "{why}");
        assert!(
            why.contains(&format!(
                "the prompt was {chars} characters, ~{} tokens estimated (8287 tokens as the server counted them)",
                chars.div_ceil(3)
            )),
            "{why}"
        );
        assert!(why.contains("the server's limit is 8192 tokens"), "{why}");
        assert!(
            why.contains("Set `context_tokens = 8192` under [agents.local]"),
            "{why}"
        );
        assert_eq!(out.raw, llama);

        // OpenAI's shape says it in words.
        let openai = "{\"error\": {\"message\": \"This model's maximum context length is 16,385 \
            tokens. However, your messages resulted in 20,017 tokens. Please reduce the length \
            of the messages.\", \"type\": \"invalid_request_error\", \"param\": \"messages\", \
            \"code\": \"context_length_exceeded\"}}";
        let server = Server::start(vec![Step::Http(400, openai.into()), ok(DOCUMENT_ANSWER)]);
        let mut s = spec(&server.url(), "20s", &[]);
        s.context_tokens = Some(32000);
        let out = driver(&s, work.path())
            .run(&input, &ctx(work.path()))
            .unwrap();
        let why = failure(&out);
        assert_eq!(server.seen().len(), 1);
        assert!(
            why.contains("(20017 tokens as the server counted them)"),
            "{why}"
        );
        assert!(why.contains("the server's limit is 16385 tokens"), "{why}");
        assert!(why.contains("`context_tokens` is 32000: lower it"), "{why}");
    }

    #[test]
    fn prompts_fit_the_context_with_large_documents_summarised() {
        let (_d, code) = crate::agents::prompt::tests::empty_code();
        let huge = format!(
            "# Requirements\n\n{}",
            "## REQ\n\nlong requirement text\n".repeat(20_000)
        );
        let input = crate::agents::prompt::tests::input(
            "DRAFT-003",
            "writer",
            "PURPOSE: architecture\nCONTEXT:\n  - Upstream artifacts: DRAFT-002: spec/requirements/_index.md\nEXPECTED: spec/architecture/\n",
            &[
                ("spec/requirements/_index.md", &huge),
                ("wisdom/learnings.md", "# L\n\n- be brief\n"),
            ],
            code,
        );
        let server = Server::start(vec![ok(DOCUMENT_ANSWER)]);
        let work = tempfile::tempdir().unwrap();
        let mut s = spec(&server.url(), "20s", &[]);
        s.context_tokens = Some(8192);
        let d = driver(&s, work.path());
        let limit = d.prompt_limit(&Role::Writer);
        assert_eq!(limit, (8192 - 4096 - TEMPLATE_TOKENS as usize) * 3);
        let out = d.run(&input, &ctx(work.path())).unwrap();
        assert_eq!(
            out.output.outcome,
            Outcome::Completed,
            "{:?}",
            out.transcript
        );
        let body = server.seen()[0].json();
        let size = body["messages"][0]["content"].as_str().unwrap().len()
            + body["messages"][1]["content"].as_str().unwrap().len();
        assert!(size <= limit, "{size} > {limit}");
        assert_eq!(body["max_tokens"], 4096);
        let user = server.seen()[0].user();
        assert!(user.contains("- spec/requirements/_index.md ("), "{user}");
        assert!(user.contains("shown as a summary only"));
        let t = out.transcript.unwrap();
        assert!(
            t.contains(&format!(
                "summarised to fit (headings and first lines only): spec/requirements/_index.md ({} bytes)",
                huge.len()
            )),
            "{t}"
        );
        assert!(t.contains("context_tokens 8192"), "{t}");
        // An explicit budget wins.
        let mut s2 = s.clone();
        s2.prompt_budget = Some(3000);
        assert_eq!(driver(&s2, work.path()).prompt_limit(&Role::Writer), 9000);
    }

    /// A git repository with `hello.txt` committed, inside a directory that also holds
    /// `outside.txt`.
    fn repo() -> (tempfile::TempDir, PathBuf) {
        let top = tempfile::tempdir().unwrap();
        let repo = top.path().join("repo");
        std::fs::create_dir(&repo).unwrap();
        hermetic_git(&repo, &["init", "-q"]);
        std::fs::write(repo.join("hello.txt"), "one\ntwo\nthree\n").unwrap();
        hermetic_git(&repo, &["add", "hello.txt"]);
        hermetic_git(&repo, &["commit", "-q", "-m", "init"]);
        std::fs::write(top.path().join("outside.txt"), "keep\n").unwrap();
        (top, repo)
    }

    fn code_answer(diff: &str, files: &[&str]) -> String {
        let files = serde_json::to_string(files).unwrap();
        format!(
            "The change.\n\n```diff\n{diff}```\n\n```json\n{{\"summary\": \"changed hello\", \
             \"state_update\": {{\"files_modified\": {files}, \"verification\": \
             \"self-validated\"}}}}\n```\n"
        )
    }

    const GOOD_DIFF: &str = "diff --git a/hello.txt b/hello.txt\n--- a/hello.txt\n+++ b/hello.txt\n\
        @@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n";

    #[test]
    fn a_code_task_applies_its_diff_in_the_workdir() {
        let (_top, repo) = repo();
        // The first diff has a wrong context line: it is sent back once with git's words.
        let stale = GOOD_DIFF.replace(" three\n", " four\n");
        let server = Server::start(vec![
            ok(&code_answer(&stale, &["hello.txt"])),
            ok(&code_answer(GOOD_DIFF, &[])),
        ]);
        let (_d, input) = executor_input();
        let s = spec(&server.url(), "20s", &[]);
        let out = driver(&s, &repo).run(&input, &ctx(&repo)).unwrap();
        assert_eq!(
            out.output.outcome,
            Outcome::Completed,
            "{:?}",
            out.transcript
        );
        assert_eq!(
            std::fs::read_to_string(repo.join("hello.txt")).unwrap(),
            "one\nTWO\nthree\n"
        );
        assert!(out.output.files.is_empty());
        assert_eq!(out.output.state_update.files_modified, vec!["hello.txt"]);

        let seen = server.seen();
        assert_eq!(seen.len(), 2);
        let first = seen[0].user();
        assert!(
            first.contains("# The code") && first.contains("## hello.txt"),
            "{first}"
        );
        assert!(first.contains("one\ntwo\nthree"), "the file is shown");
        assert!(first.contains("tagged `diff`") && first.contains("ONE unified diff"));
        assert!(first.find("# The code") < first.find("\n# Result\n"));
        let retry = seen[1].user();
        assert!(retry.contains(RETRY_HEADING), "{retry}");
        assert!(retry.contains("your diff does not apply"), "{retry}");
        assert!(retry.contains("patch failed: hello.txt"), "{retry}");
        assert!(out.transcript.unwrap().contains("applied: hello.txt"));
    }

    #[test]
    fn a_code_task_without_a_diff() {
        let (_top, repo) = repo();
        let (_d, input) = executor_input();
        let no_diff = |files: &str| {
            format!(
                "```json\n{{\"summary\": \"nothing\", \"state_update\": {{\"files_modified\": \
                 {files}}}}}\n```\n"
            )
        };
        let listed = || ok(&no_diff("[\"hello.txt\"]"));
        let server = Server::start(vec![listed(), listed(), listed(), ok(&no_diff("[]"))]);
        let s = spec(&server.url(), "20s", &[]);
        // Sent back with the problem like any broken contract, then failed.
        let out = driver(&s, &repo).run(&input, &ctx(&repo)).unwrap();
        let f = failure(&out);
        assert!(
            f.contains("rejected 3 times") && f.contains("the answer carried no patch"),
            "{f}"
        );
        // Nothing to change is fine.
        let out = driver(&s, &repo).run(&input, &ctx(&repo)).unwrap();
        assert_eq!(out.output.outcome, Outcome::Completed);
        assert_eq!(
            std::fs::read_to_string(repo.join("hello.txt")).unwrap(),
            "one\ntwo\nthree\n"
        );
    }

    #[test]
    fn diffs_outside_the_tree_or_into_git_are_refused() {
        let (top, repo) = repo();
        let config_before = std::fs::read_to_string(repo.join(".git/config")).unwrap();
        let git_config = "diff --git a/.git/config b/.git/config\n--- a/.git/config\n\
            +++ b/.git/config\n@@ -1 +1,2 @@\n [core]\n+\thooksPath = /tmp/evil\n";
        let outside = "--- a/../outside.txt\n+++ b/../outside.txt\n@@ -1 +1 @@\n-keep\n+gone\n";
        let server = Server::start(vec![
            ok(&code_answer(git_config, &[".git/config"])),
            ok(&code_answer(outside, &["hello.txt"])),
            ok(&code_answer(GOOD_DIFF, &["hello.txt"])),
        ]);
        let (_d, input) = executor_input();
        let s = spec(&server.url(), "20s", &[]);
        let out = driver(&s, &repo).run(&input, &ctx(&repo)).unwrap();
        let why = failure(&out);
        assert!(why.contains("its change was not applied"), "{why}");
        assert!(why.contains("outside"), "{why}");
        let seen = server.seen();
        assert_eq!(seen.len(), 2, "a refused diff is sent back once");
        let retry = seen[1].user();
        assert!(retry.contains("touches `.git/config`"), "{retry}");
        assert_eq!(
            std::fs::read_to_string(repo.join(".git/config")).unwrap(),
            config_before
        );
        assert_eq!(
            std::fs::read_to_string(top.path().join("outside.txt")).unwrap(),
            "keep\n"
        );
        assert_eq!(
            std::fs::read_to_string(repo.join("hello.txt")).unwrap(),
            "one\ntwo\nthree\n"
        );

        // git refuses a path outside the tree by itself too.
        let file = top.path().join("outside.diff");
        std::fs::write(&file, outside).unwrap();
        assert!(git_apply(&repo, &file).is_err());
        assert_eq!(
            std::fs::read_to_string(top.path().join("outside.txt")).unwrap(),
            "keep\n"
        );
    }

    #[test]
    fn refused_paths() {
        assert_eq!(refusal("src/lib.rs"), None);
        assert_eq!(refusal("docs/.gitignore"), None);
        assert!(refusal(".git/config").is_some());
        assert!(refusal("sub/.GIT/hooks/pre-commit").is_some());
        assert!(refusal(".git").is_some());
        assert!(refusal(".tlv4/sessions/x/session.toml").is_some());
        assert!(refusal("./.tlv4/x").is_some());
        assert!(refusal("../outside").is_some());
        assert!(refusal("a/../../b").is_some());
        assert!(refusal("/etc/passwd").is_some());
        assert_eq!(refusal("src/.tlv4/x"), None);
    }

    #[test]
    fn patches_are_taken_from_diff_blocks() {
        let text = "Intro\n```rust\nfn main() {}\n```\n```diff\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n```\n\
                    ```patch\n--- a/y\n+++ b/y\n@@ -1 +1 @@\n-c\n+d\n```\n```json\n{}\n```\n";
        let patch = extract_patch(text).unwrap().unwrap();
        assert!(
            patch.starts_with("--- a/x\n") && patch.contains("+d\n"),
            "{patch}"
        );
        assert!(!patch.contains("fn main"));
        assert_eq!(extract_patch("```json\n{}\n```\n").unwrap(), None);
        assert!(extract_patch("```diff\n--- a/x\n+++ b/x\n").is_err());
    }
}
