//! The HTTP API's reads against FerretDB and the real server: PowerDNS's
//! filters (`?zone=`, `rrsets=false`, `rrset_name`, `rrset_type`), and the
//! zone list and a zone's RRsets sent as the database cursor delivers
//! them, not built whole first.
//!
//! ```text
//!  filters: GET …/zones?zone=, …/zones/{id}?rrsets=false|rrset_name=&rrset_type=
//!  streaming: server ─► Relay holding every getMore on a collection
//!     ─► the reply's first items arrive while the next batch is held
//!     ─► released: the rest, whole JSON
//! ```

use mongodns_testkit::*;
use serde_json::Value;
use std::io::{Read, Write};
use std::time::{Duration, Instant};

const KEY: &str = "api-k3y-for-reads";
const ZONES: &str = "/api/v1/servers/localhost/zones";

const READS_ZONE: &str = "$ORIGIN reads.test.
@ 300 IN SOA ns admin 1 3600 600 86400 60
@ 300 IN NS ns
ns 300 IN A 192.0.2.1
www 300 IN A 192.0.2.10
www 300 IN A 192.0.2.11
www 300 IN TXT \"hello\"
mail 300 IN MX 10 www
";

/// A GET with the key: (status line, body).
fn get(port: u16, path: &str) -> (String, String) {
    http_request(port, "GET", path, &format!("X-API-Key: {KEY}\r\n"), "")
}

/// A GET that must succeed, its body parsed.
fn get_json(port: u16, path: &str) -> Value {
    let (status, body) = get(port, path);
    assert!(status.contains("200"), "{path}: {status} {body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"))
}

/// (name, type, record count) of each RRset of a zone read.
fn rrsets(zone: &Value) -> Vec<(String, String, usize)> {
    zone["rrsets"]
        .as_array()
        .expect("rrsets")
        .iter()
        .map(|r| {
            let name = r["name"].as_str().unwrap().to_string();
            let rtype = r["type"].as_str().unwrap().to_string();
            (name, rtype, r["records"].as_array().unwrap().len())
        })
        .collect()
}

fn serve_api(uri: &str, db: &TestZoneDb) -> (ServerProcess, u16) {
    let port = free_tcp_port();
    let listen = format!("127.0.0.1:{port}");
    let args = ["--api-listen", &listen, "--api-key", KEY];
    (ServerProcess::start_with_uri(uri, &db.name, &args), port)
}

