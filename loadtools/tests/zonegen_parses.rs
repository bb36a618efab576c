//! Every zone mongodns-zonegen writes must be accepted by our own parser
//! (a 100,000-name set once produced AAAA addresses with a 5-digit group).

use dns::presentation::ZoneFileReader;
use dns::Name;
use std::process::Command;

#[test]
fn the_caches_set_parses_completely() {
    let dir = std::env::temp_dir().join(format!("zonegen-parse-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let status = Command::new(env!("CARGO_BIN_EXE_mongodns-zonegen"))
        .args(["caches", "--names", "70000", "--dir"])
        .arg(&dir)
        .status()
        .unwrap();
    assert!(status.success());
    let origin: Name = "example.com.".parse().unwrap();
    let mut records = 0u64;
    for record in ZoneFileReader::open(&dir.join("caches.zone"), origin, None).unwrap() {
        if let Err(e) = record {
            panic!("zonegen wrote a record our parser rejects: {e}");
        }
        records += 1;
    }
    assert!(records > 70_000, "only {records} records");
    std::fs::remove_dir_all(&dir).unwrap();
}
