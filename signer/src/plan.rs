//! From a zone's nodes to its signed form: what is authoritative, the
//! NSEC/NSEC3 chain, and which RRsets need new signatures.
//!
//! ```text
//!  nodes (canonical order) ─► classify: apex / auth / delegation / ENT / occluded
//!     ─► strip signer-owned types (NSEC, NSEC3, NSEC3PARAM, DNSKEY, RRSIG)
//!     ─► add DNSKEY (keys collection) and NSEC3PARAM, chain: NSEC at each
//!        name, or NSEC3 nodes over hashed names (ENTs included)
//!     ─► sign in parallel on every core: reuse a signature only when the
//!        RRset's digest matches, it is far from expiry and made by the keys
//!        that should sign it now
//!     ─► desired nodes (the complete signed zone)
//! ```

use crate::crypto::SigningKey;
use backend_mongo::dnssec_store::{FullNode, Nsec3Config, SignedRRset, StoredKey};
use dns::dnssec::{
    ds_rdata, nsec3_hash, rrset_digest, rrsig_expiration, rrsig_key_tag, type_bitmap,
};
use dns::encoding::base32hex;
use dns::rdata::MAX_NSEC3_ITERATIONS;
use dns::serial::set_soa_serial;
use dns::RRset;
use dns::{Name, RType};
use std::sync::atomic::{AtomicU64, Ordering};

/// Types the signer owns: what a writer stored under these is replaced.
pub fn signer_owned(t: RType) -> bool {
    t.is_signer_owned()
}

/// How a name takes part in the signed zone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The zone apex.
    Apex,
    /// Authoritative data.
    Auth,
    /// A delegation point (NS below the apex).
    Delegation,
    /// An empty non-terminal in the authoritative part.
    Ent,
    /// Below a delegation or a DNAME: neither signed nor in the chain.
    Occluded,
}

/// Signing settings.
#[derive(Clone, Debug)]
pub struct SignOptions {
    /// NSEC3 settings, or `None` for NSEC.
    pub nsec3: Option<Nsec3Config>,
    /// Signature inception (seconds since the epoch).
    pub inception: u32,
    /// Signature expiration.
    pub expiration: u32,
    /// Signatures expiring before this are replaced.
    pub refresh_before: u32,
    /// Threads to sign with.
    pub threads: usize,
    /// Publish CDS and CDNSKEY at the apex (RFC 7344).
    pub cds: bool,
    /// Up to this many seconds taken off each RRset's expiration (the same
    /// RRset always the same amount), so refreshes spread out.
    pub jitter: u32,
    /// TTL of the DNSKEY, CDS and CDNSKEY RRsets (the policy's); `None`:
    /// the TTL they had, else the SOA's.
    pub dnskey_ttl: Option<u32>,
}

impl SignOptions {
    /// The expiration of a new signature over `owner`/`rtype`: the run's,
    /// less a share of the jitter fixed by the RRset.
    pub fn expiration_of(&self, owner: &Name, rtype: RType) -> u32 {
        if self.jitter == 0 {
            return self.expiration;
        }
        // FNV-1a over the owner's canonical key and the type.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in owner.canonical_key().bytes().chain(rtype.0.to_be_bytes()) {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        self.expiration
            .saturating_sub((h % (u64::from(self.jitter) + 1)) as u32)
    }
}

/// Active keys split by role.
pub struct KeySet {
    /// Keys signing the DNSKEY RRset (SEP keys).
    pub ksks: Vec<SigningKey>,
    /// Keys signing everything else (ZSKs, or the CSK).
    pub zsks: Vec<SigningKey>,
    /// DNSKEY rdata of every published, active or retired key.
    pub dnskeys: Vec<Box<[u8]>>,
    /// CDNSKEY rdata: the SEP keys that are published or active (the DS set
    /// the parent should have).
    pub cdnskeys: Vec<Box<[u8]>>,
    /// CDS rdata (SHA-256) for the same keys.
    pub cds: Vec<Box<[u8]>>,
}

