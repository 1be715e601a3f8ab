//! Nothing runs untrusted: what the repository supplies (agents its `.tlv4.toml` defines or
//! names, the files they run, the overrides under `.tlv4/specs/`, its own test command) is
//! used only after `git tlv4 trust`, and a session keeps the configuration it started with.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::common::{STALLED, TestRepo, fixture};

fn executable(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A small Python project whose unittest suite passes.
fn python_sample() -> TestRepo {
    let repo = TestRepo::new();
    repo.write(
        "app/notes.py",
        "def add(notes, text):\n    notes.append(text)\n    return notes\n",
    );
    repo.write("app/__init__.py", "");
    repo.write(
        "tests/test_notes.py",
        "import unittest\n\nfrom app.notes import add\n\n\nclass NotesTest(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add([], 'x'), ['x'])\n",
    );
    repo.write("tests/__init__.py", "");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "notes app"]);
    repo
}

/// Item 9: a driver named only in `[roles]` (no `[agents.X]` table) needs trust.
#[test]
fn a_driver_named_only_in_roles_runs_only_once_trusted() {
    let repo = TestRepo::new();
    let bin = repo.home.path().join("bin");
    // It says it ran on stderr, which the failed task records (a confined agent writes
    // nothing outside its own places).
    executable(
        &bin.join("claude"),
        "#!/bin/sh\necho claude-ran >&2\nexit 1\n",
    );
    let ran = |out: &std::process::Output| stderr(out).contains("claude-ran");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    repo.write(".tlv4.toml", "[roles]\ndefault = \"claude\"\n");
    let show = repo.ok(&["trust", "--show"]);
    assert!(
        show.contains("is NOT trusted") && show.contains("claude: claude driver, for default"),
        "{show}"
    );
    let before = repo.snapshot();
    let out = repo
        .tlv4_cmd(&["start", "--pipeline", "spec-only", "--yes", "x"])
        .env("PATH", &path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            ".tlv4.toml (names agents that run programs: claude (claude)): not trusted yet"
        ),
        "{}",
        stderr(&out)
    );
    assert!(!ran(&out), "claude ran before the file was trusted");
    assert_eq!(
        repo.snapshot(),
        before,
        "an untrusted start changes nothing"
    );

    // The same driver chosen on the command line is the user's own choice.
    let out = repo
        .tlv4_cmd(&[
            "start",
            "--pipeline",
            "spec-only",
            "--yes",
            "--agent",
            "claude",
            "y",
        ])
        .env("PATH", &path)
        .output()
        .unwrap();
    assert!(ran(&out), "--agent claude needs no trust: {}", stderr(&out));

    repo.ok(&["trust"]);
    let out = repo
        .tlv4_cmd(&["start", "--pipeline", "spec-only", "--yes", "z"])
        .env("PATH", &path)
        .output()
        .unwrap();
    assert!(ran(&out), "once trusted, the file's choice runs");
    repo.fsck();
}

