//! The test database, for the workspace's integration tests.
//!
//! ```text
//!  database_uri() ─► $MONGODB_URI, or `scripts/dev-mongo start` (once per
//!                    test binary) ─► the URI it prints
//!  TestDb::new(tag) ─► a fresh database (unique name, indexes, temp dir)
//!                     ─► the test ─► drop_db()
//!  block_on(f) ─► the one runtime of the test binary (clients live on it)
//!  example_net() ─► a small zone as nodes, written with TestDb::write_zone
//! ```
//!
//! Every crate's storage tests run against a real MongoDB-protocol database
//! (FerretDB on the development machines, `docs/dev-database.md`); this is
//! the one place that finds or starts it. What needs only the database
//! lives here; what needs the server binary, sockets or the importer lives
//! in `mongodns-testkit` (`server/testkit/`), which re-exports all of this.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

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

/// The test binary's one runtime (two workers). One for all: a database
/// client must live on the runtime it was made on (its monitor tasks do).
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("cannot build the test runtime")
    })
}

/// Runs `f` on [`runtime`]: tests are plain `#[test]`s, so blocking socket
/// and process helpers can be used freely between awaits.
pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    runtime().block_on(f)
}

/// A name no other test of any running test binary uses:
/// `mdt_TAG_PID_N`.
pub fn unique_name(tag: &str) -> String {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, Ordering::SeqCst);
    format!("mdt_{tag}_{}_{n}", std::process::id())
}

/// A database of its own for one test, dropped by [`TestDb::drop_db`].
pub struct TestDb {
    /// The database name.
    pub name: String,
    /// The connected store.
    pub store: crate::Store,
    /// A temporary directory of its own, for fixture files.
    pub dir: PathBuf,
}

impl TestDb {
    /// Creates an empty database with a unique name, its indexes made.
    pub async fn new(tag: &str) -> TestDb {
        let name = unique_name(tag);
        let store = crate::Store::connect(&database_uri(), &name, Duration::from_secs(10))
            .await
            .expect("test database unreachable");
        store.ensure_indexes().await.expect("indexes");
        let dir = std::env::temp_dir().join(&name);
        std::fs::create_dir_all(&dir).unwrap();
        TestDb { name, store, dir }
    }

    /// Stores `nodes` as the whole of `zone` (a replacing write).
    pub async fn write_zone(&self, zone: &crate::Name, nodes: &[crate::NodeWrite]) {
        let writer = self
            .store
            .begin_zone_write(zone, crate::WriteMode::Replace)
            .await
            .expect("begin the zone write");
        writer.write_nodes(nodes).await.expect("write the nodes");
        writer.finish(Duration::ZERO).await.expect("finish");
    }

    /// Drops the database and removes its directory.
    pub async fn drop_db(self) {
        let _ = self.store.database().drop().await;
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Drops the database `name` (one a test did not make with [`TestDb`]),
/// shutting its client down.
pub async fn drop_database(name: &str) {
    let store = crate::Store::connect(&database_uri(), name, Duration::from_secs(10))
        .await
        .expect("test database unreachable");
    let _ = store.database().drop().await;
    store.shutdown().await;
}

/// The zone `example.net.` as nodes: SOA (serial 1), NS `ns1`, and
/// `ns1` A 192.0.2.1.
pub fn example_net() -> (crate::Name, Vec<crate::NodeWrite>) {
    use crate::{NodeWrite, RRset, RType};
    let zone: crate::Name = "example.net.".parse().unwrap();
    let mut soa = b"\x03ns1\x07example\x03net\x00\x0ahostmaster\x07example\x03net\x00".to_vec();
    for v in [1u32, 7200, 900, 1209600, 300] {
        soa.extend_from_slice(&v.to_be_bytes());
    }
    let ns = b"\x03ns1\x07example\x03net\x00".to_vec();
    let set = |rtype, rdata: Vec<u8>| RRset {
        rtype,
        ttl: 3600,
        rdata: vec![rdata.into_boxed_slice()],
    };
    let nodes = vec![
        NodeWrite {
            name: zone.clone(),
            rrsets: vec![set(RType::SOA, soa), set(RType::NS, ns)],
        },
        NodeWrite {
            name: "ns1.example.net.".parse().unwrap(),
            rrsets: vec![set(RType::A, vec![192, 0, 2, 1])],
        },
    ];
    (zone, nodes)
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
    let Some((deleted, gen)) = delete_nodes_unshown(store, zone, names).await? else {
        return Ok(0);
    };
    show_generation(store, zone, gen).await?;
    Ok(deleted)
}

/// The first steps of [`delete_nodes_as_foreign_writer`]: the documents
/// deleted, a generation taken and its change record stored, but the zone
/// not moved to it yet (a writer between its two steps). Returns how many
/// nodes there were and the generation; `None` when the zone is not served.
pub async fn delete_nodes_unshown(
    store: &crate::Store,
    zone: &crate::Name,
    names: &[crate::Name],
) -> Result<Option<(u64, i64)>, crate::StoreError> {
    use mongodb::bson::{doc, Document};
    let Some(served) = store.find_zone(zone).await? else {
        return Ok(None);
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
    Ok(Some((deleted, gen)))
}

/// The last step of a write: `zone` shows generation `gen`.
pub async fn show_generation(
    store: &crate::Store,
    zone: &crate::Name,
    gen: i64,
) -> Result<(), crate::StoreError> {
    use mongodb::bson::{doc, Document};
    store
        .database()
        .collection::<Document>(crate::schema::ZONES)
        .update_one(doc! {"_id": zone.to_string()}, doc! {"$max": {"gen": gen}})
        .await?;
    Ok(())
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
