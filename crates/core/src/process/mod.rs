//! The one process runner of the tool: agent programs, hooks and the tester's commands all
//! run through [`run`] — argv (never a shell string, unless the caller runs `sh -c` itself),
//! stdin, a working directory, its own process group, a wall-clock limit and bounded output.
//!
//! Agent CLIs and test suites are long-running programs that start helpers of their own
//! (shells, language servers, servers under test), and some never give up on a dead endpoint.
//! So every run gets a process group of its own: when the limit is reached the whole group
//! gets SIGTERM, then SIGKILL after a grace period, and once the leader has exited whatever it
//! left behind in its group is killed too. The leader is waited for with `WNOWAIT` first, so
//! its group id cannot be reused by an unrelated process before the group is cleaned up.
//!
//! Output is captured in bounded buffers (the first and the last part of each stream), so a
//! program that prints without end cannot exhaust memory; the final result of an agent is at
//! the end of its output, which is kept.
//!
//! **Nothing outlives the tool.** Every group in progress is registered, so a signal (Ctrl-C,
//! SIGTERM, SIGHUP: see [`signals`]) stops them all. When the tool itself dies without a word
//! (SIGKILL, a crash), two things take its runs down:
//! - each leader is started with `PR_SET_PDEATHSIG` (SIGTERM). The kernel sends it when the
//!   *thread* that forked the leader ends, not the process; that thread is the one that waits
//!   for the run in [`run`], so it lives at least as long as the run and the signal comes
//!   only when the tool dies;
//! - a watchdog, a small process forked once (before the first run) that holds the read end
//!   of a pipe the tool writes each group's id to: when the tool dies the pipe reaches its
//!   end, and the watchdog sends SIGTERM to every group still registered, then SIGKILL after
//!   [`KILL_GRACE`]. It covers the leader's children, which the death signal does not reach.
//!
//! A run whose working directory is a checkout this process locked is named in that lock
//! (pid and start time, see [`crate::git::note_run`]), so `resume` never removes a checkout
//! whose run is still alive.
//!
//! What agent programs need around a run lives beside the runner: [`lookup`] finds a program
//! (with the configuration hint when it cannot), [`home`] gives an agent its home, environment
//! and prompt file, [`duration`] reads a configured time limit.

pub mod duration;
pub mod home;
pub mod lookup;

use std::io::{Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use duration::DEFAULT_TIMEOUT;

/// How long a process group gets between SIGTERM and SIGKILL.
pub const KILL_GRACE: Duration = Duration::from_secs(5);
/// Bytes kept from the start of each output stream, and again from its end.
pub const CAPTURE_LIMIT: usize = 1 << 20;

pub use crate::git::GIT_LOCATION_VARS;

/// Where standard error goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Streams {
    /// stdout and stderr are captured apart.
    Separate,
    /// stderr goes into the same pipe as stdout, interleaved as written
    /// ([`Output::stdout`] holds both, [`Output::stderr`] is empty).
    Together,
}

/// One program run.
#[derive(Debug, Clone)]
pub struct Invocation {
    /// The executable, already resolved (see [`find_program`]).
    pub program: PathBuf,
    /// Its arguments, passed as they are.
    pub args: Vec<String>,
    /// The working directory.
    pub workdir: PathBuf,
    /// Variables added to (or replacing those of) the inherited environment, in order.
    pub env: Vec<(String, String)>,
    /// Variables of the inherited environment left out (before `env` is applied).
    pub env_remove: Vec<String>,
    /// Bytes written to stdin; `None` connects stdin to `/dev/null`.
    pub stdin: Option<Vec<u8>>,
    /// The wall-clock limit.
    pub timeout: Duration,
    /// Time between SIGTERM and SIGKILL when the limit is reached.
    pub kill_grace: Duration,
    /// Bytes kept from each end of each stream.
    pub capture_limit: usize,
    /// Whether stderr is captured apart from stdout.
    pub streams: Streams,
    /// Called with each line of stdout as it arrives (progress from an event stream).
    pub on_line: Option<LineSink>,
    /// The kernel's confinement of the program and all it starts (see [`crate::sandbox`]);
    /// `None`: none.
    pub sandbox: Option<Arc<crate::sandbox::Prepared>>,
    /// A request to stop the run before it ends (a run over its task's bound, noticed by the
    /// [`LineSink`] that counts its tokens): the group is then stopped as at the time limit,
    /// within [`STOP_POLL`] of the request. `None`: only the time limit stops it.
    pub stop: Option<Stop>,
}

/// How often a run with a [`Stop`] looks whether it was asked to stop.
pub const STOP_POLL: Duration = Duration::from_millis(50);

/// A shared request to stop a run (see [`Invocation::stop`]); clones share it.
#[derive(Debug, Clone, Default)]
pub struct Stop(Arc<std::sync::atomic::AtomicBool>);

impl Stop {
    /// A handle nobody asked to stop yet.
    pub fn new() -> Stop {
        Stop::default()
    }