/// Why the zone cannot be signed.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// No active key for a role.
    #[error(
        "zone {0} has no active {1}: add or activate one (mongodns-sign add-key / activate-key)"
    )]
    NoKey(String, &'static str),
    /// The apex has no SOA.
    #[error("zone {0} has no SOA at its apex")]
    NoSoa(String),
    /// A stored key does not load.
    #[error(transparent)]
    Key(#[from] crate::crypto::KeyError),
    /// NSEC3 parameters that cannot be written or served.
    #[error("bad NSEC3 parameters: {0}")]
    Nsec3(String),
}

/// Checks NSEC3 parameters before anything is signed with them: a salt
/// longer than 255 octets does not fit its length octet (it used to be cut
/// by `as u8`), and more than [`MAX_NSEC3_ITERATIONS`] iterations are
/// refused by the importer and by the server.
pub fn check_nsec3(cfg: &Nsec3Config) -> Result<(), PlanError> {
    if cfg.salt.len() > 255 {
        return Err(PlanError::Nsec3(format!(
            "a salt of {} octets (at most 255; RFC 9276 says none)",
            cfg.salt.len()
        )));
    }
    if cfg.iterations > MAX_NSEC3_ITERATIONS {
        return Err(PlanError::Nsec3(format!(
            "{} iterations (at most {MAX_NSEC3_ITERATIONS}; RFC 9276 says 0)",
            cfg.iterations
        )));
    }
    Ok(())
}

impl KeySet {
    /// Loads the zone's keys: active SEP keys sign DNSKEY; active non-SEP keys
    /// sign the rest (a single SEP key does both: a CSK).
    pub fn load(zone: &Name, keys: &[StoredKey]) -> Result<KeySet, PlanError> {
        use backend_mongo::dnssec_store::KeyState;
        let mut ksks = Vec::new();
        let mut zsks = Vec::new();
        let mut dnskeys = Vec::new();
        let mut cdnskeys = Vec::new();
        let mut cds = Vec::new();
        for k in keys {
            if k.is_published() {
                dnskeys.push(k.dnskey_rdata().into_boxed_slice());
            }
            if k.is_ksk() && matches!(k.state, KeyState::Published | KeyState::Active) {
                cdnskeys.push(k.dnskey_rdata().into_boxed_slice());
                cds.push(ds_rdata(zone, &k.dnskey_rdata(), k.algorithm).into_boxed_slice());
            }
            if !matches!(k.state, KeyState::Active | KeyState::Signing) {
                continue;
            }
            if k.is_ksk() {
                ksks.push(SigningKey::load(k)?);
            } else {
                zsks.push(SigningKey::load(k)?);
            }
        }
        if ksks.is_empty() {
            return Err(PlanError::NoKey(zone.to_string(), "KSK (flags 257)"));
        }
        // A CSK: the SEP keys of an algorithm without a ZSK sign everything
        // (during an algorithm rollover each algorithm has its own keys).
        let zsk_algorithms: Vec<u8> = zsks.iter().map(|z| z.algorithm).collect();
        for k in keys {
            let signs = matches!(k.state, KeyState::Active | KeyState::Signing);
            if signs && k.is_ksk() && !zsk_algorithms.contains(&k.algorithm) {
                zsks.push(SigningKey::load(k)?);
            }
        }
        // Canonical RRset order (RFC 4034 §6.3): the database returns keys
        // in no fixed order, and a stored RRset is compared whole.
        for set in [&mut dnskeys, &mut cdnskeys, &mut cds] {
            set.sort();
        }
        Ok(KeySet {
            ksks,
            zsks,
            dnskeys,
            cdnskeys,
            cds,
        })
    }
}

/// Classifies nodes given in canonical order (parents before children).
pub fn classify(apex: &Name, nodes: &[FullNode]) -> Vec<Kind> {
    let mut out = Vec::with_capacity(nodes.len());
    let mut occluder: Option<Name> = None;
    for n in nodes {
        if let Some(o) = &occluder {
            if n.name != *o && n.name.is_subdomain_of(o) {
                out.push(Kind::Occluded);
                continue;
            }
            occluder = None;
        }
        let has = |t: RType| n.rrsets.iter().any(|r| r.rrset.rtype == t);
        let data = n.rrsets.iter().any(|r| !signer_owned(r.rrset.rtype));
        let kind = if n.name == *apex {
            Kind::Apex
        } else if has(RType::NS) {
            occluder = Some(n.name.clone());
            Kind::Delegation
        } else if !data {
            Kind::Ent
        } else {
            if has(RType::DNAME) {
                occluder = Some(n.name.clone());
            }
            Kind::Auth
        };
        out.push(kind);
    }
    out
}

/// The SOA minimum of an SOA rdata.
pub(crate) fn soa_minimum(rd: &[u8]) -> u32 {
    let n = rd.len();
    if n < 4 {
        return 0;
    }
    u32::from_be_bytes([rd[n - 4], rd[n - 3], rd[n - 2], rd[n - 1]])
}

/// The NSEC3PARAM rdata for `cfg` (flags 0: opt-out is an NSEC3 flag only).
pub fn nsec3param_rdata(cfg: &Nsec3Config) -> Vec<u8> {
    let mut rd = vec![1, 0];
    rd.extend_from_slice(&cfg.iterations.to_be_bytes());
    rd.push(cfg.salt.len() as u8);
    rd.extend_from_slice(&cfg.salt);
    rd
}

/// A signing job: one RRset at one node of the desired zone.
pub(crate) struct Job {
    pub(crate) node: usize,
    pub(crate) set: usize,
    pub(crate) ksk: bool,
}

/// Counts from a plan.
#[derive(Clone, Copy, Debug, Default)]
pub struct PlanStats {
    /// Signatures made.
    pub signed: u64,
    /// RRsets whose signatures were kept.
    pub reused: u64,
    /// Names in the NSEC or NSEC3 chain.
    pub chain: u64,
}

/// Builds the complete signed zone from `current` (one version's nodes in
/// canonical order). `progress` is called with the number of RRsets done.
pub fn plan(
    apex: &Name,
    current: &[FullNode],
    keys: &KeySet,
    options: &SignOptions,
    serial: Option<u32>,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<(Vec<FullNode>, PlanStats), PlanError> {
    let mut p = prepare(apex, current, keys, options, serial)?;
    p.stats.signed = sign_all(&mut p.nodes, &p.jobs, keys, options, progress);
    Ok((p.nodes, p.stats))
}

/// A zone ready to be signed: [`plan`] without the signing, so that a
/// caller can sign and write it piece by piece ([`Prepared::into_batches`]).
pub struct Prepared {
    /// The desired nodes, in canonical order; RRsets in `jobs` still lack
    /// their new signatures.
    pub nodes: Vec<FullNode>,
    /// The RRsets to sign, in node order.
    pub(crate) jobs: Vec<Job>,
    /// Counts (`signed` stays 0: the signing counts).
    pub stats: PlanStats,
}

/// Consecutive nodes of a [`Prepared`] zone with their own signing work.
pub struct Batch {
    /// The nodes, in canonical order; signed by [`Batch::sign`].
    pub nodes: Vec<FullNode>,
    jobs: Vec<Job>,
}

impl Batch {
    /// Makes the batch's signatures (on `options.threads` threads);
    /// returns how many.
    pub fn sign(&mut self, keys: &KeySet, options: &SignOptions) -> u64 {
        sign_all(&mut self.nodes, &self.jobs, keys, options, &|_| {})
    }
}

impl Prepared {
    /// Splits the zone into batches of `size` nodes (the last may be
    /// smaller), in order, each with its own signing work.
    pub fn into_batches(self, size: usize) -> (Vec<Batch>, PlanStats) {
        let size = size.max(1);
        let mut batches = Vec::with_capacity(self.nodes.len().div_ceil(size));
        let mut jobs = self.jobs.into_iter().peekable();
        let mut nodes = self.nodes.into_iter();
        let mut start = 0;
        loop {
            let chunk: Vec<FullNode> = nodes.by_ref().take(size).collect();
            if chunk.is_empty() {
                break;
            }
            let end = start + chunk.len();
            let mut own = Vec::new();
            while let Some(j) = jobs.next_if(|j| j.node < end) {
                own.push(Job {
                    node: j.node - start,
                    ..j
                });
            }
            batches.push(Batch {
                nodes: chunk,
                jobs: own,
            });
            start = end;
        }
        (batches, self.stats)
    }
}

/// Everything [`plan`] does but signing: the nodes in canonical order with
/// the chain, and the list of RRsets to sign.
pub fn prepare(
    apex: &Name,
    current: &[FullNode],
    keys: &KeySet,
    options: &SignOptions,
    serial: Option<u32>,
) -> Result<Prepared, PlanError> {
    if let Some(cfg) = &options.nsec3 {
        check_nsec3(cfg)?;
    }
    // Ordinary nodes only: NSEC3 nodes are rebuilt.
    let ordinary: Vec<&FullNode> = current.iter().filter(|n| !n.nsec3).collect();
    let (mut nodes, mut kinds) = unsigned_nodes(apex, &ordinary);
    let apex_i = nodes
        .iter()
        .position(|n| n.name == *apex)
        .ok_or_else(|| PlanError::NoSoa(apex.to_string()))?;
    let soa = nodes[apex_i]
        .get(RType::SOA)
        .cloned()
        .ok_or_else(|| PlanError::NoSoa(apex.to_string()))?;
    if let Some(serial) = serial {
        set_serial(&mut nodes[apex_i], serial);
    }
    let neg_ttl = soa.rrset.ttl.min(soa_minimum(&soa.rrset.rdata[0]));
    let old_apex = ordinary.iter().find(|n| n.name == *apex).copied();
    add_apex_keys(&mut nodes[apex_i], old_apex, soa.rrset.ttl, keys, options);
    let mut stats = PlanStats::default();
    let chain = Chain {
        ordinary: &ordinary,
        current,
        neg_ttl,
    };
    stats.chain = match &options.nsec3 {
        None => chain.link_nsec(&mut nodes, &kinds),
        Some(cfg) => chain.link_nsec3(apex, cfg, &mut nodes, &mut kinds),
    };
    let (mut nodes, kinds) = canonical_order(nodes, kinds);
    let jobs = sign_jobs(&mut nodes, &kinds, keys, options, &mut stats);
    Ok(Prepared { nodes, jobs, stats })
}

/// The apex with its key sets (DNSKEY, CDS, CDNSKEY, NSEC3PARAM) as
/// `keys` make them, and the RRsets to sign at it; `None` when the apex's
/// types would change (a CDS set appearing or going: its NSEC bitmap too,
/// which only a whole re-sign rebuilds). The rest of the zone is left as it
/// is: for key steps that change no key signing the zone's data.
pub(crate) fn apex_keys(
    apex: &FullNode,
    keys: &KeySet,
    options: &SignOptions,
) -> Option<(FullNode, Vec<Job>)> {
    let key_sets = [RType::DNSKEY, RType::CDS, RType::CDNSKEY, RType::NSEC3PARAM];
    let soa_ttl = apex.get(RType::SOA)?.rrset.ttl;
    let mut node = apex.clone();
    node.rrsets.retain(|r| !key_sets.contains(&r.rrset.rtype));
    add_apex_keys(&mut node, Some(apex), soa_ttl, keys, options);
    node.rrsets.retain(|r| !r.rrset.rdata.is_empty());
    let types = |n: &FullNode| {
        let mut t: Vec<RType> = n.rrsets.iter().map(|r| r.rrset.rtype).collect();
        t.sort_unstable();
        t
    };
    if types(&node) != types(apex) {
        return None;
    }
    let mut stats = PlanStats::default();
    let mut nodes = [node];
    let jobs = sign_jobs(&mut nodes, &[Kind::Apex], keys, options, &mut stats);
    let [node] = nodes;
    Some((node, jobs))
}

/// The ordinary nodes without what the signer owns (signatures, chain),
/// and their kinds.
fn unsigned_nodes(apex: &Name, ordinary: &[&FullNode]) -> (Vec<FullNode>, Vec<Kind>) {
    let owned: Vec<FullNode> = ordinary.iter().map(|n| (*n).clone()).collect();
    let kinds = classify(apex, &owned);
    let mut nodes: Vec<FullNode> = Vec::with_capacity(owned.len() + owned.len() / 2);
    let mut node_kinds: Vec<Kind> = Vec::with_capacity(owned.len());
    for (mut n, kind) in owned.into_iter().zip(kinds) {
        n.rrsets.retain(|r| !signer_owned(r.rrset.rtype));
        n.dk = None;
        nodes.push(n);
        node_kinds.push(kind);
    }
    (nodes, node_kinds)
}

/// Sets the serial of the apex node's SOA.
fn set_serial(apex: &mut FullNode, serial: u32) {
    if let Some(soa) = apex.rrsets.iter_mut().find(|r| r.rrset.rtype == RType::SOA) {
        let mut rd = soa.rrset.rdata[0].to_vec();
        set_soa_serial(&mut rd, serial);
        soa.rrset.rdata[0] = rd.into_boxed_slice();
    }
}

/// DNSKEY (and CDS/CDNSKEY, NSEC3PARAM) at the apex, with the TTL of the
/// DNSKEY set served before (else the SOA's); signatures of an unchanged
/// set carried over from `old_apex`.
fn add_apex_keys(
    apex: &mut FullNode,
    old_apex: Option<&FullNode>,
    soa_ttl: u32,
    keys: &KeySet,
    options: &SignOptions,
) {
    let dnskey_ttl = options.dnskey_ttl.unwrap_or_else(|| {
        old_apex
            .and_then(|n| n.get(RType::DNSKEY))
            .map_or(soa_ttl, |d| d.rrset.ttl)
    });
    let keep_old = |t: RType| old_apex.and_then(|n| n.get(t)).cloned();
    let mut sets = vec![(RType::DNSKEY, dnskey_ttl, keys.dnskeys.clone())];
    if options.cds {
        sets.push((RType::CDS, dnskey_ttl, keys.cds.clone()));
        sets.push((RType::CDNSKEY, dnskey_ttl, keys.cdnskeys.clone()));
    }
    if let Some(cfg) = &options.nsec3 {
        sets.push((
            RType::NSEC3PARAM,
            0,
            vec![nsec3param_rdata(cfg).into_boxed_slice()],
        ));
    }
    for (rtype, ttl, rdata) in sets {
        apex.rrsets
            .push(carry(keep_old(rtype), RRset { rtype, ttl, rdata }));
    }
}

/// What building the chain reads: the nodes as stored (for signatures to
/// carry over) and the negative TTL.
struct Chain<'a> {
    ordinary: &'a [&'a FullNode],
    current: &'a [FullNode],
    neg_ttl: u32,
}

