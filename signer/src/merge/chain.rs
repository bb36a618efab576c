//! The merge signer's copy of the NSEC or NSEC3 chain: chain keys and
//! records, who is a member, and the relinking of predecessors and
//! successors as names join or leave.
//!
//! ```text
//!  chain: key (owner's canonical key, or its NSEC3 hash) ─► Link { owner, record }
//!  join ─► predecessor found (successor) ─► relink_predecessor ─► put_relinked
//!  leave ─► point_predecessor_at the next member ─► put_relinked
//!  dangling (a predecessor pointing at a deleted name) ─► repair_dangling
//!  nodes re-signed elsewhere ─► refresh_links (the copy takes their records)
//! ```

use super::{Link, MergeSigner};
use crate::plan::signer_owned;
use backend_mongo::dnssec_store::{FullNode, SignedRRset};
use dns::dnssec::{bitmap_types, nsec3_hash, type_bitmap};
use dns::encoding::{base32hex, from_base32hex};
use dns::{Name, RType};
use std::collections::{BTreeMap, BTreeSet};

impl MergeSigner {
    pub(super) fn chain_key(&self, name: &Name) -> String {
        match &self.nsec3 {
            Some(c) => base32hex(&nsec3_hash(name, &c.salt, c.iterations)),
            None => name.canonical_key(),
        }
    }

    /// The NSEC/NSEC3 rdata for `owner` (types `types`) pointing at `next`.
    pub(super) fn chain_rdata(
        &self,
        next_key: &str,
        next_owner: &Name,
        types: &[RType],
    ) -> Vec<u8> {
        match &self.nsec3 {
            None => {
                let mut t = types.to_vec();
                t.push(RType::NSEC);
                t.push(RType::RRSIG);
                let mut rd = next_owner.as_wire().to_vec();
                rd.extend_from_slice(&type_bitmap(&t));
                rd
            }
            Some(c) => {
                let next = from_base32hex(next_key).unwrap_or_default();
                let mut rd = vec![1, u8::from(c.opt_out)];
                rd.extend_from_slice(&c.iterations.to_be_bytes());
                rd.push(c.salt.len() as u8);
                rd.extend_from_slice(&c.salt);
                rd.push(next.len() as u8);
                rd.extend_from_slice(&next);
                rd.extend_from_slice(&type_bitmap(types));
                rd
            }
        }
    }

    /// Replaces the "next" field of a chain record, keeping its bitmap.
    pub(super) fn relink(&self, record: &[u8], next_key: &str, next_owner: &Name) -> Vec<u8> {
        match &self.nsec3 {
            None => {
                let used = Name::from_wire_prefix(record).map_or(record.len(), |(_, n)| n);
                let mut rd = next_owner.as_wire().to_vec();
                rd.extend_from_slice(&record[used..]);
                rd
            }
            Some(_) => {
                let salt_len = record.get(4).copied().unwrap_or(0) as usize;
                let at = 5 + salt_len;
                let hash_len = record.get(at).copied().unwrap_or(0) as usize;
                let next = from_base32hex(next_key).unwrap_or_default();
                let mut rd = record[..at].to_vec();
                rd.push(next.len() as u8);
                rd.extend_from_slice(&next);
                rd.extend_from_slice(record.get(at + 1 + hash_len..).unwrap_or(&[]));
                rd
            }
        }
    }

    /// The types the chain record of `node` lists.
    pub(super) fn chain_types(&self, node: &FullNode, delegation: bool) -> Vec<RType> {
        let mut types: Vec<RType> = node
            .rrsets
            .iter()
            .map(|r| r.rrset.rtype)
            .filter(|t| !matches!(*t, RType::RRSIG | RType::NSEC | RType::NSEC3))
            .collect();
        if self.nsec3.is_some() {
            let signed = if delegation {
                types.contains(&RType::DS)
            } else {
                !types.is_empty()
            };
            if signed {
                types.push(RType::RRSIG);
            }
        }
        types
    }

    /// True when `node` belongs in the chain.
    pub(super) fn is_member(
        &self,
        node: &FullNode,
        exists: bool,
        occluded: bool,
        delegation: bool,
    ) -> bool {
        if !exists || occluded {
            return false;
        }
        match &self.nsec3 {
            None => node.rrsets.iter().any(|r| !signer_owned(r.rrset.rtype)),
            Some(c) => !delegation || !c.opt_out || node.get(RType::DS).is_some(),
        }
    }

