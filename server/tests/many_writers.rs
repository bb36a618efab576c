//! Many writers on one zone, against the real database and the real server:
//! importers (merge and replace), `secure-zone`, `unsecure-zone` and
//! `resign` at once, nothing acknowledged lost (`docs/schema.md`,
//! "Concurrency").
//!
//! ```text
//!  reproductions: a merge overlapping a --replace; secure-zone while an
//!                 import writes into the same zone
//!  randomized:    seeded writers for MANY_WRITERS_SECS (CI: 40 s; the long
//!                 run is bench/many-writers), tasks cancelled at random and
//!                 re-run; a model computes what must (and must not) be served
//!  every test:    a poller asks the apex SOA all along: never NXDOMAIN, the
//!                 serial never goes backwards; at the end the AXFR is the
//!                 model, and `dnssec-verify` accepts it when the zone is secured
//! ```

use backend_mongo::dns::edit::RecordEdit;
use backend_mongo::{Name, RRset, RType, Store};
use hickory_proto::op::ResponseCode;
use hickory_proto::rr::RData;
use loadtools::import::{import_file_with, ImportOptions, ImportSummary, ImportTuning, NoProgress};
use mongodns_testkit::*;
use signer::{SecureOptions, Validity};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const ZONE: &str = "many.test.";

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(4)
            .enable_all()
            .build()
            .unwrap()
    })
}

fn zone() -> Name {
    ZONE.parse().unwrap()
}

/// A zone file: the apex (serial `serial`) when `apex`, then one A record
/// per name in `names` (each `<label>.many.test.`).
fn zone_text(serial: u32, apex: bool, names: &[String]) -> String {
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

fn labels(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}-{i}")).collect()
}

