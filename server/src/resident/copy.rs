//! One resident zone: every node of one stored version, in memory.
//!
//! ```text
//!  ZoneCopy { ver, gen (atomic), data: RwLock<ZoneData> }
//!     serves(zone) ⇔ zone.ver == ver ∧ zone.gen == gen   (else: today's path)
//!  ZoneData: nodes  HashSet<ByName(Arc<Node>)>  — point lookups by owner name,
//!                   the name stored once (in the node)
//!            denials BTreeMap<dk, Arc<Node>>   — NSEC (dk = canonical key) and
//!                   NSEC3 nodes (dk = hash): the greatest key not above the
//!                   one asked, wrapping to the greatest (Store::denial's rule)
//!  load: insert(KeyedNode) for each node of the version's stream
//!  merge generation: replace_name(name, what the store holds now) per listed name
//! ```
//!
//! NSEC3 nodes are only in `denials`: a point lookup of a hashed owner name
//! finds nothing, as in the database (their `_id`s have four parts).

use backend_mongo::resident::KeyedNode;
use backend_mongo::{Name, Node, ZoneInfo};
use std::borrow::Borrow;
use std::collections::{BTreeMap, HashSet};
use std::hash::{Hash, Hasher};
use std::ops::Bound;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, RwLock};

/// A node in the set, found by its owner name.
struct ByName(Arc<Node>);

impl Borrow<Name> for ByName {
    fn borrow(&self) -> &Name {
        &self.0.name
    }
}

impl PartialEq for ByName {
    fn eq(&self, other: &Self) -> bool {
        self.0.name == other.0.name
    }
}

impl Eq for ByName {}

impl Hash for ByName {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.name.hash(state)
    }
}

/// Approximate heap bytes of one node as held here: the node, its name,
/// its RRsets and each rdata, with allocation headers (16 bytes each).
pub fn node_bytes(node: &Node) -> usize {
    let sets = node.rrsets.iter().chain(node.sigs.iter());
    let rdata: usize = sets
        .map(|r| {
            16 + 40 + 16 + r.rdata.len() * 16 + r.rdata.iter().map(|d| d.len() + 16).sum::<usize>()
        })
        .sum();
    // Arc<Node> (16 + 56), name (wire + 16), two Vecs' buffers (16 each),
    // the set's slot (8, at a load factor of about 7/8).
    16 + 56 + node.name.wire_len() + 16 + 32 + 10 + rdata
}

/// Records of a node (rdata items, signatures not counted).
fn node_records(node: &Node) -> usize {
    node.rrsets.iter().map(|r| r.rdata.len()).sum()
}

/// Bytes of one denial map entry besides its key's text: the key's box
/// header and the tree's share per entry.
const DENIAL_SLOT: usize = 16 + 48;

/// The data of one resident zone version.
#[derive(Default)]
pub struct ZoneData {
    nodes: HashSet<ByName>,
    denials: BTreeMap<Box<str>, Arc<Node>>,
    bytes: usize,
    records: usize,
}

impl ZoneData {
    /// Adds one node read from the store (a load, or a name read again
    /// after [`ZoneData::replace_name`] took what was held).
    pub fn insert(&mut self, keyed: KeyedNode) {
        let node = Arc::new(keyed.node);
        self.bytes += node_bytes(&node);
        self.records += node_records(&node);
        if let Some(dk) = keyed.dk {
            self.bytes += DENIAL_SLOT + dk.len();
            let slot = DENIAL_SLOT + dk.len();
            if let Some(old) = self.denials.insert(dk.into_boxed_str(), node.clone()) {
                // The same key held another node: one slot, not two.
                self.bytes = self.bytes.saturating_sub(slot);
                self.forget_unless_in_set(&old);
            }
        }
        if !keyed.nsec3 {
            if let Some(old) = self.nodes.replace(ByName(node)) {
                self.forget(&old.0);
            }
        }
    }

    /// Takes `node`'s weight off the totals.
    fn forget(&mut self, node: &Node) {
        self.bytes = self.bytes.saturating_sub(node_bytes(node));
        self.records = self.records.saturating_sub(node_records(node));
    }

    /// Forgets a node leaving the denial map, unless the set holds it too
    /// (an NSEC node, weighed once).
    fn forget_unless_in_set(&mut self, node: &Arc<Node>) {
        let in_set = self
            .nodes
            .get(&node.name)
            .is_some_and(|n| Arc::ptr_eq(&n.0, node));
        if !in_set {
            self.forget(node);
        }
    }

