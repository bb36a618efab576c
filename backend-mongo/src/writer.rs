//! Writing a zone: the only way mongodns tools change stored data.
//!
//! ```text
//!  begin(zone, Replace) ─► pending_ver = ver+1 (old pending rows removed)
//!        │   write_nodes(batch) … (insert; duplicates merged by update)
//!        ▼
//!  finish() ─► SOA serial checked/bumped ─► seq += 1 ─► zones{ver, gen=seq}
//!        │                                   (readers switch here, at once)
//!        └─► after a grace period, nodes of the old ver are deleted
//!
//!  begin(zone, Merge) ─► writes go into the served ver as upserts
//!        (RRsets gain records; TTL set) ─► finish(): serial+1, gen=seq
//! ```
//!
//! Every writer ends by bumping the zone's `gen` to a new value of the global
//! counter `meta.seq`, which is how servers notice changes.

use crate::schema::{self, node_id, RRset, ZoneInfo, SEQ_ID};
use crate::store::{Store, StoreError};
use crate::{Name, RType};
use mongodb::bson::{doc, Bson, DateTime, Document};
use mongodb::options::ReturnDocument;
use std::time::Duration;

/// How a write treats what the zone already holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteMode {
    /// Build a new version; on `finish` it replaces the old one atomically.
    Replace,
    /// Add records to the served version (RRsets are merged, TTLs set).
    Merge,
}

/// One owner name and its RRsets, ready to be written.
#[derive(Clone, Debug)]
pub struct NodeWrite {
    /// The owner name.
    pub name: Name,
    /// Its RRsets; empty for an empty non-terminal.
    pub rrsets: Vec<RRset>,
}

/// Counts from one bulk write.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriteStats {
    /// Documents newly inserted.
    pub inserted: u64,
    /// Documents merged into ones that already existed.
    pub merged: u64,
}

/// A write in progress on one zone.
pub struct ZoneWriter {
    store: Store,
    zone: Name,
    ver: i64,
    mode: WriteMode,
    previous: Option<ZoneInfo>,
    /// Merge updates run one batch at a time: FerretDB applies an update as
    /// read-modify-write without isolation, so two concurrent `$addToSet`s on
    /// one document can lose one. Inserts need no lock (the unique `_id`
    /// index arbitrates), and contiguous zone files rarely merge at all.
    merge_lock: tokio::sync::Mutex<()>,
    /// When a merge last published a new generation (see `publish_progress`).
    last_publish: std::sync::Mutex<std::time::Instant>,
}

/// How often a long merge publishes a new generation, so servers see its
/// writes while it runs (well within their one-second freshness target).
pub const PUBLISH_EVERY: Duration = Duration::from_millis(200);

const DUPLICATE_KEY: i32 = 11000;

impl Store {
    /// Starts writing `zone`. `Merge` needs the zone to exist already, or
    /// falls back to `Replace` (a new zone has nothing to merge into).
    pub async fn begin_zone_write(
        &self,
        zone: &Name,
        mode: WriteMode,
    ) -> Result<ZoneWriter, StoreError> {
        let id = zone.to_string();
        let current = self.zones.find_one(doc! {"_id": &id}).await?;
        let served = match &current {
            Some(d) if d.contains_key("ver") => Some(schema::zone_from_doc(d)?),
            _ => None,
        };
        if mode == WriteMode::Merge {
            if let Some(info) = &served {
                return Ok(ZoneWriter {
                    store: self.clone(),
                    zone: zone.clone(),
                    ver: info.ver,
                    mode,
                    previous: served.clone(),
                    merge_lock: Default::default(),
                    last_publish: std::sync::Mutex::new(std::time::Instant::now()),
                });
            }
        }
        let pending = current
            .as_ref()
            .and_then(|d| d.get("pending_ver"))
            .and_then(|v| v.as_i64().or(v.as_i32().map(i64::from)));
        let ver = match pending {
            Some(p) => {
                // A previous run stopped midway: clear what it left and reuse it.
                self.delete_version(zone, p).await?;
                p
            }
            None => served.as_ref().map_or(1, |z| z.ver + 1),
        };
        self.zones
            .update_one(doc! {"_id": &id}, doc! {"$set": {"pending_ver": ver}})
            .upsert(true)
            .await?;
        Ok(ZoneWriter {
            store: self.clone(),
            zone: zone.clone(),
            ver,
            mode: WriteMode::Replace,
            previous: served,
            merge_lock: Default::default(),
            last_publish: std::sync::Mutex::new(std::time::Instant::now()),
        })
    }

