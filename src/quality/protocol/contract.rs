//! The contribution contract: what a member hands over each round, and the checks the tool
//! applies before it counts (`docs/discuss.md` §3). A contribution that breaks the contract
//! is sent back with the problem, like a task result.

use std::sync::LazyLock;

use super::RoundKind;

/// A member's contribution to one round, as it answers in its JSON block.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Contribution {
    /// The contribution in prose.
    pub text: String,
    /// Whether the member's position changed since its last round.
    pub changed: bool,
    /// Why it changed, or why not.
    pub why: String,
    /// Its stance on each issue it speaks to.
    #[serde(default)]
    pub positions: Vec<Stance>,
    /// Criticism of other members' proposals (the Challenge round).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub critiques: Vec<Critique>,
    /// Implicit assumptions it names (the devil's advocate: at least three each round).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub assumptions: Vec<String>,
    /// How sure it is of its final position: `HIGH`, `MED` or `LOW` (Synthesis).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<String>,
    /// What it can accept (Synthesis).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepts: Option<Vec<String>>,
    /// What it will not concede (Synthesis).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub will_not_concede: Option<Vec<String>>,
    /// The risks it still sees (Synthesis).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub risks: Option<Vec<String>>,
}

/// A stance on one issue.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stance {
    /// The issue, in a few words.
    pub issue: String,
    /// The option the member holds.
    pub stance: String,
    /// Why.
    pub reason: String,
}

/// Criticism of one other member's proposal.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Critique {
    /// The member criticised (its role).
    pub target: String,
    /// A weakness of its proposal.
    pub weakness: String,
    /// A scenario in which the proposal fails.
    pub failure: String,
    /// An alternative.
    pub alternative: String,
}

/// The most words a contribution to `round` may have: 200 for a message to the others, 500
/// for a final position.
pub fn word_limit(round: RoundKind) -> usize {
    match round {
        RoundKind::Synthesis => 500,
        RoundKind::Position | RoundKind::Challenge | RoundKind::Rebuttal => 200,
    }
}

/// The most words of a moderator's broadcast.
pub const MODERATOR_WORDS: usize = 300;

/// The confidence levels of a final position.
pub const CONFIDENCE: [&str; 3] = ["HIGH", "MED", "LOW"];

/// Implicit assumptions the devil's advocate names each round, at least.
pub const MIN_ASSUMPTIONS: usize = 3;

/// Words that express agreement, which a Challenge contribution may not contain.
static AGREEMENT: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(
        r"(?i)\b(i|we)\s+(fully\s+|completely\s+|entirely\s+|strongly\s+)?(agree|concur)\b|\bagree\s+with\b|\bsame\s+as\s+\w+\s+(said|says)\b",
    )
    .expect("a valid regex")
});

/// Words in `text`, as whitespace-separated tokens.
pub fn words(text: &str) -> usize {
    text.split_whitespace().count()
}

impl Contribution {
    /// Every prose field, for counting words and comparing reasons.
    pub fn prose(&self) -> Vec<&str> {
        let mut out = vec![self.text.as_str(), self.why.as_str()];
        for p in &self.positions {
            out.extend([p.issue.as_str(), p.stance.as_str(), p.reason.as_str()]);
        }
        for c in &self.critiques {
            out.extend([
                c.weakness.as_str(),
                c.failure.as_str(),
                c.alternative.as_str(),
            ]);
        }
        out.extend(self.assumptions.iter().map(String::as_str));
        for list in [&self.accepts, &self.will_not_concede, &self.risks]
            .into_iter()
            .flatten()
        {
            out.extend(list.iter().map(String::as_str));
        }
        out
    }

    /// How many words it has.
    pub fn word_count(&self) -> usize {
        self.prose().iter().map(|t| words(t)).sum()
    }
}

/// Who speaks, for the checks.
pub struct Speaker<'a> {
    /// Its role.
    pub role: &'a str,
    /// Whether it is the devil's advocate.
    pub devil: bool,
    /// The roles of the other members still in the discussion.
    pub others: &'a [String],
}

/// Finds and parses the contribution in `answer` (a fenced `json` block or a bare object)
/// and checks it against the contract of `round`; the error is worded for the member.
pub fn parse(answer: &str, round: RoundKind, who: &Speaker<'_>) -> Result<Contribution, String> {
    let block = json_block(answer).ok_or("the answer holds no JSON object")?;
    let c: Contribution = serde_json::from_str(block)
        .map_err(|e| format!("the contribution is not in the contract's shape: {e}"))?;
    check(&c, round, who)?;
    Ok(c)
}

