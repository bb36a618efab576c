//! The DNSSEC sub-stages, each run right after its section (Knot's
//! `solve_answer_dnssec` and the like), only when the query has DO=1; a zone
//! is signed when its apex has a DNSKEY RRset.
//!
//! ```text
//!  solve_answer     ─► sign_answer:     each answer RRset's RRSIGs, from
//!                       the node the answer stage took it from (a
//!                       wildcard's, for a synthesised owner)
//!  solve_authority  ─► prove_denial:    from what the answer stage found
//!    ├─ wildcard answers ─► no closer name exists (prove_wildcard_answer)
//!    ├─ by outcome, for the final name:
//!    │    NXDOMAIN ─► prove_nxdomain   (RFC 4035 §3.1.3.2, RFC 5155 §7.2.2)
//!    │    NODATA   ─► prove_nodata     (§3.1.3.1 / §7.2.3, §7.2.4 for DS)
//!    │                prove_wildcard_nodata (§3.1.3.4 / §7.2.5)
//!    │    referral ─► DS + RRSIG, or prove_no_ds (§3.1.4 / §7.2.7, opt-out)
//!    └─ the authority RRsets already there (SOA) ─► their RRSIGs
//!  solve_additional ─► sign_additional: each A/AAAA followed by its RRSIGs
//!                       (render drops the pair when it does not fit)
//!  SignedZones remembers, for one answer, which zones are signed and how.
//!  NSEC/NSEC3 records come from Backend::denial: the record whose owner
//!  key is the greatest not above the asked key (one indexed lookup).
//!  NSEC3 hashing is bounded: at most MAX_NSEC3_ITERATIONS (100) iterations
//!  a hash, a few hashes an answer; a zone asking for more gets SERVFAIL
//!  for answers that need a proof (RFC 9276, CVE-2023-50868).
//! ```

use super::answer::{Answer, Outcome};
use super::lookup;
use super::section::{Placed, Section};
use crate::backend::Backend;
use crate::backend::StoreError;
use backend_mongo::schema::SchemaError;
use dns::dnssec::nsec3_hash;
use dns::encoding::base32hex;
use dns::rdata::MAX_NSEC3_ITERATIONS;
use dns::{Name, Node, RRset, RType, ZoneInfo};
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

/// The zones one answer touched, signed or not, remembered between the
/// DNSSEC sub-stages; the answer's own zone in the version the answer
/// stages read.
pub struct SignedZones {
    base: ZoneInfo,
    memo: Vec<(Name, Option<Arc<Signed>>)>,
}

impl SignedZones {
    /// Nothing known yet about the zones of an answer from `base`.
    pub fn new(base: &ZoneInfo) -> Self {
        SignedZones {
            base: base.clone(),
            memo: Vec::new(),
        }
    }
}

/// Puts an RRset of `node` and its signatures in `section`.
fn prove_with(section: &mut Section, owner: &Name, node: &Node, rtype: RType) {
    if let Some(set) = node.rrset(rtype) {
        section.push(owner, set);
        if let Some(sigs) = node.rrsig(rtype) {
            section.push(owner, sigs);
        }
    }
}

/// Adds the RRSIGs of the answer RRsets (after them, in the same order).
pub async fn sign_answer<B: Backend>(
    backend: &B,
    zones: &mut SignedZones,
    answer: &mut Answer,
) -> Result<(), StoreError> {
    for source in &answer.found.sources {
        if signed_zone_of(backend, zones, &source.owner, source.rtype)
            .await?
            .is_none()
        {
            continue;
        }
        let Some(sigs) = source.node.as_ref().and_then(|n| n.rrsig(source.rtype)) else {
            continue;
        };
        if source.rtype == RType::DNAME {
            // An RRSIG question may have met it already (section.rs).
            answer.answer.push_repeated(&source.owner, sigs);
        } else {
            answer.answer.push(&source.owner, sigs);
        }
    }
    Ok(())
}

/// Adds to the authority section the proofs the answer needs: no closer
/// name than a wildcard that answered, then the denial (or the DS of a
/// referral) for the final name, then the RRSIGs of what solve_authority
/// put there.
pub async fn prove_denial<B: Backend>(
    backend: &B,
    zones: &mut SignedZones,
    answer: &mut Answer,
) -> Result<(), StoreError> {
    let placed_before = answer.authority.len();
    prove_wildcard_answers(backend, zones, answer).await?;
    prove_outcome(backend, zones, answer).await?;
    sign_authority(backend, zones, answer, placed_before).await
}

