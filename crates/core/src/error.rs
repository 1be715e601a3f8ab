//! The one error type of the library, with the exit code and hints the CLI shows.

use std::path::PathBuf;

use crate::model::{SessionId, TaskId, UnknownTask};

/// Everything that can go wrong, worded for the person at the terminal.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Not inside a git repository.
    #[error("not a git repository (or any of the parent directories): {0}")]
    NotARepository(PathBuf),
    /// A bare repository: there is no working tree to run workers from.
    #[error("`{0}` is a bare repository; git tlv4 needs a repository with a working tree")]
    BareRepository(PathBuf),
    /// A repository format git-tlv4 cannot work with.
    #[error("`{}` is a repository with {what}, which git tlv4 does not support", path.display())]
    UnsupportedRepository {
        /// The repository.
        path: PathBuf,
        /// What it uses, as its configuration says it.
        what: String,
        /// Whether its refs are in a reftable.
        reftable: bool,
        /// Whether its object ids are SHA-256.
        sha256: bool,
    },
    /// `HEAD` points to no commit yet.
    #[error("the repository has no commits yet; a session forks from a commit")]
    NoCommits,
    /// No session branch by that name.
    #[error("no session `{name}`")]
    UnknownSession {
        /// The name asked for.
        name: String,
        /// The sessions that exist.
        known: Vec<SessionId>,
    },
    /// No session at all.
    #[error("there is no tlv4 session in this repository")]
    NoSession,
    /// Several sessions and nothing says which one.
    #[error("there are {} sessions; say which one with --session", .0.len())]
    AmbiguousSession(Vec<SessionId>),
    /// A task id the session does not have.
    #[error(transparent)]
    UnknownTask(#[from] UnknownTask),
    /// The request contradicts the session's state (a task claimed twice, …).
    #[error("{message}")]
    State {
        /// What is wrong.
        message: String,
        /// What to do about it.
        hint: Option<String>,
    },
    /// Another writer won: exit code 3.
    #[error("{message}")]
    Conflict {
        /// What is wrong.
        message: String,
        /// What to do about it.
        hint: Option<String>,
    },
    /// Input that is malformed (a path, JSON, an id).
    #[error("{0}")]
    Invalid(String),
    /// A remote git could not talk to (refused, reset, no such host): exit code 1.
    #[error("cannot reach the remote `{remote}`: {detail}")]
    Unreachable {
        /// The remote's name or URL, as given.
        remote: String,
        /// What git said.
        detail: String,
    },
    /// A session written by a newer format.
    #[error(
        "session `{session}` uses state format {found}, but this git-tlv4 reads format {supported} and older"
    )]
    Schema {
        /// The session.
        session: SessionId,
        /// The version it was written with.
        found: u32,
        /// The newest version this build reads.
        supported: u32,
    },
    /// The branch to be moved is checked out in a working tree.
    #[error("branch `{branch}` is checked out in `{}`{}", worktree.display(), match gone {
        None => "; git tlv4 will not move it under your feet",
        Some(_) => ", a working tree that no longer exists but that git still keeps",
    })]
    CheckedOut {
        /// The short branch name.
        branch: String,
        /// Where it is checked out.
        worktree: PathBuf,
        /// Why git still counts a working tree whose directory is gone.
        gone: Option<Gone>,
    },
    /// A lock file that nobody seems to hold.
    #[error("`{}` is locked by `{}`, which has been there for {age_secs}s", reference, lock.display())]
    Locked {
        /// The reference.
        reference: String,
        /// The lock file.
        lock: PathBuf,
        /// Its age.
        age_secs: u64,
    },
    /// A configuration or specification file is wrong.
    #[error("{file}:{line}: {message}")]
    Config {
        /// The file.
        file: String,
        /// The 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A file of the repository's configuration that cannot be read as text: a directory or
    /// a file where the other was expected, bytes that are not UTF-8, no permission.
    #[error("{}: {problem}", path.display())]
    UserFile {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
        /// What to do about it.
        hint: Option<String>,
    },
    /// A stored file does not parse.
    #[error("{path} in {commit}: {message}")]
    Corrupt {
        /// The path in the tree.
        path: String,
        /// The commit read.
        commit: String,
        /// The parse error.
        message: String,
    },
    /// A signal (Ctrl-C, SIGTERM, SIGHUP) stopped the run: exit code 128 + its number.
    #[error("interrupted by {}; {message}", signal_name(*signal))]
    Interrupted {
        /// The signal's number.
        signal: i32,
        /// What was done about the running tasks.
        message: String,
    },
    /// The agent's service refused work for now: a usage limit ("usage limit reached,
    /// resets at …"), a rate limit whose wait is too long to sit out (HTTP 429/529 with a
    /// long `Retry-After`), a quota. Not a failure of the task: it goes back to pending and
    /// waits for `until` (milliseconds since the epoch, when the service said) or another
    /// agent of the role's fail-over list takes it.
    #[error("agent `{agent}` hit a usage limit{}: {detail}", until_ms.map(|ms| format!(" until {}", crate::clock::rfc3339_ms(ms))).unwrap_or_default())]
    Limited {
        /// The agent's name.
        agent: String,
        /// When the limit resets, if the service said.
        until_ms: Option<u64>,
        /// What the service said, one line.
        detail: String,
    },
    /// A run crossed its task's bound (`[budget] task_tokens`, or `task_usd` converted with
    /// the model's price) and was stopped; what it did is kept as an interrupted run's is.
    #[error("agent `{agent}` was stopped at the task's bound: {detail}")]
    OverBound {
        /// The agent's name.
        agent: String,
        /// The bound and what was spent, one line.
        detail: String,
    },
    /// A git operation failed.
    #[error("{0}")]
    Git(String),
    /// A file system operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The cause.
        source: std::io::Error,
    },
}

