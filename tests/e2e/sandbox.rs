//! The kernel's sandbox around agents: an agent that tries every way out of its checkout is
//! refused each time, its one legitimate edit is merged, nothing it started outlives its run,
//! and the repository stays whole.

use crate::common::{TestRepo, fixture};

#[test]
fn an_agent_that_tries_every_way_out_is_refused_and_its_edit_is_merged() {
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
    let out = repo.ok(&[
        "start",
        "--pipeline",
        "wide",
        "--yes",
        "--completion",
        "keep",
        "get out",
    ]);
    let sid = out.lines().next().unwrap().trim().to_owned();
    assert_eq!(repo.task(&sid, "IMPL-001")["status"], "completed");
    let escapes = repo.git(&["show", &format!("tlv4/{sid}:escapes.txt")]);
    for line in escapes.lines().filter(|l| !l.starts_with("daemon:")) {
        assert!(
            line.contains(": refused: "),
            "an escape went through: {line}\n{escapes}"
        );
    }
    assert_eq!(escapes.lines().count(), 14, "{escapes}");
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
