//! End-to-end tests: the real binary against real git in throwaway repositories, checked
//! with git itself.

// A bench or test binary reports to its terminal: it may print.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod common;

pub(crate) mod agents;
mod bad_input;
pub(crate) mod bestof;
mod candidates;
pub(crate) mod citizen;
mod claims;
mod commands;
mod concurrency;
mod conformance;
mod crash;
mod discuss;
mod environment;
mod estimate;
mod hooks;
mod oddrepo;
mod output;
mod pictures;
pub(crate) mod pipelines;
mod process;
mod real_model_bounds;
mod remote;
mod review;
mod review_cli;
mod sandbox;
mod sessions;
mod snapshot;
mod spend;
mod store;
mod stuck;
mod trust;
mod worker;
