//! Reading an UPDATE message (RFC 2136 §2, §3.1, §3.2.4, §3.4.1) into a
//! change-set: the zone, its prerequisites and its edits.
//!
//! ```text
//!  header (opcode 5) ─► zone section: one SOA question, class IN  (FORMERR)
//!  prerequisite section ─► Prerequisite per RR (class ANY / NONE / IN)
//!  update section ─► RecordEdit per RR: IN add, ANY delete RRset / name,
//!                    NONE delete one record; names in rdata decompressed
//!  any owner outside the zone ─► NOTZONE; anything else malformed ─► FORMERR
//! ```
//!
//! The TSIG record, if any, is stripped before (`tsig::without_tsig`).

use crate::wire::walk::{records_from, u16_at, Part, RecordAt, Unwalkable};
use crate::wire::{read_name, Rcode, CLASS_ANY, CLASS_IN, HEADER_LEN};
use dns::edit::{ChangeSet, Prerequisite, RecordEdit};
use dns::types::{Field, Rdata, TypeInfo};
use dns::{Name, RType};

/// Class NONE (RFC 2136 §1.3).
const CLASS_NONE: u16 = 254;

/// The opcode of an UPDATE.
pub const OPCODE_UPDATE: u8 = 5;

/// An UPDATE read whole.
#[derive(Debug)]
pub struct UpdateRequest {
    /// The message ID.
    pub id: u16,
    /// The zone section as it came (echoed in the reply).
    pub zone_section: std::ops::Range<usize>,
    /// The zone, the prerequisites and the edits, in order; an edit the
    /// rules leave out skips only itself (RFC 2136 §3.4.2).
    pub change: ChangeSet,
}

/// Why an UPDATE cannot be read: the reply's rcode, and the zone section
/// when it could be read (to echo).
#[derive(Debug)]
pub struct Refusal {
    /// FORMERR or NOTZONE.
    pub rcode: Rcode,
    /// What was wrong, for the log.
    pub why: String,
}

fn formerr(why: impl Into<String>) -> Refusal {
    Refusal {
        rcode: Rcode::FORMERR,
        why: why.into(),
    }
}

/// True when `packet` is an UPDATE request (opcode 5, QR clear).
pub fn is_update(packet: &[u8]) -> bool {
    packet.len() >= HEADER_LEN && packet[2] & 0x80 == 0 && (packet[2] >> 3) & 0xF == OPCODE_UPDATE
}

/// One resource record of the message.
struct Rr {
    owner: Name,
    rtype: RType,
    class: u16,
    ttl: u32,
    rdata: Vec<u8>,
}

/// Reads the record the walk found at `at`.
fn read_rr(p: &[u8], at: Result<RecordAt, Unwalkable>) -> Result<Rr, Refusal> {
    let at = at.map_err(|_| formerr("a truncated record"))?;
    let (owner, _) = read_name(p, at.start).ok_or_else(|| formerr("a record's owner"))?;
    let rtype = RType(at.rtype);
    Ok(Rr {
        owner,
        rtype,
        class: at.class,
        ttl: at.ttl,
        rdata: decompress_rdata(p, rtype, at.rdata.start, at.rdata.end)?,
    })
}

/// The rdata at `start..end`, with the names of the types whose names may
/// arrive compressed written out in full: the types whose descriptor
/// (`dns::types`) lower-cases names in canonical form, the RFC 1035 types
/// and those RFC 3597 §4 asks receivers to decompress too (SRV, NAPTR,
/// RP, AFSDB, RT, KX, PX, SIG, NXT, DNAME, RRSIG); other types as they are.
fn decompress_rdata(p: &[u8], t: RType, start: usize, end: usize) -> Result<Vec<u8>, Refusal> {
    if start == end {
        // No rdata: a deletion or a prerequisite.
        return Ok(Vec::new());
    }
    let fields = match t.info() {
        Some(TypeInfo {
            canonical: true,
            rdata: Rdata::Fields(fields),
            ..
        }) => *fields,
        _ => return Ok(p[start..end].to_vec()),
    };
    let short = || formerr("short rdata");
    let mut out = Vec::with_capacity(end - start);
    let mut at = start;
    for field in fields {
        let next = match field {
            Field::Name(_) => {
                let (name, next) = read_name(p, at).ok_or_else(|| formerr("a name in rdata"))?;
                if next > end {
                    return Err(formerr("a name in rdata runs past it"));
                }
                out.extend_from_slice(name.as_wire());
                at = next;
                continue;
            }
            Field::Text(_) => at + 1 + usize::from(*p.get(at).ok_or_else(short)?),
            _ => match field.width() {
                Some(width) => at + width,
                None => break,
            },
        };
        out.extend_from_slice(p.get(at..next).filter(|_| next <= end).ok_or_else(short)?);
        at = next;
    }
    out.extend_from_slice(p.get(at..end).ok_or_else(short)?);
    Ok(out)
}

