//! Checks that read the parse of a file: what a pattern over lines cannot tell (a broad
//! `except` from a narrow one, SQL built across several lines, a value from a literal, an
//! `unsafe` block with its `SAFETY:` comment above).
//!
//! Each language module reports [`Hit`]s; the scan keeps those on new lines of the change,
//! gives them the severity and message of their `[[check]]` entry in the rules file (lowered
//! in test code, examples, build scripts and programs), and drops checks the rules file
//! leaves out.

use std::ops::Range;

use tree_sitter::Node;

use super::diff::FileDiff;
use super::rules::{CheckId, Confidence};
use super::syntax::Syntax;

mod comments;
mod go;
mod input;
mod js;
mod python;
mod rust;
mod secrets;
mod sql;

/// One thing a check found.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Hit {
    /// The check.
    pub check: CheckId,
    /// The 0-based line reported.
    pub line: usize,
    /// The 0-based lines of the code it is about (reported only if one of them is new).
    pub lines: Range<usize>,
    /// How sure the check is.
    pub confidence: Confidence,
    /// Severity steps below the configured one (0: as configured).
    pub lower: u8,
    /// Values for the message's placeholders.
    pub values: Vec<(&'static str, String)>,
}

impl Hit {
    /// A hit of `check` about `lines`, reported at their first line, of high confidence.
    pub(crate) fn new(check: CheckId, lines: Range<usize>) -> Hit {
        Hit {
            check,
            line: lines.start,
            lines,
            confidence: Confidence::High,
            lower: 0,
            values: Vec::new(),
        }
    }

    /// With confidence `c`.
    pub(crate) fn confidence(mut self, c: Confidence) -> Hit {
        self.confidence = c;
        self
    }

    /// Reported `steps` severities below the configured one.
    pub(crate) fn lower(mut self, steps: u8) -> Hit {
        self.lower = steps;
        self
    }

    /// With placeholder `key` set to `value`.
    pub(crate) fn with(mut self, key: &'static str, value: impl Into<String>) -> Hit {
        self.values.push((key, value.into()));
        self
    }

    /// Reported at 0-based `line`.
    pub(crate) fn at(mut self, line: usize) -> Hit {
        self.line = line;
        self
    }
}

/// Where a value comes from, in increasing order of concern (the injection checks of every
/// language grade their findings by it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Origin {
    /// Literals, ALL_CAPS constants, numbers: not input.
    Literal,
    /// A value the code does not show the origin of.
    Unknown,
    /// Input: a parameter, a name or attribute that reads as input, a call on input.
    Input,
}

impl Origin {
    /// The confidence of a finding about a value of this origin (`None`: no finding).
    pub(crate) fn confidence(self) -> Option<Confidence> {
        match self {
            Origin::Literal => None,
            Origin::Unknown => Some(Confidence::Medium),
            Origin::Input => Some(Confidence::High),
        }
    }
}

/// Whether `node` is a binary `+` (Rust, Go: `binary_expression` with operator `+`).
pub(crate) fn is_plus(syntax: &Syntax<'_>, node: Node<'_>) -> bool {
    node.kind() == "binary_expression"
        && node
            .child_by_field_name("operator")
            .is_some_and(|o| syntax.text_of(o) == "+")
}

/// The operands of a chain of binary `+` (`a + b + c`, through parentheses), left to right;
/// a node that is no `+` is its own one operand. Iterative: a generated concatenation can be
/// deeper than the stack.
pub(crate) fn plus_operands<'t>(syntax: &Syntax<'_>, node: Node<'t>) -> Vec<Node<'t>> {
    let is_plus = |n: Node<'_>| is_plus(syntax, n);
    let mut out = Vec::new();
    let mut stack = vec![node];
    while let Some(node) = stack.pop() {
        let node = match node.kind() {
            "parenthesized_expression" => node.named_child(0).unwrap_or(node),
            _ => node,
        };
        if is_plus(node) {
            // Right first on the stack, so that the left side comes out first.
            for field in ["right", "left"] {
                if let Some(side) = node.child_by_field_name(field) {
                    stack.push(side);
                }
            }
        } else {
            out.push(node);
        }
    }
    out
}

/// What a check sees of one file.
pub(crate) struct Input<'a> {
    /// The changed file (new-side text, added and new lines).
    pub file: &'a FileDiff,
    /// Its parse, for the languages the review parses.
    pub syntax: Option<&'a Syntax<'a>>,
}

