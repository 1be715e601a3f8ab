//! Workers on other machines: a session written through a remote, and the lease each task a
//! worker claims carries (`specs/state-format.md` §18.6–§18.9).
//!
//! The remote is the one place every worker agrees on, so a session a worker writes has its
//! tip *there*: [`Store::transact_remote`] fetches the session into the mirror, applies the
//! change to the remote's tip, and publishes the event with one atomic push that leases the
//! tip it read. A server that has moved on refuses the push, and the change is re-applied to
//! the new tip; the local branch is only fast-forwarded to what the remote took. Nothing
//! local moves backwards, nothing remote is overwritten unseen.
//!
//! A claim also creates `refs/tlv4/leases/<SID>/<TASK>` (only if absent) in that push: a
//! commit with an empty tree whose trailers name the holder and when the lease ends. The
//! holder renews it by pushing a child commit with a lease on the previous one, which writes
//! no session event; whoever finds it expired returns the task to pending and deletes the
//! lease in one push, with a lease on the value it judged, so a holder that renewed
//! meanwhile wins.

use std::collections::BTreeMap;
use std::time::Duration;

use gix::ObjectId;

use super::refs::{LEASE_REF_PREFIX, lease_ref};
use super::remote::Remote;
use super::write::{RemoteEdit, Written};
use super::{Store, notes_ref, session_ref};
use tlv4_core::error::{Error, Result};
use tlv4_core::model::{Event, SessionId, TaskId};

/// How many times a change written through a remote is re-applied after the remote moved.
const REMOTE_ATTEMPTS: u32 = 100;

/// Milliseconds since the epoch by the system clock. Leases are judged by the real clock even
/// when `GIT_COMMITTER_DATE` fixes the time stamps of commits.
pub fn now_ms() -> u64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    now.saturating_add_signed(clock_offset_ms())
}

/// `GIT_TLV4_CLOCK_OFFSET_MS` (signed milliseconds, read once): what this process adds to
/// the system clock for lease times, to try a clone whose clock is off (§18.8) without
/// changing the machine's.
fn clock_offset_ms() -> i64 {
    static OFFSET: std::sync::OnceLock<i64> = std::sync::OnceLock::new();
    *OFFSET.get_or_init(|| {
        std::env::var("GIT_TLV4_CLOCK_OFFSET_MS")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    })
}

/// A claim's lease: who holds the task and until when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The session.
    pub session: SessionId,
    /// The task.
    pub task: TaskId,
    /// The attempt the claim started.
    pub attempt: u32,
    /// The holder: `<host>:<pid>`, as in the task's owner.
    pub holder: String,
    /// When the lease ends, in milliseconds since the epoch by the holder's clock.
    pub expires_ms: u64,
    /// A claim on best-of candidates: the session tip they start from (`Tlv4-From`), so that
    /// every worker running candidates of one task starts where its holder did.
    pub from: Option<ObjectId>,
}

impl Lease {
    /// Whether the lease is over at `now_ms` by the clock of whoever judges, allowing `skew_ms`
    /// of difference between that clock and the holder's.
    pub fn expired(&self, now_ms: u64, skew_ms: u64) -> bool {
        now_ms > self.expires_ms.saturating_add(skew_ms)
    }

    /// The commit message that holds the lease.
    fn message(&self) -> String {
        let mut message = format!(
            "lease: {} of {}\n\nTlv4-Session: {}\nTlv4-Task: {}\nTlv4-Attempt: {}\nTlv4-Holder: {}\nTlv4-Expires: {}\n",
            self.task,
            self.session,
            self.session,
            self.task,
            self.attempt,
            self.holder,
            self.expires_ms
        );
        if let Some(from) = self.from {
            message.push_str(&format!("Tlv4-From: {from}\n"));
        }
        message
    }

    /// Reads a lease from its commit message.
    fn parse(message: &str) -> Option<Lease> {
        let field = |key: &str| {
            message
                .lines()
                .find_map(|l| l.strip_prefix(key)?.strip_prefix(": "))
                .map(str::trim)
        };
        Some(Lease {
            session: field("Tlv4-Session")?.parse().ok()?,
            task: field("Tlv4-Task")?.parse().ok()?,
            attempt: field("Tlv4-Attempt")?.parse().ok()?,
            holder: field("Tlv4-Holder")?.to_owned(),
            expires_ms: field("Tlv4-Expires")?.parse().ok()?,
            from: field("Tlv4-From").and_then(|v| v.parse().ok()),
        })
    }
}

/// A task a worker holds on a remote: its lease as last fetched from there (`status`,
/// `list --remote`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Holding {
    /// The task.
    pub task: String,
    /// The remote whose lease it is.
    pub remote: String,
    /// The worker, `<host>:<pid>`.
    pub holder: String,
    /// The attempt it runs.
    pub attempt: u32,
    /// When the lease runs out (RFC 3339).
    pub expires_at: String,
    /// Milliseconds left on it by this machine's clock (negative: run out that long ago).
    pub left_ms: i64,
}

impl Holding {
    /// Task `task`'s `lease` on `remote`, judged at `now_ms`.
    fn new(task: &TaskId, remote: String, lease: Lease, now_ms: u64) -> Holding {
        let ms = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        Holding {
            task: task.to_string(),
            remote,
            expires_at: tlv4_core::clock::rfc3339_ms(lease.expires_ms),
            left_ms: ms(lease.expires_ms) - ms(now_ms),
            holder: lease.holder,
            attempt: lease.attempt,
        }
    }

