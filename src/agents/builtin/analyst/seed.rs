//! Seed analysis: what the task text says, read with keyword tables and no model.
//!
//! The text is cut into lower-case words. A table keyword matches a word exactly, or a word
//! it starts when it ends in `*` (`optimi*` matches `optimise` and `optimization`); a keyword
//! with a space matches consecutive words. The explore-angle presets and the complexity
//! score are the reference's (planner explore, §5.6).

use std::collections::BTreeSet;

/// How big the request looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Complexity {
    Simple,
    Moderate,
    Complex,
}

impl Complexity {
    /// `simple`, `moderate` or `complex`.
    pub fn as_str(self) -> &'static str {
        match self {
            Complexity::Simple => "simple",
            Complexity::Moderate => "moderate",
            Complexity::Complex => "complex",
        }
    }

    /// The depth of the spec work that fits: `light`, `standard` or `comprehensive`.
    pub fn depth(self) -> &'static str {
        match self {
            Complexity::Simple => "light",
            Complexity::Moderate => "standard",
            Complexity::Complex => "comprehensive",
        }
    }

    /// How many exploration dimensions to pursue (3 to 5).
    fn dimensions(self) -> usize {
        match self {
            Complexity::Simple => 3,
            Complexity::Moderate => 4,
            Complexity::Complex => 5,
        }
    }
}

/// Domains and the words that point to them; the first with the most hits wins.
#[rustfmt::skip]
const DOMAINS: &[(&str, &[&str])] = &[
    (
        "security and authentication",
        &[
            "auth", "authent*", "authori*", "login*", "logout", "signup", "sign in",
            "password*", "oauth*", "sso", "jwt", "permission*", "security", "secure",
            "vulnerab*", "encrypt*", "credential*", "2fa", "mfa",
        ],
    ),
    (
        "data and persistence",
        &[
            "database*", "db", "sql", "postgres*", "mysql", "sqlite", "migration*", "schema*",
            "query", "queries", "orm", "persist*", "storage", "backup*",
        ],
    ),
    (
        "web frontend",
        &[
            "ui", "ux", "frontend", "front end", "page", "pages", "component*", "button*",
            "css", "style*", "layout*", "react", "vue", "svelte", "theme*", "dark mode",
            "responsive", "accessib*", "browser*",
        ],
    ),
    (
        "web API and backend",
        &[
            "api", "apis", "endpoint*", "rest", "graphql", "route*", "server*", "backend",
            "http", "webhook*", "grpc",
        ],
    ),
    (
        "performance",
        &[
            "perf", "performance", "slow*", "optimi*", "latency", "speed*", "throughput",
            "memory", "cache*", "caching", "benchmark*",
        ],
    ),
    (
        "infrastructure and delivery",
        &[
            "deploy*", "docker*", "container*", "kubernetes", "k8s", "ci", "infra*",
            "terraform", "helm", "release*",
        ],
    ),
    (
        "machine learning",
        &[
            "ml", "machine learning", "training", "inference", "dataset*", "neural", "llm",
            "embedding*", "classifier*", "pytorch", "tensorflow",
        ],
    ),
    (
        "developer tooling",
        &[
            "cli", "command*", "subcommand*", "flag*", "terminal", "shell", "git", "plugin*",
        ],
    ),
    (
        "realtime and messaging",
        &[
            "realtime", "real time", "websocket*", "chat*", "notification*", "stream*",
            "queue*", "kafka", "pubsub",
        ],
    ),
    (
        "payments and commerce",
        &[
            "payment*", "billing", "invoice*", "checkout", "stripe", "cart", "subscription*",
            "pricing",
        ],
    ),
    ("search", &["search*", "full text", "ranking", "fuzzy"]),
    (
        "testing and quality",
        &[
            "test", "tests", "testing", "coverage", "lint*", "flaky", "e2e",
        ],
    ),
    (
        "documentation",
        &[
            "doc", "docs", "documentation", "readme*", "tutorial*", "guide*",
        ],
    ),
];

