//! Parser tests on output captured from real runs (cargo 1.95, Python 3.11 unittest, pytest 8,
//! Jest 29, Vitest 1, Mocha 10, Go 1.22), shortened where it repeats.

use super::*;

const CARGO: &str = r#"   Compiling ct v0.1.0 (/tmp/ct)
    Finished `test` profile [unoptimized + debuginfo] target(s) in 0.53s
     Running unittests src/lib.rs (target/debug/deps/ct-c4066ebb79ee0019)

running 3 tests
test tests::ok ... ok
test tests::skipped ... ignored
test tests::bad ... FAILED

failures:

---- tests::bad stdout ----

thread 'tests::bad' (6372) panicked at src/lib.rs:6:24:
assertion `left == right` failed
  left: 3
 right: 4
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace


failures:
    tests::bad

test result: FAILED. 1 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.17s

error: test failed, to rerun pass `--lib`
     Running tests/more.rs (target/debug/deps/more-c2660fb8f5f16a2a)

running 2 tests
test more_ok ... ok
test more_bad ... FAILED

failures:

---- more_bad stdout ----

thread 'more_bad' (6389) panicked at tests/more.rs:2:25:
boom
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace


failures:
    more_bad

test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.15s

error: test failed, to rerun pass `--test more`
   Doc-tests ct

running 0 tests

test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s

error: 2 targets failed:
    `--lib`
    `--test more`
"#;

const CARGO_COMPILE_ERROR: &str = r#"   Compiling ct v0.1.0 (/tmp/ct)
error[E0425]: cannot find value `c` in this scope
 --> src/lib.rs:1:41
  |
1 | pub fn add(a: i32, b: i32) -> i32 { a + c }
  |                                         ^
  |
help: a local variable with a similar name exists
  |
1 - pub fn add(a: i32, b: i32) -> i32 { a + c }
1 + pub fn add(a: i32, b: i32) -> i32 { a + a }
  |

For more information about this error, try `rustc --explain E0425`.
error: could not compile `ct` (lib) due to 1 previous error
warning: build failed, waiting for other jobs to finish...
error: could not compile `ct` (lib test) due to 1 previous error
"#;

const UNITTEST: &str = r#"test_broken (unittest.loader._FailedTest.test_broken) ... ERROR
test_a (test_calc.T.test_a) ... ok
test_b (test_calc.T.test_b) ... FAIL
test_err (test_skip.S.test_err) ... ERROR
test_s (test_skip.S.test_s) ... skipped 'later'

======================================================================
ERROR: test_broken (unittest.loader._FailedTest.test_broken)
----------------------------------------------------------------------
ImportError: Failed to import test module: test_broken
Traceback (most recent call last):
  File "/root/.pyenv/versions/3.11.7/lib/python3.11/unittest/loader.py", line 419, in _find_test_path
    module = self._get_module_from_name(name)
             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/tmp/pyt/tests/test_broken.py", line 2, in <module>
    from calc import mul
ImportError: cannot import name 'mul' from 'calc' (/tmp/pyt/calc.py)


======================================================================
ERROR: test_err (test_skip.S.test_err)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/tmp/pyt/tests/test_skip.py", line 5, in test_err
    def test_err(self): raise ValueError("bad value")
                        ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
ValueError: bad value

======================================================================
FAIL: test_b (test_calc.T.test_b)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/tmp/pyt/tests/test_calc.py", line 5, in test_b
    def test_b(self): self.assertEqual(add(1,2),4)
                      ^^^^^^^^^^^^^^^^^^^^^^^^^^^^
AssertionError: 3 != 4

----------------------------------------------------------------------
Ran 5 tests in 0.001s

FAILED (failures=1, errors=2, skipped=1)
"#;

