//! Lifecycle hooks (DESIGN §7): executables the user places, run at pipeline events with the
//! event as JSON on stdin.
//!
//! Hooks live where git keeps its own — in the repository's git directory, never in its
//! tree — at `<git common dir>/tlv4/hooks/<event>`, or in the directory `git config
//! tlv4.hooksPath` names (relative to the working tree's root). A repository cannot bring
//! hooks with it, so they need no trust. As with git's hooks, only an executable file runs.
//!
//! | event | when | a non-zero exit |
//! |---|---|---|
//! | `before-task` | on the worker, before a claimed task's agent (or rules) run | fails the task, with the hook's message as the reason |
//! | `before-merge` | on the worker, after a code task's snapshot, before its merge | fails the task; nothing is merged, the snapshot is kept |
//! | `after-task` | after a task's result is recorded | shown, nothing else |
//! | `checkpoint` | after a supervisor checkpoint's result is recorded | shown, nothing else |
//! | `completion` | after the completion action of a completed session | shown, nothing else |
//!
//! A hook runs in the repository's root (`before-merge`: in the task's worktree), in a
//! process group of its own, with stdin the event, `TLV4_HOOK`, `TLV4_SESSION` and (for task
//! events) `TLV4_TASK` set, for at most `HOOK_TIMEOUT`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::Error;
use crate::process::{self, Invocation};

/// The events hooks run at.
pub const EVENTS: [&str; 5] = [
    "before-task",
    "before-merge",
    "after-task",
    "checkpoint",
    "completion",
];

/// The longest a hook may run.
pub const HOOK_TIMEOUT: Duration = Duration::from_secs(120);

/// Where this repository's hooks are.
#[derive(Debug, Clone, Default)]
pub struct Hooks {
    dir: Option<PathBuf>,
}

/// What a hook said.
#[derive(Debug, Clone)]
pub struct HookRun {
    /// The event.
    pub event: String,
    /// Whether it exited 0.
    pub ok: bool,
    /// Its last lines (stderr, else stdout), or why it failed.
    pub message: String,
}

impl Hooks {
    /// No hooks at all.
    pub fn none() -> Hooks {
        Hooks { dir: None }
    }

    /// The hooks of the repository whose common git directory is `common_dir` and whose
    /// working tree is `workdir`: in `hooks_path` (`git config tlv4.hooksPath`, read with the
    /// rest of the configuration) when it is set, else in `.git/tlv4/hooks`.
    pub fn load(common_dir: &Path, workdir: &Path, hooks_path: Option<&str>) -> Hooks {
        let configured = hooks_path.map(str::trim).filter(|s| !s.is_empty());
        let dir = match configured {
            Some(p) => process::lookup::expand_home(p, workdir),
            None => common_dir.join("tlv4").join("hooks"),
        };
        Hooks {
            dir: dir.is_dir().then_some(dir),
        }
    }

    /// The executable for `event`, if there is one.
    fn find(&self, event: &str) -> Option<PathBuf> {
        use std::os::unix::fs::PermissionsExt;
        let path = self.dir.as_ref()?.join(event);
        let meta = std::fs::metadata(&path).ok()?;
        (meta.is_file() && meta.permissions().mode() & 0o111 != 0).then_some(path)
    }

    /// Runs the hook of `event` with `payload` on stdin in `workdir`; `None` when there is
    /// no hook for it.
    pub fn run(&self, event: &str, payload: &serde_json::Value, workdir: &Path) -> Option<HookRun> {
        let program = self.find(event)?;
        let mut inv = Invocation::new(&program, workdir);
        inv.stdin = Some(serde_json::to_vec(payload).expect("JSON serialises"));
        inv.timeout = HOOK_TIMEOUT;
        inv.env.push(("TLV4_HOOK".into(), event.to_owned()));
        for (key, var) in [("session", "TLV4_SESSION"), ("task", "TLV4_TASK")] {
            if let Some(v) = payload[key].as_str() {
                inv.env.push((var.into(), v.to_owned()));
            }
        }
        let run = match process::run(&inv) {
            Ok(out) if out.timed_out => HookRun {
                event: event.to_owned(),
                ok: false,
                message: format!(
                    "did not finish within {} s and was stopped",
                    HOOK_TIMEOUT.as_secs()
                ),
            },
            Ok(out) => {
                let text = if out.stderr.trim().is_empty() {
                    out.tail(5)
                } else {
                    last_lines(&out.stderr, 5)
                };
                HookRun {
                    event: event.to_owned(),
                    ok: out.success(),
                    message: if out.success() {
                        text
                    } else {
                        format!("{} ({})", text.trim(), out.describe_exit())
                    },
                }
            }
            Err(e) => HookRun {
                event: event.to_owned(),
                ok: false,
                message: Error::io(format!("cannot run {}", program.display()), e).to_string(),
            },
        };
        Some(run)
    }
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// The reason a task fails when the hook of `run` vetoed it.
pub fn veto(run: &HookRun) -> String {
    let message = run.message.trim();
    if message.is_empty() {
        format!("the {} hook said no", run.event)
    } else {
        format!("the {} hook said no: {message}", run.event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook(dir: &Path, event: &str, script: &str) {
        use std::os::unix::fs::PermissionsExt;
        let p = dir.join(event);
        std::fs::write(&p, script).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn hooks_get_the_event_and_their_exit_decides() {
        let dir = tempfile::tempdir().unwrap();
        let hooks = Hooks {
            dir: Some(dir.path().to_path_buf()),
        };
        let payload =
            serde_json::json!({"event": "before-task", "session": "S", "task": "IMPL-001"});
        assert!(
            hooks.run("before-task", &payload, dir.path()).is_none(),
            "no hook, no run"
        );
        hook(
            dir.path(),
            "before-task",
            "#!/bin/sh\nread -r line\ncase \"$line\" in *IMPL-001*) echo \"no $TLV4_TASK on $TLV4_HOOK\" >&2; exit 3;; esac\n",
        );
        let run = hooks.run("before-task", &payload, dir.path()).unwrap();
        assert!(!run.ok);
        assert_eq!(
            veto(&run),
            "the before-task hook said no: no IMPL-001 on before-task (exit code 3)"
        );
        let other = serde_json::json!({"task": "IMPL-002"});
        assert!(hooks.run("before-task", &other, dir.path()).unwrap().ok);
        // Not executable: not a hook, as with git.
        std::fs::write(dir.path().join("after-task"), "#!/bin/sh\nexit 1\n").unwrap();
        assert!(hooks.run("after-task", &payload, dir.path()).is_none());
        assert!(
            Hooks::none()
                .run("before-task", &payload, dir.path())
                .is_none()
        );
    }
}
