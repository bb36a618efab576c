//! DNS queries built by hand and sent over real sockets.
//!
//! ```text
//!  build_query(id, name, qtype, edns, rd) ─► wire bytes
//!  udp_exchange / tcp_exchange ─► raw reply
//!  ask_udp / ask_tcp ─► reply parsed by hickory-proto;  lines(section);
//!  rcode_udp ─► its rcode alone
//!  answered_after ─► ask until the answer changes (a write seen), its delay
//!  assert_median_within_a_second ─► the delays of several writes, held to 1 s
//!  time_until ─► how long until a check holds (a write's delay, printed)
//! ```

use hickory_proto::op::{Message, ResponseCode};
use hickory_proto::rr::Record;
use std::io::{Read, Write};
use std::net::{TcpStream, UdpSocket};
use std::time::{Duration, Instant};

/// Builds a query. `edns` is `(udp size, DO)`.
pub fn build_query(
    id: u16,
    name: &str,
    qtype: u16,
    edns: Option<(u16, bool)>,
    rd: bool,
) -> Vec<u8> {
    let mut p = Vec::new();
    p.extend_from_slice(&id.to_be_bytes());
    p.extend_from_slice(&[
        u8::from(rd),
        0,
        0,
        1,
        0,
        0,
        0,
        0,
        0,
        u8::from(edns.is_some()),
    ]);
    if name != "." {
        for label in name.trim_end_matches('.').split('.') {
            p.push(label.len() as u8);
            p.extend_from_slice(label.as_bytes());
        }
    }
    p.push(0);
    p.extend_from_slice(&qtype.to_be_bytes());
    p.extend_from_slice(&1u16.to_be_bytes());
    if let Some((size, dnssec_ok)) = edns {
        p.push(0);
        p.extend_from_slice(&41u16.to_be_bytes());
        p.extend_from_slice(&size.to_be_bytes());
        p.extend_from_slice(&[0, 0, if dnssec_ok { 0x80 } else { 0 }, 0, 0, 0]);
    }
    p
}

/// Sends `query` over UDP and returns the raw reply.
pub fn udp_exchange(port: u16, query: &[u8], timeout: Duration) -> Option<Vec<u8>> {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket.set_read_timeout(Some(timeout)).unwrap();
    socket.send_to(query, ("127.0.0.1", port)).unwrap();
    let mut buf = vec![0u8; 65535];
    let (len, _) = socket.recv_from(&mut buf).ok()?;
    buf.truncate(len);
    Some(buf)
}

/// Sends `query` over TCP and returns the raw reply.
pub fn tcp_exchange(port: u16, query: &[u8]) -> Vec<u8> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut framed = (query.len() as u16).to_be_bytes().to_vec();
    framed.extend_from_slice(query);
    stream.write_all(&framed).unwrap();
    let mut len = [0u8; 2];
    stream.read_exact(&mut len).unwrap();
    let mut reply = vec![0u8; u16::from_be_bytes(len) as usize];
    stream.read_exact(&mut reply).unwrap();
    reply
}

/// Asks over UDP and parses the reply.
pub fn ask_udp(port: u16, name: &str, qtype: u16, edns: Option<(u16, bool)>) -> Message {
    let q = build_query(0x1234, name, qtype, edns, false);
    let raw = udp_exchange(port, &q, Duration::from_secs(5)).expect("no UDP reply");
    Message::from_vec(&raw).expect("reply does not parse")
}

/// The rcode of a UDP question (no EDNS).
pub fn rcode_udp(port: u16, name: &str, qtype: u16) -> ResponseCode {
    ask_udp(port, name, qtype, None).metadata.response_code
}

/// Asks over TCP and parses the reply.
pub fn ask_tcp(port: u16, name: &str, qtype: u16, edns: Option<(u16, bool)>) -> Message {
    let q = build_query(0x4321, name, qtype, edns, false);
    Message::from_vec(&tcp_exchange(port, &q)).expect("reply does not parse")
}

/// The records of a section as `owner TTL TYPE rdata` lines, sorted,
/// owner names lower-cased.
pub fn lines(records: &[Record]) -> Vec<String> {
    let mut out: Vec<String> = records
        .iter()
        .map(|r| {
            format!(
                "{} {} {} {}",
                r.name.to_ascii().to_lowercase(),
                r.ttl,
                r.record_type(),
                r.data
            )
        })
        .collect();
    out.sort();
    out
}

/// Asks `name` (type `qtype`) over UDP until the reply has `rcode` and
/// `count` answer records; returns how long that took, for the caller to
/// print. The 1-s freshness bound is measured by `bench/freshness` and the
/// scenario, not asserted here (a shared machine stalls for longer); past
/// 10 s it is a hang and fails, naming the last reply.
pub fn answered_after(
    port: u16,
    name: &str,
    qtype: u16,
    rcode: hickory_proto::op::ResponseCode,
    count: usize,
) -> Duration {
    let started = Instant::now();
    loop {
        let m = ask_udp(port, name, qtype, None);
        if m.metadata.response_code == rcode && m.answers.len() == count {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{name}: {:?} with {} answers after 10 s (want {rcode:?}, {count})",
            m.metadata.response_code,
            m.answers.len()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Fails unless the median of `delays` (writes answered, each timed by
/// [`answered_after`]) is within the 1-s freshness bound: the bound is
/// held, while one sample stalled by a shared machine does not fail it.
pub fn assert_median_within_a_second(what: &str, delays: &[Duration]) {
    assert_median_within(what, delays, Duration::from_secs(1));
}

/// Fails unless the median of `delays` is within `bound`: a property of
/// time judged on several samples, so one sample stalled by a shared
/// machine does not fail it while a server that is always late does.
pub fn assert_median_within(what: &str, delays: &[Duration], bound: Duration) {
    assert!(!delays.is_empty(), "{what}: no delay measured");
    let mut sorted = delays.to_vec();
    sorted.sort();
    let median = sorted[sorted.len() / 2];
    assert!(
        median <= bound,
        "{what}: median delay {median:?} is past {bound:?} ({delays:?})"
    );
}

/// How long after now `check` first holds, polled every 5 ms (a write's
/// delay, printed by freshness tests); past 10 s it is a hang and fails,
/// naming `what`.
pub fn time_until(what: &str, mut check: impl FnMut() -> bool) -> Duration {
    let from = Instant::now();
    while !check() {
        assert!(
            from.elapsed() < Duration::from_secs(10),
            "{what} not served after {:?}",
            from.elapsed()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    from.elapsed()
}
