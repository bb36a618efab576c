//! What every many-writers test shares: the zone, imports, the server, the
//! SOA poller and the end-of-test checks.
//!
//! ```text
//!  served_zone(names) ─► TestZoneDb + ServerProcess + Poller (SOA every 20 ms)
//!  import / spawn_merge ─► loadtools' importer into the zone
//!  end: wait_caught_up ─► axfr ─► compared with the model; verify_signed
//! ```

use backend_mongo::Store;

use dns::Name;
use hickory_proto::op::ResponseCode;
use hickory_proto::rr::RData;
use loadtools::import::{import_file_with, ImportOptions, ImportSummary, ImportTuning, NoProgress};
use mongodns_testkit::*;
use signer::{SecureOptions, Validity};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub const ZONE: &str = "many.test.";

pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(4)
            .enable_all()
            .build()
            .unwrap()
    })
}

pub fn zone() -> Name {
    ZONE.parse().unwrap()
}

/// A zone file: the apex (serial `serial`) when `apex`, then one A record
/// per name in `names` (each `<label>.many.test.`).
pub fn zone_text(serial: u32, apex: bool, names: &[String]) -> String {
    let mut z = format!("$ORIGIN {ZONE}\n$TTL 60\n");
    if apex {
        z.push_str(&format!(
            "@ IN SOA ns admin {serial} 3600 600 86400 60\n@ IN NS ns\nns IN A 192.0.2.53\n"
        ));
    }
    for (i, n) in names.iter().enumerate() {
        z.push_str(&format!(
            "{n} IN A 10.{}.{}.{}\n",
            i / 65536 % 256,
            i / 256 % 256,
            i % 256
        ));
    }
    z
}

pub fn labels(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}-{i}")).collect()
}

/// Imports `text` as a file of its own; merge unless `replace`.
pub async fn import(
    store: &Store,
    dir: &Path,
    file: &str,
    text: &str,
    replace: bool,
    rate: Option<f64>,
) -> Result<ImportSummary, String> {
    let path = dir.join(file);
    if !path.exists() {
        std::fs::write(&path, text).unwrap();
    }
    let options = ImportOptions {
        zone: zone(),
        replace,
        batch_size: 50,
        in_flight: 1,
        grace: Duration::from_millis(500),
    };
    let tuning = ImportTuning {
        rate,
        publish_every: Some(Duration::from_millis(200)),
        resumable: true,
    };
    import_file_with(store, &path, &options, &tuning, &NoProgress)
        .await
        .map_err(|e| e.to_string())
}

pub fn secure_options() -> SecureOptions {
    SecureOptions {
        algorithm: 13,
        csk: false,
        nsec3: None,
        cds: false,
        validity: Validity::default(),
        threads: 2,
        grace: Duration::from_millis(500),
    }
}

/// Asks the apex SOA every 20 ms until stopped: fails on NXDOMAIN or
/// REFUSED (the zone vanished) and on a serial that went backwards.
pub struct Poller {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<Result<Vec<Duration>, String>>>,
}

/// What the poller saw: answers, and the 99th percentile of their latency.
pub struct Polled {
    pub asked: u64,
    pub p99: Duration,
}

impl Poller {
    pub fn start(port: u16) -> Poller {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut last: Option<u32> = None;
            let mut latencies = Vec::new();
            while !flag.load(Ordering::Relaxed) {
                let q = build_query(0x5151, ZONE, 6, None, false);
                let t = Instant::now();
                if let Some(reply) = udp_exchange(port, &q, Duration::from_millis(500)) {
                    latencies.push(t.elapsed());
                    let m =
                        hickory_proto::op::Message::from_vec(&reply).map_err(|e| e.to_string())?;
                    let rcode = m.metadata.response_code;
                    if rcode == ResponseCode::NXDomain || rcode == ResponseCode::Refused {
                        return Err(format!("the apex SOA was answered {rcode:?}"));
                    }
                    if let Some(serial) = m.answers.iter().find_map(|r| match &r.data {
                        RData::SOA(soa) => Some(soa.serial),
                        _ => None,
                    }) {
                        if let Some(l) = last {
                            if backend_mongo::writer::serial_gt(l, serial) {
                                return Err(format!(
                                    "the serial went backwards: {l} then {serial}"
                                ));
                            }
                        }
                        last = Some(serial);
                    }
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Ok(latencies)
        });
        Poller {
            stop,
            thread: Some(thread),
        }
    }

