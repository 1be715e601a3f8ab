//! Rendering a review: the Markdown report (`artifacts/review-report.md`), the terminal text,
//! and the JSON note written on the reviewed commit.

use std::fmt::Write;

use super::requirements::Coverage;
use super::{Decision, Dimension, Review, Severity};
use tlv4_core::text::short_id;

/// Findings listed in the Markdown report before the rest is summarised (JSON has them all).
const REPORT_FINDINGS: usize = 200;
/// Findings kept in the note.
const NOTE_FINDINGS: usize = 500;

fn title(d: Dimension) -> &'static str {
    match d {
        Dimension::Quality => "Quality",
        Dimension::Security => "Security",
        Dimension::Architecture => "Architecture",
        Dimension::Requirements => "Requirements",
    }
}

fn justification(review: &Review) -> &'static str {
    match review.verdict {
        Decision::Block => "at least one critical finding must be fixed before this can merge",
        Decision::Conditional if review.empty => {
            "nothing to approve: the change is empty, so nothing implements the plan"
        }
        Decision::Conditional => {
            "no critical finding, but high or medium findings must be fixed or tracked"
        }
        Decision::Approve => "no finding above low: ready to merge",
    }
}

/// The review as Markdown: verdict, scores table, findings with file:line, requirements
/// coverage, revision analysis and approximate diffs.
pub fn markdown(review: &Review) -> String {
    let mut md = String::new();
    let w = &mut md;
    md_header(w, review);
    md_scores(w, review);
    md_findings(w, review);
    md_requirements(w, review);
    md_revisions(w, review);
    md_limits(w, review);
    md_recommendations(w, review);
    md
}

/// The title, the verdict with its reason, and what was reviewed.
fn md_header(w: &mut String, review: &Review) {
    let _ = writeln!(w, "# Code review: {}\n", review.label);
    let _ = writeln!(
        w,
        "**Verdict: {}** (overall {}/100) — {}.\n",
        review.verdict.as_str(),
        review.scores.overall,
        justification(review)
    );
    if review.empty {
        let _ = writeln!(
            w,
            "> **The change is empty.** Nothing outside `.tlv4/` differs between `{}` and `{}`: \
             no code implements the plan (the builtin executor cannot write code). The \
             requirements score is 0 and the verdict cannot be APPROVE.\n",
            short_id(&review.old),
            short_id(&review.new)
        );
    }
    let (added, removed) = review
        .files
        .iter()
        .fold((0, 0), |(a, r), f| (a + f.added, r + f.removed));
    let _ = writeln!(
        w,
        "Reviewed `{}..{}`: {} file{} changed, +{added} −{removed}; line diff: {} (deadline {} ms per file); rules: {}.\n",
        short_id(&review.old),
        short_id(&review.new),
        review.files.len(),
        if review.files.len() == 1 { "" } else { "s" },
        review.algorithm.as_str(),
        review.deadline_ms,
        review.rules
    );
}

/// The scores table: each dimension with its findings by severity.
fn md_scores(w: &mut String, review: &Review) {
    let _ = writeln!(w, "## Scores\n");
    let _ = writeln!(w, "| Dimension | Score | Critical | High | Medium | Low |");
    let _ = writeln!(w, "|---|---:|---:|---:|---:|---:|");
    for d in Dimension::ALL {
        let n = |s: Severity| {
            review
                .findings
                .iter()
                .filter(|f| f.dimension == d && f.severity == s)
                .count()
        };
        let _ = writeln!(
            w,
            "| {} | {} | {} | {} | {} | {} |",
            title(d),
            review.scores.of(d),
            n(Severity::Critical),
            n(Severity::High),
            n(Severity::Medium),
            n(Severity::Low)
        );
    }
    let _ = writeln!(
        w,
        "| **Overall** | **{}** | {} | {} | {} | {} |\n",
        review.scores.overall,
        review.counts.critical,
        review.counts.high,
        review.counts.medium,
        review.counts.low
    );
}

