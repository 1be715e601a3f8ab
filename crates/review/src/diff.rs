//! The diff under review: gix finds the changed files between two trees, the pairing of renames
//! is git's, and the line diff finds the added lines of each: Myers by imara-diff (gix's, whose
//! heuristics bound its cost as git's xdiff does), Patience as git's xpatience does it (unique
//! lines matched, the runs between them diffed again, Myers where a run has none), under a
//! deadline.
//!
//! The deadline stops the line diff of a pathological file: what is left when it fires is
//! reported as replaced, so a diff that ends after its deadline is marked *approximate*, and the
//! report says so next to that file.

use std::ops::Range;
use std::time::{Duration, Instant};

use gix::ObjectId;
use gix::bstr::ByteSlice;
use gix::object::tree::diff::ChangeDetached as Change;

use tlv4_core::error::{Error, Result};

/// The line-diff algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DiffAlgorithm {
    /// Myers (the default; what `git diff` uses).
    #[default]
    Myers,
    /// Patience (`--patience`).
    Patience,
}

impl DiffAlgorithm {
    /// The algorithm of `similar` (unified diffs for revisions).
    fn similar(self) -> similar::Algorithm {
        match self {
            DiffAlgorithm::Myers => similar::Algorithm::Myers,
            DiffAlgorithm::Patience => similar::Algorithm::Patience,
        }
    }

    /// The name shown in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            DiffAlgorithm::Myers => "myers",
            DiffAlgorithm::Patience => "patience",
        }
    }
}

/// How a file changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    /// New file.
    Added,
    /// Removed file.
    Deleted,
    /// Changed in place.
    Modified,
    /// Moved (possibly changed too).
    Renamed,
    /// Copied from another file.
    Copied,
}

/// One changed file, with both sides' text and the new-side lines that were added.
#[derive(Debug, Clone)]
pub struct FileDiff {
    /// New-side path (old-side path for deletions).
    pub path: String,
    /// Old-side path of a rename or copy.
    pub old_path: Option<String>,
    /// How it changed.
    pub kind: ChangeKind,
    /// Old-side text (empty for additions and skipped files).
    pub old_text: String,
    /// New-side text (empty for deletions and skipped files).
    pub new_text: String,
    /// Byte offset of each new-side line.
    pub line_starts: Vec<usize>,
    /// Runs of added lines, as 0-based new-side line ranges, in order.
    pub added: Vec<Range<usize>>,
    /// Runs of new code: added lines that are not blank and not moved or re-indented (their
    /// text, whitespace normalised, is not among the lines the change removed), in order.
    /// Filled by [`FileDiff::mark_new`]; until then, the added lines.
    pub new: Vec<Range<usize>>,
    /// Whitespace-normalised hashes of the removed lines.
    pub removed_hashes: Vec<u64>,
    /// Whitespace-normalised hashes of the added lines, in the order of `added` (`None`: a
    /// blank line).
    pub added_hashes: Vec<Option<u64>>,
    /// Lines of the old side.
    pub old_line_count: usize,
    /// Lines added.
    pub added_lines: usize,
    /// Lines removed.
    pub removed_lines: usize,
    /// The changed runs of lines, in order: (old-side lines, new-side lines), 0-based.
    pub hunks: Vec<(Range<usize>, Range<usize>)>,
    /// The line diff hit its deadline: added lines may include unchanged ones.
    pub approximate: bool,
    /// Why the file was not diffed line by line (binary, too large, not a regular file).
    pub skipped: Option<String>,
}

impl FileDiff {
    /// Number of new-side lines.
    pub fn new_line_count(&self) -> usize {
        self.line_starts.len()
    }

    /// New-side line `i` (0-based), without its line end.
    pub fn line(&self, i: usize) -> &str {
        let start = self.line_starts[i];
        let end = self
            .line_starts
            .get(i + 1)
            .copied()
            .unwrap_or(self.new_text.len());
        self.new_text[start..end].trim_end_matches(['\n', '\r'])
    }

    /// The text of new-side lines `range`, without the final line end.
    pub fn text_of(&self, range: &Range<usize>) -> &str {
        let start = self.line_starts[range.start];
        let end = self
            .line_starts
            .get(range.end)
            .copied()
            .unwrap_or(self.new_text.len());
        self.new_text[start..end].trim_end_matches(['\n', '\r'])
    }

    /// The old-side line that new-side line `line` is, when the diff kept it (`None` for an
    /// added line).
    pub fn old_line(&self, line: usize) -> Option<usize> {
        let i = self.hunks.partition_point(|(_, new)| new.end <= line);
        if self
            .hunks
            .get(i)
            .is_some_and(|(_, new)| new.contains(&line))
        {
            return None;
        }
        Some(match i.checked_sub(1).map(|i| &self.hunks[i]) {
            Some((old, new)) => old.end + (line - new.end),
            None => line,
        })
    }

