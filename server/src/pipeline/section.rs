//! The RRsets of one reply section, each at most once (NSD's
//! `answer_add_rrset`).
//!
//! ```text
//!  push(owner, rrset) ─► one of its kind at owner already? ── yes ──► skip
//!                        (kind: the type; for RRSIG, the type covered)
//!                     ─► no ──► appended, in order
//!  push_repeated: a DNAME and its RRSIG in the answer section, written
//!                 again each time a chain meets them (as before this type
//!                 existed; Knot and NSD write them once)
//! ```

use dns::{Name, RRset, RType};
use std::sync::Arc;

/// One RRset placed in a reply, under an owner name.
#[derive(Clone, Debug)]
pub struct Placed {
    /// Owner name as it goes on the wire.
    pub owner: Name,
    /// The records.
    pub rrset: Arc<RRset>,
    /// Their RRSIGs from the same read of the node, for a signing stage
    /// that adds them later: a second read could meet a newer node whose
    /// signatures cover other records.
    pub sigs: Option<Arc<RRset>>,
}

/// The RRsets of one section, in the order they go on the wire.
#[derive(Clone, Debug, Default)]
pub struct Section(Vec<Placed>);

impl Section {
    /// Adds `rrset` under `owner` unless the section holds one of the same
    /// kind there already; true when it was added.
    pub fn push(&mut self, owner: &Name, rrset: &Arc<RRset>) -> bool {
        if self.holds(owner, rrset) {
            return false;
        }
        self.push_repeated(owner, rrset);
        true
    }

    /// Like [`Section::push`], keeping `sigs` (the RRSIGs read with
    /// `rrset`) for a later signing stage; they are not placed yet.
    pub fn push_with_sigs(
        &mut self,
        owner: &Name,
        rrset: &Arc<RRset>,
        sigs: Option<&Arc<RRset>>,
    ) -> bool {
        if !self.push(owner, rrset) {
            return false;
        }
        if let Some(last) = self.0.last_mut() {
            last.sigs = sigs.cloned();
        }
        true
    }

    /// Adds `rrset` under `owner` even if it is there already: only for a
    /// DNAME, and its RRSIG, met again along one alias chain.
    pub fn push_repeated(&mut self, owner: &Name, rrset: &Arc<RRset>) {
        self.0.push(Placed {
            owner: owner.clone(),
            rrset: rrset.clone(),
            sigs: None,
        });
    }

    /// True when an RRset of `rrset`'s kind is placed at `owner`.
    pub fn holds(&self, owner: &Name, rrset: &RRset) -> bool {
        self.0
            .iter()
            .any(|p| p.owner == *owner && same_kind(&p.rrset, rrset))
    }

    /// True when an RRset of type `rtype` is placed at `owner`.
    pub fn holds_type(&self, owner: &Name, rtype: RType) -> bool {
        self.0
            .iter()
            .any(|p| p.owner == *owner && p.rrset.rtype == rtype)
    }

    /// Takes every RRset out, leaving the section empty.
    pub fn take(&mut self) -> Vec<Placed> {
        std::mem::take(&mut self.0)
    }
}

impl std::ops::Deref for Section {
    type Target = [Placed];

    fn deref(&self) -> &[Placed] {
        &self.0
    }
}

impl<'a> IntoIterator for &'a Section {
    type Item = &'a Placed;
    type IntoIter = std::slice::Iter<'a, Placed>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

/// True when two RRsets have the same type (and, for RRSIGs, cover the same type).
fn same_kind(a: &RRset, b: &RRset) -> bool {
    let covered = |r: &RRset| {
        r.rdata
            .first()
            .and_then(|rd| rd.get(..2).map(|c| [c[0], c[1]]))
    };
    a.rtype == b.rtype && (a.rtype != RType::RRSIG || covered(a) == covered(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rrset(rtype: RType, rdata: &[u8]) -> Arc<RRset> {
        Arc::new(RRset {
            rtype,
            ttl: 300,
            rdata: vec![rdata.into()],
        })
    }

    #[test]
    fn an_rrset_goes_in_once_and_rrsigs_by_the_type_they_cover() {
        let owner: Name = "a.example.".parse().unwrap();
        let other: Name = "b.example.".parse().unwrap();
        let a = rrset(RType::A, &[192, 0, 2, 1]);
        let sig_a = rrset(RType::RRSIG, &[0, 1, 13, 2]);
        let sig_aaaa = rrset(RType::RRSIG, &[0, 28, 13, 2]);
        let mut section = Section::default();
        assert!(section.push(&owner, &a));
        assert!(!section.push(&owner, &rrset(RType::A, &[192, 0, 2, 2])));
        assert!(section.push(&other, &a));
        assert!(section.push(&owner, &sig_a));
        assert!(section.push(&owner, &sig_aaaa));
        assert!(!section.push(&owner, &sig_a));
        section.push_repeated(&owner, &a);
        let placed: Vec<_> = section
            .iter()
            .map(|p| (p.owner.clone(), p.rrset.rtype))
            .collect();
        assert_eq!(placed.len(), 5);
        assert!(section.holds_type(&other, RType::A));
        assert!(!section.holds_type(&other, RType::AAAA));
    }
}
