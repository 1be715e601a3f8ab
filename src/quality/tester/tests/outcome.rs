//! What a run's result says: no test is not a pass, a command that cannot start is an
//! environment error, and machine-readable results are preferred to the console.

use super::*;

fn ran(command: &str, code: i32, output: &str) -> exec::Ran {
    exec::Ran {
        command: command.into(),
        exit_code: Some(code),
        output: output.into(),
        ..exec::Ran::default()
    }
}

const T: Duration = Duration::from_secs(600);

#[test]
fn zero_tests_are_no_tests_never_a_pass() {
    // go with no test file exits 0 and prints no count.
    let go = evaluate(
        Kind::Go,
        Scope::Full,
        ran(
            "go test -v ./...",
            0,
            "?   \texample.com/calc\t[no test files]\n",
        ),
        T,
        None,
    );
    assert_eq!(go.pass_rate, None);
    assert!(!go.meets_target());
    // Jest with no test exits 1: not a failing suite to fix either.
    let jest = evaluate(
        Kind::Jest,
        Scope::Full,
        ran(
            "npx --no -- jest --ci",
            1,
            "No tests found, exiting with code 1\nRun with `--passWithNoTests` to exit with code 0\n",
        ),
        T,
        None,
    );
    assert_eq!((jest.pass_rate, jest.failures.len()), (None, 0));
    // pytest printed nothing countable and exited 0.
    let py = evaluate(
        Kind::Pytest,
        Scope::Full,
        ran("python3 -m pytest", 0, ""),
        T,
        None,
    );
    assert_eq!(py.pass_rate, None);
    // A custom command that prints no count has counted no test: its exit status is no
    // count (this was a pass "by exit status").
    let custom = evaluate(
        Kind::Custom,
        Scope::Full,
        ran("make check", 0, "ok\n"),
        T,
        None,
    );
    assert_eq!(custom.pass_rate, None);

    let r = repo(&[("go.mod", "module example.com/calc\n")], &[]);
    let inp = input("TEST-001", r.code.clone(), &[]);
    let setup = Setup {
        kind: Kind::Go,
        dir: String::new(),
        evidence: "go.mod".into(),
        full: "go test -v ./...".into(),
        source: "the code tree (detected)".into(),
        fallback: None,
    };
    let result = conclude(&inp, 1, &setup, Kind::Go, vec![go], Vec::new(), Vec::new());
    let v = result.verdict.clone().unwrap();
    assert_eq!((v.verdict.as_str(), v.score), ("no_tests", None));
    assert!(
        v.summary
            .starts_with("no tests ran: `go test -v ./...` ran no test")
            && v.summary.contains("not a pass"),
        "{}",
        v.summary
    );
    assert!(result.fix.is_none());
    assert!(result.warnings.iter().any(|w| w.contains("untested")));
    let rec: Record = serde_json::from_str(file(&result, "artifacts/test-runs/1.json")).unwrap();
    assert_eq!((rec.verdict.as_str(), rec.pass_rate), ("no_tests", None));
    // And the custom command's run says that nothing was counted.
    let result = conclude(
        &inp,
        1,
        &setup,
        Kind::Custom,
        vec![custom],
        Vec::new(),
        Vec::new(),
    );
    let v = result.verdict.unwrap();
    assert_eq!(v.verdict, "no_tests");
    assert!(
        v.summary
            .starts_with("no tests counted: `make check` exited 0 and printed no test count"),
        "{}",
        v.summary
    );
}