/// Item 10: trust covers the files inside the repository an agent runs, and `--show` says
/// everything needed to judge it.
#[test]
fn a_program_inside_the_repository_changed_after_trust_does_not_run() {
    let repo = TestRepo::new();
    let marker = repo.home.path().join("changed-agent-ran");
    executable(
        &repo.path().join("bin/agent.sh"),
        &format!("#!/bin/sh\nexec '{}' \"$@\"\n", fixture("scripted-agent")),
    );
    std::fs::create_dir_all(repo.path().join(".agent-home")).unwrap();
    repo.write(".agent-home/settings.json", "{\"hooks\": []}\n");
    repo.write(
        ".tlv4.toml",
        "[agents.mine]\ndriver = \"command\"\nprogram = \"bin/agent.sh\"\nhome = \".agent-home\"\n\
         env = { OPENAI_API_KEY = \"sk-very-secret-value\", RUST_LOG = \"debug\" }\n\
         [agents.web]\ndriver = \"openai\"\nurl = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\n\
         [roles]\ndefault = \"mine\"\n",
    );
    let out = repo.ok(&["trust"]);
    for want in [
        "mine: command driver, for default",
        "program: bin/agent.sh",
        "env: OPENAI_API_KEY=*** RUST_LOG=debug",
        "home: .agent-home",
        "web: openai driver",
        "url: http://127.0.0.1:9/v1",
        " bin/agent.sh (program of agent mine)",
        " .agent-home/settings.json (home of agent mine)",
        " .tlv4.toml (",
    ] {
        assert!(out.contains(want), "`{want}` missing from:\n{out}");
    }
    assert!(!out.contains("sk-very-secret-value"), "{out}");
    let record = repo.git(&["config", "--local", "tlv4.trusted"]);
    assert!(
        record.starts_with("2 ") && record.contains("bin/agent.sh="),
        "{record}"
    );

    // The program changes after trust: nothing runs, nothing is written.
    executable(
        &repo.path().join("bin/agent.sh"),
        &format!(
            "#!/bin/sh\ntouch '{}'\nexec '{}' \"$@\"\n",
            marker.display(),
            fixture("scripted-agent")
        ),
    );
    let before = repo.snapshot();
    let err = repo.fails(&["start", "--pipeline", "spec-only", "--yes", "x"], 1);
    assert!(
        err.contains("bin/agent.sh (program of agent mine): changed since you trusted it")
            && err.contains("git tlv4 trust"),
        "{err}"
    );
    assert!(!marker.exists(), "the changed program ran");
    assert_eq!(repo.snapshot(), before);
    let show = repo.ok(&["trust", "--show"]);
    assert!(
        show.contains("NOT what it holds now")
            && show.contains(
                "bin/agent.sh (program of agent mine)  -- NOT trusted: changed since you trusted it"
            ),
        "{show}"
    );
    // So does the home.
    repo.ok(&["trust"]);
    repo.write(
        ".agent-home/settings.json",
        "{\"hooks\": [\"curl evil\"]}\n",
    );
    let err = repo.fails(&["start", "--pipeline", "spec-only", "--yes", "x"], 1);
    assert!(
        err.contains(".agent-home/settings.json (home of agent mine): changed"),
        "{err}"
    );
}

/// The builtin rules without the hard-coded-secret check: what a branch could ship.
fn rules_without_the_secret_rule() -> String {
    let rules = include_str!("../../specs/review-rules.toml");
    let start = rules.find("[[check]]\nid = \"hardcoded-secret\"").unwrap();
    let end = rules[start + 9..]
        .find("[[check]]")
        .map_or(rules.len(), |e| start + 9 + e);
    format!("{}{}", &rules[..start], &rules[end..])
}

/// Item 11: the branch under review cannot bring the rules it is judged by.
#[test]
fn review_rules_shipped_by_the_reviewed_branch_do_not_judge_it() {
    let repo = TestRepo::new();
    repo.git(&["checkout", "-q", "-b", "feature"]);
    repo.write(
        ".tlv4/specs/review-rules.toml",
        &rules_without_the_secret_rule(),
    );
    repo.write(
        "app/settings.py",
        "DEBUG = False\n\npassword = \"Tr0ub4dor&3xyzzy\"\n",
    );
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "settings, and laxer rules"]);

    // Checked out, the branch's rules are the working tree's, and not trusted: refused,
    // and no verdict is noted.
    let err = repo.fails(&["review", "main..feature"], 1);
    assert!(
        err.contains(".tlv4/specs/review-rules.toml (review rules overriding the embedded ones): not trusted yet"),
        "{err}"
    );
    let notes = repo.git(&["notes", "--ref=tlv4-review", "list"]);
    assert!(notes.trim().is_empty(), "a verdict was noted: {notes}");

    // From main, the branch's own rules are the side under review: the embedded rules judge.
    repo.git(&["checkout", "-q", "main"]);
    let out = repo.json(&["review", "main..feature", "--json", "--note"]);
    assert_eq!(out["verdict"], "BLOCK", "{out}");
    let note = repo.git(&["notes", "--ref=tlv4-review", "show", "feature"]);
    let note: serde_json::Value = serde_json::from_str(&note).unwrap();
    assert_eq!(note["verdict"], "BLOCK");

    // Trusted on purpose, an override does count.
    repo.git(&["checkout", "-q", "feature"]);
    repo.ok(&["trust"]);
    let out = repo.json(&["review", "main..feature", "--json"]);
    assert_ne!(out["verdict"], "BLOCK", "{out}");
    repo.fsck();
}