const UNITTEST_OK: &str = "test_a (test_calc.T.test_a) ... ok\ntest_b (test_calc.T.test_b) ... skipped 'later'\ntest_c (test_calc.T.test_c) ... skipped 'later'\n\n----------------------------------------------------------------------\nRan 3 tests in 0.000s\n\nOK (skipped=2)\n";

const PYTEST: &str = r#"============================= test session starts ==============================
platform linux -- Python 3.11.7, pytest-8.2.0, pluggy-1.5.0 -- /usr/bin/python3
cachedir: .pytest_cache
rootdir: /tmp/proj
collecting ... collected 4 items

tests/test_calc.py::test_add PASSED                                      [ 25%]
tests/test_calc.py::test_sub FAILED                                      [ 50%]
tests/test_calc.py::test_div PASSED                                      [ 75%]
tests/test_calc.py::test_later SKIPPED (not yet)                         [100%]

=================================== FAILURES ===================================
___________________________________ test_sub ___________________________________
tests/test_calc.py:8: in test_sub
    assert sub(3, 1) == 3
E   assert 2 == 3
E    +  where 2 = sub(3, 1)
=============================== warnings summary ===============================
tests/test_calc.py::test_div
  /tmp/proj/calc.py:9: DeprecationWarning: div() is deprecated, use truediv()
    warnings.warn("div() is deprecated, use truediv()", DeprecationWarning)

-- Docs: https://docs.pytest.org/en/stable/how-to/capture-warnings.html
=========================== short test summary info ============================
FAILED tests/test_calc.py::test_sub - assert 2 == 3
============== 1 failed, 2 passed, 1 skipped, 1 warning in 0.03s ===============
"#;

const PYTEST_COLLECTION: &str = r#"============================= test session starts ==============================
collected 0 items / 1 error

==================================== ERRORS ====================================
____________________ ERROR collecting tests/test_broken.py _____________________
ImportError while importing test module '/tmp/proj/tests/test_broken.py'.
Hint: make sure your test modules/packages have valid Python names.
Traceback:
tests/test_broken.py:1: in <module>
    from calc import mul
E   ImportError: cannot import name 'mul' from 'calc' (/tmp/proj/calc.py)
=========================== short test summary info ============================
ERROR tests/test_broken.py
!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!
=============================== 1 error in 0.07s ===============================
"#;

const JEST: &str = r#"FAIL src/math.test.js
  math
    ✓ adds (2 ms)
    ✕ subtracts (3 ms)

  ● math › subtracts

    expect(received).toBe(expected) // Object.is equality

    Expected: 1
    Received: 2

       5 |   });
       6 |   test('subtracts', () => {
    >  7 |     expect(sub(3, 1)).toBe(1);
         |                       ^
       8 |   });

      at Object.toBe (src/math.test.js:7:23)

FAIL src/broken.test.js
  ● Test suite failed to run

    Cannot find module './missing' from 'src/broken.test.js'

    > 1 | const m = require('./missing');
        | ^

      at Resolver._throwModNotFoundError (node_modules/jest-resolve/build/resolver.js:427:11)

PASS src/util.test.js
  ● Console

    console.log
      hello

Test Suites: 2 failed, 1 passed, 3 total
Tests:       1 failed, 1 skipped, 3 passed, 5 total
Snapshots:   0 total
Time:        0.512 s
Ran all test suites.
"#;

const VITEST: &str = r#"
 RUN  v1.6.0 /tmp/proj

 ❯ src/math.test.ts  (2 tests | 1 failed) 5ms
   ❯ src/math.test.ts > math > subtracts
     → expected 2 to be 1 // Object.is equality
 ✓ src/util.test.ts  (3 tests | 1 skipped) 2ms

⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯ Failed Suites 1 ⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯

 FAIL  src/broken.test.ts [ src/broken.test.ts ]
Error: Failed to load url ./missing (resolved id: ./missing) in /tmp/proj/src/broken.test.ts. Does the file exist?
 ❯ loadAndTransform node_modules/vite/dist/node/chunks/dep-k5wXcrSr.js:49888:21

⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯[1/2]⎯

⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯ Failed Tests 1 ⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯

 FAIL  src/math.test.ts > math > subtracts
AssertionError: expected 2 to be 1 // Object.is equality

- Expected
+ Received

- 1
+ 2

 ❯ src/math.test.ts:7:23
      5|   });
      6|   it('subtracts', () => {
      7|     expect(sub(3, 1)).toBe(1);
       |                       ^
      8|   });

⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯[2/2]⎯

 Test Files  2 failed | 1 passed (3)
      Tests  1 failed | 3 passed | 1 skipped (5)
   Start at  10:00:00
   Duration  312ms (transform 20ms, setup 0ms, collect 30ms, tests 7ms, environment 0ms, prepare 90ms)
"#;

const MOCHA: &str = r#"

  math
    ✔ adds
    1) subtracts
    - divides later

  util
    ✔ works


  2 passing (6ms)
  1 pending
  1 failing

  1) math
       subtracts:

      AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:

2 !== 1

      + expected - actual

      -2
      +1

      at Context.<anonymous> (test/math.test.js:9:12)
      at process.processImmediate (node:internal/timers:476:21)



"#;

const GO: &str = "=== RUN   TestAdd
--- PASS: TestAdd (0.00s)
=== RUN   TestSub
    calc_test.go:12: Sub(3, 1) = 2, expected 1
--- FAIL: TestSub (0.00s)
=== RUN   TestTable
=== RUN   TestTable/zero
=== RUN   TestTable/one
--- PASS: TestTable (0.00s)
    --- PASS: TestTable/zero (0.00s)
    --- PASS: TestTable/one (0.00s)
=== RUN   TestSkip
    calc_test.go:20: not on this platform
--- SKIP: TestSkip (0.00s)
FAIL
FAIL\texample.com/calc\t0.002s
ok  \texample.com/calc/util\t0.001s
FAIL
";

const GO_BUILD: &str = "# example.com/calc [example.com/calc.test]
./calc.go:4:9: undefined: c
FAIL\texample.com/calc [build failed]
ok  \texample.com/calc/util\t0.001s
FAIL
";

fn counts(passed: u64, failed: u64, skipped: u64) -> Option<Counts> {
    Some(Counts {
        passed,
        failed,
        skipped,
    })
}

#[test]
fn cargo_sums_every_result_line() {
    let p = parse(Kind::Cargo, CARGO);
    assert_eq!(p.counts, counts(2, 2, 1));
    let names: Vec<&str> = p.failures.iter().map(|f| f.name.as_str()).collect();
    // Named after their test binary: two crates may each have a `tests::bad`.
    assert_eq!(names, ["ct::tests::bad", "more::more_bad"]);
    assert_eq!(p.failures[0].severity, Severity::High);
    assert!(p.failures[0].detail.contains("left: 3"));
    assert!(p.failures.iter().all(|f| f.counted));
}

#[test]
fn cargo_compile_error_is_critical_and_uncounted() {
    let p = parse(Kind::Cargo, CARGO_COMPILE_ERROR);
    assert_eq!(p.counts, None);
    assert_eq!(p.failures.len(), 1);
    let f = &p.failures[0];
    assert_eq!(f.severity, Severity::Critical);
    assert!(!f.counted);
    assert!(f.name.starts_with("error[E0425]: cannot find value `c`"));
    assert!(f.detail.contains("src/lib.rs:1:41"));
}

#[test]
fn unittest_counts_failures_errors_and_skips() {
    let p = parse(Kind::Unittest, UNITTEST);
    assert_eq!(p.counts, counts(1, 3, 1));
    let got: Vec<(&str, Severity)> = p
        .failures
        .iter()
        .map(|f| (f.name.as_str(), f.severity))
        .collect();
    assert_eq!(
        got,
        [
            (
                "ERROR: test_broken (unittest.loader._FailedTest.test_broken)",
                Severity::Critical
            ),
            ("ERROR: test_err (test_skip.S.test_err)", Severity::High),
            ("FAIL: test_b (test_calc.T.test_b)", Severity::High),
        ]
    );
    assert!(p.failures[2].detail.ends_with("AssertionError: 3 != 4"));
    assert_eq!(parse(Kind::Unittest, UNITTEST_OK).counts, counts(1, 0, 2));
}

