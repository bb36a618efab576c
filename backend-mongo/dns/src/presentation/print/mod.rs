//! RDATA and records as presentation text: the inverse of the parser, for
//! the signer's master-file export, its DS and DNSKEY output, and any
//! message or API answer that shows a record.
//!
//! ```text
//!  (type, wire rdata) ─► known type, well-formed? ─yes─► per-type text
//!        │                       │no        basic.rs: addresses, names, SOA, MX, TXT, SRV,
//!        │                       │                    NAPTR, CAA, URI, TLSA, SSHFP, ...
//!        │                       │          dnssec.rs: DS, DNSKEY, RRSIG, NSEC, NSEC3(PARAM)
//!        │                       │          loc.rs (RFC 1876), svcb.rs (RFC 9460)
//!        │                       └─► RFC 3597: \# <length> <HEX>
//!  record_text: owner <TAB> TTL <TAB> IN <TAB> TYPE <TAB> rdata_text
//!  fields.rs: integers, names, quoted strings, bitmaps, times
//! ```
//!
//! Every text written here reads back through [`super::parse_rdata`] to the
//! same wire bytes (`round_trip.rs` checks each type).

mod basic;
mod dnssec;
mod fields;
mod loc;
mod svcb;

use crate::{Name, RType};

use fields::hex;

/// The presentation form of the rdata `rd` of type `rtype`: the usual one
/// for well-formed rdata of the types the parser knows, the RFC 3597 form
/// `\# <length> <hex>` for everything else.
pub fn rdata_text(rtype: RType, rd: &[u8]) -> String {
    known(rtype, rd).unwrap_or_else(|| generic(rd))
}

/// One record as a master-file line (no newline): owner, TTL, `IN`, the
/// type's mnemonic and [`rdata_text`], separated by tabs.
pub fn record_text(owner: &Name, ttl: u32, rtype: RType, rd: &[u8]) -> String {
    format!(
        "{owner}\t{ttl}\tIN\t{}\t{}",
        rtype.mnemonic(),
        rdata_text(rtype, rd)
    )
}

/// RFC 3597 §5: `\# <length> <hex>`.
fn generic(rd: &[u8]) -> String {
    format!("\\# {} {}", rd.len(), hex(rd))
}

/// The per-type dispatch; `None` when the type has no text form here or
/// `rd` does not have its layout.
fn known(rtype: RType, rd: &[u8]) -> Option<String> {
    match rtype.0 {
        1 => basic::a(rd),
        28 => basic::aaaa(rd),
        // NS, CNAME, PTR, DNAME
        2 | 5 | 12 | 39 => fields::whole_name(rd, 0),
        6 => basic::soa(rd),
        13 => basic::char_strings(rd, Some(2)),
        // MX, AFSDB, KX
        15 | 18 | 36 => basic::number_name(rd),
        // TXT, SPF
        16 | 99 => basic::char_strings(rd, None),
        17 => basic::rp(rd),
        29 => loc::loc(rd),
        33 => basic::srv(rd),
        35 => basic::naptr(rd),
        // DS, CDS
        43 | 59 => fields::numbers_then(rd, &[2, 1, 1], hex),
        44 => fields::numbers_then(rd, &[1, 1], hex),
        46 => dnssec::rrsig(rd),
        47 => dnssec::nsec(rd),
        // DNSKEY, CDNSKEY
        48 | 60 => fields::numbers_then(rd, &[2, 1, 1], crate::encoding::base64),
        // DHCID, OPENPGPKEY
        49 | 61 => fields::numbers_then(rd, &[], crate::encoding::base64),
        50 => dnssec::nsec3(rd),
        51 => dnssec::nsec3param(rd),
        // TLSA, SMIMEA
        52 | 53 => fields::numbers_then(rd, &[1, 1, 1], hex),
        62 => dnssec::csync(rd),
        63 => fields::numbers_then(rd, &[4, 1, 1], hex),
        // SVCB, HTTPS
        64 | 65 => svcb::svcb(rtype, rd),
        108 | 109 => basic::eui(rd, if rtype.0 == 108 { 6 } else { 8 }),
        256 => basic::uri(rd),
        257 => basic::caa(rd),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rdata_presentation() {
        assert_eq!(rdata_text(RType::A, &[192, 0, 2, 1]), "192.0.2.1");
        assert_eq!(rdata_text(RType::MX, b"\x00\x0a\x04Mail\x00"), "10 Mail.");
        assert_eq!(rdata_text(RType::NS, b"\x04a!b.\x00"), "a!b\\..");
        assert_eq!(rdata_text(RType::TXT, b"\x02a\"\x01b"), "\"a\\\"\" \"b\"");
        assert_eq!(rdata_text(RType(65280), &[1, 2]), "\\# 2 0102");
        assert_eq!(rdata_text(RType::A, &[1, 2]), "\\# 2 0102");
        assert_eq!(
            rdata_text(RType(257), b"\x00\x05issueca.example"),
            "0 issue \"ca.example\""
        );
        let owner: Name = "www.example.".parse().unwrap();
        assert_eq!(
            record_text(&owner, 300, RType::A, &[192, 0, 2, 1]),
            "www.example.\t300\tIN\tA\t192.0.2.1"
        );
    }
}
