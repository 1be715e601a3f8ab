//! What a code task's snapshot takes and keeps, against real repositories: generated trees
//! left out, refused snapshots kept under `refs/tlv4/runs/…`, sparse checkouts, and the
//! user's own git hooks, which the tool's plumbing never runs.

use std::path::Path;

use crate::common::TestRepo;

fn agent() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/agents/snapshot-agent")
        .display()
        .to_string()
}

/// A repository whose executor is the snapshot agent in `mode`, with `snapshot` as the
/// `[snapshot]` table, a one-task pipeline `wide` (committed) and the file trusted.
fn repo_with(mode: &str, snapshot: &str) -> TestRepo {
    let repo = TestRepo::new();
    repo.wide_pipeline(1);
    repo.write(
        ".tlv4.toml",
        &format!(
            "[snapshot]\n{snapshot}\n[agents.snap]\ndriver = \"command\"\nprogram = \"{}\"\ntimeout = \"20s\"\nenv = {{ SNAPSHOT_MODE = \"{mode}\" }}\n[roles]\nexecutor = \"snap\"\n",
            agent()
        ),
    );
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "tlv4 config"]);
    repo.ok(&["trust"]);
    repo
}

fn run(repo: &TestRepo) -> String {
    repo.runs(&[
        "start",
        "--pipeline",
        "wide",
        "--yes",
        "--completion",
        "keep",
        "one code task",
    ])
    .lines()
    .next()
    .unwrap()
    .trim()
    .to_owned()
}

fn tip_files(repo: &TestRepo, sid: &str) -> Vec<String> {
    repo.git(&["ls-tree", "-r", "--name-only", &format!("tlv4/{sid}")])
        .lines()
        .filter(|l| !l.starts_with(".tlv4/"))
        .map(str::to_owned)
        .collect()
}

fn result_json(repo: &TestRepo, sid: &str, task: &str) -> serde_json::Value {
    let path = format!("tlv4/{sid}:.tlv4/sessions/{sid}/runs/{task}/1/result.json");
    serde_json::from_str(&repo.git(&["show", &path])).unwrap()
}

/// Only the user's own checkout is in use (kept checkouts are idle in the pool), nothing else locked.
fn no_checkout_left(repo: &TestRepo) {
    let list = repo.worktrees_in_use();
    assert_eq!(list.matches("worktree ").count(), 1, "{list}");
    assert!(!list.contains("locked"), "{list}");
}

#[test]
fn an_agent_that_runs_npm_install_has_its_source_merged_and_node_modules_left_out() {
    // More files under node_modules/ than a snapshot takes: without leaving generated trees
    // out, the snapshot is refused.
    let repo = repo_with("npm", "max_files = 100");
    let sid = run(&repo);
    let task = repo.task(&sid, "IMPL-001");
    assert_eq!(task["status"], "completed", "{task}");
    let files = tip_files(&repo, &sid);
    assert!(files.contains(&"src/app.js".to_owned()), "{files:?}");
    assert!(
        !files.iter().any(|f| f.starts_with("node_modules/")),
        "{files:?}"
    );
    let summary = task["result"]["summary"].as_str().unwrap();
    assert!(
        summary.contains("left out of the snapshot as generated: node_modules/ (300 files)"),
        "{summary}"
    );
    let record = result_json(&repo, &sid, "IMPL-001");
    assert_eq!(
        record["snapshot"]["left_out"],
        serde_json::json!(["node_modules/ (300 files)"])
    );
    assert_eq!(
        record["snapshot"]["changed"],
        serde_json::json!(["src/app.js"])
    );
    no_checkout_left(&repo);
    repo.fsck();
}

#[test]
fn a_refused_snapshot_keeps_the_allowed_files_under_the_run_ref_and_lists_the_refused() {
    let repo = repo_with("refused", "max_file_size = \"1KiB\"");
    let sid = run(&repo);
    let task = repo.task(&sid, "IMPL-001");
    assert_eq!(task["status"], "failed", "{task}");
    let kept = format!("refs/tlv4/runs/{sid}/IMPL-001/1");
    let reason = task["result"]["reason"].as_str().unwrap();
    for expected in [
        "`leak` is a symlink to the absolute path `/etc/passwd`",
        "`big.bin` is 4096 bytes, more than the limit of 1024 bytes per file",
        &format!("kept, not merged, at {kept}"),
        &format!("git show --stat {kept}"),
    ] {
        assert!(
            reason.contains(expected),
            "missing {expected:?} in {reason}"
        );
    }
    // The allowed file is kept, on the session tip the task started from; nothing refused is.
    let in_kept = repo.git(&["ls-tree", "-r", "--name-only", &kept]);
    assert!(in_kept.lines().any(|l| l == "src/ok.txt"), "{in_kept}");
    assert!(
        !in_kept.lines().any(|l| l == "leak" || l == "big.bin"),
        "{in_kept}"
    );
    assert_eq!(
        repo.git(&["show", &format!("{kept}:src/ok.txt")]),
        "IMPL-001 was here\n"
    );
    assert!(!tip_files(&repo, &sid).contains(&"src/ok.txt".to_owned()));
    let record = result_json(&repo, &sid, "IMPL-001");
    assert_eq!(record["snapshot"]["kept"], kept.as_str());
    assert_eq!(
        record["snapshot"]["commit"].as_str().unwrap(),
        repo.git(&["rev-parse", &kept]).trim()
    );
    let refused = record["snapshot"]["refused"].to_string();
    assert!(
        refused.contains("leak") && refused.contains("big.bin"),
        "{refused}"
    );
    no_checkout_left(&repo);
    repo.fsck();
}

