//! What a pipeline will cost on this repository, read from the ledgers of its earlier
//! sessions.
//!
//! [`History::read`] reads every earlier session once — live branches and archives — and
//! keeps, per session, its pipeline and the run records of its ledger (every `usage.json`
//! its history wrote, as `cost` counts them), each priced with [`RunUsage::usd`](super::RunUsage::usd). Two
//! questions are then answered from memory:
//! [`History::reserve`], what one run of a role and agent has cost here (the loop's reserve
//! before a task starts), and [`History::estimate`], what a whole session of a pipeline is
//! likely to cost, per role and agent and in total, with the spread seen.
//!
//! The spread is the lowest and the highest per-session total seen, not a percentile range:
//! a repository has a handful of earlier sessions, and over five values a p10–p90 range is
//! interpolation between the two extremes; the extremes are what actually happened, and the
//! median of a set always lies between them.

use std::collections::{BTreeMap, BTreeSet};

use crate::store::{Store, session_dir};
use tlv4_core::config::budget::Price;
use tlv4_core::error::Result;
use tlv4_core::model::SessionId;

use super::Ledger;

/// One run of an earlier session, priced.
#[derive(Debug, Clone, PartialEq)]
struct Run {
    role: String,
    agent: String,
    /// Dollars, when the agent reported them or `[prices]` priced its model.
    usd: Option<f64>,
    /// Input + output tokens.
    tokens: u64,
}

/// One earlier session: its pipeline and its runs.
#[derive(Debug, Clone, PartialEq)]
struct Past {
    id: SessionId,
    pipeline: String,
    /// Its own runs: a fork's leave out those it took over from the session it forked from.
    runs: Vec<Run>,
    /// Whether it was forked from another session: its runs then are only part of a
    /// session's, so it counts for [`History::reserve`] and not for an [`Estimate`].
    forked: bool,
}

impl Past {
    /// Whether any of its runs has a price.
    fn priced(&self) -> bool {
        self.runs.iter().any(|r| r.usd.is_some())
    }

    /// The runs that `keep` takes, summed: how many, their priced dollars, their tokens.
    fn sum(&self, keep: impl Fn(&Run) -> bool) -> (u64, f64, u64) {
        self.runs
            .iter()
            .filter(|r| keep(r))
            .fold((0, 0.0, 0), |(n, usd, tok), r| {
                (n + 1, usd + r.usd.unwrap_or(0.0), tok + r.tokens)
            })
    }
}

/// The ledgers of a repository's earlier sessions, read once.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct History {
    /// In session-id order; sessions without any run record are left out.
    sessions: Vec<Past>,
}

/// What one run of a role and agent has cost on this repository: the median over its
/// earlier runs.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Reserve {
    /// US dollars: the median over the priced runs; `0.0` when none was priced
    /// (`priced == 0`: the builtin agent, or a CLI that reports no cost and no `[prices]`
    /// entry for its model).
    pub usd: f64,
    /// Tokens (input + output): the median over all the runs.
    pub tokens: u64,
    /// The runs the medians are taken over.
    pub runs: usize,
    /// Of them, those with a price.
    pub priced: usize,
}

/// A median with the lowest and highest value it was taken over.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Spread<T> {
    /// The median (of an even count, the mean of the middle two).
    pub median: T,
    /// The lowest value seen.
    pub low: T,
    /// The highest value seen.
    pub high: T,
}

/// Which earlier sessions an [`Estimate`] is based on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Basis {
    /// The earlier sessions of the same pipeline.
    Pipeline,
    /// No earlier session used the pipeline: every earlier session, whatever its pipeline.
    AllPipelines,
    /// There is no earlier session with a run record: nothing to estimate from.
    Nothing,
}

/// One role and agent of an [`Estimate`].
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Line {
    /// The role.
    pub role: String,
    /// The agent that would play it.
    pub agent: String,
    /// Runs of the role by the agent in one session: the median over the sessions of the
    /// basis (a session without any counts 0).
    pub runs: f64,
    /// One run: the median over the basis sessions' runs of the role by the agent; `None`
    /// when the agent never played the role there.
    pub per_run: Option<Reserve>,
    /// Dollars of the role by the agent per session, over the basis sessions that have a
    /// priced run; `None` when none has.
    pub usd: Option<Spread<f64>>,
    /// Tokens of the role by the agent per session, over the basis sessions.
    pub tokens: Spread<u64>,
}

