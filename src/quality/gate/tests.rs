//! Tests of the spec quality gate, on documents the builtin analyst and writer really write
//! for a small repository made with the `git` CLI.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use super::rules::{Rules, Severity};
use super::score::{self, DIMENSIONS};
use super::{QualityContext, QualityResult, run_task};
use crate::agents::builtin::Builtin;
use crate::agents::{Agent, CodeTree, Outcome, TaskInput};
use tlv4_core::model::{Priority, SCHEMA_VERSION, Session, SessionStatus, Task, TaskStatus};
use tlv4_specdoc::audit::Spec;

type Folder = BTreeMap<String, Vec<u8>>;

const REQUEST: &str = "Add a login page where users sign in with email and password, \
                       and let admins reset a user's password";

use tlv4_core::testutil::git;

/// A small web project, committed; the directory lives as long as the guard.
struct Repo {
    _dir: tempfile::TempDir,
    repo: gix::Repository,
    head: gix::ObjectId,
    code: CodeTree,
}

fn repo() -> Repo {
    let dir = tempfile::tempdir().expect("temp dir");
    git(dir.path(), &["init", "-q"]);
    let files = [
        (
            "package.json",
            concat!(
                r#"{"name":"shop","dependencies":{"express":"^4.18.0","pg":"^8.11.0"},"#,
                r#""devDependencies":{"jest":"^29.0.0"},"scripts":{"test":"jest"}}"#
            ),
        ),
        (
            "src/server.js",
            "const express = require('express');\nconst app = express();\napp.listen(3000);\n",
        ),
        (
            "src/db.js",
            concat!(
                "const { Pool } = require('pg');\nmodule.exports = new Pool();\n",
                "// SELECT * FROM users\n"
            ),
        ),
        (
            "test/server.test.js",
            "test('starts', () => { expect(1).toBe(1); });\n",
        ),
        ("README.md", "# Shop\n\nA small web shop.\n"),
    ];
    for (path, content) in files {
        let full = dir.path().join(path);
        std::fs::create_dir_all(full.parent().expect("a file has a parent")).unwrap();
        std::fs::write(full, content).unwrap();
    }
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-q", "-m", "init"]);
    let repo = gix::open(dir.path()).expect("open the repository");
    let (head, tree) = {
        let commit = repo.head_commit().expect("HEAD is a commit");
        let tree = commit.tree_id().expect("the commit has a tree").detach();
        (commit.id, tree)
    };
    let code = CodeTree::from_tree(&repo, tree).expect("list the tree");
    Repo {
        _dir: dir,
        repo,
        head,
        code,
    }
}

fn session() -> Session {
    Session {
        schema: SCHEMA_VERSION,
        id: "TLV4-login-20260101".parse().unwrap(),
        task: REQUEST.to_owned(),
        pipeline: "spec-only".to_owned(),
        supervision: false,
        status: SessionStatus::Active,
        base: "0".repeat(40),
        created_at: "2026-01-01T00:00:00Z".to_owned(),
        updated_at: "2026-01-01T00:00:00Z".to_owned(),
        events: 8,
        forked_from: None,
    }
}

fn task(id: &str, role: &str, phase: &str) -> Task {
    Task {
        id: id.parse().unwrap(),
        role: role.into(),
        status: TaskStatus::InProgress,
        blocked_by: Vec::new(),
        phase: phase.to_owned(),
        priority: Priority::P0,
        discuss: None,
        inner_loop: role == "writer",
        attempts: 1,
        description: format!("PURPOSE: {phase}\n"),
        owner: None,
        result: None,
    }
}

fn input(r: &Repo, task: Task, folder: Folder) -> TaskInput {
    TaskInput {
        session: session(),
        task,
        folder,
        code: r.code.clone(),
    }
}