/// Item 12: the repository's tests run only in a trusted repository, and the session says
/// so instead of passing.
#[test]
fn an_untrusted_repository_pauses_at_its_tests_then_trust_lets_them_run() {
    let repo = python_sample();
    let sid = repo
        .stops(
            &[
                "start",
                "--pipeline",
                "impl-only",
                "--yes",
                "--completion",
                "keep",
                "fix it",
            ],
            STALLED,
        )
        .lines()
        .next()
        .unwrap()
        .trim()
        .to_owned();
    let s = repo.json(&["--session", &sid, "status", "--json"]);
    assert_eq!(s["session"]["status"], "paused", "{s}");
    let reason = s["control"]["pause"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("TEST-001")
            && reason.contains(
                "the repository is not trusted, so its tests do not run (`python3 -m unittest -v`"
            ),
        "{reason}"
    );
    let test = repo.task(&sid, "TEST-001");
    assert_eq!(test["status"], "failed", "{test}");

    repo.ok(&["trust"]);
    repo.ok(&[
        "--session",
        &sid,
        "resume",
        "--retry",
        "--completion",
        "keep",
    ]);
    let test = repo.task(&sid, "TEST-001");
    assert_eq!(test["status"], "completed", "{test}");
    let record = repo.git(&[
        "show",
        &format!("tlv4/{sid}:.tlv4/sessions/{sid}/artifacts/test-runs/1.json"),
    ]);
    assert!(record.contains("python3 -m unittest -v"), "{record}");
    repo.fsck();
}

/// Item 12: a planner agent writes a `test_command`; the tool never runs it.
#[test]
fn a_test_command_written_by_an_agent_never_runs() {
    let repo = python_sample();
    repo.ok(&["trust"]);
    // A plan the builtin planner wrote, as the template of the hostile one.
    let first = repo
        .ok(&[
            "start",
            "--pipeline",
            "impl-only",
            "--yes",
            "--completion",
            "keep",
            "add a count",
        ])
        .lines()
        .next()
        .unwrap()
        .trim()
        .to_owned();
    let plan = repo.git(&[
        "show",
        &format!("tlv4/{first}:.tlv4/sessions/{first}/plan/plan.json"),
    ]);
    let marker = repo.home.path().join("planner-command-ran");
    let mut plan: serde_json::Value = serde_json::from_str(&plan).unwrap();
    plan["test_command"] = format!("touch '{}'", marker.display()).into();
    let plan_file = repo.home.path().join("plan.json");
    std::fs::write(&plan_file, serde_json::to_string_pretty(&plan).unwrap()).unwrap();
    let planner = repo.home.path().join("planner.py");
    executable(
        &planner,
        &format!(
            "#!/usr/bin/env python3\nimport json, sys\nsys.stdin.read()\nplan = open('{}').read()\n\
             r = {{'summary': 'planned', 'state_update': {{'key_findings': ['a plan'], 'decisions': ['one task'], \
             'files_modified': ['plan/plan.json'], 'verification': 'none'}}, 'files': {{'plan/plan.json': plan}}}}\n\
             print('```json'); print(json.dumps(r)); print('```')\n",
            plan_file.display()
        ),
    );
    repo.write(
        ".tlv4.toml",
        &format!(
            "[agents.planner]\ndriver = \"command\"\nprogram = \"{}\"\n[roles]\nplanner = \"planner\"\n",
            planner.display()
        ),
    );
    repo.ok(&["trust"]);
    let sid = repo
        .ok(&[
            "start",
            "--pipeline",
            "impl-only",
            "--yes",
            "--completion",
            "keep",
            "add a total",
        ])
        .lines()
        .next()
        .unwrap()
        .trim()
        .to_owned();
    let dir = format!("tlv4/{sid}:.tlv4/sessions/{sid}");
    let written = repo.git(&["show", &format!("{dir}/plan/plan.json")]);
    assert!(written.contains("planner-command-ran"), "{written}");
    assert_eq!(repo.task(&sid, "TEST-001")["status"], "completed");
    assert!(!marker.exists(), "the planner's test command ran");
    let report = repo.git(&["show", &format!("{dir}/artifacts/test-report.md")]);
    assert!(
        report.contains("not run: `touch") && report.contains("an agent's choice"),
        "{report}"
    );
    repo.fsck();
}