/// Imports `text` as a file of its own; merge unless `replace`.
async fn import(
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

fn secure_options() -> SecureOptions {
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
struct Poller {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<Result<Vec<Duration>, String>>>,
}

/// What the poller saw: answers, and the 99th percentile of their latency.
struct Polled {
    asked: u64,
    p99: Duration,
}

impl Poller {
    fn start(port: u16) -> Poller {
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

    fn finish(mut self) -> Polled {
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
fn axfr(port: u16) -> (String, BTreeSet<String>) {
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
fn wait_caught_up(rt: &tokio::runtime::Runtime, store: &Store, port: u16) {
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
fn some_missing<'a>(a: &'a BTreeSet<String>, b: &'a BTreeSet<String>) -> Vec<&'a String> {
    a.difference(b).take(10).collect()
}

/// `dnssec-verify` and `ldns-verify-zone` on the served zone.
fn verify_signed(dir: &Path, text: &str) {
    verify_signed_zone(dir, ZONE, text);
}

fn set(v: &[String]) -> BTreeSet<String> {
    v.iter().cloned().collect()
}

/// A database serving `names` in the zone, the server, and a poller.
fn served_zone(
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
fn spawn_merge(
    db: &TestZoneDb,
    names: &[String],
    rate: f64,
) -> tokio::task::JoinHandle<Result<ImportSummary, String>> {
    let (store, dir) = (db.store.clone(), db.dir.clone());
    let text = zone_text(0, false, names);
    tokio::spawn(async move { import(&store, &dir, "merge.zone", &text, false, Some(rate)).await })
}

fn server_for(db: &TestZoneDb) -> ServerProcess {
    ServerProcess::start(
        &db.name,
        &["--freshness-ms", "50", "--axfr-allow", "127.0.0.1/32"],
    )
}

/// Reproduction 1: a merge import overlapping a `--replace` of the same
/// zone used to remove the zone (the merge's publish switched it back to
/// the version being deleted: NXDOMAIN for the apex, an empty AXFR).
/// Now the replace is the zone as of its switch, and the merge batches
/// acknowledged after it are applied to the new version: the final zone
/// is the replace's names plus a suffix of the merge's, in input order.
#[test]
fn a_merge_overlapping_a_replace_keeps_the_zone() {
    let rt = runtime();
    let base = labels("old", 300);
    let (db, server, poller) = served_zone(rt, "mw_overlap", &base);
    let merged = labels("merged", 3000);
    let replaced = labels("new", 300);
    let (merge, replace) = rt.block_on(async {
        let merge = spawn_merge(&db, &merged, 1500.0);
        tokio::time::sleep(Duration::from_millis(700)).await;
        let replace = import(
            &db.store,
            &db.dir,
            "replace.zone",
            &zone_text(5, true, &replaced),
            true,
            None,
        )
        .await;
        (merge.await.unwrap(), replace)
    });
    let replace = replace.expect("the replace succeeds");
    let merge = merge.expect("the merge succeeds: it follows the zone to the new version");
    wait_caught_up(rt, &db.store, server.port);
    let (_, served) = axfr(server.port);
    let asked = poller.finish().asked;
    let expected_base = set(&replaced);
    assert!(
        served.is_superset(&expected_base),
        "every name of the replace is served"
    );
    let extra: Vec<&String> = served.difference(&expected_base).collect();
    assert!(
        extra.iter().all(|n| n.starts_with("merged-")),
        "no name of the replaced version survives: {:?}",
        extra
            .iter()
            .filter(|n| !n.starts_with("merged-"))
            .take(5)
            .collect::<Vec<_>>()
    );
    // The merge's names served form one suffix of its input (batches were
    // written in order, one at a time).
    let first = merged.iter().position(|n| served.contains(n));
    let k = first.expect("merge batches acknowledged after the switch are served");
    assert!(
        merged[k..].iter().all(|n| served.contains(n)),
        "every merge batch after the first one served is served too"
    );
    assert!(
        k > 0,
        "the replace superseded the batches before its switch"
    );
    assert!(
        backend_mongo::writer::serial_gt(merge.zone.serial, replace.zone.serial),
        "the serial moved past the replace's: {} then {}",
        replace.zone.serial,
        merge.zone.serial
    );
    eprintln!(
        "merge names kept: {} of {}; poller asked {asked} times",
        merged.len() - k,
        merged.len()
    );
    drop(server);
    rt.block_on(db.drop_db());
}

/// Reproduction 2: `secure-zone` used to fail ("kept changing while it was
/// being signed") on a zone an import was writing into. Now it catches up
/// with the import and switches behind a short fence; every record the
/// import wrote, before, during and after, is served and signed.
#[test]
fn secure_zone_signs_a_zone_while_an_import_writes_into_it() {
    secure_while_importing("mw_secure", false);
}

/// The same on a zone already secured: the import signs its merge under
/// the signing lease, and hands the lease over to the waiting
/// `secure-zone` instead of making it wait for the whole import.
#[test]
fn secure_zone_of_a_signed_zone_takes_the_lease_from_a_signing_import() {
    secure_while_importing("mw_resecure", true);
}

fn secure_while_importing(tag: &str, secured_first: bool) {
    let rt = runtime();
    let base = labels("base", 300);
    let (db, server, poller) = served_zone(rt, tag, &base);
    if secured_first {
        rt.block_on(signer::secure_zone(
            &db.store,
            &zone(),
            &secure_options(),
            &signer::NoProgress,
        ))
        .expect("secure-zone before the import");
    }
    let merged = labels("imp", 2500);
    let gen_before = rt
        .block_on(db.store.find_zone(&zone()))
        .unwrap()
        .unwrap()
        .gen;
    let (merge, secured, secure_secs, import_secs) = rt.block_on(async {
        let t = Instant::now();
        let merge = spawn_merge(&db, &merged, 800.0);
        tokio::time::sleep(Duration::from_millis(500)).await;
        let secured =
            signer::secure_zone(&db.store, &zone(), &secure_options(), &signer::NoProgress).await;
        let secs = t.elapsed().as_secs_f64() - 0.5;
        let merge = merge.await.unwrap();
        (merge, secured, secs, t.elapsed().as_secs_f64())
    });
    let report = secured.expect("secure-zone succeeds while the import runs");
    merge.expect("the import succeeds while secure-zone runs");
    wait_caught_up(rt, &db.store, server.port);
    let (text, served) = axfr(server.port);
    poller.finish();
    let expected: BTreeSet<String> = set(&base).union(&set(&merged)).cloned().collect();
    assert!(
        some_missing(&expected, &served).is_empty() && some_missing(&served, &expected).is_empty(),
        "every record imported before, during and after secure-zone is served, nothing else: \
         missing {:?}, unexpected {:?} ({} served, {} expected)",
        some_missing(&expected, &served),
        some_missing(&served, &expected),
        served.len(),
        expected.len()
    );
    verify_signed(&db.dir, &text);
    if secured_first {
        // The import signed its first batches under the lease, then handed
        // it to the waiting secure-zone and wrote the rest unsigned: its
        // change records show both. (Without the hand-over every record
        // of the import would be signed: secure-zone waited for it.)
        let gen_after = rt
            .block_on(db.store.find_zone(&zone()))
            .unwrap()
            .unwrap()
            .gen;
        let records = rt
            .block_on(db.store.change_records(gen_before + 1, gen_after))
            .unwrap();
        let imported = |r: &backend_mongo::ChangeRecord| {
            r.names
                .as_ref()
                .is_some_and(|n| n.iter().any(|n| n.to_string().starts_with("imp-")))
        };
        let signed = records.values().filter(|r| r.signed && imported(r)).count();
        let unsigned = records
            .values()
            .filter(|r| !r.signed && imported(r))
            .count();
        assert!(
            signed > 0 && unsigned > 0,
            "the import signed some batches and handed the rest over: {signed} signed, {unsigned} unsigned records"
        );
    }
    eprintln!(
        "secure-zone took {secure_secs:.1} s with the import running ({import_secs:.1} s); {} names caught up",
        report.written
    );
    drop(server);
    rt.block_on(db.drop_db());
}

/// Reproduction 3: a replace of a secured zone signs its new version with
/// a serial past the one served when it began. Record edits moving the
/// served serial on while it ran used to make its switch move the SOA
/// serial again, unsigned (the randomized test, when the replace was the
/// last write: "No correct signature for many.test SOA"). Now the SOA is
/// signed again past the served serial under the zone lock.
#[test]
fn a_signed_replace_outruns_edits_that_moved_the_serial() {
    let rt = runtime();
    let db = rt.block_on(async {
        let db = TestZoneDb::new("mw_signed_replace").await;
        db.import(ZONE, &zone_text(1, true, &labels("old", 20)), true)
            .await;
        signer::secure_zone(&db.store, &zone(), &secure_options(), &signer::NoProgress)
            .await
            .expect("secure-zone");
        db
    });
    let server = server_for(&db);
    let names = labels("new", 400);
    let served_before = rt
        .block_on(db.store.find_zone(&zone()))
        .unwrap()
        .unwrap()
        .serial;
    rt.block_on(async {
        // 400 names at 200 records/s: about 2 s, with edits meanwhile.
        let text = zone_text(1, true, &names);
        let replace = import(
            &db.store,
            &db.dir,
            "slow-replace.zone",
            &text,
            true,
            Some(200.0),
        );
        let edits = async {
            for i in 0..3u8 {
                tokio::time::sleep(Duration::from_millis(300)).await;
                let name: Name = format!("edit{i}.{ZONE}").parse().unwrap();
                let add = RecordEdit::add(name, RType::A, 60, vec![vec![10, 0, 0, i].into()]);
                signer::edit::edit_zone(&db.store, &zone(), &[add])
                    .await
                    .expect("a signed edit");
            }
        };
        let (replaced, ()) = tokio::join!(replace, edits);
        replaced.expect("the replace");
    });
    wait_caught_up(rt, &db.store, server.port);
    let (text, served) = axfr(server.port);
    let now = rt
        .block_on(db.store.find_zone(&zone()))
        .unwrap()
        .unwrap()
        .serial;
    assert!(
        now > served_before + 3,
        "the edits moved the serial while the replace ran ({served_before} -> {now})"
    );
    assert!(served.contains("new-399"), "the replace is served");
    verify_signed(&db.dir, &text);
    drop(server);
    rt.block_on(db.drop_db());
}

/// One writer's operation in the randomized test, for the model.
#[derive(Clone, Debug)]
struct Op {
    kind: &'static str,
    names: Vec<String>,
    started: Instant,
    ended: Instant,
    ok: bool,
    /// Failed the documented way: another version builder (secure-zone,
    /// unsecure-zone) took its pending version over; nothing was switched.
    taken_over: bool,
    /// Why it failed, when it did (for the assertion's message: writers'
    /// own output is lost when their runtime thread belongs to another test).
    error: Option<String>,
    /// A first run was killed mid-way (then run again).
    killed: bool,
}

/// Runs `fut`, cancelled after a random delay one time in `cancel_one_in`
/// (the writer dies mid-way, as if killed); the same operation is then
/// run again to completion. Returns the last run's result, and whether a
/// run was killed.
async fn maybe_cancelled<F, Fut, T>(
    rng: &Mutex<Rng>,
    cancel_one_in: u64,
    make: F,
) -> (Result<T, String>, bool)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<T, String>> + Send + 'static,
    T: Send + 'static,
{
    let (cancel, after) = {
        let mut r = rng.lock().unwrap();
        (r.below(cancel_one_in) == 0, r.below(1500))
    };
    if !cancel {
        return (make().await, false);
    }
    let task = tokio::spawn(make());
    tokio::time::sleep(Duration::from_millis(after)).await;
    task.abort();
    let _ = task.await;
    // The killed run may have switched before it died (a replace dies in
    // its cleanup, after the switch): the re-run must then publish too, or
    // the model would not know the zone's content. A re-run that a signer's
    // version took over is run again, as an operator would.
    let mut r = make().await;
    for _ in 0..5 {
        match &r {
            Err(e) if e.contains("took over version") => r = make().await,
            _ => break,
        }
    }
    (r, true)
}

/// The record-edit writer of the randomized test: every 0.1–0.6 s a
/// change-set through `signer::edit::edit_zone` (signed when the zone is
/// secured) adding one to four fresh names (every fifth, one of them two
/// labels deep, with its empty non-terminal), or deleting up to three
/// names it added before; cancelled at random and run again.
async fn edit_writer(
    store: Store,
    rng: Arc<Mutex<Rng>>,
    ops: Arc<Mutex<Vec<Op>>>,
    go_on: impl Fn() -> bool,
) {
    let mut live: Vec<String> = Vec::new();
    let mut n = 0u64;
    while go_on() {
        n += 1;
        let pause = 100 + rng.lock().unwrap().below(500);
        tokio::time::sleep(Duration::from_millis(pause)).await;
        let delete = !live.is_empty() && rng.lock().unwrap().below(3) == 0;
        let names: Vec<String> = if delete {
            let k = 1 + rng.lock().unwrap().below(3) as usize;
            (0..k.min(live.len()))
                .map(|_| {
                    let i = rng.lock().unwrap().below(live.len() as u64) as usize;
                    live.swap_remove(i)
                })
                .collect()
        } else {
            let k = 1 + rng.lock().unwrap().below(4);
            (0..k)
                .map(|i| match (i, n % 5) {
                    (0, 0) => format!("deep.e{n}-{i}"),
                    _ => format!("e{n}-{i}"),
                })
                .collect()
        };
        let edits: Vec<RecordEdit> = names
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let name: Name = format!("{l}.{ZONE}").parse().unwrap();
                match delete {
                    true => RecordEdit::DeleteName { name },
                    false => RecordEdit::Add {
                        name,
                        rrset: RRset {
                            rtype: RType::A,
                            ttl: 60,
                            rdata: vec![vec![10, 99, (n % 256) as u8, i as u8].into()],
                        },
                    },
                }
            })
            .collect();
        let started = Instant::now();
        let (r, killed) = maybe_cancelled(&rng, 6, || {
            let (store, edits) = (store.clone(), edits.clone());
            async move {
                signer::edit::edit_zone(&store, &zone(), &edits)
                    .await
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            }
        })
        .await;
        if let Err(e) = &r {
            eprintln!("edit {n} failed: {e}");
        }
        if r.is_ok() && !delete {
            live.extend(names.iter().cloned());
        }
        ops.lock().unwrap().push(Op {
            kind: if delete { "edit-delete" } else { "edit-add" },
            names,
            started,
            ended: Instant::now(),
            ok: r.is_ok(),
            taken_over: false,
            error: r.err(),
            killed,
        });
    }
}

/// The randomized many-writers test: for `MANY_WRITERS_SECS` (default 40)
/// seconds, with seed `MANY_WRITERS_SEED` (default: from the clock,
/// printed), three kinds of writers on one zone at once, each cancelled at
/// random and run again:
/// * merge imports of fresh names (two tasks);
/// * replace imports, one at a time, each with names of its own;
/// * one signing task: `secure-zone`, `resign` and `unsecure-zone` in a
///   random order;
/// * one record-edit task ([`edit_writer`]): names added and deleted.
///
/// The model: the names of the last replace are served, and none of the
/// earlier ones; a merge that ended before the last replace began is
/// superseded; a merge that began after it ended is served whole; a merge
/// overlapping it is served as a suffix of its input. When the last signing
/// operation secured the zone, the served zone verifies.
#[test]
fn randomized_many_writers_lose_nothing() {
    let secs: u64 = std::env::var("MANY_WRITERS_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40);
    let seed = seed("MANY_WRITERS_SEED");
    eprintln!("randomized many-writers: MANY_WRITERS_SEED={seed} MANY_WRITERS_SECS={secs}");
    let rt = runtime();
    let first = labels("r0", 100);
    let db = rt.block_on(async {
        let db = TestZoneDb::new("mw_random").await;
        db.import(ZONE, &zone_text(1, true, &first), true).await;
        db
    });
    let server = server_for(&db);
    let poller = Poller::start(server.port);
    let rng = Arc::new(Mutex::new(Rng(seed)));
    let ops: Arc<Mutex<Vec<Op>>> = Arc::new(Mutex::new(vec![Op {
        kind: "replace",
        names: first,
        started: Instant::now(),
        ended: Instant::now(),
        ok: true,
        taken_over: false,
        error: None,
        killed: false,
    }]));
    let deadline = Instant::now() + Duration::from_secs(secs);
    // Until one secure-zone has finished, merges and signing go on past the
    // deadline (replaces stop at it: a stream of replaces can starve
    // secure-zone, a documented limit), for at most EXTRA more.
    const EXTRA: Duration = Duration::from_secs(120);
    let secured_once = Arc::new(AtomicBool::new(false));
    let go_on = {
        let secured_once = secured_once.clone();
        move || {
            let now = Instant::now();
            now < deadline || (!secured_once.load(Ordering::Relaxed) && now < deadline + EXTRA)
        }
    };
    let last_signing: Arc<Mutex<&'static str>> = Arc::new(Mutex::new("unsecure-zone"));
    let signed_ok: Arc<Mutex<Vec<&'static str>>> = Arc::new(Mutex::new(Vec::new()));
    rt.block_on(async {
        let mut tasks = Vec::new();
        for w in 0..2 {
            let (store, dir, rng, ops, go_on) = (
                db.store.clone(),
                db.dir.clone(),
                rng.clone(),
                ops.clone(),
                go_on.clone(),
            );
            tasks.push(tokio::spawn(async move {
                let mut n = 0;
                while go_on() {
                    n += 1;
                    let size = 50 + rng.lock().unwrap().below(300) as usize;
                    let names = labels(&format!("m{w}x{n}"), size);
                    let text = zone_text(0, false, &names);
                    let file = format!("merge-{w}-{n}.zone");
                    let started = Instant::now();
                    let (r, killed) = maybe_cancelled(&rng, 4, || {
                        let (store, dir, text, file) =
                            (store.clone(), dir.clone(), text.clone(), file.clone());
                        async move { import(&store, &dir, &file, &text, false, Some(1000.0)).await }
                    })
                    .await;
                    if let Err(e) = &r {
                        eprintln!("merge {file} failed: {e}");
                    }
                    ops.lock().unwrap().push(Op {
                        kind: "merge",
                        names,
                        started,
                        ended: Instant::now(),
                        ok: r.is_ok(),
                        taken_over: false,
                        error: r.err(),
                        killed,
                    });
                }
            }));
        }
        {
            let (store, dir, rng, ops) =
                (db.store.clone(), db.dir.clone(), rng.clone(), ops.clone());
            tasks.push(tokio::spawn(async move {
                let mut n = 0;
                while Instant::now() < deadline {
                    n += 1;
                    // Replaces are an operator's act: every few seconds here.
                    let pause = 2000 + rng.lock().unwrap().below(5000);
                    tokio::time::sleep(Duration::from_millis(pause)).await;
                    let size = 50 + rng.lock().unwrap().below(200) as usize;
                    let names = labels(&format!("r{n}"), size);
                    let text = zone_text(1, true, &names);
                    let file = format!("replace-{n}.zone");
                    let started = Instant::now();
                    let (r, killed) = maybe_cancelled(&rng, 4, || {
                        let (store, dir, text, file) =
                            (store.clone(), dir.clone(), text.clone(), file.clone());
                        async move { import(&store, &dir, &file, &text, true, None).await }
                    })
                    .await;
                    if let Err(e) = &r {
                        eprintln!("replace {file} failed: {e}");
                    }
                    let taken_over = r.as_ref().is_err_and(|e| e.contains("took over version"));
                    ops.lock().unwrap().push(Op {
                        kind: "replace",
                        names,
                        started,
                        ended: Instant::now(),
                        ok: r.is_ok(),
                        taken_over,
                        error: r.err(),
                        killed,
                    });
                }
            }));
        }
        {
            let (store, rng, ops, go_on) =
                (db.store.clone(), rng.clone(), ops.clone(), go_on.clone());
            tasks.push(tokio::spawn(edit_writer(store, rng, ops, go_on)));
        }
        {
            let (store, rng, last, go_on, ops) = (
                db.store.clone(),
                rng.clone(),
                last_signing.clone(),
                go_on.clone(),
                ops.clone(),
            );
            let secured_once = secured_once.clone();
            let signed_ok = signed_ok.clone();
            tasks.push(tokio::spawn(async move {
                while go_on() {
                    let pause = rng.lock().unwrap().below(2000);
                    tokio::time::sleep(Duration::from_millis(pause)).await;
                    let pick = rng.lock().unwrap().below(3);
                    // Until one secure-zone has finished, ask for secure-zone:
                    // a seed that picked none (or lost them to restarts)
                    // would leave signing untested.
                    let pick = if secured_once.load(Ordering::Relaxed) {
                        pick
                    } else {
                        0
                    };
                    let kind = ["secure-zone", "resign", "unsecure-zone"][pick as usize];
                    let started = Instant::now();
                    let (r, killed) = maybe_cancelled(&rng, 4, || {
                        let store = store.clone();
                        async move {
                            let z = zone();
                            let r = match kind {
                                "secure-zone" => signer::secure_zone(
                                    &store,
                                    &z,
                                    &secure_options(),
                                    &signer::NoProgress,
                                )
                                .await
                                .map(|_| ()),
                                "resign" => signer::resign(
                                    &store,
                                    &z,
                                    false,
                                    &Validity::default(),
                                    2,
                                    &signer::NoProgress,
                                )
                                .await
                                .map(|_| ()),
                                _ => signer::unsecure_zone(
                                    &store,
                                    &z,
                                    true,
                                    Duration::from_millis(500),
                                )
                                .await
                                .map(|_| ()),
                            };
                            r.map_err(|e| e.to_string())
                        }
                    })
                    .await;
                    ops.lock().unwrap().push(Op {
                        kind,
                        names: Vec::new(),
                        started,
                        ended: Instant::now(),
                        ok: true,
                        taken_over: false,
                        error: r.as_ref().err().cloned(),
                        killed,
                    });
                    if r.is_ok() {
                        signed_ok.lock().unwrap().push(kind);
                        if kind == "secure-zone" {
                            secured_once.store(true, Ordering::Relaxed);
                        }
                    }
                    match r {
                        Ok(()) if kind != "resign" => *last.lock().unwrap() = kind,
                        Ok(()) => {}
                        // resign on an unsecured zone is refused: expected.
                        Err(e) if e.contains("is not secured") => {}
                        Err(e) => eprintln!("{kind} failed: {e}"),
                    }
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
    });
    wait_caught_up(rt, &db.store, server.port);
    let (text, served) = axfr(server.port);
    let polled = poller.finish();
    let ops = ops.lock().unwrap().clone();
    let failed: Vec<String> = ops
        .iter()
        .filter(|o| !o.ok && !o.taken_over)
        .map(|o| format!("{}: {}", o.kind, o.error.as_deref().unwrap_or("?")))
        .collect();
    assert!(
        failed.is_empty(),
        "every writer's operation succeeds (after a re-run when it was cancelled), or a replace \
         fails because a signer's new version took its own over: {} failed otherwise: {failed:?}",
        failed.len()
    );
    let last = ops
        .iter()
        .filter(|o| o.kind == "replace" && o.ok)
        .max_by_key(|o| o.ended)
        .unwrap()
        .clone();
    let t0 = ops[0].started;
    let mut must = set(&last.names);
    let mut may = BTreeSet::new();
    for o in ops.iter().filter(|o| o.kind == "merge") {
        if o.started > last.ended {
            must.extend(o.names.iter().cloned());
        } else if o.ended > last.started {
            // Overlapping the last replace: a suffix of its input.
            let first = o.names.iter().position(|n| served.contains(n));
            if let Some(k) = first {
                let holes: Vec<usize> = (k..o.names.len())
                    .filter(|&i| !served.contains(&o.names[i]))
                    .collect();
                let at = |t: Instant| t.saturating_duration_since(t0).as_millis();
                assert!(
                    holes.is_empty(),
                    "a merge overlapping the last replace is served as a suffix of its input: \
                     {} names, served from {k}, but not {} of them after it (first {:?}); \
                     the merge ran {}–{} ms, the last replace {}–{} ms",
                    o.names.len(),
                    holes.len(),
                    &holes[..holes.len().min(5)],
                    at(o.started),
                    at(o.ended),
                    at(last.started),
                    at(last.ended)
                );
            }
            may.extend(o.names.iter().cloned());
        }
    }
    // Record edits: a name an edit added is served like a merge's (whole
    // when the edit began after the last replace, maybe when it overlapped
    // it), unless a later edit deleted it: then it is served never.
    let deleted: BTreeSet<&String> = ops
        .iter()
        .filter(|o| o.kind == "edit-delete")
        .flat_map(|o| o.names.iter())
        .collect();
    for o in ops.iter().filter(|o| o.kind == "edit-add") {
        for name in o.names.iter().filter(|n| !deleted.contains(n)) {
            if o.started > last.ended {
                must.insert(name.clone());
            } else if o.ended > last.started {
                may.insert(name.clone());
            }
        }
    }
    let missing: Vec<&String> = must.difference(&served).take(10).collect();
    assert!(
        missing.is_empty(),
        "acknowledged names missing: {missing:?}"
    );
    let unexpected: Vec<&String> = served
        .iter()
        .filter(|n| !must.contains(*n) && !may.contains(*n))
        .take(10)
        .collect();
    assert!(
        unexpected.is_empty(),
        "superseded names served: {unexpected:?}"
    );
    let secured = rt
        .block_on(db.store.dnssec_config(&zone()))
        .unwrap()
        .secured;
    assert_eq!(
        secured,
        *last_signing.lock().unwrap() == "secure-zone",
        "the zone is secured exactly when the last signing operation secured it"
    );
    if secured {
        let verified = std::panic::catch_unwind(|| verify_signed(&db.dir, &text));
        if let Err(panic) = verified {
            print_timeline(&ops);
            std::panic::resume_unwind(panic);
        }
    }
    let signed_ok = signed_ok.lock().unwrap().clone();
    let secures = signed_ok.iter().filter(|k| **k == "secure-zone").count();
    assert!(
        secures > 0,
        "secure-zone never succeeded among the writers: the test did not test signing"
    );
    let merges = ops.iter().filter(|o| o.kind == "merge").count();
    let replaces = ops.iter().filter(|o| o.kind == "replace").count();
    let edits = ops.iter().filter(|o| o.kind.starts_with("edit")).count();
    let acknowledged: usize = ops
        .iter()
        .filter(|o| o.ok && o.kind == "merge")
        .map(|o| o.names.len())
        .sum();
    eprintln!(
        "{merges} merges, {replaces} replaces, {edits} record edits, signing operations done: {signed_ok:?}; \
         {acknowledged} merged records acknowledged ({:.0}/s); {} names served; secured: {secured}; \
         apex SOA asked {} times, p99 {:.1} ms",
        acknowledged as f64 / secs as f64,
        served.len(),
        polled.asked,
        polled.p99.as_secs_f64() * 1000.0
    );
    drop(server);
    rt.block_on(db.drop_db());
}

/// Every operation of the randomized test, in the order they began, for
/// a failure's message: when each ran (ms from the start), whether a first
/// run was killed, how it ended, and its first names.
fn print_timeline(ops: &[Op]) {
    let t0 = ops[0].started;
    let at = |t: Instant| t.saturating_duration_since(t0).as_millis();
    let mut sorted: Vec<&Op> = ops.iter().collect();
    sorted.sort_by_key(|o| o.started);
    eprintln!("timeline (ms from the start):");
    for o in sorted {
        eprintln!(
            "  {:>6}–{:<6} {:<13} {}{} {:?}{}",
            at(o.started),
            at(o.ended),
            o.kind,
            if o.killed { "killed, re-run; " } else { "" },
            o.error.as_deref().unwrap_or("ok"),
            &o.names[..o.names.len().min(4)],
            if o.names.len() > 4 {
                format!(" +{}", o.names.len() - 4)
            } else {
                String::new()
            },
        );
    }
}

/// The signing lease is enforced: while one signer holds it, another fails
/// with a message naming the holder; a holder that died (its lease expired
/// unrenewed, as after SIGKILL) is taken over, and the zone is signed.
#[test]
fn the_signing_lease_is_enforced_and_a_dead_holders_is_taken_over() {
    let rt = runtime();
    rt.block_on(async {
        let db = TestZoneDb::new("mw_lease").await;
        db.import(ZONE, &zone_text(10, true, &labels("n", 20)), true)
            .await;
        let locks = db
            .store
            .database()
            .collection::<backend_mongo::bson::Document>(backend_mongo::lock::LOCKS);
        let id = format!("sign {ZONE}");
        let at = |ms: i64| {
            backend_mongo::bson::DateTime::from_millis(
                backend_mongo::bson::DateTime::now().timestamp_millis() + ms,
            )
        };
        // A live holder: a second signer fails, naming it.
        locks
            .insert_one(backend_mongo::bson::doc! {"_id": &id, "zone": ZONE,
            "owner": "elsewhere:1:secure-zone:x", "until": at(60_000)})
            .await
            .unwrap();
        let err = signer::lease::take(&db.store, &zone(), "test", Duration::from_millis(300))
            .await
            .err()
            .expect("a second signer must not get the lease");
        let text = err.to_string();
        assert!(
            text.contains("elsewhere:1:secure-zone:x"),
            "the error names the holder: {text}"
        );
        // The holder dies: its lease expires, unrenewed.
        locks
            .update_one(
                backend_mongo::bson::doc! {"_id": &id},
                backend_mongo::bson::doc! {"$set": {"until": at(-1000)}},
            )
            .await
            .unwrap();
        signer::secure_zone(&db.store, &zone(), &secure_options(), &signer::NoProgress)
            .await
            .expect("secure-zone takes a dead holder's lease over");
        assert!(db.store.dnssec_config(&zone()).await.unwrap().secured);
        assert!(
            locks
                .find_one(backend_mongo::bson::doc! {"_id": &id})
                .await
                .unwrap()
                .is_none(),
            "the lease is released at the end"
        );
        db.drop_db().await;
    });
}

/// Two merges into one zone at once share its one resume slot: a re-run
/// resumes only from what its own input checkpointed. (Found by the
/// randomized test: one merge's count, moved under the other's key, made
/// that one's re-run skip records it never wrote.)
#[test]
fn two_merges_into_one_zone_resume_only_from_their_own_checkpoints() {
    let rt = runtime();
    rt.block_on(async {
        let db = TestZoneDb::new("mw_resume").await;
        db.import(ZONE, &zone_text(1, true, &labels("base", 10)), true)
            .await;
        let z = zone();
        let begin = |key: &'static str| {
            let store = db.store.clone();
            let z = z.clone();
            async move {
                store
                    .begin_resumable_write(&z, backend_mongo::WriteMode::Merge, Some(key))
                    .await
                    .unwrap()
            }
        };
        let (first, done) = begin("input-a").await;
        assert_eq!(done, 0);
        let (second, done) = begin("input-b").await;
        assert_eq!(done, 0);
        // The first merge checkpoints after the second took the slot.
        first.checkpoint(100).await.unwrap();
        drop(first);
        drop(second);
        let (_, done) = begin("input-b").await;
        assert_eq!(
            done, 0,
            "a re-run of the second merge resumes from what it stored itself (nothing)"
        );
        let (second, _) = begin("input-b").await;
        second.checkpoint(40).await.unwrap();
        drop(second);
        let (_, done) = begin("input-b").await;
        assert_eq!(done, 40, "its own checkpoint is kept");
        db.drop_db().await;
    });
}
