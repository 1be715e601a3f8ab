//! Tech-profile signals (`sql_detected`, `auth_detected`, …) detected from evidence in the
//! repository, for specialist injection.
//!
//! Every rule is one row of `analyst-signals.toml` ([`RULES`]): the signal, the kind of
//! evidence, and the patterns.
//! The kind sets how much a hit is worth: a dependency declared in a manifest is strong
//! (`high`), a pattern in code is fair (`medium`), a file or directory name is weak (`low`).
//! A signal's evidence lists its strongest paths first.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use super::manifest::Manifest;
use super::scan::Entry;
use crate::builtin::code::{dirs, file_name};

/// How much a piece of evidence is worth.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Strength {
    /// A file or directory name.
    Name,
    /// A pattern in the code.
    Code,
    /// A dependency declared in a manifest.
    Manifest,
}

/// What a rule looks at (see the data file's header).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum Kind {
    Dep,
    Code,
    Name,
    Dir,
    Prefix,
}

/// One detection rule of `analyst-signals.toml`.
#[derive(Debug, serde::Deserialize)]
pub(super) struct Rule {
    signal: String,
    kind: Kind,
    /// Whether every pattern must match (in one manifest or one file), not just one.
    #[serde(default)]
    all: bool,
    /// For `code`: the extensions of the files it applies to; none means any source file.
    #[serde(default)]
    exts: Vec<String>,
    patterns: Vec<String>,
}

impl Rule {
    fn strength(&self) -> Strength {
        match self.kind {
            Kind::Dep => Strength::Manifest,
            Kind::Code => Strength::Code,
            _ => Strength::Name,
        }
    }

    /// Whether `test` holds for any pattern, or for every one when the rule says `all`.
    fn matches(&self, test: impl FnMut(&String) -> bool) -> bool {
        let mut patterns = self.patterns.iter();
        if self.all {
            patterns.all(test)
        } else {
            patterns.any(test)
        }
    }
}

/// The detection rules, in file order.
pub(super) static RULES: LazyLock<Vec<Rule>> =
    LazyLock::new(|| super::list(builtin!("analyst-signals.toml")));

/// At most this many paths are kept per signal.
pub(super) const MAX_EVIDENCE: usize = 5;

/// Collects evidence; [`Detector::finish`] turns it into signals.
#[derive(Debug, Default)]
pub(super) struct Detector {
    hits: BTreeMap<&'static str, Vec<(Strength, String)>>,
}

/// The detected signals.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub(super) struct Profile {
    /// Signal names, sorted.
    pub signals: Vec<String>,
    /// Up to [`MAX_EVIDENCE`] paths per signal, strongest first.
    pub evidence: BTreeMap<String, Vec<String>>,
    /// The strongest evidence per signal.
    #[serde(skip)]
    pub strength: BTreeMap<String, Strength>,
    /// How sure the profile is of what it says: the confidence word of the strongest
    /// evidence over all signals.
    pub confidence: &'static str,
    /// The signals shown by evidence that strong.
    pub strongest: Vec<String>,
}

impl Detector {
    /// Records evidence by hand (signals computed elsewhere, such as `test_gap`).
    pub(super) fn add(&mut self, signal: &'static str, strength: Strength, path: &str) {
        let hits = self.hits.entry(signal).or_default();
        if !hits.iter().any(|(s, p)| *s == strength && p == path) {
            hits.push((strength, path.to_owned()));
        }
    }

    fn count(&self, signal: &str, strength: Strength) -> usize {
        self.hits
            .get(signal)
            .map_or(0, |h| h.iter().filter(|(s, _)| *s == strength).count())
    }

    /// Records `path` as evidence for every rule `hit` holds for.
    fn apply(&mut self, path: &str, hit: impl Fn(&Rule) -> bool) {
        for rule in RULES.iter().filter(|r| hit(r)) {
            self.add(&rule.signal, rule.strength(), path);
        }
    }

    /// Applies the dependency rules to a manifest.
    pub(super) fn manifest(&mut self, m: &Manifest) {
        self.apply(&m.path, |r| {
            r.kind == Kind::Dep && r.matches(|p| m.declares(p))
        });
    }

