//! The project's environment in the tester's checkouts: the tests count the session's code,
//! in an environment made from what the session's base declares, never the user's active
//! virtualenv or working tree; kept checkouts are reused, and setup runs again only when its
//! inputs change.
//!
//! The samples of each ecosystem are in the submodules: [`npm`] (a lockfile, `node --test`),
//! [`cargo`] (a workspace), [`bad_input`] (setups that fail, hang, or span two ecosystems).
//! Every sample's tests record where the modules they imported resolve to (realpath) in
//! `$TMPDIR/imports.log` (the test checkout's temporary directory), and [`imported_from_the_checkout`] holds them to the test checkout.

mod bad_input;
mod cargo;
mod npm;

use std::path::{Path, PathBuf};

use crate::common::{TestRepo, hermetic};

/// Two pipelines: `tests`, one test task; `impl-tests`, a code task, then the tests of its
/// result. `config` is the `.tlv4.toml` (setup, test command, agents).
pub(super) fn tests_only(repo: &TestRepo, config: &str) {
    repo.write(
        ".tlv4/specs/pipelines.toml",
        "schema = 1\n[role.tester]\nprefix = \"TEST\"\ninner_loop = false\nsummary = \"x\"\n\
         [role.executor]\nprefix = \"IMPL\"\ninner_loop = false\nsummary = \"x\"\n\
         [role.supervisor]\nprefix = \"CHECKPOINT\"\ninner_loop = false\ncheckpoint = true\nsummary = \"x\"\n\
         [task.TEST-001]\nrole = \"tester\"\nphase = \"validation\"\npriority = \"P0\"\npurpose = \"p\"\nsuccess = \"s\"\nsteps = []\nexpected = \"e\"\nconstraints = \"c\"\n\
         [task.IMPL-001]\nrole = \"executor\"\nphase = \"implementation\"\npriority = \"P0\"\npurpose = \"p\"\nsuccess = \"s\"\nsteps = []\nexpected = \"e\"\nconstraints = \"c\"\n\
         [pipeline.tests]\nsummary = \"tests\"\ntasks = [{ id = \"TEST-001\" }]\n\
         [pipeline.impl-tests]\nsummary = \"a change, then its tests\"\ntasks = [{ id = \"IMPL-001\" }, { id = \"TEST-001\", blocked_by = [\"IMPL-001\"] }]\n",
    );
    repo.write(".tlv4.toml", config);
}

/// A src-layout package `calcpkg` whose tests check `add` and that every module of the
/// package they imported lives under the directory the tests run in (realpath); the test
/// module records where `calcpkg` came from in `$TMPDIR/imports.log` (the test checkout's temporary directory) (see [`imported`]).
fn src_layout(repo: &TestRepo, add: &str) {
    repo.write(
        "pyproject.toml",
        "[build-system]\nrequires = [\"setuptools>=61\"]\nbuild-backend = \"setuptools.build_meta\"\n\n[project]\nname = \"calcpkg\"\nversion = \"0.1.0\"\n",
    );
    repo.write(
        "src/calcpkg/__init__.py",
        &format!("def add(a, b):\n    return {add}\n"),
    );
    repo.write("tests/__init__.py", "");
    repo.write(
        "tests/test_calc.py",
        "import os\nimport sys\nimport unittest\n\nimport calcpkg\n\n\
         with open(os.path.join(os.environ['TMPDIR'], 'imports.log'), 'a') as log:\n\
         \x20   log.write('calcpkg ' + os.path.realpath(calcpkg.__file__) + '\\n')\n\n\n\
         class Calc(unittest.TestCase):\n\
         \x20   def test_add(self):\n        self.assertEqual(calcpkg.add(2, 3), 5)\n\n\
         \x20   def test_add_negative(self):\n        self.assertEqual(calcpkg.add(-2, -3), -5)\n\n\
         \x20   def test_zero(self):\n        self.assertEqual(calcpkg.add(0, 0), 0)\n\n\
         \x20   def test_imported_from_here(self):\n\
         \x20       here = os.path.realpath(os.getcwd())\n\
         \x20       for name, module in list(sys.modules.items()):\n\
         \x20           if name.split('.')[0] == 'calcpkg':\n\
         \x20               where = os.path.realpath(module.__file__)\n\
         \x20               self.assertTrue(where.startswith(here + os.sep), f'{name} from {where}, not {here}')\n",
    );
}

/// The setup a src-layout project gets: a virtualenv in the checkout with the package
/// installed editable (a `.pth` naming the checkout's `src/`, which is what `pip install -e .`
/// writes; done by hand here so that the test needs no package index).
const EDITABLE_SETUP: &str = "[environment]\nsetup = [\n  \"python3 -m venv .venv\",\n  \".venv/bin/python -c \\\"import os, site; open(os.path.join(site.getsitepackages()[0], 'calcpkg-editable.pth'), 'w').write(os.path.abspath('src'))\\\"\",\n]\n[tests]\ncommand = \"python -m unittest discover -s tests -t . -v\"\n";

