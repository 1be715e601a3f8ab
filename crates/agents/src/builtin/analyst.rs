//! The builtin analyst (`RESEARCH-*`): learns what the repository is and what the request
//! needs, offline and deterministically.
//!
//! It reads the code at the session tip (never changes it) and the task text, and writes
//! `spec/discovery-context.json`, `spec/spec-config.json` and the `general` exploration with
//! its cache index. Everything comes from tables of rules (the `analyst-*.toml` data files
//! in `specs/templates/builtin/`) applied to file names, manifests and file contents, and
//! its words from the template `analyst-report.txt`, so the same tree and text always give
//! byte-identical files: there is no clock, no network and no model. Where a fact cannot be
//! known this way, it becomes an open question instead of a guess.

mod explore;
mod layout;
pub(super) mod manifest;
mod report;
pub(super) mod scan;
mod seed;
mod signals;

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::{Value, json};

use crate::{CodeTree, Outcome, StateUpdate, TaskInput, TaskOutput, TechProfile};
use tlv4_core::error::Result;
use tlv4_specdoc::spec::DISCOVERY;

use super::json_bytes;
use super::template::{data, list};
use super::words::unique;

use explore::{Finder, RelevantFile};
use layout::{Layout, TestHints};
use manifest::Manifest;
use signals::{Detector, MAX_EVIDENCE, Profile, Strength};
use tlv4_specdoc::discovery::{Codebase, Language, TestFramework};

/// Where the files go, relative to the pipeline folder (and [`DISCOVERY`]).
const SPEC_CONFIG: &str = "spec/spec-config.json";
const EXPLORATION: &str = "explorations/general.json";
const CACHE_INDEX: &str = "explorations/cache-index.json";

/// Runs the analyst on `input`.
pub(super) fn run(input: &TaskInput) -> Result<TaskOutput> {
    let (text, topic_file) = topic(input);
    let seed = seed::analyse(&text);
    let facts = Facts::scan(&input.code, &seed.keywords)?;
    let (index, index_note) = cache_index(input);
    let mut report = report::report(&seed, &facts, topic_file.as_deref(), &index_note);
    let mut words = |section: &str| report.remove(section).unwrap_or_default();
    let session = (input.session.id.to_string(), &input.session.task);
    let tech_profile = TechProfile {
        signals: facts.profile.signals.clone(),
        evidence: facts.profile.evidence.clone(),
        confidence: facts.profile.confidence.to_owned(),
    };

    // The documents, as JSON values: their maps sort their keys, so keys are sorted
    // throughout.
    let discovery = json!({
        "codebase_context": facts.has_source.then_some(&facts.context),
        "open_questions": words("open_questions"),
        "phase": 1,
        "recommendations": words("recommendations"),
        "seed_analysis": seed.analysis,
        "session_id": session.0,
        "task_text": session.1,
        "tech_profile": tech_profile,
    });
    let config = json!({
        "complexity": seed.complexity.as_str(),
        "depth": seed.complexity.depth(),
        "focus_areas": seed.analysis.exploration_dimensions,
        "has_codebase": facts.has_source,
        "input_type": "text",
        "seed_input": session.1,
        "session_id": session.0,
    });
    let exploration = json!({
        "_metadata": {
            "cache_key": "general",
            "created_by": input.task.id.to_string(),
            // The session's start: the analyst reads no clock.
            "timestamp": input.session.created_at,
        },
        "angle": "general",
        "integration_points": words("integration_points"),
        "keywords": seed.keywords,
        "patterns": words("patterns"),
        "query": seed.analysis.problem_statement,
        "recommendations": words("exploration_recommendations"),
        "relevant_files": facts.relevant,
    });
    let files = vec![
        (DISCOVERY.to_owned(), json_bytes(&discovery)),
        (SPEC_CONFIG.to_owned(), json_bytes(&config)),
        (EXPLORATION.to_owned(), json_bytes(&exploration)),
        (CACHE_INDEX.to_owned(), json_bytes(&index)),
    ];

    let state_update = StateUpdate {
        key_findings: words("key_findings"),
        decisions: words("decisions"),
        files_modified: files.iter().map(|(p, _)| p.clone()).collect(),
        verification: words("verification").concat(),
        tech_profile: Some(tech_profile),
    };
    state_update.validate()?;
    Ok(TaskOutput {
        outcome: Outcome::Completed,
        summary: words("summary").concat(),
        files,
        state_update,
    })
}

