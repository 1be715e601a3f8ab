//! Validated identifiers: session ids and task ids.
//!
//! Both end up in ref names and tree paths, so they are checked once, here, and can be
//! trusted everywhere else.

use std::fmt;
use std::str::FromStr;

/// Why a string is not a valid id.
#[derive(Debug, Clone, thiserror::Error)]
#[error("`{value}` is not a valid {what}: {reason}")]
pub struct IdError {
    value: String,
    what: &'static str,
    reason: &'static str,
}

fn check(value: &str, what: &'static str, max: usize) -> Result<(), IdError> {
    let fail = |reason| {
        Err(IdError {
            value: value.to_owned(),
            what,
            reason,
        })
    };
    if value.is_empty() {
        return fail("it is empty");
    }
    if value.len() > max {
        return fail("it is too long");
    }
    if !value.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        return fail("only letters, digits and `-` are allowed");
    }
    if value.starts_with('-') || value.ends_with('-') || value.contains("--") {
        return fail("`-` must separate words");
    }
    Ok(())
}

/// A session id, `TLV4-<slug>-<yyyymmdd>` with an optional `-N` suffix.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(try_from = "String", into = "String")]
pub struct SessionId(String);

impl SessionId {
    /// The prefix every session id starts with.
    pub const PREFIX: &'static str = "TLV4-";

    /// The id as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A session id for `text` made on `date` (`yyyymmdd`), with `-n` appended when `n > 1`.
    pub fn from_text(text: &str, date: &str, n: u32) -> SessionId {
        let slug = slug(text);
        let mut id = format!("{}{slug}-{date}", Self::PREFIX);
        if n > 1 {
            id.push_str(&format!("-{n}"));
        }
        SessionId(id)
    }
}

/// Up to four words of `text`, lower-case, joined by `-`, at most 32 characters.
fn slug(text: &str) -> String {
    let mut out = String::new();
    for word in text
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(4)
    {
        let word = word.to_ascii_lowercase();
        if out.len() + word.len() + 1 > 32 {
            break;
        }
        if !out.is_empty() {
            out.push('-');
        }
        out.push_str(&word);
    }
    if out.is_empty() {
        "session".to_owned()
    } else {
        out
    }
}

impl FromStr for SessionId {
    type Err = IdError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        check(s, "session id", 100)?;
        if !s.starts_with(Self::PREFIX) || s.len() == Self::PREFIX.len() {
            return Err(IdError {
                value: s.to_owned(),
                what: "session id",
                reason: "it must start with `TLV4-`",
            });
        }
        Ok(SessionId(s.to_owned()))
    }
}

impl TryFrom<String> for SessionId {
    type Error = IdError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<SessionId> for String {
    fn from(id: SessionId) -> String {
        id.0
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A task id such as `RESEARCH-001`, `IMPL-002` or `QUALITY-001-R1`.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(try_from = "String", into = "String")]
pub struct TaskId(String);

impl TaskId {
    /// The id as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The part before the first `-`, e.g. `IMPL` for `IMPL-002`.
    pub fn prefix(&self) -> &str {
        self.0.split('-').next().unwrap_or(&self.0)
    }
}

impl FromStr for TaskId {
    type Err = IdError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        check(s, "task id", 64)?;
        if !s.starts_with(|c: char| c.is_ascii_uppercase()) {
            return Err(IdError {
                value: s.to_owned(),
                what: "task id",
                reason: "it must start with an upper-case letter",
            });
        }
        Ok(TaskId(s.to_owned()))
    }
}

impl TryFrom<String> for TaskId {
    type Error = IdError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<TaskId> for String {
    fn from(id: TaskId) -> String {
        id.0
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_from_text() {
        assert_eq!(
            SessionId::from_text("Add OAuth login to the API", "20261129", 1).as_str(),
            "TLV4-add-oauth-login-to-20261129"
        );
        assert_eq!(
            SessionId::from_text("!!!", "20261129", 3).as_str(),
            "TLV4-session-20261129-3"
        );
        assert!("TLV4-add-oauth-20261129".parse::<SessionId>().is_ok());
        assert!("tlv4-x".parse::<SessionId>().is_err());
        assert!("TLV4-a/b".parse::<SessionId>().is_err());
        assert!("TLV4-a..b".parse::<SessionId>().is_err());
    }

    #[test]
    fn task_ids() {
        assert!("QUALITY-001-R1".parse::<TaskId>().is_ok());
        assert!("IMPROVE-completeness-001".parse::<TaskId>().is_ok());
        assert!("impl-001".parse::<TaskId>().is_err());
        assert!("IMPL-001/../x".parse::<TaskId>().is_err());
        assert_eq!("IMPL-002".parse::<TaskId>().unwrap().prefix(), "IMPL");
    }
}
