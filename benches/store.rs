//! Benchmarks of the session store.
//!
//! * `append_event/*`: one event (a task toggled between pending and in progress, which
//!   rewrites that task's TOML file and `session.toml`) written in-process with gix through
//!   [`Store::transact`], against the same change made with git's command-line plumbing on a
//!   repository of the same shape. The project aims at in-process being at least 10x faster.
//! * `status*/{100,10000}_events`: reading the state at the tip ([`Store::read_state`]) and
//!   serialising the `status --json` document, on a session with 100 events and one with
//!   10,000. State is read from the tip tree, never from history, so the ratio should stay
//!   under 1.5. Measured with every object loose (`status/*`), after `git repack -adq`
//!   (`status_packed/*`), and, for both, including the opening of the repository the way each
//!   command invocation does it (`status_open/*`, `status_open_packed/*`).
//!
//! Sessions are started with the real `git-tlv4 start --no-run` binary, then grown in-process.
//! Everything runs in throw-away repositories under a temporary directory, on `/dev/shm` when
//! it exists: a RAM-backed file system keeps disk latency and fsync noise out of the numbers,
//! which are about the work of git itself. git is hermetic: no system or global config, the
//! identity lives in each repository's local config.
//!
//! Run with `cargo bench --bench store`.

// A bench or test binary reports to its terminal: it may print.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod common;

use std::collections::BTreeMap;
use std::hint::black_box;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use criterion::Criterion;
use tlv4_core::model::{Event, EventKind, Owner, Session, SessionId, Task, TaskId, TaskStatus};
use tlv4_store::store::{Store, session_dir, session_ref};

/// The task text every benchmark session is started with.
const TASK_TEXT: &str = "benchmark the session store";

// ---------------------------------------------------------------------------------------------
// Environment and repositories
// ---------------------------------------------------------------------------------------------

/// Runs `git ARGS` in `dir` with `stdin` as its input and `env` added to its environment, and
/// returns its stdout; panics when git fails.
fn git_with(dir: &Path, args: &[&str], stdin: &[u8], env: &[(&str, &Path)]) -> String {
    let mut cmd = Command::new("git");
    cmd.current_dir(dir)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("cannot run git");
    {
        let mut input = child.stdin.take().expect("piped stdin");
        input.write_all(stdin).expect("cannot write to git");
    }
    let out = child.wait_with_output().expect("cannot wait for git");
    assert!(
        out.status.success(),
        "`git {}` failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("git printed non-UTF-8")
}

fn git_in(dir: &Path, args: &[&str], stdin: &[u8]) -> String {
    git_with(dir, args, stdin, &[])
}

fn git(dir: &Path, args: &[&str]) -> String {
    git_in(dir, args, b"")
}

/// A new repository `root/name` with one commit and the local config the benchmarks need.
fn new_repo(root: &Path, name: &str) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir(&dir).expect("cannot create the repository directory");
    git(&dir, &["init", "-q", "-b", "main"]);
    for (key, value) in [
        ("user.name", "bench"),
        ("user.email", "bench@example.com"),
        // `Store::transact` runs `git maintenance run --auto` every 100 events. With the default
        // `gc.auto` that would pack the repository in the middle of building the 10,000-event
        // history (so the "loose" case would not be loose) and now and then in the middle of a
        // measurement. The spawn itself still happens and is part of the append numbers.
        ("gc.auto", "0"),
    ] {
        git(&dir, &["config", key, value]);
    }
    std::fs::write(dir.join("README.md"), "# bench\n").expect("cannot write README.md");
    git(&dir, &["add", "README.md"]);
    git(&dir, &["commit", "-q", "-m", "initial"]);
    dir
}

