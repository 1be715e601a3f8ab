//! Which test framework a code tree uses, the commands that run it, and which of its tests
//! cover the files an implementation changed.
//!
//! Detection reads only the code tree (manifests and file names), never a checkout. Each
//! framework found becomes a candidate with the directory it runs in; the shallowest wins,
//! the analyst's choice breaks ties, and the plan's `test_command` overrides the command.

use std::collections::BTreeSet;

use crate::agents::CodeTree;
pub(super) use tlv4_core::process::quote;
use tlv4_specdoc::discovery::TestFramework;

/// The test frameworks the tester can run and read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// `cargo test`.
    Cargo,
    /// `python3 -m pytest`.
    Pytest,
    /// `python3 -m unittest`.
    Unittest,
    /// `npx jest`.
    Jest,
    /// `npx vitest run`.
    Vitest,
    /// `npx mocha`.
    Mocha,
    /// Node's built-in runner (`node --test`), run by `npm test` or directly.
    NodeTest,
    /// `npm test` with a runner that is not recognised.
    NpmScript,
    /// `go test`.
    Go,
    /// A command named by the plan or the analyst that none of the above matches.
    Custom,
}

impl Kind {
    /// The name used in reports and records.
    pub(super) fn name(self) -> &'static str {
        match self {
            Kind::Cargo => "cargo",
            Kind::Pytest => "pytest",
            Kind::Unittest => "unittest",
            Kind::Jest => "jest",
            Kind::Vitest => "vitest",
            Kind::Mocha => "mocha",
            Kind::NodeTest => "node:test",
            Kind::NpmScript => "npm test",
            Kind::Go => "go test",
            Kind::Custom => "custom command",
        }
    }

    /// The framework a test command runs, if it names one.
    pub(super) fn of_command(command: &str) -> Option<Kind> {
        let c = command.to_ascii_lowercase();
        let has = |w: &str| {
            c.split(|ch: char| ch.is_whitespace() || ch == '/')
                .any(|t| t == w)
        };
        if c.contains("cargo test") || c.contains("cargo nextest") {
            Some(Kind::Cargo)
        } else if has("pytest") || c.contains("-m pytest") {
            Some(Kind::Pytest)
        } else if c.contains("-m unittest") {
            Some(Kind::Unittest)
        } else if has("vitest") {
            Some(Kind::Vitest)
        } else if has("jest") {
            Some(Kind::Jest)
        } else if has("mocha") {
            Some(Kind::Mocha)
        } else if runs_node_test(&c) {
            Some(Kind::NodeTest)
        } else if c.contains("go test") {
            Some(Kind::Go)
        } else if [
            "npm test",
            "npm run test",
            "yarn test",
            "pnpm test",
            "bun test",
        ]
        .iter()
        .any(|s| c.contains(s))
        {
            Some(Kind::NpmScript)
        } else {
            None
        }
    }

    /// The framework the analyst's `test_framework.name` means.
    fn of_analyst_name(name: &str) -> Option<Kind> {
        Some(match name.to_ascii_lowercase().as_str() {
            "cargo test" | "cargo" => Kind::Cargo,
            "pytest" => Kind::Pytest,
            "unittest" => Kind::Unittest,
            "jest" => Kind::Jest,
            "vitest" => Kind::Vitest,
            "mocha" => Kind::Mocha,
            "go test" | "go" => Kind::Go,
            "node:test" | "node --test" => Kind::NodeTest,
            "test script" => Kind::NpmScript,
            _ => return None,
        })
    }
}

/// Whether a command runs Node's built-in test runner: `node` with a `--test` flag after it in
/// the same simple command (`node --test`, `node --import tsx --test test/`).
pub(super) fn runs_node_test(command: &str) -> bool {
    let words: Vec<&str> = command.split_whitespace().collect();
    words.iter().enumerate().any(|(i, w)| {
        file_name(w) == "node"
            && words[i + 1..]
                .iter()
                .take_while(|a| !["&&", "||", ";", "|"].contains(*a))
                .any(|a| *a == "--test")
    })
}

