//! `specs/quality-gates.toml`: the gate's thresholds, weights and rules, embedded in the
//! binary and read into plain structs.

use std::collections::BTreeMap;

use tlv4_core::error::{Error, Result};
use tlv4_specdoc::template::Part;

/// The embedded data file.
const GATES: &str = include_str!("../../../specs/quality-gates.toml");

/// Every rule id the code checks, in report order.
pub(super) const RULE_IDS: [&str; 26] = [
    "document",
    "section",
    "frontmatter",
    "reference",
    "unique-id",
    "goal-requirement",
    "requirement-component",
    "requirement-story",
    "component-story",
    "metric-criteria",
    "adr-requirement",
    "nfr-addressed",
    "id-agreement",
    "terminology",
    "format",
    "naming",
    "goal-metric",
    "moscow",
    "acceptance-criteria",
    "nfr-categories",
    "adr-count",
    "adr-alternatives",
    "epic-count",
    "mvp",
    "story-count",
    "story-format",
];

/// The whole data file.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Rules {
    /// Format version of the file.
    pub schema: u32,
    /// Thresholds and messages.
    pub gate: Gate,
    /// Weights of the overall score, by dimension.
    pub weights: Weights,
    /// Completeness constants.
    pub completeness: Completeness,
    /// Consistency penalties.
    pub consistency: Consistency,
    /// Traceability link kinds.
    pub traceability: Traceability,
    /// Depth constants.
    pub depth: Depth,
    /// Coverage constants.
    pub coverage: Coverage,
    /// Key-word extraction.
    pub text: Text,
    /// Required frontmatter keys by kind of file.
    pub frontmatter: Frontmatter,
    /// Every rule, by id.
    #[serde(rename = "rule")]
    pub rules: Vec<Rule>,
}

/// Gate thresholds (§7.1, §7.2).
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Gate {
    /// Overall score at or above this passes.
    pub pass: f64,
    /// Overall score below this fails.
    pub fail_below: f64,
    /// Coverage needed for PASS.
    pub coverage_pass: f64,
    /// Coverage below this fails.
    pub coverage_fail_below: f64,
    /// Whether an Error-class violation turns PASS into REVIEW.
    pub errors_block_pass: bool,
    /// Message of a PASS.
    pub pass_message: String,
    /// Message of a REVIEW.
    pub review_message: String,
    /// Message of a FAIL.
    pub fail_message: String,
}

/// Weights of the overall score, in percent.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Weights {
    /// Completeness.
    pub completeness: f64,
    /// Consistency.
    pub consistency: f64,
    /// Traceability.
    pub traceability: f64,
    /// Depth.
    pub depth: f64,
    /// Coverage (0: gated on its own).
    pub coverage: f64,
}

/// Completeness constants.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Completeness {
    /// Share of a section's points earned by its heading alone.
    pub present_share: f64,
    /// Characters that make a section of a main document substantial.
    pub substantial_chars: usize,
    /// Characters that make a section of a single-item file substantial.
    pub item_substantial_chars: usize,
}

/// Consistency penalties.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Consistency {
    /// Points of a high-class finding.
    pub high: f64,
    /// Points of a medium-class finding.
    pub medium: f64,
    /// Points of a low-class finding.
    pub low: f64,
    /// At most this many points per rule.
    pub max_per_rule: f64,
}

/// Traceability link kinds.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Traceability {
    /// The kinds averaged into the score.
    pub kinds: Vec<String>,
}

/// Depth constants.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Depth {
    /// Criteria a functional requirement should have.
    pub criteria_per_requirement: usize,
    /// Criteria a story should have.
    pub criteria_per_story: usize,
    /// Rows an ADR's alternatives table should have.
    pub adr_alternatives: usize,
    /// Fewer words make a criterion untestable.
    pub min_criterion_words: usize,
    /// Words that make a criterion vague unless it holds a number.
    pub vague_words: Vec<String>,
    /// Valid sizes.
    pub sizes: Vec<String>,
    /// Cell values that count as empty.
    pub empty_cells: Vec<String>,
}

/// Coverage constants.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Coverage {
    /// Share of a request clause's key words that captures it.
    pub request_overlap: f64,
    /// Share of a metric's key words an acceptance criterion must hold.
    pub metric_overlap: f64,
}

/// Key-word extraction.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Text {
    /// Shortest key word.
    pub min_word: usize,
    /// Words never counted.
    pub stop_words: Vec<String>,
}

