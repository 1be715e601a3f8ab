//! Orchestration overhead per task: a 100-task pipeline run end to end with an agent that
//! does nothing, divided by 100. Everything but the agent is real: claims, result events,
//! message-bus notes, run records, the scheduling loop.
//!
//! Parallelism: 8 independent tasks whose agent sleeps 1 s, in process and as a real
//! `command` agent in task worktrees (create, snapshot, merge, remove): close to 1 s of wall
//! time each run means the 8 ran side by side.

// A bench or test binary reports to its terminal: it may print.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::Path;
mod common;
use common::git;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use git_tlv4::agents::roster::Roster;
use git_tlv4::agents::{Agent, Outcome, StateUpdate, TaskInput, TaskOutput};
use git_tlv4::coordinator::run::{self, RunEnd};
use git_tlv4::coordinator::{StartOptions, start};
use tlv4_store::store::Store;

/// Completes every task at once, with nothing to show.
struct Idle;

impl Agent for Idle {
    fn name(&self) -> &str {
        "idle"
    }
    fn run(&self, _input: &TaskInput) -> tlv4_core::Result<TaskOutput> {
        Ok(TaskOutput {
            outcome: Outcome::Completed,
            summary: "nothing".into(),
            files: Vec::new(),
            state_update: StateUpdate::default(),
        })
    }
}

/// Sleeps a second, then completes with nothing to show.
struct Sleeper;

impl Agent for Sleeper {
    fn name(&self) -> &str {
        "sleeper"
    }
    fn run(&self, input: &TaskInput) -> tlv4_core::Result<TaskOutput> {
        std::thread::sleep(Duration::from_secs(1));
        Idle.run(input)
    }
}

/// `n` independent executor tasks.
fn wide_toml(n: usize) -> String {
    let mut t = String::from(
        "schema = 1\n[role.executor]\nprefix = \"IMPL\"\ninner_loop = false\nsummary = \"x\"\n",
    );
    let mut list = Vec::new();
    for i in 1..=n {
        t.push_str(&format!(
            "[task.IMPL-{i:03}]\nrole = \"executor\"\nphase = \"implementation\"\npriority = \"P0\"\npurpose = \"p\"\nsuccess = \"s\"\nsteps = []\nexpected = \"e\"\nconstraints = \"c\"\n"
        ));
        list.push(format!("{{ id = \"IMPL-{i:03}\" }}"));
    }
    t.push_str(&format!(
        "[pipeline.bench]\nsummary = \"bench\"\ntasks = [{}]\n",
        list.join(", ")
    ));
    t
}

/// 100 executor tasks as 10 independent chains of 10.
fn pipelines_toml() -> String {
    let mut t = String::from(
        "schema = 1\n[role.executor]\nprefix = \"IMPL\"\ninner_loop = false\nsummary = \"x\"\n",
    );
    let mut list = Vec::new();
    for i in 1..=100 {
        t.push_str(&format!(
            "[task.IMPL-{i:03}]\nrole = \"executor\"\nphase = \"implementation\"\npriority = \"P0\"\npurpose = \"p\"\nsuccess = \"s\"\nsteps = []\nexpected = \"e\"\nconstraints = \"c\"\n"
        ));
        if i % 10 == 1 {
            list.push(format!("{{ id = \"IMPL-{i:03}\" }}"));
        } else {
            list.push(format!(
                "{{ id = \"IMPL-{i:03}\", blocked_by = [\"IMPL-{:03}\"] }}",
                i - 1
            ));
        }
    }
    t.push_str(&format!(
        "[pipeline.bench]\nsummary = \"bench\"\ntasks = [{}]\n",
        list.join(", ")
    ));
    t
}

fn repo() -> tempfile::TempDir {
    repo_with(&pipelines_toml())
}

