//! The medians and spreads of an estimate, and reading the ledgers of earlier sessions.

use super::*;
use crate::ledger::RunUsage;
use tlv4_core::model::{Event, EventKind};

fn run(role: &str, agent: &str, usd: Option<f64>, tokens: u64) -> Run {
    Run {
        role: role.into(),
        agent: agent.into(),
        usd,
        tokens,
    }
}

fn past(id: &str, pipeline: &str, runs: Vec<Run>) -> Past {
    Past {
        id: id.parse().expect("a session id"),
        pipeline: pipeline.into(),
        runs,
        forked: false,
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn medians_of_odd_and_even_counts_with_their_extremes() {
    let s = median_f64(vec![3.0, 1.0, 2.0]).unwrap();
    assert_eq!((s.median, s.low, s.high), (2.0, 1.0, 3.0));
    let s = median_f64(vec![0.4, 0.1, 0.2, 1.0]).unwrap();
    assert!(close(s.median, 0.3), "{s:?}");
    assert_eq!((s.low, s.high), (0.1, 1.0));
    assert_eq!(median_f64(Vec::new()), None);
    let s = median_u64(vec![7, 2, 4, 10]).unwrap();
    assert_eq!((s.median, s.low, s.high), (5, 2, 10));
    // The mean of the middle two, rounded down, without overflowing.
    assert_eq!(median_u64(vec![3, 4]).unwrap().median, 3);
    assert_eq!(
        median_u64(vec![u64::MAX, u64::MAX]).unwrap().median,
        u64::MAX
    );
    assert_eq!(
        median_u64(vec![9]).unwrap(),
        Spread {
            median: 9,
            low: 9,
            high: 9
        }
    );
    assert_eq!(median_u64(Vec::new()), None);
}

#[test]
fn a_reserve_is_the_median_run_of_the_role_and_agent() {
    let h = History {
        sessions: vec![
            past(
                "TLV4-a-20261201",
                "full",
                vec![
                    run("writer", "claude", Some(0.10), 100),
                    run("writer", "claude", Some(0.30), 300),
                    run("writer", "codex", Some(9.0), 9000),
                ],
            ),
            past(
                "TLV4-b-20261201",
                "quick",
                vec![
                    run("writer", "claude", Some(0.20), 250),
                    run("writer", "claude", None, 1000),
                    run("analyst", "builtin", None, 0),
                ],
            ),
        ],
    };
    let r = h.reserve("writer", "claude").unwrap();
    // Dollars over the three priced runs, tokens over all four.
    assert!(close(r.usd, 0.20), "{r:?}");
    assert_eq!((r.tokens, r.runs, r.priced), (275, 4, 3));
    let b = h.reserve("analyst", "builtin").unwrap();
    assert_eq!((b.usd, b.tokens, b.runs, b.priced), (0.0, 0, 1, 0));
    assert_eq!(h.reserve("writer", "gemini"), None);
    assert_eq!(h.reserve("tester", "claude"), None);
}

/// Three sessions of `full` (one unpriced), one of `quick`.
fn three_and_one() -> History {
    History {
        sessions: vec![
            past(
                "TLV4-a-20261201",
                "full",
                vec![
                    run("writer", "claude", Some(0.50), 500),
                    run("executor", "claude", Some(1.00), 1000),
                    run("reviewer", "quality", None, 0),
                ],
            ),
            past(
                "TLV4-b-20261201",
                "full",
                vec![
                    run("writer", "claude", Some(0.70), 700),
                    run("executor", "claude", Some(1.00), 900),
                    run("executor", "claude", Some(2.00), 2100),
                    run("reviewer", "quality", None, 0),
                ],
            ),
            past(
                "TLV4-c-20261201",
                "full",
                vec![
                    run("writer", "builtin", None, 0),
                    run("executor", "builtin", None, 0),
                ],
            ),
            past(
                "TLV4-d-20261201",
                "quick",
                vec![run("executor", "codex", Some(5.0), 4000)],
            ),
        ],
    }
}

#[test]
fn an_estimate_takes_the_sessions_of_the_pipeline_and_prices_from_the_priced_ones() {
    let h = three_and_one();
    let agents: BTreeMap<String, String> = [("writer", "claude"), ("executor", "claude")]
        .map(|(r, a)| (r.to_owned(), a.to_owned()))
        .into();
    let e = h.estimate("full", &agents);
    assert_eq!(e.basis, Basis::Pipeline);
    assert_eq!((e.sessions, e.priced_sessions), (3, 2));
    // Per-session totals: $1.50 and $3.70 (the builtin session is unpriced); the median of
    // two is their mean, and it lies within the spread.
    let usd = e.usd.unwrap();
    assert!(close(usd.median, 2.60) && close(usd.low, 1.50) && close(usd.high, 3.70));
    assert!(usd.low <= usd.median && usd.median <= usd.high);
    // Tokens over all three: 1500, 3700 and 0.
    assert_eq!(
        e.tokens,
        Some(Spread {
            median: 1500,
            low: 0,
            high: 3700
        })
    );
    let roles: Vec<(&str, &str)> = e
        .lines
        .iter()
        .map(|l| (l.role.as_str(), l.agent.as_str()))
        .collect();
    // The builtin agent's runs are not lines of their own: the roles are claude's now.
    assert_eq!(
        roles,
        [
            ("executor", "claude"),
            ("reviewer", "quality"),
            ("writer", "claude")
        ]
    );
    let exec = &e.lines[0];
    assert_eq!(exec.runs, 1.0, "1, 2 and 0 runs");
    let per = exec.per_run.unwrap();
    assert!(
        close(per.usd, 1.0) && per.tokens == 1000 && per.runs == 3,
        "{per:?}"
    );
    let u = exec.usd.unwrap();
    assert!(
        close(u.median, 2.0) && close(u.low, 1.0) && close(u.high, 3.0),
        "{u:?}"
    );
    assert_eq!(
        exec.tokens,
        Spread {
            median: 1000,
            low: 0,
            high: 3000
        }
    );
    let review = &e.lines[1];
    assert_eq!((review.runs, review.per_run.unwrap().priced), (1.0, 0));
    assert_eq!(review.usd.unwrap().high, 0.0);
}

#[test]
fn an_estimate_falls_back_to_every_session_and_says_when_there_is_none() {
    let h = three_and_one();
    let e = h.estimate("spec-only", &BTreeMap::new());
    assert_eq!(
        (e.basis, e.sessions, e.priced_sessions),
        (Basis::AllPipelines, 4, 3)
    );
    // Without a named agent, each agent that played a role has its line.
    assert!(
        e.lines
            .iter()
            .any(|l| l.role == "executor" && l.agent == "codex")
    );
    assert!(
        e.lines
            .iter()
            .any(|l| l.role == "executor" && l.agent == "builtin")
    );
    // A named agent that never played the role gets a line without runs.
    let agents = BTreeMap::from([("writer".to_owned(), "gemini".to_owned())]);
    let e = h.estimate("quick", &agents);
    assert_eq!(e.sessions, 1);
    assert!(e.lines.iter().all(|l| l.role != "writer"));
    let e = h.estimate("full", &agents);
    let w = e.lines.iter().find(|l| l.role == "writer").unwrap();
    assert_eq!((w.agent.as_str(), w.runs, w.per_run), ("gemini", 0.0, None));

    let none = History::default().estimate("full", &agents);
    assert_eq!((none.basis, none.sessions), (Basis::Nothing, 0));
    assert!(none.lines.is_empty() && none.usd.is_none() && none.tokens.is_none());
}

fn usage(task: &str, role: &str, agent: &str, model: &str, cost: Option<f64>) -> Vec<u8> {
    serde_json::to_vec(&RunUsage {
        task: task.into(),
        role: role.into(),
        agent: agent.into(),
        model: Some(model.into()),
        input_tokens: 1000,
        cached_input_tokens: 0,
        output_tokens: 500,
        cost_usd: cost,
        seconds: 1.0,
    })
    .unwrap()
}

/// Writes run records into session `sid`, as the coordinator records a task's run.
fn record(store: &Store, sid: &SessionId, records: &[(&str, Vec<u8>)]) {
    store
        .transact(sid, |txn| {
            for (path, bytes) in records {
                txn.write_record(path, bytes.clone())?;
            }
            Ok(Some(Event::session(EventKind::TasksRecovered, "runs")))
        })
        .unwrap();
}

#[test]
fn history_reads_live_and_archived_sessions_but_the_one_estimated_for() {
    let repo = crate::testutil::Repo::new();
    repo.commit("one");
    let store = Store::discover(repo.path()).unwrap();
    let tasks = [("DRAFT-001", "writer")];
    let first = crate::testutil::start_session(&store, "Add search", "full", &tasks);
    record(
        &store,
        &first,
        &[
            (
                "runs/DRAFT-001/1/usage.json",
                usage("DRAFT-001", "writer", "claude", "opus", Some(0.25)),
            ),
            (
                "runs/DRAFT-001/2/usage.json",
                usage("DRAFT-001", "writer", "claude", "opus", Some(0.75)),
            ),
            ("runs/DRAFT-001/2/result.json", b"{}".to_vec()),
            (
                "runs/DRAFT-001/2/critic-product/usage.json",
                usage("DRAFT-001", "critic", "codex", "gpt", None),
            ),
            ("runs/DRAFT-001/3/usage.json", b"not json".to_vec()),
        ],
    );
    // A fork takes over the records of its origin; only its own run is its.
    let fork: SessionId = "TLV4-add-search-fork-20261207".parse().unwrap();
    store
        .fork_session(
            &first,
            store.tip(&first).unwrap(),
            &fork,
            "fork".into(),
            false,
        )
        .unwrap();
    record(
        &store,
        &fork,
        &[(
            "runs/DRAFT-001/4/usage.json",
            usage("DRAFT-001", "writer", "claude", "opus", Some(0.5)),
        )],
    );
    let second = crate::testutil::start_session(&store, "Add login", "quick", &tasks);
    // Priced by `[prices]`: 1000 input and 500 output tokens at $1 and $2 per million.
    record(
        &store,
        &second,
        &[(
            "runs/DRAFT-001/1/usage.json",
            usage("DRAFT-001", "writer", "claude", "sonnet", None),
        )],
    );
    let tip = store.tip(&second).unwrap();
    store
        .create_ref(&crate::store::archive_ref(&second), tip, "archive")
        .unwrap();
    store
        .delete_ref(&crate::store::session_ref(&second), tip)
        .unwrap();
    let current = crate::testutil::start_session(&store, "Add export", "full", &tasks);
    record(
        &store,
        &current,
        &[(
            "runs/DRAFT-001/1/usage.json",
            usage("DRAFT-001", "writer", "claude", "opus", Some(50.0)),
        )],
    );
    // A session that never ran is no history.
    crate::testutil::start_session(&store, "Add import", "full", &tasks);

    let prices = BTreeMap::from([(
        "sonnet".to_owned(),
        Price {
            input_per_mtok: 1.0,
            output_per_mtok: 2.0,
            cached_input_per_mtok: None,
        },
    )]);
    let h = History::read(&store, &prices, Some(&current)).unwrap();
    let ids: Vec<&SessionId> = h.ids().collect();
    assert_eq!(ids.len(), 3, "{ids:?}");
    assert!(ids.contains(&&first) && ids.contains(&&second) && ids.contains(&&fork));
    let w = h.reserve("writer", "claude").unwrap();
    // $0.25, $0.75, the fork's own $0.50 and the priced $0.002: the median is $0.375.
    assert!(close(w.usd, 0.375), "{w:?}");
    assert_eq!((w.tokens, w.runs, w.priced), (1500, 4, 4));
    // A fork is part of a session: the estimate of `full` is the first session's alone.
    let full = h.estimate("full", &BTreeMap::new());
    assert_eq!((full.basis, full.sessions), (Basis::Pipeline, 1));
    assert!(close(full.usd.unwrap().median, 1.0), "{full:?}");
    assert_eq!(h.reserve("critic", "codex").unwrap().priced, 0);
    let e = h.estimate("quick", &BTreeMap::new());
    assert_eq!((e.basis, e.sessions), (Basis::Pipeline, 1));
    assert!(close(e.usd.unwrap().median, 0.002));

    // Without `except`, the current session counts too.
    let all = History::read(&store, &prices, None).unwrap();
    assert_eq!(all.len(), 4);
    assert!(close(
        all.estimate("full", &BTreeMap::new()).usd.unwrap().high,
        50.0
    ));
}
