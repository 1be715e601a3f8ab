//! Tests of the builtin planner, each on a real repository made with the `git` CLI.

use serde_json::Value;

use super::{run, signals, text};
use crate::{CodeTree, Outcome, TaskInput, TaskOutput};
use tlv4_core::model::{Session, Task};

use tlv4_core::testutil::git;

/// A repository holding `files`, committed; the directory lives as long as the guard.
fn repo(files: &[(&str, &str)]) -> (tempfile::TempDir, CodeTree) {
    let dir = tempfile::tempdir().expect("temp dir");
    git(dir.path(), &["init", "-q"]);
    for (path, content) in files {
        let full = dir.path().join(path);
        std::fs::create_dir_all(full.parent().expect("a file has a parent")).unwrap();
        std::fs::write(full, content).unwrap();
    }
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-q", "-m", "init"]);
    let repo = gix::open(dir.path()).expect("open the repository");
    let tree = repo
        .head_commit()
        .expect("HEAD is a commit")
        .tree_id()
        .expect("the commit has a tree")
        .detach();
    let code = CodeTree::from_tree(&repo, tree).expect("list the tree");
    (dir, code)
}

fn input(task: &str, folder: &[(&str, &str)], code: CodeTree) -> TaskInput {
    let session: Session = toml::from_str(&format!(
        r#"
schema = 1
id = "TLV4-test-20260101"
task = {}
pipeline = "full-lifecycle"
supervision = false
status = "active"
base = "0000000000000000000000000000000000000000"
created_at = "2026-01-01T00:00:00Z"
updated_at = "2026-01-01T00:00:00Z"
events = 1
"#,
        toml::Value::String(task.to_owned())
    ))
    .expect("a valid session");
    let task: Task = toml::from_str(
        r#"
id = "PLAN-001"
role = "planner"
status = "in_progress"
phase = "planning"
priority = "P0"
inner_loop = true
attempts = 1
description = "Plan the implementation"
"#,
    )
    .expect("a valid task");
    TaskInput {
        session,
        task,
        folder: folder
            .iter()
            .map(|(p, c)| ((*p).to_owned(), c.as_bytes().to_vec()))
            .collect(),
        code,
    }
}

fn file(out: &TaskOutput, path: &str) -> Value {
    let (_, bytes) = out
        .files
        .iter()
        .find(|(p, _)| p == path)
        .unwrap_or_else(|| panic!("{path} was not written; files: {:?}", paths(out)));
    serde_json::from_slice(bytes).expect("valid JSON")
}

fn paths(out: &TaskOutput) -> Vec<&str> {
    out.files.iter().map(|(p, _)| p.as_str()).collect()
}

fn completed(input: &TaskInput) -> TaskOutput {
    let out = run(input).expect("the planner runs");
    assert_eq!(out.outcome, Outcome::Completed, "{}", out.summary);
    out.state_update.validate().expect("a valid state update");
    out
}

/// `(id, [paths], [depends_on])` of each task in plan.json.
fn shape(plan: &Value) -> Vec<(String, Vec<String>, Vec<String>)> {
    plan["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .map(|t| {
            let strings = |v: &Value| -> Vec<String> {
                v.as_array()
                    .expect("an array")
                    .iter()
                    .map(|x| x.as_str().expect("a string").to_owned())
                    .collect()
            };
            let files = t["files"]
                .as_array()
                .expect("files")
                .iter()
                .map(|f| f["path"].as_str().expect("path").to_owned())
                .collect();
            (
                t["id"].as_str().expect("id").to_owned(),
                files,
                strings(&t["depends_on"]),
            )
        })
        .collect()
}

