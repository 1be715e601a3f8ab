//! The coordinator: pipelines as data, dispatch of their task graphs, and (later) the
//! scheduling loop that runs them.

pub mod pipeline;

pub use pipeline::{PipelineSpec, Supervision};
