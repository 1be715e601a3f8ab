//! Machine-readable test results, preferred over the console text where the runner writes
//! them: JUnit XML (pytest `--junitxml`, Node's and Vitest's `junit` reporters, Mocha's
//! `xunit`, nextest's JUnit profile), the event stream of `go test -json`, and the JSON report
//! of Jest (`--json`, which Vitest's `json` reporter also writes). Each reader gives counts and named failures, or `None` when the
//! input is not what it reads — the caller then falls back to the console parser.

use super::{Counts, Failure, Severity, classify, failure};
use tlv4_core::text::excerpt;

/// Where structured results came from, for the report and the run record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// The console output, read by the framework's text parser.
    Console,
    /// A JUnit XML report.
    JUnit,
    /// `go test -json` events.
    GoJson,
    /// A Jest (or Vitest) JSON report.
    JestJson,
}

impl Source {
    /// The name used in reports and records.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Source::Console => "console output",
            Source::JUnit => "JUnit XML",
            Source::GoJson => "go test -json",
            Source::JestJson => "Jest JSON report",
        }
    }
}

/// How a JUnit report names a test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Naming {
    /// `classname::name` (pytest's module, Vitest's file, Mocha's suites, nextest's binary),
    /// or just `name` where the two are the same (a Vitest file that did not load).
    ClassName,
    /// The enclosing `<testsuite>` names and the test's, joined by ` > `: Node's runner nests
    /// a suite per `describe` and gives every case the same `classname="test"`.
    SuitePath,
}

/// A JUnit XML report: every `<testcase>`; one with `<failure>` or `<error>` failed, one
/// with `<skipped>` was skipped, any other passed. Failures are named as `naming` says.
pub(crate) fn junit(xml: &str, naming: Naming) -> Option<(Counts, Vec<Failure>)> {
    let doc = roxmltree::Document::parse(xml).ok()?;
    let root = doc.root_element();
    if !matches!(root.tag_name().name(), "testsuites" | "testsuite") {
        return None;
    }
    let mut counts = Counts::default();
    let mut failures = Vec::new();
    for case in root
        .descendants()
        .filter(|n| n.is_element() && n.tag_name().name() == "testcase")
    {
        let name = case.attribute("name").unwrap_or("(unnamed)");
        let name = match naming {
            Naming::ClassName => match case.attribute("classname").filter(|c| !c.is_empty()) {
                Some(class) if class != name => format!("{class}::{name}"),
                _ => name.to_owned(),
            },
            Naming::SuitePath => {
                let mut path: Vec<&str> = case
                    .ancestors()
                    .filter(|a| a.is_element() && a.tag_name().name() == "testsuite")
                    .filter_map(|a| a.attribute("name"))
                    .collect();
                path.reverse();
                path.push(name);
                path.join(" > ")
            }
        };
        let child = |tag: &str| {
            case.children()
                .find(|c| c.is_element() && c.tag_name().name() == tag)
        };
        if let Some(bad) = child("failure").or_else(|| child("error")) {
            counts.failed += 1;
            let message = bad.attribute("message").unwrap_or("");
            let text = bad.text().unwrap_or("");
            let mut lines: Vec<&str> = Vec::new();
            if !message.is_empty() && !text.contains(message) {
                lines.extend(message.lines());
            }
            lines.extend(text.lines());
            failures.push(failure(&name, &lines, true));
        } else if child("skipped").is_some() {
            counts.skipped += 1;
        } else {
            counts.passed += 1;
        }
    }
    Some((counts, failures))
}