#[test]
fn a_failed_run_whose_snapshot_is_refused_says_both_and_keeps_the_allowed_files() {
    let repo = repo_with("refused_then_fail", "max_file_size = \"1KiB\"");
    let sid = run(&repo);
    let task = repo.task(&sid, "IMPL-001");
    assert_eq!(task["status"], "failed", "{task}");
    let reason = task["result"]["reason"].as_str().unwrap();
    let kept = format!("refs/tlv4/runs/{sid}/IMPL-001/1");
    for expected in [
        "snapshot-agent: gave up",
        "`leak` is a symlink",
        &format!("git show --stat {kept}"),
    ] {
        assert!(
            reason.contains(expected),
            "missing {expected:?} in {reason}"
        );
    }
    assert_eq!(
        repo.git(&["show", &format!("{kept}:src/ok.txt")]),
        "IMPL-001 was here\n"
    );
    no_checkout_left(&repo);
    repo.fsck();
}

/// A repository with files inside and outside `app/`, and `git sparse-checkout` on `app/`.
fn sparse(cone: bool) -> TestRepo {
    let repo = repo_with("outside", "");
    repo.write("app/main.txt", "in the cone\n");
    repo.write("lib/existing.txt", "outside the cone\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "two directories"]);
    // The pipeline override under `.tlv4/` is read from the working tree: keep it there.
    if cone {
        repo.git(&["sparse-checkout", "set", "app", ".tlv4"]);
    } else {
        repo.git(&[
            "sparse-checkout",
            "set",
            "--no-cone",
            "/*",
            "!/*/",
            "/app/",
            "/.tlv4/",
        ]);
    }
    assert!(!repo.path().join("lib/existing.txt").exists());
    repo
}

#[test]
fn code_tasks_in_a_sparse_checkout_see_every_file_and_their_changes_outside_it_merge() {
    for cone in [true, false] {
        let repo = sparse(cone);
        let sid = run(&repo);
        let task = repo.task(&sid, "IMPL-001");
        assert_eq!(task["status"], "completed", "cone {cone}: {task}");
        let tip = format!("tlv4/{sid}");
        assert_eq!(
            repo.git(&["show", &format!("{tip}:lib/existing.txt")]),
            "changed by IMPL-001\n"
        );
        assert_eq!(
            repo.git(&["show", &format!("{tip}:lib/extra.txt")]),
            "added by IMPL-001\n"
        );
        // The user's checkout is as sparse as it was.
        assert!(!repo.path().join("lib/existing.txt").exists());
        assert!(repo.path().join("app/main.txt").exists());
        no_checkout_left(&repo);
        repo.fsck();
    }
}

#[test]
fn the_users_failing_git_hooks_never_run_in_the_tools_plumbing() {
    let repo = repo_with("ok", "");
    let hooks = tempfile::tempdir().unwrap();
    let log = hooks.path().join("ran.log");
    for name in [
        "post-checkout",
        "reference-transaction",
        "pre-commit",
        "post-commit",
        "post-index-change",
        "pre-auto-gc",
    ] {
        let hook = hooks.path().join(name);
        std::fs::write(
            &hook,
            format!("#!/bin/sh\necho {name} >> '{}'\nexit 1\n", log.display()),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    repo.git(&["config", "core.hooksPath", hooks.path().to_str().unwrap()]);
    let sid = run(&repo);
    let task = repo.task(&sid, "IMPL-001");
    assert_eq!(task["status"], "completed", "{task}");
    assert!(tip_files(&repo, &sid).contains(&"agent-IMPL-001.txt".to_owned()));
    let ran = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(ran, "", "the user's hooks ran");
    no_checkout_left(&repo);
    repo.fsck();
}
