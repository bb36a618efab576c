//! The catalog keeper applies changes, it does not rebuild: with 2,000
//! zones served, creating one zone and deleting another reads a handful of
//! documents (`catalog_zone_reads` in `/stats`), not every zone again; and
//! the catalog then lists exactly the zones served.
//!
//! ```text
//!  2,000 zones (one bulk write) ─► signer::catalog::sync: a full sync
//!     reads every zone ─► the server (--catalog-zone) starts: its first
//!     pass is a full one too
//!  a zone imported, one deleted ─► each seen in the catalog's AXFR
//!     ─► reads since the first pass: independent of the 2,000
//!  catalog members (PTRs below zones.) == the served zones, catalog aside
//! ```

use backend_mongo::{WriteMode, ZoneContent};

use dns::Name;
use mongodns_testkit::*;
use signer::create::NewZone;
use std::collections::BTreeSet;
use std::time::Duration;

const CATALOG: &str = "catalog.invalid.";
const ZONES: usize = 2000;

/// Zone `i` of the bulk write: an apex with its SOA and NS.
fn small_zone(i: usize) -> ZoneContent {
    let apex: Name = format!("z{i}.bulk.test.").parse().unwrap();
    let ns: Name = "ns.bulk.test.".parse().unwrap();
    let new = NewZone {
        apex: apex.clone(),
        nameservers: vec![ns.clone()],
        rname: ns,
        ttl: 300,
        serial: 1,
    };
    ZoneContent {
        apex,
        nodes: vec![new.apex_node().unwrap()],
        resume_key: None,
    }
}

/// The members the catalog lists in its AXFR from the server on `port`.
fn members(port: u16) -> BTreeSet<String> {
    let below = format!(".zones.{CATALOG}");
    record_lines(&axfr_text(port, CATALOG))
        .iter()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            match fields.as_slice() {
                [owner, .., "ptr", member] if owner.ends_with(&below) => {
                    Some(member.to_lowercase())
                }
                _ => None,
            }
        })
        .collect()
}

/// Every zone served but the catalog.
async fn served(db: &TestZoneDb) -> BTreeSet<String> {
    let all = db.store.list_zones(None, 100_000).await.unwrap();
    all.into_iter()
        .map(|z| z.apex.to_string())
        .filter(|a| a != CATALOG)
        .collect()
}

#[test]
fn one_zone_created_and_one_deleted_read_documents_independent_of_the_zone_count() {
    let catalog: Name = CATALOG.parse().unwrap();
    let db = block_on(async {
        let db = TestZoneDb::new("catchanges").await;
        let zones: Vec<ZoneContent> = (0..ZONES).map(small_zone).collect();
        for chunk in zones.chunks(500) {
            let stats = db
                .store
                .write_zones(chunk, WriteMode::Replace, Duration::ZERO);
            stats.await.unwrap();
        }
        let full = signer::catalog::sync(&db.store, &catalog).await.unwrap();
        assert_eq!(full.added, ZONES);
        assert!(full.reads >= ZONES, "a full sync reads every zone");
        db
    });
    let (server, control) = start_with_control(
        &db.name,
        &["--axfr-allow", "127.0.0.1/32", "--catalog-zone", CATALOG],
    );
    // The server's first pass reconciles in full: every zone is read.
    time_until("the first pass", || {
        stat(control, "catalog_zone_reads") >= ZONES as u64
    });
    let before = stat(control, "catalog_zone_reads");
    println!("first pass: {before} documents read");

    block_on(db.import(
        "new.cat.test.",
        "$ORIGIN new.cat.test.\n@ 300 IN SOA ns admin 1 3600 600 86400 60\n@ 300 IN NS ns\nns 300 IN A 192.0.2.53\n",
        false,
    ));
    time_until("the new member", || {
        members(server.port).contains("new.cat.test.")
    });
    let gone: Name = "z17.bulk.test.".parse().unwrap();
    block_on(db.store.delete_zone(&gone)).unwrap();
    time_until("the deleted member gone", || {
        !members(server.port).contains("z17.bulk.test.")
    });

    let reads = stat(control, "catalog_zone_reads") - before;
    println!("one zone created, one deleted, {ZONES} zones: {reads} documents read");
    assert!(
        reads < 100,
        "{reads} documents read for two changes among {ZONES} zones"
    );
    let listed = members(server.port);
    let want = block_on(served(&db));
    assert_eq!(listed.len(), ZONES, "2,000 - 1 + 1 members");
    assert_eq!(listed, want, "the catalog lists exactly the zones served");
    drop(server);
    block_on(db.drop_db());
}
