//! `runs/<TASK>/<attempt>/candidates.json`: every candidate of a best-of-N task with what it
//! measured, the rule that ranked them and the one picked — so the choice can be audited and
//! made again from the record alone.

/// Format version of the record.
pub(crate) const SCHEMA: u32 = 1;

/// The record's name in a run folder.
pub(crate) const FILE: &str = "candidates.json";

/// The ranking rule, as the record and the pick's event state it.
pub(crate) const RULE: &str = "tests first (a candidate at the pass target beats one without tests, which beats one below it; then the higher pass rate), then the review (APPROVE, then CONDITIONAL, then BLOCK; then the higher score), then the smaller diff (lines added and removed), then the cheaper run (dollars, else tokens), then the lower number; a candidate whose agent failed or that changed nothing ranks last";

/// The candidates of one attempt of a task.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub(crate) struct Candidates {
    pub schema: u32,
    pub task: String,
    pub attempt: u32,
    /// The session tip each candidate was merged into to be measured.
    pub measured_on: String,
    pub rule: String,
    /// The candidate merged; `None` when every candidate failed.
    pub picked: Option<u32>,
    /// The best-ranked candidate, also when none passed (what `pick` would take).
    pub best: Option<u32>,
    /// Why the picked (or best) candidate won, in one line.
    pub why: String,
    /// How a tie was broken, when the rule's measures could not tell two apart.
    pub tie: Option<String>,
    pub accept_first: bool,
    /// Who picked, when not the rule: `user` after `git tlv4 pick`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub picked_by: Option<String>,
    pub candidates: Vec<Candidate>,
}

/// One candidate and its measures.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub(crate) struct Candidate {
    /// From 1.
    pub number: u32,
    pub agent: String,
    pub model: Option<String>,
    /// The `refs/tlv4/runs/…` ref that keeps its snapshot.
    #[serde(rename = "ref")]
    pub reference: Option<String>,
    /// Its snapshot: a commit on `parent`; `None` when none could be taken.
    pub commit: Option<String>,
    /// The session tip it started from.
    pub parent: Option<String>,
    /// `completed`, `failed: <reason>` or `stopped: <reason>`.
    pub outcome: String,
    pub summary: String,
    pub changed: Vec<String>,
    /// Run by an earlier attempt that did not finish, and taken as it was.
    pub reused: bool,
    /// The worker that ran it, `<host>:<pid>` (a remote's workers run candidates of one task
    /// side by side).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worker: Option<String>,
    /// The merge of its snapshot into `measured_on`, measured (not under any ref).
    pub merged: Option<String>,
    /// Paths its change conflicts in with the session.
    pub conflict: Vec<String>,
    pub tests: Option<TestsMeasure>,
    pub review: Option<ReviewMeasure>,
    pub diff: Option<DiffMeasure>,
    pub usage: UsageMeasure,
    /// Its agent's run, wall clock.
    pub seconds: f64,
    /// Measuring it (the merge, the tests, the review), wall clock.
    pub measure_seconds: f64,
    /// 1 is the best.
    pub rank: u32,
}

/// What the project's tests said of the merged candidate.
pub(crate) type TestsMeasure = crate::quality::tester::SuiteMeasure;

/// What the review said of the candidate's change.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub(crate) struct ReviewMeasure {
    /// `APPROVE`, `CONDITIONAL` or `BLOCK`.
    pub verdict: String,
    pub score: f64,
    pub findings: usize,
    /// The critical findings, as `path:line: reason`.
    pub blocking: Vec<String>,
}

/// The size of the candidate's change.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub(crate) struct DiffMeasure {
    pub files: usize,
    pub added: usize,
    pub removed: usize,
}

/// What the candidate's agent spent.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub(crate) struct UsageMeasure {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: Option<f64>,
}

impl Candidate {
    /// Whether its agent finished and its snapshot holds a change.
    pub(crate) fn produced_change(&self) -> bool {
        self.outcome == "completed" && self.commit.is_some() && !self.changed.is_empty()
    }

