//! The signing lease between signers: one holder at a time, a dead
//! holder's lease taken over.
//!
//! ```text
//!  signer A holds the lease ─► signer B fails, naming A
//!  A dies (lease unrenewed) ─► B takes it over ─► the zone is signed
//! ```

use super::*;

/// The signing lease is enforced: while one signer holds it, another fails
/// with a message naming the holder; a holder that died (its lease expired
/// unrenewed, as after SIGKILL) is taken over, and the zone is signed.
#[test]
fn the_signing_lease_is_enforced_and_a_dead_holders_is_taken_over() {
    let rt = runtime();
    rt.block_on(async {
        let db = TestZoneDb::new("mw_lease").await;
        db.import(ZONE, &zone_text(10, true, &labels("n", 20)), true)
            .await;
        let locks = db
            .store
            .database()
            .collection::<backend_mongo::bson::Document>(backend_mongo::lock::LOCKS);
        let id = format!("sign {ZONE}");
        let at = |ms: i64| {
            backend_mongo::bson::DateTime::from_millis(
                backend_mongo::bson::DateTime::now().timestamp_millis() + ms,
            )
        };
        // A live holder: a second signer fails, naming it.
        locks
            .insert_one(backend_mongo::bson::doc! {"_id": &id, "zone": ZONE,
            "owner": "elsewhere:1:secure-zone:x", "until": at(60_000)})
            .await
            .unwrap();
        let err = signer::lease::take(&db.store, &zone(), "test", Duration::from_millis(300))
            .await
            .err()
            .expect("a second signer must not get the lease");
        let text = err.to_string();
        assert!(
            text.contains("elsewhere:1:secure-zone:x"),
            "the error names the holder: {text}"
        );
        // The holder dies: its lease expires, unrenewed.
        locks
            .update_one(
                backend_mongo::bson::doc! {"_id": &id},
                backend_mongo::bson::doc! {"$set": {"until": at(-1000)}},
            )
            .await
            .unwrap();
        signer::secure_zone(&db.store, &zone(), &secure_options(), &signer::NoProgress)
            .await
            .expect("secure-zone takes a dead holder's lease over");
        assert!(db.store.dnssec_config(&zone()).await.unwrap().secured);
        assert!(
            locks
                .find_one(backend_mongo::bson::doc! {"_id": &id})
                .await
                .unwrap()
                .is_none(),
            "the lease is released at the end"
        );
        db.drop_db().await;
    });
}
