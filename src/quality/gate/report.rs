//! The gate's two documents: `spec/readiness-report.md` (scores, gate, violations, what to
//! improve first; `improve` reads its scores table back) and `spec/spec-summary.md` (the
//! four documents on one page).

use std::fmt::Write as _;

use super::rules::{Rules, Severity};
use super::score::{DIMENSIONS, Evaluation, GateResult, Ratio};
use crate::agents::TaskInput;
use tlv4_core::text::{cell, excerpt};
use tlv4_specdoc::audit::Spec;
use tlv4_specdoc::md::{self, GATE as MD};
use tlv4_specdoc::spec::Kind;

/// Where the readiness report goes.
pub(super) const READINESS: &str = "spec/readiness-report.md";
/// Where the summary goes.
pub(super) const SUMMARY: &str = "spec/spec-summary.md";

/// At most this many violations are listed one by one.
const MAX_LISTED: usize = 60;

/// A table cell ([`cell`]), `—` when it would be empty.
fn filled(text: &str) -> String {
    match cell(text) {
        c if c.is_empty() => "—".into(),
        c => c,
    }
}

/// `Completeness` for `completeness`.
fn title_case(dim: &str) -> String {
    let mut c = dim.chars();
    c.next()
        .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
        .unwrap_or_default()
}

/// The title the four documents share, else the request.
pub(super) fn title(input: &TaskInput, spec: &Spec) -> String {
    Kind::SPEC
        .iter()
        .find_map(|d| MD.title(spec.index_text(*d)?))
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| {
            let t = input
                .session
                .task
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            match t.char_indices().nth(70) {
                Some((at, _)) => format!("{}…", &t[..at]),
                None if t.is_empty() => "untitled request".into(),
                None => t,
            }
        })
}

/// The version of the document at `path`: one more than the one in the folder, or 1.
fn version(input: &TaskInput, path: &str) -> u32 {
    input
        .folder_text(path)
        .and_then(|t| MD.frontmatter(t))
        .and_then(|fm| fm.get("version")?.parse::<u32>().ok())
        .map_or(1, |v| v + 1)
}

/// The gate's message (§7.8).
pub(super) fn message(rules: &Rules, gate: GateResult) -> &str {
    match gate {
        GateResult::Pass => &rules.gate.pass_message,
        GateResult::Review => &rules.gate.review_message,
        GateResult::Fail => &rules.gate.fail_message,
    }
}

/// What the user should do next (§7.7 guidance).
pub(super) fn recommended_action(ev: &Evaluation) -> String {
    let lowest = lowest(ev);
    match ev.gate {
        GateResult::Pass => "approve and go on (`git tlv4 approve`)".into(),
        GateResult::Review => format!(
            "improve {lowest} or revise the flagged documents first (`git tlv4 improve \
             {lowest}`, `git tlv4 revise TASK --feedback TEXT`), then `git tlv4 recheck`; \
             approving now proceeds at risk"
        ),
        GateResult::Fail if ev.completeness.iter().all(|d| !d.present) => {
            "write the spec documents first: rerun or revise the writer tasks; do not approve"
                .into()
        }
        GateResult::Fail => format!(
            "rework before going on (`git tlv4 improve {lowest}` or `git tlv4 revise TASK \
             --feedback TEXT`); approving is not recommended"
        ),
    }
}

/// The dimension with the lowest score (the first on a tie).
fn lowest(ev: &Evaluation) -> &'static str {
    let mut best = (f64::INFINITY, DIMENSIONS[0]);
    for (i, d) in DIMENSIONS.iter().enumerate() {
        if ev.scores[i] < best.0 {
            best = (ev.scores[i], d);
        }
    }
    best.1
}

