//! The words of the analyst's report: the summary line, key findings, open questions,
//! recommendations, decisions and verification, and the patterns and integration points of
//! the exploration.
//!
//! They are the template `analyst-report.txt`, rendered by minijinja over the scan and the
//! seed analysis, so the same facts always read the same way and the words are not code.

use std::collections::BTreeMap;

use super::seed::{Named, Seed, TABLES};
use super::{Facts, explore};
use crate::builtin::template::render;
use tlv4_core::text::clip;

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
        findings.iter_mut().for_each(|f| *f = finding(f));
    }
    report
}

/// A key finding as the report keeps it: under 100 characters, `…` where it was cut.
fn finding(text: &str) -> String {
    clip(text, 98)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn findings_are_clipped() {
        assert_eq!(finding("abc"), "abc");
        let long = "x".repeat(150);
        assert_eq!(finding(&long).chars().count(), 99);
        assert!(finding(&long).ends_with('…'));
    }
}
