//! git-tlv4: run a team of AI coding agents through a development pipeline, with every bit
//! of state kept in the git repository it works on.
//!
//! This crate is the top of the workspace: `cli → coordinator → quality`, over the crates
//! `tlv4-agents`, `tlv4-review`, `tlv4-store`, `tlv4-specdoc` and `tlv4-core`. `ARCHITECTURE.md`
//! has the map and `bench/arch/layers.py` checks that the code keeps to it.

// Unit tests say on stderr why they skip (no sandbox, no tool); the library never prints.
#![cfg_attr(test, allow(clippy::print_stdout, clippy::print_stderr))]

/// The agents are a crate of their own, `tlv4-agents`, which cannot name the store.
pub use tlv4_agents as agents;
pub mod cli;
pub mod coordinator;
pub mod quality;
pub mod ui;
