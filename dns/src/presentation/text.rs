//! Presentation-format primitives: names, numbers, TTLs, character-strings,
//! timestamps and the base16/32/64 encodings.
//!
//! Every function takes raw token bytes (escapes still in place) and returns
//! either wire bytes or a message that names the offending text.
//!
//! ```text
//!  raw token ─► unescape (\X, \DDD) ─► push_char_string / push_name (+ origin)
//!            ─► parse_uint / parse_duration (1h30m) / parse_timestamp (YYYYMMDDHHmmSS)
//!  tokens ─► decode_hex / decode_base64 / decode_base32hex: the crate::encoding
//!            decoders fed every piece, strict about length and padding
//! ```

use crate::civil::days_from_civil;
use crate::encoding::{Base32hexDecoder, Base64Decoder, EncodingError, HexDecoder};
use crate::name::{MAX_LABEL_LEN, MAX_NAME_LEN};
use crate::Name;
use std::net::{Ipv4Addr, Ipv6Addr};

/// Largest TTL a record may carry (RFC 2181 §8).
pub const MAX_TTL: u32 = 0x7fff_ffff;

/// Lossy text of raw token bytes, for messages.
pub(crate) fn show(raw: &[u8]) -> String {
    String::from_utf8_lossy(raw).into_owned()
}

/// Decodes the escape at `raw[i]` (which is a backslash): `\X` or `\DDD`.
/// Returns the byte and the index after the escape.
fn decode_escape(raw: &[u8], i: usize) -> Result<(u8, usize), String> {
    let next = *raw
        .get(i + 1)
        .ok_or_else(|| format!("dangling backslash in '{}'", show(raw)))?;
    if !next.is_ascii_digit() {
        return Ok((next, i + 2));
    }
    let digits = raw
        .get(i + 1..i + 4)
        .filter(|d| d.iter().all(u8::is_ascii_digit))
        .ok_or_else(|| format!("bad \\DDD escape in '{}'", show(raw)))?;
    let value = digits
        .iter()
        .fold(0u32, |acc, d| acc * 10 + u32::from(d - b'0'));
    if value > 255 {
        return Err(format!(
            "escape \\{} above 255 in '{}'",
            show(digits),
            show(raw)
        ));
    }
    Ok((value as u8, i + 4))
}

/// Decodes `\X` and `\DDD` escapes into bytes.
pub(crate) fn unescape(raw: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == b'\\' {
            let (b, next) = decode_escape(raw, i)?;
            out.push(b);
            i = next;
        } else {
            out.push(raw[i]);
            i += 1;
        }
    }
    Ok(out)
}

/// Appends a `<character-string>` (length octet + bytes).
pub(crate) fn push_char_string(raw: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
    let bytes = unescape(raw)?;
    if bytes.len() > 255 {
        return Err(format!(
            "character-string longer than 255 bytes ({} bytes): '{}…'",
            bytes.len(),
            show(&raw[..raw.len().min(20)])
        ));
    }
    out.push(bytes.len() as u8);
    out.extend_from_slice(&bytes);
    Ok(())
}

/// Appends the wire form of the name `raw`, keeping the letter case written.
///
/// `@` is the origin; a name without a final dot is completed with the
/// origin (whose own labels are lower case, as [`Name`] stores them).
pub(crate) fn push_name(raw: &[u8], origin: &Name, out: &mut Vec<u8>) -> Result<(), String> {
    let start = out.len();
    encode_name(raw, origin, out)?;
    if out.len() - start > MAX_NAME_LEN {
        out.truncate(start);
        return Err(format!(
            "name longer than {MAX_NAME_LEN} octets: '{}'",
            show(raw)
        ));
    }
    Ok(())
}

fn encode_name(raw: &[u8], origin: &Name, out: &mut Vec<u8>) -> Result<(), String> {
    if raw == b"@" {
        out.extend_from_slice(origin.as_wire());
        return Ok(());
    }
    if raw == b"." {
        out.push(0);
        return Ok(());
    }
    if raw.is_empty() {
        return Err("empty name".into());
    }
    let mut label: Vec<u8> = Vec::with_capacity(MAX_LABEL_LEN);
    let mut i = 0;
    let mut absolute = false;
    while i < raw.len() {
        match raw[i] {
            b'.' => {
                if label.is_empty() {
                    return Err(format!("empty label in name '{}'", show(raw)));
                }
                out.push(label.len() as u8);
                out.extend_from_slice(&label);
                label.clear();
                absolute = i + 1 == raw.len();
                i += 1;
            }
            b'\\' => {
                let (b, next) = decode_escape(raw, i)?;
                label.push(b);
                i = next;
            }
            b => {
                label.push(b);
                i += 1;
            }
        }
        if label.len() > MAX_LABEL_LEN {
            return Err(format!(
                "label longer than {MAX_LABEL_LEN} octets in name '{}'",
                show(raw)
            ));
        }
    }
    if !label.is_empty() {
        out.push(label.len() as u8);
        out.extend_from_slice(&label);
    }
    if absolute {
        out.push(0);
    } else {
        out.extend_from_slice(origin.as_wire());
    }
    Ok(())
}

