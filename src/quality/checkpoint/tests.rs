//! Tests of the checkpoints, on real sessions: a repository made with the `git` CLI, a
//! session started by the coordinator, the builtin agent's documents, and events and
//! messages written the way the scheduling loop writes them.

use std::collections::BTreeMap;

use super::run_task;
use crate::agents::builtin::Builtin;
use crate::agents::{Agent, CodeTree, Outcome, TaskInput, TaskOutput};
use crate::coordinator::{StartOptions, start};
use crate::quality::{QualityContext, QualityResult};
use tlv4_core::model::{
    Event, EventKind, Message, Owner, SessionId, TaskId, TaskResult, TaskStatus,
};
use tlv4_store::store::{Store, session_dir};

/// The request every test session works on.
pub(crate) const REQUEST: &str = "Add a password reset flow for users: users request a reset \
    link by email and set a new password. Reset links must expire after 30 minutes.";

use tlv4_core::testutil::git;

/// A session in a throwaway repository holding a small Rust project.
pub(crate) struct Harness {
    _dir: tempfile::TempDir,
    pub store: Store,
    pub sid: SessionId,
}

impl Harness {
    /// A repository with code, and a session of `pipeline` on [`REQUEST`].
    pub(crate) fn new(pipeline: &str) -> Harness {
        let dir = tempfile::tempdir().expect("temp dir");
        git(dir.path(), &["init", "-q"]);
        for (path, content) in [
            (
                "Cargo.toml",
                "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nserde = \"1\"\n",
            ),
            ("src/main.rs", "mod login;\nfn main() { login::run(); }\n"),
            (
                "src/login.rs",
                "/// Signs a user in.\npub fn run() { let password = \"\"; let _ = password; }\n",
            ),
            (
                "src/mail.rs",
                "/// Sends an email.\npub fn send(to: &str, body: &str) { let _ = (to, body); }\n",
            ),
            (
                "tests/login.rs",
                "#[test]\nfn signs_in() { assert!(true); }\n",
            ),
            (
                "README.md",
                "# app\n\nA small web app with user accounts.\n",
            ),
        ] {
            let full = dir.path().join(path);
            std::fs::create_dir_all(full.parent().expect("a file has a parent")).unwrap();
            std::fs::write(full, content).unwrap();
        }
        git(dir.path(), &["add", "-A"]);
        git(dir.path(), &["commit", "-q", "-m", "init"]);
        let store = Store::from_repo(gix::open(dir.path()).expect("open the repository")).unwrap();
        let (sid, _) = start(
            &store,
            REQUEST,
            &StartOptions {
                pipeline: Some(pipeline.into()),
                ..Default::default()
            },
        )
        .expect("the session starts");
        Harness {
            _dir: dir,
            store,
            sid,
        }
    }

    /// Claims `id` the way the loop does and builds its input from the new tip.
    pub(crate) fn claim(&self, id: &str) -> (TaskInput, QualityContext) {
        let id: TaskId = id.parse().unwrap();
        let written = self
            .store
            .transact(&self.sid, |txn| {
                let t = txn.state.task_mut(&id)?;
                t.status = TaskStatus::InProgress;
                t.attempts += 1;
                t.owner = Some(Owner {
                    host: "test".into(),
                    pid: 1,
                    started_at: tlv4_core::clock::now_rfc3339(),
                    start_time: None,
                });
                let summary = format!("Claimed, attempt {}", t.attempts);
                Ok(Some(Event::task(EventKind::TaskClaimed, t, summary)))
            })
            .unwrap()
            .expect("the claim is written");
        let repo = self.store.repo();
        let tree = self.store.commit_tree(written.commit).unwrap();
        let head = repo.head_commit().unwrap().tree_id().unwrap().detach();
        let input = TaskInput {
            session: written.state.session.clone(),
            task: written.state.tasks[&id].clone(),
            folder: self
                .store
                .read_folder(tree, &session_dir(&self.sid), &["tasks", "runs"])
                .unwrap()
                .into_iter()
                .filter(|(k, _)| k != "session.toml" && k != "control.toml")
                .collect(),
            code: CodeTree::from_tree(repo, head).unwrap(),
        };
        let ctx = QualityContext {
            repo: repo.clone().into_sync(),
            base: written.state.session.base.parse().unwrap(),
            tip: written.commit,
            conf: Default::default(),
            shell: false,
        };
        (input, ctx)
    }

