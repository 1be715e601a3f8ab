//! Each command, checked with git.

use crate::common::{TestRepo, dead_pid};

#[test]
fn start_creates_the_branch_and_dispatches_the_pipeline() {
    let repo = TestRepo::new();
    let head = repo.git(&["rev-parse", "HEAD"]);
    let sid = repo.start("spec-only", "Add OAuth login to the API");
    assert_eq!(
        sid,
        "TLV4-add-oauth-login-to-20261129".replace("20261129", &sid[sid.len() - 8..])
    );
    let branch = format!("tlv4/{sid}");
    // Two events on top of HEAD: started, then dispatched.
    assert_eq!(repo.git(&["rev-parse", &format!("{branch}~2")]), head);
    assert_eq!(
        repo.trailers(&branch, "Tlv4-Event")[..2],
        [
            "tasks_dispatched".to_string(),
            "session_started".to_string()
        ]
    );
    let subjects = repo.git(&["log", "--format=%s", "-2", &branch]);
    assert_eq!(subjects, "session: tasks dispatched\nsession: started\n");
    let files = repo.git(&[
        "ls-tree",
        "-r",
        "--name-only",
        &branch,
        &format!(".tlv4/sessions/{sid}"),
    ]);
    for f in [
        "session.toml",
        "tasks/RESEARCH-001.toml",
        "tasks/QUALITY-001.toml",
        "tasks/CHECKPOINT-002.toml",
        "wisdom/decisions.md",
        "explorations/cache-index.json",
    ] {
        assert!(
            files.contains(&format!("{sid}/{f}")),
            "{f} missing from\n{files}"
        );
    }
    let session = repo.git(&[
        "show",
        &format!("{branch}:.tlv4/sessions/{sid}/session.toml"),
    ]);
    assert!(
        session.contains("schema = 1") && session.contains("pipeline = \"spec-only\""),
        "{session}"
    );
    assert!(
        session.contains(&format!("base = \"{}\"", head.trim())),
        "{session}"
    );
    // The code of the base is still there: the branch holds code and state.
    assert_eq!(
        repo.git(&["show", &format!("{branch}:README.md")]),
        "# sample\n"
    );
    repo.fsck();
}

#[test]
fn start_without_supervision_bridges_checkpoints() {
    let repo = TestRepo::new();
    let sid = repo.start("full-lifecycle", "build the thing");
    let status = repo.json(&["status", "--json"]);
    assert_eq!(status["tasks"].as_array().unwrap().len(), 13);
    let repo2 = TestRepo::new();
    let out = repo2.ok(&[
        "start",
        "--no-run",
        "--no-supervision",
        "--pipeline",
        "full-lifecycle",
        "build the thing",
    ]);
    let sid2 = out.trim();
    let tasks = repo2.json(&["--session", sid2, "status", "--json"])["tasks"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(tasks.len(), 10);
    assert!(
        tasks
            .iter()
            .all(|t| !t["id"].as_str().unwrap().starts_with("CHECKPOINT"))
    );
    let quality = tasks.iter().find(|t| t["id"] == "QUALITY-001").unwrap();
    assert_eq!(quality["blocked_by"], serde_json::json!(["DRAFT-004"]));
    let imp = tasks.iter().find(|t| t["id"] == "IMPL-001").unwrap();
    assert_eq!(imp["blocked_by"], serde_json::json!(["PLAN-001"]));
    assert!(!sid.is_empty());
}

#[test]
fn status_json_reads_the_tip() {
    let repo = TestRepo::new();
    let sid = repo.start("impl-only", "fix the parser");
    let s = repo.json(&["status", "--json"]);
    assert_eq!(s["session"]["id"], sid.as_str());
    assert_eq!(s["session"]["status"], "active");
    assert_eq!(s["session"]["pipeline"], "impl-only");
    assert_eq!(s["session"]["branch"], format!("refs/heads/tlv4/{sid}"));
    assert_eq!(
        s["session"]["tip"].as_str().unwrap(),
        repo.git(&["rev-parse", &format!("tlv4/{sid}")]).trim()
    );
    assert_eq!(s["progress"]["total"], 5);
    let ids: Vec<&str> = s["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "PLAN-001",
            "CHECKPOINT-003",
            "IMPL-001",
            "REVIEW-001",
            "TEST-001"
        ]
    );
    let plan = &s["tasks"][0];
    assert_eq!(plan["state"], "ready");
    assert_eq!(plan["role"], "planner");
    assert_eq!(plan["attempts"], 0);
    assert_eq!(s["tasks"][1]["state"], "blocked");
    let text = repo.ok(&["status"]);
    assert!(
        text.contains("PLAN-001") && text.contains("ready") && text.contains("0/5 completed"),
        "{text}"
    );
}

