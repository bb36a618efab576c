//! The importer against a real database: validation before writing,
//! idempotent re-runs, --replace, serials and generations.

use dns::{Name, RType, ZoneInfo};
use loadtools::import::ImportError;
use mongodb::bson::{doc, Document};
use mongodns_testkit::*;

const BASE: &str = "$ORIGIN imp.test.\n$TTL 300\n@ IN SOA ns admin 10 1 1 1 60\n@ IN NS ns\nns IN A 192.0.2.1\nwww IN A 192.0.2.2\n";

/// `imp.test.` as served, if it is.
async fn served(db: &TestZoneDb) -> Option<ZoneInfo> {
    db.store
        .find_zone(&"imp.test.".parse().unwrap())
        .await
        .unwrap()
}

/// Every node document of the database, of any version.
async fn node_documents(db: &TestZoneDb) -> u64 {
    let nodes = db.store.database().collection::<Document>("nodes");
    nodes.count_documents(doc! {}).await.unwrap()
}

async fn node_a(db: &TestZoneDb, name: &str) -> Option<Vec<Vec<u8>>> {
    let zone = served(db).await?;
    let node = db
        .store
        .get_node(&zone, &name.parse::<Name>().unwrap())
        .await
        .unwrap()?;
    node.rrset(RType::A)
        .map(|r| r.rdata.iter().map(|b| b.to_vec()).collect())
}

/// True when `imp.test.` does not exist: nothing was written.
async fn nothing_stored(db: &TestZoneDb) -> bool {
    served(db).await.is_none()
}

#[test]
fn bad_input_names_file_and_line_and_writes_nothing() {
    block_on(async {
        let db = TestZoneDb::new("badinput").await;
        let bad = format!("{BASE}mail IN A 192.0.2.3\noops IN A 300.1.2.3\n");
        let err = db.try_import("imp.test.", &bad, false).await.unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, ImportError::Parse(_)), "{text}");
        assert!(text.contains(":8:"), "error names line 8: {text}");
        // Nothing at all was written: the zone does not exist.
        assert!(nothing_stored(&db).await);

        let outside = format!("{BASE}www.other.test. IN A 192.0.2.9\n");
        let err = db
            .try_import("imp.test.", &outside, false)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("outside the zone"), "{err}");
        let no_soa = "$ORIGIN imp.test.\nwww 300 IN A 192.0.2.2\n";
        let err = db.try_import("imp.test.", no_soa, false).await.unwrap_err();
        assert!(err.to_string().contains("no SOA"), "{err}");
        let cname = format!("{BASE}www IN CNAME ns\n");
        let err = db.try_import("imp.test.", &cname, false).await.unwrap_err();
        assert!(err.to_string().contains("CNAME and other data"), "{err}");
        assert!(nothing_stored(&db).await);
        db.drop_db().await;
    });
}

#[test]
fn reimport_is_idempotent_and_replace_is_exact() {
    block_on(async {
        let db = TestZoneDb::new("idem").await;
        let first = db.import("imp.test.", BASE, false).await;
        assert_eq!(first.zone.serial, 10);
        assert_eq!(first.records, 4);
        let gen1 = first.zone.gen;
        // Same file again: same content, serial and generation move forward.
        let again = db.import("imp.test.", BASE, false).await;
        assert_eq!(
            node_a(&db, "www.imp.test.").await.unwrap(),
            vec![vec![192, 0, 2, 2]]
        );
        assert!(again.zone.gen > gen1);
        assert_eq!(again.zone.serial, 11);
        // Merge adds records and names.
        db.import(
            "imp.test.",
            "$ORIGIN imp.test.\nwww 300 IN A 192.0.2.3\nnew 300 IN A 192.0.2.4\n",
            false,
        )
        .await;
        assert_eq!(node_a(&db, "www.imp.test.").await.unwrap().len(), 2);
        assert!(node_a(&db, "new.imp.test.").await.is_some());
        // --replace: exactly the file; names not in it are gone.
        let replaced = db
            .import("imp.test.", &BASE.replace("192.0.2.2", "192.0.2.7"), true)
            .await;
        assert!(replaced.zone.ver > first.zone.ver);
        assert_eq!(
            node_a(&db, "www.imp.test.").await.unwrap(),
            vec![vec![192, 0, 2, 7]]
        );
        assert!(node_a(&db, "new.imp.test.").await.is_none());
        // The serial in the file (10) is not newer: it was bumped past the last one.
        assert_eq!(replaced.zone.serial, 13);
        // The old version's documents are deleted.
        let zone = served(&db).await.unwrap();
        let all = db.store.zone_nodes(&zone).await.unwrap();
        let names: Vec<String> = all.iter().map(|n| n.name.to_string()).collect();
        assert_eq!(names, vec!["imp.test.", "ns.imp.test.", "www.imp.test."]);
        let count = node_documents(&db).await;
        assert_eq!(count, 3, "old versions are removed after the switch");
        db.drop_db().await;
    });
}