/// The text to analyse: the task text, or the file it names as `@path` when the code has it
/// (the reference reads the topic from a file that way).
fn topic(input: &TaskInput) -> (String, Option<String>) {
    let named = input.session.task.trim().strip_prefix('@');
    let path = named.filter(|p| !p.is_empty() && !p.contains(char::is_whitespace));
    match path.and_then(|p| Some((input.code.read_path(p)?, p))) {
        Some((bytes, p)) => (String::from_utf8_lossy(&bytes).into(), Some(p.to_owned())),
        None => (input.session.task.clone(), None),
    }
}

/// The facts about the code base that the analyst reports (`codebase_context`) and the other
/// roles read (as [`tlv4_specdoc::discovery::Codebase`]).
#[derive(Serialize)]
struct CodebaseContext {
    /// Files that count (outside vendored and generated directories).
    file_count: usize,
    /// Frameworks of all manifests, unique.
    frameworks: Vec<String>,
    /// Languages, largest first.
    languages: Vec<Language>,
    /// Where things are.
    layout: Layout,
    /// Manifests, in path order.
    manifests: Vec<Manifest>,
    /// How the tests run, if that could be told.
    test_framework: Option<TestFramework>,
    /// Size of the files that count.
    total_bytes: u64,
}

/// The facts about the code base of `code`, as the other roles read them from the analyst's
/// report: for a role that has no such report.
pub(super) fn codebase(code: &CodeTree) -> Result<Codebase> {
    let facts = Facts::scan(code, &[])?;
    let written = serde_json::to_value(&facts.context).expect("the code facts serialise to JSON");
    Ok(Codebase::read(&written))
}

/// What the scan found; the report template reads it.
#[derive(Serialize)]
struct Facts {
    /// What `codebase_context` says.
    #[serde(flatten)]
    context: CodebaseContext,
    /// Files left out.
    ignored: usize,
    /// Files read.
    read: usize,
    /// Whether any source file exists.
    has_source: bool,
    /// Product source files (testable, not tests, not examples).
    source_files: usize,
    /// Test files plus source files carrying inline tests.
    test_files: usize,
    /// Files with inline unit tests.
    inline_tests: usize,
    /// The main language: the largest one that tests are expected for, else the largest.
    primary: Option<String>,
    /// The categories of the frameworks (`frontend`, `backend`, `cli`), unique.
    categories: BTreeSet<&'static str>,
    /// The tech-profile signals.
    profile: Profile,
    /// Files the request is likely about, best first.
    relevant: Vec<RelevantFile>,
}

impl Facts {
    /// Scans `code`, scoring files against `keywords`.
    fn scan(code: &CodeTree, keywords: &[String]) -> Result<Facts> {
        let inv = scan::inventory(code);
        let mut detector = Detector::default();
        let mut finder = Finder::new(keywords);
        for e in &inv.entries {
            detector.path(e.path());
            finder.name(e);
        }
        let mut manifests = Vec::new();
        let mut hints = TestHints::default();
        let mut inline = BTreeSet::new();
        let read = scan::read_each(code, &inv, |e, text| {
            if e.manifest.is_some() {
                manifests.extend(manifest::parse(e.path(), text));
            }
            if scan::has_inline_tests(e, text) {
                inline.insert(e.path().to_owned());
            }
            detector.content(e, text);
            finder.content(e, text);
            hints.observe(e, text);
        })?;
        for m in &manifests {
            detector.manifest(m);
        }

        // Tests against source: a test file, or a source file with its own unit tests.
        let sources: Vec<&scan::Entry<'_>> = inv
            .entries
            .iter()
            .filter(|e| e.is_product_source())
            .collect();
        let inline_tests = sources.iter().filter(|e| inline.contains(e.path())).count();
        let test_files = inv
            .entries
            .iter()
            .filter(|e| e.test && e.lang.is_some_and(|l| l.testable))
            .count()
            + inline_tests;
        if !sources.is_empty() && test_files * 10 < sources.len() {
            let untested = sources.iter().filter(|e| !inline.contains(e.path()));
            for e in untested.take(MAX_EVIDENCE) {
                detector.add("test_gap", Strength::Code, e.path());
            }
        }

        let (languages, primary) = languages(&inv);
        let frameworks = unique(manifests.iter().flat_map(|m| m.frameworks.clone()));
        let categories = frameworks.iter().map(|f| manifest::category(f)).collect();
        let context = CodebaseContext {
            file_count: inv.entries.len(),
            frameworks,
            languages,
            layout: layout::layout(&inv, &manifests),
            test_framework: layout::test_framework(&inv, &manifests, &hints, primary.as_deref()),
            manifests,
            total_bytes: inv.entries.iter().map(|e| e.file.size).sum(),
        };
        Ok(Facts {
            context,
            ignored: inv.ignored,
            read,
            has_source: inv.entries.iter().any(|e| e.lang.is_some()),
            source_files: sources.len(),
            test_files,
            inline_tests,
            categories,
            primary,
            profile: detector.finish(),
            relevant: finder.finish(),
        })
    }
}

