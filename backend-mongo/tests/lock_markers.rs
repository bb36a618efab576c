//! Takeover markers (`backend-mongo/src/lock.rs`) do not pile up: each
//! takeover of an abandoned lock leaves one, and the winner of a takeover
//! deletes those older than an hour.
//!
//! ```text
//!  locks: a marker 2 h old, one 10 min old, the zone lock of a dead
//!  holder (expired) ─► try_lock takes it over ─► the 2-h marker gone, the
//!  10-min one and the new one kept
//! ```

use backend_mongo::lock::{LOCKS, ZONE_LOCK};
use backend_mongo::testing::{block_on, database_uri, TestDb};
use backend_mongo::Name;
use futures::TryStreamExt;
use mongodb::bson::{doc, DateTime, Document};

/// `now` moved by `minutes` (negative: the past).
fn minutes_from_now(minutes: i64) -> DateTime {
    DateTime::from_millis(DateTime::now().timestamp_millis() + minutes * 60_000)
}

#[test]
fn a_takeover_prunes_markers_older_than_an_hour() {
    block_on(async {
        let db = TestDb::new("lock_markers").await;
        let client = mongodb::Client::with_uri_str(database_uri()).await.unwrap();
        let locks = client.database(&db.name).collection::<Document>(LOCKS);
        let zone: Name = "markers.test.".parse().unwrap();
        let old = "takeover zone markers.test. dead-1 1";
        let young = "takeover zone markers.test. dead-2 2";
        locks
            .insert_many([
                doc! {"_id": old, "zone": "markers.test.", "at": minutes_from_now(-120)},
                doc! {"_id": young, "zone": "markers.test.", "at": minutes_from_now(-10)},
                doc! {"_id": "zone markers.test.", "zone": "markers.test.", "owner": "dead-3",
                "until": minutes_from_now(-1), "taken": minutes_from_now(-2)},
            ])
            .await
            .unwrap();
        let held = db.store.try_lock(ZONE_LOCK, &zone, "test").await.unwrap();
        let held = held.unwrap_or_else(|h| panic!("the dead holder's lock is taken over: {h:?}"));
        let markers: Vec<String> = locks
            .find(doc! {"_id": {"$regex": "^takeover "}})
            .await
            .unwrap()
            .try_collect::<Vec<Document>>()
            .await
            .unwrap()
            .iter()
            .map(|d| d.get_str("_id").unwrap().to_string())
            .collect();
        println!("markers after the takeover: {markers:?}");
        assert!(
            !markers.iter().any(|m| m == old),
            "the 2-h marker is pruned"
        );
        assert!(
            markers.iter().any(|m| m == young),
            "a recent marker is kept"
        );
        assert!(
            markers.iter().any(|m| m.contains("dead-3")),
            "this takeover's marker is kept"
        );
        held.release().await.unwrap();
        db.drop_db().await;
    });
}
