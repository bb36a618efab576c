//! Catalog zones (RFC 9432): Knot DNS, configured as a catalog consumer of
//! mongodns, provisions the zones the catalog lists and drops the ones it
//! stops listing.
//!
//! ```text
//!  zones in the database ─► signer::catalog::sync ─► catalog.invalid.
//!     served by mongodns-server (AXFR from 127.0.0.1)
//!  knotd: catalog.invalid. secondary, catalog-role interpret, members from
//!     a template whose primary is mongodns ─► asks each member zone
//!  signer::catalog::sync by hand: creates the catalog, idempotent
//!  then the server (--catalog-zone) keeps it: a zone imported ─► Knot
//!  serves it;  a zone deleted ─► Knot stops answering for it (REFUSED);
//!  the delays are printed
//! ```

use hickory_proto::op::ResponseCode;
use mongodns_testkit::*;
use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

const CATALOG: &str = "catalog.invalid.";

fn zone_text(apex: &str, address: &str) -> String {
    format!(
        "$ORIGIN {apex}\n$TTL 300\n\
@ IN SOA ns.{apex} hostmaster.{apex} 1 7200 900 1209600 60\n\
@ IN NS ns.{apex}\nns IN A 192.0.2.53\nwww IN A {address}\n"
    )
}

/// Knot as a catalog consumer of the primary on `primary`, serving on `port`.
fn start_knot(dir: &Path, port: u16, primary: u16) -> Child {
    let d = dir.display();
    let secondary = [
        "    zonefile-load: none",
        "    zonefile-sync: -1",
        "    semantic-checks: off",
    ]
    .join("\n");
    let conf = [
        "server:".to_string(),
        format!("    rundir: {d}"),
        format!("    listen: 127.0.0.1@{port}"),
        "    udp-workers: 1\n    tcp-workers: 1\n    background-workers: 1".into(),
        format!("database:\n    storage: {d}"),
        "log:\n  - target: stderr\n    any: info".into(),
        format!("remote:\n  - id: primary\n    address: 127.0.0.1@{primary}"),
        "acl:\n  - id: notify\n    address: 127.0.0.0/8\n    action: notify".into(),
        format!("template:\n  - id: default\n    storage: {d}\n{secondary}"),
        format!(
            "  - id: member\n    storage: {d}\n    master: primary\n    acl: notify\n{secondary}"
        ),
        format!("zone:\n  - domain: {CATALOG}\n    master: primary\n    acl: notify"),
        "    catalog-role: interpret\n    catalog-template: member".into(),
        "    refresh-max-interval: 2".into(),
    ]
    .join("\n")
        + "\n";
    let path = dir.join("knot.conf");
    std::fs::write(&path, conf).unwrap();
    let log = std::fs::File::create(dir.join("knotd.log")).unwrap();
    Command::new("knotd")
        .arg("-c")
        .arg(&path)
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("knotd is needed (Debian's knot)")
}

fn knot_log(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("knotd.log")).unwrap_or_default()
}

/// Waits until Knot on `port` answers `name` A with `rcode` and `count`
/// answers; how long that took. Fails after `limit`.
fn until_knot(dir: &Path, port: u16, name: &str, rcode: ResponseCode, count: usize) -> Duration {
    let started = Instant::now();
    let limit = Duration::from_secs(30);
    loop {
        let q = build_query(7, name, 1, None, false);
        if let Some(reply) = udp_exchange(port, &q, Duration::from_millis(300)) {
            let m = hickory_proto::op::Message::from_vec(&reply).expect("a DNS reply");
            if m.metadata.response_code == rcode && m.answers.len() == count {
                return started.elapsed();
            }
        }
        assert!(
            started.elapsed() < limit,
            "Knot: {name} not {rcode:?} with {count} answers after {limit:?}; its log:\n{}",
            knot_log(dir)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn knot_follows_the_catalog_as_zones_come_and_go() {
    let catalog: dns::Name = CATALOG.parse().unwrap();
    let db = block_on(async {
        let db = TestZoneDb::new("catalog").await;
        db.import(
            "one.cat.test.",
            &zone_text("one.cat.test.", "192.0.2.1"),
            true,
        )
        .await;
        let done = signer::catalog::sync(&db.store, &catalog).await.unwrap();
        assert!(done.created, "the first sync creates the catalog");
        assert_eq!((done.added, done.removed), (1, 0));
        let again = signer::catalog::sync(&db.store, &catalog).await.unwrap();
        assert_eq!((again.created, again.added, again.removed), (false, 0, 0));
        db
    });
    // From here on the server keeps the catalog by itself.
    let ours = ServerProcess::start(
        &db.name,
        &["--axfr-allow", "127.0.0.1/32", "--catalog-zone", CATALOG],
    );
    let listed = axfr_text(ours.port, CATALOG);
    let label = signer::catalog::member_label(&"one.cat.test.".parse().unwrap());
    assert!(
        listed.contains(&format!("{label}.zones.{CATALOG}")) && listed.contains("one.cat.test."),
        "the member's PTR under zones: {listed}"
    );
    assert!(
        listed
            .lines()
            .any(|l| l.starts_with(&format!("version.{CATALOG}")) && l.contains("\"2\"")),
        "version TXT \"2\": {listed}"
    );

    let dir = db.dir.join("knot");
    std::fs::create_dir_all(&dir).unwrap();
    let knot_port = free_port();
    let mut knot = start_knot(&dir, knot_port, ours.port);
    let first = until_knot(
        &dir,
        knot_port,
        "www.one.cat.test.",
        ResponseCode::NoError,
        1,
    );
    eprintln!("catalog: Knot serves the first member {first:?} after it started");

    let created = block_on(async {
        db.import(
            "two.cat.test.",
            &zone_text("two.cat.test.", "192.0.2.2"),
            true,
        )
        .await;
        Instant::now()
    });
    until_knot(
        &dir,
        knot_port,
        "www.two.cat.test.",
        ResponseCode::NoError,
        1,
    );
    eprintln!(
        "catalog: a zone imported into the database served by Knot {:?} after the import",
        created.elapsed()
    );

    let deleted = block_on(async {
        let one: dns::Name = "one.cat.test.".parse().unwrap();
        db.store.delete_zone(&one).await.unwrap();
        Instant::now()
    });
    until_knot(
        &dir,
        knot_port,
        "www.one.cat.test.",
        ResponseCode::Refused,
        0,
    );
    eprintln!(
        "catalog: a deleted zone dropped by Knot {:?} after the delete",
        deleted.elapsed()
    );
    let listed = axfr_text(ours.port, CATALOG);
    let two = signer::catalog::member_label(&"two.cat.test.".parse().unwrap());
    assert!(
        listed.contains(&two) && !listed.contains(&label),
        "the catalog lists two.cat.test. and no longer one.cat.test.: {listed}"
    );
    // The other member is still there.
    until_knot(
        &dir,
        knot_port,
        "www.two.cat.test.",
        ResponseCode::NoError,
        1,
    );
    knot.kill().ok();
    knot.wait().ok();
}
