//! Drivers: the [`Driver`] trait, [`driver_for`], and the engine every CLI driver shares —
//! with the `command` driver (any program: argv from the config, the prompt on stdin, the
//! result block on stdout) as its simplest user. The presets for real agent CLIs are in
//! [`super::presets`]; each says how to call its CLI and how to read what it printed.
//!
//! One run of a CLI driver: load the role's instructions, build the prompt, give the program
//! a fresh home, run it in the task's working directory under a wall-clock limit, ask the
//! preset whether the run succeeded (exit codes alone do not tell: several CLIs exit 0 after
//! a denied tool or an API error), then parse the result block. A block that breaks the
//! contract is sent back with the problem, at most twice; after that the task fails and the
//! raw output stays in the [`DriverOutput`] for the run record.

use std::path::{Path, PathBuf};

use super::config::AgentSpec;
use super::contract::{self, Turn};
use super::process::home::Home;
use super::process::{self, Invocation, RetryPolicy};
use super::prompt::{self, PROMPT_LIMIT, RoleSpecs};
use super::result::{self, Deliverable};
use super::{Agent, TaskInput, TaskOutput};
use tlv4_core::error::{Error, Result};
use tlv4_core::model::Role;

pub use super::contract::CONTRACT_TRIES;

/// Drivers this module provides, besides the presets.
const OWN_DRIVERS: [&str; 2] = ["builtin", "command"];
/// Drivers named by the design that live elsewhere.
const OTHER_DRIVERS: [&str; 2] = ["openai", "replay"];

/// Runs one task on one agent.
pub trait Driver: Send + Sync {
    /// The agent's name (`[agents.<name>]`), or `builtin`.
    fn name(&self) -> &str;
    /// Whether the agent works in a checkout: a task worktree for code tasks, a read-only
    /// view for document tasks. In-process agents (the builtin one) read the task input only.
    fn checkout(&self) -> bool {
        true
    }
    /// Whether the agent is a program that can run commands in its checkout (a CLI with a
    /// shell, or whatever a configured program does): it then gets the checkout prepared with
    /// the project's environment, as the tester will have it. An agent that only edits files
    /// needs none.
    fn runs_commands(&self) -> bool {
        false
    }
    /// Does the task. Blocks; runs on a worker thread.
    fn run(&self, input: &TaskInput, ctx: &RunContext) -> Result<DriverOutput>;
    /// Checks what can be checked before any task runs (the program is there), so that a
    /// run that cannot work stops before it writes anything.
    fn preflight(&self) -> Result<()> {
        Ok(())
    }
}

/// Where and how a task runs.
#[derive(Debug, Clone)]
pub struct RunContext {
    /// The working directory: the task's worktree (code tasks) or a read-only view of the
    /// session tip (document tasks).
    pub workdir: PathBuf,
    /// Where to keep the prompt and the transcript, if anywhere.
    pub run_dir: Option<PathBuf>,
    /// The attempt number of the task (1 for the first claim).
    pub attempt: u32,
    /// Counts the tokens of the answer as they arrive, for the progress line.
    pub meter: super::meter::Meter,
    /// When the run must be over at the latest, whatever the agent's own `timeout` (a
    /// discussion turn's limit); `None`: the agent's timeout alone.
    pub deadline: Option<std::time::Instant>,
    /// The environment of the prepared checkout (its own `.venv/bin` and `node_modules/.bin`
    /// first, the user's virtualenv and import paths left out), for an agent that runs
    /// commands there; `None`: the inherited one.
    pub env: Option<tlv4_core::environment::isolate::RunEnv>,
    /// The shell a code task's agent gets in its checkout, when the session runs with shell
    /// on (decided at `start`, where the kernel's sandbox is full); `None`: the CLI's tools
    /// without a shell.
    pub shell: Option<Shell>,
    /// The task's bound in US dollars (`[budget] task_usd`), passed to a CLI that has a
    /// bound of its own (Claude Code's `--max-budget-usd`); the token bound is the meter's.
    pub max_usd: Option<f64>,
}

/// What an agent's shell is for: running the project's build and tests in its checkout, the
/// kernel's sandbox keeping it there. Given only to code tasks of a session that runs with
/// shell on (see [`tlv4_core::model::Settings::shell`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Shell {
    /// The project's test command, as the tester would run it, and where it comes from;
    /// `None`: the tool knows of none.
    pub tests: Option<TestCommand>,
    /// Whether the checkout was prepared with the project's environment (its setup ran).
    pub prepared: bool,
}

/// The command that runs the project's tests: the tool's choice, never the agent's.
#[derive(Debug, Clone, PartialEq)]
pub struct TestCommand {
    /// The command (`sh -c`, from the checkout's root).
    pub command: String,
    /// Where it comes from (`.tlv4.toml [tests] command`, or the files that show it).
    pub from: String,
}

/// A directory for the files of one run: the run directory, or a temporary one that goes
/// when this is dropped.
pub struct Scratch {
    path: PathBuf,
    _temp: Option<tempfile::TempDir>,
}

impl Scratch {
    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The error of a run its caller cancelled.
fn cancelled(agent: &str, ctx: &RunContext) -> Error {
    Error::Invalid(format!(
        "agent `{agent}` was stopped: {}",
        ctx.meter.cancelled().unwrap_or_default()
    ))
}

/// `timeout` from now, cut short at `deadline` (none: the timeout alone).
pub fn bounded(
    timeout: std::time::Duration,
    deadline: Option<std::time::Instant>,
) -> std::time::Duration {
    deadline.map_or(timeout, |d| {
        timeout.min(d.saturating_duration_since(std::time::Instant::now()))
    })
}

impl RunContext {
    /// The time a run with the agent's `timeout` may take from now: the timeout, cut short at
    /// the deadline.
    pub fn within(&self, timeout: std::time::Duration) -> std::time::Duration {
        bounded(timeout, self.deadline)
    }

