//! Checks on the parse of Python files: `except` clauses that swallow every error, Python 2
//! statements, and the sinks where a value becomes code (SQL, a shell command, `eval`/`exec`,
//! deserialisation), judged by where the value comes from.
//!
//! A value is a literal (string, number, ALL_CAPS constant, `len(…)`, placeholders such as
//! `", ".join(["?"] * n)`), input (a parameter of the function around it, a name or attribute
//! that reads as input: `request`, `args`, `params`, `user`…, or a call on one), or of unknown
//! origin. Input gives high confidence, unknown medium; literals alone are no finding.

use std::cell::OnceCell;
use std::collections::HashSet;

use tree_sitter::Node;

use self::origin::{assigned, origin};
use self::sql::{sql, sql_names};
use super::sql::may_be_sql;
use super::{Hit, Input, lines_of};
use crate::rules::{CheckId, Confidence};
use crate::syntax::{Grammar, Syntax};

mod origin;
mod sql;

/// Runs the Python checks.
pub(super) fn check(input: &Input<'_>, syntax: &Syntax<'_>, out: &mut Vec<Hit>) {
    // Names assigned SQL, only looked for where the file mentions SQL at all.
    let sql_names = if may_be_sql(syntax.text) {
        sql_names(syntax)
    } else {
        Vec::new()
    };
    let py2_file = OnceCell::new();
    let mut sql_lines = HashSet::new();
    syntax.walk(|node, kind| {
        if !input.is_new(&lines_of(node)) {
            return;
        }
        let hit = match kind {
            "except_clause" => empty_except(syntax, node),
            "print_statement" | "exec_statement" => Some(python2(
                node,
                *py2_file.get_or_init(|| is_python2(&input.file.old_text)),
            )),
            "call" => call(syntax, node),
            _ => None,
        };
        out.extend(hit);
        if let Some(hit) = sql(syntax, &sql_names, node)
            && sql_lines.insert(hit.line)
        {
            out.push(hit);
        }
    });
}

// --- empty except ----------------------------------------------------------------------------

/// An `except` that catches everything (bare, `Exception`, `BaseException`) and does nothing.
/// A narrow named exception with `pass` (`except KeyError: pass`) is an idiom, not a
/// swallowed error.
fn empty_except(syntax: &Syntax<'_>, clause: Node<'_>) -> Option<Hit> {
    let mut cursor = clause.walk();
    let values: Vec<Node<'_>> = clause
        .children_by_field_name("value", &mut cursor)
        .map(|v| {
            if v.kind() == "as_pattern" {
                v.named_child(0).unwrap_or(v)
            } else {
                v
            }
        })
        .collect();
    let broad = values.is_empty() || values.iter().any(|v| is_broad(syntax, *v));
    if !broad {
        return None;
    }
    let mut cursor = clause.walk();
    let block = clause
        .named_children(&mut cursor)
        .find(|n| n.kind() == "block")?;
    let mut cursor = block.walk();
    let statements: Vec<Node<'_>> = block
        .named_children(&mut cursor)
        .filter(|n| n.kind() != "comment")
        .collect();
    let [only] = statements.as_slice() else {
        return None;
    };
    let body = match only.kind() {
        "pass_statement" => "`pass`",
        "continue_statement" => "`continue`",
        "expression_statement" => match only.named_child(0).map(|n| n.kind()) {
            Some("ellipsis") if only.named_child_count() == 1 => "`...`",
            Some("string") if only.named_child_count() == 1 => "a string",
            _ => return None,
        },
        _ => return None,
    };
    let head = match values.as_slice() {
        [] => "except:".to_owned(),
        _ => {
            let types: Vec<&str> = values.iter().map(|v| syntax.text_of(*v)).collect();
            format!("except {}:", types.join(", "))
        }
    };
    // `continue` skips an item on purpose (less sure); a comment in the clause says why the
    // error is dropped (a hint).
    let commented = syntax
        .comments
        .iter()
        .any(|c| clause.byte_range().contains(&c.bytes.start));
    let confidence = if commented {
        Confidence::Low
    } else if only.kind() == "continue_statement" {
        Confidence::Medium
    } else {
        Confidence::High
    };
    Some(
        Hit::new(CheckId::EmptyExcept, lines_of(clause))
            .confidence(confidence)
            .with("what", format!("`{head}` with only {body}")),
    )
}

