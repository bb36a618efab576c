//! The signing service keeps a child zone valid through ZSK, KSK and
//! algorithm rollovers, judged by a real validating resolver, while three
//! writers change the zone and one of two `mongodns-sign serve` processes
//! is killed at random moments.
//!
//! ```text
//!  ptest. (secured once, no policy) ─► DS ─► child.ptest. (policy: ZSK 25 s,
//!     KSK 50 s, signatures 60 s, TTLs 2 s; parent check at the server)
//!  server ◄── unbound (trust anchor: ptest.'s KSK) ◄── a DO=1 query every 100 ms
//!         ◄── writers: mongodns-import, nsupdate, API PATCH (writers.rs)
//!  two serve processes (leases of 6 s), one SIGKILLed and restarted at random
//!  registry: child CDS ─► parent DS (parent.rs)
//!  every key state change: writers paused, AXFR, dnssec-verify + ldns-verify-zone
//!  then the policy's algorithm 13 ─► 15: algorithm rollover, same checks
//! ```

mod parent;
mod resolver;
mod writers;

use backend_mongo::dnssec_store::{KeyState, StoredKey};
use mongodns_testkit::*;
use resolver::Unbound;
use std::collections::BTreeSet;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use writers::{Shared, Target};

const PARENT: &str = "ptest.";
const CHILD: &str = "child.ptest.";
const SECRET: &str = "c2lnbmluZy1zZXJ2aWNlLXRlc3Qta2V5LTAxMjM0NTY=";
const API_KEY: &str = "service-test-key";

const PARENT_TEXT: &str = "$ORIGIN ptest.\n$TTL 2\n\
@ IN SOA ns.ptest. hm.ptest. 1 60 30 600 2\n@ IN NS ns.ptest.\nns IN A 127.0.0.1\n\
www IN A 192.0.2.1\nchild IN NS ns.child.ptest.\nns.child IN A 127.0.0.1\n";

fn child_text() -> String {
    let mut t = "$ORIGIN child.ptest.\n$TTL 2\n\
@ IN SOA ns.child.ptest. hm.child.ptest. 1 60 30 600 2\n@ IN NS ns.child.ptest.\n\
ns IN A 127.0.0.1\n"
        .to_string();
    for i in 0..20 {
        t.push_str(&format!("w{i} IN A 192.0.2.{i}\n"));
    }
    t
}

/// A `mongodns-sign serve` process, killed on drop.
struct Service(Child);

