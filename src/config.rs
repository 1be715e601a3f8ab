//! `.tlv4.toml`: per-repository settings. Unknown keys are errors naming file, line and key.

use std::path::Path;

use crate::error::{Error, Result};

/// The file name, at the root of the working tree.
pub const FILE: &str = ".tlv4.toml";

/// The whole configuration, with defaults for what the file leaves out.
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// How sessions start.
    #[serde(default)]
    pub session: SessionConfig,
    /// Agents by name (`[agents.<name>]`).
    #[serde(default)]
    pub agents: std::collections::BTreeMap<String, crate::agents::config::AgentSpec>,
    /// Agent name per role (`default`, `executor`, …); `builtin` when unset.
    #[serde(default)]
    pub roles: std::collections::BTreeMap<String, String>,
    /// Agents of the discuss perspectives.
    #[serde(default)]
    pub discuss: crate::agents::config::DiscussConfig,
    /// What a snapshot of a code task's worktree takes.
    #[serde(default)]
    pub snapshot: SnapshotConfig,
    /// How the tester runs the tests.
    #[serde(default)]
    pub tests: TestsConfig,
    /// `git config tlv4.agent` values (`NAME` or `ROLE=NAME`), the user's own choice of
    /// agents: applied over `[roles]`, under `--agent`.
    #[serde(skip)]
    pub user_agents: Vec<String>,
}

/// `[snapshot]`: limits on what one snapshot of a task worktree takes.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SnapshotConfig {
    /// The largest file taken, e.g. `"10MiB"`, `"512KiB"`, or a number of bytes.
    pub max_file_size: String,
    /// The most changed files taken.
    pub max_files: usize,
    /// Names of directories whose new files are left out (when the base commit has no such
    /// directory): generated trees such as `node_modules`.
    pub leave_out: Vec<String>,
}

impl Default for SnapshotConfig {
    fn default() -> Self {
        let d = crate::worktree::SnapshotLimits::default();
        SnapshotConfig {
            max_file_size: format!("{}MiB", d.max_file_bytes >> 20),
            max_files: d.max_files,
            leave_out: d.leave_out,
        }
    }
}

impl SnapshotConfig {
    /// The limits, or why `max_file_size` is not a size.
    pub fn limits(&self) -> Result<crate::worktree::SnapshotLimits> {
        let text = self.max_file_size.trim();
        let split = text
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len());
        let (number, unit) = text.split_at(split);
        let shift = match unit.trim() {
            "" | "B" => 0,
            "K" | "KiB" | "k" => 10,
            "M" | "MiB" => 20,
            "G" | "GiB" => 30,
            _ => u32::MAX,
        };
        match number.parse::<u64>() {
            Ok(n) if shift != u32::MAX && n > 0 => Ok(crate::worktree::SnapshotLimits {
                max_file_bytes: n << shift,
                max_files: self.max_files.max(1),
                leave_out: self.leave_out.clone(),
            }),
            _ => Err(Error::Invalid(format!(
                "[snapshot] max_file_size = \"{text}\": write a size like \"10MiB\", \"512KiB\" or a number of bytes"
            ))),
        }
    }
}

/// `[tests]`: how the tester runs the repository's tests.
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TestsConfig {
    /// The command that runs the whole suite (`sh -c`, from the repository root) instead of
    /// the detected one; it makes the file need trust.
    pub command: Option<String>,
}

/// `[session]`: how sessions start.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SessionConfig {
    /// The pipeline `start` runs without `--pipeline`.
    pub pipeline: String,
    /// Whether supervisor checkpoints are dispatched (`--no-supervision` overrides).
    pub supervision: bool,
    /// At most this many tasks run at once.
    pub max_parallel: u32,
    /// What happens when every task is done: `interactive` (ask on a terminal, else keep),
    /// `archive`, `keep` or `export`.
    pub completion: String,
    /// Whether an export carries the spec documents (under `docs/tlv4/<SID>/`).
    pub export_spec: bool,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            pipeline: "full-lifecycle".into(),
            supervision: true,
            max_parallel: 3,
            completion: "interactive".into(),
            export_spec: true,
        }
    }
}

