//! Encoded nodes packed into large byte chunks, found by handle; and the
//! name index over them.
//!
//! ```text
//!  NodeArena: chunks Vec<Vec<u8>> (4 KiB doubling to 256 KiB, or one node's size)
//!     push(node) ─► Handle (chunk, offset) ─► [len u32 · node_codec bytes]
//!                   (a node the codec cannot hold: refused, Unencodable)
//!     get(handle) ─► the node's bytes          (garbage: bytes no longer
//!                                               reachable, after a replace)
//!  NameIndex: hashbrown::HashTable<Handle>, hashed by the owner's wire
//!     bytes, compared against the owner stored in the arena: the name is
//!     held once, in the arena
//! ```

use super::node_codec::{self, Unencodable};
use dns::{Name, Node};
use hashbrown::HashTable;
use std::hash::BuildHasher;

/// Where one encoded node starts: chunk index and offset, packed.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub(super) struct Handle(u64);

impl Handle {
    fn new(chunk: usize, offset: usize) -> Handle {
        Handle(((chunk as u64) << 32) | offset as u64)
    }

    fn chunk(self) -> usize {
        (self.0 >> 32) as usize
    }

    fn offset(self) -> usize {
        (self.0 & 0xffff_ffff) as usize
    }
}

/// Bytes per chunk: large enough that chunk headers do not count, small
/// enough that the last chunk's unused tail does not either.
const CHUNK: usize = 256 * 1024;

/// The first chunk's size.
const FIRST_CHUNK: usize = 4096;

/// Encoded nodes, appended; nothing is freed until the arena is rebuilt.
#[derive(Default)]
pub(super) struct NodeArena {
    chunks: Vec<Vec<u8>>,
    /// Bytes of nodes no handle reaches any more.
    garbage: usize,
    scratch: Vec<u8>,
}

impl NodeArena {
    /// Stores `node`; its bytes stay where they are until the arena goes.
    /// A node the encoding cannot hold is refused, nothing stored.
    pub(super) fn push(&mut self, node: &Node) -> Result<Handle, Unencodable> {
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        let h = node_codec::encode(node, &mut scratch).map(|()| self.push_encoded(&scratch));
        self.scratch = scratch;
        h
    }

    /// Stores a node already encoded (moving it from another arena).
    pub(super) fn push_encoded(&mut self, encoded: &[u8]) -> Handle {
        let need = 4 + encoded.len();
        let fits = self
            .chunks
            .last()
            .is_some_and(|c| c.capacity() - c.len() >= need);
        if !fits {
            // Chunks double from FIRST_CHUNK up to CHUNK: a small zone
            // holds a few KiB, not a whole chunk.
            let next = self.chunks.last().map_or(FIRST_CHUNK, |c| {
                (c.capacity() * 2).clamp(FIRST_CHUNK, CHUNK)
            });
            self.chunks.push(Vec::with_capacity(need.max(next)));
        }
        let chunk = self.chunks.len() - 1;
        let last = &mut self.chunks[chunk];
        let offset = last.len();
        last.extend_from_slice(&(encoded.len() as u32).to_be_bytes());
        last.extend_from_slice(encoded);
        Handle::new(chunk, offset)
    }

    /// The encoded node at `h`.
    pub(super) fn get(&self, h: Handle) -> &[u8] {
        let c = &self.chunks[h.chunk()];
        let at = h.offset();
        let len = u32::from_be_bytes(c[at..at + 4].try_into().expect("four bytes")) as usize;
        &c[at + 4..at + 4 + len]
    }

    /// The node at `h`, decoded.
    pub(super) fn node(&self, h: Handle) -> Node {
        node_codec::decode(self.get(h))
    }

    /// Marks the node at `h` unreachable (replaced or removed).
    pub(super) fn release(&mut self, h: Handle) {
        self.garbage += 4 + self.get(h).len();
    }

    /// Bytes allocated for the chunks.
    pub(super) fn allocated(&self) -> usize {
        self.chunks.iter().map(|c| c.capacity() + 16).sum::<usize>() + self.chunks.capacity() * 24
    }

    /// Bytes of unreachable nodes.
    pub(super) fn garbage(&self) -> usize {
        self.garbage
    }

