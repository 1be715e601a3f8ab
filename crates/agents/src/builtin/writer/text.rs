//! Fixed rules for reading the task text: clauses, verbs, topics, slugs; and the small
//! formatting helpers every document shares (table cells, lists). The word lists the rules
//! use, and the small tables the phases look words up in, are data:
//! `specs/templates/builtin/writer-words.toml`, read once into [`WORDS`].

use std::collections::BTreeMap;
use std::sync::LazyLock;

use serde::Deserialize;

use super::Moscow;

/// The word lists of the text rules and the small tables the phases look words up in; see
/// `writer-words.toml` for what each holds.
#[derive(Deserialize)]
pub(crate) struct Words {
    separators: Vec<String>,
    lead_ins: Vec<String>,
    tails: Vec<String>,
    negations: Vec<String>,
    priorities: Vec<StatedPriority>,
    verbs: Vec<String>,
    nounish: Vec<String>,
    determiners: Vec<String>,
    prepositions: Vec<String>,
    stop_words: Vec<String>,
    topics: BTreeMap<Topic, Vec<String>>,
    /// User groups by the role words that name them.
    pub roles: BTreeMap<String, Vec<String>>,
    /// Parts of words that make a constraint a business one.
    pub business: Vec<String>,
    /// Verbs that make a matched module a replacement.
    pub replacing: Vec<String>,
    /// Parts of dependency names that point to a security library.
    pub security_libs: Vec<String>,
    /// The systems that are data stores.
    pub stores: Vec<String>,
    /// External systems a request may name.
    pub systems: Vec<System>,
    /// Language names: word, language.
    pub languages: Vec<[String; 2]>,
}

/// An external system a request may name.
#[derive(Deserialize, serde::Serialize)]
pub(crate) struct System {
    /// The words that name it.
    #[serde(skip_serializing)]
    words: Vec<String>,
    /// Its name.
    pub name: String,
    /// The protocol it speaks.
    protocol: String,
    /// The data format it exchanges.
    format: String,
}

/// The external systems `text` names, in table order.
pub(crate) fn systems(text: &str) -> Vec<&'static System> {
    let words = words(text);
    (WORDS.systems.iter())
        .filter(|s| s.words.iter().any(|w| has(&words, w)))
        .collect()
}

/// A priority and the wording that states it.
#[derive(Deserialize)]
struct StatedPriority {
    priority: Moscow,
    words: Vec<String>,
    #[serde(default)]
    phrases: Vec<String>,
}

/// [`Words`], read once; a test parses the file.
pub(crate) static WORDS: LazyLock<Words> =
    LazyLock::new(|| crate::builtin::template::data(builtin!("writer-words.toml")));

/// Whether a list holds a word, and the words of a text: the builtin agent's.
pub(crate) use crate::builtin::words::{has, words};

/// One clause of the task text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Clause {
    /// The clause, cleaned: lead-in words dropped, first letter upper-case; as Markdown
    /// source ([`tlv4_specdoc::md::inline`]), since every use places it in a document.
    pub text: String,
    /// The priority its wording states (`must`, `should`, `could`…), if any.
    pub priority: Option<Moscow>,
    /// Whether it says what not to do (`do not…`, `without…`).
    pub negative: bool,
}

/// Splits the task text into clauses: into its sentences (`builtin::words`), then on `and`,
/// `then` and commas where the words after them start a new verb phrase ("add X and store Y"
/// is two clauses; "add X and Y" is one). A `without …` tail becomes its own negative clause.
pub(crate) fn clauses(text: &str) -> Vec<Clause> {
    let mut out: Vec<Clause> = Vec::new();
    for sentence in crate::builtin::words::sentences(text) {
        let sentence = sentence.strip_suffix(['.', '!', '?']).unwrap_or(sentence);
        for piece in split_on_verbs(sentence) {
            let (positive, negative) = split_without(&piece);
            for (piece, negative) in [(positive, false), (negative, true)] {
                if let Some(clause) = clean(&piece, negative)
                    && !out
                        .iter()
                        .any(|c| c.text.eq_ignore_ascii_case(&clause.text))
                {
                    out.push(clause);
                }
            }
        }
    }
    // A one-word clause ("Thanks") says nothing when there are others.
    if out.iter().filter(|c| !c.negative).count() > 1 {
        out.retain(|c| c.negative || c.text.split_whitespace().count() > 1);
    }
    out
}

