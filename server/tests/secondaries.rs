//! Knot DNS and NSD as real secondaries of `mongodns-server`: NOTIFY out
//! (RFC 1996) brings them up to date after every kind of write, signed
//! with TSIG when a key is configured, rate-bounded under a burst; and
//! NSID (RFC 5001) and EDNS EXPIRE (RFC 7314) as Knot sends them.
//!
//! ```text
//!  import ─► mongodns (--notify knot, nsd; freshness 100 ms)
//!     ─► knotd + nsd: secondaries with refresh a day (SOA and config), so
//!        only a NOTIFY explains an update at all
//!  each write (merge import, mongodns-zone add-record, secure-zone,
//!  add-record signed, resign --full; an add-record while a merge is
//!  listed) ─► both serve the new serial (median delay over the writes
//!     ≤ 2 s, each delay printed) ─► all by
//!     IXFR from the journal but the last, sent as the whole zone in
//!     answer to IXFR (ixfr_* counters)
//!     ─► mongodns_notify_acknowledged moved ─► AXFR of all three equal
//!        (sorted records and ldns-compare-zones)
//!  TSIG: Knot demanding the key acknowledges the signed NOTIFY and
//!        refuses an unsigned one; a forged unsigned reply does not
//!        acknowledge a signed NOTIFY; --notify-source is the source
//!  burst: 20 publishes in 2 s ─► far fewer NOTIFYs, last serial served
//!  settings: no --notify; zone_settings (set_zone_notify) picks the secondary
//!  NSID / EXPIRE: the same OPT bytes as a Knot primary of the same zone
//! ```
//!
//! Needs `knotd`, `nsd`, `dig` and `ldns-compare-zones` (Debian: knot,
//! nsd, bind9-dnsutils, ldnsutils).

use dns::edit::RecordEdit;
use dns::{Name, RType};
use mongodns_server::notify::{deliver, Delivery, Sending, Target};
use mongodns_testkit::*;
use std::process::Command;
use std::time::{Duration, Instant};

const ZONE: &str = "follow.test.";

/// Refresh and retry a day or more: a secondary that updates within
/// seconds was told to (NOTIFY).
const ZONE_TEXT: &str = "$ORIGIN follow.test.\n$TTL 300\n\
@ IN SOA ns1 hostmaster 1 86400 86400 1209600 300\n\
@ IN NS ns1\n\
ns1 IN A 192.0.2.53\n\
www IN A 192.0.2.1\n\
mail IN MX 10 www\n";

/// The median delay, over the writes of a test, from a write to a
/// secondary serving it (each single delay is printed, not judged).
const FOLLOW_MEDIAN: Duration = Duration::from_secs(2);

/// Past this a secondary that has not followed never will: their refresh
/// and retry are a day, so only a NOTIFY makes them follow at all.
const FOLLOW_HANG: Duration = Duration::from_secs(20);

/// How long a secondary that was not told is watched for following.
const UNTOLD_WATCH: Duration = Duration::from_secs(2);

fn served_db(tag: &str) -> TestZoneDb {
    block_on(async {
        let db = TestZoneDb::new(tag).await;
        db.import(ZONE, ZONE_TEXT, true).await;
        db
    })
}

/// mongodns with a control endpoint, quick polling and `extra` flags.
fn primary(db: &TestZoneDb, extra: &[&str]) -> (ServerProcess, u16) {
    let mut args = vec!["--axfr-allow", "127.0.0.1/32", "--freshness-ms", "100"];
    args.extend_from_slice(extra);
    start_with_control(&db.name, &args)
}

/// The serial mongodns serves once it moved past `old` (past 10 s it is
/// a hang and fails).
fn next_serial(port: u16, old: u32) -> u32 {
    let mut serial = None;
    time_until(&format!("a serial after {old}"), || {
        serial = soa_serial(port, ZONE).filter(|s| *s != old);
        serial.is_some()
    });
    serial.unwrap()
}

