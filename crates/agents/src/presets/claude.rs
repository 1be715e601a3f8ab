//! Claude Code: `claude -p --output-format json`, the prompt on stdin.
//!
//! Tools are given with `--tools=…` (one argument: the flag is variadic and would swallow a
//! following prompt): read-only ones for document tasks, plus Edit and Write for code tasks,
//! never the web. `--permission-mode acceptEdits` lets it edit without asking.
//!
//! A code task of a session that runs with shell on (the kernel's sandbox is full) also gets
//! Bash, and runs with `--permission-mode bypassPermissions` (with `IS_SANDBOX=1`, without
//! which Claude refuses that mode to root): it builds and tests in its checkout, and the
//! kernel's sandbox keeps it there. Its permission prompts would hold nothing more back (and
//! headless, nothing answers them). `acceptEdits` also refuses to write a checkout below a
//! `.git` directory ("… which is a sensitive file", seen in the real-CLI conformance run when
//! the pools were kept there; they are under the user's cache now). Claude Code's own
//! sandbox for Bash is bubblewrap, which cannot start inside Landlock (mounting is refused:
//! measured, "bwrap: Failed to make / slave: Operation not permitted"), so it is switched
//! off (`--settings {"sandbox":{"enabled":false}}`, also its default): ours is the box. Such
//! a run prints `stream-json` (with `--verbose`, which it requires), so that the transcript
//! holds every command and what it printed. Below a full sandbox, code tasks get no Bash.
//! The
//! config lives in `$CLAUDE_CONFIG_DIR` inside the run's home; `url` becomes
//! `ANTHROPIC_BASE_URL`; the key comes from the environment (`ANTHROPIC_API_KEY`), or use
//! `home` to run with a logged-in config.
//!
//! Success needs more than exit 0: the result object must have `is_error: false`, subtype
//! `success`, a non-empty `result` that is not an "API Error", and no `permission_denials`
//! (Claude exits 0 when it was refused a tool). Tokens and cost come from `usage` and
//! `total_cost_usd`. HTTP 429/503/529 are repeated after a pause.

use serde_json::Value;

use super::{str_at, u64_at};
use crate::command::{Call, Cli, Launch, Reply, Usage};
use tlv4_core::error::Result;
use tlv4_core::process::Output;
use tlv4_core::text::excerpt;

/// The Claude Code preset.
pub(super) struct Claude;

/// The result object: the whole stdout (`json`) or its last `result` line (`stream-json`).
fn result_object(stdout: &str) -> Option<Value> {
    if let Ok(v) = serde_json::from_str::<Value>(stdout.trim())
        && str_at(&v, "type") == Some("result")
    {
        return Some(v);
    }
    super::json_lines(stdout)
        .filter(|v| str_at(v, "type") == Some("result"))
        .last()
}

fn usage(res: &Value) -> Usage {
    let u = &res["usage"];
    Usage {
        cached_input_tokens: u64_at(u, &["cache_read_input_tokens"]),
        input_tokens: u64_at(u, &["input_tokens"])
            + u64_at(u, &["cache_creation_input_tokens"])
            + u64_at(u, &["cache_read_input_tokens"]),
        output_tokens: u64_at(u, &["output_tokens"]),
        cost_usd: res.get("total_cost_usd").and_then(Value::as_f64),
        seconds: 0.0,
        // The main model is the one that wrote the most; a helper model (a small one for
        // titles or summaries) may be listed too.
        model: res
            .get("modelUsage")
            .and_then(Value::as_object)
            .and_then(|m| {
                m.iter()
                    .max_by_key(|(_, v)| u64_at(v, &["outputTokens"]))
                    .map(|(k, _)| k.clone())
            }),
    }
}

