//! RDATA: presentation tokens → uncompressed wire format, one function per
//! record type, plus the RFC 3597 generic form `\# <length> <hex>`.
//!
//! ```text
//!  [Token] ──is "\#"?──yes──► generic (any type, length checked)
//!              │no
//!              └──► per-type parser (Fields cursor) ──► Vec<u8>
//!                   missing field → "missing …", leftovers → "extra rdata field …"
//!  either form ──► crate::rdata::check_rdata (names ≤ 255 octets,
//!                  layout of known types) ──► NSEC3/NSEC3PARAM iterations ≤ 100
//! ```
//!
//! Names inside rdata keep the letter case they were written in.

use std::collections::BTreeSet;

use crate::rdata::{check_rdata, nsec3_iterations, MAX_NSEC3_ITERATIONS, MAX_RDATA_LEN};
use crate::{Name, RType};

use super::error::SyntaxError;
use super::fields::Fields;
use super::lexer::{tokenize, Token};
use super::text::{
    decode_base32hex, decode_base64, decode_hex, ipv4, ipv6, parse_duration, parse_timestamp,
    parse_u16, parse_u8, push_char_string, show, unescape,
};
use super::{loc, svcb};

/// Converts the presentation form of one record's RDATA into wire format.
///
/// `fields` are the tokens after the type (see [`super::tokenize`]); relative
/// names are completed with `origin` and `@` stands for it. Names keep their
/// letter case. The RFC 3597 form `\# <length> <hex>` is accepted for every
/// type. The message of an error names the field at fault.
pub fn rdata_from_text(rtype: RType, fields: &[Token], origin: &Name) -> Result<Vec<u8>, String> {
    if rtype.is_meta() {
        return Err(format!("type {rtype} cannot appear in zone data"));
    }
    let out = match fields.first() {
        Some(first) if first.is_word("\\#") => generic(rtype, &fields[1..])?,
        _ => {
            let mut f = Fields::new(fields, origin);
            let mut out = Vec::with_capacity(64);
            typed(rtype, &mut f, &mut out)?;
            f.end()?;
            out
        }
    };
    if out.len() > MAX_RDATA_LEN {
        return Err(format!(
            "rdata longer than {MAX_RDATA_LEN} octets ({} octets)",
            out.len()
        ));
    }
    // What the server will check again when it reads the record back.
    check_rdata(rtype, &out).map_err(|e| e.to_string())?;
    check_iterations(rtype, &out)?;
    Ok(out)
}

/// NSEC3 and NSEC3PARAM with more hash iterations than
/// [`MAX_NSEC3_ITERATIONS`] are refused (RFC 9276 §3.2; CVE-2023-50868).
fn check_iterations(rtype: RType, rd: &[u8]) -> Result<(), String> {
    if !matches!(rtype, RType::NSEC3 | RType::NSEC3PARAM) {
        return Ok(());
    }
    match nsec3_iterations(rd) {
        Some(n) if n > MAX_NSEC3_ITERATIONS => Err(format!(
            "{rtype} with {n} hash iterations: at most {MAX_NSEC3_ITERATIONS} are accepted (RFC 9276 recommends 0)"
        )),
        _ => Ok(()),
    }
}

/// Parses one record's rdata written as text, such as `"10 mail"` for an
/// MX: [`rdata_from_text`] on the tokens of `text` (quotes, escapes,
/// parentheses and comments as in a zone file). Relative names are
/// completed with `origin`.
pub fn parse_rdata(rtype: RType, text: &str, origin: &Name) -> Result<Vec<u8>, SyntaxError> {
    let tokens = tokenize(text)?;
    Ok(rdata_from_text(rtype, &tokens, origin)?)
}

fn texts(tokens: &[Token]) -> impl Iterator<Item = &[u8]> {
    tokens.iter().map(Token::text)
}

