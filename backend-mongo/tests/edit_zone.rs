//! `Store::edit_zone` against the real test database: single records
//! added and deleted, empty non-terminals kept right, the apex protected,
//! one generation and one change record per change-set; journal entries
//! past the age limit pruned.

use backend_mongo::dns::edit::{ChangeSet, Edited, Ignored, RecordEdit};
use backend_mongo::testing::{block_on, example_net, TestDb};
use backend_mongo::{EditSummary, Name, RRset, RType, StoreError, ZoneInfo};

fn n(s: &str) -> Name {
    s.parse().unwrap()
}

fn a(name: &str, last: u8) -> RecordEdit {
    RecordEdit::add(n(name), RType::A, 300, vec![vec![192, 0, 2, last].into()])
}

async fn exists(db: &TestDb, name: &str) -> bool {
    let zone = current(db).await;
    db.store.get_node(&zone, &n(name)).await.unwrap().is_some()
}

async fn records(db: &TestDb, name: &str, t: RType) -> usize {
    let zone = current(db).await;
    let node = db.store.get_node(&zone, &n(name)).await.unwrap();
    node.and_then(|n| n.rrset(t).map(|r| r.rdata.len()))
        .unwrap_or(0)
}

/// example.net. as served now.
async fn current(db: &TestDb) -> ZoneInfo {
    let zone = db.store.find_zone(&n("example.net.")).await.unwrap();
    zone.expect("example.net. is served")
}

/// `edits` applied to example.net. as one change-set.
async fn change(db: &TestDb, edits: &[RecordEdit]) -> EditSummary {
    let zone = n("example.net.");
    db.store.edit_zone(&zone, edits).await.unwrap()
}

/// A database of its own serving `example.net.`.
async fn served(tag: &str) -> (TestDb, Name) {
    let db = TestDb::new(tag).await;
    let (zone, nodes) = example_net();
    db.write_zone(&zone, &nodes).await;
    (db, zone)
}

fn soa(serial: u32) -> Vec<u8> {
    let mut soa = b"\x03ns1\x07example\x03net\x00\x0ahostmaster\x07example\x03net\x00".to_vec();
    for v in [serial, 7200, 900, 1209600, 300] {
        soa.extend_from_slice(&v.to_be_bytes());
    }
    soa
}

#[test]
fn records_are_added_and_deleted_one_at_a_time() {
    block_on(async {
        let (db, zone) = served("edit_one").await;
        let before = current(&db).await;

        // A deep new name: its empty non-terminals come with it.
        let deep = "x.b.c.example.net.";
        let s = change(&db, &[a(deep, 1), a(deep, 2)]).await;
        assert_eq!(s.outcomes, vec![Edited::Changed, Edited::Changed]);
        assert_eq!(s.serial, 2, "the serial moves by one per change-set");
        for name in [deep, "b.c.example.net.", "c.example.net.", "example.net."] {
            assert!(s.names.contains(&n(name)), "{name} listed in {:?}", s.names);
        }
        assert_eq!(records(&db, deep, RType::A).await, 2);
        assert!(exists(&db, "b.c.example.net.").await);
        assert!(exists(&db, "c.example.net.").await);
        let gen = s.gen.expect("a new generation");
        assert!(gen > before.gen);
        let recs = db.store.change_records(gen, gen).await.unwrap();
        let rec = &recs[&gen];
        assert_eq!(rec.zone, zone);
        assert_eq!(rec.names.as_deref(), Some(&s.names[..]));

        // A sibling below b: deleting x keeps b (a name remains below it).
        change(&db, &[a("y.b.c.example.net.", 3)]).await;
        let del = RecordEdit::DeleteRecords {
            name: n(deep),
            rtype: RType::A,
            rdata: vec![vec![192, 0, 2, 1].into()],
        };
        change(&db, &[del]).await;
        assert_eq!(records(&db, deep, RType::A).await, 1);
        let gone = RecordEdit::DeleteRRset {
            name: n(deep),
            rtype: RType::A,
        };
        let s = change(&db, &[gone]).await;
        assert!(!exists(&db, deep).await, "an emptied leaf is deleted");
        assert!(exists(&db, "b.c.example.net.").await, "y is still below b");
        assert!(s.names.contains(&n(deep)));

        // The last name below: the empty non-terminals go with it.
        let last = RecordEdit::DeleteName {
            name: n("y.b.c.example.net."),
        };
        let s = change(&db, &[last]).await;
        for name in ["y.b.c.example.net.", "b.c.example.net.", "c.example.net."] {
            assert!(!exists(&db, name).await, "{name} deleted");
            assert!(s.names.contains(&n(name)), "{name} listed");
        }
        assert_eq!(s.serial, 6);
        db.drop_db().await;
    });
}

