//! Signers made ready for DNS UPDATE at start: each zone an `update` key
//! names in `zones=` that is secured has its chain read once, in the
//! background, so that the first UPDATE into it does not read it whole.
//!
//! ```text
//!  start ─► the update keys' zones= (sorted, once each) ─► one task, zone
//!     after zone: signer::kept_signer::warm ─► kept; the edit path takes
//!     it up │ not served, not secured ─► nothing │ a fault ─► logged
//! ```
//!
//! An UPDATE that comes while its zone's chain is read waits for that
//! signer (`kept_signer`'s gate) rather than reading the chain again.

use crate::tsig::TsigKey;
use backend_mongo::Store;
use dns::Name;
use std::time::Instant;

/// Starts the warm-up task for the zones `keys` may update.
pub fn warm_signers(store: &Store, keys: &[TsigKey]) {
    let mut zones: Vec<Name> = keys
        .iter()
        .filter(|k| k.update)
        .flat_map(|k| k.zones.iter().cloned())
        .collect();
    zones.sort();
    zones.dedup();
    if zones.is_empty() {
        return;
    }
    let store = store.clone();
    tokio::spawn(async move {
        for zone in zones {
            let t = Instant::now();
            match signer::kept_signer::warm(&store, &zone).await {
                Ok(Some(links)) => tracing::info!(%zone, links,
                    took_ms = t.elapsed().as_millis() as u64, "signer ready for updates"),
                Ok(None) => {}
                Err(e) => tracing::warn!(%zone, error = %e,
                    "signer not made ready for updates; the first UPDATE reads the chain"),
            }
        }
    });
}
