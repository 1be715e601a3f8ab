//! Tests of the discuss rounds: the divergence and consensus rules as a table, rounds on
//! discovery contexts written for the purpose, the record, and rounds on the builtin agent's
//! real documents.

use std::collections::BTreeMap;

use super::config::{Config, Thresholds};
use super::{Critique, RiskLevel, Severity, consensus, diverge, run_round, severity};
use crate::agents::{Outcome, StateUpdate, TaskOutput};
use crate::quality::DiscussOutcome;
use crate::quality::checkpoint::tests::Harness;

fn thresholds() -> Thresholds {
    Thresholds {
        min_average: 3.0,
        low_rating: 2,
        spread: 3,
    }
}

fn critique(perspective: &str, rating: u8, missing: &[&str], risk: RiskLevel) -> Critique {
    Critique {
        perspective: perspective.into(),
        persona: String::new(),
        rating,
        strengths: Vec::new(),
        weaknesses: vec![format!("{perspective} weakness")],
        suggestions: Vec::new(),
        missing: missing.iter().map(|s| (*s).to_owned()).collect(),
        risk,
        topics: BTreeMap::new(),
        measured: Vec::new(),
    }
}

#[test]
fn divergence_and_consensus_rules() {
    use RiskLevel::*;
    use Severity::{High as H, Low as L, Medium as M};
    // (ratings, coverage gaps of the last critic, risk of the last critic) → (severity, consensus)
    type Row<'a> = (&'a [u8], &'a [&'a str], RiskLevel, Severity, bool);
    let table: &[Row<'_>] = &[
        (&[4, 4, 4], &[], Low, L, true),
        (&[3, 3, 3], &[], Medium, L, true),
        (&[5, 4, 3], &[], Low, L, true),
        (&[4, 4, 4], &["G-002"], Low, H, false),
        (&[4, 4, 4], &[], High, H, false),
        (&[5, 5, 5], &[], Critical, H, false),
        (&[4, 4, 2], &[], Low, M, true),
        (&[3, 3, 2], &[], Low, M, false),
        (&[5, 4, 2], &[], Low, M, true),
        (&[5, 3, 3], &[], Low, L, true),
        (&[5, 5, 1], &[], Low, M, true),
        (&[2, 2, 2], &[], Low, M, false),
        (&[5, 2, 2], &["REQ-003"], High, H, false),
        (&[5, 4, 4, 2, 4], &[], Low, M, true),
    ];
    let t = thresholds();
    for (ratings, missing, risk, want, agreed) in table {
        let n = ratings.len();
        let critiques: Vec<Critique> = ratings
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let last = i + 1 == n;
                critique(
                    &format!("p{i}"),
                    *r,
                    if last { missing } else { &[] },
                    if last { *risk } else { RiskLevel::Low },
                )
            })
            .collect();
        let d = diverge(&critiques, &t);
        let avg = ratings.iter().map(|r| f64::from(*r)).sum::<f64>() / n as f64;
        assert_eq!(
            severity(&d),
            *want,
            "{ratings:?} {missing:?} {risk:?}: {d:?}"
        );
        assert_eq!(
            consensus(&d, avg, &t),
            *agreed,
            "{ratings:?} {missing:?} {risk:?}"
        );
    }
}

#[test]
fn a_topic_judged_differently_is_a_low_divergence() {
    let mut a = critique("product", 4, &[], RiskLevel::Low);
    let mut b = critique("coverage", 4, &[], RiskLevel::Low);
    a.topics.insert("target users".into(), true);
    b.topics.insert("target users".into(), false);
    let d = diverge(&[a, b], &thresholds());
    assert_eq!(severity(&d), Severity::Low);
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].topic, "target users");
}

#[test]
fn the_builtin_rules_load_and_cover_every_round() {
    let c = Config::builtin().unwrap();
    assert_eq!(
        c.round["DISCUSS-001"].perspectives,
        ["product", "risk", "coverage"]
    );
    assert_eq!(
        c.round["DISCUSS-002"].perspectives,
        ["product", "technical", "quality", "coverage"]
    );
    assert_eq!(c.round["DISCUSS-003"].perspectives.len(), 5);
    assert!(c.round["DISCUSS-003"].last);
    let bad = super::config::BUILTIN
        .replace("metric = \"brief.goals\"\n", "metric = \"brief.nothing\"\n");
    let e = Config::parse("x.toml", &bad).unwrap_err().to_string();
    assert!(e.contains("unknown metric"), "{e}");
}

