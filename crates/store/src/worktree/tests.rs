//! Task worktrees against real repositories made with the git CLI, which is also the oracle:
//! `git worktree list --porcelain`, `git log --format=%(trailers…)`, `git merge-tree
//! --write-tree`, `git fsck --strict`. Every test also checks that the user's checkout
//! (HEAD, index, working tree, with changes of their own in both) is left as it was.

use std::path::Path;
use std::process::Output;

use super::*;
use tlv4_core::model::{Event, EventKind, TaskStatus};

/// A throw-away repository with a session started on it.
struct TestRepo {
    dir: tempfile::TempDir,
    store: Store,
    sid: SessionId,
    /// The session tip right after the start.
    tip: ObjectId,
    /// What the user's checkout looked like before the test did anything.
    user_view: String,
}

fn git_output(dir: &Path, args: &[&str]) -> Output {
    crate::testutil::git_command(dir)
        .args(args)
        .output()
        .expect("git runs")
}

/// Runs git in `dir` and returns its stdout, trimmed; fails the test when git fails.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = git_output(dir, args);
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Git on the registered worktree's own admin folder, going around the checkout's private git
/// directory (see `pool::Lease::private_git`): what an agent without a sandbox could do.
fn admin_git(repo: &TestRepo, checkout: &Path, args: &[&str]) -> String {
    let admin = super::admin_dir_of(&repo.common_dir(), checkout).expect("registered");
    let admin = admin.to_str().unwrap().to_owned();
    let tree = checkout.to_str().unwrap().to_owned();
    git(
        checkout,
        &[&["--git-dir", &admin, "--work-tree", &tree], args].concat(),
    )
}

fn write(dir: &Path, path: &str, bytes: impl AsRef<[u8]>) {
    let full = dir.join(path);
    std::fs::create_dir_all(full.parent().expect("a file has a parent")).unwrap();
    std::fs::write(full, bytes).unwrap();
}

fn id(s: &str) -> TaskId {
    s.parse().expect("a task id")
}

impl TestRepo {
    /// A repository with a few files, a `.gitignore`, an `impl-only` session, and changes of
    /// the user's own: one staged, one unstaged, one untracked.
    fn new() -> TestRepo {
        let dir = tempfile::tempdir().expect("a temp dir");
        let p = dir.path();
        git(p, &["init", "-q", "-b", "main"]);
        git(p, &["config", "user.name", "t"]);
        git(p, &["config", "user.email", "t@t"]);
        write(p, "src/app.py", "def main():\n    return 1\n");
        write(p, "src/util.py", "def util():\n    return 2\n");
        write(p, "README.md", "# app\n\nA small app.\n");
        write(p, "old.txt", "to be deleted\n");
        write(p, ".gitignore", "*.log\nbuild/\n");
        git(p, &["add", "-A"]);
        git(p, &["commit", "-q", "-m", "base"]);
        let store = Store::from_repo(gix::open(p).expect("open")).expect("a store");
        let sid = crate::testutil::start_session(
            &store,
            "add a health check",
            "impl-only",
            &[
                ("IMPL-001", "executor"),
                ("TEST-001", "tester"),
                ("REVIEW-001", "reviewer"),
            ],
        );
        let tip = store.tip(&sid).expect("a tip");
        write(
            p,
            "src/util.py",
            "def util():\n    return 3  # staged by the user\n",
        );
        git(p, &["add", "src/util.py"]);
        write(p, "README.md", "# app\n\nEdited by the user, not staged.\n");
        write(p, "scratch.txt", "the user's own untracked file\n");
        let mut repo = TestRepo {
            dir,
            store,
            sid,
            tip,
            user_view: String::new(),
        };
        repo.user_view = repo.user_view();
        repo
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn git(&self, args: &[&str]) -> String {
        git(self.path(), args)
    }

    fn git_output(&self, args: &[&str]) -> Output {
        git_output(self.path(), args)
    }

    /// The repository's git directory.
    fn common_dir(&self) -> PathBuf {
        self.path().join(".git")
    }

    /// HEAD, the index and the working tree of the user's checkout, as text.
    fn user_view(&self) -> String {
        let read = |f: &str| std::fs::read_to_string(self.path().join(f)).unwrap_or_default();
        [
            self.git(&["symbolic-ref", "HEAD"]),
            self.git(&["rev-parse", "HEAD"]),
            self.git(&["ls-files", "-s"]),
            self.git(&["status", "--porcelain=v1", "--untracked-files=all"]),
            self.git(&["diff"]),
            self.git(&["diff", "--cached"]),
            read("README.md"),
            read("src/util.py"),
            read("scratch.txt"),
        ]
        .join("\n--\n")
    }

    /// Fails unless the user's checkout is as it was and `git fsck --strict` is clean.
    fn assert_untouched_and_sound(&self) {
        assert_eq!(
            self.user_view(),
            self.user_view,
            "the user's checkout changed"
        );
        let fsck = git_output(
            self.path(),
            &["fsck", "--strict", "--no-dangling", "--no-progress"],
        );
        assert!(
            fsck.status.success() && fsck.stdout.is_empty(),
            "fsck: {}{}",
            String::from_utf8_lossy(&fsck.stdout),
            String::from_utf8_lossy(&fsck.stderr)
        );
    }

    fn worktree(&self, task: &str) -> TaskWorktree {
        TaskWorktree::create(&self.store, &self.sid, &id(task), self.tip).expect("a worktree")
    }

    /// The `git worktree list --porcelain` record of the worktree on `branch`, if any.
    fn listed(&self, branch: &str) -> Option<String> {
        self.git(&["worktree", "list", "--porcelain"])
            .split("\n\n")
            .find(|rec| rec.lines().any(|l| l == format!("branch {branch}")))
            .map(str::to_owned)
    }

    /// Whether the checkout at `path` was given back to the pool: detached, locked idle.
    fn released(&self, path: &Path) -> bool {
        let want = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
        self.git(&["worktree", "list", "--porcelain"])
            .split("\n\n")
            .find(|rec| {
                rec.lines()
                    .next()
                    .and_then(|l| l.strip_prefix("worktree "))
                    .is_some_and(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.into()) == want)
            })
            .is_some_and(|rec| {
                rec.lines().any(|l| l == "detached")
                    && rec
                        .lines()
                        .any(|l| l == format!("locked {}", pool::IDLE_REASON))
            })
    }