    /// The directory for this run's files (prompt file, scratch files).
    pub fn scratch(&self) -> Result<Scratch> {
        match &self.run_dir {
            Some(dir) => {
                std::fs::create_dir_all(dir)
                    .map_err(|e| Error::io(format!("cannot create {}", dir.display()), e))?;
                Ok(Scratch {
                    path: dir.clone(),
                    _temp: None,
                })
            }
            None => {
                let temp = tempfile::Builder::new()
                    .prefix("tlv4-run-")
                    .tempdir()
                    .map_err(|e| Error::io("cannot create a directory for the run", e))?;
                Ok(Scratch {
                    path: temp.path().to_path_buf(),
                    _temp: Some(temp),
                })
            }
        }
    }
}

/// What a driver hands back: the task's output and what the run record keeps.
#[derive(Debug, Clone)]
pub struct DriverOutput {
    /// The task's output. A run that failed (a trap, a timeout, a broken contract) has a
    /// `Failed` outcome here rather than an error, so the record keeps what it printed.
    pub output: TaskOutput,
    /// The prompt of the last try.
    pub prompt: String,
    /// The program's standard output of the last try.
    pub raw: String,
    /// Every try: command line, exit, stdout and stderr.
    pub transcript: Option<String>,
    /// Tokens, cost and time over all tries.
    pub usage: Usage,
}

/// What a run cost.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Usage {
    /// Input tokens (cached ones included), where the CLI reports them.
    pub input_tokens: u64,
    /// Output tokens, where the CLI reports them.
    pub output_tokens: u64,
    /// Of the input tokens, those the service read from its cache (priced apart where the
    /// price table says), where it reports them.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_input_tokens: u64,
    /// Cost in US dollars, where the CLI reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// The model, as reported by the CLI or configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

impl Usage {
    /// Adds `other` to this usage; a reported model replaces the configured one.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cached_input_tokens += other.cached_input_tokens;
        self.cost_usd = match (self.cost_usd, other.cost_usd) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        self.seconds += other.seconds;
        if other.model.is_some() {
            self.model = other.model.clone();
        }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The driver of the agent `name` configured as `spec`; `repo_root` is where relative
/// paths and role overrides are looked up.
pub fn driver_for(name: &str, spec: &AgentSpec, repo_root: &Path) -> Result<Box<dyn Driver>> {
    match spec.driver.as_str() {
        "builtin" => Ok(Box::new(BuiltinDriver)),
        "command" => Ok(Box::new(CliDriver::new(
            name,
            spec,
            repo_root,
            Box::new(CommandCli),
        )?)),
        d => {
            if let Some(cli) = super::presets::preset(d) {
                return Ok(Box::new(CliDriver::new(name, spec, repo_root, cli)?));
            }
            if d == "openai" {
                return Ok(Box::new(super::openai::OpenAiDriver::new(
                    name, spec, repo_root,
                )?));
            }
            if d == "replay" {
                let sid = spec.session.as_deref().filter(|s| !s.is_empty()).ok_or_else(|| {
                    Error::state(
                        format!("agent `{name}`: the `replay` driver needs `session`"),
                        Some(format!(
                            "set `session = \"TLV4-…\"` under [agents.{name}], or use `--replay SID`"
                        )),
                    )
                })?;
                return Ok(Box::new(super::replay::ReplayDriver::new(
                    name, sid, repo_root,
                )?));
            }
            let known: Vec<&str> = OWN_DRIVERS
                .iter()
                .chain(super::presets::PRESETS.iter())
                .chain(OTHER_DRIVERS.iter())
                .copied()
                .collect();
            Err(Error::Invalid(format!(
                "agent `{name}`: unknown driver `{d}`; known drivers: {}",
                known.join(", ")
            )))
        }
    }
}

/// [`driver_for`], with prompts built from `specs` (a session's pinned role instructions)
/// instead of the working tree's.
pub fn driver_with_specs(
    name: &str,
    spec: &AgentSpec,
    repo_root: &Path,
    specs: &RoleSpecs,
) -> Result<Box<dyn Driver>> {
    match spec.driver.as_str() {
        "command" => {
            let mut d = CliDriver::new(name, spec, repo_root, Box::new(CommandCli))?;
            d.specs = specs.clone();
            Ok(Box::new(d))
        }
        "openai" => Ok(Box::new(
            super::openai::OpenAiDriver::new(name, spec, repo_root)?.with_specs(specs.clone()),
        )),
        d => match super::presets::preset(d) {
            Some(cli) => {
                let mut d = CliDriver::new(name, spec, repo_root, cli)?;
                d.specs = specs.clone();
                Ok(Box::new(d))
            }
            None => driver_for(name, spec, repo_root),
        },
    }
}

/// One agent CLI: how to call it and how to read what it printed.
pub trait Cli: Send + Sync {
    /// The driver name (`claude`, `command`, …).
    fn name(&self) -> &'static str;
    /// The program when the agent names none.
    fn default_program(&self) -> Option<&'static str>;
    /// Arguments, environment and stdin for one run.
    fn launch(&self, call: &Call<'_>) -> Result<Launch>;
    /// Reads a finished run (not a timed-out one): the agent's final answer, or why the run
    /// failed.
    fn read(&self, call: &Call<'_>, out: &process::Output) -> Reply;
    /// Whether the CLI, given a shell (see [`Call::shell`]), offers the model a shell tool;
    /// `false` for one that only runs the project's tests after its edits (Aider).
    fn has_shell(&self) -> bool {
        true
    }
    /// Whether a run failed for a passing reason (a rate limit) and is worth repeating.
    fn transient(&self, _out: &process::Output) -> bool {
        false
    }
    /// Where a failed run put its error (a result's text, an error event, stderr), for the
    /// limits of the CLI's service to be recognised in (see [`super::limits`]); `None` for a
    /// run that did not fail, or whose output holds no error of its service.
    fn failure_text(&self, _out: &process::Output) -> Option<String> {
        None
    }
    /// A reader of the CLI's stdout events for one run, returning the output tokens reported
    /// so far whenever a line tells; `None` when the CLI's output gives none while it runs.
    fn token_counter(&self) -> Option<TokenCounter> {
        None
    }
}

/// See [`Cli::token_counter`]: given each stdout line, the output tokens reported so far.
pub type TokenCounter = Box<dyn FnMut(&str) -> Option<u64> + Send>;

/// Everything a [`Cli`] needs to build one run.
pub struct Call<'a> {
    /// The agent's name.
    pub agent: &'a str,
    /// Its configuration.
    pub spec: &'a AgentSpec,
    /// The task.
    pub input: &'a TaskInput,
    /// Documents or code.
    pub deliverable: Deliverable,
    /// The prompt.
    pub prompt: &'a str,
    /// The same prompt, in a file.
    pub prompt_file: &'a Path,
    /// A directory for files of this run (next to the prompt file).
    pub scratch: &'a Path,
    /// The agent's home.
    pub home: &'a Home,
    /// The working directory.
    pub workdir: &'a Path,
    /// The shell the run gets (see [`RunContext::shell`]).
    pub shell: Option<&'a Shell>,
    /// The task's bound in dollars, for a CLI with a bound of its own (see
    /// [`RunContext::max_usd`]).
    pub max_usd: Option<f64>,
    /// The run's bound in tokens, if it has one: a CLI that can report its tokens as it goes
    /// is asked to (the run is stopped once they cross it).
    pub token_bound: Option<u64>,
}

impl Call<'_> {
    /// Whether the task changes code.
    pub fn writes_code(&self) -> bool {
        self.deliverable == Deliverable::Code
    }

