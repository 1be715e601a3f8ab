//! Compacting an archived session: its history written again without the run transcripts.
//!
//! What an agent was told and said (`prompt.md`, `answer.txt`, `transcript.txt` under
//! `.tlv4/sessions/<SID>/runs/`) is most of what a session adds to a repository, and nothing
//! reads it once the session is archived and old. Compaction writes again every commit that
//! only the session holds — the history of its archive tip and of its kept runs
//! (`refs/tlv4/runs/<SID>/…`), less what any other ref reaches — parents first, with the same
//! message, author, committer and parents (mapped to their new commits) and a tree without
//! those files. The kept runs and the notes on those commits follow them; one
//! `session_compacted` event on top records what went and the tip it replaced, and the
//! archive ref moves there. Every event, its trailers, state and `result.json` /
//! `usage.json` stay, so `log`, `status`, `cost`, `graph`, `report` and `fork --at` read the
//! compacted session as before (commits have new ids). The replaced commits become
//! unreachable, and git's own `gc` frees them once no reflog holds them: the moved refs'
//! reflog entries are expired for that.

use std::collections::HashMap;

use gix::ObjectId;
use gix::bstr::ByteSlice;

use super::refs::RUNS_REF_PREFIX;
use super::{REVIEW_NOTES_REF, Store, archive_ref, notes_ref, session_dir};
use tlv4_core::error::{Error, Result};
use tlv4_core::model::{Event, EventKind, SessionId};

/// The run records compaction removes: what an agent was told and said.
pub const COMPACTED_FILES: [&str; 3] = ["prompt.md", "answer.txt", "transcript.txt"];

/// What compacting one archived session did, or why it did not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Compaction {
    /// The history was written again; the archive ref moved from `old` to `new`.
    Done {
        /// The replaced archive tip.
        old: ObjectId,
        /// The `session_compacted` event now at the archive ref.
        new: ObjectId,
        /// Commits written again.
        commits: usize,
        /// Distinct run records removed.
        files: usize,
        /// Their size, uncompressed.
        bytes: u64,
    },
    /// The session was archived less than the given time ago.
    TooYoung,
    /// The archive is compacted already and nothing was recorded since.
    AlreadyCompacted,
    /// The history holds no run record to remove.
    NothingToRemove,
    /// Another ref holds the archive tip, so rewriting would free nothing: its name.
    HeldBy(String),
}

/// Kept runs (ref and commit) and the commits only a session holds.
type HeldAlone = (Vec<(String, ObjectId)>, Vec<ObjectId>);

