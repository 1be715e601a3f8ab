//! The cost of one worker's checkout, from start to merge, on a repository of ~500 files.
//!
//! * `task/tlv4`: [`TaskWorktree::create`] (branch + `git worktree add` + lock), three files
//!   written (two changed, one new), [`TaskWorktree::snapshot`] (status, path checks, `git
//!   add`, `git commit`), [`merge_task`] (gix, in memory), the merge event
//!   ([`Store::transact`] with `Txn::merge`) and [`TaskWorktree::remove`].
//! * `task/git_cli`: the same work done the usual way with the git CLI: `git worktree add -b`,
//!   the same three files, `git add -A`, `git commit`, `git merge --no-ff` in a scratch
//!   worktree of a session branch (set up once, outside the measurement), `git worktree
//!   remove`.
//!
//! Both start every task from the current session tip, so both sessions grow by one merge per
//! task. After criterion's report, the medians of a separate timed run and their ratio are
//! printed, with the mean time of each tlv4 step. Repositories and every worktree (`TMPDIR` is
//! pointed there) live under `/dev/shm` when it exists, with git hermetic (no system or global
//! config).
//!
//! Run with `cargo bench --bench worktree`.

// A bench or test binary reports to its terminal: it may print.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::Criterion;
use git_tlv4::coordinator::{StartOptions, start};
use tlv4_core::model::{Event, EventKind, SessionId, TaskId};
use tlv4_store::store::Store;
use tlv4_store::worktree::{MergeOutcome, SnapshotLimits, TaskWorktree, merge_task};

/// Directories × files per directory of the benchmark repository.
const DIRS: usize = 50;
const FILES_PER_DIR: usize = 10;

use common::git_output as git;

/// A repository `root/name` of `DIRS × FILES_PER_DIR` small source files, one commit.
fn new_repo(root: &Path, name: &str) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir(&dir).expect("cannot create the repository directory");
    git(&dir, &["init", "-q", "-b", "main"]);
    for (key, value) in [
        ("user.name", "bench"),
        ("user.email", "bench@example.com"),
        // No automatic gc in the middle of a measurement.
        ("gc.auto", "0"),
    ] {
        git(&dir, &["config", key, value]);
    }
    for d in 0..DIRS {
        let sub = dir.join(format!("src/mod{d:02}"));
        std::fs::create_dir_all(&sub).expect("cannot create a directory");
        for f in 0..FILES_PER_DIR {
            let body: String = (0..20)
                .map(|l| format!("fn f{d}_{f}_{l}() -> u32 {{ {l} }}\n"))
                .collect();
            std::fs::write(sub.join(format!("file{f}.rs")), body).expect("cannot write a file");
        }
    }
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-q", "-m", "initial"]);
    dir
}

/// What a worker does: change two files and add one. `n` makes every task's change unique,
/// and tasks touch different files, so every merge is clean.
fn work(dir: &Path, n: usize) {
    let d = n % DIRS;
    for f in 0..2 {
        let path = dir.join(format!("src/mod{d:02}/file{f}.rs"));
        let mut text = std::fs::read_to_string(&path).expect("cannot read a file");
        text.push_str(&format!("// task {n}\n"));
        std::fs::write(&path, text).expect("cannot write a file");
    }
    std::fs::write(
        dir.join(format!("src/mod{d:02}/new_{n}.rs")),
        format!("pub fn task_{n}() {{}}\n"),
    )
    .expect("cannot write a file");
}

/// The tlv4 side: a session on its own repository.
struct Tlv4 {
    store: Store,
    sid: SessionId,
    next: usize,
    /// Time spent in each step: create, write + snapshot, merge_task, merge event, remove.
    steps: [Duration; 5],
    /// Tasks the steps were measured over.
    tasks: u32,
}

impl Tlv4 {
    fn new(root: &Path) -> Tlv4 {
        let dir = new_repo(root, "tlv4");
        let store = Store::discover(&dir).expect("a store");
        let opts = StartOptions {
            pipeline: Some("impl-only".into()),
            no_supervision: true,
            ..Default::default()
        };
        let (sid, _) = start(&store, "benchmark task worktrees", &opts).expect("a session");
        Tlv4 {
            store,
            sid,
            next: 0,
            steps: [Duration::ZERO; 5],
            tasks: 0,
        }
    }