    /// Asks the run to stop.
    pub fn request(&self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Whether the run was asked to stop.
    pub fn requested(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// What [`Invocation::on_line`] calls: one line of stdout, without its newline.
#[derive(Clone)]
pub struct LineSink(pub Arc<dyn Fn(&str) + Send + Sync>);

impl std::fmt::Debug for LineSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LineSink")
    }
}

/// The longest line given to a [`LineSink`]; the rest of a longer one is not.
const SINK_LINE_LIMIT: usize = 1 << 20;

impl Invocation {
    /// A run of `program` in `workdir` with the default limits and nothing on stdin.
    pub fn new(program: impl Into<PathBuf>, workdir: impl Into<PathBuf>) -> Invocation {
        Invocation {
            program: program.into(),
            args: Vec::new(),
            workdir: workdir.into(),
            env: Vec::new(),
            env_remove: Vec::new(),
            stdin: None,
            timeout: DEFAULT_TIMEOUT,
            kill_grace: KILL_GRACE,
            capture_limit: CAPTURE_LIMIT,
            streams: Streams::Separate,
            on_line: None,
            sandbox: None,
            stop: None,
        }
    }

    /// The command line, for logs and transcripts (arguments longer than 200 bytes are cut).
    pub fn display(&self) -> String {
        let mut words = vec![self.program.display().to_string()];
        for a in &self.args {
            let a = if a.len() > 200 {
                format!("{}…", &a[..floor_char_boundary(a, 200)])
            } else {
                a.clone()
            };
            if a.is_empty() || a.contains(|c: char| c.is_whitespace() || "'\"$`\\".contains(c)) {
                words.push(format!("'{}'", a.replace('\'', "'\\''")));
            } else {
                words.push(a);
            }
        }
        words.join(" ")
    }
}

/// What a run left behind.
#[derive(Debug, Clone, Default)]
pub struct Output {
    /// The exit code, if the program exited.
    pub code: Option<i32>,
    /// The signal that ended it, if one did.
    pub signal: Option<i32>,
    /// Standard output (bounded; lossy UTF-8).
    pub stdout: String,
    /// Standard error (bounded; lossy UTF-8).
    pub stderr: String,
    /// Bytes of output dropped from the middle of the streams.
    pub dropped: u64,
    /// Whether the wall-clock limit was reached and the group killed.
    pub timed_out: bool,
    /// Wall-clock seconds from spawn to exit.
    pub seconds: f64,
}

impl Output {
    /// Exited by itself with code 0.
    pub fn success(&self) -> bool {
        !self.timed_out && self.code == Some(0)
    }

    /// "exit code 2", "killed by signal 9", …
    pub fn describe_exit(&self) -> String {
        match (self.code, self.signal) {
            (Some(c), _) => format!("exit code {c}"),
            (None, Some(s)) => format!("killed by signal {s}"),
            (None, None) => "no exit status".to_owned(),
        }
    }

    /// The last `lines` non-empty lines of stderr, or of stdout when stderr is empty: what
    /// to show when a run failed.
    pub fn tail(&self, lines: usize) -> String {
        let text = if self.stderr.trim().is_empty() {
            &self.stdout
        } else {
            &self.stderr
        };
        let last: Vec<&str> = text
            .lines()
            .map(str::trim_end)
            .filter(|l| !l.trim().is_empty())
            .collect();
        let from = last.len().saturating_sub(lines);
        let mut out = last[from..].join("\n");
        if out.len() > 2000 {
            out = format!("…{}", &out[ceil_char_boundary(&out, out.len() - 2000)..]);
        }
        out
    }
}

/// How runs that failed for a passing reason are repeated.
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    /// Runs in all, the first one included.
    pub tries: u32,
    /// The pause before the second run, doubled before each later one.
    pub backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            tries: 3,
            backoff: Duration::from_secs(1),
        }
    }
}

/// The process groups of the runs in progress, so an interrupted tool can take them down:
/// they are not in the terminal's foreground group and get no Ctrl-C of their own.
static LIVE: Mutex<Vec<u32>> = Mutex::new(Vec::new());

fn live() -> std::sync::MutexGuard<'static, Vec<u32>> {
    // A panic while holding the lock leaves a plain list behind, still valid.
    LIVE.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A registration in [`LIVE`] (and with the watchdog) for as long as a run lasts.
struct Live(u32);

impl Live {
    fn register(pid: u32) -> Live {
        live().push(pid);
        watchdog::watch(pid);
        Live(pid)
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        watchdog::forget(self.0);
        live().retain(|p| *p != self.0);
    }
}

/// Stops every run in progress: SIGTERM to each process group, then SIGKILL to those still
/// there after `grace`. Returns how many groups there were.
pub fn stop_all(grace: Duration) -> usize {
    let pids: Vec<u32> = live().clone();
    for &pid in &pids {
        kill_group(pid, libc::SIGTERM);
    }
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline && !live().is_empty() {
        std::thread::sleep(Duration::from_millis(20));
    }
    for &pid in live().iter() {
        kill_group(pid, libc::SIGKILL);
    }
    pids.len()
}