fn owned(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

const PARSER: &str = "//! The parser.\n\nuse crate::lexer::Token;\n\n/// Parses the input.\npub fn parse(input: &str) -> Vec<Token> {\n    let tokens = crate::lexer::lex(input);\n    if tokens.is_empty() {\n        panic!(\"nothing to parse\");\n    }\n    tokens\n}\n";
const LEXER: &str = "//! The lexer.\n\n/// A token and its position.\npub struct Token {\n    pub text: String,\n    pub position: usize,\n}\n\n/// Splits the text into tokens.\npub fn lex(text: &str) -> Vec<Token> {\n    text.split(' ').map(|t| Token { text: t.into(), position: 0 }).collect()\n}\n";

fn small_repo(extra: &[(&str, &str)]) -> (tempfile::TempDir, CodeTree) {
    let mut files = vec![
        ("Cargo.toml", "[package]\nname = \"calc\"\n"),
        ("src/lib.rs", "pub mod lexer;\npub mod parser;\n"),
        ("src/parser.rs", PARSER),
        ("src/lexer.rs", LEXER),
        ("README.md", "# calc\n\nA calculator.\n"),
    ];
    files.extend_from_slice(extra);
    repo(&files)
}

const LOW_TASK: &str =
    "Fix the parser crash on empty input and report the lexer position in errors";

#[test]
fn low_plan_from_task_text_is_one_chain() {
    let (_dir, code) = small_repo(&[]);
    let analyst_cache = r#"{"entries": [{"angle": "architecture", "file": "explorations/explore-architecture.json", "source": "analyst", "task": "RESEARCH-001"}]}"#;
    let input = input(
        LOW_TASK,
        &[
            ("explorations/cache-index.json", analyst_cache),
            (
                "explorations/explore-architecture.json",
                r#"{"relevant_files": ["src/lib.rs"]}"#,
            ),
        ],
        code,
    );
    let out = completed(&input);
    assert_eq!(out.summary, "2 tasks, Low (1 module), single");
    let plan = file(&out, "plan/plan.json");
    assert_eq!(plan["complexity"], "Low");
    assert_eq!(plan["recommended_execution"], "single");
    assert_eq!(plan["modules"], serde_json::json!(["src"]));
    assert_eq!(plan["session_id"], "TLV4-test-20260101");
    assert_eq!(plan["test_command"], Value::Null);
    assert_eq!(
        shape(&plan),
        vec![
            ("TASK-001".into(), owned(&["src/parser.rs"]), vec![]),
            (
                "TASK-002".into(),
                owned(&["src/lexer.rs"]),
                owned(&["TASK-001"])
            ),
        ]
    );
    let task = file(&out, "plan/.task/TASK-001.json");
    assert_eq!(task["files"][0]["change"], "modify");
    assert_eq!(task["meta"]["execution_config"]["method"], "agent");
    assert!(
        !task["convergence"]["criteria"]
            .as_array()
            .expect("criteria")
            .is_empty()
    );
    assert!(task["pre_analysis"][0]["on_error"].is_string());
    // No cached `error-handling` exploration: the planner writes one and keeps the analyst's.
    let exploration = file(&out, "explorations/planner-error-handling.json");
    assert_eq!(exploration["relevant_files"][0]["path"], "src/parser.rs");
    let index = file(&out, "explorations/cache-index.json");
    let angles: Vec<&str> = index["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| e["angle"].as_str().expect("angle"))
        .collect();
    assert_eq!(angles, ["architecture", "error-handling"]);
    assert_eq!(
        index["entries"][1]["file"],
        "explorations/planner-error-handling.json"
    );
}

const AUTH: &str = "//! Authentication.\n\n/// A logged-in session.\npub struct Session {\n    pub token: String,\n}\n\n/// Checks a password and opens a session.\npub fn login(name: &str, password: &str) -> Option<Session> {\n    if password.is_empty() {\n        return None;\n    }\n    Some(Session { token: name.to_owned() })\n}\n";
const INVOICE: &str = "//! Invoices.\n\n/// The total of each invoice: the sum of its lines.\npub fn totals(invoices: &[Vec<u64>]) -> Vec<u64> {\n    let mut out = Vec::new();\n    for invoice in invoices {\n        let mut sum = 0;\n        for line in invoice {\n            sum += line;\n        }\n        out.push(sum);\n    }\n    out\n}\n";
const SUMMARY: &str = "//! Monthly summaries.\n\n/// One row per month.\npub fn monthly(months: &[u32]) -> Vec<String> {\n    months.iter().map(|m| format!(\"month {m}\")).collect()\n}\n";

fn medium_fixture() -> (tempfile::TempDir, TaskInput) {
    let (dir, code) = repo(&[
        ("Cargo.toml", "[package]\nname = \"shop\"\n"),
        (
            "src/lib.rs",
            "pub mod auth;\npub mod billing;\npub mod report;\n",
        ),
        ("src/auth/mod.rs", AUTH),
        ("src/billing/mod.rs", "pub mod invoice;\n"),
        ("src/billing/invoice.rs", INVOICE),
        ("src/report/mod.rs", "pub mod summary;\n"),
        ("src/report/summary.rs", SUMMARY),
        (
            "migrations/001_invoices.sql",
            "CREATE TABLE invoices (id INTEGER PRIMARY KEY, total INTEGER);\n",
        ),
    ]);
    let discovery = r#"{
        "task_text": "Shop features",
        "seed_analysis": {},
        "codebase_context": {
            "languages": ["Rust"],
            "frameworks": [],
            "test_framework": {"name": "cargo", "command": "cargo test", "evidence": "Cargo.toml"},
            "layout": {"source_dirs": ["src"], "test_dirs": []}
        },
        "tech_profile": {"signals": ["sql_detected"], "evidence": {"sql_detected": ["migrations/001_invoices.sql"]}}
    }"#;
    let req1 = "---\nid: REQ-001\ntype: functional\npriority: Must\n---\n\n# REQ-001: Login with a password\n\n## Description\n\nA person logs in with a password and gets a session token.\n\n## Acceptance Criteria\n\n- [ ] A wrong password is refused\n- [ ] A session token is issued on login\n";
    let req2 = "---\nid: REQ-002\npriority: Must\n---\n\n# REQ-002: Invoice totals\n\n## Description\n\nCompute the totals of each invoice from its lines.\n\n## Acceptance Criteria\n\n- [ ] The total of an invoice is the sum of its lines\n";
    let req3 = "---\nid: REQ-003\npriority: Should\n---\n\n# REQ-003: Monthly report\n\n## Description\n\nA monthly report with one row per month.\n\n## Acceptance Criteria\n\n- [x] The monthly report lists each month once\n";
    let req4 = "---\nid: REQ-004\npriority: Could\n---\n\n# REQ-004: Invoice currency column\n\n## Description\n\nStore a currency with each invoice in the invoices table.\n\n## Acceptance Criteria\n\n- [ ] The invoices table has a currency column\n";
    let req5 = "---\nid: REQ-005\npriority: Won't\n---\n\n# REQ-005: Crypto payments\n";
    let input = input(
        "Shop: login, invoice totals, monthly report and invoice currency",
        &[
            ("spec/discovery-context.json", discovery),
            ("spec/requirements/_index.md", "# Requirements\n"),
            ("spec/requirements/REQ-001-login.md", req1),
            ("spec/requirements/REQ-002-invoice-totals.md", req2),
            ("spec/requirements/REQ-003-monthly-report.md", req3),
            ("spec/requirements/REQ-004-invoice-currency.md", req4),
            ("spec/requirements/REQ-005-crypto.md", req5),
        ],
        code,
    );
    (dir, input)
}

#[test]
fn medium_plan_is_parallel_except_where_files_are_shared() {
    let (_dir, input) = medium_fixture();
    let out = completed(&input);
    let plan = file(&out, "plan/plan.json");
    assert_eq!(plan["complexity"], "Medium", "{plan:#}");
    assert_eq!(plan["recommended_execution"], "parallel");
    assert_eq!(out.summary, "4 tasks, Medium (4 modules), parallel");
    assert_eq!(
        plan["modules"],
        serde_json::json!(["migrations", "src/auth", "src/billing", "src/report"])
    );
    assert_eq!(plan["test_command"], "cargo test");
    assert_eq!(
        shape(&plan),
        vec![
            ("TASK-001".into(), owned(&["src/auth/mod.rs"]), vec![]),
            (
                "TASK-002".into(),
                owned(&["src/billing/invoice.rs"]),
                vec![]
            ),
            ("TASK-003".into(), owned(&["src/report/summary.rs"]), vec![]),
            (
                "TASK-004".into(),
                owned(&["src/billing/invoice.rs", "migrations/001_invoices.sql"]),
                owned(&["TASK-002"])
            ),
        ]
    );
    assert_eq!(
        plan["tasks"][0]["requirements"],
        serde_json::json!(["REQ-001"])
    );
    let task = file(&out, "plan/.task/TASK-001.json");
    assert_eq!(
        task["convergence"]["criteria"],
        serde_json::json!([
            "A wrong password is refused",
            "A session token is issued on login",
            "`cargo test` passes"
        ])
    );
    let profile = out.state_update.tech_profile.expect("signals were found");
    assert_eq!(
        profile.signals,
        owned(&[
            "breaking_change",
            "data_migration",
            "scaling_concern",
            "sql_detected"
        ])
    );
    assert_eq!(
        profile.evidence["breaking_change"],
        owned(&["src/auth/mod.rs"])
    );
    assert_eq!(
        profile.evidence["scaling_concern"],
        owned(&["src/billing/invoice.rs"])
    );
    assert_eq!(
        profile.evidence["data_migration"],
        owned(&["migrations/001_invoices.sql"])
    );
}

fn epic(id: &str, title: &str, deps: &[&str], story: &str, criterion: &str) -> String {
    format!(
        "---\nid: {id}\npriority: Must\nrequirements: [REQ-{}]\ndependencies: [{}]\n---\n\n# {id}: {title}\n\n## Description\n\n{title}.\n\n## Stories\n\n### STORY-{}-001: {story}\n\n- [ ] {criterion}\n",
        &id[5..],
        deps.join(", "),
        &id[5..],
    )
}

#[test]
fn high_plan_follows_the_epic_dependencies() {
    let (_dir, code) = repo(&[
        ("Cargo.toml", "[package]\nname = \"store\"\n"),
        (
            "src/lib.rs",
            "pub mod cart;\npub mod catalog;\npub mod checkout;\npub mod notify;\npub mod shipping;\n",
        ),
        (
            "src/catalog/search.rs",
            "/// Searches the catalog by keyword.\npub fn search(catalog: &[String], keyword: &str) -> Vec<String> { Vec::new() }\n",
        ),
        (
            "src/cart/subtotal.rs",
            "/// The subtotal of a cart.\npub fn subtotal(cart: &[u64]) -> u64 { cart.iter().sum() }\n",
        ),
        (
            "src/checkout/payment.rs",
            "/// Charges the card at checkout.\npub fn charge(card: &str, amount: u64) -> bool { true }\n",
        ),
        (
            "src/shipping/rates.rs",
            "/// Shipping rates by carrier.\npub fn rate(carrier: &str, weight: u64) -> u64 { weight }\n",
        ),
        (
            "src/notify/email.rs",
            "/// Sends a notification email.\npub fn send(address: &str, body: &str) {}\n",
        ),
    ]);
    // Ids do not follow the dependency order: EPIC-001 waits for EPIC-003.
    let e1 = epic(
        "EPIC-001",
        "Checkout payment",
        &["EPIC-003"],
        "Charge the card",
        "A declined card stops the checkout",
    );
    let e2 = epic(
        "EPIC-002",
        "Catalog search",
        &[],
        "Search by keyword",
        "A keyword finds matching catalog entries",
    );
    let e3 = epic(
        "EPIC-003",
        "Cart subtotal",
        &["EPIC-002"],
        "Show the subtotal",
        "The cart subtotal adds every item",
    );
    let e4 = epic(
        "EPIC-004",
        "Shipping rates",
        &["EPIC-002"],
        "Rate by carrier",
        "Each carrier has a rate",
    );
    let e5 = epic(
        "EPIC-005",
        "Notification email",
        &["EPIC-001", "EPIC-004"],
        "Send the email",
        "The email notification is sent once",
    );
    let input = input(
        "Build the store",
        &[
            ("spec/epics/_index.md", "# Epics\n"),
            ("spec/epics/EPIC-001-checkout.md", &e1),
            ("spec/epics/EPIC-002-catalog.md", &e2),
            ("spec/epics/EPIC-003-cart.md", &e3),
            ("spec/epics/EPIC-004-shipping.md", &e4),
            ("spec/epics/EPIC-005-notify.md", &e5),
        ],
        code,
    );
    let out = completed(&input);
    let plan = file(&out, "plan/plan.json");
    assert_eq!(plan["complexity"], "High", "{plan:#}");
    assert_eq!(plan["recommended_execution"], "dag");
    assert_eq!(out.summary, "5 tasks, High (5 modules), dag");
    assert_eq!(
        shape(&plan),
        vec![
            ("TASK-001".into(), owned(&["src/catalog/search.rs"]), vec![]),
            (
                "TASK-002".into(),
                owned(&["src/cart/subtotal.rs"]),
                owned(&["TASK-001"])
            ),
            (
                "TASK-003".into(),
                owned(&["src/checkout/payment.rs"]),
                owned(&["TASK-002"])
            ),
            (
                "TASK-004".into(),
                owned(&["src/shipping/rates.rs"]),
                owned(&["TASK-001"])
            ),
            (
                "TASK-005".into(),
                owned(&["src/notify/email.rs"]),
                owned(&["TASK-003", "TASK-004"])
            ),
        ]
    );
    assert_eq!(
        plan["tasks"][2]["requirements"],
        serde_json::json!(["REQ-001"])
    );
    let task = file(&out, "plan/.task/TASK-003.json");
    assert_eq!(
        task["convergence"]["criteria"][0],
        "A declined card stops the checkout"
    );
}

#[test]
fn cached_exploration_is_reused() {
    let diagnostics = (
        "src/diagnostics.rs",
        "//! Reports errors to the terminal.\n",
    );
    // Without a cache, the weak match is left out and the planner explores.
    let (_dir, code) = small_repo(&[diagnostics]);
    let fresh = completed(&input(LOW_TASK, &[], code));
    let planned = |out: &TaskOutput| -> Vec<String> {
        shape(&file(out, "plan/plan.json"))
            .into_iter()
            .flat_map(|t| t.1)
            .collect()
    };
    assert!(!planned(&fresh).contains(&"src/diagnostics.rs".to_owned()));
    assert!(paths(&fresh).contains(&"explorations/planner-error-handling.json"));

    let index = r#"{"entries": [{"angle": "error-handling", "file": "explorations/explore-error-handling.json", "source": "analyst", "task": "RESEARCH-001"}]}"#;
    let cached = r#"{"angle": "error-handling", "relevant_files": [{"path": "src/diagnostics.rs", "rationale": "reports errors"}]}"#;
    let (_dir, code) = small_repo(&[diagnostics]);
    let out = completed(&input(
        LOW_TASK,
        &[
            ("explorations/cache-index.json", index),
            ("explorations/explore-error-handling.json", cached),
        ],
        code,
    ));
    assert!(planned(&out).contains(&"src/diagnostics.rs".to_owned()));
    assert!(
        !paths(&out).iter().any(|p| p.starts_with("explorations/")),
        "nothing is explored again: {:?}",
        paths(&out)
    );
    assert!(
        out.state_update
            .key_findings
            .iter()
            .any(|f| f.starts_with("Reused the cached `error-handling` exploration"))
    );

    // An entry whose file is gone is dropped and the angle explored again.
    let (_dir, code) = small_repo(&[diagnostics]);
    let out = completed(&input(
        LOW_TASK,
        &[("explorations/cache-index.json", index)],
        code,
    ));
    let index = file(&out, "explorations/cache-index.json");
    assert_eq!(index["entries"].as_array().expect("entries").len(), 1);
    assert_eq!(index["entries"][0]["source"], "planner");
}

#[test]
fn plans_have_two_to_seven_tasks() {
    // Nine epics, one file each: merged down to seven tasks.
    let names = [
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
    ];
    let mut files: Vec<(String, String)> = vec![
        ("Cargo.toml".into(), "[package]\nname = \"nine\"\n".into()),
        ("src/lib.rs".into(), String::new()),
    ];
    let mut folder: Vec<(String, String)> = Vec::new();
    for (i, name) in names.iter().enumerate() {
        files.push((
            format!("src/{name}.rs"),
            format!("/// The {name} part.\npub fn {name}() {{}}\n"),
        ));
        let id = format!("EPIC-{:03}", i + 1);
        folder.push((
            format!("spec/epics/{id}-{name}.md"),
            epic(
                &id,
                &format!("{} handler", text::sentence_case(name)),
                &[],
                &format!("Improve {name}"),
                &format!("The {name} handler works"),
            ),
        ));
    }
    let file_refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    let (_dir, code) = repo(&file_refs);
    let folder_refs: Vec<(&str, &str)> = folder
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    let out = completed(&input("Nine parts", &folder_refs, code));
    let plan = file(&out, "plan/plan.json");
    let tasks = shape(&plan);
    assert_eq!(tasks.len(), 7, "{plan:#}");
    let all: Vec<String> = tasks.iter().flat_map(|t| t.1.clone()).collect();
    assert_eq!(all.len(), 9, "every file stays planned: {all:?}");
    assert_eq!(
        out.state_update
            .decisions
            .iter()
            .filter(|d| d.starts_with("merged"))
            .count(),
        2
    );
    assert!(paths(&out).contains(&"plan/.task/TASK-007.json"));
    assert!(!paths(&out).contains(&"plan/.task/TASK-008.json"));

    // One clause, one file: a test task makes the second.
    let (_dir, code) = small_repo(&[]);
    let out = completed(&input("Track the lexer position", &[], code));
    let plan = file(&out, "plan/plan.json");
    assert_eq!(
        shape(&plan),
        vec![
            ("TASK-001".into(), owned(&["src/lexer.rs"]), vec![]),
            (
                "TASK-002".into(),
                owned(&["tests/track_lexer.rs"]),
                owned(&["TASK-001"])
            ),
        ]
    );
    assert_eq!(plan["tasks"][1]["files"][0]["change"], "create");
}

#[test]
fn a_task_with_nothing_to_match_creates_a_file() {
    let (_dir, code) = small_repo(&[]);
    let out = completed(&input(
        "Add a plotting window with zoom controls and export the chart as images",
        &[],
        code,
    ));
    let plan = file(&out, "plan/plan.json");
    let tasks = shape(&plan);
    assert_eq!(tasks[0].1, owned(&["src/plotting_window.rs"]), "{plan:#}");
    assert_eq!(plan["tasks"][0]["files"][0]["change"], "create");
    let task = file(&out, "plan/.task/TASK-001.json");
    let steps = task["implementation"].to_string();
    assert!(steps.contains("src/lib.rs"), "{steps}");
}

#[test]
fn the_same_input_gives_the_same_bytes() {
    let (_dir, input) = medium_fixture();
    let first = completed(&input);
    let second = completed(&input);
    assert_eq!(first.files, second.files);
    assert_eq!(first.summary, second.summary);
    assert_eq!(first.state_update, second.state_update);
    // And a fresh scan of an identical repository agrees too.
    let (_dir2, again) = medium_fixture();
    assert_eq!(completed(&again).files, first.files);
}

#[test]
fn broken_plans_are_refused() {
    use super::shape::{Change, PlannedFile};
    use super::{Convergence, TaskFile};
    let task = |id: &str, deps: &[&str], criteria: &[&str]| TaskFile {
        id: id.to_owned(),
        title: "t".into(),
        description: "d".into(),
        files: vec![PlannedFile {
            path: "src/a.rs".into(),
            change: Change::Modify,
        }],
        implementation: Vec::new(),
        convergence: Convergence {
            criteria: owned(criteria),
        },
        depends_on: owned(deps),
        requirements: Vec::new(),
        pre_analysis: Vec::new(),
        reference: Value::Null,
        rationale: Value::Null,
        risks: Vec::new(),
        meta: Value::Null,
    };
    let ok = [
        task("TASK-001", &[], &["c"]),
        task("TASK-002", &["TASK-001"], &["c"]),
    ];
    assert_eq!(super::validate(&ok), Ok(()));
    assert!(super::validate(&ok[..1]).is_err(), "one task is too few");
    let forward = [
        task("TASK-001", &["TASK-002"], &["c"]),
        task("TASK-002", &[], &["c"]),
    ];
    assert!(super::validate(&forward).is_err(), "a forward dependency");
    let cycle = [
        task("TASK-001", &["TASK-002"], &["c"]),
        task("TASK-002", &["TASK-001"], &["c"]),
    ];
    assert!(super::validate(&cycle).is_err(), "a cycle");
    let bare = [task("TASK-001", &[], &["c"]), task("TASK-002", &[], &[])];
    assert!(super::validate(&bare).is_err(), "no criterion");
    let twice = [task("TASK-001", &[], &["c"]), task("TASK-001", &[], &["c"])];
    assert!(super::validate(&twice).is_err(), "a duplicate id");
    let mut escape = [task("TASK-001", &[], &["c"]), task("TASK-002", &[], &["c"])];
    escape[1].files[0].path = "../outside.rs".into();
    assert!(
        super::validate(&escape).is_err(),
        "a path out of the repository"
    );
}

#[test]
fn text_is_cut_into_clauses_and_keywords() {
    assert_eq!(
        text::clauses(
            "Add OAuth login to the API and store tokens in the database. Read and write"
        ),
        owned(&[
            "Add OAuth login to the API",
            "store tokens in the database",
            "Read and write"
        ])
    );
    assert_eq!(
        text::keywords("Parse the OAuthToken", "tokens tokens expiry", 12),
        owned(&["parse", "oauth", "token", "tokens", "expiry"])
    );
}

#[test]
fn signal_scan_finds_nested_loops_and_public_apis() {
    assert_eq!(signals::nested_loop(INVOICE), Some(8));
    let sequential = "fn a(xs: &[u8]) {\n    for x in xs {\n        f(x);\n    }\n    for y in xs {\n        g(y);\n    }\n}\n";
    assert_eq!(signals::nested_loop(sequential), None);
    let python = "def f(rows):\n    for r in rows:\n        for c in r:\n            print(c)\n";
    assert_eq!(signals::nested_loop(python), Some(3));
    assert!(signals::public_api("src/auth/mod.rs", AUTH).is_some());
    assert!(signals::public_api("src/billing/invoice.rs", INVOICE).is_none());
    assert!(signals::public_api("web/index.ts", "export function f() {}\n").is_some());
    assert!(signals::public_api("pkg/__init__.py", "import os\n").is_none());
    assert!(signals::public_api("pkg/__init__.py", "__all__ = ['f']\n").is_some());
}