impl Service {
    fn start(uri: &str, db: &str, log: &std::path::Path) -> Service {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .unwrap();
        let child = Command::new(binary("mongodns-sign"))
            .args(["--mongodb-uri", uri, "--database", db, "serve"])
            .args(["--interval", "0.3", "--discover-every", "0.5"])
            // Signatures fall due 20 s before they expire: a takeover after
            // a kill must come well within that (the default, 30 s, would
            // not; the service warns of it).
            .args(["--lease", "6"])
            .env("MONGODNS_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .spawn()
            .expect("mongodns-sign serve");
        Service(child)
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn sign_tool(db: &str, args: &[&str]) {
    run_tool(db, "mongodns-sign", args);
}

/// The policy under test, with `algorithm`.
fn add_policy(db: &str, algorithm: &str) {
    sign_tool(
        db,
        &[
            "add-policy",
            "roll",
            "--algorithm",
            algorithm,
            "--zsk-lifetime",
            "25",
            "--ksk-lifetime",
            "50",
            "--rrsig-lifetime",
            "60",
            "--rrsig-refresh",
            "20",
            "--rrsig-jitter",
            "10",
            "--dnskey-ttl",
            "2",
            "--propagation-delay",
            "1",
            "--zone-max-ttl",
            "3",
            "--ds-ttl",
            "2",
            "--ds-check-interval",
            "1",
        ],
    );
}

fn keys(db: &TestZoneDb) -> Vec<StoredKey> {
    block_on(db.store.zone_keys(&CHILD.parse().unwrap())).unwrap()
}

/// The keys as (tag, role, algorithm, state): what a state change changes.
fn key_states(db: &TestZoneDb) -> BTreeSet<(u16, &'static str, u8, &'static str)> {
    keys(db)
        .iter()
        .map(|k| (k.tag, k.role(), k.algorithm, k.state.as_str()))
        .collect()
}

/// Waits (at most `limit`) until `check` holds.
fn wait_for(what: &str, limit: Duration, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !check() {
        assert!(Instant::now() < deadline, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The parent's KSK as a trust anchor line.
fn parent_anchor(port: u16) -> String {
    let ksk = parent::records(port, PARENT, "DNSKEY")
        .into_iter()
        .find(|l| l.starts_with("257 "))
        .expect("the parent has a KSK");
    format!("{PARENT} DNSKEY {ksk}")
}

/// Pauses the writers, takes the child by AXFR and verifies it.
fn verify_now(port: u16, dir: &std::path::Path, shared: &Shared) {
    shared.pause.store(true, Ordering::SeqCst);
    wait_for("writers idle", Duration::from_secs(60), || {
        shared.idle.load(Ordering::SeqCst)
    });
    // Let the signing service sign what the last writes handed to it.
    std::thread::sleep(Duration::from_millis(700));
    let text = axfr_text(port, CHILD);
    verify_signed_zone(dir, CHILD, &text);
    shared.pause.store(false, Ordering::SeqCst);
}

/// The resolver's answers: every one must be validated (AD), none SERVFAIL.
#[derive(Default)]
struct Answers {
    asked: u64,
    bad: Vec<String>,
}

fn ask_forever(u: &Unbound, shared: &Shared, answers: &Mutex<Answers>, started: Instant) {
    let mut i = 0usize;
    while !shared.stop.load(Ordering::SeqCst) {
        i += 1;
        let written = shared.written.lock().unwrap().clone();
        let (name, qtype) = match i % 5 {
            0 => (CHILD.to_string(), 48),
            1 => (format!("nx{i}.{CHILD}"), 1),
            2 if !written.is_empty() => (written[i % written.len()].clone(), 1),
            _ => (format!("w{}.{CHILD}", i % 20), 1),
        };
        let got = u.ask(&name, qtype);
        let mut a = answers.lock().unwrap();
        a.asked += 1;
        match got {
            Some((0 | 3, true)) => {}
            other => a.bad.push(format!(
                "{:.1} s {name} type {qtype}: {other:?}",
                started.elapsed().as_secs_f64()
            )),
        }
        drop(a);
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Watches the keys; at every change verifies the zone. Returns when
/// `done` holds for the keys.
fn watch_states(
    db: &TestZoneDb,
    port: u16,
    shared: &Shared,
    seen: &mut Vec<BTreeSet<(u16, &'static str, u8, &'static str)>>,
    limit: Duration,
    done: impl Fn(&[StoredKey]) -> bool,
) {
    let deadline = Instant::now() + limit;
    loop {
        let now = key_states(db);
        if seen.last() != Some(&now) {
            eprintln!("key states: {now:?}");
            verify_now(port, &db.dir, shared);
            seen.push(now);
        }
        if done(&keys(db)) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "rollovers not done within {limit:?}: {seen:#?}"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// Tells every thread of the run to stop when dropped (also on a panic).
struct StopOnDrop<'a>(&'a Shared);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.stop.store(true, Ordering::SeqCst);
    }
}

/// Kills one of the two services every 4–12 s and starts it again.
fn kill_at_random(uri: &str, db: &str, log: &std::path::Path, shared: &Shared, kills: &Mutex<u64>) {
    let mut rng = Rng(seed("SIGNING_SERVICE_SEED"));
    let mut services = [Service::start(uri, db, log), Service::start(uri, db, log)];
    while !shared.stop.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(4000 + rng.below(8000)));
        let which = rng.below(2) as usize;
        let _ = services[which].0.kill();
        let _ = services[which].0.wait();
        *kills.lock().unwrap() += 1;
        std::thread::sleep(Duration::from_millis(500 + rng.below(2000)));
        services[which] = Service::start(uri, db, log);
    }
}

fn rolled(initial: &[StoredKey], keys: &[StoredKey], sep: bool) -> bool {
    let gone = initial
        .iter()
        .filter(|k| k.is_ksk() == sep)
        .all(|o| keys.iter().all(|k| k.id != o.id));
    let active = keys
        .iter()
        .any(|k| k.is_ksk() == sep && k.state == KeyState::Active);
    gone && active && keys.iter().filter(|k| k.is_ksk() == sep).count() == 1
}

#[test]
fn rollovers_under_writers_with_two_services_give_no_bogus_answer() {
    let db = block_on(async {
        let db = TestZoneDb::new("signing_service").await;
        db.import(PARENT, PARENT_TEXT, true).await;
        db.import(CHILD, &child_text(), true).await;
        db
    });
    let uri = backend_mongo::testing::database_uri();
    sign_tool(&db.name, &["secure-zone", PARENT]);
    let api_port = free_tcp_port();
    let tsig = format!("hmac-sha256:upd:{SECRET}");
    let server = ServerProcess::start(
        &db.name,
        &[
            "--axfr-allow",
            "127.0.0.1/32",
            "--tsig-key",
            &format!("{tsig} zones={CHILD} update"),
            "--api-listen",
            &format!("127.0.0.1:{api_port}"),
            "--api-key",
            API_KEY,
        ],
    );
    let port = server.port;
    add_policy(&db.name, "ecdsap256sha256");
    sign_tool(
        &db.name,
        &[
            "set-policy",
            CHILD,
            "--policy",
            "roll",
            "--parent",
            &format!("127.0.0.1:{port}"),
        ],
    );
    let shared = Arc::new(Shared::default());
    let answers = Mutex::new(Answers::default());
    let kills = Mutex::new(0u64);
    let log = db.dir.join("serve.log");
    let started = Instant::now();
    std::thread::scope(|s| {
        // A failed check unwinds through here: the threads below must stop
        // too, or the scope would wait for them for ever.
        let _stop = StopOnDrop(&shared);
        s.spawn(|| kill_at_random(&uri, &db.name, &log, &shared, &kills));
        wait_for(
            "the child secured by its policy",
            Duration::from_secs(60),
            || !parent::records(port, CHILD, "CDS").is_empty(),
        );
        s.spawn(|| {
            while !shared.stop.load(Ordering::SeqCst) {
                parent::follow_cds(&uri, &db.name, port, PARENT, CHILD);
                std::thread::sleep(Duration::from_millis(300));
            }
        });
        wait_for(
            "the parent serves the child's DS",
            Duration::from_secs(30),
            || !parent::records(port, CHILD, "DS").is_empty(),
        );
        let unbound = Unbound::start(&db.dir, port, &[PARENT, CHILD], &parent_anchor(port));
        let target = Target {
            uri: uri.clone(),
            database: db.name.clone(),
            zone: CHILD.into(),
            dns_port: port,
            api_port,
            api_key: API_KEY.into(),
            tsig: tsig.clone(),
            dir: db.dir.clone(),
        };
        let (sh, an) = (&shared, &answers);
        s.spawn(move || writers::run(&target, sh));
        s.spawn(move || ask_forever(&unbound, sh, an, started));
        let initial = keys(&db);
        let mut seen = Vec::new();
        watch_states(
            &db,
            port,
            &shared,
            &mut seen,
            Duration::from_secs(180),
            |k| rolled(&initial, k, false) && rolled(&initial, k, true),
        );
        eprintln!(
            "ZSK and KSK rolled after {:.0} s; algorithm 13 -> 15",
            started.elapsed().as_secs_f64()
        );
        add_policy(&db.name, "ed25519");
        sign_tool(&db.name, &["set-policy", CHILD, "--policy", "roll"]);
        watch_states(
            &db,
            port,
            &shared,
            &mut seen,
            Duration::from_secs(120),
            |k| {
                k.iter().all(|k| k.algorithm == 15)
                    && k.iter().filter(|k| k.state == KeyState::Active).count() == 2
            },
        );
        verify_now(port, &db.dir, &shared);
        shared.stop.store(true, Ordering::SeqCst);
        let a = answers.lock().unwrap();
        let failed = shared.failed.lock().unwrap();
        eprintln!(
            "{:.0} s: {} resolver answers, {} not validated; {} writer rounds ({} failed writes); {} services killed; {} key states",
            started.elapsed().as_secs_f64(), a.asked, a.bad.len(), shared.rounds.load(Ordering::SeqCst),
            failed.len(), kills.lock().unwrap(), seen.len()
        );
        assert!(
            a.bad.is_empty(),
            "answers not validated: {:#?}\nunbound: {}",
            a.bad,
            Unbound::bogus_log(&db.dir)
        );
        assert!(failed.is_empty(), "writes failed: {failed:#?}");
        assert!(
            a.asked > 300 && shared.rounds.load(Ordering::SeqCst) > 20,
            "too little traffic to judge"
        );
        assert!(*kills.lock().unwrap() >= 2, "the services were not killed");
    });
    drop(server);
    block_on(db.drop_db());
}
