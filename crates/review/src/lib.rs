//! Quality: code review of a diff — four scored dimensions, file:line findings, a verdict.
//!
//! The two trees are compared with gix (which files changed, renames included) and each
//! changed file with `similar` (which lines were added, under a deadline). Rules from
//! `specs/review-rules.toml` (data, overridable per repository) run over the added lines; the
//! code adds size checks, circular imports between changed modules, and the plan's acceptance
//! criteria matched by keyword overlap. Each of quality, security, architecture and
//! requirements starts at 100 and loses points per finding by severity. The verdict is BLOCK
//! with any critical finding, CONDITIONAL with high or medium ones, APPROVE otherwise — and
//! never APPROVE for an empty change, which implements nothing.

// Unit tests say on stderr why they skip (no sandbox, no tool); the library never prints.
#![cfg_attr(test, allow(clippy::print_stdout, clippy::print_stderr))]

mod checks;
mod context;
mod diff;
mod imports;
mod report;
mod requirements;
mod revision;
mod rules;
pub mod sarif;
mod scan;
mod syntax;
mod target;
#[cfg(test)]
mod tests;

pub use context::Context;
pub use diff::{ChangeKind, DiffAlgorithm, FileDiff};
pub use report::{markdown, note_json, text};
pub use requirements::{Coverage, Criterion, CriterionResult, Requirements};
pub use revision::RevisionAnalysis;
pub use rules::{
    Confidence, Dimension, OVERRIDE_PATH as RULES_OVERRIDE, RuleSet, Scoring, Severity,
};
pub use target::{
    Target, feedback, impl_revisions, looks_like_task, previous_of, task_change, task_requirements,
};

use std::collections::HashSet;
use std::sync::Mutex;
use std::time::Duration;

use tlv4_core::error::{Error, Result};
use tlv4_core::model::Verdict;
use tlv4_store::store::Store;

/// The notes ref review scores are written to.
pub const NOTES_REF: &str = tlv4_store::store::REVIEW_NOTES_REF;
/// The format of the review JSON (note and `--json`).
pub const SCHEMA: u32 = 1;
/// Paths never reviewed: the pipeline's own state.
const EXCLUDE: &[&str] = &[".tlv4/"];
/// The report a REVIEW task writes, relative to the pipeline folder.
pub const REPORT_PATH: &str = "artifacts/review-report.md";

/// How to review.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// The line-diff algorithm.
    pub algorithm: DiffAlgorithm,
    /// How long the line diff of one file may take before it approximates.
    pub deadline: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            algorithm: DiffAlgorithm::Myers,
            deadline: Duration::from_secs(2),
        }
    }
}

/// One thing the review found.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Finding {
    /// How bad it is.
    pub severity: Severity,
    /// Which score it lowers.
    pub dimension: Dimension,
    /// The file (new-side path; for requirements, the document the criterion is in).
    pub file: String,
    /// The 1-based new-side line, when it is about one line.
    pub line: Option<usize>,
    /// One line saying what is wrong.
    pub reason: String,
    /// The rule or check id.
    pub rule: String,
    /// How sure the review is.
    pub confidence: Confidence,
    /// The kind of code it is in, when that lowered its severity (test, example, build
    /// script, command-line program).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<Context>,
}

impl Finding {
    /// `file:line`, or `file`.
    pub fn location(&self) -> String {
        match self.line {
            Some(l) => format!("{}:{l}", self.file),
            None => self.file.clone(),
        }
    }
}

/// The verdict of a review.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Decision {
    /// Ready to merge: no findings above low.
    Approve,
    /// Can merge with tracking: high or medium findings, or nothing to review.
    Conditional,
    /// Must be fixed before merging: a critical finding.
    Block,
}

impl Decision {
    /// `APPROVE`, `CONDITIONAL` or `BLOCK`.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Approve => "APPROVE",
            Decision::Conditional => "CONDITIONAL",
            Decision::Block => "BLOCK",
        }
    }
}

