//! Running the tests: a temporary detached worktree of the session tip, and commands with a
//! timeout, stdin closed and stdout and stderr captured together.
//!
//! The worktree is a guard: it is removed (`git worktree remove --force --force`, and
//! `git worktree prune` if that failed) when dropped, so also when the run fails half-way. Each command
//! runs in its own process group, which is killed when the command ends or times out, so a
//! test that leaves a server running does not outlive the run.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// How much output is kept for parsing: the first part and the last part.
const CAPTURE_HEAD: usize = 1 << 20;
const CAPTURE_TAIL: usize = 7 << 20;

/// A temporary checkout of one commit, removed on drop.
pub struct Worktree {
    git_dir: PathBuf,
    path: PathBuf,
    // Dropped after the worktree is removed (fields drop after `Drop::drop`).
    _parent: tempfile::TempDir,
}

impl Worktree {
    /// Checks out `commit` in a new, locked, detached worktree under a temporary directory.
    pub fn add(git_dir: &Path, commit: gix::ObjectId, name: &str) -> Result<Worktree> {
        let parent = tempfile::Builder::new()
            .prefix("tlv4-test-")
            .tempdir()
            .map_err(|e| Error::io("cannot make a temporary directory for the tests", e))?;
        let path = parent.path().join(name);
        let git_dir = std::path::absolute(git_dir)
            .map_err(|e| Error::io("cannot resolve the git directory", e))?;
        let gd = git_dir.to_string_lossy().into_owned();
        let wt = path.to_string_lossy().into_owned();
        let hex = commit.to_string();
        // The reason names this process, so `resume` can clear the checkout of one that died.
        let reason = crate::git::lock_reason();
        // Hooks are the user's and may be slow or interactive; a test checkout needs none.
        crate::worktree::with_admin_lock(|| {
            crate::git::run(
                parent.path(),
                &[
                    "--git-dir",
                    &gd,
                    "-c",
                    "core.hooksPath=/dev/null",
                    "worktree",
                    "add",
                    "--lock",
                    "--reason",
                    &reason,
                    "--detach",
                    &wt,
                    &hex,
                ],
            )
        })?;
        Ok(Worktree {
            git_dir,
            path,
            _parent: parent,
        })
    }

    /// The checkout.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Worktree {
    fn drop(&mut self) {
        let gd = self.git_dir.to_string_lossy().into_owned();
        let wt = self.path.to_string_lossy().into_owned();
        let dir = self.git_dir.clone();
        crate::worktree::with_admin_lock(|| {
            // Twice `--force`: the worktree is locked while in use.
            let removed = crate::git::run(
                &dir,
                &[
                    "--git-dir",
                    &gd,
                    "worktree",
                    "remove",
                    "--force",
                    "--force",
                    &wt,
                ],
            );
            // Only when that failed: a prune racing another process's `worktree add` can
            // drop that one.
            if removed.is_err() {
                let _ = crate::git::run(&dir, &["--git-dir", &gd, "worktree", "prune"]);
            }
        });
    }
}

/// One command's run.
#[derive(Debug, Clone, Default)]
pub struct Ran {
    /// The command, as given to `sh -c`.
    pub command: String,
    /// The exit code; `None` when killed by a signal (a timeout) or not started.
    pub exit_code: Option<i32>,
    /// Whether the timeout killed it.
    pub timed_out: bool,
    /// Wall-clock time.
    pub seconds: f64,
    /// stdout and stderr interleaved (the middle dropped beyond several MiB).
    pub output: String,
    /// Why it could not start, if it could not.
    pub spawn_error: Option<String>,
}

/// Variables that would point a test's own git commands at the user's repository.
const GIT_ENV: [&str; 8] = [
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_PREFIX",
    "GIT_NAMESPACE",
];

