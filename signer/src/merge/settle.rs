//! Settling a batch: the chain, the signatures and the writes for nodes in
//! their final content, in named phases.
//!
//! ```text
//!  settle(entries)
//!   ─► classify          each node: occluded? a delegation? a chain member?
//!   ─► unlink_leaving    names that leave the chain: their predecessors skip them
//!                        (and a predecessor left pointing at a deleted name too)
//!   ─► link_members      new members after their predecessor; bitmaps refreshed
//!   ─► carry_neighbours  relinked neighbours that are in the batch carry their record
//!   ─► plan_signing      RRsets whose digest changed, chain records, outside neighbours
//!   ─► sign_inserting_new  signed SIGN_AT_ONCE at a time; each new node inserted
//!                        whole as soon as it is signed, on tasks of their own
//!                        (inserts.rs: one another writer inserted meanwhile is
//!                        handed back, to be merged)
//!   ─► write             1: the batch's changed nodes and NSEC3 nodes (never
//!                        recreating a node another writer deleted); 2: neighbours,
//!                        then what left the chain
//! ```

use super::inserts::{Inserted, Inserts};
use super::{same_node, Entry, Link, MergeSigner, Settled};
use crate::plan;
use crate::SignError;
use backend_mongo::dnssec_store::{changed_owners, FullNode, NodeChange, SignedRRset};
use backend_mongo::{NodeWrite, Store};
use dns::dnssec::rrset_digest;
use dns::RRset;
use dns::{Name, RType};
use std::collections::BTreeMap;

/// What a node of the batch is, for the chain and for signing.
#[derive(Clone, Copy)]
struct Kind {
    /// Below a delegation or DNAME: not authoritative, never signed.
    occluded: bool,
    /// A delegation point: only DS and NSEC signed.
    delegation: bool,
    /// In the NSEC/NSEC3 chain.
    member: bool,
}

/// The batch as it is settled: nodes in their final content, and for each
/// what is stored now, whether it exists, and its kind (same order).
struct Batch {
    nodes: Vec<FullNode>,
    stored: Vec<Option<FullNode>>,
    exists: Vec<bool>,
    kinds: Vec<Kind>,
}

/// The chain's side of a batch.
#[derive(Default)]
struct ChainWork {
    /// Chain records relinked (by chain key) that must be written.
    neighbours: BTreeMap<String, Link>,
    /// (chain key, owner) of the names that left the chain.
    leaving: Vec<(String, Name)>,
    /// The NSEC3 nodes of the batch's members (by chain key).
    nsec3_nodes: BTreeMap<String, FullNode>,
}

/// Signing jobs per call of `plan::sign_all`: between two, the nodes
/// signed whole are handed to the inserts.
const SIGN_AT_ONCE: usize = 512;

/// The batch laid out for signing as [`Signed`] lays it out, with its
/// signing jobs (node, RRset, digest), in node order.
struct Planned {
    all: Vec<FullNode>,
    nodes: usize,
    nsec3: usize,
    outside: Vec<usize>,
    jobs: Vec<(usize, usize, i64)>,
}

/// The batch signed and laid out for writing: `all[..nodes]` the batch's
/// nodes, `all[nodes..nsec3]` its NSEC3 nodes, then the neighbours outside
/// the batch (`outside`, indices into `all`).
struct Signed {
    all: Vec<FullNode>,
    nodes: usize,
    nsec3: usize,
    outside: Vec<usize>,
    /// Per entry of `all`: re-signed in this batch.
    resigned: Vec<bool>,
    signatures: u64,
}

impl MergeSigner {
    /// The chain's record type.
    fn chain_type(&self) -> RType {
        if self.nsec3.is_some() {
            RType::NSEC3
        } else {
            RType::NSEC
        }
    }

