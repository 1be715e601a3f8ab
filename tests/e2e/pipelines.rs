//! Whole pipelines on the builtin agent, end to end, checked with git.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::common::{TestRepo, WAITING};

/// A small Python project with tests, SQL built from strings and password handling, so the
/// analyst has signals to find and the tester has a suite to run.
pub(crate) fn sample() -> TestRepo {
    let repo = TestRepo::new();
    repo.write("app/__init__.py", "");
    repo.write(
        "app/notes.py",
        "def add(notes, text):\n    notes.append(text)\n    return notes\n\n\ndef count(notes):\n    return len(notes)\n",
    );
    repo.write(
        "app/db.py",
        "import sqlite3\n\n\ndef find(conn, title):\n    return conn.execute(\"SELECT * FROM notes WHERE title = '\" + title + \"'\").fetchall()\n",
    );
    repo.write(
        "app/auth.py",
        "import hashlib\n\n\ndef check_password(stored, password):\n    return stored == hashlib.sha256(password.encode()).hexdigest()\n",
    );
    repo.write(
        "tests/test_notes.py",
        "import unittest\n\nfrom app.notes import add, count\n\n\nclass NotesTest(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add([], 'x'), ['x'])\n\n    def test_count(self):\n        self.assertEqual(count(['a', 'b']), 2)\n",
    );
    repo.write("tests/__init__.py", "");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "notes app"]);
    // The user trusts the sample: its own tests run.
    repo.ok(&["trust"]);
    repo
}

/// Runs a session to completion, approving each pause that asks for an approval.
pub(crate) fn run_to_end(repo: &TestRepo, start: &[&str]) -> String {
    let out = repo.runs(start);
    let sid = out.lines().next().unwrap().trim().to_owned();
    run_to_end_from(repo, &sid)
}

/// Every task completed exactly once, every expected artifact present, and git healthy.
pub(crate) fn check_done(repo: &TestRepo, sid: &str, expect: &[&str]) -> serde_json::Value {
    let s = repo.json(&["--session", sid, "status", "--json"]);
    for t in s["tasks"].as_array().unwrap() {
        assert_eq!(t["status"], "completed", "{t}");
    }
    let log = repo.rows(&["--session", sid, "log", "--json"], "events");
    let mut completions: BTreeMap<String, usize> = BTreeMap::new();
    for e in log
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == "task_completed")
    {
        *completions
            .entry(e["task"].as_str().unwrap().to_owned())
            .or_default() += 1;
    }
    for t in s["tasks"].as_array().unwrap() {
        assert_eq!(
            completions.get(t["id"].as_str().unwrap()),
            Some(&1),
            "{} completed once",
            t["id"]
        );
    }
    let files = repo.git(&[
        "ls-tree",
        "-r",
        "--name-only",
        &format!("tlv4/{sid}"),
        &format!(".tlv4/sessions/{sid}/"),
    ]);
    for f in expect {
        assert!(
            files.contains(&format!("{sid}/{f}")),
            "{f} missing from\n{files}"
        );
    }
    repo.fsck();
    s
}

#[test]
fn spec_only_pauses_at_the_gate_then_completes_on_approve() {
    let repo = sample();
    let out = repo.stops(
        &[
            "start",
            "--pipeline",
            "spec-only",
            "--completion",
            "keep",
            "Write the requirements for note search",
        ],
        WAITING,
    );
    let sid = out.trim().to_owned();
    let s = repo.json(&["status", "--json"]);
    assert_eq!(
        s["session"]["status"], "paused",
        "the gate after QUALITY-001 waits for the user"
    );
    assert_eq!(s["control"]["pause"]["kind"], "gate");
    assert!(s["control"]["verdicts"]["QUALITY-001"]["verdict"].is_string());
    let sid = run_to_end_from(&repo, &sid);
    let s = check_done(
        &repo,
        &sid,
        &[
            "spec/discovery-context.json",
            "spec/product-brief.md",
            "spec/requirements/_index.md",
            "spec/architecture/_index.md",
            "spec/epics/_index.md",
            "spec/readiness-report.md",
            "artifacts/CHECKPOINT-001-report.md",
            "artifacts/CHECKPOINT-002-report.md",
            "discussions/DISCUSS-001-discussion.md",
        ],
    );
    assert_eq!(s["control"]["approved"][0], "QUALITY-001");
    let events = repo.trailers(&format!("tlv4/{sid}"), "Tlv4-Event");
    assert!(
        events.contains(&"user_decision".to_owned())
            && events.contains(&"session_completed".to_owned())
    );
}

