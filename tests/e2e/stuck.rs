//! Nothing is stuck and nothing is shared: session ids are unique against refs, archives and
//! the base tree; concurrent starts get distinct sessions; a live owner is not a stall; every
//! stale lock of ours is cleared by `resume`; user commits on a session branch do not cut its
//! history.

use std::process::Stdio;

use crate::common::{STALLED, TestRepo};

/// Ids of every session branch (task branches `tlv4/<SID>.<TASK>` left out).
fn session_branches(repo: &TestRepo) -> Vec<String> {
    repo.git(&[
        "for-each-ref",
        "--format=%(refname:strip=3)",
        "refs/heads/tlv4/",
    ])
    .lines()
    .filter(|l| !l.contains('.'))
    .map(str::to_owned)
    .collect()
}

#[test]
fn concurrent_starts_of_the_same_text_get_distinct_sessions() {
    let repo = TestRepo::new();
    repo.wide_pipeline(1);
    // The dates are fixed: every start writes byte-identical commits, the hardest case for a
    // create-only ref update.
    let children: Vec<_> = (0..4)
        .map(|_| {
            repo.tlv4_cmd(&[
                "start",
                "--no-run",
                "--new",
                "--pipeline",
                "wide",
                "same text",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
        })
        .collect();
    let mut ids = Vec::new();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        ids.push(String::from_utf8(out.stdout).unwrap().trim().to_owned());
    }
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 4, "each start has its own id: {ids:?}");
    let mut branches = session_branches(&repo);
    branches.sort();
    assert_eq!(branches, unique, "one branch per start");
    for sid in &unique {
        let started = repo
            .trailers(&format!("tlv4/{sid}"), "Tlv4-Event")
            .iter()
            .filter(|e| *e == "session_started")
            .count();
        assert_eq!(started, 1, "{sid} has exactly one session_started event");
    }
    repo.fsck();
}

#[test]
fn a_new_session_never_takes_an_id_whose_folder_is_in_the_base_tree() {
    let repo = TestRepo::new();
    repo.wide_pipeline(1);
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "pipelines"]);
    let old = repo.start("wide", "merge me later");
    repo.ok(&["--session", &old, "task", "claim", "IMPL-001", "--pid", "1"]);
    // The session is merged into main and its branch deleted: main's tree now holds its folder.
    repo.git(&[
        "merge",
        "-q",
        "--no-ff",
        "-m",
        "merge the session",
        &format!("tlv4/{old}"),
    ]);
    repo.git(&["branch", "-D", &format!("tlv4/{old}")]);
    assert!(
        repo.path()
            .join(format!(".tlv4/sessions/{old}/session.toml"))
            .exists()
    );

    let new = repo.start("wide", "merge me later");
    assert_ne!(new, old, "the id of a folder in the base tree is taken");
    assert_eq!(new, format!("{old}-2"));
    // The new session starts fresh: its task is pending, not the merged one's claim.
    assert_eq!(repo.task(&new, "IMPL-001")["status"], "pending");
    repo.fsck();
}

#[test]
fn forking_an_archived_session_takes_a_new_id_and_an_empty_bus() {
    let repo = TestRepo::new();
    repo.wide_pipeline(1);
    let sid = repo.start("wide", "Fix the note counter");
    repo.ok(&[
        "--session",
        &sid,
        "msg",
        "send",
        "--from",
        "executor",
        "--type",
        "note",
        "old news",
    ]);
    // Archive it the way the completion action leaves it: the branch moves under refs/tlv4/archive.
    let tip = repo.git(&["rev-parse", &format!("refs/heads/tlv4/{sid}")]);
    repo.git(&[
        "update-ref",
        &format!("refs/tlv4/archive/{sid}"),
        tip.trim(),
    ]);
    repo.git(&["update-ref", "-d", &format!("refs/heads/tlv4/{sid}")]);

    // Writes to the archived session are refused, the bus included.
    let err = repo.fails(
        &[
            "--session",
            &sid,
            "msg",
            "send",
            "--from",
            "executor",
            "--type",
            "note",
            "late",
        ],
        1,
    );
    assert!(err.contains("archived and read-only"), "{err}");
    let bus = repo.git(&["rev-parse", &format!("refs/notes/tlv4/{sid}")]);

    // The fork's text ("… fork") has the same first four words: the same slug.
    let fork = repo
        .ok(&["--session", &sid, "fork", "--at", tip.trim()])
        .trim()
        .to_owned();
    assert_ne!(fork, sid, "the archived id is not reused");
    assert_eq!(fork, format!("{sid}-2"));
    let listed = repo.rows(&["--session", &fork, "msg", "list", "--json"], "messages");
    assert_eq!(
        listed,
        serde_json::json!([]),
        "the fork does not inherit the bus"
    );
    assert_eq!(
        repo.git(&["rev-parse", &format!("refs/notes/tlv4/{sid}")]),
        bus,
        "the archived bus is untouched"
    );
    // An explicit id that is taken (by the archive) is refused too.
    let err = repo.fails(
        &[
            "--session",
            &sid,
            "fork",
            "--at",
            tip.trim(),
            "--name",
            &sid,
        ],
        1,
    );
    assert!(err.contains("taken"), "{err}");
    repo.fsck();
}

