//! Reading test output: pass, fail and skip counts for each framework, the failures with
//! their output, and their severity by the reference's patterns.
//!
//! Parsers are lenient: output they do not recognise gives no counts (`None`), never an
//! error. A failure the framework does not count (a compile error, a suite that failed to
//! load, a build failure) is marked `counted: false` so the caller can add it to the failed
//! count; otherwise a broken build would look like a suite with nothing failing.

use std::sync::LazyLock;

use regex::Regex;

use super::detect::Kind;
use tlv4_core::text::excerpt;

pub(super) mod structured;

pub(super) use structured::Source;

/// How bad a failure is, most severe first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Severity {
    /// The code does not load: syntax errors, missing modules, undefined names, Rust
    /// `error[E…]`.
    Critical,
    /// A test's expectation is not met: assertions, expected/received.
    High,
    /// Timeouts and async errors.
    Medium,
    /// Warnings and deprecations.
    Low,
}

impl Severity {
    /// The name used in reports.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Severity::Critical => "Critical",
            Severity::High => "High",
            Severity::Medium => "Medium",
            Severity::Low => "Low",
        }
    }
}

/// One failing test, or one error that kept tests from running.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Failure {
    /// The test (or what failed).
    pub name: String,
    /// How bad it is.
    pub severity: Severity,
    /// Its output, trimmed.
    pub detail: String,
    /// Whether the framework's counts include it.
    pub counted: bool,
}

/// Counts from a framework's summary.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Counts {
    /// Tests that passed.
    pub passed: u64,
    /// Tests that failed or errored.
    pub failed: u64,
    /// Tests skipped, ignored, pending or expected to fail.
    pub skipped: u64,
}

/// What one run's output says.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Parsed {
    /// The counts, if a summary was found.
    pub counts: Option<Counts>,
    /// The failures, in output order.
    pub failures: Vec<Failure>,
    /// Warning and deprecation lines (Low), at most [`MAX_WARNINGS`].
    pub warnings: Vec<String>,
}

/// How many warning lines are kept.
pub(super) const MAX_WARNINGS: usize = 10;
/// How much of a failure's output is kept.
const DETAIL_LINES: usize = 60;
const DETAIL_BYTES: usize = 3000;

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("a valid pattern")
}

/// Reads `output` as `kind` prints it; when that finds no counts, tries the other formats
/// (a custom command or `npm test` may run any of them).
pub(super) fn parse(kind: Kind, output: &str) -> Parsed {
    let text = normalize(output);
    let order = [
        Kind::Cargo,
        Kind::Pytest,
        Kind::Unittest,
        Kind::Jest,
        Kind::Vitest,
        Kind::Mocha,
        Kind::Go,
        Kind::NodeTest,
    ];
    let (mut counts, mut failures) = parse_as(kind, &text);
    if counts.is_none() {
        for other in order.iter().filter(|k| **k != kind) {
            let (c, f) = parse_as(*other, &text);
            if c.is_some() {
                counts = c;
                if !f.is_empty() || failures.is_empty() {
                    failures = f;
                }
                break;
            }
        }
    }
    Parsed {
        counts,
        failures,
        warnings: warnings(&text),
    }
}

/// A machine-readable report a run wrote beside its console output.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Report {
    /// JUnit XML.
    JUnit(String),
    /// A Jest (or Vitest) JSON report.
    JestJson(String),
}

/// Reads one run: its machine-readable results where there are some that read (a `report`
/// it wrote, or `go test -json` events in its output), else its console output
/// ([`parse`]). Warnings always come from the console text.
///
/// Cargo's report is nextest's JUnit XML, which leaves out two things the console has: the
/// doc tests (`cargo test --doc` runs them after nextest, and prints libtest's summaries)
/// and the skipped tests (only nextest's `Summary` line counts them). Both are added.
pub(super) fn parse_run(kind: Kind, output: &str, report: Option<&Report>) -> (Parsed, Source) {
    let text = normalize(output);
    let naming = if kind == Kind::NodeTest {
        structured::Naming::SuitePath
    } else {
        structured::Naming::ClassName
    };
    let read = match report {
        Some(Report::JUnit(xml)) if kind == Kind::Cargo => {
            structured::junit(xml, naming).map(|(mut counts, mut failures)| {
                if let Some(doc) = libtest_counts(&text) {
                    counts.passed += doc.passed;
                    counts.failed += doc.failed;
                    counts.skipped += doc.skipped;
                }
                if let Some(summary) = nextest_summary(&text) {
                    counts.skipped = counts.skipped.max(summary.skipped);
                }
                // The console names nextest's failures again, as the report does: once each.
                failures.extend(cargo(&text).1);
                ((counts, dedup(failures)), Source::JUnit, None)
            })
        }
        Some(Report::JUnit(xml)) => {
            structured::junit(xml, naming).map(|r| (r, Source::JUnit, None))
        }
        Some(Report::JestJson(json)) => {
            structured::jest_json(json).map(|r| (r, Source::JestJson, None))
        }
        None if kind == Kind::Go => structured::go_json(&text)
            .map(|(c, f, console)| ((c, f), Source::GoJson, Some(console))),
        None => None,
    };
    match read {
        Some(((counts, failures), source, console)) => {
            let console = console.unwrap_or(text);
            (
                Parsed {
                    counts: Some(counts),
                    failures,
                    warnings: warnings(&console),
                },
                source,
            )
        }
        None => (parse(kind, output), Source::Console),
    }
}

