//! Parsing a query.
//!
//! ```text
//!  header ─► QR? drop │ opcode ≠ QUERY → NOTIMP │ QDCOUNT ≠ 1 → FORMERR
//!  question (name, type, class; pointers followed with a hop limit)
//!  answer RRs skipped │ authority: an SOA's serial kept (IXFR)
//!  additional: OPT at most once, else FORMERR (edns::request::read_opt)
//!  trailing bytes → FORMERR
//!  question_type: a query's QTYPE alone, read without parsing the rest
//! ```

use super::walk::{name_end, plain_name_end, read_name, records_from, u16_at, Part};
use super::{Rcode, HEADER_LEN};
use crate::edns::{request::read_opt, Asked, Edns};
use dns::{Name, RType};

/// A parsed query.
#[derive(Clone, Debug)]
pub struct Query {
    /// Message ID.
    pub id: u16,
    /// Opcode (0 = QUERY).
    pub opcode: u8,
    /// The RD bit.
    pub rd: bool,
    /// The CD bit.
    pub cd: bool,
    /// The question name, case-folded.
    pub qname: Name,
    /// Byte range of the question (name, type, class) in the packet, as sent:
    /// echoed verbatim so the asker gets its own letter case back.
    pub question: std::ops::Range<usize>,
    /// The question type.
    pub qtype: RType,
    /// The question class.
    pub qclass: u16,
    /// EDNS, if the query carried an OPT record.
    pub edns: Option<Edns>,
    /// For IXFR: the serial of the SOA in the authority section (RFC 1995 §3).
    pub ixfr_serial: Option<u32>,
}

impl Query {
    /// The EDNS options that ask for something in the reply (none
    /// without EDNS).
    pub fn asked(&self) -> Asked {
        self.edns.map(|e| e.asked).unwrap_or_default()
    }
}

/// Why a query gets no normal answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QueryError {
    /// Not worth a reply (too short, or itself a response).
    Drop,
    /// Reply with this rcode; the question is echoed when it was readable.
    Reply {
        /// The rcode to send.
        rcode: Rcode,
        /// The message ID.
        id: u16,
        /// The opcode, echoed.
        opcode: u8,
        /// The RD bit, echoed.
        rd: bool,
        /// The question as sent, when it could be read.
        question: Option<std::ops::Range<usize>>,
        /// EDNS of the query, when it could be read.
        edns: Option<Edns>,
    },
}

/// Parses a query; anything that is not a well-formed query is an error
/// value saying how to reply (or not to).
pub fn parse_query(packet: &[u8]) -> Result<Query, QueryError> {
    if packet.len() < HEADER_LEN {
        return Err(QueryError::Drop);
    }
    let id = u16_at(packet, 0).unwrap_or(0);
    let flags = u16_at(packet, 2).unwrap_or(0);
    if flags & super::flags::QR != 0 {
        return Err(QueryError::Drop);
    }
    let opcode = ((flags >> 11) & 0xF) as u8;
    let rd = flags & super::flags::RD != 0;
    let cd = flags & super::flags::CD != 0;
    let qdcount = u16_at(packet, 4).unwrap_or(0);
    let ancount = u16_at(packet, 6).unwrap_or(0);
    let nscount = u16_at(packet, 8).unwrap_or(0);
    let arcount = u16_at(packet, 10).unwrap_or(0);
    let reply = |rcode, question, edns| QueryError::Reply {
        rcode,
        id,
        opcode,
        rd,
        question,
        edns,
    };
    if qdcount != 1 {
        let rcode = if opcode != 0 {
            Rcode::NOTIMP
        } else {
            Rcode::FORMERR
        };
        return Err(reply(rcode, None, None));
    }
    let Some((qname, after_name)) = read_name(packet, HEADER_LEN) else {
        return Err(reply(Rcode::FORMERR, None, None));
    };
    let (Some(qtype), Some(qclass)) = (u16_at(packet, after_name), u16_at(packet, after_name + 2))
    else {
        return Err(reply(Rcode::FORMERR, None, None));
    };
    let question_end = after_name + 4;
    // Echo the question verbatim only if it was not compressed (a pointer
    // whose low byte is 0 must not pass for the root label).
    let question = if plain_name_end(packet, HEADER_LEN) == Some(after_name) {
        Some(HEADER_LEN..question_end)
    } else {
        None
    };
    // Skip answer and authority records; parse the additional section for OPT.
    let counts = [ancount, nscount, arcount].map(u32::from);
    let mut walk = records_from(packet, question_end, counts);
    let mut edns: Option<Edns> = None;
    let mut ixfr_serial = None;
    for record in walk.by_ref() {
        let Ok(record) = record else {
            return Err(reply(Rcode::FORMERR, question, edns));
        };
        let rtype = RType(record.rtype);
        if record.part == Part::Authority && rtype == RType::SOA {
            ixfr_serial = soa_serial(packet, record.rdata.start, record.rdata.end);
        }
        if rtype == RType::OPT {
            match read_opt(packet, &record, edns) {
                Ok(read) => edns = Some(read),
                Err(_) => return Err(reply(Rcode::FORMERR, question, None)),
            }
        }
    }
    let pos = walk.end();
    if pos != packet.len() {
        return Err(reply(Rcode::FORMERR, question, edns));
    }
    if opcode != 0 {
        return Err(reply(Rcode::NOTIMP, question, edns));
    }
    if edns.is_some_and(|e| !e.known_version()) {
        return Err(reply(Rcode::BADVERS, question, edns));
    }
    let Some(question) = question else {
        return Err(reply(Rcode::FORMERR, None, edns));
    };
    Ok(Query {
        id,
        opcode,
        rd,
        cd,
        qname,
        question,
        qtype: RType(qtype),
        qclass,
        edns,
        ixfr_serial,
    })
}

