//! Each preset against its fake CLI (`tests/fixtures/agents/fake-<cli>`): the fakes take the
//! same flags, read the prompt the same way and print the same shapes with the same exit
//! codes as the real programs, traps included.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use super::preset;
use crate::command::tests::{ctx, executor_input, failure, spec, writer_input};
use crate::command::{CliDriver, Driver, DriverOutput, Shell, TestCommand};
use crate::{Outcome, TaskInput};
use tlv4_core::process::RetryPolicy;

/// One run of preset `driver` against its fake in `mode`, in the fresh directory `work`.
fn run_in(
    work: &Path,
    driver: &str,
    mode: &str,
    input: &TaskInput,
    env: &[(&str, &str)],
    tweak: impl FnOnce(&mut tlv4_core::config::agents::AgentSpec),
) -> DriverOutput {
    run_shell(work, driver, mode, input, env, tweak, None)
}

/// [`run_in`], with the shell of a session that runs with shell on (`None`: without).
fn run_shell(
    work: &Path,
    driver: &str,
    mode: &str,
    input: &TaskInput,
    env: &[(&str, &str)],
    tweak: impl FnOnce(&mut tlv4_core::config::agents::AgentSpec),
    shell: Option<Shell>,
) -> DriverOutput {
    let log = work.join("log");
    let state = work.join("state");
    let mut vars = vec![
        ("FAKE_AGENT_MODE", mode),
        ("FAKE_AGENT_LOG", log.to_str().expect("UTF-8 temp path")),
        ("FAKE_AGENT_STATE", state.to_str().expect("UTF-8 temp path")),
    ];
    vars.extend_from_slice(env);
    let mut spec = spec(driver, &format!("fake-{driver}"), &vars);
    // The fakes keep their log and state in `work`, also for document tasks.
    spec.writes.push(work.display().to_string());
    tweak(&mut spec);
    let cli = preset(driver).expect("a preset");
    let driver = CliDriver::new("agent1", &spec, work, cli)
        .expect("a driver")
        .with_retry(RetryPolicy {
            tries: 3,
            backoff: Duration::from_millis(10),
        });
    let mut ctx = ctx(work);
    ctx.shell = shell;
    driver.run(input, &ctx).expect("the driver runs")
}

fn run(
    driver: &str,
    mode: &str,
    input: &TaskInput,
    env: &[(&str, &str)],
) -> (tempfile::TempDir, DriverOutput) {
    let work = tempfile::tempdir().expect("temp dir");
    let out = run_in(work.path(), driver, mode, input, env, |_| {});
    (work, out)
}

fn completed(out: &DriverOutput) {
    assert_eq!(
        out.output.outcome,
        Outcome::Completed,
        "{}",
        out.transcript.as_deref().unwrap_or("")
    );
    out.output
        .state_update
        .validate()
        .expect("a valid state update");
}

fn logged(work: &Path, what: &str, n: u32) -> Value {
    let text = std::fs::read_to_string(work.join("log").join(format!("{what}-{n}.json")))
        .unwrap_or_else(|e| panic!("{what}-{n}: {e}"));
    serde_json::from_str(&text).expect("JSON")
}

fn argv(work: &Path, n: u32) -> Vec<String> {
    serde_json::from_value(logged(work, "argv", n)).expect("a list of strings")
}