/// The shortest resource record: a root owner, type, class, TTL and a
/// zero rdata length.
const MIN_RR_LEN: usize = 11;

/// Reads an UPDATE message without its TSIG.
pub fn parse_update(p: &[u8]) -> Result<UpdateRequest, Refusal> {
    let id = u16_at(p, 0).ok_or_else(|| formerr("short header"))?;
    let count = |at| u16_at(p, at).unwrap_or(0);
    let (zocount, prcount, upcount, adcount) = (count(4), count(6), count(8), count(10));
    if zocount != 1 {
        return Err(formerr(format!(
            "{zocount} zones in the zone section (one is allowed)"
        )));
    }
    let (zone, after) = read_name(p, HEADER_LEN).ok_or_else(|| formerr("the zone name"))?;
    let (ztype, zclass) = (u16_at(p, after), u16_at(p, after + 2));
    if ztype != Some(RType::SOA.0) || zclass != Some(CLASS_IN) {
        return Err(formerr(
            "the zone section must be one SOA question of class IN",
        ));
    }
    let zone_section = HEADER_LEN..after + 4;
    let counts = [prcount, upcount, adcount].map(u32::from);
    let mut walk = records_from(p, after + 4, counts);
    // Room for the records the bytes can hold, not for those the header
    // claims: this runs before the TSIG is checked.
    let fit = |count: u16| usize::from(count).min(p.len() / MIN_RR_LEN);
    let mut prerequisites = Vec::with_capacity(fit(prcount));
    let mut edits = Vec::with_capacity(fit(upcount));
    for at in walk.by_ref() {
        let part = at.as_ref().ok().map(|r| r.part);
        let rr = read_rr(p, at)?;
        match part {
            Some(Part::Answer) => prerequisites.push(prerequisite(in_zone(rr, &zone)?)?),
            Some(Part::Authority) => edits.push(edit(in_zone(rr, &zone)?)?),
            _ => {}
        }
    }
    if walk.end() != p.len() {
        return Err(formerr("bytes after the last record"));
    }
    Ok(UpdateRequest {
        id,
        zone_section,
        change: ChangeSet::new(zone, edits).when(prerequisites),
    })
}

/// `rr`, when its owner is in `zone`; NOTZONE otherwise.
fn in_zone(rr: Rr, zone: &Name) -> Result<Rr, Refusal> {
    match rr.owner.is_subdomain_of(zone) {
        true => Ok(rr),
        false => Err(Refusal {
            rcode: Rcode::NOTZONE,
            why: format!("{} is outside zone {zone}", rr.owner),
        }),
    }
}

/// A prerequisite record (RFC 2136 §2.4, the table of §3.2.4).
fn prerequisite(rr: Rr) -> Result<Prerequisite, Refusal> {
    let empty = rr.ttl == 0 && rr.rdata.is_empty();
    Ok(match (rr.class, rr.rtype) {
        (CLASS_ANY, RType::ANY) if empty => Prerequisite::NameInUse(rr.owner),
        (CLASS_ANY, t) if empty && !t.is_meta() => Prerequisite::RRsetExists(rr.owner, t),
        (CLASS_NONE, RType::ANY) if empty => Prerequisite::NameNotInUse(rr.owner),
        (CLASS_NONE, t) if empty && !t.is_meta() => Prerequisite::RRsetAbsent(rr.owner, t),
        (CLASS_IN, t) if rr.ttl == 0 && !t.is_meta() => {
            Prerequisite::RRsetIs(rr.owner, t, rr.rdata.into_boxed_slice())
        }
        _ => return Err(formerr(format!("a malformed prerequisite at {}", rr.owner))),
    })
}