/// `go test -json`: one JSON event a line (other lines, such as build output on stderr, are
/// console text). Test-level `pass`, `fail` and `skip` are counted (subtests too, as
/// `go test -v` shows them); a failed test's detail is its `output` events; a package that
/// failed with no failing test (a build failure) is an uncounted Critical failure. Also
/// returns the console text the events carry, for the log and for the fallback parser.
pub(crate) fn go_json(output: &str) -> Option<(Counts, Vec<Failure>, String)> {
    let mut counts = Counts::default();
    let mut failures = Vec::new();
    let mut text = String::new();
    let mut seen_event = false;
    // Output of each test (key: package and test), and of each package.
    let mut outputs: std::collections::BTreeMap<(String, String), String> =
        std::collections::BTreeMap::new();
    let mut failed_packages: Vec<String> = Vec::new();
    let mut packages_with_failed_tests: Vec<String> = Vec::new();
    for line in output.lines() {
        let event: serde_json::Value = match serde_json::from_str(line) {
            Ok(v @ serde_json::Value::Object(_)) if v.get("Action").is_some() => v,
            _ => {
                text.push_str(line);
                text.push('\n');
                continue;
            }
        };
        seen_event = true;
        let field = |k: &str| event.get(k).and_then(|v| v.as_str()).unwrap_or("");
        let (action, package, test) = (field("Action"), field("Package"), field("Test"));
        let key = (package.to_owned(), test.to_owned());
        match action {
            "output" | "build-output" => {
                let out = field("Output");
                text.push_str(out);
                outputs.entry(key).or_default().push_str(out);
            }
            "pass" if !test.is_empty() => counts.passed += 1,
            "skip" if !test.is_empty() => counts.skipped += 1,
            "fail" if !test.is_empty() => {
                counts.failed += 1;
                packages_with_failed_tests.push(package.to_owned());
                let detail = outputs.get(&key).cloned().unwrap_or_default();
                let lines: Vec<&str> = detail
                    .lines()
                    .filter(|l| {
                        let t = l.trim_start();
                        !t.starts_with("=== ") && !t.starts_with("--- FAIL")
                    })
                    .collect();
                failures.push(failure(test, &lines, true));
            }
            "fail" | "build-fail" => failed_packages.push(package.to_owned()),
            _ => {}
        }
    }
    if !seen_event {
        return None;
    }
    for package in failed_packages {
        if packages_with_failed_tests.contains(&package) {
            continue;
        }
        let detail = outputs
            .get(&(package.clone(), String::new()))
            .cloned()
            .unwrap_or_default();
        let lines: Vec<&str> = detail.lines().collect();
        let mut f = failure(&format!("package {package} failed"), &lines, false);
        if detail.contains("build failed") || detail.contains("setup failed") {
            f.severity = Severity::Critical;
        }
        if !failures.iter().any(|x: &Failure| x.name == f.name) {
            failures.push(f);
        }
    }
    Some((counts, failures, text))
}