/// Document task: the document comes back in `files`. Code task: the fake's file is in the
/// working directory and listed in `files_modified`.
fn documents_and_code(driver: &str, env: &[(&str, &str)]) -> (DriverOutput, DriverOutput) {
    let (_d, writer) = writer_input();
    let (work, doc) = run(driver, "ok", &writer, env);
    completed(&doc);
    assert_eq!(doc.output.summary, format!("fake-{driver} did DRAFT-002"));
    assert_eq!(doc.output.files.len(), 1);
    assert_eq!(doc.output.files[0].0, "spec/requirements/_index.md");
    assert_eq!(
        doc.output.state_update.files_modified,
        vec!["spec/requirements/_index.md"]
    );
    let env_seen = logged(work.path(), "env", 1);
    let home = env_seen["HOME"].as_str().expect("HOME");
    assert!(home.contains("tlv4-agent-"), "isolated home: {home}");
    assert!(!Path::new(home).exists(), "the home is removed afterwards");
    let prompt = std::fs::read_to_string(work.path().join("log/prompt-1.txt")).unwrap();
    assert!(
        prompt.contains("You are the writer."),
        "the fake saw the whole prompt"
    );
    assert!(prompt.contains("# Result"));

    let (_d, executor) = executor_input();
    let (work, code) = run(driver, "ok", &executor, env);
    completed(&code);
    assert!(code.output.files.is_empty());
    assert_eq!(
        code.output.state_update.files_modified,
        vec!["fake-IMPL-001.txt"]
    );
    assert!(
        work.path().join("fake-IMPL-001.txt").exists(),
        "the change is in the working directory"
    );
    (doc, code)
}

/// Runs a code task in each mode and checks the failure message.
fn traps(driver: &str, env: &[(&str, &str)], cases: &[(&str, &[&str])]) {
    let (_d, executor) = executor_input();
    for (mode, wanted) in cases {
        let (_w, out) = run(driver, mode, &executor, env);
        let why = failure(&out);
        assert!(
            why.starts_with(&format!("agent `agent1` ({driver}): ")),
            "{mode}: {why}"
        );
        for w in *wanted {
            assert!(why.contains(w), "{driver} {mode}: `{w}` not in: {why}");
        }
        assert!(out.output.summary.starts_with("failed: "));
        assert!(out.transcript.is_some());
    }
}

#[test]
fn claude() {
    let (doc, _code) = documents_and_code("claude", &[]);
    assert_eq!(doc.usage.input_tokens, 1600);
    assert_eq!(doc.usage.output_tokens, 456);
    assert_eq!(doc.usage.cost_usd, Some(0.0123));
    assert_eq!(doc.usage.model.as_deref(), Some("claude-sonnet-4-5"));
    traps(
        "claude",
        &[],
        &[
            ("denied", &["refused 1 tool call(s)", "exited 0", "Write ("]),
            (
                "api_error",
                &["API status 400", "API Error: 400", "exit code 1"],
            ),
            ("max_turns", &["maximum number of turns"]),
            ("crash", &["no result object", "killed by signal 11"]),
            ("invalid_json", &["rejected 3 times", "not valid JSON"]),
        ],
    );
    // A rate limit is repeated; the prompt went on stdin, the tools in one argument.
    let (_d, executor) = executor_input();
    let work = tempfile::tempdir().unwrap();
    let out = run_in(
        work.path(),
        "claude",
        "rate_limit_once",
        &executor,
        &[],
        |s| {
            s.model = Some("opus-x".into());
        },
    );
    completed(&out);
    assert!(out.transcript.as_deref().unwrap().contains("(run 2)"));
    assert_eq!(out.usage.model.as_deref(), Some("opus-x"));
    let args = argv(work.path(), 2);
    assert!(
        args.contains(&"--tools=Read,Edit,Write,Glob,Grep".to_owned()),
        "{args:?}"
    );
    assert!(args.windows(2).any(|w| w == ["--model", "opus-x"]));
    assert!(
        !args.iter().any(|a| a.contains("# Result")),
        "no prompt in argv"
    );
    let env = logged(work.path(), "env", 2);
    let config = env["CLAUDE_CONFIG_DIR"].as_str().unwrap();
    assert!(config.starts_with(env["HOME"].as_str().unwrap()));
}