impl Input<'_> {
    /// Whether any line in `lines` is new code of the change.
    pub(crate) fn is_new(&self, lines: &Range<usize>) -> bool {
        self.file.touches_new(lines)
    }
}

/// The 0-based lines a node spans.
pub(crate) fn lines_of(node: tree_sitter::Node<'_>) -> Range<usize> {
    node.start_position().row..node.end_position().row + 1
}

/// Whether a file of `grammar` needs the checks on the parse: its new code (`new`, the runs of
/// new lines) has comments that may be code ([`comments::may_hold_code`]), or the top-level items around it (`items`)
/// hold a word one of the checks starts from (the SQL, the command or the `unsafe` may sit on
/// an old line of the statement a new line joins).
pub(crate) fn triggered(grammar: super::syntax::Grammar, new: &str, items: &str) -> bool {
    use super::syntax::Grammar;
    use regex::bytes::Regex;
    use std::sync::LazyLock;
    // ASCII classes (`\w`, `\s`, `\b`, case): the words are English, and the automata stay
    // small.
    fn compile(pattern: &str) -> Regex {
        Regex::new(&format!("(?-u){pattern}")).expect("the trigger patterns compile")
    }
    // SQL text in a string ([`sql::TRIGGER`]), a secret-looking name assigned, the calls of
    // the checks.
    static COMMON: LazyLock<String> = LazyLock::new(|| {
        format!(
            r#"{}|(?:passw|secret|token|api_?key|credential|private_?key)\w*["']?\s*[:=]\s*["'`]"#,
            sql::TRIGGER
        )
    });
    static PYTHON: LazyLock<Regex> = LazyLock::new(|| {
        compile(&format!(
            r"(?i)\bexcept\b|\bprint\b|\bexec\b|\beval\b|subprocess|\bos\.(?:system|popen)|getoutput|pickle|marshal|yaml|shelve|dill|\bexecute|\.raw\(|{}",
            COMMON.as_str()
        ))
    });
    static RUST: LazyLock<Regex> = LazyLock::new(|| {
        compile(&format!(
            r"\bunsafe\b|Command::new|(?i:{})",
            COMMON.as_str()
        ))
    });
    static GO: LazyLock<Regex> =
        LazyLock::new(|| compile(&format!(r"exec\.Command|(?i:{})", COMMON.as_str())));
    static JS: LazyLock<Regex> = LazyLock::new(|| {
        compile(&format!(
            r"(?i)(?m:^[ \t]*p\s*\()|html|document\.write|\.append|\.prepend|\.after|\.before|replaceWith|\$\(|\bsend\b|\bexec|spawn|eval|Function|setTimeout|setInterval|\bvm\b|Script|child_process|{}",
            COMMON.as_str()
        ))
    });
    // The words every match of a pattern holds, case aside: a search for them alone is a
    // fast literal search, and most items have none. JavaScript's patterns include one that
    // starts from a single letter, so its items go to the pattern directly.
    static COMMON_WORDS: LazyLock<String> = LazyLock::new(|| {
        format!(
            "{}|passw|secret|token|api|credential|private",
            sql::TRIGGER_WORDS
        )
    });
    static PYTHON_WORDS: LazyLock<Regex> = LazyLock::new(|| {
        compile(&format!(
            r"(?i)except|print|exec|eval|subprocess|os\.system|os\.popen|getoutput|pickle|marshal|yaml|shelve|dill|\.raw\(|{}",
            COMMON_WORDS.as_str()
        ))
    });
    static RUST_WORDS: LazyLock<Regex> = LazyLock::new(|| {
        compile(&format!(
            r"(?i)unsafe|command::new|{}",
            COMMON_WORDS.as_str()
        ))
    });
    static GO_WORDS: LazyLock<Regex> =
        LazyLock::new(|| compile(&format!(r"(?i)exec\.command|{}", COMMON_WORDS.as_str())));
    let (words, constructs) = match grammar {
        Grammar::Python => (Some(&*PYTHON_WORDS), &*PYTHON),
        Grammar::Rust => (Some(&*RUST_WORDS), &*RUST),
        Grammar::Go => (Some(&*GO_WORDS), &*GO),
        _ => (None, &*JS),
    };
    let items = items.as_bytes();
    comments::may_hold_code(grammar, new)
        || (words.is_none_or(|w| w.is_match(items)) && constructs.is_match(items))
        || secrets::has_candidate(new)
}

