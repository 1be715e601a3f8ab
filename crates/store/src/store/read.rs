//! Reading state: one tree read at the tip, never a replay of history.

use std::collections::BTreeMap;

use gix::ObjectId;
use gix::bstr::ByteSlice;

use super::{Store, session_dir};
use tlv4_core::error::{Error, Result};
use tlv4_core::model::{SCHEMA_NEWEST, Session, SessionId, State, Task, TaskId};

/// The stored bytes of a state, to write only what changed.
#[derive(Debug, Clone, Default)]
pub(crate) struct StoredBytes {
    pub session: Vec<u8>,
    pub control: Vec<u8>,
    pub tasks: BTreeMap<TaskId, Vec<u8>>,
}

impl Store {
    /// The state at the tip of a session branch, and that tip.
    pub fn read_state(&self, sid: &SessionId) -> Result<(ObjectId, State)> {
        let tip = self.tip(sid)?;
        let (state, _) = self.read_state_at(sid, tip)?;
        Ok((tip, state))
    }

    /// The state a session had at `commit` (any event commit of its branch).
    pub fn state_at(&self, sid: &SessionId, commit: ObjectId) -> Result<State> {
        Ok(self.read_state_at(sid, commit)?.0)
    }

    /// [`Store::state_at`], and the bytes of the state files it was read from.
    pub(crate) fn read_state_at(
        &self,
        sid: &SessionId,
        commit: ObjectId,
    ) -> Result<(State, StoredBytes)> {
        let tree = self.commit_tree(commit)?;
        self.read_state_in_tree(sid, tree, commit)
    }

    /// The paths that differ between commits `from` and `to` (renames as a deletion and an
    /// addition), as git lists them.
    pub fn changed_paths(&self, from: ObjectId, to: ObjectId) -> Result<Vec<String>> {
        let git_dir = std::path::absolute(self.repo().git_dir())
            .map_err(|e| Error::io("cannot resolve the git directory", e))?;
        let gd = git_dir.to_string_lossy().into_owned();
        let (from, to) = (from.to_string(), to.to_string());
        let out = tlv4_core::git::run(
            &git_dir,
            &[
                "--git-dir",
                &gd,
                "diff",
                "--name-only",
                "--no-renames",
                "-z",
                &from,
                &to,
            ],
        )?;
        Ok(out
            .split('\0')
            .filter(|p| !p.is_empty())
            .map(str::to_owned)
            .collect())
    }

    /// The tree of `commit`.
    pub fn commit_tree(&self, commit: ObjectId) -> Result<ObjectId> {
        let c = self
            .repo
            .find_commit(commit)
            .map_err(|e| Error::git(&format!("cannot read commit {commit}"), e))?;
        c.tree_id()
            .map(|id| id.detach())
            .map_err(|e| Error::git(&format!("cannot read commit {commit}"), e))
    }

    pub(crate) fn read_state_in_tree(
        &self,
        sid: &SessionId,
        tree: ObjectId,
        commit: ObjectId,
    ) -> Result<(State, StoredBytes)> {
        let dir = session_dir(sid);
        let corrupt = |path: &str, message: String| Error::Corrupt {
            path: path.to_owned(),
            commit: commit.to_string(),
            message,
        };
        let root = self
            .repo
            .find_tree(tree)
            .map_err(|e| Error::git("cannot read tree", e))?;
        let folder = root
            .lookup_entry_by_path(&dir)
            .map_err(|e| Error::git("cannot read tree", e))?
            .ok_or_else(|| corrupt(&dir, "the session folder is missing".into()))?;
        let folder = folder
            .object()
            .map_err(|e| Error::git("cannot read tree", e))?
            .into_tree();

        let session_path = format!("{dir}/session.toml");
        let session_bytes = self
            .blob_at(&folder, "session.toml")?
            .ok_or_else(|| corrupt(&session_path, "the file is missing".into()))?;
        let session = parse_session(sid, &session_bytes).map_err(|e| match e {
            Error::Invalid(m) => corrupt(&session_path, m),
            other => other,
        })?;

        let control_path = format!("{dir}/control.toml");
        let control_bytes = self.blob_at(&folder, "control.toml")?.unwrap_or_default();
        let control = if control_bytes.is_empty() {
            tlv4_core::model::Control::default()
        } else {
            let text = std::str::from_utf8(&control_bytes)
                .map_err(|e| corrupt(&control_path, e.to_string()))?;
            toml::from_str(text).map_err(|e| corrupt(&control_path, e.to_string()))?
        };
        let mut tasks = BTreeMap::new();
        let mut stored = BTreeMap::new();
        if let Some(entry) = folder.find_entry("tasks") {
            let tasks_tree = entry
                .object()
                .map_err(|e| Error::git("cannot read tree", e))?
                .into_tree();
            let decoded = tasks_tree
                .decode()
                .map_err(|e| Error::git("cannot read tree", e))?;
            for e in &decoded.entries {
                let name = e.filename.to_str_lossy();
                let Some(stem) = name.strip_suffix(".toml") else {
                    continue;
                };
                let path = format!("{dir}/tasks/{name}");
                // Blobs are immutable: a task file unchanged since the last read is not
                // parsed again (most events change one task of many).
                let cached = self.task_cache.borrow().get(&e.oid.to_owned()).cloned();
                let (task, bytes) = match cached {
                    Some(hit) => hit,
                    None => {
                        let blob = self
                            .repo
                            .find_blob(e.oid)
                            .map_err(|e| Error::git("cannot read blob", e))?;
                        let text = std::str::from_utf8(&blob.data)
                            .map_err(|e| corrupt(&path, e.to_string()))?;
                        let task: Task =
                            toml::from_str(text).map_err(|e| corrupt(&path, e.to_string()))?;
                        let mut cache = self.task_cache.borrow_mut();
                        if cache.len() > 50_000 {
                            cache.clear();
                        }
                        cache.insert(e.oid.to_owned(), (task.clone(), blob.data.clone()));
                        (task, blob.data.clone())
                    }
                };
                if task.id.as_str() != stem {
                    return Err(corrupt(&path, format!("it holds task `{}`", task.id)));
                }
                stored.insert(task.id.clone(), bytes);
                tasks.insert(task.id.clone(), task);
            }
        }
        Ok((
            State {
                session,
                tasks,
                control,
            },
            StoredBytes {
                session: session_bytes,
                control: control_bytes,
                tasks: stored,
            },
        ))
    }

