//! Discuss rounds: a multi-perspective critique of what a task just produced, run right after
//! it (DISCUSS-001 after the analyst, DISCUSS-002 after the requirements, DISCUSS-003 after
//! the readiness gate).
//!
//! Each perspective (product, technical, quality, risk, coverage) is a [`Critic`] that returns
//! strengths, weaknesses, suggestions and a rating from 1 to 5, plus the coverage gaps and the
//! risk level it sees. The builtin critics are deterministic: they apply the rules of
//! `specs/discuss.toml` to measured properties of the documents, and they run in parallel, as
//! agents would. The round then looks for divergence — a coverage gap or a high risk is HIGH,
//! a rating ≤ 2 or a spread ≥ 3 is MEDIUM, a topic the perspectives disagree on is LOW —
//! and for consensus (no HIGH and an average rating ≥ 3.0). The record goes to
//! `discussions/<round>-discussion.md`; the coordinator turns HIGH into one revision (or a
//! pause at the final round), logs MEDIUM's action items and lets LOW pass. The decisions
//! that fill the reference's gaps are written at the top of `specs/discuss.toml`.

mod agent;
mod config;
mod metrics;
mod protocol_round;
mod record;

use std::collections::{BTreeMap, BTreeSet};

use super::DiscussOutcome;
use crate::agents::{TaskInput, TaskOutput};
use crate::quality::protocol::Preset;
use tlv4_core::error::{Error, Result};
use tlv4_core::model::Verdict;
use tlv4_specdoc::spec::Spec;

use config::{Config, OnFail, Rule, Thresholds};
use metrics::Metrics;
use tlv4_core::text::excerpt;

/// What the critics of one round look at.
pub struct Subject<'a> {
    /// The round (`DISCUSS-002`).
    pub round: &'a str,
    /// The artifact judged, when it exists.
    pub artifact: Option<&'a str>,
    /// The documents of the folder, the produced ones included.
    pub spec: &'a Spec,
    /// What was measured.
    pub metrics: &'a Metrics,
}

/// How much risk a perspective sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RiskLevel {
    /// Nothing of note.
    Low,
    /// Something to watch.
    Medium,
    /// Must be handled before going on.
    High,
    /// Stop.
    Critical,
}

impl RiskLevel {
    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            RiskLevel::Low => "low",
            RiskLevel::Medium => "medium",
            RiskLevel::High => "high",
            RiskLevel::Critical => "critical",
        }
    }
}

/// One perspective's verdict.
#[derive(Debug, Clone)]
pub struct Critique {
    /// The perspective.
    pub perspective: String,
    /// Who spoke.
    pub persona: String,
    /// 1 to 5.
    pub rating: u8,
    /// What is good.
    pub strengths: Vec<String>,
    /// What is not.
    pub weaknesses: Vec<String>,
    /// What to do, most urgent first.
    pub suggestions: Vec<String>,
    /// Coverage gaps (the reference's `missing_requirements`).
    pub missing: Vec<String>,
    /// The risk it sees.
    pub risk: RiskLevel,
    /// Topics judged, with whether they were found good.
    pub topics: BTreeMap<String, bool>,
    /// The measured values behind the verdict, as `metric = value`.
    pub measured: Vec<String>,
}

/// The agents of the perspectives and seats, and the moderator's key: the roster, below this
/// layer, assigns them.
pub use crate::agents::roster::{MODERATOR, Perspectives};

/// The perspectives the builtin rules know.
pub fn perspective_names() -> Vec<String> {
    Config::builtin()
        .map(|c| c.perspective.keys().cloned().collect())
        .unwrap_or_default()
}

