//! RDATA text → wire, field by field, for every type whose descriptor
//! (`crate::types`) is a list of fields: one function per kind of field,
//! none per type.
//!
//! ```text
//!  TypeInfo.rdata = Fields([U16 "MX preference", Name "MX exchange"])
//!    for each field: Fields cursor ─► parse_field ─► wire bytes appended
//!      numbers, TTL-like periods, RRSIG times, algorithms and CERT types
//!      by number or mnemonic, addresses, names, character-strings, hex,
//!      base64, NSAP, NSEC3 salt and hash, type bitmaps (NSEC, NXT),
//!      EUI-48/64, WKS protocol and ports, CAA tag, quoted values
//! ```

use std::collections::BTreeSet;

use crate::types::Field;
use crate::RType;

use super::fields::Fields;
use super::lexer::Token;
use super::text::{
    decode_base32hex, decode_base64, decode_hex, ipv4, ipv6, parse_duration, parse_timestamp,
    parse_u16, parse_u8, push_char_string, show, unescape,
};

fn texts(tokens: &[Token]) -> impl Iterator<Item = &[u8]> {
    tokens.iter().map(Token::text)
}

/// Reads `field` from the cursor and appends its wire form to `out`.
pub(super) fn parse_field(
    field: Field,
    f: &mut Fields<'_>,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    match field {
        Field::U8(what) => out.push(f.u8(what)?),
        Field::U16(what) => out.extend_from_slice(&f.u16(what)?.to_be_bytes()),
        Field::U32(what) => out.extend_from_slice(&f.u32(what)?.to_be_bytes()),
        Field::Period(what) => {
            let v = parse_duration(f.raw(what)?, u32::MAX, what)?;
            out.extend_from_slice(&v.to_be_bytes());
        }
        Field::Time(what) => {
            out.extend_from_slice(&parse_timestamp(f.raw(what)?, what)?.to_be_bytes());
        }
        Field::Algorithm => out.push(algorithm(f.raw("algorithm")?)?),
        Field::CertType => {
            out.extend_from_slice(&cert_type(f.raw("certificate type")?)?.to_be_bytes());
        }
        Field::Covered => {
            out.extend_from_slice(&type_number(f.raw("type covered")?)?.to_be_bytes());
        }
        Field::Ipv4(what) => out.extend_from_slice(&ipv4(f.raw(what)?)?.octets()),
        Field::Ipv6(what) => out.extend_from_slice(&ipv6(f.raw(what)?)?.octets()),
        Field::Locator64(what) => locator64(f.raw(what)?, out)?,
        Field::Name(what) => f.name(what, out)?,
        Field::Text(what) => f.char_string(what, out)?,
        Field::OptionalText(what) => {
            if f.peek().is_some() {
                f.char_string(what, out)?;
            }
        }
        Field::Texts(what) => {
            for tok in f.rest_nonempty(what)? {
                push_char_string(tok.text(), out)?;
            }
        }
        Field::Hex(what) => out.extend(decode_hex(texts(f.rest_nonempty(what)?))?),
        Field::Base64(what) => out.extend(decode_base64(texts(f.rest_nonempty(what)?))?),
        Field::Nsap => nsap(f.raw("NSAP address")?, out)?,
        Field::Salt => salt(f.raw("salt")?, out)?,
        Field::NextHashed => {
            let hashed = decode_base32hex(f.raw("next hashed owner name")?)?;
            if hashed.is_empty() || hashed.len() > 255 {
                return Err("next hashed owner name must be 1-255 octets".into());
            }
            out.push(hashed.len() as u8);
            out.extend(hashed);
        }
        Field::Bitmap => type_bitmap(f.rest(), out)?,
        Field::NxtBitmap => nxt_bitmap(f.rest(), out)?,
        Field::Eui(octets) => {
            let what = if octets == 6 {
                "EUI-48 address"
            } else {
                "EUI-64 address"
            };
            eui(f.raw(what)?, octets, out)?;
        }
        Field::Protocol => out.push(protocol(f.raw("WKS protocol")?)?),
        Field::Ports => ports(f.rest(), out)?,
        Field::CaaTag => {
            let tag = f.next("CAA tag")?;
            let text = tag.text();
            if tag.is_quoted()
                || text.is_empty()
                || text.len() > 15
                || !text.iter().all(u8::is_ascii_alphanumeric)
            {
                return Err(format!(
                    "bad CAA tag '{}': expected 1-15 letters and digits",
                    tag.show()
                ));
            }
            out.push(text.len() as u8);
            out.extend_from_slice(text);
        }
        Field::Quoted(what, nonempty) => {
            let value = unescape(f.raw(what)?)?;
            if nonempty && value.is_empty() {
                return Err(format!("{what} is empty"));
            }
            out.extend(value);
        }
    }
    Ok(())
}

