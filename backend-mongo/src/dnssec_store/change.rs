//! A change to one node of a served version, made field by field so that a
//! concurrent importer's records are never overwritten: what the signer
//! hands to [`Store::apply_changes`](crate::Store::apply_changes)
//! (`writer/signed_nodes.rs`), and the owner names such changes touch.
//!
//! ```text
//!  NodeChange ─ Sign (sigs + sd of a type) │ Own (an RRset set whole or removed)
//!             │ DenialKey │ PutNsec3 │ PutRRsets │ DeleteNsec3 │ Refreshed │ Expiry
//!  changed_owners(zone, changes) ──► sorted owner names (NSEC3: the hashed owner)
//!                                    ──► the change record of the publish
//! ```

use super::node::{FullNode, SignedRRset};
use crate::{Name, RType};

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
