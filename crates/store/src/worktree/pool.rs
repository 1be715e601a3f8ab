//! Warm checkouts: linked worktrees kept between the tasks and test runs of a repository and
//! moved to the next commit by writing only what changed.
//!
//! A checkout is slow to make and slower to prepare: `git worktree add` writes every file, and
//! the project's dependencies and build outputs (`node_modules/`, `.venv/`, `target/`) are not
//! in git at all. So the checkouts are kept, in two pools per repository — one for agents, one
//! for the tester, so that the tester never runs where an agent wrote — in a folder beside the
//! repository's working tree, `<repo>.tlv4/` (see [`place`] for the order of choices and how
//! to move it). Not inside the repository: a checkout below the user's working tree resolves
//! packages from the user's `node_modules` (Node looks in every parent folder), and a test
//! tree below a `.git` is taken for part of that repository (fd's tests). Not below a folder
//! whose name starts with a dot either, as `~/.cache` is: some test suites refuse such paths
//! (express's `res.sendFile` tests serve nothing there), and CI machines, where suites are
//! known to pass, check out in plain folders.
//!
//! ```text
//! repo                   the git directory whose pools these are (`gc` drops orphans)
//! pool.lock              held while a slot is chosen, made or removed
//! test-1/<repo>/         the checkout (a linked worktree, locked)
//! test-1.lock            held (flock) by the one process that leases the slot
//! test-1.json            when it was last used, how big it is
//! test-1.setup.json      what its environment was made from (the caller's)
//! test-1.tmp/            its commands' temporary directory (the caller's)
//! agent-1.git/           an agent checkout's private git directory (see below)
//! ```
//!
//! **An agent's own git.** An agent may run `git commit` (Aider does by default), but its
//! sandbox lets it write neither the repository's objects nor its refs. So an agent's
//! checkout gets a git directory of its own, `<slot>.git/`: the repository's objects borrowed
//! through `objects/info/alternates`, its branches and tags copied into `packed-refs`, the task
//! branch checked out, the index copied. The agent's commits land there; the checkout's `.git`
//! file points there while the agent runs. The tool itself never uses that directory's
//! configuration or hooks: its own git always runs on the registered worktree's admin folder
//! (`--git-dir`), and the agent's commit messages are read with gix without configuration.
//!
//! **Leasing** takes a free slot (its flock: one run at a time across processes, released by
//! the kernel when the process dies) or makes one, names the run in its worktree lock (the
//! same reason a fresh checkout gets, so `resume` recognises it), and moves it: `git checkout
//! -f` to the commit or task branch, writing only the files that differ, then `git clean` of
//! what is neither tracked nor ignored — ignored dependency and build trees stay. An index an
//! agent marked (`assume-unchanged`, `skip-worktree`) is dropped first, so nothing it hid
//! survives into the next run.
//!
//! **Releasing** happens only after the owner recorded what the checkout holds under a ref
//! (see [`super::TaskWorktree::remove`]): HEAD is detached at the commit it was on (so the
//! task branch can be checked out by hand elsewhere), the lock reason says the slot is idle,
//! the flock is dropped. Beyond `max_disk`, the least recently used idle slots are removed.
//!
//! **A crash** leaves the slot locked in the dead process's name: `resume` and `gc` keep its
//! work like any dead checkout's; a lease that meets such a slot does the same before reusing
//! it, so nothing a later run could mistake for its own survives.

use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use gix::ObjectId;

use crate::store::Store;
use tlv4_core::error::{Error, Result};

/// The lock reason of an idle slot. Not a [`tlv4_core::git::LockReason`]: `resume` leaves it be.
pub const IDLE_REASON: &str = "git-tlv4 pool: idle";

/// The disk all kept checkouts of a repository may use unless `[environment] max_disk` says.
pub const DEFAULT_MAX_DISK: u64 = 16 << 30;

/// Trees `git clean` keeps in the tester's checkouts even where the project does not ignore
/// them: what setup installs and builds write.
pub const KEPT_TREES: [&str; 8] = [
    "node_modules",
    ".venv",
    "venv",
    "target",
    ".pnpm-store",
    ".yarn",
    "__pycache__",
    ".pytest_cache",
];

/// Which pool: agents and the tester never share a checkout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// Task checkouts of code tasks.
    Agent,
    /// The tester's checkouts.
    Test,
}

impl Purpose {
    fn prefix(self) -> &'static str {
        match self {
            Purpose::Agent => "agent",
            Purpose::Test => "test",
        }
    }
}

/// What a leased checkout is moved to.
#[derive(Debug, Clone, Copy)]
pub enum Target<'a> {
    /// A commit, detached.
    Detached(ObjectId),
    /// A branch (its full ref name), checked out.
    Branch(&'a str),
}

