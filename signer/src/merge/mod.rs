//! Signing before writing: how a writer adds records to a secured zone that
//! is being served without any moment where they are unsigned.
//!
//! ```text
//!  MergeSigner::new(zone)  keys, NSEC/NSEC3 settings, the chain (dk → owner,
//!                          NSEC/NSEC3 rdata) read once into memory
//!  write_batch(nodes)      per node: read it (point lookup; not a name the
//!                          chain shows absent: proves_absent), merge the new
//!                          records in, is it occluded? (ancestors, cached),
//!                          sign what changed; new chain members get their
//!                          NSEC/NSEC3 (next = the predecessor's old next),
//!                          the predecessor's record points to them
//!      ─► write 1: each node whole (records + sigs + its NSEC), NSEC3 nodes;
//!         a node not stored is inserted (one another writer inserted
//!         meanwhile is read again and merged)
//!      ─► write 2: predecessors outside the batch (a record edit's journal
//!         images them from the chain copy's records: no read)
//!  write_new(nodes)        a record edit's names not stored when it read
//!                          them under the zone lock: as write_batch, no read
//!  sign_soa(served serial) the SOA with serial + 1, signed, before finish
//!
//!  resign_names(names)     `resign --follow` for writers that do not sign:
//!                          the listed names as stored now (point lookups);
//!                          deleted or emptied ones leave the chain (their
//!                          predecessor relinked first), the rest as above
//!  settle_known(names)     the same for a caller that knows what each name
//!                          holds and must hold (the catch-up): no read
//!  all go through settle (settle.rs): chain, signatures, and writes of
//!  only the documents that differ from what is stored; take_touched()
//!  lists them; the chain copy and its relinking are in chain.rs
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
use backend_mongo::dnssec_store::{DnssecConfig, FullNode, NodeChange, Nsec3Config, SignedRRset};
use backend_mongo::writer::NodeImages;
use backend_mongo::{NodeWrite, Store, StoreError, WriteStats};
use dns::encoding::{base32hex, from_base32hex};
use dns::serial::soa_serial;
use dns::RRset;
use dns::{Name, RType};
use std::collections::{BTreeMap, HashMap};

mod chain;
mod inserts;
mod settle;

/// One link of the chain as held in memory.
#[derive(Clone, Debug)]
struct Link {
    owner: Name,
    record: SignedRRset,
}

/// One node as [`MergeSigner::settle`] takes it: as stored, if it is, and
/// as it must be.
struct Entry {
    stored: Option<FullNode>,
    node: FullNode,
    /// False for a name another writer deleted: it is never written back.
    exists: bool,
}

/// One name as [`MergeSigner::settle_known`] takes it.
pub struct Known {
    /// The name.
    pub name: Name,
    /// What the signer's version holds under it now (`None`: no node).
    pub stored: Option<FullNode>,
    /// What it must hold, signatures aside (`None`: nothing; the caller
    /// has deleted it).
    pub node: Option<FullNode>,
}

/// What one call of [`MergeSigner::resign_names`] did.
#[derive(Clone, Copy, Debug, Default)]
pub struct Settled {
    /// Node documents written (or deleted).
    pub written: u64,
    /// Signatures made.
    pub signed: u64,
}

/// True when `stored` holds what `node` holds (RRsets in any order).
pub(crate) fn same_node(stored: Option<&FullNode>, node: &FullNode) -> bool {
    stored.is_some_and(|s| {
        s.dk == node.dk
            && s.rrsets.len() == node.rrsets.len()
            && s.rrsets.iter().all(|r| node.get(r.rrset.rtype) == Some(r))
    })
}

/// True for the types that make their owner a cut below the apex: what
/// lies below a delegation or a DNAME is not authoritative data.
fn cuts_below(t: RType) -> bool {
    matches!(t, RType::NS | RType::DNAME)
}

/// True when `node` is a delegation or DNAME owner (below the apex).
fn is_cut(node: &FullNode) -> bool {
    node.rrsets.iter().any(|r| cuts_below(r.rrset.rtype))
}

/// How many times new names another writer inserted meanwhile are merged
/// again before the batch gives up.
const RACED_ROUNDS: usize = 3;

