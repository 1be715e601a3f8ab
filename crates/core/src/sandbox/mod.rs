//! The kernel's confinement of the programs the tool starts: agents, the repository's setup
//! and its tests.
//!
//! A [`Policy`] says what a program may write, read and connect to. [`Policy::prepare`]
//! builds it in the parent, before any fork: a Landlock ruleset (its file descriptor) and,
//! for agents, a seccomp filter. Between fork and exec the child only applies them
//! ([`Prepared::apply`]: `prctl`, `seccomp`, `landlock_restrict_self`, all async-signal-safe,
//! nothing allocated), so the program and everything it starts are confined for their whole
//! life. A confined program whose policy asks for it is started through the reaper
//! ([`contain`]): `git-tlv4` itself, as a child subreaper that runs the program and, when it
//! ends or is stopped, kills whatever the program left behind — a daemon started with
//! `setsid` or a double fork included, since an orphan goes to its nearest subreaper.
//!
//! Why these mechanisms:
//! - **Landlock** (files, TCP ports, abstract Unix sockets and signals by scope) needs no
//!   privilege, no user namespace and no setuid helper, and stacks under whatever the CLI
//!   does itself. It cannot say "anything but this subtree", so reads are an allow-list.
//! - A Landlock ruleset lets `connect()` to a **pathname Unix socket** through
//!   (`$SSH_AUTH_SOCK`, `docker.sock`, the D-Bus bus): an agent's seccomp filter refuses to
//!   create Unix sockets at all (`socket(AF_UNIX, …)`: `EACCES`); `socketpair()`, which pipes
//!   between a program and its children use, stays. The variables that point at such sockets
//!   are also left out of an agent's environment ([`SOCKET_VARS`]). A mount namespace could
//!   hide the sockets instead, but needs unprivileged user namespaces, which several
//!   distributions restrict.
//! - **Processes**: a subreaper that empties its subtree needs neither a PID namespace (user
//!   namespaces again) nor a delegated cgroup.
//!
//! [`level`] says which protection this kernel gives: *full* is Landlock ABI ≥ 6 (files, TCP,
//! scopes) with seccomp; *partial* is an older Landlock; *none* is no Landlock.

pub mod contain;

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, NetPort, PathBeneath, PathFd,
    Ruleset, RulesetAttr, RulesetCreatedAttr, Scope,
};

use crate::error::{Error, Result};

/// The Landlock ABI the rules are written for: the newest this build knows of that the
/// rights used here exist in.
const TARGET: ABI = ABI::V6;

/// Variables that point a program at a socket or a session of the user's (an agent would
/// reach the user's SSH agent, Docker, D-Bus, GPG agent or display through them).
pub const SOCKET_VARS: [&str; 11] = [
    "SSH_AUTH_SOCK",
    "SSH_AGENT_PID",
    "GPG_AGENT_INFO",
    "DBUS_SESSION_BUS_ADDRESS",
    "DBUS_SYSTEM_BUS_ADDRESS",
    "DOCKER_HOST",
    "CONTAINER_HOST",
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "XDG_RUNTIME_DIR",
    "XAUTHORITY",
];

/// System trees every confined program may read (and run programs from): the programs,
/// libraries and configuration of the system, the kernel's views, the devices.
const SYSTEM_READ: [&str; 12] = [
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/proc",
    "/sys", "/dev",
];

/// Device files every confined program may write.
const DEVICES: [&str; 7] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/random",
    "/dev/urandom",
];

/// What a confined program may do.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    /// Trees (or files) it may write, and read.
    pub write: Vec<PathBuf>,
    /// Trees it may read and run programs from, besides the system's ([`SYSTEM_READ`]) and
    /// the `write` ones; `None`: it may read anything.
    pub read: Option<Vec<PathBuf>>,
    /// The TCP ports it may connect to; `None`: any.
    pub connect: Option<Vec<u16>>,
    /// Whether it may create Unix sockets (`socket(AF_UNIX, …)`).
    pub unix_sockets: bool,
    /// Whether it runs under the reaper ([`contain`]), so that nothing it starts outlives it.
    pub contain: bool,
}

/// How much protection this kernel gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Landlock ABI ≥ 6: files, TCP ports, abstract sockets and signals; and seccomp.
    Full(i32),
    /// An older Landlock: files only (ABI < 4), or without the scopes (ABI 4–5).
    Partial(i32),
    /// No Landlock (not built in, or not in the kernel's `lsm=` list).
    None,
}