    /// The 0-based new-side line holding byte `offset`.
    pub fn line_at(&self, offset: usize) -> usize {
        match self.line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i.saturating_sub(1),
        }
    }

    /// Whether new-side line `i` was added.
    pub fn is_added(&self, i: usize) -> bool {
        overlaps(&self.added, &(i..i + 1))
    }

    /// Whether any added line lies in `range`.
    pub fn touches(&self, range: &Range<usize>) -> bool {
        overlaps(&self.added, range)
    }

    /// Whether new-side line `i` is new code.
    pub fn is_new(&self, i: usize) -> bool {
        overlaps(&self.new, &(i..i + 1))
    }

    /// Whether any line of new code lies in `range`.
    pub fn touches_new(&self, range: &Range<usize>) -> bool {
        overlaps(&self.new, range)
    }

    /// Lines of new code.
    pub fn new_lines(&self) -> usize {
        self.new.iter().map(|r| r.len()).sum()
    }

    /// Keeps as new code the added lines that are not blank and whose whitespace-normalised
    /// text is not in `moved` (the hashes of every line the change removed, in any file).
    pub fn mark_new(&mut self, moved: &Moved) {
        let mut new: Vec<Range<usize>> = Vec::new();
        let lines = self.added.iter().flat_map(|r| r.clone());
        for (i, hash) in lines.zip(&self.added_hashes) {
            if !hash.is_some_and(|h| !moved.contains(&h)) {
                continue;
            }
            match new.last_mut() {
                Some(last) if last.end == i => last.end = i + 1,
                _ => new.push(i..i + 1),
            }
        }
        self.new = new;
    }

    /// The unified diff of this file (for comparing two versions of a change).
    pub fn unified(&self, algorithm: DiffAlgorithm, deadline: Duration) -> String {
        let old_name = format!("a/{}", self.old_path.as_deref().unwrap_or(&self.path));
        let new_name = format!("b/{}", self.path);
        let diff = similar::TextDiff::configure()
            .algorithm(algorithm.similar())
            .deadline(Instant::now() + deadline)
            .diff_lines(self.old_text.as_str(), self.new_text.as_str());
        let mut out = format!("diff {old_name} {new_name}\n");
        if let Some(s) = &self.skipped {
            out.push_str(&format!("({s})\n"));
            return out;
        }
        out.push_str(
            &diff
                .unified_diff()
                .context_radius(3)
                .header(&old_name, &new_name)
                .to_string(),
        );
        out
    }
}

/// How to diff.
#[derive(Debug, Clone, Copy)]
pub struct DiffOptions {
    /// The line-diff algorithm.
    pub algorithm: DiffAlgorithm,
    /// How long the line diff of one file may take before it gives up and approximates.
    pub deadline: Duration,
    /// Larger files are not diffed line by line.
    pub max_file_bytes: u64,
}

/// A changed file as the tree diff reports it, before its blobs are read.
#[derive(Debug, Clone)]
pub(crate) struct Changed {
    path: String,
    old_path: Option<String>,
    kind: ChangeKind,
    old: Option<(ObjectId, bool)>,
    new: Option<(ObjectId, bool)>,
}

impl Changed {
    /// The new-side path (the old one for a deletion).
    pub(crate) fn path(&self) -> &str {
        &self.path
    }
}

