//! The spec quality gate (QUALITY-001 and its rechecks): scores the four spec documents on
//! five dimensions, validates the cross-document rules, and writes the readiness report and
//! the spec summary.
//!
//! Everything is decided by fixed rules from `specs/quality-gates.toml` and the templates in
//! `specs/templates/`, so the same documents always get the same scores. Completeness,
//! consistency, traceability and depth make the overall score (25% each); coverage is
//! reported and gated on its own (the decision is written at the top of the data file).
//! The task completes whatever the verdict — PASS, REVIEW or FAIL — and the coordinator
//! pauses for the user after it.

mod checks;
mod report;
mod rules;
mod score;

use super::{QualityContext, QualityResult};
use crate::agents::{Outcome, StateUpdate, TaskInput, TaskOutput};
use tlv4_core::error::Result;
use tlv4_core::model::Verdict;

use rules::{Rules, Severity};
use score::{DIMENSIONS, Evaluation};
use tlv4_specdoc::audit::Spec;
use tlv4_specdoc::spec::Kind;

/// At most this many lines go to `wisdom/issues.md`.
const MAX_WARNINGS: usize = 10;

/// Runs a gate task: reads the spec from the pipeline folder, scores it and writes
/// `spec/readiness-report.md` and `spec/spec-summary.md`.
pub fn run_task(input: &TaskInput, _ctx: &QualityContext) -> Result<QualityResult> {
    let rules = Rules::embedded()?;
    let spec = Spec::read(&input.folder);
    let ev = score::evaluate(&spec, &rules, &input.session.task);
    let readiness = report::readiness(input, &spec, &ev, &rules);
    let summary_doc = report::summary(input, &spec, &ev, &rules);

    let gate = ev.gate.as_str();
    let dims = DIMENSIONS
        .iter()
        .take(4)
        .enumerate()
        .map(|(i, d)| format!("{d} {:.0}", ev.scores[i]))
        .collect::<Vec<_>>()
        .join(", ");
    let verdict = Verdict {
        verdict: gate.to_owned(),
        score: Some(ev.overall),
        summary: format!(
            "{gate} {:.1}/100 ({dims}; coverage {:.0}): {}",
            ev.overall,
            ev.score("coverage"),
            report::message(&rules, ev.gate)
        ),
    };
    let errors = ev.count(Severity::Error);
    let warnings_n = ev.count(Severity::Warning);
    let summary = format!(
        "{}: {gate} {:.1}/100, coverage {:.1}; {errors} error{}, {warnings_n} warning{}",
        input.task.id,
        ev.overall,
        ev.score("coverage"),
        if errors == 1 { "" } else { "s" },
        if warnings_n == 1 { "" } else { "s" },
    );
    let mut warnings: Vec<String> = vec![format!(
        "{}: spec gate {gate} at {:.1} ({})",
        input.task.id, ev.overall, ev.gate_reason
    )];
    warnings.extend(
        ev.findings
            .iter()
            .filter(|f| f.severity != Severity::Info)
            .take(MAX_WARNINGS - 1)
            .map(|f| {
                format!(
                    "{} {} [{}] {}: {}",
                    input.task.id,
                    f.severity.as_str(),
                    f.rule,
                    f.place,
                    f.message
                )
            }),
    );
    let state_update = state_update(&spec, &ev, &rules);
    state_update.validate()?;
    Ok(QualityResult {
        output: TaskOutput {
            outcome: Outcome::Completed,
            summary,
            files: vec![
                (report::READINESS.to_owned(), readiness.into_bytes()),
                (report::SUMMARY.to_owned(), summary_doc.into_bytes()),
            ],
            state_update,
        },
        verdict: Some(verdict),
        warnings,
        fix: None,
    })
}

/// Cuts `text` to fewer than 100 characters.
fn finding(text: &str) -> String {
    match text.char_indices().nth(96) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// Key findings (at most 5), the decision and what was checked.
fn state_update(spec: &Spec, ev: &Evaluation, rules: &Rules) -> StateUpdate {
    let mut key = vec![finding(&format!(
        "Spec gate {}: overall {:.1}, coverage {:.1}",
        ev.gate.as_str(),
        ev.overall,
        ev.score("coverage")
    ))];
    let missing: Vec<&str> = Kind::SPEC
        .iter()
        .filter(|d| !spec.has(**d))
        .map(|d| d.title())
        .collect();
    if !missing.is_empty() {
        key.push(finding(&format!(
            "Missing documents: {}",
            missing.join(", ").to_lowercase()
        )));
    }
    let (i, low) = ev
        .scores
        .iter()
        .enumerate()
        .min_by(|a, b| a.1.partial_cmp(b.1).unwrap_or(std::cmp::Ordering::Equal))
        .expect("five scores");
    key.push(finding(&format!(
        "Lowest dimension: {} {low:.1}",
        DIMENSIONS[i]
    )));
    let (e, w) = (ev.count(Severity::Error), ev.count(Severity::Warning));
    key.push(finding(&format!(
        "{e} error{}, {w} warning{}, {} info across {} rules",
        if e == 1 { "" } else { "s" },
        if w == 1 { "" } else { "s" },
        ev.count(Severity::Info),
        rules.rules.len()
    )));
    if let Some(f) = ev.findings.first() {
        key.push(finding(&format!("{} {}: {}", f.rule, f.place, f.message)));
    }
    key.truncate(5);
    let files = spec.files.iter().filter(|f| f.text.is_some()).count();
    StateUpdate {
        key_findings: key,
        decisions: vec![format!("gate {}: {}", ev.gate.as_str(), ev.gate_reason)],
        files_modified: vec![report::READINESS.to_owned(), report::SUMMARY.to_owned()],
        verification: format!(
            "scored 5 dimensions over {files} spec file{} ({} goals, {} requirements, \
             {} components, {} ADRs, {} epics, {} stories) and checked {} rules from \
             specs/quality-gates.toml",
            if files == 1 { "" } else { "s" },
            spec.goals.len(),
            spec.requirements.len(),
            spec.components.len(),
            spec.adrs.len(),
            spec.epics.len(),
            spec.stories().count(),
            rules.rules.len()
        ),
        tech_profile: None,
    }
}

#[cfg(test)]
mod tests;
