//! IXFR over UDP (RFC 1995 §2): the journal's changes in one datagram when
//! they fit, else our SOA alone, which tells the client to ask over TCP.
//!
//! ```text
//!  (TSIG and the access list: admit.rs; only admitted clients get here)
//!  qname the apex of a served zone? (one zone read) ── no ──► NOTAUTH
//!  apex SOA (transfer::zone_and_soa) ── none ──► SERVFAIL
//!  the client's serial (its authority SOA) absent, or not older than ours
//!     ──► our SOA alone
//!  Reach::SoaAlone (unsigned: its source address is not proven) ──► our
//!     SOA alone (ixfr_udp_to_tcp), no journal read
//!  Backend::journal_chain from their serial ── none ──► our SOA alone
//!     (ixfr_udp_to_tcp)
//!  our SOA, per change: old SOA, removed, new SOA, added; our SOA
//!  (journal::entry_records, as the journal's entries are streamed: a
//!  batch at a time), every record within the client's size (EDNS
//!  or 512, less room for a TSIG):
//!     all fit ──► that one message (ixfr_udp, ixfr_incremental)
//!     one does not ──► our SOA alone (ixfr_udp_to_tcp): never a partial diff
//!  then NSID / EXPIRE as asked (edns/options.rs)
//! ```

use super::journal::entry_records;
use super::packer::finish;
use super::transfer::{self, FirstOptions};
use crate::backend::Backend;
use crate::backend::StoreError;
use crate::guard::{bump, GUARD};
use crate::pipeline::render;
use crate::wire::{flags, MessageWriter, Query, Rcode, Section};
use backend_mongo::writer::JournalStream;
use dns::serial::{serial_gt, soa_serial};
use dns::{Name, RRset, RType, ZoneInfo};
use futures::StreamExt;

/// Where a UDP reply must fit: `limit` bytes (the client's size, less
/// room for a TSIG), with `max_udp` advertised in its OPT.
#[derive(Clone, Copy, Debug)]
pub(super) struct Room {
    /// Largest reply, in bytes.
    pub(super) limit: usize,
    /// The server's UDP size, for the OPT.
    pub(super) max_udp: u16,
}

/// What a reply may be built from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Reach {
    /// Our SOA alone, whatever the client's serial: no journal read.
    SoaAlone,
    /// The journal's changes, when they fit.
    Journal,
}

/// How far behind the client is.
enum Behind {
    /// Up to date, or it sent no serial: our SOA says all there is.
    Current,
    /// These changes take it to our serial.
    Changes(JournalStream),
    /// The journal does not reach its serial.
    Unreached,
}

/// Answers an IXFR that came over UDP from an admitted client: the changes
/// since its serial in one message when `reach` allows them and they fit
/// in `room`, else our SOA alone; NOTAUTH for a name that is not the apex
/// of a zone.
pub(super) async fn ixfr_over_udp<B: Backend>(
    backend: &B,
    packet: &[u8],
    query: &Query,
    room: Room,
    first: &FirstOptions,
    reach: Reach,
) -> Result<Vec<u8>, StoreError> {
    let Some((zone, soa)) = transfer::zone_and_soa(backend, query).await? else {
        return Ok(render::rcode_only(
            packet,
            query,
            Rcode::NOTAUTH,
            room.max_udp,
        ));
    };
    let Some(soa) = soa else {
        return Ok(render::rcode_only(
            packet,
            query,
            Rcode::SERVFAIL,
            room.max_udp,
        ));
    };
    let out = Out {
        packet,
        query,
        room,
    };
    let mut reply = match behind(backend, &zone, &soa, query, reach).await? {
        Behind::Current => out.soa_alone(&zone.apex, &soa),
        Behind::Changes(chain) => match out.changes(&zone.apex, &soa, chain).await? {
            Some((reply, changes)) => {
                bump(&GUARD.ixfr_udp);
                bump(&GUARD.ixfr_incremental);
                tracing::debug!(zone = %zone.apex, changes, bytes = reply.len(), "incremental zone transfer over UDP");
                reply
            }
            None => out.use_tcp(&zone.apex, &soa),
        },
        Behind::Unreached => out.use_tcp(&zone.apex, &soa),
    };
    let expire = crate::edns::options::soa_expire(&soa.rdata[0]);
    let offer = crate::edns::Offer {
        nsid: first.nsid.as_deref(),
        expire,
    };
    crate::edns::decorate(&mut reply, first.asked, offer, room.limit);
    Ok(reply)
}