/// The changed files between two trees (exact renames paired here when `renames` asks for
/// renames, similar ones left to [`pair_renames`]), leaving out directories, submodules and
/// everything under one of `exclude` (path prefixes ending in `/`).
pub(crate) fn changed_files(
    repo: &gix::Repository,
    old_tree: ObjectId,
    new_tree: ObjectId,
    exclude: &[&str],
    renames: Renames,
) -> Result<Vec<Changed>> {
    let git = |e: gix::Error| Error::git("cannot diff the trees", e);
    let old = repo.find_tree(old_tree).map_err(git)?;
    let new = repo.find_tree(new_tree).map_err(git)?;
    // Renames as git finds them by default are paired here (exact ones) and by
    // [`pair_renames`] once the texts are read (similar ones); copies, which gix finds, only
    // when `diff.renames` asks for them.
    let options = match renames {
        Renames::Copies => None,
        _ => Some(gix::diff::Options::default()),
    };
    let changes = repo.diff_tree_to_tree(&old, &new, options).map_err(git)?;
    let excluded = |p: &str| {
        exclude
            .iter()
            .any(|x| p.starts_with(x) || format!("{p}/") == *x)
    };
    let blob = |mode: gix::objs::tree::EntryMode, id: ObjectId| {
        if mode.is_blob() {
            Some((id, true))
        } else if mode.is_link() {
            Some((id, false))
        } else {
            None
        }
    };
    let mut out = Vec::new();
    for change in changes {
        if change.entry_mode().is_tree() {
            continue;
        }
        let item = match change {
            Change::Addition {
                location,
                entry_mode,
                id,
                ..
            } => Changed {
                path: location.to_str_lossy().into_owned(),
                old_path: None,
                kind: ChangeKind::Added,
                old: None,
                new: blob(entry_mode, id),
            },
            Change::Deletion {
                location,
                entry_mode,
                id,
                ..
            } => Changed {
                path: location.to_str_lossy().into_owned(),
                old_path: None,
                kind: ChangeKind::Deleted,
                old: blob(entry_mode, id),
                new: None,
            },
            Change::Modification {
                location,
                previous_entry_mode,
                previous_id,
                entry_mode,
                id,
            } => Changed {
                path: location.to_str_lossy().into_owned(),
                old_path: None,
                kind: ChangeKind::Modified,
                old: blob(previous_entry_mode, previous_id),
                new: blob(entry_mode, id),
            },
            Change::Rewrite {
                source_location,
                source_entry_mode,
                source_id,
                entry_mode,
                id,
                location,
                copy,
                ..
            } => Changed {
                path: location.to_str_lossy().into_owned(),
                old_path: Some(source_location.to_str_lossy().into_owned()),
                kind: if copy {
                    ChangeKind::Copied
                } else {
                    ChangeKind::Renamed
                },
                old: blob(source_entry_mode, source_id),
                new: blob(entry_mode, id),
            },
        };
        if excluded(&item.path) && item.old_path.as_deref().is_none_or(excluded) {
            continue;
        }
        if item.old.is_none() && item.new.is_none() {
            continue;
        }
        out.push(item);
    }
    if renames == Renames::Similar {
        pair_exact_renames(&mut out);
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// How renames are found, from `diff.renames` (git's default: renames, 50% similar).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Renames {
    /// Not at all (`diff.renames = false`).
    Off,
    /// Renames, exact or at least 50% similar (git's default).
    Similar,
    /// Renames and copies (`diff.renames = copies`), by gix's tracker.
    Copies,
}

impl Renames {
    /// The mode `repo`'s configuration asks for.
    pub(crate) fn of(repo: &gix::Repository) -> Renames {
        let config = repo.config_snapshot();
        match config
            .string("diff.renames")
            .map(|v| v.to_str_lossy().to_ascii_lowercase())
        {
            Some(v) if v == "copies" || v == "copy" => Renames::Copies,
            Some(_) if config.boolean("diff.renames") == Some(false) => Renames::Off,
            _ => Renames::Similar,
        }
    }
}

/// Pairs each deleted file with an added file of the same blob (and kind) into a rename, in
/// path order, as git pairs exact renames before it measures similarity.
fn pair_exact_renames(changes: &mut Vec<Changed>) {
    let mut added: std::collections::HashMap<(ObjectId, bool), Vec<usize>> =
        std::collections::HashMap::new();
    for (i, c) in changes.iter().enumerate() {
        if let (ChangeKind::Added, Some(new)) = (c.kind, c.new) {
            added.entry(new).or_default().push(i);
        }
    }
    if added.is_empty() {
        return;
    }
    let mut gone = vec![false; changes.len()];
    for i in 0..changes.len() {
        let c = &changes[i];
        let (ChangeKind::Deleted, Some(old)) = (c.kind, c.old) else {
            continue;
        };
        let Some(to) = added
            .get_mut(&old)
            .and_then(|v| (!v.is_empty()).then(|| v.remove(0)))
        else {
            continue;
        };
        let from = changes[i].path.clone();
        let target = &mut changes[to];
        target.kind = ChangeKind::Renamed;
        target.old_path = Some(from);
        target.old = Some(old);
        gone[i] = true;
    }
    let mut i = 0;
    changes.retain(|_| {
        i += 1;
        !gone[i - 1]
    });
}

/// Pairs deleted and added files whose texts are at least 50% alike into renames, and diffs
/// their lines, as git does by default: a text's similarity to another is the bytes of its
/// chunks (lines, cut at 64 bytes, a `\r` before `\n` left out) that the other has too, over
/// the larger text's bytes; the best-scoring pairs are taken first.
pub(crate) fn pair_renames(files: &mut Vec<FileDiff>, opts: &DiffOptions) {
    let side = |kind: ChangeKind| -> Vec<usize> {
        files
            .iter()
            .enumerate()
            .filter(|(_, f)| f.kind == kind && f.skipped.is_none())
            .map(|(i, _)| i)
            .collect()
    };
    let (deleted, added) = (side(ChangeKind::Deleted), side(ChangeKind::Added));
    if deleted.is_empty() || added.is_empty() {
        return;
    }
    // Sizes too far apart cannot be 50% alike: only files with a partner of a size within
    // that are hashed.
    let old_sizes: Vec<u64> = deleted
        .iter()
        .map(|&i| Chunks::size(&files[i].old_text))
        .collect();
    let new_sizes: Vec<u64> = added
        .iter()
        .map(|&i| Chunks::size(&files[i].new_text))
        .collect();
    let alike = |x: u64, y: u64| x.min(y) * 2 >= x.max(y).max(1);
    let old_chunks: Vec<Option<Chunks>> = deleted
        .iter()
        .zip(&old_sizes)
        .map(|(&i, &x)| {
            new_sizes
                .iter()
                .any(|&y| alike(x, y))
                .then(|| Chunks::of(&files[i].old_text))
        })
        .collect();
    let new_chunks: Vec<Option<Chunks>> = added
        .iter()
        .zip(&new_sizes)
        .map(|(&i, &y)| {
            old_sizes
                .iter()
                .any(|&x| alike(x, y))
                .then(|| Chunks::of(&files[i].new_text))
        })
        .collect();
    let mut pairs: Vec<(u64, usize, usize)> = Vec::new();
    for (&d, x) in deleted.iter().zip(&old_chunks) {
        let Some(x) = x else { continue };
        for (&a, y) in added.iter().zip(&new_chunks) {
            let Some(y) = y else { continue };
            if !alike(x.bytes, y.bytes) {
                continue;
            }
            let larger = x.bytes.max(y.bytes).max(1);
            let score = x.common(y) * 1000 / larger;
            if score >= 500 {
                pairs.push((score, d, a));
            }
        }
    }
    if pairs.is_empty() {
        return;
    }
    pairs.sort_by(|p, q| q.0.cmp(&p.0).then(p.1.cmp(&q.1)).then(p.2.cmp(&q.2)));
    let mut used = vec![false; files.len()];
    let mut renamed = Vec::new();
    for (_, d, a) in pairs {
        if used[d] || used[a] {
            continue;
        }
        used[d] = true;
        used[a] = true;
        let mut file = FileDiff::unread(
            &files[a].path,
            Some(files[d].path.clone()),
            ChangeKind::Renamed,
        );
        file.old_text = std::mem::take(&mut files[d].old_text);
        file.new_text = std::mem::take(&mut files[a].new_text);
        file.diff_lines(opts);
        renamed.push(file);
    }
    let mut i = 0;
    files.retain(|_| {
        i += 1;
        !used[i - 1]
    });
    files.extend(renamed);
    files.sort_by(|a, b| a.path.cmp(&b.path));
}

/// The chunks of a text for rename similarity: their hashes, sorted, with their lengths.
struct Chunks {
    hashes: Vec<(u64, u64)>,
    bytes: u64,
}

impl Chunks {
    /// The bytes a text's chunks hold: its length less the `\r` of each `\r\n`.
    fn size(text: &str) -> u64 {
        (text.len() - memchr::memmem::find_iter(text.as_bytes(), b"\r\n").count()) as u64
    }

    /// A text's chunks: each line (`\r\n` taken as `\n`) cut into pieces of 64 bytes.
    fn of(text: &str) -> Chunks {
        use std::hash::BuildHasher;
        // A collision only makes two texts look more alike.
        let hasher = foldhash::fast::FixedState::default();
        let bytes = text.as_bytes();
        let mut hashes = Vec::with_capacity(bytes.len() / 32 + 1);
        let mut total = 0u64;
        let mut push = |piece: &[u8]| {
            hashes.push((hasher.hash_one(piece), piece.len() as u64));
            total += piece.len() as u64;
        };
        let (mut start, mut lf) = (0, Vec::new());
        let ends = memchr::memchr_iter(b'\n', bytes)
            .chain((bytes.last() != Some(&b'\n') && !bytes.is_empty()).then(|| bytes.len() - 1));
        for end in ends {
            let line = &bytes[start..=end];
            start = end + 1;
            match line.strip_suffix(b"\r\n") {
                // The line as if it ended in `\n` alone.
                Some(body) => {
                    lf.clear();
                    lf.extend_from_slice(body);
                    lf.push(b'\n');
                    lf.chunks(64).for_each(&mut push);
                }
                None => line.chunks(64).for_each(&mut push),
            }
        }
        hashes.sort_unstable();
        Chunks {
            hashes,
            bytes: total,
        }
    }

    /// The bytes of chunks both have (each chunk as often as the rarer side has it).
    fn common(&self, other: &Chunks) -> u64 {
        let (a, b) = (&self.hashes, &other.hashes);
        let (mut i, mut j, mut out) = (0, 0, 0);
        while i < a.len() && j < b.len() {
            match a[i].0.cmp(&b[j].0) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => {
                    out += a[i].1;
                    i += 1;
                    j += 1;
                }
            }
        }
        out
    }
}

