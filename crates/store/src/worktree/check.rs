//! The checks a worker's changes pass before they are committed: every changed path stays
//! inside the worktree (symlinks included), nothing is a `.git` below the root, no file is
//! too large and there are not too many of them. Changes under `.tlv4/` are set aside, and
//! so are new files in generated trees (`node_modules/`, `target/`, … see
//! [`GENERATED_DIRS`]) that the base commit does not have.
//!
//! The list of changes is `git status` (so `.gitignore` is honoured exactly as `git add`
//! will honour it); the checks look at the files themselves with `lstat`, never following a
//! symlink out of the worktree.

use std::collections::{BTreeSet, VecDeque};
use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};

use super::PIPELINE_FOLDER;
use tlv4_core::error::{Error, Result};

/// How many symlinks a target may go through before it counts as a loop (Linux's limit).
const MAX_SYMLINK_HOPS: u32 = 40;

pub use tlv4_core::config::GENERATED_DIRS;

pub use tlv4_core::config::SnapshotLimits;

/// How a path changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ChangeKind {
    /// A new file.
    Added,
    /// A changed file (content, mode or type).
    Modified,
    /// A deleted file.
    Deleted,
}

impl ChangeKind {
    /// `added`, `modified` or `deleted`.
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Added => "added",
            ChangeKind::Modified => "modified",
            ChangeKind::Deleted => "deleted",
        }
    }
}

/// One changed path, relative to the root of the worktree.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Change {
    /// The path, `/`-separated.
    pub path: String,
    /// How it changed.
    pub kind: ChangeKind,
}

/// Why a path is not taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rule {
    /// A symlink whose target leaves the worktree (absolute, or `..` past the root, directly
    /// or through other symlinks).
    SymlinkOutside {
        /// The link's target as written.
        target: String,
    },
    /// A symlink that points into a `.git`.
    SymlinkIntoGit {
        /// The link's target as written.
        target: String,
    },
    /// A symlink chain that does not end.
    SymlinkLoop {
        /// The link's target as written.
        target: String,
    },
    /// A `.git` (directory or file) below the root of the worktree.
    GitDir,
    /// A nested git repository.
    NestedRepository,
    /// A file larger than [`SnapshotLimits::max_file_bytes`].
    TooLarge {
        /// Its size.
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// More changed files than [`SnapshotLimits::max_files`].
    TooManyFiles {
        /// How many changed.
        count: usize,
        /// The limit.
        limit: usize,
    },
    /// Neither a regular file nor a symlink (a socket, a device…).
    NotAFile,
    /// A path that is not valid UTF-8.
    NotUtf8,
    /// The worker moved `HEAD` of the worktree off the task branch.
    HeadMoved {
        /// What `HEAD` is instead.
        head: String,
    },
    /// The worker moved the task branch to a commit that does not build on the snapshot base.
    BranchMoved {
        /// The branch's tip.
        tip: String,
    },
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rule::SymlinkOutside { target } if Path::new(target).is_absolute() => write!(
                f,
                "is a symlink to the absolute path `{target}` (symlinks must stay inside the worktree)"
            ),
            Rule::SymlinkOutside { target } => write!(
                f,
                "is a symlink to `{target}`, which resolves outside the worktree (symlinks must stay inside it)"
            ),
            Rule::SymlinkIntoGit { target } => write!(
                f,
                "is a symlink to `{target}`, inside a `.git` (nothing may point into git's own files)"
            ),
            Rule::SymlinkLoop { target } => write!(
                f,
                "is a symlink to `{target}`, which goes through more than {MAX_SYMLINK_HOPS} symlinks"
            ),
            Rule::GitDir => write!(
                f,
                "is a `.git` below the root of the worktree (no nested repositories or `.git` files)"
            ),
            Rule::NestedRepository => write!(
                f,
                "is a nested git repository (no nested repositories or `.git` files)"
            ),
            Rule::TooLarge { bytes, limit } => write!(
                f,
                "is {bytes} bytes, more than the limit of {limit} bytes per file"
            ),
            Rule::TooManyFiles { count, limit } => write!(
                f,
                "{count} files changed, more than the limit of {limit} per snapshot"
            ),
            Rule::NotAFile => write!(f, "is neither a regular file nor a symlink"),
            Rule::NotUtf8 => write!(f, "is not a valid UTF-8 path"),
            Rule::HeadMoved { head } => write!(
                f,
                "was moved off the task branch by the worker (it is `{head}`)"
            ),
            Rule::BranchMoved { tip } => write!(
                f,
                "was moved by the worker to {tip}, which does not build on the commit the task started from"
            ),
        }
    }
}