#[test]
fn pytest_final_summary_and_failure_blocks() {
    let p = parse(Kind::Pytest, PYTEST);
    assert_eq!(p.counts, counts(2, 1, 1));
    assert_eq!(p.failures.len(), 1);
    assert_eq!(p.failures[0].name, "test_sub");
    assert_eq!(p.failures[0].severity, Severity::High);
    assert!(p.failures[0].detail.contains("E   assert 2 == 3"));
    assert!(!p.failures[0].detail.contains("DeprecationWarning"));
    assert_eq!(
        p.warnings,
        [
            "/tmp/proj/calc.py:9: DeprecationWarning: div() is deprecated, use truediv()",
            "warnings.warn(\"div() is deprecated, use truediv()\", DeprecationWarning)"
        ]
    );

    let c = parse(Kind::Pytest, PYTEST_COLLECTION);
    assert_eq!(c.counts, counts(0, 1, 0));
    assert_eq!(c.failures[0].name, "ERROR collecting tests/test_broken.py");
    assert_eq!(c.failures[0].severity, Severity::Critical);
}

#[test]
fn jest_tests_line_bullets_and_suites_that_did_not_run() {
    let p = parse(Kind::Jest, JEST);
    assert_eq!(p.counts, counts(3, 1, 1));
    let got: Vec<(&str, Severity, bool)> = p
        .failures
        .iter()
        .map(|f| (f.name.as_str(), f.severity, f.counted))
        .collect();
    assert_eq!(
        got,
        [
            ("math › subtracts", Severity::High, true),
            (
                "src/broken.test.js: Test suite failed to run",
                Severity::Critical,
                false
            ),
        ]
    );
    assert!(p.failures[0].detail.contains("Received: 2"));
}

#[test]
fn vitest_tests_line_and_failed_sections() {
    let p = parse(Kind::Vitest, VITEST);
    assert_eq!(p.counts, counts(3, 1, 1));
    let got: Vec<(&str, Severity, bool)> = p
        .failures
        .iter()
        .map(|f| (f.name.as_str(), f.severity, f.counted))
        .collect();
    assert_eq!(
        got,
        [
            (
                "src/broken.test.ts [ src/broken.test.ts ]",
                Severity::Critical,
                false
            ),
            ("src/math.test.ts > math > subtracts", Severity::High, true),
        ]
    );
    assert!(
        p.failures[1]
            .detail
            .starts_with("AssertionError: expected 2 to be 1")
    );
}

#[test]
fn mocha_passing_failing_pending() {
    let p = parse(Kind::Mocha, MOCHA);
    assert_eq!(p.counts, counts(2, 1, 1));
    assert_eq!(p.failures.len(), 1);
    assert_eq!(p.failures[0].name, "math subtracts");
    assert_eq!(p.failures[0].severity, Severity::High);
    assert!(p.failures[0].detail.contains("2 !== 1"));
}

#[test]
fn go_counts_verbose_results_and_build_failures() {
    let p = parse(Kind::Go, GO);
    assert_eq!(p.counts, counts(4, 1, 1));
    assert_eq!(p.failures.len(), 1);
    assert_eq!(p.failures[0].name, "TestSub");
    assert_eq!(
        p.failures[0].detail,
        "calc_test.go:12: Sub(3, 1) = 2, expected 1"
    );
    assert_eq!(p.failures[0].severity, Severity::High);

    let b = parse(Kind::Go, GO_BUILD);
    assert_eq!(b.counts, None);
    assert_eq!(b.failures.len(), 1);
    assert_eq!(b.failures[0].name, "build failed: example.com/calc");
    assert_eq!(b.failures[0].severity, Severity::Critical);
    assert!(!b.failures[0].counted);
}

