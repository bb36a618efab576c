//! The `meta` collection: the global change counter and the resume
//! counters of multi-zone imports; the change record of each generation.
//!
//! ```text
//!  next_seq()  ─► findAndModify {_id: "seq"} $inc ─► new generation
//!  take_generation_with(zone, names) ─► next_seq ─► insert changes {_id: gen}
//!     (duplicate: another process got the same seq ─► next_seq again)
//!  import_checkpoint / set_import_checkpoint ─► {_id: "import <key>", done}
//! ```

use crate::schema::{self, SEQ_ID};
use crate::store::{Store, StoreError};
use crate::Name;
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

    /// Takes a new generation and stores its change record for `zone`
    /// (`names`: what changed; `None`: "all"). The record's unique `_id`
    /// makes the generation this writer's own: FerretDB does not isolate
    /// `meta.seq` across processes, and a generation whose record another
    /// zone holds would let a signer catching up take these names as
    /// listed. A record that cannot be stored for another reason is left
    /// out (servers then drop the whole zone, signers start over: slower,
    /// never wrong).
    pub async fn take_generation_with(
        &self,
        zone: &Name,
        names: Option<&[Name]>,
        signed: bool,
    ) -> Result<i64, StoreError> {
        for _ in 0..8 {
            let gen = self.next_seq().await?;
            let record = schema::change_doc(gen, zone, names, signed);
            match self.changes.insert_one(record).await {
                Ok(_) => return Ok(gen),
                Err(e) if crate::lock::is_duplicate(&e) => continue,
                Err(e) => {
                    tracing::debug!(error = %e, "change record not stored");
                    return Ok(gen);
                }
            }
        }
        Err(StoreError::Conflict(format!(
            "zone {zone}: no free generation for a change record after 8 tries"
        )))
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
