//! The packet cache: whole replies keyed by the normalised query.
//!
//! ```text
//!  query bytes ─normalise─► PacketKey (no ID; qname lower-cased; qtype,
//!        qclass; DO, CD, EDNS present; reply size limit)  ─ odd shapes: None
//!  lookup: hash ─► shard ─► compare key bytes ─► fresh? zone gen current?
//!        (or, a plain positive answer: its name untouched since, NameReach)
//!        ─► copy reply, restore ID, RD and the asker's question bytes
//!  insert: after the pipeline renders a reply (never SERVFAIL)
//! ```

use super::sharded::{ShardedLru, Weigh};
use crate::zones::{ZoneRegistry, ZoneState};
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Longest key: 7 bytes of flags/limit/type/class and a 255-byte name.
const MAX_KEY: usize = 7 + 255;

/// A normalised query; two queries with equal keys get the same reply
/// (apart from ID, RD and the question's letter case).
#[derive(Clone)]
pub struct PacketKey {
    bytes: [u8; MAX_KEY],
    len: usize,
    hash: u64,
    /// End of the question in the query.
    question_end: usize,
}

impl PacketKey {
    /// The normalised bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    /// The hash of the normalised bytes.
    pub fn hash(&self) -> u64 {
        self.hash
    }
}

/// What a cached reply depends on.
pub enum Dependency {
    /// A zone at a generation.
    Zone(Arc<ZoneState>, i64),
    /// The set of zones at an epoch (for names in no zone).
    ZoneSet(u64),
}

/// A cached reply. The key's bytes and the reply are stored together, and
/// inside the entry itself when they fit in [`INLINE`] bytes (most answers
/// do), with the usual single dependency inline too: a hit then reads the
/// map's node and nothing else (each separate allocation is one more cache
/// miss per hit on a large cache). The fields a hit reads first come first.
#[repr(C)]
struct PacketEntry {
    expires: Instant,
    deps: Deps,
    /// A plain positive answer's reach past its generation (`None`: none).
    reach: Option<NameReach>,
    key_len: u16,
    /// The key's bytes followed by the reply (ID zeroed).
    data: Stored,
}

/// How a plain positive answer outlives changes of its zone that did not
/// touch its name (`name_scope.rs`).
pub struct NameReach {
    /// The zone's token when the answer was read.
    token: u64,
    /// The set of zones then (a new zone below may now hold the name).
    zones_epoch: u64,
    /// The last generation it was found untouched at (checked once per
    /// generation, not per hit).
    checked: AtomicI64,
}

impl NameReach {
    /// The reach of an answer read while the zone's token was `token` and
    /// the set of zones at `zones_epoch`.
    pub fn new(token: u64, zones_epoch: u64, gen: i64) -> NameReach {
        NameReach {
            token,
            zones_epoch,
            checked: AtomicI64::new(gen),
        }
    }
}

/// Bytes of key and reply held inside the entry; longer ones get an
/// allocation of their own. 160 fits a positive answer of a few records
/// with its question, OPT and key, or a negative one with its SOA.
const INLINE: usize = 160;

/// Key and reply bytes: inside the entry, or on the heap when long.
enum Stored {
    Inline { len: u16, buf: [u8; INLINE] },
    Heap(Box<[u8]>),
}

impl Stored {
    /// `key` followed by `reply`.
    fn new(key: &[u8], reply: &[u8]) -> Stored {
        let len = key.len() + reply.len();
        if len <= INLINE {
            let mut buf = [0u8; INLINE];
            buf[..key.len()].copy_from_slice(key);
            buf[key.len()..len].copy_from_slice(reply);
            Stored::Inline {
                len: len as u16,
                buf,
            }
        } else {
            let mut data = Vec::with_capacity(len);
            data.extend_from_slice(key);
            data.extend_from_slice(reply);
            Stored::Heap(data.into_boxed_slice())
        }
    }

    fn as_slice(&self) -> &[u8] {
        match self {
            Stored::Inline { len, buf } => &buf[..usize::from(*len)],
            Stored::Heap(b) => b,
        }
    }

