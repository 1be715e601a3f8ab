//! The prose heuristic: a text with three words in a row, none a keyword, is not code of
//! any of these languages, whatever a parser would make of it.

use super::Grammar;

/// Whether `text` cannot be code of `grammar` because a line of it has three words in a row
/// (outside quotes), separated by single spaces, none of them a keyword of the language:
/// `every worker thread`. No statement of these languages has that: two names side by side
/// are at most a name and its type (`x int`, `a any`). Rust macro calls and attributes, whose
/// bodies may be any words, are never called prose.
pub(crate) fn is_prose(grammar: Grammar, text: &str) -> bool {
    let any_words = match grammar {
        Grammar::Rust => ["!(", "![", "!{", "#["].iter().any(|m| text.contains(m)),
        // JSX text (`<p>any words</p>`), and type arguments to be safe.
        Grammar::JavaScript | Grammar::TypeScript | Grammar::Tsx => text.contains('<'),
        Grammar::Python | Grammar::Go => false,
    };
    if any_words {
        return false;
    }
    let keywords = prose_keywords(grammar);
    text.lines().any(|line| {
        let bytes = line.as_bytes();
        let (mut run, mut i) = (0usize, 0usize);
        // Whether the previous word ended just before a single space.
        let mut spaced = false;
        while i < bytes.len() {
            let b = bytes[i];
            if matches!(b, b'"' | b'\'' | b'`') {
                // A quoted part is skipped (to the end of the line if it is not closed); it
                // ends the run.
                i = line[i + 1..]
                    .find(b as char)
                    .map_or(bytes.len(), |e| i + e + 2);
                (run, spaced) = (0, false);
                continue;
            }
            if b.is_ascii_alphabetic() || b == b'_' {
                let start = i;
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                    i += 1;
                }
                let word = &line[start..i];
                if keywords.contains(&word) {
                    run = 0;
                } else {
                    run = if spaced || run == 0 { run + 1 } else { 1 };
                    if run >= 3 {
                        return true;
                    }
                }
                spaced = bytes.get(i) == Some(&b' ')
                    && bytes
                        .get(i + 1)
                        .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_');
                if spaced {
                    i += 1;
                } else {
                    run = 0;
                }
                continue;
            }
            (run, spaced) = (0, false);
            i += 1;
        }
        false
    })
}

/// The keywords (and contextual keywords) of `grammar` that may stand next to a name with
/// only a space between: `pub fn f`, `from a import b`, `static async f`.
pub(super) fn prose_keywords(grammar: Grammar) -> &'static [&'static str] {
    match grammar {
        Grammar::Rust => RUST_KEYWORDS,
        Grammar::Python => PYTHON_KEYWORDS,
        Grammar::Go => GO_KEYWORDS,
        Grammar::JavaScript | Grammar::TypeScript | Grammar::Tsx => JAVASCRIPT_KEYWORDS,
    }
}

pub(super) const RUST_KEYWORDS: &[&str] = &[
    "as",
    "async",
    "await",
    "auto",
    "box",
    "break",
    "const",
    "continue",
    "crate",
    "default",
    "dyn",
    "else",
    "enum",
    "extern",
    "false",
    "fn",
    "for",
    "gen",
    "if",
    "impl",
    "in",
    "let",
    "loop",
    "macro_rules",
    "match",
    "mod",
    "move",
    "mut",
    "pub",
    "raw",
    "ref",
    "return",
    "safe",
    "self",
    "Self",
    "static",
    "struct",
    "super",
    "trait",
    "true",
    "try",
    "type",
    "union",
    "unsafe",
    "use",
    "where",
    "while",
    "yield",
];

pub(super) const PYTHON_KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "case", "class",
    "continue", "def", "del", "elif", "else", "except", "exec", "finally", "for", "from", "global",
    "if", "import", "in", "is", "lambda", "match", "nonlocal", "not", "or", "pass", "print",
    "raise", "return", "try", "type", "while", "with", "yield",
];

pub(super) const GO_KEYWORDS: &[&str] = &[
    "break",
    "case",
    "chan",
    "const",
    "continue",
    "default",
    "defer",
    "else",
    "fallthrough",
    "for",
    "func",
    "go",
    "goto",
    "if",
    "import",
    "interface",
    "map",
    "package",
    "range",
    "return",
    "select",
    "struct",
    "switch",
    "type",
    "var",
];

pub(super) const JAVASCRIPT_KEYWORDS: &[&str] = &[
    "abstract",
    "accessor",
    "as",
    "asserts",
    "async",
    "await",
    "break",
    "case",
    "catch",
    "class",
    "const",
    "continue",
    "debugger",
    "declare",
    "default",
    "delete",
    "do",
    "else",
    "enum",
    "export",
    "extends",
    "false",
    "finally",
    "for",
    "from",
    "function",
    "get",
    "if",
    "implements",
    "import",
    "in",
    "infer",
    "instanceof",
    "interface",
    "is",
    "keyof",
    "let",
    "module",
    "namespace",
    "new",
    "null",
    "of",
    "override",
    "package",
    "private",
    "protected",
    "public",
    "readonly",
    "return",
    "satisfies",
    "set",
    "static",
    "super",
    "switch",
    "this",
    "throw",
    "true",
    "try",
    "type",
    "typeof",
    "undefined",
    "unique",
    "using",
    "var",
    "void",
    "while",
    "with",
    "yield",
];
