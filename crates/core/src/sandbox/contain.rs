//! The reaper: `git-tlv4 __contain PROGRAM ARGS…` runs a confined program so that nothing it
//! starts outlives it.
//!
//! The reaper is a child subreaper (`PR_SET_CHILD_SUBREAPER`): a process whose parent dies
//! is handed to it rather than to init, so a daemon the program starts with `setsid` or a
//! double fork stays in its subtree. When the program ends, or when the reaper is told to
//! stop (SIGTERM, SIGINT, SIGHUP: it forwards the signal to the program and waits a moment),
//! it kills every process left below it, reaps them, and exits as the program did: with its
//! exit code, or by its signal. The reaper itself runs unconfined and confines the program
//! between its fork and exec, with the Landlock ruleset the tool built and handed over
//! (`--confine FD unix|any`): the program is then in a Landlock domain the reaper is not in,
//! so its signal scope keeps it from killing the reaper (which would hand its daemons to
//! init). The tool's death signal reaches the reaper (`PR_SET_PDEATHSIG`) and is forwarded,
//! and the program dies if the reaper is killed outright.

// The reaper is a program of its own (`git-tlv4 __contain`), run before any `Ui` exists:
// what goes wrong in it goes to its stderr.
#![allow(clippy::print_stderr)]

use std::collections::{BTreeSet, HashMap};
use std::ffi::OsString;
use std::os::fd::RawFd;
use std::os::unix::process::CommandExt;
use std::time::{Duration, Instant};

/// The hidden first argument that makes `git-tlv4` the reaper.
pub const SUBCOMMAND: &str = "__contain";

/// The `git-tlv4` program that serves as the reaper: the running one, or (for this crate's
/// own test programs) the one built beside them; `None` when there is none, and a program
/// then runs confined but without a reaper.
pub fn reaper() -> Option<std::path::PathBuf> {
    let me = std::env::current_exe().ok()?;
    if me.file_name().is_some_and(|n| n == "git-tlv4") {
        return Some(me);
    }
    let built = me.parent()?.parent()?.join("git-tlv4");
    built.is_file().then_some(built)
}

/// How long the program has to end after the reaper forwarded a stop signal.
const GRACE: Duration = Duration::from_secs(2);

/// Runs the reaper when the command line asks for it (`git-tlv4 __contain PROGRAM ARGS…`);
/// returns otherwise. Call first thing in `main`.
pub fn main_if_asked() {
    let mut args = std::env::args_os();
    let _ = args.next();
    if args.next().as_deref() != Some(std::ffi::OsStr::new(SUBCOMMAND)) {
        return;
    }
    let mut rest: Vec<OsString> = args.collect();
    let mut confinement = None;
    if rest.first().is_some_and(|a| a == "--confine") && rest.len() >= 3 {
        let fd = rest[1].to_str().and_then(|f| f.parse::<RawFd>().ok());
        let unix = rest[2] == "unix";
        confinement = Some((fd, unix));
        rest.drain(..3);
    }
    let code = match rest.split_first() {
        Some((program, args)) => reap(program, args, confinement),
        None => {
            eprintln!("git-tlv4 {SUBCOMMAND}: no program to run");
            2
        }
    };
    std::process::exit(code);
}

