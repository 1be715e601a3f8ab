//! `git tlv4 review` as CI runs it: `--format sarif`, `--exit-code` / `--fail-on`, and
//! `--note` (a standalone review writes nothing without it).

use std::process::Output;

use crate::common::TestRepo;

/// The exit status of a review that ran and does not pass the bar (`exit::REVIEW_FAILED`).
const REVIEW_FAILED: i32 = 4;

/// A private key in a new file, two lines down: critical, with high confidence, so BLOCK.
const KEY: &str = "# deploy key\n\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAvQ5mN1z8Qk2l3Jc0aLr8R5y7kqZb2TqfW9xh3XgP0cVh\n-----END RSA PRIVATE KEY-----\n";

/// A repository whose last commit adds a private key and a lint suppression.
fn blocked() -> TestRepo {
    let repo = TestRepo::new();
    repo.write("keys/deploy.pem", KEY);
    repo.write(
        "src/lib.rs",
        "pub fn f() {}\n\n#[allow(dead_code)]\nfn g() {}\n",
    );
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "a key and a suppression"]);
    repo
}

fn run(repo: &TestRepo, args: &[&str]) -> (Option<i32>, String, String) {
    let Output {
        status,
        stdout,
        stderr,
    } = repo.tlv4(args);
    (
        status.code(),
        String::from_utf8(stdout).unwrap(),
        String::from_utf8_lossy(&stderr).into_owned(),
    )
}

/// The review notes ref, as git lists it (empty when there is none).
fn notes_ref(repo: &TestRepo) -> String {
    repo.git(&["for-each-ref", "refs/notes/"])
}

#[test]
fn sarif_lists_each_finding_with_its_rule_level_and_place() {
    let repo = blocked();
    let log = repo.json(&["review", "HEAD", "--format", "sarif"]);
    assert_eq!(log["version"], "2.1.0", "{log:#}");
    assert_eq!(
        log["$schema"],
        "https://json.schemastore.org/sarif-2.1.0.json"
    );
    let runs = log["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1);
    let first = &runs[0];
    assert_eq!(first["tool"]["driver"]["name"], "git-tlv4");
    assert_eq!(first["properties"]["verdict"], "BLOCK");

    let results = first["results"].as_array().unwrap();
    let key = results
        .iter()
        .find(|r| r["ruleId"] == "private-key")
        .unwrap_or_else(|| panic!("no private-key result: {log:#}"));
    assert_eq!(key["level"], "error");
    let place = &key["locations"][0]["physicalLocation"];
    assert_eq!(place["artifactLocation"]["uri"], "keys/deploy.pem");
    assert_eq!(place["artifactLocation"]["uriBaseId"], "%SRCROOT%");
    assert_eq!(place["region"]["startLine"], 3, "the key's own line");
    assert_eq!(key["properties"]["confidence"], "high");
    assert!(
        key["partialFingerprints"]["primaryLocationLineHash"].is_string(),
        "{key:#}"
    );
    let allow = results
        .iter()
        .find(|r| r["ruleId"] == "allow-attribute")
        .unwrap_or_else(|| panic!("no allow-attribute result: {log:#}"));
    // `allow-attribute` is low: a SARIF note.
    assert_eq!(allow["level"], "note");
    assert_eq!(
        allow["locations"][0]["physicalLocation"]["region"]["startLine"],
        3
    );

    // Every result is located and points at its rule's descriptor; one descriptor a rule.
    let rules = first["tool"]["driver"]["rules"].as_array().unwrap();
    let mut ids: Vec<&str> = rules.iter().map(|r| r["id"].as_str().unwrap()).collect();
    for r in results {
        let i = r["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(rules[i]["id"], r["ruleId"], "{log:#}");
        assert!(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].is_string());
        assert!(r["message"]["text"].is_string());
    }
    let n = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), n, "one descriptor per rule id: {ids:?}");
    let key_rule = &rules[key["ruleIndex"].as_u64().unwrap() as usize];
    assert_eq!(key_rule["properties"]["security-severity"], "9.5");
    assert_eq!(key_rule["defaultConfiguration"]["level"], "error");

    // `--json` still prints the review itself, as `--format json` does.
    let json = repo.json(&["review", "HEAD", "--json"]);
    assert_eq!(json, repo.json(&["review", "HEAD", "--format", "json"]));
    assert_eq!(json["verdict"], "BLOCK");
    let (code, _, err) = run(&repo, &["review", "HEAD", "--json", "--format", "sarif"]);
    assert_eq!(code, Some(2), "two formats at once is a usage error: {err}");
}