/// A framework found in the code tree.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Framework {
    /// The framework.
    pub kind: Kind,
    /// The directory the commands run in, relative to the root (`""` for the root).
    pub dir: String,
    /// The files that show it.
    pub evidence: String,
    /// The command that runs the whole suite.
    pub full: String,
}

/// Directories whose content is vendored or generated, never the project's own tests.
const SKIP_DIRS: [&str; 8] = [
    "node_modules",
    "vendor",
    "target",
    ".venv",
    "venv",
    "dist",
    "build",
    "third_party",
];

/// The path's directory (`""` at the root).
pub(super) fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(d, _)| d)
}

/// The path's file name.
pub(super) fn file_name(path: &str) -> &str {
    path.rsplit_once('/').map_or(path, |(_, f)| f)
}

fn depth(dir: &str) -> usize {
    if dir.is_empty() {
        0
    } else {
        dir.matches('/').count() + 1
    }
}

fn join(dir: &str, rel: &str) -> String {
    if dir.is_empty() {
        rel.to_owned()
    } else {
        format!("{dir}/{rel}")
    }
}

/// The files of the tree outside vendored and generated directories.
fn own_files(code: &CodeTree) -> Vec<&str> {
    code.files()
        .iter()
        .map(|f| f.path.as_str())
        .filter(|p| !p.split('/').any(|part| SKIP_DIRS.contains(&part)))
        .collect()
}

