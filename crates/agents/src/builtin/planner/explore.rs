//! The exploration cache (`explorations/cache-index.json`): the planner looks for the angle
//! it needs first and reuses what an earlier task found; only on a miss does it write its own
//! exploration and add it to the index, keeping every other entry as it was.
//!
//! An entry whose file is missing or unreadable is dropped and the angle explored again; an
//! index that does not parse is cleared.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use super::code::{self, Code, Match};
use super::shape::Draft;
use super::spec::Discovery;
use super::text;
use crate::TaskInput;
use crate::builtin::json_bytes;
use crate::builtin::words::unique;

/// The cache index, relative to the pipeline folder.
pub(super) const INDEX: &str = "explorations/cache-index.json";

/// The angle the planner explores for `text`: the first of `planner-words.toml`'s angles
/// one of whose trigger words the text has (a word starting with `auth` counts as `auth`),
/// else `patterns`.
pub(super) fn angle(text: &str) -> &'static str {
    let words = crate::builtin::words::camel_words(text);
    let hit = |t: &String| {
        words.iter().any(|w| {
            w == t
                || (t == "auth" && w.starts_with("auth"))
                || (t.len() >= 5 && w.starts_with(t.as_str()) && w.len() <= t.len() + 3)
        })
    };
    text::WORDS
        .angles
        .iter()
        .find(|a| a.triggers.iter().any(hit))
        .map_or("patterns", |a| a.name.as_str())
}

/// What the cache holds for the planner.
#[derive(Debug, Default)]
pub(super) struct Cache {
    /// The index as read (an object), or empty when there was none or it was corrupt.
    pub index: serde_json::Map<String, Value>,
    /// The entries to keep when the index is written again.
    pub entries: Vec<Value>,
    /// The reused exploration, if the angle was cached.
    pub hit: Option<Hit>,
    /// What happened, for the decisions.
    pub notes: Vec<String>,
}

/// A cached exploration.
#[derive(Debug)]
pub(super) struct Hit {
    /// Its file, relative to the pipeline folder.
    pub file: String,
    /// The relevant files it lists.
    pub relevant: BTreeSet<String>,
}

/// Looks `angle` up in the cache.
pub(super) fn lookup(folder: &BTreeMap<String, Vec<u8>>, angle: &str) -> Cache {
    let mut cache = Cache::default();
    let Some(raw) = folder.get(INDEX) else {
        return cache;
    };
    let parsed = serde_json::from_slice::<Value>(raw).ok();
    let Some(Value::Object(index)) = parsed.filter(|v| v["entries"].is_array()) else {
        cache
            .notes
            .push(format!("{INDEX} is corrupt: cleared it and explored again"));
        return cache;
    };
    let entries = index["entries"].as_array().cloned().unwrap_or_default();
    cache.index = index;
    for entry in entries.into_iter().filter(Value::is_object) {
        let same_angle = entry["angle"]
            .as_str()
            .is_some_and(|a| a.trim().eq_ignore_ascii_case(angle));
        if !same_angle {
            cache.entries.push(entry);
        } else if cache.hit.is_none() {
            let file = entry["file"].as_str().unwrap_or("");
            match read(folder, file) {
                Some(hit) => {
                    cache.notes.push(format!(
                        "reused the cached `{angle}` exploration ({}) instead of exploring again",
                        hit.file
                    ));
                    cache.hit = Some(hit);
                    cache.entries.push(entry);
                }
                None => cache.notes.push(format!(
                    "the cached `{angle}` exploration ({}) is missing or unreadable: dropped it and explored again",
                    if file.is_empty() { "no file" } else { file }
                )),
            }
        }
    }
    cache
}

/// Reads a cached exploration, found at `file` or under `explorations/`.
fn read(folder: &BTreeMap<String, Vec<u8>>, file: &str) -> Option<Hit> {
    let file = file.trim().trim_start_matches("./");
    if file.is_empty() {
        return None;
    }
    let candidates = [file.to_owned(), format!("explorations/{file}")];
    let (path, raw) = candidates
        .iter()
        .find_map(|c| folder.get(c).map(|raw| (c.clone(), raw)))?;
    let v: Value = serde_json::from_slice(raw).ok()?;
    let files = v.get("relevant_files")?.as_array()?;
    let relevant = files
        .iter()
        .filter_map(|f| match f {
            Value::String(s) => Some(s.as_str()),
            Value::Object(o) => o
                .get("path")
                .or_else(|| o.get("file"))
                .and_then(Value::as_str),
            _ => None,
        })
        .map(|s| s.trim_start_matches("./").to_owned())
        .collect();
    Some(Hit {
        file: path,
        relevant,
    })
}