    /// The shell of a code task whose session runs with shell on; document tasks never get
    /// one.
    pub fn shell(&self) -> Option<&Shell> {
        self.shell.filter(|_| self.writes_code())
    }

    /// The configured model.
    pub fn model(&self) -> Option<&str> {
        self.spec.model.as_deref().filter(|m| !m.is_empty())
    }
}

/// How to start one run.
#[derive(Debug, Clone, Default)]
pub struct Launch {
    /// Arguments after the program.
    pub args: Vec<String>,
    /// Environment of the CLI (the agent's own `env` is applied over it).
    pub env: Vec<(String, String)>,
    /// What goes on stdin.
    pub stdin: Option<Vec<u8>>,
}

/// What a run said.
#[derive(Debug, Clone)]
pub enum Reply {
    /// The agent's final answer, to be parsed for the result block.
    Answer {
        /// The answer text.
        text: String,
        /// What the CLI reported about tokens and cost.
        usage: Usage,
    },
    /// The run failed although it may have exited 0.
    Failed {
        /// Why, for the user.
        reason: String,
        /// What the CLI reported about tokens and cost.
        usage: Usage,
    },
    /// The CLI stopped at the task's bound it was given (Claude Code's `--max-budget-usd`).
    OverBound {
        /// What it said, one line.
        detail: String,
    },
}

/// The engine behind the `command` driver and every preset.
pub struct CliDriver {
    agent: String,
    spec: AgentSpec,
    repo_root: PathBuf,
    cli: Box<dyn Cli>,
    specs: RoleSpecs,
    timeout: std::time::Duration,
    retry: RetryPolicy,
    kill_grace: std::time::Duration,
}

impl CliDriver {
    /// A driver for agent `agent` running `cli`; fails on a bad `timeout`, a `command`
    /// driver without `program`, or unreadable role overrides.
    pub fn new(
        agent: &str,
        spec: &AgentSpec,
        repo_root: &Path,
        cli: Box<dyn Cli>,
    ) -> Result<CliDriver> {
        if cli.default_program().is_none() && spec.program.as_deref().is_none_or(str::is_empty) {
            return Err(Error::state(
                format!(
                    "agent `{agent}`: the `{}` driver needs `program`",
                    cli.name()
                ),
                Some(format!(
                    "set `program` (and `args`) under [agents.{agent}] in .tlv4.toml"
                )),
            ));
        }
        let timeout = match &spec.timeout {
            Some(t) => process::duration::parse_duration(t)
                .map_err(|e| Error::Invalid(format!("agent `{agent}`: `timeout`: {e}")))?,
            None => process::duration::DEFAULT_TIMEOUT,
        };
        Ok(CliDriver {
            agent: agent.to_owned(),
            spec: spec.clone(),
            repo_root: repo_root.to_path_buf(),
            cli,
            specs: RoleSpecs::load(repo_root)?,
            timeout,
            retry: RetryPolicy::default(),
            kill_grace: process::KILL_GRACE,
        })
    }

    /// The same driver with another policy for transient failures.
    #[cfg(test)]
    pub fn with_retry(mut self, retry: RetryPolicy) -> CliDriver {
        self.retry = retry;
        self
    }

    /// The program to run, found as the shell would (or relative to the repository).
    fn program(&self) -> Result<PathBuf> {
        let name = self
            .spec
            .program
            .as_deref()
            .filter(|p| !p.is_empty())
            .or(self.cli.default_program())
            .unwrap_or_default();
        let path_var = self.spec.env.get("PATH").map(std::ffi::OsStr::new);
        process::lookup::find_program(&self.agent, name, &self.repo_root, path_var)
    }

    fn failed(&self, reason: &str) -> TaskOutput {
        contract::failed(
            &format!("agent `{}` ({})", self.agent, self.cli.name()),
            reason,
        )
    }

