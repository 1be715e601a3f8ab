//! SQL built from values in Python: string expressions whose text is SQL (or that extend a
//! name assigned SQL, or are the query given to `execute`), split into literal text and the
//! values joined in, each judged by where it comes from.

use tree_sitter::Node;

use super::origin::origin;
use super::{how_built, positional, scope_of};
use crate::checks::sql::{is_sql, names_position};
use crate::checks::{Hit, lines_of};
use crate::rules::{CheckId, Confidence};
use crate::syntax::Syntax;

/// SQL built from values: a string expression (concatenation over any number of lines, `%`
/// formatting, `.format(…)`, an f-string) whose literal text is SQL, that extends a name
/// assigned SQL before it in the same function (`q = "SELECT …"; q += " WHERE x = '%s'" % v`),
/// or that is the query of an `execute(…)`. Reported at the first value joined in that is not
/// a literal.
pub(super) fn sql(syntax: &Syntax<'_>, sql_names: &[SqlName], node: Node<'_>) -> Option<Hit> {
    let (expression, extends) = match node.kind() {
        "augmented_assignment" => {
            let operator = node.child_by_field_name("operator")?;
            let left = node.child_by_field_name("left")?;
            if operator.kind() != "+=" || !is_sql_name(sql_names, syntax.text_of(left), node) {
                return None;
            }
            let right = node.child_by_field_name("right")?;
            how_built(syntax, right)?;
            (right, true)
        }
        _ => {
            how_built(syntax, node)?;
            if is_flattened_by_parent(syntax, node) {
                return None;
            }
            (node, false)
        }
    };
    let mut parts = Parts::default();
    flatten(syntax, sql_names, expression, None, &mut parts);
    let sql_text =
        extends || parts.sql_name || is_sql(&parts.text) || is_query_argument(syntax, node);
    if !sql_text {
        return None;
    }
    let (value, how, origin) = parts
        .values
        .iter()
        .map(|(v, how, _)| (*v, *how, origin(syntax, 0, *v)))
        .max_by_key(|&(v, _, origin)| (origin, std::cmp::Reverse(v.start_byte())))?;
    let confidence = origin.confidence()?;
    let hit = Hit::new(CheckId::SqlInjection, lines_of(node))
        .at(value.start_position().row)
        .confidence(confidence)
        .with("how", how);
    // Where a table or column name goes (`FROM {}`, `INSERT INTO %s`), a value cannot be a
    // query parameter: formatting it in is how such SQL is written, and the name is rarely
    // input. A hint, two severities lower.
    let names_only = parts
        .values
        .iter()
        .all(|(_, _, before)| names_position(before));
    Some(if names_only {
        hit.confidence(Confidence::Low).lower(2)
    } else {
        hit
    })
}

/// The pieces of a string expression: its literal text and the values joined into it.
#[derive(Default)]
struct Parts<'t> {
    /// The literal text, pieces separated by a space.
    text: String,
    /// A part is a name assigned SQL before.
    sql_name: bool,
    /// The values joined in, each with how (`concatenation`, `% formatting`, …) and the
    /// literal text before it.
    values: Vec<(Node<'t>, &'static str, String)>,
}

/// Splits `node` into literal text and values; `how` is how the enclosing expression joins it
/// (`None`: `node` is the template itself).
fn flatten<'t>(
    syntax: &Syntax<'_>,
    sql_names: &[SqlName],
    node: Node<'t>,
    how: Option<&'static str>,
    parts: &mut Parts<'t>,
) {
    let own = how_built(syntax, node);
    match node.kind() {
        "parenthesized_expression" => {
            if let Some(inner) = node.named_child(0) {
                flatten(syntax, sql_names, inner, how, parts);
            }
        }
        "binary_operator" if own == Some("concatenation") => {
            for side in ["left", "right"] {
                if let Some(n) = node.child_by_field_name(side) {
                    flatten(syntax, sql_names, n, own, parts);
                }
            }
        }
        "binary_operator" if own == Some("% formatting") => {
            let start = parts.text.len();
            if let Some(template) = node.child_by_field_name("left") {
                template_part(syntax, sql_names, template, parts);
            }
            if let Some(values) = node.child_by_field_name("right") {
                format_values(values, "% formatting", start, parts);
            }
        }
        "call" if own == Some(".format()") => {
            let start = parts.text.len();
            if let Some(template) = node
                .child_by_field_name("function")
                .and_then(|f| f.child_by_field_name("object"))
            {
                template_part(syntax, sql_names, template, parts);
            }
            if let Some(args) = node.child_by_field_name("arguments") {
                format_values(args, ".format()", start, parts);
            }
        }
        "string" | "concatenated_string" => string_part(syntax, node, parts),
        "identifier" if is_sql_name(sql_names, syntax.text_of(node), node) => {
            parts.sql_name = true;
        }
        _ => {
            let before = parts.text.trim_end_matches(' ').to_owned();
            parts
                .values
                .push((node, how.unwrap_or("concatenation"), before));
        }
    }
}

