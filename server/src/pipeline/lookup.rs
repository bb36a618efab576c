//! Finding where a name lands inside a zone (RFC 1034 §4.3.2 step 3).
//!
//! ```text
//!  find_zone(qname) ── longest apex that is a served zone ──► ZoneInfo
//!  zone_for_question: the same, except DS at a zone's apex goes to the
//!                     parent zone when we serve it (RFC 4035 §3.1.4.1)
//!  walk(zone, name):  fetch apex … name concurrently, then top-down:
//!     ancestor with NS (below apex) ─► Delegation
//!     ancestor with DNAME (above name) ─► Dname
//!     name exists ─► Exact            (NS at name too, unless qtype is DS)
//!     missing ─► *.closest exists ? Wildcard : NxDomain
//! ```

use crate::backend::Backend;
use backend_mongo::{Name, Node, RType, StoreError, ZoneInfo};
use futures::future::try_join_all;
use std::sync::Arc;

/// Where a name landed.
#[derive(Clone, Debug)]
pub enum Walk {
    /// The name exists (possibly as an empty non-terminal).
    Exact(Arc<Node>),
    /// A zone cut at `cut` (at or above the name) delegates it away.
    Delegation {
        /// The owner of the NS RRset.
        cut: Name,
        /// The node at the cut.
        node: Arc<Node>,
    },
    /// A DNAME at `owner`, strictly above the name, redirects it.
    Dname {
        /// The owner of the DNAME.
        owner: Name,
        /// The node holding the DNAME.
        node: Arc<Node>,
    },
    /// The name does not exist but `*.closest` does.
    Wildcard {
        /// The closest encloser.
        closest: Name,
        /// The wildcard node `*.closest`.
        source: Arc<Node>,
    },
    /// Neither the name nor a wildcard for it exists.
    NxDomain {
        /// The closest encloser.
        closest: Name,
    },
}

/// The served zone with the longest apex that encloses `qname`.
pub async fn find_zone<B: Backend>(
    backend: &B,
    qname: &Name,
) -> Result<Option<ZoneInfo>, StoreError> {
    let candidates: Vec<Name> = qname.ancestors().collect();
    let found = try_join_all(candidates.iter().map(|c| backend.find_zone(c))).await?;
    Ok(found.into_iter().flatten().next())
}

/// The zone that answers `qname`/`qtype`: the deepest served zone, except
/// that a DS question at the apex of a served zone is answered from the
/// parent side when we serve the parent too (RFC 4035 §3.1.4.1).
pub async fn zone_for_question<B: Backend>(
    backend: &B,
    qname: &Name,
    qtype: RType,
) -> Result<Option<ZoneInfo>, StoreError> {
    let zone = find_zone(backend, qname).await?;
    match (&zone, qname.parent()) {
        (Some(z), Some(parent)) if qtype == RType::DS && z.apex == *qname => {
            Ok(find_zone(backend, &parent).await?.or(zone))
        }
        _ => Ok(zone),
    }
}

/// Walks `zone` from its apex down to `name` (which must be in the zone).
pub async fn walk<B: Backend>(
    backend: &B,
    zone: &ZoneInfo,
    name: &Name,
    qtype: RType,
) -> Result<Walk, StoreError> {
    // apex … name, top-down.
    let depth = name.label_count() - zone.apex.label_count();
    let mut path: Vec<Name> = name.ancestors().take(depth + 1).collect();
    path.reverse();
    let nodes = try_join_all(path.iter().map(|n| backend.get_node(zone, n))).await?;
    let last = path.len() - 1;
    let mut closest = zone.apex.clone();
    for (i, (at, node)) in path.iter().zip(nodes).enumerate() {
        let Some(node) = node else {
            return wildcard(backend, zone, closest).await;
        };
        let is_apex = i == 0;
        let is_name = i == last;
        if !is_apex && node.rrset(RType::NS).is_some() && !(is_name && qtype == RType::DS) {
            return Ok(Walk::Delegation {
                cut: at.clone(),
                node,
            });
        }
        if !is_name && node.rrset(RType::DNAME).is_some() {
            return Ok(Walk::Dname {
                owner: at.clone(),
                node,
            });
        }
        if is_name {
            return Ok(Walk::Exact(node));
        }
        closest = at.clone();
    }
    // The apex node itself is missing: the zone has no data.
    Ok(Walk::NxDomain { closest })
}

async fn wildcard<B: Backend>(
    backend: &B,
    zone: &ZoneInfo,
    closest: Name,
) -> Result<Walk, StoreError> {
    let Ok(star) = closest.wildcard() else {
        return Ok(Walk::NxDomain { closest });
    };
    match backend.get_node(zone, &star).await? {
        Some(source) => Ok(Walk::Wildcard { closest, source }),
        None => Ok(Walk::NxDomain { closest }),
    }
}
