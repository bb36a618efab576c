//! RDATA and records as presentation text: the inverse of rdata.rs, for the
//! signer's master-file export, its DS and DNSKEY output, and any message
//! that shows a record.
//!
//! ```text
//!  (type, wire rdata) ─► known type, well-formed? ─yes─► per-type text
//!                                │no                    (names with a final dot,
//!                                │                       case kept, escaped)
//!                                └─► RFC 3597: \# <length> <HEX>
//!  record_text: owner <TAB> TTL <TAB> IN <TAB> TYPE <TAB> rdata_text
//! ```
//!
//! Every text written here reads back through [`super::parse_rdata`] to the
//! same wire bytes (see `round_trip.rs`).

use std::fmt::Write as _;
use std::net::Ipv6Addr;

use crate::civil::civil_from_days;
use crate::dnssec::bitmap_types;
use crate::encoding::{base32hex, base64, to_hex};
use crate::name::wire_name_text as name_at;
use crate::{Name, RType};

/// The presentation form of the rdata `rd` of type `rtype`: the usual one
/// for well-formed rdata of the types listed in `known`, the RFC 3597
/// form `\# <length> <hex>` for everything else.
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
        1 => a(rd),
        28 => aaaa(rd),
        // NS, CNAME, PTR, DNAME
        2 | 5 | 12 | 39 => whole_name(rd, 0),
        6 => soa(rd),
        15 => mx(rd),
        // TXT, SPF
        16 | 99 => txt(rd),
        33 => srv(rd),
        // DS, CDS
        43 | 59 => number_octets_data(rd, hex),
        46 => rrsig(rd),
        47 => nsec(rd),
        // DNSKEY, CDNSKEY
        48 | 60 => number_octets_data(rd, base64),
        50 => nsec3(rd),
        51 => nsec3param(rd),
        _ => None,
    }
}

/// Upper-case hex, as zone files usually show digests.
fn hex(bytes: &[u8]) -> String {
    to_hex(bytes).to_uppercase()
}

fn u16_at(rd: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*rd.get(at)?, *rd.get(at + 1)?]))
}

fn u32_at(rd: &[u8], at: usize) -> Option<u32> {
    let bytes = rd.get(at..at + 4)?;
    Some(u32::from_be_bytes(bytes.try_into().ok()?))
}

/// The name at `at` when it ends the rdata.
fn whole_name(rd: &[u8], at: usize) -> Option<String> {
    let (name, end) = name_at(rd, at)?;
    (end == rd.len()).then_some(name)
}

/// The `<character-string>` at `at`, quoted, and the offset after it.
fn char_string(rd: &[u8], at: usize) -> Option<(String, usize)> {
    let len = *rd.get(at)? as usize;
    let s = rd.get(at + 1..at + 1 + len)?;
    let mut out = String::from("\"");
    for &b in s {
        match b {
            b'"' | b'\\' => {
                out.push('\\');
                out.push(b as char);
            }
            0x20..=0x7e => out.push(b as char),
            _ => {
                let _ = write!(out, "\\{b:03}");
            }
        }
    }
    out.push('"');
    Some((out, at + 1 + len))
}