#[test]
fn records_of_one_name_spread_over_the_file_are_merged() {
    block_on(async {
        let db = TestZoneDb::new("spread").await;
        // The batch size in tests is 7 nodes, so these land in different batches.
        let mut text = String::from(BASE);
        for i in 0..20 {
            text.push_str(&format!("h{i} IN A 192.0.2.{i}\n"));
            text.push_str(&format!("spread IN A 198.51.100.{i}\n"));
            text.push_str(&format!("x.y{i}.deep IN A 203.0.113.{i}\n"));
        }
        let summary = db.import("imp.test.", &text, false).await;
        assert_eq!(summary.records, 64);
        assert_eq!(node_a(&db, "spread.imp.test.").await.unwrap().len(), 20);
        // Empty non-terminals exist as nodes without data.
        let zone = served(&db).await.unwrap();
        for ent in ["deep.imp.test.", "y3.deep.imp.test."] {
            let node = db
                .store
                .get_node(&zone, &ent.parse().unwrap())
                .await
                .unwrap();
            assert!(node.expect(ent).is_empty_non_terminal(), "{ent}");
        }
        db.drop_db().await;
    });
}

#[test]
fn replacing_a_zone_larger_than_sqlites_variable_limit_removes_the_old_version() {
    block_on(async {
        let db = TestZoneDb::new("bigreplace").await;
        // More nodes than SQLite's 32,766 variables: FerretDB cannot delete
        // them with one deleteMany({zone, ver}).
        let mut text = String::from(BASE);
        for i in 0..33_000 {
            text.push_str(&format!(
                "n{i} IN A 10.{}.{}.{}\n",
                i >> 16,
                (i >> 8) & 255,
                i & 255
            ));
        }
        let first = db.import("imp.test.", &text, false).await;
        assert_eq!(first.records, 33_004);
        let replaced = db.import("imp.test.", BASE, true).await;
        assert!(replaced.zone.ver > first.zone.ver);
        let count = node_documents(&db).await;
        assert_eq!(count, 3, "only the new version's nodes remain");
        db.drop_db().await;
    });
}

/// `count` A records at `big.imp.test.`, one a line.
fn big_rrset(count: usize) -> String {
    (0..count)
        .map(|i| format!("big IN A 10.{}.{}.{}\n", i >> 16, (i >> 8) & 255, i & 255))
        .collect()
}

#[test]
fn an_rrset_no_message_could_hold_is_refused_with_its_line() {
    block_on(async {
        let db = TestZoneDb::new("rrset_cap").await;
        // 4,080 A records take 65,280 octets in a message: over the cap of
        // 65,264 (65,535 less a header and the longest question).
        let over = format!("{BASE}{}", big_rrset(4080));
        let err = db.try_import("imp.test.", &over, false).await.unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains(":4086:"),
            "the line of the 4,080th record: {text}"
        );
        assert!(text.contains("65264"), "{text}");
        assert!(nothing_stored(&db).await);
        // One record fewer fits, and is stored whole.
        let at_cap = format!("{BASE}{}", big_rrset(4079));
        db.import("imp.test.", &at_cap, false).await;
        assert_eq!(node_a(&db, "big.imp.test.").await.unwrap().len(), 4079);
        db.drop_db().await;
    });
}

/// A signed zone file: the records the signer maintains, an NSEC3 owner
/// holding nothing else among them.
const SIGNED_FILE: &str = "\
@ IN DNSKEY 257 3 13 mdsswUyr3DPW132mOi8V9xESWE8jTo0dxCjjnopKl+GqJxpVXckHAeF+KkxLbxILfDLUT0rAK9iUzy1L53eKGQ==
@ IN NSEC3PARAM 1 0 0 -
@ IN CDS 0 0 0 00
www IN RRSIG A 13 3 300 20270101000000 20260101000000 12345 imp.test. mdsswUyr3DPW132mOi8V9xESWE8jTo0dxCjjnopKl+GqJxpVXckHAeF+KkxLbxILfDLUT0rAK9iUzy1L53eKGQ==
www IN NSEC imp.test. A RRSIG NSEC
0p9mhaveqvm6t7vbl5lop2u3t2rp3tom IN NSEC3 1 0 0 - 2t7b4g4vsa5smi47k61mv5bv1a22bojr A RRSIG
";

#[test]
fn a_signed_zone_file_is_imported_without_the_signers_records() {
    block_on(async {
        let db = TestZoneDb::new("signed_file").await;
        let text = format!("{BASE}{SIGNED_FILE}");
        let summary = db.import("imp.test.", &text, false).await;
        assert_eq!(summary.signer_owned, 6, "counted as left out");
        let zone = summary.zone;
        let nodes = db.store.read_version(&zone.apex, zone.ver).await.unwrap();
        let names: Vec<String> = nodes.iter().map(|n| n.name.to_string()).collect();
        assert_eq!(names.len(), 3, "apex, ns, www only: {names:?}");
        for node in &nodes {
            for set in &node.rrsets {
                let t = set.rrset.rtype;
                assert!(!t.is_signer_owned(), "{} {t} stored", node.name);
            }
        }
        assert_eq!(node_a(&db, "www.imp.test.").await.unwrap().len(), 1);
        db.drop_db().await;
    });
}
