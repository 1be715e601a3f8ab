//! What the tester writes: the per-iteration record `artifacts/test-runs/<n>.json` (read back
//! by the next iteration), `artifacts/test-report.md`, and the failure text of a fix request.

use super::parse::{Failure, Severity};
use super::{MAX_ITERATIONS, PASS_RATE_TARGET, RunResult, Scope, Strategy, exec::trim_middle};
use tlv4_core::text::cell;

/// The format version of [`Record`]. 2: a run's counts are `null` when its runner reported
/// none (1 wrote zeros and passed such a run by its exit status), and the pass rates are
/// `null` where the counts are unknown.
pub(super) const RECORD_SCHEMA: u32 = 2;

/// One iteration's record, stored as `artifacts/test-runs/<iteration>.json`. Read leniently:
/// a field missing in an older record takes its default.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub(crate) struct Record {
    /// Format version of this record.
    pub schema: u32,
    /// The test task (`TEST-001`, `TEST-001-I2`, …).
    pub task: String,
    /// The iteration, from 1.
    pub iteration: u32,
    /// The framework whose output was read.
    pub framework: String,
    /// The files that show it (or where the command came from).
    pub evidence: String,
    /// The commands run, in order.
    pub runs: Vec<RunRecord>,
    /// Pass rate of the last run, percent; `None` when no test ran or was counted, and when
    /// the tests failed before any was counted (then `verdict` is `fix_required`).
    pub pass_rate: Option<f64>,
    /// Best pass rate of this iteration and the earlier ones.
    pub best_pass_rate: Option<f64>,
    /// What "the same results" compares.
    pub result_set: ResultSet,
    /// The failures, most severe first.
    pub failures: Vec<FailureRecord>,
    /// The strategy asked for the next fix, if one was asked for.
    pub strategy: Option<String>,
    /// `pass`, `fix_required` or `no_tests`.
    pub verdict: String,
}

/// One command of an iteration.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub(crate) struct RunRecord {
    /// `affected` or `full`.
    pub scope: String,
    /// The command, as run with `sh -c`.
    pub command: String,
    /// Its exit code; `None` when killed.
    pub exit_code: Option<i32>,
    /// Whether the timeout killed it.
    pub timed_out: bool,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// Tests passed; `None` when the runner reported no count.
    pub passed: Option<u64>,
    /// Tests failed, with failures the runner reports but does not count (a test file that
    /// did not load, …); `None` when the runner reported no count.
    pub failed: Option<u64>,
    /// Tests skipped; `None` when the runner reported no count.
    pub skipped: Option<u64>,
    /// Whether the runner reported counts. Without them the run is no test counted (exit 0,
    /// verdict `no_tests`) or a failure with unknown counts, never a pass.
    pub counted: bool,
    /// Where the counts were read: `JUnit XML`, `go test -json`, `Jest JSON report` or
    /// `console output` (empty in records written before this field).
    pub results_from: String,
    /// Pass rate, percent; `None` when no test ran or the counts are unknown.
    pub pass_rate: Option<f64>,
    /// The stored output, relative to the pipeline folder.
    pub log: String,
}

/// The results two iterations are compared by: the counts and the failing names.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub(crate) struct ResultSet {
    /// Tests passed.
    pub passed: u64,
    /// Tests failed.
    pub failed: u64,
    /// Names of the failures, sorted.
    pub failures: Vec<String>,
}

/// A failure in the record.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub(crate) struct FailureRecord {
    /// The test or what failed.
    pub name: String,
    /// `critical`, `high`, `medium` or `low`.
    pub severity: String,
}

impl From<&Failure> for FailureRecord {
    fn from(f: &Failure) -> Self {
        FailureRecord {
            name: f.name.clone(),
            severity: f.severity.label().to_ascii_lowercase(),
        }
    }
}

