//! The session store: the only module that knows ref names, tree layout, trailers and notes.
//!
//! A session is the branch `refs/heads/tlv4/<SID>`. Its tip tree holds the whole current state
//! under `.tlv4/sessions/<SID>/`, so reading state is one tree read. Every change is one new
//! commit on that branch (an *event*), written objects first and published by a single
//! compare-and-swap of the ref: a crash leaves the old state or the new one, never a mix, and
//! concurrent writers re-apply their change on the new tip instead of overwriting each other.

mod log;
mod notes;
mod read;
mod write;

pub use log::{HistoryEntry, LoggedEvent, OtherCommit};
pub use notes::MessageList;
pub use write::{Txn, Written, validate_pipeline_path};

use std::path::{Path, PathBuf};

use gix::bstr::ByteSlice;

use crate::error::{Error, Result};
use crate::model::SessionId;

/// Ref namespace of session branches (and task branches `tlv4/<SID>.<TASK>`).
pub const SESSION_REF_PREFIX: &str = "refs/heads/tlv4/";
/// Ref namespace of message-bus notes.
pub const NOTES_REF_PREFIX: &str = "refs/notes/tlv4/";
/// Name and email used when git has no identity configured.
pub const FALLBACK_IDENTITY: (&str, &str) = ("git-tlv4", "git-tlv4@localhost");
/// How many events a session takes between two runs of git's own auto-maintenance.
pub const MAINTENANCE_EVERY: u64 = 100;

/// The full ref name of a session branch.
pub fn session_ref(sid: &SessionId) -> String {
    format!("{SESSION_REF_PREFIX}{sid}")
}

/// Where an archived session stays reachable: outside `refs/heads`, so branch listings
/// no longer show it.
pub const ARCHIVE_REF_PREFIX: &str = "refs/tlv4/archive/";

/// The full ref name of an archived session.
pub fn archive_ref(sid: &SessionId) -> String {
    format!("{ARCHIVE_REF_PREFIX}{sid}")
}

/// The notes ref of review scores.
pub const REVIEW_NOTES_REF: &str = "refs/notes/tlv4-review";

/// Every ref namespace the tool writes under (the review notes ref aside).
const OUR_REF_PREFIXES: [&str; 4] = [
    SESSION_REF_PREFIX,
    NOTES_REF_PREFIX,
    "refs/heads/tlv4-export/",
    TOOL_REF_PREFIX,
];

/// The namespace of the tool's own refs outside branches and notes (archives, kept runs).
pub const TOOL_REF_PREFIX: &str = "refs/tlv4/";

/// The full ref name of a session's message notes.
pub fn notes_ref(sid: &SessionId) -> String {
    format!("{NOTES_REF_PREFIX}{sid}")
}

/// The folder of a session inside the branch tree.
pub fn session_dir(sid: &SessionId) -> String {
    format!(".tlv4/sessions/{sid}")
}

/// An open repository and the identity events are written with.
pub struct Store {
    repo: gix::Repository,
    identity: (gix::bstr::BString, gix::bstr::BString),
    /// Set when `GIT_COMMITTER_DATE` fixes the clock (tests do).
    fixed_time: Option<gix::date::Time>,
    /// Parsed task files by blob id, with their bytes.
    task_cache:
        std::cell::RefCell<std::collections::HashMap<gix::ObjectId, (crate::model::Task, Vec<u8>)>>,
}

impl Store {
    /// Opens the repository containing `dir`, honouring `GIT_DIR` and friends the way git does.
    pub fn discover(dir: &Path) -> Result<Store> {
        let repo = gix::ThreadSafeRepository::discover_with_environment_overrides(dir)
            .map_err(|_| Error::NotARepository(dir.to_owned()))?
            .to_thread_local();
        Self::from_repo(repo)
    }

