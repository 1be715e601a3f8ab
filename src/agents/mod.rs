//! Agents: whoever does a task's creative work. One trait; the builtin, offline agent is the
//! default, and drivers for real agent CLIs plug in behind the same trait.
//!
//! An agent never touches git or the session: it gets a [`TaskInput`] (the task, the pipeline
//! folder and the code at the session tip, all read-only) and returns a [`TaskOutput`] (files
//! for the pipeline folder and a structured state update). The coordinator records the result.

pub mod builtin;
pub mod command;
pub mod contract;
pub mod limits;
/// `[agents.*]`, `[roles]` and `[discuss]` of `.tlv4.toml`, kept in [`tlv4_core::config`].
pub use tlv4_core::config::agents as config;
pub mod meter;
pub mod openai;
pub mod presets;
/// The process runner, which the drivers use (it lives in [`tlv4_core::process`]).
pub use tlv4_core::process;
pub mod prompt;
pub mod replay;
pub mod result;
pub mod roster;
/// The tech profile an agent reports is the one of the discovery context.
pub use tlv4_specdoc::discovery::TechProfile;

use std::collections::BTreeMap;

use tlv4_core::error::{Error, Result};
use tlv4_core::model::{Session, Task};

/// Everything an agent gets for one task.
#[derive(Clone)]
pub struct TaskInput {
    /// The session, as stored.
    pub session: Session,
    /// The task to do.
    pub task: Task,
    /// Files of the pipeline folder at the session tip (`spec/…`, `plan/…`, `wisdom/…`,
    /// `artifacts/…`, `explorations/…`, `discussions/…`), keyed by path relative to it.
    pub folder: BTreeMap<String, Vec<u8>>,
    /// The code at the session tip: every file outside `.tlv4/`.
    pub code: CodeTree,
}

impl TaskInput {
    /// A pipeline-folder file as text, if present and UTF-8.
    pub fn folder_text(&self, rel: &str) -> Option<&str> {
        self.folder
            .get(rel)
            .and_then(|b| std::str::from_utf8(b).ok())
    }
}

/// One file of the code tree.
#[derive(Debug, Clone)]
pub struct CodeFile {
    /// Path relative to the repository root, `/`-separated.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// Blob id.
    pub id: gix::ObjectId,
}

/// A read-only view of the code at one commit, safe to send to a worker thread.
#[derive(Clone)]
pub struct CodeTree {
    repo: gix::ThreadSafeRepository,
    files: Vec<CodeFile>,
}

impl CodeTree {
    /// Every blob of `tree` outside `.tlv4/`, in path order.
    pub fn from_tree(repo: &gix::Repository, tree: gix::ObjectId) -> Result<CodeTree> {
        let git = |e: gix::Error| Error::git("cannot list the code tree", e);
        let mut files = Vec::new();
        let mut stack = vec![(tree, String::new())];
        while let Some((id, prefix)) = stack.pop() {
            let tree = repo.find_tree(id).map_err(git)?;
            let decoded = tree.decode().map_err(git)?;
            for e in &decoded.entries {
                let name = e.filename.to_string();
                let path = if prefix.is_empty() {
                    name
                } else {
                    format!("{prefix}/{name}")
                };
                if path == ".tlv4" || path == ".git" {
                    continue;
                }
                if e.mode.is_tree() {
                    stack.push((e.oid.to_owned(), path));
                } else if e.mode.is_blob() {
                    let size = repo.find_header(e.oid).map(|h| h.size()).unwrap_or(0);
                    files.push(CodeFile {
                        path,
                        size,
                        id: e.oid.to_owned(),
                    });
                }
            }
        }
        files.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(CodeTree {
            repo: repo.clone().into_sync(),
            files,
        })
    }

    /// Every file, in path order.
    pub fn files(&self) -> &[CodeFile] {
        &self.files
    }

    /// The content of a file.
    pub fn read(&self, file: &CodeFile) -> Result<Vec<u8>> {
        let repo = self.repo.to_thread_local();
        let blob = repo
            .find_blob(file.id)
            .map_err(|e| Error::git(&format!("cannot read {}", file.path), e))?;
        Ok(blob.data.clone())
    }

    /// The file at `path`, if there is one.
    pub fn find(&self, path: &str) -> Option<&CodeFile> {
        let i = self.files.binary_search_by(|f| f.path.as_str().cmp(path));
        Some(&self.files[i.ok()?])
    }

    /// The content of the file at `path`, if there is one.
    pub fn read_path(&self, path: &str) -> Option<Vec<u8>> {
        self.read(self.find(path)?).ok()
    }
}

/// How a task ended, as the agent sees it.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The work is done.
    Completed,
    /// The work could not be done; the reason says why.
    Failed(String),
}

/// What an agent hands back.
#[derive(Debug, Clone)]
pub struct TaskOutput {
    /// How it ended.
    pub outcome: Outcome,
    /// One line for the event and the status display.
    pub summary: String,
    /// Files for the pipeline folder, keyed by relative path.
    pub files: Vec<(String, Vec<u8>)>,
    /// The structured report published on the message bus.
    pub state_update: StateUpdate,
}

/// The structured report every task publishes (the reference's `state_update`).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateUpdate {
    /// At most 5 findings, each under 100 characters.
    #[serde(default)]
    pub key_findings: Vec<String>,
    /// Decisions taken, with their reason.
    #[serde(default)]
    pub decisions: Vec<String>,
    /// Files changed (code tasks) or written (document tasks).
    #[serde(default)]
    pub files_modified: Vec<String>,
    /// How the result was checked.
    #[serde(default)]
    pub verification: String,
    /// Signals about the code base, for specialist injection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tech_profile: Option<TechProfile>,
}

impl StateUpdate {
    /// Checks the contract: at most 5 key findings, each under 100 characters.
    pub fn validate(&self) -> Result<()> {
        if self.key_findings.len() > 5 {
            return Err(Error::Invalid(format!(
                "state_update has {} key findings; at most 5 are allowed",
                self.key_findings.len()
            )));
        }
        if let Some(long) = self.key_findings.iter().find(|f| f.chars().count() >= 100) {
            return Err(Error::Invalid(format!(
                "key finding is 100 characters or longer: {long}"
            )));
        }
        Ok(())
    }
}

/// Whoever does the work of a task.
pub trait Agent: Send + Sync {
    /// A short name for logs and run records (`builtin`, `claude`, …).
    fn name(&self) -> &str;
    /// Does the task. Runs on a worker thread; may take long.
    fn run(&self, input: &TaskInput) -> Result<TaskOutput>;
}