/// An update record (RFC 2136 §2.5, the prescan of §3.4.1.3).
fn edit(rr: Rr) -> Result<RecordEdit, Refusal> {
    let empty = rr.ttl == 0 && rr.rdata.is_empty();
    let bad = || formerr(format!("a malformed update record at {}", rr.owner));
    Ok(match (rr.class, rr.rtype) {
        (CLASS_IN, t) if !t.is_meta() => {
            dns::rdata::check_rdata(t, &rr.rdata)
                .map_err(|e| formerr(format!("{t} rdata: {e}")))?;
            RecordEdit::add(rr.owner, t, rr.ttl, vec![rr.rdata.into_boxed_slice()])
        }
        (CLASS_ANY, RType::ANY) if empty => RecordEdit::DeleteName { name: rr.owner },
        (CLASS_ANY, t) if empty && !t.is_meta() => RecordEdit::DeleteRRset {
            name: rr.owner,
            rtype: t,
        },
        (CLASS_NONE, t) if rr.ttl == 0 && !t.is_meta() => RecordEdit::DeleteRecords {
            name: rr.owner,
            rtype: t,
            rdata: vec![rr.rdata.into_boxed_slice()],
        },
        _ => return Err(bad()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(s: &str) -> Vec<u8> {
        s.parse::<Name>().unwrap().as_wire().to_vec()
    }

    fn rr(owner: &str, t: u16, class: u16, ttl: u32, rd: &[u8]) -> Vec<u8> {
        let mut v = name(owner);
        v.extend_from_slice(&t.to_be_bytes());
        v.extend_from_slice(&class.to_be_bytes());
        v.extend_from_slice(&ttl.to_be_bytes());
        v.extend_from_slice(&(rd.len() as u16).to_be_bytes());
        v.extend_from_slice(rd);
        v
    }

    fn message(prereqs: &[Vec<u8>], updates: &[Vec<u8>]) -> Vec<u8> {
        let mut m = vec![0x12, 0x34, 0x28, 0x00, 0, 1];
        m.extend_from_slice(&(prereqs.len() as u16).to_be_bytes());
        m.extend_from_slice(&(updates.len() as u16).to_be_bytes());
        m.extend_from_slice(&[0, 0]);
        m.extend_from_slice(&name("upd.test."));
        m.extend_from_slice(&[0, 6, 0, 1]);
        for r in prereqs.iter().chain(updates) {
            m.extend_from_slice(r);
        }
        m
    }

    #[test]
    fn prerequisites_and_edits_are_read_by_their_class() {
        let prereqs = [
            rr("www.upd.test.", 255, CLASS_NONE, 0, &[]),
            rr("www.upd.test.", 255, CLASS_ANY, 0, &[]),
            rr("www.upd.test.", 1, CLASS_ANY, 0, &[]),
            rr("www.upd.test.", 15, CLASS_NONE, 0, &[]),
            rr("www.upd.test.", 1, CLASS_IN, 0, &[192, 0, 2, 1]),
        ];
        let updates = [
            rr("a.upd.test.", 1, CLASS_IN, 300, &[192, 0, 2, 9]),
            rr("a.upd.test.", 1, CLASS_NONE, 0, &[192, 0, 2, 9]),
            rr("a.upd.test.", 1, CLASS_ANY, 0, &[]),
            rr("a.upd.test.", 255, CLASS_ANY, 0, &[]),
        ];
        let r = parse_update(&message(&prereqs, &updates)).unwrap();
        assert_eq!(r.change.zone, "upd.test.".parse::<Name>().unwrap());
        assert!(matches!(
            r.change.prerequisites[0],
            Prerequisite::NameNotInUse(_)
        ));
        assert!(matches!(
            r.change.prerequisites[1],
            Prerequisite::NameInUse(_)
        ));
        assert!(matches!(
            r.change.prerequisites[2],
            Prerequisite::RRsetExists(_, RType::A)
        ));
        assert!(matches!(
            r.change.prerequisites[3],
            Prerequisite::RRsetAbsent(_, RType::MX)
        ));
        assert!(matches!(
            r.change.prerequisites[4],
            Prerequisite::RRsetIs(_, RType::A, _)
        ));
        assert!(matches!(r.change.edits[0], RecordEdit::Add { .. }));
        assert!(matches!(
            r.change.edits[1],
            RecordEdit::DeleteRecords { .. }
        ));
        assert!(matches!(r.change.edits[2], RecordEdit::DeleteRRset { .. }));
        assert!(matches!(r.change.edits[3], RecordEdit::DeleteName { .. }));
    }

    #[test]
    fn outside_the_zone_is_notzone_and_malformed_is_formerr() {
        let outside = [rr("www.other.test.", 1, CLASS_IN, 300, &[192, 0, 2, 1])];
        assert_eq!(
            parse_update(&message(&[], &outside)).unwrap_err().rcode,
            Rcode::NOTZONE
        );
        let ttl_on_delete = [rr("a.upd.test.", 1, CLASS_ANY, 5, &[])];
        assert_eq!(
            parse_update(&message(&[], &ttl_on_delete))
                .unwrap_err()
                .rcode,
            Rcode::FORMERR
        );
        let meta_add = [rr("a.upd.test.", 252, CLASS_IN, 300, &[])];
        assert_eq!(
            parse_update(&message(&[], &meta_add)).unwrap_err().rcode,
            Rcode::FORMERR
        );
    }

    #[test]
    fn names_in_rdata_are_decompressed() {
        // MX 10 pointing at the zone name (offset 12).
        let mut m = message(&[], &[]);
        m[9] = 1;
        m.extend_from_slice(&[0xC0, 12, 0, 15, 0, 1, 0, 0, 1, 44, 0, 4, 0, 10, 0xC0, 12]);
        let r = parse_update(&m).unwrap();
        match &r.change.edits[0] {
            RecordEdit::Add { rrset, .. } => assert_eq!(
                &rrset.rdata[0][..],
                &[&[0u8, 10][..], &name("upd.test.")].concat()[..]
            ),
            e => panic!("{e:?}"),
        }
    }

    /// The rdata `rd` of one added record of type `t` at the zone name,
    /// as the UPDATE reader stores it.
    fn added_rdata(t: u16, rd: &[u8]) -> Result<Vec<u8>, Refusal> {
        let mut m = message(&[], &[]);
        m[9] = 1;
        m.extend_from_slice(&[0xC0, 12]);
        m.extend_from_slice(&t.to_be_bytes());
        m.extend_from_slice(&[0, 1, 0, 0, 1, 44]);
        m.extend_from_slice(&(rd.len() as u16).to_be_bytes());
        m.extend_from_slice(rd);
        let r = parse_update(&m)?;
        match &r.change.edits[0] {
            RecordEdit::Add { rrset, .. } => Ok(rrset.rdata[0].to_vec()),
            e => panic!("{e:?}"),
        }
    }

    #[test]
    fn names_of_the_types_the_descriptor_lists_are_decompressed() {
        let zone = name("upd.test.");
        // NAPTR (RFC 3597 §4 asks receivers to decompress it): its
        // character-strings walked, the replacement written out.
        let naptr = [&[0, 1, 0, 2, 1, b'u', 0, 0][..], &[0xC0, 12]].concat();
        assert_eq!(
            added_rdata(35, &naptr).unwrap(),
            [&naptr[..8], &zone].concat()
        );
        // MINFO: both names.
        assert_eq!(
            added_rdata(14, &[0xC0, 12, 0xC0, 12]).unwrap(),
            [&zone[..], &zone].concat()
        );
        // LP is not one of them: a pointer stays a pointer, and is refused.
        assert!(added_rdata(107, &[0, 10, 0xC0, 12]).is_err());
    }
}