impl Level {
    /// Whether agents may be given a shell: files, ports and the socket and process gaps
    /// closed.
    pub fn active(self) -> bool {
        matches!(self, Level::Full(_))
    }

    /// For people: `full (Landlock ABI 7, seccomp)`.
    pub fn describe(self) -> String {
        match self {
            Level::Full(abi) => format!(
                "full (Landlock ABI {abi}: files, TCP ports, abstract sockets, signals; seccomp: no Unix sockets for agents; a reaper for what agents start)"
            ),
            Level::Partial(abi) if abi < 4 => format!(
                "partial (Landlock ABI {abi}: files only; no TCP rules, no socket or signal scopes)"
            ),
            Level::Partial(abi) => format!(
                "partial (Landlock ABI {abi}: files and TCP ports; no abstract-socket or signal scopes)"
            ),
            Level::None => {
                "none (this kernel has no Landlock, or it is not in its lsm= list)".to_owned()
            }
        }
    }
}

/// The protection this kernel gives (asked once).
pub fn level() -> Level {
    static LEVEL: OnceLock<Level> = OnceLock::new();
    *LEVEL.get_or_init(|| {
        // SAFETY: landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) only
        // returns the ABI version.
        let abi = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<u8>(),
                0usize,
                1u32,
            )
        } as i32;
        match abi {
            a if a >= 6 => Level::Full(a),
            a if a >= 1 => Level::Partial(a),
            _ => Level::None,
        }
    })
}

/// A policy built for one program: what the child applies between fork and exec.
#[derive(Debug)]
pub struct Prepared {
    ruleset: Option<OwnedFd>,
    seccomp: Option<seccompiler::BpfProgram>,
    /// Whether the program is started through the reaper.
    pub contain: bool,
}

impl Policy {
    /// Builds the Landlock ruleset and the seccomp filter of this policy, in the parent. A
    /// path that does not exist is left out (nothing can be under it). Where the kernel has
    /// no Landlock, the ruleset is absent and only the filter and the reaper apply.
    pub fn prepare(&self) -> Result<Prepared> {
        let ruleset = if level() == Level::None {
            None
        } else {
            self.ruleset()
                .map_err(|e| Error::state(format!("cannot build the sandbox's rules: {e}"), None))?
        };
        let seccomp = if self.unix_sockets {
            None
        } else {
            Some(no_unix_sockets()?)
        };
        Ok(Prepared {
            ruleset,
            seccomp,
            contain: self.contain,
        })
    }

    fn ruleset(&self) -> std::result::Result<Option<OwnedFd>, landlock::RulesetError> {
        let read = AccessFs::from_read(TARGET);
        let all = AccessFs::from_all(TARGET);
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(all)?;
        if self.connect.is_some() {
            ruleset = ruleset.handle_access(AccessNet::ConnectTcp)?;
        }
        ruleset = ruleset.scope(Scope::from_all(TARGET))?;
        let mut created = ruleset.create()?;
        let readable: Vec<PathBuf> = match &self.read {
            None => vec![PathBuf::from("/")],
            Some(paths) => SYSTEM_READ
                .iter()
                .map(PathBuf::from)
                .chain(paths.iter().cloned())
                .collect(),
        };
        for path in &readable {
            created = add(created, path, read)?;
        }
        for path in &self.write {
            created = add(created, path, all)?;
        }
        for dev in DEVICES {
            created = add(created, Path::new(dev), AccessFs::from_file(TARGET))?;
        }
        // Pseudo-terminals a program opens for its own children.
        created = add(created, Path::new("/dev/pts"), AccessFs::from_file(TARGET))?;
        if let Some(ports) = &self.connect {
            for port in ports {
                created = created.add_rule(NetPort::new(*port, AccessNet::ConnectTcp))?;
            }
        }
        Ok(created.into())
    }
}

/// `created` with `access` beneath `path` (the file rights only, for a file); a path that
/// cannot be opened is left out.
fn add(
    created: landlock::RulesetCreated,
    path: &Path,
    access: landlock::BitFlags<AccessFs>,
) -> std::result::Result<landlock::RulesetCreated, landlock::RulesetError> {
    let Ok(fd) = PathFd::new(path) else {
        return Ok(created);
    };
    let access = if path.is_dir() {
        access
    } else {
        access & AccessFs::from_file(TARGET)
    };
    created.add_rule(PathBeneath::new(fd, access))
}

