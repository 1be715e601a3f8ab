//! The team message bus: git notes under `refs/notes/tlv4/<SID>`, JSON Lines.
//!
//! A message is appended to the note of the session tip commit at the time it is sent. Each
//! line is one JSON object, so two notes refs merge by union (`git notes merge -s
//! cat_sort_uniq`). Sends are compare-and-swap updates of the notes ref, like events.

use gix::ObjectId;
use gix::bstr::ByteSlice;
use gix::note::plumbing::State as NotesTree;

use super::write::Publish;
use super::{Store, notes_ref};
use tlv4_core::error::{Error, Result};
use tlv4_core::model::{Message, SessionId};

/// Messages read from the bus.
#[derive(Debug, Clone, Default)]
pub struct MessageList {
    /// The messages, oldest first.
    pub messages: Vec<Message>,
    /// Lines that were not valid messages, as `(annotated commit, line)`.
    pub unreadable: Vec<(String, String)>,
}

impl Store {
    /// Appends `message` to the session's bus, attached to the current session tip.
    pub fn send_message(&self, sid: &SessionId, message: &Message) -> Result<ObjectId> {
        let mut line = serde_json::to_string(message).map_err(|e| Error::Git(e.to_string()))?;
        line.push('\n');
        self.edit_note(
            &notes_ref(sid),
            &format!("the message bus of `{sid}`"),
            // An archived session is read-only, its bus too.
            || self.writable_tip(sid),
            |old| {
                let mut text = old.unwrap_or_default();
                if !text.is_empty() && !text.ends_with(b"\n") {
                    text.push(b'\n');
                }
                text.extend_from_slice(line.as_bytes());
                text
            },
            &format!("tlv4: message {} from {}", message.kind, message.from),
        )
    }

    /// Sets the note of `commit` under `notes_ref` (a full ref name such as
    /// `refs/notes/tlv4-review`) to `bytes`, replacing any earlier note, with compare-and-swap.
    pub fn set_note(
        &self,
        notes_ref: &str,
        commit: ObjectId,
        bytes: &[u8],
        message: &str,
    ) -> Result<()> {
        self.edit_note(
            notes_ref,
            &format!("`{notes_ref}`"),
            || Ok(commit),
            |_| bytes.to_vec(),
            message,
        )?;
        Ok(())
    }

    /// Replaces the note of the object `target` names under `notes_ref` with what `content`
    /// makes of the current note, as one notes commit published with compare-and-swap (both
    /// are evaluated again after a lost race). Returns the annotated object.
    fn edit_note(
        &self,
        notes_ref: &str,
        what: &str,
        target: impl Fn() -> Result<ObjectId>,
        content: impl Fn(Option<Vec<u8>>) -> Vec<u8>,
        message: &str,
    ) -> Result<ObjectId> {
        let git = |e: gix::Error| Error::git("cannot write the note", e);
        let written = self.publish(notes_ref, what, || {
            let target = target()?;
            let old = self.try_ref(notes_ref)?;
            let root = match old {
                Some(c) => self.commit_tree(c)?,
                None => ObjectId::empty_tree(self.repo.object_hash()),
            };
            let mut tree = NotesTree::new(root, &self.repo.objects).map_err(&git)?;
            let current = match tree.get(&target, &self.repo.objects).map_err(&git)? {
                Some(blob) => Some(self.repo.find_blob(blob).map_err(git)?.data.clone()),
                None => None,
            };
            let blob = self
                .repo
                .write_blob(content(current))
                .map_err(git)?
                .detach();
            let edit = tree
                .replace(target, blob, &self.repo.objects)
                .map_err(&git)?;
            let sig = self.signature();
            let commit = gix::objs::Commit {
                tree: edit.tree,
                parents: old.into_iter().collect(),
                author: sig.clone(),
                committer: sig,
                encoding: None,
                message: format!("{message}\n").into(),
                extra_headers: Vec::new(),
            };
            let commit = self.repo.write_object(&commit).map_err(git)?.detach();
            Ok(Some(Publish {
                expected: old,
                new: commit,
                reflog: message.to_owned(),
                value: target,
            }))
        })?;
        Ok(written.expect("prepare always publishes"))
    }

