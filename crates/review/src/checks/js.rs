//! Checks on the parse of JavaScript and TypeScript (JSX and TSX included): HTML, shell
//! commands, SQL and code built from values and handed to what renders or runs them.
//!
//! Each sink is judged by what its value is made of ([`Origin`]): literals, ALL_CAPS constants,
//! numbers and sanitised values are fixed and never reported; anything else is reported, with
//! high confidence when its names say it is input (`req.query`, `location.hash`, `userName`,
//! `props.html`) and medium confidence otherwise (the parse cannot see where it came from).
//! Shell and `vm` calls count only on the functions of Node's `child_process` and `vm` modules
//! as the file binds them (`require`, `import`, destructuring, `promisify`), so that
//! `regex.exec(s)` is not a shell.

use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use regex::Regex;
use tree_sitter::Node;

use super::input::{reads_as_input, words};
use super::sql::is_sql;
use super::{Hit, Input, lines_of};
use crate::rules::{CheckId, Confidence};
use crate::syntax::{Syntax, descendants};
use tlv4_core::text::excerpt;

/// Runs the js checks.
pub(super) fn check(input: &Input<'_>, syntax: &Syntax<'_>, out: &mut Vec<Hit>) {
    let modules = Modules::of(syntax);
    let js = Js { syntax, modules };
    // `+` chains and template strings judged as part of a larger one, or given to a tag that
    // gets the values apart (`sql`): not judged again.
    let mut judged: HashSet<usize> = HashSet::new();
    syntax.walk(|node, kind| {
        if judged.contains(&node.id()) {
            return;
        }
        let hit = match kind {
            "assignment_expression" | "augmented_assignment_expression" => js.html_assignment(node),
            "call_expression" => {
                judged.extend(js.sql_tagged(node));
                js.call(node).or_else(|| debug_p(input, syntax, node))
            }
            "new_expression" => js.construction(node),
            "jsx_attribute" => js.dangerous_html(node),
            "template_string" | "binary_expression" => js.sql(input, node, &mut judged),
            _ => None,
        };
        out.extend(hit);
    });
}

/// A statement `p(…)` where the file defines no `p` (no `var`/`let`/`const`/`function`/`class
/// p`, no parameter, import, destructuring or assignment of it; a name passed as an argument
/// counts as defined): early Node.js had a global `p()` that printed `inspect(x)`, Ruby's `p`
/// does the same, and such a call is a debugging dump left in. Confidence low: a global `p`
/// may come from elsewhere.
fn debug_p(input: &Input<'_>, syntax: &Syntax<'_>, call: Node<'_>) -> Option<Hit> {
    static DEFINED: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r"\b(?:var|let|const|function|class|import)\s+p\b|[(,{]\s*p\s*[,)}=:]|\bp\s*(?:=[^=]|=>)|\bas\s+p\b",
        )
        .expect("the pattern compiles")
    });
    let function = call.child_by_field_name("function")?;
    if function.kind() != "identifier"
        || syntax.text_of(function) != "p"
        || call.parent()?.kind() != "expression_statement"
        || DEFINED.is_match(&input.file.new_text)
    {
        return None;
    }
    Some(Hit::new(CheckId::DebugP, lines_of(call)).confidence(Confidence::Low))
}

/// What a value is made of, from the safest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Origin {
    /// Literals, ALL_CAPS constants, numbers (`n.toFixed()`, `a.length`), sanitised or
    /// escaped values.
    Fixed,
    /// A value the parse cannot trace.
    Unknown,
    /// A value whose names say it is input.
    Input,
}

impl Origin {
    /// The confidence of a finding about a value of this origin (`None`: no finding).
    fn confidence(self) -> Option<Confidence> {
        match self {
            Origin::Fixed => None,
            Origin::Unknown => Some(Confidence::Medium),
            Origin::Input => Some(Confidence::High),
        }
    }
}

/// Words of names that say a value was made safe (`sanitizedHtml`, `escapedName`, `safeHtml`).
const SAFE_WORDS: &[&str] = &[
    "sanitized",
    "sanitised",
    "escaped",
    "safe",
    "purified",
    "trusted",
];

/// Words of the functions that make a value safe to render or run.
const SANITISERS: &[&str] = &["sanitize", "sanitise", "escape", "purify", "xss", "encode"];

/// Functions whose result is a number (never text that could carry markup or code).
const NUMBERS: &[&str] = &[
    "Number",
    "parseInt",
    "parseFloat",
    "toFixed",
    "round",
    "floor",
    "ceil",
];

/// Node's modules whose functions run commands or code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Module {
    /// `child_process`.
    ChildProcess,
    /// `vm`.
    Vm,
}

impl Module {
    /// The module an import specifier names.
    fn named(specifier: &str) -> Option<Module> {
        match specifier.strip_prefix("node:").unwrap_or(specifier) {
            "child_process" => Some(Module::ChildProcess),
            "vm" => Some(Module::Vm),
            _ => None,
        }
    }
}

/// What a file binds to the modules of [`Module`].
#[derive(Default)]
struct Modules {
    /// Local names of the modules themselves (`cp` in `const cp = require("child_process")`).
    objects: HashMap<String, Module>,
    /// Local names of their functions, with the function's own name (`run` → `exec` in
    /// `const { exec: run } = require("child_process")`).
    functions: HashMap<String, (Module, String)>,
}

impl Modules {
    /// The bindings of the file of `syntax`, in any scope. They are read from a parse of the
    /// whole file, whatever part of it `syntax` covers (the imports are seldom where the
    /// change is), and only in a file that names one of the modules.
    fn of(syntax: &Syntax<'_>) -> Modules {
        let mut m = Modules::default();
        let text = syntax.text;
        let names = text.contains("child_process")
            || ["'vm'", "\"vm\"", "'node:vm'", "\"node:vm\""]
                .iter()
                .any(|s| text.contains(s));
        let Some(whole) = names.then(|| Syntax::parse(syntax.grammar, text)).flatten() else {
            return m;
        };
        whole.walk(|node, kind| match kind {
            "variable_declarator" => m.declarator(&whole, node),
            "import_statement" => m.import(&whole, node),
            _ => {}
        });
        m
    }

