//! Completion actions: archive, keep, export.

use gix::object::tree::EntryKind;

use tlv4_core::error::{Error, Result};
use tlv4_core::model::{Completion, Event, EventKind, SessionId, SessionStatus, TaskId};
use tlv4_store::store::{SESSION_REF_PREFIX, Store, archive_ref, session_dir, session_ref};

/// What was done.
#[derive(Debug, Clone)]
pub enum Done {
    /// The session ref now lives at this archive ref; its branches are gone.
    Archived(String),
    /// Nothing moved.
    Kept,
    /// A clean branch with this name was made.
    Exported(String),
}

/// Runs completion action `action` (`archive`, `keep`, `export`) on a completed session;
/// `interactive` is for the caller to decide first.
pub fn apply(
    store: &Store,
    sid: &SessionId,
    action: &Completion,
    export_spec: bool,
) -> Result<Done> {
    let (_, state) = store.read_state(sid)?;
    if state.session.status != SessionStatus::Completed {
        return Err(Error::state(
            format!(
                "session `{sid}` is {}, not completed",
                state.session.status.as_str()
            ),
            None,
        ));
    }
    match action {
        Completion::Keep => {
            record(
                store,
                sid,
                action,
                "Kept: the session branch stays as it is",
            )?;
            Ok(Done::Kept)
        }
        Completion::Archive => archive(store, sid),
        Completion::Export => export(store, sid, export_spec),
        Completion::Interactive | Completion::Other(_) => Err(Error::Invalid(format!(
            "unknown completion action `{action}`; use archive, keep or export"
        ))),
    }
}

fn record(
    store: &Store,
    sid: &SessionId,
    action: &Completion,
    summary: &str,
) -> Result<gix::ObjectId> {
    let written = store.transact(sid, |_| {
        Ok(Some(
            Event::session(EventKind::CompletionAction, summary.to_owned())
                .with("Action", action.as_str()),
        ))
    })?;
    Ok(written.expect("the change always writes").commit)
}

/// Moves the session to `refs/tlv4/archive/<SID>` and removes its branches (the task branches
/// `tlv4/<SID>.*` and the session branch), each with the value it must have. A task branch
/// holding commits the archived session does not contain (work that was never merged) is
/// kept under `refs/tlv4/runs/<SID>/<TASK>/<n>` first.
fn archive(store: &Store, sid: &SessionId) -> Result<Done> {
    let target = archive_ref(sid);
    archive_with(store, sid, || {
        record(
            store,
            sid,
            &Completion::Archive,
            &format!("Archived to {target}"),
        )
    })
}

/// The task branches `tlv4/<SID>.<TASK>` of a session, with their tips.
pub fn task_branches(store: &Store, sid: &SessionId) -> Result<Vec<(String, gix::ObjectId)>> {
    // gix refuses a prefix ending in `.`, so filter here.
    let task_prefix = tlv4_store::store::refs::task_ref_prefix(sid);
    Ok(store
        .refs_with_prefix(SESSION_REF_PREFIX)?
        .into_iter()
        .filter(|(n, _)| n.starts_with(&task_prefix))
        .collect())
}

/// Archives session `sid` (see [`archive`]) whatever its status, once `event` has recorded
/// why on its branch (returning the new tip).
pub fn archive_with(
    store: &Store,
    sid: &SessionId,
    event: impl FnOnce() -> Result<gix::ObjectId>,
) -> Result<Done> {
    let target = archive_ref(sid);
    let task_prefix = tlv4_store::store::refs::task_ref_prefix(sid);
    let task_branches = task_branches(store, sid)?;
    // Nothing is changed while any of them is checked out somewhere.
    for (name, _) in &task_branches {
        store.ensure_not_checked_out(name)?;
    }
    store.ensure_not_checked_out(&session_ref(sid))?;
    if store.try_ref(&target)?.is_some() {
        return Err(Error::conflict(format!("`{target}` already exists"), None));
    }
    let tip = event()?;
    if !store.create_ref(&target, tip, "tlv4: archive")? {
        return Err(Error::conflict(format!("`{target}` already exists"), None));
    }
    let (_, state) = store.read_state(sid)?;
    for (name, id) in task_branches {
        if !store.is_ancestor(id, tip)? {
            let Ok(task) = name[task_prefix.len()..].parse::<TaskId>() else {
                continue; // not a branch this tool names: left as it is
            };
            let attempt = state.tasks.get(&task).map_or(1, |t| t.attempts);
            tlv4_store::worktree::keep_run(
                store,
                sid,
                &task,
                attempt,
                id,
                &format!("unmerged work of {task}, kept by archive"),
            )?;
        }
        store.delete_ref(&name, id)?;
    }
    store.delete_ref(&session_ref(sid), tip)?;
    Ok(Done::Archived(target))
}