#[test]
fn unknown_runner_output_is_tried_against_every_format() {
    // `npm test` running jest, with colour codes and CRLF line ends.
    let coloured = JEST
        .replace('\n', "\r\n")
        .replace("Tests:", "\x1b[1mTests:\x1b[22m");
    let p = parse(Kind::NpmScript, &coloured);
    assert_eq!(p.counts, counts(3, 1, 1));
    assert_eq!(parse(Kind::Custom, UNITTEST).counts, counts(1, 3, 1));
    assert_eq!(
        parse(Kind::Custom, "make: *** [test] Error 2\n").counts,
        None
    );
}

#[test]
fn severity_patterns() {
    for (text, want) in [
        ("SyntaxError: Unexpected token '}'", Severity::Critical),
        ("Error: Cannot find module './db'", Severity::Critical),
        (
            "ReferenceError: fetchUser is not defined",
            Severity::Critical,
        ),
        (
            "TypeError: Cannot read properties of undefined (reading 'id')",
            Severity::Critical,
        ),
        ("error[E0308]: mismatched types", Severity::Critical),
        (
            "ModuleNotFoundError: No module named 'requests'",
            Severity::Critical,
        ),
        ("AssertionError: 3 != 4", Severity::High),
        ("expect(received).toEqual(expected)", Severity::High),
        (
            "assertion `left == right` failed\n  left: 1\n right: 2",
            Severity::High,
        ),
        (
            "thrown: \"Exceeded timeout of 5000 ms for a test.\"\n\n  > 3 | expect(x).toBe(1)",
            Severity::Medium,
        ),
        (
            "Error: Timeout of 2000ms exceeded. For async tests and hooks, ensure \"done()\" is called",
            Severity::Medium,
        ),
        ("UnhandledPromiseRejection: boom", Severity::Medium),
        ("DeprecationWarning: the old API", Severity::Low),
        ("ValueError: bad value", Severity::High),
    ] {
        assert_eq!(classify(text), want, "{text}");
    }
}

/// Captured by `testdata/capture.sh` from the real runners (see its header for versions).
fn data(name: &str) -> &'static str {
    match name {
        "node-spec.txt" => include_str!("testdata/node-spec.txt"),
        "node-tap.txt" => include_str!("testdata/node-tap.txt"),
        "node-junit.xml" => include_str!("testdata/node-junit.xml"),
        "vitest.txt" => include_str!("testdata/vitest.txt"),
        "vitest-junit.xml" => include_str!("testdata/vitest-junit.xml"),
        "mocha.txt" => include_str!("testdata/mocha.txt"),
        "mocha-xunit.xml" => include_str!("testdata/mocha-xunit.xml"),
        "mocha-load-error.txt" => include_str!("testdata/mocha-load-error.txt"),
        "cargo-workspace.txt" => include_str!("testdata/cargo-workspace.txt"),
        "cargo-compile-error.txt" => include_str!("testdata/cargo-compile-error.txt"),
        "nextest.txt" => include_str!("testdata/nextest.txt"),
        "nextest-junit.xml" => include_str!("testdata/nextest-junit.xml"),
        "nextest-compile-error.txt" => include_str!("testdata/nextest-compile-error.txt"),
        _ => panic!("no capture {name}"),
    }
}

fn names(p: &Parsed) -> Vec<&str> {
    p.failures.iter().map(|f| f.name.as_str()).collect()
}