/// The steps to take first, most important first (at most 5).
pub(super) fn improve_first(ev: &Evaluation, spec: &Spec, rules: &Rules) -> Vec<String> {
    let mut out = Vec::new();
    let missing: Vec<&str> = ev
        .completeness
        .iter()
        .filter(|d| !d.present)
        .map(|d| d.doc.index())
        .collect();
    if !missing.is_empty() {
        out.push(format!(
            "Write the missing document{}: {}.",
            if missing.len() == 1 { "" } else { "s" },
            missing
                .iter()
                .map(|m| format!("`{m}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let errors: Vec<_> = ev
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Error && f.rule != "document")
        .collect();
    if !errors.is_empty() {
        let first: Vec<String> = errors
            .iter()
            .take(3)
            .map(|f| format!("{} ({})", excerpt(&f.message, 100), f.place))
            .collect();
        out.push(format!(
            "Fix the {} Error-class violation{} (Error-class violations hold the gate below \
             PASS): {}{}.",
            errors.len(),
            if errors.len() == 1 { "" } else { "s" },
            first.join("; "),
            if errors.len() > 3 { "; …" } else { "" }
        ));
    }
    let mut dims: Vec<(usize, f64)> = ev.scores.iter().copied().enumerate().collect();
    dims.sort_by(|a, b| a.1.partial_cmp(&b.1).unwrap_or(std::cmp::Ordering::Equal));
    for (i, score) in dims {
        let dim = DIMENSIONS[i];
        let target = if dim == "coverage" {
            rules.gate.coverage_pass
        } else {
            rules.gate.pass
        };
        if score >= target || out.len() >= 5 || ev.completeness.iter().all(|d| !d.present) {
            continue;
        }
        out.push(format!(
            "Raise {dim} from {score:.1} to {target:.0} (`git tlv4 improve {dim}`): {}.",
            advice(dim, ev, spec, rules)
        ));
    }
    if out.is_empty() {
        out.push(
            "Nothing blocks readiness: review the warnings below, then `git tlv4 approve`.".into(),
        );
    }
    out.truncate(5);
    out
}

/// The weakest part of a ratio list.
fn weakest(parts: &[Ratio]) -> Option<&Ratio> {
    parts.iter().min_by(|a, b| {
        a.ratio()
            .partial_cmp(&b.ratio())
            .unwrap_or(std::cmp::Ordering::Equal)
    })
}

/// What raises `dim` most, from the details.
fn advice(dim: &str, ev: &Evaluation, spec: &Spec, rules: &Rules) -> String {
    let first_of = |rules_: &[&str]| {
        ev.findings
            .iter()
            .find(|f| rules_.contains(&f.rule))
            .map(|f| format!("; e.g. {} ({})", f.message, f.place))
            .unwrap_or_default()
    };
    match dim {
        "completeness" => {
            let worst = ev.completeness.iter().min_by(|a, b| {
                a.score()
                    .partial_cmp(&b.score())
                    .unwrap_or(std::cmp::Ordering::Equal)
            });
            match worst {
                Some(d) => {
                    let examples: Vec<&String> = d.missing.iter().chain(&d.thin).take(3).collect();
                    format!(
                        "`{}` and its items score {:.1}: {} missing and {} thin section{}{}",
                        d.doc.index(),
                        d.score(),
                        d.missing.len(),
                        d.thin.len(),
                        if d.thin.len() == 1 { "" } else { "s" },
                        if examples.is_empty() {
                            String::new()
                        } else {
                            format!(
                                ", first {}",
                                examples
                                    .iter()
                                    .map(|e| e.as_str())
                                    .collect::<Vec<_>>()
                                    .join("; ")
                            )
                        }
                    )
                }
                None => "fill the sections of the templates".into(),
            }
        }
        "consistency" => match ev
            .consistency
            .iter()
            .max_by(|a, b| a.2.partial_cmp(&b.2).unwrap_or(std::cmp::Ordering::Equal))
        {
            Some((rule, n, points)) => format!(
                "{n} finding{} of `{rule}` cost {points:.0} points ({}){}",
                if *n == 1 { "" } else { "s" },
                rules.rule(rule).text,
                first_of(&[rule])
            ),
            None => "use the same ids, titles and terms in every document".into(),
        },
        "traceability" => match weakest(&ev.traceability) {
            Some(r) => format!(
                "{} links {:.0} of {:.0}{}",
                r.name,
                r.found,
                r.expected,
                first_of(&[
                    "goal-requirement",
                    "requirement-component",
                    "requirement-story",
                    "adr-requirement",
                ])
            ),
            None => "link every goal, requirement, component and story".into(),
        },
        "depth" => match weakest(&ev.depth) {
            Some(r) => {
                let how = match r.name.as_str() {
                    "Acceptance-criteria testability" => format!(
                        "give each requirement at least {} concrete, checkable criteria",
                        rules.depth.criteria_per_requirement
                    ),
                    "ADR justification" => format!(
                        "weigh {} alternatives with pros and cons in each ADR and state its \
                         consequences",
                        rules.depth.adr_alternatives
                    ),
                    "Story estimability" => {
                        "give each story a user story, a size, criteria and traces".into()
                    }
                    _ => "name the technology and responsibility of each component and the \
                          metric, target and method of each NFR"
                        .into(),
                };
                format!(
                    "{} is {:.0}%: {how}",
                    r.name.to_lowercase(),
                    100.0 * r.ratio()
                )
            }
            None => "add acceptance criteria and decision detail".into(),
        },
        _ => {
            let mut s = match weakest(&ev.coverage) {
                Some(r) => format!(
                    "{}: {:.0} of {:.0}",
                    r.name.to_lowercase(),
                    r.found,
                    r.expected
                ),
                None => String::new(),
            };
            if let Some(c) = ev.uncaptured.first() {
                let _ = write!(s, "; the request's \"{c}\" has no goal or requirement");
            } else if spec.goals.is_empty() {
                s.push_str("; the brief has no goals");
            }
            s
        }
    }
}

/// `spec/readiness-report.md`.
pub(super) fn readiness(input: &TaskInput, spec: &Spec, ev: &Evaluation, rules: &Rules) -> String {
    let mut o = String::new();
    readiness_head(&mut o, input, spec, ev, rules);
    scores_section(&mut o, ev, rules);
    gate_section(&mut o, ev);
    improve_section(&mut o, spec, ev, rules);
    documents_table(&mut o, ev);
    completeness_section(&mut o, ev, rules);
    consistency_section(&mut o, ev, rules);
    traceability_section(&mut o, spec, ev);
    depth_section(&mut o, ev, rules);
    coverage_section(&mut o, ev, rules);
    validation_section(&mut o, ev, rules);
    violations_section(&mut o, ev);
    references_section(&mut o);
    o
}

/// The frontmatter, the title and the headline: score, gate and the recommended action.
fn readiness_head(o: &mut String, input: &TaskInput, spec: &Spec, ev: &Evaluation, rules: &Rules) {
    let title = title(input, spec);
    let sid = input.session.id.to_string();
    let when = &input.session.created_at;
    let task = input.task.id.as_str();
    let gate = ev.gate.as_str();
    let deps: Vec<&str> = Kind::SPEC.iter().map(|d| d.index()).collect();
    let _ = write!(
        o,
        "---\nsession_id: {sid}\nphase: 6\ndocument_type: readiness-report\nstatus: complete\n\
         generated_at: {when}\nversion: {}\ntask: {task}\ngate: {gate}\noverall_score: {:.1}\n\
         coverage_score: {:.1}\ndependencies: [{}]\n---\n\n",
        version(input, READINESS),
        ev.overall,
        ev.score("coverage"),
        deps.join(", ")
    );
    let _ = writeln!(o, "# Readiness Report: {title}\n");
    let _ = writeln!(
        o,
        "- **Generated:** {when} by {task} (deterministic rules, `specs/quality-gates.toml`)"
    );
    let _ = writeln!(o, "- **Overall Score:** {:.1} / 100", ev.overall);
    let _ = writeln!(
        o,
        "- **Quality Gate:** {gate} — {}",
        message(rules, ev.gate)
    );
    let _ = writeln!(o, "- **Recommended Action:** {}\n", recommended_action(ev));
}

/// `## Scores`: each dimension's weight and score, and how the gate is decided.
fn scores_section(o: &mut String, ev: &Evaluation, rules: &Rules) {
    let _ = writeln!(o, "## Scores\n");
    let _ = writeln!(o, "| Dimension | Weight | Score |\n|---|---|---|");
    for (i, d) in DIMENSIONS.iter().enumerate() {
        let weight = if ev.weights[i] > 0.0 {
            format!("{:.0}%", ev.weights[i])
        } else {
            "gated separately".into()
        };
        let _ = writeln!(o, "| {} | {weight} | {:.1} |", title_case(d), ev.scores[i]);
    }
    let g = &rules.gate;
    let _ = writeln!(
        o,
        "\n**Overall: {:.1}** — the weighted average of completeness, consistency, \
         traceability and depth. Coverage does not enter it; it is gated on its own. PASS \
         needs overall ≥ {:.0} and coverage ≥ {:.0}; overall < {:.0} or coverage < {:.0} \
         fails; anything else is REVIEW{}.\n",
        ev.overall,
        g.pass,
        g.coverage_pass,
        g.fail_below,
        g.coverage_fail_below,
        if g.errors_block_pass {
            ". An Error-class violation holds a PASS at REVIEW"
        } else {
            ""
        }
    );
}

/// `## Gate Result`: the gate, its reason and the count of findings per class.
fn gate_section(o: &mut String, ev: &Evaluation) {
    let gate = ev.gate.as_str();
    let _ = writeln!(o, "## Gate Result\n");
    let _ = writeln!(
        o,
        "**{gate}**: {}. {} error{}, {} warning{}, {} info.\n",
        ev.gate_reason,
        ev.count(Severity::Error),
        if ev.count(Severity::Error) == 1 {
            ""
        } else {
            "s"
        },
        ev.count(Severity::Warning),
        if ev.count(Severity::Warning) == 1 {
            ""
        } else {
            "s"
        },
        ev.count(Severity::Info)
    );
}

/// `## Improve First`: the numbered steps to take first.
fn improve_section(o: &mut String, spec: &Spec, ev: &Evaluation, rules: &Rules) {
    let _ = writeln!(o, "## Improve First\n");
    for (i, step) in improve_first(ev, spec, rules).iter().enumerate() {
        let _ = writeln!(o, "{}. {step}", i + 1);
    }
    o.push('\n');
}

/// `## Documents Reviewed`: each document's path, files and completeness.
fn documents_table(o: &mut String, ev: &Evaluation) {
    let _ = writeln!(o, "## Documents Reviewed\n");
    let _ = writeln!(
        o,
        "| Document | Path | Files | Completeness |\n|---|---|---|---|"
    );
    for d in &ev.completeness {
        let (files, score) = if d.present {
            (d.files.to_string(), format!("{:.1}", d.score()))
        } else {
            ("missing".into(), "0.0".into())
        };
        let _ = writeln!(
            o,
            "| {} | `{}` | {files} | {score} |",
            d.doc.title(),
            d.doc.index()
        );
    }
    o.push('\n');
}

/// `## Completeness`: how it is scored, then each document's missing and thin sections.
fn completeness_section(o: &mut String, ev: &Evaluation, rules: &Rules) {
    let _ = writeln!(o, "## Completeness\n");
    let _ = writeln!(
        o,
        "Each heading of the file's template counts once, and so does the frontmatter. A \
         heading that is present earns {:.0}%; more than {} characters of text under it (in a \
         single-item file, {}) earns the rest. Frontmatter earns {:.0}% for being there and the \
         rest for its required keys. The score is the mean over the four documents.\n",
        100.0 * rules.completeness.present_share,
        rules.completeness.substantial_chars,
        rules.completeness.item_substantial_chars,
        100.0 * rules.completeness.present_share,
    );
    for d in &ev.completeness {
        if !d.present {
            let _ = writeln!(o, "- {}: missing.", d.doc.title());
            continue;
        }
        let _ = writeln!(
            o,
            "- {}: {:.1} ({} missing, {} thin section{}).",
            d.doc.title(),
            d.score(),
            d.missing.len(),
            d.thin.len(),
            if d.thin.len() == 1 { "" } else { "s" }
        );
        for t in d.missing.iter().take(5) {
            let _ = writeln!(o, "  - missing: {t}");
        }
        for t in d.thin.iter().take(5) {
            let _ = writeln!(o, "  - thin: {t}");
        }
        let more = d.missing.len().saturating_sub(5) + d.thin.len().saturating_sub(5);
        if more > 0 {
            let _ = writeln!(o, "  - … and {more} more");
        }
    }
    o.push('\n');
}

/// `## Consistency`: the penalties, then the points each rule lost.
fn consistency_section(o: &mut String, ev: &Evaluation, rules: &Rules) {
    let _ = writeln!(o, "## Consistency\n");
    let c = &rules.consistency;
    let _ = writeln!(
        o,
        "100 minus penalties: high {:.0} (broken references, duplicate ids), medium {:.0} \
         (terminology, ids that disagree across documents), low {:.0} (format, naming, \
         frontmatter); at most {:.0} points per rule.\n",
        c.high, c.medium, c.low, c.max_per_rule
    );
    if ev.consistency.is_empty() {
        let _ = writeln!(o, "No consistency finding.\n");
    } else {
        let _ = writeln!(o, "| Rule | Findings | Points lost |\n|---|---|---|");
        for (rule, n, points) in &ev.consistency {
            let _ = writeln!(o, "| {rule} | {n} | {points:.0} |");
        }
        o.push('\n');
    }
}

/// `## Traceability`: the link shares, then the matrix from each goal to its requirements, components and stories.
fn traceability_section(o: &mut String, spec: &Spec, ev: &Evaluation) {
    let _ = writeln!(o, "## Traceability\n");
    let _ = writeln!(
        o,
        "The mean share of links that exist, per kind (a kind with nothing to link scores 0).\n"
    );
    ratio_table(o, "Link", &ev.traceability);
    let _ = writeln!(o, "### Traceability Matrix\n");
    if spec.goals.is_empty() {
        let _ = writeln!(o, "The brief has no goals to trace.\n");
    } else {
        let _ = writeln!(
            o,
            "| Goal | Requirements | Components | Stories |\n|---|---|---|---|"
        );
        for g in &spec.goals {
            let reqs: Vec<&str> = spec
                .requirements
                .iter()
                .filter(|r| r.goals().contains(&g.id))
                .map(|r| r.id.as_str())
                .collect();
            let comps: Vec<&str> = spec
                .components
                .iter()
                .filter(|c| c.implements.iter().any(|r| reqs.contains(&r.as_str())))
                .map(|c| c.id.as_str())
                .collect();
            let stories: Vec<&str> = spec
                .stories()
                .filter(|(_, s)| s.traces.iter().any(|r| reqs.contains(&r.as_str())))
                .map(|(_, s)| s.id.as_str())
                .collect();
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} |",
                g.id,
                filled(&reqs.join(", ")),
                filled(&comps.join(", ")),
                filled(&stories.join(", "))
            );
        }
        o.push('\n');
    }
}

/// `## Depth`: what the four sub-scores measure, then their table.
fn depth_section(o: &mut String, ev: &Evaluation, rules: &Rules) {
    let _ = writeln!(o, "## Depth\n");
    let _ = writeln!(
        o,
        "The mean of four sub-scores. Acceptance criteria: at least {} per requirement and {} \
         per story, each of {}+ words and not vague unless it holds a number. ADRs: {} \
         alternatives with pros and cons, context and consequences. Stories: user story, size, \
         criteria, traces. Technical detail: component technology and responsibility, NFR \
         metric, target and method.\n",
        rules.depth.criteria_per_requirement,
        rules.depth.criteria_per_story,
        rules.depth.min_criterion_words,
        rules.depth.adr_alternatives
    );
    ratio_table(o, "Sub-score", &ev.depth);
}

/// `## Requirement Coverage`: the three shares, then the request clauses nothing captures.
fn coverage_section(o: &mut String, ev: &Evaluation, rules: &Rules) {
    let _ = writeln!(o, "## Requirement Coverage\n");
    let _ = writeln!(
        o,
        "The mean of three shares: goals that reach a story, requirements that are designed and \
         delivered (an NFR: addressed by a decision, component, story or the architecture), and \
         clauses of the request whose key words are {:.0}% present in the goals and \
         requirements.\n",
        100.0 * rules.coverage.request_overlap
    );
    ratio_table(o, "Part", &ev.coverage);
    if !ev.uncaptured.is_empty() {
        let _ = writeln!(o, "Request clauses no goal or requirement captures:\n");
        for c in &ev.uncaptured {
            let _ = writeln!(o, "- \"{c}\"");
        }
        o.push('\n');
    }
}

/// `## Cross-Document Validation`: each rule, its class and its violations.
fn validation_section(o: &mut String, ev: &Evaluation, rules: &Rules) {
    let _ = writeln!(o, "## Cross-Document Validation\n");
    let _ = writeln!(
        o,
        "| Rule | Class | Checks | Violations |\n|---|---|---|---|"
    );
    for r in &rules.rules {
        let n = ev.findings.iter().filter(|f| f.rule == r.id).count();
        let status = if ev.skipped.contains(&r.id.as_str()) {
            "not checked (document missing)".to_owned()
        } else {
            n.to_string()
        };
        let class = match r.must_severity {
            Some(m) => format!("{} ({} for Must)", r.severity.as_str(), m.as_str()),
            None => r.severity.as_str().to_owned(),
        };
        let _ = writeln!(o, "| {} | {class} | {} | {status} |", r.id, filled(&r.text));
    }
    o.push('\n');
}

/// `## Violations`: the first `MAX_LISTED` findings.
fn violations_section(o: &mut String, ev: &Evaluation) {
    let _ = writeln!(o, "## Violations\n");
    if ev.findings.is_empty() {
        let _ = writeln!(o, "None.\n");
    } else {
        let _ = writeln!(
            o,
            "| # | Class | Rule | Where | Finding |\n|---|---|---|---|---|"
        );
        for (i, f) in ev.findings.iter().take(MAX_LISTED).enumerate() {
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {} |",
                i + 1,
                f.severity.as_str(),
                f.rule,
                filled(&f.place),
                filled(&f.message)
            );
        }
        if ev.findings.len() > MAX_LISTED {
            let _ = writeln!(o, "\n… and {} more.", ev.findings.len() - MAX_LISTED);
        }
        o.push('\n');
    }
}

/// `## References`: the summary and the documents.
fn references_section(o: &mut String) {
    let _ = writeln!(o, "## References\n");
    let _ = writeln!(o, "- Summary: `{SUMMARY}`");
    for d in Kind::SPEC {
        let _ = writeln!(o, "- {}: `{}`", d.title(), d.index());
    }
}

fn ratio_table(o: &mut String, first: &str, parts: &[Ratio]) {
    let _ = writeln!(
        o,
        "| {first} | Found | Expected | Score |\n|---|---|---|---|"
    );
    for p in parts {
        let found = if p.found.fract() == 0.0 {
            format!("{:.0}", p.found)
        } else {
            format!("{:.2}", p.found)
        };
        let _ = writeln!(
            o,
            "| {} | {found} | {:.0} | {:.1} |",
            p.name,
            p.expected,
            100.0 * p.ratio()
        );
    }
    o.push('\n');
}

/// The open questions of `doc`'s main file.
fn open_questions(spec: &Spec, doc: Kind) -> Vec<String> {
    spec.index_text(doc)
        .and_then(|t| MD.section(t, "Open Questions"))
        .map(|t| MD.items(t))
        .unwrap_or_default()
}

/// `spec/spec-summary.md`.
pub(super) fn summary(input: &TaskInput, spec: &Spec, ev: &Evaluation, rules: &Rules) -> String {
    let mut o = String::new();
    summary_head(&mut o, input, spec, ev, rules);
    documents_list(&mut o, ev);
    goals_section(&mut o, spec);
    requirements_section(&mut o, spec);
    components_section(&mut o, spec);
    decisions_section(&mut o, spec);
    epics_section(&mut o, spec);
    open_questions_section(&mut o, spec);
    strengths_section(&mut o, ev);
    recommendations_section(&mut o, spec, ev, rules);
    o
}

/// The frontmatter, the title and the readiness line.
fn summary_head(o: &mut String, input: &TaskInput, spec: &Spec, ev: &Evaluation, rules: &Rules) {
    let sid = input.session.id.to_string();
    let when = &input.session.created_at;
    let deps: Vec<&str> = Kind::SPEC.iter().map(|d| d.index()).collect();
    let _ = write!(
        o,
        "---\nsession_id: {sid}\nphase: 6\ndocument_type: spec-summary\nstatus: complete\n\
         generated_at: {when}\nversion: {}\ntask: {}\ndependencies: [{}, {READINESS}]\n---\n\n",
        version(input, SUMMARY),
        input.task.id,
        deps.join(", ")
    );
    let _ = writeln!(o, "# Spec Summary: {}\n", title(input, spec));
    let _ = writeln!(
        o,
        "**Readiness: {} at {:.1} / 100** (coverage {:.1}) — {}. Details in `{READINESS}`.\n",
        ev.gate.as_str(),
        ev.overall,
        ev.score("coverage"),
        message(rules, ev.gate)
    );
}

/// `## Documents Reviewed`: each document, its path and how many files it has.
fn documents_list(o: &mut String, ev: &Evaluation) {
    let _ = writeln!(o, "## Documents Reviewed\n");
    for d in &ev.completeness {
        let state = if d.present {
            format!("{} file{}", d.files, if d.files == 1 { "" } else { "s" })
        } else {
            "missing".into()
        };
        let _ = writeln!(o, "- {} — `{}` ({state})", d.doc.title(), d.doc.index());
    }
    o.push('\n');
}

/// `## Goals`: a table of the brief's goals.
fn goals_section(o: &mut String, spec: &Spec) {
    let _ = writeln!(o, "## Goals\n");
    if spec.goals.is_empty() {
        let _ = writeln!(o, "No goals found.\n");
    } else {
        let _ = writeln!(
            o,
            "| Goal | Statement | Metric | Target |\n|---|---|---|---|"
        );
        for g in &spec.goals {
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} |",
                g.id,
                filled(&g.text),
                filled(&g.metric),
                filled(&g.target)
            );
        }
        o.push('\n');
    }
}

