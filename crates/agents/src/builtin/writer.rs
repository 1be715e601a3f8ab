//! The builtin writer: writes the four spec documents (product brief, requirements,
//! architecture, epics) from the task text, the analyst's discovery context, the paths of the
//! code tree and the documents of earlier phases.
//!
//! Each phase's module decides what its documents say, as plain data (ids, lists, counts,
//! which case applies); the words are in the minijinja templates of
//! `specs/templates/builtin/`, rendered over that data by [`template::fill`]. The template of
//! a phase's main document also sets its open questions and the task's report (summary,
//! findings, decisions), and the words the rules look for are data files beside them.
//!
//! Everything follows fixed rules, so the same input gives byte-identical documents, and what
//! cannot be known offline is written down as an open question instead of being guessed.
//! Every document is checked before it is handed back: frontmatter, every heading of its
//! template, every id it names, and the traceability rules of its phase (goal → REQ →
//! component → story). A document that fails a check is not handed back; the task fails
//! with the reason.

mod architecture;
mod brief;
mod context;
mod epics;
mod requirements;
mod template;
pub(super) mod text;

/// The plural rules of the documents, for the templates' `count` and `plural` filters.
pub(super) use brief::{count, plural};
mod validate;

use std::collections::BTreeMap;

use crate::{Outcome, StateUpdate, TaskInput, TaskOutput};
use tlv4_core::error::Result;
use tlv4_specdoc::md::{self, GATE as MD};
use tlv4_specdoc::spec::{self, Folder, Moscow};

use context::{Availability, CodeView, Discovery};

/// The four documents, in pipeline order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Phase {
    /// `spec/product-brief.md`.
    Brief,
    /// `spec/requirements/`.
    Requirements,
    /// `spec/architecture/`.
    Architecture,
    /// `spec/epics/`.
    Epics,
}

impl Phase {
    const ALL: [Phase; 4] = [
        Phase::Brief,
        Phase::Requirements,
        Phase::Architecture,
        Phase::Epics,
    ];

    /// The task `phase` that selects each phase, its main document and that document's
    /// template, in [`Phase::ALL`] order.
    const INFO: [(&str, &str, &str); 4] = [
        ("product-brief", spec::BRIEF, "product-brief.md"),
        (
            "requirements",
            spec::REQUIREMENTS_INDEX,
            "requirements-index.md",
        ),
        (
            "architecture",
            spec::ARCHITECTURE_INDEX,
            "architecture-index.md",
        ),
        ("epics", spec::EPICS_INDEX, "epics-index.md"),
    ];

    /// The task `phase` that selects it.
    fn name(self) -> &'static str {
        Phase::INFO[self as usize].0
    }

    /// Its main document.
    fn index(self) -> &'static str {
        Phase::INFO[self as usize].1
    }

    /// The main documents of the phases before it, which it needs.
    fn earlier(self) -> impl Iterator<Item = &'static str> {
        Phase::ALL[..self as usize].iter().map(|p| p.index())
    }

    fn from_name(name: &str) -> Option<Phase> {
        Phase::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// What a run knows before it writes anything.
struct Ctx<'a> {
    input: &'a TaskInput,
    /// The user's request.
    task_text: String,
    /// Its clauses.
    clauses: Vec<text::Clause>,
    /// `Feedback:` lines of the task description, as Markdown source.
    feedback: Vec<String>,
    /// Whether the task rewrites documents that exist (`…-R1`, `IMPROVE-…`).
    revision: bool,
    /// The analyst's findings.
    discovery: Discovery,
    /// The title shared by the four documents, as Markdown source.
    title: String,
}

