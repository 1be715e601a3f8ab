//! `git tlv4 discuss`: discussions between fake agent members, run as sessions and checked
//! with git — the false-consensus pause, Challenge and Synthesis, members that time out or
//! break the contract, the presets, a crash resumed, and fork, replay and export.

use std::path::Path;

use crate::common::{TestRepo, WAITING, fixture};

const TOPIC: &str = "SQLite or Postgres for the notes store";

/// A trusted repository whose discussion seats are all the fake discuss agent in `mode`,
/// with `env` added to its environment.
fn members(mode: &str, env: &[(&str, &str)]) -> TestRepo {
    let repo = TestRepo::new();
    let mut vars = vec![format!("DISCUSS_MODE = \"{mode}\"")];
    vars.extend(env.iter().map(|(k, v)| format!("{k} = \"{v}\"")));
    // The folders of the files it logs to, which its sandbox must let it write.
    let writes: Vec<String> = env
        .iter()
        .filter(|(_, v)| v.starts_with('/'))
        .filter_map(|(_, v)| {
            Some(format!(
                "\"{}\"",
                std::path::Path::new(v).parent()?.display()
            ))
        })
        .collect();
    repo.write(
        ".tlv4.toml",
        &format!(
            "[agents.fake]\ndriver = \"command\"\nprogram = \"{}\"\ntimeout = \"20s\"\nwrites = [{}]\nenv = {{ {} }}\n[discuss.members]\ndefault = \"fake\"\n",
            fixture("discuss-agent"),
            writes.join(", "),
            vars.join(", ")
        ),
    );
    repo.git(&["add", ".tlv4.toml"]);
    repo.git(&["commit", "-q", "-m", "members"]);
    repo.ok(&["trust"]);
    repo
}

/// Runs `discuss` with `args` and returns the session id (the first line of stdout).
fn discuss(repo: &TestRepo, args: &[&str]) -> String {
    let mut all = vec!["discuss"];
    all.extend_from_slice(args);
    repo.runs(&all).lines().next().unwrap().trim().to_owned()
}

fn dir(sid: &str) -> String {
    format!(".tlv4/sessions/{sid}")
}

/// `discussion.json` at the session's tip.
fn state(repo: &TestRepo, sid: &str) -> serde_json::Value {
    let slug = slug_of(repo, sid);
    serde_json::from_str(&repo.git(&[
        "show",
        &format!("tlv4/{sid}:{}/discussions/{slug}/discussion.json", dir(sid)),
    ]))
    .unwrap()
}

fn slug_of(repo: &TestRepo, sid: &str) -> String {
    repo.git(&[
        "log",
        "--format=%(trailers:key=Tlv4-Discussion,valueonly)",
        &format!("tlv4/{sid}"),
    ])
    .lines()
    .map(str::trim)
    .find(|l| !l.is_empty())
    .unwrap_or_else(|| panic!("{sid} has no discussion event"))
    .to_owned()
}

/// The `Tlv4-Discussion-Round` trailers of the session, oldest first.
fn rounds(repo: &TestRepo, sid: &str) -> Vec<String> {
    repo.git(&[
        "log",
        "--reverse",
        "--format=%(trailers:key=Tlv4-Discussion-Round,valueonly,separator=)",
        &format!("tlv4/{sid}"),
    ])
    .lines()
    .filter(|l| !l.trim().is_empty())
    .map(str::to_owned)
    .collect()
}

/// How many `discuss_round` events the session has, and its `Tlv4-Event` trailers.
fn round_events(repo: &TestRepo, sid: &str) -> (usize, String) {
    let events = repo.git(&[
        "log",
        "--format=%(trailers:key=Tlv4-Event,valueonly)",
        &format!("tlv4/{sid}"),
    ]);
    let n = events
        .lines()
        .filter(|l| l.trim() == "discuss_round")
        .count();
    (n, events)
}

fn show(repo: &TestRepo, sid: &str, path: &str) -> String {
    repo.git(&["show", &format!("tlv4/{sid}:{path}")])
}

fn round_file(repo: &TestRepo, sid: &str, round: &str, file: &str) -> String {
    let slug = slug_of(repo, sid);
    show(
        repo,
        sid,
        &format!("{}/discussions/{slug}/{round}/{file}", dir(sid)),
    )
}

fn document(repo: &TestRepo, sid: &str) -> String {
    let tree = repo.git(&[
        "ls-tree",
        "-r",
        "--name-only",
        &format!("tlv4/{sid}"),
        "docs/specs/",
    ]);
    let suffix = format!("-discussion-{}.md", slug_of(repo, sid));
    let path = tree
        .lines()
        .find(|l| l.ends_with(&suffix))
        .unwrap_or_else(|| panic!("{tree}"));
    show(repo, sid, path)
}