/// The pools of one repository.
#[derive(Debug, Clone)]
pub struct Pool {
    root: PathBuf,
    /// Whether `root` is one of the pools under a folder shared by many repositories.
    shared: bool,
    common_dir: PathBuf,
    max_disk: u64,
}

/// Where earlier versions kept the pools, inside the git directory: still emptied (idle
/// slots removed, dead runs' work kept first) so that nothing is stranded there.
const LEGACY: &str = "tlv4/checkouts";

/// Where the pools of the repository whose git directory is `common_dir` are kept, and
/// whether that folder is one of many under a shared one (whose orphans `gc` may drop):
/// 1. `$GIT_TLV4_CHECKOUTS/<repo>-<id>`, else git's `tlv4.checkouts` (the user's own
///    configuration: a repository cannot ship its `.git/config`) the same way;
/// 2. beside the working tree, `<parent>/<repo>.tlv4` (where that folder may be written);
/// 3. `$XDG_CACHE_HOME/git-tlv4/checkouts/<repo>-<id>` (`~/.cache/…`);
/// 4. without a home, in the git directory, as earlier versions did.
///
/// `<id>`: the first ten hex digits of the blob id of the git directory's real path.
pub fn place(store: &Store, common_dir: &Path) -> (PathBuf, bool) {
    let legacy = (common_dir.join(LEGACY), false);
    // The unit tests' repositories keep their pools inside themselves, in their temporary
    // folders, whatever the environment of `cargo test` says; the e2e tests cover the rest.
    if cfg!(test) {
        return legacy;
    }
    let name = repo_name(common_dir);
    let path = common_dir.as_os_str().as_encoded_bytes();
    let id = tlv4_core::git::blob_id(tlv4_core::git::OBJECT_FORMAT, path)
        .map(|id| id.to_hex_with_len(10).to_string())
        .unwrap_or_default();
    let shared = |home: PathBuf| (home.join(format!("{name}-{id}")), true);
    if let Some(home) = checkouts_home(store) {
        return shared(home);
    }
    // The main working tree's parent, for a repository that has one (not a bare one).
    let beside = common_dir
        .file_name()
        .filter(|n| *n == ".git")
        .and_then(|_| common_dir.parent()?.parent())
        .filter(|p| writable(p));
    if let Some(parent) = beside {
        return (parent.join(format!("{name}.tlv4")), false);
    }
    cache_home().map_or(legacy, shared)
}

/// Whether this process may make a folder in `dir`.
fn writable(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt as _;
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: access(2) on a NUL-terminated path this function owns.
    unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) == 0 }
}

/// The folder the user names for the pools of every repository: `$GIT_TLV4_CHECKOUTS`, else
/// git's `tlv4.checkouts`.
fn checkouts_home(store: &Store) -> Option<PathBuf> {
    let absolute = |p: PathBuf| p.is_absolute().then_some(p);
    if let Some(dir) = std::env::var_os("GIT_TLV4_CHECKOUTS").map(PathBuf::from) {
        return absolute(dir);
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute());
    let configured = store
        .repo()
        .config_snapshot()
        .string("tlv4.checkouts")
        .map(|v| v.to_string());
    if let Some(dir) = configured.filter(|d| !d.is_empty()) {
        let dir = match (dir.strip_prefix("~/"), &home) {
            (Some(rest), Some(h)) => h.join(rest),
            _ => PathBuf::from(dir),
        };
        return absolute(dir);
    }
    None
}

/// `$XDG_CACHE_HOME/git-tlv4/checkouts`, else `~/.cache/git-tlv4/checkouts`.
fn cache_home() -> Option<PathBuf> {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            let home = std::env::var_os("HOME").map(PathBuf::from)?;
            home.is_absolute().then(|| home.join(".cache"))
        })?;
    Some(cache.join("git-tlv4").join("checkouts"))
}

/// The name checkouts of the repository at `common_dir` get: its folder's name.
fn repo_name(common_dir: &Path) -> String {
    common_dir
        .parent()
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str())
        .filter(|n| !n.is_empty() && *n != ".git")
        .unwrap_or("checkout")
        .to_owned()
}

/// One slot of a pool, leased to this process until dropped or released.
#[derive(Debug)]
pub struct Lease {
    /// The held flock of the slot.
    _lock: File,
    /// `<pool>/<purpose>-<n>`: the slot's files are this with `.json`, `.setup.json`.
    slot: PathBuf,
    /// The checkout.
    pub path: PathBuf,
    /// Its admin folder, `<common>/worktrees/<name>`.
    pub admin: PathBuf,
    /// Whether the checkout was made for this lease (else it was reused).
    pub fresh: bool,
    purpose: Purpose,
    max_disk: u64,
    root: PathBuf,
    common_dir: PathBuf,
}

/// A slot's bookkeeping.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
struct Meta {
    /// Unix seconds of the last release.
    used: u64,
    /// Bytes on disk at the last measure.
    bytes: u64,
}

