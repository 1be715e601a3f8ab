//! git-tlv4's session store and what writes through it.
//!
//! The session store (`store`, the only code that knows tree layout and ref names, and the
//! only writer of refs); what a session spent, read from its history (`ledger`); the
//! checkouts agents and tests work in, prepared by the project's setup and merged back into
//! the session (`worktree`); a session's pinned configuration, a ref of its own (`pin`).
//! Everything below it (plain types, git, processes, configuration, trust's reading of the
//! repository's files) is `tlv4-core`; the agents (`tlv4-agents`) do not depend on this
//! crate, so that they cannot name a ref. `ARCHITECTURE.md` has the map.

// Unit tests say on stderr why they skip (no sandbox, no tool); the library never prints.
#![cfg_attr(test, allow(clippy::print_stdout, clippy::print_stderr))]

pub mod ledger;
pub mod pin;
pub mod store;
#[cfg(any(test, feature = "testutil"))]
pub mod testutil;
pub mod worktree;