/// Explore-angle presets: name, trigger words, angles (reference §5.6).
#[rustfmt::skip]
const PRESETS: &[(&str, &[&str], &[&str])] = &[
    (
        "architecture",
        &[
            "refactor*", "architect*", "restructur*", "modular*", "redesign*", "decoupl*",
        ],
        &[
            "architecture", "dependencies", "modularity", "integration-points",
        ],
    ),
    (
        "security",
        &[
            "security", "secure", "auth", "authent*", "authori*", "permission*", "access",
            "login*", "password*", "oauth*", "vulnerab*",
        ],
        &["security", "auth-patterns", "dataflow", "validation"],
    ),
    (
        "performance",
        &[
            "performance", "perf", "slow*", "optimi*", "cache", "caching", "latency", "speed*",
        ],
        &["performance", "bottlenecks", "caching", "data-access"],
    ),
    (
        "bugfix",
        &[
            "fix", "fixes", "fixing", "bug*", "error*", "issue*", "broken", "crash*", "fail*",
            "regression*",
        ],
        &[
            "error-handling", "dataflow", "state-management", "edge-cases",
        ],
    ),
];

/// The default preset's angles.
const FEATURE_ANGLES: &[&str] = &["patterns", "integration-points", "testing", "dependencies"];

/// Complexity keyword groups and their points, counted once per group (reference §5.6).
#[rustfmt::skip]
const COMPLEXITY_GROUPS: &[(&str, &[&str], u32)] = &[
    (
        "structural",
        &["refactor*", "architect*", "restructur*", "modular*"],
        2,
    ),
    ("multi-scope", &["multiple", "across", "cross cutting"], 2),
    ("integration", &["integrat*", "api", "apis", "database*"], 1),
    (
        "non-functional",
        &["security", "performance", "auth", "authent*", "authori*"],
        1,
    ),
];

/// Words that make a sentence a constraint.
#[rustfmt::skip]
const CONSTRAINT_WORDS: &[&str] = &[
    "must", "should", "without", "only", "never", "cannot", "avoid", "do not", "don t",
    "at most", "at least", "no more than", "required",
];

/// Words that suggest the text says how to tell the work is done.
#[rustfmt::skip]
const CRITERIA_WORDS: &[&str] = &[
    "acceptance", "criteria", "done when", "so that", "expect*", "should", "must", "given",
    "returns", "return",
];

/// Words that leave the scope open.
#[rustfmt::skip]
const VAGUE_WORDS: &[&str] = &[
    "improve*", "better", "clean*", "various", "etc", "stuff", "things", "misc*", "somehow",
    "everything", "general", "some",
];

/// Who a request can be for, and the plural used to name them.
const USER_NOUNS: &[(&str, &str)] = &[
    ("user", "users"),
    ("users", "users"),
    ("admin", "admins"),
    ("admins", "admins"),
    ("administrator", "administrators"),
    ("administrators", "administrators"),
    ("developer", "developers"),
    ("developers", "developers"),
    ("customer", "customers"),
    ("customers", "customers"),
    ("operator", "operators"),
    ("operators", "operators"),
    ("maintainer", "maintainers"),
    ("maintainers", "maintainers"),
    ("contributor", "contributors"),
    ("contributors", "contributors"),
    ("student", "students"),
    ("students", "students"),
    ("teacher", "teachers"),
    ("teachers", "teachers"),
    ("visitor", "visitors"),
    ("visitors", "visitors"),
    ("member", "members"),
    ("members", "members"),
    ("engineer", "engineers"),
    ("engineers", "engineers"),
    ("player", "players"),
    ("players", "players"),
    ("patient", "patients"),
    ("patients", "patients"),
    ("staff", "staff"),
    ("people", "people"),
];

/// Words before a user noun that are not part of its name.
#[rustfmt::skip]
const NOT_QUALIFIERS: &[&str] = &[
    "the", "a", "an", "for", "to", "of", "and", "or", "our", "all", "by", "with", "as", "let",
    "lets", "allow", "allows", "help", "helps", "other", "new", "so", "that", "when", "if", "each",
    "every", "any", "some", "many", "more", "most", "their", "your", "my", "can",
];

