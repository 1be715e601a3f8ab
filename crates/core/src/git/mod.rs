//! The one place that runs the `git` binary, for what gix does not do (checkouts, staging
//! with the user's filters, maintenance, pushes and fetches), and the object-id helper
//! ([`blob_id`]). Every other module that needs git's CLI goes through here: [`run`],
//! [`output`], [`run_with_input`], or [`command`] for a caller that reads git's answer
//! itself. (Agents' own programs may run git in their checkouts; that is theirs, not ours.)
//!
//! The user's git hooks (`.git/hooks`, `core.hooksPath`) are for the user's own commands:
//! every command the tool runs here turns them off ([`NO_HOOKS`]), so that a failing
//! `post-checkout` or `reference-transaction` hook cannot fail the tool's plumbing (or leave
//! a half-made worktree behind). The tool's lifecycle hooks (`tlv4.hooksPath`,
//! [`crate::hooks`]) are a separate thing and not affected.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The options that turn the user's git hooks off for one command.
pub const NO_HOOKS: [&str; 2] = ["-c", "core.hooksPath=/dev/null"];

/// `git`, with the user's hooks off and no repository location inherited from the
/// environment: callers name the repository themselves (`-C`, `--git-dir`, the directory);
/// variables set by a hook or the user's shell must not redirect the command elsewhere.
fn git() -> Command {
    let mut cmd = Command::new("git");
    cmd.env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .args(NO_HOOKS)
        .stdin(Stdio::null());
    cmd
}

/// The object format git-tlv4 works with: the store opens no repository of another
/// (`tlv4_store::store::Store::from_repo`), so ids computed where no repository is at hand (the
/// trust record, which is read from a working tree path) are in this one.
pub const OBJECT_FORMAT: gix::hash::Kind = gix::hash::Kind::Sha1;

/// The id git gives a blob of `bytes` in a repository whose object format is `kind`: what
/// `git hash-object` prints there. The one place object ids are computed from bytes; pass
/// the repository's own format (`repo.object_hash()`).
pub fn blob_id(kind: gix::hash::Kind, bytes: &[u8]) -> Option<gix::ObjectId> {
    gix::objs::compute_hash(kind, gix::objs::Kind::Blob, bytes).ok()
}

/// [`blob_id`] in hexadecimal, empty in the one case it has none (SHA-1 collision
/// detection refused the bytes).
pub fn blob_hex(kind: gix::hash::Kind, bytes: &[u8]) -> String {
    blob_id(kind, bytes)
        .map(|id| id.to_string())
        .unwrap_or_default()
}

/// Variables of the caller's environment that would point the agent's git at another
/// repository than its working directory.
pub const GIT_LOCATION_VARS: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_PREFIX",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
];

/// `git` in `dir` for a caller that reads git's output itself (the drivers that list, diff
/// and apply in an agent's checkout): the user's hooks off, stdin closed unless the caller
/// pipes it, and none of [`GIT_LOCATION_VARS`] inherited.
pub fn command(dir: &Path) -> Command {
    let mut cmd = git();
    cmd.current_dir(dir);
    for var in GIT_LOCATION_VARS {
        cmd.env_remove(var);
    }
    cmd
}

