//! SQL text, for the injection checks of every language: whether the literal text of a
//! string expression is an SQL statement ([`is_sql`]), where in it a value stands for a name
//! rather than a value ([`names_position`]), whether it takes parameters. Each language
//! finds the string expressions and gathers their text (Python's concatenations and
//! formatting, JavaScript's template strings and `+` chains, Rust's `format!`, Go's
//! `fmt.Sprintf`); what counts as SQL is decided here, the same for all.

use std::sync::LazyLock;

use regex::Regex;

use super::{Origin, ascii};
use crate::rules::Confidence;

/// Source code that may hold SQL text in a string, as a pattern (used case-insensitively,
/// by the test of whether a file needs the checks on its parse): a statement's words on one
/// line of a string, or a condition in capitals ([`is_sql`] reads the text itself).
pub(super) const TRIGGER: &str = r#"["'`][^"'`\n]*\b(?:select\s[^"'`\n]*\sfrom|insert\s+(?:or\s+\w+\s+)?into|update\s+\w+\s+set|delete\s+from)\b|["'`][^"'`\n]*(?-i:\b(?:WHERE|AND|OR)\s+[\w.]+\s*(?:=|<|>|!=|LIKE\b|IN\b))"#;

/// The words every match of [`TRIGGER`] holds (a fast literal search before it).
pub(super) const TRIGGER_WORDS: &str = r"select|insert|update|delete|(?-i:\b(?:WHERE|AND|OR)\s)";

/// Whether `text`, the literal text of a string expression (quotes left out; the values joined
/// in are left out or stand as a word such as `x`), holds an SQL statement:
///
/// - `SELECT … FROM`, `INSERT INTO`, `UPDATE … SET`, `DELETE FROM` in capitals;
/// - the same in any case when the words around them are SQL's: a column list and a table
///   (`select id, name from users`), a table (`delete from app_user`, `update users set`), or
///   a statement that starts the text (`select count(*) from t`); a table may be the value
///   that follows the text (`"delete from " + table`); prose is not SQL ("select one item
///   from the list", "delete from the list");
/// - a condition in capitals (`WHERE id =`, `AND name LIKE`): the part of a query that a
///   value is most often joined into.
pub(super) fn is_sql(text: &str) -> bool {
    static CONDITION: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(&ascii(
            r"\b(?:WHERE|AND|OR)\s+[\w.]+\s*(?:=|<|>|!=|\bLIKE\b|\bIN\b)",
        ))
        .expect("the SQL condition pattern compiles")
    });
    let words: Vec<&str> = text
        .split(|c: char| !(c.is_alphanumeric() || "_*,".contains(c)))
        .filter(|w| !w.is_empty())
        .collect();
    let is = |w: &str, k: &str| w.eq_ignore_ascii_case(k);
    let statement = (0..words.len()).any(|i| {
        let w = words[i];
        let next = |n: usize| words.get(i + n).copied().unwrap_or("");
        let capitals = w.chars().all(|c| c.is_ascii_uppercase());
        let rest = &words[i + 1..];
        match w.to_ascii_lowercase().as_str() {
            "select" if capitals => rest.iter().any(|w| w.trim_end_matches(',') == "FROM"),
            "select" => is_select_list(rest) || i == 0 && has_from_table(rest),
            "insert" if is(next(1), "into") => capitals || is_table_or_value(&words, i + 2),
            // SQLite's `INSERT OR REPLACE INTO`.
            "insert" if is(next(1), "or") && is(next(3), "into") => {
                capitals || is_table_or_value(&words, i + 4)
            }
            "delete" => is(next(1), "from") && (capitals || is_table_or_value(&words, i + 2)),
            "update" => is(next(2), "set") && (capitals || is_table(next(1))),
            _ => false,
        }
    });
    statement || CONDITION.is_match(text)
}

/// [`is_sql`] of a string literal as the source writes it, quotes included (`"…"`,
/// `` `…` ``, Rust's `r#"…"#`, `b"…"`).
pub(super) fn is_sql_literal(literal: &str) -> bool {
    let open = literal.trim_start_matches(['r', 'b', '#']);
    let open = open.strip_prefix(['"', '`', '\'']).unwrap_or(literal);
    is_sql(before_close(open))
}

/// Whether `text` has a word [`is_sql`] starts from (one of SQL's statement words in any
/// case, or a condition's in capitals): a fast test before the text is gathered.
pub(super) fn may_be_sql(text: &str) -> bool {
    static WORDS: LazyLock<regex::bytes::Regex> = LazyLock::new(|| {
        regex::bytes::Regex::new(r"(?-u)\b(?:WHERE|AND|OR)\s|(?i:select|insert|update|delete)")
            .expect("the SQL words compile")
    });
    WORDS.is_match(text.as_bytes())
}

