//! `mongodns-sign serve` keeps signatures from expiring, reading only what
//! is due; without it `show-zone` warns. A real database, the real binary.
//!
//! ```text
//!  example.net. under a policy of 30-s signatures (refresh at 14 s left)
//!  secure-zone ─► no service: show-zone's WARNING once they near expiry
//!  serve ─► for 48 s the earliest expiration never nears now;
//!           refreshes read only due nodes; the zone still verifies
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

/// A test database holding example.net., and its apex.
fn example_net_db(tag: &str) -> (TestDb, backend_mongo::Name) {
    let db = block_on(async {
        let db = TestDb::new(tag).await;
        let (zone, nodes) = example_net();
        db.write_zone(&zone, &nodes).await;
        db
    });
    (db, "example.net.".parse().unwrap())
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
    let text = String::from_utf8(sign(&db.name, &["export-zone", "example.net"]).stdout).unwrap();
    let file = db.dir.join("refreshed.zone");
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
    block_on(db.drop_db());
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
fn wait_for_holder(db: &TestDb, zone: &backend_mongo::Name, pid: u32, secs: u64) {
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