    /// `host:pid, lease 12s left` (or `… ran out 3s ago`).
    pub fn describe(&self) -> String {
        let secs = self.left_ms.unsigned_abs().div_ceil(1000);
        if self.left_ms >= 0 {
            format!(
                "{}, attempt {}, lease {secs}s left",
                self.holder, self.attempt
            )
        } else {
            format!(
                "{}, attempt {}, lease ran out {secs}s ago",
                self.holder, self.attempt
            )
        }
    }
}

impl Store {
    /// Writes `lease` as a commit with an empty tree, on `parent` (the lease it renews).
    pub fn write_lease(&self, lease: &Lease, parent: Option<ObjectId>) -> Result<ObjectId> {
        self.write_empty_commit(&lease.message(), parent)
    }

    /// A commit with the empty tree, `message` and `parent`, as leases and turns are.
    fn write_empty_commit(&self, message: &str, parent: Option<ObjectId>) -> Result<ObjectId> {
        let git = |e: gix::Error| Error::git("cannot write a lease", e);
        let tree = self
            .repo
            .write_object(gix::objs::Tree::empty())
            .map_err(git)?
            .detach();
        let sig = self.signature();
        let commit = gix::objs::Commit {
            tree,
            parents: parent.into_iter().collect(),
            author: sig.clone(),
            committer: sig,
            encoding: None,
            message: message.into(),
            extra_headers: Vec::new(),
        };
        Ok(self.repo.write_object(&commit).map_err(git)?.detach())
    }

    /// The lease commit `commit` holds.
    pub fn read_lease(&self, commit: ObjectId) -> Result<Lease> {
        let c = self
            .repo
            .find_commit(commit)
            .map_err(|e| Error::git(&format!("cannot read the lease {commit}"), e))?;
        let message = c
            .message_raw()
            .map_err(|e| Error::git(&format!("cannot read the lease {commit}"), e))?
            .to_string();
        Lease::parse(&message).ok_or_else(|| Error::Git(format!("{commit} is not a lease")))
    }

    /// Fetches session `sid` from `remote` into the mirror — its branch, its task branches and
    /// its leases — and returns the remote's tip. A session the remote does not hold is an
    /// error.
    pub fn fetch_session(&self, remote: &Remote, sid: &SessionId) -> Result<ObjectId> {
        let branch = session_ref(sid);
        let leases = format!("{LEASE_REF_PREFIX}{sid}/");
        // Patterns, not names: a name the remote lacks would fail the fetch. The branch's
        // pattern also takes the task branches `<SID>.<TASK>` (and ids extending this one,
        // which the mirror may as well follow).
        self.fetch_mirror(
            remote,
            &[remote.mirror_spec(&branch), remote.mirror_spec(&leases)],
            true,
        )?;
        self.remote_value(remote, &branch)?.ok_or_else(|| {
            Error::state(
                format!("`{}` has no live session `{sid}`", remote.name),
                Some(format!(
                    "`git tlv4 list --remote {}` shows the sessions it has",
                    remote.name
                )),
            )
        })
    }

    /// The value of ref `name` of `remote` as last fetched or pushed (its mirror).
    pub fn remote_value(&self, remote: &Remote, name: &str) -> Result<Option<ObjectId>> {
        self.try_ref(&remote.mirror(name))
    }

    /// The lease of `task` on `remote` as last fetched, with its commit.
    pub fn remote_lease(
        &self,
        remote: &Remote,
        sid: &SessionId,
        task: &TaskId,
    ) -> Result<Option<(ObjectId, Lease)>> {
        match self.remote_value(remote, &lease_ref(sid, task))? {
            Some(id) => Ok(Some((id, self.read_lease(id)?))),
            None => Ok(None),
        }
    }

    /// Every lease of session `sid` on `remote` as last fetched, by task.
    pub fn remote_leases(
        &self,
        remote: &Remote,
        sid: &SessionId,
    ) -> Result<BTreeMap<TaskId, (ObjectId, Lease)>> {
        let prefix = remote.mirror(&format!("{LEASE_REF_PREFIX}{sid}/"));
        let mut out = BTreeMap::new();
        for (name, id) in self.refs_with_prefix(&prefix)? {
            if let Ok(task) = name[prefix.len()..].parse::<TaskId>() {
                out.insert(task, (id, self.read_lease(id)?));
            }
        }
        Ok(out)
    }

    /// Fetches every lease `remote` holds (all sessions) into its mirror.
    pub fn fetch_leases(&self, remote: &Remote) -> Result<()> {
        self.fetch_mirror(remote, &[remote.mirror_spec(LEASE_REF_PREFIX)], false)
    }

    /// The tasks of session `sid` workers hold on `remote`, as last fetched.
    pub fn holdings(&self, remote: &Remote, sid: &SessionId) -> Result<Vec<Holding>> {
        let now = now_ms();
        Ok(self
            .remote_leases(remote, sid)?
            .into_iter()
            .map(|(task, (_, l))| Holding::new(&task, remote.name.clone(), l, now))
            .collect())
    }

    /// The tasks of session `sid` workers hold on any remote this repository has fetched
    /// leases from (by name or URL), as last fetched.
    pub fn holdings_seen(&self, sid: &SessionId) -> Result<Vec<Holding>> {
        let infix = format!("/{}{sid}/", LEASE_REF_PREFIX.trim_start_matches("refs/"));
        let now = now_ms();
        let mut out = Vec::new();
        for (name, id) in self.refs_with_prefix(super::REMOTE_MIRROR_PREFIX)? {
            let rest = &name[super::REMOTE_MIRROR_PREFIX.len()..];
            let Some((key, task)) = rest.split_once(&infix) else {
                continue;
            };
            let Ok(task) = task.parse::<TaskId>() else {
                continue;
            };
            out.push(Holding::new(
                &task,
                key.to_owned(),
                self.read_lease(id)?,
                now,
            ));
        }
        Ok(out)
    }

