//! The `general` exploration: which files the request is about, the conventions the code
//! follows, and where it meets the outside world.
//!
//! Relevance is counted, not guessed: a keyword of the task text in a file name is worth
//! 10, in a directory name 5, and each mention in the text 1 (at most 5 per keyword). Short
//! keywords (three letters, like `api`) only count as whole words.

use std::collections::BTreeMap;

use super::manifest::{DEPS, Manifest, dep_matches};
use super::scan::{Entry, FILES};
use crate::builtin::code::{dirs, file_name};
use crate::builtin::words::has;

/// At most this many relevant files are listed.
pub(super) const MAX_RELEVANT: usize = 20;

/// A file the request is likely about.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub(super) struct RelevantFile {
    /// `name`, `content` or `name+content`.
    pub discovery_source: &'static str,
    /// Definitions in the file whose name contains a keyword.
    pub key_symbols: Vec<String>,
    /// Path relative to the repository root.
    pub path: String,
    /// Why it is listed.
    pub rationale: String,
    /// `source`, `test`, `manifest`, `docs` or `config`.
    pub role: &'static str,
    /// The relevance score.
    pub score: u32,
    /// The keywords its path names.
    #[serde(skip)]
    named: Vec<String>,
    /// The keywords its text mentions, with how often (`login (5+)`).
    #[serde(skip)]
    mentioned: Vec<String>,
}

/// Scores files against the keywords of the task text.
#[derive(Debug)]
pub(super) struct Finder<'k> {
    keywords: &'k [String],
    found: BTreeMap<String, RelevantFile>,
}

impl<'k> Finder<'k> {
    /// A finder for `keywords` (lower-case).
    pub(super) fn new(keywords: &'k [String]) -> Finder<'k> {
        let found = BTreeMap::new();
        Finder { keywords, found }
    }

    /// Scores the path of a file.
    pub(super) fn name(&mut self, entry: &Entry<'_>) {
        let path = entry.path().to_lowercase();
        let mut found = RelevantFile {
            path: entry.path().to_owned(),
            role: role(entry),
            ..RelevantFile::default()
        };
        for kw in self.keywords {
            found.score += if mentions(file_name(&path), kw, 1) > 0 {
                10
            } else if dirs(&path).any(|d| mentions(d, kw, 1) > 0) {
                5
            } else {
                continue;
            };
            found.named.push(kw.clone());
        }
        self.found.insert(found.path.clone(), found);
    }

    /// Scores the text of a file (after [`Finder::name`]).
    pub(super) fn content(&mut self, entry: &Entry<'_>, text: &str) {
        let lower = text.to_lowercase();
        let Some(found) = self.found.get_mut(entry.path()) else {
            return;
        };
        for kw in self.keywords {
            let n = mentions(&lower, kw, 5);
            if n > 0 {
                found.score += n as u32;
                let plus = if n >= 5 { "+" } else { "" };
                found.mentioned.push(format!("{kw} ({n}{plus})"));
            }
        }
        if entry.lang.is_some() && !found.mentioned.is_empty() {
            found.key_symbols = symbols(text, self.keywords);
        }
    }

    /// The relevant files, best first, at most [`MAX_RELEVANT`].
    pub(super) fn finish(self) -> Vec<RelevantFile> {
        let mut out: Vec<RelevantFile> = self.found.into_values().filter(|f| f.score > 0).collect();
        for f in &mut out {
            let why = [
                ("its path names", &f.named),
                ("its text mentions", &f.mentioned),
            ];
            let why: Vec<String> = why
                .iter()
                .filter(|(_, kws)| !kws.is_empty())
                .map(|(what, kws)| format!("{what} {}", kws.join(", ")))
                .collect();
            f.rationale = why.join("; ");
            f.discovery_source = match (f.named.is_empty(), f.mentioned.is_empty()) {
                (false, false) => "name+content",
                (false, true) => "name",
                _ => "content",
            };
        }
        out.sort_by(|a, b| b.score.cmp(&a.score).then_with(|| a.path.cmp(&b.path)));
        out.truncate(MAX_RELEVANT);
        out
    }
}

/// What a file is to the request: `manifest`, `test`, `source`, `docs` or `config`.
fn role(entry: &Entry<'_>) -> &'static str {
    match (entry.manifest, entry.test, entry.lang) {
        (Some(_), _, _) => "manifest",
        (_, true, _) => "test",
        (_, _, Some(_)) => "source",
        _ if has(&FILES.doc_exts, &entry.ext()) => "docs",
        _ => "config",
    }
}

/// How often `kw` occurs in `hay` (both lower-case), at most `cap`; a keyword of three
/// characters or fewer must stand as a word of its own.
fn mentions(hay: &str, kw: &str, cap: usize) -> usize {
    let whole_word = kw.chars().count() <= 3;
    let is_word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric());
    hay.match_indices(kw)
        .filter(|(at, _)| {
            !whole_word
                || (!is_word(hay[..*at].chars().next_back())
                    && !is_word(hay[at + kw.len()..].chars().next()))
        })
        .take(cap)
        .count()
}

/// Names defined in `text` that contain a keyword, in text order, at most five.
fn symbols(text: &str, keywords: &[String]) -> Vec<String> {
    // In each line, the first place each definition word starts a word.
    let defined = text.lines().flat_map(|line| {
        FILES.definitions.iter().filter_map(move |def| {
            let at = line.find(def.as_str())?;
            let starts = at == 0 || line[..at].ends_with([' ', '\t', '(']);
            let rest = line[at + def.len()..].chars();
            starts.then(|| {
                rest.take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect()
            })
        })
    });
    let named = defined.filter(|ident: &String| {
        let lower = ident.to_lowercase();
        !ident.is_empty() && keywords.iter().any(|k| lower.contains(k.as_str()))
    });
    super::unique(named).into_iter().take(5).collect()
}

/// Conventions shown by the manifests, unique, in table order.
pub(super) fn conventions(manifests: &[Manifest]) -> Vec<String> {
    let shown = DEPS
        .conventions
        .iter()
        .filter(|c| manifests.iter().any(|m| m.declares(&c.dep)));
    super::unique(shown.map(|c| c.what.clone()))
}

/// External systems the manifests reach, as `what via dep (manifest)`, in table order.
pub(super) fn integrations(manifests: &[Manifest]) -> Vec<String> {
    let mut out = Vec::new();
    for i in &DEPS.integrations {
        for m in manifests {
            if let Some(name) = m.dependencies.iter().find(|d| dep_matches(&i.dep, d)) {
                out.push(format!("{} via {name} ({})", i.what, m.path));
            }
        }
    }
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_keywords_are_whole_words() {
        assert_eq!(mentions("the api and rapid api", "api", 5), 2);
        assert_eq!(mentions("password passwords", "password", 1), 1);
        assert_eq!(mentions("login login login", "login", 2), 2);
    }

    #[test]
    fn key_symbols() {
        let text =
            "pub fn login_user() {}\nfn other() {}\nclass LoginForm:\n    def check(self): pass\n";
        assert_eq!(
            symbols(text, &["login".to_owned()]),
            ["login_user", "LoginForm"]
        );
    }
}
