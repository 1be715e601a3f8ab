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
    // A custom command says only its exit status: that is all there is to go by.
    let custom = evaluate(
        Kind::Custom,
        Scope::Full,
        ran("make check", 0, "ok\n"),
        T,
        None,
    );
    assert_eq!(custom.pass_rate, Some(100.0));

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
    // And the custom command's pass says how it was judged.
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
    assert_eq!(v.verdict, "pass");
    assert!(v.summary.contains("by exit status"), "{}", v.summary);
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
    let (cmd, env, file) = machine_readable(Kind::Pytest, "python3 -m pytest -v --tb=short", dir);
    assert_eq!(cmd, "python3 -m pytest -v --tb=short");
    let (k, v) = &env[0];
    assert_eq!(k, "PYTEST_ADDOPTS");
    assert!(v.ends_with("--junitxml=/tmp/r/results"), "{v}");
    let (path, form) = file.unwrap();
    assert_eq!(path, dir.join("results"));
    assert_eq!(form("<x/>".into()), parse::Report::JUnit("<x/>".into()));
    let (cmd, _, file) = machine_readable(Kind::Go, "go test -v ./...", dir);
    assert_eq!(
        (cmd.as_str(), file.is_none()),
        ("go test -json -v ./...", true)
    );
    let (cmd, _, file) = machine_readable(Kind::Jest, "npx --no -- jest --ci --no-coverage", dir);
    assert_eq!(
        cmd,
        "npx --no -- jest --ci --no-coverage --json --outputFile=/tmp/r/results"
    );
    assert!(file.is_some());
    let (cmd, env, file) = machine_readable(Kind::Unittest, "python3 -m unittest -v", dir);
    assert_eq!(
        (cmd.as_str(), env.len(), file.is_none()),
        ("python3 -m unittest -v", 0, true)
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
    assert_eq!((last.passed, last.failed), (1, 1));
}