    /// The worktrees that are neither the main one nor idle in the pool.
    fn busy_worktrees(&self) -> usize {
        self.git(&["worktree", "list", "--porcelain"])
            .split("\n\n")
            .skip(1)
            .filter(|rec| {
                !rec.lines()
                    .any(|l| l == format!("locked {}", pool::IDLE_REASON))
            })
            .count()
    }

    fn trailer(&self, rev: &str, key: &str) -> String {
        self.git(&[
            "log",
            "-1",
            &format!("--format=%(trailers:key={key},valueonly)"),
            rev,
        ])
    }

    fn files_at(&self, rev: &str) -> Vec<String> {
        self.git(&["ls-tree", "-r", "--name-only", rev])
            .lines()
            .map(str::to_owned)
            .collect()
    }

    fn show(&self, rev: &str, path: &str) -> String {
        self.git(&["show", &format!("{rev}:{path}")])
    }

    /// Records a clean merge of `task_tip` as the completion event of `task`.
    fn merge_event(&self, task: &str, task_tip: ObjectId, tree: ObjectId) -> ObjectId {
        let task = id(task);
        let written = self
            .store
            .transact(&self.sid, |txn| {
                txn.merge(task_tip, tree);
                let t = txn.state.task_mut(&task)?;
                t.status = TaskStatus::Completed;
                let t = t.clone();
                Ok(Some(Event::task(
                    EventKind::TaskCompleted,
                    &t,
                    format!("merged {task_tip}"),
                )))
            })
            .expect("the merge event is written")
            .expect("an event");
        written.commit
    }
}

#[test]
fn a_snapshot_is_one_commit_with_trailers_and_remove_leaves_only_the_branch() {
    let repo = TestRepo::new();
    let wt = repo.worktree("IMPL-001");
    let branch = task_ref(&repo.sid, &id("IMPL-001"));
    assert_eq!(branch, format!("refs/heads/tlv4/{}.IMPL-001", repo.sid));
    let record = repo.listed(&branch).expect("the worktree is registered");
    assert!(
        record.lines().any(|l| l
            == format!(
                "locked {} ({} IMPL-001)",
                tlv4_core::git::lock_reason(),
                repo.sid
            )),
        "{record}"
    );
    let listed_path = record
        .lines()
        .next()
        .unwrap()
        .trim_start_matches("worktree ");
    assert_eq!(
        std::fs::canonicalize(listed_path).unwrap(),
        std::fs::canonicalize(wt.path()).unwrap()
    );
    // Never in the user's working tree: in the pool (unit tests keep it in the git
    // directory, the temporary repository's own; see `pool::checkouts_home`).
    assert!(
        wt.path()
            .starts_with(repo.path().join(".git/tlv4/checkouts"))
    );
    assert_eq!(repo.git(&["rev-parse", &branch]), repo.tip.to_string());
    // The worker sees the session's pipeline folder.
    assert!(
        wt.path()
            .join(format!(".tlv4/sessions/{}/session.toml", repo.sid))
            .exists()
    );

    write(wt.path(), "src/app.py", "def main():\n    return 42\n");
    write(
        wt.path(),
        "src/health.py",
        "def health():\n    return 'ok'\n",
    );
    let binary: Vec<u8> = (0..=255u8).chain([0, 0, 255, 13, 10]).collect();
    write(wt.path(), "assets/logo.bin", &binary);
    std::fs::remove_file(wt.path().join("old.txt")).unwrap();
    std::os::unix::fs::symlink("src/app.py", wt.path().join("app-link.py")).unwrap();

    let snap = wt.snapshot(&SnapshotLimits::default()).expect("a snapshot");
    let commit = snap.commit.expect("a commit");
    let changed: Vec<(&str, ChangeKind)> = snap
        .changed
        .iter()
        .map(|c| (c.path.as_str(), c.kind))
        .collect();
    assert_eq!(
        changed,
        [
            ("app-link.py", ChangeKind::Added),
            ("assets/logo.bin", ChangeKind::Added),
            ("old.txt", ChangeKind::Deleted),
            ("src/app.py", ChangeKind::Modified),
            ("src/health.py", ChangeKind::Added),
        ]
    );
    assert!(snap.ignored.is_empty());
    let c = commit.to_string();
    assert_eq!(repo.git(&["rev-parse", &branch]), c, "the branch holds it");
    assert_eq!(
        repo.git(&["rev-parse", &format!("{c}^")]),
        repo.tip.to_string()
    );
    assert_eq!(
        repo.git(&["rev-list", "--count", &format!("{}..{c}", repo.tip)]),
        "1"
    );
    assert_eq!(
        repo.git(&["log", "-1", "--format=%s", &c]),
        "IMPL-001: snapshot (executor)"
    );
    assert_eq!(repo.trailer(&c, "Tlv4-Session"), repo.sid.as_str());
    assert_eq!(repo.trailer(&c, "Tlv4-Task"), "IMPL-001");
    assert_eq!(repo.trailer(&c, "Tlv4-Event"), "task_snapshot");
    assert_eq!(repo.trailer(&c, "Tlv4-Attempt"), "0");
    assert_eq!(
        repo.git(&["log", "-1", "--format=%an <%ae>|%cn <%ce>", &c]),
        "t <t@t>|t <t@t>"
    );
    assert_eq!(
        repo.git(&["diff-tree", "--no-commit-id", "-r", "--name-status", &c]),
        "A\tapp-link.py\nA\tassets/logo.bin\nD\told.txt\nM\tsrc/app.py\nA\tsrc/health.py"
    );
    assert!(
        repo.git(&["ls-tree", &c, "app-link.py"])
            .starts_with("120000 ")
    );
    let blob = git_output(
        repo.path(),
        &["cat-file", "blob", &format!("{c}:assets/logo.bin")],
    );
    assert_eq!(blob.stdout, binary, "binary files are taken byte for byte");
    assert!(repo.listed(&branch).is_some(), "still there until removed");

    let path = wt.path().to_owned();
    wt.remove().expect("removed");
    assert_eq!(repo.listed(&branch), None);
    assert!(repo.released(&path), "given back to the pool, detached");
    assert_eq!(repo.busy_worktrees(), 0, "no worktree left in use");
    assert_eq!(repo.git(&["rev-parse", &branch]), c, "the branch stays");
    repo.assert_untouched_and_sound();
}