/// The spec the builtin analyst and writer produce for [`REQUEST`], made once.
fn builtin_spec() -> &'static Folder {
    static SPEC: OnceLock<Folder> = OnceLock::new();
    SPEC.get_or_init(|| {
        let r = repo();
        let mut folder = Folder::new();
        let steps = [
            ("RESEARCH-001", "analyst", "research"),
            ("DRAFT-001", "writer", "product-brief"),
            ("DRAFT-002", "writer", "requirements"),
            ("DRAFT-003", "writer", "architecture"),
            ("DRAFT-004", "writer", "epics"),
        ];
        for (id, role, phase) in steps {
            let out = Builtin
                .run(&input(&r, task(id, role, phase), folder.clone()))
                .unwrap_or_else(|e| panic!("{id} errs: {e}"));
            assert_eq!(out.outcome, Outcome::Completed, "{id}: {}", out.summary);
            folder.extend(out.files);
        }
        folder
    })
}

fn gate(folder: Folder) -> (QualityResult, TaskInput) {
    let r = repo();
    let ctx = QualityContext {
        repo: r.repo.clone().into_sync(),
        base: r.head,
        tip: r.head,
        conf: Default::default(),
        shell: false,
    };
    let input = input(&r, task("QUALITY-001", "reviewer", "readiness"), folder);
    let result = run_task(&input, &ctx).expect("the gate runs");
    (result, input)
}

fn file<'a>(result: &'a QualityResult, path: &str) -> &'a str {
    let (_, bytes) = result
        .output
        .files
        .iter()
        .find(|(p, _)| p == path)
        .unwrap_or_else(|| panic!("{path} was not written"));
    std::str::from_utf8(bytes).expect("UTF-8")
}

fn report(result: &QualityResult) -> &str {
    file(result, "spec/readiness-report.md")
}

fn text(folder: &Folder, path: &str) -> String {
    String::from_utf8(folder[path].clone()).unwrap()
}

#[test]
fn rules_file_is_valid_and_states_the_decision() {
    let rules = Rules::embedded().expect("the embedded rules are valid");
    assert_eq!(
        rules.weights.coverage, 0.0,
        "coverage is gated, not weighted"
    );
    let head: String = include_str!("../../../specs/quality-gates.toml")
        .lines()
        .take(20)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(head.contains("DECISION"), "{head}");
    assert!(head.contains("coverage"), "{head}");
}

#[test]
fn builtin_documents_pass_or_review() {
    let (result, _) = gate(builtin_spec().clone());
    let verdict = result.verdict.clone().expect("a verdict");
    let report = report(&result);
    assert_eq!(result.output.outcome, Outcome::Completed);
    assert!(
        matches!(verdict.verdict.as_str(), "PASS" | "REVIEW"),
        "builtin spec scored {:?} {:?}: {}\n{report}",
        verdict.verdict,
        verdict.score,
        verdict.summary
    );
    let score = verdict.score.expect("a score");
    assert!(score >= 60.0, "builtin spec scored {score}\n{report}");
    // Visible with --nocapture; the scores are in the final message of the task too.
    println!("builtin spec: {}", verdict.summary);
    result
        .output
        .state_update
        .validate()
        .expect("a valid state update");
    assert!(file(&result, "spec/spec-summary.md").contains("## Goals"));
}

#[test]
fn builtin_documents_follow_the_cross_document_rules() {
    let rules = Rules::embedded().unwrap();
    let spec = Spec::read(builtin_spec());
    let ev = score::evaluate(&spec, &rules, REQUEST);
    let broken: Vec<_> = ev
        .findings
        .iter()
        .filter(|f| {
            matches!(
                f.rule,
                "document"
                    | "reference"
                    | "unique-id"
                    | "goal-requirement"
                    | "requirement-component"
                    | "requirement-story"
            )
        })
        .collect();
    assert!(broken.is_empty(), "{broken:#?}");
    assert!(!spec.goals.is_empty() && !spec.requirements.is_empty());
    assert!(!spec.components.is_empty() && !spec.adrs.is_empty());
    assert!(spec.stories().count() > 0, "no story read");
    assert_eq!(ev.score("traceability"), 100.0, "{:#?}", ev.traceability);
}