/// What a session of a pipeline is likely to cost here, from the earlier sessions.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Estimate {
    /// The pipeline estimated for.
    pub pipeline: String,
    /// Which earlier sessions the figures come from.
    pub basis: Basis,
    /// How many earlier sessions the figures come from.
    pub sessions: usize,
    /// Of them, how many have a priced run: the dollar figures come from these alone (the
    /// others contribute tokens only).
    pub priced_sessions: usize,
    /// Per role and agent, in role order.
    pub lines: Vec<Line>,
    /// Dollars per session (every run of it): over the priced basis sessions; `None` when
    /// none is priced.
    pub usd: Option<Spread<f64>>,
    /// Tokens per session (every run of it), over the basis sessions; `None` without any.
    pub tokens: Option<Spread<u64>>,
}

impl History {
    /// Reads every session of the repository — live branches and archives — but `except`
    /// (the session being estimated for), with the run records of its ledger ([`Ledger`]:
    /// every record its history wrote, whatever `undo` or `reset` took back since; a fork's
    /// without what its origin had spent before it), each priced with `prices`. A session
    /// whose `session.toml` cannot be read, a record that is not a [`RunUsage`](super::RunUsage), and a
    /// session without any record are left out: an estimate reads what it can.
    pub fn read(
        store: &Store,
        prices: &BTreeMap<String, Price>,
        except: Option<&SessionId>,
    ) -> Result<History> {
        let ids: BTreeSet<SessionId> = store
            .sessions()?
            .into_iter()
            .chain(store.archived()?)
            .filter(|sid| Some(sid) != except)
            .collect();
        let mut sessions = Vec::new();
        for sid in ids {
            let tip = store.tip(&sid)?;
            let tree = store.commit_tree(tip)?;
            let Some((pipeline, origin)) = store
                .read_blob_at(tree, &format!("{}/session.toml", session_dir(&sid)))?
                .and_then(|bytes| read_session(&bytes))
            else {
                continue;
            };
            // A fork's ledger goes on into its origin's history: what the origin had spent up
            // to the fork is read first, and left out (all kept when it cannot be read).
            let mut ledger = Ledger::default();
            if let Some(at) = origin.as_ref().and_then(|(_, at)| at.parse().ok())
                && ledger.refresh(store, at).is_err()
            {
                ledger = Ledger::default();
            }
            let inherited = ledger.runs.len();
            ledger.refresh(store, tip)?;
            let runs: Vec<Run> = ledger.runs[inherited..]
                .iter()
                .map(|u| Run {
                    usd: u.usd(prices),
                    tokens: u.tokens(),
                    role: u.role.clone(),
                    agent: u.agent.clone(),
                })
                .collect();
            if !runs.is_empty() {
                sessions.push(Past {
                    id: sid,
                    pipeline,
                    runs,
                    forked: origin.is_some(),
                });
            }
        }
        Ok(History { sessions })
    }

    /// How many earlier sessions with a run record there are.
    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    /// Whether there is no earlier session to go on.
    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// The earlier sessions read, in id order.
    pub fn ids(&self) -> impl Iterator<Item = &SessionId> {
        self.sessions.iter().map(|p| &p.id)
    }

    /// The median per run of this repository's earlier runs of `role` by `agent` (every
    /// earlier session, whatever its pipeline); `None` when the agent never played the role
    /// here. What the loop reserves for a task before it starts.
    pub fn reserve(&self, role: &str, agent: &str) -> Option<Reserve> {
        reserve_of(
            self.sessions
                .iter()
                .flat_map(|p| &p.runs)
                .filter(|r| r.role == role && r.agent == agent),
        )
    }