    /// Replaces whatever is held for `name` (its node, and the denial
    /// records it owns: NSEC under its canonical key, NSEC3 under its first
    /// label) by `now`, what the store holds for it.
    pub fn replace_name(&mut self, name: &Name, now: Vec<KeyedNode>) {
        let first_label = name.to_string().split('.').next().map(str::to_string);
        for key in [Some(name.canonical_key()), first_label].iter().flatten() {
            let owned = self
                .denials
                .get(key.as_str())
                .is_some_and(|n| n.name == *name);
            if owned {
                if let Some(old) = self.denials.remove(key.as_str()) {
                    self.bytes = self.bytes.saturating_sub(DENIAL_SLOT + key.len());
                    self.forget_unless_in_set(&old);
                }
            }
        }
        if let Some(old) = self.nodes.take(name) {
            self.forget(&old.0);
        }
        for keyed in now {
            self.insert(keyed);
        }
    }

    /// The node `name`, if stored.
    pub fn node(&self, name: &Name) -> Option<Arc<Node>> {
        self.nodes.get(name).map(|n| n.0.clone())
    }

    /// The denial node with the greatest key not above `key`; with `wrap`,
    /// the greatest of all when none is that small.
    pub fn denial(&self, key: &str, wrap: bool) -> Option<Arc<Node>> {
        let below = self
            .denials
            .range::<str, _>((Bound::Unbounded, Bound::Included(key)))
            .next_back();
        match below {
            Some((_, node)) => Some(node.clone()),
            None if wrap => self.denials.values().next_back().cloned(),
            None => None,
        }
    }

    /// Approximate heap bytes held.
    pub fn bytes(&self) -> usize {
        self.bytes
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
            .is_some_and(|n| n.rrset(backend_mongo::RType::NSEC3).is_some())
    }
}

/// One zone version held whole, and the generation it is current for.
pub struct ZoneCopy {
    /// The version held.
    pub ver: i64,
    /// The generation whose data it holds; `i64::MIN` when void.
    gen: AtomicI64,
    data: RwLock<ZoneData>,
}

impl ZoneCopy {
    /// A copy of version `ver` at generation `gen` holding `data`.
    pub fn new(ver: i64, gen: i64, data: ZoneData) -> ZoneCopy {
        ZoneCopy {
            ver,
            gen: AtomicI64::new(gen),
            data: RwLock::new(data),
        }
    }

    /// True when the copy holds exactly what `zone` (as the registry serves
    /// it now) says: same version, same generation.
    pub fn serves(&self, zone: &ZoneInfo) -> bool {
        zone.ver == self.ver && zone.gen == self.gen.load(Ordering::Acquire)
    }

    /// The generation the copy is current for.
    pub fn gen(&self) -> i64 {
        self.gen.load(Ordering::Acquire)
    }

    /// Marks the copy current for `gen` (after its names were read again).
    pub fn set_gen(&self, gen: i64) {
        self.gen.store(gen, Ordering::Release);
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
    use backend_mongo::{RRset, RType};

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
    fn denial_takes_the_greatest_key_not_above_and_wraps() {
        let mut data = ZoneData::default();
        data.insert(keyed("b.z.", Some("b"), false, RType::NSEC));
        data.insert(keyed("d.z.", Some("d"), false, RType::NSEC));
        let owner = |k: &str, wrap| data.denial(k, wrap).map(|n| n.name.to_string());
        assert_eq!(owner("c", false).as_deref(), Some("b.z."));
        assert_eq!(owner("d", false).as_deref(), Some("d.z."));
        assert_eq!(owner("a", false), None);
        assert_eq!(owner("a", true).as_deref(), Some("d.z."));
        assert_eq!(data.records(), 2);
    }

    #[test]
    fn nsec3_nodes_are_found_by_hash_only_and_names_are_replaced() {
        let mut data = ZoneData::default();
        data.insert(keyed("www.z.", None, false, RType::A));
        data.insert(keyed("h1.z.", Some("h1"), true, RType::NSEC3));
        let h1: Name = "h1.z.".parse().unwrap();
        assert!(
            data.node(&h1).is_none(),
            "hashed owners are not point-findable"
        );
        assert!(data.denial("h5", false).is_some());
        assert!(data.has_nsec3());
        let before = data.bytes();
        data.replace_name(&h1, Vec::new());
        assert!(data.denial("h5", false).is_none());
        assert!(data.bytes() < before);
        let www: Name = "www.z.".parse().unwrap();
        data.replace_name(&www, vec![keyed("www.z.", None, false, RType::AAAA)]);
        let node = data.node(&www).unwrap();
        assert!(node.rrset(RType::AAAA).is_some());
        data.replace_name(&www, Vec::new());
        assert!(data.node(&www).is_none());
        assert_eq!(data.records(), 0);
    }
}