    fn as_mut_slice(&mut self) -> &mut [u8] {
        match self {
            Stored::Inline { len, buf } => &mut buf[..usize::from(*len)],
            Stored::Heap(b) => b,
        }
    }

    /// Bytes held outside the entry.
    fn heap_bytes(&self) -> usize {
        match self {
            Stored::Inline { .. } => 0,
            Stored::Heap(b) => b.len(),
        }
    }
}

/// What a reply depends on: nearly always one zone, kept inline.
enum Deps {
    One(Dependency),
    Many(Box<[Dependency]>),
}

impl Deps {
    fn from_vec(mut deps: Vec<Dependency>) -> Deps {
        if deps.len() == 1 {
            Deps::One(deps.pop().expect("one dependency"))
        } else {
            Deps::Many(deps.into_boxed_slice())
        }
    }

    fn as_slice(&self) -> &[Dependency] {
        match self {
            Deps::One(d) => std::slice::from_ref(d),
            Deps::Many(ds) => ds,
        }
    }
}

impl PacketEntry {
    fn key(&self) -> &[u8] {
        &self.data.as_slice()[..usize::from(self.key_len)]
    }

    fn reply(&self) -> &[u8] {
        &self.data.as_slice()[usize::from(self.key_len)..]
    }

    /// True when the entry answers `key` and its zones have not changed,
    /// or changed without touching a plain answer's name.
    fn serves(&self, key: &[u8], registry: &ZoneRegistry) -> bool {
        self.key() == key
            && (deps_current(self.deps.as_slice(), registry) || self.outlives_changes(registry))
    }

    /// A plain positive answer whose zone moved on: still true when no
    /// change since touched its name, an ancestor below the apex, or the
    /// set of zones.
    fn outlives_changes(&self, registry: &ZoneRegistry) -> bool {
        let (Some(reach), Deps::One(Dependency::Zone(state, _))) = (&self.reach, &self.deps) else {
            return false;
        };
        let now = state.gen();
        if reach.checked.load(Ordering::Relaxed) == now {
            return true;
        }
        let qname = &self.key()[7..];
        if registry.zones_epoch() != reach.zones_epoch || !state.untouched_since(reach.token, qname)
        {
            return false;
        }
        reach.checked.store(now, Ordering::Relaxed);
        true
    }
}

impl Weigh for PacketEntry {
    fn weight(&self) -> usize {
        // The entry (with its inline bytes), the map's node and hash slot.
        std::mem::size_of::<PacketEntry>()
            + 48
            + self.data.heap_bytes()
            + self.deps.as_slice().len() * 16
    }
}

/// Counters of the packet cache.
#[derive(Default)]
pub struct PacketStats {
    /// Replies served from the cache.
    pub hits: AtomicU64,
    /// Cacheable queries that were not in the cache (or stale).
    pub misses: AtomicU64,
    /// Queries whose shape the cache does not handle.
    pub uncacheable: AtomicU64,
    /// Expired replies served because the database failed (RFC 8767).
    pub stale_hits: AtomicU64,
}

/// Whole replies, sharded and bounded.
pub struct PacketCache {
    lru: ShardedLru<u64, PacketEntry>,
    hasher: foldhash::quality::RandomState,
    /// Longest life of an entry, in ms (changed by SIGHUP: `set_max_ttl`).
    max_ttl_ms: AtomicU64,
    max_udp: u16,
    registry: Arc<ZoneRegistry>,
    /// How long after expiry a reply may still be served when the
    /// database fails (RFC 8767); zero: never.
    serve_stale: Duration,
    /// Hit and miss counters.
    pub stats: PacketStats,
}

/// TTL of records in a stale reply (RFC 8767 §4 recommends 30 s).
pub const STALE_TTL: u32 = 30;

