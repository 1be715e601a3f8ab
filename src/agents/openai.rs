//! The `openai` driver: a model behind an OpenAI-compatible chat-completions endpoint
//! (Ollama, llama.cpp's `llama-server`, vLLM, hosted APIs), with no agent CLI in between.
//!
//! Configuration (`[agents.<name>]`): `driver = "openai"`, `url` (the API base, such as
//! `http://127.0.0.1:11434/v1`; `<url>/chat/completions` is called), `model`, and optionally
//! `timeout` (per answer, default [`process::DEFAULT_TIMEOUT`]) and `env.OPENAI_API_KEY`. The
//! key is taken from the agent's `env`, else from the process environment, else there is none
//! (local servers need none); it is sent as `Authorization: Bearer` only when there is one.
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

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::command::{CONTRACT_TRIES, Driver, DriverOutput, RunContext, Usage};
use super::config::AgentSpec;
use super::process::{self, RetryPolicy};
use super::prompt::{self, PROMPT_LIMIT, RoleSpecs};
use super::result::{self, Deliverable};
use super::{Outcome, StateUpdate, TaskInput, TaskOutput};
use crate::error::{Error, Result};

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
        })
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
        let reason = format!("agent `{}` (openai): {reason}", self.agent);
        let first: String = reason
            .lines()
            .next()
            .unwrap_or("")
            .chars()
            .take(200)
            .collect();
        TaskOutput {
            outcome: Outcome::Failed(reason),
            summary: format!("failed: {first}"),
            files: Vec::new(),
            state_update: StateUpdate::default(),
        }
    }

    /// One question, with retries of transient failures.
    fn chat(&self, system: &str, user: &str, answer_no: u32, log: &mut String) -> Exchange {
        let body = json!({
            "model": self.model,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": user},
            ],
            "temperature": 0,
            "stream": false,
        })
        .to_string();
        let tries = self.retry.tries.max(1);
        let mut pause = self.retry.backoff;
        let mut seconds = 0.0;
        let mut n = 0;
        loop {
            n += 1;
            let last = n >= tries;
            let started = Instant::now();
            let sent = self.post(&body);
            let asked = sent.as_ref().ok().and_then(|(_, _, w)| *w);
            let sent = sent.map(|(status, text, _)| (status, text));
            let took = started.elapsed().as_secs_f64();
            seconds += took;
            let after = if n > 1 {
                format!(" (after {n} tries)")
            } else {
                String::new()
            };
            let ending = match &sent {
                Ok((status, _)) => format!("HTTP {status}"),
                Err(e) => format!("no answer: {e}"),
            };
            log.push_str(&format!(
                "=== answer {answer_no} (request {n}): POST {} ===\n{ending}, {took:.1}s\n\
                 --- response ---\n{}\n",
                self.endpoint,
                sent.as_ref().map(|(_, b)| b.trim_end()).unwrap_or_default()
            ));
            let failed = |reason: String, body: String| Exchange {
                reply: Err(reason),
                body,
                usage: Usage {
                    seconds,
                    ..Usage::default()
                },
            };
            match sent {
                Ok((status, text)) if (200..300).contains(&status) => {
                    let mut ex = match completion(&text) {
                        Ok((answer, usage)) => Exchange {
                            reply: Ok(answer),
                            body: text,
                            usage,
                        },
                        Err(reason) => failed(reason, text),
                    };
                    ex.usage.seconds = seconds;
                    return ex;
                }
                Ok((status, _)) if !last && (status == 429 || status >= 500) => {}
                Ok((status, text)) => {
                    let reason = format!(
                        "{} answered HTTP {status}{after}: {}",
                        self.endpoint,
                        server_message(&text)
                    );
                    return failed(reason, text);
                }
                Err(Sent::Timeout) => {
                    let reason = format!(
                        "{} did not answer within {}; the request was abandoned",
                        self.endpoint,
                        human(self.timeout)
                    );
                    return failed(reason, String::new());
                }
                Err(Sent::Transient(_)) if !last => {}
                Err(Sent::Transient(e) | Sent::Other(e)) => {
                    let reason = format!("cannot reach {}{after}: {e}", self.endpoint);
                    return failed(reason, String::new());
                }
            }
            // A server that says how long to wait is taken at its word.
            std::thread::sleep(asked.unwrap_or(pause));
            pause *= 2;
        }
    }

    /// One request: the status and body, or why there is none.
    fn post(&self, body: &str) -> std::result::Result<(u16, String, Option<Duration>), Sent> {
        let mut req = self
            .http
            .post(&self.endpoint)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json");
        if let Some(key) = &self.api_key {
            req = req.header("Authorization", format!("Bearer {}", key.trim()));
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
        let text = resp
            .body_mut()
            .with_config()
            .limit(RESPONSE_LIMIT)
            .lossy_utf8(true)
            .read_to_string()
            .map_err(Sent::from)?;
        Ok((status, text, wait))
    }

    /// The prompt of a task: the system message (the role's instructions) and the first user
    /// message.
    fn messages(&self, input: &TaskInput, workdir: &Path) -> (String, String) {
        let task = &input.task;
        let code = prompt::writes_code(&task.role);
        let system = strip_comment(&self.specs.role(&task.role))
            .trim()
            .to_owned();
        let template = if task.role == "writer" {
            self.specs.template(&task.phase)
        } else {
            None
        };
        let reserve = if code {
            CODE_BUDGET + LISTING_BUDGET + HANDOVER.len() + 1024
        } else {
            1024
        };
        let base = prompt::compose(
            input,
            "",
            template,
            PROMPT_LIMIT - prompt::RETRY_RESERVE - reserve,
        );
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
            let section = code_section(input, workdir, &user);
            match user.rfind("\n# Result\n") {
                Some(at) => user.insert_str(at + 1, &section),
                None => user.push_str(&section),
            }
            user.push('\n');
            user.push_str(HANDOVER);
        }
        (system, user)
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
        let (system, base) = self.messages(input, &ctx.workdir);

        let scratch_dir = ctx.scratch()?;
        let scratch = scratch_dir.path().to_path_buf();

        let mut usage = Usage {
            model: Some(self.model.clone()),
            ..Usage::default()
        };
        let mut transcript = format!("=== system message ===\n{system}\n");
        let mut user = base.clone();
        let mut answer_no = 0;
        let mut bad_patches = 0;
        loop {
            answer_no += 1;
            let record = format!("[system]\n{system}\n\n[user]\n{user}");
            if ctx.run_dir.is_some() {
                let file = scratch.join("prompt.md");
                std::fs::write(&file, &record)
                    .map_err(|e| Error::io(format!("cannot write {}", file.display()), e))?;
            }
            let ex = self.chat(&system, &user, answer_no, &mut transcript);
            usage.add(&ex.usage);
            let done = |output: TaskOutput, usage: Usage, transcript: String| {
                if let Some(dir) = &ctx.run_dir {
                    let _ = std::fs::write(dir.join("transcript.txt"), &transcript);
                }
                Ok(DriverOutput {
                    output,
                    prompt: record.clone(),
                    raw: ex.body.clone(),
                    transcript: Some(transcript),
                    usage,
                })
            };
            let text = match &ex.reply {
                Ok(text) => text,
                Err(reason) => return done(self.failed(reason), usage, transcript),
            };
            let problem = match result::parse_in(text, deliverable, Some(&ctx.workdir)) {
                Err(e) if code => format!(
                    "{e}\n\nNothing of this answer was applied: send the whole answer again, \
                     the ```diff block and the result block."
                ),
                Err(e) => e.message,
                Ok(output) if !code || output.outcome != Outcome::Completed => {
                    return done(output, usage, transcript);
                }
                Ok(mut output) => match self.hand_over(
                    text,
                    &mut output,
                    &ctx.workdir,
                    &scratch,
                    answer_no,
                    &mut transcript,
                ) {
                    Ok(()) => return done(output, usage, transcript),
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
                            let reason = format!("its change was not applied: {p}");
                            return done(self.failed(&reason), usage, transcript);
                        }
                        format!(
                            "{p}\n\nThe files are unchanged, as shown above. Send the whole \
                             change again as one diff against them, then the result block."
                        )
                    }
                },
            };
            if answer_no >= CONTRACT_TRIES {
                let first = problem.lines().next().unwrap_or_default();
                let reason = format!(
                    "its result was rejected {CONTRACT_TRIES} times; the last problem: {first}"
                );
                return done(self.failed(&reason), usage, transcript);
            }
            user = prompt::retry_prompt(&base, &problem, text);
        }
    }
}