/// Parses a name into a (case-folded) [`Name`].
pub(crate) fn parse_name(raw: &[u8], origin: &Name) -> Result<Name, String> {
    let mut wire = Vec::with_capacity(raw.len() + origin.wire_len() + 2);
    push_name(raw, origin, &mut wire)?;
    Name::from_wire(&wire).map_err(|e| format!("bad name '{}': {e}", show(raw)))
}

/// Parses an unsigned decimal integer no larger than `max`.
pub(crate) fn parse_uint(raw: &[u8], max: u64, what: &str) -> Result<u64, String> {
    let bad = || format!("bad {what} '{}': expected an integer 0-{max}", show(raw));
    if raw.is_empty() || raw.len() > 20 || !raw.iter().all(u8::is_ascii_digit) {
        return Err(bad());
    }
    let value = raw
        .iter()
        .try_fold(0u64, |acc, d| {
            acc.checked_mul(10)?.checked_add(u64::from(d - b'0'))
        })
        .ok_or_else(bad)?;
    if value > max {
        return Err(format!("{what} {value} out of range (0-{max})"));
    }
    Ok(value)
}

/// An 8-bit integer field.
pub(crate) fn parse_u8(raw: &[u8], what: &str) -> Result<u8, String> {
    parse_uint(raw, u8::MAX.into(), what).map(|v| v as u8)
}

/// A 16-bit integer field.
pub(crate) fn parse_u16(raw: &[u8], what: &str) -> Result<u16, String> {
    parse_uint(raw, u16::MAX.into(), what).map(|v| v as u16)
}

/// A 32-bit integer field.
pub(crate) fn parse_u32(raw: &[u8], what: &str) -> Result<u32, String> {
    parse_uint(raw, u32::MAX.into(), what).map(|v| v as u32)
}

/// A duration in seconds: plain (`3600`) or BIND units (`1h30m`, `2w`,
/// `1d12h`; units s m h d w in either case; a trailing bare number counts as
/// seconds). At most `max`.
pub(crate) fn parse_duration(raw: &[u8], max: u32, what: &str) -> Result<u32, String> {
    let bad = || {
        format!(
            "bad {what} '{}': expected seconds or units like 1h30m",
            show(raw)
        )
    };
    if raw.is_empty() || !raw[0].is_ascii_digit() {
        return Err(bad());
    }
    let mut total: u64 = 0;
    let mut number: Option<u64> = None;
    for &c in raw {
        if c.is_ascii_digit() {
            let n = number.unwrap_or(0) * 10 + u64::from(c - b'0');
            if n > u64::from(u32::MAX) {
                return Err(format!("{what} '{}' out of range (0-{max})", show(raw)));
            }
            number = Some(n);
            continue;
        }
        let unit = match c.to_ascii_lowercase() {
            b's' => 1,
            b'm' => 60,
            b'h' => 3600,
            b'd' => 86_400,
            b'w' => 604_800,
            _ => return Err(bad()),
        };
        total += number.take().ok_or_else(bad)? * unit;
        if total > u64::from(u32::MAX) {
            return Err(format!("{what} '{}' out of range (0-{max})", show(raw)));
        }
    }
    total += number.unwrap_or(0);
    if total > u64::from(max) {
        return Err(format!("{what} '{}' out of range (0-{max})", show(raw)));
    }
    Ok(total as u32)
}

/// A record TTL (at most 2^31 - 1).
pub(crate) fn parse_ttl(raw: &[u8]) -> Result<u32, String> {
    parse_duration(raw, MAX_TTL, "TTL")
}

/// An RRSIG timestamp: `YYYYMMDDHHmmSS` (UTC) or seconds since the epoch.
pub(crate) fn parse_timestamp(raw: &[u8], what: &str) -> Result<u32, String> {
    if raw.len() != 14 {
        return parse_u32(raw, what);
    }
    let bad = |why: &str| format!("bad {what} '{}': {why}", show(raw));
    if !raw.iter().all(u8::is_ascii_digit) {
        return Err(bad("expected YYYYMMDDHHmmSS"));
    }
    let num = |r: std::ops::Range<usize>| {
        raw[r]
            .iter()
            .fold(0i64, |acc, d| acc * 10 + i64::from(d - b'0'))
    };
    let (year, month, day) = (num(0..4), num(4..6), num(6..8));
    let (hour, minute, second) = (num(8..10), num(10..12), num(12..14));
    if !(1..=12).contains(&month) {
        return Err(bad("month out of range"));
    }
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let month_days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if day < 1 || day > month_days[(month - 1) as usize] {
        return Err(bad("day out of range"));
    }
    if hour > 23 || minute > 59 || second > 59 {
        return Err(bad("time of day out of range"));
    }
    let seconds = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second;
    u32::try_from(seconds).map_err(|_| bad("outside 1970-2106"))
}

/// Decodes hexadecimal (either case), the pieces concatenated.
pub(crate) fn decode_hex<'a, I: IntoIterator<Item = &'a [u8]>>(
    pieces: I,
) -> Result<Vec<u8>, String> {
    let mut d = HexDecoder::new();
    for piece in pieces {
        for &c in piece {
            d.push(c)
                .map_err(|_| format!("bad hex digit '{}' in '{}'", c as char, show(piece)))?;
        }
    }
    d.finish()
        .map_err(|_| "bad hex: odd number of digits".into())
}

