//! Facts about this machine and its processes, for task ownership.

/// This machine's host name.
pub fn name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its whole length, and gethostname writes at most that.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "localhost".to_owned();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// Whether process `pid` is alive on this machine: it exists, is not a zombie (`/proc/<pid>/stat`
/// state `Z` or `X`: dead, waiting to be reaped), and — when `start_time` is given — started at
/// that time (field 22 of `/proc/<pid>/stat`, in clock ticks since boot), so a pid reused by
/// another process does not count. Without `/proc` only existence can be checked.
pub fn process_alive(pid: u32, start_time: Option<u64>) -> bool {
    let Ok(raw) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if raw <= 0 {
        return false;
    }
    if let Some(stat) = read_stat(pid) {
        if matches!(stat.state, 'Z' | 'X' | 'x') {
            return false;
        }
        return start_time.is_none_or(|t| t == stat.start_time);
    }
    if std::path::Path::new("/proc/self/stat").exists() {
        return false; // /proc works, and has no entry for this pid
    }
    // SAFETY: signal 0 only checks for existence and permission; nothing is sent.
    let rc = unsafe { libc::kill(raw, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// When process `pid` started (field 22 of `/proc/<pid>/stat`), to tell it from a later
/// process that reuses its pid; `None` without `/proc`.
pub fn process_start_time(pid: u32) -> Option<u64> {
    read_stat(pid).map(|s| s.start_time)
}

/// The start time of this process, recorded in the owner of a task it claims.
pub fn own_start_time() -> Option<u64> {
    // It never changes: /proc is read once per process (a forked child, the watchdog,
    // has a pid and a start time of its own).
    static START: std::sync::OnceLock<(u32, Option<u64>)> = std::sync::OnceLock::new();
    let me = std::process::id();
    match START.get_or_init(|| (me, process_start_time(me))) {
        (pid, start) if *pid == me => *start,
        _ => process_start_time(me),
    }
}

/// The fields of `/proc/<pid>/stat` that ownership needs.
struct Stat {
    state: char,
    ppid: u32,
    start_time: u64,
}

/// Parses `/proc/<pid>/stat`: the fields after the parenthesised command name (which may hold
/// spaces and parentheses itself, hence the last `)`), counted from field 3 (state).
fn read_stat(pid: u32) -> Option<Stat> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    Some(Stat {
        state: fields.first()?.chars().next()?,
        ppid: fields.get(1)?.parse().ok()?,
        // Field 22 overall is the 20th after the name (fields 3.. are at index 0..).
        start_time: fields.get(19)?.parse().ok()?,
    })
}

/// The process that ran this command: the parent, or the grandparent when the parent is the
/// short-lived `git` process of `git tlv4 …`.
pub fn parent_pid() -> u32 {
    // SAFETY: getppid cannot fail.
    let ppid = u32::try_from(unsafe { libc::getppid() }).unwrap_or(0);
    let comm = std::fs::read_to_string(format!("/proc/{ppid}/comm")).unwrap_or_default();
    if comm.trim() == "git"
        && let Some(grand) = stat_ppid(ppid)
    {
        return grand;
    }
    ppid
}

/// The parent of `pid`, from `/proc/<pid>/stat`.
fn stat_ppid(pid: u32) -> Option<u32> {
    read_stat(pid).map(|s| s.ppid)
}

/// Whether process group `pgid` still has a member that runs, for a group whose leader
/// started at `leader_start`: a group outlives its leader, but once the leader's pid names a
/// process that started at another time, that is someone else's group.
pub fn group_alive(pgid: u32, leader_start: Option<u64>) -> bool {
    let Ok(pg) = libc::pid_t::try_from(pgid) else {
        return false;
    };
    if pg <= 1 {
        return false;
    }
    if let (Some(t), Some(now)) = (leader_start, process_start_time(pgid))
        && t != now
    {
        return false;
    }
    // SAFETY: signal 0 to a group only checks that it has members.
    let rc = unsafe { libc::kill(-pg, 0) };
    if !(rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)) {
        return false;
    }
    if process_alive(pgid, None) {
        return true;
    }
    // The leader is gone or a zombie: is another member running (zombies run nothing)?
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return true;
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .any(|pid| {
            // The fields after the name: state first, the group third (field 5).
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|stat| {
                    let after = &stat[stat.rfind(')')? + 1..];
                    let f: Vec<&str> = after.split_whitespace().collect();
                    let group = f.get(2)?.parse::<u32>().ok()?;
                    Some(group == pgid && !matches!(*f.first()?, "Z" | "X"))
                })
                .unwrap_or(false)
        })
}

/// Unblocks every signal in the calling thread. For a child between fork and exec: the tool
/// blocks SIGINT, SIGTERM and SIGHUP in its threads (it reads them itself) and a child
/// inherits the mask, so a program it starts must begin with none blocked, or it could not be
/// stopped. Only `sigemptyset` and `pthread_sigmask`, which are async-signal-safe.
pub fn unblock_all_signals() -> std::io::Result<()> {
    // SAFETY: a signal set on the stack, emptied before use, set as this thread's mask.
    let rc = unsafe {
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::pthread_sigmask(libc::SIG_SETMASK, &none, std::ptr::null_mut())
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::from_raw_os_error(rc))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_with_its_start_time_only() {
        let me = std::process::id();
        let start = own_start_time();
        assert!(process_alive(me, None));
        assert!(process_alive(me, start));
        if let Some(t) = start {
            assert!(
                !process_alive(me, Some(t + 1)),
                "a reused pid is not the owner"
            );
        }
    }

    #[test]
    fn a_zombie_is_not_alive() {
        // A child that exited and was not reaped yet is a zombie: its pid still exists.
        let child = std::process::Command::new("true")
            .spawn()
            .expect("`true` runs");
        let pid = child.id();
        let start = process_start_time(pid);
        for _ in 0..500 {
            if read_stat(pid).is_some_and(|s| s.state == 'Z') {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(
            read_stat(pid).is_some_and(|s| s.state == 'Z'),
            "the child is a zombie"
        );
        assert!(!process_alive(pid, None));
        assert!(!process_alive(pid, start));
        drop(child);
    }

    #[test]
    fn no_such_process() {
        assert!(!process_alive(0, None));
        assert!(!process_alive(u32::MAX, None));
    }
}