/// One perspective of a round.
pub trait Critic: Send + Sync {
    /// The perspective it speaks for.
    fn perspective(&self) -> &str;
    /// Judges `subject`.
    fn critique(&self, subject: &Subject<'_>) -> Result<Critique>;
    /// What its last critique cost, for an agent: the agent's name and the usage.
    fn usage(&self) -> Option<(String, crate::agents::command::Usage)> {
        None
    }
}

/// A perspective judged by the rules of `specs/discuss.toml`.
pub struct BuiltinCritic {
    perspective: String,
    persona: String,
    rules: Vec<Rule>,
}

impl BuiltinCritic {
    /// The builtin critic of `perspective` in `round` (its key in `specs/discuss.toml`).
    fn new(config: &Config, round: &str, perspective: &str) -> BuiltinCritic {
        let spec = config.round.get(round);
        BuiltinCritic {
            perspective: perspective.to_owned(),
            persona: config
                .perspective
                .get(perspective)
                .map(|p| p.persona.clone())
                .unwrap_or_default(),
            rules: config
                .rule
                .iter()
                .filter(|r| {
                    r.perspective == perspective
                        && spec.map_or(r.rounds.iter().any(|x| x == round), |s| s.applies(round, r))
                })
                .cloned()
                .collect(),
        }
    }
}

impl Critic for BuiltinCritic {
    fn perspective(&self) -> &str {
        &self.perspective
    }

    fn critique(&self, subject: &Subject<'_>) -> Result<Critique> {
        let mut c = Critique {
            perspective: self.perspective.clone(),
            persona: self.persona.clone(),
            rating: 1,
            strengths: Vec::new(),
            weaknesses: Vec::new(),
            suggestions: Vec::new(),
            missing: Vec::new(),
            risk: RiskLevel::Low,
            topics: BTreeMap::new(),
            measured: Vec::new(),
        };
        let (mut met_weight, mut total) = (0.0, 0.0);
        let mut urgent = Vec::new();
        let mut other = Vec::new();
        for rule in &self.rules {
            total += rule.weight;
            let measure = subject.metrics.get(rule.metric.as_str());
            let fill = |text: &str| match measure {
                Some(m) => text
                    .replace("{value}", &number(m.value))
                    .replace("{items}", &m.items.join(", ")),
                None => text.replace("{value}", "?").replace("{items}", &rule.topic),
            };
            let met = measure.is_some_and(|m| rule.met(m.value));
            let topic = c.topics.entry(rule.topic.clone()).or_insert(true);
            *topic &= met;
            match measure {
                Some(m) => c
                    .measured
                    .push(format!("{} = {}", rule.metric, number(m.value))),
                None => c.measured.push(format!("{} = not measurable", rule.metric)),
            }
            if met {
                met_weight += rule.weight;
                c.strengths.push(fill(&rule.strength));
                continue;
            }
            let weakness = match measure {
                Some(_) => fill(&rule.weakness),
                None => format!(
                    "{} cannot be judged: the document it needs is missing",
                    rule.topic
                ),
            };
            c.weaknesses.push(weakness);
            match rule.on_fail {
                Some(OnFail::Gap) => {
                    let items = measure.map(|m| m.items.clone()).unwrap_or_default();
                    if items.is_empty() {
                        c.missing.push(rule.topic.clone());
                    } else {
                        c.missing.extend(items);
                    }
                    urgent.push(fill(&rule.suggestion));
                }
                Some(OnFail::HighRisk) if measure.is_some() => {
                    c.risk = c.risk.max(RiskLevel::High);
                    urgent.push(fill(&rule.suggestion));
                }
                Some(OnFail::CriticalRisk) if measure.is_some() => {
                    c.risk = RiskLevel::Critical;
                    urgent.push(fill(&rule.suggestion));
                }
                _ => {
                    c.risk = c.risk.max(RiskLevel::Medium);
                    other.push(fill(&rule.suggestion));
                }
            }
        }
        c.rating = if total > 0.0 {
            (1.0 + 4.0 * met_weight / total).round() as u8
        } else {
            3
        };
        c.measured.dedup();
        for s in urgent.into_iter().chain(other) {
            if !c.suggestions.contains(&s) {
                c.suggestions.push(s);
            }
        }
        Ok(c)
    }
}

/// A value as written in texts: integers without decimals.
fn number(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{}", v.round() as i64)
    } else {
        format!("{v:.2}").trim_end_matches('0').to_owned()
    }
}

