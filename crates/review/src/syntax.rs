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
fn prose_keywords(grammar: Grammar) -> &'static [&'static str] {
    match grammar {
        Grammar::Rust => RUST_KEYWORDS,
        Grammar::Python => PYTHON_KEYWORDS,
        Grammar::Go => GO_KEYWORDS,
        Grammar::JavaScript | Grammar::TypeScript | Grammar::Tsx => JAVASCRIPT_KEYWORDS,
    }
}

const RUST_KEYWORDS: &[&str] = &[
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

const PYTHON_KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "case", "class",
    "continue", "def", "del", "elif", "else", "except", "exec", "finally", "for", "from", "global",
    "if", "import", "in", "is", "lambda", "match", "nonlocal", "not", "or", "pass", "print",
    "raise", "return", "try", "type", "while", "with", "yield",
];

const GO_KEYWORDS: &[&str] = &[
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

const JAVASCRIPT_KEYWORDS: &[&str] = &[
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

/// The byte ranges of the top-level items of `text` that hold the byte ranges `focus`, one
/// range per item, in order (see [`item_starts`] for where an item starts); a large block of
/// members is given as its head, the members the focus reaches and its tail ([`members`]).
/// Items are cut from the layout only; a cut that is wrong shows as errors in the parse.
pub(crate) fn windows(grammar: Grammar, text: &str, focus: &[Range<usize>]) -> Vec<Range<usize>> {
    member_windows(grammar, text, focus)
        .into_iter()
        .map(|(w, _)| w)
        .collect()
}

/// For a member of a block cut into members, the indices of its block's head and tail
/// windows among [`member_windows`].
pub(crate) type Block = Option<(usize, usize)>;

/// [`windows`], each with, for a member of a block cut into members, the indices of its
/// block's head and tail windows: a member is parsed with them, or it parses as something
/// else (a method as a free function).
pub(crate) fn member_windows(
    grammar: Grammar,
    text: &str,
    focus: &[Range<usize>],
) -> Vec<(Range<usize>, Block)> {
    layout(grammar, text, focus).windows
}

/// The layout of a file as its lexer sees it, line by line.
#[derive(Debug, Clone, Default)]
pub(crate) struct Layout {
    /// [`member_windows`].
    pub windows: Vec<(Range<usize>, Block)>,
    /// The byte ranges of the runs of lines that begin inside a string or a block comment
    /// (in order): what a pattern finds there is not code.
    pub quoted: Vec<Range<usize>>,
}

impl Layout {
    /// Whether the line that starts at byte `at` begins inside a string or a comment.
    pub(crate) fn is_quoted(&self, at: usize) -> bool {
        let i = self.quoted.partition_point(|r| r.end <= at);
        self.quoted.get(i).is_some_and(|r| r.contains(&at))
    }
}

/// [`member_windows`], with the lines that begin inside strings and comments, from the one
/// pass of the lexer over the file.
pub(crate) fn layout(grammar: Grammar, text: &str, focus: &[Range<usize>]) -> Layout {
    let mut quoted = Vec::new();
    // The items after the one that holds the end of the focus are not needed: the lexer
    // stops at the start of the next.
    let last = focus.last().map_or(0, |f| f.end);
    let starts = item_starts_noting(grammar, text, 0..text.len(), b"", Some((&mut quoted, last)));
    Layout {
        windows: windows_of(grammar, text, focus, &starts),
        quoted,
    }
}

/// [`member_windows`] of the file whose top-level items start at `starts`.
fn windows_of(
    grammar: Grammar,
    text: &str,
    focus: &[Range<usize>],
    starts: &[usize],
) -> Vec<(Range<usize>, Block)> {
    let item = |i: usize| starts[i]..starts.get(i + 1).copied().unwrap_or(text.len());
    let mut out: Vec<Range<usize>> = Vec::new();
    for r in focus {
        let last = r.end.saturating_sub(1).max(r.start);
        let mut i = match starts.binary_search(&r.start) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        loop {
            let w = item(i);
            if out.last().is_none_or(|l| l.start < w.start) {
                out.push(w.clone());
            }
            if w.end > last || i + 1 == starts.len() {
                break;
            }
            i += 1;
        }
    }
    // A large item that is a block of members (an `impl`, a class, a module) is cut further:
    // its head, the members the focus reaches, its closing line.
    let mut refined = Vec::with_capacity(out.len());
    for w in out {
        match members(grammar, text, w.clone()) {
            Some((head, starts, tail)) => {
                let h = refined.len();
                refined.push((head, None));
                let member = |i: usize| starts[i]..starts.get(i + 1).copied().unwrap_or(tail.start);
                let first = refined.len();
                for i in 0..starts.len() {
                    let m = member(i);
                    if !m.is_empty() && focus.iter().any(|f| f.start < m.end && m.start < f.end) {
                        refined.push((m, None));
                    }
                }
                let t = if tail.is_empty() {
                    h
                } else {
                    refined.push((tail, None));
                    refined.len() - 1
                };
                for m in &mut refined[first..] {
                    m.1 = Some((h, t));
                }
                refined[t].1 = None;
            }
            None => refined.push((w, None)),
        }
    }
    refined
}

/// The parts of the item `item` of `text` when it is a block of members worth cutting (over
/// 60 lines): its head (to the line that opens the block: ending in `{`, or `:` in Python),
/// where its members start (lines at the indentation of the first line after the head, cut as
/// [`item_starts`] cuts the file), and its tail (from the `}` in column 0 that closes it; empty
/// in Python).
fn members(
    grammar: Grammar,
    text: &str,
    item: Range<usize>,
) -> Option<(Range<usize>, Vec<usize>, Range<usize>)> {
    let body = &text[item.clone()];
    if memchr::memchr_iter(b'\n', body.as_bytes()).count() <= 60 {
        return None;
    }
    let python = grammar == Grammar::Python;
    // Only containers of members: a function is measured whole, and its statements are no
    // members.
    let declaration = body
        .lines()
        .map(str::trim_start)
        .find(|l| !["#", "@", "//", "/*", "*"].iter().any(|p| l.starts_with(p)))?;
    let words: Vec<&str> = declaration
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .take(4)
        .collect();
    let container = match grammar {
        Grammar::Python => &["class"][..],
        Grammar::Rust => &["impl", "mod", "trait"][..],
        Grammar::Go => &[][..],
        _ => &["class", "namespace", "module", "interface"][..],
    };
    let modifiers = [
        "pub", "crate", "super", "self", "in", "unsafe", "export", "default", "abstract", "declare",
    ];
    let kind = words.iter().find(|w| !modifiers.contains(w))?;
    if !container.contains(kind) {
        return None;
    }
    let opener: &[char] = if python { &[':'] } else { &['{'] };
    // The head: up to the end of the first line that opens the block (a comment after it
    // aside).
    let mut at = item.start;
    let head_end = loop {
        let end = text[at..item.end]
            .find('\n')
            .map_or(item.end, |i| at + i + 1);
        let line = text[at..end].trim_end();
        let code = line.split(" //").next().unwrap_or(line).trim_end();
        if code.ends_with(opener) {
            break end;
        }
        if end >= item.end {
            return None;
        }
        at = end;
    };
    // The members' indentation: the first line after the head that is not blank.
    let rest = &text[head_end..item.end];
    let first = rest.lines().find(|l| !l.trim().is_empty())?;
    let indent = &first[..first.len() - first.trim_start().len()];
    if indent.is_empty() {
        return None;
    }
    let tail_start = if python {
        item.end
    } else {
        text[head_end..item.end]
            .rmatch_indices("\n}")
            .next()
            .map(|(i, _)| head_end + i + 1)?
    };
    let mut starts = item_starts(grammar, text, head_end..tail_start, indent.as_bytes());
    if starts.first() != Some(&head_end) {
        starts.insert(0, head_end);
    }
    Some((item.start..head_end, starts, tail_start..item.end))
}

/// Where the top-level items of `text` start, as byte offsets (the first is 0): at a line of
/// code in column 0 that does not go on with the item above ([`continues`]), or at the attribute,
/// decorator and comment lines (`#[`, `@`, `#`, `//`, `/*`, `*`) right above one. A comment in
/// column 0 inside a body starts nothing, nor does a line inside a string or a block comment
/// (see [`Lexer`]).
fn item_starts(grammar: Grammar, text: &str, range: Range<usize>, indent: &[u8]) -> Vec<usize> {
    item_starts_noting(grammar, text, range, indent, None)
}

/// [`item_starts`]; with `noting` (`quoted`, `until`), the runs of lines that begin inside a
/// string or a block comment are added to `quoted`, and the starts end with the first one
/// after byte `until` (the rest of the text is not read).
fn item_starts_noting(
    grammar: Grammar,
    text: &str,
    range: Range<usize>,
    indent: &[u8],
    mut noting: Option<(&mut Vec<Range<usize>>, usize)>,
) -> Vec<usize> {
    let bytes = &text.as_bytes()[..range.end];
    let mut starts = vec![range.start];
    let mut attached: Option<usize> = None;
    let mut lexer = Lexer::new(grammar);
    let mut at = range.start;
    while at < bytes.len() {
        let end = memchr::memchr(b'\n', &bytes[at..]).map_or(bytes.len(), |i| at + i + 1);
        let full = &bytes[at..end];
        if let Some((quoted, until)) = noting.as_mut() {
            if starts.last().is_some_and(|&s| s > *until) {
                break;
            }
            if lexer.state != Lex::Code {
                match quoted.last_mut() {
                    Some(last) if last.end == at => last.end = end,
                    _ => quoted.push(at..end),
                }
            }
        }
        // A line at a deeper or other indentation goes with the member above it.
        let Some(line) = full.strip_prefix(indent) else {
            let in_comment = matches!(lexer.state, Lex::Block(_));
            lexer.line(full);
            if !in_comment {
                attached = None;
            }
            at = end;
            continue;
        };
        let (in_code, in_comment) = (
            lexer.state == Lex::Code,
            matches!(lexer.state, Lex::Block(_)),
        );
        lexer.line(full);
        if in_comment {
            // A block comment's lines go with it: attached above an item if it is.
        } else if !in_code {
            attached = None;
        } else if line.starts_with(b"#")
            || line.starts_with(b"@")
            || line.starts_with(b"//")
            || line.starts_with(b"/*")
            || line.starts_with(b"*")
            || line.starts_with(b" *")
        {
            attached.get_or_insert(at);
        } else if line.first().is_some_and(|b| !b.is_ascii_whitespace()) && !continues(line) {
            let start = attached.take().unwrap_or(at);
            if start > range.start {
                starts.push(start);
            }
        } else {
            attached = None;
        }
        at = end;
    }
    starts
}

/// Whether a line in column 0 goes on with the item above it: it closes a bracket, opens
/// the body of a signature (`{`, Rust's `where`), goes on with an expression (`.`, `?`, an
/// operator), or is the next clause of a statement (`else`, `elif`, `except`, `finally`,
/// `catch`).
fn continues(line: &[u8]) -> bool {
    if matches!(
        line[0],
        b'}' | b')' | b']' | b'{' | b'.' | b'?' | b':' | b',' | b'=' | b'&' | b'|' | b'+' | b'>'
    ) {
        return true;
    }
    ["where", "else", "elif", "except", "finally", "catch"]
        .iter()
        .any(|k| {
            line.starts_with(k.as_bytes())
                && !line
                    .get(k.len())
                    .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
        })
}

/// Where a text is between lines: in code, or inside a string or block comment that goes on
/// to the next line. It knows each grammar's comments and strings (Rust raw strings and
/// nested block comments, Python triple quotes, Go raw strings, JavaScript template
/// literals, without their `${}`); what it gets wrong shows as parse errors of the items cut.
struct Lexer {
    grammar: Grammar,
    state: Lex,
}

#[derive(Clone, Copy, PartialEq)]
enum Lex {
    Code,
    /// A block comment, nested this deep.
    Block(u32),
    /// A string that ends at this quote (and that a backslash escapes in).
    Str(u8),
    /// A Rust raw string that ends at `"` and this many `#`.
    Raw(usize),
    /// A Python string that ends at three of this quote.
    Triple(u8),
}

impl Lexer {
    fn new(grammar: Grammar) -> Lexer {
        Lexer {
            grammar,
            state: Lex::Code,
        }
    }

    /// The next byte of `line` from `i` on that can start a comment or a string in code.
    fn next_stop(&self, line: &[u8], i: usize) -> usize {
        let rest = &line[i..];
        let found = match self.grammar {
            Grammar::Python => memchr::memchr3(b'#', b'"', b'\'', rest),
            Grammar::Rust => memchr::memchr3(b'/', b'"', b'\'', rest),
            // Go and JavaScript quote with backticks too.
            _ => {
                let quotes = memchr::memchr3(b'/', b'"', b'\'', rest);
                let tick = memchr::memchr(b'`', &rest[..quotes.unwrap_or(rest.len())]);
                tick.or(quotes)
            }
        };
        found.map_or(line.len(), |p| i + p)
    }

    /// Reads one line (with its newline).
    fn line(&mut self, line: &[u8]) {
        let python = self.grammar == Grammar::Python;
        let rust = self.grammar == Grammar::Rust;
        let mut i = 0;
        while i < line.len() {
            match self.state {
                Lex::Code => {
                    i = self.next_stop(line, i);
                    let Some(&b) = line.get(i) else { break };
                    let next = line.get(i + 1).copied();
                    if (python && b == b'#') || (!python && b == b'/' && next == Some(b'/')) {
                        return;
                    }
                    if !python && b == b'/' && next == Some(b'*') {
                        self.state = Lex::Block(1);
                        i += 2;
                        continue;
                    }
                    if python && (b == b'"' || b == b'\'') && line[i..].starts_with(&[b, b, b]) {
                        self.state = Lex::Triple(b);
                        i += 3;
                        continue;
                    }
                    if rust && b == b'"' {
                        // A raw string: `r"`, `r#"`, `br##"`, the `r` a word of its own.
                        let hashes = line[..i].iter().rev().take_while(|&&c| c == b'#').count();
                        let r = i - hashes;
                        if r > 0 && line[r - 1] == b'r' && raw_prefix(&line[..r - 1]) {
                            self.state = Lex::Raw(hashes);
                            i += 1;
                            continue;
                        }
                    }
                    if rust && b == b'\'' {
                        // A char literal (`'x'`, `'\n'`), else a lifetime.
                        let close = if next == Some(b'\\') {
                            line[i + 2..]
                                .iter()
                                .position(|&c| c == b'\'')
                                .map(|p| i + 3 + p)
                        } else {
                            let len = line[i + 1..].iter().position(|&c| c == b'\'').filter(|&p| {
                                (1..=4).contains(&p)
                                    && std::str::from_utf8(&line[i + 1..i + 1 + p])
                                        .is_ok_and(|s| s.chars().count() == 1)
                            });
                            len.map(|p| i + 2 + p)
                        };
                        i = close.unwrap_or(i + 1);
                        continue;
                    }
                    let backtick = matches!(self.grammar, Grammar::Go) || self.grammar.is_js();
                    if b == b'"' || (b == b'`' && backtick) || (b == b'\'' && !rust) {
                        self.state = Lex::Str(b);
                    }
                    i += 1;
                }
                Lex::Block(depth) => {
                    let Some(p) = memchr::memchr2(b'*', b'/', &line[i..]) else {
                        break;
                    };
                    i += p;
                    if line[i..].starts_with(b"*/") {
                        self.state = if depth > 1 {
                            Lex::Block(depth - 1)
                        } else {
                            Lex::Code
                        };
                        i += 2;
                    } else if rust && line[i..].starts_with(b"/*") {
                        self.state = Lex::Block(depth + 1);
                        i += 2;
                    } else {
                        i += 1;
                    }
                }
                Lex::Str(quote) => {
                    let Some(p) = memchr::memchr3(quote, b'\\', b'\n', &line[i..]) else {
                        break;
                    };
                    i += p;
                    let b = line[i];
                    if b == b'\\' && !(quote == b'`' && self.grammar == Grammar::Go) {
                        i += 2;
                        continue;
                    }
                    if b == quote {
                        self.state = Lex::Code;
                    } else if b == b'\n' && quote != b'`' && !rust {
                        // Only Rust strings and raw strings go on past a line end.
                        self.state = Lex::Code;
                    }
                    i += 1;
                }
                Lex::Raw(hashes) => {
                    let Some(p) = memchr::memchr(b'"', &line[i..]) else {
                        break;
                    };
                    i += p;
                    if line[i + 1..]
                        .iter()
                        .take(hashes)
                        .filter(|&&c| c == b'#')
                        .count()
                        == hashes
                        && line.len() > i + hashes
                    {
                        self.state = Lex::Code;
                        i += 1 + hashes;
                    } else {
                        i += 1;
                    }
                }
                Lex::Triple(quote) => {
                    let Some(p) = memchr::memchr2(quote, b'\\', &line[i..]) else {
                        break;
                    };
                    i += p;
                    if line[i] == b'\\' {
                        i += 2;
                        continue;
                    }
                    if line[i..].starts_with(&[quote, quote, quote]) {
                        self.state = Lex::Code;
                        i += 3;
                    } else {
                        i += 1;
                    }
                }
            }
        }
    }
}

/// Whether a Rust raw string's `r` that follows `before` starts a literal: it is a word of
/// its own, or the `r` of `br`.
fn raw_prefix(before: &[u8]) -> bool {
    let word = |c: &u8| c.is_ascii_alphanumeric() || *c == b'_';
    match before {
        [.., p, b'b'] => !word(p),
        [b'b'] => true,
        [.., p] => !word(p),
        [] => true,
    }
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
        // Found anywhere in the file, at the start of a line only.
        let late = "use std::io;\r\n// calls fn main(\r\nstruct S;\r\nasync fn main() {}\r\n";
        assert!(is_program(Grammar::Rust, late));
        assert!(is_program(Grammar::Rust, "mod a;\npub fn main() {}\n"));
        assert!(!is_program(
            Grammar::Rust,
            "// fn main() {}\n    fn main() {}\n"
        ));
        assert!(!is_program(Grammar::Rust, "pub(crate) fn main() {}\n"));
        assert!(is_program(Grammar::Go, "// x\npackage main\r\n"));
        assert!(!is_program(
            Grammar::Go,
            "// package main\npackage mainly\n"
        ));
        assert!(is_program(
            Grammar::Python,
            "x = '__main__'\nif __name__ == \"__main__\":\n    f()\n"
        ));
        assert!(!is_program(
            Grammar::Python,
            "    if __name__ == '__main__':\n"
        ));
    }

    #[test]
    fn a_focused_parse_reads_only_the_items_around_the_focus() {
        let py = "import os\n\n\n@decorator\ndef a():\n    return 1\n\n\ndef b():\n    x = 2\n    return x\n\n\nclass C:\n    def m(self):\n        pass\n";
        let at = py.find("x = 2").unwrap();
        let w = windows(Grammar::Python, py, &[at..at + 6]);
        assert_eq!(&py[w[0].clone()], "def b():\n    x = 2\n    return x\n\n\n");
        let s = Syntax::parse_focused(Grammar::Python, py, Some(vec![at..at + 6])).unwrap();
        let names: Vec<String> = s.functions().into_iter().map(|f| f.name).collect();
        assert_eq!(names, vec!["b"]);
        // Decorators and attributes above an item are part of its window.
        let at = py.find("return 1").unwrap();
        assert!(
            py[windows(Grammar::Python, py, &[at..at + 1])[0].clone()].starts_with("@decorator\n")
        );
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
    fn items_are_cut_at_code_in_column_0_not_inside_strings_or_comments() {
        let starts = |g, text: &str| -> Vec<String> {
            item_starts(g, text, 0..text.len(), b"")
                .into_iter()
                .map(|at| text[at..].lines().next().unwrap_or("").to_owned())
                .collect()
        };
        let rs = "/*!\nCrate docs\n*/\n\nuse x;\n\n/// Doc.\n#[derive(Debug)]\nstruct S;\n\nfn doc() -> &'static str {\n    r#\"\nText in column 0\n\"#\n}\n\nfn f<'a>(c: char) -> bool {\n    c == '\"'\n}\n\nconst B: &[u8] = br\"\nx\n\";\nfn g() {}\n";
        assert_eq!(
            starts(Grammar::Rust, rs),
            vec![
                "/*!",
                "use x;",
                "/// Doc.",
                "fn doc() -> &'static str {",
                "fn f<'a>(c: char) -> bool {",
                "const B: &[u8] = br\"",
                "fn g() {}"
            ]
        );
        let py = "def a():\n    s = \"\"\"\nnot an item\n\"\"\"\n    return s\n# comment\n\n@decorator\ndef b():\n    pass\n";
        assert_eq!(starts(Grammar::Python, py), vec!["def a():", "@decorator"]);
        let go = "package p\n\nfunc f() string {\n\treturn `\n# not a comment\nnot an item\n`\n}\n\nfunc g() {}\n";
        assert_eq!(
            starts(Grammar::Go, go),
            vec!["package p", "func f() string {", "func g() {}"]
        );
        let js = "const t = `\nline\n${x}\n`;\n/* a\nb */\nfunction f() {}\n";
        assert_eq!(
            starts(Grammar::JavaScript, js),
            vec!["const t = `", "/* a",]
        );
        // A `where` clause, a body's brace, an `else:` in column 0 go on with the item.
        let rs = "fn f<T>(t: T)\nwhere\n    T: Clone,\n{\n    t;\n}\nfn g() {}\n";
        assert_eq!(
            starts(Grammar::Rust, rs),
            vec!["fn f<T>(t: T)", "fn g() {}"]
        );
        let py = "if x:\n    a()\nelse:\n    b()\ntry:\n    c()\nexcept E:\n    pass\n";
        assert_eq!(starts(Grammar::Python, py), vec!["if x:", "try:"]);
        // One window per item the focus reaches, in order.
        let text = "fn a() {}\n\nfn b() {\n    x();\n}\n\nfn c() {}\n";
        let from = text.find("x();").unwrap();
        let to = text.find("fn c").unwrap() + 3;
        let w: Vec<&str> = windows(Grammar::Rust, text, &[from..to])
            .into_iter()
            .map(|r| &text[r])
            .collect();
        assert_eq!(w, vec!["fn b() {\n    x();\n}\n\n", "fn c() {}\n"]);
    }

    #[test]
    fn a_large_block_of_members_is_parsed_as_its_head_the_members_reached_and_its_tail() {
        let body: String = (0..70)
            .map(|i| format!("        let v{i} = {i};\n"))
            .collect();
        let fns: String = (0..40).map(|i| format!("    fn f{i}() {{}}\n")).collect();
        let rs = format!(
            "use x;\n\n/// S.\nimpl S {{\n    /// New.\n    pub fn new() -> S {{\n{body}    }}\n{fns}    fn last() {{\n        y();\n    }}\n}}\n"
        );
        let at = rs.find("y();").unwrap();
        let w = member_windows(Grammar::Rust, &rs, &[at..at + 4]);
        let texts: Vec<&str> = w.iter().map(|(r, _)| &rs[r.clone()]).collect();
        assert_eq!(
            texts,
            vec![
                "/// S.\nimpl S {\n",
                "    fn last() {\n        y();\n    }\n",
                "}\n"
            ]
        );
        assert_eq!(w[1].1, Some((0, 2)));
        // Parsed together they are an impl: the method keeps its qualified name.
        let ranges: Vec<Range<usize>> = w.iter().map(|(r, _)| r.clone()).collect();
        let s = Syntax::parse_items(Grammar::Rust, &rs, None, Some(ranges)).unwrap();
        assert!(!s.root().has_error());
        let names: Vec<String> = s.functions().into_iter().map(|f| f.name).collect();
        assert_eq!(names, vec!["S::last"]);
        // A long function is not a block of members: it stays whole.
        let f = format!("fn long() {{\n{body}}}\n");
        let at = f.find("v3 ").unwrap();
        assert_eq!(windows(Grammar::Rust, &f, &[at..at + 2]), vec![0..f.len()]);
        // A Python class: its head and the method reached (no tail).
        let methods: String = (0..40)
            .map(|i| format!("    def m{i}(self):\n        pass\n"))
            .collect();
        let py =
            format!("class C(Base):\n    x = 1\n{methods}    def last(self):\n        return 2\n");
        let at = py.find("return 2").unwrap();
        let w = windows(Grammar::Python, &py, &[at..at + 8]);
        let texts: Vec<&str> = w.iter().map(|r| &py[r.clone()]).collect();
        assert_eq!(
            texts,
            vec![
                "class C(Base):\n",
                "    def last(self):\n        return 2\n"
            ]
        );
    }

    #[test]
    fn included_ranges_are_merged_and_placed_by_row_and_column() {
        let text = "ab\ncd\nef\n";
        let r = ts_ranges(text, &[0..3, 3..6, 7..9]);
        assert_eq!(r.len(), 2);
        assert_eq!((r[0].start_byte, r[0].end_byte), (0, 6));
        assert_eq!(r[0].end_point, tree_sitter::Point { row: 2, column: 0 });
        assert_eq!(r[1].start_point, tree_sitter::Point { row: 2, column: 1 });
        assert_eq!(r[1].end_point, tree_sitter::Point { row: 3, column: 0 });
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

    #[test]
    fn prose_is_told_from_code_without_a_parse() {
        let prose = "If deactivate_worker() returns 0, every worker thread\nis currently idle.\n";
        for g in [
            Grammar::Rust,
            Grammar::Python,
            Grammar::Go,
            Grammar::JavaScript,
        ] {
            assert!(is_prose(g, prose), "{g:?}");
            assert!(Syntax::parse_clean(g, prose).is_none(), "{g:?}");
        }
        // Names side by side with keywords between them, a name and its type, words in
        // quotes: code.
        for (g, code) in [
            (
                Grammar::Rust,
                "pub unsafe fn f(x: &mut Self) -> impl Iterator<Item = u8> {}\n",
            ),
            (Grammar::Rust, "let msg = \"three words here\";\n"),
            (Grammar::Rust, "println!(any words at all);\n"),
            (Grammar::Rust, "#[doc(alias = x)]\nstruct S;\n"),
            (
                Grammar::Python,
                "from a import b\nif x is not None: print x\n",
            ),
            (Grammar::Python, "return a if b else c\n"),
            (
                Grammar::Go,
                "var x, y int\nfunc (s *S) F(a any, b string) {}\n",
            ),
            (
                Grammar::JavaScript,
                "export default async function f() {}\nfor (const a of b) {}\n",
            ),
            (Grammar::JavaScript, "const el = <p>Hello big world</p>;\n"),
            (
                Grammar::TypeScript,
                "declare module foo {}\nlet x = y as unknown as Z;\n",
            ),
        ] {
            assert!(!is_prose(g, code), "{g:?}: {code}");
            assert!(Syntax::parse_clean(g, code).is_some(), "{g:?}: {code}");
        }
    }

    #[test]
    fn a_clean_parse_refuses_text_with_an_error() {
        assert!(Syntax::parse_clean(Grammar::Rust, "fn f( {\n").is_none());
        assert!(Syntax::parse_clean(Grammar::Rust, "fn f() { let x = f(1, 2); }\n").is_some());
        assert!(Syntax::parse_clean(Grammar::Python, "x = (1,\n").is_none());
        // The parser is usable again after a text with an error.
        assert!(Syntax::parse_clean(Grammar::Python, "x = f(1)\n").is_some());
    }
}
