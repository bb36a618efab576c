//! The denial cache: NSEC/NSEC3 records already read, used as intervals.
//!
//! ```text
//!  denial(zone, key, wrap) ─► zone's chain map (apex ─► ver, node epoch, links)
//!        greatest cached dk ≤ key ─► its link covers [dk, next)?  ─► hit
//!        (the last link, next ≤ dk, covers [dk, ∞) and [−∞, next))
//!        otherwise a miss: one database read (see RecordCache::denial),
//!        whose record is kept as the link [its dk, its next key)
//!  A logged change, a purge or a new version/epoch voids the zone's links.
//! ```
//!
//! The database answers a denial lookup with the NSEC/NSEC3 node whose
//! denial key `dk` is the greatest not above the asked key (with `wrap`, the
//! greatest of all when none is). A record's own "next" field names the
//! next key of the chain, so the database gives that same record for every
//! key in `[dk, next)`: one read answers a whole interval, and random
//! NXDOMAIN names cost one read per interval instead of one per name. Keys
//! are strings compared byte-wise, as the database compares them: the
//! canonical key `ck` for NSEC (so the next name is turned into its `ck`)
//! and lower-case base32hex for NSEC3 (the next hash is encoded the same
//! way). A record read back is kept only if the key it was read for lies in
//! its interval, i.e. only if its chain agrees with what the database said.

use dns::encoding::base32hex;
use dns::{Name, Node, RType};
use std::collections::{BTreeMap, HashMap};
use std::ops::Bound::{Included, Unbounded};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The interval `[dk, next)` a denial record answers for: its own denial
/// key and the key of the next record of its chain. `next ≤ dk` marks the
/// last record, which wraps around. `None` for a node with neither an NSEC
/// nor an NSEC3 record (or one we cannot read).
pub fn interval_of(node: &Node) -> Option<(String, String)> {
    if let Some(set) = node.rrset(RType::NSEC3) {
        // hash alg, flags, iterations (2), salt length, salt, hash length, next hash
        let rd = set.rdata.first()?;
        let salt_len = *rd.get(4)? as usize;
        let hash_len = *rd.get(5 + salt_len)? as usize;
        let next = rd.get(6 + salt_len..6 + salt_len + hash_len)?;
        let own = std::str::from_utf8(node.name.labels().next()?).ok()?;
        let own = own.to_ascii_lowercase();
        return (!own.is_empty()).then(|| (own, base32hex(next)));
    }
    let set = node.rrset(RType::NSEC)?;
    let (next, _) = Name::from_wire_prefix(set.rdata.first()?).ok()?;
    Some((node.name.canonical_key(), next.canonical_key()))
}

/// True when the database, asked for `key` (with `wrap`), could have given
/// the record of interval `[dk, next)`: the key lies in that interval.
pub fn interval_answers(dk: &str, next: &str, key: &str, wrap: bool) -> bool {
    if next > dk {
        dk <= key && key < next
    } else {
        // The last record: the greatest dk; the first key of the chain is `next`.
        dk <= key || (wrap && key < next)
    }
}

/// One cached record and the interval it answers for.
struct Link {
    node: Arc<Node>,
    next: String,
    expires: Instant,
    weight: usize,
}

/// The links of one zone, all read at one version and node epoch.
struct ZoneLinks {
    ver: i64,
    epoch: u64,
    links: BTreeMap<String, Link>,
    bytes: usize,
    /// The cache's use tick when last looked up or filled (for eviction).
    used: u64,
}

/// The zone version and node epoch a lookup or a read belongs to.
#[derive(Clone, Copy, Debug)]
pub struct At<'a> {
    /// The zone's apex.
    pub apex: &'a Name,
    /// The version read.
    pub ver: i64,
    /// The zone's node epoch (see `ZoneRegistry::node_epoch`).
    pub epoch: u64,
}

/// What a lookup found.
#[derive(Debug, PartialEq)]
pub enum Cached {
    /// The database would answer this (`None`: no record, `wrap` off).
    Hit(Option<Arc<Node>>),
    /// Not known: read the database.
    Miss,
}

#[derive(Default)]
struct Inner {
    zones: HashMap<Name, ZoneLinks>,
    bytes: usize,
    links: usize,
    tick: u64,
}

/// NSEC/NSEC3 records per zone as intervals, bounded by bytes and records.
pub struct DenialCache {
    inner: Mutex<Inner>,
    max_bytes: usize,
    max_links: usize,
    /// Moves whenever links are voided: a read that began before may have
    /// seen the old chain, so its record is not kept.
    voids: AtomicU64,
    evictions: AtomicU64,
}