/// The findings by severity, each with its file:line, dimension and rule.
fn md_findings(w: &mut String, review: &Review) {
    let _ = writeln!(w, "## Findings\n");
    if review.findings.is_empty() {
        let _ = writeln!(w, "None.\n");
    }
    for sev in Severity::ALL {
        let list: Vec<_> = review
            .findings
            .iter()
            .filter(|f| f.severity == sev)
            .collect();
        if list.is_empty() {
            continue;
        }
        let _ = writeln!(w, "### {} ({})\n", capitalise(sev.as_str()), list.len());
        for f in list.iter().take(REPORT_FINDINGS) {
            let at = if f.file.is_empty() {
                String::new()
            } else {
                format!("`{}` ", f.location())
            };
            let _ = writeln!(
                w,
                "- {at}[{}] {} (`{}`)",
                f.dimension.as_str(),
                f.reason,
                f.rule
            );
        }
        if list.len() > REPORT_FINDINGS {
            let _ = writeln!(
                w,
                "- … and {} more (see the review note)",
                list.len() - REPORT_FINDINGS
            );
        }
        let _ = writeln!(w);
    }
}

/// The plan's acceptance criteria and how far the change covers them, and the tests.
fn md_requirements(w: &mut String, review: &Review) {
    let _ = writeln!(w, "## Requirements coverage\n");
    let req = &review.requirements;
    if req.criteria.is_empty() {
        let _ = writeln!(
            w,
            "No acceptance criteria to check: {}.\n",
            req.note.as_deref().unwrap_or("none were found")
        );
    } else {
        let count = |c: Coverage| req.criteria.iter().filter(|r| r.coverage == c).count();
        let _ = writeln!(
            w,
            "{} criteria: {} covered, {} partial, {} missing (keyword overlap: covered ≥ the \
             `covered` band, partial ≥ the `partial` band).\n",
            req.criteria.len(),
            count(Coverage::Covered),
            count(Coverage::Partial),
            count(Coverage::Missing)
        );
        let _ = writeln!(w, "| Source | Criterion | Overlap | Status |");
        let _ = writeln!(w, "|---|---|---:|---|");
        for r in &req.criteria {
            let _ = writeln!(
                w,
                "| {} | {} | {}% | {} |",
                r.criterion.source,
                r.criterion.text.replace('|', "\\|"),
                r.overlap,
                r.coverage.as_str()
            );
        }
        let _ = writeln!(w);
    }
    let _ = writeln!(
        w,
        "Tests: {}; the plan {} tests.\n",
        if req.tests_changed {
            "test code changed"
        } else {
            "no test code changed"
        },
        if req.plan_asks_tests {
            "asks for"
        } else {
            "does not ask for"
        }
    );
}

/// The revision analysis: each revised task against its original.
fn md_revisions(w: &mut String, review: &Review) {
    if !review.revisions.is_empty() {
        let _ = writeln!(w, "## Revision analysis\n");
        for r in &review.revisions {
            let _ = writeln!(w, "### {} (revises {})\n", r.task, r.original);
            let _ = writeln!(
                w,
                "- Similarity of the two changes (unified diffs): {:.1}%",
                r.similarity * 100.0
            );
            // The feedback is the user's text: quoted, never Markdown of this report.
            let _ = writeln!(
                w,
                "- Feedback: {}",
                if r.feedback.is_empty() {
                    "(none)".to_owned()
                } else {
                    tlv4_specdoc::md::inline(&r.feedback)
                }
            );
            let _ = writeln!(w, "- Files of the original: {}", list(&r.original_files));
            let _ = writeln!(w, "- Files of the revision: {}", list(&r.revision_files));
            let _ = writeln!(
                w,
                "- Outside the feedback's scope (in neither the feedback nor the original): {}",
                list(&r.outside_scope)
            );
            if let Some(n) = &r.note {
                let _ = writeln!(w, "- Note: {n}");
            }
            let _ = writeln!(w);
        }
    }
}

/// Files whose diff was approximate or that were not reviewed line by line.
fn md_limits(w: &mut String, review: &Review) {
    let approximate = review.approximate();
    let skipped: Vec<_> = review
        .files
        .iter()
        .filter(|f| f.skipped.is_some())
        .collect();
    if !approximate.is_empty() || !skipped.is_empty() {
        let _ = writeln!(w, "## Limits of this review\n");
        for p in approximate {
            let _ = writeln!(
                w,
                "- `{p}`: approximate — the line diff hit its {} ms deadline, so lines after that \
                 point count as added and its findings may include unchanged lines.",
                review.deadline_ms
            );
        }
        for f in skipped {
            let _ = writeln!(
                w,
                "- `{}`: not reviewed line by line ({}).",
                f.path,
                f.skipped.as_deref().unwrap_or("")
            );
        }
        let _ = writeln!(w);
    }
}