/// `Exception`, `BaseException` (also `builtins.Exception`, or in a tuple).
fn is_broad(syntax: &Syntax<'_>, node: Node<'_>) -> bool {
    match node.kind() {
        "tuple" | "parenthesized_expression" => {
            let mut cursor = node.walk();
            node.named_children(&mut cursor)
                .any(|n| is_broad(syntax, n))
        }
        "identifier" | "attribute" => {
            let text = syntax.text_of(node);
            let last = text.rsplit('.').next().unwrap_or(text);
            matches!(last, "Exception" | "BaseException")
        }
        _ => false,
    }
}

// --- Python 2 statements ---------------------------------------------------------------------

/// A Python 2 `print x` / `exec code` statement: a syntax error on Python 3, or, in a file
/// that was Python 2 already, a print like any other (one severity lower, less sure).
fn python2(node: Node<'_>, py2_file: bool) -> Hit {
    let what = if node.kind() == "exec_statement" {
        "exec"
    } else {
        "print"
    };
    let hit = Hit::new(CheckId::PrintStatement, lines_of(node)).with("what", what);
    if py2_file {
        hit.lower(1)
            .confidence(Confidence::Medium)
            .with("why", "the file is Python 2 already")
    } else {
        hit.with("why", "a syntax error on Python 3")
    }
}

/// Whether `old` (the old side of a file) has a Python 2 print or exec statement: the file
/// was Python 2 already. Parsed only for files where the check found one on the new side.
fn is_python2(old: &str) -> bool {
    let Some(syntax) = Syntax::parse(Grammar::Python, old) else {
        return false;
    };
    let mut found = false;
    syntax.walk(|_, kind| found |= matches!(kind, "print_statement" | "exec_statement"));
    found
}

// --- calls: shell, eval/exec, deserialisation --------------------------------------------------

/// The findings of one call.
fn call(syntax: &Syntax<'_>, call: Node<'_>) -> Option<Hit> {
    let function = call.child_by_field_name("function")?;
    let name: String = syntax
        .text_of(function)
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    let args = call.child_by_field_name("arguments")?;
    match name.as_str() {
        "eval" | "exec" => code_injection(syntax, call, &name, args),
        "os.system"
        | "os.popen"
        | "subprocess.getoutput"
        | "subprocess.getstatusoutput"
        | "commands.getoutput"
        | "commands.getstatusoutput" => shell_command(syntax, call, positional(args, 0)?),
        "subprocess.run"
        | "subprocess.call"
        | "subprocess.Popen"
        | "subprocess.check_output"
        | "subprocess.check_call"
        | "Popen"
        | "check_output"
        | "check_call" => {
            let shell = keyword(syntax, args, "shell")?;
            if syntax.text_of(shell) != "True" {
                return None;
            }
            let command = positional(args, 0).or_else(|| keyword(syntax, args, "args"))?;
            shell_command(syntax, call, command)
        }
        _ => deserialize(syntax, call, &name, args),
    }
}

/// `eval(x)` / `exec(x)` of a value that is not a literal (a literal's code is in the diff for
/// the reviewer to read: no finding).
fn code_injection(syntax: &Syntax<'_>, call: Node<'_>, name: &str, args: Node<'_>) -> Option<Hit> {
    let code = positional(args, 0)?;
    let mut confidence = origin(syntax, 0, code).confidence()?;
    // `exec(compile(f.read(), path, "exec"))`: a file the program was told to run (a config
    // file, a startup script) is a hint, not injection.
    if reads_a_file(syntax, code) {
        confidence = Confidence::Low;
    }
    Some(
        Hit::new(CheckId::CodeInjection, lines_of(call))
            .confidence(confidence)
            .with("call", format!("{name}()")),
    )
}

