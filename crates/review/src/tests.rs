//! Tests of the review against real repositories made with the git CLI.

use std::collections::BTreeMap;
use std::time::Duration;

use super::*;
use tlv4_core::model::{Priority, Task, TaskId, TaskStatus};

use tlv4_core::testutil::Repo as TestRepo;

fn rules() -> RuleSet {
    RuleSet::builtin().expect("the builtin rules load")
}

fn review_with(repo: &TestRepo, spec: &str, reqs: &Requirements, opts: &Options) -> Review {
    let r = repo.open();
    let target = Target::range(&r, spec).expect("the range resolves");
    analyze(&r, &rules(), &target, reqs, opts).expect("the review runs")
}

fn review(repo: &TestRepo, spec: &str) -> Review {
    review_with(repo, spec, &Requirements::none("test"), &Options::default())
}

fn by_rule<'a>(review: &'a Review, rule: &str) -> Vec<&'a Finding> {
    review.findings.iter().filter(|f| f.rule == rule).collect()
}

/// Numbered filler lines of Python.
fn python_lines(n: usize) -> String {
    (1..=n).map(|i| format!("value_{i} = {i}\n")).collect()
}

#[test]
fn the_builtin_rules_load() {
    // Every builtin pattern compiles (the builtin set compiles them lazily, trusting this).
    RuleSet::parse("builtin", rules::BUILTIN, rules::Compile::Now).expect("all compile");
    let r = rules();
    assert!(r.rules.len() > 20);
    assert_eq!(r.checks.len(), 19);
    assert_eq!(r.scoring.critical, 40);
    assert!(r.language_of("a/b.py").is_some());
    assert_eq!(r.language_of("README"), None);
}

#[test]
fn a_hard_coded_secret_blocks_at_its_new_side_line() {
    let repo = TestRepo::new();
    repo.write("src/app.py", "import os\n\n\ndef main():\n    return 1\n");
    repo.write("tests/test_app.py", "def test_main():\n    assert True\n");
    repo.commit("base");
    // Line 3 of the new side; built from pieces so this test file holds no secret itself.
    let secret = format!("{}_{} = \"{}\"\n", "API", "KEY", "q8Jz3LmN5pR7tV9wX2yB4cD6");
    repo.write(
        "src/app.py",
        &format!("import os\n\n{secret}\ndef main():\n    return 1\n"),
    );
    repo.write(
        "tests/test_app.py",
        "def test_main():\n    assert True\n\n\ndef test_more():\n    assert 1\n",
    );
    repo.commit("add a key");
    let r = review(&repo, "HEAD");
    assert_eq!(r.verdict, Decision::Block, "{:#?}", r.findings);
    let found = by_rule(&r, "hardcoded-secret");
    assert_eq!(found.len(), 1, "{:#?}", r.findings);
    assert_eq!(found[0].file, "src/app.py");
    assert_eq!(found[0].line, Some(3));
    assert_eq!(found[0].severity, Severity::Critical);
    assert_eq!(found[0].dimension, Dimension::Security);
    assert_eq!(r.scores.security, 60);
    assert!(markdown(&r).contains("`src/app.py:3`"));
    assert!(r.summary.starts_with("BLOCK"));
}

