//! Wire-level tests of the answers the differential suite compares with Knot
//! and NSD (docs/conformance.md), and of zone transfer: the real binary, a
//! real database, real sockets.
//!
//! ```text
//!  fixture: parent zone conf.test + child zone child.conf.test + big.test
//!  ask_udp / ask_tcp / raw packets ─► mongodns-server ─► every section checked
//!  transfer(): AXFR/IXFR over TCP, messages read until the closing SOA
//! ```

use hickory_proto::op::{Message, ResponseCode};
use hickory_proto::rr::RecordType;
use mongodns_testkit::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

const PARENT: &str = r#"
$ORIGIN conf.test.
$TTL 3600
@        SOA  ns1 hostmaster 2024010101 7200 900 1209600 300
@        NS   ns1
@        MX   10 mail
@        TXT  "apex"
@        A    192.0.2.1
ns1      A    192.0.2.53
mail     A    192.0.2.25
www      A    192.0.2.80
www      AAAA 2001:db8::80
www      TXT  "www"
to-child CNAME www.child
child    NS   ns1.child
child    DS   12345 13 2 0102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F20
ns1.child A   192.0.2.170
dn       DNAME target
www.target A  192.0.2.200
a.b.ent  A    192.0.2.100
"#;

const CHILD: &str = r#"
$ORIGIN child.conf.test.
$TTL 900
@        SOA  ns1 hostmaster 7 3600 600 86400 60
@        NS   ns1
ns1      A    192.0.2.170
www      A    192.0.2.171
"#;

struct Fixture {
    db: TestZoneDb,
    server: ServerProcess,
}

/// Transfers allowed to the tests explicitly (the default may deny them).
const LOOPBACK_TRANSFERS: &[&str] = &["--axfr-allow", "127.0.0.1/32"];

fn fixture(tag: &str, extra: &[&str]) -> Fixture {
    let db = block_on(async {
        let db = TestZoneDb::new(tag).await;
        db.import("conf.test.", PARENT, false).await;
        db.import("child.conf.test.", CHILD, false).await;
        db
    });
    let server = ServerProcess::start(&db.name, extra);
    Fixture { db, server }
}

impl Fixture {
    fn done(self) {
        drop(self.server);
        block_on(self.db.drop_db());
    }
}

fn rcode(m: &Message) -> ResponseCode {
    m.metadata.response_code
}

/// A query with class `qclass` (the harness builds class IN).
fn with_class(mut q: Vec<u8>, qclass: u16, edns: bool) -> Vec<u8> {
    let at = q.len() - 2 - if edns { 11 } else { 0 };
    q[at..at + 2].copy_from_slice(&qclass.to_be_bytes());
    q
}

/// Sends `query` over TCP and reads messages until the second SOA in the
/// answer sections (or the first message, if it is an error or a lone SOA).
fn transfer(port: u16, query: &[u8]) -> Vec<Message> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut framed = (query.len() as u16).to_be_bytes().to_vec();
    framed.extend_from_slice(query);
    stream.write_all(&framed).unwrap();
    let asked = Message::from_vec(query).expect("the query parses");
    let ixfr = asked.queries[0].query_type() == RecordType::IXFR;
    let mut out = Vec::new();
    let mut soas = 0;
    loop {
        let mut len = [0u8; 2];
        stream.read_exact(&mut len).unwrap();
        let mut buf = vec![0u8; u16::from_be_bytes(len) as usize];
        stream.read_exact(&mut buf).unwrap();
        let m = Message::from_vec(&buf).expect("transfer message parses");
        soas += m
            .answers
            .iter()
            .filter(|r| r.record_type() == RecordType::SOA)
            .count();
        // An IXFR answered by our SOA alone is one message of one record
        // (an AXFR's first message may hold the SOA alone too).
        let lone = out.is_empty()
            && (rcode(&m) != ResponseCode::NoError || (ixfr && m.answers.len() == 1));
        out.push(m);
        if soas >= 2 || lone {
            return out;
        }
    }
}

fn axfr_query(zone: &str, qtype: u16) -> Vec<u8> {
    build_query(0x0AF0, zone, qtype, None, false)
}