/// Starts a `full-lifecycle` session with the real `git tlv4 start --no-run` and returns its id.
/// The pipeline is named because `start` may otherwise choose one from the task text. The
/// command's `start` function lives in a private module, and running the binary keeps the
/// session exactly the shape the product writes, whatever files and fields it gains.
fn start_session(dir: &Path) -> SessionId {
    let out = Command::new(env!("CARGO_BIN_EXE_git-tlv4"))
        .current_dir(dir)
        .args(["--quiet", "start", "--no-run"])
        .args(["--pipeline", "full-lifecycle", TASK_TEXT])
        .stdin(Stdio::null())
        .output()
        .expect("cannot run git-tlv4");
    assert!(
        out.status.success(),
        "`git-tlv4 start` failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("`start` prints the session id")
}

/// A repository with a freshly started session.
fn repo_with_session(root: &Path, name: &str) -> (PathBuf, Store, SessionId) {
    let dir = new_repo(root, name);
    let sid = start_session(&dir);
    let store = Store::discover(&dir).expect("cannot open the repository");
    (dir, store, sid)
}

// ---------------------------------------------------------------------------------------------
// The change: toggle a task between pending and in progress
// ---------------------------------------------------------------------------------------------

/// Claims a pending task or hands a running one back; the same edit for both writers.
fn toggle(task: &mut Task, now: &str) -> EventKind {
    if task.status == TaskStatus::Pending {
        task.status = TaskStatus::InProgress;
        task.attempts += 1;
        task.owner = Some(Owner {
            host: "bench-host".to_owned(),
            pid: 4242,
            started_at: now.to_owned(),
            start_time: None,
        });
        EventKind::TaskClaimed
    } else {
        task.status = TaskStatus::Pending;
        task.owner = None;
        EventKind::TasksRecovered
    }
}

/// One event in-process: toggles `task` of session `sid` with [`Store::transact`].
fn append_in_process(store: &Store, sid: &SessionId, task: &TaskId) {
    store
        .transact(sid, |txn| {
            let now = tlv4_core::clock::now_rfc3339();
            let t = txn.state.tasks.get_mut(task).expect("the task exists");
            let kind = toggle(t, &now);
            Ok(Some(Event::task(kind, t, "benchmark toggle")))
        })
        .expect("cannot append the event")
        .expect("the change records an event");
}

/// The commit message the store writes (kept in step with `store::write::commit_message`).
fn commit_message(sid: &SessionId, seq: u64, event: &Event) -> String {
    let mut msg = event.subject();
    msg.push_str("\n\n");
    if !event.summary.trim().is_empty() {
        msg.push_str(event.summary.trim_end());
        msg.push_str("\n\n");
    }
    let mut trailer = |k: &str, v: &str| msg.push_str(&format!("Tlv4-{k}: {v}\n"));
    trailer("Session", sid.as_str());
    trailer("Event", event.kind.as_str());
    if let Some(t) = &event.task {
        trailer("Task", t.as_str());
    }
    if let Some(r) = &event.role {
        trailer("Role", r);
    }
    if let Some(s) = &event.status {
        trailer("Status", s);
    }
    if let Some(a) = event.attempt {
        trailer("Attempt", &a.to_string());
    }
    trailer("Seq", &seq.to_string());
    msg
}

/// A session written by the git CLI.
struct CliSession {
    dir: PathBuf,
    sid: SessionId,
    task: TaskId,
    reference: String,
    folder: String,
    /// The scratch index of the `read-tree`/`update-index`/`write-tree` variant.
    index: PathBuf,
}

/// How the CLI rebuilds the trees from the changed blobs up to the root.
#[derive(Clone, Copy)]
enum TreeBuild {
    /// `git ls-tree` + `git mktree` for each of the five trees on the path: the same work as the
    /// in-process tree editor, which rewrites exactly those trees.
    Mktree,
    /// `git read-tree` + `git update-index --index-info` + `git write-tree` on a scratch index:
    /// fewer processes (the cheapest way for the CLI), but the whole tree goes through an index.
    Index,
}

/// Parses the output of `git cat-file --batch` into the contents of its objects, in order.
fn parse_batch(mut out: &str) -> Vec<&str> {
    let mut contents = Vec::new();
    while let Some((header, rest)) = out.split_once('\n') {
        let size: usize = header
            .rsplit(' ')
            .next()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("unexpected cat-file header `{header}`"));
        contents.push(&rest[..size]);
        out = &rest[size + 1..];
    }
    contents
}

/// `git ls-tree <treeish>` with the named entries replaced (or added), written by `git mktree`.
fn replace_entries(dir: &Path, treeish: &str, entries: &[(&str, &str, &str)]) -> String {
    let listing = git(dir, &["ls-tree", treeish]);
    let mut lines: BTreeMap<String, String> = BTreeMap::new();
    for line in listing.lines() {
        let (_, name) = line.split_once('\t').expect("ls-tree line has a tab");
        lines.insert(name.to_owned(), line.to_owned());
    }
    for (name, kind, id) in entries {
        let mode = if *kind == "tree" { "040000" } else { "100644" };
        lines.insert((*name).to_owned(), format!("{mode} {kind} {id}\t{name}"));
    }
    let mut input = String::new();
    for line in lines.values() {
        input.push_str(line);
        input.push('\n');
    }
    git_in(dir, &["mktree"], input.as_bytes()).trim().to_owned()
}

