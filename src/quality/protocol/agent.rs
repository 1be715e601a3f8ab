//! Members and a moderator played by configured agents (`[discuss.members]` of
//! `.tlv4.toml`). The agent gets the turn's prompt as its task description and hands its
//! contribution back as the file `contribution.json` (the moderator: `rating.json`) of an
//! ordinary result block; the protocol's own contract is checked on that file by the engine.

use std::sync::Arc;

use super::{Member, MemberError, Moderator, Rating, RatingInput, Turn};
use crate::agents::command::{Driver, RunContext};
use crate::agents::{CodeTree, Outcome, TaskInput};
use crate::model::{Session, Task};

/// The file a member's answer must hold.
pub const CONTRIBUTION_FILE: &str = "contribution.json";
/// The file a moderator's answer must hold.
pub const RATING_FILE: &str = "rating.json";

/// What an agent run needs besides the prompt: the session and the code it sees.
#[derive(Clone)]
pub struct Context {
    /// The session, as stored.
    pub session: Session,
    /// A task to carry the turn (its id names the discussion round).
    pub task: Task,
    /// The code at the session tip.
    pub code: CodeTree,
}

/// A member played by an agent.
pub struct AgentMember {
    /// The agent.
    pub driver: Arc<dyn Driver>,
    /// Its run context.
    pub context: Context,
}

/// Runs `driver` as `role` on `description`, and returns the file `file` of its result.
fn ask(
    driver: &dyn Driver,
    context: &Context,
    role: &str,
    description: String,
    file: &str,
) -> Result<String, MemberError> {
    let mut task = context.task.clone();
    task.role = role.into();
    task.description = description;
    // The folder stays empty: everything the member may see is in the prompt, so that a
    // Position turn cannot read another member's output.
    let input = TaskInput {
        session: context.session.clone(),
        task,
        folder: Default::default(),
        code: context.code.clone(),
    };
    let dir = tempfile::Builder::new()
        .prefix("tlv4-discuss-")
        .tempdir()
        .map_err(|e| MemberError::Failed(format!("cannot make a directory for the agent: {e}")))?;
    let ctx = RunContext {
        workdir: dir.path().to_path_buf(),
        run_dir: None,
        attempt: 1,
        meter: Default::default(),
    };
    let ran = driver
        .run(&input, &ctx)
        .map_err(|e| MemberError::Api(e.to_string()))?;
    if let Outcome::Failed(why) = &ran.output.outcome {
        return Err(MemberError::Failed(why.clone()));
    }
    let bytes = ran
        .output
        .files
        .iter()
        .find(|(p, _)| p == file)
        .map(|(_, b)| b.clone())
        .ok_or_else(|| MemberError::Failed(format!("the answer has no file {file}")))?;
    String::from_utf8(bytes).map_err(|_| MemberError::Failed(format!("{file} is not UTF-8")))
}

impl Member for AgentMember {
    fn agent(&self) -> &str {
        self.driver.name()
    }

    fn speak(&self, turn: &Turn) -> Result<String, MemberError> {
        let description = format!(
            "{}\nEXPECTED: {CONTRIBUTION_FILE} in `files`, holding the JSON object above.\n",
            turn.prompt
        );
        match ask(
            self.driver.as_ref(),
            &self.context,
            "member",
            description,
            CONTRIBUTION_FILE,
        ) {
            // A missing file is an answer out of contract, to be sent back like one.
            Err(MemberError::Failed(why)) if why.starts_with("the answer has no file") => {
                Ok(format!("(no {CONTRIBUTION_FILE}: {why})"))
            }
            other => other,
        }
    }
}

/// A moderator played by an agent.
pub struct AgentModerator {
    /// The agent.
    pub driver: Arc<dyn Driver>,
    /// Its run context.
    pub context: Context,
}

impl Moderator for AgentModerator {
    fn agent(&self) -> &str {
        self.driver.name()
    }

    fn rate(&self, input: &RatingInput<'_>) -> Result<Rating, MemberError> {
        let mut d = String::new();
        d.push_str("# Moderating a discussion\n\n");
        d.push_str(&format!(
            "- Round: {}\n\n## Topic\n\n{}\n\n",
            input.round.title(),
            input.topic
        ));
        for (role, c) in input.contributions {
            d.push_str(&format!("## {role}\n\n{}\n\n", c.text));
            for s in &c.positions {
                d.push_str(&format!(
                    "- on {}: {} (because {})\n",
                    s.issue, s.stance, s.reason
                ));
            }
            d.push('\n');
        }
        d.push_str(
            "## What you hand over\n\nName the main issues and, for each, which members hold \
             which position. You steer the process only: never say which position is right, \
             never side with a member. Your note (at most 300 words) may ask for evidence, \
             point at an issue not yet discussed, or ask for a new angle.\n\n\
             `rating.json`: {\"issues\": [{\"issue\": \"…\", \"positions\": [{\"stance\": \"…\", \
             \"members\": [\"ROLE\"]}]}], \"note\": \"…\"}\n",
        );
        let text = ask(
            self.driver.as_ref(),
            &self.context,
            "moderator",
            d,
            RATING_FILE,
        )?;
        let block = super::contract::json_block(&text).unwrap_or(&text);
        serde_json::from_str(block)
            .map_err(|e| MemberError::Failed(format!("{RATING_FILE} is not a rating: {e}")))
    }
}
