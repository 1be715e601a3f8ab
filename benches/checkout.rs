//! A task's checkout on a large repository: leased from the pool against `git worktree add`.
//!
//! For each size (30,000 and 100,000 files by default; `TLV4_BENCH_FILES=30000,100000`), a
//! repository of that many small source files (100 per directory) and a chain of session
//! commits, each changing two files and adding one, as an agent's merged work would. Then,
//! for commit after commit of the chain:
//!
//! * `tlv4`: [`TaskWorktree::create`] of a new task at that commit — the task branch, a kept
//!   checkout leased from the pool and moved there (`checkout -f` writes only what differs,
//!   `clean`), the lock — and [`TaskWorktree::remove`] (untimed: it gives the checkout back);
//!   the first lease, which makes the slot, is not counted;
//! * `test`: [`ScratchCheckout::create`] at that commit, the tester's checkout, the same way;
//! * `git`: `git worktree add --detach <dir> <commit>`, what a fresh checkout per task costs,
//!   and `git worktree remove --force` (untimed).
//!
//! The medians and the ratios tlv4 / git are printed. Repositories live under `/dev/shm` when
//! it exists, with git hermetic (no system or global config).
//!
//! Run with `cargo bench --bench checkout`.
//!
//! Baseline (2026-12-07, main at the commit that added this bench, 2 cores, `/dev/shm`, other
//! builds running beside it):
//!
//! ```text
//!   30000 files  git worktree add  1200.6 ms  task checkout    81.5 ms (0.068×)  test checkout    84.0 ms (0.070×)
//!  100000 files  git worktree add  4005.3 ms  task checkout   248.6 ms (0.062×)  test checkout   250.6 ms (0.063×)
//! ```

// A bench or test binary reports to its terminal: it may print.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use git_tlv4::coordinator::{StartOptions, start};
use tlv4_core::model::TaskId;
use tlv4_store::store::Store;
use tlv4_store::worktree::{ScratchCheckout, TaskWorktree};

/// Files per directory of the benchmark repositories.
const PER_DIR: usize = 100;
/// Measured checkouts per side and size.
const RUNS: usize = 7;

use common::git_output as git;

/// A repository `root/name` of `files` small source files, committed, and a chain of
/// `RUNS + 1` commits on top, each changing two files and adding one. Returns its directory
/// and the chain's commits.
fn new_repo(root: &Path, name: &str, files: usize) -> (PathBuf, Vec<String>) {
    let dir = root.join(name);
    std::fs::create_dir(&dir).expect("cannot create the repository directory");
    git(&dir, &["init", "-q", "-b", "main"]);
    for (key, value) in [
        ("user.name", "bench"),
        ("user.email", "bench@example.com"),
        ("gc.auto", "0"),
    ] {
        git(&dir, &["config", key, value]);
    }
    for n in 0..files {
        let sub = dir.join(format!("src/d{:04}", n / PER_DIR));
        if n % PER_DIR == 0 {
            std::fs::create_dir_all(&sub).expect("cannot create a directory");
        }
        let body: String = (0..12)
            .map(|l| format!("pub fn f{n}_{l}() -> u32 {{ {l} }}\n"))
            .collect();
        std::fs::write(sub.join(format!("m{n}.rs")), body).expect("cannot write a file");
    }
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-q", "-m", "initial"]);
    let mut chain = Vec::new();
    for i in 0..=RUNS {
        let d = (i * 37) % (files / PER_DIR);
        for f in 0..2 {
            let n = d * PER_DIR + f;
            let path = dir.join(format!("src/d{d:04}/m{n}.rs"));
            let mut text = std::fs::read_to_string(&path).expect("cannot read a file");
            text.push_str(&format!("// task {i}\n"));
            std::fs::write(&path, text).expect("cannot write a file");
        }
        std::fs::write(
            dir.join(format!("src/d{d:04}/new_{i}.rs")),
            format!("pub fn task_{i}() {{}}\n"),
        )
        .expect("cannot write a file");
        git(&dir, &["add", "-A"]);
        git(&dir, &["commit", "-q", "-m", &format!("task {i}")]);
        chain.push(git(&dir, &["rev-parse", "HEAD"]).trim().to_owned());
    }
    (dir, chain)
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn one_size(root: &Path, files: usize) {
    let started = Instant::now();
    let (dir, chain) = new_repo(root, &format!("repo-{files}"), files);
    eprintln!(
        "{files} files: repository made in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let store = Store::discover(&dir).expect("a store");
    let opts = StartOptions {
        pipeline: Some("impl-only".into()),
        no_supervision: true,
        ..Default::default()
    };
    let (sid, _) = start(&store, "benchmark checkouts", &opts).expect("a session");
    let oid = |hex: &str| gix::ObjectId::from_hex(hex.as_bytes()).expect("an object id");

    // The task pool: the first lease makes the slot, the others move it along the chain.
    let mut task = Vec::new();
    for (i, commit) in chain.iter().enumerate() {
        let id: TaskId = format!("IMPL-{i:03}").parse().expect("a task id");
        let t = Instant::now();
        let wt = TaskWorktree::create(&store, &sid, &id, oid(commit)).expect("a checkout");
        let took = t.elapsed();
        assert_eq!(
            git(wt.path(), &["rev-parse", "HEAD"]).trim(),
            commit.as_str(),
            "the checkout is at its commit"
        );
        wt.remove().expect("given back");
        if i > 0 {
            task.push(took);
        }
    }
    let mut test = Vec::new();
    for (i, commit) in chain.iter().enumerate() {
        let t = Instant::now();
        let co = ScratchCheckout::create(&store, oid(commit), "TEST-001").expect("a checkout");
        let took = t.elapsed();
        drop(co);
        if i > 0 {
            test.push(took);
        }
    }
    let mut plain = Vec::new();
    for (i, commit) in chain.iter().enumerate() {
        let wt = root.join(format!("wt-{files}-{i}"));
        let wt = wt.to_str().expect("UTF-8");
        let t = Instant::now();
        git(&dir, &["worktree", "add", "-q", "--detach", wt, commit]);
        let took = t.elapsed();
        git(&dir, &["worktree", "remove", "--force", wt]);
        if i > 0 {
            plain.push(took);
        }
    }
    let (task, test, plain) = (median(task), median(test), median(plain));
    println!(
        "{files:>7} files  git worktree add {:>10}  task checkout {:>10} ({:.3}×)  test checkout {:>10} ({:.3}×)",
        ms(plain),
        ms(task),
        task.as_secs_f64() / plain.as_secs_f64(),
        ms(test),
        test.as_secs_f64() / plain.as_secs_f64(),
    );
}

fn main() {
    common::hermetic_env();
    let root = common::temp_root("tlv4-bench-checkout-");
    // SAFETY: still single-threaded.
    unsafe { std::env::set_var("TMPDIR", root.path()) };
    let sizes: Vec<usize> = std::env::var("TLV4_BENCH_FILES")
        .unwrap_or_else(|_| "30000,100000".to_owned())
        .split(',')
        .map(|s| {
            s.trim()
                .parse()
                .expect("TLV4_BENCH_FILES: sizes, comma-separated")
        })
        .collect();
    println!("medians of {RUNS} checkouts, each at the next commit of a session's chain");
    for files in sizes {
        one_size(root.path(), files);
    }
}
