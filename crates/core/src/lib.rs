//! git-tlv4's core: what every other part stands on.
//!
//! Plain types (`model`) and the one error type (`error`) at the bottom; the session store
//! (`store`, the only code that knows tree layout and ref names) over the one place that runs
//! `git` (`git`); the one process runner (`process`) and the kernel's confinement of what it
//! starts (`sandbox`); the checkouts agents and tests work in (`worktree`), prepared by the
//! project's own setup (`environment`) once the user trusted it (`trust`); the configuration
//! (`config`) and the user's hooks (`hooks`). Nothing here prints, runs an agent or knows a
//! pipeline: `ARCHITECTURE.md` has the map and the edges allowed between the crates.

// Unit tests say on stderr why they skip (no sandbox, no tool); the library never prints.
#![cfg_attr(test, allow(clippy::print_stdout, clippy::print_stderr))]

pub mod clock;
pub mod config;
pub mod environment;
pub mod error;
pub mod git;
pub mod hooks;
pub mod host;
pub mod ledger;
pub mod model;
pub mod process;
pub mod sandbox;
pub mod store;
#[cfg(any(test, feature = "testutil"))]
pub mod testutil;
pub mod text;
pub mod trust;
pub mod worktree;

pub use error::{Error, Result};
