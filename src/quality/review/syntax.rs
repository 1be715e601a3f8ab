//! The syntax of a changed file, from a real parser (tree-sitter) for the languages the review
//! understands: Python, Rust, JavaScript, TypeScript (and TSX), Go.
//!
//! A parse gives what a pattern cannot: where comments and string literals are (so that
//! `context.TODO()` is code and `# TODO` a comment, and a rule about calls never fires inside a
//! string), where functions start and end, which parts of a file are test code by syntax
//! (`#[cfg(test)]`, `#[test]`), and whether a file is a program's entry point
//! (`package main`, `if __name__ == "__main__":`, `fn main`).
//!
//! Only files with new lines are parsed, each once, on the worker thread that scans it.

use std::ops::Range;

use tree_sitter::{Node, Parser, Tree};

/// A grammar the review parses with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Grammar {
    /// Python 3 (and the Python 2 statements tree-sitter still knows, such as `print x`).
    Python,
    /// Rust.
    Rust,
    /// JavaScript, JSX included.
    JavaScript,
    /// TypeScript.
    TypeScript,
    /// TypeScript with JSX (`.tsx`).
    Tsx,
    /// Go.
    Go,
}

impl Grammar {
    /// The grammar for a file of the rules file's language `language` named `path`.
    pub fn of(language: &str, path: &str) -> Option<Grammar> {
        Some(match language {
            "python" => Grammar::Python,
            "rust" => Grammar::Rust,
            "javascript" => Grammar::JavaScript,
            "typescript" if path.to_ascii_lowercase().ends_with(".tsx") => Grammar::Tsx,
            "typescript" => Grammar::TypeScript,
            "go" => Grammar::Go,
            _ => return None,
        })
    }

    fn language(self) -> tree_sitter::Language {
        match self {
            Grammar::Python => tree_sitter_python::LANGUAGE.into(),
            Grammar::Rust => tree_sitter_rust::LANGUAGE.into(),
            Grammar::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            Grammar::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            Grammar::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
            Grammar::Go => tree_sitter_go::LANGUAGE.into(),
        }
    }

    /// JavaScript or TypeScript (the checks for them are one set).
    pub fn is_js(self) -> bool {
        matches!(
            self,
            Grammar::JavaScript | Grammar::TypeScript | Grammar::Tsx
        )
    }
}

/// Where a byte of the file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// Code: not in a comment or a string literal.
    Code,
    /// In a comment.
    Comment,
    /// In a string literal (its quotes included).
    String,
}

/// A function (or method, or closure assigned to a name) of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    /// Its name, qualified by the classes, impls or modules around it (`Type::method`,
    /// `Class.method`); `(anonymous)` when it has none.
    pub name: String,
    /// Its 0-based lines, the signature included.
    pub lines: Range<usize>,
}

/// A comment of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comment {
    /// Its bytes.
    pub bytes: Range<usize>,
    /// A documentation comment (`///`, `//!`, `/** */`): it may show code on purpose.
    pub doc: bool,
}

/// A parsed file.
///
/// A parse may have a *focus*: the byte ranges of the change's new code. Walks then visit only
/// the nodes that overlap it (and so every node a finding about new code can be about), so a
/// large file with a small change costs its parse and little more.
pub struct Syntax<'a> {
    /// The grammar it was parsed with.
    pub grammar: Grammar,
    /// The tree.
    pub tree: Tree,
    /// The text it was parsed from.
    pub text: &'a str,
    /// Byte ranges walks are limited to, in order; `None`: the whole file.
    focus: Option<Vec<Range<usize>>>,
    /// Comments in the focus, in order.
    pub comments: Vec<Comment>,
}

impl<'a> Syntax<'a> {
    /// Parses `text`; `None` if the parser gives up (it does not on any text, but its API
    /// allows it).
    pub fn parse(grammar: Grammar, text: &'a str) -> Option<Syntax<'a>> {
        Syntax::parse_focused(grammar, text, None)
    }

    /// Parses `text`, with walks limited to the byte ranges `focus` (in order); only the
    /// top-level items that hold the focus are parsed.
    pub fn parse_focused(
        grammar: Grammar,
        text: &'a str,
        focus: Option<Vec<Range<usize>>>,
    ) -> Option<Syntax<'a>> {
        let items = focus.as_deref().map(|f| windows(text, f));
        Syntax::parse_items(grammar, text, focus, items)
    }

