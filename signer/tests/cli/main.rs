//! The `mongodns-sign` binary against a real database: error messages and
//! exit status, key rollovers, private keys never printed, old versions
//! left for cleanup and collected, and progress reports.
//!
//! ```text
//!  Db (example.net. in a fresh database) ─► mongodns-sign <command> ─► Output
//!     ─► exit status, stderr; export ─► dnssec-verify
//!  output.rs    errors, exit status, a clean exit, progress reports
//!  keys.rs      ZSK and KSK rollovers, CDS/CDNSKEY, no private key shown
//!  versions.rs  replaced and pending versions collected, never served
//!  follow.rs    resign --follow, and kept signers, beside other writers
//! ```
//!
//! This file holds the database and the checks every topic shares.

mod follow;
mod keys;
mod output;
mod versions;

use backend_mongo::testing::{block_on, database_uri, example_net, runtime, unique_name, TestDb};
use backend_mongo::{NodeWrite, WriteMode};
use dns::{Name, RRset, RType};
use std::ops::Deref;
use std::process::{Command, Output};
use std::time::Duration;

/// A test database holding the small zone `example.net.`, and
/// mongodns-sign run against it.
struct Db(TestDb);

impl Deref for Db {
    type Target = TestDb;

    fn deref(&self) -> &TestDb {
        &self.0
    }
}

impl Db {
    /// A fresh database holding a small zone `example.net.`.
    fn new(tag: &str) -> Db {
        block_on(async {
            let db = TestDb::new(tag).await;
            let (zone, nodes) = example_net();
            db.write_zone(&zone, &nodes).await;
            Db(db)
        })
    }

    /// Runs mongodns-sign; whatever the outcome, it must not panic (the
    /// driver did at exit when the client was only dropped).
    fn sign(&self, args: &[&str]) -> Output {
        let out = Command::new(env!("CARGO_BIN_EXE_mongodns-sign"))
            .args([
                "--mongodb-uri",
                &database_uri(),
                "--database",
                &self.name,
                "-q",
            ])
            .args(args)
            .output()
            .expect("cannot run mongodns-sign");
        assert!(
            !stderr(&out).contains("panicked"),
            "mongodns-sign {args:?} panicked: {}",
            stderr(&out)
        );
        out
    }

    /// Runs and expects success; returns stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.sign(args);
        assert!(
            out.status.success(),
            "mongodns-sign {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    fn drop_db(self) {
        block_on(self.0.drop_db());
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn count(text: &str, needle: &str) -> usize {
    text.lines().filter(|l| l.contains(needle)).count()
}

/// Checks an exported zone with BIND's `dnssec-verify`; a missing tool fails
/// the test (it would otherwise check nothing).
fn verify(export: &str, zone: &str, csk: bool) {
    if let Err(e) = Command::new("dnssec-verify").arg("-h").output() {
        panic!("dnssec-verify cannot be run ({e}): install Debian's bind9-utils");
    }
    let path = std::env::temp_dir().join(unique_name("signcli"));
    std::fs::write(&path, export).unwrap();
    let mut cmd = Command::new("dnssec-verify");
    if csk {
        cmd.arg("-z");
    }
    let o = cmd.args(["-o", zone]).arg(&path).output().unwrap();
    let _ = std::fs::remove_file(&path);
    assert!(o.status.success(), "dnssec-verify: {}", stderr(&o));
    let said = format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
    assert!(said.contains("Zone fully signed"), "dnssec-verify: {said}");
}
