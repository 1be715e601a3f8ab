//! Where a Python value comes from: a literal, input, or unknown (see the parent module).

use tree_sitter::Node;

use super::scope_of;
use crate::syntax::Syntax;

pub(super) use crate::checks::Origin;

/// Calls whose result is a number (or a bool): not injectable.
const NUMERIC_CALLS: &[&str] = &["int", "float", "len", "bool", "abs", "round", "ord", "hash"];

/// Where the value of expression `node` comes from.
pub(super) fn origin(syntax: &Syntax<'_>, hops: u8, node: Node<'_>) -> Origin {
    let children = |n: Node<'_>| -> Origin {
        let mut cursor = n.walk();
        let found: Vec<Node<'_>> = n.named_children(&mut cursor).collect();
        found
            .into_iter()
            .filter(|c| c.kind() != "comment")
            .map(|c| origin(syntax, hops, c))
            .max()
            .unwrap_or(Origin::Literal)
    };
    match node.kind() {
        "integer"
        | "float"
        | "true"
        | "false"
        | "none"
        | "ellipsis"
        | "unary_operator"
        | "comparison_operator"
        | "not_operator"
        | "string_start"
        | "string_content"
        | "string_end"
        | "escape_sequence" => Origin::Literal,
        "string"
        | "concatenated_string"
        | "interpolation"
        | "parenthesized_expression"
        | "tuple"
        | "list"
        | "set"
        | "dictionary"
        | "pair"
        | "expression_list"
        | "boolean_operator"
        | "await"
        | "format_specifier"
        | "type_conversion" => children(node),
        "conditional_expression" => {
            // `a if cond else b`: the condition is not part of the value.
            let mut cursor = node.walk();
            let found: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
            [found.first(), found.get(2)]
                .into_iter()
                .flatten()
                .map(|n| origin(syntax, hops, *n))
                .max()
                .unwrap_or(Origin::Unknown)
        }
        "identifier" => name_origin(syntax, hops, node),
        "attribute" => {
            let text = syntax.text_of(node);
            let last = text.rsplit('.').next().unwrap_or(text);
            if is_constant(last) {
                Origin::Literal
            } else if text.split('.').any(reads_as_input) {
                Origin::Input
            } else {
                node.child_by_field_name("object")
                    .map(|o| origin(syntax, hops, o).max(Origin::Unknown))
                    .unwrap_or(Origin::Unknown)
            }
        }
        "subscript" => node
            .child_by_field_name("value")
            .map(|v| origin(syntax, hops, v))
            .unwrap_or(Origin::Unknown),
        "binary_operator" => binary_origin(syntax, hops, node),
        "call" => call_origin(syntax, hops, node),
        "list_comprehension" | "generator_expression" | "set_comprehension" => node
            .child_by_field_name("body")
            .map(|b| origin(syntax, hops, b))
            .unwrap_or(Origin::Unknown),
        _ => Origin::Unknown,
    }
}

/// `a + b`, `a % b`: either side; `["?"] * n`: the list; other arithmetic: a number.
fn binary_origin(syntax: &Syntax<'_>, hops: u8, node: Node<'_>) -> Origin {
    let side = |f: &str| node.child_by_field_name(f);
    let operator = side("operator").map(|o| o.kind()).unwrap_or("");
    match operator {
        "+" | "%" => [side("left"), side("right")]
            .into_iter()
            .flatten()
            .map(|n| origin(syntax, hops, n))
            .max()
            .unwrap_or(Origin::Unknown),
        "*" => {
            let sequence = [side("left"), side("right")]
                .into_iter()
                .flatten()
                .find(|n| {
                    matches!(
                        n.kind(),
                        "list" | "tuple" | "string" | "concatenated_string"
                    )
                });
            sequence.map_or(Origin::Literal, |s| origin(syntax, hops, s))
        }
        _ => Origin::Literal,
    }
}

/// A call's result: a number for `int(…)`, `len(…)`; what `str(x)`, `", ".join(x)`,
/// `"…".format(x)` are given; input when it is called on input or converts it; else unknown.
fn call_origin(syntax: &Syntax<'_>, hops: u8, node: Node<'_>) -> Origin {
    let Some(function) = node.child_by_field_name("function") else {
        return Origin::Unknown;
    };
    let args = node.child_by_field_name("arguments");
    let args_origin = || {
        args.map(|a| origin_of_args(syntax, hops, a))
            .unwrap_or(Origin::Literal)
    };
    let name = syntax.text_of(function);
    let last = name.rsplit('.').next().unwrap_or(name);
    if function.kind() == "identifier" && NUMERIC_CALLS.contains(&last) {
        return Origin::Literal;
    }
    if function.kind() == "identifier" && matches!(last, "str" | "repr") {
        return args_origin();
    }
    let object = function.child_by_field_name("object");
    // `", ".join(…)`, `"…{}".format(…)`: the literal and what it is given.
    if let Some(object) = object.filter(|o| matches!(o.kind(), "string" | "concatenated_string")) {
        return origin(syntax, hops, object).max(args_origin());
    }
    if reads_as_input(last) || last == "recv" || last == "getenv" {
        return Origin::Input;
    }
    // `request.get_json()`, `b64decode(data)`: called on input, or converting it (the first
    // argument); other arguments (`compile(source, filename, mode)`) say nothing of the result.
    let receiver = object.map_or(Origin::Literal, |o| origin(syntax, hops, o));
    let first = args
        .and_then(|a| {
            let mut cursor = a.walk();
            a.named_children(&mut cursor)
                .find(|n| !matches!(n.kind(), "keyword_argument" | "comment"))
        })
        .map_or(Origin::Literal, |a| origin(syntax, hops, a));
    if receiver == Origin::Input || first == Origin::Input {
        Origin::Input
    } else {
        Origin::Unknown
    }
}