fn repo_with(pipelines: &str) -> tempfile::TempDir {
    let root = if Path::new("/dev/shm").is_dir() {
        tempfile::tempdir_in("/dev/shm")
    } else {
        tempfile::tempdir()
    };
    let dir = root.expect("a temp dir");
    git(dir.path(), &["init", "-q"]);
    git(dir.path(), &["config", "user.name", "bench"]);
    git(dir.path(), &["config", "user.email", "bench@example.com"]);
    std::fs::write(dir.path().join("README.md"), "bench\n").unwrap();
    git(dir.path(), &["add", "README.md"]);
    git(dir.path(), &["commit", "-q", "-m", "init"]);
    std::fs::create_dir_all(dir.path().join(".tlv4/specs")).unwrap();
    std::fs::write(dir.path().join(".tlv4/specs/pipelines.toml"), pipelines).unwrap();
    dir
}

/// Runs the `bench` pipeline of a fresh repository with `roster` and returns the loop's time.
fn timed_run(pipelines: &str, roster: impl Fn(&Path) -> Roster, parallel: u32) -> Duration {
    let dir = repo_with(pipelines);
    let store = Store::discover(dir.path()).unwrap();
    let opts = StartOptions {
        pipeline: Some("bench".into()),
        max_parallel: Some(parallel),
        completion: Some("keep".into()),
        ..StartOptions::default()
    };
    let (sid, _) = start(&store, "bench run", &opts).unwrap();
    let roster = roster(dir.path());
    let began = Instant::now();
    let end = run::run(
        &store,
        &sid,
        roster,
        run::RunOptions::default(),
        &mut |_| {},
    )
    .unwrap();
    let took = began.elapsed();
    assert!(matches!(end, RunEnd::Completed), "{end:?}");
    took
}

fn parallel(c: &mut Criterion) {
    let mut group = c.benchmark_group("parallel");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(25));
    let wide = wide_toml(8);
    group.bench_function("8_tasks_sleep_1s_in_process", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| timed_run(&wide, |_| Roster::of_agent(Arc::new(Sleeper)), 8))
                .sum()
        })
    });
    // A shell agent: what is measured beyond the second is the tool's, not a Python start-up.
    let agent = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agents/sleep-agent");
    let config = format!(
        "[agents.sleeper]\ndriver = \"command\"\nprogram = \"{}\"\nenv = {{ SLEEP_SECONDS = \"1\" }}\n[roles]\nexecutor = \"sleeper\"\n",
        agent.display()
    );
    let config = tlv4_core::config::Config::parse("bench.toml", &config).unwrap();
    group.bench_function("8_tasks_sleep_1s_command_agent_in_worktrees", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| {
                    timed_run(
                        &wide,
                        |root| {
                            Roster::load(
                                &config,
                                &Default::default(),
                                root,
                                &git_tlv4::coordinator::roster_names(),
                                &git_tlv4::agents::replay::NoRecordings,
                            )
                            .expect("a roster")
                        },
                        8,
                    )
                })
                .sum()
        })
    });
    group.finish();
}

fn overhead(c: &mut Criterion) {
    let mut group = c.benchmark_group("orchestration");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    group.bench_function("100_tasks_idle_agent", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let dir = repo();
                let store = Store::discover(dir.path()).unwrap();
                let opts = StartOptions {
                    pipeline: Some("bench".into()),
                    max_parallel: Some(4),
                    completion: Some("keep".into()),
                    ..StartOptions::default()
                };
                let (sid, _) = start(&store, "bench run", &opts).unwrap();
                let began = Instant::now();
                let end = run::run(
                    &store,
                    &sid,
                    Roster::of_agent(Arc::new(Idle)),
                    run::RunOptions::default(),
                    &mut |_| {},
                )
                .unwrap();
                total += began.elapsed();
                assert!(matches!(end, RunEnd::Completed), "{end:?}");
            }
            total
        })
    });
    group.finish();
}

criterion_group!(benches, overhead, parallel);
criterion_main!(benches);
