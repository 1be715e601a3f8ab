//! The discussion protocol (seed 003): three topic members and a fixed devil's advocate
//! state positions independently (Position), criticise each other's proposals without
//! agreeing (Challenge), and revise into structured final positions (Synthesis), while a
//! moderator rates agreement per issue and steers the process, never the content.
//!
//! The tool, not a prompt, enforces the protocol: every contribution is a JSON block checked
//! against the round's contract ([`contract`]) and sent back with the problem (bounded)
//! before the member counts as unresponsive; the state after each round comes from the
//! moderator's per-issue rating by fixed definitions ([`classify`]); what follows comes from
//! the preset's transition table ([`after`]); a consensus must pass the false-consensus check
//! ([`reason_similarity`]); turn and overall time limits and the circuit breakers are applied
//! here. A [`Discussion`] is plain data that [`step`] advances one round at a time, so that
//! its caller can record each round as one event and resume from the last one recorded.
//! The decisions that fill the reference's gaps are in `docs/discuss.md`.

pub mod agent;
pub mod builtin;
pub mod contract;
pub mod record;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::agents::contract::{Turn as Answer, Unsettled, exchange};

pub use contract::{Contribution, Critique, Stance};

/// The format version of `discussion.json`.
pub const SCHEMA: u32 = 1;
/// How many answers a member gets to meet the contract in one turn (as a task result).
pub const CONTRACT_TRIES: u32 = crate::agents::command::CONTRACT_TRIES;
/// The role of the devil's advocate (its seat's agent is the roster's to assign).
pub use crate::agents::roster::DEVIL;
/// The topic members when `--members` names none: opposing axes, as the reference prefers.
pub const DEFAULT_MEMBERS: [&str; 3] = ["advocate", "skeptic", "pragmatist"];
/// The most members a discussion may have besides the moderator (the reference's hard cap).
pub const MAX_MEMBERS: usize = 7;
/// Mean pairwise similarity of the members' reasons at or above which a consensus counts as
/// surface agreement.
pub const SURFACE_SIMILARITY: f64 = 0.6;
/// Default time limit of one turn.
pub const TURN_LIMIT: Duration = Duration::from_secs(180);
/// Default time limit of the whole discussion.
pub const OVERALL_LIMIT: Duration = Duration::from_secs(600);

/// A round of the protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RoundKind {
    /// Everyone states a position, independently.
    Position,
    /// Criticism of the others' proposals only.
    Challenge,
    /// Revised, structured final positions.
    Synthesis,
    /// The devil's advocate's extra rebuttal after a surface consensus.
    Rebuttal,
}

impl RoundKind {
    /// Its name in records.
    pub fn as_str(self) -> &'static str {
        match self {
            RoundKind::Position => "position",
            RoundKind::Challenge => "challenge",
            RoundKind::Synthesis => "synthesis",
            RoundKind::Rebuttal => "rebuttal",
        }
    }

    /// Its name in prose.
    pub fn title(self) -> &'static str {
        match self {
            RoundKind::Position => "Position",
            RoundKind::Challenge => "Challenge",
            RoundKind::Synthesis => "Synthesis",
            RoundKind::Rebuttal => "Rebuttal",
        }
    }
}

/// How long a discussion may go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Preset {
    /// Position, then Synthesis.
    Quick,
    /// Two or three rounds, adaptive.
    Default,
    /// Up to five rounds.
    Deep,
}

impl Preset {
    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            Preset::Quick => "quick",
            Preset::Default => "default",
            Preset::Deep => "deep",
        }
    }

    /// The most rounds of members (Position, Challenge, Synthesis) it runs.
    pub fn cap(self) -> u32 {
        match self {
            Preset::Quick => 2,
            Preset::Default => 3,
            Preset::Deep => 5,
        }
    }
}

/// The state of agreement after a round, by the reference's definitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Convergence {
    /// Three or more positions on at least half the main issues.
    Divergent,
    /// Some issues down to two poles.
    Narrowing,
    /// Most issues at two positions or fewer, and members are moving.
    Converging,
    /// Everyone reaches the same conclusion (to be checked for false consensus).
    Consensus,
}

impl Convergence {
    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            Convergence::Divergent => "DIVERGENT",
            Convergence::Narrowing => "NARROWING",
            Convergence::Converging => "CONVERGING",
            Convergence::Consensus => "CONSENSUS",
        }
    }

    /// What the moderator does in this state (the reference's process duties).
    pub fn duty(self) -> &'static str {
        match self {
            Convergence::Divergent => {
                "Many positions: take the issues in order of weight and focus each member on the first open one."
            }
            Convergence::Narrowing => {
                "Two poles on some issues: check only whether an angle has been missed."
            }
            Convergence::Converging => {
                "Positions are closing: watch whether the reasons behind them are still diverse."
            }
            Convergence::Consensus => "Everyone agrees: the false-consensus check runs now.",
        }
    }
}

/// What follows a round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Next {
    /// Another round.
    Round(RoundKind),
    /// The false-consensus check.
    Check,
    /// Nothing: the discussion ends with what it has.
    Stop,
}

