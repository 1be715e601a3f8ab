//! What a session spent, and what it may spend: the run records (`usage.json`) of its whole
//! history priced with `[prices]`, the raises its decisions recorded, and the reserves the
//! loop holds for runs in progress. The store finds the records (`Store::spent_since`); this
//! module adds them up. `estimate` reads the ledgers of earlier sessions for what a pipeline
//! will cost here.

pub mod estimate;

use std::collections::BTreeMap;

use tlv4_core::config::budget::Price;
use tlv4_core::error::{Error, Result};

/// One run's usage as its record (`runs/<TASK>/<attempt>/usage.json`, or a critic's under it)
/// has it.
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize, serde::Serialize)]
pub struct RunUsage {
    /// The task.
    pub task: String,
    /// Its role (`critic` for a discuss critic's run).
    pub role: String,
    /// The agent that did the work.
    pub agent: String,
    /// The model, where known.
    #[serde(default)]
    pub model: Option<String>,
    /// Input tokens (cached ones included).
    #[serde(default)]
    pub input_tokens: u64,
    /// Of the input tokens, those read from the service's cache.
    #[serde(default)]
    pub cached_input_tokens: u64,
    /// Output tokens.
    #[serde(default)]
    pub output_tokens: u64,
    /// US dollars, as the agent reported them.
    #[serde(default)]
    pub cost_usd: Option<f64>,
    /// Wall-clock seconds.
    #[serde(default)]
    pub seconds: f64,
}

impl RunUsage {
    /// Input + output tokens.
    pub fn tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }

    /// The run's dollars: as reported, else priced with its model's entry of `prices`;
    /// `None` when neither says.
    pub fn usd(&self, prices: &BTreeMap<String, Price>) -> Option<f64> {
        self.cost_usd.or_else(|| {
            let price = prices.get(self.model.as_deref()?)?;
            Some(price.cost(
                self.input_tokens,
                self.cached_input_tokens,
                self.output_tokens,
            ))
        })
    }
}

/// The trailer of a decision that raised the session's dollar budget (`+5`, or `-2` to lower).
pub const RAISE_USD: &str = "Raise-Usd";
/// The trailer of a decision that raised the session's token budget.
pub const RAISE_TOKENS: &str = "Raise-Tokens";

/// What a session's history recorded of spend: every run record ever written on the way to
/// its tip (whatever `undo`, `rollback` or `reset` did to the tree since), and every raise of
/// its budget. Built incrementally: [`Ledger::refresh`] reads only the commits it has not
/// seen, so the loop can ask before every task.
///
/// Which commits count (`specs/state-format.md` §7.4 says the same): a commit adds the run
/// records that are new or changed against its first parent's tree, anywhere under
/// `.tlv4/sessions/*/runs/`; a pull's merge (its sides are walked on their own), restores
/// (`undo`, `rollback`: the records they bring back were counted when first written), a
/// fork's first event (it moves the parent's folder, whose records the walk counts in the
/// parent's events), a task's snapshot and commits that are no events add none. The walk follows every parent and stops at a session's first event
/// (`session_started`): a fork's history goes on into its parent session's, so a fork starts
/// with what its parent spent up to the fork (unless `fork --fresh-budget` marked its first
/// event `Tlv4-Ledger: fresh`).
#[derive(Debug, Clone, Default)]
pub struct Ledger {
    seen: std::collections::HashSet<gix::ObjectId>,
    /// Every run record counted, in the order found.
    pub runs: Vec<RunUsage>,
    /// The sum of the dollar raises recorded.
    pub raised_usd: f64,
    /// The sum of the token raises recorded (negative: lowered).
    pub raised_tokens: i64,
}

