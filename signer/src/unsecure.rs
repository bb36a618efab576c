//! `unsecure-zone`: a new version without any DNSSEC data, switched to
//! like secure-zone's.
//!
//! ```text
//!  unsecure_zone_switch ─► the signing lease ─► rebuild_and_switch (up
//!     to three attempts, each Unsecuring::attempt): begin_rebuild
//!     ─► strip_dnssec ─► insert_batches ─► switch_caught_up ─► secured = false
//!     ─► keys deleted (unless kept)
//! ```

use crate::plan::PlanStats;
use crate::rebuild::{
    insert_batches, rebuild_and_switch, switch_caught_up, Attempted, Built, Rebuild, Rebuilder,
    Site, WRITE_BATCH,
};
use crate::{catchup, cleanup, lease, plan, NoProgress, Progress, Report, SignError, Steps};
use backend_mongo::dnssec_store::FullNode;
use backend_mongo::Store;
use dns::{Name, RType};
use std::time::Duration;

/// Removes every DNSSEC record from `zone` (new version, switched at once)
/// and forgets its DNSSEC settings. Keys are deleted unless `keep_keys`.
/// Then deletes the version it replaced, after `grace` ([`cleanup`]).
pub async fn unsecure_zone(
    store: &Store,
    zone: &Name,
    keep_keys: bool,
    grace: Duration,
) -> Result<Report, SignError> {
    let mut report = unsecure_zone_switch(store, zone, keep_keys, &NoProgress).await?;
    let started = std::time::Instant::now();
    report.cleanup = cleanup(store, zone, grace, report.nodes, &NoProgress).await?;
    report.timings.push(("cleanup", started.elapsed()));
    Ok(report)
}

/// [`unsecure_zone`] up to the switch; the replaced version is left for
/// [`cleanup`]. Under the signing lease; merges written meanwhile are
/// copied into the new version as for [`secure_zone_switch`].
pub async fn unsecure_zone_switch(
    store: &Store,
    zone: &Name,
    keep_keys: bool,
    progress: &dyn Progress,
) -> Result<Report, SignError> {
    let lease = lease::take(store, zone, "unsecure-zone", lease::lease_wait()).await?;
    let r = unsecure_under_lease(store, zone, keep_keys, progress, &lease).await;
    lease.release_with(r).await
}

/// `nodes` without anything DNSSEC, the apex SOA set to `serial`.
fn strip_dnssec(zone: &Name, nodes: Vec<FullNode>, serial: u32) -> Vec<FullNode> {
    nodes
        .into_iter()
        .filter(|n| !n.nsec3)
        .map(|mut n| {
            n.dk = None;
            n.rrsets.retain(|r| !plan::signer_owned(r.rrset.rtype));
            for r in &mut n.rrsets {
                r.sigs.clear();
                r.sd = None;
                if r.rrset.rtype == RType::SOA && n.name == *zone {
                    let mut rd = r.rrset.rdata[0].to_vec();
                    let len = rd.len();
                    rd[len - 20..len - 16].copy_from_slice(&serial.to_be_bytes());
                    r.rrset.rdata[0] = rd.into_boxed_slice();
                }
            }
            n
        })
        .collect()
}

async fn unsecure_under_lease(
    store: &Store,
    zone: &Name,
    keep_keys: bool,
    progress: &dyn Progress,
    lease: &lease::Lease,
) -> Result<Report, SignError> {
    let at = Site {
        store,
        zone,
        lease,
        progress,
    };
    let how = Unsecuring { keep_keys };
    rebuild_and_switch(at, Steps::new(), &how)
        .await?
        .map_err(|why| {
            SignError::Usage(format!(
                "zone {zone}: {why}; started over three times, giving up (try again)"
            ))
        })
}

/// unsecure-zone's new version: every DNSSEC record left out; the keys
/// deleted after the switch unless `keep_keys`.
struct Unsecuring {
    keep_keys: bool,
}

impl Rebuilder for Unsecuring {
    async fn attempt(&self, at: Site<'_>, rebuild: Rebuild, steps: &mut Steps) -> Attempted {
        let (store, zone, progress) = (at.store, at.zone, at.progress);
        let writer = rebuild.writer;
        let (batches, _) = plan::Prepared {
            nodes: strip_dnssec(zone, rebuild.current, rebuild.serial),
            jobs: Vec::new(),
            stats: PlanStats::default(),
        }
        .into_batches(WRITE_BATCH);
        let (written, _) =
            insert_batches(store, zone, writer.ver(), batches, None, None, progress).await?;
        steps.end("write");
        let served = &rebuild.served;
        let mut catch_up = catchup::CatchUp::new(store, zone, served, writer.ver(), None);
        let switched =
            switch_caught_up(store, zone, writer, &mut catch_up, None, at.lease, progress).await?;
        if switched.is_ok() && !self.keep_keys {
            for k in store.zone_keys(zone).await? {
                store.delete_key(&k.id).await?;
            }
        }
        Ok(switched.map(|switched| Built {
            stats: PlanStats::default(),
            written: written + catch_up.copied,
            switched,
        }))
    }
}
