//! mongodns-sign: DNSSEC for zones stored in MongoDB.
//!
//! ```text
//!  secure_zone ─► keys (generate, store) ─► read served ver ─► plan (sign on
//!      every core, NSEC/NSEC3 chain) ─► insert into ver+1 (unordered bulk
//!      inserts, 4 in flight, like the importer) ─► switch (ZoneWriter, one
//!      update; old ver listed in old_vers) ─► zones.dnssec.secured = true
//!      ─► cleanup: old ver deleted after the grace (batched, restartable)
//!  resign_version(ver) ─► read ver ─► plan (reuses signatures still good) ─►
//!      diff ─► field-level updates in place (never overwrites records) ─►
//!      SOA serial + 1, re-signed ─► new generation (when ver is served)
//!  unsecure_zone ─► ver+1 without any DNSSEC data ─► switch
//! ```
//!
//! The importer signs what it writes into a secured zone: a replace through
//! [`sign_after_write`] before the switch, a merge through
//! [`merge::MergeSigner`] before each batch is written (see `docs/dnssec.md`).
//! Record edits ([`edit::edit_zone`]) are signed in their change-set.
#![warn(missing_docs, unreachable_pub)]

pub mod catalog;
mod catchup;
pub mod check;
pub mod create;
pub mod crypto;
mod database_args;
pub mod edit;
pub mod export;
mod follow;
pub mod handoff;
pub mod lease;
pub mod merge;
pub mod plan;
pub mod soa;

use backend_mongo::dnssec_store::{
    changed_owners, DnssecConfig, FullNode, KeyState, NodeChange, Nsec3Config, StoredKey,
};
use backend_mongo::lock::ZONE_LOCK;
use backend_mongo::writer::{NodeImages, LOCK_WAIT};
use backend_mongo::{Collected, Name, RType, Store, StoreError, WriteMode};
use dns::serial::{serial_gt, soa_serial};
use futures::stream::{FuturesUnordered, StreamExt};
use plan::{KeySet, PlanError, PlanStats, SignOptions};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub use database_args::DatabaseArgs;
pub use follow::{follow, sign_changes_since};

/// Why a signer operation failed.
#[derive(Debug, thiserror::Error)]
pub enum SignError {
    /// The database failed or a zone is missing.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The zone cannot be signed as it is.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// A key could not be made or loaded.
    #[error(transparent)]
    Key(#[from] crypto::KeyError),
    /// The zone is not secured.
    #[error("zone {0} is not secured (run mongodns-sign secure-zone {0} first)")]
    NotSecured(String),
    /// No key matches.
    #[error("zone {0} has no key {1}")]
    NoSuchKey(String, String),
    /// Bad arguments.
    #[error("{0}")]
    Usage(String),
    /// Another signing writer holds the zone's lease.
    #[error("{0}")]
    Busy(String),
}

/// Validity settings for new signatures.
#[derive(Clone, Copy, Debug)]
pub struct Validity {
    /// Signatures are valid for this long.
    pub lifetime: Duration,
    /// Signatures with less left than this are replaced.
    pub refresh: Duration,
    /// Inception is back-dated by this much (clock skew).
    pub backdate: Duration,
}

impl Default for Validity {
    fn default() -> Self {
        Validity {
            lifetime: Duration::from_secs(30 * 86400),
            refresh: Duration::from_secs(10 * 86400),
            backdate: Duration::from_secs(3600),
        }
    }
}

/// Progress callbacks (a progress bar, or nothing).
pub trait Progress: Sync {
    /// A phase begins with `total` steps.
    fn phase(&self, name: &str, total: u64);
    /// `done` steps of the phase are finished.
    fn set(&self, done: u64);
    /// `follow` re-signed the zone.
    fn resigned(&self, _zone: &Name, _report: &Report, _elapsed: Duration) {}
}

/// Progress that shows nothing.
pub struct NoProgress;

impl Progress for NoProgress {
    fn phase(&self, _: &str, _: u64) {}
    fn set(&self, _: u64) {}
}

/// What a signing run did.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Nodes read.
    pub nodes: u64,
    /// Signatures made, RRsets whose signatures were kept, chain length.
    pub stats: PlanStats,
    /// Node documents written or changed.
    pub written: u64,
    /// The SOA serial now.
    pub serial: u32,
    /// Version of the zone that was signed.
    pub ver: i64,
    /// The version this run replaced, if it switched to a new one.
    pub old_ver: Option<i64>,
    /// The generation it published in place, if it did.
    pub published_gen: Option<i64>,
    /// How long each step took, in order (`read`, `sign`, `write`,
    /// `switch`, `cleanup`).
    pub timings: Vec<(&'static str, Duration)>,
    /// Old versions deleted after the switch (by [`secure_zone`] and
    /// [`unsecure_zone`]; the `_switch` variants leave them to [`cleanup`]).
    pub cleanup: Collected,
}

/// Times the steps of a run.
struct Steps {
    at: std::time::Instant,
    done: Vec<(&'static str, Duration)>,
}

impl Steps {
    fn new() -> Steps {
        Steps {
            at: std::time::Instant::now(),
            done: Vec::new(),
        }
    }

