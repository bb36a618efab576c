//! The journal of a merge import: what its batches removed and added
//! since the serial last moved, kept in memory and stored as one journal
//! entry (writer/journal.rs) each time the merge moves the serial.
//!
//! ```text
//!  begin (Merge into an unsigned zone) ─► MergeJournal { base gen, from
//!     SOA, exact = the serial last moved at this gen }
//!  write_into ─► inserted names: every record added
//!             ─► merged names: before-image read first ─► record_changes(
//!                before, before ⊕ batch)                 ─► note
//!  settle [zone lock] ─► the zone's gen still our last? (else inexact)
//!  publish / finish [zone lock] moved the serial ─► take(gen, to SOA) ─►
//!     the entry, when exact and within MAX_JOURNAL_RECORDS ─► the next
//!     one starts at this serial
//!  batches written again after another writer's switch ─► inexact
//! ```
//!
//! Inexact entries are never stored: a secondary behind one gets the whole
//! zone, which is always correct.
//!
//! A merge writes into the served version before it publishes, so while
//! one runs nobody else's entry can be exact: a merge lists itself in the
//! zone document (`merging.<id>`, renewed at each publish, gone at its
//! last) and unsets `serial_gen`; a publish that moves the serial sets
//! `serial_gen` again only when no other merge is live. A killed merge's
//! listing lapses after [`MERGE_LEASE`].

use super::journal::MAX_JOURNAL_RECORDS;
use super::NodeWrite;
use crate::RRset;
use dns::journal::{record_changes, JournalEntry, JournalRecord};
use mongodb::bson::{DateTime, Document};
use std::time::Duration;

/// The zone document's field listing live merges: `{<id>: <renewed at>}`.
pub(super) const MERGING: &str = "merging";

/// How long a merge's listing lives unrenewed (a killed merge's lapses).
pub const MERGE_LEASE: Duration = Duration::from_secs(600);

/// A fresh merge identity (process, time, counter), safe as a field name.
pub(super) fn merge_id() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("m{:x}x{nanos:x}x{n:x}", std::process::id())
}

/// True when the zone document lists a live merge other than `me`.
pub(super) fn other_merge_live(zone_doc: Option<&Document>, me: Option<&str>) -> bool {
    let Some(list) = zone_doc.and_then(|d| d.get_document(MERGING).ok()) else {
        return false;
    };
    let oldest = DateTime::now().timestamp_millis() - MERGE_LEASE.as_millis() as i64;
    list.iter().any(|(id, at)| {
        Some(id.as_str()) != me
            && at
                .as_datetime()
                .is_some_and(|t| t.timestamp_millis() > oldest)
    })
}

/// What one merge changed since its serial last moved.
#[derive(Debug)]
pub(super) struct MergeJournal {
    /// The generation the changes start from (the serial moved there).
    base_gen: i64,
    /// The generation of this writer's last publish (or `base_gen`).
    last_gen: i64,
    /// The apex SOA at `base_gen`.
    from_soa: Option<JournalRecord>,
    /// False once another writer's change may lie between.
    exact: bool,
    /// Past [`MAX_JOURNAL_RECORDS`]: the lists were dropped.
    overflow: bool,
    removed: Vec<JournalRecord>,
    added: Vec<JournalRecord>,
    /// A merge into a secured zone: its signer's node images give the
    /// records ([`MergeJournal::fill`]); a write outside them spoils it.
    pub(super) imaged: bool,
}

impl MergeJournal {
    /// A journal starting at the zone's generation `gen`, exact when the
    /// serial last moved there (`serial_gen`) and the SOA is known.
    pub(super) fn new(gen: i64, serial_gen: Option<i64>, from_soa: Option<JournalRecord>) -> Self {
        MergeJournal {
            base_gen: gen,
            last_gen: gen,
            exact: serial_gen == Some(gen) && from_soa.is_some(),
            from_soa,
            overflow: false,
            removed: Vec::new(),
            added: Vec::new(),
            imaged: false,
        }
    }

    /// The same, its records to come from node images (secured zones).
    pub(super) fn imaged(
        gen: i64,
        serial_gen: Option<i64>,
        from_soa: Option<JournalRecord>,
    ) -> Self {
        MergeJournal {
            imaged: true,
            ..MergeJournal::new(gen, serial_gen, from_soa)
        }
    }

    /// An imaged journal's records, from the images' difference (`None`:
    /// no images, or too many nodes).
    pub(super) fn fill(&mut self, diff: Option<(Vec<JournalRecord>, Vec<JournalRecord>)>) {
        match diff {
            Some((removed, added)) => self.note(removed, added),
            None => self.spoil(),
        }
    }

    /// Notes one name's change: `before` as stored, `written` as merged in.
    pub(super) fn note_merge(&mut self, node: &NodeWrite, before: &[RRset]) {
        if self.imaged {
            return self.spoil();
        }
        let after = merged(before, &node.rrsets);
        let (removed, added) = record_changes(&node.name, before, &after);
        self.note(removed, added);
    }

    /// Notes a name that did not exist: all its records are new.
    pub(super) fn note_insert(&mut self, node: &NodeWrite) {
        if self.imaged {
            return self.spoil();
        }
        let (removed, added) = record_changes(&node.name, &[], &node.rrsets);
        self.note(removed, added);
    }

