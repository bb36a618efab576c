//! Deleting old versions once nobody reads them.
//!
//! ```text
//!  collect_old_versions(zone, grace)
//!    wait until `grace` has passed since the zone's last switch
//!    for each v in old_vers:
//!      [zone lock] v served or pending? ─ yes ─► unlist only
//!                  no ─► deleting += v   (a transfer of v that ends after
//!                                         this fails instead of sending a
//!                                         partial zone)
//!      delete v's nodes (batched, restartable; no lock held)
//!      [zone lock] old_vers −= v, deleting −= v
//! ```

use super::{ZoneWriter, LOCK_WAIT};
use crate::lock::ZONE_LOCK;
use crate::schema::int_field;
use crate::store::{Store, StoreError};
use crate::Name;
use mongodb::bson::{doc, DateTime, Document};
use std::time::Duration;

/// Field of a zone document listing versions that were replaced (or left
/// pending by a killed writer) and whose nodes may still be stored. Readers
/// never look at them; [`Store::collect_old_versions`] deletes them.
pub const OLD_VERSIONS: &str = "old_vers";

/// Field of a zone document listing versions whose nodes are being
/// deleted now. A reader of a whole version (a zone transfer) that finds
/// its version listed here when it has read the last node fails instead of
/// sending what may be a partial zone.
pub const DELETING: &str = "deleting";

/// What [`Store::collect_old_versions`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Collected {
    /// Versions whose nodes are now all deleted.
    pub versions: Vec<i64>,
    /// Node documents deleted.
    pub deleted: u64,
}

/// The versions listed in a zone document's [`OLD_VERSIONS`].
pub(crate) fn old_versions(zone_doc: Option<&Document>) -> Vec<i64> {
    zone_doc
        .and_then(|d| d.get_array(OLD_VERSIONS).ok())
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_i64().or(v.as_i32().map(i64::from)))
                .collect()
        })
        .unwrap_or_default()
}

impl Store {
    /// Deletes the nodes of every old version of `zone` (those listed in its
    /// `old_vers`: replaced by a switch, or left pending by a killed
    /// writer), then unlists each. Never touches the served version or a
    /// pending one. Waits first until `grace` has passed since the zone's
    /// last switch (`updated`), so servers still reading the version just
    /// replaced finish cleanly; a transfer still reading it when deletion
    /// begins fails cleanly ([`DELETING`]). Batched and bounded as
    /// [`Store::delete_version_with`]; `progress` gets the running count.
    /// Killed midway, it leaves the version listed, and any later call (the
    /// next `finish`, `mongodns-sign secure-zone`, `cleanup`) completes it.
    /// Holds no lock while deleting: other writers go on.
    pub async fn collect_old_versions(
        &self,
        zone: &Name,
        grace: Duration,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<Collected, StoreError> {
        let id = zone.to_string();
        let Some(d) = self.zones.find_one(doc! {"_id": &id}).await? else {
            return Ok(Collected::default());
        };
        let old = old_versions(Some(&d));
        if old.is_empty() {
            return Ok(Collected::default());
        }
        if let Ok(updated) = d.get_datetime("updated") {
            let age = DateTime::now().timestamp_millis() - updated.timestamp_millis();
            let wait = (grace.as_millis() as i64 - age.max(0)).max(0);
            tokio::time::sleep(Duration::from_millis(wait as u64)).await;
        }
        let mut out = Collected::default();
        for v in old {
            if self.mark_deleting(zone, v).await? {
                let before = out.deleted;
                out.deleted += self
                    .delete_version_with(zone, v, &|n| progress(before + n))
                    .await?;
            }
            let lock = self.lock(ZONE_LOCK, zone, "collect", LOCK_WAIT).await?;
            let r = self
                .zones
                .update_one(
                    doc! {"_id": &id},
                    doc! {"$pull": {OLD_VERSIONS: v, DELETING: v}},
                )
                .await;
            lock.release_with(r.map_err(StoreError::from)).await?;
            out.versions.push(v);
        }
        Ok(out)
    }

    /// Under the zone lock: lists `v` in [`DELETING`] unless it is served
    /// or pending (then it must not be deleted). True when it may be.
    async fn mark_deleting(&self, zone: &Name, v: i64) -> Result<bool, StoreError> {
        let lock = self.lock(ZONE_LOCK, zone, "collect", LOCK_WAIT).await?;
        let marked = async {
            let d = self.zones.find_one(doc! {"_id": zone.to_string()}).await?;
            let live = ["ver", "pending_ver"]
                .iter()
                .any(|k| d.as_ref().and_then(|d| int_field(d, k)) == Some(v));
            if !live {
                self.zones
                    .update_one(
                        doc! {"_id": zone.to_string()},
                        doc! {"$addToSet": {DELETING: v}},
                    )
                    .await?;
            }
            Ok(!live)
        }
        .await;
        lock.release_with(marked).await
    }
}

impl ZoneWriter {
    /// The store this writer writes to.
    pub fn store(&self) -> &Store {
        &self.store
    }
}