    fn env(&self, call: &Call<'_>, ctx: &RunContext, launch: &Launch) -> Vec<(String, String)> {
        let input = call.input;
        let mut env = call.home.env();
        let sid = input.session.id.as_str();
        env.extend([
            (
                process::home::PROMPT_FILE_ENV.to_owned(),
                call.prompt_file.display().to_string(),
            ),
            ("TLV4_SESSION".into(), sid.to_owned()),
            ("TLV4_TASK".into(), input.task.id.to_string()),
            ("TLV4_ROLE".into(), input.task.role.to_string()),
            ("TLV4_ATTEMPT".into(), ctx.attempt.to_string()),
            (
                "TLV4_OUTPUT".into(),
                if call.writes_code() {
                    "code"
                } else {
                    "documents"
                }
                .into(),
            ),
            (
                "TLV4_PIPELINE_FOLDER".into(),
                format!(".tlv4/sessions/{sid}"),
            ),
        ]);
        env.extend(launch.env.iter().cloned());
        process::home::merge_env(env, &self.spec.env)
    }
}

impl Driver for CliDriver {
    fn name(&self) -> &str {
        &self.agent
    }

    fn preflight(&self) -> Result<()> {
        self.program().map(|_| ())
    }

    fn runs_commands(&self) -> bool {
        true
    }

