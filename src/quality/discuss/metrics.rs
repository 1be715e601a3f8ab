//! What the critics measure: named numbers about the documents, each with the items that
//! make it fall short. A metric whose documents are missing is absent, not zero.

use std::collections::{BTreeMap, BTreeSet};

use super::config::RiskSpec;
use tlv4_core::text::clip;
use tlv4_specdoc::discovery::Discovery;
use tlv4_specdoc::md::CHECKPOINT as MD;
use tlv4_specdoc::spec::{Architecture, Brief, Epics, Kind, Readiness, Requirements, Spec};

/// One measured value and the items behind a shortfall (goal ids without requirements, …).
#[derive(Debug, Clone, PartialEq)]
pub struct Measure {
    /// The value.
    pub value: f64,
    /// The offending items.
    pub items: Vec<String>,
}

/// Every metric measured, by name.
pub(super) type Metrics = BTreeMap<&'static str, Measure>;

/// Every metric a rule may name, with what it means.
pub(super) const CATALOG: &[(&str, &str)] = &[
    (
        "discovery.problem_chars",
        "characters of the problem statement",
    ),
    (
        "discovery.users_or_asked",
        "user groups named (1 when none is named but an open question asks)",
    ),
    ("discovery.dimensions", "exploration dimensions"),
    (
        "discovery.recommendations",
        "recommendations for the next roles",
    ),
    (
        "discovery.constraints_or_asked",
        "constraints listed (1 when none is listed but an open question asks about scope or limits)",
    ),
    (
        "discovery.open_questions",
        "open questions of the discovery context",
    ),
    (
        "discovery.codebase_or_asked",
        "1 when the code base is described or its absence asked about",
    ),
    (
        "discovery.unaddressed_risks",
        "high-impact signal combinations acknowledged in no document",
    ),
    ("brief.goals", "goals of the brief"),
    (
        "brief.goals_measurable_share",
        "share of goals with a metric and a target",
    ),
    ("brief.users", "user groups of the brief"),
    ("brief.out_of_scope", "items out of scope"),
    ("requirements.functional", "functional requirements"),
    (
        "requirements.story_share",
        "share of functional requirements with a user story",
    ),
    (
        "requirements.prioritized_share",
        "share of requirements with a MoSCoW priority",
    ),
    ("requirements.nfr", "non-functional requirements"),
    (
        "requirements.nfr_categories",
        "categories the non-functional requirements cover",
    ),
    (
        "requirements.nfr_measurable_share",
        "share of non-functional requirements with a metric and target",
    ),
    (
        "requirements.without_criteria",
        "functional requirements without acceptance criteria",
    ),
    (
        "requirements.criteria_average",
        "acceptance criteria per functional requirement",
    ),
    (
        "requirements.traced_share",
        "share of functional requirements tracing to a goal of the brief",
    ),
    (
        "requirements.open_questions",
        "open questions of the requirements",
    ),
    (
        "requirements.goals_uncovered",
        "goals of the brief no requirement traces to",
    ),
    (
        "requirements.constraints_share",
        "share of the discovery context's constraints found in the requirements",
    ),
    ("architecture.adrs", "architecture decisions"),
    (
        "architecture.adr_alternatives_share",
        "share of decisions weighing at least two options",
    ),
    (
        "architecture.reqs_unmapped",
        "functional requirements no component implements",
    ),
    ("architecture.risks", "risks listed with the architecture"),
    (
        "architecture.unmitigated_risks",
        "architecture risks without a mitigation",
    ),
    ("epics.mvp", "epics marked MVP"),
    (
        "epics.stories_without_criteria",
        "stories without acceptance criteria",
    ),
    (
        "epics.reqs_without_story",
        "functional requirements no story traces",
    ),
    ("spec.undefined_ids", "ids named but defined by no document"),
    (
        "spec.goals_end_to_end_share",
        "share of goals reaching a requirement and a story",
    ),
    (
        "spec.open_questions",
        "open questions of the four spec documents",
    ),
    (
        "readiness.score",
        "overall score of the readiness report, 0-100",
    ),
    ("readiness.gate_failed", "1 when the readiness gate is FAIL"),
];

fn m(value: f64, items: Vec<String>) -> Measure {
    Measure { value, items }
}

fn count(items: Vec<String>) -> Measure {
    m(items.len() as f64, items)
}

fn share(good: usize, items: Vec<String>) -> Measure {
    let total = good + items.len();
    let value = if total == 0 {
        0.0
    } else {
        good as f64 / total as f64
    };
    m((value * 1000.0).round() / 1000.0, items)
}

