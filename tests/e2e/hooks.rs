//! Lifecycle hooks: executables in the git directory (or `tlv4.hooksPath`) run at pipeline
//! events with the event as JSON on stdin; a `before-*` hook's non-zero exit vetoes.

use std::path::Path;

use crate::common::{STALLED, TestRepo};

fn hook(dir: &Path, event: &str, script: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir).unwrap();
    let p = dir.join(event);
    std::fs::write(&p, script).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn status(repo: &TestRepo, sid: &str) -> serde_json::Value {
    repo.json(&["--session", sid, "status", "--json"])
}

#[test]
fn hooks_hear_every_task_and_a_before_task_hook_can_say_no() {
    let repo = TestRepo::new();
    repo.wide_pipeline(2);
    let hooks = repo.path().join(".git/tlv4/hooks");
    let log = repo.home.path().join("hooks.log");
    hook(
        &hooks,
        "before-task",
        "#!/bin/sh\ncase \"$(cat)\" in *IMPL-002*) echo \"IMPL-002 is frozen until Monday\" >&2; exit 1;; esac\n",
    );
    let append = format!(
        "#!/bin/sh\n{{ cat; echo; }} >> '{}'\necho \"heard $TLV4_HOOK $TLV4_TASK\"\n",
        log.display()
    );
    hook(&hooks, "after-task", &append);
    hook(&hooks, "completion", &append);
    let out = repo.tlv4(&[
        "start",
        "--pipeline",
        "wide",
        "--yes",
        "--completion",
        "keep",
        "hooked",
    ]);
    assert_eq!(out.status.code(), Some(STALLED), "IMPL-002 was refused");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("after-task hook: heard after-task IMPL-001"),
        "{stderr}"
    );
    let sid = String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap()
        .trim()
        .to_owned();
    let s = status(&repo, &sid);
    assert_eq!(s["session"]["status"], "paused");
    let t = repo.task(&sid, "IMPL-002");
    assert_eq!(t["status"], "failed");
    assert_eq!(
        t["result"]["reason"],
        "the before-task hook said no: IMPL-002 is frozen until Monday (exit code 1)"
    );
    assert_eq!(repo.task(&sid, "IMPL-001")["status"], "completed");

    // Monday: the hook goes, the task runs, the session completes and says so.
    std::fs::remove_file(hooks.join("before-task")).unwrap();
    repo.ok(&[
        "--session",
        &sid,
        "resume",
        "--retry",
        "--completion",
        "keep",
    ]);
    assert_eq!(status(&repo, &sid)["session"]["status"], "completed");
    let events: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let seen: Vec<String> = events
        .iter()
        .map(|e| format!("{} {} {}", e["event"], e["task"], e["status"]))
        .collect();
    // IMPL-001 and IMPL-002 run side by side in the first run: which of them is heard first
    // is up to the scheduler.
    let mut seen = seen;
    seen[..2].sort();
    assert_eq!(
        seen,
        [
            "\"after-task\" \"IMPL-001\" \"completed\"",
            "\"after-task\" \"IMPL-002\" \"failed\"",
            "\"after-task\" \"IMPL-002\" \"completed\"",
            "\"completion\" null null",
        ]
    );
    assert_eq!(events[3]["outcome"], "kept");
    assert_eq!(events[0]["session"], sid.as_str());
    repo.fsck();
}

#[test]
fn a_before_merge_hook_keeps_a_change_out_of_the_session() {
    let repo = TestRepo::new();
    repo.wide_pipeline(1);
    let agent = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agents/scripted-agent");
    repo.write(
        ".tlv4.toml",
        &format!(
            "[agents.scripted]\ndriver = \"command\"\nprogram = \"{}\"\n[roles]\nexecutor = \"scripted\"\n",
            agent.display()
        ),
    );
    repo.ok(&["trust"]);
    // Hooks where the user keeps them, named by tlv4.hooksPath.
    let hooks = repo.home.path().join("my-hooks");
    repo.git(&["config", "tlv4.hooksPath", hooks.to_str().unwrap()]);
    hook(
        &hooks,
        "before-merge",
        "#!/bin/sh\ntest -f scripted-IMPL-001.txt || exit 9\ncase \"$(cat)\" in *'\"changed\":[\"scripted-IMPL-001.txt\"]'*) echo 'no text files today' >&2; exit 2;; esac\n",
    );
    let out = repo.stops(
        &[
            "start",
            "--pipeline",
            "wide",
            "--yes",
            "--completion",
            "keep",
            "vetoed merge",
        ],
        STALLED,
    );
    let sid = out.lines().next().unwrap().trim().to_owned();
    let t = repo.task(&sid, "IMPL-001");
    assert_eq!(t["status"], "failed");
    assert_eq!(
        t["result"]["reason"],
        "the before-merge hook said no: no text files today (exit code 2)"
    );
    let tree = repo.git(&["ls-tree", "-r", "--name-only", &format!("tlv4/{sid}")]);
    assert!(!tree.contains("scripted-IMPL-001.txt"), "{tree}");
    // The change is not lost: it is kept under the attempt's ref.
    assert_eq!(
        repo.git(&[
            "show",
            &format!("refs/tlv4/runs/{sid}/IMPL-001/1:scripted-IMPL-001.txt")
        ]),
        "IMPL-001 was here\n"
    );
    repo.fsck();
}