// (a) Everyone agrees for the same reason: the check catches it, the devil's advocate
// rebuts, the session pauses, and the user's decision is an event.
#[test]
fn a_false_consensus_is_rebutted_and_waits_for_the_user() {
    let repo = members("same", &[]);
    let sid = discuss(&repo, &[TOPIC]);
    assert_eq!(rounds(&repo, &sid), ["1 position", "2 rebuttal"]);
    let s = repo.json(&["--session", &sid, "status", "--json"]);
    assert_eq!(s["session"]["status"], "paused", "{s}");
    assert_eq!(s["control"]["pause"]["kind"], "discuss", "{s}");
    // `status` says where the discussion stands.
    let d = &s["discussion"];
    assert_eq!(
        (&d["status"], &d["rounds"], &d["last"], &d["state"]),
        (
            &serde_json::json!("awaiting_decision"),
            &serde_json::json!(2),
            &serde_json::json!("rebuttal"),
            &serde_json::json!("CONSENSUS")
        ),
        "{s}"
    );
    let text = repo.ok(&["--session", &sid, "status"]);
    assert!(
        text.contains("  discussion preset default, 2 round(s), last rebuttal (CONSENSUS); waiting for your decision"),
        "{text}"
    );
    let moderator: serde_json::Value =
        serde_json::from_str(&round_file(&repo, &sid, "01-position", "moderator.json")).unwrap();
    assert_eq!(moderator["state"], "CONSENSUS");
    assert_eq!(moderator["check"]["surface"], true, "{moderator}");
    let rebuttal: serde_json::Value =
        serde_json::from_str(&round_file(&repo, &sid, "02-rebuttal", "devil.json")).unwrap();
    assert!(
        !rebuttal["contribution"]["critiques"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    assert!(document(&repo, &sid).contains("--decide adopt"));
    repo.ok(&["--session", &sid, "discuss", "--decide", "adopt"]);
    let decision = repo.git(&[
        "log",
        "-1",
        "--format=%(trailers:key=Tlv4-Event,valueonly) %(trailers:key=Tlv4-Decision,valueonly)",
        "--grep=Tlv4-Decision",
        &format!("tlv4/{sid}"),
    ]);
    assert_eq!(
        decision.split_whitespace().collect::<Vec<_>>(),
        ["user_decision", "adopt"]
    );
    assert_eq!(state(&repo, &sid)["end"], "adopted");
    assert_eq!(
        repo.json(&["--session", &sid, "status", "--json"])["session"]["status"],
        "completed"
    );
    assert!(document(&repo, &sid).contains("the user adopted the consensus"));
    repo.fsck();
}

// (b) Members disagree: Challenge, then Synthesis; one event and one file per member per
// round; the Position prompts hold no other member's output.
#[test]
fn disagreement_runs_challenge_then_synthesis_with_every_file_recorded() {
    let repo = members("split", &[]);
    let sid = discuss(&repo, &[TOPIC]);
    assert_eq!(
        rounds(&repo, &sid),
        ["1 position", "2 challenge", "3 synthesis"]
    );
    assert_eq!(round_events(&repo, &sid).0, 3);
    let slug = slug_of(&repo, &sid);
    let files = repo.git(&[
        "ls-tree",
        "-r",
        "--name-only",
        &format!("tlv4/{sid}"),
        &format!("{}/discussions/{slug}/", dir(&sid)),
    ]);
    for round in ["01-position", "02-challenge", "03-synthesis"] {
        for member in ["advocate", "skeptic", "pragmatist", "devil"] {
            for ext in ["json", "md"] {
                let p = format!("{}/discussions/{slug}/{round}/{member}.{ext}", dir(&sid));
                assert!(files.contains(&p), "{p} in {files}");
            }
        }
    }
    let stances = [
        ("advocate", "SQLite"),
        ("skeptic", "Postgres"),
        ("pragmatist", "files"),
    ];
    for (member, _) in stances {
        let position = round_file(&repo, &sid, "01-position", &format!("prompts/{member}.md"));
        let challenge = round_file(&repo, &sid, "02-challenge", &format!("prompts/{member}.md"));
        for (other, stance) in stances.iter().filter(|(o, _)| *o != member) {
            let said = format!("{other} holds {stance}");
            assert!(
                !position.contains(&said),
                "{member}'s Position prompt shows {other}"
            );
            assert!(
                challenge.contains(&said),
                "{member}'s Challenge prompt lacks {other}"
            );
        }
    }
    let doc = document(&repo, &sid);
    for section in [
        "## Summary",
        "## Agreement matrix",
        "## Moderator ruling on split issues",
        "## Position history",
        "## Dissenting views",
        "## Devil's-advocate summary",
        "## Next actions",
    ] {
        assert!(doc.contains(section), "{section}");
    }
    assert!(doc.contains("**Postgres** on storage (skeptic)"), "{doc}");
    assert_eq!(state(&repo, &sid)["end"], "split");
    repo.fsck();
}

// (c) One member times out: the discussion continues with the others. Two: the fallback. The
// turn limit leaves the members that answer time to start on a loaded machine.
#[test]
fn members_that_time_out_are_left_out_then_the_discussion_falls_back() {
    let repo = members("pragmatist=sleep,*=split", &[("DISCUSS_SLEEP", "30")]);
    let sid = discuss(&repo, &["--turn-timeout", "5s", TOPIC]);
    let s = state(&repo, &sid);
    let seat = s["seats"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["role"] == "pragmatist")
        .unwrap()
        .clone();
    assert!(
        seat["out"].as_str().unwrap().contains("turn limit"),
        "{seat}"
    );
    assert_eq!(
        rounds(&repo, &sid),
        ["1 position", "2 challenge", "3 synthesis"]
    );
    assert!(!round_file(&repo, &sid, "02-challenge", "moderator.json").is_empty());
    let body = repo.git(&["log", "--format=%B", &format!("tlv4/{sid}")]);
    assert!(body.contains("continues with the others"), "{body}");

    let repo = members(
        "pragmatist=sleep,skeptic=sleep,*=split",
        &[("DISCUSS_SLEEP", "30")],
    );
    let sid = discuss(&repo, &["--turn-timeout", "5s", TOPIC]);
    assert_eq!(rounds(&repo, &sid), ["1 position"]);
    assert_eq!(state(&repo, &sid)["end"], "fell_back");
    let doc = document(&repo, &sid);
    assert!(doc.contains("Independent analysis: advocate"), "{doc}");
    assert!(
        doc.contains("falls back to the members' independent analyses"),
        "{doc}"
    );
    repo.fsck();
}

// An API error is a breaker of its own: a member whose model server answers HTTP 500 (after
// the driver's retries) stops the protocol for the session, and the record says so; a member
// that answers badly only leaves.
#[test]
fn a_model_server_that_fails_stops_the_protocol_for_the_session() {
    let server = crate::agents::Server::start_with("fail=500");
    let repo = members("split", &[]);
    let toml = std::fs::read_to_string(repo.path().join(".tlv4.toml")).unwrap();
    repo.write(
        ".tlv4.toml",
        &format!(
            "[agents.local]\ndriver = \"openai\"\nurl = \"http://127.0.0.1:{}/v1\"\nmodel = \"member-model\"\n{toml}pragmatist = \"local\"\n",
            server.port
        ),
    );
    repo.ok(&["trust"]);
    let sid = discuss(&repo, &[TOPIC]);
    // The driver asked three times (its retries), then the breaker stopped the protocol
    // after the Position round.
    assert_eq!(server.requests().len(), 3, "{:?}", server.requests());
    assert_eq!(rounds(&repo, &sid), ["1 position"]);
    let s = state(&repo, &sid);
    assert_eq!(s["end"], "api_error", "{s}");
    let turn: serde_json::Value =
        serde_json::from_str(&round_file(&repo, &sid, "01-position", "pragmatist.json")).unwrap();
    assert!(
        turn["unresponsive"]
            .as_str()
            .unwrap()
            .contains("API error: agent `local` (openai): http://127.0.0.1"),
        "{turn}"
    );
    let body = repo.git(&["log", "--format=%B", &format!("tlv4/{sid}")]);
    assert!(
        body.contains("reported an API error") && body.contains("HTTP 500"),
        "{body}"
    );
    let doc = document(&repo, &sid);
    assert!(doc.contains("an agent reported an API error"), "{doc}");
    repo.fsck();
}

// (d) An over-long Challenge and an agreement-only one are sent back with the problem, then
// their members count as unresponsive.
#[test]
fn out_of_contract_challenges_are_sent_back_then_count_as_unresponsive() {
    let log = tempfile::NamedTempFile::new().unwrap();
    let repo = members(
        "skeptic=long,pragmatist=agree,*=split",
        &[("DISCUSS_LOG", log.path().to_str().unwrap())],
    );
    let sid = discuss(&repo, &[TOPIC]);
    for (member, problem) in [
        ("skeptic", "at most 200"),
        ("pragmatist", "agreement is not allowed"),
    ] {
        let turn: serde_json::Value = serde_json::from_str(&round_file(
            &repo,
            &sid,
            "02-challenge",
            &format!("{member}.json"),
        ))
        .unwrap();
        let back = turn["sent_back"].as_array().unwrap();
        assert_eq!(back.len(), 3, "{turn}");
        assert!(back[0].as_str().unwrap().contains(problem), "{turn}");
        assert!(
            turn["unresponsive"]
                .as_str()
                .unwrap()
                .contains("out of contract"),
            "{turn}"
        );
        // The last prompt carried the problem back to the member.
        let prompt = round_file(&repo, &sid, "02-challenge", &format!("prompts/{member}.md"));
        assert!(
            prompt.contains("was not accepted") && prompt.contains(problem),
            "{prompt}"
        );
    }
    let calls = std::fs::read_to_string(log.path()).unwrap();
    assert_eq!(
        calls
            .lines()
            .filter(|l| l.starts_with("2 Challenge skeptic"))
            .count(),
        3,
        "{calls}"
    );
    assert_eq!(
        calls
            .lines()
            .filter(|l| l.starts_with("2 Challenge skeptic retry"))
            .count(),
        2,
        "{calls}"
    );
    assert_eq!(state(&repo, &sid)["end"], "fell_back");
    repo.fsck();
}

/// What a discussion's record says happened, without its timings and agent names: each
/// seat's end, and each round's turns (contribution, send-backs, unresponsiveness), rating,
/// state, next step and notes.
fn what_happened(s: &serde_json::Value) -> serde_json::Value {
    let rounds: Vec<serde_json::Value> = s["rounds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let turns: Vec<serde_json::Value> = r["turns"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| {
                    serde_json::json!([
                        t["role"],
                        t["contribution"],
                        t["sent_back"],
                        t["unresponsive"]
                    ])
                })
                .collect();
            serde_json::json!([
                r["number"],
                r["kind"],
                turns,
                r["rating"],
                r["state"],
                r["moving"],
                r["check"],
                r["next"],
                r["notes"]
            ])
        })
        .collect();
    let seats: Vec<serde_json::Value> = s["seats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| serde_json::json!([x["role"], x["out"]]))
        .collect();
    serde_json::json!({"seats": seats, "rounds": rounds, "status": s["status"], "end": s["end"]})
}

