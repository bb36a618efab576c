//! Resident zones against the real server and database (issue 18): a zone
//! held whole in memory answers byte for byte as the record cache's path
//! does, unsigned and signed (NSEC, NSEC3), over TCP and over UDP (where
//! plain questions are answered in one step), with no database read, and
//! transfers the same zone from memory; merge,
//! record edit, replace and secure-zone are each seen within the freshness
//! bound (the delays printed); a copy catching up answers within its lag
//! and switches to a new version whole; a zone over the limit stays on
//! today's path; a database outage leaves resident zones answering;
//! `/metrics` lists only the largest zones and sums the rest.

use hickory_proto::op::{Message, ResponseCode};
use mongodns_testkit::*;
use std::process::Command;
use std::time::{Duration, Instant};

const APEX: &str = "res.test.";

/// The servers' `--freshness-ms`.
const FRESHNESS_MS: u64 = 100;

/// A write is answered within 1 s plus one poll interval.
const FRESHNESS_BOUND: Duration = Duration::from_millis(1000 + FRESHNESS_MS);

const DO: Option<(u16, bool)> = Some((4096, true));

/// Everything the answer path distinguishes, plus `hosts` generated names.
fn zone_text(hosts: usize) -> String {
    let mut z = String::from(
        "$ORIGIN res.test.\n$TTL 300\n\
         @ IN SOA ns1 admin 1 3600 600 86400 60\n\
         @ IN NS ns1\n@ IN NS ns2.elsewhere.example.\n@ IN MX 10 mail\n\
         ns1 IN A 192.0.2.1\nmail IN A 192.0.2.2\nmail IN AAAA 2001:db8::2\n\
         www IN A 192.0.2.80\nwww IN A 192.0.2.81\nweb IN CNAME www\n\
         chain IN CNAME web\nout IN CNAME www.elsewhere.example.\n\
         towild IN CNAME x.wild\n\
         *.wild IN A 192.0.2.99\n*.wild IN TXT \"synthesized\"\nhost.wild IN A 192.0.2.98\n\
         a.b.c IN TXT \"deep\"\n\
         sub IN NS ns.sub\nns.sub IN A 192.0.2.53\nsub IN DS 12345 13 2 0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF\n\
         open IN NS ns.elsewhere.example.\n\
         srv._tcp IN SRV 0 5 443 www\n\
         redir IN DNAME elsewhere.example.\n",
    );
    for i in 0..hosts {
        z.push_str(&format!("h{i} IN A 192.0.2.{}\n", i % 250 + 1));
        if i % 3 == 0 {
            z.push_str(&format!("h{i} IN AAAA 2001:db8::{:x}\n", i + 1));
        }
        if i % 7 == 0 {
            z.push_str(&format!("t.e{i} IN TXT \"under an empty non-terminal\"\n"));
        }
    }
    z
}

/// The questions both servers are asked.
fn questions(hosts: usize) -> Vec<(String, u16)> {
    let mut q: Vec<(String, u16)> = [
        ("res.test.", 6),
        ("res.test.", 2),
        ("res.test.", 15),
        ("res.test.", 1),
        ("res.test.", 255),
        ("res.test.", 48),
        ("www.res.test.", 1),
        ("www.res.test.", 28),
        ("WwW.Res.Test.", 1),
        ("web.res.test.", 1),
        ("chain.res.test.", 1),
        ("out.res.test.", 1),
        ("towild.res.test.", 1),
        ("anything.wild.res.test.", 1),
        ("anything.wild.res.test.", 16),
        ("anything.wild.res.test.", 28),
        ("deeper.x.wild.res.test.", 1),
        ("host.wild.res.test.", 1),
        ("host.wild.res.test.", 16),
        ("wild.res.test.", 1),
        ("c.res.test.", 16),
        ("b.c.res.test.", 1),
        ("a.b.c.res.test.", 16),
        ("z.a.b.c.res.test.", 16),
        ("sub.res.test.", 1),
        ("sub.res.test.", 43),
        ("sub.res.test.", 2),
        ("x.sub.res.test.", 1),
        ("ns.sub.res.test.", 1),
        ("open.res.test.", 43),
        ("y.open.res.test.", 28),
        ("srv._tcp.res.test.", 33),
        ("_tcp.res.test.", 33),
        ("x.redir.res.test.", 1),
        ("redir.res.test.", 39),
        ("nope.res.test.", 1),
        ("nope.res.test.", 43),
        ("mail.res.test.", 15),
        ("ns1.res.test.", 1),
    ]
    .iter()
    .map(|(n, t)| (n.to_string(), *t))
    .collect();
    for i in (0..hosts).step_by(5) {
        q.push((format!("h{i}.res.test."), 1));
        q.push((format!("h{i}.res.test."), 28));
        q.push((format!("h{i}x.res.test."), 1));
        q.push((format!("e{i}.res.test."), 16));
        q.push((format!("t.e{i}.res.test."), 16));
    }
    q
}

