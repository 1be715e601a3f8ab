//! Detecting a repository's setup from its lockfiles and manifests.
//!
//! A *project* is a directory that declares how its dependencies are installed: a JavaScript
//! lockfile, a Python lockfile or manifest, a `Cargo.lock` or `go.sum`. Each project gives one
//! [`Step`] run in its directory, so a Python backend in `backend/` and a Node frontend in
//! `frontend/` give two. Projects are searched to [`MAX_DEPTH`] directories below the root,
//! outside hidden, vendored, generated and sample trees ([`skipped`]). A project covers its
//! subtree: a JavaScript one covers the packages its workspaces name (one install at the root,
//! not one per package), but not a nested directory with a lockfile of its own that its
//! workspaces leave out; a Python one covers everything below it (one virtualenv).
//!
//! What cannot be read (a manifest that is not UTF-8, TOML or JSON that does not parse) never
//! stops detection: the step is given when its command does not depend on what was unread
//! (`uv sync --frozen` without the test groups, `npm ci`), else left out (see each rule).

use std::collections::BTreeSet;

use super::{Ecosystem, Step};
use crate::process::quote;

/// How deep a project may sit: its directory has at most this many components.
pub const MAX_DEPTH: usize = 3;

/// Directory names never searched, besides hidden ones and [`crate::config::GENERATED_DIRS`]:
/// vendored code, and documentation, examples and test fixtures, whose own dependencies the
/// project's tests do not need.
const SKIPPED_DIRS: [&str; 10] = [
    "vendor",
    "third_party",
    "bower_components",
    "fixtures",
    "__fixtures__",
    "testdata",
    "docs",
    "doc",
    "examples",
    "example",
];

/// The names of dependency groups and extras that hold what the tests need, normalized.
const TEST_GROUPS: [&str; 4] = ["test", "tests", "testing", "dev"];

/// The JavaScript lockfiles, in the order one is chosen when a directory holds several and
/// `package.json` names no `packageManager` that has one.
const JS_LOCKS: [(&str, Ecosystem); 6] = [
    ("bun.lock", Ecosystem::Bun),
    ("bun.lockb", Ecosystem::Bun),
    ("pnpm-lock.yaml", Ecosystem::Pnpm),
    ("yarn.lock", Ecosystem::Yarn),
    ("npm-shrinkwrap.json", Ecosystem::Npm),
    ("package-lock.json", Ecosystem::Npm),
];

/// The base requirements file of a project: the first of these present.
const BASE_REQUIREMENTS: [&str; 2] = ["requirements.txt", "requirements/base.txt"];
/// The test requirements files: every one present.
const TEST_REQUIREMENTS: [&str; 11] = [
    "requirements-test.txt",
    "requirements_test.txt",
    "requirements-tests.txt",
    "requirements_tests.txt",
    "test-requirements.txt",
    "test_requirements.txt",
    "tests-requirements.txt",
    "requirements/test.txt",
    "requirements/tests.txt",
    "requirements/testing.txt",
    "tests/requirements.txt",
];
/// The development requirements files: every one present, when there is no test one.
const DEV_REQUIREMENTS: [&str; 6] = [
    "requirements-dev.txt",
    "requirements_dev.txt",
    "dev-requirements.txt",
    "dev_requirements.txt",
    "requirements/dev.txt",
    "requirements/development.txt",
];

/// The setup steps the files of a tree declare, ordered by directory (the root first), then
/// by ecosystem. `paths` lists every file of the tree (`/`-separated, from the root); `read`
/// gives a file's content (`None`: it cannot be read, taken as unreadable).
pub fn detect(paths: &[&str], read: &dyn Fn(&str) -> Option<Vec<u8>>) -> Vec<Step> {
    let tree = Tree {
        all: paths.iter().copied().collect(),
        read,
    };
    let mut steps = js(&tree);
    steps.extend(python(&tree));
    steps.extend(shared(&tree));
    for step in &mut steps {
        step.inputs.sort();
        step.inputs.dedup();
    }
    steps.sort_by(|a, b| (a.dir.as_str(), a.ecosystem()).cmp(&(b.dir.as_str(), b.ecosystem())));
    steps
}

/// Whether a directory called `name` is left out of the search.
pub fn skipped(name: &str) -> bool {
    name.starts_with('.')
        || SKIPPED_DIRS.contains(&name)
        || crate::config::GENERATED_DIRS.contains(&name)
}

