//! How the tester runs a suite: the options that make each runner write a machine-readable
//! report beside its console, the project's own local runner found first, `cargo nextest`
//! when it is installed, and the setup a checkout needs before its tests run.

use super::detect::{self, Framework, Kind};
use super::parse;
use crate::agents::TaskInput;
use tlv4_specdoc::discovery::Discovery;
use tlv4_specdoc::spec::{DISCOVERY, PLAN};

/// The command as run, variables to add, and the machine-readable report it writes (a
/// file in `dir`, and how to read it), for the runners that write one:
///
/// - pytest writes JUnit XML (`--junitxml` through `PYTEST_ADDOPTS`, so the command stays as
///   it is, and a command that runs pytest underneath writes it too);
/// - Node's runner its `junit` reporter's XML, beside the `spec` reporter on stdout, through
///   `NODE_OPTIONS` for the same reasons: `npm test -- <flags>` would append them to the
///   script, where `node --test test/` takes them for file names. A command that chooses its
///   own reporters keeps them (Node wants one destination per reporter; adding ours to a
///   bare `--test-reporter=dot` would stop the run);
/// - Jest its JSON report (`--json --outputFile`);
/// - Vitest its `junit` reporter's XML beside the `default` one on the console;
/// - Mocha its `xunit` reporter's XML: Mocha runs one reporter only, so the console then
///   shows what the tests print and errors, no longer the spec tree;
/// - `go test` JSON events on stdout (`-json`);
/// - the detected `cargo test`, under [`CargoRunner::Nextest`]: `cargo nextest run` with a
///   JUnit report (see [`nextest_command`]); under libtest it runs as given, read from
///   libtest's own `test result:` lines.
///
/// Anything else, and a command that already names its reporter, runs as given and is read
/// from its console.
pub(super) type ReportFile = (std::path::PathBuf, fn(String) -> parse::Report);
pub(super) fn machine_readable(
    kind: Kind,
    command: &str,
    dir: &std::path::Path,
    cargo: CargoRunner,
) -> (String, Vec<(String, String)>, Option<ReportFile>) {
    let file = dir.join("results");
    let path = file.to_string_lossy().into_owned();
    let same = |k: Kind| Kind::of_command(command) == Some(k);
    match kind {
        Kind::Pytest => {
            let mut opts = std::env::var("PYTEST_ADDOPTS").unwrap_or_default();
            if !opts.is_empty() {
                opts.push(' ');
            }
            opts.push_str(&format!("--junitxml={}", detect::quote(&path)));
            (
                command.to_owned(),
                vec![("PYTEST_ADDOPTS".into(), opts)],
                Some((file, parse::Report::JUnit)),
            )
        }
        Kind::NodeTest if !command.contains("--test-reporter") => {
            let mut opts = std::env::var("NODE_OPTIONS").unwrap_or_default();
            if !opts.is_empty() {
                opts.push(' ');
            }
            opts.push_str(&format!(
                "--test-reporter=spec --test-reporter-destination=stdout --test-reporter=junit --test-reporter-destination={}",
                node_option_quote(&path)
            ));
            (
                command.to_owned(),
                vec![("NODE_OPTIONS".into(), opts)],
                Some((file, parse::Report::JUnit)),
            )
        }
        Kind::Jest
            if same(Kind::Jest)
                && !command.contains("--json")
                && !command.contains("--outputFile") =>
        {
            (
                format!("{command} --json --outputFile={}", detect::quote(&path)),
                Vec::new(),
                Some((file, parse::Report::JestJson)),
            )
        }
        Kind::Vitest
            if same(Kind::Vitest)
                && !command.contains("--reporter")
                && !command.contains("--outputFile") =>
        {
            (
                format!(
                    "{command} --reporter=default --reporter=junit --outputFile.junit={}",
                    detect::quote(&path)
                ),
                Vec::new(),
                Some((file, parse::Report::JUnit)),
            )
        }
        Kind::Mocha if same(Kind::Mocha) => {
            // The detected command names the spec reporter: the report takes its place.
            let bare = command.replace(" --reporter spec", "");
            if bare.contains("--reporter") || bare.contains(" -R ") {
                return (command.to_owned(), Vec::new(), None);
            }
            (
                format!(
                    "{bare} --reporter xunit --reporter-option {}",
                    detect::quote(&format!("output={path}"))
                ),
                Vec::new(),
                Some((file, parse::Report::JUnit)),
            )
        }
        Kind::Go if command.starts_with("go test ") && !command.contains("-json") => (
            format!("go test -json {}", &command["go test ".len()..]),
            Vec::new(),
            None,
        ),
        Kind::Cargo if cargo == CargoRunner::Nextest => {
            match nextest_command(command, dir, &file) {
                Some(run) => (
                    run,
                    // A run of no test is read from the report's zero, not nextest's exit 4.
                    vec![("NEXTEST_NO_TESTS".into(), "pass".into())],
                    Some((file, parse::Report::JUnit)),
                ),
                None => (command.to_owned(), Vec::new(), None),
            }
        }
        _ => (command.to_owned(), Vec::new(), None),
    }
}