/// Adds goal `G-NNN` (the next number) to the brief's goals table; no requirement traces it.
fn with_orphan_goal(folder: &Folder) -> (Folder, String) {
    let brief = text(folder, "spec/product-brief.md");
    let goals = Spec::read(folder).goals.len();
    let id = format!("G-{:03}", goals + 1);
    let section = &brief[brief
        .find("## Goals & Success Metrics")
        .expect("the brief has a goals section")..];
    let last = section
        .lines()
        .take_while(|l| !l.starts_with("## ") || l.starts_with("## Goals"))
        .filter(|l| l.starts_with("| G-"))
        .last()
        .expect("the brief has a goals table")
        .to_owned();
    let cells = last.matches('|').count() - 1;
    let mut row = format!("| {id} | Export the order history as a spreadsheet |");
    for _ in 2..cells {
        row.push_str(" Exports downloaded per week |");
    }
    let brief = brief.replacen(&last, &format!("{last}\n{row}"), 1);
    let mut out = folder.clone();
    out.insert("spec/product-brief.md".into(), brief.into_bytes());
    (out, id)
}

#[test]
fn goal_without_requirement_loses_traceability() {
    let rules = Rules::embedded().unwrap();
    let before = score::evaluate(&Spec::read(builtin_spec()), &rules, REQUEST);
    let (folder, id) = with_orphan_goal(builtin_spec());
    let spec = Spec::read(&folder);
    assert!(
        spec.goals.iter().any(|g| g.id == id),
        "the goal was not added"
    );
    let after = score::evaluate(&spec, &rules, REQUEST);
    assert!(
        after.score("traceability") < before.score("traceability"),
        "traceability {} → {}",
        before.score("traceability"),
        after.score("traceability")
    );
    assert!(
        after
            .findings
            .iter()
            .any(|f| f.rule == "goal-requirement" && f.place == id),
        "{:#?}",
        after.findings
    );
    let (result, _) = gate(folder);
    let report = report(&result);
    let row = report
        .lines()
        .find(|l| l.contains("goal-requirement") && l.contains(&id))
        .unwrap_or_else(|| panic!("the violation is not listed:\n{report}"));
    assert!(row.contains("Error"), "{row}");
    assert_ne!(
        result.verdict.unwrap().verdict,
        "PASS",
        "an Error-class violation holds the gate below PASS"
    );
}

#[test]
fn a_goal_defined_twice_is_flagged_once_referenced_goals_are_not() {
    let rules = Rules::embedded().unwrap();
    let brief = text(builtin_spec(), "spec/product-brief.md");
    let first = brief
        .lines()
        .find(|l| l.starts_with("| G-001 |"))
        .expect("a G-001 row")
        .to_owned();
    let mut folder = builtin_spec().clone();
    let clean = score::evaluate(&Spec::read(&folder), &rules, REQUEST);
    assert!(
        !clean.findings.iter().any(|f| f.rule == "unique-id"),
        "rows of other tables that name a goal are references: {:#?}",
        clean.findings
    );
    let doubled = brief.replacen(&first, &format!("{first}\n{first}"), 1);
    folder.insert("spec/product-brief.md".into(), doubled.into_bytes());
    let ev = score::evaluate(&Spec::read(&folder), &rules, REQUEST);
    assert!(
        ev.findings
            .iter()
            .any(|f| f.rule == "unique-id" && f.message.starts_with("G-001")),
        "{:#?}",
        ev.findings
    );
    assert!(ev.score("consistency") < clean.score("consistency"));
}