#[test]
fn pipeline_folder_and_ignored_files_are_left_out_and_no_change_makes_no_commit() {
    let repo = TestRepo::new();
    let wt = repo.worktree("IMPL-001");
    let session_toml = format!(".tlv4/sessions/{}/session.toml", repo.sid);
    write(wt.path(), &session_toml, "status = \"hacked\"\n");
    write(
        wt.path(),
        ".tlv4/sessions/evil/notes.md",
        "written by the worker\n",
    );
    write(wt.path(), "debug.log", "ignored by .gitignore\n");
    write(wt.path(), "build/out.o", "ignored directory\n");

    let none = wt.snapshot(&SnapshotLimits::default()).expect("a snapshot");
    assert_eq!(none.commit, None, "only .tlv4 and ignored files changed");
    assert!(none.changed.is_empty());
    assert_eq!(
        none.ignored,
        [
            session_toml.clone(),
            ".tlv4/sessions/evil/notes.md".to_owned()
        ]
    );
    assert_eq!(
        repo.git(&["rev-parse", wt.branch()]),
        repo.tip.to_string(),
        "no commit"
    );

    write(wt.path(), "src/app.py", "def main():\n    return 2\n");
    let snap = wt.snapshot(&SnapshotLimits::default()).expect("a snapshot");
    let c = snap.commit.expect("a commit").to_string();
    assert_eq!(snap.changed.len(), 1);
    assert_eq!(snap.ignored.len(), 2);
    assert_eq!(
        repo.git(&["diff-tree", "--no-commit-id", "-r", "--name-only", &c]),
        "src/app.py"
    );
    assert_eq!(
        repo.show(&c, &session_toml),
        repo.show(&repo.tip.to_string(), &session_toml),
        "the pipeline folder is the session's"
    );
    let files = repo.files_at(&c);
    for left_out in ["debug.log", "build/out.o", ".tlv4/sessions/evil/notes.md"] {
        assert!(
            !files.contains(&left_out.to_owned()),
            "{left_out} was committed"
        );
    }
    assert!(
        repo.git(&["log", "-1", "--format=%b", &c])
            .contains("Left out: 2 change(s) under .tlv4/")
    );
    wt.remove().expect("removed");
    repo.assert_untouched_and_sound();
}

#[test]
fn hostile_paths_are_refused_by_name_and_rule_and_the_rest_is_kept_under_a_run_ref() {
    let repo = TestRepo::new();
    let wt = repo.worktree("IMPL-001");
    let p = wt.path().to_owned();
    write(&p, "src/app.py", "def main():\n    return 5\n");
    std::os::unix::fs::symlink("../escape", p.join("escape")).unwrap();
    std::os::unix::fs::symlink("../../../../outside", p.join("src/deep")).unwrap();
    std::os::unix::fs::symlink("/etc", p.join("etc")).unwrap();
    std::os::unix::fs::symlink("..", p.join("src/up")).unwrap();
    std::os::unix::fs::symlink("src/up/..", p.join("chain")).unwrap();
    // A nested repository, and a `.git` directory and file that git itself skips silently.
    git(&p.join("src"), &["init", "-q", "vendor"]);
    write(&p, "src/vendor/lib.c", "int x;\n");
    write(&p, "lib/.git/config", "[core]\n");
    write(&p, "lib/code.py", "x = 1\n");
    write(&p, "docs/.git", "gitdir: /somewhere/else\n");
    write(&p, "docs/guide.md", "# guide\n");
    write(&p, "big.dat", vec![b'x'; 4096]);

    let limits = SnapshotLimits {
        max_file_bytes: 4000,
        ..SnapshotLimits::default()
    };
    let snap = wt.snapshot(&limits).expect("a refused snapshot");
    assert_eq!(snap.commit, None, "nothing on the task branch");
    let refused: Vec<String> = snap.refused.iter().map(ToString::to_string).collect();
    let refused = refused.join("\n");
    for expected in [
        "`escape` is a symlink to `../escape`, which resolves outside the worktree",
        "`src/deep` is a symlink to `../../../../outside`, which resolves outside",
        "`etc` is a symlink to the absolute path `/etc`",
        "`chain` is a symlink to `src/up/..`, which resolves outside",
        "`src/vendor` is a nested git repository",
        "`lib/.git` is a `.git` below the root of the worktree",
        "`docs/.git` is a `.git` below the root of the worktree",
        "`big.dat` is 4096 bytes, more than the limit of 4000 bytes per file",
    ] {
        assert!(
            refused.contains(expected),
            "missing {expected:?} in:\n{refused}"
        );
    }
    assert_eq!(snap.refused.len(), 8, "{refused}");
    for fine in ["src/app.py", "src/up"] {
        assert!(
            !refused.contains(&format!("`{fine}`")),
            "{fine} is refused: {refused}"
        );
    }
    let inspection = wt.inspect(&limits).expect("inspected");
    assert_eq!(inspection.rejected, snap.refused);
    assert!(inspection.rejected.iter().any(|r| r.path == "etc"
        && r.rule
            == Rule::SymlinkOutside {
                target: "/etc".into()
            }));
    assert_eq!(
        repo.git(&["rev-parse", wt.branch()]),
        repo.tip.to_string(),
        "the branch did not move"
    );
    // What passes the checks is kept, on the base, under the attempt's run ref; files beside
    // a planted `.git` are not taken.
    let kept = snap.kept.clone().expect("kept");
    assert_eq!(kept.name, format!("refs/tlv4/runs/{}/IMPL-001/1", repo.sid));
    let k = kept.commit.to_string();
    assert_eq!(repo.git(&["rev-parse", &kept.name]), k);
    assert_eq!(
        repo.git(&["rev-parse", &format!("{k}^")]),
        repo.tip.to_string()
    );
    assert_eq!(
        repo.git(&["diff-tree", "--no-commit-id", "-r", "--name-only", &k]),
        "src/app.py\nsrc/up"
    );
    assert_eq!(
        repo.git(&["log", "-1", "--format=%s", &k]),
        "IMPL-001: refused snapshot (executor)"
    );
    assert_eq!(repo.trailer(&k, "Tlv4-Event"), "task_snapshot_refused");
    assert!(
        repo.git(&["log", "-1", "--format=%b", &k])
            .contains("`big.dat` is 4096 bytes"),
    );
    // Not even staged: the big file's content never reached the object database.
    let big = git(&p, &["hash-object", "big.dat"]);
    assert!(
        !git_output(repo.path(), &["cat-file", "-e", &big])
            .status
            .success()
    );

    // Once the worker's mess is gone, the rest is taken.
    for f in ["escape", "src/deep", "etc", "chain", "big.dat", "docs/.git"] {
        std::fs::remove_file(p.join(f)).unwrap();
    }
    std::fs::remove_dir_all(p.join("src/vendor")).unwrap();
    std::fs::remove_dir_all(p.join("lib/.git")).unwrap();
    let snap = wt.snapshot(&limits).expect("a snapshot");
    assert!(snap.refused.is_empty());
    let c = snap.commit.expect("a commit").to_string();
    assert_eq!(
        repo.git(&["diff-tree", "--no-commit-id", "-r", "--name-only", &c]),
        "docs/guide.md\nlib/code.py\nsrc/app.py\nsrc/up"
    );
    assert_eq!(wt.remove().expect("removed"), None, "all recorded");
    assert_eq!(
        repo.git(&["rev-parse", &kept.name]),
        k,
        "the kept ref stays"
    );
    repo.assert_untouched_and_sound();
}

