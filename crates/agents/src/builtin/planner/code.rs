//! What the planner knows about the code: its layout (dominant language, main source
//! directory, test directories, packages), which files match a work item's keywords, which
//! module a path belongs to and where a new file goes.
//!
//! Matching is by words. Every keyword of every work item goes into one index; each readable
//! file is read once and its words counted against the index. A file then scores per item:
//! a keyword in its file name weighs most, one in its directories less, and one in its
//! contents less again, with repeated mentions adding up to a cap so that a file touching
//! many of an item's keywords beats one repeating a single keyword.
//!
//! Languages, the files never read, tests and source roots are the builtin agent's one rule
//! (`builtin::code`); the planner's own tables (what else counts as code, docs, manifests,
//! entry files, the signal scan's patterns) are data: `planner-code.toml`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::LazyLock;

use super::spec::Discovery;
use super::text;
use crate::CodeTree;
use crate::builtin::code::{
    CODE, Lang, Naming, NewFiles, ancestors, extension, is_test_path, is_unread,
};
/// The path helpers, the builtin agent's.
pub(super) use crate::builtin::code::{file_name, parent};
use crate::builtin::words::{self, has};

/// Files larger than this are matched by path only.
const MAX_READ_SIZE: u64 = 256 * 1024;
/// At most this many files are read.
const MAX_READS: usize = 2000;
/// Points for a keyword in the file name, its directories, as the same word or a prefix.
const STEM_SAME: u32 = 12;
const STEM_PREFIX: u32 = 6;
const DIR_SAME: u32 = 8;
const DIR_PREFIX: u32 = 4;
/// Points added to a matching file that the exploration cache lists as relevant.
pub(super) const CACHE_BONUS: u32 = 8;

/// The planner's code tables, from `specs/templates/builtin/planner-code.toml`; each list is
/// described there.
#[derive(Debug, serde::Deserialize)]
pub(super) struct Tables {
    code_like: Vec<String>,
    docs: Vec<String>,
    manifests: Vec<String>,
    entry_files: Vec<String>,
    /// The signal scan's patterns.
    pub signals: Patterns,
}

/// The line patterns of the signal scan, described in `planner-code.toml`.
#[derive(Debug, serde::Deserialize)]
pub(super) struct Patterns {
    /// Starts of a line that opens a loop.
    pub loops: Vec<String>,
    /// Calls that loop anywhere in a line.
    pub loop_calls: Vec<String>,
    /// Modifiers dropped, in order, before looking for a function.
    pub modifiers: Vec<String>,
    /// Starts of a line that opens a function.
    pub functions: Vec<String>,
    /// Starts of a comment line.
    pub comments: Vec<String>,
    /// Starts of a public item's line in a Rust `lib.rs` or `mod.rs`.
    pub rust_public: Vec<String>,
    /// Starts of a top-level definition in a Python package's `__init__.py`.
    pub python_public: Vec<String>,
}

/// The code tables, parsed once.
pub(super) static TABLES: LazyLock<Tables> =
    LazyLock::new(|| crate::builtin::template::data(builtin!("planner-code.toml")));

/// The language of `path`, if it is one the planner names new files in.
fn lang_of(path: &str) -> Option<&'static Lang> {
    crate::builtin::code::language(path).filter(|l| l.new_files.is_some())
}

/// What a file is, for weighing its matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Kind {
    /// Code.
    Source,
    /// Tests.
    Test,
    /// Configuration and everything else.
    Other,
    /// Documentation.
    Doc,
}

/// Where things are in the repository.
#[derive(Debug)]
pub(super) struct Layout {
    /// The language most of the code is in.
    pub lang: Option<&'static Lang>,
    /// Where new source files go (`""` for the root).
    pub main_dir: String,
    /// Test directories.
    pub test_dirs: Vec<String>,
    /// Directories a module is one level below, longest first.
    roots: Vec<String>,
    /// Directories (other than the root) with their own package manifest.
    packages: BTreeSet<String>,
}

