//! Record edits applied to one owner name, by the rules of RFC 2136 §3.4.2.
//!
//! ```text
//!  RecordEdit (add, delete records, delete RRset, delete name, replace RRset)
//!     ─► NodeEdit::apply ─► Edited::{Changed, Unchanged, Ignored(why)}
//!          the name's RRsets edited in memory (`after`), and per type what
//!          storage must write: RRsetWrite::{Set, Remove, Delta}
//!  too_large: an RRset edited past what one message holds (rrset.rs)
//!     ─► the caller refuses the whole change-set
//!  Prerequisite (RFC 2136 §2.4) ─► check_prerequisites ─► Ok | Unmet(rcode)
//!     (prerequisite.rs)
//! ```
//!
//! The rules hold for every caller, not only DNS UPDATE (docs/updates.md):
//! * the SOA is never deleted; an add replaces it only with a later serial;
//! * the apex NS RRset is never deleted, nor its last record;
//! * deleting the apex name deletes all but its SOA and NS;
//! * no CNAME beside other data, no other data beside a CNAME (RRSIG and
//!   NSEC excepted); an added CNAME replaces the one there;
//! * no type the signer owns (RRSIG, NSEC, NSEC3, NSEC3PARAM, DNSKEY, CDS,
//!   CDNSKEY) is edited, in any zone: signatures are stored with what they
//!   cover, and a DNSKEY in a zone not secured would pass it for signed.
//!
//! `Delta` lets storage apply adds and deletes as set operations, so a
//! concurrent merge into the same RRset keeps its records; `Set` and
//! `Remove` say what the RRset is, whatever was stored (a replace).

use crate::rrset::RRset;
use crate::serial::{serial_gt, soa_serial};
use crate::{Name, RType};
use std::collections::BTreeMap;
use std::fmt;

/// One change to the records of a zone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecordEdit {
    /// Adds records to an RRset (created if absent); its TTL becomes the
    /// given one.
    Add {
        /// Owner name.
        name: Name,
        /// The records to add, with their TTL.
        rrset: RRset,
    },
    /// Deletes these records from an RRset (those not there are ignored).
    DeleteRecords {
        /// Owner name.
        name: Name,
        /// Their type.
        rtype: RType,
        /// The rdata of each record to delete.
        rdata: Vec<Box<[u8]>>,
    },
    /// Deletes a whole RRset.
    DeleteRRset {
        /// Owner name.
        name: Name,
        /// The RRset's type.
        rtype: RType,
    },
    /// Deletes every RRset of a name.
    DeleteName {
        /// The name.
        name: Name,
    },
    /// Makes an RRset exactly this (empty rdata: deletes it).
    ReplaceRRset {
        /// Owner name.
        name: Name,
        /// The RRset as it must be.
        rrset: RRset,
    },
}

impl RecordEdit {
    /// Adds the records `rdata` of type `rtype` at `name`, with `ttl`.
    pub fn add(name: Name, rtype: RType, ttl: u32, rdata: Vec<Box<[u8]>>) -> RecordEdit {
        RecordEdit::Add {
            name,
            rrset: RRset { rtype, ttl, rdata },
        }
    }

    /// The owner name it edits.
    pub fn name(&self) -> &Name {
        match self {
            RecordEdit::Add { name, .. }
            | RecordEdit::DeleteRecords { name, .. }
            | RecordEdit::DeleteRRset { name, .. }
            | RecordEdit::DeleteName { name }
            | RecordEdit::ReplaceRRset { name, .. } => name,
        }
    }

    /// The type it edits; `None` for a whole name.
    pub fn rtype(&self) -> Option<RType> {
        match self {
            RecordEdit::Add { rrset, .. } | RecordEdit::ReplaceRRset { rrset, .. } => {
                Some(rrset.rtype)
            }
            RecordEdit::DeleteRecords { rtype, .. } | RecordEdit::DeleteRRset { rtype, .. } => {
                Some(*rtype)
            }
            RecordEdit::DeleteName { .. } => None,
        }
    }
}