    fn note(&mut self, removed: Vec<JournalRecord>, added: Vec<JournalRecord>) {
        if self.overflow {
            return;
        }
        self.removed.extend(removed);
        self.added.extend(added);
        if self.removed.len() + self.added.len() > MAX_JOURNAL_RECORDS {
            self.overflow = true;
            self.removed = Vec::new();
            self.added = Vec::new();
        }
    }

    /// Another writer's change may be mixed in (a batch written again).
    pub(super) fn spoil(&mut self) {
        self.exact = false;
    }

    /// This writer published generation `gen` over the zone at `before`
    /// (read under the lock): exact only if nobody published in between.
    pub(super) fn published(&mut self, before: i64, gen: i64) {
        if before != self.last_gen {
            self.exact = false;
        }
        self.last_gen = gen;
    }

    /// The serial moved at generation `gen` (the zone was at `before`) to
    /// `to_soa`: the entry, if exact; the journal restarts there.
    pub(super) fn take(
        &mut self,
        before: i64,
        gen: i64,
        to_soa: JournalRecord,
    ) -> Option<JournalEntry> {
        self.published(before, gen);
        let entry = match (&self.from_soa, self.exact && !self.overflow) {
            (Some(from), true) => Some(JournalEntry {
                gen,
                base_gen: self.base_gen,
                exact: true,
                from_soa: from.clone(),
                to_soa: to_soa.clone(),
                removed: std::mem::take(&mut self.removed),
                added: std::mem::take(&mut self.added),
            }),
            _ => None,
        };
        let imaged = self.imaged;
        *self = MergeJournal::new(gen, Some(gen), Some(to_soa));
        self.imaged = imaged;
        entry
    }
}

/// `before` with `written` merged in as a merge update does: each written
/// RRset takes the written TTL and gains the rdata it lacked.
fn merged(before: &[RRset], written: &[RRset]) -> Vec<RRset> {
    let mut out = before.to_vec();
    for w in written {
        match out.iter_mut().find(|r| r.rtype == w.rtype) {
            Some(r) => {
                r.ttl = w.ttl;
                for rd in &w.rdata {
                    if !r.rdata.contains(rd) {
                        r.rdata.push(rd.clone());
                    }
                }
            }
            None => out.push(w.clone()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Name, RType};

    fn set(t: RType, ttl: u32, rdata: &[&[u8]]) -> RRset {
        RRset::of(t, ttl, rdata)
    }

    fn soa(serial: u8) -> JournalRecord {
        JournalRecord {
            owner: "z.".parse().unwrap(),
            rtype: RType::SOA,
            ttl: 60,
            rdata: vec![serial].into(),
        }
    }

    fn node(name: &str, rrsets: Vec<RRset>) -> NodeWrite {
        NodeWrite {
            name: name.parse::<Name>().unwrap(),
            rrsets,
        }
    }

    #[test]
    fn a_merge_adds_what_was_missing_and_moves_a_changed_ttl() {
        let mut j = MergeJournal::new(5, Some(5), Some(soa(1)));
        let before = [set(RType::A, 60, &[&[1, 1, 1, 1]])];
        let write = node(
            "a.z.",
            vec![set(RType::A, 30, &[&[1, 1, 1, 1], &[2, 2, 2, 2]])],
        );
        j.note_merge(&write, &before);
        j.note_insert(&node("b.z.", vec![set(RType::TXT, 60, &[b"\x01x"])]));
        let entry = j.take(5, 9, soa(2)).expect("exact");
        assert_eq!((entry.base_gen, entry.gen), (5, 9));
        assert_eq!(entry.removed.len(), 1, "the old TTL's record");
        assert_eq!(entry.added.len(), 3, "two A at the new TTL, one TXT");
        assert!(entry
            .added
            .iter()
            .all(|r| r.ttl != 60 || r.rtype == RType::TXT));
    }

    #[test]
    fn another_writer_in_between_leaves_the_entry_out_and_the_next_starts_clean() {
        let mut j = MergeJournal::new(5, Some(5), Some(soa(1)));
        j.published(5, 6);
        j.published(7, 8); // someone published gen 7
        assert!(j.take(8, 9, soa(2)).is_none());
        let entry = j.take(9, 10, soa(3)).expect("exact again from gen 9");
        assert_eq!(entry.base_gen, 9);
        assert_eq!(entry.from_soa, soa(2));
    }

    #[test]
    fn a_zone_whose_serial_moved_elsewhere_or_a_spoiled_one_is_inexact() {
        let mut j = MergeJournal::new(5, Some(4), Some(soa(1)));
        assert!(j.take(5, 6, soa(2)).is_none());
        let mut j = MergeJournal::new(5, Some(5), Some(soa(1)));
        j.spoil();
        assert!(j.take(5, 6, soa(2)).is_none());
    }

    #[test]
    fn a_change_too_large_is_left_out() {
        let mut j = MergeJournal::new(5, Some(5), Some(soa(1)));
        let rd: Vec<Vec<u8>> = (0..=MAX_JOURNAL_RECORDS as u32)
            .map(|i| i.to_be_bytes().to_vec())
            .collect();
        let refs: Vec<&[u8]> = rd.iter().map(|r| r.as_slice()).collect();
        j.note_insert(&node("big.z.", vec![set(RType::A, 60, &refs)]));
        assert!(j.take(5, 6, soa(2)).is_none());
    }
}
