//! Real agent programs through the coordinator: trust, task worktrees merged as real merges,
//! conflicts turned into revisions, hostile agents, run records, cost, replay, reset and
//! manual revisions — all checked with git.

use std::path::Path;

use crate::common::{STALLED, TestRepo, WAITING, fixture};

/// A repository whose executor is the scripted agent with `env`, trusted, and a pipeline
/// `wide` of `n` independent IMPL tasks.
fn scripted(n: usize, env: &[(&str, &str)]) -> TestRepo {
    let repo = TestRepo::new();
    repo.wide_pipeline(n);
    let env: Vec<String> = env.iter().map(|(k, v)| format!("{k} = \"{v}\"")).collect();
    repo.write(
        ".tlv4.toml",
        &format!(
            "[agents.scripted]\ndriver = \"command\"\nprogram = \"{}\"\ntimeout = \"3s\"\nenv = {{ {} }}\n[roles]\nexecutor = \"scripted\"\n",
            fixture("scripted-agent"),
            env.join(", ")
        ),
    );
    repo.ok(&["trust"]);
    repo
}

fn start(repo: &TestRepo, text: &str, extra: &[&str]) -> String {
    let mut args = vec![
        "start",
        "--pipeline",
        "wide",
        "--yes",
        "--completion",
        "keep",
    ];
    args.extend_from_slice(extra);
    if !extra.contains(&"--max-parallel") {
        args.extend_from_slice(&["--max-parallel", "4"]);
    }
    args.push(text);
    repo.runs(&args).lines().next().unwrap().trim().to_owned()
}

fn status(repo: &TestRepo, sid: &str) -> serde_json::Value {
    repo.json(&["--session", sid, "status", "--json"])
}

fn parents(repo: &TestRepo, rev: &str) -> usize {
    repo.git(&["rev-list", "--parents", "-n", "1", rev])
        .split_whitespace()
        .count()
        - 1
}

/// Only the user's own checkout is in use (kept checkouts are idle in the pool); the user's HEAD, index and files are untouched.
fn no_checkout_left(repo: &TestRepo) {
    let list = repo.worktrees_in_use();
    assert_eq!(list.matches("worktree ").count(), 1, "{list}");
    assert_eq!(
        repo.git(&["symbolic-ref", "HEAD"]).trim(),
        "refs/heads/main"
    );
    let dirty = repo.git(&["status", "--porcelain", "--untracked-files=no"]);
    assert!(dirty.is_empty(), "{dirty}");
}

