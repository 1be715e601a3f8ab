//! `discussions/<round>-discussion.md`: what each perspective said, where they diverged,
//! whether they agreed, and what to do.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::config::Config;
use super::{Critique, Divergence, Severity};

/// Everything the record shows.
pub(super) struct Record<'a> {
    /// The round.
    pub round: &'a str,
    /// The task it followed.
    pub task: &'a str,
    /// The artifact judged.
    pub artifact: String,
    /// Personas and focus of the perspectives.
    pub config: &'a Config,
    /// What each perspective said.
    pub critiques: &'a [Critique],
    /// Critics that failed, with the reason.
    pub failed: &'a [String],
    /// Divergences, most severe first.
    pub divergences: &'a [Divergence],
    /// The round's verdict.
    pub level: Severity,
    /// The mean rating.
    pub average: f64,
    /// Whether consensus was reached.
    pub consensus: bool,
    /// The action items.
    pub actions: &'a [String],
    /// Whether this is the final round.
    pub last: bool,
}

/// The record as markdown.
pub(super) fn render(r: &Record<'_>) -> String {
    let mut s = String::new();
    let perspectives: Vec<&str> = r.critiques.iter().map(|c| c.perspective.as_str()).collect();
    let recommendation = match (r.level, r.last) {
        (Severity::High, true) => "escalate: the user decides",
        (Severity::High, false) => "revise: one revision of the task with the action items",
        (Severity::Medium, _) => "proceed with caution: the action items go to wisdom/issues.md",
        (Severity::Low, _) => "proceed",
    };
    let _ = writeln!(s, "# {} discussion\n", r.round);
    let _ = writeln!(s, "- Round: {} after {}", r.round, r.task);
    let _ = writeln!(s, "- Artifact: `{}`", r.artifact);
    let _ = writeln!(s, "- Perspectives: {}", perspectives.join(", "));
    let _ = writeln!(
        s,
        "- Consensus: {}",
        if r.consensus { "reached" } else { "blocked" }
    );
    let _ = writeln!(s, "- Divergence: {}", r.level.as_str());
    let _ = writeln!(s, "- Average Rating: {:.1} / 5", r.average);
    let _ = writeln!(s, "- Recommendation: {recommendation}\n");

    let _ = writeln!(s, "## Ratings\n");
    let _ = writeln!(
        s,
        "| Perspective | Persona | Rating | Risk level | Coverage gaps |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|");
    for c in r.critiques {
        let _ = writeln!(
            s,
            "| {} | {} | {}/5 | {} | {} |",
            c.perspective,
            c.persona,
            c.rating,
            c.risk.as_str(),
            if c.missing.is_empty() {
                "none".to_owned()
            } else {
                c.missing.join(", ")
            }
        );
    }
    for f in r.failed {
        let _ = writeln!(s, "| {f} | | failed | | |");
    }
    s.push('\n');

    let _ = writeln!(s, "## Perspectives\n");
    for c in r.critiques {
        let focus = r
            .config
            .perspective
            .get(&c.perspective)
            .map_or("", |p| p.focus.as_str());
        let _ = writeln!(
            s,
            "### {} ({}): {}/5\n",
            title(&c.perspective),
            c.persona,
            c.rating
        );
        if !focus.is_empty() {
            let _ = writeln!(s, "Focus: {focus}.\n");
        }
        section(&mut s, "Strengths", &c.strengths);
        section(&mut s, "Weaknesses", &c.weaknesses);
        section(&mut s, "Suggestions", &c.suggestions);
        let _ = writeln!(s, "Measured: {}\n", c.measured.join("; "));
    }

    let _ = writeln!(s, "## Convergent Themes\n");
    let themes = convergent(r.critiques);
    if themes.is_empty() {
        let _ = writeln!(s, "None: no topic was judged alike by two perspectives.\n");
    } else {
        for t in &themes {
            let _ = writeln!(s, "- {t}");
        }
        s.push('\n');
    }

    let _ = writeln!(s, "## Divergent Views\n");
    if r.divergences.is_empty() {
        let _ = writeln!(s, "None.\n");
    } else {
        let _ = writeln!(s, "| Severity | Topic | Perspectives | Detail |");
        let _ = writeln!(s, "|---|---|---|---|");
        for d in r.divergences {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} |",
                d.severity.as_str(),
                d.topic,
                d.perspectives.join(", "),
                d.detail.replace('|', "\\|")
            );
        }
        s.push('\n');
    }

    let _ = writeln!(s, "## Consensus\n");
    let _ = writeln!(
        s,
        "{}: {} HIGH divergences, average rating {:.1} (consensus needs no HIGH divergence and at least {:.1}).\n",
        if r.consensus { "Reached" } else { "Blocked" },
        r.divergences
            .iter()
            .filter(|d| d.severity == Severity::High)
            .count(),
        r.average,
        r.config.consensus.min_average
    );

    let _ = writeln!(s, "## Action Items\n");
    if r.actions.is_empty() {
        let _ = writeln!(s, "None.");
    }
    for (i, a) in r.actions.iter().enumerate() {
        let _ = writeln!(s, "{}. {a}", i + 1);
    }
    s
}

fn section(s: &mut String, name: &str, items: &[String]) {
    let _ = writeln!(s, "{name}:\n");
    if items.is_empty() {
        let _ = writeln!(s, "- none");
    }
    for i in items {
        let _ = writeln!(s, "- {i}");
    }
    s.push('\n');
}

fn title(p: &str) -> String {
    let mut c = p.chars();
    c.next()
        .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
        .unwrap_or_default()
}

/// Topics two or more perspectives judged alike.
fn convergent(critiques: &[Critique]) -> Vec<String> {
    let topics: BTreeSet<&String> = critiques.iter().flat_map(|c| c.topics.keys()).collect();
    let mut out = Vec::new();
    for t in topics {
        let judged: Vec<(&str, bool)> = critiques
            .iter()
            .filter_map(|c| c.topics.get(t).map(|v| (c.perspective.as_str(), *v)))
            .collect();
        if judged.len() < 2 {
            continue;
        }
        let who: Vec<&str> = judged.iter().map(|(p, _)| *p).collect();
        if judged.iter().all(|(_, v)| *v) {
            out.push(format!("{t}: good ({})", who.join(", ")));
        } else if judged.iter().all(|(_, v)| !*v) {
            out.push(format!("{t}: needs work ({})", who.join(", ")));
        }
    }
    out
}
