//! Writing events: build the tree in memory, write objects, then move the ref once with
//! compare-and-swap. On a lost race the change is re-applied to the new tip.

use std::collections::BTreeMap;
use std::time::Duration;

use gix::ObjectId;
use gix::object::tree::EntryKind;
use gix::refs::Target;
use gix::refs::transaction::{PreviousValue, RefEdit};

use super::read::StoredBytes;
use super::{MAINTENANCE_EVERY, Store, session_dir, session_ref};
use tlv4_core::error::{Error, Result};
use tlv4_core::layout::validate_pipeline_path;
use tlv4_core::model::{Event, SessionId, State};

/// How many times a change is re-applied after losing a race before giving up.
const MAX_ATTEMPTS: u32 = 200;
/// How long a ref lock may stay taken before it is reported instead of waited for.
const LOCK_PATIENCE: Duration = Duration::from_secs(3);

/// One change being prepared: the state to edit and the files to add. The closure given to
/// [`Store::transact`] may run more than once (once per lost race), so it must compute the
/// change from `state` alone.
pub struct Txn<'s> {
    /// The state to edit; the store writes back whatever differs.
    pub state: State,
    /// The commit the change applies to.
    pub tip: ObjectId,
    files: BTreeMap<String, Vec<u8>>,
    restore: Option<(ObjectId, StoredBytes)>,
    merge: Option<(Option<ObjectId>, ObjectId)>,
    pushes: Vec<RemoteEdit>,
    store: &'s Store,
}

/// A ref of a remote that a change written through that remote also moves, in the same
/// atomic push as the session branch (the leases of workers, `specs/state-format.md` §18.6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteEdit {
    /// The full ref name on the remote.
    pub name: String,
    /// The value the remote must have (`None`: the ref must not exist).
    pub expected: Option<ObjectId>,
    /// The new value (`None`: delete the ref).
    pub new: Option<ObjectId>,
}

impl<'s> Txn<'s> {
    /// The store, for reads the change needs.
    pub fn store(&self) -> &'s Store {
        self.store
    }

    /// Adds (or replaces) the file `rel` under the pipeline folder.
    pub fn write_file(&mut self, rel: &str, bytes: Vec<u8>) -> Result<()> {
        validate_pipeline_path(rel)?;
        self.files.insert(rel.to_owned(), bytes);
        Ok(())
    }

    /// Adds a run record under `runs/` (reserved for the coordinator).
    pub fn write_record(&mut self, rel: &str, bytes: Vec<u8>) -> Result<()> {
        let inner = rel
            .strip_prefix("runs/")
            .ok_or_else(|| Error::Invalid(format!("`{rel}` is not under runs/")))?;
        validate_pipeline_path(inner)?;
        self.files.insert(rel.to_owned(), bytes);
        Ok(())
    }

    /// Writes `roles.lock`, the hashes of the role instructions the session's prompts are
    /// built from (reserved for the coordinator).
    pub fn write_roles_lock(&mut self, text: String) {
        self.files
            .insert("roles.lock".to_owned(), text.into_bytes());
    }

    /// Writes `config.lock`, the blob ids of the configuration the session runs with
    /// (reserved for [`tlv4_core::trust`]).
    pub fn write_config_lock(&mut self, text: String) {
        self.files
            .insert(super::CONFIG_LOCK.to_owned(), text.into_bytes());
    }

    /// The file `rel` of the pipeline folder as this change leaves it so far.
    pub fn read_file(&self, sid: &SessionId, rel: &str) -> Result<Option<Vec<u8>>> {
        if let Some(b) = self.files.get(rel) {
            return Ok(Some(b.clone()));
        }
        let tree = match &self.restore {
            Some((tree, _)) => *tree,
            None => self.store.commit_tree(self.tip)?,
        };
        self.store
            .read_blob_at(tree, &format!("{}/{rel}", session_dir(sid)))
    }

    /// Moves `edit` on the remote in the same atomic push as the event. Only a change written
    /// through a remote ([`Store::transact_remote`]) may do so; a local write refuses it.
    pub fn also_push(&mut self, edit: RemoteEdit) {
        self.pushes.retain(|e| e.name != edit.name);
        self.pushes.push(edit);
    }

    /// Makes the event a merge commit: `commit` (a task branch tip) becomes the second parent
    /// and `tree` (the merge of the session tip and `commit`, whose `.tlv4/` is the session's)
    /// the tree the state files are written into.
    pub fn merge(&mut self, commit: ObjectId, tree: ObjectId) {
        self.merge = Some((Some(commit), tree));
    }

    /// Makes `tree` (the tip's tree with other code, whose `.tlv4/` is the session's) the
    /// tree the state files are written into: a change of code without a merge, such as a
    /// reverted task.
    pub fn replace_tree(&mut self, tree: ObjectId) {
        self.merge = Some((None, tree));
    }

    /// Makes the new tree the tree of `commit` (an earlier event of this session); the event
    /// counter keeps counting from the tip.
    pub fn restore(&mut self, sid: &SessionId, commit: ObjectId) -> Result<()> {
        let (earlier, bytes) = self.store.read_state_at(sid, commit)?;
        let events = self.state.session.events;
        self.state = earlier;
        self.state.session.events = events;
        self.restore = Some((self.store.commit_tree(commit)?, bytes));
        Ok(())
    }
}