/// The languages of `inv`, largest first, and the main one: the largest that tests are
/// expected for, else the largest.
fn languages(inv: &scan::Inventory<'_>) -> (Vec<Language>, Option<String>) {
    let mut by_lang: BTreeMap<&str, Language> = BTreeMap::new();
    // Whether tests are expected for a language, as the entry of its first file says.
    let mut testable: BTreeMap<&str, bool> = BTreeMap::new();
    for e in &inv.entries {
        if let Some(lang) = e.lang {
            testable.entry(&lang.name).or_insert(lang.testable);
            let slot = by_lang.entry(&lang.name).or_insert_with(|| Language {
                name: lang.name.clone(),
                ..Language::default()
            });
            slot.files += 1;
            slot.bytes += e.file.size;
        }
    }
    let all = u128::from(by_lang.values().map(|l| l.bytes).sum::<u64>());
    let mut languages: Vec<Language> = by_lang.into_values().collect();
    for l in languages.iter_mut().filter(|_| all > 0) {
        // Thousandths, computed in integers so every platform prints the same.
        l.share = ((u128::from(l.bytes) * 1000 + all / 2) / all) as f64 / 1000.0;
    }
    languages.sort_by_key(|l| (Reverse(l.bytes), Reverse(l.files), l.name.clone()));
    let main = languages.iter().find(|l| testable[l.name.as_str()]);
    let main = main.or(languages.first());
    let primary = main.map(|l| l.name.clone());
    (languages, primary)
}

