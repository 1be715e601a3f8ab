//! The five dimensions and the gate: each dimension is 0–100, computed from the spec with
//! the constants of the data file; the rules' findings (see `checks`) feed consistency.

use std::collections::BTreeSet;

use super::checks;
use super::rules::{Penalty, Rules, Severity};
use tlv4_specdoc::audit::Spec;
use tlv4_specdoc::check::{self, Links, Violations, plural};
use tlv4_specdoc::md::{self, GATE as MD};
use tlv4_specdoc::spec::Kind;

/// One violation of a rule.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Finding {
    /// The rule id.
    pub rule: &'static str,
    /// Its class.
    pub severity: Severity,
    /// Where: a path or an id.
    pub place: String,
    /// What is wrong, in one sentence.
    pub message: String,
}

/// The five dimensions, in report order.
pub(super) const DIMENSIONS: [&str; 5] = [
    "completeness",
    "consistency",
    "traceability",
    "depth",
    "coverage",
];

/// The gate result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum GateResult {
    /// Ready for implementation.
    Pass,
    /// Improvements needed.
    Review,
    /// Major revisions required.
    Fail,
}

impl GateResult {
    /// `PASS`, `REVIEW` or `FAIL`.
    pub(super) fn as_str(self) -> &'static str {
        match self {
            GateResult::Pass => "PASS",
            GateResult::Review => "REVIEW",
            GateResult::Fail => "FAIL",
        }
    }
}

/// A ratio with its counts, for the report.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Ratio {
    /// What was counted.
    pub name: String,
    /// How many met it.
    pub found: f64,
    /// How many could.
    pub expected: f64,
}

impl Ratio {
    fn new(name: &str, found: f64, expected: f64) -> Ratio {
        Ratio {
            name: name.to_owned(),
            found,
            expected,
        }
    }

    /// found / expected, 0 when nothing was expected.
    pub(super) fn ratio(&self) -> f64 {
        if self.expected > 0.0 {
            (self.found / self.expected).clamp(0.0, 1.0)
        } else {
            0.0
        }
    }
}

/// Completeness of one document.
#[derive(Debug, Clone)]
pub(super) struct DocCompleteness {
    /// The document.
    pub doc: Kind,
    /// Whether its main file exists.
    pub present: bool,
    /// Files read (or listed).
    pub files: usize,
    /// Points earned and possible.
    pub earned: f64,
    /// Points possible.
    pub possible: f64,
    /// Missing headings, as `path: heading`.
    pub missing: Vec<String>,
    /// Headings with thin content, as `path: heading`.
    pub thin: Vec<String>,
}

impl DocCompleteness {
    /// 0–100.
    pub(super) fn score(&self) -> f64 {
        if self.possible > 0.0 {
            100.0 * self.earned / self.possible
        } else {
            0.0
        }
    }
}

/// Everything the gate found.
#[derive(Debug, Clone)]
pub(super) struct Evaluation {
    /// Scores by dimension, in [`DIMENSIONS`] order, rounded to one decimal.
    pub scores: [f64; 5],
    /// Weights by dimension, in percent.
    pub weights: [f64; 5],
    /// The weighted average.
    pub overall: f64,
    /// The gate.
    pub gate: GateResult,
    /// Why the gate is what it is.
    pub gate_reason: String,
    /// Every violation, errors first.
    pub findings: Vec<Finding>,
    /// Completeness per document.
    pub completeness: Vec<DocCompleteness>,
    /// Consistency points lost per rule: (rule, findings, points).
    pub consistency: Vec<(&'static str, usize, f64)>,
    /// Traceability link kinds.
    pub traceability: Vec<Ratio>,
    /// Depth sub-scores (ratios over items).
    pub depth: Vec<Ratio>,
    /// Coverage parts.
    pub coverage: Vec<Ratio>,
    /// Request clauses not captured by the goals and requirements.
    pub uncaptured: Vec<String>,
    /// Rules skipped because a document they compare is missing.
    pub skipped: Vec<&'static str>,
}

impl Evaluation {
    /// The score of `dimension`.
    pub(super) fn score(&self, dimension: &str) -> f64 {
        DIMENSIONS
            .iter()
            .position(|d| *d == dimension)
            .map_or(0.0, |i| self.scores[i])
    }

