//! Signing what a writer wrote unsigned into a secured zone because
//! another signer held the lease (an importer, a record edit).
//!
//! ```text
//!  sign_unsigned_writes(zone, since, lease?)
//!    not secured ─► nothing
//!    held by resign --follow ─► nothing (it signs them)
//!    no lease ─► lease::take_behind_signers (≤ 40 s, behind waiting signers)
//!                  └ still held (resign --follow): the holder signs them
//!    secured still? ─► sign_changes_since(since) (a switch meanwhile: again)
//!  sign_handed_over(zone, since) — a one-shot holder before it lets go:
//!    unsigned change records since it took the lease? ─► sign_changes_since
//! ```

use crate::catchup::unsigned_writes_since;
use crate::{lease, sign_changes_since, Report, SignError};
use backend_mongo::lock::SIGN_LEASE;
use backend_mongo::{Store, StoreError};
use dns::Name;
use std::time::Duration;

/// How long a writer that wrote unsigned into a secured zone waits for
/// the signing lease to sign its names itself: `MONGODNS_HANDOFF_WAIT_S`
/// seconds, default 40 — longer than a killed holder's lease lives (30 s
/// after its last renewal), so a dead holder never strands its names. A
/// live holder past that wait signs them before it lets the lease go
/// ([`sign_handed_over`]), or follows the zone (`resign --follow`).
pub fn unsigned_handoff_wait() -> Duration {
    lease::seconds_from_env("MONGODNS_HANDOFF_WAIT_S", 40)
}

/// True when `zone` is secured (its writes must be signed).
pub async fn zone_secured(store: &Store, zone: &Name) -> Result<bool, StoreError> {
    match store.dnssec_config(zone).await {
        Ok(c) => Ok(c.secured),
        Err(StoreError::NoSuchZone(_)) => Ok(false),
        Err(e) => Err(e),
    }
}

/// True while `resign --follow` holds the signing lease of `zone`: it
/// signs the names of every unsigned change record itself, and keeps the
/// lease for good (waiting for it would be in vain).
pub async fn follower_holds(store: &Store, zone: &Name) -> Result<bool, StoreError> {
    let holder = store.lock_holder(SIGN_LEASE, zone).await?;
    Ok(holder.is_some_and(|(h, _)| {
        h.owner.contains(&format!(":{}:", crate::follow::FOLLOWER))
            && h.until > backend_mongo::bson::DateTime::now()
    }))
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
        None if follower_holds(store, zone).await? => {
            tracing::info!(%zone, "names written unsigned are left to resign --follow");
            return Ok(None);
        }
        // A one-shot signer (resign, secure-zone) ends soon; `--follow`
        // holds the lease for good and signs these names itself. Behind
        // any signer waiting for it: one that takes the lease after these
        // writes signs them too.
        None => {
            match lease::take_behind_signers(store, zone, what, unsigned_handoff_wait()).await {
                Ok(l) => l,
                Err(SignError::Busy(holder)) => {
                    tracing::info!(%zone, %holder, "names written unsigned are left to the signer holding the lease");
                    return Ok(None);
                }
                Err(e) => return Err(e),
            }
        }
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

/// Before a one-shot signer (`resign`, a signing import) gives up the
/// lease of `zone`, taken at generation `since`: signs what other writers
/// wrote unsigned meanwhile. They handed their names to the holder, and
/// may have stopped waiting for it (or died waiting). Nothing is read
/// beyond the change records when there were none.
pub async fn sign_handed_over(
    store: &Store,
    zone: &Name,
    since: i64,
) -> Result<Option<Report>, SignError> {
    if !zone_secured(store, zone).await? {
        return Ok(None);
    }
    let now = store
        .find_zone(zone)
        .await?
        .ok_or_else(|| StoreError::NoSuchZone(zone.to_string()))?;
    if !unsigned_writes_since(store, zone, since, now.gen).await? {
        return Ok(None);
    }
    tracing::info!(%zone, "signing what other writers wrote unsigned while the lease was held");
    sign_changes_since(store, zone, since).await.map(Some)
}