/// Reads both sides of `change` (the line diff is left to [`FileDiff::diff_lines`], so that
/// reading, which walks delta chains best on one thread with one cache, and diffing, which
/// runs on every core, can overlap).
pub(crate) fn read_file(
    repo: &gix::Repository,
    change: &Changed,
    opts: &DiffOptions,
) -> Result<FileDiff> {
    let mut file = FileDiff::unread(&change.path, change.old_path.clone(), change.kind);
    let side = |side: Option<(ObjectId, bool)>| -> Result<Side> {
        let Some((id, regular)) = side else {
            return Ok(Side::Absent);
        };
        if !regular {
            return Ok(Side::Skip("a symbolic link".into()));
        }
        let blob = repo
            .find_blob(id)
            .map_err(|e| Error::git(&format!("cannot read {}", change.path), e))?;
        // A copy leaves gix its buffer to decode the next object into (taking it makes gix
        // allocate and fault in a fresh one for every blob).
        let data = blob.data.clone();
        if data.len() as u64 > opts.max_file_bytes {
            return Ok(Side::Skip(format!(
                "too large to review ({} bytes)",
                data.len()
            )));
        }
        if data[..data.len().min(8000)].contains(&0) {
            return Ok(Side::Skip("binary".into()));
        }
        Ok(Side::Text(match String::from_utf8(data) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        }))
    };
    match (side(change.old)?, side(change.new)?) {
        (Side::Skip(why), _) | (_, Side::Skip(why)) => file.skipped = Some(why),
        (old, new) => {
            file.old_text = old.into_text();
            file.new_text = new.into_text();
        }
    }
    Ok(file)
}

