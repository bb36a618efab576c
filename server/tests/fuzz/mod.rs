//! Fuzz checks shared by the corpus replay, the random-mutation runner and
//! the hostile-packet test (see docs/reliability.md, "Fuzzing").
//!
//! ```text
//!  query_path(bytes)  : bytes ─► Responder (in-memory zone, with and without
//!                       the packet cache, UDP and TCP) ─► every reply parses
//!                       (hickory-proto), ID echoed, QR set, UDP size limit kept,
//!                       a cached reply equals the uncached one
//!  zonefile(bytes)    : master-file parser never panics, always ends
//!  packet_key(bytes)  : two queries derived from the input; equal keys ⇒ the
//!                       replies are equal once ID/RD/question are restored;
//!                       queries that must share a reply ⇒ equal keys
//!  signed.rs          : the query path over NSEC- and NSEC3-signed zones
//!  tsig.rs            : queries signed (well or badly) with a TSIG key
//!  hostile_data.rs    : random storable nodes for the real database
//!  judged.rs          : how many inputs each target judged (the runner's floor)
//! ```
//!
//! Each check panics on a violated property; the runner catches the panic,
//! prints the input as hex and writes it to the corpus directory.

#![allow(dead_code)]

pub mod hostile_data;
pub mod judged;
pub mod signed;
pub mod tsig;

use backend_mongo::StoreError;

use dns::{Name, Node, RRset, ZoneInfo};
use hickory_proto::op::Message;
use mongodns_server::backend::{Backend, NodeRead};
use mongodns_server::cache::{Counters, PacketCache, RecordCache, RecordCacheConfig};
use mongodns_server::handler::Transport;
use mongodns_server::pipeline::{PipelineConfig, ReplyCache, Responder};
use mongodns_server::wire::parse_query;
use mongodns_server::zones::ZoneRegistry;
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// The zone every query-path check answers from: one of each shape the
/// pipeline knows (CNAME chains, wildcards, a cut with glue, DNAME, a loop,
/// an RRset too big for UDP).
pub const FUZZ_ZONE: &str = "$ORIGIN fz.test.
$TTL 300
@ IN SOA ns.fz.test. admin.fz.test. 1 3600 600 86400 60
@ IN NS ns
@ IN MX 10 mail
ns IN A 192.0.2.1
ns IN AAAA 2001:db8::1
mail IN A 192.0.2.2
www IN CNAME web
web IN A 192.0.2.3
loop1 IN CNAME loop2
loop2 IN CNAME loop1
*.wild IN A 192.0.2.4
*.wild IN TXT \"wild\"
sub IN NS ns.sub
ns.sub IN A 192.0.2.5
sub IN DS 12345 13 2 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
old IN DNAME fz.test.
srv._tcp IN SRV 0 0 53 ns
a.b.c.deep IN A 192.0.2.6
";

/// Lines appended to `FUZZ_ZONE`: a TXT RRset far larger than 1232 bytes.
fn big_rrset() -> String {
    (0..40)
        .map(|i| format!("big IN TXT \"{i:02}-{}\"\n", "x".repeat(60)))
        .collect()
}

/// An in-memory [`Backend`]: nodes by (apex, name), and for signed zones
/// the NSEC/NSEC3 owners by denial key.
#[derive(Clone, Default)]
pub struct MemBackend {
    zones: HashMap<Name, ZoneInfo>,
    nodes: BTreeMap<(Name, Name), Arc<Node>>,
    denials: HashMap<Name, BTreeMap<String, Arc<Node>>>,
}

impl MemBackend {
    /// Adds the zone `info` with `nodes`; `denials` maps denial keys
    /// (canonical key or NSEC3 hash label) to owner names among `nodes`.
    pub fn add_zone(&mut self, info: ZoneInfo, nodes: Vec<Node>, denials: &[(String, Name)]) {
        let apex = info.apex.clone();
        for node in nodes {
            self.nodes
                .insert((apex.clone(), node.name.clone()), Arc::new(node));
        }
        let by_key = self.denials.entry(apex.clone()).or_default();
        for (key, owner) in denials {
            let node = self.nodes[&(apex.clone(), owner.clone())].clone();
            by_key.insert(key.clone(), node);
        }
        self.zones.insert(apex, info);
    }

