//! Benchmark of the code review against git's own diff.
//!
//! The change: 200 files of 250 lines each (50,000 lines, Python-like so the rules have real
//! lines to look at), with about 2% of the lines changed — 5 lines per file, a mix of edits
//! and insertions. Both commits are made with the git CLI in a throw-away repository (on
//! `/dev/shm` when it exists, so disk noise stays out of the numbers) and packed.
//!
//! * `review/git_diff_stat_patience`: `git diff --stat --patience OLD NEW`, spawned.
//! * `review/tlv4_patience` and `review/tlv4_myers`: what one `git tlv4 review OLD..NEW`
//!   does in-process — open the repository, load and compile the rules, resolve the range,
//!   diff the trees and every file, apply the rules and score.
//!
//! The project aims at the review taking no more than twice git's time. After criterion's
//! report, the medians of a separate run (the three jobs interleaved, round by round) and
//! their ratios are printed.
//!
//! Run with `cargo bench --bench review`.
//!
//! A real range can be measured the same way: set `TLV4_BENCH_REVIEW_REPO` to a clone with a
//! working tree and `TLV4_BENCH_REVIEW_RANGE` to `OLD..NEW` (e.g. a release-to-release range
//! of about 30,000 changed lines); its medians and ratios are printed after the synthetic
//! ones. The clone is only read.

// A bench or test binary reports to its terminal: it may print.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod common;

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use criterion::Criterion;
use tlv4_review::{DiffAlgorithm, Options, Requirements, RuleSet, Target, analyze};

const FILES: usize = 200;
const LINES: usize = 250;
/// Lines changed per file (2% of 250).
const CHANGED_PER_FILE: usize = 5;

fn git(dir: &Path, args: &[&str]) -> String {
    let who = [
        "-c",
        "user.name=bench",
        "-c",
        "user.email=bench@example.com",
    ];
    common::git_output(dir, &[&who[..], args].concat())
}

/// Line `i` of file `f`, old version: ordinary code, a little different in every file.
fn line(f: usize, i: usize) -> String {
    match i % 10 {
        0 => format!("def handler_{f}_{i}(request, limit={i}):\n"),
        1 => format!("    \"\"\"Handle request {i} of module {f}.\"\"\"\n"),
        2 => format!(
            "    items = fetch_items(request, limit, offset={})\n",
            f * i
        ),
        3 => format!("    total_{i} = sum(item.value for item in items)\n"),
        4 => format!("    if total_{i} > {}:\n", f + i),
        5 => format!("        log_event('overflow', module={f}, line={i})\n"),
        6 => format!("        return respond(request, total_{i} - {f})\n"),
        7 => "    for item in items:\n".to_owned(),
        8 => format!("        item.mark_seen(batch={})\n", i / 10),
        _ => format!("    return respond(request, total_{i})\n"),
    }
}

/// Makes the repository with the two commits; returns (dir, old, new).
fn setup(root: &Path) -> (PathBuf, String, String) {
    let dir = root.join("repo");
    std::fs::create_dir_all(&dir).expect("mkdir");
    git(&dir, &["init", "-q", "-b", "main"]);
    let path = |f: usize| dir.join(format!("pkg{}/module_{f:03}.py", f % 20));
    for f in 0..FILES {
        let text: String = (0..LINES).map(|i| line(f, i)).collect();
        std::fs::create_dir_all(path(f).parent().expect("a parent")).expect("mkdir");
        std::fs::write(path(f), text).expect("write");
    }
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-q", "-m", "old"]);
    let old = git(&dir, &["rev-parse", "HEAD"]).trim().to_owned();
    for f in 0..FILES {
        let mut lines: Vec<String> = (0..LINES).map(|i| line(f, i)).collect();
        // Three edits and two insertions, spread over the file (5 changed lines, 2%).
        for k in 0..CHANGED_PER_FILE {
            let at = (k * LINES / CHANGED_PER_FILE + f * 7) % LINES;
            if k % 2 == 0 {
                lines[at] = format!("    audit(request, module={f}, step={k})  # changed\n");
            } else {
                lines.insert(
                    at,
                    format!("    validate(request, strict=True, step={k})\n"),
                );
            }
        }
        std::fs::write(path(f), lines.concat()).expect("write");
    }
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-q", "-m", "new"]);
    let new = git(&dir, &["rev-parse", "HEAD"]).trim().to_owned();
    git(&dir, &["gc", "-q"]);
    (dir, old, new)
}

fn git_diff_stat(dir: &Path, old: &str, new: &str) {
    let status = Command::new("git")
        .current_dir(dir)
        .args(["diff", "--stat", "--patience", old, new])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("cannot run git");
    assert!(status.success());
}