/// A kept checkout, for reports and `gc`.
#[derive(Debug, Clone)]
pub struct SlotInfo {
    /// The checkout.
    pub path: PathBuf,
    /// Bytes on disk at the last measure.
    pub bytes: u64,
    /// Whether a process leases it now.
    pub busy: bool,
}

impl Pool {
    /// The pools of the repository of `store`; `max_disk` bounds the disk of its idle slots.
    pub fn open(store: &Store, max_disk: Option<u64>) -> Result<Pool> {
        let common_dir = std::path::absolute(store.repo().common_dir())
            .map_err(|e| Error::io("cannot resolve the git directory", e))?;
        let common_dir = std::fs::canonicalize(&common_dir).unwrap_or(common_dir);
        let (root, shared) = place(store, &common_dir);
        Ok(Pool {
            root,
            shared,
            common_dir,
            max_disk: max_disk.unwrap_or(DEFAULT_MAX_DISK),
        })
    }

    /// What the pools hold, for reports: `3 kept checkouts (1 in use), 1.2 GiB of the 16 GiB
    /// limit`; sizes as measured when each was last given back.
    pub fn summary(&self) -> String {
        let slots = self.list();
        let busy = slots.iter().filter(|s| s.busy).count();
        let bytes: u64 = slots.iter().map(|s| s.bytes).sum();
        format!(
            "{} kept checkout{} ({busy} in use), {} of the {} limit ([environment] max_disk)",
            slots.len(),
            if slots.len() == 1 { "" } else { "s" },
            size(bytes),
            size(self.max_disk)
        )
    }

    /// Where the checkouts of this repository are kept.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Leases a checkout of `purpose` moved to `target`, its worktree locked with `reason`.
    pub fn lease(
        &self,
        store: &Store,
        purpose: Purpose,
        reason: &str,
        target: Target<'_>,
    ) -> Result<Lease> {
        self.retire_legacy(store)?;
        self.make_root()?;
        let guard = self.pool_lock()?;
        self.name_repo()?;
        // Free slots, most recently used first: the warmest.
        let mut free = Vec::new();
        let mut taken = std::collections::BTreeSet::new();
        // A number is taken by a slot's folder or by its lock file (a slot being made).
        taken.extend(self.numbers(purpose));
        for (_, slot) in self.slots(purpose) {
            if let Some(lock) = try_lock(&slot.with_extension("lock"))? {
                free.push((read_meta(&slot).used, slot, lock));
            }
        }
        free.sort_by_key(|s| std::cmp::Reverse(s.0));
        for (_, slot, lock) in free {
            match self.reuse(store, purpose, &slot, lock, reason, target) {
                Ok(Some(lease)) => return Ok(lease),
                Ok(None) => {}
                Err(e) => return Err(e),
            }
        }
        let n = (1..).find(|n| !taken.contains(n)).unwrap_or(1);
        let slot = self.root.join(format!("{}-{n}", purpose.prefix()));
        let lock = try_lock(&slot.with_extension("lock"))?
            .ok_or_else(|| Error::Git(format!("the new slot {} is locked", slot.display())))?;
        std::fs::create_dir_all(&slot)
            .map_err(|e| Error::io(format!("cannot make {}", slot.display()), e))?;
        drop(guard);
        self.make(purpose, &slot, lock, reason, target)
    }

