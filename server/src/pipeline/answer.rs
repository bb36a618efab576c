//! The answer stages: what goes in each section, as values.
//!
//! ```text
//!  solve_answer    follow the name through CNAME/DNAME/wildcards ─► State
//!                  (HIT, NODATA, NXDOMAIN, DELEG, YXDOMAIN, ending zone);
//!                  each alias target is looked up in the deepest served
//!                  zone holding it; ANY takes one RRset (RFC 8482);
//!                  RRSIG takes every signature at the name; records on
//!                  the way what it found (Found: each RRset's source node,
//!                  wildcard and closest encloser, final name, cut)
//!  solve_authority State ─► SOA (negative TTL, RFC 2308) or NS (referral)
//!  solve_additional NS/MX/SRV targets in the zone ─► A, AAAA (no more
//!                  targets read than could fit in the reply's room)
//!  every RRset goes in through Section::push (section.rs): once a section
//! ```

use super::lookup::{self, Walk};
use super::rules::{self, Take};
use super::section::Section;
use crate::backend::Backend;
use crate::backend::StoreError;
use crate::wire::Rcode;
use dns::{Name, Node, RRset, RType, ZoneInfo};
use futures::future::try_join_all;
use std::collections::HashSet;
use std::sync::Arc;

pub use super::section::Placed;

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
    pub answer: Section,
    /// Authority section.
    pub authority: Section,
    /// Additional section (may be dropped to fit).
    pub additional: Section,
    /// What the answer stage found on its way, for the later stages.
    pub found: Found,
}

/// What the answer stage found, recorded as it went (Knot keeps the same
/// in its query data) so that no later stage walks the names again.
#[derive(Clone, Debug)]
pub struct Found {
    /// Where the answer RRsets came from, in the order they were placed.
    pub sources: Vec<Source>,
    /// The last name looked up: the end of the CNAME/DNAME chain inside
    /// the zones we serve.
    pub final_name: Name,
    /// The node at `final_name`, when the name exists.
    pub final_node: Option<Arc<Node>>,
    /// The closest encloser of `final_name`, when the name does not exist
    /// (NXDOMAIN, or answered by a wildcard).
    pub closest_encloser: Option<Name>,
    /// The wildcard `*.closest_encloser` that answered for `final_name`.
    pub wildcard: Option<Arc<Node>>,
    /// The zone cut, for a referral: its owner and node.
    pub cut: Option<(Name, Arc<Node>)>,
}

/// Where the RRsets of one type placed at one owner came from.
#[derive(Clone, Debug)]
pub struct Source {
    /// The owner they were placed under.
    pub owner: Name,
    /// Their type (RRSIG for an RRSIG question).
    pub rtype: RType,
    /// The stored node holding them and their signatures; `None` for a
    /// CNAME made from a DNAME, which has none (RFC 6672 §5.3.1).
    pub node: Option<Arc<Node>>,
    /// Set when `node` is the wildcard `*.closest_encloser` and `owner`
    /// was synthesised from it.
    pub closest_encloser: Option<Name>,
}

impl Found {
    fn new(qname: &Name) -> Self {
        Found {
            sources: Vec::new(),
            final_name: qname.clone(),
            final_node: None,
            closest_encloser: None,
            wildcard: None,
            cut: None,
        }
    }

    /// Notes that `name` was looked up and what the walk found there.
    fn looked_up(&mut self, name: &Name, walked: &Walk) {
        self.final_name = name.clone();
        self.final_node = None;
        self.closest_encloser = None;
        self.wildcard = None;
        match walked {
            Walk::Exact(node) => self.final_node = Some(node.clone()),
            Walk::Wildcard { closest, source } => {
                self.closest_encloser = Some(closest.clone());
                self.wildcard = Some(source.clone());
            }
            Walk::NxDomain { closest } => self.closest_encloser = Some(closest.clone()),
            Walk::Delegation { cut, node } => self.cut = Some((cut.clone(), node.clone())),
            Walk::Dname { .. } => {}
        }
    }
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

