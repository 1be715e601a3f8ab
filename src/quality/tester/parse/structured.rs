//! Machine-readable test results, preferred over the console text where the runner writes
//! them: JUnit XML (pytest `--junitxml`, and any runner with a JUnit reporter), the event
//! stream of `go test -json`, and the JSON report of Jest (`--json`, which Vitest's `json`
//! reporter also writes). Each reader gives counts and named failures, or `None` when the
//! input is not what it reads — the caller then falls back to the console parser.

use super::{Counts, Failure, Severity, classify, failure, one_line};

/// Where structured results came from, for the report and the run record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
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
    pub fn name(self) -> &'static str {
        match self {
            Source::Console => "console output",
            Source::JUnit => "JUnit XML",
            Source::GoJson => "go test -json",
            Source::JestJson => "Jest JSON report",
        }
    }
}

/// A JUnit XML report: every `<testcase>`; one with `<failure>` or `<error>` failed, one
/// with `<skipped>` was skipped, any other passed. A failure's name is `classname::name`.
pub fn junit(xml: &str) -> Option<(Counts, Vec<Failure>)> {
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
        let name = match case.attribute("classname").filter(|c| !c.is_empty()) {
            Some(class) => format!("{class}::{name}"),
            None => name.to_owned(),
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
pub fn go_json(output: &str) -> Option<(Counts, Vec<Failure>, String)> {
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
pub fn jest_json(json: &str) -> Option<(Counts, Vec<Failure>)> {
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
            let name = format!("test file failed to run: {}", one_line(path, 150));
            let mut f = failure(&name, &lines, false);
            f.severity = classify(message).min(Severity::High);
            failures.push(f);
        }
    }
    Some((counts, failures))
}
