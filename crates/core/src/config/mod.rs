//! `.tlv4.toml`: per-repository settings. Unknown keys are errors naming file, line and key.

pub mod agents;
pub mod budget;

use std::path::Path;

use crate::error::{Error, Result};
use crate::model::Completion;

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
    pub agents: std::collections::BTreeMap<String, agents::AgentSpec>,
    /// Agents per role (`default`, `executor`, …), one or a fail-over list; `builtin` when
    /// unset.
    #[serde(default)]
    pub roles: std::collections::BTreeMap<String, budget::AgentList>,
    /// Agents of the discuss perspectives.
    #[serde(default)]
    pub discuss: agents::DiscussConfig,
    /// What a snapshot of a code task's worktree takes.
    #[serde(default)]
    pub snapshot: SnapshotConfig,
    /// How the tester runs the tests.
    #[serde(default)]
    pub tests: TestsConfig,
    /// How checkouts get the project's environment.
    #[serde(default)]
    pub environment: EnvironmentConfig,
    /// How agents are confined.
    #[serde(default)]
    pub sandbox: SandboxConfig,
    /// What a session may spend.
    #[serde(default)]
    pub budget: budget::BudgetConfig,
    /// Prices per million tokens by model, for agents that report no dollars.
    #[serde(default)]
    pub prices: std::collections::BTreeMap<String, budget::Price>,
    /// How usage limits are waited out.
    #[serde(default)]
    pub limits: budget::LimitsConfig,
    /// Several candidates of every code task (`[best_of]`).
    #[serde(default)]
    pub best_of: BestOfConfig,
    /// `git config tlv4.agent` values (`NAME` or `ROLE=NAME`), the user's own choice of
    /// agents: applied over `[roles]`, under `--agent`.
    #[serde(skip)]
    pub user_agents: Vec<String>,
    /// `git config tlv4.hooksPath`: where the hooks are, instead of `.git/tlv4/hooks`.
    #[serde(skip)]
    pub hooks_path: Option<String>,
    /// `git config --local tlv4.trusted`: the record of the last `git tlv4 trust` in this
    /// repository, as stored (the repository's own config only: a record in the user's or
    /// the system's config trusts nothing).
    #[serde(skip)]
    pub trust_record: Option<String>,
    /// Where each value that was set came from, for errors about it.
    #[serde(skip)]
    pub origins: Origins,
}

/// Where the values came from: the file (its name and text, so that an error can name the
/// line of any key) and the keys git config replaced (dotted key, like
/// `session.max_parallel`, to the git config key). Two configurations with the same values
/// are equal wherever the values came from.
#[derive(Debug, Clone, Default)]
pub struct Origins {
    file: Option<(String, String)>,
    git: std::collections::BTreeMap<String, String>,
}

impl PartialEq for Origins {
    fn eq(&self, _: &Origins) -> bool {
        true
    }
}

/// The dotted path of the key whose name or value holds byte `at` of TOML `text`
/// (`session.max_parallel`), for an error the parser reports by position only.
fn key_at(text: &str, at: usize) -> Option<String> {
    use toml::de::{DeTable, DeValue};
    fn walk(table: &DeTable, at: usize, prefix: &str) -> Option<String> {
        for (k, v) in table.iter() {
            let name = format!("{prefix}{}", k.get_ref());
            if k.span().contains(&at) {
                return Some(name);
            }
            // A table's span may be its header only: its keys are searched whatever it says.
            if let DeValue::Table(inner) = v.get_ref() {
                if let Some(found) = walk(inner, at, &format!("{name}.")) {
                    return Some(found);
                }
            } else if v.span().contains(&at) {
                return Some(name);
            }
        }
        None
    }
    match DeTable::parse(text) {
        Ok(doc) => walk(doc.get_ref(), at, ""),
        // Unparsable (a duplicate key): the key written on the line, if the line has one.
        Err(_) => {
            let start = text[..at.min(text.len())].rfind('\n').map_or(0, |i| i + 1);
            let line = text[start..].lines().next()?;
            let key = line.split_once('=')?.0.trim();
            let plain = |c: char| c.is_ascii_alphanumeric() || "_-.\"".contains(c);
            (!key.is_empty() && key.chars().all(plain)).then(|| key.to_owned())
        }
    }
}