/// Words that say nothing about where in the code the work is.
#[rustfmt::skip]
const STOPWORDS: &[&str] = &[
    "the", "and", "for", "with", "that", "this", "from", "into", "onto", "when", "then", "than",
    "should", "must", "will", "would", "could", "can", "not", "only", "never", "without", "all",
    "any", "some", "each", "every", "our", "your", "their", "its", "are", "was", "were", "been",
    "being", "has", "have", "had", "does", "did", "add", "adds", "added", "adding", "make",
    "makes", "use", "uses", "using", "used", "new", "implement", "implementing", "create",
    "support", "allow", "allows", "change", "changes", "update", "need", "needs", "want",
    "also", "just", "like", "via", "per", "out", "but", "get", "let", "lets", "way", "able",
    "sure", "etc", "please", "there", "here", "what", "which", "who", "how", "why", "where",
    "them", "they", "these", "those", "one", "two", "more", "less", "most", "least", "very",
    "too", "same", "other", "such", "about", "over", "under", "after", "before", "while",
    "again", "keep", "still", "instead", "existing", "current", "currently", "fix", "don",
    "doesn", "isn", "you", "yes", "both", "within",
];

/// At most this many keywords are searched for.
const MAX_KEYWORDS: usize = 12;

/// The lower-case words of a text.
#[derive(Debug, Clone)]
pub struct Words {
    list: Vec<String>,
    /// The words joined by single spaces, with a space at each end, for phrase matching.
    joined: String,
}

impl Words {
    /// Cuts `text` into words of ASCII letters and digits.
    pub fn new(text: &str) -> Words {
        let list: Vec<String> = text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect();
        let joined = format!(" {} ", list.join(" "));
        Words { list, joined }
    }

    /// How many times `keyword` matches.
    pub fn hits(&self, keyword: &str) -> usize {
        if keyword.contains(' ') {
            self.joined.matches(&format!(" {keyword} ")).count()
        } else if let Some(prefix) = keyword.strip_suffix('*') {
            self.list.iter().filter(|w| w.starts_with(prefix)).count()
        } else {
            self.list.iter().filter(|w| *w == keyword).count()
        }
    }

    /// Total hits of `keywords`.
    pub fn score(&self, keywords: &[&str]) -> usize {
        keywords.iter().map(|k| self.hits(k)).sum()
    }

    /// Whether any of `keywords` matches.
    pub fn any(&self, keywords: &[&str]) -> bool {
        keywords.iter().any(|k| self.hits(k) > 0)
    }

    /// The number of words.
    pub fn len(&self) -> usize {
        self.list.len()
    }
}

/// The seed analysis as written to `discovery-context.json`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SeedAnalysis {
    /// Sentences that limit the solution.
    pub constraints: Vec<String>,
    /// The domain the words point to.
    pub domain: String,
    /// 3 to 5 explore angles.
    pub exploration_dimensions: Vec<String>,
    /// The text, trimmed.
    pub problem_statement: String,
    /// Who the request is for, when it says so.
    pub target_users: Vec<String>,
}

/// Everything read from the task text.
#[derive(Debug, Clone)]
pub struct Seed {
    /// The part written out.
    pub analysis: SeedAnalysis,
    /// Words to search the code for, in text order.
    pub keywords: Vec<String>,
    /// How big the request looks.
    pub complexity: Complexity,
    /// Why, in words.
    pub complexity_reason: String,
    /// The explore-angle preset the dimensions came from first (`feature` by default).
    pub preset: &'static str,
    /// Whether the text says how to tell the work is done.
    pub has_criteria: bool,
    /// Whether the scope is open (very short, or vague words).
    pub vague: bool,
    /// The words, for later questions.
    pub words: Words,
}

