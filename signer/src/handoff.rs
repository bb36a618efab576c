//! Signing what a writer wrote unsigned into a secured zone because
//! another signer held the lease (an importer, a record edit).
//!
//! ```text
//!  sign_unsigned_writes(zone, since, lease?)
//!    not secured ─► nothing
//!    no lease ─► lease::take_behind_signers (≤ 15 s, behind waiting signers)
//!                  └ still held (resign --follow): the holder signs them
//!    secured still? ─► sign_changes_since(since) (a switch meanwhile: again)
//! ```

use crate::{lease, sign_changes_since, Report, SignError};
use backend_mongo::{Name, Store, StoreError};
use std::time::Duration;

/// How long a writer that wrote unsigned into a secured zone waits for
/// the signing lease to sign its names itself.
pub const UNSIGNED_HANDOFF_WAIT: Duration = Duration::from_secs(15);

/// True when `zone` is secured (its writes must be signed).
pub async fn zone_secured(store: &Store, zone: &Name) -> Result<bool, StoreError> {
    match store.dnssec_config(zone).await {
        Ok(c) => Ok(c.secured),
        Err(StoreError::NoSuchZone(_)) => Ok(false),
        Err(e) => Err(e),
    }
}

/// After an unsigned write by `what`: if the zone is secured now (it was,
/// and the lease was held by another signer; or it was secured while the
/// write ran), signs what writers changed since generation `since`, under
/// the signing lease (`lease`, or taken now behind any waiting signer),
/// unless another signer still holds it (that signer then signs them:
/// `resign --follow`). Returns the report when it signed.
pub async fn sign_unsigned_writes(
    store: &Store,
    zone: &Name,
    since: i64,
    lease: Option<lease::Lease>,
    what: &str,
) -> Result<Option<Report>, SignError> {
    if !zone_secured(store, zone).await? {
        return Ok(None);
    }
    let lease = match lease {
        Some(l) => l,
        // A one-shot signer (resign, secure-zone) ends soon; `--follow`
        // holds the lease for good and signs these names itself. Behind
        // any signer waiting for it: one that takes the lease after these
        // writes signs them too.
        None => match lease::take_behind_signers(store, zone, what, UNSIGNED_HANDOFF_WAIT).await {
            Ok(l) => l,
            Err(SignError::Busy(holder)) => {
                tracing::info!(%zone, %holder, "names written unsigned are left to the signer holding the lease");
                return Ok(None);
            }
            Err(e) => return Err(e),
        },
    };
    // The zone may have been unsecured while we waited for the lease.
    if !zone_secured(store, zone).await? {
        return lease.release_with(Ok(None)).await;
    }
    let mut r = sign_changes_since(store, zone, since).await;
    for _ in 0..3 {
        // A replace switched the zone while we signed (or as we began: the
        // version we read is gone, its apex with it): sign what is served
        // now (the records then call for a full pass).
        match &r {
            Err(SignError::Store(StoreError::Conflict(_)))
            | Err(SignError::Plan(crate::plan::PlanError::NoSoa(_))) => {
                r = sign_changes_since(store, zone, since).await;
            }
            _ => break,
        }
    }
    lease.release_with(r).await.map(Some)
}