#[test]
fn too_many_files_refuse_the_snapshot_and_are_kept() {
    let repo = TestRepo::new();
    let wt = repo.worktree("IMPL-001");
    for i in 0..6 {
        write(wt.path(), &format!("gen/f{i}.txt"), format!("{i}\n"));
    }
    let limits = SnapshotLimits {
        max_files: 5,
        ..SnapshotLimits::default()
    };
    let snap = wt.snapshot(&limits).expect("refused");
    let refused: Vec<String> = snap.refused.iter().map(ToString::to_string).collect();
    assert_eq!(
        refused,
        ["6 files changed, more than the limit of 5 per snapshot"]
    );
    assert_eq!(repo.git(&["rev-parse", wt.branch()]), repo.tip.to_string());
    let kept = snap.kept.expect("kept");
    assert_eq!(
        repo.git(&["ls-tree", "--name-only", &format!("{}:gen", kept.name)])
            .lines()
            .count(),
        6,
        "every file is kept under the run ref"
    );
    let snap = wt
        .snapshot(&SnapshotLimits {
            max_files: 6,
            ..limits
        })
        .expect("six are fine");
    assert_eq!(snap.changed.len(), 6);
    assert!(snap.refused.is_empty() && snap.commit.is_some());
    assert_eq!(SnapshotLimits::default().max_file_bytes, 10 * 1024 * 1024);
    assert_eq!(SnapshotLimits::default().max_files, 5000);
    wt.remove().expect("removed");
    repo.assert_untouched_and_sound();
}

#[test]
fn generated_trees_are_left_out_unless_the_base_has_them() {
    let repo = TestRepo::new();
    // The project's own `dist/` is the project's: new files in it are taken.
    let wt = repo.worktree("IMPL-001");
    let p = wt.path().to_owned();
    write(&p, "src/app.js", "module.exports = 1;\n");
    for i in 0..40 {
        write(&p, &format!("node_modules/pkg{i}/index.js"), "x\n");
    }
    // A package with a repository of its own inside: left out, not refused.
    git(&p.join("node_modules"), &["init", "-q", "gitdep"]);
    write(&p, "node_modules/gitdep/a.js", "y\n");
    write(&p, "src/__pycache__/app.cpython-312.pyc", "bytecode");
    write(&p, "web/target/debug/out", "binary");
    let limits = SnapshotLimits {
        max_files: 10,
        ..SnapshotLimits::default()
    };
    let snap = wt.snapshot(&limits).expect("a snapshot");
    assert!(snap.refused.is_empty(), "{:?}", snap.refused);
    let left: Vec<String> = snap.left_out.iter().map(ToString::to_string).collect();
    assert_eq!(
        left,
        [
            "node_modules/ (41 files)",
            "src/__pycache__/ (1 files)",
            "web/target/ (1 files)"
        ]
    );
    let c = snap.commit.expect("a commit").to_string();
    assert_eq!(
        repo.git(&["diff-tree", "--no-commit-id", "-r", "--name-only", &c]),
        "src/app.js"
    );
    assert!(
        repo.git(&["log", "-1", "--format=%b", &c]).contains(
            "Left out as generated: node_modules/ (41 files), src/__pycache__/ (1 files)"
        )
    );
    assert_eq!(wt.remove().expect("removed"), None);

    // A `target/` the base has (here: from the first snapshot) is not generated; with an
    // empty list nothing is.
    let wt = repo.worktree("IMPL-002").with_run("executor", 1);
    let p = wt.path().to_owned();
    write(&p, "target/keep.txt", "the project's own\n");
    git(&p, &["add", "target/keep.txt"]);
    git(&p, &["commit", "-q", "-m", "a target dir of the project's"]);
    let left = wt.inspect(&SnapshotLimits::default()).unwrap().left_out;
    assert!(
        left.iter().any(|l| l.dir == "target/"),
        "new to the base, even committed by the worker: {left:?}"
    );
    let none = SnapshotLimits {
        leave_out: Vec::new(),
        ..SnapshotLimits::default()
    };
    let snap = wt.snapshot(&none).unwrap();
    assert!(snap.left_out.is_empty());
    let first = snap.commit.expect("a commit");
    write(&p, "target/new.txt", "x\n");
    write(&p, "dist/bundle.js", "x\n");
    let snap = wt.snapshot(&SnapshotLimits::default()).unwrap();
    assert_eq!(snap.left_out.len(), 1, "{:?}", snap.left_out);
    assert_eq!(snap.left_out[0].dir, "dist/");
    let second = snap.commit.expect("a commit").to_string();
    assert_eq!(
        repo.git(&["rev-parse", &format!("{second}^")]),
        first.to_string()
    );
    assert_eq!(
        repo.git(&["diff-tree", "--no-commit-id", "-r", "--name-only", &second]),
        "target/new.txt"
    );
    let snap = wt.snapshot(&none).unwrap();
    assert!(snap.left_out.is_empty());
    let c = snap.commit.expect("a commit").to_string();
    assert_eq!(
        repo.git(&["diff-tree", "--no-commit-id", "-r", "--name-only", &c]),
        "dist/bundle.js"
    );
    wt.remove().unwrap();
    repo.assert_untouched_and_sound();
}