/// Item 13: a session runs with the configuration it started with, whatever the working
/// tree holds later.
#[test]
fn a_session_keeps_its_configuration_across_a_branch_switch() {
    let repo = TestRepo::new();
    repo.wide_pipeline(1);
    repo.write(
        ".tlv4.toml",
        &format!(
            "[agents.scripted]\ndriver = \"command\"\nprogram = \"{}\"\n[roles]\nexecutor = \"scripted\"\n",
            fixture("scripted-agent")
        ),
    );
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "configure the team"]);
    repo.ok(&["trust"]);
    let config_id = repo.git(&["hash-object", ".tlv4.toml"]).trim().to_owned();
    let sid = repo
        .ok(&[
            "start",
            "--pipeline",
            "wide",
            "--yes",
            "--completion",
            "keep",
            "--no-run",
            "pinned",
        ])
        .lines()
        .next()
        .unwrap()
        .trim()
        .to_owned();
    let lock = repo.git(&[
        "show",
        &format!("tlv4/{sid}:.tlv4/sessions/{sid}/config.lock"),
    ]);
    assert!(lock.contains(&format!("{config_id} .tlv4.toml")), "{lock}");
    assert!(lock.contains(" .tlv4/specs/pipelines.toml"), "{lock}");
    let pinned = repo.git(&[
        "for-each-ref",
        "--format=%(objecttype)",
        &format!("refs/tlv4/pinned/{sid}"),
    ]);
    assert_eq!(pinned.trim(), "blob");

    // Another branch, another (untrusted) configuration: an agent that must not run.
    let marker = repo.home.path().join("other-agent-ran");
    repo.git(&["checkout", "-q", "-b", "other"]);
    executable(
        &repo.path().join("bin/other.sh"),
        &format!("#!/bin/sh\ntouch '{}'\nexit 1\n", marker.display()),
    );
    repo.write(
        ".tlv4.toml",
        "[agents.scripted]\ndriver = \"command\"\nprogram = \"bin/other.sh\"\n[roles]\nexecutor = \"scripted\"\n",
    );
    repo.write(".tlv4/specs/pipelines.toml", "not even toml [");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "another team"]);

    let out = repo.tlv4(&["--session", &sid, "resume", "--completion", "keep"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "the working tree's configuration differs from the one session {sid} started with (.tlv4.toml, .tlv4/specs/pipelines.toml)"
        )),
        "{}",
        stderr(&out)
    );
    assert!(!marker.exists(), "the other branch's agent ran");
    let s = repo.json(&["--session", &sid, "status", "--json"]);
    assert_eq!(s["session"]["status"], "completed", "{s}");
    let files = repo.git(&["ls-tree", "-r", "--name-only", &format!("tlv4/{sid}")]);
    assert!(files.contains("scripted-IMPL-001.txt"), "{files}");

    // Asked for, a session takes the working tree's configuration, once it loads.
    let err = repo.fails(&["--session", &sid, "resume", "--reconfigure"], 1);
    assert!(err.contains(".tlv4/specs/pipelines.toml:1"), "{err}");
    let lock_now = repo.git(&[
        "show",
        &format!("tlv4/{sid}:.tlv4/sessions/{sid}/config.lock"),
    ]);
    assert_eq!(
        lock_now, lock,
        "a configuration that does not load is not pinned"
    );
    repo.fsck();
}

/// `git tlv4 demo` trusts the sample it makes, so its tests run.
#[test]
fn the_demo_trusts_its_own_sample() {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let target: PathBuf = dir.path().join("demo");
    let out = crate::common::toolchain(&mut crate::common::hermetic(
        crate::common::BIN,
        dir.path(),
        home.path(),
    ))
    .args(["demo", "--dir", target.to_str().unwrap()])
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("trusted the sample repository"),
        "{}",
        stderr(&out)
    );
    let record = crate::common::hermetic("git", &target, home.path())
        .args(["config", "--local", "tlv4.trusted"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&record.stdout).starts_with('2'));
}

