//! Quality: the tester. Detects the test framework from the code tree, runs the tests for the
//! changed files and then the whole suite in a temporary worktree of the session tip, reads
//! the counts and failures, and decides the fix cycle.
//!
//! The cycle is the coordinator's, the decision is ours: at a 95 % pass rate (and no critical
//! failure) the verdict is `pass`; below it we ask for a fix iteration (the coordinator then
//! creates `FIX-NNN` and `TEST-001-I<n+1>`) with a strategy picked from the iteration, the
//! pass rate and the critical count, until iteration 10 or until three iterations in a row
//! produced the same results. Each iteration leaves a JSON record in
//! `artifacts/test-runs/<n>.json`; the next iteration reads the earlier ones from the
//! pipeline folder.
//!
//! Security: the tests are the repository's own code and run with the user's rights.

mod detect;
mod exec;
mod parse;
mod report;
mod runner;

#[cfg(test)]
mod tests;

use std::time::Duration;

use detect::{Framework, Kind};
use parse::{Counts, Failure, Severity};
use report::{Record, ResultSet, RunRecord};
use runner::{CargoRunner, Setup, first_on_path, local_runner, machine_readable, setup};

use super::{FixRequest, QualityContext, QualityResult};
use crate::agents::{Outcome, StateUpdate, TaskInput, TaskOutput};
use tlv4_core::error::Result;
use tlv4_core::model::{TaskId, Verdict};
use tlv4_core::text::excerpt;
use tlv4_specdoc::spec::{DISCOVERY, PLAN};
use tlv4_store::worktree::prepare::PlanRefused;

/// At most this many test iterations (the first run and its fix re-runs).
pub const MAX_ITERATIONS: u32 = 10;
/// The pass rate, in percent, at which the tests pass.
pub const PASS_RATE_TARGET: f64 = 95.0;
/// Stop when this many iterations in a row produced the same results.
pub const IDENTICAL_RUNS: usize = 3;
/// How long one test command may run.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);
/// How much of a command's output is stored.
const LOG_BYTES: usize = 64 * 1024;
/// How much failure text goes into a fix request.
const FIX_TEXT_BYTES: usize = 6000;

/// Where the report and the records go, relative to the pipeline folder.
const REPORT: &str = "artifacts/test-report.md";
const RUNS: &str = "artifacts/test-runs";

/// Runs a tester task.
pub fn run_task(input: &TaskInput, ctx: &QualityContext) -> Result<QualityResult> {
    run_with(input, ctx, DEFAULT_TIMEOUT)
}

/// What the tests say of one commit, for comparing candidates (best of N); as the
/// candidates' record keeps it.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct SuiteMeasure {
    /// Whether a test runner ran and counted (a project without tests, or tests that could
    /// not start, did not).
    pub ran: bool,
    /// Pass rate in percent, when counted.
    pub pass_rate: Option<f64>,
    /// Tests passed, failed (with what failed uncounted) and skipped in the last run.
    pub passed: u64,
    /// See [`SuiteMeasure::passed`].
    pub failed: u64,
    /// See [`SuiteMeasure::passed`].
    pub skipped: u64,
    /// At the pass target, with no critical failure: the tester's `pass`.
    pub meets_target: bool,
    /// Each failure by name, most severe first.
    pub failures: Vec<String>,
    /// The tester's verdict (`pass`, `fix_required`, `no_tests`), or why the tests did not
    /// run.
    pub note: String,
    /// The test commands' wall clock, summed.
    pub seconds: f64,
}

/// Runs the tests on `ctx.tip` as a first test iteration would (in a test checkout with the
/// project's environment, the configured or detected command) and reads the record it
/// writes. `input` is the code task; its `code` must be the tree at `ctx.tip`.
pub fn measure(input: &TaskInput, ctx: &QualityContext) -> Result<SuiteMeasure> {
    let mut input = input.clone();
    input.task.id = "TEST-001".parse().expect("a valid id");
    let result = run_with(&input, ctx, DEFAULT_TIMEOUT)?;
    if let Outcome::Failed(why) = &result.output.outcome {
        return Ok(SuiteMeasure {
            note: why.lines().next().unwrap_or_default().to_owned(),
            ..SuiteMeasure::default()
        });
    }
    let record = result
        .output
        .files
        .iter()
        .find(|(p, _)| *p == format!("{RUNS}/1.json"))
        .and_then(|(_, b)| serde_json::from_slice::<Record>(b).ok());
    let Some(record) = record else {
        return Ok(SuiteMeasure {
            note: result.output.summary,
            ..SuiteMeasure::default()
        });
    };
    let last = record.runs.last();
    let count = |f: fn(&RunRecord) -> Option<u64>| last.and_then(f).unwrap_or(0);
    Ok(SuiteMeasure {
        ran: record.verdict != "no_tests" && last.is_some_and(|r| r.counted),
        pass_rate: record.pass_rate,
        passed: count(|r| r.passed),
        failed: count(|r| r.failed),
        skipped: count(|r| r.skipped),
        meets_target: record.verdict == "pass",
        failures: record.failures.into_iter().map(|f| f.name).collect(),
        note: record.verdict,
        seconds: record.runs.iter().map(|r| r.seconds).sum(),
    })
}

/// How the next fix iteration goes about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// Fix one critical failure at a time, highest severity first.
    Conservative,
    /// Fix one pattern everywhere it occurs.
    Surgical,
    /// Batch-fix all critical and high failures.
    Aggressive,
}