fn run_to_end_from(repo: &TestRepo, sid: &str) -> String {
    for _ in 0..8 {
        let s = repo.json(&["--session", sid, "status", "--json"]);
        match s["session"]["status"].as_str().unwrap() {
            "completed" => return sid.to_owned(),
            "active" => {
                repo.runs(&["--session", sid, "resume", "--completion", "keep"]);
            }
            "paused" => {
                assert_ne!(s["control"]["pause"]["kind"], "stalled", "{}", s["control"]);
                repo.runs(&["--session", sid, "approve", "--completion", "keep"]);
            }
            other => panic!("session is {other}"),
        }
    }
    panic!("session {sid} did not complete");
}

#[test]
fn impl_only_runs_plan_implementation_test_and_review() {
    let repo = sample();
    let sid = run_to_end(
        &repo,
        &[
            "start",
            "--yes",
            "--pipeline",
            "impl-only",
            "--completion",
            "keep",
            "Fix the note counter",
        ],
    );
    let s = check_done(
        &repo,
        &sid,
        &[
            "plan/plan.json",
            "artifacts/review-report.md",
            "artifacts/test-report.md",
            "artifacts/CHECKPOINT-003-report.md",
        ],
    );
    let imp = &s["control"]["implementation"];
    let complexity = imp["complexity"].as_str().unwrap();
    let n = imp["tasks"].as_array().unwrap().len();
    match complexity {
        "Low" => assert_eq!(n, 1),
        _ => assert!(n >= 2, "{imp}"),
    }
    // The builtin executor changes nothing and says so; the review says so too.
    let review = repo.git(&[
        "show",
        &format!("tlv4/{sid}:.tlv4/sessions/{sid}/artifacts/review-report.md"),
    ]);
    assert!(
        review.to_lowercase().contains("no change") || review.to_lowercase().contains("empty"),
        "{review}"
    );
    assert_eq!(
        s["control"]["verdicts"]["TEST-001"]["verdict"], "pass",
        "{}",
        s["control"]["verdicts"]
    );
}