/// Events of the session branch, newest first.
fn events(repo: &TestRepo, sid: &str) -> Vec<String> {
    repo.trailers(&format!("tlv4/{sid}"), "Tlv4-Event")
}

#[test]
fn a_task_running_under_a_live_owner_is_not_a_stall() {
    let repo = TestRepo::new();
    repo.wide_pipeline(1);
    let sid = repo.start("wide", "busy elsewhere");
    // Another process owns the task and is alive.
    let mut owner = std::process::Command::new("sleep")
        .arg("600")
        .spawn()
        .unwrap();
    let pid = owner.id().to_string();
    repo.ok(&["task", "claim", "IMPL-001", "--pid", &pid]);
    let before = events(&repo, &sid).len();

    for args in [&["resume"][..], &["resume", "--retry"][..]] {
        let err = repo.fails(args, 3);
        assert!(
            err.contains("in progress elsewhere") && err.contains("IMPL-001"),
            "{err}"
        );
        assert!(
            err.contains(&format!(":{pid}")),
            "the owner is named: {err}"
        );
    }
    let s = repo.json(&["status", "--json"]);
    assert_eq!(s["session"]["status"], "active", "no pause is written");
    assert_eq!(
        events(&repo, &sid).len(),
        before,
        "nothing is written at all"
    );

    // The owner finishes: the next resume completes the session.
    repo.ok(&[
        "task",
        "complete",
        "IMPL-001",
        "--summary",
        "done elsewhere",
    ]);
    owner.kill().unwrap();
    owner.wait().unwrap();
    repo.ok(&["resume"]);
    let s = repo.json(&["status", "--json"]);
    assert_eq!(s["session"]["status"], "completed");
    repo.fsck();
}

#[test]
fn resume_clears_a_stall_whose_cause_is_gone() {
    let repo = TestRepo::new();
    repo.wide_pipeline(1);
    let sid = repo.start("wide", "stall then recover");
    repo.ok(&["task", "claim", "IMPL-001", "--pid", "1"]);
    repo.ok(&["task", "fail", "IMPL-001"]);
    // Nothing can run: a real stall, written as a pause.
    repo.stops(&["resume"], STALLED);
    let s = repo.json(&["status", "--json"]);
    assert_eq!(s["session"]["status"], "paused");
    assert_eq!(s["control"]["pause"]["kind"], "stalled", "{s}");
    // The failed task is then done by hand: the stall's cause is gone.
    repo.ok(&["task", "claim", "IMPL-001", "--pid", "1"]);
    repo.ok(&["task", "complete", "IMPL-001", "--summary", "fixed by hand"]);
    let err = repo.tlv4(&["approve"]);
    let said = String::from_utf8_lossy(&err.stderr);
    assert!(
        !said.contains("stuck on failed tasks"),
        "no task failed: {said}"
    );
    let s = repo.json(&["status", "--json"]);
    if s["session"]["status"] != "completed" {
        repo.runs(&["resume"]);
    }
    let s = repo.json(&["status", "--json"]);
    assert_eq!(s["session"]["status"], "completed", "{s}");
    assert!(events(&repo, &sid).contains(&"session_completed".to_owned()));
    repo.fsck();
}

