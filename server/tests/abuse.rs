//! Abuse: response rate limiting with slip, TCP queries per connection,
//! AXFR by access list or TSIG (checked with `kdig -y`), no open-resolver
//! behaviour, ANY and large replies that do not amplify, TSIG secrets kept
//! out of the log.

use hickory_proto::op::{Message, ResponseCode};
use mongodns_testkit::*;
use std::io::{Read, Write};
use std::net::{TcpStream, UdpSocket};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ZONE: &str = "$ORIGIN abuse.test.
@ 300 IN SOA ns admin 1 3600 600 86400 60
@ 300 IN NS ns
@ 300 IN MX 10 ns
@ 300 IN TXT \"v=spf1 -all\"
ns 300 IN A 192.0.2.1
www 300 IN A 192.0.2.2
";

fn zone_with_big_txt() -> String {
    let mut z = ZONE.to_string();
    for i in 0..30 {
        z.push_str(&format!("big 300 IN TXT \"{i:02}{}\"\n", "y".repeat(100)));
    }
    z
}

fn setup(tag: &str) -> TestZoneDb {
    block_on(async {
        let db = TestZoneDb::new(tag).await;
        db.import("abuse.test.", &zone_with_big_txt(), false).await;
        db
    })
}

/// What one burst got back.
struct Burst {
    /// Full replies.
    full: usize,
    /// Truncated (slipped) replies.
    tc: usize,
    /// From the first query sent to the last full reply received.
    span: Duration,
}

impl Burst {
    /// The most full replies a limit of `rate` a second allows in the
    /// burst's span: the server counts per whole second, and a span of
    /// `s` seconds touches at most `floor(s) + 2` of them (measured, so a
    /// slow machine stretching the burst does not fail the test).
    fn allowed(&self, rate: usize) -> usize {
        rate * (self.span.as_secs() as usize + 2)
    }
}

/// Sends `n` queries from one socket as fast as it can, then collects
/// replies until none comes for 500 ms.
fn burst(port: u16, n: usize) -> Burst {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let started = Instant::now();
    for i in 0..n {
        let q = build_query(i as u16, "www.abuse.test.", 1, None, false);
        s.send_to(&q, ("127.0.0.1", port)).unwrap();
    }
    let (mut full, mut tc, mut span) = (0, 0, Duration::ZERO);
    let mut buf = [0u8; 2048];
    while let Ok((len, _)) = s.recv_from(&mut buf) {
        let m = Message::from_vec(&buf[..len]).unwrap();
        if m.metadata.truncation {
            assert!(m.answers.is_empty(), "a slipped reply carries no data");
            tc += 1;
        } else {
            assert_eq!(m.answers.len(), 1);
            full += 1;
            span = started.elapsed();
        }
    }
    Burst { full, tc, span }
}

#[test]
fn rate_limiting_slips_and_drops_and_is_off_by_default() {
    let db = setup("rrl");
    let limited = ServerProcess::start(&db.name, &["--rrl-rate", "10", "--rrl-slip", "2"]);
    // Warm the packet cache so the burst is answered from the receive loop:
    // cache hits are limited too.
    let _ = ask_udp(limited.port, "www.abuse.test.", 1, None);
    let b = burst(limited.port, 200);
    let (full, tc) = (b.full, b.tc);
    eprintln!(
        "rrl: {full} full replies, {tc} truncated of 200 (full replies over {:?})",
        b.span
    );
    // Some (the warming query took one of its second's 10); at most 10 in
    // each second the burst touched.
    assert!(
        (1..=b.allowed(10)).contains(&full),
        "{full} full replies in {:?}",
        b.span
    );
    let limited_count = 200 - full;
    assert!(
        tc.abs_diff(limited_count / 2) <= 2,
        "slip 2: about half of {limited_count} limited replies are TC, got {tc}"
    );
    // TCP is not limited.
    for _ in 0..20 {
        let m = ask_tcp(limited.port, "www.abuse.test.", 1, None);
        assert_eq!(m.answers.len(), 1);
    }
    drop(limited);

    let dropper = ServerProcess::start(&db.name, &["--rrl-rate", "5", "--rrl-slip", "0"]);
    let b = burst(dropper.port, 100);
    assert!(
        (1..=b.allowed(5)).contains(&b.full) && b.tc == 0,
        "slip 0: {} full in {:?}, {} TC",
        b.full,
        b.span,
        b.tc
    );
    drop(dropper);

    let open = ServerProcess::start(&db.name, &[]);
    let b = burst(open.port, 200);
    assert_eq!((b.full, b.tc), (200, 0), "no limiting by default");
    drop(open);
    block_on(db.drop_db());
}

