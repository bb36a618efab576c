//! Which zones exist, at which generation, kept fresh by polling.
//!
//! ```text
//!  ZoneRegistry: apex ─► ZoneState { info, gen (atomic) }     (positive)
//!                apex ─► not a zone, at zones_epoch           (negative, LRU)
//!  first poll: every served zone is loaded (up to preload_max) and the
//!     registry becomes *complete*: a name not known as a zone is not one,
//!     with no database read (qnames are mostly unique: one read each
//!     would double the round trips of an uncached query)
//!  poll loop, every interval:
//!     meta.seq unchanged ─► nothing (one point read)
//!     changed ─► zones {gen > last} ─► update info/gen of known zones;
//!                a zone never seen ─► zones_epoch += 1 (negatives void),
//!                and it is added when the registry is complete
//!  every change is told to the listener (resident zones) before the new
//!  generation is served: ZoneEvent::{Changed, Removed, Purged, AllPurged}
//! ```
//!
//! Every cached answer remembers the generation of the zone it came from
//! and is served only while that generation is current.

use super::name_scope::NameChanges;
use super::narrowing::{first_unshown, holes, zone_change, Narrowing, ZoneChange};
use super::sharded::{ShardedLru, Weigh};
use backend_mongo::{ChangeRecord, Name, Store, StoreError, ZoneInfo};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

/// How long `meta.seq` may stay ahead of every zone's `gen` (a writer that
/// died between its two steps) before the poller stops asking.
const STUCK_AFTER: Duration = Duration::from_secs(5);

/// How long the zones a hole could belong to keep their held generation
/// waiting for the hole's writer (which then shows which names it changed),
/// before they drop everything instead. Well inside the 1-s freshness bound.
const HOLE_WAIT: Duration = Duration::from_millis(200);

/// Longest one poll may take before it is abandoned and retried.
const POLL_LIMIT: Duration = Duration::from_secs(15);

/// Most change records read in one poll; a longer stretch of generations
/// (a bulk import of many zones) drops changed zones entirely.
const MAX_RECORD_READS: i64 = 256;

/// The generations whose change records a poll reads again once it has
/// read the zones: from the first one after `last` without a record up to
/// the highest generation a zone shows (none past [`MAX_RECORD_READS`]).
fn records_to_read_again(
    last: i64,
    records: &HashMap<i64, ChangeRecord>,
    zones: &[ZoneInfo],
) -> Option<(i64, i64)> {
    let top = zones.iter().map(|z| z.gen).max()?;
    if top - last > MAX_RECORD_READS {
        return None;
    }
    let gap = (last + 1..=top).find(|g| !records.contains_key(g))?;
    Some((gap, top))
}

/// The changed zones whose change records list their apex and whose apex
/// holds a DNAME now (or could not be read): a DNAME there redirects every
/// name, so no cached reply of the zone outlives the change. One point read
/// per such zone, on the poll's path, never on the answer path.
async fn apexes_redirecting(
    store: &Store,
    zones: &[ZoneInfo],
    records: &HashMap<i64, ChangeRecord>,
) -> HashSet<Name> {
    let mut out = HashSet::new();
    for zone in zones {
        let listed = records.values().any(|r| {
            r.zone == zone.apex && r.names.as_ref().is_some_and(|n| n.contains(&zone.apex))
        });
        if !listed {
            continue;
        }
        let redirects = match store.get_node(zone, &zone.apex).await {
            Ok(apex) => apex.is_some_and(|a| a.rrset(backend_mongo::RType::DNAME).is_some()),
            Err(_) => true,
        };
        if redirects {
            out.insert(zone.apex.clone());
        }
    }
    out
}

/// The live state of one zone.
pub struct ZoneState {
    info: RwLock<ZoneInfo>,
    /// The generation answers must carry to be served; purges move it too.
    gen: AtomicI64,
    /// Cached nodes of the zone are valid while this stays the same; it
    /// moves when a change cannot be narrowed to names (and on purges).
    node_epoch: AtomicU64,
    /// The changes applied, and the names each touched (`name_scope.rs`).
    /// Written together with `gen`, under this lock.
    changes: RwLock<NameChanges>,
    /// Length of the apex in wire octets.
    apex_len: usize,
}

impl ZoneState {
    fn new(info: &ZoneInfo) -> Arc<ZoneState> {
        Arc::new(ZoneState {
            info: RwLock::new(info.clone()),
            gen: AtomicI64::new(info.gen),
            node_epoch: AtomicU64::new(0),
            changes: RwLock::new(NameChanges::default()),
            apex_len: info.apex.wire_len(),
        })
    }

    /// The token of the zone's state while `gen` is its generation (`None`
    /// once it is not): a plain positive answer read at `gen` keeps it, to
    /// outlive changes that do not touch its name ([`ZoneState::untouched_since`]).
    pub fn name_token(&self, gen: i64) -> Option<u64> {
        let changes = self.changes.read().unwrap_or_else(|p| p.into_inner());
        (self.gen() == gen).then(|| changes.token())
    }

