//! The kernel's sandbox around agents: an agent that tries every way out of its checkout is
//! refused each time, its one legitimate edit is merged, nothing it started outlives its run,
//! and the repository stays whole. Inside the box, an agent CLI gets its shell: it runs the
//! project's tests in its checkout, and what the box refused it is in the run record.

use crate::common::{TestRepo, fixture};

/// Starts the one-task `wide` pipeline (`--yes --completion keep`), which must succeed;
/// returns the session id and what `start` said on stderr.
fn start_wide(repo: &TestRepo, text: &str) -> (String, String) {
    let out = repo
        .tlv4_cmd(&[
            "start",
            "--pipeline",
            "wide",
            "--yes",
            "--completion",
            "keep",
            text,
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    (stdout.lines().next().unwrap().trim().to_owned(), stderr)
}

/// Whether the kernel's sandbox is full here (Landlock ABI 6 or more); a test that needs it
/// is skipped otherwise, unless `TLV4_REQUIRE_SANDBOX` is set (CI), where it then fails.
fn full_sandbox() -> bool {
    let level = std::process::Command::new("python3")
        .args([
            "-c",
            "import ctypes; print(ctypes.CDLL(None).syscall(444, None, 0, 1))",
        ])
        .output()
        .unwrap();
    let abi: i32 = String::from_utf8_lossy(&level.stdout)
        .trim()
        .parse()
        .unwrap_or(0);
    if abi < 6 && std::env::var_os("TLV4_REQUIRE_SANDBOX").is_none() {
        eprintln!("skipped: Landlock ABI {abi} here (6 or more is needed)");
        return false;
    }
    true
}

#[test]
fn an_agent_that_tries_every_way_out_is_refused_and_its_edit_is_merged() {
    if !full_sandbox() {
        return;
    }
    let repo = TestRepo::new();
    repo.wide_pipeline(1);
    let ssh = repo.home.path().join(".ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    std::fs::write(ssh.join("id_test"), "PRIVATE KEY\n").unwrap();
    std::fs::write(repo.home.path().join(".bashrc"), "# rc\n").unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let sockdir = tempfile::tempdir().unwrap();
    let sock = sockdir.path().join("agent.sock");
    let _unix = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    repo.write(
        ".tlv4.toml",
        &format!(
            "[agents.escape]\ndriver = \"command\"\nprogram = \"{}\"\ntimeout = \"60s\"\n\
             env = {{ ESCAPE_REPO = \"{}\", ESCAPE_HOME = \"{}\", ESCAPE_PORT = \"{port}\", ESCAPE_SOCKET = \"{}\", ESCAPE_OTHER = \"{}\" }}\n\
             [roles]\nexecutor = \"escape\"\n",
            fixture("escape-agent"),
            repo.path().display(),
            repo.home.path().display(),
            sock.display(),
            repo.pool_dir().display(),
        ),
    );
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "an escaping agent"]);
    repo.ok(&["trust"]);
    let config = std::fs::read(repo.path().join(".git/config")).unwrap();
    let main = repo.git(&["rev-parse", "main"]);
    let (sid, _) = start_wide(&repo, "get out");
    assert_eq!(repo.task(&sid, "IMPL-001")["status"], "completed");
    let escapes = repo.git(&["show", &format!("tlv4/{sid}:escapes.txt")]);
    for line in escapes.lines().filter(|l| !l.starts_with("daemon:")) {
        assert!(
            line.contains(": refused: "),
            "an escape went through: {line}\n{escapes}"
        );
    }
    assert_eq!(escapes.lines().count(), 15, "{escapes}");
    // Nothing of the user's changed.
    assert_eq!(
        std::fs::read(repo.path().join(".git/config")).unwrap(),
        config
    );
    assert!(!repo.path().join(".git/hooks/post-commit").exists());
    assert_eq!(repo.git(&["rev-parse", "main"]), main);
    assert_eq!(
        std::fs::read_to_string(repo.path().join("README.md")).unwrap(),
        "# sample\n"
    );
    assert_eq!(
        std::fs::read_to_string(repo.home.path().join(".bashrc")).unwrap(),
        "# rc\n"
    );
    // The daemon it left is gone with the run.
    let daemon: i32 = escapes
        .lines()
        .find_map(|l| l.strip_prefix("daemon: "))
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("{escapes}"));
    let gone = std::fs::read_to_string(format!("/proc/{daemon}/stat")).map_or(true, |s| {
        s.rsplit_once(')')
            .is_some_and(|(_, r)| r.trim_start().starts_with(['Z', 'X']))
    });
    assert!(gone, "the agent's daemon {daemon} outlived its run");
    let fsck = repo.git_cmd(&["fsck", "--strict"]).output().unwrap();
    assert!(
        fsck.status.success(),
        "{}",
        String::from_utf8_lossy(&fsck.stderr)
    );
}

