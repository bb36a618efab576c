//! IXFR replies checked against the zone: transfers by `dig` as record
//! lines, an incremental reply applied to the zone a secondary held.
//!
//! ```text
//!  transfer_lines(port, zone, kind, extra) ─► dig's records, one
//!     normalised line each (TSIG left out); panics unless an SOA leads
//!  axfr_set(port, zone) ─► the zone as a set, its SOA once
//!  apply_ixfr(zone, lines) ─► incremental: each change applied (true);
//!     the whole zone (AXFR form): taken as it is (false)
//!  serial_after(port, zone, serial) ─► waits until the served serial moves
//!  ixfr_query(zone, serial) ─► an IXFR query built by hand (SOA in authority)
//! ```

use crate::{build_query, dig_transfer_with, record_lines, soa_serial};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// A transfer (`kind`: `AXFR`, `IXFR=<serial>`, `SOA`) of `zone` by dig
/// with `extra` options (`+notcp`, `-y …`): one normalised line per
/// record, the TSIG left out. Panics unless the first record is an SOA.
pub fn transfer_lines(port: u16, zone: &str, kind: &str, extra: &[&str]) -> Vec<String> {
    let text = dig_transfer_with(port, zone, kind, extra);
    let lines: Vec<String> = record_lines(&text)
        .into_iter()
        .filter(|l| l.split(' ').nth(3) != Some("tsig"))
        .collect();
    assert!(
        !lines.is_empty() && is_soa(&lines[0]),
        "{kind} failed: {text}"
    );
    lines
}

/// True when a line of [`transfer_lines`] is an SOA record.
pub fn is_soa(line: &str) -> bool {
    line.split(' ').nth(3) == Some("soa")
}

/// The serial of an SOA line of [`transfer_lines`].
pub fn serial_of(soa: &str) -> u32 {
    soa.split(' ').nth(6).unwrap().parse().unwrap()
}

/// The zone by AXFR, as a set (the SOA once).
pub fn axfr_set(port: u16, zone: &str) -> BTreeSet<String> {
    let lines = transfer_lines(port, zone, "AXFR", &[]);
    lines[..lines.len() - 1].iter().cloned().collect()
}

/// Applies an incremental IXFR's changes to `zone`; false when the reply
/// was the whole zone instead (then `zone` becomes it).
pub fn apply_ixfr(zone: &mut BTreeSet<String>, ixfr: &[String]) -> bool {
    if !is_soa(&ixfr[1]) || ixfr.len() == 2 {
        *zone = ixfr[..ixfr.len() - 1].iter().cloned().collect();
        return false;
    }
    let last = ixfr.len() - 1;
    // The first SOA after ours opens removals (the toggle starts there).
    let (mut i, mut adding) = (1, true);
    while i < last {
        let line = &ixfr[i];
        if is_soa(line) {
            // An old SOA opens the removals, a new one the additions.
            adding = !adding;
            zone.retain(|l| !is_soa(l));
            if adding {
                zone.insert(line.clone());
            }
        } else if adding {
            zone.insert(line.clone());
        } else {
            assert!(
                zone.remove(line),
                "IXFR removes {line}, which the old zone lacks"
            );
        }
        i += 1;
    }
    assert_eq!(ixfr[last], ixfr[0], "the closing SOA is the current one");
    true
}

/// Waits until the serial of `zone` served on `port` is no longer
/// `serial` (5 s at most) and returns the new one.
pub fn serial_after(port: u16, zone: &str, serial: u32) -> u32 {
    let started = Instant::now();
    loop {
        match soa_serial(port, zone) {
            Some(now) if now != serial => return now,
            _ => {}
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "serial of {zone} still {serial}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// An IXFR query (ID 0x1F0, no EDNS) carrying `serial` in an SOA in the
/// authority section (RFC 1995 §3).
pub fn ixfr_query(zone: &str, serial: u32) -> Vec<u8> {
    let mut q = build_query(0x1F0, zone, 251, None, false);
    q[9] = 1; // NSCOUNT
    q.extend_from_slice(&[0xC0, 0x0C, 0, 6, 0, 1, 0, 0, 0, 0, 0, 24]);
    q.extend_from_slice(&[0xC0, 0x0C, 0xC0, 0x0C]);
    q.extend_from_slice(&serial.to_be_bytes());
    q.extend_from_slice(&[0; 16]);
    q
}