    /// The slots of `purpose`, by number.
    fn slots(&self, purpose: Purpose) -> Vec<(u32, PathBuf)> {
        let prefix = format!("{}-", purpose.prefix());
        let mut out: Vec<(u32, PathBuf)> = std::fs::read_dir(&self.root)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let n = name.strip_prefix(&prefix)?.parse().ok()?;
                Some((n, e.path()))
            })
            .collect();
        out.sort();
        out
    }

    /// The numbers of `purpose` in use: by a slot's folder or its lock file.
    fn numbers(&self, purpose: Purpose) -> Vec<u32> {
        let prefix = format!("{}-", purpose.prefix());
        std::fs::read_dir(&self.root)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let rest = name.strip_prefix(&prefix)?;
                let n = rest.split('.').next()?;
                n.parse().ok()
            })
            .collect()
    }

    /// Every slot of both pools.
    pub fn list(&self) -> Vec<SlotInfo> {
        [Purpose::Agent, Purpose::Test]
            .into_iter()
            .flat_map(|p| self.slots(p))
            .map(|(_, slot)| {
                let busy = !matches!(try_lock(&slot.with_extension("lock")), Ok(Some(_)));
                SlotInfo {
                    path: checkout_in(&slot).unwrap_or_else(|| slot.clone()),
                    bytes: read_meta(&slot).bytes,
                    busy,
                }
            })
            .collect()
    }

    /// Removes every idle slot (and empties the git directory's pools of earlier versions);
    /// returns how many and their bytes.
    pub fn clear(&self, store: &Store) -> Result<(usize, u64)> {
        self.retire_legacy(store)?;
        if !self.root.exists() {
            return Ok((0, 0));
        }
        let _guard = self.pool_lock()?;
        let mut removed = (0, 0);
        for p in [Purpose::Agent, Purpose::Test] {
            for (_, slot) in self.slots(p) {
                if let Some(lock) = try_lock(&slot.with_extension("lock"))? {
                    let bytes = read_meta(&slot).bytes;
                    if self.remove_slot(&slot, &lock).is_ok() {
                        removed.0 += 1;
                        removed.1 += bytes;
                    }
                }
            }
        }
        Ok(removed)
    }

    /// Removes the pools of repositories that are gone (their `repo` file names a git
    /// directory that no longer exists) and that no process leases; returns their folders.
    /// Their checkouts were worktrees of that repository: with it, their work is gone too.
    pub fn clear_orphans(&self) -> Vec<PathBuf> {
        let Some(home) = self.root.parent().filter(|_| self.shared) else {
            return Vec::new();
        };
        let mut removed = Vec::new();
        for entry in std::fs::read_dir(home).into_iter().flatten().flatten() {
            let dir = entry.path();
            let Ok(named) = std::fs::read(dir.join("repo")) else {
                continue;
            };
            let repo =
                Path::new(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(&named));
            if repo.exists() {
                continue;
            }
            let pool = Pool {
                root: dir.clone(),
                ..self.clone()
            };
            let Ok(Some(_guard)) = try_lock(&dir.join("pool.lock")) else {
                continue;
            };
            let leased = [Purpose::Agent, Purpose::Test]
                .into_iter()
                .flat_map(|p| pool.slots(p))
                .any(|(_, s)| !matches!(try_lock(&s.with_extension("lock")), Ok(Some(_))));
            if !leased && std::fs::remove_dir_all(&dir).is_ok() {
                removed.push(dir);
            }
        }
        removed
    }

    fn pool_lock(&self) -> Result<File> {
        let path = self.root.join("pool.lock");
        let file = open_lock(&path)?;
        flock(&file, true).map_err(|e| Error::io(format!("cannot lock {}", path.display()), e))?;
        Ok(file)
    }

    /// Reuses the free `slot`: `None` when it cannot be (it was removed).
    fn reuse(
        &self,
        store: &Store,
        purpose: Purpose,
        slot: &Path,
        lock: File,
        reason: &str,
        target: Target<'_>,
    ) -> Result<Option<Lease>> {
        let path = checkout_in(slot);
        let admin = path
            .as_ref()
            .and_then(|p| super::admin_dir_of(&self.common_dir, p));
        let (Some(path), Some(admin)) = (path, admin) else {
            // Not a registered checkout any more (removed by `resume`, `gc`, or by hand):
            // nothing in it is recorded as anyone's work.
            self.remove_slot(slot, &lock)?;
            return Ok(None);
        };
        if !self.keep_if_dead(store, &path, &admin)? {
            return Ok(None);
        }
        write_reason(&admin, reason)?;
        let lease = Lease {
            _lock: lock,
            slot: slot.to_path_buf(),
            path,
            admin,
            fresh: false,
            purpose,
            max_disk: self.max_disk,
            root: self.root.clone(),
            common_dir: self.common_dir.clone(),
        };
        lease.move_to(target)?;
        Ok(Some(lease))
    }

    /// Before a slot whose checkout is `path` (admin folder `admin`) is reused or removed:
    /// when a run died there, what it left is kept under a ref first, as `resume` does.
    /// `false` when a live process holds the checkout (without the slot's flock: it should
    /// not happen) and the slot must be left alone.
    fn keep_if_dead(&self, store: &Store, path: &Path, admin: &Path) -> Result<bool> {
        let held = std::fs::read_to_string(admin.join("locked")).unwrap_or_default();
        if let Some(r) = tlv4_core::git::LockReason::parse(&held) {
            if tlv4_core::host::process_alive(r.pid, r.start) && r.host == tlv4_core::host::name() {
                return Ok(false);
            }
            if super::checkout_task(&self.common_dir, path).is_some() {
                super::keep_abandoned(store, path, &super::SnapshotLimits::default())?;
            }
        }
        Ok(true)
    }

    /// Makes the pools' folder (only the user may enter it).
    fn make_root(&self) -> Result<()> {
        use std::os::unix::fs::DirBuilderExt as _;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.root)
            .map_err(|e| Error::io(format!("cannot make {}", self.root.display()), e))
    }

    /// Names the repository in its pools' folder (under the pool lock: one writer at a time).
    fn name_repo(&self) -> Result<()> {
        let named = self.root.join("repo");
        let common = std::os::unix::ffi::OsStrExt::as_bytes(self.common_dir.as_os_str());
        if std::fs::read(&named).ok().as_deref() != Some(common) {
            write_atomic(&named, common)?;
        }
        Ok(())
    }

    /// Empties the pools an earlier version kept in the git directory: every slot no process
    /// leases is removed, a dead run's work kept first. Slots still leased stay until later.
    fn retire_legacy(&self, store: &Store) -> Result<()> {
        let legacy = self.common_dir.join(LEGACY);
        if legacy == self.root || !legacy.is_dir() {
            return Ok(());
        }
        let old = Pool {
            root: legacy.clone(),
            ..self.clone()
        };
        let _guard = old.pool_lock()?;
        for p in [Purpose::Agent, Purpose::Test] {
            for (_, slot) in old.slots(p) {
                let Some(lock) = try_lock(&slot.with_extension("lock"))? else {
                    continue;
                };
                let checkout = checkout_in(&slot)
                    .and_then(|c| Some((super::admin_dir_of(&self.common_dir, &c)?, c)));
                if let Some((admin, path)) = checkout
                    && !old.keep_if_dead(store, &path, &admin)?
                {
                    continue;
                }
                old.remove_slot(&slot, &lock)?;
            }
        }
        let left = old.slots(Purpose::Agent).len() + old.slots(Purpose::Test).len();
        if left == 0 {
            let _ = std::fs::remove_dir_all(&legacy);
        }
        Ok(())
    }

    /// Makes a new checkout in `slot`.
    fn make(
        &self,
        purpose: Purpose,
        slot: &Path,
        lock: File,
        reason: &str,
        target: Target<'_>,
    ) -> Result<Lease> {
        let path = slot.join(repo_name(&self.common_dir));
        let _ = std::fs::remove_dir_all(slot);
        std::fs::create_dir_all(slot)
            .map_err(|e| Error::io(format!("cannot make {}", slot.display()), e))?;
        let hex;
        let what: Vec<&str> = match target {
            Target::Detached(c) => {
                hex = c.to_string();
                vec!["--detach", &hex]
            }
            Target::Branch(b) => vec![super::short(b)],
        };
        super::Checkout::register(&self.common_dir, slot, &path, reason, &what)?;
        let admin = super::admin_dir_of(&self.common_dir, &path)
            .ok_or_else(|| Error::Git(format!("`{}` is not registered", path.display())))?;
        let lease = Lease {
            _lock: lock,
            slot: slot.to_path_buf(),
            path,
            admin,
            fresh: true,
            purpose,
            max_disk: self.max_disk,
            root: self.root.clone(),
            common_dir: self.common_dir.clone(),
        };
        lease.unsparse()?;
        lease.submodules()?;
        Ok(lease)
    }

    /// Unregisters and deletes the checkout of `slot` (whose flock `_lock` is held) and its
    /// files.
    fn remove_slot(&self, slot: &Path, _lock: &File) -> Result<()> {
        if let Some(path) = checkout_in(slot) {
            super::set_writable(&path, true).ok();
            tlv4_core::git::point_back(&self.common_dir, &path);
            let common = super::utf8(&self.common_dir)?;
            let p = super::utf8(&path)?;
            super::with_admin_lock(|| {
                let run = |a: &[&str]| {
                    tlv4_core::git::run(&self.common_dir, &[&["--git-dir", common], a].concat())
                };
                let _ = run(&["worktree", "unlock", p]);
                let _ = run(&["worktree", "remove", "--force", "--force", p]);
            });
        }
        std::fs::remove_dir_all(slot)
            .or_else(|e| {
                if e.kind() == std::io::ErrorKind::NotFound {
                    Ok(())
                } else {
                    Err(e)
                }
            })
            .map_err(|e| Error::io(format!("cannot remove {}", slot.display()), e))?;
        let _ = tlv4_core::git::run(
            &self.common_dir,
            &[
                "--git-dir",
                super::utf8(&self.common_dir)?,
                "worktree",
                "prune",
            ],
        );
        remove_slot_files(slot);
        let _ = std::fs::remove_file(slot.with_extension("lock"));
        Ok(())
    }
}