/// `## Requirements`: functional and non-functional counts per MoSCoW priority.
fn requirements_section(o: &mut String, spec: &Spec) {
    let _ = writeln!(o, "## Requirements\n");
    if spec.requirements.is_empty() {
        let _ = writeln!(o, "No requirements found.\n");
    } else {
        let _ = writeln!(
            o,
            "| Priority | Functional | Non-functional |\n|---|---|---|"
        );
        let bucket = |r: &tlv4_specdoc::audit::Requirement| {
            let p = r.moscow().map(md::norm).unwrap_or_default();
            match p.trim_matches(['[', ']']) {
                "must" => 0,
                "should" => 1,
                "could" => 2,
                "won't" | "wont" => 3,
                _ => 4,
            }
        };
        for (i, name) in ["Must", "Should", "Could", "Won't", "Unset"]
            .iter()
            .enumerate()
        {
            let f = spec
                .requirements
                .iter()
                .filter(|r| r.functional && bucket(r) == i)
                .count();
            let n = spec
                .requirements
                .iter()
                .filter(|r| !r.functional && bucket(r) == i)
                .count();
            if i < 4 || f + n > 0 {
                let _ = writeln!(o, "| {name} | {f} | {n} |");
            }
        }
        let f = spec.requirements.iter().filter(|r| r.functional).count();
        let _ = writeln!(o, "| Total | {f} | {} |\n", spec.requirements.len() - f);
    }
}