/// Scores per dimension, 0–100, and their mean.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Scores {
    /// Quality.
    pub quality: u32,
    /// Security.
    pub security: u32,
    /// Architecture.
    pub architecture: u32,
    /// Requirements.
    pub requirements: u32,
    /// The mean of the four, one decimal.
    pub overall: f64,
}

impl Scores {
    /// The score of `dimension`.
    pub fn of(&self, dimension: Dimension) -> u32 {
        match dimension {
            Dimension::Quality => self.quality,
            Dimension::Security => self.security,
            Dimension::Architecture => self.architecture,
            Dimension::Requirements => self.requirements,
        }
    }
}

/// Findings per severity.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct Counts {
    /// Critical findings.
    pub critical: usize,
    /// High findings.
    pub high: usize,
    /// Medium findings.
    pub medium: usize,
    /// Low findings.
    pub low: usize,
}

/// One changed file as the report lists it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct FileSummary {
    /// New-side path.
    pub path: String,
    /// Old-side path of a rename or copy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_path: Option<String>,
    /// How it changed.
    pub status: ChangeKind,
    /// Lines added.
    pub added: usize,
    /// Lines removed.
    pub removed: usize,
    /// The line diff hit its deadline: its added lines (and findings) are approximate.
    pub approximate: bool,
    /// Why it was not reviewed line by line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

/// The requirements part of a review.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct RequirementsReport {
    /// Each criterion with its keyword overlap and band.
    pub criteria: Vec<CriterionResult>,
    /// The plan asks for tests.
    pub plan_asks_tests: bool,
    /// Some test code changed.
    pub tests_changed: bool,
    /// Some non-test code changed.
    pub code_changed: bool,
    /// Why there are no criteria, if there are none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A finished review.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Review {
    /// Format version of this document.
    pub schema: u32,
    /// What was reviewed, as named.
    pub label: String,
    /// Old side (commit or tree id).
    pub old: String,
    /// New side (commit or tree id).
    pub new: String,
    /// The line-diff algorithm.
    pub algorithm: DiffAlgorithm,
    /// The per-file diff deadline, in milliseconds.
    pub deadline_ms: u64,
    /// The rules file used.
    pub rules: String,
    /// The verdict.
    pub verdict: Decision,
    /// Scores per dimension and overall.
    pub scores: Scores,
    /// Findings per severity.
    pub counts: Counts,
    /// Nothing changed outside `.tlv4/`.
    pub empty: bool,
    /// The changed files.
    pub files: Vec<FileSummary>,
    /// Every finding, worst first, then by file and line.
    pub findings: Vec<Finding>,
    /// Acceptance criteria and tests.
    pub requirements: RequirementsReport,
    /// Revised tasks compared with what they revise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub revisions: Vec<RevisionAnalysis>,
    /// One line: the verdict and why.
    pub summary: String,
}

impl Review {
    /// The verdict as the coordinator records it.
    pub fn verdict(&self) -> Verdict {
        Verdict {
            verdict: self.verdict.as_str().into(),
            score: Some(self.scores.overall),
            summary: self.summary.clone(),
        }
    }

    /// Paths whose line diff hit the deadline.
    pub fn approximate(&self) -> Vec<&str> {
        self.files
            .iter()
            .filter(|f| f.approximate)
            .map(|f| f.path.as_str())
            .collect()
    }
}

/// The changed files between the two trees of `target` (outside `.tlv4/`), line-diffed.
pub fn diff_target(
    repo: &gix::Repository,
    target: &Target,
    rules: &RuleSet,
    opts: &Options,
) -> Result<Vec<FileDiff>> {
    let renames = diff::Renames::of(repo);
    let changed = diff::changed_files(repo, target.old_tree, target.new_tree, EXCLUDE, renames)?;
    let dopts = diff_options(rules, opts);
    // The scan's expressions are compiled while the files are read and diffed.
    let mut files = std::thread::scope(|s| {
        if !changed.is_empty() {
            s.spawn(|| scan::prepare(rules, changed.iter().map(|c| c.path())));
        }
        pipeline(repo, &changed, &dopts, |mut file| {
            file.diff_lines(&dopts);
            Ok(file)
        })
    })?;
    // Added and deleted files that are alike pair into renames (their diffs, whole-file
    // ones, cheap, are made again).
    if renames == diff::Renames::Similar {
        diff::pair_renames(&mut files, &dopts);
    }
    Ok(files)
}

