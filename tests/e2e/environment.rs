//! The project's environment in the tester's checkouts: the tests count the session's code,
//! in an environment made from what the session's base declares, never the user's active
//! virtualenv or working tree; kept checkouts are reused, and setup runs again only when its
//! inputs change.

use std::path::Path;

use crate::common::{TestRepo, hermetic};

/// A pipeline of one test task, with the setup and test command `config` sets.
fn tests_only(repo: &TestRepo, config: &str) {
    repo.write(
        ".tlv4/specs/pipelines.toml",
        "schema = 1\n[role.tester]\nprefix = \"TEST\"\ninner_loop = false\nsummary = \"x\"\n\
         [role.supervisor]\nprefix = \"CHECKPOINT\"\ninner_loop = false\ncheckpoint = true\nsummary = \"x\"\n\
         [task.TEST-001]\nrole = \"tester\"\nphase = \"validation\"\npriority = \"P0\"\npurpose = \"p\"\nsuccess = \"s\"\nsteps = []\nexpected = \"e\"\nconstraints = \"c\"\n\
         [pipeline.tests]\nsummary = \"tests\"\ntasks = [{ id = \"TEST-001\" }]\n",
    );
    repo.write(".tlv4.toml", config);
}

/// A src-layout package `calcpkg` whose tests check `add` and that every module of the
/// package they imported lives under the directory the tests run in (realpath).
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
        "import os\nimport sys\nimport unittest\n\nimport calcpkg\n\n\n\
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
fn users_venv(repo: &TestRepo) -> std::path::PathBuf {
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

fn report(repo: &TestRepo, sid: &str) -> String {
    repo.git(&[
        "show",
        &format!("tlv4/{sid}:.tlv4/sessions/{sid}/artifacts/test-report.md"),
    ])
}

fn only_session(repo: &TestRepo) -> String {
    repo.rows(&["list", "--json"], "sessions")[0]["id"]
        .as_str()
        .unwrap()
        .to_owned()
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
    repo.fsck();
}
