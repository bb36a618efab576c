//! The DNSSEC stage: signatures and denial proofs, only when the query has
//! DO=1 and the zone is signed (its apex has a DNSKEY RRset).
//!
//! ```text
//!  decorate(answer)
//!   ├─ answer RRsets ─► their RRSIGs (a wildcard's, for a wildcard answer,
//!   │                   plus the proof that no closer name exists)
//!   ├─ authority RRsets (SOA, DS) ─► their RRSIGs
//!   ├─ additional RRsets (A/AAAA of targets) ─► their RRSIGs, right after
//!   │                   each (render drops the pair when it does not fit)
//!   └─ by outcome, for the last name of the chain:
//!        NXDOMAIN ─► prove_nxdomain   (RFC 4035 §3.1.3.2, RFC 5155 §7.2.2)
//!        NODATA   ─► prove_nodata     (§3.1.3.1 / §7.2.3, §7.2.4 for DS)
//!                    prove_wildcard_nodata (§3.1.3.4 / §7.2.5)
//!        referral ─► DS + RRSIG, or prove_no_ds (§3.1.4 / §7.2.7, opt-out)
//!  NSEC/NSEC3 records come from Backend::denial: the record whose owner
//!  key is the greatest not above the asked key (one indexed lookup).
//!  NSEC3 hashing is bounded: at most MAX_NSEC3_ITERATIONS (100) iterations
//!  a hash, a few hashes an answer; a zone asking for more gets SERVFAIL
//!  for answers that need a proof (RFC 9276, CVE-2023-50868).
//! ```

use super::answer::{Answer, Outcome, Placed};
use super::lookup::{self, Walk};
use crate::backend::Backend;
use backend_mongo::rdata::MAX_NSEC3_ITERATIONS;
use backend_mongo::schema::SchemaError;
use backend_mongo::{Name, Node, RRset, RType, StoreError, ZoneInfo};
use dns::dnssec::nsec3_hash;
use dns::encoding::base32hex;
use std::sync::Arc;

/// How a signed zone denies existence.
#[derive(Clone, Debug)]
enum Denial {
    Nsec,
    Nsec3 { salt: Vec<u8>, iterations: u16 },
}

/// A zone as this stage needs it.
struct Signed {
    zone: ZoneInfo,
    denial: Denial,
}

/// What this stage adds, collected before it is put in the answer.
#[derive(Default)]
struct Extra {
    answer: Vec<Placed>,
    authority: Vec<Placed>,
}

impl Extra {
    fn push_authority(&mut self, owner: &Name, rrset: &Arc<RRset>) {
        let dup = self
            .authority
            .iter()
            .any(|p| p.owner == *owner && same_kind(&p.rrset, rrset));
        if !dup {
            self.authority.push(Placed {
                owner: owner.clone(),
                rrset: rrset.clone(),
            });
        }
    }

    /// An RRset of `node` and its signatures into the authority section.
    fn prove_with(&mut self, owner: &Name, node: &Node, rtype: RType) {
        if let Some(set) = node.rrset(rtype) {
            self.push_authority(owner, set);
            if let Some(sigs) = node.rrsig(rtype) {
                self.push_authority(owner, sigs);
            }
        }
    }
}

/// True when two RRsets have the same type (and, for RRSIGs, cover the same type).
fn same_kind(a: &RRset, b: &RRset) -> bool {
    let covered = |r: &RRset| {
        r.rdata
            .first()
            .and_then(|rd| rd.get(..2).map(|c| [c[0], c[1]]))
    };
    a.rtype == b.rtype && (a.rtype != RType::RRSIG || covered(a) == covered(b))
}

