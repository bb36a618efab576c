//! The pieces every printer uses: integers at an offset, names, quoted
//! strings, RRSIG times.
//!
//! ```text
//!  rd, offset ─► u16_at / u32_at / uint_at ─► number (None past the end)
//!  bytes ─► quoted: "..." with \" \\ and \DDD ─► parses back byte for byte
//! ```

use std::fmt::Write as _;

use crate::civil::civil_from_days;
use crate::encoding::to_hex;
use crate::name::wire_name_text;

/// Upper-case hex, as zone files usually show digests.
pub(super) fn hex(bytes: &[u8]) -> String {
    to_hex(bytes).to_uppercase()
}

/// The big-endian integer of `width` octets (1 to 8) at `at`.
pub(super) fn uint_at(rd: &[u8], at: usize, width: usize) -> Option<u64> {
    let bytes = rd.get(at..at.checked_add(width)?)?;
    Some(bytes.iter().fold(0, |acc, b| acc << 8 | u64::from(*b)))
}

/// The 16-bit integer at `at`.
pub(super) fn u16_at(rd: &[u8], at: usize) -> Option<u16> {
    uint_at(rd, at, 2).map(|v| v as u16)
}

/// The 32-bit integer at `at`.
pub(super) fn u32_at(rd: &[u8], at: usize) -> Option<u32> {
    uint_at(rd, at, 4).map(|v| v as u32)
}

/// The name at `at` in presentation form, and the offset after it.
pub(super) fn name_at(rd: &[u8], at: usize) -> Option<(String, usize)> {
    wire_name_text(rd, at)
}

/// `bytes` in double quotes: `"` and `\` escaped, bytes outside printable
/// ASCII as `\DDD`.
pub(super) fn quoted(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 2);
    out.push('"');
    for &b in bytes {
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
    out
}

/// The `<character-string>` at `at`, quoted, and the offset after it.
pub(super) fn char_string(rd: &[u8], at: usize) -> Option<(String, usize)> {
    let len = *rd.get(at)? as usize;
    let s = rd.get(at + 1..at + 1 + len)?;
    Some((quoted(s), at + 1 + len))
}

/// RRSIG time field as YYYYMMDDHHmmSS (RFC 4034 §3.2).
pub(super) fn time_text(t: u32) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_civil_dates() {
        assert_eq!(time_text(0), "19700101000000");
        assert_eq!(time_text(1_700_000_000), "20231114221320");
    }

    #[test]
    fn quoting_escapes() {
        assert_eq!(quoted(b"a\"\\\x00\xff"), r#""a\"\\\000\255""#);
    }
}
