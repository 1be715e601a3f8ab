//! Running a plan in a checkout, only as often as needed: a step runs when the checkout has
//! never run it, when its commands changed, when the blob id of one of its inputs (lockfiles,
//! manifests) differs from the last successful run there, or when the last run failed or was
//! interrupted. What ran is kept in a stamp file the caller keeps out of the checkout.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::isolate::RunEnv;
use super::{Plan, Step};

/// How long one setup command may run unless `[environment] timeout` says.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(20 * 60);

/// How much of a failed command's output an error shows: its last lines, and its first ones
/// when there are more (npm says why it refused first, then prints its usage).
const TAIL_LINES: usize = 30;
const HEAD_LINES: usize = 10;

/// What one step did.
#[derive(Debug, Clone, PartialEq)]
pub struct Made {
    /// The step's directory (`""` for the root).
    pub dir: String,
    /// Its ecosystem's name.
    pub ecosystem: &'static str,
    /// Its commands, joined with `&&`; empty when it has none.
    pub command: String,
    /// Seconds spent; 0 when nothing ran.
    pub seconds: f64,
    /// Whether it was skipped because the checkout already had it (same inputs).
    pub cached: bool,
}

impl Made {
    /// One line for a report: `npm ci in web/: 19.2 s` or `… (cached: inputs unchanged)`.
    pub fn line(&self) -> String {
        let at = if self.dir.is_empty() {
            String::new()
        } else {
            format!(" in {}/", self.dir)
        };
        if self.command.is_empty() {
            return format!("{}{at}: nothing to install (shared caches)", self.ecosystem);
        }
        if self.cached {
            format!("`{}`{at}: cached (inputs unchanged)", self.command)
        } else {
            format!("`{}`{at}: ran, {:.1} s", self.command, self.seconds)
        }
    }
}

/// Why a checkout could not be prepared: an environment error, never the tests' failure.
#[derive(Debug, Clone, PartialEq)]
pub enum SetupError {
    /// A program the step needs is not installed.
    MissingTool {
        /// The program.
        tool: String,
        /// How to get it.
        how: String,
        /// What needed it.
        evidence: String,
    },
    /// A command failed or timed out.
    Failed {
        /// The command.
        command: String,
        /// The directory it ran in.
        dir: String,
        /// Its exit code; `None` when killed.
        exit: Option<i32>,
        /// Whether the time limit killed it.
        timed_out: bool,
        /// The time limit it ran under (`[environment] timeout`).
        limit: Duration,
        /// The end of its output.
        tail: String,
    },
    /// Anything else (the stamp file, spawning).
    Other(String),
}

/// The first line of `output` where a program says the system refused it (what the sandbox's
/// refusals look like to it: `EACCES`/`EPERM`, a read-only file system), trimmed.
fn refused_write(output: &str) -> Option<&str> {
    const SAID: [&str; 4] = [
        "permission denied",
        "operation not permitted",
        "read-only file system",
        "eacces",
    ];
    output
        .lines()
        .map(str::trim)
        .find(|l| {
            let lower = l.to_ascii_lowercase();
            SAID.iter().any(|s| lower.contains(s))
        })
        .map(|l| l.char_indices().nth(200).map_or(l, |(end, _)| &l[..end]))
}

impl std::fmt::Display for SetupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SetupError::MissingTool {
                tool,
                how,
                evidence,
            } => write!(
                f,
                "the environment setup needs `{tool}` ({evidence}), which is not installed; get it with: {how}"
            ),
            SetupError::Failed {
                command,
                dir,
                exit,
                timed_out,
                limit,
                tail,
            } => {
                let at = if dir.is_empty() {
                    String::new()
                } else {
                    format!(" in {dir}/")
                };
                let how = match (timed_out, exit) {
                    (true, _) => {
                        format!("timed out after {} (`[environment] timeout`)", span(*limit))
                    }
                    (false, Some(c)) => format!("exited with {c}"),
                    (false, None) => "was killed by a signal".to_owned(),
                };
                write!(f, "the environment setup `{command}`{at} {how}")?;
                if let Some(line) = refused_write(tail) {
                    write!(
                        f,
                        "; it was refused a write (`{line}`): the setup may write only its checkout, its temporary directory ($TMPDIR) and the package managers' caches"
                    )?;
                }
                if !tail.is_empty() {
                    write!(f, "; the end of its output:\n{tail}")?;
                }
                Ok(())
            }
            SetupError::Other(s) => f.write_str(s),
        }
    }
}

/// A time limit in words: `2 s`, `20 min`.
fn span(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 60 && s.is_multiple_of(60) && d.subsec_nanos() == 0 {
        format!("{} min", s / 60)
    } else {
        format!("{} s", d.as_secs_f64())
    }
}

