//! `git tlv4 discuss`: a structured discussion between agents (Position → Challenge →
//! Synthesis, with a devil's advocate and a moderator) run as a session of its own.

use crate::coordinator::discussion::{self, DiscussOptions, Progress};
use crate::quality::protocol::{self, Decision, Limits, Preset, Status};
use tlv4_core::error::{Error, Result};
use tlv4_core::model::Completion;

use super::Ctx;
use super::drive::{CompletionArg, RunFlags};

/// The user's decision at a surface consensus.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum DecideArg {
    /// Take the consensus as it is
    Adopt,
    /// Run another Challenge and Synthesis
    Challenge,
}

/// What happens to a discussion's session when it ends (`--completion`).
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum EndArg {
    /// Leave the session branch as it is
    Keep,
    /// Move the session to refs/tlv4/archive/<SID> and remove its branches
    Archive,
    /// A branch tlv4-export/<SID> carrying the output document
    Export,
}

impl From<EndArg> for CompletionArg {
    fn from(arg: EndArg) -> CompletionArg {
        match arg {
            EndArg::Keep => CompletionArg::Keep,
            EndArg::Archive => CompletionArg::Archive,
            EndArg::Export => CompletionArg::Export,
        }
    }
}

/// Arguments of `discuss`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Two rounds: Position, then Synthesis
    #[arg(long, conflicts_with = "deep")]
    pub quick: bool,
    /// Up to five rounds, with the Challenge forced even on a consensus
    #[arg(long)]
    pub deep: bool,
    /// The topic members' roles (default: advocate,skeptic,pragmatist); the devil's advocate
    /// and the moderator are always there
    #[arg(long, value_name = "ROLE,ROLE,ROLE", value_delimiter = ',')]
    pub members: Vec<String>,
    /// A document of the commit HEAD is on that every member reads (repeatable)
    #[arg(long = "artifact", value_name = "PATH", num_args = 1..)]
    pub artifacts: Vec<String>,
    /// The time limit of the whole discussion, e.g. 10m (default 10m)
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<String>,
    /// The time limit of one member's turn, e.g. 3m (default 3m)
    #[arg(long, value_name = "DURATION")]
    pub turn_timeout: Option<String>,
    /// The `{feature}` of docs/specs/{feature}-discussion-{topic}.md (default: the session's
    /// slug)
    #[arg(long, value_name = "NAME")]
    pub feature: Option<String>,
    /// Decide at a surface consensus (with --session or the only waiting discussion)
    #[arg(long, value_enum, value_name = "DECISION", conflicts_with_all = ["topic", "resume"])]
    pub decide: Option<DecideArg>,
    /// Continue a discussion that was interrupted (with --session)
    #[arg(long, conflicts_with = "topic")]
    pub resume: bool,
    /// Record only; run no round
    #[arg(long)]
    pub no_run: bool,
    /// What happens when the discussion ends (default: keep)
    #[arg(long, value_enum, value_name = "ACTION")]
    pub completion: Option<EndArg>,
    /// The agent of a seat: SEAT=NAME, SEAT a member's role, `devil` or `moderator`; NAME
    /// alone for every seat but the moderator (repeatable; over `[discuss.members]`; later
    /// runs of the discussion keep them)
    #[arg(long = "agent", value_name = "SEAT=NAME")]
    pub agents: Vec<String>,
    /// Replay the recorded agent runs of discussion session SID instead of calling agents
    #[arg(long, value_name = "SID")]
    pub replay: Option<String>,
    /// What to discuss
    #[arg(value_name = "TOPIC", required_unless_present_any = ["resume", "decide"])]
    pub topic: Option<String>,
}

fn flags(replay: Option<String>, completion: Option<EndArg>) -> RunFlags {
    RunFlags {
        no_run: false,
        completion: completion.map(CompletionArg::from),
        agent: Vec::new(),
        replay,
        best_of: Vec::new(),
    }
}

