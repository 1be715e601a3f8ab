//! OpenCode: `opencode run "PROMPT" --format json`, JSONL events on stdout. A prompt too
//! long for the command line is attached as a file (`-f`, last: the flag takes every word
//! after it) behind a short lead message.
//!
//! Its config comes from `OPENCODE_CONFIG_CONTENT`: edits allowed for code tasks only, web
//! fetch denied, shell (`bash`) denied unless the task is a code task of a session that runs
//! with shell on (the kernel's sandbox is full; OpenCode has no sandbox of its own, so ours is
//! the box); with `url`, a provider `tlv4` using the bundled OpenAI-compatible
//! SDK and the model `tlv4/<model>`. The home and XDG directories are the run's own;
//! update checks, model downloads, LSP downloads and sharing are switched off. `PWD` is set
//! to the working directory, which OpenCode reads instead of its actual one.
//!
//! Success: exit 0, no `error` event, some text from the model, and for code tasks no tool
//! call refused for lack of permission. Tokens and cost come from the `step_finish` events.
//! An HTTP 429 is repeated after a pause.

use serde_json::{Value, json};

use super::{LEAD, fits_argv, str_at, u64_at};
use crate::command::{Call, Cli, Launch, Reply, Usage};
use tlv4_core::error::Result;
use tlv4_core::process::Output;
use tlv4_core::text::excerpt;

/// The OpenCode preset.
pub(super) struct OpenCode;

/// The provider git-tlv4 defines for `url`.
const PROVIDER: &str = "tlv4";

#[derive(Default)]
struct Events {
    error: Option<(String, Option<u64>)>,
    steps: Vec<Vec<String>>,
    refused: Vec<String>,
    usage: Usage,
}

fn events(stdout: &str) -> Events {
    let mut ev = Events::default();
    let mut cost: Option<f64> = None;
    for v in super::json_lines(stdout) {
        let part = &v["part"];
        match str_at(&v, "type").unwrap_or("") {
            "step_start" => ev.steps.push(Vec::new()),
            "text" => {
                if let Some(t) = str_at(part, "text") {
                    if ev.steps.is_empty() {
                        ev.steps.push(Vec::new());
                    }
                    if let Some(step) = ev.steps.last_mut() {
                        step.push(t.to_owned());
                    }
                }
            }
            "tool_use" => {
                let state = &part["state"];
                if str_at(state, "status") == Some("error") {
                    let e = str_at(state, "error")
                        .or(str_at(state, "output"))
                        .unwrap_or("");
                    let l = e.to_ascii_lowercase();
                    if l.contains("permission") || l.contains("rejected") || l.contains("denied") {
                        ev.refused
                            .push(str_at(part, "tool").unwrap_or("a tool").to_owned());
                    }
                }
            }
            "step_finish" => {
                let t = &part["tokens"];
                ev.usage.input_tokens += u64_at(t, &["input"]) + u64_at(t, &["cache", "read"]);
                ev.usage.output_tokens += u64_at(t, &["output"]);
                if let Some(c) = part.get("cost").and_then(Value::as_f64) {
                    cost = Some(cost.unwrap_or(0.0) + c);
                }
            }
            "error" => {
                let e = &v["error"];
                let name = str_at(e, "name").unwrap_or("Error");
                let message = e["data"]["message"]
                    .as_str()
                    .or(str_at(e, "message"))
                    .unwrap_or("");
                let status = e["data"]["statusCode"].as_u64();
                ev.error = Some((format!("{name}: {message}"), status));
            }
            _ => {}
        }
    }
    ev.usage.cost_usd = cost;
    ev
}

