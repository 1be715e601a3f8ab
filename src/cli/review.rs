//! `git tlv4 review`: score a diff — quality, security, architecture, requirements — with
//! file:line findings and a verdict, and note the scores on the reviewed commit.

use std::time::Duration;

use crate::error::{Error, Result};
use crate::quality::review::{
    self, DiffAlgorithm, Options, Requirements, RuleSet, Target, looks_like_task, previous_of,
};
use crate::store::session_dir;

use super::Ctx;

/// Arguments of `review`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A revision range (`A..B`, `A...B`, or `REV` for `REV^..REV`) or a task id of the session
    pub target: String,
    /// Print JSON
    #[arg(long)]
    pub json: bool,
    /// Diff lines with the Patience algorithm instead of Myers
    #[arg(long)]
    pub patience: bool,
    /// Stop the exact line diff of a file after MS milliseconds and mark the file approximate
    #[arg(long, value_name = "MS", default_value_t = 2000)]
    pub deadline_ms: u64,
}

pub(crate) fn run(ctx: &Ctx<'_>, args: Args) -> Result<()> {
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
            let rules = trusted_rules(store.workdir(), &crate::trust::pinned(&store, &sid)?.0)?;
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
            let revised: Vec<&crate::model::Task> = if previous_of(id).is_some() {
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
            (result, target)
        }
        None => {
            // The working tree's rules (trusted), never those of the side under review.
            let rules = match repo.workdir() {
                Some(root) => trusted_rules(root, &crate::trust::Files::read(root)?)?,
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
            (
                review::analyze(repo, &rules, &target, &reqs, &opts)?,
                target,
            )
        }
    };
    let (review, target) = review;

    match target.note_commit {
        Some(commit) => {
            store.set_note(
                review::NOTES_REF,
                commit,
                &review::note_json(&review),
                "tlv4: review",
            )?;
            ctx.ui.status(format!(
                "scores noted on {} (git notes --ref={} show {})",
                super::short(&commit.to_string()),
                review::NOTES_REF,
                super::short(&commit.to_string())
            ));
        }
        None => ctx
            .ui
            .status("the new side is a tree, not a commit: no note written"),
    }
    if args.json {
        ctx.ui.json(&review);
    } else {
        ctx.ui.out(review::text(&review));
    }
    Ok(())
}

/// The review rules of the configuration `files` read at `root`: the embedded ones, or the
/// override `.tlv4/specs/review-rules.toml` once it is trusted (an untrusted one refuses:
/// it would change the verdict).
fn trusted_rules(root: &std::path::Path, files: &crate::trust::Files) -> Result<RuleSet> {
    if let Some(bytes) = files.get(review::RULES_OVERRIDE) {
        crate::trust::check(
            root,
            &[crate::trust::Item {
                path: review::RULES_OVERRIDE.to_owned(),
                id: crate::trust::blob_id(bytes),
                why: "review rules overriding the embedded ones".into(),
            }],
        )?;
    }
    RuleSet::from_files(files)
}
