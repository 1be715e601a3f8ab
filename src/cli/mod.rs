//! The command line: one file per command, each an `Args` struct and a `run` function.

mod candidates;
mod completions;
mod cost;
mod decide;
mod delete;
mod demo;
mod discuss;
mod drive;
mod export;
mod fork;
mod gc;
mod graph;
mod list;
mod log;
mod manpages;
mod msg;
mod outcome;
mod pipelines;
mod pull;
mod push;
mod report;
mod reset;
mod resume;
mod review;
mod rollback;
mod start;
mod status;
mod task;
mod trust;
mod undo;
mod worker;

pub use crate::ui::with_session;
pub use status::{StatusJson, to_json};

use std::path::PathBuf;

use crate::ui::Ui;
use tlv4_core::error::Result;
use tlv4_core::model::SessionId;
use tlv4_store::store::Store;

/// Drive a team of AI coding agents through a development pipeline, with all state in git
#[derive(Debug, clap::Parser)]
#[command(name = "git-tlv4", bin_name = "git tlv4", max_term_width = 100)]
pub struct Cli {
    /// Act on this session: its id or a unique prefix of it, its branch `tlv4/SID` or a task
    /// branch `tlv4/SID.TASK`, or `@` for the one updated last (default: the one whose branch
    /// or task branch is checked out, else the only one)
    #[arg(long, global = true, value_name = "SID")]
    pub session: Option<String>,
    /// Print no status lines on stderr
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// Do not pipe long output (`log`, `status`) into a pager
    #[arg(long, global = true)]
    pub no_pager: bool,
    /// The command
    #[command(subcommand)]
    pub command: Command,
}

/// Every command.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Start a session: create its branch and dispatch the pipeline's tasks
    Start(start::Args),
    /// Show a session and every task, read from the tip of its branch
    Status(status::Args),
    /// List sessions with their status and progress
    List(list::Args),
    /// Show the event history of a session, newest first
    Log(log::Args),
    /// What the agents of a session cost: runs, time, tokens, dollars
    Cost(cost::Args),
    /// Draw a session's task graph as it stands: text, Mermaid or Graphviz DOT
    Graph(graph::Args),
    /// Show the candidates a best-of task ran, side by side, and which one was picked
    Candidates(candidates::Args),
    /// Write one self-contained HTML page about a session: events, graph, verdicts, cost
    Report(report::Args),
    /// Claim, complete or fail a task (plumbing for workers and people)
    Task(task::Args),
    /// Send and list messages on the team message bus
    Msg(msg::Args),
    /// Restore the state before the last N events (appends an event)
    Undo(undo::Args),
    /// Restore the state of an earlier event or task completion (appends an event)
    Rollback(rollback::Args),
    /// Delete a session's refs; refused while it holds work that exists nowhere else
    Delete(delete::Args),
    /// Remove merged task branches and the checkouts of dead runs (their work kept first)
    Gc(gc::Args),
    /// Put a completed session's code on a clean branch tlv4-export/SID, ready to merge
    Export(export::Args),
    /// Start a new session branch from an earlier event
    Fork(fork::Args),
    /// Recover tasks left running by a process that is gone
    Resume(resume::Args),
    /// Discard a task's result (and its dependents'), revert the code it merged, run it again
    Reset(reset::Args),
    /// List the pipelines this repository can run
    Pipelines(pipelines::Args),
    /// Review a diff: score quality, security, architecture and requirements, with findings
    Review(review::Args),
    /// Approve what the session paused on (a gate, a checkpoint block, a discussion) and go on
    Approve(decide::ApproveArgs),
    /// Redo a completed or failed task with feedback (and what depends on it)
    Revise(decide::ReviseArgs),
    /// Give feedback; it goes to the spec document it concerns
    Feedback(decide::FeedbackArgs),
    /// Run the spec quality gate again
    Recheck(decide::RecheckArgs),
    /// Improve one spec dimension, then run the quality gate again
    Improve(decide::ImproveArgs),
    /// Take another candidate of a best-of task: its code replaces the first pick's
    Pick(decide::PickArgs),
    /// Stop the session for good (nothing is deleted)
    Abort(decide::AbortArgs),
    /// Make a sample repository in a temporary directory and run a session in it
    Demo(demo::Args),
    /// Allow the agent programs named in this repository's .tlv4.toml to run
    Trust(trust::Args),
    /// Send sessions to a remote; refused when the remote has events this clone has not seen
    Push(push::Args),
    /// Fetch a remote's sessions and bring the local ones up to them; notes merge by union
    Pull(pull::Args),
    /// Run a shared session's tasks from this clone, claiming each through the remote
    Worker(worker::Args),
    /// Discuss a topic between agents: Position, Challenge, Synthesis, with a devil's advocate
    Discuss(discuss::Args),
    /// Print a shell completion script (bash includes git's `git tlv4` completion)
    Completions(completions::Args),
    /// Install the man pages, so that `git tlv4 --help` and `git help tlv4` open them
    InstallManPages(manpages::Args),
    /// List session or task ids for completion scripts (reads refs only, never fails)
    #[command(name = "__complete", hide = true)]
    Complete(completions::CompleteArgs),
}

/// `git tlv4 --version`: the version, the commit it was built from (`unknown` when built
/// outside a git checkout) and the state format it reads and writes.
pub fn version() -> &'static str {
    static VERSION: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        format!(
            "{} (commit {}, state format {})",
            env!("CARGO_PKG_VERSION"),
            env!("TLV4_BUILD_COMMIT"),
            tlv4_core::model::SCHEMA_NEWEST
        )
    });
    &VERSION
}

/// The command line's definition, as parsing and the man pages use it: run as `git tlv4`.
pub fn command() -> clap::Command {
    definition().bin_name("git tlv4")
}