#[test]
fn a_clean_change_is_approved() {
    let repo = TestRepo::new();
    repo.write("src/util.py", "def add(a, b):\n    return a + b\n");
    repo.write(
        "tests/test_util.py",
        "from src.util import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    );
    repo.commit("base");
    repo.write(
        "src/util.py",
        "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n",
    );
    repo.write(
        "tests/test_util.py",
        "from src.util import add, sub\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\ndef test_sub():\n    assert sub(3, 2) == 1\n",
    );
    repo.commit("sub");
    let r = review(&repo, "HEAD~1..HEAD");
    assert_eq!(r.verdict, Decision::Approve, "{:#?}", r.findings);
    assert!(r.findings.iter().all(|f| f.severity == Severity::Low));
    assert_eq!(r.scores.security, 100);
    assert_eq!(r.files.len(), 2);
    assert_eq!(r.files[0].added, 4);
    assert!(r.requirements.tests_changed);
}

#[test]
fn sql_built_by_concatenation_in_python_is_found() {
    let repo = TestRepo::new();
    repo.write("db.py", "def find(cursor, name):\n    pass\n");
    repo.commit("base");
    repo.write(
        "db.py",
        "def find(cursor, name):\n    cursor.execute(\"SELECT * FROM users WHERE name = '\" + name + \"'\")\n\n\ndef by_id(cursor, uid):\n    cursor.execute(f\"DELETE FROM users WHERE id = {uid}\")\n\n\ndef safe(cursor, uid):\n    cursor.execute(\"SELECT * FROM users WHERE id = %s\", (uid,))\n",
    );
    repo.commit("queries");
    let r = review(&repo, "HEAD");
    let sql = by_rule(&r, "sql-injection");
    let lines: Vec<Option<usize>> = sql.iter().map(|f| f.line).collect();
    assert_eq!(lines, vec![Some(2), Some(6)], "{:#?}", r.findings);
    assert!(sql.iter().all(|f| f.confidence == Confidence::High));
    assert_eq!(r.verdict, Decision::Block);
}

#[test]
fn a_language_rule_applies_only_to_its_language() {
    let repo = TestRepo::new();
    repo.write("README.md", "x\n");
    repo.commit("base");
    let js = "export function f() {\n  console.log(\"hi\");\n  return 1;\n}\n";
    repo.write("web/app.js", js);
    repo.write(
        "tool/app.py",
        "def f():\n    console.log(\"hi\")\n    return 1\n",
    );
    repo.write(
        "src/lib.rs",
        "pub fn f() -> u32 {\n    console.log(\"hi\");\n    1\n}\n",
    );
    repo.commit("three languages");
    let r = review(&repo, "HEAD");
    let files: Vec<&str> = by_rule(&r, "console-log")
        .iter()
        .map(|f| f.file.as_str())
        .collect();
    assert_eq!(files, vec!["web/app.js"]);
    assert_eq!(by_rule(&r, "console-log")[0].line, Some(2));
    // And a Python rule does not fire on JavaScript.
    let repo = TestRepo::new();
    repo.write("README.md", "x\n");
    repo.commit("base");
    repo.write("a.js", "function f(x) {\n  print(x) // type: ignore\n}\n");
    repo.write("b.py", "def f(x):\n    print(x)  # type: ignore\n");
    repo.commit("prints");
    let r = review(&repo, "HEAD");
    let at =
        |rule: &str| -> Vec<String> { by_rule(&r, rule).iter().map(|f| f.location()).collect() };
    assert_eq!(at("print-call"), vec!["b.py:2"]);
    assert_eq!(at("type-ignore"), vec!["b.py:2"]);
}

#[test]
fn rust_test_code_is_not_held_to_non_test_rules() {
    let repo = TestRepo::new();
    repo.write("src/lib.rs", "pub fn one() -> u32 {\n    1\n}\n");
    repo.commit("base");
    repo.write(
        "src/lib.rs",
        "pub fn one() -> u32 {\n    println!(\"one\");\n    1\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn it() {\n        println!(\"debug\");\n        assert_eq!(super::one(), 1);\n    }\n}\n",
    );
    repo.commit("print");
    let r = review(&repo, "HEAD");
    let lines: Vec<Option<usize>> = by_rule(&r, "println").iter().map(|f| f.line).collect();
    assert_eq!(lines, vec![Some(2)]);
    assert!(
        r.requirements.tests_changed,
        "inline tests count as test changes"
    );
}

#[test]
fn a_file_over_500_lines_is_flagged() {
    let repo = TestRepo::new();
    repo.write("small.py", "x = 1\n");
    repo.commit("base");
    repo.write("big.py", &python_lines(600));
    repo.commit("big");
    let r = review(&repo, "HEAD");
    let found = by_rule(&r, "file-lines");
    assert_eq!(found.len(), 1, "{:#?}", r.findings);
    assert_eq!(found[0].file, "big.py");
    assert_eq!(found[0].dimension, Dimension::Architecture);
    assert_eq!(found[0].severity, Severity::Medium);
    assert!(found[0].reason.contains("600 lines"));
    assert_eq!(r.verdict, Decision::Conditional);
    // A 400-line file is fine.
    repo.write("big.py", &python_lines(400));
    repo.commit("smaller");
    assert!(by_rule(&review(&repo, "HEAD~2..HEAD"), "file-lines").is_empty());
}

#[test]
fn a_function_is_flagged_when_the_change_takes_it_over_the_limit_not_for_touching_it() {
    let lets = |n: usize, value: usize| -> String {
        (0..n)
            .map(|i| format!("    let v{i} = {value};\n"))
            .collect()
    };
    let file = |long: &str, short: u8| {
        format!("pub fn long() {{\n{long}}}\n\npub fn short() -> u8 {{\n    {short}\n}}\n")
    };
    let repo = TestRepo::new();
    repo.write("src/lib.rs", &file(&lets(40, 1), 1));
    repo.commit("base");
    // 40 → 62 lines: over the limit of 50 because of this change.
    repo.write("src/lib.rs", &file(&lets(60, 1), 1));
    repo.commit("grow long");
    let r = review(&repo, "HEAD");
    let found = by_rule(&r, "function-lines");
    assert_eq!(found.len(), 1, "{:#?}", r.findings);
    assert_eq!(found[0].line, Some(1));
    assert_eq!(found[0].severity, Severity::Medium);
    assert!(
        found[0].reason.contains("`long`") && found[0].reason.contains("62 lines"),
        "{}",
        found[0].reason
    );
    assert!(found[0].reason.contains("was 42"), "{}", found[0].reason);
    // Touching the long function, or the short one next to it, is not a size problem.
    repo.write("src/lib.rs", &file(&lets(60, 2), 2));
    repo.commit("touch both");
    assert!(by_rule(&review(&repo, "HEAD"), "function-lines").is_empty());
    // Growing it by less than 20% of the limit (10 lines) is not either; by 10, it is (low).
    repo.write("src/lib.rs", &file(&lets(69, 2), 2));
    repo.commit("grow by 9");
    assert!(by_rule(&review(&repo, "HEAD"), "function-lines").is_empty());
    repo.write("src/lib.rs", &file(&lets(79, 2), 2));
    repo.commit("grow by 10");
    let r = review(&repo, "HEAD");
    let found = by_rule(&r, "function-lines");
    assert_eq!(found.len(), 1, "{:#?}", r.findings);
    assert_eq!(found[0].severity, Severity::Low);
    assert!(
        found[0].reason.contains("grew by 10 from 71"),
        "{}",
        found[0].reason
    );
    // Re-indenting a long function adds no new line: nothing to say.
    let shifted = file(&lets(79, 2), 2).replace("    let", "        let");
    repo.write("src/lib.rs", &shifted);
    repo.commit("re-indent");
    assert!(review(&repo, "HEAD").findings.is_empty());

    // Python, by the parse: a new long function is flagged, a short one next to it is not.
    let body: String = (0..55).map(|i| format!("    v{i} = {i}\n")).collect();
    repo.write(
        "tool.py",
        &format!("import os\n\n\ndef big():\n{body}\n\ndef small():\n    return 1\n"),
    );
    repo.commit("python");
    let r = review(&repo, "HEAD");
    let found: Vec<String> = by_rule(&r, "function-lines")
        .iter()
        .map(|f| f.location())
        .collect();
    assert_eq!(found, vec!["tool.py:4"]);
}

#[test]
fn a_method_of_a_large_impl_keeps_its_qualified_name_when_only_its_part_is_parsed() {
    // Two impls with a `new` each: only the qualified name finds the old self of the long one,
    // which sits among many members, so its impl is parsed as head, method and tail.
    let file = |n: usize| {
        let body: String = (0..n)
            .map(|i| format!("        let v{i} = {i};\n"))
            .collect();
        let fns: String = (0..40).map(|i| format!("    fn f{i}() {{}}\n")).collect();
        format!(
            "struct A;\nstruct B;\n\nimpl A {{\n    fn new() -> A {{\n        A\n    }}\n}}\n\nimpl B {{\n{fns}    fn new() -> B {{\n{body}        B\n    }}\n}}\n"
        )
    };
    let found = super::checks::review_texts("src/lib.rs", &file(45), &file(60))
        .into_iter()
        .filter(|f| f.rule == "function-lines")
        .map(|f| f.reason)
        .collect::<Vec<_>>();
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("`B::new`") && found[0].contains("was 48"),
        "{}",
        found[0]
    );
}