#[test]
fn claim_complete_fail_and_artifacts() {
    let repo = TestRepo::new();
    let sid = repo.start("spec-only", "write a spec");
    let branch = format!("tlv4/{sid}");
    let pid = std::process::id().to_string();
    repo.ok(&["task", "claim", "RESEARCH-001", "--pid", &pid]);
    let t = repo.task(&sid, "RESEARCH-001");
    assert_eq!(t["status"], "in_progress");
    assert_eq!(t["attempts"], 1);
    assert_eq!(t["owner"]["pid"].to_string(), pid);
    assert!(!t["owner"]["host"].as_str().unwrap().is_empty());
    assert_eq!(
        repo.git(&["log", "-1", "--format=%s", &branch]),
        "RESEARCH-001: claimed (analyst)\n"
    );

    let file = repo.write("out/context.json", "{\"languages\": [\"Rust\"]}\n");
    repo.ok(&[
        "task",
        "complete",
        "RESEARCH-001",
        "--summary",
        "scanned",
        "--artifact",
        &format!("spec/discovery-context.json={}", file.display()),
    ]);
    let t = repo.task(&sid, "RESEARCH-001");
    assert_eq!(t["status"], "completed");
    assert!(t.get("owner").is_none());
    assert_eq!(
        t["result"]["artifacts"],
        serde_json::json!(["spec/discovery-context.json"])
    );
    assert_eq!(
        repo.git(&[
            "show",
            &format!("{branch}:.tlv4/sessions/{sid}/spec/discovery-context.json")
        ]),
        "{\"languages\": [\"Rust\"]}\n"
    );
    assert_eq!(repo.task(&sid, "DRAFT-001")["state"], "ready");
    let body = repo.git(&["log", "-1", "--format=%b", &branch]);
    assert!(body.contains("Unblocked: DRAFT-001"), "{body}");
    assert_eq!(
        repo.trailers(&format!("{branch}~0"), "Tlv4-Status")[0],
        "completed"
    );
    assert_eq!(repo.trailers(&branch, "Tlv4-Attempt")[0], "1");

    repo.ok(&["task", "claim", "DRAFT-001"]);
    repo.ok(&["task", "fail", "DRAFT-001", "--reason", "template missing"]);
    let t = repo.task(&sid, "DRAFT-001");
    assert_eq!(t["status"], "failed");
    assert_eq!(t["result"]["reason"], "template missing");
    // A failed task may be claimed again: a new attempt.
    repo.ok(&["task", "claim", "DRAFT-001"]);
    assert_eq!(repo.task(&sid, "DRAFT-001")["attempts"], 2);
    repo.fsck();
}

#[test]
fn messages_are_notes_readable_by_git() {
    let repo = TestRepo::new();
    let sid = repo.start("spec-only", "write a spec");
    repo.ok(&[
        "msg",
        "send",
        "--from",
        "analyst",
        "--type",
        "research_ready",
        "--data",
        "{\"signals\":[\"auth_detected\"]}",
        "found auth code",
    ]);
    repo.ok(&[
        "msg",
        "send",
        "--from",
        "coordinator",
        "--to",
        "writer",
        "--type",
        "state_update",
        "go ahead",
    ]);
    let tip = repo.git(&["rev-parse", &format!("tlv4/{sid}")]);
    let note = repo.git(&["notes", &format!("--ref=tlv4/{sid}"), "show", tip.trim()]);
    let lines: Vec<serde_json::Value> = note
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["type"], "research_ready");
    assert_eq!(lines[0]["data"]["signals"][0], "auth_detected");
    assert_eq!(lines[1]["to"], "writer");
    let all = repo.rows(&["msg", "list", "--json"], "messages");
    assert_eq!(all.as_array().unwrap().len(), 2);
    let only = repo.rows(
        &["msg", "list", "--type", "state_update", "--json"],
        "messages",
    );
    assert_eq!(only.as_array().unwrap().len(), 1);
    assert_eq!(only[0]["summary"], "go ahead");
    // Messages do not move the session branch.
    assert_eq!(repo.git(&["rev-parse", &format!("tlv4/{sid}")]), tip);
    repo.fsck();
}

