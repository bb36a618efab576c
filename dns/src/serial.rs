//! SOA serial numbers: reading and writing the serial inside SOA rdata, and
//! comparing serials in RFC 1982 arithmetic.
//!
//! ```text
//!  rdata = MNAME RNAME SERIAL REFRESH RETRY EXPIRE MINIMUM
//!                      ▲ soa_serial / set_soa_serial
//!                      ▲ serial_at: the same read after names found elsewhere
//!  serial_gt(a, b): a is "after" b, wrapping at 2^32 (RFC 1982)
//! ```

use crate::Name;

/// The serial of an SOA rdata (after MNAME and RNAME).
pub fn soa_serial(rdata: &[u8]) -> Option<u32> {
    let at = soa_serial_offset(rdata)?;
    serial_at(rdata, at, rdata.len())
}

/// The SERIAL field at `at`, if the five 32-bit fields that start there
/// (SERIAL REFRESH RETRY EXPIRE MINIMUM) end by `end`: for callers that
/// find the end of the names themselves (a message, where they may be
/// compressed).
pub fn serial_at(bytes: &[u8], at: usize, end: usize) -> Option<u32> {
    let b = bytes.get(at..at + 4)?;
    (at + 20 <= end).then(|| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// Writes `serial` into SOA rdata (nothing happens to malformed rdata).
pub fn set_soa_serial(rdata: &mut [u8], serial: u32) {
    if let Some(at) = soa_serial_offset(rdata) {
        rdata[at..at + 4].copy_from_slice(&serial.to_be_bytes());
    }
}

fn soa_serial_offset(rdata: &[u8]) -> Option<usize> {
    let (_, a) = Name::from_wire_prefix(rdata).ok()?;
    let (_, b) = Name::from_wire_prefix(rdata.get(a..)?).ok()?;
    let at = a + b;
    (rdata.len() >= at + 20).then_some(at)
}

/// `a > b` in serial number arithmetic (RFC 1982).
pub fn serial_gt(a: u32, b: u32) -> bool {
    a != b && a.wrapping_sub(b) < 0x8000_0000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serial_arithmetic_wraps() {
        assert!(serial_gt(2, 1));
        assert!(!serial_gt(1, 2));
        assert!(serial_gt(0, u32::MAX));
        assert!(!serial_gt(5, 5));
        assert!(serial_gt(5, 0xFFFF_FFF0));
        assert!(!serial_gt(0xFFFF_FFF0, 5));
    }

    #[test]
    fn soa_serial_is_read_and_written() {
        let mut rdata = b"\x02ns\x00\x05admin\x00".to_vec();
        rdata.extend_from_slice(&42u32.to_be_bytes());
        rdata.extend_from_slice(&[0; 16]);
        assert_eq!(soa_serial(&rdata), Some(42));
        set_soa_serial(&mut rdata, 43);
        assert_eq!(soa_serial(&rdata), Some(43));
        assert_eq!(soa_serial(&rdata[..10]), None);
        assert_eq!(soa_serial(b"\x02ns\x00"), None);
    }
}
