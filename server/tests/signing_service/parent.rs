//! The parent's operator, as a registry that follows CDS (RFC 7344/8078):
//! the child's CDS set, as served, becomes the parent's DS set.
//!
//! ```text
//!  follow_cds ─► dig CDS of the child ─► differs from the parent's DS?
//!     ─► mongodns-zone replace-rrset PARENT CHILD DS (signed by the edit)
//! ```

use mongodns_testkit::binary;
use std::process::Command;

/// The records of `name`/`qtype` from the server on `port`, one
/// normalised line each (hex and base64 without spaces), sorted.
pub fn records(port: u16, name: &str, qtype: &str) -> Vec<String> {
    let out = Command::new("dig")
        .args([
            "+short",
            "+norec",
            "-p",
            &port.to_string(),
            "@127.0.0.1",
            name,
            qtype,
        ])
        .output()
        .expect("dig is needed (bind9-dnsutils)");
    let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            let cut = words.len().min(3);
            format!("{} {}", words[..cut].join(" "), words[cut..].join(""))
        })
        .collect();
    lines.sort();
    lines
}

/// Makes the parent's DS set for `child` what the child's CDS set is;
/// true when it changed something.
pub fn follow_cds(uri: &str, db: &str, port: u16, parent: &str, child: &str) -> bool {
    let cds = records(port, child, "CDS");
    if cds.is_empty() || cds == records(port, child, "DS") {
        return false;
    }
    let owner = child.trim_end_matches(parent).trim_end_matches('.');
    let out = Command::new(binary("mongodns-zone"))
        .args([
            "--mongodb-uri",
            uri,
            "--database",
            db,
            "replace-rrset",
            "--ttl",
            "2",
        ])
        .args([parent, owner, "DS"])
        .args(&cds)
        .output()
        .expect("mongodns-zone");
    assert!(
        out.status.success(),
        "replace-rrset DS: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    true
}
