//! A resident zone answers byte for byte as the record cache's path does:
//! unsigned over TCP and UDP (plain questions in one step), signed with
//! NSEC and NSEC3 (DO=1), and after signed changes.
//!
//! ```text
//!  questions(HOSTS) ─► resident server / record-cache server ─► compare
//!  signed_pair(NSEC | NSEC3) ─► compare_signed; signed merge, delete-name
//!     ─► applied by names (no reload) ─► compared again
//! ```

use super::*;

#[test]
fn a_resident_zone_answers_as_the_record_cache_does_with_no_database_read() {
    let db = block_on(async {
        let db = TestZoneDb::new("resident_same").await;
        db.import(APEX, &zone_text(HOSTS), false).await;
        db
    });
    let (on, on_control) = server(&db, true, &[]);
    let (off, off_control) = server(&db, false, &[]);
    let took = wait_residence(on_control, APEX, "resident");
    println!("timing: resident: {APEX} ({HOSTS} hosts) resident {took:?} after start");
    let questions = questions(HOSTS);
    let before = stat(on_control, "db_queries");
    let plain = stat(on_control, "resident_plain_answers");
    let compared = compare(on.port, off.port, &questions, None)
        + compare(on.port, off.port, &questions, Some((1232, false)));
    assert_eq!(
        stat(on_control, "resident_plain_answers"),
        plain,
        "over TCP every answer takes the general stages"
    );
    // Over UDP the plain questions are answered in one step from the
    // zone's bytes: the same bytes. Per EDNS variant, at least 3 of the 5
    // questions about each sampled host are plain (A; AAAA or NODATA; the
    // made-up h{i}x's NXDOMAIN).
    let compared = compared
        + compare_udp(on.port, off.port, &questions, None)
        + compare_udp(on.port, off.port, &questions, Some((1232, false)));
    let one_step = stat(on_control, "resident_plain_answers") - plain;
    let sampled = HOSTS.div_ceil(5) as u64;
    assert!(
        one_step >= 2 * 3 * sampled,
        "only {one_step} plain answers in one step"
    );
    println!("resident: {one_step} UDP replies answered in one step");
    assert_eq!(
        stat(on_control, "db_queries"),
        before,
        "the resident server read the database"
    );
    assert!(
        stat(off_control, "db_queries") > 0,
        "the record-cache server read the database (the comparison has a control)"
    );
    println!("resident: {compared} replies identical with residency on and off");
    assert_no_reads(on.port, on_control, &questions, None);
    let lines = zone_metrics(on_control, APEX);
    let bytes_line = lines
        .iter()
        .find(|l| l.starts_with("mongodns_resident_zone_bytes"))
        .expect("bytes per zone on /metrics");
    let bytes: u64 = bytes_line.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(bytes > 10_000, "{bytes_line}");
    assert_eq!(stat(on_control, "resident_zones"), 1);
    assert_eq!(stat(off_control, "resident_zones"), 0);
    drop((on, off));
    block_on(db.drop_db());
}

/// A signed zone (secured with `sign` flags) and two servers on it,
/// residency on (resident already) and off: (db, on, on's control, off).
fn signed_pair(tag: &str, sign: &[&str]) -> (TestZoneDb, ServerProcess, u16, ServerProcess) {
    let db = block_on(async {
        let db = TestZoneDb::new(tag).await;
        db.import(APEX, &zone_text(60), false).await;
        db
    });
    let mut args = vec!["-q", "secure-zone", APEX, "--grace", "0"];
    args.extend_from_slice(sign);
    operator(&db, "mongodns-sign", &args);
    let transfers = ["--axfr-allow", "127.0.0.1/32"];
    let (on, on_control) = server(&db, true, &transfers);
    let (off, _) = server(&db, false, &transfers);
    wait_residence(on_control, APEX, "resident");
    (db, on, on_control, off)
}

/// Compares a signed zone's answers: DO=1 over TCP and UDP (the general
/// stages on both servers), then DO=0 over UDP (plain questions answered
/// in one step by the resident server); returns how many were compared.
fn compare_signed(on: u16, off: u16, on_control: u16, questions: &[(String, u16)]) -> usize {
    let plain = stat(on_control, "resident_plain_answers");
    let compared = compare(on, off, questions, DO) + compare_udp(on, off, questions, DO);
    assert_eq!(
        stat(on_control, "resident_plain_answers"),
        plain,
        "DO=1 questions take the general stages (signatures, denials)"
    );
    // Signatures are left out for DO=0 as the general stages leave them out.
    let compared = compared + compare_udp(on, off, questions, Some((1232, false)));
    assert!(stat(on_control, "resident_plain_answers") > plain);
    compared
}