/// The template of a `%` or `.format()`: its text, or a name holding SQL; a template of unknown
/// origin is not a value joined in.
fn template_part<'t>(
    syntax: &Syntax<'_>,
    sql_names: &[SqlName],
    template: Node<'t>,
    parts: &mut Parts<'t>,
) {
    match template.kind() {
        "string" | "concatenated_string" | "parenthesized_expression" | "binary_operator" => {
            flatten(syntax, sql_names, template, None, parts);
        }
        "identifier" => {
            parts.sql_name |= is_sql_name(sql_names, syntax.text_of(template), template);
        }
        _ => {}
    }
}

/// The values of a `%` right-hand side or a `.format(…)` argument list; the template's text
/// is `parts.text` from `template` on, and each value's text before it runs to its placeholder.
fn format_values<'t>(values: Node<'t>, how: &'static str, template: usize, parts: &mut Parts<'t>) {
    let text = parts.text.clone();
    let marker = if how == ".format()" { '{' } else { '%' };
    let before = |k: usize| -> String {
        let mut seen = 0;
        let bytes = text.as_bytes();
        let mut i = template;
        while i < bytes.len() {
            if bytes[i] == marker as u8 {
                if bytes.get(i + 1) == Some(&(marker as u8)) {
                    i += 2;
                    continue;
                }
                if seen == k {
                    return text[..i].to_owned();
                }
                seen += 1;
            }
            i += 1;
        }
        text.clone()
    };
    match values.kind() {
        "tuple" | "argument_list" | "dictionary" => {
            let mut cursor = values.walk();
            let mut k = 0;
            for v in values.named_children(&mut cursor) {
                let v = match v.kind() {
                    "keyword_argument" | "pair" => v.child_by_field_name("value"),
                    "list_splat" | "dictionary_splat" => v.named_child(0),
                    "comment" => None,
                    _ => Some(v),
                };
                if let Some(v) = v {
                    parts.values.push((v, how, before(k)));
                    k += 1;
                }
            }
        }
        _ => parts.values.push((values, how, before(0))),
    }
}

/// The literal text of a string (its interpolations become values).
fn string_part<'t>(syntax: &Syntax<'_>, node: Node<'t>, parts: &mut Parts<'t>) {
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        match n.kind() {
            "string_content" => parts.text.push_str(syntax.text_of(n)),
            "interpolation" => {
                if let Some(e) = n.child_by_field_name("expression") {
                    parts.values.push((e, "an f-string", parts.text.clone()));
                }
            }
            _ => {
                let mut cursor = n.walk();
                let children: Vec<Node<'t>> = n.named_children(&mut cursor).collect();
                stack.extend(children.into_iter().rev());
            }
        }
    }
    parts.text.push(' ');
}

/// Whether the parent of a string expression joins it into a larger one (which is judged as
/// a whole).
fn is_flattened_by_parent(syntax: &Syntax<'_>, node: Node<'_>) -> bool {
    let mut child = node;
    let mut parent = node.parent();
    while let Some(p) = parent.filter(|p| p.kind() == "parenthesized_expression") {
        child = p;
        parent = p.parent();
    }
    let Some(parent) = parent else {
        return false;
    };
    match how_built(syntax, parent) {
        Some("concatenation") => true,
        Some("% formatting") => parent.child_by_field_name("left") == Some(child),
        _ => parent.kind() == "concatenated_string",
    }
}

/// Whether `node` is the query given to `execute`, `executemany`, `executescript` or `raw`.
fn is_query_argument(syntax: &Syntax<'_>, node: Node<'_>) -> bool {
    let Some(args) = node.parent().filter(|p| p.kind() == "argument_list") else {
        return false;
    };
    if positional(args, 0) != Some(node) {
        return false;
    }
    args.parent()
        .and_then(|c| c.child_by_field_name("function"))
        .filter(|f| f.kind() == "attribute")
        .and_then(|f| f.child_by_field_name("attribute"))
        .is_some_and(|a| {
            matches!(
                syntax.text_of(a),
                "execute" | "executemany" | "executescript" | "raw"
            )
        })
}

/// A name assigned SQL text in a scope (a function, or the module).
pub(super) struct SqlName {
    /// The function around the assignment (its id), or `None` at module level.
    scope: Option<usize>,
    /// The name.
    name: String,
    /// Where the assignment starts.
    at: usize,
}

/// The names assigned SQL text (`query = "SELECT * FROM t "`) anywhere in the file.
pub(super) fn sql_names(syntax: &Syntax<'_>) -> Vec<SqlName> {
    let mut out = Vec::new();
    syntax.walk(|node, kind| {
        if kind != "assignment" {
            return;
        }
        let (Some(left), Some(right)) = (
            node.child_by_field_name("left"),
            node.child_by_field_name("right"),
        ) else {
            return;
        };
        if left.kind() != "identifier" {
            return;
        }
        let mut parts = Parts::default();
        flatten(syntax, &[], right, None, &mut parts);
        if is_sql(&parts.text) {
            out.push(SqlName {
                scope: scope_of(node).map(|f| f.id()),
                name: syntax.text_of(left).to_owned(),
                at: node.start_byte(),
            });
        }
    });
    out
}

/// Whether `name` was assigned SQL before `node` in its scope.
fn is_sql_name(names: &[SqlName], name: &str, node: Node<'_>) -> bool {
    let scope = scope_of(node).map(|f| f.id());
    names
        .iter()
        .any(|n| n.name == name && n.scope == scope && n.at < node.start_byte())
}
