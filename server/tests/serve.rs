//! End to end: zones imported into a real database, served by the real
//! binary, asked over real UDP and TCP sockets, every section checked.

use hickory_proto::op::{Message, ResponseCode};
use hickory_proto::rr::RecordType;
use mongodns_testkit::*;

const ZONE: &str = r#"
$ORIGIN example.com.
$TTL 3600
@       IN SOA ns1 hostmaster ( 2024010101 7200 900 1209600 300 )
        IN NS  ns1
        IN NS  ns2.example.net.
        IN MX  10 mail
ns1     IN A   192.0.2.53
mail    IN A   192.0.2.25
        IN AAAA 2001:db8::25
www     IN A   192.0.2.80
        IN A   192.0.2.81
WwW2    IN CNAME www
alias   IN CNAME www2
loop1   IN CNAME loop2
loop2   IN CNAME loop1
dangling IN CNAME nothing-here
out     IN CNAME www.example.org.
a.b.c   IN TXT "deep"
*.wild  IN A   192.0.2.99
*.wild  IN TXT "wildcard"
sub     IN NS  ns.sub
        IN NS  ns.elsewhere.example.
ns.sub  IN A   192.0.2.54
_sip._udp IN SRV 0 5 5060 mail
big     IN TXT "0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789"
big     IN TXT "1123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789"
big     IN TXT "2123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789"
big     IN TXT "3123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789"
big     IN TXT "4123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789"
big     IN TXT "5123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789"
"#;

fn rcode(m: &Message) -> ResponseCode {
    m.metadata.response_code
}

fn types(records: &[hickory_proto::rr::Record]) -> Vec<RecordType> {
    records.iter().map(|r| r.record_type()).collect()
}

struct Fixture {
    db: TestZoneDb,
    server: ServerProcess,
}

fn fixture(tag: &str) -> Fixture {
    let db = block_on(async {
        let db = TestZoneDb::new(tag).await;
        db.import("example.com.", ZONE, false).await;
        db
    });
    let server = ServerProcess::start(&db.name, &[]);
    Fixture { db, server }
}

impl Fixture {
    fn done(self) {
        drop(self.server);
        block_on(self.db.drop_db());
    }
}

