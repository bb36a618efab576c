//! The answer stages: what goes in each section, as values.
//!
//! ```text
//!  solve_answer    follow the name through CNAME/DNAME/wildcards ─► State
//!                  (HIT, NODATA, NXDOMAIN, DELEG, YXDOMAIN, ending zone);
//!                  each alias target is looked up in the deepest served
//!                  zone holding it; ANY takes one RRset (RFC 8482);
//!                  RRSIG takes every signature at the name
//!  solve_authority State ─► SOA (negative TTL, RFC 2308) or NS (referral)
//!  solve_additional NS/MX/SRV targets in the zone ─► A, AAAA
//! ```

use super::lookup::{self, Walk};
use crate::backend::Backend;
use crate::wire::Rcode;
use backend_mongo::{Name, Node, RRset, RType, StoreError, ZoneInfo};
use futures::future::try_join_all;
use std::sync::Arc;

/// One RRset placed in a reply, under an owner name.
#[derive(Clone, Debug)]
pub struct Placed {
    /// Owner name as it goes on the wire.
    pub owner: Name,
    /// The records.
    pub rrset: Arc<RRset>,
}

/// How the answer stage ended (Knot's small state value).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Data for the question (or the end of a chain to an outside name).
    Hit,
    /// The name exists, the type does not.
    NoData,
    /// The name does not exist.
    NxDomain,
    /// The name is delegated away.
    Delegation,
    /// A DNAME substitution made a name too long.
    YxDomain,
}

/// Everything the reply will say, before it is written.
#[derive(Clone, Debug)]
pub struct Answer {
    /// How the answer stage ended.
    pub outcome: Outcome,
    /// The zone the last name was answered from.
    pub zone: ZoneInfo,
    /// AA: false only for a referral with nothing answered before it.
    pub authoritative: bool,
    /// Answer section.
    pub answer: Vec<Placed>,
    /// Authority section.
    pub authority: Vec<Placed>,
    /// Additional section (may be dropped to fit).
    pub additional: Vec<Placed>,
    /// The cut, for a referral.
    cut: Option<(Name, Arc<Node>)>,
}

impl Answer {
    /// The rcode this answer carries.
    pub fn rcode(&self) -> Rcode {
        match self.outcome {
            Outcome::NxDomain => Rcode::NXDOMAIN,
            Outcome::YxDomain => Rcode::YXDOMAIN,
            _ => Rcode::NOERROR,
        }
    }
}

/// Longest CNAME/DNAME chain followed before giving up.
const MAX_CHAIN: usize = 12;

/// Answers `qname`/`qtype` from `zone`, following aliases through any zone
/// we serve.
pub async fn solve_answer<B: Backend>(
    backend: &B,
    zone: ZoneInfo,
    qname: &Name,
    qtype: RType,
) -> Result<Answer, StoreError> {
    let mut answer = Answer {
        outcome: Outcome::Hit,
        zone,
        authoritative: true,
        answer: Vec::new(),
        authority: Vec::new(),
        additional: Vec::new(),
        cut: None,
    };
    let mut name = qname.clone();
    let mut seen: Vec<Name> = Vec::new();
    loop {
        if seen.contains(&name) || seen.len() > MAX_CHAIN {
            // A loop or an overlong chain: stop with what we have.
            return Ok(answer);
        }
        seen.push(name.clone());
        let walked = lookup::walk(backend, &answer.zone, &name, qtype).await?;
        let next = match walked {
            Walk::Exact(node) => take_node(&mut answer, &name, &node, qtype),
            Walk::Wildcard { source, .. } => take_node(&mut answer, &name, &source, qtype),
            Walk::Delegation { cut, node } => {
                answer.outcome = Outcome::Delegation;
                answer.authoritative = !answer.answer.is_empty();
                answer.cut = Some((cut, node));
                None
            }
            Walk::Dname { owner, node } => {
                let dname = node.rrset(RType::DNAME).cloned().expect("walk saw a DNAME");
                answer.answer.push(Placed {
                    owner: owner.clone(),
                    rrset: dname.clone(),
                });
                let Some(target) = dname.rdata.first().and_then(|rd| Name::from_wire(rd).ok())
                else {
                    return Ok(answer);
                };
                match name.replace_suffix(&owner, &target) {
                    Ok(new_name) => {
                        answer.answer.push(Placed {
                            owner: name.clone(),
                            rrset: Arc::new(RRset {
                                rtype: RType::CNAME,
                                ttl: dname.ttl,
                                rdata: vec![new_name.as_wire().into()],
                            }),
                        });
                        answer.outcome = Outcome::Hit;
                        // A CNAME question is answered by the synthesised
                        // CNAME itself (RFC 6672 §3.2): nothing to follow.
                        (qtype != RType::CNAME).then_some(new_name)
                    }
                    Err(_) => {
                        answer.outcome = Outcome::YxDomain;
                        None
                    }
                }
            }
            Walk::NxDomain { .. } => {
                answer.outcome = Outcome::NxDomain;
                None
            }
        };
        let Some(target) = next else {
            return Ok(answer);
        };
        // Follow the alias into whichever served zone holds it (the deepest
        // one: a child zone we also serve wins over its parent's cut);
        // outside every served zone the chain ends here.
        match lookup::find_zone(backend, &target).await? {
            Some(z) => answer.zone = z,
            None => {
                answer.outcome = Outcome::Hit;
                return Ok(answer);
            }
        }
        name = target;
    }
}