    /// The chain, signing and writes for nodes in their final content
    /// (see the module documentation); nodes equal to what is stored are
    /// not written.
    pub(super) async fn settle(
        &mut self,
        store: &Store,
        entries: Vec<Entry>,
    ) -> Result<(Settled, Vec<NodeWrite>), SignError> {
        let t = std::time::Instant::now();
        self.chain_was.clear();
        let mut batch = self.classify(store, entries).await?;
        let classified = t.elapsed();
        // The chain's relinking and the signing are CPU work: off the
        // runtime's worker (a server's queries go on meanwhile).
        let (planned, stored, exists, leaving) = crate::cpu_work::cpu_work(|| {
            let mut work = ChainWork::default();
            self.unlink_leaving(&mut batch, &mut work);
            self.link_members(&mut batch, &mut work)?;
            self.carry_neighbours(&mut batch, &work);
            let Batch {
                nodes,
                stored,
                exists,
                kinds,
            } = batch;
            let planned = self.plan_signing(nodes, &kinds, work.nsec3_nodes, work.neighbours);
            Ok::<_, SignError>((planned, stored, exists, work.leaving))
        })?;
        let (signed, inserted) = self
            .sign_inserting_new(store, planned, &stored, &exists)
            .await?;
        let signed_at = t.elapsed();
        let r = self
            .write(store, signed, &stored, &exists, leaving, inserted)
            .await;
        tracing::debug!(zone = %self.zone, ?classified, signed = ?signed_at,
            written = ?t.elapsed(), "batch settled");
        r
    }

    /// Each entry's kind: occluded, a delegation, a chain member.
    async fn classify(&mut self, store: &Store, entries: Vec<Entry>) -> Result<Batch, SignError> {
        let mut batch = Batch {
            nodes: Vec::with_capacity(entries.len()),
            stored: Vec::with_capacity(entries.len()),
            exists: Vec::with_capacity(entries.len()),
            kinds: Vec::with_capacity(entries.len()),
        };
        for e in entries {
            let occluded =
                e.node.name != self.zone && self.is_occluded(store, &e.node.name).await?;
            let delegation = e.node.name != self.zone && e.node.get(RType::NS).is_some();
            let member = self.is_member(&e.node, e.exists, occluded, delegation);
            batch.nodes.push(e.node);
            batch.stored.push(e.stored);
            batch.exists.push(e.exists);
            batch.kinds.push(Kind {
                occluded,
                delegation,
                member,
            });
        }
        Ok(batch)
    }

    /// Names in the chain that are no longer members leave it: their
    /// predecessors are relinked past them first.
    fn unlink_leaving(&mut self, batch: &mut Batch, work: &mut ChainWork) {
        for (i, node) in batch.nodes.iter_mut().enumerate() {
            let key = self.chain_key(&node.name);
            if batch.kinds[i].member {
                continue;
            }
            if !self.chain.contains_key(&key) {
                self.repair_dangling(&key, &mut work.neighbours);
                continue;
            }
            if self
                .relink_predecessor(&key, None, &mut work.neighbours)
                .is_none()
            {
                self.full_resign = true;
                continue;
            }
            let link = self.chain.remove(&key).expect("checked");
            work.neighbours.remove(&key);
            work.leaving.push((key, link.owner));
            if self.nsec3.is_none() {
                node.rrsets.retain(|r| r.rrset.rtype != RType::NSEC);
                node.dk = None;
            }
        }
    }

    /// The batch's members get their chain record: a new member after the
    /// greatest key below it (wrapping), an existing one its bitmap
    /// refreshed.
    fn link_members(&mut self, batch: &mut Batch, work: &mut ChainWork) -> Result<(), SignError> {
        for (i, node) in batch.nodes.iter_mut().enumerate() {
            let kind = batch.kinds[i];
            if !kind.member {
                continue;
            }
            let key = self.chain_key(&node.name);
            let owner = match &self.nsec3 {
                None => node.name.clone(),
                Some(_) => self
                    .zone
                    .prepend(key.as_bytes())
                    .map_err(|e| SignError::Usage(format!("NSEC3 owner: {e}")))?,
            };
            let Some(record) = self.member_record(node, kind, &key, &owner, work) else {
                // An empty chain: the zone was never signed properly.
                self.full_resign = true;
                continue;
            };
            let link = Link {
                owner: owner.clone(),
                record: record.clone(),
            };
            let was = self.chain.insert(key.clone(), link).map(|l| l.record);
            self.chain_was.entry(key.clone()).or_insert(was);
            work.neighbours.remove(&key);
            match &self.nsec3 {
                None => {
                    node.rrsets.retain(|r| r.rrset.rtype != RType::NSEC);
                    node.rrsets.push(record);
                    node.dk = Some(key);
                }
                Some(_) => {
                    work.nsec3_nodes.insert(
                        key.clone(),
                        FullNode {
                            name: owner,
                            rrsets: vec![record],
                            dk: Some(key),
                            nsec3: true,
                        },
                    );
                }
            }
        }
        Ok(())
    }