/// Whether the output says no test was found or collected (pytest, unittest, Jest, Vitest,
/// Go, and npm's placeholder `test` script).
pub(super) fn says_no_tests(output: &str) -> bool {
    static NONE: LazyLock<Regex> = LazyLock::new(|| {
        re(
            r"(?m)collected 0 items|no tests ran|NO TESTS RAN|^Ran 0 tests|No tests found|No test files found|\[no test files\]|Error: no test specified|^error: no tests to run",
        )
    });
    NONE.is_match(&normalize(output))
}

fn parse_as(kind: Kind, text: &str) -> (Option<Counts>, Vec<Failure>) {
    match kind {
        Kind::Cargo => cargo(text),
        Kind::Pytest => pytest(text),
        Kind::Unittest => unittest(text),
        Kind::Jest => jest(text),
        Kind::Vitest => vitest(text),
        Kind::Mocha => mocha(text),
        Kind::Go => go(text),
        Kind::NodeTest => node(text),
        Kind::NpmScript | Kind::Custom => (None, Vec::new()),
    }
}

/// Plain text: no colour codes, `\n` line ends, carriage-return redraws as lines.
pub(super) fn normalize(output: &str) -> String {
    static ANSI: LazyLock<Regex> =
        LazyLock::new(|| re(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07"));
    ANSI.replace_all(output, "")
        .replace("\r\n", "\n")
        .replace('\r', "\n")
}

/// The severity of a failure from its output, by the reference's patterns: Critical, then a
/// timeout named in the first lines, then High, Medium, Low; an unmatched failure is High
/// (a test that fails is at least a wrong expectation).
pub(super) fn classify(text: &str) -> Severity {
    static CRITICAL: LazyLock<Regex> = LazyLock::new(|| {
        re(
            r"SyntaxError|IndentationError|TabError|(?i:cannot find module)|ModuleNotFoundError|ImportError|No module named|is not defined|NameError|ReferenceError|\bundefined\b|error\[E\d+\]|unresolved import|(?i:could not compile)|(?i:build failed)|cannot find (?:value|type|function|struct|crate|macro|trait)|Failed to load url|Cannot find package",
        )
    });
    static TIMEOUT: LazyLock<Regex> = LazyLock::new(|| re(r"(?i)time ?out|timed out|exceeded"));
    static HIGH: LazyLock<Regex> = LazyLock::new(|| {
        re(
            r"(?i)assert|expected|received|\btobe\b|toequal|left == right|panicked at|not equal|mismatch|\bFAIL\b",
        )
    });
    static MEDIUM: LazyLock<Regex> =
        LazyLock::new(|| re(r"(?i)time ?out|timed out|\basync\b|promise|deadline|\bawait\b"));
    static LOW: LazyLock<Regex> = LazyLock::new(|| re(r"(?i)warning|deprecat"));
    let head: String = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .take(5)
        .collect::<Vec<_>>()
        .join("\n");
    if CRITICAL.is_match(text) {
        Severity::Critical
    } else if TIMEOUT.is_match(&head) {
        Severity::Medium
    } else if HIGH.is_match(text) {
        Severity::High
    } else if MEDIUM.is_match(text) {
        Severity::Medium
    } else if LOW.is_match(text) {
        Severity::Low
    } else {
        Severity::High
    }
}

fn failure(name: &str, detail: &[&str], counted: bool) -> Failure {
    let detail = trim_detail(detail);
    let severity = classify(&format!("{name}\n{detail}"));
    Failure {
        name: excerpt(name, 199),
        severity,
        detail,
        counted,
    }
}

fn trim_detail(lines: &[&str]) -> String {
    // Leading and trailing blank lines carry nothing.
    let start = lines
        .iter()
        .position(|l| !l.trim().is_empty())
        .unwrap_or(lines.len());
    let end = lines
        .iter()
        .rposition(|l| !l.trim().is_empty())
        .map_or(start, |i| i + 1);
    let lines = &lines[start..end.max(start)];
    // The indentation every line shares says nothing.
    let indent = lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let mut out = String::new();
    for (i, l) in lines.iter().enumerate() {
        if i >= DETAIL_LINES || out.len() + l.len() > DETAIL_BYTES {
            out.push_str(&format!("[… {} more lines]\n", lines.len() - i));
            break;
        }
        out.push_str(l.get(indent..).unwrap_or(l.trim_start()).trim_end());
        out.push('\n');
    }
    out.trim_end().to_owned()
}

fn num(s: &str) -> u64 {
    s.parse().unwrap_or(0)
}

/// Failures with the same name once (summaries repeat them).
fn dedup(failures: Vec<Failure>) -> Vec<Failure> {
    let mut out: Vec<Failure> = Vec::new();
    for f in failures {
        if !out.iter().any(|o| o.name == f.name) {
            out.push(f);
        }
    }
    out
}

/// `cargo test` and `cargo nextest run`. libtest prints one `test result:` line per test
/// binary and doc-test run: every one is summed; its `---- name stdout ----` blocks are the
/// failures, named after the test binary (`alpha::tests::adds`, the name the `Running` line
/// shows), since two crates may each have a `tests::adds`. nextest prints one `Summary` line
/// for its whole run (added to the doc tests' lines that follow it) and a `FAIL` line per
/// failure, already named `<binary id> <test>`. A compile error (with its `-->` location) is
/// an uncounted Critical failure with the compiler's text.
fn cargo(text: &str) -> (Option<Counts>, Vec<Failure>) {
    static RUNNING: LazyLock<Regex> = LazyLock::new(|| {
        re(r"^\s*(Running \S+ .*?\(.*?([^/\\ ]+?)(?:-[0-9a-f]{16})?(?:\.exe)?\)|Doc-tests \S+)\s*$")
    });
    static BLOCK: LazyLock<Regex> = LazyLock::new(|| re(r"^---- (.+?) stdout ----$"));
    static ERROR: LazyLock<Regex> = LazyLock::new(|| re(r"^error(?:\[E\d+\])?: (.+)$"));
    static SUMMARY_ERROR: LazyLock<Regex> = LazyLock::new(|| {
        re(
            r"^error: (?:could not compile|test failed|\d+ targets? failed|aborting due to|build failed)",
        )
    });
    static FAILED_LINE: LazyLock<Regex> = LazyLock::new(|| re(r"^test (\S+) \.\.\. FAILED$"));

    let mut counts = libtest_counts(text);
    if let Some(n) = nextest_summary(text) {
        let t = counts.get_or_insert_with(Counts::default);
        t.passed += n.passed;
        t.failed += n.failed;
        t.skipped += n.skipped;
    }
    let lines: Vec<&str> = text.lines().collect();
    let mut failures = nextest_failures(&lines);
    // The test binary whose output follows (`None` in doc tests: their names are paths).
    let mut binary: Option<String> = None;
    let named = |binary: &Option<String>, test: &str| match binary {
        Some(b) => format!("{b}::{test}"),
        None => test.to_owned(),
    };
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let Some(c) = RUNNING.captures(line) {
            binary = c.get(2).map(|b| b.as_str().to_owned());
            i += 1;
            continue;
        }
        if let Some(c) = BLOCK.captures(line) {
            let start = i + 1;
            let mut j = start;
            while j < lines.len()
                && !BLOCK.is_match(lines[j])
                && lines[j] != "failures:"
                && !lines[j].starts_with("test result:")
            {
                j += 1;
            }
            failures.push(failure(&named(&binary, &c[1]), &lines[start..j], true));
            i = j;
            continue;
        }
        // A failed test whose output block was not printed.
        if let Some(c) = FAILED_LINE.captures(line) {
            let name = named(&binary, &c[1]);
            let blocks_follow = lines[i..]
                .iter()
                .take_while(|l| !l.starts_with("test result:"))
                .any(|l| *l == format!("---- {} stdout ----", &c[1]));
            if !blocks_follow {
                failures.push(failure(&name, &[], true));
            }
            i += 1;
            continue;
        }
        if ERROR.is_match(line) && !SUMMARY_ERROR.is_match(line) {
            let mut j = i + 1;
            while j < lines.len() && !lines[j].trim().is_empty() {
                j += 1;
            }
            let block = &lines[i..j];
            if block.iter().any(|l| l.trim_start().starts_with("--> ")) {
                let mut f = failure(line, block, false);
                f.severity = Severity::Critical;
                failures.push(f);
            }
            i = j;
            continue;
        }
        i += 1;
    }
    (counts, dedup(failures))
}

/// Every libtest `test result:` line (one per test binary and doc-test run), summed.
fn libtest_counts(text: &str) -> Option<Counts> {
    static RESULT: LazyLock<Regex> =
        LazyLock::new(|| re(r"(?m)^test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored"));
    let mut counts: Option<Counts> = None;
    for c in RESULT.captures_iter(text) {
        let t = counts.get_or_insert_with(Counts::default);
        t.passed += num(&c[1]);
        t.failed += num(&c[2]);
        t.skipped += num(&c[3]);
    }
    counts
}

/// nextest's closing `Summary [ 0.027s] 5 tests run: 3 passed, 2 failed, 1 skipped` (with
/// `(1 flaky)`-style notes, and `3/5 tests run` when it stopped early): passed, skipped, and
/// every other outcome (failed, timed out, exec failed, …) as failed.
fn nextest_summary(text: &str) -> Option<Counts> {
    static SUMMARY: LazyLock<Regex> =
        LazyLock::new(|| re(r"(?m)^\s*Summary \[\s*[\d.]+s\] \d+(?:/\d+)? tests? run: (.+?)\s*$"));
    static NOTE: LazyLock<Regex> = LazyLock::new(|| re(r"\([^)]*\)"));
    static PAIR: LazyLock<Regex> = LazyLock::new(|| re(r"^(\d+) ([a-z][a-z -]*)$"));
    let c = SUMMARY.captures_iter(text).last()?;
    let mut t = Counts::default();
    for part in NOTE.replace_all(&c[1], "").split(',') {
        let Some(p) = PAIR.captures(part.trim()) else {
            continue;
        };
        let n = num(&p[1]);
        match p[2].trim() {
            "passed" => t.passed += n,
            "skipped" => t.skipped += n,
            _ => t.failed += n,
        }
    }
    Some(t)
}

/// nextest's failure lines (`FAIL [ 0.009s] (1/5) alpha tests::subtracts`, also `TIMEOUT`,
/// `SIGSEGV`, …) with the output it prints under them, named `alpha::tests::subtracts` as its
/// JUnit report names them. The repeat of each after the `Summary` line adds nothing.
fn nextest_failures(lines: &[&str]) -> Vec<Failure> {
    static STATUS: LazyLock<Regex> = LazyLock::new(|| {
        re(
            r"^\s+(PASS|FAIL|TIMEOUT|LEAK|LEAK-FAIL|ABORT|SIG[A-Z]+|FLAKY|TRY \d+ \w+|SKIP) \[\s*[\d.]+s\] (?:\(\s*\d+/\d+\) )?(\S+) (.+?)\s*$",
        )
    });
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let Some(c) = STATUS.captures(l) else {
            continue;
        };
        if matches!(&c[1], "PASS" | "FLAKY" | "SKIP" | "LEAK") || c[1].starts_with("TRY ") {
            continue;
        }
        let detail: Vec<&str> = lines[i + 1..]
            .iter()
            .take_while(|x| {
                !STATUS.is_match(x)
                    && !x.starts_with('─')
                    && !x.trim_start().starts_with("Summary [")
            })
            .copied()
            .collect();
        let mut f = failure(&format!("{}::{}", &c[2], &c[3]), &detail, true);
        if &c[1] == "TIMEOUT" {
            f.severity = Severity::Medium;
        }
        out.push(f);
    }
    out
}

