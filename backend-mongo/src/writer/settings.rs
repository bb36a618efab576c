//! Per-zone settings the server reads: today, where NOTIFY goes.
//!
//! ```text
//!  zone_settings {_id: apex, notify: ["ADDR[:PORT][,key=NAME]", …], updated}
//!  set_zone_notify(zone, targets)
//!   [zone lock] served? (else NoSuchZone) ─► upsert zone_settings{_id}
//!     ─► new generation, change record with no names (no cached node drops)
//!     ─► zones{_id}.gen $max (servers polling re-read the settings)
//!  zone_settings(zone) ─► one `_id` point read: Some(settings) or None
//! ```
//!
//! A zone without a settings document uses the server's defaults
//! (`--notify`); a document with an empty list notifies nobody.

use super::LOCK_WAIT;
use crate::lock::ZONE_LOCK;
use crate::store::{Store, StoreError};
use crate::Name;
use mongodb::bson::{doc, DateTime, Document};

/// The collection of per-zone settings documents.
pub const ZONE_SETTINGS: &str = "zone_settings";

/// What a zone's settings document says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ZoneSettings {
    /// Where NOTIFY goes, as `ADDR[:PORT][,key=NAME]` (`None`: the
    /// server's defaults; an empty list: nobody).
    pub notify: Option<Vec<String>>,
}

impl Store {
    fn settings(&self) -> mongodb::Collection<Document> {
        self.database().collection(ZONE_SETTINGS)
    }

    /// The settings document of `zone`, if it has one.
    pub async fn zone_settings(&self, zone: &Name) -> Result<Option<ZoneSettings>, StoreError> {
        let found = self
            .settings()
            .find_one(doc! {"_id": zone.to_string()})
            .await?;
        Ok(found.map(|d| ZoneSettings {
            notify: d.get_array("notify").ok().map(|list| {
                list.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            }),
        }))
    }

    /// True when any zone has a settings document (one read).
    pub async fn any_zone_settings(&self) -> Result<bool, StoreError> {
        Ok(self.settings().find_one(doc! {}).await?.is_some())
    }

    /// Sets where NOTIFY for `zone` goes (`None`: back to the server's
    /// defaults), at a new generation of the zone; returns the generation.
    pub async fn set_zone_notify(
        &self,
        zone: &Name,
        targets: Option<&[String]>,
    ) -> Result<i64, StoreError> {
        let lock = self.lock(ZONE_LOCK, zone, "set-notify", LOCK_WAIT).await?;
        let r = self.set_notify_locked(zone, targets).await;
        lock.release_with(r).await
    }

    async fn set_notify_locked(
        &self,
        zone: &Name,
        targets: Option<&[String]>,
    ) -> Result<i64, StoreError> {
        let id = zone.to_string();
        if self.find_zone(zone).await?.is_none() {
            return Err(StoreError::NoSuchZone(id));
        }
        let update = match targets {
            Some(list) => doc! {"$set": {"notify": list, "updated": DateTime::now()}},
            None => doc! {"$unset": {"notify": ""}, "$set": {"updated": DateTime::now()}},
        };
        self.settings()
            .update_one(doc! {"_id": &id}, update)
            .upsert(true)
            .await?;
        let gen = self.take_generation_with(zone, Some(&[]), false).await?;
        self.zones
            .update_one(doc! {"_id": &id}, doc! {"$max": {"gen": gen}})
            .await?;
        Ok(gen)
    }
}