/// Item 9: agents recorded in a session's settings travel with its branch; only a choice made
/// in this repository is the user's own.
#[test]
fn agents_recorded_in_a_session_from_elsewhere_are_not_the_users_choice() {
    let repo = TestRepo::new();
    let bin = repo.home.path().join("bin");
    // It says it ran on stderr, which the failed task records (a confined agent writes
    // nothing outside its own places).
    executable(
        &bin.join("claude"),
        "#!/bin/sh\necho claude-ran >&2\nexit 1\n",
    );
    let ran = |out: &std::process::Output| stderr(out).contains("claude-ran");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = repo
        .tlv4_cmd(&[
            "start",
            "--pipeline",
            "spec-only",
            "--agent",
            "claude",
            "--no-run",
            "from elsewhere",
        ])
        .env("PATH", &path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let sid = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    // As if the branch had been fetched: no local record of how it started.
    repo.git(&["update-ref", "-d", &format!("refs/tlv4/pinned/{sid}")]);
    let out = repo
        .tlv4_cmd(&["--session", &sid, "resume"])
        .env("PATH", &path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("records the agents chosen when it started (--agent claude)")
            && stderr(&out).contains("--agent NAME"),
        "{}",
        stderr(&out)
    );
    assert!(!ran(&out), "the session's recorded agent ran");
    // Named on the command line, it is the user's choice.
    let out = repo
        .tlv4_cmd(&["--session", &sid, "resume", "--agent", "claude"])
        .env("PATH", &path)
        .output()
        .unwrap();
    assert!(ran(&out), "{}", stderr(&out));
    repo.fsck();
}

/// A file in an agent's `args` that an earlier task of the session rewrote: the later task's
/// checkout holds the rewritten copy, but the trusted one (the working tree's) is what runs.
#[test]
fn a_script_an_earlier_task_rewrote_is_not_what_runs_later() {
    let repo = TestRepo::new();
    repo.wide_pipeline(2);
    let marker = repo.home.path().join("rewritten-script-ran");
    executable(
        &repo.path().join("tools/agent.sh"),
        &format!(
            "#!/bin/sh\n# The trusted agent; its first task rewrites this script in its checkout.\n\
             if [ \"$TLV4_TASK\" = IMPL-001 ]; then\n\
             printf '#!/bin/sh\\ntouch \"{}\"\\nexec python3 \"{}\"\\n' > tools/agent.sh\n\
             fi\n\
             exec python3 '{}'\n",
            marker.display(),
            fixture("snapshot-agent"),
            fixture("snapshot-agent"),
        ),
    );
    repo.write(
        ".tlv4.toml",
        &format!(
            "[agents.mine]\ndriver = \"command\"\nprogram = \"sh\"\nargs = [\"tools/agent.sh\"]\n\
             reads = [\"{}\"]\nwrites = [\"{}\"]\ntimeout = \"20s\"\n[roles]\nexecutor = \"mine\"\n",
            fixture("snapshot-agent"),
            repo.home.path().display()
        ),
    );
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "agent"]);
    let trusted = repo.ok(&["trust"]);
    assert!(
        trusted.contains("tools/agent.sh (file in the args of agent mine)"),
        "{trusted}"
    );
    let out = repo.ok(&[
        "start",
        "--pipeline",
        "wide",
        "--yes",
        "--completion",
        "keep",
        "--max-parallel",
        "1",
        "two tasks in a row",
    ]);
    let sid = out.lines().next().unwrap().trim().to_owned();
    // The rewrite reached the session (it is the first task's code) ...
    let merged = repo.git(&["show", &format!("tlv4/{sid}:tools/agent.sh")]);
    assert!(merged.contains("touch"), "{merged}");
    for task in ["IMPL-001", "IMPL-002"] {
        assert_eq!(repo.task(&sid, task)["status"], "completed", "{task}");
    }
    // ... but the second task ran the trusted script, not the one in its checkout.
    assert!(!marker.exists(), "the rewritten script ran");
    repo.fsck();
}