impl Strategy {
    /// The reference's table, first match wins: iteration ≤ 3 or pass ≥ 80 % → conservative;
    /// fewer than 5 critical failures → surgical; pass < 50 % or iteration > 7 → aggressive;
    /// otherwise conservative.
    pub fn select(iteration: u32, pass_rate: f64, critical: usize) -> Strategy {
        if iteration <= 3 || pass_rate >= 80.0 {
            Strategy::Conservative
        } else if critical < 5 {
            Strategy::Surgical
        } else if pass_rate < 50.0 || iteration > 7 {
            Strategy::Aggressive
        } else {
            Strategy::Conservative
        }
    }

    /// The name given to the fix task.
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::Conservative => "conservative",
            Strategy::Surgical => "surgical",
            Strategy::Aggressive => "aggressive",
        }
    }

    /// What the strategy asks of the fixer.
    pub fn explain(self) -> &'static str {
        match self {
            Strategy::Conservative => "fix one critical failure at a time, highest severity first",
            Strategy::Surgical => "fix one failure pattern everywhere it occurs",
            Strategy::Aggressive => "batch-fix all critical and high failures",
        }
    }
}

/// What this iteration decides.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Decision {
    /// The target is met.
    Pass,
    /// Ask for a fix iteration.
    Fix(Strategy),
    /// Stop below the target.
    Stop(StopReason),
    /// No test ran.
    NoTests,
}

/// Why the cycle stops below the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StopReason {
    /// The iteration limit is reached.
    MaxIterations,
    /// The last iterations produced the same results: fixing does not change them.
    Identical,
}

/// The decision for `iteration` with this pass rate and these results, given the records of
/// the earlier iterations (any order).
pub(crate) fn decide(
    iteration: u32,
    pass_rate: Option<f64>,
    critical: usize,
    current: &ResultSet,
    earlier: &[Record],
) -> Decision {
    let Some(rate) = pass_rate else {
        return Decision::NoTests;
    };
    if rate >= PASS_RATE_TARGET && critical == 0 {
        return Decision::Pass;
    }
    if iteration >= MAX_ITERATIONS {
        return Decision::Stop(StopReason::MaxIterations);
    }
    let same = (1..IDENTICAL_RUNS as u32).all(|back| {
        iteration > back
            && earlier
                .iter()
                .any(|r| r.iteration == iteration - back && r.result_set == *current)
    });
    if same {
        return Decision::Stop(StopReason::Identical);
    }
    Decision::Fix(Strategy::select(iteration, rate, critical))
}

/// The iteration a test task runs: the `-I<n>` suffix of its id, else 1.
pub fn iteration_of(id: &TaskId) -> u32 {
    id.as_str()
        .rsplit_once("-I")
        .and_then(|(_, n)| n.parse().ok())
        .filter(|n| *n >= 1)
        .unwrap_or(1)
}

/// The id without its `-I<n>` suffix: the test chain the records belong to.
fn chain_of(id: &TaskId) -> &str {
    let s = id.as_str();
    s.rsplit_once("-I")
        .filter(|(_, n)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
        .map_or(s, |(b, _)| b)
}

/// Which part of the suite a run covered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// The tests of the changed files.
    Affected,
    /// Everything.
    Full,
}

impl Scope {
    fn as_str(self) -> &'static str {
        match self {
            Scope::Affected => "affected",
            Scope::Full => "full",
        }
    }
}

/// One command's result, read.
#[derive(Debug, Clone)]
struct RunResult {
    /// Which tests.
    scope: Scope,
    /// The command and its raw result.
    ran: exec::Ran,
    /// Counts as the runner reported them, failed including the failures it does not count
    /// (a suite that did not load); all zero when it reported none.
    counts: Counts,
    /// Whether the runner reported counts at all. Without them nothing is made up from the
    /// exit status: the run is no test counted (exit 0) or a failure with unknown counts.
    counted: bool,
    /// Failures, in output order.
    failures: Vec<Failure>,
    /// Warning lines (Low).
    warnings: Vec<String>,
    /// The rate the decision goes by: `None` when no test ran or none was counted, 0 for a
    /// run that failed without a count (see [`RunResult::counts_known`]).
    pass_rate: Option<f64>,
    /// Where the counts were read.
    source: parse::Source,
}

impl RunResult {
    fn critical(&self) -> usize {
        self.failures
            .iter()
            .filter(|f| f.severity == Severity::Critical)
            .count()
    }

    /// At the target. A run of no test is not: it shows nothing.
    fn meets_target(&self) -> bool {
        self.pass_rate
            .is_some_and(|r| r >= PASS_RATE_TARGET && self.critical() == 0)
    }

    /// Whether the counts say how many tests passed and failed: the runner counted some. A
    /// run that failed before its runner counted any test (a compile error, a crash, a
    /// timeout) has unknown counts, whatever its exit status.
    fn counts_known(&self) -> bool {
        self.counted && self.counts.passed + self.counts.failed > 0
    }

    /// The pass rate as reported and recorded: unknown (`None`) where the counts are.
    fn shown_rate(&self) -> Option<f64> {
        self.pass_rate.filter(|_| self.counts_known())
    }

    /// How the command ended: "exited 2", "timed out", "was killed by a signal".
    fn ended(&self) -> String {
        if self.ran.timed_out {
            "timed out".to_owned()
        } else {
            match self.ran.exit_code {
                Some(c) => format!("exited {c}"),
                None => "was killed by a signal".to_owned(),
            }
        }
    }

