//! `mongodns-sign serve`: the signing service. One process keeps every
//! secured zone of a database signed and rolls its keys by policy; two or
//! more on one database share the work, one per zone at a time: the
//! zone's service lease says which, and that one takes the signing lease
//! for each pass and gives it up after it (writers then sign what they
//! write themselves).
//!
//! ```text
//!  every --discover-every: signed_zones() ─► a worker per zone not yet watched
//!  worker (zone.rs), every --interval:
//!     service lease? (try, never wait) ── no ─► standby (another serve has it)
//!     signing lease for this pass? ── no ─► next look (a writer signs now)
//!     ├─ a policy but not secured ─► secure-zone with the policy
//!     ├─ not marked ─► one full re-sign (every node gets its sx)
//!     ├─ generation moved ─► sign what other writers changed (follow)
//!     ├─ policy ─► key steps (keys.rs) ─► re-sign ─► keys stamped
//!     └─ signatures due (sx index) ─► refreshed, serial moved, published
//!  status (status.rs) ─► /metrics and /health on --control-listen (http.rs)
//!  stop (SIGTERM, SIGINT) ─► each worker ends its look after the current
//!     pass, gives its zone's service lease up (another process takes the
//!     zone at once) ─► return
//! ```

mod http;
mod keys;
mod status;
mod zone;

pub use http::serve_control;
pub use status::{Status, ZoneStatus};

use crate::SignError;
use backend_mongo::Store;
use dns::Name;
use std::collections::HashSet;
use std::time::Duration;
use tokio::sync::watch;

/// How the service runs.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// Time between two looks at each zone.
    pub interval: Duration,
    /// Time between two looks for zones newly secured or given a policy.
    pub discover_every: Duration,
    /// Time-to-live of the leases it holds: another process takes a zone
    /// over that long after this one stopped renewing (it died).
    pub lease: Duration,
    /// Nodes whose signatures are due, re-signed per pass (one signing
    /// lease held).
    pub refresh_batch: i64,
    /// Passes one look-up of what is due feeds (where the look-up is a
    /// scan, FerretDB, it is made once for them all).
    pub refresh_passes: i64,
    /// Signing threads for whole re-signs (0: one per core).
    pub threads: usize,
}

/// Runs the service until `stop` turns true: finds the zones to keep
/// signed and starts a worker for each; on stop, every worker ends its
/// look and gives its leases up, then it returns. Database faults are
/// reported in the status and retried; it fails only when the zone list
/// cannot be read at start.
pub async fn serve(
    store: &Store,
    options: ServeOptions,
    status: Status,
    stop: watch::Receiver<bool>,
) -> Result<(), SignError> {
    let mut watched: HashSet<Name> = HashSet::new();
    let mut workers = tokio::task::JoinSet::new();
    let mut first = true;
    loop {
        match store.signed_zones().await {
            Ok(zones) => {
                for zone in zones {
                    if watched.insert(zone.clone()) {
                        tracing::info!(%zone, "watching zone");
                        // Before the task runs: the list is pruned below.
                        status.update(&zone, |s| s.watched = true);
                        let worker =
                            zone::Worker::new(store.clone(), zone, &options, status.clone());
                        workers.spawn(worker.run(stop.clone()));
                    }
                }
                watched.retain(|z| status.is_watched(z));
            }
            Err(e) if first => return Err(e.into()),
            Err(e) => tracing::warn!(error = %e, "cannot list the signed zones; retrying"),
        }
        first = false;
        if stopped_within(&stop, options.discover_every).await {
            break;
        }
    }
    while workers.join_next().await.is_some() {}
    Ok(())
}

/// Waits `period`; true, at once, when `stop` is or turns true.
async fn stopped_within(stop: &watch::Receiver<bool>, period: Duration) -> bool {
    let mut stop = stop.clone();
    let stopped = tokio::select! {
        () = tokio::time::sleep(period) => false,
        r = stop.wait_for(|s| *s) => r.is_ok(),
    };
    stopped || *stop.borrow()
}
