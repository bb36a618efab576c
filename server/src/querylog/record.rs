//! The record codec: what the answer path writes to a ring for one query
//! (about 40 bytes), and how the writer reads it back in place.
//!
//! ```text
//!  answer path: encode(query, reply, client, time) ─► whole 64-bit words ─► Ring
//!  writer:      Ring words ─► whole_records (how many are complete) ─► decode ─► Record
//!               (a record cut by the ring's end: record_len says how much to join)
//! ```

use std::net::{IpAddr, SocketAddr};

/// Longest fixed part of a record: time, bits, reply flags and size, port,
/// name length, an IPv6 address, qtype and qclass.
const MAX_HEAD: usize = 16 + 16 + 4;
/// Longest record: the fixed part and a 255-byte name, in whole words.
pub(super) const MAX_RECORD: usize = (MAX_HEAD + 255).div_ceil(8) * 8;

// Record bits (byte 8).
pub(super) const TCP: u8 = 1;
const V6: u8 = 2;
pub(super) const REPLIED: u8 = 4;
pub(super) const EDNS: u8 = 8;
pub(super) const DNSSEC_OK: u8 = 16;
pub(super) const RD: u8 = 32;
pub(super) const QUESTION: u8 = 64;

/// Encodes one record into `h`: the fixed part, then the question name's
/// wire bytes, padded to whole words. Returns its length (a multiple of 8).
/// Every byte up to the name is written (`h` is reused, not cleared); the padding
/// after it is left as it was.
///
/// ```text
/// 0..8 time µs (LE) │ 8 bits │ 9..11 reply flags │ 11..13 reply size (LE) │ 13..15 port (LE)
/// 15 name length │ 16.. address (4 or 16) │ qtype, qclass (wire order; if QUESTION) │ name │ padding
/// ```
#[inline]
pub(super) fn encode(
    h: &mut [u8; MAX_RECORD],
    query: &[u8],
    reply: Option<&[u8]>,
    peer: SocketAddr,
    tcp: bool,
    unix_us: u64,
) -> usize {
    h[0..8].copy_from_slice(&unix_us.to_le_bytes());
    let mut bits = 0;
    if tcp {
        bits |= TCP;
    }
    if query.len() > 2 && query[2] & 0x01 != 0 {
        bits |= RD;
    }
    h[9..13].fill(0);
    if let Some(r) = reply {
        bits |= REPLIED;
        if r.len() >= 4 {
            h[9] = r[2];
            h[10] = r[3];
        }
        let size = r.len().min(usize::from(u16::MAX)) as u16;
        h[11..13].copy_from_slice(&size.to_le_bytes());
    }
    h[13..15].copy_from_slice(&peer.port().to_le_bytes());
    h[15] = 0;
    let mut at = match peer.ip() {
        IpAddr::V4(a) => {
            h[16..20].copy_from_slice(&a.octets());
            20
        }
        IpAddr::V6(a) => {
            bits |= V6;
            h[16..32].copy_from_slice(&a.octets());
            32
        }
    };
    let end = question_name_end(query).filter(|&e| e + 4 <= query.len() && e - 12 <= 255);
    if let Some(end) = end {
        bits |= QUESTION;
        h[at..at + 4].copy_from_slice(&query[end..end + 4]);
        at += 4;
        let name = &query[12..end];
        h[15] = name.len() as u8;
        h[at..at + name.len()].copy_from_slice(name);
        at += name.len();
        // An OPT record right after the question (the common shape: no
        // answer or authority records in a query).
        let o = end + 4;
        let counts_plain = query[6..10] == [0, 0, 0, 0] && query[10..12] != [0, 0];
        let opt = counts_plain
            .then(|| crate::edns::OptHeader::at(query, o))
            .flatten();
        if let Some(opt) = opt {
            bits |= EDNS;
            if opt.dnssec_ok {
                bits |= DNSSEC_OK;
            }
        }
    }
    h[8] = bits;
    at.div_ceil(8) * 8
}

/// One record, decoded by the writer.
pub(super) struct Record<'a> {
    pub(super) unix_us: u64,
    pub(super) bits: u8,
    pub(super) reply_flags: [u8; 2],
    pub(super) size: u16,
    pub(super) port: u16,
    pub(super) addr: IpAddr,
    pub(super) qtype: u16,
    pub(super) qclass: u16,
    /// The question name's wire bytes, root label included.
    pub(super) name: &'a [u8],
}

/// Decodes the record at the start of `bytes`; returns it and its length
/// in whole words (its padding included).
pub(super) fn decode(bytes: &[u8]) -> (Record<'_>, usize) {
    let u16_le = |at: usize| u16::from_le_bytes([bytes[at], bytes[at + 1]]);
    let mut time = [0u8; 8];
    time.copy_from_slice(&bytes[0..8]);
    let bits = bytes[8];
    let (addr, mut at) = if bits & V6 != 0 {
        let mut o = [0u8; 16];
        o.copy_from_slice(&bytes[16..32]);
        (IpAddr::from(o), 32)
    } else {
        (
            IpAddr::from([bytes[16], bytes[17], bytes[18], bytes[19]]),
            20,
        )
    };
    let (mut qtype, mut qclass, mut name) = (0, 0, &bytes[0..0]);
    if bits & QUESTION != 0 {
        qtype = u16::from_be_bytes([bytes[at], bytes[at + 1]]);
        qclass = u16::from_be_bytes([bytes[at + 2], bytes[at + 3]]);
        at += 4;
        let len = usize::from(bytes[15]);
        name = &bytes[at..at + len];
        at += len;
    }
    let record = Record {
        unix_us: u64::from_le_bytes(time),
        bits,
        reply_flags: [bytes[9], bytes[10]],
        size: u16_le(11),
        port: u16_le(13),
        addr,
        qtype,
        qclass,
        name,
    };
    (record, at.div_ceil(8) * 8)
}

/// The length of the record at the start of `bytes` (its first 16 bytes
/// at least), in whole words.
pub(super) fn record_len(bytes: &[u8]) -> usize {
    let bits = bytes[8];
    let mut len = if bits & V6 != 0 { 32 } else { 20 };
    if bits & QUESTION != 0 {
        len += 4 + usize::from(bytes[15]);
    }
    len.div_ceil(8) * 8
}

/// How many bytes at the start of `bytes` are whole records.
pub(super) fn whole_records(bytes: &[u8]) -> usize {
    let mut at = 0;
    while bytes.len() - at >= 16 {
        let len = record_len(&bytes[at..]);
        if at + len > bytes.len() {
            break;
        }
        at += len;
    }
    at
}

/// The end of the question name (offset after its root label), if well formed.
pub fn question_name_end(query: &[u8]) -> Option<usize> {
    crate::wire::walk::plain_name_end(query, crate::wire::HEADER_LEN)
}