    /// Records the end of a claimed task and its bus message, as the loop does.
    pub(crate) fn finish(&self, id: &str, output: &TaskOutput) {
        let id: TaskId = id.parse().unwrap();
        let completed = output.outcome == Outcome::Completed;
        let written = self
            .store
            .transact(&self.sid, |txn| {
                if completed {
                    for (path, bytes) in &output.files {
                        txn.write_file(path, bytes.clone())?;
                    }
                }
                let t = txn.state.task_mut(&id)?;
                t.owner = None;
                t.status = if completed {
                    TaskStatus::Completed
                } else {
                    TaskStatus::Failed
                };
                t.result = Some(TaskResult {
                    summary: output.summary.clone(),
                    reason: match &output.outcome {
                        Outcome::Failed(r) => Some(r.clone()),
                        Outcome::Completed => None,
                    },
                    artifacts: output.files.iter().map(|(p, _)| p.clone()).collect(),
                    finished_at: tlv4_core::clock::now_rfc3339(),
                });
                let kind = if completed {
                    EventKind::TaskCompleted
                } else {
                    EventKind::TaskFailed
                };
                Ok(Some(Event::task(kind, t, output.summary.clone())))
            })
            .unwrap()
            .expect("the result is written");
        let task = &written.state.tasks[&id];
        self.store
            .send_message(
                &self.sid,
                &Message {
                    id: tlv4_core::clock::unique_id(),
                    ts: tlv4_core::clock::now_rfc3339(),
                    from: task.role.to_string(),
                    to: None,
                    kind: if completed {
                        "task_complete".into()
                    } else {
                        "error".into()
                    },
                    summary: output.summary.clone(),
                    data: Some(
                        serde_json::json!({ "task": id, "state_update": output.state_update }),
                    ),
                },
            )
            .unwrap();
    }

    /// Runs `id` with the builtin agent and records it; returns its input and output.
    pub(crate) fn run_builtin(&self, id: &str) -> (TaskInput, TaskOutput) {
        let (input, _) = self.claim(id);
        let output = Builtin.run(&input).unwrap();
        assert_eq!(
            output.outcome,
            Outcome::Completed,
            "{id}: {}",
            output.summary
        );
        self.finish(id, &output);
        (input, output)
    }

    /// Claims checkpoint `id`, runs it on the folder `edit` leaves, and records its result.
    pub(crate) fn checkpoint(
        &self,
        id: &str,
        edit: impl FnOnce(&mut BTreeMap<String, Vec<u8>>),
    ) -> QualityResult {
        let (mut input, ctx) = self.claim(id);
        edit(&mut input.folder);
        let result = run_task(&input, &ctx).unwrap();
        self.finish(id, &result.output);
        result
    }
}

fn report(r: &QualityResult) -> String {
    assert_eq!(r.output.files.len(), 1);
    String::from_utf8(r.output.files[0].1.clone()).unwrap()
}

/// The row of check `name` in a report: (result, score).
fn row(report: &str, name: &str) -> (String, String) {
    let line = report
        .lines()
        .find(|l| l.starts_with(&format!("| {name} |")))
        .unwrap_or_else(|| panic!("no row for {name} in\n{report}"));
    let cells: Vec<&str> = line.split('|').map(str::trim).collect();
    (cells[2].to_owned(), cells[3].to_owned())
}

fn verdict(r: &QualityResult) -> (&str, f64) {
    let v = r.verdict.as_ref().expect("a checkpoint has a verdict");
    (v.verdict.as_str(), v.score.expect("a checkpoint scores"))
}

fn spec_through(h: &Harness, last: &str) {
    for id in [
        "RESEARCH-001",
        "DRAFT-001",
        "DRAFT-002",
        "DRAFT-003",
        "DRAFT-004",
    ] {
        h.run_builtin(id);
        if id == last {
            return;
        }
        if id == "DRAFT-002" {
            let r = h.checkpoint("CHECKPOINT-001", |_| {});
            assert_eq!(verdict(&r).0, "pass", "{}", report(&r));
        }
    }
}

