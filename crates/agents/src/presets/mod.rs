//! Presets for the agent CLIs git-tlv4 knows: Claude Code, Codex, Gemini CLI, Qwen Code,
//! OpenCode and Aider. Each says which flags run its CLI headless with the right
//! permissions, how to give it the prompt and an isolated config home, and how to read its
//! output — including the failures it reports with exit code 0.
//!
//! The rule for denied tools and rejected edits: they fail code tasks (the change is then
//! incomplete). Document tasks run read-only on purpose and hand their documents back in the
//! result block, so there a refused write only fails the task where it cannot be by design
//! (Claude: document tasks are offered no writing tools at all).
//!
//! Shell on, inside the box: a code task of a session that runs with shell on ([`Call::shell`],
//! decided at `start` where the kernel's sandbox is full) gets its CLI's shell, and each
//! preset says how, and what becomes of the CLI's own sandbox (off where it is bubblewrap,
//! which cannot start inside Landlock). Without it, and for every document task, the tool
//! sets stay without a shell.

mod aider;
mod claude;
mod codex;
mod gemini;
#[cfg(test)]
mod limit_tests;
mod opencode;
mod qwen;
#[cfg(test)]
mod tests;

use serde_json::Value;

use super::command::{Call, Cli};
use super::process::home::ARGV_PROMPT_LIMIT;

/// The preset drivers, by name.
pub const PRESETS: [&str; 6] = ["claude", "codex", "gemini", "qwen", "opencode", "aider"];

/// The preset called `name`.
pub fn preset(name: &str) -> Option<Box<dyn Cli>> {
    match name {
        "claude" => Some(Box::new(claude::Claude)),
        "codex" => Some(Box::new(codex::Codex)),
        "gemini" => Some(Box::new(gemini::Gemini)),
        "qwen" => Some(Box::new(qwen::Qwen)),
        "opencode" => Some(Box::new(opencode::OpenCode)),
        "aider" => Some(Box::new(aider::Aider)),
        _ => None,
    }
}

/// The short argument sent when the prompt itself goes on stdin or in a file.
const LEAD: &str = "Do the task described in the instructions given with this message, and end \
                    your answer with the result block they ask for.";

/// Whether the prompt may go on the command line.
fn fits_argv(call: &Call<'_>) -> bool {
    call.prompt.len() <= ARGV_PROMPT_LIMIT
}

/// Every line of `text` that is a JSON object, in order.
fn json_lines(text: &str) -> impl Iterator<Item = Value> + '_ {
    text.lines().filter_map(|l| {
        let l = l.trim();
        if l.starts_with('{') {
            serde_json::from_str::<Value>(l)
                .ok()
                .filter(Value::is_object)
        } else {
            None
        }
    })
}

/// The JSON document `text` holds: all of it, or else the last line that parses.
fn json_document(text: &str) -> Option<Value> {
    let t = text.trim();
    if let Ok(v) = serde_json::from_str::<Value>(t) {
        return Some(v);
    }
    if let Some(start) = t.find(['{', '['])
        && let Ok(v) = serde_json::from_str::<Value>(&t[start..])
    {
        return Some(v);
    }
    t.lines()
        .rev()
        .find_map(|l| serde_json::from_str::<Value>(l.trim()).ok())
}

/// A number at `path` (object keys), as u64.
fn u64_at(v: &Value, path: &[&str]) -> u64 {
    let mut cur = v;
    for k in path {
        match cur.get(k) {
            Some(next) => cur = next,
            None => return 0,
        }
    }
    cur.as_u64()
        .or_else(|| cur.as_f64().map(|f| f.max(0.0) as u64))
        .unwrap_or(0)
}

/// A string at `key`.
fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}
