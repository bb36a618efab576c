//! The raw bulk-insert rate, for comparison: `mongodns-import --baseline`.
//!
//! ```text
//!  BaselineWriter::new ─► scratch collection, same indexes as nodes
//!  insert(batch)       ─► one unordered insert ─► drop_collection()
//! ```

use super::bulk::{command_errors, write_failure};
use super::NodeWrite;
use crate::schema;
use crate::store::{Store, StoreError};
use crate::Name;
use mongodb::bson::{doc, Document};

/// Inserts node documents into a scratch collection with the same indexes
/// as `nodes`, and nothing else: the raw bulk-insert rate that
/// `mongodns-import --baseline` measures.
pub struct BaselineWriter {
    coll: mongodb::Collection<Document>,
    zone: Name,
}

/// Name of the scratch collection used by [`BaselineWriter`].
pub const BASELINE_COLLECTION: &str = "baseline_nodes";

impl BaselineWriter {
    /// Creates (empty) the scratch collection and its indexes.
    pub async fn new(store: &Store, zone: &Name) -> Result<BaselineWriter, StoreError> {
        let coll = store.database().collection::<Document>(BASELINE_COLLECTION);
        coll.drop().await?;
        let by_zone = mongodb::IndexModel::builder()
            .keys(doc! {"zone": 1, "ver": 1, "ck": 1})
            .options(
                mongodb::options::IndexOptions::builder()
                    .name("zone_ver_ck".to_string())
                    .build(),
            )
            .build();
        coll.create_index(by_zone).await?;
        Ok(BaselineWriter {
            coll,
            zone: zone.clone(),
        })
    }

    /// One unordered bulk insert of `batch` (as version 1 of the zone).
    pub async fn insert(&self, batch: &[NodeWrite]) -> Result<u64, StoreError> {
        if batch.is_empty() {
            return Ok(0);
        }
        let docs: Vec<Document> = batch
            .iter()
            .map(|n| schema::node_doc(&self.zone, 1, &n.name, &n.rrsets))
            .collect();
        let db = self.coll.namespace().db;
        let reply = self
            .coll
            .client()
            .database(&db)
            .run_command(doc! {"insert": BASELINE_COLLECTION, "documents": docs, "ordered": false})
            .await?;
        let errors = command_errors(&reply);
        if !errors.is_empty() {
            return Err(write_failure("insert", &errors));
        }
        Ok(batch.len() as u64)
    }

    /// Drops the scratch collection.
    pub async fn drop_collection(self) -> Result<(), StoreError> {
        self.coll.drop().await?;
        Ok(())
    }
}
