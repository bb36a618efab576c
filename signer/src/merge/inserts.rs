//! New nodes inserted while the rest of their batch is still being signed.
//!
//! ```text
//!  Inserts::new ─► add(index, node) as each is signed
//!     every INSERT_AT_ONCE nodes ─► one insert command on a task of its own
//!  finish() ─► the rest sent, every task awaited
//!     ─► Inserted: the nodes sent, and those another writer had inserted
//!        meanwhile (not written: the caller merges them)
//! ```
//!
//! On a runtime with more than one worker the database writes while the
//! signer signs; on one worker the tasks run when `finish` waits.

use crate::SignError;
use backend_mongo::dnssec_store::FullNode;
use backend_mongo::{Store, StoreError};
use dns::Name;
use tokio::task::JoinHandle;

/// Nodes per insert command.
const INSERT_AT_ONCE: usize = 500;

/// One insert in flight: the indices of its nodes, and the task.
type Sent = (Vec<usize>, JoinHandle<Result<Vec<usize>, StoreError>>);

/// Inserts under way into one version of one zone.
pub(super) struct Inserts {
    store: Store,
    zone: Name,
    ver: i64,
    /// Nodes waiting for the next command: (index, node).
    pending: Vec<(usize, FullNode)>,
    sent: Vec<Sent>,
}

/// What the inserts did, by the indices the caller gave.
#[derive(Default)]
pub(super) struct Inserted {
    /// Every node sent, in the order added.
    pub(super) new: Vec<usize>,
    /// Those another writer had inserted meanwhile: not written.
    pub(super) raced: Vec<usize>,
}

impl Inserted {
    /// The nodes this writer inserted.
    pub(super) fn written(&self) -> impl Iterator<Item = usize> + '_ {
        self.new.iter().copied().filter(|i| !self.raced.contains(i))
    }
}

impl Inserts {
    /// No insert yet, into version `ver` of `zone`.
    pub(super) fn new(store: &Store, zone: &Name, ver: i64) -> Self {
        Inserts {
            store: store.clone(),
            zone: zone.clone(),
            ver,
            pending: Vec::new(),
            sent: Vec::new(),
        }
    }

    /// Adds node `index` (signed whole); a full command is sent at once.
    pub(super) fn add(&mut self, index: usize, node: &FullNode) {
        self.pending.push((index, node.clone()));
        if self.pending.len() >= INSERT_AT_ONCE {
            self.send();
        }
    }

    /// Sends what is pending as one insert on a task of its own.
    fn send(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let (indices, nodes): (Vec<usize>, Vec<FullNode>) =
            std::mem::take(&mut self.pending).into_iter().unzip();
        let (store, zone, ver) = (self.store.clone(), self.zone.clone(), self.ver);
        let task =
            tokio::spawn(async move { store.insert_new_full_nodes(&zone, ver, &nodes).await });
        self.sent.push((indices, task));
    }

    /// Sends the rest and waits for every insert; the first failure wins.
    pub(super) async fn finish(mut self) -> Result<Inserted, SignError> {
        self.send();
        let mut inserted = Inserted::default();
        let mut failure = None;
        for (indices, task) in self.sent {
            let raced = match task.await {
                Ok(Ok(raced)) => raced,
                Ok(Err(e)) => {
                    failure.get_or_insert(SignError::Store(e));
                    Vec::new()
                }
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                Err(e) => {
                    let why = format!("an insert was cut short: {e}");
                    failure.get_or_insert(SignError::Store(StoreError::Busy(why)));
                    Vec::new()
                }
            };
            inserted.raced.extend(raced.iter().map(|&r| indices[r]));
            inserted.new.extend(indices);
        }
        match failure {
            Some(e) => Err(e),
            None => Ok(inserted),
        }
    }
}