    /// Parses the top-level items `items` of `text` (byte ranges from [`windows`]; `None`:
    /// the whole file, for what reads the module's top level too, such as its imports), with
    /// walks limited to `focus`.
    pub fn parse_items(
        grammar: Grammar,
        text: &'a str,
        focus: Option<Vec<Range<usize>>>,
        items: Option<Vec<Range<usize>>>,
    ) -> Option<Syntax<'a>> {
        // Only the items that hold the focus are parsed (a function, a class, an impl block
        // with what is attached above it); if the parse of those has errors the guess of
        // where items end was wrong, and the whole file is parsed; so it is when the items
        // are most of it.
        let windows =
            items.filter(|w| w.iter().map(|r| r.len()).sum::<usize>() * 10 < text.len() * 7);
        let tree = PARSER.with(|cell| {
            let mut parsers = cell.borrow_mut();
            let parser = parsers.entry(grammar).or_insert_with(|| {
                let mut p = Parser::new();
                p.set_language(&grammar.language())
                    .expect("the grammars are of this tree-sitter's ABI (a unit test parses each)");
                p
            });
            let whole = |parser: &mut Parser| {
                parser.set_included_ranges(&[]).ok()?;
                parser.parse(text, None)
            };
            match &windows {
                Some(w) => {
                    let ranges: Vec<tree_sitter::Range> =
                        w.iter().map(|r| ts_range(text, r)).collect();
                    parser.set_included_ranges(&ranges).ok()?;
                    match parser.parse(text, None) {
                        Some(tree) if !tree.root_node().has_error() => Some(tree),
                        _ => whole(parser),
                    }
                }
                None => whole(parser),
            }
        })?;
        let mut syntax = Syntax {
            grammar,
            tree,
            text,
            focus,
            comments: Vec::new(),
        };
        let mut comments = Vec::new();
        syntax.walk(|node| {
            if is_comment(node.kind()) {
                let range = node.byte_range();
                comments.push(Comment {
                    doc: is_doc_comment(grammar, &text[range.clone()]),
                    bytes: range,
                });
            }
        });
        syntax.comments = comments;
        Some(syntax)
    }

    /// The root node.
    pub fn root(&self) -> Node<'_> {
        self.tree.root_node()
    }

    /// The source text of `node`.
    pub fn text_of(&self, node: Node<'_>) -> &'a str {
        &self.text[node.byte_range()]
    }

    /// Whether `node` overlaps the focus (every node does without one).
    pub fn in_focus(&self, node: Node<'_>) -> bool {
        let Some(focus) = &self.focus else {
            return true;
        };
        let (start, end) = (
            node.start_byte(),
            node.end_byte().max(node.start_byte() + 1),
        );
        let at = focus.partition_point(|r| r.end <= start);
        focus.get(at).is_some_and(|r| r.start < end)
    }

    /// Every node in the focus, in document order (named and anonymous), to `visit`; the
    /// subtrees outside the focus are not entered.
    pub fn walk(&self, visit: impl FnMut(Node<'_>)) {
        self.walk_where(visit, |n| self.in_focus(n));
    }

    fn walk_where(&self, visit: impl FnMut(Node<'_>), enter: impl Fn(Node<'_>) -> bool) {
        walk_from(self.root(), visit, enter);
    }

    /// Where byte `offset` is: the innermost comment, string literal or interpolation around
    /// it decides.
    pub fn place(&self, offset: usize) -> Place {
        let Some(mut node) = self
            .root()
            .descendant_for_byte_range(offset, offset.saturating_add(1).min(self.text.len()))
        else {
            return Place::Code;
        };
        loop {
            let kind = node.kind();
            if is_comment(kind) {
                return Place::Comment;
            }
            if is_interpolation(kind) {
                return Place::Code;
            }
            if is_string(self.grammar, kind) {
                return Place::String;
            }
            match node.parent() {
                Some(p) => node = p,
                None => return Place::Code,
            }
        }
    }

    /// Every function of the file.
    pub fn functions(&self) -> Vec<Function> {
        let mut out = Vec::new();
        let mut scope: Vec<(usize, String)> = Vec::new();
        self.walk(|node| {
            while scope
                .last()
                .is_some_and(|(end, _)| *end <= node.start_byte())
            {
                scope.pop();
            }
            if let Some(name) = self.scope_name(node) {
                scope.push((node.end_byte(), name));
            }
            if !is_function(self.grammar, node.kind()) {
                return;
            }
            let own = self.function_name(node);
            let mut name: Vec<&str> = scope
                .iter()
                .filter(|(end, _)| *end >= node.end_byte())
                .map(|(_, n)| n.as_str())
                .collect();
            name.push(own.as_deref().unwrap_or("(anonymous)"));
            let sep = if self.grammar == Grammar::Rust {
                "::"
            } else {
                "."
            };
            out.push(Function {
                name: name.join(sep),
                lines: node.start_position().row..node.end_position().row + 1,
            });
            // A function is a scope for the functions inside it.
            scope.push((node.end_byte(), own.unwrap_or_else(|| "(anonymous)".into())));
        });
        out
    }

    /// The name a class, impl, trait or module gives the functions inside it.
    fn scope_name(&self, node: Node<'_>) -> Option<String> {
        let kind = node.kind();
        let field = match (self.grammar, kind) {
            (Grammar::Python, "class_definition") => "name",
            (Grammar::Rust, "impl_item") => "type",
            (Grammar::Rust, "trait_item" | "mod_item") => "name",
            (g, "class_declaration" | "class") if g.is_js() => "name",
            _ => return None,
        };
        node.child_by_field_name(field)
            .map(|n| self.text_of(n).to_owned())
    }

    fn function_name(&self, node: Node<'_>) -> Option<String> {
        if let Some(n) = node.child_by_field_name("name") {
            return Some(self.text_of(n).to_owned());
        }
        // `const f = () => {}`, `f: function () {}`, `x.f = function () {}`.
        let parent = node.parent()?;
        let named = match parent.kind() {
            "variable_declarator" => parent.child_by_field_name("name"),
            "pair" => parent.child_by_field_name("key"),
            "assignment_expression" => parent.child_by_field_name("left"),
            "public_field_definition" | "field_definition" => parent
                .child_by_field_name("name")
                .or_else(|| parent.child_by_field_name("property")),
            _ => None,
        }?;
        Some(self.text_of(named).to_owned())
    }

    /// The 0-based line ranges that are test code by syntax: Rust items under
    /// `#[cfg(test)]` and functions marked `#[test]` (or `#[tokio::test]` and the like).
    pub fn test_lines(&self) -> Vec<Range<usize>> {
        let mut out = Vec::new();
        if self.grammar != Grammar::Rust {
            return out;
        }
        // Attributes of items sit among the items: in the file, in modules, in impls. Function
        // bodies are not entered.
        let items = |n: Node<'_>| {
            matches!(
                n.kind(),
                "source_file" | "mod_item" | "declaration_list" | "attribute_item"
            )
        };
        self.walk_where(
            |node| {
                if node.kind() != "attribute_item" {
                    return;
                }
                let attr = self.text_of(node);
                let inner: String = attr.chars().filter(|c| !c.is_whitespace()).collect();
                let test = inner.starts_with("#[cfg(test")
                    || inner.starts_with("#[cfg(all(test")
                    || inner == "#[test]"
                    || (inner.ends_with("::test]") && !inner.contains('('));
                if !test {
                    return;
                }
                // The item the attribute belongs to: the next sibling that is not an attribute
                // or a comment.
                let mut next = node.next_named_sibling();
                while let Some(n) = next {
                    if n.kind() == "attribute_item" || is_comment(n.kind()) {
                        next = n.next_named_sibling();
                    } else {
                        break;
                    }
                }
                if let Some(item) = next {
                    out.push(node.start_position().row..item.end_position().row + 1);
                }
            },
            items,
        );
        out
    }
}

