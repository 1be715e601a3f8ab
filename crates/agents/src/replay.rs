//! The `replay` driver: answers every task with what an earlier session recorded for the
//! task of the same id, without calling any model — to try a pipeline or configuration
//! change again for free, or to reproduce a run.
//!
//! It reads `runs/<TASK>/<attempt>/result.json` at the recorded session's tip (its branch,
//! or its archive ref) through a [`Recording`], which the layer that owns the store hands it
//! ([`Recordings`]: the agents never name a ref), the last completed attempt first (for a discussion turn, the attempt
//! of the same number, so its send-backs happen again): the documents come back from the
//! blob ids the record keeps, and a code task's change is re-applied in the task worktree
//! from the recorded snapshot (`git diff --binary <parent> <snapshot> | git apply`), so the
//! new session's own snapshot and merge record it again.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;

use gix::ObjectId;

use super::command::{Driver, DriverOutput, RunContext, Usage};
use super::{Outcome, StateUpdate, TaskInput, TaskOutput};
use tlv4_core::error::{Error, Result};
use tlv4_core::model::{Role, SessionId};

/// One recorded session, as replay reads it: the run records of its tip's pipeline folder and
/// the blobs they name. The coordinator's side implements it over the store.
pub trait Recording: Send + Sync {
    /// Every file under `runs/<task>/` of the recorded session's pipeline folder, keyed by
    /// path relative to it (`<attempt>/result.json`, `<attempt>/prompt.md`, …); empty when
    /// the task never ran.
    fn runs(&self, task: &str) -> Result<BTreeMap<String, Vec<u8>>>;
    /// The content of the blob `id` a run record names.
    fn blob(&self, id: ObjectId) -> Result<Vec<u8>>;
}

/// Where the replay driver finds the sessions it replays: handed to the roster by the layer
/// that owns the store, since an agent never names a ref.
pub trait Recordings {
    /// Session `sid` at its tip (its branch, else its archive ref); `None` when there is no
    /// such session.
    fn open(&self, sid: &SessionId) -> Result<Option<Arc<dyn Recording>>>;
}

/// No recorded sessions: for a roster made where there is no repository to replay from.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoRecordings;

impl Recordings for NoRecordings {
    fn open(&self, _: &SessionId) -> Result<Option<Arc<dyn Recording>>> {
        Ok(None)
    }
}

/// Replays the runs of one recorded session.
pub struct ReplayDriver {
    name: String,
    sid: SessionId,
    recording: Arc<dyn Recording>,
    /// The repository's working tree, where the recorded changes are read with `git diff`.
    repo_root: PathBuf,
}

/// The part of a run record replay reads.
#[derive(serde::Deserialize)]
struct Record {
    outcome: String,
    summary: String,
    #[serde(default)]
    state_update: StateUpdate,
    #[serde(default)]
    files: serde_json::Value,
    #[serde(default)]
    snapshot: Option<Snap>,
    #[serde(default)]
    model: Option<String>,
}

#[derive(serde::Deserialize)]
struct Snap {
    commit: String,
    parent: String,
}

impl ReplayDriver {
    /// A driver replaying session `sid`, found through `recordings`, of the repository at
    /// `repo_root`.
    pub fn new(
        name: &str,
        sid: &str,
        repo_root: &Path,
        recordings: &dyn Recordings,
    ) -> Result<ReplayDriver> {
        let sid: SessionId = sid
            .parse()
            .map_err(|_| Error::Invalid(format!("agent `{name}`: `{sid}` is not a session id")))?;
        let recording = recordings.open(&sid)?.ok_or_else(|| {
            Error::state(
                format!("agent `{name}`: there is no session `{sid}` to replay"),
                Some("`git tlv4 list` shows the sessions".to_owned()),
            )
        })?;
        Ok(ReplayDriver {
            name: name.to_owned(),
            sid,
            recording,
            repo_root: repo_root.to_owned(),
        })
    }

    /// The record of attempt `exact` of `task` when it is given and recorded; else of the
    /// last completed attempt (the last attempt when none completed); with its number.
    fn record(&self, task: &str, exact: Option<u32>) -> Result<Option<(u32, Record, Vec<u8>)>> {
        let dir = format!("runs/{task}");
        let attempts = self.recording.runs(task)?;
        let mut numbers: Vec<u32> = attempts
            .keys()
            .filter_map(|k| k.strip_suffix("/result.json")?.parse().ok())
            .collect();
        numbers.sort_unstable();
        let read = |n: u32| -> Result<(Record, Vec<u8>)> {
            let bytes = &attempts[&format!("{n}/result.json")];
            let record: Record = serde_json::from_slice(bytes).map_err(|e| {
                Error::Invalid(format!(
                    "the record {dir}/{n}/result.json of session `{}` is not readable: {e}",
                    self.sid
                ))
            })?;
            let prompt = attempts
                .get(&format!("{n}/prompt.md"))
                .cloned()
                .unwrap_or_default();
            Ok((record, prompt))
        };
        if let Some(n) = exact.filter(|n| numbers.contains(n)) {
            let (record, prompt) = read(n)?;
            return Ok(Some((n, record, prompt)));
        }
        let mut best = None;
        for n in numbers.into_iter().rev() {
            let (record, prompt) = read(n)?;
            if record.outcome == "completed" {
                return Ok(Some((n, record, prompt)));
            }
            best.get_or_insert((n, record, prompt));
        }
        Ok(best)
    }
}

