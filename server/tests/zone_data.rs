//! Hostile zone data against the real importer, the real database and the
//! real server binary: names over 255 octets are refused at import, and
//! malformed nodes written straight into the database give SERVFAIL for
//! their names (never a panic) while the rest of the zone is served.

use backend_mongo::dnssec_store::Nsec3Config;
use backend_mongo::schema::{binary, node_doc, node_id, NODES};
use backend_mongo::testing::long_wire_name;
use dns::{Name, RRset, RType};
use hickory_proto::op::{Message, ResponseCode};
use hickory_proto::rr::RecordType;
use mongodb::bson::{doc, Document};
use mongodns_testkit::*;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

const ZONE: &str = "$ORIGIN bad.test.\n$TTL 300\n@ IN SOA ns admin 1 3600 600 86400 60\n@ IN NS ns\nns IN A 192.0.2.1\nwww IN A 192.0.2.2\n";

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn a_name_over_255_octets_is_refused_by_the_importer() {
    block_on(async {
        let db = TestZoneDb::new("longname").await;
        // A CNAME target of 256 octets, in the `\#` form.
        let long = long_wire_name(256);
        let text = format!("{ZONE}x IN CNAME \\# 256 {}\n", hex(&long));
        let err = db.try_import("bad.test.", &text, false).await.unwrap_err();
        let message = err.to_string();
        assert!(message.contains(":7:"), "names line 7: {message}");
        assert!(message.contains("name longer than 255"), "{message}");
        // 255 octets is the longest name and is accepted.
        let ok = format!("{ZONE}x IN CNAME \\# 255 {}\n", hex(&long_wire_name(255)));
        db.import("bad.test.", &ok, false).await;
        db.drop_db().await;
    });
}

/// `rtype` at `owner` with one record `rd`, written straight into the
/// database into the served version of `bad.test.`.
async fn write_raw(db: &TestZoneDb, owner: &str, rtype: RType, rd: &[u8]) {
    let apex: Name = "bad.test.".parse().unwrap();
    let zone = db.store.find_zone(&apex).await.unwrap().unwrap();
    let set = RRset {
        rtype,
        ttl: 300,
        rdata: vec![rd.into()],
    };
    let owner: Name = owner.parse().unwrap();
    let doc = node_doc(&apex, zone.ver, &owner, &[set]);
    let nodes = db.store.database().collection::<Document>(NODES);
    nodes.insert_one(doc).await.unwrap();
}

fn rcode_of(reply: Option<Vec<u8>>, what: &str) -> ResponseCode {
    let reply = reply.unwrap_or_else(|| panic!("{what}: no reply (a panic or a stalled worker)"));
    let m =
        Message::from_vec(&reply).unwrap_or_else(|e| panic!("{what}: reply does not parse: {e}"));
    m.metadata.response_code
}

#[test]
fn malformed_stored_nodes_get_servfail_and_the_rest_is_served() {
    let db = block_on(async {
        let db = TestZoneDb::new("rawbad").await;
        db.import("bad.test.", ZONE, false).await;
        write_raw(&db, "long.bad.test.", RType::CNAME, &long_wire_name(256)).await;
        write_raw(&db, "ptr.bad.test.", RType::CNAME, &[0xC0, 0x0C]).await;
        let mut soa = b"\x02ns\x00\x05admin\x00".to_vec();
        soa.extend_from_slice(&[0, 0, 0, 1, 0, 0]); // 6 of the 20 timer octets
        write_raw(&db, "soa.bad.test.", RType::SOA, &soa).await;
        write_raw(&db, "mx.bad.test.", RType::MX, b"\x00\x0a\x04mail").await;
        write_raw(&db, "a.bad.test.", RType::A, &[192, 0, 2]).await;
        db
    });
    let server = ServerProcess::start(
        &db.name,
        &["--axfr-allow", "127.0.0.0/8", "--query-timeout-ms", "3000"],
    );
    let port = server.port;
    let wait = Duration::from_secs(5);
    for (name, qtype) in [
        ("long.bad.test.", 1),
        ("long.bad.test.", 5),
        ("ptr.bad.test.", 5),
        ("soa.bad.test.", 6),
        ("mx.bad.test.", 15),
        ("a.bad.test.", 1),
        ("below.long.bad.test.", 1),
    ] {
        let q = build_query(7, name, qtype, Some((1232, false)), false);
        let udp = rcode_of(udp_exchange(port, &q, wait), &format!("{name}/{qtype} UDP"));
        assert_eq!(udp, ResponseCode::ServFail, "{name}/{qtype} over UDP");
        let tcp = rcode_of(Some(tcp_exchange(port, &q)), &format!("{name}/{qtype} TCP"));
        assert_eq!(tcp, ResponseCode::ServFail, "{name}/{qtype} over TCP");
        // Every other name is still served.
        let m = ask_udp(port, "www.bad.test.", 1, None);
        assert_eq!(m.metadata.response_code, ResponseCode::NoError);
        assert_eq!(lines(&m.answers), vec!["www.bad.test. 300 A 192.0.2.2"]);
        let m = ask_udp(port, "nothere.bad.test.", 1, None);
        assert_eq!(m.metadata.response_code, ResponseCode::NXDomain);
    }
    // A transfer of the zone fails cleanly, no hang: the SOA (sent before
    // the nodes are read), then the connection closed without the closing
    // SOA, never a transfer that looks complete.
    let (soas, end) = axfr_until_closed(port, "bad.test.");
    assert!(soas < 2, "no closing SOA");
    assert!(
        matches!(end, ErrorKind::UnexpectedEof | ErrorKind::ConnectionReset),
        "closed, not timed out: {end:?}"
    );
    assert!(
        std::path::Path::new(&format!("/proc/{}", server.pid())).exists(),
        "the server is still running"
    );
    let m = ask_tcp(port, "ns.bad.test.", 1, None);
    assert_eq!(m.metadata.response_code, ResponseCode::NoError);
    drop(server);
    block_on(db.drop_db());
}

