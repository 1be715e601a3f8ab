//! `session.toml`: what a session is and where it stands.

use super::SessionId;

/// The version of the on-disk format a new session is written with. A session written with
/// a number above [`SCHEMA_NEWEST`] is refused rather than misread.
pub const SCHEMA_VERSION: u32 = 1;

/// The newest format this build reads: 2 is 1 on which remote workers claim tasks on refs of
/// their own, without a session event (`specs/state-format.md` §18.10). A session becomes 2
/// when such a worker first works on it, so that a build that knows only 1 — whose workers
/// claim through the session — refuses it instead of claiming beside them.
pub const SCHEMA_NEWEST: u32 = 2;

/// The format of a session remote workers of this build have worked on.
pub const SCHEMA_CLAIM_REFS: u32 = 2;

/// The session record, stored as `.tlv4/sessions/<SID>/session.toml`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Session {
    /// Format version; see [`SCHEMA_VERSION`].
    pub schema: u32,
    /// The session id, also the branch name `tlv4/<id>`.
    pub id: SessionId,
    /// The task text the user gave to `start`.
    pub task: String,
    /// The pipeline name from `specs/pipelines.toml`.
    pub pipeline: String,
    /// Whether supervisor checkpoints were dispatched.
    pub supervision: bool,
    /// Where the session stands.
    pub status: SessionStatus,
    /// The commit the session branch forked from (full hex id).
    pub base: String,
    /// When the session started (RFC 3339).
    pub created_at: String,
    /// When the last event was written (RFC 3339).
    pub updated_at: String,
    /// How many events the branch holds, this state's own included.
    pub events: u64,
    /// For a forked session: the session and event commit it was forked from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<ForkOrigin>,
}

impl Session {
    /// A session as its first event writes it: active, no event counted yet, started and
    /// updated `now` (RFC 3339), forked from `base` (a full commit id).
    pub fn new(
        id: SessionId,
        task: &str,
        pipeline: &str,
        supervision: bool,
        base: String,
        now: String,
    ) -> Session {
        Session {
            schema: SCHEMA_VERSION,
            id,
            task: task.to_owned(),
            pipeline: pipeline.to_owned(),
            supervision,
            status: SessionStatus::Active,
            base,
            created_at: now.clone(),
            updated_at: now,
            events: 0,
            forked_from: None,
        }
    }
}

/// Where a forked session came from.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForkOrigin {
    /// The original session.
    pub session: SessionId,
    /// The event commit the fork starts from.
    pub event: String,
}

/// Where a session stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionStatus {
    /// Work may continue.
    Active,
    /// Waiting for the user (a gate, a checkpoint block, a discuss escalation).
    Paused,
    /// Every task is done.
    Completed,
    /// The user stopped it.
    Aborted,
}

impl SessionStatus {
    /// The name used in files, trailers and output.
    pub fn as_str(self) -> &'static str {
        match self {
            SessionStatus::Active => "active",
            SessionStatus::Paused => "paused",
            SessionStatus::Completed => "completed",
            SessionStatus::Aborted => "aborted",
        }
    }
}