/// A path that is not taken, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// The path, relative to the root of the worktree (`.` for the whole change).
    pub path: String,
    /// The rule it breaks.
    pub rule: Rule,
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.rule {
            Rule::TooManyFiles { .. } => write!(f, "{}", self.rule),
            _ => write!(f, "`{}` {}", self.path, self.rule),
        }
    }
}

/// A generated directory whose new files a snapshot left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftOut {
    /// The directory, relative to the root of the worktree, ending with `/`.
    pub dir: String,
    /// How many new files it holds.
    pub files: usize,
}

impl fmt::Display for LeftOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({} files)", self.dir, self.files)
    }
}

/// What a worker changed, before anything is committed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inspection {
    /// The changes a snapshot takes (when nothing is rejected), in path order.
    pub changed: Vec<Change>,
    /// Changed paths under `.tlv4/`, which a snapshot leaves out.
    pub ignored: Vec<String>,
    /// Generated directories whose new files a snapshot leaves out, in path order.
    pub left_out: Vec<LeftOut>,
    /// Paths that break a rule: the task branch gets nothing while there are any (what is
    /// in `changed` is kept under a ref of its own instead).
    pub rejected: Vec<Rejection>,
}

/// One line of `git status --porcelain=v1 -z --no-renames`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct StatusEntry {
    /// The index column.
    x: u8,
    /// The worktree column.
    y: u8,
    /// The path; a directory (a nested repository) ends with `/`.
    path: String,
}

impl StatusEntry {
    /// Whether the entry has a staged change.
    #[cfg(test)]
    pub(super) fn is_staged(&self) -> bool {
        !matches!(self.x, b' ' | b'?' | b'!')
    }

    /// How the file differs from the index, which a snapshot fills from its base commit:
    /// `None` when it does not (a difference between `HEAD` and the base alone is no change
    /// of the worktree's).
    fn kind(&self) -> Option<ChangeKind> {
        match self.y {
            b' ' => None,
            b'?' | b'A' => Some(ChangeKind::Added),
            b'D' => Some(ChangeKind::Deleted),
            _ => Some(ChangeKind::Modified),
        }
    }
}

/// Parses NUL-separated porcelain v1 status (renames turned off, so one path an entry).
pub(super) fn parse_status(out: &[u8]) -> Result<Vec<StatusEntry>> {
    out.split(|b| *b == 0)
        .filter(|e| !e.is_empty())
        .map(|e| {
            if e.len() < 4 || e[2] != b' ' {
                return Err(Error::Git(format!(
                    "unexpected `git status` output: {:?}",
                    String::from_utf8_lossy(e)
                )));
            }
            Ok(StatusEntry {
                x: e[0],
                y: e[1],
                path: String::from_utf8_lossy(&e[3..]).into_owned(),
            })
        })
        .collect()
}