/// The user's own virtualenv, active, with an editable install of their working tree.
pub(crate) fn users_venv(repo: &TestRepo) -> std::path::PathBuf {
    let venv = repo.home.path().join("uservenv");
    let made = hermetic("python3", repo.path(), repo.home.path())
        .args(["-m", "venv", "--without-pip"])
        .arg(&venv)
        .status()
        .unwrap();
    assert!(made.success());
    let site = std::fs::read_dir(venv.join("lib"))
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path()
        .join("site-packages");
    std::fs::write(
        site.join("calcpkg-editable.pth"),
        repo.path().join("src").display().to_string(),
    )
    .unwrap();
    venv
}

fn start_tests(repo: &TestRepo, venv: &Path) -> std::process::Output {
    let path = format!(
        "{}:{}",
        venv.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    repo.tlv4_cmd(&[
        "start",
        "--pipeline",
        "tests",
        "--yes",
        "--completion",
        "keep",
        "run the tests",
    ])
    .env("VIRTUAL_ENV", venv)
    .env("PATH", path)
    .env("PYTHONPATH", repo.path().join("src"))
    .output()
    .unwrap()
}

/// Starts a session of `pipeline` that runs to its end or stops, with `env` over the hermetic
/// environment; the output, whatever the exit.
pub(super) fn start(
    repo: &TestRepo,
    pipeline: &str,
    text: &str,
    env: &[(&str, &str)],
) -> std::process::Output {
    let mut cmd = repo.tlv4_cmd(&[
        "start",
        "--pipeline",
        pipeline,
        "--yes",
        "--completion",
        "keep",
        text,
    ]);
    crate::common::toolchain(&mut cmd);
    cmd.envs(env.iter().copied()).output().unwrap()
}

pub(super) fn report(repo: &TestRepo, sid: &str) -> String {
    repo.git(&[
        "show",
        &format!("tlv4/{sid}:.tlv4/sessions/{sid}/artifacts/test-report.md"),
    ])
}

/// Every version of a session's test report, oldest first: one per test iteration.
pub(super) fn reports(repo: &TestRepo, sid: &str) -> Vec<String> {
    let path = format!(".tlv4/sessions/{sid}/artifacts/test-report.md");
    repo.git(&[
        "log",
        "--reverse",
        "--format=%H",
        &format!("tlv4/{sid}"),
        "--",
        &path,
    ])
    .lines()
    .map(|c| repo.git(&["show", &format!("{c}:{path}")]))
    .collect()
}

pub(super) fn only_session(repo: &TestRepo) -> String {
    repo.rows(&["list", "--json"], "sessions")[0]["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The id of the session that is not one of `known`: the one started last.
pub(super) fn new_session(repo: &TestRepo, known: &[String]) -> String {
    let sessions = repo.rows(&["list", "--json"], "sessions");
    let fresh: Vec<String> = sessions
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["id"].as_str())
        .filter(|s| !known.iter().any(|k| k == s))
        .map(str::to_owned)
        .collect();
    assert_eq!(fresh.len(), 1, "one new session: {sessions}");
    fresh[0].clone()
}

/// The record the tester wrote for iteration `n` of the session's tests
/// (`artifacts/test-runs/<n>.json`): each run's command, counts and where they were read.
pub(super) fn test_record(repo: &TestRepo, sid: &str, n: u32) -> serde_json::Value {
    let text = repo.git(&[
        "show",
        &format!("tlv4/{sid}:.tlv4/sessions/{sid}/artifacts/test-runs/{n}.json"),
    ]);
    serde_json::from_str(&text).unwrap()
}

/// `(passed, failed)` of the whole suite's run in a test record.
pub(super) fn full_counts(record: &serde_json::Value) -> (u64, u64) {
    let full = record["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["scope"] == "full")
        .unwrap_or_else(|| panic!("no full run: {record}"));
    (
        full["passed"]
            .as_u64()
            .unwrap_or_else(|| panic!("{record}")),
        full["failed"]
            .as_u64()
            .unwrap_or_else(|| panic!("{record}")),
    )
}

/// The root of the checkout in the test slot `slot` (`test-<n>`, see
/// [`imported_from_the_checkout`]): `<pool>/<slot>/<repo>/`.
pub(super) fn checkout_root(repo: &TestRepo, slot: &str) -> PathBuf {
    let dir = repo.pool_dir().join(slot);
    let mut roots: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(roots.len(), 1, "{roots:?}");
    roots.remove(0)
}

/// Where the modules the samples' tests imported resolve to (realpath), as the tests wrote
/// them to `$TMPDIR/imports.log` (the test checkout's temporary directory): `(what, path)` in order. The log is emptied, so that the next
/// call sees the next run's.
pub(super) fn imported(repo: &TestRepo) -> Vec<(String, PathBuf)> {
    // Each test checkout's temporary directory is `<pool>/test-<n>.tmp`.
    let pool = repo.pool_dir();
    let mut text = String::new();
    for entry in std::fs::read_dir(&pool).into_iter().flatten().flatten() {
        let log = entry.path().join("imports.log");
        if entry.file_name().to_string_lossy().ends_with(".tmp") && log.is_file() {
            text.push_str(&std::fs::read_to_string(&log).unwrap_or_default());
            let _ = std::fs::remove_file(&log);
        }
    }
    text.lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(what, path)| (what.to_owned(), PathBuf::from(path)))
        .collect()
}

/// The guard: every module the tests imported (and at least one) resolves inside one of the
/// repository's test checkouts, `<pool>/test-<n>/`, never in the user's working
/// tree or anywhere else. Returns the checkout's directory (`test-<n>`).
pub(super) fn imported_from_the_checkout(repo: &TestRepo) -> String {
    let seen = imported(repo);
    assert!(!seen.is_empty(), "the tests recorded no import");
    let checkouts = repo.pool_dir().canonicalize().unwrap();
    let mut slots: Vec<String> = seen
        .iter()
        .map(|(what, path)| {
            let slot = path
                .strip_prefix(&checkouts)
                .ok()
                .and_then(|rest| rest.components().next())
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .filter(|s| s.starts_with("test-"));
            slot.unwrap_or_else(|| {
                panic!(
                    "`{what}` was imported from {}, outside the test checkouts {}:\n{seen:?}",
                    path.display(),
                    checkouts.display()
                )
            })
        })
        .collect();
    slots.dedup();
    assert_eq!(slots.len(), 1, "one checkout per run: {seen:?}");
    slots.remove(0)
}

/// The click case: the session's code is broken, the user's working tree is not and is what
/// their active virtualenv imports (an editable install, and `PYTHONPATH`). The tester must
/// count the session's failures.
#[test]
fn the_tests_count_the_sessions_code_not_the_users_editable_install() {
    let repo = TestRepo::new();
    tests_only(&repo, EDITABLE_SETUP);
    src_layout(&repo, "a - b");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "calcpkg, with a broken add"]);
    let _ = repo.tlv4(&["trust"]);
    // The user's working tree has the fix, not committed; their venv imports it.
    repo.write(
        "src/calcpkg/__init__.py",
        "def add(a, b):\n    return a + b\n",
    );
    let venv = users_venv(&repo);
    let out = start_tests(&repo, &venv);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let sid = only_session(&repo);
    let report = report(&repo, &sid);
    // The runs table: | scope | command | exit | passed | failed | …
    let failed = report
        .lines()
        .find(|l| l.starts_with("| full |"))
        .and_then(|l| l.split('|').nth(5))
        .map(str::trim);
    assert_eq!(
        failed,
        Some("2"),
        "the session's two failing tests are counted:\n{report}\n{stderr}"
    );
    assert!(
        report.contains("calcpkg-editable.pth") || report.contains("python3 -m venv .venv"),
        "the report says how the environment was made:\n{report}"
    );
    assert!(!report.contains("**Verdict:** pass"), "{report}");
    // What the tests imported is the checkout's, whatever the user's venv and PYTHONPATH say.
    imported_from_the_checkout(&repo);
    repo.fsck();
}