/// A round on a discovery context written for the test.
fn round_on_discovery(h: &Harness, json: serde_json::Value) -> DiscussOutcome {
    let (input, _) = h.claim("RESEARCH-001");
    let produced = TaskOutput {
        outcome: Outcome::Completed,
        summary: "scanned".into(),
        files: vec![(
            "spec/discovery-context.json".into(),
            serde_json::to_vec_pretty(&json).unwrap(),
        )],
        state_update: StateUpdate::default(),
    };
    run_round("DISCUSS-001", &input, &produced, &Default::default())
        .unwrap()
        .expect("DISCUSS-001 is a known round")
}

fn record(d: &DiscussOutcome) -> String {
    assert_eq!(d.files.len(), 1);
    String::from_utf8(d.files[0].1.clone()).unwrap()
}

#[test]
fn an_empty_discovery_context_diverges_high() {
    let h = Harness::new("spec-only");
    let d = round_on_discovery(
        &h,
        serde_json::json!({
            "session_id": "x", "phase": 1,
            "seed_analysis": { "problem_statement": "", "target_users": [], "exploration_dimensions": [], "constraints": [] },
            "codebase_context": null, "open_questions": [], "recommendations": [],
            "tech_profile": { "signals": [], "evidence": {}, "confidence": "low" }
        }),
    );
    assert_eq!(d.verdict.verdict, "HIGH", "{}", record(&d));
    assert!(
        d.verdict.summary.starts_with("consensus blocked, HIGH"),
        "{}",
        d.verdict.summary
    );
    let text = record(&d);
    assert!(text.contains("| coverage | Requirements Analyst | 1/5 | medium | problem statement, target users, codebase context |"), "{text}");
    assert!(
        d.action_items
            .iter()
            .any(|a| a.starts_with("[coverage") && a.contains("problem statement")),
        "{:?}",
        d.action_items
    );
    assert!(d.verdict.score.unwrap() < 3.0);
}