#[test]
fn tcp_connections_close_after_the_query_limit() {
    let db = setup("tcpq");
    let server = ServerProcess::start(&db.name, &["--tcp-max-queries", "3"]);
    let mut s = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    for i in 0..5u16 {
        let q = build_query(i, "www.abuse.test.", 1, None, false);
        let mut framed = (q.len() as u16).to_be_bytes().to_vec();
        framed.extend_from_slice(&q);
        // The server may close after the third: later writes can fail.
        let _ = s.write_all(&framed);
    }
    let mut replies = 0;
    loop {
        let mut len = [0u8; 2];
        if s.read_exact(&mut len).is_err() {
            break;
        }
        let mut r = vec![0u8; u16::from_be_bytes(len) as usize];
        s.read_exact(&mut r).unwrap();
        replies += 1;
    }
    assert_eq!(replies, 3, "three answers, then the connection is closed");
    drop(server);
    block_on(db.drop_db());
}

#[test]
fn no_open_resolver_and_no_amplification() {
    let db = setup("openres");
    let server = ServerProcess::start(&db.name, &[]);
    // A name we do not serve, recursion desired: REFUSED, no RA, no data.
    let q = build_query(9, "www.example.com.", 1, None, true);
    let raw = udp_exchange(server.port, &q, Duration::from_secs(5)).unwrap();
    let m = Message::from_vec(&raw).unwrap();
    assert_eq!(m.metadata.response_code, ResponseCode::Refused);
    assert!(!m.metadata.recursion_available);
    assert!(m.answers.is_empty() && m.authorities.is_empty());
    // Root and TLDs: REFUSED too (no referral to the root = no priming).
    let m = ask_udp(server.port, ".", 2, None);
    assert_eq!(m.metadata.response_code, ResponseCode::Refused);
    let m = ask_udp(server.port, "com.", 2, None);
    assert_eq!(m.metadata.response_code, ResponseCode::Refused);
    // Our own names never carry RA either.
    let q = build_query(9, "www.abuse.test.", 1, None, true);
    let m =
        Message::from_vec(&udp_exchange(server.port, &q, Duration::from_secs(5)).unwrap()).unwrap();
    assert!(!m.metadata.recursion_available);

    // ANY: one RRset (RFC 8482), never the whole apex.
    let q = build_query(1, "abuse.test.", 255, Some((4096, false)), false);
    let raw = udp_exchange(server.port, &q, Duration::from_secs(5)).unwrap();
    let m = Message::from_vec(&raw).unwrap();
    let types: std::collections::HashSet<_> = m.answers.iter().map(|r| r.record_type()).collect();
    assert_eq!(types.len(), 1, "ANY gives one RRset: {types:?}");
    eprintln!("ANY: query {} bytes, reply {} bytes", q.len(), raw.len());
    // A large RRset over UDP without EDNS: TC and nothing else (≤ 512 bytes);
    // with EDNS 1232 it still does not fit: TC. Over TCP it comes whole.
    for edns in [None, Some((1232, false))] {
        let q = build_query(2, "big.abuse.test.", 16, edns, false);
        let raw = udp_exchange(server.port, &q, Duration::from_secs(5)).unwrap();
        let m = Message::from_vec(&raw).unwrap();
        assert!(m.metadata.truncation, "TC for {edns:?}");
        assert!(m.answers.is_empty());
        assert!(raw.len() <= 100, "a TC reply is small: {} bytes", raw.len());
    }
    let m = ask_tcp(server.port, "big.abuse.test.", 16, None);
    assert_eq!(m.answers.len(), 30);
    drop(server);
    block_on(db.drop_db());
}

