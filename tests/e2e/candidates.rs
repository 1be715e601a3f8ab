//! `candidates` and `pick`: a best-of task's candidates shown, and another one taken as a
//! recorded decision. Two sessions: a real best-of run of scripted agents (the sample of
//! `bestof.rs`), and one run by the offline builtin agent whose best-of run of IMPL-001 the
//! test then writes with git itself — four candidate commits on the session tip under
//! `refs/tlv4/runs/<SID>/IMPL-001/1-c<k>`, and a commit on the session branch that merges
//! candidate 2 and records `candidates.json` — to have a task downstream, a candidate without
//! a commit and one that conflicts.

use std::path::Path;

use crate::bestof::{BROKEN, CALC, CLEAN, sample, secret};
use crate::common::{TestRepo, hermetic};

const PIPELINE: &str = "schema = 1
[role.executor]
prefix = \"IMPL\"
inner_loop = false
summary = \"x\"
[task.IMPL-001]
role = \"executor\"
phase = \"implementation\"
priority = \"P0\"
purpose = \"p\"
success = \"s\"
steps = []
expected = \"e\"
constraints = \"c\"
[task.IMPL-002]
role = \"executor\"
phase = \"implementation\"
priority = \"P0\"
purpose = \"p\"
success = \"s\"
steps = []
expected = \"e\"
constraints = \"c\"
[pipeline.two]
summary = \"two\"
tasks = [{ id = \"IMPL-001\" }, { id = \"IMPL-002\", blocked_by = [\"IMPL-001\"] }]
";

/// A session of two tasks, IMPL-002 waiting for IMPL-001, run to the end.
fn session(repo: &TestRepo) -> String {
    repo.write(".tlv4/specs/pipelines.toml", PIPELINE);
    repo.ok(&["trust"]);
    let out = repo.ok(&[
        "start",
        "--pipeline",
        "two",
        "--yes",
        "--completion",
        "keep",
        "pick the best",
    ]);
    out.lines().next().unwrap().trim().to_owned()
}

/// `base`'s tree with `files` (path, content) written into it: the tree id.
fn tree_with(repo: &TestRepo, base: &str, files: &[(&str, &str)]) -> String {
    let scratch = tempfile::tempdir().unwrap();
    let index = scratch.path().join("index");
    let git = |args: &[&str]| -> String {
        let out = hermetic("git", repo.path(), scratch.path())
            .env("GIT_INDEX_FILE", &index)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    };
    git(&["read-tree", base]);
    for (i, (path, content)) in files.iter().enumerate() {
        let file = scratch.path().join(format!("blob-{i}"));
        std::fs::write(&file, content).unwrap();
        let blob = git(&["hash-object", "-w", file.to_str().unwrap()]);
        git(&[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("100644,{blob},{path}"),
        ]);
    }
    git(&["write-tree"])
}

fn commit(repo: &TestRepo, tree: &str, parents: &[&str], message: &str) -> String {
    let mut args = vec!["commit-tree", tree, "-m", message];
    for p in parents {
        args.extend_from_slice(&["-p", p]);
    }
    repo.git(&args).trim().to_owned()
}

/// The fixture: session `sid` after a best-of run of IMPL-001 with four candidates (1 and 2
/// change `src/app.py`, 3 left no commit, 4 changes `src/lib.rs`, which the session changed
/// since), candidate 2 merged; `status` is IMPL-001's status in the record (`completed`, or
/// `failed` when every candidate fell short and none was merged). Returns the candidates'
/// commits (none for 3).
fn best_of(repo: &TestRepo, sid: &str, status: &str) -> Vec<Option<String>> {
    let branch = format!("refs/heads/tlv4/{sid}");
    let fork = repo.git(&["rev-parse", &branch]).trim().to_owned();
    let dir = format!(".tlv4/sessions/{sid}");
    let mut commits = Vec::new();
    let changes = [
        Some(("src/app.py", "print('one')\n")),
        Some(("src/app.py", "print('two')\n")),
        None,
        Some(("src/lib.rs", "pub fn h() {}\n")),
    ];
    for (k, change) in changes.iter().enumerate() {
        let Some(change) = change else {
            commits.push(None);
            continue;
        };
        let tree = tree_with(repo, &fork, &[*change]);
        let c = commit(repo, &tree, &[&fork], &format!("candidate {}", k + 1));
        repo.git(&[
            "update-ref",
            &format!("refs/tlv4/runs/{sid}/IMPL-001/1-c{}", k + 1),
            &c,
        ]);
        commits.push(Some(c));
    }
    let picked = status == "completed";
    let candidate = |k: usize, outcome: &str, passed: u64, verdict: &str, cost: f64| {
        let c = &commits[k - 1];
        serde_json::json!({
            "number": k, "agent": format!("fake-{k}"), "model": null,
            "ref": format!("refs/tlv4/runs/{sid}/IMPL-001/1-c{k}"),
            "commit": c, "parent": c.as_ref().map(|_| fork.clone()),
            "outcome": outcome, "summary": format!("candidate {k}"),
            "changed": if k == 4 { vec!["src/lib.rs"] } else if c.is_some() { vec!["src/app.py"] } else { vec![] },
            "reused": false, "merged": null, "conflict": [],
            "tests": c.as_ref().map(|_| serde_json::json!({"ran": true, "pass_rate": passed as f64 * 100.0 / 3.0, "passed": passed, "failed": 3 - passed, "skipped": 0, "meets_target": passed == 3 && picked, "failures": [], "note": ""})),
            "review": c.as_ref().map(|_| serde_json::json!({"verdict": verdict, "score": 80.0, "findings": 0, "blocking": []})),
            "diff": {"files": 1, "added": 1, "removed": 0},
            "usage": {"input_tokens": 100, "output_tokens": 50, "cost_usd": cost},
            "seconds": 2.5, "rank": k,
        })
    };
    let record = serde_json::json!({
        "schema": 1, "task": "IMPL-001", "attempt": 1, "measured_on": fork,
        "rule": "the most tests passed, then the review's verdict and score, then the smaller diff",
        "picked": if picked { serde_json::json!(2) } else { serde_json::Value::Null },
        "best": 2, "why": "all tests pass", "tie": null, "accept_first": false,
        "candidates": [
            candidate(1, "completed", 2, "WARN", 0.01),
            candidate(2, "completed", 3, "PASS", 0.02),
            candidate(3, "failed: the agent timed out", 0, "", 0.03),
            candidate(4, "completed", 1, "PASS", 0.04),
        ],
    });
    let mut files = vec![
        (
            format!("{dir}/runs/IMPL-001/1/candidates.json"),
            serde_json::to_string_pretty(&record).unwrap() + "\n",
        ),
        // Later code of the session: candidate 4's change conflicts with it.
        ("src/lib.rs".to_owned(), "pub fn g() {}\n".to_owned()),
    ];
    let result_path = format!("{dir}/runs/IMPL-001/1/result.json");
    let mut result: serde_json::Value =
        serde_json::from_str(&repo.git(&["show", &format!("{fork}:{result_path}")])).unwrap();
    let mut parents = vec![fork.clone()];
    if picked {
        let c2 = commits[1].clone().unwrap();
        result["snapshot"] =
            serde_json::json!({"commit": c2, "parent": fork, "changed": ["src/app.py"]});
        files.push(("src/app.py".to_owned(), "print('two')\n".to_owned()));
        parents.push(c2.clone());
        repo.git(&[
            "update-ref",
            &format!("refs/heads/tlv4/{sid}.IMPL-001"),
            &c2,
        ]);
    } else {
        result["outcome"] = "failed: every candidate fell short".into();
        let task_path = format!("{dir}/tasks/IMPL-001.toml");
        let task = repo.git(&["show", &format!("{fork}:{task_path}")]);
        files.push((
            task_path,
            task.replace("status = \"completed\"", "status = \"failed\""),
        ));
    }
    files.push((
        result_path,
        serde_json::to_string_pretty(&result).unwrap() + "\n",
    ));
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    let tree = tree_with(repo, &fork, &files);
    let parents: Vec<&str> = parents.iter().map(String::as_str).collect();
    let merged = commit(
        repo,
        &tree,
        &parents,
        "IMPL-001: best of 4 (written by the test)",
    );
    repo.git(&["update-ref", &branch, &merged, &fork]);
    commits
}

fn show(repo: &TestRepo, sid: &str, path: &str) -> String {
    repo.git(&["show", &format!("tlv4/{sid}:{path}")])
}

#[test]
fn candidates_lists_them_and_pick_takes_another_with_its_dependents_run_again() {
    let repo = TestRepo::new();
    let sid = session(&repo);
    let commits = best_of(&repo, &sid, "completed");
    let s = ["--session", sid.as_str()];
    let with =
        |args: &[&str]| -> Vec<String> { s.iter().chain(args).map(|a| (*a).to_owned()).collect() };
    let ok = |args: &[&str]| {
        let a = with(args);
        repo.ok(&a.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let fails = |args: &[&str], code: i32| {
        let a = with(args);
        repo.fails(&a.iter().map(String::as_str).collect::<Vec<_>>(), code)
    };

    let table = ok(&["candidates", "IMPL-001"]);
    let rows: Vec<&str> = table.lines().collect();
    assert_eq!(rows[0], "IMPL-001, attempt 1: best of 4", "{table}");
    assert!(rows[2].starts_with("  #  AGENT"), "{table}");
    assert!(rows[4].starts_with("* 2  fake-2  completed"), "{table}");
    assert!(
        rows[4].contains("3/3 passed") && rows[4].contains("PASS 80"),
        "{table}"
    );
    assert!(
        rows[4].contains("+1 -0 in 1 file") && rows[4].contains("$0.0200"),
        "{table}"
    );
    assert!(
        rows[4].ends_with(&format!("refs/tlv4/runs/{sid}/IMPL-001/1-c2")),
        "{table}"
    );
    assert!(
        rows[5].starts_with("  3  fake-3  failed: the agent timed out  -"),
        "{table}"
    );
    assert!(table.contains("\nrule: the most tests passed"), "{table}");
    assert!(
        table.contains("\npicked 2 (by the rule): all tests pass"),
        "{table}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&ok(&["candidates", "IMPL-001", "--json"])).unwrap();
    assert_eq!(json["picked"], 2);
    assert_eq!(json["candidates"].as_array().unwrap().len(), 4);
    assert_eq!(
        json["candidates"][0]["commit"],
        commits[0].clone().unwrap().as_str()
    );

    // What the candidates cost beside what was merged.
    let cost = ok(&["cost"]);
    assert!(
        cost.contains(
            "IMPL-001 best of 4: $0.1000 in 4 candidates, $0.0200 of it merged (candidate 2)"
        ),
        "{cost}"
    );
    let cost: serde_json::Value = serde_json::from_str(&ok(&["cost", "--json"])).unwrap();
    let best = &cost["best_of"][0];
    assert_eq!(
        (
            best["task"].clone(),
            best["candidates"].clone(),
            best["picked"].clone()
        ),
        ("IMPL-001".into(), 4.into(), 2.into())
    );
    assert!(
        (best["cost_usd"].as_f64().unwrap() - 0.1).abs() < 1e-9,
        "{best}"
    );

    // The report puts them side by side, each with its diff.
    let page = ok(&["report", "-o", "-"]);
    let section = &page[page
        .find("<section id=\"candidates\">")
        .expect("a Best of N section")..];
    let section = &section[..section.find("</section>").unwrap()];
    assert!(section.contains("IMPL-001: best of 4"), "{section}");
    assert!(
        section.contains("<th class=\"candidate picked\">★ candidate 2</th>"),
        "{section}"
    );
    assert!(
        section.contains("<th class=\"candidate\">candidate 4</th>"),
        "{section}"
    );
    assert!(
        section.contains("+print(&#x27;two&#x27;)") && section.contains("+pub fn h() {}"),
        "{section}"
    );
    assert!(
        section.contains("no commit"),
        "candidate 3 has none: {section}"
    );
    assert!(
        !section.contains(".tlv4/"),
        "the diffs leave the pipeline folder out"
    );

    // Unknown task, a task without candidates.
    let err = fails(&["candidates", "IMPL-009"], 1);
    assert!(
        err.contains("IMPL-009") && err.contains("IMPL-001, IMPL-002"),
        "{err}"
    );
    let err = fails(&["candidates", "IMPL-002"], 1);
    assert!(
        err.contains("task `IMPL-002` ran no candidates") && err.contains("hint: "),
        "{err}"
    );

    // What pick refuses changes nothing.
    let before = repo.snapshot();
    for (args, code, says) in [
        (vec!["pick", "IMPL-009", "1"], 1, "IMPL-009"),
        (vec!["pick", "IMPL-002", "1"], 1, "ran no candidates"),
        (
            vec!["pick", "IMPL-001", "2"],
            1,
            "candidate 2 of `IMPL-001` is already picked",
        ),
        (vec!["pick", "IMPL-001", "7"], 1, "there is no candidate 7"),
        (
            vec!["pick", "IMPL-001", "3"],
            1,
            "candidate 3 of `IMPL-001` left no commit",
        ),
        (
            vec!["pick", "IMPL-001", "4"],
            1,
            "conflicts with the session now in src/lib.rs",
        ),
    ] {
        let mut args = args;
        args.push("--no-run");
        let err = fails(&args, code);
        assert!(err.contains(says), "{args:?}: {err}");
        assert_eq!(repo.snapshot(), before, "{args:?} changed something");
    }

    // Candidate 1 instead of 2: one event, the code swapped, the task branch moved, IMPL-002
    // to run again.
    let tip = repo
        .git(&["rev-parse", &format!("tlv4/{sid}")])
        .trim()
        .to_owned();
    let c1 = commits[0].clone().unwrap();
    ok(&["pick", "IMPL-001", "1", "--no-run"]);
    let branch = format!("tlv4/{sid}");
    assert_eq!(
        repo.git(&["rev-parse", &format!("{branch}^1"), &format!("{branch}^2")]),
        format!("{tip}\n{c1}\n"),
        "one event on the tip, candidate 1 its second parent"
    );
    assert_eq!(repo.trailers(&branch, "Tlv4-Event")[0], "user_decision");
    assert_eq!(repo.trailers(&branch, "Tlv4-Decision")[0], "pick");
    assert_eq!(repo.trailers(&branch, "Tlv4-Decision-Task")[0], "IMPL-001");
    assert_eq!(repo.trailers(&branch, "Tlv4-Picked")[0], "1");
    let message = repo.git(&["log", "-1", "--format=%B", &branch]);
    assert!(
        message.contains("candidate 1 instead of candidate 2, picked by the rule"),
        "{message}"
    );
    assert_eq!(show(&repo, &sid, "src/app.py"), "print('one')\n");
    assert_eq!(
        show(&repo, &sid, "src/lib.rs"),
        "pub fn g() {}\n",
        "later code stays"
    );
    assert_eq!(
        repo.git(&["rev-parse", &format!("refs/heads/tlv4/{sid}.IMPL-001")])
            .trim(),
        c1
    );
    assert_eq!(repo.task(&sid, "IMPL-001")["status"], "completed");
    assert_eq!(repo.task(&sid, "IMPL-002")["status"], "pending");
    let json: serde_json::Value =
        serde_json::from_str(&ok(&["candidates", "IMPL-001", "--json"])).unwrap();
    assert_eq!(
        (json["picked"].clone(), json["picked_by"].clone()),
        (1.into(), "user".into())
    );
    let table = ok(&["candidates", "IMPL-001"]);
    assert!(
        table.contains("\n* 1  fake-1") && table.contains("\npicked 1 (by the user)"),
        "{table}"
    );
    let result: serde_json::Value = serde_json::from_str(&show(
        &repo,
        &sid,
        &format!(".tlv4/sessions/{sid}/runs/IMPL-001/1/result.json"),
    ))
    .unwrap();
    assert_eq!(result["snapshot"]["commit"], c1.as_str());
    repo.fsck();

    // And back to 2, running the pipeline on: IMPL-002 runs again and the session ends.
    let out = repo.tlv4(
        &with(&["pick", "IMPL-001", "2"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let message = repo.git(&[
        "log",
        "--format=%B",
        "--grep",
        "Tlv4-Decision: pick",
        "-1",
        &branch,
    ]);
    assert!(
        message.contains("candidate 2 instead of candidate 1, picked by the user"),
        "{message}"
    );
    assert_eq!(show(&repo, &sid, "src/app.py"), "print('two')\n");
    assert_eq!(repo.task(&sid, "IMPL-002")["status"], "completed");
    assert_eq!(repo.task(&sid, "IMPL-002")["attempts"], 2);
    repo.fsck();
}

#[test]
fn a_task_whose_candidates_all_fell_short_takes_the_one_picked() {
    let repo = TestRepo::new();
    let sid = session(&repo);
    let commits = best_of(&repo, &sid, "failed");
    assert_eq!(repo.task(&sid, "IMPL-001")["status"], "failed");
    let table = repo.ok(&["--session", &sid, "candidates", "IMPL-001"]);
    assert!(!table.contains("\n* "), "{table}");
    assert!(
        table.contains("picked none: every candidate fell short; the best is 2 (git tlv4 pick IMPL-001 2 takes it)"),
        "{table}"
    );
    assert!(!Path::new(&repo.path().join("src/app.py")).exists());
    repo.ok(&["--session", &sid, "pick", "IMPL-001", "2", "--no-run"]);
    assert_eq!(show(&repo, &sid, "src/app.py"), "print('two')\n");
    assert_eq!(repo.task(&sid, "IMPL-001")["status"], "completed");
    assert_eq!(repo.task(&sid, "IMPL-002")["status"], "pending");
    assert_eq!(
        repo.git(&["rev-parse", &format!("refs/heads/tlv4/{sid}.IMPL-001")])
            .trim(),
        commits[1].clone().unwrap(),
        "the task branch is made"
    );
    let message = repo.git(&["log", "-1", "--format=%B", &format!("tlv4/{sid}")]);
    assert!(
        message.contains("candidate 2 instead of no candidate"),
        "{message}"
    );
    repo.fsck();
}

/// A real best-of run: the clean candidate is merged, the leaky one (the review blocks it)
/// kept; `pick` takes the leaky one and back; a run where none passes takes the best.
#[test]
fn a_real_best_of_run_is_listed_and_overruled() {
    let repo = sample(&[("leaky", secret()), ("clean", CLEAN.to_owned())]);
    let start = |agents: &str, text: &str| -> String {
        let out = repo
            .tlv4_cmd(&[
                "start",
                "--pipeline",
                "wide",
                "--yes",
                "--completion",
                "keep",
                "--best-of",
                agents,
                text,
            ])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()
            .unwrap()
            .trim()
            .to_owned()
    };
    let sid = start("leaky,clean", "add mul");
    let s = |args: &[&str]| -> Vec<String> {
        ["--session", sid.as_str()]
            .iter()
            .chain(args)
            .map(|a| (*a).to_owned())
            .collect()
    };
    let ok = |args: &[&str]| {
        let a = s(args);
        repo.ok(&a.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let table = ok(&["candidates", "IMPL-001"]);
    let rows: Vec<&str> = table.lines().collect();
    assert!(
        rows[3].starts_with("  1  leaky") && rows[3].contains("BLOCK"),
        "{table}"
    );
    assert!(
        rows[4].starts_with("* 2  clean") && rows[4].contains("1/1 passed"),
        "{table}"
    );
    assert!(table.contains("\nrule: tests first"), "{table}");
    assert!(
        table.contains("\npicked 2 (by the rule): candidate 2: tests 1/1"),
        "{table}"
    );
    let cost = ok(&["cost"]);
    assert!(cost.contains("IMPL-001 best of 2: "), "{cost}");

    ok(&["pick", "IMPL-001", "1", "--no-run"]);
    assert_eq!(show(&repo, &sid, "app/calc.py"), secret());
    let c1 = repo.git(&["rev-parse", &format!("refs/tlv4/runs/{sid}/IMPL-001/1-c1")]);
    assert_eq!(
        repo.git(&[
            "rev-parse",
            &format!("refs/heads/tlv4/{sid}.IMPL-001"),
            &format!("tlv4/{sid}^2")
        ]),
        format!("{c1}{c1}")
    );
    repo.fsck();
    // Back to the rule's pick, running the pipeline on: the session completes again.
    ok(&["pick", "IMPL-001", "2"]);
    assert_eq!(show(&repo, &sid, "app/calc.py"), CLEAN);
    assert_eq!(repo.task(&sid, "IMPL-001")["status"], "completed");
    repo.fsck();

    // None passes: the task failed, nothing merged; pick takes the best and completes it.
    let repo = sample(&[("broken", BROKEN.to_owned()), ("leaky", secret())]);
    let out = repo
        .tlv4_cmd(&[
            "start",
            "--pipeline",
            "wide",
            "--yes",
            "--completion",
            "keep",
            "--best-of",
            "broken,leaky",
            "add mul",
        ])
        .output()
        .unwrap();
    let sid = String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap()
        .trim()
        .to_owned();
    assert_eq!(repo.task(&sid, "IMPL-001")["status"], "failed");
    assert_eq!(show(&repo, &sid, "app/calc.py"), CALC);
    let table = repo.ok(&["--session", &sid, "candidates", "IMPL-001"]);
    assert!(
        table.contains("the best is 2 (git tlv4 pick IMPL-001 2 takes it)"),
        "{table}"
    );
    repo.ok(&["--session", &sid, "pick", "IMPL-001", "2", "--no-run"]);
    assert_eq!(show(&repo, &sid, "app/calc.py"), secret());
    assert_eq!(repo.task(&sid, "IMPL-001")["status"], "completed");
    repo.fsck();
}

/// A pick made on one clone is made again on the other by `pull`, after what that clone did
/// meanwhile; the same pick made on both sides holds.
#[test]
fn pull_makes_a_pick_of_the_other_clone_again() {
    let bare = crate::remote::Bare::new();
    let first = TestRepo::new();
    first.git(&["remote", "add", "origin", &bare.url()]);
    first.git(&["push", "-q", "origin", "main"]);
    let sid = session(&first);
    let commits = best_of(&first, &sid, "completed");
    first.ok(&["push"]);
    let second = crate::remote::clone(&bare.url(), "second");
    second.ok(&["pull"]);
    let branch = format!("tlv4/{sid}");

    first.ok(&["--session", &sid, "pick", "IMPL-001", "1", "--no-run"]);
    first.ok(&["push"]);
    let theirs = first.git(&["rev-parse", &branch]).trim().to_owned();
    // Meanwhile, here: IMPL-002 is reset.
    second.ok(&["--session", &sid, "reset", "IMPL-002", "--no-run"]);
    second.ok(&["pull"]);
    assert_eq!(second.trailers(&branch, "Tlv4-Decision")[0], "pick");
    assert_eq!(second.trailers(&branch, "Tlv4-Replayed")[0], theirs);
    assert_eq!(show(&second, &sid, "src/app.py"), "print('one')\n");
    assert_eq!(
        second.git(&["rev-parse", &format!("{branch}^2")]).trim(),
        commits[0].clone().unwrap(),
        "the replayed pick merges candidate 1 too"
    );
    let json = second.json(&["--session", &sid, "candidates", "IMPL-001", "--json"]);
    assert_eq!(json["picked"], 1);
    second.fsck();

    // Both sides take candidate 2 back, apart: the pick holds, made once.
    second.ok(&["push"]);
    first.ok(&["pull"]);
    first.ok(&["--session", &sid, "pick", "IMPL-001", "2", "--no-run"]);
    second.ok(&["--session", &sid, "pick", "IMPL-001", "2", "--no-run"]);
    first.ok(&["push"]);
    second.ok(&["pull"]);
    let summary = second.git(&["log", "-1", "--format=%B", &branch]);
    assert!(summary.contains("picked here too"), "{summary}");
    assert_eq!(show(&second, &sid, "src/app.py"), "print('two')\n");
    second.fsck();
}

/// A task branch someone has checked out stays where it is: the pick is recorded, the
/// session has the change, and a warning says the branch did not move.
#[test]
fn a_checked_out_task_branch_stays_where_it_is() {
    let repo = TestRepo::new();
    let sid = session(&repo);
    let commits = best_of(&repo, &sid, "completed");
    let place = tempfile::tempdir().unwrap();
    let checkout = place.path().join("impl");
    let branch = format!("tlv4/{sid}.IMPL-001");
    repo.git(&["worktree", "add", "-q", checkout.to_str().unwrap(), &branch]);
    let out = repo.tlv4(&["--session", &sid, "pick", "IMPL-001", "1", "--no-run"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "warning: {branch} was not moved to candidate 1 (it is checked out in"
        )),
        "{stderr}"
    );
    assert_eq!(
        repo.git(&["rev-parse", &branch]).trim(),
        commits[1].clone().unwrap(),
        "still candidate 2"
    );
    assert_eq!(show(&repo, &sid, "src/app.py"), "print('one')\n");
    repo.git(&["worktree", "remove", checkout.to_str().unwrap()]);
    repo.fsck();
}