    /// Places `rrset` at `owner` in the answer section and notes where it
    /// came from. A DNAME may stand more than once (once for each name of
    /// the chain it rewrites); anything else at most once.
    fn place(&mut self, owner: &Name, rrset: &Arc<RRset>, source: Source) {
        if rrset.rtype == RType::DNAME {
            self.answer.push_repeated(owner, rrset);
        } else {
            self.answer.push(owner, rrset);
        }
        let known = |s: &Source| s.owner == source.owner && s.rtype == source.rtype;
        if !self.found.sources.iter().any(known) {
            self.found.sources.push(source);
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
        answer: Section::default(),
        authority: Section::default(),
        additional: Section::default(),
        found: Found::new(qname),
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
        answer.found.looked_up(&name, &walked);
        let next = match walked {
            Walk::Exact(node) => take_node(&mut answer, &name, &node, qtype, None),
            Walk::Wildcard { source, closest } => {
                take_node(&mut answer, &name, &source, qtype, Some(closest))
            }
            Walk::Delegation { .. } => {
                answer.outcome = Outcome::Delegation;
                answer.authoritative = !answer.answer.is_empty();
                None
            }
            Walk::Dname { owner, node } => follow_dname(&mut answer, &name, &owner, &node, qtype),
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
        match lookup::answer_zone(backend, &target).await? {
            Some(z) => answer.zone = z,
            None => {
                answer.outcome = Outcome::Hit;
                return Ok(answer);
            }
        }
        name = target;
    }
}

/// Places the DNAME at `owner` and the CNAME it makes for `name`; returns
/// the new name to follow.
fn follow_dname(
    answer: &mut Answer,
    name: &Name,
    owner: &Name,
    node: &Arc<Node>,
    qtype: RType,
) -> Option<Name> {
    let dname = node.rrset(RType::DNAME).cloned().expect("walk saw a DNAME");
    answer.place(owner, &dname, source(owner, RType::DNAME, Some(node), None));
    let target = dname
        .rdata
        .first()
        .and_then(|rd| Name::from_wire(rd).ok())?;
    let Ok(new_name) = name.replace_suffix(owner, &target) else {
        answer.outcome = Outcome::YxDomain;
        return None;
    };
    let cname = Arc::new(RRset {
        rtype: RType::CNAME,
        ttl: dname.ttl,
        rdata: vec![new_name.as_wire().into()],
    });
    answer.place(name, &cname, source(name, RType::CNAME, None, None));
    answer.outcome = Outcome::Hit;
    // A CNAME question is answered by the synthesised CNAME itself
    // (RFC 6672 §3.2): nothing to follow.
    (qtype != RType::CNAME).then_some(new_name)
}

/// A [`Source`] record.
fn source(owner: &Name, rtype: RType, node: Option<&Arc<Node>>, closest: Option<Name>) -> Source {
    Source {
        owner: owner.clone(),
        rtype,
        node: node.cloned(),
        closest_encloser: closest,
    }
}

/// Takes what `node` has for `qtype` by the rules (rules.rs `take`;
/// `node` is the wildcard `*.closest` when `closest` is set); returns a
/// CNAME target to follow.
fn take_node(
    answer: &mut Answer,
    owner: &Name,
    node: &Arc<Node>,
    qtype: RType,
    closest: Option<Name>,
) -> Option<Name> {
    let from = |rtype| source(owner, rtype, Some(node), closest.clone());
    answer.outcome = Outcome::Hit;
    match rules::take(&**node, qtype) {
        Take::Any => match node.rrsets.iter().min_by_key(|r| r.rtype.0) {
            // The lowest type number, as Knot does: a stable choice
            // (docs/conformance.md).
            Some(rrset) => answer.place(owner, rrset, from(rrset.rtype)),
            None => answer.outcome = Outcome::NoData,
        },
        Take::Signatures => {
            // One RRSIG RRset per covered type, as NSD does; never
            // followed through a CNAME.
            for sigs in &node.sigs {
                answer.place(owner, sigs, from(RType::RRSIG));
            }
        }
        Take::Records(rrset) => answer.place(owner, rrset, from(qtype)),
        Take::Cname(cname) => {
            answer.place(owner, cname, from(RType::CNAME));
            return cname.rdata.first().and_then(|rd| Name::from_wire(rd).ok());
        }
        Take::NoData => answer.outcome = Outcome::NoData,
    }
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
                answer
                    .authority
                    .push_with_sigs(&soa.owner, &soa.rrset, soa.sigs.as_ref());
            }
        }
        Outcome::Delegation => {
            if let Some((cut, node)) = &answer.found.cut {
                if let Some(ns) = node.rrset(RType::NS) {
                    answer.authority.push(cut, ns);
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
    let ttl = negative_ttl(soa.ttl, soa.rdata.first().map(|rd| &rd[..]));
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
        sigs: apex.rrsig(RType::SOA).cloned(),
    }))
}