/// A server with the packet cache off (every answer runs the pipeline)
/// and a control port; `resident` adds a 64 MiB residency budget.
fn server(db: &TestZoneDb, resident: bool, extra: &[&str]) -> (ServerProcess, u16) {
    let freshness = FRESHNESS_MS.to_string();
    let mut args = vec![
        "--packet-cache-entries",
        "0",
        "--freshness-ms",
        freshness.as_str(),
    ];
    if resident {
        args.extend_from_slice(&["--resident-mb", "64"]);
    }
    args.extend_from_slice(extra);
    start_with_control(&db.name, &args)
}

/// `/metrics` lines naming `zone`.
fn zone_metrics(control: u16, zone: &str) -> Vec<String> {
    let (_, body) = http(control, "GET", "/metrics");
    let label = format!("zone=\"{zone}\"");
    body.lines()
        .filter(|l| l.starts_with("mongodns_resident_zone") && l.contains(&label))
        .map(str::to_string)
        .collect()
}

/// Waits until `/metrics` says `zone` is in `state` (and, for resident,
/// that its copy answers); returns how long that took. Fails after 30 s.
fn wait_residence(control: u16, zone: &str, state: &str) -> Duration {
    let started = Instant::now();
    let want = format!("mongodns_resident_zone{{zone=\"{zone}\",state=\"{state}\"}} 1");
    let current = format!("mongodns_resident_zone_current{{zone=\"{zone}\"}} 1");
    loop {
        let lines = zone_metrics(control, zone);
        let in_state = lines.contains(&want);
        if in_state && (state != "resident" || lines.contains(&current)) {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{zone} not {state} after 30 s: {lines:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn raw(port: u16, qname: &str, qtype: u16, edns: Option<(u16, bool)>) -> Vec<u8> {
    tcp_exchange(port, &build_query(0x5151, qname, qtype, edns, false))
}

/// [`raw`] over UDP: where a resident server answers plain questions in
/// one step from the zone's bytes (pipeline/direct.rs).
fn raw_udp(port: u16, qname: &str, qtype: u16, edns: Option<(u16, bool)>) -> Vec<u8> {
    let query = build_query(0x5151, qname, qtype, edns, false);
    udp_exchange(port, &query, Duration::from_secs(5))
        .unwrap_or_else(|| panic!("{qname} {qtype}: no UDP reply"))
}

/// Asks every question of both servers over TCP and compares the replies
/// byte for byte; returns how many were compared.
fn compare(on: u16, off: u16, questions: &[(String, u16)], edns: Option<(u16, bool)>) -> usize {
    compare_by(raw, on, off, questions, edns)
}

/// [`compare`] over UDP: the resident server's plain questions are
/// answered in one step, the other server's by the general stages.
fn compare_udp(on: u16, off: u16, questions: &[(String, u16)], edns: Option<(u16, bool)>) -> usize {
    compare_by(raw_udp, on, off, questions, edns)
}

/// Asks one question of a server: port, name, type, EDNS (size, DO).
type Ask = fn(u16, &str, u16, Option<(u16, bool)>) -> Vec<u8>;

fn compare_by(
    ask: Ask,
    on: u16,
    off: u16,
    questions: &[(String, u16)],
    edns: Option<(u16, bool)>,
) -> usize {
    for (qname, qtype) in questions {
        let a = ask(on, qname, *qtype, edns);
        let b = ask(off, qname, *qtype, edns);
        assert!(!a.is_empty(), "{qname} {qtype}: no reply");
        let shown = |bytes: &[u8]| {
            Message::from_vec(bytes).map_or_else(|e| format!("unparsable: {e}"), |m| m.to_string())
        };
        assert_eq!(
            a,
            b,
            "{qname} {qtype} {edns:?}: resident and record-cache replies differ\nresident:\n{}\nrecord cache:\n{}",
            shown(&a),
            shown(&b)
        );
    }
    questions.len()
}

/// Asks every question of the resident server and checks that no database
/// read was made and that memory answered.
fn assert_no_reads(
    port: u16,
    control: u16,
    questions: &[(String, u16)],
    edns: Option<(u16, bool)>,
) {
    let (reads, lookups) = (
        stat(control, "db_queries"),
        stat(control, "resident_lookups"),
    );
    for (qname, qtype) in questions {
        let m = Message::from_vec(&raw(port, qname, *qtype, edns)).unwrap();
        assert_ne!(
            m.metadata.response_code,
            ResponseCode::ServFail,
            "{qname} {qtype}"
        );
    }
    assert_eq!(
        stat(control, "db_queries") - reads,
        0,
        "a resident zone read the database for {} questions",
        questions.len()
    );
    assert!(
        stat(control, "resident_lookups") - lookups >= questions.len() as u64,
        "the answers did not come from the resident copy"
    );
}

const HOSTS: usize = 300;

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

/// How a fixture's zone is secured: `mongodns-sign secure-zone` flags.
const NSEC: &[&str] = &[];
const NSEC3: &[&str] = &["--nsec3", "--salt", "abcd"];

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

/// Runs a workspace binary against `db` as an operator would.
fn operator(db: &TestZoneDb, bin: &str, args: &[&str]) {
    let mut cmd = Command::new(binary(bin));
    cmd.args(["--mongodb-uri", &database_uri(), "--database", &db.name])
        .args(args);
    let out = run_bounded(cmd, bin, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{bin} {args:?} failed: {stderr}");
}

fn a_of(port: u16, name: &str) -> Vec<String> {
    lines(&ask_udp(port, name, 1, None).answers)
}

#[test]
fn writes_to_a_resident_zone_are_answered_within_the_bound() {
    let db = block_on(async {
        let db = TestZoneDb::new("resident_writes").await;
        db.import(APEX, &zone_text(40), false).await;
        db
    });
    let (srv, control) = server(&db, true, &[]);
    let port = srv.port;
    wait_residence(control, APEX, "resident");
    let mut delays = Vec::new();
    let mut loads = stat(control, "resident_loads");

    // A merge: its names are read again into the copy, one read each.
    assert_eq!(
        ask_udp(port, "merged.res.test.", 1, None)
            .metadata
            .response_code,
        ResponseCode::NXDomain
    );
    block_on(db.import(
        APEX,
        "$ORIGIN res.test.\nmerged 60 IN A 192.0.2.150\n",
        false,
    ));
    delays.push((
        "merge import",
        time_until("the merged name", || {
            a_of(port, "merged.res.test.").len() == 1
        }),
    ));
    let caught_up = wait_residence(control, APEX, "resident");
    assert_eq!(
        stat(control, "resident_loads"),
        loads,
        "a merge reloads nothing"
    );
    // The merged name is read into the copy (one CI run on a loaded
    // machine found the copy current before the counter moved: polled,
    // and the wait printed, so that a late count shows in the log).
    let counted = time_until("the merged name read into the copy", || {
        stat(control, "resident_names_read") >= 1
    });
    println!("resident: merge applied to the copy {caught_up:?} after it was answered, counted {counted:?} later");
    // In memory: a query that costs no database read, within the bound
    // (a generation published just after the copy caught up sends a
    // query or two down the record cache's path once; one CI run saw 2
    // reads there). Without the merge in the copy this never holds.
    let mut tries = 0;
    let in_memory = time_until("the merged name answered with no database read", || {
        tries += 1;
        let before = stat(control, "db_queries");
        let answered = a_of(port, "merged.res.test.").len() == 1;
        answered && stat(control, "db_queries") == before
    });
    println!("resident: the merged name answered from memory after {in_memory:?} ({tries} tries)");

    // A record edit (mongodns-zone add-record).
    operator(
        &db,
        "mongodns-zone",
        &["add-record", APEX, "edited", "A", "192.0.2.151"],
    );
    delays.push((
        "record edit",
        time_until("the edited name", || {
            a_of(port, "edited.res.test.").len() == 1
        }),
    ));
    wait_residence(control, APEX, "resident");

    // A replace: a new version, loaded in the background.
    let replaced = zone_text(40).replace("192.0.2.80", "192.0.2.180");
    block_on(db.import(APEX, &replaced, true));
    delays.push((
        "replace import",
        time_until("the replaced record", || {
            a_of(port, "www.res.test.")
                .iter()
                .any(|l| l.contains("192.0.2.180"))
        }),
    ));
    assert_eq!(
        ask_udp(port, "merged.res.test.", 1, None)
            .metadata
            .response_code,
        ResponseCode::NXDomain,
        "the replace dropped the merged name"
    );
    let reloaded = wait_residence(control, APEX, "resident");
    assert!(
        stat(control, "resident_loads") > loads,
        "the new version was loaded"
    );
    loads = stat(control, "resident_loads");
    println!("resident: replaced version resident {reloaded:?} after it was answered");

    // secure-zone (mongodns-sign): a new, signed version.
    operator(
        &db,
        "mongodns-sign",
        &["-q", "secure-zone", APEX, "--grace", "0"],
    );
    delays.push((
        "secure-zone",
        time_until("the DNSKEY", || {
            !ask_udp(port, APEX, 48, DO).answers.is_empty()
        }),
    ));
    wait_residence(control, APEX, "resident");
    assert!(stat(control, "resident_loads") > loads);
    let before = stat(control, "db_queries");
    let m = ask_tcp(port, "nope.res.test.", 1, DO);
    assert_eq!(m.metadata.response_code, ResponseCode::NXDomain);
    assert!(m
        .authorities
        .iter()
        .any(|r| r.record_type().to_string() == "NSEC"));
    assert_eq!(
        stat(control, "db_queries"),
        before,
        "the signed copy answers the denial"
    );

    for (what, delay) in &delays {
        println!("timing: resident: {what} answered {delay:?} after the writer finished");
    }
    for (what, delay) in delays {
        assert!(
            delay <= FRESHNESS_BOUND,
            "the {what} was answered {delay:?} after the write, past {FRESHNESS_BOUND:?}"
        );
    }
    drop(srv);
    block_on(db.drop_db());
}

/// The address `www` has in the zone: the first or the replaced one.
fn www_version(port: u16) -> &'static str {
    let answers = a_of(port, "www.res.test.");
    match (
        answers.iter().any(|l| l.contains("192.0.2.80")),
        answers.iter().any(|l| l.contains("192.0.2.180")),
    ) {
        (true, false) => "old",
        (false, true) => "new",
        _ => panic!("www answered neither version alone: {answers:?}"),
    }
}

#[test]
fn a_copy_catching_up_answers_within_its_lag_and_switches_whole() {
    let db = block_on(async {
        let db = TestZoneDb::new("resident_lag").await;
        db.import(APEX, &zone_text(HOSTS), false).await;
        db
    });
    // A: a lag long enough to cover the load (the issue's "serve the old
    // version until the new one is loaded"), the packet cache on, so that
    // a reply built from the old copy would show if it were kept. B: a
    // lag under the freshness bound.
    let freshness = FRESHNESS_MS.to_string();
    let common = ["--freshness-ms", freshness.as_str(), "--resident-mb", "64"];
    let (a, a_control) = start_with_control(
        &db.name,
        &[&common[..], &["--resident-lag-ms", "60000"]].concat(),
    );
    let (b, b_control) = server(&db, true, &["--resident-lag-ms", "200"]);
    wait_residence(a_control, APEX, "resident");
    wait_residence(b_control, APEX, "resident");
    assert_eq!(www_version(a.port), "old");
    let (loads, lagging) = (
        stat(a_control, "resident_loads"),
        stat(a_control, "resident_lagging"),
    );

    // Both asked in turn while the replace runs and after, A first: A
    // answers the old version until its copy of the new one is complete,
    // then the new one (never today's path in between); B, past its short
    // lag, from the database.
    let replaced = zone_text(HOSTS).replace("192.0.2.80", "192.0.2.180");
    let (mut fresh_a, mut fresh_b) = (None, None);
    let mut old_answers = 0;
    let mut imported = None;
    std::thread::scope(|scope| {
        let import = scope.spawn(|| block_on(db.import(APEX, &replaced, true)));
        let started = Instant::now();
        while fresh_a.is_none() || fresh_b.is_none() || imported.is_none() {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "no new version after 60 s"
            );
            if imported.is_none() && import.is_finished() {
                imported = Some(Instant::now());
            }
            if fresh_a.is_none() {
                match www_version(a.port) {
                    "old" => old_answers += 1,
                    _ => fresh_a = Some(Instant::now()),
                }
            }
            if fresh_b.is_none() && www_version(b.port) == "new" {
                fresh_b = Some(Instant::now());
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    });
    // Measured from the end of the writer, as the other writes are.
    let imported = imported.unwrap();
    let after = |at: Option<Instant>| at.unwrap().saturating_duration_since(imported);
    let (switched, fresh_b) = (after(fresh_a), after(fresh_b));
    println!(
        "resident lag: A: lagging answers {}, passed on {}; B: lagging {}, passed on {}",
        stat(a_control, "resident_lagging") - lagging,
        stat(a_control, "resident_passed_on"),
        stat(b_control, "resident_lagging"),
        stat(b_control, "resident_passed_on"),
    );
    assert!(
        stat(a_control, "resident_loads") > loads,
        "A answered the new version only once it was loaded"
    );
    assert!(
        stat(a_control, "resident_lagging") > lagging,
        "the old copy answered while the new version loaded"
    );
    for _ in 0..20 {
        assert_eq!(
            www_version(a.port),
            "new",
            "no reply of the old copy was kept"
        );
    }
    println!(
        "resident lag: B (200 ms) answered the new version {fresh_b:?} after the import; \
         A (60 s) {switched:?}, {old_answers} old answers first"
    );
    assert!(
        fresh_b <= FRESHNESS_BOUND,
        "B answered the replace {fresh_b:?} after it, past {FRESHNESS_BOUND:?}"
    );

    // A merge: with the lag, A answers from its copy until the names are
    // read again, then the merged name, with no database read.
    block_on(db.import(
        APEX,
        "$ORIGIN res.test.\nmerged 60 IN A 192.0.2.150\n",
        false,
    ));
    let merged = time_until("the merged name on A", || {
        a_of(a.port, "merged.res.test.").len() == 1
    });
    println!("resident lag: A answered the merged name {merged:?} after the import");
    drop((a, b));
    block_on(db.drop_db());
}

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

/// Every zone `/metrics` lists: (zone, bytes, records), in its order.
fn zone_sizes(body: &str) -> Vec<(String, u64, u64)> {
    let value = |family: &str, zone: &str| -> u64 {
        let prefix = format!("mongodns_resident_zone_{family}{{zone=\"{zone}\"}} ");
        let line = body.lines().find_map(|l| l.strip_prefix(&prefix));
        line.and_then(|v| v.trim().parse().ok()).unwrap()
    };
    body.lines()
        .filter_map(|l| l.strip_prefix("mongodns_resident_zone_bytes{zone=\""))
        .map(|l| l.split_once('"').unwrap().0)
        .map(|z| (z.to_string(), value("bytes", z), value("records", z)))
        .collect()
}

/// `/metrics`' gauge `name` (unlabelled).
fn gauge(body: &str, name: &str) -> u64 {
    let prefix = format!("{name} ");
    let line = body.lines().find(|l| l.starts_with(&prefix));
    let value = line.and_then(|l| l[prefix.len()..].trim().parse().ok());
    value.unwrap_or_else(|| panic!("no {name} in /metrics"))
}

#[test]
fn metrics_list_only_the_largest_resident_zones_and_sum_the_rest() {
    // Twelve small zones, zone i with 3 + i records.
    let zones = 12;
    let db = block_on(async {
        let db = TestZoneDb::new("resident_series").await;
        for i in 0..zones {
            let mut text = format!(
                "$ORIGIN z{i}.sum.test.\n@ 300 IN SOA ns admin 1 3600 600 86400 60\n\
                 @ 300 IN NS ns\nns 300 IN A 192.0.2.1\n"
            );
            for j in 0..i {
                text.push_str(&format!("h{j} 300 IN A 192.0.2.{}\n", j + 1));
            }
            db.import(&format!("z{i}.sum.test."), &text, false).await;
        }
        db
    });
    // One server lists every zone (the default bound, 100), one only 3.
    let (all_server, all_control) = server(&db, true, &[]);
    let (server, control) = server(&db, true, &["--metrics-zone-series", "3"]);
    for control in [all_control, control] {
        let started = Instant::now();
        while stat(control, "resident_zones") < zones as u64 {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "not all resident"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let mut every = zone_sizes(&http(all_control, "GET", "/metrics").1);
    assert_eq!(every.len(), zones);
    every.sort_by(|a, b| (b.1, b.2).cmp(&(a.1, a.2)).then_with(|| a.0.cmp(&b.0)));
    let (_, body) = http(control, "GET", "/metrics");
    let listed = zone_sizes(&body);
    assert_eq!(listed, every[..3], "the three largest, largest first");
    for family in ["zone{", "zone_current{", "zone_records{", "zone_bytes{"] {
        let n = body
            .lines()
            .filter(|l| l.starts_with(&format!("mongodns_resident_{family}")))
            .count();
        assert_eq!(n, 3, "mongodns_resident_{family}: {n} lines");
    }
    let sum = |zones: &[(String, u64, u64)]| -> (u64, u64) {
        zones.iter().fold((0, 0), |(b, r), z| (b + z.1, r + z.2))
    };
    let (all_bytes, all_records) = sum(&every);
    let (listed_bytes, listed_records) = sum(&listed);
    assert_eq!(all_records, (0..zones as u64).map(|i| 3 + i).sum::<u64>());
    assert_eq!(gauge(&body, "mongodns_resident_unlisted_zones"), 9);
    assert_eq!(gauge(&body, "mongodns_resident_records"), all_records);
    assert_eq!(gauge(&body, "mongodns_resident_bytes"), all_bytes);
    assert_eq!(
        gauge(&body, "mongodns_resident_unlisted_records"),
        all_records - listed_records
    );
    assert_eq!(
        gauge(&body, "mongodns_resident_unlisted_bytes"),
        all_bytes - listed_bytes
    );
    drop(all_server);
    drop(server);
    block_on(db.drop_db());
}
