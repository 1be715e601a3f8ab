//! `git tlv4 status`: the session and its tasks, read from the tip tree only.

use tlv4_core::error::Result;
use tlv4_core::model::{Progress, State, Task};
use tlv4_core::store::session_ref;

use super::Ctx;
use tlv4_core::text::short_id;

/// Arguments of `status`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print JSON (shape documented in specs/state-format.md)
    #[arg(long)]
    pub json: bool,
}

/// The JSON shape of `status --json`.
#[derive(Debug, serde::Serialize)]
pub struct StatusJson<'a> {
    /// The shape of this document: [`super::JSON_SCHEMA`].
    pub schema: u32,
    /// `session.toml` fields plus the branch and tip.
    pub session: SessionJson<'a>,
    /// Task counts.
    pub progress: Progress,
    /// `control.toml`: analysis, settings, pause, signals, verdicts.
    pub control: &'a tlv4_core::model::Control,
    /// Every task, in dependency order.
    pub tasks: Vec<TaskJson<'a>>,
    /// For a completed session: its verdicts, what it changed and how to land it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<super::outcome::OutcomeJson>,
    /// For a discussion session: where the discussion stands.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub discussion: Option<DiscussionJson>,
    /// For a session with a budget: the budget in force and what its ledger spent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<crate::coordinator::budget::Standing>,
    /// The tasks remote workers hold, by their leases as this clone last fetched them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub held: Vec<tlv4_core::store::Holding>,
}

/// The tasks of `sid` workers hold on the remotes this clone fetched leases from, as last
/// fetched (a worker's claim is a lease on the remote, not a session event: §18.10).
fn held(
    store: &tlv4_core::store::Store,
    sid: &tlv4_core::model::SessionId,
) -> Vec<tlv4_core::store::Holding> {
    store.holdings_seen(sid).unwrap_or_default()
}

/// Where a discussion stands, in [`StatusJson`].
#[derive(Debug, serde::Serialize)]
pub struct DiscussionJson {
    /// `quick`, `default` or `deep`.
    pub preset: &'static str,
    /// The rounds run so far.
    pub rounds: usize,
    /// The kind of the last round run (`position`, `challenge`, …), if any.
    pub last: Option<&'static str>,
    /// The state of agreement the last rated round left (`DIVERGENT` … `CONSENSUS`).
    pub state: Option<&'static str>,
    /// `running` (with `next`), `awaiting_decision`, or `ended`.
    pub status: &'static str,
    /// The round that runs next, while running.
    pub next: Option<&'static str>,
    /// How it ended (`consensus`, `split`, …), once over.
    pub end: Option<&'static str>,
}

impl DiscussionJson {
    fn of(d: &crate::quality::protocol::Discussion) -> DiscussionJson {
        use crate::quality::protocol::Status;
        let (status, next, end) = match d.status {
            Status::Running => ("running", Some(d.next.as_str()), None),
            Status::AwaitingDecision => ("awaiting_decision", None, None),
            Status::Ended(e) => ("ended", None, Some(e.as_str())),
        };
        DiscussionJson {
            preset: d.preset.as_str(),
            rounds: d.rounds.len(),
            last: d.rounds.last().map(|r| r.kind.as_str()),
            state: d
                .rounds
                .iter()
                .rev()
                .find_map(|r| r.state)
                .map(|c| c.as_str()),
            status,
            next,
            end,
        }
    }

    /// The line `status` prints.
    fn line(&self) -> String {
        let mut out = format!("preset {}, {} round(s)", self.preset, self.rounds);
        if let Some(last) = self.last {
            out.push_str(&format!(", last {last}"));
        }
        if let Some(state) = self.state {
            out.push_str(&format!(" ({state})"));
        }
        match (self.next, self.end) {
            (Some(next), _) => out.push_str(&format!("; next {next}")),
            (None, Some(end)) => out.push_str(&format!("; ended: {end}")),
            (None, None) => out.push_str("; waiting for your decision (--decide adopt|challenge)"),
        }
        out
    }
}

/// The session part of [`StatusJson`].
#[derive(Debug, serde::Serialize)]
pub struct SessionJson<'a> {
    /// `session.toml` as stored.
    #[serde(flatten)]
    pub session: &'a tlv4_core::model::Session,
    /// The branch name.
    pub branch: String,
    /// The tip commit.
    pub tip: String,
}

/// One task of [`StatusJson`].
#[derive(Debug, serde::Serialize)]
pub struct TaskJson<'a> {
    /// The stored task.
    #[serde(flatten)]
    pub task: &'a Task,
    /// `ready` or `blocked` for pending tasks; the status otherwise.
    pub state: &'static str,
}

/// Builds the JSON value of a state.
pub fn to_json<'a>(state: &'a State, tip: &str) -> StatusJson<'a> {
    StatusJson {
        schema: super::JSON_SCHEMA,
        session: SessionJson {
            session: &state.session,
            branch: session_ref(&state.session.id),
            tip: tip.to_owned(),
        },
        progress: state.progress(),
        control: &state.control,
        tasks: state
            .ordered()
            .into_iter()
            .map(|t| TaskJson {
                task: t,
                state: state.display_status(t),
            })
            .collect(),
        discussion: None,
        outcome: None,
        budget: None,
        held: Vec::new(),
    }
}

/// Where the discussion of a discussion session stands at `tip`; `None` for other sessions
/// (and for a discussion whose record cannot be read: `status` still shows the session).
fn discussion_of(
    store: &tlv4_core::store::Store,
    state: &State,
    tip: gix::ObjectId,
) -> Option<DiscussionJson> {
    use crate::coordinator::discussion;
    if !discussion::is_discussion(state) {
        return None;
    }
    discussion::read(store, &state.session.id, tip)
        .ok()
        .map(|d| DiscussionJson::of(&d))
}