    /// `const x = require("m")`, `const { a, b: c } = require("m")`,
    /// `const a = require("m").a`, `const p = promisify(exec)`.
    fn declarator(&mut self, syntax: &Syntax<'_>, node: Node<'_>) {
        let (Some(name), Some(value)) = (
            node.child_by_field_name("name"),
            node.child_by_field_name("value"),
        ) else {
            return;
        };
        if let Some(module) = required(syntax, value) {
            match name.kind() {
                "identifier" => {
                    self.objects.insert(syntax.text_of(name).into(), module);
                }
                "object_pattern" => self.destructured(syntax, module, name),
                _ => {}
            }
        } else if name.kind() == "identifier"
            && let Some(function) = self.function(syntax, value)
        {
            self.functions.insert(syntax.text_of(name).into(), function);
        }
    }

    fn destructured(&mut self, syntax: &Syntax<'_>, module: Module, pattern: Node<'_>) {
        for p in pattern.named_children(&mut pattern.walk()) {
            let (own, local) = match p.kind() {
                "shorthand_property_identifier_pattern" => (p, p),
                "pair_pattern" => {
                    match (p.child_by_field_name("key"), p.child_by_field_name("value")) {
                        (Some(k), Some(v)) if v.kind() == "identifier" => (k, v),
                        _ => continue,
                    }
                }
                _ => continue,
            };
            self.functions.insert(
                syntax.text_of(local).into(),
                (module, syntax.text_of(own).into()),
            );
        }
    }

    /// `import cp from "m"`, `import * as cp from "m"`, `import { a, b as c } from "m"`,
    /// TypeScript's `import cp = require("m")`.
    fn import(&mut self, syntax: &Syntax<'_>, node: Node<'_>) {
        let source = node.child_by_field_name("source").or_else(|| {
            node.named_children(&mut node.walk())
                .find(|c| c.kind() == "import_require_clause")
                .and_then(|c| c.child_by_field_name("source"))
        });
        let Some(module) = source.and_then(|s| Module::named(unquoted(syntax.text_of(s)))) else {
            return;
        };
        for clause in node.named_children(&mut node.walk()) {
            for part in clause.named_children(&mut clause.walk()) {
                match part.kind() {
                    "identifier" => {
                        self.objects.insert(syntax.text_of(part).into(), module);
                    }
                    "namespace_import" => {
                        if let Some(id) = part.named_child(0) {
                            self.objects.insert(syntax.text_of(id).into(), module);
                        }
                    }
                    "named_imports" => {
                        for spec in part.named_children(&mut part.walk()) {
                            let Some(own) = spec.child_by_field_name("name") else {
                                continue;
                            };
                            let local = spec.child_by_field_name("alias").unwrap_or(own);
                            self.functions.insert(
                                syntax.text_of(local).into(),
                                (module, syntax.text_of(own).into()),
                            );
                        }
                    }
                    _ => {}
                }
            }
        }
    }

    /// The module function `node` names: a bound name, `cp.exec`, `require("m").exec`, or
    /// one of those through `promisify(...)`.
    fn function(&self, syntax: &Syntax<'_>, node: Node<'_>) -> Option<(Module, String)> {
        match node.kind() {
            "identifier" => self.functions.get(syntax.text_of(node)).cloned(),
            "member_expression" => {
                let object = node.child_by_field_name("object")?;
                let property = syntax.text_of(node.child_by_field_name("property")?);
                let module = match object.kind() {
                    "identifier" => {
                        let name = syntax.text_of(object);
                        self.objects.get(name).copied().or(match name {
                            "child_process" | "childProcess" => Some(Module::ChildProcess),
                            "vm" => Some(Module::Vm),
                            _ => None,
                        })?
                    }
                    _ => required(syntax, object)?,
                };
                Some((module, property.into()))
            }
            "call_expression" => {
                let callee = node.child_by_field_name("function")?;
                if last_name(syntax, callee) != "promisify" {
                    return None;
                }
                let first = arguments(node).into_iter().next()?;
                self.function(syntax, first)
            }
            _ => None,
        }
    }
}

/// The module of `require("m")` (also `await import("m")`).
fn required(syntax: &Syntax<'_>, node: Node<'_>) -> Option<Module> {
    let node = if node.kind() == "await_expression" {
        node.named_child(0)?
    } else {
        node
    };
    if node.kind() != "call_expression" {
        return None;
    }
    let callee = syntax.text_of(node.child_by_field_name("function")?);
    if callee != "require" && callee != "import" {
        return None;
    }
    let first = arguments(node).into_iter().next()?;
    (first.kind() == "string")
        .then(|| Module::named(unquoted(syntax.text_of(first))))
        .flatten()
}

/// The arguments of a call (none for a tagged template).
fn arguments(call: Node<'_>) -> Vec<Node<'_>> {
    match call.child_by_field_name("arguments") {
        Some(args) if args.kind() == "arguments" => args
            .named_children(&mut args.walk())
            .filter(|n| n.kind() != "comment")
            .collect(),
        _ => Vec::new(),
    }
}

/// A string literal's text without its quotes.
fn unquoted(text: &str) -> &str {
    text.get(1..text.len().saturating_sub(1)).unwrap_or("")
}

/// The last name of a callee: `f` in `f`, `a.b.f`, `a?.f`.
fn last_name<'a>(syntax: &Syntax<'a>, node: Node<'_>) -> &'a str {
    match node.kind() {
        "member_expression" => node
            .child_by_field_name("property")
            .map_or("", |p| syntax.text_of(p)),
        "identifier" => syntax.text_of(node),
        _ => "",
    }
}

/// Whether `name` is an ALL_CAPS constant (`TABLE`, `MAX_ROWS`).
fn is_constant(name: &str) -> bool {
    name.bytes().any(|b| b.is_ascii_uppercase())
        && name
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_' || b == b'$')
}

/// Whether the name `name` says its value was made safe.
fn is_safe_name(name: &str) -> bool {
    words(name).iter().any(|w| SAFE_WORDS.contains(&w.as_str()))
}

/// Whether a function named `name` sanitises or escapes its argument (`DOMPurify.sanitize`,
/// `escapeHtml`, `he.encode`, `shellEscape`; not `unescape`, `decode`).
fn is_sanitiser(name: &str) -> bool {
    let w = words(name);
    w.first().is_none_or(|f| !f.starts_with("un"))
        && w.iter()
            .any(|w| SANITISERS.iter().any(|s| w.starts_with(s)))
}

/// A sink's value: the literal text of its strings and the values put between them.
struct Built<'t> {
    /// The text of its string parts, each value standing as `x`.
    text: String,
    /// The values that are not string literals, in order.
    values: Vec<Node<'t>>,
    /// The ids of the `+` expressions and template strings it is made of.
    parts: Vec<usize>,
}