/// The files a slot keeps beside it (bookkeeping, its temporary directory, an agent's own git
/// directory), but its lock.
fn remove_slot_files(slot: &Path) {
    for ext in ["json", "setup.json"] {
        let _ = std::fs::remove_file(slot.with_extension(ext));
    }
    for ext in ["tmp", "git"] {
        let _ = std::fs::remove_dir_all(slot.with_extension(ext));
    }
}

/// When the checkout at `dir` is an idle kept one (its lock says [`IDLE_REASON`]) whose HEAD
/// is still on `branch`, detaches it at the branch's tip and says so; else changes nothing.
pub fn detach_if_idle(common_dir: &Path, dir: &Path, branch: &str) -> bool {
    let Some(admin) = super::admin_dir_of(common_dir, dir) else {
        return false;
    };
    let idle = std::fs::read_to_string(admin.join("locked")).is_ok_and(|r| r.trim() == IDLE_REASON);
    if !idle {
        return false;
    }
    let Ok(tip) = tlv4_core::git::run(common_dir, &["rev-parse", "--verify", "-q", branch]) else {
        return false;
    };
    write_atomic(&admin.join("HEAD"), format!("{}\n", tip.trim()).as_bytes()).is_ok()
}

/// The slot (`<pool>/<purpose>-<n>`) whose checkout is `path`, if it is a pool's.
fn slot_of(path: &Path) -> Option<&Path> {
    let slot = path.parent()?;
    let numbered = slot
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.split_once('-'))
        .is_some_and(|(kind, n)| ["agent", "test"].contains(&kind) && n.parse::<u32>().is_ok());
    let in_pool = numbered && slot.parent().is_some_and(|p| p.join("pool.lock").is_file());
    in_pool.then_some(slot)
}

