//! One resident zone: every node of one stored version, in memory.
//!
//! ```text
//!  ZoneCopy { ver, gen (atomic), behind_since (atomic), pending, data: RwLock<ZoneData> }
//!     serves(zone) ⇔ zone.ver == ver ∧ zone.gen == gen
//!     answers_unchanged(zone, name): behind by merges none of which listed
//!        name (pending.rs): the node is the same, answered from memory
//!     behind_for(): since the zone first changed past the copy (the keeper
//!        marks it when it hears the change, clears it once caught up); a
//!        copy behind by at most --resident-lag-ms still answers, as a
//!        view of its own version and generation (keeper.rs), else today's path
//!  ZoneData: arena   NodeArena — every node as wire bytes in large chunks
//!            names   NameIndex — point lookups by owner name (the name is
//!                    stored once, in the arena)
//!            denials BTreeMap<dk, Handle> — NSEC (dk = canonical key) and
//!                    NSEC3 nodes (dk = hash): the greatest key not above the
//!                    one asked, wrapping to the greatest (Store::denial's rule)
//!  load: insert(KeyedNode) for each node of the version's stream (a node
//!     the encoding cannot hold: Unencodable, the zone left to the database)
//!  merge generation: replace_name(name, what the store holds now) per listed name
//!     (the old bytes become garbage; the arena is rebuilt when garbage
//!     passes half of it)
//!  snapshot(): every node, in canonical order, copied out (a transfer)
//!  lookups decode the node they find into a fresh Node, except the
//!     shallowest (the apex): kept decoded, since every walk starts there
//! ```
//!
//! NSEC3 nodes are only in `denials`: a point lookup of a hashed owner name
//! finds nothing, as in the database (their `_id`s have four parts).

use super::arena::{Handle, NameIndex, NodeArena};
use super::node_codec::{self, Unencodable};
use super::pending::PendingNames;
use super::snapshot::NodeSnapshot;
use backend_mongo::resident::KeyedNode;
use dns::{Name, Node, ZoneInfo};
use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant};

/// Bytes of one denial map entry besides its key's text: the key's box
/// header and the tree's share per entry.
const DENIAL_SLOT: usize = 16 + 40;

/// Garbage below this is never worth a rebuild.
const REBUILD_FLOOR: usize = 1 << 20;

/// The data of one resident zone version.
#[derive(Default)]
pub struct ZoneData {
    pub(super) arena: NodeArena,
    pub(super) names: NameIndex,
    denials: BTreeMap<Box<str>, Handle>,
    /// Bytes of the denial keys' text.
    key_bytes: usize,
    records: usize,
    /// The shallowest node held (the apex, once loaded), kept decoded:
    /// every name walk starts there.
    pub(super) top: Option<(Handle, Arc<Node>)>,
}

impl ZoneData {
    /// Adds one node read from the store (a load, or a name read again
    /// after [`ZoneData::replace_name`] took what was held).
    /// A node the encoding cannot hold is refused, nothing changed: the
    /// caller leaves the zone to the database.
    pub fn insert(&mut self, keyed: KeyedNode) -> Result<(), Unencodable> {
        let h = self.arena.push(&keyed.node)?;
        self.records += node_codec::records(self.arena.get(h));
        if let Some(dk) = keyed.dk {
            let len = dk.len();
            match self.denials.insert(dk.into_boxed_str(), h) {
                // The same key held another node: its text counted once.
                Some(old) => self.release_unless_named(old),
                None => self.key_bytes += len,
            }
        }
        if !keyed.nsec3 {
            if let Some(old) = self.names.insert(&self.arena, h) {
                self.release_unless_denial(old);
            }
            self.keep_if_top(h, keyed.node);
        }
        self.rebuild_if_wasteful();
        Ok(())
    }

    /// Keeps `node` (at `h`) decoded when it is shallower than the top node
    /// (a replaced top was released first, so its successor is kept too).
    fn keep_if_top(&mut self, h: Handle, node: Node) {
        let shallower = self
            .top
            .as_ref()
            .is_none_or(|(_, top)| node.name.label_count() < top.name.label_count());
        if shallower {
            self.top = Some((h, Arc::new(node)));
        }
    }

