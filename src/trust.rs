//! Trust for a repository's `.tlv4.toml`: a file that names programs to run came with the
//! repository, so it runs only after the user ran `git tlv4 trust` on that exact content
//! (like `direnv allow`). The trusted content's git blob id is kept in the repository's own
//! config (`git config --local tlv4.trusted`), which is never pushed or cloned; any change
//! to the file needs a new `trust`.

use std::path::Path;

use crate::config::{Config, FILE};
use crate::error::{Error, Result};

/// The config key holding the blob id of the trusted `.tlv4.toml`.
pub const KEY: &str = "tlv4.trusted";

/// The git blob id of `bytes`.
fn blob_id(bytes: &[u8]) -> String {
    gix::objs::compute_hash(gix::hash::Kind::Sha1, gix::objs::Kind::Blob, bytes)
        .map(|id| id.to_string())
        .unwrap_or_default()
}

/// Whether an agent defined in `.tlv4.toml` needs the file trusted: it runs a program or
/// sends code to an endpoint (every driver but `builtin` and `replay`).
pub fn needs_trust(agent: &crate::agents::config::AgentSpec) -> bool {
    agent.driver != "builtin" && agent.driver != "replay"
}

/// Whether `.tlv4.toml` in `root` may be used to run `named`, the agents it defines that the
/// run uses (`name (driver)`): none, or the file's content is the trusted one.
pub fn check(root: &Path, named: &[String]) -> Result<()> {
    if named.is_empty() {
        return Ok(());
    }
    let path = root.join(FILE);
    let bytes = std::fs::read(&path)
        .map_err(|e| Error::io(format!("cannot read {}", path.display()), e))?;
    let id = blob_id(&bytes);
    let trusted = trusted(root);
    if trusted.as_deref() == Some(id.as_str()) {
        return Ok(());
    }
    let what = if trusted.is_some() {
        "changed since you trusted it"
    } else {
        "is not trusted yet"
    };
    Err(Error::state(
        format!(
            "{} names agents that run programs or send your code to an endpoint ({}) and {what}",
            path.display(),
            named.join(", ")
        ),
        Some("read it, then run `git tlv4 trust` to allow exactly this content".to_owned()),
    ))
}

/// The blob id recorded by the last `trust`, if any.
pub fn trusted(root: &Path) -> Option<String> {
    crate::git::run(root, &["config", "--local", "--get", KEY])
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

/// Trusts the current content of `.tlv4.toml` in `root`; returns its blob id.
pub fn trust(root: &Path) -> Result<String> {
    let path = root.join(FILE);
    let bytes = std::fs::read(&path)
        .map_err(|e| Error::io(format!("cannot read {}", path.display()), e))?;
    // A file that does not parse is not worth trusting.
    Config::parse(
        &path.display().to_string(),
        &String::from_utf8_lossy(&bytes),
    )?;
    let id = blob_id(&bytes);
    crate::git::run(root, &["config", "--local", KEY, &id])?;
    Ok(id)
}

/// Forgets any trust.
pub fn revoke(root: &Path) -> Result<bool> {
    if trusted(root).is_none() {
        return Ok(false);
    }
    crate::git::run(root, &["config", "--local", "--unset", KEY])?;
    Ok(true)
}
