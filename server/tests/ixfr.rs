//! IXFR from the zone journal (RFC 1995): what mongodns sends, applied to
//! the zone a secondary held, must give the zone as it is now; a serial the
//! journal does not reach gets the whole zone; Knot DNS and NSD as
//! secondaries follow record edits by IXFR.
//!
//! ```text
//!  import ─► AXFR (the old zone, serial S) ─► seeded record edits through
//!  signer::edit::apply (adds, deletes, replaces, TTL changes, names gone)
//!  ─► after each few: dig IXFR=S ─► incremental (SOA, then an old SOA)
//!     ─► applied to the old zone == AXFR now;  and IXFR=<the last
//!     serial seen> ─► applied to that zone == AXFR now
//!  a merge import (journaled) ─► IXFR=S and IXFR=<before it> applied == AXFR
//!  a replace import of the small zone (its diff journaled) ─► IXFR=S
//!     applied == AXFR; IXFR from a serial it never had ─► the whole zone
//!  secured (NSEC, NSEC3): secure-zone, signed edits, resign --full, a
//!     replace and a merge import, journaled with
//!     their RRSIGs and chain ─► IXFR applied == AXFR, which verifies
//!  Knot (testkit Secondary, refresh a day) told by --notify ─► three edits
//!     ─► each served, its log says IXFR; NSD (testkit Secondary) the
//!     same, its transfers answered from the journal (ixfr_incremental)
//!  an edit's journal insert held back on the wire after its publish ─►
//!     the IXFR asked meanwhile waits for the entry: incremental
//! ```

use dns::edit::{ChangeSet, RecordEdit};
use dns::{Name, RType};
use futures::StreamExt;
use mongodns_testkit::*;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

const ZONE: &str = "ixfr.test.";
const ZONE_TEXT: &str = small_zone!(
    "ixfr.test.",
    "a IN A 192.0.2.1\n\
     b IN TXT \"one\"\n\
     x.deep IN A 192.0.2.9\n"
);

fn name(text: &str) -> Name {
    text.parse().unwrap()
}

/// One random edit over a few names, types and values.
fn random_edit(rng: &mut Rng) -> RecordEdit {
    const OWNERS: [&str; 5] = [
        "a.ixfr.test.",
        "b.ixfr.test.",
        "c.ixfr.test.",
        "x.deep.ixfr.test.",
        "y.z.ixfr.test.",
    ];
    let owner = name(OWNERS[rng.below(5) as usize]);
    let ttl = [60, 300][rng.below(2) as usize];
    let value = rng.below(3) as u8;
    let (rtype, rdata): (RType, Vec<u8>) = match rng.below(2) {
        0 => (RType::A, vec![192, 0, 2, 100 + value]),
        _ => (RType::TXT, vec![2, b'v', b'0' + value]),
    };
    let rrset = dns::RRset {
        rtype,
        ttl,
        rdata: vec![rdata.into_boxed_slice()],
    };
    match rng.below(10) {
        0..=4 => RecordEdit::Add { name: owner, rrset },
        5 | 6 => RecordEdit::DeleteRecords {
            name: owner,
            rtype,
            rdata: rrset.rdata,
        },
        7 => RecordEdit::DeleteRRset { name: owner, rtype },
        8 => RecordEdit::ReplaceRRset { name: owner, rrset },
        _ => RecordEdit::DeleteName { name: owner },
    }
}

/// A transfer's records by dig: one normalised line each, in order.
fn transfer(port: u16, kind: &str) -> Vec<String> {
    transfer_lines(port, ZONE, kind, &[])
}

/// The zone by AXFR, as a set (the SOA once).
fn axfr(port: u16) -> BTreeSet<String> {
    axfr_set(port, ZONE)
}

fn apply(db: &TestZoneDb, edits: Vec<RecordEdit>) {
    block_on(signer::edit::apply(
        &db.store,
        &ChangeSet::new(name(ZONE), edits),
    ))
    .expect("the edit succeeds");
}