fn diff_options(rules: &RuleSet, opts: &Options) -> diff::DiffOptions {
    diff::DiffOptions {
        algorithm: opts.algorithm,
        deadline: opts.deadline,
        max_file_bytes: rules.limits.max_file_bytes,
    }
}

/// Reviews `target` with `rules`, holding it against `reqs`.
pub fn analyze(
    repo: &gix::Repository,
    rules: &RuleSet,
    target: &Target,
    reqs: &Requirements,
    opts: &Options,
) -> Result<Review> {
    let mut files = diff_target(repo, target, rules, opts)?;
    // New code is what the change added, less what it only moved or re-indented: a line
    // whose whitespace-normalised text the change removed somewhere.
    let moved: diff::Moved = files
        .iter()
        .flat_map(|f| f.removed_hashes.iter().copied())
        .collect();
    for f in &mut files {
        f.mark_new(&moved);
    }
    // The largest files first, so that one large file does not leave a core idle at the end.
    // Imports are read (each such file parsed whole) only when the change adds one: a cycle
    // is reported only where an added import closes it.
    let imports = files.iter().any(|f| {
        rules
            .language_of(&f.path)
            .is_some_and(|l| rules.languages[l].resolve.is_some())
            && scan::adds_an_import(f)
    });
    let scans = parallel_map(
        &files,
        |f| f.new_text.len(),
        |f| scan::scan_file(rules, f, imports),
    );
    let mut findings: Vec<Finding> = scans
        .iter()
        .flat_map(|s| s.findings.iter().cloned())
        .collect();
    findings.extend(imports::circular(rules, &files, &scans));

    let empty = files.is_empty();
    let mut req = RequirementsReport {
        plan_asks_tests: reqs.plan_asks_tests,
        tests_changed: scans.iter().any(|s| s.touches_tests),
        code_changed: scans.iter().any(|s| s.new_code_lines > 0),
        note: reqs.note.clone(),
        ..RequirementsReport::default()
    };
    if !reqs.criteria.is_empty() {
        let mut words: HashSet<String> = HashSet::new();
        for f in &files {
            words.extend(requirements::keywords(&f.path));
            for r in &f.added {
                words.extend(requirements::keywords(f.text_of(r)));
            }
        }
        let (results, found) = requirements::coverage(rules, reqs, &words);
        req.criteria = results;
        findings.extend(found);
    }
    if !empty && !req.tests_changed {
        let new_code: usize = scans.iter().map(|s| s.new_code_lines).sum();
        let check = if req.plan_asks_tests {
            rules.check(rules::CheckId::TestsMissing)
        } else if req.code_changed && new_code >= rules.limits.untested_lines {
            rules.check(rules::CheckId::TestsUntouched)
        } else {
            None
        };
        if let Some(check) = check {
            findings.push(Finding {
                severity: check.severity,
                dimension: check.dimension,
                // The first changed code file, as the place the tests are missing for.
                file: files
                    .iter()
                    .zip(&scans)
                    .find(|(_, s)| s.new_code_lines > 0)
                    .or_else(|| files.iter().zip(&scans).find(|(f, _)| f.added_lines > 0))
                    .map_or_else(String::new, |(f, _)| f.path.clone()),
                line: None,
                reason: check.render(&[]),
                rule: check.id.as_str().into(),
                // Code without a test change is a hint; a plan that asks for tests is not.
                confidence: if check.id == rules::CheckId::TestsUntouched {
                    Confidence::Low
                } else {
                    Confidence::High
                },
                context: None,
            });
        }
    }
    if empty && let Some(check) = rules.check(rules::CheckId::EmptyChange) {
        findings.push(Finding {
            severity: check.severity,
            dimension: check.dimension,
            file: String::new(),
            line: None,
            reason: check.render(&[]),
            rule: check.id.as_str().into(),
            confidence: Confidence::High,
            context: None,
        });
    }
    findings.sort_by(|a, b| {
        (a.severity, &a.file, a.line, &a.rule).cmp(&(b.severity, &b.file, b.line, &b.rule))
    });

    let scores = score(&rules.scoring, &findings, empty);
    let mut counts = Counts::default();
    for f in &findings {
        match f.severity {
            Severity::Critical => counts.critical += 1,
            Severity::High => counts.high += 1,
            Severity::Medium => counts.medium += 1,
            Severity::Low => counts.low += 1,
        }
    }
    let verdict = decide(&findings, empty);
    let summary = summary(verdict, &scores, &counts, files.len(), empty);
    Ok(Review {
        schema: SCHEMA,
        label: target.label.clone(),
        old: target.old.to_string(),
        new: target.new.to_string(),
        algorithm: opts.algorithm,
        deadline_ms: opts.deadline.as_millis() as u64,
        rules: rules.file.clone(),
        verdict,
        scores,
        counts,
        empty,
        files: files
            .iter()
            .zip(&scans)
            .map(|(f, s)| FileSummary {
                path: f.path.clone(),
                old_path: f.old_path.clone(),
                status: f.kind,
                added: f.added_lines,
                removed: f.removed_lines,
                approximate: f.approximate,
                skipped: f.skipped.clone().or_else(|| s.skipped.clone()),
            })
            .collect(),
        findings,
        requirements: req,
        revisions: Vec::new(),
        summary,
    })
}