/// The output a failed command's error shows: its last [`TAIL_LINES`] lines, after its first
/// [`HEAD_LINES`] when it printed more than both (the reason is at the start for npm, at the
/// end for pip and uv).
fn head_and_tail(out: &crate::process::Output) -> String {
    let text = if out.stderr.trim().is_empty() {
        &out.stdout
    } else {
        &out.stderr
    };
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .collect();
    if lines.len() <= HEAD_LINES + TAIL_LINES {
        return out.tail(HEAD_LINES + TAIL_LINES);
    }
    let mut head = lines[..HEAD_LINES].join("\n");
    if head.len() > 1000 {
        let mut cut = 1000;
        while !head.is_char_boundary(cut) {
            cut -= 1;
        }
        head.truncate(cut);
        head.push('…');
    }
    format!(
        "{head}\n[… {} lines …]\n{}",
        lines.len() - HEAD_LINES - TAIL_LINES,
        out.tail(TAIL_LINES)
    )
}

/// What a checkout's stamp file keeps per step.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
struct StepStamp {
    commands: Vec<String>,
    inputs: BTreeMap<String, Option<String>>,
}

/// Prepares the checkout at `root` by `plan`. `ids` gives the blob id of each input path at
/// the checkout's commit (`None` when it has no such file); `stamp` is the file that keeps
/// what ran there. Commands run with `env`, one at a time, each for at most `timeout`.
pub fn prepare(
    root: &Path,
    plan: &Plan,
    ids: &dyn Fn(&str) -> Option<String>,
    stamp: &Path,
    env: &RunEnv,
    timeout: Duration,
) -> Result<Vec<Made>, SetupError> {
    let mut stamps: BTreeMap<String, StepStamp> = std::fs::read(stamp)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    let mut made = Vec::new();
    for step in &plan.steps {
        let key = format!("{}|{}", step.dir, step.kind);
        let want = StepStamp {
            commands: step.commands.clone(),
            inputs: step.inputs.iter().map(|p| (p.clone(), ids(p))).collect(),
        };
        let mut m = Made {
            dir: step.dir.clone(),
            ecosystem: step.ecosystem().name(),
            command: step.commands.join(" && "),
            seconds: 0.0,
            cached: true,
        };
        if step.commands.is_empty() || stamps.get(&key) == Some(&want) {
            made.push(m);
            continue;
        }
        // Forgotten before it runs: a step interrupted half-way runs again next time.
        stamps.remove(&key);
        write_stamp(stamp, &stamps)?;
        missing_tool(step, env)?;
        let started = std::time::Instant::now();
        let dir = root.join(&step.dir);
        for command in &step.commands {
            run_one(&dir, &step.dir, command, env, timeout)?;
        }
        m.seconds = started.elapsed().as_secs_f64();
        m.cached = false;
        stamps.insert(key, want);
        write_stamp(stamp, &stamps)?;
        made.push(m);
    }
    Ok(made)
}

fn write_stamp(path: &Path, stamps: &BTreeMap<String, StepStamp>) -> Result<(), SetupError> {
    let bytes = serde_json::to_vec_pretty(stamps).unwrap_or_default();
    let tmp = path.with_extension("tlv4-new");
    std::fs::write(&tmp, bytes)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| SetupError::Other(format!("cannot write {}: {e}", path.display())))
}

/// The first program `step` needs that is not on the PATH of `env`.
fn missing_tool(step: &Step, env: &RunEnv) -> Result<(), SetupError> {
    let path = env
        .set
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.clone())
        .or_else(|| std::env::var("PATH").ok())
        .unwrap_or_default();
    for (tool, how) in &step.tools {
        if !on_path(tool, &path) {
            return Err(SetupError::MissingTool {
                tool: tool.clone(),
                how: how.clone(),
                evidence: step.evidence.clone(),
            });
        }
    }
    Ok(())
}