    /// Brings the local branch of session `sid` to `to` (the remote's tip, which must contain
    /// it): created when missing, fast-forwarded otherwise. A local branch with events `to`
    /// lacks is left as it is, and that is an error: the worker would write over them.
    pub fn forward_local(&self, sid: &SessionId, to: ObjectId) -> Result<()> {
        let name = session_ref(sid);
        for _ in 0..10 {
            match self.try_ref(&name)? {
                None => {
                    if self.create_ref(&name, to, "worker: the remote's tip")? {
                        return Ok(());
                    }
                }
                Some(l) if l == to => return Ok(()),
                Some(l) if self.is_ancestor(l, to)? => {
                    self.ensure_not_checked_out(&name)?;
                    match self.update_ref(&name, l, to, "worker: the remote's tip") {
                        Ok(()) => return Ok(()),
                        Err(Error::Conflict { .. }) => continue,
                        Err(e) => return Err(e),
                    }
                }
                Some(_) => {
                    return Err(Error::conflict(
                        format!(
                            "the branch of session `{sid}` here has events its remote does not have"
                        ),
                        Some(
                            "send them first (`git tlv4 push`), or pull the remote's (`git tlv4 pull`)"
                                .to_owned(),
                        ),
                    ));
                }
            }
        }
        Err(Error::conflict(
            format!("the branch of session `{sid}` here keeps moving"),
            Some("run one worker per clone".to_owned()),
        ))
    }

