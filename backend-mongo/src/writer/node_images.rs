//! Before-images of the nodes a signing writer changes in place, and the
//! records IXFR sends for the change: what went and what came, RRSIGs and
//! chain records included.
//!
//! ```text
//!  NodeImages::new(zone, ver)
//!  capture_names / capture_changes ─► each node not seen yet: one point
//!     read by _id (ordinary and NSEC3 nodes), kept as the before-image
//!     (more than MAX_IMAGED_NODES: overflow, no diff)
//!  note_read / note_absent ─► what the writer itself read under the zone
//!     lock, kept as the before-image without a second read
//!  ...the writer writes...
//!  note_inserted ─► nodes the writer inserted whole: their after-image
//!  note_set_change ─► a chain record a signer relinks in place, its
//!     record before and after known from the signer's chain copy: no read
//!     (a later whole capture of that node reads it and puts the record
//!     back as it was)
//!  diff ─► each imaged node read again (not those inserted whole and not
//!     changed since; set images compare their two records) ─►
//!     node_records(before) vs (after):
//!     every record but the apex SOA, each RRset's signatures as RRSIGs
//!     with its TTL (as AXFR sends them) ─► (removed, added)
//! ```
//!
//! The earliest image of a node is kept, so several writes of one change
//! (the edit's records, then the signer's signatures and chain) compose
//! into one difference.

use super::merge_journal::other_merge_live;
use super::SERIAL_GEN;
use crate::dnssec_store::{nsec3_node_id, FullNode, NodeChange, SignedRRset};
use crate::schema::{int_field, node_id};
use crate::store::{Store, StoreError};
use crate::{Name, RType};
use dns::journal::{JournalEntry, JournalRecord};
use mongodb::bson::Document;
use std::collections::{BTreeMap, BTreeSet};

/// Most nodes imaged for one change; a larger one is not journaled (a
/// secondary behind it gets the whole zone).
pub const MAX_IMAGED_NODES: usize = 20_000;

/// Before-images of the nodes one change writes (see the module
/// documentation).
#[derive(Debug)]
pub struct NodeImages {
    zone: Name,
    ver: i64,
    base_gen: i64,
    before: BTreeMap<String, Option<FullNode>>,
    /// Nodes the writer inserted whole and has not changed since: their
    /// after-image, known without a read.
    inserted: BTreeMap<String, FullNode>,
    /// Chain records changed in place whose node is not imaged whole: the
    /// record before and after (see [`NodeImages::note_set_change`]).
    sets: BTreeMap<String, SetImage>,
    overflow: bool,
}

/// One RRset of a node, changed in place, with its value before (`None`:
/// an NSEC3 node not stored before) and after.
#[derive(Debug)]
struct SetImage {
    name: Name,
    nsec3: bool,
    before: Option<SignedRRset>,
    after: SignedRRset,
}

impl SetImage {
    /// The node as it was before the set changed, from the node as read
    /// now (`None`: gone since; the set alone is known of it).
    fn restored(self, now: Option<FullNode>) -> Option<FullNode> {
        let rtype = self.after.rrset.rtype;
        match now {
            _ if self.before.is_none() && self.nsec3 => None,
            None => self.node(true),
            Some(mut node) => {
                node.rrsets.retain(|r| r.rrset.rtype != rtype);
                node.rrsets.extend(self.before);
                Some(node)
            }
        }
    }

    /// The node holding only this set, as it was (`before`) or is.
    fn node(&self, before: bool) -> Option<FullNode> {
        match before {
            true => self.before.clone().map(|b| self.node_of(b)),
            false => Some(self.node_of(self.after.clone())),
        }
    }

    fn node_of(&self, set: SignedRRset) -> FullNode {
        FullNode {
            name: self.name.clone(),
            rrsets: vec![set],
            dk: None,
            nsec3: self.nsec3,
        }
    }
}

impl NodeImages {
    /// Images of nodes of version `ver` of `zone`, none taken yet, for a
    /// change made on the zone as published at generation `base_gen`.
    pub fn new(zone: &Name, ver: i64, base_gen: i64) -> Self {
        NodeImages {
            zone: zone.clone(),
            ver,
            base_gen,
            before: BTreeMap::new(),
            inserted: BTreeMap::new(),
            sets: BTreeMap::new(),
            overflow: false,
        }
    }