/// Splits `part` where a separator is followed by a verb phrase. A piece of one word is
/// joined back to the one before it ("build and deploy" stays whole).
fn split_on_verbs(part: &str) -> Vec<String> {
    let lower = part.to_ascii_lowercase();
    let mut pieces: Vec<(String, String)> = Vec::new(); // (separator before, text)
    let mut start = 0;
    let mut sep_before = String::new();
    for (i, _) in part.char_indices() {
        if i < start {
            continue;
        }
        let found = WORDS
            .separators
            .iter()
            .find(|sep| lower[i..].starts_with(*sep) && starts_with_verb(&part[i + sep.len()..]));
        if let Some(sep) = found {
            pieces.push((sep_before, part[start..i].to_owned()));
            sep_before = part[i..i + sep.len()].to_owned();
            start = i + sep.len();
        }
    }
    pieces.push((sep_before, part[start..].to_owned()));
    // A one-word piece joins the one before it; one at the start stays open for the next
    // one: "build and deploy X".
    let mut out: Vec<String> = Vec::new();
    let mut open = false;
    for (sep, text) in pieces {
        let short = text.split_whitespace().count() < 2;
        match out.last_mut() {
            Some(last) if short || open => {
                last.push_str(&sep);
                last.push_str(&text);
                open &= short;
            }
            _ => {
                open = short;
                out.push(text);
            }
        }
    }
    out
}

/// Splits "X without Y" into ("X", "Without Y").
fn split_without(piece: &str) -> (String, String) {
    let lower = piece.to_ascii_lowercase();
    match lower.find(" without ") {
        Some(at) if at > 0 => (piece[..at].to_owned(), piece[at + 1..].to_owned()),
        _ => (piece.to_owned(), String::new()),
    }
}

fn strip_lead_ins(text: &str) -> &str {
    let mut text = text.trim();
    loop {
        let lower = text.to_ascii_lowercase();
        match WORDS.lead_ins.iter().find(|l| lower.starts_with(*l)) {
            Some(l) => text = text[l.len()..].trim_start(),
            None => return text,
        }
    }
}

fn clean(piece: &str, negative: bool) -> Option<Clause> {
    let lower = format!(" {} ", piece.to_ascii_lowercase());
    let priority = stated_priority(&lower);
    let mut text = strip_lead_ins(piece)
        .trim_matches(|c: char| c.is_whitespace() || ",.;:!?\"'".contains(c))
        .to_owned();
    for tail in &WORDS.tails {
        if text.to_ascii_lowercase().ends_with(tail) {
            text.truncate(text.len() - tail.len());
        }
    }
    let text = one_line(&text);
    if text.is_empty() {
        return None;
    }
    let first = lower.trim_start();
    let negative = negative
        || WORDS
            .negations
            .iter()
            .any(|n| first.starts_with(n.as_str()));
    Some(Clause {
        text: tlv4_specdoc::md::inline(&upper_first(&text)),
        priority,
        negative,
    })
}

/// The MoSCoW priority a clause's wording states. `lower` is padded with spaces.
fn stated_priority(lower: &str) -> Option<Moscow> {
    let p = WORDS.priorities.iter().find(|p| {
        p.words.iter().any(|w| lower.contains(&format!(" {w} ")))
            || p.phrases.iter().any(|ph| lower.contains(ph.as_str()))
    });
    p.map(|p| p.priority)
}

/// Whether `word` is a verb that opens a requirement.
pub(crate) fn is_verb(word: &str) -> bool {
    let w = word
        .trim_matches(|c: char| !c.is_alphanumeric())
        .to_ascii_lowercase();
    has(&WORDS.verbs, &w)
        || (w.len() >= 7 && (w.ends_with("ize") || w.ends_with("ise") || w.ends_with("ify")))
}

/// Whether `text`, after lead-in words, starts with a verb.
fn starts_with_verb(text: &str) -> bool {
    let mut words = strip_lead_ins(text)
        .split_whitespace()
        .map(str::to_ascii_lowercase);
    match words.next() {
        // A verb that is as often a noun needs a determiner after it.
        Some(first) if is_verb(&first) => {
            !has(&WORDS.nounish, &first)
                || words.next().is_some_and(|w| has(&WORDS.determiners, &w))
        }
        _ => false,
    }
}

/// Splits a verb phrase with a plain list as its object into one phrase per item: "Add
/// login, logout and password reset" gives three. Anything else stays whole.
pub(crate) fn decompose(goal: &str) -> Vec<String> {
    list_items(goal).unwrap_or_else(|| vec![goal.to_owned()])
}

