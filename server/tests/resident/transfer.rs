//! A transfer asked while a new version's copy loads waits for it and is
//! sent from memory.
//!
//! ```text
//!  replace (LOADING_HOSTS names) ─► copy loading ─► AXFR waits
//!     (resident_transfer_waits +1) ─► sent from memory (resident_transfers +1)
//!     ─► the same records as the other server's from the database
//! ```

use super::*;

/// Names in the zone whose new version is transferred while it loads:
/// enough (about 30,000 records) that the load takes seconds on FerretDB.
const LOADING_HOSTS: usize = 20_000;

#[test]
fn a_transfer_during_a_load_waits_for_the_copy_and_is_sent_from_memory() {
    let db = block_on(async {
        let db = TestZoneDb::new("resident_xfr_wait").await;
        db.import(APEX, &zone_text(LOADING_HOSTS), false).await;
        db
    });
    let transfers = ["--axfr-allow", "127.0.0.1/32"];
    let (on, control) = server(&db, true, &transfers);
    let (off, _) = server(&db, false, &transfers);
    wait_residence(control, APEX, "resident");
    let (waits, sent) = (
        stat(control, "resident_transfer_waits"),
        stat(control, "resident_transfers"),
    );
    // A new version (serial 2, www moved): the copy of it is loaded whole.
    let replaced = zone_text(LOADING_HOSTS)
        .replace("admin 1 3600", "admin 2 3600")
        .replace("192.0.2.80", "192.0.2.180");
    // The replace publishes, then deletes the old version: the load runs
    // while it does, so the writer is not waited for.
    let loading = format!("mongodns_resident_zone{{zone=\"{APEX}\",state=\"loading\"}} 1");
    let (from_copy, took) = std::thread::scope(|scope| {
        let import = scope.spawn(|| block_on(db.import(APEX, &replaced, true)));
        let started = Instant::now();
        while !zone_metrics(control, APEX).contains(&loading) {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "the new version was never loaded: {:?}",
                zone_metrics(control, APEX)
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        // Asked while it loads: the transfer waits, then comes from the copy.
        let asked = Instant::now();
        let text = dig_transfer_with(on.port, APEX, "AXFR", &["+time=300", "+tries=1"]);
        let took = asked.elapsed();
        import.join().unwrap();
        (text, took)
    });
    assert_eq!(stat(control, "resident_transfer_waits"), waits + 1);
    assert_eq!(
        stat(control, "resident_transfers"),
        sent + 1,
        "not from memory"
    );
    let lines = record_lines(&from_copy);
    assert!(lines.len() > LOADING_HOSTS, "AXFR failed: {from_copy}");
    assert!(
        lines
            .iter()
            .any(|l| l.ends_with("soa ns1.res.test. admin.res.test. 2 3600 600 86400 60")),
        "not the new version's SOA"
    );
    assert!(lines.iter().any(|l| l.ends_with("a 192.0.2.180")));
    assert!(!lines.iter().any(|l| l.ends_with("a 192.0.2.80")));
    assert_eq!(
        comparable_transfer(&from_copy),
        comparable_transfer(&axfr_text(off.port, APEX)),
        "the transfer from the copy differs from the database's"
    );
    println!(
        "resident: a transfer asked during the load of {} records waited and was sent from memory in {took:?}",
        lines.len()
    );
    drop((on, off));
    block_on(db.drop_db());
}