/// For each answer owner synthesised from a wildcard: no closer match.
async fn prove_wildcard_answers<B: Backend>(
    backend: &B,
    zones: &mut SignedZones,
    answer: &mut Answer,
) -> Result<(), StoreError> {
    for source in &answer.found.sources {
        let Some(closest) = &source.closest_encloser else {
            continue;
        };
        let signed = signed_zone_of(backend, zones, &source.owner, source.rtype).await?;
        if let Some(signed) = signed {
            let proof = &mut answer.authority;
            prove_wildcard_answer(backend, &signed, proof, &source.owner, closest).await?;
        }
    }
    Ok(())
}

/// The proof the outcome needs for the final name, in a signed zone.
async fn prove_outcome<B: Backend>(
    backend: &B,
    zones: &mut SignedZones,
    answer: &mut Answer,
) -> Result<(), StoreError> {
    let apex = answer.zone.apex.clone();
    let Some(signed) = signed_zone_of(backend, zones, &apex, RType::SOA).await? else {
        return Ok(());
    };
    let found = &answer.found;
    let (name, proof) = (&found.final_name, &mut answer.authority);
    match answer.outcome {
        Outcome::NxDomain => {
            if let Some(closest) = &found.closest_encloser {
                prove_nxdomain(backend, &signed, proof, name, closest).await?;
            }
        }
        Outcome::NoData => match (&found.final_node, &found.closest_encloser, &found.wildcard) {
            (Some(node), _, _) => prove_nodata(backend, &signed, proof, name, node).await?,
            (None, Some(closest), Some(source)) => {
                prove_wildcard_nodata(backend, &signed, proof, name, closest, source).await?;
            }
            _ => {}
        },
        Outcome::Delegation => {
            if let Some((cut, node)) = &found.cut {
                if node.rrset(RType::DS).is_some() {
                    prove_with(proof, cut, node, RType::DS);
                } else {
                    prove_no_ds(backend, &signed, proof, cut, node).await?;
                }
            }
        }
        Outcome::Hit | Outcome::YxDomain => {}
    }
    Ok(())
}

/// The RRSIGs of the first `count` authority RRsets (the SOA of a
/// denial), with the RRset's TTL when that is lower.
async fn sign_authority<B: Backend>(
    backend: &B,
    zones: &mut SignedZones,
    answer: &mut Answer,
    count: usize,
) -> Result<(), StoreError> {
    for i in 0..count {
        let placed = answer.authority[i].clone();
        let rtype = placed.rrset.rtype;
        if rtype == RType::NS {
            continue; // NS at a cut is not signed; NS elsewhere is not sent.
        }
        let Some(sigs) = stored_rrsig(backend, zones, &placed).await? else {
            continue;
        };
        let ttl = placed.rrset.ttl.min(sigs.ttl);
        let sigs = if ttl == sigs.ttl {
            sigs
        } else {
            Arc::new(RRset {
                rtype: RType::RRSIG,
                ttl,
                rdata: sigs.rdata.clone(),
            })
        };
        answer.authority.push(&placed.owner, &sigs);
    }
    Ok(())
}

/// Follows each additional RRset (addresses of NS/MX/SRV targets) with its
/// RRSIGs, as Knot and NSD send them (RFC 4035 §3.1.1 allows it). Glue is
/// below a cut, never signed, so it gets none.
pub async fn sign_additional<B: Backend>(
    backend: &B,
    zones: &mut SignedZones,
    answer: &mut Answer,
) -> Result<(), StoreError> {
    for placed in answer.additional.take() {
        let sigs = stored_rrsig(backend, zones, &placed).await?;
        answer.additional.push(&placed.owner, &placed.rrset);
        if let Some(sigs) = sigs {
            answer.additional.push(&placed.owner, &sigs);
        }
    }
    Ok(())
}

/// The RRSIGs read with a placed RRset, when its zone is signed. They come
/// from the same read of the node as the records, never from a second one:
/// a write between two reads would pair old records with new signatures.
async fn stored_rrsig<B: Backend>(
    backend: &B,
    zones: &mut SignedZones,
    placed: &Placed,
) -> Result<Option<Arc<RRset>>, StoreError> {
    let rtype = placed.rrset.rtype;
    let signed = signed_zone_of(backend, zones, &placed.owner, rtype).await?;
    Ok(signed.and(placed.sigs.clone()))
}

