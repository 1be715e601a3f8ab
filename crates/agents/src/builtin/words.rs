//! How every role of the builtin agent cuts text: into lower-case words (plain, or also at
//! camel-case humps for names in code), and into sentences; and the two helpers for lists of
//! words (is one in it, each once). The abbreviations a sentence does
//! not end at and the bullets dropped from its start are data: `words.toml`.

use std::sync::LazyLock;

/// The tables of `words.toml`.
#[derive(Debug, serde::Deserialize)]
struct Tables {
    abbreviations: Vec<String>,
    bullets: Vec<String>,
}

static TABLES: LazyLock<Tables> = LazyLock::new(|| super::template::data(builtin!("words.toml")));

/// Whether `list` holds `word`.
pub(crate) fn has(list: &[String], word: &str) -> bool {
    list.iter().any(|w| w == word)
}

/// `items` without repeats, in the order they first come.
pub(super) fn unique(items: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut seen = std::collections::BTreeSet::new();
    items
        .into_iter()
        .filter(|i| seen.insert(i.clone()))
        .collect()
}

/// The lower-case words of `text`: its runs of letters and digits.
pub(crate) fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Calls `f` with each lower-case word of `text`, cut as [`words`] does and also where a
/// lower-case letter or digit meets an upper-case one (`parseToken` gives `parse`, `token`).
pub(super) fn for_each_camel_word(text: &str, mut f: impl FnMut(&str)) {
    let mut word = String::new();
    let mut after_lower = false;
    for c in text.chars() {
        let word_char = c.is_alphanumeric();
        if (!word_char || (c.is_uppercase() && after_lower)) && !word.is_empty() {
            f(&word);
            word.clear();
        }
        after_lower = word_char && (c.is_lowercase() || c.is_ascii_digit());
        if word_char {
            word.extend(c.to_lowercase());
        }
    }
    if !word.is_empty() {
        f(&word);
    }
}

/// The words of `text` cut as [`for_each_camel_word`] does, in order.
pub(super) fn camel_words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_camel_word(text, |w| out.push(w.to_owned()));
    out
}

/// The sentences of `text`, trimmed, in order, none empty: cut at line breaks, at `;`, and
/// after `.`, `!` and `?` followed by white space or the end (not after an abbreviation such as
/// `e.g.`). A sentence keeps its final `.`, `!` or `?`, and loses a leading list bullet or
/// number (`- `, `1. `).
pub(super) fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = strip_bullet(line.trim());
        let mut start = 0;
        for (i, c) in line.char_indices() {
            let end = match c {
                ';' => i,
                '.' | '!' | '?' if line[i + 1..].chars().next().is_none_or(char::is_whitespace) => {
                    let word = line[start..i].rsplit(char::is_whitespace).next();
                    let word = word.unwrap_or("").to_ascii_lowercase();
                    if c == '.' && has(&TABLES.abbreviations, word.trim_start_matches('(')) {
                        continue;
                    }
                    i + 1
                }
                _ => continue,
            };
            out.push(strip_bullet(line[start..end].trim()));
            start = i + 1;
        }
        out.push(strip_bullet(line[start..].trim()));
    }
    out.retain(|s| !s.is_empty());
    out
}

/// `text` without a leading list bullet, or a number of one to three digits followed by `. `
/// or `) `.
fn strip_bullet(text: &str) -> &str {
    if let Some(b) = TABLES.bullets.iter().find(|b| text.starts_with(b.as_str())) {
        return text[b.len()..].trim_start();
    }
    let digits = text.chars().take_while(|c| c.is_ascii_digit()).count();
    if digits > 0 && digits < 4 {
        let rest = &text[digits..];
        if let Some(rest) = rest.strip_prefix(". ").or_else(|| rest.strip_prefix(") ")) {
            return rest.trim_start();
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_plain_and_camel() {
        assert_eq!(
            words("Parse the OAuthToken, v2!"),
            ["parse", "the", "oauthtoken", "v2"]
        );
        assert_eq!(
            camel_words("parseToken OAuth x2Y"),
            ["parse", "token", "oauth", "x2", "y"]
        );
    }

    #[test]
    fn sentence_cutting() {
        assert_eq!(
            sentences("Read config.toml. Then stop!\n- only once"),
            ["Read config.toml.", "Then stop!", "only once"]
        );
        assert_eq!(
            sentences("1. Add search, e.g. by name; keep it fast? Yes.  • Done"),
            ["Add search, e.g. by name", "keep it fast?", "Yes.", "Done"]
        );
    }
}