/// Adds the records of `add` to its set in `node` (created when missing),
/// the TTL taken from `add`.
fn merge_rrset(node: &mut FullNode, add: &RRset) {
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
            rrset: add.clone(),
            sigs: Vec::new(),
            sd: None,
        }),
    }
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
    /// Owner names written since [`MergeSigner::take_touched`].
    touched: Vec<Name>,
    /// Before-images of what it writes, for a journal entry (a record
    /// edit's, see [`MergeSigner::keep_images`]).
    images: Option<NodeImages>,
    /// The chain records, as stored, that the batch being settled changed
    /// (by chain key; `None`: a new member): the before-images of its
    /// neighbours and NSEC3 nodes, with no read.
    chain_was: BTreeMap<String, Option<SignedRRset>>,
}

impl MergeSigner {
    /// A signer for merges into version `ver` of `zone`; `None` when the
    /// zone is not secured.
    pub async fn new(store: &Store, zone: &Name, ver: i64) -> Result<Option<Self>, SignError> {
        Self::with_nodes(store, zone, ver, None).await
    }

    /// Like [`MergeSigner::new`], taking the chain from `known` (the
    /// version's nodes as stored, e.g. just written by a full re-sign)
    /// instead of reading it.
    pub async fn with_nodes(
        store: &Store,
        zone: &Name,
        ver: i64,
        known: Option<Vec<FullNode>>,
    ) -> Result<Option<Self>, SignError> {
        let config = match store.dnssec_config(zone).await {
            Ok(c) if c.secured => c,
            Ok(_) | Err(StoreError::NoSuchZone(_)) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        Self::with_config(store, zone, ver, config, known)
            .await
            .map(Some)
    }

    /// A signer for version `ver` signed with `config` (which the zone
    /// document need not show yet: `secure-zone` catching its new version
    /// up before the switch), its chain taken from `known` or read.
    pub async fn with_config(
        store: &Store,
        zone: &Name,
        ver: i64,
        config: DnssecConfig,
        known: Option<Vec<FullNode>>,
    ) -> Result<Self, SignError> {
        // A salt over 255 octets cannot be written into NSEC3 rdata.
        if let Some(n) = &config.nsec3 {
            plan::check_nsec3(n)?;
        }
        let keys = KeySet::load(zone, &store.zone_keys(zone).await?)?;
        let soa = crate::soa::stored_soa(store, zone, ver).await?;
        let neg_ttl = soa.rrset.ttl.min(plan::soa_minimum(&soa.rrset.rdata[0]));
        let chain_type = if config.nsec3.is_some() {
            RType::NSEC3
        } else {
            RType::NSEC
        };
        let nodes = match known {
            Some(nodes) => nodes,
            None => store.read_chain(zone, ver).await?,
        };
        let mut chain = BTreeMap::new();
        for n in nodes {
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
        let options = crate::sign_options(
            config.nsec3.clone(),
            &crate::Validity::of(&config),
            0,
            false,
        );
        Ok(MergeSigner {
            zone: zone.clone(),
            ver,
            keys,
            nsec3: config.nsec3,
            options,
            neg_ttl,
            chain,
            occluders: HashMap::new(),
            full_resign: false,
            touched: Vec::new(),
            images: None,
            chain_was: BTreeMap::new(),
        })
    }

    /// True when `w` writes a delegation or DNAME below the apex.
    fn writes_cut(&self, w: &NodeWrite) -> bool {
        w.name != self.zone && w.rrsets.iter().any(|r| cuts_below(r.rtype))
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
        let found = store
            .read_full_nodes(&self.zone, self.ver, &missing)
            .await?;
        for (a, n) in missing.into_iter().zip(found) {
            let occludes = n.as_ref().is_some_and(is_cut);
            self.occluders.insert(a, occludes);
        }
        Ok(ancestors.iter().any(|a| self.occluders[a]))
    }

    /// Merges, signs and writes one batch (see the module documentation).
    /// Nodes the batch leaves as they were are not written again.
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
        let order: Vec<NodeWrite> = grouped.into_values().collect();
        let existing = self.read_unless_absent(store, &order).await?;
        let mut stats = WriteStats::default();
        for old in &existing {
            match old {
                Some(_) => stats.merged += 1,
                None => stats.inserted += 1,
            }
        }
        let entries = self.merged_entries(&order, existing, true);
        self.settle_merging_raced(store, entries).await?;
        Ok(stats)
    }

    /// The nodes stored under the names of `order` (same order), read
    /// but for those the chain shows absent ([`MergeSigner::proves_absent`]:
    /// `None` without a read; one stored after all is found by its insert
    /// and merged, as a name another writer inserted meanwhile is).
    async fn read_unless_absent(
        &self,
        store: &Store,
        order: &[NodeWrite],
    ) -> Result<Vec<Option<FullNode>>, StoreError> {
        let absent: Vec<bool> = order.iter().map(|w| self.proves_absent(&w.name)).collect();
        let names: Vec<Name> = order
            .iter()
            .zip(&absent)
            .filter(|(_, a)| !**a)
            .map(|(w, _)| w.name.clone())
            .collect();
        let mut read = store
            .read_full_nodes(&self.zone, self.ver, &names)
            .await?
            .into_iter();
        Ok(absent
            .iter()
            .map(|a| if *a { None } else { read.next().flatten() })
            .collect())
    }

    /// Signs and writes names that a record edit adds and that were not
    /// stored when it read them (under the zone lock): each is inserted
    /// whole, signed and in the chain, with no read. One that another
    /// writer inserted meanwhile is merged as [`MergeSigner::write_batch`]
    /// merges. A delegation or DNAME among them with names below sets
    /// [`MergeSigner::needs_full_resign`].
    pub async fn write_new(
        &mut self,
        store: &Store,
        nodes: &[NodeWrite],
    ) -> Result<Settled, SignError> {
        let mut order: Vec<NodeWrite> = nodes
            .iter()
            .filter(|w| w.name.is_subdomain_of(&self.zone))
            .cloned()
            .collect();
        order.sort_by(|a, b| a.name.cmp(&b.name));
        order.dedup_by(|a, b| a.name == b.name);
        for w in &order {
            let cut = self.writes_cut(w);
            if cut && self.may_have_names_below(&w.name) {
                self.full_resign = true;
            }
            self.occluders.insert(w.name.clone(), cut);
        }
        let absent = vec![None; order.len()];
        let entries = self.merged_entries(&order, absent, false);
        self.settle_merging_raced(store, entries).await
    }

    /// Each write merged into the node stored under its name (`existing`,
    /// the same order): new records added to their sets, TTLs taken from
    /// the write, signer-owned sets left out. With `cuts`, a delegation or
    /// DNAME added at a name that had neither sets
    /// [`MergeSigner::needs_full_resign`].
    fn merged_entries(
        &mut self,
        order: &[NodeWrite],
        existing: Vec<Option<FullNode>>,
        cuts: bool,
    ) -> Vec<Entry> {
        let mut entries = Vec::with_capacity(order.len());
        for (w, old) in order.iter().zip(existing) {
            let mut node = old.clone().unwrap_or_else(|| FullNode {
                name: w.name.clone(),
                rrsets: Vec::new(),
                dk: None,
                nsec3: false,
            });
            let adds_cut = self.writes_cut(w) && !is_cut(&node);
            if cuts && adds_cut {
                // Names below may exist and now be occluded.
                self.full_resign = true;
                self.occluders.insert(w.name.clone(), true);
            }
            for add in w.rrsets.iter().filter(|a| !signer_owned(a.rtype)) {
                merge_rrset(&mut node, add);
            }
            entries.push(Entry {
                stored: old,
                node,
                exists: true,
            });
        }
        entries
    }

    /// Settles `entries`, then merges the new names another writer
    /// inserted between their read and their insert into what it stored
    /// (read again).
    async fn settle_merging_raced(
        &mut self,
        store: &Store,
        entries: Vec<Entry>,
    ) -> Result<Settled, SignError> {
        let (mut settled, mut raced) = self.settle(store, entries).await?;
        for _ in 0..RACED_ROUNDS {
            if raced.is_empty() {
                return Ok(settled);
            }
            let names: Vec<Name> = raced.iter().map(|w| w.name.clone()).collect();
            let existing = store.read_full_nodes(&self.zone, self.ver, &names).await?;
            let entries = self.merged_entries(&raced, existing, true);
            let (more, again) = self.settle(store, entries).await?;
            settled.written += more.written;
            settled.signed += more.signed;
            raced = again;
        }
        match raced.first() {
            None => Ok(settled),
            Some(w) => Err(SignError::Store(StoreError::Conflict(format!(
                "{}: inserted and deleted by other writers while it was signed",
                w.name
            )))),
        }
    }

    /// Brings the signatures and chain around `names` up to date with what
    /// is stored under them now: the names another writer changed without
    /// signing (its change records list them). Reads only those nodes
    /// (point lookups) and the ancestors needed to tell whether they are
    /// occluded; re-signs the RRsets whose content changed, adds new names
    /// to the chain, takes deleted or emptied names out of it and fixes the
    /// neighbours' links. Says how many documents it wrote (0: nothing
    /// needed doing) and how many signatures it made. A delegation or DNAME added or removed at a listed
    /// name sets [`MergeSigner::needs_full_resign`] instead.
    pub async fn resign_names(
        &mut self,
        store: &Store,
        names: &[Name],
    ) -> Result<Settled, SignError> {
        let mut names: Vec<Name> = names
            .iter()
            .filter(|n| n.is_subdomain_of(&self.zone))
            .cloned()
            .collect();
        names.sort();
        names.dedup();
        let stored = store.read_full_nodes(&self.zone, self.ver, &names).await?;
        let known = names
            .into_iter()
            .zip(stored)
            .map(|(name, stored)| Known {
                name,
                node: stored.clone(),
                stored,
            })
            .collect();
        self.settle_known(store, known).await
    }

    /// [`MergeSigner::resign_names`] for a caller that knows what each name
    /// holds in the signer's version and what it must hold: nothing read
    /// but the ancestors that tell occlusion. A name that must hold
    /// something is written once, signed (inserted when not stored); the
    /// caller has deleted those that must hold nothing. Fails when another
    /// writer inserted one of the names meanwhile.
    pub async fn settle_known(
        &mut self,
        store: &Store,
        known: Vec<Known>,
    ) -> Result<Settled, SignError> {
        let mut entries = Vec::with_capacity(known.len());
        for Known { name, stored, node } in known {
            let exists = node.is_some();
            let node = node.unwrap_or_else(|| FullNode {
                name: name.clone(),
                rrsets: Vec::new(),
                dk: None,
                nsec3: false,
            });
            if name != self.zone && self.cut_changed(&name, &node) {
                // What is authoritative below it changed.
                self.full_resign = true;
                return Ok(Settled::default());
            }
            entries.push(Entry {
                exists,
                stored,
                node,
            });
        }
        let (settled, raced) = self.settle(store, entries).await?;
        match raced.first() {
            None => Ok(settled),
            Some(w) => Err(SignError::Store(StoreError::Conflict(format!(
                "{}: inserted by another writer while it was signed",
                w.name
            )))),
        }
    }

    /// True when `node` (below the apex) became a cut or stopped being one
    /// and names may lie below it; remembers what it is now.
    fn cut_changed(&mut self, name: &Name, node: &FullNode) -> bool {
        let cut_now = is_cut(node);
        let key = self.chain_key(name);
        // Known from the chain's bitmap, or from an earlier look
        // (an opt-out delegation has no NSEC3 record).
        let cut_before = self.occluders.get(name) == Some(&true)
            || self.chain.get(&key).is_some_and(|l| {
                let types = self.bitmap_of(&l.record.rrset.rdata[0]);
                types.into_iter().any(cuts_below)
            });
        if cut_now != cut_before && self.may_have_names_below(name) {
            return true;
        }
        self.occluders.insert(name.clone(), cut_now);
        false
    }

    /// False only when the chain shows no name below `name` (NSEC: the
    /// canonical keys of the names below start with its own; NSEC3 hashes
    /// tell nothing, so always true there).
    fn may_have_names_below(&self, name: &Name) -> bool {
        if self.nsec3.is_some() {
            return true;
        }
        let key = name.canonical_key();
        self.chain
            .range(key.clone()..)
            .find(|(k, _)| **k != key)
            .is_some_and(|(k, _)| k.starts_with(&key))
    }

    /// From now on, takes a before-image of every node it writes into
    /// `images` (a record edit's, to journal the signed change).
    pub fn keep_images(&mut self, images: Option<NodeImages>) {
        self.images = images.filter(|i| i.ver() == self.ver);
    }

    /// The images kept since [`MergeSigner::keep_images`].
    pub fn take_images(&mut self) -> Option<NodeImages> {
        self.images.take()
    }

    /// Applies `changes` to the version, imaging the nodes first when
    /// images are kept.
    async fn apply(&mut self, store: &Store, changes: &[NodeChange]) -> Result<(), StoreError> {
        if let Some(images) = self.images.as_mut() {
            images.capture_changes(store, changes).await?;
        }
        store.apply_changes(&self.zone, self.ver, changes).await
    }

    /// Signing times from now on (a signer kept between polls would
    /// otherwise sign with the expiration of the time it was made).
    pub fn renew_validity(&mut self, validity: &crate::Validity) {
        let cds = self.options.cds;
        self.options = crate::sign_options(self.nsec3.clone(), validity, 0, false);
        self.options.cds = cds;
    }

    /// Signs with the zone's keys as stored now (after a key step that
    /// left the chain as it was).
    pub async fn reload_keys(&mut self, store: &Store) -> Result<(), SignError> {
        self.keys = KeySet::load(&self.zone, &store.zone_keys(&self.zone).await?)?;
        Ok(())
    }

    /// Reads again the chain records of `names` (owners another writer
    /// changed since this copy was made: ordinary names, and NSEC3 owners
    /// in an NSEC3 zone) and forgets what it knew of them as ancestors, so
    /// that a signer kept between writes goes on from the zone as stored.
    pub async fn reload(&mut self, store: &Store, names: &[Name]) -> Result<(), StoreError> {
        for n in names {
            self.occluders.remove(n);
        }
        match self.nsec3.is_some() {
            false => {
                let nodes = store.read_full_nodes(&self.zone, self.ver, names).await?;
                for (name, node) in names.iter().zip(nodes) {
                    let link =
                        node.and_then(|n| Some((n.dk.clone()?, n.get(RType::NSEC)?.clone())));
                    self.put_link(name.canonical_key(), name, link.map(|(_, r)| r));
                }
            }
            true => {
                let hashed: Vec<(String, &Name)> = names
                    .iter()
                    .filter(|n| n.parent().as_ref() == Some(&self.zone))
                    .filter_map(|n| Some((nsec3_label(n)?, n)))
                    .collect();
                let ids: Vec<String> = hashed
                    .iter()
                    .map(|(b32, _)| {
                        backend_mongo::dnssec_store::nsec3_node_id(&self.zone, self.ver, b32)
                    })
                    .collect();
                let nodes = store.read_full_nodes_by_id(&ids).await?;
                for ((b32, owner), node) in hashed.into_iter().zip(nodes) {
                    let record = node.and_then(|n| n.get(RType::NSEC3).cloned());
                    self.put_link(b32, owner, record);
                }
            }
        }
        Ok(())
    }

    /// The version this signer signs.
    pub fn ver(&self) -> i64 {
        self.ver
    }

    /// The owner names written since the last call (for the writer's
    /// change record: chain neighbours and NSEC3 owners included).
    pub fn take_touched(&mut self) -> Vec<Name> {
        let mut out = std::mem::take(&mut self.touched);
        out.sort();
        out.dedup();
        out
    }

    /// Moves the SOA serial past `served` and signs it, in one update; call
    /// before `ZoneWriter::finish` (which then leaves the serial alone).
    pub async fn sign_soa(&mut self, store: &Store, served: u32) -> Result<u32, SignError> {
        let soa = crate::soa::stored_soa(store, &self.zone, self.ver).await?;
        let current = soa_serial(&soa.rrset.rdata[0]).unwrap_or(served);
        let serial = crate::next_serial(&[served, current]);
        let soa = crate::soa::with_serial(&self.zone, soa, serial, &self.keys, &self.options);
        self.apply(
            store,
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

/// The chain key an NSEC3 owner's first label spells (base32hex of a
/// hash), as [`MergeSigner`] keys its chain; `None` for other names.
fn nsec3_label(owner: &Name) -> Option<String> {
    let label = owner.labels().next()?;
    let text = std::str::from_utf8(label).ok()?;
    let raw = from_base32hex(text)?;
    (!raw.is_empty()).then(|| base32hex(&raw))
}
