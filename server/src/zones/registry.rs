//! The zone registry: which zones are served now, at which generation.
//!
//! ```text
//!  ZoneRegistry: apex ─► ZoneState { info, gen (atomic) }     (positive)
//!                apex ─► not a zone, at zones_epoch           (negative, LRU)
//!  complete (every served zone loaded by the poller's preload): a name not
//!     known as a zone is not one, with no database read (qnames are mostly
//!     unique: one read each would double the round trips of an uncached
//!     query)
//!  apply_logged_changes(changed zones, change records) ─► per zone:
//!     narrowed to names ─► the listener told, the named nodes purged
//!     not narrowed      ─► the listener told, node_epoch += 1
//!     then gen moves (and NameChanges notes what was touched)
//!     a zone never seen ─► zones_epoch += 1 (negatives void), added when
//!                          the registry is complete
//!  purge_zone / purge_all / remove_zones ─► a purge generation (negative)
//! ```
//!
//! Every cached answer remembers the generation of the zone it came from
//! and is served only while that generation is current. Who keeps this
//! fresh is `poll.rs`; who hears its changes, `events.rs`.

use super::events::{NodePurge, NodePurger, SerialWatcher, ZoneEvent, ZoneListener};
use super::name_scope::NameChanges;
use super::narrowing::{zone_change, Narrowing, ZoneChange};
use crate::cache::sharded::{ShardedLru, Weigh};
use dns::{ChangeRecord, Name, ZoneInfo};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

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
    pub(super) zones_epoch: AtomicU64,
    /// Source of generations for purges (negative, so never equal to a
    /// database generation).
    purge_counter: AtomicI64,
    /// Last global change counter seen.
    pub(super) last_seq: AtomicI64,
    /// Since when `meta.seq` is ahead of every zone's `gen`.
    pub(super) stuck_since: std::sync::Mutex<Option<Instant>>,
    /// When the last successful poll finished.
    pub(super) last_poll: RwLock<Option<Instant>>,
    /// Most zones loaded at the first poll (0: none, ask per name).
    pub(super) preload_max: usize,
    /// Every served zone is in `zones`: unknown names are not zones.
    pub(super) complete: AtomicBool,
    /// The first poll is done and the preload has not succeeded yet.
    pub(super) preload_wanted: AtomicBool,
    /// Moved by `purge_all`: a preload that began before it is discarded.
    pub(super) purges: AtomicU64,
    /// Drops nodes from the record cache (see `apply_logged_changes`).
    pub(super) node_purger: std::sync::OnceLock<NodePurger>,
    /// Told of serial changes (see `set_serial_watcher`).
    pub(super) serial_watcher: std::sync::OnceLock<SerialWatcher>,
    /// Hears zone changes before they are served (resident zones).
    pub(super) listener: std::sync::OnceLock<ZoneListener>,
    /// The first generation above `last_seq` that no change record or zone
    /// accounts for yet, and since when.
    pub(super) hole: std::sync::Mutex<Option<(i64, Instant)>>,
    /// The first generation whose change record's zone does not show it
    /// yet, and since when.
    pub(super) unshown: std::sync::Mutex<Option<(i64, Instant)>>,
    /// The highest generation the poller moved past without accounting
    /// for it (given up on, or its records not read): a zone held below it
    /// is never narrowed, a generation of its own may be among those.
    pub(super) given_up: AtomicI64,
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

    /// The node epoch of `apex`, if it is a known zone.
    pub fn node_epoch(&self, apex: &Name) -> Option<u64> {
        self.zones
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(apex)
            .map(|s| s.node_epoch())
    }

    /// Adds zones not known yet (a known zone keeps its newer state).
    pub(super) fn add_zones<'a>(&self, infos: impl Iterator<Item = &'a ZoneInfo>) {
        let mut zones = self.zones.write().unwrap_or_else(|p| p.into_inner());
        for info in infos {
            zones
                .entry(info.apex.clone())
                .or_insert_with(|| ZoneState::new(info));
        }
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
}

#[cfg(test)]
mod tests {
    use super::super::test_info as info;
    use super::*;

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
