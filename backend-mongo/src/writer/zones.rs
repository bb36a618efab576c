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
        let fresh = self.sort_zones(zones, mode, grace, &mut stats).await?;
        if fresh.is_empty() {
            return Ok(stats);
        }
        let serials = fresh
            .iter()
            .map(|z| apex_serial(z.zone))
            .collect::<Result<Vec<u32>, StoreError>>()?;
        self.mark_pending(&fresh).await?;
        self.insert_new_nodes(&fresh, &mut stats).await?;
        let first_gen = self.take_generations(fresh.len() as i64).await?;
        self.publish_new_zones(&fresh, &serials, first_gen).await?;
        Ok(stats)
    }

    /// Writes the zones already served one by one through a
    /// [`ZoneWriter`](super::ZoneWriter); returns the others, each with the
    /// version to write (a killed run's pending one when it can be reused).
    async fn sort_zones<'a>(
        &self,
        zones: &'a [ZoneContent],
        mode: WriteMode,
        grace: Duration,
        stats: &mut WriteStats,
    ) -> Result<Vec<NewZone<'a>>, StoreError> {
        let docs =
            futures::future::try_join_all(zones.iter().map(|z| async move {
                self.zones.find_one(doc! {"_id": z.apex.to_string()}).await
            }))
            .await?;
        let mut fresh = Vec::new();
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
            fresh.push(NewZone {
                zone,
                ver,
                has_doc: current.is_some(),
                leftovers: super::collect::old_versions(current.as_ref()),
            });
        }
        Ok(fresh)
    }

    /// Marks each zone as being written (pending_ver, resume key). Zones
    /// without a document (the usual case) get it by one bulk insert;
    /// FerretDB updates cost ~1 ms per statement, inserts far less.
    async fn mark_pending(&self, fresh: &[NewZone<'_>]) -> Result<(), StoreError> {
        let marker = |z: &ZoneContent, ver: i64| match &z.resume_key {
            Some(key) => {
                doc! {"pending_ver": ver, "resume": {"key": key, "ver": ver, "done": 0_i64}}
            }
            None => doc! {"pending_ver": ver},
        };
        let mut inserts = Vec::new();
        let mut updates = Vec::new();
        for z in fresh {
            let apex = z.zone.apex.to_string();
            if z.has_doc {
                updates.push(
                    doc! {"q": {"_id": apex}, "u": {"$set": marker(z.zone, z.ver)}, "upsert": true},
                );
            } else {
                let mut d = doc! {"_id": apex};
                d.extend(marker(z.zone, z.ver));
                inserts.push(d);
            }
        }
        if !inserts.is_empty() {
            self.insert_zone_docs(inserts).await?;
        }
        self.run_updates_on(schema::ZONES, updates).await
    }

    /// Every node of the new zones in one unordered insert; nodes a killed
    /// run of the same input left are merged, which changes nothing.
    async fn insert_new_nodes(
        &self,
        fresh: &[NewZone<'_>],
        stats: &mut WriteStats,
    ) -> Result<(), StoreError> {
        let mut node_docs = Vec::new();
        let mut owners: Vec<(&Name, i64, &NodeWrite)> = Vec::new();
        for z in fresh {
            for n in &z.zone.nodes {
                node_docs.push(schema::node_doc(&z.zone.apex, z.ver, &n.name, &n.rrsets));
                owners.push((&z.zone.apex, z.ver, n));
            }
        }
        let dups = insert_nodes(self.database(), node_docs).await?;
        stats.inserted += (owners.len() - dups.len()) as u64;
        if !dups.is_empty() {
            let updates: Vec<Document> = dups
                .iter()
                .filter_map(|i| owners.get(*i))
                .map(|(apex, ver, n)| merge_update(apex, *ver, n))
                .collect();
            stats.merged += updates.len() as u64;
            self.run_updates(updates).await?;
        }
        Ok(())
    }

    /// Takes `count` generations from the global counter at once; returns
    /// the first.
    async fn take_generations(&self, count: i64) -> Result<i64, StoreError> {
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
        Ok(top - count + 1)
    }

    /// The switch: none of these zones was served, so replacing each marker
    /// by the served document (delete, then insert; both bulk) changes
    /// what readers see from "no zone" to "the whole zone" at once.
    async fn publish_new_zones(
        &self,
        fresh: &[NewZone<'_>],
        serials: &[u32],
        first_gen: i64,
    ) -> Result<(), StoreError> {
        let now = DateTime::now();
        let deletes: Vec<Document> = fresh
            .iter()
            .map(|z| doc! {"q": {"_id": z.zone.apex.to_string()}, "limit": 1})
            .collect();
        let reply = self
            .database()
            .run_command(doc! {"delete": schema::ZONES, "deletes": deletes, "ordered": false})
            .await?;
        let errors = command_errors(&reply);
        if !errors.is_empty() {
            return Err(write_failure("delete zone markers", &errors));
        }
        let served: Vec<Document> = fresh
            .iter()
            .zip(serials)
            .enumerate()
            .map(|(k, (z, serial))| {
                let mut d = doc! {
                    "_id": z.zone.apex.to_string(),
                    "ver": z.ver,
                    "serial": i64::from(*serial),
                    "gen": first_gen + k as i64,
                    "updated": now,
                };
                if !z.leftovers.is_empty() {
                    d.insert(super::OLD_VERSIONS, z.leftovers.clone());
                }
                d
            })
            .collect();
        self.insert_zone_docs(served).await
    }

    /// Inserts zone documents in one unordered insert.
    async fn insert_zone_docs(&self, documents: Vec<Document>) -> Result<(), StoreError> {
        let reply = self
            .database()
            .run_command(doc! {"insert": schema::ZONES, "documents": documents, "ordered": false})
            .await?;
        let errors = command_errors(&reply);
        if !errors.is_empty() {
            return Err(write_failure("insert zones", &errors));
        }
        Ok(())
    }
}

/// A zone of the batch that is not served yet.
struct NewZone<'a> {
    zone: &'a ZoneContent,
    /// The version its nodes are written to.
    ver: i64,
    /// It has a zone document already (a marker, or a deleted zone's).
    has_doc: bool,
    /// Versions a deleted zone of the same name left to collect.
    leftovers: Vec<i64>,
}

/// The serial of the SOA at the zone's apex.
fn apex_serial(zone: &ZoneContent) -> Result<u32, StoreError> {
    zone.nodes
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
        })
}
