//! Writes into secured zones: an interrupted `secure-zone` exposes nothing,
//! imports are signed, and merge batches are signed before they are visible.
//!
//! ```text
//!  secure-zone killed midway ─► nothing served from it ─► a re-run completes
//!  merge / replace import into a secured zone ─► signed, change record marked
//!  merge batch written ─► (before publishing) every answer about it validates
//! ```

use super::*;

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
    let dnskey = NodeWrite {
        name: zone.clone(),
        rrsets: vec![RRset {
            rtype: RType::DNSKEY,
            ttl: 3600,
            rdata: vec![vec![1, 1, 3, 13, 9, 9].into_boxed_slice()],
        }],
    };
    block_on(async {
        let replace = db.store.begin_zone_write(&zone, WriteMode::Replace);
        let writer = replace.await.unwrap();
        writer.write_nodes(&[dnskey]).await.unwrap();
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
