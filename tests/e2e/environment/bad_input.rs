//! Setups that cannot work, and a project of two ecosystems: each a named outcome, nothing
//! lost. A setup that fails or hangs fails the test task as an environment error — the
//! command, how it ended and the end of its output — never as failing tests, never a fix.

use std::time::{Duration, Instant};

use super::npm::{node_and_npm, npm_sample};
use super::{imported_from_the_checkout, only_session, reports, start, tests_only};
use crate::common::TestRepo;

/// The task ids of the session: no fix iteration, no second test run.
fn task_ids(repo: &TestRepo, sid: &str) -> Vec<String> {
    repo.json(&["--session", sid, "status", "--json"])["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["id"].as_str().map(str::to_owned))
        .collect()
}

/// What a failed test task says: its status record and the run's stderr.
fn failure(repo: &TestRepo, sid: &str, out: &std::process::Output) -> String {
    let test = repo.task(sid, "TEST-001");
    assert_eq!(test["status"], "failed", "{test}");
    format!("{test}\n{}", String::from_utf8_lossy(&out.stderr))
}

/// Only the user's checkout is in use: the test checkout went back to the pool.
fn no_checkout_in_use(repo: &TestRepo) {
    let list = repo.worktrees_in_use();
    assert_eq!(list.matches("worktree ").count(), 1, "{list}");
}

/// A lockfile out of sync with its manifest: `npm ci` refuses, and the test task fails as an
/// environment error naming the command, its exit code and why npm refused.
#[test]
fn a_lockfile_out_of_sync_with_its_manifest_is_an_environment_error_not_a_fix() {
    if !node_and_npm() {
        return;
    }
    let repo = TestRepo::new();
    npm_sample(&repo, "");
    // A dependency added to package.json by hand, the lockfile not updated.
    repo.write(
        "vendor/shout/package.json",
        "{\"name\": \"shout\", \"version\": \"1.0.0\"}\n",
    );
    let manifest = std::fs::read_to_string(repo.path().join("package.json")).unwrap();
    repo.write(
        "package.json",
        &manifest.replace(
            "\"greet\": \"file:vendor/greet\"",
            "\"greet\": \"file:vendor/greet\", \"shout\": \"file:vendor/shout\"",
        ),
    );
    tests_only(&repo, "");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "shout, without its lockfile entry"]);
    repo.ok(&["trust"]);
    let tree = repo.git(&["status", "--porcelain", "--ignored"]);

    let out = start(&repo, "tests", "out of sync", &[]);
    let sid = only_session(&repo);
    let shown = failure(&repo, &sid, &out);
    assert!(
        shown.contains(
            "environment error: the environment setup `npm ci --no-audit --no-fund --prefer-offline` exited with 1"
        ),
        "{shown}"
    );
    assert!(
        shown.contains("package-lock.json") && shown.contains("in sync"),
        "npm's reason is shown: {shown}"
    );
    assert_eq!(task_ids(&repo, &sid), ["TEST-001"], "no fix task");
    assert!(reports(&repo, &sid).is_empty(), "no test ran");
    // Nothing lost: the user's tree as it was, the checkout back in the pool, git sound.
    assert_eq!(repo.git(&["status", "--porcelain", "--ignored"]), tree);
    no_checkout_in_use(&repo);
    repo.fsck();
}