/// A session started where the sandbox is full runs with shell on: the executor's CLI (the
/// fake Claude Code) gets Bash, runs the sample's tests, which the prompt names, in its
/// checkout, where they pass; a write it tries outside is refused, noted in the run record
/// and the progress, and does not fail the task.
#[test]
fn an_agent_with_a_shell_runs_the_samples_tests_in_its_checkout() {
    if !full_sandbox() {
        return;
    }
    let repo = TestRepo::new();
    repo.wide_pipeline(1);
    repo.write("app/__init__.py", "");
    repo.write("app/calc.py", "def add(a, b):\n    return a + b\n");
    repo.write("tests/__init__.py", "");
    repo.write(
        "tests/test_calc.py",
        "import unittest\n\nfrom app.calc import add\n\n\nclass Calc(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n",
    );
    let outside = repo.home.path().join("from-the-shell.txt");
    let tests = "python3 -m unittest discover -s tests -t . -v";
    repo.write(
        ".tlv4.toml",
        &format!(
            "[tests]\ncommand = \"{tests}\"\n\
             [agents.cc]\ndriver = \"claude\"\nprogram = \"{}\"\ntimeout = \"60s\"\n\
             env = {{ FAKE_AGENT_COMMAND = \"echo x > {}\" }}\n\
             [roles]\nexecutor = \"cc\"\n",
            fixture("fake-claude"),
            outside.display(),
        ),
    );
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "calc, its tests, a shell agent"]);
    repo.ok(&["trust"]);
    let (sid, stderr) = start_wide(&repo, "add it");
    assert!(stderr.contains("  shell: on: "), "{stderr}");
    // Decided at start, kept with the session.
    let status = repo.json(&["--session", &sid, "status", "--json"]);
    assert_eq!(status["control"]["settings"]["shell"], true, "{status}");
    assert_eq!(repo.task(&sid, "IMPL-001")["status"], "completed");
    // The tests ran in the agent's checkout, and passed.
    let work = repo.git(&["show", &format!("tlv4/{sid}:fake-IMPL-001.txt")]);
    assert!(
        work.contains(&format!("ran `{tests}`: exit 0")),
        "{work}\n{stderr}"
    );
    assert!(work.contains("Ran 1 test") && work.contains("OK"), "{work}");
    let dir = format!(".tlv4/sessions/{sid}/runs/IMPL-001/1");
    let prompt = repo.git(&["show", &format!("tlv4/{sid}:{dir}/prompt.md")]);
    assert!(
        prompt.contains(&format!(
            "- Test command: `{tests}` (from .tlv4.toml [tests] command)"
        )),
        "{prompt}"
    );
    // Its write outside was refused, and is on record; the task is not failed for it.
    assert!(!outside.exists());
    let record: serde_json::Value =
        serde_json::from_str(&repo.git(&["show", &format!("tlv4/{sid}:{dir}/result.json")]))
            .unwrap();
    let refusals = record["sandbox_refusals"].to_string();
    assert!(
        refusals.contains(&outside.display().to_string()) && refusals.contains("Permission denied"),
        "{record}"
    );
    assert!(
        record["state_update"]["verification"]
            .as_str()
            .unwrap()
            .starts_with("tested"),
        "{record}"
    );
    assert!(
        stderr.contains("the sandbox refused agent cc one access"),
        "{stderr}"
    );
    // Python's bytecode caches stay out of the session.
    let files = repo.git(&["ls-tree", "-r", "--name-only", &format!("tlv4/{sid}")]);
    assert!(!files.contains("__pycache__"), "{files}");
    repo.fsck();
}

