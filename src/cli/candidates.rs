//! `git tlv4 candidates TASK`: the candidates a best-of task ran, side by side, read from
//! `runs/<TASK>/<attempt>/candidates.json` of its latest attempt that has one.

use tlv4_core::error::Result;
use tlv4_core::model::TaskId;

use crate::coordinator::pick::{self, Candidate, Candidates};

use super::Ctx;

/// Arguments of `candidates`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
One row per candidate: its number (`*` the one merged), agent, outcome, the project's tests \
on its merge into the session, the reviewer's verdict and score on its diff, the diff's size, \
cost, seconds and the ref its commit is kept under; then the ranking rule and why the picked \
one won. `git tlv4 pick TASK N` takes another.")]
pub struct Args {
    /// The best-of task
    #[arg(value_name = "TASK")]
    pub task: TaskId,
    /// Print the record (candidates.json) instead
    #[arg(long)]
    pub json: bool,
}

pub(crate) fn run(ctx: &Ctx<'_>, args: Args) -> Result<()> {
    let (store, sid) = ctx.session()?;
    let found = pick::of_task(&store, &sid, &args.task)?;
    if args.json {
        ctx.ui.json(&found.raw);
        return Ok(());
    }
    let r = &found.record;
    let heading = format!(
        "{}, attempt {}: best of {}\n\n",
        args.task,
        found.attempt,
        r.candidates.len()
    );
    ctx.ui
        .out(format!("{heading}{}", table(&args.task, r)).trim_end());
    Ok(())
}

/// The table of candidates, then the rule and the why (or the tie) line.
pub(crate) fn table(task: &TaskId, record: &Candidates) -> String {
    let mut rows: Vec<[String; 9]> = vec![[
        "  #".into(),
        "AGENT".into(),
        "OUTCOME".into(),
        "TESTS".into(),
        "REVIEW".into(),
        "DIFF".into(),
        "COST".into(),
        "SECONDS".into(),
        "REF".into(),
    ]];
    for c in &record.candidates {
        let mark = if record.picked == Some(c.number) {
            '*'
        } else {
            ' '
        };
        rows.push([
            format!("{mark} {}", c.number),
            agent(c),
            c.outcome.clone(),
            tests(c),
            review(c),
            diff(c),
            cost(c),
            format!("{:.1}", c.seconds),
            c.reference.clone().unwrap_or_else(|| "-".into()),
        ]);
    }
    let widths: Vec<usize> = (0..9)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in &rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out.push('\n');
    if !record.rule.is_empty() {
        out.push_str(&format!("rule: {}\n", record.rule));
    }
    match record.picked {
        Some(n) => {
            let who = if record.by_user() {
                "the user"
            } else {
                "the rule"
            };
            out.push_str(&format!("picked {n} (by {who}): {}\n", record.why));
        }
        None => {
            out.push_str("picked none: every candidate fell short");
            if let Some(b) = record.best {
                out.push_str(&format!(
                    "; the best is {b} (git tlv4 pick {task} {b} takes it)"
                ));
            }
            out.push('\n');
        }
    }
    if let Some(tie) = record.tie.as_deref().filter(|t| !t.is_empty()) {
        out.push_str(&format!("tie: {tie}\n"));
    }
    if record.accept_first {
        out.push_str(
            "the first candidate to meet the target was taken without waiting for the others\n",
        );
    }
    out
}

fn agent(c: &Candidate) -> String {
    match &c.model {
        Some(m) if !m.is_empty() => format!("{} ({m})", c.agent),
        _ => c.agent.clone(),
    }
}

/// `3/3 passed`, or what is known.
pub(crate) fn tests(c: &Candidate) -> String {
    match &c.tests {
        None => "-".into(),
        Some(t) if !t.ran => "not run".into(),
        Some(t) if t.passed + t.failed == 0 => match t.pass_rate {
            Some(r) => format!("{r:.0}%"),
            None => "none found".into(),
        },
        Some(t) => format!("{}/{} passed", t.passed, t.passed + t.failed),
    }
}

/// The verdict and score.
pub(crate) fn review(c: &Candidate) -> String {
    match &c.review {
        None => "-".into(),
        Some(r) => format!("{} {:.0}", r.verdict, r.score),
    }
}

/// `+A -R in F files`.
pub(crate) fn diff(c: &Candidate) -> String {
    match &c.diff {
        None => "-".into(),
        Some(d) => format!(
            "+{} -{} in {} file{}",
            d.added,
            d.removed,
            d.files,
            if d.files == 1 { "" } else { "s" }
        ),
    }
}