#[test]
fn claude_document_tasks_get_read_only_tools() {
    let (_d, writer) = writer_input();
    let work = tempfile::tempdir().unwrap();
    let out = run_in(work.path(), "claude", "ok", &writer, &[], |s| {
        s.url = Some("http://127.0.0.1:9/".into());
    });
    completed(&out);
    let args = argv(work.path(), 1);
    assert!(
        args.contains(&"--tools=Read,Glob,Grep".to_owned()),
        "{args:?}"
    );
    let env = logged(work.path(), "env", 1);
    assert_eq!(env["ANTHROPIC_BASE_URL"], "http://127.0.0.1:9/");
}

#[test]
fn codex() {
    let (doc, code) = documents_and_code("codex", &[]);
    assert_eq!(
        (doc.usage.input_tokens, doc.usage.output_tokens),
        (2000, 300)
    );
    assert_eq!(doc.usage.cost_usd, None);
    assert_eq!(code.usage.input_tokens, 2000);
    traps(
        "codex",
        &[],
        &[
            (
                "rejected_patch",
                &["sandbox rejected", "exited 0", "fake-IMPL-001.txt"],
            ),
            ("api_error", &["exit code 1", "unexpected status 400"]),
            ("crash", &["killed by signal 11"]),
        ],
    );
    // Codex never gives up on a dead endpoint: the wall clock does.
    let (_d, executor) = executor_input();
    let work = tempfile::tempdir().unwrap();
    let out = run_in(work.path(), "codex", "hang", &executor, &[], |s| {
        s.timeout = Some("1s".into());
    });
    let why = failure(&out);
    assert!(why.contains("did not finish within 1s"), "{why}");
    assert!(
        why.contains("Reconnecting"),
        "the last output is shown: {why}"
    );
    let args = argv(work.path(), 1);
    assert!(
        args.windows(2).any(|w| w == ["-s", "workspace-write"]),
        "{args:?}"
    );
    assert_eq!(
        args.last().map(String::as_str),
        Some("-"),
        "prompt on stdin"
    );
    assert!(args.contains(&"web_search=\"disabled\"".to_owned()));
}

#[test]
fn codex_documents_run_read_only() {
    let (_d, writer) = writer_input();
    let work = tempfile::tempdir().unwrap();
    // The fake rejects the patch in the read-only sandbox; a document task does not mind.
    let out = run_in(work.path(), "codex", "rejected_patch", &writer, &[], |_| {});
    completed(&out);
    assert!(
        argv(work.path(), 1)
            .windows(2)
            .any(|w| w == ["-s", "read-only"])
    );
}

#[test]
fn gemini() {
    let key = [("GEMINI_API_KEY", "x")];
    let (doc, _code) = documents_and_code("gemini", &key);
    assert_eq!(
        (doc.usage.input_tokens, doc.usage.output_tokens),
        (1500, 400)
    );
    assert_eq!(doc.usage.model.as_deref(), Some("gemini-2.5-pro"));
    traps(
        "gemini",
        &key,
        &[
            (
                "denied",
                &["1 of Gemini's tool calls were rejected", "exited 0"],
            ),
            ("api_error", &["HTTP 400 (exit 144)", "model not found"]),
        ],
    );
    // No key: exit 41, explained.
    traps(
        "gemini",
        &[],
        &[("ok", &["authentication is not set up (exit 41)"])],
    );
    // A custom endpoint works because settings.json selects the auth type.
    let (_d, writer) = writer_input();
    let work = tempfile::tempdir().unwrap();
    let out = run_in(
        work.path(),
        "gemini",
        "rate_limit_once",
        &writer,
        &key,
        |s| {
            s.url = Some("http://127.0.0.1:9".into());
        },
    );
    completed(&out);
    assert!(out.transcript.as_deref().unwrap().contains("(run 2)"));
    assert_eq!(
        logged(work.path(), "env", 2)["GOOGLE_GEMINI_BASE_URL"],
        "http://127.0.0.1:9"
    );
}

