//! The process environment of a command in a prepared checkout: the checkout's own
//! installation first, nothing of the user's active environment.
//!
//! The user who starts `git tlv4` usually has a project environment active: a virtualenv or
//! conda env (often with an editable install of their own working tree), `PYTHONPATH`,
//! `NODE_PATH`, a `CARGO_TARGET_DIR` shared with their builds. Any of them would make the
//! tests import or build the user's code instead of the session's. So setup and tests run with
//! those variables removed, the PATH entries of the active environments dropped, and the
//! checkout's own `.venv/bin` and `node_modules/.bin` put first; after setup, [`check`] asks
//! the checkout's Python where the project's own packages come from and refuses a run that
//! would import them from outside the checkout.

use std::path::{Path, PathBuf};

use super::Plan;

/// Variables that point a process at an environment other than the checkout's.
pub const REMOVED: [&str; 17] = [
    "VIRTUAL_ENV",
    "VIRTUAL_ENV_PROMPT",
    "CONDA_PREFIX",
    "CONDA_DEFAULT_ENV",
    "CONDA_PYTHON_EXE",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONSTARTUP",
    "PYTHONUSERBASE",
    "PYTHONEXECUTABLE",
    "UV_PROJECT_ENVIRONMENT",
    "POETRY_ACTIVE",
    "PIPENV_ACTIVE",
    "NODE_PATH",
    "NODE_OPTIONS",
    "CARGO_TARGET_DIR",
    "GOFLAGS",
];

/// What a command in a checkout runs with: variables to set and to remove.
#[derive(Debug, Clone, Default)]
pub struct RunEnv {
    /// Set, over the inherited environment.
    pub set: Vec<(String, String)>,
    /// Removed from the inherited environment.
    pub remove: Vec<String>,
    /// The confinement commands there run under (see [`crate::sandbox`]); `None`: none.
    pub sandbox: Option<std::sync::Arc<crate::sandbox::Prepared>>,
}

/// The environment of setup and test commands in the checkout at `root` prepared by `plan`,
/// given the tool's own environment `vars` (`std::env::vars_os`, as strings).
pub fn run_env(root: &Path, plan: &Plan, vars: &[(String, String)]) -> RunEnv {
    let get = |k: &str| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    // PATH entries inside an active environment go: its interpreter is not the checkout's.
    let active: Vec<PathBuf> = ["VIRTUAL_ENV", "CONDA_PREFIX"]
        .into_iter()
        .filter_map(&get)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .collect();
    let mut path: Vec<PathBuf> = Vec::new();
    for step in &plan.steps {
        let dir = if step.dir.is_empty() {
            root.to_path_buf()
        } else {
            root.join(&step.dir)
        };
        let eco = step.ecosystem();
        if eco.is_python() || step.commands.iter().any(|c| c.contains(".venv")) {
            path.push(dir.join(".venv").join("bin"));
        }
        if eco.is_js() {
            path.push(dir.join("node_modules").join(".bin"));
        }
    }
    let mut set_venv = None;
    for p in &path {
        if p.ends_with(".venv/bin") && set_venv.is_none() {
            set_venv = p.parent().map(Path::to_path_buf);
        }
    }
    let inherited = get("PATH").unwrap_or("/usr/local/bin:/usr/bin:/bin");
    for entry in std::env::split_paths(inherited) {
        let foreign = active.iter().any(|a| entry.starts_with(a))
            || entry.ends_with("node_modules/.bin")
            || entry.ends_with(".venv/bin");
        if !foreign && !path.contains(&entry) {
            path.push(entry);
        }
    }
    let mut set = vec![
        (
            "PATH".to_owned(),
            std::env::join_paths(&path)
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_else(|_| inherited.to_owned()),
        ),
        // `pip install --user -e .` is an editable install too.
        ("PYTHONNOUSERSITE".to_owned(), "1".to_owned()),
        // Poetry makes its virtualenv in the project, where the PATH above finds it.
        (
            "POETRY_VIRTUALENVS_IN_PROJECT".to_owned(),
            "true".to_owned(),
        ),
    ];
    if let Some(v) = set_venv {
        set.push(("VIRTUAL_ENV".to_owned(), v.to_string_lossy().into_owned()));
    }
    let remove = REMOVED
        .iter()
        .filter(|k| !set.iter().any(|(s, _)| s == *k))
        .map(|k| (*k).to_owned())
        .collect();
    RunEnv {
        set,
        remove,
        sandbox: None,
    }
}

