//! Running the server like production software, against the real binary and
//! database: configuration precedence and errors, signals (SIGTERM drains,
//! SIGHUP reopens the query log), metrics that move, query-log lines and
//! counted drops.

use mongodns_testkit::*;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const ZONE: &str = "$ORIGIN ops.test.\n$TTL 3600\n@ IN SOA ns admin 1 3600 600 86400 300\n@ IN NS ns\nns IN A 192.0.2.1\nwww IN A 192.0.2.10\nslow IN A 192.0.2.11\n";

fn server_bin() -> &'static str {
    env!("CARGO_BIN_EXE_mongodns-server")
}

fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mdops_{tag}_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn with_zone(tag: &str) -> TestZoneDb {
    block_on(async {
        let db = TestZoneDb::new(tag).await;
        db.import("ops.test.", ZONE, false).await;
        db
    })
}

/// Runs the binary with `args` and `env`, returning (exit code, stdout, stderr).
fn run(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut cmd = Command::new(server_bin());
    cmd.args(args);
    for (k, _) in std::env::vars() {
        if k.starts_with("MONGODNS_") || k == "MONGODB_URI" {
            cmd.env_remove(k);
        }
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn check_config_applies_flag_over_env_over_file_over_default() {
    let dir = scratch("precedence");
    let file = dir.join("mongodns.toml");
    std::fs::write(
        &file,
        "workers = 3\ndatabase = \"from_file\"\nquery_log_sample = 7\nlisten = [\"127.0.0.1:5301\", \"[::1]:5301\"]\nlog_format = \"json\"\n",
    )
    .unwrap();
    let (code, out, err) = run(
        &[
            "--config",
            file.to_str().unwrap(),
            "--check-config",
            "--workers",
            "5",
        ],
        &[
            ("MONGODNS_DATABASE", "from_env"),
            ("MONGODNS_WORKERS", "4"),
            ("MONGODNS_READ_PREFERENCE", "secondaryPreferred"),
        ],
    );
    assert_eq!(code, 0, "stderr: {err}");
    for line in [
        "workers = 5  # flag",
        "database = \"from_env\"  # env",
        "read_preference = \"secondaryPreferred\"  # env",
        "query_log_sample = 7  # file",
        "listen = [\"127.0.0.1:5301\", \"[::1]:5301\"]  # file",
        "log_format = \"json\"  # file",
        "max_udp_size = 1232  # default",
        "# control_listen = (unset)",
        "# configuration is valid",
    ] {
        assert!(
            out.lines().any(|l| l == line),
            "no line {line:?} in:\n{out}"
        );
    }
    // The printed configuration is itself a valid config file.
    let printed = dir.join("printed.toml");
    std::fs::write(&printed, &out).unwrap();
    let (code, again, err) = run(
        &["--config", printed.to_str().unwrap(), "--check-config"],
        &[],
    );
    assert_eq!(code, 0, "stderr: {err}");
    assert!(again.contains("workers = 5  # file"), "{again}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn bad_configuration_is_a_clear_error_with_status_2() {
    let dir = scratch("bad");
    let cases: [(&str, &[&str]); 4] = [
        ("wrokers = 2\n", &["wrokers"]),
        ("workers = \"many\"\n", &["workers", "line 1"]),
        (
            "max_udp_size = 100\nread_preference = \"sometimes\"\naxfr_allow = [\"10.0.0.0/99\"]\nudp_batch = 40\n",
            &["max_udp_size", "read_preference", "axfr_allow", "udp_batch"],
        ),
        ("listen = [\"not an address\"]\n", &["listen"]),
    ];
    for (i, (text, needles)) in cases.iter().enumerate() {
        let file = dir.join(format!("bad{i}.toml"));
        std::fs::write(&file, text).unwrap();
        let (code, out, err) = run(&["--config", file.to_str().unwrap(), "--check-config"], &[]);
        assert_eq!(code, 2, "{text:?} was accepted:\n{out}");
        for n in *needles {
            assert!(
                err.contains(n),
                "{text:?}: error does not name {n:?}: {err}"
            );
        }
    }
    let (code, _, err) = run(
        &["--config", "/nonexistent/mongodns.toml", "--check-config"],
        &[],
    );
    assert_eq!(code, 2);
    assert!(err.contains("/nonexistent/mongodns.toml"), "{err}");
    // The server itself refuses to start with the same message.
    let file = dir.join("bad0.toml");
    let (code, _, err) = run(&["--config", file.to_str().unwrap()], &[]);
    assert_eq!(code, 2);
    assert!(err.contains("wrokers"), "{err}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn check_config_checks_tsig_keys_and_hides_every_secret() {
    let dir = scratch("tsig_check");
    let keyfile = dir.join("keys");
    std::fs::write(
        &keyfile,
        "k3:c2VjcmV0 zones=a.test. update\nk4:not-base64!\n",
    )
    .unwrap();
    let keyfile = keyfile.to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["--tsig-key", "k:not-base64!"], "tsig_key"),
        (&["--tsig-key", "hmac-md5:k:c2VjcmV0"], "hmac-md5"),
        (&["--tsig-key", "k:c2VjcmV0 update"], "zones="),
        (
            &["--tsig-keyfile", "/nonexistent/keys"],
            "/nonexistent/keys",
        ),
        (&["--tsig-keyfile", keyfile], ":2:"),
        (&["--tsig-min-mac-bytes", "8"], "tsig_min_mac_bytes"),
    ];
    for (args, needle) in cases {
        let mut all = args.to_vec();
        all.push("--check-config");
        let (code, out, err) = run(&all, &[]);
        assert_eq!(code, 2, "{args:?} was accepted:\n{out}");
        assert!(
            err.contains(needle),
            "{args:?}: error lacks {needle:?}: {err}"
        );
        assert!(!err.contains("c2VjcmV0"), "{args:?}: a secret in {err}");
    }
    // A secret followed by a tab, not a space, then a scope with colons:
    // still hidden, the scope shown.
    let key = "hmac-sha256:k:c2VjcmV0\tfrom=2001:db8::/32 zones=a.test.";
    let (code, out, err) = run(&["--tsig-key", key, "--check-config"], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("k:<secret> from=2001:db8::/32 zones=a.test."),
        "{out}"
    );
    assert!(!out.contains("c2VjcmV0"), "a secret printed: {out}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn every_binary_has_a_manual_style_help() {
    let (code, out, _) = run(&["--help"], &[]);
    assert_eq!(code, 0);
    for needle in [
        "SIGNALS:",
        "SIGHUP",
        "EXIT STATUS:",
        "MONGODNS_QUERY_LOG",
        "--check-config",
    ] {
        assert!(out.contains(needle), "--help lacks {needle}");
    }
}

#[test]
fn sigterm_answers_queries_in_flight_then_exits_0() {
    let db = with_zone("term");
    let relay = Relay::to_database();
    let uri = relay.uri();
    let control = free_tcp_port();
    let server = ServerProcess::start_with_uri(
        &uri,
        &db.name,
        &[
            "--query-timeout-ms",
            "20000",
            "--shutdown-grace-ms",
            "15000",
            "--control-listen",
            &format!("127.0.0.1:{control}"),
        ],
    );
    let port = server.port;
    relay.slow(600);
    // An uncached query: it waits on the slowed database.
    let asker = std::thread::spawn(move || {
        let q = build_query(0x5151, "slow.ops.test.", 1, None, false);
        udp_exchange(port, &q, Duration::from_secs(30))
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    while stat(control, "queries_inflight") == 0 {
        assert!(Instant::now() < deadline, "the query never got in flight");
        std::thread::sleep(Duration::from_millis(20));
    }
    let sent_at = Instant::now();
    server.signal("TERM");
    let reply = asker
        .join()
        .unwrap()
        .expect("the query in flight got no reply");
    let m = hickory_proto::op::Message::from_vec(&reply).unwrap();
    assert_eq!(
        m.metadata.response_code,
        hickory_proto::op::ResponseCode::NoError
    );
    assert_eq!(lines(&m.answers), vec!["slow.ops.test. 3600 A 192.0.2.11"]);
    assert!(
        sent_at.elapsed() > Duration::from_millis(300),
        "answered before the signal mattered"
    );
    let status = server
        .wait_exit(Duration::from_secs(20))
        .expect("the server did not exit after SIGTERM");
    assert!(status.success(), "exit status {status}");
    // It stopped accepting: nothing answers any more.
    let q = build_query(0x5252, "www.ops.test.", 1, None, false);
    assert!(udp_exchange(port, &q, Duration::from_millis(300)).is_none());
    relay.slow(0);
    block_on(db.drop_db());
}

fn read_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

fn wait_for(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn query_log_lines_carry_the_fields_and_sighup_reopens_the_file() {
    let db = with_zone("qlog");
    let dir = scratch("qlog");
    let log = dir.join("queries.log");
    let server = ServerProcess::start(&db.name, &["--query-log", log.to_str().unwrap()]);
    // The start-up probe (ready.invalid) may be logged too: look for ours.
    let m = ask_udp(server.port, "WwW.Ops.Test.", 1, Some((1232, true)));
    let size = m.to_vec().unwrap().len();
    ask_tcp(server.port, "nothing.ops.test.", 28, None);
    let q = build_query(0x1111, "www.ops.test.", 1, None, false);
    udp_exchange(server.port, &q[..q.len() - 3], Duration::from_millis(300)); // truncated: FORMERR or dropped
    wait_for("the log lines", || read_lines(&log).len() >= 3);
    let lines = read_lines(&log);
    let www = lines
        .iter()
        .find(|l| l.contains("WwW.Ops.Test."))
        .unwrap_or_else(|| panic!("no line for the query in {lines:?}"));
    let f: Vec<&str> = www.split(' ').collect();
    assert_eq!(f.len(), 9, "{www}");
    assert!(f[0].ends_with('Z') && f[0].len() == 27, "time: {www}");
    assert!(f[1].starts_with("127.0.0.1#"), "client: {www}");
    assert_eq!(
        &f[2..7],
        &["udp", "WwW.Ops.Test.", "IN", "A", "NOERROR"],
        "{www}"
    );
    assert_eq!(f[7], "e,do,aa", "{www}");
    assert_eq!(f[8], size.to_string(), "{www}");
    let nx = lines
        .iter()
        .find(|l| l.contains("nothing.ops.test."))
        .expect("tcp line");
    assert!(
        nx.contains(" tcp nothing.ops.test. IN AAAA NXDOMAIN aa "),
        "{nx}"
    );

    // logrotate: move the file away, SIGHUP, the server writes a new one.
    let rotated = dir.join("queries.log.1");
    std::fs::rename(&log, &rotated).unwrap();
    server.signal("HUP");
    wait_for("the reopened file", || {
        ask_udp(server.port, "after.ops.test.", 1, None);
        read_lines(&log)
            .iter()
            .any(|l| l.contains("after.ops.test."))
    });
    // (a query asked before the writer saw the HUP may land in the old file)
    assert!(read_lines(&rotated)
        .iter()
        .any(|l| l.contains("WwW.Ops.Test.")));
    // Still serving after the HUP.
    assert_eq!(
        ask_udp(server.port, "www.ops.test.", 1, None)
            .metadata
            .response_code,
        hickory_proto::op::ResponseCode::NoError
    );
    drop(server);
    let _ = std::fs::remove_dir_all(dir);
    block_on(db.drop_db());
}

fn metric(body: &str, series: &str) -> u64 {
    body.lines()
        .find_map(|l| l.strip_prefix(series).and_then(|v| v.strip_prefix(' ')))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map_or(0, |v| v as u64)
}

#[test]
fn metrics_move_under_load() {
    let db = with_zone("metrics");
    let control = free_tcp_port();
    let server = ServerProcess::start(
        &db.name,
        &["--control-listen", &format!("127.0.0.1:{control}")],
    );
    block_on(async {
        let p = backend_mongo::JobProgress {
            id: "import:ops.test.".into(),
            kind: "import".into(),
            zone: "ops.test.".into(),
            state: "running".into(),
            done: 1234,
            total: 5000,
            host: "h".into(),
            pid: 1,
            started_ms: 0,
            updated_ms: 0,
        };
        db.store.put_progress(&p).await.unwrap();
    });
    let (_, before) = http(control, "GET", "/metrics");
    let a = "mongodns_queries_total{transport=\"udp\",qtype=\"A\",rcode=\"NOERROR\"}";
    let nx = "mongodns_queries_total{transport=\"udp\",qtype=\"MX\",rcode=\"NXDOMAIN\"}";
    let tcp = "mongodns_queries_total{transport=\"tcp\",qtype=\"AAAA\",rcode=\"NOERROR\"}";
    let dropped = "mongodns_dropped_total{transport=\"udp\",reason=\"unanswerable\"}";
    for _ in 0..50 {
        ask_udp(server.port, "www.ops.test.", 1, None);
        ask_udp(server.port, "nothing.ops.test.", 15, None);
    }
    ask_tcp(server.port, "www.ops.test.", 28, None);
    // A response (QR set) gets no reply at all.
    let mut response = build_query(0x2222, "www.ops.test.", 1, None, false);
    response[2] |= 0x80;
    assert!(udp_exchange(server.port, &response, Duration::from_millis(300)).is_none());
    let (status, after) = http(control, "GET", "/metrics");
    assert!(status.contains("200"), "{status}");
    assert!(metric(&after, a) >= metric(&before, a) + 50, "{after}");
    assert!(metric(&after, nx) >= metric(&before, nx) + 50, "{after}");
    assert_eq!(metric(&after, tcp), 1, "{after}");
    assert_eq!(
        metric(&after, dropped),
        metric(&before, dropped) + 1,
        "{after}"
    );
    for needle in [
        "mongodns_queries_inflight ",
        "mongodns_freshness_lag_ms ",
        "mongodns_packet_cache_hits ",
        "mongodns_db_latency_seconds_bucket{le=",
        "mongodns_kernel_udp_errors_total{family=\"ipv4\",kind=\"rcvbuf\"}",
        "mongodns_job_done{kind=\"import\",zone=\"ops.test.\",state=\"running\"} 1234",
        "mongodns_job_total{kind=\"import\",zone=\"ops.test.\",state=\"running\"} 5000",
        "mongodns_job_running{kind=\"import\",zone=\"ops.test.\"} 1",
    ] {
        assert!(after.contains(needle), "no {needle} in /metrics:\n{after}");
    }
    assert!(stat(control, "queries_udp") >= 100);
    let (status, body) = http(control, "GET", "/health");
    assert!(status.contains("200"), "{status} {body}");
    drop(server);
    block_on(db.drop_db());
}

#[test]
fn a_slow_query_log_writer_drops_lines_and_counts_them() {
    let db = with_zone("drops");
    let dir = scratch("drops");
    // A syslog socket nobody reads: the writer blocks once its queue is
    // full, the smallest ring fills, and further lines are dropped.
    let socket_path = dir.join("log.sock");
    let syslog = UnixDatagram::bind(&socket_path).unwrap();
    let control = free_tcp_port();
    let server = ServerProcess::start(
        &db.name,
        &[
            "--query-log",
            &format!("syslog:{}", socket_path.display()),
            "--query-log-buffer",
            "1",
            "--query-log-syslog-format",
            "rfc5424",
            "--control-listen",
            &format!("127.0.0.1:{control}"),
        ],
    );
    for _ in 0..400 {
        ask_udp(server.port, "www.ops.test.", 1, None);
    }
    // Answers never waited for the log: all 400 came back (ask_udp panics
    // otherwise), and the drops are counted.
    let dropped = stat(control, "query_log_dropped");
    let written = stat(control, "query_log_lines");
    assert!(dropped > 0, "nothing dropped (written {written})");
    // (the smallest ring, 64 words, holds 12 of these 5-word records; each
    // of the 2 workers has one, and the blocked writer may hold as many it
    // took out of a ring, counted once the whole ring-full is sent)
    assert!(
        dropped + written >= 400 - 3 * 12,
        "dropped {dropped} + written {written}"
    );
    let (_, metrics) = http(control, "GET", "/metrics");
    assert!(
        metric(&metrics, "mongodns_query_log_dropped") >= dropped,
        "{metrics}"
    );
    // What did reach syslog is RFC 5424.
    let mut buf = [0u8; 2048];
    syslog
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    let n = syslog.recv(&mut buf).unwrap();
    let msg = String::from_utf8_lossy(&buf[..n]);
    assert!(msg.starts_with("<30>1 "), "{msg}");
    assert!(
        msg.contains(" mongodns ") && msg.contains(" query - 127.0.0.1#"),
        "{msg}"
    );
    drop(server);
    let _ = std::fs::remove_dir_all(dir);
    block_on(db.drop_db());
}

#[test]
fn sighup_applies_sampling_and_survives_a_broken_file() {
    let db = with_zone("hup");
    let dir = scratch("hup");
    let log = dir.join("q.log");
    let file = dir.join("mongodns.toml");
    let config = |sample: u32| {
        let text = format!(
            "query_log = {:?}\nquery_log_sample = {sample}\n",
            log.to_str().unwrap()
        );
        std::fs::write(&file, text).unwrap();
    };
    config(1);
    let server = ServerProcess::start(&db.name, &["--config", file.to_str().unwrap()]);
    let count = |tag: &str| read_lines(&log).iter().filter(|l| l.contains(tag)).count();
    // Rewrites the file (None: a broken one), sends SIGHUP, then asks `name`
    // 20 times.
    let hup_then_ask = |sample: Option<u32>, name: &str| {
        match sample {
            Some(n) => config(n),
            None => std::fs::write(&file, "query_log_sample = \"lots\"\n").unwrap(),
        }
        server.signal("HUP");
        std::thread::sleep(Duration::from_millis(300));
        for _ in 0..20 {
            ask_udp(server.port, name, 1, None);
        }
    };
    for _ in 0..20 {
        ask_udp(server.port, "one.ops.test.", 1, None);
    }
    wait_for("every query logged", || count("one.ops.test.") == 20);
    // Sampling 1 in 1000 from now on.
    hup_then_ask(Some(1000), "two.ops.test.");
    // A broken file is refused; the server keeps serving with what it had.
    hup_then_ask(None, "three.ops.test.");
    // Sampling back to 1 in 1: the markers must all reach the log, which
    // proves it is still written after the broken file (the counts below
    // would otherwise hold on a dead log) and that what came before them is
    // in it.
    hup_then_ask(Some(1), "marker.ops.test.");
    wait_for("every marker logged after the broken file", || {
        count("marker.ops.test.") == 20
    });
    assert!(
        count("two.ops.test.") <= 2,
        "sampling not applied: {}",
        count("two.ops.test.")
    );
    assert!(
        count("three.ops.test.") <= 2,
        "broken file changed sampling"
    );
    let status = server.wait_exit(Duration::from_millis(10));
    assert!(
        status.is_none(),
        "the server exited on a broken file: {status:?}"
    );
    let _ = std::fs::remove_dir_all(dir);
    block_on(db.drop_db());
}

/// Starts the server with `extra` flags, waits for its start-up log to show
/// the UDP binding, and returns that log (JSON lines).
fn start_up_log(db: &str, tag: &str, extra: &[&str]) -> String {
    start_up_log_via(&[], db, tag, extra)
}

/// Like [`start_up_log`], with the server started through `wrapper` (a
/// command and its arguments, e.g. `setpriv` to drop a capability).
fn start_up_log_via(wrapper: &[&str], db: &str, tag: &str, extra: &[&str]) -> String {
    let dir = scratch(tag);
    let err = dir.join("stderr.log");
    let port = free_tcp_port();
    let server = server_bin();
    let mut command = match wrapper.split_first() {
        Some((program, args)) => {
            let mut c = Command::new(program);
            c.args(args).arg(server);
            c
        }
        None => Command::new(server),
    };
    let mut child = command
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .args(["--mongodb-uri", &database_uri(), "--database", db])
        .args(["--workers", "1", "--log-format", "json"])
        .args(extra)
        .env_remove("MONGODB_URI")
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let text = || std::fs::read_to_string(&err).unwrap_or_default();
    wait_for("the server to bind UDP", || {
        text().contains("serving DNS on UDP and TCP") || child.try_wait().ok().flatten().is_some()
    });
    let _ = child.kill();
    let _ = child.wait();
    let log = text();
    let _ = std::fs::remove_dir_all(dir);
    log
}

/// True when this process has CAP_NET_ADMIN (bit 12 of CapEff).
fn has_net_admin() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let caps = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .map(|v| u64::from_str_radix(v.trim(), 16).unwrap())
        .unwrap_or(0);
    caps & (1 << 12) != 0
}

/// The start-up log line about one socket buffer option.
fn buffer_line<'a>(log: &'a str, option: &str) -> &'a str {
    log.lines()
        .find(|l| l.contains(&format!("\"option\":\"{option}\"")))
        .unwrap_or_else(|| panic!("no {option} line in:\n{log}"))
}

#[test]
fn the_server_logs_the_socket_buffers_granted_and_warns_when_capped() {
    let db = with_zone("bufs");
    // Sizes under the limits: granted as asked, logged at info.
    let log = start_up_log(
        &db.name,
        "bufs_ok",
        &["--udp-rcvbuf", "65536", "--udp-sndbuf", "32768"],
    );
    let rcv = buffer_line(&log, "SO_RCVBUF");
    assert!(
        rcv.contains("\"bytes\":65536") && rcv.contains("INFO"),
        "{rcv}"
    );
    let snd = buffer_line(&log, "SO_SNDBUF");
    assert!(
        snd.contains("\"bytes\":32768") && snd.contains("INFO"),
        "{snd}"
    );
    // Nothing asked: a 1 MiB receive buffer (granted here: rmem_max is at
    // least that on our machines, or the server forces it as root).
    let log = start_up_log(&db.name, "bufs_default", &[]);
    let rcv = buffer_line(&log, "SO_RCVBUF");
    assert!(rcv.contains("\"asked\":1048576"), "{rcv}");
    let limit = |f: &str| -> usize { std::fs::read_to_string(f).unwrap().trim().parse().unwrap() };
    let rmem_max = limit("/proc/sys/net/core/rmem_max");
    let wmem_max = limit("/proc/sys/net/core/wmem_max");
    let (rcv_ask, snd_ask) = ((rmem_max * 4).to_string(), (wmem_max * 4).to_string());
    let over = [
        "--udp-rcvbuf",
        rcv_ask.as_str(),
        "--udp-sndbuf",
        snd_ask.as_str(),
    ];
    // With CAP_NET_ADMIN (root, as in CI) sizes above the limits are forced
    // (SO_RCVBUFFORCE, as NSD does): granted as asked.
    let may_force = has_net_admin();
    if may_force {
        let log = start_up_log(&db.name, "bufs_forced", &over);
        for (option, asked) in [("SO_RCVBUF", &rcv_ask), ("SO_SNDBUF", &snd_ask)] {
            let line = buffer_line(&log, option);
            assert!(line.contains("INFO"), "{line}");
            assert!(line.contains(&format!("\"bytes\":{asked}")), "{line}");
        }
    }
    // Without it (root drops it with setpriv): capped by the kernel, a
    // warning naming the limit and what was granted.
    let drop_cap = [
        "setpriv",
        "--bounding-set",
        "-net_admin",
        "--inh-caps",
        "-net_admin",
    ];
    let wrapper: &[&str] = if may_force { &drop_cap } else { &[] };
    let log = start_up_log_via(wrapper, &db.name, "bufs_capped", &over);
    for (option, asked, max, file) in [
        ("SO_RCVBUF", &rcv_ask, rmem_max, "rmem_max"),
        ("SO_SNDBUF", &snd_ask, wmem_max, "wmem_max"),
    ] {
        let line = buffer_line(&log, option);
        assert!(line.contains("WARN") && line.contains("capped"), "{line}");
        assert!(line.contains(&format!("\"asked\":{asked}")), "{line}");
        assert!(line.contains(&format!("\"granted\":{max}")), "{line}");
        assert!(line.contains(file), "{line}");
    }
    block_on(db.drop_db());
}