/// Node 20's `spec` reporter (as the tester asks for it) and its default `tap` one (what a
/// configured `npm test` prints): `ℹ`/`#` summary lines, failures named by their suites, a
/// suite that failed for its subtests and a `todo` not taken for failures.
#[test]
fn node_test_summary_and_failures_from_spec_and_tap() {
    for (capture, kind) in [
        ("node-spec.txt", Kind::NodeTest),
        ("node-tap.txt", Kind::NodeTest),
        // `npm test` of an unknown runner: tried against every format.
        ("node-tap.txt", Kind::NpmScript),
        ("node-spec.txt", Kind::Custom),
    ] {
        let p = parse(kind, data(capture));
        // tests 8: pass 3, fail 3, skipped 1, todo 1.
        assert_eq!(p.counts, counts(3, 3, 2), "{capture} as {kind:?}");
        assert_eq!(
            names(&p),
            [
                "test/broken.test.js",
                "subtracts wrongly",
                "math > divides wrongly"
            ],
            "{capture} as {kind:?}"
        );
        assert!(
            p.failures[1].detail.contains("2 !== 1"),
            "{capture}: {}",
            p.failures[1].detail
        );
        assert_eq!(p.failures[2].severity, Severity::High, "{capture}");
    }
    // Two runs of the runner in one script add up.
    let twice = format!("{}\n{}", data("node-tap.txt"), data("node-tap.txt"));
    assert_eq!(parse(Kind::NodeTest, &twice).counts, counts(6, 6, 4));
}

#[test]
fn node_test_junit_report_names_failures_by_suite() {
    let report = Report::JUnit(data("node-junit.xml").into());
    let (p, source) = parse_run(Kind::NodeTest, data("node-spec.txt"), Some(&report));
    assert_eq!(source, Source::JUnit);
    assert_eq!(p.counts, counts(3, 3, 2));
    // The file that did not load is named by its absolute path in the report (the tester
    // shortens it, see `relative_name`).
    assert_eq!(
        names(&p),
        [
            "/tmp/tlv4-capture/node/test/broken.test.js",
            "subtracts wrongly",
            "math > divides wrongly"
        ]
    );
    assert!(
        p.failures[2].detail.contains("q: 4"),
        "{}",
        p.failures[2].detail
    );
}

#[test]
fn vitest_junit_report_and_its_console() {
    let report = Report::JUnit(data("vitest-junit.xml").into());
    let (p, source) = parse_run(Kind::Vitest, data("vitest.txt"), Some(&report));
    assert_eq!(source, Source::JUnit);
    // The file that does not load is a failing case of its own in the report.
    assert_eq!(p.counts, counts(2, 2, 1));
    assert_eq!(
        names(&p),
        ["src/broken.test.js", "src/math.test.js::math > subtracts"]
    );
    assert_eq!(p.failures[0].severity, Severity::Critical);
    assert!(p.failures[1].detail.contains("expected 2 to be 1"));
    // Vitest 4's console still reads, for a command that names its own reporter.
    let c = parse(Kind::Vitest, data("vitest.txt"));
    assert_eq!(c.counts, counts(2, 1, 1));
    assert_eq!(
        names(&c),
        [
            "src/broken.test.js [ src/broken.test.js ]",
            "src/math.test.js > math > subtracts"
        ]
    );
}

#[test]
fn mocha_xunit_report_and_a_file_that_does_not_load() {
    let report = Report::JUnit(data("mocha-xunit.xml").into());
    let (p, source) = parse_run(Kind::Mocha, data("mocha.txt"), Some(&report));
    assert_eq!(source, Source::JUnit);
    assert_eq!(p.counts, counts(2, 2, 1));
    assert_eq!(names(&p), ["math::subtracts", "math nested::multiplies"]);
    assert!(p.failures[0].detail.contains("2 !== 1"));
    // A test file that does not load: no report, no count, the error named.
    let (e, source) = parse_run(Kind::Mocha, data("mocha-load-error.txt"), None);
    assert_eq!((e.counts, source), (None, Source::Console));
    assert_eq!(
        names(&e),
        ["Exception during run: Error: Cannot find module './nope'"]
    );
    assert_eq!(e.failures[0].severity, Severity::Critical);
    assert!(!e.failures[0].counted);
    assert!(e.failures[0].detail.contains("test/missing.test.js"));
}

