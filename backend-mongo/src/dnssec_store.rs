//! DNSSEC storage: keys, signatures and NSEC/NSEC3 chains as MongoDB
//! documents, and the reads and writes of them. The wire maths they are made
//! of (key tags, DS, NSEC3 hashes, bitmaps) is `dns::dnssec`.
//!
//! ```text
//!  keys   { _id, zone, flags 256|257, alg, tag, pub, priv (PKCS#8), state, created,
//!           since?, ds_seen?, ds_ttl?, roll? }
//!  zones  { …, dnssec: { secured, cds, nsec3?: { iter, salt, optout }, policy?: {…},
//!           parents?: [addr], marked?, seen_gen? } }
//!  nodes  { …, dk?: "<denial key>", sx?: <earliest RRSIG expiration, never later>,
//!           rrsets: { A: { ttl, rd, sigs: [RRSIG rdata…], sd: <digest> }, NSEC: {…} } }
//!  nodes  { _id: "<zone> <ver> nsec3 <b32hex>", name: "<b32hex>.<zone>", dk: "<b32hex>",
//!           rrsets: { NSEC3: { ttl, rd, sigs, sd } } }        one per NSEC3 owner
//!
//!  denial(zone, key) ── {zone, ver, dk ≤ key} sort dk desc limit 1 ──► covering/matching node
//! ```
//!
//! `dk` ("denial key") is set only on the nodes that own the zone's NSEC or
//! NSEC3 records: the canonical key `ck` for NSEC, the base32hex hash for
//! NSEC3 (base32hex keeps the order of the hash bytes). The greatest `dk`
//! not above a key is the NSEC/NSEC3 record that matches or covers it, so
//! every denial proof is one indexed lookup (`zone_ver_dk`).

use crate::lock::ZONE_LOCK;
use crate::policy::Policy;
use crate::schema::{self, binary, int_field, node_id, RRset, ZoneInfo, NODES};
use crate::store::{Store, StoreError};
use crate::writer::{self, NodeImages, LOCK_WAIT};
use crate::{Name, Node, RType};
use dns::dnssec::dnskey_rdata;
use dns::encoding::{from_hex, to_hex};
use futures::TryStreamExt;
use mongodb::bson::{doc, Bson, DateTime, Document};
use mongodb::options::IndexOptions;
use mongodb::IndexModel;
use std::fmt;

/// Point reads in flight at once when many nodes are read.
pub const READS_AT_ONCE: usize = 32;

/// Collection of DNSSEC keys.
pub const KEYS: &str = "keys";

/// Algorithm numbers we sign with (RFC 8624).
pub mod alg {
    /// RSA/SHA-256 (8).
    pub const RSASHA256: u8 = 8;
    /// ECDSA P-256 with SHA-256 (13).
    pub const ECDSAP256SHA256: u8 = 13;
    /// Ed25519 (15).
    pub const ED25519: u8 = 15;
}

/// Life cycle of a key (RFC 7583 terms, simplified).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyState {
    /// In the DNSKEY RRset, not signing (pre-publication of a new key, or a
    /// KSK waiting for its DS).
    Published,
    /// In the DNSKEY RRset and signing.
    Active,
    /// In the DNSKEY RRset, no longer signing (post-publication), until removed.
    Retired,
    /// Signing, not in the DNSKEY RRset: an algorithm rollover's new keys
    /// before they are published, and its old keys after they are
    /// withdrawn (RFC 6781 §4.1.4).
    Signing,
}

impl KeyState {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            KeyState::Published => "published",
            KeyState::Active => "active",
            KeyState::Retired => "retired",
            KeyState::Signing => "signing",
        }
    }

    /// Parses the stored spelling.
    pub fn parse(text: &str) -> Option<KeyState> {
        match text {
            "published" => Some(KeyState::Published),
            "active" => Some(KeyState::Active),
            "retired" => Some(KeyState::Retired),
            "signing" => Some(KeyState::Signing),
            _ => None,
        }
    }
}

/// A DNSSEC key as stored. The private key never leaves this value through
/// `Debug` or `Display`.
#[derive(Clone)]
pub struct StoredKey {
    /// `_id`: `"<zone> <tag> <created millis>"`.
    pub id: String,
    /// The zone it signs.
    pub zone: Name,
    /// DNSKEY flags: 257 (SEP, a KSK or CSK) or 256 (ZSK).
    pub flags: u16,
    /// DNSKEY algorithm number.
    pub algorithm: u8,
    /// Key tag (RFC 4034 Appendix B).
    pub tag: u16,
    /// The DNSKEY public key field.
    pub public_key: Vec<u8>,
    /// The private key, PKCS#8 DER.
    pub private_pkcs8: Vec<u8>,
    /// Its state.
    pub state: KeyState,
    /// When it was made.
    pub created: DateTime,
    /// When its current state took effect (the zone re-signed with it);
    /// `None` while that is still to be done.
    pub since: Option<DateTime>,
    /// When the parent was first seen serving its DS (or the operator said
    /// it was submitted), and the DS TTL then.
    pub ds_seen: Option<(DateTime, u32)>,
    /// A rollover of this key was asked for (`mongodns-sign rollover`).
    pub roll: bool,
}