    fn run(&self, input: &TaskInput, ctx: &RunContext) -> Result<DriverOutput> {
        let task = &input.task;
        let deliverable = Deliverable::of(&task.role);
        let role_spec = self.specs.role(task.role.as_str());
        let template = if task.role == Role::Writer {
            self.specs.template(&task.phase)
        } else {
            None
        };
        // `prompt_budget` (estimated tokens) bounds the prompt below the CLIs' own limit.
        let limit = self
            .spec
            .prompt_budget
            .and_then(|t| usize::try_from(t).ok())
            .map_or(PROMPT_LIMIT, |t| {
                t.saturating_mul(prompt::CHARS_PER_TOKEN).min(PROMPT_LIMIT)
            });
        let retry_reserve = prompt::RETRY_RESERVE.min(limit / 5);
        let commands = ctx.shell.as_ref().and_then(|shell| {
            if self.cli.has_shell() {
                Some(prompt::Commands::Shell(shell))
            } else {
                // Without a shell, only a known test command gives it any.
                shell
                    .tests
                    .is_some()
                    .then_some(prompt::Commands::TestsAfterEdits(shell))
            }
        });
        let composed = prompt::compose_with(
            input,
            &role_spec,
            template,
            self.specs.contract(),
            limit - retry_reserve,
            commands,
        );
        let base = composed.text.clone();

        let program = self.program()?;
        let home = Home::new(self.spec.home.as_deref(), &self.repo_root)?;
        let scratch_dir = ctx.scratch()?;
        let scratch = scratch_dir.path().to_path_buf();
        let prompt_file = scratch.join("prompt.md");

        let mut usage = Usage {
            model: self.spec.model.clone(),
            ..Usage::default()
        };
        let mut transcript = format!("=== prompt: {} ===\n", composed.report());
        let mut confined = None;
        // What the last answer left: its prompt and what the program printed.
        let mut last_prompt = base.clone();
        let mut raw = String::new();
        let settled = contract::negotiate(&base, retry_reserve, |answer_no, prompt| {
            // A run over its bound asks for no other answer.
            if let Some(over) = ctx.meter.over_bound() {
                return Err(super::meter::over_bound_error(&self.agent, over));
            }
            last_prompt = prompt.to_owned();
            std::fs::write(&prompt_file, prompt)
                .map_err(|e| Error::io(format!("cannot write {}", prompt_file.display()), e))?;
            let call = Call {
                agent: &self.agent,
                spec: &self.spec,
                input,
                deliverable,
                prompt,
                prompt_file: &prompt_file,
                scratch: &scratch,
                home: &home,
                workdir: &ctx.workdir,
                shell: ctx.shell.as_ref(),
                max_usd: ctx.max_usd,
                token_bound: ctx.meter.bound(),
            };
            let launch = self.cli.launch(&call)?;
            let mut inv = Invocation::new(&program, &ctx.workdir);
            inv.env = self.env(&call, ctx, &launch);
            if let Some(prepared) = &ctx.env {
                // The checkout's environment first; the agent's own settings still win.
                let mut env = prepared.set.clone();
                env.append(&mut inv.env);
                inv.env = env;
                inv.env_remove = prepared.remove.clone();
            }
            inv.args = trusted_copies(launch.args, &self.spec.args, &self.repo_root);
            inv.stdin = launch.stdin;
            inv.timeout = ctx.within(self.timeout);
            inv.kill_grace = self.kill_grace;
            if confined.is_none() {
                confined = Some(confine(&call, ctx, &program, &inv, &self.repo_root)?);
            }
            inv.sandbox = confined.clone();
            inv.env_remove.extend(
                tlv4_core::sandbox::SOCKET_VARS
                    .iter()
                    .map(|v| (*v).to_owned()),
            );
            inv.env.push((
                "TMPDIR".to_owned(),
                home.path().join(".tmp").display().to_string(),
            ));
            // Stops a run whose tokens cross the task's bound.
            // Or that its caller cancels (another candidate of its task won).
            let stop = ctx.meter.stopper();
            inv.stop = Some(stop.clone());
            if ctx.meter.cancelled().is_some() {
                return Err(cancelled(&self.agent, ctx));
            }
            if let Some(mut count) = self.cli.token_counter() {
                // Adds what each event line reports beyond what was counted already.
                let meter = ctx.meter.clone();
                let stopper = stop.clone();
                let seen = std::sync::Mutex::new(0u64);
                let count = std::sync::Mutex::new(move |l: &str| count(l));
                inv.on_line = Some(process::LineSink(std::sync::Arc::new(move |l: &str| {
                    let reported = (count.lock().unwrap_or_else(|p| p.into_inner()))(l);
                    if let Some(total) = reported {
                        let mut seen = seen.lock().unwrap_or_else(|p| p.into_inner());
                        meter.add(total.saturating_sub(*seen));
                        *seen = (*seen).max(total);
                        if meter.over_bound().is_some() {
                            stopper.request();
                        }
                    }
                })));
            }
            // A usage limit is not repeated; a rate limit is, as any passing failure.
            let limit = |o: &process::Output| {
                self.cli
                    .failure_text(o)
                    .and_then(|t| super::limits::recognise(self.cli.name(), &t))
            };
            let transient = |o: &process::Output| match limit(o) {
                Some(l) => l.passing(tlv4_core::clock::now_ms()),
                None => self.cli.transient(o),
            };
            let (out, runs) = process::run_with_retries(&inv, &self.retry, &transient)?;
            // A service that failed (not the agent) is said on the meter: the loop sends the
            // task to the next agent of its role's fail-over list.
            if !out.timed_out
                && limit(&out).is_none()
                && let Some(t) = self
                    .cli
                    .failure_text(&out)
                    .filter(|t| super::limits::service_failure(t))
            {
                ctx.meter.api_error(tlv4_core::text::one_line(&t));
            }
            usage.seconds += out.seconds;
            transcript.push_str(&transcript_entry(answer_no, runs, &inv, &out));
            raw = out.stdout.clone();
            let reply = (!out.timed_out).then(|| self.cli.read(&call, &out));
            let ended = if ctx.meter.cancelled().is_some() {
                Some(cancelled(&self.agent, ctx))
            } else if let Some(l) = limit(&out).filter(|_| !out.timed_out) {
                Some(l.error(&self.agent))
            } else if let Some(Reply::OverBound { detail }) = &reply {
                Some(Error::OverBound {
                    agent: self.agent.clone(),
                    detail: detail.clone(),
                })
            } else if stop.requested() && !matches!(reply, Some(Reply::Answer { .. })) {
                // Stopped at the bound before it answered (an answer that came all the same
                // is taken: the work is done).
                ctx.meter
                    .over_bound()
                    .map(|over| super::meter::over_bound_error(&self.agent, over))
            } else {
                None
            };
            if let Some(e) = ended {
                transcript.push_str(&format!("=== stopped: {e} ===\n"));
                keep_transcript(ctx, &transcript);
                return Err(e);
            }
            if out.timed_out {
                return Ok(Turn::Failed(format!(
                    "did not finish within {}; its process group was killed{}",
                    tlv4_core::process::duration::format_duration(inv.timeout),
                    match out.tail(3) {
                        t if t.is_empty() => String::new(),
                        t => format!(". Last output:\n{t}"),
                    }
                )));
            }
            Ok(match reply.unwrap_or_else(|| self.cli.read(&call, &out)) {
                Reply::OverBound { detail } => Turn::Failed(detail),
                Reply::Failed { reason, usage: u } => {
                    usage.add(&u);
                    Turn::Failed(reason)
                }
                Reply::Answer { text, usage: u } => {
                    usage.add(&u);
                    match result::parse_in(&text, deliverable, Some(&ctx.workdir)) {
                        Ok(output) => Turn::Done(output),
                        Err(e) => Turn::Rejected {
                            problem: e.message,
                            answer: text,
                        },
                    }
                }
            })
        })?;
        let output = settled.unwrap_or_else(|reason| self.failed(&reason));
        keep_transcript(ctx, &transcript);
        Ok(DriverOutput {
            output,
            prompt: last_prompt,
            raw,
            transcript: Some(transcript),
            usage,
        })
    }
}

/// Writes the transcript of a run to its run directory, if it has one.
fn keep_transcript(ctx: &RunContext, transcript: &str) {
    if let Some(dir) = &ctx.run_dir {
        let _ = std::fs::write(dir.join("transcript.txt"), transcript);
    }
}

/// One answer in the transcript: the command line, how it ended, and what it printed.
fn transcript_entry(answer: u32, runs: u32, inv: &Invocation, out: &process::Output) -> String {
    let ending = if out.timed_out {
        "timed out".to_owned()
    } else {
        out.describe_exit()
    };
    let dropped = if out.dropped > 0 {
        format!(", {} bytes of output dropped", out.dropped)
    } else {
        String::new()
    };
    format!(
        "=== answer {answer} (run {runs}): {} ===\n{ending}, {:.1}s{dropped}\n\
         --- stdout ---\n{}\n--- stderr ---\n{}\n",
        inv.display(),
        out.seconds,
        out.stdout.trim_end(),
        out.stderr.trim_end(),
    )
}

/// `args` with each argument that names a file of the repository as it stands in `spec_args`
/// (relative, no placeholder, not an option) made absolute in `repo_root`: the agent runs in
/// its task's checkout, where an earlier task of the session may have rewritten that file,
/// but trust covered the copy in the working tree (see [`tlv4_core::trust`]), so that is the one
/// that runs — as a relative `program` is found in the working tree too.
fn trusted_copies(args: Vec<String>, spec_args: &[String], repo_root: &Path) -> Vec<String> {
    args.into_iter()
        .map(|a| {
            let named = !a.is_empty()
                && !a.starts_with('-')
                && !a.starts_with('~')
                && !a.contains('{')
                && Path::new(&a).is_relative()
                && spec_args.contains(&a);
            match named.then(|| repo_root.join(&a)).filter(|p| p.is_file()) {
                Some(p) => p.display().to_string(),
                None => a,
            }
        })
        .collect()
}

/// The `command` driver: `program` with `args` (placeholders `{model}`, `{prompt_file}`,
/// `{workdir}`, `{task}` and `{role}` replaced inside each argument, never through a shell),
/// the prompt on stdin and in `$TLV4_PROMPT_FILE`, the answer on stdout, exit 0 for success.
pub struct CommandCli;

impl Cli for CommandCli {
    fn name(&self) -> &'static str {
        "command"
    }

    fn default_program(&self) -> Option<&'static str> {
        None
    }

    fn launch(&self, call: &Call<'_>) -> Result<Launch> {
        let mut args = Vec::with_capacity(call.spec.args.len());
        for a in &call.spec.args {
            if a.contains("{model}") && call.model().is_none() {
                return Err(Error::state(
                    format!(
                        "agent `{}`: `args` use {{model}} but `model` is not set",
                        call.agent
                    ),
                    Some(format!("set `model` under [agents.{}]", call.agent)),
                ));
            }
            args.push(
                a.replace("{model}", call.model().unwrap_or_default())
                    .replace("{prompt_file}", &call.prompt_file.display().to_string())
                    .replace("{workdir}", &call.workdir.display().to_string())
                    .replace("{task}", call.input.task.id.as_str())
                    .replace("{role}", call.input.task.role.as_str()),
            );
        }
        Ok(Launch {
            args,
            env: Vec::new(),
            stdin: Some(call.prompt.as_bytes().to_vec()),
        })
    }