    /// Whether its agent finished and left a change to measure.
    pub(crate) fn produced(&self) -> bool {
        self.outcome == "completed" && self.merged.is_some()
    }

    /// Whether it can be merged as the task's result: its tests are not below the target and
    /// its review does not block.
    pub(crate) fn passes(&self) -> bool {
        self.produced()
            && self.tests.as_ref().is_none_or(|t| !t.ran || t.meets_target)
            && self.review.as_ref().is_none_or(|r| r.verdict != "BLOCK")
    }

    /// Every test passed and the review approves: nothing better can come
    /// (`--accept-first`).
    pub(crate) fn perfect(&self) -> bool {
        self.produced()
            && self
                .tests
                .as_ref()
                .is_some_and(|t| t.ran && t.meets_target && t.failed == 0)
            && self.review.as_ref().is_some_and(|r| r.verdict == "APPROVE")
    }

    /// The rule's measures, smaller is better, in order (the number left out).
    pub(crate) fn key(&self) -> [i64; 8] {
        let tests = self.tests.as_ref();
        let review = self.review.as_ref();
        let tests_class = match tests {
            Some(t) if t.ran && t.meets_target => 0,
            Some(t) if t.ran => 2,
            _ => 1,
        };
        let rate = tests
            .and_then(|t| t.pass_rate.filter(|_| t.ran))
            .map_or(0, |r| -((r * 10.0).round() as i64));
        let verdict = match review.map(|r| r.verdict.as_str()) {
            Some("APPROVE") => 0,
            Some("CONDITIONAL") => 1,
            Some("BLOCK") => 2,
            _ => 3,
        };
        let score = review.map_or(0, |r| -((r.score * 10.0).round() as i64));
        let lines = self
            .diff
            .as_ref()
            .map_or(i64::MAX, |d| (d.added + d.removed) as i64);
        let cost = match self.usage.cost_usd {
            Some(usd) => (usd * 1_000_000.0).round() as i64,
            None => (self.usage.input_tokens + self.usage.output_tokens) as i64,
        };
        [
            i64::from(!self.produced()),
            tests_class,
            rate,
            verdict,
            score,
            lines,
            cost,
            0,
        ]
    }

    /// The measures in one line: `tests 3/3, APPROVE 92.5, +12 −1, $0.02`.
    pub(crate) fn line(&self) -> String {
        if !self.produced() {
            return if self.outcome == "completed" {
                "changed nothing".to_owned()
            } else {
                tlv4_core::text::clip(&self.outcome, 100)
            };
        }
        let tests = match &self.tests {
            Some(t) if t.ran => format!("tests {}/{}", t.passed, t.passed + t.failed),
            Some(t) => format!("tests not run ({})", tlv4_core::text::clip(&t.note, 40)),
            None => "tests not run".to_owned(),
        };
        let review = self.review.as_ref().map_or("no review".to_owned(), |r| {
            format!("{} {:.1}", r.verdict, r.score)
        });
        let diff = self
            .diff
            .as_ref()
            .map_or(String::new(), |d| format!(", +{} −{}", d.added, d.removed));
        let cost = match self.usage.cost_usd {
            Some(usd) => format!(", ${usd:.2}"),
            None => format!(
                ", {} tokens",
                self.usage.input_tokens + self.usage.output_tokens
            ),
        };
        format!("{tests}, {review}{diff}{cost}")
    }
}