    pub fn finish(mut self) -> Polled {
        self.stop.store(true, Ordering::Relaxed);
        let got = self.thread.take().unwrap().join().unwrap();
        let mut latencies = got.unwrap_or_else(|e| panic!("poller: {e}"));
        assert!(!latencies.is_empty(), "the poller got no answer at all");
        latencies.sort();
        Polled {
            asked: latencies.len() as u64,
            p99: latencies[(latencies.len() * 99 / 100).min(latencies.len() - 1)],
        }
    }
}

/// The zone as served, by AXFR through the server: (text, owner labels of
/// A records below the apex, excluding `ns`).
pub fn axfr(port: u16) -> (String, BTreeSet<String>) {
    let text = axfr_text(port, ZONE);
    let mut names = BTreeSet::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() >= 5 && f[3] == "A" {
            let label = f[0].trim_end_matches(ZONE).trim_end_matches('.');
            if !label.is_empty() && label != "ns" {
                names.insert(label.to_string());
            }
        }
    }
    (text, names)
}

/// Waits (up to 20 s) until the server answers the SOA serial the
/// database holds: the server has noticed the last write.
pub fn wait_caught_up(rt: &tokio::runtime::Runtime, store: &Store, port: u16) {
    let want = rt
        .block_on(store.find_zone(&zone()))
        .unwrap()
        .expect("the zone is served")
        .serial;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let m = ask_udp(port, ZONE, 6, None);
        let got = m.answers.iter().find_map(|r| match &r.data {
            RData::SOA(soa) => Some(soa.serial),
            _ => None,
        });
        if got == Some(want) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the server still answers serial {got:?}, the database has {want}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Names in `a` and not in `b`, at most ten (for messages).
pub fn some_missing<'a>(a: &'a BTreeSet<String>, b: &'a BTreeSet<String>) -> Vec<&'a String> {
    a.difference(b).take(10).collect()
}

/// `dnssec-verify` and `ldns-verify-zone` on the served zone.
pub fn verify_signed(dir: &Path, text: &str) {
    verify_signed_zone(dir, ZONE, text);
}

pub fn set(v: &[String]) -> BTreeSet<String> {
    v.iter().cloned().collect()
}

/// A database serving `names` in the zone, the server, and a poller.
pub fn served_zone(
    rt: &tokio::runtime::Runtime,
    tag: &str,
    names: &[String],
) -> (TestZoneDb, ServerProcess, Poller) {
    let db = rt.block_on(async {
        let db = TestZoneDb::new(tag).await;
        db.import(ZONE, &zone_text(10, true, names), true).await;
        db
    });
    let server = server_for(&db);
    let poller = Poller::start(server.port);
    (db, server, poller)
}

/// A merge import of `names` at `rate` records/s, in a task.
pub fn spawn_merge(
    db: &TestZoneDb,
    names: &[String],
    rate: f64,
) -> tokio::task::JoinHandle<Result<ImportSummary, String>> {
    let (store, dir) = (db.store.clone(), db.dir.clone());
    let text = zone_text(0, false, names);
    tokio::spawn(async move { import(&store, &dir, "merge.zone", &text, false, Some(rate)).await })
}

pub fn server_for(db: &TestZoneDb) -> ServerProcess {
    ServerProcess::start(
        &db.name,
        &["--freshness-ms", "50", "--axfr-allow", "127.0.0.1/32"],
    )
}