impl<'a> Ctx<'a> {
    fn new(input: &'a TaskInput) -> Result<Ctx<'a>> {
        let id = input.task.id.as_str();
        let revision = input.task.id.prefix() == "IMPROVE"
            || id
                .rsplit_once("-R")
                .is_some_and(|(_, n)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
        let feedback = input
            .task
            .description
            .lines()
            .filter_map(|l| {
                let l = l.trim().trim_start_matches(['-', '*', ' ']);
                let (key, value) = l.split_once(':')?;
                (key.trim().eq_ignore_ascii_case("feedback") && !value.trim().is_empty())
                    .then(|| md::inline(value))
            })
            .collect();
        let first = crate::builtin::words::sentences(&input.session.task);
        let first = first
            .first()
            .map_or("", |s| s.trim_end_matches(['.', '!', '?']));
        let title = match text::shorten(first, 70) {
            t if t.is_empty() => "untitled request".to_owned(),
            t => md::inline(&t),
        };
        Ok(Ctx {
            input,
            task_text: input.session.task.clone(),
            clauses: text::clauses(&input.session.task),
            feedback,
            revision,
            discovery: Discovery::read(input.folder_text(spec::DISCOVERY), &input.code)?,
            title,
        })
    }

    /// The `version` of the document at `path`: 1, or one more than the version it had
    /// when this task rewrites it.
    fn version(&self, path: &str) -> String {
        let previous = self
            .revision
            .then(|| self.input.folder_text(path))
            .flatten()
            .and_then(|doc| MD.frontmatter(doc))
            .and_then(|fm| fm.get("version").and_then(|v| v.parse::<u32>().ok()));
        previous.map_or(1, |v| v + 1).to_string()
    }

    /// What every document's template is given, for the document at `path`.
    fn shared(&self, path: &str) -> Common<'_> {
        let d = &self.discovery;
        let (discovery, discovery_error) = match &d.availability {
            Availability::Present => ("read", ""),
            Availability::Missing => ("missing", ""),
            Availability::Unreadable(why) => ("unreadable", why.as_str()),
        };
        Common {
            session_id: self.input.session.id.to_string(),
            generated_at: &self.input.session.created_at,
            version: self.version(path),
            task_id: self.input.task.id.to_string(),
            feedback: &self.feedback,
            discovery,
            discovery_error,
            code: d.code.view(),
            signals: &d.signals,
            evidence: (d.signals.iter())
                .map(|s| (s.as_str(), d.evidence_of(s)))
                .collect(),
            paths: BTreeMap::from([
                ("discovery", spec::DISCOVERY),
                ("brief", spec::BRIEF),
                ("requirements", spec::REQUIREMENTS_INDEX),
                ("architecture", spec::ARCHITECTURE_INDEX),
                ("epics", spec::EPICS_INDEX),
            ]),
        }
    }

    /// Renders the template `name` of the document at `path` over `data` and what every
    /// document's template is given.
    fn fill(&self, path: &str, name: &str, data: &impl serde::Serialize) -> Step<String> {
        Ok(self.fill_and_read(path, name, data, "")?.0)
    }

    /// Like [`Ctx::fill`], and also returns the text the template set as `var` (none when
    /// `var` is empty).
    fn fill_and_read(
        &self,
        path: &str,
        name: &str,
        data: &impl serde::Serialize,
        var: &str,
    ) -> Step<(String, String)> {
        #[derive(serde::Serialize)]
        struct Doc<'a, T> {
            #[serde(flatten)]
            common: Common<'a>,
            #[serde(flatten)]
            data: &'a T,
        }
        let doc = Doc {
            common: self.shared(path),
            data,
        };
        if var.is_empty() {
            return Ok((template::fill(name, &doc)?, String::new()));
        }
        template::fill_and_read(name, &doc, var)
    }
}

/// What every document's template is given besides its own data. Its open questions start
/// with those of `common-questions.md` (an unusable discovery context, the feedback), and
/// an index document includes `revision-notes.md`.
#[derive(serde::Serialize)]
struct Common<'a> {
    /// The session id.
    session_id: String,
    /// The session's creation time: the `generated_at` of every document (the `date` of an
    /// ADR is its date part).
    generated_at: &'a str,
    /// See [`Ctx::version`].
    version: String,
    /// The task writing it.
    task_id: String,
    /// See [`Ctx::feedback`].
    feedback: &'a [String],
    /// Whether the discovery context was `read`, `missing` or `unreadable`, and why not.
    discovery: &'static str,
    discovery_error: &'a str,
    /// The code facts, as the templates see them.
    code: CodeView<'a>,
    /// The analyst's signals, and what shows each.
    signals: &'a [String],
    evidence: BTreeMap<&'a str, String>,
    /// The paths of the documents, by phase (`brief`, …) and `discovery`.
    paths: BTreeMap<&'static str, &'static str>,
}

