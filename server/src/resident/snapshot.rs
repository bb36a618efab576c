//! A zone transfer from a resident copy: every node, taken at once, then
//! decoded one at a time as the transfer sends them.
//!
//! ```text
//!  ZoneData::snapshot() (read lock held for the copy only)
//!     every handle (name index ∪ denial map, NSEC3 nodes are only there)
//!     ─► sorted by the owner's canonical key (the database cursor's order)
//!     ─► the encoded bytes copied into one buffer ─► NodeSnapshot
//!  NodeSnapshot::into_stream() ─► NodeStream: node_codec::decode per node
//! ```
//!
//! The copy is taken whole under one read lock, so the transfer holds one
//! generation however long the peer takes to read it, and the lock is not
//! held across the transfer's waits. It costs the zone's encoded bytes for
//! as long as the transfer runs (the transfers at once are limited).

use super::node_codec;
use crate::backend::StoreError;
use backend_mongo::transfer::NodeStream;
use dns::Node;
use futures::stream::StreamExt;

/// Encoded nodes in canonical order, one after another.
#[derive(Default)]
pub struct NodeSnapshot {
    bytes: Vec<u8>,
    /// Where each node ends in `bytes`.
    ends: Vec<usize>,
}

impl NodeSnapshot {
    /// Room for `nodes` nodes of `bytes` bytes in all.
    pub(super) fn with_capacity(nodes: usize, bytes: usize) -> NodeSnapshot {
        NodeSnapshot {
            bytes: Vec::with_capacity(bytes),
            ends: Vec::with_capacity(nodes),
        }
    }

    /// Appends one encoded node.
    pub(super) fn push(&mut self, encoded: &[u8]) {
        self.bytes.extend_from_slice(encoded);
        self.ends.push(self.bytes.len());
    }

    /// Nodes held.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// True when no node is held.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The nodes, decoded one at a time, as a transfer reads them.
    pub fn into_stream(self) -> NodeStream {
        futures::stream::iter(Decoded {
            snapshot: self,
            next: 0,
        })
        .boxed()
    }
}

/// The iterator behind [`NodeSnapshot::into_stream`].
struct Decoded {
    snapshot: NodeSnapshot,
    next: usize,
}

impl Iterator for Decoded {
    type Item = Result<Node, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        let end = *self.snapshot.ends.get(self.next)?;
        let start = match self.next {
            0 => 0,
            i => self.snapshot.ends[i - 1],
        };
        self.next += 1;
        Some(Ok(node_codec::decode(&self.snapshot.bytes[start..end])))
    }
}
