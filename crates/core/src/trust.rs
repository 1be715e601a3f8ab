//! Trust: everything a repository supplies that runs code or changes what is checked is used
//! only after the user ran `git tlv4 trust` on that exact content (like `direnv allow`).
//!
//! The repository's configuration is [`Files`]: `.tlv4.toml` and the overrides under
//! `.tlv4/specs/` (pipelines, review rules, role instructions, templates). What trust covers
//! is a list of `(path, git blob id)` entries: those files, and every file inside the
//! repository the configuration makes run (an agent's relative `program`, a script named in
//! its `args`, the files of a `home` inside the repository). The list is kept as one record
//! in the repository's own config, `git config --local tlv4.trusted`, never pushed or cloned:
//!
//! ```text
//! 2 .tlv4.toml=<blob> bin/agent.sh=<blob> .tlv4/specs/review-rules.toml=<blob>
//! ```
//!
//! A run needs trust when it uses an agent the file defines or names that runs a program or
//! reaches an endpoint, when any override exists, and before the tester runs the
//! repository's own test command; every entry it uses must then be in the record with the
//! same blob id. The project's environment setup ([`setup`]) is covered the same way: the
//! lockfiles and manifests each step installs from, and `.tlv4.toml` when it sets
//! `[environment] setup`; only running the setup needs them trusted
//! ([`setup_allowed`]), not starting a session in a repository that has lockfiles. Names given by the user (`--agent`, `git config tlv4.agent`) are the user's
//! own choice and need no trust; the file's `[roles]` and `[discuss.perspectives]` do.
//!
//! A session pins the configuration it started with (`tlv4_store::pin`, above this crate: it
//! writes a ref): the blob ids go to `config.lock` in its pipeline folder and the content to
//! the local ref `refs/tlv4/pinned/<SID>` (a blob, so secrets in `.tlv4.toml` never reach the
//! pushed session branch); later runs read the pinned copy, not the working tree. What is here
//! only reads the repository's files and judges them, so that the agents may use it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod files;
mod setup;

pub use files::{Configuration, Files};
pub use setup::{setup_allowed, setup_items};

use files::walk;

use crate::config::agents::AgentSpec;
use crate::config::{Config, FILE};
use crate::error::{Error, Result};

/// The config key holding the trust record.
pub const KEY: &str = "tlv4.trusted";
/// Where the repository's overrides of the embedded specs live.
pub const SPECS_DIR: &str = ".tlv4/specs";
/// The record's format version, its first word.
const VERSION: &str = "2";
/// At most this many files of an in-repository `home` are covered (the rest refuse).
const MAX_HOME_FILES: usize = 2000;

/// The git blob id of `bytes`, as the trust record and `config.lock` keep it: in
/// [`crate::git::OBJECT_FORMAT`], the one the store opens (trust is judged from a working
/// tree path, without a repository handle).
pub fn blob_id(bytes: &[u8]) -> String {
    crate::git::blob_hex(crate::git::OBJECT_FORMAT, bytes)
}

/// Whether an agent needs trust: it runs a program or sends code to an endpoint (every
/// driver but `builtin` and `replay`).
pub fn needs_trust(agent: &AgentSpec) -> bool {
    agent.driver != "builtin" && agent.driver != "replay"
}

/// One thing trust covers: a file of the repository, its blob id, and why it is covered.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// Path relative to the repository root.
    pub path: String,
    /// Its git blob id.
    pub id: String,
    /// What it is (`configuration`, `override`, `program of agent mine`, …).
    pub why: String,
}

/// The agents the configuration defines or names that need trust: `[agents.*]` tables with
/// such a driver, and driver names in `[roles]`, `[discuss.perspectives]` or
/// `[discuss.members]` without a table
/// (`default = "claude"`), with the spec each runs with.
pub fn configured_agents(config: &Config) -> Vec<(String, AgentSpec)> {
    let mut out: BTreeMap<String, AgentSpec> = config
        .agents
        .iter()
        .filter(|(_, a)| needs_trust(a))
        .map(|(n, a)| (n.clone(), a.clone()))
        .collect();
    for name in config
        .roles
        .values()
        .flat_map(|l| l.names())
        .chain(config.discuss.perspectives.values())
        .chain(config.discuss.members.values())
    {
        if !config.agents.contains_key(name) && name != "builtin" && !name.starts_with("replay") {
            out.insert(
                name.clone(),
                AgentSpec {
                    driver: name.clone(),
                    ..AgentSpec::default()
                },
            );
        }
    }
    out.into_iter().collect()
}