/// The SERIAL field of SOA rdata at `start..end` (names may be compressed).
fn soa_serial(packet: &[u8], start: usize, end: usize) -> Option<u32> {
    let after_mname = name_end(packet, start)?;
    let after_rname = name_end(packet, after_mname)?;
    dns::serial::serial_at(packet, after_rname, end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(name: &[u8], qtype: u16, extra: &[u8], arcount: u16) -> Vec<u8> {
        let mut p = vec![0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0];
        p.extend_from_slice(&arcount.to_be_bytes());
        p.extend_from_slice(name);
        p.extend_from_slice(&qtype.to_be_bytes());
        p.extend_from_slice(&1u16.to_be_bytes());
        p.extend_from_slice(extra);
        p
    }

    const OPT_DO: &[u8] = &[0, 0, 41, 0x04, 0xD0, 0, 0, 0x80, 0, 0, 0];

    #[test]
    fn a_plain_query_parses() {
        let p = query(b"\x03WWW\x07example\x03com\x00", 1, &[], 0);
        let q = parse_query(&p).unwrap();
        assert_eq!(q.id, 0x1234);
        assert!(q.rd);
        assert_eq!(q.qname.to_string(), "www.example.com.");
        assert_eq!(q.qtype, RType::A);
        assert_eq!(&p[q.question.clone()][..4], b"\x03WWW");
        assert_eq!(q.edns, None);
    }

    #[test]
    fn edns_is_read() {
        let p = query(b"\x00", 2, OPT_DO, 1);
        let q = parse_query(&p).unwrap();
        assert_eq!(
            q.edns,
            Some(Edns {
                udp_size: 1232,
                version: 0,
                dnssec_ok: true,
                asked: Asked::default(),
            })
        );
    }

    fn rcode_of(p: &[u8]) -> Option<Rcode> {
        match parse_query(p) {
            Err(QueryError::Reply { rcode, .. }) => Some(rcode),
            _ => None,
        }
    }

    #[test]
    fn malformed_queries_get_the_right_rcode() {
        // Two OPT records.
        let mut two = OPT_DO.to_vec();
        two.extend_from_slice(OPT_DO);
        assert_eq!(rcode_of(&query(b"\x00", 1, &two, 2)), Some(Rcode::FORMERR));
        // Trailing garbage.
        assert_eq!(
            rcode_of(&query(b"\x00", 1, &[1, 2, 3], 0)),
            Some(Rcode::FORMERR)
        );
        // Truncated question.
        let p = query(b"\x03www\x00", 1, &[], 0);
        assert_eq!(rcode_of(&p[..p.len() - 2]), Some(Rcode::FORMERR));
        // A counted record that is not there.
        assert_eq!(rcode_of(&query(b"\x00", 1, &[], 1)), Some(Rcode::FORMERR));
        // QDCOUNT = 0.
        let mut p = query(b"\x00", 1, &[], 0);
        p[5] = 0;
        assert_eq!(rcode_of(&p), Some(Rcode::FORMERR));
        // EDNS version 1.
        let mut v1 = OPT_DO.to_vec();
        v1[6] = 1;
        assert_eq!(rcode_of(&query(b"\x00", 1, &v1, 1)), Some(Rcode::BADVERS));
        // Opcode UPDATE.
        let mut p = query(b"\x00", 1, &[], 0);
        p[2] = 0x28;
        assert_eq!(rcode_of(&p), Some(Rcode::NOTIMP));
        // A question that is a pointer whose low byte is 0 (to the header)
        // is compressed: FORMERR without echoing it.
        let mut p = query(b"\xC0\x00", 1, &[], 0);
        p[0] = 0;
        match parse_query(&p) {
            Err(QueryError::Reply {
                rcode, question, ..
            }) => {
                assert_eq!(rcode, Rcode::FORMERR);
                assert_eq!(question, None);
            }
            other => panic!("{other:?}"),
        }
        // A pointer loop in the question.
        let p = query(b"\xC0\x0C", 1, &[], 0);
        assert_eq!(rcode_of(&p), Some(Rcode::FORMERR));
        // An EDNS option whose length runs past the OPT rdata.
        let lying = [
            0, 0, 41, 4, 0xD0, 0, 0, 0, 0, 0, 8, 0, 10, 0, 40, 1, 2, 3, 4,
        ];
        assert_eq!(
            rcode_of(&query(b"\x00", 1, &lying, 1)),
            Some(Rcode::FORMERR)
        );
        let cut = [0, 0, 41, 4, 0xD0, 0, 0, 0, 0, 0, 3, 0, 10, 0];
        assert_eq!(rcode_of(&query(b"\x00", 1, &cut, 1)), Some(Rcode::FORMERR));
        let cookie = [
            0, 0, 41, 4, 0xD0, 0, 0, 0, 0, 0, 12, 0, 10, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8,
        ];
        assert!(parse_query(&query(b"\x00", 1, &cookie, 1)).is_ok());
        // Label length over 63 (0x40 is a reserved label type).
        assert_eq!(
            rcode_of(&query(b"\x40abc\x00", 1, &[], 0)),
            Some(Rcode::FORMERR)
        );
    }

    #[test]
    fn the_serial_of_an_ixfr_query_is_read() {
        // IXFR example.com with NSCOUNT = 1: example.com SOA, names compressed.
        let mut p = query(b"\x07example\x03com\x00", 251, &[], 0);
        p[9] = 1;
        p.extend_from_slice(&[0xC0, 0x0C, 0, 6, 0, 1, 0, 0, 0, 0, 0, 24]);
        p.extend_from_slice(&[0xC0, 0x0C, 0xC0, 0x0C]);
        p.extend_from_slice(&2024u32.to_be_bytes());
        p.extend_from_slice(&[0; 16]);
        let q = parse_query(&p).unwrap();
        assert_eq!(q.qtype, RType::IXFR);
        assert_eq!(q.ixfr_serial, Some(2024));
        // A plain query has none.
        let q = parse_query(&query(b"\x00", 1, &[], 0)).unwrap();
        assert_eq!(q.ixfr_serial, None);
    }

    #[test]
    fn responses_and_runts_are_dropped() {
        assert_eq!(parse_query(&[0; 5]).unwrap_err(), QueryError::Drop);
        let mut p = query(b"\x00", 1, &[], 0);
        p[2] |= 0x80;
        assert_eq!(parse_query(&p).unwrap_err(), QueryError::Drop);
    }

    #[test]
    fn compressed_names_in_records_are_followed() {
        // Question www.example.com, then an answer record whose owner points at it.
        let mut p = query(b"\x03www\x07example\x03com\x00", 1, &[], 0);
        p[7] = 1; // ANCOUNT = 1
        p.extend_from_slice(&[0xC0, 0x0C, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 1, 2, 3, 4]);
        let (name, end) = read_name(&p, p.len() - 16).unwrap();
        assert_eq!(name.to_string(), "www.example.com.");
        assert_eq!(end, p.len() - 14);
        assert!(parse_query(&p).is_ok());
    }
}
