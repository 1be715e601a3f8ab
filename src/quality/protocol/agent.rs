//! What an agent playing a seat (`[discuss.members]` of `.tlv4.toml`) is told and hands
//! back: the turn's prompt is its task description, and its contribution comes back as the
//! file `contribution.json` (the moderator's rating: `rating.json`) of an ordinary result
//! block. The protocol's own contract is checked on that file by the engine; the runs are
//! made and recorded by `coordinator::discussion`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use super::{Member, MemberError, Moderator, Rating, RatingInput, Turn};
use crate::agents::command::{Driver, DriverOutput, RunContext};
use crate::agents::{CodeTree, Outcome, TaskInput};
use tlv4_core::model::{Role, Session, Task};

/// The file a member's answer must hold.
pub const CONTRIBUTION_FILE: &str = "contribution.json";
/// The file a moderator's answer must hold.
pub const RATING_FILE: &str = "rating.json";

/// The prompt of a moderator's turn: the round's contributions and the rating's shape. It
/// forbids taking sides, and the rating has no field for it.
pub fn moderator_prompt(input: &RatingInput<'_>) -> String {
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
    d
}

/// Parses a moderator's `rating.json`; a field the rating does not have (a verdict on who is
/// right) is refused.
pub fn parse_rating(text: &str) -> Result<Rating, MemberError> {
    let block = super::contract::json_block(text).unwrap_or(text);
    serde_json::from_str(block)
        .map_err(|e| MemberError::Failed(format!("{RATING_FILE} is not a rating: {e}")))
}

/// One agent run of a discussion, for `runs/<TASK>/<attempt>/`.
pub struct RunLog {
    /// The task id of the turn.
    pub task: String,
    /// `member` or `moderator`.
    pub role: Role,
    /// The try, from 1.
    pub attempt: u32,
    /// What the driver handed back.
    pub output: DriverOutput,
    /// The file the answer had to hold.
    pub file: &'static str,
}

/// The runs of agents during one round, drained after it.
#[derive(Default, Clone)]
pub struct Runs(Arc<Mutex<Vec<RunLog>>>);

impl Runs {
    fn push(&self, r: RunLog) {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(r);
    }
    /// Every run so far, taken out.
    pub fn drain(&self) -> Vec<RunLog> {
        std::mem::take(
            &mut *self
                .0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }
    /// The next attempt number of `task`.
    fn attempt(&self, task: &str) -> u32 {
        let runs = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        runs.iter().filter(|r| r.task == task).count() as u32 + 1
    }
}

/// What an agent run of a seat needs.
#[derive(Clone)]
pub struct Seated {
    /// The agent.
    pub driver: Arc<dyn Driver>,
    /// The session, as stored.
    pub session: Session,
    /// The code the agent sees.
    pub code: CodeTree,
    /// Where its runs are kept for the record.
    pub runs: Runs,
    /// The prefix of the task ids of its turns (`DISCUSS-R`).
    pub prefix: String,
}

impl Seated {
    /// Runs the agent as `role` on `description` for task `task`; the text of `file` in
    /// its result.
    fn ask(
        &self,
        task: &str,
        role: Role,
        description: String,
        file: &'static str,
        deadline: Option<std::time::Instant>,
    ) -> std::result::Result<String, MemberError> {
        let id = task
            .parse()
            .map_err(|e| MemberError::Failed(format!("bad task id {task}: {e}")))?;
        let attempt = self.runs.attempt(task);
        let input = TaskInput {
            session: self.session.clone(),
            task: Task {
                id,
                role: role.clone(),
                status: tlv4_core::model::TaskStatus::InProgress,
                blocked_by: Vec::new(),
                phase: "discuss".into(),
                priority: tlv4_core::model::Priority::P1,
                discuss: None,
                inner_loop: false,
                attempts: attempt,
                description,
                owner: None,
                result: None,
            },
            // Everything the member may see is in the prompt: a Position turn cannot read
            // another member's output from the folder.
            folder: BTreeMap::new(),
            code: self.code.clone(),
        };
        let dir = tempfile::Builder::new()
            .prefix("tlv4-discuss-")
            .tempdir()
            .map_err(|e| {
                MemberError::Failed(format!("cannot make a directory for the agent: {e}"))
            })?;
        let ctx = RunContext {
            max_usd: None,
            workdir: dir.path().to_path_buf(),
            run_dir: None,
            attempt,
            // The driver says on it when the agent's service failed.
            meter: crate::agents::meter::Meter::new(),
            deadline,
            env: None,
            shell: None,
        };
        let out = self
            .driver
            .run(&input, &ctx)
            .map_err(|e| MemberError::Api(e.to_string()))?;
        let result = match &out.output.outcome {
            Outcome::Failed(why) => Err(match ctx.meter.api_failure() {
                Some(_) => MemberError::Api(why.clone()),
                None => MemberError::Failed(why.clone()),
            }),
            Outcome::Completed => out
                .output
                .files
                .iter()
                .find(|(p, _)| p == file)
                .map(|(_, b)| String::from_utf8_lossy(b).into_owned())
                .ok_or_else(|| MemberError::Failed(format!("the answer has no file {file}"))),
        };
        self.runs.push(RunLog {
            task: task.to_owned(),
            role,
            attempt,
            output: out,
            file,
        });
        result
    }
}

/// The task id of seat `role`'s turn in round `number`.
pub fn turn_task(prefix: &str, number: u32, role: &str) -> String {
    format!("{prefix}{number:02}-{}", role.to_ascii_uppercase())
}

/// A member played by an agent.
pub struct SeatMember(pub Seated);

impl Member for SeatMember {
    fn agent(&self) -> &str {
        self.0.driver.name()
    }
    fn speak(&self, turn: &Turn) -> std::result::Result<String, MemberError> {
        let description = format!(
            "{}\nEXPECTED: {} in `files`, holding the JSON object above.\n",
            turn.prompt, CONTRIBUTION_FILE
        );
        match self.0.ask(
            &turn_task(&self.0.prefix, turn.number, &turn.role),
            Role::Member,
            description,
            CONTRIBUTION_FILE,
            turn.deadline,
        ) {
            // No file is an answer out of contract: sent back like one.
            Err(MemberError::Failed(why)) if why.starts_with("the answer has no file") => Ok(why),
            other => other,
        }
    }
}

/// A moderator played by an agent; the number is the round it rates.
pub struct SeatModerator(pub Seated);

impl Moderator for SeatModerator {
    fn agent(&self) -> &str {
        self.0.driver.name()
    }
    fn rate(&self, input: &RatingInput<'_>) -> std::result::Result<Rating, MemberError> {
        let text = self.0.ask(
            &turn_task(&self.0.prefix, input.number, "moderator"),
            Role::Moderator,
            moderator_prompt(input),
            RATING_FILE,
            None,
        )?;
        parse_rating(&text)
    }
}