    /// Reads `text` as the zone `apex` (empty non-terminals added).
    pub fn from_zone_text(apex: &str, text: &str) -> MemBackend {
        let apex = Name::parse(apex, None).unwrap();
        let reader = dns::presentation::ZoneFileReader::from_reader(
            PathBuf::from("fuzz.zone"),
            Box::new(std::io::Cursor::new(text.as_bytes().to_vec())),
            apex.clone(),
            Some(300),
        );
        let mut sets: BTreeMap<Name, BTreeMap<u16, RRset>> = BTreeMap::new();
        for record in reader {
            let r = record.unwrap();
            let mut name = r.owner.clone();
            sets.entry(name.clone()).or_default();
            while name != apex {
                name = name.parent().unwrap();
                sets.entry(name.clone()).or_default();
            }
            let set = sets
                .get_mut(&r.owner)
                .unwrap()
                .entry(r.rtype.0)
                .or_insert_with(|| RRset {
                    rtype: r.rtype,
                    ttl: r.ttl,
                    rdata: Vec::new(),
                });
            set.rdata.push(r.rdata.into());
        }
        let nodes = sets
            .into_iter()
            .map(|(name, sets)| {
                let node = Node {
                    name: name.clone(),
                    rrsets: sets.into_values().map(Arc::new).collect(),
                    sigs: Vec::new(),
                };
                ((apex.clone(), name), Arc::new(node))
            })
            .collect();
        let info = ZoneInfo {
            apex: apex.clone(),
            ver: 1,
            gen: 1,
            serial: 1,
        };
        MemBackend {
            zones: HashMap::from([(apex, info)]),
            nodes,
            denials: HashMap::new(),
        }
    }
}

impl Backend for MemBackend {
    async fn find_zone(&self, apex: &Name) -> Result<Option<ZoneInfo>, StoreError> {
        Ok(self.zones.get(apex).cloned())
    }

    async fn get_node(&self, zone: &ZoneInfo, name: &Name) -> NodeRead {
        Ok(self.nodes.get(&(zone.apex.clone(), name.clone())).cloned())
    }

    async fn denial(&self, zone: &ZoneInfo, key: &str, wrap: bool) -> NodeRead {
        // As `Store::denial`: the greatest key not above `key`, or with
        // `wrap` the greatest of all. Unsigned zones have none.
        let Some(keys) = self.denials.get(&zone.apex) else {
            return Ok(None);
        };
        let below = keys.range(..=key.to_string()).next_back();
        let found = below.or_else(|| wrap.then(|| keys.iter().next_back()).flatten());
        Ok(found.map(|(_, node)| node.clone()))
    }

    async fn zone_nodes(&self, zone: &ZoneInfo) -> Result<Vec<Node>, StoreError> {
        Ok(self
            .nodes
            .iter()
            .filter(|((apex, _), _)| *apex == zone.apex)
            .map(|(_, n)| (**n).clone())
            .collect())
    }
}

/// Responders over the fuzz zone: (no cache, with packet and record caches).
pub struct Rig {
    plain: Responder<MemBackend>,
    cached: Responder<RecordCache<MemBackend>>,
    /// The packet cache of `cached`, for key checks.
    pub packets: Arc<PacketCache>,
    runtime: tokio::runtime::Runtime,
}

/// The largest UDP reply the rig's responders send.
pub const MAX_UDP: u16 = 1232;

impl Rig {
    fn new() -> Rig {
        let text = format!("{FUZZ_ZONE}{}", big_rrset());
        let config = PipelineConfig {
            max_udp_size: MAX_UDP,
            query_timeout: Duration::from_secs(5),
            ..PipelineConfig::default()
        };
        Rig::over(MemBackend::from_zone_text("fz.test.", &text), config)
    }

    /// Responders over `backend`: one plain, one behind both caches.
    pub fn over(backend: MemBackend, config: PipelineConfig) -> Rig {
        let plain = Responder::new(Arc::new(backend.clone()), config.clone());
        let registry = Arc::new(ZoneRegistry::new(1024, Duration::from_secs(60)));
        let records = Arc::new(RecordCache::new(
            backend,
            registry.clone(),
            RecordCacheConfig::default(),
            Arc::new(Counters::default()),
        ));
        let packets = Arc::new(PacketCache::new(
            10_000,
            16 << 20,
            Duration::from_secs(300),
            MAX_UDP,
            registry.clone(),
        ));
        let cache = ReplyCache {
            packets: packets.clone(),
            registry,
            empty_ttl: Duration::from_secs(60),
        };
        let cached = Responder::with_cache(records, config, cache);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        Rig {
            plain,
            cached,
            packets,
            runtime,
        }
    }

