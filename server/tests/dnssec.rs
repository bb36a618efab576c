//! DNSSEC end to end: zones imported and secured in a real database, served
//! by the real binary, every signature in the replies checked with
//! hickory-proto's verifier (an implementation independent of ours), and
//! every denial checked to cover what it must.

use backend_mongo::dnssec_store::Nsec3Config;
use backend_mongo::{Name, NodeWrite, RRset, RType, WriteMode};
use dns::dnssec::nsec3_hash;
use dns::encoding::base32hex;
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

#[test]
fn nsec_answers_are_signed_and_denials_proven_only_with_do() {
    let f = fixture("dnssec_nsec", None);
    let port = f.server.port;
    let keys = &f.keys;

    // Positive answer: the A RRset and its RRSIG, verified.
    let m = ask_udp(port, "www.example.com.", 1, DO);
    assert_eq!(m.metadata.response_code, ResponseCode::NoError);
    assert_eq!(verify_section(&m.answers, keys), 1);
    assert_eq!(m.answers.len(), 3);
    // Without DO, and without EDNS: nothing of DNSSEC.
    no_dnssec(&ask_udp(port, "www.example.com.", 1, Some((4096, false))));
    no_dnssec(&ask_udp(port, "www.example.com.", 1, None));
    no_dnssec(&ask_udp(
        port,
        "nothing.example.com.",
        1,
        Some((4096, false)),
    ));

    // The DNSKEY RRset is signed by the KSK.
    let m = ask_tcp(port, "example.com.", 48, DO);
    assert_eq!(verify_section(&m.answers, keys), 1);
    let ksk = keys.iter().find(|k| k.flags() == 257).unwrap();
    let sig_tag = match &rrsigs(&m.answers)[0].data {
        RData::DNSSEC(DNSSECRData::RRSIG(s)) => s.input().key_tag,
        _ => unreachable!(),
    };
    assert_eq!(sig_tag, ksk.calculate_key_tag().unwrap());

    // CNAME: both steps signed.
    let m = ask_udp(port, "web.example.com.", 1, DO);
    assert_eq!(verify_section(&m.answers, keys), 2);
    assert_all_signed(&m.answers, &[]);

    // NXDOMAIN: SOA and NSECs signed; the name and the wildcard are covered.
    let m = ask_udp(port, "nothing.example.com.", 1, DO);
    assert_eq!(m.metadata.response_code, ResponseCode::NXDomain);
    assert!(verify_section(&m.authorities, keys) >= 2);
    assert_all_signed(&m.authorities, &[]);
    let list = nsecs(&m.authorities);
    assert!(covered(&list, &name("nothing.example.com.")), "{list:?}");
    assert!(covered(&list, &name("*.example.com.")), "{list:?}");

    // NODATA: the NSEC at the name, without the type.
    let m = ask_udp(port, "www.example.com.", 16, DO);
    assert_eq!(m.metadata.response_code, ResponseCode::NoError);
    assert!(m.answers.is_empty());
    verify_section(&m.authorities, keys);
    assert_all_signed(&m.authorities, &[]);
    let list = nsecs(&m.authorities);
    let at = list.iter().find(|(o, _, _)| *o == name("www.example.com."));
    let (_, _, types) = at.expect("NSEC at www");
    assert!(types.contains(&RecordType::A) && !types.contains(&RecordType::TXT));

    // NODATA at an empty non-terminal: an NSEC whose next name is below it.
    let m = ask_udp(port, "b.c.example.com.", 1, DO);
    assert_eq!(m.metadata.response_code, ResponseCode::NoError);
    verify_section(&m.authorities, keys);
    let list = nsecs(&m.authorities);
    assert!(
        list.iter().any(|(o, next, _)| *o < name("b.c.example.com.")
            && next.is_subdomain_of(&name("b.c.example.com."))),
        "{list:?}"
    );

    // Wildcard answer: the RRSIG's label count reveals the wildcard, and an
    // NSEC proves the name itself does not exist.
    let m = ask_udp(port, "foo.wild.example.com.", 1, DO);
    assert_eq!(verify_section(&m.answers, keys), 1);
    match &rrsigs(&m.answers)[0].data {
        RData::DNSSEC(DNSSECRData::RRSIG(s)) => assert_eq!(s.input().num_labels, 3),
        _ => unreachable!(),
    }
    verify_section(&m.authorities, keys);
    assert!(covered(
        &nsecs(&m.authorities),
        &name("foo.wild.example.com.")
    ));

    // Wildcard NODATA: the name covered, and the wildcard's own NSEC.
    let m = ask_udp(port, "foo.wild.example.com.", 16, DO);
    verify_section(&m.authorities, keys);
    let list = nsecs(&m.authorities);
    assert!(covered(&list, &name("foo.wild.example.com.")));
    assert!(list
        .iter()
        .any(|(o, _, _)| *o == name("*.wild.example.com.")));

    // Referral to a signed child: NS (unsigned), DS with RRSIG.
    let m = ask_udp(port, "www.secure.example.com.", 1, DO);
    assert!(!m.metadata.authoritative);
    verify_section(&m.authorities, keys);
    let types: Vec<RecordType> = m.authorities.iter().map(|r| r.record_type()).collect();
    assert!(types.contains(&RecordType::NS) && types.contains(&RecordType::DS));
    assert_all_signed(&m.authorities, &[RecordType::NS]);
    assert!(m
        .additionals
        .iter()
        .all(|r| r.record_type() != RecordType::RRSIG));

    // Referral to an unsigned child: the NSEC at the cut proves no DS.
    let m = ask_udp(port, "www.open.example.com.", 1, DO);
    verify_section(&m.authorities, keys);
    let list = nsecs(&m.authorities);
    let (_, _, types) = list
        .iter()
        .find(|(o, _, _)| *o == name("open.example.com."))
        .expect("NSEC at the cut");
    assert!(types.contains(&RecordType::NS) && !types.contains(&RecordType::DS));

    f.done();
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

#[test]
fn nsec3_denials_match_and_cover_the_right_hashes() {
    let cfg = Nsec3Config {
        iterations: 1,
        salt: vec![0xab, 0xcd],
        opt_out: false,
    };
    let f = fixture("dnssec_nsec3", Some(cfg.clone()));
    let port = f.server.port;
    let keys = &f.keys;
    let h = |n: &str| base32hex(&nsec3_hash(&name(n), &cfg.salt, cfg.iterations));
    let matches = |list: &[(String, String, bool, Vec<RecordType>)], n: &str| {
        list.iter().any(|(o, _, _, _)| *o == h(n))
    };
    let covers = |list: &[(String, String, bool, Vec<RecordType>)], n: &str| {
        let x = h(n);
        list.iter()
            .any(|(o, next, _, _)| (*o < x && x < *next) || (next <= o && (x > *o || x < *next)))
    };

    // NXDOMAIN: closest encloser matched, next closer and wildcard covered.
    let m = ask_udp(port, "x.nothing.example.com.", 1, DO);
    assert_eq!(m.metadata.response_code, ResponseCode::NXDomain);
    verify_section(&m.authorities, keys);
    assert_all_signed(&m.authorities, &[]);
    let list = nsec3s(&m.authorities);
    assert!(matches(&list, "example.com."), "{list:?}");
    assert!(covers(&list, "nothing.example.com."), "{list:?}");
    assert!(covers(&list, "*.example.com."), "{list:?}");
    assert!(!list.is_empty() && list.len() <= 3);

    // NODATA: the matching NSEC3, without the type.
    let m = ask_udp(port, "www.example.com.", 16, DO);
    verify_section(&m.authorities, keys);
    let list = nsec3s(&m.authorities);
    let (_, _, _, types) = list
        .iter()
        .find(|(o, _, _, _)| *o == h("www.example.com."))
        .unwrap();
    assert!(types.contains(&RecordType::A) && !types.contains(&RecordType::TXT));

    // An empty non-terminal has an NSEC3 of its own (empty bitmap).
    let m = ask_udp(port, "b.c.example.com.", 1, DO);
    let list = nsec3s(&m.authorities);
    let (_, _, _, types) = list
        .iter()
        .find(|(o, _, _, _)| *o == h("b.c.example.com."))
        .unwrap();
    assert!(types.is_empty());

    // Wildcard answer: the next closer name is covered.
    let m = ask_udp(port, "foo.wild.example.com.", 1, DO);
    assert_eq!(verify_section(&m.answers, keys), 1);
    verify_section(&m.authorities, keys);
    assert!(covers(&nsec3s(&m.authorities), "foo.wild.example.com."));

    // Wildcard NODATA: closest encloser, next closer, and the wildcard itself.
    let m = ask_udp(port, "foo.wild.example.com.", 16, DO);
    verify_section(&m.authorities, keys);
    let list = nsec3s(&m.authorities);
    assert!(matches(&list, "wild.example.com."));
    assert!(covers(&list, "foo.wild.example.com."));
    assert!(matches(&list, "*.wild.example.com."));

    // No DS at an unsigned delegation: the NSEC3 matching the cut.
    let m = ask_udp(port, "www.open.example.com.", 1, DO);
    verify_section(&m.authorities, keys);
    let list = nsec3s(&m.authorities);
    let (_, _, _, types) = list
        .iter()
        .find(|(o, _, _, _)| *o == h("open.example.com."))
        .unwrap();
    assert!(types.contains(&RecordType::NS) && !types.contains(&RecordType::DS));

    // The NSEC3 owner names themselves are not names of the zone.
    let hashed = format!("{}.example.com.", h("www.example.com."));
    let m = ask_udp(port, &hashed, 1, DO);
    assert_eq!(m.metadata.response_code, ResponseCode::NXDomain);
    f.done();
}

#[test]
fn an_interrupted_secure_zone_exposes_nothing_and_a_rerun_completes() {
    let db = block_on(async {
        let db = TestZoneDb::new("dnssec_rerun").await;
        db.import("example.com.", ZONE, false).await;
        db
    });
    let server = ServerProcess::start(&db.name, &[]);
    let zone = name("example.com.");
    // A run killed midway: a new version half written, with a DNSKEY, never
    // switched to.
    block_on(async {
        let writer = db
            .store
            .begin_zone_write(&zone, WriteMode::Replace)
            .await
            .unwrap();
        writer
            .write_nodes(&[NodeWrite {
                name: zone.clone(),
                rrsets: vec![RRset {
                    rtype: RType::DNSKEY,
                    ttl: 3600,
                    rdata: vec![vec![1, 1, 3, 13, 9, 9].into_boxed_slice()],
                }],
            }])
            .await
            .unwrap();
        drop(writer);
    });
    // Resolvers see the zone unsigned: no DNSKEY, no RRSIG, no NSEC.
    let m = ask_udp(server.port, "example.com.", 48, DO);
    assert!(m.answers.is_empty());
    no_dnssec(&m);
    no_dnssec(&ask_udp(server.port, "nothing.example.com.", 1, DO));
    // The re-run completes, and the zone is signed from then on.
    block_on(async {
        signer::secure_zone(&db.store, &zone, &secure_options(None), &NoProgress)
            .await
            .expect("re-run");
    });
    let keys = published_keys(server.port);
    assert_eq!(keys.len(), 2);
    let m = ask_udp(server.port, "www.example.com.", 1, DO);
    assert_eq!(verify_section(&m.answers, &keys), 1);
    // Running it again changes keys not at all.
    block_on(async {
        signer::secure_zone(&db.store, &zone, &secure_options(None), &NoProgress)
            .await
            .unwrap();
        assert_eq!(db.store.zone_keys(&zone).await.unwrap().len(), 2);
    });
    drop(server);
    block_on(db.drop_db());
}

/// The RRSIG rdata stored for `rtype` at `owner`.
async fn stored_sigs(db: &TestZoneDb, owner: &str, rtype: RType) -> Vec<Box<[u8]>> {
    let zone = db
        .store
        .find_zone(&name("example.com."))
        .await
        .unwrap()
        .unwrap();
    let node = db
        .store
        .get_node(&zone, &name(owner))
        .await
        .unwrap()
        .unwrap();
    node.rrsig(rtype)
        .map(|s| s.rdata.clone())
        .unwrap_or_default()
}

/// `resign --follow` on the fixture's zone (polling every 100 ms) in the
/// background, reporting to `reports`, until the returned `Notify` fires.
fn spawn_follower(
    f: &Fixture,
    reports: Reports,
) -> (
    std::sync::Arc<tokio::sync::Notify>,
    tokio::task::JoinHandle<Result<(), signer::SignError>>,
) {
    let stop = std::sync::Arc::new(tokio::sync::Notify::new());
    let store = f.db.store.clone();
    let notified = stop.clone();
    let follower = runtime().spawn(async move {
        let zone = name("example.com.");
        let validity = Validity::default();
        let run = signer::follow(
            &store,
            &zone,
            &validity,
            1,
            Duration::from_millis(100),
            Duration::from_secs(3600),
            &reports,
        );
        tokio::select! {
            r = run => r,
            _ = notified.notified() => Ok(()),
        }
    });
    (stop, follower)
}

/// Adds records the way any schema-following writer would, without signing.
async fn unsigned_merge(db: &TestZoneDb, owner: &str, rdata: [u8; 4]) {
    let node = NodeWrite {
        name: name(owner),
        rrsets: vec![RRset {
            rtype: RType::A,
            ttl: 3600,
            rdata: vec![Box::new(rdata)],
        }],
    };
    backend_mongo::testing::merge_as_foreign_writer(&db.store, &name("example.com."), &[node])
        .await
        .unwrap();
}

#[test]
fn resign_replaces_only_what_changed_and_follow_closes_the_gap() {
    let f = fixture("dnssec_resign", None);
    let zone = name("example.com.");
    let (www_before, mail_before) = block_on(async {
        (
            stored_sigs(&f.db, "www.example.com.", RType::A).await,
            stored_sigs(&f.db, "mail.example.com.", RType::A).await,
        )
    });
    assert_eq!(www_before.len(), 1);
    // Another writer adds a record to www and a new name, unsigned.
    block_on(async {
        unsigned_merge(&f.db, "www.example.com.", [192, 0, 2, 82]).await;
        unsigned_merge(&f.db, "new.example.com.", [192, 0, 2, 7]).await;
        let r = signer::resign(
            &f.db.store,
            &zone,
            false,
            &Validity::default(),
            2,
            &NoProgress,
        )
        .await
        .unwrap();
        assert!(r.written > 0);
        // www's signature is new, mail's is the same bytes.
        assert_ne!(
            stored_sigs(&f.db, "www.example.com.", RType::A).await,
            www_before
        );
        assert_eq!(
            stored_sigs(&f.db, "mail.example.com.", RType::A).await,
            mail_before
        );
        // A second run finds nothing to do and writes nothing.
        let again = signer::resign(
            &f.db.store,
            &zone,
            false,
            &Validity::default(),
            2,
            &NoProgress,
        )
        .await
        .unwrap();
        assert_eq!(again.written, 0);
        assert_eq!(again.stats.signed, 0);
        assert_eq!(again.serial, r.serial);
    });
    let m = ask_until(f.server.port, "www.example.com.", 1, |m| {
        m.answers.len() == 4
    });
    assert_eq!(verify_section(&m.answers, &f.keys), 1);
    let m = ask_udp(f.server.port, "new.example.com.", 1, DO);
    assert_eq!(verify_section(&m.answers, &f.keys), 1);
    let m = ask_udp(f.server.port, "nex.example.com.", 1, DO);
    verify_section(&m.authorities, &f.keys);
    assert!(covered(&nsecs(&m.authorities), &name("nex.example.com.")));

    // `resign --follow` signs other writers' changes as they land.
    let rt = runtime();
    let (stop, follower) = spawn_follower(&f, Reports::default());
    rt.block_on(unsigned_merge(&f.db, "later.example.com.", [192, 0, 2, 8]));
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let m = ask_udp(f.server.port, "later.example.com.", 1, DO);
        if m.answers.len() == 2 {
            assert_eq!(verify_section(&m.answers, &f.keys), 1);
            break;
        }
        assert!(
            Instant::now() < deadline,
            "--follow did not sign a new name in 20 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    stop.notify_one();
    rt.block_on(follower).unwrap().unwrap();
    f.done();
}

#[test]
fn imports_into_a_secured_zone_are_signed() {
    let f = fixture("dnssec_import", None);
    // A merge import adds names (and a record at the apex, whose NSEC
    // keeps listing DNSKEY); a replace import deletes one.
    let before = block_on(f.db.store.find_zone(&name("example.com.")))
        .unwrap()
        .unwrap()
        .gen;
    let merged = block_on(f.db.import(
        "example.com.",
        "$ORIGIN example.com.\n$TTL 300\n@ MX 20 mail\nadded A 192.0.2.44\nx.y.added2 TXT \"t\"\n",
        false,
    ));
    assert_fully_signed(&f);
    // Its change records (one per acknowledged batch, and the last one for
    // the SOA) list what it wrote, marked as signed: servers drop only
    // those names, `resign --follow` has nothing to do for them.
    let records = block_on(f.db.store.change_records(before + 1, merged.zone.gen)).unwrap();
    assert!(records.contains_key(&merged.zone.gen));
    let mut names = Vec::new();
    for record in records.values().filter(|r| r.zone == name("example.com.")) {
        assert!(record.signed);
        names.extend(record.names.clone().expect("names listed, not \"all\""));
    }
    for n in [
        "example.com.",
        "added.example.com.",
        "y.added2.example.com.",
    ] {
        assert!(names.contains(&name(n)), "{n} missing from {names:?}");
    }
    let m = ask_until(f.server.port, "added.example.com.", 1, |m| {
        !m.answers.is_empty()
    });
    assert_eq!(verify_section(&m.answers, &f.keys), 1);
    let m = ask_udp(f.server.port, "y.added2.example.com.", 1, DO);
    verify_section(&m.authorities, &f.keys);
    assert_all_signed(&m.authorities, &[]);
    let without_mail: String = ZONE
        .lines()
        .filter(|l| !l.starts_with("mail"))
        .collect::<Vec<_>>()
        .join("\n");
    block_on(f.db.import("example.com.", &without_mail, true));
    // The harness imports with no grace period: until the server notices the
    // new version it may read the old one while it is being deleted, so
    // wait for the new version's complete proof.
    let m = ask_until(f.server.port, "mail.example.com.", 1, |m| {
        m.metadata.response_code == ResponseCode::NXDomain
            && covered(&nsecs(&m.authorities), &name("mail.example.com."))
    });
    assert_eq!(m.metadata.response_code, ResponseCode::NXDomain);
    verify_section(&m.authorities, &f.keys);
    let list = nsecs(&m.authorities);
    assert!(covered(&list, &name("mail.example.com.")), "{list:?}");
    let m = ask_udp(f.server.port, "example.com.", 6, DO);
    assert_eq!(verify_section(&m.answers, &f.keys), 1);
    f.done();
}

/// Merge writes into a secured zone are signed before they are visible:
/// right after each batch is written, before the importer publishes
/// anything, every answer about the new and changed names validates.
fn merge_is_signed_before_visible(tag: &str, nsec3: Option<Nsec3Config>) {
    let f = fixture(tag, nsec3);
    let zone = name("example.com.");
    let mut merge = block_on(async {
        let served = f.db.store.find_zone(&zone).await.unwrap().unwrap();
        signer::merge::MergeSigner::new(&f.db.store, &zone, served.ver)
            .await
            .unwrap()
            .expect("the zone is secured")
    });
    let a = |owner: &str, rd: [u8; 4]| NodeWrite {
        name: name(owner),
        rrsets: vec![RRset {
            rtype: RType::A,
            ttl: 3600,
            rdata: vec![Box::new(rd)],
        }],
    };
    let ent = |owner: &str| NodeWrite {
        name: name(owner),
        rrsets: Vec::new(),
    };
    // Batch 1: a record added to www, new names side by side, a new name
    // under new empty non-terminals.
    block_on(merge.write_batch(
        &f.db.store,
        &[
            a("www.example.com.", [192, 0, 2, 82]),
            a("n1.example.com.", [192, 0, 2, 1]),
            a("n2.example.com.", [192, 0, 2, 2]),
            ent("q.p.example.com."),
            ent("p.example.com."),
            a("r.q.p.example.com.", [192, 0, 2, 3]),
        ],
    ))
    .unwrap();
    let port = f.server.port;
    let check = |qname: &str, qtype: u16, rcode: ResponseCode| {
        let m = ask_udp(port, qname, qtype, DO);
        assert_eq!(m.metadata.response_code, rcode, "{qname}");
        verify_section(&m.answers, &f.keys);
        verify_section(&m.authorities, &f.keys);
        assert_all_signed(&m.answers, &[]);
        assert_all_signed(&m.authorities, &[]);
        m
    };
    let m = check("www.example.com.", 1, ResponseCode::NoError);
    assert_eq!(m.answers.len(), 4, "three A records and their RRSIG");
    for n in ["n1.example.com.", "n2.example.com.", "r.q.p.example.com."] {
        assert_eq!(check(n, 1, ResponseCode::NoError).answers.len(), 2);
    }
    // Denials around the new names use the updated chain.
    let m = check("n15.example.com.", 1, ResponseCode::NXDomain);
    let m2 = check("q.p.example.com.", 1, ResponseCode::NoError);
    assert!(m2.answers.is_empty());
    if nsec3s(&m.authorities).is_empty() {
        let list = nsecs(&m.authorities);
        assert!(covered(&list, &name("n15.example.com.")), "{list:?}");
        assert!(
            !list
                .iter()
                .any(|(o, next, _)| *o < name("n1.example.com.") && name("n1.example.com.") < *next),
            "no NSEC may deny n1 any more: {list:?}"
        );
    }
    // Batch 2 adds a name between two names of batch 1.
    block_on(merge.write_batch(&f.db.store, &[a("n10.example.com.", [192, 0, 2, 10])])).unwrap();
    check("n10.example.com.", 1, ResponseCode::NoError);
    check("n11.example.com.", 1, ResponseCode::NXDomain);
    check("n1.example.com.", 16, ResponseCode::NoError);
    // The SOA with its new serial, signed, before the generation moves.
    block_on(async {
        let served = f.db.store.find_zone(&zone).await.unwrap().unwrap();
        let serial = merge.sign_soa(&f.db.store, served.serial).await.unwrap();
        assert!(backend_mongo::writer::serial_gt(serial, served.serial));
    });
    check("example.com.", 6, ResponseCode::NoError);
    f.done();
}

#[test]
fn merge_writes_are_signed_before_they_are_visible_nsec() {
    merge_is_signed_before_visible("dnssec_merge", None);
}

#[test]
fn merge_writes_are_signed_before_they_are_visible_nsec3() {
    merge_is_signed_before_visible(
        "dnssec_merge3",
        Some(Nsec3Config {
            iterations: 0,
            salt: Vec::new(),
            opt_out: false,
        }),
    );
}

// ---- The denial cache (docs/caches.md, "Denial records") ----

/// DO=1 questions answered with denial proofs: NXDOMAIN (below the apex
/// record, in the middle, past the last name: the wrap), NODATA (a name,
/// an empty non-terminal, the apex), wildcard answer and wildcard NODATA,
/// and a referral without DS.
const DENIALS: &[(&str, u16)] = &[
    ("x.nothing.example.com.", 1),
    ("nothing.example.com.", 1),
    ("0.example.com.", 1),
    ("nx1.example.com.", 1),
    ("nx2.example.com.", 28),
    ("zzz.example.com.", 1),
    ("www.example.com.", 16),
    ("b.c.example.com.", 1),
    ("example.com.", 16),
    ("foo.wild.example.com.", 1),
    ("foo.wild.example.com.", 16),
    ("www.open.example.com.", 1),
];

/// A server on `f`'s database with the packet cache off (so every answer
/// runs the pipeline and its denial lookups) and a control port.
fn pipeline_server(f: &Fixture, extra: &[&str]) -> (ServerProcess, u16) {
    let control = free_tcp_port();
    let listen = format!("127.0.0.1:{control}");
    let mut args = vec!["--packet-cache-entries", "0", "--control-listen", &listen];
    args.extend_from_slice(extra);
    let server = ServerProcess::start(&f.db.name, &args);
    ask_until(server.port, "example.com.", 48, |m| !m.answers.is_empty());
    (server, control)
}

fn raw_tcp(port: u16, qname: &str, qtype: u16) -> Vec<u8> {
    tcp_exchange(port, &build_query(0x0d0d, qname, qtype, DO, false))
}

fn denials_are_identical_with_the_cache_on_and_off(tag: &str, nsec3: Option<Nsec3Config>) {
    let f = fixture(tag, nsec3);
    let (cached, control) = pipeline_server(&f, &[]);
    let (uncached, _) = pipeline_server(&f, &["--no-cache"]);
    let mut after_first = 0;
    for round in 0..2 {
        for (qname, qtype) in DENIALS {
            let a = raw_tcp(cached.port, qname, *qtype);
            let b = raw_tcp(uncached.port, qname, *qtype);
            assert_eq!(
                a, b,
                "{qname} {qtype}, round {round}: cache on and off differ"
            );
            let m = Message::from_vec(&a).unwrap();
            assert!(
                verify_section(&m.authorities, &f.keys) > 0,
                "{qname} {qtype}"
            );
        }
        if round == 0 {
            after_first = stat(control, "denial_cache_misses");
            assert!(after_first > 0);
        }
    }
    // The second round read no denial record from the database.
    assert_eq!(stat(control, "denial_cache_misses"), after_first);
    assert!(stat(control, "denial_cache_hits") >= DENIALS.len() as u64);
    assert!(stat(control, "denial_cache_entries") > 0);
    f.done();
}

#[test]
fn denial_answers_are_identical_with_the_cache_on_and_off_nsec() {
    denials_are_identical_with_the_cache_on_and_off("denial_same_nsec", None);
}

#[test]
fn denial_answers_are_identical_with_the_cache_on_and_off_nsec3() {
    let cfg = Nsec3Config {
        iterations: 1,
        salt: vec![0xab, 0xcd],
        opt_out: false,
    };
    denials_are_identical_with_the_cache_on_and_off("denial_same_nsec3", Some(cfg));
}

/// The denial key space of a zone: names for NSEC, hashes for NSEC3.
struct Keys(Option<Nsec3Config>);

impl Keys {
    fn of(&self, n: &str) -> String {
        match &self.0 {
            Some(c) => base32hex(&nsec3_hash(&name(n), &c.salt, c.iterations)),
            None => name(n).canonical_key(),
        }
    }

    /// The (owner key, next key) of the records proving a reply.
    fn intervals(&self, m: &Message) -> Vec<(String, String)> {
        match &self.0 {
            Some(_) => nsec3s(&m.authorities)
                .into_iter()
                .map(|(o, n, _, _)| (o, n))
                .collect(),
            None => nsecs(&m.authorities)
                .into_iter()
                .map(|(o, n, _)| (o.canonical_key(), n.canonical_key()))
                .collect(),
        }
    }

    /// The interval of `list` strictly covering `n`'s key (wrapping).
    fn covering(&self, list: &[(String, String)], n: &str) -> Option<(String, String)> {
        let k = self.of(n);
        list.iter()
            .find(|(o, next)| (*o < k && k < *next) || (next <= o && (k > *o || k < *next)))
            .cloned()
    }

    /// A name `<prefix><i>.example.com.` whose key lies strictly inside (lo, hi).
    fn name_inside(&self, prefix: &str, lo: &str, hi: &str) -> String {
        (0..100_000)
            .map(|i| format!("{prefix}{i}.example.com."))
            .find(|n| {
                let k = self.of(n);
                if lo < hi {
                    lo < k.as_str() && k.as_str() < hi
                } else {
                    k.as_str() > lo || k.as_str() < hi
                }
            })
            .expect("a name in the interval")
    }
}

fn nxdomain_names_share_intervals(tag: &str, nsec3: Option<Nsec3Config>) {
    let f = fixture(tag, nsec3.clone());
    let keys = Keys(nsec3);
    let (server, control) = pipeline_server(&f, &["--freshness-ms", "100"]);
    let ask = |n: &str| {
        let m = ask_tcp(server.port, n, 1, DO);
        assert_eq!(m.metadata.response_code, ResponseCode::NXDomain, "{n}");
        verify_section(&m.authorities, &f.keys);
        assert_all_signed(&m.authorities, &[]);
        m
    };
    let first = "nx1.example.com.";
    let m = ask(first);
    let list = keys.intervals(&m);
    let (lo, hi) = keys.covering(&list, first).expect("the name is covered");
    // Another never-asked name in the same interval: its proof is the
    // same records, all cached, so no denial read at all.
    let second = keys.name_inside("nx9", &lo, &hi);
    let (hits, misses) = (
        stat(control, "denial_cache_hits"),
        stat(control, "denial_cache_misses"),
    );
    let m = ask(&second);
    assert_eq!(
        keys.covering(&keys.intervals(&m), &second),
        Some((lo.clone(), hi))
    );
    assert_eq!(
        stat(control, "denial_cache_misses"),
        misses,
        "no database read"
    );
    assert!(stat(control, "denial_cache_hits") >= hits + 2);

    // A merge import adds a name between the interval's owner and the
    // second name: the second name's proof must now be the new record.
    let added = keys.name_inside("nx0", &lo, &keys.of(&second));
    block_on(f.db.import(
        "example.com.",
        &format!("$ORIGIN example.com.\n$TTL 300\n{added} A 192.0.2.77\n"),
        false,
    ));
    let added_key = keys.of(&added);
    let m = ask_until(server.port, &second, 1, |m| {
        keys.covering(&keys.intervals(m), &second)
            .is_some_and(|(o, _)| o == added_key)
    });
    assert_eq!(m.metadata.response_code, ResponseCode::NXDomain);
    verify_section(&m.authorities, &f.keys);
    assert_all_signed(&m.authorities, &[]);
    let before_resign = lines(&m.authorities);

    // A re-sign (every RRset signed again, published at once): new
    // signatures, read again from the database, and still valid.
    let misses = stat(control, "denial_cache_misses");
    let zone = name("example.com.");
    block_on(async {
        signer::secure_zone(
            &f.db.store,
            &zone,
            &secure_options(keys.0.clone()),
            &NoProgress,
        )
        .await
        .expect("re-sign")
    });
    // The re-sign deletes the old version at once (no grace period here):
    // until the server notices the switch it may read that version while
    // it is being deleted, so wait for the new version's complete proof.
    let m = ask_until(server.port, &second, 1, |m| {
        lines(&m.authorities) != before_resign
            && keys
                .covering(&keys.intervals(m), &second)
                .is_some_and(|(o, _)| o == added_key)
    });
    verify_section(&m.authorities, &f.keys);
    assert_all_signed(&m.authorities, &[]);
    assert!(
        stat(control, "denial_cache_misses") > misses,
        "the re-sign voided the cache"
    );
    f.done();
}

#[test]
fn nxdomain_names_share_intervals_and_writes_void_them_nsec() {
    nxdomain_names_share_intervals("denial_interval_nsec", None);
}

#[test]
fn nxdomain_names_share_intervals_and_writes_void_them_nsec3() {
    let cfg = Nsec3Config {
        iterations: 1,
        salt: vec![0xab, 0xcd],
        opt_out: false,
    };
    nxdomain_names_share_intervals("denial_interval_nsec3", Some(cfg));
}

/// Every report `resign --follow` made, for the test to look at.
#[derive(Clone, Default)]
struct Reports(std::sync::Arc<std::sync::Mutex<Vec<signer::Report>>>);

impl signer::Progress for Reports {
    fn phase(&self, _: &str, _: u64) {}
    fn set(&self, _: u64) {}
    fn resigned(&self, _: &Name, report: &signer::Report, _: Duration) {
        self.0.lock().unwrap().push(report.clone());
    }
}

impl Reports {
    /// Waits (up to 30 s) for a report after the first `after` that wrote
    /// something, and returns it.
    fn wait_for_write(&self, after: usize) -> signer::Report {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let found = {
                let reports = self.0.lock().unwrap();
                let from = after.min(reports.len());
                reports[from..].iter().find(|r| r.written > 0).cloned()
            };
            if let Some(r) = found {
                return r;
            }
            assert!(Instant::now() < deadline, "--follow signed nothing in 30 s");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn len(&self) -> usize {
        self.0.lock().unwrap().len()
    }
}

/// Deletes a node the way a program writing to MongoDB directly would.
async fn unsigned_delete(db: &TestZoneDb, owner: &str) {
    let deleted = backend_mongo::testing::delete_nodes_as_foreign_writer(
        &db.store,
        &name("example.com."),
        &[name(owner)],
    )
    .await
    .unwrap();
    assert_eq!(deleted, 1, "{owner} was stored");
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

/// `resign --follow` signs other writers' additions and deletions by
/// reading only the names their change records list, and leaves the zone
/// exactly as a full re-sign would.
fn follow_reads_only_changed_names(tag: &str, nsec3: Option<Nsec3Config>) {
    let f = fixture(tag, nsec3);
    let zone = name("example.com.");
    let reports = Reports::default();
    let rt = runtime();
    let (stop, follower) = spawn_follower(&f, reports.clone());
    // The first pass is a full one (nothing to write: just secured).
    let deadline = Instant::now() + Duration::from_secs(30);
    while reports.len() == 0 {
        assert!(Instant::now() < deadline, "--follow never ran");
        std::thread::sleep(Duration::from_millis(50));
    }
    let before = reports.len();
    // New names (one below a new empty non-terminal) and a new record.
    block_on(async {
        unsigned_merge(&f.db, "www.example.com.", [192, 0, 2, 82]).await;
        unsigned_merge(&f.db, "m.example.com.", [192, 0, 2, 9]).await;
        // A schema-following writer adds the empty non-terminal too.
        let nodes = [
            NodeWrite {
                name: name("newent.example.com."),
                rrsets: Vec::new(),
            },
            NodeWrite {
                name: name("x.newent.example.com."),
                rrsets: vec![RRset {
                    rtype: RType::A,
                    ttl: 3600,
                    rdata: vec![Box::new([192, 0, 2, 10])],
                }],
            },
        ];
        backend_mongo::testing::merge_as_foreign_writer(&f.db.store, &zone, &nodes)
            .await
            .unwrap();
    });
    let r = reports.wait_for_write(before);
    assert!(
        r.nodes <= 8,
        "read {} nodes: more than the names changed",
        r.nodes
    );
    // Wait until every change is in (the writes may span two polls).
    let m = ask_until(f.server.port, "x.newent.example.com.", 1, |m| {
        m.answers.len() == 2
    });
    assert_eq!(verify_section(&m.answers, &f.keys), 1);
    let m = ask_until(f.server.port, "m.example.com.", 1, |m| m.answers.len() == 2);
    assert_eq!(verify_section(&m.answers, &f.keys), 1);
    let m = ask_until(f.server.port, "www.example.com.", 1, |m| {
        m.answers.len() == 4
    });
    assert_eq!(verify_section(&m.answers, &f.keys), 1);
    std::thread::sleep(Duration::from_millis(500));
    assert_fully_signed(&f);

    // A name deleted behind the signer's back leaves the chain.
    let before = reports.len();
    block_on(unsigned_delete(&f.db, "mail.example.com."));
    let r = reports.wait_for_write(before);
    assert!(r.nodes <= 2, "read {} nodes for one deletion", r.nodes);
    let m = ask_until(f.server.port, "mail.example.com.", 1, |m| {
        m.response_code == ResponseCode::NXDomain
    });
    assert!(verify_section(&m.authorities, &f.keys) >= 2);
    if !nsecs(&m.authorities).is_empty() {
        assert!(covered(&nsecs(&m.authorities), &name("mail.example.com.")));
    }
    std::thread::sleep(Duration::from_millis(500));
    assert_fully_signed(&f);
    stop.notify_one();
    rt.block_on(follower).unwrap().unwrap();
    f.done();
}

#[test]
fn follow_reads_only_changed_names_nsec() {
    follow_reads_only_changed_names("dnssec_follow_nsec", None);
}

#[test]
fn follow_reads_only_changed_names_nsec3() {
    follow_reads_only_changed_names(
        "dnssec_follow_nsec3",
        Some(Nsec3Config {
            salt: vec![0xab, 0xcd],
            iterations: 1,
            opt_out: false,
        }),
    );
}

/// A child zone served beside `example.com.` (whose DS it has).
const CHILD: &str = r#"
$ORIGIN secure.example.com.
$TTL 3600
@       IN SOA ns hostmaster ( 1 7200 900 1209600 300 )
        IN NS  ns
ns      IN A   192.0.2.54
"#;

/// Four MX targets in the zone: their addresses and RRSIGs fill the
/// additional section past what a small UDP reply holds.
const MANY_MX: &str = r#"
mx4     IN MX  10 m1
        IN MX  20 m2
        IN MX  30 m3
        IN MX  40 m4
m1      IN A   192.0.2.101
m2      IN A   192.0.2.102
m3      IN A   192.0.2.103
m4      IN A   192.0.2.104
"#;

/// What the differential suite's signed pass (docs/conformance.md) found
/// mongodns doing unlike Knot DNS and NSD, fixed: qtype=RRSIG answered with
/// the signatures (and a wildcard's proof), RRSIGs for additional-section
/// addresses, the DS at a child's apex with the parent's RRSIG, and no
/// partial authority section when a denial is truncated.
#[test]
fn signed_pass_findings_match_knot_and_nsd() {
    let db = secured_db(
        "dnssec_sdiff",
        &format!("{ZONE}{MANY_MX}"),
        &[("secure.example.com.", CHILD)],
        None,
    );
    let server = ServerProcess::start(&db.name, &[]);
    let port = server.port;
    let keys = published_keys(port);
    let covered_types = |records: &[Record]| -> Vec<RecordType> {
        let mut t: Vec<RecordType> = rrsigs(records)
            .iter()
            .map(|r| match &r.data {
                RData::DNSSEC(DNSSECRData::RRSIG(s)) => s.input().type_covered,
                _ => unreachable!(),
            })
            .collect();
        t.sort();
        t
    };

    // qtype=RRSIG: every signature at the name (A and NSEC), no SOA, with or
    // without DO (it is the question, not DNSSEC decoration).
    for edns in [DO, Some((4096, false)), None] {
        let m = ask_tcp(port, "www.example.com.", 46, edns);
        assert_eq!(m.metadata.response_code, ResponseCode::NoError);
        assert!(m.metadata.authoritative);
        assert_eq!(
            covered_types(&m.answers),
            vec![RecordType::A, RecordType::NSEC],
            "{m}"
        );
        assert_eq!(m.answers.len(), 2, "{m}");
        assert!(m.authorities.is_empty(), "{m}");
    }
    // At a CNAME: its signatures, the alias not followed.
    let m = ask_tcp(port, "web.example.com.", 46, DO);
    assert!(m
        .answers
        .iter()
        .all(|r| r.record_type() == RecordType::RRSIG));
    assert_eq!(
        covered_types(&m.answers),
        vec![RecordType::CNAME, RecordType::NSEC]
    );
    // Through a wildcard: the wildcard's signatures under the asked name,
    // and the NSEC proving the name itself does not exist.
    let m = ask_tcp(port, "foo.wild.example.com.", 46, DO);
    assert_eq!(
        covered_types(&m.answers),
        vec![RecordType::A, RecordType::NSEC]
    );
    assert!(m
        .answers
        .iter()
        .all(|r| mname(&r.name) == name("foo.wild.example.com.")));
    verify_section(&m.authorities, &keys);
    assert!(covered(
        &nsecs(&m.authorities),
        &name("foo.wild.example.com.")
    ));
    // A name without signatures (an empty non-terminal): NODATA as before.
    let m = ask_tcp(port, "c.example.com.", 46, DO);
    assert!(m.answers.is_empty());
    assert!(m
        .authorities
        .iter()
        .any(|r| r.record_type() == RecordType::SOA));

    // Additional section: the MX target's address with its RRSIG, verified.
    let m = ask_udp(port, "example.com.", 15, DO);
    assert_eq!(verify_section(&m.additionals, &keys), 1, "{m}");
    assert_all_signed(
        &m.additionals
            .iter()
            .filter(|r| r.record_type() != RecordType::OPT)
            .cloned()
            .collect::<Vec<_>>(),
        &[],
    );
    // Without DO: the address alone.
    no_dnssec(&ask_udp(port, "example.com.", 15, Some((4096, false))));
    // When they do not all fit, an address goes with its RRSIG or not at
    // all, at every size; at some size only some of the four fit.
    let mut partial = false;
    for size in (512..=1232).step_by(16) {
        let m = ask_udp(port, "mx4.example.com.", 15, Some((size, true)));
        assert!(!m.metadata.truncation, "size {size}: {m}");
        let addresses: Vec<Record> = m
            .additionals
            .iter()
            .filter(|r| r.record_type() == RecordType::A)
            .cloned()
            .collect();
        assert_eq!(
            covered_types(&m.additionals),
            vec![RecordType::A; addresses.len()],
            "size {size}: {m}"
        );
        verify_section(&m.additionals, &keys);
        let records: Vec<Record> = m
            .additionals
            .iter()
            .filter(|r| r.record_type() != RecordType::OPT)
            .cloned()
            .collect();
        assert_all_signed(&records, &[]);
        partial |= !addresses.is_empty() && addresses.len() < 4;
        if size == 1232 {
            assert_eq!(addresses.len(), 4, "{m}");
        }
    }
    assert!(partial, "no size left some addresses out");
    // Glue below a cut is not signed: none for it.
    let m = ask_udp(port, "www.open.example.com.", 1, DO);
    assert!(rrsigs(&m.additionals).is_empty());

    // DS at the apex of a child zone we also serve: the parent's DS and
    // the parent's RRSIG over it.
    let m = ask_udp(port, "secure.example.com.", 43, DO);
    assert_eq!(m.metadata.response_code, ResponseCode::NoError);
    assert_eq!(verify_section(&m.answers, &keys), 1, "{m}");
    assert_all_signed(&m.answers, &[]);

    // A denial that does not fit: TC and no authority records at all (no
    // half proof), as Knot and NSD; the whole proof over TCP.
    let long = format!("{0}.{0}.{0}.example.com.", "x".repeat(60));
    let m = ask_udp(port, &long, 1, Some((512, true)));
    assert_eq!(m.metadata.response_code, ResponseCode::NXDomain);
    assert!(m.metadata.truncation, "{m}");
    assert!(m.authorities.is_empty(), "{m}");
    let m = ask_tcp(port, &long, 1, DO);
    assert!(!m.metadata.truncation);
    assert!(verify_section(&m.authorities, &keys) >= 3, "{m}");

    drop(server);
    block_on(db.drop_db());
}