    /// The version imaged.
    pub fn ver(&self) -> i64 {
        self.ver
    }

    /// The apex SOA before the change, when the apex was imaged.
    pub fn soa_before(&self) -> Option<JournalRecord> {
        let apex = self
            .before
            .get(&node_id(&self.zone, self.ver, &self.zone))?;
        soa_record(apex.as_ref()?)
    }

    /// Takes the before-images of the ordinary nodes `names` not imaged yet.
    pub async fn capture_names(&mut self, store: &Store, names: &[Name]) -> Result<(), StoreError> {
        let ids = names
            .iter()
            .map(|n| node_id(&self.zone, self.ver, n))
            .collect();
        self.capture_ids(store, ids).await
    }

    /// Takes the before-images of the nodes `changes` write, not imaged yet.
    pub async fn capture_changes(
        &mut self,
        store: &Store,
        changes: &[NodeChange],
    ) -> Result<(), StoreError> {
        let ids: Vec<String> = changes.iter().map(|c| self.id_of(c)).collect();
        for id in &ids {
            self.inserted.remove(id);
        }
        self.capture_ids(store, ids).await
    }

    fn id_of(&self, change: &NodeChange) -> String {
        let (zone, ver) = (&self.zone, self.ver);
        match change {
            NodeChange::Sign { name, .. }
            | NodeChange::Own { name, .. }
            | NodeChange::DenialKey { name, .. }
            | NodeChange::Refreshed { name, .. } => node_id(zone, ver, name),
            NodeChange::PutRRsets(n) => node_id(zone, ver, &n.name),
            NodeChange::PutNsec3(n) => n.id(zone, ver),
            NodeChange::DeleteNsec3(b32) | NodeChange::Expiry { b32: Some(b32), .. } => {
                nsec3_node_id(zone, ver, b32)
            }
            NodeChange::Expiry { name, .. } => node_id(zone, ver, name),
        }
    }

