//! The roster: which driver does the work of each role, from `[roles]` and `[agents.*]` of
//! `.tlv4.toml`, `--agent` and `--replay`.
//!
//! Every role not named falls back to `[roles] default`, and that to the builtin agent. An
//! agent named on the command line that `.tlv4.toml` does not define is taken as a driver
//! name with its defaults (`--agent claude` runs Claude Code as installed). A configuration
//! that names programs to run came with the repository: it is used only once the user
//! trusted that exact file ([`tlv4_core::trust`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use super::command::{BuiltinDriver, Driver, DriverOutput, RunContext, Usage, driver_for};
use super::config::AgentSpec;
use super::replay::ReplayDriver;
use super::{Agent, TaskInput};
use tlv4_core::config::Config;
use tlv4_core::config::budget::{AgentList, split_agents};
use tlv4_core::error::{Error, Result};
use tlv4_core::model::Role;

/// The agents that add their opinion to a perspective, by perspective name; in a round run as
/// the protocol also those of the [`DEVIL`] and [`MODERATOR`] seats.
pub type Perspectives = BTreeMap<String, Arc<dyn Driver>>;

/// The seat of the devil's advocate in a discussion.
pub const DEVIL: &str = "devil";

/// The key of the moderator's agent in [`Perspectives`].
pub const MODERATOR: &str = "moderator";

/// The names a configuration's `[roles]` and `[discuss.perspectives]` are checked against.
/// They come from the layers above (the pipelines, the discuss rules), which build them once
/// (`crate::coordinator::roster_names`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Known {
    /// The roles of the builtin pipelines and the specialists.
    pub roles: BTreeSet<String>,
    /// The discuss perspectives the builtin rules know.
    pub perspectives: Vec<String>,
}

/// The drivers of a run, by role.
#[derive(Clone)]
pub struct Roster {
    default: Arc<dyn Driver>,
    roles: BTreeMap<String, Arc<dyn Driver>>,
    /// The agents after the first of a role's fail-over list (`default` for the default's),
    /// in order.
    fallbacks: BTreeMap<String, Vec<Arc<dyn Driver>>>,
    perspectives: Perspectives,
    /// Agents of discussion seats (`[discuss.members]`), by seat.
    members: BTreeMap<String, Arc<dyn Driver>>,
    /// Agents of best-of candidates, by name.
    named: BTreeMap<String, Arc<dyn Driver>>,
    configured: Vec<(String, AgentSpec)>,
}

/// The prefix of an `--agent` value that gives a discussion seat its agent
/// (`discuss.skeptic=claude`, `discuss.devil=codex`, `discuss.moderator=…`,
/// `discuss.default=…` for every seat but the moderator), as `[discuss.members]` does.
pub const SEAT_PREFIX: &str = "discuss.";

/// How the command line changes the configured roster.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--agent NAME` (every role), `--agent ROLE=NAME` or `--agent discuss.SEAT=NAME`, in
    /// order.
    pub agents: Vec<String>,
    /// `--replay SID`: every agent role replays that session's recorded runs.
    pub replay: Option<String>,
    /// The agents of best-of candidates (`start --best-of claude,codex`, `[best_of]`).
    pub best_of: Vec<String>,
}

impl Roster {
    /// The builtin agent for every role.
    pub fn builtin() -> Roster {
        Roster {
            default: Arc::new(BuiltinDriver),
            roles: BTreeMap::new(),
            fallbacks: BTreeMap::new(),
            perspectives: BTreeMap::new(),
            members: BTreeMap::new(),
            named: BTreeMap::new(),
            configured: Vec::new(),
        }
    }

    /// `agent` for every role (tests and benchmarks bring their own).
    pub fn of_agent(agent: Arc<dyn Agent>) -> Roster {
        Roster {
            default: Arc::new(AgentDriver(agent)),
            roles: BTreeMap::new(),
            fallbacks: BTreeMap::new(),
            perspectives: BTreeMap::new(),
            members: BTreeMap::new(),
            named: BTreeMap::new(),
            configured: Vec::new(),
        }
    }

    /// `driver` for every role (tests bring their own).
    pub fn of_driver(driver: Arc<dyn Driver>) -> Roster {
        Roster {
            default: driver,
            roles: BTreeMap::new(),
            fallbacks: BTreeMap::new(),
            perspectives: BTreeMap::new(),
            members: BTreeMap::new(),
            named: BTreeMap::new(),
            configured: Vec::new(),
        }
    }

