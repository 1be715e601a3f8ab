//! The words of the analyst's report: the summary line, key findings, open questions,
//! recommendations, and the patterns and integration points of the exploration.
//!
//! Each is derived from the scan and the seed analysis by fixed rules, so the same facts
//! always read the same way.

use super::seed::Seed;
use super::{Facts, explore, manifest};

/// The one-line summary: `Rust CLI, 14 files; signals: auth_detected, test_gap`.
pub(super) fn summary(seed: &Seed, facts: &Facts) -> String {
    if !facts.has_source {
        return format!(
            "No source code ({}): new project; complexity {}",
            count(facts.files, "file"),
            seed.complexity.as_str()
        );
    }
    let signals = if facts.profile.signals.is_empty() {
        "none".to_owned()
    } else {
        facts.profile.signals.join(", ")
    };
    format!(
        "{} {}, {}; signals: {signals}",
        facts.primary.as_deref().unwrap_or("Mixed"),
        facts.kind(),
        count(facts.files, "file")
    )
}

/// At most five findings, each under 100 characters.
pub(super) fn key_findings(seed: &Seed, facts: &Facts) -> Vec<String> {
    let mut out = Vec::new();
    if facts.has_source {
        let langs: Vec<String> = facts
            .languages
            .iter()
            .take(3)
            .map(|l| format!("{} {}%", l.name, (l.share * 100.0).round()))
            .collect();
        out.push(format!("Languages: {}", langs.join(", ")));
        out.push(if facts.frameworks.is_empty() {
            "No framework recognised in the manifests".to_owned()
        } else {
            format!("Frameworks: {}", facts.frameworks.join(", "))
        });
        out.push(match &facts.test_framework {
            Some(t) => format!(
                "Tests: {} (`{}`), {}",
                t.name,
                t.command,
                count(facts.test_files, "test file")
            ),
            None => "No test framework found".to_owned(),
        });
    } else {
        out.push("No source code: treated as a new project".to_owned());
        out.push(format!("Domain: {}", seed.analysis.domain));
    }
    out.push(if facts.profile.signals.is_empty() {
        "No tech-profile signals".to_owned()
    } else {
        format!("Signals: {}", facts.profile.signals.join(", "))
    });
    out.push(format!(
        "Complexity {}; focus: {}",
        seed.complexity.as_str(),
        seed.analysis.exploration_dimensions.join(", ")
    ));
    out.into_iter().map(|f| clip(&f, 99)).collect()
}

/// `n` and `word`, plural unless `n` is 1: `1 file`, `3 files`.
pub(super) fn count(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// `text` cut to at most `max` characters, marked with `…` when cut.
fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max - 1).collect();
    out.push('…');
    out
}

/// What the analyst could not know.
pub(super) fn open_questions(seed: &Seed, facts: &Facts) -> Vec<String> {
    let mut out = Vec::new();
    if !facts.has_source {
        out.push(
            "No source code was found: is this a new project, and in which language and framework?"
                .to_owned(),
        );
    } else if facts.test_framework.is_none() {
        out.push("No test framework was found: how should the change be verified?".to_owned());
    }
    if !seed.has_criteria {
        out.push(
            "The request states no acceptance criteria: what shows that the work is done?"
                .to_owned(),
        );
    }
    if seed.vague {
        out.push(
            "The scope is open (short or general wording): which parts are in scope, and which are not?"
                .to_owned(),
        );
    }
    if seed.analysis.target_users.is_empty() && seed.preset == "feature" {
        out.push("Who is the change for (end users, administrators, developers)?".to_owned());
    }
    if facts.has_source {
        for m in &super::seed::TABLES.mention {
            if seed.words.any(&m.words) && !facts.profile.has(&m.signal) {
                out.push(m.question.clone());
            }
        }
    }
    out
}

