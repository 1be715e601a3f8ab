//! Checks on comments, for every parsed language: code left in comments.
//!
//! A candidate is a run of at least two consecutive new lines that are each only a line
//! comment (`#`, `//`), or a block comment (`/* */`) of at least two lines alone on its lines;
//! documentation comments (`///`, `//!`, `/** */`, which show code on purpose), license
//! headers and pragmas (`# type:`, `# noqa`, `// eslint-…`, `//go:build`) are not. It is
//! commented-out code when most of its lines carry code punctuation (`(`, `=`, `;`, braces, a
//! Python `:` at the end) and its text, with the comment markers stripped and dedented,
//! parses in the file's own language without an error and holds a statement (a call, an
//! assignment, a `return`, an `if`/`for`/`while`, a definition, an import). Prose rarely
//! parses; a word that does (`// TODO`) holds no statement. Rust text may also parse as the
//! fields of a struct, the variants of an enum or the items of an `impl`; comment lines among
//! the lines (`///// doc` over `// pub field: T,`) are parsed but not counted.
//!
//! A single comment line is a hint (confidence low) when it is one statement: a call of a
//! lower-case name, an assignment, a declaration with a value, a `return` with a value, an
//! import, or a Rust field or variant with code punctuation; not a label (`// Output: f(x)`),
//! an annotation without a value (`# Example: f(x)`), a sentence or `TODO(alice)`.

use std::ops::Range;

use super::{Hit, Input};
use crate::rules::{CheckId, Confidence};
use crate::syntax::{Grammar, Syntax};

/// Runs the comment checks.
pub(super) fn check(input: &Input<'_>, syntax: &Syntax<'_>, out: &mut Vec<Hit>) {
    for (lines, text) in candidates(input, syntax) {
        if syntax.grammar == Grammar::Go && is_go_doc(input, lines.end) {
            continue;
        }
        if let Some(confidence) = commented_out_code(syntax.grammar, &text) {
            let count = lines.len();
            out.push(
                Hit::new(CheckId::CommentedCode, lines)
                    .confidence(confidence)
                    .with("lines", count.to_string()),
            );
        }
    }
}

/// The candidate comments: each with its 0-based lines and its text without comment markers.
fn candidates(input: &Input<'_>, syntax: &Syntax<'_>) -> Vec<(Range<usize>, String)> {
    let file = input.file;
    let mut out = Vec::new();
    // The run of line comments being gathered: its lines and their stripped texts.
    let mut run: Option<Run<'_>> = None;
    for comment in syntax.comments.iter().filter(|c| !c.doc) {
        let start = comment.bytes.start;
        let line = file.line_at(start);
        let alone = file.new_text[file.line_starts[line]..start]
            .trim()
            .is_empty();
        let text = &syntax.text[comment.bytes.clone()];
        let last = file.line_at(comment.bytes.end.saturating_sub(1).max(start));
        let block = text.starts_with("/*");
        if !alone || !file.is_new(line) || block {
            flush(&mut run, &mut out);
            if alone && block && last > line && file.touches_new(&(line..last + 1)) {
                out.push((line..last + 1, strip_block(text)));
            }
            continue;
        }
        let stripped = text
            .strip_prefix("//")
            .or_else(|| text.strip_prefix('#'))
            .unwrap_or(text);
        match &mut run {
            Some((lines, texts)) if lines.end == line => {
                lines.end = line + 1;
                texts.push(stripped);
            }
            _ => {
                flush(&mut run, &mut out);
                run = Some((line..line + 1, vec![stripped]));
            }
        }
    }
    flush(&mut run, &mut out);
    out
}

/// Whether the comment lines that go on to before 0-based line `from` document the Go
/// declaration that follows them: Go's doc comments are plain `//` comments, and show code
/// examples as indented lines.
fn is_go_doc(input: &Input<'_>, from: usize) -> bool {
    let file = input.file;
    let next = (from..file.new_line_count())
        .map(|i| file.line(i))
        .find(|l| !l.trim_start().starts_with("//"));
    next.is_some_and(|l| {
        ["func ", "type ", "var ", "const ", "package "]
            .iter()
            .any(|k| l.trim_start().starts_with(k))
    })
}

/// A run of line comments on consecutive lines: its lines and their texts without markers.
type Run<'a> = (Range<usize>, Vec<&'a str>);

/// Ends `run`: every run is a candidate (a single line is judged more strictly).
fn flush(run: &mut Option<Run<'_>>, out: &mut Vec<(Range<usize>, String)>) {
    if let Some((lines, texts)) = run.take() {
        out.push((lines, texts.join("\n")));
    }
}

