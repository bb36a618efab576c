//! The server's reads carry a server-side deadline (point reads and the
//! journal the query timeout, zone listings at least 30 s), and storage
//! faults do not flood the log. The server reaches the real
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
    // Point reads carry the query timeout; the registry's zone listing at
    // start carries the listing floor (30 s).
    let point = times.iter().filter(|&&t| t == 1234).count();
    assert!(
        point >= 2,
        "the zone and node reads carry maxTimeMS: {times:?}"
    );
    assert!(times.iter().all(|&t| t == 1234 || t == 30_000), "{times:?}");
    drop(server);
    block_on(db.drop_db());
}

/// The `find` commands on `collection` the server sent through `tap`
/// that `pick` selects, and how many of them lack `maxTimeMS`.
fn finds_without_max_time(
    tap: &Relay,
    collection: &str,
    pick: impl Fn(&[u8]) -> bool,
) -> (usize, usize) {
    let finds: Vec<Vec<u8>> = sent_commands(&tap.sent(), "find", collection)
        .into_iter()
        .filter(|d| pick(d))
        .collect();
    let missing = finds
        .iter()
        .filter(|d| !bson_has_key(d, "maxTimeMS"))
        .count();
    (finds.len(), missing)
}

/// True when `doc` holds `needle`.
fn holds(doc: &[u8], needle: &[u8]) -> bool {
    doc.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn listings_the_journal_and_the_transfer_cursor_carry_max_time_ms() {
    let db = zone_db("maxtime_lists");
    let tap = Relay::tapping_database();
    let api = free_tcp_port();
    let listen = format!("127.0.0.1:{api}");
    let args = [
        "--query-timeout-ms",
        "1234",
        "--axfr-allow",
        "127.0.0.1/32",
        "--api-listen",
        &listen,
        "--api-key",
        "k",
    ];
    let server = ServerProcess::start_with_uri(&tap.uri(), &db.name, &args);
    // The served-zone listing (the registry's preload at start): a find
    // on `zones` with an empty filter.
    let empty_filter = b"\x03filter\0\x05\0\0\0\0";
    let (served, missing) = finds_without_max_time(&tap, "zones", |d| holds(d, empty_filter));
    println!("served-zone listings: {served}, {missing} without maxTimeMS");
    assert!(served >= 1, "the registry lists the served zones");
    assert_eq!(missing, 0, "the served-zone listing carries maxTimeMS");
    // The API's zone listing: a find on `zones` sorted by name.
    let headers = "X-API-Key: k\r\n";
    let (status, body) = http_request(api, "GET", "/api/v1/servers/localhost/zones", headers, "");
    assert!(
        status.contains("200") && body.contains("late.test."),
        "{status} {body}"
    );
    let (listed, missing) = finds_without_max_time(&tap, "zones", |d| holds(d, b"\x03sort\0"));
    println!("API zone listings: {listed}, {missing} without maxTimeMS");
    assert!(listed >= 1, "the API lists the zones");
    assert_eq!(missing, 0, "the API's zone listing carries maxTimeMS");
    // The journal, read by an IXFR over TCP from a serial behind ours.
    let rdata = vec![vec![192, 0, 2, 9].into()];
    let change = dns::edit::ChangeSet::new(
        "late.test.".parse().unwrap(),
        vec![dns::edit::RecordEdit::add(
            "new.late.test.".parse().unwrap(),
            dns::RType::A,
            60,
            rdata,
        )],
    );
    block_on(signer::edit::apply(&db.store, &change)).expect("the edit succeeds");
    serial_after(server.port, "late.test.", 1);
    let lines = transfer_lines(server.port, "late.test.", "IXFR=1", &[]);
    assert!(
        lines.iter().any(|l| l.starts_with("new.late.test.")),
        "{lines:?}"
    );
    let (journal, missing) = finds_without_max_time(&tap, "journal", |_| true);
    println!("journal reads: {journal}, {missing} without maxTimeMS");
    assert!(journal >= 1, "the IXFR read the journal");
    assert_eq!(missing, 0, "journal reads carry maxTimeMS");
    // The transfer cursor: a find on `nodes` filtered on `zone` and `ver`.
    let axfr = transfer_lines(server.port, "late.test.", "AXFR", &[]);
    assert!(axfr.len() > 2, "{axfr:?}");
    let version_read = |d: &[u8]| bson_has_key(d, "zone") && bson_has_key(d, "ver");
    let (cursors, missing) = finds_without_max_time(&tap, "nodes", version_read);
    println!("transfer cursors: {cursors}, {missing} without maxTimeMS");
    assert!(cursors >= 1, "the AXFR read the version");
    assert_eq!(missing, 0, "the transfer cursor carries maxTimeMS");
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
