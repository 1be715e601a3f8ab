//! The protocol with fake members: the false-consensus check, Challenge and Synthesis, the
//! circuit breakers, send-backs, the transition table, and the builtin cast.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use super::*;

type Script = dyn Fn(&Turn, u32) -> Result<String, MemberError> + Send + Sync;

/// A member answering from a script given the turn and how many times it was asked.
struct Fake {
    calls: AtomicU32,
    script: Box<Script>,
    prompts: Mutex<Vec<String>>,
}

impl Member for Fake {
    fn agent(&self) -> &str {
        "fake"
    }
    fn speak(&self, turn: &Turn) -> Result<String, MemberError> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        self.prompts.lock().unwrap().push(turn.prompt.clone());
        (self.script)(turn, n)
    }
}

fn fake(
    script: impl Fn(&Turn, u32) -> Result<String, MemberError> + Send + Sync + 'static,
) -> Arc<Fake> {
    Arc::new(Fake {
        calls: AtomicU32::new(0),
        script: Box::new(script),
        prompts: Mutex::new(Vec::new()),
    })
}

/// A contribution meeting the contract of `turn` with `stance` and `reason` on one issue.
fn answer(turn: &Turn, stance: &str, reason: &str, changed: bool) -> String {
    let others: Vec<&str> = ["a", "b", "c", DEVIL]
        .into_iter()
        .filter(|r| *r != turn.role)
        .collect();
    let mut c = Contribution {
        text: format!("{} holds {stance}", turn.role),
        changed,
        why: "the arguments so far".into(),
        positions: vec![Stance {
            issue: "storage".into(),
            stance: stance.into(),
            reason: reason.into(),
        }],
        ..Contribution::default()
    };
    if matches!(turn.round, RoundKind::Challenge | RoundKind::Rebuttal) {
        c.critiques = vec![Critique {
            target: others[0].into(),
            weakness: "it ignores the migration cost".into(),
            failure: "the data outgrows one file".into(),
            alternative: "a server database".into(),
        }];
    }
    if turn.devil {
        c.assumptions = vec![
            "one writer".into(),
            "small data".into(),
            "no audit need".into(),
        ];
    }
    if turn.round == RoundKind::Synthesis {
        c.confidence = Some("MED".into());
        c.accepts = Some(vec!["a seam to swap it".into()]);
        c.will_not_concede = Some(vec![]);
        c.risks = Some(vec!["growth".into()]);
    }
    format!("```json\n{}\n```", serde_json::to_string(&c).unwrap())
}

fn devil() -> Arc<Fake> {
    fake(|t, _| {
        Ok(answer(
            t,
            "question the framing",
            "nobody stated the load",
            false,
        ))
    })
}

fn cast(members: Vec<(&str, Arc<Fake>)>) -> (Cast, BTreeMap<String, Arc<Fake>>) {
    let fakes: BTreeMap<String, Arc<Fake>> = members
        .into_iter()
        .map(|(r, f)| (r.to_owned(), f))
        .collect();
    let cast = Cast {
        members: fakes
            .iter()
            .map(|(r, f)| (r.clone(), Arc::clone(f) as Arc<dyn Member>))
            .collect(),
        moderator: Arc::new(builtin::BuiltinModerator),
    };
    (cast, fakes)
}

fn discussion(preset: Preset, turn_ms: u64) -> Discussion {
    Discussion::new(
        "SQLite or Postgres for the notes store",
        preset,
        &["a".into(), "b".into(), "c".into()],
        |_| "fake".into(),
        "builtin",
        Vec::new(),
        Limits {
            turn_ms,
            overall_ms: 60_000,
        },
    )
    .unwrap()
}

fn kinds(d: &Discussion) -> Vec<RoundKind> {
    d.rounds.iter().map(|r| r.kind).collect()
}

