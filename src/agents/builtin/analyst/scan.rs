//! The inventory of the code tree: which files count, their language, which are tests, and
//! the bounded read of their contents.
//!
//! Vendored, installed and generated files are left out of everything; lock files and
//! minified bundles are counted but never read. Reading is capped (files under 256 KiB, at
//! most 3000 of them, manifests first, then source, then other text, each in path order),
//! so the scan costs the same on every run and the result does not depend on timing.

use std::sync::LazyLock;

use regex::Regex;
use serde::Deserialize;

use crate::agents::{CodeFile, CodeTree};
use crate::error::Result;

use super::manifest;

/// Files larger than this are counted but not read.
pub const MAX_READ_BYTES: u64 = 256 * 1024;
/// At most this many files are read.
pub const MAX_READ_FILES: usize = 3000;

/// The file tables of `analyst-files.toml`; see the file for what each is.
#[derive(Debug, Deserialize)]
pub struct Files {
    ignored_dirs: Vec<String>,
    generated_suffixes: Vec<String>,
    lock_files: Vec<String>,
    text_exts: Vec<String>,
    text_names: Vec<String>,
    test_dirs: Vec<String>,
    test_name: String,
    aux_dirs: Vec<String>,
    pub doc_dirs: Vec<String>,
    pub source_roots: Vec<String>,
    pub ci_files: Vec<String>,
    pub ci_prefixes: Vec<String>,
    pub definitions: Vec<String>,
    pub doc_exts: Vec<String>,
    pub python_starts: Vec<String>,
    pub js_starts: Vec<String>,
}

/// The file tables, read once.
pub static FILES: LazyLock<Files> = LazyLock::new(|| super::data(builtin!("analyst-files.toml")));

/// File names of tests: `FILES.test_name`, compiled once.
pub static TEST_NAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&FILES.test_name).expect("a unit test compiles the builtin test-name pattern")
});

/// A language, as counted by the scan: one entry of `analyst-languages.toml`.
#[derive(Debug, PartialEq, Eq, Deserialize)]
pub struct Lang {
    /// Display name.
    pub name: String,
    /// Lower-case extensions of its files.
    #[serde(default)]
    extensions: Vec<String>,
    /// File names that give the language whatever the extension (`Dockerfile`).
    #[serde(default)]
    names: Vec<String>,
    /// Whether its files are code that tests are expected to cover (not markup, not build
    /// or deployment scripts).
    pub testable: bool,
}

/// The languages, read once.
pub static LANGS: LazyLock<Vec<Lang>> =
    LazyLock::new(|| super::list(builtin!("analyst-languages.toml")));

/// Whether `list` holds `item`.
pub fn listed(list: &[String], item: &str) -> bool {
    list.iter().any(|l| l == item)
}

/// One file that counts.
#[derive(Debug)]
pub struct Entry<'a> {
    /// The file.
    pub file: &'a CodeFile,
    /// Its language, if it is source.
    pub lang: Option<&'static Lang>,
    /// Whether it is a test: source code with a test name or in a test directory.
    pub test: bool,
    /// Its manifest kind, if it is one.
    pub manifest: Option<&'static manifest::Kind>,
}

impl Entry<'_> {
    /// The path.
    pub fn path(&self) -> &str {
        &self.file.path
    }

    /// The file name.
    pub fn name(&self) -> &str {
        file_name(&self.file.path)
    }

    /// The extension, lower-case, or `""`.
    pub fn ext(&self) -> String {
        extension(self.name())
    }

    /// Whether it is source code the product is made of: testable, not a test, not an
    /// example, benchmark or script.
    pub fn is_product_source(&self) -> bool {
        self.lang.is_some_and(|l| l.testable)
            && !self.test
            && !dirs(self.path()).any(|d| listed(&FILES.aux_dirs, d))
    }

    /// Whether it is worth reading as text.
    fn readable(&self) -> bool {
        let name = self.name();
        !listed(&FILES.lock_files, name)
            && (self.lang.is_some()
                || self.manifest.is_some()
                || listed(&FILES.text_names, name)
                || listed(&FILES.text_exts, &self.ext()))
    }
}

/// The files that count, and how many were left out.
#[derive(Debug)]
pub struct Inventory<'a> {
    /// Files outside vendored and generated directories, in path order.
    pub entries: Vec<Entry<'a>>,
    /// Files left out.
    pub ignored: usize,
}

impl Inventory<'_> {
    /// Whether a file exists at `path`.
    pub fn contains(&self, path: &str) -> bool {
        self.entries
            .binary_search_by(|e| e.path().cmp(path))
            .is_ok()
    }
}

