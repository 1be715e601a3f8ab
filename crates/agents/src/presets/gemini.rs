//! Gemini CLI: `gemini -o json -p …`. A prompt that fits on the command line goes in `-p`;
//! a longer one goes on stdin, which Gemini puts before the `-p` text.
//!
//! Code tasks use `--approval-mode auto_edit` (edits without asking, no shell), document
//! tasks the default mode. A code task of a session that runs with shell on (the kernel's
//! sandbox is full) uses `yolo`, the one mode that offers `run_shell_command` headless
//! (`--allowed-tools` is deprecated for the policy engine): it also lets the web tools run
//! unasked, which adds nothing the shell could not do, and both stay inside the sandbox's
//! network rules. Gemini's own sandbox (`-s`, a container) stays off: ours is the box. The home is the run's own; for an isolated one git-tlv4 writes
//! `~/.gemini/settings.json` choosing API-key auth (without it a custom `url` makes Gemini
//! exit 41), and the workspace is trusted through `GEMINI_CLI_TRUST_WORKSPACE` (else exit
//! 55). `url` becomes `GOOGLE_GEMINI_BASE_URL`; the key comes from `GEMINI_API_KEY`.
//!
//! Success: exit 0, a JSON object with a `response` and no `error`, and for code tasks no
//! rejected tool call. On failure the error JSON is on stderr and the exit code is the HTTP
//! status modulo 256 (400 → 144), which the message turns back into the status. HTTP 429 is
//! repeated after a pause. Tokens come from `stats.models.*.tokens`; Gemini reports no cost.

use serde_json::Value;

use super::{LEAD, fits_argv, str_at, u64_at};
use crate::command::{Call, Cli, Launch, Reply, Usage};
use tlv4_core::error::Result;
use tlv4_core::process::Output;
use tlv4_core::text::excerpt;

/// The Gemini CLI preset.
pub(super) struct Gemini;

const SETTINGS: &str = r#"{"security":{"auth":{"selectedType":"gemini-api-key"}},"privacy":{"usageStatisticsEnabled":false},"general":{"enableAutoUpdate":false}}"#;

/// What an exit code means.
fn explain(code: i32) -> String {
    match code {
        41 => "authentication is not set up (exit 41); give it GEMINI_API_KEY".to_owned(),
        42 => "it rejected its input (exit 42)".to_owned(),
        44 => "its sandbox failed (exit 44)".to_owned(),
        52 => "its configuration is invalid (exit 52)".to_owned(),
        53 => "it reached its turn limit (exit 53)".to_owned(),
        54 => "a tool failed fatally (exit 54)".to_owned(),
        55 => "it does not trust the working directory (exit 55)".to_owned(),
        c if (144..=255).contains(&c) && (400..600).contains(&(c + 256)) => {
            format!("the API answered HTTP {} (exit {c})", c + 256)
        }
        c => format!("exit code {c}"),
    }
}

fn usage(doc: &Value) -> Usage {
    let mut usage = Usage::default();
    if let Some(models) = doc["stats"]["models"].as_object() {
        let mut most = 0;
        for (name, m) in models {
            let t = &m["tokens"];
            let input = match u64_at(t, &["prompt"]) {
                0 => u64_at(t, &["input"]),
                n => n,
            };
            let output = u64_at(t, &["candidates"]);
            usage.input_tokens += input;
            usage.output_tokens += output;
            // The main model wrote the most; the router's model is listed too.
            if usage.model.is_none() || output > most {
                most = output;
                usage.model = Some(name.clone());
            }
        }
    }
    usage
}

impl Cli for Gemini {
    fn name(&self) -> &'static str {
        "gemini"
    }

    fn default_program(&self) -> Option<&'static str> {
        Some("gemini")
    }

    fn launch(&self, call: &Call<'_>) -> Result<Launch> {
        let mut args: Vec<String> = vec![
            "--output-format".into(),
            "json".into(),
            "--approval-mode".into(),
            match (call.shell(), call.writes_code()) {
                (Some(_), _) => "yolo",
                (None, true) => "auto_edit",
                (None, false) => "default",
            }
            .into(),
        ];
        if let Some(m) = call.model() {
            args.extend(["-m".into(), m.to_owned()]);
        }
        args.extend(call.spec.args.iter().cloned());
        let stdin = if fits_argv(call) {
            args.extend(["-p".into(), call.prompt.to_owned()]);
            None
        } else {
            args.extend(["-p".into(), LEAD.to_owned()]);
            Some(call.prompt.as_bytes().to_vec())
        };
        if call.home.isolated() {
            call.home.write(".gemini/settings.json", SETTINGS)?;
        }
        let mut env = vec![("GEMINI_CLI_TRUST_WORKSPACE".to_owned(), "true".to_owned())];
        if let Some(url) = &call.spec.url {
            env.push(("GOOGLE_GEMINI_BASE_URL".into(), url.clone()));
        }
        Ok(Launch { args, env, stdin })
    }

    fn read(&self, call: &Call<'_>, out: &Output) -> Reply {
        let doc = super::json_document(&out.stdout).filter(Value::is_object);
        let usage = doc.as_ref().map(usage).unwrap_or_default();
        let fail = |reason: String| Reply::Failed {
            reason,
            usage: usage.clone(),
        };
        let error_of = |v: &Value| {
            v.get("error")
                .filter(|e| !e.is_null())
                .map(|e| str_at(e, "message").unwrap_or("an error").to_owned())
        };
        if out.code != Some(0) {
            let why = match out.code {
                Some(c) => explain(c),
                None => out.describe_exit(),
            };
            let detail = super::json_document(&out.stderr)
                .as_ref()
                .and_then(error_of)
                .or_else(|| doc.as_ref().and_then(error_of))
                .unwrap_or_else(|| out.tail(3));
            return fail(format!("Gemini failed: {why}: {}", excerpt(&detail, 300)));
        }
        let Some(doc) = &doc else {
            return fail(format!("Gemini printed no JSON result: {}", out.tail(3)));
        };
        if let Some(e) = error_of(doc) {
            return fail(format!(
                "Gemini reported an error although it exited 0: {}",
                excerpt(&e, 300)
            ));
        }
        let rejected = u64_at(doc, &["stats", "tools", "totalDecisions", "reject"]);
        if call.writes_code() && rejected > 0 {
            return fail(format!(
                "{rejected} of Gemini's tool calls were rejected although it exited 0; its \
                 change is incomplete"
            ));
        }
        let text = str_at(doc, "response").unwrap_or("");
        if text.trim().is_empty() {
            return fail("Gemini gave no response".into());
        }
        Reply::Answer {
            text: text.to_owned(),
            usage,
        }
    }

    fn failure_text(&self, out: &Output) -> Option<String> {
        let error = |v: &Value| {
            v.get("error")
                .filter(|e| !e.is_null())
                .map(|e| e.to_string())
        };
        let doc = super::json_document(&out.stdout).filter(Value::is_object);
        if out.code == Some(0) {
            return doc.as_ref().and_then(error);
        }
        // The error JSON (or its text) is on stderr; its message holds the service's words.
        let detail = super::json_document(&out.stderr)
            .as_ref()
            .and_then(|v| {
                v.get("error")
                    .and_then(|e| str_at(e, "message"))
                    .map(str::to_owned)
            })
            .unwrap_or_default();
        Some(format!("{detail}\n{}", out.stderr))
    }

    fn transient(&self, out: &Output) -> bool {
        out.code == Some(429 - 256)
    }
}