/// The tree detection reads.
struct Tree<'a> {
    all: BTreeSet<&'a str>,
    read: &'a dyn Fn(&str) -> Option<Vec<u8>>,
}

/// A manifest read and parsed: absent, present but unreadable, or its content.
enum Parsed<T> {
    Absent,
    Bad,
    Good(T),
}

impl<T> Parsed<T> {
    fn good(&self) -> Option<&T> {
        match self {
            Parsed::Good(t) => Some(t),
            _ => None,
        }
    }
}

impl<'a> Tree<'a> {
    fn has(&self, path: &str) -> bool {
        self.all.contains(path)
    }

    /// The file at `path` as text; `None` when absent, unreadable or not UTF-8.
    fn text(&self, path: &str) -> Option<String> {
        if !self.has(path) {
            return None;
        }
        String::from_utf8((self.read)(path)?).ok()
    }

    fn parse<T>(&self, path: &str, parse: impl Fn(&str) -> Option<T>) -> Parsed<T> {
        if !self.has(path) {
            return Parsed::Absent;
        }
        match self.text(path).as_deref().and_then(parse) {
            Some(t) => Parsed::Good(t),
            None => Parsed::Bad,
        }
    }

    fn toml(&self, path: &str) -> Parsed<toml::Table> {
        self.parse(path, |t| toml::from_str(t).ok())
    }

    fn json(&self, path: &str) -> Parsed<serde_json::Value> {
        self.parse(path, |t| {
            serde_json::from_str(t)
                .ok()
                .filter(serde_json::Value::is_object)
        })
    }

    /// The searched directories holding `rel` (a file name, or a path like
    /// `requirements/test.txt`), shallowest first, then by path.
    fn dirs_with(&self, rel: &str) -> Vec<&'a str> {
        let mut dirs: Vec<&'a str> = self
            .all
            .iter()
            .filter_map(|p| {
                if *p == rel {
                    Some("")
                } else {
                    p.strip_suffix(rel)?.strip_suffix('/')
                }
            })
            .filter(|d| searched(d))
            .collect();
        by_depth(&mut dirs);
        dirs
    }

    /// The files under `dir` whose path below it satisfies `keep`, outside skipped trees.
    fn files_under(&self, dir: &str, keep: impl Fn(&str) -> bool) -> Vec<String> {
        self.all
            .iter()
            .filter_map(|p| Some((*p, below(p, dir)?)))
            .filter(|(_, rel)| {
                let parts: Vec<&str> = rel.split('/').collect();
                parts[..parts.len() - 1].iter().all(|d| !skipped(d)) && keep(rel)
            })
            .map(|(p, _)| p.to_owned())
            .collect()
    }

    /// `dir/name` for each of `names` present.
    fn present(&self, dir: &str, names: &[&str]) -> Vec<String> {
        names
            .iter()
            .map(|n| join(dir, n))
            .filter(|p| self.has(p))
            .collect()
    }
}

/// Whether projects are looked for in `dir`.
fn searched(dir: &str) -> bool {
    dir.is_empty() || {
        let parts: Vec<&str> = dir.split('/').collect();
        parts.len() <= MAX_DEPTH && parts.iter().all(|p| !skipped(p))
    }
}

fn depth(dir: &str) -> usize {
    if dir.is_empty() {
        0
    } else {
        dir.split('/').count()
    }
}

fn by_depth(dirs: &mut Vec<&str>) {
    dirs.sort_by(|a, b| (depth(a), *a).cmp(&(depth(b), *b)));
    dirs.dedup();
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_owned()
    } else {
        format!("{dir}/{name}")
    }
}

/// `path` relative to `dir`, when it is strictly below it.
fn below<'p>(path: &'p str, dir: &str) -> Option<&'p str> {
    if dir.is_empty() {
        Some(path).filter(|p| !p.is_empty())
    } else {
        path.strip_prefix(dir)?
            .strip_prefix('/')
            .filter(|r| !r.is_empty())
    }
}

fn tools(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(p, how)| ((*p).to_owned(), (*how).to_owned()))
        .collect()
}

