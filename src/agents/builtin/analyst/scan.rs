//! The inventory of the code tree: which files count, their language, which are tests, and
//! the bounded read of their contents.
//!
//! Vendored, installed and generated files are left out of everything; lock files and
//! minified bundles are counted but never read. Reading is capped (files under 256 KiB, at
//! most 3000 of them, manifests first, then source, then other text, each in path order),
//! so the scan costs the same on every run and the result does not depend on timing.

use crate::agents::{CodeFile, CodeTree};
use crate::error::Result;

use super::manifest::{self, Ecosystem};

/// Files larger than this are counted but not read.
pub const MAX_READ_BYTES: u64 = 256 * 1024;
/// At most this many files are read.
pub const MAX_READ_FILES: usize = 3000;

/// Directories whose content is vendored, installed or generated.
#[rustfmt::skip]
const IGNORED_DIRS: &[&str] = &[
    "node_modules", "target", "dist", "build", "vendor", ".venv", "venv", "__pycache__", ".tox",
    ".mypy_cache", ".pytest_cache", ".next", ".nuxt", ".svelte-kit", "coverage", ".gradle",
    "bower_components", ".terraform", "Pods",
];

/// Generated files, by the end of their name.
const GENERATED_SUFFIXES: &[&str] = &[".min.js", ".min.css", ".map"];

/// Lock files: generated, and long; counted, never read.
#[rustfmt::skip]
const LOCK_FILES: &[&str] = &[
    "Cargo.lock", "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml",
    "bun.lockb", "poetry.lock", "Pipfile.lock", "uv.lock", "Gemfile.lock", "composer.lock",
    "go.sum",
];

/// A language, as counted by the scan.
#[derive(Debug, PartialEq, Eq)]
pub struct Lang {
    /// Display name.
    pub name: &'static str,
    /// Whether its files are code that tests are expected to cover (not markup, not build
    /// or deployment scripts).
    pub testable: bool,
}

macro_rules! lang {
    ($name:literal, $testable:literal) => {
        &Lang {
            name: $name,
            testable: $testable,
        }
    };
}

/// File extensions (lower-case) and their language.
const LANGS: &[(&str, &Lang)] = &[
    ("rs", lang!("Rust", true)),
    ("py", lang!("Python", true)),
    ("pyi", lang!("Python", true)),
    ("js", lang!("JavaScript", true)),
    ("mjs", lang!("JavaScript", true)),
    ("cjs", lang!("JavaScript", true)),
    ("jsx", lang!("JavaScript", true)),
    ("ts", lang!("TypeScript", true)),
    ("tsx", lang!("TypeScript", true)),
    ("mts", lang!("TypeScript", true)),
    ("go", lang!("Go", true)),
    ("java", lang!("Java", true)),
    ("kt", lang!("Kotlin", true)),
    ("kts", lang!("Kotlin", false)),
    ("scala", lang!("Scala", true)),
    ("groovy", lang!("Groovy", true)),
    ("rb", lang!("Ruby", true)),
    ("php", lang!("PHP", true)),
    ("c", lang!("C", true)),
    ("h", lang!("C", true)),
    ("cc", lang!("C++", true)),
    ("cpp", lang!("C++", true)),
    ("cxx", lang!("C++", true)),
    ("hpp", lang!("C++", true)),
    ("hh", lang!("C++", true)),
    ("cs", lang!("C#", true)),
    ("fs", lang!("F#", true)),
    ("swift", lang!("Swift", true)),
    ("m", lang!("Objective-C", true)),
    ("mm", lang!("Objective-C", true)),
    ("dart", lang!("Dart", true)),
    ("lua", lang!("Lua", true)),
    ("ex", lang!("Elixir", true)),
    ("exs", lang!("Elixir", true)),
    ("erl", lang!("Erlang", true)),
    ("hs", lang!("Haskell", true)),
    ("ml", lang!("OCaml", true)),
    ("mli", lang!("OCaml", true)),
    ("clj", lang!("Clojure", true)),
    ("cljs", lang!("Clojure", true)),
    ("elm", lang!("Elm", true)),
    ("jl", lang!("Julia", true)),
    ("r", lang!("R", true)),
    ("zig", lang!("Zig", true)),
    ("nim", lang!("Nim", true)),
    ("pl", lang!("Perl", true)),
    ("pm", lang!("Perl", true)),
    ("sol", lang!("Solidity", true)),
    ("vue", lang!("Vue", true)),
    ("svelte", lang!("Svelte", true)),
    ("astro", lang!("Astro", false)),
    ("html", lang!("HTML", false)),
    ("htm", lang!("HTML", false)),
    ("css", lang!("CSS", false)),
    ("scss", lang!("SCSS", false)),
    ("sass", lang!("SCSS", false)),
    ("less", lang!("Less", false)),
    ("sql", lang!("SQL", false)),
    ("sh", lang!("Shell", false)),
    ("bash", lang!("Shell", false)),
    ("zsh", lang!("Shell", false)),
    ("ps1", lang!("PowerShell", false)),
    ("tf", lang!("HCL", false)),
    ("hcl", lang!("HCL", false)),
    ("proto", lang!("Protocol Buffers", false)),
    ("ipynb", lang!("Jupyter Notebook", false)),
];