// A replay serves each attempt of a member's turn the answer that attempt gave: the
// send-backs happen again as they did (one member in contract on its second answer, one out
// of contract three times), with no agent to call, and the record says it was replayed.
#[test]
fn a_replay_sends_back_what_the_recorded_discussion_sent_back() {
    let log = tempfile::NamedTempFile::new().unwrap();
    let repo = members(
        "skeptic=long,pragmatist=long_once,*=split",
        &[("DISCUSS_LOG", log.path().to_str().unwrap())],
    );
    let sid = discuss(&repo, &[TOPIC]);
    let a = state(&repo, &sid);
    let turn = |s: &serde_json::Value, round: usize, role: &str| -> serde_json::Value {
        s["rounds"][round]["turns"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["role"] == role)
            .unwrap()
            .clone()
    };
    // The recorded discussion: the pragmatist was sent back once, the skeptic three times.
    let pragmatist = turn(&a, 1, "pragmatist");
    assert_eq!(pragmatist["sent_back"].as_array().unwrap().len(), 1, "{a}");
    assert!(pragmatist["contribution"].is_object(), "{a}");
    let skeptic = turn(&a, 1, "skeptic");
    assert_eq!(skeptic["sent_back"].as_array().unwrap().len(), 3, "{a}");
    assert!(skeptic["unresponsive"].is_string(), "{a}");
    let original = rounds(&repo, &sid);
    assert_eq!(original, ["1 position", "2 challenge", "3 synthesis"]);

    // The agent is gone: its program does not exist.
    repo.write(
        ".tlv4.toml",
        "[agents.fake]\ndriver = \"command\"\nprogram = \"/nonexistent/agent\"\n[discuss.members]\ndefault = \"fake\"\n",
    );
    repo.ok(&["trust"]);
    let calls = std::fs::read_to_string(log.path()).unwrap();
    let replayed = discuss(&repo, &["--replay", &sid, TOPIC]);
    assert_eq!(std::fs::read_to_string(log.path()).unwrap(), calls);
    assert_eq!(rounds(&repo, &replayed), original);
    let b = state(&repo, &replayed);
    assert_eq!(what_happened(&b), what_happened(&a));
    // Each attempt got the answer of the same attempt.
    for (task, attempts) in [
        ("DISCUSS-R02-PRAGMATIST", 2),
        ("DISCUSS-R02-SKEPTIC", 3),
        ("DISCUSS-R02-ADVOCATE", 1),
    ] {
        let listed = |s: &str| {
            repo.git(&[
                "ls-tree",
                "--name-only",
                &format!("tlv4/{s}:{}/runs/{task}/", dir(s)),
            ])
        };
        assert_eq!(listed(&replayed), listed(&sid), "{task}");
        assert_eq!(listed(&sid).lines().count(), attempts, "{task}");
        for n in 1..=attempts {
            let blob = |s: &str| {
                repo.git(&[
                    "rev-parse",
                    &format!("tlv4/{s}:{}/runs/{task}/{n}/contribution.json", dir(s)),
                ])
            };
            assert_eq!(blob(&replayed), blob(&sid), "{task}/{n}");
        }
    }
    // The record says the seats were replayed, and from where.
    for x in b["seats"].as_array().unwrap() {
        assert_eq!(x["agent"], "replay", "{b}");
    }
    let note = format!("Replayed from session {sid}");
    let notes = b["notes"].to_string();
    assert!(notes.contains(&note), "{notes}");
    let doc = document(&repo, &replayed);
    assert!(doc.contains(&note), "{doc}");
    // Otherwise the document is the recorded one.
    let same: String = doc
        .lines()
        .filter(|l| !l.contains(&note))
        .map(|l| format!("{}\n", l.replace(" (replay)", " (fake)")))
        .collect();
    assert_eq!(same, document(&repo, &sid));
    repo.fsck();
}

