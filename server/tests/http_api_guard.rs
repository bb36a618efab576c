//! The HTTP API's guards against the real server: the root is no zone it
//! manages, wrong keys are throttled per source, a plain-HTTP listener off
//! loopback is warned about, and a database error is never echoed.
//!
//! ```text
//!  POST/GET the zone "." ─► 422, nothing created
//!  MAX_FAILURES wrong keys ─► 401 each; then 429 unchecked (the right key too)
//!  --api-listen 0.0.0.0:port ─► a warning in the log; 127.0.0.1: none
//!  the database cut (Relay) ─► 500 {"error": "… error id X …"}, the cause
//!     logged beside X, never sent
//! ```

use mongodns_testkit::*;
use std::path::PathBuf;
use std::time::{Duration, Instant};

const KEY: &str = "api-k3y-for-guards";
const ZONES: &str = "/api/v1/servers/localhost/zones";

fn request(port: u16, method: &str, path: &str, key: &str, body: &str) -> (String, String) {
    let headers = format!("X-API-Key: {key}\r\nContent-Type: application/json\r\n");
    http_request(port, method, path, &headers, body)
}

/// The server with its API on `listen_ip`, logging to a file:
/// (server, API port, log path).
fn serve_logging(uri: &str, db: &TestZoneDb, listen_ip: &str) -> (ServerProcess, u16, PathBuf) {
    let port = free_tcp_port();
    let listen = format!("{listen_ip}:{port}");
    let log = std::env::temp_dir().join(format!("{}-{port}.log", db.name));
    let args = ["--api-listen", &listen, "--api-key", KEY];
    (
        ServerProcess::start_logging(uri, &db.name, &args, &log),
        port,
        log,
    )
}

fn read_log(log: &PathBuf) -> String {
    std::fs::read_to_string(log).unwrap_or_default()
}

#[test]
fn the_root_is_no_zone_for_the_api() {
    let db = block_on(TestZoneDb::new("api_root"));
    let (server, api, _) = serve_logging(&database_uri(), &db, "127.0.0.1");
    let body = r#"{"name": ".", "kind": "Native", "nameservers": ["ns.example."]}"#;
    let (status, reply) = request(api, "POST", ZONES, KEY, body);
    assert!(status.contains("422"), "{status} {reply}");
    assert!(reply.contains("root zone"), "{reply}");
    let (status, reply) = request(api, "GET", &format!("{ZONES}/."), KEY, "");
    assert!(status.contains("422"), "{status} {reply}");
    let (status, reply) = request(api, "GET", ZONES, KEY, "");
    assert!(
        status.contains("200") && reply == "[]",
        "nothing created: {reply}"
    );
    drop(server);
    block_on(db.drop_db());
}

#[test]
fn wrong_keys_are_throttled_per_source() {
    let db = block_on(TestZoneDb::new("api_throttle"));
    let (server, api, _) = serve_logging(&database_uri(), &db, "127.0.0.1");
    let (status, _) = request(api, "GET", ZONES, KEY, "");
    assert!(status.contains("200"), "{status}");
    // Ten wrong keys: 401 each.
    for i in 0..10 {
        let (status, body) = request(api, "GET", ZONES, "wrong", "");
        assert!(status.contains("401"), "wrong key {i}: {status} {body}");
    }
    // Then 429 without the key being checked: the right one too.
    let (status, body) = request(api, "GET", ZONES, "wrong", "");
    assert!(status.contains("429"), "{status} {body}");
    let (status, body) = request(api, "GET", ZONES, KEY, "");
    assert!(
        status.contains("429"),
        "the right key is not checked: {status} {body}"
    );
    assert!(body.contains("too many wrong API keys"), "{body}");
    drop(server);
    block_on(db.drop_db());
}

#[test]
fn a_plain_http_api_off_loopback_is_warned_about() {
    let db = block_on(TestZoneDb::new("api_warn"));
    let warning = "listens off loopback in plain HTTP";
    let (server, _, log) = serve_logging(&database_uri(), &db, "127.0.0.1");
    drop(server);
    assert!(!read_log(&log).contains(warning), "no warning on loopback");
    // Bound on every address, spoken to by nobody: only the log is read.
    let (server, _, log) = serve_logging(&database_uri(), &db, "0.0.0.0");
    let text = read_log(&log);
    assert!(text.contains(warning), "the warning at start: {text}");
    drop(server);
    block_on(db.drop_db());
}

#[test]
fn a_database_error_is_logged_with_an_id_and_not_echoed() {
    let db = block_on(TestZoneDb::new("api_500"));
    let relay = Relay::to_database();
    let (server, api, log) = serve_logging(&relay.uri(), &db, "127.0.0.1");
    relay.cut();
    let (status, body) = request(api, "GET", &format!("{ZONES}/cut.test."), KEY, "");
    assert!(status.contains("500"), "{status} {body}");
    for leak in ["MongoDB", "127.0.0.1", &relay.port.to_string(), "Kind"] {
        assert!(!body.contains(leak), "{leak:?} sent to the client: {body}");
    }
    let id = body
        .split("error id ")
        .nth(1)
        .and_then(|rest| rest.get(..8))
        .unwrap_or_else(|| panic!("no error id: {body}"))
        .to_string();
    // The cause is in the log beside the same id (polled: the log is
    // written as the server goes).
    let deadline = Instant::now() + Duration::from_secs(10);
    let logged = loop {
        let text = read_log(&log);
        let line = text
            .lines()
            .find(|l| l.contains("HTTP API request failed") && l.contains(&id))
            .map(str::to_string);
        if let Some(line) = line {
            break line;
        }
        assert!(Instant::now() < deadline, "id {id} not in the log: {text}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(logged.contains("MongoDB"), "the cause is logged: {logged}");
    relay.restore();
    drop(server);
    block_on(db.drop_db());
}
