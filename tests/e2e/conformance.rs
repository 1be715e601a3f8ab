//! Opt-in runs on real programs, never in CI:
//!
//! - `TLV4_REAL_AGENTS=1`: conformance against the REAL agent CLIs (Claude Code, Codex,
//!   Gemini CLI, Qwen Code and OpenCode installed from npm, Aider from PyPI):
//!   `tests/conformance/run.sh` drives each through `git tlv4 start` against a scripted model
//!   server on 127.0.0.1 that plays every role, inside a network namespace of its own.
//!   `TLV4_CONFORMANCE_CLIS` picks some of the CLIs (default: all six),
//!   `TLV4_CONFORMANCE_SCENARIOS` some of the runs.
//! - `TLV4_REAL_MODEL=1`: a real model (Gemma 3 270M behind llama.cpp's `llama-server`) runs
//!   `spec-only` and `impl-only` on the `openai` driver: `tests/realmodel/run.sh`.
//!
//! Without the variable each test passes at once.

use std::path::Path;
use std::process::Command;

use crate::common::BIN;

/// Runs `script` with the binary cargo built for this test run (the script needs no build of
/// its own) and checks that it succeeded and printed `summary`.
fn run_script(script: &str, summary: &str) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join(script);
    let out = Command::new("bash")
        .arg(&script)
        .env("TLV4_BIN", BIN)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Shown by `cargo test -- --nocapture`, and always when the test fails.
    println!("{stderr}{stdout}");
    assert!(
        out.status.success(),
        "{} failed ({}):\n{stderr}{stdout}",
        script.display(),
        out.status
    );
    assert!(stdout.contains(summary), "{stdout}");
}

#[test]
fn real_agent_clis_conform() {
    if std::env::var("TLV4_REAL_AGENTS").as_deref() != Ok("1") {
        eprintln!("real_agent_clis_conform: skipped (set TLV4_REAL_AGENTS=1 to run it)");
        return;
    }
    run_script("tests/conformance/run.sh", "conformance summary:");
}

#[test]
fn a_real_model_runs_the_pipelines() {
    if std::env::var("TLV4_REAL_MODEL").as_deref() != Ok("1") {
        eprintln!("a_real_model_runs_the_pipelines: skipped (set TLV4_REAL_MODEL=1 to run it)");
        return;
    }
    run_script("tests/realmodel/run.sh", "real model summary:");
}