impl Config {
    /// The configuration of the working tree at `root`: its `.tlv4.toml` (or the defaults),
    /// then the user's own values from git config (`tlv4.*`, see [`Config::apply_git`]).
    pub fn load(root: &Path) -> Result<Config> {
        let path = root.join(FILE);
        let mut config = match std::fs::read_to_string(&path) {
            Ok(text) => Config::parse(&path.display().to_string(), &text)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Config::default(),
            Err(e) => return Err(Error::io(format!("cannot read {}", path.display()), e)),
        };
        let values =
            crate::git::run(root, &["config", "--get-regexp", r"^tlv4\."]).unwrap_or_default();
        config.apply_git(&values)?;
        Ok(config)
    }

    /// Applies per-user values, as `git config --get-regexp '^tlv4\.'` prints them, over the
    /// file's: `tlv4.pipeline`, `tlv4.supervision`, `tlv4.maxParallel`, `tlv4.completion`
    /// replace the `[session]` keys; each `tlv4.agent` (`NAME` or `ROLE=NAME`) chooses an
    /// agent as `--agent` would, under the command line's. Other `tlv4.*` keys belong to
    /// other parts (`tlv4.trusted`, `tlv4.hooksPath`) and are left alone.
    pub fn apply_git(&mut self, values: &str) -> Result<()> {
        for line in values.lines() {
            let (key, value) = line.split_once(' ').unwrap_or((line, ""));
            let value = value.trim();
            let bad = |what: &str| {
                Error::Invalid(format!(
                    "git config {key}: `{value}` is not {what} (see `git config --show-origin {key}`)"
                ))
            };
            // git prints keys in lower case.
            match key.to_ascii_lowercase().as_str() {
                "tlv4.pipeline" => self.session.pipeline = value.to_owned(),
                "tlv4.supervision" => {
                    self.session.supervision = match value {
                        "true" | "yes" | "on" | "1" => true,
                        "false" | "no" | "off" | "0" => false,
                        _ => return Err(bad("a boolean")),
                    }
                }
                "tlv4.maxparallel" => {
                    self.session.max_parallel = value
                        .parse()
                        .ok()
                        .filter(|n| *n >= 1)
                        .ok_or_else(|| bad("a number of at least 1"))?;
                }
                "tlv4.completion" => self.session.completion = value.to_owned(),
                "tlv4.agent" if !value.is_empty() => self.user_agents.push(value.to_owned()),
                "tlv4.agent" => return Err(bad("an agent (NAME or ROLE=NAME)")),
                _ => {}
            }
        }
        Ok(())
    }

    /// Parses `text`, naming `file` in errors.
    pub fn parse(file: &str, text: &str) -> Result<Config> {
        toml::from_str(text).map_err(|e| Error::Config {
            file: file.to_owned(),
            line: e.span().map_or(1, |s| {
                text[..s.start.min(text.len())].matches('\n').count() + 1
            }),
            message: e.message().trim().to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_example_parses_and_matches_the_defaults() {
        let text = include_str!("../.tlv4.toml.example");
        assert_eq!(
            Config::parse(".tlv4.toml.example", text).unwrap(),
            Config::default()
        );
    }

    #[test]
    fn per_user_git_config_values_override_the_file() {
        let mut c = Config::parse("x.toml", "[session]\nmax_parallel = 2\n").unwrap();
        c.apply_git(
            "tlv4.maxparallel 6\ntlv4.completion archive\ntlv4.supervision false\n\
             tlv4.agent executor=claude\ntlv4.agent writer=gemini\ntlv4.trusted abc\ntlv4.hookspath /x\n",
        )
        .unwrap();
        assert_eq!(c.session.max_parallel, 6);
        assert_eq!(c.session.completion, "archive");
        assert!(!c.session.supervision);
        assert_eq!(c.user_agents, ["executor=claude", "writer=gemini"]);
        let e = Config::default()
            .apply_git("tlv4.maxparallel lots\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("git config tlv4.maxparallel: `lots` is not a number"),
            "{e}"
        );
        let e = Config::default()
            .apply_git("tlv4.supervision maybe\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("is not a boolean"), "{e}");
    }

    #[test]
    fn unknown_keys_name_file_line_and_key() {
        let err = Config::parse(
            "x.toml",
            "[session]\npipeline = \"spec-only\"\nsupervisoin = false\n",
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("x.toml:3:") && text.contains("supervisoin"),
            "{text}"
        );
        let err = Config::parse("x.toml", "[session]\nsupervision = \"yes\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("x.toml:2:"), "{err}");
    }
}
