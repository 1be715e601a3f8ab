//! Checks on the parse of Go files: SQL formatted (`fmt.Sprintf`) or concatenated from
//! values, and shell commands (`exec.Command("sh", "-c", …)`) built from values.
//!
//! Values are judged as in the Rust checks: literals, constants (the file's `const`
//! declarations, `ALL_CAPS`) and what a quoting call returns (`pq.QuoteIdentifier`) are not
//! input; a parameter of the enclosing function, an input-like name (`r.FormValue`,
//! `os.Args`, `userID`…) or a call on one is; anything else is of unknown origin (medium
//! confidence). Numbers formatted or converted into SQL (`%d`, `int` parameters,
//! `strconv.Itoa`) cannot carry quotes: medium at most.

use std::collections::HashSet;

use tree_sitter::Node;

use super::input::reads_as_input;
use super::rust::{Origin, SHELLS, all_caps, is_command_flag, sanitises, sql_concatenation};
use super::sql::{has_placeholders, is_sql_literal, names_position, sql_confidence};
use super::{Hit, Input, lines_of};
use crate::rules::{CheckId, Confidence};
use crate::syntax::Syntax;

/// Runs the Go checks.
pub(super) fn check(input: &Input<'_>, syntax: &Syntax<'_>, out: &mut Vec<Hit>) {
    let _ = input;
    let consts = const_names(syntax);
    let values = Values {
        syntax,
        consts: &consts,
    };
    syntax.walk(|node, kind| match kind {
        "call_expression" => {
            sql_sprintf(&values, node, out);
            shell_command(&values, node, out);
        }
        "binary_expression" => sql_concat(&values, node, out),
        _ => {}
    });
}

/// Calls that turn a number into text: what they give cannot break out of SQL quoting.
const NUMBER_TEXT: &[&str] = &[
    "strconv.Itoa",
    "strconv.FormatInt",
    "strconv.FormatUint",
    "strconv.FormatFloat",
    "strconv.FormatBool",
];

/// The names the file declares `const` (`const x = …`, and each line of a `const ( … )`
/// block). Read from the text: the parse may cover only the code around the change, and a
/// constant is often declared far from where it is used.
fn const_names(syntax: &Syntax<'_>) -> HashSet<String> {
    let mut out = HashSet::new();
    let mut in_block = false;
    for line in syntax.text.lines() {
        let line = line.trim();
        let spec = if in_block {
            if line.starts_with(')') {
                in_block = false;
                continue;
            }
            line
        } else if let Some(rest) = line.strip_prefix("const") {
            let rest = rest.trim_start();
            if rest.starts_with('(') {
                in_block = true;
                continue;
            }
            if rest.len() == line.len() - "const".len() {
                // `constant := …`: not a declaration.
                continue;
            }
            rest
        } else {
            continue;
        };
        // `a, b = 1, 2`, `x int = 3`, `y` (iota): the names before a type or `=`.
        let names = spec.split(['=', '/']).next().unwrap_or("");
        for part in names.split(',') {
            if let Some(name) = part.split_whitespace().next()
                && name.chars().all(|c| c.is_alphanumeric() || c == '_')
            {
                out.insert(name.to_owned());
            }
        }
    }
    out
}

/// The text of a string literal, quotes included.
fn literal<'a>(syntax: &Syntax<'a>, node: Node<'_>) -> Option<&'a str> {
    matches!(
        node.kind(),
        "interpreted_string_literal" | "raw_string_literal"
    )
    .then(|| syntax.text_of(node))
}