    /// Wraps an opened repository.
    pub fn from_repo(repo: gix::Repository) -> Result<Store> {
        if repo.workdir().is_none() {
            return Err(Error::BareRepository(repo.git_dir().to_owned()));
        }
        let identity = match repo.committer() {
            Some(Ok(sig)) => (sig.name.to_owned(), sig.email.to_owned()),
            _ => (FALLBACK_IDENTITY.0.into(), FALLBACK_IDENTITY.1.into()),
        };
        let fixed_time =
            crate::clock::fixed().map(|seconds| gix::date::Time { seconds, offset: 0 });
        Ok(Store {
            repo,
            identity,
            fixed_time,
            task_cache: Default::default(),
        })
    }

    /// The underlying repository.
    pub fn repo(&self) -> &gix::Repository {
        &self.repo
    }

    /// The root of the working tree.
    pub fn workdir(&self) -> &Path {
        self.repo
            .workdir()
            .expect("bare repositories are refused when opening")
    }

    /// The signature for a commit written now.
    pub fn signature(&self) -> gix::actor::Signature {
        gix::actor::Signature {
            name: self.identity.0.clone(),
            email: self.identity.1.clone(),
            time: self
                .fixed_time
                .unwrap_or_else(gix::date::Time::now_local_or_utc),
        }
    }

    /// The commit `HEAD` points to, refusing an unborn `HEAD`.
    pub fn head_commit(&self) -> Result<gix::ObjectId> {
        match self.repo.head_id() {
            Ok(id) => Ok(id.detach()),
            Err(_) => Err(Error::NoCommits),
        }
    }

    /// The full name of the branch `HEAD` is on, if any.
    pub fn head_branch(&self) -> Option<String> {
        self.repo
            .head_name()
            .ok()
            .flatten()
            .map(|n| n.as_bstr().to_string())
    }

    /// Every session, in name order (task branches `tlv4/<SID>.<TASK>` are not sessions).
    pub fn sessions(&self) -> Result<Vec<SessionId>> {
        let refs = self
            .repo
            .references()
            .map_err(|e| Error::git("cannot read references", e))?;
        let iter = refs
            .prefixed(SESSION_REF_PREFIX)
            .map_err(|e| Error::git("cannot read references", e))?;
        let mut out = Vec::new();
        for r in iter {
            let r = r.map_err(|e| Error::Git(format!("cannot read references: {e}")))?;
            let name = r.name().as_bstr().to_str_lossy();
            let short = &name[SESSION_REF_PREFIX.len()..];
            if let Ok(sid) = short.parse::<SessionId>() {
                out.push(sid);
            }
        }
        out.sort();
        Ok(out)
    }

    /// Every ref under `prefix` with the object it points to.
    pub fn refs_with_prefix(&self, prefix: &str) -> Result<Vec<(String, gix::ObjectId)>> {
        let refs = self
            .repo
            .references()
            .map_err(|e| Error::git("cannot read references", e))?;
        let iter = refs
            .prefixed(prefix)
            .map_err(|e| Error::git("cannot read references", e))?;
        let mut out = Vec::new();
        for r in iter {
            let mut r = r.map_err(|e| Error::Git(format!("cannot read references: {e}")))?;
            let name = r.name().as_bstr().to_string();
            if let Ok(id) = r.peel_to_id() {
                out.push((name, id.detach()));
            }
        }
        Ok(out)
    }

    /// Archived sessions, in name order.
    pub fn archived(&self) -> Result<Vec<SessionId>> {
        Ok(self
            .refs_with_prefix(ARCHIVE_REF_PREFIX)?
            .into_iter()
            .filter_map(|(n, _)| n[ARCHIVE_REF_PREFIX.len()..].parse().ok())
            .collect())
    }