/// The worst origin among a call's arguments.
fn origin_of_args(syntax: &Syntax<'_>, hops: u8, args: Node<'_>) -> Origin {
    let mut cursor = args.walk();
    let found: Vec<Node<'_>> = args.named_children(&mut cursor).collect();
    found
        .into_iter()
        .map(|a| match a.kind() {
            "keyword_argument" => a
                .child_by_field_name("value")
                .map_or(Origin::Literal, |v| origin(syntax, hops, v)),
            "comment" => Origin::Literal,
            _ => origin(syntax, hops, a),
        })
        .max()
        .unwrap_or(Origin::Literal)
}

/// A name: a constant (ALL_CAPS), a parameter of the function around it or a name that reads
/// as input, or unknown.
fn name_origin(syntax: &Syntax<'_>, hops: u8, node: Node<'_>) -> Origin {
    let name = syntax.text_of(node);
    if is_constant(name) {
        return Origin::Literal;
    }
    if reads_as_input(name) || is_parameter(syntax, node, name) {
        return Origin::Input;
    }
    // A local name is what was assigned to it before, in the same function (followed through
    // a few names: `a = b + c; cmd = a`).
    if hops >= MAX_HOPS {
        return Origin::Unknown;
    }
    assigned(syntax, node)
        .into_iter()
        .map(|value| origin(syntax, hops + 1, value))
        .max()
        .unwrap_or(Origin::Unknown)
}

/// How many names deep a value is followed to its assignments.
const MAX_HOPS: u8 = 4;

/// The values assigned to the name `node` in its function (or at module level) by statements
/// that end before it: the last `=` and the `+=` after it.
pub(super) fn assigned<'t>(syntax: &Syntax<'_>, node: Node<'t>) -> Vec<Node<'t>> {
    let name = syntax.text_of(node);
    let scope = scope_of(node);
    let mut root = node;
    while let Some(p) = root.parent() {
        root = p;
        if Some(p) == scope {
            break;
        }
    }
    let mut found: Vec<(usize, bool, Node<'t>)> = Vec::new();
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        if n.start_byte() >= node.start_byte() {
            continue;
        }
        if n.kind() == "function_definition" && Some(n) != scope {
            continue;
        }
        if matches!(n.kind(), "assignment" | "augmented_assignment")
            && n.end_byte() <= node.start_byte()
            && n.child_by_field_name("left")
                .is_some_and(|l| l.kind() == "identifier" && syntax.text_of(l) == name)
        {
            if let Some(right) = n.child_by_field_name("right") {
                found.push((n.start_byte(), n.kind() == "assignment", right));
            }
            continue;
        }
        let mut cursor = n.walk();
        stack.extend(n.named_children(&mut cursor));
    }
    found.sort_by_key(|f| f.0);
    let from = found.iter().rposition(|f| f.1).unwrap_or(0);
    found.drain(from..).map(|f| f.2).collect()
}

/// `MAX_ROWS`, `TABLE`: a constant by Python's naming convention.
fn is_constant(name: &str) -> bool {
    name.chars().any(|c| c.is_ascii_uppercase())
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// Whether `name` (one name, or one part of a dotted path) says it holds input.
fn reads_as_input(name: &str) -> bool {
    crate::checks::input::reads_as_input(name, false)
}

/// Whether `name` is a parameter (not `self`/`cls`) of the function around `node`.
fn is_parameter(syntax: &Syntax<'_>, node: Node<'_>, name: &str) -> bool {
    if matches!(name, "self" | "cls") {
        return false;
    }
    let Some(parameters) = scope_of(node).and_then(|f| f.child_by_field_name("parameters")) else {
        return false;
    };
    let mut cursor = parameters.walk();
    parameters.named_children(&mut cursor).any(|p| {
        let id = match p.kind() {
            "identifier" => Some(p),
            "default_parameter" | "typed_default_parameter" => p.child_by_field_name("name"),
            _ => p.named_child(0).filter(|n| n.kind() == "identifier"),
        };
        id.is_some_and(|id| syntax.text_of(id) == name)
    })
}
