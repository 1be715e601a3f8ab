//! Prompts built from task inputs, and the helpers other drivers' tests build them with.

use super::fit::*;
use super::*;
use crate::{CodeTree, TaskInput};
use std::path::Path;
use tlv4_core::model::Role;
use tlv4_core::model::{Session, Task};

/// An empty code tree (prompts never read code).
pub(crate) fn empty_code() -> (tempfile::TempDir, CodeTree) {
    let dir = tempfile::tempdir().expect("temp dir");
    let repo = gix::init(dir.path()).expect("init");
    let tree = repo.empty_tree().id;
    let code = CodeTree::from_tree(&repo, tree).expect("an empty tree");
    (dir, code)
}

/// A task input for `role`/`id` with `description` and pipeline-folder `files`.
pub(crate) fn input(
    id: &str,
    role: &str,
    description: &str,
    files: &[(&str, &str)],
    code: CodeTree,
) -> TaskInput {
    let session: Session = toml::from_str(
        r#"
schema = 1
id = "TLV4-demo-20260101"
task = "Add OAuth login to the web app"
pipeline = "full-lifecycle"
supervision = true
status = "active"
base = "0000000000000000000000000000000000000000"
created_at = "2026-01-01T00:00:00Z"
updated_at = "2026-01-01T00:00:00Z"
events = 3
"#,
    )
    .expect("a valid session");
    let mut task: Task = toml::from_str(&format!(
        "id = \"{id}\"\nrole = \"{role}\"\nstatus = \"in_progress\"\nphase = \"requirements\"\n\
             priority = \"P0\"\ninner_loop = false\nattempts = 1\ndescription = \"\"\n"
    ))
    .expect("a valid task");
    task.description = description.to_owned();
    TaskInput {
        session,
        task,
        folder: files
            .iter()
            .map(|(p, c)| ((*p).to_owned(), c.as_bytes().to_vec()))
            .collect(),
        code,
    }
}

const DESCRIPTION: &str = "PURPOSE: Turn the goals into requirements | Success: every goal covered\n\
        TASK:\n  - Write REQ-NNN\nCONTEXT:\n  - Session: TLV4-demo-20260101\n  - Upstream artifacts: \
        DRAFT-001: spec/product-brief.md\nEXPECTED: spec/requirements/\nCONSTRAINTS: Documents only\n";

#[test]
fn prompt_has_role_task_context_and_contract_in_order() {
    let (_d, code) = empty_code();
    let input = input(
        "DRAFT-002",
        "writer",
        DESCRIPTION,
        &[
            ("spec/product-brief.md", "# Product Brief\n\nGOAL-MARKER\n"),
            ("spec/discovery-context.json", "{\"DISCOVERY\": 1}"),
            ("wisdom/learnings.md", "# Learnings\n\n- WISDOM-MARKER\n"),
            ("wisdom/issues.md", "# Issues\n"),
            ("artifacts/other.md", "x"),
            ("session.toml", "x"),
        ],
        code,
    );
    let specs = RoleSpecs::builtin();
    let prompt = build_prompt(&input, &specs.role("writer"));
    let at = |needle: &str| {
        prompt
            .find(needle)
            .unwrap_or_else(|| panic!("`{needle}` missing from:\n{prompt}"))
    };
    let role = at("You are the writer.");
    assert!(
        !prompt.contains("<!--"),
        "the maintainers' comment is left out"
    );
    let desc = at("PURPOSE: Turn the goals into requirements");
    let discovery = at("\"DISCOVERY\"");
    let brief = at("GOAL-MARKER");
    let wisdom = at("WISDOM-MARKER");
    let contract = at("# Result");
    assert!(
        role < desc && desc < discovery && discovery < brief,
        "{prompt}"
    );
    assert!(brief < wisdom && wisdom < contract, "{prompt}");
    assert!(prompt.contains("- Output: documents"));
    assert!(prompt.contains("- Expected: spec/requirements/"));
    assert!(prompt.contains("- DRAFT-001: spec/product-brief.md"));
    assert!(
        prompt.contains("- artifacts/other.md (1 bytes)"),
        "{prompt}"
    );
    assert!(
        !prompt.contains("wisdom/issues.md"),
        "an empty wisdom file is left out"
    );
    assert!(!prompt.contains("session.toml ("));
    assert!(prompt.contains("\"key_findings\""));
    assert!(prompt.trim_end().ends_with("at most twice."));
    assert!(!prompt.contains("cut here"));
    // The shape shown is not itself a block the result parser would take.
    assert!(crate::result::parse(&prompt, crate::result::Deliverable::Documents).is_err());
}

