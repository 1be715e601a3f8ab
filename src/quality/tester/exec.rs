//! Running the tests' commands with a timeout, stdin closed and stdout and stderr captured
//! together, through the tool's one process runner. They run in a
//! [`tlv4_store::worktree::ScratchCheckout`] of the session tip (the tool's one checkout manager),
//! removed when dropped, so also when the run fails half-way or is interrupted.

use std::path::Path;
use std::time::Duration;

/// One command's run.
#[derive(Debug, Clone, Default)]
pub(super) struct Ran {
    /// The command, as given to `sh -c`.
    pub command: String,
    /// The exit code; `None` when killed by a signal (a timeout, an interrupt) or not started.
    pub exit_code: Option<i32>,
    /// Whether the timeout killed it.
    pub timed_out: bool,
    /// Wall-clock time.
    pub seconds: f64,
    /// stdout and stderr interleaved (the middle dropped beyond several MiB).
    pub output: String,
    /// Why it could not start, if it could not.
    pub spawn_error: Option<String>,
}

/// How much output is kept for parsing: this much of its start, and again of its end.
const CAPTURE: usize = 4 << 20;

/// Runs `command` with `sh -c` in `cwd`, stdin closed, for at most `timeout`; `env` is added
/// to the inherited environment. It goes through the tool's one process runner
/// ([`tlv4_core::process::run`]), with `remove` left out of the inherited environment: its own process group, killed when the command ends (a test
/// that leaves a server running does not outlive the run), times out, or the tool is
/// stopped by a signal or dies.
pub(super) fn run(
    cwd: &Path,
    command: &str,
    timeout: Duration,
    env: &tlv4_core::environment::isolate::RunEnv,
) -> Ran {
    let mut inv = tlv4_core::process::Invocation::new("/bin/sh", cwd);
    inv.args = vec!["-c".into(), command.to_owned()];
    inv.timeout = timeout;
    inv.capture_limit = CAPTURE;
    inv.streams = tlv4_core::process::Streams::Together;
    // No colours, no watch mode, no interactive installs.
    inv.env = [
        ("CI", "true"),
        ("NO_COLOR", "1"),
        ("FORCE_COLOR", "0"),
        ("CARGO_TERM_COLOR", "never"),
        ("PYTHONDONTWRITEBYTECODE", "1"),
        ("PYTHONUNBUFFERED", "1"),
        ("npm_config_yes", "false"),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
    .chain(env.set.iter().cloned())
    .collect();
    inv.env_remove = env.remove.clone();
    inv.sandbox = env.sandbox.clone();
    let mut ran = Ran {
        command: command.to_owned(),
        ..Ran::default()
    };
    match tlv4_core::process::run(&inv) {
        Ok(out) => {
            ran.exit_code = if out.timed_out { None } else { out.code };
            ran.timed_out = out.timed_out;
            ran.seconds = out.seconds;
            ran.output = out.stdout;
        }
        Err(e) => ran.spawn_error = Some(format!("cannot run `sh -c {command}`: {e}")),
    }
    ran
}

/// `text` cut to about `max` bytes: its first quarter and its last three quarters, on
/// character boundaries, with a marker between.
pub(super) fn trim_middle(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let floor = |mut i: usize| {
        while !text.is_char_boundary(i) {
            i -= 1;
        }
        i
    };
    let head = floor(max / 4);
    let tail = floor(text.len() - (max - max / 4));
    let tail = if tail < head { head } else { tail };
    format!(
        "{}\n[… {} bytes cut …]\n{}",
        &text[..head],
        tail - head,
        &text[tail..]
    )
}