    /// The counts in words: "3 passed, 1 failed, 0 skipped", or what is known instead.
    fn describe_counts(&self) -> String {
        if self.counts_known() || (self.counted && self.pass_rate.is_none()) {
            format!(
                "{} passed, {} failed, {} skipped",
                self.counts.passed, self.counts.failed, self.counts.skipped
            )
        } else if self.counted {
            format!(
                "counts unknown: `{}` {} and counted no test",
                self.ran.command,
                self.ended()
            )
        } else {
            format!(
                "counts unknown: `{}` {} and printed no test count",
                self.ran.command,
                self.ended()
            )
        }
    }
}

/// Reads a finished command: counts (from the machine-readable `report` it wrote, if any,
/// else from its output), failures (a timeout, and a failed exit no failure explains, become
/// failures too) and the pass rate.
///
/// The counts are the runner's, never the exit status's: a run whose runner counted no test
/// has no pass rate (`None`: no test ran) when it exited 0 — whatever the command, since a
/// command that prints no count shows nothing tested — and is a failure with unknown counts
/// when it failed (a compile error or a crash is the code's to fix), with the compiler's
/// text or the end of the output as its failure.
fn evaluate(
    kind: Kind,
    scope: Scope,
    ran: exec::Ran,
    timeout: Duration,
    report: Option<&parse::Report>,
) -> RunResult {
    let (parsed, source) = parse::parse_run(kind, &ran.output, report);
    let console = parse::normalize(&ran.output);
    let mut failures = parsed.failures;
    if source != parse::Source::Console {
        for f in &mut failures {
            f.name = relative_paths(&f.name, &console);
            f.detail = relative_paths(&f.detail, &console);
        }
    }
    let tail = || exec::trim_middle(console.trim(), 1500);
    if ran.timed_out {
        failures.push(Failure {
            name: format!(
                "timeout: `{}` ran longer than {} s",
                ran.command,
                timeout.as_secs()
            ),
            severity: Severity::Medium,
            detail: tail(),
            counted: false,
        });
    }
    let counted = parsed.counts.is_some();
    let mut counts = parsed.counts.unwrap_or_default();
    let exit_ok =
        ran.exit_code == Some(0) || (counted && doc_tests_without_library(kind, &ran, &console));
    // pytest and unittest (3.12+) exit 5 when no test was collected.
    let no_tests_exit = ran.exit_code == Some(5) && matches!(kind, Kind::Pytest | Kind::Unittest);
    let says_none = !ran.timed_out && parse::says_no_tests(&ran.output);
    let exit = || {
        ran.exit_code
            .map_or("killed by a signal".to_owned(), |c| format!("exit {c}"))
    };
    if counted {
        counts.failed += failures.iter().filter(|f| !f.counted).count() as u64;
        // Failures the counts show, named by nothing in the output.
        if counts.failed > 0 && failures.is_empty() {
            failures.push(Failure {
                name: format!("{} failing test(s) not named in the output", counts.failed),
                severity: parse::classify(&ran.output),
                detail: tail(),
                counted: true,
            });
        }
    }
    let tests = counts.passed + counts.failed;
    let pass_rate = if counted && tests > 0 {
        Some(counts.passed as f64 * 100.0 / tests as f64)
    } else if ran.timed_out {
        Some(0.0)
    } else if no_tests_exit || says_none || exit_ok {
        // Nothing ran, or nothing was counted: no pass (the verdict says which).
        None
    } else {
        // Failed before the runner counted a test: the counts are unknown, the failure is
        // what the output names (a compile error), else the end of the output.
        if failures.is_empty() {
            failures.push(Failure {
                name: format!(
                    "`{}` failed ({}) and {}",
                    ran.command,
                    exit(),
                    if counted {
                        "counted no test"
                    } else {
                        "printed no test count"
                    }
                ),
                severity: parse::classify(&ran.output),
                detail: tail(),
                counted: false,
            });
        }
        Some(0.0)
    };
    // A run whose counts say all passed but whose command failed: one more failure, so a
    // coverage threshold or a crash after the summary is not taken for a pass.
    let pass_rate = match pass_rate {
        Some(r) if counted && !exit_ok && !ran.timed_out && counts.failed == 0 && r >= 100.0 => {
            failures.push(Failure {
                name: format!(
                    "`{}` failed ({}) although every counted test passed",
                    ran.command,
                    exit()
                ),
                severity: parse::classify(&ran.output),
                detail: tail(),
                counted: false,
            });
            counts.failed += 1;
            Some(counts.passed as f64 * 100.0 / (counts.passed + 1) as f64)
        }
        other => other,
    };
    RunResult {
        scope,
        ran,
        counts,
        counted,
        failures,
        warnings: parsed.warnings,
        pass_rate,
        source,
    }
}

/// `text` (a failure's name or output, from a report the runner wrote to a file) with the
/// absolute paths into the checkout shortened to the repository paths the console shows.
/// The console was made relative to the checkout (see `relative`); a report was not, and
/// Node's names a test file that did not load by its absolute path. A path the console shows
/// whole is outside the checkout and stays; of one it does not, the longest tail the console
/// shows is the repository path.
fn relative_paths(text: &str, console: &str) -> String {
    static PATH: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r#"(^|[^\w./~-])(/[^\s()\[\]'"`:,;]+)"#).expect("a valid pattern")
    });
    PATH.replace_all(text, |c: &regex::Captures| {
        let path = &c[2];
        let short = if console.contains(path) {
            None
        } else {
            path.match_indices('/')
                .map(|(i, _)| &path[i + 1..])
                .find(|tail| !tail.is_empty() && shows_path(console, tail))
        };
        format!("{}{}", &c[1], short.unwrap_or(path))
    })
    .into_owned()
}

