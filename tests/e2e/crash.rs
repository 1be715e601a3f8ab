//! Writers killed with SIGKILL at random points leave a healthy repository and a session that
//! reads as the state before or after the interrupted event.

use std::time::Duration;

use crate::common::TestRepo;

/// A small deterministic pseudo-random sequence (the seed is printed on failure).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, bound: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % bound
    }
}

#[test]
fn killed_writers_leave_old_or_new_state_never_a_mix() {
    let repo = TestRepo::new();
    repo.wide_pipeline(1);
    let sid = repo.start("wide", "crash me");
    let branch = format!("tlv4/{sid}");
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let mut rng = Lcg(seed);
    let lock = repo.path().join(format!(".git/refs/heads/tlv4/{sid}.lock"));
    let notes_lock = repo.path().join(format!(".git/refs/notes/tlv4/{sid}.lock"));
    let mut interrupted = 0;
    let gone = crate::common::dead_pid().to_string();
    for round in 0..40 {
        let before = repo.json(&["status", "--json"]);
        let running = before["tasks"][0]["status"] == "in_progress";
        let args: Vec<&str> = match round % 3 {
            2 => vec![
                "msg",
                "send",
                "--from",
                "executor",
                "--type",
                "impl_progress",
                "tick",
            ],
            _ if running => vec!["task", "fail", "IMPL-001"],
            _ => vec!["task", "claim", "IMPL-001", "--pid", &gone],
        };
        let mut child = repo
            .tlv4_cmd(&args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_micros(rng.next(12_000)));
        let _ = child.kill();
        let status = child.wait().unwrap();
        if status.code().is_none() {
            interrupted += 1;
        }

        repo.fsck();
        let after = repo.json(&["status", "--json"]);
        let (old, new) = (
            before["session"]["events"].as_u64().unwrap(),
            after["session"]["events"].as_u64().unwrap(),
        );
        let seq: u64 = repo.trailers(&branch, "Tlv4-Seq")[0].parse().unwrap();
        assert_eq!(seq, new, "seed {seed}: the tip commit and its tree agree");
        if new == old {
            assert_eq!(
                before["tasks"], after["tasks"],
                "seed {seed}: no event, no change"
            );
        } else {
            assert_eq!(new, old + 1, "seed {seed}: at most one event");
            let event = &repo.trailers(&branch, "Tlv4-Event")[0];
            let task_status = after["tasks"][0]["status"].as_str().unwrap();
            let expected = if event == "task_claimed" {
                "in_progress"
            } else {
                "failed"
            };
            assert_eq!(
                task_status, expected,
                "seed {seed}: the tree holds what the event says"
            );
        }
        let bus = repo.tlv4(&["msg", "list", "--json"]);
        assert!(
            bus.status.success() && !String::from_utf8_lossy(&bus.stderr).contains("warning"),
            "seed {seed}"
        );

        // A lock left by the killed writer is cleared by `resume` once it is old.
        for l in [&lock, &notes_lock] {
            if l.exists() {
                let out = std::process::Command::new("touch")
                    .args(["-d", "1 minute ago"])
                    .arg(l)
                    .output()
                    .unwrap();
                assert!(out.status.success());
                repo.ok(&["resume", "--no-run"]);
                assert!(!l.exists(), "seed {seed}: resume removes a stale lock");
            }
        }
        // A claim whose writer died after it landed belongs to a process that is gone.
        if after["tasks"][0]["status"] == "in_progress" && round % 5 == 4 {
            repo.ok(&["resume", "--no-run"]);
            assert_eq!(repo.task(&sid, "IMPL-001")["status"], "pending");
        }
    }
    assert!(interrupted > 0, "seed {seed}: no writer was killed mid-way");
}
