//! Spend under control: budgets the loop enforces before every task (across `resume`,
//! `undo` and remote workers), per-task bounds that stop a run, usage limits that are waited
//! out rather than failed, and fail-over between the agents of a role — against the fake
//! CLIs and the scripted model server, checked with git.

use crate::common::{TestRepo, fixture};

/// Exit code of a session paused at its budget.
const BUDGET: i32 = 7;

/// A repository whose pipeline `wide` has `n` independent code tasks done by the fake Claude
/// Code (which reports $0.0123 a run), trusted, with `extra` appended to its `.tlv4.toml`.
fn claude_repo(n: usize, extra: &str) -> TestRepo {
    claude_repo_with(n, "", "executor = \"cc\"", extra)
}

/// [`claude_repo`] with `env` (inline-table entries) for the fake and `roles` as the
/// `[roles]` table's body; the fake Codex is agent `cx`.
fn claude_repo_with(n: usize, env: &str, roles: &str, extra: &str) -> TestRepo {
    let repo = TestRepo::new();
    repo.wide_pipeline(n);
    repo.write(
        ".tlv4.toml",
        &format!(
            "[agents.cc]\ndriver = \"claude\"\nprogram = \"{}\"\nmodel = \"sonnet\"\nenv = {{ {env} }}\n\
             [agents.cx]\ndriver = \"codex\"\nprogram = \"{}\"\n[roles]\n{roles}\n{extra}",
            fixture("fake-claude"),
            fixture("fake-codex")
        ),
    );
    repo.ok(&["trust"]);
    repo
}

