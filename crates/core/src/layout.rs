//! What of the session's pipeline folder lies below the store: which paths an artifact may
//! take in it. The store (`tlv4-store`) owns the folder's layout and writes it; the agents,
//! which never name the store, check the paths they report against this one rule before the
//! coordinator records them, and the store checks every write against it again.

use crate::error::{Error, Result};

/// Checks that `rel` names a file inside the pipeline folder that is not state the store
/// owns: relative, no `.`/`..`, no `.git`, not `session.toml` or `tasks/`.
pub fn validate_pipeline_path(rel: &str) -> Result<()> {
    let bad = |why: &str| Err(Error::Invalid(format!("artifact path `{rel}` {why}")));
    if rel.is_empty() {
        return bad("is empty");
    }
    if rel.starts_with('/') || rel.contains('\\') || rel.contains('\0') || rel.contains(':') {
        return bad("must be a relative path inside the pipeline folder");
    }
    for part in rel.split('/') {
        match part {
            "" | "." => return bad("has an empty or `.` component"),
            ".." => return bad("escapes the pipeline folder"),
            p if p.eq_ignore_ascii_case(".git") => return bad("writes into `.git`"),
            p if p.contains(['<', '>', '"', '|', '?', '*'])
                || p.ends_with(' ')
                || p.ends_with('.') =>
            {
                return bad("has a character that is not portable");
            }
            _ => {}
        }
    }
    let first = rel.split('/').next().unwrap_or(rel).to_ascii_lowercase();
    let reserved = [
        "session.toml",
        "control.toml",
        "roles.lock",
        "config.lock",
        "tasks",
        "runs",
    ];
    if reserved.contains(&first.as_str()) {
        return bad("would overwrite the session's own state");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::validate_pipeline_path;

    #[test]
    fn pipeline_paths() {
        assert!(validate_pipeline_path("spec/product-brief.md").is_ok());
        assert!(validate_pipeline_path("artifacts/review-report.md").is_ok());
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "spec/../../x",
            "a//b",
            "./a",
            ".git/config",
            "x/.GIT/y",
            "session.toml",
            "tasks/IMPL-001.toml",
            "a\\b",
        ] {
            assert!(validate_pipeline_path(bad).is_err(), "{bad}");
        }
    }
}
