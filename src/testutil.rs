//! Helpers shared by the unit tests: a hermetic `git`.

use std::path::Path;
use std::process::{Command, Output};

/// `git` in `dir`, hermetic: no system or user configuration, no git location inherited from
/// the environment (`GIT_DIR`, `GIT_WORK_TREE`, `GIT_INDEX_FILE`: a test run from a hook
/// must not write the user's repository), the identity `t <t@t>`. The one base of every
/// unit test's git.
pub fn git_command(dir: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"]);
    cmd
}

/// [`git_command`] with `args`, at a fixed date; what it printed and how it ended.
pub fn git_output(dir: &Path, args: &[&str]) -> Output {
    git_command(dir)
        .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
        .args(args)
        .output()
        .expect("git runs")
}

/// [`git_output`], failing the test on a non-zero exit; returns stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = git_output(dir, args);
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