/// Whether `text` of `grammar` is a program's entry point: Go's `package main`, a
/// module-level `if __name__ == "__main__":` or a `#!` line in Python, a top-level `fn main`
/// in Rust, a `#!` line in JavaScript. Read from the text, so that no parse is needed.
pub fn is_program(grammar: Grammar, text: &str) -> bool {
    match grammar {
        Grammar::Go => text.lines().any(|l| {
            l.strip_prefix("package ")
                .is_some_and(|rest| rest.split_whitespace().next() == Some("main"))
        }),
        Grammar::Python => {
            text.starts_with("#!")
                || text.lines().any(|l| {
                    let t: String = l.chars().filter(|c| !c.is_whitespace()).collect();
                    l.starts_with("if")
                        && (t.starts_with("if__name__==\"__main__\":")
                            || t.starts_with("if__name__=='__main__':"))
                })
        }
        Grammar::Rust => text.lines().any(|l| {
            l.starts_with("fn main(")
                || l.starts_with("pub fn main(")
                || l.starts_with("async fn main(")
        }),
        _ => text.starts_with("#!"),
    }
}

/// `node` and every node under it, in document order, to `visit`.
pub fn descendants(node: Node<'_>, visit: impl FnMut(Node<'_>)) {
    walk_from(node, visit, |_| true);
}