/// The command of `inv`: its program, arguments, directory and environment (the git
/// location variables removed), its own process group, stdin piped when there is input, and
/// stdout and stderr piped (or one pipe for both, whose read end comes back with it). In
/// the child, before the program starts: no signal blocked, and SIGTERM when the thread that
/// waits for it ends.
fn command(
    inv: &Invocation,
) -> std::io::Result<(std::process::Command, Option<std::io::PipeReader>)> {
    let contained = inv.sandbox.as_ref().is_some_and(|s| s.contain);
    let reaper = contained.then(crate::sandbox::contain::reaper).flatten();
    let mut cmd = match (&reaper, &inv.sandbox) {
        (Some(me), Some(sandbox)) => {
            let mut c = std::process::Command::new(me);
            c.arg(crate::sandbox::contain::SUBCOMMAND)
                .args(sandbox.reaper_args())
                .arg(&inv.program);
            c
        }
        _ => std::process::Command::new(&inv.program),
    };
    let by_reaper = reaper.is_some();
    cmd.args(&inv.args)
        .current_dir(&inv.workdir)
        .stdin(if inv.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .process_group(0);
    let mut merged = None;
    match inv.streams {
        Streams::Separate => {
            cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        }
        Streams::Together => {
            let (reader, writer) = std::io::pipe()?;
            cmd.stdout(writer.try_clone()?).stderr(writer);
            merged = Some(reader);
        }
    }
    for var in GIT_LOCATION_VARS {
        cmd.env_remove(var);
    }
    for var in &inv.env_remove {
        cmd.env_remove(var);
    }
    for (k, v) in &inv.env {
        cmd.env(k, v);
    }
    let sandbox = inv.sandbox.clone();
    // SAFETY: getpid cannot fail.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the closure runs in the forked child before exec and calls only sigemptyset,
    // pthread_sigmask, prctl, getppid and _exit, which are async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            // The tool blocks SIGINT, SIGTERM and SIGHUP in its threads (see [`signals`]), and
            // a child inherits the mask: the program must start with none blocked, or it could
            // not be stopped (nor get its death signal).
            crate::host::unblock_all_signals()?;
            // See the module comment: SIGTERM when the thread waiting for this run ends,
            // which is when the tool dies.
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGTERM as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            // The tool died between fork and prctl: nobody would stop this run.
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            // Last: the confinement (it allocates nothing, see `Prepared::apply`), or, with a
            // reaper, its hand-over: the reaper confines the program, not itself.
            if let Some(s) = &sandbox {
                if by_reaper {
                    s.hand_over()?;
                } else {
                    s.apply()?;
                }
            }
            Ok(())
        });
    }
    Ok((cmd, merged))
}

/// Runs `inv` once. Spawn errors come back as they are (an interrupted tool starts nothing
/// new: `ErrorKind::Interrupted`); everything else is in [`Output`].
pub fn run(inv: &Invocation) -> std::io::Result<Output> {
    if let Some(sig) = signals::received() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::Interrupted,
            format!("not started: git-tlv4 is stopping ({})", signals::name(sig)),
        ));
    }
    watchdog::start();
    let (mut cmd, merged) = command(inv)?;
    let started = Instant::now();
    let spawned = cmd.spawn();
    // The command holds our copies of a merged pipe's write end: drop them, or the reader
    // never sees the end of the output.
    drop(cmd);
    let mut child = spawned?;
    let pid = child.id();
    let _live = Live::register(pid);
    // A signal that came between the check above and the registration: this run is one of
    // those to stop.
    if signals::received().is_some() {
        kill_group(pid, libc::SIGTERM);
    }
    if let Some(start) = crate::host::process_start_time(pid) {
        crate::git::note_run(&inv.workdir, pid, start);
    }

    // Feed stdin from a thread: a large prompt must not block us while the program has not
    // read it yet. A program that exits without reading gives a broken pipe, which is fine.
    let feeder = match (child.stdin.take(), &inv.stdin) {
        (Some(mut pipe), Some(bytes)) => {
            let bytes = bytes.clone();
            Some(std::thread::spawn(move || {
                let _ = pipe.write_all(&bytes);
            }))
        }
        _ => None,
    };
    let out = Arc::new(Mutex::new(Capture::new(inv.capture_limit)));
    let err = Arc::new(Mutex::new(Capture::new(inv.capture_limit)));
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let readers = [
        child
            .stdout
            .take()
            .map(|s| reader(s, out.clone(), done_tx.clone(), inv.on_line.clone()))
            .or_else(|| {
                merged.map(|s| reader(s, out.clone(), done_tx.clone(), inv.on_line.clone()))
            }),
        child
            .stderr
            .take()
            .map(|s| reader(s, err.clone(), done_tx.clone(), None)),
    ];
    drop(done_tx);

    let (exit_tx, exit_rx) = mpsc::channel::<()>();
    std::thread::spawn(move || {
        wait_no_reap(pid);
        let _ = exit_tx.send(());
    });

    let mut timed_out = false;
    let ended = wait_exit(&exit_rx, inv, started);
    if ended != Ended::Exited {
        // Over its time, or asked to stop: the group is stopped the same way.
        timed_out = ended == Ended::TimedOut;
        kill_group(pid, libc::SIGTERM);
        if exit_rx.recv_timeout(inv.kill_grace).is_err() {
            kill_group(pid, libc::SIGKILL);
            let _ = exit_rx.recv();
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    // The leader has exited but is not reaped yet, so the group id is still ours: take down
    // whatever it left running (helpers, or children that ignored SIGTERM).
    kill_group(pid, libc::SIGKILL);
    let status = child.wait()?;

    // The pipes close once every process holding them is gone; one that left the group
    // (setsid) may keep them open, so do not wait for it for long.
    let deadline = Instant::now() + Duration::from_secs(2);
    let live = readers.iter().filter(|r| r.is_some()).count();
    for _ in 0..live {
        let left = deadline.saturating_duration_since(Instant::now());
        if done_rx.recv_timeout(left).is_err() {
            break;
        }
    }
    if let Some(f) = feeder
        && f.is_finished()
    {
        let _ = f.join();
    }
    let (stdout, d1) = snapshot(&out);
    let (stderr, d2) = snapshot(&err);
    Ok(Output {
        code: status.code(),
        signal: status.signal(),
        stdout,
        stderr,
        dropped: d1 + d2,
        timed_out,
        seconds,
    })
}

/// How the wait for a run's leader ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ended {
    Exited,
    TimedOut,
    Stopped,
}

