//! Aider: `aider --message-file <prompt> --yes-always --no-auto-commits …`. Aider has no
//! structured output: its stdout is the model's answer among Aider's own lines, and the
//! result block is read from it.
//!
//! Code tasks run in the worktree (a git checkout; git-tlv4 commits, so no auto-commits),
//! with the code files the description names added to the chat; suggested shell commands
//! and URL fetching are off. Aider has no shell tool: in a session that runs with shell on
//! (the kernel's sandbox is full), a code task gets the project's test command as
//! `--test-cmd` with `--auto-test` — chosen by the tool (`[tests] command`, else the
//! detected one), never by the model — which Aider runs after its edits, handing failures
//! back to the model. Aider has no sandbox of its own: ours is the box. The edit format is SEARCH/REPLACE ("diff"): in the "whole"
//! format every fenced block, the result block too, is a file to write. Aider's chat
//! history goes to the run's scratch directory and its repo map is off, so that neither
//! the history nor the map's tags cache lands in the working directory; `COLUMNS` is
//! large, so that the printed answer is not wrapped inside the result block's JSON.
//! Document tasks run with `--no-git --dry-run`, so nothing is written. The home is the
//! run's own; litellm's price map is read locally. With `url`, the model is
//! `openai/<model>` at `--openai-api-base`; keys come from the environment.
//!
//! Success: exit 0, no API error printed by litellm that Aider did not then retry, and for
//! code tasks no edit Aider failed to apply (it exits 0 then). Tokens and cost come from
//! its "Tokens: … Cost: …" lines.

use std::sync::LazyLock;

use regex::Regex;

use crate::command::{Call, Cli, Launch, Reply, Usage};
use tlv4_core::error::Result;
use tlv4_core::process::Output;
use tlv4_core::text::excerpt;

/// The Aider preset.
pub(super) struct Aider;

/// At most this many code files are added to the chat.
const MAX_FILES: usize = 20;

static API_ERROR: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?m)^\s*litellm\.[A-Za-z]*Error\b.*$").expect("a valid pattern"));
/// What Aider prints after an API error it is about to retry.
static RETRYING: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?m)^\s*Retrying in [\d.]+ seconds").expect("a valid pattern"));
static EDIT_FAILED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?m)^.*(did not conform to the edit format|Failed to apply edit|SearchReplaceNoExactMatch|Did not apply edit|Skipping edits to).*$",
    )
    .expect("a valid pattern")
});
static TOKENS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)^Tokens: ([\d.,]+)([kKmM]?) sent.*?, ([\d.,]+)([kKmM]?) received\.(?: Cost: \$([\d.]+) message)?")
        .expect("a valid pattern")
});

/// `2.3` + `k` → 2300.
fn count(number: &str, unit: &str) -> u64 {
    let n: f64 = number.replace(',', "").parse().unwrap_or(0.0);
    let scale = match unit {
        "k" | "K" => 1e3,
        "m" | "M" => 1e6,
        _ => 1.0,
    };
    (n * scale).round() as u64
}

fn usage(stdout: &str) -> Usage {
    let mut usage = Usage::default();
    for c in TOKENS.captures_iter(stdout) {
        usage.input_tokens += count(&c[1], &c[2]);
        usage.output_tokens += count(&c[3], &c[4]);
        if let Some(cost) = c.get(5).and_then(|m| m.as_str().parse::<f64>().ok()) {
            usage.cost_usd = Some(usage.cost_usd.unwrap_or(0.0) + cost);
        }
    }
    usage
}

