//! `[budget]`, `[prices]` and `[limits]` of `.tlv4.toml`: what a session may spend, what the
//! tokens of a model cost when its agent reports none, and how long a usage limit is waited
//! out before the session pauses. `[roles]` values that list agents (fail-over order) are
//! read here too.

use std::collections::BTreeMap;

use crate::error::{Error, Result};

/// Bounds on spend: over the whole session (`session_*`) and per run of one task (`task_*`).
/// Dollars and tokens bound apart; a bound left out is no bound.
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Bounds {
    /// US dollars over every run the session ever recorded.
    pub session_usd: Option<f64>,
    /// Tokens (input + output) over every run the session ever recorded.
    pub session_tokens: Option<u64>,
    /// US dollars of one run of one task; also its reserve before it starts.
    pub task_usd: Option<f64>,
    /// Tokens of one run of one task; also its reserve before it starts.
    pub task_tokens: Option<u64>,
}

/// `[budget]`: the session's bounds, and per role under `[budget.roles.<role>]` the same
/// four keys for that role's runs alone (its `session_*` over the role's runs, its `task_*`
/// over each of them, replacing the table's).
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BudgetConfig {
    /// See [`Bounds::session_usd`].
    pub session_usd: Option<f64>,
    /// See [`Bounds::session_tokens`].
    pub session_tokens: Option<u64>,
    /// See [`Bounds::task_usd`].
    pub task_usd: Option<f64>,
    /// See [`Bounds::task_tokens`].
    pub task_tokens: Option<u64>,
    /// Per role.
    pub roles: BTreeMap<String, Bounds>,
}

impl BudgetConfig {
    /// The table's own bounds.
    pub fn bounds(&self) -> Bounds {
        Bounds {
            session_usd: self.session_usd,
            session_tokens: self.session_tokens,
            task_usd: self.task_usd,
            task_tokens: self.task_tokens,
        }
    }

    /// The per-task bounds of a run of `role`: the role's where it sets them, else the
    /// table's.
    pub fn task_bounds(&self, role: &str) -> (Option<f64>, Option<u64>) {
        let r = self.roles.get(role);
        (
            r.and_then(|b| b.task_usd).or(self.task_usd),
            r.and_then(|b| b.task_tokens).or(self.task_tokens),
        )
    }

    /// The first value that is not a bound (negative, not finite), as `(key, message)`.
    pub fn invalid(&self) -> Option<(String, String)> {
        let mut all = vec![(String::new(), self.bounds())];
        all.extend(
            self.roles
                .iter()
                .map(|(r, b)| (format!("roles.{r}."), b.clone())),
        );
        for (prefix, b) in all {
            for (key, usd) in [("session_usd", b.session_usd), ("task_usd", b.task_usd)] {
                if usd.is_some_and(|v| !v.is_finite() || v < 0.0) {
                    return Some((
                        format!("budget.{prefix}{key}"),
                        "must be a number of dollars, 0 or more".into(),
                    ));
                }
            }
        }
        None
    }
}

/// What a model's tokens cost, in US dollars per million tokens (`[prices."<model>"]`), for
/// agents that report tokens but no dollars (an OpenAI-compatible server, a CLI that does not
/// say).
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Per million input tokens.
    pub input_per_mtok: f64,
    /// Per million output tokens.
    pub output_per_mtok: f64,
    /// Per million input tokens read from the service's cache; `input_per_mtok` when unset.
    #[serde(default)]
    pub cached_input_per_mtok: Option<f64>,
}

impl Price {
    /// The dollars of a run: `input` tokens of which `cached` came from the cache, and
    /// `output` tokens.
    pub fn cost(&self, input: u64, cached: u64, output: u64) -> f64 {
        let cached = cached.min(input);
        let per = |n: u64, p: f64| n as f64 * p / 1_000_000.0;
        per(input - cached, self.input_per_mtok)
            + per(
                cached,
                self.cached_input_per_mtok.unwrap_or(self.input_per_mtok),
            )
            + per(output, self.output_per_mtok)
    }
}

/// `[limits]`: usage limits of the agents' services.
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsConfig {
    /// How long the loop waits for a usage limit to reset before it pauses the session with
    /// the kind `limit` (`"30m"`, `"0s"` never waits); 30 minutes when unset.
    pub wait_up_to: Option<String>,
}

/// How long a usage limit is waited out when `[limits] wait_up_to` is not set.
pub const WAIT_UP_TO: std::time::Duration = std::time::Duration::from_secs(30 * 60);