/// The failures for a fix task, most severe first, each with its output indented, cut to
/// about `max` bytes.
pub(super) fn fix_text(failures: &[Failure], max: usize) -> String {
    let mut out = String::new();
    for (i, f) in failures.iter().enumerate() {
        let mut item = format!("- [{}] {}\n", f.severity.label(), f.name);
        for l in trim_middle(&f.detail, 1200).lines().take(25) {
            item.push_str("    ");
            item.push_str(l);
            item.push('\n');
        }
        if out.len() + item.len() > max {
            out.push_str(&format!(
                "- … and {} more failure(s), listed in artifacts/test-report.md\n",
                failures.len() - i
            ));
            break;
        }
        out.push_str(&item);
    }
    out
}

/// What the report shows.
pub(super) struct Report<'a> {
    /// The test task.
    pub task: &'a str,
    /// Its iteration.
    pub iteration: u32,
    /// The framework read.
    pub framework: &'a str,
    /// What shows it.
    pub evidence: &'a str,
    /// Where the command came from.
    pub source: &'a str,
    /// The verdict.
    pub verdict: &'a str,
    /// The verdict's one line.
    pub summary: &'a str,
    /// The runs, in order.
    pub runs: &'a [RunResult],
    /// Pass rate of the last run.
    pub pass_rate: Option<f64>,
    /// Best pass rate so far.
    pub best: Option<f64>,
    /// The next fix's strategy, if a fix is asked for.
    pub strategy: Option<Strategy>,
    /// All failures, most severe first.
    pub failures: &'a [Failure],
    /// Warning lines (Low).
    pub warnings: &'a [String],
    /// What the tester decided and why.
    pub decisions: &'a [String],
    /// Records of the earlier iterations.
    pub earlier: &'a [Record],
}

/// How many lines of a run without a count the report shows.
const TAIL_LINES: usize = 30;

fn pct(r: Option<f64>) -> String {
    r.map_or("—".to_owned(), |r| format!("{r:.1}%"))
}