    /// The session a command acts on: `explicit` if given; else the one whose branch or task
    /// branch is checked out; else the only one.
    pub fn resolve_session(&self, explicit: Option<&str>) -> Result<SessionId> {
        let known = self.sessions()?;
        if let Some(name) = explicit {
            return match name.parse::<SessionId>() {
                Ok(sid) if known.contains(&sid) || self.archived()?.contains(&sid) => Ok(sid),
                _ => Err(Error::UnknownSession {
                    name: name.to_owned(),
                    known,
                }),
            };
        }
        if let Some(branch) = self.head_branch()
            && let Some(short) = branch.strip_prefix(SESSION_REF_PREFIX)
        {
            let sid = short.split('.').next().unwrap_or(short);
            if let Some(sid) = known.iter().find(|k| k.as_str() == sid) {
                return Ok(sid.clone());
            }
        }
        match known.len() {
            0 => Err(Error::NoSession),
            1 => Ok(known.into_iter().next().expect("one element")),
            _ => Err(Error::AmbiguousSession(known)),
        }
    }

    /// The commit a session branch points to.
    pub fn tip(&self, sid: &SessionId) -> Result<gix::ObjectId> {
        if let Some(id) = self.try_ref(&session_ref(sid))? {
            return Ok(id);
        }
        if let Some(id) = self.try_ref(&archive_ref(sid))? {
            return Ok(id);
        }
        Err(Error::UnknownSession {
            name: sid.to_string(),
            known: self.sessions().unwrap_or_default(),
        })
    }

    /// The tip of the session branch, for writing: an archived session is read-only.
    pub(crate) fn writable_tip(&self, sid: &SessionId) -> Result<gix::ObjectId> {
        if let Some(id) = self.try_ref(&session_ref(sid))? {
            return Ok(id);
        }
        if self.try_ref(&archive_ref(sid))?.is_some() {
            return Err(Error::state(
                format!("session `{sid}` is archived and read-only"),
                Some(format!(
                    "fork it to continue: git tlv4 fork --session {sid} --at EVENT"
                )),
            ));
        }
        self.tip(sid)
    }

    /// Whether id `sid` is taken for a new session whose first tree is `tree`: by a live
    /// session, an archived one, a message bus, task branches or refs kept under `refs/tlv4/`
    /// for the id, or a pipeline folder `.tlv4/sessions/<SID>/` already in the tree (a merged
    /// or exported session, whose `runs/`, plan and reports the new one would otherwise read).
    pub fn id_taken(&self, sid: &SessionId, tree: gix::ObjectId) -> Result<bool> {
        if self.try_ref(&session_ref(sid))?.is_some()
            || self.try_ref(&archive_ref(sid))?.is_some()
            || self.try_ref(&notes_ref(sid))?.is_some()
        {
            return Ok(true);
        }
        // Task branches `tlv4/<SID>.<TASK>`, and anything kept under `refs/tlv4/<what>/<SID>`
        // (`runs/<SID>/…` and whatever else the tool keeps per session there).
        let task_branch = format!("{}.", session_ref(sid));
        if self
            .refs_with_prefix(SESSION_REF_PREFIX)?
            .iter()
            .any(|(n, _)| n.starts_with(&task_branch))
            || self
                .refs_with_prefix(TOOL_REF_PREFIX)?
                .iter()
                .any(|(n, _)| n.split('/').any(|part| part == sid.as_str()))
        {
            return Ok(true);
        }
        let root = self
            .repo
            .find_tree(tree)
            .map_err(|e| Error::git("cannot read tree", e))?;
        Ok(root
            .lookup_entry_by_path(session_dir(sid))
            .map_err(|e| Error::git("cannot read tree", e))?
            .is_some())
    }

    /// The first free id `SessionId::from_text(text, date, n)` for `n = from, from + 1, …`
    /// (see [`Store::id_taken`]).
    pub fn free_id(
        &self,
        text: &str,
        date: &str,
        from: u32,
        tree: gix::ObjectId,
    ) -> Result<(SessionId, u32)> {
        let mut n = from.max(1);
        loop {
            let sid = SessionId::from_text(text, date, n);
            if !self.id_taken(&sid, tree)? {
                return Ok((sid, n));
            }
            n += 1;
        }
    }