#[test]
fn authoritative_answers_cnames_and_denials() {
    let f = fixture("answers");
    let port = f.server.port;

    // A positive answer: AA, both records, no authority.
    let m = ask_udp(port, "www.example.com.", 1, None);
    assert_eq!(rcode(&m), ResponseCode::NoError);
    assert!(m.metadata.authoritative);
    assert_eq!(
        lines(&m.answers),
        vec![
            "www.example.com. 3600 A 192.0.2.80",
            "www.example.com. 3600 A 192.0.2.81"
        ]
    );
    assert!(m.authorities.is_empty());
    assert!(
        m.edns.is_none(),
        "no OPT in the reply when the query had none"
    );

    // The question comes back in the asker's letter case.
    let q = build_query(7, "WWW.ExAmPlE.cOm.", 1, None, true);
    let raw = udp_exchange(port, &q, std::time::Duration::from_secs(5)).unwrap();
    assert_eq!(&raw[12..q.len()], &q[12..], "question echoed byte for byte");
    let m = Message::from_vec(&raw).unwrap();
    assert_eq!(m.metadata.id, 7);
    assert!(m.metadata.recursion_desired, "RD is copied");
    assert!(!m.metadata.recursion_available, "never an open resolver");
    assert_eq!(m.answers.len(), 2);

    // A CNAME chain inside the zone is followed.
    let m = ask_udp(port, "alias.example.com.", 1, None);
    assert_eq!(rcode(&m), ResponseCode::NoError);
    assert_eq!(
        lines(&m.answers),
        vec![
            "alias.example.com. 3600 CNAME www2.example.com.",
            "www.example.com. 3600 A 192.0.2.80",
            "www.example.com. 3600 A 192.0.2.81",
            "www2.example.com. 3600 CNAME www.example.com.",
        ]
    );
    // Asking for the CNAME itself does not follow it.
    let m = ask_udp(port, "alias.example.com.", 5, None);
    assert_eq!(
        lines(&m.answers),
        vec!["alias.example.com. 3600 CNAME www2.example.com."]
    );

    // A CNAME loop ends without hanging, and a dangling one is NXDOMAIN.
    let m = ask_udp(port, "loop1.example.com.", 1, None);
    assert_eq!(rcode(&m), ResponseCode::NoError);
    assert_eq!(m.answers.len(), 2);
    let m = ask_udp(port, "dangling.example.com.", 1, None);
    assert_eq!(rcode(&m), ResponseCode::NXDomain);
    assert_eq!(types(&m.answers), vec![RecordType::CNAME]);
    assert_eq!(types(&m.authorities), vec![RecordType::SOA]);
    // A CNAME out of our zones ends the chain.
    let m = ask_udp(port, "out.example.com.", 1, None);
    assert_eq!(rcode(&m), ResponseCode::NoError);
    assert_eq!(
        lines(&m.answers),
        vec!["out.example.com. 3600 CNAME www.example.org."]
    );

    // NXDOMAIN: SOA in authority with TTL min(SOA TTL, MINIMUM) = 300.
    let m = ask_udp(port, "nope.example.com.", 1, None);
    assert_eq!(rcode(&m), ResponseCode::NXDomain);
    assert!(m.metadata.authoritative);
    assert!(m.answers.is_empty());
    assert_eq!(m.authorities.len(), 1);
    assert_eq!(m.authorities[0].record_type(), RecordType::SOA);
    assert_eq!(m.authorities[0].ttl, 300);

    // NODATA for a missing type, and for an empty non-terminal.
    for name in ["www.example.com.", "b.c.example.com.", "c.example.com."] {
        let m = ask_udp(port, name, 28, None);
        assert_eq!(rcode(&m), ResponseCode::NoError, "{name}");
        assert!(m.answers.is_empty(), "{name}");
        assert_eq!(types(&m.authorities), vec![RecordType::SOA], "{name}");
    }
    let m = ask_udp(port, "a.b.c.example.com.", 16, None);
    assert_eq!(lines(&m.answers), vec!["a.b.c.example.com. 3600 TXT deep"]);

    f.done();
}

