//! Signing before writing: how a writer adds records to a secured zone that
//! is being served without any moment where they are unsigned.
//!
//! ```text
//!  MergeSigner::new(zone)  keys, NSEC/NSEC3 settings, the chain (dk → owner,
//!                          NSEC/NSEC3 rdata) read once into memory
//!  write_batch(nodes)      per node: read it (point lookup), merge the new
//!                          records in, is it occluded? (ancestors, cached),
//!                          sign what changed; new chain members get their
//!                          NSEC/NSEC3 (next = the predecessor's old next),
//!                          the predecessor's record points to them
//!      ─► write 1: each node whole (records + sigs + its NSEC), NSEC3 nodes
//!      ─► write 2: predecessors outside the batch
//!  sign_soa(served serial) the SOA with serial + 1, signed, before finish
//! ```
//!
//! Every document update is single-document atomic, so a reader sees a
//! node either before (without the new records) or after (records and their
//! signatures together). A new name is written with its NSEC before its
//! predecessor's NSEC is changed to point to it: between the two writes the
//! old NSEC still proves what it proved (the new name is answered from its
//! own node). Writes of one batch run one batch at a time.
//!
//! Not handled here (the caller re-signs the zone after it, see
//! [`MergeSigner::needs_full_resign`]): a delegation or DNAME added above
//! names that exist, which changes what is authoritative below it.

use crate::plan::{self, signer_owned, KeySet, SignOptions};
use crate::SignError;
use backend_mongo::dnssec::{
    base32hex, nsec3_hash, rrset_digest, type_bitmap, FullNode, NodeChange, Nsec3Config,
    SignedRRset,
};
use backend_mongo::{Name, NodeWrite, RRset, RType, Store, StoreError, WriteStats};
use futures::future::try_join_all;
use std::collections::{BTreeMap, HashMap};

/// One link of the chain as held in memory.
#[derive(Clone, Debug)]
struct Link {
    owner: Name,
    record: SignedRRset,
}

/// Signs merge writes into a secured zone (see the module documentation).
pub struct MergeSigner {
    zone: Name,
    ver: i64,
    keys: KeySet,
    nsec3: Option<Nsec3Config>,
    options: SignOptions,
    neg_ttl: u32,
    chain: BTreeMap<String, Link>,
    /// Ancestors looked at: are they delegations or DNAMEs?
    occluders: HashMap<Name, bool>,
    full_resign: bool,
}

impl MergeSigner {
    /// A signer for merges into version `ver` of `zone`; `None` when the
    /// zone is not secured.
    pub async fn new(store: &Store, zone: &Name, ver: i64) -> Result<Option<Self>, SignError> {
        let config = match store.dnssec_config(zone).await {
            Ok(c) if c.secured => c,
            Ok(_) | Err(StoreError::NoSuchZone(_)) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let keys = KeySet::load(zone, &store.zone_keys(zone).await?)?;
        let apex = store
            .read_full_node(zone, ver, zone)
            .await?
            .ok_or_else(|| plan::PlanError::NoSoa(zone.to_string()))?;
        let soa = apex
            .get(RType::SOA)
            .ok_or_else(|| plan::PlanError::NoSoa(zone.to_string()))?;
        let neg_ttl = soa.rrset.ttl.min(plan::soa_minimum(&soa.rrset.rdata[0]));
        let chain_type = if config.nsec3.is_some() {
            RType::NSEC3
        } else {
            RType::NSEC
        };
        let mut chain = BTreeMap::new();
        for n in store.read_chain(zone, ver).await? {
            if let (Some(dk), Some(record)) = (n.dk.clone(), n.get(chain_type).cloned()) {
                chain.insert(
                    dk,
                    Link {
                        owner: n.name.clone(),
                        record,
                    },
                );
            }
        }
        let options =
            crate::sign_options(config.nsec3.clone(), &crate::Validity::default(), 0, false);
        Ok(Some(MergeSigner {
            zone: zone.clone(),
            ver,
            keys,
            nsec3: config.nsec3,
            options,
            neg_ttl,
            chain,
            occluders: HashMap::new(),
            full_resign: false,
        }))
    }

    /// True when a write changed what is authoritative below existing names
    /// (a delegation or DNAME added): re-sign the zone after the import.
    pub fn needs_full_resign(&self) -> bool {
        self.full_resign
    }

    async fn is_occluded(&mut self, store: &Store, name: &Name) -> Result<bool, StoreError> {
        let depth = name.label_count() - self.zone.label_count();
        // Strict ancestors below the apex, nearest the apex first.
        let mut ancestors: Vec<Name> = name
            .ancestors()
            .skip(1)
            .take(depth.saturating_sub(1))
            .collect();
        ancestors.reverse();
        let missing: Vec<Name> = ancestors
            .iter()
            .filter(|a| !self.occluders.contains_key(*a))
            .cloned()
            .collect();
        let found = try_join_all(
            missing
                .iter()
                .map(|a| store.read_full_node(&self.zone, self.ver, a)),
        )
        .await?;
        for (a, n) in missing.into_iter().zip(found) {
            let occludes =
                n.is_some_and(|n| n.get(RType::NS).is_some() || n.get(RType::DNAME).is_some());
            self.occluders.insert(a, occludes);
        }
        Ok(ancestors.iter().any(|a| self.occluders[a]))
    }

    fn chain_key(&self, name: &Name) -> String {
        match &self.nsec3 {
            Some(c) => base32hex(&nsec3_hash(name, &c.salt, c.iterations)),
            None => name.canonical_key(),
        }
    }

    /// The NSEC/NSEC3 rdata for `owner` (types `types`) pointing at `next`.
    fn chain_rdata(&self, next_key: &str, next_owner: &Name, types: &[RType]) -> Vec<u8> {
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
                let next = backend_mongo::dnssec::from_base32hex(next_key).unwrap_or_default();
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
    fn relink(&self, record: &[u8], next_key: &str, next_owner: &Name) -> Vec<u8> {
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
                let next = backend_mongo::dnssec::from_base32hex(next_key).unwrap_or_default();
                let mut rd = record[..at].to_vec();
                rd.push(next.len() as u8);
                rd.extend_from_slice(&next);
                rd.extend_from_slice(record.get(at + 1 + hash_len..).unwrap_or(&[]));
                rd
            }
        }
    }