/// Why an edit was left out, as RFC 2136 §3.4.2 ignores it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ignored {
    /// A type the signer maintains (RRSIG, NSEC, NSEC3, NSEC3PARAM,
    /// DNSKEY, CDS, CDNSKEY), in any zone.
    SignerOwned(RType),
    /// A CNAME beside other data, or other data beside a CNAME.
    CnameConflict,
    /// An SOA whose serial is not after the one stored.
    SoaNotNewer,
    /// An SOA anywhere but at the apex.
    SoaOutsideApex,
    /// The SOA, or the apex NS RRset, deleted.
    ApexSoaOrNs,
    /// The last NS record at the apex deleted.
    LastApexNs,
}

impl fmt::Display for Ignored {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ignored::SignerOwned(t) => write!(f, "{t} records are maintained by the signer"),
            Ignored::CnameConflict => f.write_str("a CNAME cannot share its name with other data"),
            Ignored::SoaNotNewer => f.write_str("the SOA serial is not after the one stored"),
            Ignored::SoaOutsideApex => f.write_str("an SOA belongs at the zone apex only"),
            Ignored::ApexSoaOrNs => f.write_str("the apex SOA and NS RRsets cannot be deleted"),
            Ignored::LastApexNs => f.write_str("the last NS record at the apex cannot be deleted"),
        }
    }
}

/// What one edit did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edited {
    /// The name's records changed.
    Changed,
    /// Nothing to do (records already there, or already absent).
    Unchanged,
    /// Left out, for this reason.
    Ignored(Ignored),
}

/// What a change-set does when RFC 2136's rules leave one of its edits out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WhenIgnored {
    /// Leave that edit out and apply the rest (DNS UPDATE, RFC 2136 §3.4.2).
    ApplyTheRest,
    /// Apply nothing (the HTTP API: PowerDNS applies a PATCH whole or not).
    ApplyNothing,
}

/// One change-set: the edits applied to one zone together (one
/// generation, one serial), the prerequisites they wait on (RFC 2136 §3.2)
/// and what an edit the rules leave out does to the rest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChangeSet {
    /// The zone's apex.
    pub zone: Name,
    /// Checked first, against the zone as served; unmet, nothing is written.
    pub prerequisites: Vec<Prerequisite>,
    /// The edits, in order.
    pub edits: Vec<RecordEdit>,
    /// Whether an ignored edit skips only itself or the whole set.
    pub when_ignored: WhenIgnored,
}

impl ChangeSet {
    /// `edits` to `zone`, without prerequisites, an ignored edit skipped.
    pub fn new(zone: Name, edits: Vec<RecordEdit>) -> Self {
        ChangeSet {
            zone,
            prerequisites: Vec::new(),
            edits,
            when_ignored: WhenIgnored::ApplyTheRest,
        }
    }

    /// The same, applied only when `prerequisites` hold.
    pub fn when(mut self, prerequisites: Vec<Prerequisite>) -> Self {
        self.prerequisites = prerequisites;
        self
    }

    /// The same, applied whole or not at all.
    pub fn whole(mut self) -> Self {
        self.when_ignored = WhenIgnored::ApplyNothing;
        self
    }

    /// The first name an edit or a prerequisite is about that lies
    /// outside the zone, if any.
    pub fn outside_zone(&self) -> Option<&Name> {
        let edited = self.edits.iter().map(RecordEdit::name);
        let wanted = self.prerequisites.iter().map(Prerequisite::name);
        edited
            .chain(wanted)
            .find(|n| !n.is_subdomain_of(&self.zone))
    }
}