#[test]
fn referrals_wildcards_and_additional_data() {
    let f = fixture("referral");
    let port = f.server.port;

    // A referral from below the cut: AA clear, NS in authority, in-bailiwick glue.
    for name in ["sub.example.com.", "deep.www.sub.example.com."] {
        let m = ask_udp(port, name, 1, None);
        assert_eq!(rcode(&m), ResponseCode::NoError, "{name}");
        assert!(!m.metadata.authoritative, "{name}");
        assert!(m.answers.is_empty(), "{name}");
        assert_eq!(
            lines(&m.authorities),
            vec![
                "sub.example.com. 3600 NS ns.elsewhere.example.",
                "sub.example.com. 3600 NS ns.sub.example.com."
            ]
        );
        assert_eq!(
            lines(&m.additionals),
            vec!["ns.sub.example.com. 3600 A 192.0.2.54"]
        );
    }
    // DS is answered from the parent side of the cut: NODATA with SOA.
    let m = ask_udp(port, "sub.example.com.", 43, None);
    assert!(m.metadata.authoritative);
    assert_eq!(types(&m.authorities), vec![RecordType::SOA]);

    // NS at the apex is authoritative data, with glue for the in-zone server.
    let m = ask_udp(port, "example.com.", 2, None);
    assert!(m.metadata.authoritative);
    assert_eq!(m.answers.len(), 2);
    assert_eq!(
        lines(&m.additionals),
        vec!["ns1.example.com. 3600 A 192.0.2.53"]
    );

    // MX and SRV targets get their addresses in additional.
    let m = ask_udp(port, "example.com.", 15, None);
    assert_eq!(
        lines(&m.additionals),
        vec![
            "mail.example.com. 3600 A 192.0.2.25",
            "mail.example.com. 3600 AAAA 2001:db8::25"
        ]
    );
    let m = ask_udp(port, "_sip._udp.example.com.", 33, None);
    assert_eq!(m.answers.len(), 1);
    assert_eq!(m.additionals.len(), 2);

    // Wildcards synthesise the asked name; wildcard NODATA has the SOA.
    let m = ask_udp(port, "anything.wild.example.com.", 1, None);
    assert_eq!(rcode(&m), ResponseCode::NoError);
    assert_eq!(
        lines(&m.answers),
        vec!["anything.wild.example.com. 3600 A 192.0.2.99"]
    );
    let m = ask_udp(port, "x.y.wild.example.com.", 16, None);
    assert_eq!(
        lines(&m.answers),
        vec!["x.y.wild.example.com. 3600 TXT wildcard"]
    );
    let m = ask_udp(port, "anything.wild.example.com.", 28, None);
    assert_eq!(rcode(&m), ResponseCode::NoError);
    assert!(m.answers.is_empty());
    assert_eq!(types(&m.authorities), vec![RecordType::SOA]);

    // Names in no zone we serve are refused: never an open resolver.
    let m = ask_udp(port, "www.example.org.", 1, None);
    assert_eq!(rcode(&m), ResponseCode::Refused);
    assert!(!m.metadata.authoritative);
    assert!(m.answers.is_empty());

    f.done();
}

#[test]
fn edns_truncation_and_tcp() {
    let f = fixture("edns");
    let port = f.server.port;

    // With EDNS: OPT in the reply, DO echoed.
    let m = ask_udp(port, "www.example.com.", 1, Some((1232, true)));
    let edns = m.edns.as_ref().expect("OPT in reply");
    assert!(edns.flags().dnssec_ok);
    assert_eq!(edns.version(), 0);
    let m = ask_udp(port, "www.example.com.", 1, Some((1232, false)));
    assert!(!m.edns.as_ref().unwrap().flags().dnssec_ok);

    // 6 × ~110 bytes of TXT: too big for 512 bytes, fits in 1232.
    let m = ask_udp(port, "big.example.com.", 16, None);
    assert!(m.metadata.truncation, "TC without EDNS");
    let raw = udp_exchange(
        port,
        &build_query(1, "big.example.com.", 16, None, false),
        std::time::Duration::from_secs(5),
    )
    .unwrap();
    assert!(raw.len() <= 512);
    let m = ask_udp(port, "big.example.com.", 16, Some((1232, false)));
    assert!(!m.metadata.truncation, "fits in the EDNS size");
    assert_eq!(m.answers.len(), 6);
    let m = ask_udp(port, "big.example.com.", 16, Some((512, false)));
    assert!(m.metadata.truncation);
    // A large EDNS size is capped at our 1232.
    let raw = udp_exchange(
        port,
        &build_query(1, "big.example.com.", 16, Some((65000, false)), false),
        std::time::Duration::from_secs(5),
    )
    .unwrap();
    assert!(raw.len() <= 1232);
    // The same query over TCP gets it whole.
    let m = ask_tcp(port, "big.example.com.", 16, None);
    assert!(!m.metadata.truncation);
    assert_eq!(m.answers.len(), 6);

    // BADVERS for EDNS version 1.
    let mut q = build_query(9, "www.example.com.", 1, Some((1232, false)), false);
    let n = q.len();
    q[n - 5] = 1; // version byte of the OPT TTL
    let raw = udp_exchange(port, &q, std::time::Duration::from_secs(5)).unwrap();
    let m = Message::from_vec(&raw).unwrap();
    // 16 is BADVERS in an OPT context (hickory names the value BADSIG).
    assert_eq!(u16::from(m.metadata.response_code), 16);
    assert_eq!(
        m.edns.as_ref().expect("OPT in a BADVERS reply").version(),
        0
    );

    f.done();
}