/// The preset's transition table: what follows a round of kind `last` that left `state`,
/// when `rounds` rounds of members have run. A Challenge that would take the last round the
/// preset allows becomes the Synthesis; a Synthesis is always the last round.
pub fn after(preset: Preset, last: RoundKind, state: Convergence, rounds: u32, cap: u32) -> Next {
    use Convergence::*;
    if last == RoundKind::Synthesis {
        return if state == Consensus {
            Next::Check
        } else {
            Next::Stop
        };
    }
    let table = match (preset, state) {
        (Preset::Quick, Consensus) | (Preset::Default, Consensus) => Next::Check,
        (Preset::Quick, _) => Next::Round(RoundKind::Synthesis),
        (Preset::Default, Divergent | Narrowing) => Next::Round(RoundKind::Challenge),
        (Preset::Default, Converging) => Next::Round(RoundKind::Synthesis),
        (Preset::Deep, _) => Next::Round(RoundKind::Challenge),
    };
    match table {
        Next::Round(RoundKind::Challenge) if rounds + 1 >= cap => Next::Round(RoundKind::Synthesis),
        Next::Round(_) if rounds >= cap => Next::Stop,
        t => t,
    }
}

/// One pole of an issue: a stance and who holds it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pole {
    /// The stance.
    pub stance: String,
    /// The members holding it.
    pub members: Vec<String>,
}

/// The moderator's rating of one issue: which members hold which position.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IssueRating {
    /// The issue.
    pub issue: String,
    /// Its poles.
    pub positions: Vec<Pole>,
}

/// The moderator's output after a round. It has no field for who is right, by design: an
/// agent moderator that adds one is refused.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rating {
    /// The main issues and their poles.
    pub issues: Vec<IssueRating>,
    /// The moderator's process note to the members (at most 300 words).
    #[serde(default)]
    pub note: String,
}

/// Why a member gave no contribution.
#[derive(Debug, Clone, PartialEq)]
pub enum MemberError {
    /// The agent's API or program failed: the protocol stops for this session.
    Api(String),
    /// The member could not answer (its run failed, timed out inside the driver).
    Failed(String),
}

/// One turn of a member: what it is asked.
#[derive(Debug, Clone)]
pub struct Turn {
    /// The round.
    pub round: RoundKind,
    /// Its number, from 1.
    pub number: u32,
    /// The member's role.
    pub role: String,
    /// Whether it is the devil's advocate.
    pub devil: bool,
    /// The prompt: the whole of what the member sees.
    pub prompt: String,
    /// When the turn's time is up: an agent still running then is stopped.
    pub deadline: Option<Instant>,
}

/// A member of the discussion: returns its answer (which must hold the contribution's JSON
/// block) to a turn's prompt.
pub trait Member: Send + Sync {
    /// The agent's name for the record (`builtin` for the builtin member).
    fn agent(&self) -> &str;
    /// Answers `turn`.
    fn speak(&self, turn: &Turn) -> Result<String, MemberError>;
}

/// What the moderator rates.
pub struct RatingInput<'a> {
    /// The topic.
    pub topic: &'a str,
    /// The round just run.
    pub round: RoundKind,
    /// Its number, from 1.
    pub number: u32,
    /// The contributions of that round, by role (the devil's advocate included).
    pub contributions: &'a BTreeMap<String, Contribution>,
}

/// The moderator: rates agreement per issue. Steers the process only.
pub trait Moderator: Send + Sync {
    /// The agent's name for the record.
    fn agent(&self) -> &str;
    /// Extracts the main issues and who holds which position on each.
    fn rate(&self, input: &RatingInput<'_>) -> Result<Rating, MemberError>;
}

/// A seat at the discussion.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Seat {
    /// The member's role (`advocate`, `devil`, …).
    pub role: String,
    /// Whether it is the devil's advocate.
    pub devil: bool,
    /// The agent that plays it.
    pub agent: String,
    /// Why it is out of the discussion, once it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub out: Option<String>,
}

/// The time limits, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// One turn (a member's answers to one round, send-backs included).
    pub turn_ms: u64,
    /// The whole discussion, over every run of it.
    pub overall_ms: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            turn_ms: TURN_LIMIT.as_millis() as u64,
            overall_ms: OVERALL_LIMIT.as_millis() as u64,
        }
    }
}

/// How one member's turn went.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TurnRecord {
    /// The member's role.
    pub role: String,
    /// The agent.
    pub agent: String,
    /// Its contribution, when it met the contract.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contribution: Option<Contribution>,
    /// The problems it was sent back with, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sent_back: Vec<String>,
    /// Why it counts as unresponsive, when it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unresponsive: Option<String>,
    /// Milliseconds the turn took.
    pub ms: u64,
    /// The prompt of its last answer (kept in its own file, not in `discussion.json`).
    #[serde(skip)]
    pub prompt: String,
    /// Its last answer as given (kept in its own file).
    #[serde(skip)]
    pub raw: String,
}

/// The result of the false-consensus check.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckRecord {
    /// Mean pairwise similarity of the members' reasons, 0 to 1.
    pub similarity: f64,
    /// The threshold it was compared with.
    pub threshold: f64,
    /// Whether the agreement is on the surface (same reasons).
    pub surface: bool,
}

