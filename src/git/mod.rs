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
    let out = Command::new("git")
        .current_dir(dir)
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
