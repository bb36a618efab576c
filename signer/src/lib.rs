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
//!
//! One job per file: `secure.rs` (secure-zone), `unsecure.rs`
//! (unsecure-zone), `rebuild.rs` (the new version both build and switch
//! to), `resign.rs` (re-signing in place); this file holds what they share
//! (errors, options, the report, progress, `cleanup`, `find_key`).
#![warn(missing_docs, unreachable_pub)]

pub mod catalog;
mod catchup;
pub mod check;
mod cpu_work;
pub mod create;
pub mod crypto;
mod database_args;
pub mod edit;
pub mod export;
mod follow;
pub mod handoff;
pub mod kept_signer;
pub mod keyroll;
pub mod lease;
pub mod merge;
pub mod parent;
pub mod plan;
mod rebuild;
pub mod refresh;
mod resign;
mod secure;
pub mod service;
pub mod soa;
mod unsecure;

use backend_mongo::dnssec_store::{FullNode, Nsec3Config, StoredKey};
use backend_mongo::{Collected, Store, StoreError};
use dns::serial::{serial_gt, soa_serial};
use dns::{Name, RType};
use plan::{KeySet, PlanError, PlanStats, SignOptions};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub use database_args::DatabaseArgs;
pub use follow::{follow, sign_changes_since};
pub use resign::{resign, resign_version, sign_after_write};
pub use secure::{secure_zone, secure_zone_switch};
pub use unsecure::{unsecure_zone, unsecure_zone_switch};

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
    /// Up to this much is taken off each RRset's validity (spreads
    /// refreshes out).
    pub jitter: Duration,
    /// TTL of DNSKEY, CDS and CDNSKEY; `None`: as they were.
    pub dnskey_ttl: Option<u32>,
}

impl Default for Validity {
    fn default() -> Self {
        Validity {
            lifetime: Duration::from_secs(30 * 86400),
            refresh: Duration::from_secs(10 * 86400),
            backdate: Duration::from_secs(3600),
            jitter: Duration::ZERO,
            dnskey_ttl: None,
        }
    }
}

impl Validity {
    /// The validity the zone's policy sets, else the defaults.
    pub fn of(config: &backend_mongo::dnssec_store::DnssecConfig) -> Validity {
        match &config.policy {
            Some(p) => Validity {
                lifetime: Duration::from_secs(p.rrsig_lifetime),
                refresh: Duration::from_secs(p.rrsig_refresh),
                // Never back-dated by more than a tenth of the lifetime.
                backdate: Duration::from_secs(3600.min(p.rrsig_lifetime / 10)),
                jitter: Duration::from_secs(p.rrsig_jitter),
                dnskey_ttl: Some(p.dnskey_ttl),
            },
            None => Validity::default(),
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

impl SecureOptions {
    /// ECDSA P-256 (algorithm 13) with a KSK and a ZSK, `nsec3` or NSEC,
    /// no CDS, the default validity, two signing threads, the old version
    /// dropped at the switch (no grace period).
    pub fn ecdsa(nsec3: Option<Nsec3Config>) -> Self {
        SecureOptions {
            algorithm: 13,
            csk: false,
            nsec3,
            cds: false,
            validity: Validity::default(),
            threads: 2,
            grace: Duration::ZERO,
        }
    }
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
        jitter: v.jitter.as_secs().min(u64::from(u32::MAX)) as u32,
        dnskey_ttl: v.dnskey_ttl,
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
    // Signing is CPU work on threads of its own: the runtime's worker
    // stays free.
    let result = cpu_work::cpu_work(work)?;
    Ok((current, result.0, result.1))
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