/// A column list (`*`, `id`, `id, name`) followed by `from` and a table.
fn is_select_list(words: &[&str]) -> bool {
    let Some(from) = words
        .iter()
        .take(20)
        .position(|w| w.eq_ignore_ascii_case("from"))
    else {
        return false;
    };
    let list = &words[..from];
    let columns = match list {
        [] => false,
        [_] => true,
        [init @ .., _] => init.iter().all(|w| w.ends_with(',')),
    };
    columns && words.get(from + 1).is_some_and(|t| is_table(t))
}

/// A `from` followed by a table (or by the end of the text, where a value follows).
fn has_from_table(words: &[&str]) -> bool {
    (0..words.len())
        .any(|i| words[i].eq_ignore_ascii_case("from") && is_table_or_value(words, i + 1))
}

/// The word at `i` is a table, or the text ends before it (a value joined in follows).
fn is_table_or_value(words: &[&str], i: usize) -> bool {
    words.get(i).is_none_or(|w| is_table(w))
}

/// A table name as SQL writes it (`users`, `app_user`), not a word of prose such as `the`.
fn is_table(word: &str) -> bool {
    let identifier =
        !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    let prose = matches!(
        word.to_ascii_lowercase().as_str(),
        "the" | "a" | "an" | "your" | "this" | "that" | "my" | "our" | "their" | "its" | "all"
    );
    identifier && !prose
}

/// Whether a value placed after the SQL text `before` stands where a name goes (a table
/// after `FROM`, `INTO`, `UPDATE`, `JOIN`, `TABLE`, or after `schema.`), possibly in
/// quotes, or inside identifier quotes (`[…]`, `` `…` ``): names cannot be query parameters,
/// so formatting them in is the usual way, and a finding about one is a hint.
pub(super) fn names_position(before: &str) -> bool {
    // `[name]` and `` `name` `` quote only identifiers.
    if before.ends_with(['[', '`']) {
        return true;
    }
    let t = before
        .trim_end()
        .trim_end_matches(['"', '`', '[', '\\'])
        .trim_end();
    if t.ends_with('.') {
        return true;
    }
    let word = t
        .rsplit(|c: char| !c.is_ascii_alphabetic())
        .next()
        .unwrap_or("");
    ["from", "into", "update", "join", "table"]
        .iter()
        .any(|k| word.eq_ignore_ascii_case(k))
}

/// The confidence of a finding about a value of `origin` formatted into SQL, `name` when it
/// stands where a table or column name goes (`None`: no finding).
pub(super) fn sql_confidence(origin: Origin, name: bool) -> Option<Confidence> {
    origin
        .confidence()
        .map(|c| if name { Confidence::Low } else { c })
}

/// The text of a string literal before its closing quote (`"…"`, `` `…` ``, `r#"…"#`).
pub(super) fn before_close(literal: &str) -> &str {
    let t = literal.trim_end_matches('#');
    t.strip_suffix(['"', '`', '\'']).unwrap_or(t)
}

/// Whether SQL text also takes parameters (`?`, `$1`, `:name`): values formatted into it
/// are then most likely table or column names.
pub(super) fn has_placeholders(text: &str) -> bool {
    static PARAM: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(&ascii(
            r"(?:[=(,\s]\s*)(?:\?|\$\d+|:[A-Za-z_]\w*|@[A-Za-z_]\w*)",
        ))
        .expect("the pattern compiles")
    });
    PARAM.is_match(text)
}

#[cfg(test)]
mod tests {
    use super::{is_sql, is_sql_literal, may_be_sql};

    #[test]
    fn statements_in_capitals_or_with_sql_words_around_them_are_sql() {
        for text in [
            "SELECT * FROM users WHERE id = ",
            "SELECT a,\n b FROM t",
            "select id, name from users",
            "select count(*) from t where id = ",
            "Insert  Into logs (msg) values (",
            "insert or replace into kv values (?, ?)",
            "insert into ",
            "delete from app_user where id = ",
            "DELETE FROM jobs",
            "update users set name = ",
            "UPDATE \"t\" SET a = 1",
            " WHERE id = ",
            " AND name LIKE ",
        ] {
            assert!(is_sql(text), "{text:?}");
        }
        for text in [
            "Please select one item from ",
            "delete from the list: %s",
            "please select a file; from now on",
            "Select x of the files",
            "select a file from the list",
            "insert into the cart",
            "update the set of files",
            "where id = 1",
            "",
        ] {
            assert!(!is_sql(text), "{text:?}");
        }
    }

    #[test]
    fn a_literal_is_judged_by_its_text_without_its_quotes() {
        assert!(is_sql_literal("\"select name from t\""));
        assert!(is_sql_literal("r#\"SELECT * FROM t WHERE id = {}\"#"));
        assert!(is_sql_literal("`delete from `"));
        assert!(!is_sql_literal("\"please select a file; from now on\""));
    }

    #[test]
    fn the_fast_test_lets_every_sql_text_through() {
        for text in [
            "select a from t",
            "INSERT INTO t",
            " WHERE a = ",
            "Update t set a",
        ] {
            assert!(is_sql(text) && may_be_sql(text), "{text:?}");
        }
        assert!(!may_be_sql("let total = count + 1;"));
    }
}
