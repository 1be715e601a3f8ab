//! Bad input gets a clear error and changes nothing.

use crate::common::{BIN, TestRepo, hermetic};

#[test]
fn outside_a_repository() {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let out = hermetic(BIN, dir.path(), home.path())
        .args(["status"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("error: not a git repository"), "{err}");
    assert!(err.contains("hint:"), "{err}");
}

#[test]
fn a_repository_without_commits() {
    let repo = TestRepo::empty();
    let err = repo.fails(&["start", "x"], 1);
    assert!(err.contains("no commits yet"), "{err}");
    assert_eq!(repo.git(&["for-each-ref"]), "");
}

#[test]
fn a_bare_repository() {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let out = hermetic("git", dir.path(), home.path())
        .args(["init", "-q", "--bare", "r.git"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let out = hermetic(BIN, &dir.path().join("r.git"), home.path())
        .args(["start", "x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is a bare repository"));
}

#[test]
fn unknown_session_task_and_pipeline() {
    let repo = TestRepo::new();
    let sid = repo.start("spec-only", "write a spec");
    let before = repo.snapshot();
    let err = repo.fails(&["--session", "TLV4-nope-20260101", "status"], 1);
    assert!(
        err.contains("no session `TLV4-nope-20260101`") && err.contains(&sid),
        "{err}"
    );
    let err = repo.fails(&["task", "claim", "NOPE-001"], 1);
    assert!(
        err.contains("has no task `NOPE-001`") && err.contains("RESEARCH-001"),
        "{err}"
    );
    let err = repo.fails(&["task", "claim", "not-a-task"], 2);
    assert!(err.contains("not a valid task id"), "{err}");
    let err = repo.fails(&["start", "--pipeline", "nope", "x"], 1);
    assert!(
        err.contains("unknown pipeline `nope`") && err.contains("spec-only"),
        "{err}"
    );
    assert_eq!(repo.snapshot(), before);
}

#[test]
fn claiming_twice_completing_twice_and_out_of_order() {
    let repo = TestRepo::new();
    repo.start("spec-only", "write a spec");
    let err = repo.fails(&["task", "claim", "DRAFT-001"], 1);
    assert!(err.contains("blocked by RESEARCH-001"), "{err}");
    let err = repo.fails(&["task", "complete", "RESEARCH-001"], 1);
    assert!(err.contains("not claimed"), "{err}");
    repo.ok(&["task", "claim", "RESEARCH-001"]);
    let before = repo.snapshot();
    let err = repo.fails(&["task", "claim", "RESEARCH-001"], 3);
    assert!(err.contains("already claimed by"), "{err}");
    assert_eq!(repo.snapshot(), before);
    repo.ok(&["task", "complete", "RESEARCH-001"]);
    let before = repo.snapshot();
    let err = repo.fails(&["task", "complete", "RESEARCH-001"], 1);
    assert!(err.contains("already completed"), "{err}");
    repo.fails(&["task", "fail", "RESEARCH-001"], 1);
    repo.fails(&["task", "claim", "RESEARCH-001"], 1);
    assert_eq!(repo.snapshot(), before);
}

#[test]
fn hostile_artifact_paths_and_bad_json() {
    let repo = TestRepo::new();
    repo.start("spec-only", "write a spec");
    repo.ok(&["task", "claim", "RESEARCH-001"]);
    let file = repo.write("x.txt", "x\n");
    let before = repo.snapshot();
    for path in [
        "../../escape.md",
        "/etc/passwd",
        "spec/../../x",
        ".git/config",
        "session.toml",
        "tasks/DRAFT-001.toml",
        "a//b",
    ] {
        let err = repo.fails(
            &[
                "task",
                "complete",
                "RESEARCH-001",
                "--artifact",
                &format!("{path}={}", file.display()),
            ],
            1,
        );
        assert!(err.contains("artifact path"), "{path}: {err}");
    }
    let err = repo.fails(
        &[
            "task",
            "complete",
            "RESEARCH-001",
            "--artifact",
            "spec/a.md=/nonexistent/file",
        ],
        255,
    );
    assert!(err.contains("cannot read artifact file"), "{err}");
    let err = repo.fails(
        &[
            "msg",
            "send",
            "--from",
            "a",
            "--type",
            "t",
            "--data",
            "{not json",
            "s",
        ],
        1,
    );
    assert!(err.contains("--data is not valid JSON"), "{err}");
    assert_eq!(repo.snapshot(), before);
}

#[test]
fn a_session_from_a_newer_schema_is_refused() {
    let repo = TestRepo::new();
    let sid = repo.start("spec-only", "write a spec");
    let branch = format!("tlv4/{sid}");
    // Rewrite session.toml with schema 99 as a newer git-tlv4 would, with git plumbing.
    let path = format!(".tlv4/sessions/{sid}/session.toml");
    let text = repo
        .git(&["show", &format!("{branch}:{path}")])
        .replace("schema = 1", "schema = 99");
    let blob_file = repo.home.path().join("newer-session.toml");
    std::fs::write(&blob_file, &text).unwrap();
    let blob = repo.git(&["hash-object", "-w", blob_file.to_str().unwrap()]);
    let index = repo.home.path().join("tmp-index");
    let run = |args: &[&str]| {
        let out = repo
            .git_cmd(args)
            .env("GIT_INDEX_FILE", &index)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    run(&["read-tree", &branch]);
    run(&[
        "update-index",
        "--cacheinfo",
        &format!("100644,{},{path}", blob.trim()),
    ]);
    let tree = run(&["write-tree"]);
    let commit = repo.git(&["commit-tree", tree.trim(), "-p", &branch, "-m", "future"]);
    repo.git(&["update-ref", &format!("refs/heads/{branch}"), commit.trim()]);
    let before = repo.snapshot();
    let err = repo.fails(&["status"], 1);
    assert!(
        err.contains("uses state format 99")
            && err.contains(&format!("reads format {}", tlv4_core::model::SCHEMA_NEWEST)),
        "{err}"
    );
    let err = repo.fails(&["task", "claim", "RESEARCH-001"], 1);
    assert!(err.contains("state format 99"), "{err}");
    assert_eq!(repo.snapshot(), before);
}

#[test]
fn a_session_branch_checked_out_in_a_worktree_is_not_moved() {
    let repo = TestRepo::new();
    let sid = repo.start("spec-only", "write a spec");
    let wt = repo.home.path().join("wt-checkout");
    repo.git(&[
        "worktree",
        "add",
        "-q",
        wt.to_str().unwrap(),
        &format!("tlv4/{sid}"),
    ]);
    let before = repo.snapshot();
    let err = repo.fails(&["task", "claim", "RESEARCH-001"], 1);
    assert!(
        err.contains("is checked out in") && err.contains("wt-checkout"),
        "{err}"
    );
    assert!(err.contains("hint: switch that working tree"), "{err}");
    assert_eq!(repo.snapshot(), before);
    // Reading is fine.
    repo.ok(&["status"]);
    repo.git(&["worktree", "remove", "--force", wt.to_str().unwrap()]);
}

#[test]
fn a_broken_pipelines_file_names_file_and_line() {
    let repo = TestRepo::new();
    repo.wide_pipeline(2);
    let path = repo.path().join(".tlv4/specs/pipelines.toml");
    let text = std::fs::read_to_string(&path).unwrap().replace(
        "{ id = \"IMPL-002\" }",
        "{ id = \"IMPL-002\", blocked_by = [\"IMPL-009\"] }",
    );
    std::fs::write(&path, text).unwrap();
    repo.ok(&["trust"]);
    let err = repo.fails(&["start", "--pipeline", "wide", "x"], 1);
    assert!(
        err.contains("pipelines.toml:") && err.contains("IMPL-009"),
        "{err}"
    );
    std::fs::write(&path, "schema = 1\n[role.x]\nprefix = \"X\"\ninner_loop = false\nsummary = \"x\"\ncolour = \"red\"\n").unwrap();
    repo.ok(&["trust"]);
    let err = repo.fails(&["start", "--pipeline", "wide", "x"], 1);
    assert!(
        err.contains("pipelines.toml:6") && err.contains("colour"),
        "{err}"
    );
    assert_eq!(repo.git(&["for-each-ref", "refs/heads/tlv4/"]), "");
}

#[test]
fn a_malformed_config_names_file_line_and_key() {
    let repo = TestRepo::new();
    repo.write(
        ".tlv4.toml",
        "[session]\npipeline = \"spec-only\"\nparallel = 4\n",
    );
    let err = repo.fails(&["start", "x"], 1);
    assert!(
        err.contains(".tlv4.toml:3:") && err.contains("parallel"),
        "{err}"
    );
    assert_eq!(repo.git(&["for-each-ref", "refs/heads/tlv4/"]), "");
}

#[test]
fn a_bad_agent_configuration_is_named_before_anything_is_written() {
    let repo = TestRepo::new();
    let cases = [
        (
            "[agents.x]\ndriver = \"command\"\nprogramm = \"a\"\n",
            ".tlv4.toml:3:",
            "programm",
        ),
        (
            "[agents.x]\ndriver = \"telepathy\"\n[roles]\nwriter = \"x\"\n",
            "unknown driver `telepathy`",
            "claude",
        ),
        (
            "[agents.x]\ndriver = \"command\"\n[roles]\nwriter = \"x\"\n",
            "the `command` driver needs `program`",
            "[agents.x]",
        ),
        (
            "[agents.x]\ndriver = \"command\"\nprogram = \"p\"\ntimeout = \"soon\"\n[roles]\nwriter = \"x\"\n",
            "invalid duration `soon`",
            "agent `x`",
        ),
        (
            "[roles]\nwriter = \"ghost\"\n",
            "agent `ghost` is neither defined",
            "[agents.ghost]",
        ),
        (
            "[roles]\ntester = \"builtin\"\n",
            "`tester` is not a role an agent plays",
            "roles:",
        ),
    ];
    let before = repo.snapshot();
    for (config, first, second) in cases {
        repo.write(".tlv4.toml", config);
        let err = repo.fails(&["start", "--yes", "x"], 1);
        assert!(
            err.contains(first) && err.contains(second),
            "{config}\n{err}"
        );
    }
    // Only the config file changed; no session was created.
    repo.git(&["rm", "-q", "--cached", "--ignore-unmatch", ".tlv4.toml"]);
    std::fs::remove_file(repo.path().join(".tlv4.toml")).unwrap();
    assert_eq!(repo.snapshot(), before);
    // An agent whose program is missing is found before the session exists.
    repo.write(
        ".tlv4.toml",
        "[agents.x]\ndriver = \"command\"\nprogram = \"no-such-agent-program\"\n[roles]\nanalyst = \"x\"\n",
    );
    repo.ok(&["trust"]);
    let err = repo.fails(
        &[
            "start",
            "--pipeline",
            "spec-only",
            "--completion",
            "keep",
            "y",
        ],
        1,
    );
    assert!(
        err.contains("agent `x`") && err.contains("no-such-agent-program"),
        "{err}"
    );
    assert_eq!(repo.git(&["for-each-ref", "refs/heads/tlv4/"]), "");
    repo.fsck();
}

#[test]
fn a_misspelt_completion_action_is_refused_before_anything_runs() {
    let repo = TestRepo::new();
    let before = repo.snapshot();
    let err = repo.fails(&["start", "--completion", "keeep", "write a spec"], 2);
    assert!(
        err.contains("invalid value 'keeep' for '--completion <ACTION>'")
            && err.contains("[possible values: interactive, archive, keep, export]"),
        "{err}"
    );
    // A discussion ends without asking, so it has no `interactive`.
    let err = repo.fails(&["discuss", "--completion", "interactive", "a topic"], 2);
    assert!(
        err.contains("[possible values: keep, archive, export]"),
        "{err}"
    );
    assert_eq!(repo.snapshot(), before);

    // `resume` checks it before it runs the pipeline, not when every task is done.
    repo.start("spec-only", "write a spec");
    let before = repo.snapshot();
    let err = repo.fails(&["resume", "--completion", "archve"], 2);
    assert!(err.contains("invalid value 'archve'"), "{err}");
    assert_eq!(repo.snapshot(), before);
}