impl FileDiff {
    /// A changed file whose texts are not read yet.
    fn unread(path: &str, old_path: Option<String>, kind: ChangeKind) -> FileDiff {
        FileDiff {
            path: path.to_owned(),
            old_path,
            kind,
            old_text: String::new(),
            new_text: String::new(),
            line_starts: Vec::new(),
            added: Vec::new(),
            new: Vec::new(),
            removed_hashes: Vec::new(),
            added_hashes: Vec::new(),
            hunks: Vec::new(),
            old_line_count: 0,
            added_lines: 0,
            removed_lines: 0,
            approximate: false,
            skipped: None,
        }
    }

    /// The line diff of two texts of the file at `path` (for tests and tools that hold the
    /// texts already); an empty `old` makes it an added file.
    pub fn from_texts(path: &str, old: &str, new: &str, opts: &DiffOptions) -> FileDiff {
        let kind = if old.is_empty() {
            ChangeKind::Added
        } else {
            ChangeKind::Modified
        };
        let mut file = FileDiff::unread(path, None, kind);
        file.old_text = old.to_owned();
        file.new_text = new.to_owned();
        file.diff_lines(opts);
        file
    }

    /// Finds the added lines (and counts the removed ones) with the line diff of `opts` (a
    /// Patience diff under its deadline: one that ends after it is marked approximate).
    pub fn diff_lines(&mut self, opts: &DiffOptions) {
        if self.skipped.is_some() {
            return;
        }
        self.line_starts = line_starts(&self.new_text);
        // Lines both sides share at the start and at the end are equal whatever the
        // algorithm; only the middle goes to `similar` (as git's xdiff trims the ends too).
        let (head, tail) = common_ends(&self.old_text, &self.new_text);
        let old_mid = &self.old_text[head..self.old_text.len() - tail];
        let new_mid = &self.new_text[head..self.new_text.len() - tail];
        let shift = self.line_starts.partition_point(|&s| s < head);
        // Lines end at `\n` only, as `line_starts` counts them (`similar`'s own line splitting
        // also ends a line at a lone `\r`, which would put its line numbers out of step).
        let old_lines = lines_of(old_mid);
        let new_lines = lines_of(new_mid);
        self.old_line_count = count_lines(&self.old_text);
        // The changed runs: (old lines, new lines), in order.
        let mut hunks: Vec<(Range<usize>, Range<usize>)> = Vec::new();
        match opts.algorithm {
            // Myers by imara-diff (what gix diffs with): its heuristics bound the cost on any
            // input, as git's xdiff does, so no deadline is needed.
            DiffAlgorithm::Myers => {
                use gix::diff::blob::{Algorithm, Diff, InternedInput};
                let mut input: InternedInput<&str> = InternedInput::default();
                input.update_before(old_lines.iter().copied());
                input.update_after(new_lines.iter().copied());
                let diff = Diff::compute(Algorithm::Myers, &input);
                hunks.extend(diff.hunks().map(|h| {
                    (
                        h.before.start as usize..h.before.end as usize,
                        h.after.start as usize..h.after.end as usize,
                    )
                }));
            }
            DiffAlgorithm::Patience => {
                let deadline = Instant::now() + opts.deadline;
                self.approximate = !patience(&old_lines, &new_lines, deadline, &mut hunks);
            }
        }
        for (old, new) in hunks {
            let new = new.start + shift..new.end + shift;
            self.hunks
                .push((old.start + shift..old.end + shift, new.clone()));
            self.removed_hashes.extend(
                old.clone()
                    .filter_map(|i| old_lines.get(i).and_then(|l| normalised_hash(l))),
            );
            self.removed_lines += old.len();
            if new.is_empty() {
                continue;
            }
            self.added_lines += new.len();
            self.added_hashes.extend(
                new.clone()
                    .map(|i| new_lines.get(i - shift).and_then(|l| normalised_hash(l))),
            );
            match self.added.last_mut() {
                Some(last) if last.end == new.start => last.end = new.end,
                _ => self.added.push(new),
            }
        }
    }
}