/// Asserts that every secondary serves `serial` (they follow only when
/// told, see [`FOLLOW_HANG`]); returns each one's delay from `written`.
fn all_follow(
    secondaries: &[&Secondary],
    serial: u32,
    written: Instant,
    what: &str,
) -> Vec<Duration> {
    let mut delays = Vec::new();
    for s in secondaries {
        let left = FOLLOW_HANG.saturating_sub(written.elapsed());
        let took = s.wait_serial(ZONE, serial, left);
        assert!(
            took.is_some(),
            "{:?} did not serve serial {serial} within {FOLLOW_HANG:?} of the {what}:\n{}",
            s.kind,
            s.log_text()
        );
        eprintln!(
            "{what}: {:?} serves serial {serial} {} ms after the write",
            s.kind,
            written.elapsed().as_millis()
        );
        delays.push(written.elapsed());
    }
    delays
}

/// The zone as served on `port`, by AXFR: one normalised line per record,
/// sorted, the closing SOA dropped.
fn zone_records(port: u16) -> Vec<String> {
    let text = axfr_text(port, ZONE);
    let mut lines: Vec<String> = text
        .lines()
        .filter(|l| !l.starts_with(';') && !l.trim().is_empty())
        .map(|l| {
            let mut fields: Vec<String> = l.split_whitespace().map(str::to_string).collect();
            fields[0] = fields[0].to_lowercase();
            fields.join(" ")
        })
        .collect();
    lines.sort();
    lines.dedup();
    lines
}

/// Asserts that the secondary on `port` holds exactly mongodns's zone:
/// the same sorted records, and no difference by `ldns-compare-zones`.
fn same_zone(dir: &std::path::Path, primary: u16, port: u16, kind: &str) {
    let ours = zone_records(primary);
    let theirs = zone_records(port);
    assert_eq!(ours, theirs, "{kind} holds another zone than mongodns");
    let (a, b) = (dir.join("primary.zone"), dir.join(format!("{kind}.zone")));
    std::fs::write(&a, ours.join("\n") + "\n").unwrap();
    std::fs::write(&b, theirs.join("\n") + "\n").unwrap();
    let out = Command::new("ldns-compare-zones")
        .args([&a, &b])
        .output()
        .expect("ldns-compare-zones is needed (ldnsutils)");
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(
        summary.contains("+0\t-0\t~0"),
        "ldns-compare-zones finds differences with {kind}: {summary}"
    );
}

fn acknowledged(control: u16) -> u64 {
    stat(control, "notify_acknowledged")
}

fn cli(db: &TestZoneDb, bin: &str, args: &[&str]) {
    run_tool(&db.name, bin, args);
}

fn edit_a(db: &TestZoneDb, label: &str, last: u8) {
    let zone: Name = ZONE.parse().unwrap();
    let name: Name = format!("{label}.{ZONE}").parse().unwrap();
    let add = RecordEdit::add(name, RType::A, 300, vec![vec![192, 0, 2, last].into()]);
    block_on(signer::edit::edit_zone(&db.store, &zone, &[add])).expect("the edit succeeds");
}

/// One kind of write, run by the test.
type Write<'a> = Box<dyn Fn() + 'a>;

/// A query: name, type and the options its OPT carries.
type Ask<'a> = (&'a str, u16, &'a [(u16, &'a [u8])]);

/// Adds `label` A by an edit; asserts that `secondary` serves the new
/// serial; returns the serial.
fn edit_and_follow(db: &TestZoneDb, primary: u16, secondary: &Secondary, label: &str) -> u32 {
    let serial = soa_serial(primary, ZONE).unwrap();
    edit_a(db, label, 30);
    let written = Instant::now();
    let serial = next_serial(primary, serial);
    all_follow(&[secondary], serial, written, "record update");
    serial
}