    /// `name` ended now.
    fn end(&mut self, name: &'static str) {
        let now = std::time::Instant::now();
        self.done.push((name, now - self.at));
        tracing::info!(
            step = name,
            secs = (now - self.at).as_secs_f64(),
            "signer step done"
        );
        self.at = now;
    }
}

/// Options of `secure-zone`.
#[derive(Clone, Debug)]
pub struct SecureOptions {
    /// Algorithm for new keys.
    pub algorithm: u8,
    /// One combined key instead of KSK + ZSK.
    pub csk: bool,
    /// NSEC3 instead of NSEC.
    pub nsec3: Option<Nsec3Config>,
    /// Publish CDS and CDNSKEY (RFC 7344).
    pub cds: bool,
    /// Signature validity.
    pub validity: Validity,
    /// Signing threads (0: one per core).
    pub threads: usize,
    /// How long the old version stays readable after the switch.
    pub grace: Duration,
}

fn now() -> u32 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as u32)
}

pub(crate) fn sign_options(
    nsec3: Option<Nsec3Config>,
    v: &Validity,
    threads: usize,
    full: bool,
) -> SignOptions {
    let t = now();
    SignOptions {
        nsec3,
        inception: t.saturating_sub(v.backdate.as_secs() as u32),
        expiration: t.saturating_add(v.lifetime.as_secs() as u32),
        refresh_before: if full {
            u32::MAX
        } else {
            t.saturating_add(v.refresh.as_secs() as u32)
        },
        threads: if threads == 0 {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            threads
        },
        cds: false,
    }
}

fn soa_serial_of(nodes: &[FullNode], apex: &Name) -> Option<u32> {
    let n = nodes.iter().find(|n| n.name == *apex && !n.nsec3)?;
    let rd = n.get(RType::SOA)?.rrset.rdata.first()?;
    soa_serial(rd)
}

pub(crate) fn next_serial(candidates: &[u32]) -> u32 {
    let mut best = candidates[0];
    for &c in candidates {
        if serial_gt(c, best) {
            best = c;
        }
    }
    best.wrapping_add(1)
}

async fn run_plan(
    zone: &Name,
    current: Vec<FullNode>,
    keys: &[StoredKey],
    options: SignOptions,
    serial: Option<u32>,
    progress: &dyn Progress,
) -> Result<(Vec<FullNode>, Vec<FullNode>, PlanStats), SignError> {
    let keyset = KeySet::load(zone, keys)?;
    progress.phase("signing", current.len() as u64);
    let work = || {
        plan::plan(zone, &current, &keyset, &options, serial, &|n| {
            progress.set(n)
        })
    };
    // Signing is CPU work on threads of its own; keep the runtime's worker
    // free when it has others (a current-thread runtime just waits).
    let multi = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    let result = if multi {
        tokio::task::block_in_place(work)
    } else {
        work()
    }?;
    Ok((current, result.0, result.1))
}

/// Secures `zone`: makes keys if it has none, signs every authoritative
/// RRset, builds the chain, and publishes it all at once as a new version;
/// then deletes the version it replaced ([`cleanup`]). Re-running after a
/// failure reuses the stored keys and completes.
pub async fn secure_zone(
    store: &Store,
    zone: &Name,
    options: &SecureOptions,
    progress: &dyn Progress,
) -> Result<Report, SignError> {
    let mut report = secure_zone_switch(store, zone, options, progress).await?;
    let started = std::time::Instant::now();
    let expected = if report.old_ver.is_some() {
        report.nodes
    } else {
        0
    };
    report.cleanup = cleanup(store, zone, options.grace, expected, progress).await?;
    report.timings.push(("cleanup", started.elapsed()));
    Ok(report)
}