// (e) The presets follow the transition table (the builtin members diverge on a topic with
// three options).
#[test]
fn quick_default_and_deep_follow_the_transition_table() {
    let repo = TestRepo::new();
    let topic = "SQLite or Postgres or files";
    let quick = discuss(&repo, &["--quick", topic]);
    assert_eq!(rounds(&repo, &quick), ["1 position", "2 synthesis"]);
    let default = discuss(&repo, &[topic]);
    assert_eq!(
        rounds(&repo, &default),
        ["1 position", "2 challenge", "3 synthesis"]
    );
    let deep = discuss(&repo, &["--deep", topic]);
    assert_eq!(
        rounds(&repo, &deep),
        [
            "1 position",
            "2 challenge",
            "3 challenge",
            "4 challenge",
            "5 synthesis"
        ]
    );
    let s = state(&repo, &deep);
    assert_eq!(s["preset"], "deep");
    assert!(
        s["notes"][0]
            .as_str()
            .unwrap()
            .contains("builtin members take their places"),
        "{s}"
    );
    assert!(document(&repo, &deep).contains("builtin members take their places"));
    repo.fsck();
}

// (f) A crash in the middle of a round: `resume` runs that round again, not the ones before.
#[test]
fn a_crash_mid_discussion_resumes_without_redoing_finished_rounds() {
    let log = tempfile::NamedTempFile::new().unwrap();
    let marker = tempfile::tempdir().unwrap();
    let hung = marker.path().join("hung");
    let repo = members(
        "hang_round=2",
        &[
            ("DISCUSS_LOG", log.path().to_str().unwrap()),
            ("DISCUSS_STATE", hung.to_str().unwrap()),
        ],
    );
    let mut child = repo
        .tlv4_cmd(&["discuss", TOPIC])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !hung.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "round 2 never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // SIGKILL: nothing of the tool runs on.
    child.kill().unwrap();
    child.wait().unwrap();
    let sid = repo.ok(&["list", "--json"]);
    let sid: serde_json::Value = serde_json::from_str(&sid).unwrap();
    let sid = sid["sessions"][0]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{sid}"))
        .to_owned();
    assert_eq!(rounds(&repo, &sid), ["1 position"]);
    repo.ok(&["--session", &sid, "resume"]);
    assert_eq!(
        rounds(&repo, &sid),
        ["1 position", "2 challenge", "3 synthesis"]
    );
    let calls = std::fs::read_to_string(log.path()).unwrap();
    assert_eq!(
        calls.lines().filter(|l| l.starts_with("1 ")).count(),
        4,
        "round 1 ran once: {calls}"
    );
    repo.fsck();
}