/// How strongly the perspectives disagree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Divergent views on a topic, no more.
    Low,
    /// A low rating or a wide spread.
    Medium,
    /// A coverage gap or a high risk.
    High,
}

impl Severity {
    /// `LOW`, `MEDIUM` or `HIGH`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Low => "LOW",
            Severity::Medium => "MEDIUM",
            Severity::High => "HIGH",
        }
    }
}

/// One divergence found.
#[derive(Debug, Clone)]
pub struct Divergence {
    /// How severe.
    pub severity: Severity,
    /// What about.
    pub topic: String,
    /// Who raised it.
    pub perspectives: Vec<String>,
    /// What was found.
    pub detail: String,
}

/// The divergences among `critiques`, most severe first.
pub fn diverge(critiques: &[Critique], t: &Thresholds) -> Vec<Divergence> {
    let mut out = Vec::new();
    for c in critiques {
        if !c.missing.is_empty() {
            out.push(Divergence {
                severity: Severity::High,
                topic: "coverage gap".into(),
                perspectives: vec![c.perspective.clone()],
                detail: format!("missing: {}", c.missing.join(", ")),
            });
        }
        if c.risk >= RiskLevel::High {
            out.push(Divergence {
                severity: Severity::High,
                topic: format!("{} risk", c.risk.as_str()),
                perspectives: vec![c.perspective.clone()],
                detail: c.weaknesses.first().cloned().unwrap_or_default(),
            });
        }
    }
    for c in critiques.iter().filter(|c| c.rating <= t.low_rating) {
        out.push(Divergence {
            severity: Severity::Medium,
            topic: "low rating".into(),
            perspectives: vec![c.perspective.clone()],
            detail: format!(
                "{} rates {}/5: {}",
                c.perspective,
                c.rating,
                c.weaknesses.join("; ")
            ),
        });
    }
    if let (Some(lo), Some(hi)) = (
        critiques.iter().min_by_key(|c| c.rating),
        critiques.iter().max_by_key(|c| c.rating),
    ) && hi.rating - lo.rating >= t.spread
    {
        out.push(Divergence {
            severity: Severity::Medium,
            topic: "rating spread".into(),
            perspectives: vec![hi.perspective.clone(), lo.perspective.clone()],
            detail: format!(
                "{} rates {}/5, {} rates {}/5",
                hi.perspective, hi.rating, lo.perspective, lo.rating
            ),
        });
    }
    let topics: BTreeSet<&String> = critiques.iter().flat_map(|c| c.topics.keys()).collect();
    for topic in topics {
        let good: Vec<String> = critiques
            .iter()
            .filter(|c| c.topics.get(topic) == Some(&true))
            .map(|c| c.perspective.clone())
            .collect();
        let bad: Vec<String> = critiques
            .iter()
            .filter(|c| c.topics.get(topic) == Some(&false))
            .map(|c| c.perspective.clone())
            .collect();
        if !good.is_empty() && !bad.is_empty() {
            out.push(Divergence {
                severity: Severity::Low,
                topic: topic.clone(),
                detail: format!("good for {}, short for {}", good.join(", "), bad.join(", ")),
                perspectives: good.into_iter().chain(bad).collect(),
            });
        }
    }
    out.sort_by_key(|d| std::cmp::Reverse(d.severity));
    out
}

/// The round's verdict: the most severe divergence, LOW when there is none.
pub fn severity(divergences: &[Divergence]) -> Severity {
    divergences
        .iter()
        .map(|d| d.severity)
        .max()
        .unwrap_or(Severity::Low)
}

/// Whether the perspectives reached consensus: no HIGH divergence and an average rating of
/// at least the threshold.
pub fn consensus(divergences: &[Divergence], average: f64, t: &Thresholds) -> bool {
    severity(divergences) < Severity::High && average >= t.min_average - 1e-9
}

