//! `specs/discuss.toml`: rounds, perspectives and the critics' rules, loaded and checked once.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use super::metrics;
use tlv4_core::error::{Error, Result};

/// The discuss file compiled into the binary.
pub(super) const BUILTIN: &str = include_str!("../../../specs/discuss.toml");
const FILE: &str = "specs/discuss.toml (builtin)";

/// The whole file.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Config {
    /// Format version.
    pub schema: u32,
    /// When the perspectives agree.
    pub consensus: Thresholds,
    /// Who judges.
    pub perspective: BTreeMap<String, Perspective>,
    /// When and on what.
    pub round: BTreeMap<String, Round>,
    /// The builtin critics' rules.
    pub rule: Vec<Rule>,
    /// High-impact signal combinations.
    #[serde(default)]
    pub risk: Vec<RiskSpec>,
}

/// The divergence and consensus thresholds.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Thresholds {
    /// Consensus needs at least this average rating.
    pub min_average: f64,
    /// A rating at or below this is a MEDIUM divergence.
    pub low_rating: u8,
    /// A spread (max − min) at or above this is a MEDIUM divergence.
    pub spread: u8,
}

/// One perspective.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Perspective {
    /// Who speaks.
    pub persona: String,
    /// What it looks at.
    pub focus: String,
}

/// One round.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Round {
    /// The artifact judged: the first of these that exists.
    pub artifacts: Vec<String>,
    /// The perspectives that judge it.
    pub perspectives: Vec<String>,
    /// Whether it is the last round (a HIGH divergence escalates to the user).
    #[serde(default, rename = "final")]
    pub last: bool,
    /// The task it follows (rounds of a set other than the current one, which
    /// `pipelines.toml` attaches).
    #[serde(default)]
    pub after: Option<String>,
    /// Rounds whose rules (for this round's perspectives) apply here too.
    #[serde(default)]
    pub rules_from: Vec<String>,
}

impl Round {
    /// Whether `rule` applies in round `name`.
    pub(super) fn applies(&self, name: &str, rule: &Rule) -> bool {
        rule.rounds
            .iter()
            .any(|x| x == name || self.rules_from.contains(x))
    }
}

/// What a missed rule means besides a lower rating.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(super) enum OnFail {
    /// A coverage gap (`missing_requirements`).
    Gap,
    /// The risk level is at least high.
    HighRisk,
    /// The risk level is critical.
    CriticalRisk,
}

/// One rule of a builtin critic.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Rule {
    /// The rounds it applies in.
    pub rounds: Vec<String>,
    /// The perspective that applies it.
    pub perspective: String,
    /// The metric it reads (see `metrics::CATALOG`).
    pub metric: String,
    /// Met when the value is at least this.
    #[serde(default)]
    pub min: Option<f64>,
    /// Met when the value is at most this.
    #[serde(default)]
    pub max: Option<f64>,
    /// Its weight in the rating.
    #[serde(default = "one")]
    pub weight: f64,
    /// What a miss means besides the rating.
    #[serde(default)]
    pub on_fail: Option<OnFail>,
    /// What it is about, to find agreement between perspectives.
    pub topic: String,
    /// Said when met.
    pub strength: String,
    /// Said when missed.
    pub weakness: String,
    /// Advised when missed.
    pub suggestion: String,
}

fn one() -> f64 {
    1.0
}

/// A combination of signals that makes a high-impact risk, and the words that acknowledge it.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RiskSpec {
    /// Its name in reports.
    pub name: String,
    /// Every one of these signals must be reported.
    pub signals: Vec<String>,
    /// A word of the documents starting with one of these acknowledges it.
    pub words: Vec<String>,
}

impl Rule {
    /// Whether `value` meets the rule.
    pub(super) fn met(&self, value: f64) -> bool {
        self.min.is_none_or(|m| value >= m - 1e-9) && self.max.is_none_or(|m| value <= m + 1e-9)
    }
}

impl Config {
    /// Parses and checks `text`, naming `file` in errors.
    pub(super) fn parse(file: &str, text: &str) -> Result<Config> {
        let config: Config = toml::from_str(text).map_err(|e| Error::Config {
            file: file.to_owned(),
            line: e
                .span()
                .map_or(1, |s| text[..s.start].lines().count().max(1)),
            message: e.message().trim().to_owned(),
        })?;
        let bad = |message: String| Error::Config {
            file: file.to_owned(),
            line: 1,
            message,
        };
        if config.schema != 1 {
            return Err(bad(format!(
                "schema {} is not supported; this build reads 1",
                config.schema
            )));
        }
        for (name, r) in &config.round {
            for p in &r.perspectives {
                if !config.perspective.contains_key(p) {
                    return Err(bad(format!("round {name} names unknown perspective `{p}`")));
                }
                if !config
                    .rule
                    .iter()
                    .any(|x| x.perspective == *p && r.applies(name, x))
                {
                    return Err(bad(format!("round {name}: perspective `{p}` has no rule")));
                }
            }
        }
        for (name, r) in &config.round {
            if let Some(x) = r.rules_from.iter().find(|x| !config.round.contains_key(*x)) {
                return Err(bad(format!(
                    "round {name}: rules_from names unknown round `{x}`"
                )));
            }
        }
        for (i, r) in config.rule.iter().enumerate() {
            let at = format!("rule {} ({} / {})", i + 1, r.perspective, r.metric);
            if !config.perspective.contains_key(&r.perspective) {
                return Err(bad(format!("{at}: unknown perspective")));
            }
            if let Some(round) = r.rounds.iter().find(|x| !config.round.contains_key(*x)) {
                return Err(bad(format!("{at}: unknown round `{round}`")));
            }
            if !metrics::CATALOG.iter().any(|(m, _)| *m == r.metric) {
                return Err(bad(format!("{at}: unknown metric")));
            }
            if r.min.is_some() == r.max.is_some() {
                return Err(bad(format!("{at}: give exactly one of `min` and `max`")));
            }
            if r.weight <= 0.0 {
                return Err(bad(format!("{at}: the weight must be positive")));
            }
        }
        Ok(config)
    }

    /// The rounds of set `set` (`current`, or a prefix such as `early`), with their names
    /// in the set.
    pub(super) fn set(&self, set: &str) -> Vec<(&str, &Round)> {
        self.round
            .iter()
            .filter_map(|(k, r)| match (set, k.split_once('/')) {
                ("current", None) => Some((k.as_str(), r)),
                (s, Some((p, name))) if s == p => Some((name, r)),
                _ => None,
            })
            .collect()
    }

    /// The round sets the file defines.
    pub(super) fn sets(&self) -> Vec<String> {
        let mut out = vec!["current".to_owned()];
        for k in self.round.keys() {
            if let Some((p, _)) = k.split_once('/')
                && !out.iter().any(|x| x == p)
            {
                out.push(p.to_owned());
            }
        }
        out
    }

    /// The builtin file, parsed once.
    pub(super) fn builtin() -> Result<&'static Config> {
        static CONFIG: LazyLock<std::result::Result<Config, String>> =
            LazyLock::new(|| Config::parse(FILE, BUILTIN).map_err(|e| e.to_string()));
        CONFIG.as_ref().map_err(|m| Error::Invalid(m.clone()))
    }
}
