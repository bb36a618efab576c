//! Re-signing a version in place: signatures still good kept, the rest
//! made again, only the difference written.
//!
//! ```text
//!  resign_version(ver) ─► read ─► plan (reuses signatures still good)
//!     ─► diff (field-level changes) ─► SOA serial moved, re-signed
//!     ─► updates in place ─► a new generation when ver is served
//!  resign: the served version under the lease; sign_after_write: the
//!     importer's replace before its switch
//!  resign_apex_keys(ver): a key step that changes no key signing the
//!     zone's data ─► the apex read alone ─► its key sets made again and
//!     signed ─► SOA serial moved, re-signed ─► a new generation
//! ```

use crate::plan::{KeySet, PlanError};
use crate::{
    handoff, lease, next_serial, plan, run_plan, sign_options, soa, soa_serial_of, NoProgress,
    Progress, Report, SignError, Validity,
};
use backend_mongo::dnssec_store::{changed_owners, FullNode, NodeChange};
use backend_mongo::writer::NodeImages;
use backend_mongo::{Store, StoreError};
use dns::serial::serial_gt;
use dns::{Name, RType};

/// Field-level changes that turn `current` into `desired`.
fn diff(current: &[FullNode], desired: &[FullNode]) -> Vec<NodeChange> {
    use std::collections::HashMap;
    let by_name: HashMap<&Name, &FullNode> = current
        .iter()
        .filter(|n| !n.nsec3)
        .map(|n| (&n.name, n))
        .collect();
    let old_nsec3: HashMap<&str, &FullNode> = current
        .iter()
        .filter(|n| n.nsec3)
        .filter_map(|n| n.dk.as_deref().map(|d| (d, n)))
        .collect();
    let mut changes = Vec::new();
    let mut kept_nsec3 = std::collections::HashSet::new();
    for d in desired {
        if d.nsec3 {
            let dk = d.dk.as_deref().unwrap_or("");
            kept_nsec3.insert(dk);
            if old_nsec3.get(dk).is_none_or(|o| *o != d) {
                changes.push(NodeChange::PutNsec3(d.clone()));
            }
            continue;
        }
        let Some(c) = by_name.get(&d.name) else {
            continue;
        };
        for s in &d.rrsets {
            let t = s.rrset.rtype;
            let old = c.get(t);
            if plan::signer_owned(t) || t == RType::SOA {
                if old != Some(s) {
                    changes.push(NodeChange::Own {
                        name: d.name.clone(),
                        rtype: t,
                        set: Some(s.clone()),
                    });
                }
            } else if old.is_none_or(|o| o.sigs != s.sigs || o.sd != s.sd) {
                changes.push(NodeChange::Sign {
                    name: d.name.clone(),
                    rtype: t,
                    sigs: s.sigs.clone(),
                    sd: s.sd.unwrap_or(0),
                });
            }
        }
        for o in &c.rrsets {
            let t = o.rrset.rtype;
            if plan::signer_owned(t) && d.get(t).is_none() {
                changes.push(NodeChange::Own {
                    name: d.name.clone(),
                    rtype: t,
                    set: None,
                });
            }
        }
        if c.dk != d.dk {
            changes.push(NodeChange::DenialKey {
                name: d.name.clone(),
                dk: d.dk.clone(),
            });
        }
    }
    for dk in old_nsec3.keys() {
        if !kept_nsec3.contains(dk) {
            changes.push(NodeChange::DeleteNsec3(dk.to_string()));
        }
    }
    changes
}