impl Chain<'_> {
    /// The NSEC chain through the apex, authoritative names and
    /// delegations; returns its length.
    fn link_nsec(&self, nodes: &mut [FullNode], kinds: &[Kind]) -> u64 {
        let members: Vec<usize> = (0..nodes.len())
            .filter(|i| matches!(kinds[*i], Kind::Apex | Kind::Auth | Kind::Delegation))
            .collect();
        for (j, &i) in members.iter().enumerate() {
            let next = nodes[members[(j + 1) % members.len()]].name.clone();
            let mut types: Vec<RType> = nodes[i].rrsets.iter().map(|r| r.rrset.rtype).collect();
            types.push(RType::NSEC);
            types.push(RType::RRSIG);
            let mut rd = next.as_wire().to_vec();
            rd.extend_from_slice(&type_bitmap(&types));
            let prev = find_old(self.ordinary, &nodes[i].name, RType::NSEC);
            let set = carry(
                prev,
                RRset {
                    rtype: RType::NSEC,
                    ttl: self.neg_ttl,
                    rdata: vec![rd.into_boxed_slice()],
                },
            );
            nodes[i].rrsets.push(set);
            nodes[i].dk = Some(nodes[i].name.canonical_key());
        }
        members.len() as u64
    }

    /// The NSEC3 chain (RFC 5155): one NSEC3 node per hashed owner,
    /// appended to `nodes` (kind `Auth`); returns its length.
    fn link_nsec3(
        &self,
        apex: &Name,
        cfg: &Nsec3Config,
        nodes: &mut Vec<FullNode>,
        kinds: &mut Vec<Kind>,
    ) -> u64 {
        let mut hashed: Vec<([u8; 20], usize)> = (0..nodes.len())
            .filter(|&i| match kinds[i] {
                Kind::Apex | Kind::Auth | Kind::Ent => true,
                Kind::Delegation => !cfg.opt_out || nodes[i].get(RType::DS).is_some(),
                Kind::Occluded => false,
            })
            .map(|i| (nsec3_hash(&nodes[i].name, &cfg.salt, cfg.iterations), i))
            .collect();
        hashed.sort_unstable_by_key(|a| a.0);
        hashed.dedup_by(|a, b| a.0 == b.0);
        let old_nsec3: std::collections::HashMap<&str, &FullNode> = self
            .current
            .iter()
            .filter(|n| n.nsec3)
            .filter_map(|n| n.dk.as_deref().map(|dk| (dk, n)))
            .collect();
        let mut extra = Vec::with_capacity(hashed.len());
        for (j, (hash, i)) in hashed.iter().enumerate() {
            let next = &hashed[(j + 1) % hashed.len()].0;
            let rd = nsec3_rdata(cfg, next, &nodes[*i], kinds[*i]);
            let b32 = base32hex(hash);
            let name = apex
                .prepend(b32.as_bytes())
                .expect("a 32-character label fits under any zone that has one");
            let prev = old_nsec3
                .get(b32.as_str())
                .and_then(|n| n.get(RType::NSEC3))
                .cloned();
            extra.push(FullNode {
                name,
                rrsets: vec![carry(
                    prev,
                    RRset {
                        rtype: RType::NSEC3,
                        ttl: self.neg_ttl,
                        rdata: vec![rd.into_boxed_slice()],
                    },
                )],
                dk: Some(b32),
                nsec3: true,
            });
            kinds.push(Kind::Auth);
        }
        nodes.extend(extra);
        hashed.len() as u64
    }
}