/// Approximate bytes held by a cached node (shared with node entries).
pub fn node_weight(node: &Node) -> usize {
    node.rrsets
        .iter()
        .chain(node.sigs.iter())
        .map(|r| 48 + r.rdata.iter().map(|d| d.len() + 24).sum::<usize>())
        .sum::<usize>()
        + node.name.wire_len()
}

impl DenialCache {
    /// A cache holding at most `max_links` records and `max_bytes` bytes.
    pub fn new(max_links: usize, max_bytes: usize) -> Self {
        DenialCache {
            inner: Mutex::new(Inner::default()),
            max_bytes,
            max_links,
            voids: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The void counter now; pass it to [`DenialCache::insert`] after a read.
    pub fn voids(&self) -> u64 {
        self.voids.load(Ordering::Acquire)
    }

    /// Records held.
    pub fn len(&self) -> usize {
        self.lock().links
    }

    /// True when no record is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Approximate bytes held.
    pub fn bytes(&self) -> usize {
        self.lock().bytes
    }

    /// Records evicted to stay within bounds.
    pub fn evictions(&self) -> u64 {
        self.evictions.load(Ordering::Relaxed)
    }

    /// What the database would answer for `key` in the zone version `at`,
    /// if a link of its node epoch covers it and expired no earlier than
    /// `grace` before `now`.
    pub fn lookup(
        &self,
        at: At<'_>,
        key: &str,
        wrap: bool,
        now: Instant,
        grace: Duration,
    ) -> Cached {
        let mut inner = self.lock();
        inner.tick += 1;
        let tick = inner.tick;
        let Some(zone) = inner.zones.get_mut(at.apex) else {
            return Cached::Miss;
        };
        if zone.ver != at.ver || zone.epoch != at.epoch {
            return Cached::Miss;
        }
        zone.used = tick;
        let fresh = |link: &Link| link.expires + grace > now;
        let (dk, link, below_all) = match zone
            .links
            .range::<str, _>((Unbounded, Included(key)))
            .next_back()
        {
            Some((dk, link)) => (dk, link, false),
            // Below every cached key: only the last record (wrapping) can say.
            None => match zone.links.last_key_value() {
                Some((dk, link)) => (dk, link, true),
                None => return Cached::Miss,
            },
        };
        if !fresh(link) {
            return Cached::Miss;
        }
        if below_all {
            // The last record wraps to the chain's first key: nothing lies
            // at or below a key under that one.
            let wraps = link.next.as_str() <= dk.as_str() && key < link.next.as_str();
            return match (wraps, wrap) {
                (false, _) => Cached::Miss,
                (true, false) => Cached::Hit(None),
                (true, true) => Cached::Hit(Some(link.node.clone())),
            };
        }
        if !interval_answers(dk, &link.next, key, wrap) {
            return Cached::Miss;
        }
        Cached::Hit(Some(link.node.clone()))
    }

    /// Keeps `node`, read for `key` (with `wrap`) from the zone version
    /// `at`, until `expires`. Not kept when links were voided since `voids`
    /// was read, or when the record's interval does not hold `key` (its
    /// chain disagrees with the database).
    pub fn insert(
        &self,
        at: At<'_>,
        voids: u64,
        key: &str,
        wrap: bool,
        node: Arc<Node>,
        expires: Instant,
    ) -> bool {
        let Some((dk, next)) = interval_of(&node) else {
            return false;
        };
        if !interval_answers(&dk, &next, key, wrap) {
            return false;
        }
        let weight = 160 + node_weight(&node) + dk.len() * 2 + next.len();
        let At { apex, ver, epoch } = at;
        let mut inner = self.lock();
        // Checked under the lock: a void takes the lock too.
        if self.voids.load(Ordering::Acquire) != voids {
            return false;
        }
        inner.tick += 1;
        let tick = inner.tick;
        let current = inner
            .zones
            .get(apex)
            .map(|z| (z.ver, z.epoch, z.links.len(), z.bytes));
        match current {
            Some((v, e, _, _)) if v == ver && e == epoch => {}
            // A read that began before the epoch moved: the newer links stay.
            Some((v, e, _, _)) if v == ver && e > epoch => return false,
            other => {
                if let Some((_, _, n, b)) = other {
                    inner.links -= n;
                    inner.bytes -= b;
                }
                inner.zones.insert(
                    apex.clone(),
                    ZoneLinks {
                        ver,
                        epoch,
                        links: BTreeMap::new(),
                        bytes: 0,
                        used: tick,
                    },
                );
            }
        }
        self.make_room(&mut inner, apex, weight);
        let Inner {
            zones,
            bytes,
            links,
            ..
        } = &mut *inner;
        let Some(zone) = zones.get_mut(apex) else {
            return false;
        };
        zone.used = tick;
        let link = Link {
            node,
            next,
            expires,
            weight,
        };
        if let Some(old) = zone.links.insert(dk, link) {
            zone.bytes -= old.weight;
            *bytes -= old.weight;
            *links -= 1;
        }
        zone.bytes += weight;
        *bytes += weight;
        *links += 1;
        true
    }

    /// Evicts whole zones, least recently used first (and `apex`'s own
    /// links last), until `weight` more bytes and one more record fit.
    fn make_room(&self, inner: &mut Inner, apex: &Name, weight: usize) {
        while inner.bytes + weight > self.max_bytes || inner.links + 1 > self.max_links {
            let victim = inner
                .zones
                .iter()
                .filter(|(a, _)| *a != apex)
                .min_by_key(|(_, z)| z.used)
                .map(|(a, _)| a.clone());
            let victim = match victim {
                Some(v) => v,
                None if inner.zones.get(apex).is_some_and(|z| !z.links.is_empty()) => apex.clone(),
                None => return,
            };
            let Some(zone) = inner.zones.get_mut(&victim) else {
                return;
            };
            let dropped = std::mem::take(&mut zone.links);
            inner.bytes -= zone.bytes;
            inner.links -= dropped.len();
            zone.bytes = 0;
            self.evictions
                .fetch_add(dropped.len() as u64, Ordering::Relaxed);
            if victim != *apex {
                inner.zones.remove(&victim);
            }
        }
    }

    /// Voids every link of `apex` (a logged change: the names it lists do
    /// not say which records' intervals moved).
    pub fn void_zone(&self, apex: &Name) {
        let mut inner = self.lock();
        self.voids.fetch_add(1, Ordering::AcqRel);
        if let Some(zone) = inner.zones.remove(apex) {
            inner.links -= zone.links.len();
            inner.bytes -= zone.bytes;
        }
    }

    /// Voids everything; returns how many records were held.
    pub fn void_all(&self) -> usize {
        let mut inner = self.lock();
        self.voids.fetch_add(1, Ordering::AcqRel);
        let held = inner.links;
        inner.zones.clear();
        inner.links = 0;
        inner.bytes = 0;
        held
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dns::dnssec::nsec3_hash;
    use dns::RRset;

    fn name(s: &str) -> Name {
        s.parse().unwrap()
    }

    /// A node owning an NSEC record pointing at `next`.
    fn nsec(owner: &str, next: &str) -> Arc<Node> {
        let mut rd = name(next).as_wire().to_vec();
        rd.extend_from_slice(&[0, 1, 0x40]); // bitmap: A
        Arc::new(Node {
            name: name(owner),
            rrsets: vec![Arc::new(RRset {
                rtype: RType::NSEC,
                ttl: 300,
                rdata: vec![rd.into()],
            })],
            sigs: Vec::new(),
        })
    }

    /// A node owning an NSEC3 record with hash owner `own` and next hash `next`.
    fn nsec3(own: &[u8; 20], next: &[u8; 20]) -> Arc<Node> {
        let mut rd = vec![1, 0, 0, 1, 2, 0xab, 0xcd, 20];
        rd.extend_from_slice(next);
        Arc::new(Node {
            name: name(&format!("{}.z.test.", base32hex(own))),
            rrsets: vec![Arc::new(RRset {
                rtype: RType::NSEC3,
                ttl: 300,
                rdata: vec![rd.into()],
            })],
            sigs: Vec::new(),
        })
    }

    fn at(apex: &Name, ver: i64, epoch: u64) -> At<'_> {
        At { apex, ver, epoch }
    }

    fn later() -> Instant {
        Instant::now() + Duration::from_secs(60)
    }

    fn ck(s: &str) -> String {
        name(s).canonical_key()
    }

    /// The chain of an NSEC zone: apex ─► a ─► m.a ─► z ─► apex.
    fn nsec_chain() -> Vec<Arc<Node>> {
        vec![
            nsec("z.test.", "a.z.test."),
            nsec("a.z.test.", "m.a.z.test."),
            nsec("m.a.z.test.", "z.z.test."),
            nsec("z.z.test.", "z.test."),
        ]
    }

    fn lookup(c: &DenialCache, key: &str, wrap: bool) -> Cached {
        let apex = name("z.test.");
        c.lookup(at(&apex, 1, 0), key, wrap, Instant::now(), Duration::ZERO)
    }

    fn insert(c: &DenialCache, key: &str, wrap: bool, node: &Arc<Node>) -> bool {
        let apex = name("z.test.");
        c.insert(at(&apex, 1, 0), c.voids(), key, wrap, node.clone(), later())
    }

    /// The owner of the NSEC record a cached lookup for `n` gives.
    fn nsec_owner(c: &DenialCache, n: &str) -> Option<Name> {
        hit_owner(&lookup(c, &ck(n), false))
    }

    fn hit_owner(c: &Cached) -> Option<Name> {
        match c {
            Cached::Hit(Some(n)) => Some(n.name.clone()),
            _ => None,
        }
    }

    #[test]
    fn nsec_intervals_follow_canonical_order() {
        let chain = nsec_chain();
        let (dk, next) = interval_of(&chain[1]).unwrap();
        assert_eq!(
            (dk.as_str(), next.as_str()),
            (&*ck("a.z.test."), &*ck("m.a.z.test."))
        );
        let c = DenialCache::new(100, 1 << 20);
        // b.a.z.test. sorts after a.z.test. (a child) and before m.a.z.test.
        assert!(insert(&c, &ck("b.a.z.test."), false, &chain[1]));
        for inside in ["a.z.test.", "x.b.a.z.test.", "l.a.z.test.", "aa.a.z.test."] {
            assert_eq!(nsec_owner(&c, inside), Some(name("a.z.test.")), "{inside}");
        }
        // Outside [a, m.a): m.a itself, its children, b, and the apex.
        for outside in ["m.a.z.test.", "x.m.a.z.test.", "b.z.test.", "z.test."] {
            assert_eq!(lookup(&c, &ck(outside), false), Cached::Miss, "{outside}");
        }
    }

    #[test]
    fn the_apex_record_and_the_wrap_of_an_nsec_chain() {
        let chain = nsec_chain();
        let c = DenialCache::new(100, 1 << 20);
        // The apex record covers names sorting before a.z.test.
        assert!(insert(&c, &ck("0.z.test."), false, &chain[0]));
        assert_eq!(nsec_owner(&c, "0.z.test."), Some(name("z.test.")));
        assert_eq!(nsec_owner(&c, "z.test."), Some(name("z.test.")));
        assert_eq!(lookup(&c, &ck("a.z.test."), false), Cached::Miss);
        // The last record wraps: it covers everything after it.
        assert!(insert(&c, &ck("zz.z.test."), false, &chain[3]));
        for after in ["zz.z.test.", "a.zz.z.test.", "z.z.test."] {
            assert_eq!(nsec_owner(&c, after), Some(name("z.z.test.")));
        }
        // Below the apex there is nothing (NSEC asks without wrap).
        assert_eq!(lookup(&c, &ck("test."), false), Cached::Hit(None));
        // A record whose interval does not hold the asked key is not kept.
        assert!(!insert(&c, &ck("n.z.test."), false, &chain[1]));
        assert_eq!(lookup(&c, &ck("b.a.z.test."), false), Cached::Miss);
    }

    #[test]
    fn nsec3_intervals_wrap_around_the_hash_ring() {
        let (h1, h2, h3) = ([0x20; 20], [0x80; 20], [0xe0; 20]);
        let chain = [nsec3(&h1, &h2), nsec3(&h2, &h3), nsec3(&h3, &h1)];
        let (dk, next) = interval_of(&chain[2]).unwrap();
        assert_eq!((dk, next), (base32hex(&h3), base32hex(&h1)));
        let c = DenialCache::new(100, 1 << 20);
        let key = |b: u8| base32hex(&[b; 20]);
        assert!(insert(&c, &key(0x50), true, &chain[0]));
        assert_eq!(
            hit_owner(&lookup(&c, &key(0x7f), true)),
            Some(chain[0].name.clone())
        );
        assert_eq!(
            hit_owner(&lookup(&c, &key(0x20), true)),
            Some(chain[0].name.clone())
        );
        assert_eq!(lookup(&c, &key(0x80), true), Cached::Miss);
        assert_eq!(lookup(&c, &key(0x10), true), Cached::Miss);
        // Asked below the first hash, the database wraps to the last record.
        assert!(insert(&c, &key(0x10), true, &chain[2]));
        for k in [0x00, 0x1f, 0xe0, 0xff] {
            assert_eq!(
                hit_owner(&lookup(&c, &key(k), true)),
                Some(chain[2].name.clone()),
                "{k:x}"
            );
        }
        // A real hash lands in the interval it falls in.
        let h = base32hex(&nsec3_hash(&name("x.z.test."), &[0xab, 0xcd], 1));
        let expected = if h.as_str() < key(0x80).as_str() && h >= key(0x20) {
            Cached::Hit(Some(chain[0].clone()))
        } else if h >= key(0xe0) || h < key(0x20) {
            Cached::Hit(Some(chain[2].clone()))
        } else {
            Cached::Miss
        };
        assert_eq!(lookup(&c, &h, true), expected);
    }

    #[test]
    fn a_single_record_chain_covers_everything() {
        let only = nsec("z.test.", "z.test.");
        let c = DenialCache::new(100, 1 << 20);
        assert!(insert(&c, &ck("q.z.test."), false, &only));
        assert_eq!(nsec_owner(&c, "q.z.test."), Some(name("z.test.")));
        assert_eq!(nsec_owner(&c, "z.test."), Some(name("z.test.")));
    }

    #[test]
    fn other_versions_epochs_and_voids_miss() {
        let chain = nsec_chain();
        let c = DenialCache::new(100, 1 << 20);
        let apex = name("z.test.");
        let k = ck("b.a.z.test.");
        let now = Instant::now();
        let keep = |epoch, voids, expires| {
            let at = at(&apex, 1, epoch);
            c.insert(at, voids, &k, false, chain[1].clone(), expires)
        };
        assert!(insert(&c, &k, false, &chain[1]));
        assert!(matches!(
            c.lookup(at(&apex, 1, 0), &k, false, now, Duration::ZERO),
            Cached::Hit(_)
        ));
        assert_eq!(
            c.lookup(at(&apex, 2, 0), &k, false, now, Duration::ZERO),
            Cached::Miss
        );
        assert_eq!(
            c.lookup(at(&apex, 1, 1), &k, false, now, Duration::ZERO),
            Cached::Miss
        );
        // A read of the newer epoch replaces the zone's links...
        assert!(keep(1, c.voids(), later()));
        assert_eq!(c.len(), 1);
        // ... and one that began at the older epoch is not kept.
        assert!(!keep(0, c.voids(), later()));
        // A read that began before a void is not kept.
        let before = c.voids();
        c.void_zone(&apex);
        assert!(c.is_empty());
        assert!(!keep(1, before, later()));
        // Expired links are misses, unless within the stale grace.
        let soon = Instant::now() + Duration::from_millis(1);
        assert!(keep(1, c.voids(), soon));
        let after = soon + Duration::from_secs(1);
        assert_eq!(
            c.lookup(at(&apex, 1, 1), &k, false, after, Duration::ZERO),
            Cached::Miss
        );
        let grace = Duration::from_secs(5);
        assert!(matches!(
            c.lookup(at(&apex, 1, 1), &k, false, after, grace),
            Cached::Hit(Some(_))
        ));
    }

    #[test]
    fn bounded_by_records_and_bytes() {
        let c = DenialCache::new(3, 1 << 20);
        for z in 0..4 {
            let apex = name(&format!("z{z}.test."));
            let node = nsec(&format!("z{z}.test."), &format!("a.z{z}.test."));
            let key = apex.canonical_key();
            assert!(c.insert(at(&apex, 1, 0), c.voids(), &key, false, node, later()));
        }
        assert_eq!(c.len(), 3);
        assert_eq!(c.evictions(), 1);
        let first = name("z0.test.");
        let k = first.canonical_key();
        assert_eq!(
            c.lookup(at(&first, 1, 0), &k, false, Instant::now(), Duration::ZERO),
            Cached::Miss
        );
        let small = DenialCache::new(100, 10);
        assert!(insert(&small, &ck("b.a.z.test."), false, &nsec_chain()[1]));
        assert!(insert(&small, &ck("z.test."), false, &nsec_chain()[0]));
        assert_eq!(
            small.len(),
            1,
            "a zone alone over the budget keeps only its newest record"
        );
        assert_eq!(c.void_all(), 3);
        assert_eq!((c.len(), c.bytes()), (0, 0));
    }
}