/// The JSON object of an answer: the last fenced `json` block, else the text from its first
/// `{` to its last `}`.
pub fn json_block(answer: &str) -> Option<&str> {
    if let Some(start) = answer.rfind("```json") {
        let rest = &answer[start + 7..];
        if let Some(end) = rest.find("```") {
            return Some(rest[..end].trim());
        }
    }
    let start = answer.find('{')?;
    let end = answer.rfind('}')?;
    (end > start).then(|| &answer[start..=end])
}

/// The contract of `round` for `who`.
pub fn check(c: &Contribution, round: RoundKind, who: &Speaker<'_>) -> Result<(), String> {
    let mut problems = Vec::new();
    if c.text.trim().is_empty() {
        problems.push("`text` is empty: say your contribution in prose".to_owned());
    }
    if c.why.trim().is_empty() {
        problems.push("`why` is empty: say why your position changed, or why not".to_owned());
    }
    if round != RoundKind::Rebuttal && c.positions.is_empty() {
        problems.push("`positions` is empty: give your stance on at least one issue".to_owned());
    }
    for (i, p) in c.positions.iter().enumerate() {
        if [&p.issue, &p.stance, &p.reason]
            .iter()
            .any(|s| s.trim().is_empty())
        {
            problems.push(format!(
                "positions[{i}] needs an issue, a stance and a reason"
            ));
        }
    }
    let limit = word_limit(round);
    let n = c.word_count();
    if n > limit {
        problems.push(format!(
            "the contribution has {n} words; a {} contribution may have at most {limit}",
            round.as_str()
        ));
    }
    if who.devil
        && c.assumptions
            .iter()
            .filter(|a| !a.trim().is_empty())
            .count()
            < MIN_ASSUMPTIONS
    {
        problems.push(format!(
            "as the devil's advocate, name at least {MIN_ASSUMPTIONS} implicit assumptions in `assumptions` (you named {})",
            c.assumptions.len()
        ));
    }
    if matches!(round, RoundKind::Challenge | RoundKind::Rebuttal) {
        if c.critiques.is_empty() {
            problems.push(
                "the Challenge round is criticism only: give at least one entry in `critiques` (agreement alone is not a contribution)"
                    .to_owned(),
            );
        }
        for (i, k) in c.critiques.iter().enumerate() {
            for (field, value) in [
                ("weakness", &k.weakness),
                ("failure", &k.failure),
                ("alternative", &k.alternative),
            ] {
                if value.trim().is_empty() {
                    problems.push(format!(
                        "critiques[{i}] (of `{}`) has no {field}: each criticised proposal needs a weakness, a failure scenario and an alternative",
                        k.target
                    ));
                }
            }
            if k.target == who.role {
                problems.push(format!(
                    "critiques[{i}] criticises yourself; criticise the others"
                ));
            } else if !who.others.contains(&k.target) {
                problems.push(format!(
                    "critiques[{i}] names `{}`, who is not in the discussion; members: {}",
                    k.target,
                    who.others.join(", ")
                ));
            }
        }
        if let Some(m) = c.prose().iter().find_map(|t| AGREEMENT.find(t)) {
            problems.push(format!(
                "agreement is not allowed in the Challenge round (\"{}\"): criticise instead",
                m.as_str()
            ));
        }
    }
    if round == RoundKind::Synthesis {
        match &c.confidence {
            Some(level) if CONFIDENCE.contains(&level.as_str()) => {}
            Some(level) => {
                problems.push(format!("`confidence` is `{level}`; use HIGH, MED or LOW"))
            }
            None => {
                problems.push("a final position needs `confidence` (HIGH, MED or LOW)".to_owned())
            }
        }
        if c.accepts.as_ref().is_none_or(Vec::is_empty) {
            problems.push("a final position needs `accepts`: what you can accept".to_owned());
        }
        if c.will_not_concede.is_none() {
            problems.push(
                "a final position needs `will_not_concede` (an empty list if nothing)".to_owned(),
            );
        }
        if c.risks.is_none() {
            problems.push("a final position needs `risks` (an empty list if none)".to_owned());
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}
