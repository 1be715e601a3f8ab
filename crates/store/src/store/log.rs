//! The event history: first-parent commits of a session branch, read from their trailers.
//!
//! The walk goes from the tip by first parents and ends at the session's first event
//! (`session_started`, or `session_forked` for a fork) or at an event of another session.
//! Commits on the way that are not events of the session — a user's own `git commit` on the
//! branch — are not events: the event walk skips them, `history` shows them as such.

use gix::ObjectId;
use gix::bstr::ByteSlice;

use super::Store;
use tlv4_core::error::{Error, Result};
use tlv4_core::model::SessionId;

/// One event as recorded in a commit.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LoggedEvent {
    /// The event commit.
    pub commit: String,
    /// Committer time, RFC 3339.
    pub time: String,
    /// Who wrote it (`Name <email>`).
    pub author: String,
    /// `Tlv4-Event`.
    pub event: String,
    /// `Tlv4-Seq`: the event's number in the session, from 1.
    pub seq: Option<u64>,
    /// `Tlv4-Task`.
    pub task: Option<String>,
    /// `Tlv4-Role`.
    pub role: Option<String>,
    /// `Tlv4-Status`.
    pub status: Option<String>,
    /// `Tlv4-Attempt`.
    pub attempt: Option<u32>,
    /// The commit subject.
    pub subject: String,
    /// The commit body without trailers.
    pub summary: String,
    /// Every `Tlv4-*` trailer, in order.
    pub trailers: Vec<(String, String)>,
}

