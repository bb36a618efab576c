//! The signing lease: one signing writer per zone, enforced.
//!
//! ```text
//!  take(zone, what) ─► Store::lock(SIGN_LEASE) (waits up to the lease wait)
//!     ├─ held ─► renewed in the background while the signer runs
//!     └─ busy ─► SignError::Busy naming the holder and its expiry
//!  take_behind_signers(zone) ─► Store::lock_waiting (behind): as take, but never
//!     before a signer waiting in take (an importer's own unsigned names)
//!  a killed holder stops renewing; after the lease's 30 s anyone takes over
//!  take_soon(zone) ─► try_take; held by the signing service's pass ─► wait
//!     for the pass to end (it is short), then take it
//!  take_service(zone, ttl) ─► SERVICE_LEASE: which `serve` process looks
//!     after the zone (held for good, renewed; `serve --lease`, 30 s); the
//!     signing lease only per pass, with the same time-to-live
//! ```
//!
//! Every signing operation takes it: `secure-zone`, `unsecure-zone`,
//! `resign` (and `--follow`, for as long as it follows), key changes, and
//! the importer when it signs what it writes (`docs/schema.md`,
//! "Concurrency").

use crate::SignError;
use backend_mongo::lock::{Held, LockKind, RenewGuard, Waiting, SERVICE_LEASE, SIGN_LEASE};
use backend_mongo::{Store, StoreError};
use dns::Name;
use std::time::Duration;

/// How long a signer waits for another's lease before failing:
/// `MONGODNS_LEASE_WAIT_S` seconds, default 30.
pub fn lease_wait() -> Duration {
    seconds_from_env("MONGODNS_LEASE_WAIT_S", 30)
}

/// `var` read as whole seconds, `default` when unset or not a number.
pub(crate) fn seconds_from_env(var: &str, default: u64) -> Duration {
    let secs = std::env::var(var)
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(default);
    Duration::from_secs(secs)
}

/// A signing lease held, and its renewal.
pub struct Lease {
    held: Option<Held>,
    _renew: RenewGuard,
}

impl Drop for Lease {
    /// A lease dropped on an error path is released in the background
    /// (best effort; otherwise it expires).
    fn drop(&mut self) {
        if let (Some(held), Ok(rt)) = (self.held.take(), tokio::runtime::Handle::try_current()) {
            rt.spawn(async move {
                let _ = held.release().await;
            });
        }
    }
}

impl Lease {
    /// True once another writer took the lease over (this one stopped
    /// renewing in time): the holder must not publish.
    pub fn is_lost(&self) -> bool {
        self.held.as_ref().is_none_or(|h| h.is_lost())
    }

    /// Gives the lease up, then returns `result`.
    pub async fn release_with<T>(mut self, result: Result<T, SignError>) -> Result<T, SignError> {
        let released = match self.held.take() {
            Some(h) => h.release().await,
            None => Ok(()),
        };
        let value = result?;
        released?;
        Ok(value)
    }
}

/// Takes the signing lease of `zone` for `what` (a command name), waiting
/// up to `wait` while another signer holds it.
pub async fn take(
    store: &Store,
    zone: &Name,
    what: &str,
    wait: Duration,
) -> Result<Lease, SignError> {
    held_or_busy(
        store
            .lock_waiting(SIGN_LEASE, zone, what, wait, Waiting::First)
            .await,
    )
}

/// Takes the signing lease like [`take`], but behind every signer that
/// waits for it with [`take`]: for an importer signing what it wrote
/// unsigned, which a signer taking the lease after it would sign anyway.
/// So a stream of imports cannot starve `secure-zone`.
pub async fn take_behind_signers(
    store: &Store,
    zone: &Name,
    what: &str,
    wait: Duration,
) -> Result<Lease, SignError> {
    held_or_busy(
        store
            .lock_waiting(SIGN_LEASE, zone, what, wait, Waiting::Behind)
            .await,
    )
}

/// The lease taken, renewed from now on; or who holds it.
fn held_or_busy(taken: Result<Held, StoreError>) -> Result<Lease, SignError> {
    match taken {
        Ok(held) => {
            let renew = held.keep_renewed();
            Ok(Lease {
                held: Some(held),
                _renew: renew,
            })
        }
        Err(StoreError::Conflict(why)) => Err(SignError::Busy(format!(
            "{why}: another signing writer is at work on this zone; \
             wait for it, or stop it (a killed one's lease expires within 30 s)"
        ))),
        Err(e) => Err(e.into()),
    }
}

/// The signing lease's holder name for a pass of the signing service.
pub const SERVICE_PASS: &str = "serve";

/// How long a writer waits for a pass of the signing service to end
/// before it writes unsigned: `MONGODNS_SERVICE_PASS_WAIT_S`, default 10.
fn service_pass_wait() -> Duration {
    seconds_from_env("MONGODNS_SERVICE_PASS_WAIT_S", 10)
}

/// As [`try_take`], but when the signing service holds the lease for one
/// of its passes (short: it gives the lease up after each), waits for the
/// pass to end and takes it: a writer then signs what it writes itself,
/// and no reader sees its records unsigned.
pub async fn take_soon(store: &Store, zone: &Name, what: &str) -> Result<Option<Lease>, SignError> {
    if let Some(lease) = try_take(store, zone, what).await? {
        return Ok(Some(lease));
    }
    let pass = format!(":{SERVICE_PASS}:");
    let holder = store.lock_holder(SIGN_LEASE, zone).await?;
    if !holder.is_some_and(|(h, _)| h.owner.contains(&pass)) {
        return Ok(None);
    }
    match take(store, zone, what, service_pass_wait()).await {
        Ok(lease) => Ok(Some(lease)),
        Err(SignError::Busy(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Takes the signing service's lease of `zone` at once, or `None` when
/// another `serve` process looks after it. Held with time-to-live `ttl`:
/// if this process dies, another takes the zone over that long after its
/// last renewal.
pub async fn try_take_service(
    store: &Store,
    zone: &Name,
    ttl: Duration,
) -> Result<Option<Lease>, SignError> {
    let kind = LockKind {
        ttl,
        ..SERVICE_LEASE
    };
    match store.try_lock(kind, zone, SERVICE_PASS).await? {
        Ok(held) => held_or_busy(Ok(held)).map(Some),
        Err(_) => Ok(None),
    }
}

/// Takes the lease if nobody holds it and no signer waits for it, at
/// once; `None` otherwise (an importer then writes unsigned and hands its
/// names to the signer).
pub async fn try_take(store: &Store, zone: &Name, what: &str) -> Result<Option<Lease>, SignError> {
    try_take_for(store, zone, what, SIGN_LEASE.ttl).await
}

/// As [`try_take`], held with time-to-live `ttl` (the signing service's
/// passes: a killed pass frees the zone as soon as its service lease does).
pub async fn try_take_for(
    store: &Store,
    zone: &Name,
    what: &str,
    ttl: Duration,
) -> Result<Option<Lease>, SignError> {
    if store.is_wanted(SIGN_LEASE, zone).await? {
        return Ok(None);
    }
    let kind = LockKind { ttl, ..SIGN_LEASE };
    match store.try_lock(kind, zone, what).await? {
        Ok(held) => held_or_busy(Ok(held)).map(Some),
        Err(_) => Ok(None),
    }
}