// Two processes drive one discussion at once (`resume` and `discuss --resume`, members slow
// enough to overlap): one runs every round, the other refuses at once, naming the process
// that runs it; no member is asked twice, and the record is a single run's.
#[test]
fn two_processes_on_one_discussion_run_each_round_once() {
    let log = tempfile::NamedTempFile::new().unwrap();
    let repo = members(
        "sleep",
        &[
            ("DISCUSS_SLEEP", "2"),
            ("DISCUSS_LOG", log.path().to_str().unwrap()),
        ],
    );
    let sid = discuss(&repo, &["--no-run", TOPIC]);
    let spawn = |args: &[&str]| {
        repo.tlv4_cmd(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let one = spawn(&["--session", &sid, "resume"]);
    let two = spawn(&["--session", &sid, "discuss", "--resume"]);
    let outs = [
        one.wait_with_output().unwrap(),
        two.wait_with_output().unwrap(),
    ];
    let codes: Vec<Option<i32>> = outs.iter().map(|o| o.status.code()).collect();
    let said = |o: &std::process::Output| String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(
        codes.contains(&Some(0)) && codes.contains(&Some(tlv4_core::error::exit::CONFLICT)),
        "{codes:?}\n{}\n{}",
        said(&outs[0]),
        said(&outs[1])
    );
    let refused = &outs[codes.iter().position(|c| *c != Some(0)).unwrap()];
    let err = said(refused);
    assert!(
        err.contains(&format!(
            "the discussion of session {sid} is being run by process"
        )),
        "{err}"
    );
    // Each member spoke once a round.
    let calls = std::fs::read_to_string(log.path()).unwrap();
    for n in 1..=3 {
        assert_eq!(
            calls
                .lines()
                .filter(|l| l.starts_with(&format!("{n} ")))
                .count(),
            4,
            "round {n}: {calls}"
        );
    }
    assert_eq!(calls.lines().count(), 12, "{calls}");
    assert_eq!(
        rounds(&repo, &sid),
        ["1 position", "2 challenge", "3 synthesis"]
    );
    let (n, events) = round_events(&repo, &sid);
    assert_eq!(n, 3, "{events}");
    // The same record as one process's run of the same discussion.
    let single = discuss(&repo, &[TOPIC]);
    assert_eq!(rounds(&repo, &single), rounds(&repo, &sid));
    assert_eq!(
        what_happened(&state(&repo, &sid)),
        what_happened(&state(&repo, &single))
    );
    // Nothing is left behind: no checkout, no lock.
    let worktrees = repo.git(&["worktree", "list", "--porcelain"]);
    assert_eq!(worktrees.matches("worktree ").count(), 1, "{worktrees}");
    let git_dir = repo.path().join(".git");
    let mut stack = vec![git_dir.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                assert!(
                    p.extension().is_none_or(|x| x != "lock"),
                    "left behind: {}",
                    p.display()
                );
            }
        }
    }
    repo.fsck();
}

