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

/// Whether process `pid` exists on this machine.
pub fn process_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 only checks for existence and permission; nothing is sent.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
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

/// The parent of `pid`, from `/proc/<pid>/stat` (the field after the parenthesised name).
fn stat_ppid(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(1)?.parse().ok()
}