/// One round as it ran.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoundRecord {
    /// From 1.
    pub number: u32,
    /// Which round.
    pub kind: RoundKind,
    /// Each member's turn.
    pub turns: Vec<TurnRecord>,
    /// The moderator's rating (not for a Rebuttal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rating: Option<Rating>,
    /// Who rated it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moderator: Option<String>,
    /// The state it left.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<Convergence>,
    /// Whether members moved (a change, or fewer poles than the round before).
    #[serde(default)]
    pub moving: bool,
    /// The false-consensus check, when it ran after this round.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<CheckRecord>,
    /// What the transition table gave.
    pub next: Next,
    /// Fallbacks, breakers and other events of the round, in words.
    #[serde(default)]
    pub notes: Vec<String>,
    /// Milliseconds of wall-clock time.
    pub ms: u64,
    /// Milliseconds of that spent in member and moderator calls.
    pub agent_ms: u64,
}

/// How a discussion ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum End {
    /// A consensus whose reasons are diverse.
    Consensus,
    /// A surface consensus the user adopted.
    Adopted,
    /// The rounds ran out with issues still split (the ruling lists them).
    Split,
    /// Two or more members were unresponsive: independent analyses instead.
    FellBack,
    /// An agent's API failed: the protocol stopped.
    ApiError,
    /// The overall time limit was reached.
    TimedOut,
}

impl End {
    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            End::Consensus => "consensus",
            End::Adopted => "adopted",
            End::Split => "split",
            End::FellBack => "fell_back",
            End::ApiError => "api_error",
            End::TimedOut => "timed_out",
        }
    }
}

/// Where a discussion stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", tag = "status", content = "end")]
pub enum Status {
    /// The next round is `Discussion::next`.
    Running,
    /// A surface consensus waits for the user: adopt it or challenge more.
    AwaitingDecision,
    /// Over.
    Ended(End),
}

/// The user's decision at a surface consensus.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Take the consensus as it is.
    Adopt,
    /// Run another Challenge and Synthesis.
    Challenge,
}

/// A whole discussion, as `discussion.json` keeps it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Discussion {
    /// Format version.
    pub schema: u32,
    /// What is discussed.
    pub topic: String,
    /// The topic as a file-name slug.
    pub slug: String,
    /// The preset.
    pub preset: Preset,
    /// The members, topic members first, the devil's advocate last.
    pub seats: Vec<Seat>,
    /// The moderator's agent.
    pub moderator: String,
    /// The documents every member reads, by path.
    #[serde(default)]
    pub artifacts: Vec<String>,
    /// The time limits.
    pub limits: Limits,
    /// Milliseconds spent so far, over every run.
    pub spent_ms: u64,
    /// Rounds of members the user's "challenge more" added to the preset's cap.
    #[serde(default)]
    pub extra_rounds: u32,
    /// The next round, while running.
    pub next: RoundKind,
    /// Where it stands.
    #[serde(flatten)]
    pub status: Status,
    /// The rounds run.
    #[serde(default)]
    pub rounds: Vec<RoundRecord>,
    /// The user's decisions, in order.
    #[serde(default)]
    pub decisions: Vec<Decision>,
    /// Notes about the whole discussion (builtin members, fallbacks).
    #[serde(default)]
    pub notes: Vec<String>,
}

/// Who plays which seat, and the moderator.
pub struct Cast {
    /// The member of each seat, by role.
    pub members: BTreeMap<String, Arc<dyn Member>>,
    /// The moderator.
    pub moderator: Arc<dyn Moderator>,
}

/// The documents the members read: path and text.
pub type Material = Vec<(String, String)>;

/// A file-name slug of `text`: lower-case words joined by `-`, at most 48 characters.
pub fn slug(text: &str) -> String {
    let mut out = String::new();
    for w in text
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        if out.len() + w.len() + 1 > 48 {
            break;
        }
        if !out.is_empty() {
            out.push('-');
        }
        out.push_str(&w.to_ascii_lowercase());
    }
    if out.is_empty() { "topic".into() } else { out }
}