/// pytest: the final `N passed, M failed, K errors in Ts` line; the `FAILURES` and `ERRORS`
/// sections' `___ name ___` blocks, else the short summary's `FAILED`/`ERROR` lines.
fn pytest(text: &str) -> (Option<Counts>, Vec<Failure>) {
    static SUMMARY: LazyLock<Regex> =
        LazyLock::new(|| re(r"(?m)^[= ]*((?:\d+ [a-z]+,? ?)+|no tests ran)\s+in \d+(?:\.\d+)?s\b"));
    static PAIR: LazyLock<Regex> = LazyLock::new(|| re(r"(\d+) ([a-z]+)"));
    static SECTION: LazyLock<Regex> = LazyLock::new(|| re(r"^={3,} ?(.*?) ?={3,}$"));
    static HEADER: LazyLock<Regex> = LazyLock::new(|| re(r"^_{3,} (.+?) _{3,}$"));
    static SHORT: LazyLock<Regex> = LazyLock::new(|| re(r"^(FAILED|ERROR) (\S+)(?: - (.*))?$"));

    let counts = SUMMARY.captures_iter(text).last().map(|c| {
        let mut t = Counts::default();
        for p in PAIR.captures_iter(&c[1]) {
            let n = num(&p[1]);
            match &p[2] {
                "passed" | "xpassed" => t.passed += n,
                "failed" | "error" | "errors" => t.failed += n,
                "skipped" | "xfailed" | "deselected" => t.skipped += n,
                _ => {}
            }
        }
        t
    });
    let lines: Vec<&str> = text.lines().collect();
    let mut failures = Vec::new();
    let mut in_section = false;
    let mut i = 0;
    while i < lines.len() {
        if let Some(c) = SECTION.captures(lines[i]) {
            in_section = matches!(&c[1], "FAILURES" | "ERRORS");
            i += 1;
            continue;
        }
        if in_section && let Some(c) = HEADER.captures(lines[i]) {
            let start = i + 1;
            let mut j = start;
            while j < lines.len() && !HEADER.is_match(lines[j]) && !SECTION.is_match(lines[j]) {
                j += 1;
            }
            failures.push(failure(&c[1], &lines[start..j], true));
            i = j;
            continue;
        }
        i += 1;
    }
    if failures.is_empty() {
        for c in lines.iter().filter_map(|l| SHORT.captures(l)) {
            let msg = c.get(3).map_or("", |m| m.as_str());
            failures.push(failure(&c[2], &[msg], true));
        }
    }
    (counts, dedup(failures))
}