#[test]
fn commits_and_staging_by_the_worker_become_one_snapshot_without_its_tlv4_changes() {
    let repo = TestRepo::new();
    let wt = repo.worktree("IMPL-001").with_run("executor", 3);
    let p = wt.path().to_owned();
    write(&p, "src/a.py", "a = 1\n");
    write(&p, ".tlv4/sessions/sneaky.md", "committed by the worker\n");
    git(&p, &["add", "-A"]);
    git(&p, &["commit", "-q", "-m", "worker commit 1"]);
    write(&p, "src/b.py", "b = 2\n");
    git(&p, &["add", "-A"]);
    git(&p, &["commit", "-q", "-m", "worker commit 2"]);
    write(&p, "src/c.py", "c = 3\n");
    write(&p, ".tlv4/staged.md", "staged by the worker\n");
    git(&p, &["add", ".tlv4/staged.md", "src/c.py"]);

    let snap = wt.snapshot(&SnapshotLimits::default()).expect("a snapshot");
    let c = snap.commit.expect("a commit").to_string();
    assert_eq!(
        repo.git(&["rev-parse", &format!("{c}^")]),
        repo.tip.to_string()
    );
    assert_eq!(
        repo.git(&["log", "-1", "--format=%s", &c]),
        "IMPL-001: snapshot (executor)"
    );
    assert_eq!(repo.trailer(&c, "Tlv4-Attempt"), "3");
    assert_eq!(
        repo.git(&["diff-tree", "--no-commit-id", "-r", "--name-only", &c]),
        "src/a.py\nsrc/b.py\nsrc/c.py"
    );
    assert_eq!(
        snap.ignored,
        [".tlv4/sessions/sneaky.md", ".tlv4/staged.md"]
    );
    wt.remove().expect("removed");
    repo.assert_untouched_and_sound();
}

#[test]
fn a_worker_that_leaves_its_branch_is_refused_and_its_work_kept() {
    let repo = TestRepo::new();
    let wt = repo.worktree("IMPL-001");
    write(wt.path(), "src/a.py", "a = 1\n");
    admin_git(&repo, wt.path(), &["switch", "-q", "--detach"]);
    let snap = wt.snapshot(&SnapshotLimits::default()).expect("refused");
    let refused: Vec<String> = snap.refused.iter().map(ToString::to_string).collect();
    assert_eq!(refused.len(), 1);
    assert!(
        refused[0].contains("`HEAD` was moved off the task branch"),
        "{refused:?}"
    );
    assert_eq!(repo.git(&["rev-parse", wt.branch()]), repo.tip.to_string());
    let kept = snap.kept.expect("kept");
    assert_eq!(repo.show(&kept.name, "src/a.py"), "a = 1");
    let path = wt.path().to_owned();
    drop(wt);
    assert!(repo.released(&path), "recorded, so given back to the pool");
    assert_eq!(repo.show(&kept.name, "src/a.py"), "a = 1");
    repo.assert_untouched_and_sound();
}

#[test]
fn an_agents_commits_land_in_its_own_git_directory_and_the_snapshot_names_them() {
    let repo = TestRepo::new();
    let branch = task_ref(&repo.sid, &id("IMPL-001"));
    let wt = repo.worktree("IMPL-001");
    let p = wt.path().to_owned();
    // The checkout's git sees the task branch, the user's branches and the history.
    assert_eq!(
        git(&p, &["symbolic-ref", "HEAD"]).trim(),
        branch,
        "on the task branch"
    );
    assert_eq!(
        git(&p, &["rev-parse", "main"]).trim(),
        repo.git(&["rev-parse", "main"])
    );
    assert!(
        git(&p, &["status", "--porcelain"]).is_empty(),
        "a clean status"
    );
    write(&p, "src/a.py", "a = 1\n");
    git(&p, &["add", "-A"]);
    git(&p, &["commit", "-q", "-m", "add a"]);
    let mine = git(&p, &["rev-parse", "HEAD"]).trim().to_owned();
    assert_eq!(repo.git(&["rev-parse", &branch]), repo.tip.to_string());
    assert!(
        !repo.git_output(&["cat-file", "-e", &mine]).status.success(),
        "the repository has no object of the agent's"
    );
    let snap = wt.snapshot(&SnapshotLimits::default()).expect("taken");
    let commit = snap.commit.expect("a snapshot");
    assert_eq!(repo.show(&commit.to_string(), "src/a.py"), "a = 1");
    let message = repo.git(&["log", "-1", "--format=%B", &commit.to_string()]);
    assert!(
        message.contains(&format!(
            "Commits the agent made (their changes are in this snapshot):\n  {} add a\n",
            &mine[..7]
        )),
        "{message}"
    );
    assert_eq!(
        repo.trailer(&commit.to_string(), "Tlv4-Event"),
        "task_snapshot"
    );
    wt.remove().expect("removed");
    repo.assert_untouched_and_sound();
}