/// Adds RRSIGs and denial proofs to `answer` (call only when DO=1).
pub async fn decorate<B: Backend>(
    backend: &B,
    answer: &mut Answer,
    qname: &Name,
    qtype: RType,
) -> Result<(), StoreError> {
    let mut extra = Extra::default();
    let mut zones: Vec<(Name, Option<Arc<Signed>>)> = Vec::new();
    let base = answer.zone.clone();
    // Answer section: signatures, and wildcard proofs.
    let mut walked: Vec<(Name, RType, Option<Arc<Node>>)> = Vec::new();
    for placed in &answer.answer {
        let owner = &placed.owner;
        let rtype = placed.rrset.rtype;
        if rtype == RType::RRSIG && qtype != RType::RRSIG {
            continue; // the signatures added below
        }
        // (RRSIGs asked for: nothing to add but a wildcard's proof.)
        let Some(signed) = signed_zone_of(backend, &mut zones, owner, rtype, &base).await? else {
            continue;
        };
        if walked.iter().any(|(n, t, _)| n == owner && *t == rtype) {
            continue;
        }
        let walk = lookup::walk(backend, &signed.zone, owner, rtype).await?;
        let source = match walk {
            Walk::Exact(node) => Some(node),
            Walk::Wildcard { closest, source } => {
                prove_wildcard_answer(backend, &signed, &mut extra, owner, &closest).await?;
                Some(source)
            }
            // A CNAME made from a DNAME is not signed (RFC 6672 §5.3.1).
            _ => None,
        };
        if let Some(sigs) = source.as_ref().and_then(|n| n.rrsig(rtype)) {
            extra.answer.push(Placed {
                owner: owner.clone(),
                rrset: sigs.clone(),
            });
        }
        walked.push((owner.clone(), rtype, source));
    }
    // The last name of the chain decides the proof.
    let mut last = qname.clone();
    for placed in &answer.answer {
        if placed.owner == last && placed.rrset.rtype == RType::CNAME && qtype != RType::CNAME {
            if let Some(target) = placed
                .rrset
                .rdata
                .first()
                .and_then(|rd| Name::from_wire(rd).ok())
            {
                last = target;
            }
        }
    }
    let zone_signed =
        signed_zone_of(backend, &mut zones, &answer.zone.apex, RType::SOA, &base).await?;
    if let Some(signed) = zone_signed.filter(|_| last.is_subdomain_of(&answer.zone.apex)) {
        match answer.outcome {
            Outcome::NxDomain => {
                if let Walk::NxDomain { closest } =
                    lookup::walk(backend, &signed.zone, &last, qtype).await?
                {
                    prove_nxdomain(backend, &signed, &mut extra, &last, &closest).await?;
                }
            }
            Outcome::NoData => match lookup::walk(backend, &signed.zone, &last, qtype).await? {
                Walk::Exact(node) => {
                    prove_nodata(backend, &signed, &mut extra, &last, &node).await?;
                }
                Walk::Wildcard { closest, source } => {
                    prove_wildcard_nodata(backend, &signed, &mut extra, &last, &closest, &source)
                        .await?;
                }
                _ => {}
            },
            Outcome::Delegation => {
                let cut = answer
                    .authority
                    .iter()
                    .find(|p| p.rrset.rtype == RType::NS)
                    .map(|p| p.owner.clone());
                if let Some(cut) = cut {
                    if let Some(node) = backend.get_node(&signed.zone, &cut).await? {
                        if node.rrset(RType::DS).is_some() {
                            extra.prove_with(&cut, &node, RType::DS);
                        } else {
                            prove_no_ds(backend, &signed, &mut extra, &cut, &node).await?;
                        }
                    }
                }
            }
            Outcome::Hit | Outcome::YxDomain => {}
        }
    }
    // Authority RRsets already there (the SOA of a denial): their RRSIGs.
    for placed in &answer.authority {
        let rtype = placed.rrset.rtype;
        if rtype == RType::NS {
            continue; // NS at a cut is not signed; NS elsewhere is not sent.
        }
        let Some(signed) = signed_zone_of(backend, &mut zones, &placed.owner, rtype, &base).await?
        else {
            continue;
        };
        if let Some(node) = backend.get_node(&signed.zone, &placed.owner).await? {
            if let Some(sigs) = node.rrsig(rtype) {
                let ttl = placed.rrset.ttl.min(sigs.ttl);
                let sigs = if ttl == sigs.ttl {
                    sigs.clone()
                } else {
                    Arc::new(RRset {
                        rtype: RType::RRSIG,
                        ttl,
                        rdata: sigs.rdata.clone(),
                    })
                };
                extra.push_authority(&placed.owner, &sigs);
            }
        }
    }
    // Additional RRsets (addresses of NS/MX/SRV targets): each followed by
    // its RRSIGs, as Knot and NSD send them (RFC 4035 §3.1.1 allows it).
    // Glue is below a cut, never signed, so it gets none.
    let mut additional = Vec::with_capacity(answer.additional.len() * 2);
    for placed in std::mem::take(&mut answer.additional) {
        let rtype = placed.rrset.rtype;
        let sigs = match signed_zone_of(backend, &mut zones, &placed.owner, rtype, &base).await? {
            Some(signed) => backend
                .get_node(&signed.zone, &placed.owner)
                .await?
                .and_then(|node| node.rrsig(rtype).cloned()),
            None => None,
        };
        additional.push(placed);
        if let Some(sigs) = sigs {
            let owner = additional[additional.len() - 1].owner.clone();
            additional.push(Placed { owner, rrset: sigs });
        }
    }
    answer.additional = additional;
    answer.answer.extend(extra.answer);
    for p in extra.authority {
        let dup = answer
            .authority
            .iter()
            .any(|a| a.owner == p.owner && same_kind(&a.rrset, &p.rrset));
        if !dup {
            answer.authority.push(p);
        }
    }
    Ok(())
}