/// Reads an AXFR of `zone` until the connection ends: (SOA records seen,
/// how it ended). A SERVFAIL or a closing SOA ends it too (`Other`).
fn axfr_until_closed(port: u16, zone: &str) -> (usize, ErrorKind) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let q = build_query(9, zone, 252, None, false);
    let mut framed = (q.len() as u16).to_be_bytes().to_vec();
    framed.extend_from_slice(&q);
    s.write_all(&framed).unwrap();
    let mut soas = 0;
    loop {
        let mut len = [0u8; 2];
        if let Err(e) = s.read_exact(&mut len) {
            return (soas, e.kind());
        }
        let mut m = vec![0u8; usize::from(u16::from_be_bytes(len))];
        if let Err(e) = s.read_exact(&mut m) {
            return (soas, e.kind());
        }
        let m = Message::from_vec(&m).expect("a message that parses");
        let soa = m
            .answers
            .iter()
            .filter(|r| r.record_type() == RecordType::SOA);
        soas += soa.count();
        if m.metadata.response_code != ResponseCode::NoError || soas >= 2 {
            return (soas, ErrorKind::Other);
        }
    }
}

/// `bad.test.` secured with NSEC3 (0 iterations), then its apex NSEC3PARAM
/// rewritten in the database to ask for 65,535 iterations.
async fn zone_with_huge_iterations(db: &TestZoneDb) {
    db.import("bad.test.", ZONE, false).await;
    let apex: Name = "bad.test.".parse().unwrap();
    let options = signer::SecureOptions {
        algorithm: 13,
        csk: false,
        nsec3: Some(Nsec3Config {
            iterations: 0,
            salt: Vec::new(),
            opt_out: false,
        }),
        cds: false,
        validity: signer::Validity::default(),
        threads: 1,
        grace: Duration::ZERO,
    };
    signer::secure_zone(&db.store, &apex, &options, &signer::NoProgress)
        .await
        .expect("secure-zone");
    let zone = db.store.find_zone(&apex).await.unwrap().unwrap();
    let nodes = db.store.database().collection::<Document>(NODES);
    let param = binary(&[1, 0, 0xff, 0xff, 0]);
    let done = nodes
        .update_one(
            doc! {"_id": node_id(&apex, zone.ver, &apex)},
            doc! {"$set": {"rrsets.NSEC3PARAM.rd": [param]}},
        )
        .await
        .unwrap();
    assert_eq!(done.modified_count, 1);
}

#[test]
fn an_nsec3param_with_huge_iterations_is_not_hashed() {
    let db = block_on(async {
        let db = TestZoneDb::new("iters").await;
        zone_with_huge_iterations(&db).await;
        db
    });
    let server = ServerProcess::start(&db.name, &[]);
    let port = server.port;
    let started = Instant::now();
    let askers: Vec<_> = (0..20)
        .map(|i| {
            std::thread::spawn(move || {
                let name = format!("missing{i}.bad.test.");
                let q = build_query(i, &name, 1, Some((1232, true)), false);
                rcode_of(udp_exchange(port, &q, Duration::from_secs(10)), &name)
            })
        })
        .collect();
    for asker in askers {
        // A proof would need 65,536 SHA-1 rounds per hash: refused.
        assert_eq!(asker.join().unwrap(), ResponseCode::ServFail);
    }
    println!(
        "20 DO=1 NXDOMAIN questions in a 65,535-iteration zone: {:?}",
        started.elapsed()
    );
    // Answers that need no hash are served, signed; without DO, all are.
    let m = ask_udp(port, "www.bad.test.", 1, Some((1232, true)));
    assert_eq!(m.metadata.response_code, ResponseCode::NoError);
    assert_eq!(m.answers.len(), 2, "the A and its RRSIG");
    let m = ask_udp(port, "missing.bad.test.", 1, None);
    assert_eq!(m.metadata.response_code, ResponseCode::NXDomain);
    drop(server);
    block_on(db.drop_db());
}
