//! A session's pinned configuration: `config.lock` (blob ids) in its pipeline folder, the
//! content in the local ref `refs/tlv4/pinned/<SID>`, read by every later run instead of the
//! working tree (`specs/state-format.md` §7.8).

use std::collections::BTreeMap;

use tlv4_core::error::{Error, Result};
use tlv4_core::trust::Files;

/// The local ref keeping the configuration session `sid` started with.
pub use crate::store::refs::pinned_ref;

/// The file in the pipeline folder listing the pinned configuration's blob ids.
pub use crate::store::CONFIG_LOCK as LOCK;

/// The `config.lock` text for `files`.
pub fn lock_text(files: &Files) -> String {
    let mut out = String::from(
        "# The configuration this session runs with, pinned when it started.\n\
         # <git blob id> <path>; the content is kept in the local ref refs/tlv4/pinned/<SID>.\n",
    );
    for (p, id) in files.ids() {
        out.push_str(&format!("{id} {p}\n"));
    }
    out
}

fn parse_lock(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once(' '))
        .map(|(id, p)| (p.to_owned(), id.to_owned()))
        .collect()
}

/// Keeps `files` as the pinned configuration of session `sid`: writes its content as a blob
/// under [`pinned_ref`] and returns the `config.lock` text for the pipeline folder.
///
/// `agents` are the `--agent` values the session started with: kept here, on this machine,
/// they are what later runs may take from the session's settings without the command line
/// naming them again (a session fetched from elsewhere has none here).
pub fn pin(
    store: &crate::store::Store,
    sid: &tlv4_core::model::SessionId,
    files: &Files,
    agents: &[String],
) -> Result<String> {
    let id = store
        .repo()
        .write_blob(files.to_json(agents))
        .map_err(|e| Error::git("cannot write the pinned configuration", e))?
        .detach();
    let name = pinned_ref(sid);
    match store.try_ref(&name)? {
        Some(old) if old == id => {}
        Some(old) => store.update_ref(&name, old, id, "tlv4: pin the session's configuration")?,
        None => {
            store.create_ref(&name, id, "tlv4: pin the session's configuration")?;
        }
    }
    Ok(lock_text(files))
}

/// The `--agent` values session `sid` was started with in this repository, if it was.
pub fn pinned_agents(
    store: &crate::store::Store,
    sid: &tlv4_core::model::SessionId,
) -> Option<Vec<String>> {
    let id = store.try_ref(&pinned_ref(sid)).ok()??;
    let data = store.repo().find_object(id).ok()?.data.clone();
    let v: serde_json::Value = serde_json::from_slice(&data).ok()?;
    v["agents"]
        .as_array()?
        .iter()
        .map(|a| a.as_str().map(str::to_owned))
        .collect()
}

/// The configuration session `sid` runs with, read at its tip `tip`, and the paths where the
/// working tree's differs from it. Sessions from before pinning run with the working tree's.
pub fn pinned(
    store: &crate::store::Store,
    sid: &tlv4_core::model::SessionId,
) -> Result<(Files, Vec<String>)> {
    pinned_against(store, sid, Files::read(store.workdir())?)
}

/// [`pinned`], with `current`, the working tree's configuration files, already read.
pub fn pinned_against(
    store: &crate::store::Store,
    sid: &tlv4_core::model::SessionId,
    current: Files,
) -> Result<(Files, Vec<String>)> {
    let tip = store.tip(sid)?;
    let tree = store.commit_tree(tip)?;
    let Some(lock) =
        store.read_blob_at(tree, &format!("{}/{LOCK}", crate::store::session_dir(sid)))?
    else {
        return Ok((current, Vec::new()));
    };
    let lock = parse_lock(&String::from_utf8_lossy(&lock));
    let kept = store
        .try_ref(&pinned_ref(sid))?
        .and_then(|id| store.repo().find_object(id).ok().map(|o| o.data.clone()))
        .and_then(|b| Files::from_json(&b))
        .filter(|f| f.ids() == lock);
    let files = match kept {
        Some(f) => f,
        None if current.ids() == lock => current.clone(),
        None => {
            return Err(Error::state(
                format!(
                    "session {sid} runs with the configuration pinned when it started (its {LOCK}), which is not in this repository ({} is missing) and differs from the working tree's",
                    pinned_ref(sid)
                ),
                Some(format!(
                    "check out a tree whose .tlv4.toml and .tlv4/specs/ match {} of the session, or start a new session",
                    LOCK
                )),
            ));
        }
    };
    let changed = files.differences(&current);
    Ok((files, changed))
}

/// Pins session `sid` to `current`, the working tree's configuration, from now on (`resume
/// --reconfigure`), recorded as a user decision; the paths that changed, or `None` when it
/// already runs with it. The caller has checked that `current` loads (pipelines, review
/// rules, role instructions: what the layers above this one make of it).
pub fn repin(
    store: &crate::store::Store,
    sid: &tlv4_core::model::SessionId,
    current: &Files,
) -> Result<Option<Vec<String>>> {
    let current = current.clone();
    let before = pinned(store, sid).map(|(f, _)| f).unwrap_or_default();
    let agents = pinned_agents(store, sid).unwrap_or_default();
    let changed = before.differences(&current);
    if changed.is_empty() {
        // The ref may still be missing (a pulled session): keep the content here.
        pin(store, sid, &current, &agents)?;
        return Ok(None);
    }
    let text = lock_text(&current);
    let summary = format!(
        "reconfigure: the session runs with the working tree's configuration from now on; changed: {}",
        changed.join(", ")
    );
    // The lock first, then the content: a crash between them leaves a lock that the
    // working tree (the content just read) still matches.
    store.transact(sid, |txn| {
        txn.write_config_lock(text.clone());
        Ok(Some(
            tlv4_core::model::Event::session(
                tlv4_core::model::EventKind::UserDecision,
                summary.clone(),
            )
            .with("Decision", "reconfigure"),
        ))
    })?;
    pin(store, sid, &current, &agents)?;
    Ok(Some(changed))
}