    /// Runs `f` on the rig's runtime.
    pub fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        self.runtime.block_on(f)
    }

    /// The reply to `packet` through the packet and record caches.
    pub fn answer_through_caches(&self, packet: &[u8], transport: Transport) -> Option<Vec<u8>> {
        self.runtime
            .block_on(self.cached.respond(packet, transport))
    }

    /// The messages answering `packet` over TCP (a zone transfer or one reply).
    pub fn answer_tcp(&self, packet: &[u8]) -> Vec<Vec<u8>> {
        self.runtime
            .block_on(self.plain.respond_tcp(packet, peer()))
    }

    /// The uncached reply to `packet`.
    pub fn answer(&self, packet: &[u8], transport: Transport) -> Option<Vec<u8>> {
        self.runtime.block_on(self.plain.respond(packet, transport))
    }
}

thread_local! {
    static RIG: Rig = Rig::new();
}

/// Runs `f` with this thread's rig.
pub fn with_rig<T>(f: impl FnOnce(&Rig) -> T) -> T {
    RIG.with(f)
}

fn peer() -> SocketAddr {
    static PEER: OnceLock<SocketAddr> = OnceLock::new();
    *PEER.get_or_init(|| "127.0.0.1:5353".parse().unwrap())
}

/// Checks one reply to `query`: it parses, echoes the ID, is a response and
/// keeps the UDP size limit.
pub fn check_reply(query: &[u8], reply: &[u8], transport: Transport) {
    let msg = Message::from_vec(reply).unwrap_or_else(|e| {
        panic!(
            "reply does not parse ({e}): query {} reply {}",
            hex(query),
            hex(reply)
        )
    });
    assert!(query.len() >= 2, "a reply to a runt");
    assert_eq!(&reply[..2], &query[..2], "ID not echoed");
    assert!(msg.metadata.message_type == hickory_proto::op::MessageType::Response);
    if transport == Transport::Udp {
        let limit = match parse_query(query) {
            Ok(q) => match q.edns {
                Some(e) => usize::from(e.udp_size.clamp(512, MAX_UDP)),
                None => 512,
            },
            Err(_) => usize::from(MAX_UDP),
        };
        assert!(
            reply.len() <= limit,
            "UDP reply of {} bytes over the limit {limit}",
            reply.len()
        );
    }
}

/// A behaviour signature of a reply, to keep inputs that show something new
/// (a coverage-free stand-in for coverage feedback).
pub fn signature(reply: Option<&[u8]>) -> u64 {
    let Some(r) = reply else { return 1 };
    if r.len() < 12 {
        return 2;
    }
    let mut s = u64::from(r[3] & 0x0F) | (u64::from(r[2] & 0x06) << 4);
    for i in 0..4 {
        let count = u16::from_be_bytes([r[4 + 2 * i], r[5 + 2 * i]]).min(7);
        s = s << 3 | u64::from(count);
    }
    s
}

/// The query path: any bytes in, a reply that parses (or silence) out.
/// Returns a behaviour signature.
pub fn query_path(data: &[u8]) -> u64 {
    with_rig(|rig| check_query_path(rig, data))
}

/// [`query_path`] on `rig`.
pub fn check_query_path(rig: &Rig, data: &[u8]) -> u64 {
    let mut sig = 0u64;
    let mut replied = false;
    for transport in [Transport::Udp, Transport::Tcp] {
        let plain = rig.answer(data, transport);
        if let Some(reply) = &plain {
            check_reply(data, reply, transport);
            replied = true;
        }
        sig = sig
            .wrapping_mul(31)
            .wrapping_add(signature(plain.as_deref()));
        // Through the caches, twice: the second may be a packet-cache hit
        // and must be the very same bytes.
        let first = rig.runtime.block_on(rig.cached.respond(data, transport));
        let second = rig.runtime.block_on(rig.cached.respond(data, transport));
        assert_eq!(
            first,
            plain,
            "cached responder differs from plain one on {}",
            hex(data)
        );
        assert_eq!(first, second, "cache hit differs on {}", hex(data));
        let mut out = Vec::new();
        if rig.cached.answer_cached(data, transport, &mut out) {
            assert_eq!(Some(&out), plain.as_ref(), "fast-path hit differs");
        }
    }
    // Over TCP with a peer: zone transfers and everything else.
    let messages = rig.runtime.block_on(rig.plain.respond_tcp(data, peer()));
    for m in &messages {
        check_reply(data, m, Transport::Tcp);
    }
    if replied {
        judged::count(judged::Judged::Reply);
    }
    sig.wrapping_add(messages.len() as u64)
}