#[test]
fn any_dname_ds_and_chains_into_child_zones() {
    let f = fixture("conf_answers", &[]);
    let port = f.server.port;

    // ANY (RFC 8482): one RRset, the lowest type, over UDP and TCP alike.
    for m in [
        ask_udp(port, "www.conf.test.", 255, None),
        ask_tcp(port, "www.conf.test.", 255, None),
    ] {
        assert_eq!(rcode(&m), ResponseCode::NoError);
        assert!(m.metadata.authoritative);
        assert_eq!(lines(&m.answers), vec!["www.conf.test. 3600 A 192.0.2.80",]);
    }
    let m = ask_udp(port, "conf.test.", 255, None);
    assert_eq!(lines(&m.answers), vec!["conf.test. 3600 A 192.0.2.1"]);
    // ANY at an empty non-terminal is NODATA.
    let m = ask_udp(port, "b.ent.conf.test.", 255, None);
    assert_eq!(rcode(&m), ResponseCode::NoError);
    assert!(m.answers.is_empty());
    assert_eq!(m.authorities[0].record_type(), RecordType::SOA);

    // DS at the apex of a child zone we also serve: the parent's DS, AA.
    let m = ask_udp(port, "child.conf.test.", 43, None);
    assert_eq!(rcode(&m), ResponseCode::NoError);
    assert!(m.metadata.authoritative);
    assert_eq!(m.answers.len(), 1);
    assert_eq!(m.answers[0].record_type(), RecordType::DS);
    assert!(m.authorities.is_empty());
    // Everything else at the child apex comes from the child.
    let m = ask_udp(port, "child.conf.test.", 2, None);
    assert!(m.metadata.authoritative);
    assert_eq!(
        lines(&m.answers),
        vec!["child.conf.test. 900 NS ns1.child.conf.test."]
    );

    // A CNAME into the child zone is answered from the child, not referred.
    let m = ask_udp(port, "to-child.conf.test.", 1, None);
    assert_eq!(rcode(&m), ResponseCode::NoError);
    assert!(m.metadata.authoritative);
    assert_eq!(
        lines(&m.answers),
        vec![
            "to-child.conf.test. 3600 CNAME www.child.conf.test.",
            "www.child.conf.test. 900 A 192.0.2.171",
        ]
    );
    assert!(m.authorities.is_empty());

    // A CNAME question below a DNAME gets the synthesised CNAME only.
    let m = ask_udp(port, "nothing.dn.conf.test.", 5, None);
    assert_eq!(rcode(&m), ResponseCode::NoError);
    let got = lines(&m.answers);
    assert_eq!(got.len(), 2);
    assert!(got[0].starts_with("dn.conf.test. 3600 DNAME "), "{got:?}");
    assert_eq!(
        got[1],
        "nothing.dn.conf.test. 3600 CNAME nothing.target.conf.test."
    );
    assert!(m.authorities.is_empty());
    // Any other type follows it: here to a name that does not exist.
    let m = ask_udp(port, "nothing.dn.conf.test.", 1, None);
    assert_eq!(rcode(&m), ResponseCode::NXDomain);
    assert_eq!(m.authorities[0].record_type(), RecordType::SOA);

    // qtype OPT is an ordinary (empty) type: NODATA, not FORMERR.
    let m = ask_udp(port, "www.conf.test.", 41, None);
    assert_eq!(rcode(&m), ResponseCode::NoError);
    assert!(m.answers.is_empty());
    f.done();
}