#[test]
fn consistent_builtin_documents_pass_every_checkpoint() {
    let h = Harness::new("full-lifecycle");
    spec_through(&h, "DRAFT-002");
    let cp1 = h.checkpoint("CHECKPOINT-001", |_| {});
    let text = report(&cp1);
    assert_eq!(verdict(&cp1).0, "pass", "{text}");
    assert!(cp1.warnings.is_empty());
    assert_eq!(cp1.output.files[0].0, "artifacts/CHECKPOINT-001-report.md");
    for name in [
        "Terminology consistency",
        "Upstream consumed",
        "Artifacts exist",
        "Decision chain",
        "Error and retry patterns",
        "Scope consistency",
    ] {
        assert_eq!(row(&text, name).0, "pass", "{name} in\n{text}");
    }
    assert_eq!(row(&text, "Quality trend").0, "n/a");
    assert!(
        text.contains("| RESEARCH-001 | analyst | completed |"),
        "{text}"
    );
    assert!(
        !text.contains("Override"),
        "only a block offers the options"
    );

    h.run_builtin("DRAFT-003");
    h.run_builtin("DRAFT-004");
    let cp2 = h.checkpoint("CHECKPOINT-002", |_| {});
    let text = report(&cp2);
    assert_eq!(verdict(&cp2).0, "pass", "{text}");
    for name in [
        "Architecture ↔ epics alignment",
        "Upstream consumed",
        "Terminology consistency",
    ] {
        assert_eq!(row(&text, name).0, "pass", "{name} in\n{text}");
    }
    assert_ne!(
        row(&text, "Quality trend").0,
        "n/a",
        "CHECKPOINT-001's report is the baseline"
    );
    assert!(text.contains("CHECKPOINT-001"), "{text}");

    let (input, ctx) = h.claim("QUALITY-001");
    let gate = crate::quality::run(&input, &ctx).unwrap();
    h.finish("QUALITY-001", &gate.output);
    h.run_builtin("PLAN-001");
    let cp3 = h.checkpoint("CHECKPOINT-003", |_| {});
    let text = report(&cp3);
    assert_eq!(verdict(&cp3).0, "pass", "{text}");
    for name in [
        "Plan covers requirements",
        "Dependency chain valid",
        "Complexity sanity",
    ] {
        assert_eq!(row(&text, name).0, "pass", "{name} in\n{text}");
    }
}

#[test]
fn missing_upstream_artifacts_block_with_the_three_options() {
    let h = Harness::new("spec-only");
    h.run_builtin("RESEARCH-001");
    // DRAFT-001 and DRAFT-002 never ran: the checkpoint finds neither brief nor requirements.
    let r = h.checkpoint("CHECKPOINT-001", |_| {});
    let text = report(&r);
    let (v, score) = verdict(&r);
    assert_eq!(v, "block", "{text}");
    assert!(score < 0.5);
    assert_eq!(row(&text, "Artifacts exist").0, "fail", "{text}");
    assert!(text.contains("DRAFT-001 `spec/product-brief.md`"), "{text}");
    assert!(text.contains("git tlv4 approve"));
    assert!(text.contains("git tlv4 revise DRAFT-002 --feedback"));
    assert!(text.contains("git tlv4 abort"));
    assert!(
        r.warnings.is_empty(),
        "a block pauses; it does not log warnings"
    );
}

