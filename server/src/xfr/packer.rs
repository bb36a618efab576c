//! A transfer's messages, filled one record at a time.
//!
//! ```text
//!  push(record) ─► fits the message being filled? ── yes ──► None
//!     no ─► that message finished (returned, to send) and a new one of
//!        MESSAGE_SIZE started with the record; a record too large for it
//!        ─► a message of MAX_MESSAGE_SIZE; too large for that ─► Oversized
//!  finish ─► QR, AA, RD as asked, NOERROR, OPT when the request had one
//! ```

use super::transfer::TransferError;
use crate::wire::{flags, MessageWriter, Query, Rcode, Section};
use dns::{Name, RType};

/// Size a transfer's messages are filled to.
const MESSAGE_SIZE: usize = 16 * 1024;

/// Largest message of a transfer, for a record that does not fit in
/// [`MESSAGE_SIZE`]: the TCP length field's 65535 less room for a TSIG.
pub(super) const MAX_MESSAGE_SIZE: usize = 65535 - 512;

/// The message being filled, one record at a time.
pub(super) struct Packer<'a> {
    packet: &'a [u8],
    query: &'a Query,
    max_udp: u16,
    current: Option<MessageWriter>,
}

impl<'a> Packer<'a> {
    pub(super) fn new(packet: &'a [u8], query: &'a Query, max_udp: u16) -> Self {
        Packer {
            packet,
            query,
            max_udp,
            current: None,
        }
    }

    fn writer(&self, size: usize) -> MessageWriter {
        MessageWriter::new(
            &self.packet[self.query.question.clone()],
            &self.query.qname,
            size,
            self.query.edns.is_some(),
        )
    }

    /// Adds a record; returns the previous message when it was full.
    pub(super) fn push(
        &mut self,
        owner: &Name,
        rtype: RType,
        ttl: u32,
        rd: &[u8],
    ) -> Result<Option<Vec<u8>>, TransferError> {
        let rdata = [Box::<[u8]>::from(rd)];
        if let Some(w) = self.current.as_mut() {
            if w.push_records(Section::Answer, owner, rtype, ttl, &rdata)
                .is_ok()
            {
                return Ok(None);
            }
        }
        let full = self.finish();
        // A record too large for a usual message goes in one of the largest
        // size; one larger than that cannot be sent, and the transfer fails
        // rather than leave it out.
        for size in [MESSAGE_SIZE, MAX_MESSAGE_SIZE] {
            let mut w = self.writer(size);
            if w.push_records(Section::Answer, owner, rtype, ttl, &rdata)
                .is_ok()
            {
                self.current = Some(w);
                return Ok(full);
            }
        }
        Err(TransferError::Oversized {
            owner: owner.clone(),
            rtype,
        })
    }

    /// The message being filled, finished (`None` if empty).
    pub(super) fn finish(&mut self) -> Option<Vec<u8>> {
        let w = self.current.take()?;
        Some(finish(w, self.query, self.max_udp))
    }
}

/// A transfer message completed: QR, AA, RD as asked, NOERROR, OPT when
/// the request had one.
pub(super) fn finish(w: MessageWriter, query: &Query, max_udp: u16) -> Vec<u8> {
    // RD is copied into the response (RFC 1035 §4.1.1).
    let rd = if query.rd { flags::RD } else { 0 };
    let f = flags::QR | flags::AA | rd;
    let edns = query.edns.map(crate::edns::reply_edns);
    w.finish(query.id, f, Rcode::NOERROR, edns, max_udp)
}