/// A branch `tlv4-export/<SID>` with one commit on the base: the session's code without its
/// pipeline folder `.tlv4/sessions/<SID>/` (the repository's own `.tlv4/specs/` and the
/// folders of earlier sessions stay as the base has them), plus the spec and plan documents
/// under `docs/tlv4/<SID>/` when `with_spec`.
fn export(store: &Store, sid: &SessionId, with_spec: bool) -> Result<Done> {
    let git = |e: gix::Error| Error::git("cannot export the session", e);
    let (tip, state) = store.read_state(sid)?;
    let tree = store.commit_tree(tip)?;
    let repo = store.repo();
    let mut editor = repo.edit_tree(tree).map_err(git)?;
    editor.remove(session_dir(sid).as_str()).map_err(git)?;
    if with_spec {
        let root = repo.find_tree(tree).map_err(git)?;
        for part in ["spec", "plan"] {
            if let Some(e) = root
                .lookup_entry_by_path(format!("{}/{part}", session_dir(sid)))
                .map_err(git)?
            {
                editor
                    .upsert(
                        format!("docs/tlv4/{sid}/{part}").as_str(),
                        EntryKind::Tree,
                        e.object_id(),
                    )
                    .map_err(git)?;
            }
        }
    }
    let clean = editor.write().map_err(git)?.detach();
    let base: gix::ObjectId = state
        .session
        .base
        .parse()
        .map_err(|_| Error::Git(format!("bad base {}", state.session.base)))?;
    let sig = store.signature();
    let commit = gix::objs::Commit {
        tree: clean,
        parents: [base].into_iter().collect(),
        author: sig.clone(),
        committer: sig,
        encoding: None,
        message: format!(
            "{}\n\nExported from session {sid} ({}).\n",
            state.session.task.lines().next().unwrap_or_default(),
            state.session.pipeline
        )
        .into(),
        extra_headers: Vec::new(),
    };
    let commit = repo.write_object(&commit).map_err(git)?.detach();
    let name = tlv4_store::store::refs::export_ref(sid);
    if !store.create_ref(&name, commit, "tlv4: export")? {
        return Err(Error::state(
            format!("`{name}` already exists"),
            Some(format!("delete it first: git branch -D tlv4-export/{sid}")),
        ));
    }
    record(
        store,
        sid,
        &Completion::Export,
        &format!("Exported to {name} ({commit})"),
    )?;
    Ok(Done::Exported(name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coordinator::{StartOptions, start};
    use std::path::Path;

    /// The shared hermetic git, its output trimmed.
    fn git(dir: &Path, args: &[&str]) -> String {
        tlv4_core::testutil::git(dir, args).trim().to_owned()
    }

    /// A repository whose base commit has `.tlv4/specs/` of its own and the folder of an
    /// earlier session, and a session on it marked completed.
    fn completed() -> (tempfile::TempDir, Store, SessionId) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        git(p, &["init", "-q", "-b", "main"]);
        for (path, body) in [
            ("src/app.py", "x = 1\n"),
            (
                ".tlv4/specs/roles/executor.md",
                "# our own executor rules\n",
            ),
            (
                ".tlv4/sessions/TLV4-old-20260101/session.toml",
                "id = \"old\"\n",
            ),
        ] {
            std::fs::create_dir_all(p.join(path).parent().unwrap()).unwrap();
            std::fs::write(p.join(path), body).unwrap();
        }
        git(p, &["add", "-A"]);
        git(p, &["commit", "-q", "-m", "base"]);
        let store = Store::from_repo(gix::open(p).unwrap()).unwrap();
        let opts = StartOptions {
            pipeline: Some("impl-only".into()),
            no_supervision: true,
            ..Default::default()
        };
        let (sid, _) = start(&store, "add a health check", &opts).unwrap();
        store
            .transact(&sid, |txn| {
                txn.state.session.status = SessionStatus::Completed;
                Ok(Some(Event::session(
                    EventKind::SessionCompleted,
                    "done".to_owned(),
                )))
            })
            .unwrap();
        (dir, store, sid)
    }

    #[test]
    fn export_removes_only_the_sessions_pipeline_folder() {
        let (dir, store, sid) = completed();
        let Done::Exported(branch) = apply(&store, &sid, &Completion::Export, true).unwrap() else {
            panic!("exported")
        };
        let files = git(dir.path(), &["ls-tree", "-r", "--name-only", &branch]);
        let files: Vec<&str> = files.lines().collect();
        assert!(
            files.contains(&".tlv4/specs/roles/executor.md"),
            "{files:?}"
        );
        assert!(
            files.contains(&".tlv4/sessions/TLV4-old-20260101/session.toml"),
            "{files:?}"
        );
        assert!(
            !files
                .iter()
                .any(|f| f.starts_with(&format!(".tlv4/sessions/{sid}"))),
            "{files:?}"
        );
        assert!(files.contains(&"src/app.py"));
        // Against the base, the export changes nothing under `.tlv4/`.
        assert_eq!(
            git(
                dir.path(),
                &["diff", "--name-only", "main", &branch, "--", ".tlv4"]
            ),
            ""
        );
    }

    #[test]
    fn archive_keeps_unmerged_task_branch_commits_under_a_run_ref() {
        let (dir, store, sid) = completed();
        let p = dir.path();
        let tip = git(p, &["rev-parse", &session_ref(&sid)]);
        // IMPL-001's branch holds a commit the session never merged; TEST-001's is merged.
        let side = git(
            p,
            &[
                "commit-tree",
                &format!("{tip}^{{tree}}"),
                "-p",
                &tip,
                "-m",
                "unmerged work",
            ],
        );
        git(
            p,
            &[
                "update-ref",
                &format!("refs/heads/tlv4/{sid}.IMPL-001"),
                &side,
            ],
        );
        git(
            p,
            &[
                "update-ref",
                &format!("refs/heads/tlv4/{sid}.TEST-001"),
                &tip,
            ],
        );
        let Done::Archived(target) = apply(&store, &sid, &Completion::Archive, false).unwrap()
        else {
            panic!("archived")
        };
        assert_eq!(target, format!("refs/tlv4/archive/{sid}"));
        let refs = git(p, &["for-each-ref", "--format=%(refname) %(objectname)"]);
        assert!(!refs.contains("refs/heads/tlv4/"), "{refs}");
        assert!(
            refs.contains(&format!("refs/tlv4/runs/{sid}/IMPL-001/1 {side}")),
            "{refs}"
        );
        assert!(
            !refs.contains(&format!("refs/tlv4/runs/{sid}/TEST-001")),
            "{refs}"
        );
        git(p, &["fsck", "--strict", "--no-dangling"]);
    }
}