/// `## Components`: a table of the architecture's components.
fn components_section(o: &mut String, spec: &Spec) {
    let _ = writeln!(o, "## Components\n");
    if spec.components.is_empty() {
        let _ = writeln!(o, "No components found.\n");
    } else {
        let _ = writeln!(o, "| Component | Name | Implements |\n|---|---|---|");
        for c in &spec.components {
            let _ = writeln!(
                o,
                "| {} | {} | {} |",
                c.id,
                filled(&c.name),
                filled(&c.implements.join(", "))
            );
        }
        o.push('\n');
    }
}

/// `## Decisions`: a table of the ADRs.
fn decisions_section(o: &mut String, spec: &Spec) {
    let _ = writeln!(o, "## Decisions\n");
    if spec.adrs.is_empty() {
        let _ = writeln!(o, "No decisions found.\n");
    } else {
        let _ = writeln!(o, "| ADR | Title | Status |\n|---|---|---|");
        for a in &spec.adrs {
            let _ = writeln!(
                o,
                "| {} | {} | {} |",
                a.id,
                filled(a.title()),
                filled(a.status.as_deref().unwrap_or(""))
            );
        }
        o.push('\n');
    }
}

/// `## Epics and MVP`: a table of the epics and what the MVP holds.
fn epics_section(o: &mut String, spec: &Spec) {
    let _ = writeln!(o, "## Epics and MVP\n");
    if spec.epics.is_empty() {
        let _ = writeln!(o, "No epics found.\n");
    } else {
        let _ = writeln!(
            o,
            "| Epic | Title | Priority | MVP | Stories |\n|---|---|---|---|---|"
        );
        for e in &spec.epics {
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {} |",
                e.id,
                filled(e.title()),
                filled(e.priority.as_deref().unwrap_or("")),
                if e.mvp { "yes" } else { "no" },
                e.stories.len()
            );
        }
        let mvp: Vec<&str> = spec
            .epics
            .iter()
            .filter(|e| e.mvp)
            .map(|e| e.id.as_str())
            .collect();
        let stories: usize = spec
            .epics
            .iter()
            .filter(|e| e.mvp)
            .map(|e| e.stories.len())
            .sum();
        let _ = writeln!(
            o,
            "\nMVP: {} ({stories} stor{}).\n",
            if mvp.is_empty() {
                "none marked".to_owned()
            } else {
                mvp.join(", ")
            },
            if stories == 1 { "y" } else { "ies" }
        );
    }
}

