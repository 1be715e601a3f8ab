//! Unit tests of the coordinator's state changes: IMPL dispatch, specialists, revisions,
//! feedback routing, gates; and of what the coordinator gives the agents (`roster`: the names
//! a roster is checked against; `tokens`: the progress of a running task).

mod roster;
mod tokens;

use std::collections::BTreeMap;

use super::followup::{dispatch_impl, inject_specialists, pause_if_needed};
use super::pipeline::{PipelineSpec, Supervision};
use super::revise;
use crate::agents::{Outcome, StateUpdate, TaskOutput, TechProfile};
use tlv4_core::model::{
    Control, PauseKind, Role, SCHEMA_VERSION, Session, SessionId, SessionStatus, State, TaskId,
    TaskStatus, Verdict,
};

pub(super) fn id(s: &str) -> TaskId {
    s.parse().unwrap()
}

pub(super) fn state(pipeline: &str, supervision: Supervision) -> State {
    let sid: SessionId = "TLV4-test-20261129".parse().unwrap();
    let tasks = PipelineSpec::builtin()
        .unwrap()
        .dispatch(pipeline, supervision, &sid, "text")
        .unwrap();
    State {
        session: Session {
            schema: SCHEMA_VERSION,
            id: sid,
            task: "text".into(),
            pipeline: pipeline.into(),
            supervision: supervision == Supervision::On,
            status: SessionStatus::Active,
            base: "0".repeat(40),
            created_at: String::new(),
            updated_at: String::new(),
            events: 2,
            forked_from: None,
        },
        tasks: tasks.into_iter().map(|t| (t.id.clone(), t)).collect(),
        control: Control::default(),
    }
}

pub(super) fn complete(state: &mut State, ids: &[&str]) {
    for i in ids {
        state.tasks.get_mut(&id(i)).unwrap().status = TaskStatus::Completed;
    }
}

fn deps(state: &State, task: &str) -> Vec<String> {
    state.tasks[&id(task)]
        .blocked_by
        .iter()
        .map(ToString::to_string)
        .collect()
}

pub(super) fn plan(complexity: &str, tasks: &[(&str, &[&str])]) -> Vec<u8> {
    let tasks: Vec<serde_json::Value> = tasks
        .iter()
        .map(|(t, d)| serde_json::json!({ "id": t, "title": format!("do {t}"), "files": [{"path": format!("src/{}.rs", t.to_lowercase()), "change": "modify"}], "depends_on": d }))
        .collect();
    serde_json::to_vec(&serde_json::json!({ "complexity": complexity, "tasks": tasks })).unwrap()
}

#[test]
fn low_plans_make_one_impl_task() {
    let mut s = state("impl-only", Supervision::On);
    complete(&mut s, &["PLAN-001", "CHECKPOINT-003"]);
    let planner = s.tasks[&id("PLAN-001")].clone();
    let made = dispatch_impl(
        &mut s,
        &planner,
        &plan("Low", &[("TASK-001", &[]), ("TASK-002", &["TASK-001"])]),
    )
    .unwrap();
    assert_eq!(made, vec![id("IMPL-001")]);
    assert_eq!(deps(&s, "IMPL-001"), ["CHECKPOINT-003"]);
    assert!(s.tasks[&id("IMPL-001")].inner_loop);
    assert!(s.tasks[&id("IMPL-001")].description.contains("TASK-002"));
    assert_eq!(deps(&s, "TEST-001"), ["IMPL-001"]);
    assert_eq!(
        s.control.implementation.as_ref().unwrap().topology,
        "single"
    );
}

#[test]
fn medium_plans_run_in_parallel() {
    let mut s = state("impl-only", Supervision::Off);
    complete(&mut s, &["PLAN-001"]);
    let planner = s.tasks[&id("PLAN-001")].clone();
    let made = dispatch_impl(
        &mut s,
        &planner,
        &plan(
            "Medium",
            &[("TASK-001", &[]), ("TASK-002", &[]), ("TASK-003", &[])],
        ),
    )
    .unwrap();
    assert_eq!(made.len(), 3);
    for m in &made {
        assert_eq!(deps(&s, m.as_str()), ["PLAN-001"]);
        assert!(!s.tasks[m].inner_loop);
    }
    assert_eq!(deps(&s, "REVIEW-001"), ["IMPL-001", "IMPL-002", "IMPL-003"]);
    assert_eq!(
        s.control.implementation.as_ref().unwrap().topology,
        "parallel"
    );
}

