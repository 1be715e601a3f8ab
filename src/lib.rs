//! git-tlv4: run a team of AI coding agents through a development pipeline, with every bit
//! of state kept in the git repository it works on.
//!
//! Layering: `cli → coordinator → quality → agents → worktree → store → git`, with `model`
//! and `error` at the bottom; `ARCHITECTURE.md` has the map and `bench/arch/deps.py` checks
//! that no two modules depend on each other.

pub mod agents;
pub mod cli;
pub mod clock;
pub mod config;
pub mod coordinator;
pub mod environment;
pub mod error;
pub mod git;
pub mod hooks;
pub mod host;
pub mod model;
pub mod process;
pub mod quality;
pub mod sandbox;
pub mod specdoc;
pub mod store;
#[cfg(test)]
mod testutil;
pub mod trust;
pub mod ui;
pub mod worktree;

pub use error::{Error, Result};