#[test]
fn log_lists_events_newest_first() {
    let repo = TestRepo::new();
    let sid = repo.start("spec-only", "write a spec");
    repo.ok(&["task", "claim", "RESEARCH-001"]);
    repo.ok(&["task", "complete", "RESEARCH-001"]);
    let log = repo.rows(&["log", "--json"], "events");
    let events: Vec<&str> = log
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(
        events,
        [
            "task_completed",
            "task_claimed",
            "tasks_dispatched",
            "session_started"
        ]
    );
    let commits: Vec<String> = log
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["commit"].as_str().unwrap().to_owned())
        .collect();
    let git: Vec<String> = repo
        .git(&["log", "--format=%H", "-4", &format!("tlv4/{sid}")])
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(commits, git);
    assert_eq!(log[0]["seq"], 4);
    assert_eq!(log[0]["task"], "RESEARCH-001");
    assert_eq!(
        repo.rows(&["log", "--json", "-n", "1"], "events")
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let text = repo.ok(&["log"]);
    assert!(
        text.lines()
            .next()
            .unwrap()
            .contains("RESEARCH-001: completed (analyst)"),
        "{text}"
    );
}

#[test]
fn list_shows_every_session() {
    let repo = TestRepo::new();
    let a = repo.start("spec-only", "first thing");
    let b = repo.start("impl-only", "second thing");
    let list = repo.rows(&["list", "--json"], "sessions");
    let rows = list.as_array().unwrap();
    assert_eq!(rows.len(), 2);
    let row_b = rows.iter().find(|r| r["id"] == b.as_str()).unwrap();
    assert_eq!(row_b["pipeline"], "impl-only");
    assert_eq!(row_b["progress"]["total"], 5);
    assert_eq!(
        row_b["base"].as_str().unwrap(),
        repo.git(&["rev-parse", "HEAD"]).trim()
    );
    assert!(rows.iter().any(|r| r["id"] == a.as_str()));
}

#[test]
fn undo_and_rollback_append_commits_that_restore_trees() {
    let repo = TestRepo::new();
    let sid = repo.start("spec-only", "write a spec");
    let branch = format!("tlv4/{sid}");
    let dispatched = repo.git(&["rev-parse", &branch]).trim().to_owned();
    repo.ok(&["task", "claim", "RESEARCH-001"]);
    let claimed = repo.git(&["rev-parse", &branch]).trim().to_owned();
    repo.ok(&["task", "complete", "RESEARCH-001"]);
    let completed = repo.git(&["rev-parse", &branch]).trim().to_owned();

    repo.ok(&["undo"]);
    let tip = repo.git(&["rev-parse", &branch]).trim().to_owned();
    assert_eq!(
        repo.git(&["rev-parse", &format!("{tip}^")]).trim(),
        completed,
        "undo appends"
    );
    let state_tree =
        |rev: &str| repo.git(&["rev-parse", &format!("{rev}:.tlv4/sessions/{sid}/tasks")]);
    assert_eq!(state_tree(&tip), state_tree(&claimed));
    assert_eq!(repo.task(&sid, "RESEARCH-001")["status"], "in_progress");
    assert_eq!(repo.trailers(&branch, "Tlv4-Restores")[0], claimed);

    // Undo of the undo is a redo.
    repo.ok(&["undo"]);
    assert_eq!(repo.task(&sid, "RESEARCH-001")["status"], "completed");

    repo.ok(&["rollback", "--to", &dispatched[..10]]);
    assert_eq!(repo.task(&sid, "RESEARCH-001")["status"], "pending");
    repo.ok(&["rollback", "--to", "RESEARCH-001"]);
    assert_eq!(repo.task(&sid, "RESEARCH-001")["status"], "completed");
    let events = repo.trailers(&branch, "Tlv4-Event");
    assert_eq!(
        events[..4],
        ["rollback", "rollback", "undo", "undo"].map(String::from)
    );
    // Nothing was deleted: the whole history is still an ancestor chain.
    repo.git(&["merge-base", "--is-ancestor", &completed, &branch]);
    assert_eq!(
        repo.git(&["rev-list", "--count", "--first-parent", &branch])
            .trim(),
        "9"
    );
    let seqs = repo.trailers(&branch, "Tlv4-Seq");
    assert_eq!(seqs[0], "8");
    repo.fsck();
}