    /// The chain record of member `node` (chain key `key`, chain owner
    /// `owner`), its signatures kept when it was a member before; `None`
    /// when the chain is empty.
    fn member_record(
        &mut self,
        node: &FullNode,
        kind: Kind,
        key: &str,
        owner: &Name,
        work: &mut ChainWork,
    ) -> Option<SignedRRset> {
        let types = self.chain_types(node, kind.delegation);
        let (next_key, next_owner) = match self.chain.contains_key(key) {
            // Already a member: its bitmap refreshed, its links checked (a
            // writer killed between writing a new member and relinking its
            // predecessor left the predecessor pointing past it).
            true => {
                self.point_predecessor_at(key, owner, &mut work.neighbours);
                self.successor(key)
                    .unwrap_or_else(|| (key.to_string(), owner.clone()))
            }
            // New: after the greatest key below it (wrapping).
            false => self.relink_predecessor(key, Some(owner), &mut work.neighbours)?,
        };
        let rd = self.chain_rdata(&next_key, &next_owner, &types);
        let prev = self.chain.get(key).map(|l| l.record.clone());
        Some(SignedRRset {
            rrset: RRset {
                rtype: self.chain_type(),
                ttl: self.neg_ttl,
                rdata: vec![rd.into_boxed_slice()],
            },
            sigs: prev.as_ref().map(|p| p.sigs.clone()).unwrap_or_default(),
            sd: prev.as_ref().and_then(|p| p.sd),
        })
    }

    /// Relinked neighbours that are themselves written in this batch carry
    /// their final record already.
    fn carry_neighbours(&self, batch: &mut Batch, work: &ChainWork) {
        for (k, link) in work.neighbours.iter() {
            if self.nsec3.is_some() {
                // NSEC3 neighbours in the batch: `sign` finds them there.
                continue;
            }
            if let Some(n) = batch.nodes.iter_mut().find(|n| n.dk.as_deref() == Some(k)) {
                n.rrsets.retain(|r| r.rrset.rtype != RType::NSEC);
                n.rrsets.push(link.record.clone());
            }
        }
    }

    /// Signs the data RRsets whose digest changed, the chain records, and
    /// the relinked neighbours outside the batch; keeps the in-memory
    /// chain's copies signed, for later relinks.
    fn plan_signing(
        &mut self,
        nodes: Vec<FullNode>,
        kinds: &[Kind],
        mut nsec3_nodes: BTreeMap<String, FullNode>,
        neighbours: BTreeMap<String, Link>,
    ) -> Planned {
        if self.nsec3.is_some() {
            for (k, link) in neighbours.iter() {
                if let Some(n) = nsec3_nodes.get_mut(k) {
                    n.rrsets = vec![link.record.clone()];
                }
            }
        }
        let mut all: Vec<FullNode> = Vec::new();
        let mut jobs = Vec::new();
        for (node, kind) in nodes.into_iter().zip(kinds) {
            let idx = all.len();
            for (s, set) in node.rrsets.iter().enumerate() {
                let t = set.rrset.rtype;
                let sign =
                    !kind.occluded && (!kind.delegation || matches!(t, RType::DS | RType::NSEC));
                let digest = rrset_digest(set.rrset.ttl, &set.rrset.rdata);
                if sign && set.sd != Some(digest) {
                    jobs.push((idx, s, digest));
                }
            }
            all.push(node);
        }
        let split = all.len();
        for n in nsec3_nodes.into_values() {
            let idx = all.len();
            let set = &n.rrsets[0];
            let digest = rrset_digest(set.rrset.ttl, &set.rrset.rdata);
            if set.sd != Some(digest) {
                jobs.push((idx, 0, digest));
            }
            all.push(n);
        }
        let split_nsec3 = all.len();
        let outside =
            self.add_outside_neighbours(&mut all, split, split_nsec3, neighbours, &mut jobs);
        Planned {
            all,
            nodes: split,
            nsec3: split_nsec3,
            outside,
            jobs,
        }
    }

