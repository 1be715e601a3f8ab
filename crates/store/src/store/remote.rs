//! Sharing sessions through a git remote: `push` with a lease per ref, `pull` into a private
//! namespace and from there into the local refs by rules that never lose anything.
//!
//! The network part is the `git` binary (`ls-remote`, `fetch`, `push --atomic
//! --force-with-lease`): gix has no push, and git honours the user's transports, credentials
//! and `url.*.insteadOf` as the user expects. Everything else is local ref updates by
//! compare-and-swap, as in the rest of the store.
//!
//! - What the remote holds is fetched with forced refspecs, but only into
//!   `refs/tlv4-remote/<remote>/…` (the remote's mirror, like `refs/remotes/`); local refs are
//!   then created, fast-forwarded, or — notes — merged by union of lines. A local ref is never
//!   moved to a value that does not contain it.
//! - A push names, per ref, the value it expects on the remote (`--force-with-lease`), and is
//!   all-or-nothing (`--atomic`): it never overwrites what this clone has not seen.

use std::collections::{BTreeMap, BTreeSet};

use gix::ObjectId;
use gix::bstr::ByteSlice;
use gix::note::plumbing::State as NotesTree;

use super::refs::{self, REMOTE_MIRROR_PREFIX};
use super::write::RemoteEdit;
use super::{
    ARCHIVE_REF_PREFIX, NOTES_REF_PREFIX, REVIEW_NOTES_REF, SESSION_REF_PREFIX, Store,
    TOOL_REF_PREFIX, archive_ref, session_ref,
};
use tlv4_core::error::{Error, Result};
use tlv4_core::model::SessionId;

/// The ref namespaces a session travels in (source side of every refspec). The pinned
/// configuration `refs/tlv4/pinned/` stays local: it may hold secrets.
const SHARED: [&str; 6] = [
    refs::SESSION_REF_PREFIX,
    refs::EXPORT_REF_PREFIX,
    refs::NOTES_REF_PREFIX,
    refs::REVIEW_NOTES_REF,
    refs::ARCHIVE_REF_PREFIX,
    refs::RUNS_REF_PREFIX,
];

/// What a store did through remotes, counted as it goes: a worker's closing line says it
/// (`git tlv4 worker`, `specs/state-format.md` §18.6), and `bench/remote` reads it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RemoteStats {
    /// Fetches and `ls-remote`s.
    pub fetches: u64,
    /// Pushes the remote took.
    pub pushes: u64,
    /// Milliseconds spent in fetches and `ls-remote`s.
    pub fetch_ms: u64,
    /// Milliseconds spent in pushes, taken or refused.
    pub push_ms: u64,
    /// Pushes the remote refused because a ref had moved (a lease was stale).
    pub refused: u64,
    /// Session events written through a remote.
    pub events: u64,
    /// Of the refused pushes, those of a session event, each re-applied to the new tip.
    pub retries: u64,
    /// Claims taken: a task's lease created (or one that ran out replaced) on its own ref.
    pub claims: u64,
    /// Claims refused because another worker took the task first (its lease ref existed).
    pub claims_refused: u64,
    /// Pushes of the session ref that took events (one or several: a batch).
    pub batches: u64,
    /// Tries to take the turn to push a batch that another worker held (§18.10).
    pub turns_refused: u64,
}

impl RemoteStats {
    /// Refused event pushes per session event written.
    pub fn retries_per_event(&self) -> f64 {
        if self.events == 0 {
            0.0
        } else {
            self.retries as f64 / self.events as f64
        }
    }
}

/// How a shared ref may move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A session branch: only ever fast-forwarded.
    Session,
    /// A task branch: may be rewound by a snapshot or a new attempt.
    Task,
    /// A notes ref: JSON Lines per object, merged by union.
    Notes,
    /// Archives, kept runs, exports: created once, never moved.
    CreateOnly,
}

/// The session a shared ref belongs to (`None` for the review notes) and how it moves; `None`
/// for a ref that is not a session's.
fn classify(name: &str) -> Option<(Kind, Option<SessionId>)> {
    if name == REVIEW_NOTES_REF {
        return Some((Kind::Notes, None));
    }
    if let Some(rest) = name.strip_prefix(SESSION_REF_PREFIX) {
        return match rest.split_once('.') {
            None => Some((Kind::Session, Some(rest.parse().ok()?))),
            Some((sid, task)) if !task.is_empty() => Some((Kind::Task, Some(sid.parse().ok()?))),
            Some(_) => None,
        };
    }
    if let Some(rest) = name.strip_prefix(NOTES_REF_PREFIX) {
        return Some((Kind::Notes, Some(rest.parse().ok()?)));
    }
    for prefix in [refs::EXPORT_REF_PREFIX, ARCHIVE_REF_PREFIX] {
        if let Some(rest) = name.strip_prefix(prefix) {
            return Some((Kind::CreateOnly, Some(rest.parse().ok()?)));
        }
    }
    if let Some(rest) = name.strip_prefix(&format!("{TOOL_REF_PREFIX}runs/")) {
        let sid = rest.split('/').next()?;
        return Some((Kind::CreateOnly, Some(sid.parse().ok()?)));
    }
    None
}

/// A remote as the user named it (a configured remote or a URL), with the name of its
/// private namespace.
#[derive(Debug, Clone)]
pub struct Remote {
    /// What is passed to git.
    pub name: String,
    /// The path component under [`REMOTE_MIRROR_PREFIX`]: the remote's name when it is a
    /// plain one, else `url-<hash of the URL>`.
    pub key: String,
}

