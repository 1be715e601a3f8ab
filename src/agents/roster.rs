//! The roster: which driver does the work of each role, from `[roles]` and `[agents.*]` of
//! `.tlv4.toml`, `--agent` and `--replay`.
//!
//! Every role not named falls back to `[roles] default`, and that to the builtin agent. An
//! agent named on the command line that `.tlv4.toml` does not define is taken as a driver
//! name with its defaults (`--agent claude` runs Claude Code as installed). A configuration
//! that names programs to run came with the repository: it is used only once the user
//! trusted that exact file ([`crate::trust`]).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use super::command::{BuiltinDriver, Driver, DriverOutput, RunContext, Usage, driver_for};
use super::config::AgentSpec;
use super::replay::ReplayDriver;
use super::{Agent, TaskInput};
use crate::config::Config;
use crate::error::{Error, Result};

/// The drivers of a run, by role.
#[derive(Clone)]
pub struct Roster {
    default: Arc<dyn Driver>,
    roles: BTreeMap<String, Arc<dyn Driver>>,
    perspectives: crate::quality::discuss::Perspectives,
    configured: Vec<String>,
}

/// How the command line changes the configured roster.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--agent NAME` (every role) or `--agent ROLE=NAME`, in order.
    pub agents: Vec<String>,
    /// `--replay SID`: every agent role replays that session's recorded runs.
    pub replay: Option<String>,
}

impl Roster {
    /// The builtin agent for every role.
    pub fn builtin() -> Roster {
        Roster {
            default: Arc::new(BuiltinDriver),
            roles: BTreeMap::new(),
            perspectives: BTreeMap::new(),
            configured: Vec::new(),
        }
    }

    /// `agent` for every role (tests and benchmarks bring their own).
    pub fn of_agent(agent: Arc<dyn Agent>) -> Roster {
        Roster {
            default: Arc::new(AgentDriver(agent)),
            roles: BTreeMap::new(),
            perspectives: BTreeMap::new(),
            configured: Vec::new(),
        }
    }

    /// The roster `config` describes, changed by `overrides`; `repo_root` is where relative
    /// programs and role overrides are looked up.
    pub fn load(config: &Config, overrides: &Overrides, repo_root: &Path) -> Result<Roster> {
        let mut assignment: BTreeMap<String, String> = config.roles.clone();
        // The user's own choice (git config tlv4.agent), then this run's (--agent).
        for a in config.user_agents.iter().chain(&overrides.agents) {
            match a.split_once('=') {
                Some((role, name)) if !role.is_empty() && !name.is_empty() => {
                    assignment.insert(role.to_owned(), name.to_owned());
                }
                Some(_) => {
                    return Err(Error::Invalid(format!(
                        "--agent `{a}`: expected NAME or ROLE=NAME"
                    )));
                }
                None => {
                    assignment.clear();
                    assignment.insert("default".into(), a.clone());
                }
            }
        }
        if let Some(sid) = &overrides.replay {
            assignment.clear();
            assignment.insert("default".into(), format!("replay:{sid}"));
        }
        let mut made: BTreeMap<String, Arc<dyn Driver>> = BTreeMap::new();
        let mut configured = Vec::new();
        let mut driver = |name: &str| -> Result<Arc<dyn Driver>> {
            if let Some(d) = made.get(name) {
                return Ok(Arc::clone(d));
            }
            let d: Arc<dyn Driver> = match (name.strip_prefix("replay:"), config.agents.get(name)) {
                (Some(sid), _) => Arc::new(ReplayDriver::new("replay", sid, repo_root)?),
                (None, Some(spec)) => {
                    if crate::trust::needs_trust(spec) {
                        configured.push(format!("{name} ({})", spec.driver));
                    }
                    Arc::from(driver_for(name, spec, repo_root)?)
                }
                (None, None) if name == "builtin" => Arc::new(BuiltinDriver),
                (None, None) => {
                    let spec = AgentSpec {
                        driver: name.to_owned(),
                        ..AgentSpec::default()
                    };
                    Arc::from(driver_for(name, &spec, repo_root).map_err(|e| {
                        Error::state(
                            format!(
                                "agent `{name}` is neither defined in .tlv4.toml nor a driver: {e}"
                            ),
                            Some(format!(
                                "define it under [agents.{name}], or name a driver (builtin, command, claude, codex, gemini, qwen, opencode, aider, openai)"
                            )),
                        )
                    })?)
                }
            };
            made.insert(name.to_owned(), Arc::clone(&d));
            Ok(d)
        };
        let default = match assignment.get("default") {
            Some(name) => driver(name)?,
            None => Arc::new(BuiltinDriver),
        };
        let mut roles = BTreeMap::new();
        for (role, name) in &assignment {
            if role != "default" {
                if !is_agent_role(role) {
                    return Err(config.value_error(&format!("roles.{role}"), format!(
                        "`{role}` is not a role an agent plays; roles: analyst, writer, planner, executor, reviewer (an opinion added to the review's rules), and the specialists"
                    )));
                }
                roles.insert(role.clone(), driver(name)?);
            }
        }
        let mut perspectives = BTreeMap::new();
        if overrides.replay.is_none() {
            let known = crate::quality::discuss::perspective_names();
            for (p, name) in &config.discuss.perspectives {
                if !known.contains(p) {
                    return Err(config.value_error(
                        &format!("discuss.perspectives.{p}"),
                        format!(
                            "unknown perspective `{p}` (= \"{name}\"); perspectives: {}",
                            known.join(", ")
                        ),
                    ));
                }
                if name != "builtin" {
                    perspectives.insert(p.clone(), driver(name)?);
                }
            }
        }
        Ok(Roster {
            default,
            roles,
            perspectives,
            configured,
        })
    }