/// The text of a block comment without `/*`, `*/` and the `*` that starts its lines.
fn strip_block(text: &str) -> String {
    let inner = text.trim_start_matches("/*").trim_end_matches("*/");
    inner
        .lines()
        .map(|l| {
            let t = l.trim_start();
            t.strip_prefix("* ")
                .or_else(|| (t == "*").then_some(""))
                .unwrap_or(l)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Markers of comments that are instructions to a tool, not code.
const PRAGMAS: &[&str] = &[
    "type:",
    "noqa",
    "pylint:",
    "pyright:",
    "mypy:",
    "fmt:",
    "isort:",
    "pragma",
    "nosec",
    "eslint",
    "prettier-",
    "@ts-",
    "istanbul",
    "jshint",
    "global ",
    "tslint:",
    "go:",
    "+build",
    "nolint",
    "!",
    "-*-",
    "vim:",
    "NOSONAR",
    "SAFETY:",
    "cspell:",
    "biome-",
];

/// Words of license headers.
const LICENSE_WORDS: &[&str] = &[
    "copyright (c)",
    "copyright ©",
    "licensed under",
    "license, version",
    "the license",
    "this license",
    "licence",
    "spdx-license",
    "all rights reserved",
    "permission is hereby granted",
    "without warranty",
    "__license__",
    "__copyright__",
];

/// Whether the new code `new` (its lines, in order) may hold a candidate that is code: a
/// run of line comments alone on their lines, not documentation, most of them with code
/// punctuation (what [`commented_out_code`] asks first), a single one that may be a
/// statement ([`looks_like_one_statement`]), or a block comment opening a line. The check
/// reads the parse only where this is so.
pub(super) fn may_hold_code(grammar: Grammar, new: &str) -> bool {
    let marker = if grammar == Grammar::Python {
        "#"
    } else {
        "//"
    };
    let (mut lines, mut punctuated) = (0usize, 0usize);
    for line in new.lines() {
        let t = line.trim_start();
        if grammar != Grammar::Python
            && t.starts_with("/*")
            && !t.starts_with("/**")
            && !t.starts_with("/*!")
        {
            return true;
        }
        let comment = t
            .strip_prefix(marker)
            // `///`, `//!`: documentation; `////…` is a plain comment.
            .filter(|rest| !rest.starts_with(['/', '!']) || rest.starts_with("//"));
        match comment {
            // An empty comment line neither counts nor ends the run (the check drops it).
            Some(text) if text.trim().is_empty() => {}
            // A comment inside the commented-out lines (`//// doc`) neither counts nor ends it.
            Some(text) if is_inner_comment(grammar, text) => {}
            Some(text) => {
                lines += 1;
                punctuated += usize::from(looks_like_code(grammar, text));
                if (lines >= 2 && punctuated * 2 > lines)
                    || (lines == 1 && looks_like_one_statement(grammar, text))
                {
                    return true;
                }
            }
            None => (lines, punctuated) = (0, 0),
        }
    }
    false
}

/// Whether a comment line, its marker stripped, is itself a comment: a line of the code left
/// in comments that was a comment there (`///// Docs of the field` over `// pub field: T,`).
fn is_inner_comment(grammar: Grammar, text: &str) -> bool {
    let t = text.trim_start();
    match grammar {
        Grammar::Python => t.starts_with('#'),
        _ => t.starts_with("//"),
    }
}

/// Whether `text` (comment lines with their markers stripped) is code of `grammar`, and how
/// sure that is: high for two or more lines, low (a hint) for a single line.
fn commented_out_code(grammar: Grammar, text: &str) -> Option<Confidence> {
    let lower = text.to_ascii_lowercase();
    if LICENSE_WORDS.iter().any(|w| lower.contains(w)) {
        return None;
    }
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines
        .iter()
        .any(|l| PRAGMAS.iter().any(|p| l.trim_start().starts_with(p)))
    {
        return None;
    }
    // Comments among the lines (the doc comment of a field left out with it) are kept for
    // the parse but are not counted.
    let code_lines: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| !is_inner_comment(grammar, l))
        .collect();
    match code_lines.len() {
        0 => return None,
        1 => {
            return is_one_statement(grammar, code_lines[0].trim()).then_some(Confidence::Low);
        }
        _ => {}
    }
    let punctuated = code_lines
        .iter()
        .filter(|l| looks_like_code(grammar, l))
        .count();
    if punctuated * 2 <= code_lines.len() {
        return None;
    }
    let code = dedent(&lines);
    parses_with_statement(grammar, &code).then_some(Confidence::High)
}

/// Whether `code` parses without an error, alone or (Rust) as the body of an item, and holds
/// a statement.
fn parses_with_statement(grammar: Grammar, code: &str) -> bool {
    wrappings(grammar).iter().any(|(open, close)| {
        let wrapped = format!("{open}{code}{close}");
        let Some(parsed) = Syntax::parse_clean(grammar, &wrapped) else {
            return false;
        };
        let mut statement = false;
        parsed.walk(|node, kind| {
            statement |= is_statement(grammar, kind)
                || (!open.is_empty() && is_member(parsed.text_of(node), kind))
        });
        statement
    })
}

/// What commented-out lines are tried in: alone, and for Rust also as the fields of a struct,
/// the variants of an enum and the items of an `impl` (code left in comments is often a
/// field, a variant or a method).
fn wrappings(grammar: Grammar) -> &'static [(&'static str, &'static str)] {
    match grammar {
        Grammar::Rust => &[
            ("", ""),
            ("struct S {\n", "\n}\n"),
            ("enum E {\n", "\n}\n"),
            ("impl S {\n", "\n}\n"),
        ],
        _ => &[("", "")],
    }
}

/// Whether a Rust node found inside a wrapping is a member that is code rather than a word: a
/// field whose type has code punctuation (`pub name: Option<T>`, `x: &'a str`) or a variant
/// with fields (`Format(HashMap<K, V>)`).
fn is_member(text: &str, kind: &str) -> bool {
    match kind {
        "field_declaration" => {
            text.starts_with("pub ") || text.contains(['<', '&', '[']) || text.contains("::")
        }
        "enum_variant" => text.contains(['(', '{']),
        _ => false,
    }
}

/// A quick look at a single comment line (marker stripped): whether it may be one statement
/// ([`is_one_statement`] asks the parser). It ends as statements end (`;`, `)`, and for Rust
/// a field's or variant's `,`) or assigns, and does not end as a sentence does.
fn looks_like_one_statement(grammar: Grammar, text: &str) -> bool {
    let t = text.trim();
    if t.len() < 4 || t.ends_with(['.', ':', '?', '!']) {
        return false;
    }
    let assigns = t.contains(" = ") || t.contains(":=") || t.contains("+=");
    let ends = match grammar {
        Grammar::Python => t.ends_with(')'),
        Grammar::Rust => t.ends_with([';', ')', ',']),
        _ => t.ends_with([';', ')']),
    };
    (assigns || ends || t.starts_with("return ")) && t.contains(['(', '=', ';', '<', '&'])
}

/// Whether a single comment line (marker stripped, trimmed) is one statement of `grammar`: a
/// call, an assignment, a declaration with a value, a `return` with a value, an import (or in
/// Rust a struct field or enum variant of code). Labels (`Note: f(x)`), annotations without a
/// value (`Example: f(x)`) and calls of ALL-CAPS words (`TODO(alice)`) are not.
fn is_one_statement(grammar: Grammar, line: &str) -> bool {
    if !looks_like_one_statement(grammar, line) {
        return false;
    }
    for (open, close) in wrappings(grammar) {
        let wrapped = format!("{open}{line}\n{close}");
        let Some(parsed) = Syntax::parse_clean(grammar, &wrapped) else {
            continue;
        };
        let root = parsed.root();
        if open.is_empty() {
            if root.named_child_count() == 1
                && let Some(statement) = root.named_child(0)
                && is_whole_statement(grammar, &parsed, statement)
            {
                return true;
            }
            continue;
        }
        // Inside a wrapping: one member of code.
        let mut found = false;
        parsed.walk(|node, kind| found |= is_member(parsed.text_of(node), kind));
        if found {
            return true;
        }
    }
    false
}

/// Whether `node`, the only top-level node of a parsed comment line, is a statement that is
/// code (see [`is_one_statement`]).
fn is_whole_statement(grammar: Grammar, parsed: &Syntax<'_>, node: tree_sitter::Node<'_>) -> bool {
    let call_of_code = |call: tree_sitter::Node<'_>| {
        let callee = call
            .child_by_field_name("function")
            .or_else(|| call.child_by_field_name("macro"))
            .map(|f| parsed.text_of(f))
            .unwrap_or("");
        !callee.is_empty() && callee.chars().any(|c| c.is_ascii_lowercase())
    };
    fn inner<'t>(n: tree_sitter::Node<'t>) -> Option<tree_sitter::Node<'t>> {
        let mut e = n.named_child(0)?;
        if matches!(e.kind(), "await_expression" | "await") {
            e = e.named_child(0)?;
        }
        Some(e)
    }
    match (grammar, node.kind()) {
        (_, "expression_statement") => inner(node).is_some_and(|e| match e.kind() {
            "call" | "call_expression" | "macro_invocation" => call_of_code(e),
            "assignment" => e.child_by_field_name("right").is_some(),
            "assignment_expression"
            | "augmented_assignment"
            | "augmented_assignment_expression"
            | "compound_assignment_expr" => true,
            _ => false,
        }),
        (Grammar::Rust, "macro_invocation") => call_of_code(node),
        (Grammar::Rust, "let_declaration") => node.child_by_field_name("value").is_some(),
        (Grammar::Python, "return_statement") | (_, "return_statement") => {
            node.named_child_count() > 0
        }
        (
            _,
            "import_statement"
            | "import_from_statement"
            | "use_declaration"
            | "short_var_declaration"
            | "assignment_statement"
            | "defer_statement"
            | "go_statement",
        ) => true,
        (_, "lexical_declaration" | "variable_declaration") => parsed.text_of(node).contains('='),
        _ => false,
    }
}

