//! Checking a stored zone the way `kzonecheck` checks a zone file: what a
//! zone must hold, what may not share a name, what is unreachable.
//!
//! ```text
//!  check_zone(apex, nodes of the served version) ─► findings, by name:
//!    apex: one SOA, an NS RRset, no CNAME          (errors)
//!    anywhere: SOA below the apex, CNAME beside other data, DS or DNAME
//!      at the apex, DS where there is no delegation (errors)
//!    below a delegation or DNAME: data that is not glue (warnings: occluded)
//!    NS targets inside the zone without A/AAAA     (errors: missing glue)
//!    empty non-terminals with nothing below them   (warnings: stale)
//! ```

use backend_mongo::dnssec_store::FullNode;
use dns::{Name, RType};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// How bad a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Servers or resolvers will get this wrong.
    Error,
    /// Harmless for answers, worth knowing (unreachable data, leftovers).
    Warning,
}

/// One problem found at a name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// How bad it is.
    pub severity: Severity,
    /// Where.
    pub name: Name,
    /// What, in words.
    pub what: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let level = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        write!(f, "{level}: {}: {}", self.name, self.what)
    }
}

/// The ordinary (not NSEC3) nodes by name, with the types each holds.
fn types_by_name(nodes: &[FullNode]) -> BTreeMap<&Name, BTreeSet<RType>> {
    nodes
        .iter()
        .filter(|n| !n.nsec3)
        .map(|n| {
            let types = n
                .rrsets
                .iter()
                .filter(|r| !r.rrset.rdata.is_empty())
                .map(|r| r.rrset.rtype);
            (&n.name, types.collect())
        })
        .collect()
}

/// Checks the nodes of one zone version (see the module documentation).
pub fn check_zone(apex: &Name, nodes: &[FullNode]) -> Vec<Finding> {
    let types = types_by_name(nodes);
    let mut out = Vec::new();
    let mut find = |severity, name: &Name, what: String| {
        out.push(Finding {
            severity,
            name: name.clone(),
            what,
        })
    };
    let at_apex = types.get(apex).cloned().unwrap_or_default();
    if !at_apex.contains(&RType::SOA) {
        find(Severity::Error, apex, "no SOA at the apex".into());
    }
    if !at_apex.contains(&RType::NS) {
        find(Severity::Error, apex, "no NS RRset at the apex".into());
    }
    for t in [RType::CNAME, RType::DS, RType::DNAME] {
        if at_apex.contains(&t) {
            find(Severity::Error, apex, format!("{t} at the apex"));
        }
    }
    let cuts: BTreeSet<&Name> = types
        .iter()
        .filter(|(n, t)| **n != apex && (t.contains(&RType::NS) || t.contains(&RType::DNAME)))
        .map(|(n, _)| *n)
        .collect();
    let glue = glue_targets(apex, nodes);
    for (name, t) in &types {
        if *name == apex {
            continue;
        }
        if t.contains(&RType::SOA) {
            find(Severity::Error, name, "an SOA below the apex".into());
        }
        let others = t
            .iter()
            .any(|x| !matches!(*x, RType::CNAME | RType::RRSIG | RType::NSEC));
        if t.contains(&RType::CNAME) && others {
            find(Severity::Error, name, "a CNAME beside other data".into());
        }
        if t.contains(&RType::DS) && !t.contains(&RType::NS) {
            find(
                Severity::Error,
                name,
                "DS where there is no delegation".into(),
            );
        }
        if let Some(cut) = name.ancestors().skip(1).find(|a| cuts.contains(a)) {
            if !(glue.contains(*name) && t.iter().all(|x| matches!(*x, RType::A | RType::AAAA))) {
                find(
                    Severity::Warning,
                    name,
                    format!("occluded by the delegation or DNAME at {cut}"),
                );
            }
        }
        if t.is_empty() && !has_names_below(name, &types) {
            find(
                Severity::Warning,
                name,
                "an empty non-terminal with nothing below it".into(),
            );
        }
    }
    for target in &glue {
        if target.is_subdomain_of(apex) {
            let t = types.get(target).cloned().unwrap_or_default();
            if !t.contains(&RType::A) && !t.contains(&RType::AAAA) {
                find(
                    Severity::Error,
                    target,
                    "a name server inside the zone with no A or AAAA".into(),
                );
            }
        }
    }
    out.sort_by(|a, b| (a.severity, &a.name).cmp(&(b.severity, &b.name)));
    out
}

