//! git-tlv4's core: what every other part stands on.
//!
//! Plain types (`model`) and the one error type (`error`) at the bottom; the one place that
//! runs `git` (`git`); the one process runner (`process`) and the kernel's confinement of what
//! it starts (`sandbox`); the project's own setup (`environment`), run once the user trusted
//! it (`trust`: the repository's configuration files read, judged against the trust record);
//! the configuration (`config`), the user's hooks (`hooks`), and which paths an artifact may
//! take in a session's pipeline folder (`layout`). Nothing here names a ref or writes a
//! session — that is `tlv4-store`, which the agents do not depend on — and nothing prints,
//! runs an agent or knows a pipeline: `ARCHITECTURE.md` has the map and the edges allowed
//! between the crates.

// Unit tests say on stderr why they skip (no sandbox, no tool); the library never prints.
#![cfg_attr(test, allow(clippy::print_stdout, clippy::print_stderr))]

pub mod clock;
pub mod config;
pub mod environment;
pub mod error;
pub mod git;
pub mod hooks;
pub mod host;
pub mod layout;
pub mod model;
pub mod process;
pub mod sandbox;
#[cfg(any(test, feature = "testutil"))]
pub mod testutil;
pub mod text;
pub mod trust;

pub use error::{Error, Result};
