//! `git tlv4 review`: score a diff — quality, security, architecture, requirements — with
//! file:line findings and a verdict, as text, JSON or SARIF; optionally fail the command when
//! the change does not pass the bar, and note the scores on the reviewed commit.

use std::collections::HashMap;
use std::time::Duration;

use tlv4_core::error::{Error, Result, exit};
use tlv4_review::{
    self as review, Confidence, Decision, DiffAlgorithm, Options, Requirements, Review, RuleSet,
    Severity, Target, looks_like_task, previous_of,
};
use tlv4_store::store::{Store, session_dir};

use super::Ctx;
use tlv4_core::text::short_id;

/// How the review is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// For the terminal.
    Text,
    /// The review as JSON (the note's fields and every finding).
    Json,
    /// A SARIF 2.1.0 log, for GitHub code scanning and other tools.
    Sarif,
}

/// Arguments of `review`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Exit status: 0 when the review ran, whatever its verdict; with --exit-code, 4 when the verdict is \
BLOCK; with --fail-on SEVERITY, 4 also when a finding of SEVERITY or worse has at least the \
confidence of --fail-on-confidence (default: medium). The output is printed in full first.

A review of a revision range writes nothing unless --note is given; a review of a task of the \
session, or with --session, notes its scores under refs/notes/tlv4-review.")]
pub struct Args {
    /// A revision range (`A..B`, `A...B`, or `REV` for `REV^..REV`) or a task id of the session
    pub target: String,
    /// Output format: text, json, or sarif (SARIF 2.1.0, for GitHub code scanning)
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = Format::Text)]
    pub format: Format,
    /// Print JSON (the same as --format json)
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// Exit with status 4 when the verdict is BLOCK
    #[arg(long)]
    pub exit_code: bool,
    /// Exit with status 4 also when a finding is SEVERITY or worse (critical, high, medium,
    /// low); implies --exit-code
    #[arg(long, value_name = "SEVERITY", value_parser = parse_severity)]
    pub fail_on: Option<Severity>,
    /// The least confidence a finding needs to count for --fail-on: high, medium (the
    /// default) or low
    #[arg(long, value_name = "CONFIDENCE", value_parser = parse_confidence, requires = "fail_on")]
    pub fail_on_confidence: Option<Confidence>,
    /// Note the scores on the reviewed commit under refs/notes/tlv4-review (a review in a
    /// session always does)
    #[arg(long)]
    pub note: bool,
    /// Diff lines with the Patience algorithm instead of Myers
    #[arg(long)]
    pub patience: bool,
    /// With --patience, stop the exact line diff of a file after MS milliseconds and mark the
    /// file approximate (Myers bounds its own cost, as git's does)
    #[arg(long, value_name = "MS", default_value_t = 2000)]
    pub deadline_ms: u64,
}

/// The confidence `--fail-on` counts down to when `--fail-on-confidence` is not given.
const FAIL_ON_CONFIDENCE: Confidence = Confidence::Medium;

fn parse_severity(s: &str) -> std::result::Result<Severity, String> {
    Severity::ALL
        .into_iter()
        .find(|v| v.as_str() == s)
        .ok_or_else(|| format!("`{s}` is not a severity: critical, high, medium or low"))
}

fn parse_confidence(s: &str) -> std::result::Result<Confidence, String> {
    Confidence::ALL
        .into_iter()
        .find(|v| v.as_str() == s)
        .ok_or_else(|| format!("`{s}` is not a confidence: high, medium or low"))
}

/// When the command fails a review: the verdict BLOCK, or a finding at least so severe and
/// so sure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Bar {
    /// Findings of this severity or worse fail it, if set.
    pub severity: Option<Severity>,
    /// The least confidence such a finding needs to count.
    pub confidence: Confidence,
}

impl Bar {
    /// The bar the arguments set, if any.
    fn of(args: &Args) -> Option<Bar> {
        (args.exit_code || args.fail_on.is_some()).then(|| Bar {
            severity: args.fail_on,
            confidence: args.fail_on_confidence.unwrap_or(FAIL_ON_CONFIDENCE),
        })
    }

    /// Whether `review` fails this bar.
    pub(super) fn fails(&self, review: &Review) -> bool {
        review.verdict == Decision::Block
            || self.severity.is_some_and(|worst| {
                review
                    .findings
                    .iter()
                    .any(|f| f.severity <= worst && f.confidence <= self.confidence)
            })
    }
}