/// What storage must write for one RRset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RRsetWrite {
    /// The RRset becomes exactly this.
    Set(RRset),
    /// The RRset goes.
    Remove,
    /// Records added and removed, the rest kept as stored.
    Delta {
        /// Records to add.
        add: Vec<Box<[u8]>>,
        /// Records to remove.
        remove: Vec<Box<[u8]>>,
        /// The RRset's new TTL, when an add set it.
        ttl: Option<u32>,
    },
}

/// The edits of one owner name, applied in order to its RRsets as stored.
#[derive(Clone, Debug)]
pub struct NodeEdit {
    apex: Name,
    name: Name,
    secured: bool,
    /// The RRsets as stored, before any edit.
    before: Vec<RRset>,
    after: Vec<RRset>,
    writes: BTreeMap<RType, RRsetWrite>,
}

/// Types that may share a name with a CNAME (RFC 4035 §2.5).
fn beside_cname(t: RType) -> bool {
    matches!(t, RType::CNAME | RType::RRSIG | RType::NSEC)
}

impl NodeEdit {
    /// Starts editing `name` (in the zone at `apex`) holding `stored`.
    pub fn new(apex: &Name, name: &Name, stored: Vec<RRset>, secured: bool) -> NodeEdit {
        NodeEdit {
            apex: apex.clone(),
            name: name.clone(),
            secured,
            before: stored.clone(),
            after: stored,
            writes: BTreeMap::new(),
        }
    }

    /// The owner name.
    pub fn name(&self) -> &Name {
        &self.name
    }

    /// The name's RRsets as stored, before any edit.
    pub fn before(&self) -> &[RRset] {
        &self.before
    }

    /// The name's RRsets with every edit so far applied.
    pub fn after(&self) -> &[RRset] {
        &self.after
    }

    /// True when the name holds nothing of its own any more (what the
    /// signer maintains aside, in a secured zone).
    pub fn is_empty(&self) -> bool {
        self.after
            .iter()
            .all(|r| r.rdata.is_empty() || (self.secured && r.rtype.is_signer_owned()))
    }

    /// What storage must write, per type whose RRset the edits changed
    /// (edits that undo each other, an add and a delete of one record,
    /// write nothing).
    pub fn writes(&self) -> Vec<(RType, &RRsetWrite)> {
        let state = |sets: &[RRset], t: RType| {
            sets.iter()
                .find(|r| r.rtype == t && !r.rdata.is_empty())
                .map(sorted)
        };
        self.writes
            .iter()
            .filter(|(t, _)| state(&self.before, **t) != state(&self.after, **t))
            .map(|(t, w)| (*t, w))
            .collect()
    }

    /// Why the edits are refused as a whole, when an RRset they changed
    /// became too large for any DNS message (`RRset::too_large`).
    pub fn too_large(&self) -> Option<String> {
        self.after
            .iter()
            .filter(|r| self.writes.contains_key(&r.rtype))
            .find_map(|r| r.too_large(&self.name))
    }

    fn get(&self, t: RType) -> Option<&RRset> {
        self.after.iter().find(|r| r.rtype == t)
    }

    fn at_apex(&self) -> bool {
        self.name == self.apex
    }

    /// Applies one edit of this name (see the module documentation).
    pub fn apply(&mut self, edit: &RecordEdit) -> Edited {
        if let Some(why) = self.refusal(edit) {
            return Edited::Ignored(why);
        }
        match edit {
            RecordEdit::Add { rrset, .. } => self.add(rrset),
            RecordEdit::DeleteRecords { rtype, rdata, .. } => self.delete_records(*rtype, rdata),
            RecordEdit::DeleteRRset { rtype, .. } => self.set(*rtype, None),
            RecordEdit::DeleteName { .. } => self.delete_name(),
            RecordEdit::ReplaceRRset { rrset, .. } if rrset.rdata.is_empty() => {
                self.set(rrset.rtype, None)
            }
            RecordEdit::ReplaceRRset { rrset, .. } => self.set(rrset.rtype, Some(dedup(rrset))),
        }
    }

