//! The session store: the only module that knows ref names ([`refs`] builds every one), tree
//! layout, trailers and notes.
//!
//! A session is the branch `refs/heads/tlv4/<SID>`. Its tip tree holds the whole current state
//! under `.tlv4/sessions/<SID>/`, so reading state is one tree read. Every change is one new
//! commit on that branch (an *event*), written objects first and published by a single
//! compare-and-swap of the ref: a crash leaves the old state or the new one, never a mix, and
//! concurrent writers re-apply their change on the new tip instead of overwriting each other.

mod compact;
mod lease;
mod log;
mod notes;
mod read;
pub mod refs;
mod remote;
mod summary;
mod write;

pub use compact::{COMPACTED_FILES, Compaction, human_bytes};
pub use lease::{Holding, Lease, now_ms, turn_ref, turn_release};
pub use log::{HistoryEntry, LoggedEvent, OtherCommit};
pub use notes::MessageList;
pub use refs::{
    ARCHIVE_REF_PREFIX, LEASE_REF_PREFIX, NOTES_REF_PREFIX, REMOTE_MIRROR_PREFIX, REVIEW_NOTES_REF,
    SESSION_REF_PREFIX, TOOL_REF_PREFIX, archive_ref, lease_ref, notes_ref, session_ref,
};
pub use remote::{Diverged, Pulled, Pushed, Remote, RemoteSession, RemoteStats, SidesMerged};
pub use summary::Summary;
pub use write::{ChainStep, RemoteEdit, Txn, Written};

use std::path::{Path, PathBuf};

use gix::bstr::ByteSlice;

use tlv4_core::error::{Error, Gone, Result};
use tlv4_core::model::SessionId;

/// Name and email used when git has no identity configured.
pub const FALLBACK_IDENTITY: (&str, &str) = ("git-tlv4", "git-tlv4@localhost");
/// How many events a session takes between two runs of git's own auto-maintenance.
pub const MAINTENANCE_EVERY: u64 = 100;

/// What `--session` takes for "the live session updated last".
pub const MOST_RECENT: &str = "@";

/// The session of a branch name below `refs/heads/tlv4/`: `<SID>` or a task branch
/// `<SID>.<TASK>`, if it is one of `known` (the longest that fits, should an id hold a `.`).
fn session_of_branch(short: &str, known: &[SessionId]) -> Option<SessionId> {
    known
        .iter()
        .filter(|k| {
            short == k.as_str()
                || short
                    .strip_prefix(k.as_str())
                    .is_some_and(|rest| rest.starts_with('.'))
        })
        .max_by_key(|k| k.as_str().len())
        .cloned()
}

/// Every ref namespace the tool writes under (the review notes ref aside).
const OUR_REF_PREFIXES: [&str; 4] = [
    SESSION_REF_PREFIX,
    NOTES_REF_PREFIX,
    refs::EXPORT_REF_PREFIX,
    TOOL_REF_PREFIX,
];

/// The file in the pipeline folder listing the blob ids of the configuration the session
/// was pinned to (written by [`tlv4_core::trust`], reserved in the tree layout here).
pub const CONFIG_LOCK: &str = "config.lock";

/// The folder of a session inside the branch tree.
pub fn session_dir(sid: &SessionId) -> String {
    format!(".tlv4/sessions/{sid}")
}

/// The error for a repository whose object format (`sha1`, `sha256`) or ref storage
/// (`files`, `reftable`) git-tlv4 cannot work with, if it is one.
fn unsupported(path: &Path, objects: &str, refs: &str) -> Option<Error> {
    let mut what = Vec::new();
    if objects != "sha1" {
        let name = match objects {
            "sha256" => "SHA-256",
            other => other,
        };
        what.push(format!(
            "{name} object ids (`extensions.objectFormat = {objects}`)"
        ));
    }
    if refs != "files" {
        what.push(format!(
            "the {refs} ref storage (`extensions.refStorage = {refs}`)"
        ));
    }
    (!what.is_empty()).then(|| Error::UnsupportedRepository {
        path: path.to_owned(),
        what: what.join(" and "),
        reftable: refs != "files",
        sha256: objects != "sha1",
    })
}

/// A working tree that has a branch checked out.
struct Holder {
    /// Its directory.
    dir: PathBuf,
    /// Whether that directory is gone.
    gone: bool,
    /// Its lock reason, when locked.
    locked: Option<String>,
}