/// unittest: `Ran N tests` and the `OK` / `FAILED (failures=M, errors=E)` line after it;
/// the `FAIL:` / `ERROR:` blocks between separator lines.
fn unittest(text: &str) -> (Option<Counts>, Vec<Failure>) {
    static RAN: LazyLock<Regex> = LazyLock::new(|| re(r"^Ran (\d+) tests? in "));
    static STATUS: LazyLock<Regex> =
        LazyLock::new(|| re(r"^(OK|FAILED|NO TESTS RAN)(?: \((.*)\))?\s*$"));
    static PAIR: LazyLock<Regex> = LazyLock::new(|| re(r"([a-z ]+)=(\d+)"));
    static HEAD: LazyLock<Regex> = LazyLock::new(|| re(r"^(FAIL|ERROR|UNEXPECTED SUCCESS): (.+)$"));
    let is_eq = |l: &str| l.len() >= 20 && l.bytes().all(|b| b == b'=');
    let is_dash = |l: &str| l.len() >= 20 && l.bytes().all(|b| b == b'-');

    let lines: Vec<&str> = text.lines().collect();
    let mut counts = None;
    for (i, l) in lines.iter().enumerate() {
        let Some(c) = RAN.captures(l) else { continue };
        let ran = num(&c[1]);
        let status = lines[i + 1..]
            .iter()
            .find(|l| !l.trim().is_empty())
            .and_then(|l| STATUS.captures(l.trim()));
        let mut t = Counts::default();
        let mut not_passed = 0;
        if let Some(s) = &status {
            for p in s.get(2).map_or("", |m| m.as_str()).split(',') {
                let Some(p) = PAIR.captures(p.trim()) else {
                    continue;
                };
                let n = num(&p[2]);
                match p[1].trim() {
                    "failures" | "errors" | "unexpected successes" => t.failed += n,
                    "skipped" | "expected failures" => t.skipped += n,
                    _ => continue,
                }
                not_passed += n;
            }
        }
        t.passed = ran.saturating_sub(not_passed);
        // Several runs (several commands in one script) add up.
        let total = counts.get_or_insert_with(Counts::default);
        total.passed += t.passed;
        total.failed += t.failed;
        total.skipped += t.skipped;
    }
    let mut failures = Vec::new();
    let mut i = 0;
    while i + 1 < lines.len() {
        if is_eq(lines[i])
            && let Some(c) = HEAD.captures(lines[i + 1])
        {
            let mut start = i + 2;
            if start < lines.len() && is_dash(lines[start]) {
                start += 1;
            }
            let mut j = start;
            while j < lines.len() && !is_eq(lines[j]) && !is_dash(lines[j]) {
                j += 1;
            }
            failures.push(failure(
                &format!("{}: {}", &c[1], &c[2]),
                &lines[start..j],
                true,
            ));
            i = j;
            continue;
        }
        i += 1;
    }
    (counts, failures)
}

