//! The inventory of the code tree: which files count, their language, which are tests, and
//! the bounded read of their contents.
//!
//! Vendored, installed and generated files are left out of everything; lock files and
//! minified bundles are counted but never read. Reading is capped (files under 256 KiB, at
//! most 3000 of them, manifests first, then source, then other text, each in path order),
//! so the scan costs the same on every run and the result does not depend on timing. What a
//! language, a test or a vendored file is, is the builtin agent's one rule (`builtin::code`).

use std::sync::LazyLock;

use serde::Deserialize;

use crate::builtin::code::{self, Lang, dirs, file_name};
use crate::builtin::words::has;
use crate::{CodeFile, CodeTree};
use tlv4_core::error::Result;

use super::manifest;

/// Files larger than this are counted but not read.
pub(crate) const MAX_READ_BYTES: u64 = 256 * 1024;
/// At most this many files are read.
pub(crate) const MAX_READ_FILES: usize = 3000;

/// The file tables of `analyst-files.toml`; see the file for what each is.
#[derive(Debug, Deserialize)]
pub(crate) struct Files {
    text_exts: Vec<String>,
    text_names: Vec<String>,
    aux_dirs: Vec<String>,
    pub doc_dirs: Vec<String>,
    pub ci_files: Vec<String>,
    pub ci_prefixes: Vec<String>,
    pub definitions: Vec<String>,
    pub doc_exts: Vec<String>,
}

/// The file tables, read once.
pub(crate) static FILES: LazyLock<Files> =
    LazyLock::new(|| super::data(builtin!("analyst-files.toml")));

/// One file that counts.
#[derive(Debug)]
pub(crate) struct Entry<'a> {
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
    pub(crate) fn path(&self) -> &str {
        &self.file.path
    }

    /// The file name.
    pub(crate) fn name(&self) -> &str {
        file_name(&self.file.path)
    }

    /// The extension, lower-case, or `""`.
    pub(crate) fn ext(&self) -> String {
        code::extension(self.name())
    }

    /// Whether it is source code the product is made of: testable, not a test, not an
    /// example, benchmark or script.
    pub(crate) fn is_product_source(&self) -> bool {
        self.lang.is_some_and(|l| l.testable)
            && !self.test
            && !dirs(self.path()).any(|d| has(&FILES.aux_dirs, d))
    }

    /// Whether it is worth reading as text.
    fn readable(&self) -> bool {
        let name = self.name();
        !code::is_lock(name)
            && (self.lang.is_some()
                || self.manifest.is_some()
                || has(&FILES.text_names, name)
                || has(&FILES.text_exts, &self.ext()))
    }
}

/// The files that count, and how many were left out.
#[derive(Debug)]
pub(crate) struct Inventory<'a> {
    /// Files outside vendored and generated directories, in path order.
    pub entries: Vec<Entry<'a>>,
    /// Files left out.
    pub ignored: usize,
}

impl Inventory<'_> {
    /// Whether a file exists at `path`.
    pub(crate) fn contains(&self, path: &str) -> bool {
        self.entries
            .binary_search_by(|e| e.path().cmp(path))
            .is_ok()
    }
}

/// Classifies every file of `code`.
pub(crate) fn inventory(code: &CodeTree) -> Inventory<'_> {
    let mut entries = Vec::new();
    let mut ignored = 0;
    for file in code.files() {
        let path = file.path.as_str();
        if code::is_vendored(path) {
            ignored += 1;
            continue;
        }
        let lang = code::language(path);
        entries.push(Entry {
            file,
            lang,
            // Only code is a test: documents and fixtures under tests/ are not.
            test: lang.is_some() && code::is_test_path(path),
            manifest: manifest::kind_of(path),
        });
    }
    Inventory { entries, ignored }
}

/// Reads the readable files of `inv` within the caps and hands each one's text to `visit`.
/// Returns how many were read.
pub(crate) fn read_each(
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

/// Whether source `text` carries its own unit tests (Rust's `#[test]` next to the code).
pub(crate) fn has_inline_tests(entry: &Entry<'_>, text: &str) -> bool {
    entry.lang.is_some_and(|l| l.name == "Rust")
        && (text.contains("#[test]") || text.contains("#[cfg(test)]"))
}