#[test]
fn high_plans_follow_the_dependency_order() {
    let mut s = state("fullstack", Supervision::On);
    complete(&mut s, &["PLAN-001", "CHECKPOINT-003"]);
    let planner = s.tasks[&id("PLAN-001")].clone();
    let p = plan(
        "High",
        &[
            ("TASK-001", &[]),
            ("TASK-002", &["TASK-001"]),
            ("TASK-003", &["TASK-001"]),
            ("TASK-004", &["TASK-002", "TASK-003"]),
            ("TASK-005", &[]),
        ],
    );
    let made = dispatch_impl(&mut s, &planner, &p).unwrap();
    assert_eq!(made.len(), 5);
    assert_eq!(deps(&s, "IMPL-002"), ["CHECKPOINT-003", "IMPL-001"]);
    assert_eq!(
        deps(&s, "IMPL-004"),
        ["CHECKPOINT-003", "IMPL-002", "IMPL-003"]
    );
    assert_eq!(deps(&s, "IMPL-005"), ["CHECKPOINT-003"]);
    assert_eq!(deps(&s, "TEST-001").len(), 5);
    // A dependency on a later or unknown plan task is refused.
    let mut s = state("impl-only", Supervision::Off);
    let planner = s.tasks[&id("PLAN-001")].clone();
    assert!(
        dispatch_impl(
            &mut s,
            &planner,
            &plan("High", &[("TASK-001", &["TASK-009"]), ("TASK-002", &[])])
        )
        .is_err()
    );
}

fn signals(list: &[&str]) -> TaskOutput {
    TaskOutput {
        outcome: Outcome::Completed,
        summary: String::new(),
        files: Vec::new(),
        state_update: StateUpdate {
            tech_profile: Some(TechProfile {
                signals: list.iter().map(|s| s.to_string()).collect(),
                evidence: list
                    .iter()
                    .map(|s| (s.to_string(), vec![format!("src/{s}.rs")]))
                    .collect::<BTreeMap<_, _>>(),
                confidence: "high".into(),
            }),
            ..StateUpdate::default()
        },
    }
}

#[test]
fn specialists_are_injected_once_from_signals() {
    let spec = PipelineSpec::builtin().unwrap();
    let mut s = state("full-lifecycle", Supervision::On);
    complete(&mut s, &["RESEARCH-001"]);
    let analyst = s.tasks[&id("RESEARCH-001")].clone();
    super::followup::collect_signals(&mut s, &analyst, &signals(&["auth_detected"]));
    assert!(
        inject_specialists(&spec, &mut s, &analyst)
            .unwrap()
            .is_empty(),
        "sql_detected is missing"
    );
    super::followup::collect_signals(
        &mut s,
        &analyst,
        &signals(&["sql_detected", "devops_detected"]),
    );
    let made = inject_specialists(&spec, &mut s, &analyst).unwrap();
    assert_eq!(made, vec![id("SECURITY-001")]);
    assert_eq!(
        s.tasks[&id("SECURITY-001")].role.as_str(),
        "security-expert"
    );
    assert_eq!(deps(&s, "SECURITY-001"), ["RESEARCH-001"]);
    // P0: what waited for the analyst now waits for the specialist too.
    assert_eq!(deps(&s, "DRAFT-001"), ["RESEARCH-001", "SECURITY-001"]);
    assert!(
        s.tasks[&id("SECURITY-001")]
            .description
            .contains("src/auth_detected.rs")
    );
    // Once per session.
    assert!(
        inject_specialists(&spec, &mut s, &analyst)
            .unwrap()
            .is_empty()
    );
    // P1 runs beside: nothing waits for it.
    let planner = s.tasks[&id("PLAN-001")].clone();
    let mut exec = signals(&[]);
    exec.state_update.files_modified = vec![".github/workflows/ci.yml".into()];
    let executor = tlv4_core::model::Task {
        role: tlv4_core::model::Role::Executor,
        ..s.tasks[&id("IMPL-001")].clone()
    };
    super::followup::collect_signals(&mut s, &executor, &exec);
    let made = inject_specialists(&spec, &mut s, &planner).unwrap();
    assert_eq!(made, vec![id("DEVOPS-001")]);
    assert!(
        s.tasks
            .values()
            .all(|t| !t.blocked_by.contains(&id("DEVOPS-001")))
    );
    // Roles other than analyst, planner and executor do not emit.
    let mut s2 = state("spec-only", Supervision::On);
    let writer = s2.tasks[&id("DRAFT-001")].clone();
    super::followup::collect_signals(&mut s2, &writer, &signals(&["ml_detected"]));
    assert!(s2.control.signals.is_empty());
}