impl fmt::Debug for StoredKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoredKey")
            .field("id", &self.id)
            .field("zone", &self.zone)
            .field("flags", &self.flags)
            .field("algorithm", &self.algorithm)
            .field("tag", &self.tag)
            .field("state", &self.state)
            .field("private_pkcs8", &"<redacted>")
            .finish()
    }
}

impl StoredKey {
    /// The DNSKEY rdata: flags, protocol 3, algorithm, public key.
    pub fn dnskey_rdata(&self) -> Vec<u8> {
        dnskey_rdata(self.flags, self.algorithm, &self.public_key)
    }

    /// True when the key is in the DNSKEY RRset.
    pub fn is_published(&self) -> bool {
        self.state != KeyState::Signing
    }

    /// True for a key with the SEP bit (KSK or CSK).
    pub fn is_ksk(&self) -> bool {
        self.flags & 1 == 1
    }

    /// "KSK"/"ZSK" for people.
    pub fn role(&self) -> &'static str {
        if self.is_ksk() {
            "KSK"
        } else {
            "ZSK"
        }
    }
}

/// NSEC3 settings of a zone (RFC 5155; RFC 9276 recommends 0 iterations and
/// no salt).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Nsec3Config {
    /// Extra hash iterations.
    pub iterations: u16,
    /// Salt bytes (empty for none).
    pub salt: Vec<u8>,
    /// Opt-out: unsigned delegations stay out of the chain.
    pub opt_out: bool,
}

impl Nsec3Config {
    /// The stored form: `{iter, salt (hex), optout}`.
    pub fn to_doc(&self) -> Document {
        doc! {"iter": i32::from(self.iterations), "salt": to_hex(&self.salt), "optout": self.opt_out}
    }

    /// Reads the stored form (missing fields: 0, no salt, no opt-out).
    pub fn from_doc(n: &Document) -> Nsec3Config {
        Nsec3Config {
            iterations: n
                .get("iter")
                .and_then(|v| v.as_i32().map(i64::from).or(v.as_i64()))
                .unwrap_or(0) as u16,
            salt: n
                .get_str("salt")
                .ok()
                .and_then(from_hex)
                .unwrap_or_default(),
            opt_out: n.get_bool("optout").unwrap_or(false),
        }
    }
}

/// The `dnssec` section of a zone document.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct DnssecConfig {
    /// True once a complete signed version of the zone has been published.
    pub secured: bool,
    /// NSEC3 settings; `None` means NSEC.
    pub nsec3: Option<Nsec3Config>,
    /// Publish CDS and CDNSKEY (RFC 7344) for the SEP keys.
    pub cds: bool,
    /// The key and signing policy in force (a copy of the named one), if
    /// the zone has one: the signing service keeps such a zone valid and
    /// rolls its keys.
    pub policy: Option<Policy>,
    /// The parent zone's servers (`ADDR:PORT`), asked for the DS during a
    /// KSK or CSK rollover.
    pub parents: Vec<String>,
    /// Every signed node carries its `sx` (earliest signature expiration),
    /// so refreshes read only what is due.
    pub marked: bool,
    /// The generation of the served version up to which the signing
    /// service has signed every writer's change (a process taking the zone
    /// over goes on from there). Not written by switches: a new version
    /// starts without it.
    pub seen_gen: Option<i64>,
}

/// The `_id` of the node holding the NSEC3 record with hash `b32` (base32hex).
///
/// It has four space-separated parts, so it can never equal the `_id` of an
/// ordinary node (names never contain a raw space): ordinary lookups of the
/// hashed owner name do not find it, as RFC 5155 wants.
pub fn nsec3_node_id(zone: &Name, ver: i64, b32: &str) -> String {
    format!("{zone} {ver} nsec3 {b32}")
}

/// One RRset with what the signer stores next to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignedRRset {
    /// The records.
    pub rrset: RRset,
    /// RRSIG rdata covering it.
    pub sigs: Vec<Box<[u8]>>,
    /// [`dns::dnssec::rrset_digest`] of the content the signatures were made over.
    pub sd: Option<i64>,
}

/// A node with everything the signer reads and writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FullNode {
    /// The owner name (the hashed owner for an NSEC3 node).
    pub name: Name,
    /// RRsets with their signatures.
    pub rrsets: Vec<SignedRRset>,
    /// The denial key (see the module documentation); `None` when the node
    /// owns no NSEC/NSEC3 record.
    pub dk: Option<String>,
    /// True for an NSEC3 node (stored under [`nsec3_node_id`]).
    pub nsec3: bool,
}

impl FullNode {
    /// The RRset of `rtype`.
    pub fn get(&self, rtype: RType) -> Option<&SignedRRset> {
        self.rrsets.iter().find(|r| r.rrset.rtype == rtype)
    }

    /// The `_id` of this node in `zone` version `ver`.
    pub fn id(&self, zone: &Name, ver: i64) -> String {
        match (&self.dk, self.nsec3) {
            (Some(b32), true) => nsec3_node_id(zone, ver, b32),
            _ => node_id(zone, ver, &self.name),
        }
    }