/// One event with git's plumbing: the same change as [`append_in_process`].
///
/// It reads only the two files it changes (the in-process writer reads the whole state), in
/// one `cat-file --batch`: every shortcut here favours the CLI.
fn append_cli(s: &CliSession, build: TreeBuild) {
    let dir = s.dir.as_path();
    let folder = s.folder.as_str();
    let tip = git(dir, &["rev-parse", "--verify", "-q", &s.reference])
        .trim()
        .to_owned();

    // Read and edit the state.
    let task_path = format!("{folder}/tasks/{}.toml", s.task);
    let query = format!("{tip}:{folder}/session.toml\n{tip}:{task_path}\n");
    let out = git_in(dir, &["cat-file", "--batch"], query.as_bytes());
    let files = parse_batch(&out);
    let mut session: Session = toml::from_str(files[0]).expect("session.toml parses");
    let mut task: Task = toml::from_str(files[1]).expect("the task parses");
    let now = tlv4_core::clock::now_rfc3339();
    let kind = toggle(&mut task, &now);
    session.events += 1;
    session.updated_at = now;
    let event = Event::task(kind, &task, "benchmark toggle");

    // Blobs.
    let hash = |bytes: &[u8]| {
        git_in(dir, &["hash-object", "-w", "--stdin"], bytes)
            .trim()
            .to_owned()
    };
    let session_blob = hash(toml::to_string(&session).expect("serialises").as_bytes());
    let task_blob = hash(toml::to_string(&task).expect("serialises").as_bytes());

    // Trees.
    let root = match build {
        TreeBuild::Mktree => {
            let task_file = format!("{}.toml", s.task);
            let tasks = replace_entries(
                dir,
                &format!("{tip}:{folder}/tasks"),
                &[(&task_file, "blob", &task_blob)],
            );
            let session_tree = replace_entries(
                dir,
                &format!("{tip}:{folder}"),
                &[
                    ("session.toml", "blob", &session_blob),
                    ("tasks", "tree", &tasks),
                ],
            );
            let sessions = replace_entries(
                dir,
                &format!("{tip}:.tlv4/sessions"),
                &[(s.sid.as_str(), "tree", &session_tree)],
            );
            let tlv4 = replace_entries(
                dir,
                &format!("{tip}:.tlv4"),
                &[("sessions", "tree", &sessions)],
            );
            replace_entries(dir, &format!("{tip}^{{tree}}"), &[(".tlv4", "tree", &tlv4)])
        }
        TreeBuild::Index => {
            let env = [("GIT_INDEX_FILE", s.index.as_path())];
            git_with(dir, &["read-tree", &tip], b"", &env);
            let info = format!(
                "100644 blob {session_blob}\t{folder}/session.toml\n\
                 100644 blob {task_blob}\t{task_path}\n"
            );
            git_with(
                dir,
                &["update-index", "--index-info"],
                info.as_bytes(),
                &env,
            );
            git_with(dir, &["write-tree"], b"", &env).trim().to_owned()
        }
    };

    // Commit and compare-and-swap.
    let message = commit_message(&s.sid, session.events, &event);
    let commit = git_in(dir, &["commit-tree", &root, "-p", &tip], message.as_bytes())
        .trim()
        .to_owned();
    let reflog = format!("tlv4: {}", event.subject());
    git(
        dir,
        &["update-ref", "-m", &reflog, &s.reference, &commit, &tip],
    );
}

// ---------------------------------------------------------------------------------------------
// Status
// ---------------------------------------------------------------------------------------------

/// What `git tlv4 status --json` does once the repository is open: read the tip state and
/// serialise it with the CLI's own shape.
fn status_json(store: &Store, sid: &SessionId) -> Vec<u8> {
    let (tip, state) = store.read_state(sid).expect("cannot read the state");
    serde_json::to_vec_pretty(&git_tlv4::cli::to_json(&state, &tip.to_string()))
        .expect("serialises")
}