/// The zone-file parser: never panics, always ends, at most one record per
/// input line.
pub fn zonefile(data: &[u8]) -> u64 {
    // $INCLUDE would read files of the machine running the fuzzer.
    if data.windows(8).any(|w| w.eq_ignore_ascii_case(b"$include")) {
        return 0;
    }
    let origin = Name::parse("fz.test.", None).unwrap();
    let reader = dns::presentation::ZoneFileReader::from_reader(
        PathBuf::from("fuzz.zone"),
        Box::new(std::io::Cursor::new(data.to_vec())),
        origin,
        Some(300),
    );
    let lines = data.iter().filter(|&&b| b == b'\n').count() + 1;
    let (mut ok, mut err) = (0usize, 0usize);
    let mut sig = 0u64;
    for item in reader {
        match item {
            Ok(r) => {
                ok += 1;
                assert!(r.rdata.len() <= 65535, "rdata over 65535 bytes");
                assert!(r.owner.wire_len() <= 255);
                sig |= 1 << (r.rtype.0 % 48);
            }
            Err(e) => {
                err += 1;
                // The kind of error: its first word.
                let word = e.message.split(' ').next().unwrap_or("");
                let h = word
                    .bytes()
                    .fold(0u64, |a, b| a.wrapping_mul(31) + u64::from(b));
                sig ^= (h % 4096) << 48;
                assert!(e.line <= lines + 1, "error line {} of {lines}", e.line);
            }
        }
        assert!(
            ok + err <= lines + 1,
            "more items than lines: the parser does not advance"
        );
    }
    judged::count(judged::Judged::ZoneFile);
    sig
}

/// A query built from parts, for the key check.
fn restore_like_cache(reply: &[u8], query: &[u8], question_end: usize) -> Vec<u8> {
    let mut r = reply.to_vec();
    r[0] = query[0];
    r[1] = query[1];
    r[2] = (r[2] & !0x01) | (query[2] & 0x01);
    if r.len() >= question_end {
        r[12..question_end].copy_from_slice(&query[12..question_end]);
    }
    r
}

/// End of an uncompressed question starting at 12.
fn question_end(p: &[u8]) -> Option<usize> {
    let mut pos = 12;
    loop {
        let len = *p.get(pos)? as usize;
        if len > 63 {
            return None;
        }
        pos += 1 + len;
        if len == 0 {
            return Some(pos + 4).filter(|&e| e <= p.len());
        }
    }
}

/// Derives a second query from the first: `kind` says how.
fn derive(p: &[u8], kind: u8, arg: &[u8]) -> (Vec<u8>, bool) {
    let mut q = p.to_vec();
    let a = |i: usize| arg.get(i).copied().unwrap_or(0);
    // Second value: true when the derived query must share the reply.
    match kind % 6 {
        0 => {
            q[0] = a(0);
            q[1] = a(1);
            (q, true)
        }
        1 => {
            q[2] ^= 0x01; // RD
            (q, true)
        }
        2 => {
            // Change the letter case of the question name.
            if let Some(end) = question_end(&q) {
                for (i, b) in q[12..end - 4].iter_mut().enumerate() {
                    if b.is_ascii_alphabetic() && a(i % arg.len().max(1)) & 1 == 1 {
                        *b ^= 0x20;
                    }
                }
            }
            (q, true)
        }
        _ => {
            // Arbitrary byte edits: may or may not share the reply.
            for chunk in arg.chunks(2) {
                if chunk.len() == 2 && !q.is_empty() {
                    let i = usize::from(chunk[0]) % q.len();
                    q[i] = chunk[1];
                }
            }
            (q, false)
        }
    }
}