    /// The document, as inserted into a new version.
    pub fn to_doc(&self, zone: &Name, ver: i64) -> Document {
        let mut sets = Document::new();
        for s in &self.rrsets {
            sets.insert(s.rrset.rtype.mnemonic().into_owned(), signed_rrset_doc(s));
        }
        let mut d = doc! {
            "_id": self.id(zone, ver),
            "zone": zone.to_string(),
            "ver": ver,
            "name": self.name.to_string(),
            "ck": self.name.canonical_key(),
            "rrsets": sets,
        };
        if let Some(dk) = &self.dk {
            d.insert("dk", dk.clone());
        }
        if let Some(sx) = self.earliest_expiration() {
            d.insert("sx", sx);
        }
        d
    }

    /// The earliest expiration of the node's signatures, if it has any.
    pub fn earliest_expiration(&self) -> Option<i64> {
        self.rrsets
            .iter()
            .filter_map(|s| earliest_of(&s.sigs))
            .min()
    }
}

/// The earliest expiration among RRSIG rdata `sigs`.
pub fn earliest_of(sigs: &[Box<[u8]>]) -> Option<i64> {
    sigs.iter()
        .filter_map(|s| dns::dnssec::rrsig_expiration(s))
        .map(i64::from)
        .min()
}

/// The stored form of one signed RRset.
pub fn signed_rrset_doc(s: &SignedRRset) -> Document {
    let rd: Vec<Bson> = s.rrset.rdata.iter().map(|r| binary(r)).collect();
    let mut d = doc! { "ttl": i64::from(s.rrset.ttl), "rd": rd };
    if !s.sigs.is_empty() {
        let sigs: Vec<Bson> = s.sigs.iter().map(|r| binary(r)).collect();
        d.insert("sigs", sigs);
    }
    if let Some(sd) = s.sd {
        d.insert("sd", sd);
    }
    d
}

pub(crate) fn full_node_from_doc(d: &Document) -> Result<FullNode, StoreError> {
    let node = schema::node_from_doc(d)?;
    let sets = d.get_document("rrsets").ok();
    let rrsets = node
        .rrsets
        .iter()
        .map(|r| {
            let key = r.rtype.mnemonic();
            let sd = sets
                .and_then(|s| s.get_document(key.as_ref()).ok())
                .and_then(|s| s.get("sd"))
                .and_then(|v| v.as_i64().or(v.as_i32().map(i64::from)));
            let sigs = node
                .rrsig(r.rtype)
                .map(|s| s.rdata.clone())
                .unwrap_or_default();
            SignedRRset {
                rrset: (**r).clone(),
                sigs,
                sd,
            }
        })
        .collect();
    let id = d.get_str("_id").unwrap_or("");
    Ok(FullNode {
        name: node.name,
        rrsets,
        dk: d.get_str("dk").ok().map(str::to_string),
        nsec3: id.split(' ').count() == 4,
    })
}

/// A change to one node of a version being served, made field by field so
/// that a concurrent importer's records are never overwritten.
#[derive(Clone, Debug)]
pub enum NodeChange {
    /// Signatures (and their digest) for an RRset the signer does not own.
    Sign {
        /// Owner name.
        name: Name,
        /// The covered type.
        rtype: RType,
        /// RRSIG rdata.
        sigs: Vec<Box<[u8]>>,
        /// Digest of the signed content.
        sd: i64,
    },
    /// An RRset the signer owns (NSEC, DNSKEY, NSEC3PARAM, SOA), set whole,
    /// or removed when `set` is `None`.
    Own {
        /// Owner name.
        name: Name,
        /// The type.
        rtype: RType,
        /// The RRset, or `None` to remove it.
        set: Option<SignedRRset>,
    },
    /// Sets or clears the denial key of an ordinary node.
    DenialKey {
        /// Owner name.
        name: Name,
        /// New value.
        dk: Option<String>,
    },
    /// Writes a whole NSEC3 node (upsert).
    PutNsec3(FullNode),
    /// Sets each RRset of an ordinary node whole (records, signatures,
    /// digest) and its denial key, creating the node if needed; RRsets it
    /// does not list are left alone. How a signing writer stores a node.
    PutRRsets(FullNode),
    /// Deletes the NSEC3 node with this base32hex hash.
    DeleteNsec3(String),
    /// A refresh of an ordinary node, in one update: the signatures (and
    /// digests) of the RRsets it signed again, and the node's exact `sx`
    /// (it read the whole node; `None` when no signature is left).
    Refreshed {
        /// Owner name.
        name: Name,
        /// Each RRset signed again.
        sets: Vec<Resigned>,
        /// The earliest expiration of the node's signatures.
        sx: Option<i64>,
    },
    /// Sets a node's `sx` (earliest signature expiration) to the exact
    /// value, after a refresh read the whole node; `b32` for an NSEC3 node.
    Expiry {
        /// Owner name (ordinary node).
        name: Name,
        /// The NSEC3 node's hash instead, if it is one.
        b32: Option<String>,
        /// The earliest expiration, `None` when the node has no signature.
        sx: Option<i64>,
    },
}

