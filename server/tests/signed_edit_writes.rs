//! What a signed record edit sends to the database, counted at the wire:
//! a name it adds is inserted once, whole and signed (its records, their
//! RRSIG, its NSEC and the NSEC's RRSIG in one document), never written
//! unsigned first and never updated after; it is read once (the edit's own
//! read under the zone lock: it is its journal before-image, and what was
//! inserted its after-image).
//! The zone verifies after it, and the next edit takes the kept signer up
//! without reading the first edit's names again. A new name the chain
//! shows absent is not read at all, nor is the predecessor whose NSEC (or
//! NSEC3) is relinked to it: the journal takes their before-images from
//! the signer's chain copy, and IXFR still gives the AXFR.
//!
//! ```text
//!  import, secure-zone ─► Store through a tapping Relay
//!  ─► signer::edit::edit_zone(30 new names) ─► the commands sent:
//!     insert / update / find on nodes, per new name's document id
//!  ─► new names between old ones (NSEC, NSEC3): neither they nor their
//!     predecessors read; IXFR applied to the AXFR before gives the AXFR
//!  ─► a second edit, of names away from the first's ─► no find of the
//!     first edit's names
//!  ─► AXFR ─► dnssec-verify + ldns-verify-zone
//! ```

use backend_mongo::Store;
use dns::edit::RecordEdit;
use dns::{Name, RType};
use mongodns_testkit::*;
use signer::SecureOptions;
use std::collections::BTreeSet;
use std::time::Duration;

const ZONE: &str = "writes.test.";

const NEW: usize = 30;

fn zone_text() -> String {
    let mut text = format!(
        "$ORIGIN {ZONE}\n$TTL 300\n@ IN SOA ns hostmaster 1 7200 900 1209600 60\n\
         @ IN NS ns\nns IN A 192.0.2.53\n"
    );
    for i in 0..20 {
        text.push_str(&format!("old{i} IN A 192.0.2.{i}\n"));
    }
    text
}

/// A database of its own holding the zone, imported and secured (NSEC).
fn secured_db(tag: &str) -> TestZoneDb {
    secured_db_with(tag, None)
}

/// [`secured_db`] with NSEC3 (`Some`) or NSEC.
fn secured_db_with(
    tag: &str,
    nsec3: Option<backend_mongo::dnssec_store::Nsec3Config>,
) -> TestZoneDb {
    let zone: Name = ZONE.parse().unwrap();
    let options = SecureOptions::ecdsa(nsec3);
    block_on(async {
        let db = TestZoneDb::new(tag).await;
        db.import(ZONE, &zone_text(), true).await;
        signer::secure_zone(&db.store, &zone, &options, &signer::NoProgress)
            .await
            .expect("secure-zone");
        db
    })
}

fn adds(prefix: &str) -> Vec<RecordEdit> {
    (0..NEW)
        .map(|i| {
            let name: Name = format!("{prefix}{i}.{ZONE}").parse().unwrap();
            RecordEdit::add(
                name,
                RType::A,
                300,
                vec![vec![198, 51, 100, i as u8].into()],
            )
        })
        .collect()
}

/// A store on `db` through a relay that keeps every command sent, and the
/// version of `zone` served.
fn tapped_store(db: &TestZoneDb, zone: &Name) -> (Relay, Store, i64) {
    let tap = Relay::tapping_database();
    let store = block_on(Store::connect(
        &tap.uri(),
        &db.name,
        Duration::from_secs(10),
    ))
    .expect("a store through the relay");
    let ver = block_on(store.find_zone(zone)).unwrap().unwrap().ver;
    (tap, store, ver)
}

