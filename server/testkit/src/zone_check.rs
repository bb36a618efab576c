//! Whole-zone checks with real tools: the zone as served, by AXFR through
//! `dig`, and DNSSEC validity by BIND's and ldns's verifiers.
//!
//! ```text
//!  dig_transfer(port, zone, kind) ─► dig's records (AXFR, IXFR=N, SOA);
//!     dig_transfer_with: the same with more options (+notcp, -y …)
//!  axfr_text(port, zone) ─► dig AXFR ─► the zone file text (two SOAs, or panic)
//!  comparable_transfer(text) ─► SOA, the records sorted, SOA (two transfers compared)
//!  verify_signed_zone(dir, zone, text) ─► dnssec-verify -o zone ─► ldns-verify-zone
//!  verify_served_zone(port, dir, zone) ─► the same on axfr_text
//! ```

use std::path::Path;
use std::process::Command;

/// What `dig` prints for `kind` (`AXFR`, `IXFR=<serial>`, `SOA`, …) of
/// `zone` asked of the server on `port`: records only, no comments.
pub fn dig_transfer(port: u16, zone: &str, kind: &str) -> String {
    dig_transfer_with(port, zone, kind, &[])
}

/// As [`dig_transfer`], with `extra` options after the usual ones
/// (`+notcp`, `+noedns`, `-y …`, `+comments` to see the status).
pub fn dig_transfer_with(port: u16, zone: &str, kind: &str, extra: &[&str]) -> String {
    let out = Command::new("dig")
        .args(["@127.0.0.1", "-p", &port.to_string(), zone, kind])
        .args([
            "+nocmd",
            "+nostats",
            "+nocomments",
            "+noquestion",
            "+time=10",
        ])
        .args(extra)
        .output()
        .expect("dig is needed (bind9-dnsutils)");
    String::from_utf8_lossy(&out.stdout).to_string()
}

/// The records of dig's `text`, one a line, comments and blank lines
/// left out, spacing made single and letters lower case (comparable).
pub fn record_lines(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.starts_with(';') && !l.trim().is_empty())
        .map(|l| {
            l.split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .to_lowercase()
        })
        .collect()
}

/// The records of an AXFR's `text` as two transfers are compared: the
/// SOA first and last as sent, the records between them sorted (a
/// transfer's order is the database's, RFC 5936 asks none). Panics unless
/// the transfer opens and closes with the same SOA.
pub fn comparable_transfer(text: &str) -> Vec<String> {
    let mut lines = record_lines(text);
    let soa = |l: &String| l.split(' ').nth(3) == Some("soa");
    assert!(
        lines.len() >= 2 && soa(&lines[0]) && lines.first() == lines.last(),
        "not framed by the SOA: {text}"
    );
    let last = lines.len() - 1;
    lines[1..last].sort();
    lines
}

/// The zone `zone` as the server on `port` serves it, by AXFR (`dig`);
/// panics unless the transfer is whole (it starts and ends with the SOA).
pub fn axfr_text(port: u16, zone: &str) -> String {
    let text = dig_transfer(port, zone, "AXFR");
    assert!(text.matches("\tSOA\t").count() >= 2, "AXFR failed: {text}");
    text
}

/// Asserts that both `dnssec-verify` and `ldns-verify-zone` accept the
/// signed zone `zone` given as master-file `text` (written into `dir`).
pub fn verify_signed_zone(dir: &Path, zone: &str, text: &str) {
    let file = dir.join("served.zone");
    std::fs::write(&file, text).unwrap();
    let o = Command::new("dnssec-verify")
        .args(["-o", zone])
        .arg(&file)
        .output()
        .expect("dnssec-verify is needed (bind9-utils)");
    assert!(
        o.status.success(),
        "dnssec-verify: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let o = Command::new("ldns-verify-zone")
        .arg(&file)
        .output()
        .expect("ldns-verify-zone is needed (ldnsutils)");
    assert!(
        o.status.success(),
        "ldns-verify-zone: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Asserts that the zone `zone` the server on `port` transfers (AXFR)
/// verifies ([`verify_signed_zone`], written into `dir`).
pub fn verify_served_zone(port: u16, dir: &Path, zone: &str) {
    verify_signed_zone(dir, zone, &axfr_text(port, zone));
}