impl Store {
    /// Compacts archived session `sid` if its archive tip is older than `min_age` seconds (see
    /// the module comment). With `dry_run`, only says what would be done: nothing is written.
    pub fn compact_archive(
        &self,
        sid: &SessionId,
        min_age: u64,
        dry_run: bool,
    ) -> Result<Compaction> {
        let git = |e: gix::Error| Error::git("cannot compact the archived session", e);
        let name = archive_ref(sid);
        let Some(tip) = self.try_ref(&name)? else {
            return Err(Error::UnknownSession {
                name: sid.to_string(),
                known: self.archived().unwrap_or_default(),
            });
        };
        let tip_commit = self.repo.find_commit(tip).map_err(git)?;
        let when = tip_commit.time().map_err(git)?.seconds;
        let now = tlv4_core::clock::now_seconds();
        if now.saturating_sub(when) < min_age as i64 {
            return Ok(Compaction::TooYoung);
        }
        if let Some(event) = self.event_of(sid, tip)?
            && event.event == EventKind::SessionCompacted.as_str()
        {
            return Ok(Compaction::AlreadyCompacted);
        }
        let kept_prefix = format!("{RUNS_REF_PREFIX}{sid}/");
        let (kept, commits) = self.held_alone(tip, &name, &kept_prefix)?;
        if !commits.contains(&tip) {
            let holder = self.other_ref_holding(tip, &name, &kept_prefix)?;
            return Ok(Compaction::HeldBy(
                holder.unwrap_or_else(|| "another ref".to_owned()),
            ));
        }
        let runs = format!("{}/runs", session_dir(sid));
        let (mapped, files, bytes) = self.write_stripped(&commits, &runs, dry_run)?;
        if files == 0 {
            return Ok(Compaction::NothingToRemove);
        }
        let commits = commits.len();
        if dry_run {
            return Ok(Compaction::Done {
                old: tip,
                new: tip,
                commits,
                files,
                bytes,
            });
        }
        // The kept runs and the notes first, the archive ref last: until it moves, a second
        // `gc` does all of it again, and writes the same commits (nothing in them changed).
        self.follow_rewrite(sid, &kept, &mapped, tip.kind().len_in_hex())?;
        let new_tip = mapped[&tip];
        let (mut state, before) = self.read_state_at(sid, new_tip)?;
        let event = Event::session(
            EventKind::SessionCompacted,
            format!(
                "gc compacted the archived session: {commits} commits written again without \
                 {files} run records ({} of prompts, answers and transcripts); the replaced \
                 tip is {tip}",
                human_bytes(bytes)
            ),
        )
        .with("Compacted", tip.to_string());
        let tree = self.commit_tree(new_tip)?;
        let new = self.write_event(
            sid,
            &[new_tip],
            tree,
            &before,
            &mut state,
            &Default::default(),
            &event,
        )?;
        self.update_ref(&name, tip, new, "compact")?;
        tlv4_core::git::expire_reflog(self.repo.git_dir(), &name);
        Ok(Compaction::Done {
            old: tip,
            new,
            commits,
            files,
            bytes,
        })
    }

    /// What an archived session alone holds besides its archive ref `name` at `tip`: its
    /// kept runs (refs under `kept_prefix`), and the commits of their history and the tip's
    /// that no other ref reaches, oldest first, parents before children.
    fn held_alone(&self, tip: ObjectId, name: &str, kept_prefix: &str) -> Result<HeldAlone> {
        // What the session alone holds: the history of its archive tip and of its kept runs,
        // less whatever any other ref reaches. Oldest first, parents before children.
        let mut kept: Vec<(String, ObjectId)> = Vec::new();
        let mut hidden: Vec<ObjectId> = Vec::new();
        for (r, id) in self.commit_refs()? {
            if r == name {
                continue;
            }
            if r.starts_with(kept_prefix) {
                kept.push((r, id));
            } else {
                hidden.push(id);
            }
        }
        let mut input = String::new();
        for id in std::iter::once(tip).chain(kept.iter().map(|(_, id)| *id)) {
            input.push_str(&format!("{id}\n"));
        }
        for id in &hidden {
            input.push_str(&format!("^{id}\n"));
        }
        let listed = tlv4_core::git::run_with_input(
            self.repo.git_dir(),
            &["rev-list", "--reverse", "--topo-order", "--stdin"],
            &input,
        )?;
        let commits: Vec<ObjectId> = listed
            .lines()
            .map(|hex| ObjectId::from_hex(hex.trim().as_bytes()))
            .collect::<std::result::Result<_, _>>()
            .map_err(|e| Error::Git(format!("bad commit id from `git rev-list`: {e}")))?;
        Ok((kept, commits))
    }