/// A name of a dependency group, an extra or a package, normalized (PEP 503: lower case,
/// runs of `-`, `_` and `.` as one `-`).
fn normalize(name: &str) -> String {
    let mut out = String::new();
    for c in name.trim().chars() {
        if matches!(c, '-' | '_' | '.') {
            if !out.ends_with('-') {
                out.push('-');
            }
        } else {
            out.extend(c.to_lowercase());
        }
    }
    out
}

/// The keys of `table` that name what the tests need (`test`, `tests`, `testing`, `dev`).
fn test_names(table: Option<&toml::Value>) -> Vec<String> {
    table
        .and_then(toml::Value::as_table)
        .map(|t| {
            t.keys()
                .filter(|k| TEST_GROUPS.contains(&normalize(k).as_str()))
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// The value at `path` (`["tool", "uv", "workspace"]`) of a TOML table.
fn at<'t>(table: Option<&'t toml::Table>, path: &[&str]) -> Option<&'t toml::Value> {
    let (first, rest) = path.split_first()?;
    let mut value = table?.get(*first)?;
    for key in rest {
        value = value.as_table()?.get(*key)?;
    }
    Some(value)
}

fn strings(value: Option<&toml::Value>) -> Vec<String> {
    value
        .and_then(toml::Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------------------
// Workspace patterns

/// Whether `rel` (a directory, relative to the workspace root) is one of the workspace's
/// packages, or inside one.
fn in_workspace(patterns: &[String], rel: &str) -> bool {
    let parts: Vec<&str> = rel.split('/').collect();
    (1..=parts.len()).any(|n| member(patterns, &parts[..n].join("/")))
}

/// Whether the directory `rel` is one of the workspace's packages: a pattern of `patterns`
/// matches it and no `!pattern` does.
fn member(patterns: &[String], rel: &str) -> bool {
    patterns.iter().any(|p| !p.starts_with('!') && glob(p, rel))
        && !patterns
            .iter()
            .filter_map(|p| p.strip_prefix('!'))
            .any(|p| glob(p, rel))
}

/// Whether the directory `path` matches the workspace glob `pattern` (`packages/*`,
/// `apps/**`, `./tools/cli/`).
fn glob(pattern: &str, path: &str) -> bool {
    let pattern = pattern
        .trim()
        .trim_start_matches("./")
        .trim_end_matches('/');
    let pattern = pattern.strip_suffix("/package.json").unwrap_or(pattern);
    let pats: Vec<&str> = pattern.split('/').filter(|s| !s.is_empty()).collect();
    let parts: Vec<&str> = path.split('/').collect();
    segments(&pats, &parts)
}

fn segments(pats: &[&str], parts: &[&str]) -> bool {
    match pats.split_first() {
        None => parts.is_empty(),
        Some((&"**", rest)) => (0..=parts.len()).any(|i| segments(rest, &parts[i..])),
        Some((p, rest)) => parts
            .split_first()
            .is_some_and(|(part, others)| wildcard(p, part) && segments(rest, others)),
    }
}

/// `*` and `?` within one path segment.
fn wildcard(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    // The classic two-pointer match with backtracking to the last `*`.
    let (mut i, mut j, mut star, mut mark) = (0, 0, None, 0);
    while j < n.len() {
        if i < p.len() && (p[i] == '?' || p[i] == n[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some(i);
            mark = j;
            i += 1;
        } else if let Some(s) = star {
            i = s + 1;
            mark += 1;
            j = mark;
        } else {
            return false;
        }
    }
    p[i..].iter().all(|c| *c == '*')
}

// ---------------------------------------------------------------------------------------
// JavaScript

/// A JavaScript project found so far: its directory and its workspace patterns (`None` when
/// they could not be read: it then covers its whole subtree).
struct JsRoot<'a> {
    dir: &'a str,
    workspaces: Option<Vec<String>>,
}

/// The JavaScript steps: one per directory with a lockfile, or with a `package.json` that
/// declares dependencies and no lockfile (npm), unless a project above covers it.
fn js(tree: &Tree<'_>) -> Vec<Step> {
    let mut dirs: Vec<&str> = JS_LOCKS
        .iter()
        .flat_map(|(lock, _)| tree.dirs_with(lock))
        .chain(tree.dirs_with("package.json"))
        .collect();
    by_depth(&mut dirs);
    let mut roots: Vec<JsRoot<'_>> = Vec::new();
    let mut steps = Vec::new();
    for dir in dirs {
        let locked = JS_LOCKS.iter().any(|(l, _)| tree.has(&join(dir, l)));
        let covered = roots.iter().any(|r| {
            below(dir, r.dir).is_some_and(|rel| {
                // Without a lockfile, a package.json below a project is one of its packages
                // or a sample: never a project of its own.
                !locked
                    || match &r.workspaces {
                        None => true,
                        Some(patterns) => in_workspace(patterns, rel),
                    }
            })
        });
        if covered {
            continue;
        }
        let manifest = tree.json(&join(dir, "package.json"));
        let workspaces = workspaces(tree, dir, &manifest);
        if let Some(step) = js_step(tree, dir, &manifest, workspaces.as_deref()) {
            steps.push(step);
            roots.push(JsRoot { dir, workspaces });
        }
    }
    steps
}

/// The workspace patterns of the project in `dir`: `pnpm-workspace.yaml`'s `packages`, else
/// `package.json`'s `workspaces` (a list, or an object with `packages`); none declared is an
/// empty list, `None` when the file that would say cannot be read.
fn workspaces(
    tree: &Tree<'_>,
    dir: &str,
    manifest: &Parsed<serde_json::Value>,
) -> Option<Vec<String>> {
    let pnpm = join(dir, "pnpm-workspace.yaml");
    if tree.has(&pnpm) {
        return tree.text(&pnpm).map(|t| pnpm_packages(&t));
    }
    let m = match manifest {
        Parsed::Absent => return Some(Vec::new()),
        Parsed::Bad => return None,
        Parsed::Good(m) => m,
    };
    let list = match &m["workspaces"] {
        serde_json::Value::Array(a) => a,
        serde_json::Value::Object(o) => match o.get("packages") {
            Some(serde_json::Value::Array(a)) => a,
            _ => return Some(Vec::new()),
        },
        _ => return Some(Vec::new()),
    };
    Some(
        list.iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
    )
}

/// The `packages:` list of a `pnpm-workspace.yaml` (block or flow style), read line by line:
/// the file is small and its shape fixed.
fn pnpm_packages(text: &str) -> Vec<String> {
    let unquote = |s: &str| {
        s.trim()
            .trim_matches(|c| c == '\'' || c == '"')
            .trim()
            .to_owned()
    };
    let mut out = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        let code = line.split(" #").next().unwrap_or("").trim_end();
        if code.trim().is_empty() || code.trim_start().starts_with('#') {
            continue;
        }
        if !code.starts_with([' ', '\t', '-']) {
            inside = false;
            if let Some(rest) = code.strip_prefix("packages:") {
                let rest = rest.trim();
                match rest.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
                    Some(flow) => {
                        out.extend(flow.split(',').map(unquote).filter(|s| !s.is_empty()))
                    }
                    None => inside = rest.is_empty(),
                }
            }
            continue;
        }
        if inside && let Some(item) = code.trim_start().strip_prefix('-') {
            let item = unquote(item);
            if !item.is_empty() {
                out.push(item);
            }
        }
    }
    out
}

/// The package manager `package.json` names (`"packageManager": "pnpm@9.1.0"`): its name
/// and major version.
fn package_manager(manifest: &Parsed<serde_json::Value>) -> Option<(String, Option<u64>)> {
    let text = manifest.good()?["packageManager"].as_str()?;
    let (name, version) = text.split_once('@').unwrap_or((text, ""));
    let major = version
        .split(['.', '+', '-'])
        .next()
        .and_then(|m| m.parse().ok());
    Some((name.trim().to_owned(), major))
}

fn manager_of(eco: Ecosystem) -> &'static str {
    match eco {
        Ecosystem::Pnpm => "pnpm",
        Ecosystem::Yarn | Ecosystem::YarnBerry => "yarn",
        Ecosystem::Bun => "bun",
        _ => "npm",
    }
}