/// The cache index: the entries already in the folder, with the `general` one added or
/// replaced in place. Returns the index and a decision note.
fn cache_index(input: &TaskInput) -> (Value, String) {
    let ours = json!({
        "angle": "general",
        "file": EXPLORATION,
        "source": "new",
        "task": input.task.id.to_string(),
    });
    let old = input.folder.get(CACHE_INDEX).map(|raw| {
        let index = serde_json::from_slice::<Value>(raw).ok();
        index.filter(|v| v["entries"].is_array())
    });
    let mut index = old.clone().flatten().unwrap_or(json!({"entries": []}));
    let list = index["entries"].as_array_mut().expect("entries is a list");
    let general = |e: &Value| e["angle"] == "general";
    let kept = list.iter().filter(|e| !general(e)).count();
    match list.iter().position(general) {
        Some(at) => list[at] = ours,
        None => list.push(ours),
    }
    let note = match old {
        Some(None) => {
            "cache-index: the existing index had no list of entries and was rewritten".to_owned()
        }
        _ => format!("cache-index: general angle written, {kept} other entries kept"),
    };
    (index, note)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every builtin data file of the analyst parses into its structs, and its patterns
    /// compile: a malformed one is a bug, caught here rather than at run time.
    #[test]
    fn the_builtin_data_files_parse() {
        assert!(signals::RULES.len() > 40);
        assert!(!seed::TABLES.mention.is_empty());
        assert!(!manifest::DEPS.frameworks.is_empty());
        assert!(manifest::KINDS.iter().any(|k| k.kind == "cargo"));
        assert!(!scan::FILES.ci_prefixes.is_empty());
    }
    use serde_json::Value;
    use tlv4_core::model::{Priority, SCHEMA_VERSION, Session, SessionStatus, Task, TaskStatus};

    use tlv4_core::testutil::git;

    /// A repository holding `files`, committed; returns the temp dir and the code tree.
    fn repo(files: &[(&str, &[u8])]) -> (tempfile::TempDir, CodeTree) {
        let dir = tempfile::tempdir().unwrap();
        git(dir.path(), &["init", "-q"]);
        for (path, content) in files {
            let full = dir.path().join(path);
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(full, content).unwrap();
        }
        git(dir.path(), &["add", "-A"]);
        git(dir.path(), &["commit", "-q", "--allow-empty", "-m", "init"]);
        let repo = gix::open(dir.path()).unwrap();
        let tree = repo.head_commit().unwrap().tree_id().unwrap().detach();
        let code = CodeTree::from_tree(&repo, tree).unwrap();
        (dir, code)
    }

    fn input(code: CodeTree, text: &str, folder: BTreeMap<String, Vec<u8>>) -> TaskInput {
        TaskInput {
            session: Session {
                schema: SCHEMA_VERSION,
                id: "TLV4-test-20260101".parse().unwrap(),
                task: text.to_owned(),
                pipeline: "spec-only".to_owned(),
                supervision: false,
                status: SessionStatus::Active,
                base: "0".repeat(40),
                created_at: "2026-01-01T00:00:00Z".to_owned(),
                updated_at: "2026-01-01T00:00:00Z".to_owned(),
                events: 2,
                forked_from: None,
            },
            task: Task {
                id: "RESEARCH-001".parse().unwrap(),
                role: tlv4_core::model::Role::Analyst,
                status: TaskStatus::InProgress,
                blocked_by: Vec::new(),
                phase: "research".to_owned(),
                priority: Priority::P0,
                discuss: Some("DISCUSS-001".to_owned()),
                inner_loop: false,
                attempts: 1,
                description: String::new(),
                owner: None,
                result: None,
            },
            folder,
            code,
        }
    }

    fn file(out: &TaskOutput, path: &str) -> Value {
        let (_, bytes) = out
            .files
            .iter()
            .find(|(p, _)| p == path)
            .unwrap_or_else(|| panic!("{path} was not written"));
        serde_json::from_slice(bytes).unwrap()
    }

    fn strings(v: &Value) -> Vec<String> {
        v.as_array()
            .unwrap_or_else(|| panic!("not a list: {v}"))
            .iter()
            .map(|s| s.as_str().unwrap().to_owned())
            .collect()
    }

    const RUST_FILES: &[(&str, &[u8])] = &[
        (
            "Cargo.toml",
            b"[package]\nname = \"shop\"\nversion = \"0.1.0\"\n\n[dependencies]\nsqlx = { version = \"0.8\", features = [\"postgres\"] }\njsonwebtoken = \"9\"\ntokio = \"1\"\nclap = \"4\"\n",
        ),
        (
            "src/main.rs",
            b"mod auth;\n\n#[tokio::main]\nasync fn main() {\n    let q = sqlx::query(\"SELECT id FROM users WHERE name = $1\");\n}\n",
        ),
        (
            "src/auth.rs",
            b"/// Checks a login.\npub fn login(user: &str, password: &str) -> bool {\n    verify_password(password)\n}\n\nfn verify_password(password: &str) -> bool { !password.is_empty() }\n",
        ),
        ("src/orders.rs", b"pub struct Order { pub id: i64 }\n"),
        (
            "migrations/0001_init.sql",
            b"CREATE TABLE users (id BIGINT PRIMARY KEY, password_hash TEXT);\n",
        ),
        ("tests/login.rs", b"#[test]\nfn login_works() {}\n"),
        ("README.md", b"# Shop\n"),
        ("target/debug/junk.rs", b"fn ignored() { let password = 1; }\n"),
    ];

    #[test]
    fn rust_crate_with_sql_auth_and_migrations() {
        let (_dir, code) = repo(RUST_FILES);
        let text = "Add a password reset to the login flow for admins. Reset tokens must expire after one hour.";
        let out = run(&input(code, text, BTreeMap::new())).unwrap();
        assert_eq!(out.outcome, Outcome::Completed);
        let paths: Vec<&str> = out.files.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            paths,
            [DISCOVERY, SPEC_CONFIG, EXPLORATION, CACHE_INDEX],
            "files written"
        );
        assert_eq!(out.state_update.files_modified, paths);

        let d = file(&out, DISCOVERY);
        assert_eq!(d["session_id"], "TLV4-test-20260101");
        assert_eq!(d["phase"], 1);
        assert_eq!(d["task_text"], text);
        let cc = &d["codebase_context"];
        // target/ is left out: 7 files count.
        assert_eq!(cc["file_count"], 7);
        assert_eq!(cc["languages"][0]["name"], "Rust");
        assert_eq!(cc["languages"][0]["files"], 4);
        assert_eq!(cc["languages"][1]["name"], "SQL");
        let share = cc["languages"][0]["share"].as_f64().unwrap()
            + cc["languages"][1]["share"].as_f64().unwrap();
        assert!((share - 1.0).abs() < 0.002, "shares add up: {share}");
        assert_eq!(cc["manifests"][0]["path"], "Cargo.toml");
        assert_eq!(cc["manifests"][0]["kind"], "cargo");
        assert_eq!(
            strings(&cc["manifests"][0]["dependencies"]),
            ["clap", "jsonwebtoken", "sqlx", "tokio"]
        );
        assert_eq!(strings(&cc["frameworks"]), ["clap", "tokio"]);
        assert_eq!(
            cc["test_framework"],
            serde_json::json!({"name": "cargo test", "command": "cargo test", "evidence": "Cargo.toml"})
        );
        let layout = &cc["layout"];
        assert_eq!(strings(&layout["entry_points"]), ["src/main.rs"]);
        assert_eq!(strings(&layout["test_dirs"]), ["tests"]);
        assert_eq!(strings(&layout["source_dirs"]), ["src"]);
        assert_eq!(
            strings(&layout["top_level_dirs"]),
            ["migrations", "src", "tests"]
        );
        assert_eq!(strings(&layout["docs"]), ["README.md"]);

        let tp = &d["tech_profile"];
        let signals = strings(&tp["signals"]);
        for s in ["auth_detected", "data_migration", "sql_detected"] {
            assert!(signals.contains(&s.to_owned()), "{s} in {signals:?}");
        }
        assert!(!signals.contains(&"frontend_framework".to_owned()));
        // One test file for three source files: no gap.
        assert!(!signals.contains(&"test_gap".to_owned()), "{signals:?}");
        assert_eq!(tp["confidence"], "high");
        let sql = strings(&tp["evidence"]["sql_detected"]);
        assert_eq!(sql[0], "Cargo.toml", "manifest evidence first");
        assert!(sql.contains(&"src/main.rs".to_owned()));
        assert!(
            strings(&tp["evidence"]["data_migration"])
                .contains(&"migrations/0001_init.sql".to_owned())
        );
        assert_eq!(strings(&tp["evidence"]["auth_detected"])[0], "Cargo.toml");
        assert!(!serde_json::to_string(tp).unwrap().contains("target/"));

        let seed = &d["seed_analysis"];
        assert_eq!(seed["problem_statement"], text);
        assert_eq!(strings(&seed["target_users"]), ["admins"]);
        assert_eq!(
            strings(&seed["constraints"]),
            ["Reset tokens must expire after one hour."]
        );
        assert_eq!(seed["domain"], "security and authentication");
        assert_eq!(
            strings(&seed["exploration_dimensions"]),
            ["security", "auth-patterns", "dataflow"]
        );

        let tp_update = out.state_update.tech_profile.as_ref().unwrap();
        assert_eq!(tp_update.signals, signals);
        let mut sorted = tp_update.signals.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(tp_update.signals, sorted);
        assert_eq!(tp_update.confidence, "high");
        assert!(tp_update.evidence.values().all(|e| e.len() <= MAX_EVIDENCE));
        out.state_update.validate().unwrap();
        assert!(out.state_update.key_findings.len() <= 5);
        assert!(
            out.summary.starts_with("Rust CLI, 7 files; signals: "),
            "{}",
            out.summary
        );
        assert!(
            out.state_update
                .verification
                .contains("scanned 7 files, skipped 1 in vendored"),
            "{}",
            out.state_update.verification
        );

        let c = file(&out, SPEC_CONFIG);
        assert_eq!(
            c,
            serde_json::json!({
                "session_id": "TLV4-test-20260101",
                "seed_input": text,
                "input_type": "text",
                "complexity": "simple",
                "depth": "light",
                "focus_areas": ["security", "auth-patterns", "dataflow"],
                "has_codebase": true,
            })
        );

        let e = file(&out, EXPLORATION);
        assert_eq!(e["angle"], "general");
        assert_eq!(e["_metadata"]["timestamp"], "2026-01-01T00:00:00Z");
        let relevant = e["relevant_files"].as_array().unwrap();
        // A keyword in the file name (10) outweighs mentions in the text (1 each, 5 at most).
        assert_eq!(relevant[0]["path"], "tests/login.rs", "{relevant:?}");
        assert_eq!(relevant[0]["discovery_source"], "name+content");
        assert_eq!(relevant[0]["role"], "test");
        assert_eq!(relevant[1]["path"], "src/auth.rs", "{relevant:?}");
        assert_eq!(relevant[1]["discovery_source"], "content");
        assert_eq!(
            strings(&relevant[1]["key_symbols"]),
            ["login", "verify_password"]
        );
        assert!(!relevant.iter().any(|r| r["path"] == "src/orders.rs"));
        assert!(relevant.len() <= 20);
        assert!(strings(&e["patterns"]).contains(&"async code on the tokio runtime".to_owned()));
        assert!(strings(&e["integration_points"]).contains(&"entry point src/main.rs".to_owned()));

        assert_eq!(
            file(&out, CACHE_INDEX),
            serde_json::json!({"entries": [{
                "angle": "general",
                "file": "explorations/general.json",
                "source": "new",
                "task": "RESEARCH-001",
            }]})
        );
    }

    #[test]
    fn output_is_deterministic_with_sorted_keys() {
        let (_dir, code) = repo(RUST_FILES);
        let a = run(&input(
            code.clone(),
            "Speed up the order queries",
            BTreeMap::new(),
        ))
        .unwrap();
        let b = run(&input(code, "Speed up the order queries", BTreeMap::new())).unwrap();
        assert_eq!(a.files, b.files);
        assert_eq!(a.summary, b.summary);
        assert_eq!(a.state_update, b.state_update);
        let text = String::from_utf8(a.files[0].1.clone()).unwrap();
        let top: Vec<usize> = [
            "\"codebase_context\"",
            "\"open_questions\"",
            "\"phase\"",
            "\"recommendations\"",
            "\"seed_analysis\"",
            "\"session_id\"",
            "\"task_text\"",
            "\"tech_profile\"",
        ]
        .iter()
        .map(|k| {
            text.find(&format!("\n  {k}"))
                .unwrap_or_else(|| panic!("{k}"))
        })
        .collect();
        assert!(top.windows(2).all(|w| w[0] < w[1]), "keys sorted: {top:?}");
        assert!(text.ends_with("}\n"));
        let tf = text.find("\"command\"").unwrap();
        assert!(tf < text.find("\"evidence\": \"Cargo.toml\"").unwrap());
    }

    #[test]
    fn python_service_with_pytest_docker_and_existing_cache() {
        let (_dir, code) = repo(&[
            ("requirements.txt", b"flask==3.0\nnumpy\npandas>=2 # frames\npytest\n"),
            (
                "app.py",
                b"from flask import Flask\napp = Flask(__name__)\n\n@app.route(\"/report\")\ndef report():\n    return \"Report for %s\" % \"x\"\n",
            ),
            ("reports/build.py", b"def build_report(rows):\n    return sorted(rows)\n"),
            // A fixture password in a test does not make the product handle passwords.
            (
                "tests/test_app.py",
                b"import pytest\n\ndef test_report():\n    assert login(password=\"x\")\n",
            ),
            // Documents under a `spec` directory are not tests.
            ("spec/notes.md", b"# Notes\n"),
            ("Dockerfile", b"FROM python:3.12\n"),
            (".github/workflows/ci.yml", b"on: push\njobs: {}\n"),
        ]);
        let mut folder = BTreeMap::new();
        folder.insert(
            CACHE_INDEX.to_owned(),
            br#"{"entries":[{"angle":"general","file":"old.json"},{"angle":"security","file":"explorations/security.json","created_by":"PLAN-001"}]}"#.to_vec(),
        );
        let text = "The report endpoint is slow; optimize it without changing the response format";
        let out = run(&input(code, text, folder)).unwrap();
        let d = file(&out, DISCOVERY);
        let cc = &d["codebase_context"];
        assert_eq!(cc["languages"][0]["name"], "Python");
        assert_eq!(strings(&cc["frameworks"]), ["Flask"]);
        assert_eq!(cc["manifests"][0]["kind"], "requirements");
        assert_eq!(
            strings(&cc["manifests"][0]["dependencies"]),
            ["flask", "numpy", "pandas", "pytest"]
        );
        assert_eq!(
            cc["test_framework"],
            serde_json::json!({"name": "pytest", "command": "pytest", "evidence": "requirements.txt"})
        );
        assert_eq!(strings(&cc["layout"]["entry_points"]), ["app.py"]);
        assert_eq!(strings(&cc["layout"]["ci"]), [".github/workflows/ci.yml"]);
        assert_eq!(strings(&cc["layout"]["source_dirs"]), [".", "reports"]);
        assert_eq!(strings(&cc["layout"]["test_dirs"]), ["tests"]);

        let tp = &d["tech_profile"];
        assert_eq!(
            strings(&tp["signals"]),
            [
                "api_surface",
                "devops_detected",
                "legacy_patterns",
                "ml_detected"
            ]
        );
        assert_eq!(
            strings(&tp["evidence"]["devops_detected"]),
            [".github/workflows/ci.yml", "Dockerfile"]
        );
        assert_eq!(
            strings(&tp["evidence"]["ml_detected"]),
            ["requirements.txt"]
        );
        assert_eq!(strings(&tp["evidence"]["api_surface"]), ["app.py"]);
        assert_eq!(strings(&tp["evidence"]["legacy_patterns"]), ["app.py"]);

        let seed = &d["seed_analysis"];
        assert_eq!(seed["domain"], "performance");
        assert_eq!(
            strings(&seed["exploration_dimensions"]),
            ["performance", "bottlenecks", "caching"]
        );
        assert_eq!(
            strings(&seed["constraints"]),
            ["optimize it without changing the response format"]
        );
        assert!(
            out.summary.starts_with("Python web service, 7 files"),
            "{}",
            out.summary
        );

        let index = file(&out, CACHE_INDEX);
        let entries = index["entries"].as_array().unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0]["angle"], "general");
        assert_eq!(entries[0]["file"], EXPLORATION);
        assert_eq!(entries[0]["task"], "RESEARCH-001");
        assert_eq!(
            entries[1]["created_by"], "PLAN-001",
            "other entries kept as they were"
        );

        let e = file(&out, EXPLORATION);
        assert_eq!(e["relevant_files"][0]["path"], "reports/build.py");
    }

    #[test]
    fn javascript_without_tests_has_a_test_gap() {
        let mut files: Vec<(String, Vec<u8>)> = vec![
            (
                "package.json".into(),
                br#"{"dependencies":{"react":"18","express":"4"},"scripts":{"test":"echo \"Error: no test specified\" && exit 1"}}"#.to_vec(),
            ),
            ("src/index.js".into(), b"var app = require('express')();\n".to_vec()),
            ("src/App.jsx".into(), b"export default function App() { return null; }\n".to_vec()),
        ];
        // A large file is counted but not read: its password does not count.
        let mut big = b"const password = 1;\n".to_vec();
        big.resize(300 * 1024, b' ');
        files.push(("src/huge.js".into(), big));
        let refs: Vec<(&str, &[u8])> = files
            .iter()
            .map(|(p, c)| (p.as_str(), c.as_slice()))
            .collect();
        let (_dir, code) = repo(&refs);
        let out = run(&input(
            code,
            "Add a dark mode toggle to the settings page",
            BTreeMap::new(),
        ))
        .unwrap();
        let d = file(&out, DISCOVERY);
        let cc = &d["codebase_context"];
        assert!(cc["test_framework"].is_null());
        assert_eq!(strings(&cc["frameworks"]), ["React", "Express"]);
        let tp = &d["tech_profile"];
        let signals = strings(&tp["signals"]);
        assert_eq!(
            signals,
            ["frontend_framework", "legacy_patterns", "test_gap"],
            "no auth from the unread file"
        );
        assert_eq!(
            strings(&tp["evidence"]["frontend_framework"])[0],
            "package.json"
        );
        assert_eq!(
            strings(&tp["evidence"]["test_gap"]),
            ["src/App.jsx", "src/huge.js", "src/index.js"]
        );
        assert_eq!(
            strings(&tp["evidence"]["legacy_patterns"]),
            ["src/index.js"]
        );
        let questions = strings(&d["open_questions"]);
        assert!(
            questions
                .iter()
                .any(|q| q.starts_with("No test framework was found"))
        );
        assert!(
            questions
                .iter()
                .any(|q| q.contains("no acceptance criteria"))
        );
        assert!(
            questions
                .iter()
                .any(|q| q.starts_with("Who is the change for"))
        );
        assert!(
            strings(&d["recommendations"])
                .iter()
                .any(|r| r == "Add tests with the change: 0 test files for 3 source files")
        );
        assert!(
            out.summary
                .starts_with("JavaScript web app, 4 files; signals: frontend_framework")
        );
        assert!(
            out.state_update
                .key_findings
                .contains(&"No test framework found".to_owned())
        );
    }

    #[test]
    fn monorepo_uses_the_main_language_for_tests() {
        let mut main_tsx = b"import React from 'react';\n".to_vec();
        main_tsx.extend(b"// padding so that TypeScript is the main language\n".repeat(20));
        let (_dir, code) = repo(&[
            (
                "frontend/package.json",
                br#"{"dependencies":{"react":"18"},"devDependencies":{"vitest":"1"},"scripts":{"test":"vitest"}}"#,
            ),
            ("frontend/vite.config.ts", b"export default {};\n"),
            ("frontend/src/main.tsx", &main_tsx),
            (
                "backend/pyproject.toml",
                b"[project]\nname='api'\ndependencies=['fastapi', 'sqlalchemy', 'alembic']\n[dependency-groups]\ndev=['pytest>=8']\n",
            ),
            (
                "backend/app/main.py",
                b"from fastapi import FastAPI\n\nQUERY = \"SELECT name FROM items\"\n",
            ),
            ("backend/tests/test_main.py", b"def test_ok():\n    assert True\n"),
        ]);
        let out = run(&input(code, "List items by name", BTreeMap::new())).unwrap();
        let d = file(&out, DISCOVERY);
        let cc = &d["codebase_context"];
        assert_eq!(cc["languages"][0]["name"], "TypeScript");
        assert_eq!(strings(&cc["frameworks"]), ["FastAPI", "React"]);
        // pytest is declared too, but TypeScript is the main language.
        assert_eq!(
            cc["test_framework"],
            serde_json::json!({"name": "vitest", "command": "npm test", "evidence": "frontend/package.json"})
        );
        // `frontend` holds only config next to `frontend/src`.
        assert_eq!(
            strings(&cc["layout"]["source_dirs"]),
            ["backend/app", "frontend/src"]
        );
        assert_eq!(
            strings(&cc["layout"]["entry_points"]),
            ["backend/app/main.py", "frontend/src/main.tsx"]
        );
        assert_eq!(strings(&cc["layout"]["test_dirs"]), ["backend/tests"]);
        assert_eq!(
            strings(&d["tech_profile"]["signals"]),
            ["data_migration", "frontend_framework", "sql_detected"]
        );
        let points = strings(&file(&out, EXPLORATION)["integration_points"]);
        assert!(
            points.contains(&"database access in backend/app/main.py".to_owned()),
            "{points:?}"
        );
        assert!(
            !points.iter().any(|p| p.contains("pyproject")),
            "{points:?}"
        );
    }

    #[test]
    fn repository_without_source_is_a_new_project() {
        let (_dir, code) = repo(&[("README.md", b"# Todo\n"), ("LICENSE", b"MIT\n")]);
        let mut folder = BTreeMap::new();
        folder.insert(CACHE_INDEX.to_owned(), b"{not json".to_vec());
        let out = run(&input(code, "Build a todo app", folder)).unwrap();
        assert_eq!(out.outcome, Outcome::Completed);
        let d = file(&out, DISCOVERY);
        assert!(d["codebase_context"].is_null());
        assert_eq!(d["tech_profile"]["signals"], serde_json::json!([]));
        assert_eq!(d["tech_profile"]["confidence"], "low");
        let questions = strings(&d["open_questions"]);
        assert!(
            questions[0].starts_with("No source code was found"),
            "{questions:?}"
        );
        assert!(questions.iter().any(|q| q.starts_with("The scope is open")));
        assert_eq!(file(&out, SPEC_CONFIG)["has_codebase"], false);
        assert!(
            out.summary.starts_with("No source code (2 files)"),
            "{}",
            out.summary
        );
        let tp = out.state_update.tech_profile.as_ref().unwrap();
        assert!(tp.signals.is_empty());
        assert!(
            out.state_update
                .decisions
                .iter()
                .any(|d| d.starts_with("codebase_context is null"))
        );
        assert!(
            out.state_update
                .decisions
                .iter()
                .any(|d| d.contains("was rewritten"))
        );
        assert_eq!(file(&out, CACHE_INDEX)["entries"][0]["angle"], "general");
    }

    #[test]
    fn topic_read_from_a_named_file() {
        let (_dir, code) = repo(&[
            (
                "docs/request.md",
                b"Users must be able to export invoices as CSV.\n",
            ),
            (
                "src/lib.rs",
                b"pub fn invoices() {}\n#[cfg(test)]\nmod tests {}\n",
            ),
        ]);
        let out = run(&input(code, "@docs/request.md", BTreeMap::new())).unwrap();
        let d = file(&out, DISCOVERY);
        assert_eq!(d["task_text"], "@docs/request.md");
        assert_eq!(
            d["seed_analysis"]["problem_statement"],
            "Users must be able to export invoices as CSV."
        );
        assert_eq!(strings(&d["seed_analysis"]["target_users"]), ["users"]);
        assert!(
            out.state_update
                .decisions
                .iter()
                .any(|d| d.contains("read the request from docs/request.md"))
        );
        // Inline unit tests count as tests.
        assert!(!strings(&d["tech_profile"]["signals"]).contains(&"test_gap".to_owned()));
    }
}
