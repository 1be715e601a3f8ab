//! What an agent playing a seat (`[discuss.members]` of `.tlv4.toml`) is told and hands
//! back: the turn's prompt is its task description, and its contribution comes back as the
//! file `contribution.json` (the moderator's rating: `rating.json`) of an ordinary result
//! block. The protocol's own contract is checked on that file by the engine; the runs are
//! made and recorded by `coordinator::discussion`.

use super::{MemberError, Rating, RatingInput};

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
