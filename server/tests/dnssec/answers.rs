//! What signed replies hold: every RRSIG verified, NSEC and NSEC3 denials
//! covering what they must, nothing DNSSEC without DO, and the differential
//! suite's signed findings.
//!
//! ```text
//!  ask (DO=1 / DO=0) ─► positive, NXDOMAIN, NODATA, wildcard, referral
//!     ─► verify_section + covered / nsec3s matched by hash
//!  qtype=RRSIG, additional addresses, DS at a child's apex, truncation
//!     ─► as Knot DNS and NSD answer
//! ```

use super::*;

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