#[test]
fn a_command_that_cannot_start_is_an_environment_error() {
    let rustup = ran(
        "cargo test --no-fail-fast",
        1,
        "error: rustup could not choose a version of cargo to run, because one wasn't specified explicitly, and no default is configured.\nhelp: run 'rustup default stable' to download the latest stable release of Rust and set it as your default toolchain.\n",
    );
    let why = unavailable(&rustup).expect("no toolchain is the environment's fault");
    assert!(why.contains("rustup could not choose"), "{why}");
    let result = environment_error(&rustup, &why);
    let Outcome::Failed(reason) = &result.output.outcome else {
        panic!("{:?}", result.output.outcome);
    };
    assert!(
        reason.starts_with(
            "environment error: the test command `cargo test --no-fail-fast` could not start"
        ),
        "{reason}"
    );
    assert!(
        reason.contains("its output:\nerror: rustup could not choose"),
        "{reason}"
    );
    assert!(result.fix.is_none());
    for (code, output) in [
        (
            1,
            "error: toolchain 'nightly-x86_64-unknown-linux-gnu' is not installed\n",
        ),
        (126, "sh: 1: ./run-tests: Permission denied\n"),
        (1, "npm error Missing script: \"test\"\n"),
    ] {
        assert!(
            unavailable(&ran("x", code, output)).is_some(),
            "{code}: {output}"
        );
    }
    // A failing build is the code's fault: a fix can help.
    let build = ran(
        "cargo test",
        101,
        "error[E0425]: cannot find value `x` in this scope\n --> src/lib.rs:1:1\nerror: could not compile `ct` (lib test) due to 1 previous error\n",
    );
    assert_eq!(unavailable(&build), None);
}

#[test]
fn runners_are_asked_for_machine_readable_results() {
    let dir = Path::new("/tmp/r");
    let (cmd, env, file) = machine_readable(
        Kind::Pytest,
        "python3 -m pytest -v --tb=short",
        dir,
        CargoRunner::Libtest,
    );
    assert_eq!(cmd, "python3 -m pytest -v --tb=short");
    let (k, v) = &env[0];
    assert_eq!(k, "PYTEST_ADDOPTS");
    assert!(v.ends_with("--junitxml=/tmp/r/results"), "{v}");
    let (path, form) = file.unwrap();
    assert_eq!(path, dir.join("results"));
    assert_eq!(form("<x/>".into()), parse::Report::JUnit("<x/>".into()));
    let (cmd, _, file) = machine_readable(Kind::Go, "go test -v ./...", dir, CargoRunner::Libtest);
    assert_eq!(
        (cmd.as_str(), file.is_none()),
        ("go test -json -v ./...", true)
    );
    let (cmd, _, file) = machine_readable(
        Kind::Jest,
        "npx --no -- jest --ci --no-coverage",
        dir,
        CargoRunner::Libtest,
    );
    assert_eq!(
        cmd,
        "npx --no -- jest --ci --no-coverage --json --outputFile=/tmp/r/results"
    );
    assert!(file.is_some());
    let (cmd, env, file) = machine_readable(
        Kind::Unittest,
        "python3 -m unittest -v",
        dir,
        CargoRunner::Libtest,
    );
    assert_eq!(
        (cmd.as_str(), env.len(), file.is_none()),
        ("python3 -m unittest -v", 0, true)
    );
}