impl Candidates {
    /// Ranks the candidates by [`RULE`] and picks the best when it passes: sets `rank`,
    /// `best`, `picked`, `why` and `tie`.
    pub(crate) fn rank(&mut self) {
        let mut order: Vec<usize> = (0..self.candidates.len()).collect();
        order.sort_by_key(|&i| (self.candidates[i].key(), self.candidates[i].number));
        for (r, &i) in order.iter().enumerate() {
            self.candidates[i].rank = r as u32 + 1;
        }
        self.rule = RULE.to_owned();
        self.schema = SCHEMA;
        let Some(&first) = order.first() else {
            return;
        };
        let best = &self.candidates[first];
        self.best = Some(best.number);
        self.picked = best.passes().then_some(best.number);
        self.tie = order
            .get(1)
            .map(|&i| &self.candidates[i])
            .filter(|second| second.key() == best.key() && best.produced())
            .map(|second| {
                format!(
                    "candidates {} and {} measured the same by every rule; the lower number was taken",
                    best.number, second.number
                )
            });
        self.why = match self.picked {
            Some(n) => format!("candidate {n}: {}", best.line()),
            None => format!(
                "no candidate passes (tests below target, a BLOCK review, or no change); the best is candidate {}: {}",
                best.number,
                best.line()
            ),
        };
    }

    /// The candidate numbered `n`.
    pub(crate) fn get(&self, n: u32) -> Option<&Candidate> {
        self.candidates.iter().find(|c| c.number == n)
    }

    /// Whether a person picked (`git tlv4 pick`), not the rule.
    pub(crate) fn by_user(&self) -> bool {
        self.picked_by.as_deref() == Some("user")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn produced(number: u32, passed: u64, failed: u64, verdict: &str, lines: usize) -> Candidate {
        Candidate {
            number,
            outcome: "completed".into(),
            merged: Some("m".into()),
            tests: Some(TestsMeasure {
                ran: true,
                pass_rate: Some(passed as f64 * 100.0 / (passed + failed) as f64),
                passed,
                failed,
                meets_target: failed == 0,
                ..TestsMeasure::default()
            }),
            review: Some(ReviewMeasure {
                verdict: verdict.into(),
                score: 80.0,
                ..ReviewMeasure::default()
            }),
            diff: Some(DiffMeasure {
                files: 1,
                added: lines,
                removed: 0,
            }),
            ..Candidate::default()
        }
    }

    #[test]
    fn tests_come_first_then_the_review_then_the_smaller_diff() {
        let mut c = Candidates {
            candidates: vec![
                produced(1, 2, 1, "APPROVE", 5),
                produced(2, 3, 0, "BLOCK", 5),
                produced(3, 3, 0, "APPROVE", 50),
                produced(4, 3, 0, "APPROVE", 10),
            ],
            ..Candidates::default()
        };
        c.rank();
        let ranks: Vec<u32> = c.candidates.iter().map(|c| c.rank).collect();
        assert_eq!(ranks, [4, 3, 2, 1]);
        assert_eq!(c.picked, Some(4));
        assert!(
            c.why
                .starts_with("candidate 4: tests 3/3, APPROVE 80.0, +10"),
            "{}",
            c.why
        );
        assert_eq!(c.tie, None);
    }

    #[test]
    fn a_tie_goes_to_the_lower_number_and_says_so() {
        let mut c = Candidates {
            candidates: vec![
                produced(2, 3, 0, "APPROVE", 5),
                produced(1, 3, 0, "APPROVE", 5),
            ],
            ..Candidates::default()
        };
        c.rank();
        assert_eq!(c.picked, Some(1));
        assert!(
            c.tie
                .as_deref()
                .is_some_and(|t| t.contains("candidates 1 and 2")),
            "{:?}",
            c.tie
        );
    }

    #[test]
    fn when_none_passes_nothing_is_picked_and_the_best_is_named() {
        let failed = Candidate {
            number: 1,
            outcome: "failed: agent `x` crashed".into(),
            ..Candidate::default()
        };
        let mut c = Candidates {
            candidates: vec![
                failed,
                produced(2, 1, 2, "APPROVE", 5),
                produced(3, 3, 0, "BLOCK", 5),
            ],
            ..Candidates::default()
        };
        c.rank();
        assert_eq!(c.picked, None);
        assert_eq!(c.best, Some(3));
        assert!(c.why.contains("the best is candidate 3"), "{}", c.why);
        assert_eq!(c.get(1).map(|c| c.rank), Some(3));
    }
}
