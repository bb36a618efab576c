//! DNSSEC end to end: zones imported and secured in a real database, served
//! by the real binary, every signature in the replies checked with
//! hickory-proto's verifier (an implementation independent of ours), and
//! every denial checked to cover what it must.
//!
//! ```text
//!  fixture: example.com. imported ─► secure-zone (NSEC or NSEC3) ─► server
//!  ask (DO=1) ─► verify_section: every RRSIG against the published DNSKEYs
//!             ─► nsecs / nsec3s: the denial covers (or matches) the name
//!  answers.rs       what signed replies hold, and nothing without DO
//!  writes.rs        secure-zone interrupted and re-run; imports signed,
//!                   merge batches signed before they are visible
//!  follow.rs        resign and resign --follow after other writers
//!  denial_cache.rs  the denial cache: the same answers, shared intervals
//! ```
//!
//! This file holds the fixture and the checks every topic shares.

mod answers;
mod denial_cache;
mod follow;
mod writes;

use backend_mongo::dnssec_store::Nsec3Config;
use backend_mongo::{NodeWrite, WriteMode};
use dns::dnssec::nsec3_hash;
use dns::encoding::base32hex;
use dns::{Name, RRset, RType};
use hickory_proto::dnssec::rdata::{DNSSECRData, DNSKEY};
use hickory_proto::dnssec::Verifier;
use hickory_proto::op::{Message, ResponseCode};
use hickory_proto::rr::{RData, Record, RecordType};
use mongodns_testkit::*;
use signer::{NoProgress, SecureOptions, Validity};
use std::time::{Duration, Instant};

const ZONE: &str = r#"
$ORIGIN example.com.
$TTL 3600
@       IN SOA ns1 hostmaster ( 2024010101 7200 900 1209600 300 )
        IN NS  ns1
        IN MX  10 mail
ns1     IN A   192.0.2.53
mail    IN A   192.0.2.25
www     IN A   192.0.2.80
        IN A   192.0.2.81
web     IN CNAME www
a.b.c   IN TXT "deep"
*.wild  IN A   192.0.2.99
secure  IN NS  ns.secure
secure  IN DS  12345 13 2 0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF
ns.secure IN A 192.0.2.54
open    IN NS  ns.elsewhere.example.
"#;

const DO: Option<(u16, bool)> = Some((4096, true));

