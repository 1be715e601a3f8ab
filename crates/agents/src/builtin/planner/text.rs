//! Words: how the planner picks the keywords of a work item, splits a task text into clauses
//! and names things (cutting text into words and sentences is the builtin agent's one way,
//! `builtin::words`); and what it says. The word lists are
//! data (`planner-words.toml`); every sentence of the plan, its tasks and its decisions is a
//! minijinja template in `planner-text.toml`, said over plain facts (`builtin::template::render`, [`say_lines`] for lists).

use std::collections::BTreeSet;
use std::sync::LazyLock;

use crate::builtin::code::Naming;
use crate::builtin::template::render;
use crate::builtin::words::{camel_words as words, sentences, unique};

/// The planner's word tables, from `specs/templates/builtin/planner-words.toml`.
#[derive(Debug, serde::Deserialize)]
pub(super) struct Words {
    /// Words that say nothing about where a change goes; never keywords.
    stop: BTreeSet<String>,
    /// What a task text is split at, longest first.
    connectors: Vec<String>,
    /// The exploration angles, each with the words of a task that call for it.
    pub angles: Vec<Angle>,
    /// What each complexity is called, Low, Medium and High in this order.
    pub complexity: Vec<Level>,
}

/// What a complexity is called and how its plan runs.
#[derive(Debug, serde::Deserialize, serde::Serialize)]
pub(super) struct Level {
    /// Its name in `plan.json` (`Low`).
    pub complexity: String,
    /// The range of module counts it covers.
    pub range: String,
    /// Its `recommended_execution`.
    pub execution: String,
    /// How its tasks run.
    pub how: String,
}

/// An exploration angle and its trigger words.
#[derive(Debug, serde::Deserialize)]
pub(super) struct Angle {
    /// The angle's name (`security`).
    pub name: String,
    /// Words of the task that call for it.
    pub triggers: Vec<String>,
}

/// The word tables, parsed once.
pub(super) static WORDS: LazyLock<Words> =
    LazyLock::new(|| crate::builtin::template::data(builtin!("planner-words.toml")));

/// The lines of the list sentence `name`, said over `facts`.
pub(super) fn say_lines(name: &str, facts: &impl serde::Serialize) -> Vec<String> {
    render(name, facts).lines().map(str::to_owned).collect()
}

/// Whether `word` can be a keyword: four letters or more, and not a stop word.
pub(super) fn is_keyword(word: &str) -> bool {
    word.chars().count() >= 4 && word.chars().all(char::is_alphabetic) && !WORDS.stop.contains(word)
}

/// The keywords of a work item, at most `cap`: the words of `primary` (its title) in order,
/// then the words of `secondary` (description, criteria) by how often they occur.
pub(super) fn keywords(primary: &str, secondary: &str, cap: usize) -> Vec<String> {
    let mut out = unique(words(primary).into_iter().filter(|w| is_keyword(w)));
    let rest: Vec<String> = words(secondary)
        .into_iter()
        .filter(|w| is_keyword(w) && !out.contains(w))
        .collect();
    // Most frequent first; the sort keeps ties in the order of the text.
    let mut ranked = unique(rest.iter().cloned());
    ranked.sort_by_cached_key(|w| std::cmp::Reverse(rest.iter().filter(|r| *r == w).count()));
    out.extend(ranked);
    out.truncate(cap);
    out
}

/// How many words `text` has.
fn word_count(text: &str) -> usize {
    text.split_whitespace().count()
}

/// The clauses of a task text: its sentences, each cut at connectors such as "and" or a
/// comma where both sides are at least three words long.
pub(super) fn clauses(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for s in sentences(text) {
        split_at_connectors(s, &mut out);
    }
    let mut seen = BTreeSet::new();
    out.retain(|c| seen.insert(c.to_ascii_lowercase()));
    out
}

fn split_at_connectors(text: &str, out: &mut Vec<String>) {
    // ASCII lower-casing keeps byte offsets, so positions found in `lower` cut `text`.
    let lower = text.to_ascii_lowercase();
    for sep in &WORDS.connectors {
        let mut from = 0;
        while let Some(pos) = lower[from..].find(sep) {
            let at = from + pos;
            let (left, right) = (&text[..at], &text[at + sep.len()..]);
            if word_count(left) >= 3 && word_count(right) >= 3 {
                split_at_connectors(left, out);
                split_at_connectors(right, out);
                return;
            }
            from = at + sep.len();
        }
    }
    let clause = text
        .trim()
        .trim_end_matches(['.', ',', ';', ':', '!', '?'])
        .trim();
    if !clause.is_empty() {
        out.push(clause.to_owned());
    }
}

/// `text` with its first letter upper-case: the writer's rule, under the planner's name.
pub(in crate::builtin) use crate::builtin::writer::text::upper_first as sentence_case;

/// `text` on one line, at most `max` characters, cut at a word boundary with `…` when cut:
/// the writer's rule, under the planner's name.
pub(in crate::builtin) use crate::builtin::writer::text::shorten as truncate;

/// A file name (without extension) from up to two words.
pub(super) fn file_stem(words: &[String], naming: Naming) -> String {
    let words: Vec<&str> = words.iter().take(2).map(String::as_str).collect();
    let words = if words.is_empty() {
        vec!["change"]
    } else {
        words
    };
    match naming {
        Naming::Snake => words.join("_"),
        Naming::Kebab => words.join("-"),
        Naming::Pascal => words.iter().map(|w| sentence_case(w)).collect(),
    }
}

#[cfg(test)]
mod data {
    /// The planner's data files parse: a malformed one is a bug, not a runtime error.
    #[test]
    fn the_data_files_parse() {
        assert!(!super::WORDS.angles.is_empty());
        assert_eq!(super::WORDS.complexity.len(), 3, "Low, Medium, High");
        let env = crate::builtin::template::ENV.as_ref().unwrap();
        assert!(env.get_template("risks_list").is_ok());
        assert!(!super::super::code::TABLES.signals.loops.is_empty());
    }
}