/// Whether `console` shows `path` as a path of its own, not as the tail of a longer one.
fn shows_path(console: &str, path: &str) -> bool {
    console.match_indices(path).any(|(i, _)| {
        console[..i]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_alphanumeric() || "_./~-".contains(c)))
    })
}

/// Whether `cargo test --doc`, run after nextest (see [`nextest_command`]), stopped only
/// because there is no library to take doc tests from: its error is the last line, and it
/// means "no doc tests", not a failure.
fn doc_tests_without_library(kind: Kind, ran: &exec::Ran, console: &str) -> bool {
    kind == Kind::Cargo
        && ran.command.contains("cargo test --doc")
        && console
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .is_some_and(|l| l.starts_with("error: no library targets found"))
}

/// Why a command could not start at all, if so: it could not be spawned, the shell could
/// not find or execute its program (126, 127), or its output says the tool, its toolchain
/// or the test runner is missing. That is the environment's fault, not the code's.
fn unavailable(ran: &exec::Ran) -> Option<String> {
    if let Some(e) = &ran.spawn_error {
        return Some(e.clone());
    }
    let text = parse::normalize(&ran.output);
    let last = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
        .to_owned();
    match ran.exit_code {
        Some(127) => return Some(format!("command not found ({last})")),
        Some(126) => return Some(format!("command not executable ({last})")),
        _ => {}
    }
    if ran.exit_code == Some(0) {
        return None;
    }
    let missing = [
        "npx canceled due to missing packages",
        "could not determine executable to run",
        "No module named pytest",
        "No module named unittest",
        "rustup could not choose a version of",
        "no default toolchain configured",
        "toolchain not available",
        "error: toolchain '",
        "Missing script: \"test\"",
        "missing script: test",
        "go: cannot find main module",
        "go.mod requires go >=",
        // A Node too old for the reporters the tester adds (see `machine_readable`).
        "Cannot find package 'junit'",
        "is not allowed in NODE_OPTIONS",
    ];
    missing.iter().find(|m| text.contains(*m)).map(|m| {
        text.lines()
            .find(|l| l.contains(m))
            .unwrap_or(m)
            .trim()
            .to_owned()
    })
}

/// A test command that could not start: an environment error (no fix iteration can help),
/// so the task fails with the command, the reason and the end of its output.
fn environment_error(ran: &exec::Ran, why: &str) -> QualityResult {
    let output = exec::trim_middle(parse::normalize(&ran.output).trim(), 1500);
    let mut reason = format!(
        "environment error: the test command `{}` could not start: {why}",
        ran.command
    );
    if !output.is_empty() {
        reason.push_str(&format!("\nits output:\n{output}"));
    }
    reason.push_str("\ninstall or fix what it needs, then run `git tlv4 resume --retry`");
    failed(reason)
}

/// The `[tests] command` of the configuration the session runs with (pinned at its start),
/// if it sets one.
fn configured_command(ctx: &QualityContext) -> Option<String> {
    let command = ctx.conf.config.tests.command.as_deref()?.trim();
    (!command.is_empty()).then(|| command.to_owned())
}

/// The command that runs the whole suite of `code` with the configuration `conf`, as the
/// tester chooses it (`[tests] command`, else the detected one, never an agent's), and
/// where it comes from: what an agent with a shell is told to run.
pub fn suite_command(
    conf: &tlv4_core::trust::Configuration,
    code: &crate::agents::CodeTree,
) -> Option<(String, String)> {
    match conf.config.tests.command.as_deref().map(str::trim) {
        Some(c) if !c.is_empty() => Some((
            c.to_owned(),
            format!("{} [tests] command", tlv4_core::config::FILE),
        )),
        _ => detected_command(code),
    }
}

/// The test command the tester would run on `code`, and the files that show it.
pub fn detected_command(code: &crate::agents::CodeTree) -> Option<(String, String)> {
    detect::detect(code, None).map(|d| {
        let cmd = if d.dir.is_empty() {
            d.full
        } else {
            format!("(cd {} && {})", d.dir, d.full)
        };
        (cmd, d.evidence)
    })
}

/// Code paths changed between the session's base and tip, outside `.tlv4/`.
fn changed_files(ctx: &QualityContext) -> Result<Vec<String>> {
    if ctx.base == ctx.tip {
        return Ok(Vec::new());
    }
    let store = tlv4_store::store::Store::from_repo(ctx.repo.to_thread_local())?;
    Ok(store
        .changed_paths(ctx.base, ctx.tip)?
        .into_iter()
        .filter(|p| p != ".tlv4" && !p.starts_with(".tlv4/"))
        .collect())
}