    fn read(&self, _call: &Call<'_>, out: &process::Output) -> Reply {
        if out.success() {
            Reply::Answer {
                text: out.stdout.clone(),
                usage: Usage::default(),
            }
        } else {
            Reply::Failed {
                reason: format!(
                    "the program failed ({}): {}",
                    out.describe_exit(),
                    out.tail(5)
                ),
                usage: Usage::default(),
            }
        }
    }
}

/// The confinement of one agent run (see [`tlv4_core::sandbox::for_agent`]), built before it
/// starts: the places of `call`, its program and the environment of `inv`.
fn confine(
    call: &Call<'_>,
    ctx: &RunContext,
    program: &Path,
    inv: &Invocation,
    repo_root: &Path,
) -> Result<std::sync::Arc<tlv4_core::sandbox::Prepared>> {
    let spec = call.spec;
    let tmp = call.home.path().join(".tmp");
    std::fs::create_dir_all(&tmp)
        .map_err(|e| Error::io(format!("cannot make {}", tmp.display()), e))?;
    let inherited = std::env::var("PATH").unwrap_or_default();
    let path = inv
        .env
        .iter()
        .rev()
        .find(|(k, _)| k == "PATH")
        .map_or(inherited.as_str(), |(_, v)| v.as_str());
    let places = tlv4_core::sandbox::AgentPlaces {
        workdir: &ctx.workdir,
        writes: call.writes_code(),
        home: call.home.path(),
        scratch: call.scratch,
        program,
        path,
        // The agent's `url` too: several presets hand it over in a config file or an
        // argument rather than a variable (Codex, OpenCode, Aider).
        values: inv
            .env
            .iter()
            .map(|(_, v)| v.as_str())
            .chain(spec.url.as_deref())
            .collect(),
        writes_more: spec
            .writes
            .iter()
            .map(|w| process::lookup::expand_home(w, repo_root))
            .collect(),
        // The files its arguments name (a script it runs), and what it is granted.
        reads_more: inv
            .args
            .iter()
            .map(|a| ctx.workdir.join(a))
            .filter(|p| p.is_file())
            .chain(
                spec.reads
                    .iter()
                    .map(|r| process::lookup::expand_home(r, repo_root)),
            )
            .collect(),
    };
    Ok(std::sync::Arc::new(
        tlv4_core::sandbox::for_agent(&places).prepare()?,
    ))
}

/// The builtin agent behind the [`Driver`] trait.
pub struct BuiltinDriver;

impl Driver for BuiltinDriver {
    fn name(&self) -> &str {
        "builtin"
    }

    fn checkout(&self) -> bool {
        false
    }