#[test]
fn a_long_function_is_measured_whole_when_a_string_in_it_has_lines_in_column_0() {
    // A Go function that writes a script: its lines sit in column 0 inside a raw string, so
    // the layout alone would cut the function into items. The change edits one line of the
    // script, deep in the function, and grows it by 20 lines.
    let script = |n: usize, edited: &str| -> String {
        let mut s: String = (0..n).map(|i| format!("echo line{i}\n")).collect();
        s.push_str(edited);
        s
    };
    let file = |body: &str| {
        format!(
            "package p\n\nimport \"io\"\n\nfunc writeScript(w io.Writer) {{\n\tio.WriteString(w, `#!/bin/sh\n{body}`)\n}}\n\nfunc other() {{}}\n"
        )
    };
    let old = file(&script(60, "echo old\n"));
    let new = file(&script(80, "echo new\n"));
    let found = super::checks::found("gen.go", &old, &new, "function-lines");
    assert_eq!(found, vec![("function-lines".to_owned(), 5)]);
}

#[test]
fn a_file_is_flagged_when_the_change_takes_it_over_the_limit_or_grows_it_by_a_fifth() {
    let repo = TestRepo::new();
    repo.write("big.py", &python_lines(600));
    repo.write("small.py", &python_lines(450));
    repo.commit("base");
    // Touching a file that was already long says nothing; taking one over the limit does.
    repo.write(
        "big.py",
        &python_lines(600).replace("value_7 = 7\n", "value_7 = 70\n"),
    );
    repo.write("small.py", &python_lines(520));
    repo.commit("touch big, grow small");
    let r = review(&repo, "HEAD");
    let found: Vec<(String, Severity)> = by_rule(&r, "file-lines")
        .iter()
        .map(|f| (f.location(), f.severity))
        .collect();
    assert_eq!(found, vec![("small.py:451".to_owned(), Severity::Medium)]);
    // Growing an oversized file by 100 lines (20% of 500) is reported one severity lower.
    repo.write("big.py", &python_lines(700));
    repo.commit("grow big");
    let r = review(&repo, "HEAD");
    let found = by_rule(&r, "file-lines");
    assert_eq!(found.len(), 1, "{:#?}", r.findings);
    assert_eq!(found[0].severity, Severity::Low);
    assert!(
        found[0].reason.contains("grew by 100 from 600"),
        "{}",
        found[0].reason
    );
}