/// A file an exploration found relevant.
#[derive(Debug, serde::Serialize)]
pub(super) struct RelevantFile {
    /// The path.
    pub path: String,
    /// Why it matters.
    pub rationale: String,
    /// The work items it matches best.
    pub role: String,
    /// How well it matched.
    pub score: u32,
}

/// The planner's own exploration, `explorations/planner-<angle>.json`.
#[derive(Debug, serde::Serialize)]
pub(super) struct Exploration {
    /// The angle explored.
    pub angle: String,
    /// The task text it explored for.
    pub query: String,
    /// Who wrote it.
    pub created_by: String,
    /// The task that wrote it.
    pub task: String,
    /// The keywords searched for.
    pub keywords: Vec<String>,
    /// Files that matched, best first.
    pub relevant_files: Vec<RelevantFile>,
    /// Conventions seen in the code.
    pub patterns: Vec<String>,
    /// Files through which changes connect to the rest of the code.
    pub integration_points: BTreeSet<String>,
    /// What to do with what was found.
    pub recommendations: Vec<String>,
}

/// The exploration's path for `angle`.
pub(super) fn path(angle: &str) -> String {
    format!("explorations/planner-{angle}.json")
}

/// The files to write for a new exploration: the exploration and the index with the
/// planner's entry added.
pub(super) fn write(
    cache: &Cache,
    exploration: &Exploration,
    task: &str,
) -> Vec<(String, Vec<u8>)> {
    let file = path(&exploration.angle);
    let mut entries = cache.entries.clone();
    let angle = &exploration.angle;
    entries.push(json!({ "angle": angle, "file": file, "source": "planner", "task": task }));
    let mut index = cache.index.clone();
    index.insert("entries".to_owned(), Value::Array(entries));
    vec![
        (file, json_bytes(exploration)),
        (INDEX.to_owned(), json_bytes(&index)),
    ]
}

/// The planner's own exploration of its angle.
pub(super) fn explore(
    input: &TaskInput,
    angle: &str,
    drafts: &[Draft],
    matches: &[Vec<Match>],
    code: &Code,
    discovery: &Discovery,
) -> Exploration {
    // Each planned existing file, with the best score any work item gave it.
    let mut relevant: BTreeMap<String, (u32, Vec<String>, Vec<String>)> = BTreeMap::new();
    for (d, ms) in drafts.iter().zip(matches) {
        for m in ms.iter().filter(|m| d.matched.contains_key(&m.path)) {
            let e = relevant.entry(m.path.clone()).or_default();
            e.0 = e.0.max(m.score);
            e.1.extend(m.words.iter().cloned());
            e.2.extend(d.sources.iter().cloned());
        }
    }
    let mut relevant_files: Vec<RelevantFile> = relevant
        .into_iter()
        .map(|(path, (score, words, roles))| RelevantFile {
            rationale: format!("its path or contents match {}", unique(words).join(", ")),
            role: unique(roles).join(", "),
            path,
            score,
        })
        .collect();
    relevant_files.sort_by(|a, b| b.score.cmp(&a.score).then(a.path.cmp(&b.path)));

    let integration_points: BTreeSet<String> = drafts
        .iter()
        .flat_map(|d| d.files.iter())
        .filter_map(|f| code.entry_file(code::parent(&f.path)))
        .collect();

    let layout = &code.layout;
    let patterns = text::say_lines(
        "patterns_list",
        &minijinja::context! {
            lang => minijinja::value::Serde(layout.lang),
            main_dir => &layout.main_dir,
            test_dirs => minijinja::value::Serde(&layout.test_dirs),
            test_command => discovery.test_command.as_deref(),
            entry_files => !integration_points.is_empty(),
        },
    );

    let recommendations = drafts
        .iter()
        .map(|d| {
            let files: Vec<String> = d
                .files
                .iter()
                .map(|f| format!("{} `{}`", f.change.as_str(), f.path))
                .collect();
            format!("{}: {}", d.sources.join(", "), files.join(", "))
        })
        .collect();
    Exploration {
        angle: angle.to_owned(),
        query: input.session.task.clone(),
        created_by: "planner".to_owned(),
        task: input.task.id.to_string(),
        keywords: unique(drafts.iter().flat_map(|d| d.keywords.clone())),
        relevant_files,
        patterns,
        integration_points,
        recommendations,
    }
}