/// Whether some word of `text` starts with one of `words`.
fn mentions(text: &str, words: &[String]) -> bool {
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .any(|w| !w.is_empty() && words.iter().any(|x| w.starts_with(&x.to_lowercase())))
}

/// Key words of a sentence: four letters or more, common words left out.
fn keywords(text: &str) -> Vec<String> {
    const COMMON: &[&str] = &[
        "that", "this", "with", "from", "must", "should", "will", "have", "into", "only", "when",
        "than", "then", "they", "them", "their", "there", "which", "what", "each", "every",
    ];
    let mut out: Vec<String> = Vec::new();
    for w in text.to_lowercase().split(|c: char| !c.is_alphanumeric()) {
        if w.chars().count() >= 4 && !COMMON.contains(&w) && !out.iter().any(|o| o == w) {
            out.push(w.to_owned());
        }
    }
    out
}

/// Measures everything `spec` allows.
pub(super) fn measure(spec: &Spec, risks: &[RiskSpec]) -> Metrics {
    let mut out = Metrics::new();
    // The prose of the documents; the discovery context's JSON names the signals themselves.
    let prose: String = spec
        .texts
        .iter()
        .filter(|(p, _)| p.ends_with(".md"))
        .map(|(_, t)| t.as_str())
        .collect::<Vec<_>>()
        .join("\n");

    if let Some(d) = &spec.discovery {
        discovery_metrics(&mut out, d, risks, &prose);
    }

    let goals: Vec<&str> = spec
        .brief
        .iter()
        .flat_map(|b| b.goals.iter().map(|g| g.id.as_str()))
        .collect();
    if let Some(b) = &spec.brief {
        brief_metrics(&mut out, b);
    }

    if let Some(r) = &spec.requirements {
        requirements_metrics(&mut out, spec, r, &goals);
    }

    if let Some(a) = &spec.architecture {
        architecture_metrics(&mut out, spec, a);
    }

    if let Some(e) = &spec.epics {
        epics_metrics(&mut out, spec, e, &goals);
    }

    spec_metrics(&mut out, spec);

    if let Some(r) = &spec.readiness {
        readiness_metrics(&mut out, r);
    }
    out
}

/// The `discovery.*` metrics: the context, and the risks its signals raise that nothing addresses.
fn discovery_metrics(out: &mut Metrics, d: &Discovery, risks: &[RiskSpec], prose: &str) {
    let asked = |words: &[&str]| {
        d.open_questions
            .iter()
            .any(|q| words.iter().any(|w| q.to_lowercase().contains(w)))
    };
    out.insert(
        "discovery.problem_chars",
        m(d.problem().chars().count() as f64, Vec::new()),
    );
    let users = if !d.seed.target_users.is_empty() {
        d.seed.target_users.len()
    } else {
        usize::from(asked(&["who ", "user", "audience"]))
    };
    out.insert("discovery.users_or_asked", m(users as f64, Vec::new()));
    out.insert(
        "discovery.dimensions",
        m(d.seed.exploration_dimensions.len() as f64, Vec::new()),
    );
    out.insert(
        "discovery.recommendations",
        m(d.recommendations.len() as f64, Vec::new()),
    );
    let constraints = if !d.seed.constraints.is_empty() {
        d.seed.constraints.len()
    } else {
        usize::from(asked(&["scope", "constraint", "limit", "deadline"]))
    };
    out.insert(
        "discovery.constraints_or_asked",
        m(constraints as f64, Vec::new()),
    );
    out.insert("discovery.open_questions", count(d.open_questions.clone()));
    let code =
        d.codebase.is_some() || asked(&["new project", "source code", "codebase", "code base"]);
    out.insert(
        "discovery.codebase_or_asked",
        m(f64::from(u8::from(code)), Vec::new()),
    );
    let own = [
        d.recommendations.join("\n"),
        d.open_questions.join("\n"),
        d.seed.constraints.join("\n"),
    ]
    .join("\n");
    let unaddressed: Vec<String> = risks
        .iter()
        .filter(|r| r.signals.iter().all(|s| d.tech_profile.signals.contains(s)))
        .filter(|r| !mentions(&own, &r.words) && !mentions(prose, &r.words))
        .map(|r| r.name.clone())
        .collect();
    out.insert("discovery.unaddressed_risks", count(unaddressed));
}

