//! Many processes writing one session at once lose nothing and duplicate nothing.

use std::collections::BTreeSet;

use crate::common::TestRepo;

#[test]
fn eight_writers_lose_nothing_and_duplicate_nothing() {
    const WRITERS: usize = 8;
    const ROUNDS: usize = 4;
    let repo = TestRepo::new();
    repo.wide_pipeline(WRITERS);
    let sid = repo.start("wide", "many hands");
    std::thread::scope(|s| {
        for w in 1..=WRITERS {
            let repo = &repo;
            s.spawn(move || {
                let task = format!("IMPL-{w:03}");
                for round in 0..ROUNDS {
                    repo.ok(&["task", "claim", &task]);
                    repo.ok(&[
                        "msg",
                        "send",
                        "--from",
                        &task,
                        "--type",
                        "impl_progress",
                        "--data",
                        &format!("{{\"round\":{round}}}"),
                        "working",
                    ]);
                    repo.ok(&["task", "fail", &task, "--reason", &format!("round {round}")]);
                }
            });
        }
    });
    let branch = format!("tlv4/{sid}");
    let events = 2 + WRITERS * ROUNDS * 2;
    let count: usize = repo
        .git(&["rev-list", "--count", "--first-parent", &branch])
        .trim()
        .parse()
        .unwrap();
    assert_eq!(
        count,
        events + 1,
        "every event is one commit on top of the base"
    );
    let seqs: Vec<usize> = repo
        .trailers(&branch, "Tlv4-Seq")
        .iter()
        .map(|s| s.parse().unwrap())
        .collect();
    assert_eq!(
        seqs,
        (1..=events).rev().collect::<Vec<_>>(),
        "event numbers are contiguous and unique"
    );
    // Each (task, event, attempt) happened exactly once.
    let log = repo.rows(&["log", "--json"], "events");
    let mut seen = BTreeSet::new();
    for e in log
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["task"].is_string())
    {
        let key = (
            e["task"].to_string(),
            e["event"].to_string(),
            e["attempt"].to_string(),
        );
        assert!(seen.insert(key.clone()), "duplicate event {key:?}");
    }
    assert_eq!(seen.len(), WRITERS * ROUNDS * 2);
    let status = repo.json(&["status", "--json"]);
    for t in status["tasks"].as_array().unwrap() {
        assert_eq!(t["attempts"], ROUNDS, "{t}");
        assert_eq!(t["status"], "failed");
    }
    let messages = repo.rows(&["msg", "list", "--json"], "messages");
    let ids: BTreeSet<String> = messages
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), WRITERS * ROUNDS, "every message kept once");
    repo.fsck();
}
