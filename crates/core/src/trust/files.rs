//! The repository's configuration as files: `.tlv4.toml` and `.tlv4/specs/**`, read from a
//! working tree or from a session's pinned copy, and what the rest of the tool loads from
//! them.

use std::collections::BTreeMap;
use std::path::Path;

use super::{SPECS_DIR, blob_id};
use crate::config::{Config, FILE};
use crate::error::{Error, Result};

/// The repository's configuration: `.tlv4.toml` and every file under `.tlv4/specs/`, by
/// path relative to the root (`/`-separated), as read from a working tree or pinned in a
/// session.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Files {
    files: BTreeMap<String, Vec<u8>>,
}

impl Files {
    /// The files of the working tree at `root`.
    pub fn read(root: &Path) -> Result<Files> {
        let mut files = BTreeMap::new();
        // What the user put there is the user's to fix: an error naming the file, not 255.
        if let Some(b) = crate::config::read_bytes(&root.join(FILE))? {
            files.insert(FILE.to_owned(), b);
        }
        walk(root, SPECS_DIR, &mut files, usize::MAX)?;
        Ok(Files { files })
    }

    /// The file at `path`, if present.
    pub fn get(&self, path: &str) -> Option<&[u8]> {
        self.files.get(path).map(Vec::as_slice)
    }

    /// The file at `path` as text, naming `root/path` when it is not UTF-8.
    pub fn text(&self, path: &str) -> Result<Option<&str>> {
        self.get(path)
            .map(|b| crate::config::utf8(Path::new(path), b))
            .transpose()
    }

    /// The overrides: files under `.tlv4/specs/`.
    pub fn overrides(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.files
            .iter()
            .filter(|(p, _)| p.starts_with(&format!("{SPECS_DIR}/")))
            .map(|(p, b)| (p.as_str(), b.as_slice()))
    }

    /// The files directly in directory `dir` (`.tlv4/specs/roles`), by file name.
    pub fn in_dir<'a>(&'a self, dir: &'a str) -> impl Iterator<Item = (&'a str, &'a [u8])> {
        self.files.iter().filter_map(move |(p, b)| {
            let name = p.strip_prefix(dir)?.strip_prefix('/')?;
            (!name.contains('/')).then_some((name, b.as_slice()))
        })
    }

    /// Every file with its blob id.
    pub fn ids(&self) -> BTreeMap<String, String> {
        self.files
            .iter()
            .map(|(p, b)| (p.clone(), blob_id(b)))
            .collect()
    }

    /// Paths whose content differs between `self` and `other` (added, removed or changed).
    pub fn differences(&self, other: &Files) -> Vec<String> {
        let (a, b) = (self.ids(), other.ids());
        let mut out: Vec<String> = a
            .keys()
            .chain(b.keys())
            .filter(|p| a.get(*p) != b.get(*p))
            .cloned()
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// The configuration these files give, with the user's own values from the git config
    /// of `root` applied, and its hooks path and trust record (see [`Config::apply_git`]):
    /// one `git config` run.
    pub fn config(&self, root: &Path) -> Result<Config> {
        let mut config = match self.text(FILE)? {
            Some(text) => Config::parse(&root.join(FILE).display().to_string(), text)?,
            None => Config::default(),
        };
        let values = crate::git::run(
            root,
            &["config", "--show-scope", "--get-regexp", r"^tlv4\."],
        )
        .unwrap_or_default();
        config.apply_git(&values)?;
        config.validate()?;
        Ok(config)
    }

    /// The pinned form: text files as strings, any other file as an array of bytes; with the
    /// agents the user chose on the command line when the session started (what
    /// `tlv4_store::pin` keeps in the session's pinned ref).
    pub fn to_json(&self, agents: &[String]) -> Vec<u8> {
        let map: serde_json::Map<String, serde_json::Value> = self
            .files
            .iter()
            .map(|(p, b)| {
                let v = match std::str::from_utf8(b) {
                    Ok(t) => serde_json::Value::from(t),
                    Err(_) => serde_json::Value::from(b.clone()),
                };
                (p.clone(), v)
            })
            .collect();
        serde_json::to_vec_pretty(
            &serde_json::json!({ "schema": 1, "files": map, "agents": agents }),
        )
        .expect("a map of JSON values serialises")
    }

    /// The files of the pinned form [`Files::to_json`] wrote; `None` when `bytes` are not one.
    pub fn from_json(bytes: &[u8]) -> Option<Files> {
        let v: serde_json::Value = serde_json::from_slice(bytes).ok()?;
        let files = v["files"]
            .as_object()?
            .iter()
            .map(|(p, v)| {
                let bytes = match v {
                    serde_json::Value::String(t) => t.as_bytes().to_vec(),
                    serde_json::Value::Array(a) => a
                        .iter()
                        .map(|n| n.as_u64().and_then(|n| u8::try_from(n).ok()))
                        .collect::<Option<Vec<u8>>>()?,
                    _ => return None,
                };
                Some((p.clone(), bytes))
            })
            .collect::<Option<BTreeMap<_, _>>>()?;
        Some(Files { files })
    }
}