/// How far the client's serial is behind ours, read from the journal
/// when `reach` allows it.
async fn behind<B: Backend>(
    backend: &B,
    zone: &ZoneInfo,
    soa: &RRset,
    query: &Query,
    reach: Reach,
) -> Result<Behind, StoreError> {
    let (Some(theirs), Some(ours)) = (query.ixfr_serial, soa_serial(&soa.rdata[0])) else {
        return Ok(Behind::Current);
    };
    if !serial_gt(ours, theirs) {
        return Ok(Behind::Current);
    }
    if reach == Reach::SoaAlone {
        return Ok(Behind::Unreached);
    }
    Ok(match backend.journal_chain(zone, theirs).await? {
        Some(chain) => Behind::Changes(chain),
        None => Behind::Unreached,
    })
}

/// The reply being written: to `query` (in `packet`), within `room`.
struct Out<'a> {
    packet: &'a [u8],
    query: &'a Query,
    room: Room,
}

impl Out<'_> {
    fn writer(&self) -> MessageWriter {
        let question = &self.packet[self.query.question.clone()];
        let edns = self.query.edns.is_some();
        MessageWriter::new(question, &self.query.qname, self.room.limit, edns)
    }

    /// Our SOA, then `chain`'s records as its entries come, then our SOA,
    /// with the number of changes, if all fit; `None` at the first record
    /// that does not (the rest of the chain is never read).
    async fn changes(
        &self,
        apex: &Name,
        soa: &RRset,
        mut chain: JournalStream,
    ) -> Result<Option<(Vec<u8>, usize)>, StoreError> {
        let mut w = self.writer();
        let ours = std::slice::from_ref(&soa.rdata[0]);
        let mut changes = 0;
        let fits = |w: &mut MessageWriter, owner: &Name, rtype, ttl, rdata: &[Box<[u8]>]| {
            w.push_records(Section::Answer, owner, rtype, ttl, rdata)
                .is_ok()
        };
        if !fits(&mut w, apex, RType::SOA, soa.ttl, ours) {
            return Ok(None);
        }
        while let Some(entry) = chain.next().await {
            let entry = entry?;
            for r in entry_records(&entry) {
                if !fits(
                    &mut w,
                    &r.owner,
                    r.rtype,
                    r.ttl,
                    std::slice::from_ref(&r.rdata),
                ) {
                    return Ok(None);
                }
            }
            changes += 1;
        }
        if !fits(&mut w, apex, RType::SOA, soa.ttl, ours) {
            return Ok(None);
        }
        Ok(Some((finish(w, self.query, self.room.max_udp), changes)))
    }

    /// Our SOA alone, where the client expected changes: it asks over TCP.
    fn use_tcp(&self, apex: &Name, soa: &RRset) -> Vec<u8> {
        bump(&GUARD.ixfr_udp_to_tcp);
        self.soa_alone(apex, soa)
    }

    /// Our SOA alone; the question with TC if even that does not fit.
    fn soa_alone(&self, apex: &Name, soa: &RRset) -> Vec<u8> {
        let mut w = self.writer();
        let ours = std::slice::from_ref(&soa.rdata[0]);
        if w.push_records(Section::Answer, apex, RType::SOA, soa.ttl, ours)
            .is_ok()
        {
            return finish(w, self.query, self.room.max_udp);
        }
        let mut reply = finish(self.writer(), self.query, self.room.max_udp);
        let f = u16::from_be_bytes([reply[2], reply[3]]) | flags::TC;
        reply[2..4].copy_from_slice(&f.to_be_bytes());
        reply
    }
}
