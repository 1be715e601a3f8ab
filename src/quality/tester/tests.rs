//! Tester tests: the strategy table and the cycle's stops, framework detection and affected
//! tests on real trees, the command runner's timeout, and whole runs against tiny Python
//! repositories made with the `git` CLI.

use std::path::Path;
use std::time::{Duration, Instant};

use super::runner::*;
use super::*;
use crate::agents::{CodeTree, TaskInput};
use tlv4_core::model::{Session, Task};
use tlv4_specdoc::discovery::{Discovery, TestFramework};

use tlv4_core::testutil::git;

mod outcome;
mod runners;

fn write(dir: &Path, files: &[(&str, &str)]) {
    for (path, content) in files {
        let full = dir.join(path);
        std::fs::create_dir_all(full.parent().expect("a file has a parent")).unwrap();
        std::fs::write(full, content).unwrap();
    }
}

/// A repository whose first commit holds `base` and whose second adds `change` (the
/// implementation); the context runs from the first to the second.
struct Repo {
    dir: tempfile::TempDir,
    code: CodeTree,
    ctx: QualityContext,
}

fn repo(base: &[(&str, &str)], change: &[(&str, &str)]) -> Repo {
    let dir = tempfile::tempdir().expect("temp dir");
    git(dir.path(), &["init", "-q"]);
    write(dir.path(), base);
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-q", "-m", "base"]);
    write(dir.path(), change);
    // Pipeline state on the session branch is not code: it must not count as a change.
    write(
        dir.path(),
        &[(".tlv4/sessions/TLV4-test-20260101/session.toml", "x\n")],
    );
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-q", "-m", "implementation"]);
    // The user trusted the repository: its tests may run (an empty trust record).
    git(
        dir.path(),
        &["config", "--local", tlv4_core::trust::KEY, "2"],
    );
    let repo = gix::open(dir.path()).expect("open the repository");
    let head = repo.head_commit().expect("HEAD is a commit");
    let tree = head.tree_id().expect("the commit has a tree").detach();
    let base: gix::ObjectId = git(dir.path(), &["rev-parse", "HEAD~1"])
        .trim()
        .parse()
        .expect("a commit id");
    let code = CodeTree::from_tree(&repo, tree).expect("list the tree");
    let ctx = QualityContext {
        repo: repo.clone().into_sync(),
        base,
        tip: head.id,
        conf: std::sync::Arc::new(tlv4_core::trust::Configuration::read(dir.path()).unwrap()),
        shell: false,
    };
    Repo { dir, code, ctx }
}

fn code_tree(files: &[(&str, &str)]) -> (tempfile::TempDir, CodeTree) {
    let r = repo(files, &[]);
    (r.dir, r.code)
}

fn input(id: &str, code: CodeTree, folder: &[(&str, Vec<u8>)]) -> TaskInput {
    let session: Session = toml::from_str(
        r#"
schema = 1
id = "TLV4-test-20260101"
task = "add a calculator"
pipeline = "full-lifecycle"
supervision = false
status = "active"
base = "0000000000000000000000000000000000000000"
created_at = "2026-01-01T00:00:00Z"
updated_at = "2026-01-01T00:00:00Z"
events = 1
"#,
    )
    .expect("a valid session");
    let task: Task = toml::from_str(&format!(
        r#"
id = "{id}"
role = "tester"
status = "in_progress"
phase = "validation"
priority = "P0"
inner_loop = false
attempts = 1
description = "Run the tests"
"#
    ))
    .expect("a valid task");
    TaskInput {
        session,
        task,
        folder: folder
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect(),
        code,
    }
}

fn worktrees(dir: &Path) -> usize {
    // Idle checkouts kept in the pool do not count: they hold nothing of anyone's.
    git(dir, &["worktree", "list", "--porcelain"])
        .split("\n\n")
        .filter(|rec| rec.starts_with("worktree "))
        .filter(|rec| {
            !rec.lines()
                .any(|l| l == format!("locked {}", tlv4_store::worktree::pool::IDLE_REASON))
        })
        .count()
}

fn file<'a>(r: &'a QualityResult, path: &str) -> &'a str {
    let bytes = &r
        .output
        .files
        .iter()
        .find(|(p, _)| p == path)
        .unwrap_or_else(|| panic!("{path} is written"))
        .1;
    std::str::from_utf8(bytes).expect("UTF-8")
}

const CALC: &str = "def add(a, b):\n    return a + b\n";
const TEST_HALF: &str = "import unittest\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n    def test_ok(self):\n        self.assertEqual(add(1, 2), 3)\n\n    def test_wrong(self):\n        self.assertEqual(add(1, 2), 4)\n";
const TEST_PASS: &str = "import unittest\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n    def test_ok(self):\n        self.assertEqual(add(1, 2), 3)\n\n    def test_zero(self):\n        self.assertEqual(add(0, 0), 0)\n";

#[test]
fn strategy_table_first_match_wins() {
    use Strategy::*;
    for (iteration, rate, critical, want) in [
        (1, 10.0, 9, Conservative), // iteration ≤ 3
        (3, 40.0, 0, Conservative),
        (5, 80.0, 7, Conservative), // pass ≥ 80 %
        (9, 92.0, 9, Conservative),
        (4, 60.0, 0, Surgical), // critical < 5
        (9, 10.0, 4, Surgical),
        (4, 49.9, 5, Aggressive),   // pass < 50 %
        (8, 70.0, 6, Aggressive),   // iteration > 7
        (5, 60.0, 5, Conservative), // default
        (7, 79.9, 12, Conservative),
    ] {
        assert_eq!(
            Strategy::select(iteration, rate, critical),
            want,
            "iteration {iteration}, pass {rate}, critical {critical}"
        );
    }
}

