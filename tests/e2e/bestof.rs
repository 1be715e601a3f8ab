//! Best of N with scripted executors on a sample written here (a calculator and its
//! `unittest` suite): one candidate breaks the tests, one passes them but writes a hard-coded
//! secret (the review blocks it), one is clean — the clean one is merged, all three are kept
//! under their run refs and measured in the record; `--accept-first` starts nothing after a
//! perfect candidate; a run killed between candidates takes the finished ones as they were.

use std::os::unix::process::CommandExt;

use crate::common::{TestRepo, fixture};
use crate::remote::Bare;
use crate::worker::{log_of, spawn_worker_with, trusted_clone, wait, worker_cmd};

pub(crate) const CALC: &str = "def add(a, b):\n    return a + b\n";
pub(crate) const CLEAN: &str =
    "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n";
pub(crate) const BROKEN: &str =
    "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n";

/// The sample, its tests, and one `command` agent per candidate style, each writing
/// `app/calc.py` as given.
pub(crate) fn sample(agents: &[(&str, String)]) -> TestRepo {
    let agents: Vec<(&str, String, Option<f64>)> = agents
        .iter()
        .map(|(n, c)| (*n, c.clone(), Some(0.0)))
        .collect();
    sample_slow(&agents)
}

/// [`sample`] whose agents sleep the seconds given before they write (`None`: what
/// `SCRIPTED_SLEEP` of the process that runs them says).
fn sample_slow(agents: &[(&str, String, Option<f64>)]) -> TestRepo {
    let repo = TestRepo::new();
    repo.wide_pipeline(1);
    repo.write("app/__init__.py", "");
    repo.write("app/calc.py", CALC);
    repo.write("tests/__init__.py", "");
    repo.write(
        "tests/test_calc.py",
        "import unittest\n\nfrom app.calc import add\n\n\nclass Calc(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n",
    );
    let mut toml =
        String::from("[tests]\ncommand = \"python3 -m unittest discover -s tests -t . -v\"\n");
    for (name, calc, sleep) in agents {
        let files = serde_json::json!({ "app/calc.py": calc }).to_string();
        let sleep = sleep.map_or(String::new(), |s| format!(", SCRIPTED_SLEEP = \"{s}\""));
        toml.push_str(&format!(
            "[agents.{name}]\ndriver = \"command\"\nprogram = \"{}\"\ntimeout = \"120s\"\n\
             env = {{ SCRIPTED_MODE = \"write\", SCRIPTED_WRITE = '{files}'{sleep} }}\n",
            fixture("scripted-agent"),
        ));
    }
    repo.write(".tlv4.toml", &toml);
    repo.git(&["add", "-A"]);
    repo.git(&[
        "commit",
        "-q",
        "-m",
        "calc, its tests, the candidates' agents",
    ]);
    repo.ok(&["trust"]);
    repo
}

pub(crate) fn secret() -> String {
    format!("{CLEAN}\n{} = \"{}\"\n", "password", "Tr0ub4dor&3xyzzy")
}

/// `git tlv4 start --pipeline wide --yes --completion keep ARGS "add mul"` on the sample: the
/// session id, what it said on stderr, and its exit code.
fn start(repo: &TestRepo, args: &[&str]) -> (String, String, Option<i32>) {
    let mut all = vec![
        "start",
        "--pipeline",
        "wide",
        "--yes",
        "--completion",
        "keep",
    ];
    all.extend_from_slice(args);
    all.push("add mul");
    let out = repo.tlv4_cmd(&all).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let sid = stdout.lines().next().unwrap_or_default().trim().to_owned();
    (
        sid,
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code(),
    )
}

/// `git fsck --strict` of the remote `bare` passes.
fn fsck_remote(repo: &TestRepo, bare: &Bare) {
    let gd = bare.path();
    let fsck = repo
        .git_cmd(&["--git-dir", gd.to_str().unwrap(), "fsck", "--strict"])
        .output()
        .unwrap();
    assert!(
        fsck.status.success(),
        "{}",
        String::from_utf8_lossy(&fsck.stderr)
    );
}