/// Jest: the `Tests: … N total` line; `● suite › test` blocks; a suite that failed to run
/// is an uncounted failure.
fn jest(text: &str) -> (Option<Counts>, Vec<Failure>) {
    static TESTS: LazyLock<Regex> = LazyLock::new(|| re(r"(?m)^Tests:\s+(.*?\d+ total)"));
    static PAIR: LazyLock<Regex> = LazyLock::new(|| re(r"(\d+) ([a-z]+)"));
    static BULLET: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*● (.+)$"));
    static FILE: LazyLock<Regex> = LazyLock::new(|| re(r"^FAIL (\S+)"));

    let counts = TESTS.captures_iter(text).last().map(|c| {
        let mut t = Counts::default();
        for p in PAIR.captures_iter(&c[1]) {
            let n = num(&p[1]);
            match &p[2] {
                "passed" => t.passed += n,
                "failed" => t.failed += n,
                "skipped" | "todo" | "pending" => t.skipped += n,
                _ => {}
            }
        }
        t
    });
    let lines: Vec<&str> = text.lines().collect();
    let mut failures = Vec::new();
    let mut file = String::new();
    let mut i = 0;
    while i < lines.len() {
        if let Some(c) = FILE.captures(lines[i]) {
            file = c[1].to_owned();
        }
        if let Some(c) = BULLET.captures(lines[i]) {
            let name = c[1].trim().to_owned();
            let start = i + 1;
            let mut j = start;
            while j < lines.len()
                && !BULLET.is_match(lines[j])
                && (lines[j].is_empty() || lines[j].starts_with(' '))
            {
                j += 1;
            }
            if name == "Test suite failed to run" {
                failures.push(failure(&format!("{file}: {name}"), &lines[start..j], false));
            } else if name != "Console" {
                failures.push(failure(&name, &lines[start..j], true));
            }
            i = j;
            continue;
        }
        i += 1;
    }
    (counts, dedup(failures))
}