pub(crate) fn run(ctx: &Ctx<'_>, args: Args) -> Result<()> {
    let (store, sid) = ctx.session()?;
    let (tip, state) = store.read_state(&sid)?;
    let discussion = discussion_of(&store, &state, tip);
    let outcome = (state.session.status == tlv4_core::model::SessionStatus::Completed
        && discussion.is_none())
    .then(|| super::outcome::of(&store, &state, tip))
    .transpose()?;
    let prices = crate::coordinator::budget::pinned_prices(&store, &sid);
    let budget =
        crate::coordinator::budget::standing(&store, tip, &state.control.settings, prices)?;
    if args.json {
        let mut json = to_json(&state, &tip.to_string());
        json.discussion = discussion;
        json.outcome = outcome;
        json.budget = budget;
        json.held = held(&store, &sid);
        ctx.ui.json(&json);
        return Ok(());
    }
    let s = &state.session;
    let p = state.progress();
    let mut out = format!("session {} ({})\n", s.id, s.status.as_str());
    out.push_str(&format!(
        "  pipeline  {}, supervision {}\n",
        s.pipeline,
        if s.supervision { "on" } else { "off" }
    ));
    out.push_str(&format!("  task      {}\n", s.task));
    if let Some(d) = &discussion {
        out.push_str(&format!("  discussion {}\n", d.line()));
    }
    out.push_str(&format!(
        "  base      {}   tip {}   events {}\n",
        short_id(&s.base),
        short_id(&tip.to_string()),
        s.events
    ));
    if let Some(f) = &s.forked_from {
        out.push_str(&format!(
            "  forked    from {} at {}\n",
            f.session,
            short_id(&f.event)
        ));
    }
    if let Some(a) = &state.control.analysis {
        out.push_str(&format!("  chosen    {}\n", a.pipeline_reason));
        out.push_str(&format!(
            "  complexity {} ({}): {}\n",
            a.level,
            a.score,
            a.reasons.join("; ")
        ));
    }
    if !state.control.signals.is_empty() {
        out.push_str(&format!(
            "  signals   {}\n",
            state.control.signals.join(", ")
        ));
    }
    if let Some(i) = &state.control.implementation {
        let ids: Vec<&str> = i.tasks.iter().map(|t| t.as_str()).collect();
        out.push_str(&format!(
            "  impl      {} plan from {}: {} ({})\n",
            i.complexity,
            i.plan_task,
            ids.join(", "),
            i.topology
        ));
        for s in &i.serialized {
            out.push_str(&format!("            {s} (their planned files overlap)\n"));
        }
    }
    let settings = &state.control.settings;
    if let Some(sid) = &settings.replay {
        out.push_str(&format!("  agents    replaying {sid}\n"));
    } else if !settings.agents.is_empty() {
        out.push_str(&format!(
            "  agents    {} (chosen at start)\n",
            settings.agents.join(", ")
        ));
    }
    if let Some(b) = &settings.best_of {
        out.push_str(&format!(
            "  best of   {}: every code task runs as candidates, the best by measurement merged\n",
            b.describe()
        ));
    }
    if let Some(b) = &budget {
        out.push_str(&format!("  budget    {}\n", b.line()));
    }
    if let Some(p) = &state.control.pause {
        out.push_str(&format!("  paused    ({}) {}\n", p.kind, p.reason));
        for n in &p.next {
            out.push_str(&format!("            {n}\n"));
        }
    }
    out.push_str(&format!(
        "  progress  {}/{} completed, {} running, {} failed\n",
        p.completed, p.total, p.in_progress, p.failed
    ));
    let held = held(&store, &sid);
    for h in &held {
        out.push_str(&format!(
            "  held      {} by {} (on {}, as last fetched)\n",
            h.task,
            h.describe(),
            h.remote
        ));
    }
    if let Some(o) = &outcome {
        out.push_str(&o.lines());
    }
    out.push('\n');
    let rows: Vec<[String; 6]> = state
        .ordered()
        .into_iter()
        .map(|t| {
            let deps: Vec<&str> = t.blocked_by.iter().map(|d| d.as_str()).collect();
            [
                t.id.to_string(),
                t.role.to_string(),
                state.display_status(t).to_owned(),
                if deps.is_empty() {
                    "-".into()
                } else {
                    deps.join(",")
                },
                t.owner.as_ref().map_or_else(
                    || {
                        held.iter()
                            .find(|h| h.task == t.id.as_str())
                            .map_or("-".into(), |h| h.holder.clone())
                    },
                    |o| format!("{}:{}", o.host, o.pid),
                ),
                t.attempts.to_string(),
            ]
        })
        .collect();
    out.push_str(&table(
        &["TASK", "ROLE", "STATUS", "BLOCKED BY", "OWNER", "ATTEMPTS"],
        &rows,
    ));
    ctx.ui.page(&ctx.cwd, out.trim_end());
    Ok(())
}

/// Left-aligned columns separated by two spaces.
pub(crate) fn table<const N: usize>(header: &[&str; N], rows: &[[String; N]]) -> String {
    let mut widths = header.map(str::len);
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: Vec<&str>| {
        let mut l = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if i + 1 == N {
                l.push_str(cell);
            } else {
                l.push_str(&format!("{cell:<w$}  "));
            }
        }
        out.push_str(l.trim_end());
        out.push('\n');
    };
    line(header.to_vec());
    for row in rows {
        line(row.iter().map(String::as_str).collect());
    }
    out
}
