//! A discuss round run as the discussion protocol (`[discuss.mode] ROUND = "protocol"`):
//! the round's perspectives take the topic members' seats, beside the devil's advocate, on
//! the question whether the round's artifact is ready to build on. The rules' critique runs
//! first and keeps deciding the round's verdict (deterministic rules first); the discussion
//! is recorded beside it and its outcome joins the summary and the action items.
//!
//! A perspective with an agent (`[discuss.perspectives]`) plays its seat through that agent;
//! one without is a [`CriticMember`], which argues from its critique: "build on it" when the
//! rules found no gap, no high risk and a rating of 3 or more, else "revise it first", with
//! the rules' strengths or weaknesses as its reasons. Inside a pipeline nobody is asked in
//! the middle of a task: a consensus on the same reasons is reported as a MEDIUM divergence
//! (to `wisdom/issues.md`) instead of a pause.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::config::Config;
use super::{Critique, Perspectives, RiskLevel};
use crate::agents::{TaskInput, TaskOutput};
use crate::quality::DiscussOutcome;
use crate::quality::protocol::agent::{Runs, SeatMember, SeatModerator, Seated};
use crate::quality::protocol::{
    self, Cast, Contribution, Discussion, End, Limits, Member, MemberError, Preset, RoundKind,
    Stance, Status, Turn, builtin, record,
};
use tlv4_core::error::Result;

/// What the protocol round works with.
pub(super) struct Round<'a> {
    /// The discuss rules.
    pub config: &'a Config,
    /// The round's key.
    pub round: &'a str,
    /// The preset.
    pub preset: Preset,
    /// The task's input.
    pub input: &'a TaskInput,
    /// What the task produced.
    pub produced: &'a TaskOutput,
    /// The perspectives' agents.
    pub agents: &'a Perspectives,
    /// What the rules' critics said.
    pub critiques: &'a [Critique],
}

/// The issue every critic member speaks to.
const ISSUE: &str = "readiness";

/// A perspective's seat played from its critique.
pub(super) struct CriticMember {
    mine: Critique,
    all: BTreeMap<String, Critique>,
}

fn ready(c: &Critique) -> bool {
    c.missing.is_empty() && c.risk < RiskLevel::High && c.rating >= 3
}

fn stance(c: &Critique) -> &'static str {
    if ready(c) {
        "build on it"
    } else {
        "revise it first"
    }
}

/// At most `n` words of `text`.
fn first_words(text: &str, n: usize) -> String {
    text.split_whitespace()
        .take(n)
        .collect::<Vec<_>>()
        .join(" ")
}

fn first(list: &[String], fallback: &str) -> String {
    first_words(list.first().map_or(fallback, String::as_str), 20)
}

impl CriticMember {
    fn contribution(&self, turn: &Turn) -> Contribution {
        let c = &self.mine;
        let reason = if ready(c) {
            first(&c.strengths, "the rules found nothing missing")
        } else {
            first(&c.weaknesses, "the rules found it short")
        };
        let mut out = Contribution {
            text: format!(
                "As the {} ({}), rating {}/5: {}.",
                c.persona,
                c.perspective,
                c.rating,
                stance(c)
            ),
            changed: false,
            why: "The position follows the measured rules, which the discussion does not change."
                .into(),
            positions: vec![Stance {
                issue: ISSUE.into(),
                stance: stance(c).into(),
                reason,
            }],
            ..Contribution::default()
        };
        if turn.round == RoundKind::Challenge {
            for (p, other) in self
                .all
                .iter()
                .filter(|(p, o)| **p != c.perspective && stance(o) != stance(c))
            {
                out.critiques.push(protocol::Critique {
                    target: p.clone(),
                    weakness: if ready(c) {
                        format!(
                            "it weighs {} above what works",
                            first(&other.weaknesses, "a gap")
                        )
                    } else {
                        format!("it passes over {}", first(&c.weaknesses, "a gap"))
                    },
                    failure: if ready(c) {
                        "a revision delays work the document already supports".into()
                    } else {
                        "the team builds on the document and meets the gap later, at a higher cost"
                            .into()
                    },
                    alternative: first(&c.suggestions, stance(c)),
                });
                if out.critiques.len() == 2 {
                    break;
                }
            }
            if out.critiques.is_empty() {
                out.critiques.push(protocol::Critique {
                    target: protocol::DEVIL.into(),
                    weakness: "questioning the framing gives the team nothing to act on".into(),
                    failure: "the round ends without a change to the document".into(),
                    alternative: first(&c.suggestions, stance(c)),
                });
            }
        }
        if turn.round == RoundKind::Synthesis {
            out.confidence = Some(
                match c.rating {
                    4..=5 => "HIGH",
                    3 => "MED",
                    _ => "LOW",
                }
                .into(),
            );
            out.accepts = Some(vec![first(&c.suggestions, "the document as it is")]);
            out.will_not_concede = Some(
                c.missing
                    .iter()
                    .take(3)
                    .map(|m| first_words(m, 12))
                    .collect(),
            );
            out.risks = Some(
                c.weaknesses
                    .iter()
                    .take(2)
                    .map(|w| first_words(w, 20))
                    .collect(),
            );
        }
        out
    }
}