#[test]
fn revising_a_draft_cascades_to_completed_downstream_tasks() {
    let mut s = state("full-lifecycle", Supervision::On);
    complete(
        &mut s,
        &[
            "RESEARCH-001",
            "DRAFT-001",
            "DRAFT-002",
            "CHECKPOINT-001",
            "DRAFT-003",
            "DRAFT-004",
            "CHECKPOINT-002",
            "QUALITY-001",
        ],
    );
    let made = revise::revise(&mut s, &id("DRAFT-002"), "tighten NFRs", false).unwrap();
    let made: Vec<&str> = made.iter().map(TaskId::as_str).collect();
    assert_eq!(
        made,
        [
            "DRAFT-002-R1",
            "DRAFT-003-R1",
            "DRAFT-004-R1",
            "QUALITY-001-R1"
        ]
    );
    assert_eq!(
        deps(&s, "DRAFT-003-R1"),
        ["DRAFT-002-R1"],
        "checkpoints are passed through, not revised"
    );
    assert_eq!(deps(&s, "DRAFT-004-R1"), ["DRAFT-003-R1"]);
    assert_eq!(
        deps(&s, "PLAN-001"),
        ["QUALITY-001-R1"],
        "pending work waits for the revision"
    );
    assert!(
        s.tasks[&id("DRAFT-002-R1")]
            .description
            .contains("Feedback: tighten NFRs")
    );
    // At most one revision per task.
    let err = revise::revise(&mut s, &id("DRAFT-002"), "again", false)
        .unwrap_err()
        .to_string();
    assert!(err.contains("revised once already"), "{err}");
    // Pending tasks cannot be revised.
    assert!(revise::revise(&mut s, &id("PLAN-001"), "x", false).is_err());
}

#[test]
fn feedback_goes_to_the_document_it_concerns() {
    let mut s = state("spec-only", Supervision::Off);
    complete(&mut s, &["RESEARCH-001", "DRAFT-001"]);
    match revise::feedback(&mut s, "the architecture should use an ADR for storage").unwrap() {
        revise::FeedbackRoute::Attached(t) => assert_eq!(t.as_str(), "DRAFT-003"),
        _ => panic!("DRAFT-003 has not run: the feedback goes into its description"),
    }
    assert!(
        s.tasks[&id("DRAFT-003")]
            .description
            .contains("Feedback: the architecture")
    );
    match revise::feedback(&mut s, "the MVP scope is too wide").unwrap() {
        revise::FeedbackRoute::Revised(made) => assert_eq!(made[0].as_str(), "DRAFT-001-R1"),
        _ => panic!("DRAFT-001 is done: a revision chain"),
    }
    assert_eq!(
        revise::feedback_target("add a user story for export"),
        Some("DRAFT-002")
    );
    assert_eq!(revise::feedback_target("hello"), None);
}

