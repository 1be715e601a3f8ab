//! Opt-in conformance against the REAL agent CLIs (Claude Code, Codex, Gemini CLI, Qwen Code
//! and OpenCode installed from npm, Aider from PyPI): `tests/conformance/run.sh` drives each
//! through `git tlv4 start` against a scripted model server on 127.0.0.1, inside a network
//! namespace of its own. Runs only with `TLV4_REAL_AGENTS=1`; otherwise it passes at once.
//! `TLV4_CONFORMANCE_CLIS` picks some of the CLIs (default: all six).

use std::path::Path;
use std::process::Command;

use crate::common::BIN;

#[test]
fn real_agent_clis_conform() {
    if std::env::var("TLV4_REAL_AGENTS").as_deref() != Ok("1") {
        eprintln!("real_agent_clis_conform: skipped (set TLV4_REAL_AGENTS=1 to run it)");
        return;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/run.sh");
    // The binary cargo built for this test run: the script needs no build of its own.
    let out = Command::new("bash")
        .arg(&script)
        .env("TLV4_BIN", BIN)
        .output()
        .expect("cannot run tests/conformance/run.sh");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Shown by `cargo test -- --nocapture`, and always when the test fails.
    println!("{stderr}{stdout}");
    assert!(
        out.status.success(),
        "tests/conformance/run.sh failed ({}):\n{stderr}{stdout}",
        out.status
    );
    assert!(stdout.contains("conformance summary:"), "{stdout}");
}