/// A value in `NODE_OPTIONS`, which Node splits at spaces unless double-quoted.
pub(super) fn node_option_quote(value: &str) -> String {
    if value.contains(|c: char| c.is_whitespace() || c == '"' || c == '\\') {
        format!("\"{}\"", value.replace('\\', "\\\\").replace('"', "\\\""))
    } else {
        value.to_owned()
    }
}

/// `command` with the `npx --no -- <runner>` that the detected JavaScript commands start with
/// (see `detect`) replaced by the checkout's own `node_modules/.bin/<runner>`, looked for from
/// `cwd` up to the checkout's `root` as npx looks for it, and that `.bin` directory, which
/// npx puts first on the runner's PATH (for the programs its tests start). npx is a program
/// of its own that loads npm to find that same file: some 0.3 s of every run, where
/// body-parser's whole suite takes 1.6 s. `None` when the command does not start a runner
/// through npx, or the checkout has no such file (npx then runs, and says what is missing).
pub(super) fn local_runner(
    command: &str,
    cwd: &std::path::Path,
    root: &std::path::Path,
) -> Option<(String, std::path::PathBuf)> {
    const NPX: &str = "npx --no -- ";
    let at = command
        .match_indices(NPX)
        .map(|(i, _)| i)
        .find(|&i| i == 0 || command[..i].ends_with(' '))?;
    let rest = &command[at + NPX.len()..];
    let name = rest.split(' ').next()?;
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        return None;
    }
    let mut dir = cwd;
    let mut up = String::new();
    loop {
        let bin = dir.join("node_modules").join(".bin");
        if bin.join(name).is_file() {
            let run = format!(
                "{}{up}node_modules/.bin/{name}{}",
                &command[..at],
                &rest[name.len()..]
            );
            return Some((run, bin));
        }
        if dir == root {
            return None;
        }
        dir = dir.parent().filter(|d| d.starts_with(root))?;
        up.push_str("../");
    }
}

/// `dir` put first on the PATH `env` sets, unless it is on it already.
pub(super) fn first_on_path(
    env: &mut tlv4_core::environment::isolate::RunEnv,
    dir: &std::path::Path,
) {
    let inherited = || std::env::var("PATH").unwrap_or_default();
    let at = env.set.iter().position(|(k, _)| k == "PATH");
    let current = at.map_or_else(inherited, |i| env.set[i].1.clone());
    if std::env::split_paths(&current).any(|p| p == dir) {
        return;
    }
    let path = std::env::join_paths(
        std::iter::once(dir.to_path_buf()).chain(std::env::split_paths(&current)),
    )
    .map(|p| p.to_string_lossy().into_owned())
    .unwrap_or(current);
    match at {
        Some(i) => env.set[i].1 = path,
        None => env.set.push(("PATH".to_owned(), path)),
    }
}

/// The nextest profile the tester adds, as a tool configuration layered under the
/// repository's own `.config/nextest.toml` (whose settings it inherits through `default`).
pub(super) const NEXTEST_PROFILE: &str = "git-tlv4";

/// Which runner the detected `cargo test` runs under.
///
/// cargo-nextest runs each test in a process of its own, where libtest runs a binary's tests
/// as threads of one process. A suite written for one may not hold under the other: walkdir's
/// tests name their temporary directories from a per-process counter, and under nextest
/// every process starts it at zero, so the directories collide and tests that pass under
/// `cargo test` fail at random. So nextest runs only where the project says it uses it: a
/// `.config/nextest.toml` in the commit under test (see [`detect::nextest_config`]), and
/// cargo-nextest installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CargoRunner {
    /// `cargo test` as detected, read from libtest's `test result:` lines.
    Libtest,
    /// `cargo nextest run` (see [`nextest_command`]).
    Nextest,
}

impl CargoRunner {
    /// The runner for the Cargo project in `dir` of `code`, and the decision that says why.
    pub(super) fn choose(code: &crate::agents::CodeTree, dir: &str) -> (CargoRunner, String) {
        match detect::nextest_config(code, dir) {
            Some(config) if nextest_installed() => (
                CargoRunner::Nextest,
                format!("cargo-nextest runs the tests: the project configures it in `{config}`"),
            ),
            Some(config) => (
                CargoRunner::Libtest,
                format!(
                    "cargo test runs the tests: the project configures cargo-nextest in `{config}`, which is not installed here"
                ),
            ),
            None => (
                CargoRunner::Libtest,
                "cargo test runs the tests, read from libtest's summaries: the project has no `.config/nextest.toml`".to_owned(),
            ),
        }
    }
}