impl Remote {
    /// The remote `name` (a remote of the repository's configuration or a URL).
    pub fn new(name: &str) -> Result<Remote> {
        if name.is_empty() || name.starts_with('-') {
            return Err(Error::Invalid(format!(
                "`{name}` is not a remote name or URL"
            )));
        }
        let plain = name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b))
            && !name.ends_with(".lock");
        let key = if plain {
            name.to_owned()
        } else {
            // FNV-1a: stable across builds, enough to tell a handful of URLs apart.
            let mut h: u64 = 0xcbf2_9ce4_8422_2325;
            for b in name.bytes() {
                h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
            }
            format!("url-{h:016x}")
        };
        Ok(Remote {
            name: name.to_owned(),
            key,
        })
    }

    /// The refspec that fetches the refs named `prefix*` into the mirror: forced, but only
    /// into the mirror, which follows the remote as it is.
    pub fn mirror_spec(&self, prefix: &str) -> String {
        format!("+{prefix}*:{}*", self.mirror(prefix))
    }

    /// Where `local` (a full ref name) of the remote is mirrored here.
    pub fn mirror(&self, local: &str) -> String {
        format!(
            "{REMOTE_MIRROR_PREFIX}{}/{}",
            self.key,
            local.strip_prefix("refs/").unwrap_or(local)
        )
    }

    /// The local ref name a mirrored ref stands for.
    fn unmirror(&self, mirrored: &str) -> Option<String> {
        mirrored
            .strip_prefix(&format!("{REMOTE_MIRROR_PREFIX}{}/", self.key))
            .map(|rest| format!("refs/{rest}"))
    }
}

/// A session as a remote holds it (`list --remote`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RemoteSession {
    /// The session id.
    pub id: String,
    /// `live` (a session branch) or `archived`.
    pub state: &'static str,
    /// Its tip on the remote.
    pub tip: String,
    /// How many task branches it has there.
    pub task_branches: usize,
    /// The tasks workers hold there (read by the caller: [`Store::holdings`]).
    pub held: Vec<super::lease::Holding>,
}

/// What `push` did.
#[derive(Debug, Default)]
pub struct Pushed {
    /// Refs created or moved on the remote, with their new value.
    pub updated: Vec<(String, ObjectId)>,
    /// Refs deleted on the remote (the session branch of a session archived here).
    pub deleted: Vec<String>,
}

/// What `pull` did to the local refs.
#[derive(Debug, Default)]
pub struct Pulled {
    /// Local refs created from the remote.
    pub created: Vec<String>,
    /// Local refs fast-forwarded to the remote's value.
    pub forwarded: Vec<String>,
    /// Notes refs merged by union: one merge commit each.
    pub merged_notes: Vec<String>,
    /// Refs this clone is ahead on (push them).
    pub ahead: Vec<String>,
    /// Refs left as they are, with why; the remote's value stays under the mirror.
    pub kept: Vec<(String, String)>,
    /// Sessions the remote archived whose local branch went (the archive holds it all).
    pub archived: Vec<SessionId>,
    /// Sessions whose branch had events on both sides, reconciled by a merge event.
    pub merged: Vec<(SessionId, ObjectId)>,
    /// Sessions whose branch has events on both sides that do not merge: `(sid, local tip,
    /// remote tip, why)`.
    pub diverged: Vec<(SessionId, ObjectId, ObjectId, String)>,
    /// Sessions whose branch has events on both sides, the remote's including user decisions:
    /// left as they are for the coordinator, which applies those decisions again on top of
    /// the local side (`specs/state-format.md` §18.3).
    pub to_replay: Vec<Diverged>,
}

/// A session branch with events on both sides since they met.
#[derive(Debug, Clone)]
pub struct Diverged {
    /// The session.
    pub sid: SessionId,
    /// The local tip.
    pub ours: ObjectId,
    /// The remote's tip (kept under the remote's mirror).
    pub theirs: ObjectId,
    /// Their merge base.
    pub base: ObjectId,
}

/// Why two sides' trees and states do not merge (the names of what conflicts), or the merge.
pub type SidesMerged = std::result::Result<(ObjectId, tlv4_core::model::State), String>;

impl Store {
    /// Whether `ancestor` is `of` or one of its ancestors (both must be here).
    pub fn is_ancestor(&self, ancestor: ObjectId, of: ObjectId) -> Result<bool> {
        if ancestor == of {
            return Ok(true);
        }
        let base = self
            .repo
            .merge_base(ancestor, of)
            .map_err(|e| Error::git(&format!("cannot compare {ancestor} with {of}"), e))?;
        Ok(base.map(|b| b.detach()) == Some(ancestor))
    }

    /// The shared refs of a remote (`git ls-remote`), by full name; nothing is fetched.
    pub fn remote_refs(&self, remote: &Remote) -> Result<BTreeMap<String, ObjectId>> {
        let mut args = vec!["ls-remote", "--refs", "--", remote.name.as_str()];
        let patterns: Vec<String> = SHARED
            .iter()
            .map(|p| {
                if p.ends_with('/') {
                    format!("{p}*")
                } else {
                    (*p).to_owned()
                }
            })
            .collect();
        args.extend(patterns.iter().map(String::as_str));
        let out = self
            .counted(false, || tlv4_core::git::run(self.workdir(), &args))
            .map_err(|e| unreachable(remote, e))?;
        let mut refs = BTreeMap::new();
        for line in out.lines() {
            let Some((id, name)) = line.split_once('\t') else {
                continue;
            };
            // `ls-remote` patterns match ref name tails; keep exactly ours.
            if classify(name).is_none() {
                continue;
            }
            if let Ok(id) = ObjectId::from_hex(id.as_bytes()) {
                refs.insert(name.to_owned(), id);
            }
        }
        Ok(refs)
    }

