//! The zone journal in the database: per record edit, the records it
//! removed and added, for IXFR (RFC 1995). Only this file knows its
//! documents.
//!
//! ```text
//!  ZoneEdit::publish [zone lock] ─► append_journal: { _id "jnl <zone>
//!     <gen>", zone, gen, base, exact, from, to, rm, add, at }
//!  zones.serial_gen: the generation the serial was last moved at (set by
//!     every publish that moves it); an entry is exact when its base is it
//!  journal_chain(zone now, their serial): journal_read.rs
//!  pruned when a zone holds more than JOURNAL_KEPT entries, and past
//!  JOURNAL_MAX_AGE (14 days)
//! ```
//!
//! Record edits (edit.rs) and merge imports into unsigned zones
//! (merge_journal.rs) are journaled. Writers that keep no journal
//! (replaces, the signer, edits of secured zones) leave a gap, which only
//! costs a full transfer.

use crate::schema::SchemaError;
use crate::store::{Store, StoreError};
use crate::{Name, RRset, RType};
use dns::journal::{JournalEntry, JournalRecord};
use futures::TryStreamExt;
use mongodb::bson::{doc, spec::BinarySubtype, Binary, Bson, DateTime, Document};
use mongodb::options::IndexOptions;
use mongodb::IndexModel;

/// The journal's collection.
pub const JOURNAL: &str = "journal";
/// The zone document's field: the generation its serial last moved at.
pub const SERIAL_GEN: &str = "serial_gen";
/// Entries kept per zone; older ones are deleted.
pub const JOURNAL_KEPT: i64 = 1000;
/// How long an entry is kept (older ones are deleted with the surplus).
pub const JOURNAL_MAX_AGE: std::time::Duration = std::time::Duration::from_secs(14 * 24 * 3600);
/// Records (removed and added) one entry may hold; a larger change is
/// not journaled (a secondary behind it gets the whole zone).
pub const MAX_JOURNAL_RECORDS: usize = 20_000;

fn record_doc(r: &JournalRecord) -> Document {
    doc! {
        "n": r.owner.to_string(),
        "t": i32::from(r.rtype.0),
        "l": i64::from(r.ttl),
        "d": Binary { subtype: BinarySubtype::Generic, bytes: r.rdata.to_vec() },
    }
}

fn record_from(id: &str, d: &Document) -> Result<JournalRecord, SchemaError> {
    let bad = |reason: &str| SchemaError {
        id: id.to_string(),
        reason: format!("journal record: {reason}"),
    };
    let owner = d.get_str("n").map_err(|_| bad("no owner"))?;
    let owner: Name = owner.parse().map_err(|_| bad("a bad owner"))?;
    let rtype = d.get_i32("t").map_err(|_| bad("no type"))?;
    let ttl = d.get_i64("l").map_err(|_| bad("no TTL"))?;
    let rdata = match d.get("d") {
        Some(Bson::Binary(b)) => b.bytes.clone().into_boxed_slice(),
        _ => return Err(bad("no rdata")),
    };
    Ok(JournalRecord {
        owner,
        rtype: RType(u16::try_from(rtype).map_err(|_| bad("a bad type"))?),
        ttl: u32::try_from(ttl).map_err(|_| bad("a bad TTL"))?,
        rdata,
    })
}

fn records_from(id: &str, d: &Document, key: &str) -> Result<Vec<JournalRecord>, SchemaError> {
    let list = d.get_array(key).map_err(|_| SchemaError {
        id: id.to_string(),
        reason: format!("journal entry without {key}"),
    })?;
    list.iter()
        .filter_map(Bson::as_document)
        .map(|r| record_from(id, r))
        .collect()
}

/// An entry as stored; with `records` false, its head alone (the records
/// left out of the read, the lists empty).
pub(super) fn entry_from(d: &Document, records: bool) -> Result<JournalEntry, SchemaError> {
    let id = d.get_str("_id").unwrap_or("?").to_string();
    let int = |k: &str| {
        d.get_i64(k).map_err(|_| SchemaError {
            id: id.clone(),
            reason: format!("journal entry without {k}"),
        })
    };
    let soa = |k: &str| {
        let r = d.get_document(k).map_err(|_| SchemaError {
            id: id.clone(),
            reason: format!("journal entry without {k}"),
        })?;
        record_from(&id, r)
    };
    Ok(JournalEntry {
        gen: int("gen")?,
        base_gen: int("base")?,
        exact: d.get_bool("exact").unwrap_or(false),
        from_soa: soa("from")?,
        to_soa: soa("to")?,
        removed: match records {
            true => records_from(&id, d, "rm")?,
            false => Vec::new(),
        },
        added: match records {
            true => records_from(&id, d, "add")?,
            false => Vec::new(),
        },
    })
}

