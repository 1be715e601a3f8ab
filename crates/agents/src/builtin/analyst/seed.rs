//! Seed analysis: what the task text says, read with the word tables of
//! `analyst-request.toml` and no model.
//!
//! The text is cut into lower-case words and into sentences (`builtin::words`). A table
//! keyword matches a word exactly, or a word it starts when it ends in `*` (`optimi*` matches
//! `optimise` and `optimization`); a keyword with a space matches consecutive words. The explore-angle presets and the complexity
//! score are the reference's (planner explore, §5.6).

use std::sync::LazyLock;

use serde::Deserialize;

use tlv4_specdoc::discovery::SeedAnalysis;

/// How big the request looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum Complexity {
    Simple,
    Moderate,
    Complex,
}

impl Complexity {
    /// `simple`, `moderate` or `complex`.
    pub(super) fn as_str(self) -> &'static str {
        ["simple", "moderate", "complex"][self as usize]
    }

    /// The depth of the spec work that fits: `light`, `standard` or `comprehensive`.
    pub(super) fn depth(self) -> &'static str {
        ["light", "standard", "comprehensive"][self as usize]
    }

    /// How many exploration dimensions to pursue (3 to 5).
    fn dimensions(self) -> usize {
        3 + self as usize
    }
}

/// The word tables of `analyst-request.toml`; see the file for what each is.
#[derive(Debug, Deserialize)]
pub(super) struct Tables {
    feature_angles: Vec<String>,
    constraint_words: Vec<String>,
    criteria_words: Vec<String>,
    vague_words: Vec<String>,
    not_qualifiers: Vec<String>,
    stopwords: Vec<String>,
    user_nouns: Vec<String>,
    domain: Vec<Named>,
    preset: Vec<Named>,
    complexity_group: Vec<Named>,
    /// Subjects the request names, for the open questions.
    pub mention: Vec<Named>,
}

/// A group of words: a domain, a preset (with its angles), a complexity group (with its
/// points), or a subject the request may name (with the signal that would show it in the
/// code, and the question to ask when the code does not).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Named {
    name: String,
    pub words: Vec<String>,
    angles: Vec<String>,
    points: u32,
    pub signal: String,
    pub question: String,
}

/// The word tables, read once.
pub(super) static TABLES: LazyLock<Tables> =
    LazyLock::new(|| super::data(builtin!("analyst-request.toml")));

/// At most this many keywords are searched for.
const MAX_KEYWORDS: usize = 12;

/// The lower-case words of a text.
#[derive(Debug, Clone)]
pub(super) struct Words {
    list: Vec<String>,
    /// The words joined by single spaces, with a space at each end, for phrase matching.
    joined: String,
}

impl Words {
    /// Cuts `text` into words (`builtin::words`).
    pub(super) fn new(text: &str) -> Words {
        let list = crate::builtin::words::words(text);
        let joined = format!(" {} ", list.join(" "));
        Words { list, joined }
    }

    /// How many times `keyword` matches.
    pub(super) fn hits(&self, keyword: &str) -> usize {
        if keyword.contains(' ') {
            self.joined.matches(&format!(" {keyword} ")).count()
        } else if let Some(prefix) = keyword.strip_suffix('*') {
            self.list.iter().filter(|w| w.starts_with(prefix)).count()
        } else {
            self.list.iter().filter(|w| *w == keyword).count()
        }
    }

    /// Total hits of `keywords`.
    pub(super) fn score(&self, keywords: &[String]) -> usize {
        keywords.iter().map(|k| self.hits(k)).sum()
    }

    /// Whether any of `keywords` matches.
    pub(super) fn any(&self, keywords: &[String]) -> bool {
        keywords.iter().any(|k| self.hits(k) > 0)
    }
}

/// Everything read from the task text.
#[derive(Debug, Clone, serde::Serialize)]
pub(super) struct Seed {
    /// The part written out.
    pub analysis: SeedAnalysis,
    /// Words to search the code for, in text order.
    pub keywords: Vec<String>,
    /// How big the request looks.
    pub complexity: Complexity,
    /// Why, in words.
    pub complexity_reason: String,
    /// The explore-angle preset the dimensions came from first (`feature` by default).
    pub preset: String,
    /// Whether the text says how to tell the work is done.
    pub has_criteria: bool,
    /// Whether the scope is open (very short, or vague words).
    pub vague: bool,
    /// The words, for later questions.
    #[serde(skip)]
    pub words: Words,
}

