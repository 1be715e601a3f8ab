//! The checkouts that record nothing: a read-only view of a commit for document tasks, and the
//! tester's writable scratch checkout.

use std::path::Path;

use gix::ObjectId;

use super::{Checkout, OnDrop, pool, prepare, set_writable};
use crate::error::{Error, Result};
use crate::store::Store;

/// A read-only checkout of a commit for document tasks: detached, locked, every file and
/// directory made read-only, removed after use (or when dropped).
pub struct ReadOnlyView {
    pub(super) checkout: Checkout,
}

impl ReadOnlyView {
    /// Checks out `from` (the session tip) detached in a new locked worktree and makes it
    /// read-only.
    pub fn create(store: &Store, from: ObjectId) -> Result<ReadOnlyView> {
        let hex = from.to_string();
        let reason = format!("{} (read-only view of {hex})", crate::git::lock_reason());
        let checkout = Checkout::add(
            store,
            &format!("tlv4-view-{}-", &hex[..12]),
            "view",
            &reason,
            &["--detach", hex.as_str()],
            OnDrop::Remove,
        )?;
        let view = ReadOnlyView { checkout };
        set_writable(&view.checkout.path, false)
            .map_err(|e| Error::io("cannot make the read-only view read-only", e))?;
        Ok(view)
    }

    /// The root of the checkout.
    pub fn path(&self) -> &Path {
        &self.checkout.path
    }

    /// Unlocks and removes the view.
    pub fn remove(mut self) -> Result<()> {
        self.checkout.teardown()
    }
}

/// A writable checkout of one commit for the tester: detached, locked, full (whatever the
/// user's sparse cone), without the user's hooks, removed after use or when dropped. What is
/// written in it (build output, test caches) is never recorded.
pub struct ScratchCheckout {
    checkout: Checkout,
}

impl Checkout {
    /// Prepares the leased checkout (at `commit`) by `plan`; see [`prepare::prepare`]. A
    /// checkout not from a pool keeps its stamp nowhere and runs every step.
    pub(super) fn prepare(
        &mut self,
        repo: &gix::Repository,
        commit: ObjectId,
        plan: &crate::environment::Plan,
        timeout: std::time::Duration,
    ) -> Result<std::result::Result<prepare::Prepared, prepare::NotPrepared>> {
        let stamp = match &self.lease {
            Some(l) => l.state_file("setup.json"),
            // Kept: the checkout's temporary directory is made beside the stamp.
            None => tempfile::tempdir()
                .map_err(|e| Error::io("cannot make a temporary directory", e))?
                .keep()
                .join("setup.json"),
        };
        let out = prepare::prepare(repo, commit, &self.path, &stamp, plan, timeout)?;
        if let Ok(p) = &out
            && p.made.iter().any(|m| !m.cached)
        {
            self.grown = true;
        }
        Ok(out)
    }
}

impl ScratchCheckout {
    /// Prepares the checkout (of `commit`) by `plan`: setup steps whose inputs changed since
    /// this checkout last ran them, then the check of where the project's code comes from.
    pub fn prepare(
        &mut self,
        repo: &gix::Repository,
        commit: ObjectId,
        plan: &crate::environment::Plan,
        timeout: std::time::Duration,
    ) -> Result<std::result::Result<prepare::Prepared, prepare::NotPrepared>> {
        self.checkout.prepare(repo, commit, plan, timeout)
    }

    /// Bounds the disk its pool keeps by `max_disk` (`[environment] max_disk`) when it goes
    /// back.
    pub fn bound(&mut self, max_disk: Option<u64>) {
        if let Some(l) = &mut self.checkout.lease {
            l.bound(max_disk);
        }
    }

    /// Whether the checkout was made for this run (else a kept one was reused).
    pub fn reused(&self) -> bool {
        self.checkout.lease.as_ref().is_some_and(|l| !l.fresh)
    }

    /// Checks out `commit` detached in a new locked worktree named `name` (the task).
    pub fn create(store: &Store, commit: ObjectId, name: &str) -> Result<ScratchCheckout> {
        let hex = commit.to_string();
        let reason = format!("{} (test checkout of {hex})", crate::git::lock_reason());
        let _ = name;
        let checkout = Checkout::leased(
            store,
            pool::Purpose::Test,
            &reason,
            pool::Target::Detached(commit),
            OnDrop::Remove,
        )?;
        Ok(ScratchCheckout { checkout })
    }

    /// The root of the checkout.
    pub fn path(&self) -> &Path {
        &self.checkout.path
    }
}