/// After `resume` kept what a dead run left in the checkout at `path`: when it is a pool
/// slot's that no process leases, it goes back to the pool idle (detached where it was), so
/// the next run starts warm; the next lease moves and cleans it as any. `false` when it is
/// not a slot's or cannot be given back: the caller removes it.
pub fn give_back(common_dir: &Path, path: &Path) -> bool {
    let Some(slot) = slot_of(path) else {
        return false;
    };
    let Ok(Some(_lock)) = try_lock(&slot.with_extension("lock")) else {
        return false;
    };
    let Some(admin) = super::admin_dir_of(common_dir, path) else {
        return false;
    };
    let head = std::fs::read_to_string(admin.join("HEAD")).unwrap_or_default();
    if let Some(branch) = head.trim().strip_prefix("ref: ") {
        let Ok(tip) = tlv4_core::git::run(common_dir, &["rev-parse", "--verify", "-q", branch])
        else {
            return false;
        };
        if write_atomic(&admin.join("HEAD"), format!("{}\n", tip.trim()).as_bytes()).is_err() {
            return false;
        }
    }
    for lock in ["index.lock", "HEAD.lock"] {
        let _ = std::fs::remove_file(admin.join(lock));
    }
    write_reason(&admin, IDLE_REASON).is_ok()
}

/// After `resume` or `gc` removed the checkout at `path` of a process that is gone: when it
/// was a pool slot's, the slot's empty folder and bookkeeping go too.
pub fn forget(path: &Path) {
    let Some(slot) = slot_of(path) else {
        return;
    };
    if std::fs::remove_dir(slot).is_ok() {
        remove_slot_files(slot);
    }
}

impl Lease {
    /// A file of the slot's own, beside it (`<slot>.<ext>`), for the caller's bookkeeping:
    /// out of the checkout, where no agent writes.
    pub fn state_file(&self, ext: &str) -> PathBuf {
        self.slot.with_extension(ext)
    }

    /// Gives the checkout a git directory of its own (`<slot>.git/`, made afresh) for an agent
    /// that commits, and points the checkout's `.git` file at it: the repository's objects
    /// through alternates, its branches and tags in `packed-refs`, `HEAD` on the checked-out
    /// branch, the index of the checkout. Returns its path.
    pub fn private_git(&self, store: &Store) -> Result<PathBuf> {
        let dir = self.slot.with_extension("git");
        let _ = std::fs::remove_dir_all(&dir);
        let fail = |e| Error::io(format!("cannot make {}", dir.display()), e);
        for sub in ["objects/info", "objects/pack", "refs/heads", "refs/tags"] {
            std::fs::create_dir_all(dir.join(sub)).map_err(fail)?;
        }
        let objects = self.common_dir.join("objects");
        std::fs::write(
            dir.join("objects/info/alternates"),
            format!("{}\n", objects.display()),
        )
        .map_err(fail)?;
        std::fs::write(
            dir.join("config"),
            "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n",
        )
        .map_err(fail)?;
        let head = std::fs::read_to_string(self.admin.join("HEAD")).map_err(fail)?;
        // The header git itself writes. Every id below is peeled already (`refs_with_prefix`
        // follows annotated tags to their target), so "peeled fully-peeled" is true with no
        // `^` lines; and readers other than git insist on it: GitPython (Aider's git) refuses
        // a `packed-refs` whose header lacks "peeled" as corrupt, and Aider then exits 1.
        let mut packed = String::from("# pack-refs with: peeled fully-peeled sorted \n");
        let mut refs: Vec<(String, ObjectId)> = store
            .refs_with_prefix("refs/heads/")?
            .into_iter()
            .chain(store.refs_with_prefix("refs/tags/")?)
            .collect();
        refs.sort();
        for (name, id) in refs {
            packed.push_str(&format!("{id} {name}\n"));
        }
        std::fs::write(dir.join("packed-refs"), packed).map_err(fail)?;
        std::fs::write(dir.join("HEAD"), head).map_err(fail)?;
        if self.admin.join("index").is_file() {
            std::fs::copy(self.admin.join("index"), dir.join("index")).map_err(fail)?;
        }
        std::fs::write(
            self.path.join(".git"),
            format!("gitdir: {}\n", dir.display()),
        )
        .map_err(fail)?;
        Ok(dir)
    }