/// The phrases of [`decompose`], when `goal` is a verb with a plain list of two to five
/// short items, none after a preposition.
fn list_items(goal: &str) -> Option<Vec<String>> {
    let mut words = goal.split_whitespace();
    let verb = words.next().filter(|v| is_verb(v))?;
    let rest: String = words.collect::<Vec<_>>().join(" ");
    let lower = rest.to_ascii_lowercase();
    let first_sep = [", ", " and "].iter().filter_map(|s| lower.find(s)).min()?;
    if lower[..first_sep]
        .split_whitespace()
        .any(|w| has(&WORDS.prepositions, w))
    {
        return None;
    }
    let chunks = rest
        .split(", ")
        .map(str::trim)
        .map(|c| c.strip_prefix("and ").unwrap_or(c));
    let items: Vec<&str> = chunks
        .flat_map(|c| c.split(" and "))
        .map(str::trim)
        .collect();
    let short = |i: &&str| !i.is_empty() && i.split_whitespace().count() <= 5;
    ((2..=5).contains(&items.len()) && items.iter().all(short))
        .then(|| items.iter().map(|i| format!("{verb} {i}")).collect())
}

/// What a piece of text is about, by keyword. Several may apply; the first, in the order
/// declared here, is the main one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Topic {
    /// Access control, secrets, cryptography.
    Security,
    /// Speed, latency, caching.
    Performance,
    /// Load, concurrency, growth.
    Scale,
    /// Screens, forms, accessibility.
    Usability,
    /// Storage, schemas, import and export.
    Data,
    /// Tests and coverage.
    Testing,
    /// Documentation.
    Docs,
}

#[cfg(test)]
impl Topic {
    /// Every topic, in the order used to pick the main one.
    pub(crate) const ALL: [Topic; 7] = [
        Topic::Security,
        Topic::Performance,
        Topic::Scale,
        Topic::Usability,
        Topic::Data,
        Topic::Testing,
        Topic::Docs,
    ];
}

/// The topics `text` touches, in the order of [`Topic`], which picks the main one.
pub(crate) fn topics(text: &str) -> Vec<Topic> {
    let words = words(text);
    let found = WORDS.topics.iter().filter(|(_, keys)| {
        keys.iter().any(|k| match k.strip_suffix('*') {
            Some(stem) => words.iter().any(|w| w.starts_with(stem)),
            None => words.iter().any(|w| w == k),
        })
    });
    found.map(|(t, _)| *t).collect()
}

/// The words of `text` that say what it is about: no stop words, no opening verbs, no words
/// under three letters, a plural `s` dropped.
pub(crate) fn key_words(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in words(text) {
        if w.len() < 3 || has(&WORDS.stop_words, &w) || is_verb(&w) {
            continue;
        }
        let w = match w.strip_suffix('s') {
            Some(stem) if stem.len() >= 3 && !["ss", "us", "is"].iter().any(|e| w.ends_with(e)) => {
                stem.to_owned()
            }
            _ => w,
        };
        if !out.contains(&w) {
            out.push(w);
        }
    }
    out
}

/// A short noun phrase naming what a goal is about: the words after its verb, articles
/// dropped, at most five, no dangling preposition. "Store sessions in Redis" gives
/// "Sessions in Redis".
pub(crate) fn topic_name(goal: &str) -> String {
    let mut words: Vec<&str> = goal.split_whitespace().collect();
    if words.len() > 1 && is_verb(words[0]) {
        words.remove(0);
    }
    let mut kept: Vec<&str> = words
        .into_iter()
        .filter(|w| {
            !["a", "an", "the", "our", "my", "new", "your"].contains(&w.to_lowercase().as_str())
        })
        .take(5)
        .collect();
    while kept.len() > 1
        && kept.last().is_some_and(|w| {
            has(&WORDS.prepositions, &w.to_lowercase())
                || ["and", "or"].contains(&w.to_lowercase().as_str())
        })
    {
        kept.pop();
    }
    let name = kept.join(" ");
    let name = name.trim_matches(|c: char| !c.is_alphanumeric());
    upper_first(if name.is_empty() { goal } else { name })
}