pub(crate) fn run(ctx: &Ctx<'_>, args: Args) -> Result<()> {
    if let Some(d) = args.decide {
        let (store, sid) = ctx.session()?;
        let decision = match d {
            DecideArg::Adopt => Decision::Adopt,
            DecideArg::Challenge => Decision::Challenge,
        };
        let d = discussion::decide(&store, &sid, decision)?;
        ctx.ui.status(format!(
            "recorded the decision: {}",
            match decision {
                Decision::Adopt => "adopt the consensus",
                Decision::Challenge => "challenge more",
            }
        ));
        if d.status == Status::Running && !args.no_run {
            return go(ctx, &store, &sid, &flags(args.replay, args.completion));
        }
        return report(ctx, &store, &sid);
    }
    if args.resume {
        let (store, sid) = ctx.session()?;
        return go(ctx, &store, &sid, &flags(args.replay, args.completion));
    }
    let Some(topic) = args.topic.clone() else {
        return Err(Error::Invalid(
            "give the TOPIC to discuss (or --resume, or --decide adopt|challenge)".into(),
        ));
    };
    let store = ctx.store()?;
    let duration = |v: &Option<String>, default: std::time::Duration, flag: &str| -> Result<u64> {
        match v {
            Some(t) => tlv4_core::process::duration::parse_duration(t)
                .map(|d| d.as_millis() as u64)
                .map_err(|e| Error::Invalid(format!("--{flag} {t}: {e}"))),
            None => Ok(default.as_millis() as u64),
        }
    };
    let limits = Limits {
        turn_ms: duration(&args.turn_timeout, protocol::TURN_LIMIT, "turn-timeout")?,
        overall_ms: duration(&args.timeout, protocol::OVERALL_LIMIT, "timeout")?,
    };
    let members = if args.members.is_empty() {
        protocol::DEFAULT_MEMBERS.map(String::from).to_vec()
    } else {
        args.members.iter().map(|m| m.trim().to_owned()).collect()
    };
    let preset = if args.quick {
        Preset::Quick
    } else if args.deep {
        Preset::Deep
    } else {
        Preset::Default
    };
    let agents = seat_agents(&args.agents, &members)?;
    let conf = tlv4_core::trust::Configuration::read(store.workdir())?;
    let mut start_flags = flags(args.replay.clone(), None);
    start_flags.agent = agents.clone();
    let roster = super::drive::roster(&store, &conf, &start_flags)?;
    let opts = DiscussOptions {
        topic,
        preset,
        members,
        artifacts: args.artifacts.clone(),
        limits,
        feature: args.feature.clone(),
        replay: args.replay.clone(),
        agents,
    };
    let (sid, d) = discussion::start_with(&store, &opts, &roster, Some(&conf.files))?;
    ctx.address(&store, &sid);
    ctx.ui.status(format!(
        "started discussion {sid}: preset {}, members {}, moderator {}",
        preset.as_str(),
        d.seats
            .iter()
            .map(|s| format!("{} ({})", s.role, s.agent))
            .collect::<Vec<_>>()
            .join(", "),
        d.moderator
    ));
    ctx.ui.out(sid.as_str());
    if args.no_run {
        ctx.ui.status(format!(
            "stopped after recording; continue with `git tlv4 discuss --resume --session {sid}`"
        ));
        return Ok(());
    }
    go_read(
        ctx,
        &store,
        &sid,
        &flags(args.replay, args.completion),
        Some(conf),
    )
}

/// `--agent` values of `discuss` as the roster reads them (`discuss.SEAT=NAME`), each seat
/// one of the discussion's.
fn seat_agents(given: &[String], members: &[String]) -> Result<Vec<String>> {
    let seats = || {
        members
            .iter()
            .map(String::as_str)
            .chain([protocol::DEVIL, crate::agents::roster::MODERATOR])
    };
    given
        .iter()
        .map(|a| match a.split_once('=') {
            None if !a.is_empty() => {
                Ok(format!("{}default={a}", crate::agents::roster::SEAT_PREFIX))
            }
            Some((seat, name)) if !name.is_empty() && seats().any(|s| s == seat) => Ok(format!(
                "{}{seat}={name}",
                crate::agents::roster::SEAT_PREFIX
            )),
            Some((seat, name)) if !name.is_empty() && !seat.is_empty() => {
                Err(Error::Invalid(format!(
                    "--agent {a}: `{seat}` is not a seat of this discussion; seats: {}",
                    seats().collect::<Vec<_>>().join(", ")
                )))
            }
            _ => Err(Error::Invalid(format!(
                "--agent `{a}`: expected SEAT=NAME or NAME"
            ))),
        })
        .collect()
}

