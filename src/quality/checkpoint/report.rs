//! `artifacts/CHECKPOINT-NNN-report.md`: the checkpoint's report, and reading an earlier one
//! back for the quality trend.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::LazyLock;

use super::Level;
use super::checks::{Check, Group, Previous};
use super::history::Scope;
use crate::agents::TaskInput;
use tlv4_core::text::cell;
use tlv4_specdoc::md::CHECKPOINT as MD;

/// The path of the report of checkpoint `id`.
pub(super) fn path(id: &str) -> String {
    format!("artifacts/{id}-report.md")
}

/// What the report says.
pub(super) struct Report<'a> {
    /// The checkpoint's input.
    pub input: &'a TaskInput,
    /// What it looked back on.
    pub scope: &'a Scope,
    /// Every check, trend included.
    pub checks: &'a [Check],
    /// The mean of the scored checks.
    pub score: f64,
    /// The verdict.
    pub level: Level,
    /// `baseline`, `stable`, `improving` or `degrading`.
    pub trend: &'a str,
    /// Lines logged to `wisdom/issues.md`.
    pub risks: &'a [String],
    /// Why parts of the session could not be read.
    pub problems: &'a [String],
}

impl Report<'_> {
    /// The report as markdown.
    pub(super) fn render(&self) -> String {
        let id = &self.input.task.id;
        let scored = self.checks.iter().filter(|c| c.score.is_some()).count();
        let mut s = String::new();
        let _ = writeln!(s, "# {id} report\n");
        let _ = writeln!(
            s,
            "Supervisor checkpoint of session `{}` after {}.\n",
            self.input.session.id,
            list(
                &self
                    .scope
                    .direct
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
            )
        );
        let _ = writeln!(s, "- Verdict: {}", self.level.as_str());
        let _ = writeln!(s, "- Score: {:.2}", self.score);
        let _ = writeln!(
            s,
            "- Checks: {scored} scored, {} not applicable",
            self.checks.len() - scored
        );
        let _ = writeln!(s, "- Trend: {}", self.trend);
        let _ = writeln!(s, "- Thresholds: pass ≥ 0.80, warn ≥ 0.50, block < 0.50\n");

        let _ = writeln!(s, "## Scope\n");
        let _ = writeln!(s, "| Task | Role | Status | Expected | Documents |");
        let _ = writeln!(s, "|---|---|---|---|---|");
        for t in &self.scope.tasks {
            let kinds: Vec<&str> = t.kinds.iter().map(|k| k.name()).collect();
            let expected: Vec<String> = t.expected.iter().map(|p| format!("`{p}`")).collect();
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} |",
                t.id,
                or_dash(&t.role),
                t.status.map_or("unknown", |st| st.as_str()),
                or_dash(&expected.join(", ")),
                or_dash(&kinds.join(", "))
            );
        }
        s.push('\n');

        let _ = writeln!(s, "## Results\n");
        for g in Group::ALL {
            let in_group: Vec<&Check> = self.checks.iter().filter(|c| c.group == g).collect();
            if in_group.is_empty() {
                continue;
            }
            let _ = writeln!(s, "### {}\n", g.title());
            let _ = writeln!(s, "| Check | Result | Score | Details |");
            let _ = writeln!(s, "|---|---|---|---|");
            for c in in_group {
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} |",
                    c.name,
                    c.result(),
                    c.score.map_or("—".to_owned(), |v| format!("{v:.1}")),
                    cell(&c.summary)
                );
            }
            s.push('\n');
        }

        let _ = writeln!(s, "## Evidence\n");
        for c in self.checks {
            let _ = writeln!(s, "### {} ({})\n", c.name, c.result());
            let _ = writeln!(s, "{}\n", c.summary);
            for e in &c.evidence {
                let _ = writeln!(s, "- {e}");
            }
            if !c.evidence.is_empty() {
                s.push('\n');
            }
        }
        if !self.problems.is_empty() {
            let _ = writeln!(s, "### What could not be read\n");
            for p in self.problems {
                let _ = writeln!(s, "- {p}");
            }
            s.push('\n');
        }

        let _ = writeln!(s, "## Verdict\n");
        let _ = writeln!(
            s,
            "**{}** with a score of {:.2}, the mean of {scored} checks. {}\n",
            self.level.as_str(),
            self.score,
            match self.level {
                Level::Pass => "The pipeline proceeds.",
                Level::Warn =>
                    "The pipeline proceeds; the weak checks are logged to `wisdom/issues.md`.",
                Level::Block => "The pipeline stops until you decide.",
            }
        );
        if self.level == Level::Block {
            let upstream = self
                .scope
                .direct
                .first()
                .map_or("TASK".to_owned(), ToString::to_string);
            let _ = writeln!(s, "Choose one:\n");
            let _ = writeln!(
                s,
                "1. **Override**: accept the work as it is and go on: `git tlv4 approve`"
            );
            let _ = writeln!(
                s,
                "2. **Revise upstream**: redo {upstream} (and what follows it) with your feedback: \
                 `git tlv4 revise {upstream} --feedback \"…\"`"
            );
            let _ = writeln!(s, "3. **Abort**: stop the session: `git tlv4 abort`\n");
        }

        let _ = writeln!(s, "## Recommendations\n");
        let weak: Vec<&Check> = self
            .checks
            .iter()
            .filter(|c| c.score.is_some_and(|v| v < 1.0))
            .collect();
        if weak.is_empty() {
            let _ = writeln!(s, "None: every applicable check passed.\n");
        }
        for c in weak {
            let _ = writeln!(s, "- {}: {}", c.name, c.advice);
        }
        if !s.ends_with("\n\n") {
            s.push('\n');
        }

        let _ = writeln!(s, "## Risks Logged\n");
        if self.risks.is_empty() {
            let _ = writeln!(s, "None.");
        }
        for r in self.risks {
            let _ = writeln!(s, "- {r}");
        }
        s
    }
}

