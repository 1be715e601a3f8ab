//! The words of the analyst's report: the summary line, key findings, open questions,
//! recommendations, decisions and verification, and the patterns and integration points of
//! the exploration.
//!
//! They are the template `analyst-report.txt`, rendered by minijinja over the scan and the
//! seed analysis, so the same facts always read the same way and the words are not code.

use std::collections::BTreeMap;

use super::seed::{Named, Seed, TABLES};
use super::{Facts, explore};
use crate::agents::builtin::template::render;

/// The report's sections, by name (see the template's header).
pub(super) type Report = BTreeMap<String, Vec<String>>;

/// The report on `seed` and `facts`; `topic_file` is where the request was read from, if
/// not the task text, and `index_note` what became of the cache index.
pub(super) fn report(
    seed: &Seed,
    facts: &Facts,
    topic_file: Option<&str>,
    index_note: &str,
) -> Report {
    let shown = &facts.profile.signals;
    let open = |m: &&Named| seed.words.any(&m.words) && !shown.contains(&m.signal);
    let questions = TABLES
        .mention
        .iter()
        .filter(open)
        .map(|m| m.question.as_str());
    let mentioned: Vec<&str> = questions.filter(|_| facts.has_source).collect();
    // What the template reads; `mentioned` are the open questions for subjects the request
    // names and the code does not show.
    let context = serde_json::json!({
        "seed": seed,
        "facts": facts,
        "depth": seed.complexity.depth(),
        "mentioned": mentioned,
        "conventions": explore::conventions(&facts.context.manifests),
        "integrations": explore::integrations(&facts.context.manifests),
        "topic_file": topic_file,
        "index_note": index_note,
    });
    let mut report = Report::new();
    let mut section = None;
    for line in render("analyst-report.txt", &context).lines() {
        if let Some(name) = line.strip_prefix("## ") {
            section = Some(report.entry(name.to_owned()).or_default());
        } else if let Some(items) = section.as_mut().filter(|_| !line.is_empty()) {
            items.push(line.to_owned());
        }
    }
    // At most five findings, each under 100 characters.
    if let Some(findings) = report.get_mut("key_findings") {
        findings.iter_mut().for_each(|f| *f = clip(f, 99));
    }
    report
}

/// `text` cut to at most `max` characters, marked with `…` when cut.
fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some(_) => text.chars().take(max - 1).chain(['…']).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn findings_are_clipped() {
        assert_eq!(clip("abc", 99), "abc");
        let long = "x".repeat(150);
        assert_eq!(clip(&long, 99).chars().count(), 99);
        assert!(clip(&long, 99).ends_with('…'));
    }
}
