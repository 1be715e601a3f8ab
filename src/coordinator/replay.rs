//! What the `replay` agent reads of an earlier session, read here through the store: the
//! agents cannot name a ref (`tlv4-agents` does not depend on `tlv4-store`), so the roster is
//! handed [`StoreRecordings`], which finds a recorded session's tip (its branch, else its
//! archive ref) and reads its run records and the blobs they name.

use std::collections::BTreeMap;
use std::sync::Arc;

use gix::ObjectId;

use crate::agents::replay::{Recording, Recordings};
use tlv4_core::error::{Error, Result};
use tlv4_core::model::SessionId;
use tlv4_store::store::{Store, archive_ref, session_dir, session_ref};

/// The sessions of one repository, for the replay driver.
pub struct StoreRecordings {
    repo: gix::ThreadSafeRepository,
}

impl StoreRecordings {
    /// The recorded sessions of `store`'s repository.
    pub fn new(store: &Store) -> StoreRecordings {
        StoreRecordings {
            repo: store.repo().clone().into_sync(),
        }
    }
}

impl Recordings for StoreRecordings {
    fn open(&self, sid: &SessionId) -> Result<Option<Arc<dyn Recording>>> {
        let store = Store::from_repo(self.repo.to_thread_local())?;
        let Some(tip) = store
            .try_ref(&session_ref(sid))?
            .or(store.try_ref(&archive_ref(sid))?)
        else {
            return Ok(None);
        };
        Ok(Some(Arc::new(Recorded {
            repo: self.repo.clone(),
            dir: session_dir(sid),
            tree: store.commit_tree(tip)?,
        })))
    }
}

/// One recorded session at the tip it had when the roster was loaded.
struct Recorded {
    /// A handle for each reading thread (a `gix::Repository` is not `Sync`).
    repo: gix::ThreadSafeRepository,
    /// Its pipeline folder.
    dir: String,
    /// The tree of its tip.
    tree: ObjectId,
}

impl Recording for Recorded {
    fn runs(&self, task: &str) -> Result<BTreeMap<String, Vec<u8>>> {
        let store = Store::from_repo(self.repo.to_thread_local())?;
        store.read_folder(self.tree, &format!("{}/runs/{task}", self.dir), &[])
    }

    fn blob(&self, id: ObjectId) -> Result<Vec<u8>> {
        let repo = self.repo.to_thread_local();
        let blob = repo
            .find_blob(id)
            .map_err(|e| Error::git(&format!("cannot read the recorded blob {id}"), e))?;
        Ok(blob.data.clone())
    }
}
