//! What the sandbox adds to starting a program: `process::run` of `/bin/true`, plain, against
//! the same with an agent's policy built for it (the Landlock ruleset and the seccomp filter,
//! made in the parent for each start, as an agent run does) and applied between fork and exec,
//! with and without the reaper (`git-tlv4 __contain`, which must be built: `cargo build`).
//!
//! Run with `cargo bench --bench sandbox`; the medians of 200 starts and the ratios are
//! printed.
//!
//! Baseline (2026-12-07, 2 cores, Landlock ABI 7, other builds running beside it):
//!
//! ```text
//!   plain                          1.984 ms
//!   Landlock + seccomp             2.482 ms (1.25×)
//!   Landlock + seccomp + reaper    8.185 ms (4.13×)
//! ```
//!
//! The reaper's cost is one more exec of `git-tlv4`: some 6 ms on an agent run of seconds.

// A bench or test binary reports to its terminal: it may print.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tlv4_core::process::{Invocation, run};
use tlv4_core::sandbox::{AgentPlaces, for_agent};

const RUNS: usize = 200;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn timed(mut f: impl FnMut()) -> Duration {
    for _ in 0..10 {
        f();
    }
    median(
        (0..RUNS)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed()
            })
            .collect(),
    )
}

fn main() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let home = tempfile::tempdir().expect("a temporary directory");
    let path = std::env::var("PATH").unwrap_or_default();
    let places = AgentPlaces {
        workdir: dir.path(),
        writes: true,
        home: home.path(),
        scratch: home.path(),
        program: Path::new("/bin/true"),
        path: &path,
        values: Vec::new(),
        writes_more: Vec::new(),
        reads_more: Vec::new(),
    };
    let start = |policy: Option<tlv4_core::sandbox::Policy>| {
        let mut inv = Invocation::new("/bin/true", dir.path());
        inv.sandbox = policy.map(|p| Arc::new(p.prepare().expect("the rules")));
        let out = run(&inv).expect("it runs");
        assert_eq!(out.code, Some(0));
    };
    let plain = timed(|| start(None));
    let landlock = timed(|| {
        let mut p = for_agent(&places);
        p.contain = false;
        start(Some(p));
    });
    let reaper = tlv4_core::sandbox::contain::reaper().is_some();
    let full = timed(|| start(Some(for_agent(&places))));
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "sandbox level here: {}",
        tlv4_core::sandbox::level().describe()
    );
    println!("medians of {RUNS} starts of /bin/true through process::run");
    println!("  plain                        {:>7.3} ms", ms(plain));
    println!(
        "  Landlock + seccomp           {:>7.3} ms ({:.2}×)",
        ms(landlock),
        ms(landlock) / ms(plain)
    );
    println!(
        "  Landlock + seccomp + reaper  {:>7.3} ms ({:.2}×){}",
        ms(full),
        ms(full) / ms(plain),
        if reaper {
            ""
        } else {
            " (no git-tlv4 built: no reaper)"
        }
    );
}
