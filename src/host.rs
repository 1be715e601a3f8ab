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

/// Whether process `pid` runs on this machine: it exists, is not a zombie (which runs no
/// code), and when `start_time` is given, started then (so a reused pid is not taken for the
/// process recorded earlier). `start_time` is [`process_start_time`]'s value.
pub fn process_alive(pid: u32, start_time: Option<u64>) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 only checks for existence and permission; nothing is sent.
    let rc = unsafe { libc::kill(pid, 0) };
    if !(rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)) {
        return false;
    }
    match stat_fields(pid as u32) {
        // No /proc (or it went in between): existence is all we know.
        None => true,
        Some(f) => {
            let state = f.first().map_or("", String::as_str);
            let started = f.get(19).and_then(|s| s.parse::<u64>().ok());
            !matches!(state, "Z" | "X") && start_time.is_none_or(|t| started == Some(t))
        }
    }
}

/// When process `pid` started, in clock ticks after boot (`/proc/<pid>/stat` field 22):
/// with the pid, it names one process for good.
pub fn process_start_time(pid: u32) -> Option<u64> {
    stat_fields(pid)?.get(19)?.parse().ok()
}

/// Whether process group `pgid` still has a member, for a group whose leader started at
/// `leader_start`: a group outlives its leader, but once the leader's pid names a process
/// that started at another time, that is someone else's group.
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
            stat_fields(pid).is_some_and(|f| {
                f.get(2).and_then(|g| g.parse::<u32>().ok()) == Some(pgid)
                    && !matches!(f[0].as_str(), "Z" | "X")
            })
        })
}

/// The fields of `/proc/<pid>/stat` after the parenthesised name: state first (field 3).
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    Some(after.split_whitespace().map(str::to_owned).collect())
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

/// The parent of `pid`, from `/proc/<pid>/stat` (the field after the state).
fn stat_ppid(pid: u32) -> Option<u32> {
    stat_fields(pid)?.get(1)?.parse().ok()
}