/// The repository configuration one command works with, read once and passed down: the
/// files (the working tree's, or a session's pinned copy) and the configuration they give.
/// Reading it twice would read the files again and run `git config` again.
#[derive(Debug, Clone, Default)]
pub struct Configuration {
    /// `.tlv4.toml` and `.tlv4/specs/**`.
    pub files: Files,
    /// What they give, with the user's git config applied.
    pub config: Config,
}

impl Configuration {
    /// The configuration `files` give at the working tree `root`.
    pub fn of(files: Files, root: &Path) -> Result<Configuration> {
        let config = files.config(root)?;
        Ok(Configuration { files, config })
    }

    /// The configuration of the working tree at `root`.
    pub fn read(root: &Path) -> Result<Configuration> {
        Configuration::of(Files::read(root)?, root)
    }
}

/// Adds every regular file under `root/rel` to `files` (at most `max`).
pub(super) fn walk(
    root: &Path,
    rel: &str,
    files: &mut BTreeMap<String, Vec<u8>>,
    max: usize,
) -> Result<()> {
    let dir = root.join(rel);
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        // `.tlv4` or `.tlv4/specs` a file, a directory unreadable: the user's to fix.
        Err(e) => return Err(crate::config::unreadable(&dir, &e)),
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .collect();
    names.sort();
    for name in names {
        let child = format!("{rel}/{name}");
        let path = root.join(&child);
        if rel == SPECS_DIR && ["roles", "templates"].contains(&name.as_str()) && !path.is_dir() {
            // The folders of role and template overrides: a file there is not what was meant.
            return Err(crate::config::file_in_the_way(&path.join("x.md")));
        } else if path.is_dir() && (name.ends_with(".toml") || name.ends_with(".md")) {
            // Named like an override, but no file: not what the user meant.
            return Err(crate::config::unreadable(
                &path,
                &std::io::Error::from(std::io::ErrorKind::IsADirectory),
            ));
        } else if path.is_dir() {
            walk(root, &child, files, max)?;
        } else if path.is_file() {
            if files.len() >= max {
                return Err(Error::state(
                    format!("{} holds more than {max} files", dir.display()),
                    Some("an agent's `home` inside the repository is covered by trust file by file; point `home` outside it".into()),
                ));
            }
            let bytes = std::fs::read(&path).map_err(|e| crate::config::unreadable(&path, &e))?;
            files.insert(child, bytes);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pinned_form_keeps_every_byte() {
        let files = Files {
            files: [
                (FILE.to_owned(), b"[roles]\n".to_vec()),
                (".tlv4/specs/bin".to_owned(), vec![0, 159, 146, 150, 255]),
            ]
            .into_iter()
            .collect(),
        };
        assert_eq!(Files::from_json(&files.to_json(&[])), Some(files));
    }
}