/// Reads `text`.
pub(super) fn analyse(text: &str) -> Seed {
    let t = &*TABLES;
    let statement = text.trim().to_owned();
    let words = Words::new(&statement);

    // The first domain with the most hits.
    let domain = t
        .domain
        .iter()
        .rev()
        .max_by_key(|d| words.score(&d.words))
        .filter(|d| words.score(&d.words) > 0)
        .map_or("general software", |d| d.name.as_str());

    let groups: Vec<&Named> = t
        .complexity_group
        .iter()
        .filter(|g| words.any(&g.words))
        .collect();
    let points: u32 = groups.iter().map(|g| g.points).sum();
    let groups: Vec<&str> = groups.iter().map(|g| g.name.as_str()).collect();
    let chars = statement.chars().count();
    // Moderate from 2 points or 200 characters, complex from 4 points or 501 characters.
    let level = |n: usize, from: [usize; 2]| from.iter().filter(|f| n >= **f).count();
    let complexity = [
        Complexity::Simple,
        Complexity::Moderate,
        Complexity::Complex,
    ][level(points as usize, [2, 4]).max(level(chars, [200, 501]))];
    let named = if groups.is_empty() {
        String::new()
    } else {
        format!(" ({})", groups.join(", "))
    };
    let complexity_reason = format!("keyword score {points}{named}, {chars} characters");

    let mut presets: Vec<(usize, &Named)> = t
        .preset
        .iter()
        .map(|p| (words.score(&p.words), p))
        .filter(|(score, _)| *score > 0)
        .collect();
    // Stable: equal scores keep the table order.
    presets.sort_by_key(|p| std::cmp::Reverse(p.0));
    let preset = presets.first().map_or("feature", |(_, p)| p.name.as_str());
    let angles = presets.iter().flat_map(|(_, p)| p.angles.clone());
    let mut dimensions = super::unique(angles.chain(t.feature_angles.clone()));
    dimensions.truncate(complexity.dimensions());

    let sentences = crate::builtin::words::sentences(&statement);
    let constraints = super::unique(sentences.into_iter().map(str::to_owned))
        .into_iter()
        .filter(|s| Words::new(s).any(&t.constraint_words))
        .collect();

    Seed {
        analysis: SeedAnalysis {
            constraints,
            domain: domain.to_owned(),
            exploration_dimensions: dimensions,
            problem_statement: statement.clone(),
            target_users: target_users(&words),
        },
        keywords: keywords(&words),
        complexity,
        complexity_reason,
        preset: preset.to_owned(),
        has_criteria: words.any(&t.criteria_words),
        vague: words.list.len() < 6 || words.any(&t.vague_words),
        words,
    }
}

/// The user groups named in the text, with one qualifying word when there is one
/// (`mobile users`), unique, at most five.
fn target_users(words: &Words) -> Vec<String> {
    let t = &*TABLES;
    let not_qualifier = |w: &str| t.not_qualifiers.iter().any(|q| q == w);
    let mut out: Vec<String> = Vec::new();
    for (i, w) in words.list.iter().enumerate() {
        let noun = |p: &&String| *p == w || p.strip_suffix('s') == Some(w);
        let Some(plural) = t.user_nouns.iter().find(noun) else {
            continue;
        };
        // Only a qualifier that itself follows a word like "for" or "the", so that "let
        // users" stays "users" and "for mobile users" becomes "mobile users".
        let name = match &words.list[i.saturating_sub(2)..i] {
            [before, q]
                if not_qualifier(before)
                    && !not_qualifier(q)
                    && !t.stopwords.contains(q)
                    && q.chars().all(char::is_alphabetic) =>
            {
                format!("{q} {plural}")
            }
            _ => plural.clone(),
        };
        if out.len() < 5 && !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// Search words: not stop words, at least three characters, not numbers; unique, in text
/// order.
fn keywords(words: &Words) -> Vec<String> {
    let searchable = words
        .list
        .iter()
        .filter(|w| w.chars().count() >= 3 && !w.chars().all(|c| c.is_ascii_digit()))
        .filter(|w| !TABLES.stopwords.contains(w));
    let unique = super::unique(searchable.cloned());
    unique.into_iter().take(MAX_KEYWORDS).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn security_request() {
        let s = analyse(
            "  Add OAuth login for mobile users. Passwords must never be stored in plain text; \
             the session API should stay compatible.\n",
        );
        assert_eq!(
            s.analysis.problem_statement,
            "Add OAuth login for mobile users. Passwords must never be stored in plain text; \
             the session API should stay compatible."
        );
        assert_eq!(s.analysis.domain, "security and authentication");
        assert_eq!(s.preset, "security");
        assert_eq!(
            s.analysis.constraints,
            [
                "Passwords must never be stored in plain text",
                "the session API should stay compatible."
            ]
        );
        assert_eq!(s.analysis.target_users, ["mobile users"]);
        // Only the integration group (`api`) scores: 1 point, and the text is short.
        assert_eq!(s.complexity, Complexity::Simple);
        assert_eq!(
            s.analysis.exploration_dimensions,
            ["security", "auth-patterns", "dataflow"]
        );
        assert!(
            s.keywords
                .starts_with(&["oauth".to_owned(), "login".to_owned()])
        );
        assert!(s.has_criteria);
    }

    #[test]
    fn refactor_across_modules_is_complex() {
        let s = analyse(
            "Refactor the storage layer across multiple modules and integrate the cache API",
        );
        assert_eq!(s.complexity, Complexity::Complex);
        assert_eq!(s.preset, "architecture");
        assert_eq!(s.analysis.exploration_dimensions.len(), 5);
        assert_eq!(s.analysis.exploration_dimensions[0], "architecture");
        assert!(s.complexity_reason.contains("structural"));
    }

    #[test]
    fn feature_default_and_open_scope() {
        let s = analyse("Improve things");
        assert_eq!(s.preset, "feature");
        assert_eq!(
            s.analysis.exploration_dimensions,
            ["patterns", "integration-points", "testing"]
        );
        assert_eq!(s.analysis.domain, "general software");
        assert!(s.vague);
        assert!(!s.has_criteria);
        assert!(s.analysis.constraints.is_empty());
        assert!(s.analysis.target_users.is_empty());
    }

    #[test]
    fn long_text_raises_complexity() {
        let s = analyse(&"word ".repeat(120));
        assert_eq!(s.complexity, Complexity::Complex);
        let s = analyse(&"word ".repeat(50));
        assert_eq!(s.complexity, Complexity::Moderate);
    }

    #[test]
    fn constraint_words() {
        let s = analyse("Export the visible rows. Use only the CSV module. Keep it fast");
        assert_eq!(s.analysis.constraints, ["Use only the CSV module."]);
        let s = analyse("Do not touch the schema; at most two queries per page");
        assert_eq!(
            s.analysis.constraints,
            ["Do not touch the schema", "at most two queries per page"]
        );
    }
}