#[test]
fn code_tasks_get_the_plan_and_the_code_contract() {
    let (_d, code) = empty_code();
    let input = input(
        "IMPL-001",
        "executor",
        "PURPOSE: Implement one task of plan PLAN-001\nTASK:\n  - TASK-002: add login (files: src/a.rs)\n",
        &[
            ("plan/plan.json", "{\"tasks\": []}"),
            ("plan/.task/TASK-001.json", "{\"id\": \"TASK-001\"}"),
            ("plan/.task/TASK-002.json", "{\"id\": \"TASK-002\"}"),
        ],
        code,
    );
    let prompt = build_prompt(&input, "Executor instructions.");
    assert!(prompt.contains("- Output: code"));
    assert!(prompt.contains("### plan/.task/TASK-002.json"));
    assert!(!prompt.contains("### plan/.task/TASK-001.json"), "{prompt}");
    assert!(prompt.contains("- plan/.task/TASK-001.json ("));
    assert!(prompt.contains("Leave `files` out"));
    assert!(prompt.find("### plan/plan.json") < prompt.find("### plan/.task/TASK-002.json"));
}

#[test]
fn documents_past_the_budget_are_summarised_largest_first() {
    let (_d, code) = empty_code();
    let mut huge = String::from("# Requirements\n\nThe first line of the requirements.\n");
    for i in 0..400 {
        huge.push_str(&format!("\n## REQ-{i:03}: a goal\n\n"));
        huge.push_str(&"requirement text line\n".repeat(120));
    }
    let big = "architecture line\n".repeat(8_000);
    let input = input(
        "DRAFT-004",
        "writer",
        DESCRIPTION,
        &[
            ("spec/discovery-context.json", "{\"small\": true}"),
            ("spec/requirements/_index.md", &huge),
            ("spec/architecture/_index.md", &big),
            ("wisdom/decisions.md", "# Decisions\n\n- keep it small\n"),
        ],
        code,
    );
    // Only the largest needs to go: the other stays whole.
    let limit = 200 * 1024;
    let c = compose_within(&input, "Writer.", None, Contract::builtin(), limit);
    assert!(c.text.len() <= limit, "{} > {limit}", c.text.len());
    assert_eq!(
        c.summarised,
        vec![("spec/requirements/_index.md".to_owned(), huge.len())]
    );
    assert!(c.cut.is_empty());
    assert_eq!(c.text.matches("architecture line").count(), 8_000);
    assert!(c.text.contains("these files are shown as a summary only"));
    assert!(
        c.text.contains(&format!(
            "- spec/requirements/_index.md ({} bytes)",
            huge.len()
        )),
        "the note names the file and its size"
    );
    assert!(c.text.contains(
        "the whole file is `.tlv4/sessions/TLV4-demo-20260101/spec/requirements/_index.md`"
    ));
    // The summary: the first lines, then the headings.
    assert!(c.text.contains("The first line of the requirements."));
    assert!(
        c.text
            .contains("Headings:\n## REQ-001: a goal\n## REQ-002: a goal")
    );
    assert!(c.text.matches("requirement text line").count() <= 6);
    assert!(c.report().contains(&format!(
        "summarised to fit (headings and first lines only): spec/requirements/_index.md ({} bytes)",
        huge.len()
    )));
    assert!(c.text.contains("{\"small\": true}") && c.text.contains("- keep it small"));
    assert!(c.text.trim_end().ends_with("at most twice."));

    // A smaller budget: the next largest goes too; the small ones stay whole.
    let limit = 64 * 1024;
    let c = compose_within(&input, "Writer.", None, Contract::builtin(), limit);
    assert!(c.text.len() <= limit, "{} > {limit}", c.text.len());
    let names: Vec<&str> = c.summarised.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        names,
        ["spec/requirements/_index.md", "spec/architecture/_index.md"]
    );
    assert!(c.text.contains("{\"small\": true}") && c.text.contains("- keep it small"));
    assert!(!c.text.contains("cut here"));

    // Everything fits: nothing left out.
    let c = compose_within(&input, "Writer.", None, Contract::builtin(), 4 << 20);
    assert!(c.summarised.is_empty());
    assert!(c.report().contains("nothing left out"));
    // The default bound holds too.
    let prompt = build_prompt(&input, "Writer.");
    assert!(prompt.len() <= PROMPT_LIMIT);
}