impl Discussion {
    /// A new discussion of `topic` among `members` (topic roles) and the devil's advocate,
    /// with their agents from `agent_of`.
    pub fn new(
        topic: &str,
        preset: Preset,
        members: &[String],
        agent_of: impl Fn(&str) -> String,
        moderator: &str,
        artifacts: Vec<String>,
        limits: Limits,
    ) -> Result<Discussion, String> {
        let mut seen = BTreeSet::new();
        if members.len() < 2 {
            return Err(format!(
                "a discussion needs at least two topic members besides the devil's advocate; got {}",
                members.len()
            ));
        }
        if members.len() + 1 > MAX_MEMBERS {
            return Err(format!(
                "at most {} topic members (the hard cap is {MAX_MEMBERS} with the devil's advocate); got {}",
                MAX_MEMBERS - 1,
                members.len()
            ));
        }
        for m in members {
            if m.is_empty()
                || !m
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            {
                return Err(format!(
                    "member role `{m}`: use letters, digits, `-` and `_`"
                ));
            }
            if m == DEVIL || m == crate::agents::roster::MODERATOR {
                return Err(format!(
                    "member role `{m}` is taken: the devil's advocate and the moderator are always there"
                ));
            }
            if !seen.insert(m.as_str()) {
                return Err(format!("member role `{m}` is named twice"));
            }
        }
        let mut seats: Vec<Seat> = members
            .iter()
            .map(|m| Seat {
                role: m.clone(),
                devil: false,
                agent: agent_of(m),
                out: None,
            })
            .collect();
        seats.push(Seat {
            role: DEVIL.into(),
            devil: true,
            agent: agent_of(DEVIL),
            out: None,
        });
        let mut notes = Vec::new();
        let builtin: Vec<&str> = seats
            .iter()
            .filter(|s| s.agent == "builtin")
            .map(|s| s.role.as_str())
            .collect();
        if !builtin.is_empty() {
            notes.push(format!(
                "No agent is configured for {}: the builtin members take their places. They are deterministic templates built from the topic's options, not reasoning.",
                builtin.join(", ")
            ));
        }
        if moderator == "builtin" {
            notes.push(
                "The builtin moderator rated the issues from the members' structured positions."
                    .into(),
            );
        }
        Ok(Discussion {
            schema: SCHEMA,
            topic: topic.trim().to_owned(),
            slug: slug(topic),
            preset,
            seats,
            moderator: moderator.to_owned(),
            artifacts,
            limits,
            spent_ms: 0,
            extra_rounds: 0,
            next: RoundKind::Position,
            status: Status::Running,
            rounds: Vec::new(),
            decisions: Vec::new(),
            notes,
        })
    }

    /// The roles of the seats still in, other than `role`.
    pub fn others(&self, role: &str) -> Vec<String> {
        self.seats
            .iter()
            .filter(|s| s.role != role && s.out.is_none())
            .map(|s| s.role.clone())
            .collect()
    }

    /// The roles of the topic members.
    pub fn topic_roles(&self) -> Vec<String> {
        self.seats
            .iter()
            .filter(|s| !s.devil)
            .map(|s| s.role.clone())
            .collect()
    }

    /// Rounds of members run so far (the Rebuttal not counted).
    pub fn member_rounds(&self) -> u32 {
        self.rounds
            .iter()
            .filter(|r| r.kind != RoundKind::Rebuttal)
            .count() as u32
    }

    /// The latest contribution of each member, by role.
    pub fn latest(&self) -> BTreeMap<String, Contribution> {
        let mut out = BTreeMap::new();
        for r in &self.rounds {
            for t in &r.turns {
                if let Some(c) = &t.contribution {
                    out.insert(t.role.clone(), c.clone());
                }
            }
        }
        out
    }

    /// The last rating.
    pub fn last_rating(&self) -> Option<&Rating> {
        self.rounds.iter().rev().find_map(|r| r.rating.as_ref())
    }

    /// Applies the user's decision at a surface consensus.
    pub fn decide(&mut self, decision: Decision) -> Result<(), String> {
        if self.status != Status::AwaitingDecision {
            return Err("the discussion is not waiting for a decision".into());
        }
        self.decisions.push(decision);
        match decision {
            Decision::Adopt => self.status = Status::Ended(End::Adopted),
            Decision::Challenge => {
                self.extra_rounds += 2;
                self.next = RoundKind::Challenge;
                self.status = Status::Running;
            }
        }
        Ok(())
    }
}

/// The state of agreement from `rating`: only the topic members count (the devil's
/// advocate dissents by design; its stance is kept as a dissenting view).
pub fn classify(rating: &Rating, topic: &[String], moving: bool) -> Convergence {
    let poles: Vec<usize> = rating
        .issues
        .iter()
        .map(|i| poles_of(i, topic))
        .filter(|&n| n > 0)
        .collect();
    let n = poles.len();
    if n == 0 {
        return Convergence::Divergent;
    }
    if poles.iter().all(|&p| p == 1) {
        return Convergence::Consensus;
    }
    let wide = poles.iter().filter(|&&p| p >= 3).count();
    if wide * 2 >= n {
        return Convergence::Divergent;
    }
    let narrow = poles.iter().filter(|&&p| p <= 2).count();
    if narrow * 2 > n && moving {
        Convergence::Converging
    } else {
        Convergence::Narrowing
    }
}

/// How many positions topic members hold on `issue`.
fn poles_of(issue: &IssueRating, topic: &[String]) -> usize {
    issue
        .positions
        .iter()
        .filter(|p| p.members.iter().any(|m| topic.contains(m)))
        .count()
}

/// The number of positions over every issue, for telling whether members moved.
fn pole_total(rating: &Rating, topic: &[String]) -> usize {
    rating.issues.iter().map(|i| poles_of(i, topic)).sum()
}