#[test]
fn the_private_git_directory_has_the_packed_refs_header_git_writes() {
    let repo = TestRepo::new();
    repo.git(&["tag", "-a", "v1", "-m", "a release", "main"]);
    let wt = repo.worktree("IMPL-001");
    let p = wt.path().to_owned();
    let dotgit = std::fs::read_to_string(p.join(".git")).expect("a .git file");
    let own = PathBuf::from(
        dotgit
            .trim()
            .strip_prefix("gitdir: ")
            .expect("a gitdir line"),
    );
    let packed = std::fs::read_to_string(own.join("packed-refs")).expect("packed-refs");
    // "peeled" in the header: GitPython (Aider's git) refuses the file without it.
    assert_eq!(
        packed.lines().next(),
        Some("# pack-refs with: peeled fully-peeled sorted "),
        "{packed}"
    );
    // "fully-peeled" holds with no `^` line: the annotated tag is recorded peeled.
    assert!(!packed.contains('^'), "{packed}");
    assert_eq!(
        git(&p, &["rev-parse", "v1^{commit}"]).trim(),
        repo.git(&["rev-parse", "main"]).trim()
    );
    assert!(
        !git_output(&p, &["rev-parse", "--verify", "-q", "v1^{tag}"])
            .status
            .success(),
        "a peeled tag, as its header says"
    );
    wt.remove().expect("removed");
    repo.assert_untouched_and_sound();
}

#[test]
fn remove_and_drop_keep_unrecorded_work_under_a_run_ref_first() {
    let repo = TestRepo::new();
    let branch = task_ref(&repo.sid, &id("IMPL-001"));
    let wt = repo.worktree("IMPL-001");
    let path = wt.path().to_owned();
    write(&path, "src/a.py", "precious = True\n");
    let kept = wt.remove().expect("removed").expect("kept first");
    assert_eq!(kept.name, format!("refs/tlv4/runs/{}/IMPL-001/1", repo.sid));
    assert_eq!(repo.show(&kept.name, "src/a.py"), "precious = True");
    assert_eq!(
        repo.git(&["log", "-1", "--format=%s", &kept.name]),
        "IMPL-001: unrecorded work (executor)"
    );
    assert_eq!(repo.trailer(&kept.name, "Tlv4-Event"), "task_work_kept");
    assert_eq!(repo.listed(&branch), None);
    assert!(repo.released(&path));

    // Dropped (an error path, a panic): the same, under the next free ref.
    let wt = repo.worktree("IMPL-001");
    let path = wt.path().to_owned();
    write(&path, "src/a.py", "dropped = True\n");
    drop(wt);
    assert_eq!(repo.listed(&branch), None, "drop gives the checkout back");
    assert!(repo.released(&path));
    let next = format!("refs/tlv4/runs/{}/IMPL-001/2", repo.sid);
    assert_eq!(repo.show(&next, "src/a.py"), "dropped = True");
    assert_eq!(
        repo.git(&["rev-parse", &branch]),
        repo.tip.to_string(),
        "drop keeps the branch"
    );

    // When even that cannot be recorded, the checkout stays, registered and locked.
    let wt = repo.worktree("IMPL-001");
    let path = wt.path().to_owned();
    write(&path, "src/a.py", "kept in place = True\n");
    let admin = super::admin_dir_of(&repo.common_dir(), &path).expect("registered");
    std::fs::write(Path::new(&admin).join("HEAD"), "garbage\n").unwrap();
    std::fs::remove_file(Path::new(&admin).join("index")).ok();
    // A status that cannot run (the worktree's HEAD is not a ref or commit).
    let err = wt.remove().expect_err("kept in place").to_string();
    assert!(err.contains(&path.display().to_string()), "{err}");
    let record = repo.git(&["worktree", "list", "--porcelain"]);
    assert!(record.contains("locked git-tlv4 pid "), "{record}");
    assert!(path.join("src/a.py").exists(), "the work is kept");
    std::fs::write(Path::new(&admin).join("HEAD"), format!("ref: {branch}\n")).unwrap();
    let p = path.to_str().unwrap();
    repo.git(&["worktree", "unlock", p]);
    repo.git(&["worktree", "remove", "--force", p]);
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
    repo.assert_untouched_and_sound();
}

#[test]
fn an_existing_branch_is_reused_only_when_it_builds_on_the_session_tip() {
    let repo = TestRepo::new();
    let wt = repo.worktree("IMPL-001");
    write(wt.path(), "src/a.py", "a = 1\n");
    let first = wt
        .snapshot(&SnapshotLimits::default())
        .unwrap()
        .commit
        .unwrap();
    wt.remove().unwrap();

    let again = repo.worktree("IMPL-001");
    assert_eq!(again.base(), first, "resumes on the earlier snapshot");
    assert!(again.path().join("src/a.py").exists());
    let second = again.snapshot(&SnapshotLimits::default()).unwrap();
    assert_eq!(second.commit, None);
    again
        .remove()
        .expect("the branch points at the base: nothing lost");

    let branch = task_ref(&repo.sid, &id("IMPL-001"));
    // A branch whose commits the session has already (merged earlier) starts at the tip.
    repo.git(&["update-ref", &branch, "main"]);
    let moved = TaskWorktree::create(&repo.store, &repo.sid, &id("IMPL-001"), repo.tip).unwrap();
    assert_eq!(moved.base(), repo.tip);
    assert_eq!(repo.git(&["rev-parse", &branch]), repo.tip.to_string());
    drop(moved);

    // A branch with commits the session does not have is not moved under anyone.
    let side = repo.git(&[
        "commit-tree",
        "main^{tree}",
        "-p",
        "main",
        "-m",
        "side work",
    ]);
    repo.git(&["update-ref", &branch, &side]);
    let err = TaskWorktree::create(&repo.store, &repo.sid, &id("IMPL-001"), repo.tip)
        .err()
        .expect("the side commit does not build on the session tip")
        .to_string();
    assert!(err.contains("does not build on the session tip"), "{err}");
    assert_eq!(repo.git(&["rev-parse", &branch]), side);

    // Before a new attempt, such work is set aside under a ref of its own and the branch
    // starts at the tip.
    let kept = crate::worktree::set_aside(&repo.store, &repo.sid, &id("IMPL-001"), repo.tip, 2)
        .unwrap()
        .expect("set aside");
    assert_eq!(kept, format!("refs/tlv4/runs/{}/IMPL-001/1", repo.sid));
    assert_eq!(repo.git(&["rev-parse", &kept]), side);
    assert_eq!(repo.git(&["rev-parse", &branch]), repo.tip.to_string());
    repo.assert_untouched_and_sound();
}