#[test]
fn a_name_with_names_below_becomes_an_empty_non_terminal() {
    block_on(async {
        let (db, _) = served("edit_ent").await;
        change(&db, &[a("p.example.net.", 1), a("q.p.example.net.", 2)]).await;
        let del = RecordEdit::DeleteName {
            name: n("p.example.net."),
        };
        change(&db, &[del]).await;
        let served = current(&db).await;
        let p = db.store.get_node(&served, &n("p.example.net.")).await;
        assert!(p.unwrap().expect("kept").is_empty_non_terminal());
        assert_eq!(records(&db, "q.p.example.net.", RType::A).await, 1);
        db.drop_db().await;
    });
}

#[test]
fn the_apex_keeps_its_soa_and_ns_and_nothing_changed_publishes_nothing() {
    block_on(async {
        let (db, zone) = served("edit_apex").await;
        let before = current(&db).await;
        let edits = [
            RecordEdit::DeleteRRset {
                name: zone.clone(),
                rtype: RType::SOA,
            },
            RecordEdit::DeleteRRset {
                name: zone.clone(),
                rtype: RType::NS,
            },
            RecordEdit::DeleteName { name: zone.clone() },
            RecordEdit::DeleteName {
                name: n("nothing.example.net."),
            },
        ];
        let s = change(&db, &edits).await;
        let apex = Edited::Ignored(Ignored::ApexSoaOrNs);
        let expect = vec![apex, apex, Edited::Unchanged, Edited::Unchanged];
        assert_eq!(s.outcomes, expect);
        assert_eq!(s.gen, None);
        let after = current(&db).await;
        assert_eq!((after.serial, after.gen), (before.serial, before.gen));
        assert_eq!(records(&db, "example.net.", RType::SOA).await, 1);
        assert_eq!(records(&db, "example.net.", RType::NS).await, 1);
        db.drop_db().await;
    });
}

#[test]
fn an_edit_outside_the_zone_changes_nothing() {
    block_on(async {
        let (db, zone) = served("edit_outside").await;
        let edits = [a("in.example.net.", 1), a("www.example.org.", 1)];
        let err = db.store.edit_zone(&zone, &edits).await.unwrap_err();
        assert!(matches!(err, StoreError::Conflict(_)), "{err}");
        assert!(err.to_string().contains("www.example.org."), "{err}");
        assert!(!exists(&db, "in.example.net.").await);
        let nowhere = n("nowhere.test.");
        let missing = db
            .store
            .edit_zone(&nowhere, &[a("a.nowhere.test.", 1)])
            .await
            .unwrap_err();
        assert!(matches!(missing, StoreError::NoSuchZone(_)), "{missing}");
        db.drop_db().await;
    });
}

#[test]
fn a_replaced_rrset_and_a_new_soa_serial() {
    block_on(async {
        let (db, zone) = served("edit_replace").await;
        let two = RecordEdit::ReplaceRRset {
            name: n("ns1.example.net."),
            rrset: RRset {
                rtype: RType::A,
                ttl: 60,
                rdata: vec![vec![10, 0, 0, 1].into(), vec![10, 0, 0, 2].into()],
            },
        };
        change(&db, &[two]).await;
        assert_eq!(records(&db, "ns1.example.net.", RType::A).await, 2);
        // An SOA with a later serial replaces the stored one, and is kept.
        let new_soa = RecordEdit::Add {
            name: zone.clone(),
            rrset: RRset {
                rtype: RType::SOA,
                ttl: 3600,
                rdata: vec![soa(2026120100).into()],
            },
        };
        let s = change(&db, &[new_soa]).await;
        assert_eq!(s.outcomes, vec![Edited::Changed]);
        assert_eq!(s.serial, 2026120100);
        db.drop_db().await;
    });
}