#[test]
fn exit_code_fails_a_blocked_change_and_passes_a_clean_one() {
    let repo = blocked();
    // Without it, a BLOCK is still a review that ran.
    let (code, out, _) = run(&repo, &["review", "HEAD"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("verdict: BLOCK"), "{out}");

    let (code, out, err) = run(&repo, &["review", "HEAD", "--exit-code"]);
    assert_eq!(code, Some(REVIEW_FAILED), "{out}{err}");
    assert!(
        !err.contains("error:"),
        "failing the bar is not an error: {err}"
    );
    // The whole output is there before the status.
    assert!(out.contains("verdict: BLOCK"), "{out}");
    assert!(out.contains("keys/deploy.pem:3"), "{out}");
    let (code, out, _) = run(
        &repo,
        &["review", "HEAD", "--exit-code", "--format", "sarif"],
    );
    assert_eq!(code, Some(REVIEW_FAILED));
    let log: serde_json::Value = serde_json::from_str(&out).expect("the whole log");
    assert_eq!(log["runs"][0]["properties"]["verdict"], "BLOCK");

    // A clean change passes.
    repo.write("README.md", "# sample\n\nHow to build it.\n");
    repo.git(&["commit", "-q", "-am", "docs"]);
    let (code, out, err) = run(&repo, &["review", "HEAD", "--exit-code"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(!out.contains("verdict: BLOCK"), "{out}");
}

/// A trusted rules override: the embedded rules plus one medium rule of this test's own, so
/// that which finding fires and how bad it is stays in the test's hands.
fn with_marker_rule(repo: &TestRepo) {
    let builtin = include_str!("../../specs/review-rules.toml");
    repo.write(
        ".tlv4/specs/review-rules.toml",
        &format!(
            "{builtin}\n[[rule]]\nid = \"marker\"\ndimension = \"quality\"\nseverity = \"medium\"\nextensions = [\"txt\"]\npattern = 'FIX-BEFORE-RELEASE'\nmessage = \"a release marker is left in\"\n"
        ),
    );
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "review rules"]);
    repo.ok(&["trust"]);
}

#[test]
fn fail_on_trips_on_a_finding_at_or_above_its_severity() {
    let repo = TestRepo::new();
    with_marker_rule(&repo);
    repo.write("notes.txt", "ship it\nFIX-BEFORE-RELEASE\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "notes"]);
    let out = repo.json(&["review", "HEAD", "--json"]);
    assert_eq!(out["verdict"], "CONDITIONAL", "{out:#}");
    let marker = out["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "marker")
        .unwrap_or_else(|| panic!("the marker rule did not fire: {out:#}"));
    assert_eq!(marker["severity"], "medium");
    assert_eq!(marker["line"], 2);

    // --exit-code alone fails BLOCK only.
    let (code, _, err) = run(&repo, &["review", "HEAD", "--exit-code"]);
    assert_eq!(code, Some(0), "{err}");
    let (code, out, err) = run(&repo, &["review", "HEAD", "--fail-on", "medium"]);
    assert_eq!(code, Some(REVIEW_FAILED), "{out}{err}");
    assert!(
        out.contains("notes.txt:2"),
        "the findings are printed: {out}"
    );
    let (code, _, err) = run(&repo, &["review", "HEAD", "--fail-on", "low"]);
    assert_eq!(code, Some(REVIEW_FAILED), "{err}");
    let (code, _, err) = run(&repo, &["review", "HEAD", "--fail-on", "high"]);
    assert_eq!(code, Some(0), "a medium finding is below high: {err}");
    let (code, _, err) = run(
        &repo,
        &[
            "review",
            "HEAD",
            "--fail-on",
            "medium",
            "--fail-on-confidence",
            "high",
        ],
    );
    assert_eq!(
        code,
        Some(REVIEW_FAILED),
        "the rule's findings are sure: {err}"
    );

    // Usage errors: an unknown severity, a confidence without --fail-on.
    let err = repo.fails(&["review", "HEAD", "--fail-on", "severe"], 2);
    assert!(err.contains("critical, high, medium or low"), "{err}");
    repo.fails(&["review", "HEAD", "--fail-on-confidence", "low"], 2);
}

#[test]
fn a_standalone_review_writes_no_note_unless_asked() {
    let repo = blocked();
    for format in ["text", "json", "sarif"] {
        let (code, _, err) = run(&repo, &["review", "HEAD", "--format", format]);
        assert_eq!(code, Some(0), "{err}");
        assert!(!err.contains("scores noted"), "{err}");
    }
    let (code, _, _) = run(&repo, &["review", "HEAD~1..HEAD", "--fail-on", "low"]);
    assert_eq!(code, Some(REVIEW_FAILED));
    assert_eq!(notes_ref(&repo), "", "a read-only review wrote a ref");

    let (code, _, err) = run(&repo, &["review", "HEAD", "--note"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("scores noted on"), "{err}");
    let refs = notes_ref(&repo);
    assert!(refs.contains("refs/notes/tlv4-review"), "{refs}");
    let note = repo.git(&["notes", "--ref=tlv4-review", "show", "HEAD"]);
    let note: serde_json::Value = serde_json::from_str(&note).unwrap();
    assert_eq!(note["verdict"], "BLOCK");
    repo.fsck();
}

#[test]
fn a_review_in_a_session_notes_its_scores_as_before() {
    let repo = blocked();
    repo.wide_pipeline(1);
    let sid = repo.start("wide", "review inside a session");
    assert_eq!(notes_ref(&repo), "", "{sid}");
    let (code, _, err) = run(&repo, &["--session", &sid, "review", "main~1..main"]);
    assert_eq!(code, Some(0), "{err}");
    let note = repo.git(&["notes", "--ref=tlv4-review", "show", "main"]);
    let note: serde_json::Value = serde_json::from_str(&note).unwrap();
    assert_eq!(note["verdict"], "BLOCK");
    repo.fsck();
}