/// The arguments of a call, comments left out.
fn arguments(node: Node<'_>) -> Vec<Node<'_>> {
    let Some(list) = node.child_by_field_name("arguments") else {
        return Vec::new();
    };
    let mut cursor = list.walk();
    list.named_children(&mut cursor)
        .filter(|c| c.kind() != "comment")
        .collect()
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
            "interpreted_string_literal"
            | "raw_string_literal"
            | "rune_literal"
            | "int_literal"
            | "float_literal"
            | "imaginary_literal"
            | "true"
            | "false"
            | "nil"
            | "iota" => Origin::Literal,
            "identifier" => self.name_origin(self.syntax.text_of(node), node),
            "selector_expression" | "index_expression" | "slice_expression" => {
                let root = node.child_by_field_name("operand").map(|o| self.origin(o));
                if root == Some(Origin::Input) || reads_as_input(self.syntax.text_of(node), false) {
                    Origin::Input
                } else {
                    Origin::Unknown
                }
            }
            "parenthesized_expression" | "unary_expression" => node
                .named_child(node.named_child_count().saturating_sub(1))
                .map_or(Origin::Unknown, |n| self.origin(n)),
            "binary_expression" => {
                let mut cursor = node.walk();
                node.named_children(&mut cursor)
                    .map(|c| self.origin(c))
                    .max()
                    .unwrap_or(Origin::Unknown)
            }
            "call_expression" => self.call_origin(node),
            _ => Origin::Unknown,
        }
    }

    /// A call's result: what it formats (`fmt.Sprintf`) or converts (`string(b)`); unknown
    /// at most when it turns a number into text (`strconv.Itoa`); not raw input when it quotes
    /// or escapes; input when its name or an argument is; else of unknown origin.
    fn call_origin(&self, node: Node<'_>) -> Origin {
        let function = node
            .child_by_field_name("function")
            .map_or("", |f| self.syntax.text_of(f));
        let args = arguments(node);
        let of_args = |args: &[Node<'_>]| {
            args.iter()
                .map(|a| self.origin(*a))
                .max()
                .unwrap_or(Origin::Literal)
        };
        match function {
            "fmt.Sprintf" => of_args(args.get(1..).unwrap_or_default()),
            "fmt.Sprint" | "string" | "strings.TrimSpace" | "strings.ToLower"
            | "strings.ToUpper" => of_args(&args),
            f if NUMBER_TEXT.contains(&f) => of_args(&args).min(Origin::Unknown),
            f if sanitises(f) => Origin::Literal,
            f if reads_as_input(f, false) => Origin::Input,
            _ if args.iter().any(|a| self.origin(*a) == Origin::Input) => Origin::Input,
            _ => Origin::Unknown,
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
}

/// The type of the parameter `name` of the function or function literal around `at`;
/// `None` if it is not a parameter.
fn parameter_type<'a>(syntax: &Syntax<'a>, name: &str, at: Node<'_>) -> Option<&'a str> {
    let mut node = at.parent();
    while let Some(n) = node {
        if matches!(
            n.kind(),
            "function_declaration" | "method_declaration" | "func_literal"
        ) && let Some(params) = n.child_by_field_name("parameters")
        {
            let mut cursor = params.walk();
            let declared: Vec<Node<'_>> = params.named_children(&mut cursor).collect();
            let found = declared.iter().find(|d| {
                let mut cursor = d.walk();
                d.children_by_field_name("name", &mut cursor)
                    .any(|n| syntax.text_of(n) == name)
            });
            if let Some(d) = found {
                return Some(
                    d.child_by_field_name("type")
                        .map_or("", |t| syntax.text_of(t)),
                );
            }
        }
        node = n.parent();
    }
    None
}

/// A number or boolean type: its text cannot break out of quoting.
fn is_number_type(ty: &str) -> bool {
    matches!(
        ty,
        "int"
            | "int8"
            | "int16"
            | "int32"
            | "int64"
            | "uint"
            | "uint8"
            | "uint16"
            | "uint32"
            | "uint64"
            | "uintptr"
            | "float32"
            | "float64"
            | "byte"
            | "rune"
            | "bool"
    )
}

/// The verbs of a `fmt` format string, in order, each with the offset of its `%` (`%%` is
/// not one).
fn verbs(template: &str) -> Vec<(char, usize)> {
    let mut out = Vec::new();
    let mut chars = template.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if c != '%' {
            continue;
        }
        if chars.peek().is_some_and(|(_, c)| *c == '%') {
            chars.next();
            continue;
        }
        // Flags, an argument index, width and precision come before the verb.
        for (_, v) in chars.by_ref() {
            if v.is_ascii_alphabetic() {
                out.push((v, at));
                break;
            }
        }
    }
    out
}

/// A verb that formats a number or a boolean: its text cannot break out of SQL quoting.
fn is_numeric_verb(verb: char) -> bool {
    matches!(
        verb,
        'd' | 'b' | 'o' | 'O' | 'x' | 'X' | 'e' | 'E' | 'f' | 'F' | 'g' | 'G' | 't' | 'c' | 'U'
    )
}