    /// Marks `h` unreachable unless the name index still holds it.
    fn release_unless_named(&mut self, h: Handle) {
        let name = Name::from_wire(node_codec::owner(self.arena.get(h))).ok();
        if name.and_then(|n| self.names.get(&self.arena, &n)) != Some(h) {
            self.release(h);
        }
    }

    /// Marks `h` unreachable unless a denial entry still holds it (an NSEC
    /// node is in both).
    fn release_unless_denial(&mut self, h: Handle) {
        let key = Name::from_wire(node_codec::owner(self.arena.get(h)))
            .map(|n| n.canonical_key())
            .ok();
        let held = key.is_some_and(|k| self.denials.get(k.as_str()) == Some(&h));
        if !held {
            self.release(h);
        }
    }

    fn release(&mut self, h: Handle) {
        if self.top.as_ref().is_some_and(|(top, _)| *top == h) {
            self.top = None;
        }
        self.records = self
            .records
            .saturating_sub(node_codec::records(self.arena.get(h)));
        self.arena.release(h);
    }

    /// Replaces whatever is held for `name` (its node, and the denial
    /// records it owns: NSEC under its canonical key, NSEC3 under its first
    /// label) by `now`, what the store holds for it. A node of `now` the
    /// encoding cannot hold refuses the whole replacement, nothing changed.
    pub fn replace_name(&mut self, name: &Name, now: Vec<KeyedNode>) -> Result<(), Unencodable> {
        if !now.iter().all(|k| node_codec::fits(&k.node)) {
            return Err(Unencodable);
        }
        let first_label = name.to_string().split('.').next().map(str::to_string);
        let mut gone = Vec::new();
        for key in [Some(name.canonical_key()), first_label].iter().flatten() {
            let owned = self
                .denials
                .get(key.as_str())
                .is_some_and(|h| node_codec::owner(self.arena.get(*h)) == name.as_wire());
            if owned {
                if let Some(old) = self.denials.remove(key.as_str()) {
                    self.key_bytes = self.key_bytes.saturating_sub(key.len());
                    gone.push(old);
                }
            }
        }
        gone.extend(self.names.remove(&self.arena, name));
        gone.sort();
        gone.dedup();
        for h in gone {
            self.release(h);
        }
        for keyed in now {
            self.insert(keyed)?;
        }
        Ok(())
    }

    /// Rebuilds the arena from what is reachable when replaced nodes fill
    /// more than half of it.
    fn rebuild_if_wasteful(&mut self) {
        let garbage = self.arena.garbage();
        if garbage < REBUILD_FLOOR || garbage * 2 < self.arena.used() {
            return;
        }
        let mut arena = NodeArena::default();
        let mut names = NameIndex::default();
        let mut moved = HashMap::new();
        for h in self.names.handles() {
            let new = arena.push_encoded(self.arena.get(h));
            moved.insert(h, new);
            names.insert(&arena, new);
        }
        let denials = std::mem::take(&mut self.denials)
            .into_iter()
            .map(|(k, h)| {
                let new = *moved
                    .entry(h)
                    .or_insert_with(|| arena.push_encoded(self.arena.get(h)));
                (k, new)
            })
            .collect();
        // Handles changed: the top node is found again by its name.
        let top = self.top.take().map(|(_, node)| node);
        self.arena = arena;
        self.names = names;
        self.denials = denials;
        if let Some(node) = top {
            if let Some(h) = self.names.get(&self.arena, &node.name) {
                self.top = Some((h, node));
            }
        }
    }

    /// The node `name`, if stored.
    pub fn node(&self, name: &Name) -> Option<Arc<Node>> {
        let h = self.names.get(&self.arena, name)?;
        match &self.top {
            Some((top, node)) if *top == h => Some(node.clone()),
            _ => Some(Arc::new(self.arena.node(h))),
        }
    }

    /// The denial node with the greatest key not above `key`; with `wrap`,
    /// the greatest of all when none is that small.
    pub fn denial(&self, key: &str, wrap: bool) -> Option<Arc<Node>> {
        let below = self
            .denials
            .range::<str, _>((Bound::Unbounded, Bound::Included(key)))
            .next_back();
        let h = match below {
            Some((_, h)) => *h,
            None if wrap => *self.denials.values().next_back()?,
            None => return None,
        };
        Some(Arc::new(self.arena.node(h)))
    }