#[test]
fn long_prompts_never_go_on_the_command_line() {
    let (_d, mut writer) = writer_input();
    writer.folder.insert(
        "wisdom/learnings.md".into(),
        format!(
            "# Learnings\n\n{}",
            "- a lesson worth keeping\n".repeat(6000)
        )
        .into_bytes(),
    );
    for (driver, env) in [
        ("gemini", &[("GEMINI_API_KEY", "x")][..]),
        ("qwen", &[][..]),
        ("opencode", &[][..]),
    ] {
        let work = tempfile::tempdir().unwrap();
        let out = run_in(work.path(), driver, "ok", &writer, env, |_| {});
        completed(&out);
        assert!(out.prompt.len() > 100 * 1024);
        let args = argv(work.path(), 1);
        let longest = args.iter().map(String::len).max().unwrap_or(0);
        assert!(longest < 1024, "{driver}: an argument of {longest} bytes");
        let seen = std::fs::read_to_string(work.path().join("log/prompt-1.txt")).unwrap();
        assert!(
            seen.contains(&out.prompt),
            "{driver}: the fake saw the whole prompt"
        );
    }
}

#[test]
fn qwen() {
    let (doc, _code) = documents_and_code("qwen", &[]);
    assert_eq!(
        (doc.usage.input_tokens, doc.usage.output_tokens),
        (1800, 350)
    );
    assert_eq!(doc.usage.model.as_deref(), Some("qwen3-coder"));
    traps(
        "qwen",
        &[],
        &[
            (
                "api_error",
                &["API error although it exited 0", "Connection error"],
            ),
            ("denied", &["refused 1 tool call(s)", "write_file"]),
            ("crash", &["killed by signal 11"]),
        ],
    );
    let (_d, writer) = writer_input();
    let work = tempfile::tempdir().unwrap();
    let out = run_in(work.path(), "qwen", "rate_limit_once", &writer, &[], |s| {
        s.url = Some("http://127.0.0.1:9/v1".into());
        s.model = Some("local".into());
    });
    completed(&out);
    assert!(out.transcript.as_deref().unwrap().contains("(run 2)"));
    let env = logged(work.path(), "env", 2);
    assert_eq!(env["OPENAI_BASE_URL"], "http://127.0.0.1:9/v1");
    assert_eq!(env["OPENAI_MODEL"], "local");
}

#[test]
fn opencode() {
    let (doc, code) = documents_and_code("opencode", &[]);
    assert_eq!(
        (doc.usage.input_tokens, doc.usage.output_tokens),
        (1150, 150)
    );
    assert_eq!(doc.usage.cost_usd, Some(0.003));
    assert_eq!(code.usage.input_tokens, 2150);
    assert!((code.usage.cost_usd.unwrap() - 0.004).abs() < 1e-9);
    traps(
        "opencode",
        &[],
        &[
            ("api_error", &["HTTP 400", "model not found"]),
            ("denied", &["refused permission for write", "exited 0"]),
        ],
    );
    let (_d, writer) = writer_input();
    let work = tempfile::tempdir().unwrap();
    let out = run_in(
        work.path(),
        "opencode",
        "rate_limit_once",
        &writer,
        &[],
        |s| {
            s.url = Some("http://127.0.0.1:9/v1".into());
            s.model = Some("local".into());
        },
    );
    completed(&out);
    let args = argv(work.path(), 2);
    assert!(
        args.windows(2).any(|w| w == ["-m", "tlv4/local"]),
        "{args:?}"
    );
    let env = logged(work.path(), "env", 2);
    let config: Value =
        serde_json::from_str(env["OPENCODE_CONFIG_CONTENT"].as_str().unwrap()).unwrap();
    assert_eq!(config["permission"]["edit"], "deny");
    assert_eq!(
        config["provider"]["tlv4"]["options"]["baseURL"],
        "http://127.0.0.1:9/v1"
    );
    // OpenCode takes its directory from PWD: it must be the run's, never the caller's.
    assert_eq!(env["PWD"], env["cwd"], "{env}");
}

