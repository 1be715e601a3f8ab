//! The one place that runs the `git` binary, for what gix does not do (maintenance).

use std::path::Path;
use std::process::{Command, Stdio};

/// Runs git's own auto-maintenance (`git maintenance run --auto`), which packs loose objects
/// once there are enough of them. Failures are ignored: maintenance is an optimisation.
pub fn auto_maintenance(git_dir: &Path) {
    let _ = Command::new("git")
        .arg("--git-dir")
        .arg(git_dir)
        .args(["maintenance", "run", "--auto", "--quiet"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Runs `git ARGS` in `dir` and returns its stdout; an error carries its stderr.
pub fn run(dir: &Path, args: &[&str]) -> crate::Result<String> {
    // Callers name the repository themselves (`-C`, `--git-dir`, the directory); variables
    // set by a hook or the user's shell must not redirect the command elsewhere.
    let out = Command::new("git")
        .current_dir(dir)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| crate::Error::io("cannot run git", e))?;
    if !out.status.success() {
        return Err(crate::Error::Git(format!(
            "`git {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The lock reason of a worktree this process uses; `stale_worktrees` recognises it.
pub fn lock_reason() -> String {
    format!(
        "git-tlv4 pid {} on {}",
        std::process::id(),
        crate::host::name()
    )
}

/// Locked worktrees of this repository left by git-tlv4 processes of this host that are gone.
pub fn stale_worktrees(git_dir: &Path) -> Vec<std::path::PathBuf> {
    let Ok(out) = Command::new("git")
        .arg("--git-dir")
        .arg(git_dir)
        .args(["worktree", "list", "--porcelain"])
        .stdin(Stdio::null())
        .output()
    else {
        return Vec::new();
    };
    let host = crate::host::name();
    let text = String::from_utf8_lossy(&out.stdout);
    let mut stale = Vec::new();
    let mut path = None;
    for line in text.lines() {
        if let Some(p) = line.strip_prefix("worktree ") {
            path = Some(std::path::PathBuf::from(p));
        } else if let Some(reason) = line.strip_prefix("locked git-tlv4 pid ") {
            // `<pid> on <host>`, then maybe ` (<what>)`.
            let mut parts = reason.split_whitespace();
            let pid = parts.next().and_then(|p| p.parse::<u32>().ok());
            let on_host = parts.nth(1).is_some_and(|h| h == host);
            if let (Some(pid), true, Some(p)) = (pid, on_host, path.as_ref())
                && !crate::host::process_alive(pid, None)
            {
                stale.push(p.clone());
            }
        }
    }
    stale
}

/// Unlocks and removes a worktree git-tlv4 left behind.
pub fn remove_worktree(git_dir: &Path, path: &Path) -> crate::Result<()> {
    let gd = git_dir.to_string_lossy().into_owned();
    let wt = path.to_string_lossy().into_owned();
    let dir = git_dir.parent().unwrap_or(git_dir);
    let _ = run(dir, &["--git-dir", &gd, "worktree", "unlock", &wt]);
    run(
        dir,
        &[
            "--git-dir",
            &gd,
            "worktree",
            "remove",
            "--force",
            "--force",
            &wt,
        ],
    )?;
    Ok(())
}
