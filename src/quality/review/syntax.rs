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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
pub struct Syntax<'a> {
    /// The grammar it was parsed with.
    pub grammar: Grammar,
    /// The tree.
    pub tree: Tree,
    /// The text it was parsed from.
    pub text: &'a str,
    /// Comments and string literals, in order, not overlapping.
    spans: Vec<(Range<usize>, Place)>,
    /// Comments, in order.
    pub comments: Vec<Comment>,
}

impl<'a> Syntax<'a> {
    /// Parses `text`; `None` if the parser gives up (it does not on any text, but its API
    /// allows it).
    pub fn parse(grammar: Grammar, text: &'a str) -> Option<Syntax<'a>> {
        let mut parser = Parser::new();
        parser.set_language(&grammar.language()).ok()?;
        let tree = parser.parse(text, None)?;
        let mut syntax = Syntax {
            grammar,
            tree,
            text,
            spans: Vec::new(),
            comments: Vec::new(),
        };
        let (spans, comments) = syntax.collect_spans();
        syntax.spans = spans;
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

    /// Every node, in document order (named and anonymous), to `visit`.
    pub fn walk(&self, mut visit: impl FnMut(Node<'_>)) {
        let mut cursor = self.tree.walk();
        'outer: loop {
            visit(cursor.node());
            if cursor.goto_first_child() {
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

    /// Where byte `offset` is.
    pub fn place(&self, offset: usize) -> Place {
        let at = self.spans.partition_point(|(r, _)| r.end <= offset);
        match self.spans.get(at) {
            Some((r, place)) if r.start <= offset => *place,
            _ => Place::Code,
        }
    }

    fn collect_spans(&self) -> (Vec<(Range<usize>, Place)>, Vec<Comment>) {
        let mut spans: Vec<(Range<usize>, Place)> = Vec::new();
        let mut comments = Vec::new();
        let mut cursor = self.tree.walk();
        'outer: loop {
            let node = cursor.node();
            let kind = node.kind();
            let place = if is_comment(kind) {
                Some(Place::Comment)
            } else if is_string(self.grammar, kind) {
                Some(Place::String)
            } else {
                None
            };
            let mut descend = true;
            if let Some(place) = place {
                let range = node.byte_range();
                if place == Place::Comment {
                    comments.push(Comment {
                        doc: is_doc_comment(self.grammar, &self.text[range.clone()]),
                        bytes: range.clone(),
                    });
                    descend = false;
                    spans.push((range, place));
                } else {
                    // Interpolations inside a string (`f"{x}"`, `${x}`) are code.
                    let mut from = range.start;
                    for i in 0..node.named_child_count() {
                        let Some(child) = node.named_child(i) else {
                            continue;
                        };
                        if is_interpolation(child.kind()) {
                            if child.start_byte() > from {
                                spans.push((from..child.start_byte(), Place::String));
                            }
                            from = child.end_byte();
                        }
                    }
                    if range.end > from {
                        spans.push((from..range.end, Place::String));
                    }
                    // Interpolations are walked for their own strings and comments.
                    descend = node
                        .named_children(&mut node.walk())
                        .any(|c| is_interpolation(c.kind()));
                }
            }
            if descend && cursor.goto_first_child() {
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
        spans.sort_by_key(|(r, _)| r.start);
        // Strings nested in interpolations lie inside an outer string's gap; drop overlaps.
        let mut out: Vec<(Range<usize>, Place)> = Vec::with_capacity(spans.len());
        for (r, p) in spans {
            match out.last() {
                Some((last, _)) if r.start < last.end => {}
                _ => out.push((r, p)),
            }
        }
        (out, comments)
    }

    /// Every function of the file.
    pub fn functions(&self) -> Vec<Function> {
        let mut out = Vec::new();
        let mut scope: Vec<(usize, String)> = Vec::new();
        self.walk(|node| {
            while scope.last().is_some_and(|(end, _)| *end <= node.start_byte()) {
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
        self.walk(|node| {
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
        });
        out
    }

    /// Whether the file is a program's entry point by syntax: Go's `package main`, a
    /// module-level `if __name__ == "__main__":` in Python, a top-level `fn main` in Rust, a
    /// `#!` line in JavaScript and TypeScript.
    pub fn is_program(&self) -> bool {
        let root = self.root();
        let mut cursor = root.walk();
        let found = root.named_children(&mut cursor).any(|n| match self.grammar {
            Grammar::Go => {
                n.kind() == "package_clause"
                    && n.named_child(0).is_some_and(|p| self.text_of(p) == "main")
            }
            Grammar::Python => {
                n.kind() == "if_statement"
                    && n.child_by_field_name("condition").is_some_and(|c| {
                        let t: String = self
                            .text_of(c)
                            .chars()
                            .filter(|c| !c.is_whitespace())
                            .collect();
                        t == "__name__==\"__main__\"" || t == "__name__=='__main__'"
                    })
            }
            Grammar::Rust => {
                n.kind() == "function_item"
                    && n.child_by_field_name("name")
                        .is_some_and(|m| self.text_of(m) == "main")
            }
            // A `#!` line: a script run as a command.
            _ => n.kind() == "hash_bang_line",
        });
        found
    }
}

fn is_comment(kind: &str) -> bool {
    matches!(kind, "comment" | "line_comment" | "block_comment")
}

fn is_string(grammar: Grammar, kind: &str) -> bool {
    match grammar {
        Grammar::Python => kind == "string" || kind == "concatenated_string",
        Grammar::Rust => matches!(kind, "string_literal" | "raw_string_literal" | "char_literal"),
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
        assert!(s.is_program());
        assert!(!parse(Grammar::Rust, "pub fn lib() {}\n").is_program());
        assert!(parse(Grammar::Go, "package main\n\nfunc main() {}\n").is_program());
        assert!(!parse(Grammar::Go, "package util\n").is_program());
        assert!(
            parse(
                Grammar::Python,
                "def f():\n    pass\n\nif __name__ == '__main__':\n    f()\n"
            )
            .is_program()
        );
    }

    #[test]
    fn doc_comments_are_told_from_ordinary_ones() {
        let rs = "/// let x = f();\n// let y = g();\nfn a() {}\n";
        let s = parse(Grammar::Rust, rs);
        let docs: Vec<bool> = s.comments.iter().map(|c| c.doc).collect();
        assert_eq!(docs, vec![true, false]);
    }
}