fn tip_files(repo: &TestRepo, sid: &str) -> Vec<String> {
    repo.git(&["ls-tree", "-r", "--name-only", &format!("tlv4/{sid}")])
        .lines()
        .filter(|l| !l.starts_with(".tlv4/"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_config_naming_programs_runs_only_once_trusted() {
    let repo = TestRepo::new();
    repo.wide_pipeline(1);
    repo.write(
        ".tlv4.toml",
        &format!(
            "[agents.scripted]\ndriver = \"command\"\nprogram = \"{}\"\n[roles]\nexecutor = \"scripted\"\n",
            fixture("scripted-agent")
        ),
    );
    let before = repo.snapshot();
    let err = repo.fails(&["start", "--pipeline", "wide", "--yes", "x"], 1);
    assert!(
        err.contains("not trusted yet") && err.contains("git tlv4 trust"),
        "{err}"
    );
    assert_eq!(
        repo.snapshot(),
        before,
        "an untrusted start changes nothing"
    );
    assert!(repo.ok(&["trust", "--show"]).contains("NOT trusted"));

    let out = repo.ok(&["trust"]);
    assert!(out.contains("scripted: command"), "{out}");
    assert!(repo.ok(&["trust", "--show"]).contains("is trusted"));
    // The trust lives in the repository's own config, never in a tracked file.
    assert!(
        !repo
            .git(&["config", "--local", "tlv4.trusted"])
            .trim()
            .is_empty()
    );

    // Any change to the file needs a new trust.
    repo.write(
        ".tlv4.toml",
        &format!(
            "[agents.scripted]\ndriver = \"command\"\nprogram = \"{}\"\nargs = [\"--x\"]\n[roles]\nexecutor = \"scripted\"\n",
            fixture("scripted-agent")
        ),
    );
    let err = repo.fails(&["start", "--pipeline", "wide", "--yes", "x"], 1);
    assert!(err.contains("changed since you trusted it"), "{err}");
    // A driver named on the command line needs no trust; the builtin agent none either.
    repo.ok(&[
        "start",
        "--pipeline",
        "wide",
        "--yes",
        "--agent",
        "builtin",
        "--completion",
        "keep",
        "y",
    ]);
}

#[test]
fn code_tasks_run_in_worktrees_and_merge_as_real_merges() {
    let repo = scripted(3, &[]);
    let sid = start(&repo, "three code tasks", &[]);
    let s = status(&repo, &sid);
    assert_eq!(s["session"]["status"], "completed", "{s}");
    let files = tip_files(&repo, &sid);
    for t in ["IMPL-001", "IMPL-002", "IMPL-003"] {
        assert!(files.contains(&format!("scripted-{t}.txt")), "{files:?}");
        // The completion is a merge of the task branch, whose tip is the snapshot.
        let branch = format!("tlv4/{sid}.{t}");
        let snapshot = repo.git(&["rev-parse", &branch]).trim().to_owned();
        assert_eq!(
            repo.git(&["log", "-1", "--format=%s", &snapshot]).trim(),
            format!("{t}: snapshot (executor)")
        );
        let merge = repo
            .git(&[
                "log",
                "--format=%H",
                "--grep",
                &format!("Tlv4-Merged: {snapshot}"),
                &format!("tlv4/{sid}"),
            ])
            .trim()
            .to_owned();
        assert!(!merge.is_empty(), "no merge event for {t}");
        assert_eq!(parents(&repo, &merge), 2);
        assert_eq!(
            repo.git(&["rev-parse", &format!("{merge}^2")]).trim(),
            snapshot
        );
        // The run record: prompt, answer, usage, result with the snapshot.
        let dir = format!("tlv4/{sid}:.tlv4/sessions/{sid}/runs/{t}/1");
        let prompt = repo.git(&["show", &format!("{dir}/prompt.md")]);
        assert!(prompt.contains(t), "{prompt}");
        assert!(
            repo.git(&["show", &format!("{dir}/answer.txt")])
                .contains("```json")
        );
        let usage: serde_json::Value =
            serde_json::from_str(&repo.git(&["show", &format!("{dir}/usage.json")])).unwrap();
        assert_eq!(usage["agent"], "scripted");
        let result: serde_json::Value =
            serde_json::from_str(&repo.git(&["show", &format!("{dir}/result.json")])).unwrap();
        assert_eq!(result["snapshot"]["commit"], snapshot.as_str());
    }
    let lock = repo.git(&[
        "show",
        &format!("tlv4/{sid}:.tlv4/sessions/{sid}/roles.lock"),
    ]);
    assert!(lock.contains("roles/executor.md builtin"), "{lock}");
    no_checkout_left(&repo);
    repo.fsck();

    let cost = repo.json(&["--session", &sid, "cost", "--by", "agent", "--json"]);
    assert_eq!(cost["by"]["agent"]["scripted"]["runs"], 3, "{cost}");
}

#[test]
fn parallel_tasks_that_conflict_become_revisions_that_merge() {
    let repo = scripted(
        2,
        &[
            ("SCRIPTED_FILE", "shared.txt"),
            ("SCRIPTED_MODE", "sleep"),
            ("SCRIPTED_SLEEP", "0.3"),
        ],
    );
    let sid = start(&repo, "two tasks, one file", &[]);
    let s = status(&repo, &sid);
    assert_eq!(s["session"]["status"], "completed", "{}", s["control"]);
    let ids: Vec<&str> = s["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    let revision = ids
        .iter()
        .find(|i| i.ends_with("-R1"))
        .unwrap_or_else(|| panic!("no revision in {ids:?}"));
    let original = revision.trim_end_matches("-R1");
    let t = repo.task(&sid, original);
    assert_eq!(t["status"], "failed");
    assert!(
        t["result"]["reason"]
            .as_str()
            .unwrap()
            .contains("conflicts with the session in shared.txt"),
        "{t}"
    );
    assert!(
        repo.task(&sid, revision)["description"]
            .as_str()
            .unwrap()
            .contains("merge conflict"),
    );
    // The revision redid the change on top of the other task's: its version is merged.
    let shared = repo.git(&["show", &format!("tlv4/{sid}:shared.txt")]);
    assert_eq!(shared, format!("{revision} was here\n"));
    let conflicts = repo.trailers(&format!("tlv4/{sid}"), "Tlv4-Conflict");
    assert_eq!(conflicts, ["shared.txt"]);
    let log = repo.ok(&["--session", &sid, "log"]);
    assert!(
        log.contains(&format!(
            "{original}: failed (executor)  [conflict in shared.txt]"
        )),
        "{log}"
    );
    assert!(
        log.contains(&format!("{revision}: completed (executor)  [merged ")),
        "{log}"
    );
    // The change that did not merge is kept under a ref of its own.
    let kept = format!("refs/tlv4/runs/{sid}/{original}/1");
    assert_eq!(
        repo.git(&["show", &format!("{kept}:shared.txt")]),
        format!("{original} was here\n")
    );
    no_checkout_left(&repo);
    repo.fsck();
}

#[test]
fn tasks_run_one_at_a_time_build_on_each_other() {
    let repo = scripted(2, &[("SCRIPTED_FILE", "shared.txt")]);
    let sid = start(&repo, "sequential on purpose", &["--max-parallel", "1"]);
    let s = status(&repo, &sid);
    assert_eq!(s["session"]["status"], "completed");
    // One at a time: the second forked from the first's merge, so nothing conflicted.
    assert!(
        repo.trailers(&format!("tlv4/{sid}"), "Tlv4-Conflict")
            .is_empty()
    );
    assert_eq!(s["progress"]["completed"], 2);
}

#[test]
fn hostile_agents_take_nothing_and_lose_nothing() {
    let repo = scripted(
        9,
        &[(
            "SCRIPTED_MODE",
            "IMPL-001=escape,IMPL-002=symlink,IMPL-003=dotgit,IMPL-004=binary,IMPL-005=tlv4,IMPL-006=hang,IMPL-007=crash,IMPL-008=invalid_json,IMPL-009=giant_output",
        )],
    );
    let sid = start(&repo, "hostile agents", &["--max-parallel", "9"]);
    let s = status(&repo, &sid);
    assert_eq!(s["session"]["status"], "paused", "{}", s["control"]);
    assert_eq!(s["control"]["pause"]["kind"], "stalled");
    let reason = |t: &str| {
        let t = repo.task(&sid, t);
        format!("{} {}", t["status"], t["result"]["reason"])
    };
    // Outside the worktree is not the agent's to write: the kernel refuses it (the agent
    // fails on it here), and the stray file is never in the session.
    let r = reason("IMPL-001");
    assert!(
        r.contains("failed") && r.contains("Permission denied: '../escaped-IMPL-001.txt'"),
        "{r}"
    );
    let r = reason("IMPL-002");
    assert!(
        r.contains("failed") && r.contains("leak") && r.contains("refused"),
        "{r}"
    );
    let r = reason("IMPL-003");
    assert!(r.contains("failed") && r.contains("vendor/.git"), "{r}");
    // Binary files are code like any other.
    assert!(
        reason("IMPL-004").starts_with("\"completed\""),
        "{}",
        reason("IMPL-004")
    );
    // Writes under .tlv4/ are left out; the rest is taken.
    assert!(
        reason("IMPL-005").starts_with("\"completed\""),
        "{}",
        reason("IMPL-005")
    );
    let r = reason("IMPL-006");
    assert!(
        r.contains("failed") && r.contains("did not finish within 3s"),
        "{r}"
    );
    let r = reason("IMPL-007");
    assert!(
        r.contains("failed") && r.contains("killed by signal 11"),
        "{r}"
    );
    let r = reason("IMPL-008");
    assert!(
        r.contains("failed") && r.contains("rejected 3 times"),
        "{r}"
    );
    // 3 MiB of noise before the result: the run completes, its record keeps a bounded part.
    assert!(
        reason("IMPL-009").starts_with("\"completed\""),
        "{}",
        reason("IMPL-009")
    );
    let giant = repo.git(&[
        "cat-file",
        "-s",
        &format!("tlv4/{sid}:.tlv4/sessions/{sid}/runs/IMPL-009/1/answer.txt"),
    ]);
    assert!(giant.trim().parse::<u64>().unwrap() <= 520 << 10, "{giant}");
    // The raw answer of the broken contract is kept in the run record.
    let raw = repo.git(&[
        "show",
        &format!("tlv4/{sid}:.tlv4/sessions/{sid}/runs/IMPL-008/1/answer.txt"),
    ]);
    assert!(raw.contains("\"state_update\": {,}"), "{raw}");

    let files = tip_files(&repo, &sid);
    assert!(files.contains(&"blob-IMPL-004.bin".to_owned()), "{files:?}");
    for bad in ["leak", "vendor/.git/config", "escaped-IMPL-001.txt"] {
        assert!(
            !files.iter().any(|f| f.ends_with(bad)),
            "{bad} in {files:?}"
        );
    }
    assert!(
        repo.git(&["ls-tree", "-r", "--name-only", &format!("tlv4/{sid}")])
            .lines()
            .all(|l| !l.contains("forged")),
        "a worker's .tlv4 write reached the session"
    );
    let bin = repo
        .git_cmd(&["cat-file", "blob", &format!("tlv4/{sid}:blob-IMPL-004.bin")])
        .output()
        .unwrap()
        .stdout;
    assert_eq!(bin.len(), 4096);
    no_checkout_left(&repo);
    repo.fsck();
}

#[test]
fn replay_reproduces_a_recorded_session_without_any_agent() {
    let repo = scripted(2, &[]);
    let a = start(&repo, "recorded", &[]);
    // The agent is gone: replay must not need it.
    repo.write(
        ".tlv4.toml",
        "[agents.scripted]\ndriver = \"command\"\nprogram = \"/nonexistent/agent\"\n[roles]\nexecutor = \"scripted\"\n",
    );
    let b = start(&repo, "replayed", &["--replay", &a]);
    assert_eq!(status(&repo, &b)["session"]["status"], "completed");
    for t in ["IMPL-001", "IMPL-002"] {
        let file = format!("scripted-{t}.txt");
        assert_eq!(
            repo.git(&["rev-parse", &format!("tlv4/{a}:{file}")]),
            repo.git(&["rev-parse", &format!("tlv4/{b}:{file}")])
        );
        let usage: serde_json::Value = serde_json::from_str(&repo.git(&[
            "show",
            &format!("tlv4/{b}:.tlv4/sessions/{b}/runs/{t}/1/usage.json"),
        ]))
        .unwrap();
        assert_eq!(usage["agent"], "replay");
    }
    // A task the recorded session never ran fails clearly.
    repo.wide_pipeline(3);
    let c = start(&repo, "no such records", &["--replay", &a]);
    let s = status(&repo, &c);
    assert_eq!(s["session"]["status"], "paused");
    assert!(
        s["control"]["pause"]["reason"]
            .as_str()
            .unwrap()
            .contains("no recorded run of IMPL-003"),
        "{}",
        s["control"]
    );
    repo.fsck();
}

#[test]
fn reset_reverts_and_reruns_and_manual_commits_are_adopted() {
    let repo = scripted(2, &[]);
    let sid = start(&repo, "reset me", &[]);
    let before = repo.git(&["rev-parse", &format!("tlv4/{sid}")]);

    repo.ok(&["--session", &sid, "reset", "IMPL-001", "--no-run"]);
    let reset = format!("tlv4/{sid}");
    assert_eq!(repo.trailers(&reset, "Tlv4-Event")[0], "task_reset");
    assert!(!tip_files(&repo, &sid).contains(&"scripted-IMPL-001.txt".to_owned()));
    assert!(tip_files(&repo, &sid).contains(&"scripted-IMPL-002.txt".to_owned()));
    assert_eq!(repo.task(&sid, "IMPL-001")["status"], "pending");
    // History is kept: the earlier completion is still an ancestor.
    repo.git(&["merge-base", "--is-ancestor", before.trim(), &reset]);

    // The executor's instructions changed in the working tree: the session keeps the ones it
    // was pinned to and says so.
    repo.write(".tlv4/specs/roles/executor.md", "Write the code.\n");
    repo.ok(&["trust"]);
    let out = repo.tlv4(&["--session", &sid, "resume", "--completion", "keep"]);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("differs from the one session")
            && stderr.contains("(.tlv4/specs/roles/executor.md)"),
        "{stderr}"
    );
    assert_eq!(status(&repo, &sid)["session"]["status"], "completed");
    assert!(tip_files(&repo, &sid).contains(&"scripted-IMPL-001.txt".to_owned()));
    assert_eq!(repo.task(&sid, "IMPL-001")["attempts"], 2);

    // A user fixes IMPL-002 by hand on its branch, in a checkout of their own.
    let wt = tempfile::tempdir().unwrap();
    let wt_path = wt.path().join("fix");
    repo.git(&[
        "worktree",
        "add",
        "-q",
        wt_path.to_str().unwrap(),
        &format!("tlv4/{sid}.IMPL-002"),
    ]);
    std::fs::write(wt_path.join("scripted-IMPL-002.txt"), "fixed by hand\n").unwrap();
    let git_in = |args: &[&str]| {
        let out = crate::common::hermetic("git", &wt_path, repo.home.path())
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    git_in(&["commit", "-qam", "Fix IMPL-002 by hand"]);
    let err = repo.ok(&["--session", &sid, "resume", "--completion", "keep"]);
    let _ = err;
    let tip = format!("tlv4/{sid}");
    let events = repo.trailers(&tip, "Tlv4-Event");
    assert!(events.contains(&"task_adopted".to_owned()), "{events:?}");
    assert_eq!(
        repo.git(&["show", &format!("{tip}:scripted-IMPL-002.txt")]),
        "fixed by hand\n"
    );
    let adopted = repo
        .git(&[
            "log",
            "--format=%H",
            "--grep",
            "Tlv4-Event: task_adopted",
            &tip,
        ])
        .lines()
        .next()
        .unwrap()
        .to_owned();
    assert_eq!(parents(&repo, &adopted), 2);
    assert_eq!(status(&repo, &sid)["session"]["status"], "completed");
    repo.git(&["worktree", "remove", wt_path.to_str().unwrap()]);

    // Replaying the session gives the task's work and the revision by hand together.
    let again = start(&repo, "replay the revised", &["--replay", &sid]);
    assert_eq!(status_of(&repo, &again), "completed");
    assert_eq!(
        repo.git(&["show", &format!("tlv4/{again}:scripted-IMPL-002.txt")]),
        "fixed by hand\n"
    );
    repo.fsck();
}

#[test]
fn ctrl_c_stops_the_agent_programs_too() {
    let pidfile = tempfile::NamedTempFile::new().unwrap();
    let pidpath = pidfile.path().display().to_string();
    std::fs::remove_file(&pidpath).unwrap();
    let repo = TestRepo::new();
    repo.wide_pipeline(1);
    repo.write(
        ".tlv4.toml",
        &format!(
            "[agents.scripted]\ndriver = \"command\"\nprogram = \"{}\"\ntimeout = \"10m\"\nwrites = [\"{}\"]\nenv = {{ SCRIPTED_MODE = \"hang\", FAKE_AGENT_PIDFILE = \"{pidpath}\" }}\n[roles]\nexecutor = \"scripted\"\n",
            fixture("scripted-agent"),
            std::path::Path::new(&pidpath).parent().unwrap().display()
        ),
    );
    repo.ok(&["trust"]);
    let (mut child, agent) = start_until_the_agent_runs(&repo, "hang", &pidpath);
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{status:?}");
    // SAFETY: probing a pid; 0 sends nothing.
    let alive = unsafe { libc::kill(agent, 0) } == 0;
    assert!(!alive, "the agent {agent} outlived the interrupted run");
    let sid = repo.rows(&["list", "--json"], "sessions")[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(repo.task(&sid, "IMPL-001")["status"], "pending");

    // The next run, with an agent that works, finishes and leaves no checkout behind.
    repo.write(
        ".tlv4.toml",
        &format!(
            "[agents.scripted]\ndriver = \"command\"\nprogram = \"{}\"\n[roles]\nexecutor = \"scripted\"\n",
            fixture("scripted-agent")
        ),
    );
    repo.ok(&["trust"]);
    // A session runs with the configuration it started with unless told otherwise.
    repo.ok(&["resume", "--reconfigure", "--completion", "keep"]);
    assert_eq!(status_of(&repo, &sid), "completed");
    no_checkout_left(&repo);
    repo.fsck();
}

/// Starts the `wide` pipeline in the background and waits until its agent wrote its pid to
/// `pidfile`: the coordinator and the agent's pid. The caller kills and waits for the child.
#[allow(clippy::zombie_processes)]
fn start_until_the_agent_runs(
    repo: &TestRepo,
    text: &str,
    pidfile: &str,
) -> (std::process::Child, i32) {
    let child = repo
        .tlv4_cmd(&[
            "start",
            "--pipeline",
            "wide",
            "--yes",
            "--completion",
            "keep",
            text,
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let began = std::time::Instant::now();
    loop {
        if let Some(pid) = std::fs::read_to_string(pidfile)
            .ok()
            .and_then(|t| t.split_whitespace().next()?.parse().ok())
        {
            return (child, pid);
        }
        assert!(began.elapsed().as_secs() < 60, "the agent never started");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

fn status_of(repo: &TestRepo, sid: &str) -> String {
    status(repo, sid)["session"]["status"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// A session whose run died (killed, with its agent) while the scripted agent was half done
/// with IMPL-001 (`partial-IMPL-001.txt` written, the rest not); the repository's
/// configuration is then one whose agent finishes. Returns the session id.
fn a_killed_run(repo: &TestRepo) -> String {
    let pidfile = tempfile::NamedTempFile::new().unwrap();
    let pidpath = pidfile.path().display().to_string();
    std::fs::remove_file(&pidpath).unwrap();
    repo.wide_pipeline(1);
    let config = |env: &str| {
        format!(
            "[agents.scripted]\ndriver = \"command\"\nprogram = \"{}\"\nwrites = [\"{}\"]\nenv = {{ {env} }}\n[roles]\nexecutor = \"scripted\"\n",
            fixture("scripted-agent"),
            std::path::Path::new(&pidpath).parent().unwrap().display()
        )
    };
    repo.write(
        ".tlv4.toml",
        &config(&format!(
            "SCRIPTED_MODE = \"partial_hang\", FAKE_AGENT_PIDFILE = \"{pidpath}\""
        )),
    );
    repo.ok(&["trust"]);
    let (mut child, agent) = start_until_the_agent_runs(repo, "crash", &pidpath);
    // The coordinator dies without a word; its agent with it (as a machine crash would).
    child.kill().unwrap();
    child.wait().unwrap();
    // SAFETY: signalling a process group this test started.
    unsafe { libc::kill(-agent, libc::SIGKILL) };
    let _ = std::fs::remove_file(&pidpath);
    repo.write(".tlv4.toml", &config(""));
    repo.ok(&["trust"]);
    repo.rows(&["list", "--json"], "sessions")[0]["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn work_of_a_killed_run_is_kept_and_set_aside() {
    let repo = TestRepo::new();
    let sid = a_killed_run(&repo);
    assert_eq!(repo.task(&sid, "IMPL-001")["status"], "in_progress");
    // The dead process may have held its checkout's index lock.
    let list = repo.git(&["worktree", "list", "--porcelain"]);
    let checkout = list
        .split("\n\n")
        .find(|r| r.contains(&format!("branch refs/heads/tlv4/{sid}.IMPL-001")))
        .and_then(|r| {
            r.lines()
                .next()?
                .strip_prefix("worktree ")
                .map(str::to_owned)
        })
        .expect("the dead run's checkout is still registered");
    let admin = crate::common::hermetic("git", Path::new(&checkout), repo.home.path())
        .args(["rev-parse", "--absolute-git-dir"])
        .output()
        .unwrap();
    let admin = String::from_utf8(admin.stdout).unwrap();
    std::fs::write(Path::new(admin.trim()).join("index.lock"), "").unwrap();

    // A session runs with the configuration it started with unless told otherwise.
    let out = repo.tlv4(&["resume", "--reconfigure", "--completion", "keep"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    // Its work kept, the dead run's checkout goes back to the pool warm, not removed: the
    // resumed run takes it (one agent slot, the same checkout).
    assert!(
        err.contains(&format!(
            "returned the checkout {checkout} of a process that is gone to the pool"
        )),
        "{err}"
    );
    let slots: Vec<_> = std::fs::read_dir(repo.pool_dir())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("agent-") && !n.contains('.'))
        .collect();
    assert_eq!(slots, ["agent-1"], "{err}");
    assert_eq!(status_of(&repo, &sid), "completed");
    // What the agent wrote before the crash is kept under the attempt's ref, not merged.
    let kept = format!("refs/tlv4/runs/{sid}/IMPL-001/1");
    assert_eq!(
        repo.git(&["show", &format!("{kept}:partial-IMPL-001.txt")]),
        "half done\n"
    );
    let files = tip_files(&repo, &sid);
    assert!(
        files.contains(&"scripted-IMPL-001.txt".to_owned()),
        "{files:?}"
    );
    assert!(
        !files.contains(&"partial-IMPL-001.txt".to_owned()),
        "{files:?}"
    );
    no_checkout_left(&repo);
    repo.fsck();
}

/// The scripted server and a trusted repository whose agent `local` is an `openai` driver on
/// it with `model`, plus the `.tlv4.toml` text `rest`.
fn model_server_repo(model: &str, rest: &str) -> (Server, TestRepo) {
    model_server_repo_with("", model, rest)
}

/// [`model_server_repo`] with the server in `mode` (see the server's own description).
pub(crate) fn model_server_repo_with(mode: &str, model: &str, rest: &str) -> (Server, TestRepo) {
    let server = Server::start_with(mode);
    let repo = TestRepo::new();
    repo.write(
        ".tlv4.toml",
        &format!(
            "[agents.local]\ndriver = \"openai\"\nurl = \"http://127.0.0.1:{}/v1\"\nmodel = \"{model}\"\n{rest}",
            server.port
        ),
    );
    repo.ok(&["trust"]);
    (server, repo)
}

/// The scripted OpenAI-compatible server on 127.0.0.1, killed when dropped.
pub(crate) struct Server {
    child: std::process::Child,
    pub(crate) port: u16,
    log: tempfile::NamedTempFile,
}

impl Server {
    pub(crate) fn start_with(mode: &str) -> Server {
        use std::io::BufRead;
        let log = tempfile::NamedTempFile::new().unwrap();
        let mut child = std::process::Command::new("python3")
            .arg(
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("tests/fixtures/servers/openai-server.py"),
            )
            .arg("0")
            .arg(log.path())
            .arg(mode)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().strip_prefix("port ").unwrap().parse().unwrap();
        Server { child, port, log }
    }

    pub(crate) fn requests(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(self.log.path())
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

impl Server {
    /// How many garbage chunks each endless stream wrote before its client hung up.
    pub(crate) fn garbage_written(&self) -> Vec<u64> {
        let path = format!("{}.garbage", self.log.path().display());
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .map(|l| l.parse().unwrap())
            .collect()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn an_openai_compatible_server_writes_code_and_documents() {
    let (server, repo) = model_server_repo(
        "scripted-coder",
        "timeout = \"30s\"\n[roles]\nexecutor = \"local\"\n",
    );
    repo.wide_pipeline(2);
    let sid = start(&repo, "through an http model", &[]);
    assert_eq!(status_of(&repo, &sid), "completed");
    for t in ["IMPL-001", "IMPL-002"] {
        assert_eq!(
            repo.git(&["show", &format!("tlv4/{sid}:served-{t}.txt")]),
            format!("written through the openai driver for {t}\n")
        );
        let usage: serde_json::Value = serde_json::from_str(&repo.git(&[
            "show",
            &format!("tlv4/{sid}:.tlv4/sessions/{sid}/runs/{t}/1/usage.json"),
        ]))
        .unwrap();
        assert_eq!(usage["input_tokens"], 1000, "{usage}");
        assert_eq!(usage["output_tokens"], 200, "{usage}");
        assert_eq!(usage["model"], "scripted-coder", "{usage}");
    }
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert!(
        requests
            .iter()
            .all(|r| r["body"]["model"] == "scripted-coder")
    );
    let cost = repo.json(&["--session", &sid, "cost", "--by", "model", "--json"]);
    assert_eq!(
        cost["by"]["model"]["scripted-coder"]["input_tokens"], 2000,
        "{cost}"
    );
    no_checkout_left(&repo);
    repo.fsck();
}

#[test]
fn document_roles_on_an_agent_hand_back_documents() {
    let (_server, repo) = model_server_repo("m", "");
    // Every role on the server: its documents are not what the analyst must write, so the
    // discuss round after it diverges, one revision is tried, then the session waits.
    let out = repo.stops(
        &[
            "start",
            "--pipeline",
            "spec-only",
            "--no-supervision",
            "--agent",
            "local",
            "--completion",
            "keep",
            "a spec from a model",
        ],
        WAITING,
    );
    let sid = out.lines().next().unwrap().trim().to_owned();
    let s = status(&repo, &sid);
    assert_eq!(s["session"]["status"], "paused", "{}", s["control"]);
    let tree = repo.git(&["ls-tree", "-r", "--name-only", &format!("tlv4/{sid}")]);
    for t in ["RESEARCH-001", "RESEARCH-001-R1"] {
        assert!(
            tree.contains(&format!(".tlv4/sessions/{sid}/artifacts/{t}-served.md")),
            "{tree}"
        );
        let prompt = repo.git(&[
            "show",
            &format!("tlv4/{sid}:.tlv4/sessions/{sid}/runs/{t}/1/prompt.md"),
        ]);
        assert!(prompt.contains("- Output: documents"), "{prompt}");
    }
    // Documents never touch the code: no task branch, nothing outside .tlv4/.
    assert!(!repo.git(&["branch", "--list", "tlv4/*.*"]).contains('.'));
    assert!(
        tip_files(&repo, &sid)
            .iter()
            .all(|f| f == "README.md" || f == "src/lib.rs")
    );
    no_checkout_left(&repo);
    repo.fsck();
}

#[test]
fn cli_presets_through_the_coordinator_record_their_cost() {
    let repo = TestRepo::new();
    repo.wide_pipeline(1);
    repo.write(
        ".tlv4.toml",
        &format!(
            "[agents.cc]\ndriver = \"claude\"\nprogram = \"{}\"\nmodel = \"sonnet\"\n\
             [agents.cx]\ndriver = \"codex\"\nprogram = \"{}\"\n[roles]\nexecutor = \"cc\"\n",
            fixture("fake-claude"),
            fixture("fake-codex")
        ),
    );
    repo.ok(&["trust"]);
    let a = start(&repo, "claude code does it", &[]);
    assert_eq!(status_of(&repo, &a), "completed");
    assert!(tip_files(&repo, &a).contains(&"fake-IMPL-001.txt".to_owned()));
    let cost = repo.json(&["--session", &a, "cost", "--by", "agent", "--json"]);
    let cc = &cost["by"]["agent"]["cc"];
    assert!(cc["cost_usd"].as_f64().unwrap() > 0.0, "{cost}");
    assert!(cc["input_tokens"].as_u64().unwrap() > 0, "{cost}");
    let table = repo.ok(&["--session", &a, "cost"]);
    assert!(
        table.contains("executor") && table.contains("total"),
        "{table}"
    );

    // The same task on Codex, chosen on the command line.
    let b = start(&repo, "codex does it", &["--agent", "executor=cx"]);
    assert_eq!(status_of(&repo, &b), "completed");
    assert!(tip_files(&repo, &b).contains(&"fake-IMPL-001.txt".to_owned()));
    let usage: serde_json::Value = serde_json::from_str(&repo.git(&[
        "show",
        &format!("tlv4/{b}:.tlv4/sessions/{b}/runs/IMPL-001/1/usage.json"),
    ]))
    .unwrap();
    assert_eq!(usage["agent"], "cx");
    assert!(usage["input_tokens"].as_u64().unwrap() > 0, "{usage}");
    no_checkout_left(&repo);
    repo.fsck();
}

#[test]
fn a_discuss_perspective_agent_adds_its_critique_and_its_cost() {
    let (server, repo) = model_server_repo(
        "critic-model",
        "[discuss.perspectives]\nproduct = \"local\"\n",
    );
    let out = repo.stops(
        &[
            "start",
            "--pipeline",
            "spec-only",
            "--no-supervision",
            "--yes",
            "--completion",
            "keep",
            "notes with tags",
        ],
        WAITING,
    );
    let sid = out.lines().next().unwrap().trim().to_owned();
    let discussion = repo.git(&[
        "show",
        &format!("tlv4/{sid}:.tlv4/sessions/{sid}/discussions/DISCUSS-001-discussion.md"),
    ]);
    assert!(
        discussion.contains("The served critic finds the scope unclear (agent local)"),
        "{discussion}"
    );
    let usage: serde_json::Value = serde_json::from_str(&repo.git(&[
        "show",
        &format!("tlv4/{sid}:.tlv4/sessions/{sid}/runs/RESEARCH-001/1/critic-product/usage.json"),
    ]))
    .unwrap();
    assert_eq!(usage["agent"], "local");
    assert_eq!(usage["role"], "critic");
    assert_eq!(usage["input_tokens"], 1000);
    let cost = repo.json(&["--session", &sid, "cost", "--by", "role", "--json"]);
    assert!(
        cost["by"]["role"]["critic"]["runs"].as_u64().unwrap() >= 1,
        "{cost}"
    );
    assert!(
        server
            .requests()
            .iter()
            .all(|r| r["body"]["model"] == "critic-model")
    );
    repo.fsck();
}

#[test]
fn a_task_branch_checked_out_by_the_user_is_not_moved() {
    let repo = scripted(1, &[]);
    let sid = start(&repo, "taken branch", &[]);
    let wt = tempfile::tempdir().unwrap();
    let wt_path = wt.path().join("mine");
    let branch = format!("tlv4/{sid}.IMPL-001");
    repo.git(&["worktree", "add", "-q", wt_path.to_str().unwrap(), &branch]);
    let before = repo.git(&["rev-parse", &branch]);
    repo.stops(
        &[
            "--session",
            &sid,
            "reset",
            "IMPL-001",
            "--completion",
            "keep",
        ],
        STALLED,
    );
    let s = status(&repo, &sid);
    assert_eq!(s["session"]["status"], "paused", "{}", s["control"]);
    let reason = repo.task(&sid, "IMPL-001")["result"]["reason"].to_string();
    assert!(
        reason.contains("is already checked out in") && reason.contains("hint:"),
        "{reason}"
    );
    assert_eq!(repo.git(&["rev-parse", &branch]), before);
    assert!(wt_path.join("scripted-IMPL-001.txt").exists());
    repo.git(&["worktree", "remove", wt_path.to_str().unwrap()]);
    // Once the user is done with it, a retry runs the task again.
    repo.ok(&[
        "--session",
        &sid,
        "resume",
        "--retry",
        "--completion",
        "keep",
    ]);
    assert_eq!(status_of(&repo, &sid), "completed");
    repo.fsck();
}

#[test]
fn files_over_the_configured_size_are_refused() {
    let repo = TestRepo::new();
    repo.wide_pipeline(1);
    repo.write(
        ".tlv4.toml",
        &format!(
            "[snapshot]\nmax_file_size = \"1KiB\"\n[agents.scripted]\ndriver = \"command\"\nprogram = \"{}\"\nenv = {{ SCRIPTED_MODE = \"binary\" }}\n[roles]\nexecutor = \"scripted\"\n",
            fixture("scripted-agent")
        ),
    );
    repo.ok(&["trust"]);
    let sid = start(&repo, "too big", &[]);
    let reason = repo.task(&sid, "IMPL-001")["result"]["reason"].to_string();
    assert!(
        reason.contains("blob-IMPL-001.bin") && reason.contains("1024"),
        "{reason}"
    );
    assert!(!tip_files(&repo, &sid).contains(&"blob-IMPL-001.bin".to_owned()));
    // A size that is not one is named before anything runs.
    repo.write(".tlv4.toml", "[snapshot]\nmax_file_size = \"huge\"\n");
    let err = repo.fails(&["start", "--yes", "x"], 1);
    assert!(err.contains("[snapshot] max_file_size = \"huge\""), "{err}");
    no_checkout_left(&repo);
    repo.fsck();
}

#[test]
fn agents_chosen_at_start_hold_for_later_runs() {
    let repo = TestRepo::new();
    repo.wide_pipeline(1);
    repo.write(
        ".tlv4.toml",
        &format!(
            "[agents.scripted]\ndriver = \"command\"\nprogram = \"{}\"\n",
            fixture("scripted-agent")
        ),
    );
    repo.ok(&["trust"]);
    let sid = start(
        &repo,
        "later",
        &["--agent", "executor=scripted", "--no-run"],
    );
    let s = status(&repo, &sid);
    assert_eq!(s["control"]["settings"]["agents"][0], "executor=scripted");
    // No --agent here: the session's own choice holds, not the file's builtin default.
    repo.ok(&["--session", &sid, "resume", "--completion", "keep"]);
    assert_eq!(status_of(&repo, &sid), "completed");
    assert!(tip_files(&repo, &sid).contains(&"scripted-IMPL-001.txt".to_owned()));
    repo.fsck();
}

#[test]
fn per_user_git_config_chooses_agents_and_settings() {
    let repo = TestRepo::new();
    repo.wide_pipeline(1);
    repo.write(
        ".tlv4.toml",
        &format!(
            "[session]\nmax_parallel = 5\n[agents.scripted]\ndriver = \"command\"\nprogram = \"{}\"\n",
            fixture("scripted-agent")
        ),
    );
    repo.ok(&["trust"]);
    repo.git(&["config", "tlv4.agent", "executor=scripted"]);
    repo.git(&["config", "tlv4.maxParallel", "2"]);
    let sid = start(&repo, "per user", &["--max-parallel", "2"]);
    assert_eq!(status_of(&repo, &sid), "completed");
    assert!(tip_files(&repo, &sid).contains(&"scripted-IMPL-001.txt".to_owned()));
    // Without --max-parallel, the user's value beats the file's 5.
    let out = repo.ok(&["start", "--pipeline", "wide", "--no-run", "settings"]);
    let sid = out.lines().next().unwrap().trim();
    assert_eq!(status(&repo, sid)["control"]["settings"]["max_parallel"], 2);
    // A value that makes no sense is named with its key.
    repo.git(&["config", "tlv4.maxParallel", "many"]);
    let err = repo.fails(&["start", "--pipeline", "wide", "x"], 1);
    assert!(
        err.contains("git config tlv4.maxparallel: `many` is not a number"),
        "{err}"
    );
}

#[test]
fn a_failed_code_task_fixed_by_hand_is_adopted() {
    let repo = scripted(1, &[("SCRIPTED_MODE", "write_then_fail")]);
    let sid = start(&repo, "fix it yourself", &[]);
    let t = repo.task(&sid, "IMPL-001");
    assert_eq!(t["status"], "failed", "{t}");
    // The half-done change is on the task branch (and kept under the attempt's ref).
    let branch = format!("tlv4/{sid}.IMPL-001");
    assert_eq!(
        repo.git(&["show", &format!("{branch}:scripted-IMPL-001.txt")]),
        "IMPL-001 was here\n"
    );
    let wt = tempfile::tempdir().unwrap();
    let wt_path = wt.path().join("fix");
    repo.git(&["worktree", "add", "-q", wt_path.to_str().unwrap(), &branch]);
    std::fs::write(wt_path.join("scripted-IMPL-001.txt"), "finished by hand\n").unwrap();
    let out = crate::common::hermetic("git", &wt_path, repo.home.path())
        .args(["commit", "-qam", "Finish IMPL-001"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    repo.git(&["worktree", "remove", wt_path.to_str().unwrap()]);

    let out = repo.tlv4(&["--session", &sid, "resume", "--completion", "keep"]);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("adopted 1 commit(s)"), "{stderr}");
    assert_eq!(status_of(&repo, &sid), "completed");
    let t = repo.task(&sid, "IMPL-001");
    assert_eq!(t["status"], "completed");
    assert_eq!(t["result"]["summary"], "manual revision: Finish IMPL-001");
    assert_eq!(
        repo.git(&["show", &format!("tlv4/{sid}:scripted-IMPL-001.txt")]),
        "finished by hand\n"
    );
    repo.fsck();
}

#[test]
fn replay_of_a_spec_session_gives_the_same_documents() {
    let repo = TestRepo::new();
    let args = |text: &'static str, replay: Option<&str>| {
        let mut a = vec![
            "start".to_owned(),
            "--pipeline".into(),
            "spec-only".into(),
            "--no-supervision".into(),
            "--yes".into(),
            "--completion".into(),
            "keep".into(),
        ];
        if let Some(sid) = replay {
            a.extend(["--replay".into(), sid.to_owned()]);
        }
        a.push(text.into());
        a
    };
    let run = |a: Vec<String>| {
        let refs: Vec<&str> = a.iter().map(String::as_str).collect();
        repo.runs(&refs).lines().next().unwrap().trim().to_owned()
    };
    // Each pause is approved; B's approvals replay too (the session keeps its --replay).
    let finish = |sid: &str| {
        for _ in 0..8 {
            if status_of(&repo, sid) != "paused" {
                break;
            }
            repo.runs(&["--session", sid, "approve", "--completion", "keep"]);
        }
        assert_eq!(status_of(&repo, sid), "completed");
    };
    let a = run(args("a spec for search", None));
    finish(&a);
    let b = run(args("a spec for search again", Some(&a)));
    finish(&b);
    // Every document an agent task handed back in A ends up in B, byte for byte.
    let records = repo.git(&["ls-tree", "-r", "--name-only", &format!("tlv4/{a}")]);
    let mut compared = 0;
    for path in records
        .lines()
        .filter(|p| p.ends_with("/result.json") && p.contains("/runs/"))
    {
        let record: serde_json::Value =
            serde_json::from_str(&repo.git(&["show", &format!("tlv4/{a}:{path}")])).unwrap();
        if record["agent"] != "builtin" {
            continue;
        }
        for file in record["files"].as_object().unwrap().keys() {
            let blob = |sid: &str| {
                repo.git(&[
                    "rev-parse",
                    &format!("tlv4/{sid}:.tlv4/sessions/{sid}/{file}"),
                ])
            };
            assert_eq!(blob(&b), blob(&a), "{file}");
            compared += 1;
        }
    }
    assert!(compared >= 10, "only {compared} documents compared");
    let usage: serde_json::Value = serde_json::from_str(&repo.git(&[
        "show",
        &format!("tlv4/{b}:.tlv4/sessions/{b}/runs/DRAFT-004/1/usage.json"),
    ]))
    .unwrap();
    assert_eq!(
        usage["agent"], "replay",
        "B's documents came from A's records"
    );
    repo.fsck();
}

#[test]
fn a_reviewer_agent_adds_its_opinion_and_a_stricter_verdict_counts() {
    let (_server, repo) = model_server_repo("reviewer-model", "[roles]\nreviewer = \"local\"\n");
    let out = repo.stops(
        &[
            "start",
            "--pipeline",
            "impl-only",
            "--no-supervision",
            "--yes",
            "--completion",
            "keep",
            "add a health check",
        ],
        WAITING,
    );
    let sid = out.lines().next().unwrap().trim().to_owned();
    let s = status(&repo, &sid);
    // The rules alone say CONDITIONAL (the builtin executor writes no code); the agent's
    // BLOCK is stricter, so it counts, and a blocking review pauses the session.
    assert_eq!(
        s["control"]["verdicts"]["REVIEW-001"]["verdict"], "BLOCK",
        "{}",
        s["control"]
    );
    assert_eq!(s["session"]["status"], "paused");
    let report = repo.git(&[
        "show",
        &format!("tlv4/{sid}:.tlv4/sessions/{sid}/artifacts/review-report.md"),
    ]);
    assert!(report.contains("## Second review: agent local"), "{report}");
    assert!(
        report.contains("- **critical** `src/lib.rs:1`: The served reviewer blocks this change"),
        "{report}"
    );
    // The rules' own review is still all there.
    assert!(report.contains("CONDITIONAL"), "{report}");
    let usage: serde_json::Value = serde_json::from_str(&repo.git(&[
        "show",
        &format!("tlv4/{sid}:.tlv4/sessions/{sid}/runs/REVIEW-001/1/usage.json"),
    ]))
    .unwrap();
    assert_eq!(usage["agent"], "quality+local");
    assert_eq!(usage["model"], "reviewer-model");
    no_checkout_left(&repo);
    repo.fsck();
}

/// An agent that runs commands gets its task checkout prepared with the project's setup,
/// and its commands see the checkout's environment: `python` is the checkout's virtualenv,
/// which imports the project from the checkout, never the user's active virtualenv (whose
/// editable install points at their working tree) or their `PYTHONPATH`.
#[test]
fn an_agent_that_runs_commands_works_in_a_prepared_checkout_of_its_own() {
    let repo = TestRepo::new();
    repo.wide_pipeline(1);
    repo.write(
        "pyproject.toml",
        "[project]\nname = \"calcpkg\"\nversion = \"0.1.0\"\n",
    );
    repo.write(
        "src/calcpkg/__init__.py",
        "def add(a, b):\n    return a + b\n",
    );
    repo.write(
        ".tlv4.toml",
        &format!(
            "[environment]\nsetup = [\n  \"python3 -m venv --without-pip .venv\",\n  \".venv/bin/python -c \\\"import os, site; open(os.path.join(site.getsitepackages()[0], 'calcpkg.pth'), 'w').write(os.path.abspath('src'))\\\"\",\n]\n\
             [agents.scripted]\ndriver = \"command\"\nprogram = \"{}\"\ntimeout = \"20s\"\nenv = {{ SCRIPTED_MODE = \"probe\", PROBE_MODULE = \"calcpkg\" }}\n[roles]\nexecutor = \"scripted\"\n",
            fixture("scripted-agent")
        ),
    );
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "calcpkg"]);
    repo.ok(&["trust"]);
    // The user's active virtualenv imports their working tree.
    let venv = crate::environment::users_venv(&repo);
    let path = format!(
        "{}:{}",
        venv.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = repo
        .tlv4_cmd(&[
            "start",
            "--pipeline",
            "wide",
            "--yes",
            "--completion",
            "keep",
            "probe",
        ])
        .env("VIRTUAL_ENV", &venv)
        .env("PATH", path)
        .env("PYTHONPATH", repo.path().join("src"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let sid = repo.rows(&["list", "--json"], "sessions")[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let probe = repo.git(&["show", &format!("tlv4/{sid}:scripted-IMPL-001.txt")]);
    let imported = probe
        .lines()
        .find_map(|l| l.strip_prefix("imports calcpkg from: "))
        .unwrap_or_else(|| panic!("{probe}\n{stderr}"));
    let cwd = probe.lines().find_map(|l| l.strip_prefix("cwd: ")).unwrap();
    assert!(
        Path::new(cwd).starts_with(repo.pool_dir()) && cwd.contains("/agent-"),
        "the agent runs in a pool checkout: {cwd}"
    );
    assert_eq!(
        imported,
        format!("{cwd}/src/calcpkg/__init__.py"),
        "the agent's python imports the checkout's code:\n{probe}\n{stderr}"
    );
    assert!(
        probe.contains(&format!("VIRTUAL_ENV={cwd}/.venv")),
        "{probe}"
    );
    assert!(probe.contains("PYTHONPATH=\n"), "{probe}");
    // The setup ran in the agent's checkout, and what it made is not part of the task's work.
    let files = tip_files(&repo, &sid);
    assert!(!files.iter().any(|f| f.starts_with(".venv")), "{files:?}");
    assert!(
        stderr.contains("IMPL-001: its checkout's environment: "),
        "the run says how the agent's environment was made:\n{stderr}"
    );
    repo.fsck();
}

/// Two sessions of one repository running at once never share a checkout: each task's agent
/// works in a slot of its own, leased across the two processes.
#[test]
fn two_sessions_at_once_never_share_a_checkout() {
    let repo = TestRepo::new();
    repo.wide_pipeline(1);
    repo.write(
        ".tlv4.toml",
        &format!(
            "[agents.scripted]\ndriver = \"command\"\nprogram = \"{}\"\ntimeout = \"30s\"\nenv = {{ SCRIPTED_MODE = \"probe\", SCRIPTED_SLEEP = \"2\" }}\n[roles]\nexecutor = \"scripted\"\n",
            fixture("scripted-agent")
        ),
    );
    repo.ok(&["trust"]);
    let run = |text: &str| {
        repo.tlv4_cmd(&[
            "start",
            "--pipeline",
            "wide",
            "--yes",
            "--completion",
            "keep",
            text,
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
    };
    let (one, two) = (run("one"), run("two"));
    for child in [one, two] {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let sessions = repo.rows(&["list", "--json"], "sessions");
    let cwds: Vec<String> = sessions
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let sid = s["id"].as_str().unwrap();
            let probe = repo.git(&["show", &format!("tlv4/{sid}:scripted-IMPL-001.txt")]);
            probe
                .lines()
                .find_map(|l| l.strip_prefix("cwd: "))
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(cwds.len(), 2);
    assert_ne!(cwds[0], cwds[1], "each run had a checkout of its own");
    assert!(
        cwds.iter()
            .all(|c| Path::new(c).starts_with(repo.pool_dir()) && c.contains("/agent-")),
        "{cwds:?}"
    );
    no_checkout_left(&repo);
    repo.fsck();
}

/// A run killed while its agent worked leaves its checkout leased to nobody: the next session's
/// task takes that checkout over, but only once what the dead run's agent wrote is kept under
/// the dead task's ref; none of it reaches the new task's work, and the dead session still
/// resumes and completes.
#[test]
fn a_checkout_a_killed_run_left_is_kept_before_another_session_reuses_it() {
    let repo = TestRepo::new();
    let dead = a_killed_run(&repo);
    let new = start(&repo, "after the crash", &[]);
    let new = new
        .split_whitespace()
        .find(|w| w.starts_with("TLV4-"))
        .unwrap()
        .trim_end_matches(':')
        .to_owned();
    assert_ne!(new, dead);
    assert_eq!(status_of(&repo, &new), "completed");
    // The one kept checkout was the dead run's: the new task took it over.
    let slots: Vec<_> = std::fs::read_dir(repo.pool_dir())
        .unwrap()
        .flatten()
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with("agent-") && !name.contains('.') && e.path().is_dir()
        })
        .collect();
    assert_eq!(slots.len(), 1, "{slots:?}");
    let kept = format!("refs/tlv4/runs/{dead}/IMPL-001/1");
    assert_eq!(
        repo.git(&["show", &format!("{kept}:partial-IMPL-001.txt")]),
        "half done\n",
        "the dead run's work is kept before its checkout is reused"
    );
    let files = tip_files(&repo, &new);
    assert!(
        files.contains(&"scripted-IMPL-001.txt".to_owned()),
        "{files:?}"
    );
    assert!(
        !files.contains(&"partial-IMPL-001.txt".to_owned()),
        "nothing of the dead run reaches the new task: {files:?}"
    );
    repo.ok(&[
        "--session",
        &dead,
        "resume",
        "--reconfigure",
        "--completion",
        "keep",
    ]);
    assert_eq!(status_of(&repo, &dead), "completed");
    let files = tip_files(&repo, &dead);
    assert!(
        !files.contains(&"partial-IMPL-001.txt".to_owned()),
        "{files:?}"
    );
    no_checkout_left(&repo);
    repo.fsck();
}