#[test]
fn malformed_and_unsupported_queries() {
    let f = fixture("malformed");
    let port = f.server.port;
    let timeout = std::time::Duration::from_secs(5);

    // QDCOUNT = 2 → FORMERR.
    let mut q = build_query(3, "www.example.com.", 1, None, false);
    q[5] = 2;
    let raw = udp_exchange(port, &q, timeout).unwrap();
    assert_eq!(raw[3] & 0xF, 1);
    assert_eq!(u16::from_be_bytes([raw[0], raw[1]]), 3);
    // Trailing garbage → FORMERR.
    let mut q = build_query(4, "www.example.com.", 1, None, false);
    q.extend_from_slice(&[1, 2, 3]);
    let raw = udp_exchange(port, &q, timeout).unwrap();
    assert_eq!(raw[3] & 0xF, 1);
    // Opcode STATUS (2) → NOTIMP.
    let mut q = build_query(5, "www.example.com.", 1, None, false);
    q[2] = 2 << 3;
    let raw = udp_exchange(port, &q, timeout).unwrap();
    assert_eq!(raw[3] & 0xF, 4);
    // Class CH (version.bind) → REFUSED.
    let mut q = build_query(6, "version.bind.", 16, None, false);
    let n = q.len();
    q[n - 1] = 3;
    let raw = udp_exchange(port, &q, timeout).unwrap();
    assert_eq!(raw[3] & 0xF, 5);
    // A runt is ignored, and the server keeps answering.
    assert!(udp_exchange(port, &[1, 2, 3], std::time::Duration::from_millis(300)).is_none());
    let m = ask_udp(port, "www.example.com.", 1, None);
    assert_eq!(m.answers.len(), 2);

    f.done();
}

#[test]
fn tcp_pipelines_several_queries_on_one_connection() {
    use std::io::{Read, Write};
    let f = fixture("pipeline");
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", f.server.port)).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    let names = [
        "www.example.com.",
        "mail.example.com.",
        "nope.example.com.",
        "ns1.example.com.",
    ];
    let mut out = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let q = build_query(100 + i as u16, name, 1, None, false);
        out.extend_from_slice(&(q.len() as u16).to_be_bytes());
        out.extend_from_slice(&q);
    }
    stream.write_all(&out).unwrap();
    let mut ids = Vec::new();
    for _ in &names {
        let mut len = [0u8; 2];
        stream.read_exact(&mut len).unwrap();
        let mut reply = vec![0u8; u16::from_be_bytes(len) as usize];
        stream.read_exact(&mut reply).unwrap();
        let m = Message::from_vec(&reply).unwrap();
        let expect = if m.metadata.id == 102 {
            ResponseCode::NXDomain
        } else {
            ResponseCode::NoError
        };
        assert_eq!(m.metadata.response_code, expect);
        ids.push(m.metadata.id);
    }
    ids.sort();
    assert_eq!(ids, vec![100, 101, 102, 103]);
    f.done();
}

/// Sends every query in `queries` from one socket at once, then collects
/// the replies by ID (the burst makes the server read many per system call).
fn burst(port: u16, queries: &[Vec<u8>]) -> std::collections::HashMap<u16, Vec<u8>> {
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    socket
        .set_read_timeout(Some(std::time::Duration::from_secs(3)))
        .unwrap();
    for q in queries {
        socket.send_to(q, ("127.0.0.1", port)).unwrap();
    }
    let mut replies = std::collections::HashMap::new();
    let mut buf = vec![0u8; 65535];
    while replies.len() < queries.len() {
        let Ok((len, _)) = socket.recv_from(&mut buf) else {
            break;
        };
        replies.insert(u16::from_be_bytes([buf[0], buf[1]]), buf[..len].to_vec());
    }
    replies
}