fn run_with(input: &TaskInput, ctx: &QualityContext, timeout: Duration) -> Result<QualityResult> {
    let task = &input.task.id;
    let iteration = iteration_of(task);
    let earlier = earlier_records(input, iteration);
    let mut ignored = Vec::new();
    let configured = configured_command(ctx);
    let Some(setup) = setup(input, configured.as_deref(), &mut ignored) else {
        return Ok(no_framework(input, iteration, &ignored));
    };
    // The repository's own test scripts run with the user's rights: only once it is trusted.
    if !tlv4_core::trust::Stored::of(&ctx.conf.config).trusted() {
        return Ok(failed(format!(
            "the repository is not trusted, so its tests do not run (`{}` from {}); read `git tlv4 trust --show`, run `git tlv4 trust`, then `git tlv4 resume --retry`",
            setup.full, setup.evidence
        )));
    }
    let mut decisions = vec![format!(
        "test command from {}: `{}` ({})",
        setup.source,
        setup.full,
        setup.kind.name()
    )];
    decisions.extend(ignored);
    let changed = match changed_files(ctx) {
        Ok(c) => c,
        Err(e) => return Ok(failed(format!("cannot list the changed files: {e}"))),
    };
    let fw = Framework {
        kind: setup.kind,
        dir: setup.dir.clone(),
        evidence: setup.evidence.clone(),
        full: setup.full.clone(),
    };
    let cargo = if setup.kind == Kind::Cargo {
        let (runner, why) = CargoRunner::choose(&input.code, &setup.dir);
        decisions.push(why);
        runner
    } else {
        CargoRunner::Libtest
    };
    let affected = detect::affected(&input.code, &fw, &changed);
    let affected_cmd = detect::affected_command(&fw, &affected);
    match &affected_cmd {
        Some(_) => decisions.push(format!(
            "affected tests first: {}{} for {} changed file(s)",
            affected[..affected.len().min(10)].join(", "),
            if affected.len() > 10 { ", …" } else { "" },
            changed.len()
        )),
        None => decisions.push(format!(
            "no affected tests mapped from {} changed file(s): full suite only",
            changed.len()
        )),
    }

    let repo = ctx.repo.to_thread_local();
    // Which setup runs is the session base's to say; what it installs, the tip's lockfiles.
    let plan = match tlv4_store::worktree::prepare::session_plan(&repo, ctx.base, &ctx.conf) {
        Ok(p) => p,
        Err(PlanRefused::Unreadable(e)) => {
            return Ok(failed(format!(
                "cannot read the project's environment setup: {e}"
            )));
        }
        Err(PlanRefused::Untrusted(why)) => {
            return Ok(failed(format!(
                "{why}\nthe tests did not run; after `git tlv4 trust`, run `git tlv4 resume --retry`"
            )));
        }
    };
    let checkout = tlv4_store::store::Store::from_repo(repo.clone()).and_then(|store| {
        tlv4_store::worktree::ScratchCheckout::create(&store, ctx.tip, task.as_str())
    });
    let mut worktree = match checkout {
        Ok(w) => w,
        Err(e) => {
            return Ok(failed(format!(
                "cannot check out {} for the tests: {e}",
                ctx.tip
            )));
        }
    };
    let max_disk = ctx.conf.config.environment.max_disk().ok().flatten();
    worktree.bound(max_disk);
    decisions.push(if worktree.reused() {
        "checkout: a kept test checkout, moved to the session tip (only what changed was written)"
            .to_owned()
    } else {
        "checkout: a new test checkout of the session tip".to_owned()
    });
    if let Ok(pool) = tlv4_store::store::Store::from_repo(repo.clone())
        .and_then(|store| tlv4_store::worktree::pool::Pool::open(&store, max_disk))
    {
        decisions.push(format!("checkouts: {}", pool.summary()));
    }
    let timeout_setup = tlv4_store::worktree::prepare::timeout(&ctx.conf.config.environment);
    let prepared = match worktree.prepare(&repo, ctx.tip, &plan, timeout_setup) {
        Ok(Ok(p)) => p,
        Ok(Err(why)) => {
            return Ok(failed(format!(
                "environment error: {why}\nthe tests did not run; fix the environment, then run `git tlv4 resume --retry`"
            )));
        }
        Err(e) => return Ok(failed(format!("cannot prepare the test checkout: {e}"))),
    };
    if plan.steps.is_empty() {
        decisions
            .push("environment: nothing to install (no lockfile or manifest detected)".to_owned());
    }
    for m in &prepared.made {
        decisions.push(format!("environment: {}", m.line()));
    }
    decisions.extend(
        prepared
            .checked
            .iter()
            .map(|c| format!("environment check: {c}")),
    );
    let cwd = if setup.dir.is_empty() {
        worktree.path().to_path_buf()
    } else {
        worktree.path().join(&setup.dir)
    };
    let env = prepared.env.clone();
    let root = worktree.path().to_path_buf();
    // In the checkout's own temporary directory: the confined runner may write only there.
    let reports = match tempfile::Builder::new()
        .prefix("tlv4-results-")
        .tempdir_in(&prepared.tmp)
    {
        Ok(d) => d,
        Err(e) => {
            return Ok(failed(format!(
                "cannot make a directory for test results: {e}"
            )));
        }
    };
    // The detected JavaScript runners run from the checkout's `node_modules/.bin`, not npx;
    // a configured command runs as written.
    let local = |dir: &std::path::Path, cmd: &str| {
        configured
            .is_none()
            .then(|| local_runner(cmd, dir, &root))
            .flatten()
    };
    if let Some((cmd, _)) = local(&cwd, &setup.full) {
        decisions.push(format!("runner: the checkout's own, without npx: `{cmd}`"));
    }
    let run = |dir: &std::path::Path, cmd: &str, kind: Kind| {
        let local = local(dir, cmd);
        let cmd = local.as_ref().map_or(cmd, |(c, _)| c.as_str());
        let (command, extra, file) = machine_readable(kind, cmd, reports.path(), cargo);
        let mut env = env.clone();
        if let Some((_, bin)) = &local {
            first_on_path(&mut env, bin);
        }
        env.set.extend(extra);
        let ran = relative(exec::run(dir, &command, timeout, &env), &root);
        let report = file.and_then(|(path, form)| {
            let text = std::fs::read_to_string(&path).ok();
            let _ = std::fs::remove_file(&path);
            text.map(form)
        });
        (ran, report)
    };
    let mut runs: Vec<RunResult> = Vec::new();
    let mut kind = setup.kind;
    if let Some(cmd) = &affected_cmd {
        let (ran, report) = run(&cwd, cmd, kind);
        if let Some(why) = unavailable(&ran) {
            return Ok(environment_error(&ran, &why));
        }
        runs.push(evaluate(
            kind,
            Scope::Affected,
            ran,
            timeout,
            report.as_ref(),
        ));
    }
    // The whole suite once the affected tests pass, or when they ran none.
    if runs
        .iter()
        .all(|r| r.meets_target() || r.pass_rate.is_none())
    {
        let (mut ran, mut report) = run(&cwd, &setup.full, kind);
        if let Some(why) = unavailable(&ran) {
            let Some(fb) = &setup.fallback else {
                return Ok(environment_error(&ran, &why));
            };
            decisions.push(format!(
                "`{}` could not run ({why}); ran the detected `{}` instead",
                setup.full, fb.full
            ));
            let fb_cwd = worktree.path().join(&fb.dir);
            (ran, report) = run(&fb_cwd, &fb.full, fb.kind);
            if let Some(why) = unavailable(&ran) {
                return Ok(environment_error(&ran, &why));
            }
            kind = fb.kind;
        }
        runs.push(evaluate(kind, Scope::Full, ran, timeout, report.as_ref()));
    } else {
        decisions.push(format!(
            "full suite not run: the affected tests are below {PASS_RATE_TARGET}% (it runs once they pass)"
        ));
    }
    for r in &runs {
        decisions.push(format!(
            "{} run: results read from the {}",
            r.scope.as_str(),
            r.source.name()
        ));
    }
    // Removed now, before the report is built; also removed on every early return above.
    drop(worktree);

    Ok(conclude(
        input, iteration, &setup, kind, runs, earlier, decisions,
    ))
}

