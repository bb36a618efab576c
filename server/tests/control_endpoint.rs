//! The control endpoint against the real binary: purges need the token
//! while the read-only pages stay open; one source's silent connections
//! hold only its share of the slots while `/health` is served to others;
//! accept errors (EMFILE, forced with a low file limit) do not end the
//! endpoint; `/metrics` types each count a
//! counter and each level a gauge.

use mongodns_testkit::*;
use std::io::Write;
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
        "tcp_connections",
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

/// `GET /health` from another source prefix (127.0.1.1), by curl, with a
/// bound on the whole exchange: the status code, or curl's failure.
fn health_from_elsewhere(control: u16) -> String {
    let out = Command::new("curl")
        .args(["-sS", "-o", "/dev/null", "-w", "%{http_code}"])
        .args(["--interface", "127.0.1.1", "--max-time", "1.5"])
        .arg(format!("http://127.0.0.1:{control}/health"))
        .output()
        .expect("curl runs");
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn one_silent_source_cannot_take_every_slot() {
    let db = setup("ctl_cap");
    let (server, control) = start_with_control(&db.name, &[]);
    // As many silent connections from 127.0.0.1 as there are slots (16),
    // half of them with a partial request line: the source's share (4) is
    // held, the rest are closed at once.
    let mut silent: Vec<_> = (0..16)
        .map(|i| {
            let mut s = TcpStream::connect(("127.0.0.1", control)).unwrap();
            if i % 2 == 0 {
                s.write_all(b"GET /hea").unwrap();
            }
            s
        })
        .collect();
    let health = health_from_elsewhere(control);
    assert!(
        health.starts_with("200"),
        "/health from elsewhere: {health}"
    );
    // Every silent connection is closed in the end (at once past the
    // share), and its slot freed.
    for stream in &mut silent {
        assert!(closed_within(stream, Duration::from_secs(20)));
    }
    assert_eq!(stat(control, "control_refused"), 12);
    assert!(http(control, "GET", "/health").0.contains("200"));
    drop(server);
    block_on(db.drop_db());
}

/// Copies the server's stderr to ours, and sends on the channel returned
/// once a line contains `needle`.
fn warnings_seen(server: &mut KillOnDrop, needle: &'static str) -> std::sync::mpsc::Receiver<()> {
    use std::io::BufRead;
    let stderr = server.0.stderr.take().expect("stderr is piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            eprintln!("{line}");
            if line.contains(needle) {
                let _ = tx.send(());
            }
        }
    });
    rx
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
    let mut server = KillOnDrop(
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
            .stderr(Stdio::piped())
            .spawn()
            .expect("prlimit (util-linux) runs the server"),
    );
    let accept_failed = warnings_seen(&mut server, "HTTP accept error");
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
    // Held until the server said accept failed (it logs the error).
    accept_failed
        .recv_timeout(Duration::from_secs(20))
        .expect("the flood ran the server out of descriptors (an accept error logged)");
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
