//! A perspective judged by an agent as well (`[discuss.perspectives]` of `.tlv4.toml`): the
//! builtin critic's rules run first, and the agent's critique is added on top — its
//! weaknesses, suggestions and gaps join the list, the lower rating and the higher risk
//! count. An agent that fails or answers out of contract leaves the builtin critique, with
//! a line saying so.

use std::sync::Arc;

use super::{BuiltinCritic, Critic, Critique, RiskLevel, Subject};
use crate::agents::command::{Driver, RunContext, Usage};
use crate::agents::{Outcome, TaskInput};
use tlv4_core::error::Result;

/// The builtin critic of a perspective with an agent's opinion added.
pub(super) struct AgentCritic {
    pub(super) builtin: BuiltinCritic,
    pub(super) driver: Arc<dyn Driver>,
    pub(super) input: TaskInput,
    /// What the agent's run cost, once it ran.
    pub(super) spent: std::sync::Mutex<Option<Usage>>,
}

/// What the agent hands over, in `discussions/<ROUND>-<perspective>.json`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentCritique {
    rating: u8,
    #[serde(default)]
    strengths: Vec<String>,
    #[serde(default)]
    weaknesses: Vec<String>,
    #[serde(default)]
    suggestions: Vec<String>,
    #[serde(default)]
    missing: Vec<String>,
    risk: String,
}

impl AgentCritic {
    /// The file the agent writes.
    fn path(&self, round: &str) -> String {
        format!("discussions/{round}-{}.json", self.builtin.perspective)
    }

    fn ask(
        &self,
        subject: &Subject<'_>,
        builtin: &Critique,
    ) -> std::result::Result<AgentCritique, String> {
        let path = self.path(subject.round);
        let mut input = TaskInput {
            session: self.input.session.clone(),
            task: self.input.task.clone(),
            folder: self.input.folder.clone(),
            code: self.input.code.clone(),
        };
        input.task.role = tlv4_core::model::Role::Critic;
        input.task.description = format!(
            "PURPOSE: Judge {artifact} from the {perspective} perspective, as the {persona}\n\
             TASK:\n  - Read {artifact} and the documents it builds on\n  - Rate it 1-5; list strengths, weaknesses, suggestions, coverage gaps and the risk\n\
             CONTEXT:\n  - Round: {round}\n  - The rules of git-tlv4 measured: {measured}\n\
             EXPECTED: {path} (a JSON object: rating, strengths, weaknesses, suggestions, missing, risk)\n\
             CONSTRAINTS: Read only; write nothing but {path}\n",
            artifact = subject.artifact.unwrap_or("the documents of this round"),
            perspective = self.builtin.perspective,
            persona = self.builtin.persona,
            round = subject.round,
            measured = builtin.measured.join("; "),
        );
        let dir = tempfile::Builder::new()
            .prefix("tlv4-critic-")
            .tempdir()
            .map_err(|e| format!("cannot make a directory for the critic: {e}"))?;
        let ctx = RunContext {
            max_usd: None,
            workdir: dir.path().to_path_buf(),
            run_dir: None,
            attempt: 1,
            meter: Default::default(),
            deadline: None,
            env: None,
            shell: None,
        };
        let ran = self.driver.run(&input, &ctx).map_err(|e| e.to_string())?;
        *self
            .spent
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(ran.usage.clone());
        let out = ran.output;
        if let Outcome::Failed(why) = &out.outcome {
            return Err(why.clone());
        }
        let text = out
            .files
            .iter()
            .find(|(p, _)| *p == path)
            .map(|(_, b)| b.clone())
            .ok_or_else(|| format!("it wrote no {path}"))?;
        let a: AgentCritique =
            serde_json::from_slice(&text).map_err(|e| format!("{path} is not a critique: {e}"))?;
        if !(1..=5).contains(&a.rating) {
            return Err(format!("rating {} is not between 1 and 5", a.rating));
        }
        Ok(a)
    }
}

impl Critic for AgentCritic {
    fn perspective(&self) -> &str {
        self.builtin.perspective()
    }

    fn usage(&self) -> Option<(String, Usage)> {
        self.spent
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
            .map(|u| (self.driver.name().to_owned(), u))
    }

    fn critique(&self, subject: &Subject<'_>) -> Result<Critique> {
        let mut c = self.builtin.critique(subject)?;
        let agent = self.driver.name().to_owned();
        match self.ask(subject, &c) {
            Ok(a) => {
                let tag = |v: Vec<String>| v.into_iter().map(|s| format!("{s} (agent {agent})"));
                c.rating = c.rating.min(a.rating);
                c.strengths.extend(tag(a.strengths));
                c.weaknesses.extend(tag(a.weaknesses));
                c.suggestions.extend(tag(a.suggestions));
                c.missing.extend(a.missing);
                let risk = match a.risk.to_ascii_lowercase().as_str() {
                    "critical" => RiskLevel::Critical,
                    "high" => RiskLevel::High,
                    "medium" => RiskLevel::Medium,
                    _ => RiskLevel::Low,
                };
                c.risk = c.risk.max(risk);
                c.measured.push(format!(
                    "agent {agent}: rating {}, risk {}",
                    a.rating, a.risk
                ));
            }
            Err(why) => c.measured.push(format!(
                "agent {agent}: no critique ({why}); the rules alone judged"
            )),
        }
        Ok(c)
    }
}