    /// The checkout's private git directory, when [`Lease::private_git`] made one.
    pub fn own_git(&self) -> Option<PathBuf> {
        let dir = self.slot.with_extension("git");
        dir.join("HEAD").is_file().then_some(dir)
    }

    /// Git on the checkout's own admin folder, in its root, with the checkout options.
    fn git(&self, args: &[&str]) -> Result<String> {
        let mut all = super::CHECKOUT_CONFIG.to_vec();
        all.extend_from_slice(&[
            "--git-dir",
            super::utf8(&self.admin)?,
            "--work-tree",
            super::utf8(&self.path)?,
        ]);
        all.extend_from_slice(args);
        tlv4_core::git::run(&self.path, &all)
    }

    /// Turns off the sparse checkout `worktree add` copies from the user's worktree.
    fn unsparse(&self) -> Result<()> {
        let own_config = self.admin.join("config.worktree");
        if own_config.exists() {
            let file = super::utf8(&own_config)?.to_owned();
            tlv4_core::git::run(
                &self.path,
                &["config", "--file", &file, "core.sparseCheckout", "false"],
            )?;
        }
        let _ = std::fs::remove_file(self.admin.join("info").join("sparse-checkout"));
        Ok(())
    }

    /// Moves the reused checkout to `target`: only what differs is written; what is neither
    /// tracked nor ignored is removed, ignored trees and [`KEPT_TREES`] stay.
    fn move_to(&self, target: Target<'_>) -> Result<()> {
        // The `.git` file is the tool's, whatever the last run wrote there.
        let gitfile = format!("gitdir: {}\n", self.admin.display());
        if std::fs::read_to_string(self.path.join(".git"))
            .ok()
            .as_deref()
            != Some(&gitfile)
        {
            let _ = std::fs::remove_dir_all(self.path.join(".git"));
            std::fs::write(self.path.join(".git"), &gitfile)
                .map_err(|e| Error::io("cannot write the `.git` file of a checkout", e))?;
        }
        self.unsparse()?;
        for lock in ["index.lock", "HEAD.lock"] {
            let _ = std::fs::remove_file(self.admin.join(lock));
        }
        // Flags an agent set on index entries would hide its changes from `checkout`.
        let index = self.admin.join("index");
        if index.exists() {
            let listed = self.git(&["ls-files", "-v", "-z"]).unwrap_or_default();
            let marked = listed
                .split('\0')
                .any(|e| e.starts_with(|c: char| c.is_ascii_lowercase() || c == 'S'));
            if marked {
                std::fs::remove_file(&index)
                    .map_err(|e| Error::io("cannot drop a checkout's index", e))?;
            }
        }
        let hex;
        let to = match target {
            Target::Detached(c) => {
                hex = c.to_string();
                vec!["checkout", "-q", "-f", "--detach", hex.as_str()]
            }
            Target::Branch(b) => vec!["checkout", "-q", "-f", super::short(b)],
        };
        self.git(&to)?;
        let mut clean = vec!["clean", "-q", "-f", "-f", "-d"];
        // The tester's checkouts keep dependency and build trees even where the project does
        // not ignore them (nothing there is ever recorded); an agent's keep only what the
        // project ignores, so that nothing a run left behind reaches a later task's snapshot.
        if self.purpose == Purpose::Test {
            for t in KEPT_TREES {
                clean.extend_from_slice(&["-e", t]);
            }
        }
        self.git(&clean)?;
        self.submodules()
    }

    /// Checks out the submodules the checkout's commit names, recursively, where the
    /// repository has them (`.gitmodules`): each at the commit its gitlink records. Their
    /// repositories are cloned once per checkout (under its admin folder) and kept with it;
    /// a move fetches only what they lack.
    fn submodules(&self) -> Result<()> {
        if !self.path.join(".gitmodules").is_file() {
            return Ok(());
        }
        tlv4_core::git::run(
            &self.path,
            &[
                "-c",
                "protocol.file.allow=always",
                "submodule",
                "update",
                "--init",
                "--recursive",
                "--force",
                "--quiet",
            ],
        )
        .map(|_| ())
        .map_err(|e| {
            Error::Git(format!(
                "cannot check out the submodules of {}: {e}",
                self.path.display()
            ))
        })
    }