#[test]
fn a_good_discovery_context_diverges_low_and_the_record_says_why() {
    let h = Harness::new("spec-only");
    let d = round_on_discovery(
        &h,
        serde_json::json!({
            "session_id": "x", "phase": 1,
            "seed_analysis": {
                "problem_statement": "Users who forget their password cannot get back into their account.",
                "target_users": ["users"],
                "exploration_dimensions": ["architecture", "security", "testing", "integration"],
                "constraints": ["Reset links must expire after 30 minutes."],
                "domain": "web"
            },
            "codebase_context": { "file_count": 6, "languages": [] },
            "open_questions": ["Which mail service sends the links?"],
            "recommendations": ["Verify with `cargo test` (cargo)"],
            "tech_profile": { "signals": ["auth_detected"], "evidence": {}, "confidence": "medium" }
        }),
    );
    let text = record(&d);
    assert_eq!(d.verdict.verdict, "LOW", "{text}");
    assert_eq!(d.verdict.score, Some(5.0), "{text}");
    assert!(
        d.verdict.summary.starts_with("consensus reached, LOW"),
        "{}",
        d.verdict.summary
    );
    assert_eq!(d.files[0].0, "discussions/DISCUSS-001-discussion.md");
    for needle in [
        "# DISCUSS-001 discussion",
        "- Round: DISCUSS-001 after RESEARCH-001",
        "- Artifact: `spec/discovery-context.json`",
        "- Perspectives: product, risk, coverage",
        "- Consensus: reached",
        "- Divergence: LOW",
        "- Average Rating: 5.0 / 5",
        "| product | Product Manager | 5/5 | low | none |",
        "| risk | Risk Analyst | 5/5 | low | none |",
        "### Coverage (Requirements Analyst): 5/5",
        "- The problem is stated (67 characters)",
        "- target users: good (product, coverage)",
        "## Divergent Views\n\nNone.",
        "## Action Items\n\nNone.",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
    assert!(d.action_items.is_empty());
}

#[test]
fn unacknowledged_high_impact_signals_are_a_high_risk() {
    let h = Harness::new("spec-only");
    let d = round_on_discovery(
        &h,
        serde_json::json!({
            "seed_analysis": {
                "problem_statement": "Users who forget their password cannot get back into their account.",
                "target_users": ["users"],
                "exploration_dimensions": ["architecture", "security", "testing"],
                "constraints": ["Links expire."]
            },
            "codebase_context": { "file_count": 6 },
            "open_questions": [],
            "recommendations": ["Verify with `cargo test`"],
            "tech_profile": { "signals": ["sql_detected", "auth_detected", "data_migration"] }
        }),
    );
    let text = record(&d);
    assert_eq!(d.verdict.verdict, "HIGH", "{text}");
    assert!(
        text.contains("| risk | Risk Analyst |") && text.contains("| critical |"),
        "{text}"
    );
    assert!(
        text.contains("SQL meets authentication, schema migration"),
        "{text}"
    );
}

#[test]
fn unknown_rounds_are_not_run_and_a_missing_artifact_is_high() {
    let h = Harness::new("spec-only");
    let (input, _) = h.claim("RESEARCH-001");
    let nothing = TaskOutput {
        outcome: Outcome::Completed,
        summary: String::new(),
        files: Vec::new(),
        state_update: StateUpdate::default(),
    };
    assert!(
        run_round("DISCUSS-009", &input, &nothing, &Default::default())
            .unwrap()
            .is_none()
    );
    let d = run_round("DISCUSS-001", &input, &nothing, &Default::default())
        .unwrap()
        .unwrap();
    assert_eq!(d.verdict.verdict, "HIGH");
    assert!(
        record(&d).contains("| HIGH | artifact missing | round |"),
        "{}",
        record(&d)
    );
    assert!(d.action_items[0].contains("spec/discovery-context.json"));
}

#[test]
fn rounds_on_the_builtin_documents_do_not_diverge_high() {
    let h = Harness::new("full-lifecycle");
    let (input, output) = h.run_builtin("RESEARCH-001");
    let d1 = run_round("DISCUSS-001", &input, &output, &Default::default())
        .unwrap()
        .unwrap();
    assert_ne!(d1.verdict.verdict, "HIGH", "{}", record(&d1));
    h.run_builtin("DRAFT-001");
    let (input, output) = h.run_builtin("DRAFT-002");
    let d2 = run_round("DISCUSS-002", &input, &output, &Default::default())
        .unwrap()
        .unwrap();
    let text = record(&d2);
    assert_ne!(d2.verdict.verdict, "HIGH", "{text}");
    assert!(
        text.contains("- Perspectives: product, technical, quality, coverage"),
        "{text}"
    );
    assert!(
        text.contains("- Every goal of the brief has a requirement"),
        "{text}"
    );
    h.checkpoint("CHECKPOINT-001", |_| {});
    h.run_builtin("DRAFT-003");
    h.run_builtin("DRAFT-004");
    h.checkpoint("CHECKPOINT-002", |_| {});
    let (input, ctx) = h.claim("QUALITY-001");
    let produced = crate::quality::run(&input, &ctx).unwrap().output;
    assert_eq!(produced.outcome, Outcome::Completed, "{}", produced.summary);
    let d3 = run_round("DISCUSS-003", &input, &produced, &Default::default())
        .unwrap()
        .unwrap();
    let text = record(&d3);
    assert_ne!(d3.verdict.verdict, "HIGH", "{text}");
    assert!(
        text.contains("- Artifact: `spec/readiness-report.md`"),
        "{text}"
    );
    assert!(text.contains("- Recommendation:"), "{text}");

    // The same spec without its stories: the coverage perspective finds the gap.
    let mut input = input;
    input
        .folder
        .retain(|k, _| !k.starts_with("spec/epics/EPIC-"));
    let d = run_round("DISCUSS-003", &input, &produced, &Default::default())
        .unwrap()
        .unwrap();
    assert_eq!(d.verdict.verdict, "HIGH", "{}", record(&d));
    assert!(
        record(&d).contains("- Recommendation: escalate"),
        "{}",
        record(&d)
    );
}

/// A critic agent that answers with `answer` (a critique file, or nothing).
struct CriticAgent(Option<String>);

impl crate::agents::command::Driver for CriticAgent {
    fn name(&self) -> &str {
        "critic-agent"
    }
    fn run(
        &self,
        input: &crate::agents::TaskInput,
        _ctx: &crate::agents::command::RunContext,
    ) -> tlv4_core::error::Result<crate::agents::command::DriverOutput> {
        assert_eq!(input.task.role, tlv4_core::model::Role::Critic);
        assert!(input.task.description.contains("product perspective"));
        assert!(input.task.description.contains("Round: DISCUSS-001"));
        let path = "discussions/DISCUSS-001-product.json".to_owned();
        let files = self
            .0
            .iter()
            .map(|a| (path.clone(), a.clone().into_bytes()))
            .collect();
        Ok(crate::agents::command::DriverOutput {
            output: TaskOutput {
                outcome: Outcome::Completed,
                summary: "judged".into(),
                files,
                state_update: StateUpdate::default(),
            },
            prompt: String::new(),
            raw: String::new(),
            transcript: None,
            usage: crate::agents::command::Usage {
                input_tokens: 7,
                ..Default::default()
            },
        })
    }
}

#[test]
fn an_agent_critic_adds_to_the_rules_never_replaces_them() {
    let h = Harness::new("full-lifecycle");
    let (input, output) = h.run_builtin("RESEARCH-001");
    let rules = run_round("DISCUSS-001", &input, &output, &Default::default())
        .unwrap()
        .unwrap();
    let agent = |answer: Option<&str>| {
        let mut agents = super::Perspectives::new();
        agents.insert(
            "product".into(),
            std::sync::Arc::new(CriticAgent(answer.map(str::to_owned)))
                as std::sync::Arc<dyn crate::agents::command::Driver>,
        );
        let d = run_round("DISCUSS-001", &input, &output, &agents)
            .unwrap()
            .unwrap();
        // What the critic cost goes to the run record.
        assert_eq!(d.usage.len(), 1);
        assert_eq!(
            (d.usage[0].0.as_str(), d.usage[0].1.as_str()),
            ("product", "critic-agent")
        );
        assert_eq!(d.usage[0].2.input_tokens, 7);
        record(&d)
    };
    let text = agent(Some(
        r#"{"rating": 2, "strengths": [], "weaknesses": ["No pricing question is asked"], "suggestions": ["Ask who pays"], "missing": [], "risk": "high"}"#,
    ));
    assert!(
        text.contains("No pricing question is asked (agent critic-agent)"),
        "{text}"
    );
    assert!(
        text.contains("agent critic-agent: rating 2, risk high"),
        "{text}"
    );
    // The rules' own findings are all still there.
    let summary = [
        "- Round",
        "- Artifact",
        "- Perspectives",
        "- Consensus",
        "- Divergence",
        "- Average",
        "- Recommendation",
    ];
    let findings: Vec<String> = record(&rules)
        .lines()
        .filter(|l| l.starts_with("- ") && !summary.iter().any(|s| l.starts_with(s)))
        .map(str::to_owned)
        .collect();
    assert!(findings.len() >= 3, "{findings:?}");
    for line in &findings {
        assert!(text.contains(line), "lost `{line}`:\n{text}");
    }
    // A rating of 2 is MEDIUM at least; a high risk is HIGH.
    assert!(text.contains("HIGH"), "{text}");

    // No file, or a broken one: the rules alone judge, and the record says so.
    let text = agent(None);
    assert!(
        text.contains("no critique (it wrote no discussions/DISCUSS-001-product.json)"),
        "{text}"
    );
    let text = agent(Some(r#"{"rating": 9, "risk": "low"}"#));
    assert!(text.contains("rating 9 is not between 1 and 5"), "{text}");
}

#[test]
fn the_modes_of_discuss_mode_write_and_read_the_same_task_values() {
    use super::{Mode, assign_rounds};
    use crate::quality::protocol::Preset;
    let task = |round: &str| tlv4_core::model::Task {
        id: "DRAFT-001".parse().unwrap(),
        role: tlv4_core::model::Role::Writer,
        status: tlv4_core::model::TaskStatus::Pending,
        blocked_by: Vec::new(),
        phase: "draft".into(),
        priority: tlv4_core::model::Priority::P0,
        discuss: Some(round.into()),
        inner_loop: false,
        attempts: 0,
        description: String::new(),
        owner: None,
        result: None,
    };
    let cases = [
        ("critique", "DISCUSS-001", Mode::Critique),
        (
            "protocol",
            "DISCUSS-001+protocol",
            Mode::Protocol(Preset::Default),
        ),
        (
            "protocol-default",
            "DISCUSS-001+protocol",
            Mode::Protocol(Preset::Default),
        ),
        (
            "protocol-quick",
            "DISCUSS-001+protocol-quick",
            Mode::Protocol(Preset::Quick),
        ),
        (
            "protocol-deep",
            "DISCUSS-001+protocol-deep",
            Mode::Protocol(Preset::Deep),
        ),
    ];
    for (name, stored, mode) in cases {
        assert_eq!(Mode::named(name), Some(mode), "{name}");
        let mut tasks = [task("DISCUSS-001")];
        let modes = BTreeMap::from([("DISCUSS-001".to_owned(), name.to_owned())]);
        assign_rounds(&mut tasks, "current", &modes).unwrap();
        assert_eq!(tasks[0].discuss.as_deref(), Some(stored), "{name}");
        assert_eq!(Mode::of_round(stored), ("DISCUSS-001", mode), "{name}");
    }
    // A preset a newer version added runs as the default one here; the value stays as stored.
    assert_eq!(
        Mode::of_round("DISCUSS-001+protocol-marathon"),
        ("DISCUSS-001", Mode::Protocol(Preset::Default))
    );
    let mut tasks = [task("DISCUSS-001")];
    let modes = BTreeMap::from([("DISCUSS-001".to_owned(), "debate".to_owned())]);
    let (key, message) = assign_rounds(&mut tasks, "current", &modes).unwrap_err();
    assert_eq!(key, "discuss.mode.DISCUSS-001");
    assert!(message.contains("unknown mode `debate`"), "{message}");
}