/// The NSEC3 rdata for `node` (of `kind`), pointing to the hash `next`.
fn nsec3_rdata(cfg: &Nsec3Config, next: &[u8; 20], node: &FullNode, kind: Kind) -> Vec<u8> {
    let mut types: Vec<RType> = node.rrsets.iter().map(|r| r.rrset.rtype).collect();
    let signed_here = match kind {
        Kind::Apex | Kind::Auth => !types.is_empty(),
        Kind::Delegation => node.get(RType::DS).is_some(),
        _ => false,
    };
    if signed_here {
        types.push(RType::RRSIG);
    }
    let mut rd = vec![1, u8::from(cfg.opt_out)];
    rd.extend_from_slice(&cfg.iterations.to_be_bytes());
    rd.push(cfg.salt.len() as u8);
    rd.extend_from_slice(&cfg.salt);
    rd.push(20);
    rd.extend_from_slice(next);
    rd.extend_from_slice(&type_bitmap(&types));
    rd
}

/// Canonical order (NSEC3 nodes sort among the apex's children), kinds
/// moved along.
fn canonical_order(nodes: Vec<FullNode>, kinds: Vec<Kind>) -> (Vec<FullNode>, Vec<Kind>) {
    let mut order: Vec<(FullNode, Kind)> = nodes.into_iter().zip(kinds).collect();
    order.sort_by(|a, b| a.0.name.cmp(&b.0.name).then(a.0.nsec3.cmp(&b.0.nsec3)));
    order.into_iter().unzip()
}

