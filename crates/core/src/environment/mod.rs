//! The project's environment in a checkout: what must be installed before agents or tests run
//! there (the *setup*), decided from what the repository declares at the session's base commit
//! (lockfiles and manifests) or from `[environment] setup` in `.tlv4.toml`; and the process
//! environment that makes the checkout's own installation, never the user's, decide what runs
//! and what is imported.
//!
//! A leaf: it reads file contents handed to it and returns plans and variables. Running the
//! setup is the caller's (through [`crate::process`]), and so is deciding whether it may run
//! (only once the repository is trusted, see [`crate::trust`]).

pub mod detect;
pub mod isolate;
pub mod setup;

pub use detect::detect;

/// The ecosystem a setup step belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Ecosystem {
    /// npm, from `package-lock.json` or `npm-shrinkwrap.json`.
    Npm,
    /// pnpm, from `pnpm-lock.yaml`.
    Pnpm,
    /// Yarn 1 (classic), from a `yarn.lock` with the v1 header.
    Yarn,
    /// Yarn 2+ (berry), from a `yarn.lock` with `__metadata:`.
    YarnBerry,
    /// Bun, from `bun.lock` or `bun.lockb`.
    Bun,
    /// uv, from `uv.lock`.
    Uv,
    /// Poetry, from `poetry.lock`.
    Poetry,
    /// pip into a virtualenv inside the checkout, from `pyproject.toml` (its test group or
    /// extra) or `requirements*.txt`.
    Pip,
    /// Cargo, from `Cargo.lock`: nothing to install, its caches are shared.
    Cargo,
    /// Go modules, from `go.sum`: nothing to install, its caches are shared.
    Go,
    /// `[environment] setup` in `.tlv4.toml`.
    Configured,
}

impl Ecosystem {
    /// The name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Ecosystem::Npm => "npm",
            Ecosystem::Pnpm => "pnpm",
            Ecosystem::Yarn => "yarn (classic)",
            Ecosystem::YarnBerry => "yarn (berry)",
            Ecosystem::Bun => "bun",
            Ecosystem::Uv => "uv",
            Ecosystem::Poetry => "poetry",
            Ecosystem::Pip => "pip",
            Ecosystem::Cargo => "cargo",
            Ecosystem::Go => "go",
            Ecosystem::Configured => "configured",
        }
    }

    /// Whether its installation is a Python virtualenv at `<dir>/.venv`.
    pub fn is_python(self) -> bool {
        matches!(self, Ecosystem::Uv | Ecosystem::Poetry | Ecosystem::Pip)
    }

    /// Whether its installation is a `<dir>/node_modules`.
    pub fn is_js(self) -> bool {
        matches!(
            self,
            Ecosystem::Npm
                | Ecosystem::Pnpm
                | Ecosystem::Yarn
                | Ecosystem::YarnBerry
                | Ecosystem::Bun
        )
    }
}

/// One step of a checkout's setup: commands run with `sh -c` in one directory of the checkout.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Step {
    /// The directory, relative to the checkout root (`""` for the root), `/`-separated.
    pub dir: String,
    /// The ecosystem, by [`Ecosystem::name`]-like key (`npm`, `uv`, …; see [`Step::ecosystem`]).
    pub kind: String,
    /// The commands, run in order with `sh -c` in `dir`; the step fails at the first that fails.
    /// Empty for ecosystems that need no install (cargo, go).
    pub commands: Vec<String>,
    /// The repository paths (from the root) whose content decides whether the step must run
    /// again: lockfiles and manifests. The step re-runs in a checkout when one of their blob
    /// ids differs from the last run there.
    pub inputs: Vec<String>,
    /// The programs the commands need, each with how to get it (`("uv", "pip install uv")`).
    pub tools: Vec<(String, String)>,
    /// What it was detected from, for reports (`package-lock.json`).
    pub evidence: String,
}

impl Step {
    /// Where it runs, for reports: `frontend/`, or `the root`.
    pub fn place(&self) -> String {
        if self.dir.is_empty() {
            "the root".to_owned()
        } else {
            format!("{}/", self.dir)
        }
    }

    /// Its commands as one line (`a && b`: each runs once the one before succeeded).
    pub fn command_line(&self) -> String {
        self.commands.join(" && ")
    }

    /// The ecosystem of this step.
    pub fn ecosystem(&self) -> Ecosystem {
        ECOSYSTEMS
            .iter()
            .copied()
            .find(|e| e.key() == self.kind)
            .unwrap_or(Ecosystem::Configured)
    }
}

const ECOSYSTEMS: [Ecosystem; 11] = [
    Ecosystem::Npm,
    Ecosystem::Pnpm,
    Ecosystem::Yarn,
    Ecosystem::YarnBerry,
    Ecosystem::Bun,
    Ecosystem::Uv,
    Ecosystem::Poetry,
    Ecosystem::Pip,
    Ecosystem::Cargo,
    Ecosystem::Go,
    Ecosystem::Configured,
];

impl Ecosystem {
    /// The key stored in [`Step::kind`].
    pub fn key(self) -> &'static str {
        match self {
            Ecosystem::Npm => "npm",
            Ecosystem::Pnpm => "pnpm",
            Ecosystem::Yarn => "yarn",
            Ecosystem::YarnBerry => "yarn-berry",
            Ecosystem::Bun => "bun",
            Ecosystem::Uv => "uv",
            Ecosystem::Poetry => "poetry",
            Ecosystem::Pip => "pip",
            Ecosystem::Cargo => "cargo",
            Ecosystem::Go => "go",
            Ecosystem::Configured => "configured",
        }
    }
}

/// The whole setup of a checkout: the steps, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Plan {
    /// The steps.
    pub steps: Vec<Step>,
}

impl Plan {
    /// The plan for a repository: `[environment] setup` when configured (one step at the root,
    /// its inputs still the detected steps' inputs, so that a lockfile change re-runs it),
    /// else what [`detect`] finds in the tree.
    pub fn new(configured: Option<&[String]>, detected: Vec<Step>) -> Plan {
        match configured {
            Some(commands) => {
                let mut inputs: Vec<String> =
                    detected.iter().flat_map(|s| s.inputs.clone()).collect();
                inputs.sort();
                inputs.dedup();
                Plan {
                    steps: vec![Step {
                        dir: String::new(),
                        kind: Ecosystem::Configured.key().to_owned(),
                        commands: commands.to_vec(),
                        inputs,
                        tools: Vec::new(),
                        evidence: format!("{} [environment] setup", crate::config::FILE),
                    }],
                }
            }
            None => Plan { steps: detected },
        }
    }

    /// Whether any step runs a command.
    pub fn runs_anything(&self) -> bool {
        self.steps.iter().any(|s| !s.commands.is_empty())
    }

    /// Every input path of every step, sorted, without repeats.
    pub fn inputs(&self) -> Vec<String> {
        let mut all: Vec<String> = self.steps.iter().flat_map(|s| s.inputs.clone()).collect();
        all.sort();
        all.dedup();
        all
    }
}