/// The negative-caching TTL of a SOA with `ttl` and `rdata` (RFC 2308
/// §5): the lesser of its TTL and its MINIMUM field (the TTL when there is
/// no rdata to read it from).
pub fn negative_ttl(ttl: u32, rdata: Option<&[u8]>) -> u32 {
    let minimum = rdata
        .and_then(|rd| rd.last_chunk::<4>())
        .map_or(ttl, |m| u32::from_be_bytes(*m));
    ttl.min(minimum)
}

/// Where the name whose addresses go to the additional section begins in
/// the rdata of `rtype` (NS, MX, SRV: the type's descriptor says).
fn target_at(rtype: RType) -> Option<usize> {
    rtype.info()?.target_at()
}

/// The name an NS, MX or SRV record points at.
fn target_of(rtype: RType, rd: &[u8]) -> Option<Name> {
    let at = target_at(rtype)?;
    Name::from_wire_prefix(rd.get(at..)?).ok().map(|(n, _)| n)
}

/// The fewest bytes an A record takes in a reply: its owner as a
/// compression pointer, type, class, TTL, length and 4 octets.
const MIN_ADDRESS_RR: usize = 2 + 10 + 4;

/// The fewest bytes `answer`'s header, answer and authority records can
/// take in a reply: every owner a compression pointer, every name in rdata
/// too (the question is left out: a lower bound).
fn least_used(answer: &Answer) -> usize {
    let mut used = crate::wire::HEADER_LEN;
    for placed in answer.answer.iter().chain(answer.authority.iter()) {
        let rtype = placed.rrset.rtype;
        for rd in &placed.rrset.rdata {
            let rdata = target_at(rtype).map_or(rd.len(), |at| rd.len().min(at + 2));
            used += 2 + 10 + rdata;
        }
    }
    used
}

/// Adds A and AAAA records for NS, MX and SRV targets inside the zone
/// (the types whose descriptor asks for additional addresses)
/// (glue below a cut included), without repeating what is already there.
/// Reads no more targets than could each add one address to a reply of
/// `room` bytes after the answer and authority sections.
pub async fn solve_additional<B: Backend>(
    backend: &B,
    answer: &mut Answer,
    room: usize,
) -> Result<(), StoreError> {
    let most = room.saturating_sub(least_used(answer)) / MIN_ADDRESS_RR;
    let mut seen: HashSet<Name> = HashSet::new();
    let mut targets: Vec<Name> = Vec::new();
    let placed = answer.answer.iter().chain(answer.authority.iter());
    'all: for placed in placed {
        for rd in &placed.rrset.rdata {
            if targets.len() >= most {
                break 'all;
            }
            if let Some(t) = target_of(placed.rrset.rtype, rd) {
                if t.is_subdomain_of(&answer.zone.apex) && seen.insert(t.clone()) {
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
            if !answer.answer.holds_type(&target, rtype) {
                let sigs = node.rrsig(rtype);
                answer.additional.push_with_sigs(&target, rrset, sigs);
            }
        }
    }
    Ok(())
}
