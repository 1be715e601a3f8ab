//! Limits and bounds against the fake CLIs: each fake under a usage limit
//! (`FAKE_LIMIT_UNTIL`/`FAKE_LIMIT_FILE`) prints its CLI's words and exits as the CLI does,
//! and the driver answers [`Error::Limited`] with the reset; a run over its token bound is
//! stopped and answers [`Error::OverBound`]; Claude Code gets the dollar bound as its own.

use std::path::Path;
use std::time::{Duration, Instant};

use super::preset;
use crate::command::tests::{ctx, executor_input, spec, writer_input};
use crate::command::{CliDriver, Driver, DriverOutput, RunContext};
use crate::meter::Meter;
use crate::{Outcome, TaskInput};
use tlv4_core::error::{Error, Result};
use tlv4_core::process::RetryPolicy;

/// Now, in unix seconds.
fn now_s() -> u64 {
    tlv4_core::clock::now_ms() / 1000
}

/// One run of preset `cli` against its fake with `env`, in `work`, with `ctx` tweaked.
fn run(
    work: &Path,
    cli: &str,
    input: &TaskInput,
    env: &[(&str, &str)],
    tweak: impl FnOnce(&mut RunContext),
) -> Result<DriverOutput> {
    let log = work.join("log");
    let mut vars = vec![
        ("FAKE_AGENT_LOG", log.to_str().unwrap()),
        ("GEMINI_API_KEY", "x"),
    ];
    vars.extend_from_slice(env);
    let mut s = spec(cli, &format!("fake-{cli}"), &vars);
    s.writes.push(work.display().to_string());
    let driver = CliDriver::new("agent1", &s, work, preset(cli).unwrap())
        .unwrap()
        .with_retry(RetryPolicy {
            tries: 3,
            backoff: Duration::from_millis(10),
        });
    let mut c = ctx(work);
    tweak(&mut c);
    driver.run(input, &c)
}

/// How many times the fake ran.
fn runs(work: &Path) -> usize {
    std::fs::read_dir(work.join("log"))
        .map(|d| {
            d.filter(|e| {
                e.as_ref()
                    .is_ok_and(|e| e.file_name().to_string_lossy().starts_with("argv-"))
            })
            .count()
        })
        .unwrap_or(0)
}

fn limited(r: Result<DriverOutput>) -> (Option<u64>, String) {
    match r {
        Err(Error::Limited {
            agent,
            until_ms,
            detail,
        }) => {
            assert_eq!(agent, "agent1");
            (until_ms, detail)
        }
        Err(e) => panic!("expected a limit, got the error {e}"),
        Ok(out) => panic!(
            "expected a limit, got {:?}\n{}",
            out.output.outcome,
            out.transcript.unwrap_or_default()
        ),
    }
}

/// Whether a reset is the one expected.
type Reset<'a> = dyn Fn(Option<u64>) -> bool + 'a;