    /// Makes the signatures `planned` lists, SIGN_AT_ONCE jobs at a time
    /// (off the runtime's worker), and inserts the batch's new nodes
    /// (stored: none, exists) as soon as each is signed, INSERT_AT_ONCE
    /// to a command on tasks of their own: the database writes while the
    /// rest is signed. Keeps the in-memory chain's copies signed.
    async fn sign_inserting_new(
        &mut self,
        store: &Store,
        planned: Planned,
        stored: &[Option<FullNode>],
        exists: &[bool],
    ) -> Result<(Signed, Inserted), SignError> {
        let Planned {
            mut all,
            nodes: split,
            nsec3: split_nsec3,
            outside,
            jobs,
        } = planned;
        let new: Vec<usize> = (0..split)
            .filter(|&i| stored[i].is_none() && exists[i])
            .collect();
        if let Some(images) = self.images.as_mut() {
            images.note_absent(new.iter().map(|&i| &all[i].name));
        }
        let mut inserts = Inserts::new(store, &self.zone, self.ver);
        let mut waiting = new.iter().copied().peekable();
        let mut resigned = vec![false; all.len()];
        let mut signatures = 0;
        let parts: Vec<&[(usize, usize, i64)]> = jobs.chunks(SIGN_AT_ONCE).collect();
        for (p, part) in parts.iter().enumerate() {
            let plan_jobs: Vec<plan::Job> = part
                .iter()
                .map(|(n, s, _)| plan::Job {
                    node: *n,
                    set: *s,
                    ksk: false,
                })
                .collect();
            signatures += crate::cpu_work::cpu_work(|| {
                plan::sign_all(&mut all, &plan_jobs, &self.keys, &self.options, &|_| {})
            });
            for (n, s, digest) in part.iter() {
                all[*n].rrsets[*s].sd = Some(*digest);
                resigned[*n] = true;
            }
            // Jobs run in node order: the nodes below the next part's
            // first are signed whole.
            let signed_below = parts.get(p + 1).map_or(usize::MAX, |next| next[0].0);
            while let Some(i) = waiting.next_if(|&i| i < signed_below) {
                inserts.add(i, &all[i]);
            }
        }
        waiting.for_each(|i| inserts.add(i, &all[i]));
        let inserted = inserts.finish().await?;
        if let Some(images) = self.images.as_mut() {
            let written: Vec<FullNode> = inserted.written().map(|i| all[i].clone()).collect();
            images.note_inserted(&written);
        }
        let chain_type = self.chain_type();
        for n in &all {
            if let (Some(dk), Some(rec)) = (&n.dk, n.get(chain_type)) {
                if let Some(link) = self.chain.get_mut(dk) {
                    link.record = rec.clone();
                }
            }
        }
        let signed = Signed {
            all,
            nodes: split,
            nsec3: split_nsec3,
            outside,
            resigned,
            signatures,
        };
        Ok((signed, inserted))
    }

    /// Appends to `all` the relinked neighbours that are not in the batch
    /// (batch nodes `..split`, NSEC3 nodes `split..split_nsec3`), each with
    /// a signing job; returns their indices.
    fn add_outside_neighbours(
        &self,
        all: &mut Vec<FullNode>,
        split: usize,
        split_nsec3: usize,
        neighbours: BTreeMap<String, Link>,
        jobs: &mut Vec<(usize, usize, i64)>,
    ) -> Vec<usize> {
        let mut outside = Vec::new();
        for (k, link) in neighbours {
            let in_batch = if self.nsec3.is_some() {
                all[split..split_nsec3]
                    .iter()
                    .any(|n| n.dk.as_deref() == Some(&k))
            } else {
                all[..split].iter().any(|n| n.dk.as_deref() == Some(&k))
            };
            if in_batch {
                continue;
            }
            let idx = all.len();
            let digest = rrset_digest(link.record.rrset.ttl, &link.record.rrset.rdata);
            jobs.push((idx, 0, digest));
            all.push(FullNode {
                name: link.owner.clone(),
                rrsets: vec![link.record],
                dk: Some(k),
                nsec3: self.nsec3.is_some(),
            });
            outside.push(idx);
        }
        outside
    }

