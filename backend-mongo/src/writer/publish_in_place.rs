//! Publishing a change written into the served version in place (a
//! signer's refresh, re-sign or signed edit): a new generation and SOA
//! serial for the same version, under the zone lock.
//!
//! ```text
//!  publish_in_place(zone, ver, serial, changed, images)
//!    ─► [zone lock] still serving ver? ── no ─► Conflict (nothing published)
//!        │ yes
//!        ├─► take_generation_with(changed, signed): change record, gen
//!        ├─► zones { serial, updated, serial_gen (unless a merge is live), $max gen }
//!        └─► images? ─► journal_in_place (IXFR; a failure only warns)
//! ```

use super::{merge_live, NodeImages, LOCK_WAIT, SERIAL_GEN};
use crate::lock::ZONE_LOCK;
use crate::schema::int_field;
use crate::store::{Store, StoreError};
use crate::Name;
use mongodb::bson::{doc, DateTime};

impl Store {
    /// Tells servers that version `ver` of `zone`, served, changed in
    /// place: records the new SOA serial and a new generation, after
    /// storing a signed change record of that generation listing `changed`
    /// (the owner names whose documents the signer wrote; `None` or more
    /// than [`crate::schema::MAX_CHANGED_NAMES`]: "all"). Servers then drop only
    /// those names; `resign --follow` knows there is nothing to re-sign for
    /// them. Under the zone lock; fails with [`StoreError::Conflict`] when
    /// another writer switched the zone away from `ver` meanwhile (what was
    /// written went into a version no longer served).
    ///
    /// With `images` (the before-images of every node written), the change
    /// is journaled for IXFR.
    pub async fn publish_in_place(
        &self,
        zone: &Name,
        ver: i64,
        serial: u32,
        changed: Option<&[Name]>,
        images: Option<&NodeImages>,
    ) -> Result<i64, StoreError> {
        let lock = self.lock(ZONE_LOCK, zone, "publish", LOCK_WAIT).await?;
        let r = self
            .publish_in_place_locked(zone, ver, serial, changed, images)
            .await;
        lock.release_with(r).await
    }

    async fn publish_in_place_locked(
        &self,
        zone: &Name,
        ver: i64,
        serial: u32,
        changed: Option<&[Name]>,
        images: Option<&NodeImages>,
    ) -> Result<i64, StoreError> {
        let current = self.zones.find_one(doc! {"_id": zone.to_string()}).await?;
        let served = current.as_ref().and_then(|d| int_field(d, "ver"));
        if served != Some(ver) {
            return Err(StoreError::Conflict(format!(
                "zone {zone}: another writer switched it away from version {ver} while it was being signed; nothing was published"
            )));
        }
        let gen = self.take_generation_with(zone, changed, true).await?;
        let mut set = doc! {"serial": i64::from(serial), "updated": DateTime::now()};
        if !merge_live(current.as_ref()) {
            // The content at this serial is the content at this generation.
            set.insert(SERIAL_GEN, gen);
        }
        self.zones
            .update_one(
                doc! {"_id": zone.to_string()},
                doc! {"$set": set, "$max": {"gen": gen}},
            )
            .await?;
        if let Some(images) = images {
            if let Err(e) = self.journal_in_place(images, current.as_ref(), gen).await {
                // The change is in; a secondary behind it gets the whole zone.
                tracing::warn!(%zone, error = %e, "the signed change could not be journaled");
            }
        }
        Ok(gen)
    }
}