/// Whether `code` (or the source given to `compile(…)`) is a file's content: `f.read()`,
/// `path.read_text()`.
fn reads_a_file(syntax: &Syntax<'_>, code: Node<'_>) -> bool {
    let Some(function) = code
        .child_by_field_name("function")
        .filter(|_| code.kind() == "call")
    else {
        return false;
    };
    let name = syntax.text_of(function);
    if name == "compile" {
        return code
            .child_by_field_name("arguments")
            .and_then(|a| positional(a, 0))
            .is_some_and(|source| reads_a_file(syntax, source));
    }
    let last = name.rsplit('.').next().unwrap_or(name);
    matches!(last, "read" | "read_text" | "read_bytes")
}

/// A command run through a shell: critical when built from values (or not a literal), two
/// severities lower when it is a fixed string.
fn shell_command(syntax: &Syntax<'_>, call: Node<'_>, command: Node<'_>) -> Option<Hit> {
    let hit = Hit::new(CheckId::ShellInjection, lines_of(call));
    // `command = "…%s" % x` before the call: how it was built.
    let how = how_built(syntax, command).or_else(|| {
        (command.kind() == "identifier")
            .then(|| assigned(syntax, command))
            .and_then(|values| values.into_iter().find_map(|v| how_built(syntax, v)))
    });
    match origin(syntax, 0, command).confidence() {
        Some(confidence) => Some(
            hit.confidence(confidence)
                .with("how", how.unwrap_or("a command that is not a literal")),
        ),
        None => Some(
            hit.lower(2)
                .confidence(Confidence::Low)
                .with("how", how.unwrap_or("a fixed string, run by a shell")),
        ),
    }
}

/// How a string expression is built from values, if it is.
fn how_built(syntax: &Syntax<'_>, node: Node<'_>) -> Option<&'static str> {
    match node.kind() {
        "parenthesized_expression" => node.named_child(0).and_then(|n| how_built(syntax, n)),
        "binary_operator" => match node.child_by_field_name("operator").map(|o| o.kind()) {
            Some("+") => Some("concatenation"),
            Some("%") => Some("% formatting"),
            _ => None,
        },
        "call" if is_format_call(syntax, node) => Some(".format()"),
        "string" | "concatenated_string" if has_interpolation(node) => Some("an f-string"),
        _ => None,
    }
}

/// `pickle.loads`, `marshal.loads`, `yaml.load` without a safe loader, `jsonpickle.decode`:
/// critical when what they read is request data, one severity lower (and less sure) otherwise.
fn deserialize(syntax: &Syntax<'_>, call: Node<'_>, name: &str, args: Node<'_>) -> Option<Hit> {
    let (module, function) = name.rsplit_once('.')?;
    let advice = match (module, function) {
        ("pickle" | "cPickle" | "_pickle" | "dill", "loads" | "load" | "Unpickler") => {
            "never unpickle data from outside the program; use JSON"
        }
        ("marshal", "loads" | "load") => "marshal is for trusted data only; use JSON",
        ("jsonpickle", "decode") => "jsonpickle builds any object; use json",
        ("yaml", "unsafe_load" | "unsafe_load_all") => "use yaml.safe_load",
        ("yaml", "load" | "load_all") => {
            let loader = keyword(syntax, args, "Loader").or_else(|| positional(args, 1));
            let safe = loader.is_some_and(|l| {
                let text = syntax.text_of(l);
                let last = text.rsplit('.').next().unwrap_or(text);
                matches!(last, "SafeLoader" | "CSafeLoader" | "BaseLoader")
            });
            if safe {
                return None;
            }
            "use yaml.safe_load (or Loader=yaml.SafeLoader)"
        }
        _ => return None,
    };
    let hit = Hit::new(CheckId::UnsafeDeserialize, lines_of(call))
        .with("call", format!("{name}()"))
        .with("advice", advice);
    let untrusted = positional(args, 0).is_some_and(|a| is_request_data(syntax, a));
    Some(if untrusted {
        hit
    } else {
        hit.lower(1).confidence(Confidence::Medium)
    })
}

