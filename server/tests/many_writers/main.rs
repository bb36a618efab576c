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
//!
//! Files: this one is the randomized test and its writers (it stays at the
//! root of the target: `bench/many-writers` runs it by its exact name);
//! `harness.rs` the zone, imports, the SOA poller and the checks every test
//! shares; `reproductions.rs` the cases the randomized test found, one test
//! each; `signing_lease.rs` the lease between signers.

mod harness;
mod reproductions;
mod signing_lease;

use harness::runtime;
use harness::*;

use backend_mongo::Store;
use dns::edit::RecordEdit;
use dns::{Name, RRset, RType};
use mongodns_testkit::*;
use signer::Validity;
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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

/// What an importing writer works with: the store, the directory of its
/// files, the shared generator and the operations recorded.
type Importer<'a> = (&'a Store, &'a Path, &'a Mutex<Rng>, &'a Mutex<Vec<Op>>);

/// One import of `names` from `file` by an importing writer: a merge (at
/// 1,000 records/s) or, with `replace`, a replace; cancelled at random and
/// run again, recorded as an [`Op`]. A replace may fail the documented
/// way, its version taken over.
async fn recorded_import(writer: Importer<'_>, file: String, names: Vec<String>, replace: bool) {
    let (store, dir, rng, ops) = writer;
    let (kind, text, rate) = match replace {
        true => ("replace", zone_text(1, true, &names), None),
        false => ("merge", zone_text(0, false, &names), Some(1000.0)),
    };
    let started = Instant::now();
    let (r, killed) = maybe_cancelled(rng, 4, || {
        let (store, dir, text, file) = (store.clone(), dir.to_owned(), text.clone(), file.clone());
        async move { import(&store, &dir, &file, &text, replace, rate).await }
    })
    .await;
    if let Err(e) = &r {
        eprintln!("{kind} {file} failed: {e}");
    }
    let taken_over = replace && r.as_ref().is_err_and(|e| e.contains("took over version"));
    ops.lock().unwrap().push(Op {
        kind,
        names,
        started,
        ended: Instant::now(),
        ok: r.is_ok(),
        taken_over,
        error: r.err(),
        killed,
    });
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
                    let file = format!("merge-{w}-{n}.zone");
                    let writer = (&store, dir.as_path(), &*rng, &*ops);
                    recorded_import(writer, file, names, false).await;
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
                    let file = format!("replace-{n}.zone");
                    let writer = (&store, dir.as_path(), &*rng, &*ops);
                    recorded_import(writer, file, names, true).await;
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