/// The type mnemonics of an NSEC/NSEC3 type bitmap, space-separated.
fn types_text(bitmap: &[u8]) -> String {
    bitmap_types(bitmap)
        .iter()
        .map(|t| t.mnemonic().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// RRSIG time field as YYYYMMDDHHmmSS (RFC 4034 §3.2).
fn time_text(t: u32) -> String {
    let secs = i64::from(t);
    let rem = secs.rem_euclid(86400);
    let (y, m, d) = civil_from_days(secs.div_euclid(86400));
    format!(
        "{y:04}{m:02}{d:02}{:02}{:02}{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// An NSEC3 salt: `-` when empty.
fn salt_text(salt: &[u8]) -> String {
    match salt.is_empty() {
        true => "-".into(),
        false => hex(salt),
    }
}

fn a(rd: &[u8]) -> Option<String> {
    let [a, b, c, d] = rd.try_into().ok()?;
    Some(format!("{a}.{b}.{c}.{d}"))
}

fn aaaa(rd: &[u8]) -> Option<String> {
    let octets: [u8; 16] = rd.try_into().ok()?;
    Some(Ipv6Addr::from(octets).to_string())
}

fn soa(rd: &[u8]) -> Option<String> {
    let (mname, a) = name_at(rd, 0)?;
    let (rname, b) = name_at(rd, a)?;
    (rd.len() == b + 20).then_some(())?;
    let numbers: Vec<String> = (0..5)
        .map(|i| u32_at(rd, b + 4 * i).unwrap_or(0).to_string())
        .collect();
    Some(format!("{mname} {rname} {}", numbers.join(" ")))
}

fn mx(rd: &[u8]) -> Option<String> {
    let exchange = whole_name(rd, 2)?;
    Some(format!("{} {exchange}", u16_at(rd, 0)?))
}

fn txt(rd: &[u8]) -> Option<String> {
    let mut parts = Vec::new();
    let mut at = 0;
    while at < rd.len() {
        let (s, next) = char_string(rd, at)?;
        parts.push(s);
        at = next;
    }
    Some(parts.join(" "))
}

fn srv(rd: &[u8]) -> Option<String> {
    let target = whole_name(rd, 6)?;
    let (priority, weight, port) = (u16_at(rd, 0)?, u16_at(rd, 2)?, u16_at(rd, 4)?);
    Some(format!("{priority} {weight} {port} {target}"))
}

/// DS and DNSKEY: a 16-bit number (key tag, flags), two octets (algorithm
/// and digest type, protocol and algorithm), then data (a digest in hex, a
/// key in base64), which must not be empty.
fn number_octets_data(rd: &[u8], data_text: fn(&[u8]) -> String) -> Option<String> {
    let data = rd.get(4..).filter(|d| !d.is_empty())?;
    Some(format!(
        "{} {} {} {}",
        u16_at(rd, 0)?,
        rd[2],
        rd[3],
        data_text(data)
    ))
}

fn rrsig(rd: &[u8]) -> Option<String> {
    if rd.len() <= 18 {
        return None;
    }
    let (signer, end) = name_at(rd, 18)?;
    Some(format!(
        "{} {} {} {} {} {} {} {signer} {}",
        RType(u16_at(rd, 0)?).mnemonic(),
        rd[2],
        rd[3],
        u32_at(rd, 4)?,
        time_text(u32_at(rd, 8)?),
        time_text(u32_at(rd, 12)?),
        u16_at(rd, 16)?,
        base64(rd.get(end..)?)
    ))
}

fn nsec(rd: &[u8]) -> Option<String> {
    let (next, end) = name_at(rd, 0)?;
    Some(format!("{next} {}", types_text(&rd[end..])))
}

fn nsec3(rd: &[u8]) -> Option<String> {
    let salt_len = *rd.get(4)? as usize;
    let salt = rd.get(5..5 + salt_len)?;
    let hash_len = *rd.get(5 + salt_len)? as usize;
    let hash = rd.get(6 + salt_len..6 + salt_len + hash_len)?;
    Some(format!(
        "{} {} {} {} {} {}",
        rd[0],
        rd[1],
        u16_at(rd, 2)?,
        salt_text(salt),
        base32hex(hash).to_uppercase(),
        types_text(&rd[6 + salt_len + hash_len..])
    ))
}

fn nsec3param(rd: &[u8]) -> Option<String> {
    let salt = rd.get(5..5 + *rd.get(4)? as usize)?;
    Some(format!(
        "{} {} {} {}",
        rd[0],
        rd[1],
        u16_at(rd, 2)?,
        salt_text(salt)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_civil_dates() {
        assert_eq!(time_text(0), "19700101000000");
        assert_eq!(time_text(1_700_000_000), "20231114221320");
    }

    #[test]
    fn rdata_presentation() {
        assert_eq!(rdata_text(RType::A, &[192, 0, 2, 1]), "192.0.2.1");
        assert_eq!(rdata_text(RType::MX, b"\x00\x0a\x04Mail\x00"), "10 Mail.");
        assert_eq!(rdata_text(RType::NS, b"\x04a!b.\x00"), "a!b\\..");
        assert_eq!(rdata_text(RType::TXT, b"\x02a\"\x01b"), "\"a\\\"\" \"b\"");
        assert_eq!(rdata_text(RType(65280), &[1, 2]), "\\# 2 0102");
        assert_eq!(rdata_text(RType::A, &[1, 2]), "\\# 2 0102");
        let owner: Name = "www.example.".parse().unwrap();
        assert_eq!(
            record_text(&owner, 300, RType::A, &[192, 0, 2, 1]),
            "www.example.\t300\tIN\tA\t192.0.2.1"
        );
    }
}
