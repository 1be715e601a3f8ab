//! `TestRepo`: a hermetic temporary repository and helpers to run `git` and `git-tlv4` in it.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_git-tlv4");

/// The exit code of a run that stopped to wait for the user (`tlv4_core::error::exit`).
pub(crate) const WAITING: i32 = tlv4_core::error::exit::WAITING;
/// The exit code of a run that stalled on failed tasks.
pub(crate) const STALLED: i32 = tlv4_core::error::exit::STALLED;

/// The path of the fake agent program `name` of `tests/fixtures/agents`.
pub(crate) fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/agents")
        .join(name)
        .display()
        .to_string()
}

/// A temporary repository with one commit, and an empty home directory.
pub(crate) struct TestRepo {
    pub dir: tempfile::TempDir,
    pub home: tempfile::TempDir,
}

impl Drop for TestRepo {
    /// The kept checkouts beside the temporary repository go with it.
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(self.pool_dir());
    }
}

/// A command with a clean, fixed environment: no user or system config, fixed dates.
pub(crate) fn hermetic(program: &str, cwd: &Path, home: &Path) -> Command {
    let mut cmd = Command::new(program);
    cmd.env_clear()
        .current_dir(cwd)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CEILING_DIRECTORIES", cwd.parent().unwrap_or(cwd))
        .env("GIT_AUTHOR_DATE", "2026-11-29T12:00:00Z")
        .env("GIT_COMMITTER_DATE", "2026-11-29T12:00:00Z")
        .env("LC_ALL", "C")
        .stdin(Stdio::null());
    cmd
}

/// Lets `cmd` find the Rust toolchain where rustup keeps it for the user running the tests,
/// which the empty home of [`hermetic`] hides (`cargo` then cannot choose a toolchain).
pub(crate) fn toolchain(cmd: &mut Command) -> &mut Command {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    for (var, dir) in [("RUSTUP_HOME", ".rustup"), ("CARGO_HOME", ".cargo")] {
        let found = std::env::var_os(var)
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(dir)).filter(|p| p.is_dir()));
        if let Some(path) = found {
            cmd.env(var, path);
        }
    }
    cmd
}

impl TestRepo {
    /// A repository with `user.name`/`user.email` set and one commit on `main`.
    pub(crate) fn new() -> TestRepo {
        let repo = TestRepo::empty();
        repo.git(&["config", "user.name", "Test User"]);
        repo.git(&["config", "user.email", "test@example.com"]);
        repo.git(&["config", "gc.autoDetach", "false"]);
        repo.write("README.md", "# sample\n");
        repo.write("src/lib.rs", "pub fn f() {}\n");
        repo.git(&["add", "-A"]);
        repo.git(&["commit", "-q", "-m", "initial"]);
        repo
    }