impl Cli for Aider {
    fn name(&self) -> &'static str {
        "aider"
    }

    fn default_program(&self) -> Option<&'static str> {
        Some("aider")
    }

    fn launch(&self, call: &Call<'_>) -> Result<Launch> {
        let mut args: Vec<String> = vec![
            "--message-file".into(),
            call.prompt_file.display().to_string(),
        ];
        args.extend(
            [
                "--yes-always",
                "--no-auto-commits",
                "--no-gitignore",
                "--no-check-update",
                "--analytics-disable",
                "--no-show-model-warnings",
                "--no-pretty",
                "--no-stream",
                "--no-fancy-input",
                "--no-suggest-shell-commands",
                "--no-detect-urls",
            ]
            .map(String::from),
        );
        // The result block is a fenced block: the "whole" edit format (Aider's default for
        // models it does not know) takes every fenced block for a file listing, so the
        // SEARCH/REPLACE format, which leaves other blocks alone. Aider's chat history and
        // its repo map's tags cache (`.aider.tags.cache.v4/`) would be written into the
        // working directory and end up in the task's snapshot: the history goes to the
        // run's scratch directory, and the repo map is off. `args` may set either again.
        args.extend([
            "--edit-format".into(),
            "diff".into(),
            "--map-tokens".into(),
            "0".into(),
            "--chat-history-file".into(),
            call.scratch
                .join("aider.chat.history.md")
                .display()
                .to_string(),
        ]);
        if !call.writes_code() {
            args.extend(["--no-git".into(), "--dry-run".into()]);
        }
        // Its one command: the project's tests after each edit, the tool's choice of command.
        if let Some(tests) = call.shell().and_then(|s| s.tests.as_ref()) {
            args.extend([
                "--test-cmd".into(),
                tests.command.clone(),
                "--auto-test".into(),
            ]);
        }
        match (&call.spec.url, call.model()) {
            (Some(url), model) => {
                let m = model.unwrap_or("default");
                let m = if m.contains('/') {
                    m.to_owned()
                } else {
                    format!("openai/{m}")
                };
                args.extend(["--model".into(), m, "--openai-api-base".into(), url.clone()]);
            }
            (None, Some(m)) => args.extend(["--model".into(), m.to_owned()]),
            (None, None) => {}
        }
        if call.writes_code() {
            let code = call.input.code.files();
            let mut added = 0;
            for token in call
                .input
                .task
                .description
                .split(|c: char| c.is_whitespace() || ",;()`'\"".contains(c))
                .map(|t| t.trim_end_matches(['.', ':']))
            {
                if added < MAX_FILES
                    && !token.is_empty()
                    && code
                        .binary_search_by(|f| f.path.as_str().cmp(token))
                        .is_ok()
                    && !args.iter().any(|a| a == token)
                {
                    args.extend(["--file".into(), token.to_owned()]);
                    added += 1;
                }
            }
        }
        args.extend(call.spec.args.iter().cloned());
        Ok(Launch {
            args,
            env: vec![
                ("LITELLM_LOCAL_MODEL_COST_MAP".into(), "True".into()),
                // Aider prints the answer through rich, which wraps it at $COLUMNS (80 when
                // stdout is not a terminal) — inside the result block's JSON strings too.
                ("COLUMNS".into(), "100000".into()),
            ],
            stdin: None,
        })
    }

    fn has_shell(&self) -> bool {
        false
    }

    fn read(&self, call: &Call<'_>, out: &Output) -> Reply {
        let usage = usage(&out.stdout);
        let fail = |reason: String| Reply::Failed {
            reason,
            usage: usage.clone(),
        };
        if out.code != Some(0) {
            return fail(format!(
                "Aider failed ({}): {}",
                out.describe_exit(),
                out.tail(5)
            ));
        }
        let all = format!("{}\n{}", out.stdout, out.stderr);
        // Aider retries passing errors itself: only the last error counts, and only if it
        // was not retried ("Retrying in 0.2 seconds..." after it).
        if let Some(m) = API_ERROR.find_iter(&all).last()
            && !RETRYING.is_match(&all[m.end()..])
        {
            return fail(format!(
                "Aider reported an API error although it exited 0: {}",
                excerpt(m.as_str(), 300)
            ));
        }
        if call.writes_code()
            && let Some(m) = EDIT_FAILED.find(&all)
        {
            return fail(format!(
                "Aider could not apply the model's edits although it exited 0: {}",
                excerpt(m.as_str(), 300)
            ));
        }
        if out.stdout.trim().is_empty() {
            return fail("Aider printed no answer".into());
        }
        Reply::Answer {
            text: out.stdout.clone(),
            usage,
        }
    }

    fn transient(&self, out: &Output) -> bool {
        out.stdout.contains("RateLimitError") || out.stderr.contains("RateLimitError")
    }
}