fn text(code: &CodeTree, path: &str) -> String {
    code.read_path(path)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

/// Whether a Python file name is a test module (`test_*.py`, `test*.py`, `*_test.py`).
pub(super) fn is_python_test(name: &str) -> bool {
    name.ends_with(".py") && (name.starts_with("test") || name.ends_with("_test.py"))
}

/// Whether a JavaScript or TypeScript file name is a test (`*.test.ts`, `*.spec.js`, …).
pub(super) fn is_js_test(path: &str) -> bool {
    let name = file_name(path);
    let js = JS_EXTS.iter().any(|e| name.ends_with(&format!(".{e}")));
    js && (name.contains(".test.")
        || name.contains(".spec.")
        || path.split('/').any(|d| d == "__tests__"))
}

const JS_EXTS: [&str; 8] = ["ts", "tsx", "js", "jsx", "mjs", "cjs", "mts", "cts"];

/// Every framework found in the tree, in preference order: shallowest directory first, then
/// JavaScript runners, pytest, cargo, go, unittest.
pub(super) fn candidates(code: &CodeTree) -> Vec<Framework> {
    let files = own_files(code);
    let has = |p: &str| files.binary_search(&p).is_ok();
    let mut found: Vec<(usize, usize, Framework)> = Vec::new();
    let mut add = |order: usize, fw: Framework| found.push((depth(&fw.dir), order, fw));

    // JavaScript: the shallowest package.json that names a runner or a real test script.
    let mut manifests: Vec<&str> = files
        .iter()
        .copied()
        .filter(|p| file_name(p) == "package.json")
        .collect();
    manifests.sort_by_key(|p| (depth(parent(p)), p.to_string()));
    for m in manifests {
        if let Some(fw) = javascript(code, &files, m) {
            add(0, fw);
            break;
        }
    }

    // pytest: configuration, a conftest, or pytest among the declared dependencies.
    let mut pytest: Option<(String, String)> = None;
    for p in &files {
        let name = file_name(p);
        let dir = parent(p);
        let evidence = match name {
            "pytest.ini" => Some(dir.to_owned()),
            "pyproject.toml" => {
                let t = text(code, p);
                (t.contains("[tool.pytest") || declares_pytest(&t)).then(|| dir.to_owned())
            }
            "setup.cfg" => text(code, p)
                .contains("[tool:pytest]")
                .then(|| dir.to_owned()),
            "tox.ini" => text(code, p).contains("[pytest]").then(|| dir.to_owned()),
            "conftest.py" => Some(String::new()),
            n if n.starts_with("requirements") && n.ends_with(".txt") => {
                declares_pytest(&text(code, p)).then(|| dir.to_owned())
            }
            "Pipfile" | "setup.py" => declares_pytest(&text(code, p)).then(|| dir.to_owned()),
            _ => None,
        };
        if let Some(dir) = evidence {
            let better = pytest.as_ref().is_none_or(|(d, _)| depth(&dir) < depth(d));
            if better {
                pytest = Some((dir, p.to_string()));
            }
        }
    }
    if let Some((dir, evidence)) = &pytest {
        add(
            1,
            Framework {
                kind: Kind::Pytest,
                dir: dir.clone(),
                evidence: evidence.clone(),
                full: "python3 -m pytest -v --tb=short".into(),
            },
        );
    }

    // Cargo and Go: the shallowest manifest.
    for (order, manifest, kind, full) in [
        (2, "Cargo.toml", Kind::Cargo, "cargo test --no-fail-fast"),
        (3, "go.mod", Kind::Go, "go test -v ./..."),
    ] {
        if let Some(m) = files
            .iter()
            .filter(|p| file_name(p) == manifest)
            .min_by_key(|p| (depth(parent(p)), p.to_string()))
        {
            add(
                order,
                Framework {
                    kind,
                    dir: parent(m).to_owned(),
                    evidence: m.to_string(),
                    full: full.into(),
                },
            );
        }
    }

    // unittest: Python test modules and no pytest.
    if pytest.is_none() {
        let tests: Vec<&str> = files
            .iter()
            .copied()
            .filter(|p| {
                let n = file_name(p);
                n.starts_with("test") && n.ends_with(".py")
            })
            .collect();
        if !tests.is_empty() {
            // Run from the Python project that holds every test module — the deepest
            // directory with a manifest above them all — where its own packages import as
            // they do for its developers (`backend/` of a backend and a frontend); else the
            // root.
            let project = files
                .iter()
                .filter(|p| {
                    let n = file_name(p);
                    matches!(n, "pyproject.toml" | "setup.py" | "setup.cfg")
                        || (n.starts_with("requirements") && n.ends_with(".txt"))
                })
                .map(|p| parent(p))
                .filter(|d| d.is_empty() || tests.iter().all(|t| t.starts_with(&format!("{d}/"))))
                .max_by_key(|d| depth(d))
                .unwrap_or("");
            let inside: Vec<&str> = tests
                .iter()
                .map(|t| {
                    if project.is_empty() {
                        t
                    } else {
                        &t[project.len() + 1..]
                    }
                })
                .collect();
            let has_inside = |p: &str| has(&join(project, p));
            add(
                4,
                Framework {
                    kind: Kind::Unittest,
                    dir: project.to_owned(),
                    evidence: format!(
                        "{}{}",
                        tests[..tests.len().min(3)].join(", "),
                        if tests.len() > 3 { ", …" } else { "" }
                    ),
                    full: unittest_command(&inside, &has_inside),
                },
            );
        }
    }

    found.sort_by_key(|(d, o, _)| (*d, *o));
    found.into_iter().map(|(_, _, fw)| fw).collect()
}

/// Whether a dependency list names pytest (a line or a quoted string starting with it).
fn declares_pytest(text: &str) -> bool {
    text.lines().any(|l| {
        let l = l.trim().trim_start_matches(['"', '\'']);
        l.strip_prefix("pytest").is_some_and(|rest| {
            rest.is_empty() || rest.starts_with(|c: char| " =<>~![;\"',".contains(c))
        })
    })
}

/// `python3 -m unittest`: plain discovery when every test module is importable from the root
/// (packages all the way), discovery from the one directory that holds them otherwise, or
/// the modules named one by one.
fn unittest_command(tests: &[&str], has: &dyn Fn(&str) -> bool) -> String {
    let importable = |p: &str| {
        let mut dir = parent(p);
        while !dir.is_empty() {
            if !has(&join(dir, "__init__.py")) {
                return false;
            }
            dir = parent(dir);
        }
        true
    };
    if tests.iter().all(|p| importable(p)) {
        return "python3 -m unittest -v".into();
    }
    let dirs: BTreeSet<&str> = tests.iter().map(|p| parent(p)).collect();
    if dirs.len() == 1 {
        let dir = dirs.into_iter().next().expect("one directory");
        return format!("python3 -m unittest discover -v -s {}", quote(dir));
    }
    let mut cmd = "python3 -m unittest -v".to_owned();
    for t in tests.iter().take(500) {
        cmd.push(' ');
        cmd.push_str(&quote(t));
    }
    cmd
}

/// The JavaScript runner a `package.json` uses, if any.
fn javascript(code: &CodeTree, files: &[&str], manifest: &str) -> Option<Framework> {
    let dir = parent(manifest).to_owned();
    let v: serde_json::Value = serde_json::from_slice(&code.read_path(manifest)?).ok()?;
    let declared = |dep: &str| {
        ["devDependencies", "dependencies"]
            .iter()
            .any(|k| v[*k].get(dep).is_some())
    };
    let script = v["scripts"]["test"]
        .as_str()
        .filter(|s| !s.contains("no test specified"))
        .map(str::to_owned);
    let runners = [
        ("vitest", Kind::Vitest),
        ("jest", Kind::Jest),
        ("mocha", Kind::Mocha),
    ];
    let from_script = |s: &str| {
        runners
            .iter()
            .find(|(name, _)| s.split_whitespace().any(|w| w == *name))
            .map(|(_, k)| *k)
    };
    let configured = |kind: Kind| {
        let prefixes: &[&str] = match kind {
            Kind::Vitest => &["vitest.config."],
            Kind::Jest => &["jest.config."],
            _ => &[".mocharc"],
        };
        files
            .iter()
            .filter(|p| parent(p) == dir)
            .map(|p| file_name(p))
            .find(|n| prefixes.iter().any(|pre| n.starts_with(pre)))
            .map(|n| join(&dir, n))
    };
    // What `npm test` runs: the `test` script, through `npm run <name>` to the script it names.
    let mut resolved = script.clone();
    for _ in 0..3 {
        let next = resolved.as_deref().and_then(|s| {
            let w: Vec<&str> = s.split_whitespace().collect();
            match w.as_slice() {
                ["npm", "run" | "run-script", name, ..] => v["scripts"][*name].as_str(),
                _ => None,
            }
        });
        match next {
            Some(n) => resolved = Some(n.to_owned()),
            None => break,
        }
    }
    let node_test = resolved.as_deref().filter(|s| runs_node_test(s));
    let (kind, evidence) = if let Some(s) = node_test {
        // A script that chooses its own reporters keeps them: the tester cannot add its
        // machine-readable one beside them (see `machine_readable`), so it reads the console.
        if s.contains("--test-reporter") {
            (
                Kind::NpmScript,
                format!("{manifest} (scripts.test runs `node --test` with its own reporter)"),
            )
        } else {
            (
                Kind::NodeTest,
                format!("{manifest} (scripts.test: node --test)"),
            )
        }
    } else if let Some((name, kind)) = runners.iter().find(|(n, _)| declared(n)) {
        (*kind, format!("{manifest} (devDependencies: {name})"))
    } else if let Some(kind) = script.as_deref().and_then(from_script) {
        (kind, format!("{manifest} (scripts.test)"))
    } else if let Some((kind, cfg)) = runners
        .iter()
        .find_map(|(_, k)| configured(*k).map(|c| (*k, c)))
    {
        (kind, cfg)
    } else if script.is_some() {
        (Kind::NpmScript, format!("{manifest} (scripts.test)"))
    } else {
        return None;
    };
    let full = match Runner::of(kind) {
        Some(runner) => resolved
            .as_deref()
            .and_then(|s| runner.script(s))
            .unwrap_or_else(|| runner.bare()),
        None => "npm test".into(),
    };
    Some(Framework {
        kind,
        dir,
        evidence,
        full,
    })
}

/// A JavaScript runner the tester runs by its own command line, and what it knows of that
/// command line: which options take no value (any other takes the next word, unless it is
/// written `--name=value`), which choose the test files, which it replaces with its own, and
/// which mean watch mode.
struct Runner {
    /// The program (`node_modules/.bin/<name>`).
    name: &'static str,
    /// The words after the name that make a single run (`vitest run`).
    run: &'static [&'static str],
    /// Its subcommands that do something else than one run of the suite.
    elsewhere: &'static [&'static str],
    /// The options the tester adds after the script's.
    ours: &'static [&'static str],
    /// Options that take no value, besides every `--no-…`.
    flags: &'static [&'static str],
    /// Options that choose the test files; dropped, with their value, when other files are
    /// named.
    selection: &'static [&'static str],
    /// The script's options that give way to the tester's (`ours`, its reporter, no
    /// coverage), with their value unless they are flags or written `--name=value`.
    replaced: &'static [&'static str],
    /// Watch mode: a script that asks for it is not run as written.
    watch: &'static [&'static str],
}

