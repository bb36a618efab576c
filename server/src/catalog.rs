//! The catalog keeper: with `catalog_zone` set, the server keeps that
//! catalog zone (RFC 9432) listing every zone the database serves, so that
//! secondaries consuming it provision zones by themselves.
//!
//! ```text
//!  every CHECK: the registry's zone-set epoch moved (a zone created or
//!     deleted, seen by the poll) ─► signer::catalog::sync ─► member PTRs
//!     added and removed (one serial per change-set) ─► served, transferred
//!     and NOTIFYed like any zone
//!  a failed sync is logged and tried again after RETRY
//! ```
//!
//! Several servers keeping one catalog do the same edits; the first wins
//! and the others find nothing left to do.

use crate::cache::ZoneRegistry;
use backend_mongo::{Name, Store};
use std::sync::Arc;
use std::time::Duration;

/// How often the zone-set epoch is looked at (a read of memory).
const CHECK: Duration = Duration::from_millis(200);
/// Pause after a failed sync.
const RETRY: Duration = Duration::from_secs(5);

/// Keeps `catalog` in step with the zones served, forever.
pub async fn keep_catalog(store: Store, registry: Arc<ZoneRegistry>, catalog: Name) {
    let mut synced_epoch = None;
    loop {
        let epoch = registry.zones_epoch();
        if synced_epoch != Some(epoch) {
            match signer::catalog::sync(&store, &catalog).await {
                Ok(done) => {
                    if done.created || done.added + done.removed > 0 {
                        tracing::info!(%catalog, created = done.created, added = done.added, removed = done.removed, serial = ?done.serial, "catalog zone updated");
                    }
                    synced_epoch = Some(epoch);
                }
                Err(e) => {
                    tracing::warn!(%catalog, error = %e, "catalog zone: sync failed; trying again");
                    tokio::time::sleep(RETRY).await;
                    continue;
                }
            }
        }
        tokio::time::sleep(CHECK).await;
    }
}