#[test]
fn every_pipeline_runs_end_to_end() {
    for (pipeline, supervision) in [
        ("full-lifecycle", true),
        ("fe-only", false),
        ("fullstack", true),
        ("full-lifecycle-fe", false),
    ] {
        let repo = sample();
        let mut args = vec![
            "start",
            "--yes",
            "--pipeline",
            pipeline,
            "--completion",
            "keep",
        ];
        if !supervision {
            args.push("--no-supervision");
        }
        args.push("Add search to the notes app");
        let sid = run_to_end(&repo, &args);
        let s = check_done(
            &repo,
            &sid,
            &[
                "plan/plan.json",
                "artifacts/review-report.md",
                "artifacts/test-report.md",
            ],
        );
        let has_checkpoints = s["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["role"] == "supervisor");
        assert_eq!(has_checkpoints, supervision, "{pipeline}");
    }
}

#[test]
fn signals_inject_a_security_specialist() {
    let repo = sample();
    let sid = run_to_end(
        &repo,
        &[
            "start",
            "--yes",
            "--pipeline",
            "full-lifecycle",
            "--completion",
            "keep",
            "Add search to the notes app",
        ],
    );
    let s = check_done(&repo, &sid, &["artifacts/SECURITY-001-report.md"]);
    let signals: Vec<&str> = s["control"]["signals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        signals.contains(&"sql_detected") && signals.contains(&"auth_detected"),
        "{signals:?}"
    );
    assert_eq!(
        s["control"]["specialists"],
        serde_json::json!(["security-expert"])
    );
    let sec = s["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == "SECURITY-001")
        .unwrap()
        .clone();
    assert_eq!(sec["blocked_by"], serde_json::json!(["RESEARCH-001"]));
    let draft = s["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == "DRAFT-001")
        .unwrap()
        .clone();
    assert!(
        draft["blocked_by"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!("SECURITY-001")),
        "P0 blocks downstream"
    );
    let report = repo.git(&[
        "show",
        &format!("tlv4/{sid}:.tlv4/sessions/{sid}/artifacts/SECURITY-001-report.md"),
    ]);
    assert!(report.contains("app/db.py"), "{report}");
}

#[test]
fn revise_at_the_gate_creates_revision_tasks() {
    let repo = sample();
    let sid = repo
        .stops(
            &[
                "start",
                "--pipeline",
                "spec-only",
                "--completion",
                "keep",
                "Write the requirements for note search",
            ],
            WAITING,
        )
        .trim()
        .to_owned();
    repo.ok(&[
        "revise",
        "DRAFT-002",
        "--feedback",
        "add a performance requirement",
        "--no-run",
    ]);
    let s = repo.json(&["status", "--json"]);
    let ids: Vec<&str> = s["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    for r in [
        "DRAFT-002-R1",
        "DRAFT-003-R1",
        "DRAFT-004-R1",
        "QUALITY-001-R1",
    ] {
        assert!(ids.contains(&r), "{r} missing from {ids:?}");
    }
    assert_eq!(s["session"]["status"], "active");
    let err = repo.fails(&["revise", "DRAFT-002", "--no-run"], 1);
    assert!(err.contains("at most one revision"), "{err}");
    run_to_end_from(&repo, &sid);
    let brief = repo.git(&[
        "show",
        &format!("tlv4/{sid}:.tlv4/sessions/{sid}/tasks/DRAFT-002-R1.toml"),
    ]);
    assert!(brief.contains("add a performance requirement"), "{brief}");
    assert_eq!(
        repo.json(&["status", "--json"])["session"]["status"],
        "completed"
    );
}

#[test]
fn abort_stops_a_paused_session() {
    let repo = sample();
    repo.stops(
        &[
            "start",
            "--pipeline",
            "spec-only",
            "Write the requirements for note search",
        ],
        WAITING,
    );
    repo.ok(&["abort"]);
    let s = repo.json(&["status", "--json"]);
    assert_eq!(s["session"]["status"], "aborted");
    let err = repo.fails(&["approve"], 1);
    assert!(err.contains("was aborted"), "{err}");
}

#[test]
fn a_killed_run_resumes_to_completion_without_redoing_work() {
    let repo = sample();
    let mut child = repo
        .tlv4_cmd(&[
            "start",
            "--yes",
            "--pipeline",
            "full-lifecycle",
            "--completion",
            "keep",
            "Add search to the notes app",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Let it get some way in, then kill it without warning.
    wait_for_events(&repo, 9);
    child.kill().unwrap();
    child.wait().unwrap();
    repo.fsck();
    let sid = repo.rows(&["list", "--json"], "sessions")[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let before = repo.json(&["status", "--json"]);
    assert_ne!(before["session"]["status"], "completed");
    repo.ok(&["resume", "--completion", "keep"]);
    run_to_end_from(&repo, &sid);
    check_done(
        &repo,
        &sid,
        &["spec/readiness-report.md", "artifacts/review-report.md"],
    );
}

#[test]
fn archive_keeps_the_session_reachable_and_removes_its_branches() {
    let repo = sample();
    let sid = repo
        .ok(&[
            "start",
            "--no-run",
            "--yes",
            "--pipeline",
            "impl-only",
            "--completion",
            "archive",
            "Fix the note counter",
        ])
        .trim()
        .to_owned();
    // A task branch, as a worker leaves one: archiving removes it too.
    repo.git(&[
        "branch",
        &format!("tlv4/{sid}.IMPL-001"),
        &format!("tlv4/{sid}"),
    ]);
    repo.ok(&["resume"]);
    let sid = if repo.git(&["for-each-ref", "refs/heads/tlv4/"]).is_empty() {
        sid
    } else {
        // A gate that did not pass stopped it: approve and let it archive.
        run_to_end_archive(&repo, &sid)
    };
    assert_eq!(
        repo.git(&["for-each-ref", "--format=%(refname)", "refs/heads/tlv4/"]),
        ""
    );
    let archived = repo.git(&["rev-parse", &format!("refs/tlv4/archive/{sid}")]);
    assert_eq!(repo.trailers(archived.trim(), "Tlv4-Action")[0], "archive");
    // Still readable, and read-only.
    let s = repo.json(&["--session", &sid, "status", "--json"]);
    assert_eq!(s["session"]["status"], "completed");
    let err = repo.fails(&["--session", &sid, "task", "claim", "PLAN-001"], 1);
    assert!(err.contains("archived"), "{err}");
    repo.fsck();
}

fn run_to_end_archive(repo: &TestRepo, sid: &str) -> String {
    for _ in 0..8 {
        if repo.git(&["for-each-ref", "refs/heads/tlv4/"]).is_empty() {
            return sid.to_owned();
        }
        repo.ok(&["--session", sid, "approve", "--completion", "archive"]);
    }
    panic!("session {sid} was not archived");
}

#[test]
fn export_makes_a_clean_branch_without_run_records() {
    let repo = sample();
    let sid = repo
        .ok(&[
            "start",
            "--yes",
            "--pipeline",
            "spec-only",
            "--completion",
            "export",
            "Write the requirements for note search",
        ])
        .trim()
        .to_owned();
    let s = repo.json(&["status", "--json"]);
    if s["session"]["status"] == "paused" {
        repo.ok(&["approve", "--completion", "export"]);
    }
    let branch = format!("tlv4-export/{sid}");
    let files = repo.git(&["ls-tree", "-r", "--name-only", &branch]);
    assert!(!files.contains(".tlv4/"), "{files}");
    assert!(files.contains("app/notes.py"), "{files}");
    assert!(
        files.contains(&format!("docs/tlv4/{sid}/spec/product-brief.md")),
        "{files}"
    );
    assert!(!files.contains("runs/"), "{files}");
    assert_eq!(
        repo.git(&["rev-parse", &format!("{branch}^")]).trim(),
        repo.git(&["rev-parse", "HEAD"]).trim()
    );
    repo.fsck();
}

#[test]
fn ctrl_c_returns_running_tasks_to_pending_and_resume_finishes() {
    let repo = sample();
    let mut child = repo
        .tlv4_cmd(&[
            "start",
            "--yes",
            "--pipeline",
            "full-lifecycle",
            "--completion",
            "keep",
            "Add search to the notes app",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for_events(&repo, 6);
    // SAFETY: sending SIGINT to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    // 130 when the loop caught it; a signal death when it landed before the handler was set.
    assert!(
        status.code() == Some(130) || status.code().is_none() || status.success(),
        "{status:?}"
    );
    repo.fsck();
    let sid = repo.rows(&["list", "--json"], "sessions")[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    if status.code() == Some(130) {
        let s = repo.json(&["status", "--json"]);
        assert!(
            s["tasks"]
                .as_array()
                .unwrap()
                .iter()
                .all(|t| t["status"] != "in_progress"),
            "{s}"
        );
    }
    repo.ok(&["resume", "--completion", "keep"]);
    run_to_end_from(&repo, &sid);
    check_done(
        &repo,
        &sid,
        &["spec/readiness-report.md", "artifacts/test-report.md"],
    );
    // No checkout of the interrupted run is left registered.
    let worktrees = repo.worktrees_in_use();
    assert_eq!(worktrees.matches("worktree ").count(), 1, "{worktrees}");
}

/// Waits until the session branch of `repo` holds at least `n` commits (base included).
fn wait_for_events(repo: &TestRepo, n: usize) {
    let began = Instant::now();
    loop {
        let refs = repo.git(&["for-each-ref", "--format=%(refname)", "refs/heads/tlv4/"]);
        if let Some(branch) = refs.lines().next() {
            let count: usize = repo
                .git(&["rev-list", "--count", "--first-parent", branch])
                .trim()
                .parse()
                .unwrap();
            if count >= n {
                return;
            }
        }
        assert!(
            began.elapsed() < Duration::from_secs(60),
            "the run made no progress"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}