impl PacketCache {
    /// A cache of at most `max_entries` replies and `max_bytes` bytes;
    /// entries live at most `max_ttl`. `max_udp` is the server's UDP limit;
    /// `registry` tells which zone generations are current.
    pub fn new(
        max_entries: usize,
        max_bytes: usize,
        max_ttl: Duration,
        max_udp: u16,
        registry: Arc<ZoneRegistry>,
    ) -> Self {
        PacketCache {
            lru: ShardedLru::new(64, max_entries, max_bytes),
            hasher: Default::default(),
            max_ttl_ms: AtomicU64::new(max_ttl.as_millis() as u64),
            max_udp,
            registry,
            serve_stale: Duration::ZERO,
            stats: PacketStats::default(),
        }
    }

    /// Changes the longest life of entries stored from now on.
    pub fn set_max_ttl(&self, max_ttl: Duration) {
        self.max_ttl_ms
            .store(max_ttl.as_millis() as u64, Ordering::Relaxed);
    }

    /// Lets expired replies be served for up to `window` after expiry when
    /// the pipeline fails ([`PacketCache::lookup_stale`]).
    pub fn with_serve_stale(mut self, window: Duration) -> Self {
        self.serve_stale = window;
        self
    }

    /// An expired reply still within the serve-stale window, for a query the
    /// pipeline could not answer (database down or slow): written into
    /// `out` with every TTL capped at [`STALE_TTL`]. A reply whose zone
    /// changed since is never served.
    pub fn lookup_stale(&self, packet: &[u8], key: &PacketKey, out: &mut Vec<u8>) -> bool {
        if self.serve_stale.is_zero() {
            return false;
        }
        let now = Instant::now();
        let found = self.lru.with(&key.hash, |e| {
            if e.expires + self.serve_stale <= now || !e.serves(key.as_bytes(), &self.registry) {
                return false;
            }
            out.clear();
            out.extend_from_slice(e.reply());
            true
        });
        if found != Some(true) || !cap_ttls(out, STALE_TTL) {
            return false;
        }
        restore(out, packet, key.question_end);
        self.stats.stale_hits.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// Normalises a query; `None` for shapes the cache leaves to the pipeline
    /// (anything but one plain question and at most one OPT).
    pub fn key(&self, packet: &[u8], tcp: bool) -> Option<PacketKey> {
        normalise(packet, tcp, self.max_udp, &self.hasher)
    }

    /// Writes the cached reply for `packet` into `out`; false on a miss.
    pub fn lookup(&self, packet: &[u8], key: &PacketKey, out: &mut Vec<u8>) -> bool {
        let hit = self.peek(packet, key, out);
        if !hit {
            self.stats.misses.fetch_add(1, Ordering::Relaxed);
        }
        hit
    }

    /// Like [`PacketCache::lookup`], but a miss is not counted (the caller
    /// will try again through `lookup`).
    pub fn peek(&self, packet: &[u8], key: &PacketKey, out: &mut Vec<u8>) -> bool {
        let now = Instant::now();
        let found = self.lru.with(&key.hash, |e| {
            if e.expires <= now || !e.serves(key.as_bytes(), &self.registry) {
                return false;
            }
            out.clear();
            out.extend_from_slice(e.reply());
            true
        });
        if found != Some(true) {
            return false;
        }
        restore(out, packet, key.question_end);
        self.stats.hits.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// Stores `reply` for `key` for `ttl` (capped), valid while `deps` hold
    /// (or, with a `reach`, while its name is untouched).
    pub fn insert(
        &self,
        key: &PacketKey,
        reply: &[u8],
        ttl: Duration,
        deps: Vec<Dependency>,
        reach: Option<NameReach>,
    ) {
        let ttl = ttl.min(Duration::from_millis(
            self.max_ttl_ms.load(Ordering::Relaxed),
        ));
        if ttl.is_zero() {
            return;
        }
        let key_bytes = key.as_bytes();
        let mut data = Stored::new(key_bytes, reply);
        if reply.len() >= 2 {
            let bytes = data.as_mut_slice();
            bytes[key_bytes.len()] = 0;
            bytes[key_bytes.len() + 1] = 0;
        }
        self.lru.insert(
            key.hash,
            PacketEntry {
                data,
                key_len: key_bytes.len() as u16,
                expires: Instant::now() + ttl,
                deps: Deps::from_vec(deps),
                reach,
            },
        );
    }

    /// Drops every reply whose question name is `qname` (lower-case wire).
    pub fn purge_name(&self, qname_wire: &[u8]) -> usize {
        self.lru.retain(|_, e| e.key().get(7..) != Some(qname_wire))
    }

    /// Drops everything.
    pub fn purge_all(&self) -> usize {
        self.lru.retain(|_, _| false)
    }

    /// Replies held.
    pub fn len(&self) -> usize {
        self.lru.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.lru.is_empty()
    }

    /// Bytes held (approximate).
    pub fn bytes(&self) -> usize {
        self.lru.bytes()
    }

    /// Replies evicted to stay within bounds.
    pub fn evictions(&self) -> u64 {
        self.lru.evictions()
    }
}

fn deps_current(deps: &[Dependency], registry: &ZoneRegistry) -> bool {
    deps.iter().all(|d| match d {
        Dependency::Zone(state, gen) => state.gen() == *gen,
        Dependency::ZoneSet(epoch) => registry.zones_epoch() == *epoch,
    })
}

fn normalise(p: &[u8], tcp: bool, max_udp: u16, hasher: &impl BuildHasher) -> Option<PacketKey> {
    if p.len() < 17 {
        return None;
    }
    // QR = 0, opcode QUERY; one question, no answer/authority, at most one additional.
    if p[2] & 0xF8 != 0 || p[4..10] != [0, 1, 0, 0, 0, 0] || p[10] != 0 || p[11] > 1 {
        return None;
    }
    let mut key = PacketKey {
        bytes: [0; MAX_KEY],
        len: 7,
        hash: 0,
        question_end: 0,
    };
    let mut pos = 12;
    loop {
        let len = *p.get(pos)? as usize;
        if len > 63 {
            return None; // compression or bad label: the pipeline decides
        }
        let label = p.get(pos..pos + 1 + len)?;
        if key.len + label.len() > MAX_KEY {
            return None;
        }
        for (i, b) in label.iter().enumerate() {
            key.bytes[key.len + i] = if i == 0 { *b } else { b.to_ascii_lowercase() };
        }
        key.len += label.len();
        pos += 1 + len;
        if len == 0 {
            break;
        }
    }
    let q = p.get(pos..pos + 4)?;
    key.bytes[3..7].copy_from_slice(q);
    pos += 4;
    key.question_end = pos;
    let cd = p[3] & 0x10 != 0;
    let mut flags = u8::from(cd) << 2;
    let limit = if p[11] == 1 {
        // Exactly one OPT, well formed, version 0, filling the rest exactly;
        // a malformed one goes to the pipeline (FORMERR) rather than
        // sharing a well-formed key.
        let edns = crate::edns::request::opt_ending_at(p, pos).filter(|e| e.known_version())?;
        flags |= 1 | (u8::from(edns.dnssec_ok) << 1);
        // NSID / EXPIRE asked: their replies carry more (edns/options.rs).
        flags |= edns.asked.bits() << 3;
        if tcp {
            65535
        } else {
            edns.udp_size.clamp(512, max_udp.max(512))
        }
    } else {
        if pos != p.len() {
            return None;
        }
        if tcp {
            65535
        } else {
            512
        }
    };
    key.bytes[0] = flags;
    key.bytes[1..3].copy_from_slice(&limit.to_be_bytes());
    key.hash = hasher.hash_one(key.as_bytes());
    Some(key)
}

/// Caps the TTL of every record of `reply` (OPT aside) at `max`; false if
/// the reply cannot be walked.
pub fn cap_ttls(reply: &mut [u8], max: u32) -> bool {
    let Ok(mut walk) = crate::wire::walk::records(reply) else {
        return false;
    };
    let mut ttls = Vec::new();
    for record in walk.by_ref() {
        match record {
            Ok(r) if r.rtype != 41 && r.ttl > max => ttls.push(r.ttl_at()),
            Ok(_) => {}
            Err(_) => return false,
        }
    }
    if walk.end() != reply.len() {
        return false;
    }
    for at in ttls {
        reply[at..at + 4].copy_from_slice(&max.to_be_bytes());
    }
    true
}

/// Puts the asker's ID, RD bit and question bytes into a cached reply.
fn restore(reply: &mut [u8], query: &[u8], question_end: usize) {
    reply[0] = query[0];
    reply[1] = query[1];
    reply[2] = (reply[2] & !0x01) | (query[2] & 0x01);
    if reply.len() >= question_end {
        reply[12..question_end].copy_from_slice(&query[12..question_end]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(id: u16, name: &[u8], qtype: u16, opt: Option<(u16, bool)>, rd: bool) -> Vec<u8> {
        let mut p = id.to_be_bytes().to_vec();
        p.extend_from_slice(&[
            u8::from(rd),
            0,
            0,
            1,
            0,
            0,
            0,
            0,
            0,
            u8::from(opt.is_some()),
        ]);
        p.extend_from_slice(name);
        p.extend_from_slice(&qtype.to_be_bytes());
        p.extend_from_slice(&[0, 1]);
        if let Some((size, d)) = opt {
            p.extend_from_slice(&[0, 0, 41]);
            p.extend_from_slice(&size.to_be_bytes());
            p.extend_from_slice(&[0, 0, if d { 0x80 } else { 0 }, 0, 0, 0]);
        }
        p
    }

    fn cache() -> PacketCache {
        let registry = Arc::new(ZoneRegistry::new(10, Duration::from_secs(60)));
        PacketCache::new(100, 1 << 20, Duration::from_secs(60), 1232, registry)
    }

    #[test]
    fn keys_ignore_id_and_case_but_not_type_or_do() {
        let c = cache();
        let k = |p: &[u8]| c.key(p, false).unwrap().as_bytes().to_vec();
        let base = k(&query(1, b"\x03www\x07example\x00", 1, None, false));
        assert_eq!(base, k(&query(2, b"\x03WwW\x07EXAMPLE\x00", 1, None, true)));
        assert_ne!(
            base,
            k(&query(1, b"\x03www\x07example\x00", 28, None, false))
        );
        let e = k(&query(
            1,
            b"\x03www\x07example\x00",
            1,
            Some((1232, false)),
            false,
        ));
        let d = k(&query(
            1,
            b"\x03www\x07example\x00",
            1,
            Some((1232, true)),
            false,
        ));
        let small = k(&query(
            1,
            b"\x03www\x07example\x00",
            1,
            Some((600, false)),
            false,
        ));
        let huge = k(&query(
            1,
            b"\x03www\x07example\x00",
            1,
            Some((4096, false)),
            false,
        ));
        assert_ne!(base, e);
        assert_ne!(e, d);
        assert_ne!(e, small);
        assert_eq!(e, huge, "sizes above our limit share a key");
        // TCP and UDP differ (size limit).
        let p = query(1, b"\x03www\x07example\x00", 1, None, false);
        assert_ne!(
            c.key(&p, true).unwrap().as_bytes(),
            c.key(&p, false).unwrap().as_bytes()
        );
    }

    #[test]
    fn odd_shapes_are_not_cached() {
        let c = cache();
        let mut p = query(1, b"\x03www\x00", 1, None, false);
        p.push(0);
        assert!(c.key(&p, false).is_none(), "trailing byte");
        let p = query(1, b"\xc0\x0c", 1, None, false);
        assert!(c.key(&p, false).is_none(), "compressed question");
        let mut p = query(1, b"\x03www\x00", 1, Some((1232, false)), false);
        let n = p.len();
        p[n - 5] = 1;
        assert!(c.key(&p, false).is_none(), "EDNS version 1");
        let mut p = query(1, b"\x03www\x00", 1, None, false);
        p[2] = 0x80;
        assert!(c.key(&p, false).is_none(), "a response");
    }

    #[test]
    fn a_hit_restores_id_rd_and_case() {
        let c = cache();
        let first = query(0x1111, b"\x03www\x00", 1, None, false);
        let key = c.key(&first, false).unwrap();
        let mut out = Vec::new();
        assert!(!c.lookup(&first, &key, &mut out));
        assert!(!c.peek(&first, &key, &mut out));
        assert_eq!(
            c.stats.misses.load(Ordering::Relaxed),
            1,
            "peek does not count"
        );
        let mut reply = first.clone();
        reply[2] |= 0x84; // QR, AA
        reply.extend_from_slice(&[0xC0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 1, 2, 3, 4]);
        reply[7] = 1;
        c.insert(&key, &reply, Duration::from_secs(30), vec![], None);
        let second = query(0x2222, b"\x03WWW\x00", 1, None, true);
        let key2 = c.key(&second, false).unwrap();
        assert!(c.lookup(&second, &key2, &mut out));
        assert_eq!(&out[0..2], &[0x22, 0x22]);
        assert_eq!(out[2] & 0x01, 1, "RD from the asker");
        assert_eq!(out[2] & 0x84, 0x84);
        assert_eq!(&out[13..16], b"WWW");
        assert_eq!(&out[out.len() - 4..], &[1, 2, 3, 4]);
        assert_eq!(c.stats.hits.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn zero_ttl_and_stale_dependencies_are_misses() {
        let c = cache();
        let q = query(1, b"\x01a\x00", 1, None, false);
        let key = c.key(&q, false).unwrap();
        c.insert(&key, &q, Duration::ZERO, vec![], None);
        let mut out = Vec::new();
        assert!(!c.lookup(&q, &key, &mut out));
        let epoch = c.registry.zones_epoch();
        c.insert(
            &key,
            &q,
            Duration::from_secs(5),
            vec![Dependency::ZoneSet(epoch.wrapping_add(7))],
            None,
        );
        assert!(!c.lookup(&q, &key, &mut out));
        assert_eq!(c.purge_name(b"\x01a\x00"), 1);
    }

    #[test]
    fn expired_replies_are_served_stale_only_within_the_window() {
        let registry = Arc::new(ZoneRegistry::new(10, Duration::from_secs(60)));
        let c = PacketCache::new(100, 1 << 20, Duration::from_secs(60), 1232, registry)
            .with_serve_stale(Duration::from_millis(400));
        let q = query(7, b"\x01a\x00", 1, None, false);
        let key = c.key(&q, false).unwrap();
        let mut reply = q.clone();
        reply[2] |= 0x84;
        reply[7] = 1;
        reply.extend_from_slice(&[0xC0, 12, 0, 1, 0, 1, 0, 0, 0x0E, 0x10, 0, 4, 1, 2, 3, 4]);
        c.insert(&key, &reply, Duration::from_millis(100), vec![], None);
        let mut out = Vec::new();
        assert!(!c.lookup_stale(&q, &key, &mut out) || c.peek(&q, &key, &mut out));
        std::thread::sleep(Duration::from_millis(150));
        assert!(!c.peek(&q, &key, &mut out), "expired");
        assert!(
            c.lookup_stale(&q, &key, &mut out),
            "within the stale window"
        );
        let ttl = u32::from_be_bytes([
            out[out.len() - 10],
            out[out.len() - 9],
            out[out.len() - 8],
            out[out.len() - 7],
        ]);
        assert_eq!(ttl, STALE_TTL, "3600 capped to 30");
        assert_eq!(&out[0..2], &[0, 7]);
        std::thread::sleep(Duration::from_millis(400));
        assert!(!c.lookup_stale(&q, &key, &mut out), "past the window");
        // Off by default.
        let off = cache();
        off.insert(&key, &reply, Duration::from_millis(1), vec![], None);
        std::thread::sleep(Duration::from_millis(5));
        assert!(!off.lookup_stale(&q, &key, &mut out));
    }
}