/// Waits for the leader's exit until the time limit, or until the run is asked to stop.
fn wait_exit(exit_rx: &mpsc::Receiver<()>, inv: &Invocation, started: Instant) -> Ended {
    let Some(stop) = &inv.stop else {
        return match exit_rx.recv_timeout(inv.timeout) {
            Ok(()) => Ended::Exited,
            Err(_) => Ended::TimedOut,
        };
    };
    let deadline = started + inv.timeout;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match exit_rx.recv_timeout(left.min(STOP_POLL)) {
            Ok(()) => return Ended::Exited,
            Err(mpsc::RecvTimeoutError::Disconnected) => return Ended::TimedOut,
            Err(mpsc::RecvTimeoutError::Timeout) if stop.requested() => return Ended::Stopped,
            Err(mpsc::RecvTimeoutError::Timeout) if left.is_zero() => return Ended::TimedOut,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
    }
}

/// Runs `inv`, repeating it when the spawn failed for a passing reason (anything but a
/// missing program) or when `transient` says the run failed for one (a rate limit). Timeouts
/// are never repeated. Returns the last output and how many runs it took.
pub fn run_with_retries(
    inv: &Invocation,
    policy: &RetryPolicy,
    transient: &dyn Fn(&Output) -> bool,
) -> Result<(Output, u32)> {
    let mut pause = policy.backoff;
    let tries = policy.tries.max(1);
    let mut n = 0;
    loop {
        n += 1;
        let last = n >= tries;
        match run(inv) {
            Ok(out)
                if !last
                    && !out.timed_out
                    && !inv.stop.as_ref().is_some_and(Stop::requested)
                    && transient(&out) => {}
            Ok(out) => return Ok((out, n)),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {
                return Err(Error::io(
                    format!("cannot run `{}`", inv.program.display()),
                    e,
                ));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::io(
                    format!(
                        "cannot run `{}` (it, or the interpreter its first line names, is \
                         missing)",
                        inv.program.display()
                    ),
                    e,
                ));
            }
            Err(e) if last => {
                return Err(Error::io(
                    format!("cannot run `{}`", inv.program.display()),
                    e,
                ));
            }
            Err(_) => {}
        }
        std::thread::sleep(pause);
        pause *= 2;
    }
}

