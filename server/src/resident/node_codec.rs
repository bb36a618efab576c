//! One node as a run of wire bytes, and back: how resident zones hold
//! their nodes (in a [`NodeArena`](super::arena::NodeArena)) instead of
//! many small allocations.
//!
//! ```text
//!  encode(node) = name_len u8 · name (wire, case-folded)
//!                 · sets u16 · sigs u16
//!                 · per RRset (sets, then sigs): rtype u16 · ttl u32 · count u16
//!                                                · per rdata: len u16 · rdata
//!  decode(bytes) ─► Node (fresh allocations, for the answer path)
//!  owner(bytes)  ─► the name's wire bytes (no allocation: index lookups)
//!  signed(bytes) ─► any signatures? (the header's count)
//!  sets(bytes)   ─► each RRset in place (RecordsView: type, TTL, rdata),
//!                   no allocation (plain.rs answers from it directly)
//! ```
//!
//! Integers are big-endian. A node whose counts or lengths do not fit
//! them (more than 65,535 records in an RRset, which writers never store
//! but a foreign writer might) is refused: `encode` says so and the zone is
//! answered from the database instead of held wrong.

use crate::backend::RecordsView;
use dns::{Name, Node, RRset, RType};
use std::sync::Arc;

/// A node whose counts or lengths do not fit the encoding's integers:
/// never held resident (its zone is answered from the database).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unencodable;

/// True when every count and length of `node` fits its integer: RRsets
/// and signature sets, records per set and rdata lengths at most 65,535.
/// Writers cap an RRset well below (`dns::rrset::MAX_RRSET_OCTETS`); a
/// foreign writer's document may not be.
pub(super) fn fits(node: &Node) -> bool {
    let small = |n: usize| n <= usize::from(u16::MAX);
    small(node.rrsets.len())
        && small(node.sigs.len())
        && node
            .rrsets
            .iter()
            .chain(node.sigs.iter())
            .all(|set| small(set.rdata.len()) && set.rdata.iter().all(|rd| small(rd.len())))
}

/// Appends the encoding of `node` to `out`; refuses (nothing appended) a
/// node that does not [`fits`].
pub(super) fn encode(node: &Node, out: &mut Vec<u8>) -> Result<(), Unencodable> {
    if !fits(node) {
        return Err(Unencodable);
    }
    let name = node.name.as_wire();
    out.push(name.len() as u8);
    out.extend_from_slice(name);
    out.extend_from_slice(&(node.rrsets.len() as u16).to_be_bytes());
    out.extend_from_slice(&(node.sigs.len() as u16).to_be_bytes());
    for set in node.rrsets.iter().chain(node.sigs.iter()) {
        out.extend_from_slice(&set.rtype.0.to_be_bytes());
        out.extend_from_slice(&set.ttl.to_be_bytes());
        out.extend_from_slice(&(set.rdata.len() as u16).to_be_bytes());
        for rd in &set.rdata {
            out.extend_from_slice(&(rd.len() as u16).to_be_bytes());
            out.extend_from_slice(rd);
        }
    }
    Ok(())
}

/// The owner name's wire bytes of an encoded node.
pub(super) fn owner(bytes: &[u8]) -> &[u8] {
    let len = bytes[0] as usize;
    &bytes[1..1 + len]
}

/// Reads big-endian integers off the front of an encoded node.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> &'a [u8] {
        let s = &self.bytes[self.at..self.at + n];
        self.at += n;
        s
    }

    fn u16(&mut self) -> u16 {
        u16::from_be_bytes(self.take(2).try_into().expect("two bytes"))
    }

    fn u32(&mut self) -> u32 {
        u32::from_be_bytes(self.take(4).try_into().expect("four bytes"))
    }

    /// The next RRset, in place.
    fn set(&mut self) -> RecordsView<'a> {
        let start = self.at;
        let rtype = RType(self.u16());
        let ttl = self.u32();
        let count = self.u16();
        for _ in 0..count {
            let len = self.u16() as usize;
            self.take(len);
        }
        RecordsView::new(rtype, ttl, count, &self.bytes[start + 8..self.at])
    }
}

/// An RRset copied out of its view.
fn to_rrset(set: RecordsView<'_>) -> RRset {
    RRset {
        rtype: set.rtype,
        ttl: set.ttl,
        rdata: set.rdata().map(Box::<[u8]>::from).collect(),
    }
}

