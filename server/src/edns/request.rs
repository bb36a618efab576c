//! A query's OPT record (RFC 6891 §6.1), read once into an [`Edns`].
//!
//! ```text
//!  OPT: owner root │ TYPE 41 │ CLASS = UDP size │ TTL = ext rcode, version,
//!       DO and flags │ RDLENGTH │ options (code u16, length u16, data)*
//!  OptHeader::at(msg, at)   the fixed fields at a known offset (no walk)
//!  Edns::parse(header, rdata): options walked once ─► Asked (options.rs)
//!     an option running past the rdata ─► Malformed (FORMERR)
//!  read_opt(msg, record, seen) in parse_query's walk:
//!     not in additional │ a second OPT │ owner not root │ Malformed
//!        ─► Malformed (FORMERR, the reply without OPT)
//!  opt_ending_at(msg, at): the packet cache's shape, an OPT that ends
//!     the message exactly, or nothing
//!  version ≠ 0 ─► BADVERS (Edns::known_version; parse_query decides when)
//! ```

use super::options::Asked;
use crate::wire::walk::{u16_at, Part, RecordAt};

/// The OPT record's type.
pub const OPT_TYPE: u16 = 41;

/// The UDP size a requester may not go below (RFC 6891 §6.2.5).
const MIN_UDP: u16 = 512;

/// EDNS from a query's OPT record (RFC 6891).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Edns {
    /// Requester's UDP payload size (values below 512 count as 512).
    pub udp_size: u16,
    /// EDNS version.
    pub version: u8,
    /// The DO bit (DNSSEC OK).
    pub dnssec_ok: bool,
    /// The options that ask for something in the reply.
    pub asked: Asked,
}

/// The query's OPT record is not one we answer normally: FORMERR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Malformed;

/// An OPT record's fixed fields (before RDLENGTH).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OptHeader {
    /// CLASS: the requester's UDP size, as sent.
    pub udp_size: u16,
    /// TTL: the extended rcode's upper bits.
    pub ext_rcode: u8,
    /// TTL: the EDNS version.
    pub version: u8,
    /// TTL: the DO bit.
    pub dnssec_ok: bool,
}

impl OptHeader {
    /// The fields an OPT record's CLASS and TTL hold.
    #[inline]
    pub fn from_fields(class: u16, ttl: u32) -> OptHeader {
        OptHeader {
            udp_size: class,
            ext_rcode: (ttl >> 24) as u8,
            version: (ttl >> 16) as u8,
            dnssec_ok: ttl & 0x8000 != 0,
        }
    }

    /// The OPT record at `at` in `msg` (owner root, TYPE 41, CLASS, TTL:
    /// 9 bytes, RDLENGTH not read); `None` when the bytes there are not one.
    #[inline]
    pub fn at(msg: &[u8], at: usize) -> Option<OptHeader> {
        let b: &[u8; 9] = msg.get(at..at + 9)?.try_into().ok()?;
        if b[0] != 0 || b[1..3] != OPT_TYPE.to_be_bytes() {
            return None;
        }
        let class = u16::from_be_bytes([b[3], b[4]]);
        Some(Self::from_fields(
            class,
            u32::from_be_bytes([b[5], b[6], b[7], b[8]]),
        ))
    }
}

impl Edns {
    /// The EDNS of an OPT record with `header` and option `rdata`.
    #[inline]
    pub fn parse(header: OptHeader, rdata: &[u8]) -> Result<Edns, Malformed> {
        Ok(Edns {
            udp_size: header.udp_size.max(MIN_UDP),
            version: header.version,
            dnssec_ok: header.dnssec_ok,
            asked: scan_options(rdata)?,
        })
    }

    /// True for the one version there is (0); any other gets BADVERS.
    pub fn known_version(&self) -> bool {
        self.version == 0
    }
}

/// Walks OPT `rdata` once: every option whole (RFC 6891 §6.1.2), those
/// the server knows noted.
#[inline]
fn scan_options(mut rdata: &[u8]) -> Result<Asked, Malformed> {
    let mut asked = Asked::default();
    while !rdata.is_empty() {
        let (Some(code), Some(len)) = (u16_at(rdata, 0), u16_at(rdata, 2)) else {
            return Err(Malformed);
        };
        let end = 4 + usize::from(len);
        let data = rdata.get(4..end).ok_or(Malformed)?;
        asked.note(code, data);
        rdata = &rdata[end..];
    }
    Ok(asked)
}

/// Reads the OPT `record` of the query `msg`, whose EDNS so far is `seen`:
/// Malformed when it stands outside the additional section, is a second
/// one, has an owner other than the root or options that are not whole.
pub fn read_opt(msg: &[u8], record: &RecordAt, seen: Option<Edns>) -> Result<Edns, Malformed> {
    let owner_root = msg[record.start] == 0;
    if record.part != Part::Additional || seen.is_some() || !owner_root {
        return Err(Malformed);
    }
    let header = OptHeader::from_fields(record.class, record.ttl);
    Edns::parse(header, &msg[record.rdata.clone()])
}

/// The OPT record at `at` when it ends `msg` exactly and is well formed
/// (the packet cache's one shape of a query with EDNS); `None` otherwise.
#[inline]
pub fn opt_ending_at(msg: &[u8], at: usize) -> Option<Edns> {
    let header = OptHeader::at(msg, at)?;
    let rdlen = usize::from(u16_at(msg, at + 9)?);
    let rdata = msg.get(at + 11..)?;
    if rdata.len() != rdlen {
        return None;
    }
    Edns::parse(header, rdata).ok()
}