/// Mocha, its options as its `run` command declares them, and Node's flags that a `mocha`
/// command passes on.
const MOCHA: Runner = Runner {
    name: "mocha",
    run: &[],
    elsewhere: &["init"],
    ours: &["--reporter", "spec"],
    flags: &[
        "-A",
        "--async-only",
        "--allow-uncaught",
        "-b",
        "--bail",
        "--check-leaks",
        "-c",
        "--color",
        "--colors",
        "-C",
        "--delay",
        "--diff",
        "--dry-run",
        "--exit",
        "--fail-hook-affected-tests",
        "--fail-zero",
        "--forbid-only",
        "--forbid-pending",
        "--full-trace",
        "-G",
        "--growl",
        "--inline-diffs",
        "-i",
        "--invert",
        "--list-interfaces",
        "--list-reporters",
        "-p",
        "--parallel",
        "--pass-on-failing-test-suite",
        "--posix-exit-codes",
        "--recursive",
        "-S",
        "--sort",
        "--enable-source-maps",
        "--expose-gc",
        "--inspect",
        "--inspect-brk",
        "--throw-deprecation",
        "--trace-deprecation",
        "--trace-warnings",
    ],
    selection: &["--spec"],
    replaced: &[
        "-R",
        "--reporter",
        "-O",
        "--reporter-option",
        "--reporter-options",
    ],
    watch: &["-w", "--watch"],
};

