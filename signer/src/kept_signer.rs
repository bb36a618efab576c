//! Merge signers kept between the record edits of one process, so that a
//! secured zone's chain is read once, not once per change-set.
//!
//! ```text
//!  signed edit ─► take(zone, served) ─ kept for this version, same keys
//!       │            and settings, every generation since accounted for
//!       │            by change records ─► the names others wrote since
//!       │            reloaded (point reads) ─► the kept signer
//!       │         ─ otherwise ─► None: a new one (the chain read whole)
//!       └─► after its publish: keep(zone, signer, since, ours)
//!  warm(zone), ahead of the first edit (a server taking UPDATEs, at
//!       start): served gen read, then the chain ─► kept with since = gen;
//!       an edit that comes meanwhile waits at the zone's gate for it
//! ```
//!
//! Only a holder of the zone's signing lease edits, so a kept signer is
//! taken out while one edit uses it and put back after. Its chain copy is
//! the zone's as of `since` plus its own writes; what any other writer
//! changed after `since` is listed by their change records (a record
//! saying "all", a gap or a switch drops the copy). Keys and settings are
//! compared whole at each take: a key step or a new policy drops it too.

use crate::catchup::records_since;
use crate::merge::MergeSigner;
use crate::SignError;
use backend_mongo::dnssec_store::{DnssecConfig, KeyState, StoredKey};
use backend_mongo::{bson::DateTime, Store};
use dns::{Name, ZoneInfo};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// How many edits of this process took a kept signer up for `zone` of
/// `store`'s database.
pub fn taken_in(store: &Store, zone: &Name) -> u64 {
    let counts = taken_counts().lock().unwrap_or_else(|e| e.into_inner());
    counts.get(&key(store, zone)).copied().unwrap_or(0)
}

fn taken_counts() -> &'static Mutex<HashMap<(String, Name), u64>> {
    static COUNTS: OnceLock<Mutex<HashMap<(String, Name), u64>>> = OnceLock::new();
    COUNTS.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Most names other writers may have changed for a kept signer to be
/// brought up to date rather than made anew (point reads each).
const MAX_RELOAD: usize = 20_000;

/// What a kept signer's keys were: a key made, moved or removed differs.
type KeysSeen = Vec<(String, KeyState, Option<DateTime>)>;

/// A signer put back after an edit.
struct Kept {
    signer: MergeSigner,
    /// The generation its chain copy was read or brought up to date at.
    since: i64,
    /// The generations of its own edit's change records (its intent and
    /// its publish, ascending): skipped, what they list is in the copy.
    ours: Vec<i64>,
    keys: KeysSeen,
    config: DnssecConfig,
}

/// Kept signers by database and zone.
type KeptMap = HashMap<(String, Name), Kept>;

fn kept() -> &'static Mutex<KeptMap> {
    static KEPT: OnceLock<Mutex<KeptMap>> = OnceLock::new();
    KEPT.get_or_init(|| Mutex::new(HashMap::new()))
}

fn key(store: &Store, zone: &Name) -> (String, Name) {
    (store.database().name().to_string(), zone.clone())
}

/// What of the zone's DNSSEC settings its signatures and chain depend on
/// (not the service's bookkeeping: `seen_gen`, `marked`, the parents).
fn signing_settings(config: DnssecConfig) -> DnssecConfig {
    DnssecConfig {
        parents: Vec::new(),
        marked: false,
        seen_gen: None,
        ..config
    }
}

fn keys_seen(keys: &[StoredKey]) -> KeysSeen {
    let mut seen: KeysSeen = keys
        .iter()
        .map(|k| (k.id.clone(), k.state, k.since))
        .collect();
    seen.sort_by(|a, b| a.0.cmp(&b.0));
    seen
}

/// The signer kept for `zone`, brought up to `served`, or `None` when
/// there is none that can be (see the module documentation). The caller
/// holds the signing lease.
pub(crate) async fn take(
    store: &Store,
    zone: &Name,
    served: &ZoneInfo,
) -> Result<Option<MergeSigner>, SignError> {
    // A warm-up under way: wait for its signer rather than read the chain
    // a second time.
    let warming = warming_gate(store, zone);
    drop(warming.lock().await);
    let taken = kept()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&key(store, zone));
    let Some(mut k) = taken else {
        return Ok(None);
    };
    if k.signer.ver() != served.ver
        || signing_settings(store.dnssec_config(zone).await?) != k.config
        || keys_seen(&store.zone_keys(zone).await?) != k.keys
    {
        return Ok(None);
    }
    let Some(mut names) = names_written_since(store, zone, &k, served.gen).await? else {
        return Ok(None);
    };
    names.sort();
    names.dedup();
    if names.len() > MAX_RELOAD {
        return Ok(None);
    }
    k.signer.reload(store, &names).await?;
    k.signer.renew_validity(&crate::Validity::of(&k.config));
    *taken_counts()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(key(store, zone))
        .or_insert(0) += 1;
    Ok(Some(k.signer))
}