    /// The types the chain record of `node` lists.
    fn chain_types(&self, node: &FullNode, delegation: bool) -> Vec<RType> {
        let mut types: Vec<RType> = node
            .rrsets
            .iter()
            .map(|r| r.rrset.rtype)
            .filter(|t| !signer_owned(*t))
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

    /// Merges, signs and writes one batch (see the module documentation).
    pub async fn write_batch(
        &mut self,
        store: &Store,
        batch: &[NodeWrite],
    ) -> Result<WriteStats, SignError> {
        // One write per name (an importer may send a name twice in a batch:
        // as an empty non-terminal and with its records), in canonical order.
        let mut grouped: BTreeMap<Name, NodeWrite> = BTreeMap::new();
        for w in batch {
            grouped
                .entry(w.name.clone())
                .or_insert_with(|| NodeWrite {
                    name: w.name.clone(),
                    rrsets: Vec::new(),
                })
                .rrsets
                .extend(w.rrsets.iter().cloned());
        }
        let order: Vec<&NodeWrite> = grouped.values().collect();
        let existing = try_join_all(
            order
                .iter()
                .map(|w| store.read_full_node(&self.zone, self.ver, &w.name)),
        )
        .await?;
        let mut stats = WriteStats::default();
        let mut nodes: Vec<FullNode> = Vec::with_capacity(order.len());
        let mut kinds: Vec<(bool, bool)> = Vec::with_capacity(order.len()); // (occluded, delegation)
        for (w, old) in order.iter().zip(existing) {
            if old.is_some() {
                stats.merged += 1;
            } else {
                stats.inserted += 1;
            }
            let mut node = old.unwrap_or(FullNode {
                name: w.name.clone(),
                rrsets: Vec::new(),
                dk: None,
                nsec3: false,
            });
            let had = |t: RType, n: &FullNode| n.get(t).is_some();
            let adds_cut = w.name != self.zone
                && w.rrsets
                    .iter()
                    .any(|r| matches!(r.rtype, RType::NS | RType::DNAME))
                && !had(RType::NS, &node)
                && !had(RType::DNAME, &node);
            if adds_cut {
                // Names below may exist and now be occluded.
                self.full_resign = true;
                self.occluders.insert(w.name.clone(), true);
            }
            for add in &w.rrsets {
                if signer_owned(add.rtype) {
                    continue;
                }
                match node.rrsets.iter_mut().find(|r| r.rrset.rtype == add.rtype) {
                    Some(r) => {
                        for rd in &add.rdata {
                            if !r.rrset.rdata.iter().any(|x| x[..] == rd[..]) {
                                r.rrset.rdata.push(rd.clone());
                            }
                        }
                        r.rrset.ttl = add.ttl;
                    }
                    None => node.rrsets.push(SignedRRset {
                        rrset: RRset {
                            rtype: add.rtype,
                            ttl: add.ttl,
                            rdata: add.rdata.clone(),
                        },
                        sigs: Vec::new(),
                        sd: None,
                    }),
                }
            }
            let occluded = w.name != self.zone && self.is_occluded(store, &w.name).await?;
            let delegation = w.name != self.zone && node.get(RType::NS).is_some();
            nodes.push(node);
            kinds.push((occluded, delegation));
        }
        // The chain: new members, changed bitmaps.
        let mut neighbours: BTreeMap<String, Link> = BTreeMap::new();
        let mut nsec3_nodes: BTreeMap<String, FullNode> = BTreeMap::new();
        for (i, node) in nodes.iter_mut().enumerate() {
            let (occluded, delegation) = kinds[i];
            let has_data = node.rrsets.iter().any(|r| !signer_owned(r.rrset.rtype));
            let member = !occluded
                && match &self.nsec3 {
                    None => has_data,
                    Some(c) => !delegation || !c.opt_out || node.get(RType::DS).is_some(),
                };
            if !member {
                continue;
            }
            let key = self.chain_key(&node.name);
            let types = self.chain_types(node, delegation);
            let owner = match &self.nsec3 {
                None => node.name.clone(),
                Some(_) => self
                    .zone
                    .prepend(key.as_bytes())
                    .map_err(|e| SignError::Usage(format!("NSEC3 owner: {e}")))?,
            };
            let (next_key, next_owner) = match self.chain.get(&key) {
                Some(link) => {
                    // Already a member: keep its next, refresh its bitmap.
                    let rd = &link.record.rrset.rdata[0];
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
                None => {
                    // New: after the greatest key below it (wrapping).
                    let pred_key = self
                        .chain
                        .range(..key.clone())
                        .next_back()
                        .or_else(|| self.chain.iter().next_back())
                        .map(|(k, _)| k.clone());
                    let Some(pred_key) = pred_key else {
                        // An empty chain: the zone was never signed properly.
                        self.full_resign = true;
                        continue;
                    };
                    let pred = self.chain[&pred_key].clone();
                    let old_rd = &pred.record.rrset.rdata[0];
                    let (old_next_key, old_next_owner) = match &self.nsec3 {
                        None => {
                            let n = Name::from_wire_prefix(old_rd)
                                .map(|(n, _)| n)
                                .unwrap_or_else(|_| self.zone.clone());
                            (n.canonical_key(), n)
                        }
                        Some(_) => {
                            let salt_len = old_rd.get(4).copied().unwrap_or(0) as usize;
                            let at = 5 + salt_len;
                            let len = old_rd.get(at).copied().unwrap_or(0) as usize;
                            let k = base32hex(old_rd.get(at + 1..at + 1 + len).unwrap_or(&[]));
                            let o = self
                                .zone
                                .prepend(k.as_bytes())
                                .unwrap_or_else(|_| self.zone.clone());
                            (k, o)
                        }
                    };
                    let relinked = self.relink(old_rd, &key, &owner);
                    let mut record = pred.record.clone();
                    record.rrset.rdata = vec![relinked.into_boxed_slice()];
                    record.sd = None;
                    let link = Link {
                        owner: pred.owner.clone(),
                        record,
                    };
                    self.chain.insert(pred_key.clone(), link.clone());
                    neighbours.insert(pred_key, link);
                    (old_next_key, old_next_owner)
                }
            };
            let rd = self.chain_rdata(&next_key, &next_owner, &types);
            let rtype = if self.nsec3.is_some() {
                RType::NSEC3
            } else {
                RType::NSEC
            };
            let prev = self.chain.get(&key).map(|l| l.record.clone());
            let record = SignedRRset {
                rrset: RRset {
                    rtype,
                    ttl: self.neg_ttl,
                    rdata: vec![rd.into_boxed_slice()],
                },
                sigs: prev.as_ref().map(|p| p.sigs.clone()).unwrap_or_default(),
                sd: prev.as_ref().and_then(|p| p.sd),
            };
            self.chain.insert(
                key.clone(),
                Link {
                    owner: owner.clone(),
                    record: record.clone(),
                },
            );
            neighbours.remove(&key);
            match &self.nsec3 {
                None => {
                    node.rrsets.retain(|r| r.rrset.rtype != RType::NSEC);
                    node.rrsets.push(record);
                    node.dk = Some(key);
                }
                Some(_) => {
                    nsec3_nodes.insert(
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
        // Neighbours that are themselves written in this batch carry their
        // final record already.
        for (k, link) in neighbours.iter() {
            if self.nsec3.is_some() {
                if let Some(n) = nsec3_nodes.get_mut(k) {
                    n.rrsets = vec![link.record.clone()];
                }
            } else if let Some(n) = nodes.iter_mut().find(|n| n.dk.as_deref() == Some(k)) {
                n.rrsets.retain(|r| r.rrset.rtype != RType::NSEC);
                n.rrsets.push(link.record.clone());
            }
        }
        // Sign: data RRsets whose digest changed, and chain records.
        let mut all: Vec<FullNode> = Vec::new();
        let mut jobs = Vec::new();
        for (i, node) in nodes.into_iter().enumerate() {
            let (occluded, delegation) = kinds[i];
            let idx = all.len();
            for (s, set) in node.rrsets.iter().enumerate() {
                let t = set.rrset.rtype;
                let sign = !occluded && (!delegation || matches!(t, RType::DS | RType::NSEC));
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
        let mut written_neighbours = Vec::new();
        for (k, link) in neighbours {
            if self.nsec3.is_some()
                && all[split..split_nsec3]
                    .iter()
                    .any(|n| n.dk.as_deref() == Some(&k))
            {
                continue;
            }
            if self.nsec3.is_none() && all[..split].iter().any(|n| n.dk.as_deref() == Some(&k)) {
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
            written_neighbours.push(idx);
        }
        let plan_jobs: Vec<plan::Job> = jobs
            .iter()
            .map(|(n, s, _)| plan::Job {
                node: *n,
                set: *s,
                ksk: false,
            })
            .collect();
        plan::sign_all(&mut all, &plan_jobs, &self.keys, &self.options, &|_| {});
        for (n, s, digest) in &jobs {
            all[*n].rrsets[*s].sd = Some(*digest);
        }
        // Keep the in-memory chain's copies signed, for later relinks.
        for n in &all {
            if let (Some(dk), Some(rec)) = (
                &n.dk,
                n.get(if self.nsec3.is_some() {
                    RType::NSEC3
                } else {
                    RType::NSEC
                }),
            ) {
                if let Some(link) = self.chain.get_mut(dk) {
                    link.record = rec.clone();
                }
            }
        }
        // Write 1: the batch's nodes and NSEC3 nodes; write 2: neighbours.
        let mut first: Vec<NodeChange> = Vec::with_capacity(split_nsec3);
        for n in &all[..split] {
            first.push(NodeChange::PutRRsets(n.clone()));
        }
        for n in &all[split..split_nsec3] {
            first.push(NodeChange::PutNsec3(n.clone()));
        }
        store.apply_changes(&self.zone, self.ver, &first).await?;
        let second: Vec<NodeChange> = written_neighbours
            .iter()
            .map(|&i| {
                let n = &all[i];
                if n.nsec3 {
                    NodeChange::PutNsec3(n.clone())
                } else {
                    NodeChange::Own {
                        name: n.name.clone(),
                        rtype: RType::NSEC,
                        set: Some(n.rrsets[0].clone()),
                    }
                }
            })
            .collect();
        store.apply_changes(&self.zone, self.ver, &second).await?;
        Ok(stats)
    }

    /// Moves the SOA serial past `served` and signs it, in one update; call
    /// before `ZoneWriter::finish` (which then leaves the serial alone).
    pub async fn sign_soa(&mut self, store: &Store, served: u32) -> Result<u32, SignError> {
        let apex = store
            .read_full_node(&self.zone, self.ver, &self.zone)
            .await?
            .ok_or_else(|| plan::PlanError::NoSoa(self.zone.to_string()))?;
        let mut soa = apex
            .get(RType::SOA)
            .cloned()
            .ok_or_else(|| plan::PlanError::NoSoa(self.zone.to_string()))?;
        let current = backend_mongo::writer::soa_serial(&soa.rrset.rdata[0]).unwrap_or(served);
        let serial = crate::next_serial(&[served, current]);
        let mut rd = soa.rrset.rdata[0].to_vec();
        let n = rd.len();
        rd[n - 20..n - 16].copy_from_slice(&serial.to_be_bytes());
        soa.rrset.rdata = vec![rd.into_boxed_slice()];
        soa.sd = Some(rrset_digest(soa.rrset.ttl, &soa.rrset.rdata));
        soa.sigs = self
            .keys
            .zsks
            .iter()
            .map(|k| {
                k.sign_rrset(
                    &self.zone,
                    RType::SOA,
                    soa.rrset.ttl,
                    &soa.rrset.rdata,
                    self.options.inception,
                    self.options.expiration,
                )
                .into_boxed_slice()
            })
            .collect();
        store
            .apply_changes(
                &self.zone,
                self.ver,
                &[NodeChange::Own {
                    name: self.zone.clone(),
                    rtype: RType::SOA,
                    set: Some(soa),
                }],
            )
            .await?;
        Ok(serial)
    }
}
