//! The printers of the plain types: addresses, SOA, names with numbers,
//! character-strings, and the few that mix them (NAPTR, CAA, URI, EUI).
//!
//! ```text
//!  A 192.0.2.1 · AAAA 2001:db8::1 · SOA mname rname serial refresh retry expire minimum
//!  MX/AFSDB/KX n name · SRV p w port name · RP mbox txt · NAPTR o p "f" "s" "r" name
//!  TXT/SPF/HINFO "..." ... · CAA flags tag "value" · URI p w "target" · EUI48/64 xx-xx-..
//! ```

use std::net::Ipv6Addr;

use crate::encoding::to_hex;

use super::fields::{char_string, name_at, quoted, u16_at, u32_at, whole_name};

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

/// SOA: two names and five 32-bit numbers.
pub(super) fn soa(rd: &[u8]) -> Option<String> {
    let (mname, a) = name_at(rd, 0)?;
    let (rname, b) = name_at(rd, a)?;
    (rd.len() == b + 20).then_some(())?;
    let numbers: Vec<String> = (0..5)
        .map(|i| u32_at(rd, b + 4 * i).unwrap_or(0).to_string())
        .collect();
    Some(format!("{mname} {rname} {}", numbers.join(" ")))
}

/// MX, AFSDB, KX: a 16-bit number and a name.
pub(super) fn number_name(rd: &[u8]) -> Option<String> {
    let name = whole_name(rd, 2)?;
    Some(format!("{} {name}", u16_at(rd, 0)?))
}

/// SRV: priority, weight, port and target.
pub(super) fn srv(rd: &[u8]) -> Option<String> {
    let target = whole_name(rd, 6)?;
    let (priority, weight, port) = (u16_at(rd, 0)?, u16_at(rd, 2)?, u16_at(rd, 4)?);
    Some(format!("{priority} {weight} {port} {target}"))
}

/// RP: a mailbox name and a TXT name.
pub(super) fn rp(rd: &[u8]) -> Option<String> {
    let (mailbox, end) = name_at(rd, 0)?;
    Some(format!("{mailbox} {}", whole_name(rd, end)?))
}

/// Character-strings filling the rdata (TXT, SPF), or exactly `count` of
/// them (HINFO).
pub(super) fn char_strings(rd: &[u8], count: Option<usize>) -> Option<String> {
    let mut parts = Vec::new();
    let mut at = 0;
    while at < rd.len() {
        let (s, next) = char_string(rd, at)?;
        parts.push(s);
        at = next;
    }
    count.is_none_or(|n| parts.len() == n).then_some(())?;
    Some(parts.join(" "))
}

/// NAPTR: order, preference, flags, services, regexp, replacement.
pub(super) fn naptr(rd: &[u8]) -> Option<String> {
    let mut out = format!("{} {}", u16_at(rd, 0)?, u16_at(rd, 2)?);
    let mut at = 4;
    for _ in 0..3 {
        let (s, next) = char_string(rd, at)?;
        out.push(' ');
        out.push_str(&s);
        at = next;
    }
    Some(format!("{out} {}", whole_name(rd, at)?))
}

/// CAA: flags, a tag of 1-15 letters and digits, the value quoted.
pub(super) fn caa(rd: &[u8]) -> Option<String> {
    let flags = *rd.first()?;
    let tag_len = usize::from(*rd.get(1)?);
    let tag = rd.get(2..2 + tag_len)?;
    let tag_ok = (1..=15).contains(&tag_len) && tag.iter().all(u8::is_ascii_alphanumeric);
    tag_ok.then_some(())?;
    let tag = std::str::from_utf8(tag).ok()?;
    Some(format!("{flags} {tag} {}", quoted(&rd[2 + tag_len..])))
}

/// URI: priority, weight and the (non-empty) target, quoted.
pub(super) fn uri(rd: &[u8]) -> Option<String> {
    let target = rd.get(4..).filter(|t| !t.is_empty())?;
    Some(format!(
        "{} {} {}",
        u16_at(rd, 0)?,
        u16_at(rd, 2)?,
        quoted(target)
    ))
}

/// EUI48 and EUI64 (RFC 7043): `octets` hex pairs joined by `-`.
pub(super) fn eui(rd: &[u8], octets: usize) -> Option<String> {
    (rd.len() == octets).then_some(())?;
    let pairs: Vec<String> = rd.iter().map(|b| to_hex(&[*b])).collect();
    Some(pairs.join("-"))
}