// (a) Everyone agrees for the same reason: the check finds surface agreement, the devil's
// advocate rebuts, and the discussion waits for the user, whose decision is recorded.
#[test]
fn same_reasons_are_a_false_consensus_with_rebuttal_and_pause() {
    let same = |t: &Turn, _| {
        Ok(answer(
            t,
            "SQLite",
            "it is a single file with no server to run",
            false,
        ))
    };
    let (c, fakes) = cast(vec![
        ("a", fake(same)),
        ("b", fake(same)),
        ("c", fake(same)),
        (DEVIL, devil()),
    ]);
    let mut d = discussion(Preset::Default, 5_000);
    run(&mut d, &c, &Vec::new());
    assert_eq!(kinds(&d), [RoundKind::Position, RoundKind::Rebuttal]);
    assert_eq!(d.rounds[0].state, Some(Convergence::Consensus));
    let check = d.rounds[0].check.as_ref().unwrap();
    assert!(check.surface && check.similarity >= 0.99, "{check:?}");
    // Only the devil's advocate speaks in the rebuttal.
    assert_eq!(d.rounds[1].turns.len(), 1);
    assert_eq!(d.rounds[1].turns[0].role, DEVIL);
    assert_eq!(d.status, Status::AwaitingDecision);
    assert_eq!(fakes["a"].calls.load(Ordering::SeqCst), 1);
    let doc = record::document(&d);
    assert!(doc.contains("--decide adopt"), "{doc}");
    d.decide(Decision::Adopt).unwrap();
    assert_eq!(d.status, Status::Ended(End::Adopted));
    assert_eq!(d.decisions, [Decision::Adopt]);
    assert!(record::document(&d).contains("the user adopted the consensus"));
    assert!(d.decide(Decision::Adopt).is_err());
}

#[test]
fn challenge_more_runs_another_challenge_and_synthesis() {
    let same = |t: &Turn, _| {
        Ok(answer(
            t,
            "SQLite",
            "it is a single file with no server to run",
            false,
        ))
    };
    let (c, _) = cast(vec![
        ("a", fake(same)),
        ("b", fake(same)),
        ("c", fake(same)),
        (DEVIL, devil()),
    ]);
    let mut d = discussion(Preset::Default, 5_000);
    run(&mut d, &c, &Vec::new());
    d.decide(Decision::Challenge).unwrap();
    run(&mut d, &c, &Vec::new());
    // Consensus after the Challenge leads to the check again, and to another pause.
    assert_eq!(
        kinds(&d),
        [
            RoundKind::Position,
            RoundKind::Rebuttal,
            RoundKind::Challenge,
            RoundKind::Rebuttal
        ]
    );
    assert_eq!(d.status, Status::AwaitingDecision);
}

#[test]
fn diverse_reasons_pass_the_false_consensus_check() {
    let reasons = [
        "it is a single file with no server to run",
        "our tests already create throwaway databases in memory per case",
        "the expected volume fits comfortably on a laptop for years",
    ];
    let member = |i: usize| fake(move |t, _| Ok(answer(t, "SQLite", reasons[i], false)));
    let (c, _) = cast(vec![
        ("a", member(0)),
        ("b", member(1)),
        ("c", member(2)),
        (DEVIL, devil()),
    ]);
    let mut d = discussion(Preset::Default, 5_000);
    run(&mut d, &c, &Vec::new());
    assert_eq!(kinds(&d), [RoundKind::Position]);
    assert!(!d.rounds[0].check.as_ref().unwrap().surface);
    assert_eq!(d.status, Status::Ended(End::Consensus));
}

