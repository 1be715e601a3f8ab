//! What an agent program runs with besides its argv: its home (a fresh temporary one, or the
//! one it names), its environment merged over the caller's, and where a long prompt goes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::lookup::expand_home;
use crate::error::{Error, Result};

/// The environment variable that holds the path of the prompt file.
pub const PROMPT_FILE_ENV: &str = "TLV4_PROMPT_FILE";
/// Prompts longer than this never go on the command line (Linux caps one argument at
/// 128 KiB).
pub const ARGV_PROMPT_LIMIT: usize = 100 * 1024;

/// The home (and XDG config, data, cache and state directories) an agent runs with: a fresh
/// temporary directory per run, removed afterwards, unless the agent names one.
pub struct Home {
    dir: PathBuf,
    temp: Option<tempfile::TempDir>,
}

impl Home {
    /// `configured` is the agent's `home`; `None` makes a fresh temporary one.
    pub fn new(configured: Option<&str>, base: &Path) -> Result<Home> {
        match configured {
            Some(h) => Ok(Home {
                dir: expand_home(h, base),
                temp: None,
            }),
            None => {
                let temp = tempfile::Builder::new()
                    .prefix("tlv4-agent-")
                    .tempdir()
                    .map_err(|e| Error::io("cannot create a home for the agent", e))?;
                let dir = temp.path().to_path_buf();
                for sub in [".config", ".local/share", ".cache", ".local/state"] {
                    std::fs::create_dir_all(dir.join(sub))
                        .map_err(|e| Error::io("cannot create a home for the agent", e))?;
                }
                Ok(Home {
                    dir,
                    temp: Some(temp),
                })
            }
        }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Whether it is a fresh temporary directory (ours to write config files into).
    pub fn isolated(&self) -> bool {
        self.temp.is_some()
    }

    /// `HOME`, and for an isolated home the XDG directories inside it.
    pub fn env(&self) -> Vec<(String, String)> {
        let d = |sub: &str| self.dir.join(sub).display().to_string();
        let mut env = vec![("HOME".to_owned(), self.dir.display().to_string())];
        if self.isolated() {
            env.push(("XDG_CONFIG_HOME".into(), d(".config")));
            env.push(("XDG_DATA_HOME".into(), d(".local/share")));
            env.push(("XDG_CACHE_HOME".into(), d(".cache")));
            env.push(("XDG_STATE_HOME".into(), d(".local/state")));
        }
        env
    }

    /// Writes `content` at `rel` inside the home, creating directories.
    pub fn write(&self, rel: &str, content: &str) -> Result<PathBuf> {
        let path = self.dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| Error::io(format!("cannot create {}", parent.display()), e))?;
        }
        std::fs::write(&path, content)
            .map_err(|e| Error::io(format!("cannot write {}", path.display()), e))?;
        Ok(path)
    }
}

/// Merges `extra` over `base`, later keys winning, keeping first-seen order.
pub fn merge_env(
    base: Vec<(String, String)>,
    extra: &BTreeMap<String, String>,
) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (k, v) in base.into_iter().chain(extra.clone()) {
        match out.iter_mut().find(|(key, _)| *key == k) {
            Some(slot) => slot.1 = v,
            None => out.push((k, v)),
        }
    }
    out
}
