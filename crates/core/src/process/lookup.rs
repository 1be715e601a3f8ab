//! Finding the program an agent (or a hook) names: a path, `~` expanded, or a name looked up
//! in `PATH`, failing with the hint of what to set in `.tlv4.toml`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Resolves `program` the way a shell would, but up front and with a clear error: a name
/// with a `/` is a path (relative ones are taken from `base`, the repository root), a bare
/// name is looked up in `path` (the agent's `PATH`).
pub fn find_program(
    agent: &str,
    program: &str,
    base: &Path,
    path: Option<&std::ffi::OsStr>,
) -> Result<PathBuf> {
    let hint = format!(
        "install it, or set `program` under [agents.{agent}] in .tlv4.toml to the full path"
    );
    if program.trim().is_empty() {
        return Err(Error::state(
            format!("agent `{agent}` has an empty `program`"),
            Some(hint),
        ));
    }
    if program.contains('/') {
        let p = expand_home(program, base);
        return if is_executable(&p) {
            Ok(p)
        } else {
            Err(Error::state(
                format!(
                    "agent `{agent}`: program `{}` does not exist or is not executable",
                    p.display()
                ),
                Some(hint),
            ))
        };
    }
    let path = path
        .map(OsString::from)
        .or_else(|| std::env::var_os("PATH"))
        .unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        let candidate = dir.join(program);
        if is_executable(&candidate) {
            return Ok(candidate);
        }
    }
    Err(Error::state(
        format!(
            "agent `{agent}`: program `{program}` was not found in PATH ({})",
            path.to_string_lossy()
        ),
        Some(hint),
    ))
}

/// `~` and `~/…` from `$HOME`; a relative path from `base`.
pub fn expand_home(path: &str, base: &Path) -> PathBuf {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    match (path, home) {
        ("~", Some(h)) => h,
        (p, Some(h)) if p.starts_with("~/") => h.join(&p[2..]),
        (p, _) if Path::new(p).is_absolute() => PathBuf::from(p),
        (p, _) => base.join(p),
    }
}

pub(super) fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