    /// Increments and returns the global change counter.
    pub async fn next_seq(&self) -> Result<i64, StoreError> {
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
}

fn merge_update(zone: &Name, ver: i64, node: &NodeWrite) -> Document {
    let id = node_id(zone, ver, &node.name);
    let mut on_insert = doc! {
        "zone": zone.to_string(),
        "ver": ver,
        "name": node.name.to_string(),
        "ck": node.name.canonical_key(),
    };
    let mut update = Document::new();
    if node.rrsets.is_empty() {
        on_insert.insert("rrsets", Document::new());
    } else {
        let mut set = Document::new();
        let mut add = Document::new();
        for rrset in &node.rrsets {
            let key = rrset.rtype.mnemonic();
            set.insert(format!("rrsets.{key}.ttl"), i64::from(rrset.ttl));
            let each: Vec<Bson> = rrset.rdata.iter().map(|r| schema::binary(r)).collect();
            add.insert(format!("rrsets.{key}.rd"), doc! {"$each": each});
        }
        update.insert("$set", set);
        update.insert("$addToSet", add);
    }
    update.insert("$setOnInsert", on_insert);
    doc! {"q": {"_id": id}, "u": update, "upsert": true}
}

fn command_errors(reply: &Document) -> Vec<(usize, i32, String)> {
    let mut out = Vec::new();
    if let Ok(errors) = reply.get_array("writeErrors") {
        for e in errors.iter().filter_map(Bson::as_document) {
            let index = e
                .get("index")
                .and_then(|v| v.as_i32().map(i64::from).or(v.as_i64()))
                .unwrap_or(-1);
            let code = e.get("code").and_then(|v| v.as_i32()).unwrap_or(0);
            let msg = e.get_str("errmsg").unwrap_or("").to_string();
            out.push((index as usize, code, msg));
        }
    }
    out
}

fn write_failure(what: &str, errors: &[(usize, i32, String)]) -> StoreError {
    let (index, code, msg) = &errors[0];
    StoreError::Database(mongodb::error::Error::custom(format!(
        "{what}: {} write error(s), first at #{index}: code {code}: {msg}",
        errors.len()
    )))
}

impl ZoneWriter {
    /// The content version being written.
    pub fn ver(&self) -> i64 {
        self.ver
    }

    /// The mode in effect (a `Merge` into a new zone becomes `Replace`).
    pub fn mode(&self) -> WriteMode {
        self.mode
    }

    /// The zone as served before this write began, if it was.
    pub fn previous(&self) -> Option<&ZoneInfo> {
        self.previous.as_ref()
    }

    /// Writes one batch in a single unordered bulk operation.
    ///
    /// In `Replace` mode documents are inserted; any that already exist (a
    /// name seen again, or a re-run) are merged instead, so a batch can be
    /// written any number of times with the same result.
    pub async fn write_nodes(&self, batch: &[NodeWrite]) -> Result<WriteStats, StoreError> {
        if batch.is_empty() {
            return Ok(WriteStats::default());
        }
        let db = self.store.database();
        let mut stats = WriteStats::default();
        let to_merge: Vec<&NodeWrite> = match self.mode {
            WriteMode::Merge => batch.iter().collect(),
            WriteMode::Replace => {
                let docs: Vec<Document> = batch
                    .iter()
                    .map(|n| schema::node_doc(&self.zone, self.ver, &n.name, &n.rrsets))
                    .collect();
                let reply = db
                    .run_command(
                        doc! {"insert": schema::NODES, "documents": docs, "ordered": false},
                    )
                    .await?;
                let errors = command_errors(&reply);
                let (dups, other): (Vec<_>, Vec<_>) = errors
                    .into_iter()
                    .partition(|(_, code, _)| *code == DUPLICATE_KEY);
                if !other.is_empty() {
                    return Err(write_failure("insert", &other));
                }
                stats.inserted = (batch.len() - dups.len()) as u64;
                dups.iter().filter_map(|(i, _, _)| batch.get(*i)).collect()
            }
        };
        if !to_merge.is_empty() {
            let _serial = self.merge_lock.lock().await;
            let updates: Vec<Document> = to_merge
                .iter()
                .map(|n| merge_update(&self.zone, self.ver, n))
                .collect();
            let reply = db
                .run_command(doc! {"update": schema::NODES, "updates": updates, "ordered": false})
                .await?;
            let errors = command_errors(&reply);
            if !errors.is_empty() {
                return Err(write_failure("update", &errors));
            }
            stats.merged = to_merge.len() as u64;
        }
        if self.mode == WriteMode::Merge {
            self.publish_progress().await?;
        }
        Ok(stats)
    }

    /// In `Merge` mode, writes are visible in the database at once; this
    /// moves the zone's generation (at most every [`PUBLISH_EVERY`]) so that
    /// servers drop what they cached before those writes.
    async fn publish_progress(&self) -> Result<(), StoreError> {
        {
            let mut last = self.last_publish.lock().unwrap_or_else(|p| p.into_inner());
            if last.elapsed() < PUBLISH_EVERY {
                return Ok(());
            }
            *last = std::time::Instant::now();
        }
        let gen = self.store.next_seq().await?;
        self.store
            .zones
            .update_one(
                doc! {"_id": self.zone.to_string()},
                doc! {"$max": {"gen": gen}},
            )
            .await?;
        Ok(())
    }

