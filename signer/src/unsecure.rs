//! `unsecure-zone`: a new version without any DNSSEC data, switched to
//! like secure-zone's.
//!
//! ```text
//!  unsecure_zone_switch ─► the signing lease ─► begin_rebuild
//!     ─► strip_dnssec ─► insert_batches ─► switch_caught_up ─► secured = false
//! ```

use crate::plan::PlanStats;
use crate::rebuild::{
    begin_rebuild, insert_batches, switch_caught_up, switched_report, Rebuild, WRITE_BATCH,
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
    let mut steps = Steps::new();
    let mut last_err = None;
    for _attempt in 0..3 {
        let Rebuild {
            served,
            writer,
            current,
            serial,
        } = begin_rebuild(store, zone, progress, &mut steps).await?;
        let nodes = current.len() as u64;
        let (batches, _) = plan::Prepared {
            nodes: strip_dnssec(zone, current, serial),
            jobs: Vec::new(),
            stats: PlanStats::default(),
        }
        .into_batches(WRITE_BATCH);
        let (written, _) =
            insert_batches(store, zone, writer.ver(), batches, None, None, progress).await?;
        steps.end("write");
        let mut catch_up =
            catchup::CatchUp::new(store, zone, served.ver, writer.ver(), served.gen, None);
        match switch_caught_up(store, zone, writer, &mut catch_up, None, lease, progress).await? {
            Ok(switched) => {
                if !keep_keys {
                    for k in store.zone_keys(zone).await? {
                        store.delete_key(&k.id).await?;
                    }
                }
                steps.end("catch-up+switch");
                return Ok(switched_report(
                    nodes,
                    PlanStats::default(),
                    written + catch_up.copied,
                    &switched,
                    steps,
                ));
            }
            Err(catchup::StartOver(why)) => {
                last_err = Some(SignError::Usage(format!(
                    "zone {zone}: {why}; started over three times, giving up (try again)"
                )));
            }
        }
    }
    Err(last_err.expect("three attempts failed"))
}
