//! The event history: first-parent commits of a session branch, read from their trailers.

use gix::ObjectId;
use gix::bstr::ByteSlice;

use super::Store;
use crate::error::{Error, Result};
use crate::model::SessionId;

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

impl Store {
    /// The events of session `sid`, newest first, up to `limit` of them.
    pub fn log(&self, sid: &SessionId, limit: Option<usize>) -> Result<Vec<LoggedEvent>> {
        self.log_from(sid, self.tip(sid)?, limit)
    }

    /// The events of session `sid` reachable from `tip` by first parents, newest first.
    pub fn log_from(
        &self,
        sid: &SessionId,
        tip: ObjectId,
        limit: Option<usize>,
    ) -> Result<Vec<LoggedEvent>> {
        let git = |e: gix::Error| Error::git("cannot read the session history", e);
        let mut out = Vec::new();
        let mut next = Some(tip);
        while let Some(id) = next {
            if limit.is_some_and(|l| out.len() >= l) {
                break;
            }
            let commit = self.repo.find_commit(id).map_err(git)?;
            let Some(event) = parse_event(sid, id, &commit)? else {
                break;
            };
            out.push(event);
            next = commit.parent_ids().next().map(|p| p.detach());
        }
        Ok(out)
    }

    /// Whether `commit` is an event of session `sid` (its `Tlv4-Session` trailer names it).
    pub fn event_of(&self, sid: &SessionId, commit: ObjectId) -> Result<Option<LoggedEvent>> {
        let c = self
            .repo
            .find_commit(commit)
            .map_err(|e| Error::git("cannot read commit", e))?;
        parse_event(sid, commit, &c)
    }
}

fn parse_event(
    sid: &SessionId,
    id: ObjectId,
    commit: &gix::Commit<'_>,
) -> Result<Option<LoggedEvent>> {
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
    if get("Tlv4-Session").as_deref() != Some(sid.as_str()) {
        return Ok(None);
    }
    let committer = commit.committer().map_err(&git)?;
    let time = committer
        .time()
        .map(|t| crate::clock::rfc3339(t.seconds))
        .unwrap_or_default();
    let sig = commit.author().map_err(git)?;
    Ok(Some(LoggedEvent {
        commit: id.to_string(),
        time,
        author: format!("{} <{}>", sig.name, sig.email),
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