/// A text reduced to its words, lower-case, for comparing reasons.
fn normal(text: &str) -> String {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The false-consensus measure: for each issue, the reasons the topic members give for the
/// stance they share; the mean, over every pair of members and every issue, of the word-level
/// similarity of their reasons (`similar`'s ratio of the word diff, 0 = nothing in common,
/// 1 = the same words). `None` when fewer than two members gave reasons.
pub fn reason_similarity(
    contributions: &BTreeMap<String, Contribution>,
    topic: &[String],
) -> Option<f64> {
    let mut by_issue: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (role, c) in contributions {
        if !topic.contains(role) {
            continue;
        }
        for p in &c.positions {
            by_issue
                .entry(normal(&p.issue))
                .or_default()
                .push(normal(&p.reason));
        }
    }
    let (mut sum, mut pairs) = (0.0, 0u32);
    for reasons in by_issue.values() {
        for (i, a) in reasons.iter().enumerate() {
            for b in &reasons[i + 1..] {
                sum += f64::from(similar::TextDiff::from_words(a.as_str(), b.as_str()).ratio());
                pairs += 1;
            }
        }
    }
    (pairs > 0).then(|| sum / f64::from(pairs))
}

/// The prompt of `seat`'s turn in `round` of `d`. A Position prompt holds the topic and the
/// documents only: no other member's output.
pub fn prompt(
    d: &Discussion,
    seat: &Seat,
    round: RoundKind,
    number: u32,
    material: &Material,
) -> String {
    let mut p = String::new();
    p.push_str("# Discussion turn\n\n");
    p.push_str(&format!("- Round: {}\n", round.title()));
    p.push_str(&format!("- Number: {number}\n"));
    p.push_str(&format!("- Member: {}\n", seat.role));
    p.push_str(&format!(
        "- Devil's advocate: {}\n",
        if seat.devil { "yes" } else { "no" }
    ));
    let others = d.others(&seat.role);
    p.push_str(&format!("- Others: {}\n", others.join(", ")));
    p.push_str(&format!(
        "- Words: at most {}\n\n",
        contract::word_limit(round)
    ));
    p.push_str(&format!("## Topic\n\n{}\n\n", d.topic));
    if seat.devil {
        p.push_str(
            "## Your seat\n\nYou are the devil's advocate. Keep a critical stance in every round, \
             attack the view most members hold first, and name at least three assumptions the \
             discussion takes for granted. In a final position, offer a compromise that could \
             work.\n\n",
        );
    } else {
        p.push_str(&format!(
            "## Your seat\n\nYou speak as the `{}` member. Argue from that angle and stay with \
             what you can defend.\n\n",
            seat.role
        ));
    }
    for (path, text) in material {
        p.push_str(&format!("## Document {path}\n\n{text}\n\n"));
    }
    let latest = d.latest();
    let show = |p: &mut String,
                heading: &str,
                roles: &mut dyn Iterator<Item = (&String, &Contribution)>| {
        let mut any = false;
        for (role, c) in roles {
            if !any {
                p.push_str(&format!("## {heading}\n\n"));
                any = true;
            }
            p.push_str(&format!("### {role}\n\n{}\n\n", c.text));
            for s in &c.positions {
                p.push_str(&format!(
                    "- on {}: {} (because {})\n",
                    s.issue, s.stance, s.reason
                ));
            }
            for k in &c.critiques {
                p.push_str(&format!(
                    "- to {}: weakness: {}; fails when: {}; instead: {}\n",
                    k.target, k.weakness, k.failure, k.alternative
                ));
            }
            p.push('\n');
        }
    };
    match round {
        RoundKind::Position => {
            p.push_str(
                "## This round: Position\n\nState your own position independently. You see no \
                 other member's view in this round, by design.\n\n",
            );
        }
        RoundKind::Challenge => {
            show(
                &mut p,
                "The others' latest positions",
                &mut latest.iter().filter(|(r, _)| **r != seat.role),
            );
            p.push_str(
                "## This round: Challenge\n\nCriticise the others' proposals. Agreeing is not \
                 allowed in this round. For every proposal you criticise give one weakness, one \
                 scenario in which it fails, and one alternative, in `critiques`.\n\n",
            );
        }
        RoundKind::Synthesis => {
            show(&mut p, "Where everyone stands", &mut latest.iter());
            p.push_str(
                "## This round: Synthesis\n\nRevise your position in the light of the criticism \
                 and give your final position: `confidence` (HIGH, MED or LOW), what you \
                 `accepts`, what you `will_not_concede`, and the `risks` that remain.\n\n",
            );
        }
        RoundKind::Rebuttal => {
            show(
                &mut p,
                "The agreement reached",
                &mut latest.iter().filter(|(r, _)| **r != seat.role),
            );
            p.push_str(
                "## This round: Rebuttal\n\nEvery member reached the same conclusion for much \
                 the same reasons. Attack that agreement: criticise the shared proposal \
                 (weakness, failure scenario, alternative) and name the assumptions it rests \
                 on.\n\n",
            );
        }
    }
    if let Some(r) = d.last_rating().filter(|r| !r.note.is_empty()) {
        p.push_str(&format!("## The moderator's note\n\n{}\n\n", r.note));
    }
    p.push_str(&format!(
        "## What you hand over\n\nOne JSON object in a ```json block:\n\n```\n{{\n  \"text\": \"your contribution in prose\",\n  \"changed\": false,\n  \"why\": \"why your position changed, or why not\",\n  \"positions\": [{{\"issue\": \"…\", \"stance\": \"…\", \"reason\": \"…\"}}],\n  \"critiques\": [{{\"target\": \"ROLE\", \"weakness\": \"…\", \"failure\": \"…\", \"alternative\": \"…\"}}],\n  \"assumptions\": [\"…\"],\n  \"confidence\": \"HIGH|MED|LOW\",\n  \"accepts\": [\"…\"], \"will_not_concede\": [\"…\"], \"risks\": [\"…\"]\n}}\n```\n\n\
         At most {} words over all its text. `critiques` are required in Challenge and \
         Rebuttal; `confidence`, `accepts`, `will_not_concede` and `risks` in Synthesis; the \
         devil's advocate gives at least three `assumptions` every round. Use the same issue \
         names as the others where you speak to the same issue.\n",
        contract::word_limit(round)
    ));
    p
}

/// The section a send-back appends to the prompt.
pub fn retry_section(problem: &str, answer: &str) -> String {
    let mut tail: String = answer.chars().rev().take(2000).collect();
    tail = tail.chars().rev().collect();
    format!(
        "\n{}\n\nThe tool refused it: {problem}\n\nYour answer ended with:\n\n{tail}\n\nAnswer again with a contribution that meets the contract.\n",
        crate::agents::prompt::RETRY_HEADING
    )
}

/// What a member's turn came to, before the round records it.
struct Spoken {
    record: TurnRecord,
    api: Option<String>,
}

/// Runs one turn of `member` (with send-backs), stopping at `deadline`.
fn take_turn(member: &dyn Member, turn: Turn, others: Vec<String>, deadline: Instant) -> Spoken {
    let started = Instant::now();
    let mut record = TurnRecord {
        role: turn.role.clone(),
        agent: member.agent().to_owned(),
        contribution: None,
        sent_back: Vec::new(),
        unresponsive: None,
        ms: 0,
        prompt: turn.prompt.clone(),
        raw: String::new(),
    };
    let mut api = None;
    let who = contract::Speaker {
        role: &turn.role,
        devil: turn.devil,
        others: &others,
    };
    let send_back =
        |problem: &str, answer: &str| format!("{}{}", turn.prompt, retry_section(problem, answer));
    let settled = exchange(&turn.prompt, send_back, |attempt, prompt| {
        if attempt > 1 && Instant::now() >= deadline {
            let last = record.sent_back.last().cloned().unwrap_or_default();
            return Ok(Answer::Failed(format!(
                "out of contract, and the turn's time is up: {last}"
            )));
        }
        record.prompt = prompt.to_owned();
        let asked = Turn {
            prompt: prompt.to_owned(),
            ..turn.clone()
        };
        Ok(match member.speak(&asked) {
            Ok(answer) => {
                record.raw = answer.clone();
                match contract::parse(&answer, turn.round, &who) {
                    Ok(c) => Answer::Done(c),
                    Err(problem) => {
                        record.sent_back.push(problem.clone());
                        Answer::Rejected { problem, answer }
                    }
                }
            }
            Err(MemberError::Api(e)) => {
                let reason = format!("API error: {e}");
                api = Some(e);
                Answer::Failed(reason)
            }
            Err(MemberError::Failed(e)) => Answer::Failed(format!("no answer: {e}")),
        })
    })
    .unwrap_or_else(|e| Err(Unsettled::Failed(format!("no answer: {e}"))));
    match settled {
        Ok(c) => record.contribution = Some(c),
        Err(Unsettled::Failed(reason)) => record.unresponsive = Some(reason),
        Err(Unsettled::Rejected(problem)) => {
            record.unresponsive = Some(format!(
                "out of contract after {CONTRACT_TRIES} answers: {problem}"
            ))
        }
    }
    record.ms = started.elapsed().as_millis() as u64;
    Spoken { record, api }
}

/// Runs the next round of `d` with `cast` and records it in `d`; `None` when the discussion
/// is not running. Every member of the round speaks in parallel; one that does not answer
/// within the turn limit (or what is left of the overall limit) counts as unresponsive.
pub fn step<'d>(
    d: &'d mut Discussion,
    cast: &Cast,
    material: &Material,
) -> Option<&'d RoundRecord> {
    if d.status != Status::Running {
        return None;
    }
    let started = Instant::now();
    let round = d.next;
    let number = d.rounds.len() as u32 + 1;
    let mut notes = Vec::new();
    let left = d.limits.overall_ms.saturating_sub(d.spent_ms);
    if left == 0 {
        d.status = Status::Ended(End::TimedOut);
        d.notes.push(format!(
            "The overall time limit ({} s) was reached before round {number}; the discussion ends with the rounds it has.",
            d.limits.overall_ms / 1000
        ));
        return None;
    }
    let wait = Duration::from_millis(d.limits.turn_ms.min(left));
    let deadline = started + wait;
    let speakers: Vec<Seat> = d
        .seats
        .iter()
        .filter(|s| s.out.is_none() && (round != RoundKind::Rebuttal || s.devil))
        .cloned()
        .collect();
    let mut spoken = hear(d, cast, &speakers, round, number, material, deadline);
    let mut turns = Vec::new();
    let mut api = None;
    let mut agent_ms = 0;
    for seat in &speakers {
        let record = match spoken.remove(&seat.role) {
            Some(s) => {
                if let Some(e) = s.api {
                    api.get_or_insert((seat.role.clone(), e));
                }
                agent_ms = agent_ms.max(s.record.ms);
                s.record
            }
            None => {
                agent_ms = agent_ms.max(wait.as_millis() as u64);
                TurnRecord {
                    prompt: prompt(d, seat, round, number, material),
                    ..silent_turn(seat, wait)
                }
            }
        };
        if let Some(why) = &record.unresponsive {
            notes.push(format!("{} is unresponsive: {why}", seat.role));
        }
        turns.push(record);
    }
    for t in &turns {
        if let Some(why) = &t.unresponsive
            && let Some(seat) = d.seats.iter_mut().find(|s| s.role == t.role)
        {
            seat.out = Some(format!("round {number} ({}): {why}", round.as_str()));
        }
    }
    let contributions: BTreeMap<String, Contribution> = turns
        .iter()
        .filter_map(|t| t.contribution.clone().map(|c| (t.role.clone(), c)))
        .collect();
    let out = d.seats.iter().filter(|s| s.out.is_some()).count();
    let mut rec = RoundRecord {
        number,
        kind: round,
        turns,
        rating: None,
        moderator: None,
        state: None,
        moving: false,
        check: None,
        next: Next::Stop,
        notes: Vec::new(),
        ms: 0,
        agent_ms,
    };
    if let Some((role, e)) = api {
        notes.push(format!(
            "Circuit breaker: the agent of {role} reported an API error ({e}); the protocol stops for this session."
        ));
        d.status = Status::Ended(End::ApiError);
        return finish(d, rec, notes, started);
    }
    if out >= 2 {
        notes.push(format!(
            "Circuit breaker: {out} members are unresponsive; the discussion falls back to the members' independent analyses."
        ));
        d.status = Status::Ended(End::FellBack);
        return finish(d, rec, notes, started);
    }
    if out == 1 && rec.turns.iter().any(|t| t.unresponsive.is_some()) {
        notes.push(
            "Circuit breaker: one member is out; the discussion continues with the others.".into(),
        );
    }
    if round == RoundKind::Rebuttal {
        notes.push(
            "Unanimous agreement was detected and the reasons behind it are much the same: check the diversity of the reasoning, then adopt the consensus or ask for more challenge."
                .into(),
        );
        d.status = Status::AwaitingDecision;
        rec.next = Next::Stop;
        return finish(d, rec, notes, started);
    }
    let input = RatingInput {
        topic: &d.topic,
        round,
        number,
        contributions: &contributions,
    };
    let rated = Instant::now();
    let rating = rate(cast, &input, &d.seats, &mut rec, &mut notes);
    rec.agent_ms += rated.elapsed().as_millis() as u64;
    let topic = d.topic_roles();
    let changed = contributions
        .iter()
        .any(|(r, c)| topic.contains(r) && c.changed && round != RoundKind::Position);
    let fewer = d
        .last_rating()
        .is_some_and(|prev| pole_total(&rating, &topic) < pole_total(prev, &topic));
    rec.moving = changed || fewer;
    let state = classify(&rating, &topic, rec.moving);
    rec.state = Some(state);
    let mut rating = rating;
    if rating.note.is_empty() {
        rating.note = state.duty().to_owned();
    }
    rec.rating = Some(rating);
    let rounds = d.member_rounds() + 1;
    let next = after(
        d.preset,
        round,
        state,
        rounds,
        d.preset.cap() + d.extra_rounds,
    );
    rec.next = next;
    transition(d, next, state, &contributions, &topic, &mut rec, &mut notes);
    finish(d, rec, notes, started)
}

