//! The packet cache's hit path on its own: a query's key (its OPT read
//! included) and the copy of the cached reply, in nanoseconds a hit.
//!
//! ```text
//!  packet_hit [--rounds N]  (build with --release)
//!    four query shapes, each cached once, then N × (key + peek) each:
//!      no OPT │ OPT, no options │ OPT with a cookie │ OPT with NSID asked
//!    ─► ns per hit for each shape, and their total
//! ```

use mongodns_server::cache::packet::PacketCache;
use mongodns_server::zones::ZoneRegistry;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A query for `www.example.com A` with `opt` (a whole OPT record) appended.
fn query(opt: &[u8]) -> Vec<u8> {
    let mut p = vec![0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0];
    p.push(u8::from(!opt.is_empty()));
    p.extend_from_slice(b"\x03www\x07example\x03com\x00\x00\x01\x00\x01");
    p.extend_from_slice(opt);
    p
}

/// An OPT record (UDP size 1232, DO clear) carrying `options`.
fn opt(options: &[u8]) -> Vec<u8> {
    let mut o = vec![0, 0, 41, 0x04, 0xD0, 0, 0, 0, 0];
    o.extend_from_slice(&(options.len() as u16).to_be_bytes());
    o.extend_from_slice(options);
    o
}

/// A reply to `q`: one A record after the question.
fn reply(q: &[u8]) -> Vec<u8> {
    let mut r = q.to_vec();
    r[2] |= 0x84;
    r[7] = 1;
    r.extend_from_slice(&[0xC0, 12, 0, 1, 0, 1, 0, 0, 0x0E, 0x10, 0, 4, 192, 0, 2, 1]);
    r
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let rounds: u32 = args
        .iter()
        .position(|a| a == "--rounds")
        .and_then(|i| args.get(i + 1))
        .map_or(2_000_000, |v| v.parse().expect("a number"));
    let registry = Arc::new(ZoneRegistry::new(10, Duration::from_secs(60)));
    let cache = PacketCache::new(1000, 1 << 20, Duration::from_secs(3600), 1232, registry);
    let cookie = [0, 10, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8];
    let shapes = [
        ("no OPT", query(&[])),
        ("OPT", query(&opt(&[]))),
        ("OPT + cookie", query(&opt(&cookie))),
        ("OPT + NSID", query(&opt(&[0, 3, 0, 0]))),
    ];
    for (_, q) in &shapes {
        let key = cache.key(q, false).expect("cacheable");
        cache.insert(&key, &reply(q), Duration::from_secs(3600), vec![], None);
    }
    let mut out = Vec::with_capacity(512);
    let mut total = 0.0;
    for (name, q) in &shapes {
        let start = Instant::now();
        for _ in 0..rounds {
            let key = cache.key(black_box(q), false).expect("cacheable");
            assert!(cache.peek(q, &key, &mut out));
            black_box(&out);
        }
        let ns = start.elapsed().as_nanos() as f64 / f64::from(rounds);
        total += ns;
        println!("{name:>14}: {ns:6.1} ns a hit");
    }
    println!("{:>14}: {total:6.1} ns", "total");
}