    /// True when no change applied after `token` may have touched the plain
    /// positive answer for `qname` (lower-case wire, inside this zone).
    pub fn untouched_since(&self, token: u64, qname: &[u8]) -> bool {
        let changes = self.changes.read().unwrap_or_else(|p| p.into_inner());
        changes.untouched(token, qname, self.apex_len)
    }

    /// Moves the zone to `gen` after a change that touched `names` (`None`:
    /// any name), with `info` (when the document changed) and the change
    /// noted under one lock, so a token never pairs with another generation.
    fn move_to(&self, gen: i64, info: Option<&ZoneInfo>, names: Option<(&[Name], bool)>) {
        let mut changes = self.changes.write().unwrap_or_else(|p| p.into_inner());
        match names {
            Some((names, apex_redirects)) => changes.names_changed(names, apex_redirects),
            None => changes.everything_changed(),
        }
        if let Some(info) = info {
            *self.info.write().unwrap_or_else(|p| p.into_inner()) = info.clone();
        }
        self.gen.store(gen, Ordering::Release);
    }

    /// The epoch cached nodes of this zone must carry.
    pub fn node_epoch(&self) -> u64 {
        self.node_epoch.load(Ordering::Acquire)
    }

    /// The zone as currently served (with the effective generation).
    pub fn info(&self) -> ZoneInfo {
        let mut info = self.info.read().unwrap_or_else(|p| p.into_inner()).clone();
        info.gen = self.gen.load(Ordering::Acquire);
        info
    }

    /// The effective generation.
    pub fn gen(&self) -> i64 {
        self.gen.load(Ordering::Acquire)
    }
}

struct NotAZone {
    epoch: u64,
    at: Instant,
}

impl Weigh for NotAZone {
    fn weight(&self) -> usize {
        96
    }
}

/// What a change of one zone drops from the record cache.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum NodePurge<'a> {
    /// The named nodes of the current version (a logged change).
    Names(&'a [Name]),
    /// Every node of the zone's other versions: a new version is served,
    /// and nodes keyed by an old one could never be served again.
    OtherVersions,
}