#[test]
fn an_empty_broad_except_and_an_empty_catch_are_high() {
    let repo = TestRepo::new();
    repo.write("README.md", "x\n");
    repo.commit("base");
    repo.write(
        "a.py",
        "def f():\n    try:\n        g()\n    except Exception:\n        pass\n",
    );
    repo.write(
        "b.ts",
        "export function f(): void {\n  try {\n    g();\n  } catch (e) {\n  }\n}\n",
    );
    repo.commit("swallow");
    let r = review(&repo, "HEAD");
    assert_eq!(
        by_rule(&r, "empty-except")
            .iter()
            .map(|f| f.location())
            .collect::<Vec<_>>(),
        vec!["a.py:4"]
    );
    assert_eq!(
        by_rule(&r, "empty-catch")
            .iter()
            .map(|f| f.location())
            .collect::<Vec<_>>(),
        vec!["b.ts:4"]
    );
    let mut swallowed = r.findings.iter().filter(|f| f.rule.starts_with("empty-"));
    assert!(swallowed.clone().count() == 2 && swallowed.all(|f| f.severity == Severity::High));
    assert_eq!(r.verdict, Decision::Conditional);
}

#[test]
fn deep_imports_and_circular_imports_are_architecture_findings() {
    let repo = TestRepo::new();
    repo.write("pkg/__init__.py", "");
    repo.write("pkg/a.py", "X = 1\n");
    repo.write("pkg/b.py", "Y = 2\n");
    repo.commit("base");
    repo.write("pkg/a.py", "from pkg import b\n\nX = 1\n");
    repo.write("pkg/b.py", "from . import a\n\nY = 2\n");
    repo.write(
        "web/src/deep/x.js",
        "import { y } from '../../../lib/y';\nexport const x = y;\n",
    );
    repo.commit("cycle");
    let r = review(&repo, "HEAD");
    let cycles = by_rule(&r, "circular-import");
    assert_eq!(cycles.len(), 1, "{:#?}", r.findings);
    assert_eq!(cycles[0].severity, Severity::Medium);
    assert!(cycles[0].reason.contains("pkg/a.py") && cycles[0].reason.contains("pkg/b.py"));
    let deep = by_rule(&r, "deep-import");
    assert_eq!(deep.len(), 1);
    assert_eq!(deep[0].location(), "web/src/deep/x.js:1");
    // JavaScript cycle through relative paths.
    repo.write(
        "web/m.js",
        "import { n } from './n.js';\nexport const m = 1;\n",
    );
    repo.write(
        "web/n.js",
        "import { m } from './m';\nexport const n = 2;\n",
    );
    repo.commit("js cycle");
    let r = review(&repo, "HEAD");
    assert_eq!(by_rule(&r, "circular-import").len(), 1, "{:#?}", r.findings);
}