/// The per-type dispatch.
fn typed(rtype: RType, f: &mut Fields<'_>, out: &mut Vec<u8>) -> Result<(), String> {
    match rtype.0 {
        1 => {
            let raw = f.raw("IPv4 address")?;
            out.extend_from_slice(&ipv4(raw)?.octets());
        }
        28 => {
            let raw = f.raw("IPv6 address")?;
            out.extend_from_slice(&ipv6(raw)?.octets());
        }
        // NS, CNAME, PTR, DNAME
        2 | 5 | 12 | 39 => f.name("target name", out)?,
        6 => {
            f.name("SOA MNAME", out)?;
            f.name("SOA RNAME", out)?;
            out.extend_from_slice(&f.u32("SOA serial")?.to_be_bytes());
            for what in ["SOA refresh", "SOA retry", "SOA expire", "SOA minimum"] {
                let v = parse_duration(f.raw(what)?, u32::MAX, what)?;
                out.extend_from_slice(&v.to_be_bytes());
            }
        }
        13 => {
            f.char_string("HINFO CPU", out)?;
            f.char_string("HINFO OS", out)?;
        }
        // MX, AFSDB, KX: a 16-bit number and a name.
        15 | 18 | 36 => {
            let (number, target) = match rtype.0 {
                15 => ("MX preference", "MX exchange"),
                18 => ("AFSDB subtype", "AFSDB hostname"),
                _ => ("KX preference", "KX exchanger"),
            };
            out.extend_from_slice(&f.u16(number)?.to_be_bytes());
            f.name(target, out)?;
        }
        // TXT, SPF
        16 | 99 => {
            for tok in f.rest_nonempty("text string")? {
                push_char_string(tok.text(), out)?;
            }
        }
        17 => {
            f.name("RP mailbox", out)?;
            f.name("RP TXT name", out)?;
        }
        29 => loc::parse(f, out)?,
        33 => {
            out.extend_from_slice(&f.u16("SRV priority")?.to_be_bytes());
            out.extend_from_slice(&f.u16("SRV weight")?.to_be_bytes());
            out.extend_from_slice(&f.u16("SRV port")?.to_be_bytes());
            f.name("SRV target", out)?;
        }
        35 => {
            out.extend_from_slice(&f.u16("NAPTR order")?.to_be_bytes());
            out.extend_from_slice(&f.u16("NAPTR preference")?.to_be_bytes());
            f.char_string("NAPTR flags", out)?;
            f.char_string("NAPTR services", out)?;
            f.char_string("NAPTR regexp", out)?;
            f.name("NAPTR replacement", out)?;
        }
        // DS, CDS
        43 | 59 => {
            out.extend_from_slice(&f.u16("key tag")?.to_be_bytes());
            out.push(algorithm(f.raw("algorithm")?)?);
            out.push(f.u8("digest type")?);
            out.extend(decode_hex(texts(f.rest_nonempty("digest")?))?);
        }
        44 => {
            out.push(f.u8("SSHFP algorithm")?);
            out.push(f.u8("SSHFP fingerprint type")?);
            out.extend(decode_hex(texts(f.rest_nonempty("fingerprint")?))?);
        }
        46 => {
            let covered = f.raw("type covered")?;
            out.extend_from_slice(&type_number(covered)?.to_be_bytes());
            out.push(algorithm(f.raw("algorithm")?)?);
            out.push(f.u8("labels")?);
            let ttl = parse_duration(f.raw("original TTL")?, u32::MAX, "original TTL")?;
            out.extend_from_slice(&ttl.to_be_bytes());
            for what in ["signature expiration", "signature inception"] {
                out.extend_from_slice(&parse_timestamp(f.raw(what)?, what)?.to_be_bytes());
            }
            out.extend_from_slice(&f.u16("key tag")?.to_be_bytes());
            f.name("signer name", out)?;
            out.extend(decode_base64(texts(f.rest_nonempty("signature")?))?);
        }
        47 => {
            f.name("next domain name", out)?;
            type_bitmap(f.rest(), out)?;
        }
        // DNSKEY, CDNSKEY
        48 | 60 => {
            out.extend_from_slice(&f.u16("flags")?.to_be_bytes());
            out.push(f.u8("protocol")?);
            out.push(algorithm(f.raw("algorithm")?)?);
            out.extend(decode_base64(texts(f.rest_nonempty("public key")?))?);
        }
        // DHCID, OPENPGPKEY: base64 only.
        49 | 61 => out.extend(decode_base64(texts(f.rest_nonempty("base64 data")?))?),
        50 => {
            out.push(f.u8("hash algorithm")?);
            out.push(f.u8("flags")?);
            out.extend_from_slice(&f.u16("iterations")?.to_be_bytes());
            salt(f.raw("salt")?, out)?;
            let hashed = decode_base32hex(f.raw("next hashed owner name")?)?;
            if hashed.is_empty() || hashed.len() > 255 {
                return Err("next hashed owner name must be 1-255 octets".into());
            }
            out.push(hashed.len() as u8);
            out.extend(hashed);
            type_bitmap(f.rest(), out)?;
        }
        51 => {
            out.push(f.u8("hash algorithm")?);
            out.push(f.u8("flags")?);
            out.extend_from_slice(&f.u16("iterations")?.to_be_bytes());
            salt(f.raw("salt")?, out)?;
        }
        // TLSA, SMIMEA
        52 | 53 => {
            out.push(f.u8("certificate usage")?);
            out.push(f.u8("selector")?);
            out.push(f.u8("matching type")?);
            out.extend(decode_hex(texts(f.rest_nonempty("certificate data")?))?);
        }
        62 => {
            out.extend_from_slice(&f.u32("CSYNC serial")?.to_be_bytes());
            out.extend_from_slice(&f.u16("CSYNC flags")?.to_be_bytes());
            type_bitmap(f.rest(), out)?;
        }
        63 => {
            out.extend_from_slice(&f.u32("ZONEMD serial")?.to_be_bytes());
            out.push(f.u8("ZONEMD scheme")?);
            out.push(f.u8("ZONEMD hash algorithm")?);
            out.extend(decode_hex(texts(f.rest_nonempty("digest")?))?);
        }
        64 | 65 => svcb::parse(f, out)?,
        108 => eui(f.raw("EUI-48 address")?, 6, out)?,
        109 => eui(f.raw("EUI-64 address")?, 8, out)?,
        256 => {
            out.extend_from_slice(&f.u16("URI priority")?.to_be_bytes());
            out.extend_from_slice(&f.u16("URI weight")?.to_be_bytes());
            let target = unescape(f.raw("URI target")?)?;
            if target.is_empty() {
                return Err("URI target is empty".into());
            }
            out.extend(target);
        }
        257 => {
            out.push(f.u8("CAA flags")?);
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
            out.extend(unescape(f.raw("CAA value")?)?);
        }
        _ => {
            return Err(format!(
                "no presentation format known for type {rtype}; use the RFC 3597 form \\# <length> <hex>"
            ))
        }
    }
    Ok(())
}

