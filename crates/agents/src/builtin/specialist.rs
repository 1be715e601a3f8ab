//! The builtin specialist: for the files that showed the signals, it lists the lines a
//! specialist should look at, under the checks its role names. It points; it does not judge.
//!
//! The words it looks for are `specialist-look-for.toml`; its report is the template
//! `specialist-report.md`.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use serde::Serialize;

use super::template::{data, render};
use crate::{Outcome, StateUpdate, TaskInput, TaskOutput};
use tlv4_core::error::Result;

/// Words worth a look, per specialist task prefix, read once.
static LOOK_FOR: LazyLock<BTreeMap<String, Vec<String>>> =
    LazyLock::new(|| data(builtin!("specialist-look-for.toml")));

/// At most this many lines are listed per file.
const MAX_LINES: usize = 20;

/// Lines of `prefix: value` in the description, e.g. `Evidence`.
fn field<'a>(description: &'a str, name: &str) -> Vec<&'a str> {
    description
        .lines()
        .filter_map(|l| {
            l.trim()
                .strip_prefix("- ")
                .and_then(|l| l.strip_prefix(name))
                .and_then(|l| l.strip_prefix(": "))
        })
        .flat_map(|v| v.split(", "))
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .collect()
}

/// An evidence file with lines to look at: (line number, its text, trimmed and cut).
#[derive(Serialize)]
struct Flagged<'a> {
    path: &'a str,
    lines: Vec<(usize, String)>,
}

/// Runs a specialist task.
pub(super) fn run(input: &TaskInput) -> Result<TaskOutput> {
    let task = &input.task;
    let words = LOOK_FOR
        .get(task.id.prefix())
        .map_or(&[][..], Vec::as_slice);
    let evidence = field(&task.description, "Evidence");
    let mut files = Vec::new();
    for path in &evidence {
        let Some(bytes) = input.code.read_path(path) else {
            continue;
        };
        let lines: Vec<(usize, String)> = String::from_utf8_lossy(&bytes)
            .lines()
            .enumerate()
            .filter(|(_, line)| {
                let lower = line.to_lowercase();
                words.iter().any(|w| lower.contains(w.as_str()))
            })
            .take(MAX_LINES)
            .map(|(n, line)| (n + 1, line.trim().chars().take(100).collect()))
            .collect();
        if !lines.is_empty() {
            files.push(Flagged { path, lines });
        }
    }
    let hits: usize = files.iter().map(|f| f.lines.len()).sum();
    let checks: Vec<&str> = task
        .description
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- Check "))
        .collect();
    let report = render(
        "specialist-report.md",
        serde_json::json!({
            "id": task.id.to_string(),
            "role": task.role,
            "signals": field(&task.description, "Signals"),
            "checks": checks,
            "files": files,
        }),
    );
    let file = format!("artifacts/{}-report.md", task.id);
    Ok(TaskOutput {
        outcome: Outcome::Completed,
        summary: format!("{hits} lines to look at in {} files", evidence.len()),
        files: vec![(file.clone(), report.into_bytes())],
        state_update: StateUpdate {
            key_findings: vec![format!("{hits} lines flagged for the {} checks", task.role)],
            decisions: Vec::new(),
            files_modified: vec![file],
            verification: format!(
                "scanned {} evidence files for {} patterns",
                evidence.len(),
                words.len()
            ),
            tech_profile: None,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The look-for words parse and the report template renders over its data.
    #[test]
    fn data_and_template() {
        assert!(LOOK_FOR["SECURITY"].contains(&"password".to_owned()));
        let data = serde_json::json!({
            "id": "SECURITY-001", "role": "security-expert", "signals": [], "checks": ["a"],
            "files": [{"path": "x.rs", "lines": [[3, "let password = 1;"]]}],
        });
        let report = render("specialist-report.md", data);
        assert!(report.starts_with("# SECURITY-001 report (security-expert)\n\nSignals: none\n"));
        assert!(report.contains(
            "\n- [ ] a\n\n## Lines to look at\n\n- x.rs\n  - x.rs:3: `let password = 1;`\n"
        ));
    }
}