impl Store {
    /// Stores `entry` for `zone` (call under the zone lock, as the change
    /// is published); an entry too large is left out.
    pub async fn append_journal(
        &self,
        zone: &Name,
        entry: &JournalEntry,
    ) -> Result<(), StoreError> {
        if entry.removed.len() + entry.added.len() > MAX_JOURNAL_RECORDS {
            tracing::debug!(%zone, gen = entry.gen, "change too large to journal");
            return Ok(());
        }
        let list = |rs: &[JournalRecord]| {
            rs.iter()
                .map(|r| Bson::Document(record_doc(r)))
                .collect::<Vec<_>>()
        };
        let d = doc! {
            "_id": format!("jnl {zone} {}", entry.gen),
            "zone": zone.to_string(),
            "gen": entry.gen,
            "base": entry.base_gen,
            "exact": entry.exact,
            "from": record_doc(&entry.from_soa),
            "to": record_doc(&entry.to_soa),
            "rm": list(&entry.removed),
            "add": list(&entry.added),
            "at": DateTime::now(),
        };
        self.journal().insert_one(d).await?;
        if entry.gen % 64 == 0 {
            self.prune_journal(zone).await?;
        }
        Ok(())
    }

    /// The RRsets of `name` in version `ver` of `zone` as stored (none
    /// when it does not exist): a merge's before-image.
    pub(crate) async fn read_node_rrsets(
        &self,
        zone: &Name,
        ver: i64,
        name: &Name,
    ) -> Result<Vec<RRset>, StoreError> {
        let node = self.read_full_node(zone, ver, name).await?;
        Ok(node.map_or_else(Vec::new, |n| {
            n.rrsets.into_iter().map(|s| s.rrset).collect()
        }))
    }

    /// The apex SOA of version `ver` of `zone` as a journal record.
    pub(crate) async fn apex_soa_record(
        &self,
        zone: &Name,
        ver: i64,
    ) -> Result<Option<JournalRecord>, StoreError> {
        let rrsets = self.read_node_rrsets(zone, ver, zone).await?;
        let soa = rrsets.into_iter().find(|r| r.rtype == RType::SOA);
        Ok(soa.and_then(|s| {
            Some(JournalRecord {
                owner: zone.clone(),
                rtype: RType::SOA,
                ttl: s.ttl,
                rdata: s.rdata.into_iter().next()?,
            })
        }))
    }

    /// The journal's index: a zone's entries, newest first.
    pub(crate) async fn ensure_journal_index(&self) -> Result<(), StoreError> {
        let index = IndexModel::builder()
            .keys(doc! {"zone": 1, "gen": -1})
            .options(IndexOptions::builder().name("zone_gen".to_string()).build())
            .build();
        self.journal().create_index(index).await?;
        Ok(())
    }

    pub(super) fn journal(&self) -> mongodb::Collection<Document> {
        self.db.collection(JOURNAL)
    }

    /// Deletes `zone`'s entries beyond the newest [`JOURNAL_KEPT`] and
    /// those older than [`JOURNAL_MAX_AGE`].
    pub async fn prune_journal(&self, zone: &Name) -> Result<u64, StoreError> {
        let oldest = DateTime::now().timestamp_millis() - JOURNAL_MAX_AGE.as_millis() as i64;
        let aged = self
            .journal()
            .delete_many(
                doc! {"zone": zone.to_string(), "at": {"$lt": DateTime::from_millis(oldest)}},
            )
            .await?
            .deleted_count;
        Ok(aged + self.prune_surplus(zone).await?)
    }

    /// Deletes `zone`'s entries beyond the newest [`JOURNAL_KEPT`].
    async fn prune_surplus(&self, zone: &Name) -> Result<u64, StoreError> {
        let oldest_kept = self
            .journal()
            .find(doc! {"zone": zone.to_string()})
            .sort(doc! {"gen": -1})
            .skip(u64::try_from(JOURNAL_KEPT).unwrap_or(u64::MAX))
            .limit(1)
            .projection(doc! {"gen": 1})
            .await?
            .try_next()
            .await?;
        let Some(gen) = oldest_kept.and_then(|d| d.get_i64("gen").ok()) else {
            return Ok(0);
        };
        let r = self
            .journal()
            .delete_many(doc! {"zone": zone.to_string(), "gen": {"$lte": gen}})
            .await?;
        Ok(r.deleted_count)
    }
}

/// The serial of a journaled SOA record.
pub(super) fn soa_serial(r: &JournalRecord) -> Option<u32> {
    dns::serial::soa_serial(&r.rdata)
}
