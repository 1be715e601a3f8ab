//! The project's environment in a leased checkout: the setup plan read from a commit, and
//! the run of that plan in the checkout (see [`tlv4_core::environment`]).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use gix::ObjectId;

use tlv4_core::config::EnvironmentConfig;
use tlv4_core::environment::isolate::{self, RunEnv};
use tlv4_core::environment::setup::{self, Made, SetupError};
use tlv4_core::environment::{Plan, detect};
use tlv4_core::error::{Error, Result};

/// How deep detection looks for lockfiles and manifests (a root is depth 1).
const DEPTH: usize = 4;

/// Trees detection never looks into.
const SKIPPED: [&str; 9] = [
    "node_modules",
    ".git",
    ".venv",
    "venv",
    "vendor",
    "target",
    "dist",
    "build",
    ".tlv4",
];

/// The setup plan of the repository at `commit`: `[environment] setup` when configured, else
/// what its lockfiles and manifests declare. Read from the commit, never the working tree:
/// the session's base decides it, and an agent that adds a lockfile does not choose it.
pub fn plan_at(
    repo: &gix::Repository,
    commit: ObjectId,
    config: &EnvironmentConfig,
) -> Result<Plan> {
    let tree = repo
        .find_commit(commit)
        .and_then(|c| c.tree_id())
        .map_err(|e| Error::git(&format!("cannot read commit {commit}"), e))?
        .detach();
    let mut files: BTreeMap<String, ObjectId> = BTreeMap::new();
    walk(repo, tree, "", 1, &mut files)?;
    let paths: Vec<&str> = files.keys().map(String::as_str).collect();
    let read = |p: &str| -> Option<Vec<u8>> {
        let id = files.get(p)?;
        repo.find_object(*id).ok().map(|o| o.data.clone())
    };
    let detected = detect(&paths, &read);
    Ok(Plan::new(config.setup.as_deref(), detected))
}

fn walk(
    repo: &gix::Repository,
    tree: ObjectId,
    prefix: &str,
    depth: usize,
    out: &mut BTreeMap<String, ObjectId>,
) -> Result<()> {
    let t = repo
        .find_tree(tree)
        .map_err(|e| Error::git(&format!("cannot read tree {tree}"), e))?;
    for entry in t.iter() {
        let entry = entry.map_err(|e| Error::git("cannot read a tree entry", e))?;
        let name = entry.filename().to_string();
        let path = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        let mode = entry.mode();
        if mode.is_tree() {
            if depth < DEPTH && !SKIPPED.contains(&name.as_str()) {
                walk(repo, entry.object_id(), &path, depth + 1, out)?;
            }
        } else if mode.is_blob() {
            out.insert(path, entry.object_id());
        }
    }
    Ok(())
}

/// The blob ids of `paths` at `commit` (`None` for a path it has no file at).
pub fn ids_at(
    repo: &gix::Repository,
    commit: ObjectId,
    paths: &[String],
) -> Result<BTreeMap<String, Option<String>>> {
    let tree = repo
        .find_commit(commit)
        .and_then(|c| c.tree())
        .map_err(|e| Error::git(&format!("cannot read commit {commit}"), e))?;
    Ok(paths
        .iter()
        .map(|p| {
            let id = tree
                .lookup_entry_by_path(p)
                .ok()
                .flatten()
                .filter(|e| e.mode().is_blob())
                .map(|e| e.object_id().to_string());
            (p.clone(), id)
        })
        .collect())
}

/// A prepared checkout: how its environment was made, and what commands there run with.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// What each step did.
    pub made: Vec<Made>,
    /// The environment of commands in the checkout.
    pub env: RunEnv,
    /// What the check of the checkout's own code found.
    pub checked: Vec<String>,
    /// The checkout's own temporary directory (`TMPDIR` in `env`): the one place outside the
    /// checkout its commands may write.
    pub tmp: std::path::PathBuf,
}

/// Why a checkout could not be prepared.
#[derive(Debug, Clone)]
pub enum NotPrepared {
    /// The setup failed: named command, exit, output.
    Setup(SetupError),
    /// The checkout would run code from outside it.
    Foreign(String),
}

impl std::fmt::Display for NotPrepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotPrepared::Setup(e) => e.fmt(f),
            NotPrepared::Foreign(s) => f.write_str(s),
        }
    }
}

