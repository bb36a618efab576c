//! The catalog keeper: with `catalog_zone` set, the server keeps that
//! catalog zone (RFC 9432) listing every zone the database serves, so that
//! secondaries consuming it provision zones by themselves.
//!
//! ```text
//!  first pass (and whenever the registry's mark went back):
//!     signer::catalog::sync ─► every zone and the whole catalog read
//!     (the full reconciliation, once per start)
//!  every CHECK: the registry's mark (every zone document of a generation
//!     at or below it was visible when the change poll moved it) moved ─►
//!     signer::catalog::sync_changes(since = the mark the last pass began
//!     at) ─► only the zone documents changed since, and their catalog
//!     entries ─► member PTRs added and removed (one serial per
//!     change-set) ─► served, transferred and NOTIFYed like any zone
//!  reads counted in catalog_zone_reads (/stats, /metrics)
//!  a failed pass is logged and tried again after RETRY, from the same mark
//! ```
//!
//! Why the mark read before a pass is the next pass's `since`: every
//! document at or below it was visible before the pass read the zones, so
//! the pass saw it; anything above it the next pass reads. What a pass
//! reads grows with the zones changed, never with the zones served.
//!
//! Several servers keeping one catalog do the same edits; the first wins
//! and the others find nothing left to do.

use crate::cache::Counters;
use crate::zones::ZoneRegistry;
use backend_mongo::Store;
use dns::Name;
use signer::catalog::CatalogSync;
use signer::SignError;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// How often the registry's mark is looked at (a read of memory).
const CHECK: Duration = Duration::from_millis(200);
/// Pause after a failed pass.
const RETRY: Duration = Duration::from_secs(5);

/// Keeps `catalog` in step with the zones served, forever.
pub async fn keep_catalog(
    store: Store,
    registry: Arc<ZoneRegistry>,
    catalog: Name,
    counters: Arc<Counters>,
) {
    // The mark the last good pass began at; `None`: a full pass is next.
    let mut since: Option<i64> = None;
    loop {
        let Some(mark) = registry.applied_through() else {
            tokio::time::sleep(CHECK).await;
            continue;
        };
        if since != Some(mark) {
            match pass(&store, &catalog, since, mark).await {
                Ok(done) => {
                    counters
                        .catalog_reads
                        .fetch_add(done.reads as u64, Ordering::Relaxed);
                    if done.created || done.added + done.removed > 0 {
                        tracing::info!(%catalog, created = done.created, added = done.added, removed = done.removed, serial = ?done.serial, reads = done.reads, "catalog zone updated");
                    }
                    since = Some(mark);
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

/// One pass: the changes since the last mark, or everything on the first
/// pass (and if the mark ever went back).
async fn pass(
    store: &Store,
    catalog: &Name,
    since: Option<i64>,
    mark: i64,
) -> Result<CatalogSync, SignError> {
    match since {
        Some(since) if since <= mark => signer::catalog::sync_changes(store, catalog, since).await,
        _ => signer::catalog::sync(store, catalog).await,
    }
}