/// [`secure_zone`] up to the switch: the signed version is served when
/// this returns; the version it replaced is listed in the zone's
/// `old_vers` (never served) for [`cleanup`] or any later writer to delete.
///
/// Holds the zone's signing lease throughout. Merge writers go on while it
/// signs: what they publish meanwhile is copied into the new version and
/// signed ([`catchup`]), pass after pass until a pass is small; then, under
/// the zone lock (merge writers wait on it for that long: milliseconds), a
/// last pass, the SOA moved past the served serial, and the switch. A
/// replace switching meanwhile makes it start over (three attempts).
pub async fn secure_zone_switch(
    store: &Store,
    zone: &Name,
    options: &SecureOptions,
    progress: &dyn Progress,
) -> Result<Report, SignError> {
    let lease = lease::take(store, zone, "secure-zone", lease::lease_wait()).await?;
    let r = secure_under_lease(store, zone, options, progress, &lease).await;
    lease.release_with(r).await
}

/// Keys of `zone`, made (and stored) when it has none.
async fn ensure_keys(
    store: &Store,
    zone: &Name,
    options: &SecureOptions,
) -> Result<Vec<StoredKey>, SignError> {
    let keys = store.zone_keys(zone).await?;
    if !keys.is_empty() {
        return Ok(keys);
    }
    let mut new = vec![crypto::generate(
        zone,
        options.algorithm,
        257,
        KeyState::Active,
    )?];
    if !options.csk {
        new.push(crypto::generate(
            zone,
            options.algorithm,
            256,
            KeyState::Active,
        )?);
    }
    // One command: a run killed here leaves both keys or neither.
    store.insert_keys(&new).await?;
    Ok(new)
}

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

/// A new version being built from the served one.
struct Rebuild {
    /// The zone as served when the rebuild began.
    served: backend_mongo::ZoneInfo,
    /// The writer of the new version (pending).
    writer: backend_mongo::ZoneWriter,
    /// The served version's nodes.
    current: Vec<FullNode>,
    /// The serial the new version gets (after both the served one and the
    /// SOA's).
    serial: u32,
}

