//! Messages on the team bus (git notes, one JSON object a line).

/// One message between roles.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Message {
    /// Unique id: `<unix-nanos>-<pid>-<counter>`; unique across concurrent senders.
    pub id: String,
    /// When it was sent (RFC 3339).
    pub ts: String,
    /// The sending role (or task id for progress reports).
    pub from: String,
    /// The receiving role; absent for a broadcast to the coordinator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// Message type (`state_update`, `research_ready`, `blocker`, …).
    #[serde(rename = "type")]
    pub kind: String,
    /// One-line human summary.
    pub summary: String,
    /// Structured payload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
}
