//! Measuring one candidate on what it would become: its snapshot merged into the session tip
//! (a commit under no ref), the project's tests there, the review of its change, its size.

use gix::ObjectId;

use super::record::{Candidate, DiffMeasure, ReviewMeasure};
use crate::agents::{CodeTree, TaskInput};
use crate::quality::QualityContext;
use tlv4_core::error::{Error, Result};
use tlv4_core::store::{Store, session_dir};
use tlv4_core::worktree::{self, MergeOutcome};

/// Measures `c` (whose `commit` is set) against `qctx.tip`: sets `merged`, `conflict`,
/// `tests`, `review` and `diff`. A candidate whose change conflicts with the session is not
/// tested.
pub(super) fn measure(
    store: &Store,
    input: &TaskInput,
    qctx: &QualityContext,
    c: &mut Candidate,
) -> Result<()> {
    let started = std::time::Instant::now();
    let measured = measure_into(store, input, qctx, c);
    c.measure_seconds = started.elapsed().as_secs_f64();
    measured
}

fn measure_into(
    store: &Store,
    input: &TaskInput,
    qctx: &QualityContext,
    c: &mut Candidate,
) -> Result<()> {
    let Some(commit) = c.commit.as_deref() else {
        return Ok(());
    };
    let commit: ObjectId = commit.parse().map_err(|_| {
        Error::Invalid(format!(
            "candidate {}: `{commit}` is not a commit id",
            c.number
        ))
    })?;
    if !c.produced_change() {
        return Ok(());
    }
    let tree = match worktree::merge_task(store, qctx.tip, commit)? {
        MergeOutcome::Clean { tree } => tree,
        MergeOutcome::Conflict { paths, .. } => {
            c.conflict = paths;
            c.outcome = format!(
                "failed: its change conflicts with the session in {}",
                c.conflict.join(", ")
            );
            return Ok(());
        }
    };
    let merged = merge_commit(store, qctx.tip, commit, tree, &input.task.id, c.number)?;
    c.merged = Some(merged.to_string());
    let repo = store.repo();
    let mut probe = input.clone();
    probe.code = CodeTree::from_tree(repo, tree)?;
    let ctx = QualityContext {
        tip: merged,
        ..qctx.clone()
    };
    let suite = crate::quality::tester::measure(&probe, &ctx)?;
    c.tests = Some(suite);
    let (review, diff) = review(store, input, qctx, merged, c.number)?;
    c.review = Some(review);
    c.diff = Some(diff);
    Ok(())
}

/// The merge of candidate `number`'s snapshot into the session tip, as a commit under no ref
/// (what the tests check out and the review compares).
fn merge_commit(
    store: &Store,
    tip: ObjectId,
    snapshot: ObjectId,
    tree: ObjectId,
    task: &tlv4_core::model::TaskId,
    number: u32,
) -> Result<ObjectId> {
    let sig = store.signature();
    let commit = gix::objs::Commit {
        tree,
        parents: [tip, snapshot].into_iter().collect(),
        author: sig.clone(),
        committer: sig,
        encoding: None,
        message: format!("{task}: candidate {number}, merged to be measured\n").into(),
        extra_headers: Vec::new(),
    };
    Ok(store
        .repo()
        .write_object(&commit)
        .map_err(|e| {
            Error::git(
                &format!("cannot write the measured merge of candidate {number}"),
                e,
            )
        })?
        .detach())
}

/// The review of the candidate's change (the tip against its merge, outside `.tlv4/`), with
/// the session's rules and the plan's requirements, and the change's size.
fn review(
    store: &Store,
    input: &TaskInput,
    qctx: &QualityContext,
    merged: ObjectId,
    number: u32,
) -> Result<(ReviewMeasure, DiffMeasure)> {
    let repo = store.repo();
    let rules = tlv4_review::RuleSet::from_files(&qctx.conf.files)?;
    let label = format!("{} candidate {number}", input.task.id);
    let target = tlv4_review::Target::commits(repo, Some(qctx.tip), merged, label)?;
    let reqs = tlv4_review::Requirements::from_folder(
        &input.folder,
        &session_dir(&input.session.id),
        None,
    );
    let review = tlv4_review::analyze(repo, &rules, &target, &reqs, &Default::default())?;
    let blocking = review
        .findings
        .iter()
        .filter(|f| f.severity == tlv4_review::Severity::Critical)
        .map(|f| tlv4_core::text::clip(&format!("{}: {}", f.location(), f.reason), 160))
        .collect();
    let diff = DiffMeasure {
        files: review.files.len(),
        added: review.files.iter().map(|f| f.added).sum(),
        removed: review.files.iter().map(|f| f.removed).sum(),
    };
    Ok((
        ReviewMeasure {
            verdict: review.verdict.as_str().to_owned(),
            score: review.scores.overall,
            findings: review.findings.len(),
            blocking,
        },
        diff,
    ))
}