fn record(iteration: u32, set: &ResultSet) -> Record {
    Record {
        task: format!("TEST-001-I{iteration}"),
        iteration,
        result_set: set.clone(),
        pass_rate: Some(50.0),
        ..Record::default()
    }
}

#[test]
fn the_cycle_passes_fixes_and_stops() {
    let set = ResultSet {
        passed: 1,
        failed: 1,
        failures: vec!["FAIL: test_wrong".into()],
    };
    let other = ResultSet {
        passed: 2,
        failed: 1,
        failures: vec!["FAIL: test_new".into()],
    };
    assert_eq!(decide(1, Some(95.0), 0, &set, &[]), Decision::Pass);
    assert_eq!(decide(1, None, 0, &set, &[]), Decision::NoTests);
    // 96 % with a critical failure is not a pass.
    assert_eq!(
        decide(1, Some(96.0), 1, &set, &[]),
        Decision::Fix(Strategy::Conservative)
    );
    assert_eq!(
        decide(1, Some(50.0), 0, &set, &[]),
        Decision::Fix(Strategy::Conservative)
    );
    // Three identical result sets in a row stop the cycle; two do not.
    assert_eq!(
        decide(2, Some(50.0), 0, &set, &[record(1, &set)]),
        Decision::Fix(Strategy::Conservative)
    );
    assert_eq!(
        decide(
            3,
            Some(50.0),
            0,
            &set,
            &[record(1, &other), record(2, &set)]
        ),
        Decision::Fix(Strategy::Conservative)
    );
    assert_eq!(
        decide(3, Some(50.0), 0, &set, &[record(2, &set), record(1, &set)]),
        Decision::Stop(StopReason::Identical)
    );
    assert_eq!(
        decide(
            5,
            Some(50.0),
            0,
            &set,
            &[record(3, &set), record(4, &set), record(1, &other)]
        ),
        Decision::Stop(StopReason::Identical)
    );
    // Iteration 10 is the last one.
    assert_eq!(
        decide(9, Some(60.0), 0, &set, &[]),
        Decision::Fix(Strategy::Surgical)
    );
    assert_eq!(
        decide(10, Some(60.0), 0, &set, &[]),
        Decision::Stop(StopReason::MaxIterations)
    );
    assert_eq!(decide(10, Some(99.0), 0, &set, &[]), Decision::Pass);
}

#[test]
fn iteration_from_the_task_id() {
    for (id, n, chain) in [
        ("TEST-001", 1, "TEST-001"),
        ("TEST-001-I2", 2, "TEST-001"),
        ("TEST-001-I10", 10, "TEST-001"),
        ("TEST-002-R1-I3", 3, "TEST-002-R1"),
        ("TEST-001-Ix", 1, "TEST-001-Ix"),
    ] {
        let id: TaskId = id.parse().unwrap();
        assert_eq!(iteration_of(&id), n, "{id}");
        assert_eq!(chain_of(&id), chain, "{id}");
    }
}