/// Runs `program` with `args` as the subreaper of everything it starts, confined (between its
/// fork and exec) by `confinement`: the Landlock ruleset descriptor the tool handed over and
/// whether Unix sockets are refused. Returns the exit code to leave with (after re-raising a
/// fatal signal of the program on itself).
fn reap(program: &OsString, args: &[OsString], confinement: Option<(Option<RawFd>, bool)>) -> i32 {
    let filter = match confinement {
        Some((_, true)) => match crate::sandbox::unix_socket_filter() {
            Ok(f) => Some(f),
            Err(e) => {
                eprintln!("git-tlv4 {SUBCOMMAND}: {e}");
                return 126;
            }
        },
        _ => None,
    };
    let ruleset = confinement.and_then(|(fd, _)| fd);
    // The death signal the tool set (SIGTERM) stays: it is forwarded like any stop.
    // SAFETY: a plain prctl on this single-threaded process.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
    // The stop signals, and SIGCHLD so that a child's end wakes the wait at once.
    let mut waited = stop_signals();
    // SAFETY: adding to a signal set on the stack, then blocking the set in this thread;
    // its signals are read with sigtimedwait below.
    unsafe {
        libc::sigaddset(&mut waited, libc::SIGCHLD);
        libc::pthread_sigmask(libc::SIG_BLOCK, &waited, std::ptr::null_mut());
    }
    let mut cmd = std::process::Command::new(program);
    cmd.args(args);
    // SAFETY: only sigemptyset, pthread_sigmask, prctl, the confinement (prctl, the seccomp
    // and Landlock system calls) and close, which are async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            crate::host::unblock_all_signals()?;
            // Should the reaper be killed outright, the program goes with it.
            libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            );
            if confinement.is_some() {
                crate::sandbox::confine(ruleset, filter.as_ref())?;
                if let Some(fd) = ruleset {
                    libc::close(fd);
                }
            }
            Ok(())
        });
    }
    let spawned = cmd.spawn();
    // The program has its confinement (or never started); the reaper keeps no handle on it.
    if let Some(fd) = ruleset {
        // SAFETY: the descriptor the tool handed over, used by nothing else here.
        unsafe { libc::close(fd) };
    }
    let child = match spawned {
        Ok(c) => c,
        Err(e) => {
            eprintln!(
                "git-tlv4 {SUBCOMMAND}: cannot run {}: {e}",
                program.to_string_lossy()
            );
            return if e.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            };
        }
    };
    let main = child.id() as libc::pid_t;
    let mut status: Option<libc::c_int> = None;
    let mut stop_by: Option<Instant> = None;
    loop {
        // Reap whatever ended: the program, or an orphan handed to us.
        loop {
            let mut st = 0;
            // SAFETY: waitpid on our own children.
            let pid = unsafe { libc::waitpid(-1, &mut st, libc::WNOHANG) };
            if pid <= 0 {
                break;
            }
            if pid == main {
                status = Some(st);
            }
        }
        if status.is_some() {
            break;
        }
        if stop_by.is_some_and(|t| Instant::now() >= t) {
            kill_all(main);
            stop_by = None;
        }
        let timeout = libc::timespec {
            tv_sec: 0,
            tv_nsec: 20_000_000,
        };
        // SAFETY: waits for a stop signal or a child's end, 20 ms at most.
        let sig = unsafe { libc::sigtimedwait(&waited, std::ptr::null_mut(), &timeout) };
        if sig > 0 && sig != libc::SIGCHLD {
            // SAFETY: signalling the program's process group, then the program.
            unsafe {
                libc::kill(main, sig);
            }
            stop_by.get_or_insert(Instant::now() + GRACE);
        }
    }
    empty();
    let st = status.unwrap_or(0);
    if libc::WIFSIGNALED(st) {
        let sig = libc::WTERMSIG(st);
        // SAFETY: default action for the program's signal, unblocked, then raised on us.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, sig);
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            libc::raise(sig);
        }
        return 128 + sig;
    }
    libc::WEXITSTATUS(st)
}

fn stop_signals() -> libc::sigset_t {
    // SAFETY: building a signal set on the stack.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            libc::sigaddset(&mut set, sig);
        }
        set
    }
}

/// Kills every process below the reaper (the program `main` first, then the rest), once.
fn kill_all(main: libc::pid_t) {
    // SAFETY: signalling our own descendants.
    unsafe { libc::kill(main, libc::SIGKILL) };
    for pid in descendants() {
        // SAFETY: as above.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

/// Kills and reaps everything left below the reaper, until nothing is.
fn empty() {
    loop {
        let left = descendants();
        for pid in &left {
            // SAFETY: signalling our own descendants.
            unsafe { libc::kill(*pid, libc::SIGKILL) };
        }
        let mut reaped = false;
        loop {
            let mut st = 0;
            // SAFETY: waitpid on our own children.
            let pid = unsafe { libc::waitpid(-1, &mut st, libc::WNOHANG) };
            if pid <= 0 {
                break;
            }
            reaped = true;
        }
        if left.is_empty() {
            // A process that was just forking may not be listed yet: one more look at our
            // children (without waiting) goes round again if one ended meanwhile.
            let mut st = 0;
            // SAFETY: as above.
            if unsafe { libc::waitpid(-1, &mut st, libc::WNOHANG) } <= 0 {
                return;
            }
            continue;
        }
        if !reaped {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// Every process whose chain of parents leads to this one, read from `/proc`.
fn descendants() -> Vec<libc::pid_t> {
    // SAFETY: getpid cannot fail.
    let me = unsafe { libc::getpid() };
    let mut children: HashMap<libc::pid_t, Vec<libc::pid_t>> = HashMap::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<libc::pid_t>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // `pid (comm) state ppid …`; the name may hold spaces and parentheses.
        let Some(ppid) = stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().nth(1))
            .and_then(|p| p.parse::<libc::pid_t>().ok())
        else {
            continue;
        };
        children.entry(ppid).or_default().push(pid);
    }
    let mut found = BTreeSet::new();
    let mut todo = vec![me];
    while let Some(p) = todo.pop() {
        for &c in children.get(&p).map(Vec::as_slice).unwrap_or_default() {
            if found.insert(c) {
                todo.push(c);
            }
        }
    }
    found.into_iter().collect()
}