    /// What a session of `pipeline` is likely to cost here, from the earlier sessions of that
    /// pipeline (of every pipeline when none used it; [`Estimate::basis`] says which). Forks
    /// are left out: what they ran themselves is only part of a session.
    ///
    /// `agents` names, per role, the agent that would play it now: for such a role only that
    /// agent's runs are lines of their own (a role it never played here gets a line with no
    /// runs). A role not named (the quality roles, the critics) has a line per agent that
    /// played it. The total is every run of the basis sessions, whichever agent ran it: it
    /// is what such a session cost here. A line's and the total's `median` are each taken
    /// over the sessions, so the lines' medians need not add up to the total's.
    pub fn estimate(&self, pipeline: &str, agents: &BTreeMap<String, String>) -> Estimate {
        let whole: Vec<&Past> = self.sessions.iter().filter(|p| !p.forked).collect();
        let same: Vec<&Past> = whole
            .iter()
            .copied()
            .filter(|p| p.pipeline == pipeline)
            .collect();
        let (basis, sessions) = match (same.is_empty(), whole.is_empty()) {
            (false, _) => (Basis::Pipeline, same),
            (true, false) => (Basis::AllPipelines, whole),
            (true, true) => (Basis::Nothing, Vec::new()),
        };
        let mut pairs: BTreeSet<(String, String)> = sessions
            .iter()
            .flat_map(|p| &p.runs)
            .map(|r| {
                let agent = agents.get(&r.role).unwrap_or(&r.agent);
                (r.role.clone(), agent.clone())
            })
            .collect();
        if basis == Basis::Nothing {
            pairs.clear();
        }
        let priced: Vec<&Past> = sessions.iter().copied().filter(|p| p.priced()).collect();
        let lines = pairs
            .into_iter()
            .map(|(role, agent)| {
                let of = |r: &Run| r.role == role && r.agent == agent;
                let runs = median_f64(sessions.iter().map(|p| p.sum(of).0 as f64).collect());
                let per_run = reserve_of(sessions.iter().flat_map(|p| &p.runs).filter(|r| of(r)));
                Line {
                    runs: runs.map_or(0.0, |s| s.median),
                    per_run,
                    usd: median_f64(priced.iter().map(|p| p.sum(of).1).collect()),
                    tokens: median_u64(sessions.iter().map(|p| p.sum(of).2).collect()).unwrap_or(
                        Spread {
                            median: 0,
                            low: 0,
                            high: 0,
                        },
                    ),
                    role,
                    agent,
                }
            })
            .collect();
        Estimate {
            pipeline: pipeline.to_owned(),
            basis,
            sessions: sessions.len(),
            priced_sessions: priced.len(),
            lines,
            usd: median_f64(priced.iter().map(|p| p.sum(|_| true).1).collect()),
            tokens: median_u64(sessions.iter().map(|p| p.sum(|_| true).2).collect()),
        }
    }
}

/// The `pipeline` of a `session.toml`, and for a fork the session and event commit it was
/// forked from (`forked_from`); read leniently (a newer schema still names them).
fn read_session(bytes: &[u8]) -> Option<(String, Option<(SessionId, String)>)> {
    let table: toml::Table = toml::from_str(std::str::from_utf8(bytes).ok()?).ok()?;
    let pipeline = table.get("pipeline")?.as_str()?.to_owned();
    let origin = table.get("forked_from").and_then(|f| {
        let session = f.get("session")?.as_str()?.parse().ok()?;
        Some((session, f.get("event")?.as_str()?.to_owned()))
    });
    Some((pipeline, origin))
}

/// The per-run medians of `runs`; `None` without any.
fn reserve_of<'r>(runs: impl Iterator<Item = &'r Run>) -> Option<Reserve> {
    let runs: Vec<&Run> = runs.collect();
    let tokens = median_u64(runs.iter().map(|r| r.tokens).collect())?;
    let usd: Vec<f64> = runs.iter().filter_map(|r| r.usd).collect();
    let priced = usd.len();
    Some(Reserve {
        usd: median_f64(usd).map_or(0.0, |s| s.median),
        tokens: tokens.median,
        runs: runs.len(),
        priced,
    })
}

/// The median, lowest and highest of `values`; `None` when there are none. NaN sorts last.
fn median_f64(mut values: Vec<f64>) -> Option<Spread<f64>> {
    values.sort_by(f64::total_cmp);
    let (low, high) = (*values.first()?, *values.last()?);
    let mid = values.len() / 2;
    let median = if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    };
    Some(Spread { median, low, high })
}

/// [`median_f64`] for counts: the median of an even count is the mean of the middle two,
/// rounded down.
fn median_u64(mut values: Vec<u64>) -> Option<Spread<u64>> {
    values.sort_unstable();
    let (low, high) = (*values.first()?, *values.last()?);
    let mid = values.len() / 2;
    let median = if values.len() % 2 == 1 {
        values[mid]
    } else {
        values[mid - 1] / 2 + values[mid] / 2 + (values[mid - 1] % 2 + values[mid] % 2) / 2
    };
    Some(Spread { median, low, high })
}

#[cfg(test)]
mod tests;