#[test]
fn each_cli_under_a_usage_limit_is_limited_until_its_reset() {
    let (_d, input) = writer_input();
    let until = now_s() + 2 * 3600 + 600;
    let until_s = until.to_string();
    let env = [("FAKE_LIMIT_UNTIL", until_s.as_str())];
    let exact = Some(until * 1000);
    // (cli, reset as the CLI words it, the words recognised)
    let cases: [(&str, &Reset<'_>, &str); 5] = [
        ("claude", &|u| u == exact, "usage limit reached"),
        // Codex rounds its wait up to the minute.
        (
            "codex",
            &|u: Option<u64>| u.is_some_and(|u| u >= until * 1000 && u <= (until + 62) * 1000),
            "You've hit your usage limit",
        ),
        (
            "gemini",
            &|u: Option<u64>| u.is_some_and(|u| u.abs_diff(until * 1000) < 5000),
            "exceeded your current quota",
        ),
        // Qwen and OpenCode name no reset.
        ("qwen", &|u| u.is_none(), "Free allocated quota exceeded"),
        ("opencode", &|u| u.is_none(), "exceeded your current quota"),
    ];
    for (cli, reset, words) in cases {
        let work = tempfile::tempdir().unwrap();
        let (until_ms, detail) = limited(run(work.path(), cli, &input, &env, |_| {}));
        assert!(reset(until_ms), "{cli}: {until_ms:?} for {until}");
        assert!(detail.contains(words), "{cli}: {detail}");
        // A usage limit is not repeated.
        assert_eq!(runs(work.path()), 1, "{cli}");
    }
    // Claude's clock-time wording: the next such minute in UTC.
    let work = tempfile::tempdir().unwrap();
    let (until_ms, detail) = limited(run(
        work.path(),
        "claude",
        &input,
        &[
            ("FAKE_LIMIT_UNTIL", &until_s),
            ("FAKE_LIMIT_STYLE", "clock"),
        ],
        |_| {},
    ));
    assert!(
        detail.starts_with("You've hit your limit · resets "),
        "{detail}"
    );
    let u = until_ms.unwrap();
    assert!(
        u >= until * 1000 && u <= (until + 60) * 1000,
        "{u} for {until}"
    );
}

#[test]
fn after_the_reset_the_fake_works_again() {
    let (_d, input) = writer_input();
    let work = tempfile::tempdir().unwrap();
    let file = work.path().join("limit");
    std::fs::write(&file, (now_s() + 3600).to_string()).unwrap();
    let env = [("FAKE_LIMIT_FILE", file.to_str().unwrap())];
    limited(run(work.path(), "codex", &input, &env, |_| {}));
    // The reset moved into the past: the same agent works.
    std::fs::write(&file, (now_s() - 1).to_string()).unwrap();
    let out = run(work.path(), "codex", &input, &env, |_| {}).unwrap();
    assert_eq!(out.output.outcome, Outcome::Completed);
    // No file, no limit.
    std::fs::remove_file(&file).unwrap();
    let out = run(work.path(), "codex", &input, &env, |_| {}).unwrap();
    assert_eq!(out.output.outcome, Outcome::Completed);
}

#[test]
fn a_rate_limit_that_does_not_pass_is_a_limit_without_a_reset() {
    // The fake's 429 every time (no FAKE_AGENT_STATE: every run is its first).
    let (_d, input) = writer_input();
    let work = tempfile::tempdir().unwrap();
    let (until_ms, detail) = limited(run(
        work.path(),
        "claude",
        &input,
        &[("FAKE_AGENT_MODE", "rate_limit_once")],
        |_| {},
    ));
    assert_eq!(until_ms, None);
    assert!(detail.contains("429"), "{detail}");
    // Repeated first, as a passing failure.
    assert_eq!(runs(work.path()), 3);
    // Other API errors stay failures of the task.
    let work = tempfile::tempdir().unwrap();
    let out = run(
        work.path(),
        "claude",
        &input,
        &[("FAKE_AGENT_MODE", "api_error")],
        |_| {},
    )
    .unwrap();
    assert!(matches!(out.output.outcome, Outcome::Failed(_)));
}

#[test]
fn a_claude_run_over_its_token_bound_is_stopped() {
    let (_d, input) = executor_input();
    let work = tempfile::tempdir().unwrap();
    let began = Instant::now();
    let r = run(
        work.path(),
        "claude",
        &input,
        &[("FAKE_AGENT_MODE", "long_stream")],
        |c| c.meter = Meter::bounded(Some(250)),
    );
    match r {
        Err(Error::OverBound { agent, detail }) => {
            assert_eq!(agent, "agent1");
            assert!(detail.ends_with("tokens counted, bound 250"), "{detail}");
        }
        Err(e) => panic!("{e}"),
        Ok(out) => panic!("{:?}", out.transcript),
    }
    // Stopped after its third message (of twenty, 0.2 s apart), not at its end.
    assert!(
        began.elapsed() < Duration::from_secs(3),
        "{:?}",
        began.elapsed()
    );
    // It was asked for stream-json, which reports the tokens as they come.
    let argv = std::fs::read_to_string(work.path().join("log/argv-1.json")).unwrap();
    assert!(
        argv.contains("stream-json") && argv.contains("--verbose"),
        "{argv}"
    );
    // Stopped before it wrote the code task's file.
    assert!(!work.path().join("fake-IMPL-001.txt").exists());

    // Under the bound, the same run completes.
    let work = tempfile::tempdir().unwrap();
    let out = run(
        work.path(),
        "claude",
        &input,
        &[
            ("FAKE_AGENT_MODE", "long_stream"),
            ("FAKE_STREAM_TOKENS", "1"),
        ],
        |c| c.meter = Meter::bounded(Some(100_000)),
    )
    .unwrap();
    assert_eq!(
        out.output.outcome,
        Outcome::Completed,
        "{:?}",
        out.transcript
    );
}

#[test]
fn claude_gets_the_dollar_bound_and_stops_at_it() {
    let (_d, input) = writer_input();
    // The fake's run costs $0.0123: a bound of a cent stops it.
    let work = tempfile::tempdir().unwrap();
    match run(work.path(), "claude", &input, &[], |c| {
        c.max_usd = Some(0.01)
    }) {
        Err(Error::OverBound { detail, .. }) => {
            assert!(detail.contains("$0.01"), "{detail}");
        }
        Err(e) => panic!("{e}"),
        Ok(out) => panic!("{:?}", out.transcript),
    }
    let argv = std::fs::read_to_string(work.path().join("log/argv-1.json")).unwrap();
    assert!(argv.contains("\"--max-budget-usd\", \"0.01\""), "{argv}");
    // A bound it stays under: the run completes.
    let work = tempfile::tempdir().unwrap();
    let out = run(work.path(), "claude", &input, &[], |c| {
        c.max_usd = Some(2.5)
    })
    .unwrap();
    assert_eq!(out.output.outcome, Outcome::Completed);
    let argv = std::fs::read_to_string(work.path().join("log/argv-1.json")).unwrap();
    assert!(argv.contains("\"--max-budget-usd\", \"2.5\""), "{argv}");
    // Without one, no flag.
    let work = tempfile::tempdir().unwrap();
    run(work.path(), "claude", &input, &[], |_| {}).unwrap();
    let argv = std::fs::read_to_string(work.path().join("log/argv-1.json")).unwrap();
    assert!(!argv.contains("--max-budget-usd"), "{argv}");
}

/// An answer that talks about limits (a task about them) is no limit: only where a failed
/// run put its error is looked at.
#[test]
fn an_answer_about_limits_is_no_limit() {
    let words = "Handled `Claude AI usage limit reached|1735689600` and \\\"You've hit your usage \
                 limit. Try again in 2 hours\\\" and 429 quota exceeded.";
    let out = |code: i32, stdout: String| tlv4_core::process::Output {
        code: Some(code),
        signal: None,
        stdout,
        stderr: String::new(),
        dropped: 0,
        timed_out: false,
        seconds: 1.0,
    };
    let answers = [
        (
            "claude",
            format!(
                r#"{{"type":"result","subtype":"success","is_error":false,"result":"{words}"}}"#
            ),
        ),
        (
            "codex",
            format!(
                "{}\n{}\n",
                format_args!(
                    r#"{{"type":"item.completed","item":{{"id":"i","type":"agent_message","text":"{words}"}}}}"#
                ),
                r#"{"type":"turn.completed","usage":{"input_tokens":1,"output_tokens":1}}"#
            ),
        ),
        (
            "gemini",
            format!(r#"{{"session_id":"s","response":"{words}"}}"#),
        ),
        (
            "qwen",
            format!(
                r#"[{{"type":"result","subtype":"success","is_error":false,"result":"{words}"}}]"#
            ),
        ),
        (
            "opencode",
            format!(r#"{{"type":"text","part":{{"text":"{words}"}}}}"#),
        ),
    ];
    for (cli, stdout) in answers {
        let p = preset(cli).unwrap();
        assert_eq!(p.failure_text(&out(0, stdout.clone())), None, "{cli}");
        // The same words as the error of a failed run are a limit.
        if cli == "qwen" {
            let failed = stdout.replace(
                "Handled",
                "[API Error: 429 Free allocated quota exceeded.] Handled",
            );
            let text = p.failure_text(&out(0, failed)).unwrap();
            assert!(crate::limits::recognise(cli, &text).is_some(), "{text}");
        }
    }
}