/// The run with the worktree's path taken out of its output, so failures name
/// repository paths (and stay the same from one iteration's worktree to the next).
fn relative(mut ran: exec::Ran, root: &std::path::Path) -> exec::Ran {
    let mut roots = vec![root.to_path_buf()];
    if let Ok(real) = root.canonicalize()
        && real != root
    {
        roots.push(real);
    }
    for r in roots {
        ran.output = ran.output.replace(&format!("{}/", r.display()), "");
    }
    ran
}

/// Records of earlier iterations of the same test chain, from the pipeline folder.
fn earlier_records(input: &TaskInput, iteration: u32) -> Vec<Record> {
    let chain = chain_of(&input.task.id);
    (1..iteration)
        .filter_map(|n| input.folder.get(&format!("{RUNS}/{n}.json")))
        .filter_map(|b| serde_json::from_slice::<Record>(b).ok())
        .filter(|r| r.task.is_empty() || r.task.starts_with(chain))
        .collect()
}

/// The result once the tests ran.
fn conclude(
    input: &TaskInput,
    iteration: u32,
    setup: &Setup,
    kind: Kind,
    runs: Vec<RunResult>,
    earlier: Vec<Record>,
    decisions: Vec<String>,
) -> QualityResult {
    let tally = tally(&runs, &earlier);
    let result_set = result_set(tally.last);
    let decision = decide(
        iteration,
        tally.rate,
        tally.last.critical(),
        &result_set,
        &earlier,
    );
    let judgement = judge(&tally, decision, iteration, kind);
    let strategy = match decision {
        Decision::Fix(s) => Some(s),
        _ => None,
    };

    // Files: the logs, the record, the report.
    let (mut files, run_records) = run_logs(&runs, iteration);
    let record = Record {
        schema: report::RECORD_SCHEMA,
        task: input.task.id.to_string(),
        iteration,
        framework: kind.name().into(),
        evidence: setup.evidence.clone(),
        runs: run_records,
        pass_rate: tally.shown.map(|p| (p * 10.0).round() / 10.0),
        best_pass_rate: tally.best.map(|p| (p * 10.0).round() / 10.0),
        result_set,
        failures: tally
            .failures
            .iter()
            .map(report::FailureRecord::from)
            .collect(),
        strategy: strategy.map(|s| s.as_str().to_owned()),
        verdict: judgement.verdict.into(),
    };
    let record_path = format!("{RUNS}/{iteration}.json");
    files.push((
        record_path,
        serde_json::to_vec_pretty(&record).expect("a record serialises"),
    ));
    let low = warning_lines(&runs);
    let doc = report::render(&report::Report {
        task: input.task.id.as_str(),
        iteration,
        framework: kind.name(),
        evidence: &setup.evidence,
        source: &setup.source,
        verdict: judgement.verdict,
        summary: &judgement.summary,
        runs: &runs,
        pass_rate: tally.shown,
        best: tally.best,
        strategy,
        failures: &tally.failures,
        warnings: &low,
        decisions: &decisions,
        earlier: &earlier,
    });
    files.push((REPORT.to_owned(), doc.into_bytes()));

    let key_findings = key_findings(
        &tally,
        iteration,
        kind,
        setup,
        &low,
        judgement.verdict,
        strategy,
    );
    let state_update = StateUpdate {
        key_findings,
        decisions,
        files_modified: files.iter().map(|(p, _)| p.clone()).collect(),
        verification: runs
            .iter()
            .map(|r| r.ran.command.clone())
            .collect::<Vec<_>>()
            .join("; "),
        tech_profile: None,
    };
    finish(judgement, files, state_update)
}

