//! What `list` shows of each session, read in one pass over the refs.
//!
//! A session's row is a function of its tip commit alone, so rows are kept in a cache file,
//! `<git dir>/tlv4/list-cache.json`, keyed by session and tip. Only a session whose tip moved
//! since the cache was written is read again (one tree read at its tip); the cache holds
//! nothing the refs do not decide, and deleting it only costs the next `list` a full read.

use std::collections::BTreeMap;
use std::path::PathBuf;

use gix::ObjectId;

use super::{ARCHIVE_REF_PREFIX, SESSION_REF_PREFIX, Store};
use tlv4_core::error::Result;
use tlv4_core::model::{Progress, SessionId};

/// The cache's format; a file of another one is read as empty.
const CACHE_VERSION: u32 = 1;

/// One session as `list` shows it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Summary {
    /// The session id.
    pub id: String,
    /// Its status (`active`, `paused`, …), or `unreadable: …`.
    pub status: String,
    /// Whether it is archived (kept under `refs/tlv4/archive/`, its branches removed).
    pub archived: bool,
    /// Its pipeline.
    pub pipeline: String,
    /// Its tasks, counted.
    pub progress: Progress,
    /// The commit it forked from.
    pub base: String,
    /// The commit its branch (or archive ref) points to.
    pub tip: String,
    /// When its last event was written.
    pub updated_at: String,
    /// The task text it was started with.
    pub task: String,
}

/// The cache file's contents.
#[derive(Default, serde::Serialize, serde::Deserialize)]
struct Cache {
    version: u32,
    /// Rows by tip commit id (a tip is one session's: its tree holds the session's folder).
    rows: BTreeMap<String, Summary>,
}

impl Store {
    /// Every live session (and, with `archived`, every archived one) with what `list` shows,
    /// in id order. Sessions whose tip is in the cache are not read.
    pub fn summaries(&self, archived: bool) -> Result<Vec<Summary>> {
        let mut tips: Vec<(SessionId, ObjectId, bool)> = Vec::new();
        for (name, id) in self.refs_with_prefix(SESSION_REF_PREFIX)? {
            if let Ok(sid) = name[SESSION_REF_PREFIX.len()..].parse::<SessionId>() {
                tips.push((sid, id, false));
            }
        }
        if archived {
            for (name, id) in self.refs_with_prefix(ARCHIVE_REF_PREFIX)? {
                if let Ok(sid) = name[ARCHIVE_REF_PREFIX.len()..].parse::<SessionId>() {
                    tips.push((sid, id, true));
                }
            }
        }
        tips.sort_by(|a, b| a.0.cmp(&b.0));
        let path = self.cache_path();
        let mut cache = std::fs::read(&path)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Cache>(&bytes).ok())
            .filter(|c| c.version == CACHE_VERSION)
            .unwrap_or_default();
        let mut changed = false;
        let mut out = Vec::with_capacity(tips.len());
        for (sid, tip, is_archived) in tips {
            let key = tip.to_string();
            if let Some(row) = cache.rows.get(&key).filter(|r| r.id == sid.as_str()) {
                out.push(Summary {
                    archived: is_archived,
                    ..row.clone()
                });
                continue;
            }
            let row = match self.read_state_at(&sid, tip) {
                Ok((state, _)) => {
                    let row = Summary {
                        id: sid.to_string(),
                        status: state.session.status.as_str().to_owned(),
                        archived: is_archived,
                        pipeline: state.session.pipeline.clone(),
                        progress: state.progress(),
                        base: state.session.base.clone(),
                        tip: key.clone(),
                        updated_at: state.session.updated_at.clone(),
                        task: state.session.task.clone(),
                    };
                    cache.rows.insert(key, row.clone());
                    changed = true;
                    row
                }
                // One unreadable session must not hide the others; it is not cached.
                Err(e) => Summary {
                    id: sid.to_string(),
                    status: format!("unreadable: {e}"),
                    archived: is_archived,
                    pipeline: String::new(),
                    progress: Progress::default(),
                    base: String::new(),
                    tip: key,
                    updated_at: String::new(),
                    task: String::new(),
                },
            };
            out.push(row);
        }
        // Rows of tips no ref points to any more are dropped, once they outnumber the live
        // ones, so the file stays about as large as the list.
        if cache.rows.len() > 2 * out.len() + 64 {
            let live: std::collections::HashSet<&str> =
                out.iter().map(|r| r.tip.as_str()).collect();
            cache.rows.retain(|tip, _| live.contains(tip.as_str()));
            changed = true;
        }
        if changed {
            cache.version = CACHE_VERSION;
            self.write_cache(&path, &cache);
        }
        Ok(out)
    }

    fn cache_path(&self) -> PathBuf {
        self.repo.common_dir().join("tlv4").join("list-cache.json")
    }

    /// Writes the cache through a temporary file and a rename, so a reader sees the old file
    /// or the new one. A cache that cannot be written is only slower next time.
    fn write_cache(&self, path: &std::path::Path, cache: &Cache) {
        let Some(dir) = path.parent() else { return };
        let Ok(bytes) = serde_json::to_vec(cache) else {
            return;
        };
        let _ = std::fs::create_dir_all(dir).and_then(|()| {
            let tmp = dir.join(format!("list-cache.{}.tmp", std::process::id()));
            std::fs::write(&tmp, &bytes)
                .and_then(|()| std::fs::rename(&tmp, path))
                .inspect_err(|_| {
                    let _ = std::fs::remove_file(&tmp);
                })
        });
    }
}