#[test]
fn classes_edns_and_extended_errors() {
    let f = fixture("conf_edns", &[]);
    let port = f.server.port;
    let ask_raw = |q: &[u8]| {
        let raw = udp_exchange(port, q, Duration::from_secs(5)).expect("a reply");
        (raw.clone(), Message::from_vec(&raw).expect("parses"))
    };

    // Class ANY is answered with the IN data; the question keeps class 255.
    let (raw, m) = ask_raw(&with_class(
        build_query(1, "www.conf.test.", 1, None, false),
        255,
        false,
    ));
    assert_eq!(rcode(&m), ResponseCode::NoError);
    assert_eq!(m.answers.len(), 1);
    let qend = 12 + "www.conf.test.".len() + 1 + 4;
    assert_eq!(&raw[qend - 2..qend], &[0, 255]);
    // CHAOS (version.bind, id.server) and other classes: REFUSED.
    for name in ["version.bind.", "id.server.", "www.conf.test."] {
        for class in [3u16, 4, 254] {
            let (_, m) = ask_raw(&with_class(
                build_query(2, name, 16, None, false),
                class,
                false,
            ));
            assert_eq!(rcode(&m), ResponseCode::Refused, "{name} class {class}");
            assert!(m.answers.is_empty());
        }
    }

    // Outside our zones: REFUSED, with EDE 20 "Not Authoritative" under EDNS.
    let (raw, m) = ask_raw(&build_query(
        3,
        "example.org.",
        1,
        Some((1232, false)),
        false,
    ));
    assert_eq!(rcode(&m), ResponseCode::Refused);
    assert_eq!(&raw[raw.len() - 8..], &[0, 6, 0, 15, 0, 2, 0, 20]);
    let (_, m) = ask_raw(&build_query(3, "example.org.", 1, None, false));
    assert_eq!(rcode(&m), ResponseCode::Refused);
    assert!(m.edns.is_none(), "no OPT without EDNS in the query");

    // EDNS: unknown option ignored, unknown flags cleared, DO echoed.
    let mut q = build_query(4, "www.conf.test.", 1, Some((1232, true)), false);
    let len_at = q.len() - 2;
    q[len_at..].copy_from_slice(&7u16.to_be_bytes());
    q.extend_from_slice(&[0xFD, 0xE9, 0, 3, b'a', b'b', b'c']); // option 65001
    let z_at = q.len() - 7 - 4; // the flags word of the OPT TTL
    q[z_at] |= 0x40; // an unknown EDNS flag
    let (raw, m) = ask_raw(&q);
    assert_eq!(rcode(&m), ResponseCode::NoError);
    assert_eq!(m.answers.len(), 1);
    // The reply's OPT: size 1232, version 0, DO and nothing else, no options.
    assert_eq!(
        &raw[raw.len() - 11..],
        &[0, 0, 41, 4, 208, 0, 0, 0x80, 0, 0, 0]
    );
    // Version 1: BADVERS (extended rcode 1 in OPT, 0 in the header).
    let mut q = build_query(5, "www.conf.test.", 1, Some((1232, false)), false);
    let v_at = q.len() - 5;
    q[v_at] = 1;
    let (raw, _) = ask_raw(&q);
    assert_eq!(raw[3] & 0x0F, 0);
    assert_eq!(raw[raw.len() - 6], 1, "extended rcode 16 >> 4");
    f.done();
}