/// Reads `text`.
pub fn analyse(text: &str) -> Seed {
    let statement = text.trim().to_owned();
    let words = Words::new(&statement);

    let domain = DOMAINS
        .iter()
        .map(|(name, kws)| (*name, words.score(kws)))
        .fold(
            ("general software", 0),
            |best, d| if d.1 > best.1 { d } else { best },
        )
        .0;

    let mut points = 0;
    let mut groups = Vec::new();
    for (group, kws, p) in COMPLEXITY_GROUPS {
        if words.any(kws) {
            points += p;
            groups.push(*group);
        }
    }
    let by_words = match points {
        0..=1 => Complexity::Simple,
        2..=3 => Complexity::Moderate,
        _ => Complexity::Complex,
    };
    let chars = statement.chars().count();
    let by_length = match chars {
        0..200 => Complexity::Simple,
        200..=500 => Complexity::Moderate,
        _ => Complexity::Complex,
    };
    let complexity = by_words.max(by_length);
    let complexity_reason = if groups.is_empty() {
        format!("keyword score 0, {chars} characters")
    } else {
        format!(
            "keyword score {points} ({}), {chars} characters",
            groups.join(", ")
        )
    };

    let mut presets: Vec<(usize, usize)> = PRESETS
        .iter()
        .enumerate()
        .map(|(i, (_, kws, _))| (words.score(kws), i))
        .filter(|(score, _)| *score > 0)
        .collect();
    presets.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let preset = presets.first().map_or("feature", |(_, i)| PRESETS[*i].0);
    let mut dimensions: Vec<String> = Vec::new();
    let angles = presets
        .iter()
        .flat_map(|(_, i)| PRESETS[*i].2.iter())
        .chain(FEATURE_ANGLES);
    for angle in angles {
        if dimensions.len() < complexity.dimensions() && !dimensions.iter().any(|d| d == angle) {
            dimensions.push((*angle).to_owned());
        }
    }

    let constraints = sentences(&statement)
        .into_iter()
        .filter(|s| Words::new(s).any(CONSTRAINT_WORDS))
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
        preset,
        has_criteria: words.any(CRITERIA_WORDS),
        vague: words.len() < 6 || words.any(VAGUE_WORDS),
        words,
    }
}

/// Sentences of `text`: cut at `!`, `?`, `;`, new lines, and full stops followed by a space,
/// without list bullets; unique, in order.
fn sentences(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut chars = text.chars().peekable();
    let mut flush = |current: &mut String| {
        let s = current
            .trim()
            .trim_start_matches(['-', '*', '•'])
            .trim()
            .to_owned();
        if !s.is_empty() && !out.contains(&s) {
            out.push(s);
        }
        current.clear();
    };
    while let Some(c) = chars.next() {
        match c {
            '\n' | ';' => flush(&mut current),
            '!' | '?' => {
                current.push(c);
                flush(&mut current);
            }
            '.' if chars.peek().is_none_or(|n| n.is_whitespace()) => {
                current.push(c);
                flush(&mut current);
            }
            _ => current.push(c),
        }
    }
    flush(&mut current);
    out
}

/// The user groups named in the text, with one qualifying word when there is one
/// (`mobile users`), unique, at most five.
fn target_users(words: &Words) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (i, w) in words.list.iter().enumerate() {
        let Some((_, plural)) = USER_NOUNS.iter().find(|(n, _)| n == w) else {
            continue;
        };
        let qualifier = i
            .checked_sub(1)
            .map(|j| words.list[j].as_str())
            .filter(|q| {
                !NOT_QUALIFIERS.contains(q)
                    && !STOPWORDS.contains(q)
                    && q.chars().all(|c| c.is_alphabetic())
            })
            .filter(|_| {
                // Only a qualifier that itself follows a word like "for" or "the", so that
                // "let users" stays "users" and "for mobile users" becomes "mobile users".
                i.checked_sub(2)
                    .is_some_and(|k| NOT_QUALIFIERS.contains(&words.list[k].as_str()))
            });
        let name = match qualifier {
            Some(q) => format!("{q} {plural}"),
            None => (*plural).to_owned(),
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
    let mut seen = BTreeSet::new();
    words
        .list
        .iter()
        .filter(|w| w.chars().count() >= 3 && !w.chars().all(|c| c.is_ascii_digit()))
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
        .filter(|w| seen.insert(w.as_str()))
        .take(MAX_KEYWORDS)
        .cloned()
        .collect()
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

    #[test]
    fn sentence_cutting() {
        assert_eq!(
            sentences("Read config.toml. Then stop!\n- only once"),
            ["Read config.toml.", "Then stop!", "only once"]
        );
    }
}