/// `\# <length> <hex>...` (RFC 3597 §5).
fn generic(rtype: RType, fields: &[Token]) -> Result<Vec<u8>, String> {
    let len_tok = fields
        .first()
        .ok_or("missing rdata field: length after \\#")?;
    let len = parse_u16(len_tok.text(), "\\# rdata length")? as usize;
    let data = decode_hex(texts(&fields[1..]))?;
    if data.len() != len {
        return Err(format!(
            "\\# rdata length {len} does not match the {} octets of hex data",
            data.len()
        ));
    }
    check_known_wire(rtype, &data)?;
    Ok(data)
}

/// The sizes of generic-form A and AAAA rdata, with a plain message; every
/// other layout is checked by [`check_rdata`] like all rdata.
fn check_known_wire(rtype: RType, data: &[u8]) -> Result<(), String> {
    let fixed = match rtype.0 {
        1 => 4,
        28 => 16,
        _ => return Ok(()),
    };
    if data.len() != fixed {
        return Err(format!(
            "{rtype} rdata must be {fixed} octets, \\# gives {}",
            data.len()
        ));
    }
    Ok(())
}

/// A DNSSEC algorithm: a number or a mnemonic of the IANA registry.
fn algorithm(raw: &[u8]) -> Result<u8, String> {
    const NAMES: &[(&str, u8)] = &[
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
    NAMES
        .iter()
        .find(|(n, _)| n.as_bytes().eq_ignore_ascii_case(raw))
        .map(|(_, v)| *v)
        .ok_or_else(|| format!("unknown DNSSEC algorithm '{}'", show(raw)))
}

/// A type mnemonic or `TYPEnnn`.
fn type_number(raw: &[u8]) -> Result<u16, String> {
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