/// A spec another agent might write: loose formatting, a wrong id form, a dangling link, an
/// unknown requirement, no frontmatter in places.
fn foreign_spec() -> Folder {
    let files: [(&str, &str); 6] = [
        (
            "spec/product-brief.md",
            "# Product Brief: Login\n\n## Goals & Success Metrics\n\n\
             | Goal ID | Goal | Success Metric | Target |\n|---|---|---|---|\n\
             | G-001 | Users log in | Successful logins | 99% |\n\n## Open Questions\n\n- none\n",
        ),
        (
            "spec/requirements/_index.md",
            "---\nsession_id: X\n---\n# Requirements: Login\n\n## Functional Requirements\n\n\
             | ID | Title | Priority | Traces To |\n|---|---|---|---|\n\
             | [REQ-001](REQ-001-log-in.md) | Log in | Must | G-001 |\n\
             | [REQ-002](REQ-002-gone.md) | Log out | Sometimes | G-001 |\n\nSee also FR-003.\n",
        ),
        (
            "spec/requirements/REQ-001-log-in.md",
            "---\nid: REQ-001\npriority: Must\ntraces_to: [G-001]\n---\n# REQ-001: Log in\n\n\
             ## Acceptance Criteria\n\n- [ ] fast\n",
        ),
        (
            "spec/architecture/_index.md",
            "# Architecture: Login\n\n| ID | Component | Implements |\n|---|---|---|\n\
             | COMP-001 | Auth | REQ-001 |\n\n| ADR | Title |\n|---|---|\n| ADR-001 | Use sessions |\n",
        ),
        (
            "spec/architecture/ADR-001-use-sessions.md",
            "---\nid: ADR-001\nstatus: Maybe\ntraces_to: [REQ-001]\n---\n# ADR-001: Use sessions\n",
        ),
        (
            "spec/epics/_index.md",
            "# Epics: Login\n\n| Epic | Title | MVP |\n|---|---|---|\n\
             | EPIC-001 | Auth | yes |\n",
        ),
    ];
    let mut folder: Folder = files
        .iter()
        .map(|(p, t)| ((*p).to_owned(), t.as_bytes().to_vec()))
        .collect();
    folder.insert(
        "spec/epics/EPIC-001-auth.md".into(),
        b"---\nid: EPIC-001\nmvp: true\nrequirements: [REQ-001]\n---\n# EPIC-001: Auth\n\n\
          ### STORY-001-001: Log in\n\nAs a user, I want to log in.\n\n\
          - [ ] Given valid credentials, when I log in, then I see my page\n\n\
          Size: M\nTraces: REQ-001, REQ-009\n"
            .to_vec(),
    );
    folder
}

#[test]
fn a_foreign_spec_is_read_leniently_and_its_faults_listed() {
    let rules = Rules::embedded().unwrap();
    let spec = Spec::read(&foreign_spec());
    assert_eq!(spec.goals.len(), 1);
    assert_eq!(spec.requirements.len(), 2);
    assert_eq!(spec.components.len(), 1);
    assert_eq!(spec.stories().count(), 1);
    let ev = score::evaluate(&spec, &rules, "Let users log in");
    let has = |rule: &str, text: &str| {
        ev.findings
            .iter()
            .any(|f| f.rule == rule && (f.message.contains(text) || f.place.contains(text)))
    };
    for (rule, text) in [
        ("reference", "REQ-009"),
        ("reference", "REQ-002-gone.md"),
        ("format", "FR-003"),
        ("moscow", "Sometimes"),
        ("format", "Maybe"),
        ("frontmatter", "spec/product-brief.md"),
        ("adr-alternatives", "ADR-001"),
        ("section", "spec/product-brief.md"),
        ("requirement-component", "REQ-002"),
        ("requirement-story", "REQ-002"),
    ] {
        assert!(
            has(rule, text),
            "no `{rule}` finding about {text}: {:#?}",
            ev.findings
        );
    }
    let must_less = ev
        .findings
        .iter()
        .find(|f| f.rule == "requirement-story" && f.place == "REQ-002")
        .unwrap();
    assert_eq!(must_less.severity, Severity::Warning, "REQ-002 is no Must");
    assert!(
        ev.score("depth") < 60.0,
        "a vague criterion is not testable: {:?}",
        ev.depth
    );
    assert!(ev.score("consistency") < 80.0, "{:?}", ev.consistency);
    let (result, _) = gate(foreign_spec());
    assert_eq!(result.output.outcome, Outcome::Completed);
    assert_eq!(result.verdict.unwrap().verdict, "FAIL");
}

#[test]
fn empty_folder_fails_with_a_report_of_what_is_missing() {
    let (result, _) = gate(Folder::new());
    assert_eq!(result.output.outcome, Outcome::Completed);
    let verdict = result.verdict.clone().unwrap();
    assert_eq!(verdict.verdict, "FAIL", "{}", verdict.summary);
    assert_eq!(verdict.score, Some(0.0));
    let report = report(&result);
    for path in [
        "spec/product-brief.md",
        "spec/requirements/_index.md",
        "spec/architecture/_index.md",
        "spec/epics/_index.md",
    ] {
        assert!(
            report.contains("Write the missing documents: ") && report.contains(path),
            "{path} is not named:\n{report}"
        );
    }
    assert!(report.contains("**FAIL**"), "{report}");
    result.output.state_update.validate().unwrap();
}

