//! Each step of recording a finished task, on its own: the state steps over a built
//! state, the transaction steps inside a transaction of a real session that writes nothing.

use std::path::Path;

use super::*;
use crate::coordinator::pipeline::Supervision;
use crate::coordinator::tests::{complete, id, plan, state};
use crate::coordinator::worker::{RunData, SnapshotData};
use crate::coordinator::{StartOptions, start};
use tlv4_core::model::{Pause, PauseKind, Verdict};
use tlv4_store::store::Store;

fn completed(files: &[(&str, &[u8])]) -> WorkResult {
    let mut r = WorkResult::failed("builtin", String::new());
    r.output.outcome = Outcome::Completed;
    r.output.summary = "did it".into();
    r.output.files = files
        .iter()
        .map(|(p, b)| ((*p).to_owned(), b.to_vec()))
        .collect();
    r
}

fn recording(s: &State, task: &str, result: &WorkResult) -> Recording {
    Recording::new(
        s.tasks[&id(task)].clone(),
        vet(result),
        result.warnings.clone(),
    )
}

/// A repository with one commit and an `impl-only` session on it, without checkpoints.
fn session() -> (tempfile::TempDir, Store, SessionId) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    tlv4_core::testutil::git(p, &["init", "-q", "-b", "main"]);
    std::fs::write(p.join("app.py"), "x = 1\n").unwrap();
    tlv4_core::testutil::git(p, &["add", "-A"]);
    tlv4_core::testutil::git(p, &["commit", "-q", "-m", "base"]);
    let store = Store::from_repo(gix::open(p).unwrap()).unwrap();
    let opts = StartOptions {
        pipeline: Some("impl-only".into()),
        no_supervision: true,
        ..Default::default()
    };
    let (sid, _) = start(&store, "add a health check", &opts).unwrap();
    (dir, store, sid)
}