impl Ledger {
    /// Adds what the commits reachable from `tip` and not read yet recorded.
    pub fn refresh(&mut self, store: &crate::store::Store, tip: gix::ObjectId) -> Result<()> {
        let repo = store.repo();
        let git = |e: gix::Error| Error::git("cannot read the session's ledger", e);
        let mut stack = vec![tip];
        while let Some(id) = stack.pop() {
            if !self.seen.insert(id) {
                continue;
            }
            let commit = repo.find_commit(id).map_err(git)?;
            let parents: Vec<gix::ObjectId> = commit.parent_ids().map(|p| p.detach()).collect();
            let message = commit.message_raw().map_err(git)?.to_owned();
            let trailers = trailers(message.as_ref());
            let get = |k: &str| {
                trailers
                    .iter()
                    .find(|(key, _)| key.eq_ignore_ascii_case(&format!("Tlv4-{k}")))
                    .map(|(_, v)| v.trim())
            };
            let event = get("Event").unwrap_or_default();
            if let Some(v) = get(RAISE_USD).and_then(|v| v.parse::<f64>().ok()) {
                self.raised_usd += v;
            }
            if let Some(v) = get(RAISE_TOKENS).and_then(|v| v.parse::<i64>().ok()) {
                self.raised_tokens += v;
            }
            // Events that write run records count; a pull's merge (its sides are walked on
            // their own), a restore, a fork's move of the folder, a snapshot of a task's
            // checkout and commits that are no events write none.
            let counts = !event.is_empty()
                && get("Restores").is_none()
                && !["session_merged", "session_forked", "task_snapshot"].contains(&event);
            if counts {
                let tree = commit.tree_id().map_err(git)?.detach();
                let before = match parents.first() {
                    Some(p) => Some(
                        repo.find_commit(*p)
                            .map_err(git)?
                            .tree_id()
                            .map_err(git)?
                            .detach(),
                    ),
                    None => None,
                };
                self.add_records(store, tree, before)?;
            }
            // A session's history begins at its first event; a fork's goes on into its
            // origin's, unless it was told to start afresh.
            let first = event == "session_started"
                || (event == "session_forked" && get("Ledger") == Some("fresh"));
            if !first {
                stack.extend(parents);
            }
        }
        Ok(())
    }

    /// Adds the run records under `.tlv4/sessions/*/runs/` of `tree` that `before` does not
    /// have with the same content.
    fn add_records(
        &mut self,
        store: &crate::store::Store,
        tree: gix::ObjectId,
        before: Option<gix::ObjectId>,
    ) -> Result<()> {
        let sessions = |t: gix::ObjectId| subtree(store, t, ".tlv4/sessions");
        let Some(now) = sessions(tree)? else {
            return Ok(());
        };
        let then = match before {
            Some(b) => sessions(b)?,
            None => None,
        };
        if then == Some(now) {
            return Ok(());
        }
        for (name, id) in entries(store, now)?
            .into_iter()
            .filter(|e| e.2)
            .map(|e| (e.0, e.1))
        {
            let old = match then {
                Some(t) => entries(store, t)?
                    .into_iter()
                    .find(|e| e.0 == name && e.2)
                    .map(|e| e.1),
                None => None,
            };
            if old == Some(id) {
                continue;
            }
            let runs = |t: gix::ObjectId| subtree(store, t, "runs");
            let Some(runs_now) = runs(id)? else {
                continue;
            };
            let runs_then = match old {
                Some(o) => runs(o)?,
                None => None,
            };
            self.add_new_usage(store, runs_now, runs_then)?;
        }
        Ok(())
    }

    /// Walks `now` against `then`, adding every `usage.json` that is new or changed.
    fn add_new_usage(
        &mut self,
        store: &crate::store::Store,
        now: gix::ObjectId,
        then: Option<gix::ObjectId>,
    ) -> Result<()> {
        if then == Some(now) {
            return Ok(());
        }
        let old = match then {
            Some(t) => entries(store, t)?,
            None => Vec::new(),
        };
        for (name, id, is_tree) in entries(store, now)? {
            let before = old
                .iter()
                .find(|e| e.0 == name && e.2 == is_tree)
                .map(|e| e.1);
            if before == Some(id) {
                continue;
            }
            if is_tree {
                self.add_new_usage(store, id, before)?;
            } else if name == "usage.json" {
                let blob = store
                    .repo()
                    .find_blob(id)
                    .map_err(|e| Error::git("cannot read a run record", e))?;
                // A record this build cannot read (hand-edited, a newer format) counts as
                // nothing rather than stopping the loop; `cost` names it.
                if let Ok(run) = serde_json::from_slice::<RunUsage>(&blob.data) {
                    self.runs.push(run);
                }
            }
        }
        Ok(())
    }

