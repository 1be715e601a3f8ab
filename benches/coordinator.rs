//! Orchestration overhead per task: a 100-task pipeline run end to end with an agent that
//! does nothing, divided by 100. Everything but the agent is real: claims, result events,
//! message-bus notes, run records, the scheduling loop.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use git_tlv4::agents::{Agent, Outcome, StateUpdate, TaskInput, TaskOutput};
use git_tlv4::agents::roster::Roster;
use git_tlv4::coordinator::run::{self, RunEnd};
use git_tlv4::coordinator::{StartOptions, start};
use git_tlv4::store::Store;

/// Completes every task at once, with nothing to show.
struct Idle;

impl Agent for Idle {
    fn name(&self) -> &str {
        "idle"
    }
    fn run(&self, _input: &TaskInput) -> git_tlv4::Result<TaskOutput> {
        Ok(TaskOutput {
            outcome: Outcome::Completed,
            summary: "nothing".into(),
            files: Vec::new(),
            state_update: StateUpdate::default(),
        })
    }
}

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .args(args)
        .status()
        .expect("git runs")
        .success();
    assert!(ok, "git {args:?}");
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
    std::fs::write(
        dir.path().join(".tlv4/specs/pipelines.toml"),
        pipelines_toml(),
    )
    .unwrap();
    dir
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
                let end = run::run(&store, &sid, Roster::of_agent(Arc::new(Idle)), &mut |_| {}).unwrap();
                total += began.elapsed();
                assert!(matches!(end, RunEnd::Completed), "{end:?}");
            }
            total
        })
    });
    group.finish();
}

criterion_group!(benches, overhead);
criterion_main!(benches);