#[test]
fn summaries_that_still_do_not_fit_are_cut() {
    let (_d, code) = empty_code();
    let heads: String = (0..40)
        .map(|i| format!("# Heading {i} {}\n", "x".repeat(60)))
        .collect();
    let files: Vec<(String, String)> = (0..30)
        .map(|i| {
            (
                format!("spec/epics/E-{i:02}.md"),
                format!("{heads}{}", "body\n".repeat(2000)),
            )
        })
        .collect();
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    let input = input("DRAFT-005", "writer", DESCRIPTION, &refs, code);
    let limit = 24 * 1024;
    let c = compose_within(&input, "Writer.", None, Contract::builtin(), limit);
    assert!(c.text.len() <= limit, "{} > {limit}", c.text.len());
    assert_eq!(c.summarised.len(), 30);
    assert!(!c.cut.is_empty());
    assert!(c.text.contains("even so, the largest were cut"));
    assert!(c.report().contains("summaries cut too: spec/epics/"));
}

#[test]
fn water_fill_keeps_small_items_whole() {
    assert_eq!(water_fill(&[10, 20], 100), vec![10, 20]);
    assert_eq!(water_fill(&[10, 1000, 500], 310), vec![10, 150, 150]);
    assert_eq!(water_fill(&[10, 1000], 5), vec![2, 2]);
}

#[test]
fn templates_go_to_writers() {
    let (_d, code) = empty_code();
    let input = input("DRAFT-002", "writer", DESCRIPTION, &[], code);
    let specs = RoleSpecs::builtin();
    let template = specs.template("requirements").expect("a builtin template");
    let prompt = compose(
        &input,
        &specs.role("writer"),
        Some(template),
        specs.contract(),
        PROMPT_LIMIT,
    );
    assert!(prompt.find("# Template") < prompt.find("# Context"));
    assert!(prompt.contains("REQ-NNN"));
}

#[test]
fn retry_prompt_carries_the_problem_and_the_old_ending() {
    let p = retry_prompt("PROMPT", "the block is not JSON", "blah\n```json\n{x}\n```");
    assert!(p.starts_with("PROMPT\n"));
    assert!(p.contains(RETRY_HEADING));
    assert!(p.contains("the block is not JSON"));
    assert!(p.contains("{x}"));
}

#[test]
fn roles_lock_is_stable_and_uses_git_blob_ids() {
    let specs = RoleSpecs::builtin();
    let lock = roles_lock(&specs, gix::hash::Kind::Sha1);
    assert_eq!(
        lock,
        roles_lock(&RoleSpecs::builtin(), gix::hash::Kind::Sha1)
    );
    for role in Role::KNOWN {
        assert!(
            lock.contains(&format!(" roles/{role}.md builtin\n")),
            "{lock}"
        );
    }
    assert!(lock.contains(" templates/requirements.md builtin\n"));
    // The id is git's own: compare with `git hash-object`.
    let out = std::process::Command::new("git")
        .args(["hash-object", "--stdin"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin
                .take()
                .expect("stdin")
                .write_all(specs.role("tester").as_bytes())?;
            c.wait_with_output()
        })
        .expect("git hash-object runs");
    let id = String::from_utf8(out.stdout).unwrap();
    assert!(
        lock.contains(&format!("{} roles/tester.md", id.trim())),
        "{lock}"
    );

    // A repository override changes the lock and is marked as such.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(ROLE_OVERRIDE_DIR)).unwrap();
    std::fs::write(
        dir.path().join(ROLE_OVERRIDE_DIR).join("tester.md"),
        "Mine.\n",
    )
    .unwrap();
    let loaded = RoleSpecs::load(dir.path()).unwrap();
    assert_eq!(loaded.role("tester"), "Mine.\n");
    assert_eq!(loaded.origin("tester"), Some(Origin::Repository));
    assert_eq!(loaded.role("writer"), specs.role("writer"));
    let other = roles_lock(&loaded, gix::hash::Kind::Sha1);
    assert_ne!(other, lock);
    assert!(other.contains(" roles/tester.md repository\n"));
    assert_eq!(RoleSpecs::load(Path::new("/nonexistent")).unwrap(), specs);
}

#[test]
fn every_role_has_builtin_instructions() {
    let specs = RoleSpecs::builtin();
    for role in Role::KNOWN {
        assert_eq!(specs.origin(role.as_str()), Some(Origin::Builtin));
        assert!(specs.role(role.as_str()).len() > 500, "{role} is too short");
    }
    assert!(
        specs
            .role("security-expert")
            .contains("`security-expert` specialist")
    );
}