/// An open repository and the identity events are written with.
pub struct Store {
    repo: gix::Repository,
    identity: (gix::bstr::BString, gix::bstr::BString),
    /// Set when `GIT_COMMITTER_DATE` fixes the clock (tests do).
    fixed_time: Option<gix::date::Time>,
    /// Parsed task files by blob id, with their bytes.
    task_cache: std::cell::RefCell<
        std::collections::HashMap<gix::ObjectId, (tlv4_core::model::Task, Vec<u8>)>,
    >,
    /// What this store did through remotes.
    remote_stats: std::cell::Cell<RemoteStats>,
}

impl Store {
    /// Opens the repository containing `dir`, honouring `GIT_DIR` and friends the way git does.
    pub fn discover(dir: &Path) -> Result<Store> {
        let repo = gix::ThreadSafeRepository::discover_with_environment_overrides(dir)
            .map_err(|_| {
                // gix does not open what it cannot read (SHA-256 object ids); git may.
                match tlv4_core::git::repository_format(dir) {
                    Some((git_dir, objects, refs)) => unsupported(&git_dir, &objects, &refs)
                        .unwrap_or_else(|| Error::NotARepository(dir.to_owned())),
                    None => Error::NotARepository(dir.to_owned()),
                }
            })?
            .to_thread_local();
        Self::from_repo(repo)
    }