/// `node` and the nodes under it, in document order, to `visit`; a node for which `enter` is
/// false is neither visited nor entered.
fn walk_from(node: Node<'_>, mut visit: impl FnMut(Node<'_>), enter: impl Fn(Node<'_>) -> bool) {
    let mut cursor = node.walk();
    'outer: loop {
        let node = cursor.node();
        let inside = enter(node);
        if inside {
            visit(node);
        }
        if inside && cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                continue 'outer;
            }
            if !cursor.goto_parent() {
                break 'outer;
            }
        }
    }
}

thread_local! {
    /// One parser per grammar and thread, reused from file to file.
    static PARSER: std::cell::RefCell<std::collections::HashMap<Grammar, Parser>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

/// `bytes` of `text` as a tree-sitter range.
fn ts_range(text: &str, bytes: &Range<usize>) -> tree_sitter::Range {
    let point = |at: usize| {
        let before = &text.as_bytes()[..at];
        let row = before.iter().filter(|&&b| b == b'\n').count();
        let column = at
            - before
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |i| i + 1);
        tree_sitter::Point { row, column }
    };
    tree_sitter::Range {
        start_byte: bytes.start,
        end_byte: bytes.end,
        start_point: point(bytes.start),
        end_point: point(bytes.end),
    }
}

/// The byte ranges of the top-level items of `text` that hold the byte ranges `focus`: from
/// the last line at or before each range that starts an item in column 0 (with the attribute,
/// decorator and comment lines right above it) to the line before the next item starts in
/// column 0 (closing brackets in column 0 belong to the item). Merged, in order.
pub fn windows(text: &str, focus: &[Range<usize>]) -> Vec<Range<usize>> {
    let bytes = text.as_bytes();
    let line_start = |at: usize| {
        bytes[..at]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1)
    };
    let next_line = |at: usize| {
        bytes[at..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len(), |i| at + i + 1)
    };
    // A line that starts a top-level item: text in column 0 that does not close a bracket.
    let starts_item = |at: usize| {
        bytes
            .get(at)
            .is_some_and(|&b| !b.is_ascii_whitespace() && !matches!(b, b'}' | b')' | b']'))
    };
    // Lines attached to the item below them.
    let attached = |at: usize| {
        let line = &bytes[at..next_line(at)];
        line.starts_with(b"#[")
            || line.starts_with(b"#!")
            || line.starts_with(b"@")
            || line.starts_with(b"//")
            || line.starts_with(b"/*")
            || line.starts_with(b" *")
            || line.starts_with(b"#")
    };
    let mut out: Vec<Range<usize>> = Vec::new();
    for r in focus {
        // A range inside the last window only stretches its end.
        if let Some(last) = out.last_mut()
            && r.start < last.end
        {
            let mut end = next_line(r.end.saturating_sub(1).max(r.start).min(bytes.len()));
            while end < bytes.len() && (!starts_item(end) || attached(end)) {
                end = next_line(end);
            }
            last.end = last.end.max(end);
            continue;
        }
        let mut start = line_start(r.start.min(bytes.len()));
        while start > 0 && !starts_item(start) {
            start = line_start(start - 1);
        }
        while start > 0 {
            let above = line_start(start - 1);
            if attached(above) {
                start = above;
            } else {
                break;
            }
        }
        let mut end = next_line(r.end.saturating_sub(1).max(r.start).min(bytes.len()));
        while end < bytes.len() && (!starts_item(end) || attached(end)) {
            end = next_line(end);
        }
        match out.last_mut() {
            Some(last) if start <= last.end => last.end = last.end.max(end),
            _ => out.push(start..end),
        }
    }
    out
}

