//! Many new small zones in a few round trips (multi-zone imports).
//!
//! ```text
//!  zones._id point reads (concurrent)  ─► new zones: ver = pending_ver or 1
//!  one insert: markers {pending_ver}   ─► one unordered insert of every node
//!  one $inc of meta.seq by the count   ─► markers replaced by served documents
//!  zones already served ─► ZoneWriter one by one (merge or replace)
//! ```

use super::bulk::{command_errors, insert_nodes, merge_update, write_failure};
use super::meta::SEQ_GATE;
use super::{resume_done, NodeWrite, WriteMode, WriteStats};
use crate::schema::{self, SEQ_ID};
use crate::serial::soa_serial;
use crate::store::{Store, StoreError};
use crate::{Name, RType};
use mongodb::bson::{doc, DateTime, Document};
use mongodb::options::ReturnDocument;
use std::time::Duration;

/// One complete zone, for [`Store::write_zones`].
#[derive(Clone, Debug)]
pub struct ZoneContent {
    /// The apex.
    pub apex: Name,
    /// Every node (the apex with its SOA among them).
    pub nodes: Vec<NodeWrite>,
    /// Identity of this zone's input, so a killed run's pending version can
    /// be reused (see [`Store::begin_resumable_write`]).
    pub resume_key: Option<String>,
}