#[test]
fn knot_and_nsd_follow_every_writer_by_notify() {
    let db = served_db("secondaries");
    let (knot_port, nsd_port) = (free_port(), free_port());
    let (to_knot, to_nsd) = (
        format!("127.0.0.1:{knot_port}"),
        format!("127.0.0.1:{nsd_port}"),
    );
    let (server, control) = primary(&db, &["--notify", &to_knot, "--notify", &to_nsd]);
    let knot = Secondary::knot(&db.dir, knot_port, server.port, &[ZONE], None);
    let nsd = Secondary::nsd(&db.dir, nsd_port, server.port, &[ZONE], None);
    let both = [&knot, &nsd];
    let mut serial = soa_serial(server.port, ZONE).unwrap();
    // (what, its write, journaled: the secondaries get it by IXFR).
    let writes: [(&str, Write, bool); 6] = [
        (
            "merge import",
            Box::new(|| {
                let text = "$ORIGIN follow.test.\nimported 300 IN A 192.0.2.20\n";
                block_on(db.import(ZONE, text, false));
            }),
            true,
        ),
        (
            "record update",
            Box::new(|| {
                let args = ["add-record", ZONE, "edited", "A", "192.0.2.21"];
                cli(&db, "mongodns-zone", &args);
            }),
            true,
        ),
        (
            "secure-zone",
            Box::new(|| {
                cli(
                    &db,
                    "mongodns-sign",
                    &["-q", "secure-zone", ZONE, "--grace", "0"],
                )
            }),
            true,
        ),
        (
            "signed record update",
            Box::new(|| {
                let args = ["add-record", ZONE, "signed", "A", "192.0.2.22"];
                cli(&db, "mongodns-zone", &args);
            }),
            true,
        ),
        (
            "re-sign",
            Box::new(|| cli(&db, "mongodns-sign", &["-q", "resign", "--full", ZONE])),
            true,
        ),
        (
            "a record update while a merge is listed as live",
            Box::new(|| {
                // A merge writing beside it: the update's entry cannot be
                // exact, so the secondaries get the whole zone.
                let zones = db
                    .store
                    .database()
                    .collection::<backend_mongo::bson::Document>("zones");
                let listed = backend_mongo::bson::doc! {"$set": {
                    "merging.test": backend_mongo::bson::DateTime::now()
                }};
                block_on(async {
                    zones
                        .update_one(backend_mongo::bson::doc! {"_id": ZONE}, listed)
                        .await
                })
                .expect("the merge is listed");
                cli(
                    &db,
                    "mongodns-zone",
                    &["add-record", ZONE, "late", "A", "192.0.2.23"],
                );
            }),
            false,
        ),
    ];
    let mut delays = Vec::new();
    for (what, write, journaled) in &writes {
        let acks = acknowledged(control);
        let (incremental, full) = (
            stat(control, "ixfr_incremental"),
            stat(control, "ixfr_full"),
        );
        write();
        let written = Instant::now();
        serial = next_serial(server.port, serial);
        delays.extend(all_follow(&both, serial, written, what));
        assert!(
            acknowledged(control) >= acks + 2,
            "{what}: the secondaries updated without acknowledging a NOTIFY"
        );
        same_zone(&db.dir, server.port, knot.port, "knot");
        same_zone(&db.dir, server.port, nsd.port, "nsd");
        let moved = (
            stat(control, "ixfr_incremental") - incremental,
            stat(control, "ixfr_full") - full,
        );
        if *journaled {
            assert_eq!(
                moved,
                (2, 0),
                "{what}: both followed by IXFR from the journal"
            );
        } else {
            // No exact history reaches their serial: both asked IXFR and
            // got, and took, the whole zone.
            assert_eq!(moved, (0, 2), "{what}: the whole zone, in answer to IXFR");
        }
    }
    let knot_ixfrs = knot
        .log_text()
        .lines()
        .filter(|l| l.contains("IXFR, incoming") && l.contains("finished"))
        .count();
    assert!(
        knot_ixfrs >= 2,
        "Knot's log shows the IXFRs:\n{}",
        knot.log_text()
    );
    assert_eq!(stat(control, "notify_failed"), 0);
    assert_median_within("secondaries following a write", &delays, FOLLOW_MEDIAN);
    drop((writes, knot, nsd, server));
    block_on(db.drop_db());
}