/// The 1-based line of the key at `path` (`["session", "max_parallel"]`) in TOML `text`,
/// and its value as written when that is one line.
pub fn line_of(text: &str, path: &[&str]) -> Option<(usize, Option<String>)> {
    use toml::de::{DeTable, DeValue};
    let doc = DeTable::parse(text).ok()?;
    let mut table: &DeTable = doc.get_ref();
    let mut found = None;
    for (i, key) in path.iter().enumerate() {
        let (k, v) = table.iter().find(|(k, _)| k.get_ref().as_ref() == *key)?;
        found = Some((k.span().start, v.span()));
        if i + 1 < path.len() {
            match v.get_ref() {
                DeValue::Table(t) => table = t,
                _ => return None,
            }
        }
    }
    let (at, value) = found?;
    let line = text[..at.min(text.len())].matches('\n').count() + 1;
    let value = text
        .get(value)
        .map(str::trim)
        .filter(|v| !v.is_empty() && !v.contains('\n'))
        .map(str::to_owned);
    Some((line, value))
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
        let d = SnapshotLimits::default();
        SnapshotConfig {
            max_file_size: format!("{}MiB", d.max_file_bytes >> 20),
            max_files: d.max_files,
            leave_out: d.leave_out,
        }
    }
}

impl SnapshotConfig {
    /// The limits, or why `max_file_size` is not a size.
    pub fn limits(&self) -> Result<SnapshotLimits> {
        Ok(SnapshotLimits {
            max_file_bytes: parse_size(&self.max_file_size)?,
            max_files: self.max_files.max(1),
            leave_out: self.leave_out.clone(),
        })
    }
}

/// A size as the configuration writes it, in bytes: a number of bytes, or one with a binary
/// unit (`512KiB`, `10MiB`, `20GiB`, `1TiB`; `K`, `M`, `G`, `T` alone mean the same). Zero,
/// and what does not fit in 64 bits, are not sizes.
pub fn parse_size(text: &str) -> Result<u64> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let shift = match unit.trim() {
        "" | "B" => Some(0),
        "K" | "KiB" | "k" => Some(10),
        "M" | "MiB" => Some(20),
        "G" | "GiB" => Some(30),
        "T" | "TiB" => Some(40),
        _ => None,
    };
    match (number.parse::<u64>(), shift) {
        (Ok(n), Some(shift)) if n > 0 => n.checked_mul(1 << shift),
        _ => None,
    }
    .ok_or_else(|| {
        Error::Invalid(format!(
            "not a size: write one like \"10MiB\", \"512KiB\" or a number of bytes (read \"{text}\")"
        ))
    })
}

/// `[tests]`: how the tester runs the repository's tests.
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TestsConfig {
    /// The command that runs the whole suite (`sh -c`, from the repository root) instead of
    /// the detected one; it makes the file need trust.
    pub command: Option<String>,
}

/// `[environment]`: how a checkout gets the project's environment before agents or tests
/// run in it, and how much disk the kept checkouts may use.
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EnvironmentConfig {
    /// Commands (`sh -c`, from the checkout root, in order) that prepare a checkout instead of
    /// the detected ones; they make the file need trust.
    pub setup: Option<Vec<String>>,
    /// How long one setup command may run (`"20m"`), else 20 minutes.
    pub timeout: Option<String>,
    /// The disk the kept checkouts of this repository may use (`"20GiB"`); the least recently
    /// used idle ones are removed beyond it.
    pub max_disk: Option<String>,
}

/// `[sandbox]`: how agents are confined (see [`crate::sandbox`]).
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SandboxConfig {
    /// Refuse to run agents that start programs unless the kernel gives full protection.
    pub required: bool,
    /// Whether the agents of code tasks get their CLI's shell where the sandbox is full (the
    /// default); `false` keeps them without one. Decided at `start` and kept with the session.
    pub shell: bool,
}

impl Default for SandboxConfig {
    fn default() -> SandboxConfig {
        SandboxConfig {
            required: false,
            shell: true,
        }
    }
}

impl SandboxConfig {
    /// Whether a session starting now runs with shell on: where this kernel's sandbox is full
    /// and the configuration does not say otherwise.
    pub fn shell_on(&self) -> bool {
        self.shell && crate::sandbox::level().active()
    }
}

/// How long one setup command may run when `[environment] timeout` is not set.
pub const SETUP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20 * 60);