    /// Publishes the write: fixes the SOA serial, bumps the generation and,
    /// for `Replace`, switches readers to the new version and, after
    /// `grace`, deletes the old one. Returns the zone as now served.
    pub async fn finish(self, grace: Duration) -> Result<ZoneInfo, StoreError> {
        let zone_id = self.zone.to_string();
        let apex_id = node_id(&self.zone, self.ver, &self.zone);
        let apex = self.store.nodes.find_one(doc! {"_id": &apex_id}).await?;
        let soa = apex
            .as_ref()
            .map(schema::node_from_doc)
            .transpose()?
            .and_then(|n| n.rrset(RType::SOA).cloned());
        let soa = match soa {
            Some(s) if !s.rdata.is_empty() => s,
            _ => {
                return Err(StoreError::Database(mongodb::error::Error::custom(
                    format!("zone {zone_id} has no SOA record at its apex; nothing was published"),
                )))
            }
        };
        let written_serial = soa_serial(&soa.rdata[0]).ok_or_else(|| {
            StoreError::Database(mongodb::error::Error::custom(
                "malformed SOA rdata at the apex",
            ))
        })?;
        // The serial must move forward whenever the content changed (RFC 1982);
        // a writer that already moved it (a signer, which also signed the
        // SOA) keeps its value.
        let serial = match &self.previous {
            Some(prev) if !serial_gt(written_serial, prev.serial) => {
                let base = if serial_gt(written_serial, prev.serial) {
                    written_serial
                } else {
                    prev.serial
                };
                base.wrapping_add(1)
            }
            _ => written_serial,
        };
        if serial != written_serial {
            let mut rdata = soa.rdata[0].to_vec();
            set_soa_serial(&mut rdata, serial);
            self.store
                .nodes
                .update_one(
                    doc! {"_id": &apex_id},
                    doc! {"$set": {"rrsets.SOA.rd": [schema::binary(&rdata)]}},
                )
                .await?;
        }
        let gen = self.store.next_seq().await?;
        self.store
            .zones
            .update_one(
                doc! {"_id": &zone_id},
                doc! {
                    "$set": {"ver": self.ver, "serial": i64::from(serial), "gen": gen, "updated": DateTime::now()},
                    "$unset": {"pending_ver": ""},
                },
            )
            .upsert(true)
            .await?;
        if let (WriteMode::Replace, Some(prev)) = (self.mode, &self.previous) {
            if prev.ver != self.ver {
                // Servers may still read the old version until they notice
                // the new generation; give them time before deleting it.
                tokio::time::sleep(grace).await;
                self.store.delete_version(&self.zone, prev.ver).await?;
            }
        }
        Ok(ZoneInfo {
            apex: self.zone,
            ver: self.ver,
            gen,
            serial,
        })
    }
}

/// The serial of an SOA rdata (after MNAME and RNAME).
pub fn soa_serial(rdata: &[u8]) -> Option<u32> {
    let at = soa_serial_offset(rdata)?;
    let b = rdata.get(at..at + 4)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

fn set_soa_serial(rdata: &mut [u8], serial: u32) {
    if let Some(at) = soa_serial_offset(rdata) {
        rdata[at..at + 4].copy_from_slice(&serial.to_be_bytes());
    }
}

fn soa_serial_offset(rdata: &[u8]) -> Option<usize> {
    let (_, a) = Name::from_wire_prefix(rdata).ok()?;
    let (_, b) = Name::from_wire_prefix(rdata.get(a..)?).ok()?;
    let at = a + b;
    (rdata.len() >= at + 20).then_some(at)
}

/// `a > b` in serial number arithmetic (RFC 1982).
pub fn serial_gt(a: u32, b: u32) -> bool {
    a != b && a.wrapping_sub(b) < 0x8000_0000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serial_arithmetic_wraps() {
        assert!(serial_gt(2, 1));
        assert!(!serial_gt(1, 2));
        assert!(serial_gt(0, u32::MAX));
        assert!(!serial_gt(5, 5));
    }

    #[test]
    fn soa_serial_is_read_and_written() {
        let mut rdata = b"\x02ns\x00\x05admin\x00".to_vec();
        rdata.extend_from_slice(&42u32.to_be_bytes());
        rdata.extend_from_slice(&[0; 16]);
        assert_eq!(soa_serial(&rdata), Some(42));
        set_soa_serial(&mut rdata, 43);
        assert_eq!(soa_serial(&rdata), Some(43));
        assert_eq!(soa_serial(&rdata[..10]), None);
    }
}
