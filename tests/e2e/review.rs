//! `git tlv4 review` on plain commits, outside any session.

use crate::common::TestRepo;

#[test]
fn a_hard_coded_secret_is_blocked_at_its_line_and_a_clean_change_approved() {
    let repo = TestRepo::new();
    repo.write(
        "app/settings.py",
        "DEBUG = False\n\n\ndef load():\n    return {}\n",
    );
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "settings"]);
    repo.write(
        "app/settings.py",
        "DEBUG = False\n\n\ndef load():\n    return {}\n\n\npassword = \"Tr0ub4dor&3xyzzy\"\n",
    );
    repo.git(&["commit", "-q", "-am", "add a password"]);
    let out = repo.json(&["review", "HEAD", "--json"]);
    assert_eq!(out["verdict"], "BLOCK", "{out}");
    let findings = out["findings"].as_array().unwrap();
    let secret = findings
        .iter()
        .find(|f| f["severity"] == "critical" && f["dimension"] == "security")
        .unwrap_or_else(|| panic!("no critical security finding: {out}"));
    assert_eq!(secret["file"], "app/settings.py");
    assert_eq!(secret["line"], 8, "the new-side line of the secret");
    // The scores are a note on the reviewed commit.
    let note = repo.git(&["notes", "--ref=tlv4-review", "show", "HEAD"]);
    let note: serde_json::Value = serde_json::from_str(&note).unwrap();
    assert_eq!(note["verdict"], "BLOCK");

    repo.write("app/util.py", "def double(x):\n    return 2 * x\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "a helper"]);
    let out = repo.json(&["review", "HEAD", "--json"]);
    assert_eq!(out["verdict"], "APPROVE", "{out}");
    repo.fsck();
}

#[test]
fn a_bad_range_is_a_clear_error() {
    let repo = TestRepo::new();
    let err = repo.fails(&["review", "nope..HEAD"], 1);
    assert!(err.contains("nope"), "{err}");
}