/// The packet-cache key: `data` = kind byte, length of the first query,
/// the first query, then the edit. Equal keys must mean equal replies.
pub fn packet_key(data: &[u8]) -> u64 {
    let (Some(&kind), Some(&len)) = (data.first(), data.get(1)) else {
        return 0;
    };
    let rest = &data[2..];
    let len = usize::from(len).min(rest.len());
    let (p1, arg) = rest.split_at(len);
    if p1.len() < 12 {
        return 0;
    }
    let (p2, must_share) = derive(p1, kind, arg);
    judged::count(judged::Judged::PacketKey);
    with_rig(|rig| {
        let mut sig = u64::from(kind % 6);
        for tcp in [false, true] {
            let transport = if tcp { Transport::Tcp } else { Transport::Udp };
            let k1 = rig.packets.key(p1, tcp);
            let k2 = rig.packets.key(&p2, tcp);
            if let (true, Some(a)) = (must_share, k1.as_ref()) {
                let b = k2.as_ref();
                assert!(
                    b.is_some_and(|b| b.as_bytes() == a.as_bytes()),
                    "queries that must share a reply got different keys: {} / {}",
                    hex(p1),
                    hex(&p2)
                );
            }
            if let (Some(a), Some(b)) = (&k1, &k2) {
                if a.as_bytes() == b.as_bytes() {
                    sig += 10;
                    let r1 = rig.answer(p1, transport);
                    let r2 = rig.answer(&p2, transport);
                    let end = question_end(&p2).expect("a key implies a plain question");
                    let r1 = r1.map(|r| restore_like_cache(&r, &p2, end));
                    assert_eq!(
                        r1,
                        r2,
                        "equal keys but different replies: {} / {}",
                        hex(p1),
                        hex(&p2)
                    );
                }
            }
        }
        sig
    })
}

/// Lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Reads hex text (whitespace and `#` comments ignored).
pub fn unhex(text: &str) -> Vec<u8> {
    let digits: Vec<u8> = text
        .lines()
        .map(|l| l.split('#').next().unwrap_or(""))
        .flat_map(|l| l.bytes().filter(|b| b.is_ascii_hexdigit()))
        .collect();
    digits
        .chunks(2)
        .map(|c| u8::from_str_radix(std::str::from_utf8(c).unwrap(), 16).unwrap())
        .collect()
}

/// The corpus files of one target (`tests/fuzz/<target>/`), sorted.
pub fn corpus_files(root: &Path, target: &str) -> Vec<PathBuf> {
    let dir = root.join("tests/fuzz").join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

/// A small xorshift generator (reproducible from its printed seed).
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// A number below `n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const INTERESTING: [u8; 10] = [0, 1, 0x3F, 0x40, 0x7F, 0x80, 0xC0, 0xC0 | 0x0C, 0xFF, 41];

/// One random mutation of `input`, sometimes spliced with `other`.
pub fn mutate(rng: &mut Rng, input: &[u8], other: &[u8], max_len: usize) -> Vec<u8> {
    let mut v = input.to_vec();
    let rounds = 1 + rng.below(4);
    for _ in 0..rounds {
        match rng.below(9) {
            0 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] ^= 1 << rng.below(8);
            }
            1 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] = INTERESTING[rng.below(INTERESTING.len())];
            }
            2 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] = rng.next() as u8;
            }
            3 => {
                let i = rng.below(v.len() + 1);
                v.insert(i, rng.next() as u8);
            }
            4 if !v.is_empty() => {
                let i = rng.below(v.len());
                let n = 1 + rng.below(8.min(v.len() - i));
                v.drain(i..i + n);
            }
            5 if !v.is_empty() => {
                // Duplicate a chunk.
                let i = rng.below(v.len());
                let n = 1 + rng.below(16.min(v.len() - i));
                let chunk = v[i..i + n].to_vec();
                let at = rng.below(v.len() + 1);
                v.splice(at..at, chunk);
            }
            6 if !other.is_empty() => {
                // Splice: our head, their tail.
                let cut = rng.below(v.len() + 1);
                let from = rng.below(other.len());
                v.truncate(cut);
                v.extend_from_slice(&other[from..]);
            }
            7 if v.len() >= 2 => {
                // A 16-bit field set to an interesting value (counts, lengths).
                let i = rng.below(v.len() - 1);
                let val: u16 = [0, 1, 2, 0xFFFF, 0x7FFF, 512, 0xC00C, 41][rng.below(8)];
                v[i..i + 2].copy_from_slice(&val.to_be_bytes());
            }
            _ if !v.is_empty() => {
                v.truncate(rng.below(v.len()));
            }
            _ => v.push(rng.next() as u8),
        }
    }
    v.truncate(max_len);
    v
}