/// A number or a mnemonic of a table.
fn number_or_name(raw: &[u8], names: &[(&str, u16)], max: u16, what: &str) -> Result<u16, String> {
    if raw.first().is_some_and(u8::is_ascii_digit) {
        let n = parse_u16(raw, what)?;
        return match n <= max {
            true => Ok(n),
            false => Err(format!("{what} {n} above {max}")),
        };
    }
    names
        .iter()
        .find(|(n, _)| n.as_bytes().eq_ignore_ascii_case(raw))
        .map(|(_, v)| *v)
        .ok_or_else(|| format!("unknown {what} '{}'", show(raw)))
}

/// A DNSSEC algorithm: a number or a mnemonic of the IANA registry.
pub(super) fn algorithm(raw: &[u8]) -> Result<u8, String> {
    const NAMES: &[(&str, u16)] = &[
        ("RSAMD5", 1),
        ("DH", 2),
        ("DSA", 3),
        ("RSASHA1", 5),
        ("DSA-NSEC3-SHA1", 6),
        ("RSASHA1-NSEC3-SHA1", 7),
        ("RSASHA256", 8),
        ("RSASHA512", 10),
        ("ECC-GOST", 12),
        ("ECDSAP256SHA256", 13),
        ("ECDSAP384SHA384", 14),
        ("ED25519", 15),
        ("ED448", 16),
        ("INDIRECT", 252),
        ("PRIVATEDNS", 253),
        ("PRIVATEOID", 254),
    ];
    if raw.first().is_some_and(u8::is_ascii_digit) {
        return parse_u8(raw, "algorithm");
    }
    number_or_name(raw, NAMES, 255, "DNSSEC algorithm").map(|v| v as u8)
}

/// A CERT type (RFC 4398 §2.1): a number or a mnemonic.
fn cert_type(raw: &[u8]) -> Result<u16, String> {
    const NAMES: &[(&str, u16)] = &[
        ("PKIX", 1),
        ("SPKI", 2),
        ("PGP", 3),
        ("IPKIX", 4),
        ("ISPKI", 5),
        ("IPGP", 6),
        ("ACPKIX", 7),
        ("IACPKIX", 8),
        ("URI", 253),
        ("OID", 254),
    ];
    number_or_name(raw, NAMES, u16::MAX, "certificate type")
}

/// A type mnemonic or `TYPEnnn`.
pub(super) fn type_number(raw: &[u8]) -> Result<u16, String> {
    std::str::from_utf8(raw)
        .ok()
        .and_then(RType::from_mnemonic)
        .map(|t| t.0)
        .ok_or_else(|| format!("unknown record type '{}'", show(raw)))
}

/// The NSEC/NSEC3/CSYNC type bitmap (RFC 4034 §4.1.2).
fn type_bitmap(tokens: &[Token], out: &mut Vec<u8>) -> Result<(), String> {
    let mut types = BTreeSet::new();
    for tok in tokens {
        types.insert(type_number(tok.text())?);
    }
    let mut window: Option<(u8, [u8; 32], usize)> = None;
    let flush = |w: (u8, [u8; 32], usize), out: &mut Vec<u8>| {
        out.push(w.0);
        out.push(w.2 as u8);
        out.extend_from_slice(&w.1[..w.2]);
    };
    for t in types {
        let (hi, lo) = ((t >> 8) as u8, (t & 0xff) as u8);
        if window.is_some_and(|w| w.0 != hi) {
            flush(window.take().expect("checked"), out);
        }
        let w = window.get_or_insert((hi, [0; 32], 0));
        w.1[(lo / 8) as usize] |= 0x80 >> (lo % 8);
        w.2 = w.2.max((lo / 8) as usize + 1);
    }
    if let Some(w) = window {
        flush(w, out);
    }
    Ok(())
}

