//! LOC (RFC 1876): `d [m [s]] N|S d [m [s]] E|W alt[m] [size[m] [hp[m] [vp[m]]]]`.
//!
//! ```text
//!  wire: VERSION(0) SIZE HORIZ_PRE VERT_PRE | LATITUDE(u32) | LONGITUDE(u32) | ALTITUDE(u32)
//!  SIZE/PRE: mantissa<<4 | exponent, in centimetres (1m = 0x12)
//!  LAT/LON: 2^31 ± thousandths of an arc second (north/east positive)
//!  ALT: centimetres above 100 000 m below the WGS 84 spheroid
//! ```

use super::fields::Fields;
use super::text::show;

/// Size, horizontal and vertical precision when omitted: 1m, 10km, 10m.
const DEFAULTS_CM: [u64; 3] = [100, 1_000_000, 1_000];
/// Largest size or precision: 9e9 cm.
const MAX_PRECSIZE_CM: u64 = 9_000_000_000;
/// Altitude offset: the wire value 0 is 100 000 m below the reference.
const ALT_BASE_CM: i64 = 10_000_000;

pub(crate) fn parse(f: &mut Fields<'_>, out: &mut Vec<u8>) -> Result<(), String> {
    let lat = coordinate(f, 90, [b'N', b'S'], "latitude")?;
    let lon = coordinate(f, 180, [b'E', b'W'], "longitude")?;
    let alt_raw = f.raw("altitude")?;
    let alt = centimetres(alt_raw, true, "altitude")? + ALT_BASE_CM;
    let alt =
        u32::try_from(alt).map_err(|_| format!("altitude '{}' out of range", show(alt_raw)))?;
    let mut precs = [0u8; 3];
    for (i, what) in ["size", "horizontal precision", "vertical precision"]
        .into_iter()
        .enumerate()
    {
        let cm = match f.peek() {
            Some(_) => {
                let raw = f.raw(what)?;
                let cm = centimetres(raw, false, what)? as u64;
                if cm > MAX_PRECSIZE_CM {
                    return Err(format!("LOC {what} '{}' above 90000000m", show(raw)));
                }
                cm
            }
            None => DEFAULTS_CM[i],
        };
        precs[i] = precsize(cm);
    }
    out.push(0);
    out.extend_from_slice(&precs);
    out.extend_from_slice(&lat.to_be_bytes());
    out.extend_from_slice(&lon.to_be_bytes());
    out.extend_from_slice(&alt.to_be_bytes());
    Ok(())
}

/// Degrees, optional minutes and seconds, then a hemisphere letter.
fn coordinate(
    f: &mut Fields<'_>,
    max_degrees: u64,
    hemispheres: [u8; 2],
    what: &str,
) -> Result<u32, String> {
    let is_hemisphere =
        |raw: &[u8]| raw.len() == 1 && hemispheres.contains(&raw[0].to_ascii_uppercase());
    let degrees = integer(f.raw(what)?, max_degrees, &format!("{what} degrees"))?;
    let mut minutes = 0;
    let mut millis = 0;
    let mut raw = f.raw(what)?;
    if !is_hemisphere(raw) {
        minutes = integer(raw, 59, &format!("{what} minutes"))?;
        raw = f.raw(what)?;
        if !is_hemisphere(raw) {
            millis = seconds(raw, what)?;
            raw = f.raw(what)?;
        }
    }
    if !is_hemisphere(raw) {
        return Err(format!(
            "bad LOC {what}: expected {} or {}, got '{}'",
            hemispheres[0] as char,
            hemispheres[1] as char,
            show(raw)
        ));
    }
    let total = (degrees * 60 + minutes) * 60_000 + millis;
    if total > max_degrees * 3_600_000 {
        return Err(format!("LOC {what} beyond {max_degrees} degrees"));
    }
    let total = total as u32;
    Ok(if raw[0].to_ascii_uppercase() == hemispheres[0] {
        (1 << 31) + total
    } else {
        (1 << 31) - total
    })
}

fn integer(raw: &[u8], max: u64, what: &str) -> Result<u64, String> {
    super::text::parse_uint(raw, max, &format!("LOC {what}"))
}

/// Seconds with up to three decimals, below 60, as thousandths.
fn seconds(raw: &[u8], what: &str) -> Result<u64, String> {
    let bad = || format!("bad LOC {what} seconds '{}'", show(raw));
    let v = decimal(raw, 3).ok_or_else(bad)?;
    if v >= 60_000 {
        return Err(bad());
    }
    Ok(v)
}

/// `[-]digits[.dd][m]` in centimetres.
fn centimetres(raw: &[u8], signed: bool, what: &str) -> Result<i64, String> {
    let bad = || format!("bad LOC {what} '{}': expected metres like 12.5m", show(raw));
    let mut text = raw;
    if let Some(stripped) = text.strip_suffix(b"m").or(text.strip_suffix(b"M")) {
        text = stripped;
    }
    let (negative, digits) = match text.strip_prefix(b"-") {
        Some(rest) if signed => (true, rest),
        Some(_) => return Err(bad()),
        None => (false, text),
    };
    let v = decimal(digits, 2).ok_or_else(bad)? as i64;
    Ok(if negative { -v } else { v })
}

/// `digits[.fraction]` scaled by 10^`places` (at most `places` decimals).
fn decimal(raw: &[u8], places: u32) -> Option<u64> {
    let (int, frac) = match raw.iter().position(|&b| b == b'.') {
        Some(i) => (&raw[..i], &raw[i + 1..]),
        None => (raw, &raw[raw.len()..]),
    };
    if int.is_empty() || int.len() > 12 || frac.len() > places as usize {
        return None;
    }
    if !int.iter().chain(frac).all(u8::is_ascii_digit) {
        return None;
    }
    let mut v = 0u64;
    for &d in int {
        v = v * 10 + u64::from(d - b'0');
    }
    for i in 0..places as usize {
        v = v * 10 + frac.get(i).map_or(0, |d| u64::from(d - b'0'));
    }
    Some(v)
}

/// RFC 1876 size/precision encoding: mantissa (high nibble) and power of
/// ten (low nibble) of a value in centimetres, rounded down.
fn precsize(cm: u64) -> u8 {
    let mut exponent = 0u32;
    while exponent < 9 && cm >= 10u64.pow(exponent + 1) {
        exponent += 1;
    }
    let mantissa = (cm / 10u64.pow(exponent)).min(9) as u8;
    mantissa << 4 | exponent as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precision_encoding() {
        assert_eq!(precsize(100), 0x12);
        assert_eq!(precsize(1_000_000), 0x16);
        assert_eq!(precsize(1_000), 0x13);
        assert_eq!(precsize(3_000), 0x33);
        assert_eq!(precsize(0), 0x00);
        assert_eq!(precsize(9_000_000_000), 0x99);
        assert_eq!(precsize(150), 0x12);
    }

    #[test]
    fn decimals() {
        assert_eq!(decimal(b"43.952", 3), Some(43_952));
        assert_eq!(decimal(b"6.3", 3), Some(6_300));
        assert_eq!(decimal(b"7", 2), Some(700));
        assert_eq!(decimal(b"1.234", 2), None);
        assert_eq!(decimal(b".5", 2), None);
        assert_eq!(centimetres(b"-24m", true, "a"), Ok(-2400));
        assert!(centimetres(b"-24m", false, "a").is_err());
    }
}