impl Layout {
    fn infer(tree: &CodeTree, discovery: &Discovery) -> Layout {
        let files: Vec<(&str, u64)> = tree
            .files()
            .iter()
            .filter(|f| !is_unread(&f.path))
            .map(|f| (f.path.as_str(), f.size))
            .collect();
        let dirs: BTreeSet<&str> = files.iter().flat_map(|(p, _)| ancestors(p)).collect();
        let t = &*TABLES;
        let langs = &CODE.language;
        let mut test_dirs: Vec<String> = discovery.test_dirs.clone();
        if test_dirs.is_empty() {
            test_dirs = CODE.test_dirs.clone();
            test_dirs.retain(|d| dirs.contains(d.as_str()));
        }
        let is_test = |p: &str| test_path(p, &test_dirs);
        let from_discovery = discovery.languages.iter().find_map(|name| {
            let name = name.to_ascii_lowercase();
            langs.iter().find(|l| {
                l.new_files
                    .as_ref()
                    .is_some_and(|n| has(&n.aliases, &name) || l.name.eq_ignore_ascii_case(&name))
            })
        });
        // Else the language with most bytes outside tests, the first in the table on a tie.
        let lang = from_discovery.or_else(|| {
            let mut bytes = vec![0u64; langs.len()];
            for (p, size) in files.iter().filter(|(p, _)| !is_test(p)) {
                if let Some(i) = lang_of(p).and_then(|l| langs.iter().position(|x| x == l)) {
                    bytes[i] += (*size).max(1);
                }
            }
            let present = langs.iter().zip(bytes).rev().filter(|(_, b)| *b > 0);
            present.max_by_key(|(_, b)| *b).map(|(l, _)| l)
        });
        let main_dir = discovery
            .source_dirs
            .first()
            .cloned()
            .unwrap_or_else(|| infer_main_dir(&files, lang, &is_test));
        let mut roots: Vec<String> = discovery.source_dirs.clone();
        roots.extend(
            dirs.iter()
                .filter(|d| has(&CODE.source_roots, file_name(d)))
                .map(|d| (*d).to_owned()),
        );
        if !main_dir.is_empty() {
            roots.push(main_dir.clone());
        }
        roots.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
        roots.dedup();
        let packages = files
            .iter()
            .filter(|(p, _)| {
                let name = file_name(p);
                has(&t.manifests, name) || name.ends_with(".csproj") || name.ends_with(".gemspec")
            })
            .map(|(p, _)| parent(p))
            .filter(|d| !d.is_empty())
            .map(str::to_owned)
            .collect();
        Layout {
            lang,
            main_dir,
            test_dirs,
            roots,
            packages,
        }
    }

    /// How new files of the main language are named.
    fn new_files(&self) -> Option<&'static NewFiles> {
        self.lang?.new_files.as_ref()
    }

    /// Whether `path` is a test file.
    pub(super) fn is_test(&self, path: &str) -> bool {
        test_path(path, &self.test_dirs)
    }

    /// The module of `path`: the package (a directory with its own manifest) holding it, else
    /// the directory one level below a source root, else its top-level directory; `.` for
    /// files at the root.
    pub(super) fn module_of(&self, path: &str) -> String {
        if let Some(pkg) = ancestors(path).find(|d| self.packages.contains(*d)) {
            return pkg.to_owned();
        }
        for root in &self.roots {
            if let Some(rest) = path.strip_prefix(&format!("{root}/")) {
                return match rest.split_once('/') {
                    Some((dir, _)) => format!("{root}/{dir}"),
                    None => root.clone(),
                };
            }
        }
        match path.split_once('/') {
            Some((top, _)) => top.to_owned(),
            None => ".".to_owned(),
        }
    }

    /// Where a new source file for `words` goes.
    pub(super) fn new_file(&self, words: &[String]) -> String {
        let (stem, ext) = match self.new_files() {
            Some(new) => (text::file_stem(words, new.naming), new.ext.as_str()),
            None => (text::file_stem(words, Naming::Kebab), "md"),
        };
        join(&self.main_dir, &format!("{stem}.{ext}"))
    }

    /// Where a new test for `words` goes, next to `source` where the language keeps tests
    /// beside the code.
    pub(super) fn new_test(&self, words: &[String], source: &str) -> String {
        let dir = self.test_dirs.first().map_or("tests", String::as_str);
        let Some(lang) = self.new_files() else {
            return join(
                dir,
                &format!("{}.md", text::file_stem(words, Naming::Kebab)),
            );
        };
        let stem = text::file_stem(words, lang.naming);
        let source_stem = file_name(source).split('.').next().unwrap_or("change");
        match lang.ext.as_str() {
            "go" => join(parent(source), &format!("{source_stem}_test.go")),
            "ts" | "js" if self.test_dirs.is_empty() => {
                join(parent(source), &format!("{source_stem}.test.{}", lang.ext))
            }
            "py" => join(dir, &format!("test_{stem}.py")),
            _ if lang.naming == Naming::Pascal => join(dir, &format!("{stem}Test.{}", lang.ext)),
            ext => join(dir, &format!("{stem}.{ext}")),
        }
    }
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_owned()
    } else {
        format!("{dir}/{name}")
    }
}