/// Whether `path` is the pipeline folder or inside it.
fn in_pipeline_folder(path: &str) -> bool {
    path.strip_prefix(PIPELINE_FOLDER)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// Sorts the status entries of the worktree at `root` (against an index holding the base
/// commit) into taken, set aside, left out and rejected. `base_has_dir(dir)` says whether the
/// base commit has a directory at `dir`.
pub(super) fn inspect(
    root: &Path,
    entries: Vec<StatusEntry>,
    limits: &SnapshotLimits,
    base_has_dir: &dyn Fn(&str) -> bool,
) -> Inspection {
    let mut out = Inspection::default();
    let mut taken = Vec::new();
    let mut generated: std::collections::BTreeMap<String, usize> = Default::default();
    let mut known: std::collections::HashMap<String, bool> = Default::default();
    for entry in entries {
        let Some(kind) = entry.kind() else { continue };
        if in_pipeline_folder(&entry.path) {
            out.ignored.push(entry.path);
            continue;
        }
        // A new file in a generated tree the base does not have.
        if kind == ChangeKind::Added
            && let Some(dir) = generated_dir(&entry.path, &limits.leave_out, &mut |d| {
                *known.entry(d.to_owned()).or_insert_with(|| base_has_dir(d))
            })
        {
            *generated.entry(format!("{dir}/")).or_default() += 1;
            continue;
        }
        taken.push((entry, kind));
    }
    out.ignored.sort();
    out.left_out = generated
        .into_iter()
        .map(|(dir, files)| LeftOut { dir, files })
        .collect();
    if taken.len() > limits.max_files {
        // The snapshot as a whole is refused; the files are still checked one by one, so
        // that those that pass can be kept.
        out.rejected.push(Rejection {
            path: ".".to_owned(),
            rule: Rule::TooManyFiles {
                count: taken.len(),
                limit: limits.max_files,
            },
        });
    }
    let mut dirs_seen = BTreeSet::new();
    for (entry, kind) in &taken {
        let reject = |rule| Rejection {
            path: entry.path.trim_end_matches('/').to_owned(),
            rule,
        };
        // `git::run` decodes lossily: a replacement character means bytes that were not UTF-8.
        if entry.path.contains('\u{FFFD}') {
            out.rejected.push(reject(Rule::NotUtf8));
            continue;
        }
        if entry
            .path
            .trim_end_matches('/')
            .split('/')
            .any(|c| c.eq_ignore_ascii_case(".git"))
        {
            out.rejected.push(reject(Rule::GitDir));
            continue;
        }
        // A `.git` in any directory above the path: git skips it silently, but its presence
        // means a repository (or a pointer to one) was planted in the worktree.
        for dir in ancestors(&entry.path) {
            if dirs_seen.insert(dir.to_owned())
                && std::fs::symlink_metadata(root.join(dir).join(".git")).is_ok()
            {
                out.rejected.push(Rejection {
                    path: format!("{dir}/.git"),
                    rule: Rule::GitDir,
                });
            }
        }
        if entry.path.ends_with('/') {
            // Untracked directories are listed whole only when git sees a repository there.
            out.rejected.push(reject(Rule::NestedRepository));
            continue;
        }
        if *kind != ChangeKind::Deleted
            && let Some(rule) = check_file(root, &entry.path, limits)
        {
            out.rejected.push(reject(rule));
            continue;
        }
        out.changed.push(Change {
            path: entry.path.clone(),
            kind: *kind,
        });
    }
    // A file below a planted `.git` is not taken either.
    let planted: Vec<String> = out
        .rejected
        .iter()
        .filter(|r| r.rule == Rule::GitDir)
        .filter_map(|r| r.path.strip_suffix(".git").map(str::to_owned))
        .collect();
    out.changed
        .retain(|c| !planted.iter().any(|dir| c.path.starts_with(dir.as_str())));
    out.changed.sort();
    out
}

/// The generated directory `path` (a new file) lies in, if any: the one nearest the root
/// named in `names` that the base does not have.
fn generated_dir<'a>(
    path: &'a str,
    names: &[String],
    base_has_dir: &mut dyn FnMut(&str) -> bool,
) -> Option<&'a str> {
    let path = path.trim_end_matches('/');
    let mut end = 0;
    for part in path.split('/') {
        let dir_end = end + part.len();
        if dir_end >= path.len() {
            // The last component is the file itself.
            return None;
        }
        if names.iter().any(|n| n == part) && !base_has_dir(&path[..dir_end]) {
            return Some(&path[..dir_end]);
        }
        end = dir_end + 1;
    }
    None
}