    /// The sessions a remote holds, live and archived, in id order.
    pub fn remote_sessions(&self, remote: &Remote) -> Result<Vec<RemoteSession>> {
        let refs = self.remote_refs(remote)?;
        let mut tasks: BTreeMap<SessionId, usize> = BTreeMap::new();
        let mut out = Vec::new();
        for (name, id) in &refs {
            match classify(name) {
                Some((Kind::Task, Some(sid))) => *tasks.entry(sid).or_default() += 1,
                Some((Kind::Session, Some(sid))) => out.push((sid, "live", *id)),
                Some((Kind::CreateOnly, Some(sid)))
                    if *name == archive_ref(&sid) && !refs.contains_key(&session_ref(&sid)) =>
                {
                    out.push((sid, "archived", *id));
                }
                _ => {}
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out
            .into_iter()
            .map(|(sid, state, tip)| RemoteSession {
                task_branches: tasks.get(&sid).copied().unwrap_or(0),
                id: sid.to_string(),
                state,
                tip: tip.to_string(),
                held: Vec::new(),
            })
            .collect())
    }

    /// The local refs of the given sessions that travel, plus the review notes.
    fn shared_local(&self, sessions: &[SessionId]) -> Result<BTreeMap<String, ObjectId>> {
        let mut out = BTreeMap::new();
        for prefix in SHARED {
            for (name, id) in self.refs_with_prefix(prefix)? {
                match classify(&name) {
                    Some((_, None)) => {
                        out.insert(name, id);
                    }
                    Some((_, Some(sid))) if sessions.contains(&sid) => {
                        out.insert(name, id);
                    }
                    _ => {}
                }
            }
        }
        Ok(out)
    }

    /// Pushes `sessions` (their branch, task branches, notes, archive, kept runs, export) and
    /// the review notes to `remote`, each ref with a lease on the value the remote has now,
    /// all or nothing. A ref the remote moved past what this clone has seen refuses the whole
    /// push (exit 3): pull first.
    pub fn push_sessions(&self, remote: &Remote, sessions: &[SessionId]) -> Result<Pushed> {
        let theirs = self.remote_refs(remote)?;
        self.push_over(remote, sessions, &theirs)
    }

    /// [`Store::push_sessions`] over `theirs`, what the remote was seen to hold: each update
    /// leases that value, so a remote that moved since refuses the push.
    fn push_over(
        &self,
        remote: &Remote,
        sessions: &[SessionId],
        theirs: &BTreeMap<String, ObjectId>,
    ) -> Result<Pushed> {
        let ours = self.shared_local(sessions)?;
        let mut pushed = Pushed::default();
        let mut behind = Vec::new();
        // (ref, expected on the remote, new value; None deletes)
        let mut updates: Vec<(String, Option<ObjectId>, Option<ObjectId>)> = Vec::new();
        for (name, &local) in &ours {
            let (kind, _) = classify(name).expect("shared refs are classified");
            let remote_value = theirs.get(name).copied();
            match remote_value {
                Some(r) if r == local => {}
                // The remote archived the session: its branch must not come back there.
                None if kind == Kind::Session
                    && classify(name)
                        .and_then(|(_, sid)| sid)
                        .is_some_and(|sid| theirs.contains_key(&archive_ref(&sid))) =>
                {
                    behind.push(name.clone())
                }
                None => updates.push((name.clone(), None, Some(local))),
                Some(r) => {
                    let seen = self.repo.has_object(r);
                    let contained = seen && self.is_ancestor(r, local)?;
                    // A task branch is rewound by snapshots and new attempts: overwriting it is
                    // fine when its remote value is the one this clone last saw there.
                    let last_seen =
                        kind == Kind::Task && self.try_ref(&remote.mirror(name))? == Some(r);
                    if contained || last_seen {
                        updates.push((name.clone(), Some(r), Some(local)));
                    } else {
                        behind.push(name.clone());
                    }
                }
            }
        }
        // A session archived here: its archive travels (above), and the remote's session
        // branch goes, when the archive holds everything on it.
        for sid in sessions {
            let branch = session_ref(sid);
            if ours.contains_key(&branch) {
                continue;
            }
            if let (Some(&archived), Some(&r)) = (ours.get(&archive_ref(sid)), theirs.get(&branch))
            {
                if self.repo.has_object(r) && self.is_ancestor(r, archived)? {
                    updates.push((branch, Some(r), None));
                } else {
                    behind.push(branch);
                }
            }
        }
        if !behind.is_empty() {
            return Err(Error::conflict(
                format!(
                    "`{}` has changes this clone has not seen, on {}; nothing was pushed",
                    remote.name,
                    behind.join(", ")
                ),
                Some(format!(
                    "run `git tlv4 pull {0}`, then `git tlv4 push {0}` again",
                    remote.name
                )),
            ));
        }
        if updates.is_empty() {
            return Ok(pushed);
        }
        let edits: Vec<RemoteEdit> = updates
            .into_iter()
            .map(|(name, expected, new)| RemoteEdit {
                name,
                expected,
                new,
            })
            .collect();
        if let Err(rejected) = self.push_leased(remote, &edits)? {
            return Err(Error::conflict(
                format!(
                    "`{}` moved while pushing ({}); nothing was pushed",
                    remote.name,
                    rejected.join(", ")
                ),
                Some(format!(
                    "run `git tlv4 pull {0}`, then `git tlv4 push {0}` again",
                    remote.name
                )),
            ));
        }
        for edit in edits {
            match edit.new {
                Some(new) => pushed.updated.push((edit.name, new)),
                None => pushed.deleted.push(edit.name),
            }
        }
        Ok(pushed)
    }

    /// Sends `edits` to `remote` in one atomic push, each with a lease on the value it expects
    /// there (`--force-with-lease=<ref>:<expected>`, empty for a ref that must not exist).
    /// `Ok(Err(refs))` when the remote refused it (a lease was stale: nothing changed there);
    /// on success the mirror is set to what was pushed.
    pub(crate) fn push_leased(
        &self,
        remote: &Remote,
        edits: &[RemoteEdit],
    ) -> Result<std::result::Result<(), Vec<String>>> {
        if edits.is_empty() {
            return Ok(Ok(()));
        }
        // One ref needs no atomic push, which every server takes; several do.
        let mut args: Vec<String> = ["push", "--porcelain", "--no-verify", "--quiet"]
            .map(str::to_owned)
            .to_vec();
        if edits.len() > 1 {
            args.insert(1, "--atomic".to_owned());
        }
        for e in edits {
            let expected = e.expected.map(|e| e.to_string()).unwrap_or_default();
            args.push(format!("--force-with-lease={}:{expected}", e.name));
        }
        args.push("--".to_owned());
        args.push(remote.name.clone());
        for e in edits {
            args.push(match e.new {
                Some(new) => format!("{new}:{}", e.name),
                None => format!(":{}", e.name),
            });
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = self.counted(true, || tlv4_core::git::output(self.workdir(), &args))?;
        if !out.status.success() {
            let stdout = String::from_utf8_lossy(&out.stdout);
            let rejected: Vec<String> = stdout
                .lines()
                .filter(|l| l.starts_with('!'))
                .filter_map(|l| l.split('\t').nth(1))
                .filter_map(|spec| spec.split_once(':').map(|(_, dst)| dst.to_owned()))
                .collect();
            let stderr = String::from_utf8_lossy(&out.stderr);
            if rejected.is_empty() && stderr.contains("does not support --atomic") {
                return Err(no_atomic(remote));
            }
            if rejected.is_empty() {
                return Err(unreachable(
                    remote,
                    Error::Git(String::from_utf8_lossy(&out.stderr).trim().to_owned()),
                ));
            }
            self.count(|s| s.refused += 1);
            return Ok(Err(rejected));
        }
        self.count(|s| s.pushes += 1);
        // The remote has what was pushed: remember it as seen.
        for e in edits {
            self.set_mirror(remote, &e.name, e.new)?;
        }
        Ok(Ok(()))
    }

    /// Checks that `remote` takes atomic pushes of several refs, as workers need (a batch
    /// moves the session, deletes leases and sends task branches together): a dry run of an
    /// atomic push of `commit`, which changes nothing there.
    pub fn check_atomic(&self, remote: &Remote, commit: ObjectId) -> Result<()> {
        let probe = format!("{commit}:refs/tlv4/probe/atomic");
        let args = [
            "push",
            "--dry-run",
            "--atomic",
            "--porcelain",
            "--no-verify",
            "--quiet",
            "--",
            remote.name.as_str(),
            probe.as_str(),
        ];
        let out = self.counted(true, || tlv4_core::git::output(self.workdir(), &args))?;
        if out.status.success() {
            return Ok(());
        }
        let stderr = String::from_utf8_lossy(&out.stderr);
        if stderr.contains("does not support --atomic") {
            return Err(no_atomic(remote));
        }
        Err(unreachable(remote, Error::Git(stderr.trim().to_owned())))
    }

    /// Sets the mirror of `name` (a ref of `remote`) to `value` (`None`: gone there).
    pub(crate) fn set_mirror(
        &self,
        remote: &Remote,
        name: &str,
        value: Option<ObjectId>,
    ) -> Result<()> {
        let mirror = remote.mirror(name);
        match (value, self.try_ref(&mirror)?) {
            (Some(new), Some(old)) if new == old => Ok(()),
            (Some(new), Some(old)) => self.update_ref(&mirror, old, new, "pushed"),
            (Some(new), None) => self.create_ref(&mirror, new, "pushed").map(|_| ()),
            (None, Some(old)) => self.delete_ref(&mirror, old),
            (None, None) => Ok(()),
        }
    }

    /// Fetches `specs` (from [`Remote::mirror_spec`]) of `remote` into its mirror, without
    /// tags or `FETCH_HEAD`; mirror refs the remote no longer has go. `frequent` (a worker
    /// fetches every few hundred milliseconds) skips git's maintenance after the fetch,
    /// which would cost more than the fetch; the user's own fetches and `pull` still run it.
    pub(crate) fn fetch_mirror(
        &self,
        remote: &Remote,
        specs: &[String],
        frequent: bool,
    ) -> Result<()> {
        let mut args = vec![
            "fetch",
            "--no-tags",
            "--prune",
            "--quiet",
            "--no-write-fetch-head",
        ];
        if frequent {
            args.push("--no-auto-maintenance");
        }
        args.extend(["--", remote.name.as_str()]);
        args.extend(specs.iter().map(String::as_str));
        self.counted(false, || tlv4_core::git::run(self.workdir(), &args))
            .map_err(|e| unreachable(remote, e))?;
        Ok(())
    }

    /// What this store did through remotes so far.
    pub fn remote_stats(&self) -> RemoteStats {
        self.remote_stats.get()
    }

    /// Updates the counts of [`Store::remote_stats`].
    pub(super) fn count(&self, f: impl FnOnce(&mut RemoteStats)) {
        let mut s = self.remote_stats.get();
        f(&mut s);
        self.remote_stats.set(s);
    }

    /// Runs `git`, a push (`push`) or a fetch, counting it and the time it took.
    fn counted<T>(&self, push: bool, git: impl FnOnce() -> T) -> T {
        let started = std::time::Instant::now();
        let out = git();
        let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.count(|s| {
            if push {
                s.push_ms = s.push_ms.saturating_add(ms);
            } else {
                s.fetches += 1;
                s.fetch_ms = s.fetch_ms.saturating_add(ms);
            }
        });
        out
    }

    /// Fetches every shared ref of `remote` into its mirror `refs/tlv4-remote/<remote>/…`,
    /// then brings the local refs up to it: creates missing ones, fast-forwards those the
    /// remote is ahead on, merges notes by union; leaves everything else as it is and says so.
    pub fn pull_sessions(&self, remote: &Remote) -> Result<Pulled> {
        let specs: Vec<String> = SHARED.iter().map(|p| remote.mirror_spec(p)).collect();
        self.fetch_mirror(remote, &specs, false)?;

        let mirror_prefix = format!("{REMOTE_MIRROR_PREFIX}{}/", remote.key);
        let mut fetched: BTreeMap<String, ObjectId> = BTreeMap::new();
        for (mirrored, id) in self.refs_with_prefix(&mirror_prefix)? {
            if let Some(local) = remote.unmirror(&mirrored)
                && classify(&local).is_some()
            {
                fetched.insert(local, id);
            }
        }
        let archived: BTreeSet<SessionId> = self.archived()?.into_iter().collect();
        let mut pulled = Pulled::default();
        for (name, &r) in &fetched {
            let (kind, sid) = classify(name).expect("filtered above");
            let local = self.try_ref(name)?;
            let Some(l) = local else {
                // A session archived here does not come back to life from the remote.
                if matches!(kind, Kind::Session | Kind::Task)
                    && sid.as_ref().is_some_and(|s| archived.contains(s))
                {
                    pulled
                        .kept
                        .push((name.clone(), "the session is archived here".to_owned()));
                    continue;
                }
                if self.create_ref(name, r, &format!("pull from {}", remote.name))? {
                    pulled.created.push(name.clone());
                } else {
                    pulled
                        .kept
                        .push((name.clone(), "created here meanwhile".to_owned()));
                }
                continue;
            };
            if l == r {
                continue;
            }
            if kind == Kind::CreateOnly {
                pulled.kept.push((
                    name.clone(),
                    "the remote's differs and this one is kept".to_owned(),
                ));
                continue;
            }
            if self.is_ancestor(r, l)? {
                pulled.ahead.push(name.clone());
                continue;
            }
            if self.is_ancestor(l, r)? {
                if matches!(kind, Kind::Session | Kind::Task)
                    && let Err(e) = self.ensure_not_checked_out(name)
                {
                    pulled.kept.push((name.clone(), e.to_string()));
                    continue;
                }
                self.update_ref(name, l, r, &format!("pull from {}", remote.name))?;
                pulled.forwarded.push(name.clone());
                continue;
            }
            match kind {
                Kind::Notes => {
                    self.merge_notes(name, l, r, &remote.name)?;
                    pulled.merged_notes.push(name.clone());
                }
                Kind::Session => {
                    let sid = sid.expect("a session branch has a session");
                    if let Some(base) = self.merge_base(l, r)?
                        && self.decided_since(&sid, base, r)?
                    {
                        pulled.to_replay.push(Diverged {
                            sid,
                            ours: l,
                            theirs: r,
                            base,
                        });
                        continue;
                    }
                    match self.reconcile(&sid, l, r, remote)? {
                        Reconciled::Merged(commit) => pulled.merged.push((sid, commit)),
                        Reconciled::Refused(why) => pulled.diverged.push((sid, l, r, why)),
                    }
                }
                Kind::Task => pulled.kept.push((
                    name.clone(),
                    format!(
                        "it has commits on both sides; the remote's is `{}`",
                        remote.mirror(name)
                    ),
                )),
                Kind::CreateOnly => unreachable!("handled above"),
            }
        }
        // A session the remote archived is archived here too, when the archive holds every
        // event of the local branch (as the local archive action does, the branch goes).
        for (name, &archive) in &fetched {
            let Some((Kind::CreateOnly, Some(sid))) = classify(name) else {
                continue;
            };
            let branch = session_ref(&sid);
            if *name != archive_ref(&sid) || self.try_ref(name)? != Some(archive) {
                continue;
            }
            let Some(local) = self.try_ref(&branch)? else {
                continue;
            };
            if !self.is_ancestor(local, archive)? {
                pulled.kept.push((
                    branch,
                    format!(
                        "`{}` archived the session, but this branch has events it lacks",
                        remote.name
                    ),
                ));
            } else if let Err(e) = self.ensure_not_checked_out(&branch) {
                pulled.kept.push((branch, e.to_string()));
            } else {
                self.delete_ref(&branch, local)?;
                pulled.archived.push(sid);
            }
        }
        Ok(pulled)
    }

    /// The merge base of `a` and `b`, if they share history.
    pub fn merge_base(&self, a: ObjectId, b: ObjectId) -> Result<Option<ObjectId>> {
        Ok(self
            .repo
            .merge_base(a, b)
            .map_err(|e| Error::git(&format!("cannot compare {a} with {b}"), e))?
            .map(|b| b.detach()))
    }

    /// The events of session `sid` from `tip` back by first parents to the first that `base`
    /// contains (left out), oldest first.
    pub fn events_since(
        &self,
        sid: &SessionId,
        base: ObjectId,
        tip: ObjectId,
    ) -> Result<Vec<super::LoggedEvent>> {
        let mut out = Vec::new();
        let mut failed = None;
        self.walk(sid, tip, |entry| {
            let Ok(id) = ObjectId::from_hex(entry.commit().as_bytes()) else {
                return false;
            };
            match self.is_ancestor(id, base) {
                Ok(true) => return false,
                Ok(false) => {}
                Err(e) => {
                    failed = Some(e);
                    return false;
                }
            }
            if let super::HistoryEntry::Event(e) = entry {
                out.push(e);
            }
            true
        })?;
        if let Some(e) = failed {
            return Err(e);
        }
        out.reverse();
        Ok(out)
    }

    /// Whether the events of `sid` from `base` to `tip` include a user decision other than a
    /// budget raise (raises count from the history, whatever the tree: §7.4).
    fn decided_since(&self, sid: &SessionId, base: ObjectId, tip: ObjectId) -> Result<bool> {
        Ok(self.events_since(sid, base, tip)?.iter().any(|e| {
            e.event == tlv4_core::model::EventKind::UserDecision.as_str()
                && e.trailer("Decision") != Some("budget")
        }))
    }

    /// The merge of session `sid` at `ours` with `theirs`, both from `base`, as
    /// [`Store::reconcile`] decides it: the tree git's merge writes and the state decided per
    /// task, `control.toml` and status; or why they do not merge. Nothing is written.
    pub fn merge_sides(
        &self,
        sid: &SessionId,
        base: ObjectId,
        ours: ObjectId,
        theirs: ObjectId,
    ) -> Result<SidesMerged> {
        let Ok((b, _)) = self.read_state_at(sid, base) else {
            return Ok(Err(
                "their common ancestor is not an event of the session".to_owned()
            ));
        };
        let (o, _) = self.read_state_at(sid, ours)?;
        if theirs == base {
            return Ok(Ok((self.commit_tree(ours)?, o)));
        }
        let (t, _) = self.read_state_at(sid, theirs)?;
        let (tree, other) = self.merge_trees(sid, ours, theirs)?;
        let (merged, mut refused) = merge_states(&b, &o, &t);
        if !other.is_empty() {
            refused.push(format!(
                "files conflict: {}",
                other.into_iter().collect::<Vec<_>>().join(", ")
            ));
        }
        if refused.is_empty() {
            Ok(Ok((tree, merged)))
        } else {
            Ok(Err(refused.join("; ")))
        }
    }

    /// Reconciles session `sid` whose branch is at `ours` here and at `theirs` on the remote,
    /// both with events since their merge base: git's merge of the two trees, with the state
    /// files decided per file (a task changed on one side only takes that side; changed on
    /// both, it is a real conflict), and `session.toml` by rule (the events of both sides
    /// counted, the status of the side that changed it). The result is one `session_merged`
    /// event with both tips as parents; a conflict writes nothing and says why.
    fn reconcile(
        &self,
        sid: &SessionId,
        ours: ObjectId,
        theirs: ObjectId,
        remote: &Remote,
    ) -> Result<Reconciled> {
        let branch = session_ref(sid);
        if let Err(e) = self.ensure_not_checked_out(&branch) {
            return Ok(Reconciled::Refused(e.to_string()));
        }
        let base = self
            .repo
            .merge_base(ours, theirs)
            .map_err(|e| Error::git(&format!("cannot compare {ours} with {theirs}"), e))?
            .map(|b| b.detach());
        let Some(base) = base else {
            return Ok(Reconciled::Refused(
                "the two branches share no history".to_owned(),
            ));
        };
        // git's own merge of everything (code, run records, reports, state files).
        let (tree, mut merged) = match self.merge_sides(sid, base, ours, theirs)? {
            Ok(m) => m,
            Err(why) => return Ok(Reconciled::Refused(why)),
        };
        let theirs_hex = theirs.to_string();
        let (b, t) = (self.state_at(sid, base)?, self.state_at(sid, theirs)?);
        // Every event of both sides counts; the merge event adds one.
        let (mine, yours) = (
            merged.session.events.saturating_sub(b.session.events),
            t.session.events.saturating_sub(b.session.events),
        );
        merged.session.events += yours;
        let summary = format!(
            "Merged {yours} event(s) from {} ({}) with {mine} event(s) here",
            remote.name,
            &theirs_hex[..7],
        );
        let written = self.transact(sid, |txn| {
            if txn.tip != ours {
                return Err(Error::conflict(
                    format!("session `{sid}` moved while it was being reconciled"),
                    Some(format!("run `git tlv4 pull {}` again", remote.name)),
                ));
            }
            txn.state = merged.clone();
            txn.merge(theirs, tree);
            Ok(Some(
                tlv4_core::model::Event::session(
                    tlv4_core::model::EventKind::SessionMerged,
                    summary.clone(),
                )
                .with("Merged", theirs_hex.clone()),
            ))
        })?;
        Ok(Reconciled::Merged(
            written.expect("the change always records").commit,
        ))
    }

    /// git's merge of the trees of `ours` and `theirs` (`git merge-tree --write-tree`): the
    /// merged tree, and the paths that conflict other than the state files of `sid` (which
    /// [`merge_states`] decides).
    fn merge_trees(
        &self,
        sid: &SessionId,
        ours: ObjectId,
        theirs: ObjectId,
    ) -> Result<(ObjectId, BTreeSet<String>)> {
        let (ours_hex, theirs_hex) = (ours.to_string(), theirs.to_string());
        let out = tlv4_core::git::output(
            self.workdir(),
            &[
                "merge-tree",
                "--write-tree",
                "--name-only",
                "--no-messages",
                "-z",
                &ours_hex,
                &theirs_hex,
            ],
        )?;
        if !matches!(out.status.code(), Some(0 | 1)) {
            return Err(Error::Git(format!(
                "`git merge-tree` failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let mut fields = stdout.split('\0').filter(|f| !f.is_empty());
        let tree = fields
            .next()
            .and_then(|t| ObjectId::from_hex(t.trim().as_bytes()).ok())
            .ok_or_else(|| Error::Git("`git merge-tree` wrote no tree".to_owned()))?;
        let dir = super::session_dir(sid);
        let state_file = |p: &str| {
            p == format!("{dir}/session.toml")
                || p == format!("{dir}/control.toml")
                || (p.starts_with(&format!("{dir}/tasks/")) && p.ends_with(".toml"))
        };
        let other: BTreeSet<String> = fields
            .filter(|p| !state_file(p))
            .map(str::to_owned)
            .collect();
        Ok((tree, other))
    }

    /// Merges notes commit `theirs` into the local notes ref `name` (at `ours`): one commit
    /// with both as parents whose notes are, per annotated object, our lines followed by
    /// their lines we do not have (JSON Lines, so a union loses nothing and repeats none of
    /// our lines).
    pub(super) fn merge_notes(
        &self,
        name: &str,
        ours: ObjectId,
        theirs: ObjectId,
        remote: &str,
    ) -> Result<()> {
        let git = |e: gix::Error| Error::git("cannot merge notes", e);
        let their_notes = self.notes_of(theirs)?;
        let mut root = self.commit_tree(ours)?;
        let mut tree = NotesTree::new(root, &self.repo.objects).map_err(&git)?;
        for (object, their_blob) in their_notes {
            let current = tree.get(&object, &self.repo.objects).map_err(&git)?;
            if current == Some(their_blob) {
                continue;
            }
            let theirs_text = self.repo.find_blob(their_blob).map_err(git)?.data.clone();
            let mut text = match current {
                Some(b) => self.repo.find_blob(b).map_err(git)?.data.clone(),
                None => Vec::new(),
            };
            let have: BTreeSet<Vec<u8>> = text.lines().map(<[u8]>::to_vec).collect();
            let mut added = false;
            for line in theirs_text.lines() {
                if line.trim().is_empty() || have.contains(line) {
                    continue;
                }
                if !text.is_empty() && !text.ends_with(b"\n") {
                    text.push(b'\n');
                }
                text.extend_from_slice(line);
                text.push(b'\n');
                added = true;
            }
            if !added && current.is_some() {
                continue;
            }
            let blob = self.repo.write_blob(text).map_err(git)?.detach();
            root = tree
                .replace(object, blob, &self.repo.objects)
                .map_err(&git)?
                .tree;
        }
        let sig = self.signature();
        let message = format!("tlv4: notes merged from {remote}");
        let commit = gix::objs::Commit {
            tree: root,
            parents: [ours, theirs].into_iter().collect(),
            author: sig.clone(),
            committer: sig,
            encoding: None,
            message: format!("{message}\n").into(),
            extra_headers: Vec::new(),
        };
        let commit = self.repo.write_object(&commit).map_err(git)?.detach();
        self.update_ref(name, ours, commit, &format!("notes merged from {remote}"))
    }

    /// Every `(annotated object, note blob)` of notes commit `commit`, whatever the fan-out.
    fn notes_of(&self, commit: ObjectId) -> Result<Vec<(ObjectId, ObjectId)>> {
        let git = |e: gix::Error| Error::git("cannot read notes", e);
        let mut out = Vec::new();
        let mut stack = vec![(self.commit_tree(commit)?, String::new())];
        while let Some((tree, prefix)) = stack.pop() {
            let tree = self.repo.find_tree(tree).map_err(git)?;
            let decoded = tree.decode().map_err(git)?;
            for entry in &decoded.entries {
                let name = format!("{prefix}{}", entry.filename.to_str_lossy());
                if entry.mode.is_tree() {
                    stack.push((entry.oid.to_owned(), name));
                } else if entry.mode.is_blob()
                    && let Ok(object) = ObjectId::from_hex(name.as_bytes())
                {
                    out.push((object, entry.oid.to_owned()));
                }
            }
        }
        Ok(out)
    }
}

/// How a session with events on both sides came out of `pull`.
enum Reconciled {
    /// One merge event, this commit.
    Merged(ObjectId),
    /// Not merged, for this reason; nothing was written.
    Refused(String),
}

/// The error for a remote git could not talk to.
/// A remote that refuses atomic pushes of several refs.
fn no_atomic(remote: &Remote) -> Error {
    Error::state(
        format!(
            "`{}` does not take atomic pushes: a session event and the refs it moves (leases, task branches) must move together or not at all",
            remote.name
        ),
        Some(
            "serve the session from a git server that takes them (git's own does, unless `receive.advertiseAtomic` is false)"
                .to_owned(),
        ),
    )
}

pub(super) fn unreachable(remote: &Remote, e: Error) -> Error {
    match e {
        Error::Unreachable { .. } => e,
        e => Error::Unreachable {
            remote: remote.name.clone(),
            detail: e.to_string(),
        },
    }
}

/// The state of a session merged from `o` (ours) and `t` (theirs), both from base `b`, decided
/// per task (a side that changed it wins; both changed it: a conflict), then the control
/// record and the status likewise; and why it cannot be merged, if it cannot.
fn merge_states(
    b: &tlv4_core::model::State,
    o: &tlv4_core::model::State,
    t: &tlv4_core::model::State,
) -> (tlv4_core::model::State, Vec<String>) {
    // The state, decided per task: a side that changed it wins; both changed it: conflict.
    let mut merged = o.clone();
    let mut both = Vec::new();
    let ids: BTreeSet<_> = b
        .tasks
        .keys()
        .chain(o.tasks.keys())
        .chain(t.tasks.keys())
        .collect();
    for id in ids {
        let (bt, ot, tt) = (b.tasks.get(id), o.tasks.get(id), t.tasks.get(id));
        if ot == tt || tt == bt {
            continue;
        }
        if ot == bt {
            match tt {
                Some(task) => merged.tasks.insert(id.clone(), task.clone()),
                None => merged.tasks.remove(id),
            };
        } else {
            both.push(id.to_string());
        }
    }
    let mut refused = Vec::new();
    if !both.is_empty() {
        refused.push(format!(
            "{} changed on both sides (claimed, completed or failed on each)",
            both.join(", ")
        ));
    }
    if o.control != t.control && t.control != b.control {
        if o.control == b.control {
            merged.control = t.control.clone();
        } else {
            refused
                .push("the coordinator's record (control.toml) changed on both sides".to_owned());
        }
    }
    let status = (o.session.status, t.session.status, b.session.status);
    if status.0 != status.1 && status.1 != status.2 {
        if status.0 == status.2 {
            merged.session.status = status.1;
        } else {
            refused.push(format!(
                "the session became {} here and {} there",
                status.0.as_str(),
                status.1.as_str()
            ));
        }
    }
    (merged, refused)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_refs_are_classified_by_namespace() {
        let sid = "TLV4-a-20261129";
        assert_eq!(
            classify(&format!("refs/heads/tlv4/{sid}")).map(|c| c.0),
            Some(Kind::Session)
        );
        assert_eq!(
            classify(&format!("refs/heads/tlv4/{sid}.IMPL-001")).map(|c| c.0),
            Some(Kind::Task)
        );
        assert_eq!(
            classify(&format!("refs/notes/tlv4/{sid}")).map(|c| c.0),
            Some(Kind::Notes)
        );
        assert_eq!(classify(REVIEW_NOTES_REF), Some((Kind::Notes, None)));
        assert_eq!(
            classify(&format!("refs/tlv4/runs/{sid}/IMPL-001/1")).map(|c| c.0),
            Some(Kind::CreateOnly)
        );
        // The pinned configuration stays local; refs that are not sessions' are not shared.
        assert_eq!(classify(&format!("refs/tlv4/pinned/{sid}")), None);
        assert_eq!(classify("refs/heads/tlv4/not-a-session"), None);
        assert_eq!(classify("refs/notes/tlv4-reviewed"), None);
    }

    use crate::testutil::git;

    /// A bare remote and a repository with one commit on `main` pushed to it as `origin`.
    fn setup() -> (tempfile::TempDir, std::path::PathBuf, Store, Remote) {
        let dir = tempfile::tempdir().unwrap();
        let bare = dir.path().join("remote.git");
        git(
            dir.path(),
            &["init", "-q", "--bare", bare.to_str().unwrap()],
        );
        let work = dir.path().join("work");
        git(
            dir.path(),
            &["init", "-q", "-b", "main", work.to_str().unwrap()],
        );
        git(&work, &["config", "user.name", "t"]);
        git(&work, &["config", "user.email", "t@t"]);
        git(&work, &["commit", "-q", "--allow-empty", "-m", "one"]);
        let url = format!("file://{}", bare.display());
        git(&work, &["remote", "add", "origin", &url]);
        git(&work, &["push", "-q", "origin", "main"]);
        let store = Store::discover(&work).unwrap();
        (dir, bare, store, Remote::new("origin").unwrap())
    }

    fn rev(dir: &std::path::Path, what: &str) -> ObjectId {
        ObjectId::from_hex(git(dir, &["rev-parse", what]).trim().as_bytes()).unwrap()
    }

    #[test]
    fn a_push_whose_lease_is_stale_changes_nothing_on_the_remote() {
        let (_dir, bare, store, remote) = setup();
        let work = store.workdir().to_owned();
        git(
            &work,
            &[
                "notes",
                "--ref=tlv4-review",
                "add",
                "-m",
                "{\"a\":1}",
                "HEAD",
            ],
        );
        store.push_sessions(&remote, &[]).unwrap();
        let seen = store.remote_refs(&remote).unwrap();
        // Ours moves on; the remote moves too, to something this clone never saw.
        git(&work, &["commit", "-q", "--allow-empty", "-m", "two"]);
        git(
            &work,
            &[
                "notes",
                "--ref=tlv4-review",
                "add",
                "-m",
                "{\"b\":1}",
                "HEAD",
            ],
        );
        let main = rev(&bare, "main");
        git(&bare, &["update-ref", REVIEW_NOTES_REF, &main.to_string()]);
        let err = store.push_over(&remote, &[], &seen).unwrap_err();
        assert!(matches!(err, Error::Conflict { .. }), "{err}");
        assert!(err.to_string().contains("moved while pushing"), "{err}");
        assert_eq!(
            rev(&bare, REVIEW_NOTES_REF),
            main,
            "the lease kept the remote's value"
        );
        // Seen afresh, the remote's value is not in our history: refused before pushing.
        let err = store.push_sessions(&remote, &[]).unwrap_err();
        assert!(err.to_string().contains("has not seen"), "{err}");
        assert_eq!(rev(&bare, REVIEW_NOTES_REF), main);
    }

    #[test]
    fn a_task_branch_is_overwritten_only_where_this_clone_saw_it() {
        let (_dir, bare, store, remote) = setup();
        let work = store.workdir().to_owned();
        let sid: SessionId = "TLV4-a-20261129".parse().unwrap();
        let task = format!("{}.IMPL-001", session_ref(&sid));
        // A commit on `main` that is not on any other: attempt `n` of the task.
        let attempt = |n: u32| {
            let id = git(
                &work,
                &[
                    "commit-tree",
                    "-p",
                    "main",
                    "-m",
                    &format!("attempt {n}"),
                    "main^{tree}",
                ],
            );
            ObjectId::from_hex(id.trim().as_bytes()).unwrap()
        };
        let first = attempt(1);
        git(&work, &["update-ref", &task, &first.to_string()]);
        store
            .push_sessions(&remote, std::slice::from_ref(&sid))
            .unwrap();
        // A new attempt rewinds the task branch here: the remote still has what we pushed.
        let second = attempt(2);
        git(&work, &["update-ref", &task, &second.to_string()]);
        store
            .push_sessions(&remote, std::slice::from_ref(&sid))
            .unwrap();
        assert_eq!(rev(&bare, &task), second);
        // Someone else moves it on the remote to a commit we have but never saw there.
        let other = attempt(3);
        git(
            &work,
            &["push", "-q", "origin", &format!("{other}:refs/heads/other")],
        );
        git(&bare, &["update-ref", &task, &other.to_string()]);
        let fourth = attempt(4);
        git(&work, &["update-ref", &task, &fourth.to_string()]);
        let err = store
            .push_sessions(&remote, std::slice::from_ref(&sid))
            .unwrap_err();
        assert!(err.to_string().contains("has not seen"), "{err}");
        assert_eq!(rev(&bare, &task), other);
    }

    #[test]
    fn notes_merge_by_union_of_lines_keeping_order() {
        let (_dir, _bare, store, remote) = setup();
        let work = store.workdir().to_owned();
        git(&work, &["commit", "-q", "--allow-empty", "-m", "two"]);
        let (one, two) = (rev(&work, "HEAD~1"), rev(&work, "HEAD"));
        // The remote's notes: two lines on `one`, one on `two`.
        git(
            &work,
            &[
                "notes",
                "--ref=tlv4-review",
                "add",
                "-m",
                "{\"r\":1}\n{\"s\":1}",
                &one.to_string(),
            ],
        );
        git(
            &work,
            &[
                "notes",
                "--ref=tlv4-review",
                "add",
                "-m",
                "{\"r\":2}",
                &two.to_string(),
            ],
        );
        store.push_sessions(&remote, &[]).unwrap();
        // Ours, written without them: a line of our own and one of theirs, on `one` only.
        let theirs = rev(&work, REVIEW_NOTES_REF);
        git(&work, &["update-ref", "-d", REVIEW_NOTES_REF]);
        git(
            &work,
            &[
                "notes",
                "--ref=tlv4-review",
                "add",
                "-m",
                "{\"l\":1}\n{\"s\":1}",
                &one.to_string(),
            ],
        );
        let ours = rev(&work, REVIEW_NOTES_REF);
        let pulled = store.pull_sessions(&remote).unwrap();
        assert_eq!(pulled.merged_notes, [REVIEW_NOTES_REF]);
        let show = |c: ObjectId| {
            git(
                &work,
                &["notes", "--ref=tlv4-review", "show", &c.to_string()],
            )
        };
        assert_eq!(show(one), "{\"l\":1}\n{\"s\":1}\n{\"r\":1}\n");
        assert_eq!(show(two), "{\"r\":2}\n");
        let merge = rev(&work, REVIEW_NOTES_REF);
        assert_eq!(
            git(&work, &["rev-list", "--parents", "-n1", &merge.to_string()]).trim(),
            format!("{merge} {ours} {theirs}")
        );
        git(&work, &["fsck", "--strict", "--no-progress"]);
        // Pulling again changes nothing; the merge goes back cleanly.
        assert!(
            store
                .pull_sessions(&remote)
                .unwrap()
                .ahead
                .contains(&REVIEW_NOTES_REF.to_owned())
        );
        store.push_sessions(&remote, &[]).unwrap();
    }

    #[test]
    fn remote_keys_are_ref_safe() {
        assert_eq!(Remote::new("origin").unwrap().key, "origin");
        let url = Remote::new("file:///tmp/x.git").unwrap();
        assert!(
            url.key.starts_with("url-") && url.key.len() == 20,
            "{}",
            url.key
        );
        assert_eq!(
            url.mirror("refs/heads/tlv4/TLV4-a-1"),
            format!("refs/tlv4-remote/{}/heads/tlv4/TLV4-a-1", url.key)
        );
        assert!(Remote::new("--upload-pack=x").is_err());
    }
}
