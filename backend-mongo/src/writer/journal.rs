//! The zone journal in the database: per record edit, the records it
//! removed and added, for IXFR (RFC 1995). Only this file knows its
//! documents.
//!
//! ```text
//!  ZoneEdit::publish [zone lock] ─► append_journal: { _id "jnl <zone>
//!     <gen>", zone, gen, base, exact, from, to, rmw, addw, at }
//!     rmw / addw: the records packed in one binary each (owner in wire
//!     form, type, TTL, rdata length, rdata: pack_records); entries stored
//!     with `rm` / `add` lists of documents are read as well
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

/// Records in one binary: per record the owner in wire form, the type
/// (2 octets), the TTL (4), the rdata's length (2) and the rdata. One
/// field instead of a document per record: a 2,000-name signed change
/// holds about 8,000 records.
fn pack_records(records: &[JournalRecord]) -> Binary {
    let mut bytes = Vec::with_capacity(records.len() * 96);
    for r in records {
        bytes.extend_from_slice(r.owner.as_wire());
        bytes.extend_from_slice(&r.rtype.0.to_be_bytes());
        bytes.extend_from_slice(&r.ttl.to_be_bytes());
        let len = u16::try_from(r.rdata.len()).unwrap_or(u16::MAX);
        bytes.extend_from_slice(&len.to_be_bytes());
        bytes.extend_from_slice(&r.rdata[..usize::from(len)]);
    }
    Binary {
        subtype: BinarySubtype::Generic,
        bytes,
    }
}

/// The records [`pack_records`] packed.
fn unpack_records(id: &str, mut bytes: &[u8]) -> Result<Vec<JournalRecord>, SchemaError> {
    let bad = || SchemaError {
        id: id.to_string(),
        reason: "journal entry: packed records cut short".to_string(),
    };
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let (owner, used) = Name::from_wire_prefix(bytes).map_err(|_| bad())?;
        let head = bytes.get(used..used + 8).ok_or_else(bad)?;
        let len = usize::from(u16::from_be_bytes([head[6], head[7]]));
        let rdata = bytes.get(used + 8..used + 8 + len).ok_or_else(bad)?;
        out.push(JournalRecord {
            owner,
            rtype: RType(u16::from_be_bytes([head[0], head[1]])),
            ttl: u32::from_be_bytes([head[2], head[3], head[4], head[5]]),
            rdata: rdata.into(),
        });
        bytes = &bytes[used + 8 + len..];
    }
    Ok(out)
}

/// The records under `key` (packed, or a list of documents as entries
/// were stored before).
fn records_from(id: &str, d: &Document, key: &str) -> Result<Vec<JournalRecord>, SchemaError> {
    if let Ok(packed) = d.get_binary_generic(format!("{key}w")) {
        return unpack_records(id, packed);
    }
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
        let d = doc! {
            "_id": format!("jnl {zone} {}", entry.gen),
            "zone": zone.to_string(),
            "gen": entry.gen,
            "base": entry.base_gen,
            "exact": entry.exact,
            "from": record_doc(&entry.from_soa),
            "to": record_doc(&entry.to_soa),
            "rmw": pack_records(&entry.removed),
            "addw": pack_records(&entry.added),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn record(owner: &str, rtype: RType, ttl: u32, rdata: &[u8]) -> JournalRecord {
        JournalRecord {
            owner: owner.parse().unwrap(),
            rtype,
            ttl,
            rdata: rdata.into(),
        }
    }

    #[test]
    fn packed_records_read_back_as_written() {
        let records = vec![
            record("www.example.", RType::A, 300, &[192, 0, 2, 1]),
            record("example.", RType(65280), 4_000_000_000, &[]),
            record("a.b.example.", RType::TXT, 60, &[3, b'a', b'b', b'c']),
        ];
        let packed = pack_records(&records);
        assert_eq!(unpack_records("t", &packed.bytes).unwrap(), records);
        assert!(unpack_records("t", &[]).unwrap().is_empty());
    }

    #[test]
    fn packed_records_cut_short_are_an_error() {
        let packed = pack_records(&[record("www.example.", RType::A, 300, &[192, 0, 2, 1])]);
        for cut in 1..packed.bytes.len() {
            assert!(
                unpack_records("t", &packed.bytes[..cut]).is_err(),
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn entries_stored_as_lists_of_documents_are_read() {
        let r = record("www.example.", RType::A, 300, &[192, 0, 2, 1]);
        let d = doc! {"rm": [Bson::Document(record_doc(&r))], "addw": pack_records(std::slice::from_ref(&r))};
        assert_eq!(records_from("t", &d, "rm").unwrap(), vec![r.clone()]);
        assert_eq!(records_from("t", &d, "add").unwrap(), vec![r]);
    }
}