/// Vitest: the ` Tests  1 failed | 3 passed (4)` line; `FAIL  file > test` blocks in the
/// failed-tests section, and failed suites as uncounted failures.
fn vitest(text: &str) -> (Option<Counts>, Vec<Failure>) {
    static TESTS: LazyLock<Regex> =
        LazyLock::new(|| re(r"(?m)^\s*Tests\s+(\d+ [a-z]+.*?)\s*\(\d+\)\s*$"));
    static PAIR: LazyLock<Regex> = LazyLock::new(|| re(r"(\d+) ([a-z]+)"));
    static SECTION: LazyLock<Regex> = LazyLock::new(|| re(r"^⎯+ Failed (Tests|Suites) \d+ ⎯+$"));
    static FAIL: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*FAIL\s+(.+?)\s*$"));
    let is_rule = |l: &str| l.trim_start().starts_with('⎯');

    let counts = TESTS.captures_iter(text).last().map(|c| {
        let mut t = Counts::default();
        for p in PAIR.captures_iter(&c[1]) {
            let n = num(&p[1]);
            match &p[2] {
                "passed" => t.passed += n,
                "failed" => t.failed += n,
                "skipped" | "todo" => t.skipped += n,
                _ => {}
            }
        }
        t
    });
    let lines: Vec<&str> = text.lines().collect();
    let mut failures = Vec::new();
    let mut section: Option<bool> = None; // Some(true): suites
    let mut i = 0;
    while i < lines.len() {
        if let Some(c) = SECTION.captures(lines[i].trim()) {
            section = Some(&c[1] == "Suites");
            i += 1;
            continue;
        }
        if let (Some(suites), Some(c)) = (section, FAIL.captures(lines[i])) {
            let start = i + 1;
            let mut j = start;
            while j < lines.len()
                && !FAIL.is_match(lines[j])
                && !is_rule(lines[j])
                && !lines[j].trim_start().starts_with("Test Files")
            {
                j += 1;
            }
            failures.push(failure(&c[1], &lines[start..j], !suites));
            i = j;
            continue;
        }
        if lines[i].trim_start().starts_with("Test Files") {
            section = None;
        }
        i += 1;
    }
    (counts, dedup(failures))
}

/// Mocha: `N passing`, `N failing`, `N pending`; the numbered `1) suite test:` blocks after
/// the failing count.
fn mocha(text: &str) -> (Option<Counts>, Vec<Failure>) {
    static COUNT: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*(\d+) (passing|failing|pending)\b"));
    static ITEM: LazyLock<Regex> = LazyLock::new(|| re(r"^\s{1,4}(\d+)\) (.+)$"));

    let lines: Vec<&str> = text.lines().collect();
    let mut counts: Option<Counts> = None;
    let mut failing_at = None;
    for (i, l) in lines.iter().enumerate() {
        if let Some(c) = COUNT.captures(l) {
            let t = counts.get_or_insert_with(Counts::default);
            let n = num(&c[1]);
            match &c[2] {
                "passing" => t.passed = n,
                "failing" => {
                    t.failed = n;
                    failing_at = Some(i);
                }
                _ => t.skipped = n,
            }
        }
    }
    let mut failures = Vec::new();
    if let Some(from) = failing_at {
        let mut i = from + 1;
        while i < lines.len() {
            let Some(c) = ITEM.captures(lines[i]) else {
                i += 1;
                continue;
            };
            let mut name = c[2].trim().to_owned();
            let mut j = i + 1;
            // The title continues on indented lines up to the first blank line.
            while j < lines.len() && !lines[j].trim().is_empty() && !ITEM.is_match(lines[j]) {
                name.push(' ');
                name.push_str(lines[j].trim());
                j += 1;
            }
            let start = j;
            while j < lines.len() && !ITEM.is_match(lines[j]) {
                j += 1;
            }
            let name = name.trim_end_matches(':').to_owned();
            failures.push(failure(&name, &lines[start..j], true));
            i = j;
        }
    }
    // A test file that does not load stops Mocha before any test runs.
    if let Some(at) = lines
        .iter()
        .position(|l| l.trim_start().starts_with("Exception during run:"))
    {
        let end = lines[at + 1..]
            .iter()
            .position(|l| l.trim().is_empty())
            .map_or(lines.len(), |n| at + 1 + n);
        let mut f = failure(lines[at].trim(), &lines[at + 1..end], false);
        f.severity = f.severity.min(Severity::High);
        failures.push(f);
    }
    (counts, failures)
}

