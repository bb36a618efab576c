//! TCP slots cannot be held, against the real binary:
//! slowloris connections are cut and a legitimate query still gets in, a
//! client that pipelines and never reads is disconnected, and one source
//! prefix gets only its share of the slots.

use hickory_proto::op::Message;
use mongodns_testkit::*;
use socket2::{Domain, Socket, Type};
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const ZONE: &str = "$ORIGIN slots.test.
@ 300 IN SOA ns admin 1 3600 600 86400 60
@ 300 IN NS ns
ns 300 IN A 192.0.2.1
www 300 IN A 192.0.2.2
";

fn setup(tag: &str) -> TestZoneDb {
    block_on(async {
        let db = TestZoneDb::new(tag).await;
        let mut zone = ZONE.to_string();
        for i in 0..30 {
            zone.push_str(&format!("big 300 IN TXT \"{i:02}{}\"\n", "y".repeat(100)));
        }
        db.import("slots.test.", &zone, false).await;
        db
    })
}

fn framed(id: u16, name: &str, qtype: u16) -> Vec<u8> {
    let q = build_query(id, name, qtype, None, false);
    let mut f = (q.len() as u16).to_be_bytes().to_vec();
    f.extend_from_slice(&q);
    f
}

/// A TCP socket bound to `local` (any 127/8 address works on Linux),
/// connected to the server; `rcvbuf` shrinks its receive buffer.
fn connect_from(local: &str, port: u16, rcvbuf: Option<usize>) -> std::io::Result<TcpStream> {
    let s = Socket::new(Domain::IPV4, Type::STREAM, None)?;
    if let Some(size) = rcvbuf {
        s.set_recv_buffer_size(size)?;
    }
    s.bind(&format!("{local}:0").parse::<SocketAddr>().unwrap().into())?;
    let server: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    s.connect_timeout(&server.into(), Duration::from_secs(5))?;
    Ok(s.into())
}

/// One query over a fresh connection from `local`: the reply, or why not.
fn query_from(local: &str, port: u16, timeout: Duration) -> Result<Message, String> {
    let mut s = connect_from(local, port, None).map_err(|e| format!("connect: {e}"))?;
    s.set_read_timeout(Some(timeout)).unwrap();
    s.write_all(&framed(7, "www.slots.test.", 1))
        .map_err(|e| format!("write: {e}"))?;
    let mut len = [0u8; 2];
    s.read_exact(&mut len).map_err(|e| format!("read: {e}"))?;
    let mut r = vec![0u8; usize::from(u16::from_be_bytes(len))];
    s.read_exact(&mut r).map_err(|e| format!("read: {e}"))?;
    Message::from_vec(&r).map_err(|e| format!("parse: {e}"))
}

/// Legitimate TCP queries asked one after the other while an attack runs.
const LEGITIMATE_TRIES: usize = 5;

/// [`LEGITIMATE_TRIES`] queries over fresh connections from another
/// prefix (127.0.1.1), each given a stub resolver's 6 s: what each got,
/// with how long it took.
fn legitimate_tries(port: u16) -> Vec<(Result<usize, String>, Duration)> {
    (0..LEGITIMATE_TRIES)
        .map(|_| {
            let started = Instant::now();
            let got =
                query_from("127.0.1.1", port, Duration::from_secs(6)).map(|m| m.answers.len());
            (got, started.elapsed())
        })
        .collect()
}

/// Fails unless every legitimate try got its one answer.
fn assert_every_try_answered(tries: &[(Result<usize, String>, Duration)]) {
    let failed: Vec<_> = tries.iter().filter(|(got, _)| *got != Ok(1)).collect();
    assert!(
        failed.is_empty(),
        "{} of {} legitimate TCP queries failed: {tries:?}",
        failed.len(),
        tries.len()
    );
}

