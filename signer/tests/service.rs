//! `mongodns-sign serve` keeps signatures from expiring, reading only what
//! is due; without it `show-zone` warns. A real database, the real binary.
//!
//! ```text
//!  example.net. under a policy of 30-s signatures (refresh at 14 s left)
//!  secure-zone ─► no service: show-zone's WARNING once they near expiry
//!  serve ─► for 48 s the earliest expiration never nears now;
//!           refreshes read only due nodes; the zone still verifies
//!  rollover zsk under serve ─► the new key published and the old one
//!           removed by the apex alone; the activation re-signs the zone
//!  SIGTERM ─► the zone's lease handed over at once
//! ```

use backend_mongo::testing::{block_on, database_uri, example_net, TestDb};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

fn sign(db: &str, args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_mongodns-sign"))
        .args(["--mongodb-uri", &database_uri(), "--database", db, "-q"])
        .args(args)
        .output()
        .expect("cannot run mongodns-sign");
    assert!(
        out.status.success(),
        "mongodns-sign {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

struct Service(Child);

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The value of `name` on the service's /metrics, 0 when absent.
fn metric(port: u16, name: &str) -> f64 {
    let out = Command::new("curl")
        .args(["-s", &format!("http://127.0.0.1:{port}/metrics")])
        .output()
        .expect("curl is needed");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find(|l| l.starts_with(name))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
        .unwrap_or(0.0)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A test database holding example.net. and `extra` more names (one A
/// record each), and its apex.
fn example_net_db_of(tag: &str, extra: usize) -> (TestDb, dns::Name) {
    let db = block_on(async {
        let db = TestDb::new(tag).await;
        let (zone, mut nodes) = example_net();
        let host = nodes[1].clone();
        for i in 0..extra {
            let mut n = host.clone();
            n.name = format!("host{i}.example.net.").parse().unwrap();
            nodes.push(n);
        }
        db.write_zone(&zone, &nodes).await;
        db
    });
    (db, "example.net.".parse().unwrap())
}

/// A test database holding example.net., and its apex.
fn example_net_db(tag: &str) -> (TestDb, dns::Name) {
    example_net_db_of(tag, 0)
}

#[test]
fn signatures_never_near_expiry_under_the_service_and_show_zone_warns_without_it() {
    let (db, zone) = example_net_db("sign_service");
    sign(
        &db.name,
        &[
            "add-policy",
            "brief",
            "--rrsig-lifetime",
            "30",
            "--rrsig-refresh",
            "14",
            "--rrsig-jitter",
            "1",
            "--zsk-lifetime",
            "0",
            "--dnskey-ttl",
            "1",
            "--zone-max-ttl",
            "1",
        ],
    );
    sign(
        &db.name,
        &["set-policy", "example.net", "--policy", "brief"],
    );
    sign(&db.name, &["secure-zone", "example.net"]);
    let earliest = || {
        let info = block_on(db.store.find_zone(&zone)).unwrap().unwrap();
        block_on(db.store.earliest_expiry(&zone, info.ver))
            .unwrap()
            .expect("marked nodes")
    };
    // Signed for 29-30 s: due (under 14 s left) within about 16 s, and
    // with nobody to refresh them, show-zone says so.
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        let text = String::from_utf8(sign(&db.name, &["show-zone", "example.net"]).stdout).unwrap();
        if text.contains("WARNING: signatures expire within the refresh window") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no warning before expiry: {text}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    let port = free_port();
    let _service = Service(
        Command::new(env!("CARGO_BIN_EXE_mongodns-sign"))
            .args([
                "--mongodb-uri",
                &database_uri(),
                "--database",
                &db.name,
                "serve",
            ])
            .args(["--interval", "0.2", "--discover-every", "0.2"])
            .args(["--control-listen", &format!("127.0.0.1:{port}")])
            .env("MONGODNS_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::from(
                std::fs::File::create(db.dir.join("serve.log")).unwrap(),
            ))
            .spawn()
            .unwrap(),
    );
    // Three refresh cycles: after its first look, the earliest signature
    // always has more than the refresh window less a few looks left.
    let started = Instant::now();
    let mut lowest = i64::MAX;
    while started.elapsed() < Duration::from_secs(48) {
        let left = earliest() - now();
        assert!(left > 0, "a signature expired");
        if started.elapsed() > Duration::from_secs(5) {
            lowest = lowest.min(left);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(
        lowest >= 11,
        "a signature came within {lowest} s of expiry (refresh at 14 s left)"
    );
    let ver = block_on(db.store.find_zone(&zone)).unwrap().unwrap().ver;
    let total = block_on(db.store.read_version(&zone, ver)).unwrap().len() as f64;
    let refreshed = metric(port, "mongodns_signer_refreshed_signatures_total");
    let reads = metric(port, "mongodns_signer_refresh_nodes_read_total");
    eprintln!("{refreshed} signatures refreshed, {reads} node documents read by refreshes, zone of {total} nodes");
    assert!(refreshed > 0.0 && reads > 0.0, "nothing was refreshed");
    // A node falls due about every 15 s: three or four times in 48 s, once
    // more at the first look (its mark corrected); a whole read per look
    // (every 0.2 s) would read it 240 times.
    let log = std::fs::read_to_string(db.dir.join("serve.log")).unwrap();
    assert!(
        reads <= total * 8.0,
        "refreshes read {reads} documents of a {total}-node zone; the service's log:\n{log}"
    );
    verify(&db, "refreshed.zone");
    block_on(db.drop_db());
}

/// example.net. as exported now passes `dnssec-verify` (kept as `file`).
fn verify(db: &TestDb, file: &str) {
    let text = String::from_utf8(sign(&db.name, &["export-zone", "example.net"]).stdout).unwrap();
    let file = db.dir.join(file);
    std::fs::write(&file, text).unwrap();
    let o = Command::new("dnssec-verify")
        .args(["-o", "example.net."])
        .arg(&file)
        .output()
        .expect("dnssec-verify is needed (bind9-utils)");
    assert!(
        o.status.success(),
        "dnssec-verify: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// `serve` on `db` with `args`, its log in the test directory.
fn start_service(db: &TestDb, log: &str, args: &[&str]) -> Service {
    Service(
        Command::new(env!("CARGO_BIN_EXE_mongodns-sign"))
            .args(["--mongodb-uri", &database_uri(), "--database", &db.name])
            .args(["serve", "--interval", "0.2", "--discover-every", "0.2"])
            .args(args)
            .env("MONGODNS_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::from(
                std::fs::File::create(db.dir.join(log)).unwrap(),
            ))
            .spawn()
            .unwrap(),
    )
}

/// Waits (at most `secs`) until the zone's service lease is held by the
/// process `pid`.
fn wait_for_holder(db: &TestDb, zone: &dns::Name, pid: u32, secs: u64) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    let mark = format!(":{pid}:");
    loop {
        let holder = block_on(
            db.store
                .lock_holder(backend_mongo::lock::SERVICE_LEASE, zone),
        );
        if holder
            .unwrap()
            .is_some_and(|(h, _)| h.owner.contains(&mark))
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "process {pid} did not take the zone within {secs} s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_service_stopped_by_sigterm_hands_its_zones_over_at_once() {
    let (db, zone) = example_net_db("sign_service_stop");
    sign(&db.name, &["secure-zone", "example.net"]);
    // Leases of ten minutes: a takeover after a crash would wait that long.
    let mut first = start_service(&db, "first.log", &["--lease", "600"]);
    wait_for_holder(&db, &zone, first.0.id(), 60);
    let second = start_service(&db, "second.log", &["--lease", "600"]);
    let term = Command::new("kill")
        .args(["-TERM", &first.0.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let status = first.0.wait().unwrap();
    assert!(
        status.success(),
        "the stopped service exits cleanly: {status:?}"
    );
    wait_for_holder(&db, &zone, second.0.id(), 60);
    block_on(db.drop_db());
}

/// The service's log in `db`'s directory, without colours.
fn service_log(db: &TestDb, log: &str) -> String {
    let raw = std::fs::read_to_string(db.dir.join(log)).unwrap_or_default();
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            chars.by_ref().find(|c| *c == 'm');
        } else {
            out.push(c);
        }
    }
    out
}

/// Waits (at most `secs`) until the service's log holds `what`, after
/// `after` when given.
fn wait_for_log(db: &TestDb, log: &str, after: Option<&str>, what: &str, secs: u64) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    let holds = |text: &str| {
        let from = after.map_or(Some(0), |a| text.find(a));
        from.is_some_and(|i| text[i..].contains(what))
    };
    while !holds(&service_log(db, log)) {
        assert!(
            Instant::now() < deadline,
            "no {what:?} (after {after:?}) in the service's log within {secs} s:\n{}",
            service_log(db, log)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_zsk_rollover_re_signs_the_zone_once_and_the_apex_alone_for_its_other_steps() {
    let (db, zone) = example_net_db_of("sign_service_roll", 50);
    let policy = [
        "add-policy",
        "quick",
        "--dnskey-ttl",
        "1",
        "--propagation-delay",
        "1",
        "--zone-max-ttl",
        "1",
        "--zsk-lifetime",
        "0",
    ];
    sign(&db.name, &policy);
    sign(
        &db.name,
        &["set-policy", "example.net", "--policy", "quick"],
    );
    sign(&db.name, &["secure-zone", "example.net"]);
    let service = start_service(&db, "roll.log", &[]);
    wait_for_log(&db, "roll.log", None, "signed up to generation", 60);
    sign(&db.name, &["rollover", "example.net", "zsk"]);
    wait_for_log(&db, "roll.log", Some("key removed"), "keys re-signed", 120);
    let ver = block_on(db.store.find_zone(&zone)).unwrap().unwrap().ver;
    let nodes = block_on(db.store.read_version(&zone, ver)).unwrap().len();
    drop(service);
    let log = service_log(&db, "roll.log");
    let reads: Vec<usize> = log
        .lines()
        .filter(|l| l.contains("keys re-signed"))
        .filter_map(|l| {
            l.split("nodes_read=")
                .nth(1)?
                .split(' ')
                .next()?
                .parse()
                .ok()
        })
        .collect();
    // Published, activated (the old key retired), removed, each with its
    // own re-sign: the zone read whole once.
    assert!(reads.len() >= 3, "key steps re-signed: {reads:?}\n{log}");
    let whole = reads.iter().filter(|r| **r > 1).count();
    assert_eq!(
        whole, 1,
        "whole re-signs (nodes read each: {reads:?}, the zone has {nodes})\n{log}"
    );
    assert!(
        reads.contains(&nodes),
        "the activation read the zone: {reads:?}"
    );
    verify(&db, "rolled.zone");
    block_on(db.drop_db());
}