/// With the session's code right, the same suite passes, imports from the checkout, and a
/// second run reuses the kept checkout without running setup again.
#[test]
fn a_kept_test_checkout_is_reused_and_setup_runs_only_when_its_inputs_change() {
    let repo = TestRepo::new();
    tests_only(&repo, EDITABLE_SETUP);
    src_layout(&repo, "a + b");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "calcpkg"]);
    let _ = repo.tlv4(&["trust"]);
    let venv = users_venv(&repo);
    let first = start_tests(&repo, &venv);
    let sid = only_session(&repo);
    let slot = imported_from_the_checkout(&repo);
    let one = report(&repo, &sid);
    assert!(
        one.contains("ran,"),
        "the first run makes the environment:\n{one}\n{}",
        String::from_utf8_lossy(&first.stderr)
    );
    assert!(one.contains("new test checkout"), "{one}");
    assert!(one.contains("**Verdict:** pass"), "{one}");
    // A second session on the same base: the kept checkout, no setup.
    let second = start_tests(&repo, &venv);
    let sessions = repo.rows(&["list", "--json"], "sessions");
    let other = sessions
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["id"].as_str())
        .find(|s| *s != sid)
        .unwrap_or_else(|| panic!("{}", String::from_utf8_lossy(&second.stderr)))
        .to_owned();
    let two = report(&repo, &other);
    assert!(two.contains("kept test checkout"), "{two}");
    assert!(two.contains("cached (inputs unchanged)"), "{two}");
    assert!(two.contains("**Verdict:** pass"), "{two}");
    assert_eq!(imported_from_the_checkout(&repo), slot, "the same checkout");
    repo.fsck();
}