    /// Moves each note under `notes_ref` that annotates a key of `map` to the commit it maps
    /// to, its text passed through `text`, as one notes commit published with
    /// compare-and-swap. Returns how many notes moved (none: nothing is written).
    pub(crate) fn move_notes(
        &self,
        notes_ref: &str,
        map: &std::collections::HashMap<ObjectId, ObjectId>,
        text: impl Fn(Vec<u8>) -> Vec<u8>,
        message: &str,
    ) -> Result<usize> {
        let git = |e: gix::Error| Error::git("cannot move the notes", e);
        let moved = self.publish(notes_ref, &format!("`{notes_ref}`"), || {
            let Some(old) = self.try_ref(notes_ref)? else {
                return Ok(None);
            };
            let mut tree =
                NotesTree::new(self.commit_tree(old)?, &self.repo.objects).map_err(&git)?;
            let mut moved = 0;
            for (from, to) in map {
                if from == to {
                    continue;
                }
                let Some(blob) = tree.get(from, &self.repo.objects).map_err(&git)? else {
                    continue;
                };
                let data = self.repo.find_blob(blob).map_err(git)?.data.clone();
                let blob = self.repo.write_blob(text(data)).map_err(git)?.detach();
                tree.edit(*from, None, &self.repo.objects).map_err(&git)?;
                tree.edit(*to, Some(blob), &self.repo.objects)
                    .map_err(&git)?;
                moved += 1;
            }
            if moved == 0 {
                return Ok(None);
            }
            let sig = self.signature();
            let commit = gix::objs::Commit {
                tree: tree.write(&self.repo.objects).map_err(&git)?,
                parents: std::iter::once(old).collect(),
                author: sig.clone(),
                committer: sig,
                encoding: None,
                message: format!("{message}\n").into(),
                extra_headers: Vec::new(),
            };
            let commit = self.repo.write_object(&commit).map_err(git)?.detach();
            Ok(Some(Publish {
                expected: Some(old),
                new: commit,
                reflog: message.to_owned(),
                value: moved,
            }))
        })?;
        Ok(moved.unwrap_or(0))
    }

    /// The note of `commit` under `notes_ref`, if any.
    pub fn note(&self, notes_ref: &str, commit: ObjectId) -> Result<Option<Vec<u8>>> {
        let git = |e: gix::Error| Error::git("cannot read notes", e);
        let Some(c) = self.try_ref(notes_ref)? else {
            return Ok(None);
        };
        let mut tree = NotesTree::new(self.commit_tree(c)?, &self.repo.objects).map_err(&git)?;
        match tree.get(&commit, &self.repo.objects).map_err(git)? {
            Some(blob) => Ok(Some(
                self.repo
                    .find_blob(blob)
                    .map_err(|e| Error::git("cannot read notes", e))?
                    .data
                    .clone(),
            )),
            None => Ok(None),
        }
    }

    /// Every message on the session's bus, oldest first.
    pub fn messages(&self, sid: &SessionId) -> Result<MessageList> {
        let mut out = MessageList::default();
        let Some(commit) = self.try_ref(&notes_ref(sid))? else {
            return Ok(out);
        };
        let root = self.commit_tree(commit)?;
        let mut stack = vec![(root, String::new())];
        while let Some((tree, prefix)) = stack.pop() {
            let tree = self
                .repo
                .find_tree(tree)
                .map_err(|e| Error::git("cannot read notes", e))?;
            let decoded = tree
                .decode()
                .map_err(|e| Error::git("cannot read notes", e))?;
            for entry in &decoded.entries {
                let name = format!("{prefix}{}", entry.filename.to_str_lossy());
                if entry.mode.is_tree() {
                    stack.push((entry.oid.to_owned(), name));
                } else if entry.mode.is_blob()
                    && name.len() == 40
                    && name.bytes().all(|b| b.is_ascii_hexdigit())
                {
                    let blob = self
                        .repo
                        .find_blob(entry.oid)
                        .map_err(|e| Error::git("cannot read notes", e))?;
                    for line in blob.data.lines() {
                        let line = line.to_str_lossy();
                        if line.trim().is_empty() {
                            continue;
                        }
                        match serde_json::from_str::<Message>(&line) {
                            Ok(m) => out.messages.push(m),
                            Err(_) => out.unreadable.push((name.clone(), line.into_owned())),
                        }
                    }
                }
            }
        }
        out.messages.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(out)
    }
}