/// Jest.
const JEST: Runner = Runner {
    name: "jest",
    run: &[],
    elsewhere: &[],
    ours: &["--ci", "--no-coverage"],
    flags: &[
        "--ci",
        "--clearMocks",
        "--collectCoverage",
        "--colors",
        "--coverage",
        "--debug",
        "--detectLeaks",
        "--detectOpenHandles",
        "-e",
        "--errorOnDeprecated",
        "--expand",
        "--forceExit",
        "-i",
        "--injectGlobals",
        "--json",
        "--logHeapUsage",
        "--noStackTrace",
        "--passWithNoTests",
        "--randomize",
        "--resetMocks",
        "--restoreMocks",
        "--runInBand",
        "--runTestsByPath",
        "--silent",
        "--testLocationInResults",
        "-u",
        "--updateSnapshot",
        "--useStderr",
        "--verbose",
        "--watch",
        "--watchAll",
    ],
    selection: &["--testPathPattern", "--testPathPatterns"],
    replaced: &[
        "--ci",
        "--coverage",
        "--collectCoverage",
        "--no-coverage",
        "--json",
        "--outputFile",
    ],
    watch: &["--watch", "--watchAll"],
};

/// Vitest: `vitest run`, whatever the script says, since a bare `vitest` watches.
const VITEST: Runner = Runner {
    name: "vitest",
    run: &["run"],
    elsewhere: &["bench", "dev", "init", "list", "related", "watch"],
    ours: &[],
    flags: &[
        "--allowOnly",
        "--coverage",
        "--dom",
        "--fileParallelism",
        "--globals",
        "--hideSkippedTests",
        "--isolate",
        "--logHeapUsage",
        "--passWithNoTests",
        "--run",
        "--silent",
        "--standalone",
        "--typecheck",
        "-u",
        "--update",
        "-w",
        "--watch",
    ],
    selection: &[],
    replaced: &["--run", "--reporter", "--outputFile", "--coverage"],
    watch: &["-w", "--watch"],
};