    /// [`Store::transact`] with the session's tip on `remote`: fetch, apply `change` to the
    /// remote's tip, and push the event — with every ref the change adds by
    /// [`super::Txn::also_push`] — in one atomic push leasing the tip it read. When the remote
    /// moved meanwhile, the change is re-applied to its new tip (bounded, jittered retries).
    /// The local branch is fast-forwarded to the event once the remote has it.
    pub fn transact_remote(
        &self,
        remote: &Remote,
        sid: &SessionId,
        change: impl FnMut(&mut super::Txn<'_>) -> Result<Option<Event>>,
    ) -> Result<Option<Written>> {
        self.transact_remote_with(remote, sid, change, || {})
    }

    /// [`Store::transact_remote`], calling `between` after each refused push, before the
    /// next try (a worker renews its leases there, so a long race does not cost them).
    pub fn transact_remote_with(
        &self,
        remote: &Remote,
        sid: &SessionId,
        mut change: impl FnMut(&mut super::Txn<'_>) -> Result<Option<Event>>,
        mut between: impl FnMut(),
    ) -> Result<Option<Written>> {
        let branch = session_ref(sid);
        for attempt in 0..REMOTE_ATTEMPTS {
            // The first try starts from the mirror when it has the session (the loop fetched a
            // moment ago): a stale one costs only a refused push, and the retry fetches.
            let mirrored = match attempt {
                0 => self.remote_value(remote, &branch)?,
                _ => None,
            };
            let tip = match mirrored {
                Some(tip) => tip,
                None => self.fetch_session(remote, sid)?,
            };
            self.forward_local(sid, tip)?;
            let Some((publish, pushes)) = self.prepare_event(sid, tip, &mut change)? else {
                return Ok(None);
            };
            let mut edits = vec![RemoteEdit {
                name: branch.clone(),
                expected: Some(tip),
                new: Some(publish.new),
            }];
            edits.extend(pushes);
            match self.push_leased(remote, &edits)? {
                Ok(()) => {
                    self.count(|s| {
                        s.events += 1;
                        s.batches += 1;
                    });
                    self.forward_local(sid, publish.new)?;
                    return Ok(Some(publish.value));
                }
                Err(_) => {
                    self.count(|s| s.retries += 1);
                    remote_backoff(attempt);
                    between();
                }
            }
        }
        Err(Error::conflict(
            format!(
                "session `{sid}` on `{}` was updated concurrently {REMOTE_ATTEMPTS} times in a row",
                remote.name
            ),
            Some("re-run the command".to_owned()),
        ))
    }

    /// Claims a task (protocol 2, §18.10): pushes `lease` on the task's own ref, created only
    /// if the remote holds none (`previous` `None`) or replacing `previous`, a lease that ran
    /// out. No session event is written. `None` when another worker took the task first.
    pub fn claim_lease(
        &self,
        remote: &Remote,
        lease: &Lease,
        previous: Option<ObjectId>,
    ) -> Result<Option<ObjectId>> {
        self.claim_at(
            remote,
            &lease_ref(&lease.session, &lease.task),
            lease,
            previous,
        )
    }

    /// [`Store::claim_lease`] on ref `name`: a claim kept elsewhere than the task leases (a
    /// best-of candidate's, under [`super::refs::CLAIM_REF_PREFIX`]).
    pub fn claim_at(
        &self,
        remote: &Remote,
        name: &str,
        lease: &Lease,
        previous: Option<ObjectId>,
    ) -> Result<Option<ObjectId>> {
        let new = self.write_lease(lease, previous)?;
        let edit = RemoteEdit {
            name: name.to_owned(),
            expected: previous,
            new: Some(new),
        };
        if self.push_leased(remote, &[edit])?.is_ok() {
            self.count(|s| s.claims += 1);
            Ok(Some(new))
        } else {
            self.count(|s| s.claims_refused += 1);
            Ok(None)
        }
    }

    /// Takes the turn to push a batch to session `sid` (§18.10): `refs/tlv4/leases/<SID>/turn`
    /// created only if absent — or, when the remote as last fetched holds one that ran out
    /// (judged with `skew_ms`), replacing it — holding it for `hold_ms`. `None`: another
    /// worker has it (a refused push, counted).
    pub fn take_turn(
        &self,
        remote: &Remote,
        sid: &SessionId,
        holder: &str,
        hold_ms: u64,
        skew_ms: u64,
    ) -> Result<Option<ObjectId>> {
        let name = turn_ref(sid);
        let expected = match self.remote_value(remote, &name)? {
            Some(seen) if self.turn_expired(seen, skew_ms)? => Some(seen),
            _ => None,
        };
        let message = format!(
            "turn: {sid}\n\nTlv4-Session: {sid}\nTlv4-Holder: {holder}\nTlv4-Expires: {}\n",
            now_ms().saturating_add(hold_ms)
        );
        let new = self.write_empty_commit(&message, expected)?;
        let edit = RemoteEdit {
            name,
            expected,
            new: Some(new),
        };
        if self.push_leased(remote, &[edit])?.is_ok() {
            Ok(Some(new))
        } else {
            self.count(|s| s.turns_refused += 1);
            Ok(None)
        }
    }

    /// Gives the turn `commit` back (nothing when it is no longer that).
    pub fn release_turn(&self, remote: &Remote, sid: &SessionId, commit: ObjectId) -> Result<()> {
        let edit = turn_release(sid, commit);
        self.push_leased(remote, &[edit])?.ok();
        Ok(())
    }

    /// Whether the turn commit `commit` ran out `skew_ms` ago (an unreadable one counts so).
    fn turn_expired(&self, commit: ObjectId, skew_ms: u64) -> Result<bool> {
        let c = self
            .repo
            .find_commit(commit)
            .map_err(|e| Error::git(&format!("cannot read the turn {commit}"), e))?;
        let message = c
            .message_raw()
            .map_err(|e| Error::git(&format!("cannot read the turn {commit}"), e))?
            .to_string();
        let expires = message
            .lines()
            .find_map(|l| l.strip_prefix("Tlv4-Expires: "))
            .and_then(|v| v.trim().parse::<u64>().ok());
        Ok(expires.is_none_or(|e| now_ms() > e.saturating_add(skew_ms)))
    }

    /// Deletes the lease of `task` on `remote` if it still is `commit` (a claim whose task the
    /// session moved past). Whether it went.
    pub fn release_lease(
        &self,
        remote: &Remote,
        sid: &SessionId,
        task: &TaskId,
        commit: ObjectId,
    ) -> Result<bool> {
        let edit = RemoteEdit {
            name: lease_ref(sid, task),
            expected: Some(commit),
            new: None,
        };
        Ok(self.push_leased(remote, &[edit])?.is_ok())
    }

    /// Writes `changes` as consecutive events of session `sid` on the remote's tip (fetched
    /// first when `fetch`, else as last seen) and publishes them all with one atomic push that
    /// leases that tip, with every ref the changes add ([`super::Txn::also_push`]) and `also`
    /// (the turn's release): a batch.
    /// One try: `None` when the remote refused it (it moved, or a lease went); the caller
    /// tries again later, and its changes are applied afresh then. Returns what each change
    /// wrote (`None`: nothing), and fast-forwards the local branch.
    pub fn transact_remote_batch(
        &self,
        remote: &Remote,
        sid: &SessionId,
        fetch: bool,
        changes: &mut [super::ChainStep<'_>],
        also: &[RemoteEdit],
    ) -> Result<Option<Vec<Option<Written>>>> {
        let branch = session_ref(sid);
        let mirrored = match fetch {
            true => None,
            false => self.remote_value(remote, &branch)?,
        };
        let tip = match mirrored {
            Some(tip) => tip,
            None => self.fetch_session(remote, sid)?,
        };
        self.forward_local(sid, tip)?;
        let (head, written, mut edits) = self.prepare_chain(sid, tip, changes)?;
        if head == tip {
            return Ok(Some(written));
        }
        edits.insert(
            0,
            RemoteEdit {
                name: branch,
                expected: Some(tip),
                new: Some(head),
            },
        );
        edits.extend(also.iter().cloned());
        match self.push_leased(remote, &edits)? {
            Ok(()) => {
                let events = written.iter().flatten().count() as u64;
                self.count(|s| {
                    s.events += events;
                    s.batches += 1;
                });
                self.forward_local(sid, head)?;
                Ok(Some(written))
            }
            Err(_) => {
                self.count(|s| s.retries += 1);
                Ok(None)
            }
        }
    }

    /// Renews a lease: pushes a child of `old` (the lease as the remote holds it) carrying
    /// `lease`, with a lease on `old`. `None` when the remote no longer holds `old`: the
    /// lease was taken back (it expired) and the task is no longer this holder's.
    pub fn renew_lease(
        &self,
        remote: &Remote,
        old: ObjectId,
        lease: &Lease,
    ) -> Result<Option<ObjectId>> {
        self.renew_at(remote, &lease_ref(&lease.session, &lease.task), old, lease)
    }

    /// [`Store::renew_lease`] on ref `name` (see [`Store::claim_at`]).
    pub fn renew_at(
        &self,
        remote: &Remote,
        name: &str,
        old: ObjectId,
        lease: &Lease,
    ) -> Result<Option<ObjectId>> {
        let new = self.write_lease(lease, Some(old))?;
        let edit = RemoteEdit {
            name: name.to_owned(),
            expected: Some(old),
            new: Some(new),
        };
        Ok(self.push_leased(remote, &[edit])?.ok().map(|()| new))
    }

    /// Deletes the claim on ref `name` if it is still `commit` (see [`Store::claim_at`]):
    /// whether it went.
    pub fn release_at(&self, remote: &Remote, name: &str, commit: ObjectId) -> Result<bool> {
        let edit = RemoteEdit {
            name: name.to_owned(),
            expected: Some(commit),
            new: None,
        };
        Ok(self.push_leased(remote, &[edit])?.is_ok())
    }

    /// Keeps `commit`, work of attempt `attempt` of `task` that the session did not take,
    /// under the first `refs/tlv4/runs/<SID>/<TASK>/<n>` (from `attempt` up) free both here
    /// and on `remote`: created on the remote only if absent, then here. Returns the ref.
    pub fn keep_run_remote(
        &self,
        remote: &Remote,
        sid: &SessionId,
        task: &TaskId,
        attempt: u32,
        commit: ObjectId,
        why: &str,
    ) -> Result<String> {
        let first = attempt.max(1);
        for n in first..first.saturating_add(100) {
            let name = super::refs::attempt_ref(sid, task, n);
            if self.try_ref(&name)?.is_some_and(|c| c != commit) {
                continue;
            }
            let edit = RemoteEdit {
                name: name.clone(),
                expected: None,
                new: Some(commit),
            };
            if self.push_leased(remote, &[edit])?.is_ok() {
                if self.try_ref(&name)?.is_none() {
                    self.create_ref(&name, commit, &format!("git-tlv4: {why}"))?;
                }
                return Ok(name);
            }
        }
        Err(Error::state(
            format!(
                "no free ref under {} to keep {commit} ({why}) in",
                super::refs::runs_prefix(sid, task)
            ),
            None,
        ))
    }

    /// Creates ref `name` at `commit` on `remote` and here, only where it is absent: whether
    /// the remote took it (`false`: it has that ref already).
    pub fn create_remote(
        &self,
        remote: &Remote,
        name: &str,
        commit: ObjectId,
        why: &str,
    ) -> Result<bool> {
        let edit = RemoteEdit {
            name: name.to_owned(),
            expected: None,
            new: Some(commit),
        };
        let created = self.push_leased(remote, &[edit])?.is_ok();
        if self.try_ref(name)?.is_none() {
            self.create_ref(name, commit, &format!("git-tlv4: {why}"))?;
        }
        Ok(created)
    }

    /// Fetches the refs under `prefix` of `remote` (with their commits) into the mirror and
    /// returns them by their names on the remote.
    pub fn fetch_prefix(&self, remote: &Remote, prefix: &str) -> Result<Vec<(String, ObjectId)>> {
        self.fetch_mirror(remote, &[remote.mirror_spec(prefix)], true)?;
        let mirrored = remote.mirror(prefix);
        Ok(self
            .refs_with_prefix(&mirrored)?
            .into_iter()
            .map(|(name, id)| (format!("{prefix}{}", &name[mirrored.len()..]), id))
            .collect())
    }

    /// A commit holding a result that came too late to be recorded (its lease was taken back):
    /// `files` under the session's folder, on `parent`'s tree (the session tip it is kept
    /// beside), message `<TASK>: late result (<role>)` with the summary and trailers. For
    /// [`Store::keep_run_remote`].
    pub fn write_late_result(
        &self,
        sid: &SessionId,
        task: &tlv4_core::model::Task,
        files: &[(String, Vec<u8>)],
        summary: &str,
        parent: ObjectId,
    ) -> Result<ObjectId> {
        let git = |e: gix::Error| Error::git("cannot keep a late result", e);
        let mut editor = self
            .repo
            .edit_tree(self.commit_tree(parent)?)
            .map_err(git)?;
        for (path, bytes) in files {
            // What the loop would have refused is not kept either.
            if tlv4_core::layout::validate_pipeline_path(path).is_err() {
                continue;
            }
            let blob = self.repo.write_blob(bytes).map_err(git)?.detach();
            editor
                .upsert(
                    format!("{}/{path}", super::session_dir(sid)).as_str(),
                    gix::object::tree::EntryKind::Blob,
                    blob,
                )
                .map_err(git)?;
        }
        let tree = editor.write().map_err(git)?.detach();
        let sig = self.signature();
        let message = format!(
            "{}: late result ({})\n\n{}\n\nTlv4-Session: {sid}\nTlv4-Task: {}\nTlv4-Role: {}\nTlv4-Event: task_result_late\nTlv4-Attempt: {}\n",
            task.id,
            task.role,
            summary.trim(),
            task.id,
            task.role,
            task.attempts
        );
        let commit = gix::objs::Commit {
            tree,
            parents: [parent].into_iter().collect(),
            author: sig.clone(),
            committer: sig,
            encoding: None,
            message: message.into(),
            extra_headers: Vec::new(),
        };
        Ok(self.repo.write_object(&commit).map_err(git)?.detach())
    }

    /// Sends the message bus of session `sid` to `remote`: merged by union with the remote's
    /// first when both have notes the other lacks, then pushed with a lease (bounded retries).
    pub fn sync_notes(&self, remote: &Remote, sid: &SessionId) -> Result<()> {
        let name = notes_ref(sid);
        for attempt in 0..20 {
            self.fetch_mirror(remote, &[remote.mirror_spec(&name)], true)?;
            let Some(local) = self.try_ref(&name)? else {
                return Ok(());
            };
            let theirs = self.remote_value(remote, &name)?;
            let ours = match theirs {
                Some(r) if r == local => return Ok(()),
                Some(r) if self.is_ancestor(local, r)? => {
                    self.update_ref(&name, local, r, &format!("pull from {}", remote.name))?;
                    return Ok(());
                }
                Some(r) if !self.is_ancestor(r, local)? => {
                    self.merge_notes(&name, local, r, &remote.name)?;
                    self.try_ref(&name)?.expect("the merge was just written")
                }
                _ => local,
            };
            let edit = RemoteEdit {
                name: name.clone(),
                expected: theirs,
                new: Some(ours),
            };
            if self.push_leased(remote, &[edit])?.is_ok() {
                return Ok(());
            }
            remote_backoff(attempt);
        }
        Err(Error::conflict(
            format!(
                "the messages of session `{sid}` on `{}` kept moving",
                remote.name
            ),
            Some(format!(
                "run `git tlv4 pull {0}` and `git tlv4 push {0}`",
                remote.name
            )),
        ))
    }
}

/// Where the turn to push a batch to session `sid` is held (§18.10); beside the leases, so
/// the worker's fetch of them brings it (no task id is lower case).
pub fn turn_ref(sid: &SessionId) -> String {
    format!("{LEASE_REF_PREFIX}{sid}/turn")
}

/// The deletion of turn `commit` of session `sid`, with a lease on it: in a batch's push, or
/// alone.
pub fn turn_release(sid: &SessionId, commit: ObjectId) -> RemoteEdit {
    RemoteEdit {
        name: turn_ref(sid),
        expected: Some(commit),
        new: None,
    }
}

/// Sleeps before another try against a remote: up to 20 ms times 2^attempt (at most 400 ms),
/// jittered so workers that lost the same race spread out.
fn remote_backoff(attempt: u32) {
    let ceiling = (20u64 << attempt.min(5)).min(400);
    std::thread::sleep(tlv4_core::clock::jitter(Duration::from_millis(ceiling)));
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use crate::testutil::git;
    use tlv4_core::model::{EventKind, TaskStatus};

    #[test]
    fn a_lease_reads_back_from_its_commit_message() {
        let lease = Lease {
            session: "TLV4-a-20261129".parse().unwrap(),
            task: "IMPL-001".parse().unwrap(),
            attempt: 2,
            holder: "box:42".into(),
            expires_ms: 1_800_000_000_123,
            from: None,
        };
        assert_eq!(Lease::parse(&lease.message()), Some(lease.clone()));
        // A claim on candidates says where they start.
        let claim = Lease {
            from: Some(gix::ObjectId::null(gix::hash::Kind::Sha1)),
            ..lease.clone()
        };
        assert!(
            claim.message().contains("Tlv4-From: 0000000"),
            "{}",
            claim.message()
        );
        assert_eq!(Lease::parse(&claim.message()), Some(claim));
        assert!(!lease.expired(lease.expires_ms, 0));
        assert!(lease.expired(lease.expires_ms + 1, 0));
        // The skew margin: expiry is judged only that long after the holder's deadline.
        assert!(!lease.expired(lease.expires_ms + 500, 1000));
        assert!(lease.expired(lease.expires_ms + 1001, 1000));
    }

    /// A bare remote holding a session started in clone `a`, and a second clone `b` of it.
    struct Two {
        _dir: tempfile::TempDir,
        bare: std::path::PathBuf,
        a: Store,
        b: Store,
        remote: Remote,
        sid: SessionId,
    }

    fn two() -> Two {
        let dir = tempfile::tempdir().unwrap();
        let bare = dir.path().join("remote.git");
        git(
            dir.path(),
            &["init", "-q", "--bare", "-b", "main", bare.to_str().unwrap()],
        );
        let url = format!("file://{}", bare.display());
        let a = dir.path().join("a");
        git(
            dir.path(),
            &["init", "-q", "-b", "main", a.to_str().unwrap()],
        );
        git(&a, &["commit", "-q", "--allow-empty", "-m", "one"]);
        git(&a, &["remote", "add", "origin", &url]);
        git(&a, &["push", "-q", "origin", "main"]);
        let a = Store::discover(&a).unwrap();
        let sid = crate::testutil::start_session(
            &a,
            "Write requirements for search",
            "spec-only",
            &[("RESEARCH-001", "analyst"), ("DRAFT-001", "writer")],
        );
        let remote = Remote::new("origin").unwrap();
        a.push_sessions(&remote, std::slice::from_ref(&sid))
            .unwrap();
        let b = dir.path().join("b");
        git(dir.path(), &["clone", "-q", &url, b.to_str().unwrap()]);
        let b = Store::discover(&b).unwrap();
        Two {
            _dir: dir,
            bare,
            a,
            b,
            remote,
            sid,
        }
    }

    impl Two {
        fn remote_ref(&self, name: &str) -> Option<String> {
            let out = crate::testutil::git_command(&self.bare)
                .args([
                    "--git-dir",
                    self.bare.to_str().unwrap(),
                    "rev-parse",
                    "-q",
                    "--verify",
                    name,
                ])
                .output()
                .unwrap();
            out.status
                .success()
                .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
        }

        fn fsck(&self) {
            git(&self.bare, &["fsck", "--strict", "--no-progress"]);
            git(self.a.workdir(), &["fsck", "--strict", "--no-progress"]);
            git(self.b.workdir(), &["fsck", "--strict", "--no-progress"]);
        }
    }

    fn task() -> TaskId {
        "RESEARCH-001".parse().unwrap()
    }

    /// Claims RESEARCH-001 for `holder` with a lease ending at `expires_ms`, through the
    /// remote, the way the run loop of a worker does; the lease commit when it won.
    fn claim(store: &Store, t: &Two, holder: &str, expires_ms: u64) -> Option<ObjectId> {
        let mut lease_commit = None;
        store
            .transact_remote(&t.remote, &t.sid, |txn| {
                let id = task();
                if txn.state.task(&id)?.status != TaskStatus::Pending {
                    return Ok(None);
                }
                if txn.store().remote_lease(&t.remote, &t.sid, &id)?.is_some() {
                    return Ok(None);
                }
                let task = txn.state.task_mut(&id)?;
                task.status = TaskStatus::InProgress;
                task.attempts += 1;
                let event = Event::task(EventKind::TaskClaimed, task, format!("by {holder}"));
                let lease = Lease {
                    session: t.sid.clone(),
                    task: id.clone(),
                    attempt: 1,
                    holder: holder.into(),
                    expires_ms,
                    from: None,
                };
                let commit = txn.store().write_lease(&lease, None)?;
                txn.also_push(RemoteEdit {
                    name: lease_ref(&t.sid, &id),
                    expected: None,
                    new: Some(commit),
                });
                lease_commit = Some(commit);
                Ok(Some(event))
            })
            .unwrap()
            .map(|_| lease_commit.expect("set by the winning change"))
    }

    #[test]
    fn the_remote_counts_say_what_went_through_it() {
        let t = two();
        // b has seen the session's first tip; then a claims the task.
        t.b.fetch_session(&t.remote, &t.sid).unwrap();
        let (a0, b0) = (t.a.remote_stats(), t.b.remote_stats());
        claim(&t.a, &t, "a:1", now_ms() + 60_000).expect("the first claim wins");
        let a1 = t.a.remote_stats();
        assert_eq!(
            (
                a1.events - a0.events,
                a1.pushes - a0.pushes,
                a1.retries,
                a1.refused
            ),
            (1, 1, a0.retries, a0.refused),
            "one event, one push taken, nothing refused"
        );
        // b's claim starts from its stale mirror: refused once, fetched, and then finds the
        // task taken, writing nothing.
        assert_eq!(claim(&t.b, &t, "b:2", now_ms() + 60_000), None);
        let b1 = t.b.remote_stats();
        assert_eq!(b1.retries - b0.retries, 1);
        assert_eq!(b1.refused - b0.refused, 1);
        assert_eq!(b1.events - b0.events, 0);
        assert_eq!(b1.fetches - b0.fetches, 1);
        let ratio = super::super::RemoteStats {
            events: 4,
            retries: 6,
            ..Default::default()
        };
        assert_eq!(ratio.retries_per_event(), 1.5);
        assert_eq!(
            super::super::RemoteStats::default().retries_per_event(),
            0.0
        );
        // A renewal through a remote that cannot be reached is that error, typed.
        let gone = Remote::new(&format!("file://{}/gone.git", t.bare.display())).unwrap();
        let lease =
            t.a.remote_lease(&t.remote, &t.sid, &task())
                .unwrap()
                .unwrap();
        let renewed = t.a.renew_lease(&gone, lease.0, &lease.1);
        assert!(
            matches!(renewed, Err(Error::Unreachable { ref remote, .. }) if *remote == gone.name),
            "{renewed:?}"
        );
        t.fsck();
    }

    #[test]
    fn a_claim_and_its_lease_are_one_push_and_a_stale_one_changes_nothing() {
        let t = two();
        let before = t.b.fetch_session(&t.remote, &t.sid).unwrap();
        let lease = claim(&t.a, &t, "a:1", now_ms() + 60_000).expect("the first claim wins");
        let branch = session_ref(&t.sid);
        let tip = t.remote_ref(&branch).unwrap();
        assert_eq!(
            t.remote_ref(&lease_ref(&t.sid, &task())),
            Some(lease.to_string())
        );
        assert_eq!(
            t.a.try_ref(&branch).unwrap().unwrap().to_string(),
            tip,
            "fast-forwarded here"
        );

        // The other clone, from the tip it saw before: its event and its lease are refused
        // together, whichever lease is stale.
        let other =
            t.b.write_lease(
                &Lease {
                    session: t.sid.clone(),
                    task: task(),
                    attempt: 1,
                    holder: "b:2".into(),
                    expires_ms: now_ms() + 60_000,
                    from: None,
                },
                None,
            )
            .unwrap();
        let stale_tip = t.b.push_leased(
            &t.remote,
            &[
                RemoteEdit {
                    name: branch.clone(),
                    expected: Some(before),
                    new: Some(other),
                },
                RemoteEdit {
                    name: lease_ref(&t.sid, &task()),
                    expected: None,
                    new: Some(other),
                },
            ],
        );
        assert!(
            matches!(stale_tip, Ok(Err(ref refused)) if !refused.is_empty()),
            "{stale_tip:?}"
        );
        // Leasing the right tip but creating a lease that exists: refused as a whole too.
        let current: ObjectId = tip.parse().unwrap();
        t.b.fetch_session(&t.remote, &t.sid).unwrap();
        let taken = t.b.push_leased(
            &t.remote,
            &[
                RemoteEdit {
                    name: branch.clone(),
                    expected: Some(current),
                    new: Some(other),
                },
                RemoteEdit {
                    name: lease_ref(&t.sid, &task()),
                    expected: None,
                    new: Some(other),
                },
            ],
        );
        assert!(matches!(taken, Ok(Err(_))), "{taken:?}");
        assert_eq!(t.remote_ref(&branch), Some(tip));
        assert_eq!(
            t.remote_ref(&lease_ref(&t.sid, &task())),
            Some(lease.to_string())
        );
        // Through the protocol the second claim sees the task taken and writes nothing.
        assert_eq!(claim(&t.b, &t, "b:2", now_ms() + 60_000), None);
        t.fsck();
    }

    #[test]
    fn a_change_is_reapplied_on_the_tip_the_remote_moved_to() {
        let t = two();
        let calls = Cell::new(0);
        let written =
            t.b.transact_remote(&t.remote, &t.sid, |txn| {
                calls.set(calls.get() + 1);
                if calls.get() == 1 {
                    // Another worker wins the race between this read and this push.
                    assert!(claim(&t.a, &t, "a:1", now_ms() + 60_000).is_some());
                }
                let seen = txn.state.task(&task())?.status;
                Ok(Some(Event::session(
                    EventKind::TasksRecovered,
                    format!("saw {}", seen.as_str()),
                )))
            })
            .unwrap()
            .unwrap();
        assert_eq!(calls.get(), 2, "applied again to the new tip, not replayed");
        assert_eq!(written.event.summary, "saw in_progress");
        let branch = session_ref(&t.sid);
        let a_tip = t.a.try_ref(&branch).unwrap().unwrap();
        let parents = git(
            t.b.workdir(),
            &["rev-list", "--parents", "-n1", &written.commit.to_string()],
        );
        assert_eq!(parents.trim(), format!("{} {a_tip}", written.commit));
        assert_eq!(t.remote_ref(&branch), Some(written.commit.to_string()));
        assert_eq!(t.b.try_ref(&branch).unwrap(), Some(written.commit));
        t.fsck();
    }

    #[test]
    fn a_renewal_wins_over_an_expiry_judged_on_the_old_lease() {
        let t = two();
        let first = claim(&t.a, &t, "a:1", now_ms() + 100).unwrap();
        let lease = t.a.read_lease(first).unwrap();
        let branch = session_ref(&t.sid);
        let claimed_tip = t.remote_ref(&branch).unwrap();
        let calls = Cell::new(0);
        let mut renewed = None;
        let written =
            t.b.transact_remote(&t.remote, &t.sid, |txn| {
                calls.set(calls.get() + 1);
                let Some((commit, seen)) = txn.store().remote_lease(&t.remote, &t.sid, &task())?
                else {
                    return Ok(None);
                };
                // Judged run out (a clock far ahead); the holder renews before the push.
                if !seen.expired(now_ms() + 10_000, 0) {
                    return Ok(None);
                }
                if calls.get() == 1 {
                    let mut next = lease.clone();
                    next.expires_ms = now_ms() + 3_600_000;
                    renewed = t.a.renew_lease(&t.remote, first, &next).unwrap();
                }
                let id = task();
                let task = txn.state.task_mut(&id)?;
                task.status = TaskStatus::Pending;
                txn.also_push(RemoteEdit {
                    name: lease_ref(&t.sid, &id),
                    expected: Some(commit),
                    new: None,
                });
                Ok(Some(Event::session(EventKind::TasksRecovered, "expired")))
            })
            .unwrap();
        assert!(written.is_none(), "the renewed lease is not run out");
        assert_eq!(calls.get(), 2);
        let renewed = renewed.expect("the renewal was taken");
        assert_eq!(
            t.remote_ref(&lease_ref(&t.sid, &task())),
            Some(renewed.to_string())
        );
        assert_eq!(t.remote_ref(&branch), Some(claimed_tip), "no expiry event");
        // A renewal on a value the remote no longer holds is refused.
        assert_eq!(t.a.renew_lease(&t.remote, first, &lease).unwrap(), None);
        t.fsck();
    }

    #[test]
    fn a_local_branch_with_events_the_remote_lacks_is_neither_moved_nor_written_over() {
        let t = two();
        let branch = session_ref(&t.sid);
        t.b.fetch_session(&t.remote, &t.sid).unwrap();
        let tip = t.b.remote_value(&t.remote, &branch).unwrap().unwrap();
        t.b.forward_local(&t.sid, tip).unwrap();
        // An event written here only (a local command), and one on the remote.
        t.b.transact(&t.sid, |_| {
            Ok(Some(Event::session(EventKind::TasksRecovered, "here")))
        })
        .unwrap();
        let local = t.b.try_ref(&branch).unwrap().unwrap();
        assert!(claim(&t.a, &t, "a:1", now_ms() + 60_000).is_some());
        let remote_tip = t.remote_ref(&branch).unwrap();
        let err =
            t.b.transact_remote(&t.remote, &t.sid, |_| {
                Ok(Some(Event::session(EventKind::TasksRecovered, "there")))
            })
            .unwrap_err();
        assert!(matches!(err, Error::Conflict { .. }), "{err}");
        assert!(err.to_string().contains("does not have"), "{err}");
        assert_eq!(t.b.try_ref(&branch).unwrap(), Some(local), "not moved");
        assert_eq!(t.remote_ref(&branch), Some(remote_tip), "not written over");
    }

    #[test]
    fn late_work_is_kept_under_the_first_run_number_free_on_the_remote() {
        let t = two();
        let head = t.a.head_commit().unwrap();
        let other = t.b.head_commit().unwrap();
        assert_eq!(head, other, "both clones have the same first commit");
        let id = task();
        // The remote has attempt 1 kept already, from another clone.
        let first =
            t.a.keep_run_remote(&t.remote, &t.sid, &id, 1, head, "first")
                .unwrap();
        assert_eq!(first, format!("refs/tlv4/runs/{}/{id}/1", t.sid));
        let tip = t.b.fetch_session(&t.remote, &t.sid).unwrap();
        let kept =
            t.b.keep_run_remote(&t.remote, &t.sid, &id, 1, tip, "late")
                .unwrap();
        assert_eq!(kept, format!("refs/tlv4/runs/{}/{id}/2", t.sid));
        assert_eq!(t.remote_ref(&first), Some(head.to_string()), "create-only");
        assert_eq!(t.remote_ref(&kept), Some(tip.to_string()));
        assert_eq!(t.b.try_ref(&kept).unwrap(), Some(tip));
        t.fsck();
    }
}