    /// Takes nodes as the writer read them (`None`: not stored) as the
    /// before-images of those not imaged yet: a writer's own reads under
    /// the zone lock, so that they are not read a second time.
    pub fn note_read<'a>(
        &mut self,
        nodes: impl IntoIterator<Item = (&'a Name, Option<&'a FullNode>)>,
    ) {
        for (name, node) in nodes {
            if self.overflow {
                return;
            }
            let id = node_id(&self.zone, self.ver, name);
            if self.before.contains_key(&id) || self.sets.contains_key(&id) {
                continue;
            }
            if self.imaged() >= MAX_IMAGED_NODES {
                return self.give_up();
            }
            self.before.insert(id, node.cloned());
        }
    }

    /// Keeps `nodes`, just inserted whole by the writer, as their own
    /// after-images: [`NodeImages::diff`] does not read them back unless a
    /// later change of this writer names them ([`NodeImages::capture_changes`]).
    /// Sound while nobody else writes them before the publish: only a merge
    /// can, and a live merge makes the journal entry inexact anyway.
    pub fn note_inserted(&mut self, nodes: &[FullNode]) {
        for n in nodes {
            let id = node_id(&self.zone, self.ver, &n.name);
            if self.before.contains_key(&id) {
                self.inserted.insert(id, n.clone());
            }
        }
    }

    /// Takes the ordinary nodes `names`, not stored when read, as absent
    /// before the change (see [`NodeImages::note_read`]).
    pub fn note_absent<'a>(&mut self, names: impl IntoIterator<Item = &'a Name>) {
        self.note_read(names.into_iter().map(|n| (n, None)));
    }

    async fn capture_ids(&mut self, store: &Store, ids: Vec<String>) -> Result<(), StoreError> {
        if self.overflow {
            return Ok(());
        }
        let mut new: Vec<String> = ids
            .into_iter()
            .filter(|id| !self.before.contains_key(id))
            .collect();
        new.sort();
        new.dedup();
        if self.imaged() + new.len() > MAX_IMAGED_NODES {
            self.give_up();
            return Ok(());
        }
        let read = store.read_full_nodes_by_id(&new).await?;
        for (id, node) in new.into_iter().zip(read) {
            let node = match self.sets.remove(&id) {
                Some(set) => set.restored(node),
                None => node,
            };
            self.before.insert(id, node);
        }
        Ok(())
    }

    /// Nodes imaged, whole or by one set.
    fn imaged(&self) -> usize {
        self.before.len() + self.sets.len()
    }

    /// Too many nodes for one journal entry: no images, no diff.
    fn give_up(&mut self) {
        self.overflow = true;
        self.before.clear();
        self.sets.clear();
    }

    /// Takes a chain record that a signer is about to change in place
    /// (`change`: an NSEC set put, or an NSEC3 node put) as a set image,
    /// its record before being `before` (from the signer's copy of the
    /// chain, equal to what is stored; `None`: an NSEC3 node new to the
    /// chain, not stored): neither a read now nor one at
    /// [`NodeImages::diff`]. Returns false for any other change (to be
    /// captured whole). A node already imaged whole keeps its image (and
    /// is read at the diff).
    pub fn note_set_change(&mut self, change: &NodeChange, before: Option<&SignedRRset>) -> bool {
        let (name, nsec3, after) = match change {
            NodeChange::Own {
                name,
                rtype: RType::NSEC,
                set: Some(set),
            } => (name, false, set),
            NodeChange::PutNsec3(node) if node.rrsets.len() == 1 => {
                (&node.name, true, &node.rrsets[0])
            }
            _ => return false,
        };
        if self.overflow {
            return true;
        }
        if before.is_some_and(|b| b.rrset.rtype != after.rrset.rtype)
            || (before.is_none() && !nsec3)
        {
            return false;
        }
        let id = self.id_of(change);
        if self.before.contains_key(&id) {
            // Imaged whole: read at diff, even if inserted whole before.
            self.inserted.remove(&id);
            return true;
        }
        if let Some(set) = self.sets.get_mut(&id) {
            set.after = after.clone();
            return true;
        }
        if self.imaged() >= MAX_IMAGED_NODES {
            self.give_up();
            return true;
        }
        let set = SetImage {
            name: name.clone(),
            nsec3,
            before: before.cloned(),
            after: after.clone(),
        };
        self.sets.insert(id, set);
        true
    }

    /// What the change removed and added, from the before-images to the
    /// nodes as stored now; `None` when too many nodes were written.
    pub async fn diff(
        &self,
        store: &Store,
    ) -> Result<Option<(Vec<JournalRecord>, Vec<JournalRecord>)>, StoreError> {
        if self.overflow {
            return Ok(None);
        }
        let ids: Vec<String> = self
            .before
            .keys()
            .filter(|id| !self.inserted.contains_key(*id))
            .cloned()
            .collect();
        let mut read: BTreeMap<String, Option<FullNode>> = ids
            .iter()
            .cloned()
            .zip(store.read_full_nodes_by_id(&ids).await?)
            .collect();
        let (mut removed, mut added) = (Vec::new(), Vec::new());
        for set in self.sets.values() {
            let old = node_records(&self.zone, set.node(true).as_ref());
            let new = node_records(&self.zone, set.node(false).as_ref());
            removed.extend(old.difference(&new).cloned());
            added.extend(new.difference(&old).cloned());
        }
        for (id, before) in &self.before {
            let after = match self.inserted.get(id) {
                Some(n) => Some(n.clone()),
                None => read.remove(id).flatten(),
            };
            let old = node_records(&self.zone, before.as_ref());
            let new = node_records(&self.zone, after.as_ref());
            removed.extend(old.difference(&new).cloned());
            added.extend(new.difference(&old).cloned());
        }
        Ok(Some((removed, added)))
    }
}

impl Store {
    /// Journals a change a signer made in place and published at `gen`
    /// (under the zone lock; `current` the zone document read before the
    /// publish): exact when the serial was set at the images' base
    /// generation, nobody published since, and no merge is live.
    pub(crate) async fn journal_in_place(
        &self,
        images: &NodeImages,
        current: Option<&Document>,
        gen: i64,
    ) -> Result<(), StoreError> {
        let zone = &images.zone;
        let field = |k: &str| current.and_then(|d| int_field(d, k));
        let exact = field(SERIAL_GEN) == Some(images.base_gen)
            && field("gen") == Some(images.base_gen)
            && !other_merge_live(current, None);
        let (Some((removed, added)), Some(from_soa)) =
            (images.diff(self).await?, images.soa_before())
        else {
            return Ok(());
        };
        let Some(to_soa) = self.apex_soa_record(zone, images.ver).await? else {
            return Ok(());
        };
        let entry = JournalEntry {
            gen,
            base_gen: images.base_gen,
            exact,
            from_soa,
            to_soa,
            removed,
            added,
        };
        self.append_journal(zone, &entry).await
    }
}

