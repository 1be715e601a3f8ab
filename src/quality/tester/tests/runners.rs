//! Whole tester runs with the real runners installed here — Node's built-in runner (through
//! `npm test`, detected and configured) and cargo, under libtest and cargo-nextest — on small repositories
//! these tests write. Each is skipped, saying why, when its runner is not installed.

use super::*;

/// Whether `program --version` runs.
fn installed(program: &str, args: &[&str]) -> bool {
    std::process::Command::new(program)
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success())
}

const NODE_PACKAGE: &str = r#"{"name": "calc", "version": "1.0.0", "private": true, "scripts": {"test": "node --test"}}
"#;
const NODE_CALC: &str = "exports.add = (a, b) => a + b;\n";
const NODE_TESTS: &str = r#"const test = require('node:test');
const assert = require('node:assert');
const { add } = require('../calc');

test('adds', () => { assert.strictEqual(add(1, 2), 3); });
test('adds wrongly', () => { assert.strictEqual(add(1, 2), 4); });
"#;

fn record_of(result: &QualityResult) -> Record {
    serde_json::from_str(file(result, "artifacts/test-runs/1.json")).expect("a record")
}

/// `node --test` behind `npm test` is detected as Node's runner and read from its JUnit
/// report: one test passes, one fails. (Before, `npm test` printed "no test count" to the
/// tester and passed by its exit status, or failed as "0 passed, 1 failed".)
#[test]
fn real_node_test_results_come_from_its_junit_report() {
    if !installed("node", &["--version"]) || !installed("npm", &["--version"]) {
        eprintln!("skipped: `node` and `npm` are not installed on this machine");
        return;
    }
    let r = repo(
        &[("package.json", NODE_PACKAGE), ("calc.js", NODE_CALC)],
        &[("test/calc.test.js", NODE_TESTS)],
    );
    let inp = input("TEST-001", r.code.clone(), &[]);
    let result = run_task(&inp, &r.ctx).unwrap();
    assert_eq!(
        result.output.outcome,
        Outcome::Completed,
        "{}",
        result.output.summary
    );
    let rec = record_of(&result);
    assert_eq!(rec.framework, "node:test", "{rec:?}");
    let run = rec.runs.last().unwrap();
    assert_eq!(run.command, "npm test");
    assert_eq!(run.results_from, "JUnit XML", "{rec:?}");
    assert_eq!(
        (run.passed, run.failed, run.counted),
        (Some(1), Some(1), true)
    );
    assert_eq!(rec.pass_rate, Some(50.0));
    assert_eq!(rec.result_set.failures, ["adds wrongly"]);
    let fix = result.fix.as_ref().expect("a fix request");
    assert_eq!(fix.pass_rate, Some(50.0));
    assert!(fix.failures.contains("4"), "{}", fix.failures);
    // The console still shows the human reporter.
    let log = file(&result, "artifacts/test-runs/1-full.log");
    assert!(log.contains("✖ adds wrongly"), "{log}");
    assert_eq!(worktrees(r.dir.path()), 1);
}

/// The configured `[tests] command = "npm test"` (a kind the tester cannot add reporters
/// to) is read from Node's default console output, TAP: counted, not "no test count".
#[test]
fn a_configured_npm_test_running_node_test_is_counted_from_its_console() {
    if !installed("node", &["--version"]) || !installed("npm", &["--version"]) {
        eprintln!("skipped: `node` and `npm` are not installed on this machine");
        return;
    }
    let r = repo(
        &[("package.json", NODE_PACKAGE), ("calc.js", NODE_CALC)],
        &[("test/calc.test.js", NODE_TESTS)],
    );
    let mut conf = (*r.ctx.conf).clone();
    conf.config.tests.command = Some("npm test".into());
    let ctx = QualityContext {
        conf: std::sync::Arc::new(conf),
        shell: false,
        ..r.ctx.clone()
    };
    let inp = input("TEST-001", r.code.clone(), &[]);
    let result = run_task(&inp, &ctx).unwrap();
    let rec = record_of(&result);
    assert_eq!(rec.framework, "npm test");
    let run = rec.runs.last().unwrap();
    assert_eq!(run.results_from, "console output");
    assert_eq!((run.passed, run.failed), (Some(1), Some(1)), "{rec:?}");
    assert_eq!(rec.result_set.failures, ["adds wrongly"]);
    assert_eq!(result.verdict.unwrap().verdict, "fix_required");
}

