//! `git tlv4 cost --estimate`: what a session of a pipeline is likely to cost on this
//! repository, per role and agent and in total, from the run records of its earlier sessions
//! ([`History`]); and the one line `start` shows on a terminal before it runs.

use std::collections::BTreeMap;

use crate::agents::roster::{Overrides, Roster};
use crate::coordinator::pipeline::PipelineSpec;
use tlv4_core::error::{Error, Result};
use tlv4_core::model::{Role, SessionId};
use tlv4_store::ledger::estimate::{Basis, Estimate, History, Line, Spread};
use tlv4_store::store::Store;

use super::super::Ctx;

/// What `cost --estimate` says when there is nothing to go on.
const NO_HISTORY: &str =
    "no earlier session of this repository to estimate from; run one, then ask again";

pub(super) fn run(ctx: &Ctx<'_>, pipeline: Option<&str>, json: bool) -> Result<()> {
    let store = ctx.store()?;
    // With `--session`, the estimate is for that session: its pipeline, from the others.
    let session = match ctx.session.as_deref() {
        Some(name) => {
            let sid = store.find_session(name)?;
            let (_, state) = store.read_state(&sid)?;
            Some((sid, state.session.pipeline))
        }
        None => None,
    };
    let conf = tlv4_core::trust::Configuration::read(store.workdir())?;
    let spec = PipelineSpec::from_files(&conf.files)?;
    // A pipeline named must exist; the default may be missing from a repository's own
    // pipelines file (as for `start`), and then has no history of its own.
    let named = pipeline.is_some() || conf.config.is_set("session.pipeline");
    let pipeline = match (pipeline, &session) {
        (Some(p), _) => p.to_owned(),
        (None, Some((_, p))) => p.clone(),
        (None, None) => conf.config.session.pipeline.clone(),
    };
    if named && !spec.has(&pipeline) {
        let known: Vec<&str> = spec.pipelines().map(|(name, _)| name).collect();
        return Err(Error::Invalid(format!(
            "unknown pipeline `{pipeline}`; known pipelines: {}",
            known.join(", ")
        )));
    }
    // The agents that would play the roles now; without a roster (a configuration that does
    // not load), the agents that played them.
    let agents = Roster::load(
        &conf.config,
        &Overrides::default(),
        store.workdir(),
        &crate::coordinator::roster_names(),
        &crate::coordinator::replay::StoreRecordings::new(&store),
    )
    .map(|r| agents_of(&spec, &r))
    .unwrap_or_default();
    let except = session.as_ref().map(|(sid, _)| sid);
    let history = History::read(&store, &conf.config.prices, except)?;
    let est = history.estimate(&pipeline, &agents);
    if json {
        let mut doc = serde_json::to_value(&est).unwrap_or(serde_json::Value::Null);
        if let Some(map) = doc.as_object_mut() {
            map.insert("schema".into(), super::super::JSON_SCHEMA.into());
        }
        ctx.ui.json(&doc);
        return Ok(());
    }
    match summary(&est) {
        None => ctx.ui.out(NO_HISTORY),
        Some(total) => ctx.ui.out(format!("{}\n{total}", table(&est))),
    }
    Ok(())
}

/// The agent each agent role of `spec` would run on with `roster`; the quality roles, whose
/// runs the quality machinery records, are left out.
pub(crate) fn agents_of(spec: &PipelineSpec, roster: &Roster) -> BTreeMap<String, String> {
    spec.role_names()
        .chain(spec.specialists().keys().map(String::as_str))
        .filter(|role| !Role::from(*role).is_quality())
        .map(|role| (role.to_owned(), roster.for_role(role).name().to_owned()))
        .collect()
}

/// The estimate of a session of `pipeline` for session `sid` (left out of its own history),
/// as the one line `start` shows: `None` when there is no history, or it cannot be read.
pub(crate) fn line_for_start(
    store: &Store,
    conf: &tlv4_core::trust::Configuration,
    roster: &Roster,
    sid: &SessionId,
    pipeline: &str,
) -> Option<String> {
    let history = History::read(store, &conf.config.prices, Some(sid)).ok()?;
    let spec = PipelineSpec::from_files(&conf.files).ok()?;
    summary(&history.estimate(pipeline, &agents_of(&spec, roster)))
}

