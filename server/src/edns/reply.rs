//! A reply's OPT record: written once, at the end of the reply, and
//! options added to it afterwards.
//!
//! ```text
//!  MessageWriter::finish ─► write_opt(buf, our UDP size, rcode, DO, EDE)
//!     owner root │ 41 │ our UDP size │ rcode's upper bits │ version 0 │
//!     DO echoed, other flags clear (RFC 6891 §6.1.4) │ EDE if set
//!  a finished reply ─► add_option(reply, code, data, limit)
//!     (NSID, EXPIRE, EDE added after render: options.rs says which)
//!     no OPT, or past `limit` ─► false, nothing changed
//! ```

use super::options::OPTION_EDE;
use super::request::{Edns, OPT_TYPE};
use crate::wire::Rcode;

/// Length of an OPT record without options.
pub const OPT_LEN: usize = 11;

/// Length of an Extended DNS Error option without extra text.
pub const EDE_LEN: usize = 6;

/// The EDNS of a reply to a query that carried `e`: version 0, DO echoed,
/// nothing asked (RFC 6891 §6.1.4).
pub fn reply_edns(e: Edns) -> Edns {
    Edns {
        udp_size: e.udp_size,
        version: 0,
        dnssec_ok: e.dnssec_ok,
        asked: Default::default(),
    }
}

/// Appends a reply's OPT record to `buf`: `our_udp_size`, the upper bits
/// of `rcode`, version 0, the DO bit of `edns`, and an Extended DNS Error
/// with `ede`'s info-code (RFC 8914, no text) if any.
pub fn write_opt(buf: &mut Vec<u8>, our_udp_size: u16, rcode: Rcode, edns: Edns, ede: Option<u16>) {
    buf.push(0); // root owner
    buf.extend_from_slice(&OPT_TYPE.to_be_bytes());
    buf.extend_from_slice(&our_udp_size.to_be_bytes());
    buf.push((rcode.0 >> 4) as u8);
    buf.push(0); // version 0
    let do_bit: u16 = if edns.dnssec_ok { 0x8000 } else { 0 };
    buf.extend_from_slice(&do_bit.to_be_bytes());
    match ede {
        Some(code) => {
            // RDLENGTH, then OPTION-CODE 15, OPTION-LENGTH 2, INFO-CODE.
            buf.extend_from_slice(&(EDE_LEN as u16).to_be_bytes());
            buf.extend_from_slice(&OPTION_EDE.to_be_bytes());
            buf.extend_from_slice(&2u16.to_be_bytes());
            buf.extend_from_slice(&code.to_be_bytes());
        }
        None => buf.extend_from_slice(&[0, 0]),
    }
}

/// Appends option `code` with `data` to the OPT record of `reply` (the
/// last record of a reply we built); false, and nothing changed, when
/// there is no OPT or the reply would pass `limit`.
pub fn add_option(reply: &mut Vec<u8>, code: u16, data: &[u8], limit: usize) -> bool {
    let grow = 4 + data.len();
    if reply.len() + grow > limit {
        return false;
    }
    let Some(rdlen_at) = opt_rdlength_at(reply) else {
        return false;
    };
    let rdlen = u16::from_be_bytes([reply[rdlen_at], reply[rdlen_at + 1]]);
    let end = rdlen_at + 2 + usize::from(rdlen);
    let mut option = Vec::with_capacity(grow);
    option.extend_from_slice(&code.to_be_bytes());
    option.extend_from_slice(&(data.len() as u16).to_be_bytes());
    option.extend_from_slice(data);
    reply.splice(end..end, option);
    let rdlen = rdlen + grow as u16;
    reply[rdlen_at..rdlen_at + 2].copy_from_slice(&rdlen.to_be_bytes());
    true
}

/// Offset of the RDLENGTH field of the OPT record in `msg`'s additional
/// section, if there is one.
fn opt_rdlength_at(msg: &[u8]) -> Option<usize> {
    use crate::wire::walk::{records, Part};
    let opt = records(msg)
        .ok()?
        .map_while(Result::ok)
        .find(|r| r.part == Part::Additional && r.rtype == OPT_TYPE)?;
    Some(opt.rdlength_at())
}
