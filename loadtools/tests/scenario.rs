//! `mongodns-perf scenario seed-2011` end to end at a tiny scale, so the
//! replay of the seed cannot rot (CI runs it with the other tests).
//!
//! ```text
//!  mongodns-perf scenario seed-2011 --scale 1/10000 --duration 3 --json
//!     (generates, imports, starts mongodns-server, steady import,
//!      secure-zone, three clients, freshness probe, report)
//!  ─► JSON figures: every client answered, the import wrote every record,
//!     signing finished, freshness measured; the markdown report written
//! ```
//!
//! Nothing here is timed: a slow machine only makes the figures smaller.

use backend_mongo::testing::{database_uri, repo_root};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The scenario runs mongodns-server and mongodns-sign from the directory
/// of mongodns-perf; `cargo test -p loadtools` alone does not build them.
fn ensure_siblings(dir: &Path) {
    if dir.join("mongodns-server").is_file() && dir.join("mongodns-sign").is_file() {
        return;
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut c = Command::new(cargo);
    c.current_dir(repo_root())
        .args(["build", "-p", "mongodns-server", "-p", "signer", "--bins"]);
    if dir.ends_with("release") {
        c.arg("--release");
    }
    let status = c.status().expect("cannot run cargo build");
    assert!(
        status.success(),
        "building mongodns-server and mongodns-sign failed"
    );
}

fn free_port() -> u16 {
    loop {
        let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = tcp.local_addr().unwrap().port();
        if std::net::UdpSocket::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

#[test]
fn seed_scenario_runs_end_to_end_at_tiny_scale() {
    let uri = database_uri();
    let perf = PathBuf::from(env!("CARGO_BIN_EXE_mongodns-perf"));
    ensure_siblings(perf.parent().unwrap());
    let dir = std::env::temp_dir().join(format!("mdt_scenario_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let report = dir.join("scenario.md");
    let listen = format!("127.0.0.1:{}", free_port());
    let database = format!("mdt_scenario_{}", std::process::id());
    let out = Command::new(&perf)
        .args([
            "scenario",
            "seed-2011",
            "--scale",
            "1/10000",
            "--duration",
            "3",
        ])
        .args(["--import-rate", "20", "--freshness-samples", "3"])
        .args([
            "--listen",
            &listen,
            "--mongodb-uri",
            &uri,
            "--database",
            &database,
        ])
        .arg("--report")
        .arg(&report)
        .arg("--work-dir")
        .arg(dir.join("work"))
        .args(["--finish-timeout", "300", "--json"])
        .stderr(Stdio::inherit())
        .output()
        .expect("cannot run mongodns-perf scenario");
    assert!(out.status.success(), "the scenario failed: {}", out.status);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("JSON: {e}: {}", String::from_utf8_lossy(&out.stdout)));

    // Sizes follow the scale.
    assert_eq!(v["big_records"], 1600);
    assert_eq!(v["small_zones"], 100);
    let loads = v["loads"].as_array().unwrap();
    assert_eq!(
        loads.len(),
        2,
        "big zone, small zones (secure-zone signs the big zone)"
    );
    assert_eq!(loads[0]["records"], 1600);
    assert_eq!(loads[1]["records"], 700);
    // Every client got answers, and NOERROR ones (the names exist).
    let clients = v["clients"].as_array().unwrap();
    assert_eq!(clients.len(), 3);
    for c in clients {
        assert!(
            c["completed"].as_u64().unwrap() > 0,
            "client answered nothing: {c}"
        );
        assert!(
            c["noerror"].as_u64().unwrap() > 0,
            "no NOERROR answers: {c}"
        );
        assert!(c["qps"].as_f64().unwrap() > 0.0, "{c}");
        assert!(c["max_s"].as_f64().unwrap() >= c["p99_s"].as_f64().unwrap() * 0.999);
    }
    // The steady import wrote all its records (3 s × 20 records/s).
    let import = &v["import"];
    assert_eq!(import["finished"], true, "{import}");
    assert_eq!(import["records"], 60, "{import}");
    assert!(import["rate"].as_f64().unwrap() > 0.0);
    // secure-zone finished.
    assert_eq!(v["signing"]["finished"], true);
    assert!(v["signing"]["seconds"].as_f64().unwrap() > 0.0);
    // It signed the zone the import wrote into, and at the end that zone
    // verifies and holds every imported record.
    assert_eq!(v["signing"]["zone"], "example.com.");
    let check = &v["signing"]["check"];
    assert_eq!(check["verified"], true, "{check}");
    assert_eq!(check["expected"], 60, "{check}");
    assert_eq!(check["missing"], 0, "{check}");
    assert_eq!(check["passed"], true, "{check}");
    assert!(v["signing"]["quiet_seconds"].as_f64().unwrap() > 0.0);
    // Freshness: at least one imported name was seen in the database and
    // then answered by the server.
    let delays = v["freshness"]["delays_s"].as_array().unwrap();
    assert!(
        !delays.is_empty(),
        "freshness not measured: {}",
        v["freshness"]
    );
    for d in delays {
        let d = d.as_f64().unwrap();
        assert!((0.0..60.0).contains(&d), "freshness delay {d}");
    }
    // The report beside the seed's numbers.
    let text = std::fs::read_to_string(&report).unwrap();
    for want in [
        "4,359",
        "4,376", // 4,375.94 (the issue rounds it down to 4,375)
        "35,714",
        "hot set",
        "secure-zone",
        "freshness",
        "## Machine",
    ] {
        assert!(text.contains(want), "report lacks {want:?}:\n{text}");
    }
    // The work directory and the database are cleaned up without --keep-data.
    assert!(!dir.join("work").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_scenario_flags_are_named() {
    let perf = env!("CARGO_BIN_EXE_mongodns-perf");
    for (args, want) in [
        (vec!["scenario", "seed-1999"], "unknown scenario"),
        (vec!["scenario", "seed-2011", "--scale", "3"], "--scale"),
        (
            vec!["scenario", "seed-2011", "--duration", "0"],
            "--duration",
        ),
        (
            vec![
                "scenario",
                "seed-2011",
                "--scale",
                "1/10000",
                "--hot",
                "5000",
            ],
            "--hot",
        ),
    ] {
        let out = Command::new(perf).args(&args).output().unwrap();
        assert!(!out.status.success(), "{args:?} succeeded");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{args:?}: {err}");
    }
}
