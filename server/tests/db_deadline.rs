//! The server's reads carry a server-side deadline, and storage faults do
//! not flood the log (issue 20, item 7). The server reaches the real
//! database through a relay that keeps a copy of every command it sends
//! and can cut the database off.

use mongodns_testkit::*;
use std::net::UdpSocket;
use std::time::{Duration, Instant};

const ZONE: &str = "$ORIGIN late.test.\n$TTL 300\n@ IN SOA ns admin 1 3600 600 86400 60\n@ IN NS ns\nns IN A 192.0.2.1\nwww IN A 192.0.2.2\n";

/// The values of every `maxTimeMS` field the server has sent.
fn max_times(relay: &Relay) -> Vec<i64> {
    let sent = relay.sent();
    let key = b"maxTimeMS\0";
    let mut out = Vec::new();
    for at in 0..sent.len().saturating_sub(key.len() + 9) {
        if at == 0 || &sent[at..at + key.len()] != key {
            continue;
        }
        let value = &sent[at + key.len()..];
        match sent[at - 1] {
            0x10 => out.push(i64::from(i32::from_le_bytes(
                value[..4].try_into().unwrap(),
            ))),
            0x12 => out.push(i64::from_le_bytes(value[..8].try_into().unwrap())),
            other => panic!("maxTimeMS of BSON type {other:#x}"),
        }
    }
    out
}

fn zone_db(tag: &str) -> TestZoneDb {
    block_on(async {
        let db = TestZoneDb::new(tag).await;
        db.import("late.test.", ZONE, false).await;
        db
    })
}

#[test]
fn zone_and_node_reads_carry_the_query_timeout_as_max_time_ms() {
    let db = zone_db("maxtime");
    let tap = Relay::tapping_database();
    let server =
        ServerProcess::start_with_uri(&tap.uri(), &db.name, &["--query-timeout-ms", "1234"]);
    let m = ask_udp(server.port, "www.late.test.", 1, None);
    assert_eq!(lines(&m.answers), vec!["www.late.test. 300 A 192.0.2.2"]);
    let times = max_times(&tap);
    println!("maxTimeMS values sent: {times:?}");
    assert!(
        times.len() >= 2,
        "the zone and node reads carry maxTimeMS: {times:?}"
    );
    assert!(times.iter().all(|&t| t == 1234), "{times:?}");
    drop(server);
    block_on(db.drop_db());
}

#[test]
fn storage_faults_are_logged_at_most_once_a_second() {
    let db = zone_db("faultlog");
    let tap = Relay::tapping_database();
    let log = db.dir.join("server.log");
    let server = ServerProcess::start_logging(
        &tap.uri(),
        &db.name,
        &[
            "--log-format",
            "json",
            "--query-timeout-ms",
            "1000",
            "--db-timeout-ms",
            "300",
        ],
        &log,
    );
    let m = ask_udp(server.port, "www.late.test.", 1, None);
    assert_eq!(m.answers.len(), 1);
    tap.cut();
    // 300 names never asked before, over about 3 s: each needs the
    // database and fails.
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let started = Instant::now();
    for i in 0..300u16 {
        let q = build_query(i, &format!("n{i}.late.test."), 1, None, false);
        socket.send_to(&q, ("127.0.0.1", server.port)).unwrap();
        std::thread::sleep(Duration::from_millis(10));
    }
    socket
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut buf = [0u8; 512];
    let mut servfail = 0;
    while let Ok(n) = socket.recv(&mut buf) {
        servfail += usize::from(n > 3 && buf[3] & 0xF == 2);
    }
    let took = started.elapsed();
    drop(server);
    let text = std::fs::read_to_string(&log).unwrap();
    let warnings: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("storage fault: SERVFAIL"))
        .collect();
    let suppressed: u64 = warnings
        .iter()
        .filter_map(|l| l.split("\"suppressed\":").nth(1))
        .filter_map(|v| v.split([',', '}']).next()?.parse::<u64>().ok())
        .sum();
    println!(
        "{servfail} SERVFAIL in {took:?}: {} warning lines, {suppressed} left out",
        warnings.len()
    );
    assert!(servfail >= 250, "the faults happened: {servfail} SERVFAIL");
    let seconds = took.as_secs() + 2;
    assert!(
        warnings.len() as u64 <= seconds,
        "{} warning lines in {took:?}",
        warnings.len()
    );
    assert!(suppressed > 0, "the lines count what they left out");
    block_on(db.drop_db());
}