fn list(items: &[String]) -> String {
    match items.len() {
        0 => "no task".to_owned(),
        _ => items.join(", "),
    }
}

fn or_dash(s: &str) -> &str {
    if s.is_empty() { "—" } else { s }
}

static REPORT: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(r"^artifacts/(CHECKPOINT-([0-9]+))-report\.md$").expect("a valid regex")
});

static SCORE: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(r"(?mi)^[-*\s]*(?:overall\s+)?score\s*[:=]\s*\**([0-9]+(?:\.[0-9]+)?)")
        .expect("a valid regex")
});

/// The report of the latest checkpoint before this one in `input`'s folder.
pub(super) fn previous(input: &TaskInput) -> Option<Previous> {
    let own = REPORT
        .captures(&path(input.task.id.as_str()))
        .and_then(|c| c[2].parse::<u32>().ok());
    let (id, text) = input
        .folder
        .iter()
        .filter_map(|(p, b)| {
            let c = REPORT.captures(p)?;
            let n: u32 = c[2].parse().ok()?;
            (c[1] != *input.task.id.as_str() && own.is_none_or(|o| n < o))
                .then(|| (n, c[1].to_owned(), String::from_utf8_lossy(b).into_owned()))
        })
        .max_by_key(|(n, _, _)| *n)
        .map(|(_, id, text)| (id, text))?;
    let raw: f64 = SCORE.captures(&text)?[1].parse().ok()?;
    let score = if raw > 1.0 { raw / 100.0 } else { raw };
    let mut checks = BTreeMap::new();
    for t in MD.tables(&text) {
        let (Some(name), Some(sc)) = (t.column(&["check"], 0), t.column(&["score"], 0)) else {
            continue;
        };
        for row in &t.rows {
            if let (Some(n), Some(v)) = (
                row.get(name),
                row.get(sc).and_then(|v| v.parse::<f64>().ok()),
            ) {
                checks.insert(n.clone(), v);
            }
        }
    }
    Some(Previous { id, score, checks })
}