    /// Wraps an opened repository.
    pub fn from_repo(repo: gix::Repository) -> Result<Store> {
        if repo.workdir().is_none() {
            return Err(Error::BareRepository(repo.git_dir().to_owned()));
        }
        // gix opens a reftable repository but sees none of its refs: no commits, no sessions.
        let config = repo.config_snapshot();
        let setting = |key: &str, default: &str| {
            config
                .string(key)
                .map_or(default.to_owned(), |v| v.to_str_lossy().to_lowercase())
        };
        let (objects, refs) = (
            setting("extensions.objectFormat", "sha1"),
            setting("extensions.refStorage", "files"),
        );
        if let Some(e) = unsupported(repo.workdir().unwrap_or(repo.git_dir()), &objects, &refs) {
            return Err(e);
        }
        let identity = match repo.committer() {
            Some(Ok(sig)) => (sig.name.to_owned(), sig.email.to_owned()),
            _ => (FALLBACK_IDENTITY.0.into(), FALLBACK_IDENTITY.1.into()),
        };
        let fixed_time =
            tlv4_core::clock::fixed().map(|seconds| gix::date::Time { seconds, offset: 0 });
        Ok(Store {
            repo,
            identity,
            fixed_time,
            task_cache: Default::default(),
            remote_stats: Default::default(),
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

    /// Refuses to go on when a ref sits where git-tlv4's ref namespaces need a directory: a
    /// branch named `tlv4` blocks every `refs/heads/tlv4/<SID>`, a ref `refs/tlv4` the archive,
    /// and so on. git cannot hold both, and finding out when the first ref is written would
    /// leave objects behind; so this runs before anything is written.
    pub fn ensure_namespaces(&self) -> Result<()> {
        const NAMESPACES: [&str; 5] = [
            SESSION_REF_PREFIX,
            NOTES_REF_PREFIX,
            ARCHIVE_REF_PREFIX,
            refs::RUNS_REF_PREFIX,
            refs::EXPORT_REF_PREFIX,
        ];
        let common = self.repo.common_dir();
        for namespace in NAMESPACES {
            let parts: Vec<&str> = namespace.trim_end_matches('/').split('/').collect();
            // `refs/heads/tlv4/` is blocked by `refs/heads/tlv4`; `refs/tlv4/archive/` by
            // `refs/tlv4` or `refs/tlv4/archive`. `refs` and `refs/heads` are git's own.
            for depth in 2..=parts.len() {
                let name = parts[..depth].join("/");
                if matches!(name.as_str(), "refs/heads" | "refs/notes") {
                    continue;
                }
                let is_ref = common.join(&name).is_file()
                    || self
                        .repo
                        .try_find_reference(name.as_str())
                        .map_or(true, |r| r.is_some());
                if !is_ref {
                    continue;
                }
                let (what, rename) = match name.strip_prefix(refs::BRANCH_PREFIX) {
                    Some(branch) => (
                        format!("the branch `{branch}`"),
                        format!("git branch -m {branch} {branch}-old"),
                    ),
                    None => (
                        format!("the ref `{name}`"),
                        format!("git update-ref {name}-old {name} && git update-ref -d {name}"),
                    ),
                };
                return Err(Error::state(
                    format!(
                        "{what} is in the way of git tlv4's refs under `{namespace}`: git cannot \
                         keep a ref and refs inside it under the same name; nothing was changed"
                    ),
                    Some(format!("rename it (`{rename}`), then re-run")),
                ));
            }
        }
        Ok(())
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

    /// The session a command acts on: `explicit` if given (see [`Store::find_session`]); else
    /// the one whose branch or task branch is checked out (here or in the linked working tree
    /// the command runs in); else the only one.
    pub fn resolve_session(&self, explicit: Option<&str>) -> Result<SessionId> {
        if let Some(name) = explicit {
            return self.find_session(name);
        }
        let known = self.sessions()?;
        if let Some(sid) = self.checked_out_session(&known) {
            return Ok(sid);
        }
        match known.len() {
            0 => Err(Error::NoSession),
            1 => Ok(known.into_iter().next().expect("one element")),
            _ => Err(Error::AmbiguousSession(known)),
        }
    }

    /// The live session whose branch, or one of whose task branches, `HEAD` is on.
    fn checked_out_session(&self, known: &[SessionId]) -> Option<SessionId> {
        let branch = self.head_branch()?;
        let short = branch.strip_prefix(SESSION_REF_PREFIX)?;
        session_of_branch(short, known)
    }

    /// The session `name` names, as people write it: its id, a unique prefix of the id (with
    /// or without `TLV4-`, in any case), its branch (`tlv4/<SID>`, `refs/heads/tlv4/<SID>`) or
    /// one of its task branches (`tlv4/<SID>.<TASK>`), or [`MOST_RECENT`] for the live session
    /// updated last. Archived sessions answer too (by id, prefix or archive ref); writing to
    /// one is refused where it is written ([`Store::writable_tip`]).
    pub fn find_session(&self, name: &str) -> Result<SessionId> {
        let live = self.sessions()?;
        if name == MOST_RECENT {
            return self.most_recent(&live);
        }
        let archived = self.archived()?;
        let unknown = || Error::UnknownSession {
            name: name.to_owned(),
            known: live.clone(),
        };
        let all: Vec<&SessionId> = live.iter().chain(archived.iter()).collect();
        if let Some(sid) = all.iter().find(|s| s.as_str() == name) {
            return Ok((*sid).clone());
        }
        // A branch or ref name: the session it belongs to.
        let short = name
            .strip_prefix(SESSION_REF_PREFIX)
            .or_else(|| name.strip_prefix("heads/tlv4/"))
            .or_else(|| name.strip_prefix("tlv4/"))
            .or_else(|| name.strip_prefix(ARCHIVE_REF_PREFIX));
        if let Some(short) = short {
            let owned: Vec<SessionId> = all.iter().map(|s| (*s).clone()).collect();
            return session_of_branch(short, &owned).ok_or_else(unknown);
        }
        let wanted = name.to_ascii_lowercase();
        let mut matches: Vec<SessionId> = all
            .iter()
            .filter(|s| {
                let id = s.as_str().to_ascii_lowercase();
                id.starts_with(&wanted)
                    || id
                        .strip_prefix(&SessionId::PREFIX.to_ascii_lowercase())
                        .is_some_and(|rest| rest.starts_with(&wanted))
            })
            .map(|s| (*s).clone())
            .collect();
        matches.dedup();
        match matches.len() {
            0 => Err(unknown()),
            1 => Ok(matches.remove(0)),
            _ => Err(Error::state(
                format!(
                    "`{name}` is the beginning of {} sessions; say which one",
                    matches.len()
                ),
                Some(format!(
                    "pass --session with one of:\n{}",
                    matches
                        .iter()
                        .map(|s| format!("  {s}"))
                        .collect::<Vec<_>>()
                        .join("\n")
                )),
            )),
        }
    }

    /// The live session whose tip was committed last; a tie to the second is refused rather
    /// than guessed.
    fn most_recent(&self, live: &[SessionId]) -> Result<SessionId> {
        let mut newest: Vec<(i64, &SessionId)> = Vec::new();
        for sid in live {
            let Some(tip) = self.try_ref(&session_ref(sid))? else {
                continue;
            };
            let time = self
                .repo
                .find_commit(tip)
                .ok()
                .and_then(|c| c.time().ok())
                .map_or(0, |t| t.seconds);
            match newest.first() {
                Some((t, _)) if *t > time => {}
                Some((t, _)) if *t == time => newest.push((time, sid)),
                _ => newest = vec![(time, sid)],
            }
        }
        match newest.as_slice() {
            [] => Err(Error::NoSession),
            [(_, one)] => Ok((*one).clone()),
            tied => Err(Error::state(
                format!(
                    "`{MOST_RECENT}` is ambiguous: {} sessions were last updated in the same second",
                    tied.len()
                ),
                Some(format!(
                    "pass --session with one of:\n{}",
                    tied.iter()
                        .map(|(_, s)| format!("  {s}"))
                        .collect::<Vec<_>>()
                        .join("\n")
                )),
            )),
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
    pub fn try_ref(&self, name: &str) -> Result<Option<gix::ObjectId>> {
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

    /// The working trees (main and linked) that have `full_ref` checked out, including
    /// linked ones whose directory is gone (see [`Store::ensure_not_checked_out`]).
    pub fn checked_out_in(&self, full_ref: &str) -> Vec<PathBuf> {
        self.holders(full_ref).into_iter().map(|h| h.dir).collect()
    }

    /// The working trees that have `full_ref` checked out, with what git knows of each.
    fn holders(&self, full_ref: &str) -> Vec<Holder> {
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
            found.push(Holder {
                dir,
                gone: false,
                locked: None,
            });
        }
        if let Ok(entries) = std::fs::read_dir(common.join("worktrees")) {
            for entry in entries.flatten() {
                if head_is(&entry.path().join("HEAD")) {
                    // `gitdir` names the `.git` file of the linked working tree; when that is
                    // gone, so is the working tree (`git worktree list` calls it prunable).
                    let gitdir = std::fs::read_to_string(entry.path().join("gitdir"))
                        .ok()
                        .map(|g| PathBuf::from(g.trim()));
                    let gone = gitdir.as_ref().is_none_or(|g| !g.exists());
                    let dir = gitdir
                        .as_ref()
                        .and_then(|g| g.parent().map(Path::to_owned))
                        .unwrap_or_else(|| entry.path());
                    let locked = std::fs::read_to_string(entry.path().join("locked")).ok();
                    found.push(Holder { dir, gone, locked });
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

    /// Refuses to move `full_ref` when a working tree has it checked out. A linked working
    /// tree whose directory was deleted still holds the branch for git until it is pruned;
    /// the error says so, and how to let go of it.
    /// A gone task checkout of git-tlv4 itself, whose process is gone too, is removed here
    /// (its branch is the ref that keeps what it held), as `resume` would.
    pub fn ensure_not_checked_out(&self, full_ref: &str) -> Result<()> {
        let host = tlv4_core::host::name();
        let mut holders = self.holders(full_ref).into_iter().filter(|h| {
            let ours_and_dead = h.gone
                && h.locked
                    .as_deref()
                    .is_some_and(|r| tlv4_core::git::stale_lock(r, &host));
            !(ours_and_dead
                && tlv4_core::git::remove_worktree(self.repo.common_dir(), &h.dir).is_ok())
        });
        match holders.next() {
            None => Ok(()),
            Some(h) => Err(Error::CheckedOut {
                branch: refs::short_branch(full_ref).to_owned(),
                worktree: h.dir,
                gone: match (h.gone, h.locked) {
                    (false, _) => None,
                    (true, None) => Some(Gone::Prunable),
                    (true, Some(reason)) => Some(Gone::Locked(reason.trim().to_owned())),
                },
            }),
        }
    }

    /// Lock files of our refs older than `min_age`, which no live writer holds: a writer holds
    /// a ref lock for microseconds (and gives up waiting after 3 seconds), so an old one was
    /// left by a process that died. Ours are the locks of every ref the tool writes (sessions,
    /// task branches, message buses, the review notes, archives, exports, kept runs) and of
    /// `packed-refs`, which deleting a ref (archive) locks.
    pub fn stale_locks(&self, min_age: std::time::Duration) -> Vec<PathBuf> {
        self.locks()
            .into_iter()
            .filter(|(_, age)| *age >= min_age)
            .map(|(p, _)| p)
            .collect()
    }

    /// Every lock file of our refs (see [`Store::stale_locks`]), with its age.
    pub fn locks(&self) -> Vec<(PathBuf, std::time::Duration)> {
        let common = self.repo.common_dir();
        let age = |p: &Path| {
            std::fs::metadata(p)
                .and_then(|m| m.modified())
                .ok()
                .map(|t| t.elapsed().unwrap_or_default())
        };
        let mut found = Vec::new();
        let packed = common.join("packed-refs.lock");
        if let Some(a) = age(&packed) {
            found.push((packed, a));
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
                if ours(name)
                    && let Some(a) = age(&path)
                {
                    found.push((path, a));
                }
            }
        }
        found.sort();
        found
    }
}
