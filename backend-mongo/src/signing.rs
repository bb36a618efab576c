//! What the signing service reads and writes besides signatures: the zones
//! it keeps signed, the nodes whose signatures are due, key timings, and the
//! policy, parents and marks in each zone's `dnssec` section.
//!
//! ```text
//!  signed_zones ── zones {dnssec.secured or dnssec.policy} ──► apexes
//!  due_node_ids ── nodes {zone, ver, sx < T} limit N (index zone_ver_sx) ──► _ids
//!  nodes_still_due ── nodes {_id in ids, ver, sx < T} (the _id index) ──► FullNode
//!  earliest_expiry ── the same index, sorted, limit 1 ──► seconds
//!  replace_key ── keys {_id} replaced whole (state, since, ds_seen, roll)
//!  set_dnssec_fields ── zones.dnssec.<field> set, under the zone lock
//! ```

use crate::dnssec_store::{full_node_from_doc, FullNode, StoredKey, KEYS};
use crate::lock::ZONE_LOCK;
use crate::store::{Store, StoreError};
use crate::writer::LOCK_WAIT;
use crate::Name;
use futures::TryStreamExt;
use mongodb::bson::{doc, Bson, Document};

impl Store {
    /// Every zone that is secured or has a signing policy, by apex.
    pub async fn signed_zones(&self) -> Result<Vec<Name>, StoreError> {
        let filter = doc! {"$or": [
            {"dnssec.secured": true},
            {"dnssec.policy": {"$exists": true}},
        ]};
        let mut cursor = self.zones.find(filter).projection(doc! {"_id": 1}).await?;
        let mut out = Vec::new();
        while let Some(d) = cursor.try_next().await? {
            if let Some(apex) = d.get_str("_id").ok().and_then(|s| s.parse().ok()) {
                out.push(apex);
            }
        }
        out.sort();
        Ok(out)
    }

    /// The `_id`s of up to `limit` nodes of version `ver` of `zone` holding
    /// a signature that expires before `before` (seconds since the epoch),
    /// earliest first: only what is due is read. A refresh asks this
    /// before it takes the signing lease (on a database without the
    /// expiry index it is a scan of the collection).
    pub async fn due_node_ids(
        &self,
        zone: &Name,
        ver: i64,
        before: i64,
        limit: i64,
    ) -> Result<Vec<String>, StoreError> {
        let mut cursor = self
            .nodes
            .find(doc! {"zone": zone.to_string(), "ver": ver, "sx": {"$lt": before}})
            .sort(doc! {"zone": 1, "ver": 1, "sx": 1})
            .projection(doc! {"_id": 1})
            .limit(limit)
            .await?;
        let mut out = Vec::new();
        while let Some(d) = cursor.try_next().await? {
            if let Ok(id) = d.get_str("_id") {
                out.push(id.to_string());
            }
        }
        Ok(out)
    }

    /// The nodes of version `ver` among `ids` that still hold a signature
    /// expiring before `before`, read whole by `_id` (under the signing
    /// lease, after [`Store::due_node_ids`]): a node signed again meanwhile
    /// is left out.
    pub async fn nodes_still_due(
        &self,
        ids: &[String],
        ver: i64,
        before: i64,
    ) -> Result<Vec<FullNode>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut cursor = self
            .nodes
            .find(doc! {"_id": {"$in": ids}, "ver": ver, "sx": {"$lt": before}})
            .await?;
        let mut out = Vec::new();
        while let Some(d) = cursor.try_next().await? {
            out.push(full_node_from_doc(&d)?);
        }
        Ok(out)
    }

    /// The earliest signature expiration in version `ver` of `zone`
    /// (seconds since the epoch), if any node is marked.
    pub async fn earliest_expiry(&self, zone: &Name, ver: i64) -> Result<Option<i64>, StoreError> {
        let found = self
            .nodes
            .find_one(doc! {"zone": zone.to_string(), "ver": ver, "sx": {"$gt": 0}})
            .sort(doc! {"zone": 1, "ver": 1, "sx": 1})
            .projection(doc! {"sx": 1})
            .await?;
        Ok(found.and_then(|d| d.get("sx").and_then(Bson::as_i64)))
    }

    /// Stores `key` whole over the stored one (its state and timings).
    pub async fn replace_key(&self, key: &StoredKey) -> Result<(), StoreError> {
        let keys = self.db.collection::<Document>(KEYS);
        keys.replace_one(doc! {"_id": &key.id}, crate::dnssec_store::key_doc(key))
            .await?;
        Ok(())
    }

    /// Sets (or, for `Bson::Null`, removes) fields of the zone's `dnssec`
    /// section, under the zone lock, so that a switch writing the section
    /// whole never loses them.
    pub async fn set_dnssec_fields(
        &self,
        zone: &Name,
        fields: Vec<(&str, Bson)>,
    ) -> Result<(), StoreError> {
        let mut set = Document::new();
        let mut unset = Document::new();
        for (k, v) in fields {
            match v {
                Bson::Null => unset.insert(format!("dnssec.{k}"), ""),
                v => set.insert(format!("dnssec.{k}"), v),
            };
        }
        let mut update = Document::new();
        if !set.is_empty() {
            update.insert("$set", set);
        }
        if !unset.is_empty() {
            update.insert("$unset", unset);
        }
        let lock = self
            .lock(ZONE_LOCK, zone, "dnssec-fields", LOCK_WAIT)
            .await?;
        let r = self
            .zones
            .update_one(
                doc! {"_id": zone.to_string(), "ver": {"$exists": true}},
                update,
            )
            .await
            .map_err(StoreError::from)
            .and_then(|r| match r.matched_count {
                0 => Err(StoreError::NoSuchZone(zone.to_string())),
                _ => Ok(()),
            });
        lock.release_with(r).await
    }
}