/// The `brief.*` metrics: goals, how many are measurable, users, out of scope.
fn brief_metrics(out: &mut Metrics, b: &Brief) {
    out.insert("brief.goals", m(b.goals.len() as f64, Vec::new()));
    let unmeasured: Vec<String> = b
        .goals
        .iter()
        .filter(|g| MD.is_blank(&g.metric) || MD.is_blank(&g.target))
        .map(|g| g.id.clone())
        .collect();
    out.insert(
        "brief.goals_measurable_share",
        share(b.goals.len() - unmeasured.len(), unmeasured),
    );
    out.insert("brief.users", m(b.users.len() as f64, Vec::new()));
    out.insert(
        "brief.out_of_scope",
        m(b.out_of_scope.len() as f64, Vec::new()),
    );
}

/// The `requirements.*` metrics: stories, priorities, NFRs, criteria, traces to goals, constraints.
fn requirements_metrics(out: &mut Metrics, spec: &Spec, r: &Requirements, goals: &[&str]) {
    let f = &r.functional;
    out.insert("requirements.functional", m(f.len() as f64, Vec::new()));
    let no_story: Vec<String> = f
        .iter()
        .filter(|q| !q.has_story())
        .map(|q| q.id.clone())
        .collect();
    out.insert(
        "requirements.story_share",
        share(f.len() - no_story.len(), no_story),
    );
    let unprioritized: Vec<String> = r
        .all()
        .filter(|q| q.priority.is_none())
        .map(|q| q.id.clone())
        .collect();
    out.insert(
        "requirements.prioritized_share",
        share(r.all().count() - unprioritized.len(), unprioritized),
    );
    let n = &r.non_functional;
    out.insert("requirements.nfr", m(n.len() as f64, Vec::new()));
    let categories: BTreeSet<String> = n
        .iter()
        .map(|q| {
            if q.category.is_empty() {
                q.id.split('-').nth(1).unwrap_or("").to_owned()
            } else {
                q.category.to_lowercase()
            }
        })
        .filter(|c| !c.is_empty())
        .collect();
    out.insert(
        "requirements.nfr_categories",
        m(categories.len() as f64, categories.into_iter().collect()),
    );
    let vague: Vec<String> = n
        .iter()
        .filter(|q| !q.measurable)
        .map(|q| q.id.clone())
        .collect();
    out.insert(
        "requirements.nfr_measurable_share",
        share(n.len() - vague.len(), vague),
    );
    out.insert(
        "requirements.without_criteria",
        count(
            f.iter()
                .filter(|q| q.criteria.is_empty())
                .map(|q| q.id.clone())
                .collect(),
        ),
    );
    let avg = if f.is_empty() {
        0.0
    } else {
        f.iter().map(|q| q.criteria.len()).sum::<usize>() as f64 / f.len() as f64
    };
    out.insert(
        "requirements.criteria_average",
        m((avg * 10.0).round() / 10.0, Vec::new()),
    );
    let untraced: Vec<String> = f
        .iter()
        .filter(|q| {
            !q.traces.iter().any(|t| {
                if spec.brief.is_some() {
                    goals.contains(&t.as_str())
                } else {
                    t.starts_with("G-")
                }
            })
        })
        .map(|q| q.id.clone())
        .collect();
    out.insert(
        "requirements.traced_share",
        share(f.len() - untraced.len(), untraced),
    );
    out.insert(
        "requirements.open_questions",
        count(
            spec.open_questions(Kind::Requirements)
                .into_iter()
                .map(|(_, q)| q)
                .collect(),
        ),
    );
    if spec.brief.is_some() {
        let traced: BTreeSet<&str> = r
            .all()
            .flat_map(|q| q.traces.iter().map(String::as_str))
            .collect();
        out.insert(
            "requirements.goals_uncovered",
            count(
                goals
                    .iter()
                    .filter(|g| !traced.contains(**g))
                    .map(|g| (*g).to_owned())
                    .collect(),
            ),
        );
    }
    if let Some(d) = spec.discovery.as_ref().map(|d| &d.seed) {
        let text: String = spec
            .texts_of(Kind::Requirements)
            .map(|(_, t)| t.to_lowercase())
            .collect::<Vec<_>>()
            .join("\n");
        let missing: Vec<String> = d
            .constraints
            .iter()
            .filter(|c| {
                let words = keywords(c);
                let found = words.iter().filter(|w| text.contains(w.as_str())).count();
                found * 2 < words.len()
            })
            .map(|c| clip(c, 60))
            .collect();
        let value = if d.constraints.is_empty() {
            1.0
        } else {
            (d.constraints.len() - missing.len()) as f64 / d.constraints.len() as f64
        };
        out.insert(
            "requirements.constraints_share",
            m((value * 1000.0).round() / 1000.0, missing),
        );
    }
}