/// The IXFR from `serial` applied to `held` (the AXFR at `serial`) gives
/// the AXFR now, and the zone verifies.
fn ixfr_gives_the_axfr(db: &TestZoneDb, port: u16, serial: u32, mut held: BTreeSet<String>) {
    serial_after(port, ZONE, serial);
    let ixfr = transfer_lines(port, ZONE, &format!("IXFR={serial}"), &[]);
    assert!(apply_ixfr(&mut held, &ixfr), "an incremental transfer");
    assert_eq!(
        held,
        axfr_set(port, ZONE),
        "the IXFR applied gives the AXFR"
    );
    verify_signed_zone(&db.dir, ZONE, &axfr_text(port, ZONE));
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// How many of `commands` name `id` (a node document's `_id`).
fn naming(commands: &[Vec<u8>], id: &str) -> usize {
    commands
        .iter()
        .filter(|c| contains(c, id.as_bytes()))
        .count()
}

#[test]
fn a_signed_edit_inserts_each_new_name_once_whole_and_signed() {
    let db = secured_db("signed_edit_writes");
    let zone: Name = ZONE.parse().unwrap();
    let (tap, store, ver) = tapped_store(&db, &zone);
    let first =
        block_on(signer::edit::edit_zone(&store, &zone, &adds("new"))).expect("the signed edit");
    assert!(first.gen.is_some(), "the edit published");

    let sent = tap.sent();
    let inserts = sent_commands(&sent, "insert", "nodes");
    let updates = sent_commands(&sent, "update", "nodes");
    let finds = sent_commands(&sent, "find", "nodes");
    for i in 0..NEW {
        let id = format!("{ZONE} {ver} new{i}.{ZONE}");
        let inserted: Vec<&Vec<u8>> = inserts
            .iter()
            .filter(|c| contains(c, id.as_bytes()))
            .collect();
        assert_eq!(inserted.len(), 1, "{id}: inserted once");
        for key in ["sigs", "NSEC", "dk", "sx"] {
            assert!(
                bson_has_key(inserted[0], key),
                "{id}: inserted signed and linked (no {key:?} in its insert)"
            );
        }
        assert_eq!(
            naming(&updates, &id),
            0,
            "{id}: never updated after its insert"
        );
        assert_eq!(
            naming(&finds, &id),
            0,
            "{id}: not read (the chain shows it absent)"
        );
    }

    // The next edit takes the kept signer up: the first edit's own change
    // records (its intent and its publish) are not read back name by name.
    // Its names sort before the first edit's, after the apex (their one
    // outside predecessor): none of the first edit's is a neighbour.
    let before = tap.sent().len();
    block_on(signer::edit::edit_zone(&store, &zone, &adds("aaa"))).expect("a second edit");
    let later = tap.sent()[before..].to_vec();
    let finds = sent_commands(&later, "find", "nodes");
    for i in 0..NEW {
        let id = format!("{ZONE} {ver} new{i}.{ZONE}");
        assert_eq!(naming(&finds, &id), 0, "{id}: read again by the next edit");
    }
    assert_eq!(signer::kept_signer::taken_in(&store, &zone), 1);

    let server = ServerProcess::start(&db.name, &["--axfr-allow", "127.0.0.1/32"]);
    let text = axfr_text(server.port, ZONE);
    verify_signed_zone(&db.dir, ZONE, &text);
    for prefix in ["new", "aaa"] {
        for i in 0..NEW {
            let owner = format!("{prefix}{i}.{ZONE}");
            let has = |rtype: &str| {
                text.lines().any(|l| {
                    let f: Vec<&str> = l.split_whitespace().collect();
                    f.first() == Some(&owner.as_str()) && f.get(3) == Some(&rtype)
                })
            };
            assert!(
                has("A") && has("RRSIG") && has("NSEC"),
                "{owner}: served signed"
            );
        }
    }
}

/// A name the signer was told is new, which another writer inserted in
/// the meantime (unsigned, with a record of its own): the insert finds it
/// there, and the signer merges into what is stored instead, so both
/// writers' records are kept, signed, and the zone verifies.
#[test]
fn a_new_name_another_writer_inserted_meanwhile_is_merged_not_lost() {
    let db = secured_db("signed_edit_raced");
    let zone: Name = ZONE.parse().unwrap();
    let raced: Name = format!("raced.{ZONE}").parse().unwrap();
    let a = |last: u8| {
        RecordEdit::add(
            raced.clone(),
            RType::A,
            300,
            vec![vec![192, 0, 2, last].into()],
        )
    };
    let node = block_on(async {
        let served = db.store.find_zone(&zone).await.unwrap().unwrap();
        let mut signer = signer::merge::MergeSigner::new(&db.store, &zone, served.ver)
            .await
            .unwrap()
            .expect("the zone is secured");
        // The other writer: an unsigned edit, after the signer read the zone.
        db.store.edit_zone(&zone, &[a(99)]).await.unwrap();
        let ours = backend_mongo::NodeWrite {
            name: raced.clone(),
            rrsets: vec![dns::RRset::of(RType::A, 300, &[&[192, 0, 2, 1]])],
        };
        let settled = signer.write_new(&db.store, &[ours]).await.unwrap();
        assert!(
            settled.written >= 1,
            "the raced name was written: {settled:?}"
        );
        let served = db.store.find_zone(&zone).await.unwrap().unwrap();
        signer.sign_soa(&db.store, served.serial).await.unwrap();
        let read = db
            .store
            .read_full_nodes(&zone, served.ver, std::slice::from_ref(&raced))
            .await;
        read.unwrap().remove(0).expect("the raced name is stored")
    });
    let a_set = node.get(RType::A).expect("its A records");
    assert_eq!(
        a_set.rrset.rdata.len(),
        2,
        "both writers' records kept: {a_set:?}"
    );
    assert!(!a_set.sigs.is_empty(), "its A records signed");
    assert!(node.get(RType::NSEC).is_some(), "in the chain");
    let server = ServerProcess::start(&db.name, &["--axfr-allow", "127.0.0.1/32"]);
    verify_signed_zone(&db.dir, ZONE, &axfr_text(server.port, ZONE));
}

/// The journal of a signed edit that inserts a name whole and then, in the
/// same change-set, changes it again (its successor deleted: its NSEC is
/// relinked past it): the IXFR from the serial before the edit, applied to
/// the zone as it was, gives the AXFR after it. The inserted node's
/// after-image is its insert only until the second write names it.
#[test]
fn the_journal_of_a_signed_edit_holds_a_new_name_changed_after_its_insert() {
    let db = secured_db("signed_edit_journal");
    let zone: Name = ZONE.parse().unwrap();
    let server = ServerProcess::start(&db.name, &["--axfr-allow", "127.0.0.1/32"]);
    let port = server.port;
    let held = axfr_set(port, ZONE);
    let serial = soa_serial(port, ZONE).expect("the zone's serial");
    // old1a sorts between old19 and old2: old2's predecessor once added.
    let added: Name = format!("old1a.{ZONE}").parse().unwrap();
    let deleted: Name = format!("old2.{ZONE}").parse().unwrap();
    let edits = [
        RecordEdit::add(added, RType::A, 300, vec![vec![198, 51, 100, 1].into()]),
        RecordEdit::DeleteName { name: deleted },
    ];
    block_on(signer::edit::edit_zone(&db.store, &zone, &edits)).expect("the signed edit");
    ixfr_gives_the_axfr(&db, port, serial, held);
}

/// A signed edit of more names than half a change record holds: each name
/// is noted twice (written, then signed), yet the record lists the names
/// (once each), so that servers drop only those from their caches instead
/// of the whole zone ("all").
#[test]
fn a_signed_edit_of_thousands_of_names_lists_them_in_its_change_record() {
    let db = secured_db("signed_edit_record");
    let zone: Name = ZONE.parse().unwrap();
    let many = backend_mongo::schema::MAX_CHANGED_NAMES / 2 + 100;
    let edits: Vec<RecordEdit> = (0..many)
        .map(|i| {
            let name: Name = format!("bulk{i}.{ZONE}").parse().unwrap();
            RecordEdit::add(name, RType::A, 300, vec![vec![198, 51, 100, 7].into()])
        })
        .collect();
    let summary = block_on(signer::edit::edit_zone(&db.store, &zone, &edits)).expect("the edit");
    let gen = summary.gen.expect("published");
    let records = block_on(db.store.change_records(gen, gen)).unwrap();
    let names = records[&gen]
        .names
        .as_ref()
        .expect("names listed, not \"all\"");
    for e in &edits {
        assert!(names.contains(e.name()), "{} listed", e.name());
    }
    assert!(names.len() < 2 * many, "each name once: {}", names.len());
}

/// New names, each right after an old name in the chain (NSEC: `old3` is
/// the predecessor of `old3x`), added by one signed edit: no `find` names
/// a new name, an old one or an NSEC3 node (the new names are absent by
/// the chain, the before-images of the predecessors and of the new NSEC3
/// nodes come from the signer's chain copy), and the journal is exact: the
/// IXFR applied to the zone before gives the AXFR.
fn new_names_and_their_predecessors_are_not_read(
    tag: &str,
    nsec3: Option<backend_mongo::dnssec_store::Nsec3Config>,
) {
    let db = secured_db_with(tag, nsec3);
    let zone: Name = ZONE.parse().unwrap();
    let server = ServerProcess::start(&db.name, &["--axfr-allow", "127.0.0.1/32"]);
    let port = server.port;
    let held = axfr_set(port, ZONE);
    let serial = soa_serial(port, ZONE).expect("the zone's serial");
    let (tap, store, ver) = tapped_store(&db, &zone);
    let mut edits: Vec<RecordEdit> = (3..9)
        .map(|i| {
            let name: Name = format!("old{i}x.{ZONE}").parse().unwrap();
            RecordEdit::add(name, RType::A, 300, vec![vec![198, 51, 100, i].into()])
        })
        .collect();
    // A stored name, in the chain: read, as every name the chain holds.
    let stored: Name = format!("old10.{ZONE}").parse().unwrap();
    edits.push(RecordEdit::add(
        stored,
        RType::TXT,
        300,
        vec![b"\x02hi".to_vec().into()],
    ));
    block_on(signer::edit::edit_zone(&store, &zone, &edits)).expect("the signed edit");
    let finds = sent_commands(&tap.sent(), "find", "nodes");
    for i in 3..9 {
        for owner in [format!("old{i}x"), format!("old{i}")] {
            let id = format!("{ZONE} {ver} {owner}.{ZONE}");
            assert_eq!(naming(&finds, &id), 0, "{id}: read by the edit");
        }
    }
    let id = format!("{ZONE} {ver} old10.{ZONE}");
    assert_ne!(naming(&finds, &id), 0, "{id}: not read, yet in the chain");
    // NSEC3: neither the new names' NSEC3 nodes nor their predecessors'.
    let nsec3_nodes = format!("{ZONE} {ver} nsec3 ");
    assert_eq!(
        naming(&finds, &nsec3_nodes),
        0,
        "NSEC3 nodes read by the edit"
    );
    ixfr_gives_the_axfr(&db, port, serial, held);
}

#[test]
fn new_names_and_their_nsec_predecessors_are_not_read() {
    new_names_and_their_predecessors_are_not_read("signed_edit_unread", None);
}

#[test]
fn new_names_and_their_nsec3_predecessors_are_not_read() {
    let nsec3 = backend_mongo::dnssec_store::Nsec3Config {
        iterations: 0,
        salt: Vec::new(),
        opt_out: false,
    };
    new_names_and_their_predecessors_are_not_read("signed_edit_unread3", Some(nsec3));
}