/// Advice for the next roles, from the signals and the scan.
pub(super) fn recommendations(facts: &Facts) -> Vec<String> {
    let p = &facts.profile;
    let mut out = Vec::new();
    if !facts.has_source {
        out.push(
            "Start as a new project: choose the language, layout and test framework first"
                .to_owned(),
        );
        return out;
    }
    if p.has("sql_detected") && p.has("auth_detected") {
        out.push(
            "Plan a security review (security-expert): SQL and authentication meet".to_owned(),
        );
    }
    if p.has("data_migration") {
        out.push("Plan schema changes as migrations with a rollback (data-engineer)".to_owned());
    }
    if p.has("ml_detected") {
        out.push(
            "Have the ML parts reviewed (ml-engineer): data, training and inference".to_owned(),
        );
    }
    if p.has("devops_detected") {
        out.push(
            "Check containers and CI when the change touches delivery (devops-engineer)".to_owned(),
        );
    }
    if p.has("api_surface") {
        out.push(
            "Treat the HTTP routes as a contract: list the ones the change touches".to_owned(),
        );
    }
    if p.has("perf_sensitive") {
        out.push("Measure before and after: the code has benchmarks or hot paths".to_owned());
    }
    if p.has("crypto_usage") {
        out.push(
            "Keep cryptography to the libraries already in use, and have it reviewed".to_owned(),
        );
    }
    if p.has("realtime_detected") {
        out.push("Design for connection loss and reconnection in the realtime paths".to_owned());
    }
    if p.has("legacy_patterns") {
        out.push(
            "Follow the existing idioms; do not mix legacy and modern styles in one change"
                .to_owned(),
        );
    }
    if p.has("test_gap") {
        out.push(format!(
            "Add tests with the change: {} for {}",
            count(facts.test_files, "test file"),
            count(facts.source_files, "source file")
        ));
    }
    match &facts.test_framework {
        Some(t) => out.push(format!("Verify with `{}` ({})", t.command, t.name)),
        None => out.push("Agree on a test framework before implementation".to_owned()),
    }
    out
}

/// Conventions of the code base, for the exploration.
pub(super) fn patterns(facts: &Facts) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(l) = facts.languages.first() {
        out.push(format!(
            "mostly {} ({}% of the source bytes)",
            l.name,
            (l.share * 100.0).round()
        ));
    }
    if !facts.layout.source_dirs.is_empty() {
        out.push(format!(
            "source under {}",
            facts.layout.source_dirs.join(", ")
        ));
    }
    if !facts.layout.test_dirs.is_empty() {
        out.push(format!("tests under {}", facts.layout.test_dirs.join(", ")));
    }
    if facts.inline_tests > 0 {
        out.push(format!(
            "unit tests inline in {}",
            count(facts.inline_tests, "source file")
        ));
    }
    out.extend(explore::conventions(&facts.manifests));
    if facts
        .layout
        .ci
        .iter()
        .any(|c| c.starts_with(".github/workflows/"))
    {
        out.push("CI on GitHub Actions".to_owned());
    }
    out
}

/// Where the code meets the outside, for the exploration.
pub(super) fn integration_points(facts: &Facts) -> Vec<String> {
    let mut out: Vec<String> = facts
        .layout
        .entry_points
        .iter()
        .map(|p| format!("entry point {p}"))
        .collect();
    let signal_points = [
        ("api_surface", "HTTP routes in"),
        ("sql_detected", "database access in"),
        ("realtime_detected", "realtime connections in"),
    ];
    for (signal, what) in signal_points {
        // Code only: a manifest declares a library, it is not where the code meets the world.
        let paths: Vec<&str> = facts
            .profile
            .evidence
            .get(signal)
            .into_iter()
            .flatten()
            .map(String::as_str)
            .filter(|p| manifest::kind_of(p).is_none())
            .collect();
        if !paths.is_empty() {
            out.push(format!("{what} {}", paths.join(", ")));
        }
    }
    out.extend(explore::integrations(&facts.manifests));
    out
}

/// Next steps for whoever reads the exploration.
pub(super) fn exploration_recommendations(facts: &Facts) -> Vec<String> {
    let mut out = Vec::new();
    if facts.relevant.is_empty() {
        if facts.layout.entry_points.is_empty() {
            out.push(
                "No file matches the request's words; locate the change with the author".into(),
            );
        } else {
            out.push(format!(
                "No file matches the request's words; start from the entry points: {}",
                facts.layout.entry_points.join(", ")
            ));
        }
    } else {
        let top: Vec<&str> = facts
            .relevant
            .iter()
            .take(3)
            .map(|r| r.path.as_str())
            .collect();
        out.push(format!("Start reading at {}", top.join(", ")));
        if let Some(test) = facts.relevant.iter().find(|r| r.role == "test") {
            out.push(format!("Extend the existing tests in {}", test.path));
        }
    }
    if let Some(t) = &facts.test_framework {
        out.push(format!("Run `{}` before and after the change", t.command));
    }
    out
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