/// Now, in seconds since the epoch.
fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// The kinds of the session's events, oldest first (first parents).
fn event_kinds(repo: &TestRepo, sid: &str) -> Vec<String> {
    let out = repo.git(&[
        "log",
        "--reverse",
        "--first-parent",
        "--format=%(trailers:key=Tlv4-Event,valueonly)",
        &format!("tlv4/{sid}"),
    ]);
    out.lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

/// A file of a task's run record, attempt `n`.
fn record(repo: &TestRepo, sid: &str, task: &str, n: u32, file: &str) -> String {
    repo.git(&[
        "show",
        &format!("tlv4/{sid}:.tlv4/sessions/{sid}/runs/{task}/{n}/{file}"),
    ])
}

const START: [&str; 7] = [
    "start",
    "--pipeline",
    "wide",
    "--yes",
    "--completion",
    "keep",
    "--no-supervision",
];

fn status(repo: &TestRepo, sid: &str) -> serde_json::Value {
    repo.json(&["--session", sid, "status", "--json"])
}

fn completed(repo: &TestRepo, sid: &str) -> usize {
    status(repo, sid)["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["status"] == "completed")
        .count()
}

/// The session's id, from `list`.
fn only_session(repo: &TestRepo) -> String {
    let rows = repo.rows(&["list", "--json"], "sessions");
    rows[0]["id"].as_str().unwrap().to_owned()
}

#[test]
fn a_session_at_its_dollar_budget_pauses_before_the_next_task_and_goes_on_after_a_raise() {
    // Each run reserves $0.015 ([budget] task_usd) and costs $0.0123: with $0.02 the first
    // task fits, the second does not (0.0123 spent + 0.015 reserved).
    let repo = claude_repo(3, "[budget]\ntask_usd = 0.015\n");
    let start = [
        "start",
        "--pipeline",
        "wide",
        "--yes",
        "--completion",
        "keep",
        "--max-parallel",
        "1",
        "--budget-usd",
        "0.02",
        "three files",
    ];
    let out = repo.tlv4(&start);
    assert_eq!(
        out.status.code(),
        Some(BUDGET),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sid = only_session(&repo);
    let st = status(&repo, &sid);
    assert_eq!(st["session"]["status"], "paused", "{st}");
    let pause = &st["control"]["pause"];
    assert_eq!(pause["kind"], "budget", "{st}");
    let reason = pause["reason"].as_str().unwrap();
    assert!(reason.contains("dollar budget of $0.0200"), "{reason}");
    assert!(reason.contains("executor/cc $0.0123"), "{reason}");
    assert_eq!(completed(&repo, &sid), 1);
    let budget = &st["budget"];
    assert_eq!(budget["usd"], 0.02, "{st}");
    assert_eq!(budget["spent_usd"], 0.0123, "{st}");
    assert!(budget["tokens"].is_null(), "{st}");
    let text = repo.ok(&["--session", &sid, "status"]);
    assert!(
        text.contains("budget    $0.0123 of $0.0200 (62%)"),
        "{text}"
    );
    // The pause is one event with its kind; `approve` does not raise a budget.
    let log = repo.git(&["log", "-1", "--format=%B", &format!("tlv4/{sid}")]);
    assert!(log.contains("Tlv4-Paused: budget"), "{log}");
    let err = repo.fails(&["--session", &sid, "approve"], 1);
    assert!(err.contains("resume --budget-usd"), "{err}");

    // A raise is a recorded decision; the session goes on and completes.
    repo.ok(&["--session", &sid, "resume", "--budget-usd", "+0.03"]);
    assert_eq!(status(&repo, &sid)["session"]["status"], "completed");
    let raises = repo.git(&[
        "log",
        "--format=%(trailers:key=Tlv4-Raise-Usd,valueonly)",
        &format!("tlv4/{sid}"),
    ]);
    assert_eq!(raises.trim(), "0.03", "{raises}");

    // Undo never refunds: with every task pending again, the three runs already spent
    // ($0.0369) and one reserve ($0.015) are over the $0.05 budget.
    let events = repo.git(&[
        "log",
        "--first-parent",
        "--format=%(trailers:key=Tlv4-Event,valueonly)",
        &format!("tlv4/{sid}"),
    ]);
    let back = events
        .lines()
        .filter(|l| !l.is_empty())
        .position(|e| e == "tasks_dispatched")
        .unwrap();
    repo.ok(&["--session", &sid, "undo", "-n", &back.to_string()]);
    assert_eq!(completed(&repo, &sid), 0);
    // `cost` sums the same ledger: the undone runs are still there.
    let cost = repo.json(&["--session", &sid, "cost", "--json"]);
    assert_eq!(cost["total"]["runs"], 3, "{cost}");
    assert!(
        (cost["total"]["cost_usd"].as_f64().unwrap() - 0.0369).abs() < 1e-9,
        "{cost}"
    );
    let out = repo.tlv4(&["--session", &sid, "resume"]);
    assert_eq!(
        out.status.code(),
        Some(BUDGET),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reason = status(&repo, &sid)["control"]["pause"]["reason"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(reason.contains("spent $0.0369"), "{reason}");

    // A fork starts with what its origin spent up to the fork, unless told otherwise.
    let tip = repo.git(&["rev-parse", &format!("tlv4/{sid}")]);
    let runs_of =
        |fork: &str| repo.json(&["--session", fork, "cost", "--json"])["total"]["runs"].clone();
    let carried = repo.ok(&[
        "--session",
        &sid,
        "fork",
        "--at",
        tip.trim(),
        "--name",
        "carried",
    ]);
    assert_eq!(runs_of(carried.trim()), 3);
    let fresh = repo.ok(&[
        "--session",
        &sid,
        "fork",
        "--at",
        tip.trim(),
        "--name",
        "fresh",
        "--fresh-budget",
    ]);
    assert_eq!(runs_of(fresh.trim()), 0);
    let log = repo.git(&[
        "log",
        "-1",
        "--format=%B",
        &format!("tlv4/{}", fresh.trim()),
    ]);
    assert!(log.contains("Tlv4-Ledger: fresh"), "{log}");
    repo.fsck();
}

/// What the remote's copy of session `sid` says: its status and pause kind, and the tasks
/// completed.
fn on_remote(bare: &crate::remote::Bare, sid: &str) -> (String, String, usize) {
    let gd = bare.path();
    let gd = gd.to_str().unwrap();
    let file = |name: &str| {
        bare.git(&[
            "--git-dir",
            gd,
            "show",
            &format!("refs/heads/tlv4/{sid}:.tlv4/sessions/{sid}/{name}"),
        ])
    };
    let session = file("session.toml");
    let control = file("control.toml");
    let value = |text: &str, key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{key} = ")))
            .unwrap_or_default()
            .trim_matches('"')
            .to_owned()
    };
    let tasks = bare.git(&[
        "--git-dir",
        gd,
        "ls-tree",
        "--name-only",
        &format!("refs/heads/tlv4/{sid}:.tlv4/sessions/{sid}/tasks"),
    ]);
    let done = tasks
        .lines()
        .filter(|t| value(&file(&format!("tasks/{t}")), "status") == "completed")
        .count();
    (value(&session, "status"), value(&control, "kind"), done)
}

#[test]
fn workers_on_two_clones_share_one_budget_and_a_raise_made_on_a_third() {
    let bare = crate::remote::Bare::new();
    let first = claude_repo(3, "[budget]\ntask_usd = 0.015\n");
    crate::worker::publish(&first, &bare);
    let sid = first
        .ok(&[
            "start",
            "--remote",
            "origin",
            "--no-run",
            "--pipeline",
            "wide",
            "--yes",
            "--completion",
            "keep",
            "--max-parallel",
            "1",
            "--budget-usd",
            "0.02",
            "shared budget",
        ])
        .trim()
        .to_owned();
    let url = bare.url();
    let worker = |name: &str| {
        let w = crate::remote::clone(&url, name);
        w.ok(&["trust"]);
        let out = w.tlv4(&[
            "--session",
            &sid,
            "worker",
            "--remote",
            &url,
            "--max-parallel",
            "1",
        ]);
        // A worker that leaves the session paused at its budget says so with the exit code.
        assert_eq!(
            out.status.code(),
            Some(BUDGET),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    // The first worker does one task: the second would not fit what is left.
    let said = worker("a");
    assert!(said.contains("paused (budget)"), "{said}");
    assert_eq!(
        on_remote(&bare, &sid),
        ("paused".into(), "budget".into(), 1)
    );
    // A worker on another clone reads the same spend from the history: nothing to do.
    let said = worker("b");
    assert!(said.contains("paused"), "{said}");
    assert_eq!(on_remote(&bare, &sid).2, 1);

    // Someone raises the budget on their clone and pushes the decision.
    let boss = crate::remote::clone(&url, "boss");
    boss.ok(&["pull"]);
    boss.ok(&[
        "--session",
        &sid,
        "resume",
        "--no-run",
        "--budget-usd",
        "+0.015",
    ]);
    boss.ok(&["push"]);
    // One more task fits $0.035 (0.0123 spent + 0.015 reserved); the third does not.
    let said = worker("c");
    assert!(said.contains("paused (budget)"), "{said}");
    assert_eq!(
        on_remote(&bare, &sid),
        ("paused".into(), "budget".into(), 2)
    );
    let gd = bare.path();
    let out = crate::common::hermetic("git", gd.as_path(), bare.home.path())
        .args([
            "--git-dir",
            gd.to_str().unwrap(),
            "fsck",
            "--strict",
            "--no-progress",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_reserve_is_the_median_of_earlier_runs_of_the_role_and_agent() {
    let repo = claude_repo(2, "");
    // One earlier session: the executor on cc cost $0.0123 a run.
    let mut first = START.to_vec();
    first.extend(["--max-parallel", "1", "an earlier session"]);
    repo.ok(&first);
    // With $0.02 and no task bound, the median reserves $0.0123: one task fits, not two.
    let mut second = START.to_vec();
    second.extend([
        "--max-parallel",
        "1",
        "--budget-usd",
        "0.02",
        "a bounded session",
    ]);
    let out = repo.tlv4(&second);
    assert_eq!(
        out.status.code(),
        Some(BUDGET),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sid = repo
        .rows(&["list", "--json"], "sessions")
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .find(|id| id.contains("bounded"))
        .unwrap();
    let reason = status(&repo, &sid)["control"]["pause"]["reason"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(reason.contains("$0.0123 reserved for this one"), "{reason}");
    assert_eq!(completed(&repo, &sid), 1);
}

#[test]
fn a_usage_limit_far_away_pauses_with_kind_limit_and_resume_wait_goes_on_after_it() {
    // Far enough ahead that a loaded machine has not reached it before the first run.
    let until = now() + 10;
    let repo = claude_repo_with(
        1,
        &format!("FAKE_LIMIT_UNTIL = \"{until}\""),
        "executor = \"cc\"",
        "[limits]\nwait_up_to = \"1s\"\n",
    );
    let mut args = START.to_vec();
    args.push("limited");
    let out = repo.tlv4(&args);
    assert_eq!(
        out.status.code(),
        Some(8),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sid = only_session(&repo);
    let st = status(&repo, &sid);
    let pause = &st["control"]["pause"];
    assert_eq!(pause["kind"], "limit", "{st}");
    assert!(pause["until"].as_str().is_some(), "{st}");
    assert!(
        pause["reason"].as_str().unwrap().contains("agent cc"),
        "{st}"
    );
    // Back to pending, never failed; the event names the agent.
    assert_eq!(st["tasks"][0]["status"], "pending", "{st}");
    let kinds = event_kinds(&repo, &sid);
    assert!(!kinds.iter().any(|k| k == "task_failed"), "{kinds:?}");
    let log = repo.git(&["log", "--format=%B", &format!("tlv4/{sid}")]);
    assert!(
        log.contains("Tlv4-Agent: cc") && log.contains("Tlv4-Paused: limit"),
        "{log}"
    );
    assert_eq!(
        repo.tlv4(&["--session", &sid, "resume"]).status.code(),
        Some(8),
        "still limited"
    );

    // `resume --wait` sleeps until the reset, then the task runs.
    let out = repo.tlv4(&["--session", &sid, "resume", "--wait"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("waiting for the usage limit to reset"),
        "{err}"
    );
    assert!(now() >= until);
    assert_eq!(status(&repo, &sid)["session"]["status"], "completed");
    repo.fsck();
}

#[test]
fn a_usage_limit_that_resets_soon_is_waited_out_in_the_run() {
    let until = now() + 6;
    let repo = claude_repo_with(
        1,
        &format!("FAKE_LIMIT_UNTIL = \"{until}\""),
        "executor = \"cc\"",
        "",
    );
    let mut args = START.to_vec();
    args.push("soon");
    let out = repo.tlv4(&args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("IMPL-001 waits for agent cc's usage limit"),
        "{err}"
    );
    let sid = only_session(&repo);
    assert_eq!(status(&repo, &sid)["session"]["status"], "completed");
    let kinds = event_kinds(&repo, &sid);
    assert!(kinds.contains(&"tasks_interrupted".to_owned()), "{kinds:?}");
    assert!(
        !kinds
            .iter()
            .any(|k| k == "task_failed" || k == "session_paused"),
        "{kinds:?}"
    );
}

#[test]
fn a_fail_over_list_finishes_the_task_on_the_next_agent() {
    let repo = claude_repo_with(
        1,
        &format!("FAKE_LIMIT_UNTIL = \"{}\"", now() + 3600),
        "executor = [\"cc\", \"cx\"]",
        "",
    );
    let mut args = START.to_vec();
    args.push("fail over");
    let out = repo.tlv4(&args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let sid = only_session(&repo);
    assert_eq!(status(&repo, &sid)["session"]["status"], "completed");
    // The event that returned the task names the limited agent and the next one; the
    // record of the attempt that did the work names the agent that did it.
    let log = repo.git(&["log", "--format=%B", &format!("tlv4/{sid}")]);
    assert!(
        log.contains("agent cc hit a usage limit") && log.contains("agent cx takes it next"),
        "{log}"
    );
    let usage: serde_json::Value =
        serde_json::from_str(&record(&repo, &sid, "IMPL-001", 2, "usage.json")).unwrap();
    assert_eq!(usage["agent"], "cx", "{usage}");
    let result: serde_json::Value =
        serde_json::from_str(&record(&repo, &sid, "IMPL-001", 2, "result.json")).unwrap();
    assert_eq!(result["outcome"], "completed", "{result}");
    repo.fsck();
}

#[test]
fn a_short_retry_after_is_waited_out_with_no_failed_attempt() {
    // Far enough ahead that a busy machine's set-up does not reach it before the first request.
    let until = now() + 4;
    let (server, repo) = crate::agents::model_server_repo_with(
        &format!("limit={until}"),
        "m",
        "timeout = \"60s\"\n",
    );
    repo.wide_pipeline(1);
    let mut args = START.to_vec();
    args.extend(["--agent", "local", "rate limited"]);
    repo.ok(&args);
    let sid = only_session(&repo);
    let st = status(&repo, &sid);
    assert_eq!(st["session"]["status"], "completed", "{st}");
    assert_eq!(st["tasks"][0]["attempts"], 1, "{st}");
    assert!(now() >= until);
    let kinds = event_kinds(&repo, &sid);
    assert!(
        !kinds
            .iter()
            .any(|k| k == "task_failed" || k == "tasks_interrupted"),
        "{kinds:?}"
    );
    // The server refused at least once before it answered.
    assert!(server.requests().len() >= 2, "{:?}", server.requests());
}

#[test]
fn a_task_bound_stops_a_streaming_run_and_pauses_the_session() {
    let (_server, repo) = crate::agents::model_server_repo_with(
        "stream,forever",
        "m",
        "timeout = \"60s\"\n[budget]\ntask_tokens = 200\n",
    );
    repo.wide_pipeline(1);
    let mut args = START.to_vec();
    args.extend(["--agent", "local", "bounded run"]);
    let out = repo.tlv4(&args);
    assert_eq!(
        out.status.code(),
        Some(BUDGET),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sid = only_session(&repo);
    let st = status(&repo, &sid);
    let pause = &st["control"]["pause"];
    assert_eq!(pause["kind"], "budget", "{st}");
    assert!(
        pause["reason"]
            .as_str()
            .unwrap()
            .contains("stopped at its task bound"),
        "{st}"
    );
    assert_eq!(st["tasks"][0]["status"], "failed", "{st}");
    // What the run counted before it was stopped is spent: the ledger has it.
    let usage: serde_json::Value =
        serde_json::from_str(&record(&repo, &sid, "IMPL-001", 1, "usage.json")).unwrap();
    let tokens = usage["output_tokens"].as_u64().unwrap();
    assert!(tokens > 200 && tokens < 2000, "{usage}");
    // `resume --retry` runs the task again (here, to the same bound).
    let out = repo.tlv4(&["--session", &sid, "resume", "--retry"]);
    assert_eq!(
        out.status.code(),
        Some(BUDGET),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(record(&repo, &sid, "IMPL-001", 2, "usage.json").contains("output_tokens"));
    repo.fsck();
}

#[test]
fn a_service_that_cannot_be_reached_sends_the_task_to_the_next_agent_a_bad_request_does_not() {
    let repo = claude_repo_with(
        1,
        "FAKE_AGENT_MODE = \"unreachable\"",
        "executor = [\"cc\", \"cx\"]",
        "",
    );
    let mut args = START.to_vec();
    args.push("unreachable");
    let out = repo.tlv4(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sid = only_session(&repo);
    let log = repo.git(&["log", "--format=%B", &format!("tlv4/{sid}")]);
    assert!(
        log.contains("agent cc's service failed") && log.contains("agent cx takes it next"),
        "{log}"
    );
    let usage: serde_json::Value =
        serde_json::from_str(&record(&repo, &sid, "IMPL-001", 2, "usage.json")).unwrap();
    assert_eq!(usage["agent"], "cx", "{usage}");

    // A request the service refuses as bad is the agent's failure: no fail-over.
    let repo = claude_repo_with(
        1,
        "FAKE_AGENT_MODE = \"api_error\"",
        "executor = [\"cc\", \"cx\"]",
        "",
    );
    let mut args = START.to_vec();
    args.push("bad request");
    let out = repo.tlv4(&args);
    assert_eq!(
        out.status.code(),
        Some(6),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sid = only_session(&repo);
    assert_eq!(status(&repo, &sid)["tasks"][0]["status"], "failed");
}

#[test]
fn raises_made_on_two_clones_apart_both_count_after_pull() {
    let bare = crate::remote::Bare::new();
    let first = claude_repo(2, "[budget]\ntask_usd = 0.015\n");
    crate::worker::publish(&first, &bare);
    let mut args = START.to_vec();
    args.extend(["--max-parallel", "1", "--budget-usd", "0.02", "two raises"]);
    assert_eq!(first.tlv4(&args).status.code(), Some(BUDGET));
    let sid = only_session(&first);
    first.ok(&["push"]);
    let (a, b) = (
        crate::remote::clone(&bare.url(), "a"),
        crate::remote::clone(&bare.url(), "b"),
    );
    for (clone, by) in [(&a, "+0.01"), (&b, "+0.005")] {
        clone.ok(&["pull"]);
        clone.ok(&["--session", &sid, "resume", "--no-run", "--budget-usd", by]);
    }
    a.ok(&["push"]);
    // b's push is refused (a moved the session); its pull merges the two decisions.
    b.fails(&["push"], 3);
    b.ok(&["pull"]);
    let text = b.ok(&["--session", &sid, "status"]);
    assert!(text.contains("of $0.0350"), "{text}");
    b.ok(&["push"]);
    b.fsck();
}

#[test]
fn a_worker_whose_agent_is_limited_gives_the_task_back_and_takes_it_again_after_the_reset() {
    let bare = crate::remote::Bare::new();
    let until = now() + 10;
    let first = claude_repo_with(
        1,
        &format!("FAKE_LIMIT_UNTIL = \"{until}\""),
        "executor = \"cc\"",
        "",
    );
    crate::worker::publish(&first, &bare);
    let sid = first
        .ok(&[
            "start",
            "--remote",
            "origin",
            "--no-run",
            "--pipeline",
            "wide",
            "--yes",
            "--completion",
            "keep",
            "--no-supervision",
            "limited worker",
        ])
        .trim()
        .to_owned();
    let url = bare.url();
    let w = crate::remote::clone(&url, "w");
    w.ok(&["trust"]);
    let out = w.tlv4(&["--session", &sid, "worker", "--remote", &url]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(now() >= until);
    assert_eq!(
        on_remote(&bare, &sid),
        ("completed".into(), String::new(), 1)
    );
    // On the remote: the task was given back (its lease with it), never failed.
    let gd = bare.path();
    let log = bare.git(&[
        "--git-dir",
        gd.to_str().unwrap(),
        "log",
        "--format=%B",
        &format!("refs/heads/tlv4/{sid}"),
    ]);
    assert!(
        log.contains("Tlv4-Agent: cc") && !log.contains("Tlv4-Event: task_failed"),
        "{log}"
    );
    let leases = bare.git(&[
        "--git-dir",
        gd.to_str().unwrap(),
        "for-each-ref",
        "refs/tlv4/leases/",
    ]);
    assert!(leases.trim().is_empty(), "{leases}");
}

#[test]
fn a_long_retry_after_is_a_limit_the_session_pauses_for_not_a_failure() {
    // The server refuses for 100 s: more than the driver sleeps through, more than the
    // session waits (`wait_up_to = "1s"`).
    let until = now() + 100;
    let (_server, repo) = crate::agents::model_server_repo_with(
        &format!("limit={until}"),
        "m",
        "timeout = \"60s\"\n[limits]\nwait_up_to = \"1s\"\n",
    );
    repo.wide_pipeline(1);
    let mut args = START.to_vec();
    args.extend(["--agent", "local", "long retry"]);
    let out = repo.tlv4(&args);
    assert_eq!(
        out.status.code(),
        Some(8),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sid = only_session(&repo);
    let st = status(&repo, &sid);
    assert_eq!(st["control"]["pause"]["kind"], "limit", "{st}");
    assert_eq!(st["tasks"][0]["status"], "pending", "{st}");
    // The reset is recorded with the pause and in its event.
    let at = st["control"]["pause"]["until"].as_str().unwrap();
    let stamp = repo.git(&[
        "log",
        "-1",
        "--format=%(trailers:key=Tlv4-Until,valueonly)",
        &format!("tlv4/{sid}"),
    ]);
    assert_eq!(stamp.trim(), at);
    assert!(!event_kinds(&repo, &sid).iter().any(|k| k == "task_failed"));
}