    /// Every node held, once, in canonical order, copied out for a zone
    /// transfer (snapshot.rs).
    pub fn snapshot(&self) -> NodeSnapshot {
        let mut handles: Vec<Handle> = self
            .names
            .handles()
            .chain(self.denials.values().copied())
            .collect();
        handles.sort_unstable();
        handles.dedup();
        let mut ordered: Vec<(String, Handle)> = handles
            .into_iter()
            .map(|h| (owner_key(self.arena.get(h)), h))
            .collect();
        ordered.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let bytes = self.arena.used() - self.arena.garbage();
        let mut out = NodeSnapshot::with_capacity(ordered.len(), bytes);
        for (_, h) in ordered {
            out.push(self.arena.get(h));
        }
        out
    }

    /// Approximate heap bytes held: the arena's chunks, the name index,
    /// and the denial map with its keys.
    pub fn bytes(&self) -> usize {
        self.arena.allocated()
            + self.names.allocated()
            + self.denials.len() * DENIAL_SLOT
            + self.key_bytes
    }

    /// Records held (rdata items).
    pub fn records(&self) -> usize {
        self.records
    }

    /// True when the zone has NSEC3 nodes (a name read again may own one).
    pub fn has_nsec3(&self) -> bool {
        self.denials
            .values()
            .next()
            .is_some_and(|h| self.arena.node(*h).rrset(dns::RType::NSEC3).is_some())
    }
}

/// The canonical key of an encoded node's owner (the order of a transfer).
fn owner_key(encoded: &[u8]) -> String {
    Name::from_wire(node_codec::owner(encoded))
        .map(|n| n.canonical_key())
        .unwrap_or_default()
}

/// One zone version held whole, and the generation it is current for.
pub struct ZoneCopy {
    /// The version held.
    pub ver: i64,
    /// The generation whose data it holds; `i64::MIN` when void.
    gen: AtomicI64,
    /// When the zone first changed past this copy; `None` while current.
    /// Read only when a question finds the copy not current.
    behind_since: Mutex<Option<Instant>>,
    /// Merges heard past `gen` and the names they list.
    pending: Mutex<PendingNames>,
    data: RwLock<ZoneData>,
}

impl ZoneCopy {
    /// A copy of version `ver` at generation `gen` holding `data`.
    pub fn new(ver: i64, gen: i64, data: ZoneData) -> ZoneCopy {
        ZoneCopy {
            ver,
            gen: AtomicI64::new(gen),
            behind_since: Mutex::new(None),
            pending: Mutex::new(PendingNames::new(gen)),
            data: RwLock::new(data),
        }
    }

    /// Notes that the zone changed past the copy now, unless it already
    /// was behind (the first change not applied counts).
    pub fn mark_behind(&self) {
        self.mark_behind_at(Instant::now());
    }

    /// Notes that the zone changed past the copy at `at`, unless it
    /// already was behind.
    pub fn mark_behind_at(&self, at: Instant) {
        self.behind().get_or_insert(at);
    }

    /// Notes that the copy holds every change heard (current again).
    pub fn mark_caught_up(&self) {
        *self.behind() = None;
    }

    /// How long the zone has been ahead of the copy; `None` while current.
    pub fn behind_for(&self) -> Option<Duration> {
        self.behind().map(|since| since.elapsed())
    }

    fn behind(&self) -> MutexGuard<'_, Option<Instant>> {
        self.behind_since.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The copy as a zone to answer from while it is behind by at most
    /// `lag`: its own version and generation, the rest of `zone`. `None`
    /// when void, current (answer from `zone` itself), or behind for
    /// longer.
    pub fn lagging_view(&self, zone: &ZoneInfo, lag: Duration) -> Option<ZoneInfo> {
        let gen = self.gen();
        if gen == i64::MIN || (zone.ver == self.ver && zone.gen == gen) {
            return None;
        }
        (self.behind_for()? <= lag).then(|| ZoneInfo {
            apex: zone.apex.clone(),
            ver: self.ver,
            gen,
            serial: zone.serial,
        })
    }

    /// True when the copy holds exactly what `zone` (as the registry serves
    /// it now) says: same version, same generation.
    pub fn serves(&self, zone: &ZoneInfo) -> bool {
        zone.ver == self.ver && zone.gen == self.gen.load(Ordering::Acquire)
    }