/// Whether `node` reads request data (`request.data`, `flask.request.get_data()`,
/// `self.request.body`, `request.files[…].read()`) or a socket (`sock.recv(…)`).
fn is_request_data(syntax: &Syntax<'_>, node: Node<'_>) -> bool {
    const DATA: &[&str] = &[
        "data", "body", "get_data", "files", "form", "args", "values", "json", "get_json",
        "stream", "content", "POST", "GET", "FILES", "COOKIES", "cookies",
    ];
    let mut found = false;
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        if n.kind() == "attribute"
            && let (Some(object), Some(attribute)) = (
                n.child_by_field_name("object"),
                n.child_by_field_name("attribute"),
            )
        {
            let attribute = syntax.text_of(attribute);
            let object = syntax.text_of(object);
            let last = object.rsplit('.').next().unwrap_or(object);
            found |= matches!(last, "request" | "req") && DATA.contains(&attribute)
                || matches!(attribute, "recv" | "recvfrom" | "recv_into");
        }
        let mut cursor = n.walk();
        stack.extend(n.named_children(&mut cursor));
    }
    found
}

/// The `n`th positional argument of an argument list.
fn positional(args: Node<'_>, n: usize) -> Option<Node<'_>> {
    let mut cursor = args.walk();
    args.named_children(&mut cursor)
        .filter(|a| {
            !matches!(
                a.kind(),
                "keyword_argument" | "list_splat" | "dictionary_splat" | "comment"
            )
        })
        .nth(n)
}

/// The value of keyword argument `name`.
fn keyword<'t>(syntax: &Syntax<'_>, args: Node<'t>, name: &str) -> Option<Node<'t>> {
    let mut cursor = args.walk();
    args.named_children(&mut cursor)
        .filter(|a| a.kind() == "keyword_argument")
        .find(|a| {
            a.child_by_field_name("name")
                .is_some_and(|n| syntax.text_of(n) == name)
        })
        .and_then(|a| a.child_by_field_name("value"))
}

/// The function around `node`.
fn scope_of(node: Node<'_>) -> Option<Node<'_>> {
    let mut at = node.parent();
    while let Some(n) = at {
        if n.kind() == "function_definition" {
            return Some(n);
        }
        at = n.parent();
    }
    None
}

/// Whether a string has `{…}` interpolations (an f-string with values).
fn has_interpolation(node: Node<'_>) -> bool {
    let mut cursor = node.walk();
    node.named_children(&mut cursor)
        .any(|c| c.kind() == "interpolation" || c.kind() == "string" && has_interpolation(c))
}

/// `"…".format(…)` (on a string or a name).
fn is_format_call(syntax: &Syntax<'_>, node: Node<'_>) -> bool {
    node.child_by_field_name("function")
        .filter(|f| f.kind() == "attribute")
        .and_then(|f| f.child_by_field_name("attribute"))
        .is_some_and(|a| syntax.text_of(a) == "format")
}

#[cfg(test)]
mod tests {
    use super::super::{found, review_texts};
    use crate::{Confidence, Finding, Severity};

    /// The findings of `rule` for a new file `path` with text `new`.
    fn hits(path: &str, new: &str, rule: &str) -> Vec<Finding> {
        review_texts(path, "", new)
            .into_iter()
            .filter(|f| f.rule == rule)
            .collect()
    }

    /// `(1-based line, severity, confidence)` of each finding of `rule` in new file `lib/a.py`.
    fn at(new: &str, rule: &str) -> Vec<(usize, Severity, Confidence)> {
        hits("lib/a.py", new, rule)
            .into_iter()
            .map(|f| (f.line.unwrap_or(0), f.severity, f.confidence))
            .collect()
    }

    const H: Confidence = Confidence::High;
    const M: Confidence = Confidence::Medium;
    const L: Confidence = Confidence::Low;

    #[test]
    fn a_broad_except_that_does_nothing_is_a_swallowed_error() {
        let code = "def f(items):\n    try:\n        g()\n    except:\n        pass\n    try:\n        g()\n    except Exception as e:\n        ...\n    for i in items:\n        try:\n            g(i)\n        except (ValueError, BaseException):\n            continue\n";
        assert_eq!(
            at(code, "empty-except"),
            vec![
                (4, Severity::High, H),
                (8, Severity::High, H),
                (13, Severity::High, M)
            ]
        );
        let reason = &hits("lib/a.py", code, "empty-except")[0].reason;
        assert_eq!(reason, "`except:` with only `pass`: the error is swallowed");
    }

    #[test]
    fn a_narrow_except_or_one_that_handles_the_error_is_silent() {
        let code = "try:\n    import simplejson as json\nexcept ImportError:\n    pass\n\n\ndef find(maps, key):\n    for m in maps:\n        try:\n            return m[key]\n        except KeyError:\n            pass\n    try:\n        os.remove(p)\n    except (OSError, ValueError):\n        pass\n    try:\n        g()\n    except Exception:\n        log.exception(\"g failed\")\n    try:\n        g()\n    except Exception:\n        raise\n";
        assert!(at(code, "empty-except").is_empty());
    }

    #[test]
    fn a_comment_in_a_broad_empty_except_makes_it_a_hint() {
        let code = "try:\n    g()\nexcept Exception:  # best effort\n    pass\n";
        assert_eq!(at(code, "empty-except"), vec![(3, Severity::High, L)]);
        let code = "try:\n    v = loads(v)\nexcept Exception:\n    # Keep the string.\n    pass\n";
        assert_eq!(at(code, "empty-except"), vec![(3, Severity::High, L)]);
    }

    #[test]
    fn python2_print_and_exec_statements_are_found() {
        let code = "def f(x):\n    print x\n    print >>sys.stderr, \"x\", x\n    exec \"y = 1\"\n    print(x)\n";
        assert_eq!(
            at(code, "print-statement"),
            vec![
                (2, Severity::High, H),
                (3, Severity::High, H),
                (4, Severity::High, H)
            ]
        );
        let reasons: Vec<String> = hits("lib/a.py", code, "print-statement")
            .into_iter()
            .map(|f| f.reason)
            .collect();
        assert_eq!(
            reasons[0],
            "Python 2 `print` statement: a syntax error on Python 3"
        );
        assert_eq!(
            reasons[2],
            "Python 2 `exec` statement: a syntax error on Python 3"
        );
        // Lowered in test code, and in a file that was Python 2 already.
        let test = hits("tests/test_a.py", code, "print-statement");
        assert!(test.iter().all(|f| f.severity == Severity::Low));
        let old = "def f(x):\n    print x\n";
        let new = "def f(x):\n    print x\n    print x + 1\n";
        let py2: Vec<(usize, Severity)> = review_texts("lib/a.py", old, new)
            .into_iter()
            .filter(|f| f.rule == "print-statement")
            .map(|f| (f.line.unwrap_or(0), f.severity))
            .collect();
        assert_eq!(py2, vec![(3, Severity::Medium)]);
        // Prose in a docstring is not a print statement.
        let old = "def f(x):\n    \"\"\"\n    print the value\n    \"\"\"\n";
        let new = "def f(x):\n    \"\"\"\n    print the value\n    \"\"\"\n    print x\n";
        let py3: Vec<Severity> = review_texts("lib/a.py", old, new)
            .into_iter()
            .filter(|f| f.rule == "print-statement")
            .map(|f| f.severity)
            .collect();
        assert_eq!(py3, vec![Severity::High]);
        // Python 3 code that names print is not a statement.
        assert!(at("p = print\np(\"x\", end=\"\")\n", "print-statement").is_empty());
    }

    #[test]
    fn print_calls_are_debugging_only_in_library_code() {
        let code = "def f(x):\n    print(x)\n    return x\n";
        assert_eq!(
            found("lib/a.py", "", code, "print-call"),
            vec![("print-call".into(), 2)]
        );
        assert!(found("scripts/release.py", "", code, "print-call").is_empty());
        assert!(found("tests/test_a.py", "", code, "print-call").is_empty());
        let program =
            "def main():\n    print(\"done\")\n\n\nif __name__ == \"__main__\":\n    main()\n";
        assert!(found("lib/tool.py", "", program, "print-call").is_empty());
        let stderr = "def f(x):\n    print(x, file=sys.stderr)\n    print(x, file=out)\n";
        assert!(found("lib/a.py", "", stderr, "print-call").is_empty());
    }

    #[test]
    fn sql_joined_with_input_is_found_where_the_value_joins_it() {
        let code = concat!(
            "def find(cursor, name, uid, v):\n",
            "    cursor.execute(\"SELECT * FROM users WHERE name = '\" + name + \"'\")\n",
            "    q = (\"SELECT * FROM users \"\n",
            "         \"WHERE id = \" +\n",
            "         uid)\n",
            "    cursor.execute(f\"DELETE FROM users WHERE id = {uid}\")\n",
            "    cursor.execute(\"UPDATE users SET name = '%s'\" % name)\n",
            "    query = \"SELECT id FROM users\"\n",
            "    query += \" WHERE x = '%s'\" % v\n",
            "    cursor.execute(\"select id, name from users where id = {}\".format(uid))\n",
            "    cursor.execute(f\"SELECT * FROM t WHERE a = {name} AND b = ?\", (uid,))\n",
        );
        let lines: Vec<usize> = at(code, "sql-injection").iter().map(|h| h.0).collect();
        assert_eq!(lines, vec![2, 5, 6, 7, 9, 10, 11]);
        assert!(
            at(code, "sql-injection")
                .iter()
                .all(|h| h.1 == Severity::Critical && h.2 == H)
        );
        let how: Vec<String> = hits("lib/a.py", code, "sql-injection")
            .into_iter()
            .map(|f| f.reason)
            .collect();
        assert_eq!(
            how[0],
            "SQL built from values (concatenation): pass them as query parameters"
        );
        assert!(how[2].contains("(an f-string)") && how[3].contains("(% formatting)"));
        assert!(how[5].contains("(.format())"));
    }

    #[test]
    fn sql_joined_with_a_value_of_unknown_origin_is_less_sure() {
        let code = "def report(cursor):\n    who = pick()\n    cursor.execute(\"SELECT * FROM t WHERE a = \" + who)\n";
        assert_eq!(at(code, "sql-injection"), vec![(3, Severity::Critical, M)]);
    }

    #[test]
    fn a_value_where_a_table_name_goes_is_a_hint() {
        // Names cannot be query parameters: formatting them in is how such SQL is written.
        let code = concat!(
            "def scan(executor, table_name):\n",
            "    executor.execute('SELECT * FROM {}'.format(table_name))\n",
            "    executor.execute('INSERT INTO %s ?' % table_name, [doc])\n",
            "    executor.execute(f\"DROP TABLE {table_name}\")\n",
            "    executor.execute('SELECT * FROM ' + table_name + ' WHERE id = ' + table_name)\n",
        );
        assert_eq!(
            at(code, "sql-injection"),
            vec![
                (2, Severity::Medium, Confidence::Low),
                (3, Severity::Medium, Confidence::Low),
                (4, Severity::Medium, Confidence::Low),
                (5, Severity::Critical, H),
            ]
        );
    }

    #[test]
    fn sql_made_of_literals_constants_and_placeholders_is_silent() {
        let code = concat!(
            "TABLE = \"users\"\n",
            "def find(cursor, ids, uid):\n",
            "    cursor.execute(\"SELECT * FROM users WHERE id = %s\", (uid,))\n",
            "    cursor.execute(\"SELECT * FROM \" + TABLE + \" WHERE id = ?\", (uid,))\n",
            "    marks = \", \".join([\"?\"] * len(ids))\n",
            "    cursor.execute(\"SELECT * FROM users WHERE id IN (%s)\" % \", \".join([\"%s\"] * len(ids)), ids)\n",
            "    cursor.execute(f\"SELECT * FROM users LIMIT {len(ids)}\")\n",
            "    cursor.execute(\"SELECT * FROM users WHERE id IN (\" + marks + \")\", ids)\n",
            "    msg = \"Please select one item from \" + uid\n",
            "    label = \"delete from the list: %s\" % uid\n",
        );
        // `marks` is placeholders, by its assignment.
        assert!(at(code, "sql-injection").is_empty());
    }

    #[test]
    fn a_shell_command_built_from_values_is_critical() {
        let code = concat!(
            "import os, subprocess\n",
            "def run(path, cmd):\n",
            "    subprocess.run(\"ls \" + path, shell=True)\n",
            "    subprocess.check_output(f\"tar xf {path}\", shell=True)\n",
            "    os.system(\"rm -rf %s\" % path)\n",
            "    os.popen(cmd)\n",
            "    name = pick()\n",
            "    os.system(\"echo {}\".format(name))\n",
            "    subprocess.call(\"make clean\", shell=True)\n",
            "    os.system(\"ls \" + DIR)\n",
            "    command = 'rpcclient -U \"%s\" -c \"lsaquery\"' % path\n",
            "    command += \" -N\"\n",
            "    subprocess.Popen(command, shell=True)\n",
            "    fixed = \"make all\"\n",
            "    os.system(fixed)\n",
        );
        assert_eq!(
            at(code, "shell-injection"),
            vec![
                (3, Severity::Critical, H),
                (4, Severity::Critical, H),
                (5, Severity::Critical, H),
                (6, Severity::Critical, H),
                (8, Severity::Critical, M),
                (9, Severity::Medium, L),
                (10, Severity::Medium, L),
                (13, Severity::Critical, H),
                (15, Severity::Medium, L)
            ]
        );
        let reasons: Vec<String> = hits("lib/a.py", code, "shell-injection")
            .into_iter()
            .map(|f| f.reason)
            .collect();
        assert!(reasons[0].contains("(concatenation)"), "{}", reasons[0]);
        assert!(reasons[7].contains("(% formatting)"), "{}", reasons[7]);
    }

    #[test]
    fn a_command_without_a_shell_is_silent() {
        let code = "def run(path):\n    subprocess.run([\"ls\", path])\n    subprocess.run(\"ls \" + path, shell=False)\n    subprocess.Popen([\"tar\", \"xf\", path], shell=use_shell)\n";
        assert!(at(code, "shell-injection").is_empty());
    }

    #[test]
    fn eval_and_exec_of_a_value_are_code_injection() {
        let code = "def calc(expr):\n    x = eval(expr)\n    exec(\"y = \" + expr)\n    exec(load())\n    z = eval(\"1 + 2\")\n    exec(\"print(%d)\" % COUNT)\n    w = ast.literal_eval(expr)\n    model.eval()\n";
        assert_eq!(
            at(code, "code-injection"),
            vec![
                (2, Severity::Critical, H),
                (3, Severity::Critical, H),
                (4, Severity::Critical, M)
            ]
        );
        let reason = &hits("lib/a.py", code, "code-injection")[0].reason;
        assert!(reason.starts_with("eval() of a value"), "{reason}");
        // Running a file the program was pointed at is a hint; a compile of input is not.
        let code = "def load(filename, source):\n    with open(filename) as f:\n        exec(compile(f.read(), filename, \"exec\"), d)\n    exec(compile(source, filename, \"exec\"))\n    exec(b64decode(source))\n";
        assert_eq!(
            at(code, "code-injection"),
            vec![
                (3, Severity::Critical, L),
                (4, Severity::Critical, H),
                (5, Severity::Critical, H)
            ]
        );
    }

    #[test]
    fn deserialising_request_data_is_critical_and_other_data_high() {
        let code = concat!(
            "def view(request, sock, path):\n",
            "    a = pickle.loads(request.data)\n",
            "    b = pickle.loads(flask.request.get_data())\n",
            "    c = cPickle.loads(sock.recv(4096))\n",
            "    d = yaml.load(request.body)\n",
            "    e = pickle.load(open(path, \"rb\"))\n",
            "    f = yaml.load(text, Loader=yaml.FullLoader)\n",
            "    g = marshal.loads(blob)\n",
            "    h = yaml.unsafe_load(text)\n",
            "    i = jsonpickle.decode(text)\n",
        );
        assert_eq!(
            at(code, "unsafe-deserialize"),
            vec![
                (2, Severity::Critical, H),
                (3, Severity::Critical, H),
                (4, Severity::Critical, H),
                (5, Severity::Critical, H),
                (6, Severity::High, M),
                (7, Severity::High, M),
                (8, Severity::High, M),
                (9, Severity::High, M),
                (10, Severity::High, M)
            ]
        );
        let reason = &hits("lib/a.py", code, "unsafe-deserialize")[3].reason;
        assert!(
            reason.starts_with("yaml.load() runs code") && reason.contains("safe_load"),
            "{reason}"
        );
    }

    #[test]
    fn safe_loaders_are_silent() {
        let code = "def read(text):\n    a = yaml.safe_load(text)\n    b = yaml.load(text, Loader=yaml.SafeLoader)\n    c = yaml.load(text, Loader=CSafeLoader)\n    d = yaml.load(text, yaml.BaseLoader)\n    e = json.loads(text)\n";
        assert!(at(code, "unsafe-deserialize").is_empty());
    }

    #[test]
    fn a_name_is_judged_by_its_last_assignment() {
        // The last `=` decides (and a long chain of them is followed only a few names deep).
        let code = "def f(path):\n    cmd = \"rm \" + path\n    cmd = \"ls\"\n    os.system(cmd)\n";
        assert_eq!(at(code, "shell-injection"), vec![(4, Severity::Medium, L)]);
        let chain: String = (0..3000)
            .map(|i| format!("    c{} = c{i} + \"x\"\n", i + 1))
            .collect();
        let code = format!("def f(c0):\n{chain}    os.system(c3000)\n");
        assert_eq!(
            at(&code, "shell-injection"),
            vec![(3002, Severity::Critical, M)]
        );
    }

    #[test]
    fn only_new_lines_are_judged() {
        let old =
            "def f(cursor, uid):\n    cursor.execute(\"SELECT * FROM t WHERE id = \" + uid)\n";
        let new = "def f(cursor, uid):\n    if uid:\n        cursor.execute(\"SELECT * FROM t WHERE id = \" + uid)\n";
        assert!(found("lib/a.py", old, new, "sql-injection").is_empty());
        let new = format!("{new}    cursor.execute(\"DELETE FROM t WHERE id = \" + uid)\n");
        assert_eq!(
            found("lib/a.py", old, &new, "sql-injection"),
            vec![("sql-injection".into(), 4)]
        );
    }
}
