//! Old versions: a replaced version is never served and cleanup deletes
//! it; a version a killed run left pending is collected by the next; a
//! writer whose version was taken over never switches to it.
//!
//! ```text
//!  secure-zone ─► new version ─► switch ─► old version left ─► cleanup
//!  killed run ─► pending version ─► next run collects it
//! ```

use super::*;

/// Node documents of version `ver` of example.net.
fn version_docs(db: &Db, ver: i64) -> u64 {
    runtime().block_on(async {
        db.store
            .database()
            .collection::<mongodb::bson::Document>("nodes")
            .count_documents(mongodb::bson::doc! {"zone": "example.net.", "ver": ver})
            .await
            .unwrap()
    })
}

/// The zone document of example.net.
fn zone_doc(db: &Db) -> mongodb::bson::Document {
    runtime().block_on(async {
        db.store
            .database()
            .collection::<mongodb::bson::Document>("zones")
            .find_one(mongodb::bson::doc! {"_id": "example.net."})
            .await
            .unwrap()
            .unwrap()
    })
}

fn old_vers(db: &Db) -> Vec<i64> {
    zone_doc(db)
        .get_array("old_vers")
        .map(|a| a.iter().filter_map(|v| v.as_i64()).collect())
        .unwrap_or_default()
}

/// The signer's last progress report for example.net.
fn sign_job(db: &Db) -> (backend_mongo::JobProgress, Option<String>) {
    runtime().block_on(async {
        let jobs = db.store.list_progress().await.unwrap();
        let job = jobs
            .into_iter()
            .find(|j| j.id == "sign:example.net.")
            .expect("the signer reported its progress");
        let phase = db.store.progress_phase(&job.id).await.unwrap();
        (job, phase)
    })
}