#[test]
fn drifting_names_and_an_untraced_goal_warn() {
    let h = Harness::new("spec-only");
    spec_through(&h, "DRAFT-002");
    let r = h.checkpoint("CHECKPOINT-001", |folder| {
        // Rename REQ-001 in its own file only, and drop every trace to the first goal.
        let path = folder
            .keys()
            .find(|k| k.starts_with("spec/requirements/REQ-001"))
            .cloned()
            .expect("the writer wrote REQ-001");
        let text = String::from_utf8(folder[&path].clone()).unwrap();
        let renamed: String = text
            .lines()
            .map(|l| {
                if l.starts_with("# REQ-001:") {
                    "# REQ-001: Quarterly invoice export to spreadsheets".to_owned()
                } else {
                    l.to_owned()
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        folder.insert(path, renamed.into_bytes());
        for (_, v) in folder
            .iter_mut()
            .filter(|(k, _)| k.starts_with("spec/requirements/"))
        {
            let t = String::from_utf8(v.clone()).unwrap();
            *v = t.replace("G-001", "G-000").into_bytes();
        }
    });
    let text = report(&r);
    let (v, score) = verdict(&r);
    assert_eq!(v, "warn", "{text}");
    assert!((0.5..0.8).contains(&score));
    assert_ne!(row(&text, "Terminology consistency").0, "pass", "{text}");
    assert!(
        text.contains("Quarterly invoice export"),
        "the drift is shown: {text}"
    );
    assert_ne!(row(&text, "Upstream consumed").0, "pass", "{text}");
    assert!(!r.warnings.is_empty());
    assert!(
        r.warnings
            .iter()
            .any(|w| w.starts_with("Terminology consistency")),
        "{:?}",
        r.warnings
    );
    assert!(text.contains("## Risks Logged"));
}

#[test]
fn the_health_check_sees_a_failed_attempt() {
    let h = Harness::new("spec-only");
    h.claim("RESEARCH-001");
    h.finish(
        "RESEARCH-001",
        &TaskOutput {
            outcome: Outcome::Failed("the scan timed out".into()),
            summary: "the scan timed out".into(),
            files: Vec::new(),
            state_update: Default::default(),
        },
    );
    spec_through(&h, "DRAFT-002");
    let r = h.checkpoint("CHECKPOINT-001", |_| {});
    let text = report(&r);
    assert_eq!(
        row(&text, "Error and retry patterns"),
        ("warn".into(), "0.5".into()),
        "{text}"
    );
    assert!(
        text.contains("RESEARCH-001 failed (attempt 1): the scan timed out"),
        "{text}"
    );
    assert!(
        text.contains("RESEARCH-001 attempt 2"),
        "the retry is seen: {text}"
    );
    assert_eq!(
        verdict(&r).0,
        "pass",
        "one failure alone does not stop the pipeline"
    );
}

#[test]
fn three_failures_of_one_role_fail_the_health_check() {
    let h = Harness::new("spec-only");
    for _ in 0..3 {
        h.claim("RESEARCH-001");
        h.finish(
            "RESEARCH-001",
            &TaskOutput {
                outcome: Outcome::Failed("no network".into()),
                summary: "no network".into(),
                files: Vec::new(),
                state_update: Default::default(),
            },
        );
    }
    spec_through(&h, "DRAFT-002");
    let text = report(&h.checkpoint("CHECKPOINT-001", |_| {}));
    assert_eq!(row(&text, "Error and retry patterns").0, "fail", "{text}");
    assert!(
        text.contains("analyst: 3 failed attempts, 3 error messages"),
        "{text}"
    );
}

#[test]
fn a_worse_checkpoint_than_the_last_one_degrades_the_trend() {
    let h = Harness::new("spec-only");
    spec_through(&h, "DRAFT-004");
    let r = h.checkpoint("CHECKPOINT-002", |folder| {
        folder.insert(
            "artifacts/CHECKPOINT-001-report.md".into(),
            b"# CHECKPOINT-001 report\n\n- Verdict: pass\n- Score: 1.00\n".to_vec(),
        );
        folder.retain(|k, _| !k.starts_with("spec/epics/EPIC-"));
    });
    let text = report(&r);
    assert!(text.contains("- Trend: degrading"), "{text}");
    assert_ne!(row(&text, "Quality trend").0, "pass", "{text}");
}

#[test]
fn feedback_in_scope_must_be_carried_forward() {
    let h = Harness::new("spec-only");
    spec_through(&h, "DRAFT-002");
    let r = h.checkpoint("CHECKPOINT-001", |folder| {
        folder.insert(
            "wisdom/decisions.md".into(),
            b"# Decisions\n\
              - Feedback: use argon2id hashing with redis caching via kafka (feedback routed to DRAFT-002: revisions DRAFT-002-R1)\n\
              - Feedback: quarterly invoices for accountants (feedback attached to DRAFT-004, which has not run yet)\n\
              - Feedback: password reset links expire after 30 minutes\n"
                .to_vec(),
        );
    });
    let text = report(&r);
    assert_eq!(row(&text, "Decision chain").0, "warn", "{text}");
    assert!(
        text.contains("not carried forward (0 of 5 key words found): \"Feedback: use argon2id"),
        "{text}"
    );
    assert!(
        text.contains("carried forward: \"Feedback: password reset links expire"),
        "{text}"
    );
    assert!(
        !text.contains("quarterly invoices"),
        "feedback for a task outside the scope is not judged here: {text}"
    );
}

#[test]
fn names_match_when_shortened_and_differ_when_renamed() {
    use super::checks::same_name;
    assert!(same_name(
        "Add a password reset flow for users",
        "Add a password reset fl…"
    ));
    assert!(same_name(
        "Let users reset their password",
        "let users reset their password."
    ));
    assert!(same_name(
        "Reset links expire",
        "Reset links expire after 30 minutes"
    ));
    assert!(!same_name(
        "Quarterly invoice export",
        "Add a password reset flow"
    ));
}