/// Required frontmatter keys.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Frontmatter {
    /// The four main documents (index files and the brief).
    pub document: Vec<String>,
    /// A functional requirement file.
    pub requirement: Vec<String>,
    /// A non-functional requirement file.
    pub non_functional: Vec<String>,
    /// An ADR file.
    pub adr: Vec<String>,
    /// An epic file.
    pub epic: Vec<String>,
}

impl Frontmatter {
    /// The keys a file of `part` needs.
    pub(super) fn keys(&self, part: Part) -> &[String] {
        match part {
            Part::Functional => &self.requirement,
            Part::NonFunctional => &self.non_functional,
            Part::Adr => &self.adr,
            Part::Epic => &self.epic,
            _ => &self.document,
        }
    }
}

/// One rule.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Rule {
    /// Its id, one of [`RULE_IDS`].
    pub id: String,
    /// What it asks, in one line.
    pub text: String,
    /// Its class.
    pub severity: Severity,
    /// Its class when the subject is a Must requirement.
    #[serde(default)]
    pub must_severity: Option<Severity>,
    /// The consistency penalty of one finding, if it costs consistency points.
    #[serde(default)]
    pub penalty: Option<Penalty>,
    /// A lower bound the rule uses.
    #[serde(default)]
    pub min: Option<usize>,
    /// An upper bound the rule uses.
    #[serde(default)]
    pub max: Option<usize>,
}

/// The class of a violation (§7.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum Severity {
    /// Must fix; blocks a PASS.
    Error,
    /// Should fix; can proceed with a justification.
    Warning,
    /// Nice to have; logged.
    Info,
}

impl Severity {
    /// The word in reports.
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "Error",
            Severity::Warning => "Warning",
            Severity::Info => "Info",
        }
    }
}

/// The consistency penalty class (§7.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum Penalty {
    /// Broken references.
    High,
    /// Terminology.
    Medium,
    /// Format and naming.
    Low,
}

impl Rules {
    /// The embedded rules, checked: every rule the code knows is there, and only those.
    pub(super) fn embedded() -> Result<Rules> {
        let rules: Rules = toml::from_str(GATES)
            .map_err(|e| Error::Invalid(format!("specs/quality-gates.toml is not valid: {e}")))?;
        rules.check()?;
        Ok(rules)
    }

    fn check(&self) -> Result<()> {
        let bad = |m: String| Err(Error::Invalid(format!("specs/quality-gates.toml: {m}")));
        if self.schema != 1 {
            return bad(format!(
                "schema {} is not 1, the one this build reads",
                self.schema
            ));
        }
        let mut seen: BTreeMap<&str, ()> = BTreeMap::new();
        for r in &self.rules {
            if !RULE_IDS.contains(&r.id.as_str()) {
                return bad(format!("rule `{}` is not one the gate checks", r.id));
            }
            if seen.insert(&r.id, ()).is_some() {
                return bad(format!("rule `{}` is defined twice", r.id));
            }
        }
        if let Some(missing) = RULE_IDS.iter().find(|id| !seen.contains_key(*id)) {
            return bad(format!("rule `{missing}` is missing"));
        }
        for kind in &self.traceability.kinds {
            if !TRACE_KINDS.contains(&kind.as_str()) {
                return bad(format!("unknown traceability kind `{kind}`"));
            }
        }
        let w = &self.weights;
        if w.completeness + w.consistency + w.traceability + w.depth + w.coverage <= 0.0 {
            return bad("the weights add up to nothing".into());
        }
        Ok(())
    }

    /// The rule `id`.
    pub(super) fn rule(&self, id: &str) -> &Rule {
        self.rules
            .iter()
            .find(|r| r.id == id)
            .expect("`check` made sure every rule the code knows is defined")
    }

    /// The class of a violation of rule `id`: a Must requirement's gets the rule's
    /// `must_severity`.
    pub(super) fn severity(&self, id: &str, must: bool) -> Severity {
        let r = self.rule(id);
        match (must, r.must_severity) {
            (true, Some(s)) => s,
            _ => r.severity,
        }
    }

    /// Whether `word` is a stop word.
    pub(super) fn is_stop(&self, word: &str) -> bool {
        self.text.stop_words.iter().any(|s| s == word)
    }
}

/// The traceability link kinds the code computes.
pub(super) const TRACE_KINDS: [&str; 5] = [
    "goal-requirement",
    "requirement-component",
    "requirement-story",
    "adr-requirement",
    "goal-chain",
];