/// Waits, a minute at most, until `done`; fails saying `what` otherwise.
fn until(done: impl Fn() -> bool, what: impl Fn() -> String) {
    let waited = std::time::Instant::now();
    while !done() {
        assert!(waited.elapsed().as_secs() < 60, "{}", what());
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// `start` of the sample with `--max-parallel 1 --best-of best_of` (its agents sleeping
/// `sleep` seconds where they leave it to the environment), as a child process, once
/// candidate 1 is kept.
fn one_at_a_time(repo: &TestRepo, best_of: &str, sleep: &str) -> std::process::Child {
    let mut cmd = repo.tlv4_cmd(&[
        "start",
        "--pipeline",
        "wide",
        "--yes",
        "--completion",
        "keep",
        "--max-parallel",
        "1",
        "--best-of",
        best_of,
        "add mul",
    ]);
    if !sleep.is_empty() {
        cmd.env("SCRIPTED_SLEEP", sleep);
    }
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    until(
        || {
            repo.git(&["for-each-ref", "--format=%(refname)", "refs/tlv4/runs/"])
                .contains("/1-c1")
        },
        || "candidate 1 never finished".to_string(),
    );
    child
}

fn candidates(repo: &TestRepo, sid: &str, attempt: u32) -> serde_json::Value {
    let path = format!(".tlv4/sessions/{sid}/runs/IMPL-001/{attempt}/candidates.json");
    serde_json::from_str(&repo.git(&["show", &format!("tlv4/{sid}:{path}")])).unwrap()
}

#[test]
fn the_clean_candidate_is_merged_and_the_other_two_are_kept_and_measured() {
    let repo = sample(&[
        ("broken", BROKEN.to_owned()),
        ("leaky", secret()),
        ("clean", CLEAN.to_owned()),
    ]);
    let (sid, stderr, code) = start(&repo, &["--best-of", "broken,leaky,clean"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        repo.task(&sid, "IMPL-001")["status"],
        "completed",
        "{stderr}"
    );
    // The session has the clean candidate's code.
    assert_eq!(
        repo.git(&["show", &format!("tlv4/{sid}:app/calc.py")]),
        CLEAN
    );
    // Every candidate is measured in the record, the rule with it.
    let rec = candidates(&repo, &sid, 1);
    assert_eq!(rec["picked"], 3, "{rec:#}");
    assert!(
        rec["rule"].as_str().unwrap().starts_with("tests first"),
        "{rec:#}"
    );
    let c = &rec["candidates"];
    assert_eq!(c[0]["agent"], "broken");
    assert_eq!(c[0]["tests"]["meets_target"], false, "{rec:#}");
    assert_eq!(c[0]["tests"]["failed"], 1, "{rec:#}");
    assert!(
        c[0]["tests"]["failures"].to_string().contains("test_add"),
        "{rec:#}"
    );
    assert_eq!(c[1]["tests"]["meets_target"], true, "{rec:#}");
    assert_eq!(c[1]["review"]["verdict"], "BLOCK", "{rec:#}");
    assert!(
        c[1]["review"]["blocking"]
            .to_string()
            .contains("app/calc.py"),
        "{rec:#}"
    );
    assert_eq!(c[2]["tests"]["passed"], 1, "{rec:#}");
    assert_ne!(c[2]["review"]["verdict"], "BLOCK", "{rec:#}");
    assert_eq!(c[2]["rank"], 1);
    assert!(c[2]["diff"]["added"].as_u64().unwrap() >= 3, "{rec:#}");
    // Each is kept under its own run ref, on the tip it started from.
    let refs = repo.git(&[
        "for-each-ref",
        "--format=%(refname)",
        &format!("refs/tlv4/runs/{sid}/IMPL-001/"),
    ]);
    for k in 1..=3 {
        let name = format!("refs/tlv4/runs/{sid}/IMPL-001/1-c{k}");
        assert!(refs.lines().any(|l| l == name), "{refs}");
        assert_eq!(c[k - 1]["ref"], name.as_str());
        assert_eq!(
            repo.git(&["rev-parse", &name]).trim(),
            c[k - 1]["commit"].as_str().unwrap()
        );
    }
    let leaky = repo.git(&[
        "show",
        &format!("refs/tlv4/runs/{sid}/IMPL-001/1-c2:app/calc.py"),
    ]);
    assert!(leaky.contains("Tr0ub4dor"), "{leaky}");
    // The task branch is the picked candidate; the event says which.
    assert_eq!(
        repo.git(&["rev-parse", &format!("tlv4/{sid}.IMPL-001")])
            .trim(),
        c[2]["commit"].as_str().unwrap()
    );
    let event = repo.git(&[
        "log",
        "-1",
        "--format=%B",
        "--grep=Tlv4-Picked",
        &format!("tlv4/{sid}"),
    ]);
    assert!(
        event.contains("Tlv4-Best-Of: 3") && event.contains("Tlv4-Picked: 3"),
        "{event}"
    );
    // Every candidate's spend is on record, once.
    for k in 1..=3 {
        let usage = repo.git(&[
            "show",
            &format!("tlv4/{sid}:.tlv4/sessions/{sid}/runs/IMPL-001/1/candidate-{k}/usage.json"),
        ]);
        assert!(usage.contains(&format!("\"candidate\": {k}")), "{usage}");
    }
    let files = repo.git(&["ls-tree", "-r", "--name-only", &format!("tlv4/{sid}")]);
    assert!(!files.contains("runs/IMPL-001/1/usage.json"), "{files}");
    repo.fsck();
}

#[test]
fn accept_first_starts_no_candidate_after_a_perfect_one() {
    let repo = sample(&[("clean", CLEAN.to_owned()), ("broken", BROKEN.to_owned())]);
    let (sid, stderr, code) = start(
        &repo,
        &[
            "--max-parallel",
            "1",
            "--best-of",
            "clean,broken,clean",
            "--accept-first",
        ],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        repo.task(&sid, "IMPL-001")["status"],
        "completed",
        "{stderr}"
    );
    let rec = candidates(&repo, &sid, 1);
    assert_eq!(rec["picked"], 1, "{rec:#}");
    assert_eq!(rec["accept_first"], true);
    for k in [1, 2] {
        let outcome = rec["candidates"][k]["outcome"].as_str().unwrap();
        assert!(outcome.starts_with("stopped: not started"), "{rec:#}");
    }
    let refs = repo.git(&["for-each-ref", "--format=%(refname)", "refs/tlv4/runs/"]);
    assert_eq!(refs.lines().count(), 1, "{refs}");
    repo.fsck();
}

/// Candidates side by side: once the quick one is perfect, the slow one running beside it is
/// stopped (its run says so), and the clean one is merged.
#[test]
fn accept_first_stops_a_candidate_running_beside_the_perfect_one() {
    let repo = sample_slow(&[
        ("clean", CLEAN.to_owned(), Some(0.0)),
        ("slow", BROKEN.to_owned(), Some(90.0)),
    ]);
    let (sid, stderr, code) = start(
        &repo,
        &[
            "--max-parallel",
            "2",
            "--best-of",
            "clean,slow",
            "--accept-first",
        ],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let rec = candidates(&repo, &sid, 1);
    assert_eq!(rec["picked"], 1, "{rec:#}");
    let slow = rec["candidates"][1]["outcome"].as_str().unwrap();
    assert!(
        slow.starts_with("stopped: candidate 1 passed every test"),
        "{rec:#}"
    );
    // Stopped before it wrote anything: its snapshot changes nothing, and is kept all the same.
    assert_eq!(
        rec["candidates"][1]["changed"],
        serde_json::json!([]),
        "{rec:#}"
    );
    repo.git(&["rev-parse", &format!("refs/tlv4/runs/{sid}/IMPL-001/1-c2")]);
    repo.fsck();
}

/// The tool killed while candidate 2 runs: `resume` takes candidate 1 as it was (not run
/// again), runs the other two, and picks as before.
#[test]
fn a_run_killed_between_candidates_resumes_without_running_a_finished_one_again() {
    let repo = sample_slow(&[
        ("clean", CLEAN.to_owned(), Some(0.0)),
        ("slow", BROKEN.to_owned(), Some(4.0)),
        ("leaky", secret(), Some(0.0)),
    ]);
    let mut child = one_at_a_time(&repo, "clean,slow,leaky", "");
    let listed = || repo.git(&["for-each-ref", "--format=%(refname)", "refs/tlv4/runs/"]);
    // Candidate 2 sleeps before it writes: the tool dies while it runs.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    child.wait().unwrap();
    let refs = listed();
    assert!(!refs.contains("-c2"), "{refs}");
    let sid = repo.git(&[
        "for-each-ref",
        "--format=%(refname:lstrip=2)",
        "refs/heads/tlv4/",
    ]);
    let sid = sid
        .lines()
        .find(|l| !l.contains('.'))
        .unwrap()
        .trim()
        .trim_start_matches("tlv4/")
        .to_owned();
    let out = repo.tlv4(&["--session", &sid, "resume"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(repo.task(&sid, "IMPL-001")["status"], "completed");
    let attempt = repo.task(&sid, "IMPL-001")["attempts"].as_u64().unwrap() as u32;
    assert!(attempt >= 2, "{attempt}");
    let rec = candidates(&repo, &sid, attempt);
    assert_eq!(rec["picked"], 1, "{rec:#}");
    let c = &rec["candidates"];
    assert_eq!(c[0]["reused"], true, "{rec:#}");
    assert_eq!(
        c[0]["ref"],
        format!("refs/tlv4/runs/{sid}/IMPL-001/1-c1").as_str()
    );
    assert_eq!(c[1]["reused"], false, "{rec:#}");
    // Candidate 1 ran once: one ref of it, one usage record of it.
    let refs = listed();
    assert_eq!(
        refs.lines().filter(|l| l.ends_with("-c1")).count(),
        1,
        "{refs}"
    );
    assert_eq!(
        refs.lines().filter(|l| l.ends_with("-c2")).count(),
        1,
        "{refs}"
    );
    let files = repo.git(&["ls-tree", "-r", "--name-only", &format!("tlv4/{sid}")]);
    assert_eq!(
        files
            .lines()
            .filter(|l| l.ends_with("candidate-1/usage.json"))
            .count(),
        1,
        "{files}"
    );
    repo.fsck();
}

/// No candidate passes (one breaks the tests, the other is blocked by the review): the task
/// fails with both kept and measured, and its reason names the best and how to take it.
#[test]
fn when_every_candidate_fails_the_task_fails_naming_the_best_and_how_to_take_it() {
    let repo = sample(&[("broken", BROKEN.to_owned()), ("leaky", secret())]);
    let (sid, stderr, _) = start(&repo, &["--best-of", "broken,leaky"]);
    let task = repo.task(&sid, "IMPL-001");
    assert_eq!(task["status"], "failed", "{task}\n{stderr}");
    let reason = task["result"].to_string();
    assert!(reason.contains("no candidate of 2 passes"), "{reason}");
    assert!(reason.contains("git tlv4 pick IMPL-001 2"), "{reason}");
    assert!(stderr.contains("git tlv4 pick IMPL-001 2"), "{stderr}");
    let rec = candidates(&repo, &sid, 1);
    assert_eq!(rec["picked"], serde_json::Value::Null, "{rec:#}");
    assert_eq!(rec["best"], 2, "{rec:#}");
    assert_eq!(rec["candidates"][0]["tests"]["meets_target"], false);
    assert_eq!(rec["candidates"][1]["review"]["verdict"], "BLOCK");
    // Nothing merged: the session's code is the base's; both are kept.
    assert_eq!(
        repo.git(&["show", &format!("tlv4/{sid}:app/calc.py")]),
        CALC
    );
    for k in 1..=2 {
        repo.git(&[
            "rev-parse",
            &format!("refs/tlv4/runs/{sid}/IMPL-001/1-c{k}"),
        ]);
    }
    repo.fsck();
}

/// Pushes the sample `first` to `bare` as `origin` and starts there a session with
/// `--best-of best_of` that workers run (`start --remote --no-run`); its id.
fn share(first: &TestRepo, bare: &Bare, best_of: &str) -> String {
    first.git(&["remote", "add", "origin", &bare.url()]);
    first.git(&["push", "-q", "origin", "main"]);
    first
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
            "--best-of",
            best_of,
            "add mul",
        ])
        .trim()
        .to_owned()
}

/// A best-of session shared through a remote: a worker on another clone runs the candidates;
/// the session, the task branch and every candidate's ref reach the remote with its result.
#[test]
fn a_remote_worker_runs_the_candidates_and_they_all_reach_the_remote() {
    let bare = Bare::new();
    let first = sample(&[("broken", BROKEN.to_owned()), ("clean", CLEAN.to_owned())]);
    let sid = share(&first, &bare, "broken,clean");
    let second = trusted_clone(&bare.url(), "second");
    let mut worker = spawn_worker_with(&second, &bare.url(), &sid, &[], &[]);
    assert!(
        wait(&mut worker, &second),
        "{}",
        crate::worker::log_of(&second)
    );
    let gd = bare.path();
    let on_remote = |args: &[&str]| {
        let mut all = vec!["--git-dir", gd.to_str().unwrap()];
        all.extend_from_slice(args);
        first.git(&all)
    };
    let rec: serde_json::Value = serde_json::from_str(&on_remote(&[
        "show",
        &format!("tlv4/{sid}:.tlv4/sessions/{sid}/runs/IMPL-001/1/candidates.json"),
    ]))
    .unwrap();
    assert_eq!(rec["picked"], 2, "{rec:#}");
    for k in 1..=2 {
        let name = format!("refs/tlv4/runs/{sid}/IMPL-001/1-c{k}");
        assert_eq!(
            on_remote(&["rev-parse", &name]).trim(),
            rec["candidates"][k - 1]["commit"].as_str().unwrap()
        );
    }
    assert_eq!(
        on_remote(&["show", &format!("tlv4/{sid}:app/calc.py")]),
        CLEAN
    );
    fsck_remote(&first, &bare);
}

/// A worker killed while its second candidate runs: the first went to the remote as soon as
/// it was kept, so the worker that takes the task over, on another clone, takes it as it was
/// and runs only the second.
#[test]
fn a_worker_taking_a_task_over_takes_the_candidates_the_first_one_sent() {
    let bare = Bare::new();
    let first = sample_slow(&[
        ("clean", CLEAN.to_owned(), Some(0.0)),
        ("slow", BROKEN.to_owned(), None),
    ]);
    let sid = share(&first, &bare, "clean,slow");
    let url = bare.url();
    let gd = bare.path().to_str().unwrap().to_owned();
    let on_remote = |args: &[&str]| {
        let mut all = vec!["--git-dir", gd.as_str()];
        all.extend_from_slice(args);
        first.git(&all)
    };
    let remote_refs = || on_remote(&["for-each-ref", "--format=%(refname)", "refs/tlv4/runs/"]);
    let doomed = trusted_clone(&url, "doomed");
    let mut cmd = worker_cmd(&doomed, &url, &sid, &["--lease", "2", "--skew", "0.5"]);
    cmd.env("SCRIPTED_SLEEP", "60").process_group(0);
    let mut a = cmd.spawn().unwrap();
    until(
        || remote_refs().contains("/1-c1"),
        || format!("candidate 1 never reached the remote: {}", log_of(&doomed)),
    );
    let pid = i32::try_from(a.id()).unwrap();
    // SAFETY: a signal to the process group this test started.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    a.wait().unwrap();
    let other = trusted_clone(&url, "other");
    let mut b = spawn_worker_with(
        &other,
        &url,
        &sid,
        &[("SCRIPTED_SLEEP", "0")],
        &["--lease", "10", "--skew", "0.5"],
    );
    assert!(wait(&mut b, &other), "{}", log_of(&other));
    let records = on_remote(&["ls-tree", "-r", "--name-only", &format!("tlv4/{sid}")]);
    let path = records
        .lines()
        .find(|l| l.contains("runs/IMPL-001/") && l.ends_with("candidates.json"))
        .unwrap_or_else(|| panic!("{records}"));
    assert!(
        !path.contains("/IMPL-001/1/"),
        "taken over, so attempt 2 or later: {path}"
    );
    let rec: serde_json::Value =
        serde_json::from_str(&on_remote(&["show", &format!("tlv4/{sid}:{path}")])).unwrap();
    assert_eq!(rec["picked"], 1, "{rec:#}");
    assert_eq!(rec["candidates"][0]["reused"], true, "{rec:#}");
    assert_eq!(
        rec["candidates"][0]["ref"],
        format!("refs/tlv4/runs/{sid}/IMPL-001/1-c1").as_str()
    );
    assert_eq!(rec["candidates"][1]["reused"], false, "{rec:#}");
    let refs = remote_refs();
    assert_eq!(
        refs.lines().filter(|l| l.ends_with("-c1")).count(),
        1,
        "{refs}"
    );
    fsck_remote(&first, &bare);
}

/// The budget holds every candidate's reserve before the first starts: three candidates of a
/// $1 task do not fit $2.50, and nothing runs.
#[test]
fn the_budget_reserves_every_candidate_before_the_first_starts() {
    let repo = sample(&[("clean", CLEAN.to_owned()), ("broken", BROKEN.to_owned())]);
    let toml = std::fs::read_to_string(repo.path().join(".tlv4.toml")).unwrap();
    repo.write(".tlv4.toml", &format!("{toml}[budget]\ntask_usd = 1.0\n"));
    repo.git(&["commit", "-qam", "a task bound"]);
    repo.ok(&["trust"]);
    let (sid, stderr, code) = start(
        &repo,
        &["--budget-usd", "2.5", "--best-of", "clean,broken,clean"],
    );
    assert_eq!(code, Some(7), "{stderr}");
    let status = repo.json(&["--session", &sid, "status", "--json"]);
    let pause = &status["control"]["pause"];
    assert_eq!(pause["kind"], "budget", "{status}");
    assert!(
        pause["reason"].as_str().unwrap().contains("3 candidates"),
        "{pause}"
    );
    assert_eq!(repo.task(&sid, "IMPL-001")["status"], "pending");
    let refs = repo.git(&["for-each-ref", "refs/tlv4/runs/"]);
    assert!(refs.is_empty(), "{refs}");
    // Raised to $3: the three fit.
    let out = repo.tlv4(&["--session", &sid, "resume", "--budget-usd", "+0.5"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(repo.task(&sid, "IMPL-001")["status"], "completed");
}

/// Two workers on one best-of task: the one that holds it runs candidate 1 (slow), the other,
/// with nothing to claim, claims candidate 2 and runs it beside; the holder takes what the
/// other sent, and no claim is left on the remote.
#[test]
fn two_workers_run_the_candidates_of_one_task_side_by_side() {
    let bare = Bare::new();
    let first = sample_slow(&[
        ("slow", CLEAN.to_owned(), Some(4.0)),
        ("quick", CLEAN.to_owned(), Some(0.0)),
    ]);
    let sid = share(&first, &bare, "slow,quick");
    let url = bare.url();
    let gd = bare.path().to_str().unwrap().to_owned();
    let on_remote = |args: &[&str]| {
        let mut all = vec!["--git-dir", gd.as_str()];
        all.extend_from_slice(args);
        first.git(&all)
    };
    let holder = trusted_clone(&url, "holder");
    let args = [
        "--session",
        &sid,
        "worker",
        "--remote",
        &url,
        "--max-parallel",
        "1",
    ];
    let log = std::fs::File::create(holder.home.path().join("worker.log")).unwrap();
    let mut a = holder
        .tlv4_cmd(&args)
        .stdout(std::process::Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    until(
        || on_remote(&["for-each-ref", "--format=%(refname)", "refs/tlv4/claims/"]).contains("/c1"),
        || format!("no claim on candidate 1: {}", log_of(&holder)),
    );
    let helper = trusted_clone(&url, "helper");
    let mut b = spawn_worker_with(&helper, &url, &sid, &[], &[]);
    assert!(wait(&mut a, &holder), "{}", log_of(&holder));
    assert!(wait(&mut b, &helper), "{}", log_of(&helper));
    let rec: serde_json::Value = serde_json::from_str(&on_remote(&[
        "show",
        &format!("tlv4/{sid}:.tlv4/sessions/{sid}/runs/IMPL-001/1/candidates.json"),
    ]))
    .unwrap();
    let c = &rec["candidates"];
    assert_eq!(c[0]["reused"], false, "{rec:#}");
    assert_eq!(c[1]["reused"], false, "{rec:#}");
    assert_ne!(c[0]["worker"], c[1]["worker"], "{rec:#}");
    assert!(rec["picked"].is_number(), "{rec:#}");
    assert!(
        log_of(&helper).contains("running candidate 2 beside"),
        "{}",
        log_of(&helper)
    );
    let claims = on_remote(&["for-each-ref", "refs/tlv4/claims/", "refs/tlv4/leases/"]);
    assert!(claims.trim().is_empty(), "{claims}");
    fsck_remote(&first, &bare);
}

/// The tool stopped by SIGTERM while candidate 2 runs: candidate 2 is kept as interrupted,
/// and `resume` takes candidate 1 as it was but runs candidate 2 again (a signal is not an
/// answer).
#[test]
fn a_candidate_a_signal_stopped_runs_again_on_resume() {
    let repo = sample_slow(&[
        ("clean", CLEAN.to_owned(), Some(0.0)),
        ("slow", BROKEN.to_owned(), None),
    ]);
    let mut child = one_at_a_time(&repo, "clean,slow", "60");
    let listed = || repo.git(&["for-each-ref", "--format=%(refname)", "refs/tlv4/runs/"]);
    std::thread::sleep(std::time::Duration::from_millis(500));
    // SAFETY: a signal to the process this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert!(!status.success());
    let refs = listed();
    let kept = refs
        .lines()
        .find(|l| l.ends_with("/1-c2"))
        .unwrap_or_else(|| panic!("{refs}"));
    let outcome = repo.git(&[
        "log",
        "-1",
        "--format=%(trailers:key=Tlv4-Outcome,valueonly)",
        kept,
    ]);
    assert!(outcome.starts_with("stopped: interrupted"), "{outcome}");
    let sid = repo.git(&[
        "for-each-ref",
        "--format=%(refname:lstrip=3)",
        "refs/heads/tlv4/",
    ]);
    let sid = sid
        .lines()
        .find(|l| !l.contains('.'))
        .unwrap()
        .trim()
        .to_owned();
    let out = repo
        .tlv4_cmd(&["--session", &sid, "resume"])
        .env("SCRIPTED_SLEEP", "0")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let attempt = repo.task(&sid, "IMPL-001")["attempts"].as_u64().unwrap() as u32;
    let rec = candidates(&repo, &sid, attempt);
    let c = &rec["candidates"];
    assert_eq!(c[0]["reused"], true, "{rec:#}");
    assert_eq!(c[1]["reused"], false, "{rec:#}");
    assert_eq!(
        c[1]["ref"],
        format!("refs/tlv4/runs/{sid}/IMPL-001/{attempt}-c2").as_str(),
        "{rec:#}"
    );
    assert_eq!(c[1]["tests"]["meets_target"], false, "{rec:#}");
    repo.fsck();
}