/// Runs the discussion of `sid` on with its pinned configuration, then reports.
pub(crate) fn go(
    ctx: &Ctx<'_>,
    store: &tlv4_core::store::Store,
    sid: &tlv4_core::model::SessionId,
    flags: &RunFlags,
) -> Result<()> {
    go_read(ctx, store, sid, flags, None)
}

/// [`go`] with `read`, the working tree's configuration when the discussion was just
/// started (and pinned) with it, so that the command reads it once.
fn go_read(
    ctx: &Ctx<'_>,
    store: &tlv4_core::store::Store,
    sid: &tlv4_core::model::SessionId,
    flags: &RunFlags,
    read: Option<tlv4_core::trust::Configuration>,
) -> Result<()> {
    // `resume --completion` takes `interactive` too, which a discussion has no use for.
    let action = match flags.completion.map_or(Completion::Keep, Completion::from) {
        Completion::Interactive => {
            return Err(Error::Invalid(
                "unknown completion action `interactive`; use keep, archive or export".into(),
            ));
        }
        action => action,
    };
    let ended_before = matches!(
        discussion::read(store, sid, store.tip(sid)?)?.status,
        Status::Ended(_)
    );
    let (roster, conf, _, _) = super::drive::session_roster_read(ctx, store, sid, flags, read)?;
    let d = discussion::advance(store, sid, &roster, &mut |p| match p {
        Progress::Round(r) => ctx.ui.status(format!(
            "round {} ({}): {}{}",
            r.number,
            r.kind.as_str(),
            r.state.map_or("not rated", |s| s.as_str()),
            r.notes
                .iter()
                .map(|n| format!("\n  {n}"))
                .collect::<String>()
        )),
    })?;
    report(ctx, store, sid)?;
    if d.status == Status::AwaitingDecision {
        ctx.exit.set(tlv4_core::error::exit::WAITING);
    }
    if matches!(d.status, Status::Ended(_)) && !ended_before {
        let export_spec = conf.config.session.export_spec;
        match crate::coordinator::complete::apply(store, sid, &action, export_spec)? {
            crate::coordinator::complete::Done::Kept => {}
            crate::coordinator::complete::Done::Archived(r) => {
                ctx.ui.status(format!("archived to {r}"))
            }
            crate::coordinator::complete::Done::Exported(r) => {
                ctx.ui.status(format!("exported to {r}"))
            }
        }
    }
    Ok(())
}

/// Prints where the discussion stands and where its record is.
fn report(
    ctx: &Ctx<'_>,
    store: &tlv4_core::store::Store,
    sid: &tlv4_core::model::SessionId,
) -> Result<()> {
    let tip = store.tip(sid)?;
    let d = discussion::read(store, sid, tip)?;
    let path = discussion::document_path(store, sid)?;
    let state = d.rounds.iter().rev().find_map(|r| r.state);
    let how = match d.status {
        Status::Running => "stopped before its end".to_owned(),
        Status::AwaitingDecision => "waits for your decision".to_owned(),
        Status::Ended(e) => format!("ended: {}", e.as_str().replace('_', " ")),
    };
    ctx.ui.status(format!(
        "discussion {sid} {how} after {} rounds (last state {})",
        d.rounds.len(),
        state.map_or("none", |s| s.as_str())
    ));
    if let Status::Ended(e) = d.status
        && discussion::troubled(e)
    {
        for n in d.rounds.iter().flat_map(|r| &r.notes).chain(&d.notes) {
            if n.starts_with("Circuit breaker") || n.starts_with("The overall time limit") {
                ctx.ui.warn(n);
            }
        }
    }
    if d.status == Status::AwaitingDecision {
        ctx.ui.status(format!(
            "unanimous agreement for much the same reasons: check the reasoning, then\n  git tlv4 discuss --session {sid} --decide adopt\n  git tlv4 discuss --session {sid} --decide challenge"
        ));
    }
    ctx.ui.out(format!("record: tlv4/{sid}:{path}"));
    Ok(())
}