/// The served serial moved past `serial` (the poll is 1 s at most).
fn until_serial_after(port: u16, serial: u32) -> u32 {
    serial_after(port, ZONE, serial)
}

/// IXFR from each `(serial, zone held at it)` applied to that zone gives
/// `now`; returns how many were incremental (the rest were whole zones).
fn ixfr_gives(
    port: u16,
    bases: &[(u32, &BTreeSet<String>)],
    now: &BTreeSet<String>,
    what: &str,
) -> usize {
    let mut incremental = 0;
    for (from, base) in bases {
        let ixfr = transfer(port, &format!("IXFR={from}"));
        let mut zone = (*base).clone();
        incremental += usize::from(apply_ixfr(&mut zone, &ixfr));
        assert_eq!(&zone, now, "IXFR from {from} applied ({what})");
    }
    incremental
}

/// The zones a test holds IXFR against: the oldest (at its serial) and the
/// one it saw last.
struct Held {
    oldest: BTreeSet<String>,
    first_serial: u32,
    recent: BTreeSet<String>,
    recent_serial: u32,
}

impl Held {
    /// The zone served on `port` now, held as both.
    fn now(port: u16) -> Held {
        let oldest = axfr(port);
        let serial = serial_of(oldest.iter().find(|l| is_soa(l)).unwrap());
        Held {
            recent: oldest.clone(),
            oldest,
            first_serial: serial,
            recent_serial: serial,
        }
    }

    /// IXFR from both held zones gives the zone served now, at `serial`,
    /// which is then the recent one; returns how many were incremental.
    fn step(&mut self, port: u16, serial: u32, what: &str) -> usize {
        let now = axfr(port);
        let bases = [
            (self.first_serial, &self.oldest),
            (self.recent_serial, &self.recent),
        ];
        let incremental = ixfr_gives(port, &bases, &now, what);
        (self.recent, self.recent_serial) = (now, serial);
        incremental
    }
}

/// An edit that always changes the zone: `n` gets a value of `round`.
fn marker(round: u8) -> RecordEdit {
    let rdata = vec![vec![198, 51, 100, round].into()];
    RecordEdit::add(name("n.ixfr.test."), RType::A, 60, rdata)
}

/// The merge import both tests journal: new names, a name that gains a
/// record at a new TTL, an empty non-terminal (not in IXFR).
fn merge_import(db: &TestZoneDb) {
    let more = "$ORIGIN ixfr.test.\n$TTL 300\nm IN A 192.0.2.77\n\
                a 120 IN A 192.0.2.2\nx.ent.m IN TXT \"deep\"\n";
    block_on(db.import(ZONE, more, false));
}

/// A replace import of the small zone with one name more.
fn replace_import(db: &TestZoneDb) {
    let text = format!("{ZONE_TEXT}r IN A 192.0.2.78\n");
    block_on(db.import(ZONE, &text, true));
}