#[test]
fn only_imports_that_run_when_a_module_loads_close_a_cycle() {
    let repo = TestRepo::new();
    repo.write("pkg/__init__.py", "from . import a, b\n");
    repo.write("pkg/a.py", "X = 1\n");
    repo.write("pkg/b.py", "Y = 2\n");
    repo.write("pkg/c.py", "Z = 3\n");
    repo.commit("base");
    // b imports a under TYPE_CHECKING, inside a function and as an ImportError fallback; c's
    // `from . import b` is b, not the package's __init__.py (which imports c).
    repo.write("pkg/__init__.py", "from . import a, b\nfrom . import c\n");
    repo.write("pkg/a.py", "from pkg import b\nfrom . import c\n\nX = 1\n");
    repo.write(
        "pkg/b.py",
        "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from pkg.a import X\n\n\ndef f():\n    from . import a\n    return a.X\n\n\ntry:\n    from fast import y\nexcept ImportError:\n    from .a import X as y\n",
    );
    repo.write("pkg/c.py", "from . import b\n\nZ = 3\n");
    repo.commit("imports that close no cycle");
    let r = review(&repo, "HEAD");
    assert!(
        by_rule(&r, "circular-import").is_empty(),
        "{:#?}",
        r.findings
    );
    // The same import at module level does (the cycle check looks at the changed modules).
    repo.write("pkg/a.py", "from pkg import b\nfrom . import c\n\nX = 10\n");
    repo.write("pkg/b.py", "from pkg.a import X\n\nY = 2\n");
    repo.commit("a real cycle");
    let r = review(&repo, "HEAD");
    let cycles: Vec<String> = by_rule(&r, "circular-import")
        .iter()
        .map(|f| f.location())
        .collect();
    assert_eq!(cycles, vec!["pkg/b.py:1"], "{:#?}", r.findings);
}

#[test]
fn requirements_fall_into_the_bands() {
    let r = rules();
    assert_eq!(requirements::band(&r, 100), Coverage::Covered);
    assert_eq!(requirements::band(&r, 70), Coverage::Covered);
    assert_eq!(requirements::band(&r, 69), Coverage::Partial);
    assert_eq!(requirements::band(&r, 40), Coverage::Partial);
    assert_eq!(requirements::band(&r, 39), Coverage::Missing);
    assert_eq!(requirements::band(&r, 0), Coverage::Missing);

    let repo = TestRepo::new();
    repo.write("README.md", "x\n");
    repo.commit("base");
    repo.write(
        "src/login.py",
        "def validate_password(password_hash, attempt):\n    return check_hash(password_hash, attempt)\n\n\ndef lockout_counter():\n    return 0\n",
    );
    repo.write(
        "tests/test_login.py",
        "def test_validate():\n    assert True\n",
    );
    repo.commit("login");
    let task = serde_json::json!({
        "id": "TASK-001",
        "convergence": {"criteria": [
            // validate, password, hash: 3 of 3 → covered.
            "Validate the password hash",
            // lockout, counter, show(s), email, notification: 2 of 5 → 40% partial.
            "Lockout counter shows email notification",
            // export, reports, spreadsheet: 0 of 3 → missing.
            "Export reports to spreadsheet"
        ]}
    });
    let mut folder = BTreeMap::new();
    folder.insert(
        "plan/.task/TASK-001.json".to_owned(),
        serde_json::to_vec_pretty(&task).expect("json"),
    );
    folder.insert(
        "spec/requirements/REQ-001-login.md".to_owned(),
        b"# REQ-001\n\n## Acceptance Criteria\n\n- [ ] Validate the password hash\n- [ ] Audit trail of administrator impersonation\n".to_vec(),
    );
    let reqs = Requirements::from_folder(&folder, ".tlv4/sessions/S", None);
    assert_eq!(
        reqs.criteria.len(),
        4,
        "duplicates are merged: {:#?}",
        reqs.criteria
    );
    let r = review_with(&repo, "HEAD", &reqs, &Options::default());
    let bands: Vec<(u32, Coverage)> = r
        .requirements
        .criteria
        .iter()
        .map(|c| (c.overlap, c.coverage))
        .collect();
    assert_eq!(
        bands,
        vec![
            (100, Coverage::Covered),
            (40, Coverage::Partial),
            (0, Coverage::Missing),
            (0, Coverage::Missing)
        ]
    );
    assert_eq!(by_rule(&r, "criterion-partial").len(), 1);
    assert_eq!(by_rule(&r, "criterion-missing").len(), 2);
    let missing = by_rule(&r, "criterion-missing");
    assert_eq!(missing[0].file, ".tlv4/sessions/S/plan/.task/TASK-001.json");
    assert!(missing[0].line.is_some());
    assert_eq!(r.scores.requirements, 100 - 10 - 20 - 20);
    assert_eq!(r.verdict, Decision::Conditional);
    assert!(markdown(&r).contains("| TASK-001 | Export reports to spreadsheet | 0% | missing |"));
}

