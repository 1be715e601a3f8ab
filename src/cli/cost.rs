//! `git tlv4 cost`: what the agents of a session cost, summed from the run records
//! (`runs/<TASK>/<attempt>/usage.json`) per role, task, agent and model — every record its
//! history ever wrote (the session's ledger: what `undo`, `rollback` and `reset` took back
//! was spent all the same), priced with `[prices]` where an agent reported no dollars. With
//! `--estimate`, what a session of a pipeline is likely to cost here, from the earlier
//! sessions' records (`tlv4_store::ledger::estimate`).

use std::collections::BTreeMap;

use tlv4_core::error::{Error, Result};

use super::Ctx;

pub(super) mod estimate;

/// Arguments of `cost`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Group by: role, task, agent or model (default: role, then agent and model)
    #[arg(long, value_name = "KEY", conflicts_with = "estimate")]
    pub by: Option<String>,
    /// Estimate what a session of a pipeline will cost here, from the earlier sessions
    #[arg(long)]
    pub estimate: bool,
    /// With --estimate: the pipeline (default: the session's with --session, else
    /// `[session] pipeline` of the configuration)
    #[arg(long, value_name = "NAME", requires = "estimate")]
    pub pipeline: Option<String>,
    /// Print JSON
    #[arg(long)]
    pub json: bool,
}

/// One run's usage, as recorded.
#[derive(Debug, Clone, serde::Deserialize)]
struct Run {
    task: String,
    role: String,
    agent: String,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    cost_usd: Option<f64>,
    #[serde(default)]
    seconds: f64,
}

/// Sums over a group of runs.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub(super) struct Total {
    /// Runs counted.
    pub runs: u64,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// Input tokens, where reported.
    pub input_tokens: u64,
    /// Output tokens, where reported.
    pub output_tokens: u64,
    /// US dollars, where reported.
    pub cost_usd: f64,
    /// Runs whose agent reported no cost.
    pub unpriced: u64,
}

impl Total {
    fn add(&mut self, r: &Run) {
        self.runs += 1;
        self.seconds += r.seconds;
        self.input_tokens += r.input_tokens;
        self.output_tokens += r.output_tokens;
        match r.cost_usd {
            Some(c) => self.cost_usd += c,
            None => self.unpriced += 1,
        }
    }
}

impl Run {
    /// A ledger's record, priced with `prices` where it reported no dollars.
    fn of(u: &tlv4_store::ledger::RunUsage, prices: &Prices) -> Run {
        Run {
            task: u.task.clone(),
            role: u.role.clone(),
            agent: u.agent.clone(),
            model: u.model.clone(),
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
            cost_usd: u.usd(prices),
            seconds: u.seconds,
        }
    }
}

type Prices = BTreeMap<String, tlv4_core::config::budget::Price>;

const KEYS: [&str; 4] = ["role", "task", "agent", "model"];

fn key(r: &Run, by: &str) -> String {
    match by {
        "role" => r.role.clone(),
        "task" => r.task.clone(),
        "agent" => r.agent.clone(),
        _ => r.model.clone().unwrap_or_else(|| "-".into()),
    }
}

pub(crate) fn run(ctx: &Ctx<'_>, args: Args) -> Result<()> {
    if args.estimate {
        return estimate::run(ctx, args.pipeline.as_deref(), args.json);
    }
    let groups: Vec<&str> = match args.by.as_deref() {
        None => vec!["role", "agent", "model"],
        Some(k) if KEYS.contains(&k) => vec![k],
        Some(k) => {
            return Err(Error::Invalid(format!(
                "--by {k}: expected one of {}",
                KEYS.join(", ")
            )));
        }
    };
    let (store, sid) = ctx.session()?;
    let (total, tables) = totals(&store, &sid, &groups)?;
    let best = best_of(&store, &sid)?;
    if args.json {
        ctx.ui
            .json(&serde_json::json!({ "schema": super::JSON_SCHEMA, "session": sid, "total": total, "by": tables, "best_of": best }));
        return Ok(());
    }
    let mut out = String::new();
    for by in &groups {
        out.push_str(&format!(
            "{:<22} {:>5} {:>9} {:>11} {:>11} {:>10}\n",
            by.to_uppercase(),
            "RUNS",
            "SECONDS",
            "IN TOKENS",
            "OUT TOKENS",
            "COST USD"
        ));
        for (name, t) in &tables[by] {
            out.push_str(&line(name, t));
        }
        out.push('\n');
    }
    out.push_str(&line("total", &total));
    if total.unpriced > 0 {
        out.push_str(&format!(
            "({} of {} runs reported no cost: the builtin agent, or a CLI that does not say)\n",
            total.unpriced, total.runs
        ));
    }
    if !best.is_empty() {
        out.push('\n');
    }
    for b in &best {
        out.push_str(&b.line());
        out.push('\n');
    }
    ctx.ui.out(out.trim_end());
    Ok(())
}

/// What the candidates of a best-of task cost beside what was merged.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub(crate) struct BestOf {
    /// The task.
    pub task: String,
    /// Its attempt that ran the candidates.
    pub attempt: u32,
    /// How many candidates ran.
    pub candidates: usize,
    /// What they cost together, in US dollars (where reported).
    pub cost_usd: f64,
    /// What the merged one cost (0 when none was).
    pub merged_usd: f64,
    /// The candidate merged, if any.
    pub picked: Option<u32>,
    /// Candidates whose agent reported no cost.
    pub unpriced: usize,
}