    fn run(&self, input: &TaskInput, _ctx: &RunContext) -> Result<DriverOutput> {
        let started = std::time::Instant::now();
        let output = super::builtin::Builtin.run(input)?;
        Ok(DriverOutput {
            output,
            prompt: String::new(),
            raw: String::new(),
            transcript: None,
            usage: Usage {
                seconds: started.elapsed().as_secs_f64(),
                model: Some("builtin".into()),
                ..Usage::default()
            },
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use super::*;
    use crate::agents::Outcome;
    use crate::agents::prompt::RETRY_HEADING;
    use crate::agents::prompt::tests::{empty_code, input};

    pub(crate) fn fixture(name: &str) -> String {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/agents")
            .join(name)
            .display()
            .to_string()
    }

    /// `PATH` with the directory of the real `python3` first: version managers put a
    /// slow shell shim in front of it, and the fakes start dozens of times.
    fn fast_path() -> &'static str {
        static PATH: std::sync::OnceLock<String> = std::sync::OnceLock::new();
        PATH.get_or_init(|| {
            let path = std::env::var("PATH").unwrap_or_default();
            let exe = std::process::Command::new("python3")
                .args(["-c", "import sys; print(sys.executable)"])
                .output()
                .ok()
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
                .unwrap_or_default();
            match Path::new(&exe).parent() {
                Some(dir) if !exe.is_empty() => format!("{}:{path}", dir.display()),
                _ => path,
            }
        })
    }

    /// A spec for the fake `program` with `env`.
    pub(crate) fn spec(driver: &str, program: &str, env: &[(&str, &str)]) -> AgentSpec {
        let mut env: BTreeMap<String, String> = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        env.entry("PATH".into())
            .or_insert_with(|| fast_path().to_owned());
        // The fakes log to the files their variables name: their sandbox lets them.
        let writes = env
            .iter()
            .filter(|(k, v)| k.as_str() != "PATH" && v.starts_with('/'))
            .filter_map(|(_, v)| Some(Path::new(v).parent()?.display().to_string()))
            .collect();
        AgentSpec {
            driver: driver.into(),
            program: Some(fixture(program)),
            env,
            timeout: Some("20s".into()),
            writes,
            ..AgentSpec::default()
        }
    }

    pub(crate) fn writer_input() -> (tempfile::TempDir, TaskInput) {
        let (d, code) = empty_code();
        let input = input(
            "DRAFT-002",
            "writer",
            "PURPOSE: requirements\nEXPECTED: spec/requirements/\n",
            &[("wisdom/learnings.md", "# Learnings\n\n- be brief\n")],
            code,
        );
        (d, input)
    }

    pub(crate) fn executor_input() -> (tempfile::TempDir, TaskInput) {
        let (d, code) = empty_code();
        let input = input(
            "IMPL-001",
            "executor",
            "PURPOSE: implement\nEXPECTED: a commit on the task branch\n",
            &[],
            code,
        );
        (d, input)
    }

    pub(crate) fn ctx(workdir: &Path) -> RunContext {
        RunContext {
            max_usd: None,
            workdir: workdir.to_path_buf(),
            run_dir: None,
            attempt: 1,
            meter: Default::default(),
            deadline: None,
            env: None,
            shell: None,
        }
    }

    pub(crate) fn failure(out: &DriverOutput) -> &str {
        match &out.output.outcome {
            Outcome::Failed(r) => r,
            Outcome::Completed => panic!("expected a failure: {:?}", out.output),
        }
    }

    #[test]
    fn command_driver_runs_documents_with_placeholders() {
        let work = tempfile::tempdir().unwrap();
        let run_dir = work.path().join("run");
        let log = work.path().join("log");
        let mut spec = spec(
            "command",
            "fake-command",
            &[("FAKE_AGENT_LOG", log.to_str().unwrap())],
        );
        spec.model = Some("local-7b".into());
        spec.args = vec![
            "--model".into(),
            "{model}".into(),
            "--prompt-file={prompt_file}".into(),
        ];
        let driver = driver_for("mine", &spec, work.path()).unwrap();
        assert_eq!(driver.name(), "mine");
        let (_d, input) = writer_input();
        let mut ctx = ctx(work.path());
        ctx.run_dir = Some(run_dir.clone());
        let out = driver.run(&input, &ctx).unwrap();
        assert_eq!(
            out.output.outcome,
            Outcome::Completed,
            "{:?}",
            out.transcript
        );
        assert_eq!(out.output.summary, "fake-command did DRAFT-002");
        assert_eq!(out.output.files[0].0, "spec/requirements/_index.md");
        assert!(
            out.output
                .state_update
                .key_findings
                .contains(&"model local-7b".to_owned())
        );
        assert!(out.raw.contains("```json"));
        assert_eq!(
            std::fs::read_to_string(run_dir.join("prompt.md")).unwrap(),
            out.prompt
        );
        assert!(run_dir.join("transcript.txt").exists());
        assert!(out.usage.seconds > 0.0);
        assert_eq!(out.usage.model.as_deref(), Some("local-7b"));
        let argv = std::fs::read_to_string(log.join("argv-1.json")).unwrap();
        assert!(argv.contains(&format!(
            "--prompt-file={}",
            run_dir.join("prompt.md").display()
        )));
        // The environment: an isolated home, the task, no git location from outside.
        let env: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(log.join("env-1.json")).unwrap())
                .unwrap();
        assert!(env["HOME"].as_str().unwrap().contains("tlv4-agent-"));
        assert_eq!(env["TLV4_TASK"], "DRAFT-002");
        assert_eq!(env["TLV4_OUTPUT"], "documents");
        assert_eq!(
            Path::new(env["cwd"].as_str().unwrap())
                .canonicalize()
                .unwrap(),
            work.path().canonicalize().unwrap()
        );
        // The home is gone afterwards.
        assert!(!Path::new(env["HOME"].as_str().unwrap()).exists());
    }

    #[test]
    fn invalid_results_are_retried_with_the_error_then_fail_with_the_raw_output() {
        let work = tempfile::tempdir().unwrap();
        let log = work.path().join("log");
        let spec1 = spec(
            "command",
            "fake-command",
            &[
                ("FAKE_AGENT_MODE", "invalid_json"),
                ("FAKE_AGENT_LOG", log.to_str().unwrap()),
            ],
        );
        let driver = driver_for("mine", &spec1, work.path()).unwrap();
        let (_d, input) = writer_input();
        let out = driver.run(&input, &ctx(work.path())).unwrap();
        let why = failure(&out);
        assert!(why.contains("agent `mine` (command)"), "{why}");
        assert!(why.contains("rejected 3 times"), "{why}");
        assert!(why.contains("not valid JSON"), "{why}");
        assert!(
            out.raw.contains("\"key_findings\": [\"a\",]"),
            "{}",
            out.raw
        );
        assert!(out.transcript.as_deref().unwrap().contains("=== answer 3"));
        let prompt = |n: u32| std::fs::read_to_string(log.join(format!("prompt-{n}.txt"))).unwrap();
        assert!(!prompt(1).contains(RETRY_HEADING));
        for n in [2, 3] {
            assert!(prompt(n).contains(RETRY_HEADING), "prompt {n}");
            assert!(prompt(n).contains("not valid JSON"), "prompt {n}");
        }
        assert!(!log.join("prompt-4.txt").exists());
        assert_eq!(out.prompt, prompt(3));

        // A second answer that fixes the block completes the task.
        let spec2 = spec(
            "command",
            "fake-command",
            &[("FAKE_AGENT_MODE", "invalid_once")],
        );
        let out = driver_for("mine", &spec2, work.path())
            .unwrap()
            .run(&input, &ctx(work.path()))
            .unwrap();
        assert_eq!(out.output.outcome, Outcome::Completed);
        assert!(out.prompt.contains(RETRY_HEADING));
    }

    #[test]
    fn code_tasks_change_the_workdir() {
        let work = tempfile::tempdir().unwrap();
        let spec = spec("command", "fake-command", &[]);
        let (_d, input) = executor_input();
        let out = driver_for("mine", &spec, work.path())
            .unwrap()
            .run(&input, &ctx(work.path()))
            .unwrap();
        assert_eq!(
            out.output.outcome,
            Outcome::Completed,
            "{:?}",
            out.transcript
        );
        assert!(out.output.files.is_empty());
        assert_eq!(
            out.output.state_update.files_modified,
            vec!["fake-IMPL-001.txt"]
        );
        assert!(work.path().join("fake-IMPL-001.txt").exists());
    }

    #[test]
    fn a_deadline_stops_a_run_its_timeout_would_let_go_on() {
        let work = tempfile::tempdir().unwrap();
        let (_d, input) = writer_input();
        let mut spec = spec("command", "fake-command", &[("FAKE_AGENT_MODE", "hang")]);
        spec.timeout = Some("10m".into());
        let mut ctx = ctx(work.path());
        ctx.deadline = Some(std::time::Instant::now() + std::time::Duration::from_secs(1));
        let out = driver_for("mine", &spec, work.path())
            .unwrap()
            .run(&input, &ctx)
            .unwrap();
        // Stopped at the deadline (what was left of its second), not at ten minutes.
        let why = failure(&out);
        assert!(
            why.contains("did not finish within") && why.contains("ms;"),
            "{why}"
        );
        assert!(why.contains("process group was killed"), "{why}");
    }

    #[test]
    fn failures_timeouts_and_giant_output() {
        let work = tempfile::tempdir().unwrap();
        let (_d, input) = writer_input();
        let run = |mode: &str, timeout: &str| {
            let mut spec = spec("command", "fake-command", &[("FAKE_AGENT_MODE", mode)]);
            spec.timeout = Some(timeout.into());
            driver_for("mine", &spec, work.path())
                .unwrap()
                .run(&input, &ctx(work.path()))
                .unwrap()
        };
        let out = run("fail", "20s");
        let why = failure(&out);
        assert!(
            why.contains("exit code 3") && why.contains("something went wrong"),
            "{why}"
        );
        let out = run("crash", "20s");
        assert!(
            failure(&out).contains("killed by signal 11"),
            "{}",
            failure(&out)
        );
        let out = run("hang", "1s");
        let why = failure(&out);
        assert!(why.contains("did not finish within 1s"), "{why}");
        assert!(why.contains("process group was killed"), "{why}");
        let out = run("giant_output", "20s");
        assert_eq!(out.output.outcome, Outcome::Completed);
        assert!(
            out.raw.len() < 2 * process::CAPTURE_LIMIT + 1000,
            "{}",
            out.raw.len()
        );
        assert!(out.raw.contains("bytes of output were dropped here"));
    }

    #[test]
    fn driver_errors_are_clear() {
        let root = Path::new("/");
        let err = |spec: AgentSpec| match driver_for("mine", &spec, root) {
            Ok(_) => panic!("expected an error"),
            Err(e) => e.to_string(),
        };
        let mut s = AgentSpec {
            driver: "command".into(),
            ..AgentSpec::default()
        };
        assert!(err(s.clone()).contains("the `command` driver needs `program`"));
        s.driver = "telepathy".into();
        let e = err(s.clone());
        assert!(
            e.contains("unknown driver `telepathy`") && e.contains("claude"),
            "{e}"
        );
        s.driver = "replay".into();
        assert!(err(s.clone()).contains("the `replay` driver needs `session`"));
        s.driver = "openai".into();
        assert!(err(s.clone()).contains("the `openai` driver needs `url`"));
        s = spec("command", "fake-command", &[]);
        s.timeout = Some("soon".into());
        assert!(err(s.clone()).contains("invalid duration `soon`"));
        s.timeout = None;
        s.args = vec!["{model}".into()];
        let (_d, input) = writer_input();
        let e = driver_for("mine", &s, root)
            .unwrap()
            .run(&input, &ctx(Path::new("/tmp")))
            .unwrap_err()
            .to_string();
        assert!(e.contains("{model} but `model` is not set"), "{e}");
        // A missing program names the agent, the program and the PATH searched.
        s.args.clear();
        s.program = Some("no-such-agent-program".into());
        s.env.insert("PATH".into(), "/opt/nothing/bin".into());
        let e = driver_for("mine", &s, root)
            .unwrap()
            .run(&input, &ctx(Path::new("/tmp")))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("agent `mine`: program `no-such-agent-program` was not found in PATH (/opt/nothing/bin)"),
            "{e}"
        );
    }