impl Runner {
    /// The runner of a framework, for the JavaScript ones the tester runs itself.
    fn of(kind: Kind) -> Option<&'static Runner> {
        match kind {
            Kind::Mocha => Some(&MOCHA),
            Kind::Jest => Some(&JEST),
            Kind::Vitest => Some(&VITEST),
            _ => None,
        }
    }

    /// The runner alone, on its own defaults.
    fn bare(&self) -> String {
        let mut words = vec!["npx", "--no", "--", self.name];
        words.extend(self.run);
        words.extend(self.ours);
        words.join(" ")
    }

    /// Whether `word`, an option, takes no value.
    fn flag(&self, word: &str) -> bool {
        word.contains('=') || word.starts_with("--no-") || self.flags.contains(&word)
    }

    /// Whether `word` is one of `options`, or a dotted sub-option of one (`--coverage.enabled`,
    /// `--outputFile.junit`), in either spelling (`--name value`, `--name=value`).
    fn names(options: &[&str], word: &str) -> bool {
        let name = word.split_once('=').map_or(word, |(n, _)| n);
        options
            .iter()
            .any(|o| name == *o || name.strip_prefix(o).is_some_and(|r| r.starts_with('.')))
    }

    /// The project's own command for this runner, from the script `npm test` runs, when that
    /// script is one plain command of the runner (after `VAR=value` assignments): the files,
    /// `--require`s, `--config` and options it names are the suite (the runner alone may run
    /// other files, or none of the setup they need), so it runs as written through `npx`, the
    /// options the tester replaces taken out and its own added (Mocha's `--reporter spec`,
    /// which the tester's `machine_readable` swaps for its report; Jest's `--ci
    /// --no-coverage`; Vitest's `run`). `None` for another program first, shell operators or
    /// substitutions, a subcommand other than a single run, and watch mode: the bare runner
    /// then.
    fn script(&self, script: &str) -> Option<String> {
        let words: Vec<&str> = script.split_whitespace().collect();
        if words.iter().any(|w| shell_syntax(w)) {
            return None;
        }
        let assignment = |w: &str| {
            w.split_once('=').is_some_and(|(name, _)| {
                name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                    && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            })
        };
        let at = words.iter().position(|w| !assignment(w))?;
        if file_name(words[at]) != self.name {
            return None;
        }
        let mut out: Vec<&str> = words[..at].to_vec();
        out.extend(["npx", "--no", "--", self.name]);
        out.extend(self.run);
        let mut rest = words[at + 1..].iter().peekable();
        // `vitest run` is what the tester runs anyway.
        rest.next_if(|w| self.run.contains(*w));
        if rest.peek().is_some_and(|w| self.elsewhere.contains(*w)) {
            return None;
        }
        while let Some(w) = rest.next() {
            if Self::names(self.watch, w) {
                return None;
            }
            if Self::names(self.replaced, w) {
                if !self.flag(w) && rest.peek().is_some_and(|v| !v.starts_with('-')) {
                    rest.next();
                }
                continue;
            }
            out.push(w);
        }
        out.extend(self.ours);
        Some(out.join(" "))
    }

    /// The command that runs only `files`, from the suite's command `full`: every word up to
    /// the runner's (the assignments, `npx --no --`, `vitest run`), then its options with
    /// their values, in order — the script's `--require`s and `--config`, the tester's own —
    /// and `files` in place of the files, directories and patterns it named. `None` when
    /// `full` does not name the runner or is not one plain command.
    fn narrowed(&self, full: &str, files: &[String]) -> Option<String> {
        let words: Vec<&str> = full.split_whitespace().collect();
        if words.iter().any(|w| shell_syntax(w)) {
            return None;
        }
        let at = words.iter().position(|w| file_name(w) == self.name)?;
        let mut out: Vec<String> = words[..=at].iter().map(|w| w.to_string()).collect();
        let mut rest = words[at + 1..].iter().peekable();
        if let Some(w) = rest.next_if(|w| self.run.contains(*w)) {
            out.push(w.to_string());
        }
        while let Some(w) = rest.next() {
            if *w == "--" {
                // What follows is the runner's files (or a script's own arguments).
                break;
            }
            if !w.starts_with('-') {
                // A file, a directory or a pattern of the suite's.
                continue;
            }
            let value = !self.flag(w) && rest.peek().is_some_and(|v| !v.starts_with('-'));
            if Self::names(self.selection, w) {
                if value {
                    rest.next();
                }
                continue;
            }
            out.push(w.to_string());
            if let Some(v) = rest.next_if(|_| value) {
                out.push(v.to_string());
            }
        }
        out.extend(files.iter().map(|f| quote(f)));
        Some(out.join(" "))
    }
}