/// `fmt.Sprintf("SELECT … %s …", x)` with a value that is not a literal or constant.
fn sql_sprintf(values: &Values<'_, '_>, node: Node<'_>, out: &mut Vec<Hit>) {
    let syntax = values.syntax;
    let is_sprintf = node
        .child_by_field_name("function")
        .is_some_and(|f| syntax.text_of(f) == "fmt.Sprintf");
    if !is_sprintf {
        return;
    }
    let args = arguments(node);
    let Some(template) = args.first().and_then(|t| literal(syntax, *t)) else {
        return;
    };
    if !is_sql_literal(template) {
        return;
    }
    let verbs = verbs(template);
    let worst = args[1..]
        .iter()
        .enumerate()
        .filter_map(|(i, a)| {
            let origin = values.origin(*a);
            let verb = verbs.get(i);
            let numeric = verb.is_some_and(|(v, _)| is_numeric_verb(*v));
            let name = verb.is_some_and(|(_, at)| names_position(&template[..*at]));
            let origin = if numeric {
                origin.min(Origin::Unknown)
            } else {
                origin
            };
            sql_confidence(origin, name).map(|c| (c, *a))
        })
        .min_by_key(|(c, _)| *c);
    let Some((mut confidence, value)) = worst else {
        return;
    };
    if has_placeholders(template) {
        confidence = Confidence::Low;
    }
    let how = format!("fmt.Sprintf with `{}`", syntax.text_of(value));
    out.push(
        Hit::new(CheckId::SqlInjection, lines_of(node))
            .confidence(confidence)
            .with("how", how),
    );
}

/// `"SELECT … " + x` (a chain of `+` holding SQL text and a value that is not a literal or
/// constant), reported once, for the whole chain.
fn sql_concat(values: &Values<'_, '_>, node: Node<'_>, out: &mut Vec<Hit>) {
    let syntax = values.syntax;
    out.extend(sql_concatenation(
        syntax,
        node,
        |n| literal(syntax, n),
        |n| values.origin(n),
    ));
}

