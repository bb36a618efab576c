//! LOC (RFC 1876) as text, the inverse of `presentation/loc.rs`.
//!
//! ```text
//!  VERSION(0) SIZE HP VP LAT LON ALT ─► "d m s.sss N d m s.sss E alt.ccm size.ccm hp.ccm vp.ccm"
//!  SIZE/HP/VP: mantissa 0-9 << 4 | exponent 0-9, centimetres (0 only as 0x00)
//!  LAT/LON: 2^31 ± thousandths of an arc second; ALT: cm above -100 000 m
//! ```

use super::fields::u32_at;

/// The wire value 0 of the altitude is 100 000 m below the reference.
const ALT_BASE_CM: i64 = 10_000_000;

/// LOC version 0, 16 octets, with sizes and coordinates the parser reads back.
pub(super) fn loc(rd: &[u8]) -> Option<String> {
    if rd.len() != 16 || rd[0] != 0 {
        return None;
    }
    let lat = coordinate(u32_at(rd, 4)?, 90, ['N', 'S'])?;
    let lon = coordinate(u32_at(rd, 8)?, 180, ['E', 'W'])?;
    let alt = i64::from(u32_at(rd, 12)?) - ALT_BASE_CM;
    let mut out = format!("{lat} {lon} {}", metres(alt));
    for &b in &rd[1..4] {
        out.push(' ');
        out.push_str(&metres(precision_cm(b)?));
    }
    Some(out)
}

/// `d m s.sss H`, or `None` beyond `max_degrees`.
fn coordinate(wire: u32, max_degrees: i64, hemispheres: [char; 2]) -> Option<String> {
    let offset = i64::from(wire) - (1 << 31);
    let millis = offset.abs();
    if millis > max_degrees * 3_600_000 {
        return None;
    }
    let hemisphere = hemispheres[usize::from(offset < 0)];
    Some(format!(
        "{} {} {}.{:03} {hemisphere}",
        millis / 3_600_000,
        millis / 60_000 % 60,
        millis / 1000 % 60,
        millis % 1000
    ))
}

/// A size or precision octet in centimetres; `None` for a digit above 9
/// or a zero mantissa with an exponent (which would not read back).
fn precision_cm(b: u8) -> Option<i64> {
    let (mantissa, exponent) = (i64::from(b >> 4), u32::from(b & 15));
    let valid = mantissa <= 9 && exponent <= 9 && (mantissa > 0 || exponent == 0);
    valid.then(|| mantissa * 10i64.pow(exponent))
}

/// Centimetres as metres: `-24m`, `0.5` as `0.50m`.
fn metres(cm: i64) -> String {
    let sign = if cm < 0 { "-" } else { "" };
    let cm = cm.abs();
    match cm % 100 {
        0 => format!("{sign}{}m", cm / 100),
        frac => format!("{sign}{}.{frac:02}m", cm / 100),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces() {
        assert_eq!(metres(-2400), "-24m");
        assert_eq!(metres(50), "0.50m");
        assert_eq!(metres(-5), "-0.05m");
        assert_eq!(precision_cm(0x12), Some(100));
        assert_eq!(precision_cm(0x00), Some(0));
        assert_eq!(precision_cm(0x05), None);
        assert_eq!(precision_cm(0xa0), None);
        assert_eq!(coordinate(1 << 31, 90, ['N', 'S']).unwrap(), "0 0 0.000 N");
        assert_eq!(
            coordinate((1 << 31) - 1, 90, ['N', 'S']).unwrap(),
            "0 0 0.001 S"
        );
        assert!(coordinate(u32::MAX, 90, ['N', 'S']).is_none());
    }
}