/// Whether `package.json` declares anything to install.
fn declares_dependencies(manifest: &serde_json::Value) -> bool {
    ["dependencies", "devDependencies", "optionalDependencies"]
        .iter()
        .any(|k| manifest[*k].as_object().is_some_and(|o| !o.is_empty()))
}

/// The step of the JavaScript project in `dir`.
///
/// The lockfile decides the package manager (`packageManager` breaks a tie between several).
/// A `yarn.lock` is Yarn 1 with `# yarn lockfile v1`, berry with `__metadata:`; one that
/// cannot be read is berry when `packageManager` says yarn 2 or later or a `.yarnrc.yml` is
/// there, else Yarn 1 (berry takes `--frozen-lockfile` too, as a deprecated `--immutable`).
/// Without a lockfile, a `package.json` that declares dependencies (or workspaces) gets
/// `npm install` writing no lockfile, unless `packageManager` names another manager; one that
/// cannot be read gets nothing.
fn js_step(
    tree: &Tree<'_>,
    dir: &str,
    manifest: &Parsed<serde_json::Value>,
    workspaces: Option<&[String]>,
) -> Option<Step> {
    let pm = package_manager(manifest);
    let locks: Vec<(&str, Ecosystem)> = JS_LOCKS
        .iter()
        .copied()
        .filter(|(l, _)| tree.has(&join(dir, l)))
        .collect();
    let chosen = pm
        .as_ref()
        .and_then(|(name, _)| locks.iter().find(|(_, e)| manager_of(*e) == name))
        .or(locks.first())
        .copied();
    let (evidence, eco, command) = match chosen {
        Some((lock, Ecosystem::Yarn)) => {
            if yarn_berry(tree, dir, pm.as_ref()) {
                (lock, Ecosystem::YarnBerry, "yarn install --immutable")
            } else {
                (
                    lock,
                    Ecosystem::Yarn,
                    "yarn install --frozen-lockfile --non-interactive --prefer-offline",
                )
            }
        }
        Some((lock, eco)) => (
            lock,
            eco,
            match eco {
                Ecosystem::Pnpm => "pnpm install --frozen-lockfile --prefer-offline",
                Ecosystem::Bun => "bun install --frozen-lockfile",
                _ => "npm ci --no-audit --no-fund --prefer-offline",
            },
        ),
        None => {
            let m = manifest.good()?;
            let has_workspaces = workspaces.is_some_and(|w| !w.is_empty());
            if !(declares_dependencies(m) || has_workspaces)
                || pm.as_ref().is_some_and(|(name, _)| name != "npm")
            {
                return None;
            }
            (
                "package.json",
                Ecosystem::Npm,
                "npm install --no-audit --no-fund --no-package-lock",
            )
        }
    };
    let configs: &[&str] = match eco {
        Ecosystem::Pnpm => &[".npmrc", "pnpm-workspace.yaml", ".pnpmfile.cjs"],
        Ecosystem::Yarn => &[".npmrc", ".yarnrc"],
        Ecosystem::YarnBerry => &[".yarnrc.yml"],
        Ecosystem::Bun => &[".npmrc", "bunfig.toml"],
        _ => &[".npmrc"],
    };
    let mut inputs = vec![join(dir, evidence)];
    inputs.extend(tree.present(dir, &["package.json"]));
    inputs.extend(tree.present(dir, configs));
    if eco == Ecosystem::YarnBerry {
        // The Yarn release and plugins a berry project keeps run as the install.
        inputs.extend(tree.files_under(&join(dir, ".yarn"), |rel| {
            rel.starts_with("releases/") || rel.starts_with("plugins/")
        }));
    }
    // The workspace packages' manifests: their install scripts run too.
    if let Some(patterns) = workspaces.filter(|w| !w.is_empty()) {
        inputs.extend(tree.files_under(dir, |rel| {
            rel.strip_suffix("/package.json")
                .is_some_and(|d| member(patterns, d))
        }));
    }
    let tools: &[(&str, &str)] = match eco {
        Ecosystem::Pnpm => &[("pnpm", "corepack enable pnpm, or npm install -g pnpm")],
        Ecosystem::Yarn => &[("yarn", "corepack enable yarn, or npm install -g yarn")],
        Ecosystem::YarnBerry => &[(
            "yarn",
            "corepack enable yarn (it runs the version the project pins)",
        )],
        Ecosystem::Bun => &[(
            "bun",
            "npm install -g bun, or curl -fsSL https://bun.sh/install | bash",
        )],
        _ => &[("npm", "comes with Node.js: https://nodejs.org/en/download")],
    };
    Some(Step {
        dir: dir.to_owned(),
        kind: eco.key().to_owned(),
        commands: vec![command.to_owned()],
        inputs,
        tools: self::tools(tools),
        evidence: evidence.to_owned(),
    })
}

