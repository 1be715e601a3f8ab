//! The coordinator: pipelines as data, dispatch of their task graphs, the scheduling loop
//! that runs them ([`run`]), and the user's decisions, completion actions and undo.

pub mod analysis;
pub mod complete;
pub mod discussion;
pub mod followup;
pub mod lease;
mod opinion;
pub mod pipeline;
mod record;
pub mod reset;
pub mod revise;
pub mod run;
pub mod start;
mod worker;

#[cfg(test)]
mod tests;

pub use pipeline::{PipelineSpec, Supervision};
pub use start::{StartOptions, start, start_with};
