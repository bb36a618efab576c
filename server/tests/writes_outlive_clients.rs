//! A write, once begun, runs to its end when its client leaves: a PATCH
//! sent by `curl` to the HTTP API, and an UPDATE sent by `nsupdate` over
//! TCP, each into a secured zone, the client killed while the database
//! shows the change-set half written. The zone then holds the whole
//! change-set, at a new serial, and verifies.
//!
//! ```text
//!  secured zone (NSEC) ─► client sends NAMES new names
//!     ─► poll the database: a new name written, the serial not moved yet
//!     ─► client killed (SIGKILL: the socket closes)
//!     ─► the zone's locks gone (the write ended, whole or cut)
//!     ─► served serial moved; every name in the AXFR; dnssec-verify and
//!        ldns-verify-zone accept it
//! ```

use mongodb::bson::{doc, Document};
use mongodns_testkit::*;
use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const KEY: &str = "api-k3y-for-tests";
const SECRET: &str = "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LTAxMjM=";

/// New names in the change-set: enough that writing and signing them
/// lasts well past the moment the first one is in the database.
const NAMES: usize = 400;

/// Longest wait for the cut write to end (a hang fails).
const SETTLE_LIMIT: Duration = Duration::from_secs(120);

fn zone_text(zone: &str) -> String {
    format!(
        "$ORIGIN {zone}\n$TTL 300\n\
         @ IN SOA ns hostmaster 7 3600 600 604800 60\n\
         @ IN NS ns\nns IN A 192.0.2.53\nwww IN A 192.0.2.1\n"
    )
}

/// A secured (NSEC) zone `zone` and a server with its HTTP API, zone
/// transfers to loopback and an UPDATE key for the zone: (db, server, API port).
fn secured_and_served(tag: &str, zone: &str) -> (TestZoneDb, ServerProcess, u16) {
    let db = block_on(async {
        let db = TestZoneDb::new(tag).await;
        db.import(zone, &zone_text(zone), true).await;
        db
    });
    run_tool(
        &db.name,
        "mongodns-sign",
        &["-q", "secure-zone", zone, "--grace", "0"],
    );
    let api = free_tcp_port();
    let flags = format!("--api-listen 127.0.0.1:{api} --api-key {KEY} --axfr-allow 127.0.0.1/32");
    let key = format!("hmac-sha256:upd:{SECRET} zones={zone} update");
    let mut args: Vec<&str> = flags.split(' ').collect();
    args.extend(["--tsig-key", &key]);
    let server = ServerProcess::start(&db.name, &args);
    (db, server, api)
}

/// The owner names the change-set adds.
fn new_names(zone: &str) -> Vec<String> {
    (0..NAMES).map(|i| format!("n{i:04}.{zone}")).collect()
}

/// The zone's serial in its document (moves at the publish).
fn stored_serial(db: &TestZoneDb, zone: &str) -> i64 {
    let zones = db.store.database().collection::<Document>("zones");
    let doc = block_on(async { zones.find_one(doc! {"_id": zone}).await })
        .unwrap()
        .expect("the zone's document");
    doc.get_i64("serial")
        .or_else(|_| doc.get_i32("serial").map(i64::from))
        .unwrap()
}

/// True once one of `names` has a node in the database.
fn some_name_written(db: &TestZoneDb, zone: &str, names: &[String]) -> bool {
    let nodes = db.store.database().collection::<Document>("nodes");
    let filter = doc! {"zone": zone, "name": {"$in": names.to_vec()}};
    block_on(async { nodes.count_documents(filter).await }).unwrap() > 0
}