#[test]
fn clean_merges_match_git_merge_tree_and_become_merge_events() {
    let repo = TestRepo::new();
    let a = repo.worktree("IMPL-001");
    write(
        a.path(),
        "src/app.py",
        "def main():\n    return 1\n\n\ndef health():\n    return 'ok'\n",
    );
    let a_tip = a
        .snapshot(&SnapshotLimits::default())
        .unwrap()
        .commit
        .unwrap();
    a.remove().unwrap();
    let b = repo.worktree("TEST-001");
    write(
        b.path(),
        "tests/test_app.py",
        "def test_main():\n    assert True\n",
    );
    write(b.path(), "README.md", "# the app\n\nA small app.\n");
    let b_tip = b
        .snapshot(&SnapshotLimits::default())
        .unwrap()
        .commit
        .unwrap();
    assert_eq!(
        repo.git(&["log", "-1", "--format=%s", &b_tip.to_string()]),
        "TEST-001: snapshot (tester)"
    );
    b.remove().unwrap();

    let MergeOutcome::Clean { tree } = merge_task(&repo.store, repo.tip, a_tip).unwrap() else {
        panic!("a clean merge")
    };
    let by_git = repo.git(&[
        "merge-tree",
        "--write-tree",
        &repo.tip.to_string(),
        &a_tip.to_string(),
    ]);
    assert_eq!(tree.to_string(), by_git);
    let tip1 = repo.merge_event("IMPL-001", a_tip, tree);
    let session = session_ref_name(&repo);
    assert_eq!(repo.git(&["rev-parse", &session]), tip1.to_string());
    assert_eq!(
        repo.git(&["rev-list", "--parents", "-n", "1", &session]),
        format!("{tip1} {} {a_tip}", repo.tip),
        "a merge commit: the old tip first, the task branch second"
    );
    assert!(repo.show(&session, "src/app.py").contains("def health"));
    assert_eq!(repo.trailer(&session, "Tlv4-Event"), "task_completed");

    // The second task forked before the first was merged: a real three-way merge.
    let MergeOutcome::Clean { tree } = merge_task(&repo.store, tip1, b_tip).unwrap() else {
        panic!("a clean merge")
    };
    let by_git = repo.git(&[
        "merge-tree",
        "--write-tree",
        &tip1.to_string(),
        &b_tip.to_string(),
    ]);
    assert_eq!(tree.to_string(), by_git);
    let tip2 = repo.merge_event("TEST-001", b_tip, tree);
    assert_eq!(
        repo.git(&["rev-list", "--parents", "-n", "1", &tip2.to_string()]),
        format!("{tip2} {tip1} {b_tip}")
    );
    let t2 = tip2.to_string();
    assert!(repo.show(&t2, "src/app.py").contains("def health"));
    assert!(repo.show(&t2, "README.md").starts_with("# the app"));
    assert!(repo.files_at(&t2).contains(&"tests/test_app.py".to_owned()));
    let task_toml = format!(".tlv4/sessions/{}/tasks/TEST-001.toml", repo.sid);
    assert!(
        repo.show(&t2, &task_toml)
            .contains("status = \"completed\"")
    );
    let impl_toml = format!(".tlv4/sessions/{}/tasks/IMPL-001.toml", repo.sid);
    assert!(
        repo.show(&t2, &impl_toml)
            .contains("status = \"completed\"")
    );
    repo.assert_untouched_and_sound();
}

#[test]
fn a_conflicting_merge_names_the_path() {
    let repo = TestRepo::new();
    let a = repo.worktree("IMPL-001");
    write(a.path(), "src/app.py", "def main():\n    return 'from a'\n");
    let a_tip = a
        .snapshot(&SnapshotLimits::default())
        .unwrap()
        .commit
        .unwrap();
    a.remove().unwrap();
    let b = repo.worktree("TEST-001");
    write(b.path(), "src/app.py", "def main():\n    return 'from b'\n");
    write(b.path(), "tests/t.py", "ok = 1\n");
    let b_tip = b
        .snapshot(&SnapshotLimits::default())
        .unwrap()
        .commit
        .unwrap();
    b.remove().unwrap();

    let MergeOutcome::Clean { tree } = merge_task(&repo.store, repo.tip, a_tip).unwrap() else {
        panic!("the first merges cleanly")
    };
    let tip1 = repo.merge_event("IMPL-001", a_tip, tree);
    match merge_task(&repo.store, tip1, b_tip).unwrap() {
        MergeOutcome::Conflict { paths, detail } => {
            assert_eq!(paths, ["src/app.py"]);
            assert!(detail.starts_with("src/app.py: "), "{detail}");
        }
        other => panic!("expected a conflict, got {other:?}"),
    }
    let by_git = git_output(
        repo.path(),
        &[
            "merge-tree",
            "--write-tree",
            "--name-only",
            &tip1.to_string(),
            &b_tip.to_string(),
        ],
    );
    assert_eq!(by_git.status.code(), Some(1), "git agrees it conflicts");
    assert!(String::from_utf8_lossy(&by_git.stdout).contains("src/app.py"));
    assert_eq!(
        repo.git(&["rev-parse", &session_ref_name(&repo)]),
        tip1.to_string(),
        "nothing recorded"
    );
    repo.assert_untouched_and_sound();
}