    /// Bytes of nodes stored, reachable or not.
    pub(super) fn used(&self) -> usize {
        self.chunks.iter().map(Vec::len).sum()
    }
}

/// Handles of nodes, found by owner name.
pub(super) struct NameIndex {
    table: HashTable<Handle>,
    hasher: foldhash::fast::RandomState,
}

impl Default for NameIndex {
    fn default() -> Self {
        NameIndex {
            table: HashTable::new(),
            hasher: foldhash::fast::RandomState::default(),
        }
    }
}

impl NameIndex {
    fn hash(&self, wire: &[u8]) -> u64 {
        self.hasher.hash_one(wire)
    }

    /// The handle of `name`'s node, if indexed.
    pub(super) fn get(&self, arena: &NodeArena, name: &Name) -> Option<Handle> {
        self.get_wire(arena, name.as_wire())
    }

    /// The handle of the node whose owner is `wire` (case-folded wire
    /// form, as a [`Name`] holds it), if indexed.
    pub(super) fn get_wire(&self, arena: &NodeArena, wire: &[u8]) -> Option<Handle> {
        self.table
            .find(self.hash(wire), |h| {
                node_codec::owner(arena.get(*h)) == wire
            })
            .copied()
    }

    /// Indexes `h` under its owner name; returns the handle it replaced.
    pub(super) fn insert(&mut self, arena: &NodeArena, h: Handle) -> Option<Handle> {
        let wire = node_codec::owner(arena.get(h));
        let hash = self.hash(wire);
        let hasher = &self.hasher;
        let entry = self.table.entry(
            hash,
            |o| node_codec::owner(arena.get(*o)) == wire,
            |o| hasher.hash_one(node_codec::owner(arena.get(*o))),
        );
        match entry {
            hashbrown::hash_table::Entry::Occupied(mut e) => {
                Some(std::mem::replace(e.get_mut(), h))
            }
            hashbrown::hash_table::Entry::Vacant(e) => {
                e.insert(h);
                None
            }
        }
    }

    /// Drops `name` from the index; returns its handle.
    pub(super) fn remove(&mut self, arena: &NodeArena, name: &Name) -> Option<Handle> {
        let wire = name.as_wire();
        match self.table.find_entry(self.hash(wire), |h| {
            node_codec::owner(arena.get(*h)) == wire
        }) {
            Ok(e) => Some(e.remove().0),
            Err(_) => None,
        }
    }

    /// Every handle indexed.
    pub(super) fn handles(&self) -> impl Iterator<Item = Handle> + '_ {
        self.table.iter().copied()
    }

    /// Names indexed.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.table.len()
    }

    /// Bytes of the table: a handle and a control byte per bucket.
    pub(super) fn allocated(&self) -> usize {
        self.table.capacity() * 9 * 8 / 7 + 16
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dns::{RRset, RType};
    use std::sync::Arc;

    fn node(name: &str, last: u8) -> Node {
        Node {
            name: name.parse().unwrap(),
            rrsets: vec![Arc::new(RRset::of(RType::A, 60, &[&[192, 0, 2, last]]))],
            sigs: Vec::new(),
        }
    }

    #[test]
    fn names_are_found_case_insensitively_and_replaced() {
        let mut arena = NodeArena::default();
        let mut index = NameIndex::default();
        for i in 0..20_000u32 {
            let h = arena
                .push(&node(&format!("n{i}.z."), (i % 250) as u8))
                .unwrap();
            assert_eq!(index.insert(&arena, h), None);
        }
        assert!(arena.chunks.len() > 1, "more than one chunk was filled");
        let name: Name = "N4321.Z.".parse().unwrap();
        let h = index.get(&arena, &name).expect("found");
        assert_eq!(arena.node(h).rrsets[0].rdata[0][3], (4321 % 250) as u8);
        let new = arena.push(&node("n4321.z.", 7)).unwrap();
        assert_eq!(index.insert(&arena, new), Some(h));
        arena.release(h);
        assert!(arena.garbage() > 0);
        assert_eq!(
            arena.node(index.get(&arena, &name).unwrap()).rrsets[0].rdata[0][3],
            7
        );
        assert_eq!(index.remove(&arena, &name), Some(new));
        assert!(index.get(&arena, &name).is_none());
        assert_eq!(index.len(), 19_999);
    }
}