/// Node's built-in runner (`node --test`), as its `spec` and `tap` reporters print it. The
/// summary (`ℹ tests 8` … or `# tests 8` …, one block per run, summed): `pass`, `fail` and
/// `cancelled` as failed, `skipped` and `todo` as skipped. Failures: TAP's `not ok` lines
/// that are not a suite failing for its subtests, or the spec tree's `✖` lines that do not
/// close a suite; named by the suites they are in (`math > divides wrongly`), as Node's JUnit
/// report is read.
fn node(text: &str) -> (Option<Counts>, Vec<Failure>) {
    static SUMMARY: LazyLock<Regex> = LazyLock::new(|| {
        re(r"^(?:ℹ|#) (tests|suites|pass|fail|cancelled|skipped|todo|duration_ms) \d+(?:\.\d+)?$")
    });
    let lines: Vec<&str> = text.lines().collect();
    let mut counts: Option<Counts> = None;
    for l in &lines {
        let Some(c) = SUMMARY.captures(l) else {
            continue;
        };
        let n = l
            .rsplit(' ')
            .next()
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0);
        let t = counts.get_or_insert_with(Counts::default);
        match &c[1] {
            "pass" => t.passed += n,
            "fail" | "cancelled" => t.failed += n,
            "skipped" | "todo" => t.skipped += n,
            _ => {}
        }
    }
    let failures = if lines.iter().any(|l| l.starts_with("TAP version")) {
        node_tap(&lines)
    } else {
        node_spec(&lines)
    };
    (counts, dedup(failures))
}

/// The indentation of a line, in spaces.
fn indent(l: &str) -> usize {
    l.len() - l.trim_start().len()
}

/// TAP from `node --test`: `# Subtest: name` opens a test (four spaces deeper per level),
/// `not ok N - name` closes a failed one, its YAML block (`---` … `...`) below it.
fn node_tap(lines: &[&str]) -> Vec<Failure> {
    static NOT_OK: LazyLock<Regex> =
        LazyLock::new(|| re(r"^(\s*)not ok \d+ - (.*?)(?: # (?:SKIP|TODO)\b.*)?$"));
    static DIRECTIVE: LazyLock<Regex> = LazyLock::new(|| re(r" # (?:SKIP|TODO)\b"));
    let mut path: Vec<(usize, String)> = Vec::new();
    let mut failures = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let depth = indent(l);
        if let Some(name) = l.trim_start().strip_prefix("# Subtest: ") {
            path.retain(|(d, _)| *d < depth);
            path.push((depth, name.to_owned()));
            continue;
        }
        let Some(c) = NOT_OK.captures(l) else {
            continue;
        };
        path.retain(|(d, _)| *d < depth);
        if DIRECTIVE.is_match(l) {
            continue;
        }
        let block: Vec<&str> = lines[i + 1..]
            .iter()
            .take_while(|x| x.trim().is_empty() || indent(x) > depth)
            .copied()
            .collect();
        let yaml: Vec<&str> = block
            .iter()
            .copied()
            .skip_while(|x| x.trim() != "---")
            .skip(1)
            .take_while(|x| x.trim() != "...")
            .filter(|x| !x.trim_start().starts_with("duration_ms:"))
            .collect();
        if yaml
            .iter()
            .any(|x| x.trim() == "failureType: 'subtestsFailed'")
        {
            continue;
        }
        let mut name: Vec<&str> = path.iter().map(|(_, n)| n.as_str()).collect();
        name.push(&c[2]);
        failures.push(failure(&name.join(" > "), &yaml, true));
    }
    failures
}