/// The definition without the name it is run by (the completion scripts name `git-tlv4`).
fn definition() -> clap::Command {
    <Cli as clap::CommandFactory>::command().version(version())
}

/// What every command gets besides its own arguments.
pub struct Ctx<'a> {
    /// Output.
    pub ui: &'a Ui,
    /// `--session`, if given.
    pub session: Option<String>,
    /// Where the command runs.
    pub cwd: PathBuf,
    /// Whether the command works on sessions, so needs git-tlv4's ref namespaces free.
    pub sessions: bool,
    /// The exit status of a command that ran without error: set by the commands that run a
    /// session's pipeline to say how it stopped ([`tlv4_core::error::exit`]).
    pub exit: std::cell::Cell<i32>,
}

impl Ctx<'_> {
    /// Opens the repository around the current directory.
    pub fn store(&self) -> Result<Store> {
        let store = Store::discover(&self.cwd)?;
        if self.sessions {
            store.ensure_namespaces()?;
        }
        Ok(store)
    }

    /// Opens the repository and resolves the session the command acts on.
    pub fn session(&self) -> Result<(Store, SessionId)> {
        let store = self.store()?;
        let sid = store.resolve_session(self.session.as_deref())?;
        self.address(&store, &sid);
        Ok((store, sid))
    }

    /// Makes the hints printed from now on name `sid` when a command without `--session`
    /// would not act on it (see [`crate::ui::with_session`]).
    pub fn address(&self, store: &Store, sid: &SessionId) {
        if store.resolve_session(None).ok().as_ref() != Some(sid) {
            self.ui.address_session(sid.as_str());
        }
    }
}

/// Runs the parsed command line and returns the exit status of a command that ran:
/// [`tlv4_core::error::exit::OK`], or what the command decides (`review --exit-code`, how a run
/// of the pipeline stopped).
pub fn run(cli: Cli, ui: &Ui) -> Result<i32> {
    let cwd = std::env::current_dir()
        .map_err(|e| tlv4_core::Error::io("cannot read the current directory", e))?;
    // `review` notes any diff, `pipelines` and `trust` read configuration, `demo` makes a
    // repository of its own, the completions and man pages need no repository (and
    // `__complete` must not fail on one): none of them needs the session refs.
    let sessions = !matches!(
        cli.command,
        Command::Review(_)
            | Command::Pipelines(_)
            | Command::Trust(_)
            | Command::Demo(_)
            | Command::Completions(_)
            | Command::InstallManPages(_)
            | Command::Complete(_)
    );
    let ctx = Ctx {
        ui,
        session: cli.session,
        cwd,
        sessions,
        exit: std::cell::Cell::new(tlv4_core::error::exit::OK),
    };
    let done = match cli.command {
        Command::Review(a) => return review::run(&ctx, a),
        Command::Start(a) => start::run(&ctx, a),
        Command::Status(a) => status::run(&ctx, a),
        Command::List(a) => list::run(&ctx, a),
        Command::Log(a) => log::run(&ctx, a),
        Command::Task(a) => task::run(&ctx, a),
        Command::Msg(a) => msg::run(&ctx, a),
        Command::Undo(a) => undo::run(&ctx, a),
        Command::Rollback(a) => rollback::run(&ctx, a),
        Command::Fork(a) => fork::run(&ctx, a),
        Command::Export(a) => export::run(&ctx, a),
        Command::Delete(a) => delete::run(&ctx, a),
        Command::Gc(a) => gc::run(&ctx, a),
        Command::Resume(a) => resume::run(&ctx, a),
        Command::Pipelines(a) => pipelines::run(&ctx, a),
        Command::Approve(a) => decide::approve(&ctx, a),
        Command::Revise(a) => decide::revise(&ctx, a),
        Command::Feedback(a) => decide::feedback(&ctx, a),
        Command::Recheck(a) => decide::recheck(&ctx, a),
        Command::Improve(a) => decide::improve(&ctx, a),
        Command::Abort(a) => decide::abort(&ctx, a),
        Command::Pick(a) => decide::pick(&ctx, a),
        Command::Candidates(a) => candidates::run(&ctx, a),
        Command::Demo(a) => demo::run(&ctx, a),
        Command::Trust(a) => trust::run(&ctx, a),
        Command::Cost(a) => cost::run(&ctx, a),
        Command::Graph(a) => graph::run(&ctx, a),
        Command::Report(a) => report::run(&ctx, a),
        Command::Reset(a) => reset::run(&ctx, a),
        Command::Push(a) => push::run(&ctx, a),
        Command::Pull(a) => pull::run(&ctx, a),
        Command::Worker(a) => worker::run(&ctx, a),
        Command::Discuss(a) => discuss::run(&ctx, a),
        Command::Completions(a) => completions::run(&ctx, a),
        Command::InstallManPages(a) => manpages::run(&ctx, a),
        Command::Complete(a) => completions::complete(&ctx, a),
    };
    done.map(|()| ctx.exit.get())
}

/// The first 7 hex digits of an object id.
/// The version of the shape of every `--json` document the read commands print, in its
/// `schema` field. It changes when a field goes or changes meaning, not when one is added.
pub const JSON_SCHEMA: u32 = 1;

/// A `--json` document that is a list: `{"schema": JSON_SCHEMA, key: rows}`, so that it can
/// carry its schema and grow fields without breaking who reads the rows.
pub(crate) fn listing(key: &str, rows: impl serde::Serialize) -> serde_json::Value {
    let mut doc = serde_json::Map::new();
    doc.insert("schema".into(), JSON_SCHEMA.into());
    doc.insert(
        key.into(),
        serde_json::to_value(rows).unwrap_or(serde_json::Value::Null),
    );
    doc.into()
}