/// Bit `n` of a bitmap numbered from the most significant bit of its
/// first octet (NXT types, WKS ports), the octets up to the last one set.
fn bits(numbers: impl IntoIterator<Item = u16>, out: &mut Vec<u8>) {
    let mut map: Vec<u8> = Vec::new();
    for n in numbers {
        let octet = usize::from(n / 8);
        if map.len() <= octet {
            map.resize(octet + 1, 0);
        }
        map[octet] |= 0x80 >> (n % 8);
    }
    out.extend(map);
}

/// The NXT bitmap (RFC 2535 §5.2): types 1 to 127 only.
fn nxt_bitmap(tokens: &[Token], out: &mut Vec<u8>) -> Result<(), String> {
    let mut types = Vec::new();
    for tok in tokens {
        let t = type_number(tok.text())?;
        if t == 0 || t > 127 {
            return Err(format!("NXT cannot list type {}", tok.show()));
        }
        types.push(t);
    }
    bits(types, out);
    Ok(())
}

/// A WKS protocol: `tcp`, `udp` or a number.
fn protocol(raw: &[u8]) -> Result<u8, String> {
    number_or_name(raw, &[("tcp", 6), ("udp", 17)], 255, "WKS protocol").map(|v| v as u8)
}

/// WKS ports: numbers, or the names of a few well-known services.
fn ports(tokens: &[Token], out: &mut Vec<u8>) -> Result<(), String> {
    const NAMES: &[(&str, u16)] = &[
        ("ftp", 21),
        ("ssh", 22),
        ("telnet", 23),
        ("smtp", 25),
        ("domain", 53),
        ("http", 80),
        ("pop3", 110),
        ("imap", 143),
        ("https", 443),
    ];
    let mut numbers = Vec::new();
    for tok in tokens {
        numbers.push(number_or_name(tok.text(), NAMES, u16::MAX, "WKS service")?);
    }
    bits(numbers, out);
    Ok(())
}

/// An NSEC3 salt: `-` for none, else hex (at most 255 octets).
fn salt(raw: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
    let bytes = if raw == b"-" {
        Vec::new()
    } else {
        decode_hex([raw])?
    };
    if bytes.len() > 255 {
        return Err("salt longer than 255 octets".into());
    }
    out.push(bytes.len() as u8);
    out.extend(bytes);
    Ok(())
}

/// `xx-xx-xx-xx-xx-xx` (RFC 7043).
fn eui(raw: &[u8], octets: usize, out: &mut Vec<u8>) -> Result<(), String> {
    let parts: Vec<&[u8]> = raw.split(|&b| b == b'-').collect();
    if parts.len() != octets || parts.iter().any(|p| p.len() != 2) {
        return Err(format!(
            "bad EUI address '{}': expected {octets} hex pairs separated by '-'",
            show(raw)
        ));
    }
    out.extend(decode_hex(parts)?);
    Ok(())
}

/// `xxxx:xxxx:xxxx:xxxx`, four groups of 1-4 hex digits (RFC 6742 §2.3).
fn locator64(raw: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
    let parts: Vec<&[u8]> = raw.split(|&b| b == b':').collect();
    let ok = parts.len() == 4
        && parts
            .iter()
            .all(|p| (1..=4).contains(&p.len()) && p.iter().all(u8::is_ascii_hexdigit));
    if !ok {
        return Err(format!(
            "bad 64-bit locator '{}': expected four groups of hex digits separated by ':'",
            show(raw)
        ));
    }
    for p in parts {
        let v = u16::from_str_radix(std::str::from_utf8(p).expect("hex digits"), 16)
            .expect("at most 4 hex digits");
        out.extend_from_slice(&v.to_be_bytes());
    }
    Ok(())
}

/// NSAP (RFC 1706 §5): `0x` and hex digits, dots between them allowed.
fn nsap(raw: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
    let digits = raw
        .strip_prefix(b"0x")
        .or_else(|| raw.strip_prefix(b"0X"))
        .ok_or_else(|| format!("bad NSAP address '{}': expected 0x and hex", show(raw)))?;
    let bytes = decode_hex(digits.split(|&b| b == b'.'))?;
    if bytes.is_empty() {
        return Err("NSAP address is empty".into());
    }
    out.extend(bytes);
    Ok(())
}