/// Prepares the checkout at `root` (at `commit`) by `plan`, keeping what ran in `stamp`:
/// setup steps whose inputs changed run, with the user's environment left out; then the
/// check that the project's own code imports from inside the checkout.
pub fn prepare(
    repo: &gix::Repository,
    commit: ObjectId,
    root: &Path,
    stamp: &Path,
    plan: &Plan,
    timeout: Duration,
) -> Result<std::result::Result<Prepared, NotPrepared>> {
    let vars: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    let mut env = isolate::run_env(root, plan, &vars);
    // The checkout's own temporary directory, emptied for each run: the only one its
    // commands may write.
    let tmp = stamp.with_extension("").with_extension("tmp");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp)
        .map_err(|e| Error::io(format!("cannot make {}", tmp.display()), e))?;
    env.set
        .push(("TMPDIR".to_owned(), tmp.display().to_string()));
    env.sandbox = Some(std::sync::Arc::new(
        tlv4_core::sandbox::for_checkout(root, &tmp).prepare()?,
    ));
    let ids = ids_at(repo, commit, &plan.inputs())?;
    let lookup = |p: &str| ids.get(p).cloned().flatten();
    let made = match setup::prepare(root, plan, &lookup, stamp, &env, timeout) {
        Ok(m) => m,
        Err(e) => return Ok(Err(NotPrepared::Setup(e))),
    };
    match isolate::check(root, plan, &env) {
        Ok(checked) => Ok(Ok(Prepared {
            made,
            env,
            checked,
            tmp,
        })),
        Err(why) => Ok(Err(NotPrepared::Foreign(why))),
    }
}

/// Why a session's setup plan is not used.
#[derive(Debug)]
pub enum PlanRefused {
    /// Its files could not be read.
    Unreadable(Error),
    /// Files it runs are not trusted with this content: the reason, naming them and what to
    /// run.
    Untrusted(String),
}

/// The setup plan of a session — read from its base commit `base` under its pinned
/// configuration `conf` (see [`plan_at`]) — once [`allowed`] says it may run.
pub fn session_plan(
    repo: &gix::Repository,
    base: ObjectId,
    conf: &tlv4_core::trust::Configuration,
) -> std::result::Result<Plan, PlanRefused> {
    let plan = plan_at(repo, base, &conf.config.environment).map_err(PlanRefused::Unreadable)?;
    match allowed(repo, base, &plan, conf) {
        Ok(Ok(())) => Ok(plan),
        Ok(Err(why)) => Err(PlanRefused::Untrusted(why)),
        Err(e) => Err(PlanRefused::Unreadable(e)),
    }
}

/// The setup timeout of `config`, else [`setup::DEFAULT_TIMEOUT`].
pub fn timeout(config: &EnvironmentConfig) -> Duration {
    config
        .timeout
        .as_deref()
        .and_then(|t| tlv4_core::process::duration::parse_duration(t).ok())
        .unwrap_or(setup::DEFAULT_TIMEOUT)
}

/// Whether the setup `plan` of the session may run under its pinned configuration `conf`:
/// each input file of a step that runs commands is trusted with its content at `base`, the
/// commit the plan was read from, and so is `.tlv4.toml` when the plan is its
/// `[environment] setup` (see [`tlv4_core::trust::setup_allowed`]). The session's own changes
/// to those files re-run the pinned commands; they do not choose them. The error says which
/// files are not trusted and what to run.
pub fn allowed(
    repo: &gix::Repository,
    base: ObjectId,
    plan: &Plan,
    conf: &tlv4_core::trust::Configuration,
) -> Result<std::result::Result<(), String>> {
    if !plan.runs_anything() {
        return Ok(Ok(()));
    }
    let ids = ids_at(repo, base, &plan.inputs())?;
    let config_id = conf
        .files
        .get(tlv4_core::config::FILE)
        .map(tlv4_core::trust::blob_id);
    let lookup = |p: &str| -> Option<String> {
        if p == tlv4_core::config::FILE {
            return config_id.clone();
        }
        ids.get(p).cloned().flatten()
    };
    let stored = tlv4_core::trust::Stored::of(&conf.config);
    Ok(tlv4_core::trust::setup_allowed(&stored, plan, &lookup))
}