/// Takes what `node` has for `qtype`; returns a CNAME target to follow.
fn take_node(answer: &mut Answer, owner: &Name, node: &Node, qtype: RType) -> Option<Name> {
    if qtype == RType::ANY {
        // RFC 8482 §4.1: answer with one RRset of the name, not all of them.
        // We take the one with the lowest type number, as Knot does, so the
        // choice is stable (see docs/conformance.md).
        match node.rrsets.iter().min_by_key(|r| r.rtype.0) {
            Some(rrset) => {
                answer.answer.push(Placed {
                    owner: owner.clone(),
                    rrset: rrset.clone(),
                });
                answer.outcome = Outcome::Hit;
            }
            None => answer.outcome = Outcome::NoData,
        }
        return None;
    }
    if qtype == RType::RRSIG && !node.sigs.is_empty() {
        // RRSIG asked for: every signature at the name, one RRSIG RRset per
        // covered type, as NSD does; never followed through a CNAME.
        for sigs in &node.sigs {
            answer.answer.push(Placed {
                owner: owner.clone(),
                rrset: sigs.clone(),
            });
        }
        answer.outcome = Outcome::Hit;
        return None;
    }
    if let Some(rrset) = node.rrset(qtype) {
        answer.answer.push(Placed {
            owner: owner.clone(),
            rrset: rrset.clone(),
        });
        answer.outcome = Outcome::Hit;
        return None;
    }
    if let Some(cname) = node.rrset(RType::CNAME) {
        answer.answer.push(Placed {
            owner: owner.clone(),
            rrset: cname.clone(),
        });
        answer.outcome = Outcome::Hit;
        return cname.rdata.first().and_then(|rd| Name::from_wire(rd).ok());
    }
    answer.outcome = Outcome::NoData;
    None
}

/// Fills the authority section: the SOA for a denial, NS for a referral.
pub async fn solve_authority<B: Backend>(
    backend: &B,
    answer: &mut Answer,
) -> Result<(), StoreError> {
    match answer.outcome {
        Outcome::NoData | Outcome::NxDomain => {
            if let Some(soa) = negative_soa(backend, &answer.zone).await? {
                answer.authority.push(soa);
            }
        }
        Outcome::Delegation => {
            if let Some((cut, node)) = &answer.cut {
                if let Some(ns) = node.rrset(RType::NS) {
                    answer.authority.push(Placed {
                        owner: cut.clone(),
                        rrset: ns.clone(),
                    });
                }
            }
        }
        Outcome::Hit | Outcome::YxDomain => {}
    }
    Ok(())
}

/// The zone's SOA with the negative-caching TTL of RFC 2308 §5: the lesser
/// of the SOA's own TTL and its MINIMUM field.
async fn negative_soa<B: Backend>(
    backend: &B,
    zone: &ZoneInfo,
) -> Result<Option<Placed>, StoreError> {
    let Some(apex) = backend.get_node(zone, &zone.apex).await? else {
        return Ok(None);
    };
    let Some(soa) = apex.rrset(RType::SOA) else {
        return Ok(None);
    };
    let minimum = soa
        .rdata
        .first()
        .filter(|rd| rd.len() >= 4)
        .map(|rd| {
            u32::from_be_bytes([
                rd[rd.len() - 4],
                rd[rd.len() - 3],
                rd[rd.len() - 2],
                rd[rd.len() - 1],
            ])
        })
        .unwrap_or(soa.ttl);
    let ttl = soa.ttl.min(minimum);
    let rrset = if ttl == soa.ttl {
        soa.clone()
    } else {
        Arc::new(RRset {
            rtype: RType::SOA,
            ttl,
            rdata: soa.rdata.clone(),
        })
    };
    Ok(Some(Placed {
        owner: zone.apex.clone(),
        rrset,
    }))
}

/// The name an NS, MX or SRV record points at.
fn target_of(rtype: RType, rd: &[u8]) -> Option<Name> {
    let at = match rtype {
        RType::NS => 0,
        RType::MX => 2,
        RType::SRV => 6,
        _ => return None,
    };
    Name::from_wire_prefix(rd.get(at..)?).ok().map(|(n, _)| n)
}

/// Adds A and AAAA records for NS, MX and SRV targets inside the zone
/// (glue below a cut included), without repeating what is already there.
pub async fn solve_additional<B: Backend>(
    backend: &B,
    answer: &mut Answer,
) -> Result<(), StoreError> {
    let mut targets: Vec<Name> = Vec::new();
    for placed in answer.answer.iter().chain(answer.authority.iter()) {
        for rd in &placed.rrset.rdata {
            if let Some(t) = target_of(placed.rrset.rtype, rd) {
                if t.is_subdomain_of(&answer.zone.apex) && !targets.contains(&t) {
                    targets.push(t);
                }
            }
        }
    }
    if targets.is_empty() {
        return Ok(());
    }
    let zone = answer.zone.clone();
    let nodes = try_join_all(targets.iter().map(|t| backend.get_node(&zone, t))).await?;
    for (target, node) in targets.into_iter().zip(nodes) {
        let Some(node) = node else { continue };
        for rtype in [RType::A, RType::AAAA] {
            let Some(rrset) = node.rrset(rtype) else {
                continue;
            };
            let already = answer
                .answer
                .iter()
                .any(|p| p.owner == target && p.rrset.rtype == rtype);
            if !already {
                answer.additional.push(Placed {
                    owner: target.clone(),
                    rrset: rrset.clone(),
                });
            }
        }
    }
    Ok(())
}