/// Classifies every file of `code`.
pub fn inventory(code: &CodeTree) -> Inventory<'_> {
    let mut entries = Vec::new();
    let mut ignored = 0;
    for file in code.files() {
        let path = file.path.as_str();
        let name = file_name(path);
        let generated = FILES
            .generated_suffixes
            .iter()
            .any(|s| name.ends_with(s.as_str()));
        if generated || dirs(path).any(|d| listed(&FILES.ignored_dirs, d)) {
            ignored += 1;
            continue;
        }
        let lang = language(name);
        entries.push(Entry {
            file,
            lang,
            // Only code is a test: documents and fixtures under tests/ are not.
            test: lang.is_some() && is_test_path(path),
            manifest: manifest::kind_of(path),
        });
    }
    Inventory { entries, ignored }
}

/// Reads the readable files of `inv` within the caps and hands each one's text to `visit`.
/// Returns how many were read.
pub fn read_each(
    code: &CodeTree,
    inv: &Inventory<'_>,
    mut visit: impl FnMut(&Entry<'_>, &str),
) -> Result<usize> {
    let mut order: Vec<&Entry<'_>> = inv
        .entries
        .iter()
        .filter(|e| e.file.size <= MAX_READ_BYTES && e.readable())
        .collect();
    // Manifests, then source, then the rest; a stable sort keeps path order within each.
    order.sort_by_key(|e| (e.manifest.is_none(), e.lang.is_none()));
    let mut read = 0;
    for entry in order.into_iter().take(MAX_READ_FILES) {
        let bytes = code.read(entry.file)?;
        if bytes.iter().take(8000).any(|b| *b == 0) {
            continue;
        }
        visit(entry, &String::from_utf8_lossy(&bytes));
        read += 1;
    }
    Ok(read)
}

/// The language of a file called `name`: by its name, else by its extension.
pub fn language(name: &str) -> Option<&'static Lang> {
    let named = |n: &String| {
        name.strip_prefix(n.as_str())
            .is_some_and(|r| r.is_empty() || r.starts_with('.'))
    };
    let ext = extension(name);
    LANGS
        .iter()
        .find(|l| l.names.iter().any(named))
        .or_else(|| LANGS.iter().find(|l| l.extensions.contains(&ext)))
}

/// Whether `path` is a test file, by its directory or its name.
pub fn is_test_path(path: &str) -> bool {
    dirs(path).any(is_test_dir) || TEST_NAME.is_match(file_name(path))
}

/// Whether a directory called `name` holds tests.
pub fn is_test_dir(name: &str) -> bool {
    listed(&FILES.test_dirs, name)
}

/// Whether source `text` carries its own unit tests (Rust's `#[test]` next to the code).
pub fn has_inline_tests(entry: &Entry<'_>, text: &str) -> bool {
    entry.lang.is_some_and(|l| l.name == "Rust")
        && (text.contains("#[test]") || text.contains("#[cfg(test)]"))
}

/// The last component of `path`.
pub fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The directory components of `path`, outermost first.
pub fn dirs(path: &str) -> impl Iterator<Item = &str> {
    let parent = path.rfind('/').map_or("", |i| &path[..i]);
    parent.split('/').filter(|d| !d.is_empty())
}

/// The lower-case extension of file `name`, or `""` (a leading dot is not one).
pub fn extension(name: &str) -> String {
    match name.rfind('.') {
        Some(i) if i > 0 => name[i + 1..].to_ascii_lowercase(),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn languages_by_name_and_extension() {
        assert_eq!(language("main.rs").unwrap().name, "Rust");
        assert_eq!(language("App.TSX").unwrap().name, "TypeScript");
        assert_eq!(language("Dockerfile.dev").unwrap().name, "Dockerfile");
        assert!(language("README.md").is_none());
        assert!(language(".gitignore").is_none());
    }

    #[test]
    fn test_paths() {
        for p in [
            "tests/e2e.rs",
            "src/__tests__/a.js",
            "pkg/x_test.go",
            "test_app.py",
            "web/a.spec.ts",
            "src/FooTest.java",
            "spec/models/user_spec.rb",
            "src/agents/planner/tests.rs",
        ] {
            assert!(is_test_path(p), "{p}");
        }
        for p in [
            "src/main.rs",
            "src/testing_utils.rs",
            "Test.java",
            "src/contest.py",
        ] {
            assert!(!is_test_path(p), "{p}");
        }
    }
}