impl BestOf {
    /// The record's sums.
    pub(crate) fn of(
        task: &str,
        attempt: u32,
        record: &crate::coordinator::pick::Candidates,
    ) -> BestOf {
        let usd = |c: &crate::coordinator::pick::Candidate| c.usage.cost_usd;
        // A candidate that never started spent nothing, priced or not.
        let ran = |c: &&crate::coordinator::pick::Candidate| {
            c.usage.input_tokens + c.usage.output_tokens > 0 || c.seconds > 0.0
        };
        let merged = record.picked.and_then(|n| record.get(n)).and_then(usd);
        BestOf {
            task: task.to_owned(),
            attempt,
            candidates: record.candidates.len(),
            // A sum from 0.0 (an empty f64 sum is -0.0).
            cost_usd: record
                .candidates
                .iter()
                .filter_map(usd)
                .fold(0.0, |a, b| a + b),
            merged_usd: merged.unwrap_or_default(),
            picked: record.picked,
            unpriced: record
                .candidates
                .iter()
                .filter(ran)
                .filter(|c| usd(c).is_none())
                .count(),
        }
    }

    /// `IMPL-001 best of 3: $0.3000 in 3 candidates, $0.1000 of it merged (candidate 2)`.
    pub(crate) fn line(&self) -> String {
        let n = self.candidates;
        let priced = n - self.unpriced;
        if priced == 0 {
            let merged = match self.picked {
                Some(k) => format!("candidate {k} merged"),
                None => "none merged".to_owned(),
            };
            return format!(
                "{} best of {n}: no candidate reported its cost, {merged}",
                self.task
            );
        }
        let merged = match self.picked {
            Some(k) => format!("${:.4} of it merged (candidate {k})", self.merged_usd),
            None => "none merged".to_owned(),
        };
        let unpriced = match self.unpriced {
            0 => String::new(),
            u => format!("; {u} reported no cost"),
        };
        format!(
            "{} best of {n}: ${:.4} in {n} candidates, {merged}{unpriced}",
            self.task, self.cost_usd
        )
    }
}

/// The best-of tasks of session `sid` at its tip, each with its latest candidates.
pub(crate) fn best_of(
    store: &tlv4_store::store::Store,
    sid: &tlv4_core::model::SessionId,
) -> Result<Vec<BestOf>> {
    let (tip, state) = store.read_state(sid)?;
    Ok(crate::coordinator::pick::all(store, tip, sid, &state)?
        .iter()
        .map(|(task, f)| BestOf::of(task.as_str(), f.attempt, &f.record))
        .collect())
}

/// Sums per value of each grouping key (`role`, `agent`, …).
pub(crate) type Tables<'k> = BTreeMap<&'k str, BTreeMap<String, Total>>;

/// The sums of session `sid`'s run records at its tip: over all runs, and per value of each
/// key in `groups`.
pub(crate) fn totals<'k>(
    store: &tlv4_store::store::Store,
    sid: &tlv4_core::model::SessionId,
    groups: &[&'k str],
) -> Result<(Total, Tables<'k>)> {
    let mut ledger = tlv4_store::ledger::Ledger::default();
    ledger.refresh(store, store.tip(sid)?)?;
    // The prices of the configuration the session runs with; none when it cannot be read.
    let prices: Prices = crate::coordinator::budget::pinned_prices(store, sid);
    let runs: Vec<Run> = ledger.runs.iter().map(|u| Run::of(u, &prices)).collect();
    let mut total = Total::default();
    runs.iter().for_each(|r| total.add(r));
    let mut tables: BTreeMap<&str, BTreeMap<String, Total>> = BTreeMap::new();
    for by in groups {
        let table = tables.entry(by).or_default();
        for r in &runs {
            table.entry(key(r, by)).or_default().add(r);
        }
    }
    Ok((total, tables))
}

fn line(name: &str, t: &Total) -> String {
    format!(
        "{:<22} {:>5} {:>9.1} {:>11} {:>11} {:>10.4}\n",
        name, t.runs, t.seconds, t.input_tokens, t.output_tokens, t.cost_usd
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_best_of_line_says_what_the_candidates_cost_beside_what_was_merged() {
        let record: crate::coordinator::pick::Candidates = serde_json::from_str(
            r#"{"picked": 2, "candidates": [
                {"number": 1, "usage": {"cost_usd": 0.1}},
                {"number": 2, "usage": {"cost_usd": 0.15}},
                {"number": 3, "usage": {"cost_usd": 0.05}}]}"#,
        )
        .unwrap();
        let b = BestOf::of("IMPL-001", 1, &record);
        assert_eq!(
            b.line(),
            "IMPL-001 best of 3: $0.3000 in 3 candidates, $0.1500 of it merged (candidate 2)"
        );
        let mut short = record.clone();
        short.picked = None;
        short.candidates[2].usage.cost_usd = None;
        short.candidates[2].seconds = 1.0;
        assert_eq!(
            BestOf::of("IMPL-001", 1, &short).line(),
            "IMPL-001 best of 3: $0.2500 in 3 candidates, none merged; 1 reported no cost"
        );
        let mut silent = record.clone();
        for c in &mut silent.candidates {
            c.usage.cost_usd = None;
            c.seconds = 2.0;
        }
        let b = BestOf::of("IMPL-001", 1, &silent);
        assert_eq!(b.cost_usd.to_string(), "0", "not -0");
        assert_eq!(
            b.line(),
            "IMPL-001 best of 3: no candidate reported its cost, candidate 2 merged"
        );
    }
}
