//! `git tlv4 worker --remote`: worker processes in separate clones share one session through
//! a bare remote (over `git daemon` on loopback, and `file://`), claiming each task with a
//! compare-and-swap push and a lease; checked on the remote and every clone with git itself.

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::common::{TestRepo, dead_pid, fixture};
use crate::remote::{Bare, Daemon, clone};

/// A repository with a pipeline `wide` of `n` independent code tasks whose executor is the
/// scripted agent with `env` (TOML inline-table entries), committed, trusted and pushed to
/// a new bare remote `origin`.
pub(crate) fn shared_repo(n: usize, env: &str) -> (Bare, TestRepo) {
    let bare = Bare::new();
    let first = TestRepo::new();
    first.wide_pipeline(n);
    first.write(
        ".tlv4.toml",
        &format!(
            "[agents.scripted]\ndriver = \"command\"\nprogram = \"{}\"\ntimeout = \"60s\"\nenv = {{ {env} }}\n[roles]\nexecutor = \"scripted\"\n",
            fixture("scripted-agent")
        ),
    );
    publish(&first, &bare);
    (bare, first)
}

/// Commits what `first` holds (a pipeline and its agent), trusts it and pushes `main` to
/// `bare` as the remote `origin`.
pub(crate) fn publish(first: &TestRepo, bare: &Bare) {
    first.git(&["add", "-A"]);
    first.git(&["commit", "-q", "-m", "a wide pipeline and its agent"]);
    first.ok(&["trust"]);
    first.git(&["remote", "add", "origin", &bare.url()]);
    first.git(&["push", "-q", "origin", "main"]);
}

/// A repository with a pipeline `wide` of `n` independent code tasks whose executor is the
/// scripted agent (sleeping `SCRIPTED_SLEEP` from the worker's environment), committed and
/// pushed to a new bare remote `origin`, and a session started there with `start --remote`.
pub(crate) fn shared_session(n: usize) -> (Bare, TestRepo, String) {
    let (bare, first) = shared_repo(n, "SCRIPTED_MODE = \"sleep\"");
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
            "many hands",
        ])
        .trim()
        .to_owned();
    (bare, first, sid)
}

/// A clone of `url` whose user trusted the repository's configuration.
pub(crate) fn trusted_clone(url: &str, name: &str) -> TestRepo {
    let repo = clone(url, name);
    repo.ok(&["trust"]);
    repo
}

/// A worker process in `repo` on `url`, its agents sleeping `sleep` seconds per task.
pub(crate) fn spawn_worker(
    repo: &TestRepo,
    url: &str,
    sid: &str,
    sleep: &str,
    extra: &[&str],
) -> Child {
    spawn_worker_with(repo, url, sid, &[("SCRIPTED_SLEEP", sleep)], extra)
}

/// A worker process in `repo` on `url` with `env` for its agents; its stderr goes to
/// `worker.log` in the clone's home.
pub(crate) fn spawn_worker_with(
    repo: &TestRepo,
    url: &str,
    sid: &str,
    env: &[(&str, &str)],
    extra: &[&str],
) -> Child {
    let mut cmd = worker_cmd(repo, url, sid, extra);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.spawn().unwrap()
}

/// The command of a worker in `repo` on `url` (two tasks at once, then `extra`), its
/// stderr to `worker.log` in the clone's home.
pub(crate) fn worker_cmd(
    repo: &TestRepo,
    url: &str,
    sid: &str,
    extra: &[&str],
) -> std::process::Command {
    let mut args = vec![
        "--session",
        sid,
        "worker",
        "--remote",
        url,
        "--max-parallel",
        "2",
    ];
    args.extend_from_slice(extra);
    let log = std::fs::File::create(repo.home.path().join("worker.log")).unwrap();
    let mut cmd = repo.tlv4_cmd(&args);
    cmd.stdout(Stdio::null()).stderr(log);
    cmd
}