/// Asks until `done` holds for the reply: a write is seen by the server's
/// caches within their freshness interval, not at once.
fn ask_until(port: u16, qname: &str, qtype: u16, done: impl Fn(&Message) -> bool) -> Message {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let m = ask_tcp(port, qname, qtype, DO);
        if done(&m) {
            return m;
        }
        assert!(
            Instant::now() < deadline,
            "{qname}: the change was not served within 10 s: {m}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn secure_options(nsec3: Option<Nsec3Config>) -> SecureOptions {
    SecureOptions::ecdsa(nsec3)
}

struct Fixture {
    db: TestZoneDb,
    server: ServerProcess,
    keys: Vec<DNSKEY>,
}

/// A database holding `example.com.` (`text`) secured with `nsec3`, and
/// the zones of `others` (unsigned).
fn secured_db(
    tag: &str,
    text: &str,
    others: &[(&str, &str)],
    nsec3: Option<Nsec3Config>,
) -> TestZoneDb {
    block_on(async {
        let db = TestZoneDb::new(tag).await;
        db.import("example.com.", text, false).await;
        for (zone, text) in others {
            db.import(zone, text, false).await;
        }
        let zone: Name = "example.com.".parse().unwrap();
        signer::secure_zone(&db.store, &zone, &secure_options(nsec3), &NoProgress)
            .await
            .expect("secure-zone");
        db
    })
}

/// The DNSKEY records `example.com.` publishes, once the server serves them.
fn published_keys(port: u16) -> Vec<DNSKEY> {
    let m = ask_until(port, "example.com.", 48, |m| !m.answers.is_empty());
    m.answers
        .iter()
        .filter_map(|r| match &r.data {
            RData::DNSSEC(DNSSECRData::DNSKEY(k)) => Some(k.clone()),
            _ => None,
        })
        .collect()
}

fn fixture(tag: &str, nsec3: Option<Nsec3Config>) -> Fixture {
    let db = secured_db(tag, ZONE, &[], nsec3);
    let server = ServerProcess::start(&db.name, &[]);
    let keys = published_keys(server.port);
    assert_eq!(keys.len(), 2, "a KSK and a ZSK are published");
    Fixture { db, server, keys }
}

impl Fixture {
    fn done(self) {
        drop(self.server);
        block_on(self.db.drop_db());
    }
}

fn rrsigs(records: &[Record]) -> Vec<&Record> {
    records
        .iter()
        .filter(|r| r.record_type() == RecordType::RRSIG)
        .collect()
}

/// Verifies every RRSIG in `records` over the RRset it covers (same owner,
/// same section) with the key of its tag; returns how many were checked.
/// Panics on a bad signature, an unknown key or a missing RRset.
fn verify_section(records: &[Record], keys: &[DNSKEY]) -> usize {
    let mut n = 0;
    for sig_record in rrsigs(records) {
        let RData::DNSSEC(DNSSECRData::RRSIG(sig)) = &sig_record.data else {
            panic!("RRSIG record does not parse as one");
        };
        let input = sig.input();
        let key = keys
            .iter()
            .find(|k| k.calculate_key_tag().unwrap() == input.key_tag)
            .unwrap_or_else(|| panic!("no DNSKEY with tag {}", input.key_tag));
        let covered: Vec<&Record> = records
            .iter()
            .filter(|r| r.name == sig_record.name && r.record_type() == input.type_covered)
            .collect();
        assert!(
            !covered.is_empty(),
            "RRSIG for {} {:?} without its RRset",
            sig_record.name,
            input.type_covered
        );
        key.verify_rrsig(
            &sig_record.name,
            sig_record.dns_class,
            sig,
            covered.into_iter(),
        )
        .unwrap_or_else(|e| {
            panic!(
                "bad RRSIG over {} {:?}: {e}",
                sig_record.name, input.type_covered
            )
        });
        n += 1;
    }
    n
}

/// Every RRset of `records` has an RRSIG, except those of `unsigned` types.
fn assert_all_signed(records: &[Record], unsigned: &[RecordType]) {
    for r in records {
        let t = r.record_type();
        if t == RecordType::RRSIG || unsigned.contains(&t) {
            continue;
        }
        let signed = rrsigs(records).iter().any(|s| match &s.data {
            RData::DNSSEC(DNSSECRData::RRSIG(sig)) => {
                s.name == r.name && sig.input().type_covered == t
            }
            _ => false,
        });
        assert!(signed, "{} {t:?} has no RRSIG", r.name);
    }
}

fn no_dnssec(m: &Message) {
    for r in m.answers.iter().chain(&m.authorities).chain(&m.additionals) {
        assert!(
            !matches!(
                r.record_type(),
                RecordType::RRSIG | RecordType::NSEC | RecordType::NSEC3
            ),
            "DNSSEC record without DO: {r}"
        );
    }
}

fn name(s: &str) -> Name {
    s.parse().unwrap()
}

fn mname(n: &hickory_proto::rr::Name) -> Name {
    n.to_ascii().parse().unwrap()
}

/// The NSECs of a section as (owner, next, types).
fn nsecs(records: &[Record]) -> Vec<(Name, Name, Vec<RecordType>)> {
    records
        .iter()
        .filter_map(|r| match &r.data {
            RData::DNSSEC(DNSSECRData::NSEC(n)) => Some((
                mname(&r.name),
                mname(n.next_domain_name()),
                n.type_bit_maps().collect(),
            )),
            _ => None,
        })
        .collect()
}

/// True when some NSEC covers `n` (owner < n < next, canonical order, with
/// the last one wrapping to the apex).
fn covered(list: &[(Name, Name, Vec<RecordType>)], n: &Name) -> bool {
    list.iter()
        .any(|(owner, next, _)| owner < n && (n < next || next <= owner))
}

/// The NSEC3 records of a section as (owner hash label, next hash, opt-out, types).
fn nsec3s(records: &[Record]) -> Vec<(String, String, bool, Vec<RecordType>)> {
    records
        .iter()
        .filter_map(|r| match &r.data {
            RData::DNSSEC(DNSSECRData::NSEC3(n)) => Some((
                mname(&r.name)
                    .to_string()
                    .split('.')
                    .next()
                    .unwrap()
                    .to_string(),
                base32hex(n.next_hashed_owner_name()),
                n.opt_out(),
                n.type_bit_maps().collect(),
            )),
            _ => None,
        })
        .collect()
}

/// A full `resign` finds nothing to change: what was signed before it is
/// exactly what signing the whole zone from scratch gives.
/// (A signing pass without the lease: `resign --follow` may hold it.)
fn assert_fully_signed(f: &Fixture) {
    let zone = name("example.com.");
    let (again, _) = block_on(async {
        let served = f.db.store.find_zone(&zone).await.unwrap().unwrap();
        signer::resign_version(
            &f.db.store,
            &zone,
            served.ver,
            None,
            false,
            false,
            &Validity::default(),
            2,
            &NoProgress,
        )
        .await
    })
    .unwrap();
    assert_eq!(
        (again.written, again.stats.signed),
        (0, 0),
        "a full re-sign still had work to do"
    );
}