/// A workspace of two crates, with a failing unit test in one, a failing integration test
/// in the other and a failing doc test. Without a `.config/nextest.toml` it runs under `cargo
/// test`, whether cargo-nextest is installed or not, and the counts are the sum of libtest's
/// lines; with one (and nextest installed here) they are nextest's JUnit report plus the doc
/// tests. Every failure is named either way.
#[test]
fn real_cargo_workspace_is_counted_over_every_binary_and_the_doc_tests() {
    if !installed("cargo", &["--version"]) {
        eprintln!("skipped: `cargo` is not installed on this machine");
        return;
    }
    let alpha = "/// Subtracts, wrongly documented.\n///\n/// ```\n/// assert_eq!(alpha::sub(3, 1), 1);\n/// ```\npub fn sub(a: i32, b: i32) -> i32 {\n    a - b\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn ok() {\n        assert_eq!(super::sub(3, 1), 2);\n    }\n    #[test]\n    fn wrong() {\n        assert_eq!(super::sub(3, 1), 1);\n    }\n}\n";
    let beta = "pub fn twice(x: i32) -> i32 {\n    x * 2\n}\n";
    let more = "#[test]\nfn twice_ok() {\n    assert_eq!(beta::twice(3), 6);\n}\n\n#[test]\nfn twice_wrong() {\n    assert_eq!(beta::twice(3), 7);\n}\n";
    let manifest = |name: &str| {
        format!("[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n")
    };
    let (a, b) = (manifest("alpha"), manifest("beta"));
    let workspace = |extra: &[(&'static str, &'static str)]| {
        let mut base = vec![
            (
                "Cargo.toml",
                "[workspace]\nmembers = [\"alpha\", \"beta\"]\nresolver = \"2\"\n",
            ),
            ("alpha/Cargo.toml", a.as_str()),
            ("beta/Cargo.toml", b.as_str()),
            ("beta/src/lib.rs", beta),
            ("beta/tests/more.rs", more),
        ];
        base.extend_from_slice(extra);
        let r = repo(&base, &[("alpha/src/lib.rs", alpha)]);
        let inp = input("TEST-001", r.code.clone(), &[]);
        let result = run_task(&inp, &r.ctx).unwrap();
        // The build directory the tester chose (kept between iterations) goes with the test.
        for d in &result.output.state_update.decisions {
            if let Some(dir) = d.strip_prefix("cargo builds in ") {
                let _ = std::fs::remove_dir_all(dir);
            }
        }
        assert_eq!(worktrees(r.dir.path()), 1);
        result
    };

    let result = workspace(&[]);
    let rec = record_of(&result);
    let run = rec.runs.last().unwrap();
    assert_eq!(run.command, "cargo test --no-fail-fast", "{rec:?}");
    assert_eq!(run.results_from, "console output");
    // 2 unit tests of alpha, 2 integration tests of beta, 1 doc test of alpha.
    assert_eq!((run.passed, run.failed), (Some(2), Some(3)), "{rec:?}");
    let mut names = rec.result_set.failures.clone();
    names.sort();
    assert_eq!(
        names,
        [
            "alpha/src/lib.rs - sub (line 3)",
            "alpha::tests::wrong",
            "more::twice_wrong"
        ]
    );
    assert_eq!(result.verdict.unwrap().verdict, "fix_required");

    if !nextest_installed() {
        eprintln!("cargo-nextest is not installed: checked `cargo test` only");
        return;
    }
    let result = workspace(&[(".config/nextest.toml", "[profile.default]\nretries = 0\n")]);
    let rec = record_of(&result);
    let run = rec.runs.last().unwrap();
    assert!(
        run.command.starts_with("cargo nextest run --no-fail-fast "),
        "{}",
        run.command
    );
    assert_eq!(run.results_from, "JUnit XML");
    assert_eq!((run.passed, run.failed), (Some(2), Some(3)), "{rec:?}");
    let mut names = rec.result_set.failures.clone();
    names.sort();
    assert_eq!(
        names,
        [
            "alpha/src/lib.rs - sub (line 3)",
            "alpha::tests::wrong",
            "beta::more::twice_wrong"
        ]
    );
    assert_eq!(result.verdict.unwrap().verdict, "fix_required");
}