#[test]
fn a_tsig_signed_notify_is_accepted_by_knot() {
    let db = served_db("notify-tsig");
    let key = SharedKey {
        name: "notify-key.".into(),
        secret: "bm90aWZ5LXNlY3JldC1ub3RpZnktc2VjcmV0LTAwMDE=".into(),
    };
    let knot_port = free_port();
    let target = format!("127.0.0.1:{knot_port},key={}", key.name);
    let (server, control) = primary(&db, &["--tsig-key", &key.flag(), "--notify", &target]);
    let knot = Secondary::knot(&db.dir, knot_port, server.port, &[ZONE], Some(&key));
    edit_and_follow(&db, server.port, &knot, "signed-notify");
    assert!(acknowledged(control) >= 1);
    assert_eq!(stat(control, "notify_failed"), 0);
    // The same Knot, told without the key, refuses: the key is what it took.
    let apex: Name = ZONE.parse().unwrap();
    let addr = format!("127.0.0.1:{knot_port}").parse().unwrap();
    let retry = Sending {
        attempts: 1,
        first_wait: Duration::from_secs(2),
        source: None,
    };
    let unsigned = Target { addr, key: None };
    let outcome = block_on(deliver(&unsigned, &apex, None, retry));
    assert!(
        matches!(outcome, Delivery::Rejected(_)),
        "Knot took an unsigned NOTIFY: {outcome:?}"
    );
    // A forged, unsigned acknowledgement does not stop a signed NOTIFY's
    // retries; it does acknowledge an unsigned one.
    let forger = unsigned_acknowledger();
    let key = key.flag().parse().unwrap();
    let retry = Sending {
        attempts: 2,
        first_wait: Duration::from_millis(300),
        source: None,
    };
    let signed = Target {
        addr: forger.0,
        key: Some(key),
    };
    let outcome = block_on(deliver(&signed, &apex, None, retry));
    assert_eq!(outcome, Delivery::NoReply);
    let unsigned = Target {
        addr: forger.0,
        key: None,
    };
    // From --notify-source's address (127.0.0.2 is loopback on Linux too).
    let from = Some("127.0.0.2".parse().unwrap());
    let sending = Sending {
        source: from,
        ..retry
    };
    let outcome = block_on(deliver(&unsigned, &apex, None, sending));
    assert_eq!(outcome, Delivery::Acknowledged(1));
    let seen = forger.1.lock().unwrap().clone();
    assert_eq!(seen.last().map(|a| a.ip()), from, "sources seen: {seen:?}");
    drop((knot, server));
    block_on(db.drop_db());
}

/// Where each datagram came from.
type Sources = std::sync::Arc<std::sync::Mutex<Vec<std::net::SocketAddr>>>;

/// A UDP socket answering every NOTIFY with an unsigned NOERROR (the
/// header and question echoed, QR set), for 10 s: its address, and the
/// source of every datagram it got.
fn unsigned_acknowledger() -> (std::net::SocketAddr, Sources) {
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let addr = socket.local_addr().unwrap();
    let sources = Sources::default();
    let seen = sources.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 1024];
        while let Ok((n, from)) = socket.recv_from(&mut buf) {
            seen.lock().unwrap().push(from);
            let question_end = 12 + buf[12..n].iter().position(|b| *b == 0).unwrap() + 5;
            let mut reply = buf[..question_end].to_vec();
            reply[2] |= 0x80;
            reply[10..12].copy_from_slice(&[0, 0]);
            let _ = socket.send_to(&reply, from);
        }
    });
    (addr, sources)
}

#[test]
fn a_burst_of_publishes_makes_few_notifies_and_ends_on_the_last_serial() {
    let db = served_db("notify-burst");
    let knot_port = free_port();
    let to_knot = format!("127.0.0.1:{knot_port}");
    let (server, control) = primary(&db, &["--notify", &to_knot]);
    let knot = Secondary::knot(&db.dir, knot_port, server.port, &[ZONE], None);
    let sent = stat(control, "notify_sent");
    let started = Instant::now();
    for i in 0..20u8 {
        edit_a(&db, &format!("burst{i}"), 100 + i);
        let due = Duration::from_millis(100) * u32::from(i + 1);
        std::thread::sleep(due.saturating_sub(started.elapsed()));
    }
    let written = Instant::now();
    let burst = written - started;
    let last = db_serial(&db);
    all_follow(&[&knot], last, written, "last publish of the burst");
    std::thread::sleep(Duration::from_millis(1500));
    let sent = stat(control, "notify_sent") - sent;
    eprintln!("20 publishes in {} ms: {sent} NOTIFYs", burst.as_millis());
    assert!(sent >= 1, "no NOTIFY at all");
    assert!(
        sent <= 8,
        "{sent} NOTIFYs for 20 publishes: not rate-bounded"
    );
    // How many publishes were folded depends on how many the poll saw
    // apart (several may fall between two polls on a loaded machine):
    // printed, not judged; the bound on NOTIFYs above is the property.
    eprintln!("coalesced: {}", stat(control, "notify_coalesced"));
    assert_eq!(knot.serial(ZONE), Some(last));
    drop((knot, server));
    block_on(db.drop_db());
}

