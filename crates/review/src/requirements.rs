//! Requirements: the plan's acceptance criteria matched against the change.
//!
//! Criteria come from `plan/plan.json` (`tasks[].convergence.criteria`), the executor briefs
//! `plan/.task/TASK-*.json` (`convergence.criteria`) and the open items (`- [ ]`) of
//! `spec/requirements/REQ-*.md`. Each is matched by keyword overlap: the share of its words of
//! four or more letters (lightly stemmed, common words left out) that appear in the added lines
//! or the changed paths. The bands come from the rules file (by default 70% covered, 40%
//! partly covered, below that missing).

use std::collections::{BTreeMap, HashSet};

use super::rules::{CheckId, RuleSet};
use super::{Confidence, Finding};

/// One acceptance criterion and where it was written.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Criterion {
    /// The criterion's text.
    pub text: String,
    /// What it belongs to (`TASK-001`, `REQ-002`).
    pub source: String,
    /// The file it was read from (repository path when known).
    pub file: String,
    /// Its 1-based line in that file, when known.
    pub line: Option<usize>,
}

/// What the change is held against.
#[derive(Debug, Clone, Default)]
pub struct Requirements {
    /// The acceptance criteria.
    pub criteria: Vec<Criterion>,
    /// The plan asks for tests.
    pub plan_asks_tests: bool,
    /// Why there are no criteria (outside a session, no plan yet), for the report.
    pub note: Option<String>,
}

impl Requirements {
    /// No criteria, with the reason shown in the report.
    pub fn none(note: impl Into<String>) -> Requirements {
        Requirements {
            note: Some(note.into()),
            ..Requirements::default()
        }
    }

    /// The criteria in a pipeline folder (paths relative to it); `prefix` is the folder's path
    /// in the repository, for the report. With `tasks`, only those plan tasks' criteria are
    /// taken and requirement documents are left out (a single IMPL task implements a part).
    pub fn from_folder(
        folder: &BTreeMap<String, Vec<u8>>,
        prefix: &str,
        tasks: Option<&[String]>,
    ) -> Requirements {
        let mut out = Requirements::default();
        let wanted = |id: &str| tasks.is_none_or(|t| t.iter().any(|x| x == id));
        let repo_path = |rel: &str| {
            if prefix.is_empty() {
                rel.to_owned()
            } else {
                format!("{prefix}/{rel}")
            }
        };
        let push = |out: &mut Requirements, text: &str, source: &str, rel: &str, file: &str| {
            let text = text.trim();
            if text.is_empty() || out.criteria.iter().any(|c| c.text == text) {
                return;
            }
            // In JSON the text is escaped (quotes, backslashes): look for that form too.
            let escaped = serde_json::to_string(text).unwrap_or_default();
            let line = file
                .find(text)
                .or_else(|| file.find(escaped.trim_matches('"')))
                .map(|at| super::rules::line_of(file, at));
            out.criteria.push(Criterion {
                text: text.to_owned(),
                source: source.to_owned(),
                file: repo_path(rel),
                line,
            });
        };
        let text_of = |rel: &str| folder.get(rel).and_then(|b| std::str::from_utf8(b).ok());
        if let Some(text) = text_of("plan/plan.json")
            && let Ok(plan) = serde_json::from_str::<serde_json::Value>(text)
        {
            for task in plan["tasks"].as_array().into_iter().flatten() {
                let id = task["id"].as_str().unwrap_or("plan");
                if !wanted(id) {
                    continue;
                }
                for c in task["convergence"]["criteria"]
                    .as_array()
                    .into_iter()
                    .flatten()
                {
                    if let Some(c) = c.as_str() {
                        push(&mut out, c, id, "plan/plan.json", text);
                    }
                }
            }
            out.plan_asks_tests |= mentions_tests(&plan["approach"].to_string());
        }
        for (rel, bytes) in folder {
            let Some(name) = rel.strip_prefix("plan/.task/") else {
                continue;
            };
            if !(name.starts_with("TASK-") && name.ends_with(".json")) {
                continue;
            }
            let Ok(text) = std::str::from_utf8(bytes) else {
                continue;
            };
            let Ok(task) = serde_json::from_str::<serde_json::Value>(text) else {
                continue;
            };
            let id = task["id"]
                .as_str()
                .unwrap_or(name.trim_end_matches(".json"));
            if !wanted(id) {
                continue;
            }
            for c in task["convergence"]["criteria"]
                .as_array()
                .into_iter()
                .flatten()
            {
                if let Some(c) = c.as_str() {
                    push(&mut out, c, id, rel, text);
                }
            }
            out.plan_asks_tests |= mentions_tests(&task["implementation"].to_string());
        }
        if tasks.is_none() {
            for (rel, bytes) in folder {
                let Some(name) = rel.strip_prefix("spec/requirements/") else {
                    continue;
                };
                if !(name.starts_with("REQ-") && name.ends_with(".md")) {
                    continue;
                }
                let Ok(text) = std::str::from_utf8(bytes) else {
                    continue;
                };
                let digits: String = name[4..].chars().take_while(char::is_ascii_digit).collect();
                let id = format!("REQ-{digits}");
                for line in text.lines() {
                    if let Some(item) = line.trim_start().strip_prefix("- [ ] ") {
                        push(&mut out, item, &id, rel, text);
                    }
                }
            }
        }
        out.plan_asks_tests |= out.criteria.iter().any(|c| mentions_tests(&c.text));
        if out.criteria.is_empty() {
            out.note = Some("the plan has no acceptance criteria for this change".into());
        }
        out
    }
}