/// The mean rating.
fn average(critiques: &[Critique]) -> f64 {
    if critiques.is_empty() {
        return 0.0;
    }
    critiques.iter().map(|c| f64::from(c.rating)).sum::<f64>() / critiques.len() as f64
}

/// At most this many action items are handed on.
const MAX_ACTIONS: usize = 8;

/// The action items: the suggestions of perspectives that found gaps or high risks first,
/// then of the lowest ratings; each once, naming who asked for it.
fn action_items(critiques: &[Critique], artifact_missing: Option<&str>) -> Vec<String> {
    let mut order: Vec<&Critique> = critiques.iter().collect();
    order.sort_by_key(|c| (c.missing.is_empty() && c.risk < RiskLevel::High, c.rating));
    let mut items: Vec<(String, Vec<String>)> = Vec::new();
    if let Some(a) = artifact_missing {
        items.push((
            format!("Write the round's artifact: {a}"),
            vec!["round".into()],
        ));
    }
    for c in order {
        for s in &c.suggestions {
            match items.iter_mut().find(|(t, _)| t == s) {
                Some((_, who)) => who.push(c.perspective.clone()),
                None => items.push((s.clone(), vec![c.perspective.clone()])),
            }
        }
    }
    items
        .into_iter()
        .take(MAX_ACTIONS)
        .map(|(text, who)| format!("[{}] {text}", who.join(", ")))
        .collect()
}

/// Runs the critics on `subject` in parallel; a critic that fails is reported, not fatal.
fn run_critics(critics: &[Box<dyn Critic>], subject: &Subject<'_>) -> (Vec<Critique>, Vec<String>) {
    let results: Vec<(String, Result<Critique>)> = std::thread::scope(|s| {
        let handles: Vec<_> = critics
            .iter()
            .map(|c| {
                (
                    c.perspective().to_owned(),
                    s.spawn(move || c.critique(subject)),
                )
            })
            .collect();
        handles
            .into_iter()
            .map(|(p, h)| {
                let r = h
                    .join()
                    .unwrap_or_else(|_| Err(Error::Invalid(format!("the {p} critic panicked"))));
                (p, r)
            })
            .collect()
    });
    let mut ok = Vec::new();
    let mut failed = Vec::new();
    for (p, r) in results {
        match r {
            Ok(c) => ok.push(c),
            Err(e) => failed.push(format!("{p}: {e}")),
        }
    }
    (ok, failed)
}

/// The suffix of a task's `discuss` value that runs the round as the discussion protocol.
const PROTOCOL: &str = "+protocol";

/// How a discuss round runs (`[discuss.mode] ROUND = "…"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The perspectives' critique, the default.
    Critique,
    /// The discussion protocol, with its preset.
    Protocol(Preset),
}

impl Mode {
    /// The names `[discuss.mode]` takes (`protocol-default` is `protocol` spelled out).
    const NAMES: [(&str, Mode); 5] = [
        ("critique", Mode::Critique),
        ("protocol", Mode::Protocol(Preset::Default)),
        ("protocol-quick", Mode::Protocol(Preset::Quick)),
        ("protocol-deep", Mode::Protocol(Preset::Deep)),
        ("protocol-default", Mode::Protocol(Preset::Default)),
    ];

    /// The mode `[discuss.mode]` names `name`, if this build knows it.
    pub fn named(name: &str) -> Option<Mode> {
        Mode::NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, mode)| *mode)
    }

    /// What a task's `discuss` value gets appended for this mode: nothing for the critique,
    /// `+protocol` for the default preset, `+protocol-PRESET` for another.
    fn suffix(self) -> String {
        match self {
            Mode::Critique => String::new(),
            Mode::Protocol(Preset::Default) => PROTOCOL.to_owned(),
            Mode::Protocol(preset) => format!("{PROTOCOL}-{}", preset.as_str()),
        }
    }

    /// The round and the mode of a task's `discuss` value (`DISCUSS-002+protocol-quick`). A
    /// preset this build does not know runs as the default one.
    pub fn of_round(spec: &str) -> (&str, Mode) {
        match spec.split_once(PROTOCOL) {
            None => (spec, Mode::Critique),
            Some((round, rest)) => {
                let preset = match rest.trim_start_matches('-') {
                    "quick" => Preset::Quick,
                    "deep" => Preset::Deep,
                    _ => Preset::Default,
                };
                (round, Mode::Protocol(preset))
            }
        }
    }
}

