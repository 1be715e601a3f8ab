//! Best of N with scripted executors on a sample written here (a calculator and its
//! `unittest` suite): one candidate breaks the tests, one passes them but writes a hard-coded
//! secret (the review blocks it), one is clean — the clean one is merged, all three are kept
//! under their run refs and measured in the record; `--accept-first` starts nothing after a
//! perfect candidate; a run killed between candidates takes the finished ones as they were.

use crate::common::{TestRepo, fixture};

const CALC: &str = "def add(a, b):\n    return a + b\n";
const CLEAN: &str = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n";
const BROKEN: &str = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n";

/// The sample, its tests, and one `command` agent per candidate style, each writing
/// `app/calc.py` as given.
fn sample(agents: &[(&str, String)]) -> TestRepo {
    let repo = TestRepo::new();
    repo.wide_pipeline(1);
    repo.write("app/__init__.py", "");
    repo.write("app/calc.py", CALC);
    repo.write("tests/__init__.py", "");
    repo.write(
        "tests/test_calc.py",
        "import unittest\n\nfrom app.calc import add\n\n\nclass Calc(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n",
    );
    let mut toml =
        String::from("[tests]\ncommand = \"python3 -m unittest discover -s tests -t . -v\"\n");
    for (name, calc) in agents {
        let files = serde_json::json!({ "app/calc.py": calc }).to_string();
        toml.push_str(&format!(
            "[agents.{name}]\ndriver = \"command\"\nprogram = \"{}\"\ntimeout = \"60s\"\n\
             env = {{ SCRIPTED_MODE = \"write\", SCRIPTED_WRITE = '{files}' }}\n",
            fixture("scripted-agent"),
        ));
    }
    repo.write(".tlv4.toml", &toml);
    repo.git(&["add", "-A"]);
    repo.git(&[
        "commit",
        "-q",
        "-m",
        "calc, its tests, the candidates' agents",
    ]);
    repo.ok(&["trust"]);
    repo
}

fn secret() -> String {
    format!("{CLEAN}\n{} = \"{}\"\n", "password", "Tr0ub4dor&3xyzzy")
}

fn candidates(repo: &TestRepo, sid: &str, attempt: u32) -> serde_json::Value {
    let path = format!(".tlv4/sessions/{sid}/runs/IMPL-001/{attempt}/candidates.json");
    serde_json::from_str(&repo.git(&["show", &format!("tlv4/{sid}:{path}")])).unwrap()
}