/// The signed zone holding `name`'s `rtype` RRset (DS at a zone's apex: the
/// parent's), remembered per apex for this answer.
async fn signed_zone_of<B: Backend>(
    backend: &B,
    memo: &mut Vec<(Name, Option<Arc<Signed>>)>,
    name: &Name,
    rtype: RType,
    base: &ZoneInfo,
) -> Result<Option<Arc<Signed>>, StoreError> {
    let Some(zone) = lookup::zone_for_question(backend, name, rtype).await? else {
        return Ok(None);
    };
    // The version the answer stages read, not a newer one published since:
    // signatures and proofs must come from the same version as the data.
    let zone = if zone.apex == base.apex {
        base.clone()
    } else {
        zone
    };
    if let Some((_, s)) = memo.iter().find(|(apex, _)| *apex == zone.apex) {
        return Ok(s.clone());
    }
    let zone_apex = zone.apex.clone();
    let apex = backend.get_node(&zone, &zone.apex).await?;
    let signed = apex.and_then(|apex| {
        apex.rrset(RType::DNSKEY)?;
        let denial = match apex
            .rrset(RType::NSEC3PARAM)
            .and_then(|s| s.rdata.first().cloned())
        {
            Some(rd) if rd.len() >= 5 && rd[0] == 1 => Denial::Nsec3 {
                iterations: u16::from_be_bytes([rd[2], rd[3]]),
                salt: rd.get(5..5 + rd[4] as usize)?.to_vec(),
            },
            Some(_) => return None, // an NSEC3 hash we cannot compute
            None => Denial::Nsec,
        };
        Some(Arc::new(Signed { zone, denial }))
    });
    memo.push((zone_apex, signed.clone()));
    Ok(signed)
}

/// The NSEC whose owner is the greatest name not above `name`.
async fn nsec_at_or_before<B: Backend>(
    backend: &B,
    signed: &Signed,
    name: &Name,
) -> Result<Option<Arc<Node>>, StoreError> {
    backend
        .denial(&signed.zone, &name.canonical_key(), false)
        .await
}

/// Puts the NSEC covering `name` (or at it) in the proof.
async fn nsec_cover<B: Backend>(
    backend: &B,
    signed: &Signed,
    extra: &mut Extra,
    name: &Name,
) -> Result<(), StoreError> {
    if let Some(node) = nsec_at_or_before(backend, signed, name).await? {
        let owner = node.name.clone();
        extra.prove_with(&owner, &node, RType::NSEC);
    }
    Ok(())
}

/// The NSEC3 owner label of `name`; `None` in an NSEC zone. A zone whose
/// NSEC3PARAM asks for more than [`MAX_NSEC3_ITERATIONS`] is not hashed
/// (the importer refuses such zones; one written straight into the
/// database could make every query cost up to 65,536 SHA-1 rounds per
/// name, CVE-2023-50868): its proofs fail as malformed data, SERVFAIL.
fn nsec3_key(signed: &Signed, name: &Name) -> Result<Option<String>, StoreError> {
    match &signed.denial {
        Denial::Nsec3 { iterations, .. } if *iterations > MAX_NSEC3_ITERATIONS => {
            Err(StoreError::Schema(SchemaError {
                id: format!("{} NSEC3PARAM", signed.zone.apex),
                reason: format!(
                    "{iterations} NSEC3 iterations: at most {MAX_NSEC3_ITERATIONS} are hashed (RFC 9276)"
                ),
            }))
        }
        Denial::Nsec3 { salt, iterations } => {
            Ok(Some(base32hex(&nsec3_hash(name, salt, *iterations))))
        }
        Denial::Nsec => Ok(None),
    }
}

/// The NSEC3 matching `name`, if the chain has one.
async fn nsec3_match<B: Backend>(
    backend: &B,
    signed: &Signed,
    name: &Name,
) -> Result<Option<Arc<Node>>, StoreError> {
    let Some(key) = nsec3_key(signed, name)? else {
        return Ok(None);
    };
    let found = backend.denial(&signed.zone, &key, true).await?;
    Ok(found.filter(|n| n.name.labels().next() == Some(key.as_bytes())))
}

/// Puts the NSEC3 matching or covering `name` in the proof.
async fn nsec3_prove<B: Backend>(
    backend: &B,
    signed: &Signed,
    extra: &mut Extra,
    name: &Name,
) -> Result<(), StoreError> {
    let Some(key) = nsec3_key(signed, name)? else {
        return Ok(());
    };
    if let Some(node) = backend.denial(&signed.zone, &key, true).await? {
        let owner = node.name.clone();
        extra.prove_with(&owner, &node, RType::NSEC3);
    }
    Ok(())
}

