//! Plain questions answered in place from a resident zone's bytes: the
//! name walk of pipeline/lookup.rs for the case where it meets nothing but
//! existing names, without decoding a node.
//!
//! ```text
//!  plain(apex, name, qtype)   (qtype ANY, RRSIG, DS ─► None)
//!    levels apex … name, top-down, each found by the name index:
//!      the apex: a DNAME above the name ─► None
//!      between:  missing (NXDOMAIN, wildcard), NS (a cut) or DNAME ─► None
//!      the name: missing ─► None;  NS below the apex (a referral) ─► None
//!                the qtype's RRset ─► Records
//!                a CNAME (a chain) ─► None
//!                else ─► NoData with the apex's SOA (no SOA ─► None)
//! ```
//!
//! `None` is never an answer: it sends the question to the general stages,
//! which answer every case. The rules here are theirs for the cases kept
//! (pipeline/lookup.rs `walk`, pipeline/answer.rs `take_node`).

use super::copy::ZoneData;
use super::node_codec;
use crate::backend::PlainAnswer;
use backend_mongo::{Name, RType};

/// Label starts of a name of at most 255 octets: at most 128.
const MAX_LABELS: usize = 128;

impl ZoneData {
    /// What the zone holds for `qtype` at `name` (in the zone whose apex is
    /// `apex`) when the question is plain; `None` when the general stages
    /// must answer it.
    pub fn plain(&self, apex: &Name, name: &Name, qtype: RType) -> Option<PlainAnswer<'_>> {
        if matches!(qtype, RType::ANY | RType::RRSIG | RType::DS) {
            return None;
        }
        let (apex_bytes, levels) = self.levels(apex, name)?;
        let depth = levels.len();
        if depth > 0 && has(apex_bytes, RType::DNAME) {
            return None;
        }
        // Between the apex and the name: each must exist, neither cut nor DNAME.
        let mut node = apex_bytes;
        for (i, suffix) in levels.iter().rev().enumerate() {
            let h = self.names.get_wire(&self.arena, suffix)?;
            node = self.arena.get(h);
            let is_name = i + 1 == depth;
            if has(node, RType::NS) || (!is_name && has(node, RType::DNAME)) {
                return None;
            }
        }
        if let Some(set) = node_codec::sets(node).find(|s| s.rtype == qtype) {
            return Some(PlainAnswer::Records(set));
        }
        if has(node, RType::CNAME) {
            return None;
        }
        let soa = node_codec::sets(apex_bytes).find(|s| s.rtype == RType::SOA)?;
        Some(PlainAnswer::NoData(soa))
    }

    /// The apex node's bytes and the wire forms of the levels below it down
    /// to `name`, deepest first (empty for the apex itself).
    fn levels<'n>(&self, apex: &Name, name: &'n Name) -> Option<(&[u8], Levels<'n>)> {
        let (top, _) = self.top.as_ref()?;
        let apex_bytes = self.arena.get(*top);
        let apex_wire = apex.as_wire();
        if node_codec::owner(apex_bytes) != apex_wire {
            return None;
        }
        let wire = name.as_wire();
        let below = wire.len().checked_sub(apex_wire.len())?;
        if wire[below..] != *apex_wire {
            return None;
        }
        let mut levels = Levels {
            wire,
            starts: [0; MAX_LABELS],
            len: 0,
        };
        let mut pos = 0;
        while pos < below {
            levels.starts[levels.len] = pos as u8;
            levels.len += 1;
            pos += 1 + usize::from(wire[pos]);
        }
        (pos == below).then_some((apex_bytes, levels))
    }
}

/// True when the encoded node holds an RRset of `rtype`.
fn has(node: &[u8], rtype: RType) -> bool {
    node_codec::sets(node).any(|s| s.rtype == rtype)
}

/// The names from one name up to (not including) an apex, as suffixes of
/// its wire form: index 0 is the name itself.
struct Levels<'n> {
    wire: &'n [u8],
    starts: [u8; MAX_LABELS],
    len: usize,
}

impl<'n> Levels<'n> {
    fn len(&self) -> usize {
        self.len
    }