/// Each dimension starts at 100 and loses its severity's weight per finding, down to 0; an
/// empty change scores requirements 0. Overall is the mean of the four.
pub fn score(scoring: &Scoring, findings: &[Finding], empty: bool) -> Scores {
    let of = |d: Dimension| {
        let lost: u32 = findings
            .iter()
            .filter(|f| f.dimension == d)
            .map(|f| match f.confidence {
                Confidence::Low => scoring.weight(f.severity) / 2,
                _ => scoring.weight(f.severity),
            })
            .sum();
        100u32.saturating_sub(lost)
    };
    let requirements = if empty {
        0
    } else {
        of(Dimension::Requirements)
    };
    let (quality, security, architecture) = (
        of(Dimension::Quality),
        of(Dimension::Security),
        of(Dimension::Architecture),
    );
    let mean = f64::from(quality + security + architecture + requirements) / 4.0;
    Scores {
        quality,
        security,
        architecture,
        requirements,
        overall: (mean * 10.0).round() / 10.0,
    }
}

/// BLOCK with a critical finding of high confidence; CONDITIONAL with any other critical,
/// high or medium finding that is not of low confidence, or when the change is empty;
/// APPROVE otherwise. Low-confidence findings are hints: they never move the verdict.
pub fn decide(findings: &[Finding], empty: bool) -> Decision {
    let counts = |f: &&Finding| f.confidence != Confidence::Low && f.severity != Severity::Low;
    if findings
        .iter()
        .any(|f| f.severity == Severity::Critical && f.confidence == Confidence::High)
    {
        Decision::Block
    } else if findings.iter().any(|f| counts(&f)) || empty {
        Decision::Conditional
    } else {
        Decision::Approve
    }
}

fn summary(
    verdict: Decision,
    scores: &Scores,
    counts: &Counts,
    files: usize,
    empty: bool,
) -> String {
    if empty {
        return format!(
            "{}: the change is empty, nothing implements the plan (requirements 0, overall {})",
            verdict.as_str(),
            scores.overall
        );
    }
    format!(
        "{}: overall {} — {} critical, {} high, {} medium, {} low in {} file{}",
        verdict.as_str(),
        scores.overall,
        counts.critical,
        counts.high,
        counts.medium,
        counts.low,
        files,
        if files == 1 { "" } else { "s" }
    )
}