#[test]
fn the_replaced_version_is_never_served_and_cleanup_deletes_it() {
    let db = Db::new("signcli_cleanup");
    let v1 = runtime()
        .block_on(db.store.find_zone(&"example.net.".parse().unwrap()))
        .unwrap()
        .unwrap()
        .ver;
    let o = db.sign(&["secure-zone", "example.net", "--grace", "0", "--no-cleanup"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("published after"), "{}", stderr(&o));
    // Switched: the signed version is served, the old one only listed.
    let served = runtime()
        .block_on(db.store.find_zone(&"example.net.".parse().unwrap()))
        .unwrap()
        .unwrap();
    assert!(served.ver > v1);
    assert_eq!(old_vers(&db), vec![v1]);
    assert_eq!(version_docs(&db, v1), 2, "left for cleanup");
    let export = db.ok(&["export-zone", "example.net"]);
    assert_eq!(count(&export, "\tDNSKEY\t"), 2, "{export}");
    assert_eq!(count(&export, "\tSOA\t"), 1, "one version, never a mix");
    let (job, phase) = sign_job(&db);
    assert_eq!((job.kind.as_str(), job.state.as_str()), ("sign", "done"));
    assert_eq!(phase.as_deref(), Some("switching"));

    let o = db.sign(&["cleanup", "example.net", "--grace", "0"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("old version(s) [{v1}] deleted, 2 documents")),
        "{}",
        stderr(&o)
    );
    assert_eq!(version_docs(&db, v1), 0);
    assert!(old_vers(&db).is_empty());
    assert_eq!(
        version_docs(&db, served.ver),
        2,
        "the served version is kept"
    );
    let o = db.sign(&["cleanup", "example.net"]);
    assert!(stderr(&o).contains("no old versions"), "{}", stderr(&o));

    // By default secure-zone deletes what it replaced; its progress ends
    // in the cleanup step with every document counted.
    db.ok(&["secure-zone", "example.net", "--grace", "0"]);
    assert_eq!(version_docs(&db, served.ver), 0);
    assert!(old_vers(&db).is_empty());
    let (job, phase) = sign_job(&db);
    assert_eq!(job.state, "done");
    assert_eq!(phase.as_deref(), Some("cleanup"));
    assert_eq!((job.done, job.total), (2, 2), "{job:?}");
    db.drop_db();
}

#[test]
fn a_version_left_pending_by_a_killed_run_is_collected_by_the_next() {
    let db = Db::new("signcli_pending");
    let zone: Name = "example.net.".parse().unwrap();
    // A writer killed midway: a pending version with one node.
    let pending = runtime().block_on(async {
        let writer = db
            .store
            .begin_zone_write(&zone, WriteMode::Replace)
            .await
            .unwrap();
        writer
            .write_nodes(&[NodeWrite {
                name: "half.example.net.".parse().unwrap(),
                rrsets: vec![RRset {
                    rtype: RType::A,
                    ttl: 60,
                    rdata: vec![Box::new([192, 0, 2, 9])],
                }],
            }])
            .await
            .unwrap();
        writer.ver()
    });
    assert_eq!(version_docs(&db, pending), 1);
    // The next run writes above it, never serves it, and deletes it.
    db.ok(&["secure-zone", "example.net", "--grace", "0"]);
    let served = runtime()
        .block_on(db.store.find_zone(&zone))
        .unwrap()
        .unwrap();
    assert!(served.ver > pending);
    assert_eq!(version_docs(&db, pending), 0);
    assert!(old_vers(&db).is_empty());
    assert!(!zone_doc(&db).contains_key("pending_ver"));
    let export = db.ok(&["export-zone", "example.net"]);
    assert!(!export.contains("half.example.net."), "{export}");
    verify(&export, "example.net", false);
    db.drop_db();
}

#[test]
fn a_writer_whose_version_was_taken_over_never_switches_to_it() {
    let db = Db::new("signcli_takeover");
    let zone: Name = "example.net.".parse().unwrap();
    let node = |rdata: [u8; 4]| NodeWrite {
        name: "ns1.example.net.".parse().unwrap(),
        rrsets: vec![RRset {
            rtype: RType::A,
            ttl: 60,
            rdata: vec![Box::new(rdata)],
        }],
    };
    let a_ver = runtime().block_on(async {
        let apex = db
            .store
            .read_full_node(&zone, 1, &zone)
            .await
            .unwrap()
            .unwrap();
        let apex = NodeWrite {
            name: zone.clone(),
            rrsets: apex.rrsets.iter().map(|s| s.rrset.clone()).collect(),
        };
        // A starts; B (thinking A was killed) takes over and lists A's
        // version as old; A must then fail to switch, B succeeds.
        let a = db
            .store
            .begin_zone_write(&zone, WriteMode::Replace)
            .await
            .unwrap();
        a.write_nodes(&[apex.clone(), node([192, 0, 2, 10])])
            .await
            .unwrap();
        let b = db
            .store
            .begin_zone_write(&zone, WriteMode::Replace)
            .await
            .unwrap();
        assert!(b.ver() > a.ver());
        b.write_nodes(&[apex, node([192, 0, 2, 20])]).await.unwrap();
        // What a signed replace asks when signing its version failed: A's
        // was taken over (and will be deleted), B's is still pending.
        let err = a.ensure_still_pending().await.unwrap_err();
        assert!(
            err.to_string().contains("another writer took over"),
            "{err}"
        );
        b.ensure_still_pending().await.unwrap();
        let a_ver = a.ver();
        let err = a.finish(Duration::ZERO).await.unwrap_err();
        assert!(
            err.to_string().contains("another writer took over"),
            "{err}"
        );
        let served = b.finish(Duration::ZERO).await.unwrap();
        let ns1 = db
            .store
            .get_node(&served, &"ns1.example.net.".parse().unwrap())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(&*ns1.rrsets[0].rdata[0], &[192, 0, 2, 20]);
        a_ver
    });
    assert_eq!(version_docs(&db, a_ver), 0, "A's version was collected");
    db.drop_db();
}