/// The `architecture.*` metrics: ADRs and their alternatives, requirements no component implements, risks.
fn architecture_metrics(out: &mut Metrics, spec: &Spec, a: &Architecture) {
    out.insert("architecture.adrs", m(a.adrs.len() as f64, Vec::new()));
    let single: Vec<String> = a
        .adrs
        .iter()
        .filter(|d| d.alternatives < 2)
        .map(|d| d.id.clone())
        .collect();
    out.insert(
        "architecture.adr_alternatives_share",
        share(a.adrs.len() - single.len(), single),
    );
    let implemented: BTreeSet<&str> = a
        .components
        .iter()
        .flat_map(|c| c.implements.iter().map(String::as_str))
        .collect();
    out.insert(
        "architecture.reqs_unmapped",
        count(
            spec.requirements
                .iter()
                .flat_map(|r| &r.functional)
                .filter(|q| !implemented.contains(q.id.as_str()))
                .map(|q| q.id.clone())
                .collect(),
        ),
    );
    out.insert("architecture.risks", m(a.risks.len() as f64, Vec::new()));
    out.insert(
        "architecture.unmitigated_risks",
        count(
            a.risks
                .iter()
                .filter(|r| r.mitigation.is_empty())
                .map(|r| clip(&r.risk, 60))
                .collect(),
        ),
    );
}

/// The `epics.*` metrics, and `spec.goals_end_to_end_share`: goals that reach a story through a requirement.
fn epics_metrics(out: &mut Metrics, spec: &Spec, e: &Epics, goals: &[&str]) {
    out.insert(
        "epics.mvp",
        m(e.epics.iter().filter(|x| x.mvp).count() as f64, Vec::new()),
    );
    out.insert(
        "epics.stories_without_criteria",
        count(
            e.stories()
                .filter(|s| s.criteria.is_empty())
                .map(|s| s.id.clone())
                .collect(),
        ),
    );
    let traced: BTreeSet<&str> = e
        .stories()
        .flat_map(|s| s.traces.iter().map(String::as_str))
        .collect();
    out.insert(
        "epics.reqs_without_story",
        count(
            spec.requirements
                .iter()
                .flat_map(|r| &r.functional)
                .filter(|q| !traced.contains(q.id.as_str()))
                .map(|q| q.id.clone())
                .collect(),
        ),
    );
    if let (Some(_), Some(r)) = (&spec.brief, &spec.requirements) {
        let ended: Vec<String> = goals
            .iter()
            .filter(|g| {
                !r.all()
                    .any(|q| q.traces.iter().any(|t| t == *g) && traced.contains(q.id.as_str()))
            })
            .map(|g| (*g).to_owned())
            .collect();
        out.insert(
            "spec.goals_end_to_end_share",
            share(goals.len() - ended.len(), ended),
        );
    }
}

/// The `readiness.*` metrics: the score and whether the gate failed.
fn readiness_metrics(out: &mut Metrics, r: &Readiness) {
    if let Some(s) = r.score {
        out.insert("readiness.score", m(s, Vec::new()));
    }
    out.insert(
        "readiness.gate_failed",
        m(
            f64::from(u8::from(r.gate.as_deref() == Some("FAIL"))),
            Vec::new(),
        ),
    );
}

/// The `spec.*` metrics over all documents: ids used but not defined, open questions.
fn spec_metrics(out: &mut Metrics, spec: &Spec) {
    let spec_kinds: BTreeSet<Kind> = Kind::ALL.into_iter().collect();
    out.insert(
        "spec.undefined_ids",
        count(spec.undefined(&spec_kinds).into_keys().collect()),
    );
    let questions: usize = [
        Kind::Brief,
        Kind::Requirements,
        Kind::Architecture,
        Kind::Epics,
    ]
    .iter()
    .map(|k| spec.open_questions(*k).len())
    .sum();
    out.insert("spec.open_questions", m(questions as f64, Vec::new()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_and_keywords() {
        assert!(mentions("Plan a security review", &["secur".to_owned()]));
        assert!(!mentions("html and yaml", &["ml".to_owned()]));
        assert_eq!(
            keywords("Must run on Linux with Postgres"),
            vec!["linux", "postgres"]
        );
    }
}
