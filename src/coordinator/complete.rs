//! Completion actions: archive, keep, export.

use gix::object::tree::EntryKind;

use crate::error::{Error, Result};
use crate::model::{Event, EventKind, SessionId, SessionStatus};
use crate::store::{SESSION_REF_PREFIX, Store, archive_ref, session_dir, session_ref};

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

/// Runs completion action `action` (`archive`, `keep`, `export`) on a completed session.
pub fn apply(store: &Store, sid: &SessionId, action: &str, export_spec: bool) -> Result<Done> {
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
        "keep" => {
            record(
                store,
                sid,
                "keep",
                "Kept: the session branch stays as it is",
            )?;
            Ok(Done::Kept)
        }
        "archive" => archive(store, sid),
        "export" => export(store, sid, export_spec),
        other => Err(Error::Invalid(format!(
            "unknown completion action `{other}`; use archive, keep or export"
        ))),
    }
}

fn record(store: &Store, sid: &SessionId, action: &str, summary: &str) -> Result<gix::ObjectId> {
    let written = store.transact(sid, |_| {
        Ok(Some(
            Event::session(EventKind::CompletionAction, summary.to_owned()).with("Action", action),
        ))
    })?;
    Ok(written.expect("the change always writes").commit)
}

/// Moves the session to `refs/tlv4/archive/<SID>` and removes its branches (the task branches
/// `tlv4/<SID>.*` and the session branch), each with the value it must have.
fn archive(store: &Store, sid: &SessionId) -> Result<Done> {
    let target = archive_ref(sid);
    let tip = record(store, sid, "archive", &format!("Archived to {target}"))?;
    if !store.create_ref(&target, tip, "tlv4: archive")? {
        return Err(Error::conflict(format!("`{target}` already exists"), None));
    }
    // Task branches `tlv4/<SID>.<TASK>` (gix refuses a prefix ending in `.`, so filter here).
    let task_prefix = format!("{SESSION_REF_PREFIX}{sid}.");
    let task_branches = store
        .refs_with_prefix(SESSION_REF_PREFIX)?
        .into_iter()
        .filter(|(n, _)| n.starts_with(&task_prefix));
    for (name, id) in task_branches {
        store.ensure_not_checked_out(&name)?;
        store.delete_ref(&name, id)?;
    }
    store.ensure_not_checked_out(&session_ref(sid))?;
    store.delete_ref(&session_ref(sid), tip)?;
    Ok(Done::Archived(target))
}

/// A branch `tlv4-export/<SID>` with one commit on the base: the session's code without
/// `.tlv4/`, plus the spec and plan documents under `docs/tlv4/<SID>/` when `with_spec`.
fn export(store: &Store, sid: &SessionId, with_spec: bool) -> Result<Done> {
    let git = |e: gix::Error| Error::git("cannot export the session", e);
    let (tip, state) = store.read_state(sid)?;
    let tree = store.commit_tree(tip)?;
    let repo = store.repo();
    let mut editor = repo.edit_tree(tree).map_err(git)?;
    editor.remove(".tlv4").map_err(git)?;
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
    let name = format!("refs/heads/tlv4-export/{sid}");
    if !store.create_ref(&name, commit, "tlv4: export")? {
        return Err(Error::state(
            format!("`{name}` already exists"),
            Some(format!("delete it first: git branch -D tlv4-export/{sid}")),
        ));
    }
    record(
        store,
        sid,
        "export",
        &format!("Exported to {name} ({commit})"),
    )?;
    Ok(Done::Exported(name))
}