    /// One task, from checkout to merge event to removal; the time of each step is added to
    /// `steps`.
    fn task(&mut self) {
        let n = self.next;
        self.next += 1;
        let task: TaskId = format!("IMPL-{n:05}").parse().expect("a task id");
        let mut t = Instant::now();
        let mut lap = |i: usize| {
            self.steps[i] += t.elapsed();
            t = Instant::now();
        };
        let tip = self.store.tip(&self.sid).expect("a tip");
        let wt = TaskWorktree::create(&self.store, &self.sid, &task, tip)
            .expect("a worktree")
            .with_run("executor", 1);
        lap(0);
        work(wt.path(), n);
        let snap = wt.snapshot(&SnapshotLimits::default()).expect("a snapshot");
        let commit = snap.commit.expect("the worker changed files");
        lap(1);
        let MergeOutcome::Clean { tree } =
            merge_task(&self.store, tip, commit).expect("the merge runs")
        else {
            panic!("tasks touch different files")
        };
        lap(2);
        self.store
            .transact(&self.sid, |txn| {
                txn.merge(commit, tree);
                Ok(Some(Event {
                    kind: EventKind::TaskCompleted,
                    task: Some(task.clone()),
                    role: Some("executor".into()),
                    status: Some("completed".into()),
                    attempt: Some(1),
                    summary: format!("merged {commit}"),
                    extra: Vec::new(),
                }))
            })
            .expect("the merge event")
            .expect("an event");
        lap(3);
        wt.remove().expect("removed");
        lap(4);
        self.tasks += 1;
    }
}

/// The git CLI side: a session branch checked out in a scratch worktree, set up once.
struct GitCli {
    repo: PathBuf,
    scratch: PathBuf,
    tasks: PathBuf,
    next: usize,
}

impl GitCli {
    fn new(root: &Path) -> GitCli {
        let repo = new_repo(root, "cli");
        let scratch = root.join("cli-session");
        let tasks = root.join("cli-tasks");
        std::fs::create_dir(&tasks).expect("cannot create a directory");
        git(
            &repo,
            &[
                "worktree",
                "add",
                "-q",
                "-b",
                "session",
                scratch.to_str().expect("UTF-8"),
            ],
        );
        GitCli {
            repo,
            scratch,
            tasks,
            next: 0,
        }
    }

    fn task(&mut self) {
        let n = self.next;
        self.next += 1;
        let branch = format!("task-{n:05}");
        let wt = self.tasks.join(&branch);
        let wt_str = wt.to_str().expect("UTF-8");
        git(
            &self.repo,
            &["worktree", "add", "-q", "-b", &branch, wt_str, "session"],
        );
        work(&wt, n);
        git(&wt, &["add", "-A"]);
        git(&wt, &["commit", "-q", "-m", &format!("{branch}: snapshot")]);
        git(
            &self.scratch,
            &[
                "merge",
                "-q",
                "--no-ff",
                "-m",
                &format!("merge {branch}"),
                &branch,
            ],
        );
        git(&self.repo, &["worktree", "remove", wt_str]);
    }
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn timed(runs: usize, mut f: impl FnMut()) -> Duration {
    f();
    median(
        (0..runs)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed()
            })
            .collect(),
    )
}

fn main() {
    common::hermetic_env();
    let root = common::temp_root("tlv4-bench-worktree-");
    // Task worktrees go to the system's temporary directory: the same RAM disk as the CLI's.
    // SAFETY: still single-threaded.
    unsafe { std::env::set_var("TMPDIR", root.path()) };
    let mut tlv4 = Tlv4::new(root.path());
    let mut cli = GitCli::new(root.path());
    let files = git(&cli.repo, &["ls-files"]).lines().count();
    eprintln!(
        "repository: {files} files; temp root {}",
        root.path().display()
    );

    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(15))
        .configure_from_args();
    {
        let mut g = c.benchmark_group("task");
        g.bench_function("tlv4", |b| b.iter(|| tlv4.task()));
        g.bench_function("git_cli", |b| b.iter(|| cli.task()));
        g.finish();
    }
    c.final_summary();

    let runs = 31;
    tlv4.steps = [Duration::ZERO; 5];
    tlv4.tasks = 0;
    let ours = timed(runs, || tlv4.task());
    let theirs = timed(runs, || cli.task());
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    eprintln!("medians of {runs} tasks:");
    eprintln!(
        "  git CLI (worktree add, add, commit, merge --no-ff, remove)  {:8.2} ms",
        ms(theirs)
    );
    eprintln!(
        "  tlv4 (create, snapshot, merge_task, merge event, remove)     {:8.2} ms  ({:.2}x git)",
        ms(ours),
        ms(ours) / ms(theirs)
    );
    let names = [
        "create",
        "write + snapshot",
        "merge_task",
        "merge event",
        "remove",
    ];
    for (name, total) in names.iter().zip(tlv4.steps) {
        eprintln!(
            "    {name:<18} {:8.2} ms (mean)",
            ms(total) / f64::from(tlv4.tasks)
        );
    }
    let worktrees = git(&cli.repo, &["worktree", "list"]).lines().count();
    let tlv4_worktrees = git(tlv4.store.workdir(), &["worktree", "list"])
        .lines()
        .count()
        - 1;
    eprintln!(
        "left registered: {tlv4_worktrees} tlv4 worktrees, {} CLI worktrees besides the scratch one",
        worktrees - 2
    );
}