/// Whether `path` is a test: under one of `test_dirs`, or one by the builtin agent's rule.
fn test_path(path: &str, test_dirs: &[String]) -> bool {
    test_dirs.iter().any(|d| path.starts_with(&format!("{d}/"))) || is_test_path(path)
}

/// The main source directory: the shallowest directory named like a source root that holds
/// files of the main language (the one with most of them on a tie), else the top-level
/// directory with most of them, else the root.
fn infer_main_dir(
    files: &[(&str, u64)],
    lang: Option<&'static Lang>,
    is_test: &dyn Fn(&str) -> bool,
) -> String {
    let relevant: Vec<&str> = files
        .iter()
        .map(|(p, _)| *p)
        .filter(|p| !is_test(p) && (lang.is_none() || lang_of(p) == lang))
        .collect();
    let roots: BTreeSet<&str> = relevant.iter().flat_map(|p| ancestors(p)).collect();
    let roots = roots
        .into_iter()
        .filter(|d| has(&CODE.source_roots, file_name(d)));
    let shallowest = roots
        .map(|root| {
            let count = relevant
                .iter()
                .filter(|p| p.starts_with(&format!("{root}/")))
                .count();
            (root.split('/').count(), std::cmp::Reverse(count), root)
        })
        .min();
    if let Some((_, _, dir)) = shallowest {
        return dir.to_owned();
    }
    let mut tops: BTreeMap<&str, usize> = BTreeMap::new();
    for p in &relevant {
        if let Some((top, _)) = p.split_once('/') {
            *tops.entry(top).or_default() += 1;
        }
    }
    let at_root = relevant.iter().filter(|p| !p.contains('/')).count();
    match tops
        .into_iter()
        .max_by_key(|&(top, n)| (n, std::cmp::Reverse(top)))
    {
        Some((top, n)) if n > at_root => top.to_owned(),
        _ => String::new(),
    }
}

/// Every keyword of the plan, looked up by the words of the code.
#[derive(Default)]
struct Index {
    words: Vec<String>,
    same: HashMap<String, usize>,
    /// Beginnings (four letters or more) of longer keywords.
    starts: HashMap<String, Vec<usize>>,
}

impl Index {
    fn new(keywords: &[String]) -> Index {
        let mut index = Index::default();
        for k in keywords {
            if index.same.contains_key(k) {
                continue;
            }
            let i = index.words.len();
            index.words.push(k.clone());
            index.same.insert(k.clone(), i);
            for (at, _) in k.char_indices().skip(4) {
                index.starts.entry(k[..at].to_owned()).or_default().push(i);
            }
        }
        index
    }

    /// Counts `word` into `hits`, (times as the same word, times as a prefix) by keyword.
    fn count(&self, word: &str, hits: &mut [(u32, u32)]) {
        if let Some(&i) = self.same.get(word) {
            hits[i].0 += 1;
        }
        for &i in self.starts.get(word).into_iter().flatten() {
            hits[i].1 += 1;
        }
        for (at, _) in word.char_indices().skip(4) {
            if let Some(&i) = self.same.get(&word[..at]) {
                hits[i].1 += 1;
            }
        }
    }
}

/// One file considered for the plan.
struct Entry {
    path: String,
    kind: Kind,
    stem_words: Vec<String>,
    dir_words: Vec<String>,
    /// (times as the same word, times as a prefix) by keyword; empty when not read.
    hits: Vec<(u32, u32)>,
}

/// A file that matches a work item.
#[derive(Debug, Clone)]
pub(super) struct Match {
    /// Its path.
    pub path: String,
    /// How well it matches.
    pub score: u32,
    /// The keywords it matches.
    pub words: Vec<String>,
}

/// The code, scanned for the plan's keywords.
pub(super) struct Code<'a> {
    /// The tree, for reading files again.
    pub tree: &'a CodeTree,
    /// Where things are.
    pub layout: Layout,
    index: Index,
    entries: Vec<Entry>,
    /// How many files were read.
    pub read: usize,
}