/// Whether `program` is an executable file in a directory of `path`.
pub fn on_path(program: &str, path: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(path).any(|d: PathBuf| {
        std::fs::metadata(d.join(program))
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

fn run_one(
    dir: &Path,
    rel: &str,
    command: &str,
    env: &RunEnv,
    timeout: Duration,
) -> Result<(), SetupError> {
    let mut inv = crate::process::Invocation::new("/bin/sh", dir);
    inv.args = vec!["-c".to_owned(), command.to_owned()];
    inv.timeout = timeout;
    inv.streams = crate::process::Streams::Together;
    inv.env = [
        ("CI", "true"),
        ("NO_COLOR", "1"),
        ("npm_config_yes", "false"),
        ("npm_config_update_notifier", "false"),
        ("PIP_DISABLE_PIP_VERSION_CHECK", "1"),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
    .chain(env.set.iter().cloned())
    .collect();
    inv.env_remove = env.remove.clone();
    inv.sandbox = env.sandbox.clone();
    let fail = |exit, timed_out, tail: String| SetupError::Failed {
        command: command.to_owned(),
        dir: rel.to_owned(),
        exit,
        timed_out,
        limit: timeout,
        tail,
    };
    match crate::process::run(&inv) {
        Ok(out) if out.success() => Ok(()),
        Ok(out) => Err(fail(
            if out.timed_out { None } else { out.code },
            out.timed_out,
            head_and_tail(&out),
        )),
        Err(e) => Err(fail(None, false, format!("cannot start it: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(commands: &[&str]) -> Plan {
        Plan {
            steps: vec![Step {
                dir: String::new(),
                kind: "configured".to_owned(),
                commands: commands.iter().map(|c| (*c).to_owned()).collect(),
                inputs: vec!["lock".to_owned()],
                tools: Vec::new(),
                evidence: "test".to_owned(),
            }],
        }
    }

    #[test]
    fn a_step_runs_again_only_when_an_input_changes() {
        let co = tempfile::tempdir().unwrap();
        let stamp = co.path().join("stamp.json");
        let p = plan(&["echo run >> count"]);
        let env = RunEnv::default();
        let t = Duration::from_secs(30);
        let one = |_: &str| Some("a".to_owned());
        let two = |_: &str| Some("b".to_owned());
        assert!(!prepare(co.path(), &p, &one, &stamp, &env, t).unwrap()[0].cached);
        assert!(prepare(co.path(), &p, &one, &stamp, &env, t).unwrap()[0].cached);
        assert!(!prepare(co.path(), &p, &two, &stamp, &env, t).unwrap()[0].cached);
        let count = std::fs::read_to_string(co.path().join("count")).unwrap();
        assert_eq!(count.lines().count(), 2);
    }

    #[test]
    fn a_failed_step_is_an_error_naming_it_and_runs_again_next_time() {
        let co = tempfile::tempdir().unwrap();
        let stamp = co.path().join("stamp.json");
        let p = plan(&["echo installing; echo 'no registry' >&2; exit 3"]);
        let ids = |_: &str| Some("a".to_owned());
        let e = prepare(
            co.path(),
            &p,
            &ids,
            &stamp,
            &RunEnv::default(),
            Duration::from_secs(30),
        )
        .unwrap_err();
        let text = e.to_string();
        assert!(text.contains("exited with 3"), "{text}");
        assert!(text.contains("no registry"), "{text}");
        let e2 = prepare(
            co.path(),
            &p,
            &ids,
            &stamp,
            &RunEnv::default(),
            Duration::from_secs(30),
        )
        .unwrap_err();
        assert_eq!(e, e2, "not remembered as done");
    }

    #[test]
    fn a_failed_step_shows_the_start_of_a_long_output_and_a_hung_one_its_limit() {
        let co = tempfile::tempdir().unwrap();
        let stamp = co.path().join("stamp.json");
        let ids = |_: &str| Some("a".to_owned());
        // npm's way: the reason first, then a long usage.
        let p = plan(&["echo 'error: out of sync'; seq 1 100; exit 1"]);
        let t = Duration::from_secs(30);
        let text = prepare(co.path(), &p, &ids, &stamp, &RunEnv::default(), t)
            .unwrap_err()
            .to_string();
        assert!(text.contains("error: out of sync"), "{text}");
        assert!(text.contains("[… 61 lines …]\n71\n"), "{text}");
        assert!(text.ends_with("\n100"), "{text}");
        let p = plan(&["sleep 30"]);
        let t = Duration::from_millis(300);
        let text = prepare(co.path(), &p, &ids, &stamp, &RunEnv::default(), t)
            .unwrap_err()
            .to_string();
        assert!(
            text.contains("`sleep 30` timed out after 0.3 s (`[environment] timeout`)"),
            "{text}"
        );
    }

    #[test]
    fn a_setup_the_sandbox_refuses_a_write_says_so() {
        if !matches!(crate::sandbox::level(), crate::sandbox::Level::Full(_))
            && std::env::var_os("TLV4_REQUIRE_SANDBOX").is_none()
        {
            eprintln!("skipped: no full sandbox here");
            return;
        }
        let co = tempfile::tempdir().unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let stamp = co.path().join("stamp.json");
        let ids = |_: &str| Some("a".to_owned());
        let env = RunEnv {
            sandbox: Some(std::sync::Arc::new(
                crate::sandbox::for_checkout(co.path(), tmp.path())
                    .prepare()
                    .unwrap(),
            )),
            ..RunEnv::default()
        };
        let outside = format!("/var/tmp/tlv4-setup-outside-{}", std::process::id());
        let p = plan(&["touch inside", &format!("touch {outside}")]);
        let text = prepare(co.path(), &p, &ids, &stamp, &env, Duration::from_secs(30))
            .unwrap_err()
            .to_string();
        assert!(co.path().join("inside").exists());
        assert!(!std::path::Path::new(&outside).exists());
        assert!(
            text.contains(&format!(
                "it was refused a write (`touch: cannot touch '{outside}': Permission denied`): the setup may write only its checkout"
            )),
            "{text}"
        );
    }

    #[test]
    fn a_missing_tool_says_which_and_how_to_get_it() {
        let co = tempfile::tempdir().unwrap();
        let mut p = plan(&["pnpm install --frozen-lockfile"]);
        p.steps[0].tools = vec![(
            "tlv4-no-such-tool".to_owned(),
            "npm install -g tlv4-no-such-tool".to_owned(),
        )];
        let e = prepare(
            co.path(),
            &p,
            &|_| None,
            &co.path().join("s"),
            &RunEnv::default(),
            Duration::from_secs(5),
        )
        .unwrap_err();
        assert!(
            matches!(&e, SetupError::MissingTool { tool, .. } if tool == "tlv4-no-such-tool"),
            "{e}"
        );
    }
}
