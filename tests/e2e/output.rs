//! What a user sees, pinned word for word: `status`, `log`, `graph` (text and Mermaid),
//! `review` (text and SARIF), and the pause and error messages with their hints. Each is an
//! inline snapshot (insta), so that a change of output is a diff of this file, reviewed like
//! code.
//!
//! A run is shown as its exit code, then its stdout and its stderr, with what differs from
//! one machine or run to the next replaced by [`redact`]: the temporary paths, object ids
//! (the state a session records depends on the machine's sandbox, so its commits do too),
//! task durations and the tool's version. Session ids and time stamps stay: the tests fix
//! the clock (`GIT_COMMITTER_DATE` in [`crate::common::hermetic`]), and every command runs
//! with a cleared environment, off a terminal (no colour, no pager, no `COLUMNS`).
//!
//! A mismatch fails the test and writes nothing (`.config/insta.yaml`: `update: no`). To
//! take a changed output, run `INSTA_UPDATE=new cargo test --test e2e output::`, which
//! leaves the new values beside this file for `cargo insta review` (cargo-insta), or write
//! them in by hand from the diff the failure prints.

use std::path::Path;
use std::process::Output;

use regex::{Captures, Regex};

use crate::common::{STALLED, TestRepo, WAITING};

/// `text` with what varies between machines and runs replaced: the repository's and the
/// home's paths by `[REPO]` and `[HOME]`, any other temporary path by `[TMP]`, the ids of
/// the repository's objects (in full or abbreviated) by `[OID]`, task durations by
/// `[DUR]`, and the tool's version by `[VERSION]`.
fn redact(repo: &TestRepo, text: &str) -> String {
    let mut text = text.to_owned();
    let paths = |p: &Path| [p.canonicalize().unwrap(), p.to_path_buf()];
    for (dir, name) in [(repo.path(), "[REPO]"), (repo.home.path(), "[HOME]")] {
        for p in paths(dir) {
            text = text.replace(p.to_str().unwrap(), name);
        }
    }
    for p in paths(&std::env::temp_dir()) {
        let temp = Regex::new(&format!(
            r"{}/[^\s`'\x22:]*",
            regex::escape(p.to_str().unwrap())
        ))
        .unwrap();
        text = temp.replace_all(&text, "[TMP]").into_owned();
    }
    // Every object the repository holds or held (reflogs included); a hexadecimal word
    // that is none of them (a SARIF fingerprint) stays.
    let objects = repo.git(&["rev-list", "--all", "--reflog", "--objects"]);
    let ids: Vec<&str> = objects
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    let hex = Regex::new(r"\b[0-9a-f]{7,40}\b").unwrap();
    text = hex
        .replace_all(&text, |c: &Captures| {
            if ids.iter().any(|id| id.starts_with(&c[0])) {
                "[OID]".to_owned()
            } else {
                c[0].to_owned()
            }
        })
        .into_owned();
    let seconds = Regex::new(r"\b\d+\.\ds\b").unwrap();
    text = seconds.replace_all(&text, "[DUR]").into_owned();
    text.replace(
        &format!("\"version\": \"{}\"", env!("CARGO_PKG_VERSION")),
        "\"version\": \"[VERSION]\"",
    )
}

/// One run as a user sees it: the exit code, then stdout and stderr (each left out when
/// empty), redacted.
fn shown(repo: &TestRepo, out: &Output) -> String {
    let mut text = match out.status.code() {
        Some(code) => format!("exit {code}\n"),
        None => format!("killed: {}\n", out.status),
    };
    for (name, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        if !bytes.is_empty() {
            text.push_str(&format!("--- {name}\n{}", String::from_utf8_lossy(bytes)));
        }
    }
    redact(repo, &text)
}

/// Runs `git tlv4 args` in `repo` and shows it.
fn run(repo: &TestRepo, args: &[&str]) -> String {
    shown(repo, &repo.tlv4(args))
}

/// A repository whose one session, spec-only without supervision, has paused at its spec
/// readiness gate; returns the start's run as shown.
fn at_the_gate(repo: &TestRepo) -> String {
    let out = run(
        repo,
        &[
            "start",
            "--pipeline",
            "spec-only",
            "--no-supervision",
            "--completion",
            "keep",
            "Write the requirements for note search",
        ],
    );
    assert!(out.starts_with(&format!("exit {WAITING}\n")), "{out}");
    out
}