impl LimitsConfig {
    /// How long to wait for a reset, or why `wait_up_to` is not a duration.
    pub fn wait_up_to(&self) -> Result<std::time::Duration> {
        match self.wait_up_to.as_deref() {
            None => Ok(WAIT_UP_TO),
            Some(t) if t.trim().trim_end_matches(|c: char| c.is_ascii_alphabetic()) == "0" => {
                Ok(std::time::Duration::ZERO)
            }
            Some(t) => crate::process::duration::parse_duration(t),
        }
    }
}

/// The agents of one role in `[roles]`: one name, or a list in fail-over order
/// (`executor = ["claude", "codex"]`: the next takes a task whose agent hit a usage limit
/// or whose service failed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentList(Vec<String>);

impl AgentList {
    /// One agent.
    pub fn one(name: impl Into<String>) -> AgentList {
        AgentList(vec![name.into()])
    }

    /// The agents, first choice first (never empty).
    pub fn names(&self) -> &[String] {
        &self.0
    }

    /// The first choice.
    pub fn first(&self) -> &str {
        &self.0[0]
    }
}

impl<'de> serde::Deserialize<'de> for AgentList {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<AgentList, D::Error> {
        #[derive(serde::Deserialize)]
        #[serde(untagged)]
        enum OneOrMany {
            One(String),
            Many(Vec<String>),
        }
        let names = match OneOrMany::deserialize(d).map_err(|_| {
            serde::de::Error::custom("expected an agent name or a list of agent names")
        })? {
            OneOrMany::One(n) => vec![n],
            OneOrMany::Many(v) => v,
        };
        if names.is_empty() || names.iter().any(|n| n.trim().is_empty()) {
            return Err(serde::de::Error::custom(
                "expected an agent name or a non-empty list of agent names",
            ));
        }
        Ok(AgentList(names))
    }
}

/// The names of an `--agent` value's agent part: `claude` or `claude,codex` (fail-over).
pub fn split_agents(value: &str) -> Result<AgentList> {
    let names: Vec<String> = value.split(',').map(|n| n.trim().to_owned()).collect();
    if names.iter().any(String::is_empty) {
        return Err(Error::Invalid(format!(
            "`{value}`: expected NAME or NAME,NAME,… (fail-over order)"
        )));
    }
    Ok(AgentList(names))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prices_count_cached_input_apart() {
        let p = Price {
            input_per_mtok: 2.0,
            output_per_mtok: 10.0,
            cached_input_per_mtok: Some(0.5),
        };
        let c = p.cost(1_000_000, 400_000, 100_000);
        assert!((c - (1.2 + 0.2 + 1.0)).abs() < 1e-9, "{c}");
        let plain = Price {
            cached_input_per_mtok: None,
            ..p
        };
        assert!((plain.cost(1_000_000, 400_000, 0) - 2.0).abs() < 1e-9);
    }

    #[test]
    fn role_bounds_replace_the_tables() {
        let b: BudgetConfig = toml::from_str(
            "session_usd = 10\ntask_tokens = 5000\n[roles.executor]\ntask_tokens = 20000\n",
        )
        .unwrap();
        assert_eq!(b.task_bounds("executor"), (None, Some(20000)));
        assert_eq!(b.task_bounds("analyst"), (None, Some(5000)));
        assert_eq!(b.invalid(), None);
        let bad: BudgetConfig = toml::from_str("[roles.critic]\nsession_usd = -1\n").unwrap();
        assert_eq!(bad.invalid().unwrap().0, "budget.roles.critic.session_usd");
    }

    #[test]
    fn wait_up_to_reads_durations_and_zero() {
        let l = |t: &str| LimitsConfig {
            wait_up_to: Some(t.into()),
        };
        assert_eq!(LimitsConfig::default().wait_up_to().unwrap(), WAIT_UP_TO);
        assert_eq!(l("0").wait_up_to().unwrap(), std::time::Duration::ZERO);
        assert_eq!(l("0s").wait_up_to().unwrap(), std::time::Duration::ZERO);
        assert_eq!(l("2m").wait_up_to().unwrap().as_secs(), 120);
        assert!(l("soon").wait_up_to().is_err());
    }

    #[test]
    fn roles_take_a_name_or_a_list() {
        #[derive(serde::Deserialize)]
        struct R {
            roles: BTreeMap<String, AgentList>,
        }
        let r: R =
            toml::from_str("[roles]\ndefault = \"claude\"\nexecutor = [\"claude\", \"codex\"]\n")
                .unwrap();
        assert_eq!(r.roles["default"].names(), ["claude"]);
        assert_eq!(r.roles["executor"].names(), ["claude", "codex"]);
        assert!(toml::from_str::<R>("[roles]\nexecutor = []\n").is_err());
        assert!(toml::from_str::<R>("[roles]\nexecutor = 3\n").is_err());
        assert_eq!(
            split_agents("claude, codex").unwrap().names(),
            ["claude", "codex"]
        );
        assert!(split_agents("claude,").is_err());
    }
}
