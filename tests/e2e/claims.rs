//! Protocol 2 of remote workers (`specs/state-format.md` §18.10): claims on refs of their
//! own, results pushed in batches. Faults are made for real — a server hook that declines the
//! session's updates or holds them, SIGKILL of a worker's whole process group, `git daemon`
//! stopped and started again on its port, a clone whose lease clock is off by minutes — and
//! the outcome is read on the server with git.

use std::os::unix::process::CommandExt;
use std::process::Child;
use std::time::Duration;

use crate::common::TestRepo;
use crate::remote::{Bare, Daemon};
use crate::worker::{
    all_done_once, events, leases, log_of, remote_file, shared_session, spawn_worker,
    spawn_worker_with, trusted_clone, wait, worker_cmd,
};

/// Installs `script` as the server's `pre-receive` hook.
fn hook(bare: &Bare, script: &str) {
    let path = bare.path().join("hooks/pre-receive");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Lines of the file `name` in the server's directory (what the hook wrote).
fn hook_log(bare: &Bare, name: &str) -> usize {
    std::fs::read_to_string(bare.path().join(name))
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

/// Waits (bounded by tries) until `ok` holds.
fn until(what: &str, mut ok: impl FnMut() -> bool) {
    for _ in 0..1200 {
        if ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("never: {what}");
}

/// The `Tlv4-Taken-From` trailers of the session's events on the server.
fn taken_from(bare: &Bare, sid: &str) -> String {
    let gd = bare.path();
    bare.git(&[
        "--git-dir",
        gd.to_str().unwrap(),
        "log",
        "--first-parent",
        "--format=%(trailers:key=Tlv4-Taken-From,valueonly)",
        &format!("refs/heads/tlv4/{sid}"),
    ])
}

/// A worker in a process group of its own (so that SIGKILL takes its git children too).
fn spawn_group(repo: &TestRepo, url: &str, sid: &str, sleep: &str, extra: &[&str]) -> Child {
    let mut cmd = worker_cmd(repo, url, sid, extra);
    cmd.env("SCRIPTED_SLEEP", sleep).process_group(0);
    cmd.spawn().unwrap()
}

fn kill_group(child: &mut Child) {
    let pid = i32::try_from(child.id()).unwrap();
    // SAFETY: a signal to the process group this test started.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    child.wait().unwrap();
}

#[test]
fn a_remote_without_atomic_pushes_is_refused_before_anything_is_claimed() {
    let (bare, _first, sid) = shared_session(2);
    bare.git(&[
        "--git-dir",
        bare.path().to_str().unwrap(),
        "config",
        "receive.advertiseAtomic",
        "false",
    ]);
    let url = bare.url();
    let repo = trusted_clone(&url, "w");
    let before = bare.refs();
    let mut worker = spawn_worker(&repo, &url, &sid, "0.1", &[]);
    assert!(!wait(&mut worker, &repo), "{}", log_of(&repo));
    let log = log_of(&repo);
    assert!(log.contains("does not take atomic pushes"), "{log}");
    assert!(log.contains("receive.advertiseAtomic"), "{log}");
    assert_eq!(bare.refs(), before, "nothing claimed, nothing written");
    bare.fsck();
}

#[test]
fn status_and_list_remote_name_who_holds_which_task() {
    let (bare, first, sid) = shared_session(3);
    let url = bare.url();
    let repo = trusted_clone(&url, "w");
    // Its agents sleep long: two tasks stay held while we look.
    let mut worker = spawn_worker(&repo, &url, &sid, "30", &[]);
    let pid = worker.id();
    until("two leases", || leases(&bare).len() == 2);
    // The session on the server has no claim event: the leases say who works on what.
    assert!(!events(&bare, &sid).iter().any(|(_, e)| e == "task_claimed"),);
    let held: Vec<String> = leases(&bare).into_iter().map(|(t, _)| t).collect();
    // `list --remote` fetches the leases and names each holder.
    first.git(&["remote", "add", "shared", &url]);
    let out = first.ok(&["list", "--remote", "shared"]);
    assert!(out.contains("HELD"), "{out}");
    assert!(out.contains("held by workers:"), "{out}");
    for task in &held {
        assert!(out.contains(task.as_str()), "{out}");
    }
    assert!(out.contains(&format!(":{pid}, attempt 1, lease ")), "{out}");
    assert!(out.contains("s left"), "{out}");
    let rows = first.rows(&["list", "--remote", "shared", "--json"], "sessions");
    let row = &rows.as_array().unwrap()[0];
    assert_eq!(row["held"].as_array().unwrap().len(), 2, "{row}");
    // `status` in the worker's clone shows them from its last fetch.
    let status = repo.ok(&["--session", &sid, "status"]);
    for task in &held {
        assert!(
            status.contains(&format!("held      {task} by ")),
            "{status}"
        );
    }
    assert!(status.contains(&format!(":{pid}")), "{status}");
    let json = repo.json(&["--session", &sid, "status", "--json"]);
    assert_eq!(json["held"].as_array().unwrap().len(), 2, "{json}");
    worker.kill().unwrap();
    worker.wait().unwrap();
}

/// A session of `n` tasks whose server, while the file `marker` exists in it, runs `action`
/// (shell) on each update of the session branch; and a worker on it with 2 s leases, in a
/// process group of its own: the server, the session, the worker's clone and the worker.
fn doomed_worker(n: usize, marker: &str, action: &str) -> (Bare, String, TestRepo, Child) {
    let (bare, _first, sid) = shared_session(n);
    hook(
        &bare,
        &format!(
            "#!/bin/sh\nwhile read old new ref; do\n  case \"$ref\" in\n    refs/heads/tlv4/*) if [ -e {marker} ]; then {action}; fi ;;\n  esac\ndone\nexit 0\n"
        ),
    );
    std::fs::write(bare.path().join(marker), "").unwrap();
    let url = bare.url();
    let clone = trusted_clone(&url, "doomed");
    let worker = spawn_group(
        &clone,
        &url,
        &sid,
        "0.1",
        &["--lease", "2", "--skew", "0.5"],
    );
    (bare, sid, clone, worker)
}

/// Another worker, in a clone of its own, runs session `sid` of `n` tasks to its end: every
/// task recorded once.
fn another_finishes(bare: &Bare, sid: &str, n: usize) {
    let url = bare.url();
    let other = trusted_clone(&url, "other");
    let mut worker = spawn_worker(
        &other,
        &url,
        sid,
        "0.1",
        &["--lease", "10", "--skew", "0.5"],
    );
    assert!(wait(&mut worker, &other), "{}", log_of(&other));
    all_done_once(bare, sid, n, &[&other]);
}

#[test]
fn a_worker_killed_with_results_queued_loses_nothing_and_records_nothing_twice() {
    const N: usize = 4;
    // While `hold` exists the server declines every update of the session branch: the
    // worker's results stay queued (its claims, on refs of their own, go through).
    let (bare, sid, doomed_clone, mut doomed) =
        doomed_worker(N, "hold", "echo declined >> declined; exit 1");
    let pid = doomed.id();
    // Every task claimed and finished, and batches declined: the results wait in its queue.
    until("every task claimed and a batch declined", || {
        leases(&bare).len() == N && hook_log(&bare, "declined") >= 2
    });
    kill_group(&mut doomed);
    std::fs::remove_file(bare.path().join("hold")).unwrap();
    // Nothing of it reached the session.
    assert!(
        !events(&bare, &sid)
            .iter()
            .any(|(_, e)| e == "task_completed"),
        "{}",
        log_of(&doomed_clone)
    );
    // Another worker takes the tasks over once their leases run out and records each once.
    another_finishes(&bare, &sid, N);
    let taken = taken_from(&bare, &sid);
    assert_eq!(
        taken.matches(&format!(":{pid} attempt 1")).count(),
        N,
        "every task taken over from the killed worker: {taken}"
    );
    for i in 1..=N {
        let toml = remote_file(
            &bare,
            &format!("refs/heads/tlv4/{sid}:.tlv4/sessions/{sid}/tasks/IMPL-{i:03}.toml"),
        );
        assert!(toml.contains("attempts = 2"), "{toml}");
    }
}

#[test]
fn a_worker_killed_mid_push_leaves_its_batch_whole_or_absent() {
    const N: usize = 4;
    // While `slow` exists the server holds every update of the session branch for 3 s,
    // saying so first: the worker is killed while its batch is in the server's hands.
    let (bare, sid, _clone, mut doomed) =
        doomed_worker(N, "slow", "echo pushing >> pushing; sleep 3");
    until("a batch in the server's hands", || {
        hook_log(&bare, "pushing") >= 1
    });
    kill_group(&mut doomed);
    std::fs::remove_file(bare.path().join("slow")).unwrap();
    // Whatever the server made of it (the hook may still finish), the session is whole.
    std::thread::sleep(Duration::from_secs(4));
    bare.fsck();
    another_finishes(&bare, &sid, N);
}

#[test]
fn a_server_restarted_mid_run_and_renewals_that_fail_meanwhile_lose_nothing() {
    const N: usize = 4;
    let (bare, _first, sid) = shared_session(N);
    let Some(daemon) = Daemon::start(bare.dir.path(), bare.home.path()) else {
        eprintln!("skipped: `git daemon` is not installed");
        return;
    };
    let (url, port) = (daemon.url(), daemon.port());
    let repo = trusted_clone(&url, "w");
    // Leases of 6 s renewed every 2 s (a worker gives up after 3 s of failed renewals);
    // tasks of 8 s.
    let mut worker = spawn_worker(&repo, &url, &sid, "8", &["--lease", "6", "--skew", "0.5"]);
    until("two leases", || leases(&bare).len() == 2);
    // Right after a renewal the server goes for 3.7 s: the next renewal (due in 2 s, tried
    // on a tick of 1.5 s) fails, and the one after the restart goes through.
    let gd = bare.path();
    let renewed = || {
        bare.git(&[
            "--git-dir",
            gd.to_str().unwrap(),
            "for-each-ref",
            "--format=%(parent)",
            "refs/tlv4/leases/",
        ])
        .lines()
        .any(|p| !p.trim().is_empty())
    };
    until("a renewal", renewed);
    drop(daemon);
    std::thread::sleep(Duration::from_millis(3700));
    let daemon = Daemon::start_at(bare.dir.path(), bare.home.path(), Some(port)).unwrap();
    assert!(wait(&mut worker, &repo), "{}", log_of(&repo));
    let log = log_of(&repo);
    assert!(
        log.contains("cannot renew the lease"),
        "a renewal failed: {log}"
    );
    assert!(!log.contains("taken back"), "no lease was lost: {log}");
    all_done_once(&bare, &sid, N, &[&repo]);
    // Each task ran once: nothing was taken over.
    assert!(taken_from(&bare, &sid).trim().is_empty());
    drop(daemon);
}

#[test]
fn a_clone_whose_clock_is_minutes_behind_loses_its_tasks_and_nothing_is_recorded_twice() {
    const N: usize = 6;
    let (bare, _first, sid) = shared_session(N);
    let url = bare.url();
    let behind = trusted_clone(&url, "behind");
    let right = trusted_clone(&url, "right");
    // The clone behind writes leases that end three minutes ago by the others' clocks.
    let mut late = spawn_worker_with(
        &behind,
        &url,
        &sid,
        &[
            ("SCRIPTED_SLEEP", "1"),
            ("GIT_TLV4_CLOCK_OFFSET_MS", "-180000"),
        ],
        &["--lease", "3", "--skew", "0.5"],
    );
    let late_pid = late.id();
    until("the clone behind holds a task", || {
        leases(&bare)
            .iter()
            .any(|(_, h)| h.ends_with(&format!(":{late_pid}")))
    });
    let mut good = spawn_worker(&right, &url, &sid, "1", &["--lease", "3", "--skew", "0.5"]);
    assert!(wait(&mut good, &right), "{}", log_of(&right));
    // The clone behind ends too (its results, when it had any, kept aside).
    let _ = wait(&mut late, &behind);
    all_done_once(&bare, &sid, N, &[&right]);
    let taken = taken_from(&bare, &sid);
    assert!(
        taken.contains(&format!(":{late_pid} attempt")),
        "the tasks of the clone behind were taken over: {taken}\n{}",
        log_of(&behind)
    );
}