/// Decodes standard base64 with `=` padding, the pieces concatenated.
pub(crate) fn decode_base64<'a, I: IntoIterator<Item = &'a [u8]>>(
    pieces: I,
) -> Result<Vec<u8>, String> {
    let mut d = Base64Decoder::new();
    for piece in pieces {
        for &c in piece {
            d.push(c).map_err(|e| match e {
                EncodingError::DataAfterPadding => "bad base64: data after '=' padding".into(),
                _ => format!("bad base64 character '{}' in '{}'", c as char, show(piece)),
            })?;
        }
    }
    d.finish_strict()
        .map_err(|_| "bad base64: length is not a multiple of 4 or wrong padding".into())
}

/// Decodes base32hex without padding (RFC 4648 §7), either case, as NSEC3
/// writes hashed owner names.
pub(crate) fn decode_base32hex(raw: &[u8]) -> Result<Vec<u8>, String> {
    let mut d = Base32hexDecoder::new();
    for &c in raw {
        d.push(c)
            .map_err(|_| format!("bad base32hex character '{}' in '{}'", c as char, show(raw)))?;
    }
    d.finish_strict()
        .map_err(|_| format!("bad base32hex length or trailing bits in '{}'", show(raw)))
}

/// A dotted-quad IPv4 address.
pub(crate) fn ipv4(raw: &[u8]) -> Result<Ipv4Addr, String> {
    std::str::from_utf8(raw)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("bad IPv4 address '{}'", show(raw)))
}

/// An IPv6 address in any RFC 4291 text form.
pub(crate) fn ipv6(raw: &[u8]) -> Result<Ipv6Addr, String> {
    std::str::from_utf8(raw)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("bad IPv6 address '{}'", show(raw)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_ttl(b"3600"), Ok(3600));
        assert_eq!(parse_ttl(b"1h30m"), Ok(5400));
        assert_eq!(parse_ttl(b"1D"), Ok(86_400));
        assert_eq!(parse_ttl(b"2w"), Ok(1_209_600));
        assert_eq!(parse_ttl(b"1h5"), Ok(3605));
        assert!(parse_ttl(b"1x").is_err());
        assert!(parse_ttl(b"h").is_err());
        assert!(parse_ttl(b"2147483648")
            .unwrap_err()
            .contains("out of range"));
        assert!(parse_ttl(b"99999999999999").is_err());
    }

    #[test]
    fn timestamps() {
        assert_eq!(parse_timestamp(b"19700101000000", "t"), Ok(0));
        // 2000-03-01 is day 11017.
        assert_eq!(parse_timestamp(b"20000301000000", "t"), Ok(11_017 * 86_400));
        assert_eq!(parse_timestamp(b"20240229120000", "t"), Ok(1_709_208_000));
        assert_eq!(parse_timestamp(b"1709208000", "t"), Ok(1_709_208_000));
        assert!(parse_timestamp(b"20230229000000", "t").is_err());
        assert!(parse_timestamp(b"21070101000000", "t").is_err());
    }

    #[test]
    fn encodings() {
        assert_eq!(decode_hex([&b"0aFf"[..], b"10"]), Ok(vec![10, 255, 16]));
        assert!(decode_hex([&b"abc"[..]]).is_err());
        assert!(decode_hex([&b"zz"[..]]).is_err());
        assert_eq!(decode_base64([&b"aGVsbG8="[..]]), Ok(b"hello".to_vec()));
        assert_eq!(
            decode_base64([&b"aGVs"[..], b"bG8h"]),
            Ok(b"hello!".to_vec())
        );
        assert_eq!(decode_base64([&b"aA=="[..]]), Ok(b"h".to_vec()));
        assert!(decode_base64([&b"aGVsbG8"[..]]).is_err());
        assert!(decode_base64([&b"aG=sbG8="[..]]).is_err());
        assert!(decode_base64([&b"a*=="[..]]).is_err());
        assert_eq!(decode_base32hex(b"CPNMUOJ1"), Ok(b"fooba".to_vec()));
        assert_eq!(decode_base32hex(b"cpnmuoj1e8"), Ok(b"foobar".to_vec()));
        assert!(decode_base32hex(b"CPNMUOJ1W").is_err());
    }

    #[test]
    fn names_keep_case() {
        let origin: Name = "Example.COM.".parse().unwrap();
        let mut out = Vec::new();
        push_name(b"Mail", &origin, &mut out).unwrap();
        assert_eq!(out, b"\x04Mail\x07example\x03com\x00");
        out.clear();
        push_name(b"A\\.b\\067.", &origin, &mut out).unwrap();
        assert_eq!(out, b"\x04A.bC\x00");
        assert!(push_name(b"a..b", &origin, &mut out).is_err());
        let long = "x".repeat(64);
        assert!(push_name(long.as_bytes(), &origin, &mut out)
            .unwrap_err()
            .contains("label longer than 63"));
    }
}