/// Whether a word of a command line is shell syntax rather than an argument: an operator, a
/// redirection, a substitution.
fn shell_syntax(word: &str) -> bool {
    word.contains(['&', '|', ';', '<', '>', '`', '$', '(', ')'])
}

/// The cargo-nextest configuration the Cargo project in `dir` keeps, if the tree has one:
/// `.config/nextest.toml` in `dir` or in a directory above it (a workspace's root, where
/// nextest reads it). Its path; a project with one runs its tests under nextest.
pub(super) fn nextest_config(code: &CodeTree, dir: &str) -> Option<String> {
    let mut at = dir;
    loop {
        let config = join(at, ".config/nextest.toml");
        if code
            .files()
            .binary_search_by(|f| f.path.as_str().cmp(&config))
            .is_ok()
        {
            return Some(config);
        }
        if at.is_empty() {
            return None;
        }
        at = parent(at);
    }
}

/// The framework to use: the shallowest candidate, or the analyst's choice among the
/// shallowest ones.
pub(super) fn detect(code: &CodeTree, hint: Option<&TestFramework>) -> Option<Framework> {
    let all = candidates(code);
    let first = all.first()?;
    let preferred = hint.and_then(|h| Kind::of_analyst_name(&h.name));
    let top = depth(&first.dir);
    all.iter()
        .find(|fw| Some(fw.kind) == preferred && depth(&fw.dir) == top)
        .or(Some(first))
        .cloned()
}

/// The test files that cover `changed` (paths relative to the root), for this framework,
/// relative to its directory: the changed files that are tests themselves, and the tests
/// named after each changed file that exist in the tree.
pub(super) fn affected(code: &CodeTree, fw: &Framework, changed: &[String]) -> Vec<String> {
    let files = own_files(code);
    let exists = |p: &str| files.binary_search(&p).is_ok();
    let relevant = |p: &str| match fw.kind {
        Kind::Pytest | Kind::Unittest => p.ends_with(".py"),
        Kind::Jest | Kind::Vitest | Kind::Mocha => {
            JS_EXTS.iter().any(|e| p.ends_with(&format!(".{e}")))
        }
        Kind::Cargo => parent(p).ends_with("tests") && p.ends_with(".rs"),
        Kind::Go => p.ends_with("_test.go"),
        Kind::NodeTest | Kind::NpmScript | Kind::Custom => false,
    };
    let mut out: BTreeSet<String> = BTreeSet::new();
    for path in changed {
        for cand in test_candidates(path, &fw.dir) {
            if exists(&cand) && relevant(&cand) {
                out.insert(cand);
            }
        }
    }
    out.into_iter()
        .filter_map(|p| {
            if fw.dir.is_empty() {
                Some(p)
            } else {
                p.strip_prefix(&format!("{}/", fw.dir)).map(str::to_owned)
            }
        })
        .collect()
}