#[test]
fn zone_reads_filter_as_powerdns_does() {
    let db = block_on(async {
        let db = TestZoneDb::new("api_filters").await;
        db.import("reads.test.", READS_ZONE, false).await;
        let other =
            "$ORIGIN other.test.\n@ 300 IN SOA ns admin 1 3600 600 86400 60\n@ 300 IN NS ns\n";
        db.import("other.test.", other, false).await;
        db
    });
    let (server, api) = serve_api(&database_uri(), &db);
    let all = get_json(api, ZONES);
    let names: Vec<&str> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|z| z["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["other.test.", "reads.test."],
        "every zone, in name order"
    );
    let one = get_json(api, &format!("{ZONES}?zone=reads.test."));
    assert_eq!(one.as_array().unwrap().len(), 1);
    assert_eq!(one[0]["name"], "reads.test.");
    assert_eq!(
        get_json(api, &format!("{ZONES}?zone=reads.test")),
        one,
        "with or without the dot"
    );
    assert_eq!(
        get_json(api, &format!("{ZONES}?zone=nowhere.test.")),
        Value::Array(vec![])
    );

    let zone = format!("{ZONES}/reads.test.");
    let whole = get_json(api, &zone);
    assert_eq!(
        rrsets(&whole).len(),
        6,
        "SOA, NS, ns A, www A and TXT, mail MX"
    );
    let bare = get_json(api, &format!("{zone}?rrsets=false"));
    assert!(bare.get("rrsets").is_none(), "no rrsets: {bare}");
    assert_eq!(
        (bare["serial"].clone(), bare["dnssec"].clone()),
        (whole["serial"].clone(), Value::Bool(false))
    );
    let www = get_json(api, &format!("{zone}?rrset_name=www.reads.test."));
    let mut got = rrsets(&www);
    got.sort();
    let name = "www.reads.test.".to_string();
    assert_eq!(
        got,
        [
            (name.clone(), "A".into(), 2),
            (name.clone(), "TXT".into(), 1)
        ]
    );
    let a = get_json(
        api,
        &format!("{zone}?rrset_name=www.reads.test.&rrset_type=A"),
    );
    assert_eq!(rrsets(&a), [(name, "A".into(), 2)]);
    let nothing = get_json(api, &format!("{zone}?rrset_name=none.reads.test."));
    assert_eq!(rrsets(&nothing), []);
    for bad in [
        "?rrset_type=A",
        "?rrset_name=www.reads.test.&rrset_type=BOGUS",
        "?rrsets=maybe",
    ] {
        let (status, body) = get(api, &format!("{zone}{bad}"));
        assert!(status.contains("422"), "{bad}: {status} {body}");
        assert!(body.starts_with(r#"{"error":"#), "{bad}: {body}");
    }
    drop(server);
    block_on(db.drop_db());
}

/// Reads a GET's reply until it holds `marker` (within one chunk), then while `relay` holds
/// the next batch, checks the reply is not complete; releases it and
/// returns the whole body.
fn read_while_held(api: u16, path: &str, marker: &str, relay: &Relay) -> String {
    let before = relay.held();
    let mut s = connect_loopback(api);
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nX-API-Key: {KEY}\r\n\r\n"
    )
    .unwrap();
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !String::from_utf8_lossy(&got).contains(marker) {
        assert!(
            Instant::now() < deadline,
            "no items while the next batch is held: {}",
            String::from_utf8_lossy(&got)
        );
        let mut buf = [0u8; 8192];
        if let Ok(n) = s.read(&mut buf) {
            assert!(n > 0, "closed early: {}", String::from_utf8_lossy(&got));
            got.extend_from_slice(&buf[..n]);
        }
    }
    while relay.held() == before {
        assert!(
            Instant::now() < deadline,
            "the next batch was never asked for"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !String::from_utf8_lossy(&got).ends_with("0\r\n\r\n"),
        "complete before the next batch"
    );
    relay.release();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.read_to_end(&mut got).unwrap();
    let text = String::from_utf8(got).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    dechunk(body)
}

#[test]
fn zone_list_and_zone_read_are_sent_as_the_cursor_delivers() {
    let (zones, names) = (120, 1500);
    let db = block_on(async {
        let db = TestZoneDb::new("api_stream").await;
        let mut big =
            "$ORIGIN big.test.\n@ 300 IN SOA ns admin 1 3600 600 86400 60\n@ 300 IN NS ns\n"
                .to_string();
        for i in 0..names {
            big.push_str(&format!("n{i:05} 300 IN A 192.0.2.1\n"));
        }
        db.import("big.test.", &big, false).await;
        for i in 1..zones {
            let text = format!("$ORIGIN z{i:03}.test.\n@ 300 IN SOA ns admin 1 3600 600 86400 60\n@ 300 IN NS ns\n");
            db.import(&format!("z{i:03}.test."), &text, false).await;
        }
        db
    });
    let relay = Relay::to_database();
    let (server, api) = serve_api(&relay.uri(), &db);

    relay.hold_requests(|r| is_get_more(r, "zones"));
    let list = read_while_held(api, ZONES, "\"name\":", &relay);
    let list: Value = serde_json::from_str(&list).unwrap();
    assert_eq!(
        list.as_array().unwrap().len(),
        zones,
        "every zone, once the batch came"
    );

    relay.hold_requests(|r| is_get_more(r, "nodes"));
    let path = format!("{ZONES}/big.test.");
    let zone = read_while_held(api, &path, "\"type\":\"A\"", &relay);
    let zone: Value = serde_json::from_str(&zone).unwrap();
    assert_eq!(
        rrsets(&zone).len(),
        names + 2,
        "every RRset, once the batch came"
    );
    drop(server);
    block_on(db.drop_db());
}
