//! Prerequisites of a change-set (RFC 2136 §2.4, §3.2.5), checked against
//! the names as stored before any edit of the change-set is applied.
//!
//! ```text
//!  Prerequisite::{NameInUse, NameNotInUse, RRsetExists, RRsetAbsent, RRsetIs}
//!     ─► check(prerequisites, stored RRsets by name) ─► Ok | Unmet(which)
//!  RRsetIs prerequisites of one name and type form one RRset, compared as a
//!  set of rdata (TTLs ignored), as §3.2.3 says
//! ```

use crate::rrset::RRset;
use crate::{Name, RType};
use std::collections::BTreeMap;
use std::fmt;

/// One prerequisite.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Prerequisite {
    /// The name owns at least one RR (class ANY, type ANY).
    NameInUse(Name),
    /// The name owns no RR (class NONE, type ANY).
    NameNotInUse(Name),
    /// An RRset of this type exists at the name (class ANY).
    RRsetExists(Name, RType),
    /// No RRset of this type exists at the name (class NONE).
    RRsetAbsent(Name, RType),
    /// The RRset holds exactly the records given by all `RRsetIs` of this
    /// name and type together (class IN, value-dependent).
    RRsetIs(Name, RType, Box<[u8]>),
}

impl Prerequisite {
    /// The name it is about.
    pub fn name(&self) -> &Name {
        match self {
            Prerequisite::NameInUse(n)
            | Prerequisite::NameNotInUse(n)
            | Prerequisite::RRsetExists(n, _)
            | Prerequisite::RRsetAbsent(n, _)
            | Prerequisite::RRsetIs(n, _, _) => n,
        }
    }
}

/// Which prerequisite failed, with the RCODE RFC 2136 §3.2 gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unmet {
    /// A name that must be in use is not (NXDOMAIN).
    NameNotInUse(Name),
    /// A name that must not be in use is (YXDOMAIN).
    NameInUse(Name),
    /// An RRset that must exist (or hold given records) does not (NXRRSET).
    RRsetMissing(Name, RType),
    /// An RRset that must not exist does (YXRRSET).
    RRsetPresent(Name, RType),
}

impl Unmet {
    /// The RCODE of the reply (RFC 2136 §2.2): 3, 6, 8 or 7.
    pub fn rcode(&self) -> u8 {
        match self {
            Unmet::NameNotInUse(_) => 3,
            Unmet::NameInUse(_) => 6,
            Unmet::RRsetMissing(..) => 8,
            Unmet::RRsetPresent(..) => 7,
        }
    }
}

impl fmt::Display for Unmet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unmet::NameNotInUse(n) => write!(f, "{n} is not in use"),
            Unmet::NameInUse(n) => write!(f, "{n} is in use"),
            Unmet::RRsetMissing(n, t) => write!(f, "{n} has no {t} RRset as required"),
            Unmet::RRsetPresent(n, t) => write!(f, "{n} has a {t} RRset"),
        }
    }
}

/// Checks `prerequisites` against `stored` (each name's RRsets as stored;
/// a name absent from the map owns nothing). The first unmet one, in the
/// order given, is returned.
pub fn check(
    prerequisites: &[Prerequisite],
    stored: &BTreeMap<Name, Vec<RRset>>,
) -> Result<(), Unmet> {
    let rrset = |n: &Name, t: RType| {
        stored
            .get(n)
            .and_then(|sets| sets.iter().find(|r| r.rtype == t && !r.rdata.is_empty()))
    };
    let in_use = |n: &Name| {
        stored
            .get(n)
            .is_some_and(|sets| sets.iter().any(|r| !r.rdata.is_empty()))
    };
    let mut wanted: BTreeMap<(Name, RType), Vec<&[u8]>> = BTreeMap::new();
    for p in prerequisites {
        match p {
            Prerequisite::NameInUse(n) if !in_use(n) => return Err(Unmet::NameNotInUse(n.clone())),
            Prerequisite::NameNotInUse(n) if in_use(n) => return Err(Unmet::NameInUse(n.clone())),
            Prerequisite::RRsetExists(n, t) if rrset(n, *t).is_none() => {
                return Err(Unmet::RRsetMissing(n.clone(), *t))
            }
            Prerequisite::RRsetAbsent(n, t) if rrset(n, *t).is_some() => {
                return Err(Unmet::RRsetPresent(n.clone(), *t))
            }
            Prerequisite::RRsetIs(n, t, rd) => wanted.entry((n.clone(), *t)).or_default().push(rd),
            _ => {}
        }
    }
    for ((n, t), mut want) in wanted {
        want.sort();
        want.dedup();
        let mut have: Vec<&[u8]> =
            rrset(&n, t).map_or(Vec::new(), |r| r.rdata.iter().map(|x| &x[..]).collect());
        have.sort();
        have.dedup();
        if have != want {
            return Err(Unmet::RRsetMissing(n, t));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> Name {
        s.parse().unwrap()
    }

    fn stored() -> BTreeMap<Name, Vec<RRset>> {
        let a = RRset {
            rtype: RType::A,
            ttl: 60,
            rdata: vec![vec![1, 1, 1, 1].into(), vec![2, 2, 2, 2].into()],
        };
        BTreeMap::from([(n("www.x."), vec![a]), (n("ent.x."), Vec::new())])
    }

    #[test]
    fn each_prerequisite_and_its_rcode() {
        let s = stored();
        let ok = [
            Prerequisite::NameInUse(n("www.x.")),
            Prerequisite::NameNotInUse(n("ent.x.")),
            Prerequisite::NameNotInUse(n("nothing.x.")),
            Prerequisite::RRsetExists(n("www.x."), RType::A),
            Prerequisite::RRsetAbsent(n("www.x."), RType::MX),
        ];
        assert_eq!(check(&ok, &s), Ok(()));
        let fails = |p: Prerequisite| check(&[p], &s).unwrap_err().rcode();
        assert_eq!(fails(Prerequisite::NameInUse(n("ent.x."))), 3);
        assert_eq!(fails(Prerequisite::NameNotInUse(n("www.x."))), 6);
        assert_eq!(fails(Prerequisite::RRsetAbsent(n("www.x."), RType::A)), 7);
        assert_eq!(fails(Prerequisite::RRsetExists(n("www.x."), RType::MX)), 8);
    }

    #[test]
    fn value_dependent_prerequisites_compare_the_whole_rrset() {
        let s = stored();
        let is = |rd: [u8; 4]| Prerequisite::RRsetIs(n("www.x."), RType::A, Box::new(rd));
        assert_eq!(check(&[is([2, 2, 2, 2]), is([1, 1, 1, 1])], &s), Ok(()));
        let part = check(&[is([1, 1, 1, 1])], &s);
        assert_eq!(part, Err(Unmet::RRsetMissing(n("www.x."), RType::A)));
        let more = check(&[is([1, 1, 1, 1]), is([2, 2, 2, 2]), is([3, 3, 3, 3])], &s);
        assert!(more.is_err());
    }
}
