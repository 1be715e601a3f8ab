//! The code tree as every role of the builtin agent sees it: the language of a file, which
//! files are vendored or generated (left out of everything), locked or binary (never read),
//! which are tests, where source starts and where a program starts; and the path helpers.
//!
//! One table, `code.toml`, read once into [`CODE`]: the analyst counts and reads with it, the
//! planner weighs and places files with it, the writer matches the request's words to paths
//! with it. What only one role needs stays in that role's own table.

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::words::has;

/// The tables of `code.toml`; see the file for what each is.
#[derive(Debug, Deserialize)]
pub(super) struct Tables {
    /// The languages, in table order.
    pub language: Vec<Lang>,
    vendored_dirs: Vec<String>,
    generated_suffixes: Vec<String>,
    lock_files: Vec<String>,
    binary_exts: Vec<String>,
    /// Directory names that hold tests, in the order the planner picks one for new tests.
    pub test_dirs: Vec<String>,
    test_name: String,
    /// Directory names under which source usually starts.
    pub source_roots: Vec<String>,
    python_starts: Vec<String>,
    js_starts: Vec<String>,
}

/// The tables, read once.
pub(super) static CODE: LazyLock<Tables> =
    LazyLock::new(|| super::template::data(builtin!("code.toml")));

/// File names of tests: `CODE.test_name`, compiled once.
static TEST_NAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&CODE.test_name).expect("a unit test compiles the builtin test-name pattern")
});

/// A language: one entry of `code.toml`.
#[derive(Debug, PartialEq, Eq, Deserialize, Serialize)]
pub(super) struct Lang {
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
    /// How the planner names new files in it, if it does.
    #[serde(default)]
    pub new_files: Option<NewFiles>,
}

/// How new files of a language are named.
#[derive(Debug, PartialEq, Eq, Deserialize, Serialize)]
pub(super) struct NewFiles {
    /// The extension of new files.
    pub ext: String,
    /// How their names are written.
    pub naming: Naming,
    /// The names a discovery context may call the language by, lower-case.
    #[serde(skip_serializing)]
    pub aliases: Vec<String>,
}

/// How a language names its files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum Naming {
    /// `token_store`
    Snake,
    /// `token-store`
    Kebab,
    /// `TokenStore`
    Pascal,
}

/// The language of the file at `path`: by its name, else by its extension.
pub(super) fn language(path: &str) -> Option<&'static Lang> {
    let name = file_name(path);
    let named = |n: &String| {
        name.strip_prefix(n.as_str())
            .is_some_and(|r| r.is_empty() || r.starts_with('.'))
    };
    let ext = extension(name);
    let langs = &CODE.language;
    langs
        .iter()
        .find(|l| l.names.iter().any(named))
        .or_else(|| langs.iter().find(|l| l.extensions.contains(&ext)))
}

/// Whether `path` is vendored, installed or generated: left out of everything.
pub(super) fn is_vendored(path: &str) -> bool {
    let name = file_name(path);
    CODE.generated_suffixes
        .iter()
        .any(|s| name.ends_with(s.as_str()))
        || dirs(path).any(|d| has(&CODE.vendored_dirs, d))
}

/// Whether the file called `name` is a lock file.
pub(super) fn is_lock(name: &str) -> bool {
    has(&CODE.lock_files, name)
}

/// Whether `path` is never worth reading: vendored, generated, a lock file or binary.
pub(super) fn is_unread(path: &str) -> bool {
    is_vendored(path) || is_lock(file_name(path)) || has(&CODE.binary_exts, &extension(path))
}

/// Whether `path` is a test: in a test directory, or code with a test's name.
pub(super) fn is_test_path(path: &str) -> bool {
    dirs(path).any(is_test_dir) || (language(path).is_some() && TEST_NAME.is_match(file_name(path)))
}

/// Whether a directory called `name` holds tests.
pub(super) fn is_test_dir(name: &str) -> bool {
    has(&CODE.test_dirs, name)
}

