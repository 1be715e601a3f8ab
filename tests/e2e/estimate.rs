//! `git tlv4 cost --estimate`: what a pipeline will cost here, read from the ledgers of the
//! earlier sessions and checked against what `cost` sums from each of them; and the line
//! `start` shows on a terminal.

use crate::citizen::on_a_terminal;
use crate::common::{TestRepo, fixture};

/// The configuration: the executor is the fake Claude Code, reporting `usd` per run, and
/// the default pipeline is `wide`. Trusted.
fn claude_costing(repo: &TestRepo, usd: &str) {
    repo.write(
        ".tlv4.toml",
        &format!(
            "[session]\npipeline = \"wide\"\n[agents.cc]\ndriver = \"claude\"\nprogram = \"{}\"\n\
             model = \"sonnet\"\nenv = {{ FAKE_COST_USD = \"{usd}\" }}\n[roles]\nexecutor = \"cc\"\n",
            fixture("fake-claude")
        ),
    );
    repo.ok(&["trust"]);
}

const START: [&str; 6] = [
    "start",
    "--pipeline",
    "wide",
    "--yes",
    "--completion",
    "keep",
];

fn close(a: &serde_json::Value, b: f64) -> bool {
    a.as_f64().is_some_and(|a| (a - b).abs() < 1e-9)
}

#[test]
fn an_estimate_is_the_median_and_spread_of_the_earlier_sessions_ledgers() {
    let repo = TestRepo::new();
    repo.wide_pipeline(1);
    // The same session three times, its agent reporting a different cost each time.
    let mut usd = Vec::new();
    let mut tokens = Vec::new();
    let mut sids = Vec::new();
    for (cost, text) in [
        ("0.01", "first run"),
        ("0.03", "second run"),
        ("0.02", "third run"),
    ] {
        claude_costing(&repo, cost);
        let mut args = START.to_vec();
        args.push(text);
        let out = repo.tlv4(&args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // Off a terminal, `start` says nothing of an estimate.
        assert!(!String::from_utf8_lossy(&out.stderr).contains("estimated"));
        let sid = String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()
            .unwrap()
            .to_owned();
        let cost = repo.json(&["--session", &sid, "cost", "--json"]);
        sids.push(sid);
        usd.push(cost["total"]["cost_usd"].as_f64().unwrap());
        tokens.push(
            cost["total"]["input_tokens"].as_u64().unwrap()
                + cost["total"]["output_tokens"].as_u64().unwrap(),
        );
    }
    let mut sorted = usd.clone();
    sorted.sort_by(f64::total_cmp);
    assert!(sorted[0] > 0.0 && sorted[0] < sorted[2], "{usd:?}");

    // The default pipeline is the configuration's.
    let est = repo.json(&["cost", "--estimate", "--json"]);
    assert_eq!(est["schema"], 1);
    assert_eq!(est["pipeline"], "wide");
    assert_eq!(est["basis"], "pipeline");
    assert_eq!(
        (est["sessions"].as_u64(), est["priced_sessions"].as_u64()),
        (Some(3), Some(3))
    );
    let total = &est["usd"];
    assert!(
        close(&total["median"], sorted[1])
            && close(&total["low"], sorted[0])
            && close(&total["high"], sorted[2]),
        "{est}"
    );
    // Each of the sessions, the repeated one too, lies within the spread.
    for u in &usd {
        assert!(total["low"].as_f64().unwrap() <= *u && *u <= total["high"].as_f64().unwrap());
    }
    tokens.sort_unstable();
    assert_eq!(est["tokens"]["median"].as_u64(), Some(tokens[1]), "{est}");
    let lines = est["lines"].as_array().unwrap();
    let exec = lines
        .iter()
        .find(|l| l["role"] == "executor")
        .unwrap_or_else(|| panic!("{est}"));
    assert_eq!(exec["agent"], "cc");
    assert_eq!(exec["runs"].as_f64(), Some(1.0));
    assert!(close(&exec["per_run"]["usd"], 0.02), "{exec}");
    assert_eq!(exec["per_run"]["runs"].as_u64(), Some(3));

    let table = repo.ok(&["cost", "--estimate", "--pipeline", "wide"]);
    let expected = format!(
        "estimated: ${:.4} ({:.4}–{:.4} over 3 earlier sessions of wide), {} ({}–{}) tokens",
        sorted[1], sorted[0], sorted[2], tokens[1], tokens[0], tokens[2]
    );
    assert!(table.contains(&expected), "{table}\nexpected: {expected}");
    assert!(
        table.contains("executor") && table.contains("cc"),
        "{table}"
    );

    // For a session, the estimate is of its pipeline, from the other sessions: the first
    // and the second here.
    let other = repo.json(&["--session", &sids[2], "cost", "--estimate", "--json"]);
    assert_eq!(
        (other["pipeline"].as_str(), other["sessions"].as_u64()),
        (Some("wide"), Some(2))
    );
    assert!(
        close(&other["usd"]["median"], (usd[0] + usd[1]) / 2.0)
            && close(&other["usd"]["low"], usd[0])
            && close(&other["usd"]["high"], usd[1]),
        "{other}"
    );

    // An unknown pipeline is refused.
    let err = repo.fails(&["cost", "--estimate", "--pipeline", "nosuch"], 1);
    assert!(err.contains("unknown pipeline `nosuch`"), "{err}");

    // On a terminal, `start` shows the estimate before it runs (the new session left out).
    if let Some(shown) = on_a_terminal(
        &repo,
        "git tlv4 start --pipeline wide --yes --completion keep 'fourth run'",
        &[],
    ) {
        assert!(shown.contains(&format!("  {expected}")), "{shown}");
    }
    repo.fsck();
}

#[test]
fn with_no_earlier_session_an_estimate_says_so() {
    let repo = TestRepo::new();
    let out = repo.ok(&["cost", "--estimate"]);
    assert_eq!(
        out.trim(),
        "no earlier session of this repository to estimate from; run one, then ask again"
    );
    // A session that never ran an agent is no history either.
    repo.start("full-lifecycle", "add a health check");
    let est = repo.json(&["cost", "--estimate", "--json"]);
    assert_eq!(est["schema"], 1);
    assert_eq!(est["basis"], "nothing");
    assert_eq!(est["sessions"], 0);
    assert_eq!(est["usd"], serde_json::Value::Null);
    assert_eq!(est["lines"], serde_json::json!([]));
    assert!(
        repo.ok(&["cost", "--estimate"])
            .contains("no earlier session")
    );
}
