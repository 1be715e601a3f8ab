//! Guarantees of the store: the user's checkout is never touched, identities, maintenance.

use crate::common::TestRepo;

#[test]
fn head_index_and_worktree_are_never_touched() {
    let repo = TestRepo::new();
    repo.write("src/lib.rs", "pub fn f() { /* edited, not staged */ }\n");
    repo.write("staged.txt", "staged\n");
    repo.git(&["add", "staged.txt"]);
    repo.write("untracked.txt", "u\n");
    let before = repo.snapshot_of_checkout();
    let out = repo.tlv4(&["start", "--no-run", "--pipeline", "spec-only", "something"]);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("uncommitted changes"),
        "a dirty tree is worth a warning: {stderr}"
    );
    repo.ok(&["task", "claim", "RESEARCH-001"]);
    repo.ok(&["msg", "send", "--from", "analyst", "--type", "x", "y"]);
    repo.ok(&["task", "complete", "RESEARCH-001"]);
    repo.ok(&["undo"]);
    assert_eq!(repo.snapshot_of_checkout(), before);
    repo.fsck();
}

impl TestRepo {
    fn snapshot_of_checkout(&self) -> (String, Vec<u8>, String, String) {
        (
            self.git(&["rev-parse", "HEAD"]),
            std::fs::read(self.path().join(".git/index")).unwrap(),
            self.git(&["status", "--porcelain"]),
            std::fs::read_to_string(self.path().join("src/lib.rs")).unwrap(),
        )
    }
}

#[test]
fn start_works_from_a_detached_head() {
    let repo = TestRepo::new();
    let head = repo.git(&["rev-parse", "HEAD"]);
    repo.git(&["checkout", "-q", "--detach"]);
    let sid = repo.start("impl-only", "detached");
    assert_eq!(repo.git(&["rev-parse", &format!("tlv4/{sid}~2")]), head);
    repo.fsck();
}

#[test]
fn events_carry_the_users_identity() {
    let repo = TestRepo::new();
    let sid = repo.start("impl-only", "who am i");
    let who = repo.git(&[
        "log",
        "-1",
        "--format=%an <%ae>|%cn <%ce>",
        &format!("tlv4/{sid}"),
    ]);
    assert_eq!(
        who.trim(),
        "Test User <test@example.com>|Test User <test@example.com>"
    );
    let date = repo.git(&["log", "-1", "--format=%cI", &format!("tlv4/{sid}")]);
    assert_eq!(
        date.trim(),
        "2026-11-29T12:00:00Z",
        "GIT_COMMITTER_DATE is honoured"
    );
}

#[test]
fn without_an_identity_the_fallback_is_used() {
    let repo = TestRepo::empty();
    repo.write("a.txt", "a\n");
    repo.git(&["add", "a.txt"]);
    repo.git(&[
        "-c",
        "user.name=Someone",
        "-c",
        "user.email=s@example.com",
        "commit",
        "-q",
        "-m",
        "init",
    ]);
    let sid = repo.start("impl-only", "no identity");
    repo.ok(&["msg", "send", "--from", "a", "--type", "t", "s"]);
    let who = repo.git(&["log", "-1", "--format=%an <%ae>", &format!("tlv4/{sid}")]);
    assert_eq!(who.trim(), "git-tlv4 <git-tlv4@localhost>");
    let date = repo.git(&["log", "-1", "--format=%cI", &format!("tlv4/{sid}")]);
    assert_eq!(
        date.trim(),
        "2026-11-29T12:00:00Z",
        "the fixed clock holds with the fallback identity"
    );
    repo.fsck();
}

#[test]
fn git_maintenance_packs_loose_objects_as_events_pile_up() {
    let repo = TestRepo::new();
    // Make git's own threshold small so the auto run has work to do.
    repo.git(&["config", "gc.auto", "50"]);
    repo.wide_pipeline(1);
    let sid = repo.start("wide", "many events");
    let loose = |repo: &TestRepo| -> u64 {
        let out = repo.git(&["count-objects", "-v"]);
        out.lines()
            .find_map(|l| l.strip_prefix("count: "))
            .unwrap()
            .parse()
            .unwrap()
    };
    // git estimates loose objects from one fan-out directory (objects/17); give it enough
    // objects that the estimate cannot miss, as a long-lived repository would have.
    let blobs = repo.home.path().join("blobs");
    std::fs::create_dir_all(&blobs).unwrap();
    let mut paths = String::new();
    for i in 0..3000 {
        let p = blobs.join(format!("b{i}"));
        std::fs::write(&p, format!("blob {i}\n")).unwrap();
        paths.push_str(&format!("{}\n", p.display()));
    }
    let list = blobs.join("list");
    std::fs::write(&list, paths).unwrap();
    let out = repo
        .git_cmd(&["hash-object", "-w", "--stdin-paths"])
        .stdin(std::fs::File::open(&list).unwrap())
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(loose(&repo) > 3000);
    // 2 events so far; 98 more reach the 100th, where maintenance runs.
    for _ in 0..49 {
        repo.ok(&["task", "claim", "IMPL-001"]);
        repo.ok(&["task", "fail", "IMPL-001"]);
    }
    let seq = repo.trailers(&format!("tlv4/{sid}"), "Tlv4-Seq");
    assert_eq!(seq[0], "100");
    let packs = repo.git(&["count-objects", "-v"]);
    let packs: u64 = packs
        .lines()
        .find_map(|l| l.strip_prefix("packs: "))
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        packs >= 1,
        "maintenance should have packed: {}",
        repo.git(&["count-objects", "-v"])
    );
    // The session's objects are packed; the seeded blobs are unreachable and stay loose
    // until they are old enough to prune, as git decides.
    let in_pack: u64 = repo
        .git(&["count-objects", "-v"])
        .lines()
        .find_map(|l| l.strip_prefix("in-pack: "))
        .unwrap()
        .parse()
        .unwrap();
    assert!(in_pack >= 500, "{}", repo.git(&["count-objects", "-v"]));
    assert!(
        loose(&repo) <= 3000,
        "{}",
        repo.git(&["count-objects", "-v"])
    );
    repo.fsck();
}
