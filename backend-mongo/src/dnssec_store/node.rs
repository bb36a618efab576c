//! Signed nodes: a node with its RRsets' signatures, digests and denial
//! key as the signer reads and writes it, and its stored document.
//!
//! ```text
//!  FullNode { name, rrsets: [SignedRRset { rrset, sigs, sd }], dk?, nsec3 }
//!     ── to_doc(zone, ver) ──► nodes { _id, zone, ver, name, ck, dk?, sx?,
//!                                      rrsets: { TYPE: { ttl, rd, sigs?, sd? } } }
//!     ◄─ full_node_from_doc ──  (sigs from the stored RRSIG set of each type)
//!  _id: node_id(zone, ver, name), or nsec3_node_id(zone, ver, b32) for an NSEC3 node
//!  sx = earliest_of(every RRSIG's expiration)
//! ```

use crate::schema::{self, binary, node_id, RRset};
use crate::store::StoreError;
use crate::{Name, RType};
use mongodb::bson::{doc, Bson, Document};

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
