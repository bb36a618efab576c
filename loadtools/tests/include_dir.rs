//! `mongodns-import --include-dir` against a real database: a zone file
//! that includes a file from another directory is refused (file:line,
//! nothing written) unless that directory is given.

use mongodns_testkit::{block_on, database_uri, drop_database};
use std::path::PathBuf;
use std::process::Command;

fn dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mdt_inc_{}_{tag}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn include_from_another_directory_needs_include_dir() {
    let shared = dir("shared");
    std::fs::write(shared.join("hosts.inc"), "www IN A 192.0.2.80\n").unwrap();
    let zones = dir("zones");
    let zone = zones.join("inc.test.zone");
    let text = format!(
        "$ORIGIN inc.test.\n$TTL 300\n@ IN SOA ns admin 1 3600 600 86400 60\n@ IN NS ns\nns IN A 192.0.2.1\n$INCLUDE {}\n",
        shared.join("hosts.inc").display()
    );
    std::fs::write(&zone, text).unwrap();
    let database = format!("mdt_inc_{}", std::process::id());
    let import = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_mongodns-import"))
            .args(["--mongodb-uri", &database_uri(), "--database", &database])
            .args(["--zone", "inc.test."])
            .args(extra)
            .arg(&zone)
            .output()
            .unwrap()
    };
    let refused = import(&[]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{stderr}");
    assert!(stderr.contains("inc.test.zone:6:"), "{stderr}");
    assert!(
        stderr.contains("outside the including file's directory"),
        "{stderr}"
    );
    let shared_arg = shared.display().to_string();
    let allowed = import(&["--include-dir", &shared_arg]);
    let stderr = String::from_utf8_lossy(&allowed.stderr);
    assert!(allowed.status.success(), "{stderr}");
    let summary = String::from_utf8_lossy(&allowed.stdout);
    assert!(summary.contains("4 records"), "{summary}");
    let missing = import(&["--include-dir", "/nonexistent/dir"]);
    assert!(!missing.status.success());
    let _ = std::fs::remove_dir_all(shared);
    let _ = std::fs::remove_dir_all(zones);
    block_on(drop_database(&database));
}
