//! One-step answers: a plain question to a resident zone, answered from
//! the zone's bytes before the packet cache, with no stage in between.
//!
//! ```text
//!  answer_direct(packet): only when the backend answers_plain (residency on)
//!    header: QR 0, opcode QUERY, one question, nothing else but an OPT
//!    parse_query ─► plain question? (class IN; DO 0; not a type the other
//!       stages add to: NS, MX, SRV (additional), SOA (EXPIRE), ANY, RRSIG,
//!       DS, transfers, meta types)
//!    ─► the zone the registry knows (known_zone), as it serves it now
//!    ─► Backend::plain_answer: the RRset (the name's or its wildcard's),
//!       or NODATA or NXDOMAIN with the apex SOA (resident/plain.rs), else
//!       nothing ─► false: the usual path
//!    ─► written as render.rs writes it: question echoed, AA, the answer
//!       RRset or the SOA with its negative TTL, the rcode, OPT, NSID if
//!       asked
//!       (does not fit ─► false: the usual path sets TC)
//! ```
//!
//! Why before the packet cache, and never into it: these answers cost
//! about what a cache hit costs (one index lookup, one RRset copied), so a
//! resident zone answers every plain name at that speed from its first
//! query, and the cache keeps its room for the answers that took work.
//! They are exactly the general stages' answers to the same questions:
//! `server/tests/resident/` compares them byte for byte.

use super::answer::negative_ttl;
use super::render::{header_flags, size_limit};
use super::{Responder, Transport};
use crate::backend::{Backend, PlainAnswer, RecordsView};
use crate::edns::{self, reply_edns};
use crate::wire::writer::NotWritten;
use crate::wire::{parse_query, MessageWriter, Query, Rcode, Section, CLASS_IN};
use dns::{Name, RType};

impl<B: Backend> Responder<B> {
    /// Answers `packet` in one step from a resident zone when its question
    /// is plain, writing the reply into `out`; false when the usual path
    /// must answer it.
    pub(super) fn answer_direct(
        &self,
        packet: &[u8],
        transport: Transport,
        out: &mut Vec<u8>,
    ) -> bool {
        // Residency off (the default): no parse, straight to the cache.
        if !self.backend.answers_plain() || !plain_header(packet) {
            return false;
        }
        let Ok(query) = parse_query(packet) else {
            return false;
        };
        if !is_plain(&query, packet) {
            return false;
        }
        let Some(Some(zone)) = self.backend.known_zone(&query.qname) else {
            return false;
        };
        let max_udp = self.config.max_udp_size;
        let limit = size_limit(&query, transport, max_udp);
        // The reply goes into `out`'s allocation (the receive loop's reply
        // buffer, reused query after query).
        let write = |plain: PlainAnswer<'_>| {
            let buf = std::mem::take(&mut *out);
            write_plain(buf, packet, &query, &zone.apex, plain, limit, max_udp)
        };
        let plain = self
            .backend
            .plain_answer(&zone, &query.qname, query.qtype, write);
        let Some(Some(reply)) = plain else {
            return false;
        };
        *out = reply;
        let nsid = self.config.nsid.as_deref();
        edns::decorate(
            out,
            query.asked(),
            edns::Offer { nsid, expire: None },
            limit,
        );
        true
    }
}

/// A query's header as a plain question has it: QR 0, opcode QUERY, one
/// question, no answer or authority records, at most one additional (its
/// OPT, checked once parsed).
fn plain_header(p: &[u8]) -> bool {
    p.len() >= 12 && p[2] & 0xF8 == 0 && p[4..10] == [0, 1, 0, 0, 0, 0] && p[10] == 0 && p[11] <= 1
}

/// True when nothing but the answer stage, reading one name, answers
/// `query`: class IN, no DNSSEC records asked for, its additional record
/// (if any) its OPT, and a type no later stage adds to.
fn is_plain(query: &Query, packet: &[u8]) -> bool {
    let opt_only = packet[11] == 0 || query.edns.is_some();
    let dnssec = query.edns.is_some_and(|e| e.dnssec_ok);
    query.qclass == CLASS_IN && opt_only && !dnssec && plain_type(query.qtype)
}

/// Types answered by their RRset alone: not those whose targets get
/// addresses in the additional section (NS, MX, SRV: the type's
/// descriptor says), the SOA (EDNS EXPIRE at an apex), ANY, RRSIG and DS
/// (the answer stage's own rules), and no transfer or meta type.
fn plain_type(qtype: RType) -> bool {
    qtype.info().is_none_or(|t| t.additional.is_none())
        && !matches!(
            qtype,
            RType::SOA
                | RType::ANY
                | RType::RRSIG
                | RType::DS
                | RType::AXFR
                | RType::IXFR
                | RType::OPT
        )
        && !(128..=255).contains(&qtype.0)
}

/// Writes the reply for `plain` as render.rs would, into `buf`: `None`
/// when it does not fit in `limit` or the stored data is malformed (the
/// usual path answers those).
fn write_plain(
    buf: Vec<u8>,
    packet: &[u8],
    query: &Query,
    apex: &Name,
    plain: PlainAnswer<'_>,
    limit: usize,
    max_udp: u16,
) -> Option<Vec<u8>> {
    let mut w = MessageWriter::new_in(
        buf,
        &packet[query.question.clone()],
        &query.qname,
        limit,
        query.edns.is_some(),
    );
    let (written, rcode) = match plain {
        PlainAnswer::Records(set) => {
            let (owner, ttl) = (&query.qname, set.ttl);
            let written = w.push_records(Section::Answer, owner, set.rtype, ttl, set.rdata());
            (written, Rcode::NOERROR)
        }
        PlainAnswer::NoData(soa) => (negative(&mut w, apex, soa), Rcode::NOERROR),
        PlainAnswer::NxDomain(soa) => (negative(&mut w, apex, soa), Rcode::NXDOMAIN),
    };
    written.ok()?;
    Some(w.finish(
        query.id,
        header_flags(packet, true),
        rcode,
        query.edns.map(reply_edns),
        max_udp,
    ))
}

/// Writes the zone's SOA into the authority section with its negative
/// TTL, as solve_authority places it for NODATA and NXDOMAIN.
fn negative(w: &mut MessageWriter, apex: &Name, soa: RecordsView<'_>) -> Result<(), NotWritten> {
    let ttl = negative_ttl(soa.ttl, soa.rdata().next());
    w.push_records(Section::Authority, apex, RType::SOA, ttl, soa.rdata())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_with_more_to_add_are_not_plain() {
        for t in [
            RType::A,
            RType::AAAA,
            RType::TXT,
            RType::CNAME,
            RType::PTR,
            RType(65),
        ] {
            assert!(plain_type(t), "{t}");
        }
        for t in [
            RType::NS,
            RType::MX,
            RType::SRV,
            RType::SOA,
            RType::ANY,
            RType::RRSIG,
            RType::DS,
            RType::AXFR,
            RType::IXFR,
            RType::OPT,
            RType(250),
        ] {
            assert!(!plain_type(t), "{t}");
        }
    }

    #[test]
    fn only_a_lone_query_header_is_plain() {
        let mut h = [0u8; 12];
        h[5] = 1;
        assert!(plain_header(&h));
        h[11] = 1;
        assert!(plain_header(&h), "an OPT may follow");
        for (at, v) in [(2, 0x80), (2, 0x28), (5, 2), (7, 1), (9, 1), (11, 2)] {
            let mut bad = h;
            bad[at] = v;
            assert!(!plain_header(&bad), "byte {at} = {v:#x}");
        }
    }
}