#[test]
fn aider() {
    let (doc, code) = documents_and_code("aider", &[]);
    assert_eq!(
        (doc.usage.input_tokens, doc.usage.output_tokens),
        (2300, 512)
    );
    assert_eq!(doc.usage.cost_usd, Some(0.01));
    assert_eq!(code.usage.output_tokens, 512);
    traps(
        "aider",
        &[],
        &[
            (
                "rejected_patch",
                &["could not apply the model's edits", "exited 0"],
            ),
            (
                "api_error",
                &["API error although it exited 0", "BadRequestError"],
            ),
            ("invalid_json", &["rejected 3 times"]),
        ],
    );
    let (_d, writer) = writer_input();
    let work = tempfile::tempdir().unwrap();
    let out = run_in(work.path(), "aider", "rate_limit_once", &writer, &[], |s| {
        s.url = Some("http://127.0.0.1:9/v1".into());
        s.model = Some("local".into());
    });
    completed(&out);
    let args = argv(work.path(), 2);
    assert!(
        args.windows(2).any(|w| w == ["--model", "openai/local"]),
        "{args:?}"
    );
    assert!(args.contains(&"--dry-run".to_owned()) && args.contains(&"--no-git".to_owned()));
    // A format that leaves the result block alone; no repo map, and the chat history out of
    // the working directory, so neither lands in the snapshot; no wrapping of the answer.
    assert!(
        args.windows(2).any(|w| w == ["--edit-format", "diff"]),
        "{args:?}"
    );
    assert!(
        args.windows(2).any(|w| w == ["--map-tokens", "0"]),
        "{args:?}"
    );
    let history = args
        .windows(2)
        .find(|w| w[0] == "--chat-history-file")
        .map(|w| w[1].clone())
        .expect("a chat history file");
    assert!(!Path::new(&history).starts_with(work.path()), "{history}");
    assert_eq!(logged(work.path(), "env", 2)["COLUMNS"], "100000");
    // An error Aider retried itself does not fail a run that then completed.
    let (_d, writer) = writer_input();
    let (_w, out) = run("aider", "api_error_retried", &writer, &[]);
    completed(&out);
}

/// The test command of the shell tests: it leaves a file behind and says how it went.
const TESTS: &str = "echo ran > tests-ran.txt && echo '3 passed, 0 failed'";

fn shell() -> Shell {
    Shell {
        tests: Some(TestCommand {
            command: TESTS.into(),
            from: ".tlv4.toml [tests] command".into(),
        }),
        prepared: true,
    }
}