    /// The object a ref points to, if the ref exists.
    pub(crate) fn try_ref(&self, name: &str) -> Result<Option<gix::ObjectId>> {
        let found = self
            .repo
            .try_find_reference(name)
            .map_err(|e| Error::git(&format!("cannot read `{name}`"), e))?;
        match found {
            None => Ok(None),
            Some(mut r) => r
                .peel_to_id()
                .map(|id| Some(id.detach()))
                .map_err(|e| Error::git(&format!("cannot resolve `{name}`"), e)),
        }
    }

    /// The working trees (main and linked) that have `full_ref` checked out.
    pub fn checked_out_in(&self, full_ref: &str) -> Vec<PathBuf> {
        let common = self.repo.common_dir();
        let mut found = Vec::new();
        let head_is = |head: &Path| {
            std::fs::read_to_string(head)
                .map(|s| {
                    s.trim()
                        .strip_prefix("ref: ")
                        .is_some_and(|r| r == full_ref)
                })
                .unwrap_or(false)
        };
        if head_is(&common.join("HEAD"))
            && let Some(dir) = self.main_workdir()
        {
            found.push(dir);
        }
        if let Ok(entries) = std::fs::read_dir(common.join("worktrees")) {
            for entry in entries.flatten() {
                if head_is(&entry.path().join("HEAD")) {
                    let dir = std::fs::read_to_string(entry.path().join("gitdir"))
                        .ok()
                        .and_then(|g| Path::new(g.trim()).parent().map(Path::to_owned))
                        .unwrap_or_else(|| entry.path());
                    found.push(dir);
                }
            }
        }
        found
    }

    fn main_workdir(&self) -> Option<PathBuf> {
        let common = self.repo.common_dir();
        if common.file_name().is_some_and(|n| n == ".git") {
            common.parent().map(Path::to_owned)
        } else {
            self.repo.workdir().map(Path::to_owned)
        }
    }

    /// Refuses to move `full_ref` when a working tree has it checked out.
    pub fn ensure_not_checked_out(&self, full_ref: &str) -> Result<()> {
        match self.checked_out_in(full_ref).into_iter().next() {
            None => Ok(()),
            Some(worktree) => Err(Error::CheckedOut {
                branch: full_ref.trim_start_matches("refs/heads/").to_owned(),
                worktree,
            }),
        }
    }

    /// Lock files of our refs older than `min_age`, which no live writer holds: a writer holds
    /// a ref lock for microseconds (and gives up waiting after 3 seconds), so an old one was
    /// left by a process that died. Ours are the locks of every ref the tool writes (sessions,
    /// task branches, message buses, the review notes, archives, exports, kept runs) and of
    /// `packed-refs`, which deleting a ref (archive) locks.
    pub fn stale_locks(&self, min_age: std::time::Duration) -> Vec<PathBuf> {
        let common = self.repo.common_dir();
        let old = |p: &Path| {
            std::fs::metadata(p)
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age >= min_age)
        };
        let mut found = Vec::new();
        let packed = common.join("packed-refs.lock");
        if old(&packed) {
            found.push(packed);
        }
        // `refs/notes/tlv4-review.lock` sits beside `refs/notes/tlv4/`, so each namespace is
        // matched by name: a lock file's ref is its path without `.lock`.
        let ours = |name: &str| {
            OUR_REF_PREFIXES.iter().any(|p| name.starts_with(p)) || name == REVIEW_NOTES_REF
        };
        let mut stack = vec![common.join("refs")];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    stack.push(path);
                    continue;
                }
                let Some(name) = path
                    .strip_prefix(common)
                    .ok()
                    .and_then(|r| r.to_str())
                    .and_then(|r| r.strip_suffix(".lock"))
                else {
                    continue;
                };
                if ours(name) && old(&path) {
                    found.push(path);
                }
            }
        }
        found.sort();
        found
    }
}