impl<'a> Code<'a> {
    /// Scans `tree` for `keywords`.
    pub(super) fn scan(tree: &'a CodeTree, discovery: &Discovery, keywords: &[String]) -> Code<'a> {
        let layout = Layout::infer(tree, discovery);
        let index = Index::new(keywords);
        let mut candidates: Vec<(Kind, &crate::CodeFile)> = tree
            .files()
            .iter()
            .filter(|f| !is_unread(&f.path))
            .map(|f| (kind(&f.path, &layout), f))
            .collect();
        // Read code before tests before the rest, so the read budget goes to code first.
        candidates.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.path.cmp(&b.1.path)));
        let mut read = 0;
        let mut entries = Vec::with_capacity(candidates.len());
        for (kind, file) in candidates {
            let mut hits = Vec::new();
            if file.size <= MAX_READ_SIZE
                && read < MAX_READS
                && let Ok(bytes) = tree.read(file)
            {
                read += 1;
                if !bytes[..bytes.len().min(8000)].contains(&0) {
                    hits = vec![(0, 0); index.words.len()];
                    words::for_each_camel_word(&String::from_utf8_lossy(&bytes), |w| {
                        index.count(w, &mut hits);
                    });
                }
            }
            let name = file_name(&file.path);
            let stem = name.split('.').next().unwrap_or(name);
            entries.push(Entry {
                stem_words: words::camel_words(stem),
                dir_words: words::camel_words(parent(&file.path)),
                path: file.path.clone(),
                kind,
                hits,
            });
        }
        entries.sort_by(|a, b| a.path.cmp(&b.path));
        Code {
            tree,
            layout,
            index,
            entries,
            read,
        }
    }

    /// Whether the tree has a file at `path`.
    pub(super) fn exists(&self, path: &str) -> bool {
        self.tree.find(path).is_some()
    }

    /// How many files were considered.
    pub(super) fn considered(&self) -> usize {
        self.entries.len()
    }

    /// Files matching `keywords`, best first (ties by path). Files in `cached` get
    /// [`CACHE_BONUS`] when they match at all.
    pub(super) fn matches(&self, keywords: &[String], cached: &BTreeSet<String>) -> Vec<Match> {
        let ids: Vec<usize> = keywords
            .iter()
            .filter_map(|k| self.index.same.get(k).copied())
            .collect();
        let mut out = Vec::new();
        for e in &self.entries {
            let mut score = 0;
            let mut words = Vec::new();
            for &k in &ids {
                let word = &self.index.words[k];
                let points = path_points(word, &e.stem_words, &e.dir_words)
                    + match e.hits.get(k) {
                        Some(&(same, _)) if same > 0 => 3 + same.min(5),
                        Some(&(_, prefix)) if prefix > 0 => 1 + prefix.min(4) / 2,
                        _ => 0,
                    };
                if points > 0 {
                    score += points;
                    words.push(word.clone());
                }
            }
            if matches!(e.kind, Kind::Doc | Kind::Other) {
                score /= 2;
            }
            if score == 0 {
                continue;
            }
            if cached.contains(&e.path) {
                score += CACHE_BONUS;
            }
            out.push(Match {
                path: e.path.clone(),
                score,
                words,
            });
        }
        out.sort_by(|a, b| b.score.cmp(&a.score).then(a.path.cmp(&b.path)));
        out
    }

    /// The file that declares the modules of `dir` (`mod.rs`, `lib.rs`, `__init__.py`,
    /// `index.ts`, or `dir.rs` beside it), if there is one.
    pub(super) fn entry_file(&self, dir: &str) -> Option<String> {
        TABLES
            .entry_files
            .iter()
            .map(|name| join(dir, name))
            .chain((!dir.is_empty()).then(|| format!("{dir}.rs")))
            .find(|p| self.exists(p))
    }
}

fn kind(path: &str, layout: &Layout) -> Kind {
    let ext = extension(path);
    if layout.is_test(path) {
        Kind::Test
    } else if lang_of(path).is_some() || has(&TABLES.code_like, &ext) {
        Kind::Source
    } else if has(&TABLES.docs, &ext) {
        Kind::Doc
    } else {
        Kind::Other
    }
}

/// Points for `keyword` in a path: the best of its relation to the file name's words and to
/// the directories' words.
fn path_points(keyword: &str, stem: &[String], dirs: &[String]) -> u32 {
    best(keyword, stem, STEM_SAME, STEM_PREFIX).max(best(keyword, dirs, DIR_SAME, DIR_PREFIX))
}

/// The points of the word of `words` best related to `keyword`: `same` for the same word,
/// `prefix` when one is the other's start (`token`/`tokens`, `auth`/`authentication`), the
/// shorter having at least four letters.
fn best(keyword: &str, words: &[String], same: u32, prefix: u32) -> u32 {
    let points = |w: &String| {
        let (short, long) = if keyword.len() < w.len() {
            (keyword, w.as_str())
        } else {
            (w.as_str(), keyword)
        };
        if w == keyword {
            same
        } else if short.chars().count() >= 4 && long.starts_with(short) {
            prefix
        } else {
            0
        }
    };
    words.iter().map(points).max().unwrap_or(0)
}
