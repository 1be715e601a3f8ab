//! An npm project in the tester's checkout: `npm ci` from the committed lockfile, Node's own
//! counts read from its runner, nothing imported from the user's `node_modules`, the kept
//! checkout reused, and setup run again when the session changes the lockfile.

use std::path::{Path, PathBuf};

use super::{
    checkout_root, full_counts, imported_from_the_checkout, new_session, only_session, report,
    reports, start, test_record, tests_only,
};
use crate::common::{TestRepo, hermetic};

/// Whether `program --version` runs here.
pub(super) fn installed(program: &str) -> bool {
    std::process::Command::new(program)
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether the npm samples can run: `node` and `npm` are installed. Says why not.
pub(super) fn node_and_npm() -> bool {
    let ok = installed("node") && installed("npm");
    if !ok {
        eprintln!("skipped: `node` or `npm` is not installed");
    }
    ok
}

/// Runs `npm <args>` in `dir` with the repository's empty home (its own npm cache), offline:
/// the samples' only dependency is a directory of the repository.
pub(super) fn npm(repo: &TestRepo, dir: &Path, args: &[&str]) {
    let out = hermetic("npm", dir, repo.home.path())
        .args(args)
        .args(["--offline", "--no-audit", "--no-fund"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "npm {args:?} in {}: {}{}",
        dir.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The package `greet` at `version`, saying `word, <name>`.
fn greet(version: &str, word: &str) -> [(String, String); 2] {
    [
        (
            "package.json".to_owned(),
            format!(
                "{{\"name\": \"greet\", \"version\": \"{version}\", \"main\": \"index.js\"}}\n"
            ),
        ),
        (
            "index.js".to_owned(),
            format!("exports.greet = (name) => '{word}, ' + name;\n"),
        ),
    ]
}

/// `lib.js`, with `mul` right or broken.
fn lib(mul: &str) -> String {
    format!(
        "const {{ greet }} = require('greet');\n\n\
         exports.welcome = (name) => greet(name) + '!';\n\
         exports.add = (a, b) => a + b;\n\
         exports.mul = (a, b) => {mul};\n"
    )
}

/// The npm sample in `dir` of `repo` (`""`: the root): package `app` depending on
/// `vendor/greet` 1.0.0 (a `file:` dependency that `.npmrc` installs as a copy, as a registry
/// package would be), `lib.js` with `mul` broken, and four `node --test` tests. The test file
/// records where `greet` and `lib.js` resolve to (realpath) in `$TMPDIR/imports.log` (the test checkout's temporary directory). The lockfile
/// is npm's own: `npm install` writes it, in the working tree, before the commit.
pub(super) fn npm_sample(repo: &TestRepo, dir: &str) {
    let at = |rel: &str| {
        if dir.is_empty() {
            rel.to_owned()
        } else {
            format!("{dir}/{rel}")
        }
    };
    repo.write(&at(".gitignore"), "node_modules/\n");
    repo.write(&at(".npmrc"), "install-links=true\n");
    repo.write(
        &at("package.json"),
        "{\n  \"name\": \"app\",\n  \"version\": \"1.0.0\",\n  \"private\": true,\n  \
         \"scripts\": { \"test\": \"node --test\" },\n  \
         \"dependencies\": { \"greet\": \"file:vendor/greet\" }\n}\n",
    );
    for (name, text) in greet("1.0.0", "hello") {
        repo.write(&at(&format!("vendor/greet/{name}")), &text);
    }
    repo.write(&at("lib.js"), &lib("a + b"));
    repo.write(
        &at("test/lib.test.js"),
        "const test = require('node:test');\n\
         const assert = require('node:assert');\n\
         const fs = require('node:fs');\n\
         const os = require('node:os');\n\
         const path = require('node:path');\n\
         const lib = require('../lib');\n\n\
         for (const [what, name] of [['greet', 'greet'], ['lib.js', '../lib']]) {\n\
         \x20 fs.appendFileSync(path.join(os.tmpdir(), 'imports.log'),\n\
         \x20   what + ' ' + fs.realpathSync(require.resolve(name)) + '\\n');\n\
         }\n\n\
         test('welcome greets', () => assert.strictEqual(lib.welcome('ann'), 'hello, ann!'));\n\
         test('greet is the version the lockfile pins', () => {\n\
         \x20 const lock = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'package-lock.json'), 'utf8'));\n\
         \x20 assert.strictEqual(require('greet/package.json').version, lock.packages['node_modules/greet'].version);\n\
         });\n\
         test('add', () => assert.strictEqual(lib.add(3, 4), 7));\n\
         test('mul', () => assert.strictEqual(lib.mul(3, 4), 12));\n",
    );
    npm(repo, &repo.path().join(dir), &["install"]);
    assert!(repo.path().join(at("package-lock.json")).is_file());
}

/// The user's working tree, as someone who works on it has it: `mul` fixed but not
/// committed, and a `node_modules` of their own with `greet` 2.0.0, which says `hi`. Tests
/// that imported it would fail `welcome` and the version check.
fn users_own_node_modules(repo: &TestRepo) {
    repo.write("lib.js", &lib("a * b"));
    for (name, text) in greet("2.0.0", "hi") {
        repo.write(&format!("node_modules/greet/{name}"), &text);
    }
}

/// A code agent that copies the files under `from/<kind>/` into its checkout, where `<kind>`
/// is its task's prefix (`FIX` for a fix iteration, `IMPL` for a code task).
fn copying_agent(repo: &TestRepo, from: &Path) -> PathBuf {
    let program = repo.home.path().join("bin/copy-agent");
    std::fs::create_dir_all(program.parent().unwrap()).unwrap();
    std::fs::write(
        &program,
        format!(
            "#!/usr/bin/env python3\nimport json, os, shutil, sys\nsys.stdin.read()\n\
             src = os.path.join({from:?}, os.environ['TLV4_TASK'].split('-')[0])\nchanged = []\n\
             for root, _, files in os.walk(src):\n\
             \x20   for name in files:\n\
             \x20       rel = os.path.relpath(os.path.join(root, name), src)\n\
             \x20       os.makedirs(os.path.dirname(rel) or '.', exist_ok=True)\n\
             \x20       shutil.copyfile(os.path.join(root, name), rel)\n\
             \x20       changed.append(rel)\n\
             r = {{'summary': 'copied', 'state_update': {{'key_findings': ['copied'], 'decisions': ['copy'], 'files_modified': changed, 'verification': 'none'}}}}\n\
             sys.stdout.write('Done.\\n\\n```json\\n' + json.dumps(r) + '\\n```\\n')\n",
            from = from.display().to_string()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    program
}

/// What the agent writes: a fix iteration (`FIX`) fixes `mul`; a code task (`IMPL`) fixes it
/// too and moves `greet` to 1.1.0, with the lockfile `npm install` writes for that (in a
/// scratch copy of the sample, so that the user's tree is not touched).
fn agent_changes(repo: &TestRepo) -> PathBuf {
    let patches = repo.home.path().join("patch");
    let scratch = repo.home.path().join("scratch");
    std::fs::create_dir_all(&scratch).unwrap();
    for name in ["package.json", ".npmrc"] {
        std::fs::copy(repo.path().join(name), scratch.join(name)).unwrap();
    }
    let write = |p: PathBuf, text: &str| {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    for (name, text) in greet("1.1.0", "hello") {
        write(scratch.join("vendor/greet").join(&name), &text);
        write(patches.join("IMPL/vendor/greet").join(&name), &text);
    }
    npm(repo, &scratch, &["install"]);
    let lock = std::fs::read_to_string(scratch.join("package-lock.json")).unwrap();
    assert!(lock.contains("\"version\": \"1.1.0\""), "{lock}");
    write(patches.join("IMPL/package-lock.json"), &lock);
    write(patches.join("IMPL/lib.js"), &lib("a * b"));
    write(patches.join("FIX/lib.js"), &lib("a * b"));
    patches
}

const NPM_CI: &str = "`npm ci --no-audit --no-fund --prefer-offline`";

/// The npm sample: its lockfile's setup runs in the test checkout, the counts are Node's own
/// (read from its runner's report), what the tests import is the checkout's — not the user's
/// `node_modules`, which Node's lookup through parent directories would reach from a checkout
/// inside `.git` — the fix iteration reuses the checkout without setup, and a session that
/// changes the lockfile gets setup again, and the new dependency.
#[test]
fn an_npm_project_is_set_up_from_its_lockfile_in_the_test_checkout_never_the_users_node_modules() {
    if !node_and_npm() {
        return;
    }
    let repo = TestRepo::new();
    repo.git(&["rm", "-q", "src/lib.rs"]);
    npm_sample(&repo, "");
    let changes = agent_changes(&repo);
    let agent = copying_agent(&repo, &changes);
    tests_only(
        &repo,
        &format!(
            "[agents.copy]\ndriver = \"command\"\nprogram = \"{}\"\ntimeout = \"120s\"\nreads = [\"{}\"]\n[roles]\nexecutor = \"copy\"\n",
            agent.display(),
            changes.display()
        ),
    );
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "app, with a broken mul"]);
    repo.ok(&["trust"]);
    users_own_node_modules(&repo);
    let before = repo.git(&["status", "--porcelain", "--ignored"]);

    // The base's tests: npm ci in a new test checkout, Node's counts of the base's code; then
    // the fix iteration's tests in the same checkout, setup cached.
    let out = start(&repo, "tests", "the npm tests", &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let first = only_session(&repo);
    let runs = reports(&repo, &first);
    let record = test_record(&repo, &first, 1);
    assert_eq!(
        full_counts(&record),
        (3, 1),
        "node's counts of the session's code (mul broken), with the lockfile's greet:\n{record}\n{runs:#?}\n{stderr}"
    );
    assert_eq!(record["runs"][0]["results_from"], "JUnit XML", "{record}");
    let slot = imported_from_the_checkout(&repo);
    assert_eq!(runs.len(), 2, "a run, a fix, a run:\n{stderr}\n{runs:#?}");
    assert!(runs[0].contains("new test checkout"), "{}", runs[0]);
    assert!(runs[0].contains(&format!("{NPM_CI}: ran,")), "{}", runs[0]);
    assert!(runs[1].contains("kept test checkout"), "{}", runs[1]);
    assert!(
        runs[1].contains(&format!("{NPM_CI}: cached (inputs unchanged)")),
        "{}",
        runs[1]
    );
    assert_eq!(
        full_counts(&test_record(&repo, &first, 2)),
        (4, 0),
        "{}",
        runs[1]
    );
    let root = checkout_root(&repo, &slot);
    let greet_in = |root: &Path| {
        std::fs::read_to_string(root.join("node_modules/greet/package.json")).unwrap()
    };
    assert!(
        greet_in(&root).contains("1.0.0"),
        "npm ci installed the lockfile's greet"
    );

    // A session whose code moves greet to 1.1.0 in the lockfile: setup runs again in the kept
    // checkout, and the tests see the new greet (the version test fails on a stale one).
    let out = start(&repo, "impl-tests", "greet 1.1", &[]);
    let second = new_session(&repo, std::slice::from_ref(&first));
    let text = report(&repo, &second);
    assert!(text.contains("kept test checkout"), "{text}");
    assert!(
        text.contains(&format!("{NPM_CI}: ran,")),
        "the changed lockfile re-runs setup:\n{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        full_counts(&test_record(&repo, &second, 1)),
        (4, 0),
        "{text}"
    );
    assert_eq!(imported_from_the_checkout(&repo), slot, "the same checkout");
    assert!(greet_in(&root).contains("1.1.0"));

    // The user's tree is as they left it, their node_modules included.
    assert_eq!(repo.git(&["status", "--porcelain", "--ignored"]), before);
    assert!(greet_in(repo.path()).contains("2.0.0"));
    repo.fsck();
}

/// A stand-in for Mocha, installed as the package `mocha` from `vendor/mocha`: it loads the
/// `--require`d modules and the spec files and directories named on its command line (a
/// directory's own `.js` files, as Mocha without `--recursive`), runs their `it` tests, writes
/// an xunit report where `--reporter-option output=…` says, and prints its arguments and
/// whether npm started it (`npm_command`, which npx sets) to the run's log.
const FAKE_MOCHA: &str = r#"#!/usr/bin/env node
const fs = require('fs');
const path = require('path');
const args = process.argv.slice(2);
const requires = [], specs = [];
let output = null;
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  if (a === '--require' || a === '-r') requires.push(args[++i]);
  else if (a === '--reporter-option') { const v = args[++i]; if (v.startsWith('output=')) output = v.slice(7); }
  else if (a === '--reporter') i++;
  else if (!a.startsWith('-')) specs.push(a);
}
console.log('fake-mocha ' + JSON.stringify({ args, npm: process.env.npm_command || null }));
const tests = [];
global.it = (name, fn) => tests.push({ name, fn });
for (const r of requires) require(path.resolve(r));
for (const s of specs) {
  const files = fs.statSync(s).isDirectory()
    ? fs.readdirSync(s).filter((f) => f.endsWith('.js')).sort().map((f) => path.join(s, f))
    : [s];
  for (const f of files) require(path.resolve(f));
}
let failures = 0;
const cases = tests.map((t) => {
  try { t.fn(); return '<testcase classname="app" name="' + t.name + '"/>'; }
  catch (e) { failures++; return '<testcase classname="app" name="' + t.name + '"><failure message="failed"/></testcase>'; }
});
const xml = '<testsuite name="Mocha Tests" tests="' + tests.length + '" failures="' + failures +
  '" errors="0" skipped="0">\n' + cases.join('\n') + '\n</testsuite>\n';
if (output) fs.writeFileSync(output, xml); else process.stdout.write(xml);
process.exit(failures ? 1 : 0);
"#;

/// A Mocha project whose `test` script needs its options (`--require test/support/env` sets
/// the global its tests read): the detected runner runs from the test checkout's
/// `node_modules/.bin`, not through npx, for the affected tests and for the suite, and the
/// affected tests' command keeps the script's options, with the changed file's test in place
/// of the script's `test/`.
#[test]
fn a_mocha_project_runs_its_own_runner_and_its_affected_tests_keep_the_scripts_options() {
    if !node_and_npm() {
        return;
    }
    let lib =
        |mul: &str| format!("exports.add = (a, b) => a + b;\nexports.mul = (a, b) => {mul};\n");
    let repo = TestRepo::new();
    repo.git(&["rm", "-q", "src/lib.rs"]);
    repo.write(".gitignore", "node_modules/\n");
    repo.write(".npmrc", "install-links=true\n");
    repo.write(
        "package.json",
        "{\n  \"name\": \"app\",\n  \"version\": \"1.0.0\",\n  \"private\": true,\n  \
         \"scripts\": { \"test\": \"mocha --require test/support/env --check-leaks test/\" },\n  \
         \"devDependencies\": { \"mocha\": \"file:vendor/mocha\" }\n}\n",
    );
    repo.write(
        "vendor/mocha/package.json",
        "{\"name\": \"mocha\", \"version\": \"0.0.1\", \"bin\": {\"mocha\": \"bin/mocha.js\"}}\n",
    );
    repo.write("vendor/mocha/bin/mocha.js", FAKE_MOCHA);
    repo.write("lib.js", &lib("a + b"));
    repo.write("test/support/env.js", "global.answer = 42;\n");
    let imports = "const fs = require('node:fs');\nconst os = require('node:os');\nconst path = require('node:path');\n\
                   fs.appendFileSync(path.join(os.tmpdir(), 'imports.log'), 'lib.js ' + fs.realpathSync(require.resolve('../lib')) + '\\n');\n";
    repo.write(
        "test/lib.test.js",
        &format!(
            "const assert = require('node:assert');\nconst lib = require('../lib');\n{imports}\n\
             it('add', () => assert.strictEqual(lib.add(3, 4), 7));\n\
             it('mul', () => assert.strictEqual(lib.mul(3, 4), 12));\n\
             it('sees the required setup', () => assert.strictEqual(answer, 42));\n"
        ),
    );
    repo.write(
        "test/other.test.js",
        "const assert = require('node:assert');\n\
         it('one', () => assert.strictEqual(1, 1));\n\
         it('two', () => assert.strictEqual(answer / 21, 2));\n",
    );
    npm(&repo, repo.path(), &["install"]);
    let patches = repo.home.path().join("patch");
    std::fs::create_dir_all(patches.join("IMPL")).unwrap();
    std::fs::write(patches.join("IMPL/lib.js"), lib("a * b")).unwrap();
    let agent = copying_agent(&repo, &patches);
    tests_only(
        &repo,
        &format!(
            "[agents.copy]\ndriver = \"command\"\nprogram = \"{}\"\ntimeout = \"120s\"\nreads = [\"{}\"]\n[roles]\nexecutor = \"copy\"\n",
            agent.display(),
            patches.display()
        ),
    );
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "app, tested with mocha, mul broken"]);
    repo.ok(&["trust"]);

    // The code task fixes lib.js: its test file runs first, then the suite.
    let out = start(&repo, "impl-tests", "fix mul", &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let sid = only_session(&repo);
    let text = report(&repo, &sid);
    let record = test_record(&repo, &sid, 1);
    let runs = record["runs"].as_array().unwrap();
    assert_eq!(
        runs.len(),
        2,
        "affected, then full:\n{record}\n{text}\n{stderr}"
    );
    let xunit = "--reporter xunit --reporter-option output=";
    let affected = &runs[0];
    assert_eq!(affected["scope"], "affected", "{record}");
    assert!(
        affected["command"].as_str().unwrap().starts_with(&format!(
            "node_modules/.bin/mocha --require test/support/env --check-leaks test/lib.test.js {xunit}"
        )),
        "the checkout's own mocha, the script's options, the changed file's test:\n{record}"
    );
    assert_eq!(
        (&affected["passed"], &affected["failed"]),
        (&3.into(), &0.into()),
        "{record}"
    );
    assert_eq!(affected["results_from"], "JUnit XML", "{record}");
    let full = &runs[1];
    assert!(
        full["command"].as_str().unwrap().starts_with(&format!(
            "node_modules/.bin/mocha --require test/support/env --check-leaks test/ {xunit}"
        )),
        "{record}"
    );
    assert_eq!(full_counts(&record), (5, 0), "{record}\n{text}");
    assert!(
        text.contains("runner: the checkout's own, without npx: `node_modules/.bin/mocha "),
        "{text}"
    );
    // What the runner was given, and that npm did not start it.
    for (run, spec) in [(affected, "test/lib.test.js"), (full, "test/")] {
        let log = repo.git(&[
            "show",
            &format!(
                "tlv4/{sid}:.tlv4/sessions/{sid}/{}",
                run["log"].as_str().unwrap()
            ),
        ]);
        let line = log
            .lines()
            .find_map(|l| l.strip_prefix("fake-mocha "))
            .unwrap_or_else(|| panic!("the runner's line:\n{log}"));
        let seen: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(
            seen["npm"],
            serde_json::Value::Null,
            "not through npx: {line}"
        );
        assert_eq!(
            seen["args"].as_array().unwrap()[..4],
            ["--require", "test/support/env", "--check-leaks", spec],
            "{line}"
        );
    }
    imported_from_the_checkout(&repo);
    repo.fsck();
}