/// The total: `estimated: $0.84 (0.61–1.12 over 5 earlier sessions of full-lifecycle)`, with
/// what it leaves out; `None` when there is no history.
fn summary(est: &Estimate) -> Option<String> {
    let of = match est.basis {
        Basis::Nothing => return None,
        Basis::Pipeline => format!("of {}", est.pipeline),
        Basis::AllPipelines => format!("of any pipeline: none used {}", est.pipeline),
    };
    let sessions = |n: usize| format!("{n} earlier session{}", if n == 1 { "" } else { "s" });
    let tokens = est.tokens.map(|t| spread_tokens(&t)).unwrap_or_default();
    Some(match est.usd {
        Some(usd) => {
            let unpriced = est.sessions - est.priced_sessions;
            let mut text = format!(
                "estimated: ${} ({}–{} over {} {of}), {tokens} tokens",
                money(usd.median, usd.high),
                money(usd.low, usd.high),
                money(usd.high, usd.high),
                sessions(est.priced_sessions),
            );
            if unpriced > 0 {
                text.push_str(&format!(
                    "; {} without a cost: tokens only",
                    sessions(unpriced)
                ));
            }
            text
        }
        None => format!(
            "estimated: {tokens} tokens over {} {of}; no run reported a cost",
            sessions(est.sessions)
        ),
    })
}

/// The table of roles and agents.
fn table(est: &Estimate) -> String {
    let mut out = format!(
        "{:<14} {:<12} {:>5} {:>10} {:>10}  {:<28} {}\n",
        "ROLE",
        "AGENT",
        "RUNS",
        "USD/RUN",
        "TOKENS/RUN",
        "USD/SESSION (LOW–HIGH)",
        "TOKENS/SESSION"
    );
    for l in &est.lines {
        out.push_str(&row(l));
    }
    out
}

fn row(l: &Line) -> String {
    let Some(per) = l.per_run else {
        return format!(
            "{:<14} {:<12} {:>5}  no earlier run of {} as {}\n",
            l.role, l.agent, "-", l.agent, l.role
        );
    };
    let usd = l.usd.map_or("-".to_owned(), |u| {
        format!(
            "{} ({}–{})",
            money(u.median, u.high),
            money(u.low, u.high),
            money(u.high, u.high)
        )
    });
    let per_usd = if per.priced > 0 {
        money(per.usd, per.usd)
    } else {
        "-".to_owned()
    };
    format!(
        "{:<14} {:<12} {:>5} {:>10} {:>10}  {:<28} {}\n",
        l.role,
        l.agent,
        l.runs,
        per_usd,
        per.tokens,
        usd,
        spread_tokens(&l.tokens)
    )
}

/// `median (low–high)` of tokens.
fn spread_tokens(t: &Spread<u64>) -> String {
    format!("{} ({}–{})", t.median, t.low, t.high)
}

/// Dollars with cents, or with four decimals when the largest figure beside them (`scale`)
/// is under ten cents, so that small runs do not all read $0.00.
fn money(v: f64, scale: f64) -> String {
    if scale < 0.1 {
        format!("{v:.4}")
    } else {
        format!("{v:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_total_line_says_what_it_is_based_on() {
        let mut est = Estimate {
            pipeline: "full-lifecycle".into(),
            basis: Basis::Pipeline,
            sessions: 5,
            priced_sessions: 5,
            lines: Vec::new(),
            usd: Some(Spread {
                median: 0.84,
                low: 0.61,
                high: 1.12,
            }),
            tokens: Some(Spread {
                median: 1000,
                low: 800,
                high: 1500,
            }),
        };
        assert_eq!(
            summary(&est).unwrap(),
            "estimated: $0.84 (0.61–1.12 over 5 earlier sessions of full-lifecycle), 1000 (800–1500) tokens"
        );
        est.priced_sessions = 4;
        est.basis = Basis::AllPipelines;
        assert_eq!(
            summary(&est).unwrap(),
            "estimated: $0.84 (0.61–1.12 over 4 earlier sessions of any pipeline: none used \
             full-lifecycle), 1000 (800–1500) tokens; 1 earlier session without a cost: tokens only"
        );
        est.usd = None;
        assert_eq!(
            summary(&est).unwrap(),
            "estimated: 1000 (800–1500) tokens over 5 earlier sessions of any pipeline: none \
             used full-lifecycle; no run reported a cost"
        );
        est.basis = Basis::Nothing;
        assert_eq!(summary(&est), None);
        assert_eq!(money(0.0123, 0.03), "0.0123");
        assert_eq!(money(0.5, 1.2), "0.50");
    }
}
