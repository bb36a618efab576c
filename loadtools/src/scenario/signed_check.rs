//! The end of the seed scenario: is the zone that was signed while the
//! import wrote into it served whole, and does it verify?
//!
//! ```text
//!  dig AXFR (through the server; one try, each message waited for up to
//!  TRANSFER_WAIT_S: a resident zone's transfer first waits for the copy
//!  of the signed version being loaded, and on FerretDB a transfer read
//!  from the database sorts the whole version before its first node)
//!     ─► zone file in the work dir
//!     ├─ dnssec-verify -o <apex>     (BIND's verdict on every signature
//!     │                               and the whole NSEC/NSEC3 chain)
//!     └─ owner names ⊇ every name the steady import wrote?
//! ```

use std::collections::HashSet;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;

/// Seconds dig waits for each message of the transfer.
const TRANSFER_WAIT_S: u32 = 1800;

/// What the check found.
#[derive(Clone, Debug, Default)]
pub struct SignedCheck {
    /// Records in the transfer.
    pub records: u64,
    /// Seconds the transfer took, from the question to its last message.
    pub transfer_secs: f64,
    /// `dnssec-verify` accepted the zone.
    pub verified: bool,
    /// Its verdict (last lines), or why it did not run.
    pub verdict: String,
    /// Names of the steady import looked for.
    pub expected: u64,
    /// Of those, names missing from the transfer.
    pub missing: u64,
}

impl SignedCheck {
    /// True when the zone verified and held every expected name.
    pub fn passed(&self) -> bool {
        self.verified && self.missing == 0 && self.records > 0
    }
}

/// True when dig's output says the transfer failed (a SERVFAIL, REFUSED
/// or NOTAUTH reply instead of the zone).
fn transfer_failed(stdout: &[u8]) -> bool {
    String::from_utf8_lossy(stdout)
        .lines()
        .any(|l| l.starts_with("; Transfer failed"))
}

/// Transfers `apex` from `server`, verifies it, and counts which of
/// `expected` (absolute names, lower case) it lacks.
pub fn check_signed_zone(
    server: SocketAddr,
    apex: &str,
    expected: impl Iterator<Item = String>,
    work: &Path,
) -> SignedCheck {
    let mut check = SignedCheck::default();
    let started = std::time::Instant::now();
    let wait = format!("+time={TRANSFER_WAIT_S}");
    let out = Command::new("dig")
        .args([
            &format!("@{}", server.ip()),
            "-p",
            &server.port().to_string(),
            apex,
            "AXFR",
            "+nocmd",
            "+nostats",
            "+nocomments",
            "+noquestion",
            &wait,
            "+tries=1",
        ])
        .output();
    check.transfer_secs = started.elapsed().as_secs_f64();
    let text = match out {
        // dig exits 0 when the server refused or failed the transfer; it
        // says so on stdout instead of a zone.
        Ok(o) if o.status.success() && !transfer_failed(&o.stdout) => {
            String::from_utf8_lossy(&o.stdout).to_string()
        }
        Ok(o) => {
            // dig writes its own errors (a timeout, a refusal) to stdout.
            let said = [&o.stderr, &o.stdout]
                .iter()
                .map(|b| String::from_utf8_lossy(b).trim().to_string())
                .filter(|t| !t.is_empty())
                .collect::<Vec<_>>()
                .join("; ");
            check.verdict = format!("AXFR failed ({}): {said}", o.status);
            return check;
        }
        Err(e) => {
            check.verdict = format!("dig (bind9-dnsutils) could not run: {e}");
            return check;
        }
    };
    let mut owners = HashSet::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with(';') && !l.is_empty())
    {
        check.records += 1;
        if let Some(owner) = line.split_whitespace().next() {
            owners.insert(owner.to_ascii_lowercase());
        }
    }
    for name in expected {
        check.expected += 1;
        if !owners.contains(&name) {
            check.missing += 1;
        }
    }
    let file = work.join("signed-at-end.zone");
    if let Err(e) = std::fs::write(&file, &text) {
        check.verdict = format!("{}: {e}", file.display());
        return check;
    }
    match Command::new("dnssec-verify")
        .args(["-o", apex])
        .arg(&file)
        .output()
    {
        Ok(o) => {
            check.verified = o.status.success();
            let all = format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
            let lines: Vec<&str> = all.lines().filter(|l| !l.trim().is_empty()).collect();
            check.verdict = lines[lines.len().saturating_sub(3)..].join(" / ");
        }
        Err(e) => check.verdict = format!("dnssec-verify (bind9-utils) could not run: {e}"),
    }
    check
}

#[cfg(test)]
mod tests {
    use super::transfer_failed;

    #[test]
    fn a_failed_transfer_is_told_from_a_zone() {
        assert!(transfer_failed(b"; Transfer failed.\n"));
        assert!(!transfer_failed(
            b"example.com.\t300\tIN\tSOA\tns1 h 1 2 3 4 5\n"
        ));
    }
}