fn signed_zone_is_answered_the_same(tag: &str, sign: &[&str]) {
    let (db, on, on_control, off) = signed_pair(tag, sign);
    let questions = questions(60);
    let before = stat(on_control, "db_queries");
    let compared = compare_signed(on.port, off.port, on_control, &questions);
    assert_eq!(stat(on_control, "db_queries"), before, "no database read");
    // The denials came from the copy: NXDOMAIN carries NSEC or NSEC3.
    let m = ask_tcp(on.port, "nope.res.test.", 1, DO);
    assert_eq!(m.metadata.response_code, ResponseCode::NXDomain);
    let want = if sign.is_empty() { "NSEC" } else { "NSEC3" };
    assert!(
        m.authorities
            .iter()
            .any(|r| r.record_type().to_string() == want),
        "no {want} in {m}"
    );
    println!("resident: {compared} signed ({want}) replies identical with residency on and off");
    // A transfer is sent from the copy: the same records as the other
    // server's from the database (which sends them in the database's order).
    let transfers = stat(on_control, "resident_transfers");
    let (from_copy, from_db) = (axfr_text(on.port, APEX), axfr_text(off.port, APEX));
    assert_eq!(stat(on_control, "resident_transfers"), transfers + 1);
    assert_eq!(
        comparable_transfer(&from_copy),
        comparable_transfer(&from_db),
        "AXFR from the copy differs from the database's"
    );
    let rtype = want.to_lowercase();
    let has_type = |l: &String| l.split(' ').nth(3) == Some(rtype.as_str());
    assert!(
        record_lines(&from_copy).iter().any(has_type),
        "{want} records transferred:\n{from_copy}"
    );
    drop((on, off));
    block_on(db.drop_db());
}

#[test]
fn a_resident_nsec_zone_answers_as_the_record_cache_does() {
    signed_zone_is_answered_the_same("resident_nsec", NSEC);
}

#[test]
fn a_resident_nsec3_zone_answers_as_the_record_cache_does() {
    signed_zone_is_answered_the_same("resident_nsec3", NSEC3);
}

/// Signed merges and edits change NSEC/NSEC3 neighbours: the copy reads
/// the names the change records list (no reload) and answers as the
/// record cache's path does.
fn signed_changes_keep_the_copy_exact(tag: &str, sign: &[&str]) {
    let (db, on, on_control, off) = signed_pair(tag, sign);
    let loads = stat(on_control, "resident_loads");
    block_on(db.import(
        APEX,
        "$ORIGIN res.test.\n$TTL 300\nh10a IN A 192.0.2.210\nx.y.h20a IN TXT \"new\"\n",
        false,
    ));
    operator(&db, "mongodns-zone", &["delete-name", APEX, "h30"]);
    for port in [on.port, off.port] {
        time_until("the merged and deleted names", || {
            a_of(port, "h10a.res.test.").len() == 1
                && ask_udp(port, "h30.res.test.", 1, None)
                    .metadata
                    .response_code
                    == ResponseCode::NXDomain
        });
    }
    wait_residence(on_control, APEX, "resident");
    assert_eq!(
        stat(on_control, "resident_loads"),
        loads,
        "names read, no reload"
    );
    let mut questions = questions(60);
    for n in [
        "h10a", "h10b", "h10", "y.h20a", "x.y.h20a", "h20", "h30", "h3", "h30x",
    ] {
        questions.push((format!("{n}.res.test."), 1));
        questions.push((format!("{n}.res.test."), 16));
    }
    let before = stat(on_control, "db_queries");
    let compared = compare_signed(on.port, off.port, on_control, &questions);
    assert_eq!(stat(on_control, "db_queries"), before, "no database read");
    println!("resident: {compared} signed replies identical after a signed merge and a deletion");
    drop((on, off));
    block_on(db.drop_db());
}

#[test]
fn signed_changes_keep_a_resident_nsec_zone_exact() {
    signed_changes_keep_the_copy_exact("resident_nsec_changes", NSEC);
}

#[test]
fn signed_changes_keep_a_resident_nsec3_zone_exact() {
    signed_changes_keep_the_copy_exact("resident_nsec3_changes", NSEC3);
}