/// The checks' view of one file.
struct Js<'s, 'a> {
    syntax: &'s Syntax<'a>,
    modules: Modules,
}

impl<'s, 'a> Js<'s, 'a> {
    fn text(&self, node: Node<'_>) -> &'a str {
        self.syntax.text_of(node)
    }

    /// Whether `node` is a `+` expression.
    fn is_plus(&self, node: Node<'_>) -> bool {
        node.kind() == "binary_expression"
            && node
                .child_by_field_name("operator")
                .is_some_and(|o| self.text(o) == "+")
    }

    /// What `node` is made of.
    fn origin(&self, node: Node<'_>) -> Origin {
        let child = |field: &str| node.child_by_field_name(field).map(|n| self.origin(n));
        match node.kind() {
            "string"
            | "number"
            | "true"
            | "false"
            | "null"
            | "undefined"
            | "regex"
            | "unary_expression"
            | "update_expression"
            | "function_expression"
            | "function" => Origin::Fixed,
            // JSX escapes what it renders.
            "jsx_element" | "jsx_self_closing_element" | "jsx_fragment" => Origin::Fixed,
            "template_string" => self.worst(&self.built(node).values),
            _ if self.is_plus(node) => self.worst(&self.built(node).values),
            "binary_expression" => {
                let op = node.child_by_field_name("operator").map(|o| self.text(o));
                if matches!(op, Some("||" | "??" | "&&")) {
                    child("left").max(child("right")).unwrap_or(Origin::Fixed)
                } else {
                    Origin::Fixed
                }
            }
            "ternary_expression" => child("consequence")
                .max(child("alternative"))
                .unwrap_or(Origin::Fixed),
            "arrow_function" => match node.child_by_field_name("body") {
                Some(body) if body.kind() != "statement_block" => self.origin(body),
                _ => Origin::Fixed,
            },
            // The expression, not its type (`x as string`).
            "parenthesized_expression"
            | "await_expression"
            | "as_expression"
            | "non_null_expression"
            | "satisfies_expression" => node
                .named_child(0)
                .map_or(Origin::Fixed, |n| self.origin(n)),
            "sequence_expression" | "array" => node
                .named_children(&mut node.walk())
                .map(|n| self.origin(n))
                .max()
                .unwrap_or(Origin::Fixed),
            "call_expression" => self.call_origin(node),
            "identifier" if is_constant(self.text(node)) || is_safe_name(self.text(node)) => {
                Origin::Fixed
            }
            "member_expression"
                if node.child_by_field_name("property").is_some_and(|p| {
                    let p = self.text(p);
                    is_constant(p) || is_safe_name(p) || p == "length"
                }) =>
            {
                Origin::Fixed
            }
            _ => self.names_origin(node),
        }
    }

    /// What a call's result is made of: fixed for sanitisers, number conversions and tagged
    /// templates (the tag gets the values apart from the text: `html`, `sql`), else what its
    /// callee and arguments are made of.
    fn call_origin(&self, node: Node<'_>) -> Origin {
        let Some(callee) = node.child_by_field_name("function") else {
            return Origin::Unknown;
        };
        let name = last_name(self.syntax, callee);
        let tagged = node
            .child_by_field_name("arguments")
            .is_some_and(|a| a.kind() == "template_string");
        if tagged || is_sanitiser(name) || NUMBERS.contains(&name) {
            return Origin::Fixed;
        }
        if callee.kind() == "member_expression"
            && callee
                .child_by_field_name("object")
                .is_some_and(|o| self.text(o) == "Math")
        {
            return Origin::Fixed;
        }
        let args = arguments(node).into_iter().map(|a| self.origin(a)).max();
        self.names_origin(callee).max(args.unwrap_or(Origin::Fixed))
    }

    /// Input if a name in `node` says so, else unknown.
    fn names_origin(&self, node: Node<'_>) -> Origin {
        let mut input = false;
        descendants(node, |n| {
            if matches!(
                n.kind(),
                "identifier"
                    | "property_identifier"
                    | "shorthand_property_identifier"
                    | "private_property_identifier"
            ) && reads_as_input(self.text(n), n.kind() == "property_identifier")
            {
                input = true;
            }
        });
        if input {
            Origin::Input
        } else {
            Origin::Unknown
        }
    }

    /// The strings and values of a `+` chain or a template string.
    fn built<'t>(&self, node: Node<'t>) -> Built<'t> {
        let mut b = Built {
            text: String::new(),
            values: Vec::new(),
            parts: Vec::new(),
        };
        self.build(node, &mut b);
        b
    }

    /// Adds the pieces of `node` to `b`, without recursion along a `+` chain (a long one
    /// would overflow the stack).
    fn build<'t>(&self, node: Node<'t>, b: &mut Built<'t>) {
        let mut stack = vec![node];
        while let Some(node) = stack.pop() {
            match node.kind() {
                _ if self.is_plus(node) => {
                    b.parts.push(node.id());
                    // The left operand is taken first.
                    stack.extend(node.child_by_field_name("right"));
                    stack.extend(node.child_by_field_name("left"));
                }
                "parenthesized_expression"
                    if node.named_child(0).is_some_and(|n| self.is_plus(n)) =>
                {
                    stack.extend(node.named_child(0));
                }
                "string" => b.text.push_str(unquoted(self.text(node))),
                "template_string" => {
                    b.parts.push(node.id());
                    for part in node.named_children(&mut node.walk()) {
                        match part.kind() {
                            "template_substitution" => {
                                if let Some(v) = part.named_child(0) {
                                    b.text.push('x');
                                    b.values.push(v);
                                }
                            }
                            _ => b.text.push_str(self.text(part)),
                        }
                    }
                }
                _ => {
                    b.text.push('x');
                    b.values.push(node);
                }
            }
        }
    }

    /// What the least safe of `values` is made of.
    fn worst(&self, values: &[Node<'_>]) -> Origin {
        values
            .iter()
            .map(|v| self.origin(*v))
            .max()
            .unwrap_or(Origin::Fixed)
    }

    /// HTML built from strings and values: a `+` chain or template string whose literal
    /// text has markup and whose values are not all fixed.
    fn built_html(&self, node: Node<'_>) -> Origin {
        if !(self.is_plus(node) || node.kind() == "template_string") {
            return Origin::Fixed;
        }
        let b = self.built(node);
        if !b.text.contains('<') {
            return Origin::Fixed;
        }
        self.worst(&b.values)
    }

    /// `x.innerHTML = v`, `x.outerHTML += v`.
    fn html_assignment(&self, node: Node<'_>) -> Option<Hit> {
        let left = node.child_by_field_name("left")?;
        if left.kind() != "member_expression" {
            return None;
        }
        let property = self.text(left.child_by_field_name("property")?);
        if !matches!(property, "innerHTML" | "outerHTML") {
            return None;
        }
        let value = node.child_by_field_name("right")?;
        html_hit(node, self.origin(value), property)
    }

    /// `<div dangerouslySetInnerHTML={{ __html: v }} />`.
    fn dangerous_html(&self, node: Node<'_>) -> Option<Hit> {
        let name = node.named_child(0)?;
        if self.text(name) != "dangerouslySetInnerHTML" {
            return None;
        }
        let expression = node
            .named_child(1)
            .filter(|v| v.kind() == "jsx_expression")?
            .named_child(0)?;
        let value = if expression.kind() == "object" {
            expression
                .named_children(&mut expression.walk())
                .find(|p| {
                    p.kind() == "pair"
                        && p.child_by_field_name("key")
                            .is_some_and(|k| unquoted_key(self.text(k)) == "__html")
                })?
                .child_by_field_name("value")?
        } else {
            expression
        };
        html_hit(node, self.origin(value), "dangerouslySetInnerHTML")
    }

    /// A call: an HTML, shell or code sink.
    fn call(&self, node: Node<'_>) -> Option<Hit> {
        let callee = node.child_by_field_name("function")?;
        let args = arguments(node);
        self.html_call(node, callee, &args)
            .or_else(|| self.shell_call(node, callee, &args))
            .or_else(|| self.code_call(node, callee, &args))
    }

    /// `insertAdjacentHTML(pos, v)`, `document.write(v)`, jQuery's `.html(v)` (any value
    /// not fixed), `.append(v)` and its kin and `$(v)` (HTML built from strings only: they
    /// take elements too, and the DOM's own `append` treats a string as text); a server's
    /// `res.send(v)`, `res.write(v)`, `res.end(v)` of HTML built from strings.
    fn html_call(&self, node: Node<'_>, callee: Node<'_>, args: &[Node<'_>]) -> Option<Hit> {
        let name = last_name(self.syntax, callee);
        let object = callee.child_by_field_name("object");
        let first = args.first().copied();
        let (origin, sink) = match (name, object) {
            ("insertAdjacentHTML", Some(_)) => (self.origin(*args.get(1)?), "insertAdjacentHTML"),
            ("write" | "writeln", Some(o))
                if self.text(o) == "document" || self.text(o).ends_with(".document") =>
            {
                let worst = args.iter().map(|a| self.origin(*a)).max()?;
                (worst, "document.write")
            }
            ("html", Some(o)) => (self.jquery_origin(o, self.origin(first?)), ".html()"),
            ("append" | "prepend" | "after" | "before" | "replaceWith", Some(o)) => {
                let worst = args.iter().map(|a| self.built_html(*a)).max()?;
                (self.jquery_origin(o, worst), "jQuery DOM insertion")
            }
            ("$" | "jQuery", None) => (self.built_html(first?), "$()"),
            ("send" | "write" | "end", Some(o))
                if matches!(self.text(o), "res" | "response" | "reply" | "ctx.res") =>
            {
                (self.built_html(first?), "a response")
            }
            _ => return None,
        };
        html_hit(node, origin, sink)
    }

    /// `origin`, at most unknown unless `receiver` is visibly jQuery (`$x`, `$(...)`,
    /// `this.$el`): other objects have `html` and `append` methods too (a DOM node's
    /// `append` treats a string as text, a server's `c.html(body)` sends a page).
    fn jquery_origin(&self, receiver: Node<'_>, origin: Origin) -> Origin {
        let t = self.text(receiver);
        if t.starts_with('$') || t.starts_with("jQuery") || t.contains(".$") {
            origin
        } else {
            origin.min(Origin::Unknown)
        }
    }

    /// `exec(cmd)` and `execSync(cmd)` of `child_process` with a command not fixed;
    /// `spawn`/`execFile` only with `shell: true`.
    fn shell_call(&self, node: Node<'_>, callee: Node<'_>, args: &[Node<'_>]) -> Option<Hit> {
        let (Module::ChildProcess, name) = self.modules.function(self.syntax, callee)? else {
            return None;
        };
        let command = *args.first()?;
        let (origin, how) = match name.as_str() {
            "exec" | "execSync" => (
                self.origin(command),
                format!("`{name}` of {}", self.describe(command)),
            ),
            "spawn" | "spawnSync" | "execFile" | "execFileSync" if self.shell_option(args) => {
                let worst = args
                    .iter()
                    .take(2)
                    .map(|a| self.origin(*a))
                    .max()
                    .unwrap_or(Origin::Fixed);
                // The shell may be meant; the values may be checked elsewhere.
                (
                    worst.min(Origin::Unknown),
                    format!("`{name}` with `shell: true`"),
                )
            }
            _ => return None,
        };
        Some(
            Hit::new(CheckId::ShellInjection, lines_of(node))
                .confidence(origin.confidence()?)
                .with("how", how),
        )
    }

    /// Whether an options argument says `shell: true` (or any value but `false`).
    fn shell_option(&self, args: &[Node<'_>]) -> bool {
        args.iter().filter(|a| a.kind() == "object").any(|o| {
            o.named_children(&mut o.walk()).any(|p| {
                p.kind() == "pair"
                    && p.child_by_field_name("key")
                        .is_some_and(|k| unquoted_key(self.text(k)) == "shell")
                    && p.child_by_field_name("value")
                        .is_some_and(|v| !matches!(self.text(v), "false" | "undefined" | "null"))
            })
        })
    }

    /// `eval(v)`, `Function(body)`, `setTimeout("code" + v)`, `vm.runInNewContext(v)`:
    /// reported when the code is not fixed (a literal runs what the author wrote).
    fn code_call(&self, node: Node<'_>, callee: Node<'_>, args: &[Node<'_>]) -> Option<Hit> {
        let name = last_name(self.syntax, callee);
        let global = match callee.kind() {
            "identifier" => true,
            "member_expression" => callee.child_by_field_name("object").is_some_and(|o| {
                matches!(self.text(o), "window" | "global" | "globalThis" | "self")
            }),
            _ => false,
        };
        let (origin, call) = match name {
            "eval" if global => (self.origin(*args.first()?), "eval".to_owned()),
            "Function" if global => (self.worst(args), "Function".to_owned()),
            "setTimeout" | "setInterval" if global => {
                let first = *args.first()?;
                let string =
                    matches!(first.kind(), "string" | "template_string") || self.is_plus(first);
                if !string {
                    return None;
                }
                (self.origin(first), name.to_owned())
            }
            _ => match self.modules.function(self.syntax, callee)? {
                (Module::Vm, f)
                    if matches!(
                        f.as_str(),
                        "runInNewContext" | "runInThisContext" | "runInContext" | "compileFunction"
                    ) =>
                {
                    (self.origin(*args.first()?), format!("vm.{f}"))
                }
                _ => return None,
            },
        };
        Some(
            Hit::new(CheckId::CodeInjection, lines_of(node))
                .confidence(origin.confidence()?)
                .with("call", call),
        )
    }

    /// `new Function(args..., body)`, `new vm.Script(code)`.
    fn construction(&self, node: Node<'_>) -> Option<Hit> {
        let constructor = node.child_by_field_name("constructor")?;
        let args = arguments_of_new(node);
        let (origin, call) =
            if constructor.kind() == "identifier" && self.text(constructor) == "Function" {
                (self.worst(&args), "new Function")
            } else if matches!(
                self.modules.function(self.syntax, constructor),
                Some((Module::Vm, ref f)) if f == "Script"
            ) {
                (self.origin(*args.first()?), "new vm.Script")
            } else {
                return None;
            };
        Some(
            Hit::new(CheckId::CodeInjection, lines_of(node))
                .confidence(origin.confidence()?)
                .with("call", call),
        )
    }

    /// A template string or `+` chain with SQL and values (the outermost of them: the
    /// parts it is made of are `judged` with it).
    fn sql(&self, input: &Input<'_>, node: Node<'_>, judged: &mut HashSet<usize>) -> Option<Hit> {
        let how = match node.kind() {
            "template_string" => "a template string",
            _ if self.is_plus(node) => "concatenation",
            _ => return None,
        };
        let b = self.built(node);
        judged.extend(b.parts.iter().copied());
        self.sql_hit(input, node, &b, how)
    }

    /// The template string of `` sql`...` `` (`SQL`, `Prisma.sql`): the tag gets the values
    /// apart from the text and passes them as parameters.
    fn sql_tagged(&self, call: Node<'_>) -> Option<usize> {
        let template = call
            .child_by_field_name("arguments")
            .filter(|a| a.kind() == "template_string")?;
        let tag = last_name(self.syntax, call.child_by_field_name("function")?);
        tag.to_ascii_lowercase()
            .contains("sql")
            .then_some(template.id())
    }

    /// Reports SQL text built with values that are not fixed nor lists of placeholders, at
    /// the first such value on a new line (else at the first such value).
    fn sql_hit(&self, input: &Input<'_>, node: Node<'_>, b: &Built<'_>, how: &str) -> Option<Hit> {
        if !is_sql(&b.text) {
            return None;
        }
        let values: Vec<(Node<'_>, Origin)> = b
            .values
            .iter()
            .filter(|v| !self.is_placeholders(**v))
            .map(|v| (*v, self.origin(*v)))
            .filter(|(_, o)| *o > Origin::Fixed)
            .collect();
        let worst = values.iter().map(|(_, o)| *o).max()?;
        let first = values
            .iter()
            .map(|(v, _)| *v)
            .find(|v| input.is_new(&lines_of(*v)))
            .unwrap_or(values[0].0);
        Some(
            Hit::new(CheckId::SqlInjection, lines_of(node))
                .at(first.start_position().row)
                .confidence(worst.confidence()?)
                .with(
                    "how",
                    format!("{how} with `{}`", excerpt(self.text(first), 40)),
                ),
        )
    }

    /// A value that makes query placeholders, not values: `ids.map(() => "?").join(",")`,
    /// `"?, ".repeat(n)`, `` ids.map((_, i) => `$${i + 1}`) ``, a name with `placeholder`.
    fn is_placeholders(&self, node: Node<'_>) -> bool {
        if words(self.text(node))
            .iter()
            .any(|w| w.starts_with("placeholder"))
        {
            return !self.text(node).contains('(');
        }
        if node.kind() != "call_expression" {
            return false;
        }
        let (mut marks, mut other) = (false, false);
        descendants(node, |n| {
            if n.kind() == "string_fragment" {
                let t = self.text(n);
                marks |= t.contains(['?', '$']);
                other |= !t.chars().all(|c| {
                    matches!(c, '?' | '$' | ',' | '(' | ')' | ':')
                        || c.is_whitespace()
                        || c.is_ascii_digit()
                });
            }
        });
        marks && !other
    }

    /// How a command is built, for the message.
    fn describe(&self, node: Node<'_>) -> String {
        if self.is_plus(node) {
            "a concatenation".into()
        } else if node.kind() == "template_string" {
            "a template string".into()
        } else {
            format!("`{}`", excerpt(self.text(node), 40))
        }
    }
}

/// A hit of the HTML check at `node` about a value of `origin` put in `sink`.
fn html_hit(node: Node<'_>, origin: Origin, sink: &str) -> Option<Hit> {
    Some(
        Hit::new(CheckId::HtmlInjection, lines_of(node))
            .confidence(origin.confidence()?)
            .with("sink", sink),
    )
}

/// The arguments of a `new` expression.
fn arguments_of_new(node: Node<'_>) -> Vec<Node<'_>> {
    match node.child_by_field_name("arguments") {
        Some(args) => args
            .named_children(&mut args.walk())
            .filter(|n| n.kind() != "comment")
            .collect(),
        None => Vec::new(),
    }
}

/// An object key without its quotes, if it has any.
fn unquoted_key(key: &str) -> &str {
    if key.starts_with(['"', '\'']) {
        unquoted(key)
    } else {
        key
    }
}

#[cfg(test)]
mod tests {
    use super::super::{found, review_texts};
    use crate::rules::{Confidence, Severity};

    /// The `(1-based line, severity, confidence)` of each `rule` finding in the new file
    /// `path` holding `text`.
    fn hits(path: &str, text: &str, rule: &str) -> Vec<(usize, Severity, Confidence)> {
        review_texts(path, "", text)
            .into_iter()
            .filter(|f| f.rule == rule)
            .map(|f| (f.line.unwrap_or(0), f.severity, f.confidence))
            .collect()
    }

    /// The confidences of the `rule` findings of each line of `lines`, a new file `path`
    /// (`None`: no finding).
    fn per_line(path: &str, lines: &[&str], rule: &str) -> Vec<Option<Confidence>> {
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let found = hits(path, &text, rule);
        (1..=lines.len())
            .map(|n| found.iter().find(|h| h.0 == n).map(|h| h.2))
            .collect()
    }

    const HIGH: Option<Confidence> = Some(Confidence::High);
    const MEDIUM: Option<Confidence> = Some(Confidence::Medium);

    #[test]
    fn html_built_from_values_is_injection_and_literals_or_sanitised_values_are_not() {
        let cases: &[(&str, Option<Confidence>)] = &[
            ("el.innerHTML = `<b>${params.get('q')}</b>`;", HIGH),
            ("el.innerHTML = '<p>' + comment.body + '</p>';", HIGH),
            ("el.outerHTML += location.hash;", HIGH),
            ("el.innerHTML = html;", MEDIUM),
            ("el.insertAdjacentHTML('beforeend', row(item));", MEDIUM),
            (
                "document.write('<a href=' + document.location.search + '>');",
                HIGH,
            ),
            ("$('#out').html(userInput);", HIGH),
            ("$('#out').html(rendered);", MEDIUM),
            ("c.html(<Page user={user} />);", None),
            ("$list.append('<li>' + item.name + '</li>');", HIGH),
            ("list.append(`<li>${item.name}</li>`);", MEDIUM),
            (
                "$(`<div class=\"msg\">${data.message}</div>`).appendTo(body);",
                HIGH,
            ),
            // A bare generic name is any value: medium.
            ("el.innerHTML = `<p>${message}</p>`;", MEDIUM),
            // Names that say the value was made safe.
            ("el.innerHTML = sanitizedContent;", None),
            // Silent: literals, templates without values, sanitised or escaped values,
            // numbers, constants, elements, getters, selectors.
            ("res.send('<h1>' + req.query.title + '</h1>');", HIGH),
            ("res.end(`<p>${greeting}</p>`);", MEDIUM),
            ("el.innerHTML = '<b>hi</b>';", None),
            ("el.innerHTML = `<b>hi</b>`;", None),
            ("el.innerHTML = '';", None),
            ("el.innerHTML = DOMPurify.sanitize(input.value);", None),
            ("el.innerHTML = `<b>${escapeHtml(user.name)}</b>`;", None),
            (
                "el.innerHTML = '<i>' + count.toFixed(2) + '</i>' + SEPARATOR;",
                None,
            ),
            ("el.innerHTML = '<b>' + items.length + '</b>';", None),
            ("$list.append(item);", None),
            ("$list.append(document.createElement('li'));", None),
            ("const h = $('#out').html();", None),
            ("$('#' + id).hide();", None),
            ("document.write(BANNER);", None),
            ("el.textContent = input.value;", None),
            ("res.send(page);", None),
            ("el.innerText = `${a}${b}`;", None),
        ];
        let lines: Vec<&str> = cases.iter().map(|c| c.0).collect();
        let want: Vec<Option<Confidence>> = cases.iter().map(|c| c.1).collect();
        assert_eq!(per_line("web/app.js", &lines, "html-injection"), want);
        // A TypeScript type is not a value.
        let ts = "el.innerHTML = (BANNER as string) + ('<hr>' satisfies string) + COUNT!;\n";
        assert!(hits("web/app.ts", ts, "html-injection").is_empty());
    }

    #[test]
    fn a_very_long_concatenation_is_judged_without_overflowing_the_stack() {
        let terms: Vec<String> = (0..30_000).map(|i| format!("'<i>' + v{i}")).collect();
        let text = format!("el.innerHTML = {};\n", terms.join(" + "));
        let got = std::thread::Builder::new()
            .stack_size(1 << 20)
            .spawn(move || hits("web/long.js", &text, "html-injection").len())
            .expect("a thread starts")
            .join()
            .expect("no overflow");
        assert_eq!(got, 1);
    }

    #[test]
    fn react_dangerously_set_inner_html_is_injection_unless_sanitised() {
        let tsx = "export function Post(props: { html: string }) {\n  return (\n    <div>\n      <div dangerouslySetInnerHTML={{ __html: props.html }} />\n      <div dangerouslySetInnerHTML={{ __html: marked(draft) }} />\n      <div dangerouslySetInnerHTML={{ __html: DOMPurify.sanitize(props.html) }} />\n      <div dangerouslySetInnerHTML={{ __html: '<br/>' }} />\n    </div>\n  );\n}\n";
        let got: Vec<(usize, Confidence)> = hits("src/Post.tsx", tsx, "html-injection")
            .into_iter()
            .map(|h| (h.0, h.2))
            .collect();
        // `marked` does not sanitise: its output of unknown text is reported.
        assert_eq!(got, vec![(4, Confidence::High), (5, Confidence::Medium)]);
        let jsx = "const A = () => <p dangerouslySetInnerHTML={{ __html: text }} />;\n";
        assert_eq!(hits("src/a.jsx", jsx, "html-injection").len(), 1);
    }

    #[test]
    fn shell_commands_built_from_values_are_injection() {
        let lines = [
            "const cp = require('child_process');",
            "const { exec, execSync: run, spawn } = require('node:child_process');",
            "cp.exec('ls ' + dir);",
            "exec(`git log ${req.query.ref}`);",
            "run(cmd);",
            "spawn(prog, [arg], { shell: true });",
            "child_process.execSync('rm -rf ' + args.path);",
            // Silent: fixed commands, argument lists without a shell, other `exec`s.
            "cp.exec('ls -la');",
            "run(`git status`);",
            "spawn('git', ['log', ref]);",
            "cp.execFile('git', ['log', req.query.ref]);",
            "spawn(prog, [arg], { shell: false });",
            "const m = /a(b)/.exec(text);",
            "db.exec(query);",
        ];
        let want = [
            None, None, MEDIUM, HIGH, MEDIUM, MEDIUM, HIGH, None, None, None, None, None, None,
            None,
        ];
        assert_eq!(per_line("lib/run.js", &lines, "shell-injection"), want);
        let esm = "import { exec as sh } from 'child_process';\nimport { promisify } from 'util';\nconst shp = promisify(sh);\nawait shp('tar xf ' + file.name);\n";
        assert_eq!(
            hits("lib/x.mjs", esm, "shell-injection"),
            vec![(4, Severity::Critical, Confidence::High)]
        );
        let ts = "import cp = require('child_process');\ncp.execSync(`kill ${pid}`);\n";
        assert_eq!(
            hits("lib/k.ts", ts, "shell-injection"),
            vec![(2, Severity::Critical, Confidence::Medium)]
        );
        // A change far from the import still sees it.
        let old = "const cp = require('child_process');\n\nfunction a() {}\n";
        let new = format!("{old}\nfunction b(d) {{\n  cp.exec('ls ' + d);\n}}\n");
        assert_eq!(
            found("lib/far.js", old, &new, "shell-injection"),
            vec![("shell-injection".into(), 6)]
        );
        // Without a binding to child_process, `exec` is someone else's.
        assert!(hits("lib/y.js", "exec('ls ' + dir);\n", "shell-injection").is_empty());
    }

    #[test]
    fn sql_built_from_values_is_injection_and_parameters_are_not() {
        let lines = [
            "db.query(`SELECT * FROM users WHERE id = ${req.params.id}`);",
            "db.query('DELETE FROM posts WHERE id = ' + id);",
            "db.query(`UPDATE users SET name = '${form.name}' WHERE id = ?`, [id]);",
            "const q = `insert into logs (msg) values ('${line}')`;",
            // Silent: parameters, constants, placeholder lists, tags, prose.
            "db.query('SELECT * FROM users WHERE id = ?', [id]);",
            "db.query('SELECT * FROM users WHERE id = $1', [req.params.id]);",
            "db.query(`SELECT * FROM ${TABLE} WHERE id = ?`, [id]);",
            "db.query(`SELECT * FROM t WHERE id IN (${ids.map(() => '?').join(', ')})`, ids);",
            "db.query(`SELECT * FROM t WHERE id IN (${placeholders})`, ids);",
            "db.query(sql`SELECT * FROM users WHERE id = ${id}`);",
            "prisma.$queryRaw(Prisma.sql`SELECT * FROM users WHERE id = ${id}`);",
            "const label = `Select ${n} of the files`;",
            "db.query(`SELECT * FROM t LIMIT ${Number(limit)}`);",
        ];
        let want = [
            HIGH, MEDIUM, HIGH, MEDIUM, None, None, None, None, None, None, None, None, None,
        ];
        assert_eq!(per_line("src/db.ts", &lines, "sql-injection"), want);
    }

    #[test]
    fn sql_concatenated_across_lines_is_reported_at_the_first_new_value() {
        let old = "function find(name) {\n  return db.query(\n    'SELECT * FROM users ' +\n      'WHERE active = 1'\n  );\n}\n";
        let new = "function find(name) {\n  return db.query(\n    'SELECT * FROM users ' +\n      'WHERE active = 1' +\n      \" AND name = '\" + name + \"'\"\n  );\n}\n";
        assert_eq!(
            found("src/users.js", old, new, "sql-injection"),
            vec![("sql-injection".into(), 5)]
        );
        // The same concatenation, untouched by a change elsewhere in the file, is not new.
        let later = format!("{new}\nexport const X = 1;\n");
        assert!(found("src/users.js", new, &later, "sql-injection").is_empty());
    }

    #[test]
    fn code_run_from_values_is_injection_and_literal_code_is_silent() {
        let lines = [
            "const vm = require('vm');",
            "eval(req.body.code);",
            "eval(expr);",
            "const f = new Function('a', src);",
            "setTimeout('tick(' + n + ')', 10);",
            "vm.runInNewContext(userScript, sandbox);",
            "window.eval(`${prefix}.run()`);",
            // Silent: literal code, functions, other `eval`s.
            "eval('1 + 1');",
            "setTimeout(() => tick(n), 10);",
            "setTimeout(tick, 10);",
            "const g = new Function('a', 'return a * 2');",
            "script.runInNewContext(context);",
            "model.eval(input);",
        ];
        let want = [
            None, HIGH, MEDIUM, MEDIUM, MEDIUM, HIGH, MEDIUM, None, None, None, None, None, None,
        ];
        assert_eq!(per_line("lib/calc.js", &lines, "code-injection"), want);
    }

    #[test]
    fn html_injection_is_lowered_in_examples_and_left_out_of_tests() {
        let text = "el.innerHTML = location.hash;\n";
        assert_eq!(
            hits("src/app.js", text, "html-injection"),
            vec![(1, Severity::Critical, Confidence::High)]
        );
        assert_eq!(
            hits("examples/a/app.js", text, "html-injection"),
            vec![(1, Severity::Medium, Confidence::High)]
        );
        for path in ["src/app.test.js", "spec/app.js", "cypress/e2e/app.cy.js"] {
            assert!(hits(path, text, "html-injection").is_empty(), "{path}");
        }
        // Other injections are lowered in tests, not left out.
        let eval = "eval(req.body.code);\n";
        assert_eq!(
            hits("test/app.js", eval, "code-injection"),
            vec![(1, Severity::Medium, Confidence::High)]
        );
    }

    #[test]
    fn console_log_is_a_leftover_only_in_library_code() {
        let log = "export function f(a) {\n  console.log(a);\n}\n";
        assert_eq!(
            found("lib/a.js", "", log, "console-log"),
            vec![("console-log".into(), 2)]
        );
        // Examples, tests, build and CLI code print on purpose.
        for path in [
            "examples/basic/index.js",
            "src/a.test.ts",
            "test/a.js",
            "playwright/login.ts",
            "webpack.config.js",
            "bin/tool.js",
        ] {
            assert!(found(path, "", log, "console-log").is_empty(), "{path}");
        }
        // A script with a `#!` line is a command.
        let script = format!("#!/usr/bin/env node\n{log}");
        assert!(found("lib/run.js", "", &script, "console-log").is_empty());
        // Lines the change only re-indented are not new.
        let indented = "export function f(a) {\n  if (a) {\n    console.log(a);\n  }\n}\n";
        assert!(found("lib/a.js", log, indented, "console-log").is_empty());
        // Nor is `console.log` in a string or a comment.
        let quoted = "const s = 'console.log(x)';\n// console.log(y)\n/* console.log(z) */\n";
        assert!(found("lib/b.ts", "", quoted, "console-log").is_empty());
    }

    #[test]
    fn an_empty_catch_is_high_and_a_commented_one_is_silent() {
        let text = "try { a(); } catch (e) {}\ntry { b(); } catch {}\ntry { c(); } catch (e) { /* ignore: optional */ }\ntry { d(); } catch (e) {\n  // best effort\n}\nconst s = 'catch (e) {}';\n";
        let got = hits("src/a.ts", text, "empty-catch");
        assert_eq!(
            got,
            vec![
                (1, Severity::High, Confidence::High),
                (2, Severity::High, Confidence::High)
            ]
        );
    }

    #[test]
    fn suppressions_count_in_comments_and_any_in_code_not_in_strings() {
        let text = "// @ts-ignore\nconst a = f() as any;\n/* eslint-disable no-console */\nconst s = '@ts-ignore eslint-disable';\nconst t: string = 'x as any';\nfunction g(x: any): void {}\n";
        let found_in = |rule: &str| -> Vec<(usize, Severity)> {
            hits("src/a.ts", text, rule)
                .into_iter()
                .map(|h| (h.0, h.1))
                .collect()
        };
        assert_eq!(found_in("ts-ignore"), vec![(1, Severity::Medium)]);
        assert_eq!(found_in("eslint-disable"), vec![(3, Severity::Low)]);
        assert_eq!(
            found_in("any-type"),
            vec![(2, Severity::Low), (6, Severity::Low)]
        );
        let debug = "function f() {\n  debugger;\n  const s = `\ndebugger\n`;\n}\n";
        assert_eq!(
            hits("src/b.js", debug, "debugger")
                .into_iter()
                .map(|h| h.0)
                .collect::<Vec<_>>(),
            vec![2]
        );
    }

    #[test]
    fn js_test_code_is_known_by_its_paths() {
        let rules = crate::RuleSet::builtin().expect("the builtin rules load");
        for path in [
            "src/a.test.js",
            "src/a.spec.tsx",
            "src/__tests__/a.js",
            "test/a.js",
            "tests/a.ts",
            "spec/a.js",
            "e2e/login.ts",
            "cypress/e2e/login.cy.js",
            "playwright/login.ts",
            "src/login.e2e.ts",
        ] {
            let language = rules.language_of(path);
            assert!(rules.is_test_path(language, path), "{path}");
        }
        for path in ["src/latest.js", "src/spectrum.ts", "lib/contest.js"] {
            assert!(!rules.is_test_path(rules.language_of(path), path), "{path}");
        }
    }

    #[test]
    fn a_call_of_an_undefined_p_is_a_debug_dump_hint() {
        use super::super::{found, graded};
        use crate::{Confidence, Severity};
        let js = "exports.handle = function (req, res) {\n  p(req.headers)\n  res.end('ok')\n}\n";
        assert_eq!(found("lib/server.js", "", js, "debug-p").len(), 1);
        assert_eq!(
            graded("lib/server.js", js, "debug-p"),
            vec![(Severity::Medium, Confidence::Low)]
        );
        // Defined or bound in the file, passed on, or a method: not the global.
        let silent = [
            "const p = require('./print')\np(x)\n",
            "function p(x) { return x }\np(1)\n",
            "items.forEach(function (p) {\n  p(1)\n})\n",
            "const run = (p) => {\n  p()\n}\n",
            "import { p } from './log'\np(x)\n",
            "obj.p(x)\nconst y = p\n",
            "wait(p)\np(x)\n",
            "const q = p(x)\n",
        ];
        for js in silent {
            assert!(found("lib/a.js", "", js, "debug-p").is_empty(), "{js}");
        }
        // Tests may print.
        let test = "it('a', () => {\n  p(res)\n})\n";
        assert!(found("test/a.test.js", "", test, "debug-p").is_empty());
    }
}