#[test]
fn quality_gates_pause_unless_auto_approved_on_pass() {
    let mut s = state("spec-only", Supervision::Off);
    complete(
        &mut s,
        &[
            "RESEARCH-001",
            "DRAFT-001",
            "DRAFT-002",
            "DRAFT-003",
            "DRAFT-004",
            "QUALITY-001",
        ],
    );
    let gate = s.tasks[&id("QUALITY-001")].clone();
    s.control.verdicts.insert(
        "QUALITY-001".into(),
        Verdict {
            verdict: "PASS".into(),
            score: Some(85.0),
            summary: "ok".into(),
        },
    );
    pause_if_needed(&mut s, &gate);
    assert_eq!(s.session.status, SessionStatus::Paused);
    assert_eq!(s.control.pause.as_ref().unwrap().kind, PauseKind::Gate);
    let said = revise::approve(&mut s).unwrap();
    assert!(said.contains("approved"), "{said}");
    assert_eq!(s.session.status, SessionStatus::Active);
    assert_eq!(s.control.approved, vec![id("QUALITY-001")]);

    let mut s = state("spec-only", Supervision::Off);
    s.control.settings.auto_approve = true;
    s.control.verdicts.insert(
        "QUALITY-001".into(),
        Verdict {
            verdict: "PASS".into(),
            score: Some(85.0),
            summary: "ok".into(),
        },
    );
    pause_if_needed(&mut s, &gate);
    assert_eq!(
        s.session.status,
        SessionStatus::Active,
        "--yes approves a passing gate"
    );
    s.control.verdicts.insert(
        "QUALITY-001".into(),
        Verdict {
            verdict: "REVIEW".into(),
            score: Some(70.0),
            summary: "meh".into(),
        },
    );
    pause_if_needed(&mut s, &gate);
    assert_eq!(
        s.session.status,
        SessionStatus::Paused,
        "--yes does not approve a gate that does not pass"
    );
}

#[test]
fn improve_targets_the_weakest_dimension() {
    let mut s = state("spec-only", Supervision::Off);
    complete(
        &mut s,
        &[
            "RESEARCH-001",
            "DRAFT-001",
            "DRAFT-002",
            "DRAFT-003",
            "DRAFT-004",
            "QUALITY-001",
        ],
    );
    let report = "| Dimension | Weight | Score |\n|---|---|---|\n| Completeness | 25% | 90 |\n| Consistency | 25% | 85 |\n| Traceability | 25% | 55 |\n| Depth | 25% | 70 |\n| Coverage | - | 80 |\n";
    let (imp, gate) = revise::improve(&mut s, report, None).unwrap();
    assert_eq!(imp.as_str(), "IMPROVE-traceability-001");
    assert_eq!(gate.as_str(), "QUALITY-001-R1");
    assert_eq!(deps(&s, "QUALITY-001-R1"), ["IMPROVE-traceability-001"]);
    assert_eq!(s.tasks[&imp].role, Role::Writer);
    assert!(revise::improve(&mut s, report, Some("nonsense")).is_err());
}

#[test]
fn revisions_wait_across_checkpoints() {
    let mut s = state("spec-only", Supervision::On);
    complete(
        &mut s,
        &[
            "RESEARCH-001",
            "DRAFT-001",
            "DRAFT-002",
            "CHECKPOINT-001",
            "DRAFT-003",
            "DRAFT-004",
            "CHECKPOINT-002",
            "QUALITY-001",
        ],
    );
    revise::revise(&mut s, &id("DRAFT-001"), "narrow the scope", false).unwrap();
    // DRAFT-003 waited for CHECKPOINT-001, which waited for DRAFT-002: its revision waits
    // for DRAFT-002's revision, not for the old checkpoint.
    assert_eq!(deps(&s, "DRAFT-003-R1"), ["DRAFT-002-R1"]);
    assert_eq!(deps(&s, "QUALITY-001-R1"), ["DRAFT-004-R1"]);
}

#[test]
fn two_p0_specialists_from_one_event_run_side_by_side() {
    let spec = PipelineSpec::builtin().unwrap();
    let mut s = state("full-lifecycle", Supervision::On);
    complete(&mut s, &["RESEARCH-001"]);
    let analyst = s.tasks[&id("RESEARCH-001")].clone();
    super::followup::collect_signals(
        &mut s,
        &analyst,
        &signals(&["sql_detected", "auth_detected", "data_migration"]),
    );
    let made = inject_specialists(&spec, &mut s, &analyst).unwrap();
    assert_eq!(made.len(), 2, "{made:?}");
    assert_eq!(deps(&s, "DATA-001"), ["RESEARCH-001"]);
    assert_eq!(deps(&s, "SECURITY-001"), ["RESEARCH-001"]);
    assert_eq!(
        deps(&s, "DRAFT-001"),
        ["RESEARCH-001", "DATA-001", "SECURITY-001"]
    );
}

#[test]
fn a_malformed_plan_is_refused_before_anything_changes() {
    assert!(super::followup::check_plan(b"{not json").is_err());
    assert!(super::followup::check_plan(&plan("Huge", &[("TASK-001", &[])])).is_err());
    assert!(
        super::followup::check_plan(&plan(
            "Low",
            &[("TASK-001", &["TASK-002"]), ("TASK-002", &[])]
        ))
        .is_err()
    );
    assert!(
        super::followup::check_plan(&plan(
            "Medium",
            &[("TASK-001", &[]), ("TASK-002", &["TASK-001"])]
        ))
        .is_ok()
    );
}