    /// The roster `config` describes, changed by `overrides`; `repo_root` is where relative
    /// programs and role overrides are looked up; `known` names the roles and perspectives
    /// the configuration may name.
    pub fn load(
        config: &Config,
        overrides: &Overrides,
        repo_root: &Path,
        known: &Known,
    ) -> Result<Roster> {
        Roster::load_with(config, overrides, repo_root, None, known)
    }

    /// [`Roster::load`] with the role instructions prompts are built from (`None`: those of
    /// the working tree at `repo_root`).
    pub fn load_with(
        config: &Config,
        overrides: &Overrides,
        repo_root: &Path,
        specs: Option<&super::prompt::RoleSpecs>,
        known: &Known,
    ) -> Result<Roster> {
        let (assignment, seat_choices) = assignments(config, overrides)?;
        let mut drivers = Drivers {
            config,
            repo_root,
            specs,
            made: BTreeMap::new(),
            configured: BTreeMap::new(),
        };
        let mut fallbacks = BTreeMap::new();
        let mut roles = BTreeMap::new();
        let mut default: Arc<dyn Driver> = Arc::new(BuiltinDriver);
        for (role, (list, from_file)) in &assignment {
            if role != "default" && !is_agent_role(role, known) {
                return Err(config.value_error(&format!("roles.{role}"), format!(
                    "`{role}` is not a role an agent plays; roles: analyst, writer, planner, executor, reviewer (an opinion added to the review's rules), and the specialists"
                )));
            }
            let first = drivers.get(list.first(), *from_file)?;
            if role == "default" {
                default = first;
            } else {
                roles.insert(role.clone(), first);
            }
            let more = list.names()[1..]
                .iter()
                .map(|n| drivers.get(n, *from_file))
                .collect::<Result<Vec<_>>>()?;
            if !more.is_empty() {
                fallbacks.insert(role.clone(), more);
            }
        }
        let mut driver = |name: &str, from_file: bool| drivers.get(name, from_file);
        let mut perspectives = BTreeMap::new();
        if overrides.replay.is_none() {
            let known = &known.perspectives;
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
                    perspectives.insert(p.clone(), driver(name, true)?);
                }
            }
        }
        let mut members = BTreeMap::new();
        // The file's choices, then the user's (which need no trust).
        let chosen = config
            .discuss
            .members
            .iter()
            .filter(|(seat, _)| !seat_choices.contains_key(*seat))
            .map(|(seat, name)| (seat, name, true))
            .chain(seat_choices.iter().map(|(seat, name)| (seat, name, false)));
        for (seat, name, from_file) in chosen {
            let name = match &overrides.replay {
                Some(sid) if name != "builtin" => format!("replay:{sid}"),
                _ => name.clone(),
            };
            if name != "builtin" {
                members.insert(seat.clone(), driver(&name, from_file)?);
            }
        }
        let mut named = BTreeMap::new();
        for name in &overrides.best_of {
            let name = match &overrides.replay {
                Some(sid) if name != "builtin" => format!("replay:{sid}"),
                _ => name.clone(),
            };
            named.insert(name.clone(), driver(&name, true)?);
        }
        Ok(Roster {
            default,
            roles,
            fallbacks,
            perspectives,
            members,
            named,
            configured: drivers.configured.into_iter().collect(),
        })
    }

    /// Runs every driver's preflight check: the first problem, if any.
    pub fn preflight(&self) -> Result<()> {
        self.all().try_for_each(|d| d.preflight())
    }

    /// Every driver of the roster.
    fn all(&self) -> impl Iterator<Item = &Arc<dyn Driver>> {
        std::iter::once(&self.default)
            .chain(self.roles.values())
            .chain(self.fallbacks.values().flatten())
            .chain(self.perspectives.values())
            .chain(self.members.values())
    }

    /// The name of the first agent of the roster that starts programs (see
    /// [`Driver::runs_commands`]), if any.
    pub fn runs_commands(&self) -> Option<&str> {
        self.all().find(|d| d.runs_commands()).map(|d| d.name())
    }

    /// Refuses, when `required` (`[sandbox] required`), a roster with an agent that starts
    /// programs on a kernel that cannot fully confine them.
    pub fn sandbox_required(&self, required: bool) -> Result<()> {
        let level = tlv4_core::sandbox::level();
        if !required || level.active() {
            return Ok(());
        }
        match self.runs_commands() {
            Some(name) => Err(tlv4_core::error::Error::state(
                format!(
                    "agent `{name}` runs a program, and this kernel's sandbox is {}; [sandbox] required = true refuses to run it",
                    level.describe()
                ),
                Some("run on a kernel with Landlock ABI 6 or later (lsm= must list landlock), or choose agents that run no program (builtin, openai)".to_owned()),
            )),
            None => Ok(()),
        }
    }

    /// Refuses to run session `sid`, which runs with shell on (`settings.shell`, decided when
    /// it started), with an agent that starts programs where the kernel's sandbox is not
    /// full: giving the agent its shell without the box is not an option, and taking the
    /// shell away would change the session's tool sets under its tasks without a word.
    pub fn shell_here(&self, sid: &tlv4_core::model::SessionId, shell: bool) -> Result<()> {
        shell_refused(
            sid,
            shell,
            tlv4_core::sandbox::level(),
            self.runs_commands(),
        )
    }

    /// The agents that add their opinion to discuss perspectives.
    pub fn perspectives(&self) -> &Perspectives {
        &self.perspectives
    }

    /// The agents of a pipeline's discuss rounds: those of the perspectives, and the devil's
    /// advocate and moderator of a round run as the protocol where `[discuss.members]` names
    /// them (`devil`, `moderator`; its `default` is for the topic members of `git tlv4
    /// discuss`, which a pipeline round does not have).
    pub fn discuss_agents(&self) -> Perspectives {
        let mut out = self.perspectives.clone();
        for seat in [DEVIL, MODERATOR] {
            if let Some(d) = self.members.get(seat) {
                out.insert(seat.to_owned(), Arc::clone(d));
            }
        }
        out
    }

    /// The agent of discussion seat `seat` (`[discuss.members]`, else its `default`), or
    /// `None` for the builtin member.
    pub fn member(&self, seat: &str) -> Option<Arc<dyn Driver>> {
        self.members
            .get(seat)
            .or_else(|| self.members.get("default").filter(|_| seat != MODERATOR))
            .cloned()
    }

    /// The agent whose opinion is added to quality role `role`'s rules (only when `[roles]`
    /// or `--agent ROLE=NAME` names one for it; the default agent gives none).
    pub fn opinion(&self, role: &str) -> Option<Arc<dyn Driver>> {
        self.roles
            .get(role)
            .filter(|d| d.name() != "builtin")
            .cloned()
    }

    /// The driver of best-of candidates named `name`, if the roster made one.
    pub fn named(&self, name: &str) -> Option<Arc<dyn Driver>> {
        self.named.get(name).cloned()
    }

    /// The driver of `role`.
    pub fn for_role(&self, role: &str) -> Arc<dyn Driver> {
        Arc::clone(self.roles.get(role).unwrap_or(&self.default))
    }

    /// The drivers of `role` in fail-over order: its first choice, then the rest of its
    /// `[roles]` list (a role without an entry of its own has the default's list).
    pub fn failover(&self, role: &str) -> Vec<Arc<dyn Driver>> {
        let key = if self.roles.contains_key(role) {
            role
        } else {
            "default"
        };
        let mut out = vec![self.for_role(role)];
        out.extend(self.fallbacks.get(key).into_iter().flatten().cloned());
        out
    }

    /// Agent names by role, for messages (`default` for the rest).
    pub fn describe(&self) -> Vec<(String, String)> {
        let names = |role: &str| {
            self.failover(role)
                .iter()
                .map(|d| d.name().to_owned())
                .collect::<Vec<_>>()
                .join(",")
        };
        let mut out = vec![("default".to_owned(), names("default"))];
        out.extend(self.roles.keys().map(|r| (r.clone(), names(r))));
        out.extend(
            self.members
                .iter()
                .map(|(r, d)| (format!("discuss.{r}"), d.name().to_owned())),
        );
        out
    }

    /// The agents `.tlv4.toml` defines or names that run programs and are used (`name
    /// (driver)`): what needs the file to be trusted.
    pub fn configured(&self) -> Vec<String> {
        self.configured
            .iter()
            .map(|(n, a)| format!("{n} ({})", a.driver))
            .collect()
    }

    /// [`Roster::configured`] with the spec each runs with.
    pub fn configured_specs(&self) -> &[(String, AgentSpec)] {
        &self.configured
    }

    /// The model configured for agent `name` (`[agents.<name>] model`), if any.
    pub fn model_of(&self, name: &str) -> Option<String> {
        self.configured
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, spec)| spec.model.clone())
    }

    /// Whether every role runs on the builtin agent.
    pub fn is_builtin(&self) -> bool {
        !self.default.checkout()
            && self.roles.values().all(|d| !d.checkout())
            && self.perspectives.is_empty()
            && self.members.is_empty()
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

/// Agent name by role, each with whether the name came from the file (which needs trust)
/// rather than from the user; and the discussion seats the user gave agents.
type Assignments = (
    BTreeMap<String, (AgentList, bool)>,
    BTreeMap<String, String>,
);

/// Who plays each role and seat: the file's `[roles]`, then the user's own choice (git config
/// `tlv4.agent`), then this run's `--agent` (`--agent discuss.SEAT=NAME` for a seat), then
/// `--replay`.
fn assignments(config: &Config, overrides: &Overrides) -> Result<Assignments> {
    // Agent name by role, and whether the name came from the file (which needs trust)
    // rather than from the user.
    let mut assignment: BTreeMap<String, (AgentList, bool)> = config
        .roles
        .iter()
        .map(|(r, n)| (r.clone(), (n.clone(), true)))
        .collect();
    // Discussion seats the user gave agents (`--agent discuss.SEAT=NAME`).
    let mut seat_choices: BTreeMap<String, String> = BTreeMap::new();
    // The user's own choice (git config tlv4.agent), then this run's (--agent).
    for a in config.user_agents.iter().chain(&overrides.agents) {
        if let Some(choice) = a.strip_prefix(SEAT_PREFIX) {
            match choice.split_once('=') {
                Some((seat, name)) if !seat.is_empty() && !name.is_empty() => {
                    seat_choices.insert(seat.to_owned(), name.to_owned());
                }
                _ => {
                    return Err(Error::Invalid(format!(
                        "--agent `{a}`: expected {SEAT_PREFIX}SEAT=NAME"
                    )));
                }
            }
            continue;
        }
        match a.split_once('=') {
            Some((role, name)) if !role.is_empty() && !name.is_empty() => {
                assignment.insert(role.to_owned(), (split_agents(name)?, false));
            }
            Some(_) => {
                return Err(Error::Invalid(format!(
                    "--agent `{a}`: expected NAME or ROLE=NAME"
                )));
            }
            None => {
                assignment.clear();
                assignment.insert("default".into(), (split_agents(a)?, false));
            }
        }
    }
    if let Some(sid) = &overrides.replay {
        assignment.clear();
        assignment.insert(
            "default".into(),
            (AgentList::one(format!("replay:{sid}")), false),
        );
    }
    Ok((assignment, seat_choices))
}

/// The drivers of a roster being loaded: each agent made once, and what the file defines or
/// names that needs trust.
struct Drivers<'a> {
    config: &'a Config,
    repo_root: &'a Path,
    specs: Option<&'a super::prompt::RoleSpecs>,
    made: BTreeMap<String, Arc<dyn Driver>>,
    configured: BTreeMap<String, AgentSpec>,
}

