//! The coordinator: pipelines as data, dispatch of their task graphs, the scheduling loop
//! that runs them ([`run`]), and the user's decisions, completion actions, undo and recovery.

pub mod analysis;
pub mod bestof;
pub mod budget;
pub mod complete;
pub mod decide;
pub mod discussion;
pub mod followup;
pub mod lease;
mod opinion;
pub mod pick;
pub mod pipeline;
pub mod reconcile;
mod record;
pub mod recover;
pub mod replay;
pub mod reset;
pub mod revise;
pub mod run;
pub mod start;
mod worker;

#[cfg(test)]
mod tests;

pub(crate) use lease::mark_claim_refs;
pub use pipeline::{PipelineSpec, Supervision};

/// The names a configuration's `[roles]` and `[discuss.perspectives]` may use: the roles of
/// the builtin pipelines and their specialists, and the builtin discuss perspectives. Built
/// once for a roster (the roster, below this layer, cannot know them).
pub fn roster_names() -> crate::agents::roster::Known {
    let roles = PipelineSpec::builtin()
        .map(|s| {
            s.role_names()
                .chain(s.specialists().keys().map(String::as_str))
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    crate::agents::roster::Known {
        roles,
        perspectives: crate::quality::discuss::perspective_names(),
    }
}
pub use start::{StartOptions, start, start_with};