/// A client that holds a slot with whole queries: one every `period`
/// (never idle), never reading a reply, reconnecting from `local` when
/// cut. Returns its connections.
fn slow_pipeliner(
    local: String,
    port: u16,
    period: Duration,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<usize> {
    std::thread::spawn(move || {
        let mut connects = 0;
        while !stop.load(Ordering::Relaxed) {
            let Ok(mut s) = connect_from(&local, port, Some(4096)) else {
                std::thread::sleep(Duration::from_millis(50));
                continue;
            };
            connects += 1;
            s.set_write_timeout(Some(Duration::from_secs(1))).unwrap();
            let mut id = 0u16;
            while !stop.load(Ordering::Relaxed)
                && s.write_all(&framed(id, "big.slots.test.", 16)).is_ok()
            {
                id = id.wrapping_add(1);
                std::thread::sleep(period);
            }
        }
        connects
    })
}

/// A slowloris client: keeps a connection open by sending one byte of a
/// (1-byte) message every `period`, reconnecting whenever it is closed.
fn slowloris(port: u16, period: Duration, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<usize> {
    std::thread::spawn(move || {
        let mut connects = 0;
        while !stop.load(Ordering::Relaxed) {
            let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
                std::thread::sleep(Duration::from_millis(50));
                continue;
            };
            connects += 1;
            for byte in [0u8, 1, 0].iter().cycle() {
                if stop.load(Ordering::Relaxed) || s.write_all(&[*byte]).is_err() {
                    break;
                }
                std::thread::sleep(period);
                // A closed connection shows as EOF or reset on a peek.
                s.set_nonblocking(true).unwrap();
                let mut b = [0u8; 1];
                let closed = matches!(s.peek(&mut b), Ok(0))
                    || matches!(s.peek(&mut b), Err(e) if e.kind() != ErrorKind::WouldBlock);
                s.set_nonblocking(false).unwrap();
                if closed {
                    break;
                }
            }
        }
        connects
    })
}

/// Polls `/stats` until `check` holds for the TCP connections holding a
/// slot; past 20 s it fails, naming `what`. Returns the last count.
fn wait_connections(control: u16, what: &str, check: impl Fn(u64) -> bool) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let open = stat(control, "tcp_connections");
        if check(open) {
            return open;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: {open} TCP connections hold a slot after 20 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn slowloris_cannot_hold_the_tcp_slots() {
    let db = setup("slowloris");
    let (server, control) = start_with_control(&db.name, &["--tcp-max-connections", "20"]);
    let stop = Arc::new(AtomicBool::new(false));
    let attackers: Vec<_> = (0..30)
        .map(|_| slowloris(server.port, Duration::from_secs(3), stop.clone()))
        .collect();
    wait_connections(control, "every slot taken by slowloris", |n| n == 20);
    let answers = legitimate_tries(server.port);
    stop.store(true, Ordering::Relaxed);
    let connects: usize = attackers.into_iter().map(|t| t.join().unwrap()).sum();
    eprintln!("legitimate queries under slowloris: {answers:?}; {connects} attacker connections");
    assert_every_try_answered(&answers);
    assert!(
        stat(control, "tcp_io_timeouts") > 0,
        "the trickling connections were cut by the I/O timeout"
    );
    drop(server);
    block_on(db.drop_db());
}

/// How often a slow pipeliner sends a whole query: slower than the idle
/// timeout's floor (200 ms once every slot is taken), so the connections
/// are closed as idle. Faster ones are never idle: they are evicted for
/// newcomers (docs/reliability.md, "TCP slots").
const PIPELINE_PERIOD: Duration = Duration::from_millis(300);

#[test]
fn clients_holding_slots_with_whole_queries_do_not_shut_out_others() {
    whole_query_holders(PIPELINE_PERIOD, "wholequeries");
}

/// Faster than the idle floor, so never idle: the oldest connections of
/// the prefixes holding the most slots are evicted for the newcomers.
#[test]
fn fast_whole_query_holders_are_evicted_for_newcomers() {
    whole_query_holders(Duration::from_millis(50), "wholequeriesfast");
}

fn whole_query_holders(period: Duration, tag: &str) {
    let db = setup(tag);
    let (server, control) = start_with_control(
        &db.name,
        &["--tcp-max-connections", "20", "--tcp-max-per-prefix", "8"],
    );
    let stop = Arc::new(AtomicBool::new(false));
    // 30 clients from three prefixes (more than the slots): each sends a
    // whole query for a 3-KB TXT every `period` and never reads.
    let attackers: Vec<_> = (0..30)
        .map(|i| {
            let local = format!("127.0.{}.{}", 2 + i % 3, 1 + i / 3);
            slow_pipeliner(local, server.port, period, stop.clone())
        })
        .collect();
    wait_connections(control, "every slot taken by whole queries", |n| n == 20);
    let answers = legitimate_tries(server.port);
    stop.store(true, Ordering::Relaxed);
    let connects: usize = attackers.into_iter().map(|t| t.join().unwrap()).sum();
    eprintln!(
        "legitimate queries beside pipeliners every {period:?}: {answers:?}; {connects} attacker \
         connections, {} pending cuts, {} I/O timeouts, {} evictions",
        stat(control, "tcp_pending_cuts"),
        stat(control, "tcp_io_timeouts"),
        stat(control, "tcp_evictions")
    );
    assert_every_try_answered(&answers);
    drop(server);
    block_on(db.drop_db());
}

#[test]
fn a_client_that_pipelines_and_never_reads_is_cut() {
    let db = setup("neverread");
    let (server, control) = start_with_control(&db.name, &["--tcp-max-pending-kb", "16"]);
    let mut s = connect_from("127.0.0.1", server.port, Some(4096)).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(1))).unwrap();
    let sent = 2000;
    let mut written = 0;
    for i in 0..sent {
        // ~3 KB replies; the server may stop reading, then close.
        if s.write_all(&framed(i, "big.slots.test.", 16)).is_err() {
            break;
        }
        written += 1;
    }
    // Never read until the server cut the connection (counted).
    let deadline = Instant::now() + Duration::from_secs(20);
    while stat(control, "tcp_pending_cuts") + stat(control, "tcp_io_timeouts") == 0 {
        assert!(
            Instant::now() < deadline,
            "the never-reading client was not cut within 20 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut replies = 0;
    let end = loop {
        let mut len = [0u8; 2];
        if let Err(e) = s.read_exact(&mut len) {
            break e.kind();
        }
        let mut r = vec![0u8; usize::from(u16::from_be_bytes(len))];
        if let Err(e) = s.read_exact(&mut r) {
            break e.kind();
        }
        replies += 1;
    };
    eprintln!(
        "never-reading client: {written} queries written, {replies} replies read, then {end:?}"
    );
    assert!(
        matches!(
            end,
            ErrorKind::UnexpectedEof | ErrorKind::ConnectionReset | ErrorKind::BrokenPipe
        ),
        "the server closed the connection (got {end:?} after {replies} replies)"
    );
    assert!(replies < written, "cut before answering everything");
    let cuts = stat(control, "tcp_pending_cuts") + stat(control, "tcp_io_timeouts");
    assert!(cuts > 0, "the cut is counted");
    // The server still serves.
    assert_eq!(
        ask_tcp(server.port, "www.slots.test.", 1, None)
            .answers
            .len(),
        1
    );
    drop(server);
    block_on(db.drop_db());
}

#[test]
fn a_source_prefix_gets_only_its_share_of_slots() {
    let db = setup("prefix");
    let (server, control) = start_with_control(&db.name, &["--tcp-max-per-prefix", "3"]);
    let held: Vec<_> = (0..3)
        .map(|_| connect_from("127.0.0.1", server.port, None).unwrap())
        .collect();
    wait_connections(control, "the prefix's share held", |n| n == 3);
    // A fourth from the same /24 is closed without an answer...
    let refused = query_from("127.0.0.7", server.port, Duration::from_secs(5));
    assert!(
        refused.is_err(),
        "fourth connection of 127.0.0.0/24 answered: {refused:?}"
    );
    // ...while another prefix is served.
    let other = query_from("127.0.1.1", server.port, Duration::from_secs(5))
        .expect("another prefix is served");
    assert_eq!(other.answers.len(), 1);
    drop(held);
    wait_connections(control, "the held connections closed", |n| n == 0);
    let again = query_from("127.0.0.7", server.port, Duration::from_secs(5))
        .expect("the share is free again once the connections close");
    assert_eq!(again.answers.len(), 1);
    drop(server);
    block_on(db.drop_db());
}

#[test]
fn a_connection_that_keeps_asking_is_closed_at_its_lifetime() {
    let db = setup("lifetime");
    let (server, control) = start_with_control(
        &db.name,
        &["--tcp-max-lifetime", "1", "--tcp-idle-timeout", "30"],
    );
    let mut s = connect_from("127.0.0.1", server.port, None).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let started = Instant::now();
    let mut answered = 0;
    // One query every 200 ms, never idle: answered until the lifetime.
    let end = loop {
        if s.write_all(&framed(answered, "www.slots.test.", 1))
            .is_err()
        {
            break ErrorKind::BrokenPipe;
        }
        let mut len = [0u8; 2];
        if let Err(e) = s.read_exact(&mut len) {
            break e.kind();
        }
        let mut r = vec![0u8; usize::from(u16::from_be_bytes(len))];
        s.read_exact(&mut r).unwrap();
        answered += 1;
        assert!(started.elapsed() < Duration::from_secs(20), "never closed");
        std::thread::sleep(Duration::from_millis(200));
    };
    eprintln!(
        "closed after {answered} answers, {:?}: {end:?}",
        started.elapsed()
    );
    assert!(answered >= 2, "served before the lifetime");
    assert!(
        matches!(
            end,
            ErrorKind::UnexpectedEof | ErrorKind::ConnectionReset | ErrorKind::BrokenPipe
        ),
        "closed by the server: {end:?}"
    );
    assert_eq!(stat(control, "tcp_deadline_closes"), 1);
    drop(server);
    block_on(db.drop_db());
}