impl Cli for Claude {
    fn name(&self) -> &'static str {
        "claude"
    }

    fn default_program(&self) -> Option<&'static str> {
        Some("claude")
    }

    fn launch(&self, call: &Call<'_>) -> Result<Launch> {
        let args: &[&str] = match (call.shell(), call.writes_code()) {
            // With a token bound, stream-json (which needs --verbose) reports the tokens of
            // each message as it comes, so that the run can be stopped once over it.
            (None, code) if call.token_bound.is_some() => {
                if code {
                    &[
                        "-p",
                        "--output-format",
                        "stream-json",
                        "--verbose",
                        "--permission-mode",
                        "acceptEdits",
                        "--tools=Read,Edit,Write,Glob,Grep",
                    ]
                } else {
                    &[
                        "-p",
                        "--output-format",
                        "stream-json",
                        "--verbose",
                        "--permission-mode",
                        "acceptEdits",
                        "--tools=Read,Glob,Grep",
                    ]
                }
            }
            // Bash, and no permission prompts: the kernel's sandbox is what holds it (see the
            // module's documentation); its own sandbox off, since bubblewrap cannot start
            // inside Landlock; stream-json, so that what its commands printed (a refusal of
            // the kernel's too) is in the transcript.
            (Some(_), _) => &[
                "-p",
                "--output-format",
                "stream-json",
                "--verbose",
                "--permission-mode",
                "bypassPermissions",
                "--tools=Read,Edit,Write,Glob,Grep,Bash",
                "--settings",
                r#"{"sandbox":{"enabled":false}}"#,
            ],
            (None, true) => &[
                "-p",
                "--output-format",
                "json",
                "--permission-mode",
                "acceptEdits",
                "--tools=Read,Edit,Write,Glob,Grep",
            ],
            (None, false) => &[
                "-p",
                "--output-format",
                "json",
                "--permission-mode",
                "acceptEdits",
                "--tools=Read,Glob,Grep",
            ],
        };
        let mut args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        if let Some(m) = call.model() {
            args.extend(["--model".into(), m.to_owned()]);
        }
        if let Some(usd) = call.max_usd {
            // Its own bound: it stops with `error_max_budget_usd` once the run costs more.
            args.extend(["--max-budget-usd".into(), format!("{usd}")]);
        }
        args.extend(call.spec.args.iter().cloned());
        let config = call.home.path().join(".claude");
        std::fs::create_dir_all(&config).map_err(|e| {
            tlv4_core::error::Error::io(format!("cannot create {}", config.display()), e)
        })?;
        let mut env = vec![
            ("CLAUDE_CONFIG_DIR".to_owned(), config.display().to_string()),
            (
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".into(),
                "1".into(),
            ),
            ("DISABLE_AUTOUPDATER".into(), "1".into()),
            ("DISABLE_TELEMETRY".into(), "1".into()),
            ("DISABLE_ERROR_REPORTING".into(), "1".into()),
        ];
        if let Some(url) = &call.spec.url {
            env.push(("ANTHROPIC_BASE_URL".into(), url.clone()));
        }
        if call.shell().is_some() {
            // What bypassPermissions needs when run as root: the word that it is in a
            // sandbox, which it is.
            env.push(("IS_SANDBOX".into(), "1".into()));
        }
        Ok(Launch {
            args,
            env,
            stdin: Some(call.prompt.as_bytes().to_vec()),
        })
    }

    fn read(&self, call: &Call<'_>, out: &Output) -> Reply {
        let Some(res) = result_object(&out.stdout) else {
            return Reply::Failed {
                reason: format!(
                    "Claude printed no result object ({}): {}",
                    out.describe_exit(),
                    out.tail(5)
                ),
                usage: Usage::default(),
            };
        };
        let usage = usage(&res);
        let fail = |reason: String| Reply::Failed {
            reason,
            usage: usage.clone(),
        };
        let text = str_at(&res, "result").unwrap_or("");
        let subtype = str_at(&res, "subtype").unwrap_or("");
        let is_error = res
            .get("is_error")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if subtype == "error_max_budget_usd" {
            return Reply::OverBound {
                detail: format!(
                    "Claude stopped at its budget of ${} (--max-budget-usd), having spent ${:.4}",
                    call.max_usd.map_or("?".to_owned(), |u| format!("{u}")),
                    usage.cost_usd.unwrap_or(0.0)
                ),
            };
        }
        if is_error || out.code != Some(0) {
            let status = res
                .get("api_error_status")
                .and_then(Value::as_u64)
                .map(|s| format!(", API status {s}"))
                .unwrap_or_default();
            let errors: Vec<&str> = res
                .get("errors")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let what = if !text.is_empty() {
                excerpt(text, 300)
            } else if !errors.is_empty() {
                excerpt(&errors.join("; "), 300)
            } else {
                subtype.to_owned()
            };
            return fail(format!(
                "Claude reported an error ({}{status}): {what}",
                out.describe_exit()
            ));
        }
        if subtype != "success" {
            return fail(format!("Claude stopped before the end: {subtype}"));
        }
        let denials = res
            .get("permission_denials")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if !denials.is_empty() {
            let list: Vec<String> = denials
                .iter()
                .map(|d| {
                    let tool = str_at(d, "tool_name").unwrap_or("a tool");
                    match d["tool_input"]
                        .get("file_path")
                        .or(d["tool_input"].get("command"))
                        .and_then(Value::as_str)
                    {
                        Some(target) => format!("{tool} ({})", excerpt(target, 80)),
                        None => tool.to_owned(),
                    }
                })
                .collect();
            return fail(format!(
                "Claude was refused {} tool call(s) although it exited 0: {}; what it meant to \
                 do with them did not happen",
                denials.len(),
                list.join(", ")
            ));
        }
        if text.trim_start().starts_with("API Error") {
            return fail(format!(
                "Claude reported an API error: {}",
                excerpt(text, 300)
            ));
        }
        if text.trim().is_empty() {
            return fail("Claude gave no final answer".into());
        }
        Reply::Answer {
            text: text.to_owned(),
            usage,
        }
    }

    fn token_counter(&self) -> Option<crate::command::TokenCounter> {
        // With `stream-json`, every `assistant` event carries its message's usage (the same
        // message may come in several events); the `result` object has the total.
        let mut by_message: std::collections::BTreeMap<String, u64> = Default::default();
        Some(Box::new(move |line: &str| {
            // A line without a token count adds nothing: it is not parsed.
            if !line.contains("\"output_tokens\"") {
                return None;
            }
            let v: Value = serde_json::from_str(line).ok()?;
            match str_at(&v, "type")? {
                "assistant" => {
                    let m = &v["message"];
                    let id = str_at(m, "id").unwrap_or("").to_owned();
                    let n = u64_at(&m["usage"], &["output_tokens"]);
                    let e = by_message.entry(id).or_default();
                    *e = (*e).max(n);
                    Some(by_message.values().sum())
                }
                "result" => Some(u64_at(&v["usage"], &["output_tokens"])),
                _ => None,
            }
        }))
    }

    fn failure_text(&self, out: &Output) -> Option<String> {
        let Some(res) = result_object(&out.stdout) else {
            // No result: what it printed that is not an event.
            let plain: Vec<&str> = out
                .stdout
                .lines()
                .filter(|l| !l.trim_start().starts_with('{'))
                .collect();
            return (out.code != Some(0)).then(|| format!("{}\n{}", plain.join("\n"), out.stderr));
        };
        let text = str_at(&res, "result").unwrap_or("");
        let failed = res.get("is_error").and_then(Value::as_bool) == Some(true)
            || out.code != Some(0)
            || text.trim_start().starts_with("API Error");
        if !failed {
            return None;
        }
        let mut parts = vec![text.to_owned()];
        if let Some(errors) = res.get("errors").and_then(Value::as_array) {
            parts.extend(errors.iter().filter_map(Value::as_str).map(str::to_owned));
        }
        if let Some(s) = res.get("api_error_status").and_then(Value::as_u64) {
            parts.push(format!("HTTP {s}"));
        }
        Some(parts.join("\n"))
    }

    fn transient(&self, out: &Output) -> bool {
        result_object(&out.stdout).is_some_and(|r| {
            r.get("is_error").and_then(Value::as_bool) == Some(true)
                && matches!(
                    r.get("api_error_status").and_then(Value::as_u64),
                    Some(429 | 503 | 529)
                )
        })
    }
}