/// Why git still counts a linked working tree whose directory was deleted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gone {
    /// Nothing: `git worktree prune` forgets it.
    Prunable,
    /// It is locked, with this reason; `git worktree prune` keeps it until it is unlocked.
    Locked(String),
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Exit codes, documented in the README.
pub mod exit {
    /// Success.
    pub const OK: i32 = 0;
    /// A user, state or configuration error.
    pub const ERROR: i32 = 1;
    /// Bad command-line usage.
    pub const USAGE: i32 = 2;
    /// A concurrent update won, or the task is taken.
    pub const CONFLICT: i32 = 3;
    /// `review --exit-code` or `--fail-on`: the review ran and the change does not pass.
    pub const REVIEW_FAILED: i32 = 4;
    /// The session stopped and waits for you: a gate, a checkpoint or review that blocks, a
    /// discussion, a fix cycle that ended below the pass target (`approve`, `revise`, …).
    pub const WAITING: i32 = 5;
    /// The session stalled: nothing can run because tasks failed (`revise`, `resume --retry`).
    pub const STALLED: i32 = 6;
    /// The session reached its budget (`resume --budget-usd +N` raises it).
    pub const BUDGET: i32 = 7;
    /// The agents of the next tasks hit a usage limit that resets later (`resume --wait`).
    pub const LIMIT: i32 = 8;
    /// Interrupted by Ctrl-C (128 + SIGINT), as shells report it.
    pub const INTERRUPTED: i32 = 130;
    /// Stopped by SIGHUP, the terminal was closed (128 + 1).
    pub const HANGUP: i32 = 129;
    /// Stopped by SIGTERM (128 + 15).
    pub const TERMINATED: i32 = 143;
    /// A bug or an unexpected failure of git or the file system.
    pub const INTERNAL: i32 = 255;

    /// The code for a run stopped by signal `sig`: 128 + its number, as shells report it.
    pub fn for_signal(sig: i32) -> i32 {
        128 + sig
    }

    /// The code for a session that paused with a pause of `kind`: [`STALLED`] when nothing
    /// can run, [`WAITING`] for every pause that asks for a decision.
    pub fn for_pause(kind: &crate::model::PauseKind) -> i32 {
        use crate::model::PauseKind;
        match kind {
            PauseKind::Stalled => STALLED,
            PauseKind::Budget => BUDGET,
            PauseKind::Limit => LIMIT,
            _ => WAITING,
        }
    }
}

impl Error {
    /// A state error with a hint.
    pub fn state(message: impl Into<String>, hint: impl Into<Option<String>>) -> Error {
        Error::State {
            message: message.into(),
            hint: hint.into(),
        }
    }

    /// A conflict error with a hint.
    pub fn conflict(message: impl Into<String>, hint: impl Into<Option<String>>) -> Error {
        Error::Conflict {
            message: message.into(),
            hint: hint.into(),
        }
    }

    /// An I/O error with context.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Error {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    /// A git error rendered with its whole chain of causes (gix shows only the top otherwise).
    pub fn git(context: &str, err: impl Into<gix::Error>) -> Error {
        let err = err.into();
        let mut text = context.to_owned();
        for cause in err.iter_errors() {
            let cause = cause.to_string();
            if !text.contains(&cause) {
                text.push_str(": ");
                text.push_str(&cause);
            }
        }
        Error::Git(text)
    }