/// `artifacts/test-report.md`.
pub(super) fn render(r: &Report<'_>) -> String {
    let mut s = format!(
        "# Test report: {} (iteration {} of at most {MAX_ITERATIONS})\n\n",
        r.task, r.iteration
    );
    s.push_str(&format!("- **Verdict:** {} — {}\n", r.verdict, r.summary));
    let rate = match (r.pass_rate, r.runs.last()) {
        (None, Some(last)) if !last.counted => {
            "unknown (the runner printed no test count)".to_owned()
        }
        (rate, _) => pct(rate),
    };
    s.push_str(&format!(
        "- **Pass rate:** {rate} (target {PASS_RATE_TARGET}%, no critical failure); best so far {}\n",
        pct(r.best)
    ));
    s.push_str(&format!(
        "- **Framework:** {} — evidence: {}\n- **Command from:** {}\n",
        r.framework, r.evidence, r.source
    ));
    match r.strategy {
        Some(st) => s.push_str(&format!(
            "- **Next fix strategy:** {} — {}\n",
            st.as_str(),
            st.explain()
        )),
        None => s.push_str("- **Next fix strategy:** none (no fix iteration asked for)\n"),
    }

    s.push_str("\n## Runs\n\n| scope | command | exit | passed | failed | skipped | pass rate | seconds | output |\n|---|---|---|---|---|---|---|---|---|\n");
    for run in r.runs {
        let exit = if run.ran.timed_out {
            "timeout".to_owned()
        } else {
            run.ran
                .exit_code
                .map_or("signal".to_owned(), |c| c.to_string())
        };
        let count = |n: u64| {
            if run.counted {
                n.to_string()
            } else {
                "?".to_owned()
            }
        };
        let rate = match run.shown_rate() {
            Some(p) => pct(Some(p)),
            None if run.pass_rate.is_some() => "unknown".to_owned(),
            None if run.counted => "no tests".to_owned(),
            None => "no count".to_owned(),
        };
        s.push_str(&format!(
            "| {} | `{}` | {} | {} | {} | {} | {} | {:.1} | `{}/{}-{}.log` |\n",
            run.scope.as_str(),
            cell(&run.ran.command),
            exit,
            count(run.counts.passed),
            count(run.counts.failed),
            count(run.counts.skipped),
            rate,
            run.ran.seconds,
            super::RUNS,
            r.iteration,
            run.scope.as_str()
        ));
    }
    if !r.runs.iter().any(|x| x.scope == Scope::Full) {
        s.push_str("| full | — | not run: the affected tests are below target | | | | | | |\n");
    }
    // A run without a count says nothing about its tests: what it printed is the evidence.
    for run in r.runs.iter().filter(|x| !x.counted) {
        let meaning = if run.pass_rate.is_some() {
            "its counts are unknown, and it is no pass"
        } else {
            "no test was counted, and it is no pass"
        };
        s.push_str(&format!(
            "\nThe {} run printed no test count (`{}` {}): {meaning}. The end of its output:\n\n",
            run.scope.as_str(),
            run.ran.command.replace('`', "'"),
            run.ended()
        ));
        let text = super::parse::normalize(&run.ran.output);
        let lines: Vec<&str> = text.trim_end().lines().collect();
        let tail = &lines[lines.len().saturating_sub(TAIL_LINES)..];
        if tail.is_empty() {
            s.push_str("    (no output)\n");
        }
        for l in tail {
            s.push_str("    ");
            s.push_str(l);
            s.push('\n');
        }
    }

    s.push_str("\n## Failures by severity\n");
    for sev in [Severity::Critical, Severity::High, Severity::Medium] {
        let these: Vec<&Failure> = r.failures.iter().filter(|f| f.severity == sev).collect();
        s.push_str(&format!("\n### {} ({})\n", sev.label(), these.len()));
        for f in these {
            s.push_str(&format!("\n#### {}\n\n", f.name));
            if f.detail.is_empty() {
                s.push_str("(no output)\n");
            }
            for l in trim_middle(&f.detail, 2000).lines() {
                s.push_str("    ");
                s.push_str(l);
                s.push('\n');
            }
        }
    }
    let low_failures: Vec<&Failure> = r
        .failures
        .iter()
        .filter(|f| f.severity == Severity::Low)
        .collect();
    s.push_str(&format!(
        "\n### Low ({} failure(s), {} warning line(s))\n\n",
        low_failures.len(),
        r.warnings.len()
    ));
    for f in low_failures {
        s.push_str(&format!("- failure: {}\n", f.name));
    }
    for w in r.warnings {
        s.push_str(&format!("- `{}`\n", w.replace('`', "'")));
    }

    s.push_str("\n## Decisions\n\n");
    for d in r.decisions {
        s.push_str(&format!("- {d}\n"));
    }

    s.push_str("\n## Iterations\n\n| iteration | task | pass rate | passed | failed | strategy | verdict |\n|---|---|---|---|---|---|---|\n");
    let mut earlier: Vec<&Record> = r.earlier.iter().collect();
    earlier.sort_by_key(|e| e.iteration);
    for e in earlier {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} |\n",
            e.iteration,
            e.task,
            pct(e.pass_rate),
            e.result_set.passed,
            e.result_set.failed,
            e.strategy.as_deref().unwrap_or("—"),
            e.verdict
        ));
    }
    let last = r.runs.last().filter(|l| l.counted);
    let count = |n: fn(&RunResult) -> u64| last.map_or("?".to_owned(), |l| n(l).to_string());
    s.push_str(&format!(
        "| {} | {} | {} | {} | {} | {} | {} |\n",
        r.iteration,
        r.task,
        pct(r.pass_rate),
        count(|l| l.counts.passed),
        count(|l| l.counts.failed),
        r.strategy.map_or("—", Strategy::as_str),
        r.verdict
    ));
    s
}