/// A setup that hangs is killed at `[environment] timeout`: an environment error that says it
/// timed out, and the process is gone.
#[test]
fn a_setup_that_hangs_is_killed_at_the_environment_timeout() {
    let repo = TestRepo::new();
    repo.write("tests/__init__.py", "");
    repo.write(
        "tests/test_one.py",
        "import unittest\n\n\nclass One(unittest.TestCase):\n    def test_one(self):\n        self.assertTrue(True)\n",
    );
    // The setup may write only its checkout and its temporary directory.
    let pidfile = repo.pool_dir().join("test-1.tmp/setup.pid");
    tests_only(
        &repo,
        "[environment]\nsetup = [\"echo $$ > \\\"$TMPDIR/setup.pid\\\"; exec sleep 60\"]\ntimeout = \"2s\"\n",
    );
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "tests, and a setup that hangs"]);
    repo.ok(&["trust"]);

    let started = Instant::now();
    let out = start(&repo, "tests", "hanging setup", &[]);
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(40),
        "killed at 2 s, took {took:?}"
    );
    let sid = only_session(&repo);
    let shown = failure(&repo, &sid, &out);
    assert!(
        shown.contains("environment error: the environment setup `echo $$")
            && shown.contains("exec sleep 60` timed out after"),
        "{shown}"
    );
    assert!(
        shown.contains("timed out after 2 s (`[environment] timeout`)"),
        "the limit is named: {shown}"
    );
    assert_eq!(task_ids(&repo, &sid), ["TEST-001"], "no fix task");
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    assert!(
        stat.is_empty()
            || stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
        "the setup's process {pid} outlived its timeout: {stat}"
    );
    no_checkout_in_use(&repo);
    repo.fsck();
}

/// A Python backend and a Node frontend in one repository: both are prepared, each in its
/// directory of the test checkout, and both steps are in the report. The tests are the
/// backend's (the frontend has none): they run in `backend/`, where `import api` works, and
/// import it from the checkout.
#[test]
fn a_project_of_two_ecosystems_gets_both_prepared() {
    if !node_and_npm() {
        return;
    }
    let repo = TestRepo::new();
    repo.git(&["rm", "-q", "src/lib.rs"]);
    repo.write("backend/requirements.txt", "# nothing to install yet\n");
    repo.write(
        "backend/api/__init__.py",
        "def ping():\n    return 'pong'\n",
    );
    repo.write("backend/tests/__init__.py", "");
    repo.write(
        "backend/tests/test_api.py",
        "import os\nimport unittest\n\nimport api\n\n\
         with open(os.path.join(os.environ['TMPDIR'], 'imports.log'), 'a') as log:\n\
         \x20   log.write('api ' + os.path.realpath(api.__file__) + '\\n')\n\n\n\
         class Api(unittest.TestCase):\n\
         \x20   def test_ping(self):\n        self.assertEqual(api.ping(), 'pong')\n",
    );
    npm_sample(&repo, "frontend");
    // A frontend without tests of its own: package.json names no test script.
    let manifest = std::fs::read_to_string(repo.path().join("frontend/package.json")).unwrap();
    repo.write(
        "frontend/package.json",
        &manifest.replace("\"scripts\": { \"test\": \"node --test\" },\n  ", ""),
    );
    std::fs::remove_dir_all(repo.path().join("frontend/test")).unwrap();
    tests_only(&repo, "");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "a backend and a frontend"]);
    repo.ok(&["trust"]);

    let out = start(&repo, "tests", "two ecosystems", &[]);
    let sid = only_session(&repo);
    let first = reports(&repo, &sid);
    let first = first.first().unwrap_or_else(|| {
        panic!(
            "the tests ran: {}\n{}",
            repo.task(&sid, "TEST-001"),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert!(
        first.contains("`python3 -m venv .venv && .venv/bin/python -m pip install")
            && first.contains("` in backend/: ran,"),
        "{first}"
    );
    assert!(
        first.contains("`npm ci --no-audit --no-fund --prefer-offline` in frontend/: ran,"),
        "{first}"
    );
    assert!(
        first.contains("`python3 -m unittest -v`") && first.contains("**Verdict:** pass"),
        "the backend's tests, run in backend/:\n{first}"
    );
    let slot = imported_from_the_checkout(&repo);
    let greet = super::checkout_root(&repo, &slot).join("frontend/node_modules/greet/index.js");
    assert!(greet.is_file(), "the frontend's dependencies are installed");
    no_checkout_in_use(&repo);
    repo.fsck();
}
