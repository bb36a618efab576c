//! A new version built from the served one and switched to, while merge
//! writers go on (secure-zone and unsecure-zone both rebuild).
//!
//! ```text
//!  begin_rebuild: a pending version, the served one read, the next serial
//!  insert_batches / sign_and_insert: unordered bulk inserts, a few in flight
//!     (signed chain links kept when the new version is signed)
//!  switch_caught_up: catch-up passes until one is small, then under the
//!     zone lock the last pass, the SOA past the served serial, the switch
//!  rebuild_and_switch: begin_rebuild ─► the caller's attempt (write, then
//!     switch_caught_up) ─► started over? again, three attempts at most
//! ```

use crate::plan::{KeySet, PlanStats, SignOptions};
use crate::{catchup, lease, next_serial, plan, soa_serial_of, Progress, Report, SignError, Steps};
use backend_mongo::dnssec_store::{DnssecConfig, FullNode};
use backend_mongo::lock::ZONE_LOCK;
use backend_mongo::writer::LOCK_WAIT;
use backend_mongo::{Collected, Store, StoreError, WriteMode};
use dns::{Name, RType};
use futures::stream::{FuturesUnordered, StreamExt};

/// A pass of the catch-up that copied fewer names than this is followed by
/// the last pass under the zone lock.
const SMALL_PASS: usize = 200;

/// What a rebuild that switched did.
fn switched_report(
    nodes: u64,
    stats: PlanStats,
    written: u64,
    switched: &backend_mongo::Switched,
    steps: Steps,
) -> Report {
    Report {
        nodes,
        stats,
        written,
        serial: switched.zone.serial,
        ver: switched.zone.ver,
        old_ver: switched.old,
        timings: steps.done,
        cleanup: Collected::default(),
        published_gen: None,
    }
}

/// What an attempt that switched did: the signing figures, the documents
/// written (catch-up copies included) and the switch.
pub(super) struct Built {
    pub(super) stats: PlanStats,
    pub(super) written: u64,
    pub(super) switched: backend_mongo::Switched,
}

/// Where a rebuild runs: the zone, under its signing lease, reporting
/// progress.
#[derive(Clone, Copy)]
pub(super) struct Site<'a> {
    pub(super) store: &'a Store,
    pub(super) zone: &'a Name,
    pub(super) lease: &'a lease::Lease,
    pub(super) progress: &'a dyn Progress,
}

/// How an attempt ended: switched, or to start over (and why).
pub(super) type Attempted = Result<Result<Built, catchup::StartOver>, SignError>;