    /// The key and owner of the name a chain record points to.
    pub(super) fn next_of(&self, rd: &[u8]) -> (String, Name) {
        match &self.nsec3 {
            None => {
                let next = Name::from_wire_prefix(rd)
                    .map(|(n, _)| n)
                    .unwrap_or_else(|_| self.zone.clone());
                (next.canonical_key(), next)
            }
            Some(_) => {
                let salt_len = rd.get(4).copied().unwrap_or(0) as usize;
                let at = 5 + salt_len;
                let len = rd.get(at).copied().unwrap_or(0) as usize;
                let next = base32hex(rd.get(at + 1..at + 1 + len).unwrap_or(&[]));
                let owner = self
                    .zone
                    .prepend(next.as_bytes())
                    .unwrap_or_else(|_| self.zone.clone());
                (next, owner)
            }
        }
    }

    /// The types a chain record's bitmap lists.
    pub(super) fn bitmap_of(&self, rd: &[u8]) -> Vec<RType> {
        match &self.nsec3 {
            None => {
                let used = Name::from_wire_prefix(rd).map_or(rd.len(), |(_, n)| n);
                bitmap_types(&rd[used..])
            }
            Some(_) => {
                let salt_len = rd.get(4).copied().unwrap_or(0) as usize;
                let at = 5 + salt_len;
                let len = rd.get(at).copied().unwrap_or(0) as usize;
                bitmap_types(rd.get(at + 1 + len..).unwrap_or(&[]))
            }
        }
    }

    /// Points the predecessor of `key` at `key` (`Some`) or past it
    /// (`None`: `key` leaves the chain), in memory; the predecessor's new
    /// record goes to `neighbours`, unsigned. Returns the predecessor's old
    /// next, or `None` when the chain has no other member.
    pub(super) fn relink_predecessor(
        &mut self,
        key: &str,
        owner: Option<&Name>,
        neighbours: &mut BTreeMap<String, Link>,
    ) -> Option<(String, Name)> {
        let pred_key = self
            .chain
            .range(..key.to_string())
            .next_back()
            .or_else(|| self.chain.iter().next_back())
            .map(|(k, _)| k.clone())
            .filter(|k| k != key)?;
        let pred = self.chain[&pred_key].clone();
        let old_rd = &pred.record.rrset.rdata[0];
        let old_next = self.next_of(old_rd);
        let (next_key, next_owner) = match owner {
            Some(o) => (key.to_string(), o.clone()),
            None => {
                let leaving = &self.chain.get(key)?.record.rrset.rdata[0];
                self.next_of(leaving)
            }
        };
        let relinked = self.relink(old_rd, &next_key, &next_owner);
        self.put_relinked(pred_key, &pred, relinked, neighbours);
        Some(old_next)
    }

    /// The member after `key` in the chain (wrapping), `None` when `key`
    /// is the only one.
    pub(super) fn successor(&self, key: &str) -> Option<(String, Name)> {
        use std::ops::Bound::{Excluded, Unbounded};
        self.chain
            .range::<str, _>((Excluded(key), Unbounded))
            .next()
            .or_else(|| self.chain.iter().next())
            .filter(|(k, _)| k.as_str() != key)
            .map(|(k, link)| (k.clone(), link.owner.clone()))
    }

    /// Points the predecessor of member `key` (chain owner `owner`) at it
    /// when it points elsewhere, in memory; its new record goes to
    /// `neighbours`.
    pub(super) fn point_predecessor_at(
        &mut self,
        key: &str,
        owner: &Name,
        neighbours: &mut BTreeMap<String, Link>,
    ) {
        let Some((pred_key, pred)) = self
            .chain
            .range::<str, _>((std::ops::Bound::Unbounded, std::ops::Bound::Excluded(key)))
            .next_back()
            .or_else(|| self.chain.iter().next_back())
            .filter(|(k, _)| k.as_str() != key)
            .map(|(k, l)| (k.clone(), l.clone()))
        else {
            return;
        };
        if self.next_of(&pred.record.rrset.rdata[0]).0 == key {
            return;
        }
        let relinked = self.relink(&pred.record.rrset.rdata[0], key, owner);
        self.put_relinked(pred_key, &pred, relinked, neighbours);
    }

    /// Stores `pred`'s chain record with rdata `relinked` (unsigned), in
    /// memory and in `neighbours` (to be signed and written).
    pub(super) fn put_relinked(
        &mut self,
        pred_key: String,
        pred: &Link,
        relinked: Vec<u8>,
        neighbours: &mut BTreeMap<String, Link>,
    ) {
        self.chain_was
            .entry(pred_key.clone())
            .or_insert_with(|| Some(pred.record.clone()));
        let mut record = pred.record.clone();
        record.rrset.rdata = vec![relinked.into_boxed_slice()];
        record.sd = None;
        let link = Link {
            owner: pred.owner.clone(),
            record,
        };
        self.chain.insert(pred_key.clone(), link.clone());
        neighbours.insert(pred_key, link);
    }

