//! Qwen Code: `qwen -o json "PROMPT"`. A prompt that fits on the command line is the
//! positional argument; a longer one goes on stdin, which Qwen appends to a short lead.
//!
//! Code tasks use `--approval-mode auto-edit` (no shell), document tasks the default. A code
//! task of a session that runs with shell on (the kernel's sandbox is full) uses `yolo`,
//! which offers and runs `run_shell_command` unasked; Qwen's own sandbox (`-s`, a container)
//! stays off: ours is the box. The
//! home is the run's own. `url` selects OpenAI-compatible auth (`--auth-type openai`,
//! `OPENAI_BASE_URL`, `OPENAI_MODEL`); the key comes from `OPENAI_API_KEY`.
//!
//! Output is a JSON array of messages ending with a `result` object. Qwen reports API errors
//! — even a refused connection — with exit 0 and `is_error: false`, in the `result` text
//! ("[API Error: …]"); that text fails the task, as do `is_error`, a non-zero exit and, for
//! code tasks, `permission_denials`. Rate-limit errors are repeated after a pause. Tokens
//! come from the result's `usage`.

use serde_json::Value;

use super::{LEAD, fits_argv, str_at, u64_at};
use crate::command::{Call, Cli, Launch, Reply, Usage};
use tlv4_core::error::Result;
use tlv4_core::process::Output;
use tlv4_core::text::excerpt;

/// The Qwen Code preset.
pub(super) struct Qwen;

/// The messages Qwen printed: a JSON array (`json`) or JSON lines (`stream-json`).
fn messages(stdout: &str) -> Vec<Value> {
    match super::json_document(stdout) {
        Some(Value::Array(a)) => a,
        _ => super::json_lines(stdout).collect(),
    }
}

fn result_of(msgs: &[Value]) -> Option<&Value> {
    msgs.iter()
        .rev()
        .find(|m| str_at(m, "type") == Some("result"))
}

fn api_error(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with("[API Error") || t.starts_with("API Error")
}

impl Cli for Qwen {
    fn name(&self) -> &'static str {
        "qwen"
    }

    fn default_program(&self) -> Option<&'static str> {
        Some("qwen")
    }

    fn launch(&self, call: &Call<'_>) -> Result<Launch> {
        let mut args: Vec<String> = vec![
            "--output-format".into(),
            "json".into(),
            "--approval-mode".into(),
            match (call.shell(), call.writes_code()) {
                (Some(_), _) => "yolo",
                (None, true) => "auto-edit",
                (None, false) => "default",
            }
            .into(),
        ];
        let mut env = Vec::new();
        if let Some(m) = call.model() {
            args.extend(["-m".into(), m.to_owned()]);
        }
        if let Some(url) = &call.spec.url {
            args.extend(["--auth-type".into(), "openai".into()]);
            env.push(("OPENAI_BASE_URL".to_owned(), url.clone()));
            if let Some(m) = call.model() {
                env.push(("OPENAI_MODEL".into(), m.to_owned()));
            }
        }
        args.extend(call.spec.args.iter().cloned());
        let stdin = if fits_argv(call) {
            args.push(call.prompt.to_owned());
            None
        } else {
            args.push(LEAD.to_owned());
            Some(call.prompt.as_bytes().to_vec())
        };
        Ok(Launch { args, env, stdin })
    }

    fn read(&self, call: &Call<'_>, out: &Output) -> Reply {
        let msgs = messages(&out.stdout);
        let res = result_of(&msgs);
        let usage = Usage {
            input_tokens: res.map_or(0, |r| u64_at(r, &["usage", "input_tokens"])),
            output_tokens: res.map_or(0, |r| u64_at(r, &["usage", "output_tokens"])),
            model: msgs
                .iter()
                .find(|m| str_at(m, "type") == Some("system"))
                .and_then(|m| str_at(m, "model"))
                .map(str::to_owned),
            ..Usage::default()
        };
        let fail = |reason: String| Reply::Failed {
            reason,
            usage: usage.clone(),
        };
        if out.code != Some(0) {
            return fail(format!(
                "Qwen failed ({}): {}",
                out.describe_exit(),
                res.and_then(|r| str_at(r, "result"))
                    .map(|t| excerpt(t, 300))
                    .unwrap_or_else(|| out.tail(3))
            ));
        }
        let Some(res) = res else {
            return fail(format!("Qwen printed no result message: {}", out.tail(3)));
        };
        let text = str_at(res, "result").unwrap_or("");
        if res.get("is_error").and_then(Value::as_bool) == Some(true) {
            return fail(format!("Qwen reported an error: {}", excerpt(text, 300)));
        }
        if api_error(text) {
            return fail(format!(
                "Qwen reported an API error although it exited 0: {}",
                excerpt(text, 300)
            ));
        }
        let denials = res["permission_denials"].as_array().map_or(0, Vec::len);
        if call.writes_code() && denials > 0 {
            let tools: Vec<&str> = res["permission_denials"]
                .as_array()
                .map(|a| a.iter().filter_map(|d| str_at(d, "tool_name")).collect())
                .unwrap_or_default();
            return fail(format!(
                "Qwen was refused {denials} tool call(s) although it exited 0: {}",
                tools.join(", ")
            ));
        }
        if text.trim().is_empty() {
            return fail("Qwen gave no final answer".into());
        }
        Reply::Answer {
            text: text.to_owned(),
            usage,
        }
    }

    fn failure_text(&self, out: &Output) -> Option<String> {
        let msgs = messages(&out.stdout);
        let res = result_of(&msgs);
        let text = res.and_then(|r| str_at(r, "result")).unwrap_or("");
        let is_error = res.and_then(|r| r.get("is_error")).and_then(Value::as_bool) == Some(true);
        if out.code != Some(0) {
            Some(format!("{text}\n{}", out.stderr))
        } else if is_error || api_error(text) {
            Some(text.to_owned())
        } else {
            None
        }
    }

    fn transient(&self, out: &Output) -> bool {
        let msgs = messages(&out.stdout);
        result_of(&msgs)
            .and_then(|r| str_at(r, "result"))
            .is_some_and(|t| {
                let l = t.to_ascii_lowercase();
                api_error(t) && (l.contains("429") || l.contains("rate limit"))
            })
    }
}