/// Takes a new pending version and reads the served one (the `read` step).
async fn begin_rebuild(
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

/// A pass of the catch-up that copied fewer names than this is followed by
/// the last pass under the zone lock.
const SMALL_PASS: usize = 200;

async fn secure_under_lease(
    store: &Store,
    zone: &Name,
    options: &SecureOptions,
    progress: &dyn Progress,
    lease: &lease::Lease,
) -> Result<Report, SignError> {
    let mut steps = Steps::new();
    let mut config = store.dnssec_config(zone).await?;
    config.secured = true;
    config.nsec3 = options.nsec3.clone();
    config.cds = options.cds;
    let keys = ensure_keys(store, zone, options).await?;
    let mut last_err = None;
    for _attempt in 0..3 {
        let Rebuild {
            served,
            writer,
            current,
            serial,
        } = begin_rebuild(store, zone, progress, &mut steps).await?;
        let nodes = current.len() as u64;
        let mut opts = sign_options(
            options.nsec3.clone(),
            &options.validity,
            options.threads,
            true,
        );
        opts.cds = options.cds;
        let keyset = KeySet::load(zone, &keys)?;
        let prepared = plan::prepare(zone, &current, &keyset, &opts, Some(serial))?;
        drop(current);
        steps.end("chain");
        let (written, stats, chain) = sign_and_insert(
            store,
            zone,
            writer.ver(),
            prepared,
            &keyset,
            &opts,
            progress,
        )
        .await?;
        steps.end("sign+write");
        let signer =
            merge::MergeSigner::with_config(store, zone, writer.ver(), config.clone(), Some(chain))
                .await?;
        let mut catch_up = catchup::CatchUp::new(
            store,
            zone,
            served.ver,
            writer.ver(),
            served.gen,
            Some(signer),
        );
        match switch_caught_up(
            store,
            zone,
            writer,
            &mut catch_up,
            Some(&config),
            lease,
            progress,
        )
        .await?
        {
            Ok(switched) => {
                steps.end("catch-up+switch");
                return Ok(switched_report(
                    nodes,
                    stats,
                    written + catch_up.copied,
                    &switched,
                    steps,
                ));
            }
            Err(catchup::StartOver(why)) => {
                last_err = Some(SignError::Usage(format!(
                    "zone {zone}: {why}; signing started over three times, giving up (try again)"
                )));
                tracing::info!(%zone, reason = %why, "secure-zone starts over");
            }
        }
    }
    Err(last_err.expect("three attempts failed"))
}

/// Catch-up passes until one is small, then the last pass and the switch
/// under the zone lock (merge writers wait only for that). `config`: the
/// zone's DNSSEC settings to set in the switch itself (`None` removes
/// them). Leaves the new version pending (for the next attempt to retire)
/// when it must start over.
async fn switch_caught_up(
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
fn mongodb_doc_dnssec(config: Option<&DnssecConfig>) -> backend_mongo::bson::Document {
    let mut d = backend_mongo::bson::Document::new();
    d.insert("dnssec", Store::dnssec_field(config));
    d
}

/// Deletes the old versions of `zone` (replaced by a switch, or left by a
/// killed run), once `grace` has passed since the last switch: batched,
/// one command at a time, restartable (`Store::collect_old_versions`).
/// `expected` (documents, 0 if unknown) is only for progress.
pub async fn cleanup(
    store: &Store,
    zone: &Name,
    grace: Duration,
    expected: u64,
    progress: &dyn Progress,
) -> Result<Collected, SignError> {
    if store.find_zone(zone).await?.is_none() {
        return Err(StoreError::NoSuchZone(zone.to_string()).into());
    }
    progress.phase("cleanup", expected);
    Ok(store
        .collect_old_versions(zone, grace, &|n| progress.set(n))
        .await?)
}

/// Node documents per insert command of the write-back.
const WRITE_BATCH: usize = 1000;
/// Insert commands in flight at once (as `mongodns-import --in-flight`).
const WRITE_IN_FLIGHT: usize = 4;

/// Signs `prepared` and writes it into version `ver` (not served yet), one
/// batch of [`WRITE_BATCH`] nodes at a time: while the database stores a
/// batch (unordered bulk insert, a task of its own, [`WRITE_IN_FLIGHT`] at
/// once, as the importer writes), the next batch is signed on every core.
/// The database's work (decoding and storing documents) and the signing
/// overlap instead of following each other. Returns the documents written,
/// the plan's counts, and the NSEC/NSEC3 chain as written (each chain
/// node's name, denial key and signed NSEC/NSEC3 RRset only), for a
/// [`merge::MergeSigner`] to go on from.
async fn sign_and_insert(
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
fn chain_link(n: &FullNode) -> FullNode {
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
async fn insert_batches(
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
    let multi = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    let mut pending = FuturesUnordered::new();
    let mut done = 0u64;
    let joined = |r: Result<Result<u64, StoreError>, tokio::task::JoinError>| match r {
        Ok(r) => r.map_err(SignError::from),
        Err(e) => Err(SignError::Usage(format!("write-back task failed: {e}"))),
    };
    let mut signed = 0;
    for mut batch in batches {
        if let Some((keys, options)) = signer {
            let mut sign = || batch.sign(keys, options);
            signed += if multi {
                tokio::task::block_in_place(sign)
            } else {
                sign()
            };
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
    let mut opts = sign_options(config.nsec3.clone(), validity, threads, full);
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
        let mut images = base_gen.map(|g| NodeImages::new(zone, ver, g));
        if let Some(images) = images.as_mut() {
            images.capture_changes(store, &changes).await?;
        }
        store.apply_changes(zone, ver, &changes).await?;
        progress.set(written);
        if publish {
            let owners = changed_owners(zone, &changes);
            published_gen = Some(
                store
                    .publish_in_place(zone, ver, serial, Some(&owners), images.as_ref())
                    .await?,
            );
        }
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

/// Finds one key of `zone` by key tag or `_id`.
pub async fn find_key(store: &Store, zone: &Name, which: &str) -> Result<StoredKey, SignError> {
    let keys = store.zone_keys(zone).await?;
    let matching: Vec<StoredKey> = keys
        .into_iter()
        .filter(|k| k.id == which || k.tag.to_string() == which)
        .collect();
    match matching.len() {
        0 => Err(SignError::NoSuchKey(zone.to_string(), which.to_string())),
        1 => Ok(matching.into_iter().next().expect("one")),
        _ => Err(SignError::Usage(format!(
            "several keys of {zone} have tag {which}; give the key id instead"
        ))),
    }
}