    /// Bounds the disk of the pool's idle slots by `max_disk` (`[environment] max_disk`)
    /// when this lease goes back, instead of the default.
    pub fn bound(&mut self, max_disk: Option<u64>) {
        self.max_disk = max_disk.unwrap_or(DEFAULT_MAX_DISK);
    }

    /// Gives the checkout back to the pool: HEAD detached where it is, the lock idle, its size
    /// noted; the pool is then trimmed to its disk limit. Call only once what the checkout
    /// holds is recorded.
    pub fn release(self, measure: bool) -> Result<()> {
        if let Ok(head) = std::fs::read_to_string(self.admin.join("HEAD"))
            && let Some(branch) = head.trim().strip_prefix("ref: ")
            && let Ok(tip) = self.git(&["rev-parse", "--verify", "-q", branch])
        {
            write_atomic(
                &self.admin.join("HEAD"),
                format!("{}\n", tip.trim()).as_bytes(),
            )?;
        }
        write_reason(&self.admin, IDLE_REASON)?;
        let mut meta = read_meta(&self.slot);
        meta.used = now();
        if measure || self.fresh || meta.bytes == 0 {
            meta.bytes = disk_usage(&self.path);
        }
        let json = serde_json::to_vec(&meta).unwrap_or_default();
        write_atomic(&self.slot.with_extension("json"), &json)?;
        let pool = Pool {
            root: self.root.clone(),
            shared: false,
            common_dir: self.common_dir.clone(),
            max_disk: self.max_disk,
        };
        let slot = self.slot.clone();
        drop(self);
        pool.trim(&slot);
        Ok(())
    }
}

impl Pool {
    /// Removes the least recently used idle slots while the pool is over its limit; `last`
    /// (just released) goes last.
    fn trim(&self, last: &Path) {
        let Ok(_guard) = self.pool_lock() else {
            return;
        };
        let mut all: Vec<(bool, u64, u64, PathBuf)> = [Purpose::Agent, Purpose::Test]
            .into_iter()
            .flat_map(|p| self.slots(p))
            .map(|(_, s)| {
                let m = read_meta(&s);
                (s == last, m.used, m.bytes, s)
            })
            .collect();
        let mut total: u64 = all.iter().map(|a| a.2).sum();
        if total <= self.max_disk {
            return;
        }
        all.sort();
        for (_, _, bytes, slot) in all {
            if total <= self.max_disk {
                break;
            }
            if let Ok(Some(lock)) = try_lock(&slot.with_extension("lock"))
                && self.remove_slot(&slot, &lock).is_ok()
            {
                total = total.saturating_sub(bytes);
            }
        }
    }
}

/// The checkout directory inside `slot`, if there is one.
fn checkout_in(slot: &Path) -> Option<PathBuf> {
    std::fs::read_dir(slot)
        .ok()?
        .flatten()
        .find(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
}

fn read_meta(slot: &Path) -> Meta {
    std::fs::read(slot.with_extension("json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Writes the worktree's lock reason (git's `locked` file), aside then renamed over.
fn write_reason(admin: &Path, reason: &str) -> Result<()> {
    write_atomic(&admin.join("locked"), reason.as_bytes())
}

fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension("tlv4-new");
    let done = File::create(&tmp)
        .and_then(|mut f| f.write_all(bytes))
        .and_then(|()| std::fs::rename(&tmp, path));
    done.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::io(format!("cannot write {}", path.display()), e)
    })
}

fn open_lock(path: &Path) -> Result<File> {
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|e| Error::io(format!("cannot open {}", path.display()), e))
}

/// The flock of `path`, if no other process holds it.
fn try_lock(path: &Path) -> Result<Option<File>> {
    let file = open_lock(path)?;
    match flock(&file, false) {
        Ok(()) => Ok(Some(file)),
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(None),
        Err(e) => Err(Error::io(format!("cannot lock {}", path.display()), e)),
    }
}

fn flock(file: &File, wait: bool) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let op = libc::LOCK_EX | if wait { 0 } else { libc::LOCK_NB };
    loop {
        // SAFETY: flock on a file descriptor this function borrows.
        if unsafe { libc::flock(file.as_raw_fd(), op) } == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Bytes used by the files under `dir` (not following symlinks).
pub fn disk_usage(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let Ok(m) = e.path().symlink_metadata() else {
                continue;
            };
            total += m.blocks() * 512;
            if m.is_dir() {
                stack.push(e.path());
            }
        }
    }
    total
}

/// `bytes` for people: `512 MiB`, `1.2 GiB`.
pub fn size(bytes: u64) -> String {
    if bytes >= 1 << 30 {
        format!("{:.1} GiB", bytes as f64 / f64::from(1u32 << 30))
    } else {
        format!("{} MiB", bytes >> 20)
    }
}