    /// Runs every driver's preflight check: the first problem, if any.
    pub fn preflight(&self) -> Result<()> {
        std::iter::once(&self.default)
            .chain(self.roles.values())
            .chain(self.perspectives.values())
            .try_for_each(|d| d.preflight())
    }

    /// The agents that add their opinion to discuss perspectives.
    pub fn perspectives(&self) -> &crate::quality::discuss::Perspectives {
        &self.perspectives
    }

    /// The agent whose opinion is added to quality role `role`'s rules (only when `[roles]`
    /// or `--agent ROLE=NAME` names one for it; the default agent gives none).
    pub fn opinion(&self, role: &str) -> Option<Arc<dyn Driver>> {
        self.roles
            .get(role)
            .filter(|d| d.name() != "builtin")
            .cloned()
    }

    /// The driver of `role`.
    pub fn for_role(&self, role: &str) -> Arc<dyn Driver> {
        Arc::clone(self.roles.get(role).unwrap_or(&self.default))
    }

    /// Agent names by role, for messages (`default` for the rest).
    pub fn describe(&self) -> Vec<(String, String)> {
        let mut out = vec![("default".to_owned(), self.default.name().to_owned())];
        out.extend(
            self.roles
                .iter()
                .map(|(r, d)| (r.clone(), d.name().to_owned())),
        );
        out
    }

    /// The agents from `.tlv4.toml` that run programs and are used (`name (driver)`): what
    /// needs the file to be trusted.
    pub fn configured(&self) -> &[String] {
        &self.configured
    }

    /// Whether every role runs on the builtin agent.
    pub fn is_builtin(&self) -> bool {
        !self.default.checkout()
            && self.roles.values().all(|d| !d.checkout())
            && self.perspectives.is_empty()
    }
}

/// An [`Agent`] behind the [`Driver`] trait: it gets the task's input only, no checkout.
pub struct AgentDriver(pub Arc<dyn Agent>);

impl Driver for AgentDriver {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn checkout(&self) -> bool {
        false
    }

    fn run(&self, input: &TaskInput, _ctx: &RunContext) -> Result<DriverOutput> {
        let started = std::time::Instant::now();
        let output = self.0.run(input)?;
        Ok(DriverOutput {
            output,
            prompt: String::new(),
            raw: String::new(),
            transcript: None,
            usage: Usage {
                seconds: started.elapsed().as_secs_f64(),
                ..Usage::default()
            },
        })
    }
}