/// `pattern` with its Perl classes ASCII-only (`\\w`, `\\s`, `\\S`, `\\d`, `\\b`, in and out of
/// brackets), for a `regex::Regex` over text: the checks look at code, whose keywords,
/// names and spacing are ASCII, and the Unicode classes make an automaton many times
/// larger (one SQL pattern compiled 40 times slower with them). Everything else, `.` and
/// negated classes included, still matches any character.
pub(super) fn ascii(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() * 2);
    let mut depth = 0usize;
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match (chars.next(), depth) {
                (Some('w'), 0) => out.push_str("[[:word:]]"),
                (Some('s'), 0) => out.push_str("[[:space:]]"),
                (Some('S'), 0) => out.push_str("[^[:space:]]"),
                (Some('d'), 0) => out.push_str("[0-9]"),
                (Some('b'), 0) => out.push_str("(?-u:\\b)"),
                (Some('w'), _) => out.push_str("[:word:]"),
                (Some('s'), _) => out.push_str("[:space:]"),
                (Some('S'), _) => out.push_str("[:^space:]"),
                (Some('d'), _) => out.push_str("0-9"),
                (Some(n), _) => {
                    out.push('\\');
                    out.push(n);
                }
                (None, _) => out.push('\\'),
            },
            '[' => {
                depth += 1;
                out.push(c);
            }
            ']' if depth > 0 => {
                depth -= 1;
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

/// Compiles ahead of their first use the expressions the checks run on files of `grammar`
/// (and on every file: the secrets).
pub(crate) fn prepare(grammar: Option<super::syntax::Grammar>) {
    if let Some(g) = grammar {
        triggered(g, "", "");
    }
    secrets::prepare();
}

/// Runs every check that applies to `input`.
pub(crate) fn run(input: &Input<'_>, out: &mut Vec<Hit>) {
    if let Some(syntax) = input.syntax {
        use super::syntax::Grammar;
        match syntax.grammar {
            Grammar::Python => python::check(input, syntax, out),
            Grammar::Rust => rust::check(input, syntax, out),
            Grammar::Go => go::check(input, syntax, out),
            g if g.is_js() => js::check(input, syntax, out),
            _ => {}
        }
        comments::check(input, syntax, out);
    }
    secrets::check(input, out);
}

/// Reviews the change of one file from `old` to `new` (an empty `old`: a new file) with the
/// builtin rules, as a whole review would, and gives its findings: for the tests of each
/// language's checks.
#[cfg(test)]
pub(crate) fn review_texts(path: &str, old: &str, new: &str) -> Vec<super::Finding> {
    let rules = super::RuleSet::builtin().expect("the builtin rules load");
    let opts = super::diff::DiffOptions {
        algorithm: super::DiffAlgorithm::Myers,
        deadline: std::time::Duration::from_secs(5),
        max_file_bytes: rules.limits.max_file_bytes,
    };
    let mut file = FileDiff::from_texts(path, old, new, &opts);
    let moved: super::diff::Moved = file.removed_hashes.iter().copied().collect();
    file.mark_new(&moved);
    super::scan::scan_file(&rules, &file, true).findings
}

/// The `(rule, 1-based line)` of each finding of [`review_texts`] whose rule is `rule`.
#[cfg(test)]
pub(crate) fn found(path: &str, old: &str, new: &str, rule: &str) -> Vec<(String, usize)> {
    review_texts(path, old, new)
        .into_iter()
        .filter(|f| f.rule == rule)
        .map(|f| (f.rule, f.line.unwrap_or(0)))
        .collect()
}

/// The 1-based lines where `rule` fires on a new file `path` holding `new`.
#[cfg(test)]
pub(crate) fn lines(path: &str, new: &str, rule: &str) -> Vec<usize> {
    found(path, "", new, rule)
        .into_iter()
        .map(|(_, l)| l)
        .collect()
}

/// The severity and confidence of each finding of `rule` on a new file `path` holding `new`.
#[cfg(test)]
pub(crate) fn graded(path: &str, new: &str, rule: &str) -> Vec<(super::Severity, Confidence)> {
    review_texts(path, "", new)
        .into_iter()
        .filter(|f| f.rule == rule)
        .map(|f| (f.severity, f.confidence))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_trigger_of_the_checks_passes_the_word_search() {
        use crate::syntax::Grammar;
        // One item per alternative of each grammar's pattern, in the cases the pattern
        // allows: each must trigger the checks although its new code is plain.
        let common = [
            "let q = \"SELECT a FROM t\";",
            "let q = 'Insert  Into t';",
            "x = \"update t set a = 1\"",
            "q = `delete from t`",
            "PASSWORD = \"x\"",
            "client_secret: 'x'",
            "auth_token = \"x\"",
            "API_KEY = 'x'",
            "apikey: \"x\"",
            "credentials = \"x\"",
            "PRIVATE_KEY = 'x'",
        ];
        let python = [
            "try:\n    f()\nexcept:\n    pass",
            "print(x)",
            "exec(code)",
            "eval(code)",
            "import subprocess",
            "os.system(cmd)",
            "os.popen(cmd)",
            "getoutput(cmd)",
            "pickle.loads(b)",
            "marshal.loads(b)",
            "yaml.load(s)",
            "shelve.open(p)",
            "dill.loads(b)",
            "cursor.execute(q)",
            "Model.objects.raw(q)",
        ];
        let rust = ["unsafe { f() }", "Command::new(\"sh\")"];
        let go = ["exec.Command(\"sh\")"];
        for (grammar, own) in [
            (Grammar::Python, &python[..]),
            (Grammar::Rust, &rust[..]),
            (Grammar::Go, &go[..]),
        ] {
            for item in own.iter().chain(&common) {
                assert!(triggered(grammar, "", item), "{grammar:?}: {item}");
            }
            assert!(
                !triggered(grammar, "", "let total = count + 1;"),
                "{grammar:?}"
            );
        }
    }

    #[test]
    fn the_same_sql_text_is_judged_the_same_in_python_js_go_and_rust() {
        // (the text a parameter is joined to, whether it is SQL)
        let texts = [
            ("SELECT * FROM users WHERE id = ", true),
            ("select id, name from users where id = ", true),
            ("select count(*) from t where id = ", true),
            ("insert or replace into kv values (", true),
            ("delete from ", true),
            ("update users set name = ", true),
            (" WHERE id = ", true),
            ("Please select one item from ", false),
            ("delete from the list: ", false),
            ("select a file from the list ", false),
            ("insert into the cart: ", false),
            ("Total: ", false),
        ];
        for (text, sql) in texts {
            let python =
                format!("def f(cursor, v):\n    q = \"{text}\" + v\n    cursor.execute(q)\n");
            let js = format!(
                "function f(v) {{\n  const q = \"{text}\" + v;\n  return db.query(q);\n}}\n"
            );
            let go = format!(
                "package store\n\nfunc f(db *sql.DB, v string) {{\n\tq := \"{text}\" + v\n\tdb.Query(q)\n}}\n"
            );
            let rust = format!(
                "pub fn f(db: &Db, v: &str) {{\n    let q = String::from(\"{text}\") + v;\n    db.run(&q);\n}}\n"
            );
            for (path, code) in [
                ("lib/a.py", python),
                ("lib/a.js", js),
                ("store/a.go", go),
                ("src/a.rs", rust),
            ] {
                let found = lines(path, &code, "sql-injection");
                assert_eq!(!found.is_empty(), sql, "{path}: {text:?} {found:?}");
            }
        }
    }

    #[test]
    fn moved_and_reindented_lines_are_not_new_code() {
        let old = "function f() {\n  console.log(a);\n}\n";
        // Re-indented inside a new block: the console.log line is not new.
        let new = "function f() {\n  if (x) {\n    console.log(a);\n  }\n}\n";
        assert!(found("lib/a.js", old, new, "console-log").is_empty());
        // A console.log of something else is.
        let new = "function f() {\n  console.log(a);\n  console.log(b);\n}\n";
        assert_eq!(
            found("lib/a.js", old, new, "console-log"),
            vec![("console-log".into(), 3)]
        );
        // Not in examples, and not inside a string or a comment.
        assert!(found("examples/a/index.js", "", new, "console-log").is_empty());
        let new = "const s = \"console.log(x)\"; // console.log(y)\n";
        assert!(found("lib/b.js", "", new, "console-log").is_empty());
    }

    #[test]
    fn a_lone_carriage_return_does_not_put_lines_out_of_step() {
        // Old Mac line ends inside a file with Unix ones: one line to git, two to some diffs.
        let old = "a = 1\nb = 2\rc = 3\nd = 4\ne = 5\n";
        let new = "a = 0\nb = 2\rc = 3\nd = 4\nprint(x)\ne = 5\n";
        assert_eq!(
            found("lib/m.py", old, new, "print-call"),
            vec![("print-call".into(), 4)]
        );
    }

    #[test]
    fn build_scripts_and_programs_may_print() {
        let print = "fn main() {\n    println!(\"cargo:rerun-if-changed=build.rs\");\n}\n";
        assert!(found("build.rs", "", print, "println").is_empty());
        assert!(found("src/main.rs", "", print, "println").is_empty());
        // A library function that prints is a leftover; a `fn main` makes a file a program.
        let lib = "pub fn f() {\n    println!(\"here\");\n}\n";
        assert_eq!(
            found("src/lib.rs", "", lib, "println"),
            vec![("println".into(), 2)]
        );
        assert!(found("src/tool.rs", "", print, "println").is_empty());
    }

    #[test]
    fn pattern_rules_of_the_languages_not_parsed_fire_and_stay_silent_where_they_should() {
        // (path, new text, rule, lines expected)
        let cases: &[(&str, &str, &str, &[usize])] = &[
            (
                "app/models/user.rb",
                "begin\n  load!\nrescue StandardError\nend\n",
                "empty-rescue",
                &[3],
            ),
            (
                "app/models/user.rb",
                "begin\n  load!\nrescue StandardError\n  retry_later\nend\n",
                "empty-rescue",
                &[],
            ),
            (
                "src/main/java/Users.java",
                "class Users {\n  Rows find(String name) {\n    return db.query(\"SELECT * FROM users WHERE name = '\" + name + \"'\");\n  }\n}\n",
                "sql-concat",
                &[3],
            ),
            (
                "src/main/java/Users.java",
                "class Users {\n  Rows find(String name) {\n    return db.query(\"SELECT * FROM users WHERE name = ?\", name);\n  }\n}\n",
                "sql-concat",
                &[],
            ),
            (
                "web/index.php",
                "<?php\n$x = eval($_GET['code']);\n",
                "eval",
                &[2],
            ),
            (
                "web/index.php",
                "<?php\n// we never eval( user input\n$y = 1;\n",
                "eval",
                &[],
            ),
            ("pkg/a.py", "import os  # noqa: F401\n", "noqa", &[1]),
            (
                "pkg/a.py",
                "HELP = \"add # noqa to silence\"\n",
                "noqa",
                &[],
            ),
            (
                "pkg/a.py",
                "x = f()  # type: ignore[attr-defined]\n",
                "type-ignore",
                &[1],
            ),
            (
                "pkg/a.py",
                "DOC = \"write # type: ignore\"\n",
                "type-ignore",
                &[],
            ),
            (
                "pkg/sub/deep/mod.py",
                "from .... import core\n",
                "deep-import",
                &[1],
            ),
            (
                "pkg/sub/mod.py",
                "from .. import core\n",
                "deep-import",
                &[],
            ),
            (
                "src/a/b/c.rs",
                "use super::super::super::x;\n",
                "deep-import",
                &[1],
            ),
            ("src/a/b/c.rs", "use crate::x;\n", "deep-import", &[]),
        ];
        for (path, text, rule, want) in cases {
            let got: Vec<usize> = found(path, "", text, rule)
                .into_iter()
                .map(|(_, l)| l)
                .collect();
            assert_eq!(&got, want, "{rule} in {path}: {text}");
        }
    }

    #[test]
    fn a_method_keeps_its_size_history_when_its_class_is_renamed_and_anonymous_ones_are_not_guessed()
     {
        let body = |n: usize| -> String {
            (0..n)
                .map(|i| format!("        self.v{i} = {i}\n"))
                .collect()
        };
        // `Flask.__init__` (80 lines) becomes `App.__init__` (70): it shrank, nothing to say.
        let old = format!("class Flask:\n    def __init__(self):\n{}", body(80));
        let new = format!("class App:\n    def __init__(self):\n{}", body(70));
        assert!(found("pkg/app.py", &old, &new, "function-lines").is_empty());
        // An anonymous function that was long already and is touched: no finding.
        let lines = |n: usize, v: usize| -> String {
            (0..n).map(|i| format!("  var v{i} = {v};\n")).collect()
        };
        // A small anonymous function first: matched by name, the long one would seem to have
        // grown from 1 line.
        let old = format!(
            "go(function () {{ x(); }});\nrun(function () {{\n{}}});\n",
            lines(60, 1)
        );
        let new = format!(
            "go(function () {{ x(); }});\nrun(function () {{\n{}}});\n",
            lines(61, 1)
        );
        assert!(found("lib/a.js", &old, &new, "function-lines").is_empty());
    }

    #[test]
    fn debug_dumps_where_printing_is_the_job_are_hints_and_normal_output_is_silent() {
        use crate::Severity;
        let hint = vec![(Severity::Low, Confidence::Low)];
        // A Rust program: a `Debug` dump is a hint; usage text, `Display` and stderr are not.
        let rs = "fn main() {\n    let args = parse();\n    println!(\"{:#?}\", args);\n    println!(\"{args:?}\");\n    println!(\"Usage: tool <file>\");\n    println!(\"{} files\", n);\n    eprintln!(\"error: {:?}\", e);\n}\n";
        assert_eq!(
            lines("src/bin/grep/app.rs", rs, "println-debug"),
            vec![3, 4]
        );
        assert_eq!(graded("src/main.rs", rs, "println-debug")[0], hint[0]);
        // Library code has `println` (medium) instead, not both.
        let lib = "pub fn f(x: &X) {\n    println!(\"{:?}\", x);\n}\n";
        assert!(lines("src/lib.rs", lib, "println-debug").is_empty());
        assert_eq!(lines("src/lib.rs", lib, "println"), vec![2]);
        // A Go program: a bare value or a `%+v` dump is a hint; messages are not.
        let go = "package main\n\nfunc main() {\n\tfmt.Println(name)\n\tfmt.Printf(\"%+v\\n\", cfg)\n\tfmt.Println(err)\n\tfmt.Println(\"done\")\n\tfmt.Printf(\"%d files\\n\", n)\n\tfmt.Println(strings.Join(names, \", \"))\n}\n";
        assert_eq!(lines("cmd/fetch/main.go", go, "go-print-value"), vec![4, 5]);
        assert_eq!(
            graded("cmd/fetch/main.go", go, "go-print-value"),
            vec![hint[0]; 2]
        );
        let lib = "package util\n\nfunc F() {\n\tfmt.Println(name)\n}\n";
        assert!(lines("util/f.go", lib, "go-print-value").is_empty());
        // A JS test: console.log of a value is a hint; of a message it is not.
        let js = "test('a', async () => {\n  const res = await get('/');\n  console.log(res.headers.get('x'));\n  console.log('starting');\n  console.log(`at ${n}`);\n  expect(res.status).toBe(200);\n});\n";
        assert_eq!(lines("src/a.test.ts", js, "console-log-test"), vec![3]);
        assert_eq!(graded("src/a.test.ts", js, "console-log-test"), hint);
        assert!(lines("src/a.ts", js, "console-log-test").is_empty());
        assert_eq!(lines("src/a.ts", js, "console-log"), vec![3, 4, 5]);
    }

    #[test]
    fn todo_markers_count_only_in_comments() {
        let go = "package x\n\n// TODO: retry\nfunc f() { g(context.TODO()) }\n";
        assert_eq!(
            found("x.go", "", go, "todo-comment"),
            vec![("todo-comment".into(), 3)]
        );
    }
}

#[cfg(test)]
mod ascii_tests {
    use super::ascii;
    use regex::Regex;

    #[test]
    fn ascii_classes_match_as_the_unicode_ones_do_on_code() {
        assert_eq!(
            ascii(r"\bx\w+[\w.\-]\s*[^\s\S]\d[\d]\\w\]"),
            r"(?-u:\b)x[[:word:]]+[[:word:].\-][[:space:]]*[^[:space:][:^space:]][0-9][0-9]\\w\]"
        );
        let patterns = [
            r#"\bSELECT\s[\s\S]*?\bFROM\b"#,
            r#"(?:^|[^\w$.\-])(?P<name>[A-Za-z_$][\w$.\-]*)\s*=\s*"(?:[^"\\\n]|\\.)*""#,
            r"(?:[=(,\s]\s*)(?:\?|\$\d+|:[A-Za-z_]\w*)",
        ];
        let texts = [
            "\"SELECT a\n FROM b\"",
            "xSELECT a FROM b",
            "token = \"abc\\\"def\"",
            "é.token = \"naïve ünïcode\"",
            "WHERE id = ? AND x = $12 OR :name",
            "",
        ];
        for p in patterns {
            let (u, a) = (Regex::new(p).unwrap(), Regex::new(&ascii(p)).unwrap());
            for t in texts {
                let found = |r: &Regex| r.find_iter(t).map(|m| m.range()).collect::<Vec<_>>();
                assert_eq!(found(&u), found(&a), "{p} on {t:?}");
            }
        }
    }
}
