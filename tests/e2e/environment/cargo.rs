//! A Cargo workspace in the tester's checkout: the tests of a member crate counted from
//! libtest's summaries (the sample keeps no `.config/nextest.toml`, so cargo-nextest does not
//! run even where it is installed), and the build kept in the checkout's own `target/` from
//! one run to the next.

use std::path::{Path, PathBuf};

use super::{full_counts, new_session, only_session, reports, start, test_record, tests_only};
use crate::common::{TestRepo, hermetic, toolchain};

/// Whether `cargo` runs here with the user's toolchain. Says why not.
fn cargo_runs(repo: &TestRepo) -> bool {
    let out = toolchain(&mut hermetic("cargo", repo.path(), repo.home.path()))
        .arg("--version")
        .output();
    let ok = out.as_ref().is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipped: `cargo` does not run here ({out:?})");
    }
    ok
}

/// A workspace of two members: `wscore` (`double`) and `wscalc` (`quadruple`, `half`, with
/// `half` broken), whose four tests live in `calc/tests/`. No `.gitignore`: the test checkout
/// keeps `target/` all the same. `Cargo.lock` is cargo's own, written offline.
fn workspace(repo: &TestRepo) {
    repo.git(&["rm", "-q", "src/lib.rs"]);
    repo.write(
        "Cargo.toml",
        "[workspace]\nmembers = [\"core\", \"calc\"]\nresolver = \"2\"\n",
    );
    repo.write(
        "core/Cargo.toml",
        "[package]\nname = \"wscore\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    );
    repo.write(
        "core/src/lib.rs",
        "pub fn double(x: i32) -> i32 {\n    x * 2\n}\n",
    );
    repo.write(
        "calc/Cargo.toml",
        "[package]\nname = \"wscalc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nwscore = { path = \"../core\" }\n",
    );
    repo.write(
        "calc/src/lib.rs",
        "pub fn quadruple(x: i32) -> i32 {\n    wscore::double(wscore::double(x))\n}\n\n\
         pub fn half(x: i32) -> i32 {\n    x / 3\n}\n",
    );
    repo.write(
        "calc/tests/calc.rs",
        "#[test]\nfn quadruple_of_two() {\n    assert_eq!(wscalc::quadruple(2), 8);\n}\n\n\
         #[test]\nfn quadruple_of_zero() {\n    assert_eq!(wscalc::quadruple(0), 0);\n}\n\n\
         #[test]\nfn quadruple_of_minus_one() {\n    assert_eq!(wscalc::quadruple(-1), -4);\n}\n\n\
         #[test]\nfn half_of_ten() {\n    assert_eq!(wscalc::half(10), 5);\n}\n",
    );
    let out = toolchain(&mut hermetic("cargo", repo.path(), repo.home.path()))
        .args(["generate-lockfile", "--offline"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The compiled library of `wscore` in the checkout at `root`, and when it was written.
fn built_core(root: &Path) -> Option<(PathBuf, std::time::SystemTime)> {
    std::fs::read_dir(root.join("target/debug/deps"))
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with("libwscore-") && name.ends_with(".rlib")
        })
        .map(|p| {
            let when = p.metadata().unwrap().modified().unwrap();
            (p, when)
        })
}

/// The checkout roots of the repository's test pool.
fn test_checkouts(repo: &TestRepo) -> Vec<PathBuf> {
    let dir = repo.pool_dir();
    let mut roots = Vec::new();
    for slot in std::fs::read_dir(dir).unwrap().flatten() {
        let name = slot.file_name().to_string_lossy().into_owned();
        if name.starts_with("test-") && slot.path().is_dir() {
            roots.extend(
                std::fs::read_dir(slot.path())
                    .unwrap()
                    .flatten()
                    .map(|e| e.path()),
            );
        }
    }
    roots
}

/// A workspace whose tests live in a member: the counts are the runner's for that member's
/// tests, and a second session reuses the kept checkout with its `target/`: nothing is
/// compiled again.
#[test]
fn a_cargo_workspace_members_tests_are_counted_and_the_kept_checkout_keeps_its_target() {
    let repo = TestRepo::new();
    if !cargo_runs(&repo) {
        return;
    }
    workspace(&repo);
    tests_only(&repo, "");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "a workspace, half broken"]);
    repo.ok(&["trust"]);
    let offline = [("CARGO_NET_OFFLINE", "true")];

    let out = start(&repo, "tests", "the workspace's tests", &offline);
    let first = only_session(&repo);
    let one = reports(&repo, &first).remove(0);
    let record = test_record(&repo, &first, 1);
    assert_eq!(
        full_counts(&record),
        (3, 1),
        "the member's tests, as the runner counted them:\n{record}\n{one}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        record["runs"][0]["command"], "cargo test --no-fail-fast",
        "{record}"
    );
    assert_eq!(
        record["runs"][0]["results_from"], "console output",
        "{record}"
    );
    assert!(one.contains("new test checkout"), "{one}");
    assert!(one.contains("cargo: nothing to install"), "{one}");
    let roots = test_checkouts(&repo);
    assert_eq!(roots.len(), 1, "{roots:?}");
    let root = &roots[0];
    let (rlib, built) = built_core(root)
        .unwrap_or_else(|| panic!("the build is in the checkout's target/: {}", root.display()));
    let log = |sid: &str| {
        repo.git(&[
            "show",
            &format!("tlv4/{sid}:.tlv4/sessions/{sid}/artifacts/test-runs/1-full.log"),
        ])
    };
    assert!(log(&first).contains("Compiling wscore"), "{}", log(&first));

    // A second session on the same base: the same checkout, its target/ kept, nothing built.
    let out = start(&repo, "tests", "the workspace's tests again", &offline);
    let second = new_session(&repo, std::slice::from_ref(&first));
    let two = reports(&repo, &second).remove(0);
    assert!(
        two.contains("kept test checkout"),
        "{two}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        full_counts(&test_record(&repo, &second, 1)),
        (3, 1),
        "{two}"
    );
    assert_eq!(test_checkouts(&repo), roots, "the same checkout");
    assert_eq!(
        built_core(root),
        Some((rlib, built)),
        "the build of the first run is kept"
    );
    let again = log(&second);
    assert!(
        !again.contains("Compiling"),
        "nothing compiled again:\n{again}"
    );
    repo.fsck();
}