impl EnvironmentConfig {
    /// The commands of `setup`, or why they are not a list of commands.
    pub fn setup(&self) -> Result<Option<&[String]>> {
        let Some(commands) = &self.setup else {
            return Ok(None);
        };
        if commands.is_empty() {
            return Err(Error::Invalid(
                "must list at least one command (leave `setup` out to use the detected setup)"
                    .into(),
            ));
        }
        if let Some(n) = commands.iter().position(|c| c.trim().is_empty()) {
            return Err(Error::Invalid(format!(
                "command {} of {} is empty",
                n + 1,
                commands.len()
            )));
        }
        Ok(Some(commands))
    }

    /// How long one setup command may run ([`SETUP_TIMEOUT`] unless set), or why `timeout`
    /// is not a duration.
    pub fn timeout(&self) -> Result<std::time::Duration> {
        self.timeout
            .as_deref()
            .map_or(Ok(SETUP_TIMEOUT), crate::process::duration::parse_duration)
    }

    /// The disk the kept checkouts may use, in bytes (`None`: no bound set), or why
    /// `max_disk` is not a size.
    pub fn max_disk(&self) -> Result<Option<u64>> {
        self.max_disk.as_deref().map(parse_size).transpose()
    }
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
    pub completion: Completion,
    /// Whether an export carries the spec documents (under `docs/tlv4/<SID>/`).
    pub export_spec: bool,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            pipeline: "full-lifecycle".into(),
            supervision: true,
            max_parallel: 3,
            completion: Completion::Interactive,
            export_spec: true,
        }
    }
}

/// The bytes of the file at `path`, `None` when there is none; an unreadable file is a user
/// error naming it.
pub fn read_bytes(path: &Path) -> Result<Option<Vec<u8>>> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(unreadable(path, &e)),
    }
}

/// The error for a file of the repository's configuration that `e` kept from being read.
pub fn unreadable(path: &Path, e: &std::io::Error) -> Error {
    let problem = match e.kind() {
        std::io::ErrorKind::NotADirectory => return file_in_the_way(path),
        std::io::ErrorKind::IsADirectory => {
            "is a directory, where git tlv4 reads a file".to_owned()
        }
        std::io::ErrorKind::PermissionDenied => "cannot be read: permission denied".to_owned(),
        _ => format!("cannot be read: {e}"),
    };
    Error::UserFile {
        path: path.to_owned(),
        problem,
        hint: None,
    }
}

/// `bytes`, the content of `path`, as text; an error naming the file and line otherwise.
pub fn utf8<'b>(path: &Path, bytes: &'b [u8]) -> Result<&'b str> {
    std::str::from_utf8(bytes).map_err(|e| {
        let at = e.valid_up_to();
        let line = bytes[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        Error::UserFile {
            path: path.to_owned(),
            problem: format!(
                "line {line}: is not UTF-8 text (byte {} of the file)",
                at + 1
            ),
            hint: Some("save it as UTF-8".to_owned()),
        }
    })
}

/// The error for `path`, one of whose directories is a file (`.tlv4`, `.tlv4/specs`, …).
pub fn file_in_the_way(path: &Path) -> Error {
    let file = path
        .ancestors()
        .skip(1)
        .find(|a| a.is_file())
        .unwrap_or(path);
    Error::UserFile {
        path: file.to_owned(),
        problem: format!(
            "is a file, where git tlv4 looks for the directory that holds `{}`",
            path.display()
        ),
        hint: Some(format!(
            "git tlv4 keeps the repository's own specs under `.tlv4/specs/`: move `{}` out of the way",
            file.display()
        )),
    }
}

impl Config {
    /// An error about the value of `key` (dotted: `session.max_parallel`,
    /// `roles.executor`), naming where it was set: `FILE:LINE: [session] max_parallel = 0:
    /// MESSAGE`, or the git config key that replaced the file's value.
    pub fn value_error(&self, key: &str, message: impl std::fmt::Display) -> Error {
        let (table, name) = key.rsplit_once('.').unwrap_or(("", key));
        if let Some(git_key) = self.origins.git.get(key) {
            return Error::Invalid(format!(
                "git config {git_key}: {message} (see `git config --show-origin {git_key}`)"
            ));
        }
        let path: Vec<&str> = key.split('.').collect();
        let at = self
            .origins
            .file
            .as_ref()
            .and_then(|(file, text)| Some((file, line_of(text, &path)?)));
        match at {
            Some((file, (line, value))) => Error::Config {
                file: file.clone(),
                line,
                message: match value {
                    Some(value) => format!("[{table}] {name} = {value}: {message}"),
                    None => format!("[{table}] {name}: {message}"),
                },
            },
            None => Error::Invalid(format!("[{table}] {name}: {message}")),
        }
    }

