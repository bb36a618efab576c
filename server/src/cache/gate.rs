//! The database gate: how many record-cache reads run at once, how many
//! may wait, and refusing the rest at once.
//!
//! ```text
//!  enter ─► a free slot? ─► read
//!        └► queue (queued < max_queued) ─► wait for a slot ─► read
//!        └► queue full ─► Busy now (counted as db_shed): SERVFAIL or stale
//! ```

use super::Counters;
use crate::backend::StoreError;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::{Semaphore, SemaphorePermit};

/// Bounds the database reads of the record cache: at most `slots` at once,
/// at most `max_queued` waiting for a slot. A read beyond that fails at
/// once with [`StoreError::Busy`] (SERVFAIL, or a stale answer) instead of
/// joining a queue it would time out in; the reads already queued finish
/// and warm the cache, so an overloaded cold server converges.
pub struct DbGate {
    slots: Semaphore,
    queued: AtomicUsize,
    max_queued: usize,
}

impl DbGate {
    /// A gate with `slots` concurrent reads and `max_queued` waiting.
    pub fn new(slots: usize, max_queued: usize) -> Self {
        DbGate {
            slots: Semaphore::new(slots.max(1)),
            queued: AtomicUsize::new(0),
            max_queued,
        }
    }

    /// Reads waiting for a slot now.
    pub fn queued(&self) -> usize {
        self.queued.load(Ordering::Relaxed)
    }

    /// Waits for a slot, or refuses at once when the queue is full.
    pub(super) async fn enter(
        &self,
        counters: &Counters,
    ) -> Result<SemaphorePermit<'_>, StoreError> {
        if let Ok(permit) = self.slots.try_acquire() {
            return Ok(permit);
        }
        let waiting = self.queued.fetch_add(1, Ordering::AcqRel);
        let _leave = LeaveQueue(&self.queued);
        if waiting >= self.max_queued {
            counters.db_shed.fetch_add(1, Ordering::Relaxed);
            return Err(StoreError::Busy(format!(
                "{waiting} reads already waiting for the database"
            )));
        }
        self.slots
            .acquire()
            .await
            .map_err(|_| StoreError::Busy("database gate closed".into()))
    }
}

/// Leaves the gate's queue when dropped.
struct LeaveQueue<'a>(&'a AtomicUsize);

impl Drop for LeaveQueue<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}