/// A code task of preset `driver` with shell on: the arguments that give its CLI the shell
/// (checked by `shell_args`), the fake's run of the test command the prompt names (or that
/// Aider is given), and a prompt that tells the executor about it. The same task without a
/// shell, and a document task with one, get none of it.
fn shell_on_and_off(
    driver: &str,
    env: &[(&str, &str)],
    shell_args: impl Fn(&[String], &Value) -> bool,
) {
    let (_d, executor) = executor_input();
    let work = tempfile::tempdir().unwrap();
    let out = run_shell(
        work.path(),
        driver,
        "ok",
        &executor,
        env,
        |_| {},
        Some(shell()),
    );
    completed(&out);
    let args = argv(work.path(), 1);
    let seen = logged(work.path(), "env", 1);
    assert!(
        shell_args(&args, &seen),
        "{driver}: no shell in {args:?} {seen}"
    );
    assert!(
        work.path().join("tests-ran.txt").exists(),
        "{driver}: the test command did not run"
    );
    let code = std::fs::read_to_string(work.path().join("fake-IMPL-001.txt")).unwrap();
    assert!(
        code.contains(&format!("ran `{TESTS}`: exit 0")) && code.contains("3 passed"),
        "{driver}: {code}"
    );
    // Aider's answer comes before its test run: it cannot say it tested.
    assert!(
        driver == "aider" || out.output.state_update.verification.starts_with("tested"),
        "{driver}: {:?}",
        out.output.state_update
    );
    let prompt = std::fs::read_to_string(work.path().join("log/prompt-1.txt")).unwrap();
    assert!(prompt.contains("# Running commands"), "{driver}");
    assert!(
        prompt.contains(&format!(
            "- Test command: `{TESTS}` (from .tlv4.toml [tests] command)"
        )),
        "{driver}"
    );
    assert!(prompt.contains("- Environment: prepared."), "{driver}");
    let offered = if driver == "aider" {
        "You have no shell, but the project's test command runs after your edits"
    } else {
        "You have a shell in your working directory"
    };
    assert!(prompt.contains(offered), "{driver}");

    // Without a shell: today's tool set, and nothing runs.
    let work = tempfile::tempdir().unwrap();
    let out = run_shell(work.path(), driver, "ok", &executor, env, |_| {}, None);
    completed(&out);
    assert!(
        !shell_args(&argv(work.path(), 1), &logged(work.path(), "env", 1)),
        "{driver}: a shell without the session's shell on"
    );
    assert!(!work.path().join("tests-ran.txt").exists(), "{driver}");
    let prompt = std::fs::read_to_string(work.path().join("log/prompt-1.txt")).unwrap();
    assert!(!prompt.contains("# Running commands"), "{driver}");

    // A document task stays read-only, shell on or not.
    let (_d, writer) = writer_input();
    let work = tempfile::tempdir().unwrap();
    let out = run_shell(
        work.path(),
        driver,
        "ok",
        &writer,
        env,
        |_| {},
        Some(shell()),
    );
    completed(&out);
    assert!(
        !shell_args(&argv(work.path(), 1), &logged(work.path(), "env", 1)),
        "{driver}: a document task got a shell"
    );
    let prompt = std::fs::read_to_string(work.path().join("log/prompt-1.txt")).unwrap();
    assert!(!prompt.contains("# Running commands"), "{driver}");
}

fn pair(args: &[String], a: &str, b: &str) -> bool {
    args.windows(2).any(|w| w == [a, b])
}

#[test]
fn claude_shell() {
    shell_on_and_off("claude", &[], |args, env| {
        env["IS_SANDBOX"] == "1"
            && args.contains(&"--tools=Read,Edit,Write,Glob,Grep,Bash".to_owned())
            && pair(args, "--permission-mode", "bypassPermissions")
            && pair(args, "--settings", r#"{"sandbox":{"enabled":false}}"#)
            && pair(args, "--output-format", "stream-json")
            && args.contains(&"--verbose".to_owned())
    });
}

#[test]
fn codex_shell() {
    shell_on_and_off("codex", &[], |args, _| {
        pair(args, "-s", "danger-full-access")
    });
}

#[test]
fn gemini_shell() {
    shell_on_and_off("gemini", &[("GEMINI_API_KEY", "x")], |args, _| {
        pair(args, "--approval-mode", "yolo")
    });
}

#[test]
fn qwen_shell() {
    shell_on_and_off("qwen", &[], |args, _| pair(args, "--approval-mode", "yolo"));
}

#[test]
fn opencode_shell() {
    shell_on_and_off("opencode", &[], |_, env| {
        let config: Value =
            serde_json::from_str(env["OPENCODE_CONFIG_CONTENT"].as_str().unwrap()).unwrap();
        config["permission"]["bash"] == "allow"
    });
}

#[test]
fn aider_shell() {
    // Aider has no shell tool: it runs the tool's test command after its edits, and its
    // prompt says so.
    shell_on_and_off("aider", &[], |args, _| {
        pair(args, "--test-cmd", TESTS) && args.contains(&"--auto-test".to_owned())
    });
}