/// Sets the `discuss` round of each of `tasks` for round set `set` and the modes `modes`
/// (round name → `critique`, `protocol`, `protocol-quick`, `protocol-deep`). In the current
/// set the rounds stay as `pipelines.toml` attached them; another set attaches its rounds
/// to the tasks their `after` names (`early/DISCUSS-004` after `DRAFT-003`). A round run as
/// the protocol gets `+protocol[-PRESET]` appended. The error names the problem in words for
/// a configuration error: (key, message).
pub fn assign_rounds(
    tasks: &mut [tlv4_core::model::Task],
    set: &str,
    modes: &BTreeMap<String, String>,
) -> std::result::Result<(), (String, String)> {
    let mut parsed: BTreeMap<&str, Mode> = BTreeMap::new();
    let config = Config::builtin().map_err(|e| ("discuss.rounds".to_owned(), e.to_string()))?;
    let sets = config.sets();
    if !sets.iter().any(|s| s == set) {
        return Err((
            "discuss.rounds".into(),
            format!("unknown round set `{set}`; sets: {}", sets.join(", ")),
        ));
    }
    let rounds = config.set(set);
    for (name, mode) in modes {
        if !rounds.iter().any(|(n, _)| n == name) {
            let known: Vec<&str> = rounds.iter().map(|(n, _)| *n).collect();
            return Err((
                format!("discuss.mode.{name}"),
                format!(
                    "`{name}` is not a round of the `{set}` set; rounds: {}",
                    known.join(", ")
                ),
            ));
        }
        let Some(mode) = Mode::named(mode) else {
            return Err((
                format!("discuss.mode.{name}"),
                format!(
                    "unknown mode `{mode}`; use critique, protocol, protocol-quick or protocol-deep"
                ),
            ));
        };
        parsed.insert(name, mode);
    }
    for t in tasks.iter_mut() {
        if set != "current" {
            t.discuss = rounds
                .iter()
                .find(|(_, r)| r.after.as_deref() == Some(t.id.as_str()))
                .map(|(name, _)| format!("{set}/{name}"));
        }
        let Some(d) = t.discuss.clone() else { continue };
        let name = d.rsplit('/').next().unwrap_or(&d).to_owned();
        if let Some(mode) = parsed.get(name.as_str()) {
            t.discuss = Some(format!("{d}{}", mode.suffix()));
        }
    }
    Ok(())
}

/// Runs discuss round `spec` (a round of `specs/discuss.toml`, `set/ROUND` for a set other
/// than the current one, with `+protocol[-PRESET]` to run it as the discussion protocol) on
/// what `produced` wrote; `None` for a round this build does not know.
pub fn run_round(
    spec: &str,
    input: &TaskInput,
    produced: &TaskOutput,
    agents: &Perspectives,
) -> Result<Option<DiscussOutcome>> {
    let config = Config::builtin()?;
    let (key, mode) = Mode::of_round(spec);
    let Some(r) = config.round.get(key) else {
        return Ok(None);
    };
    let round = key;
    let critics: Vec<Box<dyn Critic>> = r
        .perspectives
        .iter()
        .map(|p| {
            let builtin = BuiltinCritic::new(config, round, p);
            match agents.get(p) {
                Some(driver) => {
                    let mut folder = input.folder.clone();
                    for (path, b) in &produced.files {
                        folder.insert(path.clone(), b.clone());
                    }
                    Box::new(agent::AgentCritic {
                        builtin,
                        driver: std::sync::Arc::clone(driver),
                        input: TaskInput {
                            session: input.session.clone(),
                            task: input.task.clone(),
                            folder,
                            code: input.code.clone(),
                        },
                        spent: std::sync::Mutex::new(None),
                    }) as Box<dyn Critic>
                }
                None => Box::new(builtin) as Box<dyn Critic>,
            }
        })
        .collect();
    let (mut outcome, critiques) = discuss(config, round, input, produced, &critics)?;
    if let Mode::Protocol(preset) = mode {
        protocol_round::run(
            &protocol_round::Round {
                config,
                round,
                preset,
                input,
                produced,
                agents,
                critiques: &critiques,
            },
            &mut outcome,
        )?;
    }
    Ok(Some(outcome))
}

