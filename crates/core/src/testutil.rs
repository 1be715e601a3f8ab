//! Helpers shared by the unit tests: a hermetic `git`.

use std::path::Path;
use std::process::{Command, Output};

/// `git` in `dir`, hermetic: no system or user configuration, no git location inherited from
/// the environment (`GIT_DIR`, `GIT_WORK_TREE`, `GIT_INDEX_FILE`: a test run from a hook
/// must not write the user's repository), the identity `t <t@t>`. The one base of every
/// unit test's git.
pub fn git_command(dir: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"]);
    cmd
}

/// [`git_command`] with `args`, at a fixed date; what it printed and how it ended.
pub fn git_output(dir: &Path, args: &[&str]) -> Output {
    git_command(dir)
        .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
        .args(args)
        .output()
        .expect("git runs")
}

/// [`git_output`], failing the test on a non-zero exit; returns stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = git_output(dir, args);
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A throw-away repository on branch `main`, driven by the hermetic git of this module: the
/// one test repository of the crates' unit tests that need a plain one.
pub struct Repo {
    dir: tempfile::TempDir,
}

impl Repo {
    /// A new, empty repository in a temporary directory.
    pub fn new() -> Repo {
        let repo = Repo {
            dir: tempfile::tempdir().expect("a temp dir"),
        };
        repo.git(&["init", "-q", "-b", "main"]);
        repo
    }

    /// Its working tree.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `git ARGS` in it, at the fixed date; stdout, trimmed; fails the test when git fails.
    pub fn git(&self, args: &[&str]) -> String {
        git(self.path(), args).trim().to_owned()
    }

    /// Writes `text` to `path` in the working tree, making its folders.
    pub fn write(&self, path: &str, text: &str) {
        let p = self.path().join(path);
        std::fs::create_dir_all(p.parent().expect("a parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    }

    /// Commits everything in the working tree (even nothing) with `message`; the commit.
    pub fn commit(&self, message: &str) -> gix::ObjectId {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "--allow-empty", "-m", message]);
        self.git(&["rev-parse", "HEAD"]).parse().expect("an id")
    }

    /// The repository, opened by gix without the user's configuration.
    pub fn open(&self) -> gix::Repository {
        gix::open_opts(self.path(), gix::open::Options::isolated()).expect("opens")
    }
}

impl Default for Repo {
    fn default() -> Repo {
        Repo::new()
    }
}
