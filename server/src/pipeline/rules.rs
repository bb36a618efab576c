//! The answer's rules, written once: what one level of a name walk means
//! (RFC 1034 §4.3.2 step 3), and what a node answers for a type. The
//! general stages read them over decoded nodes (lookup.rs `walk`,
//! answer.rs `take_node`), and the one-step answers read them over a
//! resident zone's bytes (resident/plain.rs): two ways of holding a node,
//! one set of rules.
//!
//! ```text
//!  level(node at a level, apex?, the name?, qtype):
//!     NS below the apex (not DS at the name itself) ─► Cut
//!     DNAME above the name                          ─► Dname
//!     the name itself                               ─► Name
//!     else                                          ─► Above (walk on)
//!  take(node, qtype):
//!     ANY ─► Any (one RRset, RFC 8482)   RRSIG with signatures ─► Signatures
//!     the type held ─► Records(its RRset)   a CNAME ─► Cname(it): follow
//!     else NoData
//! ```

use dns::{Node, RRset, RType};
use std::sync::Arc;

/// What the rules read of a node: the RRset of a type, and whether it
/// holds signatures.
pub trait NodeTypes {
    /// An RRset as this way of holding a node gives it.
    type Set<'s>
    where
        Self: 's;
    /// The node's RRset of `rtype` (signatures aside), if it has one.
    fn set(&self, rtype: RType) -> Option<Self::Set<'_>>;
    /// True when the node holds any signatures.
    fn has_sigs(&self) -> bool;
    /// True when the node holds an RRset of `rtype`.
    fn has(&self, rtype: RType) -> bool {
        self.set(rtype).is_some()
    }
}

impl NodeTypes for Node {
    type Set<'s> = &'s Arc<RRset>;

    fn set(&self, rtype: RType) -> Option<&Arc<RRset>> {
        self.rrset(rtype)
    }

    fn has_sigs(&self) -> bool {
        !self.sigs.is_empty()
    }
}

/// What a node met on the way from the apex down to the name means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// A zone cut: the name is delegated away (a referral).
    Cut,
    /// A DNAME above the name redirects it.
    Dname,
    /// The name itself, in this zone's authority.
    Name,
    /// An ancestor that changes nothing: walk on down.
    Above,
}

/// What `node`, met at the apex (`is_apex`) or below it, at the name
/// itself (`is_name`) or above it, means for a question of `qtype`. An NS
/// set at the apex is no cut, and a DS question at a cut is answered from
/// the parent side (RFC 4035 §3.1.4.1).
pub fn level<N: NodeTypes + ?Sized>(node: &N, is_apex: bool, is_name: bool, qtype: RType) -> Level {
    if !is_apex && node.has(RType::NS) && !(is_name && qtype == RType::DS) {
        Level::Cut
    } else if !is_name && node.has(RType::DNAME) {
        Level::Dname
    } else if is_name {
        Level::Name
    } else {
        Level::Above
    }
}

/// What the name's node (or the wildcard's standing for it) answers,
/// with the RRset it found (`S`: the node's way of giving one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Take<S> {
    /// ANY: one RRset of the name, the lowest type (RFC 8482 §4.1), or
    /// NODATA when it has none.
    Any,
    /// RRSIG asked for: every signature at the name.
    Signatures,
    /// The RRset of the type asked.
    Records(S),
    /// A CNAME, to place and follow.
    Cname(S),
    /// The name holds neither the type nor a CNAME.
    NoData,
}

/// What `node` answers for `qtype`.
pub fn take<N: NodeTypes + ?Sized>(node: &N, qtype: RType) -> Take<N::Set<'_>> {
    if qtype == RType::ANY {
        Take::Any
    } else if qtype == RType::RRSIG && node.has_sigs() {
        Take::Signatures
    } else if let Some(set) = node.set(qtype) {
        Take::Records(set)
    } else if let Some(cname) = node.set(RType::CNAME) {
        Take::Cname(cname)
    } else {
        Take::NoData
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dns::Name;

    fn node(types: &[RType], signed: bool) -> Node {
        let set = |t: RType| Arc::new(RRset::of(t, 300, &[&[0u8][..]]));
        Node {
            name: "n.example.".parse::<Name>().unwrap(),
            rrsets: types.iter().map(|t| set(*t)).collect(),
            sigs: if signed {
                vec![set(RType::RRSIG)]
            } else {
                vec![]
            },
        }
    }

    #[test]
    fn a_cut_is_ns_below_the_apex_except_for_ds_at_it() {
        let ns = node(&[RType::NS], false);
        assert_eq!(level(&ns, true, false, RType::A), Level::Above, "apex NS");
        assert_eq!(level(&ns, true, true, RType::A), Level::Name);
        assert_eq!(level(&ns, false, false, RType::A), Level::Cut);
        assert_eq!(level(&ns, false, true, RType::A), Level::Cut);
        assert_eq!(level(&ns, false, true, RType::DS), Level::Name);
        assert_eq!(level(&ns, false, false, RType::DS), Level::Cut, "above");
    }

    #[test]
    fn a_dname_redirects_only_names_below_it() {
        let dname = node(&[RType::DNAME], false);
        assert_eq!(level(&dname, true, false, RType::A), Level::Dname);
        assert_eq!(level(&dname, false, false, RType::A), Level::Dname);
        assert_eq!(level(&dname, false, true, RType::A), Level::Name);
        let plain = node(&[RType::A], false);
        assert_eq!(level(&plain, false, false, RType::A), Level::Above);
    }

    #[test]
    fn a_node_answers_its_type_then_its_cname_else_nodata() {
        let a = node(&[RType::A], true);
        assert_eq!(take(&a, RType::A), Take::Records(&a.rrsets[0]));
        assert_eq!(take(&a, RType::AAAA), Take::NoData);
        assert_eq!(take(&a, RType::ANY), Take::Any);
        assert_eq!(take(&a, RType::RRSIG), Take::Signatures);
        assert_eq!(take(&node(&[RType::A], false), RType::RRSIG), Take::NoData);
        let cname = node(&[RType::CNAME], false);
        assert_eq!(take(&cname, RType::A), Take::Cname(&cname.rrsets[0]));
        assert_eq!(take(&cname, RType::CNAME), Take::Records(&cname.rrsets[0]));
    }
}
