//! The REVIEW task: the session's change reviewed by `tlv4_review`, its report written to the
//! pipeline folder and its scores noted on the tip.

use tlv4_core::error::Result;
use tlv4_review::{
    Decision, NOTES_REF, Options, REPORT_PATH, Requirements, RuleSet, Severity, Target, analyze,
    impl_revisions, markdown, note_json, revision_analysis,
};
use tlv4_store::store::{Store, session_dir};

use super::{QualityContext, QualityResult};
use crate::agents::{Outcome, StateUpdate, TaskInput, TaskOutput};
use tlv4_core::text::clip;

/// Runs a REVIEW task: reviews the session's change (base → tip, outside `.tlv4/`) against
/// the plan, compares revised IMPL tasks with their originals, writes
/// `artifacts/review-report.md` and the scores as a note on the tip.
pub fn run_task(input: &TaskInput, ctx: &QualityContext) -> Result<QualityResult> {
    let repo = ctx.repo.to_thread_local();
    // The rules of the configuration the session runs with (pinned at its start, trusted
    // before the run), never of the code under review.
    let rules = RuleSet::from_files(&ctx.conf.files)?;
    let opts = Options::default();
    let sid = &input.session.id;
    let label = format!(
        "session {sid} ({}..{})",
        &ctx.base.to_hex_with_len(7),
        &ctx.tip.to_hex_with_len(7)
    );
    let target = Target::commits(&repo, Some(ctx.base), ctx.tip, label)?;
    let reqs = Requirements::from_folder(&input.folder, &session_dir(sid), None);
    let mut review = analyze(&repo, &rules, &target, &reqs, &opts)?;

    let store = Store::from_repo(repo.clone())?;
    let state = store.state_at(sid, ctx.tip)?;
    let mut warnings = Vec::new();
    for rev in impl_revisions(&state) {
        match revision_analysis(
            &store,
            sid,
            Some(ctx.tip),
            &state.tasks[&rev],
            &rules,
            &opts,
        ) {
            Ok(a) => review.revisions.push(a),
            Err(e) => warnings.push(format!(
                "{}: revision analysis of {rev} failed: {e}",
                input.task.id
            )),
        }
    }

    let report = markdown(&review);
    let json = note_json(&review);
    store.set_note(NOTES_REF, ctx.tip, &json, "tlv4: review")?;

    let key_findings: Vec<String> = if review.empty {
        vec!["nothing implements the plan: the change under review is empty".into()]
    } else {
        review
            .findings
            .iter()
            .take(5)
            .map(|f| {
                clip(
                    &format!("{} {}: {}", f.severity.as_str(), f.location(), f.reason),
                    97,
                )
            })
            .collect()
    };
    for f in review
        .findings
        .iter()
        .filter(|f| f.severity <= Severity::Medium)
    {
        warnings.push(format!(
            "{}: {} {} ({}): {}",
            input.task.id,
            f.severity.as_str(),
            f.location(),
            f.rule,
            f.reason
        ));
    }
    if review.empty {
        warnings.push(format!(
            "{}: the change under review is empty; nothing implements the plan",
            input.task.id
        ));
    }
    warnings.truncate(50);
    let approximate = review.approximate();
    let mut decisions = vec![format!(
        "verdict {}: {}",
        review.verdict.as_str(),
        match review.verdict {
            Decision::Block => "a critical finding must be fixed before merging",
            Decision::Conditional if review.empty => "an empty change implements nothing",
            Decision::Conditional => "high or medium findings to fix or track",
            Decision::Approve => "no finding above low",
        }
    )];
    if !approximate.is_empty() {
        decisions.push(format!(
            "approximate diff (deadline) for: {}",
            approximate.join(", ")
        ));
    }
    let verdict = review.verdict();
    Ok(QualityResult {
        output: TaskOutput {
            outcome: Outcome::Completed,
            summary: review.summary.clone(),
            files: vec![(REPORT_PATH.to_owned(), report.into_bytes())],
            state_update: StateUpdate {
                key_findings,
                decisions,
                files_modified: vec![REPORT_PATH.to_owned()],
                verification: format!(
                    "deterministic review of {}..{} with similar ({}), rules {}; scores noted under {NOTES_REF}",
                    &ctx.base.to_hex_with_len(7),
                    &ctx.tip.to_hex_with_len(7),
                    opts.algorithm.as_str(),
                    rules.file
                ),
                tech_profile: None,
            },
        },
        verdict: Some(verdict),
        warnings,
        fix: None,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::coordinator::{StartOptions, start};

    use tlv4_core::testutil::Repo;

    #[test]
    fn a_review_task_reports_an_empty_session_plainly_and_notes_the_scores() {
        let repo = Repo::new();
        repo.write("src/app.py", "def main():\n    return 1\n");
        repo.commit("base");
        let store = Store::from_repo(repo.open()).expect("a store");
        let opts = StartOptions {
            pipeline: Some("impl-only".into()),
            no_supervision: true,
            yes: false,
            max_parallel: None,
            completion: None,
            ..StartOptions::default()
        };
        let (sid, state) = start(&store, "add a health check endpoint", &opts).expect("starts");
        let tip = store.tip(&sid).expect("a tip");
        let base: gix::ObjectId = state.session.base.parse().expect("an id");
        let task = state
            .tasks
            .values()
            .find(|t| t.id.prefix() == "REVIEW")
            .expect("a review task")
            .clone();
        let input = TaskInput {
            session: state.session.clone(),
            task,
            folder: BTreeMap::new(),
            code: crate::agents::CodeTree::from_tree(
                store.repo(),
                store.commit_tree(tip).expect("tree"),
            )
            .expect("code"),
        };
        let ctx = QualityContext {
            repo: store.repo().clone().into_sync(),
            base,
            tip,
            conf: Default::default(),
            shell: false,
        };
        let result = run_task(&input, &ctx).expect("the review runs");
        let verdict = result.verdict.expect("a verdict");
        assert_eq!(verdict.verdict, "CONDITIONAL");
        assert!(
            verdict.summary.contains("nothing implements the plan"),
            "{}",
            verdict.summary
        );
        let (path, report) = &result.output.files[0];
        assert_eq!(path, "artifacts/review-report.md");
        let report = String::from_utf8_lossy(report);
        assert!(report.contains("The change is empty"), "{report}");
        assert!(report.contains("| Requirements | 0 |"), "{report}");
        result
            .output
            .state_update
            .validate()
            .expect("a valid state update");
        let note = repo.git(&["notes", "--ref=tlv4-review", "show", &tip.to_string()]);
        let note: serde_json::Value = serde_json::from_str(&note).expect("the note is JSON");
        assert_eq!(note["verdict"], "CONDITIONAL");
        assert_eq!(note["scores"]["requirements"], 0);

        // Code committed on the session branch is reviewed, `.tlv4/` left out.
        repo.git(&["checkout", "-q", &format!("tlv4/{sid}")]);
        let secret = format!("{} = \"{}\"\n", "password", "Tr0ub4dor&3xyzzy");
        repo.write(
            "src/app.py",
            &format!("def main():\n    return 1\n{secret}"),
        );
        let tip = repo.commit("work");
        let ctx = QualityContext { tip, ..ctx };
        let result = run_task(&input, &ctx).expect("the review runs");
        assert_eq!(result.verdict.expect("a verdict").verdict, "BLOCK");
        let report = String::from_utf8_lossy(&result.output.files[0].1).into_owned();
        assert!(report.contains("`src/app.py:3`"), "{report}");
        assert!(!report.contains(".tlv4/sessions"), "{report}");
    }
}