/// What trust must cover for a run that uses `agents` (from the configuration) with the
/// configuration `files`; `root` is the working tree the agents' programs are found in.
pub fn needed(
    root: &Path,
    files: &Files,
    config: &Config,
    agents: &[(String, AgentSpec)],
) -> Result<Vec<Item>> {
    let mut items = Vec::new();
    let mut why: Vec<String> = Vec::new();
    if !agents.is_empty() {
        let names: Vec<String> = agents
            .iter()
            .map(|(n, a)| format!("{n} ({})", a.driver))
            .collect();
        why.push(format!(
            "names agents that run programs: {}",
            names.join(", ")
        ));
    }
    if let Some(c) = &config.tests.command {
        why.push(format!("sets the test command `{c}`"));
    }
    if let Some(commands) = &config.environment.setup {
        why.push(setup::configured_why(commands));
    }
    if !why.is_empty()
        && let Some(b) = files.get(FILE)
    {
        items.push(Item {
            path: FILE.to_owned(),
            id: blob_id(b),
            why: why.join("; "),
        });
    }
    for (name, spec) in agents {
        items.extend(agent_files(root, name, spec)?);
    }
    for (path, b) in files.overrides() {
        items.push(Item {
            path: path.to_owned(),
            id: blob_id(b),
            why: "override of the embedded specs".into(),
        });
    }
    Ok(items)
}

/// The files inside the repository at `root` that agent `name` runs or reads as its home.
fn agent_files(root: &Path, name: &str, spec: &AgentSpec) -> Result<Vec<Item>> {
    let mut items = Vec::new();
    let Ok(root_real) = root.canonicalize() else {
        return Ok(items);
    };
    let inside = |p: &Path| -> Option<String> {
        let real = p.canonicalize().ok()?;
        let rel = real.strip_prefix(&root_real).ok()?;
        let s = rel.to_str()?.replace('\\', "/");
        (!s.is_empty() && !s.starts_with(".git/") && s != ".git").then_some(s)
    };
    let add = |p: PathBuf, why: String, items: &mut Vec<Item>| -> Result<()> {
        let Some(rel) = inside(&p) else {
            return Ok(());
        };
        if p.is_dir() {
            let mut found = BTreeMap::new();
            walk(&root_real, &rel, &mut found, MAX_HOME_FILES)?;
            for (path, b) in found {
                items.push(Item {
                    id: blob_id(&b),
                    path,
                    why: why.clone(),
                });
            }
        } else if p.is_file() {
            let b = std::fs::read(&p)
                .map_err(|e| Error::io(format!("cannot read {}", p.display()), e))?;
            items.push(Item {
                path: rel,
                id: blob_id(&b),
                why,
            });
        }
        Ok(())
    };
    let expand = |p: &str| crate::process::lookup::expand_home(p, root);
    if let Some(program) = spec.program.as_deref().filter(|p| p.contains('/')) {
        add(
            expand(program),
            format!("program of agent {name}"),
            &mut items,
        )?;
    }
    for arg in &spec.args {
        if arg.is_empty() || arg.starts_with('-') || arg.contains('{') {
            continue;
        }
        let p = expand(arg);
        if p.is_file() {
            add(p, format!("file in the args of agent {name}"), &mut items)?;
        }
    }
    if let Some(home) = &spec.home {
        add(expand(home), format!("home of agent {name}"), &mut items)?;
    }
    Ok(items)
}

/// The trust record: trusted blob id by path.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Record {
    /// Blob id by path.
    pub entries: BTreeMap<String, String>,
}

impl Record {
    /// The record's text, as stored in git config.
    pub fn format(&self) -> String {
        let mut out = VERSION.to_owned();
        for (p, id) in &self.entries {
            out.push(' ');
            out.push_str(&escape(p));
            out.push('=');
            out.push_str(id);
        }
        out
    }

    /// Reads a stored record; `None` for one of an older format.
    pub fn parse(text: &str) -> Option<Record> {
        let mut words = text.split_whitespace();
        if words.next() != Some(VERSION) {
            return None;
        }
        let entries = words
            .map(|w| {
                let (p, id) = w.rsplit_once('=')?;
                Some((unescape(p), id.to_owned()))
            })
            .collect::<Option<_>>()?;
        Some(Record { entries })
    }
}