/// The targets of every NS record in the zone (apex and delegations).
fn glue_targets(apex: &Name, nodes: &[FullNode]) -> BTreeSet<Name> {
    nodes
        .iter()
        .filter(|n| !n.nsec3 && n.name.is_subdomain_of(apex))
        .filter_map(|n| n.get(RType::NS))
        .flat_map(|r| r.rrset.rdata.iter())
        .filter_map(|rd| Name::from_wire(rd).ok())
        .collect()
}

fn has_names_below(name: &Name, types: &BTreeMap<&Name, BTreeSet<RType>>) -> bool {
    types.keys().any(|n| *n != name && n.is_subdomain_of(name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use backend_mongo::dnssec_store::SignedRRset;
    use dns::RRset;

    fn node(name: &str, sets: &[(RType, &[u8])]) -> FullNode {
        FullNode {
            name: name.parse().unwrap(),
            rrsets: sets
                .iter()
                .map(|(t, rd)| SignedRRset {
                    rrset: RRset {
                        rtype: *t,
                        ttl: 60,
                        rdata: vec![rd.to_vec().into()],
                    },
                    sigs: Vec::new(),
                    sd: None,
                })
                .collect(),
            dk: None,
            nsec3: false,
        }
    }

    fn wire(s: &str) -> Vec<u8> {
        s.parse::<Name>().unwrap().as_wire().to_vec()
    }

    #[test]
    fn a_good_zone_has_no_findings_and_each_problem_is_named() {
        let apex: Name = "z.test.".parse().unwrap();
        let ns = wire("ns.z.test.");
        let good = vec![
            node("z.test.", &[(RType::SOA, b"soa"), (RType::NS, &ns)]),
            node("ns.z.test.", &[(RType::A, &[192, 0, 2, 1])]),
        ];
        assert!(
            check_zone(&apex, &good).is_empty(),
            "{:?}",
            check_zone(&apex, &good)
        );
        let sub_ns = wire("ns.sub.z.test.");
        let mut bad = good.clone();
        bad.push(node("sub.z.test.", &[(RType::NS, &sub_ns)]));
        bad.push(node("www.sub.z.test.", &[(RType::A, &[1, 1, 1, 1])]));
        bad.push(node(
            "x.z.test.",
            &[
                (RType::CNAME, &wire("ns.z.test.")),
                (RType::A, &[1, 2, 3, 4]),
            ],
        ));
        bad.push(node("ds.z.test.", &[(RType::DS, b"ds")]));
        bad.push(node("ent.z.test.", &[]));
        let found: Vec<String> = check_zone(&apex, &bad)
            .iter()
            .map(|f| f.to_string())
            .collect();
        let has = |s: &str| found.iter().any(|f| f.contains(s));
        assert!(
            has("error: ns.sub.z.test.: a name server inside the zone with no A or AAAA"),
            "{found:?}"
        );
        assert!(
            has("error: x.z.test.: a CNAME beside other data"),
            "{found:?}"
        );
        assert!(
            has("error: ds.z.test.: DS where there is no delegation"),
            "{found:?}"
        );
        assert!(
            has("warning: www.sub.z.test.: occluded by the delegation"),
            "{found:?}"
        );
        assert!(
            has("warning: ent.z.test.: an empty non-terminal"),
            "{found:?}"
        );
        assert_eq!(found.len(), 5, "{found:?}");
        let no_apex = check_zone(&apex, &good[1..]);
        assert_eq!(no_apex.len(), 2, "{no_apex:?}");
    }
}