/// The SOA of `node` (an apex) as a journal record.
pub(super) fn soa_record(node: &FullNode) -> Option<JournalRecord> {
    let soa = node.get(RType::SOA)?;
    Some(JournalRecord {
        owner: node.name.clone(),
        rtype: RType::SOA,
        ttl: soa.rrset.ttl,
        rdata: soa.rrset.rdata.first()?.clone(),
    })
}

/// Every record of `node` as a transfer sends it: the apex SOA left out
/// (IXFR frames each change with its SOAs), each RRset's signatures as
/// RRSIG records with the RRset's TTL.
pub fn node_records(zone: &Name, node: Option<&FullNode>) -> BTreeSet<JournalRecord> {
    let mut out = BTreeSet::new();
    let Some(node) = node else {
        return out;
    };
    let record = |rtype: RType, ttl: u32, rdata: &[u8]| JournalRecord {
        owner: node.name.clone(),
        rtype,
        ttl,
        rdata: rdata.into(),
    };
    for set in &node.rrsets {
        let (rtype, ttl) = (set.rrset.rtype, set.rrset.ttl);
        if !(rtype == RType::SOA && node.name == *zone) {
            out.extend(set.rrset.rdata.iter().map(|rd| record(rtype, ttl, rd)));
        }
        out.extend(set.sigs.iter().map(|rd| record(RType::RRSIG, ttl, rd)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dnssec_store::SignedRRset;
    use crate::RRset;

    fn set(rtype: RType, ttl: u32, rdata: &[&[u8]], sigs: &[&[u8]]) -> SignedRRset {
        SignedRRset {
            rrset: RRset::of(rtype, ttl, rdata),
            sigs: sigs.iter().map(|s| (*s).into()).collect(),
            sd: None,
        }
    }

    fn node(name: &str, rrsets: Vec<SignedRRset>) -> FullNode {
        FullNode {
            name: name.parse().unwrap(),
            rrsets,
            dk: None,
            nsec3: false,
        }
    }

    #[test]
    fn the_apex_soa_is_left_out_and_its_signature_kept() {
        let zone: Name = "z.test.".parse().unwrap();
        let apex = node(
            "z.test.",
            vec![set(RType::SOA, 300, &[b"soa"], &[b"sig-soa"])],
        );
        let got = node_records(&zone, Some(&apex));
        let types: Vec<(RType, u32)> = got.iter().map(|r| (r.rtype, r.ttl)).collect();
        assert_eq!(types, vec![(RType::RRSIG, 300)]);
        let below = node("a.z.test.", vec![set(RType::SOA, 60, &[b"x"], &[])]);
        assert_eq!(node_records(&zone, Some(&below)).len(), 1);
    }

    #[test]
    fn records_carry_their_rrsets_ttl_and_signatures() {
        let zone: Name = "z.test.".parse().unwrap();
        let n = node(
            "a.z.test.",
            vec![
                set(RType::A, 60, &[&[192, 0, 2, 1], &[192, 0, 2, 2]], &[b"s1"]),
                set(RType::NSEC, 30, &[b"next"], &[b"s2"]),
            ],
        );
        let got: Vec<(RType, u32, Vec<u8>)> = node_records(&zone, Some(&n))
            .into_iter()
            .map(|r| (r.rtype, r.ttl, r.rdata.to_vec()))
            .collect();
        assert!(got.contains(&(RType::RRSIG, 60, b"s1".to_vec())));
        assert!(got.contains(&(RType::RRSIG, 30, b"s2".to_vec())));
        assert!(got.contains(&(RType::A, 60, vec![192, 0, 2, 2])));
        assert_eq!(got.len(), 5);
        assert!(node_records(&zone, None).is_empty());
    }
}