/// The serial the database holds for the zone.
fn db_serial(db: &TestZoneDb) -> u32 {
    let zone: Name = ZONE.parse().unwrap();
    block_on(db.store.find_zone(&zone)).unwrap().unwrap().serial
}

#[test]
fn a_zone_settings_document_chooses_the_secondaries() {
    let db = served_db("notify-settings");
    let knot_port = free_port();
    let (server, control) = primary(&db, &[]);
    let knot = Secondary::knot(&db.dir, knot_port, server.port, &[ZONE], None);
    let zone: Name = ZONE.parse().unwrap();
    let target = format!("127.0.0.1:{knot_port}");
    cli(&db, "mongodns-zone", &["set-notify", ZONE, &target]);
    // Without --notify the server looks for settings documents every 2 s:
    // edits published before it saw this one notify nobody, so edit until
    // Knot follows one (it follows only when told).
    let serial = follow_once_seen(&db, server.port, &knot);
    assert!(acknowledged(control) >= 1);
    // An empty list: nobody is told, and the secondary stays behind.
    block_on(db.store.set_zone_notify(&zone, Some(&[]))).unwrap();
    let acks = acknowledged(control);
    edit_a(&db, "unnotified", 41);
    let newer = next_serial(server.port, serial);
    assert_eq!(knot.wait_serial(ZONE, newer, UNTOLD_WATCH), None);
    assert_eq!(acknowledged(control), acks);
    drop((knot, server));
    block_on(db.drop_db());
}

/// Edits the zone (a new label each time) until `secondary` serves the
/// edit's serial within a second of it; fails past [`FOLLOW_HANG`].
/// Returns that serial.
fn follow_once_seen(db: &TestZoneDb, primary: u16, secondary: &Secondary) -> u32 {
    let started = Instant::now();
    let mut serial = soa_serial(primary, ZONE).unwrap();
    let mut i = 0;
    loop {
        i += 1;
        edit_a(db, &format!("per-zone{i}"), 30);
        serial = next_serial(primary, serial);
        if secondary
            .wait_serial(ZONE, serial, Duration::from_secs(1))
            .is_some()
        {
            eprintln!("per-zone settings: followed at edit {i}");
            return serial;
        }
        assert!(
            started.elapsed() < FOLLOW_HANG,
            "the secondary never followed:\n{}",
            secondary.log_text()
        );
    }
}

/// A Knot primary of the zone text, with `nsid` as its identity.
struct KnotPrimary {
    child: std::process::Child,
    port: u16,
}

impl KnotPrimary {
    fn start(dir: &std::path::Path, nsid: &str) -> KnotPrimary {
        let dir = dir.join("knot-primary");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("zone"), ZONE_TEXT).unwrap();
        let port = free_port();
        let d = dir.display();
        let conf = format!(
            "server:\n    listen: 127.0.0.1@{port}\n    rundir: \"{d}\"\n    nsid: \"{nsid}\"\n\
             database:\n    storage: \"{d}\"\n\
             acl:\n  - id: local\n    address: 127.0.0.1\n    action: transfer\n\
             zone:\n  - domain: {ZONE}\n    file: \"{d}/zone\"\n    acl: local\n\
             \x20   zonefile-sync: -1\n    journal-content: none\n"
        );
        std::fs::write(dir.join("knot.conf"), conf).unwrap();
        let child = Command::new("knotd")
            .args(["-c", &dir.join("knot.conf").display().to_string()])
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("knotd is needed (apt-get install knot)");
        let started = Instant::now();
        while soa_serial(port, ZONE).is_none() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "Knot did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        KnotPrimary { child, port }
    }
}