    /// Writes `commits` again (oldest first) without the run records under `runs` and without
    /// signatures, each on its parents as written again; with `dry_run`, writes nothing. The
    /// new id of each, and how many files and bytes were left out.
    fn write_stripped(
        &self,
        commits: &[ObjectId],
        runs: &str,
        dry_run: bool,
    ) -> Result<(HashMap<ObjectId, ObjectId>, usize, u64)> {
        let git = |e: gix::Error| Error::git("cannot compact the archived session", e);
        let mut stripper = Stripper::new(self);
        let mut mapped: HashMap<ObjectId, ObjectId> = HashMap::new();
        for id in commits {
            let mut commit = self
                .repo
                .find_commit(*id)
                .map_err(git)?
                .decode()
                .map_err(|e| Error::Git(format!("cannot read commit {id}: {e}")))?
                .into_owned()
                .map_err(|e| Error::Git(format!("cannot read commit {id}: {e}")))?;
            commit.tree = stripper.strip_at(commit.tree, runs)?;
            for parent in &mut commit.parents {
                if let Some(new) = mapped.get(parent) {
                    *parent = *new;
                }
            }
            // A signature would no longer match what it signed.
            commit
                .extra_headers
                .retain(|(k, _)| k.as_bstr() != "gpgsig" && k.as_bstr() != "gpgsig-sha256");
            let new = if dry_run {
                *id
            } else {
                self.repo.write_object(&commit).map_err(git)?.detach()
            };
            mapped.insert(*id, new);
        }
        Ok((mapped, stripper.files, stripper.bytes))
    }

    /// The kept runs of `sid` and the review and message notes follow the commits `mapped`
    /// wrote again (`hex_len`: the length of an id in hexadecimal).
    fn follow_rewrite(
        &self,
        sid: &SessionId,
        kept: &[(String, ObjectId)],
        mapped: &HashMap<ObjectId, ObjectId>,
        hex_len: usize,
    ) -> Result<()> {
        for (r, id) in kept {
            if let Some(new) = mapped.get(id)
                && new != id
            {
                self.update_ref(r, *id, *new, "compact")?;
                tlv4_core::git::expire_reflog(self.repo.git_dir(), r);
            }
        }
        self.move_notes(
            REVIEW_NOTES_REF,
            mapped,
            |text| replace_ids(text, hex_len, mapped),
            &format!("tlv4: compact {sid}: reviews follow the commits written again"),
        )?;
        self.move_notes(
            &notes_ref(sid),
            mapped,
            |text| text,
            &format!("tlv4: compact {sid}: messages follow the commits written again"),
        )?;
        Ok(())
    }

    /// Every ref that names a commit (tags peeled), notes refs left out: their commits hold
    /// notes, not history.
    fn commit_refs(&self) -> Result<Vec<(String, ObjectId)>> {
        let git = |e: gix::Error| Error::git("cannot list refs", e);
        let platform = self.repo.references().map_err(git)?;
        let mut out = Vec::new();
        for r in platform.all().map_err(git)? {
            let Ok(mut r) = r else { continue };
            let name = r.name().as_bstr().to_str_lossy().into_owned();
            if name.starts_with(super::refs::NOTES_PREFIX) {
                continue;
            }
            let Ok(id) = r.peel_to_id() else { continue };
            let id = id.detach();
            // Only commits can hold a commit; blobs and trees under refs are skipped.
            if self.repo.find_commit(id).is_ok() {
                out.push((name, id));
            }
        }
        Ok(out)
    }

    /// The first ref other than `except` and those under `skip` whose commit has `tip` in its
    /// history.
    fn other_ref_holding(&self, tip: ObjectId, except: &str, skip: &str) -> Result<Option<String>> {
        for (name, id) in self.commit_refs()? {
            if name != except && !name.starts_with(skip) && self.is_ancestor(tip, id)? {
                return Ok(Some(name));
            }
        }
        Ok(None)
    }
}

/// `text` with every full commit id that `map` rewrites replaced by the new one.
fn replace_ids(text: Vec<u8>, hex_len: usize, map: &HashMap<ObjectId, ObjectId>) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        let run = text[i..]
            .iter()
            .take_while(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
            .count();
        if run == 0 {
            out.push(text[i]);
            i += 1;
            continue;
        }
        let word = &text[i..i + run];
        let new = (run == hex_len)
            .then(|| ObjectId::from_hex(word).ok())
            .flatten()
            .and_then(|id| map.get(&id));
        match new {
            Some(new) => out.extend_from_slice(new.to_hex().to_string().as_bytes()),
            None => out.extend_from_slice(word),
        }
        i += run;
    }
    out
}