    /// How many findings of `severity` there are.
    pub(super) fn count(&self, severity: Severity) -> usize {
        self.findings
            .iter()
            .filter(|f| f.severity == severity)
            .count()
    }
}

/// Rounds to one decimal.
pub(super) fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// Scores `spec` against `rules`; `request` is the user's task text.
pub(super) fn evaluate(spec: &Spec, rules: &Rules, request: &str) -> Evaluation {
    let mut f = Violations::default();
    let mut skipped = Vec::new();
    let completeness = completeness(spec, rules, &mut f);
    // The rules of `specdoc::check` are the ones the builtin writer holds itself to too.
    check::frontmatter(spec, |part| rules.frontmatter.keys(part).to_vec(), &mut f);
    checks::session_ids(spec, &mut f);
    check::references(spec, &BTreeSet::new(), &mut f);
    checks::naming_and_format(spec, rules, &mut f);
    checks::terminology(spec, rules, &mut f);
    checks::id_agreement(spec, &mut f);
    check::links(spec, &mut f, &mut skipped);
    checks::cross_document(spec, rules, &mut f, &mut skipped);
    let min_alternatives = rules.rule("adr-alternatives").min.unwrap_or(2);
    check::items(spec, min_alternatives, &mut f);
    checks::phase_checks(spec, rules, &mut f);

    let links = Links::of(spec);
    let traceability = traceability(spec, rules, &links);
    let depth = depth(spec, rules);
    let (coverage, uncaptured) = coverage(spec, rules, &links, request);

    let findings: Vec<Finding> = (f.out.into_iter())
        .map(|v| Finding {
            severity: rules.severity(v.rule, v.must),
            rule: v.rule,
            place: v.place,
            message: v.message,
        })
        .collect();
    let consistency = penalties(rules, &findings);
    let penalty: f64 = consistency.iter().map(|c| c.2).sum();
    let docs_present = Kind::SPEC.iter().filter(|d| spec.has(**d)).count();
    // With no document there is nothing to be consistent: the dimension scores 0 like the
    // others rather than a vacuous 100.
    let consistency_score = if docs_present == 0 {
        0.0
    } else {
        (100.0 - penalty).max(0.0)
    };
    let mean = |parts: &[Ratio]| {
        if parts.is_empty() {
            0.0
        } else {
            100.0 * parts.iter().map(Ratio::ratio).sum::<f64>() / parts.len() as f64
        }
    };
    let completeness_score = completeness.iter().map(DocCompleteness::score).sum::<f64>()
        / completeness.len().max(1) as f64;
    let scores = [
        round1(completeness_score),
        round1(consistency_score),
        round1(mean(&traceability)),
        round1(mean(&depth)),
        round1(mean(&coverage)),
    ];
    let w = &rules.weights;
    let weights = [
        w.completeness,
        w.consistency,
        w.traceability,
        w.depth,
        w.coverage,
    ];
    let total: f64 = weights.iter().sum();
    let overall = round1(scores.iter().zip(weights).map(|(s, w)| s * w).sum::<f64>() / total);
    let mut findings = findings;
    findings.sort_by_key(|x| {
        (
            x.severity,
            super::rules::RULE_IDS
                .iter()
                .position(|r| *r == x.rule)
                .unwrap_or(usize::MAX),
        )
    });
    let errors = findings
        .iter()
        .filter(|x| x.severity == Severity::Error)
        .count();
    let (gate, gate_reason) = decide(rules, docs_present, overall, scores[4], errors);
    Evaluation {
        scores,
        weights,
        overall,
        gate,
        gate_reason,
        findings,
        completeness,
        consistency,
        traceability,
        depth,
        coverage,
        uncaptured,
        skipped,
    }
}

/// The gate from the overall score, coverage and the number of Error-class violations.
pub(super) fn decide(
    rules: &Rules,
    docs_present: usize,
    overall: f64,
    coverage_score: f64,
    errors: usize,
) -> (GateResult, String) {
    let g = &rules.gate;
    if docs_present == 0 {
        (
            GateResult::Fail,
            "none of the four spec documents exists".to_owned(),
        )
    } else if overall < g.fail_below {
        (
            GateResult::Fail,
            format!("overall {overall:.1} is below {:.0}", g.fail_below),
        )
    } else if coverage_score < g.coverage_fail_below {
        (
            GateResult::Fail,
            format!(
                "coverage {coverage_score:.1} is below {:.0}",
                g.coverage_fail_below
            ),
        )
    } else if overall >= g.pass && coverage_score >= g.coverage_pass {
        if errors > 0 && g.errors_block_pass {
            (
                GateResult::Review,
                format!(
                    "overall {overall:.1} and coverage {coverage_score:.1} reach PASS, but \
                     {errors} Error-class violation{} must be fixed first",
                    if errors == 1 { "" } else { "s" }
                ),
            )
        } else {
            (
                GateResult::Pass,
                format!(
                    "overall {overall:.1} ≥ {:.0} and coverage {coverage_score:.1} ≥ {:.0}",
                    g.pass, g.coverage_pass
                ),
            )
        }
    } else if overall < g.pass {
        (
            GateResult::Review,
            format!(
                "overall {overall:.1} is between {:.0} and {:.0}",
                g.fail_below, g.pass
            ),
        )
    } else {
        (
            GateResult::Review,
            format!(
                "coverage {coverage_score:.1} is below the {:.0} a PASS needs",
                g.coverage_pass
            ),
        )
    }
}

/// Consistency points lost per rule: (rule, findings, points), each rule capped.
fn penalties(rules: &Rules, findings: &[Finding]) -> Vec<(&'static str, usize, f64)> {
    let mut out: Vec<(&'static str, usize, f64)> = Vec::new();
    let cap = rules.consistency.max_per_rule;
    for finding in findings {
        let Some(p) = rules.rule(finding.rule).penalty else {
            continue;
        };
        let points = match p {
            Penalty::High => rules.consistency.high,
            Penalty::Medium => rules.consistency.medium,
            Penalty::Low => rules.consistency.low,
        };
        match out.iter_mut().find(|(r, _, _)| *r == finding.rule) {
            Some(c) => {
                c.1 += 1;
                c.2 = (c.2 + points).min(cap);
            }
            None => out.push((finding.rule, 1, points.min(cap))),
        }
    }
    out
}

// --- completeness ---------------------------------------------------------------------------

fn completeness(spec: &Spec, rules: &Rules, f: &mut Violations) -> Vec<DocCompleteness> {
    let c = &rules.completeness;
    let mut out = Vec::new();
    for doc in Kind::SPEC {
        let mut d = DocCompleteness {
            doc,
            present: spec.has(doc),
            files: 0,
            earned: 0.0,
            possible: 0.0,
            missing: Vec::new(),
            thin: Vec::new(),
        };
        if !d.present {
            f.add(
                "document",
                doc.index(),
                format!("`{}` ({}) is missing", doc.index(), doc.name()),
            );
        }
        for file in spec.files.iter().filter(|x| x.doc == doc) {
            d.files += 1;
            let keys = rules.frontmatter.keys(file.part);
            // Each heading and the frontmatter are one unit each.
            d.possible += (file.part.required().len() + 1) as f64;
            let Some(text) = &file.text else {
                continue;
            };
            if let Some(fm) = MD.frontmatter(text) {
                let have = keys.iter().filter(|k| fm.contains_key(*k)).count();
                d.earned += c.present_share
                    + (1.0 - c.present_share) * have as f64 / keys.len().max(1) as f64;
            }
            let threshold = if file.part.is_item() {
                c.item_substantial_chars
            } else {
                c.substantial_chars
            };
            let mut missing = Vec::new();
            for (want, body) in file.part.sections(text) {
                match body {
                    None => missing.push(want),
                    Some(body) => {
                        let chars = MD.substance(body);
                        d.earned += c.present_share;
                        if chars > threshold {
                            d.earned += 1.0 - c.present_share;
                        } else {
                            d.thin.push(format!("{}: {want}", file.path));
                        }
                    }
                }
            }
            if !missing.is_empty() {
                f.add(
                    "section",
                    &file.path,
                    format!(
                        "missing section{}: {}",
                        plural(missing.len()),
                        missing.join(", ")
                    ),
                );
                d.missing
                    .extend(missing.iter().map(|m| format!("{}: {m}", file.path)));
            }
        }
        out.push(d);
    }
    out
}

/// Whether an NFR is addressed downstream: traced by an ADR, implemented by a component,
/// traced by a story, or named in the architecture.
pub(super) fn nfr_addressed(spec: &Spec, links: &Links, id: &str) -> bool {
    spec.adrs
        .iter()
        .any(|a| a.requirements().iter().any(|r| r == id))
        || links.has_component(id)
        || links.has_story(id)
        || spec
            .index_text(Kind::Architecture)
            .is_some_and(|t| MD.ids(t).iter().any(|i| i == id))
}

// --- traceability, depth, coverage ----------------------------------------------------------

fn traceability(spec: &Spec, rules: &Rules, links: &Links) -> Vec<Ratio> {
    let functional: Vec<_> = spec.requirements.iter().filter(|r| r.functional).collect();
    let goals = spec.goals.len() as f64;
    let mut out = Vec::new();
    for kind in &rules.traceability.kinds {
        let part = match kind.as_str() {
            "goal-requirement" => Ratio::new(
                "Goal → requirement",
                spec.goals
                    .iter()
                    .filter(|g| !links.requirements_of(spec, &g.id).is_empty())
                    .count() as f64,
                goals,
            ),
            "requirement-component" => Ratio::new(
                "Requirement → component",
                functional
                    .iter()
                    .filter(|r| links.has_component(&r.id))
                    .count() as f64,
                functional.len() as f64,
            ),
            "requirement-story" => Ratio::new(
                "Requirement → story",
                functional.iter().filter(|r| links.has_story(&r.id)).count() as f64,
                functional.len() as f64,
            ),
            "adr-requirement" => Ratio::new(
                "ADR → requirement",
                spec.adrs
                    .iter()
                    .filter(|a| {
                        a.requirements()
                            .iter()
                            .any(|r| spec.requirement(r).is_some())
                    })
                    .count() as f64,
                spec.adrs.len() as f64,
            ),
            _ => Ratio::new(
                "Goal → requirement → component → story",
                spec.goals
                    .iter()
                    .filter(|g| {
                        links.requirements_of(spec, &g.id).iter().any(|r| {
                            r.functional && links.has_component(&r.id) && links.has_story(&r.id)
                        })
                    })
                    .count() as f64,
                goals,
            ),
        };
        out.push(part);
    }
    out
}

/// Whether a criterion can be tested: enough words, and no vague word unless it holds a
/// number.
fn testable(rules: &Rules, criterion: &str) -> bool {
    let words = md::words(criterion);
    if words.len() < rules.depth.min_criterion_words {
        return false;
    }
    let vague = words
        .iter()
        .any(|w| rules.depth.vague_words.iter().any(|v| v == w));
    !vague || criterion.chars().any(|c| c.is_ascii_digit())
}

/// The share of `criteria` that are testable, scaled by how many there are against `want`.
fn criteria_score(rules: &Rules, criteria: &[String], want: usize) -> f64 {
    if criteria.is_empty() {
        return 0.0;
    }
    let ok = criteria.iter().filter(|c| testable(rules, c)).count() as f64;
    (criteria.len() as f64 / want.max(1) as f64).min(1.0) * ok / criteria.len() as f64
}

fn depth(spec: &Spec, rules: &Rules) -> Vec<Ratio> {
    let d = &rules.depth;
    let functional: Vec<_> = spec.requirements.iter().filter(|r| r.functional).collect();
    let ac: f64 = functional
        .iter()
        .map(|r| criteria_score(rules, &r.criteria, d.criteria_per_requirement))
        .sum();
    let filled = |c: &str| !checks::is_empty_cell(rules, c);
    let adr: f64 = spec
        .adrs
        .iter()
        .map(|a| {
            let alts = (a.alternatives.len() as f64 / d.adr_alternatives.max(1) as f64).min(1.0);
            let weighed = if a.alternatives.is_empty() {
                0.0
            } else {
                a.alternatives
                    .iter()
                    .filter(|[_, pros, cons]| filled(pros) && filled(cons))
                    .count() as f64
                    / a.alternatives.len() as f64
            };
            let context = f64::from(u8::from(MD.substance(&a.context) > 0));
            let consequences = f64::from(u8::from(MD.substance(&a.consequences) > 0));
            (alts + weighed + context + consequences) / 4.0
        })
        .sum();
    let stories: Vec<_> = spec.stories().map(|(_, s)| s).collect();
    let story: f64 = stories
        .iter()
        .map(|s| {
            let size = f64::from(u8::from(
                s.size
                    .as_deref()
                    .is_some_and(|z| d.sizes.iter().any(|x| x == z)),
            ));
            let criteria = criteria_score(rules, &s.criteria, d.criteria_per_story);
            let user = f64::from(u8::from(s.user_story.is_some()));
            let traces = f64::from(u8::from(!s.traces.is_empty()));
            (size + criteria + user + traces) / 4.0
        })
        .sum();
    let mut technical = 0.0;
    let mut items = 0usize;
    for c in &spec.components {
        technical += (f64::from(u8::from(filled(&c.responsibility)))
            + f64::from(u8::from(filled(&c.technology))))
            / 2.0;
        items += 1;
    }
    for r in spec.requirements.iter().filter(|r| !r.functional) {
        technical += r.measure.iter().filter(|m| filled(m)).count() as f64 / 3.0;
        items += 1;
    }
    vec![
        Ratio::new(
            "Acceptance-criteria testability",
            ac,
            functional.len() as f64,
        ),
        Ratio::new("ADR justification", adr, spec.adrs.len() as f64),
        Ratio::new("Story estimability", story, stories.len() as f64),
        Ratio::new("Technical detail", technical, items as f64),
    ]
}

/// A crude stem so that `users`/`user` and `logging`/`logged` meet.
fn stem(word: &str) -> String {
    for suffix in ["ing", "ed", "es", "s"] {
        if let Some(s) = word.strip_suffix(suffix)
            && s.chars().count() >= 4
        {
            return s.to_owned();
        }
    }
    word.to_owned()
}

/// The stemmed key words of `text`.
pub(super) fn key_words(rules: &Rules, text: &str) -> BTreeSet<String> {
    md::words(text)
        .into_iter()
        .filter(|w| w.chars().count() >= rules.text.min_word && !rules.is_stop(w))
        .filter(|w| !w.chars().all(|c| c.is_ascii_digit()))
        .map(|w| stem(&w))
        .collect()
}

/// The share of `want` found in `have`.
pub(super) fn overlap(want: &BTreeSet<String>, have: &BTreeSet<String>) -> f64 {
    if want.is_empty() {
        return 0.0;
    }
    want.intersection(have).count() as f64 / want.len() as f64
}

/// The clauses of the request: split at sentence ends, `;`, `,` and ` and `.
fn clauses(request: &str) -> Vec<String> {
    request
        .split(['.', ';', '!', '?', '\n', ','])
        .flat_map(|s| s.split(" and "))
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|s| !s.is_empty())
        .collect()
}

fn coverage(spec: &Spec, rules: &Rules, links: &Links, request: &str) -> (Vec<Ratio>, Vec<String>) {
    let delivered_goals = spec
        .goals
        .iter()
        .filter(|g| {
            links
                .requirements_of(spec, &g.id)
                .iter()
                .any(|r| links.has_story(&r.id))
        })
        .count();
    let delivered_reqs = spec
        .requirements
        .iter()
        .filter(|r| {
            if r.functional {
                links.has_component(&r.id) && links.has_story(&r.id)
            } else {
                nfr_addressed(spec, links, &r.id)
            }
        })
        .count();
    let mut said = String::new();
    for g in &spec.goals {
        said.push_str(&g.text);
        said.push('\n');
    }
    for r in &spec.requirements {
        said.push_str(r.title());
        said.push('\n');
        said.push_str(&r.user_story);
        said.push('\n');
    }
    let have = key_words(rules, &said);
    let mut total = 0usize;
    let mut uncaptured = Vec::new();
    for clause in clauses(request) {
        let want = key_words(rules, &clause);
        if want.is_empty() {
            continue;
        }
        total += 1;
        if overlap(&want, &have) < rules.coverage.request_overlap {
            uncaptured.push(clause);
        }
    }
    let captured = if total == 0 {
        // No original request to match: full coverage (§7.2).
        Ratio::new(
            "Request clauses captured by goals and requirements",
            1.0,
            1.0,
        )
    } else {
        Ratio::new(
            "Request clauses captured by goals and requirements",
            (total - uncaptured.len()) as f64,
            total as f64,
        )
    };
    (
        vec![
            Ratio::new(
                "Goals delivered by a story",
                delivered_goals as f64,
                spec.goals.len() as f64,
            ),
            Ratio::new(
                "Requirements designed and delivered",
                delivered_reqs as f64,
                spec.requirements.len() as f64,
            ),
            captured,
        ],
        uncaptured,
    )
}
