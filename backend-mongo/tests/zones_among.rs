//! `Store::served_zones_among` (and `served_zones_in`, its one `find`)
//! against the real test database: of the candidate apexes of a deep name,
//! or of a short one, exactly the served zones come back
//! (not a deleted zone's tombstone, not a zone document still being
//! created), all of them even when the candidates outnumber a default
//! first batch (101 documents).
//!
//! ```text
//!  zones: example.net. (served), b.example.net. (deleted),
//!         c.b.example.net. (no ver: being created),
//!         x.x.x.c.b.example.net. (served)
//!  candidates: the 118 ancestors of a name 117 labels deep
//!  ─► {example.net., x.x.x.c.b.example.net.}
//! ```

use backend_mongo::testing::{block_on, example_net, TestDb};
use backend_mongo::{Name, NodeWrite, ZoneInfo};
use mongodb::bson::{doc, Document};

fn n(s: &str) -> Name {
    s.parse().unwrap()
}

/// The apex node of `example_net()` moved to `apex`: a zone of its own.
fn zone_at(apex: &Name) -> Vec<NodeWrite> {
    let (_, mut nodes) = example_net();
    nodes.truncate(1);
    nodes[0].name = apex.clone();
    nodes
}

fn apexes_of(zones: &[ZoneInfo]) -> Vec<String> {
    let mut apexes: Vec<String> = zones.iter().map(|z| z.apex.to_string()).collect();
    apexes.sort();
    apexes
}

#[test]
fn only_served_zones_among_the_candidates_come_back() {
    block_on(async {
        let db = TestDb::new("zones_among").await;
        let (parent, nodes) = example_net();
        db.write_zone(&parent, &nodes).await;
        let deleted = n("b.example.net.");
        db.write_zone(&deleted, &zone_at(&deleted)).await;
        db.store.delete_zone(&deleted).await.unwrap();
        let creating = doc! {"_id": "c.b.example.net.", "gen": 0_i64};
        let zones = db.store.database().collection::<Document>("zones");
        zones.insert_one(creating).await.unwrap();
        let deep = n("x.x.x.c.b.example.net.");
        db.write_zone(&deep, &zone_at(&deep)).await;

        let name = format!("{}x.x.x.c.b.example.net.", "q.".repeat(110));
        let candidates: Vec<Name> = n(&name).ancestors().collect();
        assert!(candidates.len() > 101, "{} candidates", candidates.len());
        let served = db.store.find_zone(&deep).await.unwrap().unwrap();
        // The deep name (one find), and the deep zone's own candidates
        // (on FerretDB, few enough to be point reads): both ways agree.
        let few: Vec<Name> = deep.ancestors().collect();
        assert!(few.len() <= backend_mongo::POINT_READS_MAX);
        for candidates in [&candidates, &few] {
            let among = db.store.served_zones_among(candidates).await.unwrap();
            let by_in = db.store.served_zones_in(candidates).await.unwrap();
            assert_eq!(
                apexes_of(&among),
                ["example.net.", "x.x.x.c.b.example.net."]
            );
            assert_eq!(apexes_of(&by_in), apexes_of(&among));
            assert!(among.contains(&served), "the zone as find_zone reads it");
        }
        assert!(db.store.served_zones_among(&[]).await.unwrap().is_empty());
        assert!(db.store.served_zones_in(&[]).await.unwrap().is_empty());
        db.drop_db().await;
    });
}