/// Runs `review` and returns its exit status: [`exit::OK`], or [`exit::REVIEW_FAILED`] when
/// `--exit-code` or `--fail-on` is given and the review fails the bar.
pub(crate) fn run(ctx: &Ctx<'_>, args: Args) -> Result<i32> {
    let store = ctx.store()?;
    let repo = store.repo();
    let opts = Options {
        algorithm: if args.patience {
            DiffAlgorithm::Patience
        } else {
            DiffAlgorithm::Myers
        },
        deadline: Duration::from_millis(args.deadline_ms),
    };

    // A task of the session, if the target names one; a revision range otherwise.
    let task = if looks_like_task(&args.target) {
        match store.resolve_session(ctx.session.as_deref()) {
            Ok(sid) => {
                let (tip, state) = store.read_state(&sid)?;
                state
                    .tasks
                    .values()
                    .find(|t| t.id.as_str() == args.target)
                    .cloned()
                    .map(|t| (sid, tip, state, t))
            }
            Err(_) => None,
        }
    } else {
        None
    };

    let review = match task {
        Some((sid, tip, state, task)) => {
            let id = task.id.as_str();
            let rules = trusted_rules(store.workdir(), &tlv4_store::pin::pinned(&store, &sid)?.0)?;
            let target = review::task_change(&store, &sid, id, Some(tip))?.ok_or_else(|| {
                Error::state(
                    format!(
                        "task `{id}` of `{sid}` has not completed, so it made no change to review"
                    ),
                    Some("review a revision range instead, e.g. `git tlv4 review HEAD`".into()),
                )
            })?;
            let reqs = review::task_requirements(&store, &sid, tip, &state, id)?;
            let mut result = review::analyze(repo, &rules, &target, &reqs, &opts)?;
            let revised: Vec<&tlv4_core::model::Task> = if previous_of(id).is_some() {
                vec![&task]
            } else if task.id.prefix() == "REVIEW" {
                review::impl_revisions(&state)
                    .iter()
                    .map(|r| &state.tasks[r])
                    .collect()
            } else {
                Vec::new()
            };
            for t in revised {
                match review::revision_analysis(&store, &sid, Some(tip), t, &rules, &opts) {
                    Ok(a) => result.revisions.push(a),
                    Err(e) => ctx.ui.warn(format!("revision analysis of {}: {e}", t.id)),
                }
            }
            (result, target, rules, true)
        }
        None => {
            // The working tree's rules (trusted), never those of the side under review.
            let rules = match repo.workdir() {
                Some(root) => trusted_rules(root, &tlv4_core::trust::Files::read(root)?)?,
                None => RuleSet::builtin()?,
            };
            let target = Target::range(repo, &args.target)?;
            let reqs = match &ctx.session {
                Some(name) => {
                    let sid = store.resolve_session(Some(name))?;
                    let tip = store.tip(&sid)?;
                    let dir = session_dir(&sid);
                    let folder =
                        store.read_folder(store.commit_tree(tip)?, &dir, &["tasks", "runs"])?;
                    Requirements::from_folder(&folder, &dir, None)
                }
                None => Requirements::none(
                    "a revision range outside a session has no plan (pass --session SID to check one)",
                ),
            };
            let result = review::analyze(repo, &rules, &target, &reqs, &opts)?;
            (result, target, rules, ctx.session.is_some())
        }
    };
    let (review, target, rules, in_session) = review;

    match target.note_commit {
        _ if !(args.note || in_session) => {}
        Some(commit) => {
            store.set_note(
                review::NOTES_REF,
                commit,
                &review::note_json(&review),
                "tlv4: review",
            )?;
            ctx.ui.status(format!(
                "scores noted on {} (git notes --ref={} show {})",
                short_id(&commit.to_string()),
                review::NOTES_REF,
                short_id(&commit.to_string())
            ));
        }
        None => ctx
            .ui
            .status("the new side is a tree, not a commit: no note written"),
    }
    let format = if args.json { Format::Json } else { args.format };
    match format {
        Format::Text => ctx.ui.out(review::text(&review)),
        Format::Json => ctx.ui.json(&review),
        Format::Sarif => {
            let lines = new_lines(&store, &target, &review);
            let line_text = |path: &str, line: usize| {
                lines
                    .get(path)
                    .and_then(|text| text.lines().nth(line.checked_sub(1)?))
                    .map(str::to_owned)
            };
            ctx.ui
                .json(&review::sarif::log(&review, &rules, &line_text));
        }
    }
    Ok(match Bar::of(&args) {
        Some(bar) if bar.fails(&review) => exit::REVIEW_FAILED,
        _ => exit::OK,
    })
}