    /// `git init` and nothing else.
    pub(crate) fn empty() -> TestRepo {
        let repo = TestRepo {
            dir: tempfile::tempdir().unwrap(),
            home: tempfile::tempdir().unwrap(),
        };
        repo.git(&["init", "-q", "-b", "main"]);
        repo
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn write(&self, rel: &str, text: &str) -> PathBuf {
        let p = self.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        p
    }

    /// The folder of the repository's kept checkouts (its pools): beside its working tree,
    /// `<parent>/<name>.tlv4`. It may not exist yet.
    pub(crate) fn pool_dir(&self) -> PathBuf {
        let dir = self.path().canonicalize().unwrap();
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        dir.parent().unwrap().join(format!("{name}.tlv4"))
    }

    pub(crate) fn git_cmd(&self, args: &[&str]) -> Command {
        let mut c = hermetic("git", self.path(), self.home.path());
        c.args(args);
        c
    }

    /// Runs git and returns stdout, failing the test on a non-zero exit.
    pub(crate) fn git(&self, args: &[&str]) -> String {
        let out = self.git_cmd(args).output().unwrap();
        assert!(
            out.status.success(),
            "git {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    pub(crate) fn tlv4_cmd(&self, args: &[&str]) -> Command {
        self.tlv4_cmd_in(self.path(), args)
    }

    pub(crate) fn tlv4_cmd_in(&self, dir: &Path, args: &[&str]) -> Command {
        let mut c = hermetic(BIN, dir, self.home.path());
        c.args(args);
        c
    }

    pub(crate) fn tlv4(&self, args: &[&str]) -> Output {
        self.tlv4_cmd(args).output().unwrap()
    }

    /// Runs git-tlv4, asserts success, returns stdout.
    pub(crate) fn ok(&self, args: &[&str]) -> String {
        let out = self.tlv4(args);
        assert!(
            out.status.success(),
            "git tlv4 {args:?} failed ({:?}):\n{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// Runs a command that runs the pipeline and asserts it stopped with exit `code`
    /// ([`WAITING`] at a pause for the user, [`STALLED`] on failed tasks); returns stdout.
    pub(crate) fn stops(&self, args: &[&str], code: i32) -> String {
        let out = self.tlv4(args);
        assert_eq!(
            out.status.code(),
            Some(code),
            "git tlv4 {args:?}:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// Runs a command that runs the pipeline and asserts it stopped the way a run stops
    /// without an error: completed (0), waiting for the user ([`WAITING`]) or stalled
    /// ([`STALLED`]). For helpers shared by tests that then check the session themselves.
    pub(crate) fn runs(&self, args: &[&str]) -> String {
        let out = self.tlv4(args);
        assert!(
            matches!(out.status.code(), Some(0 | WAITING | STALLED)),
            "git tlv4 {args:?} failed ({:?}):\n{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// Runs git-tlv4, asserts exit `code`, returns stderr.
    pub(crate) fn fails(&self, args: &[&str], code: i32) -> String {
        let out = self.tlv4(args);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(
            out.status.code(),
            Some(code),
            "git tlv4 {args:?}: stdout {} stderr {stderr}",
            String::from_utf8_lossy(&out.stdout)
        );
        stderr
    }

    pub(crate) fn json(&self, args: &[&str]) -> serde_json::Value {
        serde_json::from_str(&self.ok(args)).unwrap()
    }

    /// Runs a read command whose `--json` is a list (`list`, `log`, `msg list`): checks its
    /// `schema` and returns the rows under `key`.
    /// `git worktree list --porcelain` without the checkouts kept idle in the tool's pool
    /// (detached, locked `git-tlv4 pool: idle`): what is left is in use or left behind.
    pub(crate) fn worktrees_in_use(&self) -> String {
        self.git(&["worktree", "list", "--porcelain"])
            .split("\n\n")
            .filter(|rec| !rec.lines().any(|l| l == "locked git-tlv4 pool: idle"))
            .collect::<Vec<_>>()
            .join("\n\n")
    }

    pub(crate) fn rows(&self, args: &[&str], key: &str) -> serde_json::Value {
        let doc = self.json(args);
        assert_eq!(doc["schema"], 1, "git tlv4 {args:?}: {doc}");
        doc[key].clone()
    }

    /// Starts a session and returns its id.
    pub(crate) fn start(&self, pipeline: &str, text: &str) -> String {
        self.ok(&["start", "--no-run", "--pipeline", pipeline, text])
            .trim()
            .to_owned()
    }

    /// `git fsck --strict` must be clean.
    pub(crate) fn fsck(&self) {
        let out = self
            .git_cmd(&["fsck", "--strict", "--no-progress"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && !stderr.contains("error"),
            "fsck failed:\n{}{stderr}",
            String::from_utf8_lossy(&out.stdout)
        );
    }

    /// Everything a failed command must not change: every ref, HEAD, the index and the
    /// working tree status.
    pub(crate) fn snapshot(&self) -> String {
        let refs = self.git(&["for-each-ref", "--format=%(refname) %(objectname)"]);
        let head = self
            .git_cmd(&["rev-parse", "HEAD"])
            .output()
            .unwrap()
            .stdout;
        let head_ref = std::fs::read_to_string(self.path().join(".git/HEAD")).unwrap_or_default();
        let index = std::fs::read(self.path().join(".git/index")).unwrap_or_default();
        let status = self.git(&["status", "--porcelain", "--ignored"]);
        format!(
            "{refs}\n{}\n{head_ref}\n{}\n{status}",
            String::from_utf8_lossy(&head),
            index.len() as u64 + index.iter().map(|&b| b as u64).sum::<u64>()
        )
    }

    pub(crate) fn trailers(&self, rev: &str, key: &str) -> Vec<String> {
        self.git(&[
            "log",
            "--first-parent",
            &format!("--format=%(trailers:key={key},valueonly)"),
            rev,
        ])
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
    }

    pub(crate) fn task(&self, sid: &str, id: &str) -> serde_json::Value {
        let status = self.json(&["--session", sid, "status", "--json"]);
        status["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["id"] == id)
            .cloned()
            .unwrap()
    }

    /// Writes `pipelines.toml` with one pipeline `wide` of `n` independent executor tasks.
    pub(crate) fn wide_pipeline(&self, n: usize) {
        let mut text = String::from(
            "schema = 1\n[role.executor]\nprefix = \"IMPL\"\ninner_loop = false\nsummary = \"x\"\n\
             [role.supervisor]\nprefix = \"CHECKPOINT\"\ninner_loop = false\ncheckpoint = true\nsummary = \"x\"\n",
        );
        let mut list = Vec::new();
        for i in 1..=n {
            text.push_str(&format!(
                "[task.IMPL-{i:03}]\nrole = \"executor\"\nphase = \"implementation\"\npriority = \"P0\"\npurpose = \"p\"\nsuccess = \"s\"\nsteps = []\nexpected = \"e\"\nconstraints = \"c\"\n"
            ));
            list.push(format!("{{ id = \"IMPL-{i:03}\" }}"));
        }
        text.push_str(&format!(
            "[pipeline.wide]\nsummary = \"wide\"\ntasks = [{}]\n",
            list.join(", ")
        ));
        self.write(".tlv4/specs/pipelines.toml", &text);
        // An override changes what runs: the user trusts it.
        self.ok(&["trust"]);
    }
}

/// A pid that is certainly not running: a child that has exited and been reaped.
pub(crate) fn dead_pid() -> u32 {
    let mut child = Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}