    /// What the runs counted cost: dollars (priced with `prices` where the agent reported
    /// none), tokens, and how many runs neither reported nor could be priced.
    pub fn spent(&self, prices: &BTreeMap<String, Price>) -> Spent {
        let mut s = Spent::default();
        for r in &self.runs {
            s.add(r, prices);
        }
        s
    }
}

/// Dollars and tokens spent, in all and per (role, agent).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Spent {
    /// US dollars.
    pub usd: f64,
    /// Input + output tokens.
    pub tokens: u64,
    /// Runs counted.
    pub runs: u64,
    /// Runs with no dollars reported and no price for their model.
    pub unpriced: u64,
    /// Per role, then agent: (dollars, tokens, runs).
    pub by: BTreeMap<String, BTreeMap<String, (f64, u64, u64)>>,
}

impl Spent {
    fn add(&mut self, r: &RunUsage, prices: &BTreeMap<String, Price>) {
        let usd = r.usd(prices);
        self.usd += usd.unwrap_or(0.0);
        self.tokens += r.tokens();
        self.runs += 1;
        if usd.is_none() {
            self.unpriced += 1;
        }
        let e = self
            .by
            .entry(r.role.clone())
            .or_default()
            .entry(r.agent.clone())
            .or_default();
        e.0 += usd.unwrap_or(0.0);
        e.1 += r.tokens();
        e.2 += 1;
    }

    /// Dollars and tokens of `role`'s runs.
    pub fn of_role(&self, role: &str) -> (f64, u64) {
        self.by.get(role).map_or((0.0, 0), |agents| {
            agents
                .values()
                .fold((0.0, 0), |(u, t), (du, dt, _)| (u + du, t + dt))
        })
    }

    /// `by role: agent $x (n tokens), …` for a pause's reason.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        for (role, agents) in &self.by {
            for (agent, (usd, tokens, runs)) in agents {
                parts.push(format!(
                    "{role}/{agent} ${usd:.4} ({tokens} tokens, {runs} run{})",
                    if *runs == 1 { "" } else { "s" }
                ));
            }
        }
        parts.join(", ")
    }
}

/// The `Tlv4-*` trailers of a commit message (and any other `Key: value` lines of its last
/// paragraph), in order.
fn trailers(message: &gix::bstr::BStr) -> Vec<(String, String)> {
    use gix::bstr::ByteSlice;
    let text = message.to_str_lossy();
    let last = text.trim_end().rsplit("\n\n").next().unwrap_or_default();
    last.lines()
        .filter_map(|l| l.split_once(':'))
        .filter(|(k, _)| k.starts_with("Tlv4-"))
        .map(|(k, v)| (k.to_owned(), v.trim().to_owned()))
        .collect()
}

/// The id of the tree at `path` under tree `tree`, if there is one.
fn subtree(
    store: &crate::store::Store,
    tree: gix::ObjectId,
    path: &str,
) -> Result<Option<gix::ObjectId>> {
    let git = |e: gix::Error| Error::git("cannot read the session's ledger", e);
    let t = store.repo().find_tree(tree).map_err(git)?;
    Ok(t.lookup_entry_by_path(path)
        .map_err(git)?
        .filter(|e| e.mode().is_tree())
        .map(|e| e.object_id()))
}

/// The entries of tree `tree`: name, id, whether it is a tree.
fn entries(
    store: &crate::store::Store,
    tree: gix::ObjectId,
) -> Result<Vec<(String, gix::ObjectId, bool)>> {
    use gix::bstr::ByteSlice;
    let git = |e: gix::Error| Error::git("cannot read the session's ledger", e);
    let t = store.repo().find_tree(tree).map_err(git)?;
    let decoded = t.decode().map_err(git)?;
    Ok(decoded
        .entries
        .iter()
        .map(|e| {
            (
                e.filename.to_str_lossy().into_owned(),
                e.oid.to_owned(),
                e.mode.is_tree(),
            )
        })
        .collect())
}
