//! Checks on the parse of Rust files: `unsafe` without a `SAFETY:` justification, SQL
//! formatted or concatenated from values, and shell commands (`sh -c`) built from values.
//!
//! Values are judged by where they come from: literals, constants (`ALL_CAPS`, `const`
//! items) and what a quoting call returns are not input; a parameter of the enclosing
//! function, an input-like name (`req`, `query`, `params`, `input`, `user`, `name`…) or a
//! call on one is; anything else is of unknown origin (medium confidence), and so are
//! numbers. What reads as SQL and as input is decided for every language in `sql` and
//! `input`; the helpers shared with the Go checks (a chain of `+` holding SQL, which programs
//! are shells) live here.

use std::collections::HashSet;

use tree_sitter::Node;

use super::input::reads_as_input;
use super::sql::{
    before_close, has_placeholders, is_sql_literal, may_be_sql, names_position, sql_confidence,
};
use super::{Hit, Input, is_plus, lines_of, plus_operands};
use crate::rules::{CheckId, Confidence};
use crate::syntax::Syntax;

/// Runs the Rust checks.
pub(super) fn check(input: &Input<'_>, syntax: &Syntax<'_>, out: &mut Vec<Hit>) {
    let consts = const_names(syntax);
    let values = Values {
        syntax,
        consts: &consts,
    };
    syntax.walk(|node, kind| match kind {
        "unsafe_block" => unsafe_block(input, syntax, node, out),
        "impl_item" => unsafe_impl(input, syntax, node, out),
        "macro_invocation" => sql_format(&values, node, out),
        "binary_expression" => sql_concat(&values, node, out),
        "call_expression" => shell_command(&values, node, out),
        _ => {}
    });
}

// --- unsafe --------------------------------------------------------------------------------

/// An `unsafe { … }` block without a `SAFETY:` comment. Blocks inside an `unsafe fn` are
/// checked too: since Rust 2024 (`unsafe_op_in_unsafe_fn`) an unsafe fn's body is not an
/// unsafe context by itself, and each block inside it states its own justification; but the
/// function's contract (its `# Safety` section) usually covers them, so they are reported
/// one severity lower. One that is the whole body of an `unsafe fn` (what the edition
/// migration writes) is covered by that contract.
fn unsafe_block(input: &Input<'_>, syntax: &Syntax<'_>, node: Node<'_>, out: &mut Vec<Hit>) {
    if is_unsafe_fn_body(node) || justified(input, syntax, node) {
        return;
    }
    let row = node.start_position().row;
    let lower = u8::from(in_unsafe_fn(node));
    out.push(
        Hit::new(CheckId::UnsafeBlock, row..row + 1)
            .lower(lower)
            .with("what", "`unsafe` block"),
    );
}

/// Whether `node` is inside an `unsafe fn`.
fn in_unsafe_fn(node: Node<'_>) -> bool {
    let mut at = node.parent();
    while let Some(n) = at {
        if n.kind() == "function_item" {
            return is_unsafe_fn(n);
        }
        at = n.parent();
    }
    false
}

/// Whether the function item `f` is declared `unsafe`.
fn is_unsafe_fn(f: Node<'_>) -> bool {
    child_of_kind(f, "function_modifiers")
        .and_then(|m| child_of_kind(m, "unsafe"))
        .is_some()
}

/// Whether the unsafe block `node` is all there is in the body of an `unsafe fn`.
fn is_unsafe_fn_body(node: Node<'_>) -> bool {
    let statement = match node.parent() {
        Some(p) if p.kind() == "expression_statement" => p,
        _ => node,
    };
    let Some(body) = statement.parent().filter(|b| b.kind() == "block") else {
        return false;
    };
    let mut cursor = body.walk();
    let alone = body
        .named_children(&mut cursor)
        .filter(|c| !is_comment(c.kind()))
        .all(|c| c.id() == statement.id());
    let unsafe_fn = body
        .parent()
        .is_some_and(|f| f.kind() == "function_item" && is_unsafe_fn(f));
    alone && unsafe_fn
}

/// The first child of `node` (named or not) of `kind`.
fn child_of_kind<'t>(node: Node<'t>, kind: &str) -> Option<Node<'t>> {
    (0..node.child_count())
        .filter_map(|i| node.child(i))
        .find(|c| c.kind() == kind)
}

/// An `unsafe impl` without a `SAFETY:` comment above it (or on its line).
fn unsafe_impl(input: &Input<'_>, syntax: &Syntax<'_>, node: Node<'_>, out: &mut Vec<Hit>) {
    if child_of_kind(node, "unsafe").is_none() || justified(input, syntax, node) {
        return;
    }
    let row = node.start_position().row;
    out.push(Hit::new(CheckId::UnsafeBlock, row..row + 1).with("what", "`unsafe impl`"));
}

/// Whether `node` (an unsafe block or impl) has a `SAFETY:` comment: on its first line, as
/// the first thing inside its block, or in the comments right above it or above any of the
/// expressions around it up to the statement or item that holds it (attributes may stand
/// between the comment and the code).
fn justified(input: &Input<'_>, syntax: &Syntax<'_>, node: Node<'_>) -> bool {
    let row = node.start_position().row;
    // Comments are in order: those starting on the row are a run of them.
    let from = syntax
        .comments
        .partition_point(|c| input.file.line_at(c.bytes.start) < row);
    let same_line = syntax.comments[from..]
        .iter()
        .take_while(|c| input.file.line_at(c.bytes.start) == row)
        .any(|c| is_safety(&syntax.text[c.bytes.clone()]));
    if same_line {
        return true;
    }
    let first_inside = node
        .child_by_field_name("body")
        .or_else(|| node.named_child(0).filter(|b| b.kind() == "block"))
        .and_then(|b| b.named_child(0))
        .is_some_and(|c| is_comment(c.kind()) && is_safety(syntax.text_of(c)));
    if first_inside {
        return true;
    }
    let mut at = Some(node);
    while let Some(n) = at {
        if safety_above(input, syntax, n) {
            return true;
        }
        let holder = n.parent().is_none_or(|p| {
            matches!(
                p.kind(),
                "block" | "declaration_list" | "source_file" | "match_block"
            )
        });
        if holder {
            return false;
        }
        at = n.parent();
    }
    false
}

