//! Signals and processes: SIGHUP (a closed terminal), SIGTERM and SIGKILL of `git-tlv4` while
//! an agent or a test command runs. Afterwards no process of the run is alive, the running
//! tasks are back to pending (when the tool could say so) and no checkout stays locked.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::{TestRepo, fixture};

/// Whether `pid` is gone (or a zombie nobody reaped yet, which runs no code).
fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
    }
}

/// Waits (generously) until every pid is gone; false if one is still there at the end.
fn all_gone_within(pids: &[i32], bound: Duration) -> bool {
    let began = Instant::now();
    while began.elapsed() < bound {
        if pids.iter().all(|&p| gone(p)) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    pids.iter().all(|&p| gone(p))
}

/// The pids the fake wrote to `path` once it has, waiting for it.
fn wait_for_pids(path: &Path, n: usize) -> Vec<i32> {
    let began = Instant::now();
    loop {
        let pids: Vec<i32> = std::fs::read_to_string(path)
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
        if pids.len() >= n {
            return pids;
        }
        assert!(began.elapsed().as_secs() < 120, "the run never started");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A repository whose one executor task runs the fake agent in `hang_child` mode: it writes
/// "<leader pid> <child pid>" to `pidfile` and waits for ever; the child ignores SIGTERM.
fn hanging_agent_repo(pidfile: &Path) -> TestRepo {
    let repo = TestRepo::new();
    repo.wide_pipeline(1);
    repo.write(
        ".tlv4.toml",
        &format!(
            "[agents.fake]\ndriver = \"command\"\nprogram = \"{}\"\ntimeout = \"10m\"\nwrites = [\"{}\"]\nenv = {{ FAKE_AGENT_MODE = \"hang_child\", FAKE_AGENT_PIDFILE = \"{}\" }}\n[roles]\nexecutor = \"fake\"\n",
            fixture("fake-command"),
            pidfile.parent().unwrap().display(),
            pidfile.display()
        ),
    );
    repo.ok(&["trust"]);
    repo
}

fn start_args() -> Vec<&'static str> {
    vec![
        "start",
        "--pipeline",
        "wide",
        "--yes",
        "--completion",
        "keep",
        "hang",
    ]
}

fn only_session(repo: &TestRepo) -> String {
    repo.rows(&["list", "--json"], "sessions")[0]["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// No worktree but the main one is in use (kept checkouts are idle in the pool, detached).
fn no_checkout_left(repo: &TestRepo) {
    let list = repo.worktrees_in_use();
    assert_eq!(list.matches("worktree ").count(), 1, "{list}");
    assert!(!list.contains("locked"), "{list}");
}

/// After a signal: every agent process gone (within the grace period, polled), the task
/// back to pending, no checkout left, the repository sound.
fn stopped_and_returned(repo: &TestRepo, pids: &[i32], what: &str) {
    assert!(
        all_gone_within(pids, Duration::from_secs(30)),
        "agent processes {pids:?} outlived {what}"
    );
    let sid = only_session(repo);
    assert_eq!(repo.task(&sid, "IMPL-001")["status"], "pending");
    no_checkout_left(repo);
    repo.fsck();
}

/// A pseudo-terminal: the master side (close-on-exec: no other process may hold it, or
/// closing it would not hang up), and the slave's path.
struct Pty {
    master: libc::c_int,
    slave: std::ffi::CString,
}

fn open_pty() -> Pty {
    // SAFETY: plain calls on a descriptor we own; ptsname_r writes into the buffer given.
    unsafe {
        let master = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC);
        assert!(
            master >= 0,
            "posix_openpt: {}",
            std::io::Error::last_os_error()
        );
        assert_eq!(libc::grantpt(master), 0);
        assert_eq!(libc::unlockpt(master), 0);
        let mut buf = [0 as libc::c_char; 256];
        assert_eq!(libc::ptsname_r(master, buf.as_mut_ptr(), buf.len()), 0);
        let slave = std::ffi::CStr::from_ptr(buf.as_ptr()).to_owned();
        Pty { master, slave }
    }
}

/// Runs `cmd` as the session leader of a new session whose controlling terminal is the
/// pty's slave, with stdin, stdout and stderr on it: as a shell in a terminal window would.
fn spawn_on_terminal(mut cmd: std::process::Command, pty: &Pty) -> std::process::Child {
    let slave = pty.slave.clone();
    // SAFETY: the closure runs in the child before exec and makes only async-signal-safe
    // calls (setsid, open, ioctl, dup2, close).
    unsafe {
        cmd.pre_exec(move || {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            let fd = libc::open(slave.as_ptr(), libc::O_RDWR);
            if fd < 0 || libc::ioctl(fd, libc::TIOCSCTTY, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            for to in 0..3 {
                libc::dup2(fd, to);
            }
            if fd > 2 {
                libc::close(fd);
            }
            Ok(())
        });
    }
    cmd.spawn().unwrap()
}

/// Reads the terminal's output until told to stop, then closes the master side: the
/// terminal window goes away, and the kernel hangs up its session (SIGHUP).
fn terminal_reader(
    master: libc::c_int,
) -> (std::sync::mpsc::Sender<()>, std::thread::JoinHandle<String>) {
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let handle = std::thread::spawn(move || {
        let mut seen = Vec::new();
        loop {
            let mut fds = libc::pollfd {
                fd: master,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: polls one descriptor we own, and reads into a live buffer.
            let ready = unsafe { libc::poll(&mut fds, 1, 50) };
            if ready > 0 && fds.revents & libc::POLLIN != 0 {
                let mut buf = [0u8; 4096];
                let n = unsafe { libc::read(master, buf.as_mut_ptr().cast(), buf.len()) };
                if n > 0 {
                    seen.extend_from_slice(&buf[..n as usize]);
                }
            }
            if rx.try_recv().is_ok() {
                // SAFETY: the last descriptor of the master side: closing it hangs up.
                unsafe { libc::close(master) };
                return String::from_utf8_lossy(&seen).into_owned();
            }
        }
    });
    (tx, handle)
}

#[test]
fn closing_the_terminal_stops_the_agent_and_returns_its_task() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("agent.pids");
    let repo = hanging_agent_repo(&pidfile);
    let pty = open_pty();
    let mut child = spawn_on_terminal(repo.tlv4_cmd(&start_args()), &pty);
    let (close, reader) = terminal_reader(pty.master);
    let pids = wait_for_pids(&pidfile, 2);
    close.send(()).unwrap();
    let began = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if began.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("git-tlv4 did not stop when its terminal was closed");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let seen = reader.join().unwrap();
    assert_eq!(
        status.code(),
        Some(129),
        "{status:?}; the terminal showed:\n{seen}"
    );
    // The child of the agent ignores SIGTERM; it goes all the same, within the grace period.
    stopped_and_returned(&repo, &pids, "the closed terminal");
}

#[test]
fn sigterm_stops_the_agent_and_returns_its_task() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("agent.pids");
    let repo = hanging_agent_repo(&pidfile);
    let child = repo
        .tlv4_cmd(&start_args())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pids = wait_for_pids(&pidfile, 2);
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(143), "{:?}: {stderr}", out.status);
    assert!(stderr.contains("interrupted by SIGTERM"), "{stderr}");
    assert!(stderr.contains("returned to pending: IMPL-001"), "{stderr}");
    stopped_and_returned(&repo, &pids, "SIGTERM");
}

#[test]
fn the_agent_dies_with_a_killed_tool_and_resume_waits_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("agent.pids");
    let repo = hanging_agent_repo(&pidfile);
    let mut child = repo
        .tlv4_cmd(&start_args())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pids = wait_for_pids(&pidfile, 2);
    child.kill().unwrap();
    child.wait().unwrap();
    // At once, while the agent's child (which ignores SIGTERM) may be within its grace
    // period: resume waits for it rather than remove the checkout under it.
    let out = repo.tlv4(&["resume", "--no-run"]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    // Nobody stopped the agent but the dead tool's own arrangements.
    assert!(
        all_gone_within(&pids, Duration::from_secs(30)),
        "agent processes {pids:?} outlived the killed git-tlv4"
    );
    repo.ok(&["resume", "--no-run"]);
    no_checkout_left(&repo);
    let sid = only_session(&repo);
    assert_eq!(repo.task(&sid, "IMPL-001")["status"], "pending");
    repo.fsck();
}

/// The children of `pid` (from /proc).
fn children(pid: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/stat"))
                .ok()
                .and_then(|s| {
                    let after = s[s.rfind(')')? + 1..].to_owned();
                    after.split_whitespace().nth(1)?.parse::<u32>().ok()
                })
                == Some(pid)
        })
        .collect()
}