// (b) Disagreement: Challenge, then Synthesis as the conflict stays unresolved.
#[test]
fn disagreement_goes_to_challenge_then_synthesis() {
    let stance =
        |s: &'static str| fake(move |t, _| Ok(answer(t, s, &format!("{s} suits us"), false)));
    let (c, fakes) = cast(vec![
        ("a", stance("SQLite")),
        ("b", stance("Postgres")),
        ("c", stance("files")),
        (DEVIL, devil()),
    ]);
    let mut d = discussion(Preset::Default, 5_000);
    run(&mut d, &c, &Vec::new());
    assert_eq!(
        kinds(&d),
        [
            RoundKind::Position,
            RoundKind::Challenge,
            RoundKind::Synthesis
        ]
    );
    assert_eq!(d.rounds[0].state, Some(Convergence::Divergent));
    assert_eq!(d.rounds[0].next, Next::Round(RoundKind::Challenge));
    assert_eq!(d.rounds[1].next, Next::Round(RoundKind::Synthesis));
    assert_eq!(d.status, Status::Ended(End::Split));
    // Position prompts hold no other member's output; the Challenge prompts do.
    for (role, f) in &fakes {
        let prompts = f.prompts.lock().unwrap();
        for other in fakes.keys().filter(|o| *o != role) {
            assert!(
                !prompts[0].contains(&format!("{other} holds")),
                "{role}: {}",
                prompts[0]
            );
        }
        assert!(
            fakes
                .keys()
                .filter(|o| *o != role)
                .any(|o| prompts[1].contains(&format!("{o} holds")))
        );
    }
    let doc = record::document(&d);
    for section in [
        "## Summary",
        "## Agreement matrix",
        "## Moderator ruling on split issues",
        "## Position history",
        "## Dissenting views",
        "## Devil's-advocate summary",
        "## Next actions",
    ] {
        assert!(doc.contains(section), "{section}: {doc}");
    }
    assert!(doc.contains("| storage | divergent |"), "{doc}");
    // Every minority view is kept.
    for s in ["**SQLite**", "**Postgres**", "**files**"] {
        assert!(doc.contains(s), "{s}: {doc}");
    }
}

#[test]
fn members_moving_to_two_poles_converge_and_skip_the_challenge() {
    let mover = |first: &'static str, then: &'static str| {
        fake(move |t, _| {
            if t.number == 1 {
                Ok(answer(t, first, "first look", false))
            } else {
                Ok(answer(t, then, "after the criticism", true))
            }
        })
    };
    let (c, _) = cast(vec![
        ("a", mover("SQLite", "SQLite")),
        ("b", mover("Postgres", "SQLite")),
        ("c", mover("files", "Postgres")),
        (DEVIL, devil()),
    ]);
    let mut d = discussion(Preset::Default, 5_000);
    run(&mut d, &c, &Vec::new());
    // Divergent → Challenge; after it two poles and members moving → Converging → Synthesis.
    assert_eq!(d.rounds[1].state, Some(Convergence::Converging));
    assert!(d.rounds[1].moving);
    assert_eq!(
        kinds(&d),
        [
            RoundKind::Position,
            RoundKind::Challenge,
            RoundKind::Synthesis
        ]
    );
}

// (c) One member times out: the others go on. Two: independent analyses.
#[test]
fn one_member_out_continues_two_out_fall_back() {
    let stance =
        |s: &'static str| fake(move |t, _| Ok(answer(t, s, &format!("{s} suits us"), false)));
    let slow = || {
        fake(|t, _| {
            std::thread::sleep(std::time::Duration::from_millis(1500));
            Ok(answer(t, "late", "late", false))
        })
    };
    let (c, _) = cast(vec![
        ("a", stance("SQLite")),
        ("b", stance("Postgres")),
        ("c", slow()),
        (DEVIL, devil()),
    ]);
    let mut d = discussion(Preset::Default, 300);
    run(&mut d, &c, &Vec::new());
    let out = d
        .seats
        .iter()
        .find(|s| s.role == "c")
        .unwrap()
        .out
        .clone()
        .unwrap();
    assert!(out.contains("turn limit"), "{out}");
    assert!(
        d.rounds[0]
            .notes
            .iter()
            .any(|n| n.contains("continues with the others")),
        "{:?}",
        d.rounds[0].notes
    );
    assert!(d.rounds.len() >= 2);
    assert_eq!(d.rounds[1].turns.len(), 3, "c is not asked again");
    assert!(!matches!(d.status, Status::Ended(End::FellBack)));

    let (c, _) = cast(vec![
        ("a", stance("SQLite")),
        ("b", slow()),
        ("c", slow()),
        (DEVIL, devil()),
    ]);
    let mut d = discussion(Preset::Default, 300);
    run(&mut d, &c, &Vec::new());
    assert_eq!(d.status, Status::Ended(End::FellBack));
    assert_eq!(d.rounds.len(), 1);
    assert!(
        d.rounds[0]
            .notes
            .iter()
            .any(|n| n.contains("falls back to the members' independent analyses"))
    );
    let doc = record::document(&d);
    assert!(doc.contains("### Independent analysis: a"), "{doc}");
}