#[test]
fn node_vitest_and_mocha_are_asked_for_junit_beside_their_console() {
    let dir = Path::new("/tmp/r");
    let junit = |f: Option<ReportFile>| {
        let (path, form) = f.expect("a report file");
        assert_eq!(path, dir.join("results"));
        assert_eq!(form("<x/>".into()), parse::Report::JUnit("<x/>".into()));
    };
    // Node's runner: through NODE_OPTIONS, so `npm test` and any script keep their words.
    for command in ["npm test", "npm ci && npm test", "node --test test/"] {
        let (cmd, env, file) = machine_readable(Kind::NodeTest, command, dir, CargoRunner::Libtest);
        assert_eq!(cmd, command);
        let (k, v) = &env[0];
        assert_eq!(k, "NODE_OPTIONS");
        assert!(
            v.ends_with("--test-reporter=spec --test-reporter-destination=stdout --test-reporter=junit --test-reporter-destination=/tmp/r/results"),
            "{v}"
        );
        junit(file);
    }
    // A command that picks its reporters keeps them, and is read from its console.
    let (cmd, env, file) = machine_readable(
        Kind::NodeTest,
        "node --test --test-reporter=dot",
        dir,
        CargoRunner::Libtest,
    );
    assert_eq!(
        (cmd.as_str(), env.len(), file.is_none()),
        ("node --test --test-reporter=dot", 0, true)
    );
    assert_eq!(
        node_option_quote("/tmp/a b/results"),
        r#""/tmp/a b/results""#
    );

    let (cmd, _, file) = machine_readable(
        Kind::Vitest,
        "npx --no -- vitest run",
        dir,
        CargoRunner::Libtest,
    );
    assert_eq!(
        cmd,
        "npx --no -- vitest run --reporter=default --reporter=junit --outputFile.junit=/tmp/r/results"
    );
    junit(file);
    let (cmd, _, file) = machine_readable(
        Kind::Vitest,
        "npx vitest run --reporter=verbose",
        dir,
        CargoRunner::Libtest,
    );
    assert_eq!(
        (cmd.as_str(), file.is_none()),
        ("npx vitest run --reporter=verbose", true)
    );

    let (cmd, _, file) = machine_readable(
        Kind::Mocha,
        "npx --no -- mocha --reporter spec test/a.test.js",
        dir,
        CargoRunner::Libtest,
    );
    assert_eq!(
        cmd,
        "npx --no -- mocha test/a.test.js --reporter xunit --reporter-option output=/tmp/r/results"
    );
    junit(file);
    let (cmd, _, file) = machine_readable(
        Kind::Mocha,
        "npx mocha --reporter dot",
        dir,
        CargoRunner::Libtest,
    );
    assert_eq!(
        (cmd.as_str(), file.is_none()),
        ("npx mocha --reporter dot", true)
    );
    // `npm test` running some runner: its script is not ours to change.
    let (cmd, env, file) = machine_readable(Kind::NpmScript, "npm test", dir, CargoRunner::Libtest);
    assert_eq!(
        (cmd.as_str(), env.len(), file.is_none()),
        ("npm test", 0, true)
    );
}

#[test]
fn the_detected_cargo_test_runs_under_nextest_with_the_doc_tests() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("results");
    let config = dir.path().join("nextest.toml");
    let full = nextest_command("cargo test --no-fail-fast", dir.path(), &report).unwrap();
    assert_eq!(
        full,
        format!(
            "cargo nextest run --no-fail-fast --profile git-tlv4 --tool-config-file git-tlv4:{}; s=$?; [ $s -eq 101 ] || cargo test --doc --no-fail-fast || s=$?; exit $s",
            config.display()
        )
    );
    let written: toml::Value = toml::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    assert_eq!(
        written["profile"]["git-tlv4"]["junit"]["path"].as_str(),
        Some(report.to_str().unwrap())
    );
    assert_eq!(
        written["profile"]["git-tlv4"]["fail-fast"].as_bool(),
        Some(false)
    );
    // The affected tests: their targets, no doc tests.
    let affected = nextest_command(
        "cargo test --no-fail-fast --test lexer --test parser",
        dir.path(),
        &report,
    )
    .unwrap();
    assert!(
        affected.starts_with(
            "cargo nextest run --no-fail-fast --test lexer --test parser --profile git-tlv4 "
        ) && !affected.contains("--doc"),
        "{affected}"
    );
    // Under libtest, or for a configured command, cargo runs as given.
    let (cmd, env, file) = machine_readable(
        Kind::Cargo,
        "cargo test --no-fail-fast",
        dir.path(),
        CargoRunner::Libtest,
    );
    assert_eq!(
        (cmd.as_str(), env.len(), file.is_none()),
        ("cargo test --no-fail-fast", 0, true)
    );
    let (cmd, _, file) = machine_readable(
        Kind::Cargo,
        "cargo test --no-fail-fast",
        dir.path(),
        CargoRunner::Nextest,
    );
    assert!(cmd.starts_with("cargo nextest run "), "{cmd}");
    assert!(file.is_some());
    for configured in [
        "cargo test --workspace",
        "cargo nextest run",
        "cargo test --no-fail-fastx",
    ] {
        assert_eq!(
            nextest_command(configured, dir.path(), &report),
            None,
            "{configured}"
        );
    }
    let (cmd, env, file) = machine_readable(
        Kind::Cargo,
        "cargo test --workspace",
        dir.path(),
        CargoRunner::Nextest,
    );
    assert_eq!(
        (cmd.as_str(), env.len(), file.is_none()),
        ("cargo test --workspace", 0, true)
    );
}