/// The record of the turn of `seat`, which gave no answer within the turn limit `wait` (its
/// prompt left empty).
fn silent_turn(seat: &Seat, wait: Duration) -> TurnRecord {
    TurnRecord {
        role: seat.role.clone(),
        agent: seat.agent.clone(),
        contribution: None,
        sent_back: Vec::new(),
        unresponsive: Some(format!(
            "no answer within the turn limit of {} s",
            wait.as_millis() as f64 / 1000.0
        )),
        ms: wait.as_millis() as u64,
        prompt: String::new(),
        raw: String::new(),
    }
}

/// Every one of `speakers` takes its turn of round `number` (`round`) in parallel; the
/// turns spoken by `deadline`, by role.
fn hear(
    d: &Discussion,
    cast: &Cast,
    speakers: &[Seat],
    round: RoundKind,
    number: u32,
    material: &Material,
    deadline: Instant,
) -> BTreeMap<String, Spoken> {
    let (tx, rx) = std::sync::mpsc::channel::<Spoken>();
    for seat in speakers {
        let Some(member) = cast.members.get(&seat.role).cloned() else {
            continue;
        };
        let turn = Turn {
            round,
            number,
            role: seat.role.clone(),
            devil: seat.devil,
            prompt: prompt(d, seat, round, number, material),
            deadline: Some(deadline),
        };
        let others = d.others(&seat.role);
        let tx = tx.clone();
        // Not waited for past the deadline: a member's agent still running then is stopped
        // by its driver (the turn's deadline bounds the run), and a late answer is dropped.
        std::thread::spawn(move || {
            let _ = tx.send(take_turn(member.as_ref(), turn, others, deadline));
        });
    }
    drop(tx);
    let mut spoken: BTreeMap<String, Spoken> = BTreeMap::new();
    while spoken.len() < speakers.len() {
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        match rx.recv_timeout(deadline - now) {
            Ok(s) => {
                spoken.insert(s.record.role.clone(), s);
            }
            Err(_) => break,
        }
    }
    spoken
}

