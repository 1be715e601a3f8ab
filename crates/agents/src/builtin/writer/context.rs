//! What the writer knows about the repository and the request: the analyst's
//! `spec/discovery-context.json` (read by [`tlv4_specdoc::discovery`]), and, when it has no
//! code facts, the builtin analyst's scan of the code tree.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use serde::Serialize;

use super::text;
use crate::builtin::{analyst, code};
use crate::{CodeFile, CodeTree};
use tlv4_core::error::Result;
use tlv4_specdoc::discovery::{Codebase, Discovery as Report};
use tlv4_specdoc::md;

/// Whether the discovery context could be used.
#[derive(Debug, Clone, PartialEq, Default)]
pub(super) enum Availability {
    /// Read and parsed.
    Present,
    /// Not in the pipeline folder.
    #[default]
    Missing,
    /// There, but not JSON; the reason says why.
    Unreadable(String),
}

/// The analyst's findings, with empty values for whatever it did not say.
#[derive(Debug, Clone, Default)]
pub(super) struct Discovery {
    /// Whether the file was there.
    pub availability: Availability,
    /// The problem statement, as Markdown source.
    pub problem_statement: String,
    /// Who the request is for, as Markdown source.
    pub target_users: Vec<String>,
    /// The domain, as Markdown source.
    pub domain: String,
    /// The constraints, as Markdown source.
    pub constraints: Vec<String>,
    /// `open_questions`.
    pub open_questions: Vec<String>,
    /// `recommendations`.
    pub recommendations: Vec<String>,
    /// The tech profile's signals.
    pub signals: Vec<String>,
    /// The paths that show each signal.
    pub evidence: BTreeMap<String, Vec<String>>,
    /// Facts about the code: from `codebase_context`, else from the builtin analyst's scan.
    pub code: CodeFacts,
}

/// Facts about the code base, and where they come from.
#[derive(Debug, Clone, Default, Serialize)]
pub(super) struct CodeFacts {
    /// Where the facts come from, for the documents (`the discovery context`, …).
    pub source: String,
    /// The facts; languages largest first, a test framework only when it is named.
    #[serde(flatten)]
    pub facts: Codebase,
}

impl CodeFacts {
    /// Whether anything is known about the code.
    pub(super) fn is_empty(&self) -> bool {
        self.facts.file_count == 0
            && self.facts.languages.is_empty()
            && self.facts.manifests.is_empty()
    }

    /// The main language, if known.
    pub(super) fn primary_language(&self) -> Option<&str> {
        self.facts.languages.first().map(|l| l.name.as_str())
    }

    /// The main language and frameworks, as a short phrase (`Rust (clap, serde)`).
    pub(super) fn stack_phrase(&self) -> Option<String> {
        let lang = self.primary_language()?;
        Some(if self.facts.frameworks.is_empty() {
            lang.to_owned()
        } else {
            let shown: Vec<String> = self.facts.frameworks.iter().take(3).cloned().collect();
            format!("{lang} ({})", shown.join(", "))
        })
    }

    /// Every declared dependency, with the manifest declaring it, in manifest order.
    pub(super) fn dependencies(&self) -> Vec<Library> {
        let mut out: Vec<Library> = Vec::new();
        for m in &self.facts.manifests {
            for d in &m.dependencies {
                if !out.iter().any(|l| l.name == *d) {
                    out.push(Library {
                        name: d.clone(),
                        manifest: m.path.clone(),
                    });
                }
            }
        }
        out
    }

    /// The facts as the templates see them.
    pub(super) fn view(&self) -> CodeView<'_> {
        let mut libraries = self.dependencies();
        let mut framework_manifests = BTreeMap::new();
        for m in &self.facts.manifests {
            for f in &m.frameworks {
                framework_manifests
                    .entry(f.as_str())
                    .or_insert(m.path.as_str());
            }
        }
        let main = self.facts.languages.first();
        CodeView {
            facts: self,
            lang: self.primary_language(),
            share: main.map_or(0.0, |l| l.share * 100.0),
            stack: self.stack_phrase(),
            test_command: self.test_command(),
            empty: self.is_empty(),
            more_libraries: libraries.len().saturating_sub(10),
            libraries: {
                libraries.truncate(10);
                libraries
            },
            framework_manifests,
        }
    }

    /// The command that runs the tests, if known.
    pub(super) fn test_command(&self) -> Option<&str> {
        let command = self
            .facts
            .test_framework
            .as_ref()
            .map(|t| t.command.as_str());
        command.filter(|c| !c.is_empty())
    }
}