/// Runs `round` with `critics`; the outcome, and what each perspective said.
fn discuss(
    config: &Config,
    round: &str,
    input: &TaskInput,
    produced: &TaskOutput,
    critics: &[Box<dyn Critic>],
) -> Result<(DiscussOutcome, Vec<Critique>)> {
    let r = &config.round[round];
    let mut folder = input.folder.clone();
    for (p, b) in &produced.files {
        folder.insert(p.clone(), b.clone());
    }
    let spec = Spec::read(&folder);
    let metrics = metrics::measure(&spec, &config.risk);
    let artifact = r
        .artifacts
        .iter()
        .find(|a| folder.contains_key(a.as_str()))
        .map(String::as_str);
    let subject = Subject {
        round,
        artifact,
        spec: &spec,
        metrics: &metrics,
    };
    let (critiques, failed) = run_critics(critics, &subject);
    if critiques.is_empty() {
        return Err(Error::Invalid(format!(
            "{round}: every critic failed: {}",
            failed.join("; ")
        )));
    }
    let t = &config.consensus;
    let mut divergences = diverge(&critiques, t);
    let missing_artifact = artifact.is_none().then(|| r.artifacts.join(" or "));
    if let Some(a) = &missing_artifact {
        divergences.insert(
            0,
            Divergence {
                severity: Severity::High,
                topic: "artifact missing".into(),
                perspectives: vec!["round".into()],
                detail: format!("{} did not write {a}", input.task.id),
            },
        );
    }
    let avg = average(&critiques);
    let level = severity(&divergences);
    let agreed = consensus(&divergences, avg, t);
    let actions = action_items(&critiques, missing_artifact.as_deref());
    let ratings: Vec<String> = critiques
        .iter()
        .map(|c| format!("{} {}", c.perspective, c.rating))
        .collect();
    let top = divergences
        .iter()
        .find(|d| d.severity == level && level > Severity::Low)
        .map(|d| format!("; {}: {}", d.topic, d.detail))
        .unwrap_or_default();
    let summary = format!(
        "consensus {}, {} divergence: average {avg:.1}/5 ({}){top}",
        if agreed { "reached" } else { "blocked" },
        level.as_str(),
        ratings.join(", ")
    );
    let name = round.rsplit('/').next().unwrap_or(round);
    let text = record::render(&record::Record {
        round: name,
        task: input.task.id.as_str(),
        artifact: artifact
            .map(str::to_owned)
            .unwrap_or_else(|| format!("{} (missing)", r.artifacts.join(" or "))),
        config,
        critiques: &critiques,
        failed: &failed,
        divergences: &divergences,
        level,
        average: avg,
        consensus: agreed,
        actions: &actions,
        last: r.last,
    });
    let outcome = DiscussOutcome {
        verdict: Verdict {
            verdict: level.as_str().to_owned(),
            score: Some((avg * 100.0).round() / 100.0),
            summary: excerpt(&summary, 299),
        },
        files: vec![(
            format!("discussions/{name}-discussion.md"),
            text.into_bytes(),
        )],
        action_items: actions,
        surface_consensus: false,
        usage: critics
            .iter()
            .filter_map(|c| {
                c.usage()
                    .map(|(agent, u)| (c.perspective().to_owned(), agent, u))
            })
            .collect(),
    };
    Ok((outcome, critiques))
}

#[cfg(test)]
mod tests;