/// The moderator's rating of the round; the builtin moderator's when the moderator gives
/// none or rates out of contract (which `notes` say). Who rated goes into `rec`.
fn rate(
    cast: &Cast,
    input: &RatingInput<'_>,
    seats: &[Seat],
    rec: &mut RoundRecord,
    notes: &mut Vec<String>,
) -> Rating {
    match cast.moderator.rate(input) {
        Ok(r) => match check_rating(&r, seats) {
            Ok(()) => {
                rec.moderator = Some(cast.moderator.agent().to_owned());
                r
            }
            Err(why) => {
                notes.push(format!(
                    "The moderator `{}` rated out of contract ({why}); the builtin moderator rated instead.",
                    cast.moderator.agent()
                ));
                rec.moderator = Some("builtin".into());
                builtin::BuiltinModerator.rate(input).unwrap_or_default()
            }
        },
        Err(e) => {
            let why = match e {
                MemberError::Api(e) | MemberError::Failed(e) => e,
            };
            notes.push(format!(
                "The moderator `{}` gave no rating ({why}); the builtin moderator rated instead.",
                cast.moderator.agent()
            ));
            rec.moderator = Some("builtin".into());
            builtin::BuiltinModerator.rate(input).unwrap_or_default()
        }
    }
}

/// Where the discussion goes after a round rated `state` whose transition is `next`: the
/// next round, its end, or the false-consensus check (recorded in `rec`, explained in
/// `notes`).
fn transition(
    d: &mut Discussion,
    next: Next,
    state: Convergence,
    contributions: &BTreeMap<String, Contribution>,
    topic: &[String],
    rec: &mut RoundRecord,
    notes: &mut Vec<String>,
) {
    match next {
        Next::Round(k) => d.next = k,
        Next::Stop => {
            d.status = Status::Ended(if state == Convergence::Consensus {
                End::Consensus
            } else {
                End::Split
            })
        }
        Next::Check => {
            let sim = reason_similarity(contributions, topic).unwrap_or(0.0);
            let surface = sim >= SURFACE_SIMILARITY;
            rec.check = Some(CheckRecord {
                similarity: (sim * 1000.0).round() / 1000.0,
                threshold: SURFACE_SIMILARITY,
                surface,
            });
            if surface && d.seats.iter().any(|s| s.devil && s.out.is_none()) {
                notes.push(format!(
                    "False-consensus check: the members' reasons are {:.0}% alike (threshold {:.0}%): surface agreement; the devil's advocate gives an extra rebuttal, then the user decides.",
                    sim * 100.0,
                    SURFACE_SIMILARITY * 100.0
                ));
                d.next = RoundKind::Rebuttal;
            } else if surface {
                notes.push(format!(
                    "False-consensus check: the members' reasons are {:.0}% alike: surface agreement, and the devil's advocate is out; the user decides.",
                    sim * 100.0
                ));
                d.status = Status::AwaitingDecision;
            } else {
                notes.push(format!(
                    "False-consensus check: the members' reasons are {:.0}% alike (threshold {:.0}%): the agreement rests on diverse reasons.",
                    sim * 100.0,
                    SURFACE_SIMILARITY * 100.0
                ));
                d.status = Status::Ended(End::Consensus);
            }
        }
    }
}

