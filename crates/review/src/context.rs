//! What kind of code a file (or a part of it) is: test code, an example, a build script, a
//! command-line program — or ordinary code. Context decides which rules apply (a debug print
//! is how a build script talks to Cargo, a fixture's secret is not a leak) and lowers the
//! severity of what is still reported there.
//!
//! Paths follow the conventions of each ecosystem; a file's syntax can add more (Rust's
//! `#[cfg(test)]`, Python's `if __name__ == "__main__":`, Go's `package main`), found by the
//! parser.

/// The kind of code something is in, when it is not ordinary code.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Context {
    /// Tests, fixtures, test data.
    Test,
    /// Examples, samples, demos and documentation code.
    Example,
    /// Build scripts, project tooling, benchmarks, CI.
    Build,
    /// A command-line program, whose job includes printing.
    Cli,
}

impl Context {
    /// Every context, in report order.
    pub const ALL: [Context; 4] = [
        Context::Test,
        Context::Example,
        Context::Build,
        Context::Cli,
    ];

    /// The name used in reports and in the rules file.
    pub fn as_str(self) -> &'static str {
        match self {
            Context::Test => "test",
            Context::Example => "example",
            Context::Build => "build",
            Context::Cli => "cli",
        }
    }

    /// The context named `s`.
    pub fn parse(s: &str) -> Option<Context> {
        Context::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

/// Directory names that hold test code in some ecosystem.
const TEST_DIRS: &[&str] = &[
    "test",
    "tests",
    "testing",
    "testsuite",
    "testsuites",
    "test_suite",
    "test-suite",
    "test_utils",
    "testutils",
    "testdata",
    "test-data",
    "test_data",
    "spec",
    "specs",
    "__tests__",
    "__mocks__",
    "fixtures",
    "fixture",
    "mocks",
    "e2e",
    "integration-tests",
    "unittests",
];
/// Directory names that hold examples and documentation code.
const EXAMPLE_DIRS: &[&str] = &[
    "example",
    "examples",
    "sample",
    "samples",
    "demo",
    "demos",
    "doc",
    "docs",
    "documentation",
    "tutorial",
    "tutorials",
    "cookbook",
    "playground",
];
/// Directory names that hold build scripts, tooling, benchmarks and CI.
const BUILD_DIRS: &[&str] = &[
    "scripts",
    "script",
    "tools",
    "tool",
    "tooling",
    "ci",
    ".github",
    ".circleci",
    "benches",
    "bench",
    "benchmark",
    "benchmarks",
    "xtask",
    "build-tools",
    "buildtools",
    "hack",
    "contrib",
    "misc",
];
/// Directory names that hold command-line programs.
const CLI_DIRS: &[&str] = &["bin", "cmd", "cli"];

/// The context of the file at `path` from its path alone (the syntax may add more).
pub(crate) fn of_path(path: &str) -> Option<Context> {
    let lower = path.to_ascii_lowercase();
    let mut parts: Vec<&str> = lower.split('/').collect();
    let name = parts.pop().unwrap_or("");
    let (stem, ext) = name.rsplit_once('.').unwrap_or((name, ""));
    let in_dir = |dirs: &[&str]| parts.iter().any(|p| dirs.contains(p));

    // `coreTest.js`, `ParserTests.cs`: a camel-case `Test` suffix (case matters: `latest.js`).
    let camel_test = {
        let name = path.rsplit('/').next().unwrap_or(path);
        let stem = name.split('.').next().unwrap_or(name);
        stem.len() > 4 && (stem.ends_with("Test") || stem.ends_with("Tests"))
    };
    if in_dir(TEST_DIRS) || is_test_name(stem, ext) || (camel_test && is_code(ext)) {
        return Some(Context::Test);
    }
    if in_dir(EXAMPLE_DIRS) {
        return Some(Context::Example);
    }
    if in_dir(BUILD_DIRS) || is_build_name(name, stem, ext) {
        return Some(Context::Build);
    }
    let rust_bin = ext == "rs"
        && (name == "main.rs" && parts.last() == Some(&"src")
            || parts.windows(2).any(|w| w == ["src", "bin"]));
    if rust_bin
        || in_dir(CLI_DIRS)
        || stem == "__main__"
        || stem == "cli"
        || stem.ends_with("_cli")
        || stem.ends_with("-cli")
    {
        return Some(Context::Cli);
    }
    None
}

/// Test files by name: `test_x.py`, `x_test.py`, `x_test.go`, `x.test.ts`, `x.spec.js`,
/// `conftest.py`, `XTest.java`, `x_spec.rb`, `tests.rs`.
fn is_test_name(stem: &str, ext: &str) -> bool {
    if !is_code(ext) {
        return false;
    }
    stem == "conftest"
        || stem == "test"
        || stem == "tests"
        || stem.starts_with("test_")
        || stem.ends_with("_test")
        || stem.ends_with("_tests")
        || stem.ends_with("_spec")
        || stem.ends_with(".test")
        || stem.ends_with(".spec")
        || stem.ends_with(".e2e")
        || (matches!(ext, "java" | "kt" | "cs" | "php")
            && (stem.ends_with("test") || stem.ends_with("tests")))
}

/// A source file extension.
fn is_code(ext: &str) -> bool {
    matches!(
        ext,
        "py" | "rs"
            | "go"
            | "js"
            | "mjs"
            | "cjs"
            | "jsx"
            | "ts"
            | "tsx"
            | "mts"
            | "cts"
            | "rb"
            | "java"
            | "kt"
            | "cs"
            | "php"
            | "c"
            | "cc"
            | "cpp"
    )
}

/// Build scripts and project tooling by name.
fn is_build_name(name: &str, stem: &str, ext: &str) -> bool {
    matches!(
        name,
        "build.rs"
            | "setup.py"
            | "noxfile.py"
            | "fabfile.py"
            | "tasks.py"
            | "dodo.py"
            | "conanfile.py"
            | "magefile.go"
            | "makefile"
            | "gnumakefile"
            | "rakefile"
            | "gruntfile.js"
            | "gulpfile.js"
            | "jakefile.js"
    ) || (matches!(ext, "js" | "mjs" | "cjs" | "ts" | "mts" | "cts")
        && (stem.ends_with(".config") || stem.ends_with("rc") && stem.starts_with('.')))
}

/// Directory names that hold other projects' code or build output.
const VENDORED_DIRS: &[&str] = &[
    "vendor",
    "vendored",
    "third_party",
    "third-party",
    "thirdparty",
    "node_modules",
    "bower_components",
    "dist",
    "deno_dist",
    "dist-module",
];

/// Whether the file at `path`, with `text`, is someone else's code or generated: under a
/// vendoring or build-output directory, a minified or bundled script, or marked as generated
/// in its first lines (`@generated`, Go's `Code generated … DO NOT EDIT.`). A review has
/// nothing to ask of the change's author there.
pub(crate) fn is_not_authored(path: &str, text: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    let mut parts: Vec<&str> = lower.split('/').collect();
    let name = parts.pop().unwrap_or("");
    if parts.iter().any(|p| VENDORED_DIRS.contains(p)) {
        return true;
    }
    if [
        ".min.js",
        ".min.css",
        ".bundle.js",
        "-bundle.js",
        ".min.mjs",
    ]
    .iter()
    .any(|e| name.ends_with(e))
    {
        return true;
    }
    text.lines().take(5).any(|l| {
        l.contains("@generated")
            || (l.contains("Code generated") && l.contains("DO NOT EDIT"))
            || l.contains("DO NOT EDIT: generated")
            || l.to_ascii_lowercase().contains("auto-generated file")
            || l.to_ascii_lowercase().contains("this file is generated")
            || l.to_ascii_lowercase()
                .contains("this file was automatically generated")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vendored_bundled_and_generated_files_are_not_the_authors_code() {
        assert!(is_not_authored("vendor/@acme/ui/index.js", "x"));
        assert!(is_not_authored("static/app.min.js", "x"));
        assert!(is_not_authored("third_party/zlib/inflate.c", "x"));
        assert!(is_not_authored(
            "api/types.pb.go",
            "// Code generated by protoc-gen-go. DO NOT EDIT.\npackage api\n"
        ));
        assert!(is_not_authored(
            "src/schema.rs",
            "// @generated by a tool\n"
        ));
        assert!(!is_not_authored("src/vendors.py", "x = 1\n"));
        assert!(!is_not_authored("lib/distance.js", "let d = 1;\n"));
        assert!(!is_not_authored(
            "src/gen.rs",
            "fn a() {}\n\n\n\n\n\n// Code generated later. DO NOT EDIT.\n"
        ));
    }

    #[test]
    fn paths_tell_the_context_by_the_conventions_of_each_ecosystem() {
        let cases = [
            ("flask/testsuite/basic.py", Some(Context::Test)),
            ("tests/test_api.py", Some(Context::Test)),
            ("src/app/test_views.py", Some(Context::Test)),
            ("pkg/conftest.py", Some(Context::Test)),
            ("server/handler_test.go", Some(Context::Test)),
            ("lib/router.spec.js", Some(Context::Test)),
            ("spec/helpers/util.js", Some(Context::Test)),
            ("src/__tests__/app.tsx", Some(Context::Test)),
            ("ui/Button.test.tsx", Some(Context::Test)),
            ("src/test/java/AppTest.java", Some(Context::Test)),
            ("examples/hello/index.js", Some(Context::Example)),
            ("docs/conf.py", Some(Context::Example)),
            ("build.rs", Some(Context::Build)),
            ("crates/core/build.rs", Some(Context::Build)),
            ("setup.py", Some(Context::Build)),
            ("scripts/release.py", Some(Context::Build)),
            ("webpack.config.js", Some(Context::Build)),
            ("benches/parse.rs", Some(Context::Build)),
            ("src/main.rs", Some(Context::Cli)),
            ("src/bin/tool.rs", Some(Context::Cli)),
            ("cmd/server/main.go", Some(Context::Cli)),
            ("mypkg/__main__.py", Some(Context::Cli)),
            ("bin/www", Some(Context::Cli)),
            ("src/lib.rs", None),
            ("flask/app.py", None),
            ("lib/router/index.js", None),
            ("internal/attest.go", None),
            ("src/latest.py", None),
            ("src/jquery/coreTest.js", Some(Context::Test)),
            ("test_suite/src/regression.rs", Some(Context::Test)),
            ("src/latest.js", None),
            ("src/Contest.js", None),
            ("src/contest/main_view.py", None),
        ];
        for (path, want) in cases {
            assert_eq!(of_path(path), want, "{path}");
        }
    }
}