/// Whether `role` is done by an agent (not by the quality machinery): a role of the builtin
/// pipelines or a specialist.
fn is_agent_role(role: &str) -> bool {
    // The reviewer's rules always run; an agent's opinion may be added to them.
    if role == "reviewer" {
        return true;
    }
    if crate::quality::ROLES.contains(&role) {
        return false;
    }
    crate::coordinator::pipeline::PipelineSpec::builtin()
        .is_ok_and(|s| s.role(role).is_some() || s.specialists().contains_key(role))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> Config {
        Config::parse("t.toml", text).unwrap()
    }

    fn load(text: &str, agents: &[&str]) -> Result<Roster> {
        let overrides = Overrides {
            agents: agents.iter().map(|a| (*a).to_owned()).collect(),
            replay: None,
        };
        Roster::load(&config(text), &overrides, Path::new("/nonexistent"))
    }

    const TWO: &str = "[agents.mine]\ndriver = \"command\"\nprogram = \"/bin/true\"\n\
                       [agents.other]\ndriver = \"command\"\nprogram = \"/bin/false\"\n\
                       [roles]\ndefault = \"builtin\"\nexecutor = \"mine\"\n";

    fn names(r: &Roster) -> Vec<(String, String)> {
        r.describe()
    }

    #[test]
    fn roles_fall_back_to_the_default_then_to_builtin() {
        let r = load(TWO, &[]).unwrap();
        assert_eq!(r.for_role("executor").name(), "mine");
        assert_eq!(r.for_role("writer").name(), "builtin");
        assert_eq!(r.configured(), ["mine (command)"]);
        assert!(!r.is_builtin());
        let r = load("", &[]).unwrap();
        assert!(r.is_builtin());
        assert!(r.configured().is_empty());
    }

    #[test]
    fn the_command_line_overrides_the_file() {
        // NAME: every role; ROLE=NAME: one role, over the file's.
        let r = load(TWO, &["other"]).unwrap();
        assert_eq!(names(&r), [("default".to_owned(), "other".to_owned())]);
        let r = load(TWO, &["writer=other"]).unwrap();
        assert_eq!(r.for_role("writer").name(), "other");
        assert_eq!(r.for_role("executor").name(), "mine");
        assert_eq!(r.configured(), ["mine (command)", "other (command)"]);
        // A driver name not defined in the file: that driver with its defaults.
        let r = load("", &["executor=claude"]).unwrap();
        assert_eq!(r.for_role("executor").name(), "claude");
        assert!(r.configured().is_empty(), "the command line needs no trust");
        let r = load(TWO, &["builtin"]).unwrap();
        assert!(r.is_builtin() && r.configured().is_empty());
    }

    #[test]
    fn mistakes_are_named() {
        let e = load(TWO, &["executor="]).err().unwrap().to_string();
        assert!(e.contains("expected NAME or ROLE=NAME"), "{e}");
        let e = load(TWO, &["nobody"]).err().unwrap().to_string();
        assert!(
            e.contains("agent `nobody` is neither defined in .tlv4.toml nor a driver"),
            "{e}"
        );
        let e = load("[roles]\ntester = \"builtin\"\n", &[])
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("`tester` is not a role an agent plays"), "{e}");
        let e = load(
            "[agents.x]\ndriver = \"nope\"\n[roles]\nwriter = \"x\"\n",
            &[],
        )
        .err()
        .unwrap()
        .to_string();
        assert!(e.contains("agent `x`: unknown driver `nope`"), "{e}");
        let e = load(
            "[agents.x]\ndriver = \"command\"\n[roles]\nwriter = \"x\"\n",
            &[],
        )
        .err()
        .unwrap()
        .to_string();
        assert!(e.contains("needs `program`"), "{e}");
        let e = load("[discuss.perspectives]\nmarketing = \"builtin\"\n", &[])
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("unknown perspective `marketing`"), "{e}");
    }

    #[test]
    fn perspectives_get_their_agents() {
        let r = load(
            &format!("{TWO}[discuss.perspectives]\nproduct = \"other\"\nrisk = \"builtin\"\n"),
            &[],
        )
        .unwrap();
        assert_eq!(r.perspectives().len(), 1);
        assert_eq!(r.perspectives()["product"].name(), "other");
    }
}