/// Records `rec` with its notes and time in `d`.
fn finish(
    d: &mut Discussion,
    mut rec: RoundRecord,
    notes: Vec<String>,
    started: Instant,
) -> Option<&RoundRecord> {
    rec.notes = notes;
    rec.ms = started.elapsed().as_millis() as u64;
    d.spent_ms += rec.ms;
    d.rounds.push(rec);
    d.rounds.last()
}

/// Checks a moderator's rating: only members of the discussion, a note within its limit.
fn check_rating(r: &Rating, seats: &[Seat]) -> Result<(), String> {
    let n = contract::words(&r.note);
    if n > contract::MODERATOR_WORDS {
        return Err(format!(
            "its note has {n} words; at most {}",
            contract::MODERATOR_WORDS
        ));
    }
    for i in &r.issues {
        for p in &i.positions {
            if let Some(m) = p
                .members
                .iter()
                .find(|m| !seats.iter().any(|s| s.role == **m))
            {
                return Err(format!(
                    "issue `{}` names `{m}`, who is not a member",
                    i.issue
                ));
            }
        }
    }
    Ok(())
}

/// Runs `d` until it ends or waits for the user.
pub fn run(d: &mut Discussion, cast: &Cast, material: &Material) {
    while step(d, cast, material).is_some() {}
}

#[cfg(test)]
mod tests;