#[test]
fn a_read_only_view_is_detached_locked_read_only_and_removed() {
    let repo = TestRepo::new();
    let view = ReadOnlyView::create(&repo.store, repo.tip).expect("a view");
    let path = view.path().to_owned();
    let records = repo.git(&["worktree", "list", "--porcelain"]);
    let record = records
        .split("\n\n")
        .find(|r| r.contains(&format!("HEAD {}", repo.tip)) && r.contains("detached"))
        .expect("a detached worktree at the session tip");
    assert!(
        record.contains(&format!(
            "locked {} (read-only view of",
            tlv4_core::git::lock_reason()
        )),
        "{record}"
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &str| {
        std::fs::symlink_metadata(path.join(p))
            .unwrap()
            .permissions()
            .mode()
    };
    for p in ["src/app.py", "README.md", "src", "."] {
        assert_eq!(mode(p) & 0o222, 0, "{p} is writable");
    }
    assert_eq!(
        std::fs::read_to_string(path.join("src/app.py")).unwrap(),
        "def main():\n    return 1\n"
    );
    view.remove().expect("removed");
    assert!(!path.exists());
    assert!(
        !repo
            .git(&["worktree", "list", "--porcelain"])
            .contains("detached")
    );

    let dropped = ReadOnlyView::create(&repo.store, repo.tip).expect("a view");
    let path = dropped.path().to_owned();
    drop(dropped);
    assert!(!path.exists());
    assert!(
        !repo
            .git(&["worktree", "list", "--porcelain"])
            .contains("detached")
    );
    repo.assert_untouched_and_sound();
}

fn session_ref_name(repo: &TestRepo) -> String {
    crate::store::session_ref(&repo.sid)
}

#[test]
fn eight_worktrees_made_and_removed_at_once_all_succeed() {
    // git reads every registered worktree while adding one; a half-made one used to fail it.
    let repo = TestRepo::new();
    let path = repo.path().to_path_buf();
    let threads: Vec<_> = (1..=8)
        .map(|i| {
            let path = path.clone();
            let sid = repo.sid.clone();
            let tip = repo.tip;
            std::thread::spawn(move || -> tlv4_core::error::Result<bool> {
                let store = Store::from_repo(gix::open(&path).expect("open")).expect("a store");
                let task = id(&format!("IMPL-{i:03}"));
                let wt = TaskWorktree::create(&store, &sid, &task, tip)?.with_run("executor", 1);
                write(wt.path(), &format!("src/t{i}.py"), "x = 1\n");
                let snap = wt.snapshot(&SnapshotLimits::default())?;
                wt.remove()?;
                Ok(snap.commit.is_some())
            })
        })
        .collect();
    for t in threads {
        assert!(
            t.join()
                .expect("no panic")
                .expect("made, snapshotted, removed")
        );
    }
    assert_eq!(repo.busy_worktrees(), 0, "every checkout back in the pool");
    repo.assert_untouched_and_sound();
}

#[test]
fn the_checkout_of_a_dead_process_is_kept_through_the_checks_and_its_branch_reset() {
    let repo = TestRepo::new();
    let branch = task_ref(&repo.sid, &id("IMPL-001"));
    let mut wt = repo.worktree("IMPL-001");
    let p = wt.path().to_owned();
    // The agent (unconfined, going around its own git directory) committed on the branch, a
    // symlink out of the worktree among it, then wrote more and a generated tree; then its
    // process died.
    write(&p, "src/a.py", "a = 1\n");
    std::os::unix::fs::symlink("/etc/passwd", p.join("leak")).unwrap();
    admin_git(&repo, &p, &["add", "-A"]);
    admin_git(&repo, &p, &["commit", "-q", "-m", "agent commit"]);
    write(&p, "src/b.py", "b = 2\n");
    write(&p, "node_modules/x/index.js", "x\n");
    wt.checkout.keep();
    drop(wt);
    assert_ne!(repo.git(&["rev-parse", &branch]), repo.tip.to_string());

    let kept = keep_abandoned(&repo.store, &p, &SnapshotLimits::default())
        .expect("kept")
        .expect("something to keep");
    assert_eq!(kept, format!("refs/tlv4/runs/{}/IMPL-001/1", repo.sid));
    assert_eq!(
        repo.git(&["diff-tree", "--no-commit-id", "-r", "--name-only", &kept]),
        "src/a.py\nsrc/b.py",
        "checked like a snapshot: no symlink out, no node_modules"
    );
    assert_eq!(
        repo.git(&["rev-parse", &format!("{kept}^")]),
        repo.tip.to_string()
    );
    assert_eq!(
        repo.git(&["rev-parse", &branch]),
        repo.tip.to_string(),
        "the unchecked commit is off the branch"
    );
    // Again: nothing new to keep.
    assert_eq!(
        keep_abandoned(&repo.store, &p, &SnapshotLimits::default()).unwrap(),
        None,
        "kept already"
    );
    tlv4_core::git::remove_worktree(repo.store.repo().common_dir(), &p).unwrap();

    // A read-only view is nobody's work.
    let mut view = ReadOnlyView::create(&repo.store, repo.tip).unwrap();
    let vp = view.path().to_owned();
    view.checkout.keep();
    drop(view);
    assert_eq!(
        keep_abandoned(&repo.store, &vp, &SnapshotLimits::default()).unwrap(),
        None
    );
    let _ = set_writable(&vp, true);
    tlv4_core::git::remove_worktree(repo.store.repo().common_dir(), &vp).unwrap();
    repo.assert_untouched_and_sound();
}

#[test]
fn what_the_worker_did_to_its_index_hides_no_change() {
    let repo = TestRepo::new();
    let wt = repo.worktree("IMPL-001");
    let p = wt.path().to_owned();
    // Same size, same second as the checkout: only the content tells the change.
    write(&p, "src/app.py", "def main():\n    return 7\n");
    write(&p, "README.md", "# app\n\nA big app.\n");
    git(&p, &["update-index", "--assume-unchanged", "src/app.py"]);
    git(&p, &["update-index", "--skip-worktree", "README.md"]);
    std::fs::write(git(&p, &["rev-parse", "--git-path", "index.lock"]), "").unwrap();
    let snap = wt.snapshot(&SnapshotLimits::default()).expect("a snapshot");
    let c = snap.commit.expect("a commit").to_string();
    assert_eq!(
        repo.git(&["diff-tree", "--no-commit-id", "-r", "--name-only", &c]),
        "README.md\nsrc/app.py"
    );
    let _ = std::fs::remove_file(p.join(git(&p, &["rev-parse", "--git-path", "index.lock"])));
    wt.remove().expect("removed");
    repo.assert_untouched_and_sound();
}