#[test]
fn frameworks_are_detected_from_the_tree() {
    type Case = (
        Vec<(&'static str, &'static str)>,
        Option<(Kind, &'static str, &'static str)>,
    );
    let cases: Vec<Case> = vec![
        (
            vec![
                ("Cargo.toml", "[package]\nname = \"x\"\n"),
                ("src/lib.rs", ""),
            ],
            Some((Kind::Cargo, "", "cargo test --no-fail-fast")),
        ),
        (
            vec![("pytest.ini", "[pytest]\n"), ("tests/test_a.py", "")],
            Some((Kind::Pytest, "", "python3 -m pytest -v --tb=short")),
        ),
        (
            vec![
                (
                    "pyproject.toml",
                    "[project]\nname = \"x\"\n\n[tool.pytest.ini_options]\naddopts = \"-q\"\n",
                ),
                ("test_a.py", ""),
            ],
            Some((Kind::Pytest, "", "python3 -m pytest -v --tb=short")),
        ),
        (
            vec![
                ("requirements-dev.txt", "black\npytest>=8\n"),
                ("app.py", ""),
            ],
            Some((Kind::Pytest, "", "python3 -m pytest -v --tb=short")),
        ),
        (
            vec![
                ("requirements.txt", "pytest-cov\n"),
                ("calc.py", ""),
                ("test_calc.py", ""),
            ],
            Some((Kind::Unittest, "", "python3 -m unittest -v")),
        ),
        (
            vec![("calc.py", ""), ("tests/test_calc.py", "")],
            Some((
                Kind::Unittest,
                "",
                "python3 -m unittest discover -v -s tests",
            )),
        ),
        (
            vec![
                ("pkg/__init__.py", ""),
                ("pkg/tests/__init__.py", ""),
                ("pkg/tests/test_x.py", ""),
            ],
            Some((Kind::Unittest, "", "python3 -m unittest -v")),
        ),
        // A Python project in a directory of its own: its tests run there.
        (
            vec![
                ("backend/requirements.txt", "# none\n"),
                ("backend/api/__init__.py", ""),
                ("backend/tests/test_api.py", ""),
            ],
            Some((
                Kind::Unittest,
                "backend",
                "python3 -m unittest discover -v -s tests",
            )),
        ),
        (
            vec![(
                "package.json",
                r#"{"devDependencies": {"vitest": "^1.6.0"}, "scripts": {"test": "vitest"}}"#,
            )],
            Some((Kind::Vitest, "", "npx --no -- vitest run")),
        ),
        (
            vec![("package.json", r#"{"devDependencies": {"jest": "^29"}}"#)],
            Some((Kind::Jest, "", "npx --no -- jest --ci --no-coverage")),
        ),
        (
            vec![("package.json", r#"{"scripts": {"test": "mocha test/"}}"#)],
            Some((Kind::Mocha, "", "npx --no -- mocha test/ --reporter spec")),
        ),
        // Express's script: its requires, spec directories and options are the suite; its
        // reporter gives way to the tester's.
        (
            vec![(
                "package.json",
                r#"{"devDependencies": {"mocha": "10"}, "scripts": {"test": "mocha --require test/support/env --reporter spec --check-leaks test/ test/acceptance/"}}"#,
            )],
            Some((
                Kind::Mocha,
                "",
                "npx --no -- mocha --require test/support/env --check-leaks test/ test/acceptance/ --reporter spec",
            )),
        ),
        (
            vec![(
                "package.json",
                r#"{"devDependencies": {"mocha": "10"}, "scripts": {"test": "npm run unit", "unit": "NODE_ENV=test mocha -R dot --reporter-option maxDiffSize=0 'test/**/*.spec.js'"}}"#,
            )],
            Some((
                Kind::Mocha,
                "",
                "NODE_ENV=test npx --no -- mocha 'test/**/*.spec.js' --reporter spec",
            )),
        ),
        // Not one plain mocha command: the bare runner.
        (
            vec![(
                "package.json",
                r#"{"devDependencies": {"mocha": "10"}, "scripts": {"test": "nyc mocha test/"}}"#,
            )],
            Some((Kind::Mocha, "", "npx --no -- mocha --reporter spec")),
        ),
        (
            vec![(
                "package.json",
                r#"{"devDependencies": {"mocha": "10"}, "scripts": {"test": "mocha --watch test/"}}"#,
            )],
            Some((Kind::Mocha, "", "npx --no -- mocha --reporter spec")),
        ),
        (
            vec![(
                "package.json",
                r#"{"devDependencies": {"mocha": "10"}, "scripts": {"test": "mocha test/ && eslint ."}}"#,
            )],
            Some((Kind::Mocha, "", "npx --no -- mocha --reporter spec")),
        ),
        // Jest's and Vitest's scripts too: their `--config` stays, coverage, reporters and
        // watch mode give way to the tester's.
        (
            vec![(
                "package.json",
                r#"{"devDependencies": {"jest": "^29"}, "scripts": {"test": "TZ=UTC jest --config jest.unit.config.js --coverage --ci -w 2 src/"}}"#,
            )],
            Some((
                Kind::Jest,
                "",
                "TZ=UTC npx --no -- jest --config jest.unit.config.js -w 2 src/ --ci --no-coverage",
            )),
        ),
        (
            vec![(
                "package.json",
                r#"{"devDependencies": {"jest": "^29"}, "scripts": {"test": "jest --watchAll"}}"#,
            )],
            Some((Kind::Jest, "", "npx --no -- jest --ci --no-coverage")),
        ),
        (
            vec![(
                "package.json",
                r#"{"devDependencies": {"jest": "^29"}, "scripts": {"test": "cross-env CI=1 jest"}}"#,
            )],
            Some((Kind::Jest, "", "npx --no -- jest --ci --no-coverage")),
        ),
        (
            vec![(
                "package.json",
                r#"{"devDependencies": {"vitest": "^1"}, "scripts": {"test": "vitest run --config vitest.unit.ts --reporter=verbose --coverage.enabled true unit"}}"#,
            )],
            Some((
                Kind::Vitest,
                "",
                "npx --no -- vitest run --config vitest.unit.ts unit",
            )),
        ),
        (
            vec![(
                "package.json",
                r#"{"devDependencies": {"vitest": "^1"}, "scripts": {"test": "vitest bench"}}"#,
            )],
            Some((Kind::Vitest, "", "npx --no -- vitest run")),
        ),
        (
            vec![("package.json", r#"{"scripts": {"test": "node --test"}}"#)],
            Some((Kind::NodeTest, "", "npm test")),
        ),
        // Through another script, and with options before `--test`.
        (
            vec![(
                "package.json",
                r#"{"scripts": {"test": "npm run unit", "unit": "node --import tsx --test test/"}}"#,
            )],
            Some((Kind::NodeTest, "", "npm test")),
        ),
        // A script that picks its own reporter keeps it: `npm test`, read from the console.
        (
            vec![(
                "package.json",
                r#"{"scripts": {"test": "node --test --test-reporter=dot"}}"#,
            )],
            Some((Kind::NpmScript, "", "npm test")),
        ),
        (
            vec![(
                "package.json",
                r#"{"scripts": {"test": "node test/run.js"}}"#,
            )],
            Some((Kind::NpmScript, "", "npm test")),
        ),
        (
            vec![(
                "package.json",
                r#"{"scripts": {"test": "echo \"Error: no test specified\" && exit 1"}}"#,
            )],
            None,
        ),
        (
            vec![("go.mod", "module example.com/x\n"), ("x.go", "")],
            Some((Kind::Go, "", "go test -v ./...")),
        ),
        (
            vec![
                ("backend/go.mod", "module example.com/x\n"),
                ("README.md", ""),
            ],
            Some((Kind::Go, "backend", "go test -v ./...")),
        ),
        (vec![("README.md", "# x\n"), ("main.c", "")], None),
    ];
    for (files, want) in cases {
        let (_dir, code) = code_tree(&files);
        let got = detect::detect(&code, None).map(|f| (f.kind, f.dir.clone(), f.full.clone()));
        let want = want.map(|(k, d, c)| (k, d.to_owned(), c.to_owned()));
        assert_eq!(got, want, "{files:?}");
    }
}

#[test]
fn the_shallowest_framework_wins_and_the_analyst_breaks_ties() {
    let files = [
        ("Cargo.toml", "[package]\nname = \"x\"\n"),
        ("pytest.ini", "[pytest]\n"),
        (
            "web/package.json",
            r#"{"devDependencies": {"jest": "^29"}}"#,
        ),
    ];
    let (_dir, code) = code_tree(&files);
    assert_eq!(detect::detect(&code, None).unwrap().kind, Kind::Pytest);
    let discovery = Discovery::parse(
        br#"{"codebase_context": {"test_framework": {"name": "cargo test", "command": "cargo test", "evidence": "Cargo.toml"}}}"#,
    )
    .unwrap();
    assert_eq!(
        detect::detect(&code, discovery.test_framework())
            .unwrap()
            .kind,
        Kind::Cargo
    );
    // A hint for a deeper framework does not win over a shallower one.
    let jest = TestFramework {
        name: "jest".into(),
        ..Default::default()
    };
    assert_eq!(
        detect::detect(&code, Some(&jest)).unwrap().kind,
        Kind::Pytest
    );
}

#[test]
fn affected_tests_map_from_changed_files() {
    let files = [
        ("package.json", r#"{"devDependencies": {"jest": "^29"}}"#),
        ("src/math.ts", ""),
        ("src/math.test.ts", ""),
        ("src/util.ts", ""),
        ("src/__tests__/util.test.ts", ""),
        ("src/date.ts", ""),
        ("tests/date.test.ts", ""),
        ("src/other.ts", ""),
        ("src/api.spec.ts", ""),
    ];
    let (_dir, code) = code_tree(&files);
    let fw = detect::detect(&code, None).unwrap();
    let changed: Vec<String> = [
        "src/math.ts",
        "src/util.ts",
        "src/date.ts",
        "src/other.ts",
        "src/api.spec.ts",
        "README.md",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let got = detect::affected(&code, &fw, &changed);
    assert_eq!(
        got,
        [
            "src/__tests__/util.test.ts",
            "src/api.spec.ts",
            "src/math.test.ts",
            "tests/date.test.ts"
        ]
    );
    assert_eq!(
        detect::affected_command(&fw, &got).unwrap(),
        "npx --no -- jest --ci --no-coverage src/__tests__/util.test.ts src/api.spec.ts src/math.test.ts tests/date.test.ts"
    );

    let py = [
        ("calc.py", ""),
        ("test_calc.py", ""),
        ("pkg/store.py", ""),
        ("tests/test_store.py", ""),
        ("pkg/none.py", ""),
    ];
    let (_dir, code) = code_tree(&py);
    let fw = detect::detect(&code, None).unwrap();
    let changed = vec![
        "calc.py".to_owned(),
        "pkg/store.py".into(),
        "pkg/none.py".into(),
    ];
    let got = detect::affected(&code, &fw, &changed);
    assert_eq!(got, ["test_calc.py", "tests/test_store.py"]);
    assert_eq!(
        detect::affected_command(&fw, &got).unwrap(),
        "python3 -m unittest -v test_calc.py tests/test_store.py"
    );

    let rust = [
        ("Cargo.toml", "[package]\nname = \"x\"\n"),
        ("src/parser.rs", ""),
        ("src/lexer/mod.rs", ""),
        ("tests/parser.rs", ""),
        ("tests/lexer.rs", ""),
    ];
    let (_dir, code) = code_tree(&rust);
    let fw = detect::detect(&code, None).unwrap();
    let changed = vec!["src/parser.rs".to_owned(), "src/lexer/mod.rs".into()];
    let got = detect::affected(&code, &fw, &changed);
    assert_eq!(got, ["tests/lexer.rs", "tests/parser.rs"]);
    assert_eq!(
        detect::affected_command(&fw, &got).unwrap(),
        "cargo test --no-fail-fast --test lexer --test parser"
    );
    let npm = Framework {
        kind: Kind::NpmScript,
        full: "npm test".into(),
        ..fw.clone()
    };
    assert_eq!(detect::affected_command(&npm, &got), None);
    assert_eq!(detect::affected_command(&fw, &[]), None);
}

/// The affected tests of a JavaScript project run with what the suite's own command passes
/// its runner — the script's `--require`s, `--config` and options, the tester's reporter —
/// and the affected files in place of the script's files, directories and patterns.
#[test]
fn affected_javascript_tests_keep_the_suites_options() {
    let js = |package: &str| {
        let (_dir, code) = code_tree(&[("package.json", package)]);
        detect::detect(&code, None).expect("a runner")
    };
    let files = |f: &[&str]| f.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let dir = Path::new("/tmp/r");

    // Express's script: its setup file and --check-leaks stay, test/ and test/acceptance/ go.
    let express = js(
        r#"{"devDependencies": {"mocha": "10"}, "scripts": {"test": "mocha --require test/support/env --reporter spec --check-leaks test/ test/acceptance/"}}"#,
    );
    let cmd = detect::affected_command(&express, &files(&["test/app.router.js"])).unwrap();
    assert_eq!(
        cmd,
        "npx --no -- mocha --require test/support/env --check-leaks --reporter spec test/app.router.js"
    );
    let (run, _, report) = machine_readable(Kind::Mocha, &cmd, dir, CargoRunner::Libtest);
    assert_eq!(
        run,
        "npx --no -- mocha --require test/support/env --check-leaks test/app.router.js --reporter xunit --reporter-option output=/tmp/r/results"
    );
    assert!(report.is_some());
    // Assignments, values of options the tester does not know, and the script's own
    // selection of files (`--spec`) left out.
    let mocha = js(
        r#"{"devDependencies": {"mocha": "10"}, "scripts": {"test": "NODE_ENV=test mocha --spec 'test/unit/**' --timeout 5000 --recursive test/int --file test/setup.js"}}"#,
    );
    assert_eq!(
        detect::affected_command(&mocha, &files(&["test/a.spec.js", "test/b c.js"])).unwrap(),
        "NODE_ENV=test npx --no -- mocha --timeout 5000 --recursive --file test/setup.js --reporter spec test/a.spec.js 'test/b c.js'"
    );

    let jest = js(
        r#"{"devDependencies": {"jest": "^29"}, "scripts": {"test": "jest --config jest.unit.config.js --testPathPattern unit src/"}}"#,
    );
    let cmd = detect::affected_command(&jest, &files(&["src/a.test.ts"])).unwrap();
    assert_eq!(
        cmd,
        "npx --no -- jest --config jest.unit.config.js --ci --no-coverage src/a.test.ts"
    );
    let (run, _, _) = machine_readable(Kind::Jest, &cmd, dir, CargoRunner::Libtest);
    assert_eq!(
        run,
        "npx --no -- jest --config jest.unit.config.js --ci --no-coverage src/a.test.ts --json --outputFile=/tmp/r/results"
    );

    let vitest = js(
        r#"{"devDependencies": {"vitest": "^1"}, "scripts": {"test": "vitest --config vitest.unit.ts unit"}}"#,
    );
    let cmd = detect::affected_command(&vitest, &files(&["src/a.test.ts"])).unwrap();
    assert_eq!(
        cmd,
        "npx --no -- vitest run --config vitest.unit.ts src/a.test.ts"
    );
    let (run, _, _) = machine_readable(Kind::Vitest, &cmd, dir, CargoRunner::Libtest);
    assert_eq!(
        run,
        "npx --no -- vitest run --config vitest.unit.ts src/a.test.ts --reporter=default --reporter=junit --outputFile.junit=/tmp/r/results"
    );

    // A configured command of one runner is narrowed the same way; one that is not one plain
    // command gives the runner alone.
    let configured = |full: &str| Framework {
        kind: Kind::of_command(full).unwrap(),
        dir: String::new(),
        evidence: String::new(),
        full: full.to_owned(),
    };
    assert_eq!(
        detect::affected_command(
            &configured("npx mocha -r ts-node/register test/"),
            &files(&["test/a.ts"])
        )
        .unwrap(),
        "npx mocha -r ts-node/register test/a.ts"
    );
    assert_eq!(
        detect::affected_command(
            &configured("npx mocha test/ && eslint ."),
            &files(&["test/a.js"])
        )
        .unwrap(),
        "npx --no -- mocha --reporter spec test/a.js"
    );
}

/// A detected runner started through npx runs from the checkout's `node_modules/.bin`, the
/// nearest one from the command's directory up to the checkout's root, with that directory
/// first on its PATH; without one, npx runs.
#[test]
fn a_detected_runner_runs_from_the_checkouts_node_modules() {
    let root = tempfile::tempdir().unwrap();
    let bin = root.path().join("node_modules/.bin");
    write(
        root.path(),
        &[("node_modules/.bin/mocha", "#!/bin/sh\n"), ("web/x", "")],
    );
    let web = root.path().join("web");
    let full = "NODE_ENV=test npx --no -- mocha --require test/env test/ --reporter spec";
    assert_eq!(
        local_runner(full, root.path(), root.path()),
        Some((
            "NODE_ENV=test node_modules/.bin/mocha --require test/env test/ --reporter spec"
                .to_owned(),
            bin.clone()
        ))
    );
    // From a project directory below a workspace's root.
    assert_eq!(
        local_runner("npx --no -- mocha test/", &web, root.path()),
        Some(("../node_modules/.bin/mocha test/".to_owned(), bin.clone()))
    );
    // No such runner installed, a command that is not npx's, above the root: as it is.
    for cmd in [
        "npx --no -- jest --ci",
        "npm test",
        "xnpx --no -- mocha",
        "npx mocha",
    ] {
        assert_eq!(local_runner(cmd, root.path(), root.path()), None, "{cmd}");
    }
    assert_eq!(local_runner("npx --no -- mocha", &web, &web), None);

    let mut env = tlv4_core::environment::isolate::RunEnv {
        set: vec![("PATH".into(), "/usr/bin:/bin".into())],
        ..Default::default()
    };
    first_on_path(&mut env, &bin);
    let want = format!("{}:/usr/bin:/bin", bin.display());
    assert_eq!(env.set, [("PATH".to_owned(), want.clone())]);
    first_on_path(&mut env, &bin);
    assert_eq!(env.set, [("PATH".to_owned(), want)], "not twice");
}

#[test]
fn commands_time_out_and_take_their_children_along() {
    let dir = tempfile::tempdir().unwrap();
    let start = Instant::now();
    // The background sleep keeps the output pipe open: only killing the group ends it.
    let ran = exec::run(
        dir.path(),
        "echo started; sleep 30 & sleep 30",
        Duration::from_millis(500),
        &Default::default(),
    );
    assert!(ran.timed_out);
    assert_eq!(ran.exit_code, None);
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(ran.output, "started\n");
    let r = evaluate(
        Kind::Unittest,
        Scope::Full,
        ran,
        Duration::from_secs(600),
        None,
    );
    assert_eq!(r.pass_rate, Some(0.0));
    assert_eq!(r.failures.len(), 1);
    assert_eq!(r.failures[0].severity, Severity::Medium);
    assert!(r.failures[0].name.starts_with("timeout: `echo started"));
    assert!(r.failures[0].name.ends_with("ran longer than 600 s"));

    let ok = exec::run(
        dir.path(),
        "echo out; echo err >&2; exit 3",
        Duration::from_secs(10),
        &Default::default(),
    );
    assert_eq!(ok.exit_code, Some(3));
    assert!(!ok.timed_out);
    assert_eq!(ok.output, "out\nerr\n");
    assert_eq!(unavailable(&ok), None);
    let missing = exec::run(
        dir.path(),
        "no-such-test-runner-xyz",
        Duration::from_secs(10),
        &Default::default(),
    );
    assert!(unavailable(&missing).is_some_and(|w| w.contains("command not found")));
}

/// The rule that replaced "the exit status fills in when counts are missing": a run whose
/// runner printed no count is never a pass, and its failure is never counted as "0 passed,
/// 1 failed".
#[test]
fn no_count_is_never_a_pass() {
    let ran = |code: i32, output: &str| exec::Ran {
        command: "make test".into(),
        exit_code: Some(code),
        output: output.into(),
        ..exec::Ran::default()
    };
    let t = Duration::from_secs(600);
    // Exit 0 without a count: no test counted, not 100 %.
    let quiet = evaluate(Kind::Custom, Scope::Full, ran(0, "all good\n"), t, None);
    assert_eq!((quiet.pass_rate, quiet.counted), (None, false));
    assert!(quiet.failures.is_empty());
    // A failed exit without a count: a failure, counts unknown (not "0 passed, 1 failed").
    let bad = evaluate(Kind::Custom, Scope::Full, ran(2, "boom\n"), t, None);
    assert_eq!(bad.pass_rate, Some(0.0));
    assert!(!bad.counted && !bad.counts_known());
    assert_eq!(bad.counts, parse::Counts::default());
    assert_eq!(bad.shown_rate(), None);
    assert_eq!(bad.failures.len(), 1);
    assert_eq!(
        bad.failures[0].name,
        "`make test` failed (exit 2) and printed no test count"
    );
    assert_eq!(bad.failures[0].detail, "boom");
    assert_eq!(
        bad.describe_counts(),
        "counts unknown: `make test` exited 2 and printed no test count"
    );
    // unittest found nothing to run.
    let none = "\n----------------------------------------------------------------------\nRan 0 tests in 0.000s\n\nOK\n";
    assert_eq!(
        evaluate(Kind::Unittest, Scope::Full, ran(0, none), t, None).pass_rate,
        None
    );
    // Counts say all passed, the command failed: one more failure.
    let odd = "Ran 3 tests in 0.001s\n\nOK\nSegmentation fault\n";
    let r = evaluate(Kind::Unittest, Scope::Full, ran(139, odd), t, None);
    assert_eq!((r.counts.passed, r.counts.failed), (3, 1));
    assert_eq!(r.pass_rate, Some(75.0));

    // What the verdict, the record and the report make of them.
    let repo = repo(&[("Makefile", "test:\n\ttrue\n")], &[]);
    let inp = input("TEST-001", repo.code.clone(), &[]);
    let setup = Setup {
        kind: Kind::Custom,
        dir: String::new(),
        evidence: ".tlv4.toml [tests] command".into(),
        full: "make test".into(),
        source: ".tlv4.toml [tests] command".into(),
        fallback: None,
    };
    let result = conclude(
        &inp,
        1,
        &setup,
        Kind::Custom,
        vec![quiet],
        Vec::new(),
        Vec::new(),
    );
    let v = result.verdict.clone().unwrap();
    assert_eq!((v.verdict.as_str(), v.score), ("no_tests", None));
    assert!(
        v.summary.starts_with(
            "no tests counted: `make test` exited 0 and printed no test count (custom command); not a pass"
        ),
        "{}",
        v.summary
    );
    assert!(result.fix.is_none());
    assert!(
        result.warnings[0].starts_with("`make test` printed no test count"),
        "{:?}",
        result.warnings
    );
    let rec: Record = serde_json::from_str(file(&result, "artifacts/test-runs/1.json")).unwrap();
    assert_eq!(rec.schema, 2);
    assert_eq!((rec.runs[0].passed, rec.runs[0].counted), (None, false));
    let report = file(&result, "artifacts/test-report.md");
    assert!(
        report.contains("| full | `make test` | 0 | ? | ? | ? | no count |"),
        "{report}"
    );
    assert!(report.contains("    all good\n"), "{report}");

    let result = conclude(
        &inp,
        1,
        &setup,
        Kind::Custom,
        vec![bad],
        Vec::new(),
        Vec::new(),
    );
    let v = result.verdict.clone().unwrap();
    assert_eq!((v.verdict.as_str(), v.score), ("fix_required", None));
    assert_eq!(
        v.summary,
        "tests fail, counts unknown: `make test` exited 2 and printed no test count; fix iteration 2 (conservative)"
    );
    let fix = result
        .fix
        .as_ref()
        .expect("a failure of the code asks for a fix");
    assert_eq!(fix.pass_rate, None);
    assert!(
        fix.failures.starts_with(
            "- [High] `make test` failed (exit 2) and printed no test count\n    boom"
        ),
        "{}",
        fix.failures
    );
    let rec: Record = serde_json::from_str(file(&result, "artifacts/test-runs/1.json")).unwrap();
    assert_eq!(
        (rec.pass_rate, rec.verdict.as_str()),
        (None, "fix_required")
    );
    assert_eq!(
        (
            rec.runs[0].passed,
            rec.runs[0].failed,
            rec.runs[0].pass_rate
        ),
        (None, None, None)
    );
    let report = file(&result, "artifacts/test-report.md");
    assert!(
        report.contains("- **Pass rate:** unknown (the runner printed no test count)"),
        "{report}"
    );
    assert!(
        report.contains("| full | `make test` | 2 | ? | ? | ? | unknown |"),
        "{report}"
    );
    assert!(
        report.contains(
            "The full run printed no test count (`make test` exited 2): its counts are unknown, and it is no pass. The end of its output:\n\n    boom\n"
        ),
        "{report}"
    );
    assert!(report.contains("    boom\n"), "{report}");
    assert!(!report.contains("0 passed, 1 failed"), "{report}");
}

#[test]
fn a_failing_python_suite_asks_for_a_conservative_fix() {
    let r = repo(
        &[("README.md", "calc\n")],
        &[("calc.py", CALC), ("tests/test_calc.py", TEST_HALF)],
    );
    let inp = input("TEST-001", r.code.clone(), &[]);
    let result = run_task(&inp, &r.ctx).unwrap();
    assert_eq!(
        result.output.outcome,
        Outcome::Completed,
        "{}",
        result.output.summary
    );
    let fix = result.fix.as_ref().expect("a fix request");
    assert_eq!(fix.iteration, 1);
    assert_eq!(fix.strategy, "conservative");
    assert_eq!(fix.pass_rate, Some(50.0));
    assert!(
        fix.failures.starts_with("- [High] FAIL: test_wrong"),
        "{}",
        fix.failures
    );
    assert!(fix.failures.contains("AssertionError: 3 != 4"));
    let v = result.verdict.as_ref().unwrap();
    assert_eq!(v.verdict, "fix_required");
    assert_eq!(v.score, Some(50.0));
    // The affected tests ran (and failed), so the full suite waits.
    assert_eq!(
        result.output.state_update.verification,
        "python3 -m unittest -v tests/test_calc.py"
    );
    result.output.state_update.validate().unwrap();
    let rec: Record = serde_json::from_str(file(&result, "artifacts/test-runs/1.json")).unwrap();
    assert_eq!(rec.iteration, 1);
    assert_eq!(rec.pass_rate, Some(50.0));
    assert_eq!(rec.result_set.passed, 1);
    assert_eq!(rec.result_set.failed, 1);
    assert_eq!(rec.strategy.as_deref(), Some("conservative"));
    let report = file(&result, "artifacts/test-report.md");
    assert!(report.contains("- **Verdict:** fix_required"), "{report}");
    assert!(report.contains("### High (1)"));
    assert!(report.contains("#### FAIL: test_wrong"));
    assert!(file(&result, "artifacts/test-runs/1-affected.log").contains("Ran 2 tests"));
    assert_eq!(
        worktrees(r.dir.path()),
        1,
        "the temporary worktree is removed"
    );
}

#[test]
fn a_passing_python_suite_passes_after_the_affected_tests() {
    let r = repo(
        &[("README.md", "calc\n")],
        &[("calc.py", CALC), ("tests/test_calc.py", TEST_PASS)],
    );
    let inp = input("TEST-001-I2", r.code.clone(), &[]);
    let result = run_task(&inp, &r.ctx).unwrap();
    assert_eq!(
        result.output.outcome,
        Outcome::Completed,
        "{}",
        result.output.summary
    );
    assert!(result.fix.is_none());
    let v = result.verdict.clone().unwrap();
    assert_eq!(v.verdict, "pass");
    assert_eq!(v.score, Some(100.0));
    assert_eq!(
        result.output.state_update.verification,
        "python3 -m unittest -v tests/test_calc.py; python3 -m unittest discover -v -s tests"
    );
    let rec: Record = serde_json::from_str(file(&result, "artifacts/test-runs/2.json")).unwrap();
    assert_eq!(rec.runs.len(), 2);
    assert_eq!(rec.runs[1].scope, "full");
    assert_eq!((rec.runs[1].passed, rec.runs[1].failed), (Some(2), Some(0)));
    assert_eq!(worktrees(r.dir.path()), 1);
}

#[test]
fn identical_results_three_times_stop_the_cycle() {
    let r = repo(
        &[("calc.py", CALC), ("tests/test_calc.py", TEST_HALF)],
        &[("calc.py", "def add(a, b):\n    return b + a\n")],
    );
    let set = ResultSet {
        passed: 1,
        failed: 1,
        failures: vec!["FAIL: test_wrong (tests.test_calc.T.test_wrong)".into()],
    };
    let earlier = |n: u32| {
        let mut rec = record(n, &set);
        rec.task = if n == 1 {
            "TEST-001".into()
        } else {
            format!("TEST-001-I{n}")
        };
        (
            format!("artifacts/test-runs/{n}.json"),
            serde_json::to_vec(&rec).unwrap(),
        )
    };
    let (p1, b1) = earlier(1);
    let (p2, b2) = earlier(2);
    let inp = input("TEST-001-I3", r.code.clone(), &[(&p1, b1), (&p2, b2)]);
    let result = run_task(&inp, &r.ctx).unwrap();
    assert_eq!(result.output.outcome, Outcome::Completed);
    assert!(result.fix.is_none(), "{:?}", result.fix);
    let v = result.verdict.clone().unwrap();
    assert_eq!(v.verdict, "fix_required");
    assert!(v.summary.contains("identical results"), "{}", v.summary);
    assert_eq!(result.warnings.len(), 1);
    let report = file(&result, "artifacts/test-report.md");
    assert!(report.contains("| 1 | TEST-001 | 50.0% |"), "{report}");
    assert_eq!(worktrees(r.dir.path()), 1);
}

#[test]
fn an_agents_test_command_runs_only_when_it_is_the_detected_one() {
    let r = repo(
        &[("README.md", "calc\n")],
        &[("calc.py", CALC), ("test_calc.py", TEST_PASS)],
    );
    let plan = |cmd: &str| {
        (
            "plan/plan.json",
            serde_json::to_vec(&serde_json::json!({"test_command": cmd})).unwrap(),
        )
    };
    // The planner's own command is not run: the detected one is.
    let marker = r.dir.path().join("planner-ran");
    let evil = format!("touch {}", marker.display());
    let inp = input("TEST-001", r.code.clone(), &[plan(&evil)]);
    let result = run_task(&inp, &r.ctx).unwrap();
    assert!(!marker.exists(), "the plan's command ran");
    assert_eq!(result.verdict.unwrap().verdict, "pass");
    let su = &result.output.state_update;
    assert!(
        su.verification.ends_with("; python3 -m unittest -v"),
        "{}",
        su.verification
    );
    assert!(
        su.decisions
            .iter()
            .any(|d| d.contains("not run: `touch") && d.contains("an agent's choice")),
        "{:?}",
        su.decisions
    );
    // The same command as the detected one is fine.
    let inp = input(
        "TEST-001",
        r.code.clone(),
        &[plan("python3 -m unittest -v")],
    );
    let result = run_task(&inp, &r.ctx).unwrap();
    assert_eq!(result.verdict.unwrap().verdict, "pass");
    assert!(
        result.output.state_update.decisions[0].contains("names the same"),
        "{:?}",
        result.output.state_update.decisions
    );
    assert_eq!(worktrees(r.dir.path()), 1);
}

#[test]
fn the_configured_test_command_runs_and_an_agents_other_command_does_not() {
    let r = repo(&[("calc.py", CALC)], &[("test_calc.py", TEST_PASS)]);
    let plan = (
        "plan/plan.json",
        serde_json::to_vec(&serde_json::json!({"test_command": "make evil"})).unwrap(),
    );
    let inp = input("TEST-001", r.code.clone(), &[plan]);
    let mut notes = Vec::new();
    let s = setup(&inp, Some("python3 -m unittest test_calc"), &mut notes).unwrap();
    assert_eq!(s.full, "python3 -m unittest test_calc");
    assert_eq!(s.kind, Kind::Unittest);
    assert!(s.source.contains("[tests] command"), "{}", s.source);
    assert!(
        notes.len() == 1 && notes[0].contains("not run: `make evil`"),
        "{notes:?}"
    );
    // Without one, nothing an agent names runs where nothing is detected.
    let bare = repo(&[("README.md", "x\n")], &[("main.c", "int main(){}\n")]);
    let inp = input(
        "TEST-001",
        bare.code.clone(),
        &[(
            "plan/plan.json",
            serde_json::to_vec(&serde_json::json!({"test_command": "make evil"})).unwrap(),
        )],
    );
    let mut notes = Vec::new();
    assert!(setup(&inp, None, &mut notes).is_none());
    assert!(
        notes[0].contains("only the detected test command runs"),
        "{notes:?}"
    );
}

#[test]
fn an_untrusted_repository_does_not_run_its_tests() {
    let r = repo(&[("calc.py", CALC)], &[("test_calc.py", TEST_PASS)]);
    git(
        r.dir.path(),
        &["config", "--local", "--unset", tlv4_core::trust::KEY],
    );
    // The command that runs the session reads the configuration (and so the record) now.
    let ctx = QualityContext {
        conf: std::sync::Arc::new(tlv4_core::trust::Configuration::read(r.dir.path()).unwrap()),
        shell: false,
        ..r.ctx
    };
    let inp = input("TEST-001", r.code.clone(), &[]);
    let result = run_task(&inp, &ctx).unwrap();
    match &result.output.outcome {
        Outcome::Failed(why) => assert!(
            why.contains("not trusted") && why.contains("git tlv4 trust"),
            "{why}"
        ),
        other => panic!("expected a failure, got {other:?}"),
    }
    assert!(result.verdict.is_none());
    assert_eq!(worktrees(r.dir.path()), 1);
}

#[test]
fn no_framework_is_a_completed_no_tests_verdict_with_a_warning() {
    let r = repo(&[("README.md", "x\n")], &[("main.c", "int main(){}\n")]);
    let inp = input("TEST-001", r.code.clone(), &[]);
    let result = run_task(&inp, &r.ctx).unwrap();
    assert_eq!(result.output.outcome, Outcome::Completed);
    assert_eq!(result.verdict.clone().unwrap().verdict, "no_tests");
    assert!(result.fix.is_none());
    assert_eq!(result.warnings.len(), 1);
    assert!(result.warnings[0].contains("no test framework found"));
    file(&result, "artifacts/test-report.md");
}

#[test]
fn a_worktree_that_cannot_be_made_fails_the_task() {
    let r = repo(&[("calc.py", CALC)], &[("test_calc.py", TEST_PASS)]);
    let mut ctx = r.ctx.clone();
    ctx.tip = gix::ObjectId::from_hex(b"1111111111111111111111111111111111111111").unwrap();
    ctx.base = ctx.tip;
    let inp = input("TEST-001", r.code.clone(), &[]);
    let result = run_task(&inp, &ctx).unwrap();
    match &result.output.outcome {
        Outcome::Failed(why) => assert!(why.contains("1111111111"), "{why}"),
        other => panic!("expected a failure, got {other:?}"),
    }
    assert!(result.verdict.is_none());
    assert_eq!(worktrees(r.dir.path()), 1);
}