/// One way of building a new version (secure-zone's, unsecure-zone's).
pub(super) trait Rebuilder {
    /// Writes the new version `rebuild` begun (its steps timed in
    /// `steps`) and switches to it; or says why it must start over.
    async fn attempt(&self, at: Site<'_>, rebuild: Rebuild, steps: &mut Steps) -> Attempted;
}

/// Builds a new version of the zone `how` says and switches to it, three
/// attempts at most: each begins a rebuild (timed in `steps`) and hands it
/// to `how`; an attempt that must start over (a replace switched
/// meanwhile) is followed by the next. Returns the report, or why the last
/// attempt started over.
pub(super) async fn rebuild_and_switch(
    at: Site<'_>,
    mut steps: Steps,
    how: &impl Rebuilder,
) -> Result<Result<Report, String>, SignError> {
    let mut last_why = String::new();
    for _attempt in 0..3 {
        let rebuild = begin_rebuild(at.store, at.zone, at.progress, &mut steps).await?;
        let nodes = rebuild.current.len() as u64;
        match how.attempt(at, rebuild, &mut steps).await? {
            Ok(built) => {
                steps.end("catch-up+switch");
                let Built {
                    stats,
                    written,
                    switched,
                } = built;
                return Ok(Ok(switched_report(nodes, stats, written, &switched, steps)));
            }
            Err(catchup::StartOver(why)) => last_why = why,
        }
    }
    Ok(Err(last_why))
}

/// A new version being built from the served one.
pub(super) struct Rebuild {
    /// The zone as served when the rebuild began.
    pub(super) served: dns::ZoneInfo,
    /// The writer of the new version (pending).
    pub(super) writer: backend_mongo::ZoneWriter,
    /// The served version's nodes.
    pub(super) current: Vec<FullNode>,
    /// The serial the new version gets (after both the served one and the
    /// SOA's).
    pub(super) serial: u32,
}

/// Takes a new pending version and reads the served one (the `read` step).
pub(super) async fn begin_rebuild(
    store: &Store,
    zone: &Name,
    progress: &dyn Progress,
    steps: &mut Steps,
) -> Result<Rebuild, SignError> {
    let served = store
        .find_zone(zone)
        .await?
        .ok_or_else(|| StoreError::NoSuchZone(zone.to_string()))?;
    let writer = store.begin_zone_write(zone, WriteMode::Replace).await?;
    progress.phase("reading", 0);
    let current = store.read_version(zone, served.ver).await?;
    steps.end("read");
    let serial = next_serial(&[
        served.serial,
        soa_serial_of(&current, zone).unwrap_or(served.serial),
    ]);
    Ok(Rebuild {
        served,
        writer,
        current,
        serial,
    })
}

/// Catch-up passes until one is small, then the last pass and the switch
/// under the zone lock (merge writers wait only for that). `config`: the
/// zone's DNSSEC settings to set in the switch itself (`None` removes
/// them). Leaves the new version pending (for the next attempt to retire)
/// when it must start over.
pub(super) async fn switch_caught_up(
    store: &Store,
    zone: &Name,
    writer: backend_mongo::ZoneWriter,
    catch_up: &mut catchup::CatchUp<'_>,
    config: Option<&DnssecConfig>,
    lease: &lease::Lease,
    progress: &dyn Progress,
) -> Result<Result<backend_mongo::Switched, catchup::StartOver>, SignError> {
    progress.phase("catching up", 0);
    for _ in 0..20 {
        match catch_up.pass().await? {
            Ok(n) if n < SMALL_PASS => break,
            Ok(_) => continue,
            Err(e) => return Ok(Err(e)),
        }
    }
    progress.phase("switching", 0);
    let fence = store
        .lock(ZONE_LOCK, zone, "signer-switch", LOCK_WAIT)
        .await?;
    // Renewed while held: a slow last pass must not let the lock expire
    // (a merge would take it over and acknowledge into the old version).
    let renewal = fence.keep_renewed();
    let switched = async {
        if let Err(e) = catch_up.pass().await? {
            return Ok(Err(e));
        }
        let served = store
            .find_zone(zone)
            .await?
            .ok_or_else(|| StoreError::NoSuchZone(zone.to_string()))?;
        if let Some(signer) = catch_up.signer() {
            // The served serial may have moved while signing: the signed
            // SOA must come after it, or the switch would change it unsigned.
            signer.sign_soa(store, served.serial).await?;
        }
        if lease.is_lost() {
            return Err(SignError::Busy(format!(
                "zone {zone}: the signing lease was lost (renewal failed); nothing was published"
            )));
        }
        if fence.renew().await.is_err() {
            return Ok(Err(catchup::StartOver(
                "the zone lock expired during the last pass".into(),
            )));
        }
        let extra = mongodb_doc_dnssec(config);
        match writer.switch_under(&fence, served.ver, extra).await {
            Ok(switched) => Ok(Ok(switched)),
            // A replace took the pending version over: build again.
            Err(StoreError::Conflict(why)) => Ok(Err(catchup::StartOver(why))),
            Err(e) => Err(e.into()),
        }
    }
    .await;
    drop(renewal);
    let released = fence.release().await;
    let switched = switched?;
    released?;
    Ok(switched)
}

/// The zone-document fields a switch sets for `config`.
pub(super) fn mongodb_doc_dnssec(config: Option<&DnssecConfig>) -> backend_mongo::bson::Document {
    let mut d = backend_mongo::bson::Document::new();
    d.insert("dnssec", Store::dnssec_field(config));
    d
}

/// Node documents per insert command of the write-back.
pub(super) const WRITE_BATCH: usize = 1000;
/// Insert commands in flight at once (as `mongodns-import --in-flight`).
pub(super) const WRITE_IN_FLIGHT: usize = 4;

/// Signs `prepared` and writes it into version `ver` (not served yet), one
/// batch of [`WRITE_BATCH`] nodes at a time: while the database stores a
/// batch (unordered bulk insert, a task of its own, [`WRITE_IN_FLIGHT`] at
/// once, as the importer writes), the next batch is signed on every core.
/// The database's work (decoding and storing documents) and the signing
/// overlap instead of following each other. Returns the documents written,
/// the plan's counts, and the NSEC/NSEC3 chain as written (each chain
/// node's name, denial key and signed NSEC/NSEC3 RRset only), for a
/// [`merge::MergeSigner`] to go on from.
pub(super) async fn sign_and_insert(
    store: &Store,
    zone: &Name,
    ver: i64,
    prepared: plan::Prepared,
    keys: &KeySet,
    options: &SignOptions,
    progress: &dyn Progress,
) -> Result<(u64, PlanStats, Vec<FullNode>), SignError> {
    let (batches, mut stats) = prepared.into_batches(WRITE_BATCH);
    let mut chain = Vec::new();
    let (written, signed) = insert_batches(
        store,
        zone,
        ver,
        batches,
        Some((keys, options)),
        Some(&mut chain),
        progress,
    )
    .await?;
    stats.signed = signed;
    Ok((written, stats, chain))
}

/// A chain node's name, denial key and NSEC/NSEC3 RRset.
pub(super) fn chain_link(n: &FullNode) -> FullNode {
    FullNode {
        name: n.name.clone(),
        rrsets: n
            .rrsets
            .iter()
            .filter(|r| matches!(r.rrset.rtype, RType::NSEC | RType::NSEC3))
            .cloned()
            .collect(),
        dk: n.dk.clone(),
        nsec3: n.nsec3,
    }
}

/// Writes `batches` into version `ver`, signing each first when `signer`
/// is given (see [`sign_and_insert`]), keeping the signed chain in `chain`
/// when given. Returns the documents written and the signatures made.
pub(super) async fn insert_batches(
    store: &Store,
    zone: &Name,
    ver: i64,
    batches: Vec<plan::Batch>,
    signer: Option<(&KeySet, &SignOptions)>,
    mut chain: Option<&mut Vec<FullNode>>,
    progress: &dyn Progress,
) -> Result<(u64, u64), SignError> {
    progress.phase(
        "writing",
        batches.iter().map(|b| b.nodes.len() as u64).sum(),
    );
    let mut pending = FuturesUnordered::new();
    let mut done = 0u64;
    let joined = |r: Result<Result<u64, StoreError>, tokio::task::JoinError>| match r {
        Ok(r) => r.map_err(SignError::from),
        Err(e) => Err(SignError::Usage(format!("write-back task failed: {e}"))),
    };
    let mut signed = 0;
    for mut batch in batches {
        if let Some((keys, options)) = signer {
            signed += crate::cpu_work::cpu_work(|| batch.sign(keys, options));
        }
        if let Some(chain) = chain.as_mut() {
            chain.extend(
                batch
                    .nodes
                    .iter()
                    .filter(|n| n.dk.is_some())
                    .map(chain_link),
            );
        }
        let chunk = batch.nodes;
        let (store, zone) = (store.clone(), zone.clone());
        pending.push(tokio::spawn(async move {
            store.insert_full_nodes(&zone, ver, &chunk).await?;
            Ok::<u64, StoreError>(chunk.len() as u64)
        }));
        if pending.len() >= WRITE_IN_FLIGHT {
            if let Some(r) = pending.next().await {
                done += joined(r)?;
                progress.set(done);
            }
        }
    }
    while let Some(r) = pending.next().await {
        done += joined(r)?;
        progress.set(done);
    }
    Ok((done, signed))
}
