//! Plain questions answered in place from a resident zone's bytes: the
//! name walk of pipeline/lookup.rs where it meets no cut, DNAME or CNAME,
//! without decoding a node. Each level and the node at the name are
//! judged by the same rules as the general stages' (pipeline/rules.rs);
//! only the way of holding a node differs.
//!
//! ```text
//!  plain(apex, name, qtype)   (qtype ANY, RRSIG, DS ─► None)
//!    the apex, then each level down to the name, found by the name index:
//!      missing ─► the wildcard *.(level above): exists ─► its answer
//!                 below, for the name; else NxDomain
//!      rules::level: Cut or Dname ─► None; Above ─► on down
//!    at the name (or its wildcard), rules::take:
//!      Records ─► the qtype's RRset      NoData ─► NoData
//!      Cname (a chain) ─► None
//!    NoData, NxDomain carry the apex's SOA (no SOA ─► None)
//! ```
//!
//! `None` is never an answer: it sends the question to the general stages,
//! which answer every case.

use super::copy::ZoneData;
use super::node_codec;
use crate::backend::{PlainAnswer, RecordsView};
use crate::pipeline::rules::{self, Level, NodeTypes, Take};
use dns::{Name, RType};

/// The longest name in wire form (RFC 1035 §2.3.4).
const MAX_NAME_LEN: usize = 255;

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
        let mut node = Encoded(apex_bytes);
        let mut closest = apex.as_wire();
        // The apex, then each level below it down to the name.
        for i in 0..=depth {
            if i > 0 {
                let suffix = levels.get(depth - i);
                let Some(h) = self.names.get_wire(&self.arena, suffix) else {
                    // Every ancestor of a stored name is stored: nothing
                    // below here exists, and `closest` is the closest
                    // encloser.
                    return self.wildcard_answer(apex_bytes, closest, qtype);
                };
                node = Encoded(self.arena.get(h));
                closest = suffix;
            }
            match rules::level(&node, i == 0, i == depth, qtype) {
                Level::Above => {}
                Level::Name => return answer_at(node, apex_bytes, qtype),
                // A referral or a DNAME: the general stages.
                Level::Cut | Level::Dname => return None,
            }
        }
        None
    }

    /// The answer for a missing name whose closest encloser is `closest`:
    /// the wildcard's, or NXDOMAIN.
    fn wildcard_answer<'a>(
        &'a self,
        apex_bytes: &'a [u8],
        closest: &[u8],
        qtype: RType,
    ) -> Option<PlainAnswer<'a>> {
        let mut star = [0u8; MAX_NAME_LEN + 2];
        let len = 2 + closest.len();
        let found = if len <= MAX_NAME_LEN {
            star[..2].copy_from_slice(b"\x01*");
            star[2..len].copy_from_slice(closest);
            self.names.get_wire(&self.arena, &star[..len])
        } else {
            None // `*.closest` would be too long: no wildcard can exist
        };
        match found {
            Some(h) => answer_at(Encoded(self.arena.get(h)), apex_bytes, qtype),
            None => Some(PlainAnswer::NxDomain(soa(apex_bytes)?)),
        }
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

/// What `node` (the name's, or the wildcard's standing for it) answers
/// for `qtype`, by the rules (pipeline/rules.rs `take`) for the types
/// kept here.
fn answer_at<'a>(node: Encoded<'a>, apex_bytes: &'a [u8], qtype: RType) -> Option<PlainAnswer<'a>> {
    match rules::take(&node, qtype) {
        Take::Records(set) => Some(PlainAnswer::Records(set)),
        Take::NoData => Some(PlainAnswer::NoData(soa(apex_bytes)?)),
        // A CNAME to follow; ANY and RRSIG never come here.
        Take::Cname(_) | Take::Any | Take::Signatures => None,
    }
}

/// The apex's SOA RRset.
fn soa(apex_bytes: &[u8]) -> Option<RecordsView<'_>> {
    Encoded(apex_bytes).set(RType::SOA)
}

/// An encoded node (node_codec.rs), as the rules read it.
#[derive(Clone, Copy)]
struct Encoded<'a>(&'a [u8]);

impl<'a> NodeTypes for Encoded<'a> {
    type Set<'s>
        = RecordsView<'a>
    where
        Self: 's;