    /// Whether `key` (dotted, as for [`Config::value_error`]) was set by the file or by git
    /// config, rather than left at its default.
    pub fn is_set(&self, key: &str) -> bool {
        let path: Vec<&str> = key.split('.').collect();
        self.origins.git.contains_key(key)
            || self
                .origins
                .file
                .as_ref()
                .is_some_and(|(_, text)| line_of(text, &path).is_some())
    }

    /// Checks the values no type can: ranges, names, sizes.
    pub fn validate(&self) -> Result<()> {
        if self.session.max_parallel == 0 {
            return Err(self.value_error("session.max_parallel", "must be at least 1"));
        }
        if let Completion::Other(name) = &self.session.completion {
            return Err(self.value_error(
                "session.completion",
                format!(
                    "unknown completion action `{name}`; use one of {}",
                    Completion::known_names().join(", ")
                ),
            ));
        }
        if let Err(Error::Invalid(message)) = self.snapshot.limits() {
            return Err(self.value_error("snapshot.max_file_size", message));
        }
        if self.snapshot.max_files == 0 {
            return Err(self.value_error("snapshot.max_files", "must be at least 1"));
        }
        let environment = [
            ("environment.setup", self.environment.setup().err()),
            ("environment.timeout", self.environment.timeout().err()),
            ("environment.max_disk", self.environment.max_disk().err()),
        ];
        if let Some((key, message)) = self.budget.invalid() {
            return Err(self.value_error(&key, message));
        }
        if let Err(message) = self.best_of.read() {
            return Err(self.value_error("best_of", message));
        }
        if let Err(Error::Invalid(message)) = self.limits.wait_up_to() {
            return Err(self.value_error("limits.wait_up_to", message));
        }
        for (key, error) in environment {
            if let Some(Error::Invalid(message)) = error {
                return Err(self.value_error(key, message));
            }
        }
        Ok(())
    }