pub(crate) fn log_of(repo: &TestRepo) -> String {
    std::fs::read_to_string(repo.home.path().join("worker.log")).unwrap_or_default()
}

/// Waits for `child` to exit (a bound on tries so a hung worker fails the test instead of
/// hanging it) and returns whether it succeeded.
pub(crate) fn wait(child: &mut Child, repo: &TestRepo) -> bool {
    for _ in 0..2400 {
        if let Some(status) = child.try_wait().unwrap() {
            return status.success();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    panic!("a worker did not finish:\n{}", log_of(repo));
}

/// `(task, holder)` of every lease on the remote.
pub(crate) fn leases(bare: &Bare) -> Vec<(String, String)> {
    let gd = bare.path();
    let gd = gd.to_str().unwrap();
    bare.git(&[
        "--git-dir",
        gd,
        "for-each-ref",
        "--format=%(refname)",
        "refs/tlv4/leases/",
    ])
    .lines()
    .map(|name| {
        let holder = bare.git(&[
            "--git-dir",
            gd,
            "log",
            "-1",
            "--format=%(trailers:key=Tlv4-Holder,valueonly)",
            name,
        ]);
        (
            name.rsplit('/').next().unwrap().to_owned(),
            holder.trim().to_owned(),
        )
    })
    .collect()
}

/// What the remote's session says: `(task, event)` of every event, oldest first.
pub(crate) fn events(bare: &Bare, sid: &str) -> Vec<(String, String)> {
    let gd = bare.path();
    bare.git(&[
        "--git-dir",
        gd.to_str().unwrap(),
        "log",
        "--first-parent",
        "--reverse",
        "--format=%(trailers:key=Tlv4-Task,valueonly,separator=)|%(trailers:key=Tlv4-Event,valueonly,separator=)",
        &format!("refs/heads/tlv4/{sid}"),
    ])
    .lines()
    .filter_map(|l| l.split_once('|'))
    .map(|(t, e)| (t.to_owned(), e.to_owned()))
    .collect()
}

pub(crate) fn remote_file(bare: &Bare, rev: &str) -> String {
    let gd = bare.path();
    bare.git(&["--git-dir", gd.to_str().unwrap(), "show", rev])
}

/// Every task completed exactly once, its code merged into the remote's session, no lease
/// left, no clone's session branch off the remote's history, and fsck clean everywhere.
pub(crate) fn all_done_once(bare: &Bare, sid: &str, n: usize, clones: &[&TestRepo]) {
    let events = events(bare, sid);
    let branch = format!("refs/heads/tlv4/{sid}");
    let session = remote_file(bare, &format!("{branch}:.tlv4/sessions/{sid}/session.toml"));
    assert!(session.contains("status = \"completed\""), "{session}");
    let gd = bare.path();
    let files = bare.git(&[
        "--git-dir",
        gd.to_str().unwrap(),
        "ls-tree",
        "--name-only",
        &branch,
    ]);
    for i in 1..=n {
        let task = format!("IMPL-{i:03}");
        let completed = events
            .iter()
            .filter(|(t, e)| *t == task && e == "task_completed")
            .count();
        assert_eq!(
            completed, 1,
            "{task} completed {completed} times: {events:?}"
        );
        assert!(
            files.contains(&format!("scripted-{task}.txt")),
            "the change of {task} is merged: {files}"
        );
    }
    assert_eq!(
        events
            .iter()
            .filter(|(_, e)| e == "session_completed")
            .count(),
        1
    );
    assert_eq!(
        leases(bare),
        Vec::<(String, String)>::new(),
        "no lease is left"
    );
    let tip = bare.git(&["--git-dir", gd.to_str().unwrap(), "rev-parse", &branch]);
    bare.fsck();
    for c in clones {
        // Nothing moved backwards: every clone's branch is in the remote's history.
        let local = c.git(&["rev-parse", &branch]);
        let fetched = c.git_cmd(&["cat-file", "-e", tip.trim()]).status().unwrap();
        if fetched.success() {
            let ok = c
                .git_cmd(&["merge-base", "--is-ancestor", local.trim(), tip.trim()])
                .status()
                .unwrap();
            assert!(
                ok.success(),
                "a clone's branch is not in the remote's history"
            );
        }
        c.fsck();
    }
}

#[test]
fn three_workers_share_thirty_tasks_over_git_daemon_and_one_killed_loses_nothing() {
    const N: usize = 30;
    let (bare, first, sid) = shared_session(N);
    let Some(daemon) = Daemon::start(bare.dir.path(), bare.home.path()) else {
        eprintln!("skipped: `git daemon` is not installed");
        return;
    };
    let url = daemon.url();
    let clones: Vec<TestRepo> = (1..=3)
        .map(|i| trusted_clone(&url, &format!("w{i}")))
        .collect();
    // The first worker's agents sleep long: whatever it holds when it is killed is mid-task.
    let mut doomed = spawn_worker(
        &clones[0],
        &url,
        &sid,
        "30",
        &["--lease", "2", "--skew", "0.5"],
    );
    let pid = doomed.id();
    let mut held = Vec::new();
    for _ in 0..600 {
        held = leases(&bare)
            .into_iter()
            .filter(|(_, h)| h.ends_with(&format!(":{pid}")))
            .map(|(t, _)| t)
            .collect();
        if !held.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        !held.is_empty(),
        "the first worker claimed nothing:\n{}",
        log_of(&clones[0])
    );
    // The others hold their leases longer: on a loaded machine a short one of theirs could run
    // out too, and this test is about the killed worker's.
    let mut others: Vec<Child> = clones[1..]
        .iter()
        .map(|c| {
            spawn_worker(
                c,
                &url,
                &sid,
                "0.1-0.5",
                &["--lease", "10", "--skew", "0.5"],
            )
        })
        .collect();
    // SIGKILL, mid-task: nothing of it runs again, its leases stop being renewed.
    doomed.kill().unwrap();
    doomed.wait().unwrap();
    let started = Instant::now();
    for (c, w) in clones[1..].iter().zip(&mut others) {
        assert!(wait(w, c), "a worker failed:\n{}", log_of(c));
    }
    eprintln!(
        "{N} tasks, 3 workers (one killed) over git daemon: the two others took {:.1}s",
        started.elapsed().as_secs_f64()
    );
    all_done_once(&bare, &sid, N, &clones.iter().collect::<Vec<_>>());
    // Claims are not session events (protocol 2): the session was marked so once, and
    // records completions only, each with the lease it was claimed under.
    let events = events(&bare, &sid);
    assert_eq!(
        events
            .iter()
            .filter(|(_, e)| e == "session_upgraded")
            .count(),
        1,
        "{events:?}"
    );
    assert!(
        !events
            .iter()
            .any(|(_, e)| e == "task_claimed" || e == "tasks_recovered"),
        "{events:?}"
    );
    // The killed worker's tasks were taken over once their leases ran out, and ran again
    // as attempt 2 elsewhere; the completion names whom it was taken from.
    for task in &held {
        let toml = remote_file(
            &bare,
            &format!("refs/heads/tlv4/{sid}:.tlv4/sessions/{sid}/tasks/{task}.toml"),
        );
        assert!(toml.contains("attempts = 2"), "{task}: {toml}");
        let gd = bare.path();
        let taken = bare.git(&[
            "--git-dir",
            gd.to_str().unwrap(),
            "log",
            "--first-parent",
            "--format=%(trailers:key=Tlv4-Taken-From,valueonly)",
            &format!("--grep=Tlv4-Task: {task}"),
            &format!("refs/heads/tlv4/{sid}"),
        ]);
        assert!(
            taken.contains(&format!(":{pid} attempt 1")),
            "{task} taken from the killed worker: {taken}"
        );
    }
    // The messages of the workers' tasks merged on the remote by union: one per task.
    first.ok(&["pull"]);
    let messages = first.rows(&["--session", &sid, "msg", "list", "--json"], "messages");
    assert_eq!(messages.as_array().unwrap().len(), N, "{messages}");
    first.fsck();
}

#[test]
fn workers_over_file_url_complete_every_task_once() {
    const N: usize = 6;
    let (bare, _first, sid) = shared_session(N);
    let url = bare.url();
    let clones: Vec<TestRepo> = (1..=3)
        .map(|i| trusted_clone(&url, &format!("w{i}")))
        .collect();
    let mut workers: Vec<Child> = clones
        .iter()
        .map(|c| spawn_worker(c, &url, &sid, "0.1-0.5", &[]))
        .collect();
    for (c, w) in clones.iter().zip(&mut workers) {
        assert!(wait(w, c), "a worker failed:\n{}", log_of(c));
    }
    all_done_once(&bare, &sid, N, &clones.iter().collect::<Vec<_>>());
    // Each worker says what it did; together they did every task.
    let started: usize = clones
        .iter()
        .map(|c| log_of(c).matches(" started (executor)").count())
        .sum();
    assert_eq!(started, N);
}

#[test]
fn a_worker_refuses_agents_not_trusted_on_its_machine_and_claims_nothing() {
    let (bare, _first, sid) = shared_session(3);
    let url = bare.url();
    let untrusted = clone(&url, "stranger");
    let before = bare.refs();
    let err = untrusted.fails(
        &["--session", &sid, "worker", "--remote", &url, "--once"],
        1,
    );
    assert!(err.contains("not trusted yet"), "{err}");
    assert!(err.contains("git tlv4 trust"), "{err}");
    assert_eq!(bare.refs(), before, "nothing was claimed");
    untrusted.fsck();
    // Once trusted there, the same worker runs the session to its end.
    untrusted.ok(&["trust"]);
    let out = untrusted
        .tlv4_cmd(&["--session", &sid, "worker", "--remote", &url, "--once"])
        .env("SCRIPTED_SLEEP", "0.1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    all_done_once(&bare, &sid, 3, &[&untrusted]);
}

/// Sends `signal` (`STOP`, `CONT`) to process `pid`.
fn signal(pid: u32, signal: &str) {
    let ok = std::process::Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
}

#[test]
fn a_result_after_the_lease_was_taken_back_is_kept_aside_not_merged() {
    let (bare, _first, sid) = shared_session(1);
    let url = bare.url();
    let late = trusted_clone(&url, "late");
    let other = trusted_clone(&url, "other");
    let lease = ["--lease", "1", "--skew", "0.2"];
    let mut slow = spawn_worker(&late, &url, &sid, "2", &lease);
    let pid = slow.id();
    for _ in 0..600 {
        if leases(&bare)
            .iter()
            .any(|(_, h)| h.ends_with(&format!(":{pid}")))
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // Frozen mid-task: it cannot renew, so its lease runs out and the other worker takes the
    // task and completes it.
    signal(pid, "STOP");
    let mut fast = spawn_worker(
        &other,
        &url,
        &sid,
        "0.1",
        &["--lease", "10", "--skew", "0.2"],
    );
    let done = wait(&mut fast, &other);
    signal(pid, "CONT");
    assert!(done, "{}", log_of(&other));
    // Thawed, the first finds its lease gone: its result is kept under runs/, not recorded.
    assert!(wait(&mut slow, &late), "{}", log_of(&late));
    let log = log_of(&late);
    assert!(
        log.contains("the lease ran out before the result came"),
        "{log}"
    );
    all_done_once(&bare, &sid, 1, &[&late, &other]);
    let gd = bare.path();
    let gd = gd.to_str().unwrap();
    let kept = format!("refs/tlv4/runs/{sid}/IMPL-001/1");
    let kept_subject = bare.git(&["--git-dir", gd, "log", "-1", "--format=%s", &kept]);
    assert!(kept_subject.contains("snapshot"), "{kept_subject}");
    // Its commit is not merged: the session's history does not contain it.
    let merged = hermetic_git(
        &bare,
        &[
            "merge-base",
            "--is-ancestor",
            &kept,
            &format!("refs/heads/tlv4/{sid}"),
        ],
    );
    assert!(!merged, "a late result is not merged");
    let toml = remote_file(
        &bare,
        &format!("refs/heads/tlv4/{sid}:.tlv4/sessions/{sid}/tasks/IMPL-001.toml"),
    );
    assert!(toml.contains("attempts = 2"), "{toml}");
}

/// Whether git succeeds in the bare repository.
fn hermetic_git(bare: &Bare, args: &[&str]) -> bool {
    let gd = bare.path();
    crate::common::hermetic("git", bare.dir.path(), bare.home.path())
        .arg("--git-dir")
        .arg(gd)
        .args(args)
        .status()
        .unwrap()
        .success()
}

#[test]
fn a_worker_with_all_serves_every_live_session_of_the_remote() {
    let (bare, first, one) = shared_session(2);
    let two = first
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
            "more hands",
        ])
        .trim()
        .to_owned();
    let url = bare.url();
    let worker = trusted_clone(&url, "any");
    let out = worker
        .tlv4_cmd(&["worker", "--remote", &url, "--all", "--once"])
        .env("SCRIPTED_SLEEP", "0.1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    all_done_once(&bare, &one, 2, &[&worker]);
    all_done_once(&bare, &two, 2, &[&worker]);
}

#[test]
fn a_stopped_worker_gives_its_tasks_and_leases_back() {
    let (bare, _first, sid) = shared_session(2);
    let url = bare.url();
    let repo = trusted_clone(&url, "stopped");
    let mut worker = spawn_worker(&repo, &url, &sid, "30", &[]);
    let pid = worker.id();
    for _ in 0..600 {
        if leases(&bare).len() == 2 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(leases(&bare).len(), 2, "{}", log_of(&repo));
    signal(pid, "TERM");
    let status = loop {
        if let Some(s) = worker.try_wait().unwrap() {
            break s;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(!status.success());
    // Both tasks are pending again, in one event, and their leases are gone with it.
    assert_eq!(leases(&bare), Vec::<(String, String)>::new());
    let events = events(&bare, &sid);
    assert_eq!(events.last().unwrap().1, "tasks_interrupted", "{events:?}");
    for task in ["IMPL-001", "IMPL-002"] {
        let toml = remote_file(
            &bare,
            &format!("refs/heads/tlv4/{sid}:.tlv4/sessions/{sid}/tasks/{task}.toml"),
        );
        assert!(toml.contains("status = \"pending\""), "{task}: {toml}");
    }
    bare.fsck();
    repo.fsck();
}

#[test]
fn start_with_remote_pushes_the_session_and_works_it() {
    let (bare, first) = shared_repo(2, "SCRIPTED_MODE = \"sleep\", SCRIPTED_SLEEP = \"0.1\"");
    let sid = first
        .ok(&[
            "start",
            "--remote",
            "origin",
            "--pipeline",
            "wide",
            "--yes",
            "many hands",
        ])
        .trim()
        .to_owned();
    all_done_once(&bare, &sid, 2, &[&first]);
    // Its local branch is the remote's: nothing here to push.
    let branch = format!("refs/heads/tlv4/{sid}");
    let gd = bare.path();
    assert_eq!(
        first.git(&["rev-parse", &branch]),
        bare.git(&["--git-dir", gd.to_str().unwrap(), "rev-parse", &branch])
    );
}

#[test]
fn workers_advance_a_whole_pipeline_dispatching_from_the_plan() {
    // The builtin agents: nothing to trust. Checkpoints, the gate (`--yes`), the plan's IMPL
    // dispatch and the review are all computed by whichever worker records the task.
    let bare = Bare::new();
    let first = TestRepo::new();
    first.git(&["remote", "add", "origin", &bare.url()]);
    first.git(&["push", "-q", "origin", "main"]);
    let sid = first
        .ok(&[
            "start",
            "--remote",
            "origin",
            "--no-run",
            "--pipeline",
            "full-lifecycle",
            "--yes",
            "--completion",
            "keep",
            "Add a search endpoint with pagination",
        ])
        .trim()
        .to_owned();
    let url = bare.url();
    let clones: Vec<TestRepo> = (1..=2).map(|i| clone(&url, &format!("w{i}"))).collect();
    let mut workers: Vec<Child> = clones
        .iter()
        .map(|c| spawn_worker(c, &url, &sid, "0", &[]))
        .collect();
    for (c, w) in clones.iter().zip(&mut workers) {
        assert!(wait(w, c), "a worker failed:\n{}", log_of(c));
    }
    let branch = format!("refs/heads/tlv4/{sid}");
    let gd = bare.path();
    let gd = gd.to_str().unwrap();
    let dispatched = bare.git(&[
        "--git-dir",
        gd,
        "log",
        "--first-parent",
        "--format=%(trailers:key=Tlv4-Dispatched,valueonly,separator=)",
        &branch,
    ]);
    assert!(dispatched.contains("IMPL-001"), "{dispatched}");
    let session = remote_file(
        &bare,
        &format!("{branch}:.tlv4/sessions/{sid}/session.toml"),
    );
    assert!(session.contains("status = \"completed\""), "{session}");
    let events = events(&bare, &sid);
    let mut completed: Vec<&str> = events
        .iter()
        .filter(|(_, e)| e == "task_completed")
        .map(|(t, _)| t.as_str())
        .collect();
    let all = completed.len();
    completed.sort();
    completed.dedup();
    assert_eq!(completed.len(), all, "no task completed twice: {events:?}");
    assert_eq!(leases(&bare), Vec::<(String, String)>::new());
    bare.fsck();
    for c in &clones {
        c.fsck();
    }
}

#[test]
fn a_change_that_conflicts_becomes_a_revision_any_worker_runs() {
    let (bare, _first, sid) = shared_session(2);
    let url = bare.url();
    let clones: Vec<TestRepo> = (1..=2)
        .map(|i| trusted_clone(&url, &format!("w{i}")))
        .collect();
    // Both tasks write the same file, each in its own clone, at the same time.
    let env = [("SCRIPTED_SLEEP", "0.5"), ("SCRIPTED_FILE", "shared.txt")];
    let mut workers: Vec<Child> = clones
        .iter()
        .map(|c| spawn_worker_with(c, &url, &sid, &env, &[]))
        .collect();
    for (c, w) in clones.iter().zip(&mut workers) {
        assert!(wait(w, c), "a worker failed:\n{}", log_of(c));
    }
    let branch = format!("refs/heads/tlv4/{sid}");
    let session = remote_file(
        &bare,
        &format!("{branch}:.tlv4/sessions/{sid}/session.toml"),
    );
    assert!(session.contains("status = \"completed\""), "{session}");
    let events = events(&bare, &sid);
    let failed: Vec<&str> = events
        .iter()
        .filter(|(_, e)| e == "task_failed")
        .map(|(t, _)| t.as_str())
        .collect();
    // Unless one worker happened to run both one after the other, one change conflicted:
    // its task failed, its revision (made in that same event) ran and merged.
    eprintln!("conflicting tasks: {failed:?}");
    if let [original] = failed.as_slice() {
        let revision = format!("{original}-R1");
        assert!(
            events
                .iter()
                .any(|(t, e)| *t == revision && e == "task_completed"),
            "{events:?}"
        );
        let gd = bare.path();
        let kept = bare.git(&[
            "--git-dir",
            gd.to_str().unwrap(),
            "for-each-ref",
            "--format=%(refname)",
            &format!("refs/tlv4/runs/{sid}/{original}/"),
        ]);
        assert!(
            !kept.trim().is_empty(),
            "the conflicting work is kept on the remote"
        );
    } else {
        assert!(failed.is_empty(), "{events:?}");
    }
    let shared = remote_file(&bare, &format!("{branch}:shared.txt"));
    assert!(shared.contains("was here"), "{shared}");
    assert_eq!(leases(&bare), Vec::<(String, String)>::new());
    bare.fsck();
    for c in &clones {
        c.fsck();
    }
}

/// Every ref of `repo`, with its value.
fn all_refs(repo: &TestRepo) -> String {
    repo.git(&["for-each-ref", "--format=%(refname) %(objectname)"])
}

#[test]
fn worker_arguments_out_of_range_are_refused_before_anything_is_fetched() {
    let (bare, _first, sid) = shared_session(1);
    let url = bare.url();
    let repo = trusted_clone(&url, "picky");
    let before = (bare.refs(), all_refs(&repo));
    let worker = |extra: &[&str]| {
        let mut args = vec![
            "--session",
            sid.as_str(),
            "worker",
            "--remote",
            url.as_str(),
        ];
        args.extend_from_slice(extra);
        repo.fails(&args, 1)
    };
    for (extra, says) in [
        (
            &["--lease", "0"][..],
            "--lease 0: give seconds from 0.5 to 86400",
        ),
        (
            &["--lease", "-1"],
            "--lease -1: give seconds from 0.5 to 86400",
        ),
        (&["--lease", "NaN"], "--lease NaN: give seconds"),
        (&["--lease", "100000"], "--lease 100000: give seconds"),
        (
            &["--skew", "-0.5"],
            "--skew -0.5: give seconds from 0 to 86400",
        ),
        (
            &["--max-parallel", "0"],
            "--max-parallel must be at least 1",
        ),
        (
            &["--all"],
            "`--all` and `--session` cannot be used together",
        ),
    ] {
        let err = worker(extra);
        assert!(err.contains(says), "{extra:?}: {err}");
    }
    // Not one fetch: no mirror of the remote here, nothing changed there.
    assert_eq!((bare.refs(), all_refs(&repo)), before);
    // A skew longer than the lease only delays taking back a dead worker's tasks: accepted.
    let out = repo
        .tlv4_cmd(&[
            "--session",
            &sid,
            "worker",
            "--remote",
            &url,
            "--once",
            "--lease",
            "1",
            "--skew",
            "5",
        ])
        .env("SCRIPTED_SLEEP", "0.1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    all_done_once(&bare, &sid, 1, &[&repo]);
}

#[test]
fn a_worker_that_cannot_reach_its_remote_says_so_and_changes_nothing() {
    let (bare, _first, sid) = shared_session(1);
    let repo = trusted_clone(&bare.url(), "offline");
    // A loopback port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let gone = format!("git://127.0.0.1:{port}/remote.git");
    let before = all_refs(&repo);
    let err = repo.fails(
        &["--session", &sid, "worker", "--remote", &gone, "--once"],
        1,
    );
    assert!(
        err.contains(&format!("error: cannot reach the remote `{gone}`")),
        "{err}"
    );
    assert!(
        err.contains("hint: check the remote's name or URL"),
        "{err}"
    );
    // Its closing line says what went through the remote: nothing.
    assert!(err.contains("0 event(s) written through"), "{err}");
    assert_eq!(all_refs(&repo), before, "nothing changed here");
    repo.fsck();
}

#[test]
fn a_worker_that_loses_its_remote_mid_run_stops_and_a_later_worker_finishes() {
    const N: usize = 3;
    let (bare, _first, sid) = shared_session(N);
    let Some(daemon) = Daemon::start(bare.dir.path(), bare.home.path()) else {
        eprintln!("skipped: `git daemon` is not installed");
        return;
    };
    let url = daemon.url();
    let repo = trusted_clone(&url, "cut-off");
    // Its agents sleep long: the remote goes while both of its tasks run.
    let mut worker = spawn_worker(&repo, &url, &sid, "30", &["--lease", "3", "--skew", "0.5"]);
    let pid = worker.id();
    let mine = |bare: &Bare| {
        leases(bare)
            .into_iter()
            .filter(|(_, h)| h.ends_with(&format!(":{pid}")))
            .map(|(t, _)| t)
            .collect::<Vec<_>>()
    };
    for _ in 0..600 {
        if mine(&bare).len() == 2 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let held = mine(&bare);
    assert_eq!(held.len(), 2, "{}", log_of(&repo));
    drop(daemon);
    let status = loop {
        if let Some(s) = worker.try_wait().unwrap() {
            break s;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let log = log_of(&repo);
    assert_eq!(status.code(), Some(1), "{log}");
    assert!(
        log.contains(&format!("error: cannot reach the remote `{url}`")),
        "{log}"
    );
    assert!(
        log.contains(&format!(
            "stopped the tasks running here: {}",
            held.join(", ")
        )),
        "{log}"
    );
    assert!(log.contains("run out by"), "{log}");
    // Its agents were stopped and their checkouts removed (an agent still asleep would have
    // kept its worktree past the worker's exit).
    let worktrees = repo.worktrees_in_use();
    assert_eq!(worktrees.matches("worktree ").count(), 1, "{worktrees}");
    repo.fsck();
    bare.fsck();
    // The remote is back (at another port): the same clone's next worker finds the leases run
    // out, takes the tasks again and completes the session; nothing was lost or done twice.
    let daemon = Daemon::start(bare.dir.path(), bare.home.path()).unwrap();
    let url = daemon.url();
    let mut again = spawn_worker(
        &repo,
        &url,
        &sid,
        "0.1",
        &["--lease", "10", "--skew", "0.5"],
    );
    assert!(wait(&mut again, &repo), "{}", log_of(&repo));
    all_done_once(&bare, &sid, N, &[&repo]);
    for task in &held {
        let toml = remote_file(
            &bare,
            &format!("refs/heads/tlv4/{sid}:.tlv4/sessions/{sid}/tasks/{task}.toml"),
        );
        assert!(toml.contains("attempts = 2"), "{task}: {toml}");
    }
}

#[test]
fn a_task_claimed_without_a_lease_by_a_dead_local_run_is_taken_back_by_a_worker() {
    let (bare, first) = shared_repo(2, "SCRIPTED_MODE = \"sleep\"");
    // A local session (not through the remote) whose run claimed IMPL-001 and died; then the
    // session was pushed. Its claim has no lease on the remote.
    let sid = first
        .ok(&[
            "start",
            "--no-run",
            "--pipeline",
            "wide",
            "--yes",
            "--completion",
            "keep",
            "left behind",
        ])
        .trim()
        .to_owned();
    let pid = dead_pid().to_string();
    first.ok(&[
        "--session",
        &sid,
        "task",
        "claim",
        "IMPL-001",
        "--pid",
        &pid,
    ]);
    first.ok(&["push", "origin", "--session", &sid]);
    assert_eq!(leases(&bare), Vec::<(String, String)>::new());
    let url = bare.url();
    let repo = trusted_clone(&url, "rescuer");
    let mut worker = spawn_worker(&repo, &url, &sid, "0.1", &["--lease", "1", "--skew", "0.2"]);
    assert!(wait(&mut worker, &repo), "{}", log_of(&repo));
    all_done_once(&bare, &sid, 2, &[&repo]);
    let events = events(&bare, &sid);
    assert!(
        events
            .iter()
            .any(|(t, e)| t.is_empty() && e == "tasks_recovered"),
        "{events:?}"
    );
    let log = log_of(&repo);
    assert!(log.contains("IMPL-001 (was "), "{log}");
    assert!(log.contains("claimed without a lease"), "{log}");
    let toml = remote_file(
        &bare,
        &format!("refs/heads/tlv4/{sid}:.tlv4/sessions/{sid}/tasks/IMPL-001.toml"),
    );
    assert!(toml.contains("attempts = 2"), "{toml}");
}