/// An agent that commits its work, as Aider does, inside the sandbox that keeps it out of the
/// repository's objects and refs: its commit lands in its checkout's own git directory, the
/// snapshot takes the change and names the commit, and the repository has no object or ref
/// of the agent's.
#[test]
fn an_agent_that_commits_keeps_working_without_writing_the_repository() {
    if !full_sandbox() {
        return;
    }
    let repo = TestRepo::new();
    repo.wide_pipeline(1);
    repo.write(
        ".tlv4.toml",
        &format!(
            "[agents.scripted]\ndriver = \"command\"\nprogram = \"{}\"\nenv = {{ SCRIPTED_MODE = \"commit\" }}\n[roles]\nexecutor = \"scripted\"\n",
            fixture("scripted-agent"),
        ),
    );
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "an agent that commits"]);
    repo.ok(&["trust"]);
    let refs = repo.git(&[
        "for-each-ref",
        "--format=%(refname)",
        "refs/heads/",
        "refs/tags/",
    ]);
    let (sid, _) = start_wide(&repo, "commit it");
    let task = repo.task(&sid, "IMPL-001");
    assert_eq!(task["status"], "completed", "{task}");
    assert_eq!(
        repo.git(&["show", &format!("tlv4/{sid}:scripted-IMPL-001.txt")]),
        "IMPL-001 was here\n"
    );
    // The snapshot names the agent's commit; that commit is not in the repository.
    let log = repo.git(&["log", "--format=%B%x00", &format!("tlv4/{sid}.IMPL-001")]);
    let snapshot = log
        .split('\0')
        .find(|m| m.contains("Tlv4-Event: task_snapshot"))
        .unwrap_or_else(|| panic!("{log}"));
    let named = snapshot
        .lines()
        .skip_while(|l| !l.starts_with("Commits the agent made"))
        .nth(1)
        .unwrap_or_else(|| panic!("{snapshot}"));
    assert!(named.ends_with(" add scripted-IMPL-001.txt"), "{snapshot}");
    let short = named.split_whitespace().next().unwrap();
    let found = repo
        .git_cmd(&[
            "rev-parse",
            "--verify",
            "-q",
            &format!("{short}^{{commit}}"),
        ])
        .output()
        .unwrap();
    assert!(
        !found.status.success(),
        "the agent's commit reached the repository"
    );
    // No branch or tag of the user's moved or appeared, but the session's own.
    let after = repo.git(&[
        "for-each-ref",
        "--format=%(refname)",
        "refs/heads/",
        "refs/tags/",
    ]);
    let added: Vec<&str> = after
        .lines()
        .filter(|r| !refs.lines().any(|b| b == *r))
        .collect();
    assert!(
        added.iter().all(|r| r.starts_with("refs/heads/tlv4/")),
        "{added:?}"
    );
    repo.fsck();
}

/// `[sandbox] shell = false` keeps a session without a shell even where the sandbox is full:
/// `start` says so and the session keeps it.
#[test]
fn a_repository_can_keep_its_agents_without_a_shell() {
    if !full_sandbox() {
        return;
    }
    let repo = TestRepo::new();
    repo.wide_pipeline(1);
    repo.write(
        ".tlv4.toml",
        &format!(
            "[sandbox]\nshell = false\n[agents.cc]\ndriver = \"claude\"\nprogram = \"{}\"\ntimeout = \"60s\"\n[roles]\nexecutor = \"cc\"\n",
            fixture("fake-claude"),
        ),
    );
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "no shell here"]);
    repo.ok(&["trust"]);
    let (sid, stderr) = start_wide(&repo, "no shell");
    assert!(
        stderr.contains("  shell: off: `[sandbox] shell = false`; agents get no shell"),
        "{stderr}"
    );
    let status = repo.json(&["--session", &sid, "status", "--json"]);
    // Off is not written (a session of before shell on reads the same).
    assert_ne!(status["control"]["settings"]["shell"], true, "{status}");
    assert_eq!(repo.task(&sid, "IMPL-001")["status"], "completed");
    let dir = format!(".tlv4/sessions/{sid}/runs/IMPL-001/1");
    let prompt = repo.git(&["show", &format!("tlv4/{sid}:{dir}/prompt.md")]);
    assert!(!prompt.contains("Test command:"), "{prompt}");
    repo.fsck();
}