impl Member for CriticMember {
    fn agent(&self) -> &str {
        "builtin"
    }
    fn speak(&self, turn: &Turn) -> std::result::Result<String, MemberError> {
        let json = serde_json::to_string_pretty(&self.contribution(turn))
            .expect("a contribution serialises");
        Ok(format!("```json\n{json}\n```\n"))
    }
}

/// Runs the protocol for `r` and adds its record to `outcome`.
pub(super) fn run(r: &Round<'_>, outcome: &mut DiscussOutcome) -> Result<()> {
    let name = r.round.rsplit('/').next().unwrap_or(r.round);
    let (artifact, material) = artifact(r);
    let mut d = discussion(r, name, artifact)?;
    let runs = Runs::default();
    let cast = cast(r, &d, &runs);
    protocol::run(&mut d, &cast, &material);
    if d.status == Status::AwaitingDecision {
        d.notes.push(
            "Inside a pipeline the session pauses after the task: `git tlv4 approve` adopts the consensus, `git tlv4 revise TASK --feedback TEXT` challenges it (the document is revised and discussed again); a session started with --yes adopts it and says so in wisdom/issues.md."
                .into(),
        );
    }
    for rec in &d.rounds {
        outcome.files.extend(record::round_files(&d, rec));
    }
    outcome.files.push(record::state_file(&d));
    outcome.files.push((
        format!("discussions/{name}-protocol.md"),
        record::document(&d).into_bytes(),
    ));
    report(r, &d, artifact, outcome);
    usage(&d, &runs, outcome);
    Ok(())
}

/// The round's artifact (the first of its artifacts the task's folder, with what the task
/// produced, holds) and its text as the discussion's material.
fn artifact<'a>(r: &Round<'a>) -> (Option<&'a String>, protocol::Material) {
    let spec = &r.config.round[r.round];
    let mut folder = r.input.folder.clone();
    for (p, b) in &r.produced.files {
        folder.insert(p.clone(), b.clone());
    }
    let artifact = spec
        .artifacts
        .iter()
        .find(|a| folder.contains_key(a.as_str()));
    let material: protocol::Material = artifact
        .map(|a| {
            vec![(
                a.clone(),
                String::from_utf8_lossy(&folder[a.as_str()]).into_owned(),
            )]
        })
        .unwrap_or_default();
    (artifact, material)
}

/// The discussion on whether the artifact is ready, its seats the round's perspectives, its
/// notes saying who argues from the rules' critique.
fn discussion(r: &Round<'_>, name: &str, artifact: Option<&String>) -> Result<Discussion> {
    let topic = format!(
        "Is {} ready for the team to build on?",
        artifact.map_or("the round's artifact", String::as_str)
    );
    let seats: Vec<String> = r.critiques.iter().map(|c| c.perspective.clone()).collect();
    let agent_of = |p: &str| {
        r.agents
            .get(p)
            .map_or("builtin".to_owned(), |d| d.name().to_owned())
    };
    let mut d = Discussion::new(
        &topic,
        r.preset,
        &seats,
        agent_of,
        &agent_of(super::MODERATOR),
        artifact.cloned().into_iter().collect(),
        Limits::default(),
    )
    .map_err(tlv4_core::error::Error::Invalid)?;
    d.slug = format!("{name}-protocol");
    // The seats without an agent argue from the rules' critique, not from templates.
    for n in d
        .notes
        .iter_mut()
        .filter(|n| n.contains("builtin members take their places"))
    {
        *n = format!(
            "The perspectives without an agent argue from the rules' critique (build on it, or revise it first, with the rules' strengths or weaknesses as reasons); {}.",
            match r.agents.contains_key(protocol::DEVIL) {
                true => "the devil's advocate is an agent",
                false => "the devil's advocate is the builtin one, a template",
            }
        );
    }
    Ok(d)
}