impl LoggedEvent {
    /// The value of trailer `Tlv4-<key>`.
    pub fn trailer(&self, key: &str) -> Option<&str> {
        let key = format!("Tlv4-{key}");
        self.trailers
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// A commit on a session branch that is not one of its events (a user's own `git commit`).
#[derive(Debug, Clone, serde::Serialize)]
pub struct OtherCommit {
    /// The commit.
    pub commit: String,
    /// Committer time, RFC 3339.
    pub time: String,
    /// Who wrote it (`Name <email>`).
    pub author: String,
    /// Always `null`: this is not an event (the field keeps `log --json` entries alike).
    pub event: Option<String>,
    /// The commit subject.
    pub subject: String,
    /// The commit body.
    pub summary: String,
}

/// One commit of a session's first-parent history.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(untagged)]
pub enum HistoryEntry {
    /// An event of the session.
    Event(LoggedEvent),
    /// A commit that is not an event.
    Other(OtherCommit),
}

impl HistoryEntry {
    /// The commit, in hex.
    pub fn commit(&self) -> &str {
        match self {
            HistoryEntry::Event(e) => &e.commit,
            HistoryEntry::Other(o) => &o.commit,
        }
    }
}

/// The event kinds that begin a session's history.
const FIRST_EVENTS: [&str; 2] = ["session_started", "session_forked"];

impl Store {
    /// The events of session `sid`, newest first, up to `limit` of them.
    pub fn log(&self, sid: &SessionId, limit: Option<usize>) -> Result<Vec<LoggedEvent>> {
        self.log_from(sid, self.tip(sid)?, limit)
    }

    /// The events of session `sid` reachable from `tip` by first parents, newest first; commits
    /// that are not events of the session are skipped.
    pub fn log_from(
        &self,
        sid: &SessionId,
        tip: ObjectId,
        limit: Option<usize>,
    ) -> Result<Vec<LoggedEvent>> {
        let mut out = Vec::new();
        if limit == Some(0) {
            return Ok(out);
        }
        self.walk(sid, tip, |entry| {
            if let HistoryEntry::Event(e) = entry {
                out.push(e);
            }
            limit.is_none_or(|l| out.len() < l)
        })?;
        Ok(out)
    }

    /// Every commit of session `sid`'s history from its tip, newest first, events and the
    /// commits that are not events alike, up to `limit` of them.
    pub fn history(&self, sid: &SessionId, limit: Option<usize>) -> Result<Vec<HistoryEntry>> {
        let mut out = Vec::new();
        if limit == Some(0) {
            return Ok(out);
        }
        self.walk(sid, self.tip(sid)?, |entry| {
            out.push(entry);
            limit.is_none_or(|l| out.len() < l)
        })?;
        Ok(out)
    }

    /// Walks the history of `sid` from `tip` (see the module comment), handing each commit to
    /// `each` until it returns `false`.
    pub(super) fn walk(
        &self,
        sid: &SessionId,
        tip: ObjectId,
        mut each: impl FnMut(HistoryEntry) -> bool,
    ) -> Result<()> {
        let git = |e: gix::Error| Error::git("cannot read the session history", e);
        let mut next = Some(tip);
        while let Some(id) = next {
            let commit = self.repo.find_commit(id).map_err(git)?;
            next = commit.parent_ids().next().map(|p| p.detach());
            let entry = match parse_event(sid, id, &commit)? {
                Parsed::Event(event) => {
                    let first = FIRST_EVENTS.contains(&event.event.as_str());
                    if !each(HistoryEntry::Event(event)) || first {
                        break;
                    }
                    continue;
                }
                // The origin of a fork, or a session this one was made from: its history ends.
                Parsed::OtherSession => break,
                Parsed::NotAnEvent(other) => HistoryEntry::Other(other),
            };
            if !each(entry) {
                break;
            }
        }
        Ok(())
    }

    /// Whether `commit` is an event of session `sid` (its `Tlv4-Session` trailer names it).
    pub fn event_of(&self, sid: &SessionId, commit: ObjectId) -> Result<Option<LoggedEvent>> {
        let c = self
            .repo
            .find_commit(commit)
            .map_err(|e| Error::git("cannot read commit", e))?;
        Ok(match parse_event(sid, commit, &c)? {
            Parsed::Event(e) => Some(e),
            _ => None,
        })
    }
}

/// What a commit is to a session's history.
enum Parsed {
    /// One of its events.
    Event(LoggedEvent),
    /// An event of another session.
    OtherSession,
    /// No event at all.
    NotAnEvent(OtherCommit),
}

fn parse_event(sid: &SessionId, id: ObjectId, commit: &gix::Commit<'_>) -> Result<Parsed> {
    let git = |e: gix::Error| Error::git("cannot read the session history", e);
    let message = commit.message().map_err(&git)?;
    let subject = message.summary().to_str_lossy().into_owned();
    let mut trailers = Vec::new();
    let mut summary = String::new();
    if let Some(body) = message.body() {
        summary = body.without_trailer().to_str_lossy().trim().to_owned();
        for t in body.trailers() {
            let token = t.token.to_str_lossy();
            if token.starts_with("Tlv4-") {
                trailers.push((token.into_owned(), t.value.to_str_lossy().into_owned()));
            }
        }
    }
    let get = |k: &str| {
        trailers
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
    };
    let committer = commit.committer().map_err(&git)?;
    let time = committer
        .time()
        .map(|t| tlv4_core::clock::rfc3339(t.seconds))
        .unwrap_or_default();
    let sig = commit.author().map_err(git)?;
    let author = format!("{} <{}>", sig.name, sig.email);
    match get("Tlv4-Session") {
        Some(s) if s == sid.as_str() => {}
        Some(_) => return Ok(Parsed::OtherSession),
        None => {
            let summary = message
                .body()
                .map(|b| b.to_str_lossy().trim().to_owned())
                .unwrap_or_default();
            return Ok(Parsed::NotAnEvent(OtherCommit {
                commit: id.to_string(),
                time,
                author,
                event: None,
                subject,
                summary,
            }));
        }
    }
    Ok(Parsed::Event(LoggedEvent {
        commit: id.to_string(),
        time,
        author,
        event: get("Tlv4-Event").unwrap_or_default(),
        seq: get("Tlv4-Seq").and_then(|s| s.parse().ok()),
        task: get("Tlv4-Task"),
        role: get("Tlv4-Role"),
        status: get("Tlv4-Status"),
        attempt: get("Tlv4-Attempt").and_then(|s| s.parse().ok()),
        subject,
        summary,
        trailers,
    }))
}