/// The tool killed outright while its agent runs, the agent's child ignoring SIGTERM: the
/// agent's reaper gets the tool's death signal, forwards it, and after its grace kills what is
/// left, so nothing of the run outlives the tool; `resume` then finds no live run and frees
/// the checkout.
#[test]
fn nothing_an_agent_started_outlives_a_killed_tool() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("agent.pids");
    let repo = hanging_agent_repo(&pidfile);
    let mut child = repo
        .tlv4_cmd(&start_args())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pids = wait_for_pids(&pidfile, 2);
    // Take the watchdog down first (the tool's only child that is not the agent's reaper),
    // then the tool: nobody is left to send the agent's child a SIGKILL but the reaper.
    let tool = child.id();
    let reaper = children(tool)
        .into_iter()
        .find(|c| children(*c).contains(&(pids[0] as u32)))
        .expect("the agent runs under its reaper, a child of the tool");
    for c in children(tool) {
        if c != reaper {
            // SAFETY: signalling a process of this test's child.
            unsafe { libc::kill(c as i32, libc::SIGKILL) };
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        all_gone_within(&[pids[0], pids[1], reaper as i32], Duration::from_secs(30)),
        "an agent process outlived the tool: {pids:?}, reaper {reaper}"
    );
    let out = repo.tlv4(&["resume", "--no-run"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    no_checkout_left(&repo);
    repo.fsck();
}

/// A repository whose tests are one unittest module that writes its pid (and that of a child
/// it starts) to `pidfile`, then sleeps; the session runs only the tester.
fn slow_tests_repo() -> TestRepo {
    let repo = TestRepo::new();
    // The tests may write only their checkout and its temporary directory ($TMPDIR).
    repo.write(
        "test_slow.py",
        "import os, subprocess, time, unittest\n\n\nclass Slow(unittest.TestCase):\n    def test_slow(self):\n        child = subprocess.Popen(['sleep', '600'])\n        with open(os.path.join(os.environ['TMPDIR'], 'tests.pids'), 'w') as fh:\n            fh.write('%d %d\\n' % (os.getpid(), child.pid))\n        time.sleep(600)\n",
    );
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "slow tests"]);
    repo.write(
        ".tlv4/specs/pipelines.toml",
        "schema = 1\n[role.tester]\nprefix = \"TEST\"\ninner_loop = false\nsummary = \"x\"\n\
         [role.supervisor]\nprefix = \"CHECKPOINT\"\ninner_loop = false\ncheckpoint = true\nsummary = \"x\"\n\
         [task.TEST-001]\nrole = \"tester\"\nphase = \"validation\"\npriority = \"P0\"\npurpose = \"p\"\nsuccess = \"s\"\nsteps = []\nexpected = \"e\"\nconstraints = \"c\"\n\
         [pipeline.tests]\nsummary = \"tests\"\ntasks = [{ id = \"TEST-001\" }]\n",
    );
    trust(&repo);
    repo
}