fn escape(path: &str) -> String {
    let mut out = String::new();
    for c in path.chars() {
        if c <= ' ' || c == '%' || c == '=' || c == '\u{7f}' {
            let mut buf = [0; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn unescape(s: &str) -> String {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && let Some(v) = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// What the stored record says.
#[derive(Debug, Clone, PartialEq)]
pub enum Stored {
    /// No `trust` ran in this repository.
    None,
    /// A record of an older git-tlv4, which trusted `.tlv4.toml` only.
    Old,
    /// A record.
    Record(Record),
}

impl Stored {
    /// The record `config` was read with (its `trust_record`, from the repository's own git
    /// config), so that a command reads it once with the rest of its configuration.
    pub fn of(config: &Config) -> Stored {
        match config.trust_record.as_deref().map(str::trim) {
            None | Some("") => Stored::None,
            Some(t) => Record::parse(t).map_or(Stored::Old, Stored::Record),
        }
    }

    /// Whether the repository is trusted at all: `git tlv4 trust` ran here. Running the
    /// repository's own test command needs it.
    pub fn trusted(&self) -> bool {
        matches!(self, Stored::Record(_))
    }
}

/// The record of the last `trust` in the repository at `root`, read on its own (for
/// `trust --show`; a run reads it with its configuration, [`Stored::of`]).
pub fn stored(root: &Path) -> Stored {
    Stored::of(&Config {
        trust_record: crate::git::run(root, &["config", "--local", "--get", KEY]).ok(),
        ..Config::default()
    })
}

/// How each of `items` stands against the stored record: `None` when trusted, else why not.
pub fn judge<'a>(stored: &Stored, items: &'a [Item]) -> Vec<(&'a Item, Option<&'static str>)> {
    items
        .iter()
        .map(|i| {
            let state = match stored {
                Stored::None => Some("not trusted yet"),
                Stored::Old => Some("trusted by an older git-tlv4 that covered .tlv4.toml only"),
                Stored::Record(r) => match r.entries.get(&i.path) {
                    Some(id) if *id == i.id => None,
                    Some(_) => Some("changed since you trusted it"),
                    None => Some("not trusted yet"),
                },
            };
            (i, state)
        })
        .collect()
}

/// Each of `items` that is not trusted in the `stored` record: `path (why): problem`.
fn problems(stored: &Stored, items: &[Item]) -> Vec<String> {
    judge(stored, items)
        .into_iter()
        .filter_map(|(i, s)| s.map(|s| format!("{} ({}): {s}", i.path, i.why)))
        .collect()
}

/// Whether everything in `items` is trusted: each is in the `stored` record with its blob id.
pub fn check(stored: &Stored, items: &[Item]) -> Result<()> {
    let bad = problems(stored, items);
    if bad.is_empty() {
        return Ok(());
    }
    Err(Error::state(
        format!(
            "this repository supplies what would run or change what is checked, and it is not trusted:\n  {}",
            bad.join("\n  ")
        ),
        Some(
            "read it (`git tlv4 trust --show`), then run `git tlv4 trust` to allow exactly this content"
                .to_owned(),
        ),
    ))
}

/// Everything the working tree at `root` would make trust cover: its configuration files,
/// the in-repository files of every agent its configuration defines or names, and `setup`,
/// the input files of the environment setup (see [`setup_items`]).
pub fn everything(
    root: &Path,
    files: &Files,
    config: &Config,
    setup: &[Item],
) -> Result<Vec<Item>> {
    let agents = configured_agents(config);
    let mut items = needed(root, files, config, &agents)?;
    if !items.iter().any(|i| i.path == FILE)
        && let Some(b) = files.get(FILE)
    {
        items.insert(
            0,
            Item {
                path: FILE.to_owned(),
                id: blob_id(b),
                why: "configuration".into(),
            },
        );
    }
    for s in setup {
        match items.iter_mut().find(|i| i.path == s.path) {
            Some(i) => i.why = format!("{}; {}", i.why, s.why),
            None => items.push(s.clone()),
        }
    }
    Ok(items)
}

/// Trusts what the working tree at `root` holds now: the configuration `files` (which must
/// give `config`: a configuration that does not parse is not worth trusting), the files its
/// agents run, its overrides, the repository's own tests, and `setup`, the input files of the
/// environment setup. Returns what the record covers.
pub fn trust_read(
    root: &Path,
    files: &Files,
    config: &Config,
    setup: &[Item],
) -> Result<Vec<Item>> {
    let items = everything(root, files, config, setup)?;
    store_record(root, &items)?;
    Ok(items)
}

/// The record that trusts exactly `items`.
pub fn record_of(items: &[Item]) -> Record {
    Record {
        entries: items
            .iter()
            .map(|i| (i.path.clone(), i.id.clone()))
            .collect(),
    }
}

/// Stores `items` as the trust record of `root`.
pub fn store_record(root: &Path, items: &[Item]) -> Result<()> {
    crate::git::run(
        root,
        &["config", "--local", KEY, &record_of(items).format()],
    )?;
    Ok(())
}

/// Forgets any trust.
pub fn revoke(root: &Path) -> Result<bool> {
    if stored(root) == Stored::None {
        return Ok(false);
    }
    crate::git::run(root, &["config", "--local", "--unset", KEY])?;
    Ok(true)
}

/// Whether an environment variable's value should not be shown.
pub fn looks_secret(key: &str) -> bool {
    let k = key.to_ascii_uppercase();
    [
        "KEY",
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "CREDENTIAL",
        "AUTH",
        "COOKIE",
        "SESSION",
    ]
    .iter()
    .any(|w| k.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_record_round_trips_odd_paths() {
        let r = Record {
            entries: [
                (".tlv4.toml".to_owned(), "ab".to_owned()),
                ("bin/my agent=1%.sh".to_owned(), "cd".to_owned()),
                ("bin/é".to_owned(), "ef".to_owned()),
            ]
            .into_iter()
            .collect(),
        };
        let text = r.format();
        assert!(text.starts_with("2 .tlv4.toml=ab "), "{text}");
        assert!(text.contains("bin/my%20agent%3D1%25.sh=cd"), "{text}");
        assert_eq!(Record::parse(&text), Some(r));
        // The blob id alone (the first format) is an old record.
        assert_eq!(Record::parse("0123abcd"), None);
    }

    #[test]
    fn presets_named_in_roles_need_trust() {
        let c = Config::parse(
            "t.toml",
            "[agents.mine]\ndriver = \"builtin\"\n[roles]\ndefault = \"claude\"\nwriter = \"mine\"\n\
             [discuss.perspectives]\nrisk = \"gemini\"\nproduct = \"builtin\"\n",
        )
        .unwrap();
        let names: Vec<String> = configured_agents(&c).into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["claude", "gemini"]);
    }

    #[test]
    fn trust_covers_the_repository_files_an_agent_runs_and_nothing_outside() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for (p, t) in [
            ("bin/agent.sh", "#!/bin/sh\n"),
            ("scripts/helper.py", "print(1)\n"),
            ("home/settings.json", "{}\n"),
            ("home/deep/x", "x\n"),
            (".tlv4/specs/roles/executor.md", "Do it.\n"),
        ] {
            std::fs::create_dir_all(root.join(p).parent().unwrap()).unwrap();
            std::fs::write(root.join(p), t).unwrap();
        }
        let spec = AgentSpec {
            driver: "command".into(),
            program: Some("bin/agent.sh".into()),
            args: vec![
                "scripts/helper.py".into(),
                "--flag".into(),
                "{prompt_file}".into(),
            ],
            home: Some("home".into()),
            ..AgentSpec::default()
        };
        let outside = AgentSpec {
            driver: "command".into(),
            program: Some("/bin/sh".into()),
            ..AgentSpec::default()
        };
        let files = Files::read(root).unwrap();
        let config = Config::default();
        let agents = vec![("mine".to_owned(), spec), ("sys".to_owned(), outside)];
        let items = needed(root, &files, &config, &agents).unwrap();
        let paths: Vec<&str> = items.iter().map(|i| i.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "bin/agent.sh",
                "scripts/helper.py",
                "home/deep/x",
                "home/settings.json",
                ".tlv4/specs/roles/executor.md"
            ]
        );
        assert_eq!(items[0].id, blob_id(b"#!/bin/sh\n"));
        assert_eq!(items[0].why, "program of agent mine");
    }

    #[test]
    fn a_configured_setup_makes_the_file_needed_and_everything_takes_the_setup_inputs() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let text = "[environment]\nsetup = [\"make deps\"]\n";
        std::fs::write(root.join(FILE), text).unwrap();
        let files = Files::read(root).unwrap();
        let config = Config::parse(FILE, text).unwrap();
        let run = needed(root, &files, &config, &[]).unwrap();
        assert_eq!(run.len(), 1);
        assert_eq!(
            (run[0].path.as_str(), run[0].why.as_str()),
            (FILE, "sets the environment setup `make deps`")
        );
        let setup = |path: &str, why: &str| Item {
            path: path.into(),
            id: blob_id(path.as_bytes()),
            why: why.into(),
        };
        let items = everything(
            root,
            &files,
            &config,
            &[setup(
                "package-lock.json",
                "environment setup `make deps` at the root (x)",
            )],
        )
        .unwrap();
        let paths: Vec<&str> = items.iter().map(|i| i.path.as_str()).collect();
        assert_eq!(paths, [FILE, "package-lock.json"]);
        // Without the section the file needs no trust for a run, and lockfiles never do.
        let plain = Config::default();
        assert!(needed(root, &files, &plain, &[]).unwrap().is_empty());
    }

    #[test]
    fn secret_looking_keys_are_masked() {
        assert!(looks_secret("OPENAI_API_KEY") && looks_secret("gh_token"));
        assert!(!looks_secret("RUST_LOG"));
    }
}