/// Who plays each seat: its agent, else a [`CriticMember`] on its critique, else a builtin
/// member; the moderator is its agent or the builtin one. The agents' runs go to `runs`.
fn cast(r: &Round<'_>, d: &Discussion, runs: &Runs) -> Cast {
    let seated = |driver: &Arc<dyn crate::agents::command::Driver>| Seated {
        driver: Arc::clone(driver),
        session: r.input.session.clone(),
        code: r.input.code.clone(),
        runs: runs.clone(),
        prefix: format!("{}-D", r.input.task.id),
    };
    let all: BTreeMap<String, Critique> = r
        .critiques
        .iter()
        .map(|c| (c.perspective.clone(), c.clone()))
        .collect();
    let roles: Vec<String> = d.seats.iter().map(|s| s.role.clone()).collect();
    let members = d
        .seats
        .iter()
        .map(|s| {
            let m: Arc<dyn Member> = match (r.agents.get(&s.role), all.get(&s.role)) {
                (Some(driver), _) => Arc::new(SeatMember(seated(driver))),
                (None, Some(c)) => Arc::new(CriticMember {
                    mine: c.clone(),
                    all: all.clone(),
                }),
                (None, None) => Arc::new(
                    builtin::BuiltinMember::new(&d.topic, &roles, &s.role, s.devil).on_issue(ISSUE),
                ),
            };
            (s.role.clone(), m)
        })
        .collect();
    Cast {
        members,
        moderator: match r.agents.get(super::MODERATOR) {
            Some(driver) => Arc::new(SeatModerator(seated(driver))),
            None => Arc::new(builtin::BuiltinModerator),
        },
    }
}

/// The discussion's outcome in the round's: the summary says how it ended, a consensus on
/// the same reasons (or a fallback) raises a LOW divergence to MEDIUM, and the consensus and
/// each split issue become action items.
fn report(r: &Round<'_>, d: &Discussion, artifact: Option<&String>, outcome: &mut DiscussOutcome) {
    let end = match d.status {
        Status::AwaitingDecision => "surface consensus".to_owned(),
        Status::Ended(e) => e.as_str().replace('_', " "),
        Status::Running => "stopped".to_owned(),
    };
    let state = d.rounds.iter().rev().find_map(|x| x.state);
    outcome.verdict.summary = format!(
        "{}; protocol ({}): {end} after {} rounds, {}",
        outcome.verdict.summary,
        r.preset.as_str(),
        d.rounds.len(),
        state.map_or("not rated", |s| s.as_str())
    );
    let surface = d.status == Status::AwaitingDecision;
    outcome.surface_consensus = surface;
    if (surface || d.status == Status::Ended(End::FellBack)) && outcome.verdict.verdict == "LOW" {
        outcome.verdict.verdict = "MEDIUM".into();
    }
    if surface {
        outcome.action_items.push(format!(
            "[protocol] every perspective agrees for much the same reasons on {}: check the diversity of the reasoning",
            artifact.map_or("the artifact", String::as_str)
        ));
    }
    if let Some(rating) = d.last_rating() {
        for i in rating.issues.iter().filter(|i| i.positions.len() > 1) {
            let poles: Vec<String> = i
                .positions
                .iter()
                .map(|p| format!("{} ({})", p.stance, p.members.join(", ")))
                .collect();
            outcome.action_items.push(format!(
                "[protocol] split on {}: {}",
                i.issue,
                poles.join(" vs ")
            ));
        }
    }
}

/// The agents' usage, summed per seat (`SEAT-member`, with the seat's agent).
fn usage(d: &Discussion, runs: &Runs, outcome: &mut DiscussOutcome) {
    let mut spent: BTreeMap<String, (String, crate::agents::command::Usage)> = BTreeMap::new();
    for log in runs.drain() {
        let seat = log
            .task
            .rsplit('-')
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase();
        let agent = if seat == super::MODERATOR {
            d.moderator.clone()
        } else {
            d.seats
                .iter()
                .find(|s| s.role == seat)
                .map_or_else(String::new, |s| s.agent.clone())
        };
        let e = spent
            .entry(format!("{seat}-member"))
            .or_insert((agent, Default::default()));
        e.1.add(&log.output.usage);
    }
    for (seat, (agent, u)) in spent {
        outcome.usage.push((seat, agent, u));
    }
}