impl Store {
    /// Writes many small, complete zones with a few round trips for all of
    /// them, instead of several per zone:
    ///
    /// ```text
    ///  zones._id point reads (concurrent)  ─► new zones: ver = pending_ver or 1
    ///  one update: pending_ver (+ resume)  ─► one unordered insert of every node
    ///  one $inc of meta.seq by the count   ─► one update: ver, serial, gen per zone
    /// ```
    ///
    /// Each zone switches on its own with a single-document update, as in
    /// [`ZoneWriter::finish`]. Zones that are already served go through
    /// [`Store::begin_resumable_write`] one by one with `mode` (merge or
    /// replace, with `grace`), exactly as a single-zone import would.
    pub async fn write_zones(
        &self,
        zones: &[ZoneContent],
        mode: WriteMode,
        grace: Duration,
    ) -> Result<WriteStats, StoreError> {
        let mut stats = WriteStats::default();
        if zones.is_empty() {
            return Ok(stats);
        }
        let docs =
            futures::future::try_join_all(zones.iter().map(|z| async move {
                self.zones.find_one(doc! {"_id": z.apex.to_string()}).await
            }))
            .await?;
        // (zone, version to write, has a zone document already)
        let mut fresh: Vec<(&ZoneContent, i64, bool)> = Vec::new();
        // Versions a deleted zone of the same name left to collect.
        let mut leftovers: Vec<Vec<i64>> = Vec::new();
        for (zone, current) in zones.iter().zip(&docs) {
            if current.as_ref().is_some_and(|d| d.contains_key("ver")) {
                let (writer, _) = self
                    .begin_resumable_write(&zone.apex, mode, zone.resume_key.as_deref())
                    .await?;
                let s = writer.write_nodes(&zone.nodes).await?;
                stats.inserted += s.inserted;
                stats.merged += s.merged;
                writer.finish(grace).await?;
                continue;
            }
            let pending = current
                .as_ref()
                .and_then(|d| d.get("pending_ver"))
                .and_then(|v| v.as_i64().or(v.as_i32().map(i64::from)));
            let ver = match pending {
                Some(p) => {
                    if resume_done(current.as_ref(), zone.resume_key.as_deref(), p).is_none() {
                        self.delete_version(&zone.apex, p).await?;
                    }
                    p
                }
                // Above every version a deleted zone of this name left.
                None => super::after_deleted(current.as_ref()),
            };
            fresh.push((zone, ver, current.is_some()));
            leftovers.push(super::collect::old_versions(current.as_ref()));
        }
        if fresh.is_empty() {
            return Ok(stats);
        }
        let mut serials = Vec::with_capacity(fresh.len());
        for (zone, _, _) in &fresh {
            let serial = zone
                .nodes
                .iter()
                .find(|n| n.name == zone.apex)
                .and_then(|n| n.rrsets.iter().find(|r| r.rtype == RType::SOA))
                .and_then(|r| r.rdata.first())
                .and_then(|rd| soa_serial(rd))
                .ok_or_else(|| {
                    StoreError::Database(mongodb::error::Error::custom(format!(
                        "zone {} has no SOA record at its apex; nothing was published",
                        zone.apex
                    )))
                })?;
            serials.push(serial);
        }
        let db = self.database();
        // Mark each zone as being written (pending_ver, resume key). Zones
        // without a document (the usual case) get it by one bulk insert;
        // FerretDB updates cost ~1 ms per statement, inserts far less.
        let marker = |z: &ZoneContent, ver: i64| match &z.resume_key {
            Some(key) => {
                doc! {"pending_ver": ver, "resume": {"key": key, "ver": ver, "done": 0_i64}}
            }
            None => doc! {"pending_ver": ver},
        };
        let mut inserts = Vec::new();
        let mut updates = Vec::new();
        for (z, ver, has_doc) in &fresh {
            if *has_doc {
                updates.push(doc! {"q": {"_id": z.apex.to_string()}, "u": {"$set": marker(z, *ver)}, "upsert": true});
            } else {
                let mut d = doc! {"_id": z.apex.to_string()};
                d.extend(marker(z, *ver));
                inserts.push(d);
            }
        }
        if !inserts.is_empty() {
            let reply = db
                .run_command(doc! {"insert": schema::ZONES, "documents": inserts, "ordered": false})
                .await?;
            let errors = command_errors(&reply);
            if !errors.is_empty() {
                return Err(write_failure("insert zones", &errors));
            }
        }
        self.run_updates_on(schema::ZONES, updates).await?;
        let mut node_docs = Vec::new();
        let mut owners: Vec<(&Name, i64, &NodeWrite)> = Vec::new();
        for (z, ver, _) in &fresh {
            for n in &z.nodes {
                node_docs.push(schema::node_doc(&z.apex, *ver, &n.name, &n.rrsets));
                owners.push((&z.apex, *ver, n));
            }
        }
        let dups = insert_nodes(db, node_docs).await?;
        stats.inserted += (owners.len() - dups.len()) as u64;
        if !dups.is_empty() {
            // Left by a killed run of the same input: merge, which changes nothing.
            let updates: Vec<Document> = dups
                .iter()
                .filter_map(|i| owners.get(*i))
                .map(|(apex, ver, n)| merge_update(apex, *ver, n))
                .collect();
            stats.merged += updates.len() as u64;
            self.run_updates(updates).await?;
        }
        let count = fresh.len() as i64;
        let seq_gate = SEQ_GATE.lock().await;
        let top = self
            .meta
            .find_one_and_update(doc! {"_id": SEQ_ID}, doc! {"$inc": {"seq": count}})
            .upsert(true)
            .return_document(ReturnDocument::After)
            .await?
            .and_then(|d| {
                d.get("seq")
                    .and_then(|v| v.as_i64().or(v.as_i32().map(i64::from)))
            })
            .unwrap_or(count);
        drop(seq_gate);
        // Switch: none of these zones was served, so replacing each marker
        // by the served document (delete, then insert; both bulk) changes
        // what readers see from "no zone" to "the whole zone" at once.
        let now = DateTime::now();
        let deletes: Vec<Document> = fresh
            .iter()
            .map(|(z, _, _)| doc! {"q": {"_id": z.apex.to_string()}, "limit": 1})
            .collect();
        let reply = db
            .run_command(doc! {"delete": schema::ZONES, "deletes": deletes, "ordered": false})
            .await?;
        let errors = command_errors(&reply);
        if !errors.is_empty() {
            return Err(write_failure("delete zone markers", &errors));
        }
        let served: Vec<Document> = fresh
            .iter()
            .zip(&serials)
            .enumerate()
            .map(|(k, ((z, ver, _), serial))| {
                let mut d = doc! {
                    "_id": z.apex.to_string(),
                    "ver": ver,
                    "serial": i64::from(*serial),
                    "gen": top - count + 1 + k as i64,
                    "updated": now,
                };
                if !leftovers[k].is_empty() {
                    d.insert(super::OLD_VERSIONS, leftovers[k].clone());
                }
                d
            })
            .collect();
        let reply = db
            .run_command(doc! {"insert": schema::ZONES, "documents": served, "ordered": false})
            .await?;
        let errors = command_errors(&reply);
        if !errors.is_empty() {
            return Err(write_failure("insert zones", &errors));
        }
        Ok(stats)
    }
}