#[test]
fn the_clean_candidate_is_merged_and_the_other_two_are_kept_and_measured() {
    let repo = sample(&[
        ("broken", BROKEN.to_owned()),
        ("leaky", secret()),
        ("clean", CLEAN.to_owned()),
    ]);
    let out = repo
        .tlv4_cmd(&[
            "start",
            "--pipeline",
            "wide",
            "--yes",
            "--completion",
            "keep",
            "--best-of",
            "broken,leaky,clean",
            "add mul",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let sid = String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap()
        .trim()
        .to_owned();
    assert_eq!(
        repo.task(&sid, "IMPL-001")["status"],
        "completed",
        "{stderr}"
    );
    // The session has the clean candidate's code.
    assert_eq!(
        repo.git(&["show", &format!("tlv4/{sid}:app/calc.py")]),
        CLEAN
    );
    // Every candidate is measured in the record, the rule with it.
    let rec = candidates(&repo, &sid, 1);
    assert_eq!(rec["picked"], 3, "{rec:#}");
    assert!(
        rec["rule"].as_str().unwrap().starts_with("tests first"),
        "{rec:#}"
    );
    let c = &rec["candidates"];
    assert_eq!(c[0]["agent"], "broken");
    assert_eq!(c[0]["tests"]["meets_target"], false, "{rec:#}");
    assert_eq!(c[0]["tests"]["failed"], 1, "{rec:#}");
    assert!(
        c[0]["tests"]["failures"].to_string().contains("test_add"),
        "{rec:#}"
    );
    assert_eq!(c[1]["tests"]["meets_target"], true, "{rec:#}");
    assert_eq!(c[1]["review"]["verdict"], "BLOCK", "{rec:#}");
    assert!(
        c[1]["review"]["blocking"]
            .to_string()
            .contains("app/calc.py"),
        "{rec:#}"
    );
    assert_eq!(c[2]["tests"]["passed"], 1, "{rec:#}");
    assert_ne!(c[2]["review"]["verdict"], "BLOCK", "{rec:#}");
    assert_eq!(c[2]["rank"], 1);
    assert!(c[2]["diff"]["added"].as_u64().unwrap() >= 3, "{rec:#}");
    // Each is kept under its own run ref, on the tip it started from.
    let refs = repo.git(&[
        "for-each-ref",
        "--format=%(refname)",
        &format!("refs/tlv4/runs/{sid}/IMPL-001/"),
    ]);
    for k in 1..=3 {
        let name = format!("refs/tlv4/runs/{sid}/IMPL-001/1-c{k}");
        assert!(refs.lines().any(|l| l == name), "{refs}");
        assert_eq!(c[k - 1]["ref"], name.as_str());
        assert_eq!(
            repo.git(&["rev-parse", &name]).trim(),
            c[k - 1]["commit"].as_str().unwrap()
        );
    }
    let leaky = repo.git(&[
        "show",
        &format!("refs/tlv4/runs/{sid}/IMPL-001/1-c2:app/calc.py"),
    ]);
    assert!(leaky.contains("Tr0ub4dor"), "{leaky}");
    // The task branch is the picked candidate; the event says which.
    assert_eq!(
        repo.git(&["rev-parse", &format!("tlv4/{sid}.IMPL-001")])
            .trim(),
        c[2]["commit"].as_str().unwrap()
    );
    let event = repo.git(&[
        "log",
        "-1",
        "--format=%B",
        "--grep=Tlv4-Picked",
        &format!("tlv4/{sid}"),
    ]);
    assert!(
        event.contains("Tlv4-Best-Of: 3") && event.contains("Tlv4-Picked: 3"),
        "{event}"
    );
    // Every candidate's spend is on record, once.
    for k in 1..=3 {
        let usage = repo.git(&[
            "show",
            &format!("tlv4/{sid}:.tlv4/sessions/{sid}/runs/IMPL-001/1/candidate-{k}/usage.json"),
        ]);
        assert!(usage.contains(&format!("\"candidate\": {k}")), "{usage}");
    }
    let files = repo.git(&["ls-tree", "-r", "--name-only", &format!("tlv4/{sid}")]);
    assert!(!files.contains("runs/IMPL-001/1/usage.json"), "{files}");
    repo.fsck();
}

#[test]
fn accept_first_starts_no_candidate_after_a_perfect_one() {
    let repo = sample(&[("clean", CLEAN.to_owned()), ("broken", BROKEN.to_owned())]);
    let out = repo
        .tlv4_cmd(&[
            "start",
            "--pipeline",
            "wide",
            "--yes",
            "--completion",
            "keep",
            "--max-parallel",
            "1",
            "--best-of",
            "clean,broken,clean",
            "--accept-first",
            "add mul",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let sid = String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap()
        .trim()
        .to_owned();
    assert_eq!(
        repo.task(&sid, "IMPL-001")["status"],
        "completed",
        "{stderr}"
    );
    let rec = candidates(&repo, &sid, 1);
    assert_eq!(rec["picked"], 1, "{rec:#}");
    assert_eq!(rec["accept_first"], true);
    for k in [1, 2] {
        let outcome = rec["candidates"][k]["outcome"].as_str().unwrap();
        assert!(outcome.starts_with("stopped: not started"), "{rec:#}");
    }
    let refs = repo.git(&["for-each-ref", "--format=%(refname)", "refs/tlv4/runs/"]);
    assert_eq!(refs.lines().count(), 1, "{refs}");
    repo.fsck();
}