const SECRET: &str = "bW9uZ29kbnMtdHNpZy10ZXN0LXNlY3JldC0xMjM0NTY=";

fn kdig(port: u16, key: Option<&str>) -> String {
    let mut cmd = Command::new("kdig");
    cmd.args([
        "@127.0.0.1",
        "-p",
        &port.to_string(),
        "AXFR",
        "abuse.test.",
        "+noall",
        "+answer",
    ]);
    if let Some(k) = key {
        cmd.args(["-y", k]);
    }
    let out = cmd.output().expect("kdig (knot-dnsutils) is needed");
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn axfr_by_tsig_from_outside_the_access_list() {
    let db = setup("tsig");
    let dir = std::env::temp_dir().join(format!("mongodns-tsig-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let keyfile = dir.join("keys");
    std::fs::write(
        &keyfile,
        format!("# transfer keys\nhmac-sha256:xfr-key:{SECRET}\n"),
    )
    .unwrap();
    let log = dir.join("server.log");
    // Loopback is not in the access list: only TSIG lets a transfer through.
    let port = free_tcp_port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_mongodns-server"))
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .args(["--mongodb-uri", &database_uri(), "--database", &db.name])
        .args(["--axfr-allow", "192.0.2.0/24", "--log", "debug"])
        .arg("--tsig-keyfile")
        .arg(&keyfile)
        .env_remove("MONGODB_URI")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while udp_exchange(
        port,
        &build_query(1, "www.abuse.test.", 1, None, false),
        Duration::from_millis(200),
    )
    .is_none()
    {
        assert!(Instant::now() < deadline, "server did not start");
    }

    let unsigned = kdig(port, None);
    assert!(
        unsigned.contains("REFUSED"),
        "no key, not in the access list: {unsigned}"
    );
    let wrong = kdig(
        port,
        Some("hmac-sha256:xfr-key:d3Jvbmctc2VjcmV0LXdyb25nLXNlY3JldA=="),
    );
    assert!(
        wrong.contains("NOTAUTH") || wrong.contains("BADSIG"),
        "wrong secret: {wrong}"
    );
    assert!(
        !wrong.contains("www.abuse.test."),
        "wrong secret leaked data"
    );
    let unknown = kdig(port, Some(&format!("hmac-sha256:other-key:{SECRET}")));
    assert!(
        unknown.contains("NOTAUTH") || unknown.contains("BADKEY"),
        "unknown key: {unknown}"
    );
    let good = kdig(port, Some(&format!("hmac-sha256:xfr-key:{SECRET}")));
    let soas = good.lines().filter(|l| l.contains("\tSOA\t")).count();
    assert_eq!(soas, 2, "a whole transfer, SOA first and last: {good}");
    assert!(good.contains("www.abuse.test."), "{good}");
    assert_eq!(
        good.lines().filter(|l| l.contains("\tTXT\t")).count(),
        31,
        "every TXT record, over several signed messages: {good}"
    );
    assert!(
        !good.contains("TSIG"),
        "kdig reports no TSIG problem: {good}"
    );

    let _ = child.kill();
    let _ = child.wait();
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains("TSIG"), "the bad TSIG is logged");
    assert!(
        !logged.contains(SECRET) && !logged.contains("mongodns-tsig-test-secret"),
        "the secret must never be logged"
    );
    let _ = std::fs::remove_dir_all(&dir);
    block_on(db.drop_db());
}
