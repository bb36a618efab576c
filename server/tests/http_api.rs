//! The PowerDNS-compatible HTTP API against FerretDB and the real server,
//! driven by python-powerdns (a PowerDNS API client from PyPI): what it
//! creates and patches is answered over DNS (a hang fails); a wrong key
//! is a 401, an unknown zone a 404; the API does not start without a key.
//!
//! ```text
//!  server --api-listen --api-key ─► tests/http_api/pdns_client.py (create
//!  zone, REPLACE, DELETE, read back, bad content) ─► ask_udp until answered
//!  plain HTTP: wrong key 401, unknown zone 404
//!  secured zone: PATCH ─► signed in the change-set ─► AXFR verifies
//! ```

use hickory_proto::op::ResponseCode;
use mongodns_testkit::*;
use std::io::Write;
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

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
    api_send(port, method, path, key, "")
}

/// [`api_request`] with a JSON body.
fn api_send(port: u16, method: &str, path: &str, key: &str, body: &str) -> (String, String) {
    let headers = format!("X-API-Key: {key}\r\nContent-Type: application/json\r\n");
    http_request(port, method, path, &headers, body)
}

/// Fails with the install command when python-powerdns is missing.
fn require_python_powerdns() {
    let found = Command::new("python3")
        .args(["-c", "import powerdns"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        found,
        "python-powerdns is not on python3's path: run scripts/test-deps and put .venv/bin first on PATH (scripts/test does both)"
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
    // The zone the client deleted is answered for no more.
    assert!(
        stdout.contains("\"deleted\": \"doomed-pyapi.test.\""),
        "{stdout}"
    );
    assert!(
        stdout.contains("bad content"),
        "the reason is given: {stdout}"
    );

    let p = server.port;
    answered_after(p, "www.pyapi.test.", 1, ResponseCode::NoError, 2);
    answered_after(p, "txt.pyapi.test.", 16, ResponseCode::NoError, 1);
    answered_after(p, "old.pyapi.test.", 1, ResponseCode::NXDomain, 0);
    answered_after(p, "bad.pyapi.test.", 1, ResponseCode::NXDomain, 0);
    answered_after(p, "pyapi.test.", 2, ResponseCode::NoError, 1);
    // And as an operator checks it: with dig.
    let dig = Command::new("dig")
        .args([
            "+short",
            "@127.0.0.1",
            "-p",
            &p.to_string(),
            "www.pyapi.test.",
            "A",
        ])
        .output()
        .expect("dig is needed (bind9-dnsutils)");
    let mut got: Vec<String> = String::from_utf8_lossy(&dig.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    got.sort();
    assert_eq!(
        got,
        ["192.0.2.10", "192.0.2.11"],
        "dig +short www.pyapi.test. A"
    );
    let www = lines(&ask_udp(p, "www.pyapi.test.", 1, None).answers);
    assert_eq!(
        www,
        [
            "www.pyapi.test. 120 A 192.0.2.10",
            "www.pyapi.test. 120 A 192.0.2.11"
        ]
    );
    let refused = ResponseCode::Refused;
    answered_after(p, "doomed-pyapi.test.", 6, refused, 0);
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

#[test]
fn a_zone_created_with_rrsets_the_rules_refuse_is_not_created() {
    let db = block_on(TestZoneDb::new("http_api_create_whole"));
    let (server, api) = serve_api(&db);
    let zones = "/api/v1/servers/localhost/zones";
    // A CNAME beside an A record: RFC 2136's rules refuse it.
    let body = r#"{"name": "half.test.", "kind": "Native", "nameservers": ["ns.half.test."],
        "rrsets": [
          {"name": "ns.half.test.", "type": "A", "ttl": 60, "changetype": "REPLACE",
           "records": [{"content": "192.0.2.53", "disabled": false}]},
          {"name": "www.half.test.", "type": "A", "ttl": 60, "changetype": "REPLACE",
           "records": [{"content": "192.0.2.1", "disabled": false}]},
          {"name": "www.half.test.", "type": "CNAME", "ttl": 60, "changetype": "REPLACE",
           "records": [{"content": "ns.half.test.", "disabled": false}]}]}"#;
    let (status, body) = api_send(api, "POST", zones, KEY, body);
    assert!(
        status.contains("422") && body.contains("CNAME"),
        "{status} {body}"
    );
    let (status, body) = api_request(api, "GET", &format!("{zones}/half.test."), KEY);
    assert!(status.contains("404"), "nothing created: {status} {body}");
    // The same zone without the CNAME: created whole, with an empty
    // non-terminal above a deep name.
    let body = r#"{"name": "half.test.", "kind": "Native", "nameservers": ["ns.half.test."],
        "rrsets": [{"name": "a.b.half.test.", "type": "A", "ttl": 60, "changetype": "REPLACE",
           "records": [{"content": "192.0.2.1", "disabled": false}]}]}"#;
    let (status, body) = api_send(api, "POST", zones, KEY, body);
    assert!(status.contains("201"), "{status} {body}");
    answered_after(server.port, "a.b.half.test.", 1, ResponseCode::NoError, 1);
    answered_after(server.port, "b.half.test.", 1, ResponseCode::NoError, 0);
    drop(server);
    block_on(db.drop_db());
}

#[test]
fn an_rrset_no_message_could_hold_is_a_422() {
    let db = block_on(TestZoneDb::new("http_api_rrset_cap"));
    let (server, api) = serve_api(&db);
    let zones = "/api/v1/servers/localhost/zones";
    // 4,080 A records take 65,280 octets in a message: over the cap.
    let records = |n: usize| {
        let r: Vec<String> = (0..n)
            .map(|i| {
                format!(
                    r#"{{"content":"10.0.{}.{}","disabled":false}}"#,
                    i >> 8,
                    i & 255
                )
            })
            .collect();
        format!(
            r#"[{{"name":"big.cap.test.","type":"A","ttl":60,"changetype":"REPLACE","records":[{}]}}]"#,
            r.join(",")
        )
    };
    let create = |n: usize| {
        format!(
            r#"{{"name":"cap.test.","kind":"Native","nameservers":["ns.example."],"rrsets":{}}}"#,
            records(n)
        )
    };
    let (status, body) = api_send(api, "POST", zones, KEY, &create(4080));
    assert!(
        status.contains("422") && body.contains("65264"),
        "{status} {body}"
    );
    let (status, body) = api_send(api, "POST", zones, KEY, &create(4079));
    assert!(status.contains("201"), "{status} {body}");
    let zone = format!("{zones}/cap.test.");
    let patch = |n: usize| format!(r#"{{"rrsets":{}}}"#, records(n));
    let (status, body) = api_send(api, "PATCH", &zone, KEY, &patch(4080));
    assert!(
        status.contains("422") && body.contains("65264"),
        "{status} {body}"
    );
    let (status, body) = api_send(api, "PATCH", &zone, KEY, &patch(10));
    assert!(status.contains("204"), "{status} {body}");
    answered_after(server.port, "big.cap.test.", 1, ResponseCode::NoError, 10);
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

const SIGNED: &str = "signed.test.";

/// The zone a PATCH signs into: SOA, NS, and what it replaces and deletes.
const SIGNED_TEXT: &str =
    "signed.test. 300 IN SOA ns.signed.test. admin.signed.test. 7 3600 600 604800 60
signed.test. 300 IN NS ns.signed.test.
ns.signed.test. 300 IN A 192.0.2.53
www.signed.test. 300 IN A 192.0.2.1
mail.signed.test. 300 IN MX 10 www.signed.test.
";

/// Secures `signed.test.` as an operator would: `mongodns-sign secure-zone`.
fn secure(db: &TestZoneDb) {
    let mut cmd = Command::new(binary("mongodns-sign"));
    cmd.args([
        "--mongodb-uri",
        &database_uri(),
        "--database",
        &db.name,
        "-q",
    ])
    .args(["secure-zone", SIGNED, "--grace", "0"]);
    let out = run_bounded(cmd, "mongodns-sign secure-zone", Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "secure-zone failed: {stderr}");
}

#[test]
fn a_patch_to_a_secured_zone_is_signed_in_its_change_set() {
    let db = block_on(async {
        let db = TestZoneDb::new("http_api_signed").await;
        db.import(SIGNED, SIGNED_TEXT, true).await;
        db
    });
    secure(&db);
    let port = free_tcp_port();
    let listen = format!("127.0.0.1:{port}");
    let args = [
        "--api-listen",
        &listen,
        "--api-key",
        KEY,
        "--axfr-allow",
        "127.0.0.1/32",
    ];
    let server = ServerProcess::start(&db.name, &args);
    let zone_path = "/api/v1/servers/localhost/zones/signed.test";
    let patch = r#"{"rrsets": [
        {"name": "www.signed.test.", "type": "A", "ttl": 120, "changetype": "REPLACE",
         "records": [{"content": "198.51.100.7", "disabled": false}]},
        {"name": "new.signed.test.", "type": "TXT", "ttl": 60, "changetype": "REPLACE",
         "records": [{"content": "\"added over the API\"", "disabled": false}]},
        {"name": "mail.signed.test.", "type": "MX", "changetype": "DELETE", "records": []}
    ]}"#;
    let (status, body) = api_send(port, "PATCH", zone_path, KEY, patch);
    assert!(status.contains("204"), "{status} {body}");
    answered_after(
        server.port,
        "new.signed.test.",
        16,
        ResponseCode::NoError,
        1,
    );
    answered_after(
        server.port,
        "mail.signed.test.",
        15,
        ResponseCode::NXDomain,
        0,
    );
    let text = axfr_text(server.port, SIGNED);
    verify_signed_zone(&db.dir, SIGNED, &text);
    assert!(
        text.contains("198.51.100.7") && !text.contains("192.0.2.1\n"),
        "{text}"
    );
    let (status, body) = api_request(port, "GET", zone_path, KEY);
    assert!(
        status.contains("200") && body.contains("\"dnssec\":true"),
        "{body}"
    );
    assert!(
        !body.contains("RRSIG") && !body.contains("\"NSEC\""),
        "{body}"
    );
    let refused =
        r#"{"rrsets": [{"name": "signed.test.", "type": "DNSKEY", "changetype": "DELETE"}]}"#;
    let (status, body) = api_send(port, "PATCH", zone_path, KEY, refused);
    assert!(
        status.contains("422") && body.contains("mongodns-sign"),
        "{status} {body}"
    );
    drop(server);
    block_on(db.drop_db());
}

#[test]
fn a_request_head_that_never_ends_is_closed_early() {
    let db = block_on(TestZoneDb::new("http_api_head"));
    let (server, api) = serve_api(&db);
    // One connection silent, one stalled inside its request line.
    let mut silent = TcpStream::connect(("127.0.0.1", api)).unwrap();
    let mut partial = TcpStream::connect(("127.0.0.1", api)).unwrap();
    partial.write_all(b"GET /api/v1/serv").unwrap();
    // The head has 5 s to arrive; the whole request 30 s. Waiting up to
    // 20 s tells the two apart.
    let start = Instant::now();
    assert!(closed_within(&mut silent, Duration::from_secs(20)));
    assert!(closed_within(&mut partial, Duration::from_secs(20)));
    eprintln!("both closed after {:?}", start.elapsed());
    let (status, _) = api_request(api, "GET", "/api/v1/servers", KEY);
    assert!(status.contains("200"), "{status}");
    drop(server);
    block_on(db.drop_db());
}