/// `cargo nextest run` for the detected `cargo test` (the whole suite, or the affected
/// `--test` targets), writing nextest's JUnit report to `report` through a profile in a tool
/// configuration file in `dir`; `None` for any other command (a configured one runs as
/// written) or when the file cannot be written.
///
/// nextest's JUnit report is read rather than its closing `Summary … N tests run: N passed,
/// M failed` line: the report is the format nextest documents for machines (one
/// `<testcase>` per test, each failure with its output), where the console is written for
/// people and changes between versions (counters, `(1 flaky)`-style notes, new outcomes).
/// The `Summary` line stays the fallback when no report was written.
///
/// nextest runs no doc tests, and dropping them would turn a suite with a failing doc test
/// into a passing one: the whole suite's command runs `cargo test --doc` after nextest
/// (unless nextest's build failed, exit 101: the compile errors are already there), and its
/// libtest summaries are added to the report's counts. A package with no library has no doc
/// tests; `cargo test --doc` says so with an error, which is not a failure (see
/// [`doc_tests_without_library`]).
pub(super) fn nextest_command(
    command: &str,
    dir: &std::path::Path,
    report: &std::path::Path,
) -> Option<String> {
    let detected = "cargo test --no-fail-fast";
    let targets = command.strip_prefix(detected)?;
    if !(targets.is_empty() || targets.starts_with(" --test ")) {
        return None;
    }
    let config = dir.join("nextest.toml");
    let profile = format!(
        "[profile.{NEXTEST_PROFILE}]\nfail-fast = false\n\n[profile.{NEXTEST_PROFILE}.junit]\npath = {}\n",
        toml::Value::String(report.to_string_lossy().into_owned())
    );
    std::fs::write(&config, profile).ok()?;
    let nextest = format!(
        "cargo nextest run --no-fail-fast{targets} --profile {NEXTEST_PROFILE} --tool-config-file {}",
        detect::quote(&format!("{NEXTEST_PROFILE}:{}", config.display()))
    );
    Some(if targets.is_empty() {
        format!(
            "{nextest}; s=$?; [ $s -eq 101 ] || cargo test --doc --no-fail-fast || s=$?; exit $s"
        )
    } else {
        nextest
    })
}

/// Whether `cargo nextest` would run: `cargo-nextest` on the `PATH` or in Cargo's `bin`
/// directory, where cargo looks for its subcommands.
pub(super) fn nextest_installed() -> bool {
    let mut dirs: Vec<std::path::PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".cargo")));
    dirs.extend(cargo_home.map(|h| h.join("bin")));
    dirs.iter().any(|d| d.join("cargo-nextest").is_file())
}

/// The command to run, where it came from, and what to fall back to.
#[derive(Debug, Clone)]
pub(super) struct Setup {
    pub(super) kind: Kind,
    pub(super) dir: String,
    pub(super) evidence: String,
    pub(super) full: String,
    pub(super) source: String,
    /// The detected framework, when the command came from elsewhere and may not run.
    pub(super) fallback: Option<Framework>,
}

/// The command to run: the one detected in the code tree. Agents never choose a command the
/// tool runs: a `test_command` in `plan.json` (the planner's) or in the discovery context
/// (the analyst's) is used only where it equals the detected one; otherwise it is named in
/// `notes` and not run.
pub(super) fn setup(
    input: &TaskInput,
    configured: Option<&str>,
    notes: &mut Vec<String>,
) -> Option<Setup> {
    let discovery = input
        .folder
        .get(DISCOVERY)
        .and_then(|b| Discovery::parse(b).ok());
    let hint = discovery.as_ref().and_then(Discovery::test_framework);
    let detected = detect::detect(&input.code, hint);
    let plan_command = input
        .folder_text(PLAN)
        .and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok())
        .and_then(|v| v["test_command"].as_str().map(str::trim).map(str::to_owned))
        .filter(|c| !c.is_empty());
    let agents: Vec<(String, String)> = plan_command
        .map(|c| (format!("{PLAN} test_command"), c))
        .into_iter()
        .chain(
            hint.filter(|h| !h.command.is_empty())
                .map(|h| (format!("{DISCOVERY} test_framework"), h.command.clone())),
        )
        .collect();
    if let Some(cmd) = configured {
        for (from, c) in &agents {
            if c != cmd {
                notes.push(format!(
                    "not run: `{c}` from {from} (an agent's choice; the configured test command runs)"
                ));
            }
        }
        let kind = Kind::of_command(cmd).unwrap_or(Kind::Custom);
        return Some(Setup {
            kind,
            dir: String::new(),
            evidence: format!("{} [tests] command", tlv4_core::config::FILE),
            full: cmd.to_owned(),
            source: format!("{} [tests] command", tlv4_core::config::FILE),
            fallback: None,
        });
    }
    let mut source = "the code tree (detected)".to_owned();
    for (from, cmd) in &agents {
        match &detected {
            Some(d) if d.full == *cmd => {
                source = format!("the code tree (detected; {from} names the same)");
                break;
            }
            _ => notes.push(format!(
                "not run: `{cmd}` from {from} (an agent's choice; only the detected test command runs)"
            )),
        }
    }
    let d = detected?;
    Some(Setup {
        kind: d.kind,
        dir: d.dir.clone(),
        evidence: d.evidence.clone(),
        full: d.full.clone(),
        source,
        fallback: None,
    })
}