/// The new-side text of each file a finding points at a line of, for the SARIF fingerprints;
/// a file that cannot be read is left out (its findings are fingerprinted by their reason).
fn new_lines(store: &Store, target: &Target, review: &Review) -> HashMap<String, String> {
    let mut texts = HashMap::new();
    for f in review.findings.iter().filter(|f| f.line.is_some()) {
        if texts.contains_key(&f.file) {
            continue;
        }
        if let Ok(Some(bytes)) = store.read_blob_at(target.new_tree, &f.file) {
            texts.insert(f.file.clone(), String::from_utf8_lossy(&bytes).into_owned());
        }
    }
    texts
}

/// The review rules of the configuration `files` read at `root`: the embedded ones, or the
/// override `.tlv4/specs/review-rules.toml` once it is trusted (an untrusted one refuses:
/// it would change the verdict).
fn trusted_rules(root: &std::path::Path, files: &tlv4_core::trust::Files) -> Result<RuleSet> {
    if let Some(bytes) = files.get(review::RULES_OVERRIDE) {
        tlv4_core::trust::check(
            &tlv4_core::trust::stored(root),
            &[tlv4_core::trust::Item {
                path: review::RULES_OVERRIDE.to_owned(),
                id: tlv4_core::trust::blob_id(bytes),
                why: "review rules overriding the embedded ones".into(),
            }],
        )?;
    }
    RuleSet::from_files(files)
}

#[cfg(test)]
mod tests {
    use super::{Bar, Confidence, Decision, Review, Severity};
    use tlv4_review::{Counts, DiffAlgorithm, Dimension, Finding, RequirementsReport, Scores};

    fn review(verdict: Decision, findings: &[(Severity, Confidence)]) -> Review {
        Review {
            schema: 1,
            label: "HEAD".into(),
            old: String::new(),
            new: String::new(),
            algorithm: DiffAlgorithm::Myers,
            deadline_ms: 2000,
            rules: String::new(),
            verdict,
            scores: Scores {
                quality: 100,
                security: 100,
                architecture: 100,
                requirements: 100,
                overall: 100.0,
            },
            counts: Counts::default(),
            empty: false,
            files: Vec::new(),
            findings: findings
                .iter()
                .map(|&(severity, confidence)| Finding {
                    severity,
                    dimension: Dimension::Quality,
                    file: "src/lib.rs".into(),
                    line: Some(1),
                    reason: "r".into(),
                    rule: "r".into(),
                    confidence,
                    context: None,
                })
                .collect(),
            requirements: RequirementsReport::default(),
            revisions: Vec::new(),
            summary: String::new(),
        }
    }

    fn bar(severity: Option<Severity>, confidence: Confidence) -> Bar {
        Bar {
            severity,
            confidence,
        }
    }

    #[test]
    fn exit_code_fails_block_only() {
        let exit_code = bar(None, Confidence::Medium);
        assert!(exit_code.fails(&review(Decision::Block, &[])));
        let high = [(Severity::High, Confidence::High)];
        assert!(!exit_code.fails(&review(Decision::Conditional, &high)));
        assert!(!exit_code.fails(&review(Decision::Approve, &[])));
    }

    #[test]
    fn fail_on_counts_findings_at_or_above_the_severity_with_enough_confidence() {
        let medium = bar(Some(Severity::Medium), Confidence::Medium);
        let of = |s, c| review(Decision::Conditional, &[(s, c)]);
        assert!(medium.fails(&of(Severity::Medium, Confidence::High)));
        assert!(medium.fails(&of(Severity::High, Confidence::Medium)));
        assert!(
            !medium.fails(&of(Severity::Low, Confidence::High)),
            "below the severity"
        );
        assert!(
            !medium.fails(&of(Severity::High, Confidence::Low)),
            "low confidence does not count by default"
        );
        let low = bar(Some(Severity::Medium), Confidence::Low);
        assert!(low.fails(&of(Severity::High, Confidence::Low)));
        let sure = bar(Some(Severity::Low), Confidence::High);
        assert!(!sure.fails(&of(Severity::Critical, Confidence::Medium)));
        // --fail-on implies --exit-code: BLOCK fails whatever the findings.
        assert!(sure.fails(&review(Decision::Block, &[])));
    }
}