    #[test]
    fn the_builtin_runs_behind_the_driver_trait() {
        let (_d, input) = executor_input();
        let spec = AgentSpec {
            driver: "builtin".into(),
            ..AgentSpec::default()
        };
        let out = driver_for("builtin", &spec, Path::new("/"))
            .unwrap()
            .run(&input, &ctx(Path::new("/")))
            .unwrap();
        assert_eq!(out.output.outcome, Outcome::Completed);
        assert!(out.output.summary.contains("cannot write code"));
    }

    /// An agent's `url` is a port its sandbox lets it connect to, whether or not its driver
    /// puts the URL in a variable (the `command` driver does not, nor does Codex's preset).
    #[test]
    fn an_agents_url_is_a_port_its_sandbox_may_connect_to() {
        if !tlv4_core::sandbox::level().active() {
            eprintln!("skipped: the sandbox is not full here");
            return;
        }
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let work = tempfile::tempdir().unwrap();
        let (_d, input) = executor_input();
        let script = format!(
            "import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=5).close()\n\
             print('```json')\nprint('{{\"summary\": \"connected\", \"state_update\": {{}}}}')\nprint('```')\n"
        );
        let mut spec = spec("command", "fake-command", &[]);
        spec.program = Some("python3".into());
        spec.args = vec!["-c".into(), script];
        spec.url = Some(format!("http://127.0.0.1:{port}/v1"));
        let run = |spec: &AgentSpec| {
            driver_for("mine", spec, work.path())
                .unwrap()
                .run(&input, &ctx(work.path()))
                .unwrap()
        };
        let out = run(&spec);
        assert_eq!(
            out.output.outcome,
            Outcome::Completed,
            "{:?}",
            out.transcript
        );
        // Without the url, the port is closed to it.
        spec.url = None;
        let out = run(&spec);
        assert!(failure(&out).contains("the program failed"), "{out:?}");
    }

    #[test]
    fn human_durations() {
        assert_eq!(
            tlv4_core::process::duration::format_duration(Duration::from_secs(1200)),
            "20m"
        );
        assert_eq!(
            tlv4_core::process::duration::format_duration(Duration::from_secs(5400)),
            "1h30m"
        );
        assert_eq!(
            tlv4_core::process::duration::format_duration(Duration::from_millis(300)),
            "300ms"
        );
    }
}