/// Whether the `yarn.lock` in `dir` is Yarn berry's (see [`js_step`]).
fn yarn_berry(tree: &Tree<'_>, dir: &str, pm: Option<&(String, Option<u64>)>) -> bool {
    if let Some(text) = tree.text(&join(dir, "yarn.lock")) {
        if text.lines().any(|l| l.trim_end() == "__metadata:") {
            return true;
        }
        if text.lines().any(|l| l.starts_with("# yarn lockfile v1")) {
            return false;
        }
    }
    pm.is_some_and(|(name, major)| name == "yarn" && major.is_some_and(|m| m >= 2))
        || tree.has(&join(dir, ".yarnrc.yml"))
}

// ---------------------------------------------------------------------------------------
// Python

/// The Python steps: one per project directory (with `uv.lock`, `poetry.lock`,
/// `pyproject.toml`, `setup.py` or a requirements file), the shallowest covering those below.
fn python(tree: &Tree<'_>) -> Vec<Step> {
    let names = ["uv.lock", "poetry.lock", "pyproject.toml", "setup.py"];
    let mut dirs: Vec<&str> = names
        .iter()
        .chain(&BASE_REQUIREMENTS)
        .chain(&TEST_REQUIREMENTS)
        .chain(&DEV_REQUIREMENTS)
        .flat_map(|n| tree.dirs_with(n))
        .collect();
    by_depth(&mut dirs);
    let mut steps: Vec<Step> = Vec::new();
    for dir in dirs {
        if steps.iter().any(|s| below(dir, &s.dir).is_some()) {
            continue;
        }
        if let Some(step) = python_step(tree, dir) {
            steps.push(step);
        }
    }
    steps
}