#[test]
fn a_change_that_only_removes_test_lines_or_a_test_file_changed_tests() {
    let repo = TestRepo::new();
    repo.write("src/a.py", "def f():\n    return 1\n");
    repo.write(
        "tests/test_a.py",
        "def test_one():\n    assert 1\n\n\ndef test_two():\n    assert 2\n",
    );
    repo.write("tests/test_b.py", "def test_b():\n    assert 1\n");
    repo.commit("base");
    // Code changes; a test loses lines, another test file goes.
    repo.write("src/a.py", "def f():\n    return 2\n");
    repo.write("tests/test_a.py", "def test_one():\n    assert 1\n");
    std::fs::remove_file(repo.path().join("tests/test_b.py")).expect("removed");
    repo.commit("drop obsolete tests");
    let r = review(&repo, "HEAD");
    assert!(r.requirements.tests_changed);
    assert!(
        by_rule(&r, "tests-untouched").is_empty(),
        "{:#?}",
        r.findings
    );
    // Code alone does not.
    repo.write(
        "src/a.py",
        &format!("def f():\n    return 3\n{}", python_lines(20)),
    );
    repo.commit("code only");
    assert_eq!(by_rule(&review(&repo, "HEAD"), "tests-untouched").len(), 1);
}

#[test]
fn tests_are_asked_for_when_the_plan_wants_them() {
    let repo = TestRepo::new();
    repo.write("README.md", "x\n");
    repo.commit("base");
    // A small change without a test says nothing; 20 lines of new code do (a hint).
    repo.write("src/a.py", "def f():\n    return 1\n");
    repo.commit("small");
    assert!(by_rule(&review(&repo, "HEAD"), "tests-untouched").is_empty());
    repo.write(
        "src/a.py",
        &format!("def f():\n    return 1\n{}", python_lines(20)),
    );
    repo.commit("code only");
    let r = review(&repo, "HEAD");
    let found = by_rule(&r, "tests-untouched");
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].confidence, Confidence::Low);
    assert_eq!(
        r.verdict,
        Decision::Approve,
        "a low finding does not block approval"
    );
    let reqs = Requirements {
        plan_asks_tests: true,
        ..Requirements::default()
    };
    let r = review_with(&repo, "HEAD", &reqs, &Options::default());
    assert_eq!(by_rule(&r, "tests-missing").len(), 1);
    assert_eq!(r.verdict, Decision::Conditional);
}

#[test]
fn a_missed_deadline_marks_the_file_approximate() {
    let repo = TestRepo::new();
    let old: String = (0..3000).map(|i| format!("line {i}\n")).collect();
    repo.write("data.txt", &old);
    repo.commit("base");
    let new: String = (0..3000)
        .map(|i| {
            if i % 50 == 0 {
                format!("changed {i}\n")
            } else {
                format!("line {i}\n")
            }
        })
        .collect();
    repo.write("data.txt", &new);
    repo.commit("scattered changes");
    let exact = review(&repo, "HEAD");
    assert!(!exact.files[0].approximate);
    assert_eq!(exact.files[0].added, 60);
    // The deadline holds the Patience diff (Myers bounds its own cost on any input).
    let opts = Options {
        deadline: Duration::ZERO,
        algorithm: DiffAlgorithm::Patience,
    };
    let r = review_with(&repo, "HEAD", &Requirements::none("test"), &opts);
    assert!(r.files[0].approximate);
    assert_eq!(r.approximate(), vec!["data.txt"]);
    assert!(markdown(&r).contains("`data.txt`: approximate"));
    assert!(text(&r).contains("approximate: data.txt"));
    let note: serde_json::Value = serde_json::from_slice(&note_json(&r)).expect("json");
    assert_eq!(note["approximate"][0], "data.txt");
}

#[test]
fn patience_finds_the_same_lines() {
    let repo = TestRepo::new();
    repo.write("a.py", &python_lines(100));
    repo.commit("base");
    repo.write(
        "a.py",
        &python_lines(100).replace("value_50 = 50\n", "value_50 = 51\nprint(50)\n"),
    );
    repo.commit("change");
    let opts = Options {
        algorithm: DiffAlgorithm::Patience,
        ..Options::default()
    };
    let r = review_with(&repo, "HEAD", &Requirements::none("test"), &opts);
    assert_eq!(r.algorithm, DiffAlgorithm::Patience);
    assert_eq!((r.files[0].added, r.files[0].removed), (2, 1));
    assert_eq!(by_rule(&r, "print-call")[0].line, Some(51));
}

#[test]
fn ranges_resolve_like_git() {
    let repo = TestRepo::new();
    repo.write("a.txt", "1\n");
    let first = repo.commit("one");
    repo.write("a.txt", "2\n");
    let second = repo.commit("two");
    let r = repo.open();
    let t = Target::range(&r, "HEAD").expect("resolves");
    assert_eq!((t.old, t.new), (first, second));
    let t = Target::range(&r, "HEAD~1").expect("a root commit resolves");
    assert_eq!(t.old_tree, gix::ObjectId::empty_tree(gix::hash::Kind::Sha1));
    let t = Target::range(&r, "HEAD~1..").expect("resolves");
    assert_eq!((t.old, t.new), (first, second));
    let t = Target::range(&r, "HEAD~1...HEAD").expect("resolves");
    assert_eq!((t.old, t.new), (first, second));
    assert!(matches!(
        Target::range(&r, "nope..HEAD"),
        Err(tlv4_core::Error::Invalid(_))
    ));
    // A root commit against the empty tree: everything is added.
    let rev = review(&repo, "HEAD~1");
    assert_eq!(rev.files[0].status, ChangeKind::Added);
}

