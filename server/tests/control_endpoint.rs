//! The control endpoint against the real binary (issue 20, item 8): purges
//! need the token while the read-only pages stay open; connections past
//! the cap are closed at once; accept errors (EMFILE, forced with a low
//! file limit) do not end the endpoint; `/metrics` types each count a
//! counter and each level a gauge.

use mongodns_testkit::*;
use std::io::Read;
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ZONE: &str = "$ORIGIN ctl.test.\n@ 300 IN SOA ns admin 1 3600 600 86400 60\n@ 300 IN NS ns\nns 300 IN A 192.0.2.1\n";

fn setup(tag: &str) -> TestZoneDb {
    block_on(async {
        let db = TestZoneDb::new(tag).await;
        db.import("ctl.test.", ZONE, false).await;
        db
    })
}

#[test]
fn purges_need_the_token_and_reading_stays_open() {
    let db = setup("ctl_token");
    let (server, control) = start_with_control(&db.name, &["--control-token", "s3cret-t0ken"]);
    assert!(
        http(control, "POST", "/purge").0.contains("401"),
        "no token"
    );
    let wrong = http_as(control, "POST", "/purge", Some("s3cret-t0kem"));
    assert!(wrong.0.contains("401"), "wrong token: {wrong:?}");
    let good = http_as(control, "POST", "/purge", Some("s3cret-t0ken"));
    assert!(
        good.0.contains("200") && good.1.contains("purged_replies"),
        "{good:?}"
    );
    assert!(http(control, "GET", "/metrics").0.contains("200"));
    assert!(http(control, "GET", "/health").0.contains("200"));
    assert!(http(control, "GET", "/stats").0.contains("200"));
    assert_eq!(stat(control, "control_unauthorized"), 2);
    drop(server);
    // Without a configured token, purging is off.
    let (server, control) = start_with_control(&db.name, &[]);
    let off = http_as(control, "POST", "/purge", Some("anything"));
    assert!(off.0.contains("403"), "{off:?}");
    drop(server);
    block_on(db.drop_db());
}

#[test]
fn counters_are_typed_counter_and_levels_gauge() {
    let db = setup("ctl_types");
    let (server, control) = start_with_control(&db.name, &[]);
    let (status, body) = http(control, "GET", "/metrics");
    assert!(status.contains("200"), "{status}");
    let type_of = |name: &str| {
        let prefix = format!("# TYPE mongodns_{name} ");
        let types: Vec<&str> = body
            .lines()
            .filter_map(|l| l.strip_prefix(prefix.as_str()))
            .collect();
        assert_eq!(types.len(), 1, "one TYPE line for {name}:\n{body}");
        types[0].to_string()
    };
    for name in [
        "packet_cache_hits",
        "packet_cache_misses",
        "packet_cache_evictions",
        "record_cache_hits",
        "record_cache_misses",
        "denial_cache_hits",
        "zone_cache_misses",
        "db_queries",
        "db_errors",
        "queries_udp",
        "query_log_dropped",
        "stale_replies",
        "db_shed",
        "tcp_io_timeouts",
        "control_refused",
        "queries_total",
        "kernel_udp_errors_total",
    ] {
        assert_eq!(type_of(name), "counter", "{name}");
    }
    for name in [
        "packet_cache_entries",
        "packet_cache_bytes",
        "record_cache_entries",
        "denial_cache_bytes",
        "zones_known",
        "db_inflight",
        "queries_inflight",
        "uptime_seconds",
        "zone_registry_complete",
        "freshness_lag_ms",
        "build_info",
    ] {
        assert_eq!(type_of(name), "gauge", "{name}");
    }
    assert_eq!(type_of("db_latency_seconds"), "histogram");
    // /stats keeps every name /metrics shows unlabelled.
    let (_, stats) = http(control, "GET", "/stats");
    for name in [
        "packet_cache_hits",
        "packet_cache_entries",
        "control_refused",
    ] {
        assert!(stats.contains(&format!("\"{name}\":")), "{name}: {stats}");
    }
    drop(server);
    block_on(db.drop_db());
}

#[test]
fn connections_past_the_cap_are_closed() {
    let db = setup("ctl_cap");
    let (server, control) = start_with_control(&db.name, &["--control-max-connections", "2"]);
    // Two connections that send nothing hold both slots (up to 5 s each).
    let held: Vec<_> = (0..2)
        .map(|_| TcpStream::connect(("127.0.0.1", control)).unwrap())
        .collect();
    std::thread::sleep(Duration::from_secs(1));
    let mut third = TcpStream::connect(("127.0.0.1", control)).unwrap();
    third
        .set_read_timeout(Some(Duration::from_secs(3)))
        .unwrap();
    let mut buf = [0u8; 16];
    let n = third.read(&mut buf);
    assert!(
        matches!(n, Ok(0))
            || n.as_ref()
                .is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionReset),
        "the third connection is closed at once: {n:?}"
    );
    drop(held);
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        http(control, "GET", "/health").0.contains("200"),
        "served once the slots free"
    );
    assert_eq!(stat(control, "control_refused"), 1);
    drop(server);
    block_on(db.drop_db());
}

/// A child process killed when the test ends, failed or not.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_endpoint_survives_running_out_of_file_descriptors() {
    let db = setup("ctl_emfile");
    let control = free_tcp_port();
    let port = free_tcp_port();
    // The server with 128 file descriptors; 400 control connections run
    // it out, so accept fails with EMFILE until they close.
    let _server = KillOnDrop(
        Command::new("prlimit")
            .args(["--nofile=128:128", "--"])
            .arg(env!("CARGO_BIN_EXE_mongodns-server"))
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .args([
                "--mongodb-uri",
                &database_uri(),
                "--database",
                &db.name,
                "--workers",
                "1",
            ])
            .args(["--control-listen", &format!("127.0.0.1:{control}")])
            .args(["--control-max-connections", "1000"])
            .env_remove("MONGODB_URI")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("prlimit (util-linux) runs the server"),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", control)).is_err() {
        assert!(
            Instant::now() < deadline,
            "the control endpoint did not start"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let flood: Vec<_> = (0..400)
        .filter_map(|_| TcpStream::connect(("127.0.0.1", control)).ok())
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    drop(flood);
    // Answered again once descriptors are free (accept errors were counted).
    let deadline = Instant::now() + Duration::from_secs(15);
    let errors = loop {
        if TcpStream::connect(("127.0.0.1", control)).is_ok() {
            let (status, _) = http(control, "GET", "/health");
            if status.contains("200") {
                break stat(control, "control_accept_errors");
            }
        }
        assert!(
            Instant::now() < deadline,
            "the control endpoint stopped after EMFILE"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    eprintln!("control accept errors during the flood: {errors}");
    assert!(
        errors > 0,
        "the flood did run the server out of descriptors"
    );
    block_on(db.drop_db());
}