/// [`CodeFacts`] as the templates see them, with what follows from them: the main language
/// and its share, the stack phrase, the test command, the first ten declared libraries and
/// the manifest that pulls in each framework.
#[derive(Serialize)]
pub(super) struct CodeView<'a> {
    #[serde(flatten)]
    facts: &'a CodeFacts,
    lang: Option<&'a str>,
    share: f64,
    stack: Option<String>,
    test_command: Option<&'a str>,
    empty: bool,
    libraries: Vec<Library>,
    more_libraries: usize,
    framework_manifests: BTreeMap<&'a str, &'a str>,
}

/// A declared library and the manifest that declares it.
#[derive(Debug, Clone, Serialize)]
pub(super) struct Library {
    /// Its name.
    pub name: String,
    /// The manifest's path.
    pub manifest: String,
}

impl Discovery {
    /// Reads the discovery context from `text` (`None` when the file is missing), falling
    /// back to the builtin analyst's scan of `code` for code facts.
    pub(super) fn read(text: Option<&str>, code: &CodeTree) -> Result<Discovery> {
        let (availability, report) = match text.map(|t| Report::parse(t.as_bytes())) {
            None => (Availability::Missing, Report::default()),
            Some(Ok(report)) => (Availability::Present, report),
            Some(Err(why)) => (Availability::Unreadable(why), Report::default()),
        };
        // What the analyst read from the request is the user's text: it goes into the
        // documents as Markdown source that reads as itself. The analyst's own questions and
        // advice are Markdown already.
        let seed = report.seed;
        let inline = |texts: Vec<String>| texts.iter().map(|s| md::inline(s)).collect();
        let code = match report.codebase {
            Some(facts) => code_facts(facts, "the discovery context"),
            None => code_facts(
                analyst::codebase(code)?,
                "the builtin analyst's scan of the code tree",
            ),
        };
        Ok(Discovery {
            availability,
            problem_statement: md::inline(&seed.problem_statement),
            target_users: inline(seed.target_users),
            domain: md::inline(&seed.domain),
            constraints: inline(seed.constraints),
            open_questions: report.open_questions,
            recommendations: report.recommendations,
            signals: report.tech_profile.signals,
            evidence: report.tech_profile.evidence,
            code,
        })
    }

    /// Whether the analyst reported `signal`.
    pub(super) fn has_signal(&self, signal: &str) -> bool {
        self.signals.iter().any(|s| s == signal)
    }

    /// The evidence paths of `signal`, formatted as inline code, at most three.
    pub(super) fn evidence_of(&self, signal: &str) -> String {
        let paths: Vec<String> = self
            .evidence
            .get(signal)
            .map(|p| p.iter().take(3).map(|p| format!("`{p}`")).collect())
            .unwrap_or_default();
        if paths.is_empty() {
            "reported by the analyst".to_owned()
        } else {
            paths.join(", ")
        }
    }
}

/// Code facts from `source`, as the documents show them: languages largest first (then by
/// name), and a test framework only when it is named.
fn code_facts(mut facts: Codebase, source: &str) -> CodeFacts {
    facts.languages.sort_by(|a, b| {
        let larger = b.share.partial_cmp(&a.share);
        larger
            .unwrap_or(Ordering::Equal)
            .then_with(|| a.name.cmp(&b.name))
    });
    facts.test_framework = facts.test_framework.filter(|t| !t.name.is_empty());
    CodeFacts {
        source: source.into(),
        facts,
    }
}

/// The existing directory whose files best match `key_words` by name, with the number of
/// matching words. Tests, vendored and hidden paths are skipped; ties go to the first path in
/// order.
pub(super) fn matching_module(files: &[CodeFile], key_words: &[String]) -> Option<(String, usize)> {
    if key_words.is_empty() {
        return None;
    }
    let mut scores: BTreeMap<String, usize> = BTreeMap::new();
    for f in files {
        let hidden = f.path.split('/').any(|s| s.starts_with('.') && s.len() > 1);
        if hidden || code::is_vendored(&f.path) || code::is_test_path(&f.path) {
            continue;
        }
        let name_words = text::key_words(&f.path.replace(['/', '.', '_', '-'], " "));
        let hits = key_words.iter().filter(|k| name_words.contains(k)).count();
        if hits == 0 {
            continue;
        }
        let dir = match f.path.rsplit_once('/') {
            Some((dir, _)) => format!("{dir}/"),
            None => f.path.clone(),
        };
        let score = scores.entry(dir).or_default();
        *score = (*score).max(hits);
    }
    let best = scores.values().copied().max()?;
    scores.into_iter().find(|(_, s)| *s == best)
}