/// What the runs of one iteration add up to, shared by the verdict, the record, the report
/// and the findings.
struct Tally<'a> {
    /// The last run (the full suite when a scoped run came first).
    last: &'a RunResult,
    /// The failures of every run, each name once, the most severe first.
    failures: Vec<Failure>,
    /// The last run's pass rate, as the decision takes it (0 for a failed run of unknown
    /// counts).
    rate: Option<f64>,
    /// The last run's pass rate as reported: unknown where its counts are.
    shown: Option<f64>,
    /// The best pass rate of this iteration and the earlier ones (known ones only).
    best: Option<f64>,
    /// "N passed, N failed, N skipped" of the last run, or what is known instead.
    counts: String,
}

/// The verdict of one iteration, before it is written down.
struct Judgement {
    /// `pass`, `no_tests` or `fix_required`.
    verdict: &'static str,
    /// The score the verdict carries (a pass rate).
    score: Option<f64>,
    /// The one-line summary.
    summary: String,
    /// Warnings for `wisdom/issues.md`.
    warnings: Vec<String>,
    /// The fix iteration to ask for.
    fix: Option<FixRequest>,
}

/// A pass rate as the report writes it.
fn pct(r: f64) -> String {
    format!("{r:.1}%")
}

/// Adds up the runs: failures (deduplicated, by severity), the last pass rate and the best.
fn tally<'a>(runs: &'a [RunResult], earlier: &[Record]) -> Tally<'a> {
    let last = runs.last().expect("at least one run");
    let mut failures: Vec<Failure> = runs.iter().flat_map(|r| r.failures.clone()).collect();
    let mut seen = std::collections::BTreeSet::new();
    failures.retain(|f| seen.insert(f.name.clone()));
    failures.sort_by_key(|f| f.severity);
    let rate = last.pass_rate;
    let shown = last.shown_rate();
    let best = earlier
        .iter()
        .filter_map(|r| r.pass_rate)
        .chain(shown)
        .fold(None, |b: Option<f64>, r| Some(b.map_or(r, |b| b.max(r))));
    Tally {
        last,
        failures,
        rate,
        shown,
        best,
        counts: last.describe_counts(),
    }
}

/// The last run's counts and failing names (sorted), which two iterations are compared by.
fn result_set(last: &RunResult) -> ResultSet {
    ResultSet {
        passed: last.counts.passed,
        failed: last.counts.failed,
        failures: {
            let mut names: Vec<String> = last.failures.iter().map(|f| f.name.clone()).collect();
            names.sort();
            names
        },
    }
}

/// The verdict, score, summary, warnings and fix request `decision` stands for.
fn judge(t: &Tally, decision: Decision, iteration: u32, kind: Kind) -> Judgement {
    let (last, rate, best, counts) = (t.last, t.rate, t.best, &t.counts);
    let mut warnings = Vec::new();
    let (verdict, score, summary, fix) = match decision {
        Decision::Pass => (
            "pass",
            rate,
            format!(
                "tests pass: {counts} ({}) with {}",
                pct(rate.unwrap_or(100.0)),
                kind.name()
            ),
            None,
        ),
        // The runner printed no count: whatever its exit status, that shows nothing tested.
        Decision::NoTests if !last.counted && !said_no_tests(&last.ran) => {
            warnings.push(format!(
                "`{}` printed no test count ({}); no test was counted, the implementation is untested",
                last.ran.command,
                kind.name()
            ));
            (
                "no_tests",
                None,
                format!(
                    "no tests counted: `{}` exited 0 and printed no test count ({}); not a pass, the implementation is untested",
                    last.ran.command,
                    kind.name()
                ),
                None,
            )
        }
        Decision::NoTests => {
            warnings.push(format!(
                "`{}` ran no test; the implementation is untested",
                last.ran.command
            ));
            (
                "no_tests",
                None,
                format!(
                    "no tests ran: `{}` ran no test ({}); not a pass, the implementation is untested",
                    last.ran.command,
                    kind.name()
                ),
                None,
            )
        }
        Decision::Fix(strategy) => {
            let measured = match t.shown {
                Some(r) => format!("tests below {PASS_RATE_TARGET}%: {counts} ({})", pct(r)),
                None => format!("tests fail, {counts}"),
            };
            (
                "fix_required",
                t.shown,
                format!(
                    "{measured}; fix iteration {} ({})",
                    iteration + 1,
                    strategy.as_str()
                ),
                Some(FixRequest {
                    iteration,
                    strategy: strategy.as_str().into(),
                    pass_rate: t.shown.map(|r| (r * 10.0).round() / 10.0),
                    failures: report::fix_text(&t.failures, FIX_TEXT_BYTES),
                }),
            )
        }
        Decision::Stop(reason) => {
            let why = match reason {
                StopReason::MaxIterations => {
                    format!("the limit of {MAX_ITERATIONS} iterations is reached")
                }
                StopReason::Identical => {
                    format!("the last {IDENTICAL_RUNS} iterations gave identical results")
                }
            };
            let b = best.map_or("unknown".to_owned(), pct);
            warnings.push(format!(
                "tests still fail after iteration {iteration} ({counts}, best pass rate {b}): {why}; {} failure(s) left to fix by hand",
                t.failures.len()
            ));
            let measured = match t.shown {
                Some(_) => {
                    format!("tests below {PASS_RATE_TARGET}% after iteration {iteration}: {counts}")
                }
                None => format!("tests fail after iteration {iteration}, {counts}"),
            };
            (
                "fix_required",
                best,
                format!("{measured}; stopped, {why} (best {b})"),
                None,
            )
        }
    };
    Judgement {
        verdict,
        score,
        summary,
        warnings,
        fix,
    }
}

/// Whether the run's output or exit status says it found no test (rather than printing no
/// count).
fn said_no_tests(ran: &exec::Ran) -> bool {
    ran.exit_code == Some(5) || parse::says_no_tests(&ran.output)
}