    /// The rule an edit breaks, if any.
    fn refusal(&self, edit: &RecordEdit) -> Option<Ignored> {
        let t = edit.rtype()?;
        // In every zone: a DNSKEY or NSEC3PARAM in a zone not secured would
        // make servers take it for signed, with no signatures to send.
        if t.is_signer_owned() {
            return Some(Ignored::SignerOwned(t));
        }
        let deletes_all = match edit {
            RecordEdit::DeleteRRset { .. } => true,
            RecordEdit::ReplaceRRset { rrset, .. } => rrset.rdata.is_empty(),
            _ => false,
        };
        if deletes_all && self.at_apex() && matches!(t, RType::SOA | RType::NS) {
            return Some(Ignored::ApexSoaOrNs);
        }
        match edit {
            RecordEdit::Add { rrset, .. } | RecordEdit::ReplaceRRset { rrset, .. }
                if !rrset.rdata.is_empty() =>
            {
                self.add_refusal(rrset, matches!(edit, RecordEdit::Add { .. }))
            }
            RecordEdit::DeleteRecords { rdata, .. } => self.delete_refusal(t, rdata),
            _ => None,
        }
    }

    fn add_refusal(&self, rrset: &RRset, add: bool) -> Option<Ignored> {
        let t = rrset.rtype;
        let others = self
            .after
            .iter()
            .any(|r| !beside_cname(r.rtype) && !r.rdata.is_empty());
        if t == RType::CNAME && others {
            return Some(Ignored::CnameConflict);
        }
        if !beside_cname(t) && self.get(RType::CNAME).is_some_and(|c| !c.rdata.is_empty()) {
            return Some(Ignored::CnameConflict);
        }
        if t == RType::SOA && !self.at_apex() {
            return Some(Ignored::SoaOutsideApex);
        }
        if t == RType::SOA && add {
            let old = self
                .get(t)
                .and_then(|r| r.rdata.first())
                .and_then(|r| soa_serial(r));
            let new = rrset.rdata.first().and_then(|r| soa_serial(r));
            if let (Some(old), Some(new)) = (old, new) {
                if !serial_gt(new, old) {
                    return Some(Ignored::SoaNotNewer);
                }
            }
        }
        None
    }

    fn delete_refusal(&self, t: RType, rdata: &[Box<[u8]>]) -> Option<Ignored> {
        if t == RType::SOA {
            return Some(Ignored::ApexSoaOrNs);
        }
        if t == RType::NS && self.at_apex() {
            let left = self
                .get(t)
                .map_or(0, |r| r.rdata.iter().filter(|x| !rdata.contains(x)).count());
            if left == 0 {
                return Some(Ignored::LastApexNs);
            }
        }
        None
    }

    /// Adds records; a CNAME or SOA replaces the one there (one per name).
    fn add(&mut self, rrset: &RRset) -> Edited {
        if rrset.rdata.is_empty() {
            return Edited::Unchanged;
        }
        if matches!(rrset.rtype, RType::CNAME | RType::SOA) {
            let one = RRset {
                rtype: rrset.rtype,
                ttl: rrset.ttl,
                rdata: rrset.rdata[..1].to_vec(),
            };
            return self.set(rrset.rtype, Some(one));
        }
        let t = rrset.rtype;
        let fresh: Vec<Box<[u8]>> = match self.get(t) {
            Some(r) => dedup(rrset)
                .rdata
                .into_iter()
                .filter(|rd| !r.contains(rd))
                .collect(),
            None => dedup(rrset).rdata,
        };
        // A record already there is skipped whole, its TTL too (RFC 2136
        // §3.4.2.2 compares records without their TTL; Knot does the same).
        if fresh.is_empty() {
            return Edited::Unchanged;
        }
        match self.after.iter_mut().find(|r| r.rtype == t) {
            Some(r) => {
                r.ttl = rrset.ttl;
                r.rdata.extend(fresh.iter().cloned());
            }
            None => self.after.push(RRset {
                rtype: t,
                ttl: rrset.ttl,
                rdata: fresh.clone(),
            }),
        }
        self.note_delta(t, fresh, Vec::new(), Some(rrset.ttl));
        Edited::Changed
    }