fn is_comment(kind: &str) -> bool {
    matches!(kind, "comment" | "line_comment" | "block_comment")
}

fn is_string(grammar: Grammar, kind: &str) -> bool {
    match grammar {
        Grammar::Python => kind == "string" || kind == "concatenated_string",
        Grammar::Rust => matches!(
            kind,
            "string_literal" | "raw_string_literal" | "char_literal"
        ),
        Grammar::Go => matches!(
            kind,
            "interpreted_string_literal" | "raw_string_literal" | "rune_literal"
        ),
        _ => matches!(kind, "string" | "template_string" | "regex"),
    }
}

fn is_interpolation(kind: &str) -> bool {
    matches!(kind, "interpolation" | "template_substitution")
}

fn is_doc_comment(grammar: Grammar, text: &str) -> bool {
    match grammar {
        Grammar::Rust => {
            (text.starts_with("///") && !text.starts_with("////"))
                || text.starts_with("//!")
                || text.starts_with("/**")
                || text.starts_with("/*!")
        }
        Grammar::Python => false,
        _ => text.starts_with("/**"),
    }
}

fn is_function(grammar: Grammar, kind: &str) -> bool {
    match grammar {
        Grammar::Python => kind == "function_definition",
        Grammar::Rust => kind == "function_item",
        Grammar::Go => matches!(kind, "function_declaration" | "method_declaration"),
        _ => matches!(
            kind,
            "function_declaration"
                | "generator_function_declaration"
                | "method_definition"
                | "function_expression"
                | "function"
                | "arrow_function"
        ),
    }
}

#[cfg(test)]
#[allow(clippy::single_range_in_vec_init)]
mod tests {
    use super::*;