/// Runs `command` with `sh -c` in `cwd`, stdin closed, for at most `timeout`; `env` is added
/// to the inherited environment.
pub fn run(cwd: &Path, command: &str, timeout: Duration, env: &[(String, String)]) -> Ran {
    let start = Instant::now();
    let mut ran = Ran {
        command: command.to_owned(),
        ..Ran::default()
    };
    let (mut reader, writer) = match std::io::pipe() {
        Ok(p) => p,
        Err(e) => {
            ran.spawn_error = Some(format!("cannot make a pipe: {e}"));
            return ran;
        }
    };
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(Stdio::null());
    match writer.try_clone() {
        Ok(w) => cmd.stdout(w),
        Err(e) => {
            ran.spawn_error = Some(format!("cannot make a pipe: {e}"));
            return ran;
        }
    };
    cmd.stderr(writer);
    for k in GIT_ENV {
        cmd.env_remove(k);
    }
    // No colours, no watch mode, no interactive installs.
    for (k, v) in [
        ("CI", "true"),
        ("NO_COLOR", "1"),
        ("FORCE_COLOR", "0"),
        ("CARGO_TERM_COLOR", "never"),
        ("PYTHONDONTWRITEBYTECODE", "1"),
        ("PYTHONUNBUFFERED", "1"),
        ("npm_config_yes", "false"),
    ] {
        cmd.env(k, v);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    let spawned = cmd.spawn();
    // The command holds our copies of the pipe's write end: drop them, or the reader never
    // sees the end of the output.
    drop(cmd);
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            ran.spawn_error = Some(format!("cannot run `sh -c {command}`: {e}"));
            return ran;
        }
    };
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut cap = Capture::default();
        let mut buf = [0u8; 16 * 1024];
        loop {
            match reader.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => cap.push(&buf[..n]),
            }
        }
        let _ = tx.send(cap);
    });
    let deadline = start + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() >= deadline => {
                ran.timed_out = true;
                kill_group(&mut child);
                break child.wait().ok();
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(25)),
            Err(_) => {
                kill_group(&mut child);
                break child.wait().ok();
            }
        }
    };
    // Whatever the tests left running goes too; it would also hold the pipe open.
    kill_group(&mut child);
    ran.exit_code = status.and_then(|s| s.code());
    let cap = rx.recv_timeout(Duration::from_secs(10)).unwrap_or_default();
    ran.output = cap.into_text();
    ran.seconds = start.elapsed().as_secs_f64();
    ran
}

fn kill_group(child: &mut std::process::Child) {
    #[cfg(unix)]
    {
        if let Ok(pid) = libc::pid_t::try_from(child.id())
            && pid > 0
        {
            // SAFETY: kill(2) with a negative pid signals the process group the child leads
            // (it was started with process_group(0)); it touches no memory.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
    }
    let _ = child.kill();
}

/// Output kept from a stream: the head, and a bounded tail.
#[derive(Default)]
struct Capture {
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    dropped: usize,
}

impl Capture {
    fn push(&mut self, mut bytes: &[u8]) {
        if self.head.len() < CAPTURE_HEAD {
            let n = (CAPTURE_HEAD - self.head.len()).min(bytes.len());
            self.head.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
        }
        self.tail.extend(bytes);
        if self.tail.len() > CAPTURE_TAIL {
            let excess = self.tail.len() - CAPTURE_TAIL;
            self.tail.drain(..excess);
            self.dropped += excess;
        }
    }

    fn into_text(self) -> String {
        let mut bytes = self.head;
        if self.dropped > 0 {
            bytes.extend_from_slice(format!("\n[… {} bytes dropped …]\n", self.dropped).as_bytes());
        }
        bytes.extend(self.tail);
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

/// `text` cut to about `max` bytes: its first quarter and its last three quarters, on
/// character boundaries, with a marker between.
pub fn trim_middle(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let floor = |mut i: usize| {
        while !text.is_char_boundary(i) {
            i -= 1;
        }
        i
    };
    let head = floor(max / 4);
    let tail = floor(text.len() - (max - max / 4));
    let tail = if tail < head { head } else { tail };
    format!(
        "{}\n[… {} bytes cut …]\n{}",
        &text[..head],
        tail - head,
        &text[tail..]
    )
}