/// `## Open Questions`: the first two of each document's, and how many more.
fn open_questions_section(o: &mut String, spec: &Spec) {
    let _ = writeln!(o, "## Open Questions\n");
    let mut any = false;
    for d in Kind::SPEC {
        let qs = open_questions(spec, d);
        if qs.is_empty() {
            continue;
        }
        any = true;
        let _ = writeln!(o, "- {} ({}):", d.title(), qs.len());
        for q in qs.iter().take(2) {
            let _ = writeln!(o, "  - {}", excerpt(q, 160));
        }
        if qs.len() > 2 {
            let _ = writeln!(o, "  - … {} more in `{}`", qs.len() - 2, d.index());
        }
    }
    if !any {
        let _ = writeln!(o, "None recorded.");
    }
    o.push('\n');
}

/// `## Strengths and Improvement Areas`: the dimensions at 80 or more and below 70.
fn strengths_section(o: &mut String, ev: &Evaluation) {
    let _ = writeln!(o, "## Strengths and Improvement Areas\n");
    let strong: Vec<String> = DIMENSIONS
        .iter()
        .enumerate()
        .filter(|(i, _)| ev.scores[*i] >= 80.0)
        .map(|(i, d)| format!("{d} {:.1}", ev.scores[i]))
        .collect();
    let weak: Vec<String> = DIMENSIONS
        .iter()
        .enumerate()
        .filter(|(i, _)| ev.scores[*i] < 70.0)
        .map(|(i, d)| format!("{d} {:.1}", ev.scores[i]))
        .collect();
    let _ = writeln!(
        o,
        "- Strengths (80 or more): {}",
        if strong.is_empty() {
            "none".into()
        } else {
            strong.join(", ")
        }
    );
    let _ = writeln!(
        o,
        "- Improvement areas (below 70): {}\n",
        if weak.is_empty() {
            "none".into()
        } else {
            weak.join(", ")
        }
    );
}

/// `## Recommendations`: the steps to improve first.
fn recommendations_section(o: &mut String, spec: &Spec, ev: &Evaluation, rules: &Rules) {
    let _ = writeln!(o, "## Recommendations\n");
    for step in improve_first(ev, spec, rules) {
        let _ = writeln!(o, "- {step}");
    }
}