/// Drops nodes of (zone apex, current version) from a record cache.
pub type NodePurger = Box<dyn Fn(&Name, i64, NodePurge<'_>) + Send + Sync>;

/// Told of every zone whose SOA serial a poll saw move, or that appeared
/// (NOTIFY out, `crate::notify`); must not block.
pub type SerialWatcher = Box<dyn Fn(&ZoneInfo) + Send + Sync>;

/// A change of the registry's view of one zone (or of all), told to the
/// change listener before answers can see the new generation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ZoneEvent<'a> {
    /// A known zone moved from `from` to `to`; `names` lists what changed
    /// when the change records account for it (same version only).
    Changed {
        /// The zone as held before.
        from: &'a ZoneInfo,
        /// The zone as served from now on.
        to: &'a ZoneInfo,
        /// The names changed, or `None`: anything may have changed.
        names: Option<&'a [Name]>,
    },
    /// The zone is no longer served (deleted).
    Removed(&'a Name),
    /// The zone's cached answers were purged (`POST /purge?zone=`).
    Purged(&'a Name),
    /// Everything was purged (`POST /purge`): every zone is read again.
    AllPurged,
}

/// Hears every [`ZoneEvent`] (resident zones register one; once).
pub type ZoneListener = Box<dyn Fn(ZoneEvent<'_>) + Send + Sync>;

/// How long `gen` has been the generation `tracker` follows (zero when it
/// is new, and from then on it is followed). Past [`HOLE_WAIT`] the zones a
/// hole could belong to stop waiting for it; past [`STUCK_AFTER`] it is
/// given up on (its writer died, or another writer's later generation on
/// the same zone hid it).
fn age_of(tracker: &std::sync::Mutex<Option<(i64, Instant)>>, gen: i64) -> Duration {
    let mut followed = tracker.lock().unwrap_or_else(|p| p.into_inner());
    match *followed {
        Some((g, since)) if g == gen => since.elapsed(),
        _ => {
            *followed = Some((gen, Instant::now()));
            Duration::ZERO
        }
    }
}

/// Known zones by apex, hashed by the apex's wire form (a
/// [`WireSuffix`] finds one without building a [`Name`]).
type ZoneMap = hashbrown::HashMap<Name, Arc<ZoneState>, foldhash::fast::RandomState>;

/// A name's wire form (case-folded), looked up in a [`ZoneMap`] as the
/// [`Name`] it spells: it hashes as `Name` does (its wire bytes).
#[derive(Hash)]
struct WireSuffix<'a>(&'a [u8]);

impl hashbrown::Equivalent<Name> for WireSuffix<'_> {
    fn equivalent(&self, name: &Name) -> bool {
        name.as_wire() == self.0
    }
}

/// Known zones and known non-zones.
pub struct ZoneRegistry {
    zones: RwLock<ZoneMap>,
    negative: ShardedLru<Name, NotAZone>,
    /// How long a non-zone is remembered, in ms (changeable: SIGHUP).
    negative_ttl_ms: AtomicU64,
    /// Moves whenever a zone appears; negative entries of older epochs are void.
    zones_epoch: AtomicU64,
    /// Source of generations for purges (negative, so never equal to a
    /// database generation).
    purge_counter: AtomicI64,
    /// Last global change counter seen.
    last_seq: AtomicI64,
    /// Since when `meta.seq` is ahead of every zone's `gen`.
    stuck_since: std::sync::Mutex<Option<Instant>>,
    /// When the last successful poll finished.
    last_poll: RwLock<Option<Instant>>,
    /// Most zones loaded at the first poll (0: none, ask per name).
    preload_max: usize,
    /// Every served zone is in `zones`: unknown names are not zones.
    complete: AtomicBool,
    /// The first poll is done and the preload has not succeeded yet.
    preload_wanted: AtomicBool,
    /// Moved by `purge_all`: a preload that began before it is discarded.
    purges: AtomicU64,
    /// Drops nodes from the record cache (see `apply_logged_changes`).
    node_purger: std::sync::OnceLock<NodePurger>,
    /// Told of serial changes (see `set_serial_watcher`).
    serial_watcher: std::sync::OnceLock<SerialWatcher>,
    /// Hears zone changes before they are served (resident zones).
    listener: std::sync::OnceLock<ZoneListener>,
    /// The first generation above `last_seq` that no change record or zone
    /// accounts for yet, and since when.
    hole: std::sync::Mutex<Option<(i64, Instant)>>,
    /// The first generation whose change record's zone does not show it
    /// yet, and since when.
    unshown: std::sync::Mutex<Option<(i64, Instant)>>,
    /// The highest generation the poller moved past without accounting
    /// for it (given up on, or its records not read): a zone held below it
    /// is never narrowed, a generation of its own may be among those.
    given_up: AtomicI64,
    /// Zone changes held back a poll for a hole in their range.
    waited: AtomicU64,
    /// Zone changes applied by dropping every cached node of the zone.
    unnarrowed: AtomicU64,
}

/// What a registry lookup found.
pub enum Known {
    /// A zone we know.
    Zone(ZoneInfo),
    /// Known not to be a zone.
    NotAZone,
    /// Ask the database.
    Unknown,
}

impl ZoneRegistry {
    /// An empty registry; negative answers are kept `negative_ttl` at most.
    pub fn new(max_negative: usize, negative_ttl: Duration) -> Self {
        ZoneRegistry {
            zones: RwLock::new(ZoneMap::default()),
            negative: ShardedLru::new(16, max_negative, max_negative.saturating_mul(96)),
            negative_ttl_ms: AtomicU64::new(negative_ttl.as_millis() as u64),
            zones_epoch: AtomicU64::new(0),
            purge_counter: AtomicI64::new(-1),
            last_seq: AtomicI64::new(i64::MIN),
            stuck_since: std::sync::Mutex::new(None),
            last_poll: RwLock::new(None),
            preload_max: 0,
            complete: AtomicBool::new(false),
            preload_wanted: AtomicBool::new(false),
            purges: AtomicU64::new(0),
            node_purger: std::sync::OnceLock::new(),
            serial_watcher: std::sync::OnceLock::new(),
            listener: std::sync::OnceLock::new(),
            hole: std::sync::Mutex::new(None),
            unshown: std::sync::Mutex::new(None),
            given_up: AtomicI64::new(i64::MIN),
            waited: AtomicU64::new(0),
            unnarrowed: AtomicU64::new(0),
        }
    }

    /// Loads up to `max` zones at the first poll; with all of them loaded,
    /// names that are not zones need no database read.
    pub fn with_preload(mut self, max: usize) -> Self {
        self.preload_max = max;
        self
    }

    /// True when every served zone is known (the preload finished).
    pub fn is_complete(&self) -> bool {
        self.complete.load(Ordering::Acquire)
    }

    /// Changes how long non-zones are remembered.
    pub fn set_negative_ttl(&self, ttl: Duration) {
        self.negative_ttl_ms
            .store(ttl.as_millis() as u64, Ordering::Relaxed);
    }

    /// What we know about `apex`.
    pub fn lookup(&self, apex: &Name) -> Known {
        self.lookup_wire(apex.as_wire())
    }

    /// [`ZoneRegistry::lookup`] of the name whose wire form is `apex`
    /// (case-folded): no allocation unless the non-zones must be asked.
    fn lookup_wire(&self, apex: &[u8]) -> Known {
        if let Some(state) = self
            .zones
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&WireSuffix(apex))
        {
            return Known::Zone(state.info());
        }
        if self.complete.load(Ordering::Acquire) {
            return Known::NotAZone;
        }
        let Ok(apex) = Name::from_wire(apex) else {
            return Known::Unknown;
        };
        let epoch = self.zones_epoch.load(Ordering::Acquire);
        let ttl = Duration::from_millis(self.negative_ttl_ms.load(Ordering::Relaxed));
        match self
            .negative
            .with(&apex, |n| n.epoch == epoch && n.at.elapsed() < ttl)
        {
            Some(true) => Known::NotAZone,
            _ => Known::Unknown,
        }
    }

    /// The deepest zone enclosing `qname` when every candidate apex on
    /// the way is known (`Some(None)`: none is a zone); `None` as soon as
    /// one is not.
    pub fn deepest_known(&self, qname: &Name) -> Option<Option<ZoneInfo>> {
        let wire = qname.as_wire();
        let mut at = 0;
        loop {
            match self.lookup_wire(&wire[at..]) {
                Known::Zone(info) => return Some(Some(info)),
                Known::NotAZone => {}
                Known::Unknown => return None,
            }
            match wire.get(at) {
                Some(&len) if len > 0 => at += 1 + usize::from(len),
                _ => return Some(None),
            }
        }
    }

    /// The candidate apexes of `qname` (itself and every ancestor) that
    /// the registry cannot answer for, deepest first, down to the deepest
    /// known zone, which comes second (`None`: no candidate is known as a
    /// zone). With no such candidate, the second is the answer.
    pub fn unknown_candidates(&self, qname: &Name) -> (Vec<Name>, Option<ZoneInfo>) {
        let mut unknown = Vec::new();
        for apex in qname.ancestors() {
            match self.lookup(&apex) {
                Known::Zone(info) => return (unknown, Some(info)),
                Known::NotAZone => {}
                Known::Unknown => unknown.push(apex),
            }
        }
        (unknown, None)
    }

    /// The state of a known zone.
    pub fn state(&self, apex: &Name) -> Option<Arc<ZoneState>> {
        self.zones
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(apex)
            .cloned()
    }

    /// Records what the database said about `apex`, if no zone appeared
    /// since `epoch` was read (else the answer may be stale: not kept).
    pub fn learn(&self, apex: &Name, found: Option<&ZoneInfo>, epoch: u64) {
        if self.zones_epoch.load(Ordering::Acquire) != epoch {
            return;
        }
        match found {
            Some(info) => {
                let mut zones = self.zones.write().unwrap_or_else(|p| p.into_inner());
                zones
                    .entry(apex.clone())
                    .or_insert_with(|| ZoneState::new(info));
            }
            None => self.negative.insert(
                apex.clone(),
                NotAZone {
                    epoch,
                    at: Instant::now(),
                },
            ),
        }
    }

    /// The epoch of the set of zones (answers for names in no zone depend on it).
    pub fn zones_epoch(&self) -> u64 {
        self.zones_epoch.load(Ordering::Acquire)
    }

    /// Applies changed zone documents, each dropping the zone's cached
    /// nodes entirely.
    pub fn apply_changes(&self, changed: &[ZoneInfo]) {
        let _ =
            self.apply_logged_changes(changed, &HashMap::new(), Narrowing::Never, &HashSet::new());
    }

    /// Applies changed zone documents. A zone whose change `records`
    /// account for (see `narrowing.rs`) drops only the named nodes, through
    /// the name purger; any other changed zone drops all its nodes, except
    /// one `narrowing` says must wait for a hole (left as it is, for the
    /// next poll). Either way a new generation voids the zone's cached
    /// replies. A zone already at the document's generation is left alone
    /// (polls may repeat). `redirecting`: the zones whose apex, listed
    /// in a change, holds a DNAME now (every name's reply is void then).
    /// Returns the lowest generation held by a zone
    /// that waits (the poller must read its records again next time).
    pub fn apply_logged_changes(
        &self,
        changed: &[ZoneInfo],
        records: &HashMap<i64, ChangeRecord>,
        narrowing: Narrowing<'_>,
        redirecting: &HashSet<Name>,
    ) -> Option<i64> {
        let mut appeared = Vec::new();
        let mut waiting: Option<i64> = None;
        {
            let zones = self.zones.read().unwrap_or_else(|p| p.into_inner());
            for info in changed {
                let Some(state) = zones.get(&info.apex) else {
                    appeared.push(info);
                    continue;
                };
                let held = state.info.read().unwrap_or_else(|p| p.into_inner()).clone();
                if held.gen == info.gen && held.ver == info.ver {
                    continue;
                }
                let change = match held.ver == info.ver {
                    true => zone_change(&info.apex, held.gen, info.gen, records, narrowing),
                    false => ZoneChange::Everything,
                };
                let names: Option<Vec<Name>> = match change {
                    ZoneChange::Wait => {
                        tracing::debug!(zone = %info.apex, from = held.gen, to = info.gen,
                            ?narrowing, "change waits for a generation not yet accounted for");
                        self.waited.fetch_add(1, Ordering::Relaxed);
                        waiting = Some(waiting.map_or(held.gen, |w| w.min(held.gen)));
                        continue;
                    }
                    ZoneChange::Names(names) => Some(names),
                    ZoneChange::Everything => {
                        tracing::debug!(zone = %info.apex, from = held.gen, to = info.gen,
                            versions = ?(held.ver, info.ver), "change not narrowed to names");
                        self.unnarrowed.fetch_add(1, Ordering::Relaxed);
                        None
                    }
                };
                self.tell(ZoneEvent::Changed {
                    from: &held,
                    to: info,
                    names: names.as_deref(),
                });
                let purger = self.node_purger.get();
                match (&names, purger) {
                    (Some(names), Some(purge)) => {
                        purge(&info.apex, info.ver, NodePurge::Names(names))
                    }
                    _ => {
                        state.node_epoch.fetch_add(1, Ordering::AcqRel);
                    }
                }
                if let (true, Some(purge)) = (held.ver != info.ver, purger) {
                    // The old version's nodes are dead weight: keyed by
                    // their version, no lookup reaches them again.
                    purge(&info.apex, info.ver, NodePurge::OtherVersions);
                }
                let touched = names
                    .as_deref()
                    .map(|n| (n, redirecting.contains(&info.apex)));
                state.move_to(info.gen, Some(info), touched);
                if held.serial != info.serial {
                    self.tell_serial(info);
                }
            }
        }
        if appeared.is_empty() {
            return waiting;
        }
        appeared.iter().for_each(|info| self.tell_serial(info));
        if self.complete.load(Ordering::Acquire) {
            self.add_zones(appeared.into_iter());
        }
        self.zones_epoch.fetch_add(1, Ordering::AcqRel);
        waiting
    }

    /// Sets what drops nodes of a zone from the record cache (the record
    /// cache registers itself; once).
    pub fn set_node_purger(&self, purge: NodePurger) {
        let _ = self.node_purger.set(purge);
    }

    /// Sets who is told of moved serials (the notifier registers itself; once).
    pub fn set_serial_watcher(&self, watch: SerialWatcher) {
        let _ = self.serial_watcher.set(watch);
    }

    fn tell_serial(&self, info: &ZoneInfo) {
        if let Some(watch) = self.serial_watcher.get() {
            watch(info);
        }
    }

    /// Sets what hears every zone change before it is served (once).
    pub fn set_listener(&self, listener: ZoneListener) {
        let _ = self.listener.set(listener);
    }

    fn tell(&self, event: ZoneEvent<'_>) {
        if let Some(listener) = self.listener.get() {
            listener(event);
        }
    }

    /// The node epoch of `apex`, if it is a known zone.
    pub fn node_epoch(&self, apex: &Name) -> Option<u64> {
        self.zones
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(apex)
            .map(|s| s.node_epoch())
    }

    /// Adds zones not known yet (a known zone keeps its newer state).
    fn add_zones<'a>(&self, infos: impl Iterator<Item = &'a ZoneInfo>) {
        let mut zones = self.zones.write().unwrap_or_else(|p| p.into_inner());
        for info in infos {
            zones
                .entry(info.apex.clone())
                .or_insert_with(|| ZoneState::new(info));
        }
    }

    /// Loads every served zone, if there are at most `preload_max`, and
    /// marks the registry complete. Called after `last_seq` is set, so a
    /// zone created meanwhile is seen by the next poll.
    pub async fn preload(&self, store: &Store) -> Result<(), StoreError> {
        let started = Instant::now();
        let purges = self.purges.load(Ordering::Acquire);
        match store.served_zones(self.preload_max).await? {
            Some(_) if self.purges.load(Ordering::Acquire) != purges => {}
            Some(all) => {
                self.add_zones(all.iter());
                self.complete.store(true, Ordering::Release);
                self.zones_epoch.fetch_add(1, Ordering::AcqRel);
                tracing::info!(
                    zones = all.len(),
                    took_ms = started.elapsed().as_millis() as u64,
                    "every served zone loaded: names in no zone need no database read"
                );
            }
            None => tracing::info!(
                limit = self.preload_max,
                "more zones than zone_preload_max: zones are looked up per name"
            ),
        }
        Ok(())
    }

    /// Forgets deleted zones: their cached answers and nodes are void, and
    /// names in them are in no zone from now on (REFUSED).
    pub fn remove_zones(&self, deleted: &[Name]) {
        let mut removed = Vec::new();
        {
            let mut zones = self.zones.write().unwrap_or_else(|p| p.into_inner());
            for apex in deleted {
                if let Some(state) = zones.remove(apex) {
                    removed.push((apex.clone(), state));
                }
            }
        }
        if removed.is_empty() {
            return;
        }
        for (apex, state) in &removed {
            self.tell(ZoneEvent::Removed(apex));
            let g = self.purge_counter.fetch_sub(1, Ordering::AcqRel);
            state.node_epoch.fetch_add(1, Ordering::AcqRel);
            state.move_to(g, None, None);
            if let Some(purge) = self.node_purger.get() {
                // No version is served any more: every one goes.
                purge(apex, i64::MIN, NodePurge::OtherVersions);
            }
        }
        self.zones_epoch.fetch_add(1, Ordering::AcqRel);
    }

    /// Makes every cached answer of `apex` invalid.
    pub fn purge_zone(&self, apex: &Name) -> bool {
        match self.state(apex) {
            Some(state) => {
                self.tell(ZoneEvent::Purged(apex));
                let g = self.purge_counter.fetch_sub(1, Ordering::AcqRel);
                state.node_epoch.fetch_add(1, Ordering::AcqRel);
                state.move_to(g, None, None);
                true
            }
            None => false,
        }
    }

    /// Forgets everything: every zone is looked up again.
    pub fn purge_all(&self) {
        self.tell(ZoneEvent::AllPurged);
        let mut zones = self.zones.write().unwrap_or_else(|p| p.into_inner());
        zones.clear();
        // Complete no more; the next poll counts as the first and loads again.
        self.complete.store(false, Ordering::Release);
        self.purges.fetch_add(1, Ordering::AcqRel);
        self.last_seq.store(i64::MIN, Ordering::Release);
        self.zones_epoch.fetch_add(1, Ordering::AcqRel);
    }

    /// The generation up to which every change is applied (`None` before
    /// the first poll, and after a full purge until the next): every zone
    /// document of a generation at or below it was visible when the poll
    /// that moved it read the zones (a generation no zone showed yet held
    /// it back, for 5 s at most).
    pub fn applied_through(&self) -> Option<i64> {
        let last = self.last_seq.load(Ordering::Acquire);
        (last != i64::MIN).then_some(last)
    }

    /// Every known zone, as served now.
    pub fn known_zones(&self) -> Vec<ZoneInfo> {
        let zones = self.zones.read().unwrap_or_else(|p| p.into_inner());
        zones.values().map(|s| s.info()).collect()
    }

    /// Zones known.
    pub fn len(&self) -> usize {
        self.zones.read().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// True when no zone is known.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Zone changes held back a poll for a generation not yet accounted
    /// for, and zone changes that dropped the whole zone, since start.
    pub fn narrowing_counts(&self) -> (u64, u64) {
        (
            self.waited.load(Ordering::Relaxed),
            self.unnarrowed.load(Ordering::Relaxed),
        )
    }

    /// Milliseconds since the last successful poll (freshness lag bound).
    pub fn poll_age(&self) -> Option<Duration> {
        self.last_poll
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .map(|t| t.elapsed())
    }

    /// One poll: reads `meta.seq`, and the changed zones if it moved.
    pub async fn poll_once(&self, store: &Store) -> Result<usize, StoreError> {
        let started = Instant::now();
        let seq = store.change_seq().await?;
        tracing::trace!(
            seq,
            took_us = started.elapsed().as_micros() as u64,
            "polled meta.seq"
        );
        // `last_seq` is the highest zone generation applied, not the counter
        // read: a writer bumps `meta.seq` before it writes the zone's `gen`,
        // so a poll in between must not skip that generation.
        let last = self.last_seq.load(Ordering::Acquire);
        let mut changed = 0;
        if last == i64::MIN {
            self.last_seq.store(seq, Ordering::Release);
            self.preload_wanted
                .store(self.preload_max > 0, Ordering::Release);
        } else if seq > last {
            changed = self.apply_moved(store, last, seq).await?;
        }
        *self.last_poll.write().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
        Ok(changed)
    }

    /// Applies what moved after generation `last`, the counter read at
    /// `seq`: deleted zones dropped, changed ones narrowed or dropped, and
    /// `last_seq` moved as far as every generation below it is accounted
    /// for. Returns the zones changed.
    async fn apply_moved(&self, store: &Store, last: i64, seq: i64) -> Result<usize, StoreError> {
        let (deleted, zones, records) = self.read_moved(store, last, seq).await?;
        if !deleted.is_empty() {
            tracing::info!(zones = deleted.len(), "zones deleted: no longer served");
            self.remove_zones(&deleted);
        }
        tracing::debug!(seq, last, changed = zones.len(), "zones changed");
        let top = zones.iter().map(|z| z.gen).max();
        // A generation nothing accounts for: a writer between taking it and
        // showing it, or one that keeps no change record. The zones it
        // could belong to wait for it a moment, then drop everything;
        // `last_seq` stays below it so its zone is not skipped.
        let gens: Vec<i64> = zones.iter().map(|z| z.gen).collect();
        let holes = top.map_or_else(Vec::new, |top| holes(last + 1, top, &records, &gens));
        let first_hole = holes.first().map(|h| (*h, age_of(&self.hole, *h)));
        let narrowing = Narrowing::AroundHoles {
            holes: &holes,
            wait: first_hole.is_some_and(|(_, age)| age <= HOLE_WAIT),
            read_from: self.given_up.load(Ordering::Acquire),
        };
        let redirecting = apexes_redirecting(store, &zones, &records).await;
        let waiting = self.apply_logged_changes(&zones, &records, narrowing, &redirecting);
        match top {
            Some(top) => {
                let unshown = first_unshown(last + 1, top, &records, &zones, &deleted);
                self.advance_past(last, top, first_hole, unshown, waiting);
            }
            None => self.wait_for_unshown(seq),
        }
        Ok(zones.len())
    }

    /// Moves `last_seq` up to `top`, but below the first hole and the
    /// first generation not yet shown (unless given up on after
    /// STUCK_AFTER) and below every zone that waited.
    fn advance_past(
        &self,
        last: i64,
        top: i64,
        first_hole: Option<(i64, Duration)>,
        unshown: Option<i64>,
        waiting: Option<i64>,
    ) {
        let mut upto = top;
        // Records not read for the whole stretch: nothing in it is
        // accounted for.
        let mut gave_up = top - last > MAX_RECORD_READS;
        if let Some((h, age)) = first_hole {
            match age <= STUCK_AFTER {
                true => upto = upto.min(h - 1),
                false => gave_up = true,
            }
        }
        if let Some(u) = unshown {
            match age_of(&self.unshown, u) <= STUCK_AFTER {
                true => upto = upto.min(u - 1),
                false => gave_up = true,
            }
        }
        if let Some(w) = waiting {
            upto = upto.min(w);
        }
        let upto = upto.max(last);
        if gave_up {
            self.given_up.fetch_max(upto, Ordering::AcqRel);
        }
        self.last_seq.store(upto, Ordering::Release);
        *self.stuck_since.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// The counter moved to `seq` but no zone shows it yet: ask again next
    /// time, unless a writer died between the two steps long ago.
    fn wait_for_unshown(&self, seq: i64) {
        let mut stuck = self.stuck_since.lock().unwrap_or_else(|p| p.into_inner());
        match *stuck {
            Some(since) if since.elapsed() > STUCK_AFTER => {
                self.given_up.fetch_max(seq, Ordering::AcqRel);
                self.last_seq.store(seq, Ordering::Release);
                *stuck = None;
            }
            Some(_) => {}
            None => *stuck = Some(Instant::now()),
        }
    }

    /// What moved after generation `last` (up to `seq` at least): the
    /// zones deleted, the zones changed, and the change records of the
    /// generations in between. When the records account for every
    /// generation up to `seq` (but young gaps), only the zones they name are read, one
    /// `_id` read each; otherwise every zone above `last` is looked for
    /// (a scan of the zones on FerretDB, seconds under load for 10,000
    /// zones, which is what held freshness back to the poll's length).
    async fn read_moved(
        &self,
        store: &Store,
        last: i64,
        seq: i64,
    ) -> Result<(Vec<Name>, Vec<ZoneInfo>, HashMap<i64, ChangeRecord>), StoreError> {
        let read_upto = match seq - last <= MAX_RECORD_READS {
            true => seq,
            false => last,
        };
        let mut records = store.change_records(last + 1, read_upto).await?;
        // A generation without a record, young, is most likely a writer
        // between taking it and storing its record: the zones it could
        // belong to wait for it (`narrowing.rs`). Only an older one (a
        // writer that keeps no records) is looked for in every zone.
        let gap = (last + 1..=seq).find(|g| !records.contains_key(g));
        let by_records = read_upto == seq && gap.is_none_or(|g| age_of(&self.hole, g) <= HOLE_WAIT);
        let (deleted, zones) = match by_records {
            true => {
                let mut named: Vec<Name> = records.values().map(|r| r.zone.clone()).collect();
                named.sort();
                named.dedup();
                store.zones_moved_since(&named, last).await?
            }
            false => (
                store.zones_deleted_since(last).await?,
                store.zones_changed_since(last).await?,
            ),
        };
        // The zones were read after the records: a writer may have stored
        // its record and shown its generation in between (the counter
        // moves first, so its generation looked like a gap), or the zones
        // show generations above `seq`. The gaps up to the top are read
        // again, so such a zone's change is still narrowed to its names.
        if let Some((from, to)) = records_to_read_again(last, &records, &zones) {
            records.extend(store.change_records(from, to).await?);
        }
        Ok((deleted, zones, records))
    }

    /// Polls forever every `interval`; faults are logged and retried.
    pub async fn poll_loop(
        self: Arc<Self>,
        store: Store,
        interval: Duration,
        counters: Arc<super::Counters>,
    ) {
        let mut failing = false;
        // A poll that hangs (a stuck connection) must not stop freshness,
        // but a slow one must be allowed to finish: a poll cut off at 1 s
        // on a saturated database never completes, and then no change is
        // ever seen (the 1/100 scenario saw 208-s freshness that way). The
        // driver notices a dead server within its heartbeat anyway.
        let limit = (interval * 4).max(POLL_LIMIT);
        loop {
            let polled = match tokio::time::timeout(limit, self.poll_once(&store)).await {
                Ok(result) => result,
                Err(_) => Err(StoreError::Timeout(format!(
                    "change poll took longer than {limit:?}"
                ))),
            };
            match polled {
                Ok(n) => {
                    if failing {
                        tracing::info!("change polling works again");
                        failing = false;
                    }
                    if n > 0 {
                        counters.zone_changes.fetch_add(n as u64, Ordering::Relaxed);
                    }
                    if self.preload_wanted.swap(false, Ordering::AcqRel) {
                        // In a task of its own: loading many zones takes
                        // longer than a poll may, and polls go on meanwhile.
                        let (registry, store) = (self.clone(), store.clone());
                        tokio::spawn(async move {
                            if let Err(e) = registry.preload(&store).await {
                                tracing::warn!(error = %e, "loading every zone failed; will retry");
                                registry.preload_wanted.store(true, Ordering::Release);
                            }
                        });
                    }
                }
                Err(e) => {
                    if !failing {
                        tracing::warn!(error = %e, "change polling failed; cached answers age by TTL");
                        failing = true;
                    }
                }
            }
            tokio::time::sleep(interval).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(apex: &str, gen: i64) -> ZoneInfo {
        ZoneInfo {
            apex: apex.parse().unwrap(),
            ver: 1,
            gen,
            serial: 1,
        }
    }

    #[test]
    fn a_record_stored_after_the_records_were_read_is_read_again() {
        let record = |zone: &str| ChangeRecord {
            zone: zone.parse().unwrap(),
            names: Some(Vec::new()),
            signed: false,
        };
        // Records 11 and 12 read; the zone shows 14: 13 and 14 again.
        let records = HashMap::from([(11, record("a.test.")), (12, record("a.test."))]);
        let zones = [info("a.test.", 14), info("b.test.", 12)];
        assert_eq!(records_to_read_again(10, &records, &zones), Some((13, 14)));
        // A gap below the top (a writer between its steps) is read too.
        let records = HashMap::from([(11, record("a.test.")), (13, record("a.test."))]);
        let zones = [info("a.test.", 13)];
        assert_eq!(records_to_read_again(10, &records, &zones), Some((12, 13)));
        // Every generation accounted for, or too long a stretch: nothing.
        let records = HashMap::from([(11, record("a.test."))]);
        assert_eq!(
            records_to_read_again(10, &records, &[info("a.test.", 11)]),
            None
        );
        let far = [info("a.test.", 10 + MAX_RECORD_READS + 1)];
        assert_eq!(records_to_read_again(10, &records, &far), None);
    }

    #[test]
    fn generations_and_epochs_move() {
        let reg = ZoneRegistry::new(100, Duration::from_secs(60));
        let a: Name = "a.test.".parse().unwrap();
        let b: Name = "b.test.".parse().unwrap();
        assert!(matches!(reg.lookup(&a), Known::Unknown));
        reg.learn(&a, Some(&info("a.test.", 5)), reg.zones_epoch());
        reg.learn(&b, None, reg.zones_epoch());
        assert!(matches!(reg.lookup(&a), Known::Zone(z) if z.gen == 5));
        assert!(matches!(reg.lookup(&b), Known::NotAZone));
        // A change to a known zone moves its generation, not the epoch.
        reg.apply_changes(&[info("a.test.", 9)]);
        assert!(matches!(reg.lookup(&a), Known::Zone(z) if z.gen == 9));
        assert!(matches!(reg.lookup(&b), Known::NotAZone));
        // A new zone voids every negative entry.
        reg.apply_changes(&[info("b.test.", 10)]);
        assert!(matches!(reg.lookup(&b), Known::Unknown));
        // What was read before a zone appeared is not kept.
        let c: Name = "c.test.".parse().unwrap();
        let before = reg.zones_epoch();
        reg.apply_changes(&[info("d.test.", 11)]);
        reg.learn(&c, None, before);
        assert!(matches!(reg.lookup(&c), Known::Unknown));
        // A young hole in a zone's range holds the zone back; an old one
        // lets it through (dropping everything).
        let holes = [10];
        let wait = |wait| Narrowing::AroundHoles {
            holes: &holes,
            wait,
            read_from: 9,
        };
        let moved = info("a.test.", 12);
        let waited = reg.apply_logged_changes(
            std::slice::from_ref(&moved),
            &HashMap::new(),
            wait(true),
            &HashSet::new(),
        );
        assert_eq!(waited, Some(9), "the poller is told where the zone waits");
        assert!(matches!(reg.lookup(&a), Known::Zone(z) if z.gen == 9));
        reg.apply_logged_changes(
            std::slice::from_ref(&moved),
            &HashMap::new(),
            wait(false),
            &HashSet::new(),
        );
        assert!(matches!(reg.lookup(&a), Known::Zone(z) if z.gen == 12));
        // A purge gives the zone a generation no database value equals.
        assert!(reg.purge_zone(&a));
        assert!(reg.state(&a).unwrap().gen() < 0);
    }
}