/// What to fix before a CONDITIONAL change can merge.
fn md_recommendations(w: &mut String, review: &Review) {
    if review.verdict == Decision::Conditional {
        let _ = writeln!(w, "## Recommendations\n");
        if review.empty {
            let _ = writeln!(
                w,
                "- Implement the plan (run the IMPL tasks with an agent that writes code, or \
                 commit the work on the task branches), then review again."
            );
        }
        for f in review
            .findings
            .iter()
            .filter(|f| matches!(f.severity, Severity::High | Severity::Medium))
            .take(20)
        {
            if f.rule == "empty-change" {
                continue;
            }
            let at = if f.file.is_empty() {
                String::new()
            } else {
                format!("`{}`: ", f.location())
            };
            let _ = writeln!(w, "- {at}{}", f.reason);
        }
        let _ = writeln!(w);
    }
}

/// The review for the terminal.
pub fn text(review: &Review) -> String {
    let mut out = String::new();
    let w = &mut out;
    let (added, removed) = review
        .files
        .iter()
        .fold((0, 0), |(a, r), f| (a + f.added, r + f.removed));
    let _ = writeln!(
        w,
        "review {} ({}..{}): {} file{}, +{added} −{removed}, {}",
        review.label,
        short_id(&review.old),
        short_id(&review.new),
        review.files.len(),
        if review.files.len() == 1 { "" } else { "s" },
        review.algorithm.as_str()
    );
    let _ = writeln!(w, "verdict: {}", review.summary);
    for d in Dimension::ALL {
        let _ = writeln!(w, "  {:<13} {:>3}", d.as_str(), review.scores.of(d));
    }
    let _ = writeln!(w, "  {:<13} {:>5}", "overall", review.scores.overall);
    if !review.findings.is_empty() {
        let _ = writeln!(w, "findings:");
        for f in &review.findings {
            let at = if f.file.is_empty() {
                "-".to_owned()
            } else {
                f.location()
            };
            let _ = writeln!(
                w,
                "  {:<8} {:<12} {at}  {} [{}]",
                f.severity.as_str(),
                f.dimension.as_str(),
                f.reason,
                f.rule
            );
        }
    }
    let req = &review.requirements;
    if req.criteria.is_empty() {
        if let Some(note) = &req.note {
            let _ = writeln!(w, "requirements: {note}");
        }
    } else {
        let _ = writeln!(w, "requirements:");
        for r in &req.criteria {
            let _ = writeln!(
                w,
                "  {:<8} {:>3}%  {} ({})",
                r.coverage.as_str(),
                r.overlap,
                r.criterion.text,
                r.criterion.source
            );
        }
    }
    for r in &review.revisions {
        let _ = writeln!(
            w,
            "revision {} of {}: similarity {:.1}%, outside the feedback's scope: {}",
            r.task,
            r.original,
            r.similarity * 100.0,
            list(&r.outside_scope)
        );
    }
    for p in review.approximate() {
        let _ = writeln!(
            w,
            "approximate: {p} (the line diff hit its {} ms deadline)",
            review.deadline_ms
        );
    }
    for f in review.files.iter().filter(|f| f.skipped.is_some()) {
        let _ = writeln!(
            w,
            "skipped: {} ({})",
            f.path,
            f.skipped.as_deref().unwrap_or("")
        );
    }
    out.trim_end().to_owned()
}

/// The JSON note written on the reviewed commit: the verdict, scores and counts, with the
/// findings (the first 500).
pub fn note_json(review: &Review) -> Vec<u8> {
    let findings: Vec<_> = review.findings.iter().take(NOTE_FINDINGS).collect();
    let value = serde_json::json!({
        "schema": review.schema,
        "label": review.label,
        "old": review.old,
        "new": review.new,
        "verdict": review.verdict,
        "scores": review.scores,
        "counts": review.counts,
        "empty": review.empty,
        "algorithm": review.algorithm,
        "approximate": review.approximate(),
        "criteria": review.requirements.criteria.iter().map(|c| serde_json::json!({
            "source": c.criterion.source,
            "overlap": c.overlap,
            "coverage": c.coverage,
        })).collect::<Vec<_>>(),
        "revisions": review.revisions,
        "findings": findings,
        "findings_total": review.findings.len(),
    });
    let mut out = serde_json::to_vec_pretty(&value).expect("a JSON value serialises");
    out.push(b'\n');
    out
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "none".into()
    } else {
        items
            .iter()
            .map(|s| format!("`{s}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}
