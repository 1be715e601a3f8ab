//! The report's "Best of N" section: each best-of task's candidates side by side, with what
//! they measured, the one picked, and each one's diff (`git diff parent..commit`, clipped).

use tlv4_core::error::Result;
use tlv4_core::model::{SessionId, State};
use tlv4_store::store::Store;

use crate::cli::candidates as cells;
use crate::coordinator::pick;

/// Lines of a candidate's diff shown; the rest is counted.
const DIFF_LINES: usize = 400;
/// Bytes of a candidate's diff shown, whatever its lines.
const DIFF_BYTES: usize = 40_000;

/// The section's data: one entry per best-of task, in task order.
pub(super) fn data(
    store: &Store,
    sid: &SessionId,
    tip: gix::ObjectId,
    state: &State,
) -> Result<Vec<serde_json::Value>> {
    let mut out = Vec::new();
    for (task, found) in pick::all(store, tip, sid, state)? {
        let r = &found.record;
        let candidates: Vec<_> = r
            .candidates
            .iter()
            .map(|c| {
                serde_json::json!({
                    "number": c.number,
                    "picked": r.picked == Some(c.number),
                    "agent": c.agent,
                    "model": c.model,
                    "outcome": c.outcome,
                    "class": if c.outcome == "completed" { "good" } else { "bad" },
                    "summary": c.summary,
                    "tests": cells::tests(c),
                    "tests_class": c.tests.as_ref().map_or("warn", |t| if t.meets_target { "good" } else if t.ran { "bad" } else { "warn" }),
                    "failures": c.tests.as_ref().map(|t| t.failures.clone()).unwrap_or_default(),
                    "review": cells::review(c),
                    "review_class": c.review.as_ref().map_or("warn", |v| super::verdict_class(&v.verdict)),
                    "blocking": c.review.as_ref().map(|v| v.blocking.clone()).unwrap_or_default(),
                    "diff_size": cells::diff(c),
                    "cost": cells::cost(c),
                    "seconds": c.seconds,
                    "rank": c.rank,
                    "ref": c.reference,
                    "conflict": c.conflict,
                    "diff": diff(store, c),
                })
            })
            .collect();
        out.push(serde_json::json!({
            "task": task,
            "attempt": found.attempt,
            "rule": r.rule,
            "why": r.why,
            "tie": r.tie,
            "picked": r.picked,
            "best": r.best,
            "by_user": r.by_user(),
            "candidates": candidates,
        }));
    }
    Ok(out)
}

/// A candidate's change as `git diff parent..commit` prints it, clipped to [`DIFF_LINES`]
/// lines and [`DIFF_BYTES`] bytes; `None` when it has no commit or git cannot show it.
fn diff(store: &Store, c: &pick::Candidate) -> Option<String> {
    let (commit, parent) = (c.commit.as_deref()?, c.parent.as_deref()?);
    let range = format!("{parent}..{commit}");
    let text = tlv4_core::git::run(
        store.workdir(),
        &[
            "diff",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            &range,
            "--",
            ".",
            ":!.tlv4",
        ],
    )
    .ok()?;
    Some(clip(&text))
}

/// `text` cut to [`DIFF_LINES`] lines and [`DIFF_BYTES`] bytes, saying how much was left out.
fn clip(text: &str) -> String {
    let total = text.lines().count();
    let mut out = String::new();
    let mut shown = 0;
    for line in text.lines().take(DIFF_LINES) {
        if out.len() + line.len() + 1 > DIFF_BYTES {
            break;
        }
        out.push_str(line);
        out.push('\n');
        shown += 1;
    }
    if shown < total {
        out.push_str(&format!(
            "… {} more lines (git diff shows them all)\n",
            total - shown
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_diff_is_clipped_and_says_how_much_is_left_out() {
        let short = "a\nb\n";
        assert_eq!(clip(short), short);
        let long: String = (0..DIFF_LINES + 5).map(|i| format!("+{i}\n")).collect();
        let clipped = clip(&long);
        assert_eq!(clipped.lines().count(), DIFF_LINES + 1);
        assert!(
            clipped.ends_with("… 5 more lines (git diff shows them all)\n"),
            "{clipped}"
        );
        let wide: String = (0..10)
            .map(|_| format!("+{}\n", "x".repeat(DIFF_BYTES / 4)))
            .collect();
        assert!(clip(&wide).ends_with("… 7 more lines (git diff shows them all)\n"));
    }
}