/// A kebab-case slug of at most five words and 40 characters; `fallback` when `text` has
/// no ASCII letters or digits.
pub(crate) fn slug(text: &str, fallback: &str) -> String {
    let mut out = String::new();
    let words = text.split(|c: char| !c.is_ascii_alphanumeric());
    for word in words.filter(|w| !w.is_empty()).take(5) {
        let word = word.to_ascii_lowercase();
        if out.is_empty() {
            out = word.chars().take(40).collect();
        } else if out.len() + word.len() + 1 > 40 {
            break;
        } else {
            out = format!("{out}-{word}");
        }
    }
    if out.is_empty() {
        fallback.to_owned()
    } else {
        out
    }
}

pub(crate) use tlv4_core::text::{cell, one_line, shorten};

/// Text safe inside a Mermaid label.
pub(crate) fn mermaid_label(text: &str) -> String {
    // `\\` too: the text may be Markdown source, with its escapes.
    let unsafe_chars = ['"', '[', ']', '(', ')', '{', '}', '<', '>', '|', '`', '\\'];
    one_line(&text.replace(unsafe_chars, " "))
}

/// `text` with its first letter upper-case.
pub(crate) fn upper_first(text: &str) -> String {
    let mut chars = text.chars();
    (chars.next()).map_or_else(String::new, |c| c.to_uppercase().chain(chars).collect())
}

/// `text` with its first letter lower-case, unless the first word is an acronym.
pub(crate) fn lower_first(text: &str) -> String {
    let first = text.split_whitespace().next().unwrap_or("");
    if first.chars().filter(|c| c.is_uppercase()).count() > 1 {
        return text.to_owned();
    }
    let mut chars = text.chars();
    (chars.next()).map_or_else(String::new, |c| c.to_lowercase().chain(chars).collect())
}

/// `a` or `an` before `word`.
pub(crate) fn article(word: &str) -> &'static str {
    match word.chars().next().map(|c| c.to_ascii_lowercase()) {
        Some('a' | 'e' | 'i' | 'o' | 'u') => "an",
        _ => "a",
    }
}

/// Items joined as `a, b and c`, or as `a; b; and c` when an item holds a comma.
pub(crate) fn series(items: &[String]) -> String {
    if items.len() > 2 && items.iter().any(|i| i.contains(',')) {
        let (last, init) = items.split_last().expect("more than two items");
        format!("{}; and {last}", init.join("; "))
    } else {
        and_list(items)
    }
}

/// Items joined as `a, b and c`.
pub(crate) fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(text: &str) -> Vec<String> {
        clauses(text).into_iter().map(|c| c.text).collect()
    }

    #[test]
    fn clauses_split_on_new_verbs_only() {
        assert_eq!(
            texts(
                "Add OAuth login and store sessions in Redis. Users should be able to reset passwords; keep the API stable"
            ),
            vec![
                "Add OAuth login",
                "Store sessions in Redis",
                "Users should be able to reset passwords",
                "Keep the API stable"
            ]
        );
        assert_eq!(
            texts("add search for users and groups, e.g. by name"),
            vec!["Add search for users and groups, e.g. by name"]
        );
        assert_eq!(
            texts("build and deploy the site"),
            vec!["Build and deploy the site"]
        );
        assert_eq!(
            texts("Please add login, add logout, then document it"),
            vec!["Add login", "Add logout", "Document it"]
        );
        let c = clauses("Add export without breaking the API. Optionally add a dark theme");
        assert_eq!(c[0].text, "Add export");
        assert!(c[1].negative && c[1].text == "Without breaking the API");
        assert_eq!(c[2].text, "Add a dark theme");
        assert_eq!(c[2].priority, Some(Moscow::Could));
    }

    #[test]
    fn the_word_lists_parse() {
        assert!(is_verb("add") && !WORDS.roles.is_empty());
        assert_eq!(WORDS.topics.len(), Topic::ALL.len());
    }

    #[test]
    fn decomposition_and_names() {
        assert_eq!(
            decompose("Add login, logout and password reset"),
            vec!["Add login", "Add logout", "Add password reset"]
        );
        assert_eq!(
            decompose("Add search for users and groups"),
            vec!["Add search for users and groups"]
        );
        assert_eq!(decompose("Users can log in"), vec!["Users can log in"]);
        assert_eq!(topic_name("Store sessions in Redis"), "Sessions in Redis");
        assert_eq!(topic_name("Add a rate limit to the"), "Rate limit");
        assert_eq!(slug("Add OAuth login!", "x"), "add-oauth-login");
        assert_eq!(slug("日本", "requirement"), "requirement");
        assert_eq!(topics("Add OAuth login"), vec![Topic::Security]);
        assert_eq!(
            key_words("Store the sessions in Redis"),
            vec!["session", "redis"]
        );
    }
}