/// An RRset signed again by a refresh: its type, RRSIG rdata and the
/// digest of the content signed.
pub type Resigned = (RType, Vec<Box<[u8]>>, i64);

/// The owner names whose documents `changes` write, sorted and without
/// duplicates (an NSEC3 node's is its hashed owner), for change records.
pub fn changed_owners(zone: &Name, changes: &[NodeChange]) -> Vec<Name> {
    let mut out: Vec<Name> = changes
        .iter()
        .filter_map(|c| match c {
            NodeChange::Sign { name, .. }
            | NodeChange::Own { name, .. }
            | NodeChange::DenialKey { name, .. }
            | NodeChange::Refreshed { name, .. }
            | NodeChange::Expiry {
                name, b32: None, ..
            } => Some(name.clone()),
            NodeChange::Expiry { b32: Some(b32), .. } => zone.prepend(b32.as_bytes()).ok(),
            NodeChange::PutNsec3(n) | NodeChange::PutRRsets(n) => Some(n.name.clone()),
            NodeChange::DeleteNsec3(b32) => zone.prepend(b32.as_bytes()).ok(),
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

impl Store {
    /// Creates the DNSSEC indexes (run with [`Store::ensure_indexes`]):
    /// `nodes {zone, ver, dk}` for denial lookups, `nodes {zone, ver, sx}`
    /// for signature refresh, `keys {zone}`.
    pub async fn ensure_dnssec_indexes(&self) -> Result<(), StoreError> {
        let by_dk = IndexModel::builder()
            .keys(doc! {"zone": 1, "ver": 1, "dk": 1})
            .options(
                IndexOptions::builder()
                    .name("zone_ver_dk".to_string())
                    .build(),
            )
            .build();
        self.nodes.create_index(by_dk).await?;
        // Signature refresh reads only the nodes due (`Store::due_node_ids`).
        let by_sx = IndexModel::builder()
            .keys(doc! {"zone": 1, "ver": 1, "sx": 1})
            .options(
                IndexOptions::builder()
                    .name("zone_ver_sx".to_string())
                    .sparse(true)
                    .build(),
            )
            .build();
        self.nodes.create_index(by_sx).await?;
        let keys = self.db.collection::<Document>(KEYS);
        let by_zone = IndexModel::builder()
            .keys(doc! {"zone": 1})
            .options(IndexOptions::builder().name("zone".to_string()).build())
            .build();
        keys.create_index(by_zone).await?;
        Ok(())
    }

    /// The NSEC or NSEC3 node with the greatest denial key not above `key`
    /// in the served version of `zone`: the record that matches `key` or
    /// covers it. With `wrap`, when no key is that small, the greatest of
    /// all (the last NSEC3 covers the hashes before the first).
    pub async fn denial(
        &self,
        zone: &ZoneInfo,
        key: &str,
        wrap: bool,
    ) -> Result<Option<Node>, StoreError> {
        let apex = zone.apex.to_string();
        // The query timeout bounds these on the server too (`maxTimeMS`).
        let seek = |filter: Document| {
            let q = self
                .nodes
                .find_one(filter)
                .sort(doc! {"zone": -1, "ver": -1, "dk": -1});
            match self.read_deadline {
                Some(d) => q.max_time(d),
                None => q,
            }
        };
        let found = seek(doc! {"zone": &apex, "ver": zone.ver, "dk": {"$lte": key}}).await?;
        let found = match found {
            Some(d) => Some(d),
            None if wrap => seek(doc! {"zone": &apex, "ver": zone.ver, "dk": {"$gt": ""}}).await?,
            None => None,
        };
        Ok(match found {
            Some(d) => Some(schema::node_from_doc(&d)?),
            None => None,
        })
    }

    /// The zone's `dnssec` section (`None` for a zone never secured), or
    /// `NoSuchZone`.
    pub async fn dnssec_config(&self, zone: &Name) -> Result<DnssecConfig, StoreError> {
        let d = self
            .zones
            .find_one(doc! {"_id": zone.to_string()})
            .await?
            .filter(|d| d.contains_key("ver"))
            .ok_or_else(|| StoreError::NoSuchZone(zone.to_string()))?;
        let Ok(sec) = d.get_document("dnssec") else {
            return Ok(DnssecConfig::default());
        };
        let nsec3 = sec.get_document("nsec3").ok().map(Nsec3Config::from_doc);
        Ok(DnssecConfig {
            secured: sec.get_bool("secured").unwrap_or(false),
            nsec3,
            cds: sec.get_bool("cds").unwrap_or(false),
            policy: sec.get_document("policy").ok().map(Policy::from_doc),
            parents: sec
                .get_array("parents")
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default(),
            marked: sec.get_bool("marked").unwrap_or(false),
            seen_gen: sec.get("seen_gen").and_then(Bson::as_i64),
        })
    }

    /// The zone document's `dnssec` field for `config` (`Bson::Null`
    /// removes it), for writers that set it in the same update as a switch.
    pub fn dnssec_field(config: Option<&DnssecConfig>) -> Bson {
        match config {
            Some(c) => {
                let mut sec = doc! {"secured": c.secured, "cds": c.cds, "marked": c.marked};
                if let Some(n) = &c.nsec3 {
                    sec.insert("nsec3", n.to_doc());
                }
                if let Some(p) = &c.policy {
                    sec.insert("policy", p.to_doc());
                }
                if !c.parents.is_empty() {
                    sec.insert("parents", c.parents.clone());
                }
                Bson::Document(sec)
            }
            None => Bson::Null,
        }
    }

    /// Every key of `zone`, oldest first.
    pub async fn zone_keys(&self, zone: &Name) -> Result<Vec<StoredKey>, StoreError> {
        let keys = self.db.collection::<Document>(KEYS);
        let mut cursor = keys.find(doc! {"zone": zone.to_string()}).await?;
        let mut out = Vec::new();
        while let Some(d) = cursor.try_next().await? {
            out.push(key_from_doc(&d)?);
        }
        out.sort_by_key(|k| (k.created, k.id.clone()));
        Ok(out)
    }

    /// Stores a new key.
    pub async fn insert_key(&self, key: &StoredKey) -> Result<(), StoreError> {
        self.insert_keys(std::slice::from_ref(key)).await
    }

    /// Stores several new keys in one command: a writer killed while
    /// storing a zone's first KSK and ZSK leaves both or neither, never a
    /// KSK alone that a re-run would take for a CSK.
    pub async fn insert_keys(&self, new: &[StoredKey]) -> Result<(), StoreError> {
        let keys = self.db.collection::<Document>(KEYS);
        keys.insert_many(new.iter().map(key_doc)).await?;
        Ok(())
    }

    /// Changes a key's state.
    pub async fn set_key_state(&self, id: &str, state: KeyState) -> Result<(), StoreError> {
        let keys = self.db.collection::<Document>(KEYS);
        keys.update_one(doc! {"_id": id}, doc! {"$set": {"state": state.as_str()}})
            .await?;
        Ok(())
    }

    /// Deletes a key.
    pub async fn delete_key(&self, id: &str) -> Result<(), StoreError> {
        let keys = self.db.collection::<Document>(KEYS);
        keys.delete_one(doc! {"_id": id}).await?;
        Ok(())
    }

    /// Every node of version `ver` of `zone` with signatures and denial
    /// keys, in canonical order (NSEC3 nodes included, marked).
    ///
    /// One unsorted cursor, sorted here: FerretDB sorts in memory anyway
    /// (it pushes no sort down to SQLite but `$natural`), and MongoDB would
    /// need the `zone_ver_ck` index walk for nothing. `zone`, `ver` and `ck`
    /// are left out of the documents sent (the caller knows the first two;
    /// the order is computed from `name`). On FerretDB this read costs about
    /// 0.2 ms of the database's CPU per document of the collection, whatever
    /// the filter, batch size or projection (it decodes every document's
    /// JSON; only `{_id: <string>}` is pushed down), so it is bounded by the
    /// collection's size, not by round trips (`docs/benchmarks.md`).
    pub async fn read_version(&self, zone: &Name, ver: i64) -> Result<Vec<FullNode>, StoreError> {
        let mut cursor = self
            .nodes
            .find(doc! {"zone": zone.to_string(), "ver": ver})
            .projection(doc! {"zone": 0, "ver": 0, "ck": 0})
            .batch_size(1000)
            .await?;
        let mut out = Vec::new();
        while let Some(d) = cursor.try_next().await? {
            out.push(full_node_from_doc(&d)?);
        }
        out.sort_by_cached_key(|n| (n.name.canonical_key(), n.nsec3));
        Ok(out)
    }

    /// Versions `a` and `b` of `zone`, in one read: `None` when either
    /// holds more than `max` nodes.
    pub async fn read_versions_upto(
        &self,
        zone: &Name,
        (a, b): (i64, i64),
        max: usize,
    ) -> Result<Option<(Vec<FullNode>, Vec<FullNode>)>, StoreError> {
        let limit = i64::try_from(2 * max + 2).unwrap_or(i64::MAX);
        let mut cursor = self
            .nodes
            .find(doc! {"zone": zone.to_string(), "ver": {"$in": [a, b]}})
            .projection(doc! {"zone": 0, "ck": 0})
            .limit(limit)
            .batch_size(1000)
            .await?;
        let (mut first, mut second) = (Vec::new(), Vec::new());
        while let Some(d) = cursor.try_next().await? {
            let ver = int_field(&d, "ver");
            let node = full_node_from_doc(&d)?;
            match ver == Some(a) {
                true => first.push(node),
                false => second.push(node),
            }
            if first.len() > max || second.len() > max {
                return Ok(None);
            }
        }
        Ok(Some((first, second)))
    }

    /// One ordinary node of version `ver` with signatures and denial key.
    pub async fn read_full_node(
        &self,
        zone: &Name,
        ver: i64,
        name: &Name,
    ) -> Result<Option<FullNode>, StoreError> {
        let found = self
            .nodes
            .find_one(doc! {"_id": node_id(zone, ver, name)})
            .await?;
        found.as_ref().map(full_node_from_doc).transpose()
    }

    /// The node (ordinary or NSEC3) stored under `_id` `id`.
    pub async fn read_full_node_by_id(&self, id: &str) -> Result<Option<FullNode>, StoreError> {
        let found = self.nodes.find_one(doc! {"_id": id}).await?;
        found.as_ref().map(full_node_from_doc).transpose()
    }

    /// The nodes stored under the `_id`s `ids` (`None` for those missing),
    /// in their order: point lookups, [`READS_AT_ONCE`] in flight (the
    /// database's fastest read on MongoDB as on FerretDB, where any other
    /// filter scans the collection).
    pub async fn read_full_nodes_by_id(
        &self,
        ids: &[String],
    ) -> Result<Vec<Option<FullNode>>, StoreError> {
        let mut out = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(READS_AT_ONCE) {
            let reads = chunk.iter().map(|id| self.read_full_node_by_id(id));
            out.extend(futures::future::try_join_all(reads).await?);
        }
        Ok(out)
    }

    /// The ordinary nodes `names` of version `ver`, in their order, read as
    /// [`Store::read_full_nodes_by_id`] reads.
    pub async fn read_full_nodes(
        &self,
        zone: &Name,
        ver: i64,
        names: &[Name],
    ) -> Result<Vec<Option<FullNode>>, StoreError> {
        let ids: Vec<String> = names.iter().map(|n| node_id(zone, ver, n)).collect();
        self.read_full_nodes_by_id(&ids).await
    }

    /// The NSEC or NSEC3 chain of version `ver`: every node with a denial
    /// key, with only its NSEC/NSEC3 RRset read.
    pub async fn read_chain(&self, zone: &Name, ver: i64) -> Result<Vec<FullNode>, StoreError> {
        let mut cursor = self
            .nodes
            .find(doc! {"zone": zone.to_string(), "ver": ver, "dk": {"$gt": ""}})
            .projection(doc! {"_id": 1, "name": 1, "dk": 1, "rrsets.NSEC": 1, "rrsets.NSEC3": 1})
            .await?;
        let mut out = Vec::new();
        while let Some(d) = cursor.try_next().await? {
            out.push(full_node_from_doc(&d)?);
        }
        Ok(out)
    }

    /// Stores `node` whole in version `ver`, replacing what was there (a
    /// signer catching a new version up with the served one).
    pub async fn put_full_node(
        &self,
        zone: &Name,
        ver: i64,
        node: &FullNode,
    ) -> Result<(), StoreError> {
        self.nodes
            .replace_one(doc! {"_id": node.id(zone, ver)}, node.to_doc(zone, ver))
            .upsert(true)
            .await?;
        Ok(())
    }

    /// Deletes the ordinary node `name` of version `ver`, if it exists.
    pub async fn delete_node(&self, zone: &Name, ver: i64, name: &Name) -> Result<(), StoreError> {
        self.nodes
            .delete_one(doc! {"_id": node_id(zone, ver, name)})
            .await?;
        Ok(())
    }

    /// Inserts whole nodes into a version that is not served yet.
    pub async fn insert_full_nodes(
        &self,
        zone: &Name,
        ver: i64,
        nodes: &[FullNode],
    ) -> Result<(), StoreError> {
        if nodes.is_empty() {
            return Ok(());
        }
        let docs: Vec<Document> = nodes.iter().map(|n| n.to_doc(zone, ver)).collect();
        let reply = self
            .db
            .run_command(doc! {"insert": NODES, "documents": docs, "ordered": false})
            .await?;
        check_write_errors("insert", &reply)
    }

    /// Applies changes to version `ver` of `zone`: unordered update
    /// commands of at most `writer::MAX_UPDATES_PER_COMMAND` statements,
    /// then deletes. Each change touches only its own fields.
    pub async fn apply_changes(
        &self,
        zone: &Name,
        ver: i64,
        changes: &[NodeChange],
    ) -> Result<(), StoreError> {
        let mut updates = Vec::new();
        let mut deletes = Vec::new();
        for c in changes {
            match c {
                NodeChange::Sign {
                    name,
                    rtype,
                    sigs,
                    sd,
                } => {
                    let key = rtype.mnemonic();
                    let sigs: Vec<Bson> = sigs.iter().map(|r| binary(r)).collect();
                    let mut u = doc! {"$set": {format!("rrsets.{key}.sigs"): sigs, format!("rrsets.{key}.sd"): sd}};
                    min_expiry(&mut u, earliest_of(sigs_in(c)));
                    updates.push(doc! {"q": {"_id": node_id(zone, ver, name)}, "u": u});
                }
                NodeChange::Own { name, rtype, set } => {
                    let key = format!("rrsets.{}", rtype.mnemonic());
                    let u = match set {
                        Some(s) => {
                            let mut u = doc! {"$set": {key: signed_rrset_doc(s)}};
                            min_expiry(&mut u, earliest_of(&s.sigs));
                            u
                        }
                        None => doc! {"$unset": {key: ""}},
                    };
                    updates.push(doc! {"q": {"_id": node_id(zone, ver, name)}, "u": u});
                }
                NodeChange::DenialKey { name, dk } => {
                    let u = match dk {
                        Some(dk) => doc! {"$set": {"dk": dk}},
                        None => doc! {"$unset": {"dk": ""}},
                    };
                    updates.push(doc! {"q": {"_id": node_id(zone, ver, name)}, "u": u});
                }
                NodeChange::PutNsec3(node) => {
                    let mut d = node.to_doc(zone, ver);
                    d.remove("_id");
                    updates.push(doc! {
                        "q": {"_id": node.id(zone, ver)},
                        "u": d,
                        "upsert": true,
                    });
                }
                NodeChange::PutRRsets(node) => {
                    let mut on_insert = doc! {
                        "zone": zone.to_string(),
                        "ver": ver,
                        "name": node.name.to_string(),
                        "ck": node.name.canonical_key(),
                    };
                    let mut set = Document::new();
                    for r in &node.rrsets {
                        set.insert(
                            format!("rrsets.{}", r.rrset.rtype.mnemonic()),
                            signed_rrset_doc(r),
                        );
                    }
                    if node.rrsets.is_empty() {
                        on_insert.insert("rrsets", Document::new());
                    }
                    if let Some(dk) = &node.dk {
                        set.insert("dk", dk.clone());
                    }
                    let mut u = doc! {"$setOnInsert": on_insert};
                    if !set.is_empty() {
                        u.insert("$set", set);
                    }
                    min_expiry(&mut u, node.earliest_expiration());
                    updates.push(doc! {
                        "q": {"_id": node_id(zone, ver, &node.name)},
                        "u": u,
                        "upsert": true,
                    });
                }
                NodeChange::DeleteNsec3(b32) => {
                    deletes.push(doc! {"q": {"_id": nsec3_node_id(zone, ver, b32)}, "limit": 1});
                }
                NodeChange::Refreshed { name, sets, sx } => {
                    let mut set = Document::new();
                    for (rtype, sigs, sd) in sets {
                        let key = rtype.mnemonic();
                        let sigs: Vec<Bson> = sigs.iter().map(|r| binary(r)).collect();
                        set.insert(format!("rrsets.{key}.sigs"), sigs);
                        set.insert(format!("rrsets.{key}.sd"), *sd);
                    }
                    let mut u = Document::new();
                    match sx {
                        Some(sx) => {
                            set.insert("sx", *sx);
                        }
                        None => {
                            u.insert("$unset", doc! {"sx": ""});
                        }
                    }
                    if !set.is_empty() {
                        u.insert("$set", set);
                    }
                    updates.push(doc! {"q": {"_id": node_id(zone, ver, name)}, "u": u});
                }
                NodeChange::Expiry { name, b32, sx } => {
                    let id = match b32 {
                        Some(b32) => nsec3_node_id(zone, ver, b32),
                        None => node_id(zone, ver, name),
                    };
                    let u = match sx {
                        Some(sx) => doc! {"$set": {"sx": sx}},
                        None => doc! {"$unset": {"sx": ""}},
                    };
                    updates.push(doc! {"q": {"_id": id}, "u": u});
                }
            }
        }
        // Small update commands, one at a time: FerretDB deadlocks on
        // ~100 statements in one (`writer::MAX_UPDATES_PER_COMMAND`); this
        // sent 1,000 and hung `resign` of any zone with that many changes.
        self.run_updates(updates).await?;
        for chunk in deletes.chunks(1000) {
            let reply = self
                .db
                .run_command(doc! {"delete": NODES, "deletes": chunk.to_vec(), "ordered": false})
                .await?;
            check_write_errors("delete", &reply)?;
        }
        Ok(())
    }

    /// Tells servers that version `ver` of `zone`, served, changed in
    /// place: records the new SOA serial and a new generation, after
    /// storing a signed change record of that generation listing `changed`
    /// (the owner names whose documents the signer wrote; `None` or more
    /// than [`schema::MAX_CHANGED_NAMES`]: "all"). Servers then drop only
    /// those names; `resign --follow` knows there is nothing to re-sign for
    /// them. Under the zone lock; fails with [`StoreError::Conflict`] when
    /// another writer switched the zone away from `ver` meanwhile (what was
    /// written went into a version no longer served).
    ///
    /// With `images` (the before-images of every node written), the change
    /// is journaled for IXFR.
    pub async fn publish_in_place(
        &self,
        zone: &Name,
        ver: i64,
        serial: u32,
        changed: Option<&[Name]>,
        images: Option<&NodeImages>,
    ) -> Result<i64, StoreError> {
        let lock = self.lock(ZONE_LOCK, zone, "publish", LOCK_WAIT).await?;
        let r = self
            .publish_in_place_locked(zone, ver, serial, changed, images)
            .await;
        lock.release_with(r).await
    }

    async fn publish_in_place_locked(
        &self,
        zone: &Name,
        ver: i64,
        serial: u32,
        changed: Option<&[Name]>,
        images: Option<&NodeImages>,
    ) -> Result<i64, StoreError> {
        let current = self.zones.find_one(doc! {"_id": zone.to_string()}).await?;
        let served = current.as_ref().and_then(|d| int_field(d, "ver"));
        if served != Some(ver) {
            return Err(StoreError::Conflict(format!(
                "zone {zone}: another writer switched it away from version {ver} while it was being signed; nothing was published"
            )));
        }
        let gen = self.take_generation_with(zone, changed, true).await?;
        let mut set = doc! {"serial": i64::from(serial), "updated": DateTime::now()};
        if !writer::merge_live(current.as_ref()) {
            // The content at this serial is the content at this generation.
            set.insert(writer::SERIAL_GEN, gen);
        }
        self.zones
            .update_one(
                doc! {"_id": zone.to_string()},
                doc! {"$set": set, "$max": {"gen": gen}},
            )
            .await?;
        if let Some(images) = images {
            if let Err(e) = self.journal_in_place(images, current.as_ref(), gen).await {
                // The change is in; a secondary behind it gets the whole zone.
                tracing::warn!(%zone, error = %e, "the signed change could not be journaled");
            }
        }
        Ok(gen)
    }
}

fn check_write_errors(what: &str, reply: &Document) -> Result<(), StoreError> {
    if let Ok(errors) = reply.get_array("writeErrors") {
        if let Some(e) = errors.iter().filter_map(Bson::as_document).next() {
            return Err(StoreError::Database(mongodb::error::Error::custom(
                format!(
                    "{what}: {} write error(s), first: {}",
                    errors.len(),
                    e.get_str("errmsg").unwrap_or("?")
                ),
            )));
        }
    }
    Ok(())
}

/// The stored document of `key`.
pub(crate) fn key_doc(key: &StoredKey) -> Document {
    doc! {
        "_id": &key.id,
        "zone": key.zone.to_string(),
        "flags": i32::from(key.flags),
        "alg": i32::from(key.algorithm),
        "tag": i32::from(key.tag),
        "pub": binary(&key.public_key),
        "priv": binary(&key.private_pkcs8),
        "state": key.state.as_str(),
        "created": key.created,
        "since": key.since.map_or(Bson::Null, Bson::DateTime),
        "ds_seen": key.ds_seen.map_or(Bson::Null, |(at, _)| Bson::DateTime(at)),
        "ds_ttl": key.ds_seen.map_or(Bson::Null, |(_, ttl)| Bson::Int64(i64::from(ttl))),
        "roll": key.roll,
    }
}

fn key_from_doc(d: &Document) -> Result<StoredKey, StoreError> {
    let id = d.get_str("_id").unwrap_or("?").to_string();
    let bad = |reason: &str| {
        StoreError::Schema(schema::SchemaError {
            id: id.clone(),
            reason: reason.to_string(),
        })
    };
    let int = |k: &str| {
        d.get(k)
            .and_then(|v| v.as_i32().map(i64::from).or(v.as_i64()))
            .ok_or_else(|| bad(&format!("missing {k}")))
    };
    let bin = |k: &str| match d.get(k) {
        Some(Bson::Binary(b)) => Ok(b.bytes.clone()),
        _ => Err(bad(&format!("missing {k}"))),
    };
    Ok(StoredKey {
        zone: d
            .get_str("zone")
            .map_err(|_| bad("missing zone"))?
            .parse()
            .map_err(|_| bad("bad zone"))?,
        flags: int("flags")? as u16,
        algorithm: int("alg")? as u8,
        tag: int("tag")? as u16,
        public_key: bin("pub")?,
        private_pkcs8: bin("priv")?,
        state: d
            .get_str("state")
            .ok()
            .and_then(KeyState::parse)
            .ok_or_else(|| bad("bad state"))?,
        created: d.get_datetime("created").copied().unwrap_or(DateTime::MIN),
        // Keys stored before the signing service took effect when made.
        since: match d.get("since") {
            Some(Bson::DateTime(t)) => Some(*t),
            Some(Bson::Null) => None,
            _ => d.get_datetime("created").ok().copied(),
        },
        ds_seen: d.get_datetime("ds_seen").ok().map(|t| {
            let ttl = d
                .get("ds_ttl")
                .and_then(|v| v.as_i64().or(v.as_i32().map(i64::from)))
                .unwrap_or(0);
            (*t, ttl.clamp(0, i64::from(u32::MAX)) as u32)
        }),
        roll: d.get_bool("roll").unwrap_or(false),
        id: id.clone(),
    })
}

/// The signatures a `Sign` change writes.
fn sigs_in(c: &NodeChange) -> &[Box<[u8]>] {
    match c {
        NodeChange::Sign { sigs, .. } => sigs,
        _ => &[],
    }
}

/// Adds `$min: {sx}` to an update: a node's `sx` is never later than its
/// earliest signature, whatever order writers write in (a refresh that
/// read the whole node sets it exactly with [`NodeChange::Expiry`]).
fn min_expiry(update: &mut Document, sx: Option<i64>) {
    if let Some(sx) = sx {
        update.insert("$min", doc! {"sx": sx});
    }
}