/// The step of the Python project in `dir`: uv with `uv.lock`, else Poetry with
/// `poetry.lock`, else pip into `dir/.venv`.
fn python_step(tree: &Tree<'_>, dir: &str) -> Option<Step> {
    let pyproject = tree.toml(&join(dir, "pyproject.toml"));
    let table = pyproject.good();
    let manifests = tree.present(dir, &["pyproject.toml", "setup.py", "setup.cfg"]);
    if tree.has(&join(dir, "uv.lock")) {
        return Some(uv_step(tree, dir, table, manifests));
    }
    if tree.has(&join(dir, "poetry.lock")) {
        let mut command =
            "POETRY_VIRTUALENVS_IN_PROJECT=true poetry install --no-interaction".to_owned();
        let groups = test_names(at(table, &["tool", "poetry", "group"]));
        if !groups.is_empty() {
            let groups: Vec<String> = groups.iter().map(|g| quote(g)).collect();
            command.push_str(&format!(" --with {}", groups.join(",")));
        }
        let extras = test_names(at(table, &["tool", "poetry", "extras"]))
            .into_iter()
            .chain(test_names(at(table, &["project", "optional-dependencies"])));
        for e in extras.collect::<BTreeSet<_>>() {
            command.push_str(&format!(" --extras {}", quote(&e)));
        }
        let mut inputs = manifests;
        inputs.extend(tree.present(dir, &["poetry.lock", "poetry.toml"]));
        return Some(Step {
            dir: dir.to_owned(),
            kind: Ecosystem::Poetry.key().to_owned(),
            commands: vec![command],
            inputs,
            tools: tools(&[("poetry", "pipx install poetry, or pip install poetry")]),
            evidence: "poetry.lock".to_owned(),
        });
    }
    pip_step(tree, dir, &pyproject, manifests)
}

/// `uv sync --frozen` with the project's test groups and extras (all of a workspace's
/// packages at its root); a `pyproject.toml` that cannot be read gives the plain command.
fn uv_step(
    tree: &Tree<'_>,
    dir: &str,
    table: Option<&toml::Table>,
    manifests: Vec<String>,
) -> Step {
    let mut command = "uv sync --frozen".to_owned();
    let mut inputs = manifests;
    if let Some(workspace) = at(table, &["tool", "uv", "workspace"]) {
        command.push_str(" --all-packages");
        let members = strings(workspace.get("members"));
        let excluded: Vec<String> = strings(workspace.get("exclude"))
            .into_iter()
            .map(|e| format!("!{e}"))
            .collect();
        let patterns: Vec<String> = members.into_iter().chain(excluded).collect();
        inputs.extend(tree.files_under(dir, |rel| {
            ["/pyproject.toml", "/setup.py"]
                .iter()
                .any(|m| rel.strip_suffix(m).is_some_and(|d| member(&patterns, d)))
        }));
    }
    for g in test_names(at(table, &["dependency-groups"])) {
        command.push_str(&format!(" --group {}", quote(&g)));
    }
    for e in test_names(at(table, &["project", "optional-dependencies"])) {
        command.push_str(&format!(" --extra {}", quote(&e)));
    }
    inputs.extend(tree.present(dir, &["uv.lock", "uv.toml", ".python-version"]));
    Step {
        dir: dir.to_owned(),
        kind: Ecosystem::Uv.key().to_owned(),
        commands: vec![command],
        inputs,
        tools: tools(&[(
            "uv",
            "pip install uv, or curl -LsSf https://astral.sh/uv/install.sh | sh",
        )]),
        evidence: "uv.lock".to_owned(),
    }
}