    /// Applies the name rules to a path.
    pub(super) fn path(&mut self, path: &str) {
        let name = file_name(path);
        self.apply(path, |rule| match rule.kind {
            Kind::Name => rule.matches(|p| glob(p, name)),
            Kind::Dir => dirs(path).any(|d| rule.patterns.iter().any(|p| p == d)),
            Kind::Prefix => rule.matches(|p| path.starts_with(p.as_str())),
            _ => false,
        });
    }

    /// Applies the code rules to the text of a file. Tests are skipped: what their fixtures
    /// contain says little about what the product does.
    pub(super) fn content(&mut self, entry: &Entry<'_>, text: &str) {
        if entry.test {
            return;
        }
        let ext = entry.ext();
        for rule in RULES.iter().filter(|r| r.kind == Kind::Code) {
            let applies = if rule.exts.is_empty() {
                entry.lang.is_some()
            } else {
                rule.exts.contains(&ext)
            };
            // Evidence beyond the cap would never be shown: stop looking.
            if applies
                && self.count(&rule.signal, Strength::Code) < MAX_EVIDENCE
                && rule.matches(|p| contains(text, p))
            {
                self.add(&rule.signal, rule.strength(), entry.path());
            }
        }
    }

    /// The signals, sorted, each with its strongest evidence first.
    pub(super) fn finish(self) -> Profile {
        let mut profile = Profile::default();
        for (signal, mut hits) in self.hits {
            // Stable: equal strengths keep the order they were found in (path order).
            hits.sort_by_key(|h| std::cmp::Reverse(h.0));
            let mut paths = super::unique(hits.iter().map(|h| h.1.clone()));
            paths.truncate(MAX_EVIDENCE);
            profile.signals.push(signal.to_owned());
            profile.evidence.insert(signal.to_owned(), paths);
            profile.strength.insert(signal.to_owned(), hits[0].0);
        }
        let top = profile.strength.values().copied().max();
        // The reference's confidence words, weakest first.
        profile.confidence = ["low", "medium", "high"][top.unwrap_or(Strength::Name) as usize];
        profile.strongest = profile
            .strength
            .iter()
            .filter(|(_, s)| Some(**s) == top)
            .map(|(name, _)| name.clone())
            .collect();
        profile
    }
}

/// Whether `name` matches `pattern`, which may start and/or end with `*`.
fn glob(pattern: &str, name: &str) -> bool {
    match (pattern.strip_prefix('*'), pattern.strip_suffix('*')) {
        (Some(rest), _) if rest.ends_with('*') => name.contains(&rest[..rest.len() - 1]),
        (Some(suffix), None) => name.ends_with(suffix),
        (None, Some(prefix)) => name.starts_with(prefix),
        _ => name == pattern,
    }
}

/// Whether `text` contains `needle`; a needle starting with a newline also matches at the
/// very start of the text.
fn contains(text: &str, needle: &str) -> bool {
    text.contains(needle)
        || needle
            .strip_prefix('\n')
            .is_some_and(|n| text.starts_with(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob("Dockerfile", "Dockerfile"));
        assert!(glob("docker-compose*", "docker-compose.prod.yml"));
        assert!(glob("*.tf", "main.tf"));
        assert!(glob("*websocket*", "my_websocket_server.py"));
        assert!(!glob("*.tf", "main.tfvars"));
        assert!(!glob("Dockerfile", "Dockerfile.dev"));
    }

    #[test]
    fn newline_needles_match_at_the_start() {
        assert!(contains("var x = 1;", "\nvar "));
        assert!(contains("a();\nvar x;", "\nvar "));
        assert!(!contains("invariant = 1", "\nvar "));
    }

    #[test]
    fn evidence_is_strongest_first_and_capped() {
        let mut d = Detector::default();
        for i in 0..7 {
            d.add("sql_detected", Strength::Name, &format!("db/{i}.sql"));
        }
        d.add("sql_detected", Strength::Manifest, "Cargo.toml");
        d.path("Dockerfile");
        let p = d.finish();
        assert_eq!(p.signals, ["devops_detected", "sql_detected"]);
        assert_eq!(p.evidence["sql_detected"][0], "Cargo.toml");
        assert_eq!(p.evidence["sql_detected"].len(), MAX_EVIDENCE);
        assert_eq!(p.strength["sql_detected"], Strength::Manifest);
        assert_eq!(p.strength["devops_detected"], Strength::Name);
        assert_eq!(p.confidence, "high");
    }
}