#[test]
fn an_empty_change_is_never_approved() {
    let repo = TestRepo::new();
    repo.write("a.txt", "1\n");
    repo.commit("one");
    repo.write(".tlv4/sessions/S/session.toml", "x = 1\n");
    repo.commit("state only");
    let r = review(&repo, "HEAD");
    assert!(r.empty);
    assert_eq!(r.verdict, Decision::Conditional);
    assert_eq!(r.scores.requirements, 0);
    assert_eq!(by_rule(&r, "empty-change").len(), 1);
    let md = markdown(&r);
    assert!(md.contains("**Verdict: CONDITIONAL**"));
    assert!(md.contains("The change is empty"));
    assert!(md.contains("nothing implements the plan"));
}

#[test]
fn rules_files_are_checked_with_file_and_line() {
    let bad = |text: &str| match RuleSet::parse("rules.toml", text, rules::Compile::Now) {
        Err(tlv4_core::Error::Config {
            file,
            line,
            message,
        }) => (file, line, message),
        other => panic!("expected a config error, got {other:?}"),
    };
    let head = "schema = 1\n[scoring]\ncritical = 40\nhigh = 20\nmedium = 10\nlow = 2\n[limits]\nmax_file_lines = 500\nmax_function_lines = 50\ncovered = 70\npartial = 40\nmax_file_bytes = 1000\n";
    let (file, line, message) = bad(&format!(
        "{head}[[rule]]\nid = \"x\"\ndimension = \"quality\"\nseverity = \"low\"\npattern = '(unclosed'\nmessage = \"m\"\n"
    ));
    assert_eq!(file, "rules.toml");
    assert_eq!(line, 17);
    assert!(message.contains("rule `x`"), "{message}");
    let (_, line, message) = bad(&format!(
        "{head}[[rule]]\nid = \"x\"\ndimension = \"quality\"\nseverity = \"low\"\nlanguages = [\"cobol\"]\npattern = 'x'\nmessage = \"m\"\n"
    ));
    assert_eq!(line, 17);
    assert!(message.contains("cobol"), "{message}");
    let (_, line, message) = bad(&format!(
        "{head}[[check]]\nid = \"nope\"\ndimension = \"quality\"\nseverity = \"low\"\nmessage = \"m\"\n"
    ));
    assert_eq!(line, 14);
    assert!(message.contains("unknown check `nope`"), "{message}");
    let (_, line, _) = bad(&format!("{head}[[rule]]\nid = \"x\"\nseverity = \"bad\"\n"));
    assert_eq!(line, 15);
    // Where a match must be, and the contexts a rule or check skips, are named exactly.
    let (_, line, message) = bad(&format!(
        "{head}[[rule]]\nid = \"x\"\ndimension = \"quality\"\nseverity = \"low\"\nin = \"docstring\"\npattern = 'x'\nmessage = \"m\"\n"
    ));
    assert_eq!(line, 17);
    assert!(message.contains("`in = \"docstring\"`"), "{message}");
    let (_, line, message) = bad(&format!(
        "{head}[[check]]\nid = \"file-lines\"\ndimension = \"quality\"\nseverity = \"low\"\nskip = [\"vendor\"]\nmessage = \"m\"\n"
    ));
    assert_eq!(line, 17, "the line of `skip`");
    assert!(message.contains("unknown context `vendor`"), "{message}");
    // A repository's override replaces the builtin: here, with no rules and no checks.
    let repo = TestRepo::new();
    repo.write(".tlv4/specs/review-rules.toml", head);
    let loaded = RuleSet::load(Some(repo.path())).expect("loads");
    assert!(loaded.rules.is_empty() && loaded.checks.is_empty());
    assert!(loaded.file.ends_with(".tlv4/specs/review-rules.toml"));
}