#[test]
fn resume_clears_a_stall_on_resume_alone() {
    let repo = TestRepo::new();
    repo.wide_pipeline(1);
    repo.start("wide", "stall then resume");
    repo.ok(&["task", "claim", "IMPL-001", "--pid", "1"]);
    repo.ok(&["task", "fail", "IMPL-001"]);
    repo.stops(&["resume"], STALLED);
    repo.ok(&["task", "claim", "IMPL-001", "--pid", "1"]);
    repo.ok(&["task", "complete", "IMPL-001", "--summary", "fixed by hand"]);
    let said = String::from_utf8_lossy(&repo.tlv4(&["resume"]).stderr).into_owned();
    assert!(said.contains("the stall is over"), "{said}");
    let s = repo.json(&["status", "--json"]);
    assert_eq!(s["session"]["status"], "completed", "{said}");
    repo.fsck();
}

#[test]
fn a_zombie_owner_is_gone() {
    let repo = TestRepo::new();
    repo.wide_pipeline(1);
    let sid = repo.start("wide", "zombie owner");
    // A child that exits and is not reaped stays a zombie: its pid exists, it runs nothing.
    let zombie = std::process::Command::new("true").spawn().unwrap();
    let pid = zombie.id();
    for _ in 0..500 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        if stat
            .rsplit(')')
            .next()
            .is_some_and(|s| s.trim_start().starts_with('Z'))
        {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    repo.ok(&["task", "claim", "IMPL-001", "--pid", &pid.to_string()]);
    let said = String::from_utf8_lossy(&repo.tlv4(&["resume", "--no-run"]).stderr).into_owned();
    assert!(
        said.contains("IMPL-001 (was "),
        "the zombie's task is recovered: {said}"
    );
    assert_eq!(repo.task(&sid, "IMPL-001")["status"], "pending");
    drop(zombie);
}

/// Makes `path` look a minute old.
fn age(path: &std::path::Path) {
    let out = std::process::Command::new("touch")
        .args(["-d", "1 minute ago"])
        .arg(path)
        .output()
        .unwrap();
    assert!(out.status.success());
}

#[test]
fn resume_clears_every_stale_lock_of_ours_and_names_it() {
    let repo = TestRepo::new();
    repo.wide_pipeline(1);
    let sid = repo.start("wide", "locks everywhere");
    let git = repo.path().join(".git");
    let ours = [
        "refs/notes/tlv4-review.lock".to_owned(),
        format!("refs/notes/tlv4/{sid}.lock"),
        format!("refs/heads/tlv4/{sid}.lock"),
        format!("refs/heads/tlv4/{sid}.IMPL-001.lock"),
        format!("refs/tlv4/runs/{sid}/IMPL-001/1.lock"),
        format!("refs/tlv4/archive/{sid}.lock"),
        format!("refs/heads/tlv4-export/{sid}.lock"),
        "packed-refs.lock".to_owned(),
    ];
    for rel in &ours {
        let p = git.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, "").unwrap();
        age(&p);
    }
    // Not ours: a lock of the user's branch; and a fresh lock may belong to a live writer.
    let user = git.join("refs/heads/main.lock");
    std::fs::write(&user, "").unwrap();
    age(&user);
    // A fresh lock: one that a live writer drops in a moment is waited for and left to it;
    // one that stays was left by a process killed a moment ago, and is cleared once stale.
    let live = git.join(format!("refs/notes/tlv4/{sid}-3.lock"));
    std::fs::write(&live, "").unwrap();
    let writer = {
        let live = live.clone();
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(300));
            std::fs::remove_file(&live).unwrap();
        })
    };
    let fresh = git.join(format!("refs/notes/tlv4/{sid}-2.lock"));
    std::fs::write(&fresh, "").unwrap();

    // A task checkout of a process that is gone, with its index locked.
    let host = String::from_utf8(
        std::process::Command::new("hostname")
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let wt = repo.path().parent().unwrap().join(format!(
        "{}-checkout",
        repo.path().file_name().unwrap().to_str().unwrap()
    ));
    let reason = format!(
        "git-tlv4 pid {} on {} ({sid} IMPL-001)",
        crate::common::dead_pid(),
        host.trim()
    );
    repo.git(&[
        "worktree",
        "add",
        "-q",
        "--detach",
        "--lock",
        "--reason",
        &reason,
        wt.to_str().unwrap(),
    ]);
    let admin = std::path::PathBuf::from(
        repo.git(&[
            "-C",
            wt.to_str().unwrap(),
            "rev-parse",
            "--absolute-git-dir",
        ])
        .trim(),
    );
    let index_lock = admin.join("index.lock");
    std::fs::write(&index_lock, "").unwrap();

    let out = repo.tlv4(&["resume", "--no-run"]);
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{said}");
    for rel in &ours {
        assert!(!git.join(rel).exists(), "{rel} is cleared: {said}");
        assert!(
            said.contains(rel.as_str()),
            "the message names {rel}: {said}"
        );
    }
    assert!(!index_lock.exists(), "{said}");
    assert!(said.contains("index.lock"), "{said}");
    assert!(user.exists(), "a lock of the user's own ref is left alone");
    writer.join().unwrap();
    assert!(!said.contains(&format!("{sid}-3.lock")), "{said}");
    assert!(
        !fresh.exists(),
        "a lock left a moment ago is cleared: {said}"
    );
    assert!(said.contains(&format!("{sid}-2.lock")), "{said}");
    std::fs::remove_file(&user).unwrap();
    repo.fsck();
}