/// The RRsets of an encoded node (signatures not included), in place.
pub(super) fn sets(bytes: &[u8]) -> impl Iterator<Item = RecordsView<'_>> {
    let mut r = Reader {
        bytes,
        at: 1 + bytes[0] as usize,
    };
    let sets = r.u16();
    r.take(2);
    (0..sets).map(move |_| r.set())
}

/// True when an encoded node holds any signatures.
pub(super) fn signed(bytes: &[u8]) -> bool {
    let at = 1 + bytes[0] as usize + 2;
    bytes[at..at + 2] != [0, 0]
}

/// The node encoded in `bytes` (written by [`encode`]).
pub(super) fn decode(bytes: &[u8]) -> Node {
    let name = Name::from_wire(owner(bytes)).expect("an encoded owner name is valid");
    let mut r = Reader {
        bytes,
        at: 1 + bytes[0] as usize,
    };
    let sets = r.u16() as usize;
    let sigs = r.u16() as usize;
    let rrsets = (0..sets).map(|_| Arc::new(to_rrset(r.set()))).collect();
    let sigs = (0..sigs).map(|_| Arc::new(to_rrset(r.set()))).collect();
    Node { name, rrsets, sigs }
}

/// Records (rdata items of its RRsets, signatures not counted) of an
/// encoded node, without decoding it.
pub(super) fn records(bytes: &[u8]) -> usize {
    sets(bytes).map(|set| usize::from(set.count)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(rtype: RType, ttl: u32, rdata: &[&[u8]]) -> Arc<RRset> {
        Arc::new(RRset::of(rtype, ttl, rdata))
    }

    #[test]
    fn a_node_comes_back_as_it_went_in() {
        let node = Node {
            name: "WWW.Example.".parse().unwrap(),
            rrsets: vec![
                set(RType::A, 300, &[&[192, 0, 2, 1], &[192, 0, 2, 2]]),
                set(RType::TXT, 60, &[&[0], &[3, b'a', b'b', b'c']]),
            ],
            sigs: vec![set(RType::RRSIG, 300, &[&[7u8; 300]])],
        };
        let mut bytes = vec![9, 9];
        encode(&node, &mut bytes).unwrap();
        let encoded = &bytes[2..];
        assert_eq!(owner(encoded), node.name.as_wire());
        assert_eq!(records(encoded), 4);
        let viewed: Vec<(RType, u32, Vec<&[u8]>)> = sets(encoded)
            .map(|v| (v.rtype, v.ttl, v.rdata().collect()))
            .collect();
        let want: Vec<(RType, u32, Vec<&[u8]>)> = node
            .rrsets
            .iter()
            .map(|s| (s.rtype, s.ttl, s.rdata.iter().map(|r| &r[..]).collect()))
            .collect();
        assert_eq!(viewed, want, "the sets read in place, signatures left out");
        assert!(signed(encoded));
        let back = decode(encoded);
        assert_eq!(back.name, node.name);
        assert_eq!(back.rrsets, node.rrsets);
        assert_eq!(back.sigs, node.sigs);
    }

    #[test]
    fn an_empty_non_terminal_is_just_its_name() {
        let node = Node {
            name: "a.b.example.".parse().unwrap(),
            rrsets: Vec::new(),
            sigs: Vec::new(),
        };
        let mut bytes = Vec::new();
        encode(&node, &mut bytes).unwrap();
        assert_eq!(bytes.len(), 1 + node.name.wire_len() + 4);
        let back = decode(&bytes);
        assert!(back.rrsets.is_empty() && back.sigs.is_empty());
        assert_eq!(records(&bytes), 0);
        assert!(!signed(&bytes));
    }

    #[test]
    fn a_node_the_encoding_cannot_hold_is_never_held_wrong() {
        // 65,536 records: one more than a u16 count holds.
        let many: Vec<Vec<u8>> = (0..65_536u32).map(|i| i.to_be_bytes().to_vec()).collect();
        let refs: Vec<&[u8]> = many.iter().map(Vec::as_slice).collect();
        let node = Node {
            name: "big.example.".parse().unwrap(),
            rrsets: vec![set(RType::A, 60, &refs)],
            sigs: Vec::new(),
        };
        let mut bytes = vec![7];
        assert_eq!(encode(&node, &mut bytes), Err(Unencodable));
        assert_eq!(bytes, [7], "nothing appended");
        // 65,535 records fit, and come back whole.
        let fits_refs = &refs[..65_535];
        let node = Node {
            rrsets: vec![set(RType::A, 60, fits_refs)],
            ..node
        };
        let mut bytes = Vec::new();
        encode(&node, &mut bytes).unwrap();
        assert_eq!(decode(&bytes).rrsets, node.rrsets);
    }
}