/// A repository with a Node frontend and a Python backend, committed.
fn frontend_and_backend() -> TestRepo {
    let repo = TestRepo::new();
    repo.write(
        "frontend/package.json",
        "{\"name\": \"web\", \"devDependencies\": {\"jest\": \"^29\"}}\n",
    );
    repo.write("frontend/package-lock.json", "{\"lockfileVersion\": 3}\n");
    repo.write(
        "backend/pyproject.toml",
        "[project]\nname = \"api\"\nversion = \"0.1.0\"\n\n[dependency-groups]\ntest = [\"pytest>=8\"]\n",
    );
    repo.write("backend/uv.lock", "version = 1\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "frontend and backend"]);
    repo
}

/// The environment setup runs the repository's install scripts: `trust --show` lists each
/// step (where, what decided it, its commands, what it needs, its inputs), `trust` records its
/// input files with the blob ids of the commit HEAD is on, and a changed lockfile is no
/// longer trusted. Starting a session needs none of it: only the setup does.
#[test]
fn the_environment_setup_is_shown_and_its_lockfiles_are_trusted() {
    let repo = frontend_and_backend();
    let show = repo.ok(&["trust", "--show"]);
    let block = "\
environment setup (detected in the code at HEAD; it runs in each checkout before agents and tests):
  backend/: uv, from uv.lock
    run: uv sync --frozen --group test
    needs: uv (pip install uv, or curl -LsSf https://astral.sh/uv/install.sh | sh)
    inputs (a change runs it again): backend/pyproject.toml, backend/uv.lock
  frontend/: npm, from package-lock.json
    run: npm ci --no-audit --no-fund --prefer-offline
    needs: npm (comes with Node.js: https://nodejs.org/en/download)
    inputs (a change runs it again): frontend/package-lock.json, frontend/package.json
";
    assert!(show.contains(block), "{show}");
    assert!(
        show.contains("is NOT trusted")
            && show.contains(
                " frontend/package-lock.json (environment setup `npm ci --no-audit --no-fund --prefer-offline` in frontend/ (package-lock.json))  -- NOT trusted: not trusted yet"
            )
            && show.contains(
                " backend/uv.lock (environment setup `uv sync --frozen --group test` in backend/ (uv.lock))  -- NOT trusted"
            ),
        "{show}"
    );
    let json = repo.json(&["trust", "--show", "--json"]);
    let steps = &json["environment"]["steps"];
    assert_eq!(json["environment"]["from"], "detected");
    assert_eq!(
        (&steps[0]["dir"], &steps[0]["kind"], &steps[1]["dir"]),
        (
            &serde_json::json!("backend"),
            &serde_json::json!("uv"),
            &serde_json::json!("frontend")
        ),
        "{json}"
    );

    // Lockfiles alone make nothing refuse: the builtin agent runs untrusted.
    repo.runs(&["start", "--pipeline", "spec-only", "--yes", "x"]);

    let out = repo.ok(&["trust"]);
    assert!(out.contains(block), "{out}");
    let record = repo.git(&["config", "--local", "tlv4.trusted"]);
    for path in [
        "backend/pyproject.toml",
        "backend/uv.lock",
        "frontend/package-lock.json",
        "frontend/package.json",
    ] {
        let id = repo.git(&["rev-parse", &format!("HEAD:{path}")]);
        assert!(
            record.contains(&format!(" {path}={}", id.trim())),
            "{path} missing from {record}"
        );
    }
    assert!(repo.ok(&["trust", "--show"]).contains("is trusted\n"));

    // A new lockfile is not the one trusted.
    repo.write(
        "frontend/package-lock.json",
        "{\"lockfileVersion\": 3, \"packages\": {}}\n",
    );
    repo.git(&["commit", "-q", "-am", "update the lockfile"]);
    let show = repo.ok(&["trust", "--show"]);
    assert!(
        show.contains("is trusted, but NOT what it holds now")
            && show.contains("frontend/package-lock.json (environment setup `npm ci")
            && show.contains("-- NOT trusted: changed since you trusted it"),
        "{show}"
    );
}

/// `[environment] setup` replaces what is detected, keeps the detected inputs, and makes
/// `.tlv4.toml` need trust like `[tests] command` does.
#[test]
fn a_configured_environment_setup_is_shown_instead_and_needs_the_file_trusted() {
    let repo = frontend_and_backend();
    repo.write(
        ".tlv4.toml",
        "[environment]\nsetup = [\"make deps\", \"npm --prefix frontend ci\"]\ntimeout = \"30m\"\n",
    );
    let show = repo.ok(&["trust", "--show"]);
    let block = "\
environment setup ([environment] setup of .tlv4.toml, instead of what the code at HEAD declares; it runs in each checkout before agents and tests):
  the root: configured, from .tlv4.toml [environment] setup
    run: make deps
    run: npm --prefix frontend ci
    inputs (a change runs it again): backend/pyproject.toml, backend/uv.lock, frontend/package-lock.json, frontend/package.json
";
    assert!(show.contains(block), "{show}");
    assert!(
        show.contains(
            " .tlv4.toml (sets the environment setup `make deps && npm --prefix frontend ci`)  -- NOT trusted"
        ),
        "{show}"
    );
    let err = repo.fails(&["start", "--pipeline", "spec-only", "--yes", "x"], 1);
    assert!(
        err.contains(
            ".tlv4.toml (sets the environment setup `make deps && npm --prefix frontend ci`): not trusted yet"
        ),
        "{err}"
    );
    // A setup that is not a list of commands names the file, the line and the key.
    repo.write(".tlv4.toml", "[environment]\nsetup = []\n");
    let err = repo.fails(&["trust", "--show"], 1);
    assert!(
        err.contains(".tlv4.toml:2: [environment] setup = []: must list at least one command"),
        "{err}"
    );
}

/// The environment setup is trusted with the files it installs from: a requirements file
/// added after the repository was trusted stops the tests before anything is installed,
/// naming the file; once trusted, the retry makes the checkout's virtualenv and the tests run.
#[test]
fn an_environment_setup_runs_only_once_its_files_are_trusted() {
    let repo = python_sample();
    repo.ok(&["trust"]);
    repo.write("requirements.txt", "# nothing to install yet\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "requirements"]);
    let sid = repo
        .stops(
            &[
                "start",
                "--pipeline",
                "impl-only",
                "--yes",
                "--completion",
                "keep",
                "fix it",
            ],
            STALLED,
        )
        .lines()
        .next()
        .unwrap()
        .trim()
        .to_owned();
    let test = repo.task(&sid, "TEST-001");
    assert_eq!(test["status"], "failed", "{test}");
    let reason = test["result"]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("the environment setup runs the repository's install scripts")
            && reason.contains("requirements.txt (environment setup `python3 -m venv .venv")
            && reason.contains("not trusted yet"),
        "{test}"
    );
    let pool = repo.pool_dir();
    let venvs = walk_for(&pool, ".venv");
    assert!(venvs.is_empty(), "nothing was installed: {venvs:?}");

    let shown = repo.ok(&["trust", "--show"]);
    assert!(shown.contains("requirements.txt"), "{shown}");
    repo.ok(&["trust"]);
    repo.ok(&[
        "--session",
        &sid,
        "resume",
        "--retry",
        "--completion",
        "keep",
    ]);
    let test = repo.task(&sid, "TEST-001");
    assert_eq!(test["status"], "completed", "{test}");
    assert_eq!(
        walk_for(&pool, ".venv").len(),
        1,
        "the test checkout's venv"
    );
    let report = repo.git(&[
        "show",
        &format!("tlv4/{sid}:.tlv4/sessions/{sid}/artifacts/test-report.md"),
    ]);
    assert!(
        report.contains("checkouts: 1 kept checkout (1 in use), 0 MiB of the 16.0 GiB limit"),
        "the report says what the kept checkouts use:\n{report}"
    );
    repo.fsck();
}

/// The directories named `name` two levels under each slot of the pool at `pool`.
fn walk_for(pool: &std::path::Path, name: &str) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for slot in std::fs::read_dir(pool).into_iter().flatten().flatten() {
        for checkout in std::fs::read_dir(slot.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let p = checkout.path().join(name);
            if p.is_dir() {
                found.push(p);
            }
        }
    }
    found
}
