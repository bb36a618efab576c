//! Where residence stops: a zone over `--resident-max-records`, and a
//! database that went away.
//!
//! ```text
//!  zone over the limit ─► too_large, answered from the database, the same
//!  database cut (relay) ─► resident names still answered, nothing evicted
//! ```

use super::*;

#[test]
fn a_zone_over_the_limit_stays_on_the_record_cache_path() {
    let small = "$ORIGIN small.test.\n@ 300 IN SOA ns admin 1 3600 600 86400 60\n@ 300 IN NS ns\nns 300 IN A 192.0.2.1\nwww 300 IN A 192.0.2.2\n";
    let db = block_on(async {
        let db = TestZoneDb::new("resident_limit").await;
        db.import(APEX, &zone_text(HOSTS), false).await;
        db.import("small.test.", small, false).await;
        db
    });
    let (srv, control) = server(&db, true, &["--resident-max-records", "50"]);
    let (off, _) = server(&db, false, &[]);
    wait_residence(control, "small.test.", "resident");
    wait_residence(control, APEX, "too_large");
    assert_eq!(stat(control, "resident_too_large"), 1);
    let before = stat(control, "db_queries");
    let questions = questions(HOSTS);
    compare(srv.port, off.port, &questions, None);
    assert!(
        stat(control, "db_queries") > before,
        "the zone over the limit is read from the database"
    );
    let before = stat(control, "db_queries");
    assert_eq!(a_of(srv.port, "www.small.test.").len(), 1);
    assert_eq!(
        ask_udp(srv.port, "nx.small.test.", 1, None)
            .metadata
            .response_code,
        ResponseCode::NXDomain
    );
    assert_eq!(
        stat(control, "db_queries"),
        before,
        "the small zone is resident"
    );
    // A merge grows the small zone past the record limit: its copy goes,
    // and it is answered on the record cache's path, the merge included.
    let grown: String = (0..60)
        .map(|i| format!("g{i}.small.test. 300 IN A 192.0.2.{}\n", i + 1))
        .collect();
    block_on(db.import("small.test.", &grown, false));
    wait_residence(control, "small.test.", "too_large");
    assert_eq!(stat(control, "resident_too_large"), 2);
    answered_after(srv.port, "g59.small.test.", 1, ResponseCode::NoError, 1);
    let before = stat(control, "db_queries");
    let g7 = a_of(srv.port, "g7.small.test.");
    assert!(
        g7.len() == 1 && g7[0].contains("192.0.2.8"),
        "g7 from the merge: {g7:?}"
    );
    assert!(
        stat(control, "db_queries") > before,
        "the grown zone is read from the database"
    );
    drop((srv, off));
    block_on(db.drop_db());
}

#[test]
fn resident_zones_answer_through_a_database_outage() {
    let db = block_on(async {
        let db = TestZoneDb::new("resident_outage").await;
        db.import(APEX, &zone_text(HOSTS), false).await;
        db
    });
    let relay = Relay::to_database();
    let control = free_tcp_port();
    let listen = format!("127.0.0.1:{control}");
    let srv = ServerProcess::start_with_uri(
        &relay.uri(),
        &db.name,
        &[
            "--resident-mb",
            "64",
            "--control-listen",
            &listen,
            "--query-timeout-ms",
            "1000",
            "--db-timeout-ms",
            "500",
        ],
    );
    wait_residence(control, APEX, "resident");
    relay.cut();
    // Names never asked before: no cache holds them, only the copy.
    for i in (0..HOSTS).step_by(10) {
        let m = ask_udp(srv.port, &format!("h{i}.res.test."), 1, None);
        assert_eq!(m.metadata.response_code, ResponseCode::NoError, "h{i}");
        assert_eq!(m.answers.len(), 1);
        let m = ask_udp(srv.port, &format!("gone{i}.res.test."), 1, None);
        assert_eq!(m.metadata.response_code, ResponseCode::NXDomain);
    }
    assert_eq!(stat(control, "resident_zones"), 1, "nothing evicted");
    relay.restore();
    drop(srv);
    block_on(db.drop_db());
}
