//! The hand-made hostile-packet corpus (`tests/fuzz/hostile/*.hex`) against
//! the real server binary, over UDP and TCP: each packet gets FORMERR or
//! silence as its file says, and the server keeps answering afterwards.

mod fuzz;

use hickory_proto::op::{Message, ResponseCode};
use mongodns_testkit::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

#[derive(Debug, PartialEq)]
enum Expect {
    Formerr,
    Silence,
}

fn corpus() -> Vec<(String, Expect, Vec<u8>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let files = fuzz::corpus_files(root, "hostile");
    assert!(files.len() >= 30, "the hostile corpus is missing files");
    files
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            let expect = if text.contains("# expect: formerr") {
                Expect::Formerr
            } else if text.contains("# expect: silence") {
                Expect::Silence
            } else {
                panic!("{}: no '# expect:' line", f.display())
            };
            let name = f.file_stem().unwrap().to_string_lossy().into_owned();
            (name, expect, fuzz::unhex(&text))
        })
        .collect()
}

/// Sends one framed message on a fresh connection; the reply, or `None` when
/// the server sent nothing before closing or within a second.
fn tcp_try(port: u16, packet: &[u8]) -> Option<Vec<u8>> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
    let mut framed = (packet.len() as u16).to_be_bytes().to_vec();
    framed.extend_from_slice(packet);
    s.write_all(&framed).unwrap();
    let mut len = [0u8; 2];
    s.read_exact(&mut len).ok()?;
    let mut reply = vec![0u8; u16::from_be_bytes(len) as usize];
    s.read_exact(&mut reply).ok()?;
    Some(reply)
}

fn judge(name: &str, how: &str, expect: &Expect, packet: &[u8], reply: Option<Vec<u8>>) {
    match (expect, reply) {
        (Expect::Silence, None) => {}
        (Expect::Silence, Some(r)) => panic!("{name} over {how}: expected silence, got {r:02x?}"),
        (Expect::Formerr, None) => panic!("{name} over {how}: expected FORMERR, got nothing"),
        (Expect::Formerr, Some(r)) => {
            let m = Message::from_vec(&r)
                .unwrap_or_else(|e| panic!("{name} over {how}: reply does not parse: {e}"));
            assert_eq!(
                m.metadata.response_code,
                ResponseCode::FormErr,
                "{name} over {how}"
            );
            assert_eq!(&r[..2], &packet[..2], "{name} over {how}: ID not echoed");
        }
    }
}

#[test]
fn hostile_packets_get_formerr_or_silence_over_udp_and_tcp() {
    let db = block_on(async {
        let db = TestZoneDb::new("hostile").await;
        db.import("fz.test.", fuzz::FUZZ_ZONE, false).await;
        db
    });
    let server = ServerProcess::start(&db.name, &["--tcp-idle-timeout", "1"]);
    let started = Instant::now();
    for (name, expect, packet) in corpus() {
        let reply = udp_exchange(server.port, &packet, Duration::from_millis(700));
        judge(&name, "UDP", &expect, &packet, reply);
        let reply = tcp_try(server.port, &packet);
        judge(&name, "TCP", &expect, &packet, reply);
    }
    // Still alive and answering normally.
    let m = ask_udp(server.port, "www.fz.test.", 1, None);
    assert_eq!(m.metadata.response_code, ResponseCode::NoError);
    assert_eq!(m.answers.len(), 2, "CNAME and A");
    let m = ask_tcp(server.port, "ns.fz.test.", 1, None);
    assert_eq!(m.answers.len(), 1);
    eprintln!("hostile corpus: {:?}", started.elapsed());
    drop(server);
    block_on(db.drop_db());
}