#[test]
fn medium_plans_keep_the_planners_file_order() {
    let mut s = state("impl-only", Supervision::Off);
    complete(&mut s, &["PLAN-001"]);
    let planner = s.tasks[&id("PLAN-001")].clone();
    dispatch_impl(
        &mut s,
        &planner,
        &plan(
            "Medium",
            &[
                ("TASK-001", &[]),
                ("TASK-002", &["TASK-001"]),
                ("TASK-003", &[]),
            ],
        ),
    )
    .unwrap();
    assert_eq!(deps(&s, "IMPL-002"), ["PLAN-001", "IMPL-001"]);
    assert_eq!(deps(&s, "IMPL-003"), ["PLAN-001"]);
}

#[test]
fn medium_plans_serialise_tasks_whose_files_overlap() {
    let mut s = state("impl-only", Supervision::Off);
    complete(&mut s, &["PLAN-001"]);
    let planner = s.tasks[&id("PLAN-001")].clone();
    let file = |t: &str, f: &str| serde_json::json!({ "id": t, "title": t, "files": [{"path": f}], "depends_on": [] });
    let p = serde_json::to_vec(&serde_json::json!({ "complexity": "Medium", "tasks": [
        file("TASK-001", "src/lib.rs"), file("TASK-002", "src/other.rs"), file("TASK-003", "src/lib.rs"), file("TASK-004", "src"),
    ] }))
    .unwrap();
    dispatch_impl(&mut s, &planner, &p).unwrap();
    assert_eq!(deps(&s, "IMPL-001"), ["PLAN-001"]);
    assert_eq!(deps(&s, "IMPL-002"), ["PLAN-001"]);
    assert_eq!(deps(&s, "IMPL-003"), ["PLAN-001", "IMPL-001"]);
    // A directory overlaps every file in it.
    assert_eq!(
        deps(&s, "IMPL-004"),
        ["PLAN-001", "IMPL-001", "IMPL-002", "IMPL-003"]
    );
    assert_eq!(
        s.control.implementation.as_ref().unwrap().serialized,
        [
            "IMPL-003 after IMPL-001",
            "IMPL-004 after IMPL-001",
            "IMPL-004 after IMPL-002",
            "IMPL-004 after IMPL-003"
        ]
    );
}

#[test]
fn merge_conflicts_make_at_most_two_revisions_and_each_replaces_the_last() {
    use super::followup::is_revised;
    let mut s = state("impl-only", Supervision::Off);
    complete(&mut s, &["PLAN-001"]);
    let fail =
        |s: &mut State, t: &str| s.tasks.get_mut(&id(t)).unwrap().status = TaskStatus::Failed;
    fail(&mut s, "IMPL-001");
    let r1 = revise::conflict_revision(&mut s, &id("IMPL-001"), "shared.txt: both changed")
        .unwrap()
        .unwrap();
    assert_eq!(r1, id("IMPL-001-R1"));
    assert!(s.tasks[&r1].description.contains("merge conflict"));
    assert!(
        s.tasks[&r1]
            .description
            .contains("shared.txt: both changed")
    );
    // What waited for the original waits for the revision.
    assert!(deps(&s, "TEST-001").contains(&"IMPL-001-R1".to_owned()));
    fail(&mut s, "IMPL-001-R1");
    let r2 = revise::conflict_revision(&mut s, &r1, "again")
        .unwrap()
        .unwrap();
    assert_eq!(r2, id("IMPL-001-R2"));
    assert!(deps(&s, "TEST-001").contains(&"IMPL-001-R2".to_owned()));
    fail(&mut s, "IMPL-001-R2");
    assert_eq!(
        revise::conflict_revision(&mut s, &r2, "third").unwrap(),
        None
    );
    // Every task but the newest of the chain counts as replaced.
    assert!(is_revised(&s, &id("IMPL-001")));
    assert!(is_revised(&s, &r1));
    assert!(!is_revised(&s, &r2));
    assert!(!is_revised(&s, &id("TEST-001")));
}