/// What one question came to.
struct Exchange {
    /// The answer's text, or why there is none.
    reply: std::result::Result<String, String>,
    /// The last response body.
    body: String,
    /// Tokens, model and time.
    usage: Usage,
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
fn completion(body: &str) -> std::result::Result<(String, Usage), String> {
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
    Ok((text, usage))
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
fn code_section(input: &TaskInput, workdir: &Path, prompt: &str) -> String {
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
    let mut order: Vec<usize> = if total as usize <= CODE_BUDGET {
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
    order.retain(|&i| sizes[i].is_some_and(|s| s as usize <= CODE_FILE_LIMIT));
    for i in order {
        let Ok(bytes) = std::fs::read(workdir.join(&files[i])) else {
            continue;
        };
        let Ok(text) = String::from_utf8(bytes) else {
            continue;
        };
        if text.contains('\0') || used + text.len() > CODE_BUDGET {
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
        if listing.len() + line.len() > LISTING_BUDGET {
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
    let mut cmd = Command::new("git");
    cmd.current_dir(dir);
    for var in crate::process::GIT_LOCATION_VARS {
        cmd.env_remove(var);
    }
    cmd
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
    use crate::testutil::git as hermetic_git;

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
                    }
                }
            });
            Server {
                addr,
                seen,
                stop,
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