    /// The blob at `path` in `tree`, if there is one.
    pub fn read_blob_at(&self, tree: ObjectId, path: &str) -> Result<Option<Vec<u8>>> {
        let root = self
            .repo
            .find_tree(tree)
            .map_err(|e| Error::git("cannot read tree", e))?;
        match root
            .lookup_entry_by_path(path)
            .map_err(|e| Error::git("cannot read tree", e))?
        {
            Some(e) if e.mode().is_blob() => {
                let obj = e.object().map_err(|e| Error::git("cannot read blob", e))?;
                Ok(Some(obj.detach().data))
            }
            _ => Ok(None),
        }
    }

    /// Every file under `dir` in `tree`, keyed by path relative to `dir`, skipping the
    /// subfolders named in `skip`.
    pub fn read_folder(
        &self,
        tree: ObjectId,
        dir: &str,
        skip: &[&str],
    ) -> Result<BTreeMap<String, Vec<u8>>> {
        let git = |e: gix::Error| Error::git("cannot read the pipeline folder", e);
        let mut out = BTreeMap::new();
        let root = self.repo.find_tree(tree).map_err(git)?;
        let Some(entry) = root.lookup_entry_by_path(dir).map_err(git)? else {
            return Ok(out);
        };
        let mut stack = vec![(entry.object_id(), String::new())];
        while let Some((id, prefix)) = stack.pop() {
            let t = self.repo.find_tree(id).map_err(git)?;
            let decoded = t.decode().map_err(git)?;
            for e in &decoded.entries {
                let rel = format!("{prefix}{}", e.filename.to_str_lossy());
                if e.mode.is_tree() {
                    if !skip.contains(&rel.as_str()) {
                        stack.push((e.oid.to_owned(), format!("{rel}/")));
                    }
                } else if e.mode.is_blob() {
                    out.insert(rel, self.repo.find_blob(e.oid).map_err(git)?.data.clone());
                }
            }
        }
        Ok(out)
    }

    fn blob_at(&self, tree: &gix::Tree<'_>, name: &str) -> Result<Option<Vec<u8>>> {
        match tree.find_entry(name) {
            None => Ok(None),
            Some(e) => {
                let obj = e.object().map_err(|e| Error::git("cannot read blob", e))?;
                Ok(Some(obj.detach().data))
            }
        }
    }
}

/// Parses `session.toml`, refusing a newer schema before looking at any other field.
pub(crate) fn parse_session(sid: &SessionId, bytes: &[u8]) -> Result<Session> {
    let text = std::str::from_utf8(bytes).map_err(|e| Error::Invalid(e.to_string()))?;
    let table: toml::Table = toml::from_str(text).map_err(|e| Error::Invalid(e.to_string()))?;
    let Some(found) = table.get("schema").and_then(toml::Value::as_integer) else {
        return Err(Error::Invalid("it has no `schema` version".into()));
    };
    if !(1..=i64::from(SCHEMA_NEWEST)).contains(&found) {
        if found > i64::from(SCHEMA_NEWEST) {
            return Err(Error::Schema {
                session: sid.clone(),
                found: found as u32,
                supported: SCHEMA_NEWEST,
            });
        }
        return Err(Error::Invalid(format!("unknown schema version {found}")));
    }
    toml::from_str(text).map_err(|e| Error::Invalid(e.to_string()))
}