    /// Applies per-user values, as `git config --show-scope --get-regexp '^tlv4\.'` prints
    /// them (the scope and a tab before each line may be left out), over the file's:
    /// `tlv4.pipeline`, `tlv4.supervision`, `tlv4.maxParallel`, `tlv4.completion` replace the
    /// `[session]` keys; each `tlv4.agent` (`NAME` or `ROLE=NAME`) chooses an agent as
    /// `--agent` would, under the command line's. `tlv4.hooksPath` and the trust record
    /// `tlv4.trusted` (from the `local` scope only) are kept for the parts that use them, so
    /// that one `git config` run reads all of them; other `tlv4.*` keys are left alone.
    pub fn apply_git(&mut self, values: &str) -> Result<()> {
        for line in values.lines() {
            let (scope, line) = line.split_once('\t').unwrap_or(("", line));
            let (key, value) = line.split_once(' ').unwrap_or((line, ""));
            let value = value.trim();
            let bad = |what: &str| {
                Error::Invalid(format!(
                    "git config {key}: `{value}` is not {what} (see `git config --show-origin {key}`)"
                ))
            };
            // git prints keys in lower case; errors name them as documented.
            let mut from_git = |name: &str, documented: &str| {
                self.origins
                    .git
                    .insert(name.to_owned(), documented.to_owned());
            };
            match key.to_ascii_lowercase().as_str() {
                "tlv4.pipeline" => from_git("session.pipeline", "tlv4.pipeline"),
                "tlv4.supervision" => from_git("session.supervision", "tlv4.supervision"),
                "tlv4.maxparallel" => from_git("session.max_parallel", "tlv4.maxParallel"),
                "tlv4.completion" => from_git("session.completion", "tlv4.completion"),
                _ => {}
            }
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
                "tlv4.completion" => self.session.completion = value.into(),
                "tlv4.agent" if !value.is_empty() => self.user_agents.push(value.to_owned()),
                "tlv4.agent" => return Err(bad("an agent (NAME or ROLE=NAME)")),
                "tlv4.hookspath" => {
                    self.hooks_path = Some(value.to_owned()).filter(|v| !v.is_empty());
                }
                "tlv4.trusted" if scope == "local" => {
                    self.trust_record = Some(value.to_owned()).filter(|v| !v.is_empty());
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Parses `text`, naming `file` in errors.
    pub fn parse(file: &str, text: &str) -> Result<Config> {
        let mut config: Config = toml::from_str(text).map_err(|e| {
            let message = e.message().trim();
            Error::Config {
                file: file.to_owned(),
                line: e.span().map_or(1, |s| {
                    text[..s.start.min(text.len())].matches('\n').count() + 1
                }),
                message: match e.span().and_then(|s| key_at(text, s.start)) {
                    // A message that names the key already (an unknown field) is kept.
                    Some(key)
                        if !message
                            .contains(&format!("`{}`", key.rsplit('.').next().unwrap_or(&key))) =>
                    {
                        format!("`{key}`: {message}")
                    }
                    _ => message.to_owned(),
                },
            }
        })?;
        config.origins.file = Some((file.to_owned(), text.to_owned()));
        Ok(config)
    }
}

/// The names of directories whose new files a snapshot leaves out by default: what package
/// managers, build tools and interpreters generate (`npm install`, `cargo build`, a virtual
/// environment, Python's bytecode caches, bundler output). Only where the base commit has no
/// directory of that path: a tracked `build/` is the project's own and taken like any other.
pub const GENERATED_DIRS: &[&str] = &[
    "node_modules",
    "target",
    ".venv",
    "venv",
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    ".tox",
    ".gradle",
    ".next",
    "dist",
    "build",
];

/// Limits on what one snapshot takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotLimits {
    /// The largest file taken, in bytes (default 10 MiB).
    pub max_file_bytes: u64,
    /// The most changed files taken (default 5000).
    pub max_files: usize,
    /// Directory names whose new files are left out when the base has no such directory
    /// (default [`GENERATED_DIRS`]).
    pub leave_out: Vec<String>,
}

impl Default for SnapshotLimits {
    fn default() -> Self {
        SnapshotLimits {
            max_file_bytes: 10 << 20,
            max_files: 5000,
            leave_out: GENERATED_DIRS.iter().map(|d| (*d).to_owned()).collect(),
        }
    }
}

/// `[best_of]`: `count = 3` candidates of every code task by its role's agent, or one per
/// agent of `agents = ["claude", "codex"]`; `accept_first = true` ends the others once one
/// passes every test with an APPROVE review. `start --best-of` replaces it.
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BestOfConfig {
    /// How many candidates (1 to 10).
    pub count: Option<u32>,
    /// One candidate per agent, in order.
    pub agents: Vec<String>,
    /// See [`crate::model::BestOf::accept_first`].
    pub accept_first: bool,
}

impl BestOfConfig {
    /// The table as a session's setting: `None` when it asks for no more than one candidate.
    pub fn read(&self) -> std::result::Result<Option<crate::model::BestOf>, String> {
        let mut best = match (self.count, self.agents.is_empty()) {
            (None, true) => return Ok(None),
            (Some(_), false) => {
                return Err("give `count` or `agents`, not both".to_owned());
            }
            (Some(n), true) => crate::model::BestOf::parse(&n.to_string())?,
            (None, false) => crate::model::BestOf::parse(&self.agents.join(","))?,
        };
        best.accept_first = self.accept_first;
        Ok(best.several().then_some(best))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_example_parses_and_matches_the_defaults() {
        let text = include_str!("../../../../.tlv4.toml.example");
        assert_eq!(
            Config::parse(".tlv4.toml.example", text).unwrap(),
            Config::default()
        );
    }

    #[test]
    fn one_git_config_run_gives_the_hooks_path_and_the_local_trust_record_only() {
        let mut c = Config::default();
        c.apply_git("global\ttlv4.trusted 2 .tlv4.toml=aa\nlocal\ttlv4.hookspath ~/hooks\n")
            .unwrap();
        assert_eq!(
            c.trust_record, None,
            "a record outside the repository trusts nothing"
        );
        assert_eq!(c.hooks_path.as_deref(), Some("~/hooks"));
        c.apply_git("local\ttlv4.trusted 2 .tlv4.toml=bb\nlocal\ttlv4.maxparallel 4\n")
            .unwrap();
        assert_eq!(c.trust_record.as_deref(), Some("2 .tlv4.toml=bb"));
        assert_eq!(c.session.max_parallel, 4);
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
        assert_eq!(c.session.completion, Completion::Archive);
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
    fn the_environment_section_is_checked_naming_file_line_and_key() {
        let c = Config::parse(
            "x.toml",
            "[environment]\nsetup = [\"npm ci\", \"make deps\"]\ntimeout = \"1h30m\"\nmax_disk = \"20GiB\"\n",
        )
        .unwrap();
        c.validate().unwrap();
        let env = &c.environment;
        assert_eq!(
            env.setup().unwrap(),
            Some(&["npm ci".to_owned(), "make deps".to_owned()][..])
        );
        assert_eq!(env.timeout().unwrap(), std::time::Duration::from_secs(5400));
        assert_eq!(env.max_disk().unwrap(), Some(20 << 30));
        let d = EnvironmentConfig::default();
        assert_eq!(
            (
                d.setup().unwrap(),
                d.timeout().unwrap(),
                d.max_disk().unwrap()
            ),
            (None, SETUP_TIMEOUT, None)
        );
        let error = |text: &str| {
            Config::parse("x.toml", text)
                .and_then(|c| c.validate())
                .unwrap_err()
                .to_string()
        };
        for (text, expected) in [
            (
                "[environment]\nsetup = []\n",
                "x.toml:2: [environment] setup = []: must list at least one command",
            ),
            (
                "[session]\nmax_parallel = 2\n\n[environment]\nsetup = [\n  \"npm ci\",\n  \"  \",\n]\n",
                "x.toml:5: [environment] setup: command 2 of 2 is empty",
            ),
            (
                "[environment]\ntimeout = \"soon\"\n",
                "x.toml:2: [environment] timeout = \"soon\": invalid duration `soon`",
            ),
            (
                "[environment]\nmax_disk = \"20GB\"\n",
                "x.toml:2: [environment] max_disk = \"20GB\": not a size",
            ),
            (
                "[environment]\nmax_disk = \"0\"\n",
                "x.toml:2: [environment] max_disk = \"0\": not a size",
            ),
            ("[environment]\nsetup = \"npm ci\"\n", "x.toml:2:"),
            ("[environment]\nsetpu = [\"npm ci\"]\n", "x.toml:2:"),
        ] {
            let e = error(text);
            assert!(e.starts_with(expected), "{text:?} gave {e}");
        }
    }

    #[test]
    fn the_sandbox_section_says_whether_confinement_is_required() {
        let c = Config::parse("x.toml", "[sandbox]\nrequired = true\n").unwrap();
        assert!(c.sandbox.required);
        assert!(c.sandbox.shell, "shell on unless said");
        assert!(!Config::default().sandbox.required);
        let c = Config::parse("x.toml", "[sandbox]\nshell = false\n").unwrap();
        assert!(!c.sandbox.shell && !c.sandbox.shell_on());
        let e = Config::parse("x.toml", "[sandbox]\nrequire = true\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("x.toml:2:"), "{e}");
    }

    #[test]
    fn one_size_parser_for_snapshots_and_disk_bounds() {
        assert_eq!(parse_size("512KiB").unwrap(), 512 << 10);
        assert_eq!(parse_size(" 3 M ").unwrap(), 3 << 20);
        assert_eq!(parse_size("1TiB").unwrap(), 1 << 40);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        for bad in [
            "",
            "0",
            "-1",
            "1.5GiB",
            "10 MB",
            "99999999999999999TiB",
            "GiB",
        ] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
        let snapshot = SnapshotConfig {
            max_file_size: "2TiB".into(),
            ..SnapshotConfig::default()
        };
        assert_eq!(snapshot.limits().unwrap().max_file_bytes, 2 << 40);
    }

    #[test]
    fn values_of_the_wrong_type_and_duplicate_keys_name_their_key() {
        let err = Config::parse("x.toml", "[session]\nmax_parallel = \"four\"\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "x.toml:2: `session.max_parallel`: invalid type: string \"four\", expected u32"
        );
        let err = Config::parse(
            "x.toml",
            "[review]\n[session]\nmax_parallel = 2\nmax_parallel = 3\n",
        )
        .unwrap_err()
        .to_string();
        assert!(err.starts_with("x.toml:4: `max_parallel`:"), "{err}");
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