/// A virtualenv at `dir/.venv` and pip: the requirements files (see [`requirement_files`]),
/// the project itself when it is installable (`pyproject.toml` with `[project]` or
/// `[build-system]`, or a `setup.py`) with its test extras, and the requirements of its test
/// dependency groups (PEP 735; pip 23 has no `--group`, so they are passed one by one). A
/// `pyproject.toml` that cannot be read makes the project not installable (pip would fail on
/// it) and gives no groups; requirements files alone still give a step.
fn pip_step(
    tree: &Tree<'_>,
    dir: &str,
    pyproject: &Parsed<toml::Table>,
    manifests: Vec<String>,
) -> Option<Step> {
    let table = pyproject.good();
    let setup_py = tree.has(&join(dir, "setup.py"));
    let packaged =
        table.is_some_and(|t| t.contains_key("project") || t.contains_key("build-system"));
    let installable = match pyproject {
        Parsed::Good(_) => packaged || setup_py,
        Parsed::Bad => false,
        Parsed::Absent => setup_py,
    };
    let extras = if installable {
        test_names(at(table, &["project", "optional-dependencies"]))
    } else {
        Vec::new()
    };
    let groups = group_requirements(at(table, &["dependency-groups"]));
    let requirements = requirement_files(tree, dir);
    if !installable && groups.is_empty() && requirements.is_empty() {
        return None;
    }
    let mut args: Vec<String> = Vec::new();
    let mut evidence: Vec<String> = Vec::new();
    for r in &requirements {
        args.push(format!("-r {}", quote(r)));
        evidence.push(r.clone());
    }
    if installable {
        args.push(if extras.is_empty() {
            "-e .".to_owned()
        } else {
            format!("-e {}", quote(&format!(".[{}]", extras.join(","))))
        });
    }
    args.extend(groups.iter().map(|g| quote(g)));
    if packaged || !groups.is_empty() {
        evidence.insert(0, "pyproject.toml".to_owned());
    } else if installable {
        evidence.insert(0, "setup.py".to_owned());
    }
    let mut inputs = manifests;
    inputs.extend(requirement_inputs(tree, dir, &requirements));
    Some(Step {
        dir: dir.to_owned(),
        kind: Ecosystem::Pip.key().to_owned(),
        commands: vec![
            "python3 -m venv .venv".to_owned(),
            format!(
                ".venv/bin/python -m pip install --disable-pip-version-check {}",
                args.join(" ")
            ),
        ],
        inputs,
        tools: tools(&[(
            "python3",
            "Python 3 with its venv module (python3-venv on Debian and Ubuntu): https://www.python.org/downloads/",
        )]),
        evidence: evidence.join(", "),
    })
}

/// The requirement strings of the test dependency groups (`[dependency-groups]` entries named
/// as [`TEST_GROUPS`]), following `{include-group = "…"}`, each once, in order.
fn group_requirements(groups: Option<&toml::Value>) -> Vec<String> {
    let Some(table) = groups.and_then(toml::Value::as_table) else {
        return Vec::new();
    };
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for name in test_names(groups) {
        collect_group(table, &name, &mut seen, &mut out);
    }
    let mut unique = BTreeSet::new();
    out.retain(|r| unique.insert(r.clone()));
    out
}