/// Checks that the checkout at `root`, prepared by `plan`, runs its own code: each Python
/// step's packages (the project's name, the packages under `src/`) import from inside the
/// checkout, and each JavaScript step's `node_modules` is inside it. Returns what was checked,
/// or why the run must not go on.
pub fn check(root: &Path, plan: &Plan, env: &RunEnv) -> Result<Vec<String>, String> {
    let real_root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let mut notes = Vec::new();
    for step in &plan.steps {
        let dir = root.join(&step.dir);
        let at = if step.dir.is_empty() {
            String::new()
        } else {
            format!(" in {}/", step.dir)
        };
        let modules = dir.join("node_modules");
        if modules.symlink_metadata().is_ok() {
            let real = std::fs::canonicalize(&modules).unwrap_or(modules.clone());
            if !real.starts_with(&real_root) {
                return Err(format!(
                    "`node_modules`{at} resolves to {}, outside the checkout: the tests would run against dependencies the session does not declare",
                    real.display()
                ));
            }
        }
        let packages = python_packages(&dir);
        if packages.is_empty() || !(step.ecosystem().is_python() || dir.join(".venv").is_dir()) {
            continue;
        }
        let python = if dir.join(".venv/bin/python").exists() {
            dir.join(".venv/bin/python")
        } else {
            PathBuf::from("python3")
        };
        let mut inv = crate::process::Invocation::new(&python, &dir);
        inv.args = vec!["-c".to_owned(), WHERE_FROM.to_owned()];
        inv.args.extend(packages.iter().cloned());
        inv.env = env.set.clone();
        inv.env_remove = env.remove.clone();
        inv.sandbox = env.sandbox.clone();
        inv.timeout = std::time::Duration::from_secs(60);
        let out = match crate::process::run(&inv) {
            Ok(o) if o.success() => o,
            Ok(o) => {
                return Err(format!(
                    "cannot ask `{}`{at} where the project's packages come from: {}",
                    python.display(),
                    o.describe_exit()
                ));
            }
            Err(e) => return Err(format!("cannot run `{}`{at}: {e}", python.display())),
        };
        for line in out.stdout.lines() {
            let Some((name, origin)) = line.split_once('\t') else {
                continue;
            };
            if origin.is_empty() {
                notes.push(format!(
                    "`import {name}`{at}: not importable before the tests set it up"
                ));
                continue;
            }
            let real = std::fs::canonicalize(origin).unwrap_or_else(|_| PathBuf::from(origin));
            if !real.starts_with(&real_root) {
                return Err(format!(
                    "`import {name}`{at} comes from {}, outside the session's checkout (an editable install or a path of your own environment?): the tests would check that code, not the session's",
                    real.display()
                ));
            }
            notes.push(format!(
                "`import {name}`{at} comes from the checkout ({})",
                real.strip_prefix(&real_root).unwrap_or(&real).display()
            ));
        }
    }
    Ok(notes)
}

/// Prints `<name>\t<real path of its origin>` for each module named on the command line.
const WHERE_FROM: &str = r#"import importlib.util, os, sys
for n in sys.argv[1:]:
    try:
        s = importlib.util.find_spec(n)
    except Exception:
        s = None
    o = ''
    if s is not None:
        o = s.origin if s.origin not in (None, 'namespace') else next(iter(s.submodule_search_locations or []), '')
    print(n + '\t' + (os.path.realpath(o) if o else ''))
"#;

/// The import names of the Python project in `dir`: the packages under `src/` and at the
/// top (folders with an `__init__.py`, not tests), and the normalized `[project] name`.
pub fn python_packages(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for base in [dir.join("src"), dir.to_path_buf()] {
        for e in std::fs::read_dir(&base).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let skip = name.starts_with('.')
                || name.starts_with("test")
                || matches!(
                    name.as_str(),
                    "docs" | "examples" | "node_modules" | "build"
                )
                || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !skip && e.path().join("__init__.py").is_file() {
                out.push(name);
            }
        }
    }
    if let Ok(text) = std::fs::read_to_string(dir.join("pyproject.toml"))
        && let Ok(doc) = text.parse::<toml::Table>()
        && let Some(name) = doc
            .get("project")
            .and_then(|p| p.get("name"))
            .and_then(|n| n.as_str())
    {
        let name = name.to_ascii_lowercase().replace(['-', '.'], "_");
        let importable = dir.join("src").join(&name).is_dir()
            || dir.join(&name).is_dir()
            || dir.join(format!("{name}.py")).is_file();
        if importable {
            out.push(name);
        }
    }
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::environment::Step;

    fn step(dir: &str, kind: &str) -> Step {
        Step {
            dir: dir.to_owned(),
            kind: kind.to_owned(),
            commands: vec!["x".to_owned()],
            inputs: Vec::new(),
            tools: Vec::new(),
            evidence: String::new(),
        }
    }

    #[test]
    fn the_users_environment_is_left_out_and_the_checkouts_comes_first() {
        let plan = Plan {
            steps: vec![step("api", "uv"), step("web", "npm")],
        };
        let vars: Vec<(String, String)> = [
            (
                "PATH",
                "/home/u/proj/.venv/bin:/opt/conda/envs/x/bin:/usr/bin:/bin",
            ),
            ("VIRTUAL_ENV", "/home/u/proj/.venv"),
            ("CONDA_PREFIX", "/opt/conda/envs/x"),
            ("PYTHONPATH", "/home/u/proj/src"),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
        let env = run_env(Path::new("/co"), &plan, &vars);
        let get = |k: &str| env.set.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        assert_eq!(
            get("PATH").unwrap(),
            "/co/api/.venv/bin:/co/web/node_modules/.bin:/usr/bin:/bin"
        );
        assert_eq!(get("VIRTUAL_ENV").unwrap(), "/co/api/.venv");
        assert!(env.remove.contains(&"PYTHONPATH".to_owned()));
        assert!(env.remove.contains(&"NODE_PATH".to_owned()));
        assert!(
            !env.remove.contains(&"VIRTUAL_ENV".to_owned()),
            "set, not removed"
        );
    }

    #[test]
    fn node_modules_linked_from_elsewhere_is_refused() {
        let co = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), co.path().join("node_modules")).unwrap();
        let plan = Plan {
            steps: vec![step("", "npm")],
        };
        let err = check(co.path(), &plan, &RunEnv::default()).unwrap_err();
        assert!(err.contains("outside the checkout"), "{err}");
    }
}