    fn iter(&self) -> impl DoubleEndedIterator<Item = &'n [u8]> + '_ {
        self.starts[..self.len]
            .iter()
            .map(|&s| &self.wire[usize::from(s)..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::RecordsView;
    use backend_mongo::resident::KeyedNode;
    use backend_mongo::{Node, RRset};
    use std::sync::Arc;

    fn n(s: &str) -> Name {
        s.parse().unwrap()
    }

    fn node(name: &str, sets: &[(RType, &[&[u8]])]) -> KeyedNode {
        let node = Node {
            name: n(name),
            rrsets: sets
                .iter()
                .map(|(t, rd)| Arc::new(RRset::of(*t, 300, rd)))
                .collect(),
            sigs: Vec::new(),
        };
        KeyedNode {
            node,
            dk: None,
            nsec3: false,
        }
    }

    /// example.: SOA (minimum 60); www A; deep.a.b (ENTs a.b, b); sub NS
    /// with glue ns.sub; alias CNAME; dn DNAME, x.dn A.
    fn zone() -> ZoneData {
        let soa: &[u8] = &[
            1, b'n', 0, 1, b'h', 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 60,
        ];
        let ns_target: &[u8] = &[
            2, b'n', b's', 3, b's', b'u', b'b', 7, b'e', b'x', b'a', b'm', b'p', b'l', b'e', 0,
        ];
        let mut data = ZoneData::default();
        for k in [
            node(
                "example.",
                &[(RType::SOA, &[soa]), (RType::NS, &[ns_target])],
            ),
            node(
                "www.example.",
                &[(RType::A, &[&[192, 0, 2, 1], &[192, 0, 2, 2]])],
            ),
            node("b.example.", &[]),
            node("a.b.example.", &[]),
            node("deep.a.b.example.", &[(RType::TXT, &[&[2, b'h', b'i']])]),
            node("sub.example.", &[(RType::NS, &[ns_target])]),
            node("ns.sub.example.", &[(RType::A, &[&[192, 0, 2, 9]])]),
            node("alias.example.", &[(RType::CNAME, &[ns_target])]),
            node("dn.example.", &[(RType::DNAME, &[ns_target])]),
            node("x.dn.example.", &[(RType::A, &[&[192, 0, 2, 7]])]),
        ] {
            data.insert(k);
        }
        data
    }

    fn rdata(set: RecordsView<'_>) -> Vec<Vec<u8>> {
        set.rdata().map(<[u8]>::to_vec).collect()
    }

    fn ask(data: &ZoneData, name: &str, qtype: RType) -> Option<(bool, RType, Vec<Vec<u8>>)> {
        match data.plain(&n("example."), &n(name), qtype)? {
            PlainAnswer::Records(set) => Some((true, set.rtype, rdata(set))),
            PlainAnswer::NoData(soa) => Some((false, soa.rtype, rdata(soa))),
        }
    }

    #[test]
    fn an_existing_rrset_is_the_answer_read_in_place() {
        let data = zone();
        let (records, rtype, rd) = ask(&data, "www.example.", RType::A).unwrap();
        assert!(records);
        assert_eq!(rtype, RType::A);
        assert_eq!(rd, vec![vec![192, 0, 2, 1], vec![192, 0, 2, 2]]);
        let (records, _, rd) = ask(&data, "deep.a.b.example.", RType::TXT).unwrap();
        assert!(records, "below empty non-terminals");
        assert_eq!(rd, vec![vec![2, b'h', b'i']]);
        let (records, rtype, _) = ask(&data, "example.", RType::NS).unwrap();
        assert!(records && rtype == RType::NS, "NS at the apex is no cut");
    }

    #[test]
    fn a_name_without_the_type_is_nodata_with_the_apex_soa() {
        let data = zone();
        let (records, rtype, _) = ask(&data, "www.example.", RType::AAAA).unwrap();
        assert!(!records);
        assert_eq!(rtype, RType::SOA);
        let (records, _, _) = ask(&data, "a.b.example.", RType::A).unwrap();
        assert!(!records, "an empty non-terminal is NODATA");
    }

    #[test]
    fn everything_else_goes_to_the_general_stages() {
        let data = zone();
        for (name, qtype, why) in [
            (
                "nope.example.",
                RType::A,
                "a missing name (NXDOMAIN or a wildcard)",
            ),
            ("nope.www.example.", RType::A, "below an existing name"),
            ("sub.example.", RType::A, "a cut"),
            ("ns.sub.example.", RType::A, "glue below a cut"),
            ("alias.example.", RType::A, "a CNAME to follow"),
            ("x.dn.example.", RType::A, "below a DNAME"),
            ("www.example.", RType::ANY, "ANY"),
            ("www.example.", RType::RRSIG, "RRSIG"),
            ("sub.example.", RType::DS, "DS"),
            ("www.other.", RType::A, "outside the zone"),
        ] {
            assert!(ask(&data, name, qtype).is_none(), "{why}: {name} {qtype}");
        }
        let (records, rtype, _) = ask(&data, "alias.example.", RType::CNAME).unwrap();
        assert!(
            records && rtype == RType::CNAME,
            "a CNAME asked for is the answer"
        );
        let (records, rtype, _) = ask(&data, "dn.example.", RType::DNAME).unwrap();
        assert!(
            records && rtype == RType::DNAME,
            "a DNAME at the name itself"
        );
    }

    #[test]
    fn a_zone_without_its_apex_answers_nothing_plainly() {
        let mut data = ZoneData::default();
        data.insert(node("www.example.", &[(RType::A, &[&[192, 0, 2, 1]])]));
        assert!(ask(&data, "www.example.", RType::A).is_none());
    }
}