/// Whether `path` is where a program or library usually starts. `js_roots` are the
/// directories (`""`, `web/`) where JavaScript packages start.
pub(super) fn is_entry_point(path: &str, js_roots: &[&str]) -> bool {
    let name = file_name(path);
    let parent = &path[..path.len() - name.len()];
    let in_src_bin = parent.starts_with("src/bin/") || parent.contains("/src/bin/");
    match name {
        "main.rs" | "lib.rs" => parent == "src/" || parent.ends_with("/src/") || in_src_bin,
        n if in_src_bin && n.ends_with(".rs") && dirs(path).last() == Some("bin") => true,
        "main.go" => parent.is_empty() || dirs(path).any(|d| d == "cmd"),
        n if has(&CODE.python_starts, n) => path.matches('/').count() <= 2,
        n if has(&CODE.js_starts, n) => js_roots
            .iter()
            .any(|root| parent == *root || parent == format!("{root}src/")),
        "Main.java" | "Program.cs" => true,
        n => n.ends_with("Application.java"),
    }
}

/// The last component of `path`.
pub(super) fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The directory of `path`, `""` for the root.
pub(super) fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(d, _)| d)
}

/// The directory components of `path`, outermost first.
pub(super) fn dirs(path: &str) -> impl Iterator<Item = &str> {
    parent(path).split('/').filter(|d| !d.is_empty())
}

/// The directories holding `path`, innermost first, without the root.
pub(super) fn ancestors(path: &str) -> impl Iterator<Item = &str> {
    std::iter::successors(Some(parent(path)), |d| Some(parent(d))).take_while(|d| !d.is_empty())
}

/// The lower-case extension of the file at `path`, or `""` (a leading dot is not one).
pub(super) fn extension(path: &str) -> String {
    let name = file_name(path);
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
        assert_eq!(language("src/main.rs").unwrap().name, "Rust");
        assert_eq!(language("App.TSX").unwrap().name, "TypeScript");
        assert_eq!(language("Dockerfile.dev").unwrap().name, "Dockerfile");
        assert!(language("README.md").is_none());
        assert!(language(".gitignore").is_none());
        let ruby = language("Rakefile").unwrap();
        assert!(ruby.name == "Ruby" && !ruby.testable);
        // The planner names new files only in languages that say how.
        let rust = language("lib.rs")
            .and_then(|l| l.new_files.as_ref())
            .unwrap();
        assert_eq!((rust.ext.as_str(), rust.naming), ("rs", Naming::Snake));
        assert!(language("a.html").unwrap().new_files.is_none());
    }

    #[test]
    fn files_left_out_and_never_read() {
        assert!(is_vendored("web/node_modules/x/index.js") && is_vendored("app.min.js"));
        assert!(!is_vendored("src/build.rs") && !is_vendored("ci/build"));
        assert!(is_unread("Cargo.lock") && is_unread("docs/logo.PNG"));
        assert!(!is_unread("src/lib.rs"));
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
            "tests/fixtures/data.json",
        ] {
            assert!(is_test_path(p), "{p}");
        }
        for p in [
            "src/main.rs",
            "src/testing_utils.rs",
            "Test.java",
            "src/contest.py",
            // Only code is a test by its name.
            "requirements/tests.txt",
        ] {
            assert!(!is_test_path(p), "{p}");
        }
    }

    #[test]
    fn entry_points() {
        let roots = ["", "web/"];
        for p in [
            "src/main.rs",
            "crates/cli/src/main.rs",
            "src/lib.rs",
            "src/bin/tool.rs",
            "cmd/server/main.go",
            "main.go",
            "manage.py",
            "pkg/__main__.py",
            "index.js",
            "src/index.ts",
            "src/main/java/x/DemoApplication.java",
            "web/src/main.tsx",
        ] {
            assert!(is_entry_point(p, &roots), "{p}");
        }
        for p in [
            "src/agents/mod.rs",
            "lib/util/main.rs",
            "src/components/index.ts",
            "a/b/c/main.py",
            "pkg/main.go",
            "lib/src/main.ts",
        ] {
            assert!(!is_entry_point(p, &roots), "{p}");
        }
    }

    #[test]
    fn paths() {
        assert_eq!(file_name("a/b/c.rs"), "c.rs");
        assert_eq!(parent("a/b/c.rs"), "a/b");
        assert_eq!(dirs("a/b/c.rs").collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(ancestors("a/b/c.rs").collect::<Vec<_>>(), ["a/b", "a"]);
        assert_eq!(extension("a/B.RS"), "rs");
        assert_eq!(extension("a.b/.env"), "");
    }
}