impl Drivers<'_> {
    /// The driver of agent `name`, named by the file (`from_file`) or by the user.
    fn get(&mut self, name: &str, from_file: bool) -> Result<Arc<dyn Driver>> {
        let (config, repo_root, specs) = (self.config, self.repo_root, self.specs);
        let (made, configured) = (&mut self.made, &mut self.configured);
        let defined = config.agents.get(name);
        // What the file defines runs with trust; so does a driver the file names.
        match defined {
            Some(spec) if tlv4_core::trust::needs_trust(spec) => {
                configured.insert(name.to_owned(), spec.clone());
            }
            None if from_file && name != "builtin" && !name.starts_with("replay") => {
                let spec = AgentSpec {
                    driver: name.to_owned(),
                    ..AgentSpec::default()
                };
                configured.insert(name.to_owned(), spec);
            }
            _ => {}
        }
        if let Some(d) = made.get(name) {
            return Ok(Arc::clone(d));
        }
        let build = |n: &str, spec: &AgentSpec| match specs {
            Some(s) => super::command::driver_with_specs(n, spec, repo_root, s),
            None => driver_for(n, spec, repo_root),
        };
        let d: Arc<dyn Driver> = match (name.strip_prefix("replay:"), defined) {
            (Some(sid), _) => Arc::new(ReplayDriver::new("replay", sid, repo_root)?),
            (None, Some(spec)) => Arc::from(build(name, spec)?),
            (None, None) if name == "builtin" => Arc::new(BuiltinDriver),
            (None, None) => {
                let spec = AgentSpec {
                    driver: name.to_owned(),
                    ..AgentSpec::default()
                };
                Arc::from(build(name, &spec).map_err(|e| {
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
    }
}

/// Whether `role` is done by an agent (not by the quality machinery): a role of the builtin
/// pipelines or a specialist, as `known` names them.
fn is_agent_role(name: &str, known: &Known) -> bool {
    match Role::from(name) {
        // The reviewer's rules always run; an agent's opinion may be added to them.
        Role::Reviewer => true,
        role if role.is_quality() => false,
        _ => known.roles.contains(name),
    }
}

/// [`Roster::shell_here`] on a kernel whose sandbox is `level`, with `agent` the first agent
/// that starts programs.
fn shell_refused(
    sid: &tlv4_core::model::SessionId,
    shell: bool,
    level: tlv4_core::sandbox::Level,
    agent: Option<&str>,
) -> Result<()> {
    match agent {
        Some(name) if shell && !level.active() => Err(Error::state(
            format!(
                "session {sid} runs with shell on (its agents run commands in their checkouts, inside the kernel's sandbox), and this kernel's sandbox is {}: agent `{name}` would get its shell without the box",
                level.describe()
            ),
            Some(format!(
                "resume it on a machine whose sandbox is full (`git tlv4 trust --show` says), or take the shell away from its later tasks: `git tlv4 resume --session {sid} --reconfigure`"
            )),
        )),
        _ => Ok(()),
    }
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
            best_of: Vec::new(),
        };
        Roster::load(
            &config(text),
            &overrides,
            Path::new("/nonexistent"),
            &crate::coordinator::roster_names(),
        )
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
    fn drivers_the_file_names_need_trust_those_the_user_names_do_not() {
        // A preset named in [roles] or [discuss.perspectives] with no [agents.X] table.
        let file = "[roles]\ndefault = \"claude\"\n[discuss.perspectives]\nrisk = \"gemini\"\n";
        let r = load(file, &[]).unwrap();
        assert_eq!(r.configured(), ["claude (claude)", "gemini (gemini)"]);
        // The same driver named by the user: only the file's perspective needs trust.
        let r = load(file, &["claude"]).unwrap();
        assert_eq!(r.configured(), ["gemini (gemini)"]);
        let mut c = config("[roles]\nwriter = \"codex\"\n");
        c.user_agents.push("writer=claude".into());
        let r = Roster::load(
            &c,
            &Overrides::default(),
            Path::new("/nonexistent"),
            &crate::coordinator::roster_names(),
        )
        .unwrap();
        assert!(
            r.configured().is_empty(),
            "git config tlv4.agent is the user's own"
        );
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

    #[test]
    fn a_session_with_shell_on_runs_only_where_the_sandbox_is_full() {
        use tlv4_core::sandbox::Level;
        let sid: tlv4_core::model::SessionId = "TLV4-shell-20260101".parse().unwrap();
        let e = shell_refused(&sid, true, Level::Partial(3), Some("cc"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("session TLV4-shell-20260101 runs with shell on")
                && e.contains("this kernel's sandbox is partial (Landlock ABI 3")
                && e.contains("agent `cc` would get its shell without the box"),
            "{e}"
        );
        assert!(shell_refused(&sid, true, Level::None, Some("cc")).is_err());
        // Where it is full, with no agent that runs programs, or with shell off: it runs.
        assert!(shell_refused(&sid, true, Level::Full(7), Some("cc")).is_ok());
        assert!(shell_refused(&sid, true, Level::None, None).is_ok());
        assert!(shell_refused(&sid, false, Level::None, Some("cc")).is_ok());
    }
}
