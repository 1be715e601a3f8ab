//! What a name says of its value: one list of the words that make a name read as input,
//! for the injection checks of every language (Python, JavaScript and TypeScript, Rust,
//! Go). Each language decides which names of an expression it asks about (a parameter, an
//! attribute path, a member's property); the words and how a name is cut into them are
//! here, so that `userName` reads the same in all of them.

/// Words that make a name hold input wherever they are in it: request data, the command
/// line, the URL, form and user values (`req`, `params.id`, `location.hash`, `userId`,
/// `argv`).
const INPUT_WORDS: &[&str] = &[
    "input",
    "request",
    "req",
    "query",
    "params",
    "param",
    "args",
    "argv",
    "form",
    "payload",
    "cookie",
    "cookies",
    "headers",
    "user",
    "username",
    "untrusted",
    "location",
    "props",
];

/// Words that make a name hold input as a property or with another word (`input.value`,
/// `comment.body`, `searchText`, `user_name`), not alone: a bare `value`, `name` or `data` is
/// any value.
const VALUE_WORDS: &[&str] = &[
    "value", "val", "search", "hash", "name", "comment", "message", "msg", "text", "body", "data",
];

/// Words that make a name the name of a part of a query (`table_name`, `columnName`) or a
/// setting (`config.name`) rather than data: they win over the words above.
const STRUCTURE_WORDS: &[&str] = &[
    "table", "tables", "column", "columns", "col", "cols", "schema", "field", "fields", "index",
    "db", "key", "order", "sort", "config", "cfg", "conf", "settings", "options", "opts",
];

/// The lowercase words of a name: `userName` → `user`, `name`; `URLParams` → `url`, `params`;
/// `jQuery` → `jquery`; `req.query_args` → `req`, `query`, `args` (any other character
/// separates words).
pub(super) fn words(name: &str) -> Vec<String> {
    let chars: Vec<char> = name.chars().collect();
    let mut out = Vec::new();
    let mut word = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_ascii_alphanumeric() {
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            continue;
        }
        let prev = i.checked_sub(1).map(|p| chars[p]);
        let next = chars.get(i + 1);
        let boundary = c.is_ascii_uppercase()
            && prev.is_some_and(|p| {
                p.is_ascii_lowercase()
                    || p.is_ascii_digit()
                    || p.is_ascii_uppercase() && next.is_some_and(|n| n.is_ascii_lowercase())
            });
        // A one-letter lowercase prefix is part of the word (`jQuery`, `iFrame`).
        let prefix =
            word.len() == 1 && out.is_empty() && prev.is_some_and(|p| p.is_ascii_lowercase());
        if boundary && !word.is_empty() && !prefix {
            out.push(std::mem::take(&mut word));
        }
        word.push(c.to_ascii_lowercase());
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// Whether the name `name` (one name, or a path such as `r.FormValue`) says it holds input;
/// `member`: it is a member's property (`x.value`), which reads as input by a word of
/// [`VALUE_WORDS`] alone. A word counts in the singular too (`users`, `inputs`).
pub(super) fn reads_as_input(name: &str, member: bool) -> bool {
    let words = words(name);
    let has = |list: &[&str]| {
        words.iter().any(|w| {
            let singular = w.strip_suffix('s').unwrap_or(w);
            list.contains(&w.as_str()) || list.contains(&singular)
        })
    };
    (has(INPUT_WORDS) || (member || words.len() > 1) && has(VALUE_WORDS)) && !has(STRUCTURE_WORDS)
}

#[cfg(test)]
mod tests {
    use super::{reads_as_input, words};

    #[test]
    fn names_are_cut_into_words_the_same_way_in_every_language() {
        assert_eq!(words("userName"), ["user", "name"]);
        assert_eq!(words("URLParams"), ["url", "params"]);
        assert_eq!(words("jQuery"), ["jquery"]);
        assert_eq!(words("req.query_args"), ["req", "query", "args"]);
        assert_eq!(words("r.FormValue"), ["r", "form", "value"]);
    }

    #[test]
    fn input_names_are_told_by_their_words() {
        for name in [
            "userId",
            "req_body",
            "request",
            "argv",
            "r.FormValue",
            "location.hash",
            "searchText",
            "users",
            "headers",
        ] {
            assert!(reads_as_input(name, false), "{name}");
        }
        // A value word alone is any value; as a property it is input.
        assert!(!reads_as_input("value", false) && reads_as_input("value", true));
        // A part of a query or a setting is not input.
        for name in ["table_name", "rename", "config.user", "columnName", "total"] {
            assert!(!reads_as_input(name, false), "{name}");
        }
    }
}