/// The signed zone holding `name`'s `rtype` RRset (DS at a zone's apex: the
/// parent's), remembered per apex for this answer.
async fn signed_zone_of<B: Backend>(
    backend: &B,
    zones: &mut SignedZones,
    name: &Name,
    rtype: RType,
) -> Result<Option<Arc<Signed>>, StoreError> {
    let (base, memo) = (&zones.base, &mut zones.memo);
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
    proof: &mut Section,
    name: &Name,
) -> Result<(), StoreError> {
    if let Some(node) = nsec_at_or_before(backend, signed, name).await? {
        let owner = node.name.clone();
        prove_with(proof, &owner, &node, RType::NSEC);
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
    proof: &mut Section,
    name: &Name,
) -> Result<(), StoreError> {
    let Some(key) = nsec3_key(signed, name)? else {
        return Ok(());
    };
    if let Some(node) = backend.denial(&signed.zone, &key, true).await? {
        let owner = node.name.clone();
        prove_with(proof, &owner, &node, RType::NSEC3);
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
    proof: &mut Section,
    name: &Name,
    closest: &Name,
) -> Result<(), StoreError> {
    let star = closest.wildcard().ok();
    match signed.denial {
        Denial::Nsec => {
            nsec_cover(backend, signed, proof, name).await?;
            if let Some(star) = star {
                nsec_cover(backend, signed, proof, &star).await?;
            }
        }
        Denial::Nsec3 { .. } => {
            nsec3_prove(backend, signed, proof, closest).await?;
            nsec3_prove(backend, signed, proof, &next_closer(name, closest)).await?;
            if let Some(star) = star {
                nsec3_prove(backend, signed, proof, &star).await?;
            }
        }
    }
    Ok(())
}

/// NODATA at an existing `name` (an empty non-terminal included).
async fn prove_nodata<B: Backend>(
    backend: &B,
    signed: &Signed,
    proof: &mut Section,
    name: &Name,
    node: &Node,
) -> Result<(), StoreError> {
    match signed.denial {
        Denial::Nsec => {
            if node.rrset(RType::NSEC).is_some() {
                prove_with(proof, name, node, RType::NSEC);
            } else {
                // An empty non-terminal: the NSEC before it, whose next name
                // lies below it, proves it exists with no data.
                nsec_cover(backend, signed, proof, name).await?;
            }
        }
        Denial::Nsec3 { .. } => {
            if let Some(m) = nsec3_match(backend, signed, name).await? {
                let owner = m.name.clone();
                prove_with(proof, &owner, &m, RType::NSEC3);
            } else {
                // An unsigned delegation left out by opt-out (DS query).
                prove_closest_provable(backend, signed, proof, name).await?;
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
    proof: &mut Section,
    name: &Name,
) -> Result<(), StoreError> {
    for ancestor in name.ancestors().skip(1) {
        if !ancestor.is_subdomain_of(&signed.zone.apex) {
            break;
        }
        if let Some(m) = nsec3_match(backend, signed, &ancestor).await? {
            let owner = m.name.clone();
            prove_with(proof, &owner, &m, RType::NSEC3);
            nsec3_prove(backend, signed, proof, &next_closer(name, &ancestor)).await?;
            break;
        }
    }
    Ok(())
}

/// A wildcard answer: no closer match for `name` exists.
async fn prove_wildcard_answer<B: Backend>(
    backend: &B,
    signed: &Signed,
    proof: &mut Section,
    name: &Name,
    closest: &Name,
) -> Result<(), StoreError> {
    match signed.denial {
        Denial::Nsec => nsec_cover(backend, signed, proof, name).await,
        Denial::Nsec3 { .. } => {
            nsec3_prove(backend, signed, proof, &next_closer(name, closest)).await
        }
    }
}

/// NODATA through a wildcard: no closer match, and the wildcard lacks the type.
async fn prove_wildcard_nodata<B: Backend>(
    backend: &B,
    signed: &Signed,
    proof: &mut Section,
    name: &Name,
    closest: &Name,
    source: &Node,
) -> Result<(), StoreError> {
    let Ok(star) = closest.wildcard() else {
        return Ok(());
    };
    match signed.denial {
        Denial::Nsec => {
            nsec_cover(backend, signed, proof, name).await?;
            prove_with(proof, &star, source, RType::NSEC);
        }
        Denial::Nsec3 { .. } => {
            nsec3_prove(backend, signed, proof, closest).await?;
            nsec3_prove(backend, signed, proof, &next_closer(name, closest)).await?;
            nsec3_prove(backend, signed, proof, &star).await?;
        }
    }
    Ok(())
}

/// A referral without DS: prove there is none.
async fn prove_no_ds<B: Backend>(
    backend: &B,
    signed: &Signed,
    proof: &mut Section,
    cut: &Name,
    node: &Node,
) -> Result<(), StoreError> {
    prove_nodata(backend, signed, proof, cut, node).await
}