/// `name`'s ancestor one label below `closest` (RFC 5155 "next closer").
fn next_closer(name: &Name, closest: &Name) -> Name {
    let depth = name.label_count() - closest.label_count();
    name.ancestors()
        .nth(depth.saturating_sub(1))
        .unwrap_or_else(|| name.clone())
}

/// NXDOMAIN: no `name`, no wildcard at its closest encloser.
async fn prove_nxdomain<B: Backend>(
    backend: &B,
    signed: &Signed,
    extra: &mut Extra,
    name: &Name,
    closest: &Name,
) -> Result<(), StoreError> {
    let star = closest.wildcard().ok();
    match signed.denial {
        Denial::Nsec => {
            nsec_cover(backend, signed, extra, name).await?;
            if let Some(star) = star {
                nsec_cover(backend, signed, extra, &star).await?;
            }
        }
        Denial::Nsec3 { .. } => {
            nsec3_prove(backend, signed, extra, closest).await?;
            nsec3_prove(backend, signed, extra, &next_closer(name, closest)).await?;
            if let Some(star) = star {
                nsec3_prove(backend, signed, extra, &star).await?;
            }
        }
    }
    Ok(())
}

/// NODATA at an existing `name` (an empty non-terminal included).
async fn prove_nodata<B: Backend>(
    backend: &B,
    signed: &Signed,
    extra: &mut Extra,
    name: &Name,
    node: &Node,
) -> Result<(), StoreError> {
    match signed.denial {
        Denial::Nsec => {
            if node.rrset(RType::NSEC).is_some() {
                extra.prove_with(name, node, RType::NSEC);
            } else {
                // An empty non-terminal: the NSEC before it, whose next name
                // lies below it, proves it exists with no data.
                nsec_cover(backend, signed, extra, name).await?;
            }
        }
        Denial::Nsec3 { .. } => {
            if let Some(m) = nsec3_match(backend, signed, name).await? {
                let owner = m.name.clone();
                extra.prove_with(&owner, &m, RType::NSEC3);
            } else {
                // An unsigned delegation left out by opt-out (DS query).
                prove_closest_provable(backend, signed, extra, name).await?;
            }
        }
    }
    Ok(())
}

/// RFC 5155 §7.2.1 without the wildcard part: the closest ancestor of
/// `name` with an NSEC3, and the NSEC3 covering the next closer name.
async fn prove_closest_provable<B: Backend>(
    backend: &B,
    signed: &Signed,
    extra: &mut Extra,
    name: &Name,
) -> Result<(), StoreError> {
    for ancestor in name.ancestors().skip(1) {
        if !ancestor.is_subdomain_of(&signed.zone.apex) {
            break;
        }
        if let Some(m) = nsec3_match(backend, signed, &ancestor).await? {
            let owner = m.name.clone();
            extra.prove_with(&owner, &m, RType::NSEC3);
            nsec3_prove(backend, signed, extra, &next_closer(name, &ancestor)).await?;
            break;
        }
    }
    Ok(())
}

/// A wildcard answer: no closer match for `name` exists.
async fn prove_wildcard_answer<B: Backend>(
    backend: &B,
    signed: &Signed,
    extra: &mut Extra,
    name: &Name,
    closest: &Name,
) -> Result<(), StoreError> {
    match signed.denial {
        Denial::Nsec => nsec_cover(backend, signed, extra, name).await,
        Denial::Nsec3 { .. } => {
            nsec3_prove(backend, signed, extra, &next_closer(name, closest)).await
        }
    }
}

/// NODATA through a wildcard: no closer match, and the wildcard lacks the type.
async fn prove_wildcard_nodata<B: Backend>(
    backend: &B,
    signed: &Signed,
    extra: &mut Extra,
    name: &Name,
    closest: &Name,
    source: &Node,
) -> Result<(), StoreError> {
    let Ok(star) = closest.wildcard() else {
        return Ok(());
    };
    match signed.denial {
        Denial::Nsec => {
            nsec_cover(backend, signed, extra, name).await?;
            extra.prove_with(&star, source, RType::NSEC);
        }
        Denial::Nsec3 { .. } => {
            nsec3_prove(backend, signed, extra, closest).await?;
            nsec3_prove(backend, signed, extra, &next_closer(name, closest)).await?;
            nsec3_prove(backend, signed, extra, &star).await?;
        }
    }
    Ok(())
}

/// A referral without DS: prove there is none.
async fn prove_no_ds<B: Backend>(
    backend: &B,
    signed: &Signed,
    extra: &mut Extra,
    cut: &Name,
    node: &Node,
) -> Result<(), StoreError> {
    prove_nodata(backend, signed, extra, cut, node).await
}
