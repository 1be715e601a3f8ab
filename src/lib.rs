//! git-tlv4: run a team of AI coding agents through a development pipeline, with every bit
//! of state kept in the git repository it works on.
//!
//! Layering: `cli → coordinator → quality → agents → worktree → store → git`, with `model`
//! and `error` at the bottom; `ARCHITECTURE.md` has the map and `bench/arch/deps.py` checks
//! that no two modules depend on each other.

// Unit tests say on stderr why they skip (no sandbox, no tool); the library never prints.
#![cfg_attr(test, allow(clippy::print_stdout, clippy::print_stderr))]

pub mod agents;
pub mod cli;
pub mod coordinator;
pub mod quality;
pub mod ui;
