//! The PowerDNS-compatible HTTP API against FerretDB and the real server,
//! driven by python-powerdns (a PowerDNS API client from PyPI): what it
//! creates and patches is answered over DNS within a second; a wrong key
//! is a 401, an unknown zone a 404; the API does not start without a key.
//!
//! ```text
//!  server --api-listen --api-key ─► tests/http_api/pdns_client.py (create
//!  zone, REPLACE, DELETE, read back, bad content) ─► ask_udp until answered
//!  plain HTTP: wrong key 401, unknown zone 404
//! ```

use hickory_proto::op::ResponseCode;
use mongodns_testkit::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

const KEY: &str = "api-k3y-for-tests";

/// The server with its API on a free port: (server, API port).
fn serve_api(db: &TestZoneDb) -> (ServerProcess, u16) {
    let port = free_tcp_port();
    let listen = format!("127.0.0.1:{port}");
    let server = ServerProcess::start(&db.name, &["--api-listen", &listen, "--api-key", KEY]);
    (server, port)
}

/// One plain HTTP/1.1 request with `X-API-Key: key`: (status line, body).
fn api_request(port: u16, method: &str, path: &str, key: &str) -> (String, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: x\r\nX-API-Key: {key}\r\nContent-Length: 0\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (head.lines().next().unwrap_or("").to_string(), body.into())
}

/// Fails with the install command when python-powerdns is missing.
fn require_python_powerdns() {
    let found = Command::new("python3")
        .args(["-c", "import powerdns"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        found,
        "python-powerdns is not installed: python3 -m pip install python-powerdns==2.1.0 (.ci/run does)"
    );
}

#[test]
fn python_powerdns_creates_and_patches_what_dns_answers() {
    require_python_powerdns();
    let db = block_on(TestZoneDb::new("http_api_client"));
    let (server, api) = serve_api(&db);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/http_api/pdns_client.py");
    let mut cmd = Command::new("python3");
    cmd.arg(script)
        .arg(format!("http://127.0.0.1:{api}/api/v1"))
        .args([KEY, "pyapi.test."]);
    let out = run_bounded(cmd, "pdns_client.py", Duration::from_secs(60));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "pdns_client.py failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("\"bad_content\": [422"), "{stdout}");
    assert!(
        stdout.contains("bad content"),
        "the reason is given: {stdout}"
    );

    let p = server.port;
    answered_within_a_second(p, "www.pyapi.test.", 1, ResponseCode::NoError, 2);
    answered_within_a_second(p, "txt.pyapi.test.", 16, ResponseCode::NoError, 1);
    answered_within_a_second(p, "old.pyapi.test.", 1, ResponseCode::NXDomain, 0);
    answered_within_a_second(p, "bad.pyapi.test.", 1, ResponseCode::NXDomain, 0);
    answered_within_a_second(p, "pyapi.test.", 2, ResponseCode::NoError, 1);
    let www = lines(&ask_udp(p, "www.pyapi.test.", 1, None).answers);
    assert_eq!(
        www,
        [
            "www.pyapi.test. 120 A 192.0.2.10",
            "www.pyapi.test. 120 A 192.0.2.11"
        ]
    );
    drop(server);
    block_on(db.drop_db());
}

#[test]
fn wrong_key_is_401_and_unknown_zone_404() {
    let db = block_on(TestZoneDb::new("http_api_errors"));
    let (server, api) = serve_api(&db);
    let zones = "/api/v1/servers/localhost/zones";
    let (status, body) = api_request(api, "GET", zones, "not-the-key");
    assert!(status.contains("401"), "{status}");
    assert_eq!(body, r#"{"error":"Unauthorized"}"#);
    let (status, body) = api_request(api, "GET", &format!("{zones}/nowhere.test."), KEY);
    assert!(status.contains("404"), "{status} {body}");
    assert!(body.starts_with(r#"{"error":"#), "{body}");
    let (status, body) = api_request(api, "PATCH", &format!("{zones}/nowhere.test"), KEY);
    assert!(
        status.contains("422") || status.contains("404"),
        "{status} {body}"
    );
    let (status, body) = api_request(api, "GET", "/api/v1/servers/localhost", KEY);
    assert!(status.contains("200") && body.contains("\"daemon_type\":\"authoritative\""));
    still_serving_dns(&server);
    drop(server);
    block_on(db.drop_db());
}

/// The server is still serving DNS after the API's errors.
fn still_serving_dns(server: &ServerProcess) {
    let m = ask_udp(server.port, "nowhere.test.", 1, None);
    assert_eq!(m.metadata.response_code, ResponseCode::Refused);
}

#[test]
fn the_api_does_not_start_without_a_key() {
    let out = Command::new(binary("mongodns-server"))
        .args(["--api-listen", "127.0.0.1:1", "--check-config"])
        .env_remove("MONGODNS_API_KEY")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("api_listen needs api_key"), "{stderr}");
}