/// What must be signed, and with which keys: every authoritative RRset
/// (DS and NSEC only at a delegation) whose signatures cannot be kept;
/// signatures of what is not signed are dropped.
fn sign_jobs(
    nodes: &mut [FullNode],
    kinds: &[Kind],
    keys: &KeySet,
    options: &SignOptions,
    stats: &mut PlanStats,
) -> Vec<Job> {
    let mut jobs = Vec::new();
    let zsk_tags: Vec<u16> = keys.zsks.iter().map(|k| k.tag).collect();
    let ksk_tags: Vec<u16> = keys.ksks.iter().map(|k| k.tag).collect();
    for (i, n) in nodes.iter_mut().enumerate() {
        let kind = kinds[i];
        for (s, set) in n.rrsets.iter_mut().enumerate() {
            let t = set.rrset.rtype;
            let should_sign = match kind {
                Kind::Apex | Kind::Auth => true,
                Kind::Delegation => matches!(t, RType::DS | RType::NSEC),
                Kind::Ent | Kind::Occluded => false,
            };
            if !should_sign {
                set.sigs.clear();
                set.sd = None;
                continue;
            }
            let ksk = matches!(t, RType::DNSKEY | RType::CDS | RType::CDNSKEY);
            let tags = if ksk { &ksk_tags } else { &zsk_tags };
            let digest = rrset_digest(set.rrset.ttl, &set.rrset.rdata);
            if reusable(set, digest, tags, options.refresh_before) {
                stats.reused += 1;
                continue;
            }
            set.sd = Some(digest);
            jobs.push(Job {
                node: i,
                set: s,
                ksk,
            });
        }
    }
    jobs
}