/// Whether the comments and attributes right above `node` hold a `SAFETY:` comment. Blank
/// lines may stand between them (as for Clippy's `undocumented_unsafe_blocks`); code may
/// not.
fn safety_above(input: &Input<'_>, syntax: &Syntax<'_>, node: Node<'_>) -> bool {
    let mut row = node.start_position().row;
    let mut prev = node.prev_sibling();
    while let Some(p) = prev {
        let kind = p.kind();
        let end = p.end_position().row;
        let blank_between = (end + 1..row).all(|i| input.file.line(i).trim().is_empty());
        if !(is_comment(kind) || kind == "attribute_item") || !blank_between {
            return false;
        }
        if is_comment(kind) && is_safety(syntax.text_of(p)) {
            return true;
        }
        row = p.start_position().row;
        prev = p.prev_sibling();
    }
    false
}

fn is_comment(kind: &str) -> bool {
    matches!(kind, "line_comment" | "block_comment")
}

/// A comment that says `SAFETY:` (any case).
fn is_safety(comment: &str) -> bool {
    comment.to_ascii_lowercase().contains("safety:")
}

// --- values --------------------------------------------------------------------------------

pub(super) use super::Origin;

/// A constant's name by convention: `ALL_CAPS` (at least two characters).
pub(super) fn all_caps(name: &str) -> bool {
    name.len() > 1
        && name.chars().any(|c| c.is_ascii_uppercase())
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// Whether a call named `function` quotes or escapes what it is given
/// (`pq.QuoteIdentifier`, `escape_string`): its result is not raw input.
pub(super) fn sanitises(function: &str) -> bool {
    let lower = function.to_ascii_lowercase();
    ["quote", "escape", "sanitiz", "sanitis"]
        .iter()
        .any(|w| lower.contains(w))
}

/// Method calls that convert a value without changing where it comes from.
const CONVERSIONS: &[&str] = &[
    "to_string",
    "to_owned",
    "clone",
    "as_str",
    "as_ref",
    "into",
    "display",
    "to_string_lossy",
    "as_deref",
    "borrow",
];

/// The names of the file's `const` and `static` items.
fn const_names(syntax: &Syntax<'_>) -> HashSet<String> {
    let mut out = HashSet::new();
    syntax.walk(|node, kind| {
        if matches!(kind, "const_item" | "static_item")
            && let Some(name) = node.child_by_field_name("name")
        {
            out.insert(syntax.text_of(name).to_owned());
        }
    });
    out
}

/// What the values of a file are judged with.
struct Values<'s, 'a> {
    syntax: &'s Syntax<'a>,
    consts: &'s HashSet<String>,
}

impl Values<'_, '_> {
    /// Where the expression `node` comes from.
    fn origin(&self, node: Node<'_>) -> Origin {
        match node.kind() {
            "string_literal" | "raw_string_literal" | "char_literal" | "integer_literal"
            | "float_literal" | "boolean_literal" => Origin::Literal,
            "identifier" => self.name_origin(self.syntax.text_of(node), node),
            "scoped_identifier" => {
                let last = node
                    .child_by_field_name("name")
                    .map_or("", |n| self.syntax.text_of(n));
                if all_caps(last) {
                    Origin::Literal
                } else {
                    Origin::Unknown
                }
            }
            "reference_expression" => node
                .child_by_field_name("value")
                .map_or(Origin::Unknown, |n| self.origin(n)),
            "unary_expression" | "parenthesized_expression" | "try_expression" => node
                .named_child(0)
                .map_or(Origin::Unknown, |n| self.origin(n)),
            "field_expression" | "index_expression" => {
                let root = node
                    .child_by_field_name("value")
                    .or_else(|| node.named_child(0));
                match root.map(|r| self.origin(r)) {
                    Some(Origin::Input) => Origin::Input,
                    _ if reads_as_input(self.syntax.text_of(node), false) => Origin::Input,
                    _ => Origin::Unknown,
                }
            }
            "call_expression" => self.call_origin(node),
            "macro_invocation" => self.format_values(node).map_or(Origin::Unknown, |f| {
                f.values
                    .iter()
                    .map(|v| v.origin)
                    .max()
                    .unwrap_or(Origin::Literal)
            }),
            "binary_expression" => {
                let mut cursor = node.walk();
                node.named_children(&mut cursor)
                    .map(|c| self.origin(c))
                    .max()
                    .unwrap_or(Origin::Unknown)
            }
            _ => Origin::Unknown,
        }
    }

    /// A call's result: what it converts (`x.to_string()`, `String::from(x)`), not raw
    /// input when it quotes or escapes, input when its name or an argument is, else of
    /// unknown origin.
    fn call_origin(&self, node: Node<'_>) -> Origin {
        let Some(function) = node.child_by_field_name("function") else {
            return Origin::Unknown;
        };
        if function.kind() == "field_expression"
            && let Some(method) = function.child_by_field_name("field")
            && CONVERSIONS.contains(&self.syntax.text_of(method))
            && let Some(receiver) = function.child_by_field_name("value")
        {
            return self.origin(receiver);
        }
        let name = self.syntax.text_of(function);
        let args: Vec<Node<'_>> = node
            .child_by_field_name("arguments")
            .map(|a| a.named_children(&mut a.walk()).collect())
            .unwrap_or_default();
        if (name.ends_with("::from") || name.ends_with("::new"))
            && let Some(arg) = args.first()
        {
            return self.origin(*arg);
        }
        if sanitises(name) {
            Origin::Literal
        } else if reads_as_input(name, false)
            || args.iter().any(|a| self.origin(*a) == Origin::Input)
        {
            Origin::Input
        } else {
            Origin::Unknown
        }
    }

    /// Where the variable `name` used at `at` comes from.
    fn name_origin(&self, name: &str, at: Node<'_>) -> Origin {
        if all_caps(name) || self.consts.contains(name) {
            Origin::Literal
        } else if let Some(ty) = parameter_type(self.syntax, name, at) {
            if is_number_type(ty) {
                Origin::Unknown
            } else {
                Origin::Input
            }
        } else if reads_as_input(name, false) {
            Origin::Input
        } else {
            Origin::Unknown
        }
    }

    /// The format string of a formatting macro (`format!`, `format_args!`, `write!`,
    /// `writeln!`) and where each value formatted into it comes from; `None` for other
    /// macros.
    fn format_values(&self, node: Node<'_>) -> Option<Formatted<'_>> {
        let name = node
            .child_by_field_name("macro")
            .map(|m| self.syntax.text_of(m))?;
        let name = name.rsplit("::").next().unwrap_or(name);
        if !matches!(name, "format" | "format_args" | "write" | "writeln") {
            return None;
        }
        let tree = node
            .named_children(&mut node.walk())
            .find(|c| c.kind() == "token_tree")?;
        let args = split_args(tree);
        let at = args.iter().position(|a| {
            a.len() == 1 && matches!(a[0].kind(), "string_literal" | "raw_string_literal")
        })?;
        let template = self.syntax.text_of(args[at][0]);
        let positional: Vec<&[Node<'_>]> = args[at + 1..]
            .iter()
            .filter(|a| !is_named_arg(a))
            .map(Vec::as_slice)
            .collect();
        let mut values = Vec::new();
        let mut next = 0;
        for (spec, offset) in placeholders(template) {
            let name = names_position(&template[..offset]);
            let value = |tokens: &[Node<'_>]| Value {
                origin: self.tokens_origin(tokens),
                label: tokens_text(self.syntax, tokens),
                name,
            };
            let index = if spec.is_empty() {
                next += 1;
                Some(next - 1)
            } else {
                spec.parse::<usize>().ok()
            };
            if let Some(i) = index {
                values.extend(positional.get(i).map(|a| value(a)));
                continue;
            }
            let named = args[at + 1..]
                .iter()
                .find(|a| is_named_arg(a) && self.syntax.text_of(a[0]) == spec);
            values.push(match named {
                Some(a) => value(&a[2..]),
                // An inline capture (`{id}`): a variable of the code around.
                None => Value {
                    origin: self.name_origin(spec, node),
                    label: spec.to_owned(),
                    name,
                },
            });
        }
        Some(Formatted { template, values })
    }

    /// Where a macro argument, as tokens, comes from: literals and constants, a variable,
    /// a field of one, or a call (a call that only converts is judged by its receiver).
    fn tokens_origin(&self, tokens: &[Node<'_>]) -> Origin {
        let tokens: Vec<Node<'_>> = tokens
            .iter()
            .copied()
            .skip_while(|t| matches!(t.kind(), "&" | "*" | "mut"))
            .collect();
        let Some(first) = tokens.first() else {
            return Origin::Unknown;
        };
        if tokens.len() == 1 {
            return match first.kind() {
                "identifier" | "self" => self.name_origin(self.syntax.text_of(*first), *first),
                "string_literal" | "raw_string_literal" | "char_literal" | "integer_literal"
                | "float_literal" | "boolean_literal" => Origin::Literal,
                _ => Origin::Unknown,
            };
        }
        // A path (`Self::TABLE`, `consts::NAME`): a constant when its last segment is one.
        if tokens
            .iter()
            .all(|t| matches!(t.kind(), "identifier" | "::" | "self" | "super" | "crate"))
        {
            let last = tokens.last().map_or("", |t| self.syntax.text_of(*t));
            return if all_caps(last) {
                Origin::Literal
            } else {
                Origin::Unknown
            };
        }
        // A field or a call on a variable: input when the variable or a name in it is; a
        // call that quotes or escapes is not raw input.
        let text = tokens_text(self.syntax, &tokens);
        let calls = tokens.iter().enumerate().any(|(i, t)| {
            t.kind() == "token_tree"
                && i > 0
                && !CONVERSIONS.contains(&self.syntax.text_of(tokens[i - 1]))
        });
        if calls && sanitises(&text) {
            return Origin::Literal;
        }
        let root = match first.kind() {
            "identifier" => self.name_origin(self.syntax.text_of(*first), *first),
            _ => Origin::Unknown,
        };
        if root == Origin::Input || reads_as_input(&text, false) {
            Origin::Input
        } else {
            Origin::Unknown
        }
    }
}

/// A formatting macro's template and its values.
struct Formatted<'a> {
    /// The format string, quotes included.
    template: &'a str,
    /// The values formatted into it, in order of their placeholders.
    values: Vec<Value>,
}

/// A value formatted into a template.
struct Value {
    origin: Origin,
    /// How it is written (for the message).
    label: String,
    /// It stands where a name goes (see [`names_position`]).
    name: bool,
}

/// The arguments of a macro's token tree, split at its top-level commas.
fn split_args(tree: Node<'_>) -> Vec<Vec<Node<'_>>> {
    let mut out: Vec<Vec<Node<'_>>> = vec![Vec::new()];
    let count = tree.child_count();
    for i in 0..count {
        let Some(child) = tree.child(i) else { continue };
        let kind = child.kind();
        if (i == 0 || i + 1 == count) && matches!(kind, "(" | ")" | "[" | "]" | "{" | "}") {
            continue;
        }
        if kind == "," {
            out.push(Vec::new());
        } else if !is_comment(kind)
            && let Some(last) = out.last_mut()
        {
            last.push(child);
        }
    }
    out.retain(|a| !a.is_empty());
    out
}

/// `name = value` in a macro's arguments.
fn is_named_arg(tokens: &[Node<'_>]) -> bool {
    tokens.len() > 2 && tokens[0].kind() == "identifier" && tokens[1].kind() == "="
}

/// The source text a run of tokens spans.
fn tokens_text(syntax: &Syntax<'_>, tokens: &[Node<'_>]) -> String {
    match (tokens.first(), tokens.last()) {
        (Some(a), Some(b)) => syntax.text[a.start_byte()..b.end_byte()].to_owned(),
        _ => String::new(),
    }
}

/// The argument part of each `{…}` placeholder of a format string (before any `:`): empty
/// for the next positional argument, a number or a name; with the placeholder's offset.
/// `{{` and `}}` are not placeholders.
fn placeholders(template: &str) -> Vec<(&str, usize)> {
    let mut out = Vec::new();
    let bytes = template.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'{' if bytes.get(i + 1) == Some(&b'{') => i += 2,
            b'{' => {
                let Some(len) = template[i + 1..].find('}') else {
                    break;
                };
                let inner = &template[i + 1..i + 1 + len];
                out.push((inner.split(':').next().unwrap_or("").trim(), i));
                i += len + 2;
            }
            _ => i += 1,
        }
    }
    out
}

/// The type of the parameter `name` of the function or closure around `at` (`""` when the
/// closure does not say); `None` if it is not a parameter.
fn parameter_type<'a>(syntax: &Syntax<'a>, name: &str, at: Node<'_>) -> Option<&'a str> {
    let mut node = at.parent();
    while let Some(n) = node {
        if matches!(n.kind(), "function_item" | "closure_expression")
            && let Some(params) = n.child_by_field_name("parameters")
        {
            let mut cursor = params.walk();
            let found = params.named_children(&mut cursor).find(|p| {
                let pattern = p.child_by_field_name("pattern").unwrap_or(*p);
                syntax.text_of(pattern).trim_start_matches("mut ").trim() == name
            });
            if let Some(p) = found {
                return Some(
                    p.child_by_field_name("type")
                        .map_or("", |t| syntax.text_of(t)),
                );
            }
            if n.kind() == "function_item" {
                return None;
            }
        }
        node = n.parent();
    }
    None
}

/// A number or boolean type (behind references): its text cannot break out of quoting.
fn is_number_type(ty: &str) -> bool {
    matches!(
        ty.trim_start_matches(['&', ' ']).trim_start_matches("mut "),
        "i8" | "i16"
            | "i32"
            | "i64"
            | "i128"
            | "isize"
            | "u8"
            | "u16"
            | "u32"
            | "u64"
            | "u128"
            | "usize"
            | "f32"
            | "f64"
            | "bool"
    )
}

// --- SQL -----------------------------------------------------------------------------------

/// `format!("SELECT … {}", x)` (and `{x}`, `write!`) with a value that is not a literal or
/// constant. SQL that also takes parameters (`?`, `$1`) gets low confidence: what is
/// formatted into it is most likely a table or column name.
fn sql_format(values: &Values<'_, '_>, node: Node<'_>, out: &mut Vec<Hit>) {
    // Without a word SQL text starts from, the macro's template is not SQL, and its values
    // are not read.
    if !may_be_sql(values.syntax.text_of(node)) {
        return;
    }
    let Some(formatted) = values.format_values(node) else {
        return;
    };
    if !is_sql_literal(formatted.template) {
        return;
    }
    let worst = formatted
        .values
        .iter()
        .filter_map(|v| sql_confidence(v.origin, v.name).map(|c| (c, v)))
        .min_by_key(|(c, _)| *c);
    let Some((mut confidence, worst)) = worst else {
        return;
    };
    if has_placeholders(formatted.template) {
        confidence = Confidence::Low;
    }
    let how = format!("formatted with `{}`", worst.label);
    out.push(
        Hit::new(CheckId::SqlInjection, lines_of(node))
            .confidence(confidence)
            .with("how", how),
    );
}

/// `String::from("SELECT …") + x` (a chain of `+` holding SQL text and a value that is not
/// a literal or constant), reported once, for the whole chain.
fn sql_concat(values: &Values<'_, '_>, node: Node<'_>, out: &mut Vec<Hit>) {
    let syntax = values.syntax;
    out.extend(sql_concatenation(
        syntax,
        node,
        |n| literal_text(syntax, n),
        |n| values.origin(n),
    ));
}

/// A chain of `+` (Rust, Go) holding SQL text (by `literal`) and a value that is not a
/// literal or constant, judged by the worst `origin` of its values (a value right after text
/// that ends where a table name goes is a hint): one hit for the whole chain, at its
/// outermost `+`.
pub(super) fn sql_concatenation<'a>(
    syntax: &Syntax<'a>,
    node: Node<'_>,
    literal: impl Fn(Node<'_>) -> Option<&'a str>,
    origin: impl Fn(Node<'_>) -> Origin,
) -> Option<Hit> {
    if !is_plus(syntax, node) || node.parent().is_some_and(|p| is_plus(syntax, p)) {
        return None;
    }
    let operands = plus_operands(syntax, node);
    let texts: Vec<Option<&str>> = operands.iter().map(|o| literal(*o)).collect();
    if !texts.iter().flatten().any(|t| is_sql_literal(t)) {
        return None;
    }
    let (confidence, operand) = operands
        .iter()
        .enumerate()
        .filter(|(i, _)| texts[*i].is_none())
        .filter_map(|(i, o)| {
            let before = i.checked_sub(1).and_then(|b| texts[b]).map(before_close);
            let name = before.is_some_and(names_position);
            sql_confidence(origin(*o), name).map(|c| (c, *o))
        })
        .min_by_key(|(c, _)| *c)?;
    let how = format!("concatenated with `{}`", syntax.text_of(operand));
    Some(
        Hit::new(CheckId::SqlInjection, lines_of(node))
            .confidence(confidence)
            .with("how", how),
    )
}

/// The text of a string literal, also behind `&`, `String::from(…)` or `.to_string()`.
fn literal_text<'a>(syntax: &Syntax<'a>, node: Node<'_>) -> Option<&'a str> {
    match node.kind() {
        "string_literal" | "raw_string_literal" => Some(syntax.text_of(node)),
        "reference_expression" => literal_text(syntax, node.child_by_field_name("value")?),
        "call_expression" => {
            let function = node.child_by_field_name("function")?;
            let inner = if function.kind() == "field_expression" {
                let method = syntax.text_of(function.child_by_field_name("field")?);
                if !CONVERSIONS.contains(&method) {
                    return None;
                }
                function.child_by_field_name("value")?
            } else if syntax.text_of(function).ends_with("::from") {
                node.child_by_field_name("arguments")?.named_child(0)?
            } else {
                return None;
            };
            literal_text(syntax, inner)
        }
        _ => None,
    }
}

// --- shell ---------------------------------------------------------------------------------

/// Programs that run their `-c` argument as a shell command.
pub(super) const SHELLS: &[&str] = &[
    "sh",
    "bash",
    "zsh",
    "dash",
    "ash",
    "ksh",
    "/bin/sh",
    "/bin/bash",
    "/usr/bin/sh",
    "/usr/bin/bash",
    "/bin/zsh",
    "cmd",
    "cmd.exe",
    "powershell",
    "pwsh",
];

/// Whether `flag` is a shell's "run this command" option (`-c`, `-lc`, `-ec`, `/C`).
pub(super) fn is_command_flag(flag: &str) -> bool {
    let lower = flag.to_ascii_lowercase();
    lower == "/c"
        || lower == "-command"
        || (lower.len() <= 4
            && lower.starts_with('-')
            && lower[1..].chars().all(|c| c.is_ascii_lowercase())
            && lower.ends_with('c'))
}

/// `Command::new("sh")` with `.arg("-c").arg(x)` or `.args(["-c", x])`, `x` not a literal
/// or constant: in one chain, or in a chain on the variable a `let` bound the command to
/// (`let mut cmd = Command::new("sh"); cmd.arg("-c").arg(x);`). Looked at from the top of
/// each chain, which holds the new code of the change when any of the chain is new.
fn shell_command(values: &Values<'_, '_>, node: Node<'_>, out: &mut Vec<Hit>) {
    let syntax = values.syntax;
    // A script is passed with `.arg` or `.args` somewhere in the chain the call ends; most
    // calls have neither, and asking a node for its parent walks down from the root.
    if !syntax.text_of(node).contains("arg") {
        return;
    }
    if node
        .parent()
        .is_some_and(|p| p.kind() == "field_expression")
    {
        return;
    }
    let root = chain_root(node);
    let (program, mut args) = match root.kind() {
        "call_expression" => match shell_program(syntax, root) {
            Some(program) => (program, Vec::new()),
            None => return,
        },
        "identifier" => match bound_command(syntax, root) {
            Some((program, command)) => (program, chain_args(syntax, command)),
            None => return,
        },
        _ => return,
    };
    let own = args.len();
    args.extend(chain_args(syntax, root));
    let flag = args.iter().position(|a| {
        literal_text(syntax, *a).is_some_and(|t| is_command_flag(t.trim_matches('"')))
    });
    // A script passed where the command was bound is reported with that chain.
    let Some(script) = flag
        .map(|i| i + 1)
        .filter(|i| *i >= own)
        .and_then(|i| args.get(i))
    else {
        return;
    };
    let Some(confidence) = values.origin(*script).confidence() else {
        return;
    };
    let how = format!("`{program} -c` with `{}`", syntax.text_of(*script));
    out.push(
        Hit::new(CheckId::ShellInjection, lines_of(node))
            .at(script.start_position().row)
            .confidence(confidence)
            .with("how", how),
    );
}

/// The receiver a method chain starts from (`Command::new("sh")` in
/// `Command::new("sh").arg("-c")`).
fn chain_root(top: Node<'_>) -> Node<'_> {
    let mut root = top;
    while root.kind() == "call_expression"
        && let Some(function) = root
            .child_by_field_name("function")
            .filter(|f| f.kind() == "field_expression")
        && let Some(value) = function.child_by_field_name("value")
    {
        root = value;
    }
    root
}

/// The shell a `Command::new("sh")` call runs, without quotes; `None` for other calls and
/// programs.
fn shell_program<'a>(syntax: &Syntax<'a>, call: Node<'_>) -> Option<&'a str> {
    let function = call.child_by_field_name("function")?;
    if !syntax.text_of(function).ends_with("Command::new") {
        return None;
    }
    let program = call
        .child_by_field_name("arguments")
        .and_then(|a| a.named_child(0))
        .and_then(|p| literal_text(syntax, p))?
        .trim_matches('"');
    SHELLS.contains(&program).then_some(program)
}

/// For a variable used at `at`: the shell and the `Command::new(…)` call of the nearest
/// `let` above it in the blocks around that binds it to a shell command.
fn bound_command<'a, 't>(syntax: &Syntax<'a>, at: Node<'t>) -> Option<(&'a str, Node<'t>)> {
    let name = syntax.text_of(at);
    let mut inner = at;
    while let Some(parent) = inner.parent() {
        if parent.kind() == "block" {
            let mut cursor = parent.walk();
            let binding = parent
                .named_children(&mut cursor)
                .take_while(|c| c.end_byte() <= at.start_byte())
                .filter(|c| c.kind() == "let_declaration")
                .filter(|l| {
                    l.child_by_field_name("pattern").is_some_and(|p| {
                        syntax.text_of(p).trim_start_matches("mut ").trim() == name
                    })
                })
                .last();
            if let Some(value) = binding.and_then(|l| l.child_by_field_name("value")) {
                let command = chain_root(value);
                return shell_program(syntax, command).map(|p| (p, command));
            }
        }
        if parent.kind() == "function_item" {
            return None;
        }
        inner = parent;
    }
    None
}

/// The arguments the `.arg(x)` and `.args([…])` calls chained on `start` pass, in order.
fn chain_args<'t>(syntax: &Syntax<'_>, start: Node<'t>) -> Vec<Node<'t>> {
    let mut args = Vec::new();
    let mut top = start;
    while let Some(field) = top.parent().filter(|p| p.kind() == "field_expression")
        && let Some(call) = field.parent().filter(|c| c.kind() == "call_expression")
    {
        let method = field
            .child_by_field_name("field")
            .map_or("", |f| syntax.text_of(f));
        let list = call.child_by_field_name("arguments");
        match (method, list.and_then(|l| l.named_child(0))) {
            ("arg", Some(a)) => args.push(a),
            ("args", Some(a)) => {
                let array = if a.kind() == "reference_expression" {
                    a.child_by_field_name("value").unwrap_or(a)
                } else {
                    a
                };
                if array.kind() == "array_expression" {
                    args.extend(array.named_children(&mut array.walk()));
                }
            }
            _ => {}
        }
        top = call;
    }
    args
}

#[cfg(test)]
mod tests {
    use crate::checks::{found, graded, lines, review_texts};
    use crate::rules::{Confidence, Severity};

    #[test]
    fn unsafe_without_a_safety_comment_is_found() {
        let bare = "pub fn f(p: *const u8) -> u8 {\n    unsafe { *p }\n}\n";
        assert_eq!(lines("src/lib.rs", bare, "unsafe-block"), vec![2]);
        assert_eq!(
            graded("src/lib.rs", bare, "unsafe-block"),
            vec![(Severity::Medium, Confidence::High)]
        );
        // A comment that does not say SAFETY, or one with code between it and the block.
        let other = "pub fn f(p: *const u8) -> u8 {\n    // read it\n    unsafe { *p }\n}\n";
        assert_eq!(lines("src/lib.rs", other, "unsafe-block"), vec![3]);
        let apart = "pub fn f(p: *const u8) -> u8 {\n    // SAFETY: p is valid\n    let q = p;\n    unsafe { *q }\n}\n";
        assert_eq!(lines("src/lib.rs", apart, "unsafe-block"), vec![4]);
        // Inside an unsafe fn a block still states why it is sound (Rust 2024), one severity
        // lower: the function's contract usually covers it.
        let in_unsafe_fn =
            "pub unsafe fn f(p: *const u8) -> u8 {\n    let q = p.add(1);\n    unsafe { *q }\n}\n";
        assert_eq!(lines("src/lib.rs", in_unsafe_fn, "unsafe-block"), vec![3]);
        assert_eq!(
            graded("src/lib.rs", in_unsafe_fn, "unsafe-block"),
            vec![(Severity::Low, Confidence::High)]
        );
        let imp = "struct P(*mut u8);\nunsafe impl Send for P {}\n";
        assert_eq!(lines("src/lib.rs", imp, "unsafe-block"), vec![2]);
        let reason = &review_texts("src/lib.rs", "", imp)[0].reason;
        assert!(reason.starts_with("`unsafe impl` without"), "{reason}");
    }

    #[test]
    fn unsafe_with_a_safety_comment_is_silent() {
        let cases = [
            // The false positive: the comment on the line above.
            "pub fn f(p: *const u8) -> u8 {\n    // SAFETY: the caller passes a valid pointer.\n    unsafe { *p }\n}\n",
            // Above the statement holding the block, with a second comment line and an
            // attribute between.
            "pub fn f(p: *const u8) -> u8 {\n    // Safety: p comes from a live Box;\n    // it outlives this call.\n    #[allow(clippy::let_and_return)]\n    let v = unsafe { *p };\n    v\n}\n",
            // Blank lines between (as Clippy allows).
            "pub fn f(p: *const u8) -> u8 {\n    // SAFETY: valid\n\n    unsafe { *p }\n}\n",
            // On the same line, and first inside the block.
            "pub fn f(p: *const u8) -> u8 {\n    let v = unsafe { *p }; // SAFETY: valid\n    v\n}\n",
            "pub fn f(p: *const u8) -> u8 {\n    unsafe {\n        // SAFETY: valid\n        *p\n    }\n}\n",
            // Above an argument of a call spanning lines, and above a match arm.
            "pub fn f(p: *const u8) -> u8 {\n    g(\n        1,\n        // SAFETY: valid\n        unsafe { *p },\n    )\n}\n",
            "pub fn f(p: Option<*const u8>) -> u8 {\n    match p {\n        // SAFETY: valid\n        Some(p) => unsafe { *p },\n        None => 0,\n    }\n}\n",
            "struct P(*mut u8);\n// SAFETY: P owns its buffer.\nunsafe impl Send for P {}\n",
            // A block that is the whole body of an unsafe fn: the fn's contract covers it.
            "/// # Safety\n/// p must be valid.\npub unsafe fn f(p: *const u8) -> u8 {\n    unsafe { *p }\n}\n",
            "pub unsafe fn g(p: *mut u8) {\n    unsafe {\n        *p = 0;\n    }\n}\n",
            // `unsafe fn` declarations are not findings.
            "/// # Safety\n/// p must be valid.\npub unsafe fn f(p: *const u8) -> u8 {\n    // SAFETY: the caller's contract.\n    unsafe { *p }\n}\n",
            // Test code.
            "#[cfg(test)]\nmod tests {\n    #[test]\n    fn t() {\n        let x = 1u8;\n        assert_eq!(unsafe { *(&x as *const u8) }, 1);\n    }\n}\n",
        ];
        for case in cases {
            assert!(
                lines("src/lib.rs", case, "unsafe-block").is_empty(),
                "{case}"
            );
        }
        // The comment may be old and only the code new.
        let old = "pub struct P(*mut u8);\n\n// SAFETY: P owns its buffer.\n";
        let new = format!("{old}unsafe impl Send for P {{}}\n");
        assert!(found("src/lib.rs", old, &new, "unsafe-block").is_empty());
        let old = "pub fn f(p: *const u8) -> u8 {\n    // SAFETY: the caller's pointer is valid.\n    0\n}\n";
        let new = "pub fn f(p: *const u8) -> u8 {\n    // SAFETY: the caller's pointer is valid.\n    unsafe { *p }\n}\n";
        assert!(found("src/lib.rs", old, new, "unsafe-block").is_empty());
        // An old block is not the change's: adding a line inside it does not report it.
        let old = "pub fn f(p: *const u8) -> u8 {\n    unsafe {\n        *p\n    }\n}\n";
        let new = "pub fn f(p: *const u8) -> u8 {\n    unsafe {\n        let v = *p;\n        v\n    }\n}\n";
        assert!(found("src/lib.rs", old, new, "unsafe-block").is_empty());
    }

    #[test]
    fn prints_count_only_in_library_code() {
        let print = "pub fn f() {\n    println!(\"here\");\n}\n";
        assert_eq!(
            graded("src/store.rs", print, "println"),
            vec![(Severity::Medium, Confidence::Medium)]
        );
        // How a build script talks to Cargo; programs, examples and benches print.
        let cargo = "fn main() {\n    println!(\"cargo:rerun-if-changed=build.rs\");\n}\n";
        for path in [
            "build.rs",
            "crates/x/build.rs",
            "src/main.rs",
            "src/tool.rs",
        ] {
            assert!(lines(path, cargo, "println").is_empty(), "{path}");
        }
        // Test helpers a crate declares `#[cfg(test)] mod testutil;` are test code too.
        for path in [
            "src/bin/tool.rs",
            "examples/demo.rs",
            "benches/parse.rs",
            "crates/searcher/src/testutil.rs",
            "src/test_helpers.rs",
        ] {
            assert!(lines(path, print, "println").is_empty(), "{path}");
        }
        // Errors to stderr are legitimate; test code may print.
        let stderr = "pub fn f() {\n    eprintln!(\"warning\");\n    eprint!(\"x\");\n}\n";
        assert!(lines("src/lib.rs", stderr, "println").is_empty());
        let tests = "pub fn f() {}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn t() {\n        println!(\"debug\");\n    }\n}\n\n#[test]\nfn u() {\n    print!(\"x\");\n}\n";
        assert!(lines("src/lib.rs", tests, "println").is_empty());
    }

    #[test]
    fn debug_and_unfinished_macros_and_unwrap_in_library_code() {
        let code = "pub fn f(x: Option<u8>) -> u8 {\n    dbg!(x);\n    let v = x.unwrap();\n    if v == 0 {\n        todo!(\"zero\")\n    }\n    match g() {\n        Ok(()) => {}\n        Err(_) => {}\n    }\n    v\n}\n";
        assert_eq!(lines("src/lib.rs", code, "dbg-macro"), vec![2]);
        assert_eq!(lines("src/lib.rs", code, "unwrap"), vec![3]);
        assert_eq!(lines("src/lib.rs", code, "unfinished"), vec![5]);
        assert_eq!(lines("src/lib.rs", code, "ignored-error"), vec![9]);
        // Test code: none of them.
        let tests = format!("#[cfg(test)]\nmod tests {{\n{code}}}\n");
        for rule in ["dbg-macro", "unwrap", "unfinished", "ignored-error"] {
            assert!(lines("src/lib.rs", &tests, rule).is_empty(), "{rule}");
            assert!(lines("tests/it.rs", code, rule).is_empty(), "{rule}");
        }
        // unwrap is fine in examples and build scripts; in strings and comments nothing is code.
        assert!(lines("examples/a.rs", code, "unwrap").is_empty());
        assert!(lines("build.rs", code, "unwrap").is_empty());
        let text = "/// Call `x.unwrap()` or `todo!()` here.\npub const S: &str = \"dbg!(x)\";\n";
        for rule in ["dbg-macro", "unwrap", "unfinished"] {
            assert!(lines("src/lib.rs", text, rule).is_empty(), "{rule}");
        }
    }

    #[test]
    fn sql_formatted_from_input_is_critical() {
        let param = "pub fn find(db: &Db, id: &str) -> Rows {\n    db.run(&format!(\"SELECT * FROM users WHERE id = '{}'\", id))\n}\n";
        assert_eq!(lines("src/db.rs", param, "sql-injection"), vec![2]);
        assert_eq!(
            graded("src/db.rs", param, "sql-injection"),
            vec![(Severity::Critical, Confidence::High)]
        );
        // Inline arguments, and an input-like name.
        let inline = "pub fn find(db: &Db) -> Rows {\n    let q = format!(\"select * from t where name = '{user_name}'\");\n    db.run(&q)\n}\n";
        assert_eq!(
            graded("src/db.rs", inline, "sql-injection"),
            vec![(Severity::Critical, Confidence::High)]
        );
        // A local of unknown origin: medium.
        let local = "pub fn find(db: &Db) -> Rows {\n    let n = next();\n    db.run(&format!(\"DELETE FROM jobs WHERE n = {n}\"))\n}\n";
        assert_eq!(
            graded("src/db.rs", local, "sql-injection"),
            vec![(Severity::Critical, Confidence::Medium)]
        );
        // A number cannot break out of quoting: medium.
        let number = "pub fn drop_job(db: &Db, id: i64) {\n    db.run(&format!(\"DELETE FROM jobs WHERE id = {id}\"));\n}\n";
        assert_eq!(
            graded("src/db.rs", number, "sql-injection"),
            vec![(Severity::Critical, Confidence::Medium)]
        );
        // Concatenation, across lines: one finding, where the SQL starts.
        let concat = "pub fn find(db: &Db, name: &str) -> Rows {\n    db.run(\n        &(String::from(\"SELECT * FROM users \")\n            + \"WHERE name = '\"\n            + name\n            + \"'\"),\n    )\n}\n";
        assert_eq!(lines("src/db.rs", concat, "sql-injection"), vec![3]);
        assert_eq!(
            graded("src/db.rs", concat, "sql-injection"),
            vec![(Severity::Critical, Confidence::High)]
        );
        // Only the line adding the value is new: still found (the SQL spans it).
        let old = "pub fn find(db: &Db, name: &str) -> Rows {\n    db.run(\n        &(String::from(\"SELECT * FROM users \")\n            + \"WHERE name = '\"\n            + \"'\"),\n    )\n}\n";
        assert_eq!(found("src/db.rs", old, concat, "sql-injection").len(), 1);
    }

    #[test]
    fn sql_with_parameters_or_constants_is_silent() {
        let cases = [
            "pub async fn find(db: &Pool, id: i64) -> Row {\n    sqlx::query(\"SELECT * FROM t WHERE id = $1\").bind(id).fetch_one(db).await\n}\n",
            "const TABLE: &str = \"users\";\npub fn q() -> String {\n    format!(\"SELECT * FROM {} WHERE active\", TABLE)\n}\n",
            "pub fn q() -> String {\n    format!(\"SELECT * FROM {} WHERE id = {}\", Self::TABLE, 3)\n}\n",
            "pub fn greet(name: &str) -> String {\n    format!(\"hello {name}, select a file from the list\")\n}\n",
            "pub fn log(id: &str) {\n    log::info!(\"SELECT * FROM t WHERE id = {}\", id);\n}\n",
            "#[cfg(test)]\nmod tests {\n    fn q(id: &str) -> String {\n        format!(\"SELECT * FROM t WHERE id = {id}\")\n    }\n}\n",
        ];
        for case in cases {
            assert!(
                lines("src/db.rs", case, "sql-injection").is_empty(),
                "{case}"
            );
        }
        // A constant declared away from the change.
        let old = "pub const OWNER: &str = \"root\";\npub(crate) static ROLE: &str = \"admin\";\n\npub fn a() {}\n";
        let new = format!(
            "{old}\npub fn q() -> String {{\n    format!(\"SELECT * FROM t WHERE o = '{{}}' AND r = '{{}}'\", OWNER, ROLE)\n}}\n"
        );
        assert!(found("src/db.rs", old, &new, "sql-injection").is_empty());
        // Where a table name goes (names cannot be parameters): a hint, whatever the value.
        let table = "impl Store {\n    pub fn count(&self, who: &str) -> String {\n        format!(\"SELECT count(*) FROM \\\"{}\\\"\", self.table_for(who))\n    }\n}\n";
        assert_eq!(
            graded("src/db.rs", table, "sql-injection"),
            vec![(Severity::Critical, Confidence::Low)]
        );
        // A setting is not input; a call that quotes is not raw.
        let setting = "pub fn q(&self) -> String {\n    format!(\"SELECT * FROM t WHERE owner = '{}'\", self.config.owner_name)\n}\n";
        assert_eq!(
            graded("src/db.rs", setting, "sql-injection"),
            vec![(Severity::Critical, Confidence::Medium)]
        );
        let quoted = "pub fn q(name: &str) -> String {\n    format!(\"SELECT * FROM t WHERE n = {}\", quote_literal(name))\n}\n";
        assert!(lines("src/db.rs", quoted, "sql-injection").is_empty());
        // A table name formatted into SQL that binds its values: a hint only.
        let table = "pub fn q(table: &str) -> String {\n    format!(\"SELECT * FROM {table} WHERE id = ?\")\n}\n";
        assert_eq!(
            graded("src/db.rs", table, "sql-injection"),
            vec![(Severity::Critical, Confidence::Low)]
        );
    }

    #[test]
    fn shell_commands_built_from_values_are_critical() {
        let param = "pub fn ls(dir: &str) {\n    Command::new(\"sh\")\n        .arg(\"-c\")\n        .arg(format!(\"ls {}\", dir))\n        .status();\n}\n";
        assert_eq!(lines("src/run.rs", param, "shell-injection"), vec![4]);
        assert_eq!(
            graded("src/run.rs", param, "shell-injection"),
            vec![(Severity::Critical, Confidence::High)]
        );
        let local = "pub fn run() {\n    let cmd = build();\n    Command::new(\"bash\").args([\"-c\", &cmd]).status();\n}\n";
        assert_eq!(
            graded("src/run.rs", local, "shell-injection"),
            vec![(Severity::Critical, Confidence::Medium)]
        );
        // Bound to a variable first, its arguments added later.
        let later = "pub fn run(script: &str) {\n    let mut cmd = Command::new(\"sh\");\n    cmd.arg(\"-c\").arg(script);\n    cmd.status();\n}\n";
        assert_eq!(lines("src/run.rs", later, "shell-injection"), vec![3]);
        // Only the line passing the script is new.
        let old = "pub fn run(script: &str) {\n    Command::new(\"sh\")\n        .arg(\"-c\")\n        .status();\n}\n";
        let new = "pub fn run(script: &str) {\n    Command::new(\"sh\")\n        .arg(\"-c\")\n        .arg(script)\n        .status();\n}\n";
        assert_eq!(found("src/run.rs", old, new, "shell-injection").len(), 1);
        let old = "pub fn run(script: &str) {\n    let mut cmd = Command::new(\"sh\");\n    cmd.status();\n}\n";
        assert_eq!(found("src/run.rs", old, later, "shell-injection").len(), 1);
        let silent = [
            "pub fn run(script: &str) {\n    let mut cmd = Command::new(\"git\");\n    cmd.arg(\"-c\").arg(script);\n}\n",
            "pub fn git(args: &[String]) {\n    Command::new(\"git\").arg(\"-c\").arg(&args[0]).status();\n}\n",
            "pub fn ls() {\n    Command::new(\"sh\").arg(\"-c\").arg(\"ls -la\").status();\n}\n",
            "const DIR: &str = \"/tmp\";\npub fn ls() {\n    Command::new(\"sh\").arg(\"-c\").arg(format!(\"ls {DIR}\")).status();\n}\n",
        ];
        for case in silent {
            assert!(
                lines("src/run.rs", case, "shell-injection").is_empty(),
                "{case}"
            );
        }
    }

    #[test]
    fn tls_verification_off_is_found_outside_tests() {
        let code = "pub fn client() -> Client {\n    Client::builder().danger_accept_invalid_certs(true).build()\n}\n";
        assert_eq!(lines("src/http.rs", code, "tls-verify-off"), vec![2]);
        assert!(lines("tests/http.rs", code, "tls-verify-off").is_empty());
        let unit = format!("#[cfg(test)]\nmod tests {{\n{code}}}\n");
        assert!(lines("src/http.rs", &unit, "tls-verify-off").is_empty());
        let on = "pub fn client() -> Client {\n    Client::builder().danger_accept_invalid_certs(false).build()\n}\n";
        assert!(lines("src/http.rs", on, "tls-verify-off").is_empty());
    }

    #[test]
    fn sql_keywords_and_input_names() {
        assert!(crate::checks::sql::is_sql_literal(
            "\"SELECT * FROM users WHERE id = {}\""
        ));
        assert!(crate::checks::sql::is_sql_literal("\"select name from t\""));
        assert!(crate::checks::sql::is_sql_literal("\" WHERE id = \""));
        assert!(!crate::checks::sql::is_sql_literal(
            "\"please select a file; from now on\""
        ));
        assert!(super::reads_as_input("userId", false) && super::reads_as_input("req_body", false));
        assert!(
            !super::reads_as_input("table_name", false) && !super::reads_as_input("rename", false)
        );
    }
}