/// `exec.Command("sh", "-c", x)` (or `exec.CommandContext(ctx, …)`) with `x` not a literal
/// or constant. A program run without a shell (`exec.Command("git", args...)`) is not one.
fn shell_command(values: &Values<'_, '_>, node: Node<'_>, out: &mut Vec<Hit>) {
    let syntax = values.syntax;
    let function = node
        .child_by_field_name("function")
        .map_or("", |f| syntax.text_of(f));
    let skip = match function {
        "exec.Command" => 0,
        "exec.CommandContext" => 1,
        _ => return,
    };
    let args = arguments(node);
    let args = args.get(skip..).unwrap_or_default();
    let program = args
        .first()
        .and_then(|p| literal(syntax, *p))
        .map(|p| p.trim_matches(['"', '`']));
    let Some(program) = program.filter(|p| SHELLS.contains(p)) else {
        return;
    };
    let flag = args.iter().skip(1).position(|a| {
        literal(syntax, *a).is_some_and(|t| is_command_flag(t.trim_matches(['"', '`'])))
    });
    let Some(script) = flag.and_then(|i| args.get(i + 2)) else {
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

#[cfg(test)]
mod tests {
    use crate::checks::{found, graded, lines};
    use crate::rules::{Confidence, Severity};

    #[test]
    fn prints_count_only_in_library_packages() {
        let lib = "package store\n\nfunc f(x int) {\n\tfmt.Println(x)\n\tfmt.Printf(\"%d\\n\", x)\n\tfmt.Print(x)\n\tprintln(x)\n}\n";
        assert_eq!(lines("store/db.go", lib, "go-print"), vec![4, 5, 6, 7]);
        assert_eq!(
            graded("store/db.go", lib, "go-print")[0],
            (Severity::Medium, Confidence::Medium)
        );
        // Programs, tests and examples print.
        let main = lib.replace("package store", "package main");
        assert!(lines("server.go", &main, "go-print").is_empty());
        for path in [
            "store/db_test.go",
            "examples/basic/db.go",
            "cmd/tool/db.go",
            "internal/testutil/db.go",
        ] {
            assert!(lines(path, lib, "go-print").is_empty(), "{path}");
        }
        // Errors to stderr, formatting to a string, logging, strings and comments.
        let quiet = "package store\n\nfunc f(x int) string {\n\tfmt.Fprintf(os.Stderr, \"warning: %d\\n\", x)\n\tfmt.Fprintln(w, x)\n\tlog.Printf(\"x=%d\", x)\n\t// fmt.Println(x)\n\treturn fmt.Sprintf(\"fmt.Println(%d)\", x)\n}\n";
        assert!(lines("store/db.go", quiet, "go-print").is_empty());
    }

    #[test]
    fn context_todo_is_code_not_a_todo() {
        let code = "package x\n\nfunc f() {\n\tg(context.TODO())\n\t// TODO: pass the caller's context\n}\n";
        assert_eq!(lines("x/x.go", code, "todo-comment"), vec![5]);
    }

    #[test]
    fn sql_formatted_or_concatenated_from_input_is_critical() {
        let sprintf = "package store\n\nfunc Find(db *sql.DB, id string) {\n\tq := fmt.Sprintf(\"SELECT * FROM users WHERE id = '%s'\", id)\n\tdb.Query(q)\n}\n";
        assert_eq!(lines("store/db.go", sprintf, "sql-injection"), vec![4]);
        assert_eq!(
            graded("store/db.go", sprintf, "sql-injection"),
            vec![(Severity::Critical, Confidence::High)]
        );
        let concat = "package store\n\nfunc Find(db *sql.DB, r *http.Request) {\n\tdb.QueryRow(\"SELECT name FROM users WHERE id = \" +\n\t\tr.FormValue(\"id\"))\n}\n";
        assert_eq!(lines("store/db.go", concat, "sql-injection"), vec![4]);
        assert_eq!(
            graded("store/db.go", concat, "sql-injection"),
            vec![(Severity::Critical, Confidence::High)]
        );
        // A number cannot break out of quoting: still a finding, of medium confidence.
        let number = "package store\n\nfunc Find(db *sql.DB, id int) {\n\tdb.Exec(fmt.Sprintf(\"DELETE FROM jobs WHERE id = %d\", id))\n\tdb.Exec(\"DELETE FROM jobs WHERE id = \" + strconv.Itoa(id))\n}\n";
        assert_eq!(
            graded("store/db.go", number, "sql-injection"),
            vec![
                (Severity::Critical, Confidence::Medium),
                (Severity::Critical, Confidence::Medium)
            ]
        );
        // A value of unknown origin: medium.
        let local = "package store\n\nfunc Find(db *sql.DB) {\n\tv := next()\n\tdb.Query(fmt.Sprintf(\"select * from t where v = '%v'\", v))\n}\n";
        assert_eq!(
            graded("store/db.go", local, "sql-injection"),
            vec![(Severity::Critical, Confidence::Medium)]
        );
    }

    #[test]
    fn sql_with_parameters_or_constants_is_silent() {
        let cases = [
            "package store\n\nfunc Find(db *sql.DB, id string) {\n\tdb.Query(\"SELECT * FROM users WHERE id = $1\", id)\n\tdb.QueryRow(\"SELECT * FROM users WHERE id = ?\", id)\n}\n",
            "package store\n\nconst users = \"users\"\n\nfunc Find(db *sql.DB) {\n\tdb.Query(fmt.Sprintf(\"SELECT * FROM %s WHERE active\", users))\n\tdb.Query(\"SELECT * FROM \" + users + \" WHERE active\")\n}\n",
            "package store\n\nfunc Greet(name string) string {\n\treturn fmt.Sprintf(\"hello %s\", name) + name\n}\n",
        ];
        for case in cases {
            assert!(
                lines("store/db.go", case, "sql-injection").is_empty(),
                "{case}"
            );
        }
        // Constants declared away from the change, alone or in a block.
        let old = "package store\n\nconst owner = \"root\"\n\nconst (\n\trole = \"admin\"\n\tlimit, offset = 10, 0\n)\n\nfunc A() {}\n";
        let new = format!(
            "{old}\nfunc Find(db *sql.DB) {{\n\tdb.Query(\"SELECT * FROM t WHERE o = '\" + owner + \"' AND r = '\" + role + \"' LIMIT \" + offset)\n}}\n"
        );
        assert!(found("store/db.go", old, &new, "sql-injection").is_empty());
        let sprintf = "package store\n\nfunc Find(db *sql.DB, id string) {\n\tdb.Query(fmt.Sprintf(\"SELECT * FROM t WHERE id = '%s'\", id))\n}\n";
        assert!(lines("store/db_test.go", sprintf, "sql-injection").is_empty());
        // Where a table name goes (names cannot be parameters): a hint; a quoted name is not
        // raw input.
        let names = "package store\n\nfunc (m *Store) Version(db *sql.DB) {\n\tdb.QueryRow(\"SELECT version FROM `\" + m.config.MigrationsTable + \"` LIMIT 1\")\n\tdb.Exec(fmt.Sprintf(`DELETE FROM \"%s\"`, m.table()))\n}\n";
        assert_eq!(
            graded("store/db.go", names, "sql-injection"),
            vec![
                (Severity::Critical, Confidence::Low),
                (Severity::Critical, Confidence::Low)
            ]
        );
        let brackets = "package store\n\nfunc (m *Store) Create(db *sql.DB) {\n\tdb.Exec(\"IF OBJECT_ID(N'[\" + m.config.SchemaName + \"].[\" + m.config.Table + \"]') IS NULL SELECT 1 FROM t\")\n}\n";
        assert_eq!(
            graded("store/db.go", brackets, "sql-injection"),
            vec![(Severity::Critical, Confidence::Low)]
        );
        let quoted = "package store\n\nfunc (m *Store) Lock(db *sql.DB) {\n\tdb.Exec(\"SELECT * FROM \" + pq.QuoteIdentifier(m.config.LockTable) + \" WHERE id = $1\", 1)\n}\n";
        assert!(lines("store/db.go", quoted, "sql-injection").is_empty());
        // A table name formatted into SQL that binds its values: a hint only.
        let table = "package store\n\nfunc Find(db *sql.DB, table string, id int) {\n\tdb.Query(fmt.Sprintf(\"SELECT * FROM %s WHERE id = $1\", table), id)\n}\n";
        assert_eq!(
            graded("store/db.go", table, "sql-injection"),
            vec![(Severity::Critical, Confidence::Low)]
        );
    }

    #[test]
    fn shell_commands_built_from_values_are_critical() {
        let concat = "package run\n\nfunc Ls(dir string) {\n\texec.Command(\"sh\", \"-c\", \"ls \"+dir).Run()\n}\n";
        assert_eq!(lines("run/run.go", concat, "shell-injection"), vec![4]);
        assert_eq!(
            graded("run/run.go", concat, "shell-injection"),
            vec![(Severity::Critical, Confidence::High)]
        );
        let sprintf = "package run\n\nfunc Ls(ctx context.Context, dir string) {\n\texec.CommandContext(ctx, \"/bin/bash\", \"-c\", fmt.Sprintf(\"ls %s\", dir)).Run()\n}\n";
        assert_eq!(
            graded("run/run.go", sprintf, "shell-injection"),
            vec![(Severity::Critical, Confidence::High)]
        );
        let local = "package run\n\nfunc Run() {\n\tscript := build()\n\texec.Command(\"bash\", \"-c\", script).Run()\n}\n";
        assert_eq!(
            graded("run/run.go", local, "shell-injection"),
            vec![(Severity::Critical, Confidence::Medium)]
        );
        let silent = [
            "package run\n\nfunc Git(args []string) {\n\texec.Command(\"git\", args...).Run()\n}\n",
            "package run\n\nfunc Ls() {\n\texec.Command(\"sh\", \"-c\", \"ls -la | wc -l\").Run()\n}\n",
            "package run\n\nconst script = \"make all\"\n\nfunc Make() {\n\texec.Command(\"sh\", \"-c\", script).Run()\n}\n",
        ];
        for case in silent {
            assert!(
                lines("run/run.go", case, "shell-injection").is_empty(),
                "{case}"
            );
        }
        assert!(lines("run/run_test.go", concat, "shell-injection").is_empty());
    }

    #[test]
    fn tls_verification_off_is_found_outside_tests() {
        let code = "package client\n\nvar c = &tls.Config{InsecureSkipVerify: true}\n";
        assert_eq!(lines("client/tls.go", code, "tls-verify-off"), vec![3]);
        assert!(lines("client/tls_test.go", code, "tls-verify-off").is_empty());
        let on = "package client\n\nvar c = &tls.Config{InsecureSkipVerify: false}\n";
        assert!(lines("client/tls.go", on, "tls-verify-off").is_empty());
    }
}