/// A workspace of two crates: the unit tests of each, an integration test and the doc
/// tests are five `test result:` lines, summed; the failures of three binaries are named.
#[test]
fn cargo_workspace_sums_every_binary_and_the_doc_tests() {
    let p = parse(Kind::Cargo, data("cargo-workspace.txt"));
    assert_eq!(p.counts, counts(4, 3, 1));
    assert_eq!(
        names(&p),
        [
            "alpha::tests::subtracts",
            "more::more_bad",
            "alpha/src/lib.rs - sub (line 12)"
        ]
    );
    assert!(
        p.failures
            .iter()
            .all(|f| f.counted && f.severity == Severity::High)
    );
    assert!(p.failures[1].detail.contains("twice(3) is not 7"));
    assert!(p.failures[2].detail.contains("left: 2"));
}

/// A compile error: no test ran, no count, the compiler's error as the failure.
#[test]
fn cargo_and_nextest_compile_errors_are_failures_without_counts() {
    for capture in ["cargo-compile-error.txt", "nextest-compile-error.txt"] {
        let p = parse(Kind::Cargo, data(capture));
        assert_eq!(p.counts, None, "{capture}");
        assert_eq!(
            names(&p),
            ["error[E0425]: cannot find value `y` in this scope"]
        );
        let f = &p.failures[0];
        assert_eq!((f.severity, f.counted), (Severity::Critical, false));
        assert!(f.detail.contains("--> beta/src/lib.rs:2:9"), "{}", f.detail);
    }
}

/// nextest's JUnit report and the doc tests `cargo test --doc` ran after it: both counted,
/// and the tests nextest skipped, which its report leaves out, from its `Summary` line.
#[test]
fn nextest_junit_report_with_the_doc_tests() {
    let report = Report::JUnit(data("nextest-junit.xml").into());
    let (p, source) = parse_run(Kind::Cargo, data("nextest.txt"), Some(&report));
    assert_eq!(source, Source::JUnit);
    // nextest: 3 passed, 2 failed, 1 skipped; doc tests: 1 passed, 1 failed.
    assert_eq!(p.counts, counts(4, 3, 1));
    let want = [
        "alpha::tests::subtracts",
        "beta::more::more_bad",
        "alpha/src/lib.rs - sub (line 12)",
    ];
    assert_eq!(names(&p), want);
    assert!(p.failures[1].detail.contains("twice(3) is not 7"));
    // Without the report: the `Summary` line and the `FAIL` lines, named the same.
    let c = parse(Kind::Cargo, data("nextest.txt"));
    assert_eq!(c.counts, counts(4, 3, 1));
    assert_eq!(names(&c), want);
    assert!(
        c.failures[0].detail.contains("left: 2"),
        "{}",
        c.failures[0].detail
    );
    assert!(!c.failures[0].detail.contains("more_bad"));
}

#[test]
fn nextest_summary_variants() {
    for (line, want) in [
        (
            "     Summary [   0.027s] 5 tests run: 3 passed, 2 failed, 1 skipped",
            counts(3, 2, 1),
        ),
        (
            "     Summary [  12.100s] 7 tests run: 5 passed (1 slow, 1 flaky), 1 failed, 1 timed out, 0 skipped",
            counts(5, 2, 0),
        ),
        (
            "     Summary [   1.000s] 3/9 tests run: 2 passed, 1 failed, 4 skipped",
            counts(2, 1, 4),
        ),
        (
            "     Summary [   0.000s] 0 tests run: 0 passed, 0 skipped",
            counts(0, 0, 0),
        ),
    ] {
        assert_eq!(parse(Kind::Cargo, line).counts, want, "{line}");
    }
}
