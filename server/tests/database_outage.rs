//! The database goes away and comes back: the server answers SERVFAIL
//! quickly while it is gone, never crashes, and recovers by itself.
//!
//! The server reaches the real database through a TCP relay that the test
//! can cut, which is what a network partition or a stopped `mongod` looks
//! like from the server's side.

use hickory_proto::op::{Message, ResponseCode};
use mongodns_testkit::*;
use std::time::{Duration, Instant};

/// Asks `query` of `port` until the reply satisfies `check`; returns the
/// reply. Past 15 s it fails, naming `what`.
fn reply_until(port: u16, query: &[u8], what: &str, check: impl Fn(&Message) -> bool) -> Vec<u8> {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if let Some(raw) = udp_exchange(port, query, Duration::from_secs(5)) {
            if Message::from_vec(&raw).is_ok_and(|m| check(&m)) {
                return raw;
            }
        }
        assert!(Instant::now() < deadline, "{what}: not seen within 15 s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// True when `reply`'s OPT record carries an Extended DNS Error `code`
/// (RFC 8914: option 15, length 2 without text); the OPT is the last record.
fn has_ede(reply: &[u8], code: u16) -> bool {
    let m = Message::from_vec(reply).expect("reply parses");
    if m.edns.is_none() {
        return false;
    }
    let option = [0, 15, 0, 2, (code >> 8) as u8, code as u8];
    reply.windows(6).any(|w| w == option)
}

/// A test database holding the zone `TAG.test.` (SOA, NS, `ns` and, with
/// `www`, `www` A records) and a relay in front of the database: the relay
/// and the URI through it, for a server whose database the test can cut,
/// freeze or slow down.
fn zone_behind_relay(tag: &str, www: bool) -> (TestZoneDb, Relay, String) {
    let apex = format!("{tag}.test.");
    let mut zone = format!(
        "$ORIGIN {apex}\n@ 300 IN SOA ns admin 1 1 1 1 60\n@ 300 IN NS ns\nns 300 IN A 192.0.2.1\n"
    );
    if www {
        zone.push_str("www 300 IN A 192.0.2.2\n");
    }
    let db = block_on(async {
        let db = TestZoneDb::new(tag).await;
        db.import(&apex, &zone, false).await;
        db
    });
    let relay = Relay::to_database();
    let uri = relay.uri();
    (db, relay, uri)
}

#[test]
fn servfail_while_the_database_is_gone_then_recovery() {
    let (db, relay, uri) = zone_behind_relay("outage", true);
    let server = ServerProcess::start_with_uri(
        &uri,
        &db.name,
        &["--query-timeout-ms", "1000", "--db-timeout-ms", "500"],
    );
    let m = ask_udp(server.port, "www.outage.test.", 1, None);
    assert_eq!(m.metadata.response_code, ResponseCode::NoError);
    assert_eq!(m.answers.len(), 1);

    relay.cut();
    // What is cached keeps flowing while the database is gone…
    let m = ask_udp(server.port, "www.outage.test.", 1, None);
    assert_eq!(m.metadata.response_code, ResponseCode::NoError);
    assert_eq!(m.answers.len(), 1);
    // …and a name never asked before is SERVFAIL, not a hang (ask_udp waits
    // 5 s at most). The time is printed, not judged (bench/test-timings).
    let started = Instant::now();
    let m = ask_udp(server.port, "ns.outage.test.", 1, None);
    let took = started.elapsed();
    assert_eq!(m.metadata.response_code, ResponseCode::ServFail);
    println!("timing: SERVFAIL with the database cut off (query timeout 1 s): {took:?}");

    relay.restore();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let m = ask_udp(server.port, "ns.outage.test.", 1, None);
        if m.metadata.response_code == ResponseCode::NoError {
            assert_eq!(m.answers.len(), 1);
            break;
        }
        assert!(Instant::now() < deadline, "no recovery within 30 s");
        std::thread::sleep(Duration::from_millis(200));
    }
    drop(server);
    block_on(db.drop_db());
}

/// A database that freezes (SIGSTOP: connections open, no replies) for 4 s
/// while queries for new names keep coming, then thaws. Before the driver
/// checked the server every 500 ms, reads kept hanging for tens of seconds
/// after the thaw (bench/db-faults, "after-resume"); now answers are fresh
/// again within a few seconds.
#[test]
fn recovery_after_a_frozen_database() {
    let (db, relay, uri) = zone_behind_relay("frozen", false);
    let server = ServerProcess::start_with_uri(
        &uri,
        &db.name,
        &["--query-timeout-ms", "1000", "--db-timeout-ms", "500"],
    );
    let m = ask_udp(server.port, "ns.frozen.test.", 1, None);
    assert_eq!(m.answers.len(), 1);

    relay.freeze(true);
    // 4 s of new names at about 100 q/s, each one a database read that
    // times out and is abandoned.
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let until = Instant::now() + Duration::from_secs(4);
    let mut i = 0u32;
    while Instant::now() < until {
        let q = build_query(i as u16, &format!("n{i}.frozen.test."), 1, None, false);
        socket.send_to(&q, ("127.0.0.1", server.port)).unwrap();
        i += 1;
        std::thread::sleep(Duration::from_millis(10));
    }
    relay.freeze(false);
    let thawed = Instant::now();
    let mut probe = 0;
    loop {
        probe += 1;
        let m = ask_udp(server.port, &format!("after{probe}.frozen.test."), 1, None);
        if m.metadata.response_code == ResponseCode::NXDomain {
            break;
        }
        // A hang detector (the old fault took 47 s, docs/reliability.md);
        // the time is printed, not judged (bench/test-timings).
        assert!(
            thawed.elapsed() < Duration::from_secs(20),
            "still {:?} {:?} after the thaw",
            m.metadata.response_code,
            thawed.elapsed()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    println!(
        "timing: fresh answers after a 4-s freeze: {:?} after the thaw ({probe} probes)",
        thawed.elapsed()
    );
    drop(server);
    block_on(db.drop_db());
}

/// A database that is slow but alive: every reply, the driver's health
/// checks (`hello`) included, takes 1.2 s, more than `--db-timeout-ms`.
/// When a check's timeout was `--db-timeout-ms`, every check failed, the
/// driver declared the database down, closed its connections and failed
/// every read in flight, again and again: no read ever finished and a new
/// name was SERVFAIL for as long as the database stayed slow (the cause of
/// the SERVFAIL storms under load, docs/reliability.md "Recovery under
/// load"). With `--db-check-timeout-ms` (5 s) above the delay, the reads
/// finish (detached from the queries that time out) and the name resolves.
#[test]
fn a_slow_database_is_not_declared_down() {
    let (db, relay, uri) = zone_behind_relay("slow", false);
    let mut args = vec!["--query-timeout-ms", "1000", "--db-timeout-ms", "500"];
    // SLOW_DB_CHECK_TIMEOUT_MS=500 shows the old behaviour (the test fails).
    let check = std::env::var("SLOW_DB_CHECK_TIMEOUT_MS").unwrap_or_default();
    if !check.is_empty() {
        args.extend(["--db-check-timeout-ms", &check]);
    }
    let server = ServerProcess::start_with_uri(&uri, &db.name, &args);
    let m = ask_udp(server.port, "ns.slow.test.", 1, None);
    assert_eq!(m.answers.len(), 1);

    relay.slow(1200);
    // Every query times out (1 s < 1.2 s a read); the reads it started go
    // on and are cached, so asking again gets further, until the answer.
    let slowed = Instant::now();
    let mut asked = 0;
    loop {
        asked += 1;
        let q = build_query(asked, "new.slow.test.", 1, None, false);
        let rcode = udp_exchange(server.port, &q, Duration::from_secs(5)).map(|r| r[3] & 0x0F);
        if rcode == Some(3) {
            break;
        }
        assert!(
            slowed.elapsed() < Duration::from_secs(30),
            "new.slow.test. still rcode {rcode:?} after {:?} ({asked} queries): reads never finish",
            slowed.elapsed()
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    println!(
        "timing: NXDOMAIN from a database slowed to 1.2 s a reply: {:?} ({asked} queries)",
        slowed.elapsed()
    );
    relay.slow(0);
    drop(server);
    block_on(db.drop_db());
}

#[test]
fn an_unreachable_database_at_start_is_a_clear_error() {
    // Nothing listens on this port.
    let port = free_tcp_port();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mongodns-server"))
        .args(["--listen", "127.0.0.1:0", "--db-timeout-ms", "500"])
        .args([
            "--mongodb-uri",
            &format!("mongodb://127.0.0.1:{port}/?directConnection=true"),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unreachable"), "stderr: {err}");
    assert!(
        err.contains("dev-mongo"),
        "stderr should say how to get a database: {err}"
    );
}

#[test]
fn expired_answers_are_served_stale_while_the_database_is_gone() {
    let (db, relay, uri) = zone_behind_relay("stale", true);
    // Everything expires after 1 s; stale answers allowed for 30 s more.
    let common = [
        "--query-timeout-ms",
        "1000",
        "--db-timeout-ms",
        "500",
        "--cache-max-ttl",
        "1",
    ];
    let control = free_tcp_port();
    let control_listen = format!("127.0.0.1:{control}");
    let stale = ServerProcess::start_with_uri(
        &uri,
        &db.name,
        &[
            &common[..],
            &[
                "--serve-stale-secs",
                "30",
                "--control-listen",
                &control_listen,
            ],
        ]
        .concat(),
    );
    let fresh_only = ServerProcess::start_with_uri(&uri, &db.name, &common);
    for port in [stale.port, fresh_only.port] {
        let m = ask_udp(port, "www.stale.test.", 1, None);
        assert_eq!(m.answers.len(), 1);
        assert_eq!(m.answers[0].ttl, 300);
    }
    // The same with EDNS (its own packet-cache entry): fresh, so no EDE.
    let with_edns = build_query(0x5151, "www.stale.test.", 1, Some((1232, false)), false);
    let fresh = udp_exchange(stale.port, &with_edns, Duration::from_secs(5)).unwrap();
    assert!(
        !has_ede(&fresh, 3),
        "a fresh answer carries no Stale Answer EDE"
    );
    relay.cut();
    // Expired everywhere (TTLs capped at 1 s): only the serve-stale server
    // still answers, with TTL 30. Waited for, not slept on.
    let plain = build_query(0x5050, "www.stale.test.", 1, None, false);
    let raw = reply_until(stale.port, &plain, "a stale answer (TTL 30)", |m| {
        m.answers.first().is_some_and(|r| r.ttl == 30)
    });
    let m = Message::from_vec(&raw).unwrap();
    assert_eq!(m.metadata.response_code, ResponseCode::NoError);
    assert_eq!(m.answers.len(), 1);
    // Right after a failure the stale answer comes at once (failure recheck,
    // RFC 8767 §5): from the packet cache, without running the pipeline (so
    // without waiting on the database).
    let ran = stat(control, "pipeline_queries");
    let started = Instant::now();
    let m = ask_udp(stale.port, "www.stale.test.", 1, None);
    let second = started.elapsed();
    assert_eq!(m.answers.len(), 1);
    assert_eq!(m.answers[0].ttl, 30);
    assert_eq!(
        stat(control, "pipeline_queries"),
        ran,
        "the second stale answer waited on the database ({second:?})"
    );
    println!("timing: stale answer with the database cut off, second (failure recheck) {second:?}");
    // The server without serve-stale fails once its copy expired.
    reply_until(
        fresh_only.port,
        &plain,
        "SERVFAIL without serve-stale",
        |m| m.metadata.response_code == ResponseCode::ServFail,
    );
    // With EDNS, a stale reply says so: EDE 3 "Stale Answer" (RFC 8914).
    let raw = reply_until(stale.port, &with_edns, "a stale answer under EDNS", |m| {
        m.answers.first().is_some_and(|r| r.ttl == 30)
    });
    assert!(has_ede(&raw, 3), "stale reply under EDNS has EDE 3");
    // A packet-cache miss (another EDNS size: another key) answered from
    // the expired record-cache node is marked too.
    let small = build_query(0x5252, "www.stale.test.", 1, Some((512, false)), false);
    let raw = udp_exchange(stale.port, &small, Duration::from_secs(5)).unwrap();
    let m = Message::from_vec(&raw).expect("reply from a stale node parses");
    assert_eq!(m.answers.len(), 1);
    assert_eq!(m.answers[0].ttl, 30);
    assert!(
        has_ede(&raw, 3),
        "reply from a stale node under EDNS has EDE 3"
    );
    // Without EDNS there is no OPT to carry it.
    let plain = build_query(0x5353, "www.stale.test.", 1, None, false);
    let raw = udp_exchange(stale.port, &plain, Duration::from_secs(5)).unwrap();
    assert!(!has_ede(&raw, 3));
    // Never asked before: nothing to serve stale, SERVFAIL within the timeout.
    let m = ask_udp(stale.port, "ns.stale.test.", 1, None);
    assert_eq!(m.metadata.response_code, ResponseCode::ServFail);

    relay.restore();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let m = ask_udp(stale.port, "www.stale.test.", 1, None);
        if m.answers.first().is_some_and(|r| r.ttl == 300) {
            break;
        }
        assert!(Instant::now() < deadline, "no fresh answer within 30 s");
        std::thread::sleep(Duration::from_millis(200));
    }
    drop((stale, fresh_only));
    block_on(db.drop_db());
}