fn collect_group(
    table: &toml::Table,
    name: &str,
    seen: &mut BTreeSet<String>,
    out: &mut Vec<String>,
) {
    let key = normalize(name);
    if !seen.insert(key.clone()) {
        return;
    }
    let Some(items) = table
        .iter()
        .find(|(k, _)| normalize(k) == key)
        .and_then(|(_, v)| v.as_array())
    else {
        return;
    };
    for item in items {
        match item {
            toml::Value::String(r) if !r.trim().is_empty() => out.push(r.trim().to_owned()),
            toml::Value::Table(t) => {
                if let Some(g) = t.get("include-group").and_then(toml::Value::as_str) {
                    collect_group(table, g, seen, out);
                }
            }
            _ => {}
        }
    }
}

/// The requirements files pip installs in `dir` (relative to it): the base one
/// (`requirements.txt`, else `requirements/base.txt`) and every test one
/// (`requirements-test.txt`, `test-requirements.txt`, `requirements/test.txt`, …), or, with
/// no test one, every development one (`requirements-dev.txt`, `requirements/dev.txt`, …).
/// Others (`requirements-docs.txt`, `requirements/prod.txt`) are left to the project.
fn requirement_files(tree: &Tree<'_>, dir: &str) -> Vec<String> {
    let present = |names: &[&str]| -> Vec<String> {
        names
            .iter()
            .filter(|n| tree.has(&join(dir, n)))
            .map(|n| (*n).to_owned())
            .collect()
    };
    let mut files: Vec<String> = present(&BASE_REQUIREMENTS).into_iter().take(1).collect();
    let tests = present(&TEST_REQUIREMENTS);
    files.extend(if tests.is_empty() {
        present(&DEV_REQUIREMENTS)
    } else {
        tests
    });
    files
}

/// The repository paths of `files` (relative to `dir`) and of every file they take in with
/// `-r`/`--requirement` or `-c`/`--constraint`, transitively, when the tree has it.
fn requirement_inputs(tree: &Tree<'_>, dir: &str, files: &[String]) -> Vec<String> {
    let mut todo: Vec<String> = files.iter().map(|f| join(dir, f)).collect();
    let mut seen = BTreeSet::new();
    while let Some(path) = todo.pop() {
        if !tree.has(&path) || !seen.insert(path.clone()) {
            continue;
        }
        let Some(text) = tree.text(&path) else {
            continue;
        };
        let base = path.rsplit_once('/').map_or("", |(d, _)| d);
        for line in text.lines() {
            let line = line.split(" #").next().unwrap_or("").trim();
            let named = ["--requirement", "--constraint", "-r", "-c"]
                .iter()
                .find_map(|o| line.strip_prefix(o))
                .map(|r| r.trim_start_matches('=').trim());
            if let Some(target) = named.filter(|t| !t.is_empty() && !t.contains("://"))
                && let Some(p) = resolve(base, target)
            {
                todo.push(p);
            }
        }
    }
    seen.into_iter().collect()
}

/// `target`, a relative path written in a file of directory `base`, from the root; `None`
/// when it leaves the tree or is absolute.
fn resolve(base: &str, target: &str) -> Option<String> {
    if target.starts_with('/') {
        return None;
    }
    let mut parts: Vec<&str> = base.split('/').filter(|p| !p.is_empty()).collect();
    for part in target.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(parts.join("/"))
}

// ---------------------------------------------------------------------------------------
// Cargo and Go

/// A step without commands for each `Cargo.lock` and `go.sum`: their dependencies come from
/// caches shared between checkouts, but the inputs are recorded all the same.
fn shared(tree: &Tree<'_>) -> Vec<Step> {
    let kinds: [(&str, &str, Ecosystem, (&str, &str)); 2] = [
        (
            "Cargo.lock",
            "Cargo.toml",
            Ecosystem::Cargo,
            ("cargo", "rustup: https://rustup.rs"),
        ),
        (
            "go.sum",
            "go.mod",
            Ecosystem::Go,
            ("go", "https://go.dev/dl/"),
        ),
    ];
    let mut steps = Vec::new();
    for (lock, manifest, eco, tool) in kinds {
        for dir in tree.dirs_with(lock) {
            steps.push(Step {
                dir: dir.to_owned(),
                kind: eco.key().to_owned(),
                commands: Vec::new(),
                inputs: tree.present(dir, &[manifest, lock]),
                tools: tools(&[tool]),
                evidence: lock.to_owned(),
            });
        }
    }
    steps
}

#[cfg(test)]
mod tests;
