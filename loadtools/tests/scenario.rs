//! `mongodns-perf scenario seed-2011` end to end at a tiny scale, so the
//! replay of the seed cannot rot (CI runs it with the other tests).
//!
//! ```text
//!  mongodns-perf scenario seed-2011 --scale 1/10000 --duration 3 --json --keep-data
//!     (generates, imports, starts mongodns-server, steady import,
//!      secure-zone, three clients, freshness probe, report)
//!  ─► JSON figures: every client answered, its counts add up; freshness
//!     measured; the markdown report carries this run's figures
//!  ─► the database, read back: every record the load and the steady import
//!     claim to have written is there, and the signed zone is signed
//! ```
//!
//! Nothing here is timed: a slow machine only makes the figures smaller.

use backend_mongo::Store;

use dns::{Name, RType};
use mongodns_testkit::{binary, block_on, database_uri, free_port};
use std::collections::HashSet;
use std::path::PathBuf;
use std::process::{Command, Stdio};

#[test]
fn seed_scenario_runs_end_to_end_at_tiny_scale() {
    let uri = database_uri();
    let perf = PathBuf::from(env!("CARGO_BIN_EXE_mongodns-perf"));
    // It runs mongodns-server and mongodns-sign from its own directory;
    // `cargo test -p loadtools` alone does not build them.
    binary("mongodns-server");
    binary("mongodns-sign");
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
        .args(["--finish-timeout", "300", "--json", "--keep-data"])
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
        let n = |k: &str| c[k].as_u64().unwrap();
        assert!(n("completed") + n("lost") <= n("sent"), "{c}");
        assert!(n("noerror") <= n("completed"), "{c}");
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
    let expected = check["expected"].as_u64().unwrap();
    assert!(
        (1..=60).contains(&expected),
        "the imported names were looked for: {check}"
    );
    assert_eq!(check["missing"], 0, "{check}");
    assert_eq!(check["passed"], true, "{check}");
    // The version secure-zone replaced (it ran with --no-cleanup) was
    // deleted after the check.
    let cleanup = v["signing"]["cleanup"].as_str().unwrap_or_default();
    assert!(
        cleanup.starts_with("cleanup example.com.: old version(s) ["),
        "the replaced version deleted: {cleanup}"
    );
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
    // The report carries this run's measured figures, each client's beside
    // the seed's qps for it.
    let text = std::fs::read_to_string(&report).unwrap();
    for (c, seed) in clients.iter().zip(["4,359", "4,376", "35,714"]) {
        let row = text
            .lines()
            .find(|l| l.starts_with(&format!("| {} |", c["label"].as_str().unwrap())))
            .unwrap_or_else(|| panic!("no report row for {c}:\n{text}"));
        for want in [
            format!("| {seed} |"),
            format!("**{}**", thousands(c["qps"].as_f64().unwrap())),
            format!("| {} |", thousands(c["completed"].as_f64().unwrap())),
            format!("| {} |", thousands(c["noerror"].as_f64().unwrap())),
        ] {
            assert!(row.contains(&want), "row lacks {want:?}: {row}");
        }
    }
    for want in [
        format!(
            "**{} records/s**",
            thousands(import["rate"].as_f64().unwrap())
        ),
        format!("**{:.1} s**", v["signing"]["seconds"].as_f64().unwrap()),
        "## Machine".to_string(),
    ] {
        assert!(text.contains(&want), "report lacks {want:?}:\n{text}");
    }
    // The database, read back: what the figures claim was written is there.
    let work = dir.join("work");
    let fresh: HashSet<String> = std::fs::read_to_string(work.join("fresh.zone"))
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with(['$', ';', ' ', '\t']))
        .map(|l| format!("{}.example.com.", l.split_whitespace().next().unwrap()).to_lowercase())
        .collect();
    assert!(!fresh.is_empty());
    block_on(async {
        let store = Store::connect(&uri, &database, std::time::Duration::from_secs(10))
            .await
            .unwrap();
        let nodes = |apex: &'static str| {
            let store = &store;
            async move {
                let apex: Name = apex.parse().unwrap();
                let zone = store.find_zone(&apex).await.unwrap();
                let zone = zone.unwrap_or_else(|| panic!("{apex} not stored"));
                store.zone_nodes(&zone).await.unwrap()
            }
        };
        let big = nodes("example.com.").await;
        // Ordinary records only: secure-zone signed this zone, adding
        // DNSKEY and NSEC records of its own.
        let signer_owned = [RType::DNSKEY, RType::NSEC, RType::NSEC3, RType::NSEC3PARAM];
        let stored: usize = big
            .iter()
            .flat_map(|n| &n.rrsets)
            .filter(|r| !signer_owned.contains(&r.rtype))
            .map(|r| r.rdata.len())
            .sum();
        assert_eq!(
            stored as u64,
            loads[0]["records"].as_u64().unwrap() + import["records"].as_u64().unwrap(),
            "records stored in example.com. against the big zone's load plus the steady import"
        );
        let names: HashSet<String> = big.iter().map(|n| n.name.to_string()).collect();
        let missing: Vec<_> = fresh.difference(&names).collect();
        assert!(
            missing.is_empty(),
            "steady-import names not stored: {missing:?}"
        );
        // Signed: a DNSKEY at the apex, and signatures at every
        // authoritative node (the delegation `sub` and its glue are not
        // signed).
        let signed = nodes(SIGNED_APEX).await;
        let apex: Name = SIGNED_APEX.parse().unwrap();
        let has = |n: &dns::Node, t: RType| n.rrsets.iter().any(|r| r.rtype == t);
        assert!(
            signed
                .iter()
                .any(|n| n.name == apex && has(n, RType::DNSKEY)),
            "no DNSKEY at {SIGNED_APEX}"
        );
        let unsigned: Vec<String> = signed
            .iter()
            .filter(|n| !n.rrsets.is_empty() && n.sigs.is_empty())
            .map(|n| n.name.to_string())
            .filter(|n| !n.ends_with(&format!("sub.{SIGNED_APEX}")))
            .collect();
        assert!(
            unsigned.is_empty(),
            "unsigned after secure-zone: {unsigned:?}"
        );
        store.database().drop().await.unwrap();
    });
    let _ = std::fs::remove_dir_all(&dir);
}

/// The zone `secure-zone` signs during the scenario: the one the steady
/// import writes into.
const SIGNED_APEX: &str = "example.com.";

/// `n` rounded, with thousands separated by commas (the report's format).
fn thousands(n: f64) -> String {
    let digits = format!("{n:.0}");
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
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