/// Files whose name, not extension, gives the language.
const NAMED_LANGS: &[(&str, &Lang)] = &[
    ("Dockerfile", lang!("Dockerfile", false)),
    ("Makefile", lang!("Makefile", false)),
    ("GNUmakefile", lang!("Makefile", false)),
    ("Rakefile", lang!("Ruby", false)),
];

/// Extensions of text files that are read although they are not source.
#[rustfmt::skip]
const TEXT_EXTS: &[&str] = &[
    "md", "markdown", "rst", "adoc", "txt", "toml", "yaml", "yml", "json", "xml", "ini", "cfg",
    "conf", "properties", "gradle", "prisma", "graphql", "gql", "env", "example",
];

/// Extension-less text files that are read.
#[rustfmt::skip]
const TEXT_NAMES: &[&str] = &[
    "Gemfile", "Pipfile", "Procfile", "Jenkinsfile", "Vagrantfile", "go.mod", "CODEOWNERS",
];

/// Directory names that hold tests.
#[rustfmt::skip]
const TEST_DIRS: &[&str] = &[
    "test", "tests", "__tests__", "spec", "specs", "testing", "e2e", "integration_tests",
    "testdata", "fixtures", "__mocks__",
];

/// Directories whose code is not the product (examples, benchmarks, docs, scripts): not
/// counted when comparing tests to source.
#[rustfmt::skip]
const AUX_DIRS: &[&str] = &[
    "examples", "example", "benches", "benchmarks", "docs", "doc", "scripts", "migrations",
];

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
    pub manifest: Option<(&'static str, Ecosystem)>,
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
            && !dirs(self.path()).any(|d| AUX_DIRS.contains(&d))
    }

    /// Whether it is worth reading as text.
    fn readable(&self) -> bool {
        let name = self.name();
        !LOCK_FILES.contains(&name)
            && (self.lang.is_some()
                || self.manifest.is_some()
                || TEXT_NAMES.contains(&name)
                || TEXT_EXTS.contains(&self.ext().as_str()))
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
    /// Total size of the files that count.
    pub fn total_bytes(&self) -> u64 {
        self.entries.iter().map(|e| e.file.size).sum()
    }

    /// Whether there is any source file.
    pub fn has_source(&self) -> bool {
        self.entries.iter().any(|e| e.lang.is_some())
    }

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
        if dirs(path).any(|d| IGNORED_DIRS.contains(&d))
            || GENERATED_SUFFIXES.iter().any(|s| name.ends_with(s))
        {
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
    let rank = |e: &Entry<'_>| {
        if e.manifest.is_some() {
            0
        } else if e.lang.is_some() {
            1
        } else {
            2
        }
    };
    let mut order: Vec<&Entry<'_>> = inv
        .entries
        .iter()
        .filter(|e| e.file.size <= MAX_READ_BYTES && e.readable())
        .collect();
    // A stable sort keeps path order within each rank.
    order.sort_by_key(|e| rank(e));
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

/// The language of a file called `name`.
pub fn language(name: &str) -> Option<&'static Lang> {
    if let Some((_, lang)) = NAMED_LANGS
        .iter()
        .find(|(n, _)| name == *n || name.strip_prefix(n).is_some_and(|r| r.starts_with('.')))
    {
        return Some(lang);
    }
    let ext = extension(name);
    LANGS.iter().find(|(e, _)| *e == ext).map(|(_, l)| *l)
}

/// Whether `path` is a test file, by its directory or its name.
pub fn is_test_path(path: &str) -> bool {
    if dirs(path).any(is_test_dir) {
        return true;
    }
    let name = file_name(path);
    let stem = name.split('.').next().unwrap_or(name);
    (name.starts_with("test_") && name.ends_with(".py"))
        || name == "conftest.py"
        || stem == "test"
        || stem == "tests"
        || stem.ends_with("_test")
        || stem.ends_with("_spec")
        || [".test.", ".spec."].iter().any(|m| name.contains(m))
        || ["Test", "Tests", "IT"].iter().any(|s| {
            stem.len() > s.len()
                && stem.ends_with(s)
                && matches!(
                    extension(name).as_str(),
                    "java" | "kt" | "cs" | "php" | "scala"
                )
        })
}

/// Whether a directory called `name` holds tests.
pub fn is_test_dir(name: &str) -> bool {
    TEST_DIRS.contains(&name)
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
