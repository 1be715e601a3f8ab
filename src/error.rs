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
    #[error("branch `{branch}` is checked out in `{}`; git tlv4 will not move it under your feet", worktree.display())]
    CheckedOut {
        /// The short branch name.
        branch: String,
        /// Where it is checked out.
        worktree: PathBuf,
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
    #[error("interrupted by {}; {message}", crate::process::signals::name(*signal))]
    Interrupted {
        /// The signal's number.
        signal: i32,
        /// What was done about the running tasks.
        message: String,
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
            Error::State { hint: Some(h), .. } | Error::Conflict { hint: Some(h), .. } => {
                vec![h.clone()]
            }
            Error::Schema { .. } => vec!["upgrade git-tlv4 to read this session".into()],
            Error::CheckedOut { .. } => {
                vec!["switch that working tree to another branch (`git switch -` or `git switch --detach`), then re-run".into()]
            }
            Error::Interrupted { .. } => vec!["continue with `git tlv4 resume`".into()],
            Error::Locked { lock, .. } => vec![format!(
                "if no other git process is running, run `git tlv4 resume` to clear it, or remove `{}`",
                lock.display()
            )],
            _ => Vec::new(),
        }
    }
}