/// Whether a comment line carries code punctuation (or starts an import).
fn looks_like_code(grammar: Grammar, line: &str) -> bool {
    let t = line.trim();
    t.contains('(')
        || t.contains('=')
        || t.ends_with([';', '{', '}', ','])
        || (grammar == Grammar::Python && t.ends_with(':'))
        || ["import ", "from ", "use ", "return", "package "]
            .iter()
            .any(|k| t.starts_with(k))
}

/// `lines` without the indentation they all share.
fn dedent(lines: &[&str]) -> String {
    let indent = lines
        .iter()
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let mut out = String::new();
    for l in lines {
        out.push_str(l.get(indent..).unwrap_or(l.trim_start()));
        out.push('\n');
    }
    out
}

/// Node kinds that make a parsed comment code: calls, assignments, returns, control flow,
/// definitions and imports.
fn is_statement(grammar: Grammar, kind: &str) -> bool {
    match grammar {
        Grammar::Python => matches!(
            kind,
            "call"
                | "assignment"
                | "augmented_assignment"
                | "return_statement"
                | "if_statement"
                | "for_statement"
                | "while_statement"
                | "with_statement"
                | "try_statement"
                | "raise_statement"
                | "function_definition"
                | "class_definition"
                | "import_statement"
                | "import_from_statement"
                | "print_statement"
        ),
        Grammar::Rust => matches!(
            kind,
            "call_expression"
                | "macro_invocation"
                | "let_declaration"
                | "assignment_expression"
                | "compound_assignment_expr"
                | "return_expression"
                | "if_expression"
                | "for_expression"
                | "while_expression"
                | "loop_expression"
                | "match_expression"
                | "function_item"
                | "struct_item"
                | "enum_item"
                | "trait_item"
                | "impl_item"
                | "function_signature_item"
                | "use_declaration"
        ),
        Grammar::Go => matches!(
            kind,
            "call_expression"
                | "short_var_declaration"
                | "assignment_statement"
                | "var_declaration"
                | "return_statement"
                | "if_statement"
                | "for_statement"
                | "function_declaration"
                | "method_declaration"
                | "import_declaration"
                | "defer_statement"
                | "go_statement"
        ),
        _ => matches!(
            kind,
            "call_expression"
                | "assignment_expression"
                | "augmented_assignment_expression"
                | "variable_declaration"
                | "lexical_declaration"
                | "return_statement"
                | "if_statement"
                | "for_statement"
                | "for_in_statement"
                | "while_statement"
                | "function_declaration"
                | "class_declaration"
                | "import_statement"
                | "export_statement"
                | "throw_statement"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::super::found;

    const RULE: &str = "commented-out-code";

    /// The `(first line, line count)` of each commented-out block in a new file.
    fn blocks(path: &str, text: &str) -> Vec<usize> {
        found(path, "", text, RULE)
            .into_iter()
            .map(|(_, l)| l)
            .collect()
    }

    #[test]
    fn code_left_in_comments_is_found_in_each_parsed_language() {
        let py = "def f(x):\n    # y = compute(x)\n    # if y:\n    #     return y\n    return x\n";
        assert_eq!(blocks("src/a.py", py), vec![2]);
        let js = "function f() {\n  // const y = g();\n  // h(y);\n  return 1;\n}\n";
        assert_eq!(blocks("src/a.js", js), vec![2]);
        let ts = "let a = 1;\n/*\n * a = compute(a);\n * log(a);\n */\n";
        assert_eq!(blocks("src/a.ts", ts), vec![2]);
        let rs = "fn f() {\n    // let x = g();\n    // h(&x);\n    i();\n}\n";
        assert_eq!(blocks("src/lib.rs", rs), vec![2]);
        let go = "package x\n\nfunc f() {\n\t// x := g()\n\t// h(x)\n\ti()\n}\n";
        assert_eq!(blocks("x.go", go), vec![4]);
        // The count is in the message.
        let f = super::super::review_texts("src/a.js", "", js);
        let f = f.iter().find(|f| f.rule == RULE).expect("a finding");
        assert!(f.reason.starts_with("2 lines"), "{}", f.reason);
    }

    #[test]
    fn prose_doc_examples_pragmas_and_licenses_are_not_commented_out_code() {
        let cases = [
            (
                "src/a.py",
                "# Compute the value first, then\n# return it to the caller.\nx = 1\n",
            ),
            ("src/a.py", "# type: ignore\n# noqa: E501\nx = 1\n"),
            (
                "src/a.py",
                "# Copyright (c) 2024 Someone\n# Licensed under the MIT license (see LICENSE)\nx = 1\n",
            ),
            ("src/a.py", "x = f(a)  # y = g(a)\ny = h(b)  # z = i(b)\n"),
            ("src/a.py", "# TODO\n# FIXME\nx = 1\n"),
            ("src/a.py", "# note: see\n# below:\nx = 1\n"),
            (
                "src/lib.rs",
                "/// let x = f();\n/// g(&x);\npub fn a() {}\n",
            ),
            ("src/lib.rs", "//! let x = f();\n//! g(&x);\n"),
            (
                "src/lib.rs",
                "// SAFETY: the pointer is valid (checked above);\n// nothing else holds it.\nfn a() {}\n",
            ),
            (
                "src/a.js",
                "/**\n * const x = f();\n * g(x);\n */\nfunction a() {}\n",
            ),
            (
                "src/a.js",
                "// eslint-disable-next-line no-console\n// eslint-disable-next-line no-alert\nf();\n",
            ),
            (
                "src/a.js",
                "// Call f() when ready, or wait\n// for the next tick (see g).\nf();\n",
            ),
            ("x.go", "//go:build linux\n// +build linux\n\npackage x\n"),
            (
                "x.go",
                "package x\n\n// F does it:\n//\n//\tx := F()\n//\tg(x)\nfunc F() int { return 1 }\n",
            ),
            // Parses, but holds no statement.
            ("src/a.py", "# (x, y)\n# (width, height)\nz = 1\n"),
            // Parses as Python 2 prints, but reads as prose: no code punctuation.
            ("src/a.py", "# print usage\n# print help\nz = 1\n"),
            // A license header, even one that parses.
            (
                "src/a.py",
                "# __license__ = \"MIT\"\n# __copyright__ = author(2024)\nz = 1\n",
            ),
        ];
        for (path, text) in cases {
            assert!(blocks(path, text).is_empty(), "{path}: {text}");
        }
    }

    #[test]
    fn a_single_line_of_code_left_in_a_comment_is_a_hint() {
        use crate::Confidence;
        // (path, text, 1-based line expected)
        let cases = [
            ("src/a.py", "# x = compute(y)\nz = 1\n", 1),
            (
                "src/a.py",
                "def f():\n    # print(state)\n    return 1\n",
                2,
            ),
            (
                "x_test.go",
                "package x\n\nfunc TestF(t *testing.T) {\n\t//dumpNodes(root, \"\")\n\tcheck(t)\n}\n",
                4,
            ),
            (
                "src/a.ts",
                "function f() {\n  // cache.clear();\n  return 1;\n}\n",
                2,
            ),
            (
                "src/a.js",
                "async function f() {\n  // await reload(x)\n}\n",
                2,
            ),
            // A variant and a field of Rust, the field with its doc comment left out too.
            (
                "src/lib.rs",
                "pub enum Name<'a> {\n    Plain(&'a str),\n    // Mapped(Vec<&'a str>)\n    Mapped(Vec<String>),\n}\n",
                3,
            ),
            (
                "src/lib.rs",
                "pub struct Opts {\n    pub wrap: bool,\n    ///// Paths to show\n    // pub paths: Option<Vec<&'a str>>,\n}\n",
                3,
            ),
            (
                "src/lib.rs",
                "fn f() {\n    // let n = count(&items);\n}\n",
                2,
            ),
        ];
        for (path, text, line) in cases {
            assert_eq!(blocks(path, text), vec![line], "{path}: {text}");
            let f = super::super::review_texts(path, "", text);
            let f = f.iter().find(|f| f.rule == RULE).expect("a finding");
            assert_eq!(f.confidence, Confidence::Low, "{path}: {text}");
        }
    }

    #[test]
    fn a_block_of_old_rust_items_with_attributes_and_nested_comments_is_code() {
        let rs = "pub fn a() {}\n\n/*\ntrait Old<S> {\n    fn run(&mut self) -> S;\n}\n\n/*\nimpl Old<u8> for A {\n    #[inline]\n    fn run(&mut self) -> u8 { 1 }\n}\n*/\n*/\n\npub fn b() {}\n";
        assert_eq!(blocks("src/lib.rs", rs), vec![3]);
    }

    #[test]
    fn single_comment_lines_of_prose_pragmas_and_docs_stay_silent() {
        let cases = [
            ("src/a.py", "# Example: foo(bar)\nz = 1\n"),
            ("src/a.py", "# -*- coding: utf-8 -*-\nz = 1\n"),
            ("src/a.py", "# coding=utf-8\nz = 1\n"),
            ("src/a.py", "# see parse(text) for the rules.\nz = 1\n"),
            ("src/a.py", "# TODO(alice)\nz = 1\n"),
            ("src/a.py", "# type: (int) -> str\nz = 1\n"),
            ("src/a.py", "# (width, height)\nz = 1\n"),
            ("src/a.js", "// Note: init(x) runs first\nf();\n"),
            ("src/a.js", "// call f() once the page is ready\nf();\n"),
            ("src/a.js", "// eslint-disable-next-line no-console\nf();\n"),
            ("src/a.js", "// Copyright (c) 2024 Someone (MIT)\nf();\n"),
            (
                "x_test.go",
                "package x\n\nfunc ExampleF() {\n\tF()\n\t// Output: f(1)\n}\n",
            ),
            (
                "x.go",
                "package x\n\n// F(x) returns x.\nfunc F(x int) int { return x }\n",
            ),
            ("x.go", "package x\n\n//nolint:errcheck\nfunc F() {}\n"),
            ("src/lib.rs", "/// let x = f();\npub fn a() {}\n"),
            (
                "src/lib.rs",
                "// SAFETY: checked above (len > 0);\nfn a() {}\n",
            ),
            (
                "src/lib.rs",
                "pub struct S {\n    // Example: one,\n    pub a: u8,\n}\n",
            ),
            ("src/lib.rs", "pub enum E {\n    // Unknown,\n    A,\n}\n"),
        ];
        for (path, text) in cases {
            assert!(blocks(path, text).is_empty(), "{path}: {text}");
        }
    }

    #[test]
    fn code_about_licenses_is_still_code() {
        // The word "license" in code left in comments is not a licence header.
        let go = "package p\n\n//func writeLicense(license License) {\n//\tcopyright := year()\n//\tsave(license.Text, copyright)\n//}\n";
        assert_eq!(found("p.go", "", go, "commented-out-code").len(), 1);
        let header = "// Copyright (c) the authors. Licensed under the MIT license;\n// see LICENSE = the file.\npackage p\n";
        assert!(found("p.go", "", header, "commented-out-code").is_empty());
    }

    #[test]
    fn only_new_comment_lines_count() {
        let old = "def f():\n    # y = g()\n    # h(y)\n    return 1\n";
        let new = "def f():\n    # y = g()\n    # h(y)\n    return 2\n";
        assert!(found("src/a.py", old, new, RULE).is_empty());
        // An example added to a Go doc comment is documentation, not code left behind.
        let old = "package x\n\n// F does it:\n//\nfunc F() int { return 1 }\n";
        let new =
            "package x\n\n// F does it:\n//\n//\tx := F()\n//\tg(x)\nfunc F() int { return 1 }\n";
        assert!(found("x.go", old, new, RULE).is_empty());
        // Commented-out code above a statement is found.
        let new = "package x\n\nfunc F() int {\n\t// x := F()\n\t// g(x)\n\treturn 1\n}\n";
        assert_eq!(found("x.go", "", new, RULE).len(), 1);
    }
}
