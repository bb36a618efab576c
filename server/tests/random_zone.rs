//! A zone the test did not know in advance: generated from a random seed,
//! imported, and every name asked for over UDP and TCP.

use hickory_proto::op::ResponseCode;
use mongodns_testkit::*;
use std::collections::BTreeMap;
use std::fmt::Write;

/// xorshift64*: enough randomness for test data, and reproducible from the seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn label(&mut self) -> String {
        let len = 1 + self.below(12) as usize;
        (0..len)
            .map(|_| {
                let alphabet = b"abcdefghijklmnopqrstuvwxyz0123456789-";
                alphabet[self.below(alphabet.len() as u64) as usize] as char
            })
            .collect::<String>()
            .trim_matches('-')
            .to_string()
    }
}

#[test]
fn every_name_of_a_random_zone_is_served() {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    eprintln!("random zone seed: {seed}");
    let mut rng = Rng(seed);
    let apex = format!("{}.test.", rng.label().replace('-', "x") + "z");
    let mut zone = String::new();
    writeln!(zone, "$ORIGIN {apex}\n$TTL 600").unwrap();
    writeln!(zone, "@ IN SOA ns.{apex} admin.{apex} 1 3600 600 86400 120").unwrap();
    writeln!(zone, "@ IN NS ns.{apex}").unwrap();
    // name → expected A and AAAA records, as dig-like lines.
    let mut expected: BTreeMap<String, Vec<(u16, String)>> = BTreeMap::new();
    for _ in 0..150 {
        let mut name = rng.label();
        if name.is_empty() {
            continue;
        }
        if rng.below(3) == 0 {
            name = format!("{}.{name}", rng.label().replace('-', "q") + "s");
        }
        let fqdn = format!("{name}.{apex}");
        let ttl = 60 + rng.below(5000);
        let (rtype, text) = if rng.below(2) == 0 {
            let a = format!(
                "10.{}.{}.{}",
                rng.below(256),
                rng.below(256),
                rng.below(256)
            );
            (1u16, a)
        } else {
            let a = format!(
                "2001:db8::{:x}:{:x}",
                rng.below(65536),
                rng.below(65536) + 1
            );
            (28u16, a)
        };
        let entry = expected.entry(fqdn.clone()).or_default();
        if entry.iter().any(|(t, v)| *t == rtype && *v == text) {
            continue;
        }
        // All records of an RRset share one TTL: reuse the first one's.
        let ttl = match zone.lines().find(|l| {
            l.starts_with(&format!("{fqdn} "))
                && l.contains(if rtype == 1 { " A " } else { " AAAA " })
        }) {
            Some(line) => line.split_whitespace().nth(1).unwrap().parse().unwrap(),
            None => ttl,
        };
        let type_name = if rtype == 1 { "A" } else { "AAAA" };
        writeln!(zone, "{fqdn} {ttl} IN {type_name} {text}").unwrap();
        entry.push((rtype, format!("{fqdn} {ttl} {type_name} {text}")));
    }
    let db = block_on(async {
        let db = TestZoneDb::new("random").await;
        db.import(&apex, &zone, false).await;
        db
    });
    let server = ServerProcess::start(&db.name, &[]);
    for (i, (name, records)) in expected.iter().enumerate() {
        for rtype in [1u16, 28u16] {
            let mut want: Vec<String> = records
                .iter()
                .filter(|(t, _)| *t == rtype)
                .map(|(_, l)| l.clone())
                .collect();
            want.sort();
            let m = if i % 4 == 0 {
                ask_tcp(server.port, name, rtype, None)
            } else {
                ask_udp(server.port, name, rtype, Some((1232, false)))
            };
            assert_eq!(
                m.metadata.response_code,
                ResponseCode::NoError,
                "{name} seed {seed}"
            );
            assert!(m.metadata.authoritative);
            assert_eq!(lines(&m.answers), want, "{name} type {rtype} seed {seed}");
            if want.is_empty() {
                assert_eq!(m.authorities.len(), 1, "NODATA carries the SOA: {name}");
            }
        }
    }
    // Names that were never generated do not exist.
    let m = ask_udp(
        server.port,
        &format!("never-generated-name.{apex}"),
        1,
        None,
    );
    assert_eq!(m.metadata.response_code, ResponseCode::NXDomain);
    drop(server);
    block_on(db.drop_db());
}
