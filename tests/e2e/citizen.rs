//! A good citizen of the terminal and of git: exit codes that say how a run stopped, man
//! pages that `git tlv4 --help` opens, completions git's bash completion calls, `--version`,
//! plain progress on a dumb terminal, and long output through the user's pager.

use std::path::Path;
use std::process::Command;

use crate::common::{BIN, STALLED, TestRepo, WAITING, hermetic};

/// Writes an executable shell script.
fn script(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A directory holding `git-tlv4`, to put first on PATH so that `git tlv4` finds this build.
fn bin_dir() -> String {
    let bin = Path::new(BIN).parent().unwrap();
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// Runs `command` under a pseudo-terminal (`script`), with `env`; its output (both streams,
/// as the terminal shows them) and exit status. `None` without `script`.
pub(crate) fn on_a_terminal(
    repo: &TestRepo,
    command: &str,
    env: &[(&str, &str)],
) -> Option<String> {
    let mut cmd = hermetic("script", repo.path(), repo.home.path());
    cmd.args(["-qec", command, "/dev/null"])
        .env("PATH", bin_dir());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().ok()?;
    assert!(
        out.status.success(),
        "{command}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8_lossy(&out.stdout).replace('\r', ""))
}

fn pause_kind(repo: &TestRepo) -> serde_json::Value {
    repo.json(&["status", "--json"])["control"]["pause"]["kind"].clone()
}

#[test]
fn a_run_that_completes_exits_0() {
    let repo = TestRepo::new();
    repo.wide_pipeline(2);
    let out = repo.tlv4(&[
        "start",
        "--pipeline",
        "wide",
        "--yes",
        "--completion",
        "keep",
        "two tasks",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        repo.json(&["status", "--json"])["session"]["status"],
        "completed"
    );
}

#[test]
fn a_run_stalled_on_a_failed_task_exits_stalled_and_says_so_again_on_resume() {
    let repo = TestRepo::new();
    repo.wide_pipeline(1);
    repo.start("wide", "fails");
    repo.ok(&["task", "claim", "IMPL-001", "--pid", "1"]);
    repo.ok(&["task", "fail", "IMPL-001", "--summary", "broken"]);
    let err = repo.fails(&["resume"], STALLED);
    assert!(err.contains("paused (stalled)"), "{err}");
    assert_eq!(pause_kind(&repo), "stalled");
    // Asked again, the paused session answers the same.
    let err = repo.fails(&["resume"], STALLED);
    assert!(err.contains("is paused (stalled)"), "{err}");
    // Retried, the builtin executor completes it: done.
    repo.ok(&["resume", "--retry", "--completion", "keep"]);
    assert_eq!(
        repo.json(&["status", "--json"])["session"]["status"],
        "completed"
    );
}

#[test]
fn a_run_paused_at_the_gate_exits_waiting() {
    let repo = TestRepo::new();
    let err = repo.fails(
        &[
            "start",
            "--pipeline",
            "spec-only",
            "--no-supervision",
            "--completion",
            "keep",
            "Write the requirements for note search",
        ],
        WAITING,
    );
    assert!(err.contains("paused (gate)"), "{err}");
    assert_eq!(pause_kind(&repo), "gate");
    // Asked again, the paused session answers the same.
    repo.fails(&["resume"], WAITING);
}

#[test]
fn a_run_paused_by_a_blocking_checkpoint_exits_waiting() {
    let repo = TestRepo::new();
    repo.start("spec-only", "Write the requirements for note search");
    // The tasks before the first checkpoint are done by hand and hand back nothing: the
    // checkpoint finds none of their documents and blocks.
    for task in ["RESEARCH-001", "DRAFT-001", "DRAFT-002"] {
        repo.ok(&["task", "claim", task, "--pid", "1"]);
        repo.ok(&["task", "complete", task, "--summary", "nothing written"]);
    }
    let err = repo.fails(&["resume", "--completion", "keep"], WAITING);
    assert!(err.contains("paused (checkpoint)"), "{err}");
    assert_eq!(pause_kind(&repo), "checkpoint");
    let s = repo.json(&["status", "--json"]);
    assert_eq!(
        s["control"]["verdicts"]["CHECKPOINT-001"]["verdict"],
        "block"
    );
}

#[test]
fn version_names_the_build_commit_and_the_state_format() {
    let out = Command::new(BIN).arg("--version").output().unwrap();
    assert!(out.status.success());
    let said = String::from_utf8(out.stdout).unwrap();
    // The commit of the source directory, as the build saw it; `unknown` from a tarball.
    let manifest = env!("CARGO_MANIFEST_DIR");
    let top = Command::new("git")
        .args(["-C", manifest, "rev-parse", "--show-toplevel"])
        .output()
        .unwrap();
    let commit = if top.status.success()
        && Path::new(String::from_utf8_lossy(&top.stdout).trim())
            .canonicalize()
            .ok()
            == Path::new(manifest).canonicalize().ok()
    {
        let head = Command::new("git")
            .args(["-C", manifest, "rev-parse", "--short=12", "HEAD"])
            .output()
            .unwrap();
        String::from_utf8(head.stdout).unwrap().trim().to_owned()
    } else {
        "unknown".to_owned()
    };
    assert_eq!(
        said.trim(),
        format!(
            "git-tlv4 {} (commit {commit}, state format {})",
            env!("CARGO_PKG_VERSION"),
            tlv4_core::model::SCHEMA_NEWEST
        )
    );
}

#[test]
fn installed_man_pages_open_with_git_help_and_dash_dash_help() {
    let repo = TestRepo::new();
    let man = repo.home.path().join("man");
    let out = repo.ok(&["install-man-pages", man.to_str().unwrap()]);
    assert_eq!(out.trim(), man.join("man1").display().to_string());
    for page in ["git-tlv4.1", "git-tlv4-start.1", "git-tlv4-task-claim.1"] {
        assert!(man.join("man1").join(page).is_file(), "{page}");
    }
    if Command::new("man").arg("--version").output().is_err() {
        eprintln!("skipped: `man` is not installed");
        return;
    }
    // What git runs for `git tlv4 --help` and `git help tlv4`: `man git-tlv4`.
    for args in [&["tlv4", "--help"][..], &["help", "tlv4"][..]] {
        let out = repo
            .git_cmd(args)
            .env("PATH", bin_dir())
            .env("MANPATH", &man)
            .env("MANPAGER", "cat")
            .env("MANWIDTH", "100")
            .output()
            .unwrap();
        let page = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(page.contains("git-tlv4"), "{page}");
        assert!(page.contains("EXIT STATUS"), "{page}");
        assert!(page.contains("git-tlv4-start(1)"), "{page}");
    }
    // Each command's own page, read as a file.
    let out = Command::new("man")
        .arg("-l")
        .arg(man.join("man1/git-tlv4-start.1"))
        .env("MANPAGER", "cat")
        .output()
        .unwrap();
    let page = String::from_utf8_lossy(&out.stdout);
    assert!(page.contains("--pipeline"), "{page}");
    // `-h` needs no page: git passes it on, clap answers.
    let out = repo
        .git_cmd(&["tlv4", "-h"])
        .env("PATH", bin_dir())
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("Usage: git tlv4"));
}

/// Completes `words` (the last one being completed) through git's own bash completion with
/// the script of `git tlv4 completions bash` loaded.
fn complete(repo: &TestRepo, git_completion: &Path, words: &[&str]) -> Vec<String> {
    let script = repo.ok(&["completions", "bash"]);
    let file = repo.home.path().join("tlv4.bash");
    std::fs::write(&file, script).unwrap();
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let driver = format!(
        "source '{}'\nsource '{}'\nCOMP_WORDS=({})\nCOMP_CWORD={}\nCOMP_LINE='{}'\nCOMP_POINT=${{#COMP_LINE}}\n__git_wrap__git_main\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        git_completion.display(),
        file.display(),
        quoted.join(" "),
        words.len() - 1,
        words.join(" "),
    );
    let out = hermetic("bash", repo.path(), repo.home.path())
        .args(["--norc", "-c", &driver])
        .env("PATH", bin_dir())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

#[test]
fn bash_completion_of_git_tlv4_offers_commands_sessions_and_tasks() {
    let git_completion = [
        "/usr/share/bash-completion/completions/git",
        "/etc/bash_completion.d/git",
    ]
    .into_iter()
    .map(Path::new)
    .find(|p| p.is_file());
    let Some(git_completion) = git_completion else {
        eprintln!("skipped: git's bash completion is not installed");
        return;
    };
    let repo = TestRepo::new();
    repo.wide_pipeline(2);
    let sid = repo.start("wide", "complete me");
    assert_eq!(
        complete(&repo, git_completion, &["git", "tlv4", "sta"]),
        ["start", "status"]
    );
    assert_eq!(
        complete(&repo, git_completion, &["git", "tlv4", "--session", ""]),
        [sid]
    );
    assert_eq!(
        complete(&repo, git_completion, &["git", "tlv4", "revise", "IMPL-00"]),
        ["IMPL-001", "IMPL-002"]
    );
    assert_eq!(
        complete(&repo, git_completion, &["git", "tlv4", "task", "claim", ""]),
        ["IMPL-001", "IMPL-002"]
    );
    assert!(
        complete(&repo, git_completion, &["git", "tlv4", "start", "--pi"])
            .contains(&"--pipeline".to_owned())
    );
    // The helper the script calls never fails, even outside a repository.
    let out = hermetic(BIN, repo.home.path(), repo.home.path())
        .args(["__complete", "sessions"])
        .output()
        .unwrap();
    assert!(out.status.success() && out.stdout.is_empty() && out.stderr.is_empty());
}

#[test]
fn zsh_and_fish_scripts_are_made_and_parse() {
    let repo = TestRepo::new();
    for (shell, check) in [("zsh", &["-n"][..]), ("fish", &["--no-execute"][..])] {
        let script = repo.ok(&["completions", shell]);
        assert!(script.contains("git-tlv4"), "{shell}");
        let file = repo.home.path().join(format!("tlv4.{shell}"));
        std::fs::write(&file, &script).unwrap();
        match Command::new(shell).args(check).arg(&file).output() {
            Ok(out) => assert!(
                out.status.success(),
                "{shell}: {}",
                String::from_utf8_lossy(&out.stderr)
            ),
            Err(_) => eprintln!("skipped the syntax check: `{shell}` is not installed"),
        }
    }
}

#[test]
fn a_dumb_terminal_gets_every_task_line() {
    let repo = TestRepo::new();
    repo.wide_pipeline(2);
    let Some(shown) = on_a_terminal(
        &repo,
        "git tlv4 start --pipeline wide --yes --completion keep 'on a dumb terminal'",
        &[("TERM", "dumb")],
    ) else {
        eprintln!("skipped: `script` is not installed");
        return;
    };
    for task in ["IMPL-001", "IMPL-002"] {
        assert!(shown.contains(&format!("{task} started")), "{shown}");
        assert!(shown.contains(&format!("{task} completed in")), "{shown}");
    }
}

#[test]
fn log_and_status_go_through_the_users_pager_on_a_terminal() {
    let repo = TestRepo::new();
    repo.wide_pipeline(1);
    repo.start("wide", "paged");
    let pager = repo.home.path().join("pager");
    script(
        &pager,
        "#!/bin/sh\necho PAGER-START \"$GIT_PAGER_IN_USE\"; cat; echo PAGER-END\n",
    );
    let pager = pager.to_str().unwrap();
    let Some(shown) = on_a_terminal(&repo, "git tlv4 log", &[("GIT_PAGER", pager)]) else {
        eprintln!("skipped: `script` is not installed");
        return;
    };
    assert!(shown.starts_with("PAGER-START true\n"), "{shown}");
    assert!(
        shown.contains("session: started") && shown.contains("PAGER-END"),
        "{shown}"
    );
    let shown = on_a_terminal(&repo, "git tlv4 status", &[("GIT_PAGER", pager)]).unwrap();
    assert!(
        shown.starts_with("PAGER-START") && shown.contains("IMPL-001"),
        "{shown}"
    );
    // core.pager when GIT_PAGER is not set; none with -P, --no-pager, pager.tlv4=false, or
    // off a terminal.
    repo.git(&["config", "core.pager", pager]);
    let shown = on_a_terminal(&repo, "git tlv4 log", &[]).unwrap();
    assert!(shown.starts_with("PAGER-START"), "{shown}");
    for command in [
        "git -P tlv4 log",
        "git tlv4 --no-pager log",
        "git -c pager.tlv4=false tlv4 log",
        "git config pager.tlv4 false && git-tlv4 log; git config --unset pager.tlv4",
    ] {
        let shown = on_a_terminal(&repo, command, &[]).unwrap();
        assert!(!shown.contains("PAGER-START"), "{command}: {shown}");
        assert!(shown.contains("session: started"), "{command}: {shown}");
    }
    let piped = repo.ok(&["log"]);
    assert!(!piped.contains("PAGER-START"), "{piped}");
    // A pager already running (git -p, pager.tlv4 = true) is not started twice.
    let shown = on_a_terminal(&repo, "git tlv4 log", &[("GIT_PAGER_IN_USE", "true")]).unwrap();
    assert!(!shown.contains("PAGER-START"), "{shown}");
    let shown = on_a_terminal(&repo, "git -c pager.tlv4=true tlv4 log", &[]).unwrap();
    assert_eq!(shown.matches("PAGER-START").count(), 1, "{shown}");
}

#[test]
fn pipelines_and_trust_show_speak_json_with_a_schema() {
    let repo = TestRepo::new();
    let p = repo.json(&["pipelines", "--json"]);
    assert_eq!(p["schema"], 1);
    let spec = p["pipelines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == "spec-only")
        .unwrap()
        .clone();
    let tasks: Vec<&str> = spec["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(tasks.first(), Some(&"RESEARCH-001"), "{spec}");
    assert_eq!(
        spec["tasks"][1]["blocked_by"],
        serde_json::json!(["RESEARCH-001"])
    );

    repo.wide_pipeline(1);
    let t = repo.json(&["trust", "--show", "--json"]);
    assert_eq!(t["schema"], 1);
    assert_eq!(t["state"], "trusted", "{t}");
    let file = &t["files"][0];
    assert_eq!(file["path"], ".tlv4/specs/pipelines.toml", "{t}");
    assert_eq!(file["trusted"], true, "{t}");
    repo.write(".tlv4/specs/pipelines.toml", "schema = 1\n");
    let t = repo.json(&["trust", "--show", "--json"]);
    assert_eq!(t["state"], "changed", "{t}");
    assert_eq!(t["files"][0]["trusted"], false, "{t}");
    assert!(t["files"][0]["problem"].is_string(), "{t}");
}

// Every read command's `--json` is an object with the shape's `schema`; lists hold their rows
// under one key, so they can grow fields without breaking who reads the rows.
#[test]
fn every_read_commands_json_carries_its_schema() {
    let repo = TestRepo::new();
    let sid = repo.start("spec-only", "Add search to notes");
    repo.ok(&[
        "msg", "send", "--from", "writer", "--type", "note", "a word",
    ]);
    for (args, rows) in [
        (&["list", "--json"][..], Some("sessions")),
        (&["list", "--all", "--json"], Some("sessions")),
        (&["log", "--json"], Some("events")),
        (&["msg", "list", "--json"], Some("messages")),
        (&["status", "--json"], None),
        (&["cost", "--json"], None),
        (&["graph", "--json"], None),
        (&["pipelines", "--json"], None),
        (&["trust", "--show", "--json"], None),
    ] {
        let doc = repo.json(args);
        assert_eq!(doc["schema"], 1, "{args:?}: {doc}");
        if let Some(key) = rows {
            let rows = doc[key]
                .as_array()
                .unwrap_or_else(|| panic!("{args:?}: {doc}"));
            assert!(!rows.is_empty(), "{args:?}: {doc}");
        }
    }
    assert_eq!(repo.rows(&["list", "--json"], "sessions")[0]["id"], sid);
}
