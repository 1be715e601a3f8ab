//! The builtin specialist: for the files that showed the signals, it lists the lines a
//! specialist should look at, under the checks its role names. It points; it does not judge.

use crate::agents::{Outcome, StateUpdate, TaskInput, TaskOutput};
use crate::error::Result;

/// Words worth a look, per specialist task prefix.
const LOOK_FOR: &[(&str, &[&str])] = &[
    (
        "SECURITY",
        &[
            "password", "passwd", "secret", "token", "select ", "insert ", "execute(", "query(",
            "format!(", "eval(", "md5", "sha1",
        ],
    ),
    (
        "PERF",
        &[
            "for ",
            "while ",
            ".clone()",
            "collect()",
            "sort",
            "sleep",
            "lock()",
        ],
    ),
    (
        "ML",
        &["seed", "fit(", "train", "predict", "shuffle", "random"],
    ),
    (
        "DATA",
        &[
            "create table",
            "alter table",
            "drop ",
            "add column",
            "migration",
            "index",
        ],
    ),
    (
        "DEVOPS",
        &["image:", "run:", "secrets.", "uses:", "from ", "latest"],
    ),
];

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

/// Runs a specialist task.
pub fn run(input: &TaskInput) -> Result<TaskOutput> {
    let prefix = input.task.id.prefix().to_owned();
    let words = LOOK_FOR
        .iter()
        .find(|(p, _)| *p == prefix)
        .map(|(_, w)| *w)
        .unwrap_or(&[]);
    let evidence = field(&input.task.description, "Evidence");
    let signals = field(&input.task.description, "Signals");
    let checks: Vec<&str> = input
        .task
        .description
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- Check "))
        .collect();
    let mut report = format!(
        "# {} report ({})\n\nSignals: {}\n\nThe builtin agent lists where to look; it does not judge the code. \
         A configured agent for the `{}` role gives a real review.\n\n## Checks\n\n",
        input.task.id,
        input.task.role,
        if signals.is_empty() {
            "none".to_owned()
        } else {
            signals.join(", ")
        },
        input.task.role
    );
    for c in &checks {
        report.push_str(&format!("- [ ] {c}\n"));
    }
    report.push_str("\n## Lines to look at\n\n");
    let mut hits = 0;
    for path in &evidence {
        let Some(bytes) = input.code.read_path(path) else {
            continue;
        };
        let text = String::from_utf8_lossy(&bytes);
        let mut lines = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let lower = line.to_lowercase();
            if words.iter().any(|w| lower.contains(w)) && lines.len() < 20 {
                lines.push(format!(
                    "  - {path}:{}: `{}`",
                    n + 1,
                    line.trim().chars().take(100).collect::<String>()
                ));
            }
        }
        if !lines.is_empty() {
            hits += lines.len();
            report.push_str(&format!("- {path}\n{}\n", lines.join("\n")));
        }
    }
    if hits == 0 {
        report.push_str("No line of the evidence files matched.\n");
    }
    let file = format!("artifacts/{}-report.md", input.task.id);
    Ok(TaskOutput {
        outcome: Outcome::Completed,
        summary: format!("{} lines to look at in {} files", hits, evidence.len()),
        files: vec![(file.clone(), report.into_bytes())],
        state_update: StateUpdate {
            key_findings: vec![format!(
                "{hits} lines flagged for the {} checks",
                input.task.role
            )],
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