#[test]
fn a_user_commit_on_the_session_branch_does_not_cut_its_history() {
    let repo = TestRepo::new();
    repo.wide_pipeline(1);
    let sid = repo.start("wide", "user commits too");
    let branch = format!("tlv4/{sid}");
    repo.ok(&["task", "claim", "IMPL-001", "--pid", "1"]);
    let claimed = repo.git(&["rev-parse", &branch]).trim().to_owned();
    // The user commits on the session branch by hand, then goes back to main.
    repo.git(&["checkout", "-q", &branch]);
    repo.write("notes.txt", "mine\n");
    repo.git(&["add", "notes.txt"]);
    repo.git(&["commit", "-q", "-m", "my own change"]);
    let mine = repo.git(&["rev-parse", "HEAD"]).trim().to_owned();
    repo.git(&["checkout", "-q", "main"]);

    let log = repo.ok(&["--session", &sid, "log"]);
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 4, "three events and the user's commit: {log}");
    assert!(
        lines[0].contains("my own change") && lines[0].contains("[not an event]"),
        "{log}"
    );
    assert!(
        lines[3].contains("session: started"),
        "the walk reaches the first event: {log}"
    );
    let json = repo.rows(&["--session", &sid, "log", "--json"], "events");
    assert_eq!(json[0]["commit"], mine.as_str());
    assert_eq!(json[0]["event"], serde_json::Value::Null);
    assert_eq!(json[1]["event"], "task_claimed");

    // Writes go on top of the user's commit: it stays in the history and its file in the tree.
    repo.ok(&["--session", &sid, "task", "fail", "IMPL-001"]);
    assert_eq!(
        repo.git(&["rev-parse", &format!("{branch}~1")]).trim(),
        mine
    );
    assert_eq!(
        repo.git(&["show", &format!("{branch}:notes.txt")]),
        "mine\n"
    );
    assert_eq!(repo.task(&sid, "IMPL-001")["status"], "failed");

    // Events before the user's commit are still events of the session.
    repo.ok(&["--session", &sid, "rollback", "--to", &claimed]);
    assert_eq!(repo.task(&sid, "IMPL-001")["status"], "in_progress");
    repo.ok(&["--session", &sid, "undo"]);
    assert_eq!(repo.task(&sid, "IMPL-001")["status"], "failed");
    let fork = repo.ok(&["--session", &sid, "fork", "--at", &claimed]);
    assert!(fork.trim().starts_with("TLV4-"), "{fork}");
    repo.fsck();
}

#[test]
fn resume_clears_the_review_notes_lock_without_any_session() {
    let repo = TestRepo::new();
    let lock = repo.path().join(".git/refs/notes/tlv4-review.lock");
    std::fs::create_dir_all(lock.parent().unwrap()).unwrap();
    std::fs::write(&lock, "").unwrap();
    age(&lock);
    // `git tlv4 review` is possible without a session; so is clearing what blocks it.
    let err = repo.fails(&["resume"], 1);
    assert!(
        err.contains("removed stale lock") && err.contains("tlv4-review.lock"),
        "{err}"
    );
    assert!(!lock.exists());
}
