//! Sessions shared through a bare remote, over `file://` and over `git daemon` on loopback:
//! `push`, `pull`, `list --remote`, checked with git itself.

use std::path::Path;
use std::process::{Child, Command, Stdio};

use crate::common::{TestRepo, WAITING, hermetic};

/// A bare repository in a temporary directory.
pub(crate) struct Bare {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) home: tempfile::TempDir,
}

impl Bare {
    pub(crate) fn new() -> Bare {
        let bare = Bare {
            dir: tempfile::tempdir().unwrap(),
            home: tempfile::tempdir().unwrap(),
        };
        bare.git(&["init", "-q", "--bare", "-b", "main", "remote.git"]);
        bare
    }

    pub(crate) fn path(&self) -> std::path::PathBuf {
        self.dir.path().join("remote.git")
    }

    pub(crate) fn url(&self) -> String {
        format!("file://{}", self.path().display())
    }

    pub(crate) fn git(&self, args: &[&str]) -> String {
        let out = hermetic("git", self.dir.path(), self.home.path())
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    pub(crate) fn refs(&self) -> String {
        self.git(&[
            "--git-dir",
            self.path().to_str().unwrap(),
            "for-each-ref",
            "--format=%(refname) %(objectname)",
        ])
    }

    pub(crate) fn fsck(&self) {
        self.git(&[
            "--git-dir",
            self.path().to_str().unwrap(),
            "fsck",
            "--strict",
            "--no-progress",
        ]);
    }
}

/// A clone of `url` with an identity of its own.
pub(crate) fn clone(url: &str, name: &str) -> TestRepo {
    let repo = TestRepo {
        dir: tempfile::tempdir().unwrap(),
        home: tempfile::tempdir().unwrap(),
    };
    let out = hermetic("git", repo.path(), repo.home.path())
        .args(["clone", "-q", url, "."])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    repo.git(&["config", "user.name", name]);
    repo.git(&["config", "user.email", &format!("{name}@example.com")]);
    repo
}

/// A repository with one commit, pushed to a new bare remote as `origin`, and a session.
fn origin_with_session() -> (Bare, TestRepo, String) {
    let bare = Bare::new();
    let first = TestRepo::new();
    first.git(&["remote", "add", "origin", &bare.url()]);
    first.git(&["push", "-q", "origin", "main"]);
    let sid = first.start("spec-only", "Write requirements for search");
    (bare, first, sid)
}

fn send(repo: &TestRepo, from: &str, text: &str) {
    repo.ok(&["msg", "send", "--from", from, "--type", "note", text]);
}

fn messages(repo: &TestRepo) -> Vec<String> {
    repo.rows(&["msg", "list", "--json"], "messages")
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["summary"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_fresh_clone_sees_the_session_after_pull_and_can_resume_it() {
    let (bare, first, sid) = origin_with_session();
    first.ok(&["push"]);
    let listed = first.ok(&["list", "--remote", "origin"]);
    assert!(listed.contains(&sid) && listed.contains("live"), "{listed}");

    let second = clone(&bare.url(), "second");
    let before = second.git(&["for-each-ref", "--format=%(refname)"]);
    // `list --remote` reads the remote's refs and fetches nothing.
    let remote = second.rows(&["list", "--remote", "origin", "--json"], "sessions");
    assert_eq!(remote[0]["id"], sid.as_str());
    assert_eq!(remote[0]["state"], "live");
    assert_eq!(second.git(&["for-each-ref", "--format=%(refname)"]), before);
    // A clone sees `origin/tlv4/…` but has no session until it pulls.
    assert_eq!(
        second.rows(&["list", "--json"], "sessions"),
        serde_json::json!([])
    );

    second.ok(&["pull"]);
    let list = second.rows(&["list", "--json"], "sessions");
    assert_eq!(list[0]["id"], sid.as_str());
    assert_eq!(
        second.git(&["rev-parse", &format!("tlv4/{sid}")]),
        first.git(&["rev-parse", &format!("tlv4/{sid}")])
    );
    assert!(second.ok(&["status"]).contains(&sid));
    assert!(second.ok(&["log"]).contains("session"));
    // The mirror of the remote is private: not a branch, not a remote-tracking branch.
    assert_eq!(
        second
            .git(&["for-each-ref", "--format=%(refname)", "refs/tlv4-remote/"])
            .trim(),
        format!("refs/tlv4-remote/origin/heads/tlv4/{sid}")
    );

    // The clone runs the session on (the builtin agent) and sends it back.
    second.stops(&["resume"], WAITING);
    let tip = second.git(&["rev-parse", &format!("tlv4/{sid}")]);
    assert_ne!(tip, first.git(&["rev-parse", &format!("tlv4/{sid}")]));
    second.ok(&["push"]);
    first.ok(&["pull"]);
    assert_eq!(first.git(&["rev-parse", &format!("tlv4/{sid}")]), tip);
    bare.fsck();
    first.fsck();
    second.fsck();
}

/// `git daemon` serving `base` on a free loopback port; killed when dropped.
pub(crate) struct Daemon {
    child: Child,
    port: u16,
    /// Where the daemon writes its pid: `git daemon` runs `git-daemon` as a child, which
    /// killing `child` alone leaves serving.
    pid_file: std::path::PathBuf,
}

impl Daemon {
    pub(crate) fn start(base: &Path, home: &Path) -> Option<Daemon> {
        Daemon::start_at(base, home, None)
    }

    /// A daemon on `port` (a free one when `None`): the same port again restarts a server
    /// its clients know.
    pub(crate) fn start_at(base: &Path, home: &Path, port: Option<u16>) -> Option<Daemon> {
        let probe = Command::new("git")
            .args(["daemon", "--help"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .ok()?;
        let exec_path = Command::new("git").arg("--exec-path").output().ok()?;
        let exec_path = String::from_utf8_lossy(&exec_path.stdout).trim().to_owned();
        if !probe.success() && !Path::new(&exec_path).join("git-daemon").exists() {
            return None;
        }
        let port = port.unwrap_or_else(|| {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        });
        let pid_file = home.join(format!("daemon-{port}.pid"));
        let child = hermetic("git", base, home)
            .args([
                "daemon",
                &format!("--pid-file={}", pid_file.display()),
                "--enable=receive-pack",
                "--export-all",
                "--reuseaddr",
                "--listen=127.0.0.1",
                &format!("--port={port}"),
                &format!("--base-path={}", base.display()),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let daemon = Daemon {
            child,
            port,
            pid_file,
        };
        // Ready when it answers (bounded by tries, not by a clock).
        for _ in 0..200 {
            let ok = hermetic("git", base, home)
                .args(["ls-remote", &daemon.url()])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if ok {
                return Some(daemon);
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("git daemon did not answer on port {port}");
    }

    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    pub(crate) fn url(&self) -> String {
        format!("git://127.0.0.1:{}/remote.git", self.port)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(pid) = std::fs::read_to_string(&self.pid_file)
            .ok()
            .and_then(|p| p.trim().parse::<i32>().ok())
        {
            // SAFETY: a signal to the daemon this helper started.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Two clones, one behind: its push is refused and changes nothing; after `pull` it goes.
fn behind_push_is_refused_until_pull(url: &str, bare: &Bare, first: &TestRepo, sid: &str) {
    first.ok(&["push", url]);
    let second = clone(url, "second");
    second.ok(&["pull", url]);

    // The first clone moves on and publishes; the second wrote a message meanwhile.
    first.ok(&["task", "claim", "RESEARCH-001"]);
    send(first, "analyst", "from the first");
    first.ok(&["push", url]);
    send(&second, "writer", "from the second");
    let remote_before = bare.refs();
    let err = second.fails(&["push", url], 3);
    assert!(err.contains("has changes this clone has not seen"), "{err}");
    assert!(err.contains(&format!("git tlv4 pull {url}")), "{err}");
    assert_eq!(bare.refs(), remote_before, "a refused push changes nothing");

    second.ok(&["pull", url]);
    // The session branch fast-forwarded, the notes merged: both messages are here.
    assert_eq!(
        second.git(&["rev-parse", &format!("tlv4/{sid}")]),
        first.git(&["rev-parse", &format!("tlv4/{sid}")])
    );
    assert_eq!(messages(&second), ["from the first", "from the second"]);
    second.ok(&["push", url]);
    first.ok(&["pull", url]);
    assert_eq!(messages(first), ["from the first", "from the second"]);
    bare.fsck();
    first.fsck();
    second.fsck();
}

#[test]
fn a_push_from_behind_is_refused_over_file_url() {
    let (bare, first, sid) = origin_with_session();
    behind_push_is_refused_until_pull(&bare.url(), &bare, &first, &sid);
}

#[test]
fn a_push_from_behind_is_refused_over_git_daemon() {
    let (bare, first, sid) = origin_with_session();
    let Some(daemon) = Daemon::start(bare.dir.path(), bare.home.path()) else {
        eprintln!("skipped: `git daemon` is not installed");
        return;
    };
    behind_push_is_refused_until_pull(&daemon.url(), &bare, &first, &sid);
}

#[test]
fn a_pull_never_drops_a_local_note() {
    let (bare, first, sid) = origin_with_session();
    first.ok(&["push"]);
    let second = clone(&bare.url(), "second");
    second.ok(&["pull"]);
    let tip = first.git(&["rev-parse", &format!("tlv4/{sid}")]);
    let tip = tip.trim();
    // Review notes on the same commit, written on both sides (JSON Lines).
    first.git(&[
        "notes",
        "--ref=tlv4-review",
        "add",
        "-m",
        "{\"remote\":1}",
        tip,
    ]);
    first.ok(&["push"]);
    second.git(&[
        "notes",
        "--ref=tlv4-review",
        "add",
        "-m",
        "{\"local\":1}\n{\"remote\":1}",
        tip,
    ]);
    second.ok(&["pull"]);
    let note = second.git(&["notes", "--ref=tlv4-review", "show", tip]);
    // Ours first, then theirs that we lack; the shared line once.
    assert_eq!(note, "{\"local\":1}\n{\"remote\":1}\n");
    // Both notes commits stay reachable: the merge has both parents.
    let parents = second.git(&["rev-list", "--parents", "-n1", "refs/notes/tlv4-review"]);
    assert_eq!(parents.split_whitespace().count(), 3, "{parents}");
    second.ok(&["push"]);
    bare.fsck();
    second.fsck();
}

#[test]
fn the_same_task_claimed_on_both_sides_is_refused_and_both_tips_kept() {
    let (bare, first, sid) = origin_with_session();
    first.ok(&["push"]);
    let second = clone(&bare.url(), "second");
    second.ok(&["pull"]);
    first.ok(&["task", "claim", "RESEARCH-001"]);
    first.ok(&["push"]);
    // Another owner claims the same task here (the same owner twice would merge).
    second.ok(&["task", "claim", "RESEARCH-001", "--pid", "1"]);
    let ours = second.git(&["rev-parse", &format!("tlv4/{sid}")]);
    let err = second.fails(&["pull"], 3);
    assert!(err.contains("added events that do not merge"), "{err}");
    assert!(
        err.contains("RESEARCH-001 changed on both sides"),
        "the task is named: {err}"
    );
    assert!(err.contains("hint: to take theirs"), "{err}");
    assert_eq!(second.git(&["rev-parse", &format!("tlv4/{sid}")]), ours);
    assert_eq!(
        second.git(&[
            "rev-parse",
            &format!("refs/tlv4-remote/origin/heads/tlv4/{sid}")
        ]),
        first.git(&["rev-parse", &format!("tlv4/{sid}")])
    );
    let err = second.fails(&["push"], 3);
    assert!(err.contains("git tlv4 pull origin"), "{err}");
    second.fsck();
    bare.fsck();
}

#[test]
fn a_session_archived_on_one_side_is_archived_on_the_other_after_pull() {
    let bare = Bare::new();
    let first = TestRepo::new();
    first.git(&["remote", "add", "origin", &bare.url()]);
    first.git(&["push", "-q", "origin", "main"]);
    let sid = first
        .ok(&[
            "start",
            "--no-run",
            "--yes",
            "--pipeline",
            "spec-only",
            "--completion",
            "archive",
            "Write requirements for search",
        ])
        .trim()
        .to_owned();
    first.ok(&["push"]);
    let second = clone(&bare.url(), "second");
    second.ok(&["pull"]);
    // The first clone runs it to the end (the builtin agent), which archives it, and pushes.
    first.ok(&["resume"]);
    assert_eq!(
        first.rows(&["list", "--json"], "sessions"),
        serde_json::json!([])
    );
    first.ok(&["push", "--session", &sid]);
    let remote = first.rows(&["list", "--remote", "origin", "--json"], "sessions");
    assert_eq!(remote[0]["state"], "archived", "{remote}");
    assert!(!bare.refs().contains(&format!("refs/heads/tlv4/{sid} ")));

    // The second clone has the live branch, behind the archive: it cannot push it back,
    // and pulling archives it here.
    let err = second.fails(&["push"], 3);
    assert!(err.contains(&format!("refs/heads/tlv4/{sid}")), "{err}");
    second.ok(&["pull"]);
    assert_eq!(
        second.rows(&["list", "--json"], "sessions"),
        serde_json::json!([])
    );
    assert_eq!(
        second.git(&["rev-parse", &format!("refs/tlv4/archive/{sid}")]),
        first.git(&["rev-parse", &format!("refs/tlv4/archive/{sid}")])
    );
    // Pushing from there cannot bring the branch back on the remote.
    second.ok(&["push", "--all"]);
    assert!(!bare.refs().contains(&format!("refs/heads/tlv4/{sid} ")));
    bare.fsck();
    second.fsck();
}

#[test]
fn events_on_different_tasks_merge_into_one_event_with_both_parents() {
    let bare = Bare::new();
    let first = TestRepo::new();
    first.wide_pipeline(3);
    first.git(&["add", "-A"]);
    first.git(&["commit", "-q", "-m", "a wide pipeline"]);
    first.git(&["remote", "add", "origin", &bare.url()]);
    first.git(&["push", "-q", "origin", "main"]);
    let sid = first.start("wide", "many hands");
    first.ok(&["push"]);
    let second = clone(&bare.url(), "second");
    second.ok(&["pull"]);
    let branch = format!("tlv4/{sid}");
    let seq = |repo: &TestRepo| {
        repo.trailers(&branch, "Tlv4-Seq")[0]
            .parse::<u64>()
            .unwrap()
    };
    let met = seq(&first);

    // Offline on both sides: the first completes IMPL-001, the second claims IMPL-002.
    first.ok(&["task", "claim", "IMPL-001"]);
    first.ok(&["task", "complete", "IMPL-001", "--summary", "done there"]);
    first.ok(&["push"]);
    second.ok(&["task", "claim", "IMPL-002"]);
    let ours = second.git(&["rev-parse", &branch]).trim().to_owned();
    let theirs = first.git(&["rev-parse", &branch]).trim().to_owned();

    second.ok(&["pull"]);
    let tip = second.git(&["rev-parse", &branch]).trim().to_owned();
    assert_eq!(
        second.git(&["rev-list", "--parents", "-n1", &tip]).trim(),
        format!("{tip} {ours} {theirs}"),
        "one merge event, first parent ours"
    );
    assert_eq!(second.trailers(&branch, "Tlv4-Event")[0], "session_merged");
    assert_eq!(second.trailers(&branch, "Tlv4-Merged")[0], theirs);
    // Three events since they met (two there, one here) and the merge itself.
    assert_eq!(seq(&second), met + 4);
    let status = second.json(&["status", "--json"]);
    assert_eq!(status["session"]["events"], met + 4);
    assert_eq!(second.task(&sid, "IMPL-001")["status"], "completed");
    assert_eq!(second.task(&sid, "IMPL-002")["status"], "in_progress");
    assert_eq!(second.task(&sid, "IMPL-003")["status"], "pending");

    second.ok(&["push"]);
    first.ok(&["pull"]);
    assert_eq!(first.git(&["rev-parse", &branch]).trim(), tip);
    bare.fsck();
    first.fsck();
    second.fsck();
}

/// A session started on a new clone `first` of a new bare remote and run to its spec gate,
/// served by `git daemon` (`None`: no daemon here), and a second clone of it.
fn two_at_the_gate() -> Option<(Bare, Daemon, TestRepo, TestRepo, String)> {
    let bare = Bare::new();
    let first = TestRepo::new();
    first.git(&["remote", "add", "origin", &bare.url()]);
    first.git(&["push", "-q", "origin", "main"]);
    let out = first.runs(&[
        "start",
        "--pipeline",
        "spec-only",
        "Write the requirements for note search",
    ]);
    let sid = out.lines().next().unwrap().trim().to_owned();
    assert_eq!(first.task(&sid, "QUALITY-001")["status"], "completed");
    let daemon = Daemon::start(bare.dir.path(), bare.home.path())?;
    first.ok(&["push", &daemon.url()]);
    let second = clone(&daemon.url(), "second");
    second.ok(&["pull", &daemon.url()]);
    Some((bare, daemon, first, second, sid))
}

/// A file of the session's pipeline folder at its tip.
fn session_file(repo: &TestRepo, sid: &str, rel: &str) -> String {
    repo.git(&["show", &format!("tlv4/{sid}:.tlv4/sessions/{sid}/{rel}")])
}

#[test]
fn two_feedbacks_on_one_document_and_two_messages_made_apart_are_all_kept() {
    let Some((bare, daemon, first, second, sid)) = two_at_the_gate() else {
        eprintln!("skipped: `git daemon` is not installed");
        return;
    };
    let url = daemon.url();
    let branch = format!("tlv4/{sid}");
    first.ok(&["feedback", "--no-run", "every epic needs a search story"]);
    send(&first, "reviewer", "from the first");
    first.ok(&["push", &url]);
    let theirs = first.git(&["rev-parse", &branch]).trim().to_owned();

    second.ok(&["feedback", "--no-run", "each story needs a priority"]);
    send(&second, "reviewer", "from the second");
    let ours = second.git(&["rev-parse", &branch]).trim().to_owned();
    let err = second.fails(&["push", &url], 3);
    assert!(err.contains("has changes this clone has not seen"), "{err}");

    let pulled = second.ok(&["pull", &url]);
    assert!(pulled.is_empty(), "{pulled}");
    // One merge event joining both sides, then their feedback made again after it.
    let tip = second.git(&["rev-parse", &branch]).trim().to_owned();
    assert_eq!(second.trailers(&branch, "Tlv4-Decision")[0], "feedback");
    assert_eq!(second.trailers(&branch, "Tlv4-Replayed")[0], theirs);
    assert_eq!(
        second.trailers(&branch, "Tlv4-Feedback")[0],
        "every epic needs a search story"
    );
    let merge = second
        .git(&["rev-parse", &format!("{tip}~1")])
        .trim()
        .to_owned();
    assert_eq!(
        second.git(&["rev-list", "--parents", "-n1", &merge]).trim(),
        format!("{merge} {ours} {theirs}")
    );
    assert_eq!(second.trailers(&merge, "Tlv4-Event")[0], "session_merged");
    // Both feedbacks went to the epics: the revision made here has not run, so it carries
    // both, as a second feedback given on one clone would.
    let revision = session_file(&second, &sid, "tasks/DRAFT-004-R1.toml");
    let here = revision.find("Feedback: each story needs a priority");
    let there = revision.find("Feedback: every epic needs a search story");
    assert!(
        here.is_some() && there.is_some() && here < there,
        "{revision}"
    );
    assert!(
        !session_file(&second, &sid, "tasks/DRAFT-004-R1.toml").is_empty()
            && second
                .git(&[
                    "ls-tree",
                    "--name-only",
                    &format!("{branch}:.tlv4/sessions/{sid}/tasks")
                ])
                .lines()
                .all(|t| t != "DRAFT-004-R2.toml")
    );
    // The log of decisions has both lines, in the order they were made here.
    let log = session_file(&second, &sid, "wisdom/decisions.md");
    let here = log.find("each story needs a priority");
    let there = log.find("every epic needs a search story");
    assert!(here.is_some() && there.is_some() && here < there, "{log}");
    // The loop's own messages come first; then the two people's, in the order sent.
    let last_two = |repo: &TestRepo| messages(repo).split_off(messages(repo).len() - 2);
    assert_eq!(last_two(&second), ["from the first", "from the second"]);

    second.ok(&["push", &url]);
    first.ok(&["pull", &url]);
    assert_eq!(first.git(&["rev-parse", &branch]).trim(), tip);
    assert_eq!(last_two(&first), ["from the first", "from the second"]);
    assert_eq!(session_file(&first, &sid, "wisdom/decisions.md"), log);
    bare.fsck();
    first.fsck();
    second.fsck();
}

#[test]
fn an_approve_there_and_a_feedback_here_both_apply() {
    let Some((bare, daemon, first, second, sid)) = two_at_the_gate() else {
        eprintln!("skipped: `git daemon` is not installed");
        return;
    };
    let url = daemon.url();
    let branch = format!("tlv4/{sid}");
    first.ok(&["approve", "--no-run"]);
    first.ok(&["push", &url]);
    second.ok(&[
        "feedback",
        "--no-run",
        "the architecture needs an ADR on the index",
    ]);
    second.fails(&["push", &url], 3);
    second.ok(&["pull", &url]);
    assert_eq!(second.trailers(&branch, "Tlv4-Decision")[0], "approve");
    // The feedback made its revisions; the approval of the gate is recorded.
    assert_eq!(second.task(&sid, "DRAFT-003-R1")["status"], "pending");
    let control = session_file(&second, &sid, "control.toml");
    assert!(control.contains("QUALITY-001"), "{control}");
    second.ok(&["push", &url]);
    first.ok(&["pull", &url]);
    assert_eq!(
        first.git(&["rev-parse", &branch]),
        second.git(&["rev-parse", &branch])
    );
    // The other way round: a feedback there, an approve here (of the pause the revisions
    // will make when they have run).
    first.ok(&[
        "feedback",
        "--no-run",
        "the requirements need an NFR on latency",
    ]);
    first.ok(&["push", &url]);
    second.runs(&["resume"]);
    second.ok(&["approve", "--no-run"]);
    second.ok(&["pull", &url]);
    assert_eq!(second.trailers(&branch, "Tlv4-Decision")[0], "feedback");
    assert_eq!(second.task(&sid, "DRAFT-002-R1")["status"], "pending");
    second.ok(&["push", &url]);
    bare.fsck();
    first.fsck();
    second.fsck();
}

#[test]
fn two_revisions_of_one_task_merge_and_a_revise_of_a_task_reset_here_is_refused() {
    let Some((bare, daemon, first, second, sid)) = two_at_the_gate() else {
        eprintln!("skipped: `git daemon` is not installed");
        return;
    };
    let url = daemon.url();
    let branch = format!("tlv4/{sid}");
    first.ok(&[
        "revise",
        "DRAFT-002",
        "--no-run",
        "--feedback",
        "name the API",
    ]);
    first.ok(&["push", &url]);
    second.ok(&[
        "revise",
        "DRAFT-002",
        "--no-run",
        "--feedback",
        "add a latency NFR",
    ]);
    second.ok(&["pull", &url]);
    // Revised on both sides: the revision made here carries both texts.
    assert_eq!(second.trailers(&branch, "Tlv4-Decision")[0], "revise");
    assert_eq!(
        second.trailers(&branch, "Tlv4-Decision-Task")[0],
        "DRAFT-002"
    );
    let revision = session_file(&second, &sid, "tasks/DRAFT-002-R1.toml");
    assert!(
        revision.contains("Feedback: add a latency NFR")
            && revision.contains("Feedback: name the API"),
        "{revision}"
    );
    second.ok(&["push", &url]);
    first.ok(&["pull", &url]);

    // A revise there of a task reset here cannot hold.
    first.ok(&[
        "revise",
        "DRAFT-001",
        "--no-run",
        "--feedback",
        "narrow the scope",
    ]);
    first.ok(&["push", &url]);
    second.ok(&["reset", "DRAFT-001", "--no-run"]);
    let err = second.fails(&["pull", &url], 3);
    assert!(
        err.contains("their `revise DRAFT-001 --feedback \"narrow the scope\"`")
            && err.contains("your `DRAFT-001: reset (writer)`")
            && err.contains("only completed or failed tasks can be revised"),
        "{err}"
    );
    assert!(
        err.contains(&format!("git tlv4 undo -n 1 && git tlv4 pull {url}")),
        "{err}"
    );
    bare.fsck();
    first.fsck();
    second.fsck();
}

#[test]
fn an_approve_and_an_abort_of_the_same_gate_are_refused_with_a_command_per_side() {
    let Some((bare, daemon, first, second, sid)) = two_at_the_gate() else {
        eprintln!("skipped: `git daemon` is not installed");
        return;
    };
    let url = daemon.url();
    let branch = format!("tlv4/{sid}");
    first.ok(&["approve", "--no-run"]);
    first.ok(&["push", &url]);
    second.ok(&["abort"]);
    let ours = second.git(&["rev-parse", &branch]);
    let err = second.fails(&["pull", &url], 3);
    assert!(err.contains("cannot both hold"), "{err}");
    assert!(
        err.contains("their `approve`") && err.contains("your `abort`"),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "here: `git tlv4 undo -n 1 && git tlv4 pull {url}`"
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "on the clone that made theirs: `git tlv4 undo -n 1 && git tlv4 push {url}`"
        )),
        "{err}"
    );
    assert_eq!(second.git(&["rev-parse", &branch]), ours, "nothing written");
    second.fsck();
    // Taking theirs as the hint says: the approve is made again here.
    second.ok(&["undo", "-n", "1"]);
    second.ok(&["pull", &url]);
    assert_eq!(second.trailers(&branch, "Tlv4-Decision")[0], "approve");
    let status = second.json(&["status", "--json"]);
    assert_ne!(status["session"]["status"], "aborted", "{status}");
    second.ok(&["push", &url]);
    bare.fsck();
    first.fsck();
    second.fsck();
}