    fn parse(grammar: Grammar, text: &str) -> Syntax<'_> {
        Syntax::parse(grammar, text).expect("parses")
    }

    #[test]
    fn comments_strings_and_code_are_told_apart() {
        let go = "package x\n\n// TODO: later\nfunc f() { ctx := context.TODO(); s := \"TODO\" }\n";
        let s = parse(Grammar::Go, go);
        let at = |needle: &str, nth: usize| go.match_indices(needle).nth(nth).unwrap().0;
        assert_eq!(s.place(at("TODO", 0)), Place::Comment);
        assert_eq!(s.place(at("TODO", 1)), Place::Code);
        assert_eq!(s.place(at("TODO", 2)), Place::String);

        let py = "x = f\"select {name} from t\"  # note\n";
        let s = parse(Grammar::Python, py);
        assert_eq!(s.place(py.find("select").unwrap()), Place::String);
        assert_eq!(s.place(py.find("name").unwrap()), Place::Code);
        assert_eq!(s.place(py.find("note").unwrap()), Place::Comment);

        let js = "const q = `a ${b + \"c\"} d`; // e\n";
        let s = parse(Grammar::JavaScript, js);
        assert_eq!(s.place(js.find('b').unwrap()), Place::Code);
        assert_eq!(s.place(js.find("c\"").unwrap()), Place::String);
        assert_eq!(s.place(js.find(" d").unwrap() + 1), Place::String);
        assert_eq!(s.place(js.find('e').unwrap()), Place::Comment);
    }

    #[test]
    fn functions_have_qualified_names_and_whole_spans() {
        let py = "class A:\n    def m(self):\n        return 1\n\ndef g():\n    def inner():\n        pass\n    return inner\n";
        let names: Vec<(String, Range<usize>)> = parse(Grammar::Python, py)
            .functions()
            .into_iter()
            .map(|f| (f.name, f.lines))
            .collect();
        assert_eq!(
            names,
            vec![
                ("A.m".to_owned(), 1..3),
                ("g".to_owned(), 4..8),
                ("g.inner".to_owned(), 5..7)
            ]
        );
        let rs = "impl Foo {\n    fn a(&self) {}\n}\nfn b() {\n}\n";
        let names: Vec<String> = parse(Grammar::Rust, rs)
            .functions()
            .into_iter()
            .map(|f| f.name)
            .collect();
        assert_eq!(names, vec!["Foo::a", "b"]);
        let js = "const f = () => {\n  return 1;\n};\nclass C { m() {} }\n";
        let names: Vec<String> = parse(Grammar::JavaScript, js)
            .functions()
            .into_iter()
            .map(|f| f.name)
            .collect();
        assert_eq!(names, vec!["f", "C.m"]);
    }

    #[test]
    fn rust_test_code_and_entry_points_are_found_by_syntax() {
        let rs = "fn main() {}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn t() {}\n}\n";
        let s = parse(Grammar::Rust, rs);
        assert_eq!(s.test_lines(), vec![2..7, 4..6]);
        assert!(is_program(Grammar::Rust, rs));
        assert!(!is_program(Grammar::Rust, "pub fn lib() {}\n"));
        assert!(is_program(Grammar::Go, "package main\n\nfunc main() {}\n"));
        assert!(!is_program(Grammar::Go, "package util\n"));
        assert!(is_program(
            Grammar::Python,
            "def f():\n    pass\n\nif __name__ == '__main__':\n    f()\n"
        ));
        assert!(is_program(
            Grammar::JavaScript,
            "#!/usr/bin/env node\nrun();\n"
        ));
        assert!(is_program(
            Grammar::Python,
            "#!/usr/bin/env python\nimport argparse\n"
        ));
        assert!(!is_program(Grammar::Python, "import argparse\n"));
    }

    #[test]
    fn a_focused_parse_reads_only_the_items_around_the_focus() {
        let py = "import os\n\n\n@decorator\ndef a():\n    return 1\n\n\ndef b():\n    x = 2\n    return x\n\n\nclass C:\n    def m(self):\n        pass\n";
        let at = py.find("x = 2").unwrap();
        let w = windows(py, &[at..at + 6]);
        assert_eq!(&py[w[0].clone()], "def b():\n    x = 2\n    return x\n\n\n");
        let s = Syntax::parse_focused(Grammar::Python, py, Some(vec![at..at + 6])).unwrap();
        let names: Vec<String> = s.functions().into_iter().map(|f| f.name).collect();
        assert_eq!(names, vec!["b"]);
        // Decorators and attributes above an item are part of its window.
        let at = py.find("return 1").unwrap();
        assert!(py[windows(py, &[at..at + 1])[0].clone()].starts_with("@decorator\n"));
        let rs = "use x;\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn t() {\n        f();\n    }\n}\n";
        let at = rs.find("f();").unwrap();
        let s = Syntax::parse_focused(Grammar::Rust, rs, Some(vec![at..at + 4])).unwrap();
        assert_eq!(s.test_lines(), vec![2..9, 4..8]);
        // A window that cuts an item (column-0 text inside a string) has parse errors: the
        // whole file is parsed instead, and the functions are all there.
        let py =
            "def a():\n    s = \"\"\"\nnot an item\n\"\"\"\n    return s\n\n\ndef b():\n    pass\n";
        let at = py.find("return s").unwrap();
        let s = Syntax::parse_focused(Grammar::Python, py, Some(vec![at..at + 8])).unwrap();
        assert!(!s.root().has_error());
        assert_eq!(s.functions().len(), 1, "only `a` holds the focus");
    }

    #[test]
    fn every_grammar_loads_and_parses() {
        for (g, text) in [
            (Grammar::Python, "x = 1\n"),
            (Grammar::Rust, "fn f() {}\n"),
            (Grammar::JavaScript, "let x = <a/>;\n"),
            (Grammar::TypeScript, "let x: number = 1;\n"),
            (Grammar::Tsx, "let x = <a/>;\n"),
            (Grammar::Go, "package x\n"),
        ] {
            assert!(!parse(g, text).root().has_error(), "{g:?}");
        }
    }

    #[test]
    fn doc_comments_are_told_from_ordinary_ones() {
        let rs = "/// let x = f();\n// let y = g();\nfn a() {}\n";
        let s = parse(Grammar::Rust, rs);
        let docs: Vec<bool> = s.comments.iter().map(|c| c.doc).collect();
        assert_eq!(docs, vec![true, false]);
    }
}