/// A repository whose session holds `events` events, each after the first two toggling the
/// next task in turn.
fn session_with_events(root: &Path, events: u64) -> (PathBuf, SessionId) {
    let started = Instant::now();
    let (dir, store, sid) = repo_with_session(root, &format!("status-{events}"));
    let (_, state) = store.read_state(&sid).expect("cannot read the state");
    let ids: Vec<TaskId> = state.tasks.keys().cloned().collect();
    let have = state.session.events;
    for i in have..events {
        append_in_process(&store, &sid, &ids[i as usize % ids.len()]);
    }
    let (_, state) = store.read_state(&sid).expect("cannot read the state");
    assert_eq!(state.session.events, events);
    eprintln!(
        "setup: session with {events} events ({} tasks) written in {:.1?}",
        ids.len(),
        started.elapsed()
    );
    (dir, sid)
}

fn loose_objects(dir: &Path) -> String {
    git(dir, &["count-objects", "-v"])
        .lines()
        .filter(|l| l.starts_with("count:") || l.starts_with("in-pack:"))
        .collect::<Vec<_>>()
        .join(", ")
}

// ---------------------------------------------------------------------------------------------
// Benchmarks
// ---------------------------------------------------------------------------------------------

fn bench_append(c: &mut Criterion, root: &Path) {
    let (_, store, sid) = repo_with_session(root, "append-gix");
    let (_, state) = store.read_state(&sid).expect("cannot read the state");
    let task = state.tasks.keys().next().expect("a task").clone();

    let mut cli = Vec::new();
    for (name, build) in [
        ("append-cli-mktree", TreeBuild::Mktree),
        ("append-cli-index", TreeBuild::Index),
    ] {
        let (dir, _, sid) = repo_with_session(root, name);
        cli.push((
            CliSession {
                reference: session_ref(&sid),
                folder: session_dir(&sid),
                index: root.join(format!("{name}.index")),
                dir,
                task: task.clone(),
                sid,
            },
            build,
        ));
    }
    // Check once that the CLI writes what the store reads back.
    for (s, build) in &cli {
        append_cli(s, *build);
        let store = Store::discover(&s.dir).expect("cannot open the repository");
        let (_, state) = store.read_state(&s.sid).expect("the CLI event reads back");
        assert_eq!(state.session.events, 3);
        assert_eq!(state.tasks[&s.task].status, TaskStatus::InProgress);
    }

    let mut group = c.benchmark_group("append_event");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(6));
    group.bench_function("gix_in_process", |b| {
        b.iter(|| append_in_process(&store, &sid, &task))
    });
    let [(mktree, _), (index, _)] = &cli[..] else {
        unreachable!("two CLI sessions")
    };
    group.bench_function("git_cli_plumbing", |b| {
        b.iter(|| append_cli(mktree, TreeBuild::Mktree))
    });
    group.bench_function("git_cli_plumbing_index", |b| {
        b.iter(|| append_cli(index, TreeBuild::Index))
    });
    group.finish();
}

fn bench_status(c: &mut Criterion, root: &Path) {
    let sessions = [
        ("100_events", session_with_events(root, 100)),
        ("10000_events", session_with_events(root, 10_000)),
    ];

    for packed in [false, true] {
        let suffix = if packed { "_packed" } else { "" };
        for (_, (dir, _)) in &sessions {
            if packed {
                git(dir, &["repack", "-adq"]);
            }
            eprintln!("{}: {}", dir.display(), loose_objects(dir));
        }
        // Opened after any repack, so no run starts from a stale view of the object database.
        let stores: Vec<Store> = sessions
            .iter()
            .map(|(_, (dir, _))| Store::discover(dir).expect("cannot open the repository"))
            .collect();

        let mut group = c.benchmark_group(format!("status{suffix}"));
        group
            .sample_size(20)
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(3));
        for ((name, (_, sid)), store) in sessions.iter().zip(&stores) {
            group.bench_function(*name, |b| b.iter(|| black_box(status_json(store, sid))));
        }
        group.finish();

        // The same, opening the repository each time as every command invocation does.
        let mut group = c.benchmark_group(format!("status_open{suffix}"));
        group
            .sample_size(20)
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(3));
        for (name, (dir, sid)) in &sessions {
            group.bench_function(*name, |b| {
                b.iter(|| {
                    let store = Store::discover(dir).expect("cannot open the repository");
                    black_box(status_json(&store, sid))
                })
            });
        }
        group.finish();
    }
}

fn main() {
    common::hermetic_env();
    let root = common::temp_root("tlv4-bench-");
    let mut c = Criterion::default().configure_from_args();
    bench_append(&mut c, root.path());
    bench_status(&mut c, root.path());
    c.final_summary();
}
