//! The `meta` collection: the global change counter and the resume
//! counters of multi-zone imports; and a description of the server.
//!
//! ```text
//!  next_seq()  ─► findAndModify {_id: "seq"} $inc ─► new generation
//!  import_checkpoint / set_import_checkpoint ─► {_id: "import <key>", done}
//! ```

use crate::schema::SEQ_ID;
use crate::store::{Store, StoreError};
use mongodb::bson::doc;
use mongodb::options::ReturnDocument;

/// One change of `meta.seq` at a time per process: FerretDB runs
/// `findAndModify` as read-modify-write without isolation, so two at once
/// can both insert the counter (E11000) or lose an increment.
pub(crate) static SEQ_GATE: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

impl Store {
    /// Increments and returns the global change counter.
    pub async fn next_seq(&self) -> Result<i64, StoreError> {
        let _one = SEQ_GATE.lock().await;
        let d = self
            .meta
            .find_one_and_update(doc! {"_id": SEQ_ID}, doc! {"$inc": {"seq": 1_i64}})
            .upsert(true)
            .return_document(ReturnDocument::After)
            .await?
            .unwrap_or_default();
        Ok(d.get("seq")
            .and_then(|v| v.as_i64().or(v.as_i32().map(i64::from)))
            .unwrap_or(1))
    }

    /// Reads a resume counter kept in `meta` under `key` (multi-zone imports).
    pub async fn import_checkpoint(&self, key: &str) -> Result<u64, StoreError> {
        let d = self
            .meta
            .find_one(doc! {"_id": format!("import {key}")})
            .await?;
        Ok(d.and_then(|d| {
            d.get("done")
                .and_then(|v| v.as_i64().or(v.as_i32().map(i64::from)))
        })
        .unwrap_or(0)
        .max(0) as u64)
    }

    /// Sets (or with `None` removes) the resume counter kept in `meta`.
    pub async fn set_import_checkpoint(
        &self,
        key: &str,
        done: Option<u64>,
    ) -> Result<(), StoreError> {
        let id = format!("import {key}");
        match done {
            Some(done) => {
                self.meta
                    .update_one(doc! {"_id": &id}, doc! {"$set": {"done": done as i64}})
                    .upsert(true)
                    .await?;
            }
            None => {
                self.meta.delete_one(doc! {"_id": &id}).await?;
            }
        }
        Ok(())
    }
}