impl Cli for OpenCode {
    fn name(&self) -> &'static str {
        "opencode"
    }

    fn default_program(&self) -> Option<&'static str> {
        Some("opencode")
    }

    fn launch(&self, call: &Call<'_>) -> Result<Launch> {
        let message = if fits_argv(call) { call.prompt } else { LEAD };
        let mut args: Vec<String> = vec![
            "run".into(),
            message.to_owned(),
            "--format".into(),
            "json".into(),
        ];
        let mut config = json!({
            "permission": {
                "edit": if call.writes_code() { "allow" } else { "deny" },
                "bash": if call.shell().is_some() { "allow" } else { "deny" },
                "webfetch": "deny",
            },
        });
        let model = match (&call.spec.url, call.model()) {
            (Some(url), model) => {
                let name = model.unwrap_or("default");
                config["provider"] = json!({
                    PROVIDER: {
                        "npm": "@ai-sdk/openai-compatible",
                        "name": "git-tlv4",
                        "options": {"baseURL": url, "apiKey": "{env:OPENAI_API_KEY}"},
                        "models": {name: {"name": name, "tool_call": true}},
                    }
                });
                let full = format!("{PROVIDER}/{name}");
                config["model"] = json!(full);
                Some(full)
            }
            (None, Some(m)) => Some(m.to_owned()),
            (None, None) => None,
        };
        if let Some(m) = model {
            args.extend(["-m".into(), m]);
        }
        args.extend(call.spec.args.iter().cloned());
        if !fits_argv(call) {
            args.extend(["-f".into(), call.prompt_file.display().to_string()]);
        }
        let env = vec![
            // OpenCode takes its directory from `PWD`, not from the process's working
            // directory: left as inherited (the user's checkout) it states that directory
            // to the model and writes there instead of in the task's worktree.
            (
                "PWD".to_owned(),
                std::path::absolute(call.workdir)
                    .unwrap_or_else(|_| call.workdir.to_path_buf())
                    .display()
                    .to_string(),
            ),
            ("OPENCODE_CONFIG_CONTENT".into(), config.to_string()),
            ("OPENCODE_DISABLE_AUTOUPDATE".into(), "1".into()),
            ("OPENCODE_DISABLE_MODELS_FETCH".into(), "1".into()),
            ("OPENCODE_DISABLE_LSP_DOWNLOAD".into(), "1".into()),
            ("OPENCODE_DISABLE_SHARE".into(), "1".into()),
        ];
        Ok(Launch {
            args,
            env,
            stdin: None,
        })
    }

    fn read(&self, call: &Call<'_>, out: &Output) -> Reply {
        let ev = events(&out.stdout);
        let fail = |reason: String| Reply::Failed {
            reason,
            usage: ev.usage.clone(),
        };
        if let Some((message, status)) = &ev.error {
            let status = status.map(|s| format!(", HTTP {s}")).unwrap_or_default();
            return fail(format!(
                "OpenCode reported an error ({}{status}): {}",
                out.describe_exit(),
                excerpt(message, 300)
            ));
        }
        if out.code != Some(0) {
            return fail(format!(
                "OpenCode failed ({}): {}",
                out.describe_exit(),
                out.tail(5)
            ));
        }
        if call.writes_code() && !ev.refused.is_empty() {
            return fail(format!(
                "OpenCode was refused permission for {} although it exited 0; its change is \
                 incomplete",
                ev.refused.join(", ")
            ));
        }
        let text = ev
            .steps
            .iter()
            .rev()
            .find(|s| !s.is_empty())
            .map(|s| s.join("\n"))
            .unwrap_or_default();
        if text.trim().is_empty() {
            return fail("OpenCode gave no final answer".into());
        }
        Reply::Answer {
            text,
            usage: ev.usage,
        }
    }

    fn failure_text(&self, out: &Output) -> Option<String> {
        match (events(&out.stdout).error, out.code) {
            (Some((message, status)), _) => Some(format!(
                "{message}{}\n{}",
                status.map(|s| format!("\nHTTP {s}")).unwrap_or_default(),
                out.stderr
            )),
            (None, Some(0)) => None,
            (None, _) => Some(out.stderr.clone()),
        }
    }

    fn transient(&self, out: &Output) -> bool {
        events(&out.stdout)
            .error
            .is_some_and(|(_, status)| status == Some(429))
    }
}