/// nextest runs only for a project that keeps a `.config/nextest.toml` (in its directory
/// or a workspace root above it) and only where it is installed; every other Cargo project
/// runs `cargo test`, whatever is installed.
#[test]
fn cargo_nextest_runs_only_for_a_project_that_configures_it() {
    let manifest = ("Cargo.toml", "[package]\nname = \"x\"\n");
    let (_dir, plain) = code_tree(&[manifest, ("src/lib.rs", "")]);
    assert_eq!(detect::nextest_config(&plain, ""), None);
    let (runner, why) = CargoRunner::choose(&plain, "");
    assert_eq!(runner, CargoRunner::Libtest, "{why}");
    assert!(why.contains("no `.config/nextest.toml`"), "{why}");

    let (_dir, configured) = code_tree(&[
        (
            ".config/nextest.toml",
            "[profile.default]\nslow-timeout = \"60s\"\n",
        ),
        manifest,
        ("src/lib.rs", ""),
    ]);
    assert_eq!(
        detect::nextest_config(&configured, "").as_deref(),
        Some(".config/nextest.toml")
    );
    let (runner, why) = CargoRunner::choose(&configured, "");
    let want = if nextest_installed() {
        CargoRunner::Nextest
    } else {
        CargoRunner::Libtest
    };
    assert_eq!(runner, want, "{why}");
    assert!(why.contains("`.config/nextest.toml`"), "{why}");

    // A member crate reads the workspace root's; a configuration elsewhere is not its own.
    let (_dir, workspace) = code_tree(&[
        (".config/nextest.toml", ""),
        ("Cargo.toml", "[workspace]\nmembers = [\"crates/a\"]\n"),
        ("crates/a/Cargo.toml", "[package]\nname = \"a\"\n"),
        ("crates/a/src/lib.rs", ""),
        ("other/.config/nextest.toml", ""),
    ]);
    assert_eq!(
        detect::nextest_config(&workspace, "crates/a").as_deref(),
        Some(".config/nextest.toml")
    );
    let (_dir, elsewhere) = code_tree(&[
        manifest,
        ("src/lib.rs", ""),
        ("other/.config/nextest.toml", ""),
    ]);
    assert_eq!(detect::nextest_config(&elsewhere, ""), None);
}