/// Runs git's own auto-maintenance (`git maintenance run --auto`), which packs loose objects
/// once there are enough of them. Failures are ignored: maintenance is an optimisation.
pub fn auto_maintenance(git_dir: &Path) {
    let _ = git()
        .arg("--git-dir")
        .arg(git_dir)
        .args(["maintenance", "run", "--auto", "--quiet"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Runs `git --git-dir GIT_DIR ARGS` with `input` on its standard input and returns its
/// stdout; an error carries its stderr. For plumbing that reads its arguments from stdin
/// (`rev-list --stdin`), where a command line could grow past the system's limit.
pub fn run_with_input(git_dir: &Path, args: &[&str], input: &str) -> crate::Result<String> {
    use std::io::Write;
    let mut child = git()
        .arg("--git-dir")
        .arg(git_dir)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| crate::Error::io("cannot run git", e))?;
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let input = input.to_owned();
    // Written from another thread: git may answer before it has read everything.
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child
        .wait_with_output()
        .map_err(|e| crate::Error::io("cannot run git", e))?;
    let written = writer.join().unwrap_or(Ok(()));
    if !out.status.success() {
        return Err(crate::Error::Git(format!(
            "`git {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    written.map_err(|e| crate::Error::io("cannot write to git", e))?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Forgets every reflog entry of ref `name` (`git reflog expire --expire=now`). Best
/// effort: a reflog left only delays what git's `gc` frees.
pub fn expire_reflog(git_dir: &Path, name: &str) {
    let _ = git()
        .arg("--git-dir")
        .arg(git_dir)
        .args([
            "reflog",
            "expire",
            "--expire=now",
            "--expire-unreachable=now",
        ])
        .arg(name)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Runs `git ARGS` in `dir` and returns its stdout; an error carries its stderr.
pub fn run(dir: &Path, args: &[&str]) -> crate::Result<String> {
    run_with(dir, args, None)
}

/// Like [`run`], with git's index at `index` (`GIT_INDEX_FILE`) instead of the repository's.
pub fn run_with_index(dir: &Path, index: &Path, args: &[&str]) -> crate::Result<String> {
    run_with(dir, args, Some(index))
}

/// Runs `git ARGS` in `dir` and returns its whole output, whatever its exit status: for
/// callers that read git's report of a failure (`push --porcelain`).
pub fn output(dir: &Path, args: &[&str]) -> crate::Result<std::process::Output> {
    git()
        .current_dir(dir)
        .args(args)
        .output()
        .map_err(|e| crate::Error::io("cannot run git", e))
}

fn run_with(dir: &Path, args: &[&str], index: Option<&Path>) -> crate::Result<String> {
    let mut cmd = git();
    cmd.current_dir(dir);
    if let Some(index) = index {
        cmd.env("GIT_INDEX_FILE", index);
    }
    let out = cmd
        .args(args)
        .output()
        .map_err(|e| crate::Error::io("cannot run git", e))?;
    if !out.status.success() {
        return Err(crate::Error::Git(format!(
            "`git {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The lock reason of a worktree this process uses; `stale_worktrees` recognises it.
pub fn lock_reason() -> String {
    // With its start time: a pid of a process that is gone may be another's by the time the
    // lock is looked at (pids wrap around at 32768 on many systems).
    let start = crate::host::own_start_time()
        .map(|t| format!(" start {t}"))
        .unwrap_or_default();
    format!(
        "git-tlv4 pid {}{start} on {}",
        std::process::id(),
        crate::host::name()
    )
}

/// A lock reason the tool wrote: `git-tlv4 pid N start T on HOST` (`start T` where the
/// process's start time is known; older versions wrote none), then the run [`note_run`]
/// records (` run pid M start T`), then what the checkout is for (` (SID TASK)`,
/// ` (read-only view of …)`). The one reader of that format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockReason<'a> {
    /// The git-tlv4 process that locked the checkout.
    pub pid: u32,
    /// Its start time ([`crate::host::process_start_time`]), where the reason says it.
    pub start: Option<u64>,
    /// Its host.
    pub host: &'a str,
    /// The run it started there: pid and start time.
    pub run: Option<(u32, u64)>,
    /// What the checkout is for, without the parentheses.
    pub what: Option<&'a str>,
}

impl<'a> LockReason<'a> {
    /// The reason in `text`, `None` when the tool did not write it.
    pub fn parse(text: &'a str) -> Option<LockReason<'a>> {
        let rest = text.trim().strip_prefix("git-tlv4 pid ")?;
        let (pid, rest) = rest.split_once(" on ")?;
        let (pid, start) = match pid.split_once(" start ") {
            Some((pid, start)) => (pid, Some(start.parse().ok()?)),
            None => (pid, None),
        };
        let pid = pid.parse().ok()?;
        let (host, mut rest) = rest.split_once(' ').unwrap_or((rest, ""));
        let mut run = None;
        if let Some(r) = rest.strip_prefix("run pid ") {
            let mut words = r.splitn(4, ' ');
            let (Some(p), Some("start"), Some(t)) = (words.next(), words.next(), words.next())
            else {
                return None;
            };
            run = Some((p.parse().ok()?, t.parse().ok()?));
            rest = words.next().unwrap_or("");
        }
        let what = rest
            .trim()
            .strip_prefix('(')
            .and_then(|w| w.strip_suffix(')'));
        Some(LockReason {
            pid,
            start,
            host,
            run,
            what,
        })
    }
}

/// Names run `pid` (started at `start`, see [`crate::host::process_start_time`]) in the
/// lock of the checkout `workdir` is in, when this process locked that checkout, replacing
/// the run named before: `git-tlv4 pid N on HOST run pid PID start START`, then what the
/// reason said after `HOST` (` (SID TASK)` for a task). `resume` leaves a checkout alone
/// while that run's process group lives ([`live_run`]). Anything else (no checkout,
/// someone else's lock) is left as it is.
pub fn note_run(workdir: &Path, pid: u32, start: u64) {
    let Some(lock) = lock_file(workdir) else {
        return;
    };
    let Ok(reason) = std::fs::read_to_string(&lock) else {
        return;
    };
    let Some(old) = LockReason::parse(&reason)
        .filter(|r| r.pid == std::process::id() && r.host == crate::host::name())
    else {
        return;
    };
    let what = old.what.map(|w| format!(" ({w})")).unwrap_or_default();
    let text = format!("{} run pid {pid} start {start}{what}", lock_reason());
    let tmp = lock.with_file_name("locked.tlv4-new");
    // Written aside and renamed over: git never reads half a reason.
    if std::fs::write(&tmp, text).is_ok() && std::fs::rename(&tmp, &lock).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

/// The run recorded in the lock of `checkout` by [`note_run`], if its process group still
/// has a member that runs.
pub fn live_run(checkout: &Path) -> Option<u32> {
    let reason = std::fs::read_to_string(lock_file(checkout)?).ok()?;
    let (pid, start) = LockReason::parse(&reason)?.run?;
    crate::host::group_alive(pid, Some(start)).then_some(pid)
}

/// The `locked` file of the linked worktree `dir` is in: `<dir>/.git` is a file naming the
/// worktree's administrative directory — or, in an agent's checkout, its private git
/// directory (see `worktree::pool::Lease::private_git`), whose registered admin folder is then
/// found among the worktrees of the repository it borrows objects from, by the checkout's
/// path. `None` for the main working tree or no worktree.
fn lock_file(dir: &Path) -> Option<std::path::PathBuf> {
    for d in dir.ancestors() {
        let dot_git = d.join(".git");
        if dot_git.is_dir() {
            return None;
        }
        if let Ok(text) = std::fs::read_to_string(&dot_git) {
            let gitdir = d.join(text.strip_prefix("gitdir:")?.trim());
            if gitdir.join("commondir").is_file() {
                return Some(gitdir.join("locked"));
            }
            let alternates =
                std::fs::read_to_string(gitdir.join("objects/info/alternates")).ok()?;
            let common = Path::new(alternates.lines().next()?.trim()).parent()?;
            return admin_dir_of(common, d).map(|admin| admin.join("locked"));
        }
    }
    None
}

/// The linked worktree admin directory (`<common>/worktrees/<name>`) whose checkout is `path`.
pub fn admin_dir_of(common_dir: &Path, path: &Path) -> Option<PathBuf> {
    // By name, so that a checkout whose directory is gone is found too; else canonically.
    let want = std::fs::canonicalize(path).ok();
    std::fs::read_dir(common_dir.join("worktrees"))
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|admin| {
            let Some(checkout) = std::fs::read_to_string(admin.join("gitdir"))
                .ok()
                .and_then(|g| Some(Path::new(g.trim()).parent()?.to_path_buf()))
            else {
                return false;
            };
            checkout == path || want.is_some() && std::fs::canonicalize(&checkout).ok() == want
        })
}

/// Points the `.git` file of the linked worktree at `path` back at its registered admin
/// folder, where it pointed elsewhere (an agent's checkout points at its private git
/// directory): `git worktree remove` refuses a checkout that does not point back.
pub fn point_back(common_dir: &Path, path: &Path) {
    let Some(admin) = admin_dir_of(common_dir, path) else {
        return;
    };
    let gitfile = format!("gitdir: {}\n", admin.display());
    let dot_git = path.join(".git");
    if dot_git.is_file() && std::fs::read_to_string(&dot_git).ok().as_deref() != Some(&gitfile) {
        let _ = std::fs::write(&dot_git, gitfile);
    }
}

/// Locked worktrees of this repository left by git-tlv4 processes of this host that are gone.
pub fn stale_worktrees(git_dir: &Path) -> Vec<std::path::PathBuf> {
    let Ok(out) = git()
        .arg("--git-dir")
        .arg(git_dir)
        .args(["worktree", "list", "--porcelain"])
        .output()
    else {
        return Vec::new();
    };
    let host = crate::host::name();
    let text = String::from_utf8_lossy(&out.stdout);
    let mut stale = Vec::new();
    let mut path = None;
    for line in text.lines() {
        if let Some(p) = line.strip_prefix("worktree ") {
            path = Some(std::path::PathBuf::from(p));
        } else if let Some(reason) = line.strip_prefix("locked ")
            && let Some(p) = path.as_ref()
            && stale_lock(reason, &host)
        {
            stale.push(p.clone());
        }
    }
    stale
}

/// Whether a worktree lock reason is [`lock_reason`]'s, of a process of `host` that is gone.
pub fn stale_lock(reason: &str, host: &str) -> bool {
    LockReason::parse(reason)
        .is_some_and(|r| r.host == host && !crate::host::process_alive(r.pid, r.start))
}

/// Unlocks and removes a worktree git-tlv4 left behind.
pub fn remove_worktree(git_dir: &Path, path: &Path) -> crate::Result<()> {
    point_back(git_dir, path);
    let gd = git_dir.to_string_lossy().into_owned();
    let wt = path.to_string_lossy().into_owned();
    let dir = git_dir.parent().unwrap_or(git_dir);
    let _ = run(dir, &["--git-dir", &gd, "worktree", "unlock", &wt]);
    run(
        dir,
        &[
            "--git-dir",
            &gd,
            "worktree",
            "remove",
            "--force",
            "--force",
            &wt,
        ],
    )?;
    // The temporary directory the tool made the checkout in (`tlv4-…`), now empty: a
    // process that died never got to remove it. `remove_dir` takes only an empty one.
    if let Some(parent) = path.parent()
        && parent
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("tlv4-"))
    {
        let _ = std::fs::remove_dir(parent);
    }
    Ok(())
}

/// The git directory, object format and ref storage of the repository around `dir` as git
/// sees them (`sha1`/`sha256`, `files`/`reftable`); `None` when git finds no repository there, or is
/// too old to say (before 2.45).
pub fn repository_format(dir: &Path) -> Option<(std::path::PathBuf, String, String)> {
    let out = git()
        .current_dir(dir)
        .args([
            "rev-parse",
            "--absolute-git-dir",
            "--show-object-format",
            "--show-ref-format",
        ])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines().map(str::trim);
    let git_dir = std::path::PathBuf::from(lines.next()?);
    Some((
        git_dir,
        lines.next()?.to_lowercase(),
        lines.next()?.to_lowercase(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::git;

    use std::os::unix::process::CommandExt;

    #[test]
    fn blob_ids_are_gits_own() {
        // `printf 'hello\n' | git hash-object --stdin`. (The gix built here knows SHA-1 only;
        // a repository of another format is refused when the store opens it.)
        assert_eq!(
            blob_hex(gix::hash::Kind::Sha1, b"hello\n"),
            "ce013625030ba8dba906f756967f9e9ca394464a"
        );
        assert_eq!(
            crate::trust::blob_id(b"hello\n"),
            blob_hex(OBJECT_FORMAT, b"hello\n")
        );
    }

    #[test]
    fn lock_reasons_read_back_as_written() {
        let r = LockReason::parse("git-tlv4 pid 12 on box run pid 34 start 56 (S T)").unwrap();
        assert_eq!(
            (r.pid, r.host, r.run, r.what),
            (12, "box", Some((34, 56)), Some("S T"))
        );
        let r = LockReason::parse("git-tlv4 pid 12 on box").unwrap();
        assert_eq!((r.host, r.start, r.run, r.what), ("box", None, None, None));
        let r =
            LockReason::parse("git-tlv4 pid 12 start 99 on box run pid 34 start 56 (S T)").unwrap();
        assert_eq!(
            (r.pid, r.start, r.host, r.run, r.what),
            (12, Some(99), "box", Some((34, 56)), Some("S T"))
        );
        assert!(LockReason::parse("git-tlv4 pid 12 start x on box").is_none());
        let r = LockReason::parse("git-tlv4 pid 7 on h (read-only view of ab)\n").unwrap();
        assert_eq!(r.what, Some("read-only view of ab"));
        assert!(LockReason::parse("someone else's").is_none());
        assert!(LockReason::parse("git-tlv4 pid x on h").is_none());
    }

    #[test]
    fn a_lock_whose_pid_is_another_process_now_is_stale() {
        let host = crate::host::name();
        let me = std::process::id();
        let now = crate::host::own_start_time().expect("linux has /proc");
        // This process, with its start time: alive.
        assert!(!stale_lock(
            &format!("git-tlv4 pid {me} start {now} on {host}"),
            &host
        ));
        assert!(!stale_lock(&lock_reason(), &host));
        // The same pid with another start time: the locker is gone and its pid reused.
        let other = format!("git-tlv4 pid {me} start {} on {host}", now + 1);
        assert!(stale_lock(&other, &host));
        // A reason without a start time (older versions) goes by the pid alone.
        assert!(!stale_lock(&format!("git-tlv4 pid {me} on {host}"), &host));
    }

    #[test]
    fn a_run_named_in_our_lock_keeps_the_checkout_while_its_group_lives() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir(&repo).unwrap();
        git(&repo, &["init", "-q"]);
        git(&repo, &["commit", "-q", "--allow-empty", "-m", "one"]);
        let ours = dir.path().join("ours");
        let theirs = dir.path().join("theirs");
        let reason = format!("{} (S T)", lock_reason());
        for (path, why) in [(&ours, reason.as_str()), (&theirs, "someone else's")] {
            let p = path.to_str().unwrap();
            git(
                &repo,
                &[
                    "worktree", "add", "-q", "--detach", "--lock", "--reason", why, p,
                ],
            );
        }
        let mut child = std::process::Command::new("sleep")
            .arg("60")
            .process_group(0)
            .spawn()
            .unwrap();
        let pid = child.id();
        let start = crate::host::process_start_time(pid).unwrap();
        // Named from a subdirectory too, as the tester runs there.
        std::fs::create_dir(ours.join("sub")).unwrap();
        note_run(&ours.join("sub"), pid, start);
        note_run(&theirs, pid, start);
        let list = git(&repo, &["worktree", "list", "--porcelain"]);
        assert!(
            list.contains(&format!(
                "locked {} run pid {pid} start {start} (S T)\n",
                lock_reason()
            )),
            "{list}"
        );
        assert!(list.contains("locked someone else's\n"), "{list}");
        assert_eq!(live_run(&ours), Some(pid));
        assert_eq!(live_run(&theirs), None);
        // A later run replaces the one named before.
        note_run(&ours, pid, start + 1);
        assert_eq!(
            live_run(&ours),
            None,
            "another start time is another process"
        );
        note_run(&ours, pid, start);
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(live_run(&ours), None);
        let list = git(&repo, &["worktree", "list", "--porcelain"]);
        assert_eq!(list.matches("run pid").count(), 1, "{list}");
        assert!(list.contains(" (S T)\n"), "{list}");
    }
}