#[test]
fn batched_udp_answers_a_burst_exactly_like_one_at_a_time() {
    let f = fixture("udpbatch");
    let single = ServerProcess::start(&f.db.name, &["--udp-batch", "1"]);
    let names = [
        "www.example.com.",
        "WWW.example.com.",
        "mail.example.com.",
        "nothing.example.com.",
        "x.wild.example.com.",
        "foo.sub.example.com.",
        "alias.example.com.",
        "big.example.com.",
    ];
    // Four rounds of every name and type: the first round misses the
    // caches (spawned tasks), the later ones are answered in the loop.
    let mut queries = Vec::new();
    for round in 0..4u16 {
        for (i, name) in names.iter().enumerate() {
            for (j, qtype) in [1u16, 28, 16].iter().enumerate() {
                let id = round * 100 + (i as u16) * 3 + j as u16;
                queries.push(build_query(id, name, *qtype, Some((1232, false)), false));
            }
        }
    }
    let batched = burst(f.server.port, &queries);
    let one_by_one = burst(single.port, &queries);
    assert_eq!(batched.len(), queries.len(), "batched loop lost replies");
    assert_eq!(one_by_one.len(), queries.len(), "single loop lost replies");
    for q in &queries {
        let id = u16::from_be_bytes([q[0], q[1]]);
        assert_eq!(batched[&id], one_by_one[&id], "reply to query {id} differs");
        let reply = Message::from_vec(&batched[&id]).expect("reply parses");
        assert_eq!(reply.metadata.id, id);
    }
    // A datagram longer than any DNS query (over 4096 bytes) is dropped,
    // while the loop goes on answering.
    let mut huge = build_query(7777, "www.example.com.", 1, None, false);
    huge.resize(5000, 0);
    assert!(udp_exchange(f.server.port, &huge, std::time::Duration::from_millis(500)).is_none());
    let after = ask_udp(f.server.port, "www.example.com.", 1, None);
    assert_eq!(rcode(&after), ResponseCode::NoError);
    drop(single);
    f.done();
}

/// A zone whose apex has an MX set of `targets` names in the zone, each
/// with an address.
fn many_exchanges(targets: usize) -> String {
    let mut z = String::from("$ORIGIN mx.test.\n$TTL 300\n@ IN SOA ns admin 1 3600 600 86400 60\n@ IN NS ns\nns IN A 192.0.2.1\n");
    for i in 0..targets {
        z.push_str(&format!(
            "@ IN MX 10 m{i}\nm{i} IN A 192.0.2.{}\n",
            i % 250 + 2
        ));
    }
    z
}

#[test]
fn the_additional_section_reads_only_what_can_fit() {
    let targets = 300;
    let db = block_on(async {
        let db = TestZoneDb::new("many_mx").await;
        db.import("mx.test.", &many_exchanges(targets), false).await;
        db
    });
    let (server, control) = start_with_control(&db.name, &[]);
    // Over UDP (1232 bytes), 300 MX records do not fit: TC, and no target
    // worth reading for the additional section.
    let before = stat(control, "db_queries");
    let m = ask_udp(server.port, "mx.test.", 15, Some((1232, false)));
    let udp_reads = stat(control, "db_queries") - before;
    println!("MX set of {targets} over UDP: {udp_reads} database reads");
    assert!(
        m.metadata.truncation,
        "300 MX records do not fit in 1232 bytes"
    );
    assert!(
        udp_reads <= 1232 / 16 + 2,
        "{udp_reads} reads for a reply of 1232 bytes"
    );
    // Over TCP they fit, and so do all their addresses.
    let m = ask_tcp(server.port, "mx.test.", 15, None);
    assert_eq!(m.answers.len(), targets);
    assert_eq!(m.additionals.len(), targets, "every exchange's address");
    drop(server);
    block_on(db.drop_db());
}
