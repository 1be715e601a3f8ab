//! Codex: `codex exec --json … -`, the prompt on stdin, JSONL events on stdout.
//!
//! Code tasks run in the `workspace-write` sandbox (shell sandboxed, network off, `.git`
//! read-only: git-tlv4 commits), document tasks in `read-only`; the hosted web search is
//! switched off.
//!
//! Where the kernel's sandbox is full and the session runs with shell on, a code task runs
//! with `-s danger-full-access` instead: Codex's own sandbox on Linux is bubblewrap, which
//! cannot start inside Landlock (it mounts, and Landlock refuses mounting to a confined
//! process: "bwrap: Failed to make / slave: Operation not permitted"), so its commands would
//! all fail. git-tlv4's sandbox is then the one box: writes only in the checkout, its home
//! and its run's files, TCP only to the configured ports, no Unix sockets. `exec` asks no
//! approvals either way. `$CODEX_HOME` is inside the run's home; for an isolated home git-tlv4
//! writes its `config.toml` (no update check, and with `url` a provider speaking the
//! Responses API with the key from `OPENAI_API_KEY`). Codex waits forever on a dead
//! endpoint, so the wall-clock limit always applies to it, and the provider gets idle and
//! retry limits of its own.
//!
//! Success needs more than exit 0: a `turn.completed` event, no `turn.failed` event, a final
//! `agent_message`, and — for code tasks — no change the sandbox rejected (Codex exits 0
//! after "patch rejected"). A top-level `error` event fails the run only when the turn did
//! not complete: Codex also sends them for passing trouble it recovers from ("Reconnecting...
//! 1/2 (stream disconnected before completion…)"). Tokens come from `turn.completed.usage`;
//! Codex reports no cost.

use super::{str_at, u64_at};
use crate::command::{Call, Cli, Launch, Reply, Usage};
use tlv4_core::error::{Error, Result};
use tlv4_core::process::Output;
use tlv4_core::text::excerpt;

/// The Codex preset.
pub(super) struct Codex;

/// The provider git-tlv4 defines for `url`.
const PROVIDER: &str = "tlv4";

/// Where `-o` puts the last message.
const LAST_MESSAGE: &str = "codex-last-message.txt";

/// What the event stream says.
#[derive(Default)]
struct Events {
    completed: bool,
    /// Why the turn failed: `turn.failed`, or an `error` event of a turn that never
    /// completed.
    failed: Option<String>,
    message: Option<String>,
    rejected: Vec<String>,
    usage: Usage,
}