/// The seccomp filter that refuses `socket(AF_UNIX, …)` with `EACCES`.
fn no_unix_sockets() -> Result<seccompiler::BpfProgram> {
    use seccompiler::{
        SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule, TargetArch,
    };
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|e| Error::state(format!("no seccomp filter for this machine: {e}"), None))?;
    let rule = SeccompRule::new(vec![
        SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Eq,
            libc::AF_UNIX as u64,
        )
        .map_err(|e| Error::state(format!("cannot build the seccomp filter: {e}"), None))?,
    ])
    .map_err(|e| Error::state(format!("cannot build the seccomp filter: {e}"), None))?;
    let filter = SeccompFilter::new(
        [(libc::SYS_socket, vec![rule])].into_iter().collect(),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EACCES as u32),
        arch,
    )
    .map_err(|e| Error::state(format!("cannot build the seccomp filter: {e}"), None))?;
    filter.try_into().map_err(|e: seccompiler::BackendError| {
        Error::state(format!("cannot compile the seccomp filter: {e}"), None)
    })
}

impl Prepared {
    /// Confines the calling process: no new privileges, the seccomp filter, the Landlock
    /// ruleset. For the child between fork and exec: it allocates nothing and makes only
    /// async-signal-safe calls.
    ///
    /// # Safety
    /// Call only in a forked child before exec (it confines the calling thread for good).
    pub unsafe fn apply(&self) -> std::io::Result<()> {
        let fd = self.ruleset.as_ref().map(AsRawFd::as_raw_fd);
        // SAFETY: the caller's; the descriptor is open for the life of `self`.
        unsafe { confine(fd, self.seccomp.as_ref()) }
    }

    /// The arguments that hand this confinement to the reaper (`git-tlv4 __contain
    /// --confine FD unix|any PROGRAM…`): the number of the Landlock ruleset's descriptor
    /// (`-` for none), which [`Prepared::hand_over`] keeps open across exec, and whether Unix
    /// sockets are refused. The reaper itself then runs unconfined — out of the program's
    /// Landlock domain, so the program cannot signal it — and confines the program between
    /// its own fork and exec ([`confine`]).
    pub fn reaper_args(&self) -> [String; 3] {
        [
            "--confine".to_owned(),
            self.ruleset
                .as_ref()
                .map_or("-".to_owned(), |fd| fd.as_raw_fd().to_string()),
            if self.seccomp.is_some() {
                "unix"
            } else {
                "any"
            }
            .to_owned(),
        ]
    }

