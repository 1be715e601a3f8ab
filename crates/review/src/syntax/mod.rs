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
//!
//! The tree-sitter side is here; [`prose`] tells prose from code before anything is parsed, and
//! [`lexer`] is the hand-written lexer of the five languages that cuts a file into its
//! top-level items (the windows a focused parse reads) and finds the lines inside strings
//! and comments.

mod lexer;
mod prose;

#[cfg(test)]
pub(crate) use lexer::member_windows;
pub(crate) use lexer::{Block, Layout, layout, windows};
pub(crate) use prose::is_prose;

use std::ops::Range;

use tree_sitter::{Node, Parser, Tree};

/// A grammar the review parses with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Grammar {
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
    pub(crate) fn of(language: &str, path: &str) -> Option<Grammar> {
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
    pub(crate) fn is_js(self) -> bool {
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
pub(crate) struct Function {
    /// Its name, qualified by the classes, impls or modules around it (`Type::method`,
    /// `Class.method`); `(anonymous)` when it has none.
    pub name: String,
    /// Its 0-based lines, the signature included.
    pub lines: Range<usize>,
}

/// A comment of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Comment {
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
pub(crate) struct Syntax<'a> {
    /// The grammar it was parsed with.
    pub grammar: Grammar,
    /// The tree and the nodes of the focus.
    parsed: Parsed,
    /// The text it was parsed from.
    pub text: &'a str,
    /// Comments in the focus, in order.
    pub comments: Vec<Comment>,
}

self_cell::self_cell!(
    /// A parse tree and the nodes a walk visits, found once: the checks walk a file's
    /// focus several times, and going through a list costs a fraction of moving a cursor
    /// over the tree again.
    struct Parsed {
        owner: Tree,
        #[covariant]
        dependent: Nodes,
    }
);

/// Nodes in document order, each with its kind.
type Nodes<'t> = Vec<(Node<'t>, &'static str)>;

impl<'a> Syntax<'a> {
    /// Parses `text`; `None` if the parser gives up (it does not on any text, but its API
    /// allows it).
    pub(crate) fn parse(grammar: Grammar, text: &'a str) -> Option<Syntax<'a>> {
        Syntax::parse_focused(grammar, text, None)
    }

    /// Parses `text` if it is code of `grammar` without a syntax error; `None` if it is not.
    pub(crate) fn parse_clean(grammar: Grammar, text: &'a str) -> Option<Syntax<'a>> {
        // Prose is refused before the parser sees it: on prose, tree-sitter's recovery from
        // error after error costs a millisecond for a few lines.
        if is_prose(grammar, text) {
            return None;
        }
        let tree = with_parser(grammar, |parser| {
            parser.set_included_ranges(&[]).ok()?;
            parser.parse(text, None)
        })?;
        if tree.root_node().has_error() {
            return None;
        }
        Some(Syntax::of_tree(grammar, tree, text, None))
    }

    /// Parses `text`, with walks limited to the byte ranges `focus` (in order); only the
    /// top-level items that hold the focus are parsed.
    pub(crate) fn parse_focused(
        grammar: Grammar,
        text: &'a str,
        focus: Option<Vec<Range<usize>>>,
    ) -> Option<Syntax<'a>> {
        let items = focus.as_deref().map(|f| windows(grammar, text, f));
        Syntax::parse_items(grammar, text, focus, items)
    }

    /// Parses the top-level items `items` of `text` (byte ranges from [`windows`]; `None`:
    /// the whole file, for what reads the module's top level too, such as its imports), with
    /// walks limited to `focus`.
    pub(crate) fn parse_items(
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
        let tree = with_parser(grammar, |parser| {
            let whole = |parser: &mut Parser| {
                parser.set_included_ranges(&[]).ok()?;
                parser.parse(text, None)
            };
            match &windows {
                Some(w) => {
                    let ranges = ts_ranges(text, w);
                    parser.set_included_ranges(&ranges).ok()?;
                    match parser.parse(text, None) {
                        Some(tree) if !tree.root_node().has_error() => Some(tree),
                        _ => whole(parser),
                    }
                }
                None => whole(parser),
            }
        })?;
        Some(Syntax::of_tree(grammar, tree, text, focus))
    }

    /// The parse `tree` of `text`, with its comments found (in `focus`, if any).
    fn of_tree(
        grammar: Grammar,
        tree: Tree,
        text: &'a str,
        focus: Option<Vec<Range<usize>>>,
    ) -> Syntax<'a> {
        let parsed = Parsed::new(tree, |tree| {
            let mut nodes = Vec::new();
            walk_from(
                tree.root_node(),
                |node| nodes.push((node, node.kind())),
                |node| overlaps(focus.as_deref(), node),
            );
            nodes
        });
        let comments = parsed
            .borrow_dependent()
            .iter()
            .filter(|(_, kind)| is_comment(kind))
            .map(|(node, _)| {
                let range = node.byte_range();
                Comment {
                    doc: is_doc_comment(grammar, &text[range.clone()]),
                    bytes: range,
                }
            })
            .collect();
        Syntax {
            grammar,
            parsed,
            text,
            comments,
        }
    }

    /// The root node.
    pub(crate) fn root(&self) -> Node<'_> {
        self.parsed.borrow_owner().root_node()
    }

    /// The source text of `node`.
    pub(crate) fn text_of(&self, node: Node<'_>) -> &'a str {
        &self.text[node.byte_range()]
    }

    /// Every node in the focus, in document order (named and anonymous), with its kind, to
    /// `visit`; the subtrees outside the focus are not entered.
    pub(crate) fn walk(&self, mut visit: impl FnMut(Node<'_>, &'static str)) {
        for &(node, kind) in self.parsed.borrow_dependent() {
            visit(node, kind);
        }
    }

    fn walk_where(&self, visit: impl FnMut(Node<'_>), enter: impl Fn(Node<'_>) -> bool) {
        walk_from(self.root(), visit, enter);
    }

    /// Where byte `offset` is: the innermost comment, string literal or interpolation around
    /// it decides.
    pub(crate) fn place(&self, offset: usize) -> Place {
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
    pub(crate) fn functions(&self) -> Vec<Function> {
        let mut out = Vec::new();
        let mut scope: Vec<(usize, String)> = Vec::new();
        self.walk(|node, kind| {
            while scope
                .last()
                .is_some_and(|(end, _)| *end <= node.start_byte())
            {
                scope.pop();
            }
            if let Some(name) = self.scope_name(node, kind) {
                scope.push((node.end_byte(), name));
            }
            if !is_function(self.grammar, kind) {
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
    fn scope_name(&self, node: Node<'_>, kind: &str) -> Option<String> {
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
    pub(crate) fn test_lines(&self) -> Vec<Range<usize>> {
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
                if !is_test_attribute(self.text_of(node)) {
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
pub(crate) fn is_program(grammar: Grammar, text: &str) -> bool {
    match grammar {
        Grammar::Go => lines_with(text, "package ").any(|(_, l)| {
            l.strip_prefix("package ")
                .is_some_and(|rest| rest.split_whitespace().next() == Some("main"))
        }),
        Grammar::Python => {
            text.starts_with("#!")
                || lines_with(text, "__main__").any(|(_, l)| {
                    let t: String = l.chars().filter(|c| !c.is_whitespace()).collect();
                    l.starts_with("if")
                        && (t.starts_with("if__name__==\"__main__\":")
                            || t.starts_with("if__name__=='__main__':"))
                })
        }
        Grammar::Rust => lines_with(text, "fn main(").any(|(at, l)| {
            matches!(&l[..at], "" | "pub " | "async ") && l[at..].starts_with("fn main(")
        }),
        _ => text.starts_with("#!"),
    }
}

/// The lines of `text` that hold `needle`, each with where in it the needle first is: found by
/// a search for the needle, not line by line.
fn lines_with<'t>(text: &'t str, needle: &'t str) -> impl Iterator<Item = (usize, &'t str)> + 't {
    let mut next_line = 0;
    memchr::memmem::find_iter(text.as_bytes(), needle.as_bytes()).filter_map(move |at| {
        if at < next_line {
            return None;
        }
        let start = memchr::memrchr(b'\n', &text.as_bytes()[..at]).map_or(0, |i| i + 1);
        let end = memchr::memchr(b'\n', &text.as_bytes()[at..]).map_or(text.len(), |i| at + i);
        next_line = end + 1;
        Some((at - start, &text[start..end]))
    })
}

/// Whether a Rust attribute marks test code: `#[cfg(test)]`, `#[cfg(all(test, …))]`,
/// `#[test]`, `#[tokio::test]`.
fn is_test_attribute(attr: &str) -> bool {
    // Most attributes are not about tests (`#[derive]`, `#[inline]`): no copy for them.
    if !attr.contains("test") {
        return false;
    }
    let inner: String = attr.chars().filter(|c| !c.is_whitespace()).collect();
    inner.starts_with("#[cfg(test")
        || inner.starts_with("#[cfg(all(test")
        || inner == "#[test]"
        || (inner.ends_with("::test]") && !inner.contains('('))
}

/// Whether a top-level Rust item (as [`windows`] cuts it, with the lines attached above it)
/// is test code by an attribute above it: how [`Syntax::test_lines`] sees an item that was not
/// parsed.
pub(crate) fn is_test_item(item: &str) -> bool {
    item.lines()
        .map(str::trim)
        .take_while(|l| l.starts_with("#[") || l.starts_with("//") || l.is_empty())
        .any(is_test_attribute)
}

/// Whether `node` overlaps the byte ranges `focus` (in order; every node does without them).
fn overlaps(focus: Option<&[Range<usize>]>, node: Node<'_>) -> bool {
    let Some(focus) = focus else {
        return true;
    };
    let (start, end) = (
        node.start_byte(),
        node.end_byte().max(node.start_byte() + 1),
    );
    let at = focus.partition_point(|r| r.end <= start);
    focus.get(at).is_some_and(|r| r.start < end)
}

/// `node` and every node under it, in document order, to `visit`.
pub(crate) fn descendants(node: Node<'_>, visit: impl FnMut(Node<'_>)) {
    walk_from(node, visit, |_| true);
}

/// `node` and the nodes under it, in document order, to `visit`; a node for which `enter` is
/// false is neither visited nor entered.
fn walk_from<'t>(
    node: Node<'t>,
    mut visit: impl FnMut(Node<'t>),
    enter: impl Fn(Node<'t>) -> bool,
) {
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

/// Runs `f` with this thread's parser for `grammar` (made on first use).
fn with_parser<T>(grammar: Grammar, f: impl FnOnce(&mut Parser) -> Option<T>) -> Option<T> {
    PARSER.with(|cell| {
        let mut parsers = cell.borrow_mut();
        let parser = parsers.entry(grammar).or_insert_with(|| {
            let mut p = Parser::new();
            p.set_language(&grammar.language())
                .expect("the grammars are of this tree-sitter's ABI (a unit test parses each)");
            p
        });
        f(parser)
    })
}

/// The byte ranges `ranges` of `text` (in order, not overlapping) as tree-sitter ranges, the
/// ones that touch merged; rows and columns are counted in one pass.
fn ts_ranges(text: &str, ranges: &[Range<usize>]) -> Vec<tree_sitter::Range> {
    let bytes = text.as_bytes();
    let (mut at, mut row, mut line_start) = (0usize, 0usize, 0usize);
    let mut point = |to: usize| {
        for (i, &b) in bytes[at..to].iter().enumerate() {
            if b == b'\n' {
                row += 1;
                line_start = at + i + 1;
            }
        }
        at = to;
        tree_sitter::Point {
            row,
            column: to - line_start,
        }
    };
    let mut merged: Vec<Range<usize>> = Vec::new();
    for r in ranges {
        match merged.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => merged.push(r.clone()),
        }
    }
    merged
        .into_iter()
        .map(|r| tree_sitter::Range {
            start_byte: r.start,
            end_byte: r.end,
            start_point: point(r.start),
            end_point: point(r.end),
        })
        .collect()
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
mod tests;