#[test]
fn an_api_error_stops_the_protocol_and_says_so() {
    let stance = |s: &'static str| fake(move |t, _| Ok(answer(t, s, "x", false)));
    let broken = fake(|_, _| Err(MemberError::Api("HTTP 500 from the server".into())));
    let (c, _) = cast(vec![
        ("a", stance("SQLite")),
        ("b", stance("Postgres")),
        ("c", broken),
        (DEVIL, devil()),
    ]);
    let mut d = discussion(Preset::Default, 5_000);
    run(&mut d, &c, &Vec::new());
    assert_eq!(d.status, Status::Ended(End::ApiError));
    assert_eq!(d.rounds.len(), 1);
    assert!(
        d.rounds[0]
            .notes
            .iter()
            .any(|n| n.contains("API error (HTTP 500")),
        "{:?}",
        d.rounds[0].notes
    );
    assert!(record::document(&d).contains("The protocol stopped"));
}

// (d) An over-long or agreement-only Challenge contribution is sent back, then the member
// counts as unresponsive.
#[test]
fn out_of_contract_challenges_are_sent_back_then_unresponsive() {
    let stance =
        |s: &'static str| fake(move |t, _| Ok(answer(t, s, &format!("{s} suits us"), false)));
    let long = fake(|t, _| {
        if t.round == RoundKind::Challenge {
            let mut c: Contribution = serde_json::from_str(
                contract::json_block(&answer(t, "files", "plain files", false)).unwrap(),
            )
            .unwrap();
            c.text = "word ".repeat(250);
            Ok(serde_json::to_string(&c).unwrap())
        } else {
            Ok(answer(t, "files", "plain files", false))
        }
    });
    let agreeing = fake(|t, _| {
        if t.round == RoundKind::Challenge {
            Ok(serde_json::json!({
                "text": "I agree with the others, nothing to add",
                "changed": false, "why": "convinced",
                "positions": [{"issue": "storage", "stance": "SQLite", "reason": "fine"}]
            })
            .to_string())
        } else {
            Ok(answer(t, "Postgres", "it scales", false))
        }
    });
    let (c, fakes) = cast(vec![
        ("a", stance("SQLite")),
        ("b", agreeing),
        ("c", long),
        (DEVIL, devil()),
    ]);
    let mut d = discussion(Preset::Default, 5_000);
    run(&mut d, &c, &Vec::new());
    let challenge = &d.rounds[1];
    assert_eq!(challenge.kind, RoundKind::Challenge);
    let turn = |r: &str| challenge.turns.iter().find(|t| t.role == r).unwrap();
    assert_eq!(turn("c").sent_back.len(), CONTRACT_TRIES as usize);
    assert!(
        turn("c").sent_back[0].contains("at most 200"),
        "{:?}",
        turn("c").sent_back
    );
    assert!(
        turn("c")
            .unresponsive
            .as_ref()
            .unwrap()
            .contains("out of contract")
    );
    assert!(
        turn("b").sent_back[0].contains("critiques"),
        "{:?}",
        turn("b").sent_back
    );
    assert!(
        turn("b").sent_back[0].contains("agreement is not allowed"),
        "{:?}",
        turn("b").sent_back
    );
    // Each was asked three times in the Challenge, the problem in the prompt after the first.
    assert_eq!(fakes["c"].calls.load(Ordering::SeqCst), 1 + CONTRACT_TRIES);
    let prompts = fakes["c"].prompts.lock().unwrap();
    assert!(
        prompts[2].contains(crate::agents::prompt::RETRY_HEADING)
            && prompts[2].contains("at most 200")
    );
    // Two members out: the breaker falls back.
    assert_eq!(d.status, Status::Ended(End::FellBack));
}