    /// Keeps the ruleset's descriptor open across exec, for the reaper (see
    /// [`Prepared::reaper_args`]).
    ///
    /// # Safety
    /// Call only in a forked child before exec; it calls only `fcntl`.
    pub unsafe fn hand_over(&self) -> std::io::Result<()> {
        if let Some(fd) = &self.ruleset {
            // SAFETY: F_SETFD on a descriptor open for the life of `self`.
            if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, 0) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

/// The seccomp filter the reaper installs for `--confine … unix` (built before its fork).
pub fn unix_socket_filter() -> Result<seccompiler::BpfProgram> {
    no_unix_sockets()
}

/// Confines the calling process: no new privileges, the seccomp `filter`, the Landlock
/// ruleset whose descriptor is `ruleset`.
///
/// # Safety
/// Call only in a forked child before exec (it confines the calling thread for good), with
/// `ruleset` an open Landlock ruleset descriptor. Only async-signal-safe calls.
pub unsafe fn confine(
    ruleset: Option<std::os::fd::RawFd>,
    filter: Option<&seccompiler::BpfProgram>,
) -> std::io::Result<()> {
    // SAFETY: prctl with constant arguments.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    if let Some(filter) = filter {
        seccompiler::apply_filter(filter).map_err(|_| std::io::Error::last_os_error())?;
    }
    if let Some(fd) = ruleset {
        // SAFETY: the caller's descriptor.
        let rc = unsafe { libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32) };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The package managers' caches under the user's home that a setup and a test run write
/// (downloads, built wheels, the cargo registry): shared across checkouts so that installs
/// stay warm, and holding nothing of the user's but packages.
const CACHES: [&str; 14] = [
    ".npm",
    ".cache/npm",
    ".cache/yarn",
    ".yarn/berry/cache",
    ".local/share/pnpm",
    ".cache/pnpm",
    ".bun/install/cache",
    ".cache/pip",
    ".cache/uv",
    ".cache/pypoetry",
    ".cargo/registry",
    ".cargo/git",
    "go/pkg/mod",
    ".cache/go-build",
];

/// The caches of [`CACHES`] under `home` that exist.
pub fn caches(home: &Path) -> Vec<PathBuf> {
    CACHES
        .iter()
        .map(|c| home.join(c))
        .filter(|p| p.exists())
        .collect()
}

/// The policy of the repository's own commands in a checkout (the setup, the tests, the
/// check of where packages import from): they write only the checkout at `root`, its
/// temporary directory `tmp`, the package caches and `/dev/shm` (POSIX semaphores); they
/// read anything and connect anywhere (a test suite starts servers on loopback ports it
/// picks, a setup fetches from registries); nothing they start outlives them.
pub fn for_checkout(root: &Path, tmp: &Path) -> Policy {
    let mut write = vec![
        root.to_path_buf(),
        tmp.to_path_buf(),
        PathBuf::from("/dev/shm"),
    ];
    if let Some(home) = std::env::var_os("HOME") {
        write.extend(caches(Path::new(&home)));
    }
    Policy {
        write,
        read: None,
        connect: None,
        unix_sockets: true,
        contain: true,
    }
}

/// Where an agent runs, for [`for_agent`].
#[derive(Debug, Clone)]
pub struct AgentPlaces<'a> {
    /// Its working directory: a task checkout, or a read-only view of the session.
    pub workdir: &'a Path,
    /// Whether it may write `workdir` (a code task's checkout).
    pub writes: bool,
    /// Its home (and XDG directories) and the directory of its run's files (the prompt).
    pub home: &'a Path,
    /// The directory of the run's files (the prompt, what the CLI writes for us).
    pub scratch: &'a Path,
    /// Its program, resolved.
    pub program: &'a Path,
    /// The `PATH` it runs with.
    pub path: &'a str,
    /// The values of its environment, where endpoints are named (`…_BASE_URL`).
    pub values: Vec<&'a str>,
    /// More places it may write and read, as its configuration grants (`writes`), and
    /// places it may read (`reads`, and the files its arguments name).
    pub writes_more: Vec<PathBuf>,
    pub reads_more: Vec<PathBuf>,
}

/// The policy of an agent: it writes its checkout (for a code task), its home, its run's
/// files, its temporary directory (in its home) and its checkout's own git directory (index,
/// HEAD, its commits: see `tlv4_store::worktree::pool::Lease::private_git`); it reads the system,
/// its own installation (its program's and the `PATH` tools' prefixes), `git-tlv4`'s, its
/// checkout and the repository's git directory (history, read-only), and nothing else of
/// the user's home; it connects over TCP only to port 443 and the ports of the URLs its
/// environment names; it creates no Unix socket; nothing it starts outlives it.
pub fn for_agent(at: &AgentPlaces<'_>) -> Policy {
    let mut write = vec![at.home.to_path_buf(), at.scratch.to_path_buf()];
    let mut read = vec![at.workdir.to_path_buf()];
    if at.writes {
        write.push(at.workdir.to_path_buf());
    }
    if let Some((admin, common)) = git_dirs(at.workdir) {
        if at.writes {
            write.push(admin);
        }
        read.push(common);
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let prefix_of = |dir: &Path| -> Vec<PathBuf> {
        let Ok(dir) = std::fs::canonicalize(dir) else {
            return Vec::new();
        };
        let mut out = vec![dir.clone()];
        if let Some(parent) = dir.parent()
            && parent.parent().is_some()
            && Some(parent) != home.as_deref()
        {
            out.push(parent.to_path_buf());
        }
        out
    };
    if let Some(dir) = std::fs::canonicalize(at.program)
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
    {
        read.extend(prefix_of(&dir));
    }
    if let Some(dir) = at.program.parent() {
        read.extend(prefix_of(dir));
    }
    for entry in std::env::split_paths(at.path) {
        if entry.is_absolute() {
            read.extend(prefix_of(&entry));
        }
    }
    read.extend(own_installation());
    read.extend(at.reads_more.iter().cloned());
    write.extend(at.writes_more.iter().cloned());
    read.sort();
    read.dedup();
    let mut ports: Vec<u16> = vec![443];
    ports.extend(at.values.iter().filter_map(|v| url_port(v)));
    ports.sort_unstable();
    ports.dedup();
    Policy {
        write,
        read: Some(read),
        connect: Some(ports),
        unix_sockets: false,
        contain: true,
    }
}

/// The port of `value` when it is an `http://` or `https://` URL.
fn url_port(value: &str) -> Option<u16> {
    let (scheme, rest) = value.split_once("://")?;
    let default = match scheme {
        "http" => 80,
        "https" => 443,
        _ => return None,
    };
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let port = match host_port.strip_prefix('[') {
        Some(v6) => v6.split_once("]:").map(|(_, p)| p),
        None => host_port.rsplit_once(':').map(|(_, p)| p),
    };
    port.and_then(|p| p.parse().ok()).or(Some(default))
}

/// The git directory of the checkout at `workdir` (the linked worktree's admin folder, or the
/// private git directory of an agent's checkout) and the repository's common git directory,
/// from its `.git` file: the admin folder's `commondir`, or the repository whose objects the
/// private directory borrows (`objects/info/alternates`).
fn git_dirs(workdir: &Path) -> Option<(PathBuf, PathBuf)> {
    let text = std::fs::read_to_string(workdir.join(".git")).ok()?;
    let admin = PathBuf::from(text.trim().strip_prefix("gitdir: ")?);
    let admin = if admin.is_absolute() {
        admin
    } else {
        workdir.join(admin)
    };
    let common = match std::fs::read_to_string(admin.join("commondir")) {
        Ok(c) => admin.join(c.trim()),
        Err(_) => {
            let alternates = std::fs::read_to_string(admin.join("objects/info/alternates")).ok()?;
            let objects = PathBuf::from(alternates.lines().next()?.trim());
            objects.parent()?.to_path_buf()
        }
    };
    Some((admin, std::fs::canonicalize(common).ok()?))
}

/// The directory of the running `git-tlv4` (its installation, which a confined program may
/// read: the reaper is this program).
pub fn own_installation() -> Option<PathBuf> {
    contain::reaper()
        .or_else(|| std::env::current_exe().ok())
        .and_then(|p| std::fs::canonicalize(p).ok())
        .and_then(|p| p.parent().map(Path::to_path_buf))
}

/// What the kernel says when the sandbox refuses: Landlock's `EACCES` and `EPERM` as the C
/// library words them, and as Python and Node name them.
const REFUSED: [&str; 4] = [
    "Permission denied",
    "Operation not permitted",
    "EACCES",
    "EPERM",
];

/// At most this many refusals are kept of one run.
const MAX_REFUSALS: usize = 20;

/// The refusals a confined program reported in `text` (its output, or a transcript of it):
/// each place where it says it was refused access to an absolute path outside `inside` (the
/// places it may write), as the words around it, once each, at most 20. Text
/// inside JSON strings counts too (`\n` separates lines there): CLIs report their commands'
/// output that way. A path inside `inside` is left out: there a refusal is not the
/// sandbox's. This reads what was printed, so it finds what a program chose to report, and
/// may name a refusal that ordinary file permissions made.
pub fn refusals(text: &str, inside: &[&Path]) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for piece in text.split(['\n', '\r']).flat_map(|l| l.split("\\n")) {
        if !REFUSED.iter().any(|r| piece.contains(r)) {
            continue;
        }
        let outside = piece
            .split(|c: char| c.is_whitespace() || "'\"`,;()[]{}<>=".contains(c))
            .map(|w| w.trim_end_matches([':', '.', '\\']))
            .filter(|w| w.len() > 1 && w.starts_with('/') && !w.starts_with("//"))
            .any(|w| !inside.iter().any(|i| Path::new(w).starts_with(i)));
        if !outside {
            continue;
        }
        let line: String = piece.trim().chars().take(240).collect();
        if !found.contains(&line) {
            found.push(line);
            if found.len() == MAX_REFUSALS {
                break;
            }
        }
    }
    found
}

#[cfg(test)]
mod tests;
