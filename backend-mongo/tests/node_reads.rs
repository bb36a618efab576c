//! `Store::read_full_nodes_by_id`'s two ways against the real test
//! database: point reads (FerretDB's) and `$in` finds (MongoDB's) give the
//! same nodes, in the asked order, `None` for an `_id` with no node, across
//! more ids than one find takes.
//!
//! ```text
//!  example.net. (apex, ns1) served ─► ids: 600 absent names, ns1, the apex,
//!  one absent, ns1 again ─► both ways: None × 600, Some(ns1), Some(apex),
//!  None, Some(ns1)
//! ```

use backend_mongo::dnssec_store::IDS_PER_FIND;
use backend_mongo::schema::node_id;
use backend_mongo::testing::{block_on, example_net, TestDb};
use backend_mongo::Name;

fn n(s: &str) -> Name {
    s.parse().unwrap()
}

#[test]
fn point_reads_and_in_finds_give_the_same_nodes_in_order() {
    block_on(async {
        let db = TestDb::new("node_reads").await;
        let (zone, nodes) = example_net();
        db.write_zone(&zone, &nodes).await;
        let ver = db.store.find_zone(&zone).await.unwrap().unwrap().ver;
        let id = |name: &str| node_id(&zone, ver, &n(name));
        let mut ids: Vec<String> = (0..IDS_PER_FIND + 100)
            .map(|i| id(&format!("absent{i}.example.net.")))
            .collect();
        let asked = [
            "ns1.example.net.",
            "example.net.",
            "nope.example.net.",
            "ns1.example.net.",
        ];
        ids.extend(asked.iter().map(|name| id(name)));

        let by_points = db.store.point_read_nodes(&ids).await.unwrap();
        let by_in = db.store.find_nodes_in(&ids).await.unwrap();
        assert_eq!(by_points, by_in);
        assert_eq!(by_in.len(), ids.len());
        assert!(by_in[..IDS_PER_FIND + 100].iter().all(Option::is_none));
        let names: Vec<Option<String>> = by_in[IDS_PER_FIND + 100..]
            .iter()
            .map(|node| node.as_ref().map(|f| f.name.to_string()))
            .collect();
        let want = [
            Some("ns1.example.net."),
            Some("example.net."),
            None,
            Some("ns1.example.net."),
        ];
        assert_eq!(names, want.map(|w| w.map(str::to_string)));
        db.drop_db().await;
    });
}