/// `repo` with a delta-base cache fit for reading many blobs, unless the user configured one.
///
/// gix's default pack cache keeps 64 delta bases; a change touching hundreds of files in a
/// packed repository walks long delta chains, and re-inflating their bases dominates the
/// review. git's own default (`core.deltaBaseCacheLimit`) is 96 MiB.
fn for_blob_reads(repo: &gix::Repository) -> gix::Repository {
    let mut repo = repo.clone();
    if repo
        .config_snapshot()
        .integer("core.deltaBaseCacheLimit")
        .is_none()
    {
        let mut config = repo.config_snapshot_mut();
        let set = config
            .set_value(&gix::config::tree::Core::DELTA_BASE_CACHE_LIMIT, "64m")
            .is_ok();
        if set {
            // Only the in-memory snapshot changes; nothing is written to the user's config.
            let _ = config.commit();
        }
    }
    repo
}

/// `f` of each of `items`, on one worker thread per core, taken by decreasing `cost`; the
/// results in the order of `items`.
fn parallel_map<T: Sync, R: Send>(
    items: &[T],
    cost: impl Fn(&T) -> usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let workers = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(8)
        .min(items.len());
    if workers <= 1 {
        return items.iter().map(f).collect();
    }
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(cost(&items[i])));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                loop {
                    let at = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(&i) = order.get(at) else { break };
                    let item = &items[i];
                    let r = f(item);
                    results
                        .lock()
                        .expect("no worker panics while holding the lock")[i] = Some(r);
                }
            });
        }
    });
    results
        .into_inner()
        .expect("no worker panics while holding the lock")
        .into_iter()
        .map(|r| r.expect("every item was processed"))
        .collect()
}

/// Reads the changed files in order on this thread (one repository handle, one delta-base
/// cache: delta chains are decoded once) and hands each to `process` on worker threads, one per
/// core, so that reading and diffing overlap. Keeps the order; the first error wins.
fn pipeline<R: Send>(
    repo: &gix::Repository,
    changed: &[diff::Changed],
    opts: &diff::DiffOptions,
    process: impl Fn(FileDiff) -> Result<R> + Sync,
) -> Result<Vec<R>> {
    let repo = for_blob_reads(repo);
    let workers = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(8);
    if workers <= 1 || changed.len() < 8 {
        return changed
            .iter()
            .map(|c| process(diff::read_file(&repo, c, opts)?))
            .collect();
    }
    let (send, receive) = std::sync::mpsc::sync_channel::<(usize, Result<FileDiff>)>(workers * 4);
    let receive = Mutex::new(receive);
    let results: Mutex<Vec<Option<Result<R>>>> =
        Mutex::new((0..changed.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                loop {
                    let next = receive
                        .lock()
                        .expect("no worker panics while holding the lock")
                        .recv();
                    let Ok((i, file)) = next else { break };
                    let result = file.and_then(&process);
                    results
                        .lock()
                        .expect("no worker panics while holding the lock")[i] = Some(result);
                }
            });
        }
        for (i, c) in changed.iter().enumerate() {
            if send.send((i, diff::read_file(&repo, c, opts))).is_err() {
                break;
            }
        }
        drop(send);
    });
    results
        .into_inner()
        .expect("no worker panics while holding the lock")
        .into_iter()
        .map(|r| r.expect("every file was processed"))
        .collect()
}

/// Compares the change of revision task `task` with the change of the task it revises, both
/// looked up in the session history from `tip` (the session tip by default).
pub fn revision_analysis(
    store: &Store,
    sid: &tlv4_core::model::SessionId,
    tip: Option<gix::ObjectId>,
    task: &tlv4_core::model::Task,
    rules: &RuleSet,
    opts: &Options,
) -> Result<RevisionAnalysis> {
    let id = task.id.as_str();
    let previous =
        previous_of(id).ok_or_else(|| Error::Invalid(format!("task `{id}` is not a revision")))?;
    let repo = store.repo();
    let new = task_change(store, sid, id, tip)?
        .ok_or_else(|| Error::Invalid(format!("task `{id}` has no completed change")))?;
    let new_files = diff_target(repo, &new, rules, opts)?;
    let old_files = match task_change(store, sid, &previous, tip)? {
        Some(t) => Some(diff_target(repo, &t, rules, opts)?),
        None => None,
    };
    Ok(revision::compare(
        id,
        &previous,
        &feedback(&task.description),
        old_files.as_deref(),
        &new_files,
        opts.algorithm,
        opts.deadline,
    ))
}
