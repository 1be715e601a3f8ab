//! Addressing sessions as people do, hints that can be pasted, starting twice, `delete`,
//! `gc`, `list --all` and the outcome in `status`.

use crate::common::{TestRepo, WAITING};

/// The `next:` lines a command printed on stderr.
fn next_lines(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .skip_while(|l| *l != "next:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(|l| l.trim().to_owned())
        .collect()
}

/// A hint line as a person pastes it: the words after `git tlv4`, the comment in
/// parentheses left out and the placeholders filled in.
fn pasted(line: &str) -> Vec<String> {
    let command = line.split("   (").next().unwrap().trim();
    let words = command
        .strip_prefix("git tlv4 ")
        .unwrap_or_else(|| panic!("not a command: {line}"));
    words
        .split_whitespace()
        .map(|w| match w {
            "TEXT" => "cover the problem".to_owned(),
            other => other.to_owned(),
        })
        .collect()
}

/// Two sessions paused on a discussion; returns them and the second start's stderr.
fn two_paused(repo: &TestRepo) -> (String, String, String) {
    let a = repo.stops(
        &["start", "--pipeline", "spec-only", "Add search to notes"],
        WAITING,
    );
    let out = repo.tlv4(&["start", "--pipeline", "spec-only", "Add tags to notes"]);
    assert_eq!(out.status.code(), Some(WAITING));
    let b = String::from_utf8(out.stdout).unwrap();
    (
        a.trim().to_owned(),
        b.trim().to_owned(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn every_next_line_with_two_sessions_can_be_pasted() {
    let probe = TestRepo::new();
    let (_, b, stderr) = two_paused(&probe);
    let hints = next_lines(&stderr);
    assert!(hints.len() >= 2, "no next: lines in\n{stderr}");
    for (i, hint) in hints.iter().enumerate() {
        assert!(hint.contains(&format!("--session {b}")), "{hint}");
        // Each hint, pasted in a repository of its own in the same state, runs and acts
        // on the second session only.
        let repo = TestRepo::new();
        let (a, b2, _) = two_paused(&repo);
        assert_eq!(b2, b);
        let before_a = repo.git(&["rev-parse", &format!("tlv4/{a}")]);
        let before_b = repo.git(&["rev-parse", &format!("tlv4/{b}")]);
        let words = pasted(&hints[i]);
        let args: Vec<&str> = words.iter().map(String::as_str).collect();
        repo.runs(&args);
        assert_eq!(repo.git(&["rev-parse", &format!("tlv4/{a}")]), before_a);
        assert_ne!(repo.git(&["rev-parse", &format!("tlv4/{b}")]), before_b);
        repo.fsck();
    }
    // A hint of an error names the session as well.
    let err = probe.fails(&["--session", &b, "task", "claim", "NOPE-001"], 1);
    for line in err.lines().filter(|l| l.contains("git tlv4 status")) {
        assert!(line.contains("--session"), "{line}");
    }
}

#[test]
fn sessions_answer_to_prefixes_branches_checkouts_and_at() {
    let repo = TestRepo::new();
    let a = repo.start("spec-only", "Add search to notes");
    let mut later = repo.tlv4_cmd(&["start", "--no-run", "--pipeline", "spec-only", "Add tags"]);
    later.env("GIT_COMMITTER_DATE", "2026-11-29T13:00:00Z");
    let out = later.output().unwrap();
    assert!(out.status.success());
    let b = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    let id_of = |args: &[&str]| -> String {
        let mut all = vec!["status", "--json"];
        all.splice(0..0, args.iter().copied());
        repo.json(&all)["session"]["id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    // A unique prefix, with or without `TLV4-`, in any case.
    assert_eq!(id_of(&["--session", "add-s"]), a);
    assert_eq!(id_of(&["--session", "TLV4-ADD-T"]), b);
    // Branch names: the session's and a task branch of it.
    assert_eq!(id_of(&["--session", &format!("tlv4/{a}")]), a);
    assert_eq!(id_of(&["--session", &format!("refs/heads/tlv4/{b}")]), b);
    assert_eq!(id_of(&["--session", &format!("tlv4/{a}.RESEARCH-001")]), a);
    // `@`: the session updated last.
    assert_eq!(id_of(&["--session", "@"]), b);
    // An ambiguous prefix names the candidates and changes nothing.
    let before = repo.snapshot();
    let err = repo.fails(&["--session", "add", "status"], 1);
    assert!(
        err.contains("`add` is the beginning of 2 sessions"),
        "{err}"
    );
    assert!(err.contains(&a) && err.contains(&b), "{err}");
    let err = repo.fails(&["--session", "nothing-like-it", "status"], 1);
    assert!(err.contains("no session `nothing-like-it`"), "{err}");
    assert_eq!(repo.snapshot(), before);
    // In a checkout of a task branch of `a`, commands act on `a` without `--session`.
    repo.git(&[
        "branch",
        &format!("tlv4/{a}.IMPL-009"),
        &format!("tlv4/{a}"),
    ]);
    let wt = repo.home.path().join("wt-task");
    repo.git(&[
        "worktree",
        "add",
        "-q",
        wt.to_str().unwrap(),
        &format!("tlv4/{a}.IMPL-009"),
    ]);
    let status: serde_json::Value = serde_json::from_slice(
        &repo
            .tlv4_cmd_in(&wt, &["status", "--json"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    assert_eq!(status["session"]["id"], a.as_str());
    repo.git(&["worktree", "remove", "--force", wt.to_str().unwrap()]);
}

#[test]
fn starting_the_same_text_twice_offers_resume_or_new() {
    let repo = TestRepo::new();
    let a = repo.start("spec-only", "Add search to notes");
    let before = repo.snapshot();
    let err = repo.fails(
        &[
            "start",
            "--no-run",
            "--pipeline",
            "spec-only",
            "Add search to notes",
        ],
        1,
    );
    assert!(
        err.contains(&format!("session {a} (active) already works on this text")),
        "{err}"
    );
    assert!(
        err.contains(&format!("git tlv4 resume --session {a}")),
        "{err}"
    );
    assert!(
        err.contains("git tlv4 start --new \"Add search to notes\""),
        "{err}"
    );
    assert_eq!(repo.snapshot(), before, "nothing was started");
    // Other words are another session, even with the same id stem; `--new` starts one with
    // the same words.
    let other = repo.start("spec-only", "Add search to notes please");
    assert_eq!(other, format!("{a}-2"));
    let b = repo
        .ok(&[
            "start",
            "--no-run",
            "--new",
            "--pipeline",
            "spec-only",
            "Add search to notes",
        ])
        .trim()
        .to_owned();
    assert_eq!(b, format!("{a}-3"));
    // Once the first is aborted, the text is free again.
    repo.ok(&["--session", &a, "abort"]);
    repo.ok(&["--session", &b, "abort"]);
    repo.start("spec-only", "Add search to notes");
    repo.fsck();
}

#[test]
fn list_follows_the_tips_through_its_cache_and_all_shows_archived() {
    let repo = TestRepo::new();
    let a = repo.start("spec-only", "first thing");
    let b = repo.start("spec-only", "second thing");
    let status_of = |args: &[&str], sid: &str| -> Option<serde_json::Value> {
        repo.rows(args, "sessions")
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == sid)
            .cloned()
    };
    assert_eq!(
        status_of(&["list", "--json"], &a).unwrap()["status"],
        "active"
    );
    let cache = repo.path().join(".git/tlv4/list-cache.json");
    assert!(cache.exists(), "list keeps its rows");
    // A new event moves the tip: the row is read again.
    repo.ok(&["--session", &a, "abort"]);
    assert_eq!(
        status_of(&["list", "--json"], &a).unwrap()["status"],
        "aborted"
    );
    // A cache that is garbage, or that lies about a tip, is not believed blindly: garbage is
    // dropped, and a row is only taken for the session it was read from.
    std::fs::write(&cache, b"{not json").unwrap();
    assert_eq!(
        status_of(&["list", "--json"], &b).unwrap()["status"],
        "active"
    );
    // Archived sessions: only with --all, marked.
    repo.ok(&["--session", &b, "abort"]);
    repo.git(&[
        "update-ref",
        &format!("refs/tlv4/archive/{b}"),
        &format!("refs/heads/tlv4/{b}"),
    ]);
    repo.git(&["update-ref", "-d", &format!("refs/heads/tlv4/{b}")]);
    assert!(status_of(&["list", "--json"], &b).is_none());
    let row = status_of(&["list", "--all", "--json"], &b).unwrap();
    assert_eq!(row["archived"], true);
    let table = repo.ok(&["list", "--all"]);
    assert!(table.contains("aborted, archived"), "{table}");
    // ...and it answers to --session for reading, not for writing.
    assert_eq!(
        repo.json(&["--session", &b, "status", "--json"])["session"]["id"],
        b.as_str()
    );
    let err = repo.fails(&["--session", &b, "feedback", "more"], 1);
    assert!(err.contains("archived and read-only"), "{err}");
    repo.fsck();
}

#[test]
fn status_of_a_completed_session_says_its_outcome_and_how_to_land_it() {
    let repo = TestRepo::new();
    // No test framework: the tester completes with `no_tests`, which is no pass.
    let out = repo.tlv4(&[
        "start",
        "--yes",
        "--completion",
        "keep",
        "--pipeline",
        "full-lifecycle",
        "Add a search command",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let sid = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    // The builtin executor writes no code: completed, but the review says so.
    assert!(stderr.contains("but not everything passed"), "{stderr}");
    let json = repo.json(&["status", "--json"]);
    let outcome = &json["outcome"];
    assert_eq!(outcome["state"], "attention", "{outcome}");
    let kinds: Vec<&str> = outcome["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["gate", "review", "tests"]);
    let review = &outcome["verdicts"][1];
    assert_eq!(review["verdict"], "CONDITIONAL");
    assert!(
        outcome["concerns"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c.as_str().unwrap().starts_with("review REVIEW-")),
        "{outcome}"
    );
    assert_eq!(
        outcome["changed"]["files"], 0,
        "the pipeline folder is not code"
    );
    assert_eq!(
        outcome["land"],
        serde_json::json!([
            format!("git tlv4 export --session {sid}"),
            format!("git merge tlv4-export/{sid}")
        ])
    );
    let text = repo.ok(&["status"]);
    assert!(text.contains("outcome   needs attention"), "{text}");
    assert!(text.contains("review REVIEW-001: CONDITIONAL"), "{text}");
    assert!(
        text.contains("! tests TEST-001: no test framework"),
        "{text}"
    );
    // Code committed on the session branch counts; `.tlv4/` never does.
    let wt = repo.home.path().join("wt-session");
    repo.git(&[
        "worktree",
        "add",
        "-q",
        wt.to_str().unwrap(),
        &format!("tlv4/{sid}"),
    ]);
    std::fs::write(wt.join("src/search.rs"), "pub fn search() {}\n").unwrap();
    std::fs::write(wt.join(".tlv4/notes.md"), "not code\n").unwrap();
    for args in [&["add", "-A"][..], &["commit", "-q", "-m", "search"]] {
        let out = crate::common::hermetic("git", &wt, repo.home.path())
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    repo.git(&["worktree", "remove", wt.to_str().unwrap()]);
    let outcome = repo.json(&["status", "--json"])["outcome"].clone();
    assert_eq!(outcome["changed"]["files"], 1, "{outcome}");
    assert_eq!(outcome["changed"]["stat"][0], "src/search.rs +1 -0");
    // Pasting the commands lands it.
    let branch = repo.ok(&["--session", &sid, "export"]).trim().to_owned();
    assert_eq!(branch, format!("tlv4-export/{sid}"));
    assert_eq!(
        repo.json(&["status", "--json"])["outcome"]["land"],
        serde_json::json!([format!("git merge tlv4-export/{sid}")])
    );
    repo.git(&["merge", "-q", "--no-edit", &branch]);
    let outcome = repo.json(&["status", "--json"])["outcome"].clone();
    assert_eq!(outcome["landed"], true, "{outcome}");
    assert!(repo.path().join("src/search.rs").exists());
    repo.fsck();
}

fn host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_owned()
}

/// A commit on top of `rev` that changes `path`, made with plumbing; returns its id.
fn commit_on(repo: &TestRepo, rev: &str, path: &str, text: &str) -> String {
    let blob = {
        let mut c = repo.git_cmd(&["hash-object", "-w", "--stdin"]);
        c.stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped());
        let mut child = c.spawn().unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        String::from_utf8(child.wait_with_output().unwrap().stdout)
            .unwrap()
            .trim()
            .to_owned()
    };
    let index = repo.home.path().join("tmp-index");
    let with_index = |args: &[&str]| {
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
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    };
    with_index(&["read-tree", rev]);
    with_index(&[
        "update-index",
        "--add",
        "--cacheinfo",
        &format!("100644,{blob},{path}"),
    ]);
    let tree = with_index(&["write-tree"]);
    let _ = std::fs::remove_file(&index);
    repo.git(&[
        "commit-tree",
        &tree,
        "-p",
        rev,
        "-m",
        &format!("change {path}"),
    ])
    .trim()
    .to_owned()
}

#[test]
fn gc_removes_merged_task_branches_and_dead_checkouts_keeps_unmerged_work() {
    let repo = TestRepo::new();
    let a = repo.start("spec-only", "Add search to notes");
    let tip = repo
        .git(&["rev-parse", &format!("tlv4/{a}")])
        .trim()
        .to_owned();
    let branch = |task: &str| format!("tlv4/{a}.{task}");
    // Merged (at the tip), unmerged (a commit of its own), a dead run's checkout, and a
    // checkout of someone's own.
    repo.git(&["branch", &branch("RESEARCH-001"), &tip]);
    let side = commit_on(&repo, &tip, "src/side.rs", "fn side() {}\n");
    repo.git(&["branch", &branch("DRAFT-001"), &side]);
    repo.git(&["branch", &branch("DRAFT-002"), &tip]);
    repo.git(&["branch", &branch("DRAFT-003"), &tip]);
    let dead = repo.home.path().join("dead-run");
    repo.git(&[
        "worktree",
        "add",
        "-q",
        dead.to_str().unwrap(),
        &branch("DRAFT-002"),
    ]);
    let reason = format!(
        "git-tlv4 pid {} on {} ({a} DRAFT-002)",
        crate::common::dead_pid(),
        host()
    );
    repo.git(&[
        "worktree",
        "lock",
        "--reason",
        &reason,
        dead.to_str().unwrap(),
    ]);
    let mine = repo.home.path().join("my-checkout");
    repo.git(&[
        "worktree",
        "add",
        "-q",
        mine.to_str().unwrap(),
        &branch("DRAFT-003"),
    ]);

    let before = repo.snapshot();
    let err = String::from_utf8(repo.tlv4(&["gc", "--dry-run"]).stderr).unwrap();
    assert!(
        err.contains(&format!("would remove {} (merged)", branch("RESEARCH-001"))),
        "{err}"
    );
    assert!(err.contains("dead-run"), "{err}");
    assert_eq!(repo.snapshot(), before, "--dry-run changes nothing");
    assert!(dead.exists());

    let err = String::from_utf8(repo.tlv4(&["gc"]).stderr).unwrap();
    let branches = repo.git(&[
        "for-each-ref",
        "--format=%(refname:short)",
        "refs/heads/tlv4/",
    ]);
    assert!(
        !branches.contains(&branch("RESEARCH-001")),
        "{branches}\n{err}"
    );
    assert!(
        !branches.contains(&branch("DRAFT-002")),
        "{branches}\n{err}"
    );
    assert!(
        branches.contains(&branch("DRAFT-001")),
        "unmerged work stays: {err}"
    );
    assert!(
        branches.contains(&branch("DRAFT-003")),
        "a checked-out branch stays: {err}"
    );
    assert!(
        err.contains("kept") && err.contains("never merged"),
        "{err}"
    );
    let list = repo.git(&["worktree", "list", "--porcelain"]);
    assert!(!list.contains("dead-run"), "{list}");
    assert!(!dead.exists());
    assert!(list.contains("my-checkout"), "{list}");
    assert!(!list.contains("prunable"), "{list}");
    repo.git(&["worktree", "remove", mine.to_str().unwrap()]);
    repo.fsck();
}

#[test]
fn kept_checkouts_leave_the_git_directory_and_gc_drops_the_pools_of_repositories_gone() {
    let repo = TestRepo::new();
    // A pool slot as an earlier version kept it, inside the git directory, idle.
    let legacy = repo.path().join(".git/tlv4/checkouts");
    let slot = legacy.join("test-1/sample");
    std::fs::create_dir_all(slot.parent().unwrap()).unwrap();
    std::fs::write(legacy.join("pool.lock"), "").unwrap();
    repo.git(&["worktree", "add", "-q", "--detach", slot.to_str().unwrap()]);
    repo.git(&[
        "worktree",
        "lock",
        "--reason",
        "git-tlv4 pool: idle",
        slot.to_str().unwrap(),
    ]);
    // Under a folder of pools named for every repository: the pools of a repository that is
    // gone, and of one that is still there.
    let home = repo.home.path().join("pools");
    let orphan = home.join("gone-0123456789");
    std::fs::create_dir_all(orphan.join("test-1/gone")).unwrap();
    std::fs::write(orphan.join("repo"), "/nonexistent/gone/.git").unwrap();
    let other = tempfile::tempdir().unwrap();
    let alive = home.join("alive-0123456789");
    std::fs::create_dir_all(alive.join("test-1")).unwrap();
    std::fs::write(alive.join("repo"), other.path().to_str().unwrap()).unwrap();

    let out = repo
        .tlv4_cmd(&["gc"])
        .env("GIT_TLV4_CHECKOUTS", &home)
        .output()
        .unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    let list = repo.git(&["worktree", "list", "--porcelain"]);
    assert!(!list.contains("tlv4/checkouts"), "{list}\n{err}");
    assert!(!legacy.exists(), "{err}");
    assert!(!orphan.exists(), "{err}");
    assert!(
        err.contains("the kept checkouts of a repository that is gone"),
        "{err}"
    );
    assert!(
        alive.exists(),
        "a pool of a repository that is there stays: {err}"
    );
    repo.fsck();
}

#[test]
fn delete_refuses_unique_work_archives_on_request_and_deletes_what_is_elsewhere() {
    let repo = TestRepo::new();
    let a = repo.start("spec-only", "Add search to notes");
    let b = repo.start("spec-only", "Add tags to notes");
    let c = repo.start("spec-only", "Add sync to notes");
    // `a` has a task branch with work it never merged.
    let tip = repo
        .git(&["rev-parse", &format!("tlv4/{a}")])
        .trim()
        .to_owned();
    let side = commit_on(&repo, &tip, "src/side.rs", "fn side() {}\n");
    repo.git(&["branch", &format!("tlv4/{a}.DRAFT-001"), &side]);
    let before = repo.snapshot();
    let err = repo.fails(&["--session", &a, "delete"], 1);
    assert!(err.contains("holds work that exists nowhere else"), "{err}");
    assert!(
        err.contains(&format!("tlv4/{a}.DRAFT-001 holds 1 commit(s)")),
        "{err}"
    );
    assert!(
        err.contains(&format!("git tlv4 delete --archive --session {a}")),
        "{err}"
    );
    repo.ok(&["--session", &a, "delete", "--archive", "--dry-run"]);
    assert_eq!(
        repo.snapshot(),
        before,
        "refused and dry runs change nothing"
    );
    // Archived: every branch gone, every commit still reachable.
    repo.ok(&["--session", &a, "delete", "--archive"]);
    let refs = repo.git(&["for-each-ref", "--format=%(refname) %(objectname)"]);
    assert!(!refs.contains(&format!("refs/heads/tlv4/{a}")), "{refs}");
    assert!(refs.contains(&format!("refs/tlv4/archive/{a}")), "{refs}");
    assert!(
        refs.contains(&format!("refs/tlv4/runs/{a}/DRAFT-001/")),
        "{refs}"
    );
    assert!(refs.contains(&side), "{refs}");
    let all = repo.rows(&["list", "--all", "--json"], "sessions");
    assert!(
        all.as_array()
            .unwrap()
            .iter()
            .any(|r| r["id"] == a.as_str() && r["archived"] == true)
    );
    // The archive still holds the only copy: deleting it is refused too.
    let err = repo.fails(&["--session", &a, "delete"], 1);
    assert!(err.contains("holds work that exists nowhere else"), "{err}");

    // `b` holds nothing of its own (the builtin agent wrote no code): it goes, whole.
    repo.ok(&["--session", &b, "delete"]);
    let refs = repo.git(&["for-each-ref", "--format=%(refname)"]);
    assert!(!refs.contains(&b), "{refs}");

    // `c` changed the code: refused until that code is elsewhere (merged into main).
    let ctip = repo
        .git(&["rev-parse", &format!("tlv4/{c}")])
        .trim()
        .to_owned();
    let code = commit_on(&repo, &ctip, "src/sync.rs", "pub fn sync() {}\n");
    repo.git(&["update-ref", &format!("refs/heads/tlv4/{c}"), &code, &ctip]);
    let err = repo.fails(&["--session", &c, "delete"], 1);
    assert!(err.contains("its code differs from the base"), "{err}");
    repo.git(&["merge", "-q", "--no-edit", &format!("tlv4/{c}")]);
    repo.ok(&["--session", &c, "delete"]);
    let refs = repo.git(&["for-each-ref", "--format=%(refname)"]);
    assert!(!refs.contains(&c), "{refs}");
    assert!(repo.path().join("src/sync.rs").exists());
    repo.fsck();
}

/// The size of the repository's objects once git's own gc has pruned everything unreachable.
fn packed_bytes(repo: &TestRepo) -> u64 {
    repo.git(&["gc", "-q", "--prune=now"]);
    let counts = repo.git(&["count-objects", "-v"]);
    counts
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(": ")?;
            matches!(k, "size" | "size-pack").then(|| v.trim().parse::<u64>().unwrap() * 1024)
        })
        .sum()
}

#[test]
fn gc_compacts_old_archives_without_losing_an_event_or_a_result() {
    let repo = TestRepo::new();
    // Every ref keeps a reflog, the archive's too: those entries must not keep the old
    // commits alive.
    repo.git(&["config", "core.logAllRefUpdates", "always"]);
    repo.wide_pipeline(3);
    repo.write(
        ".tlv4.toml",
        &format!(
            "[agents.scripted]\ndriver = \"command\"\nprogram = \"{}\"\ntimeout = \"10s\"\n[roles]\nexecutor = \"scripted\"\n",
            crate::common::fixture("scripted-agent"),
        ),
    );
    repo.ok(&["trust"]);
    let sid = repo
        .runs(&[
            "start",
            "--pipeline",
            "wide",
            "--yes",
            "--completion",
            "archive",
            "Three code tasks",
        ])
        .lines()
        .next()
        .unwrap()
        .trim()
        .to_owned();
    let archive = format!("refs/tlv4/archive/{sid}");
    let runs = format!(".tlv4/sessions/{sid}/runs");
    let records = |rev: &str| -> Vec<String> {
        repo.git(&["ls-tree", "-r", "--name-only", rev, "--", &runs])
            .lines()
            .map(|l| l.rsplit('/').next().unwrap().to_owned())
            .collect()
    };
    let before_records = records(&archive);
    assert!(
        before_records.iter().any(|n| n == "prompt.md"),
        "{before_records:?}"
    );
    let events_before = repo.rows(&["--session", &sid, "log", "--json"], "events");
    let status_before = repo.json(&["--session", &sid, "status", "--json"]);
    let cost_before = repo.json(&["--session", &sid, "cost", "--json"]);
    let tip_before = repo.git(&["rev-parse", &archive]).trim().to_owned();
    // Unmerged work kept from a run grows out of the history, and a review is noted on one
    // of its commits: both follow the commits written again.
    let reviewed = repo
        .git(&["rev-parse", &format!("{tip_before}~1")])
        .trim()
        .to_owned();
    let kept = format!("refs/tlv4/runs/{sid}/IMPL-001/1");
    let kept_commit = repo
        .git(&[
            "commit-tree",
            &format!("{tip_before}~2^{{tree}}"),
            "-p",
            &format!("{tip_before}~2"),
            "-m",
            "IMPL-001: unrecorded work (executor)",
        ])
        .trim()
        .to_owned();
    repo.git(&["update-ref", &kept, &kept_commit]);
    let note =
        format!(r#"{{"old":"{reviewed}","new":"{reviewed}","verdict":"PASS","findings":[]}}"#);
    repo.git(&["notes", "--ref=tlv4-review", "add", "-m", &note, &reviewed]);
    let messages_before = repo.rows(&["--session", &sid, "msg", "list", "--json"], "messages");
    let size_before = packed_bytes(&repo);

    // Young archives are left alone; a ref that holds the tip keeps it whole.
    let err = String::from_utf8(repo.tlv4(&["gc"]).stderr).unwrap();
    assert!(!err.contains("compact"), "{err}");
    repo.git(&["branch", "keep-it", &archive]);
    let err = String::from_utf8(repo.tlv4(&["gc", "--compact-after", "0"]).stderr).unwrap();
    assert!(
        err.contains("refs/heads/keep-it holds its history"),
        "{err}"
    );
    assert_eq!(repo.git(&["rev-parse", &archive]).trim(), tip_before);
    repo.git(&["branch", "-D", "keep-it"]);

    let other_refs = || {
        repo.git(&["for-each-ref", "--format=%(refname) %(objectname)"])
            .lines()
            .filter(|l| {
                !l.starts_with(&archive) && !l.starts_with(&kept) && !l.starts_with("refs/notes/")
            })
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let refs_before = other_refs();
    let err = String::from_utf8(
        repo.tlv4(&["gc", "--compact-after", "0", "--dry-run"])
            .stderr,
    )
    .unwrap();
    assert!(
        err.contains(&format!("would compact archived session {sid}")),
        "{err}"
    );
    assert_eq!(repo.git(&["rev-parse", &archive]).trim(), tip_before);

    let err = String::from_utf8(repo.tlv4(&["gc", "--compact-after", "0"]).stderr).unwrap();
    assert!(
        err.contains(&format!("compacted archived session {sid}")),
        "{err}"
    );
    assert_eq!(
        other_refs(),
        refs_before,
        "only the session's own refs move"
    );
    let tip = repo.git(&["rev-parse", &archive]).trim().to_owned();
    assert_ne!(tip, tip_before);
    assert_eq!(
        repo.trailers(&archive, "Tlv4-Compacted"),
        vec![tip_before.clone()]
    );
    // No prompt, answer or transcript is left anywhere in the history; results stay.
    for rev in repo
        .git(&["rev-list", "--first-parent", &archive])
        .lines()
        .take(events_before.as_array().unwrap().len() + 1)
    {
        let names = records(rev);
        assert!(
            !names
                .iter()
                .any(|n| ["prompt.md", "answer.txt", "transcript.txt"].contains(&n.as_str())),
            "{rev}: {names:?}"
        );
    }
    let after_records = records(&archive);
    assert!(after_records.iter().any(|n| n == "result.json"));
    assert!(after_records.iter().any(|n| n == "usage.json"));

    // Every event is still there, same order, same trailers, plus the compaction.
    let events = repo.rows(&["--session", &sid, "log", "--json"], "events");
    let events = events.as_array().unwrap();
    let before = events_before.as_array().unwrap();
    assert_eq!(events.len(), before.len() + 1);
    assert_eq!(events[0]["event"], "session_compacted");
    for (a, b) in events[1..].iter().zip(before) {
        assert_eq!(a["subject"], b["subject"]);
        assert_eq!(a["trailers"], b["trailers"]);
        assert_eq!(a["time"], b["time"]);
    }
    let status = repo.json(&["--session", &sid, "status", "--json"]);
    assert_eq!(status["tasks"], status_before["tasks"]);
    assert_eq!(
        status["session"]["status"],
        status_before["session"]["status"]
    );
    let cost = repo.json(&["--session", &sid, "cost", "--json"]);
    assert_eq!(cost["total"], cost_before["total"], "{cost}");
    // The code the session made is the same tree.
    assert_eq!(
        repo.git(&["rev-parse", &format!("{archive}:src")]),
        repo.git(&["rev-parse", &format!("{tip_before}:src")])
    );

    // The kept run sits on the commit written again for its base, its code unchanged.
    let kept_now = repo.git(&["rev-parse", &kept]).trim().to_owned();
    assert_ne!(kept_now, kept_commit);
    assert_eq!(
        repo.git(&["rev-parse", &format!("{kept}^")]).trim(),
        repo.git(&["rev-parse", &format!("{archive}~3")]).trim()
    );
    assert_eq!(
        repo.git(&["rev-parse", &format!("{kept}:src")]),
        repo.git(&["rev-parse", &format!("{kept_commit}:src")])
    );
    assert!(
        records(&kept).iter().all(|n| n.ends_with(".json")),
        "{:?}",
        records(&kept)
    );
    // The review is noted on the new commit and names it.
    let rewritten = repo
        .git(&["rev-parse", &format!("{archive}~2")])
        .trim()
        .to_owned();
    let note: serde_json::Value =
        serde_json::from_str(&repo.git(&["notes", "--ref=tlv4-review", "show", &rewritten]))
            .unwrap();
    assert_eq!(note["new"], rewritten.as_str(), "{note}");
    assert_eq!(note["verdict"], "PASS");
    let messages = repo.rows(&["--session", &sid, "msg", "list", "--json"], "messages");
    assert_eq!(messages, messages_before);

    // The replaced commits go with git's own gc.
    let size_after = packed_bytes(&repo);
    assert!(
        repo.git_cmd(&["cat-file", "-e", &tip_before])
            .output()
            .unwrap()
            .status
            .code()
            != Some(0),
        "the replaced tip is pruned"
    );
    assert!(size_after < size_before, "{size_after} < {size_before}");
    repo.fsck();

    // Compacted once: a second gc leaves it as it is.
    let err = String::from_utf8(repo.tlv4(&["gc", "--compact-after", "0"]).stderr).unwrap();
    assert!(!err.contains("compacted archived"), "{err}");
    assert_eq!(repo.git(&["rev-parse", &archive]).trim(), tip);
}

/// Commits `files` (path in the tree → new text) on top of `branch` with git plumbing, as
/// another version of git-tlv4 would write them.
fn commit_as_another_version(repo: &TestRepo, branch: &str, files: &[(&str, &str)]) {
    let index = repo.home.path().join("other-version-index");
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
    run(&["read-tree", branch]);
    for (path, text) in files {
        let file = repo.home.path().join("other-version-blob");
        std::fs::write(&file, text).unwrap();
        let blob = repo.git(&["hash-object", "-w", file.to_str().unwrap()]);
        run(&[
            "update-index",
            "--cacheinfo",
            &format!("100644,{},{path}", blob.trim()),
        ]);
    }
    let tree = run(&["write-tree"]);
    let commit = repo.git(&["commit-tree", tree.trim(), "-p", branch, "-m", "newer"]);
    repo.git(&["update-ref", &format!("refs/heads/{branch}"), commit.trim()]);
}

#[test]
fn a_pause_kind_of_a_newer_version_reads_shows_and_is_written_back_unchanged() {
    let repo = TestRepo::new();
    let sid = repo.start("spec-only", "write a spec");
    let branch = format!("tlv4/{sid}");
    let dir = format!(".tlv4/sessions/{sid}");
    let show = |file: &str| repo.git(&["show", &format!("{branch}:{dir}/{file}")]);
    // A later version pauses the session on a quota, a kind this build has never heard of.
    let session = show("session.toml").replace("status = \"active\"", "status = \"paused\"");
    let control = format!(
        "{}\n[pause]\nkind = \"quota\"\ntask = \"RESEARCH-001\"\n\
         reason = \"the session spent its budget of 2.00 USD\"\n\
         next = [\"git tlv4 approve   (spend more)\", \"git tlv4 abort\"]\n",
        show("control.toml")
    );
    commit_as_another_version(
        &repo,
        &branch,
        &[
            (&format!("{dir}/session.toml"), &session),
            (&format!("{dir}/control.toml"), &control),
        ],
    );

    let out = repo.ok(&["status"]);
    assert!(
        out.contains("paused    (quota) the session spent its budget of 2.00 USD"),
        "{out}"
    );
    assert!(out.contains("git tlv4 approve   (spend more)"), "{out}");
    let json = repo.json(&["status", "--json"]);
    assert_eq!(json["control"]["pause"]["kind"], "quota", "{json}");
    // It waits for the user, as every pause but a stall does.
    let err = repo.fails(&["resume"], WAITING);
    assert!(
        err.contains("is paused (quota): the session spent its budget"),
        "{err}"
    );

    // A write by this version leaves the pause as the newer one wrote it, byte for byte.
    repo.ok(&["task", "claim", "RESEARCH-001"]);
    assert_eq!(
        repo.git(&["log", "-1", "--format=%s", &branch]).trim(),
        "RESEARCH-001: claimed (analyst)"
    );
    assert_eq!(show("control.toml"), control);
    repo.fsck();

    // Approving it clears it like a gate's, recording the task it named.
    repo.ok(&["approve", "--no-run"]);
    let control = show("control.toml");
    assert!(!control.contains("[pause]"), "{control}");
    assert!(
        control.contains("approved = [\"RESEARCH-001\"]"),
        "{control}"
    );
}