#[test]
fn a_refused_edit_can_make_the_whole_change_set_write_nothing() {
    block_on(async {
        let (db, zone) = served("edit_whole").await;
        let before = current(&db).await;
        let cname = RecordEdit::add(
            n("ns1.example.net."),
            RType::CNAME,
            60,
            vec![b"\x01x\x00".to_vec().into()],
        );
        let edits = vec![a("fine.example.net.", 1), cname];
        let whole = ChangeSet::new(zone.clone(), edits.clone()).whole();
        let edit = db.store.begin_edit(&whole, None).await.unwrap();
        let s = edit.publish().await.unwrap();
        assert_eq!(
            s.outcomes,
            vec![Edited::Changed, Edited::Ignored(Ignored::CnameConflict)]
        );
        assert_eq!(s.gen, None, "nothing published");
        assert!(!exists(&db, "fine.example.net.").await, "nothing written");
        let after = current(&db).await;
        assert_eq!(after.serial, before.serial);
        // Applying the rest (DNS UPDATE's way) writes the first edit.
        let s = change(&db, &edits).await;
        assert!(s.gen.is_some());
        assert!(exists(&db, "fine.example.net.").await);
        db.drop_db().await;
    });
}

#[test]
fn a_deleted_zone_written_again_by_a_multi_zone_import_starts_above_it() {
    block_on(async {
        let (db, zone) = served("delete_multi").await;
        let before = current(&db).await;
        db.store.delete_zone(&zone).await.unwrap();
        assert!(db.store.find_zone(&zone).await.unwrap().is_none());
        assert!(db
            .store
            .zones_deleted_since(before.gen)
            .await
            .unwrap()
            .contains(&zone));
        let (_, nodes) = example_net();
        let content = backend_mongo::ZoneContent {
            apex: zone.clone(),
            nodes,
            resume_key: None,
        };
        let mode = backend_mongo::WriteMode::Replace;
        let zero = std::time::Duration::ZERO;
        db.store.write_zones(&[content], mode, zero).await.unwrap();
        let again = db
            .store
            .find_zone(&zone)
            .await
            .unwrap()
            .expect("served again");
        assert!(
            again.ver > before.ver,
            "version {} after {}",
            again.ver,
            before.ver
        );
        // The deleted zone's version is still listed, and collected.
        let collected = db
            .store
            .collect_old_versions(&zone, zero, &|_| {})
            .await
            .unwrap();
        assert_eq!(collected.versions, vec![before.ver]);
        assert!(exists(&db, "ns1.example.net.").await);
        db.drop_db().await;
    });
}

#[test]
fn journal_entries_past_the_age_limit_are_pruned() {
    use mongodb::bson::{doc, DateTime, Document};
    block_on(async {
        let (db, zone) = served("journal_age").await;
        for last in 1..=3 {
            change(&db, &[a("aged.example.net.", last)]).await;
        }
        let journal = db
            .store
            .database()
            .collection::<Document>(backend_mongo::writer::JOURNAL);
        let of_zone = doc! {"zone": zone.to_string()};
        assert_eq!(journal.count_documents(of_zone.clone()).await.unwrap(), 3);
        // Two entries made older than the limit, as if written long ago.
        let old = DateTime::now().timestamp_millis()
            - backend_mongo::writer::JOURNAL_MAX_AGE.as_millis() as i64
            - 60_000;
        let oldest_two = journal
            .find(of_zone.clone())
            .sort(doc! {"gen": 1})
            .limit(2)
            .await
            .unwrap();
        use futures::TryStreamExt;
        let ids: Vec<Document> = oldest_two.try_collect().await.unwrap();
        for d in &ids {
            let set = doc! {"$set": {"at": DateTime::from_millis(old)}};
            journal
                .update_one(doc! {"_id": d.get_str("_id").unwrap()}, set)
                .await
                .unwrap();
        }
        assert_eq!(db.store.prune_journal(&zone).await.unwrap(), 2);
        assert_eq!(journal.count_documents(of_zone).await.unwrap(), 1);
        db.drop_db().await;
    });
}