fn find_old(ordinary: &[&FullNode], name: &Name, t: RType) -> Option<SignedRRset> {
    ordinary
        .binary_search_by(|n| n.name.cmp(name))
        .ok()
        .and_then(|i| ordinary[i].get(t))
        .cloned()
}

/// The new RRset, keeping the old one's signatures (for [`reusable`] to judge).
fn carry(old: Option<SignedRRset>, rrset: RRset) -> SignedRRset {
    match old {
        Some(o) => SignedRRset {
            rrset,
            sigs: o.sigs,
            sd: o.sd,
        },
        None => SignedRRset {
            rrset,
            sigs: Vec::new(),
            sd: None,
        },
    }
}

/// True when `set`'s stored signatures still fit: same content, made by
/// exactly the keys that should sign now, none expiring before `refresh`.
fn reusable(set: &SignedRRset, digest: i64, tags: &[u16], refresh: u32) -> bool {
    if set.sd != Some(digest) || set.sigs.len() != tags.len() {
        return false;
    }
    let mut have: Vec<u16> = set.sigs.iter().filter_map(|s| rrsig_key_tag(s)).collect();
    have.sort_unstable();
    let mut want = tags.to_vec();
    want.sort_unstable();
    have == want
        && set
            .sigs
            .iter()
            .all(|s| rrsig_expiration(s).is_some_and(|e| e >= refresh))
}