/// Trusts what the repository supplies (its pipelines, its tests), where trust covers them;
/// a build in which nothing of it needs trust refuses the command, which changes nothing.
fn trust(repo: &TestRepo) {
    let _ = repo.tlv4(&["trust"]);
}

fn interrupt_a_test_run(signal: libc::c_int, code: i32) {
    let repo = slow_tests_repo();
    let pidfile = repo.pool_dir().join("test-1.tmp/tests.pids");
    let child = repo
        .tlv4_cmd(&[
            "start",
            "--pipeline",
            "tests",
            "--yes",
            "--completion",
            "keep",
            "slow",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pids = wait_for_pids(&pidfile, 2);
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, signal) };
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{:?}: {stderr}", out.status);
    // Gone by the time the tool exited: it waits for the tester to clean up.
    for &p in &pids {
        assert!(gone(p), "test process {p} outlived the interrupted run");
    }
    let sid = only_session(&repo);
    assert_eq!(repo.task(&sid, "TEST-001")["status"], "pending");
    no_checkout_left(&repo);
    repo.fsck();
}

#[test]
fn ctrl_c_stops_a_test_run_and_removes_its_checkout() {
    interrupt_a_test_run(libc::SIGINT, 130);
}

#[test]
fn sigterm_stops_a_test_run_and_removes_its_checkout() {
    interrupt_a_test_run(libc::SIGTERM, 143);
}

