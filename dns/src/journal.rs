//! A zone journal's content: what one change removed and added, record by
//! record, as IXFR (RFC 1995) sends it. No storage here.
//!
//! ```text
//!  one name: RRsets before ─┐
//!                           ├─ record_changes ─► (removed, added)
//!            RRsets after ──┘   per type: same TTL ─► the rdata that went
//!                               and came; TTL changed ─► all old out, all
//!                               new in; the SOA is left to the framing
//!  JournalEntry { from SOA, to SOA, removed, added }: one IXFR difference
//!  sequence (RFC 1995 §4), old SOA first, new SOA before the additions
//! ```

use crate::name::Name;
use crate::rrset::RRset;
use crate::rtype::RType;

/// One resource record, owner and all.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct JournalRecord {
    /// Its owner.
    pub owner: Name,
    /// Its type.
    pub rtype: RType,
    /// Its TTL.
    pub ttl: u32,
    /// Its rdata, uncompressed wire format.
    pub rdata: Box<[u8]>,
}

/// One change of a zone: from one SOA to the next, the records removed and
/// the records added (neither holds the SOA).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JournalEntry {
    /// The generation the change published.
    pub gen: i64,
    /// The zone's generation before it.
    pub base_gen: i64,
    /// True when the zone's serial was set at `base_gen`: the content a
    /// secondary holds at the old serial is the content this diffs from.
    pub exact: bool,
    /// The apex SOA before.
    pub from_soa: JournalRecord,
    /// The apex SOA after.
    pub to_soa: JournalRecord,
    /// Records that went.
    pub removed: Vec<JournalRecord>,
    /// Records that came.
    pub added: Vec<JournalRecord>,
}

/// The records of `owner` that went and came between `before` and
/// `after`, the SOA left out (IXFR frames each change with its SOAs).
pub fn record_changes(
    owner: &Name,
    before: &[RRset],
    after: &[RRset],
) -> (Vec<JournalRecord>, Vec<JournalRecord>) {
    let (mut removed, mut added) = (Vec::new(), Vec::new());
    let empty = |t: RType| RRset {
        rtype: t,
        ttl: 0,
        rdata: Vec::new(),
    };
    let find = |sets: &[RRset], t: RType| sets.iter().find(|r| r.rtype == t).cloned();
    let mut types: Vec<RType> = before.iter().chain(after).map(|r| r.rtype).collect();
    types.sort();
    types.dedup();
    for t in types.into_iter().filter(|t| *t != RType::SOA) {
        let old = find(before, t).unwrap_or_else(|| empty(t));
        let new = find(after, t).unwrap_or_else(|| empty(t));
        let same_ttl = old.ttl == new.ttl || old.rdata.is_empty() || new.rdata.is_empty();
        let record = |set: &RRset, rd: &[u8]| JournalRecord {
            owner: owner.clone(),
            rtype: t,
            ttl: set.ttl,
            rdata: rd.into(),
        };
        for rd in &old.rdata {
            if !same_ttl || !new.rdata.contains(rd) {
                removed.push(record(&old, rd));
            }
        }
        for rd in &new.rdata {
            if !same_ttl || !old.rdata.contains(rd) {
                added.push(record(&new, rd));
            }
        }
    }
    (removed, added)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(t: RType, ttl: u32, rdata: &[&[u8]]) -> RRset {
        RRset::of(t, ttl, rdata)
    }

    #[test]
    fn only_what_went_and_came_is_listed() {
        let owner: Name = "www.example.".parse().unwrap();
        let before = [set(RType::A, 60, &[&[1, 1, 1, 1], &[2, 2, 2, 2]])];
        let after = [
            set(RType::A, 60, &[&[2, 2, 2, 2], &[3, 3, 3, 3]]),
            set(RType::TXT, 30, &[b"\x02hi"]),
        ];
        let (removed, added) = record_changes(&owner, &before, &after);
        assert_eq!(removed.len(), 1);
        assert_eq!(&*removed[0].rdata, &[1, 1, 1, 1]);
        let added: Vec<_> = added
            .iter()
            .map(|r| (r.rtype, r.ttl, r.rdata.to_vec()))
            .collect();
        assert_eq!(
            added,
            vec![
                (RType::A, 60, vec![3, 3, 3, 3]),
                (RType::TXT, 30, b"\x02hi".to_vec())
            ]
        );
    }

    #[test]
    fn a_new_ttl_replaces_the_whole_rrset_and_the_soa_is_left_out() {
        let owner: Name = "example.".parse().unwrap();
        let before = [
            set(RType::A, 60, &[&[1, 1, 1, 1]]),
            set(RType::SOA, 60, &[b"old"]),
        ];
        let after = [
            set(RType::A, 300, &[&[1, 1, 1, 1]]),
            set(RType::SOA, 60, &[b"new"]),
        ];
        let (removed, added) = record_changes(&owner, &before, &after);
        assert_eq!((removed.len(), removed[0].ttl), (1, 60));
        assert_eq!((added.len(), added[0].ttl), (1, 300));
        let (gone, came) = record_changes(&owner, &after, &[]);
        assert_eq!((gone.len(), came.len()), (1, 0), "the SOA is never listed");
    }
}
