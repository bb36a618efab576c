//! RDATA and records as presentation text: the inverse of the parser, for
//! the signer's master-file export, its DS and DNSKEY output, and any
//! message or API answer that shows a record.
//!
//! ```text
//!  (type, wire rdata) ─► the type's descriptor (crate::types), well-formed? ─yes─► text
//!        │                       │no        layout.rs: field by field, as the descriptor
//!        │                       │                     lays the rdata out (addresses.rs)
//!        │                       │          loc.rs (RFC 1876), svcb.rs (RFC 9460),
//!        │                       │          apl.rs (RFC 3123), ipseckey.rs (RFC 4025)
//!        │                       └─► RFC 3597: \# <length> <HEX>
//!  record_text: owner <TAB> TTL <TAB> IN <TAB> TYPE <TAB> rdata_text
//!  fields.rs: integers, names, quoted strings, bitmaps, times
//! ```
//!
//! Every text written here reads back through [`super::parse_rdata`] to the
//! same wire bytes (`round_trip.rs` checks each type).

mod addresses;
mod apl;
mod fields;
mod ipseckey;
mod layout;
mod loc;
mod svcb;

use crate::types::Rdata;
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

/// The per-type dispatch, on the type's descriptor; `None` when the type
/// has no text form here or `rd` does not have its layout.
fn known(rtype: RType, rd: &[u8]) -> Option<String> {
    match rtype.info()?.rdata {
        Rdata::Fields(fields) => layout::fields_text(fields, rd),
        Rdata::Loc => loc::loc(rd),
        Rdata::Svcb => svcb::svcb(rtype, rd),
        Rdata::Apl => apl::apl(rd),
        Rdata::Ipseckey => ipseckey::ipseckey(rd),
        Rdata::Opaque => None,
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