// `log`, `fork`, `--replay` and the export completion work on a discussion session.
#[test]
fn a_discussion_forks_replays_and_exports_like_any_session() {
    let log = tempfile::NamedTempFile::new().unwrap();
    let repo = members("split", &[("DISCUSS_LOG", log.path().to_str().unwrap())]);
    let sid = discuss(&repo, &["--completion", "export", TOPIC]);
    let listed = repo.ok(&["--session", &sid, "log"]);
    assert_eq!(listed.matches("discussion round").count(), 3, "{listed}");
    // The export carries the document and leaves the pipeline folder behind.
    let export = format!("tlv4-export/{sid}");
    let tree = repo.git(&["ls-tree", "-r", "--name-only", &export]);
    assert!(
        tree.lines()
            .any(|l| l.starts_with("docs/specs/") && l.contains("-discussion-")),
        "{tree}"
    );
    assert!(!tree.contains(".tlv4/sessions/"), "{tree}");
    // A fork at the first round carries on from there.
    let first = repo.git(&[
        "log",
        "--format=%H",
        "--grep=Tlv4-Discussion-Round: 1 position",
        &format!("tlv4/{sid}"),
    ]);
    let out = repo.ok(&[
        "--session",
        &sid,
        "fork",
        "--at",
        first.trim(),
        "--name",
        "storage again",
    ]);
    let fork = out.lines().next().unwrap().trim().to_owned();
    let calls_before = std::fs::read_to_string(log.path()).unwrap().lines().count();
    repo.ok(&["--session", &fork, "discuss", "--resume"]);
    assert_eq!(
        rounds(&repo, &fork),
        ["1 position", "2 challenge", "3 synthesis"]
    );
    let calls = std::fs::read_to_string(log.path()).unwrap();
    assert_eq!(
        calls.lines().count() - calls_before,
        8,
        "only rounds 2 and 3 ran: {calls}"
    );
    // A replay answers every seat from the recorded runs, calling no agent.
    let before = calls.lines().count();
    let replayed = discuss(&repo, &["--replay", &sid, TOPIC]);
    assert_eq!(
        std::fs::read_to_string(log.path()).unwrap().lines().count(),
        before
    );
    assert_eq!(
        rounds(&repo, &replayed),
        ["1 position", "2 challenge", "3 synthesis"]
    );
    let a = state(&repo, &sid);
    let b = state(&repo, &replayed);
    let contributions = |s: &serde_json::Value| -> Vec<serde_json::Value> {
        s["rounds"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|r| {
                r["turns"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|t| t["contribution"].clone())
            })
            .collect()
    };
    assert_eq!(contributions(&a), contributions(&b));
    assert!(Path::new(repo.path()).join(".tlv4.toml").exists());
    repo.fsck();
}

// Seats' agents are refused until the repository is trusted.
#[test]
fn member_agents_need_trust() {
    let repo = TestRepo::new();
    repo.write(
        ".tlv4.toml",
        &format!("[agents.fake]\ndriver = \"command\"\nprogram = \"{}\"\n[discuss.members]\nskeptic = \"fake\"\n", fixture("discuss-agent")),
    );
    let err = repo.fails(&["discuss", TOPIC], 1);
    assert!(err.contains("not trusted"), "{err}");
    assert_eq!(repo.git(&["for-each-ref", "refs/heads/tlv4/"]), "");
}

/// The rounds a pipeline session's events name in `Tlv4-Discuss`, oldest first.
fn pipeline_rounds(repo: &TestRepo, sid: &str) -> Vec<String> {
    repo.git(&[
        "log",
        "--reverse",
        "--format=%(trailers:key=Tlv4-Discuss,valueonly,separator=)",
        &format!("tlv4/{sid}"),
    ])
    .lines()
    .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
    .collect()
}

// (g) The six rounds of seed 000 in a full lifecycle, offline, one of them as the protocol;
// then again with one perspective's seat played by a scripted model on 127.0.0.1.
#[test]
fn the_six_round_set_runs_in_a_full_lifecycle_with_a_protocol_round() {
    let start = [
        "start",
        "--yes",
        "--pipeline",
        "full-lifecycle",
        "--completion",
        "keep",
        "Add search to the notes app",
    ];
    let repo = crate::pipelines::sample();
    repo.write(
        ".tlv4.toml",
        "[discuss]\nrounds = \"early\"\n[discuss.mode]\nDISCUSS-004 = \"protocol\"\n",
    );
    repo.ok(&["trust"]);
    let sid = crate::pipelines::run_to_end(&repo, &start);
    let mut expect: Vec<String> = (1..=6)
        .map(|n| format!("discussions/DISCUSS-00{n}-discussion.md"))
        .collect();
    expect.push("discussions/DISCUSS-004-protocol.md".into());
    let expect: Vec<&str> = expect.iter().map(String::as_str).collect();
    crate::pipelines::check_done(&repo, &sid, &expect);
    let rounds = pipeline_rounds(&repo, &sid);
    assert_eq!(
        rounds,
        [
            "early/DISCUSS-001",
            "early/DISCUSS-002",
            "early/DISCUSS-003",
            "early/DISCUSS-004+protocol",
            "early/DISCUSS-005",
            "early/DISCUSS-006"
        ]
    );
    let brief = show(
        &repo,
        &sid,
        &format!("{}/discussions/DISCUSS-002-discussion.md", dir(&sid)),
    );
    assert!(
        brief.contains("spec/product-brief.md") && brief.contains("technical"),
        "{brief}"
    );
    let protocol = show(
        &repo,
        &sid,
        &format!("{}/discussions/DISCUSS-004-protocol.md", dir(&sid)),
    );
    assert!(
        protocol.contains("argue from the rules' critique"),
        "{protocol}"
    );
    let position = show(
        &repo,
        &sid,
        &format!(
            "{}/discussions/DISCUSS-004-protocol/01-position/technical.json",
            dir(&sid)
        ),
    );
    assert!(position.contains("\"agent\": \"builtin\""), "{position}");

    // One seat on a scripted model.
    let server = crate::agents::Server::start_with("");
    let repo = crate::pipelines::sample();
    repo.write(
        ".tlv4.toml",
        &format!(
            "[agents.local]\ndriver = \"openai\"\nurl = \"http://127.0.0.1:{}/v1\"\nmodel = \"member-model\"\n\
             [discuss]\nrounds = \"early\"\n[discuss.mode]\nDISCUSS-004 = \"protocol\"\n[discuss.perspectives]\ntechnical = \"local\"\n",
            server.port
        ),
    );
    repo.ok(&["trust"]);
    let sid = crate::pipelines::run_to_end(&repo, &start);
    crate::pipelines::check_done(&repo, &sid, &expect);
    let position = show(
        &repo,
        &sid,
        &format!(
            "{}/discussions/DISCUSS-004-protocol/01-position/technical.json",
            dir(&sid)
        ),
    );
    assert!(
        position.contains("\"agent\": \"local\"")
            && position.contains("The served model speaks for technical"),
        "{position}"
    );
    let prompt = show(
        &repo,
        &sid,
        &format!(
            "{}/discussions/DISCUSS-004-protocol/01-position/prompts/technical.md",
            dir(&sid)
        ),
    );
    assert!(
        !prompt.contains("### risk"),
        "the Position prompt shows no other seat: {prompt}"
    );
    assert!(
        server
            .requests()
            .iter()
            .any(|r| r["body"]["messages"].to_string().contains("- Role: member")),
        "the model was asked as a member"
    );
    repo.fsck();
}