/// Runs `step` inside a transaction of `sid` that writes nothing.
fn inside(store: &Store, sid: &SessionId, mut step: impl FnMut(&mut Txn<'_>)) {
    let written = store
        .transact(sid, |txn| {
            step(txn);
            Ok(None)
        })
        .unwrap();
    assert!(written.is_none());
}

fn text(txn: &Txn<'_>, sid: &SessionId, rel: &str) -> Option<String> {
    txn.read_file(sid, rel)
        .unwrap()
        .map(|b| String::from_utf8(b).unwrap())
}

#[test]
fn vet_keeps_a_good_output_and_fails_a_bad_one() {
    let good = completed(&[("plan/notes.md", b"x")]);
    assert_eq!(vet(&good).outcome, Outcome::Completed);
    // A path outside the pipeline folder: failed, and nothing of it kept.
    let outside = completed(&[("../src/main.rs", b"x"), ("plan/notes.md", b"x")]);
    let vetted = vet(&outside);
    assert!(
        matches!(&vetted.outcome, Outcome::Failed(r) if r.starts_with("rejected output:")),
        "{:?}",
        vetted.outcome
    );
    assert!(vetted.files.is_empty());
    // A plan IMPL tasks cannot be made from.
    let bad_plan = completed(&[("plan/plan.json", b"{}")]);
    assert!(matches!(vet(&bad_plan).outcome, Outcome::Failed(r) if r.contains("plan/plan.json")));
    let good_plan = plan("Low", &[("TASK-001", &[])]);
    assert_eq!(
        vet(&completed(&[("plan/plan.json", &good_plan)])).outcome,
        Outcome::Completed
    );
    // Too many key findings.
    let mut chatty = completed(&[]);
    chatty.output.state_update.key_findings = vec!["a".into(); 6];
    assert!(
        matches!(vet(&chatty).outcome, Outcome::Failed(r) if r.starts_with("invalid state_update:"))
    );
    // A failure stays the failure it was.
    let failed = WorkResult::failed("builtin", "no agent".into());
    assert_eq!(vet(&failed).outcome, Outcome::Failed("no agent".into()));
}

#[test]
fn settle_completes_or_fails_the_task() {
    let mut s = state("impl-only", Supervision::Off);
    let result = completed(&[("plan/notes.md", b"x")]);
    let rec = recording(&s, "PLAN-001", &result);
    s.tasks.get_mut(&id("PLAN-001")).unwrap().status = TaskStatus::InProgress;
    settle(&mut s, &id("PLAN-001"), &rec).unwrap();
    let t = &s.tasks[&id("PLAN-001")];
    assert_eq!(t.status, TaskStatus::Completed);
    assert!(t.owner.is_none());
    let r = t.result.as_ref().unwrap();
    assert_eq!(r.summary, "did it");
    assert_eq!(r.reason, None);
    assert_eq!(r.artifacts, ["plan/notes.md"]);
    let mut rec = rec;
    rec.output.outcome = Outcome::Failed("broke".into());
    settle(&mut s, &id("PLAN-001"), &rec).unwrap();
    let t = &s.tasks[&id("PLAN-001")];
    assert_eq!(t.status, TaskStatus::Failed);
    let r = t.result.as_ref().unwrap();
    assert_eq!(r.reason.as_deref(), Some("broke"));
    assert!(r.artifacts.is_empty());
}

#[test]
fn a_conflict_makes_a_revision_until_there_are_enough() {
    let mut s = state("impl-only", Supervision::Off);
    complete(&mut s, &["PLAN-001"]);
    let result = completed(&[]);
    let mut rec = recording(&s, "IMPL-001", &result);
    revise_conflict(&mut s, &id("IMPL-001"), &mut rec).unwrap();
    assert!(rec.notes.is_empty() && rec.extra.is_empty(), "no conflict");
    rec.conflict = Some("CONFLICT (content): app.py".into());
    rec.output.outcome = Outcome::Failed("conflict".into());
    settle(&mut s, &id("IMPL-001"), &rec).unwrap();
    revise_conflict(&mut s, &id("IMPL-001"), &mut rec).unwrap();
    assert_eq!(
        rec.extra,
        [("Revision".to_owned(), "IMPL-001-R1".to_owned())]
    );
    assert_eq!(
        rec.notes,
        ["IMPL-001 conflicts with the session: revision IMPL-001-R1 created"]
    );
    assert!(s.tasks.contains_key(&id("IMPL-001-R1")));
    let mut r2 = s.tasks[&id("IMPL-001-R1")].clone();
    r2.id = id("IMPL-001-R2");
    s.tasks.insert(r2.id.clone(), r2);
    let mut again = recording(&s, "IMPL-001-R2", &result);
    again.conflict = Some("CONFLICT".into());
    again.output.outcome = Outcome::Failed("conflict".into());
    settle(&mut s, &id("IMPL-001-R2"), &again).unwrap();
    revise_conflict(&mut s, &id("IMPL-001-R2"), &mut again).unwrap();
    assert_eq!(
        again.notes,
        ["IMPL-001-R2 conflicts with the session again; no more revisions"]
    );
    assert!(again.extra.is_empty());
}

#[test]
fn a_verdict_is_kept_under_the_task() {
    let mut s = state("impl-only", Supervision::Off);
    let mut result = completed(&[]);
    let mut rec = recording(&s, "REVIEW-001", &result);
    keep_verdict(&mut s, &id("REVIEW-001"), &result, &mut rec);
    assert!(s.control.verdicts.is_empty() && rec.extra.is_empty());
    result.verdict = Some(Verdict {
        verdict: "PASS".into(),
        score: Some(9.0),
        summary: "fine".into(),
    });
    keep_verdict(&mut s, &id("REVIEW-001"), &result, &mut rec);
    assert_eq!(s.control.verdicts["REVIEW-001"].verdict, "PASS");
    assert_eq!(rec.extra, [("Verdict".to_owned(), "PASS".to_owned())]);
}

#[test]
fn a_plan_dispatches_the_impl_tasks_only_from_a_planner() {
    let mut s = state("impl-only", Supervision::Off);
    complete(&mut s, &["PLAN-001"]);
    let p = plan("Medium", &[("TASK-001", &[]), ("TASK-002", &[])]);
    let result = completed(&[("plan/plan.json", &p)]);
    // Not a planner: nothing dispatched.
    let mut rec = recording(&s, "REVIEW-001", &result);
    dispatch_plan(&mut s, &mut rec).unwrap();
    assert!(rec.extra.is_empty() && !s.tasks.contains_key(&id("IMPL-002")));
    let mut rec = recording(&s, "PLAN-001", &result);
    dispatch_plan(&mut s, &mut rec).unwrap();
    assert_eq!(
        rec.extra,
        [("Dispatched".to_owned(), "IMPL-001,IMPL-002".to_owned())]
    );
    assert_eq!(rec.notes, ["implementation dispatched: IMPL-001, IMPL-002"]);
    assert!(s.tasks.contains_key(&id("IMPL-002")));
}

#[test]
fn failing_tests_make_a_fix_iteration() {
    let mut s = state("impl-only", Supervision::Off);
    complete(&mut s, &["PLAN-001", "IMPL-001"]);
    let mut result = completed(&[]);
    let mut rec = recording(&s, "TEST-001", &result);
    fix_iteration(&mut s, &result, &mut rec);
    assert!(rec.extra.is_empty() && rec.notes.is_empty());
    result.fix = Some(crate::quality::FixRequest {
        iteration: 1,
        strategy: "conservative".into(),
        pass_rate: Some(50.0),
        failures: "test_a failed".into(),
    });
    let before = s.tasks.len();
    fix_iteration(&mut s, &result, &mut rec);
    assert!(s.tasks.len() > before, "the fix iteration adds tasks");
    let (key, ids) = &rec.extra[0];
    assert_eq!(key, "Fix");
    assert_eq!(
        rec.notes,
        [format!(
            "test pass rate 50%: fix iteration {}",
            ids.replace(',', ", ")
        )]
    );
}

#[test]
fn signals_are_collected_without_injecting_for_a_plain_plan() {
    let mut s = state("impl-only", Supervision::Off);
    let spec = PipelineSpec::builtin().unwrap();
    let result = completed(&[]);
    let mut rec = recording(&s, "PLAN-001", &result);
    let before = s.tasks.len();
    collect_and_inject(&spec, &mut s, &mut rec).unwrap();
    assert_eq!(s.tasks.len(), before);
    assert!(rec.extra.is_empty() && rec.notes.is_empty());
}

#[test]
fn the_event_names_the_outcome_and_a_pause() {
    let mut s = state("impl-only", Supervision::Off);
    let result = completed(&[("plan/notes.md", b"x")]);
    let mut rec = recording(&s, "PLAN-001", &result);
    rec.extra.push(("Merged".into(), "abc".into()));
    let e = event(&s, &id("PLAN-001"), rec.clone()).unwrap();
    assert_eq!(e.kind, EventKind::TaskCompleted);
    assert_eq!(e.summary, "did it");
    assert_eq!(e.extra, [("Merged".to_owned(), "abc".to_owned())]);
    s.session.status = SessionStatus::Paused;
    s.control.pause = Some(Pause {
        until: None,
        kind: PauseKind::Gate,
        task: None,
        reason: String::new(),
        next: Vec::new(),
    });
    rec.output.outcome = Outcome::Failed("broke".into());
    let e = event(&s, &id("PLAN-001"), rec).unwrap();
    assert_eq!(e.kind, EventKind::TaskFailed);
    assert_eq!(e.summary, "broke");
    assert_eq!(
        e.extra,
        [
            ("Merged".to_owned(), "abc".to_owned()),
            ("Paused".to_owned(), "gate".to_owned())
        ]
    );
}

#[test]
fn hooks_and_the_bus_hear_of_the_recorded_task() {
    let mut s = state("impl-only", Supervision::Off);
    let sid = s.session.id.clone();
    complete(&mut s, &["PLAN-001"]);
    s.tasks.get_mut(&id("PLAN-001")).unwrap().role = "supervisor".into();
    let task = s.tasks[&id("PLAN-001")].clone();
    let written = Written {
        commit: gix::ObjectId::null(gix::hash::Kind::Sha1),
        event: Event::task(EventKind::TaskCompleted, &task, "first\nsecond"),
        state: s,
    };
    let events = hook_events(&sid, &id("PLAN-001"), &written);
    let names: Vec<&str> = events.iter().map(|(e, _)| *e).collect();
    assert_eq!(names, ["after-task", "checkpoint"]);
    assert_eq!(events[1].1["event"], "checkpoint");
    assert_eq!(events[0].1["status"], "completed");
    let m = message(&id("PLAN-001"), &written, &completed(&[]).output);
    assert_eq!(m.kind, "supervision_report");
    assert_eq!(m.summary, "first");
    assert_eq!(m.from, "supervisor");
}

#[test]
fn message_types_follow_the_role() {
    let s = state("impl-only", Supervision::Off);
    assert_eq!(message_type(&s.tasks[&id("PLAN-001")]), "plan_ready");
    assert_eq!(message_type(&s.tasks[&id("REVIEW-001")]), "review_result");
    assert_eq!(message_type(&s.tasks[&id("IMPL-001")]), "impl_complete");
}

#[test]
fn only_a_task_in_progress_is_the_loops_to_record() {
    let (_dir, store, sid) = session();
    inside(&store, &sid, |txn| {
        assert_eq!(
            holder(
                txn,
                &crate::coordinator::lease::Mode::Local,
                &sid,
                &id("PLAN-001")
            )
            .unwrap(),
            Holder::Nobody
        );
        assert_eq!(
            holder(
                txn,
                &crate::coordinator::lease::Mode::Local,
                &sid,
                &id("NOPE-001")
            )
            .unwrap(),
            Holder::Nobody
        );
        txn.state.task_mut(&id("PLAN-001")).unwrap().status = TaskStatus::InProgress;
        let Holder::Us(task, None) = holder(
            txn,
            &crate::coordinator::lease::Mode::Local,
            &sid,
            &id("PLAN-001"),
        )
        .unwrap() else {
            panic!("a local run holds what is in progress");
        };
        assert_eq!(task.id, id("PLAN-001"));
    });
}

#[test]
fn the_run_record_holds_the_result_usage_and_texts() {
    let (_dir, store, sid) = session();
    let mut result = completed(&[("plan/notes.md", b"hello\n")]);
    result.run = Some(RunData {
        prompt: "do it".into(),
        raw: String::new(),
        transcript: Some("said".into()),
        usage: crate::agents::command::Usage::default(),
        refusals: Vec::new(),
    });
    inside(&store, &sid, |txn| {
        let mut rec = Recording::new(
            txn.state.tasks[&id("PLAN-001")].clone(),
            vet(&result),
            Vec::new(),
        );
        rec.task.attempts = 2;
        write_run_record(txn, &id("PLAN-001"), &rec, &result, 1.5).unwrap();
        let json: serde_json::Value =
            serde_json::from_str(&text(txn, &sid, "runs/PLAN-001/2/result.json").unwrap()).unwrap();
        assert_eq!(json["outcome"], "completed");
        assert_eq!(json["seconds"], 1.5);
        // The blob id is git's own for those bytes.
        assert_eq!(
            json["files"]["plan/notes.md"],
            "ce013625030ba8dba906f756967f9e9ca394464a"
        );
        assert!(text(txn, &sid, "runs/PLAN-001/2/usage.json").is_some());
        assert_eq!(
            text(txn, &sid, "runs/PLAN-001/2/prompt.md").as_deref(),
            Some("do it")
        );
        assert!(text(txn, &sid, "runs/PLAN-001/2/answer.txt").is_none());
        assert_eq!(
            text(txn, &sid, "runs/PLAN-001/2/transcript.txt").as_deref(),
            Some("said")
        );
    });
}

#[test]
fn outputs_roles_lock_and_warnings_go_into_the_folder() {
    let (_dir, store, sid) = session();
    let mut result = completed(&[("plan/notes.md", b"x")]);
    result.warnings = vec!["look here".into()];
    inside(&store, &sid, |txn| {
        let had_lock = text(txn, &sid, "roles.lock");
        let mut rec = Recording::new(
            txn.state.tasks[&id("PLAN-001")].clone(),
            vet(&result),
            result.warnings.clone(),
        );
        // No prompt, no pin.
        pin_roles_lock(txn, &sid, &result, "lock\n").unwrap();
        assert_eq!(text(txn, &sid, "roles.lock"), had_lock);
        write_outputs(txn, &rec).unwrap();
        assert_eq!(text(txn, &sid, "plan/notes.md").as_deref(), Some("x"));
        log_warnings(txn, &sid, &id("PLAN-001"), &rec).unwrap();
        log_warnings(txn, &sid, &id("PLAN-001"), &rec).unwrap();
        let issues = text(txn, &sid, "wisdom/issues.md").unwrap();
        assert!(
            issues.ends_with("- [PLAN-001] look here\n- [PLAN-001] look here\n"),
            "{issues}"
        );
        assert_eq!(issues.matches("# Issues").count(), 1, "{issues}");
        // A failed task's files are not written.
        rec.output.outcome = Outcome::Failed("no".into());
        rec.output.files = vec![("plan/other.md".into(), b"y".to_vec())];
        write_outputs(txn, &rec).unwrap();
        assert!(text(txn, &sid, "plan/other.md").is_none());
    });
    let mut prompted = completed(&[]);
    prompted.run = Some(RunData {
        prompt: "do it".into(),
        raw: String::new(),
        transcript: None,
        usage: crate::agents::command::Usage::default(),
        refusals: Vec::new(),
    });
    inside(&store, &sid, |txn| {
        let had_lock = text(txn, &sid, "roles.lock");
        pin_roles_lock(txn, &sid, &prompted, "lock\n").unwrap();
        let now = text(txn, &sid, "roles.lock");
        match had_lock {
            Some(had) => assert_eq!(now, Some(had), "a pinned lock stays"),
            None => assert_eq!(now.as_deref(), Some("lock\n")),
        }
    });
}

/// A commit on a branch of its own, from the session tip, that sets `app.py` to `body`.
fn change(dir: &Path, sid: &SessionId, branch: &str, body: &str) -> gix::ObjectId {
    let g = |args: &[&str]| tlv4_core::testutil::git(dir, args).trim().to_owned();
    g(&["switch", "-q", "-c", branch, &format!("tlv4/{sid}")]);
    std::fs::write(dir.join("app.py"), body).unwrap();
    g(&["commit", "-q", "-am", branch]);
    let commit = g(&["rev-parse", "HEAD"]);
    g(&["switch", "-q", "main"]);
    commit.parse().unwrap()
}

fn snapshot(commit: gix::ObjectId) -> SnapshotData {
    SnapshotData {
        commit,
        parent: commit,
        changed: vec!["app.py".into()],
        refused: Vec::new(),
        left_out: Vec::new(),
        kept: None,
    }
}

#[test]
fn a_clean_change_merges_and_a_conflicting_one_fails() {
    let (dir, store, sid) = session();
    let mut result = completed(&[]);
    // No snapshot: nothing to merge.
    inside(&store, &sid, |txn| {
        let mut rec = Recording::new(
            txn.state.tasks[&id("IMPL-001")].clone(),
            vet(&result),
            Vec::new(),
        );
        merge(txn, &mut rec, &result).unwrap();
        assert!(rec.extra.is_empty() && rec.completed());
    });
    let clean = change(dir.path(), &sid, "one", "x = 2\n");
    result.snapshot = Some(snapshot(clean));
    inside(&store, &sid, |txn| {
        let mut rec = Recording::new(
            txn.state.tasks[&id("IMPL-001")].clone(),
            vet(&result),
            Vec::new(),
        );
        merge(txn, &mut rec, &result).unwrap();
        assert_eq!(rec.extra, [("Merged".to_owned(), clean.to_string())]);
        assert!(rec.completed() && rec.conflict.is_none());
        // A failed task's snapshot is not merged.
        let mut failed = rec.clone();
        failed.extra.clear();
        failed.output.outcome = Outcome::Failed("no".into());
        merge(txn, &mut failed, &result).unwrap();
        assert!(failed.extra.is_empty());
    });
    // The session's code moves on in the same place: the change conflicts.
    let other = change(dir.path(), &sid, "two", "x = 3\n");
    store
        .transact(&sid, |txn| {
            let tree = tlv4_store::worktree::merge_task(txn.store(), txn.tip, other).unwrap();
            let MergeOutcome::Clean { tree } = tree else {
                panic!("the first change merges");
            };
            txn.merge(other, tree);
            Ok(Some(Event::session(EventKind::TasksDispatched, "moved")))
        })
        .unwrap()
        .unwrap();
    inside(&store, &sid, |txn| {
        let mut rec = Recording::new(
            txn.state.tasks[&id("IMPL-001")].clone(),
            vet(&result),
            Vec::new(),
        );
        merge(txn, &mut rec, &result).unwrap();
        assert!(!rec.completed());
        assert_eq!(rec.extra, [("Conflict".to_owned(), "app.py".to_owned())]);
        assert!(rec.conflict.is_some());
        assert!(
            matches!(&rec.output.outcome, Outcome::Failed(r) if r == "its change conflicts with the session in app.py")
        );
    });
}

#[test]
fn a_discuss_round_is_stored_kept_and_routed() {
    let (_dir, store, sid) = session();
    let mut result = completed(&[]);
    result.discuss = Some((
        "DISCUSS-002".into(),
        crate::quality::DiscussOutcome {
            verdict: Verdict {
                verdict: "MEDIUM".into(),
                score: None,
                summary: "some doubts".into(),
            },
            files: vec![(
                "discussions/DISCUSS-002-discussion.md".into(),
                b"# round\n".to_vec(),
            )],
            action_items: vec!["check the edge cases".into()],
            usage: Vec::new(),
            surface_consensus: false,
        },
    ));
    inside(&store, &sid, |txn| {
        let mut rec = Recording::new(
            txn.state.tasks[&id("PLAN-001")].clone(),
            vet(&result),
            Vec::new(),
        );
        route_discuss(txn, &result, &mut rec).unwrap();
        assert_eq!(
            text(txn, &sid, "discussions/DISCUSS-002-discussion.md").as_deref(),
            Some("# round\n")
        );
        assert_eq!(txn.state.control.verdicts["DISCUSS-002"].verdict, "MEDIUM");
        assert_eq!(
            rec.extra,
            [("Discuss".to_owned(), "DISCUSS-002 MEDIUM".to_owned())]
        );
        assert_eq!(
            rec.warnings,
            [
                "DISCUSS-002: medium divergence: some doubts",
                "check the edge cases"
            ]
        );
        // Follow-ups of a failed task: none.
        let mut failed = Recording::new(rec.task.clone(), vet(&result), Vec::new());
        failed.output.outcome = Outcome::Failed("no".into());
        let spec = PipelineSpec::builtin().unwrap();
        follow_ups(txn, &spec, &id("PLAN-001"), &result, &mut failed).unwrap();
        assert!(failed.extra.is_empty() && failed.warnings.is_empty());
    });
}