pub(crate) fn sign_all(
    nodes: &mut [FullNode],
    jobs: &[Job],
    keys: &KeySet,
    options: &SignOptions,
    progress: &(dyn Fn(u64) + Sync),
) -> u64 {
    if jobs.is_empty() {
        return 0;
    }
    let threads = options.threads.max(1).min(jobs.len());
    let chunk = jobs.len().div_ceil(threads);
    let done = AtomicU64::new(0);
    let results: Vec<Vec<Vec<Box<[u8]>>>> = std::thread::scope(|scope| {
        let nodes = &*nodes;
        let done = &done;
        let handles: Vec<_> = jobs
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || {
                    let mut out = Vec::with_capacity(part.len());
                    for (k, job) in part.iter().enumerate() {
                        let n = &nodes[job.node];
                        let set = &n.rrsets[job.set].rrset;
                        let signers = if job.ksk { &keys.ksks } else { &keys.zsks };
                        let sigs: Vec<Box<[u8]>> = signers
                            .iter()
                            .map(|key| {
                                key.sign_rrset(
                                    &n.name,
                                    set.rtype,
                                    set.ttl,
                                    &set.rdata,
                                    options.inception,
                                    options.expiration_of(&n.name, set.rtype),
                                )
                                .into_boxed_slice()
                            })
                            .collect();
                        out.push(sigs);
                        if k % 256 == 255 {
                            let total = done.fetch_add(256, Ordering::Relaxed) + 256;
                            progress(total);
                        }
                    }
                    out
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("signing thread panicked"))
            .collect()
    });
    let mut count = 0;
    for (job, sigs) in jobs.iter().zip(results.into_iter().flatten()) {
        count += sigs.len() as u64;
        nodes[job.node].rrsets[job.set].sigs = sigs;
    }
    progress(jobs.len() as u64);
    count
}