fn mentions_tests(text: &str) -> bool {
    words(text).any(|w| w.starts_with("test"))
}

/// How well a criterion is covered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Coverage {
    /// At or above the `covered` band.
    Covered,
    /// Between the bands.
    Partial,
    /// Below the `partial` band.
    Missing,
}

impl Coverage {
    /// The name shown in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Coverage::Covered => "covered",
            Coverage::Partial => "partial",
            Coverage::Missing => "missing",
        }
    }
}

/// A criterion with its overlap.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CriterionResult {
    /// The criterion.
    #[serde(flatten)]
    pub criterion: Criterion,
    /// Keyword overlap with the change, in percent.
    pub overlap: u32,
    /// The band it falls in.
    pub coverage: Coverage,
}

/// The band of `overlap` percent.
pub(crate) fn band(rules: &RuleSet, overlap: u32) -> Coverage {
    if overlap >= rules.limits.covered {
        Coverage::Covered
    } else if overlap >= rules.limits.partial {
        Coverage::Partial
    } else {
        Coverage::Missing
    }
}

/// Matches every criterion against `change_words` (from [`keywords`] of the added lines and
/// changed paths); returns the results and the findings for criteria not covered.
pub(crate) fn coverage(
    rules: &RuleSet,
    reqs: &Requirements,
    change_words: &HashSet<String>,
) -> (Vec<CriterionResult>, Vec<Finding>) {
    let mut results = Vec::new();
    let mut findings = Vec::new();
    for c in &reqs.criteria {
        let keys: HashSet<String> = keywords(&c.text).collect();
        if keys.is_empty() {
            continue;
        }
        let hit = keys.iter().filter(|k| change_words.contains(*k)).count();
        let overlap = (hit * 100 / keys.len()) as u32;
        let coverage = band(rules, overlap);
        let check = match coverage {
            Coverage::Covered => None,
            Coverage::Partial => rules.check(CheckId::CriterionPartial),
            Coverage::Missing => rules.check(CheckId::CriterionMissing),
        };
        if let Some(check) = check {
            findings.push(Finding {
                severity: check.severity,
                dimension: check.dimension,
                file: c.file.clone(),
                line: c.line,
                reason: check.render(&[
                    ("percent", &overlap.to_string()),
                    ("criterion", &format!("{} ({})", c.text, c.source)),
                ]),
                rule: check.id.as_str().into(),
                confidence: Confidence::High,
                context: None,
            });
        }
        results.push(CriterionResult {
            criterion: c.clone(),
            overlap,
            coverage,
        });
    }
    (results, findings)
}

/// Words common enough to say nothing about what a criterion asks for.
const STOP: &[&str] = &[
    "about", "above", "after", "again", "also", "before", "being", "below", "between", "both",
    "could", "does", "each", "either", "every", "from", "given", "have", "into", "just", "least",
    "make", "many", "more", "most", "must", "only", "other", "over", "same", "shall", "should",
    "some", "such", "than", "that", "their", "them", "then", "there", "these", "they", "this",
    "those", "through", "under", "until", "very", "were", "what", "when", "where", "which",
    "while", "will", "with", "within", "without", "would", "your",
];

/// Lower-case alphanumeric words of `text`, split at case changes (`parseConfig` → `parse`,
/// `config`) and underscores.
pub(crate) fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric()).flat_map(|w| {
        let mut parts = Vec::new();
        let mut cur = String::new();
        let mut prev_lower = false;
        for ch in w.chars() {
            if ch.is_uppercase() && prev_lower && !cur.is_empty() {
                parts.push(std::mem::take(&mut cur));
            }
            prev_lower = ch.is_lowercase() || ch.is_ascii_digit();
            cur.extend(ch.to_lowercase());
        }
        if !cur.is_empty() {
            parts.push(cur);
        }
        parts
    })
}

/// The keywords of `text`: words of 4+ letters, stemmed, without common words.
pub(crate) fn keywords(text: &str) -> impl Iterator<Item = String> + '_ {
    words(text)
        .filter(|w| w.chars().count() >= 4 && !STOP.contains(&w.as_str()))
        .map(|w| stem(&w))
}

/// A light stem: `validates`, `validated`, `validating` → `validat`.
fn stem(w: &str) -> String {
    for suffix in ["ing", "ed", "es", "s", "e"] {
        if let Some(s) = w.strip_suffix(suffix)
            && s.chars().count() >= 4
        {
            return s.to_owned();
        }
    }
    w.to_owned()
}