    /// The process exit code for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Conflict { .. } => exit::CONFLICT,
            Error::Interrupted { signal, .. } => exit::for_signal(*signal),
            Error::Git(_) | Error::Io { .. } => exit::INTERNAL,
            _ => exit::ERROR,
        }
    }

    /// Lines to print after the error, each prefixed `hint:`.
    pub fn hints(&self) -> Vec<String> {
        let list = |ids: &[SessionId]| {
            ids.iter()
                .map(|s| format!("  {s}"))
                .collect::<Vec<_>>()
                .join("\n")
        };
        match self {
            Error::NotARepository(_) => {
                vec!["run git tlv4 inside a git repository, or `git init` one".into()]
            }
            Error::NoCommits => vec!["make a first commit, then start the session".into()],
            Error::UnsupportedRepository {
                reftable, sha256, ..
            } => {
                let mut hints = Vec::new();
                if *reftable {
                    hints.push("git tlv4 reads refs from the `files` storage only: convert the repository with `git refs migrate --ref-format=files` (git 2.46 or newer), then re-run".into());
                }
                if *sha256 {
                    hints.push("git tlv4 reads SHA-1 repositories only (the default of `git init`); git cannot convert a SHA-256 repository, so run it in a SHA-1 one".into());
                }
                hints
            }
            Error::UnknownSession { known, .. } if !known.is_empty() => {
                vec![format!("sessions in this repository:\n{}", list(known))]
            }
            Error::UnknownSession { .. } | Error::NoSession => {
                vec!["start one with `git tlv4 start \"TASK TEXT\"`".into()]
            }
            Error::AmbiguousSession(ids) => {
                vec![format!("pass --session with one of:\n{}", list(ids))]
            }
            Error::UnknownTask(e) => {
                let ids: Vec<&str> = e.known.iter().map(TaskId::as_str).collect();
                vec![format!("its tasks are: {}", ids.join(", "))]
            }
            Error::State { hint: Some(h), .. }
            | Error::Conflict { hint: Some(h), .. }
            | Error::UserFile { hint: Some(h), .. } => {
                vec![h.clone()]
            }
            Error::Unreachable { .. } => vec![
                "check the remote's name or URL (`git remote -v`) and that it is reachable".into(),
            ],
            Error::Schema { .. } => vec!["upgrade git-tlv4 to read this session".into()],
            Error::CheckedOut { gone: None, .. } => {
                vec!["switch that working tree to another branch (`git switch -` or `git switch --detach`), then re-run".into()]
            }
            Error::CheckedOut {
                gone: Some(Gone::Prunable),
                ..
            } => vec!["run `git worktree prune` to forget working trees whose directory is gone, then re-run".into()],
            Error::CheckedOut {
                gone: Some(Gone::Locked(reason)),
                worktree,
                ..
            } if reason.starts_with("git-tlv4 ") => vec![format!(
                "it was a task checkout of git-tlv4 ({reason}); `git tlv4 resume` removes it once that process is gone, or run `git worktree unlock {}` and `git worktree prune`",
                worktree.display()
            )],
            Error::CheckedOut {
                gone: Some(Gone::Locked(_)),
                worktree,
                ..
            } => vec![format!(
                "it is locked: run `git worktree unlock {}` and `git worktree prune`, then re-run",
                worktree.display()
            )],
            Error::Interrupted { .. } => vec!["continue with `git tlv4 resume`".into()],
            Error::Locked { lock, .. } => vec![format!(
                "if no other git process is running, run `git tlv4 resume` to clear it, or remove `{}`",
                lock.display()
            )],
            _ => Vec::new(),
        }
    }
}

/// `SIGINT (Ctrl-C)`, `SIGTERM`, `SIGHUP (the terminal was closed)`: how a signal is named
/// to the user (here, at the bottom, so that every module may name one).
pub fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGINT => "SIGINT (Ctrl-C)",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP (the terminal was closed)",
        _ => "a signal",
    }
}

#[cfg(test)]
mod tests {
    /// The README's table of exit codes lists every code of [`super::exit`], read from this
    /// file's source so that a code added there cannot be left out.
    #[test]
    fn the_readme_lists_every_exit_code() {
        let source = include_str!("error.rs");
        let module = &source[source.find("pub mod exit {").expect("the exit module")..];
        let module = &module[..module.find("\n}\n").expect("its end")];
        let readme = include_str!("../../../README.md");
        let table = &readme[readme.find("## Exit codes").expect("an Exit codes section")..];
        let mut codes = 0;
        for line in module.lines() {
            let Some(rest) = line.trim().strip_prefix("pub const ") else {
                continue;
            };
            let (name, value) = rest.split_once(": i32 = ").expect("`NAME: i32 = N;`");
            let value = value.trim_end_matches(';');
            codes += 1;
            assert!(
                table
                    .lines()
                    .any(|l| l.starts_with(&format!("| {value} |"))),
                "README.md's exit code table has no row for exit::{name} ({value})"
            );
        }
        assert!(codes >= 6, "read {codes} codes from the exit module");
    }
}