#[test]
fn ixfr_applied_to_the_old_zone_gives_the_new_one() {
    let seed = seed("IXFR_SEED");
    eprintln!("ixfr: IXFR_SEED={seed}");
    let mut rng = Rng(seed);
    let db = zone_db("ixfr", ZONE, ZONE_TEXT);
    let (ours, control) = start_with_control(&db.name, &["--axfr-allow", "127.0.0.1/32"]);
    let mut held = Held::now(ours.port);
    let mut serial = held.first_serial;
    let mut incremental = 0;
    for round in 0..12 {
        for _ in 0..3 {
            let edits = (0..1 + rng.below(3))
                .map(|_| random_edit(&mut rng))
                .collect();
            apply(&db, edits);
        }
        // A round whose edits all changed nothing leaves the serial.
        if serial_of(&transfer(ours.port, "SOA")[0]) == serial {
            apply(&db, vec![random_edit(&mut rng), marker(round)]);
        }
        serial = until_serial_after(ours.port, serial);
        let what = format!("seed {seed}, round {round}");
        incremental += held.step(ours.port, serial, &what);
    }
    assert_eq!(incremental, 24, "every IXFR was incremental (seed {seed})");
    assert_eq!(stat(control, "ixfr_incremental"), 24);
    let Held {
        oldest,
        first_serial,
        ..
    } = held;

    // A merge import is journaled too: new names, a name that gains a
    // record at a new TTL, an empty non-terminal (not in IXFR).
    let before_merge = (axfr(ours.port), serial);
    merge_import(&db);
    serial = until_serial_after(ours.port, serial);
    for (from, base) in [(first_serial, &oldest), (before_merge.1, &before_merge.0)] {
        let mut zone = base.clone();
        let ixfr = transfer(ours.port, &format!("IXFR={from}"));
        assert!(apply_ixfr(&mut zone, &ixfr), "a merge import is journaled");
        assert_eq!(zone, axfr(ours.port), "IXFR from {from} over the merge");
    }
    assert_eq!(stat(control, "ixfr_incremental"), 26);

    // A replace of a small zone is journaled as its difference from the
    // version it replaced.
    replace_import(&db);
    serial = until_serial_after(ours.port, serial);
    let now = axfr(ours.port);
    assert_eq!(
        ixfr_gives(
            ours.port,
            &[(first_serial, &oldest)],
            &now,
            "over a replace"
        ),
        1,
        "a small replace is journaled"
    );
    assert_eq!(stat(control, "ixfr_incremental"), 27);
    // A serial the zone never had (older than its history): the whole zone.
    let ixfr = transfer(ours.port, &format!("IXFR={}", first_serial.wrapping_sub(7)));
    let mut zone = oldest.clone();
    assert!(
        !apply_ixfr(&mut zone, &ixfr),
        "from a serial the journal does not reach, the whole zone is sent"
    );
    assert_eq!(zone, now);
    assert_eq!(stat(control, "ixfr_full"), 1);
    // After it, edits are journaled from the import's serial again.
    let before = axfr(ours.port);
    apply(
        &db,
        vec![RecordEdit::add(
            name("after.ixfr.test."),
            RType::A,
            60,
            vec![vec![203, 0, 113, 1].into()],
        )],
    );
    until_serial_after(ours.port, serial);
    let mut zone = before;
    assert!(apply_ixfr(
        &mut zone,
        &transfer(ours.port, &format!("IXFR={serial}"))
    ));
    assert_eq!(zone, axfr(ours.port));
}

/// The SOA serial a secondary on `port` serves.
fn secondary_serial(port: u16) -> Option<u32> {
    let q = build_query(3, ZONE, 6, None, false);
    let reply = udp_exchange(port, &q, Duration::from_millis(300))?;
    let m = hickory_proto::op::Message::from_vec(&reply).ok()?;
    match m.answers.first().map(|r| &r.data) {
        Some(hickory_proto::rr::RData::SOA(soa)) => Some(soa.serial),
        _ => None,
    }
}

