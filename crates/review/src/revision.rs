//! Revision analysis: how a revised task's change compares with the change it replaces.
//!
//! The two changes are compared as unified diffs (`similar`'s `ratio()`, 1.0 = identical), and
//! the files the revision touches that neither its feedback nor the original change mentions
//! are listed as outside the feedback's scope.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use super::diff::{DiffAlgorithm, FileDiff};

/// One revision compared with what it revises.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RevisionAnalysis {
    /// The revision task (`IMPL-001-R1`).
    pub task: String,
    /// The task it revises (`IMPL-001`).
    pub original: String,
    /// `ratio()` of the two unified diffs: 1.0 identical, 0.0 nothing in common.
    pub similarity: f64,
    /// Files the original change touched.
    pub original_files: Vec<String>,
    /// Files the revision touched.
    pub revision_files: Vec<String>,
    /// The revision's `Feedback:` text.
    pub feedback: String,
    /// Files the revision touched that neither the feedback nor the original change mention.
    pub outside_scope: Vec<String>,
    /// Anything that limits the comparison.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The unified diff of a whole change.
pub(crate) fn unified(files: &[FileDiff], algorithm: DiffAlgorithm, deadline: Duration) -> String {
    files
        .iter()
        .map(|f| f.unified(algorithm, deadline))
        .collect()
}

/// Compares the change `revision` made with the change `original` made.
pub(crate) fn compare(
    task: &str,
    original_task: &str,
    feedback: &str,
    original: Option<&[FileDiff]>,
    revision: &[FileDiff],
    algorithm: DiffAlgorithm,
    deadline: Duration,
) -> RevisionAnalysis {
    let names = |files: &[FileDiff]| -> Vec<String> {
        let mut out = BTreeSet::new();
        for f in files {
            out.insert(f.path.clone());
            if let Some(o) = &f.old_path {
                out.insert(o.clone());
            }
        }
        out.into_iter().collect()
    };
    let revision_files = names(revision);
    let original_files = original.map(names).unwrap_or_default();
    let feedback_lower = feedback.to_lowercase();
    let mentioned = |path: &str| {
        let base = path.rsplit('/').next().unwrap_or(path).to_lowercase();
        feedback_lower.contains(&path.to_lowercase()) || feedback_lower.contains(&base)
    };
    let outside_scope = revision_files
        .iter()
        .filter(|p| !original_files.contains(p) && !mentioned(p))
        .cloned()
        .collect();
    let (similarity, note) = match original {
        None => (
            0.0,
            Some(format!(
                "{original_task} has no completed change to compare with"
            )),
        ),
        Some(original) => {
            let old = unified(original, algorithm, deadline);
            let new = unified(revision, algorithm, deadline);
            let until = Instant::now() + deadline;
            let diff = similar::TextDiff::configure()
                .algorithm(similar::Algorithm::Myers)
                .deadline(until)
                .diff_lines(old.as_str(), new.as_str());
            let ratio = f64::from(diff.ratio());
            let note = if original.is_empty() && revision.is_empty() {
                Some("both changes are empty: neither task changed any code".to_owned())
            } else {
                (Instant::now() > until).then(|| {
                    "the comparison hit its deadline: the similarity is approximate".to_owned()
                })
            };
            ((ratio * 1000.0).round() / 1000.0, note)
        }
    };
    RevisionAnalysis {
        task: task.to_owned(),
        original: original_task.to_owned(),
        similarity,
        original_files,
        revision_files,
        feedback: feedback.to_owned(),
        outside_scope,
        note,
    }
}