    /// True when the copy, behind `zone` (same version) only by merges
    /// heard that none listed `name`, holds the node `name` as it is at
    /// `zone`'s generation (pending.rs).
    pub fn answers_unchanged(&self, zone: &ZoneInfo, name: &Name) -> bool {
        let gen = self.gen();
        zone.ver == self.ver
            && gen != i64::MIN
            && gen < zone.gen
            && self.pending().unchanged(zone.gen, name)
    }

    /// A merge of this version from `from` to `to` listing `names` was
    /// heard (before the registry serves `to`).
    pub fn heard_merge(&self, from: i64, to: i64, names: &[Name]) {
        self.pending().heard(from, to, names);
    }

    fn pending(&self) -> MutexGuard<'_, PendingNames> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The generation the copy is current for.
    pub fn gen(&self) -> i64 {
        self.gen.load(Ordering::Acquire)
    }

    /// Marks the copy current for `gen` (after its names were read again).
    pub fn set_gen(&self, gen: i64) {
        self.gen.store(gen, Ordering::Release);
        self.pending().applied(gen);
    }

    /// Never serves again (a purge).
    pub fn void(&self) {
        self.gen.store(i64::MIN, Ordering::Release);
    }

    /// Reads the data.
    pub fn read(&self) -> std::sync::RwLockReadGuard<'_, ZoneData> {
        self.data.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Changes the data (name updates).
    pub fn write(&self) -> std::sync::RwLockWriteGuard<'_, ZoneData> {
        self.data.write().unwrap_or_else(|p| p.into_inner())
    }

    /// The zone as the store is asked about it (version held).
    pub fn zone_info(&self, apex: &Name) -> ZoneInfo {
        ZoneInfo {
            apex: apex.clone(),
            ver: self.ver,
            gen: self.gen(),
            serial: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dns::{RRset, RType};

    fn keyed(name: &str, dk: Option<&str>, nsec3: bool, rtype: RType) -> KeyedNode {
        KeyedNode {
            node: Node {
                name: name.parse().unwrap(),
                rrsets: vec![Arc::new(RRset {
                    rtype,
                    ttl: 60,
                    rdata: vec![vec![1, 2, 3, 4].into()],
                })],
                sigs: Vec::new(),
            },
            dk: dk.map(str::to_string),
            nsec3,
        }
    }

    #[test]
    fn a_copy_catching_up_answers_names_no_merge_listed() {
        let copy = ZoneCopy::new(1, 10, ZoneData::default());
        let zone = |ver, gen| ZoneInfo {
            apex: "example.".parse().unwrap(),
            ver,
            gen,
            serial: 0,
        };
        let a: Name = "a.example.".parse().unwrap();
        let b: Name = "b.example.".parse().unwrap();
        copy.heard_merge(10, 12, std::slice::from_ref(&a));
        assert!(copy.answers_unchanged(&zone(1, 12), &b));
        assert!(!copy.answers_unchanged(&zone(1, 12), &a), "listed");
        assert!(!copy.answers_unchanged(&zone(1, 13), &b), "not heard");
        assert!(!copy.answers_unchanged(&zone(2, 12), &b), "another version");
        copy.set_gen(12);
        assert!(copy.serves(&zone(1, 12)));
        copy.heard_merge(12, 14, std::slice::from_ref(&b));
        assert!(copy.answers_unchanged(&zone(1, 14), &a), "applied");
        assert!(!copy.answers_unchanged(&zone(1, 14), &b));
        copy.void();
        assert!(!copy.answers_unchanged(&zone(1, 14), &a), "void");
    }

    #[test]
    fn a_snapshot_holds_every_node_once_in_canonical_order() {
        let mut data = ZoneData::default();
        let z: Name = "z.".parse().unwrap();
        data.insert(keyed("z.", Some(&z.canonical_key()), false, RType::SOA))
            .unwrap();
        for name in ["b.z.", "A.z.", "c.b.z."] {
            let key = name.parse::<Name>().unwrap().canonical_key();
            data.insert(keyed(name, Some(&key), false, RType::NSEC))
                .unwrap();
        }
        // NSEC3 nodes are only in the denial map, keyed by their hash.
        data.insert(keyed(
            "0p9mhaveqvm6t7vbl5lop2u3t2rp3tom.z.",
            Some("0p9m"),
            true,
            RType::NSEC3,
        ))
        .unwrap();
        // A name replaced: only its new node is held.
        data.replace_name(
            &"b.z.".parse().unwrap(),
            vec![keyed(
                "b.z.",
                Some(&"b.z.".parse::<Name>().unwrap().canonical_key()),
                false,
                RType::TXT,
            )],
        )
        .unwrap();
        let snapshot = data.snapshot();
        assert_eq!(snapshot.len(), 5);
        let nodes: Vec<Node> = futures::executor::block_on(futures::StreamExt::collect::<Vec<_>>(
            snapshot.into_stream(),
        ))
        .into_iter()
        .map(Result::unwrap)
        .collect();
        let owners: Vec<String> = nodes.iter().map(|n| n.name.to_string()).collect();
        let mut keys: Vec<String> = nodes.iter().map(|n| n.name.canonical_key()).collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "{owners:?}");
        keys.dedup();
        assert_eq!(keys.len(), 5);
        assert_eq!(owners[0], "z.");
        let b = nodes.iter().find(|n| n.name.to_string() == "b.z.").unwrap();
        assert_eq!(b.rrsets[0].rtype, RType::TXT, "the replaced node");
        assert!(owners.contains(&"0p9mhaveqvm6t7vbl5lop2u3t2rp3tom.z.".to_string()));
    }

    #[test]
    fn denial_takes_the_greatest_key_not_above_and_wraps() {
        let mut data = ZoneData::default();
        data.insert(keyed("b.z.", Some("b"), false, RType::NSEC))
            .unwrap();
        data.insert(keyed("d.z.", Some("d"), false, RType::NSEC))
            .unwrap();
        let owner = |k: &str, wrap| data.denial(k, wrap).map(|n| n.name.to_string());
        assert_eq!(owner("c", false).as_deref(), Some("b.z."));
        assert_eq!(owner("d", false).as_deref(), Some("d.z."));
        assert_eq!(owner("a", false), None);
        assert_eq!(owner("a", true).as_deref(), Some("d.z."));
        assert_eq!(data.records(), 2);
    }

    #[test]
    fn a_copy_behind_answers_as_its_own_generation_within_the_lag_only() {
        let copy = ZoneCopy::new(7, 10, ZoneData::default());
        let apex: Name = "z.".parse().unwrap();
        let served = |ver, gen| ZoneInfo {
            apex: apex.clone(),
            ver,
            gen,
            serial: 3,
        };
        let long = Duration::from_secs(3600);
        assert!(copy.lagging_view(&served(7, 10), long).is_none(), "current");
        assert!(
            copy.lagging_view(&served(7, 11), long).is_none(),
            "a change not heard by the keeper: never a view"
        );
        copy.mark_behind();
        let view = copy.lagging_view(&served(7, 11), long).unwrap();
        assert_eq!((view.ver, view.gen, view.serial), (7, 10, 3));
        assert!(copy.serves(&view), "the copy answers its own view");
        let view = copy.lagging_view(&served(8, 12), long).unwrap();
        assert_eq!((view.ver, view.gen), (7, 10), "a new version too");
        std::thread::sleep(Duration::from_millis(5));
        assert!(
            copy.lagging_view(&served(7, 11), Duration::from_millis(1))
                .is_none(),
            "past the lag: today's path"
        );
        copy.mark_behind();
        assert!(
            copy.behind_for().unwrap() >= Duration::from_millis(5),
            "the first change not applied counts"
        );
        copy.set_gen(11);
        copy.mark_caught_up();
        assert!(copy.behind_for().is_none());
        assert!(copy.lagging_view(&served(7, 11), long).is_none());
        copy.mark_behind_at(Instant::now() - Duration::from_secs(10));
        assert!(copy
            .lagging_view(&served(7, 12), Duration::from_secs(5))
            .is_none());
        copy.void();
        assert!(copy.lagging_view(&served(7, 12), long).is_none(), "void");
    }

    #[test]
    fn the_apex_is_served_decoded_and_follows_its_replacements() {
        let mut data = ZoneData::default();
        data.insert(keyed("a.z.", None, false, RType::A)).unwrap();
        data.insert(keyed("z.", None, false, RType::SOA)).unwrap();
        data.insert(keyed("b.a.z.", None, false, RType::A)).unwrap();
        let apex: Name = "z.".parse().unwrap();
        let first = data.node(&apex).unwrap();
        assert!(
            Arc::ptr_eq(&first, &data.node(&apex).unwrap()),
            "kept decoded"
        );
        let below = data.node(&"a.z.".parse().unwrap()).unwrap();
        assert_eq!(below.name.to_string(), "a.z.");
        let mut now = keyed("z.", None, false, RType::SOA);
        now.node
            .rrsets
            .push(Arc::new(RRset::of(RType::NS, 60, &[&[0]])));
        data.replace_name(&apex, vec![now]).unwrap();
        let after = data.node(&apex).unwrap();
        assert!(
            after.rrset(RType::NS).is_some(),
            "the replacement is served"
        );
        assert!(Arc::ptr_eq(&after, &data.node(&apex).unwrap()));
        data.replace_name(&apex, Vec::new()).unwrap();
        assert!(data.node(&apex).is_none(), "a removed apex is gone");
    }

    #[test]
    fn replaced_names_leave_garbage_that_a_rebuild_drops() {
        let mut data = ZoneData::default();
        let name = |i: u32| format!("n{i:05}.z.");
        for i in 0..20_000 {
            let key = format!("n{i:05}");
            data.insert(keyed(&name(i), Some(&key), false, RType::NSEC))
                .unwrap();
        }
        let loaded = data.bytes();
        for round in 0..6 {
            for i in 0..20_000 {
                let n: Name = name(i).parse().unwrap();
                let key = format!("n{i:05}");
                let rtype = if round % 2 == 0 {
                    RType::NSEC
                } else {
                    RType::TXT
                };
                let mut k = keyed(&name(i), Some(&key), false, RType::NSEC);
                k.node
                    .rrsets
                    .push(Arc::new(RRset::of(rtype, 60, &[&[round as u8]])));
                data.replace_name(&n, vec![k]).unwrap();
            }
        }
        assert!(
            data.arena.garbage() * 2 < data.arena.used().max(REBUILD_FLOOR * 2),
            "garbage was dropped: {} of {} arena bytes",
            data.arena.garbage(),
            data.arena.used()
        );
        assert!(
            data.bytes() < loaded * 3,
            "{} bytes after six rounds of replacing, {loaded} loaded",
            data.bytes()
        );
        assert_eq!(data.records(), 40_000);
        let n: Name = name(12_345).parse().unwrap();
        let node = data.node(&n).expect("still found");
        assert_eq!(node.rrset(RType::TXT).unwrap().rdata[0][0], 5);
        let below = data.denial("n12345a", false).expect("denial found");
        assert_eq!(below.name, n);
        let top = data.top.as_ref().map(|(h, node)| (*h, node.name.clone()));
        let (h, top_name) = top.expect("a top node");
        assert_eq!(
            data.names.get(&data.arena, &top_name),
            Some(h),
            "top's handle moved with it"
        );
    }

    #[test]
    fn nsec3_nodes_are_found_by_hash_only_and_names_are_replaced() {
        let mut data = ZoneData::default();
        data.insert(keyed("www.z.", None, false, RType::A)).unwrap();
        data.insert(keyed("h1.z.", Some("h1"), true, RType::NSEC3))
            .unwrap();
        let h1: Name = "h1.z.".parse().unwrap();
        assert!(
            data.node(&h1).is_none(),
            "hashed owners are not point-findable"
        );
        assert!(data.denial("h5", false).is_some());
        assert!(data.has_nsec3());
        let before = data.bytes();
        data.replace_name(&h1, Vec::new()).unwrap();
        assert!(data.denial("h5", false).is_none());
        assert!(data.bytes() < before);
        let www: Name = "www.z.".parse().unwrap();
        data.replace_name(&www, vec![keyed("www.z.", None, false, RType::AAAA)])
            .unwrap();
        let node = data.node(&www).unwrap();
        assert!(node.rrset(RType::AAAA).is_some());
        data.replace_name(&www, Vec::new()).unwrap();
        assert!(data.node(&www).is_none());
        assert_eq!(data.records(), 0);
    }
}