#[test]
fn a_missing_document_lowers_the_scores_without_failing_the_task() {
    let mut folder = builtin_spec().clone();
    folder.retain(|p, _| !p.starts_with("spec/epics/"));
    let (result, _) = gate(folder);
    let (full, _) = gate(builtin_spec().clone());
    assert_eq!(result.output.outcome, Outcome::Completed);
    let score = result.verdict.as_ref().unwrap().score.unwrap();
    let full_score = full.verdict.as_ref().unwrap().score.unwrap();
    assert!(score < full_score, "{score} vs {full_score}");
    let report = report(&result);
    assert!(
        report.contains("`spec/epics/_index.md` (epics) is missing"),
        "{report}"
    );
}

#[test]
fn report_parses_into_five_dimensions() {
    let (result, _) = gate(builtin_spec().clone());
    let report = report(&result);
    let scores = crate::coordinator::revise::dimension_scores(report);
    let names: Vec<&str> = scores.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, DIMENSIONS, "{report}");
    let rules = Rules::embedded().unwrap();
    let ev = score::evaluate(&Spec::read(builtin_spec()), &rules, REQUEST);
    for (i, (name, s)) in scores.iter().enumerate() {
        assert_eq!(*s, ev.scores[i], "{name}");
    }
    assert!(
        report.contains("| Dimension | Weight | Score |"),
        "{report}"
    );
    let overall: f64 = ev.scores[..4].iter().sum::<f64>() / 4.0;
    assert!(
        (overall - ev.overall).abs() < 0.06,
        "{overall} vs {}",
        ev.overall
    );
}

#[test]
fn same_documents_same_report() {
    let (a, _) = gate(builtin_spec().clone());
    let (b, _) = gate(builtin_spec().clone());
    assert_eq!(a.output.files, b.output.files);
    assert_eq!(a.verdict, b.verdict);
    assert_eq!(a.output.state_update, b.output.state_update);
    assert!(report(&a).contains("generated_at: 2026-01-01T00:00:00Z"));
}

#[test]
fn a_recheck_bumps_the_report_version() {
    let (first, _) = gate(builtin_spec().clone());
    let mut folder = builtin_spec().clone();
    folder.extend(first.output.files.clone());
    let (second, _) = gate(folder);
    assert!(report(&first).contains("\nversion: 1\n"));
    assert!(
        report(&second).contains("\nversion: 2\n"),
        "{}",
        report(&second)
    );
    assert_eq!(
        first.verdict, second.verdict,
        "the old report is not scored"
    );
}

#[test]
fn gate_thresholds() {
    let rules = Rules::embedded().unwrap();
    let gate = |docs, overall, coverage, errors| {
        score::decide(&rules, docs, overall, coverage, errors)
            .0
            .as_str()
    };
    assert_eq!(gate(4, 80.0, 70.0, 0), "PASS");
    assert_eq!(gate(4, 79.9, 100.0, 0), "REVIEW");
    assert_eq!(
        gate(4, 95.0, 69.9, 0),
        "REVIEW",
        "coverage is gated on its own"
    );
    assert_eq!(
        gate(4, 95.0, 100.0, 1),
        "REVIEW",
        "an Error-class violation holds PASS"
    );
    assert_eq!(gate(4, 60.0, 50.0, 3), "REVIEW");
    assert_eq!(gate(4, 59.9, 100.0, 0), "FAIL");
    assert_eq!(gate(4, 95.0, 49.9, 0), "FAIL");
    assert_eq!(gate(0, 100.0, 100.0, 0), "FAIL", "no document at all");
    // A brief alone: most of the spec is missing, the gate fails.
    let mut folder = Folder::new();
    folder.insert(
        "spec/product-brief.md".into(),
        builtin_spec()["spec/product-brief.md"].clone(),
    );
    let ev = score::evaluate(&Spec::read(&folder), &rules, REQUEST);
    assert_eq!(ev.gate.as_str(), "FAIL", "{} {:?}", ev.overall, ev.scores);
    assert!(ev.overall < rules.gate.fail_below);
}
