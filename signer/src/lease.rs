//! The signing lease: one signing writer per zone, enforced.
//!
//! ```text
//!  take(zone, what) ─► Store::lock(SIGN_LEASE) (waits up to the lease wait)
//!     ├─ held ─► renewed in the background while the signer runs
//!     └─ busy ─► SignError::Busy naming the holder and its expiry
//!  take_behind_signers(zone) ─► Store::lock_waiting (behind): as take, but never
//!     before a signer waiting in take (an importer's own unsigned names)
//!  a killed holder stops renewing; after the lease's 30 s anyone takes over
//! ```
//!
//! Every signing operation takes it: `secure-zone`, `unsecure-zone`,
//! `resign` (and `--follow`, for as long as it follows), key changes, and
//! the importer when it signs what it writes (`docs/schema.md`,
//! "Concurrency").

use crate::SignError;
use backend_mongo::lock::{Held, RenewGuard, Waiting, SIGN_LEASE};
use backend_mongo::{Name, Store, StoreError};
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

/// Takes the lease if nobody holds it and no signer waits for it, at
/// once; `None` otherwise (an importer then writes unsigned and hands its
/// names to the signer).
pub async fn try_take(store: &Store, zone: &Name, what: &str) -> Result<Option<Lease>, SignError> {
    if store.is_wanted(SIGN_LEASE, zone).await? {
        return Ok(None);
    }
    match store.try_lock(SIGN_LEASE, zone, what).await? {
        Ok(held) => held_or_busy(Ok(held)).map(Some),
        Err(_) => Ok(None),
    }
}
