//! The HTTP listeners' slots against silent connections from many source
//! prefixes, with the real binary: the per-source share alone lets four
//! prefixes fill every slot; a newcomer must then evict the oldest
//! connection that has not sent its request head, so `/health` and the
//! API are still answered, a connection mid-request is never evicted, and
//! HTTP evictions are counted apart from the DNS listener's
//! `tcp_evictions`.
//!
//! ```text
//!  SilentFlood: 5 prefixes (127.0.2–6.1) × the share, reconnecting
//!     ─► control (16 slots): /health from 127.0.0.1 answered 200, 5 rounds
//!     ─► API (64 slots): authenticated GET answered 200, 5 rounds
//!  control_evictions / api_evictions > 0, tcp_evictions 0
//!  PATCH head sent, 100 Continue seen (the head is in) ─► flood
//!     ─► body sent ─► answered (not evicted)
//! ```

#[path = "http_slots/flood.rs"]
mod flood;

use flood::{connect_from, SilentFlood};
use mongodns_testkit::*;
use std::io::{Read, Write};
use std::time::{Duration, Instant};

const ZONE: &str =
    "$ORIGIN slots.test.\n@ 300 IN SOA ns admin 1 3600 600 86400 60\n@ 300 IN NS ns\nns 300 IN A 192.0.2.1\n";
const KEY: &str = "api-k3y-for-slots";

fn setup(tag: &str) -> TestZoneDb {
    block_on(async {
        let db = TestZoneDb::new(tag).await;
        db.import("slots.test.", ZONE, false).await;
        db
    })
}

/// The server with its API and control endpoint: (server, API, control).
fn serve(db: &TestZoneDb) -> (ServerProcess, u16, u16) {
    let api = free_tcp_port();
    let listen = format!("127.0.0.1:{api}");
    let (server, control) =
        start_with_control(&db.name, &["--api-listen", &listen, "--api-key", KEY]);
    (server, api, control)
}

/// One request from 127.0.0.1 (a prefix the flood does not use): its
/// status line, or why there was none (refused, reset, nothing in 10 s).
fn status_of(port: u16, path: &str, headers: &str) -> String {
    let Ok(mut s) = connect_from("127.0.0.1", port) else {
        return "connect failed".into();
    };
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: x\r\n{headers}\r\n");
    if let Err(e) = s.write_all(request.as_bytes()) {
        return format!("write: {e}");
    }
    let mut text = String::new();
    match s.read_to_string(&mut text) {
        Ok(_) if text.is_empty() => "closed without a reply".into(),
        Ok(_) => text.lines().next().unwrap_or("").to_string(),
        Err(e) => format!("read: {e}"),
    }
}

/// Five requests, each after the flood has reopened what it lost: each
/// must be answered 200.
fn answered_under_flood(flood: &SilentFlood, port: u16, path: &str, headers: &str) {
    for round in 0..5 {
        flood.next_pass();
        let status = status_of(port, path, headers);
        assert!(
            status.starts_with("HTTP/1.1 200"),
            "round {round}: {path} while silent connections hold the slots: {status}"
        );
    }
}

/// The flood stopped: it had connections evicted, counted by the
/// endpoint (`evictions` on the control endpoint), never by the DNS
/// listener.
fn evicted_by_http(flood: SilentFlood, what: &str, control: u16, evictions: &str) {
    let reconnects = flood.stop();
    eprintln!("{what}: the flood reconnected {reconnects} times");
    assert!(stat(control, evictions) > 0);
    assert_eq!(
        stat(control, "tcp_evictions"),
        0,
        "HTTP is not the DNS listener"
    );
}

#[test]
fn silent_prefixes_cannot_keep_health_from_being_answered() {
    let db = setup("hs_ctl");
    let (server, control) = start_with_control(&db.name, &[]);
    // Five prefixes × the share (4): 20 silent connections for 16 slots.
    let flood = SilentFlood::start(control, 2..7, 4);
    answered_under_flood(&flood, control, "/health", "");
    evicted_by_http(flood, "control", control, "control_evictions");
    drop(server);
    block_on(db.drop_db());
}

#[test]
fn silent_prefixes_cannot_keep_the_api_from_answering() {
    let db = setup("hs_api");
    let (server, api, control) = serve(&db);
    // Five prefixes × the share (16): 80 silent connections for 64 slots.
    let flood = SilentFlood::start(api, 2..7, 16);
    let key = format!("X-API-Key: {KEY}\r\n");
    answered_under_flood(&flood, api, "/api/v1/servers/localhost/zones", &key);
    evicted_by_http(flood, "API", control, "api_evictions");
    drop(server);
    block_on(db.drop_db());
}

#[test]
fn a_connection_mid_request_is_never_evicted() {
    let db = setup("hs_mid");
    let (server, api, control) = serve(&db);
    // A PATCH whose head is in (the server asked for the body: 100
    // Continue) and whose body is held back.
    let mut mid = connect_from("127.0.2.1", api).unwrap();
    mid.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        mid,
        "PATCH /api/v1/servers/localhost/zones/slots.test. HTTP/1.1\r\nHost: x\r\nX-API-Key: {KEY}\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n"
    )
    .unwrap();
    let mut head = [0u8; 25];
    mid.read_exact(&mut head).unwrap();
    assert!(
        head.starts_with(b"HTTP/1.1 100 Continue"),
        "{}",
        String::from_utf8_lossy(&head)
    );
    // Its prefix is the oldest and as heavy as any (15 more from it), so
    // an eviction blind to request heads would pick it first.
    let flood = SilentFlood::start(api, 2..7, 16);
    let deadline = Instant::now() + Duration::from_secs(20);
    while stat(control, "api_evictions") < 100 {
        assert!(Instant::now() < deadline, "no evictions under the flood");
        flood.next_pass();
    }
    mid.write_all(b"{}").unwrap();
    let mut reply = String::new();
    let read = mid.read_to_string(&mut reply);
    flood.stop();
    let status = reply
        .lines()
        .find(|l| l.starts_with("HTTP/1.1 "))
        .unwrap_or("");
    assert!(
        !status.is_empty(),
        "the request mid-flight was answered: {read:?} {reply:?}"
    );
    drop(server);
    block_on(db.drop_db());
}
