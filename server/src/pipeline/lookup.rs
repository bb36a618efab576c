//! Finding where a name lands inside a zone (RFC 1034 §4.3.2 step 3).
//!
//! ```text
//!  find_zone(qname) ── longest apex that is a served zone ──► ZoneInfo
//!     (from the zone registry alone when it knows every candidate, else
//!      one read of every candidate it does not know: Backend::enclosing_zone)
//!  zone_for_question: the same, except DS at a zone's apex goes to the
//!                     parent zone when we serve it (RFC 4035 §3.1.4.1),
//!                     as the backend's answer_view of it (answer_zone)
//!  walk(zone, name):  apex … name, top-down (PathReader), each level
//!     judged by rules.rs:
//!     ancestor with NS (below apex) ─► Delegation
//!     ancestor with DNAME (above name) ─► Dname
//!     name exists ─► Exact            (NS at name too, unless qtype is DS)
//!     missing ─► *.closest exists ? Wildcard : NxDomain
//!  PathReader: levels the record cache knows (present or known missing)
//!     cost nothing; the others are read in rounds of 1, 2, 4, … levels
//!     (plus the levels the cache holds expired, read in the same round),
//!     stopping at the first missing one, which the record cache then
//!     remembers negatively (every name below it needs no read)
//! ```
//!
//! Why rounds, and not every level at once: a name 115 labels deep under a
//! zone whose data is 3 levels deep cost 115 reads when every level was
//! read together; top-down it costs one read (the first missing level)
//! once the levels above are cached, and never more than about twice the
//! number of stored levels read plus one. Why not one `$in` read of all
//! the ancestors: FerretDB answers any filter but `{_id: …}` with a full
//! scan. The price: a stored name whose k ancestors are all uncached
//! takes about log2(k) + 1 round trips instead of one (one while k ≤ 2:
//! a round that would leave a single level reads it too); ancestors are
//! shared by many names and usually cached. Levels the cache holds
//! expired are read in one round with the next unknown one, so a walk
//! through expired data (serve-stale while the database is away) waits
//! for one failed round, not one per level.

use super::rules::{self, Level};
use crate::backend::StoreError;
use crate::backend::{Backend, CachedNode};
use dns::{Name, Node, RType, ZoneInfo};
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

/// The served zone with the longest apex that encloses `qname`: from
/// what the cache knows when it knows every candidate, else one read of
/// the candidates it does not know, all together.
pub async fn find_zone<B: Backend>(
    backend: &B,
    qname: &Name,
) -> Result<Option<ZoneInfo>, StoreError> {
    if let Some(known) = backend.known_zone(qname) {
        return Ok(known);
    }
    backend.enclosing_zone(qname).await
}

/// [`find_zone`], as the backend answers questions from it
/// ([`Backend::answer_view`]).
pub async fn answer_zone<B: Backend>(
    backend: &B,
    qname: &Name,
) -> Result<Option<ZoneInfo>, StoreError> {
    let zone = find_zone(backend, qname).await?;
    Ok(zone.map(|z| backend.answer_view(z)))
}

/// The zone that answers `qname`/`qtype`: the deepest served zone, except
/// that a DS question at the apex of a served zone is answered from the
/// parent side when we serve the parent too (RFC 4035 §3.1.4.1).
pub async fn zone_for_question<B: Backend>(
    backend: &B,
    qname: &Name,
    qtype: RType,
) -> Result<Option<ZoneInfo>, StoreError> {
    let zone = answer_zone(backend, qname).await?;
    match (&zone, qname.parent()) {
        (Some(z), Some(parent)) if qtype == RType::DS && z.apex == *qname => {
            Ok(answer_zone(backend, &parent).await?.or(zone))
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
    let mut reader = PathReader::new(backend, zone, &path);
    let last = path.len() - 1;
    let mut closest = zone.apex.clone();
    for (i, at) in path.iter().enumerate() {
        let Some(node) = reader.node(i).await? else {
            // Every ancestor of a stored name is stored (empty
            // non-terminals too), so nothing below a missing node exists:
            // its parent is the closest encloser.
            return wildcard(backend, zone, closest).await;
        };
        match rules::level(&*node, i == 0, i == last, qtype) {
            Level::Cut => {
                return Ok(Walk::Delegation {
                    cut: at.clone(),
                    node,
                })
            }
            Level::Dname => {
                return Ok(Walk::Dname {
                    owner: at.clone(),
                    node,
                })
            }
            Level::Name => return Ok(Walk::Exact(node)),
            Level::Above => closest = at.clone(),
        }
    }
    // The apex node itself is missing: the zone has no data.
    Ok(Walk::NxDomain { closest })
}

/// The nodes of a path (apex first), read top-down in rounds so that a
/// name far below the last stored node costs few reads (see the module
/// documentation): what the cache knows is taken without a read; then the
/// next 1, 2, 4, … levels are read together, doubling with each round,
/// together with the levels before them the cache holds expired (they
/// existed: real data, not a name an asker made up).
/// A round can read at most as many missing levels as there were stored
/// levels before it, plus one: the reads a name costs are bounded by the
/// zone's data, not by the name's depth.
struct PathReader<'a, B> {
    backend: &'a B,
    zone: &'a ZoneInfo,
    path: &'a [Name],
    /// What is known of `path[..got.len()]`.
    got: Vec<Option<Arc<Node>>>,
    /// New levels the next round of reads asks for.
    round: usize,
}

impl<'a, B: Backend> PathReader<'a, B> {
    fn new(backend: &'a B, zone: &'a ZoneInfo, path: &'a [Name]) -> Self {
        PathReader {
            backend,
            zone,
            path,
            got: Vec::with_capacity(path.len()),
            round: 1,
        }
    }

    /// The node at `path[i]`, `None` when it does not exist; call with
    /// `i` = 0, 1, 2, … and stop at the first `None`.
    async fn node(&mut self, i: usize) -> Result<Option<Arc<Node>>, StoreError> {
        while self.got.len() <= i {
            let expired = self.take_cached();
            if self.got.len() <= i {
                self.read_round(expired).await?;
            }
        }
        Ok(self.got[i].clone())
    }

    /// Takes the levels the cache knows fresh, up to the first unknown
    /// one or the first known to be missing; returns how many levels after
    /// those the cache holds expired.
    fn take_cached(&mut self) -> usize {
        while let Some(at) = self.path.get(self.got.len()) {
            match self.backend.cached_node(self.zone, at) {
                CachedNode::Fresh(known) => {
                    let missing = known.is_none();
                    self.got.push(known);
                    if missing {
                        return 0;
                    }
                }
                CachedNode::Expired => break,
                CachedNode::Unknown => return 0,
            }
        }
        let later = &self.path[self.got.len()..];
        later
            .iter()
            .take_while(|at| matches!(self.backend.cached_node(self.zone, at), CachedNode::Expired))
            .count()
    }

    /// Reads the `expired` levels next and `round` more together, and
    /// doubles `round`.
    async fn read_round(&mut self, expired: usize) -> Result<(), StoreError> {
        let start = self.got.len();
        let mut end = (start + expired + self.round).min(self.path.len());
        if self.path.len() - end == 1 {
            // One level would be left: read it now. A name one or two
            // levels below what is known costs one round trip, and a made-up
            // name at most two reads.
            end = self.path.len();
        }
        let reads = self.path[start..end]
            .iter()
            .map(|at| self.backend.get_node(self.zone, at));
        self.got.extend(try_join_all(reads).await?);
        self.round *= 2;
        Ok(())
    }
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
