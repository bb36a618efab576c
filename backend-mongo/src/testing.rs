//! The test database, for the workspace's integration tests.
//!
//! ```text
//!  database_uri() ─► $MONGODB_URI, or `scripts/dev-mongo start` (once per
//!                    test binary) ─► the URI it prints
//! ```
//!
//! Every crate's storage tests run against a real MongoDB-protocol database
//! (FerretDB on the development machines, `docs/dev-database.md`); this is
//! the one place that finds or starts it.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// The workspace's root directory (where `scripts/` is).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("backend-mongo lives inside the workspace")
        .to_path_buf()
}

/// URI of the test database: `MONGODB_URI`, or the development database,
/// started by `scripts/dev-mongo start` if it is not running. Panics with a
/// clear message when neither works (a storage test cannot run without it).
pub fn database_uri() -> String {
    static URI: OnceLock<String> = OnceLock::new();
    URI.get_or_init(|| {
        if let Ok(uri) = std::env::var("MONGODB_URI") {
            return uri;
        }
        let out = Command::new(repo_root().join("scripts/dev-mongo"))
            .arg("start")
            .stderr(Stdio::inherit())
            .output()
            .expect("cannot run scripts/dev-mongo start");
        assert!(out.status.success(), "scripts/dev-mongo start failed");
        String::from_utf8(out.stdout)
            .expect("dev-mongo prints a URI")
            .trim()
            .to_string()
    })
    .clone()
}

/// Deletes the nodes `names` of the served version of `zone` the way a
/// program writing to MongoDB directly would (`docs/schema.md`): the
/// documents, then one change record listing them (not signed), then the
/// zone's generation. Returns how many nodes there were.
pub async fn delete_nodes_as_foreign_writer(
    store: &crate::Store,
    zone: &crate::Name,
    names: &[crate::Name],
) -> Result<u64, crate::StoreError> {
    use mongodb::bson::{doc, Document};
    let Some(served) = store.find_zone(zone).await? else {
        return Ok(0);
    };
    let db = store.database();
    let nodes = db.collection::<Document>(crate::schema::NODES);
    let mut deleted = 0;
    for name in names {
        let id = crate::schema::node_id(zone, served.ver, name);
        deleted += nodes.delete_one(doc! {"_id": id}).await?.deleted_count;
    }
    let gen = store.next_seq().await?;
    let record = crate::schema::change_doc(gen, zone, Some(names), false);
    db.collection::<Document>(crate::schema::CHANGES)
        .insert_one(record)
        .await?;
    db.collection::<Document>(crate::schema::ZONES)
        .update_one(doc! {"_id": zone.to_string()}, doc! {"$max": {"gen": gen}})
        .await?;
    Ok(deleted)
}

/// Merges `nodes` into the served version of `zone` the way a program that
/// follows `docs/schema.md` but knows nothing of DNSSEC would (a
/// [`crate::WriteMode::Merge`] writer: records added, serial and generation
/// moved, a change record listing the names, not signed). Returns the
/// zone as now served.
pub async fn merge_as_foreign_writer(
    store: &crate::Store,
    zone: &crate::Name,
    nodes: &[crate::NodeWrite],
) -> Result<crate::ZoneInfo, crate::StoreError> {
    let writer = store
        .begin_zone_write(zone, crate::WriteMode::Merge)
        .await?;
    writer.write_nodes(nodes).await?;
    writer.finish(std::time::Duration::ZERO).await
}

/// A wire-format name of exactly `total` octets, longer than a `Name` allows
/// (moved to the `dns` crate; re-exported for the tests that use it here).
pub use dns::name::long_wire_name;