    /// A name not in the chain whose predecessor still points to it (a
    /// writer killed between deleting its node and relinking): the
    /// predecessor is pointed at the next member after it, in memory; its
    /// new record goes to `neighbours`. Does nothing when nothing points there.
    pub(super) fn repair_dangling(&mut self, key: &str, neighbours: &mut BTreeMap<String, Link>) {
        let last = || self.chain.iter().next_back();
        let Some((pred_key, pred)) = self
            .chain
            .range(..key.to_string())
            .next_back()
            .or_else(last)
        else {
            return;
        };
        let (pred_key, pred) = (pred_key.clone(), pred.clone());
        if self.next_of(&pred.record.rrset.rdata[0]).0 != key {
            return;
        }
        let first = || self.chain.iter().next();
        let Some((next_key, next)) = self.chain.range(key.to_string()..).next().or_else(first)
        else {
            return;
        };
        let relinked = self.relink(&pred.record.rrset.rdata[0], next_key, &next.owner);
        self.put_relinked(pred_key, &pred, relinked, neighbours);
    }

    /// Takes the chain records of `nodes` (re-signed elsewhere, content
    /// unchanged) into the copy held, so that relinking never writes back
    /// their old signatures.
    pub fn refresh_links(&mut self, nodes: &[FullNode]) {
        let chain_type = if self.nsec3.is_some() {
            RType::NSEC3
        } else {
            RType::NSEC
        };
        for n in nodes {
            let (Some(dk), Some(record)) = (&n.dk, n.get(chain_type)) else {
                continue;
            };
            if let Some(link) = self.chain.get_mut(dk) {
                link.record = record.clone();
            }
        }
    }

    /// Sets (or, for `None`, removes) the chain link at `key`.
    pub(super) fn put_link(&mut self, key: String, owner: &Name, record: Option<SignedRRset>) {
        match record {
            Some(record) => {
                let owner = owner.clone();
                self.chain.insert(key, Link { owner, record });
            }
            None => {
                self.chain.remove(&key);
            }
        }
    }

    /// True when the chain shows that `name` is not stored: it is no
    /// member, no member lies below it (so it is no empty non-terminal),
    /// and no ancestor in the chain is a delegation or a DNAME (so it is
    /// no occluded name). Sound for chains that list every stored name but
    /// the occluded ones: NSEC, and NSEC3 without opt-out (RFC 5155 §7.1:
    /// empty non-terminals have their NSEC3 too). A name written unsigned
    /// and not signed yet is not in the chain: a writer that trusts this
    /// finds it when its insert meets the stored node (and merges).
    pub fn proves_absent(&self, name: &Name) -> bool {
        use std::ops::Bound::{Excluded, Unbounded};
        if name == &self.zone || !name.is_subdomain_of(&self.zone) {
            return false;
        }
        if self.nsec3.as_ref().is_some_and(|c| c.opt_out) {
            return false;
        }
        let key = self.chain_key(name);
        if self.chain.contains_key(&key) {
            return false;
        }
        if self.nsec3.is_none() {
            let next = self
                .chain
                .range::<str, _>((Excluded(key.as_str()), Unbounded));
            if next.take(1).any(|(_, l)| l.owner.is_subdomain_of(name)) {
                return false;
            }
        }
        let depth = name.label_count() - self.zone.label_count();
        !name
            .ancestors()
            .skip(1)
            .take(depth.saturating_sub(1))
            .any(|a| self.is_cut_in_chain(&a))
    }

    /// True when `name` is in the chain as a delegation or DNAME owner.
    fn is_cut_in_chain(&self, name: &Name) -> bool {
        self.chain.get(&self.chain_key(name)).is_some_and(|l| {
            let types = self.bitmap_of(&l.record.rrset.rdata[0]);
            types.contains(&RType::DNAME)
                || (types.contains(&RType::NS) && !types.contains(&RType::SOA))
        })
    }

    /// The names among `names` (and their ancestors below the apex) that
    /// the chain shows are not stored ([`MergeSigner::proves_absent`]).
    pub fn absent_among<'a>(&self, names: impl Iterator<Item = &'a Name>) -> BTreeSet<Name> {
        let mut out = BTreeSet::new();
        for n in names.filter(|n| n.is_subdomain_of(&self.zone)) {
            for a in n.ancestors().take_while(|a| a != &self.zone) {
                if !out.contains(&a) && self.proves_absent(&a) {
                    out.insert(a);
                }
            }
        }
        out
    }

    /// The links of its chain copy (names in the NSEC or NSEC3 chain).
    pub fn chain_len(&self) -> usize {
        self.chain.len()
    }
}