/// Writes trees without the run records, each tree once.
struct Stripper<'s> {
    store: &'s Store,
    done: HashMap<ObjectId, Option<ObjectId>>,
    seen: std::collections::HashSet<ObjectId>,
    files: usize,
    bytes: u64,
}

impl<'s> Stripper<'s> {
    fn new(store: &'s Store) -> Self {
        Stripper {
            store,
            done: HashMap::new(),
            seen: Default::default(),
            files: 0,
            bytes: 0,
        }
    }

    /// `root` with the folder at `path` stripped; `root` itself when it has no such folder.
    fn strip_at(&mut self, root: ObjectId, path: &str) -> Result<ObjectId> {
        let git = |e: gix::Error| Error::git("cannot compact the archived session", e);
        let repo = self.store.repo();
        let tree = repo.find_tree(root).map_err(git)?;
        let Some(entry) = tree.lookup_entry_by_path(path).map_err(git)? else {
            return Ok(root);
        };
        if !entry.mode().is_tree() {
            return Ok(root);
        }
        let old = entry.object_id();
        let new = self.strip(old)?;
        if new == Some(old) {
            return Ok(root);
        }
        let mut editor = repo.edit_tree(root).map_err(git)?;
        match new {
            Some(new) => editor.upsert(path, gix::objs::tree::EntryKind::Tree, new),
            None => editor.remove(path),
        }
        .map_err(git)?;
        Ok(editor.write().map_err(git)?.detach())
    }

    /// Tree `id` without the run records anywhere below it; `None` when nothing else was in
    /// it (git writes no empty folders).
    fn strip(&mut self, id: ObjectId) -> Result<Option<ObjectId>> {
        if let Some(new) = self.done.get(&id) {
            return Ok(*new);
        }
        let git = |e: gix::Error| Error::git("cannot compact the archived session", e);
        let repo = self.store.repo();
        let tree: gix::objs::Tree = repo
            .find_tree(id)
            .map_err(git)?
            .decode()
            .map_err(|e| Error::Git(format!("cannot read tree {id}: {e}")))?
            .into();
        let mut entries = Vec::with_capacity(tree.entries.len());
        let mut changed = false;
        for mut e in tree.entries {
            if e.mode.is_tree() {
                match self.strip(e.oid)? {
                    Some(new) => {
                        changed |= new != e.oid;
                        e.oid = new;
                    }
                    None => {
                        changed = true;
                        continue;
                    }
                }
            } else if e.mode.is_blob()
                && COMPACTED_FILES.contains(&e.filename.to_str_lossy().as_ref())
            {
                if self.seen.insert(e.oid) {
                    self.files += 1;
                    self.bytes += repo.find_header(e.oid).map_err(git)?.size();
                }
                changed = true;
                continue;
            }
            entries.push(e);
        }
        let new = if !changed {
            Some(id)
        } else if entries.is_empty() {
            None
        } else {
            let tree = gix::objs::Tree { entries };
            Some(repo.write_object(&tree).map_err(git)?.detach())
        };
        self.done.insert(id, new);
        Ok(new)
    }
}

/// `1.2 MiB`, `340 KiB`, `12 B`.
pub fn human_bytes(n: u64) -> String {
    const K: f64 = 1024.0;
    let f = n as f64;
    if f >= K * K {
        format!("{:.1} MiB", f / K / K)
    } else if f >= K {
        format!("{:.0} KiB", f / K)
    } else {
        format!("{n} B")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replace_ids_rewrites_whole_ids_only() {
        let a = ObjectId::from_hex(b"1111111111111111111111111111111111111111").unwrap();
        let b = ObjectId::from_hex(b"2222222222222222222222222222222222222222").unwrap();
        let map = HashMap::from([(a, b)]);
        let text = format!(r#"{{"new":"{a}","short":"1111111","long":"{a}0","cafe":1}}"#);
        let out = String::from_utf8(replace_ids(text.into_bytes(), 40, &map)).unwrap();
        assert_eq!(
            out,
            format!(r#"{{"new":"{b}","short":"1111111","long":"{a}0","cafe":1}}"#)
        );
    }
}