// A round set or a mode the build does not know is an error naming the file, line and key;
// nothing is written.
#[test]
fn unknown_round_sets_and_modes_are_refused_by_line_and_key() {
    let repo = TestRepo::new();
    for (toml, key, words) in [
        (
            "[discuss]\nrounds = \"late\"\n",
            "rounds",
            "unknown round set `late`; sets: current, early",
        ),
        (
            "[discuss]\nrounds = \"early\"\n[discuss.mode]\nDISCUSS-009 = \"protocol\"\n",
            "DISCUSS-009",
            "not a round of the `early` set",
        ),
        (
            "[discuss.mode]\nDISCUSS-001 = \"debate\"\n",
            "DISCUSS-001",
            "unknown mode `debate`",
        ),
    ] {
        repo.write(".tlv4.toml", toml);
        let err = repo.fails(&["start", "--no-run", "--pipeline", "spec-only", "text"], 1);
        assert!(
            err.contains(".tlv4.toml:") && err.contains(key) && err.contains(words),
            "{err}"
        );
    }
    assert_eq!(repo.git(&["for-each-ref", "refs/heads/tlv4/"]), "");
}

// An agent moderator rates the rounds; one whose rating says who is right is refused and
// the builtin moderator rates instead, as the record says.
#[test]
fn an_agent_moderator_rates_and_one_that_takes_sides_is_replaced() {
    for (verdict, rated_by) in [("", "fake"), ("verdict", "builtin")] {
        let repo = members("split", &[("DISCUSS_MODERATOR", verdict)]);
        let toml = std::fs::read_to_string(repo.path().join(".tlv4.toml")).unwrap();
        repo.write(".tlv4.toml", &format!("{toml}moderator = \"fake\"\n"));
        repo.ok(&["trust"]);
        let sid = discuss(&repo, &[TOPIC]);
        let m: serde_json::Value =
            serde_json::from_str(&round_file(&repo, &sid, "01-position", "moderator.json"))
                .unwrap();
        assert_eq!(m["moderator"], rated_by, "{m}");
        assert_eq!(m["state"], "DIVERGENT", "{m}");
        if rated_by == "fake" {
            assert_eq!(
                m["rating"]["note"], "Which evidence supports each option?",
                "{m}"
            );
            let usage = show(
                &repo,
                &sid,
                &format!("{}/runs/DISCUSS-R01-MODERATOR/1/usage.json", dir(&sid)),
            );
            assert!(usage.contains("\"role\": \"moderator\""), "{usage}");
        } else {
            assert!(
                m["notes"]
                    .to_string()
                    .contains("the builtin moderator rated instead"),
                "{m}"
            );
            assert!(
                m["notes"].to_string().contains("unknown field `winner`"),
                "{m}"
            );
        }
    }
}