/// Kills `client` while its write is half done: a new name written and
/// the serial not moved yet (so the kill falls inside the write).
fn kill_mid_write(db: &TestZoneDb, zone: &str, names: &[String], client: &mut Child) {
    let before = stored_serial(db, zone);
    let start = Instant::now();
    while !some_name_written(db, zone, names) {
        assert!(
            start.elapsed() < SETTLE_LIMIT,
            "the write never began: {:?}",
            client.try_wait()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    client.kill().unwrap();
    let _ = client.wait();
    assert_eq!(
        stored_serial(db, zone),
        before,
        "the write ended before its client was killed: make NAMES larger"
    );
    println!("client killed {:?} after the request", start.elapsed());
}

/// Waits until neither the zone lock nor the signing lease of `zone` is
/// held: the write has ended, run to its end or cut.
fn wait_unlocked(db: &TestZoneDb, zone: &str) {
    let locks = db.store.database().collection::<Document>("locks");
    let ids = vec![format!("zone {zone}"), format!("sign {zone}")];
    let start = Instant::now();
    let held = || {
        let filter = doc! {"_id": {"$in": ids.clone()}};
        block_on(async { locks.count_documents(filter).await }).unwrap() > 0
    };
    while held() {
        assert!(start.elapsed() < SETTLE_LIMIT, "the zone stays locked");
        std::thread::sleep(Duration::from_millis(20));
    }
    println!(
        "timing: the write ended {:?} after its client left",
        start.elapsed()
    );
}

/// The zone as served after the cut write: a new serial, every new name,
/// signed and verified.
fn assert_whole_and_signed(db: &TestZoneDb, server: &ServerProcess, zone: &str, serial: u32) {
    let moved = || soa_serial(server.port, zone).is_some_and(|s| s != serial);
    time_until("the change-set's serial", moved);
    let text = axfr_text(server.port, zone);
    let missing: Vec<String> = new_names(zone)
        .into_iter()
        .filter(|n| !text.contains(&format!("\n{n}\t")))
        .collect();
    assert!(
        missing.is_empty(),
        "{} of {NAMES} names missing, e.g. {:?}",
        missing.len(),
        missing.first()
    );
    verify_signed_zone(&db.dir, zone, &text);
}

#[test]
fn a_patch_whose_client_leaves_is_applied_whole_and_signed() {
    let zone = "cut-api.test.";
    let (db, server, api) = secured_and_served("outlive_api", zone);
    let serial = soa_serial(server.port, zone).expect("the zone is served");
    let names = new_names(zone);
    let rrsets: Vec<String> = names
        .iter()
        .map(|n| {
            format!(
                r#"{{"name":"{n}","type":"A","ttl":300,"changetype":"REPLACE","records":[{{"content":"192.0.2.9","disabled":false}}]}}"#
            )
        })
        .collect();
    let body = db.dir.join("patch.json");
    std::fs::write(&body, format!(r#"{{"rrsets":[{}]}}"#, rrsets.join(","))).unwrap();
    let mut curl = Command::new("curl")
        .args(["-s", "-X", "PATCH", "-H", &format!("X-API-Key: {KEY}")])
        .arg("--data-binary")
        .arg(format!("@{}", body.display()))
        .arg(format!(
            "http://127.0.0.1:{api}/api/v1/servers/localhost/zones/{zone}"
        ))
        .stdout(Stdio::null())
        .spawn()
        .expect("curl is needed");
    kill_mid_write(&db, zone, &names, &mut curl);
    wait_unlocked(&db, zone);
    assert_whole_and_signed(&db, &server, zone, serial);
    drop(server);
    block_on(db.drop_db());
}

#[test]
fn an_update_over_tcp_whose_client_leaves_is_applied_whole_and_signed() {
    let zone = "cut-upd.test.";
    let (db, server, _) = secured_and_served("outlive_update", zone);
    let serial = soa_serial(server.port, zone).expect("the zone is served");
    let names = new_names(zone);
    let mut script = format!("server 127.0.0.1 {}\nzone {zone}\n", server.port);
    for n in &names {
        script.push_str(&format!("update add {n} 300 A 192.0.2.9\n"));
    }
    script.push_str("send\n");
    let mut nsupdate = Command::new("nsupdate")
        .args([
            "-v",
            "-t",
            "120",
            "-y",
            &format!("hmac-sha256:upd:{SECRET}"),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("nsupdate is needed (bind9-dnsutils)");
    let mut stdin = nsupdate.stdin.take().unwrap();
    stdin.write_all(script.as_bytes()).unwrap();
    kill_mid_write(&db, zone, &names, &mut nsupdate);
    drop(stdin);
    wait_unlocked(&db, zone);
    assert_whole_and_signed(&db, &server, zone, serial);
    drop(server);
    block_on(db.drop_db());
}