/// Dollars, else the tokens, or `-` when the agent reported neither.
pub(crate) fn cost(c: &Candidate) -> String {
    let tokens = c.usage.input_tokens + c.usage.output_tokens;
    match c.usage.cost_usd {
        Some(usd) => format!("${usd:.4}"),
        None if tokens > 0 => format!("{tokens} tokens"),
        None => "-".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coordinator::bestof::record::{ReviewMeasure, TestsMeasure};

    const RECORD: &str = r#"{
      "schema": 1, "task": "IMPL-001", "attempt": 1, "measured_on": "abc",
      "rule": "tests first, then the review's score, then the smaller diff",
      "picked": 2, "best": 2, "why": "all tests pass and the review passes", "tie": null,
      "accept_first": false, "some_future_field": 7,
      "candidates": [
        {"number": 1, "agent": "fake-a", "model": null, "ref": "refs/tlv4/runs/S/IMPL-001/1-c1",
         "commit": "c1", "parent": "p", "outcome": "completed", "summary": "one",
         "changed": ["src/app.py"], "reused": false, "merged": "m1", "conflict": [],
         "tests": {"ran": true, "pass_rate": 66.7, "passed": 2, "failed": 1, "skipped": 0,
                   "meets_target": false, "failures": ["t::x"], "note": ""},
         "review": {"verdict": "BLOCK", "score": 40.0, "findings": 2, "blocking": ["x"]},
         "diff": {"files": 1, "added": 10, "removed": 0},
         "usage": {"input_tokens": 100, "output_tokens": 50, "cost_usd": 0.01},
         "seconds": 3.2, "rank": 2},
        {"number": 2, "agent": "fake-b", "model": "m-2", "ref": "refs/tlv4/runs/S/IMPL-001/1-c2",
         "commit": "c2", "parent": "p", "outcome": "completed", "summary": "two",
         "changed": ["src/app.py", "src/b.py"], "merged": "m2",
         "tests": {"ran": true, "pass_rate": 100.0, "passed": 3, "failed": 0},
         "review": {"verdict": "PASS", "score": 91.6},
         "diff": {"files": 2, "added": 12, "removed": 3},
         "usage": {"cost_usd": 0.02}, "seconds": 4.0, "rank": 1},
        {"number": 3, "agent": "fake-c", "ref": "refs/tlv4/runs/S/IMPL-001/1-c3",
         "commit": null, "outcome": "failed: the agent timed out", "tests": null,
         "review": null, "merged": null, "seconds": 60.0, "rank": 3}
      ]
    }"#;

    #[test]
    fn the_table_shows_every_candidate_and_marks_the_pick() {
        let (record, raw) = pick::parse(RECORD.as_bytes()).unwrap();
        assert_eq!(
            raw["some_future_field"], 7,
            "the raw record keeps every field"
        );
        let task: TaskId = "IMPL-001".parse().unwrap();
        let text = table(&task, &record);
        let expected = r#"
  #  AGENT         OUTCOME                      TESTS       REVIEW    DIFF               COST     SECONDS  REF
  1  fake-a        completed                    2/3 passed  BLOCK 40  +10 -0 in 1 file   $0.0100  3.2      refs/tlv4/runs/S/IMPL-001/1-c1
* 2  fake-b (m-2)  completed                    3/3 passed  PASS 92   +12 -3 in 2 files  $0.0200  4.0      refs/tlv4/runs/S/IMPL-001/1-c2
  3  fake-c        failed: the agent timed out  -           -         -                  -        60.0     refs/tlv4/runs/S/IMPL-001/1-c3

rule: tests first, then the review's score, then the smaller diff
picked 2 (by the rule): all tests pass and the review passes
"#;
        assert_eq!(format!("\n{text}"), expected);
    }

    #[test]
    fn a_task_whose_candidates_all_fell_short_names_the_best_and_how_to_take_it() {
        let (mut record, _) = pick::parse(RECORD.as_bytes()).unwrap();
        record.picked = None;
        record.tie = Some("1 and 2 equal on every measure: the cheaper first".into());
        let task: TaskId = "IMPL-001".parse().unwrap();
        let text = table(&task, &record);
        assert!(!text.contains("* "), "{text}");
        assert!(
            text.contains("picked none: every candidate fell short; the best is 2 (git tlv4 pick IMPL-001 2 takes it)"),
            "{text}"
        );
        assert!(text.contains("\ntie: 1 and 2 equal"), "{text}");
    }

    #[test]
    fn cells_say_what_is_known() {
        let mut c = Candidate::default();
        assert_eq!(
            (tests(&c), review(&c), diff(&c), cost(&c)),
            ("-".into(), "-".into(), "-".into(), "-".into())
        );
        c.tests = Some(TestsMeasure::default());
        assert_eq!(tests(&c), "not run");
        c.tests = Some(TestsMeasure {
            ran: true,
            ..Default::default()
        });
        assert_eq!(tests(&c), "none found");
        c.review = Some(ReviewMeasure {
            verdict: "CONDITIONAL".into(),
            score: 61.5,
            ..Default::default()
        });
        assert_eq!(review(&c), "CONDITIONAL 62");
        c.usage.input_tokens = 1200;
        assert_eq!(cost(&c), "1200 tokens");
    }
}