// `--agent SEAT=NAME` gives one seat its agent without `[discuss.members]`; the others stay
// builtin; a later run of the discussion keeps the choice; a seat the discussion does not
// have is refused before anything is written.
#[test]
fn seat_agents_from_the_command_line_hold_for_later_runs() {
    let repo = TestRepo::new();
    repo.write(
        ".tlv4.toml",
        &format!(
            "[agents.fake]\ndriver = \"command\"\nprogram = \"{}\"\ntimeout = \"20s\"\nenv = {{ DISCUSS_MODE = \"split\" }}\n",
            fixture("discuss-agent")
        ),
    );
    repo.git(&["add", ".tlv4.toml"]);
    repo.git(&["commit", "-q", "-m", "an agent"]);
    repo.ok(&["trust"]);
    let err = repo.fails(&["discuss", "--agent", "judge=fake", TOPIC], 1);
    assert!(
        err.contains("`judge` is not a seat of this discussion")
            && err.contains("advocate, skeptic, pragmatist, devil, moderator"),
        "{err}"
    );
    assert_eq!(repo.git(&["for-each-ref", "refs/heads/tlv4/"]), "");
    let sid = discuss(
        &repo,
        &[
            "--agent",
            "skeptic=fake",
            "--agent",
            "devil=fake",
            "--no-run",
            TOPIC,
        ],
    );
    // The resumed run asks the agent for the seats the start chose.
    repo.runs(&["discuss", "--resume", "--session", &sid]);
    let s = state(&repo, &sid);
    let agents: Vec<(String, String)> = s["seats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            (
                x["role"].as_str().unwrap().to_owned(),
                x["agent"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        agents,
        [
            ("advocate".to_owned(), "builtin".to_owned()),
            ("skeptic".to_owned(), "fake".to_owned()),
            ("pragmatist".to_owned(), "builtin".to_owned()),
            ("devil".to_owned(), "fake".to_owned()),
        ],
        "{s}"
    );
    let skeptic: serde_json::Value =
        serde_json::from_str(&round_file(&repo, &sid, "01-position", "skeptic.json")).unwrap();
    assert_eq!(skeptic["agent"], "fake", "{skeptic}");
    assert!(
        skeptic
            .to_string()
            .contains("Postgres is what the skeptic seat"),
        "{skeptic}"
    );
    let advocate: serde_json::Value =
        serde_json::from_str(&round_file(&repo, &sid, "01-position", "advocate.json")).unwrap();
    assert_eq!(advocate["agent"], "builtin", "{advocate}");
    repo.fsck();
}

/// A spec pipeline whose DISCUSS-001 runs as the protocol, every seat of it (the
/// perspectives, the devil's advocate, the moderator) the fake discuss agent in `mode`.
fn protocol_pipeline(mode: &str) -> TestRepo {
    let repo = crate::pipelines::sample();
    repo.write(
        ".tlv4.toml",
        &format!(
            "[agents.fake]\ndriver = \"command\"\nprogram = \"{}\"\ntimeout = \"20s\"\nenv = {{ DISCUSS_MODE = \"{mode}\" }}\n\
             [discuss.mode]\nDISCUSS-001 = \"protocol\"\n\
             [discuss.perspectives]\nproduct = \"fake\"\nrisk = \"fake\"\ncoverage = \"fake\"\n\
             [discuss.members]\ndevil = \"fake\"\nmoderator = \"fake\"\n",
            fixture("discuss-agent")
        ),
    );
    repo.ok(&["trust"]);
    repo
}

// Inside a pipeline, the devil's advocate and the moderator of a protocol round are the
// agents `[discuss.members]` names, and a surface consensus pauses the session after the task
// (approve adopts it) — unless the session approves by itself (--yes), which adopts it and
// says so in wisdom/issues.md.
#[test]
fn a_pipeline_protocol_round_seats_agents_and_pauses_on_surface_consensus() {
    let repo = protocol_pipeline("same");
    let out = repo.stops(
        &[
            "start",
            "--pipeline",
            "spec-only",
            "Add search to the notes app",
        ],
        WAITING,
    );
    let sid = out.lines().next().unwrap().trim().to_owned();
    let s = repo.json(&["--session", &sid, "status", "--json"]);
    assert_eq!(s["session"]["status"], "paused", "{s}");
    let pause = &s["control"]["pause"];
    assert_eq!(pause["kind"], "discuss", "{s}");
    assert_eq!(pause["task"], "RESEARCH-001", "{s}");
    assert!(
        pause["reason"]
            .as_str()
            .unwrap()
            .contains("much the same reasons")
            && pause["next"].to_string().contains("git tlv4 approve"),
        "{pause}"
    );
    let base = format!("{}/discussions/DISCUSS-001-protocol", dir(&sid));
    let devil = show(&repo, &sid, &format!("{base}/01-position/devil.json"));
    assert!(
        devil.contains("\"agent\": \"fake\"") && devil.contains("no audit is needed"),
        "{devil}"
    );
    let record = show(&repo, &sid, &format!("{base}/discussion.json"));
    let d: serde_json::Value = serde_json::from_str(&record).unwrap();
    assert_eq!(d["moderator"], "fake", "{d}");
    assert_eq!(d["status"], "awaiting_decision", "{d}");
    let rated = show(&repo, &sid, &format!("{base}/01-position/moderator.json"));
    assert!(rated.contains("\"moderator\": \"fake\""), "{rated}");
    repo.runs(&["--session", &sid, "approve"]);
    let s = repo.json(&["--session", &sid, "status", "--json"]);
    assert!(
        s["control"]["approved"]
            .to_string()
            .contains("RESEARCH-001"),
        "{s}"
    );
    assert_ne!(s["control"]["pause"]["kind"], "discuss", "{s}");
    repo.fsck();

    let repo = protocol_pipeline("same");
    let sid = crate::pipelines::run_to_end(
        &repo,
        &[
            "start",
            "--yes",
            "--pipeline",
            "spec-only",
            "Add search to the notes app",
        ],
    );
    let issues = show(&repo, &sid, &format!("{}/wisdom/issues.md", dir(&sid)));
    assert!(
        issues.contains("surface consensus adopted without asking (--yes)"),
        "{issues}"
    );
    repo.fsck();
}