#[test]
fn axfr_and_ixfr_over_tcp() {
    // A zone big enough to need several transfer messages.
    let mut big = String::from(
        "$ORIGIN big.test.\n$TTL 300\n@ SOA ns hm 5 3600 600 86400 60\n@ NS ns\nns A 192.0.2.1\n",
    );
    for i in 0..1500 {
        big.push_str(&format!(
            "host{i} A 10.0.{}.{}\nhost{i} TXT \"record {i}\"\n",
            i / 250,
            i % 250 + 1
        ));
    }
    let db = block_on(async {
        let db = TestZoneDb::new("conf_axfr").await;
        db.import("conf.test.", PARENT, false).await;
        db.import("big.test.", &big, false).await;
        db
    });
    let server = ServerProcess::start(&db.name, LOOPBACK_TRANSFERS);
    let port = server.port;

    let messages = transfer(port, &axfr_query("big.test.", 252));
    assert!(messages.len() > 1, "a big zone takes several messages");
    let records: Vec<_> = messages.iter().flat_map(|m| m.answers.iter()).collect();
    assert_eq!(
        records.len(),
        2 + 1 + 1 + 3000,
        "SOA, NS, ns A, 3000 records, SOA"
    );
    assert_eq!(records[0].record_type(), RecordType::SOA, "SOA first");
    assert_eq!(
        records.last().unwrap().record_type(),
        RecordType::SOA,
        "SOA last"
    );
    let soas = records
        .iter()
        .filter(|r| r.record_type() == RecordType::SOA)
        .count();
    assert_eq!(soas, 2, "the apex SOA appears only first and last");
    for m in &messages {
        assert!(m.metadata.authoritative);
        assert_eq!(m.metadata.id, 0x0AF0);
    }

    // The small zone: every record once between the SOAs (in no particular
    // order: RFC 5936 asks none beyond the SOA first and last).
    // The SOA leaves alone first, before the zone's nodes are read.
    let messages = transfer(port, &axfr_query("conf.test.", 252));
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0].answers.len(), 1, "the SOA alone");
    let records: Vec<_> = messages.iter().flat_map(|m| m.answers.clone()).collect();
    assert_eq!(records.len(), 17 + 1);
    assert!(records[1..records.len() - 1].iter().any(|r| r
        .name
        .to_ascii()
        .eq_ignore_ascii_case("conf.test.")
        && r.record_type() == RecordType::NS));

    // Not an apex, not a zone: NOTAUTH. Over UDP: NOTIMP.
    let m = &transfer(port, &axfr_query("www.conf.test.", 252))[0];
    assert_eq!(rcode(m), ResponseCode::NotAuth);
    let m = &transfer(port, &axfr_query("example.org.", 252))[0];
    assert_eq!(rcode(m), ResponseCode::NotAuth);
    let m = ask_udp(port, "conf.test.", 252, None);
    assert_eq!(rcode(&m), ResponseCode::NotImp);

    // IXFR: up to date ─► our SOA alone; older ─► the whole zone (AXFR form).
    let m = transfer(port, &ixfr_query("conf.test.", 2024010101));
    assert_eq!(m.len(), 1);
    assert_eq!(m[0].answers.len(), 1);
    assert_eq!(m[0].answers[0].record_type(), RecordType::SOA);
    let m = transfer(port, &ixfr_query("conf.test.", 2024010100));
    assert_eq!(m.iter().map(|m| m.answers.len()).sum::<usize>(), 18);
    // IXFR over UDP, no journal back to serial 1: the SOA alone ("use
    // TCP"); NOTAUTH below the apex.
    let raw = udp_exchange(port, &ixfr_query("conf.test.", 1), Duration::from_secs(5)).unwrap();
    let m = Message::from_vec(&raw).unwrap();
    assert_eq!(lines(&m.answers).len(), 1);
    assert_eq!(m.answers[0].record_type(), RecordType::SOA);
    let m = ask_udp(port, "www.conf.test.", 251, None);
    assert_eq!(rcode(&m), ResponseCode::NotAuth);

    // kdig, a real transfer client, agrees on the record count.
    let out = std::process::Command::new("kdig")
        .args([
            "-p",
            &port.to_string(),
            "@127.0.0.1",
            "AXFR",
            "big.test.",
            "+noall",
            "+answer",
        ])
        .output()
        .expect("kdig (knot-dnsutils) must be installed");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().filter(|l| !l.trim().is_empty()).count(), 3004);

    drop(server);
    block_on(db.drop_db());
}

#[test]
fn axfr_access_list_refuses_other_addresses() {
    let f = fixture("conf_acl", &["--axfr-allow", "192.0.2.0/24"]);
    let m = &transfer(f.server.port, &axfr_query("conf.test.", 252))[0];
    assert_eq!(
        rcode(m),
        ResponseCode::Refused,
        "loopback is not in 192.0.2.0/24"
    );
    assert!(m.answers.is_empty());
    // Ordinary queries over TCP are unaffected.
    let m = ask_tcp(f.server.port, "www.conf.test.", 1, None);
    assert_eq!(m.answers.len(), 1);
    f.done();
}