    fn delete_records(&mut self, t: RType, rdata: &[Box<[u8]>]) -> Edited {
        let Some(r) = self.after.iter_mut().find(|r| r.rtype == t) else {
            return Edited::Unchanged;
        };
        let gone: Vec<Box<[u8]>> = r
            .rdata
            .iter()
            .filter(|x| rdata.contains(x))
            .cloned()
            .collect();
        if gone.is_empty() {
            return Edited::Unchanged;
        }
        r.rdata.retain(|x| !gone.contains(x));
        self.after.retain(|r| !r.rdata.is_empty());
        self.note_delta(t, Vec::new(), gone, None);
        Edited::Changed
    }

    fn delete_name(&mut self) -> Edited {
        let apex = self.at_apex();
        let secured = self.secured;
        let doomed: Vec<RType> = self
            .after
            .iter()
            .map(|r| r.rtype)
            .filter(|t| !(apex && matches!(*t, RType::SOA | RType::NS)))
            .filter(|t| !(secured && t.is_signer_owned()))
            .collect();
        if doomed.is_empty() {
            return Edited::Unchanged;
        }
        for t in doomed {
            self.set(t, None);
        }
        Edited::Changed
    }

    /// Makes the RRset of type `t` exactly `to` (`None`: absent).
    fn set(&mut self, t: RType, to: Option<RRset>) -> Edited {
        let before = self.get(t).cloned();
        if before.as_ref().map(sorted) == to.as_ref().map(sorted) {
            return Edited::Unchanged;
        }
        self.after.retain(|r| r.rtype != t);
        let write = match to {
            Some(r) => {
                self.after.push(r.clone());
                RRsetWrite::Set(r)
            }
            None => RRsetWrite::Remove,
        };
        self.writes.insert(t, write);
        Edited::Changed
    }

    /// Folds records added or removed into what storage writes for `t`.
    fn note_delta(
        &mut self,
        t: RType,
        add: Vec<Box<[u8]>>,
        remove: Vec<Box<[u8]>>,
        ttl: Option<u32>,
    ) {
        let now = self.get(t).cloned();
        let write = self.writes.entry(t).or_insert(RRsetWrite::Delta {
            add: Vec::new(),
            remove: Vec::new(),
            ttl: None,
        });
        match write {
            RRsetWrite::Delta {
                add: a,
                remove: r,
                ttl: tt,
            } => {
                a.retain(|x| !remove.contains(x));
                r.retain(|x| !add.contains(x));
                a.extend(add);
                r.extend(remove);
                if ttl.is_some() {
                    *tt = ttl;
                }
            }
            // Already replaced in this edit: what it is now is what it must be.
            _ => {
                *write = match now {
                    Some(r) => RRsetWrite::Set(r),
                    None => RRsetWrite::Remove,
                }
            }
        }
    }
}

/// The RRset with duplicate records dropped (first kept).
fn dedup(rrset: &RRset) -> RRset {
    let mut out = RRset {
        rtype: rrset.rtype,
        ttl: rrset.ttl,
        rdata: Vec::with_capacity(rrset.rdata.len()),
    };
    for rd in &rrset.rdata {
        if !out.contains(rd) {
            out.rdata.push(rd.clone());
        }
    }
    out
}

/// TTL and sorted rdata: two RRsets equal as sets compare equal.
fn sorted(r: &RRset) -> (u32, Vec<Box<[u8]>>) {
    let mut rd = r.rdata.clone();
    rd.sort();
    (r.ttl, rd)
}

mod prerequisite;
pub use prerequisite::{check as check_prerequisites, Prerequisite, Unmet};

#[cfg(test)]
mod tests;