#[test]
fn a_new_session_and_its_status() {
    let repo = TestRepo::new();
    let args = [
        "start",
        "--no-run",
        "--pipeline",
        "impl-only",
        "fix the parser",
    ];
    insta::assert_snapshot!(run(&repo, &args), @r"
    exit 0
    --- stdout
    TLV4-fix-the-parser-20261129
    --- stderr
    started session TLV4-fix-the-parser-20261129: pipeline impl-only, 5 tasks, from [OID] (main)
      pipeline: named with --pipeline
      complexity: Low (1): +1 capability executor (fix)
    stopped after recording; continue with `git tlv4 resume --session TLV4-fix-the-parser-20261129`
    ");
    insta::assert_snapshot!(run(&repo, &["status"]), @r"
    exit 0
    --- stdout
    session TLV4-fix-the-parser-20261129 (active)
      pipeline  impl-only, supervision on
      task      fix the parser
      base      [OID]   tip [OID]   events 2
      chosen    named with --pipeline
      complexity Low (1): +1 capability executor (fix)
      progress  0/5 completed, 0 running, 0 failed

    TASK            ROLE        STATUS   BLOCKED BY      OWNER  ATTEMPTS
    PLAN-001        planner     ready    -               -      0
    CHECKPOINT-003  supervisor  blocked  PLAN-001        -      0
    IMPL-001        executor    blocked  CHECKPOINT-003  -      0
    REVIEW-001      reviewer    blocked  IMPL-001        -      0
    TEST-001        tester      blocked  IMPL-001        -      0
    ");
    insta::assert_snapshot!(run(&repo, &["log"]), @r"
    exit 0
    --- stdout
    [OID]   #2 2026-11-29T12:00:00Z session: tasks dispatched
    [OID]   #1 2026-11-29T12:00:00Z session: started
    ");
    insta::assert_snapshot!(run(&repo, &["graph", "--format", "text"]), @r"
    exit 0
    --- stdout
    session TLV4-fix-the-parser-20261129 (active, impl-only)

    rank 0
      ○ PLAN-001        planner     ready

    rank 1
      · CHECKPOINT-003  supervisor  blocked      <- PLAN-001

    rank 2
      · IMPL-001        executor    blocked      <- CHECKPOINT-003

    rank 3
      · REVIEW-001      reviewer    blocked      <- IMPL-001
      · TEST-001        tester      blocked      <- IMPL-001
    ");
}

#[test]
fn a_run_paused_at_the_gate_then_approved() {
    let repo = TestRepo::new();
    insta::assert_snapshot!(at_the_gate(&repo), @r"
    exit 5
    --- stdout
    TLV4-write-the-requirements-for-20261129
    --- stderr
    started session TLV4-write-the-requirements-for-20261129: pipeline spec-only without supervision, 6 tasks, from [OID] (main)
      pipeline: named with --pipeline
      complexity: Low (1): +1 capability writer (write)
    RESEARCH-001 started (analyst)
    RESEARCH-001 completed in [DUR]: Rust library, 2 files; signals: test_gap
    DRAFT-001 started (writer)
    DRAFT-001 completed in [DUR]: product-brief: 1 goal, 1 user group, 6 open questions
    DRAFT-002 started (writer)
    DRAFT-002 completed in [DUR]: requirements: 1 REQ, 1 NFR, all 1 goal traced
    DRAFT-003 started (writer)
    DRAFT-003 completed in [DUR]: architecture: 1 component, 4 ADRs, all 1 REQ implemented
    DRAFT-004 started (writer)
    DRAFT-004 completed in [DUR]: epics: 2 epics (2 MVP), 3 stories, all 1 REQ covered
    QUALITY-001 started (reviewer)
    QUALITY-001 completed in [DUR]: QUALITY-001: PASS 97.2/100, coverage 100.0; 0 errors, 1 warning
    session TLV4-write-the-requirements-for-20261129 paused (gate): spec readiness gate after QUALITY-001: PASS (PASS 97.2/100 (completeness 94, consistency 95, traceability 100, depth 100; coverage 100): Ready for implementation); approve before planning starts
    next:
      git tlv4 approve
      git tlv4 revise TASK --feedback TEXT
      git tlv4 feedback TEXT
      git tlv4 recheck
      git tlv4 improve [DIMENSION]
      git tlv4 abort
    ");
    // Asked again, it answers the same, and `status` has the pause.
    insta::assert_snapshot!(run(&repo, &["resume"]), @r"
    exit 5
    --- stderr
    no task was left running by a process that is gone
    session TLV4-write-the-requirements-for-20261129 is paused (gate): spec readiness gate after QUALITY-001: PASS (PASS 97.2/100 (completeness 94, consistency 95, traceability 100, depth 100; coverage 100): Ready for implementation); approve before planning starts
    next:
      git tlv4 approve
      git tlv4 revise TASK --feedback TEXT
      git tlv4 feedback TEXT
      git tlv4 recheck
      git tlv4 improve [DIMENSION]
      git tlv4 abort
    ");
    insta::assert_snapshot!(run(&repo, &["status"]), @r"
    exit 0
    --- stdout
    session TLV4-write-the-requirements-for-20261129 (paused)
      pipeline  spec-only, supervision off
      task      Write the requirements for note search
      base      [OID]   tip [OID]   events 14
      chosen    named with --pipeline
      complexity Low (1): +1 capability writer (write)
      signals   test_gap
      paused    (gate) spec readiness gate after QUALITY-001: PASS (PASS 97.2/100 (completeness 94, consistency 95, traceability 100, depth 100; coverage 100): Ready for implementation); approve before planning starts
                git tlv4 approve
                git tlv4 revise TASK --feedback TEXT
                git tlv4 feedback TEXT
                git tlv4 recheck
                git tlv4 improve [DIMENSION]
                git tlv4 abort
      progress  6/6 completed, 0 running, 0 failed

    TASK          ROLE      STATUS     BLOCKED BY    OWNER  ATTEMPTS
    RESEARCH-001  analyst   completed  -             -      1
    DRAFT-001     writer    completed  RESEARCH-001  -      1
    DRAFT-002     writer    completed  DRAFT-001     -      1
    DRAFT-003     writer    completed  DRAFT-002     -      1
    DRAFT-004     writer    completed  DRAFT-003     -      1
    QUALITY-001   reviewer  completed  DRAFT-004     -      1
    ");
    insta::assert_snapshot!(run(&repo, &["approve"]), @r"
    exit 0
    --- stderr
    approve: approved: spec readiness gate after QUALITY-001: PASS (PASS 97.2/100 (completeness 94, consistency 95, traceability 100, depth 100; coverage 100): Ready for implementation); approve before planning starts
    session TLV4-write-the-requirements-for-20261129 completed: 6/6 tasks, but not everything passed (`git tlv4 status` has the outcome):
      the code is unchanged against the base: nothing to land
    kept: the session stays on branch tlv4/TLV4-write-the-requirements-for-20261129
    ");
    insta::assert_snapshot!(run(&repo, &["status"]), @r"
    exit 0
    --- stdout
    session TLV4-write-the-requirements-for-20261129 (completed)
      pipeline  spec-only, supervision off
      task      Write the requirements for note search
      base      [OID]   tip [OID]   events 17
      chosen    named with --pipeline
      complexity Low (1): +1 capability writer (write)
      signals   test_gap
      progress  6/6 completed, 0 running, 0 failed
      outcome   needs attention: the tasks completed, but not everything passed
                gate   QUALITY-001: PASS 97.2/100 (completeness 94, consistency 95, traceability 100, depth 100; coverage 100): Ready for implementation
                ! the code is unchanged against the base: nothing to land
      changed   0 file(s), +0 -0 against the base (.tlv4/ left out)
      land it   git tlv4 export --session TLV4-write-the-requirements-for-20261129, then git merge tlv4-export/TLV4-write-the-requirements-for-20261129

    TASK          ROLE      STATUS     BLOCKED BY    OWNER  ATTEMPTS
    RESEARCH-001  analyst   completed  -             -      1
    DRAFT-001     writer    completed  RESEARCH-001  -      1
    DRAFT-002     writer    completed  DRAFT-001     -      1
    DRAFT-003     writer    completed  DRAFT-002     -      1
    DRAFT-004     writer    completed  DRAFT-003     -      1
    QUALITY-001   reviewer  completed  DRAFT-004     -      1
    ");
    insta::assert_snapshot!(run(&repo, &["log"]), @r"
    exit 0
    --- stdout
    [OID]  #17 2026-11-29T12:00:00Z session: completion action
    [OID]  #16 2026-11-29T12:00:00Z session: completed
    [OID]  #15 2026-11-29T12:00:00Z session: user decision
    [OID]  #14 2026-11-29T12:00:00Z QUALITY-001: completed (reviewer)
    [OID]  #13 2026-11-29T12:00:00Z QUALITY-001: claimed (reviewer)
    [OID]  #12 2026-11-29T12:00:00Z DRAFT-004: completed (writer)
    [OID]  #11 2026-11-29T12:00:00Z DRAFT-004: claimed (writer)
    [OID]  #10 2026-11-29T12:00:00Z DRAFT-003: completed (writer)
    [OID]   #9 2026-11-29T12:00:00Z DRAFT-003: claimed (writer)
    [OID]   #8 2026-11-29T12:00:00Z DRAFT-002: completed (writer)
    [OID]   #7 2026-11-29T12:00:00Z DRAFT-002: claimed (writer)
    [OID]   #6 2026-11-29T12:00:00Z DRAFT-001: completed (writer)
    [OID]   #5 2026-11-29T12:00:00Z DRAFT-001: claimed (writer)
    [OID]   #4 2026-11-29T12:00:00Z RESEARCH-001: completed (analyst)
    [OID]   #3 2026-11-29T12:00:00Z RESEARCH-001: claimed (analyst)
    [OID]   #2 2026-11-29T12:00:00Z session: tasks dispatched
    [OID]   #1 2026-11-29T12:00:00Z session: started
    ");
    insta::assert_snapshot!(run(&repo, &["graph", "--format", "text"]), @r"
    exit 0
    --- stdout
    session TLV4-write-the-requirements-for-20261129 (completed, spec-only)

    rank 0
      ● RESEARCH-001  analyst   completed

    rank 1
      ● DRAFT-001     writer    completed    <- RESEARCH-001

    rank 2
      ● DRAFT-002     writer    completed    <- DRAFT-001

    rank 3
      ● DRAFT-003     writer    completed    <- DRAFT-002

    rank 4
      ● DRAFT-004     writer    completed    <- DRAFT-003

    rank 5
      ● QUALITY-001   reviewer  completed    verdict PASS  <- DRAFT-004
    ");
    insta::assert_snapshot!(run(&repo, &["graph", "--format", "mermaid"]), @r#"
    exit 0
    --- stdout
    ```mermaid
    ---
    title: "TLV4-write-the-requirements-for-20261129 (completed, spec-only)"
    ---
    flowchart TD
      RESEARCH_001["RESEARCH-001<br/>analyst · completed"]:::completed
      DRAFT_001["DRAFT-001<br/>writer · completed"]:::completed
      DRAFT_002["DRAFT-002<br/>writer · completed"]:::completed
      DRAFT_003["DRAFT-003<br/>writer · completed"]:::completed
      DRAFT_004["DRAFT-004<br/>writer · completed"]:::completed
      QUALITY_001["QUALITY-001<br/>reviewer · completed<br/>verdict PASS"]:::completed
      RESEARCH_001 --> DRAFT_001
      DRAFT_001 --> DRAFT_002
      DRAFT_002 --> DRAFT_003
      DRAFT_003 --> DRAFT_004
      DRAFT_004 --> QUALITY_001
      classDef completed fill:#c8e6c9,stroke:#2e7d32,color:#111
      classDef in_progress fill:#fff3c4,stroke:#b28704,color:#111
      classDef ready fill:#cfe8fc,stroke:#1565c0,color:#111
      classDef blocked fill:#eeeeee,stroke:#757575,color:#111
      classDef failed fill:#ffcdd2,stroke:#c62828,color:#111
    ```
    "#);
}

#[test]
fn a_run_paused_on_a_discussion_and_its_graph() {
    let repo = TestRepo::new();
    let args = ["start", "--pipeline", "spec-only", "Add search to notes"];
    insta::assert_snapshot!(run(&repo, &args), @r"
    exit 5
    --- stdout
    TLV4-add-search-to-notes-20261129
    --- stderr
    started session TLV4-add-search-to-notes-20261129: pipeline spec-only, 8 tasks, from [OID] (main)
      pipeline: named with --pipeline
      complexity: Low (1): 1 at least: no capability keyword
    RESEARCH-001 started (analyst)
    RESEARCH-001 completed in [DUR]: Rust library, 2 files; signals: test_gap
    DISCUSS-001 diverged: revision RESEARCH-001-R1 created
    RESEARCH-001-R1 started (analyst)
    RESEARCH-001-R1 completed in [DUR]: Rust library, 2 files; signals: test_gap
    session TLV4-add-search-to-notes-20261129 paused (discuss): DISCUSS-001 on RESEARCH-001-R1 diverged (HIGH): consensus blocked, HIGH divergence: average 4.0/5 (product 3, risk 5, coverage 4); coverage gap: missing: problem statement
    next:
      git tlv4 approve   (accept as it is)
      git tlv4 abort
    ");
    insta::assert_snapshot!(run(&repo, &["graph", "--format", "text"]), @r"
    exit 0
    --- stdout
    session TLV4-add-search-to-notes-20261129 (paused, spec-only)

    rank 0
      ● RESEARCH-001     analyst     completed
      ● RESEARCH-001-R1  analyst     completed    revises RESEARCH-001

    rank 1
      ○ DRAFT-001        writer      ready        <- RESEARCH-001-R1

    rank 2
      · DRAFT-002        writer      blocked      <- DRAFT-001

    rank 3
      · CHECKPOINT-001   supervisor  blocked      <- DRAFT-002

    rank 4
      · DRAFT-003        writer      blocked      <- CHECKPOINT-001

    rank 5
      · DRAFT-004        writer      blocked      <- DRAFT-003

    rank 6
      · CHECKPOINT-002   supervisor  blocked      <- DRAFT-004

    rank 7
      · QUALITY-001      reviewer    blocked      <- CHECKPOINT-002
    ");
    insta::assert_snapshot!(run(&repo, &["graph", "--format", "mermaid"]), @r#"
    exit 0
    --- stdout
    ```mermaid
    ---
    title: "TLV4-add-search-to-notes-20261129 (paused, spec-only)"
    ---
    flowchart TD
      RESEARCH_001["RESEARCH-001<br/>analyst · completed"]:::completed
      RESEARCH_001_R1["RESEARCH-001-R1<br/>analyst · completed"]:::completed
      DRAFT_001["DRAFT-001<br/>writer · ready"]:::ready
      DRAFT_002["DRAFT-002<br/>writer · blocked"]:::blocked
      CHECKPOINT_001["CHECKPOINT-001<br/>supervisor · blocked"]:::blocked
      DRAFT_003["DRAFT-003<br/>writer · blocked"]:::blocked
      DRAFT_004["DRAFT-004<br/>writer · blocked"]:::blocked
      CHECKPOINT_002["CHECKPOINT-002<br/>supervisor · blocked"]:::blocked
      QUALITY_001["QUALITY-001<br/>reviewer · blocked"]:::blocked
      RESEARCH_001_R1 --> DRAFT_001
      DRAFT_001 --> DRAFT_002
      DRAFT_002 --> CHECKPOINT_001
      CHECKPOINT_001 --> DRAFT_003
      DRAFT_003 --> DRAFT_004
      DRAFT_004 --> CHECKPOINT_002
      CHECKPOINT_002 --> QUALITY_001
      RESEARCH_001 -.->|revision| RESEARCH_001_R1
      classDef completed fill:#c8e6c9,stroke:#2e7d32,color:#111
      classDef in_progress fill:#fff3c4,stroke:#b28704,color:#111
      classDef ready fill:#cfe8fc,stroke:#1565c0,color:#111
      classDef blocked fill:#eeeeee,stroke:#757575,color:#111
      classDef failed fill:#ffcdd2,stroke:#c62828,color:#111
    ```
    "#);
}

#[test]
fn a_run_stalled_on_a_failed_task() {
    let repo = TestRepo::new();
    repo.wide_pipeline(1);
    repo.start("wide", "fails");
    repo.ok(&["task", "claim", "IMPL-001", "--pid", "1"]);
    repo.ok(&["task", "fail", "IMPL-001", "--summary", "broken"]);
    let out = run(&repo, &["resume"]);
    assert!(out.starts_with(&format!("exit {STALLED}\n")), "{out}");
    insta::assert_snapshot!(out, @r"
    exit 6
    --- stderr
    no task was left running by a process that is gone
    session TLV4-fails-20261129 paused (stalled): nothing can run: failed IMPL-001 (broken)
    next:
      git tlv4 revise IMPL-001 --feedback TEXT
      git tlv4 resume --retry
      git tlv4 abort
    ");
}

/// A private key in a new file, two lines down, and a lint suppression: a BLOCK.
fn blocked() -> TestRepo {
    let repo = TestRepo::new();
    repo.write(
        "keys/deploy.pem",
        "# deploy key\n\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAvQ5mN1z8Qk2l3Jc0aLr8R5y7kqZb2TqfW9xh3XgP0cVh\n-----END RSA PRIVATE KEY-----\n",
    );
    repo.write(
        "src/lib.rs",
        "pub fn f() {}\n\n#[allow(dead_code)]\nfn g() {}\n",
    );
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "a key and a suppression"]);
    repo
}

#[test]
fn review_as_text_and_as_sarif() {
    let repo = blocked();
    // `--exit-code`: the whole review, then the status of a change that does not pass.
    insta::assert_snapshot!(run(&repo, &["review", "HEAD", "--exit-code"]), @r"
    exit 4
    --- stdout
    review HEAD ([OID]..[OID]): 2 files, +8 −0, myers
    verdict: BLOCK: overall 89.5 — 1 critical, 0 high, 0 medium, 1 low in 2 files
      quality        98
      security       60
      architecture  100
      requirements  100
      overall        89.5
    findings:
      critical security     keys/deploy.pem:3  private key in the code [private-key]
      low      quality      src/lib.rs:3  lint suppressed with #[allow(...)] on new code [allow-attribute]
    requirements: a revision range outside a session has no plan (pass --session SID to check one)
    ");
    insta::assert_snapshot!(run(&repo, &["review", "HEAD", "--format", "sarif"]), @r#"
    exit 0
    --- stdout
    {
      "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
      "runs": [
        {
          "properties": {
            "findingsWithoutLocation": [],
            "label": "HEAD",
            "new": "[OID]",
            "old": "[OID]",
            "scores": {
              "architecture": 100,
              "overall": 89.5,
              "quality": 98,
              "requirements": 100,
              "security": 60
            },
            "summary": "BLOCK: overall 89.5 — 1 critical, 0 high, 0 medium, 1 low in 2 files",
            "verdict": "BLOCK"
          },
          "results": [
            {
              "level": "error",
              "locations": [
                {
                  "physicalLocation": {
                    "artifactLocation": {
                      "uri": "keys/deploy.pem",
                      "uriBaseId": "%SRCROOT%"
                    },
                    "region": {
                      "startLine": 3
                    }
                  }
                }
              ],
              "message": {
                "text": "private key in the code"
              },
              "partialFingerprints": {
                "primaryLocationLineHash": "77e636bc56a93ae1:1"
              },
              "properties": {
                "confidence": "high",
                "dimension": "security",
                "severity": "critical"
              },
              "ruleId": "private-key",
              "ruleIndex": 1
            },
            {
              "level": "note",
              "locations": [
                {
                  "physicalLocation": {
                    "artifactLocation": {
                      "uri": "src/lib.rs",
                      "uriBaseId": "%SRCROOT%"
                    },
                    "region": {
                      "startLine": 3
                    }
                  }
                }
              ],
              "message": {
                "text": "lint suppressed with #[allow(...)] on new code"
              },
              "partialFingerprints": {
                "primaryLocationLineHash": "ba37fc9ce7b13495:1"
              },
              "properties": {
                "confidence": "high",
                "dimension": "quality",
                "severity": "low"
              },
              "ruleId": "allow-attribute",
              "ruleIndex": 0
            }
          ],
          "tool": {
            "driver": {
              "name": "git-tlv4",
              "rules": [
                {
                  "defaultConfiguration": {
                    "level": "note"
                  },
                  "id": "allow-attribute",
                  "properties": {
                    "tags": [
                      "quality"
                    ]
                  },
                  "shortDescription": {
                    "text": "lint suppressed with #[allow(...)] on new code"
                  }
                },
                {
                  "defaultConfiguration": {
                    "level": "error"
                  },
                  "id": "private-key",
                  "properties": {
                    "security-severity": "9.5",
                    "tags": [
                      "security"
                    ]
                  },
                  "shortDescription": {
                    "text": "private key in the code"
                  }
                }
              ],
              "version": "[VERSION]"
            }
          }
        }
      ],
      "version": "2.1.0"
    }
    "#);
}

#[test]
fn review_of_a_clean_change_and_a_bad_severity() {
    let repo = TestRepo::new();
    repo.write("README.md", "# sample\n\nHow to build it.\n");
    repo.git(&["commit", "-q", "-am", "docs"]);
    insta::assert_snapshot!(run(&repo, &["review", "HEAD"]), @r"
    exit 0
    --- stdout
    review HEAD ([OID]..[OID]): 1 file, +2 −0, myers
    verdict: APPROVE: overall 100 — 0 critical, 0 high, 0 medium, 0 low in 1 file
      quality       100
      security      100
      architecture  100
      requirements  100
      overall         100
    requirements: a revision range outside a session has no plan (pass --session SID to check one)
    ");
    insta::assert_snapshot!(run(&repo, &["review", "HEAD", "--fail-on", "severe"]), @r"
    exit 2
    --- stderr
    error: invalid value 'severe' for '--fail-on <SEVERITY>': `severe` is not a severity: critical, high, medium or low

    For more information, try '--help'.
    ");
}

#[test]
fn errors_about_sessions_name_them_and_hint() {
    let repo = TestRepo::new();
    insta::assert_snapshot!(run(&repo, &["status"]), @r#"
    exit 1
    --- stderr
    error: there is no tlv4 session in this repository
    hint: start one with `git tlv4 start "TASK TEXT"`
    "#);
    repo.start("impl-only", "Add search to notes");
    repo.start("impl-only", "Add tags to notes");
    insta::assert_snapshot!(run(&repo, &["--session", "TLV4-nope", "status"]), @r"
    exit 1
    --- stderr
    error: no session `TLV4-nope`
    hint: sessions in this repository:
    hint:   TLV4-add-search-to-notes-20261129
    hint:   TLV4-add-tags-to-notes-20261129
    ");
    insta::assert_snapshot!(run(&repo, &["--session", "add", "status"]), @r"
    exit 1
    --- stderr
    error: `add` is the beginning of 2 sessions; say which one
    hint: pass --session with one of:
    hint:   TLV4-add-search-to-notes-20261129
    hint:   TLV4-add-tags-to-notes-20261129
    ");
    // Nothing is paused: there is nothing to approve.
    insta::assert_snapshot!(run(&repo, &["--session", "add-s", "approve"]), @r"
    exit 1
    --- stderr
    error: session `TLV4-add-search-to-notes-20261129` is active; there is nothing to approve
    ");
}

#[test]
fn a_malformed_configuration_is_named_by_file_and_line() {
    let repo = TestRepo::new();
    let start_with = |config: &str| {
        repo.write(".tlv4.toml", config);
        let out = run(&repo, &["start", "x"]);
        assert_eq!(repo.git(&["for-each-ref", "refs/heads/tlv4/"]), "", "{out}");
        out
    };
    // An unknown key, an unknown table, a value of the wrong type, broken TOML.
    insta::assert_snapshot!(start_with("[session]\npipeline = \"spec-only\"\nparallel = 4\n"), @r"
    exit 1
    --- stderr
    error: [REPO]/.tlv4.toml:3: unknown field `parallel`, expected one of `pipeline`, `supervision`, `max_parallel`, `completion`, `export_spec`
    ");
    insta::assert_snapshot!(start_with("[sesion]\nmax_parallel = 2\n"), @r"
    exit 1
    --- stderr
    error: [REPO]/.tlv4.toml:1: unknown field `sesion`, expected one of `session`, `agents`, `roles`, `discuss`, `snapshot`, `tests`, `environment`, `sandbox`, `budget`, `prices`, `limits`, `best_of`
    ");
    insta::assert_snapshot!(start_with("[session]\nmax_parallel = \"four\"\n"), @r#"
    exit 1
    --- stderr
    error: [REPO]/.tlv4.toml:2: `session.max_parallel`: invalid type: string "four", expected u32
    "#);
    insta::assert_snapshot!(start_with("schema = 1\n[review\n"), @r"
    exit 1
    --- stderr
    error: [REPO]/.tlv4.toml:2: unclosed table, expected `]`
    ");
}
