//! Deleting a zone while servers serve it: a tombstone first, the nodes
//! after.
//!
//! ```text
//!  delete_zone(zone)
//!   [zone lock] served? (else NoSuchZone) ─► new generation, change record "all"
//!     ─► zones{_id}: ver, serial, pending_ver, resume, dnssec unset;
//!        deleted: true, last_ver, gen; old_vers += served and pending
//!        (servers polling see a deleted zone at that gen and stop serving it)
//!  [unlock] ─► keys deleted; the caller then deletes the nodes with
//!  collect_old_versions (after the grace; the CLI waits, the API does it
//!  in the background)
//!  a later write of the zone numbers its version above last_ver, and its
//!  switch unsets `deleted`
//! ```

use super::{LOCK_WAIT, OLD_VERSIONS};
use crate::lock::ZONE_LOCK;
use crate::schema::{int_field, DELETED, LAST_VER};
use crate::store::{Store, StoreError};
use crate::Name;
use mongodb::bson::{doc, Bson, DateTime};

/// What [`Store::delete_zone`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeletedZone {
    /// The generation servers see the deletion at.
    pub gen: i64,
    /// DNSSEC keys deleted.
    pub keys: usize,
}

impl Store {
    /// Deletes `zone` (see the module documentation): from the tombstone's
    /// generation on, servers answer for it no more, and its keys are gone.
    /// Its versions are listed in `old_vers`: delete their nodes with
    /// [`Store::collect_old_versions`] (after the grace).
    pub async fn delete_zone(&self, zone: &Name) -> Result<DeletedZone, StoreError> {
        let lock = self.lock(ZONE_LOCK, zone, "delete-zone", LOCK_WAIT).await?;
        let r = self.tombstone_locked(zone).await;
        let gen = lock.release_with(r).await?;
        let mut keys = 0;
        for key in self.zone_keys(zone).await? {
            self.delete_key(&key.id).await?;
            keys += 1;
        }
        Ok(DeletedZone { gen, keys })
    }

    /// Under the zone lock: the tombstone, at a new generation.
    async fn tombstone_locked(&self, zone: &Name) -> Result<i64, StoreError> {
        let id = zone.to_string();
        let current = self.zones.find_one(doc! {"_id": &id}).await?;
        let Some(ver) = current.as_ref().and_then(|d| int_field(d, "ver")) else {
            return Err(StoreError::NoSuchZone(id));
        };
        let mut versions = vec![Bson::Int64(ver)];
        if let Some(p) = current.as_ref().and_then(|d| int_field(d, "pending_ver")) {
            versions.push(Bson::Int64(p));
        }
        let last = versions
            .iter()
            .filter_map(Bson::as_i64)
            .max()
            .unwrap_or(ver);
        let gen = self.take_generation_with(zone, None, false).await?;
        self.zones
            .update_one(
                doc! {"_id": &id},
                doc! {
                    "$unset": {"ver": "", "serial": "", "pending_ver": "", "resume": "", "dnssec": ""},
                    "$set": {DELETED: true, LAST_VER: last, "updated": DateTime::now()},
                    "$max": {"gen": gen},
                    "$addToSet": {OLD_VERSIONS: {"$each": versions}},
                },
            )
            .await?;
        Ok(gen)
    }

    /// Zones deleted at a generation above `seq` (their tombstones).
    pub async fn zones_deleted_since(&self, seq: i64) -> Result<Vec<Name>, StoreError> {
        use futures::TryStreamExt;
        let mut cursor = self
            .zones
            .find(doc! {"gen": {"$gt": seq}, DELETED: true})
            .projection(doc! {"_id": 1})
            .await?;
        let mut out = Vec::new();
        while let Some(d) = cursor.try_next().await? {
            if let Ok(name) = d.get_str("_id").unwrap_or_default().parse() {
                out.push(name);
            }
        }
        Ok(out)
    }
}