    /// Write 1: the batch's nodes not stored when read, inserted whole;
    /// its changed nodes and NSEC3 nodes (never recreating a node another
    /// writer deleted); write 2: neighbours, then what leaves the chain.
    /// Also returns the records of the new nodes another writer inserted
    /// between the read and the insert (not written: to be merged).
    async fn write(
        &mut self,
        store: &Store,
        signed: Signed,
        stored: &[Option<FullNode>],
        exists: &[bool],
        leaving: Vec<(String, Name)>,
        inserted: Inserted,
    ) -> Result<(Settled, Vec<NodeWrite>), SignError> {
        let (all, split, split_nsec3) = (&signed.all, signed.nodes, signed.nsec3);
        let mut first: Vec<NodeChange> = Vec::with_capacity(split_nsec3);
        for (i, n) in all[..split].iter().enumerate() {
            if let Some(s) = &stored[i] {
                if exists[i] && !same_node(Some(s), n) {
                    first.push(NodeChange::PutRRsets(n.clone()))
                }
            }
        }
        for (i, n) in all[split..split_nsec3].iter().enumerate() {
            if signed.resigned[split + i] {
                first.push(NodeChange::PutNsec3(n.clone()));
            }
        }
        let mut second: Vec<NodeChange> = signed
            .outside
            .iter()
            .map(|&i| neighbour_change(&all[i]))
            .collect();
        for (key, owner) in leaving {
            second.extend(self.leaving_changes(key, owner, &stored[..split]));
        }
        let t = std::time::Instant::now();
        self.apply_imaged(store, &first).await?;
        let first_in = t.elapsed();
        self.apply_imaged(store, &second).await?;
        tracing::debug!(zone = %self.zone, new = inserted.new.len(), first = first.len(),
            second = second.len(), ?first_in, all_in = ?t.elapsed(), "batch written");
        let raced: Vec<NodeWrite> = inserted
            .raced
            .iter()
            .map(|&i| records_of(&all[i]))
            .collect();
        let inserted_count = inserted.new.len() - raced.len();
        self.touched
            .extend(inserted.new.iter().map(|&i| all[i].name.clone()));
        self.touched.extend(changed_owners(&self.zone, &first));
        self.touched.extend(changed_owners(&self.zone, &second));
        let settled = Settled {
            written: (inserted_count + first.len() + second.len()) as u64,
            signed: signed.signatures,
        };
        Ok((settled, raced))
    }

    /// Applies `changes`: chain records this batch changed imaged by their
    /// record as it was
    /// ([`backend_mongo::writer::NodeImages::note_set_change`], no read),
    /// the rest captured whole as [`MergeSigner::apply`] does.
    async fn apply_imaged(
        &mut self,
        store: &Store,
        changes: &[NodeChange],
    ) -> Result<(), SignError> {
        if let Some(images) = self.images.as_mut() {
            let was = &self.chain_was;
            let whole: Vec<NodeChange> = changes
                .iter()
                .filter(|c| {
                    let before = relinked_key(c).and_then(|k| was.get(&k));
                    !before.is_some_and(|b| images.note_set_change(c, b.as_ref()))
                })
                .cloned()
                .collect();
            images.capture_changes(store, &whole).await?;
        }
        Ok(store.apply_changes(&self.zone, self.ver, changes).await?)
    }

    /// What the name `owner` (chain key `key`) leaving the chain writes:
    /// its NSEC3 node deleted, or, still stored (emptied or occluded), its
    /// NSEC and denial key dropped.
    fn leaving_changes(
        &self,
        key: String,
        owner: Name,
        stored: &[Option<FullNode>],
    ) -> Vec<NodeChange> {
        if self.nsec3.is_some() {
            return vec![NodeChange::DeleteNsec3(key)];
        }
        let Some(node) = stored.iter().flatten().find(|s| s.name == owner) else {
            return Vec::new();
        };
        vec![
            NodeChange::Own {
                name: node.name.clone(),
                rtype: RType::NSEC,
                set: None,
            },
            NodeChange::DenialKey {
                name: owner,
                dk: None,
            },
        ]
    }
}

/// The records of `node` as a write to merge: its signer-owned sets left
/// out.
fn records_of(node: &FullNode) -> NodeWrite {
    NodeWrite {
        name: node.name.clone(),
        rrsets: node
            .rrsets
            .iter()
            .filter(|r| !plan::signer_owned(r.rrset.rtype))
            .map(|r| r.rrset.clone())
            .collect(),
    }
}

/// The chain key of a change that puts a chain record (an NSEC set or an
/// NSEC3 node).
fn relinked_key(change: &NodeChange) -> Option<String> {
    match change {
        NodeChange::Own {
            name,
            rtype: RType::NSEC,
            set: Some(_),
        } => Some(name.canonical_key()),
        NodeChange::PutNsec3(node) => node.dk.clone(),
        _ => None,
    }
}

/// The write of a relinked neighbour outside the batch: its NSEC3 node, or
/// its NSEC RRset.
fn neighbour_change(n: &FullNode) -> NodeChange {
    if n.nsec3 {
        NodeChange::PutNsec3(n.clone())
    } else {
        NodeChange::Own {
            name: n.name.clone(),
            rtype: RType::NSEC,
            set: Some(n.rrsets[0].clone()),
        }
    }
}