/// The result contract as the code said it before it became a template: the rendered
/// template must stay this, byte for byte.
fn contract_before_the_template(code: bool) -> String {
    let mut s = String::from(
        "# Result\n\n\
             When you are done, end your answer with one fenced code block tagged `json`, and write \
             nothing after it. git-tlv4 reads only that block (the rest of your answer is kept as \
             the transcript). The block holds one JSON object of this shape:\n\n\
             \x20   {\n\
             \x20     \"summary\": \"<one line: what you did>\",\n\
             \x20     \"state_update\": {\n\
             \x20       \"key_findings\": [\"<at most 5 entries, each under 100 characters>\"],\n\
             \x20       \"decisions\": [\"<a decision, and the reason for it>\"],\n\
             \x20       \"files_modified\": [\"<relative paths of the files you wrote or changed>\"],\n\
             \x20       \"verification\": \"<self-validated | peer-reviewed | tested>\",\n\
             \x20       \"tech_profile\": {\"signals\": [\"<signal>\", …], \"evidence\": {\"<signal>\": [\"<path>\", …]}, \"confidence\": \"<high | medium | low>\"}\n\
             \x20     },\n\
             \x20     \"files\": {\"<path relative to the pipeline folder>\": \"<the whole content of the file>\", …},\n\
             \x20     \"error\": \"<only when you could not do the task: why>\"\n\
             \x20   }\n\n\
             Rules:\n\
             - `summary` and `state_update` are required; `tech_profile`, `files` and `error` are \
             optional. Leave out what you do not use, and add no other keys.\n\
             - Write decisions with their reason, and findings as short facts.\n",
    );
    if code {
        s.push_str(
            "- This is a code task: make your changes directly in the files of your working \
                 directory; git-tlv4 takes them from there and commits them. Do not commit, do not \
                 touch `.git`, and change nothing under `.tlv4/`.\n\
                 - Leave `files` out. List every file you changed or created, relative to the \
                 working directory, in `files_modified`.\n\
                 - Say in `verification` how you checked the change (`tested` only if you ran the \
                 tests).\n",
        );
    } else {
        s.push_str(
            "- This is a document task: put every document you produce in `files`, keyed by its \
                 path relative to the pipeline folder (for example `spec/product-brief.md`), with \
                 its complete text. This is the only way documents are kept; files you write \
                 yourself are discarded.\n\
                 - Paths must stay inside the pipeline folder; `session.toml`, `control.toml`, \
                 `roles.lock`, `tasks/` and `runs/` belong to git-tlv4.\n",
        );
    }
    s.push_str(
        "- If the block is missing or does not follow these rules, you will be told what is \
             wrong and asked again, at most twice.\n",
    );
    s
}

#[test]
fn the_contract_template_renders_the_contract_byte_for_byte() {
    for code in [true, false] {
        assert_eq!(
            Contract::builtin().text(code),
            contract_before_the_template(code)
        );
        assert_eq!(
            RoleSpecs::builtin().contract().text(code),
            contract_before_the_template(code)
        );
    }
    // It ends every prompt.
    let (_d, code) = empty_code();
    let input = input("DRAFT-002", "writer", DESCRIPTION, &[], code);
    assert!(build_prompt(&input, "Writer.").ends_with(&contract_before_the_template(false)));
    // It is a template like the others: pinned in roles.lock, and not a phase's.
    let specs = RoleSpecs::builtin();
    let lock = roles_lock(&specs, gix::hash::Kind::Sha1);
    assert!(
        lock.contains(" templates/result-contract.md builtin\n"),
        "{lock}"
    );
    assert_eq!(specs.template("result-contract"), None);
}

#[test]
fn a_repository_replaces_the_contract_like_any_template() {
    let dir = tempfile::tempdir().unwrap();
    let templates = dir.path().join(TEMPLATE_OVERRIDE_DIR);
    std::fs::create_dir_all(&templates).unwrap();
    std::fs::write(
        templates.join("result-contract.md"),
        "# Result\n\n{% if code %}\nCode.\n{% else %}\nDocuments.\n{% endif %}\n",
    )
    .unwrap();
    let loaded = RoleSpecs::load(dir.path()).unwrap();
    assert_eq!(loaded.contract().text(true), "# Result\n\nCode.\n");
    assert_eq!(loaded.contract().text(false), "# Result\n\nDocuments.\n");
    let lock = roles_lock(&loaded, gix::hash::Kind::Sha1);
    assert!(
        lock.contains(" templates/result-contract.md repository\n"),
        "{lock}"
    );
    let (_d, code) = empty_code();
    let input = input("IMPL-001", "executor", "Do it.", &[], code);
    let prompt = compose_within(&input, "Exec.", None, loaded.contract(), PROMPT_LIMIT);
    assert!(
        prompt.text.ends_with("\n# Result\n\nCode.\n"),
        "{}",
        prompt.text
    );

    // A template that does not compile fails the load, naming its file.
    std::fs::write(templates.join("result-contract.md"), "{% if code %}\n").unwrap();
    let err = RoleSpecs::load(dir.path()).unwrap_err().to_string();
    assert!(
        err.contains(".tlv4/specs/templates/result-contract.md"),
        "{err}"
    );
}