/// The result of a step: a failure is a reason for the task's outcome.
type Step<T> = std::result::Result<T, String>;

/// What one phase wrote.
struct Draft {
    /// Files by path, the index first.
    files: Vec<(String, String)>,
    /// One line for the task summary.
    summary: String,
    /// Short findings.
    findings: Vec<String>,
    /// Decisions with their reason.
    decisions: Vec<String>,
}

impl Ctx<'_> {
    /// The main document of `phase`, rendered by its template over `data`, the shared title,
    /// its `dependencies` (the discovery context when present, then the documents of earlier
    /// phases) and what the request rules out, followed by `files`; with the summary, findings
    /// and decisions the template sets as `report`.
    fn draft(
        &self,
        phase: Phase,
        data: &impl serde::Serialize,
        mut files: Vec<(String, String)>,
    ) -> Step<Draft> {
        #[derive(serde::Serialize)]
        struct Index<'a, T> {
            title: &'a str,
            dependencies: Vec<&'static str>,
            /// What the request rules out.
            ruled_out: Vec<&'a str>,
            #[serde(flatten)]
            data: &'a T,
        }
        let present = self.discovery.availability == Availability::Present;
        let index = Index {
            title: &self.title,
            dependencies: (present.then_some(spec::DISCOVERY).into_iter())
                .chain(phase.earlier())
                .collect(),
            ruled_out: (self.clauses.iter())
                .filter(|c| c.negative)
                .map(|c| c.text.as_str())
                .collect(),
            data,
        };
        let name = Phase::INFO[phase as usize].2;
        let (text, report) = self.fill_and_read(phase.index(), name, &index, "report")?;
        files.insert(0, (phase.index().to_owned(), text));
        let lines = |key: &str| {
            let key = format!("{key}: ");
            let found = report
                .lines()
                .filter_map(|l| l.strip_prefix(&key).map(str::to_owned));
            found.collect::<Vec<_>>()
        };
        Ok(Draft {
            files,
            summary: lines("summary").pop().unwrap_or_default(),
            findings: lines("finding"),
            decisions: lines("decision"),
        })
    }
}

/// Runs the writer on `input`.
pub(super) fn run(input: &TaskInput) -> Result<TaskOutput> {
    Ok(write(&Ctx::new(input)?).unwrap_or_else(failed))
}

/// Writes and checks the documents of every phase the task writes, or says why not. A phase
/// needs the main documents of the phases before it.
fn write(ctx: &Ctx<'_>) -> Step<TaskOutput> {
    let input = ctx.input;
    let mut folder = input.folder.clone();
    let mut done: Vec<(Draft, String)> = Vec::new();
    for phase in phases_of(input)? {
        let unreadable = |path: &&str| folder.get(*path).is_none_or(|b| str::from_utf8(b).is_err());
        if let Some(path) = phase.earlier().find(unreadable) {
            return Err(format!(
                "cannot write the {} document: the earlier document `{path}` is missing \
                 from the pipeline folder",
                phase.name()
            ));
        }
        let draft = match phase {
            Phase::Brief => brief::write(ctx),
            Phase::Requirements => requirements::write(ctx, &folder),
            Phase::Architecture => architecture::write(ctx, &folder),
            Phase::Epics => epics::write(ctx, &folder),
        }?;
        for (path, text) in &draft.files {
            folder.insert(path.clone(), text.clone().into_bytes());
        }
        let report = validate::phase(ctx, phase, &draft, &folder).map_err(|reason| {
            format!(
                "the {} document failed its own checks: {reason}",
                phase.name()
            )
        })?;
        done.push((draft, report));
    }
    let mut update = StateUpdate::default();
    // The findings of the phases in turn, the first of each first.
    let rounds = done
        .iter()
        .map(|(d, _)| d.findings.len())
        .max()
        .unwrap_or(0);
    update.key_findings = (0..rounds)
        .flat_map(|i| done.iter().filter_map(move |(d, _)| d.findings.get(i)))
        .take(5)
        .map(|f| text::shorten(f, 98))
        .collect();
    let mut files = Vec::new();
    let mut summaries = Vec::new();
    let mut verification = Vec::new();
    for (draft, report) in done {
        summaries.push(draft.summary);
        verification.push(report);
        update.decisions.extend(draft.decisions);
        for (path, text) in draft.files {
            update.files_modified.push(path.clone());
            files.push((path, text.into_bytes()));
        }
    }
    update.verification = verification.join("; ");
    (update.validate()).map_err(|e| format!("the state update is invalid: {e}"))?;
    Ok(TaskOutput {
        outcome: Outcome::Completed,
        summary: summaries.join("; "),
        files,
        state_update: update,
    })
}