impl Drop for KnotPrimary {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A query for `name`/`qtype` whose OPT carries `options` (code, data).
fn query_with_options(name: &str, qtype: u16, options: &[(u16, &[u8])]) -> Vec<u8> {
    let mut q = build_query(0x0707, name, qtype, Some((1232, false)), false);
    let mut rdata = Vec::new();
    for (code, data) in options {
        rdata.extend_from_slice(&code.to_be_bytes());
        rdata.extend_from_slice(&(data.len() as u16).to_be_bytes());
        rdata.extend_from_slice(data);
    }
    let len = q.len();
    q[len - 2..].copy_from_slice(&(rdata.len() as u16).to_be_bytes());
    q.extend_from_slice(&rdata);
    q
}

/// The rdata of the OPT record of `msg` (`None`: no OPT).
fn opt_rdata(msg: &[u8]) -> Option<Vec<u8>> {
    let count = |at: usize| usize::from(u16::from_be_bytes([msg[at], msg[at + 1]]));
    let skip_name = |mut at: usize| loop {
        match msg[at] {
            0 => return at + 1,
            l if l & 0xC0 == 0xC0 => return at + 2,
            l => at += 1 + usize::from(l),
        }
    };
    let mut at = 12;
    for _ in 0..count(4) {
        at = skip_name(at) + 4;
    }
    for index in 0..count(6) + count(8) + count(10) {
        let after = skip_name(at);
        let rdlen = count(after + 8);
        if index >= count(6) + count(8) && count(after) == 41 {
            return Some(msg[after + 10..after + 10 + rdlen].to_vec());
        }
        at = after + 10 + rdlen;
    }
    None
}

const NSID: u16 = 3;
const EXPIRE: u16 = 9;

#[test]
fn nsid_and_expire_are_sent_as_knot_sends_them() {
    let db = served_db("nsid-expire");
    let (server, _control) = primary(&db, &["--nsid", "ns-test-1"]);
    let knot = KnotPrimary::start(&db.dir, "ns-test-1");
    let asks: [Ask; 5] = [
        (ZONE, 6, &[(NSID, b""), (EXPIRE, b"")]),
        (ZONE, 6, &[(EXPIRE, b"")]),
        (ZONE, 6, &[]),
        ("www.follow.test.", 1, &[(NSID, b"")]),
        ("www.follow.test.", 1, &[]),
    ];
    // Twice: the second round is answered from the packet cache, which must
    // keep replies to queries with and without the options apart.
    for round in 0..2 {
        for (name, qtype, options) in asks {
            let q = query_with_options(name, qtype, options);
            let ours = udp_exchange(server.port, &q, Duration::from_secs(2)).unwrap();
            let theirs = udp_exchange(knot.port, &q, Duration::from_secs(2)).unwrap();
            assert_eq!(
                opt_rdata(&ours),
                opt_rdata(&theirs),
                "round {round}: {name} type {qtype} with options {options:?}"
            );
        }
    }
    // EXPIRE on another query: RFC 7314 §3 has a primary answer it on
    // SOA, AXFR and IXFR; Knot sends it for any name of the zone, we do not.
    let q = query_with_options("www.follow.test.", 1, &[(NSID, b""), (EXPIRE, b"")]);
    let ours = opt_rdata(&udp_exchange(server.port, &q, Duration::from_secs(2)).unwrap());
    let theirs = opt_rdata(&udp_exchange(knot.port, &q, Duration::from_secs(2)).unwrap());
    let (ours, theirs) = (ours.unwrap(), theirs.unwrap());
    assert_eq!(ours, b"\0\x03\0\x09ns-test-1");
    assert_eq!(theirs[..ours.len()], ours[..]);
    assert_eq!(theirs[ours.len()..ours.len() + 4], [0, 9, 0, 4]);
    // The SOA query's EXPIRE is the SOA's EXPIRE field, 1209600.
    let q = query_with_options(ZONE, 6, &[(EXPIRE, b"")]);
    let ours = udp_exchange(server.port, &q, Duration::from_secs(2)).unwrap();
    let expire = 1_209_600u32.to_be_bytes();
    assert_eq!(
        opt_rdata(&ours).unwrap(),
        [&[0, 9, 0, 4][..], &expire].concat()
    );
    // A zone transfer's first message carries them too, as Knot's does.
    let q = query_with_options(ZONE, 252, &[(NSID, b""), (EXPIRE, b"")]);
    let ours = tcp_exchange(server.port, &q);
    let theirs = tcp_exchange(knot.port, &q);
    assert_eq!(opt_rdata(&ours), opt_rdata(&theirs), "AXFR's first message");
    drop((knot, server));
    block_on(db.drop_db());
}