/// The changed runs (old lines, new lines), in order, of a Patience diff of `old` and `new`,
/// into `out`, as git's xpatience makes them: the lines each side holds once and in the same
/// order are matched (the longest such sequence), the runs between them are diffed the same
/// way, and a run without such lines is diffed by Myers (imara-diff's, as the Myers
/// algorithm). `false` if `deadline` passed: what was left is one replaced run.
fn patience<'t>(
    old: &[&'t str],
    new: &[&'t str],
    deadline: Instant,
    out: &mut Vec<(Range<usize>, Range<usize>)>,
) -> bool {
    // Lines as numbers: equal lines, equal numbers.
    let mut ids: std::collections::HashMap<&'t str, u32, foldhash::fast::RandomState> =
        std::collections::HashMap::with_capacity_and_hasher(old.len(), Default::default());
    let mut intern = |l: &'t str| {
        let next = ids.len() as u32;
        *ids.entry(l).or_insert(next)
    };
    let a: Vec<u32> = old.iter().map(|&l| intern(l)).collect();
    let b: Vec<u32> = new.iter().map(|&l| intern(l)).collect();
    let mut exact = true;
    patience_run(&a, &b, 0, 0, deadline, &mut exact, out);
    exact
}

fn patience_run(
    a: &[u32],
    b: &[u32],
    at_a: usize,
    at_b: usize,
    deadline: Instant,
    exact: &mut bool,
    out: &mut Vec<(Range<usize>, Range<usize>)>,
) {
    let head = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let (a, b) = (&a[head..], &b[head..]);
    let tail = a
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (a, b) = (&a[..a.len() - tail], &b[..b.len() - tail]);
    let (at_a, at_b) = (at_a + head, at_b + head);
    if a.is_empty() && b.is_empty() {
        return;
    }
    if a.is_empty() || b.is_empty() || Instant::now() > deadline {
        *exact &= a.is_empty() || b.is_empty();
        out.push((at_a..at_a + a.len(), at_b..at_b + b.len()));
        return;
    }
    // The lines found once on each side: (where in `a`, where in `b`), in `a`'s order.
    let mut count: std::collections::HashMap<
        u32,
        (u32, usize, u32, usize),
        foldhash::fast::RandomState,
    > = std::collections::HashMap::with_capacity_and_hasher(a.len(), Default::default());
    for (i, &t) in a.iter().enumerate() {
        let e = count.entry(t).or_insert((0, i, 0, 0));
        e.0 += 1;
    }
    for (j, &t) in b.iter().enumerate() {
        if let Some(e) = count.get_mut(&t) {
            e.2 += 1;
            e.3 = j;
        }
    }
    let unique: Vec<(usize, usize)> = a
        .iter()
        .enumerate()
        .filter_map(|(i, t)| {
            let &(ca, ia, cb, jb) = count.get(t)?;
            (ca == 1 && cb == 1 && ia == i).then_some((i, jb))
        })
        .collect();
    if unique.is_empty() {
        use gix::diff::blob::{Algorithm, Diff, InternedInput};
        let mut input: InternedInput<u32> = InternedInput::default();
        input.update_before(a.iter().copied());
        input.update_after(b.iter().copied());
        let diff = Diff::compute(Algorithm::Myers, &input);
        out.extend(diff.hunks().map(|h| {
            (
                at_a + h.before.start as usize..at_a + h.before.end as usize,
                at_b + h.after.start as usize..at_b + h.after.end as usize,
            )
        }));
        return;
    }
    // The longest run of them in `b`'s order too (patience sorting: each pile's top, and for
    // each line the top of the pile before it when it was laid).
    let mut tops: Vec<usize> = Vec::new();
    let mut before: Vec<Option<usize>> = vec![None; unique.len()];
    for (k, &(_, j)) in unique.iter().enumerate() {
        let pile = tops.partition_point(|&t| unique[t].1 < j);
        before[k] = pile.checked_sub(1).map(|p| tops[p]);
        if pile == tops.len() {
            tops.push(k);
        } else {
            tops[pile] = k;
        }
    }
    let mut chain = Vec::with_capacity(tops.len());
    let mut at = tops.last().copied();
    while let Some(k) = at {
        chain.push(unique[k]);
        at = before[k];
    }
    chain.reverse();
    let (mut from_a, mut from_b) = (0, 0);
    for (i, j) in chain {
        patience_run(
            &a[from_a..i],
            &b[from_b..j],
            at_a + from_a,
            at_b + from_b,
            deadline,
            exact,
            out,
        );
        (from_a, from_b) = (i + 1, j + 1);
    }
    patience_run(
        &a[from_a..],
        &b[from_b..],
        at_a + from_a,
        at_b + from_b,
        deadline,
        exact,
        out,
    );
}