/// Brings the signatures and chain of version `ver` of a secured zone up to
/// date, in place: only what changed (any writer's changes are found by
/// digest), signatures near expiry, and the chain around added or removed
/// names. When anything changed, or the SOA serial is not above
/// `must_exceed`, the serial moves forward and the SOA is re-signed. With
/// `publish`, servers are told (new generation). Also returns the
/// version's nodes as now stored (`resign --follow` keeps the chain from
/// them instead of reading it again).
#[allow(clippy::too_many_arguments)]
pub async fn resign_version(
    store: &Store,
    zone: &Name,
    ver: i64,
    must_exceed: Option<u32>,
    publish: bool,
    full: bool,
    validity: &Validity,
    threads: usize,
    progress: &dyn Progress,
) -> Result<(Report, Vec<FullNode>), SignError> {
    let config = store.dnssec_config(zone).await?;
    if !config.secured {
        return Err(SignError::NotSecured(zone.to_string()));
    }
    let keys = store.zone_keys(zone).await?;
    // Read before the version: a writer that publishes after it makes the
    // journal entry inexact (its generation moves).
    let base_gen = match publish {
        true => store.find_zone(zone).await?.map(|z| z.gen),
        false => None,
    };
    let current = store.read_version(zone, ver).await?;
    let nodes = current.len() as u64;
    // A zone's policy sets its validity, whoever signs.
    let validity = match config.policy {
        Some(_) => Validity::of(&config),
        None => *validity,
    };
    let mut opts = sign_options(config.nsec3.clone(), &validity, threads, full);
    opts.cds = config.cds;
    let (current, mut desired, mut stats) =
        run_plan(zone, current, &keys, opts.clone(), None, progress).await?;
    let mut changes = diff(&current, &desired);
    let cur_serial = soa_serial_of(&current, zone).unwrap_or(0);
    let needs_serial = must_exceed.is_some_and(|m| !serial_gt(cur_serial, m));
    let mut serial = cur_serial;
    if !changes.is_empty() || needs_serial {
        serial = next_serial(&[cur_serial, must_exceed.unwrap_or(cur_serial)]);
        let keyset = KeySet::load(zone, &keys)?;
        let apex = desired
            .iter_mut()
            .find(|n| n.name == *zone && !n.nsec3)
            .ok_or_else(|| PlanError::NoSoa(zone.to_string()))?;
        let soa = apex
            .rrsets
            .iter_mut()
            .find(|r| r.rrset.rtype == RType::SOA)
            .ok_or_else(|| PlanError::NoSoa(zone.to_string()))?;
        *soa = soa::with_serial(zone, soa.clone(), serial, &keyset, &opts);
        stats.signed += soa.sigs.len() as u64;
        let soa = soa.clone();
        changes.retain(|c| !matches!(c, NodeChange::Own { rtype, .. } if *rtype == RType::SOA));
        changes.push(NodeChange::Own {
            name: zone.clone(),
            rtype: RType::SOA,
            set: Some(soa),
        });
    }
    let written = changes.len() as u64;
    let mut published_gen = None;
    if !changes.is_empty() {
        progress.phase("writing", written);
        let target = InPlace {
            zone,
            ver,
            serial,
            base_gen,
        };
        published_gen = write_in_place(store, &target, &changes, publish).await?;
        progress.set(written);
    }
    Ok((
        Report {
            nodes,
            stats,
            written,
            serial,
            ver,
            published_gen,
            ..Report::default()
        },
        desired,
    ))
}

/// Where changes are written in place: version `ver` of `zone`, published
/// at `serial`; `base_gen`, the generation served when the version was
/// read, makes a journal entry (before-images captured).
struct InPlace<'a> {
    zone: &'a Name,
    ver: i64,
    serial: u32,
    base_gen: Option<i64>,
}

/// Writes `changes` in place and, with `publish`, publishes them (a new
/// generation, journaled when `base_gen` is known); the generation.
async fn write_in_place(
    store: &Store,
    at: &InPlace<'_>,
    changes: &[NodeChange],
    publish: bool,
) -> Result<Option<i64>, SignError> {
    let mut images = at.base_gen.map(|g| NodeImages::new(at.zone, at.ver, g));
    if let Some(images) = images.as_mut() {
        images.capture_changes(store, changes).await?;
    }
    store.apply_changes(at.zone, at.ver, changes).await?;
    if !publish {
        return Ok(None);
    }
    let owners = changed_owners(at.zone, changes);
    let gen = store
        .publish_in_place(at.zone, at.ver, at.serial, Some(&owners), images.as_ref())
        .await?;
    Ok(Some(gen))
}