fn events(stdout: &str) -> Events {
    let mut ev = Events::default();
    let mut error: Option<String> = None;
    for v in super::json_lines(stdout) {
        match str_at(&v, "type").unwrap_or("") {
            "turn.completed" => {
                ev.completed = true;
                let u = &v["usage"];
                ev.usage.input_tokens += u64_at(u, &["input_tokens"]);
                ev.usage.cached_input_tokens += u64_at(u, &["cached_input_tokens"]);
                ev.usage.output_tokens += u64_at(u, &["output_tokens"]);
            }
            "turn.failed" => {
                ev.failed = Some(
                    v["error"]["message"]
                        .as_str()
                        .unwrap_or("the turn failed")
                        .to_owned(),
                );
            }
            "error" => {
                let m = str_at(&v, "message").unwrap_or("an error").to_owned();
                error.get_or_insert(m);
            }
            "item.completed" => {
                let item = &v["item"];
                match str_at(item, "type").unwrap_or("") {
                    "agent_message" => {
                        ev.message = str_at(item, "text").map(str::to_owned);
                    }
                    "file_change" if str_at(item, "status") != Some("completed") => {
                        let paths: Vec<&str> = item["changes"]
                            .as_array()
                            .map(|c| c.iter().filter_map(|c| str_at(c, "path")).collect())
                            .unwrap_or_default();
                        ev.rejected.push(format!(
                            "a change to {} ({})",
                            if paths.is_empty() {
                                "files".to_owned()
                            } else {
                                paths.join(", ")
                            },
                            str_at(item, "status").unwrap_or("not applied")
                        ));
                    }
                    "command_execution" | "custom_tool_call" | "mcp_tool_call" => {
                        let output = str_at(item, "aggregated_output")
                            .or(str_at(item, "output"))
                            .unwrap_or("");
                        if output.contains("patch rejected")
                            || output.contains("blocked by read-only sandbox")
                        {
                            ev.rejected.push(excerpt(output, 160));
                        }
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    if !ev.completed && ev.failed.is_none() {
        ev.failed = error;
    }
    ev
}

fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_owned()).to_string()
}

impl Cli for Codex {
    fn name(&self) -> &'static str {
        "codex"
    }

    fn default_program(&self) -> Option<&'static str> {
        Some("codex")
    }

    fn launch(&self, call: &Call<'_>) -> Result<Launch> {
        let codex_home = call.home.path().join(".codex");
        std::fs::create_dir_all(&codex_home)
            .map_err(|e| Error::io(format!("cannot create {}", codex_home.display()), e))?;
        // A message left by an earlier answer must not pass for this one's.
        let _ = std::fs::remove_file(call.scratch.join(LAST_MESSAGE));
        let mut args: Vec<String> = vec![
            "exec".into(),
            "--json".into(),
            "--skip-git-repo-check".into(),
            "-s".into(),
            match (call.shell(), call.writes_code()) {
                // Ours is the box: Codex's own (bubblewrap) cannot start inside it.
                (Some(_), _) => "danger-full-access",
                (None, true) => "workspace-write",
                (None, false) => "read-only",
            }
            .into(),
            "-C".into(),
            call.workdir.display().to_string(),
            "-c".into(),
            "web_search=\"disabled\"".into(),
            "-o".into(),
            call.scratch.join(LAST_MESSAGE).display().to_string(),
        ];
        if let Some(m) = call.model() {
            args.extend(["-m".into(), m.to_owned()]);
        }
        let mut config = String::from(
            "# Written by git-tlv4 for one run.\ncheck_for_update_on_startup = false\n",
        );
        if let Some(url) = &call.spec.url {
            if call.home.isolated() {
                config.push_str(&format!(
                    "model_provider = \"{PROVIDER}\"\n\n[model_providers.{PROVIDER}]\nname = \
                     \"git-tlv4\"\nbase_url = {}\nenv_key = \"OPENAI_API_KEY\"\nwire_api = \
                     \"responses\"\nrequest_max_retries = 2\nstream_max_retries = 2\n\
                     stream_idle_timeout_ms = 300000\n",
                    toml_string(url)
                ));
            } else {
                for kv in [
                    format!("model_provider=\"{PROVIDER}\""),
                    format!("model_providers.{PROVIDER}.name=\"git-tlv4\""),
                    format!("model_providers.{PROVIDER}.base_url={}", toml_string(url)),
                    format!("model_providers.{PROVIDER}.env_key=\"OPENAI_API_KEY\""),
                    format!("model_providers.{PROVIDER}.wire_api=\"responses\""),
                ] {
                    args.extend(["-c".into(), kv]);
                }
            }
        }
        if call.home.isolated() {
            call.home.write(".codex/config.toml", &config)?;
        }
        args.extend(call.spec.args.iter().cloned());
        args.push("-".into());
        Ok(Launch {
            args,
            env: vec![("CODEX_HOME".into(), codex_home.display().to_string())],
            stdin: Some(call.prompt.as_bytes().to_vec()),
        })
    }

    fn read(&self, call: &Call<'_>, out: &Output) -> Reply {
        let ev = events(&out.stdout);
        let fail = |reason: String| Reply::Failed {
            reason,
            usage: ev.usage.clone(),
        };
        if let Some(m) = &ev.failed {
            return fail(format!(
                "Codex failed ({}): {}",
                out.describe_exit(),
                excerpt(m, 300)
            ));
        }
        if out.code != Some(0) {
            return fail(format!(
                "Codex failed ({}): {}",
                out.describe_exit(),
                out.tail(5)
            ));
        }
        if !ev.completed {
            return fail(format!(
                "Codex ended without completing its turn ({}): {}",
                out.describe_exit(),
                out.tail(3)
            ));
        }
        if call.writes_code() && !ev.rejected.is_empty() {
            return fail(format!(
                "Codex's sandbox rejected {} although it exited 0: {}",
                if ev.rejected.len() == 1 {
                    "a change".to_owned()
                } else {
                    format!("{} changes", ev.rejected.len())
                },
                ev.rejected.join("; ")
            ));
        }
        let text = ev
            .message
            .clone()
            .or_else(|| std::fs::read_to_string(call.scratch.join(LAST_MESSAGE)).ok())
            .unwrap_or_default();
        if text.trim().is_empty() {
            return fail("Codex gave no final message".into());
        }
        Reply::Answer {
            text,
            usage: ev.usage,
        }
    }

    fn token_counter(&self) -> Option<crate::command::TokenCounter> {
        // Each `turn.completed` event reports the tokens of its turn.
        let mut total = 0;
        Some(Box::new(move |line: &str| {
            // Only a turn's end counts: other events are not parsed.
            if !line.contains("turn.completed") {
                return None;
            }
            let v: serde_json::Value = serde_json::from_str(line).ok()?;
            (str_at(&v, "type") == Some("turn.completed")).then(|| {
                total += u64_at(&v["usage"], &["output_tokens"]);
                total
            })
        }))
    }

    fn failure_text(&self, out: &Output) -> Option<String> {
        let ev = events(&out.stdout);
        match (ev.failed, out.code) {
            (Some(m), _) => Some(format!("{m}\n{}", out.stderr)),
            (None, Some(0)) => None,
            // Errors before the event stream began ("ERROR: Quota exceeded. …").
            (None, _) => Some(out.stderr.clone()),
        }
    }

    fn transient(&self, out: &Output) -> bool {
        events(&out.stdout).failed.is_some_and(|m| {
            let m = m.to_ascii_lowercase();
            m.contains("429") || m.contains("rate limit")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::events;

    /// What codex-cli 0.171.0 printed when the first stream was cut short: it reconnected,
    /// did the work and completed the turn (tests/conformance, `TLV4_MOCK_FAIL_HOW=drop`).
    #[test]
    fn a_recovered_reconnect_is_no_failure() {
        let out = r#"{"type":"thread.started","thread_id":"t"}
{"type":"turn.started"}
{"type":"error","message":"Reconnecting... 1/2 (stream disconnected before completion: stream closed before response.completed)"}
{"type":"item.completed","item":{"id":"item_0","type":"file_change","changes":[{"path":"/w/a.txt","kind":"add"}],"status":"completed"}}
{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"done"}}
{"type":"turn.completed","usage":{"input_tokens":200,"output_tokens":40}}
"#;
        let ev = events(out);
        assert!(ev.completed && ev.failed.is_none() && ev.rejected.is_empty());
        assert_eq!(ev.message.as_deref(), Some("done"));

        // Without the completed turn the error is the reason; `turn.failed` wins over it.
        let cut = out.replace(r#"{"type":"turn.completed""#, r#"{"type":"x""#);
        assert!(events(&cut).failed.unwrap().starts_with("Reconnecting"));
        let failed = format!(
            "{out}{}\n",
            r#"{"type":"turn.failed","error":{"message":"gone"}}"#
        );
        assert_eq!(events(&failed).failed.as_deref(), Some("gone"));
    }
}