/// Three edits, one at a time: `secondary` (on `port`) must serve each
/// new serial within 20 s of mongodns serving it; the delays are printed.
fn follow_three_edits(
    db: &TestZoneDb,
    ours: u16,
    port: u16,
    secondary: &str,
    log: &dyn Fn() -> String,
) {
    let wait = |serial: u32| {
        let started = Instant::now();
        while secondary_serial(port) != Some(serial) {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "{secondary} never reached serial {serial}:\n{}",
                log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        started.elapsed()
    };
    let mut serial = serial_of(&transfer(ours, "SOA")[0]);
    wait(serial);
    for i in 0..3u8 {
        let owner = name(&format!("s{i}.ixfr.test."));
        let rdata = vec![vec![192, 0, 2, i].into()];
        apply(db, vec![RecordEdit::add(owner, RType::A, 60, rdata)]);
        serial = until_serial_after(ours, serial);
        let took = wait(serial);
        eprintln!("ixfr: {secondary} at serial {serial} {took:?} after mongodns served it");
    }
}

/// The zone on a server that NOTIFYs a secondary on a port chosen here:
/// (database, server, its control port, the secondary's port).
fn notifying_primary(tag: &str) -> (TestZoneDb, ServerProcess, u16, u16) {
    let db = zone_db(tag, ZONE, ZONE_TEXT);
    let port = free_port();
    let notify = format!("127.0.0.1:{port}");
    let args = ["--axfr-allow", "127.0.0.1/32", "--notify", &notify];
    let (ours, control) = start_with_control(&db.name, &args);
    (db, ours, control, port)
}

#[test]
fn knot_follows_record_edits_by_notify_and_ixfr() {
    let (db, ours, control, port) = notifying_primary("ixfr_knot");
    // Refresh a day: only NOTIFY explains a quick update.
    let knot = Secondary::knot(&db.dir, port, ours.port, &[ZONE], None);
    let log = || knot.log_text();
    follow_three_edits(&db, ours.port, port, "Knot", &log);
    let text = log();
    let ixfrs = text
        .lines()
        .filter(|l| l.contains("IXFR, incoming") && l.contains("finished"));
    assert!(ixfrs.count() >= 3, "Knot's log shows three IXFRs:\n{text}");
    assert!(
        stat(control, "ixfr_incremental") >= 3,
        "answered from the journal"
    );
    drop((knot, ours));
    block_on(db.drop_db());
}

#[test]
fn nsd_follows_record_edits_by_notify_and_ixfr() {
    let (db, ours, control, nsd_port) = notifying_primary("ixfr_nsd");
    // Refresh a day: only NOTIFY explains a quick update.
    let nsd = Secondary::nsd(&db.dir, nsd_port, ours.port, &[ZONE], None);
    let log = || nsd.log_text();
    follow_three_edits(&db, ours.port, nsd_port, "NSD", &log);
    assert!(
        stat(control, "ixfr_incremental") >= 3,
        "NSD's refreshes were answered from the journal:\n{}",
        log()
    );
    let q = build_query(9, "s2.ixfr.test.", 1, None, false);
    let reply = udp_exchange(nsd_port, &q, Duration::from_secs(1)).expect("NSD answers");
    let m = hickory_proto::op::Message::from_vec(&reply).unwrap();
    assert_eq!(m.answers.len(), 1, "NSD serves the edited name");
    drop((nsd, ours));
    block_on(db.drop_db());
}

/// One record edit adding `label` (an A record), and the serial after it.
fn add_name(db: &TestZoneDb, port: u16, label: &str, serial: u32) -> u32 {
    let owner = name(&format!("{label}.{ZONE}"));
    let rdata = vec![vec![203, 0, 113, 9].into()];
    apply(db, vec![RecordEdit::add(owner, RType::A, 60, rdata)]);
    until_serial_after(port, serial)
}

#[test]
fn while_a_merge_is_live_other_writers_entries_are_not_exact() {
    let db = zone_db("ixfr_live_merge", ZONE, ZONE_TEXT);
    let (ours, control) = start_with_control(&db.name, &["--axfr-allow", "127.0.0.1/32"]);
    let zone = name(ZONE);
    // A merge that has begun (and may be writing, or was killed mid-batch):
    // what it wrote is served but not yet in any journal entry.
    let merge = block_on(
        db.store
            .begin_zone_write(&zone, backend_mongo::WriteMode::Merge),
    )
    .unwrap();
    let (before, from) = {
        let zone = axfr(ours.port);
        let serial = serial_of(zone.iter().find(|l| is_soa(l)).unwrap());
        (zone, serial)
    };
    let serial = add_name(&db, ours.port, "during", from);
    let mut zone = before.clone();
    assert!(
        !apply_ixfr(&mut zone, &transfer(ours.port, &format!("IXFR={from}"))),
        "an edit while a merge is live is sent as the whole zone"
    );
    assert_eq!(zone, axfr(ours.port));
    // The merge finishes: entries are exact again from its serial on.
    let finished = block_on(merge.finish(Duration::ZERO)).unwrap();
    let from = until_serial_after(ours.port, serial);
    assert_eq!(from, finished.serial);
    let after_merge = axfr(ours.port);
    add_name(&db, ours.port, "after", from);
    let mut zone = after_merge;
    assert!(
        apply_ixfr(&mut zone, &transfer(ours.port, &format!("IXFR={from}"))),
        "after the merge, edits are journaled again"
    );
    assert_eq!(zone, axfr(ours.port));
    assert_eq!(stat(control, "ixfr_full"), 1);
    drop(ours);
    block_on(db.drop_db());
}

/// A secured zone (NSEC, then NSEC3): `secure-zone` of the small zone,
/// signed record edits, a full re-sign, a replace and a merge import are
/// journaled with their signatures and chain changes, so an
/// IXFR from the serial after `secure-zone` (and from the last one seen)
/// applied to the zone held there gives the zone as it is now, which
/// verifies.
#[test]
fn ixfr_of_a_signed_zone_applied_to_the_old_zone_gives_the_new_one() {
    for nsec3 in [false, true] {
        signed_zone_ixfr(nsec3);
    }
}

fn signed_zone_ixfr(nsec3: bool) {
    let seed = seed("IXFR_SEED");
    eprintln!("ixfr of a signed zone (nsec3: {nsec3}): IXFR_SEED={seed}");
    let mut rng = Rng(seed);
    let db = zone_db("ixfr_signed", ZONE, ZONE_TEXT);
    let (ours, control) = start_with_control(&db.name, &["--axfr-allow", "127.0.0.1/32"]);
    let mut serial = serial_of(&transfer(ours.port, "SOA")[0]);
    let (unsigned, unsigned_serial) = (axfr(ours.port), serial);
    let args: &[&str] = match nsec3 {
        true => &["-q", "secure-zone", ZONE, "--grace", "0", "--nsec3"],
        false => &["-q", "secure-zone", ZONE, "--grace", "0"],
    };
    run_tool(&db.name, "mongodns-sign", args);
    serial = until_serial_after(ours.port, serial);
    let mut held = Held::now(ours.port);
    let mut incremental = 0;
    for round in 0..6u8 {
        let edits = vec![random_edit(&mut rng), random_edit(&mut rng), marker(round)];
        apply(&db, edits);
        serial = until_serial_after(ours.port, serial);
        let what = format!("signed, nsec3 {nsec3}, seed {seed}, round {round}");
        incremental += held.step(ours.port, serial, &what);
    }
    // A full re-sign in place (every signature new) is journaled too.
    let before_resign = held.recent_serial;
    run_tool(&db.name, "mongodns-sign", &["-q", "resign", "--full", ZONE]);
    let resigned = until_serial_after(ours.port, serial);
    let what = format!("re-signed, nsec3 {nsec3}, seed {seed}");
    incremental += held.step(ours.port, resigned, &what);
    let Held {
        oldest,
        first_serial,
        recent: now,
        ..
    } = held;
    let ixfr = transfer(ours.port, &format!("IXFR={before_resign}"));
    let rrsigs = ixfr.iter().filter(|l| l.contains(" RRSIG ")).count();
    assert!(
        rrsigs >= 2 * now.iter().filter(|l| l.contains(" RRSIG ")).count(),
        "the re-sign's IXFR removes and adds every signature ({rrsigs} RRSIG lines)"
    );
    // A replace of the secured zone (signed before its switch) is
    // journaled as its difference too.
    let serial = serial_of(&transfer(ours.port, "SOA")[0]);
    replace_import(&db);
    until_serial_after(ours.port, serial);
    let now = axfr(ours.port);
    let what = format!("replaced, nsec3 {nsec3}, seed {seed}");
    incremental += ixfr_gives(ours.port, &[(first_serial, &oldest)], &now, &what);
    // A merge import into the secured zone (signed batch by batch) is
    // journaled from its signer's node images.
    let serial = serial_of(&transfer(ours.port, "SOA")[0]);
    let before_merge = axfr(ours.port);
    merge_import(&db);
    let merged = until_serial_after(ours.port, serial);
    let now = axfr(ours.port);
    let what = format!("merged, nsec3 {nsec3}, seed {seed}");
    incremental += ixfr_gives(
        ours.port,
        &[
            (first_serial, &oldest),
            (serial, &before_merge),
            // secure-zone's new version of this small zone is journaled too.
            (unsigned_serial, &unsigned),
        ],
        &now,
        &what,
    );
    assert_eq!(
        serial_of(&transfer(ours.port, "SOA")[0]),
        merged,
        "one serial for the signed merge"
    );
    assert_eq!(
        incremental, 18,
        "every IXFR was incremental (nsec3 {nsec3}, seed {seed})"
    );
    assert_eq!(stat(control, "ixfr_incremental"), 19);
    verify_signed_zone(&db.dir, ZONE, &axfr_text(ours.port, ZONE));
    drop(ours);
    block_on(db.drop_db());
}

/// Polls `done` every 10 ms until it is true; panics after `limit`.
async fn until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "{what}: not within {limit:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// An IXFR asked after a record edit's publish but before its journal
/// entry is written (the edit still holding the zone lock: here its
/// journal insert is held back on the wire) waits for the entry and is
/// incremental, rather than the whole zone: what a secondary told by
/// NOTIFY at once gets.
#[test]
fn an_ixfr_between_a_publish_and_its_journal_entry_waits_for_the_entry() {
    let zone = name(ZONE);
    block_on(async {
        let db = TestZoneDb::new("ixfr_pending").await;
        db.import(ZONE, ZONE_TEXT, true).await;
        let before = db.store.find_zone(&zone).await.unwrap().unwrap();
        let held = Relay::to_database();
        held.hold_requests(|req| !sent_commands(req, "insert", "journal").is_empty());
        let writer = backend_mongo::Store::connect(&held.uri(), &db.name, Duration::from_secs(10))
            .await
            .expect("a writer through the relay");
        let add = RecordEdit::add(
            name("new.ixfr.test."),
            RType::A,
            300,
            vec![vec![192, 0, 2, 7].into()],
        );
        let edit =
            tokio::spawn(
                async move { signer::edit::edit_zone(&writer, &name(ZONE), &[add]).await },
            );
        until("the journal insert held", Duration::from_secs(30), || {
            held.held() > 0
        })
        .await;
        let now = db.store.find_zone(&zone).await.unwrap().unwrap();
        assert!(now.gen > before.gen, "published before its journal entry");
        let tap = Relay::tapping_database();
        let reader = backend_mongo::Store::connect(&tap.uri(), &db.name, Duration::from_secs(10))
            .await
            .expect("a reader through a tap");
        let chain = tokio::spawn(async move { reader.journal_chain(&now, before.serial).await });
        until(
            "the reader's first look at the journal",
            Duration::from_secs(30),
            || !sent_commands(&tap.sent(), "find", "journal").is_empty(),
        )
        .await;
        held.release();
        let chain = chain.await.unwrap().expect("the journal read");
        let entries: Vec<_> = chain
            .expect("an incremental chain, not the whole zone")
            .collect::<Vec<_>>()
            .await;
        assert_eq!(entries.len(), 1, "the edit's one entry");
        edit.await.unwrap().expect("the edit succeeds");
    });
}
