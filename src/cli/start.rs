//! `git tlv4 start`: create the session branch, dispatch the pipeline, and run it.

use crate::coordinator::{StartOptions, start_with};
use tlv4_core::error::Result;
use tlv4_core::model::Completion;

use super::Ctx;
use super::drive::{RunFlags, drive_read};
use tlv4_core::text::short_id;

/// Arguments of `start`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Pipeline to run (see `git tlv4 pipelines`; default: chosen from the task text)
    #[arg(long, value_name = "NAME")]
    pub pipeline: Option<String>,
    /// Leave out the supervisor checkpoints
    #[arg(long)]
    pub no_supervision: bool,
    /// Approve gates whose verdict passes, so the pipeline runs unattended
    #[arg(short, long)]
    pub yes: bool,
    /// Run at most N tasks at once (default: session.max_parallel)
    #[arg(long, value_name = "N")]
    pub max_parallel: Option<u32>,
    /// Stop before a task would take the session's agents over this many US dollars
    /// (default: [budget] session_usd)
    #[arg(long, value_name = "USD", value_parser = dollars)]
    pub budget_usd: Option<f64>,
    /// Stop before a task would take the session's agents over this many tokens (input +
    /// output; default: [budget] session_tokens)
    #[arg(long, value_name = "N")]
    pub budget_tokens: Option<u64>,
    /// Run several candidates of every code task and merge the best by measurement: a count
    /// (`3`: candidates by the role's agent) or agents' names (`claude,codex`: one each);
    /// default: [best_of]
    #[arg(long, value_name = "N|AGENTS", value_parser = best_of)]
    pub best_of: Option<tlv4_core::model::BestOf>,
    /// With --best-of: start no further candidate once one passes every test with an
    /// APPROVE review, and stop those running
    #[arg(long, requires = "best_of")]
    pub accept_first: bool,
    /// Share the session through this remote (a configured remote or a URL): push it there,
    /// then run it as a worker of that remote, so workers on other clones share the work
    #[arg(long, value_name = "REMOTE")]
    pub remote: Option<String>,
    /// Start a new session even when an active or paused one has the same text
    #[arg(long)]
    pub new: bool,
    /// Loop options
    #[command(flatten)]
    pub run: RunFlags,
    /// What the team should do
    #[arg(value_name = "TASK TEXT")]
    pub text: String,
}

