//! Nothing is stuck and nothing is shared: session ids are unique against refs, archives and
//! the base tree; concurrent starts get distinct sessions; a live owner is not a stall; every
//! stale lock of ours is cleared by `resume`; user commits on a session branch do not cut its
//! history.

use std::process::Stdio;

use crate::common::TestRepo;

/// Ids of every session branch (task branches `tlv4/<SID>.<TASK>` left out).
fn session_branches(repo: &TestRepo) -> Vec<String> {
    repo.git(&["for-each-ref", "--format=%(refname:strip=3)", "refs/heads/tlv4/"])
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
            repo.tlv4_cmd(&["start", "--no-run", "--pipeline", "wide", "same text"])
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
    repo.git(&["merge", "-q", "--no-ff", "-m", "merge the session", &format!("tlv4/{old}")]);
    repo.git(&["branch", "-D", &format!("tlv4/{old}")]);
    assert!(repo.path().join(format!(".tlv4/sessions/{old}/session.toml")).exists());

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
    repo.ok(&["--session", &sid, "msg", "send", "--from", "executor", "--type", "note", "old news"]);
    // Archive it the way the completion action leaves it: the branch moves under refs/tlv4/archive.
    let tip = repo.git(&["rev-parse", &format!("refs/heads/tlv4/{sid}")]);
    repo.git(&["update-ref", &format!("refs/tlv4/archive/{sid}"), tip.trim()]);
    repo.git(&["update-ref", "-d", &format!("refs/heads/tlv4/{sid}")]);

    // Writes to the archived session are refused, the bus included.
    let err = repo.fails(
        &["--session", &sid, "msg", "send", "--from", "executor", "--type", "note", "late"],
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
    let listed = repo.json(&["--session", &fork, "msg", "list", "--json"]);
    assert_eq!(listed, serde_json::json!([]), "the fork does not inherit the bus");
    assert_eq!(
        repo.git(&["rev-parse", &format!("refs/notes/tlv4/{sid}")]),
        bus,
        "the archived bus is untouched"
    );
    // An explicit id that is taken (by the archive) is refused too.
    let err = repo.fails(&["--session", &sid, "fork", "--at", tip.trim(), "--name", &sid], 1);
    assert!(err.contains("taken"), "{err}");
    repo.fsck();
}