#[test]
fn axfr_is_a_consistent_snapshot_while_the_importer_replaces_the_zone() {
    let version = |v: u32| {
        let mut z = format!("$ORIGIN snap.test.\n$TTL 60\n@ SOA ns hm {v} 3600 600 86400 60\n@ NS ns\nns A 192.0.2.1\n");
        for i in 0..400 {
            z.push_str(&format!("n{i} TXT \"v{v}\"\n"));
        }
        z
    };
    let db = block_on(async {
        let db = TestZoneDb::new("conf_snap").await;
        db.import("snap.test.", &version(1), false).await;
        db
    });
    let server = ServerProcess::start(&db.name, LOOPBACK_TRANSFERS);
    let port = server.port;
    std::thread::scope(|s| {
        let writer = s.spawn(|| {
            block_on(async {
                for v in 2..=4 {
                    // A grace period as in production: the old version stays
                    // readable for a while after the switch (docs/schema.md).
                    let path = db.dir.join(format!("snap{v}.zone"));
                    std::fs::write(&path, version(v)).unwrap();
                    let options = loadtools::import::ImportOptions {
                        zone: "snap.test.".parse().unwrap(),
                        replace: true,
                        batch_size: 50,
                        in_flight: 2,
                        grace: Duration::from_millis(1500),
                    };
                    let progress = loadtools::import::NoProgress;
                    loadtools::import::import_file(&db.store, &path, &options, &progress)
                        .await
                        .expect("import");
                }
            })
        });
        let mut seen = std::collections::BTreeSet::new();
        while !writer.is_finished() || seen.len() < 2 {
            let messages = transfer(port, &axfr_query("snap.test.", 252));
            let records: Vec<_> = messages.iter().flat_map(|m| m.answers.iter()).collect();
            assert_eq!(records.len(), 2 + 2 + 400);
            let txts: std::collections::BTreeSet<String> = records
                .iter()
                .filter(|r| r.record_type() == RecordType::TXT)
                .map(|r| r.data.to_string())
                .collect();
            assert_eq!(
                txts.len(),
                1,
                "one version per transfer, never a mix: {txts:?}"
            );
            seen.insert(txts.into_iter().next().unwrap());
            if seen.len() >= 4 || (writer.is_finished() && seen.len() >= 2) {
                break;
            }
        }
        writer.join().unwrap();
        assert!(seen.len() >= 2, "saw the zone change: {seen:?}");
    });
    drop(server);
    block_on(db.drop_db());
}

#[test]
fn tcp_idle_timeout_and_connection_bound() {
    let f = fixture("conf_tcp", &["--tcp-idle-timeout", "1"]);
    // An idle connection is closed after about the idle timeout.
    let mut idle = TcpStream::connect(("127.0.0.1", f.server.port)).unwrap();
    // A hang detector: the time is printed, not judged (bench/test-timings).
    idle.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let started = std::time::Instant::now();
    let mut buf = [0u8; 1];
    let n = idle
        .read(&mut buf)
        .expect("closed, not timed out on our side");
    assert_eq!(n, 0, "the server closed the idle connection");
    let waited = started.elapsed();
    println!("timing: idle TCP connection closed after {waited:?} (--tcp-idle-timeout 1)");
    assert!(
        waited >= Duration::from_millis(800),
        "closed too early: {waited:?}"
    );
    drop(f.server);
    block_on(f.db.drop_db());

    // With two connections allowed and both taken, the idle timeout has
    // shrunk to its floor (0.2 s): the idle two are closed, and a third,
    // waiting for a slot (--tcp-permit-timeout-ms), is served.
    let f = fixture(
        "conf_tcp2",
        &["--tcp-max-connections", "2", "--tcp-idle-timeout", "30"],
    );
    let port = f.server.port;
    let mut first = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let second = TcpStream::connect(("127.0.0.1", port)).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let mut third = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let q = build_query(9, "www.conf.test.", 1, None, false);
    let mut framed = (q.len() as u16).to_be_bytes().to_vec();
    framed.extend_from_slice(&q);
    third.write_all(&framed).unwrap();
    third
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut len = [0u8; 2];
    third
        .read_exact(&mut len)
        .expect("served once an idle connection is closed");
    let mut reply = vec![0u8; u16::from_be_bytes(len) as usize];
    third.read_exact(&mut reply).unwrap();
    assert_eq!(Message::from_vec(&reply).unwrap().answers.len(), 1);
    first
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    assert_eq!(first.read(&mut buf).unwrap(), 0, "the idle one was closed");
    drop(second);
    f.done();
}