#[test]
fn a_contribution_corrected_after_a_send_back_counts() {
    let stance =
        |s: &'static str| fake(move |t, _| Ok(answer(t, s, &format!("{s} suits us"), false)));
    let learns = fake(|t, n| {
        if t.round == RoundKind::Challenge
            && !t.prompt.contains(crate::agents::prompt::RETRY_HEADING)
        {
            Ok(r#"{"text": "fine", "changed": false, "why": "x", "positions": [{"issue": "storage", "stance": "files", "reason": "r"}]}"#.into())
        } else {
            let _ = n;
            Ok(answer(t, "files", "plain files", false))
        }
    });
    let (c, _) = cast(vec![
        ("a", stance("SQLite")),
        ("b", stance("Postgres")),
        ("c", learns),
        (DEVIL, devil()),
    ]);
    let mut d = discussion(Preset::Default, 5_000);
    run(&mut d, &c, &Vec::new());
    let t = d.rounds[1].turns.iter().find(|t| t.role == "c").unwrap();
    assert_eq!(t.sent_back.len(), 1);
    assert!(t.contribution.is_some() && t.unresponsive.is_none());
}

#[test]
fn the_devil_must_name_three_assumptions_and_final_positions_are_structured() {
    let who = contract::Speaker {
        role: DEVIL,
        devil: true,
        others: &["a".into()],
    };
    let c = Contribution {
        text: "t".into(),
        why: "w".into(),
        positions: vec![Stance {
            issue: "i".into(),
            stance: "s".into(),
            reason: "r".into(),
        }],
        assumptions: vec!["one".into(), "two".into()],
        ..Contribution::default()
    };
    let e = contract::check(&c, RoundKind::Position, &who).unwrap_err();
    assert!(e.contains("at least 3 implicit assumptions"), "{e}");
    let who = contract::Speaker {
        role: "a",
        devil: false,
        others: &[DEVIL.into()],
    };
    let e = contract::check(&c, RoundKind::Synthesis, &who).unwrap_err();
    for field in ["confidence", "accepts", "will_not_concede", "risks"] {
        assert!(e.contains(field), "{field}: {e}");
    }
    let mut long = c.clone();
    long.text = "w ".repeat(480);
    long.confidence = Some("HIGH".into());
    long.accepts = Some(vec!["x".into()]);
    long.will_not_concede = Some(vec![]);
    long.risks = Some(vec![]);
    // 480 words pass as a final position (500) and fail as a message (200).
    assert!(contract::check(&long, RoundKind::Synthesis, &who).is_ok());
    assert!(
        contract::check(&long, RoundKind::Position, &who)
            .unwrap_err()
            .contains("at most 200")
    );
}

// (e) The transition table, exactly as the reference gives it.
#[test]
fn the_transition_table_of_each_preset() {
    use Convergence::*;
    use Next::*;
    use RoundKind::*;
    let ch = Round(Challenge);
    let sy = Round(Synthesis);
    let table = [
        (Preset::Quick, [sy, sy, sy, Check]),
        (Preset::Default, [ch, ch, sy, Check]),
        (Preset::Deep, [ch, ch, ch, ch]),
    ];
    for (preset, row) in table {
        for (state, want) in [Divergent, Narrowing, Converging, Consensus]
            .into_iter()
            .zip(row)
        {
            assert_eq!(
                after(preset, Position, state, 1, 5),
                want,
                "{preset:?} {state:?}"
            );
        }
    }
    // A Challenge that would take the preset's last round is the Synthesis.
    assert_eq!(after(Preset::Default, Challenge, Divergent, 2, 3), sy);
    assert_eq!(after(Preset::Deep, Challenge, Consensus, 4, 5), sy);
    assert_eq!(after(Preset::Deep, Challenge, Consensus, 3, 5), ch);
    // After the Synthesis: the check on a consensus, else the end.
    assert_eq!(after(Preset::Deep, Synthesis, Consensus, 5, 5), Check);
    assert_eq!(after(Preset::Quick, Synthesis, Narrowing, 2, 2), Stop);
    assert_eq!(Preset::Quick.cap(), 2);
    assert_eq!(Preset::Default.cap(), 3);
    assert_eq!(Preset::Deep.cap(), 5);
}

#[test]
fn presets_run_their_rounds() {
    let stance =
        |s: &'static str| fake(move |t, _| Ok(answer(t, s, &format!("{s} suits us"), false)));
    let split = || {
        cast(vec![
            ("a", stance("SQLite")),
            ("b", stance("Postgres")),
            ("c", stance("files")),
            (DEVIL, devil()),
        ])
        .0
    };
    let mut q = discussion(Preset::Quick, 5_000);
    run(&mut q, &split(), &Vec::new());
    assert_eq!(kinds(&q), [RoundKind::Position, RoundKind::Synthesis]);
    let mut deep = discussion(Preset::Deep, 5_000);
    run(&mut deep, &split(), &Vec::new());
    use RoundKind::*;
    assert_eq!(
        kinds(&deep),
        [Position, Challenge, Challenge, Challenge, Synthesis]
    );
    // Deep forces a Challenge on a consensus.
    let reasons = [
        "a single file",
        "tests use in-memory copies",
        "volume is small for years",
    ];
    let member = |i: usize| fake(move |t, _| Ok(answer(t, "SQLite", reasons[i], false)));
    let (c, _) = cast(vec![
        ("a", member(0)),
        ("b", member(1)),
        ("c", member(2)),
        (DEVIL, devil()),
    ]);
    let mut deep = discussion(Preset::Deep, 5_000);
    run(&mut deep, &c, &Vec::new());
    assert_eq!(deep.rounds[0].state, Some(Convergence::Consensus));
    assert_eq!(
        kinds(&deep),
        [Position, Challenge, Challenge, Challenge, Synthesis]
    );
    assert_eq!(deep.status, Status::Ended(End::Consensus));
}

#[test]
fn classify_follows_the_definitions() {
    let rating = |issues: &[&[&[&str]]]| Rating {
        issues: issues
            .iter()
            .enumerate()
            .map(|(i, poles)| IssueRating {
                issue: format!("i{i}"),
                positions: poles
                    .iter()
                    .enumerate()
                    .map(|(j, m)| Pole {
                        stance: format!("s{j}"),
                        members: m.iter().map(|s| (*s).to_owned()).collect(),
                    })
                    .collect(),
            })
            .collect(),
        note: String::new(),
    };
    let topic: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
    let three: &[&[&str]] = &[&["a"], &["b"], &["c"]];
    let two: &[&[&str]] = &[&["a", "b"], &["c"]];
    let one: &[&[&str]] = &[&["a", "b", "c"]];
    assert_eq!(
        classify(&rating(&[three, two]), &topic, false),
        Convergence::Divergent
    );
    assert_eq!(
        classify(&rating(&[three, two, two]), &topic, false),
        Convergence::Narrowing
    );
    assert_eq!(
        classify(&rating(&[three, two, two]), &topic, true),
        Convergence::Converging
    );
    assert_eq!(
        classify(&rating(&[one, one]), &topic, false),
        Convergence::Consensus
    );
    // The devil's advocate's own pole does not break a consensus.
    let with_devil: &[&[&str]] = &[&["a", "b", "c"], &[DEVIL]];
    assert_eq!(
        classify(&rating(&[with_devil]), &topic, false),
        Convergence::Consensus
    );
}

#[test]
fn the_builtin_cast_runs_deterministically_and_says_so() {
    let go = || {
        let mut d = Discussion::new(
            "SQLite or Postgres or plain files for the notes store",
            Preset::Default,
            &DEFAULT_MEMBERS.map(String::from),
            |_| "builtin".into(),
            "builtin",
            Vec::new(),
            Limits::default(),
        )
        .unwrap();
        let roles: Vec<String> = d.seats.iter().map(|s| s.role.clone()).collect();
        let cast = Cast {
            members: d
                .seats
                .iter()
                .map(|s| {
                    (
                        s.role.clone(),
                        Arc::new(builtin::BuiltinMember::new(
                            &d.topic, &roles, &s.role, s.devil,
                        )) as Arc<dyn Member>,
                    )
                })
                .collect(),
            moderator: Arc::new(builtin::BuiltinModerator),
        };
        run(&mut d, &cast, &Vec::new());
        for r in &mut d.rounds {
            r.ms = 0;
            r.agent_ms = 0;
            for t in &mut r.turns {
                t.ms = 0;
            }
        }
        d.spent_ms = 0;
        d
    };
    let (a, b) = (go(), go());
    assert_eq!(a, b);
    assert!(
        a.rounds.iter().all(|r| r
            .turns
            .iter()
            .all(|t| t.sent_back.is_empty() && t.contribution.is_some())),
        "{:#?}",
        a.rounds
    );
    assert_eq!(
        kinds(&a),
        [
            RoundKind::Position,
            RoundKind::Challenge,
            RoundKind::Synthesis
        ]
    );
    assert_eq!(a.status, Status::Ended(End::Split));
    assert!(
        a.notes
            .iter()
            .any(|n| n.contains("builtin members take their places"))
    );
    assert!(record::document(&a).contains("builtin members take their places"));
}

#[test]
fn options_and_slugs() {
    assert_eq!(
        builtin::options("SQLite or Postgres?"),
        ["SQLite", "Postgres"]
    );
    assert_eq!(
        builtin::options("Storage: SQLite, Postgres, or files"),
        ["SQLite", "Postgres", "files"]
    );
    assert_eq!(builtin::options("Should we add caching").len(), 3);
    assert_eq!(
        slug("SQLite or Postgres? (notes)"),
        "sqlite-or-postgres-notes"
    );
}

#[test]
fn the_overall_limit_counts_the_time_of_earlier_runs() {
    let stance =
        |s: &'static str| fake(move |t, _| Ok(answer(t, s, &format!("{s} suits us"), false)));
    let (c, fakes) = cast(vec![
        ("a", stance("SQLite")),
        ("b", stance("Postgres")),
        ("c", stance("files")),
        (DEVIL, devil()),
    ]);
    let mut d = discussion(Preset::Default, 5_000);
    assert!(step(&mut d, &c, &Vec::new()).is_some());
    // As a resumed discussion would find it: the time already spent is kept.
    d.spent_ms = d.limits.overall_ms;
    assert!(step(&mut d, &c, &Vec::new()).is_none());
    assert_eq!(d.status, Status::Ended(End::TimedOut));
    assert_eq!(d.rounds.len(), 1);
    assert!(
        d.notes.iter().any(|n| n.contains("overall time limit")),
        "{:?}",
        d.notes
    );
    assert_eq!(fakes["a"].calls.load(Ordering::SeqCst), 1);
    // A round gets no more than what is left of the overall limit.
    let slow = || {
        fake(|t, _| {
            std::thread::sleep(std::time::Duration::from_millis(1500));
            Ok(answer(t, "late", "late", false))
        })
    };
    let (c, _) = cast(vec![
        ("a", slow()),
        ("b", slow()),
        ("c", slow()),
        (DEVIL, devil()),
    ]);
    let mut d = discussion(Preset::Default, 60_000);
    d.limits.overall_ms = 300;
    run(&mut d, &c, &Vec::new());
    // They would have answered within the turn limit, not within what was left overall.
    assert_eq!(d.status, Status::Ended(End::FellBack));
    assert!(
        d.rounds[0].turns[0]
            .unresponsive
            .as_ref()
            .unwrap()
            .contains("0.3 s"),
        "{:?}",
        d.rounds[0].turns[0]
    );
}
