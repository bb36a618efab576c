//! Signature refresh by expiry: only the nodes holding a signature that
//! falls due are read, through the `zone_ver_sx` index, never the zone.
//!
//! ```text
//!  due_node_ids(zone, ver, now + refresh, limit), before the lease
//!  ─► nodes_still_due(ids), under it ─► per node, per RRset:
//!     a signature due and the content as signed (digest) ─► signed again
//!     (the policy's validity, jitter per RRset)
//!     content changed since it was signed ─► left to the change records'
//!     signer (follow), which also fixes the chain
//!  ─► one update a node: the RRsets signed again + its exact sx
//!     (Refreshed; an NSEC3 node written whole, PutNsec3) ─► apply_changes
//! ```
//!
//! The caller (the signing service's follower) then moves the SOA serial,
//! signed, and publishes in place with the names written, so servers and
//! resident copies take the new signatures.

use crate::plan::{KeySet, SignOptions};
use crate::SignError;
use backend_mongo::dnssec_store::{FullNode, NodeChange, Resigned};
use backend_mongo::Store;
use dns::dnssec::{rrset_digest, rrsig_expiration};
use dns::{Name, RType};

/// What one refresh pass did.
#[derive(Debug, Default)]
pub struct Refreshed {
    /// The nodes read (as they are now stored).
    pub nodes: Vec<FullNode>,
    /// Signatures made.
    pub signed: u64,
    /// Owner names written.
    pub names: Vec<Name>,
}

/// Re-signs what falls due in `nodes` of version `ver` of `zone` (read by
/// [`Store::nodes_still_due`]; signatures expiring before
/// `options.refresh_before`) and stores it with each node's exact `sx`.
pub async fn refresh_due(
    store: &Store,
    zone: &Name,
    ver: i64,
    mut nodes: Vec<FullNode>,
    keys: &KeySet,
    options: &SignOptions,
) -> Result<Refreshed, SignError> {
    let mut out = Refreshed::default();
    let mut changes = Vec::new();
    for node in &mut nodes {
        let sets = refresh_node(node, keys, options);
        let signed: u64 = sets.iter().map(|(_, sigs, _)| sigs.len() as u64).sum();
        out.signed += signed;
        if signed > 0 {
            out.names.push(node.name.clone());
        }
        if node.nsec3 {
            // Written whole, its exact sx with it.
            if signed > 0 {
                changes.push(NodeChange::PutNsec3(node.clone()));
            } else {
                changes.push(NodeChange::Expiry {
                    name: node.name.clone(),
                    b32: node.dk.clone(),
                    sx: node.earliest_expiration(),
                });
            }
        } else {
            changes.push(NodeChange::Refreshed {
                name: node.name.clone(),
                sets,
                sx: node.earliest_expiration(),
            });
        }
    }
    store.apply_changes(zone, ver, &changes).await?;
    out.nodes = nodes;
    Ok(out)
}

/// Signs again, in place, each RRset of `node` with a signature due whose
/// content is the one signed; those RRsets' types, signatures and digests.
fn refresh_node(node: &mut FullNode, keys: &KeySet, options: &SignOptions) -> Vec<Resigned> {
    let horizon = options.refresh_before;
    let mut out = Vec::new();
    for set in &mut node.rrsets {
        let due = set
            .sigs
            .iter()
            .any(|s| rrsig_expiration(s).is_none_or(|e| e < horizon));
        let digest = rrset_digest(set.rrset.ttl, &set.rrset.rdata);
        if !due || set.sd != Some(digest) {
            continue;
        }
        let t = set.rrset.rtype;
        let signers = match matches!(t, RType::DNSKEY | RType::CDS | RType::CDNSKEY) {
            true => &keys.ksks,
            false => &keys.zsks,
        };
        set.sigs = signers
            .iter()
            .map(|k| {
                let exp = options.expiration_of(&node.name, t);
                let rrset = &set.rrset;
                k.sign_rrset(
                    &node.name,
                    t,
                    rrset.ttl,
                    &rrset.rdata,
                    options.inception,
                    exp,
                )
                .into_boxed_slice()
            })
            .collect();
        out.push((t, set.sigs.clone(), digest));
    }
    out
}