/// One event of [`Store::transact_chain`]: a change as [`Store::transact`] takes it.
pub type ChainStep<'c> = Box<dyn FnMut(&mut Txn<'_>) -> Result<Option<Event>> + 'c>;

/// A written event.
#[derive(Debug, Clone)]
pub struct Written {
    /// The event commit, now the session tip.
    pub commit: ObjectId,
    /// The state it holds.
    pub state: State,
    /// The event.
    pub event: Event,
}

/// A prepared ref update: move the ref from `expected` to `new`, and hand back `value`.
pub(crate) struct Publish<T> {
    /// The value the ref must have (`None`: it must not exist).
    pub expected: Option<ObjectId>,
    /// The new commit.
    pub new: ObjectId,
    /// The reflog message.
    pub reflog: String,
    /// What the caller gets on success.
    pub value: T,
}

enum CasError {
    /// The ref moved (or exists, for a create).
    Moved,
    /// Someone holds the lock.
    Locked,
    Other(Error),
}

impl Store {
    /// Applies `change` to the tip of session `sid` as one event commit and moves the branch
    /// with compare-and-swap, re-applying the change on a lost race. A change that returns
    /// `None` has nothing to record: nothing is written.
    pub fn transact(
        &self,
        sid: &SessionId,
        mut change: impl FnMut(&mut Txn<'_>) -> Result<Option<Event>>,
    ) -> Result<Option<Written>> {
        let name = session_ref(sid);
        let written = self.publish(&name, &format!("session `{sid}`"), || {
            let tip = self.writable_tip(sid)?;
            let Some((publish, pushes)) = self.prepare_event(sid, tip, &mut change)? else {
                return Ok(None);
            };
            if !pushes.is_empty() {
                return Err(Error::Invalid(format!(
                    "a change of session `{sid}` moves refs of a remote; it is written only through that remote"
                )));
            }
            Ok(Some(publish))
        });
        let written = written?;
        if let Some(w) = &written
            && w.state.session.events % MAINTENANCE_EVERY == 0
        {
            tlv4_core::git::auto_maintenance(self.repo.git_dir());
        }
        Ok(written)
    }

    /// Writes `changes` as consecutive events of session `sid` on `expected` (its tip), each on
    /// the one before, then moves the branch once, from `expected` to the last: all of them
    /// or none. A change that returns `None` writes no event. A branch that moved meanwhile
    /// refuses the whole chain (exit 3), nothing written.
    pub fn transact_chain<'c>(
        &self,
        sid: &SessionId,
        expected: ObjectId,
        changes: &mut [ChainStep<'c>],
    ) -> Result<Vec<Written>> {
        let name = session_ref(sid);
        let (tip, written, pushes) = self.prepare_chain(sid, expected, changes)?;
        if !pushes.is_empty() {
            return Err(Error::Invalid(format!(
                "a change of session `{sid}` moves refs of a remote; it is written only through that remote"
            )));
        }
        let written: Vec<Written> = written.into_iter().flatten().collect();
        if tip == expected {
            return Ok(written);
        }
        match self.cas(&name, Some(expected), tip, "tlv4: events written together") {
            Ok(()) => Ok(written),
            Err(CasError::Other(e)) => Err(e),
            Err(CasError::Moved | CasError::Locked) => Err(Error::conflict(
                format!("session `{sid}` moved while its events were being written"),
                Some("re-run the command".to_owned()),
            )),
        }
    }

    /// Applies `changes` to session `sid` from `tip`, each to the state the one before left,
    /// and writes their event commits; no ref moves. Returns the last commit (`tip` when none
    /// wrote anything), what each change wrote (`None`: nothing), and the remote refs they
    /// move ([`Txn::also_push`]).
    pub(crate) fn prepare_chain(
        &self,
        sid: &SessionId,
        tip: ObjectId,
        changes: &mut [ChainStep<'_>],
    ) -> Result<(ObjectId, Vec<Option<Written>>, Vec<RemoteEdit>)> {
        let (mut head, mut written, mut edits) = (tip, Vec::new(), Vec::new());
        for change in changes.iter_mut() {
            let mut change = |txn: &mut Txn<'_>| change(txn);
            match self.prepare_event(sid, head, &mut change)? {
                Some((publish, pushes)) => {
                    head = publish.new;
                    written.push(Some(publish.value));
                    edits.extend(pushes);
                }
                None => written.push(None),
            }
        }
        Ok((head, written, edits))
    }

    /// Applies `change` to the state at `tip` (a commit of session `sid`) and writes the event
    /// commit's objects; the ref is not moved. Returns the update to publish and the remote
    /// refs the change also moves, or `None` when the change has nothing to record.
    pub(crate) fn prepare_event(
        &self,
        sid: &SessionId,
        tip: ObjectId,
        change: &mut impl FnMut(&mut Txn<'_>) -> Result<Option<Event>>,
    ) -> Result<Option<(Publish<Written>, Vec<RemoteEdit>)>> {
        let name = session_ref(sid);
        let (state, stored) = self.read_state_at(sid, tip)?;
        let mut txn = Txn {
            state,
            tip,
            files: BTreeMap::new(),
            restore: None,
            merge: None,
            pushes: Vec::new(),
            store: self,
        };
        let Some(event) = change(&mut txn)? else {
            return Ok(None);
        };
        // Moving a branch checked out somewhere would change files under the user's feet.
        self.ensure_not_checked_out(&name)?;
        let Txn {
            mut state,
            files,
            restore,
            merge,
            pushes,
            ..
        } = txn;
        let (base_tree, before) = match (restore, merge) {
            (Some((tree, bytes)), _) => (tree, bytes),
            (None, Some((_, tree))) => (tree, stored),
            (None, None) => (self.commit_tree(tip)?, stored),
        };
        let parents: Vec<ObjectId> = std::iter::once(tip)
            .chain(merge.and_then(|(c, _)| c))
            .collect();
        let commit = self.write_event(
            sid, &parents, base_tree, &before, &mut state, &files, &event,
        )?;
        Ok(Some((
            Publish {
                expected: Some(tip),
                new: commit,
                reflog: event.subject(),
                value: Written {
                    commit,
                    state,
                    event,
                },
            },
            pushes,
        )))
    }

    /// Runs `prepare` and moves ref `name` to the commit it wrote, retrying on lost races
    /// (with backoff) until it wins, `prepare` has nothing to do, or the attempts run out.
    /// A lock that stays taken longer than [`LOCK_PATIENCE`] is reported, not waited for.
    pub(crate) fn publish<T>(
        &self,
        name: &str,
        what: &str,
        mut prepare: impl FnMut() -> Result<Option<Publish<T>>>,
    ) -> Result<Option<T>> {
        let mut locked_since: Option<std::time::Instant> = None;
        for attempt in 0..MAX_ATTEMPTS {
            let Some(p) = prepare()? else { return Ok(None) };
            match self.cas(name, p.expected, p.new, &p.reflog) {
                Ok(()) => return Ok(Some(p.value)),
                Err(CasError::Moved) => locked_since = None,
                Err(CasError::Locked) => {
                    // A writer holds the lock for microseconds; one held this long was left
                    // by a process that died.
                    let since = *locked_since.get_or_insert_with(std::time::Instant::now);
                    if since.elapsed() > LOCK_PATIENCE {
                        return Err(self.locked_error(name));
                    }
                }
                Err(CasError::Other(e)) => return Err(e),
            }
            backoff(attempt);
        }
        Err(Error::conflict(
            format!("{what} was updated concurrently {MAX_ATTEMPTS} times in a row"),
            Some("re-run the command".to_owned()),
        ))
    }

    /// Creates the branch of a new session from `base` with the given events in order; the
    /// branch appears only once, pointing at the last of them.
    pub fn create_session(
        &self,
        base: ObjectId,
        steps: Vec<(State, BTreeMap<String, Vec<u8>>, Event)>,
    ) -> Result<Written> {
        let tree = self.commit_tree(base)?;
        self.create_session_on(base, tree, StoredBytes::default(), steps)
    }

    /// Like [`Store::create_session`], starting from `tree` (whose state files are `before`)
    /// instead of the tree of `base`.
    pub(crate) fn create_session_on(
        &self,
        base: ObjectId,
        tree: ObjectId,
        before: StoredBytes,
        steps: Vec<(State, BTreeMap<String, Vec<u8>>, Event)>,
    ) -> Result<Written> {
        let first = steps
            .first()
            .ok_or_else(|| Error::Invalid("a session needs at least one event".into()))?;
        let sid = first.0.session.id.clone();
        let mut parent = base;
        let mut tree = tree;
        let mut before = before;
        let mut last = None;
        let mut events = 0;
        for (mut state, files, event) in steps {
            // `config.lock` is reserved for the pinned configuration written at creation.
            for rel in files.keys().filter(|r| r.as_str() != super::CONFIG_LOCK) {
                validate_pipeline_path(rel)?;
            }
            state.session.events = events;
            let commit =
                self.write_event(&sid, &[parent], tree, &before, &mut state, &files, &event)?;
            events = state.session.events;
            parent = commit;
            tree = self.commit_tree(commit)?;
            before = self.read_state_in_tree(&sid, tree, commit)?.1;
            last = Some(Written {
                commit,
                state,
                event,
            });
        }
        let last = last.expect("at least one step");
        let name = session_ref(&sid);
        match self.cas(&name, None, last.commit, &last.event.subject()) {
            Ok(()) => Ok(last),
            Err(CasError::Moved) => Err(Error::conflict(
                format!("session `{sid}` already exists"),
                None,
            )),
            Err(CasError::Locked) => Err(self.locked_error(&name)),
            Err(CasError::Other(e)) => Err(e),
        }
    }

    /// Writes the objects of one event commit on top of `parent`, whose state files are
    /// `before` and whose tree is `tree`. Bumps the event counter and `updated_at`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn write_event(
        &self,
        sid: &SessionId,
        parents: &[ObjectId],
        tree: ObjectId,
        before: &StoredBytes,
        state: &mut State,
        files: &BTreeMap<String, Vec<u8>>,
        event: &Event,
    ) -> Result<ObjectId> {
        let git = |e: gix::Error| Error::git("cannot write the event", e);
        let dir = session_dir(sid);
        state.session.events += 1;
        state.session.updated_at = tlv4_core::clock::now_rfc3339();
        let mut editor = self.repo.edit_tree(tree).map_err(git)?;
        let mut put = |path: String, bytes: &[u8]| -> Result<()> {
            let id = self.repo.write_blob(bytes).map_err(git)?.detach();
            editor
                .upsert(path.as_str(), EntryKind::Blob, id)
                .map_err(git)?;
            Ok(())
        };
        let session = toml::to_string(&state.session).map_err(|e| Error::Git(e.to_string()))?;
        if session.as_bytes() != before.session.as_slice() {
            put(format!("{dir}/session.toml"), session.as_bytes())?;
        }
        let control = toml::to_string(&state.control).map_err(|e| Error::Git(e.to_string()))?;
        if control.as_bytes() != before.control.as_slice()
            && !(before.control.is_empty() && state.control == Default::default())
        {
            put(format!("{dir}/control.toml"), control.as_bytes())?;
        }
        for (id, task) in &state.tasks {
            let text = toml::to_string(task).map_err(|e| Error::Git(e.to_string()))?;
            if before.tasks.get(id).map(Vec::as_slice) != Some(text.as_bytes()) {
                put(format!("{dir}/tasks/{id}.toml"), text.as_bytes())?;
            }
        }
        for (rel, bytes) in files {
            put(format!("{dir}/{rel}"), bytes)?;
        }
        for id in before
            .tasks
            .keys()
            .filter(|id| !state.tasks.contains_key(*id))
        {
            editor
                .remove(format!("{dir}/tasks/{id}.toml").as_str())
                .map_err(git)?;
        }
        let new_tree = editor.write().map_err(git)?.detach();

        let sig = self.signature();
        let message = commit_message(sid, state.session.events, event);
        let commit = gix::objs::Commit {
            tree: new_tree,
            parents: parents.iter().copied().collect(),
            author: sig.clone(),
            committer: sig,
            encoding: None,
            message: message.into(),
            extra_headers: Vec::new(),
        };
        Ok(self.repo.write_object(&commit).map_err(git)?.detach())
    }

    /// Moves `name` from `expected` (or creates it when `None`) to `new`.
    fn cas(
        &self,
        name: &str,
        expected: Option<ObjectId>,
        new: ObjectId,
        reflog: &str,
    ) -> Result<(), CasError> {
        let full: gix::refs::FullName = name
            .try_into()
            .map_err(|_| CasError::Other(Error::Invalid(format!("bad ref name `{name}`"))))?;
        let previous = match expected {
            Some(old) => PreviousValue::MustExistAndMatch(Target::Object(old)),
            None => PreviousValue::MustNotExist,
        };
        let sig = self.signature();
        let mut buf = gix::date::parse::TimeBuf::default();
        let edit = RefEdit::update(full, new, previous, format!("tlv4: {reflog}"));
        match self
            .repo
            .edit_references_as([edit], Some(sig.to_ref(&mut buf)))
        {
            // gix lets a create "succeed" when the ref exists already with the new value (two
            // processes that wrote byte-identical commits, such as two starts of the same text
            // in the same second); create-only means it did not exist, which the transaction
            // reports by filling in the value it found under the lock.
            Ok(edits) if expected.is_none() && edits.iter().any(found_existing) => {
                Err(CasError::Moved)
            }
            Ok(_) => Ok(()),
            Err(e) if e.is_conflict() => Err(CasError::Moved),
            Err(e) if e.is_retryable() => Err(CasError::Locked),
            Err(e) => Err(CasError::Other(Error::git(
                &format!("cannot update `{name}`"),
                e,
            ))),
        }
    }

    /// Creates ref `name` at `id`; `false` when it exists already.
    pub fn create_ref(&self, name: &str, id: ObjectId, reflog: &str) -> Result<bool> {
        match self.cas(name, None, id, reflog) {
            Ok(()) => Ok(true),
            Err(CasError::Moved) => Ok(false),
            Err(CasError::Locked) => Err(self.locked_error(name)),
            Err(CasError::Other(e)) => Err(e),
        }
    }

    /// Moves ref `name` from `expected` to `new`; a ref that moved meanwhile is a conflict.
    pub fn update_ref(
        &self,
        name: &str,
        expected: ObjectId,
        new: ObjectId,
        reflog: &str,
    ) -> Result<()> {
        match self.cas(name, Some(expected), new, reflog) {
            Ok(()) => Ok(()),
            Err(CasError::Moved) => Err(Error::conflict(
                format!("`{name}` moved while it was being updated"),
                Some("re-run the command".to_owned()),
            )),
            Err(CasError::Locked) => Err(self.locked_error(name)),
            Err(CasError::Other(e)) => Err(e),
        }
    }

    /// Deletes ref `name`, which must point at `expected`.
    pub fn delete_ref(&self, name: &str, expected: ObjectId) -> Result<()> {
        let full: gix::refs::FullName = name
            .try_into()
            .map_err(|_| Error::Invalid(format!("bad ref name `{name}`")))?;
        let edit = RefEdit::delete(
            full,
            PreviousValue::MustExistAndMatch(Target::Object(expected)),
        );
        self.repo
            .edit_references([edit])
            .map_err(|e| Error::git(&format!("cannot delete `{name}`"), e))?;
        Ok(())
    }

    pub(crate) fn locked_error(&self, name: &str) -> Error {
        let lock = self.repo.common_dir().join(format!("{name}.lock"));
        let age_secs = std::fs::metadata(&lock)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .map_or(0, |d| d.as_secs());
        Error::Locked {
            reference: name.to_owned(),
            lock,
            age_secs,
        }
    }
}

/// Whether a committed edit found its ref existing (gix fills in the value it saw).
fn found_existing(edit: &RefEdit) -> bool {
    matches!(
        &edit.change,
        gix::refs::transaction::Change::Update {
            expected: PreviousValue::MustExistAndMatch(_),
            ..
        }
    )
}

/// `subject`, a blank line, the summary, a blank line, the trailers.
fn commit_message(sid: &SessionId, seq: u64, event: &Event) -> String {
    let one_line = |s: &str| s.replace(['\n', '\r'], " ");
    let mut msg = one_line(&event.subject());
    msg.push_str("\n\n");
    if !event.summary.trim().is_empty() {
        msg.push_str(event.summary.trim_end());
        msg.push_str("\n\n");
    }
    let mut trailer = |k: &str, v: &str| {
        msg.push_str(&format!("Tlv4-{k}: {}\n", one_line(v)));
    };
    trailer("Session", sid.as_str());
    trailer("Event", event.kind.as_str());
    if let Some(t) = &event.task {
        trailer("Task", t.as_str());
    }
    if let Some(r) = &event.role {
        trailer("Role", r);
    }
    if let Some(s) = &event.status {
        trailer("Status", s);
    }
    if let Some(a) = event.attempt {
        trailer("Attempt", &a.to_string());
    }
    trailer("Seq", &seq.to_string());
    for (k, v) in &event.extra {
        trailer(k, v);
    }
    msg
}

/// Sleeps a little, more after each lost race, with jitter so racers spread out.
fn backoff(attempt: u32) {
    std::thread::sleep(tlv4_core::clock::jitter(Duration::from_micros(
        999 << attempt.min(5),
    )));
}

impl Store {
    /// Starts session `new` from event `at` of session `from`: its folder is moved to the new
    /// id, tasks left running are returned to pending, and the new branch is created. A
    /// `fresh_ledger` fork does not carry what `from` spent (`Tlv4-Ledger: fresh`: the
    /// ledger's walk ends at it).
    pub fn fork_session(
        &self,
        from: &SessionId,
        at: ObjectId,
        new: &SessionId,
        summary: String,
        fresh_ledger: bool,
    ) -> Result<Written> {
        let git = |e: gix::Error| Error::git("cannot fork the session", e);
        let (mut state, before) = self.read_state_at(from, at)?;
        let tree = self.commit_tree(at)?;
        let folder = self
            .repo
            .find_tree(tree)
            .map_err(git)?
            .lookup_entry_by_path(session_dir(from))
            .map_err(git)?
            .ok_or_else(|| Error::Invalid(format!("{at} holds no state of session `{from}`")))?
            .object_id();
        let mut editor = self.repo.edit_tree(tree).map_err(git)?;
        editor.remove(session_dir(from).as_str()).map_err(git)?;
        editor
            .upsert(session_dir(new).as_str(), EntryKind::Tree, folder)
            .map_err(git)?;
        let moved = editor.write().map_err(git)?.detach();

        let now = tlv4_core::clock::now_rfc3339();
        state.session.id = new.clone();
        state.session.status = tlv4_core::model::SessionStatus::Active;
        state.session.created_at = now;
        state.session.forked_from = Some(tlv4_core::model::ForkOrigin {
            session: from.clone(),
            event: at.to_string(),
        });
        for task in state.tasks.values_mut() {
            if task.status == tlv4_core::model::TaskStatus::InProgress {
                task.status = tlv4_core::model::TaskStatus::Pending;
                task.owner = None;
            }
        }
        for task in state.tasks.values_mut() {
            task.description = task
                .description
                .replace(&format!("Session: {from}"), &format!("Session: {new}"));
        }
        let mut event = Event::session(tlv4_core::model::EventKind::SessionForked, summary)
            .with("Forked-From", format!("{from} {at}"));
        if fresh_ledger {
            event = event.with("Ledger", "fresh");
        }
        self.create_session_on(at, moved, before, vec![(state, BTreeMap::new(), event)])
    }
}