/// The `spec` reporter's tree up to its summary: `▶ suite` opens a suite (two spaces deeper
/// per level), `✖ name (1.2ms)` is a failed test with its output indented below — or the end
/// of a suite of that name, which is not a test of its own.
fn node_spec(lines: &[&str]) -> Vec<Failure> {
    static MARK: LazyLock<Regex> =
        LazyLock::new(|| re(r"^(\s*)(▶|✖) (.+?)(?: \([\d.]+m?s\))?(?: # .*)?$"));
    let mut suites: Vec<(usize, String)> = Vec::new();
    let mut failures = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if l.starts_with("ℹ tests ") || l.starts_with("✖ failing tests:") {
            break;
        }
        let Some(c) = MARK.captures(l) else {
            continue;
        };
        let depth = c[1].len();
        suites.retain(|(d, _)| *d < depth);
        let name = c[3].to_owned();
        if &c[2] == "▶" {
            suites.push((depth, name));
            continue;
        }
        let closes_suite = lines[..i].iter().rev().any(|p| {
            MARK.captures(p)
                .is_some_and(|m| &m[2] == "▶" && m[1].len() == depth && m[3] == *name)
        });
        if closes_suite {
            continue;
        }
        let detail: Vec<&str> = lines[i + 1..]
            .iter()
            .take_while(|x| x.trim().is_empty() || indent(x) > depth)
            .copied()
            .collect();
        let mut full: Vec<&str> = suites.iter().map(|(_, n)| n.as_str()).collect();
        full.push(&name);
        failures.push(failure(&full.join(" > "), &detail, true));
    }
    failures
}

/// `go test -v`: `--- PASS` / `--- FAIL` / `--- SKIP` lines counted (subtests too); a
/// failure's output is what its `=== RUN` printed and the indented lines after its
/// `--- FAIL`; build failures and the test timeout are uncounted failures.
fn go(text: &str) -> (Option<Counts>, Vec<Failure>) {
    static RESULT: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*--- (PASS|FAIL|SKIP): (\S+)"));
    static BUILD: LazyLock<Regex> = LazyLock::new(|| re(r"^# (\S+)(?: \[.*\])?$"));
    static BUILD_FAIL: LazyLock<Regex> =
        LazyLock::new(|| re(r"^FAIL\s+(\S+)\s+\[(build|setup) failed\]"));
    static TIMEOUT: LazyLock<Regex> = LazyLock::new(|| re(r"^panic: test timed out after"));

    let lines: Vec<&str> = text.lines().collect();
    let mut counts: Option<Counts> = None;
    let mut failures = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if let Some(c) = RESULT.captures(l) {
            let t = counts.get_or_insert_with(Counts::default);
            match &c[1] {
                "PASS" => t.passed += 1,
                "SKIP" => t.skipped += 1,
                _ => {
                    t.failed += 1;
                    let name = &c[2];
                    let run = format!("=== RUN   {name}");
                    let mut detail: Vec<&str> = Vec::new();
                    if let Some(from) = lines[..i].iter().rposition(|x| x.trim_end() == run) {
                        detail.extend(
                            lines[from + 1..i]
                                .iter()
                                .filter(|x| !x.trim_start().starts_with("=== ")),
                        );
                    }
                    let indent = l.len() - l.trim_start().len();
                    detail.extend(lines[i + 1..].iter().take_while(|x| {
                        let ind = x.len() - x.trim_start().len();
                        ind > indent && !RESULT.is_match(x)
                    }));
                    failures.push(failure(name, &detail, true));
                }
            }
            continue;
        }
        if let Some(c) = BUILD.captures(l) {
            let block: Vec<&str> = lines[i + 1..]
                .iter()
                .take_while(|x| {
                    !x.trim().is_empty() && !x.starts_with("FAIL") && !x.starts_with("# ")
                })
                .copied()
                .collect();
            let mut f = failure(&format!("build failed: {}", &c[1]), &block, false);
            f.severity = Severity::Critical;
            failures.push(f);
            continue;
        }
        if let Some(c) = BUILD_FAIL.captures(l) {
            let name = format!("build failed: {}", &c[1]);
            if !failures.iter().any(|f| f.name == name) {
                let mut f = failure(&format!("{} failed: {}", &c[2], &c[1]), &[l], false);
                f.severity = Severity::Critical;
                failures.push(f);
            }
            continue;
        }
        if TIMEOUT.is_match(l) {
            let block: Vec<&str> = lines[i..].iter().take(10).copied().collect();
            let mut f = failure("timeout", &block, false);
            f.severity = Severity::Medium;
            failures.push(f);
        }
    }
    (counts, failures)
}

/// Warning and deprecation lines (Low), each once.
fn warnings(text: &str) -> Vec<String> {
    static WARN: LazyLock<Regex> = LazyLock::new(|| re(r"(?i)\b(warning|deprecat\w*)\b"));
    static NOISE: LazyLock<Regex> = LazyLock::new(|| {
        re(
            r"(?i)^[= ]*warnings summary|\d+ warnings? (?:in|emitted|generated)|^[= ]*(?:\d+ [a-z]+,? ?)+ in \d|waiting for other jobs|-- Docs:",
        )
    });
    let mut out: Vec<String> = Vec::new();
    for l in text.lines() {
        let t = l.trim();
        if t.len() < 8 || !WARN.is_match(t) || NOISE.is_match(t) {
            continue;
        }
        let line = excerpt(t, 199);
        if !out.contains(&line) {
            out.push(line);
            if out.len() == MAX_WARNINGS {
                break;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
