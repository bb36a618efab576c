//! Random but storable zone data: nodes any writer could put in the
//! database (the schema's shape, any bytes inside), for the server to read
//! back.
//!
//! ```text
//!  random_nodes(rng, apex, n) ─► n owners 1–3 labels below the apex
//!     (some `*`), each with 1–3 RRsets of types the server handles
//!     specially or not, each record one of:
//!       well-formed rdata for its type, the same cut short, random bytes,
//!       a compression pointer, a 256-octet name
//!     (every other node only well-formed ones), and sometimes RRSIGs of
//!     random bytes
//! ```

use super::Rng;
use dns::{Name, RRset, RType};

/// The types drawn: those whose rdata the server reads or compresses, and
/// some it copies as they are.
const TYPES: [u16; 19] = [
    1, 2, 5, 6, 12, 13, 15, 16, 28, 33, 35, 39, 43, 46, 47, 48, 50, 51, 65280,
];

/// A label of 1–8 letters, sometimes `*`.
fn label(rng: &mut Rng) -> Vec<u8> {
    if rng.below(8) == 0 {
        return b"*".to_vec();
    }
    let len = 1 + rng.below(8);
    (0..len).map(|_| b'a' + rng.below(26) as u8).collect()
}

/// A random name below `apex`, 1–3 labels deep.
fn owner(rng: &mut Rng, apex: &Name) -> Name {
    let mut name = apex.clone();
    for _ in 0..1 + rng.below(3) {
        if let Ok(n) = name.prepend(&label(rng)) {
            name = n;
        }
    }
    name
}

/// Well-formed rdata of `rtype` (names below `apex` or elsewhere).
fn good_rdata(rng: &mut Rng, apex: &Name, rtype: u16) -> Vec<u8> {
    let name = |rng: &mut Rng| owner(rng, apex).as_wire().to_vec();
    let bytes = |rng: &mut Rng, n: usize| (0..n).map(|_| rng.next() as u8).collect::<Vec<u8>>();
    match rtype {
        1 => bytes(rng, 4),
        28 => bytes(rng, 16),
        2 | 5 | 12 | 39 => name(rng),
        6 => [name(rng), name(rng), bytes(rng, 20)].concat(),
        13 => vec![1, b'x', 2, b'o', b's'],
        15 => [vec![0, 10], name(rng)].concat(),
        16 => {
            let len = rng.below(200);
            [vec![len as u8], vec![b't'; len]].concat()
        }
        33 => [bytes(rng, 6), name(rng)].concat(),
        35 => [bytes(rng, 4), vec![1, b'u', 0, 0], name(rng)].concat(),
        43 | 48 => {
            let len = 4 + rng.below(40);
            bytes(rng, len)
        }
        46 => [bytes(rng, 18), apex.as_wire().to_vec(), bytes(rng, 64)].concat(),
        47 => [name(rng), vec![0, 1, 0x40]].concat(),
        50 => [vec![1, 0, 0, 0, 0, 20], bytes(rng, 20), vec![0, 1, 0x40]].concat(),
        51 => vec![1, 0, 0, 0, 0],
        _ => {
            let len = rng.below(40);
            bytes(rng, len)
        }
    }
}

/// One record of `rtype`: well-formed when `clean`, else half of the time.
fn rdata(rng: &mut Rng, apex: &Name, rtype: u16, clean: bool) -> Box<[u8]> {
    let good = good_rdata(rng, apex, rtype);
    let out = match if clean { 0 } else { rng.below(8) } {
        0..4 => good,
        4 => good[..rng.below(good.len() + 1)].to_vec(),
        5 => (0..rng.below(300)).map(|_| rng.next() as u8).collect(),
        6 => [&good[..rng.below(good.len() + 1)], &[0xC0, 0x0C][..]].concat(),
        _ => backend_mongo::testing::long_wire_name(256),
    };
    out.into()
}

/// `count` random nodes below `apex`, distinct owners (the apex excluded);
/// every other one has only well-formed rdata.
pub fn random_nodes(rng: &mut Rng, apex: &Name, count: usize) -> Vec<(Name, Vec<RRset>)> {
    let mut out: Vec<(Name, Vec<RRset>)> = Vec::with_capacity(count);
    while out.len() < count {
        let name = owner(rng, apex);
        if out.iter().any(|(n, _)| *n == name) {
            continue;
        }
        let mut sets: Vec<RRset> = Vec::new();
        for _ in 0..1 + rng.below(3) {
            let rtype = TYPES[rng.below(TYPES.len())];
            if sets.iter().any(|s| s.rtype.0 == rtype) {
                continue;
            }
            let clean = out.len().is_multiple_of(2);
            let rdata = (0..1 + rng.below(3))
                .map(|_| rdata(rng, apex, rtype, clean))
                .collect();
            let ttl = [0, 1, 300, 86400, u32::MAX >> 1][rng.below(5)];
            sets.push(RRset {
                rtype: RType(rtype),
                ttl,
                rdata,
            });
        }
        out.push((name, sets));
    }
    out
}

/// Random bytes as RRSIG rdata of the node's RRsets, or nothing.
pub fn random_sigs(rng: &mut Rng) -> Option<Vec<Vec<u8>>> {
    (rng.below(4) == 0).then(|| {
        (0..1 + rng.below(2))
            .map(|_| (0..rng.below(120)).map(|_| rng.next() as u8).collect())
            .collect()
    })
}