#[test]
fn a_test_command_that_cannot_start_is_an_environment_error_not_a_fix() {
    let repo = slow_tests_repo();
    repo.git(&["rm", "-q", "test_slow.py"]);
    repo.write(
        "Cargo.toml",
        "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    );
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "a crate"]);
    trust(&repo);
    // cargo here is rustup's proxy: with an empty RUSTUP_HOME it has no toolchain to run.
    let rustup_home = tempfile::tempdir().unwrap();
    let probe = crate::common::hermetic("cargo", repo.path(), repo.home.path())
        .env("RUSTUP_HOME", rustup_home.path())
        .arg("--version")
        .output();
    let no_toolchain = probe.as_ref().is_ok_and(|o| {
        String::from_utf8_lossy(&o.stderr).contains("rustup could not choose a version")
    });
    if !no_toolchain {
        eprintln!("skipped: `cargo` is not rustup's proxy here ({probe:?})");
        return;
    }
    let out = repo
        .tlv4_cmd(&[
            "start",
            "--pipeline",
            "tests",
            "--yes",
            "--completion",
            "keep",
            "crate",
        ])
        .env("RUSTUP_HOME", rustup_home.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let sid = only_session(&repo);
    let test = repo.task(&sid, "TEST-001");
    assert_eq!(test["status"], "failed", "{test}\n{stderr}");
    let shown = format!("{test}\n{stderr}");
    assert!(
        // `cargo test`: the crate keeps no `.config/nextest.toml`.
        shown.contains("environment error: the test command `cargo ")
            && shown.contains("` could not start"),
        "{shown}"
    );
    assert!(
        shown.contains("rustup could not choose a version of cargo"),
        "{shown}"
    );
    let status = repo.json(&["status", "--json"]);
    let ids: Vec<&str> = status["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["id"].as_str())
        .collect();
    assert_eq!(ids, ["TEST-001"], "no fix task: {status}");
    no_checkout_left(&repo);
    repo.fsck();
}

/// The tester's checkout is full, whatever the user's sparse cone: tests outside it run.
#[test]
fn the_tests_of_a_sparse_checkout_run_on_every_file() {
    let repo = TestRepo::new();
    repo.write(
        "tests/test_outside.py",
        "import unittest\n\n\nclass Outside(unittest.TestCase):\n    def test_one(self):\n        self.assertTrue(True)\n\n    def test_two(self):\n        self.assertTrue(True)\n",
    );
    repo.write("tests/__init__.py", "");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "tests"]);
    repo.git(&["sparse-checkout", "set", "--cone", "src"]);
    assert!(!repo.path().join("tests/test_outside.py").exists());
    repo.write(
        ".tlv4/specs/pipelines.toml",
        "schema = 1\n[role.tester]\nprefix = \"TEST\"\ninner_loop = false\nsummary = \"x\"\n\
         [role.supervisor]\nprefix = \"CHECKPOINT\"\ninner_loop = false\ncheckpoint = true\nsummary = \"x\"\n\
         [task.TEST-001]\nrole = \"tester\"\nphase = \"validation\"\npriority = \"P0\"\npurpose = \"p\"\nsuccess = \"s\"\nsteps = []\nexpected = \"e\"\nconstraints = \"c\"\n\
         [pipeline.tests]\nsummary = \"tests\"\ntasks = [{ id = \"TEST-001\" }]\n",
    );
    trust(&repo);
    repo.ok(&[
        "start",
        "--pipeline",
        "tests",
        "--yes",
        "--completion",
        "keep",
        "sparse",
    ]);
    let sid = only_session(&repo);
    let task = repo.task(&sid, "TEST-001");
    assert_eq!(task["status"], "completed", "{task}");
    let summary = task["result"]["summary"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(summary.contains("2 passed"), "{task}");
    no_checkout_left(&repo);
    repo.fsck();
}