pub(crate) fn run(ctx: &Ctx<'_>, args: Args) -> Result<()> {
    let store = ctx.store()?;
    let remote = args
        .remote
        .as_deref()
        .map(tlv4_core::store::Remote::new)
        .transpose()?;
    let mut opts = StartOptions {
        pipeline: args.pipeline.clone(),
        no_supervision: args.no_supervision,
        yes: args.yes,
        max_parallel: args.max_parallel,
        budget_usd: args.budget_usd,
        budget_tokens: args.budget_tokens,
        completion: args.run.completion.map(Completion::from),
        agents: args.run.agent.clone(),
        replay: args.run.replay.clone(),
        // Decided once, here, and kept with the session (see `Settings::shell`).
        shell: tlv4_core::sandbox::level().active(),
        best_of: args.best_of.clone().map(|mut b| {
            b.accept_first = args.accept_first;
            b
        }),
    };
    if !args.new
        && let Some((sid, status)) = same_text(&store, &args.text)?
    {
        return Err(tlv4_core::Error::state(
            format!("session {sid} ({status}) already works on this text; nothing was started"),
            Some(format!(
                "go on with it: `git tlv4 resume --session {sid}`; or start another: `git tlv4 start --new \"{}\"`",
                args.text.replace('"', "\\\"")
            )),
        ));
    }
    // An agent that cannot run is found before the session exists; the configuration read
    // for it is the one the session starts with.
    let mut commands = false;
    let mut roster = None;
    let conf = if args.run.no_run {
        None
    } else {
        let conf = tlv4_core::trust::Configuration::read(store.workdir())?;
        let mut flags = args.run.clone();
        flags.best_of = opts.best_of.iter().flat_map(|b| b.agents.clone()).collect();
        let r = super::drive::roster(&store, &conf, &flags)?;
        commands = r.runs_commands().is_some();
        roster = Some(r);
        // `[sandbox] shell = false` keeps the agents without a shell even in a full sandbox.
        opts.shell = conf.config.sandbox.shell_on();
        Some(conf)
    };
    let (sid, state) = start_with(&store, &args.text, &opts, conf.as_ref())?;
    ctx.address(&store, &sid);
    let head = store.head_branch();
    ctx.ui.status(format!(
        "started session {sid}: pipeline {}{}, {} tasks, from {} {}",
        state.session.pipeline,
        if state.session.supervision {
            ""
        } else {
            " without supervision"
        },
        state.tasks.len(),
        short_id(&state.session.base),
        head.as_deref()
            .map_or("(detached HEAD)".to_owned(), |h| format!(
                "({})",
                tlv4_core::store::refs::short_branch(h)
            )),
    ));
    if let Some(a) = &state.control.analysis {
        ctx.ui.status(format!("  pipeline: {}", a.pipeline_reason));
        ctx.ui.status(format!(
            "  complexity: {} ({}): {}",
            a.level,
            a.score,
            a.reasons.join("; ")
        ));
    }
    // Said once, where agents run programs: whether they get a shell, and why not.
    if commands {
        let level = tlv4_core::sandbox::level();
        ctx.ui.status(if state.control.settings.shell {
            "  shell: on: the agents of code tasks run commands in their checkouts, inside the kernel's sandbox".to_owned()
        } else if level.active() {
            "  shell: off: `[sandbox] shell = false`; agents get no shell".to_owned()
        } else {
            format!(
                "  shell: off: this kernel's sandbox is {}; agents get no shell",
                tlv4_core::sandbox::level().describe()
            )
        });
    }
    // What such a session cost here before, for the one who watches it start.
    if let (Some(conf), Some(roster)) = (&conf, &roster)
        && ctx.ui.on_terminal()
        && let Some(line) = super::cost::estimate::line_for_start(
            &store,
            conf,
            roster,
            &sid,
            &state.session.pipeline,
        )
    {
        ctx.ui.status(format!("  {line}"));
    }
    if store.repo().is_dirty().unwrap_or(false) {
        ctx.ui.warn("the working tree has uncommitted changes; the session forks from the last commit and does not see them");
    }
    ctx.ui.out(sid.as_str());
    let Some(remote) = remote else {
        return drive_read(ctx, &store, &sid, &args.run, conf);
    };
    // Shared from its first event: from now on its events go through the remote, and its
    // workers claim tasks on refs of their own (marked before it travels, so that they do
    // not race to mark it).
    store.transact(&sid, crate::coordinator::mark_claim_refs)?;
    store.push_sessions(&remote, std::slice::from_ref(&sid))?;
    ctx.ui
        .status(format!("pushed session {sid} to `{}`", remote.name));
    if args.run.no_run {
        ctx.ui.status(format!(
            "workers run it with `git tlv4 worker --remote {} --session {sid}`",
            remote.name
        ));
        return Ok(());
    }
    let opts = crate::coordinator::lease::WorkerOptions {
        remote,
        roles: Vec::new(),
        max_parallel: args.max_parallel,
        once: false,
        lease: super::worker::DEFAULT_LEASE,
        skew: super::worker::DEFAULT_SKEW,
    };
    super::worker::serve(ctx, &store, &sid, &args.run, opts).map(|_| ())
}

/// A live session that is not done (active or paused) and was started with `text`, with its
/// status. Only sessions whose id was made from the same words are read.
fn same_text(
    store: &tlv4_core::store::Store,
    text: &str,
) -> Result<Option<(tlv4_core::model::SessionId, &'static str)>> {
    use tlv4_core::model::{SessionId, SessionStatus};
    // `TLV4-<slug>-<date>[-n]`: the slug is what `text` makes.
    let probe = SessionId::from_text(text, "", 1);
    let stem = probe.as_str().trim_end_matches('-');
    for sid in store.sessions()? {
        let Some(rest) = sid.as_str().strip_prefix(stem) else {
            continue;
        };
        // The rest is `-<date>` or `-<date>-<n>`: digits and dashes only.
        if !rest.starts_with('-') || !rest.chars().all(|c| c == '-' || c.is_ascii_digit()) {
            continue;
        }
        let Ok((_, state)) = store.read_state(&sid) else {
            continue;
        };
        let status = state.session.status;
        if state.session.task == text
            && matches!(status, SessionStatus::Active | SessionStatus::Paused)
        {
            return Ok(Some((sid, status.as_str())));
        }
    }
    Ok(None)
}

/// A number of dollars, 0 or more (`--budget-usd`).
fn dollars(text: &str) -> std::result::Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("`{text}` is not a number of dollars (0 or more)")),
    }
}

/// Reads `--best-of`.
fn best_of(value: &str) -> std::result::Result<tlv4_core::model::BestOf, String> {
    tlv4_core::model::BestOf::parse(value)
}