/// One review as `git tlv4 review OLD..NEW` does it, without printing.
fn tlv4_review(dir: &Path, range: &str, algorithm: DiffAlgorithm) -> usize {
    let repo = gix::open(dir).expect("opens");
    let rules = RuleSet::load(repo.workdir()).expect("rules");
    let target = Target::range(&repo, range).expect("range");
    let opts = Options {
        algorithm,
        deadline: Duration::from_secs(2),
    };
    let review =
        analyze(&repo, &rules, &target, &Requirements::none("bench"), &opts).expect("review");
    review.findings.len()
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// Medians of `runs` rounds, each round running every job once in turn, so that a change in
/// the machine's load touches all of them alike.
fn interleaved(runs: usize, jobs: &mut [&mut dyn FnMut()]) -> Vec<Duration> {
    for job in jobs.iter_mut() {
        job();
    }
    let mut samples = vec![Vec::with_capacity(runs); jobs.len()];
    for _ in 0..runs {
        for (job, out) in jobs.iter_mut().zip(&mut samples) {
            let t = Instant::now();
            job();
            out.push(t.elapsed());
        }
    }
    samples.into_iter().map(median).collect()
}

fn main() {
    common::hermetic_env();
    let root = common::temp_root("tlv4-bench-review-");
    let (dir, old, new) = setup(root.path());
    let range = format!("{old}..{new}");

    // The review sees what git sees.
    let stat = git(&dir, &["diff", "--shortstat", "--patience", &old, &new]);
    let repo = gix::open(&dir).expect("opens");
    let review = analyze(
        &repo,
        &RuleSet::builtin().expect("rules"),
        &Target::range(&repo, &range).expect("range"),
        &Requirements::none("bench"),
        &Options::default(),
    )
    .expect("review");
    let added: usize = review.files.iter().map(|f| f.added).sum();
    let removed: usize = review.files.iter().map(|f| f.removed).sum();
    eprintln!(
        "change: {} files, +{added} -{removed} (git: {}), {} findings, verdict {}",
        review.files.len(),
        stat.trim(),
        review.findings.len(),
        review.verdict.as_str()
    );
    assert!(stat.contains(&format!("{added} insertion")), "{stat}");

    let mut c = Criterion::default()
        .sample_size(30)
        .measurement_time(Duration::from_secs(8))
        .configure_from_args();
    {
        let mut g = c.benchmark_group("review");
        g.bench_function("git_diff_stat_patience", |b| {
            b.iter(|| git_diff_stat(&dir, &old, &new))
        });
        g.bench_function("tlv4_patience", |b| {
            b.iter(|| black_box(tlv4_review(&dir, &range, DiffAlgorithm::Patience)))
        });
        g.bench_function("tlv4_myers", |b| {
            b.iter(|| black_box(tlv4_review(&dir, &range, DiffAlgorithm::Myers)))
        });
        g.finish();
    }
    c.final_summary();

    let runs = 41;
    let medians = interleaved(
        runs,
        &mut [
            &mut || git_diff_stat(&dir, &old, &new),
            &mut || {
                black_box(tlv4_review(&dir, &range, DiffAlgorithm::Patience));
            },
            &mut || {
                black_box(tlv4_review(&dir, &range, DiffAlgorithm::Myers));
            },
        ],
    );
    report(runs, &medians);

    if let (Ok(repo), Ok(range)) = (
        std::env::var("TLV4_BENCH_REVIEW_REPO"),
        std::env::var("TLV4_BENCH_REVIEW_RANGE"),
    ) {
        let dir = PathBuf::from(repo);
        let (old, new) = range
            .split_once("..")
            .expect("TLV4_BENCH_REVIEW_RANGE is OLD..NEW");
        let stat = git(&dir, &["diff", "--shortstat", "--patience", old, new]);
        eprintln!("real range {range} in {}: {}", dir.display(), stat.trim());
        let runs = 15;
        let medians = interleaved(
            runs,
            &mut [
                &mut || git_diff_stat(&dir, old, new),
                &mut || {
                    black_box(tlv4_review(&dir, &range, DiffAlgorithm::Patience));
                },
                &mut || {
                    black_box(tlv4_review(&dir, &range, DiffAlgorithm::Myers));
                },
            ],
        );
        report(runs, &medians);
    }
}

/// Prints the medians of git, the Patience review and the Myers review, with their ratios.
fn report(runs: usize, medians: &[Duration]) {
    let (git_median, patience, myers) = (medians[0], medians[1], medians[2]);
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    eprintln!("medians of {runs} interleaved rounds:");
    eprintln!("  git diff --stat --patience  {:8.2} ms", ms(git_median));
    eprintln!(
        "  tlv4 review --patience      {:8.2} ms  ({:.2}x git)",
        ms(patience),
        ms(patience) / ms(git_median)
    );
    eprintln!(
        "  tlv4 review (myers)         {:8.2} ms  ({:.2}x git)",
        ms(myers),
        ms(myers) / ms(git_median)
    );
}
