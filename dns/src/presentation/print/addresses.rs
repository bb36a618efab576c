//! The printers of addresses: A, AAAA, EUI-48/64 and the 64-bit locators
//! of NID and L64.
//!
//! ```text
//!  A 192.0.2.1 · AAAA 2001:db8::1 · EUI48/64 xx-xx-.. · NID/L64 xxxx:xxxx:xxxx:xxxx
//! ```

use std::net::Ipv6Addr;

use crate::encoding::to_hex;

/// A: a dotted quad.
pub(super) fn a(rd: &[u8]) -> Option<String> {
    let [a, b, c, d] = rd.try_into().ok()?;
    Some(format!("{a}.{b}.{c}.{d}"))
}

/// AAAA: RFC 5952 text.
pub(super) fn aaaa(rd: &[u8]) -> Option<String> {
    let octets: [u8; 16] = rd.try_into().ok()?;
    Some(Ipv6Addr::from(octets).to_string())
}

/// EUI48 and EUI64 (RFC 7043): hex pairs joined by `-`.
pub(super) fn eui(rd: &[u8]) -> String {
    let pairs: Vec<String> = rd.iter().map(|b| to_hex(&[*b])).collect();
    pairs.join("-")
}

/// NID and L64 (RFC 6742): four groups of four hex digits joined by `:`.
pub(super) fn locator64(rd: &[u8]) -> String {
    let groups: Vec<String> = rd.chunks(2).map(to_hex).collect();
    groups.join(":")
}