/// The phases a task writes: its own, or for an improvement task every phase whose document
/// exists, in order.
fn phases_of(input: &TaskInput) -> Step<Vec<Phase>> {
    let task = &input.task;
    if let Some(p) = Phase::from_name(&task.phase) {
        return Ok(vec![p]);
    }
    if task.id.prefix() == "IMPROVE" || matches!(task.phase.as_str(), "improve" | "improvement") {
        let existing: Vec<Phase> = Phase::ALL
            .into_iter()
            .filter(|p| input.folder.contains_key(p.index()))
            .collect();
        if existing.is_empty() {
            return Err(format!(
                "{} has no spec document to improve: none of {} exists",
                task.id,
                Phase::ALL.map(Phase::index).join(", ")
            ));
        }
        return Ok(existing);
    }
    Err(format!(
        "the builtin writer cannot write phase `{}` of {}; it writes product-brief, \
         requirements, architecture and epics",
        task.phase, task.id
    ))
}

fn failed(reason: String) -> TaskOutput {
    TaskOutput {
        summary: format!("writer failed: {}", text::shorten(&reason, 120)),
        outcome: Outcome::Failed(reason),
        files: Vec::new(),
        state_update: StateUpdate {
            verification: "failed before any document was handed back".into(),
            ..StateUpdate::default()
        },
    }
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::CodeTree;
    use tlv4_core::model::{Priority, SCHEMA_VERSION, Session, SessionStatus, Task, TaskStatus};

    const TASK: &str = "Add OAuth login and store sessions in Redis. Add login, logout and \
                        password reset without breaking the CLI; optionally add an audit log.";

    const DISCOVERY: &str = r#"{
      "session_id": "TLV4-add-oauth-login-and-20261129", "phase": 1, "task_text": "…",
      "seed_analysis": {
        "problem_statement": "Users sign in with shared passwords that are hard to revoke.",
        "target_users": ["Developer", "Operator"],
        "domain": "developer tooling",
        "constraints": ["Keep the public CLI stable", "p95 latency under 200 ms"],
        "exploration_dimensions": ["security"]
      },
      "codebase_context": {
        "languages": [{"name": "Rust", "files": 4, "bytes": 900, "share": 0.9},
                      {"name": "Markdown", "files": 1, "bytes": 100, "share": 0.1}],
        "manifests": [{"path": "Cargo.toml", "kind": "cargo", "frameworks": ["clap"],
                       "dependencies": ["clap", "jsonwebtoken", "serde"]}],
        "frameworks": ["clap"],
        "test_framework": {"name": "cargo test", "command": "cargo test",
                           "evidence": ["Cargo.toml"]},
        "layout": {"top_level_dirs": ["src", "tests"], "source_dirs": ["src"],
                   "test_dirs": ["tests"], "docs": ["README.md"], "ci": [],
                   "entry_points": ["src/main.rs"]},
        "file_count": 6, "total_bytes": 1000
      },
      "tech_profile": {"signals": ["auth_detected", "perf_sensitive"],
                       "evidence": {"auth_detected": ["src/auth/login.rs"]},
                       "confidence": "medium"},
      "open_questions": ["Which OAuth providers must be supported?"],
      "recommendations": ["Reuse the existing auth module"]
    }"#;

    /// A throwaway repository with a small Rust layout, and its code tree.
    fn code() -> (tempfile::TempDir, CodeTree) {
        let dir = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| {
            let out = tlv4_core::testutil::git_command(dir.path())
                .args(args)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        git(&["init", "-q"]);
        for (path, body) in [
            ("Cargo.toml", "[package]\nname = \"demo\"\n"),
            ("README.md", "# demo\n"),
            ("src/main.rs", "fn main() {}\n"),
            ("src/auth/login.rs", "pub fn login() {}\n"),
            ("src/session/store.rs", "pub fn store() {}\n"),
            ("tests/cli.rs", "#[test]\nfn t() {}\n"),
        ] {
            let p = dir.path().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, body).unwrap();
        }
        git(&["add", "."]);
        git(&[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "-m",
            "init",
        ]);
        let repo = gix::open(dir.path()).unwrap();
        let tree = repo.head_commit().unwrap().tree_id().unwrap().detach();
        let code = CodeTree::from_tree(&repo, tree).unwrap();
        (dir, code)
    }

    fn input(
        code: &CodeTree,
        id: &str,
        phase: &str,
        description: &str,
        folder: &Folder,
    ) -> TaskInput {
        input_for(TASK, code, id, phase, description, folder)
    }

    fn input_for(
        task: &str,
        code: &CodeTree,
        id: &str,
        phase: &str,
        description: &str,
        folder: &Folder,
    ) -> TaskInput {
        TaskInput {
            session: Session {
                schema: SCHEMA_VERSION,
                id: "TLV4-add-oauth-login-and-20261129".parse().unwrap(),
                task: task.into(),
                pipeline: "spec-only".into(),
                supervision: true,
                status: SessionStatus::Active,
                base: "0".repeat(40),
                created_at: "2026-11-29T10:00:00Z".into(),
                updated_at: "2026-11-29T10:05:00Z".into(),
                events: 4,
                forked_from: None,
            },
            task: Task {
                id: id.parse().unwrap(),
                role: tlv4_core::model::Role::Writer,
                status: TaskStatus::InProgress,
                blocked_by: Vec::new(),
                phase: phase.into(),
                priority: Priority::P0,
                discuss: None,
                inner_loop: true,
                attempts: 1,
                description: description.into(),
                owner: None,
                result: None,
            },
            folder: folder.clone(),
            code: code.clone(),
        }
    }

    const PHASES: [(&str, &str); 4] = [
        ("DRAFT-001", "product-brief"),
        ("DRAFT-002", "requirements"),
        ("DRAFT-003", "architecture"),
        ("DRAFT-004", "epics"),
    ];

    /// Runs the four phases in order, each seeing the files of the ones before.
    fn pipeline(code: &CodeTree, folder: Folder) -> (Folder, Vec<TaskOutput>) {
        pipeline_for(TASK, code, folder)
    }

    fn pipeline_for(task: &str, code: &CodeTree, mut folder: Folder) -> (Folder, Vec<TaskOutput>) {
        let mut outputs = Vec::new();
        for (id, phase) in PHASES {
            let out = run(&input_for(task, code, id, phase, "Purpose: write", &folder)).unwrap();
            assert_eq!(out.outcome, Outcome::Completed, "{phase}: {}", out.summary);
            out.state_update.validate().unwrap();
            for (path, bytes) in &out.files {
                folder.insert(path.clone(), bytes.clone());
            }
            outputs.push(out);
        }
        (folder, outputs)
    }

    fn with_discovery() -> Folder {
        let mut folder = Folder::new();
        folder.insert(spec::DISCOVERY.into(), DISCOVERY.as_bytes().to_vec());
        folder
    }

    fn doc<'f>(folder: &'f Folder, path: &str) -> &'f str {
        std::str::from_utf8(folder.get(path).unwrap_or_else(|| panic!("{path} missing"))).unwrap()
    }

    #[test]
    fn four_phases_trace_goals_to_stories() {
        let (_dir, code) = code();
        let (folder, outputs) = pipeline(&code, with_discovery());

        // Brief: frontmatter, goals from the clauses, priorities.
        let brief = doc(&folder, "spec/product-brief.md");
        assert!(brief.starts_with(
            "---\nsession_id: TLV4-add-oauth-login-and-20261129\nphase: 2\n\
             document_type: product-brief\nstatus: draft\ngenerated_at: 2026-11-29T10:00:00Z\n\
             version: 1\ndependencies: [spec/discovery-context.json]\n---\n\n# Product Brief: "
        ));
        let read = spec::Spec::read(&folder);
        let goals = read.brief.as_ref().unwrap().goals.clone();
        let goal_ids: Vec<&str> = goals.iter().map(|g| g.id.as_str()).collect();
        assert_eq!(goal_ids, ["G-001", "G-002", "G-003", "G-004"]);
        assert_eq!(goals[0].text, "Add OAuth login");
        assert_eq!(goals[1].text, "Store sessions in Redis");
        assert_eq!(goals[2].text, "Add login, logout and password reset");
        assert_eq!(goals[3].priority, Moscow::Could);
        assert!(brief.contains("Breaking the CLI (ruled out by the request)"));
        assert!(brief.contains("Which OAuth providers must be supported?"));
        assert!(brief.contains("- [ ] "));
        assert_eq!(read.brief.unwrap().users, ["Developer", "Operator"]);

        // Requirements: one REQ per list item, NFRs from signals and constraints.
        let names: Vec<&str> = folder
            .keys()
            .filter(|k| k.starts_with("spec/requirements/"))
            .map(String::as_str)
            .collect();
        assert_eq!(
            names,
            [
                "spec/requirements/NFR-P-001-keep-hot-paths-fast.md",
                "spec/requirements/NFR-P-002-p95-latency-under-200-ms.md",
                "spec/requirements/NFR-S-001-protect-credentials-and-sessions.md",
                "spec/requirements/REQ-001-add-oauth-login.md",
                "spec/requirements/REQ-002-store-sessions-in-redis.md",
                "spec/requirements/REQ-003-add-login.md",
                "spec/requirements/REQ-004-add-logout.md",
                "spec/requirements/REQ-005-add-password-reset.md",
                "spec/requirements/REQ-006-add-an-audit-log.md",
                "spec/requirements/_index.md",
            ]
        );
        let req = doc(&folder, "spec/requirements/REQ-004-add-logout.md");
        assert!(req.starts_with(
            "---\nid: REQ-004\ntype: functional\npriority: Must\ntraces_to: [G-003]\n\
             status: draft\n"
        ));
        assert!(req.contains("## User Story\n\nAs a developer, I want to add logout, so that"));
        let reqs = read.requirements.unwrap();
        assert_eq!(reqs.functional.len(), 6);
        for g in &goals {
            assert!(
                reqs.functional.iter().any(|r| r.traces.contains(&g.id)),
                "{} has no REQ",
                g.id
            );
        }
        for r in &reqs.functional {
            assert!(r.criteria.len() >= 2, "{} has too few criteria", r.id);
        }
        assert_eq!(
            reqs.functional
                .iter()
                .find(|r| r.id == "REQ-006")
                .unwrap()
                .priority,
            Some(Moscow::Could)
        );
        let index = doc(&folder, "spec/requirements/_index.md");
        assert!(index.contains(
            "| [REQ-001](REQ-001-add-oauth-login.md) | Add OAuth login | Must | G-001 |"
        ));
        assert!(index.contains(
            "| G-003 (Add login, logout and password reset) | REQ-003, REQ-004, REQ-005 |"
        ));
        assert!(index.contains("Keep the public CLI stable (from the discovery context)"));
        assert!(index.contains("| Redis | to confirm |"));

        // Architecture: every REQ implemented by a component; ADRs with three options.
        let arch = read.architecture.unwrap();
        assert!(arch.components.len() >= 4);
        for r in &reqs.functional {
            assert!(
                arch.components.iter().any(|c| c.implements.contains(&r.id)),
                "{} has no component",
                r.id
            );
        }
        assert!(arch.adrs.len() >= 4);
        assert!(
            arch.adrs
                .iter()
                .all(|a| a.alternatives == 3 && !a.traces.is_empty())
        );
        let adr = doc(&folder, arch.adrs[0].path.as_deref().unwrap());
        assert!(adr.starts_with("---\nid: ADR-001\nstatus: Accepted\ntraces_to: [REQ-001"));
        assert!(adr.contains("\ndate: 2026-11-29\n"));
        let arch_index = doc(&folder, "spec/architecture/_index.md");
        assert!(arch_index.contains("| COMP-001 | OAuth login |"));
        assert!(arch_index.contains("`src/auth/` | Extend |"));
        assert!(arch_index.contains("**NFR-S-001**"));
        assert!(
            arch_index.contains("`jsonwebtoken` (declared in `Cargo.toml`)")
                || arch_index.contains("`jsonwebtoken` (Cargo.toml)")
        );

        // Epics: every REQ and component covered by a story.
        let epics = read.epics.unwrap().epics;
        assert!(epics.len() >= 2);
        let stories: Vec<&spec::Story> = epics.iter().flat_map(|e| &e.stories).collect();
        for r in reqs.all() {
            assert!(
                stories.iter().any(|s| s.traces.contains(&r.id)),
                "{} has no story",
                r.id
            );
        }
        for c in &arch.components {
            assert!(
                stories
                    .iter()
                    .any(|s| s.traces.iter().any(|t| c.implements.contains(t)))
            );
        }
        assert!(stories.iter().all(|s| !s.criteria.is_empty()));
        assert_eq!(stories[0].id, "STORY-001-001");
        let epic = doc(&folder, epics[0].path.as_deref().unwrap());
        assert!(epic.starts_with("---\nid: EPIC-001\npriority: Must\nmvp: true\nsize: "));
        assert!(epic.contains("### STORY-001-001: Add OAuth login\n"));
        assert!(epic.contains("\nTraces: REQ-001\n"));
        assert!(epic.contains("The success metric of G-001 holds"));
        let epics_index = doc(&folder, "spec/epics/_index.md");
        assert!(epics_index.contains("```mermaid\ngraph LR\n"));
        assert!(epics_index.contains("| REQ-001 | EPIC-001 | STORY-001-001, STORY-001-002 |"));

        // The state updates.
        assert_eq!(
            outputs[1].summary,
            "requirements: 6 REQ, 3 NFR, all 4 goals traced"
        );
        for out in &outputs {
            assert!(out.state_update.verification.starts_with("self-validated"));
            assert!(!out.state_update.decisions.is_empty());
            assert_eq!(
                out.state_update.files_modified,
                out.files.iter().map(|(p, _)| p.clone()).collect::<Vec<_>>()
            );
        }
    }

    #[test]
    fn same_input_same_bytes() {
        let (_dir, code) = code();
        let (first, _) = pipeline(&code, with_discovery());
        let (second, _) = pipeline(&code, with_discovery());
        assert_eq!(first, second);
    }

    #[test]
    fn a_missing_prior_document_is_named() {
        let (_dir, code) = code();
        let (full, _) = pipeline(&code, with_discovery());
        for (id, phase, missing) in [
            ("DRAFT-002", "requirements", "spec/product-brief.md"),
            ("DRAFT-003", "architecture", "spec/requirements/_index.md"),
            ("DRAFT-004", "epics", "spec/architecture/_index.md"),
        ] {
            let mut folder = full.clone();
            folder.retain(|k, _| !k.starts_with(missing.trim_end_matches("_index.md")));
            let out = run(&input(&code, id, phase, "", &folder)).unwrap();
            match out.outcome {
                Outcome::Failed(reason) => assert!(reason.contains(missing), "{reason}"),
                Outcome::Completed => panic!("{phase} ran without {missing}"),
            }
            assert!(out.files.is_empty());
        }
        let out = run(&input(&code, "DRAFT-009", "deploy", "", &full)).unwrap();
        assert!(matches!(out.outcome, Outcome::Failed(r) if r.contains("deploy")));
    }

    #[test]
    fn without_discovery_context_the_brief_says_so() {
        let (_dir, code) = code();
        let (folder, _) = pipeline(&code, Folder::new());
        let brief = doc(&folder, "spec/product-brief.md");
        assert!(brief.contains("dependencies: []\n"));
        let questions = MD.section(brief, "Open Questions").unwrap();
        assert!(
            questions.contains(
                "- [ ] The discovery context (`spec/discovery-context.json`) was not found"
            )
        );
        // Code facts then come from the builtin analyst's scan.
        assert!(brief.contains("mostly Rust (100% of the code), according to the builtin analyst's scan of the code tree."));
        assert!(brief.contains("- Changes are verified with cargo test (`cargo test`)\n"));
        assert!(doc(&folder, "spec/epics/_index.md").contains("EPIC-001"));
    }

    #[test]
    fn revisions_carry_their_feedback() {
        let (_dir, code) = code();
        let (folder, _) = pipeline(&code, with_discovery());
        let out = run(&input(
            &code,
            "DRAFT-002-R1",
            "requirements",
            "Purpose: revise\nFeedback: split password reset into its own goal\n",
            &folder,
        ))
        .unwrap();
        assert_eq!(out.outcome, Outcome::Completed);
        let index = std::str::from_utf8(&out.files[0].1).unwrap();
        assert!(index.contains("\nversion: 2\n"));
        assert!(index.contains("## Revision Notes\n\nThis version was written by DRAFT-002-R1"));
        assert!(index.contains("> split password reset into its own goal"));
        assert!(
            index.find("## Revision Notes").unwrap() < index.find("## Open Questions").unwrap()
        );

        // An improvement task rewrites every document there is.
        let out = run(&input(
            &code,
            "IMPROVE-traceability-001",
            "improvement",
            "Feedback: tighten the traces",
            &folder,
        ))
        .unwrap();
        assert_eq!(out.outcome, Outcome::Completed, "{}", out.summary);
        for p in Phase::ALL {
            assert!(out.files.iter().any(|(path, _)| path == p.index()));
        }
        assert!(out.state_update.key_findings.len() <= 5);
    }

    #[test]
    fn odd_requests_still_give_a_traced_spec() {
        let (_dir, code) = code();
        let many: String = (1..=9)
            .map(|i| format!("Add report number {i}. "))
            .collect();
        for task in [
            "",
            "!!!",
            "Refactor",
            "ログイン機能を追加する",
            "The login page is slow | sometimes",
            "Users should be able to export reports as CSV, and admins must see an audit trail",
            &many,
        ] {
            let (folder, outputs) = pipeline_for(task, &code, Folder::new());
            let read = spec::Spec::read(&folder);
            let goals = read.brief.unwrap().goals;
            assert!(!goals.is_empty() && goals.len() <= 7, "{task}: {goals:?}");
            let reqs = read.requirements.unwrap();
            let stories: Vec<spec::Story> = (read.epics.unwrap().epics.into_iter())
                .flat_map(|e| e.stories)
                .collect();
            for r in &reqs.functional {
                assert!(
                    stories.iter().any(|s| s.traces.contains(&r.id)),
                    "{task}: {}",
                    r.id
                );
            }
            for out in &outputs {
                for f in &out.state_update.key_findings {
                    assert!(f.chars().count() < 100, "{task}: {f}");
                }
            }
        }
    }

    #[test]
    fn a_broken_document_fails_its_checks() {
        let (_dir, code) = code();
        let folder = with_discovery();
        let inp = input(&code, "DRAFT-001", "product-brief", "", &folder);
        let ctx = Ctx::new(&inp).unwrap();
        let draft = brief::write(&ctx).unwrap();
        let (path, text) = &draft.files[0];
        let broken = Draft {
            files: vec![(
                path.clone(),
                text.replace("## Scope", "## Scape")
                    .replace("G-002", "G-009"),
            )],
            summary: String::new(),
            findings: Vec::new(),
            decisions: Vec::new(),
        };
        let mut with = folder.clone();
        with.insert(path.clone(), broken.files[0].1.clone().into_bytes());
        let err = validate::phase(&ctx, Phase::Brief, &broken, &with).unwrap_err();
        assert!(err.contains("\"Scope\" is missing"), "{err}");
        let mut with = folder.clone();
        let dangling = text.replace("the goals G-001", "the goals REQ-042");
        let draft = Draft {
            files: vec![(path.clone(), dangling.clone())],
            ..broken
        };
        with.insert(path.clone(), dangling.into_bytes());
        let err = validate::phase(&ctx, Phase::Brief, &draft, &with).unwrap_err();
        assert!(err.contains("REQ-042"), "{err}");
    }
}