/// The names other writers changed between the kept signer's generation
/// and `to`, from their change records; `None` when the records do not
/// account for every generation. Its own records are left out: they may
/// list more names than a record holds ("all"), and what its edit wrote is
/// in the copy already.
async fn names_written_since(
    store: &Store,
    zone: &Name,
    k: &Kept,
    to: i64,
) -> Result<Option<Vec<Name>>, SignError> {
    let mut names = Vec::new();
    let mut from = k.since;
    let own = k.ours.iter().filter(|g| **g > k.since && **g <= to);
    for next in own.map(|g| g - 1).chain([to]) {
        let Some(records) = records_since(store, zone, from, next).await? else {
            return Ok(None);
        };
        names.extend(
            records
                .into_iter()
                .flat_map(|(_, r)| r.names.unwrap_or_default()),
        );
        from = next + 1;
    }
    Ok(Some(names))
}

/// The keys and settings a signer is made with, read before it is made
/// (or taken up): what [`keep`] stores beside it.
pub(crate) struct MadeWith {
    keys: KeysSeen,
    config: DnssecConfig,
}

/// Reads what a signer about to be made for `zone` is made with.
pub(crate) async fn made_with(store: &Store, zone: &Name) -> Result<MadeWith, SignError> {
    Ok(MadeWith {
        keys: keys_seen(&store.zone_keys(zone).await?),
        config: signing_settings(store.dnssec_config(zone).await?),
    })
}

/// Puts `signer` back after an edit that read the zone at generation
/// `since` and wrote the change records `ours` (its intent, its publish);
/// `made` is what it was made with (read
/// before it was made, so a key step meanwhile never passes for the
/// signer's own). Not kept when a whole re-sign is due.
pub(crate) fn keep(
    store: &Store,
    zone: &Name,
    signer: MergeSigner,
    made: MadeWith,
    since: i64,
    mut ours: Vec<i64>,
) {
    ours.sort_unstable();
    if signer.needs_full_resign() {
        return;
    }
    let k = Kept {
        signer,
        since,
        ours,
        keys: made.keys,
        config: made.config,
    };
    kept()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key(store, zone), k);
}

/// Makes a signer for `zone` ahead of its first record edit and keeps it,
/// so that edit takes it up instead of reading the whole chain: for a
/// server that accepts DNS UPDATE, at start. Read without the signing
/// lease: what other writers change meanwhile is in their change records,
/// which [`take`] reads from the generation served before the chain.
/// `None` when the zone is not served or not secured, or a signer is kept
/// already; otherwise the links of the chain read.
pub async fn warm(store: &Store, zone: &Name) -> Result<Option<usize>, SignError> {
    // Closed before the first await: an edit that comes meanwhile waits
    // for this signer instead of reading the chain a second time.
    let Some(held) = warming(store, zone) else {
        return Ok(None);
    };
    let r = warm_held(store, zone).await;
    drop(held);
    r
}

/// A zone's gate (see [`warming_gate`]).
type Gate = Arc<tokio::sync::Mutex<()>>;

/// The gate an edit of `zone` passes before it takes a kept signer up:
/// held while that zone's signer is being made ahead ([`warming`]).
fn warming_gate(store: &Store, zone: &Name) -> Gate {
    static GATES: OnceLock<Mutex<HashMap<(String, Name), Gate>>> = OnceLock::new();
    let gates = GATES.get_or_init(|| Mutex::new(HashMap::new()));
    let mut gates = gates.lock().unwrap_or_else(|e| e.into_inner());
    gates.entry(key(store, zone)).or_default().clone()
}

/// Closes `zone`'s gate at once (no await) until the returned guard is
/// dropped; `None` when it is closed already.
fn warming(store: &Store, zone: &Name) -> Option<tokio::sync::OwnedMutexGuard<()>> {
    warming_gate(store, zone).try_lock_owned().ok()
}

async fn warm_held(store: &Store, zone: &Name) -> Result<Option<usize>, SignError> {
    let present = |store: &Store| {
        kept()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains_key(&key(store, zone))
    };
    if present(store) {
        return Ok(None);
    }
    let Some(served) = store.find_zone(zone).await? else {
        return Ok(None);
    };
    let made = made_with(store, zone).await?;
    let Some(signer) = MergeSigner::new(store, zone, served.ver).await? else {
        return Ok(None);
    };
    let links = signer.chain_len();
    let k = Kept {
        signer,
        since: served.gen,
        ours: Vec::new(),
        keys: made.keys,
        config: made.config,
    };
    // An edit that kept its own meanwhile is newer: it stays.
    let mut map = kept().lock().unwrap_or_else(|e| e.into_inner());
    map.entry(key(store, zone)).or_insert(k);
    Ok(Some(links))
}