/// Quotes a word for `sh -c`.
pub fn quote(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:@+,".contains(c))
    {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The largest index ≤ `i` that is a char boundary of `s`.
pub fn floor_char_boundary(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The smallest index ≥ `i` that is a char boundary of `s`.
fn ceil_char_boundary(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// Blocks until `pid` has exited, without reaping it.
fn wait_no_reap(pid: u32) {
    loop {
        // SAFETY: `info` is a plain C struct that waitid fills in; zeroed is a valid value.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waitid only writes to `info`; WNOWAIT leaves the child to `Child::wait`.
        let rc = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if rc == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return;
        }
    }
}

/// Sends `signal` to the process group `pgid` (a group that is gone is fine).
fn kill_group(pgid: u32, signal: libc::c_int) {
    // SAFETY: kill has no memory effects; a negative pid addresses the group we created.
    unsafe {
        libc::kill(-(pgid as libc::pid_t), signal);
    }
}

/// Head and tail of a stream.
struct Capture {
    head: Vec<u8>,
    tail: Vec<u8>,
    total: u64,
    limit: usize,
}

impl Capture {
    fn new(limit: usize) -> Capture {
        Capture {
            head: Vec::new(),
            tail: Vec::new(),
            total: 0,
            limit,
        }
    }

    fn push(&mut self, mut data: &[u8]) {
        self.total += data.len() as u64;
        if self.head.len() < self.limit {
            let take = (self.limit - self.head.len()).min(data.len());
            self.head.extend_from_slice(&data[..take]);
            data = &data[take..];
        }
        self.tail.extend_from_slice(data);
        if self.tail.len() > 2 * self.limit.max(1) {
            let cut = self.tail.len() - self.limit;
            self.tail.drain(..cut);
        }
    }

    fn text(&self) -> (String, u64) {
        let tail = &self.tail[self.tail.len().saturating_sub(self.limit)..];
        let dropped = self.total - self.head.len() as u64 - tail.len() as u64;
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        if dropped > 0 {
            text.push_str(&format!(
                "\n[git-tlv4: {dropped} bytes of output were dropped here]\n"
            ));
        }
        text.push_str(&String::from_utf8_lossy(tail));
        (text, dropped)
    }
}

fn reader(
    mut stream: impl Read + Send + 'static,
    capture: Arc<Mutex<Capture>>,
    done: mpsc::Sender<()>,
    sink: Option<LineSink>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        let mut line: Vec<u8> = Vec::new();
        loop {
            match stream.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    capture
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push(&buf[..n]);
                    if let Some(LineSink(f)) = &sink {
                        for part in buf[..n].split_inclusive(|&b| b == b'\n') {
                            if line.len() + part.len() <= SINK_LINE_LIMIT {
                                line.extend_from_slice(part);
                            }
                            if part.ends_with(b"\n") {
                                f(String::from_utf8_lossy(&line).trim_end());
                                line.clear();
                            }
                        }
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        let _ = done.send(());
    })
}

fn snapshot(capture: &Arc<Mutex<Capture>>) -> (String, u64) {
    capture.lock().unwrap_or_else(|p| p.into_inner()).text()
}

/// The watchdog that takes the tool's process groups down when the tool dies without
/// stopping them (see the module comment).
mod watchdog {
    use std::sync::OnceLock;

    use super::KILL_GRACE;

    /// The write end of the pipe to the watchdog (close-on-exec, so no run inherits it);
    /// `None` when it could not be started (the death signal still covers each leader).
    static PIPE: OnceLock<Option<libc::c_int>> = OnceLock::new();

    /// Most groups the watchdog keeps track of at once.
    const MAX_GROUPS: usize = 1024;

    /// Starts the watchdog once per process.
    pub(super) fn start() {
        PIPE.get_or_init(spawn);
    }

    /// Registers group `pgid`.
    pub(super) fn watch(pgid: u32) {
        send(pgid as i32);
    }

    /// Unregisters group `pgid`: it is gone.
    pub(super) fn forget(pgid: u32) {
        send(-(pgid as i32));
    }

    fn send(word: i32) {
        if let Some(Some(fd)) = PIPE.get() {
            let bytes = word.to_ne_bytes();
            // SAFETY: writes 4 bytes from a live buffer; a pipe write under PIPE_BUF is atomic,
            // so words from several threads never interleave. A dead watchdog gives EPIPE
            // (SIGPIPE is ignored by the Rust runtime), which changes nothing here.
            unsafe {
                libc::write(*fd, bytes.as_ptr().cast(), bytes.len());
            }
        }
    }

    fn spawn() -> Option<libc::c_int> {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: pipe2 writes two descriptors into the array.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return None;
        }
        let [read, write] = fds;
        // SAFETY: the child runs only async-signal-safe calls (`watch_loop`) and never
        // returns; the parent closes its copy of the read end.
        match unsafe { libc::fork() } {
            -1 => {
                // SAFETY: closing the descriptors we just made.
                unsafe {
                    libc::close(read);
                    libc::close(write);
                }
                None
            }
            0 => watch_loop(read),
            _ => {
                // SAFETY: the read end is the watchdog's now.
                unsafe { libc::close(read) };
                Some(write)
            }
        }
    }

    /// The watchdog: reads group ids (negative: forget) until the pipe ends, then stops the
    /// groups left. Only async-signal-safe calls, no allocation: it runs in a fork of a
    /// threaded process.
    fn watch_loop(read: libc::c_int) -> ! {
        // SAFETY (whole function): plain system calls on descriptors and stack buffers.
        unsafe {
            // Its own group, out of the terminal's reach (Ctrl-C and a hang-up go to the
            // tool, which stops its runs itself); all signals unblocked.
            libc::setpgid(0, 0);
            let _ = crate::host::unblock_all_signals();
            libc::signal(libc::SIGINT, libc::SIG_IGN);
            libc::signal(libc::SIGHUP, libc::SIG_IGN);
            // Hold nothing of the tool's open: not its output (a caller waits for the end
            // of it), not the write end of our own pipe, not the pipes of its runs.
            let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
            if null >= 0 {
                for fd in 0..3 {
                    libc::dup2(null, fd);
                }
            }
            // Nor its working directory.
            libc::chdir(c"/".as_ptr());
            let keep = read;
            if libc::syscall(libc::SYS_close_range, 3u32, (keep - 1) as u32, 0u32) != 0
                || libc::syscall(libc::SYS_close_range, (keep + 1) as u32, u32::MAX, 0u32) != 0
            {
                for fd in 3..4096 {
                    if fd != keep {
                        libc::close(fd);
                    }
                }
            }
            let mut groups = [0 as libc::pid_t; MAX_GROUPS];
            let mut n = 0usize;
            let mut buf = [0u8; 4];
            let mut have = 0usize;
            loop {
                let r = libc::read(keep, buf.as_mut_ptr().add(have).cast(), 4 - have);
                if r < 0 && *libc::__errno_location() == libc::EINTR {
                    continue;
                }
                if r <= 0 {
                    break;
                }
                have += r as usize;
                if have < 4 {
                    continue;
                }
                have = 0;
                let word = i32::from_ne_bytes(buf);
                if word > 0 && n < MAX_GROUPS {
                    groups[n] = word;
                    n += 1;
                } else if word < 0
                    && let Some(i) = groups[..n].iter().position(|g| *g == -word)
                {
                    groups[i] = groups[n - 1];
                    n -= 1;
                }
            }
            // The tool is gone.
            for g in &groups[..n] {
                libc::kill(-*g, libc::SIGTERM);
            }
            let step = libc::timespec {
                tv_sec: 0,
                tv_nsec: 50_000_000,
            };
            let steps = KILL_GRACE.as_millis() / 50;
            for _ in 0..steps {
                if groups[..n].iter().all(|g| libc::kill(-*g, 0) != 0) {
                    break;
                }
                libc::nanosleep(&step, std::ptr::null_mut());
            }
            for g in &groups[..n] {
                libc::kill(-*g, libc::SIGKILL);
            }
            libc::_exit(0)
        }
    }
}

/// SIGINT, SIGTERM and SIGHUP, handled alike: every run in progress is stopped, and the
/// scheduling loop (which [`subscribe`](signals::subscribe)s) returns its running tasks to
/// pending and ends; the tool exits with 128 + the signal's number (130, 143, 129).
///
/// [`install`](signals::install) blocks the three signals in the calling thread — call it
/// first thing in `main`, so every thread inherits the mask — and waits for them on a thread
/// of its own. Programs started by [`run`] start with no signal blocked; other children (the
/// short `git` commands) inherit the mask and finish what they do.
/// When nothing subscribes (a command outside the loop), a signal stops the runs and exits
/// at once. A second signal while the first is handled kills the runs and exits at once.
pub mod signals {
    use std::sync::LazyLock;
    use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
    use std::time::Duration;

    /// The first signal received, 0 before one.
    static RECEIVED: AtomicI32 = AtomicI32::new(0);
    /// How many subscriptions are alive.
    static SUBSCRIBERS: AtomicUsize = AtomicUsize::new(0);
    /// Wakes the subscribers.
    static CHANNEL: LazyLock<tokio::sync::watch::Sender<i32>> =
        LazyLock::new(|| tokio::sync::watch::Sender::new(0));

    /// How long runs get between SIGTERM and SIGKILL when the tool is stopped by a signal.
    pub const STOP_GRACE: Duration = Duration::from_secs(2);

    const HANDLED: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

    /// Blocks SIGINT, SIGTERM and SIGHUP in this thread and handles them on a new one.
    pub fn install() {
        // SAFETY: a sigset on the stack, filled by sigemptyset/sigaddset before use.
        let set = unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for s in HANDLED {
                libc::sigaddset(&mut set, s);
            }
            if libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
                return;
            }
            set
        };
        let spawned = std::thread::Builder::new()
            .name("signals".into())
            .spawn(move || {
                loop {
                    let mut sig: libc::c_int = 0;
                    // SAFETY: waits for one of the blocked signals; writes only `sig`.
                    if unsafe { libc::sigwait(&set, &mut sig) } != 0 {
                        continue;
                    }
                    handle(sig);
                }
            });
        if spawned.is_err() {
            // Nobody would wait for them: let them act as they do by default.
            // SAFETY: as above.
            unsafe { libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut()) };
        }
    }

    fn handle(sig: libc::c_int) {
        let first = RECEIVED
            .compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok();
        if first && SUBSCRIBERS.load(Ordering::SeqCst) > 0 {
            CHANNEL.send_replace(sig);
            super::stop_all(STOP_GRACE);
            return;
        }
        if first {
            super::stop_all(STOP_GRACE);
        } else {
            super::stop_all(Duration::ZERO);
        }
        std::process::exit(crate::error::exit::for_signal(sig));
    }

    /// The signal that stops the tool, once one came.
    pub fn received() -> Option<i32> {
        match RECEIVED.load(Ordering::SeqCst) {
            0 => None,
            s => Some(s),
        }
    }

    /// `SIGINT (Ctrl-C)`, `SIGTERM`, `SIGHUP (the terminal closed)`.
    pub fn name(sig: i32) -> &'static str {
        crate::error::signal_name(sig)
    }

    /// Says that the caller handles the signals while this lives: they wake
    /// [`Subscription::received`] instead of ending the process.
    pub fn subscribe() -> Subscription {
        SUBSCRIBERS.fetch_add(1, Ordering::SeqCst);
        Subscription {
            rx: CHANNEL.subscribe(),
        }
    }

    /// See [`subscribe`].
    pub struct Subscription {
        rx: tokio::sync::watch::Receiver<i32>,
    }

    impl Subscription {
        /// Resolves with the signal once one came (at once if it came before).
        pub async fn received(&mut self) -> i32 {
            match self.rx.wait_for(|s| *s != 0).await {
                Ok(s) => *s,
                // The sender is a static that is never dropped.
                Err(_) => std::future::pending().await,
            }
        }
    }

    impl Drop for Subscription {
        fn drop(&mut self) {
            SUBSCRIBERS.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::duration::*;
    use super::home::*;
    use super::lookup::*;
    use super::*;

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/agents")
            .join(name)
    }

    /// Whether `pid` is gone (or a zombie nobody has reaped yet, which runs no code).
    fn gone(pid: i32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(stat) => stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
        }
    }

    #[test]
    fn durations() {
        let d = |s: &str| parse_duration(s).unwrap();
        assert_eq!(d("20m"), Duration::from_secs(1200));
        assert_eq!(d("90s"), Duration::from_secs(90));
        assert_eq!(d("1h"), Duration::from_secs(3600));
        assert_eq!(d("1h30m"), Duration::from_secs(5400));
        assert_eq!(d("500ms"), Duration::from_millis(500));
        assert_eq!(d("45"), Duration::from_secs(45));
        for bad in ["", "m", "0", "0s", "10x", "1.5h", "-3s"] {
            let err = parse_duration(bad).unwrap_err().to_string();
            assert!(err.contains("invalid duration"), "{bad}: {err}");
        }
    }

    #[test]
    fn stdin_env_and_workdir_reach_the_program() {
        let dir = tempfile::tempdir().unwrap();
        let mut inv = Invocation::new("/bin/sh", dir.path());
        inv.args = vec![
            "-c".into(),
            "wc -c; pwd; echo \"$TLV4_X\"; echo \"${GIT_DIR:-unset}\"; echo oops >&2; exit 3"
                .into(),
        ];
        inv.env = vec![("TLV4_X".into(), "it's here".into())];
        inv.stdin = Some(vec![b'a'; 300 * 1024]);
        let out = run(&inv).unwrap();
        let lines: Vec<&str> = out.stdout.lines().collect();
        assert_eq!(lines[0].trim(), "307200");
        assert_eq!(
            Path::new(lines[1]).canonicalize().unwrap(),
            dir.path().canonicalize().unwrap()
        );
        assert_eq!(lines[2], "it's here");
        assert_eq!(lines[3], "unset");
        assert_eq!(out.code, Some(3));
        assert_eq!(out.tail(1), "oops");
        assert!(!out.success() && !out.timed_out);
    }

    #[test]
    fn a_stop_request_from_a_line_stops_the_group_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut inv = Invocation::new("/bin/sh", dir.path());
        inv.args = vec![
            "-c".into(),
            "i=0; while true; do i=$((i+1)); echo line $i; sleep 0.05; done".into(),
        ];
        inv.timeout = Duration::from_secs(60);
        inv.kill_grace = Duration::from_millis(500);
        let stop = Stop::new();
        inv.stop = Some(stop.clone());
        let asker = stop.clone();
        inv.on_line = Some(LineSink(Arc::new(move |l: &str| {
            if l == "line 3" {
                asker.request();
            }
        })));
        let started = Instant::now();
        let out = run(&inv).unwrap();
        assert!(started.elapsed() < Duration::from_secs(5), "{out:?}");
        assert!(stop.requested());
        // Stopped, not timed out: the caller says why.
        assert!(!out.timed_out && !out.success(), "{out:?}");
        assert!(out.stdout.contains("line 3"), "{out:?}");
        // A stopped run is never repeated, whatever `transient` says.
        let policy = RetryPolicy {
            tries: 3,
            backoff: Duration::from_millis(1),
        };
        let (_, runs) = run_with_retries(&inv, &policy, &|_| true).unwrap();
        assert_eq!(runs, 1);
    }

    #[test]
    fn timeout_kills_the_whole_process_group() {
        let dir = tempfile::tempdir().unwrap();
        let pids = dir.path().join("pids");
        let mut inv = Invocation::new(fixture("fake-command"), dir.path());
        inv.env = vec![
            ("FAKE_AGENT_MODE".into(), "hang_child".into()),
            ("FAKE_AGENT_PIDFILE".into(), pids.display().to_string()),
        ];
        inv.stdin = Some(b"# Task X\n".to_vec());
        inv.timeout = Duration::from_millis(1500);
        inv.kill_grace = Duration::from_millis(500);
        let started = Instant::now();
        let out = run(&inv).unwrap();
        assert!(out.timed_out, "{out:?}");
        assert!(!out.success());
        assert!(started.elapsed() < Duration::from_secs(6));
        let text = std::fs::read_to_string(&pids).expect("the fake wrote its pids");
        let pids: Vec<i32> = text
            .split_whitespace()
            .map(|p| p.parse().unwrap())
            .collect();
        assert_eq!(pids.len(), 2, "leader and child: {text}");
        // The child ignores SIGTERM; it must have been killed all the same.
        let deadline = Instant::now() + Duration::from_secs(2);
        while !pids.iter().all(|&p| gone(p)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        for p in pids {
            assert!(gone(p), "process {p} survived the timeout");
        }
    }

    #[test]
    fn programs_start_with_no_signal_blocked() {
        // As in the tool, whose threads block the signals its signal thread waits for.
        let blocked = std::thread::spawn(|| {
            // SAFETY: a sigset on the stack, filled before use; this thread's mask only.
            unsafe {
                let mut set: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut set);
                libc::sigaddset(&mut set, libc::SIGTERM);
                libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            }
            let mut inv = Invocation::new("/bin/cat", "/");
            inv.args = vec!["/proc/self/status".into()];
            run(&inv).unwrap()
        })
        .join()
        .unwrap();
        let line = blocked
            .stdout
            .lines()
            .find(|l| l.starts_with("SigBlk:"))
            .unwrap()
            .to_owned();
        assert_eq!(line, "SigBlk:\t0000000000000000");
    }

    #[test]
    fn giant_output_is_bounded_head_and_tail() {
        let dir = tempfile::tempdir().unwrap();
        let mut inv = Invocation::new("/bin/sh", dir.path());
        inv.args = vec![
            "-c".into(),
            "echo FIRST; head -c 3000000 /dev/zero | tr '\\0' x; echo; echo LAST".into(),
        ];
        inv.capture_limit = 64 * 1024;
        let out = run(&inv).unwrap();
        assert!(out.success());
        assert!(out.stdout.starts_with("FIRST\n"));
        assert!(out.stdout.trim_end().ends_with("LAST"));
        assert!(
            out.stdout.len() < 2 * 64 * 1024 + 200,
            "{}",
            out.stdout.len()
        );
        assert!(out.dropped > 2_000_000);
        assert!(out.stdout.contains("bytes of output were dropped here"));
    }

    #[test]
    fn missing_program_names_agent_program_and_path() {
        let err = find_program(
            "mine",
            "no-such-agent-cli",
            Path::new("/"),
            Some(std::ffi::OsStr::new("/nowhere/bin:/usr/nothing")),
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(text.contains("agent `mine`"), "{text}");
        assert!(text.contains("`no-such-agent-cli`"), "{text}");
        assert!(text.contains("/nowhere/bin:/usr/nothing"), "{text}");
        assert!(err.hints()[0].contains("[agents.mine]"));
        let err = find_program("mine", "./bin/agent", Path::new("/nonexistent"), None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("/nonexistent/./bin/agent"), "{err}");
        assert!(find_program("sh", "sh", Path::new("/"), None).is_ok());
    }

    #[test]
    fn transient_failures_are_retried_with_backoff() {
        let dir = tempfile::tempdir().unwrap();
        let mut inv = Invocation::new("/bin/sh", dir.path());
        // Fails with 75 (EX_TEMPFAIL) until it has run twice.
        inv.args = vec![
            "-c".into(),
            "echo x >> runs; [ $(wc -l < runs) -ge 3 ] || exit 75; echo done".into(),
        ];
        let policy = RetryPolicy {
            tries: 3,
            backoff: Duration::from_millis(10),
        };
        let (out, tries) = run_with_retries(&inv, &policy, &|o| o.code == Some(75)).unwrap();
        assert_eq!((tries, out.stdout.trim()), (3, "done"));
        std::fs::remove_file(dir.path().join("runs")).unwrap();
        let policy = RetryPolicy { tries: 2, ..policy };
        let (out, tries) = run_with_retries(&inv, &policy, &|o| o.code == Some(75)).unwrap();
        assert_eq!((tries, out.code), (2, Some(75)));
    }

    #[test]
    fn isolated_home_is_fresh_and_removed() {
        let home = Home::new(None, Path::new("/")).unwrap();
        let path = home.path().to_path_buf();
        assert!(home.isolated() && path.join(".config").is_dir());
        let env = home.env();
        assert!(env.iter().any(|(k, v)| k == "HOME" && Path::new(v) == path));
        assert!(env.iter().any(|(k, _)| k == "XDG_CONFIG_HOME"));
        drop(home);
        assert!(!path.exists());
        let mine = Home::new(Some("~/agents"), Path::new("/")).unwrap();
        assert!(!mine.isolated());
        assert!(mine.path().ends_with("agents"));
        assert_eq!(mine.env().len(), 1);
    }
}