#[test]
fn fork_starts_a_new_session_from_an_event() {
    let repo = TestRepo::new();
    let sid = repo.start("spec-only", "write a spec");
    repo.ok(&["task", "claim", "RESEARCH-001"]);
    let claimed = repo
        .git(&["rev-parse", &format!("tlv4/{sid}")])
        .trim()
        .to_owned();
    repo.ok(&["task", "complete", "RESEARCH-001"]);
    let new = repo
        .ok(&[
            "fork",
            "--at",
            &claimed,
            "--name",
            "TLV4-other-try-20261129",
        ])
        .trim()
        .to_owned();
    assert_eq!(new, "TLV4-other-try-20261129");
    let branch = format!("tlv4/{new}");
    assert_eq!(
        repo.git(&["rev-parse", &format!("{branch}^")]).trim(),
        claimed
    );
    let files = repo.git(&["ls-tree", "--name-only", &branch, ".tlv4/sessions/"]);
    assert_eq!(files.trim(), format!(".tlv4/sessions/{new}"));
    let s = repo.json(&["--session", &new, "status", "--json"]);
    assert_eq!(s["session"]["forked_from"]["session"], sid.as_str());
    // The task that was running at the fork point has no owner in the fork.
    let t = s["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == "RESEARCH-001")
        .unwrap()
        .clone();
    assert_eq!(t["status"], "pending");
    assert_eq!(
        repo.rows(&["--session", &new, "log", "--json"], "events")
            .as_array()
            .unwrap()
            .len(),
        1
    );
    // The original is untouched.
    assert_eq!(repo.task(&sid, "RESEARCH-001")["status"], "completed");
    let default_name = repo.ok(&["--session", &sid, "fork", "--at", &claimed]);
    assert!(
        default_name.trim().starts_with("TLV4-write-a-spec-fork-"),
        "{default_name}"
    );
    repo.fsck();
}

#[test]
fn resume_recovers_tasks_of_dead_processes_only() {
    let repo = TestRepo::new();
    repo.wide_pipeline(2);
    let sid = repo.start("wide", "two things");
    repo.ok(&[
        "task",
        "claim",
        "IMPL-001",
        "--pid",
        &dead_pid().to_string(),
    ]);
    repo.ok(&[
        "task",
        "claim",
        "IMPL-002",
        "--pid",
        &std::process::id().to_string(),
    ]);
    repo.ok(&["resume", "--no-run"]);
    assert_eq!(repo.task(&sid, "IMPL-001")["status"], "pending");
    assert_eq!(repo.task(&sid, "IMPL-002")["status"], "in_progress");
    let branch = format!("tlv4/{sid}");
    assert_eq!(repo.trailers(&branch, "Tlv4-Event")[0], "tasks_recovered");
    let body = repo.git(&["log", "-1", "--format=%b", &branch]);
    assert!(
        body.contains("IMPL-001") && !body.contains("IMPL-002"),
        "{body}"
    );
    // Nothing left to recover: no new event.
    let tip = repo.git(&["rev-parse", &branch]);
    repo.ok(&["resume", "--no-run"]);
    assert_eq!(repo.git(&["rev-parse", &branch]), tip);
}

#[test]
fn session_is_resolved_from_the_checked_out_branch() {
    let repo = TestRepo::new();
    let a = repo.start("spec-only", "first thing");
    let b = repo.start("spec-only", "second thing");
    let err = repo.fails(&["status"], 1);
    assert!(
        err.contains(&a) && err.contains(&b) && err.contains("--session"),
        "{err}"
    );
    repo.git(&[
        "branch",
        &format!("tlv4/{b}.IMPL-001"),
        &format!("tlv4/{b}"),
    ]);
    repo.git(&["checkout", "-q", &format!("tlv4/{b}.IMPL-001")]);
    assert_eq!(
        repo.json(&["status", "--json"])["session"]["id"],
        b.as_str()
    );
}

#[test]
fn pipelines_lists_the_builtin_ones() {
    let repo = TestRepo::new();
    let out = repo.ok(&["pipelines", "--verbose"]);
    for name in [
        "spec-only",
        "impl-only",
        "full-lifecycle",
        "fe-only",
        "fullstack",
        "full-lifecycle-fe",
    ] {
        assert!(out.contains(name), "{name} missing:\n{out}");
    }
}

#[test]
fn start_takes_its_defaults_from_the_config() {
    let repo = TestRepo::new();
    repo.write(
        ".tlv4.toml",
        "[session]\npipeline = \"impl-only\"\nsupervision = false\n",
    );
    repo.start_default("configured");
    let s = repo.json(&["status", "--json"]);
    assert_eq!(s["session"]["pipeline"], "impl-only");
    assert_eq!(s["session"]["supervision"], false);
    assert_eq!(s["tasks"].as_array().unwrap().len(), 4);
}

impl TestRepo {
    fn start_default(&self, text: &str) -> String {
        self.ok(&["start", "--no-run", text]).trim().to_owned()
    }
}