/// A Jest JSON report (`jest --json`; Vitest's `json` reporter writes the same shape):
/// `assertionResults` of each test file counted by status; a file that failed without a
/// failing test (it did not load) is an uncounted failure with the file's message.
pub(crate) fn jest_json(json: &str) -> Option<(Counts, Vec<Failure>)> {
    let v: serde_json::Value = serde_json::from_str(json).ok()?;
    let files = v.get("testResults")?.as_array()?;
    let mut counts = Counts::default();
    let mut failures = Vec::new();
    for file in files {
        let path = file.get("name").and_then(|n| n.as_str()).unwrap_or("");
        let mut failed_here = 0;
        for a in file
            .get("assertionResults")
            .and_then(|a| a.as_array())
            .into_iter()
            .flatten()
        {
            let status = a.get("status").and_then(|s| s.as_str()).unwrap_or("");
            match status {
                "passed" => counts.passed += 1,
                "failed" => {
                    counts.failed += 1;
                    failed_here += 1;
                    let name = a
                        .get("fullName")
                        .and_then(|n| n.as_str())
                        .or_else(|| a.get("title").and_then(|n| n.as_str()))
                        .unwrap_or("(unnamed)");
                    let messages: Vec<&str> = a
                        .get("failureMessages")
                        .and_then(|m| m.as_array())
                        .into_iter()
                        .flatten()
                        .filter_map(|m| m.as_str())
                        .collect();
                    let joined = messages.join("\n");
                    let lines: Vec<&str> = joined.lines().collect();
                    failures.push(failure(name, &lines, true));
                }
                _ => counts.skipped += 1,
            }
        }
        let message = file.get("message").and_then(|m| m.as_str()).unwrap_or("");
        let status = file.get("status").and_then(|s| s.as_str()).unwrap_or("");
        if status == "failed" && failed_here == 0 {
            let lines: Vec<&str> = message.lines().collect();
            let name = format!("test file failed to run: {}", excerpt(path, 149));
            let mut f = failure(&name, &lines, false);
            f.severity = classify(message).min(Severity::High);
            failures.push(f);
        }
    }
    Some((counts, failures))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape pytest 8 writes with `--junitxml` (xunit2): a failure, an error in setup, a
    /// skip, an xfail (a skip too) and a pass, with escaped text.
    const PYTEST_JUNIT: &str = r#"<?xml version="1.0" encoding="utf-8"?>
<testsuites name="pytest tests"><testsuite name="pytest" errors="1" failures="1" skipped="2" tests="5" time="0.05" timestamp="2026-12-01T12:00:00" hostname="h">
<testcase classname="tests.test_calc" name="test_add" time="0.001" />
<testcase classname="tests.test_calc" name="test_wrong" time="0.001"><failure message="assert 3 == 4&#10; +  where 3 = add(1, 2)">def test_wrong():
&gt;       assert add(1, 2) == 4
E       assert 3 == 4
E        +  where 3 = add(1, 2)

tests/test_calc.py:9: AssertionError</failure></testcase>
<testcase classname="tests.test_calc" name="test_db" time="0.000"><error message="failed on setup with &quot;NameError: name 'conn' is not defined&quot;">@pytest.fixture
def db():
&gt;       return conn
E       NameError: name 'conn' is not defined</error></testcase>
<testcase classname="tests.test_calc" name="test_later" time="0.000"><skipped type="pytest.skip" message="not yet">tests/test_calc.py:20: not yet</skipped></testcase>
<testcase classname="tests.test_calc" name="test_known" time="0.000"><skipped type="pytest.xfail" message="known bug" /></testcase>
</testsuite></testsuites>"#;

    #[test]
    fn junit_counts_cases_and_names_failures() {
        let (counts, failures) = junit(PYTEST_JUNIT, Naming::ClassName).unwrap();
        assert_eq!(
            counts,
            Counts {
                passed: 1,
                failed: 2,
                skipped: 2
            }
        );
        let names: Vec<&str> = failures.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            ["tests.test_calc::test_wrong", "tests.test_calc::test_db"]
        );
        assert_eq!(failures[0].severity, Severity::High);
        assert!(
            failures[0].detail.contains("E       assert 3 == 4"),
            "{}",
            failures[0].detail
        );
        assert!(
            failures[0].detail.contains("> "),
            "entities decoded: {}",
            failures[0].detail
        );
        assert_eq!(failures[1].severity, Severity::Critical);
        assert!(
            failures[1]
                .detail
                .contains("NameError: name 'conn' is not defined")
        );
        assert!(failures.iter().all(|f| f.counted));
    }

    #[test]
    fn junit_of_no_case_is_zero_tests_and_other_xml_is_not_junit() {
        let empty = r#"<?xml version="1.0"?><testsuites><testsuite name="pytest" tests="0" errors="0" failures="0" skipped="0"></testsuite></testsuites>"#;
        assert_eq!(
            junit(empty, Naming::ClassName),
            Some((Counts::default(), Vec::new()))
        );
        // A bare <testsuite> root (other runners), with CDATA.
        let bare = "<testsuite><testcase name=\"t\"><failure><![CDATA[x < y]]></failure></testcase></testsuite>";
        let (c, f) = junit(bare, Naming::ClassName).unwrap();
        assert_eq!(
            (c.failed, f[0].name.as_str(), f[0].detail.as_str()),
            (1, "t", "x < y")
        );
        assert_eq!(junit("<html><body/></html>", Naming::ClassName), None);
        assert_eq!(junit("not xml at all <", Naming::ClassName), None);
    }

    #[test]
    fn go_json_events_are_counted_with_their_output() {
        let events = [
            r#"{"Action":"start","Package":"example.com/calc"}"#,
            r#"{"Action":"run","Package":"example.com/calc","Test":"TestAdd"}"#,
            r#"{"Action":"output","Package":"example.com/calc","Test":"TestAdd","Output":"=== RUN   TestAdd\n"}"#,
            r#"{"Action":"pass","Package":"example.com/calc","Test":"TestAdd","Elapsed":0}"#,
            r#"{"Action":"run","Package":"example.com/calc","Test":"TestWrong"}"#,
            r#"{"Action":"output","Package":"example.com/calc","Test":"TestWrong","Output":"=== RUN   TestWrong\n"}"#,
            r#"{"Action":"output","Package":"example.com/calc","Test":"TestWrong","Output":"    calc_test.go:12: Add(1, 2) = 3; expected 4\n"}"#,
            r#"{"Action":"output","Package":"example.com/calc","Test":"TestWrong","Output":"--- FAIL: TestWrong (0.00s)\n"}"#,
            r#"{"Action":"fail","Package":"example.com/calc","Test":"TestWrong","Elapsed":0}"#,
            r#"{"Action":"skip","Package":"example.com/calc","Test":"TestLater","Elapsed":0}"#,
            r#"{"Action":"output","Package":"example.com/calc","Output":"FAIL\n"}"#,
            r#"{"Action":"fail","Package":"example.com/calc","Elapsed":0.01}"#,
            // A package that does not build: stderr text, then its failure.
            "# example.com/broken",
            "broken/b.go:3:2: undefined: nope",
            r#"{"Action":"output","Package":"example.com/broken","Output":"FAIL\texample.com/broken [build failed]\n"}"#,
            r#"{"Action":"fail","Package":"example.com/broken","Elapsed":0}"#,
        ]
        .join("\n");
        let (counts, failures, text) = go_json(&events).unwrap();
        assert_eq!(
            counts,
            Counts {
                passed: 1,
                failed: 1,
                skipped: 1
            }
        );
        assert_eq!(failures.len(), 2, "{failures:?}");
        assert_eq!(failures[0].name, "TestWrong");
        assert_eq!(
            failures[0].detail,
            "calc_test.go:12: Add(1, 2) = 3; expected 4"
        );
        assert!(failures[0].counted);
        assert_eq!(failures[1].name, "package example.com/broken failed");
        assert_eq!(failures[1].severity, Severity::Critical);
        assert!(!failures[1].counted);
        assert!(text.contains("undefined: nope") && text.contains("--- FAIL: TestWrong"));
        assert_eq!(go_json("ok  \texample.com/calc\t0.01s\n"), None);
    }

    #[test]
    fn jest_json_report_is_counted_and_a_broken_file_is_a_failure() {
        let report = r#"{
  "numFailedTests": 1, "numPassedTests": 1, "numPendingTests": 1, "numTotalTests": 3,
  "testResults": [
    {"name": "/w/src/sum.test.js", "status": "failed", "message": "",
     "assertionResults": [
       {"ancestorTitles": ["sum"], "fullName": "sum adds", "title": "adds", "status": "passed", "failureMessages": []},
       {"ancestorTitles": ["sum"], "fullName": "sum is wrong", "title": "is wrong", "status": "failed",
        "failureMessages": ["Error: expect(received).toBe(expected)\n\nExpected: 4\nReceived: 3\n    at Object.<anonymous> (/w/src/sum.test.js:9:20)"]},
       {"fullName": "sum later", "title": "later", "status": "pending", "failureMessages": []}
     ]},
    {"name": "/w/src/broken.test.js", "status": "failed", "assertionResults": [],
     "message": "Test suite failed to run\n\n    SyntaxError: Unexpected token (3:4)"}
  ]
}"#;
        let (counts, failures) = jest_json(report).unwrap();
        assert_eq!(
            counts,
            Counts {
                passed: 1,
                failed: 1,
                skipped: 1
            }
        );
        assert_eq!(failures[0].name, "sum is wrong");
        assert_eq!(failures[0].severity, Severity::High);
        assert!(failures[0].detail.contains("Received: 3"));
        assert_eq!(
            failures[1].name,
            "test file failed to run: /w/src/broken.test.js"
        );
        assert_eq!(failures[1].severity, Severity::Critical);
        assert!(!failures[1].counted);
        assert_eq!(jest_json("{\"other\": 1}"), None);
    }
}