enum Side {
    Absent,
    Skip(String),
    Text(String),
}

impl Side {
    fn into_text(self) -> String {
        match self {
            Side::Text(t) => t,
            _ => String::new(),
        }
    }
}

/// The lengths in bytes of the longest common prefix and suffix of `a` and `b` made of whole
/// lines, not overlapping.
fn common_ends(a: &str, b: &str) -> (usize, usize) {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let same = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    // Back up to the end of the last whole line both share.
    let head = if same == a.len() && same == b.len() {
        same
    } else {
        a[..same]
            .iter()
            .rposition(|&c| c == b'\n')
            .map_or(0, |i| i + 1)
    };
    let max_tail = (a.len() - head).min(b.len() - head);
    let same = a
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take(max_tail)
        .take_while(|(x, y)| x == y)
        .count();
    // The suffix must start at a line start on both sides.
    let line_start = |s: &[u8], from_end: usize| {
        let at = s.len() - from_end;
        at == head || s[at - 1] == b'\n'
    };
    let mut tail = same;
    while tail > 0 && !(line_start(a, tail) && line_start(b, tail)) {
        tail -= 1;
    }
    (head, tail)
}

/// The hash of `line` with its whitespace normalised (trimmed, inner runs as one space);
/// `None` for a blank line.
pub(crate) fn normalised_hash(line: &str) -> Option<u64> {
    use std::hash::{BuildHasher, Hash, Hasher};
    let mut h = foldhash::fast::FixedState::default().build_hasher();
    let mut any = false;
    for word in line.split_ascii_whitespace() {
        if any {
            h.write_u8(b' ');
        }
        word.hash(&mut h);
        any = true;
    }
    any.then(|| h.finish())
}

/// The hashes of lines a change removed ([`normalised_hash`]).
pub(crate) type Moved = std::collections::HashSet<u64, foldhash::fast::RandomState>;

/// Whether any of the ordered, disjoint `runs` overlaps `range`.
fn overlaps(runs: &[Range<usize>], range: &Range<usize>) -> bool {
    let at = runs.partition_point(|r| r.end <= range.start);
    runs.get(at).is_some_and(|r| r.start < range.end)
}

