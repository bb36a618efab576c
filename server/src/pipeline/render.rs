//! Writing an [`Answer`] as a reply that fits.
//!
//! ```text
//!  answer RRsets  ─ one does not fit ─► TC, stop
//!  authority      ─ one does not fit ─► TC, the whole section dropped
//!                   (as Knot and NSD: no partial denial proof)
//!  additional     ─ one does not fit ─► skip it and its RRSIGs (no TC)
//!  any RRset whose stored data is malformed ─► Err(Malformed) (SERVFAIL)
//!  header: QR, AA, RD and CD copied, rcode (extended part in OPT)
//!  OPT: crate::edns (written by MessageWriter::finish; options added
//!  afterwards by edns::decorate and edns::add_ede); sign_reply (TSIG)
//! ```

use super::answer::{Answer, Placed};
use super::Transport;
use crate::edns::reply_edns;
use crate::wire::writer::{Mark, NotWritten};
use crate::wire::{flags, MessageWriter, Query, QueryError, Rcode, Section};
use dns::RType;

/// The reply size limit for `query` arriving over `transport`.
pub fn size_limit(query: &Query, transport: Transport, max_udp: u16) -> usize {
    match transport {
        Transport::Tcp => 65535,
        Transport::Udp => match query.edns {
            Some(e) => usize::from(e.udp_size.clamp(512, max_udp.max(512))),
            None => 512,
        },
    }
}

/// The reply's header flags: QR, AA when `aa`, RD, CD and the opcode
/// copied from the query `packet`.
pub(super) fn header_flags(packet: &[u8], aa: bool) -> u16 {
    let asked = u16::from_be_bytes([packet[2], packet[3]]);
    let mut f = flags::QR | (asked & (flags::RD | flags::CD | 0x7800));
    if aa {
        f |= flags::AA;
    }
    f
}

/// An RRset of the answer could not be written: its stored data is not
/// well-formed (the pipeline answers SERVFAIL).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed {
    /// The owner of the RRset.
    pub owner: dns::Name,
    /// Its type.
    pub rtype: RType,
}

impl std::fmt::Display for Malformed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "malformed stored {} record at {}",
            self.rtype, self.owner
        )
    }
}

/// Pushes `placed`: `Ok(false)` when it does not fit.
fn push(w: &mut MessageWriter, section: Section, placed: &Placed) -> Result<bool, Malformed> {
    match w.push_rrset(section, &placed.owner, &placed.rrset) {
        Ok(()) => Ok(true),
        Err(NotWritten::Full) => Ok(false),
        Err(NotWritten::Malformed) => Err(Malformed {
            owner: placed.owner.clone(),
            rtype: placed.rrset.rtype,
        }),
    }
}

/// Writes the full reply for `answer`.
pub fn render(
    packet: &[u8],
    query: &Query,
    answer: &Answer,
    limit: usize,
    max_udp: u16,
) -> Result<Vec<u8>, Malformed> {
    let mut w = MessageWriter::new(
        &packet[query.question.clone()],
        &query.qname,
        limit,
        query.edns.is_some(),
    );
    let mut truncated = false;
    'sections: for (section, list) in [
        (Section::Answer, &answer.answer),
        (Section::Authority, &answer.authority),
    ] {
        let start = w.mark();
        for placed in list {
            if !push(&mut w, section, placed)? {
                truncated = true;
                if section == Section::Authority {
                    // Half a proof is no proof: send none, TC asks for TCP.
                    w.rollback(start);
                }
                break 'sections;
            }
        }
    }
    if !truncated {
        // Additional data is optional: leave out what does not fit, an RRset
        // together with the RRSIGs that follow it (dnssec::sign_additional
        // puts them right after it).
        let mut covered: Option<(Mark, bool)> = None;
        for placed in &answer.additional {
            if placed.rrset.rtype == RType::RRSIG {
                if let Some((mark, true)) = covered {
                    if !push(&mut w, Section::Additional, placed)? {
                        w.rollback(mark);
                        covered = Some((mark, false));
                    }
                }
                continue;
            }
            let mark = w.mark();
            let fits = push(&mut w, Section::Additional, placed)?;
            covered = Some((mark, fits));
        }
    }
    let mut f = header_flags(packet, answer.authoritative);
    if truncated {
        f |= flags::TC;
    }
    Ok(w.finish(
        query.id,
        f,
        answer.rcode(),
        query.edns.map(reply_edns),
        max_udp,
    ))
}

/// A reply with the question and an rcode only.
pub fn rcode_only(packet: &[u8], query: &Query, rcode: Rcode, max_udp: u16) -> Vec<u8> {
    rcode_with_ede(packet, query, rcode, None, max_udp)
}

/// Signs the `reply` to a TSIG-signed query (`packet` is the query without
/// its TSIG). A reply that would not fit in `limit` with the TSIG record
/// becomes the question alone with TC set, then signed (RFC 8945 §5.3).
pub fn sign_reply(
    mut reply: Vec<u8>,
    packet: &[u8],
    query: &Query,
    signer: &mut crate::tsig::TsigSigner,
    limit: usize,
    max_udp: u16,
) -> Vec<u8> {
    if reply.len() + signer.record_len() > limit {
        reply = rcode_only(packet, query, Rcode::NOERROR, max_udp);
        let f = u16::from_be_bytes([reply[2], reply[3]]) | flags::TC;
        reply[2..4].copy_from_slice(&f.to_be_bytes());
    }
    signer.sign(&mut reply);
    reply
}

/// A reply with the question, an rcode and, when the query had EDNS, an
/// Extended DNS Error (RFC 8914) saying why.
pub fn rcode_with_ede(
    packet: &[u8],
    query: &Query,
    rcode: Rcode,
    ede: Option<u16>,
    max_udp: u16,
) -> Vec<u8> {
    let mut w = MessageWriter::new(
        &packet[query.question.clone()],
        &query.qname,
        65535,
        query.edns.is_some(),
    );
    if let Some(code) = ede {
        w.set_ede(code);
    }
    w.finish(
        query.id,
        header_flags(packet, false),
        rcode,
        query.edns.map(reply_edns),
        max_udp,
    )
}

/// The reply to a query that could not be parsed as a normal query;
/// `None` when it gets none ([`QueryError::Drop`]).
pub fn error_reply(packet: &[u8], error: QueryError, max_udp: u16) -> Option<Vec<u8>> {
    let QueryError::Reply {
        rcode,
        id,
        opcode,
        rd,
        question,
        edns,
    } = error
    else {
        return None;
    };
    let mut f = flags::QR | (u16::from(opcode & 0xF) << 11);
    if rd {
        f |= flags::RD;
    }
    let w = match question.and_then(|q| {
        let (name, _) = crate::wire::read_name(packet, q.start)?;
        Some((q, name))
    }) {
        Some((q, name)) => MessageWriter::new(&packet[q], &name, 65535, edns.is_some()),
        None => MessageWriter::without_question(65535, edns.is_some()),
    };
    Some(w.finish(id, f, rcode, edns.map(reply_edns), max_udp))
}