impl Driver for ReplayDriver {
    fn name(&self) -> &str {
        &self.name
    }

    fn run(&self, input: &TaskInput, ctx: &RunContext) -> Result<DriverOutput> {
        let started = std::time::Instant::now();
        let task = input.task.id.as_str();
        let failed =
            |reason: String| TaskOutput::failed(reason.clone(), format!("failed: {reason}"));
        // A discussion turn sent back is asked again within the same run, and each of its
        // attempts gets the answer that attempt gave, so the send-backs happen again as they
        // did; a pipeline task's later attempts follow a review or a reset, and the last
        // completed one is the work.
        let exact =
            matches!(input.task.role, Role::Member | Role::Moderator).then_some(ctx.attempt);
        let Some((attempt, record, prompt)) = self.record(task, exact)? else {
            return Ok(output(
                failed(format!(
                    "session `{}` has no recorded run of {task} to replay",
                    self.sid
                )),
                String::new(),
                started,
                None,
            ));
        };
        if record.outcome != "completed" {
            return Ok(output(
                failed(format!(
                    "the recorded run {task}/{attempt} of `{}` did not complete: {}",
                    self.sid, record.outcome
                )),
                String::from_utf8_lossy(&prompt).into_owned(),
                started,
                record.model,
            ));
        }
        let mut files = Vec::new();
        let listed = match &record.files {
            serde_json::Value::Object(map) => map.clone(),
            serde_json::Value::Array(list) if list.is_empty() => serde_json::Map::new(),
            _ => {
                return Ok(output(
                    failed(format!(
                        "the record {task}/{attempt} of `{}` predates replayable records (no blob ids)",
                        self.sid
                    )),
                    String::new(),
                    started,
                    record.model,
                ));
            }
        };
        for (path, id) in listed {
            let id: ObjectId = id.as_str().and_then(|s| s.parse().ok()).ok_or_else(|| {
                Error::Invalid(format!("bad blob id for {path} in {task}/{attempt}"))
            })?;
            files.push((path, self.recording.blob(id)?));
        }
        if let Some(snap) = &record.snapshot {
            apply(&self.repo_root, &snap.parent, &snap.commit, &ctx.workdir)?;
        }
        Ok(output(
            TaskOutput {
                outcome: Outcome::Completed,
                summary: record.summary,
                files,
                state_update: record.state_update,
            },
            String::from_utf8_lossy(&prompt).into_owned(),
            started,
            record.model,
        ))
    }
}

fn output(
    output: TaskOutput,
    prompt: String,
    started: std::time::Instant,
    model: Option<String>,
) -> DriverOutput {
    DriverOutput {
        output,
        prompt,
        raw: String::new(),
        transcript: None,
        usage: Usage {
            seconds: started.elapsed().as_secs_f64(),
            model,
            ..Usage::default()
        },
    }
}

/// Applies the change `parent..commit` (outside `.tlv4/`) to the files of `workdir`.
fn apply(repo_dir: &Path, parent: &str, commit: &str, workdir: &Path) -> Result<()> {
    let git = tlv4_core::git::command;
    let diff = git(repo_dir)
        .args([
            "diff",
            "--binary",
            "--no-renames",
            "--no-ext-diff",
            "--no-color",
        ])
        .args([parent, commit, "--", ".", ":(exclude).tlv4"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error::io("cannot run git diff", e))?;
    if !diff.status.success() {
        return Err(Error::Git(format!(
            "cannot read the recorded change {parent}..{commit}: {}",
            String::from_utf8_lossy(&diff.stderr).trim()
        )));
    }
    if diff.stdout.is_empty() {
        return Ok(());
    }
    let mut child = git(workdir)
        .args(["apply", "--whitespace=nowarn", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::io("cannot run git apply", e))?;
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(&diff.stdout)
        .map_err(|e| Error::io("cannot feed git apply", e))?;
    let out = child
        .wait_with_output()
        .map_err(|e| Error::io("cannot run git apply", e))?;
    if !out.status.success() {
        return Err(Error::Git(format!(
            "the recorded change {parent}..{commit} does not apply here: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}