/// The lines of `text`, each with its `\n` (the last one may have none): what
/// `split_inclusive('\n')` gives, found a word at a time.
fn lines_of(text: &str) -> Vec<&str> {
    let mut out = Vec::with_capacity(text.len() / 32);
    let mut start = 0;
    for end in memchr::memchr_iter(b'\n', text.as_bytes()) {
        out.push(&text[start..=end]);
        start = end + 1;
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

/// The number of lines of `text`.
fn count_lines(text: &str) -> usize {
    let breaks = memchr::memchr_iter(b'\n', text.as_bytes()).count();
    breaks + usize::from(!text.is_empty() && !text.ends_with('\n'))
}

/// Byte offsets where the lines of `text` start (none for an empty text).
fn line_starts(text: &str) -> Vec<usize> {
    if text.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::with_capacity(text.len() / 32 + 1);
    out.push(0);
    out.extend(
        text.bytes()
            .enumerate()
            .filter(|(i, b)| *b == b'\n' && i + 1 < text.len())
            .map(|(i, _)| i + 1),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::Chunks;
    use std::ops::Range;

    /// Whether `hunks` turn `old` into `new`: in order, and the lines between them equal.
    fn turns_into(old: &[&str], new: &[&str], hunks: &[(Range<usize>, Range<usize>)]) -> bool {
        let (mut i, mut j) = (0, 0);
        for (o, n) in hunks {
            if o.start < i || n.start < j || o.start - i != n.start - j {
                return false;
            }
            if old[i..o.start] != new[j..n.start] {
                return false;
            }
            (i, j) = (o.end, n.end);
        }
        old.len() - i == new.len() - j && old[i..] == new[j..]
    }

    #[test]
    fn patience_matches_unique_lines_and_turns_old_into_new() {
        use std::time::{Duration, Instant};
        let later = Instant::now() + Duration::from_secs(60);
        // A function added above another: Myers may match the first one's closing brace with
        // the second's; the unique lines hold the old function in place.
        let old = ["fn b() {", "    two();", "}"];
        let new = [
            "fn a() {",
            "    one();",
            "}",
            "",
            "fn b() {",
            "    two();",
            "}",
        ];
        let mut hunks = Vec::new();
        assert!(super::patience(&old, &new, later, &mut hunks));
        assert_eq!(hunks, vec![(0..0, 0..4)]);
        // A line found once on each side holds, where Myers keeps the longer run of repeats.
        let mut hunks = Vec::new();
        assert!(super::patience(
            &["u", "c", "c"],
            &["c", "c", "u"],
            later,
            &mut hunks
        ));
        assert_eq!(hunks, vec![(0..0, 0..2), (1..3, 3..3)]);
        // Pseudo-random texts over a few distinct lines (many repeats: Myers runs inside).
        let mut seed = 7u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as usize
        };
        let words = [
            "a", "b", "c", "d", "}", "", "x1", "x2", "x3", "x4", "x5", "x6",
        ];
        for _ in 0..300 {
            let old: Vec<&str> = (0..next() % 40)
                .map(|_| words[next() % words.len()])
                .collect();
            let new: Vec<&str> = (0..next() % 40)
                .map(|_| words[next() % words.len()])
                .collect();
            let mut hunks = Vec::new();
            assert!(super::patience(&old, &new, later, &mut hunks));
            assert!(
                turns_into(&old, &new, &hunks),
                "{old:?} -> {new:?}: {hunks:?}"
            );
        }
        // Past the deadline, what is left is one replaced run.
        let mut hunks = Vec::new();
        let past = Instant::now() - Duration::from_millis(1);
        assert!(!super::patience(
            &["a", "b"],
            &["c", "b", "d"],
            past,
            &mut hunks
        ));
        assert_eq!(hunks, vec![(0..2, 0..3)]);
    }

    #[test]
    fn lines_are_split_as_split_inclusive_splits_them() {
        for text in ["", "\n", "a", "a\n", "a\nb", "a\r\nb\n\n", "\n\nx\ry\n"] {
            let want: Vec<&str> = text.split_inclusive('\n').collect();
            assert_eq!(super::lines_of(text), want, "{text:?}");
            assert_eq!(super::count_lines(text), want.len(), "{text:?}");
        }
    }

    /// The chunks as the rule says, byte by byte: a piece ends after a `\n` or at 64 bytes;
    /// the `\r` of a `\r\n` is not part of it.
    fn pieces(text: &str) -> Vec<Vec<u8>> {
        let bytes = text.as_bytes();
        let (mut out, mut piece) = (Vec::new(), Vec::new());
        for (i, &b) in bytes.iter().enumerate() {
            if b == b'\r' && bytes.get(i + 1) == Some(&b'\n') {
                continue;
            }
            piece.push(b);
            if b == b'\n' || piece.len() == 64 {
                out.push(std::mem::take(&mut piece));
            }
        }
        if !piece.is_empty() {
            out.push(piece);
        }
        out
    }

    #[test]
    fn an_old_line_is_found_through_the_hunks_and_an_added_one_has_none() {
        use super::{DiffAlgorithm, DiffOptions, FileDiff};
        let opts = DiffOptions {
            algorithm: DiffAlgorithm::Myers,
            deadline: std::time::Duration::from_secs(5),
            max_file_bytes: 1 << 20,
        };
        let old = "a\nb\nc\nd\ne\n";
        // b removed, x and y added after c, e changed to z.
        let new = "a\nc\nx\ny\nd\nz\n";
        let file = FileDiff::from_texts("f.txt", old, new, &opts);
        let got: Vec<Option<usize>> = (0..6).map(|l| file.old_line(l)).collect();
        assert_eq!(got, [Some(0), Some(2), None, None, Some(3), None]);
        let same = FileDiff::from_texts("f.txt", old, old, &opts);
        assert_eq!(same.old_line(4), Some(4));
    }

    #[test]
    fn chunks_are_lines_cut_at_64_bytes_with_crlf_as_lf() {
        use std::hash::BuildHasher;
        let long = "x".repeat(64);
        let longer = "y".repeat(130);
        let texts = [
            String::new(),
            "a\nb\n".into(),
            "no newline at the end".into(),
            "a\r\nb\r\n\r\n".into(),
            format!("{long}\n{long}\r\n{longer}\n{longer}\r\nlast\r"),
            "lone \r inside\r\r\nend".into(),
        ];
        let hasher = foldhash::fast::FixedState::default();
        for text in &texts {
            let want = pieces(text);
            let mut hashes: Vec<(u64, u64)> = want
                .iter()
                .map(|p| (hasher.hash_one(p.as_slice()), p.len() as u64))
                .collect();
            hashes.sort_unstable();
            let got = Chunks::of(text);
            assert_eq!(got.hashes, hashes, "{text:?}");
            assert_eq!(got.bytes, Chunks::size(text), "{text:?}");
            assert_eq!(got.bytes, want.iter().map(|p| p.len() as u64).sum::<u64>());
        }
    }
}