/// The key sets at the apex of version `ver` (DNSKEY, CDS, CDNSKEY) made
/// again from the keys and signed, the SOA's serial moved, published: what
/// a key step needs when no key signing the zone's data changed (a key
/// published or removed, a KSK activated or retired). Reads the apex node
/// only. `None` when the apex's types would change (then only a whole
/// re-sign rebuilds its NSEC bitmap); nothing is written then.
pub(crate) async fn resign_apex_keys(
    store: &Store,
    zone: &Name,
    ver: i64,
    validity: &Validity,
) -> Result<Option<Report>, SignError> {
    let config = store.dnssec_config(zone).await?;
    if !config.secured {
        return Err(SignError::NotSecured(zone.to_string()));
    }
    let keys = KeySet::load(zone, &store.zone_keys(zone).await?)?;
    let base_gen = store.find_zone(zone).await?.map(|z| z.gen);
    let apex = store
        .read_full_node(zone, ver, zone)
        .await?
        .ok_or_else(|| PlanError::NoSoa(zone.to_string()))?;
    let validity = match config.policy {
        Some(_) => Validity::of(&config),
        None => *validity,
    };
    let mut opts = sign_options(config.nsec3.clone(), &validity, 1, false);
    opts.cds = config.cds;
    let Some((node, jobs)) = plan::apex_keys(&apex, &keys, &opts) else {
        return Ok(None);
    };
    let mut nodes = [node];
    let mut signed = plan::sign_all(&mut nodes, &jobs, &keys, &opts, &|_| {});
    let [mut node] = nodes;
    let old_serial = soa_serial_of(std::slice::from_ref(&apex), zone).unwrap_or(0);
    let serial = next_serial(&[old_serial]);
    let soa = node
        .rrsets
        .iter_mut()
        .find(|r| r.rrset.rtype == RType::SOA)
        .ok_or_else(|| PlanError::NoSoa(zone.to_string()))?;
    *soa = soa::with_serial(zone, soa.clone(), serial, &keys, &opts);
    signed += soa.sigs.len() as u64;
    let changes: Vec<NodeChange> = node
        .rrsets
        .iter()
        .filter(|set| apex.get(set.rrset.rtype) != Some(*set))
        .map(|set| NodeChange::Own {
            name: zone.clone(),
            rtype: set.rrset.rtype,
            set: Some(set.clone()),
        })
        .collect();
    let target = InPlace {
        zone,
        ver,
        serial,
        base_gen,
    };
    let gen = write_in_place(store, &target, &changes, true).await?;
    Ok(Some(Report {
        nodes: 1,
        stats: plan::PlanStats {
            signed,
            ..plan::PlanStats::default()
        },
        written: changes.len() as u64,
        serial,
        ver,
        published_gen: gen,
        ..Report::default()
    }))
}

/// Re-signs the served version of a secured zone (see [`resign_version`]).
pub async fn resign(
    store: &Store,
    zone: &Name,
    full: bool,
    validity: &Validity,
    threads: usize,
    progress: &dyn Progress,
) -> Result<Report, SignError> {
    let lease = lease::take(store, zone, "resign", lease::lease_wait()).await?;
    let r = async {
        let served = store
            .find_zone(zone)
            .await?
            .ok_or_else(|| StoreError::NoSuchZone(zone.to_string()))?;
        let (mut report, _) = resign_version(
            store, zone, served.ver, None, true, full, validity, threads, progress,
        )
        .await?;
        // Writers that found the lease held wrote unsigned meanwhile and
        // handed their names to us.
        if let Some(signed) = handoff::sign_handed_over(store, zone, served.gen).await? {
            report.serial = signed.serial;
            report.published_gen = signed.published_gen.or(report.published_gen);
        }
        Ok(report)
    }
    .await;
    lease.release_with(r).await
}

/// The importer's hook: signs what a writer put into version `ver` of
/// `zone` if the zone is secured (does nothing otherwise). Call it for a
/// replace before `ZoneWriter::finish`, with `served_serial` the serial of
/// the version being replaced (the new SOA is moved past it and signed, so
/// `finish` leaves it alone); for a merge, after `finish`, with
/// `publish = true`.
pub async fn sign_after_write(
    store: &Store,
    zone: &Name,
    ver: i64,
    served_serial: Option<u32>,
    publish: bool,
) -> Result<Option<Report>, SignError> {
    match store.dnssec_config(zone).await {
        Ok(c) if c.secured => {}
        Ok(_) | Err(StoreError::NoSuchZone(_)) => return Ok(None),
        Err(e) => return Err(e.into()),
    }
    resign_version(
        store,
        zone,
        ver,
        served_serial,
        publish,
        false,
        &Validity::default(),
        0,
        &NoProgress,
    )
    .await
    .map(|(report, _)| Some(report))
}
