//! The NOTIFY message (RFC 1996 §3) and what its reply says.
//!
//! ```text
//!  notify_message(id, apex, soa) ─► header: opcode NOTIFY (4), AA, QDCOUNT 1
//!     question: apex SOA IN; answer: the new SOA when it is known
//!     (§3.7: a hint; secondaries still ask the primary)
//!  judge_reply(bytes, id) ─► Acknowledged (QR, opcode 4, same ID, NOERROR)
//!                          │ Rejected(rcode) (QR, opcode 4, same ID)
//!                          │ NotOurs (anything else: keep waiting)
//! ```

use dns::Name;

/// The NOTIFY opcode.
pub const OPCODE_NOTIFY: u8 = 4;
const TYPE_SOA: u16 = 6;
const CLASS_IN: u16 = 1;
/// Header flags: opcode NOTIFY and AA.
const FLAGS: u16 = ((OPCODE_NOTIFY as u16) << 11) | crate::wire::flags::AA;

/// The zone's SOA for the answer section: its TTL and rdata (uncompressed).
#[derive(Clone, Debug)]
pub struct SoaHint {
    /// The SOA's TTL.
    pub ttl: u32,
    /// Its rdata in wire form.
    pub rdata: Vec<u8>,
}

/// A NOTIFY for `apex` with message ID `id`, the SOA in the answer
/// section when `soa` is given.
pub fn notify_message(id: u16, apex: &Name, soa: Option<&SoaHint>) -> Vec<u8> {
    let mut m = Vec::with_capacity(64);
    m.extend_from_slice(&id.to_be_bytes());
    m.extend_from_slice(&FLAGS.to_be_bytes());
    let ancount = u16::from(soa.is_some());
    for count in [1, ancount, 0, 0] {
        m.extend_from_slice(&count.to_be_bytes());
    }
    m.extend_from_slice(apex.as_wire());
    m.extend_from_slice(&TYPE_SOA.to_be_bytes());
    m.extend_from_slice(&CLASS_IN.to_be_bytes());
    if let Some(soa) = soa {
        m.extend_from_slice(&[0xC0, 12]); // the question's name
        m.extend_from_slice(&TYPE_SOA.to_be_bytes());
        m.extend_from_slice(&CLASS_IN.to_be_bytes());
        m.extend_from_slice(&soa.ttl.to_be_bytes());
        m.extend_from_slice(&(soa.rdata.len() as u16).to_be_bytes());
        m.extend_from_slice(&soa.rdata);
    }
    m
}

/// What a datagram received after a NOTIFY says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Judged {
    /// The secondary took it.
    Acknowledged,
    /// The secondary answered with this error rcode (NOTAUTH, REFUSED, …).
    Rejected(u8),
    /// Not a reply to our NOTIFY.
    NotOurs,
}

/// Judges `reply` as a reply to the NOTIFY with ID `id`.
pub fn judge_reply(reply: &[u8], id: u16) -> Judged {
    if reply.len() < crate::wire::HEADER_LEN || reply[0..2] != id.to_be_bytes() {
        return Judged::NotOurs;
    }
    let qr = reply[2] & 0x80 != 0;
    let opcode = (reply[2] >> 3) & 0x0F;
    if !qr || opcode != OPCODE_NOTIFY {
        return Judged::NotOurs;
    }
    match reply[3] & 0x0F {
        0 => Judged::Acknowledged,
        rcode => Judged::Rejected(rcode),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notify_is_laid_out_as_rfc_1996_says() {
        let apex: Name = "example.com.".parse().unwrap();
        let m = notify_message(0xBEEF, &apex, None);
        assert_eq!(&m[0..4], &[0xBE, 0xEF, 0x24, 0x00]); // opcode 4, AA
        assert_eq!(&m[4..12], &[0, 1, 0, 0, 0, 0, 0, 0]);
        assert_eq!(&m[12..25], b"\x07example\x03com\x00");
        assert_eq!(&m[25..], &[0, 6, 0, 1]);
        let soa = SoaHint {
            ttl: 3600,
            rdata: vec![1, 2, 3],
        };
        let m = notify_message(1, &apex, Some(&soa));
        assert_eq!(&m[6..8], &[0, 1]);
        assert_eq!(
            &m[29..],
            &[0xC0, 12, 0, 6, 0, 1, 0, 0, 0x0E, 0x10, 0, 3, 1, 2, 3]
        );
    }

    #[test]
    fn only_a_matching_reply_counts() {
        let apex: Name = "example.com.".parse().unwrap();
        let mut reply = notify_message(7, &apex, None);
        assert_eq!(judge_reply(&reply, 7), Judged::NotOurs); // not a response
        reply[2] |= 0x80;
        assert_eq!(judge_reply(&reply, 7), Judged::Acknowledged);
        assert_eq!(judge_reply(&reply, 8), Judged::NotOurs);
        reply[3] |= 9; // NOTAUTH
        assert_eq!(judge_reply(&reply, 7), Judged::Rejected(9));
        let mut query_reply = reply.clone();
        query_reply[2] = 0x80; // opcode QUERY
        assert_eq!(judge_reply(&query_reply, 7), Judged::NotOurs);
        assert_eq!(judge_reply(&reply[..5], 7), Judged::NotOurs);
    }
}