/// Each run's log file (normalised, trimmed in the middle) and its record.
fn run_logs(runs: &[RunResult], iteration: u32) -> (Vec<(String, Vec<u8>)>, Vec<RunRecord>) {
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    let mut run_records = Vec::new();
    for r in runs {
        let log = format!("{RUNS}/{iteration}-{}.log", r.scope.as_str());
        files.push((
            log.clone(),
            exec::trim_middle(&parse::normalize(&r.ran.output), LOG_BYTES).into_bytes(),
        ));
        run_records.push(RunRecord {
            scope: r.scope.as_str().into(),
            command: r.ran.command.clone(),
            exit_code: r.ran.exit_code,
            timed_out: r.ran.timed_out,
            seconds: (r.ran.seconds * 100.0).round() / 100.0,
            passed: r.counted.then_some(r.counts.passed),
            failed: r.counted.then_some(r.counts.failed),
            skipped: r.counted.then_some(r.counts.skipped),
            counted: r.counted,
            results_from: r.source.name().into(),
            pass_rate: r.shown_rate().map(|p| (p * 10.0).round() / 10.0),
            log,
        });
    }
    (files, run_records)
}

/// The runs' warning lines, each once, at most `parse::MAX_WARNINGS`.
fn warning_lines(runs: &[RunResult]) -> Vec<String> {
    let mut w: Vec<String> = Vec::new();
    for line in runs.iter().flat_map(|r| r.warnings.iter()) {
        if !w.contains(line) && w.len() < parse::MAX_WARNINGS {
            w.push(line.clone());
        }
    }
    w
}

/// The five key findings: framework, last run, iteration, failures by severity, verdict.
fn key_findings(
    t: &Tally,
    iteration: u32,
    kind: Kind,
    setup: &Setup,
    low: &[String],
    verdict: &str,
    strategy: Option<Strategy>,
) -> Vec<String> {
    let bad = |s: Severity| t.failures.iter().filter(|f| f.severity == s).count();
    [
        format!("framework: {} ({})", kind.name(), setup.evidence),
        format!(
            "{} run: {}{}",
            t.last.scope.as_str(),
            t.counts,
            t.shown.map_or(String::new(), |r| format!(" ({})", pct(r)))
        ),
        format!(
            "iteration {iteration} of at most {MAX_ITERATIONS}; best pass rate {}",
            t.best.map_or("n/a".to_owned(), pct)
        ),
        format!(
            "failures: {} critical, {} high, {} medium; {} warning line(s)",
            bad(Severity::Critical),
            bad(Severity::High),
            bad(Severity::Medium),
            low.len()
        ),
        format!(
            "verdict: {verdict}{}",
            strategy.map_or(String::new(), |s| format!(", next fix {}", s.as_str()))
        ),
    ]
    .iter()
    .map(|f| excerpt(f, 98))
    .collect()
}

/// The quality result: completed unless the state update is invalid, with the verdict.
fn finish(
    judgement: Judgement,
    files: Vec<(String, Vec<u8>)>,
    state_update: StateUpdate,
) -> QualityResult {
    let Judgement {
        verdict,
        score,
        summary,
        warnings,
        fix,
    } = judgement;
    let outcome = match state_update.validate() {
        Ok(()) => Outcome::Completed,
        Err(e) => Outcome::Failed(e.to_string()),
    };
    QualityResult {
        output: TaskOutput {
            outcome,
            summary: summary.clone(),
            files,
            state_update,
        },
        verdict: Some(Verdict {
            verdict: verdict.into(),
            score: score.map(|s| (s * 10.0).round() / 10.0),
            summary,
        }),
        warnings,
        fix,
    }
}

/// No framework: completed, verdict `no_tests`, and a warning for `wisdom/issues.md`.
fn no_framework(input: &TaskInput, iteration: u32, ignored: &[String]) -> QualityResult {
    let looked = "Cargo.toml, pytest configuration, test_*.py, package.json with jest/vitest/mocha or a test script, go.mod";
    let summary = "no test framework found; nothing was tested".to_owned();
    let doc = format!(
        "# Test report: {} (iteration {iteration})\n\n**Verdict:** no_tests\n\nNo test framework was found in the code tree (looked for {looked}). Nothing was run: a test command named by an agent (`{PLAN}`, `{DISCOVERY}`) is not run unless it is the detected one.\n",
        input.task.id
    );
    let state_update = StateUpdate {
        key_findings: vec![
            "no test framework found in the code tree".into(),
            "verdict: no_tests".into(),
        ],
        decisions: std::iter::once(format!("looked for {looked}"))
            .chain(ignored.iter().cloned())
            .collect(),
        files_modified: vec![REPORT.into()],
        verification: "framework detection only; no command run".into(),
        tech_profile: None,
    };
    QualityResult {
        output: TaskOutput {
            outcome: Outcome::Completed,
            summary: summary.clone(),
            files: vec![(REPORT.into(), doc.into_bytes())],
            state_update,
        },
        verdict: Some(Verdict {
            verdict: "no_tests".into(),
            score: None,
            summary,
        }),
        warnings: vec![format!(
            "no test framework found (looked for {looked}); the implementation is untested"
        )],
        fix: None,
    }
}

/// The tester itself could not run.
fn failed(reason: String) -> QualityResult {
    QualityResult {
        output: TaskOutput {
            outcome: Outcome::Failed(reason.clone()),
            summary: format!("tests not run: {}", excerpt(&reason, 159)),
            files: Vec::new(),
            state_update: StateUpdate::default(),
        },
        verdict: None,
        warnings: Vec::new(),
        fix: None,
    }
}