    fn set(&self, rtype: RType) -> Option<RecordsView<'a>> {
        node_codec::sets(self.0).find(|s| s.rtype == rtype)
    }

    fn has_sigs(&self) -> bool {
        node_codec::signed(self.0)
    }
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

    /// The level `i` above the name (0: the name itself).
    fn get(&self, i: usize) -> &'n [u8] {
        &self.wire[usize::from(self.starts[i])..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use backend_mongo::resident::KeyedNode;
    use dns::{Node, RRset};
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
    /// with glue ns.sub; alias CNAME; dn DNAME, x.dn A; *.wild A (and
    /// host.wild A); *.cw CNAME.
    fn zone() -> ZoneData {
        let soa: &[u8] = &[
            1, b'n', 0, 1, b'h', 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 60,
        ];
        let target: &[u8] = &[
            2, b'n', b's', 3, b's', b'u', b'b', 7, b'e', b'x', b'a', b'm', b'p', b'l', b'e', 0,
        ];
        let mut data = ZoneData::default();
        for k in [
            node("example.", &[(RType::SOA, &[soa]), (RType::NS, &[target])]),
            node(
                "www.example.",
                &[(RType::A, &[&[192, 0, 2, 1], &[192, 0, 2, 2]])],
            ),
            node("b.example.", &[]),
            node("a.b.example.", &[]),
            node("deep.a.b.example.", &[(RType::TXT, &[&[2, b'h', b'i']])]),
            node("sub.example.", &[(RType::NS, &[target])]),
            node("ns.sub.example.", &[(RType::A, &[&[192, 0, 2, 9]])]),
            node("alias.example.", &[(RType::CNAME, &[target])]),
            node("dn.example.", &[(RType::DNAME, &[target])]),
            node("x.dn.example.", &[(RType::A, &[&[192, 0, 2, 7]])]),
            node("wild.example.", &[]),
            node("*.wild.example.", &[(RType::A, &[&[192, 0, 2, 99]])]),
            node("host.wild.example.", &[(RType::A, &[&[192, 0, 2, 98]])]),
            node("cw.example.", &[]),
            node("*.cw.example.", &[(RType::CNAME, &[target])]),
        ] {
            data.insert(k).unwrap();
        }
        data
    }

    /// What a plain question gets: its kind, the RRset's type and rdata.
    fn ask(
        data: &ZoneData,
        name: &str,
        qtype: RType,
    ) -> Option<(&'static str, RType, Vec<Vec<u8>>)> {
        let (kind, set) = match data.plain(&n("example."), &n(name), qtype)? {
            PlainAnswer::Records(set) => ("records", set),
            PlainAnswer::NoData(soa) => ("nodata", soa),
            PlainAnswer::NxDomain(soa) => ("nxdomain", soa),
        };
        Some((kind, set.rtype, set.rdata().map(<[u8]>::to_vec).collect()))
    }

    #[test]
    fn an_existing_rrset_is_the_answer_read_in_place() {
        let data = zone();
        let (kind, rtype, rd) = ask(&data, "www.example.", RType::A).unwrap();
        assert_eq!((kind, rtype), ("records", RType::A));
        assert_eq!(rd, vec![vec![192, 0, 2, 1], vec![192, 0, 2, 2]]);
        let (kind, _, rd) = ask(&data, "deep.a.b.example.", RType::TXT).unwrap();
        assert_eq!(kind, "records", "below empty non-terminals");
        assert_eq!(rd, vec![vec![2, b'h', b'i']]);
        let (kind, rtype, _) = ask(&data, "example.", RType::NS).unwrap();
        assert_eq!(
            (kind, rtype),
            ("records", RType::NS),
            "NS at the apex is no cut"
        );
    }

    #[test]
    fn a_name_without_the_type_is_nodata_with_the_apex_soa() {
        let data = zone();
        let (kind, rtype, _) = ask(&data, "www.example.", RType::AAAA).unwrap();
        assert_eq!((kind, rtype), ("nodata", RType::SOA));
        let (kind, _, _) = ask(&data, "a.b.example.", RType::A).unwrap();
        assert_eq!(kind, "nodata", "an empty non-terminal");
    }

    #[test]
    fn a_missing_name_is_its_wildcard_or_nxdomain() {
        let data = zone();
        let (kind, _, rd) = ask(&data, "any.wild.example.", RType::A).unwrap();
        assert_eq!(kind, "records", "synthesised from *.wild");
        assert_eq!(rd, vec![vec![192, 0, 2, 99]]);
        let (kind, _, rd) = ask(&data, "host.wild.example.", RType::A).unwrap();
        assert_eq!(
            (kind, rd),
            ("records", vec![vec![192, 0, 2, 98]]),
            "the name wins"
        );
        let (kind, _, _) = ask(&data, "any.wild.example.", RType::TXT).unwrap();
        assert_eq!(kind, "nodata", "the wildcard without the type");
        let (kind, _, _) = ask(&data, "x.any.wild.example.", RType::A).unwrap();
        assert_eq!(kind, "records", "any depth below the closest encloser");
        let (kind, _, _) = ask(&data, "x.host.wild.example.", RType::A).unwrap();
        assert_eq!(
            kind, "nxdomain",
            "host.wild is the closest encloser: no *.host.wild"
        );
        for name in ["nope.example.", "nope.www.example.", "z.a.b.example."] {
            let (kind, rtype, _) = ask(&data, name, RType::A).unwrap();
            assert_eq!((kind, rtype), ("nxdomain", RType::SOA), "{name}");
        }
    }

    #[test]
    fn everything_else_goes_to_the_general_stages() {
        let data = zone();
        for (name, qtype, why) in [
            ("sub.example.", RType::A, "a cut"),
            ("ns.sub.example.", RType::A, "glue below a cut"),
            ("x.sub.example.", RType::A, "a missing name below a cut"),
            ("alias.example.", RType::A, "a CNAME to follow"),
            ("any.cw.example.", RType::A, "a wildcard CNAME to follow"),
            ("x.dn.example.", RType::A, "below a DNAME"),
            ("y.dn.example.", RType::A, "a missing name below a DNAME"),
            ("www.example.", RType::ANY, "ANY"),
            ("www.example.", RType::RRSIG, "RRSIG"),
            ("sub.example.", RType::DS, "DS"),
            ("www.other.", RType::A, "outside the zone"),
        ] {
            assert!(ask(&data, name, qtype).is_none(), "{why}: {name} {qtype}");
        }
        let (kind, rtype, _) = ask(&data, "alias.example.", RType::CNAME).unwrap();
        assert_eq!(
            (kind, rtype),
            ("records", RType::CNAME),
            "a CNAME asked for"
        );
        let (kind, rtype, _) = ask(&data, "dn.example.", RType::DNAME).unwrap();
        assert_eq!(
            (kind, rtype),
            ("records", RType::DNAME),
            "a DNAME at the name itself"
        );
    }

    #[test]
    fn a_zone_without_its_apex_answers_nothing_plainly() {
        let mut data = ZoneData::default();
        data.insert(node("www.example.", &[(RType::A, &[&[192, 0, 2, 1]])]))
            .unwrap();
        assert!(ask(&data, "www.example.", RType::A).is_none());
    }
}