#[test]
fn revisions_are_compared_with_what_they_revise() {
    let repo = TestRepo::new();
    repo.write("README.md", "x\n");
    repo.commit("base");
    let trailers = |task: &str| {
        format!("Tlv4-Session: TLV4-r-20260101\nTlv4-Task: {task}\nTlv4-Event: task_completed")
    };
    repo.write("src/a.py", "def f():\n    return 1\n");
    repo.git(&["add", "-A"]);
    repo.git(&[
        "commit",
        "-q",
        "-m",
        "IMPL-001: task_completed (executor)",
        "-m",
        &trailers("IMPL-001"),
    ]);
    repo.write("src/a.py", "def f():\n    return 2\n");
    repo.write("src/b.py", "def g():\n    return 3\n");
    repo.write("docs/notes.md", "n\n");
    repo.git(&["add", "-A"]);
    repo.git(&[
        "commit",
        "-q",
        "-m",
        "IMPL-001-R1: task_completed (executor)",
        "-m",
        &trailers("IMPL-001-R1"),
    ]);
    let store = Store::from_repo(repo.open()).expect("a store");
    let sid: tlv4_core::model::SessionId = "TLV4-r-20260101".parse().expect("an id");
    let task = Task {
        id: "IMPL-001-R1".parse::<TaskId>().expect("an id"),
        role: "executor".into(),
        status: TaskStatus::Completed,
        blocked_by: Vec::new(),
        phase: "implementation".into(),
        priority: Priority::P0,
        discuss: None,
        inner_loop: false,
        attempts: 1,
        description: "PURPOSE: x\nRevision of: IMPL-001\nFeedback: also add g in b.py\n".into(),
        owner: None,
        result: None,
    };
    let tip: gix::ObjectId = repo.git(&["rev-parse", "HEAD"]).parse().expect("an id");
    let a = revision_analysis(
        &store,
        &sid,
        Some(tip),
        &task,
        &rules(),
        &Options::default(),
    )
    .expect("the analysis runs");
    assert_eq!(a.original, "IMPL-001");
    assert_eq!(a.original_files, vec!["src/a.py"]);
    assert_eq!(
        a.revision_files,
        vec!["docs/notes.md", "src/a.py", "src/b.py"]
    );
    assert_eq!(
        a.outside_scope,
        vec!["docs/notes.md"],
        "b.py is named by the feedback"
    );
    assert!(a.similarity > 0.0 && a.similarity < 1.0, "{}", a.similarity);
    assert_eq!(a.feedback, "also add g in b.py");
}

#[test]
fn the_readme_describes_every_rule_and_check() {
    let readme = include_str!("../../../README.md");
    let section = readme
        .split("### What the review checks")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("the README has a section on what the review checks");
    let r = rules();
    let ids = r
        .rules
        .iter()
        .map(|rule| rule.id.as_str())
        .chain(r.checks.keys().map(|c| c.as_str()));
    for id in ids {
        assert!(
            section.contains(&format!("`{id}`")),
            "README's review section does not describe `{id}`"
        );
    }
}

#[test]
fn renames_are_paired_as_git_pairs_them_unless_diff_renames_is_off() {
    let repo = TestRepo::new();
    let text: String = (0..40).map(|i| format!("line number {i}\n")).collect();
    repo.write("old/moved.txt", &text);
    repo.write("old/same.txt", "kept as it is\n");
    repo.write("gone.txt", &python_lines(30));
    repo.commit("base");
    std::fs::remove_dir_all(repo.path().join("old")).expect("rm");
    std::fs::remove_file(repo.path().join("gone.txt")).expect("rm");
    // 38 of 40 lines kept: similar; one moved unchanged: exact; one deleted, one added unlike.
    repo.write(
        "new/moved.txt",
        &text
            .replace("line number 3\n", "changed 3\n")
            .replace("line number 9\n", "changed 9\n"),
    );
    repo.write("new/same.txt", "kept as it is\n");
    repo.write("fresh.txt", "nothing like the rest\n");
    repo.commit("move");
    let files = |r: &Review| -> Vec<(String, Option<String>, ChangeKind, usize)> {
        r.files
            .iter()
            .map(|f| (f.path.clone(), f.old_path.clone(), f.status, f.added))
            .collect()
    };
    let r = review(&repo, "HEAD");
    assert_eq!(
        files(&r),
        vec![
            ("fresh.txt".into(), None, ChangeKind::Added, 1),
            ("gone.txt".into(), None, ChangeKind::Deleted, 0),
            (
                "new/moved.txt".into(),
                Some("old/moved.txt".into()),
                ChangeKind::Renamed,
                2
            ),
            (
                "new/same.txt".into(),
                Some("old/same.txt".into()),
                ChangeKind::Renamed,
                0
            ),
        ]
    );
    repo.git(&["config", "diff.renames", "false"]);
    let r = review(&repo, "HEAD");
    assert!(
        r.files.iter().all(|f| f.old_path.is_none()) && r.files.len() == 6,
        "{:#?}",
        files(&r)
    );
}