/// Paths that may hold the tests of `path`, including `path` itself when it is a test.
fn test_candidates(path: &str, project: &str) -> Vec<String> {
    let dir = parent(path);
    let name = file_name(path);
    let mut out = Vec::new();
    let is_rust_test = name.ends_with(".rs") && file_name(dir) == "tests";
    if is_python_test(name) || is_js_test(path) || name.ends_with("_test.go") || is_rust_test {
        out.push(path.to_owned());
    }
    let Some((stem, ext)) = name.rsplit_once('.') else {
        return out;
    };
    let roots = [dir, project, ""];
    match ext {
        e if JS_EXTS.contains(&e) => {
            for x in ["ts", "tsx", "js", "jsx", "mjs"] {
                out.push(join(dir, &format!("{stem}.test.{x}")));
                out.push(join(dir, &format!("{stem}.spec.{x}")));
                for root in roots {
                    out.push(join(root, &format!("tests/{stem}.test.{x}")));
                    out.push(join(root, &format!("__tests__/{stem}.test.{x}")));
                    out.push(join(root, &format!("test/{stem}.test.{x}")));
                }
            }
        }
        "py" => {
            out.push(join(dir, &format!("test_{stem}.py")));
            out.push(join(dir, &format!("{stem}_test.py")));
            for root in roots {
                out.push(join(root, &format!("tests/test_{stem}.py")));
                out.push(join(root, &format!("test_{stem}.py")));
                out.push(join(root, &format!("test/test_{stem}.py")));
            }
        }
        "rs" => {
            let stem = match stem {
                "mod" => file_name(dir),
                s => s,
            };
            // The crate root: the directory above `src/`, else the project's.
            let krate = path
                .rsplit_once("/src/")
                .map(|(k, _)| k)
                .or(path.strip_prefix("src/").map(|_| ""))
                .unwrap_or(project);
            out.push(join(krate, &format!("tests/{stem}.rs")));
        }
        "go" => out.push(join(dir, &format!("{stem}_test.go"))),
        _ => {}
    }
    out
}

/// The command that runs only `files` (relative to the framework's directory), if the
/// framework can run a subset. A JavaScript runner's keeps what the suite's command `full`
/// passes it (see [`Runner::narrowed`]); where that is not one plain command of the runner,
/// the runner alone runs the files.
pub(super) fn affected_command(fw: &Framework, files: &[String]) -> Option<String> {
    if files.is_empty() {
        return None;
    }
    let list = || files.iter().map(|f| quote(f)).collect::<Vec<_>>().join(" ");
    Some(match fw.kind {
        Kind::Jest | Kind::Vitest | Kind::Mocha => {
            let runner = Runner::of(fw.kind)?;
            runner
                .narrowed(&fw.full, files)
                .unwrap_or_else(|| format!("{} {}", runner.bare(), list()))
        }
        Kind::Pytest => format!("python3 -m pytest -v --tb=short {}", list()),
        Kind::Unittest => format!("python3 -m unittest -v {}", list()),
        Kind::Cargo => {
            let mut c = "cargo test --no-fail-fast".to_owned();
            for f in files {
                let name = file_name(f).trim_end_matches(".rs");
                c.push_str(" --test ");
                c.push_str(&quote(name));
            }
            c
        }
        Kind::Go => {
            let dirs: BTreeSet<&str> = files.iter().map(|f| parent(f)).collect();
            let mut c = "go test -v".to_owned();
            for d in dirs {
                c.push(' ');
                c.push_str(&quote(&if d.is_empty() {
                    ".".to_owned()
                } else {
                    format!("./{d}")
                }));
            }
            c
        }
        // `npm test` runs the script's own selection; adding files to it could run them twice.
        Kind::NodeTest | Kind::NpmScript | Kind::Custom => return None,
    })
}