/// What evaluate makes of real runs' results: Node's absolute file name shortened to the
/// repository path; a compile error a failure of unknown counts with the compiler's text;
/// a crate without a library has no doc tests, which is not a failure.
#[test]
fn real_captures_through_evaluate() {
    let node = ran(
        "npm test",
        1,
        include_str!("../parse/testdata/node-spec.txt"),
    );
    let report = parse::Report::JUnit(include_str!("../parse/testdata/node-junit.xml").into());
    let r = evaluate(Kind::NodeTest, Scope::Full, node, T, Some(&report));
    assert_eq!(
        (r.counts.passed, r.counts.failed, r.counts.skipped),
        (3, 3, 2)
    );
    assert_eq!(r.failures[0].name, "test/broken.test.js");
    assert_eq!(r.pass_rate, Some(50.0));

    let compile = ran(
        "cargo test --no-fail-fast",
        101,
        include_str!("../parse/testdata/cargo-compile-error.txt"),
    );
    let r = evaluate(Kind::Cargo, Scope::Full, compile, T, None);
    assert!(!r.counted && !r.counts_known());
    assert_eq!(r.counts, parse::Counts::default());
    assert_eq!(r.pass_rate, Some(0.0));
    assert_eq!(r.failures.len(), 1, "{:?}", r.failures);
    assert_eq!(r.failures[0].severity, Severity::Critical);
    assert!(r.failures[0].detail.contains("beta/src/lib.rs:2:9"));
    assert_eq!(
        r.describe_counts(),
        "counts unknown: `cargo test --no-fail-fast` exited 101 and printed no test count"
    );

    let junit = r#"<testsuites><testsuite name="app"><testcase classname="app" name="tests::ok"/></testsuite></testsuites>"#;
    let mut bins = ran(
        "cargo nextest run --no-fail-fast --profile git-tlv4 --tool-config-file git-tlv4:/tmp/r/nextest.toml; s=$?; [ $s -eq 101 ] || cargo test --doc --no-fail-fast || s=$?; exit $s",
        101,
        "     Summary [   0.003s] 1 test run: 1 passed, 0 skipped
    Finished `test` profile [unoptimized + debuginfo] target(s) in 0.01s
error: no library targets found in package `app`
",
    );
    let r = evaluate(
        Kind::Cargo,
        Scope::Full,
        bins.clone(),
        T,
        Some(&parse::Report::JUnit(junit.into())),
    );
    assert_eq!(
        (r.pass_rate, r.failures.len()),
        (Some(100.0), 0),
        "{:?}",
        r.failures
    );
    // The same error from a command of the user's own is a failure.
    bins.command = "cargo test --no-fail-fast".into();
    let r = evaluate(Kind::Cargo, Scope::Full, bins, T, None);
    assert!(r.pass_rate.is_some_and(|p| p < 100.0));
    let console = "✖ test/a.test.js (1ms)\n    at f (/rustc/abc/library/std/src/lib.rs:3:1)\n";
    assert_eq!(
        relative_paths("/tmp/x/tlv4-test-1/TEST-001/test/a.test.js", console),
        "test/a.test.js"
    );
    assert_eq!(
        relative_paths(
            "at g (/tmp/x/TEST-001/test/a.test.js:6:37)\nat f (/rustc/abc/library/std/src/lib.rs:3:1)",
            console
        ),
        "at g (test/a.test.js:6:37)\nat f (/rustc/abc/library/std/src/lib.rs:3:1)"
    );
    assert_eq!(relative_paths("/etc/other", console), "/etc/other");
    assert_eq!(
        relative_paths("math > adds/subtracts", console),
        "math > adds/subtracts"
    );
}

#[test]
fn a_junit_report_wins_over_the_console_and_a_bad_one_falls_back() {
    let xml = r#"<testsuites><testsuite><testcase classname="t" name="a"/><testcase classname="t" name="b"><failure message="boom">assert False</failure></testcase></testsuite></testsuites>"#;
    // The console says something else (a plugin rewrote it): the report counts.
    let console = "collected 2 items\n\n==== 2 passed in 0.01s ====\n";
    let r = evaluate(
        Kind::Pytest,
        Scope::Full,
        ran("python3 -m pytest", 1, console),
        T,
        Some(&parse::Report::JUnit(xml.into())),
    );
    assert_eq!((r.counts.passed, r.counts.failed), (1, 1));
    assert_eq!(r.source, parse::Source::JUnit);
    assert_eq!(r.failures[0].name, "t::b");
    let r = evaluate(
        Kind::Pytest,
        Scope::Full,
        ran("python3 -m pytest", 0, console),
        T,
        Some(&parse::Report::JUnit("<truncated".into())),
    );
    assert_eq!((r.counts.passed, r.source), (2, parse::Source::Console));
}

/// With a real pytest (not installed from the network here: skipped with a reason when it
/// is absent), the counts come from its JUnit XML.
#[test]
fn real_pytest_results_come_from_junit_xml() {
    let has = std::process::Command::new("python3")
        .args(["-m", "pytest", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has {
        eprintln!("skipped: `python3 -m pytest` is not installed on this machine");
        return;
    }
    let r = repo(
        &[("pytest.ini", "[pytest]\n")],
        &[("calc.py", CALC), ("tests/test_calc.py", TEST_HALF)],
    );
    let inp = input("TEST-001", r.code.clone(), &[]);
    let result = run_task(&inp, &r.ctx).unwrap();
    let rec: Record = serde_json::from_str(file(&result, "artifacts/test-runs/1.json")).unwrap();
    let last = rec.runs.last().unwrap();
    assert_eq!(last.results_from, "JUnit XML", "{rec:?}");
    assert_eq!((last.passed, last.failed), (Some(1), Some(1)));
}