/// The directories above `path` (a `/`-separated relative path), nearest the root first.
fn ancestors(path: &str) -> impl Iterator<Item = &str> {
    let path = path.trim_end_matches('/');
    path.match_indices('/').map(move |(i, _)| &path[..i])
}

/// The rule the file at `rel` breaks, if any.
fn check_file(root: &Path, rel: &str, limits: &SnapshotLimits) -> Option<Rule> {
    let full = root.join(rel);
    let meta = match std::fs::symlink_metadata(&full) {
        Ok(m) => m,
        // Gone since `git status`: `git add -A` records it as deleted, or not at all.
        Err(_) => return None,
    };
    if meta.file_type().is_symlink() {
        let target = std::fs::read_link(&full).ok()?;
        return check_symlink(root, Path::new(rel), &target);
    }
    if meta.is_dir() {
        return Some(if full.join(".git").exists() {
            Rule::NestedRepository
        } else {
            Rule::NotAFile
        });
    }
    if !meta.is_file() {
        return Some(Rule::NotAFile);
    }
    (meta.len() > limits.max_file_bytes).then_some(Rule::TooLarge {
        bytes: meta.len(),
        limit: limits.max_file_bytes,
    })
}

/// Follows the symlink at `link` (relative to `root`) with `target` through every symlink
/// inside the worktree, by path components, never leaving `root`: the rule it breaks if it
/// gets out, into a `.git`, or loops. A target that does not exist is judged by its path.
fn check_symlink(root: &Path, link: &Path, target: &Path) -> Option<Rule> {
    let written = target.to_string_lossy().into_owned();
    let outside = || {
        Some(Rule::SymlinkOutside {
            target: written.clone(),
        })
    };
    if target.has_root() {
        return outside();
    }
    let mut resolved: Vec<OsString> = link
        .parent()
        .map(|p| p.components().map(|c| c.as_os_str().to_owned()).collect())
        .unwrap_or_default();
    let mut queue: VecDeque<OsString> = target
        .components()
        .map(|c| c.as_os_str().to_owned())
        .collect();
    let mut hops = 0;
    while let Some(part) = queue.pop_front() {
        if part == "." || part.is_empty() {
            continue;
        }
        if part == ".." {
            if resolved.pop().is_none() {
                return outside();
            }
            continue;
        }
        if part.to_string_lossy().eq_ignore_ascii_case(".git") {
            return Some(Rule::SymlinkIntoGit { target: written });
        }
        resolved.push(part);
        let here: PathBuf = resolved.iter().collect();
        let Ok(meta) = std::fs::symlink_metadata(root.join(&here)) else {
            // Nothing there: no further symlink to follow; the rest is judged by its path.
            continue;
        };
        if meta.file_type().is_symlink() {
            hops += 1;
            if hops > MAX_SYMLINK_HOPS {
                return Some(Rule::SymlinkLoop { target: written });
            }
            let Ok(next) = std::fs::read_link(root.join(&here)) else {
                return outside();
            };
            resolved.pop();
            if next.has_root() {
                return outside();
            }
            let mut parts: Vec<OsString> = next
                .components()
                .map(|c| c.as_os_str().to_owned())
                .collect();
            parts.extend(queue.drain(..));
            queue = parts.into();
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_parsing_and_kinds() {
        let out = b"?? new file\0 M a/b\0 D gone\0 T link\0M  staged\0?? nested/\0";
        let e = parse_status(out).unwrap();
        assert_eq!(e.len(), 6);
        assert_eq!(e[0].path, "new file");
        assert_eq!(e[0].kind(), Some(ChangeKind::Added));
        assert_eq!(e[1].kind(), Some(ChangeKind::Modified));
        assert_eq!(e[2].kind(), Some(ChangeKind::Deleted));
        assert_eq!(e[3].kind(), Some(ChangeKind::Modified));
        assert!(e[4].is_staged());
        assert_eq!(e[4].kind(), None, "a difference to HEAD only is no change");
        assert!(!e[0].is_staged() && !e[1].is_staged());
        assert_eq!(e[5].path, "nested/");
        assert!(parse_status(b"garbage\0").is_err());
    }

    #[test]
    fn pipeline_folder_and_ancestors() {
        assert!(in_pipeline_folder(".tlv4"));
        assert!(in_pipeline_folder(".tlv4/sessions/x"));
        assert!(!in_pipeline_folder(".tlv4x/y"));
        assert!(!in_pipeline_folder("src/.tlv4/y"));
        assert_eq!(ancestors("a/b/c").collect::<Vec<_>>(), ["a", "a/b"]);
        assert_eq!(ancestors("nested/").collect::<Vec<_>>(), Vec::<&str>::new());
        assert_eq!(ancestors("f").count(), 0);
    }

    #[test]
    fn generated_directories_are_those_the_base_does_not_have() {
        let names: Vec<String> = GENERATED_DIRS.iter().map(|d| (*d).to_owned()).collect();
        let mut base = |d: &str| d == "build" || d == "web/target";
        let mut dir = |p: &'static str| generated_dir(p, &names, &mut base);
        assert_eq!(dir("node_modules/a/b.js"), Some("node_modules"));
        assert_eq!(
            dir("web/node_modules/x/node_modules/y.js"),
            Some("web/node_modules")
        );
        assert_eq!(dir("src/__pycache__/m.pyc"), Some("src/__pycache__"));
        assert_eq!(
            dir("build/out.o"),
            None,
            "the base has build/: the project's own"
        );
        assert_eq!(dir("web/target/x"), None);
        assert_eq!(dir("target/debug/x"), Some("target"));
        assert_eq!(dir("node_modules"), None, "a file of that name is a file");
        assert_eq!(dir("src/node_modules.rs"), None);
        assert_eq!(dir("nested/"), None);
    }

    #[test]
    fn symlink_resolution_stays_inside_or_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/f"), "x").unwrap();
        let link = |name: &str, target: &str| {
            std::os::unix::fs::symlink(target, root.join(name)).unwrap();
            check_symlink(root, Path::new(name), Path::new(target))
        };
        assert_eq!(link("a/b/ok", "../f"), None);
        assert_eq!(link("a/b/dangling", "../../nowhere/x"), None);
        assert_eq!(link("self", "."), None);
        assert!(matches!(
            link("up", ".."),
            Some(Rule::SymlinkOutside { .. })
        ));
        assert!(matches!(
            link("a/b/esc", "../../../x"),
            Some(Rule::SymlinkOutside { .. })
        ));
        assert!(matches!(
            link("abs", "/etc"),
            Some(Rule::SymlinkOutside { .. })
        ));
        // Through another symlink: `hop` stays inside by its path, but `a/up` leaves.
        std::os::unix::fs::symlink("..", root.join("a/up")).unwrap();
        assert_eq!(link("hop", "a/up/up2"), None);
        assert!(matches!(
            link("chain", "a/up/.."),
            Some(Rule::SymlinkOutside { .. })
        ));
        assert!(matches!(
            link("togit", ".git/config"),
            Some(Rule::SymlinkIntoGit { .. })
        ));
        std::os::unix::fs::symlink("loop2", root.join("loop1")).unwrap();
        std::os::unix::fs::symlink("loop1", root.join("loop2")).unwrap();
        assert!(matches!(
            check_symlink(root, Path::new("loop1"), Path::new("loop2")),
            Some(Rule::SymlinkLoop { .. })
        ));
    }
}
