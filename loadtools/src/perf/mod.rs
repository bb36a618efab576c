//! `mongodns-perf`: a dnsperf-style load generator.
//!
//! ```text
//!  query file ─► Queries (one ready-made wire message per line)
//!        │
//!        ▼                      shared: next line, queries sent (for -Q), stop time
//!  client 0..c (one UDP socket or TCP connection each, window = ceil(q / c))
//!     send while window open and rate allows (a slot due within 2 ms:
//!     poll for it, timers are too coarse) ─► server
//!     (UDP: the queries of one pass by one sendmmsg, replies by recvmmsg;
//!     batch.rs)
//!     recv (UDP: with the kernel's arrival stamp) ─► match id + question
//!        ─► latency (send → arrival) into hdrhistogram, rcode, sizes
//!     timeouts: oldest first (send order), counted lost
//!        │
//!        ▼
//!  Stats (merged) ─► dnsperf-style block, percentiles, --json, --plot SVG
//! ```
//!
//! Matching: a reply counts when its ID is outstanding on that socket and
//! its question section (when present) is the query's, byte for byte. IDs
//! are reused least-recently-freed first, so a very late reply to a query
//! already counted lost is not mistaken for a newer query's reply.

pub mod batch;
pub mod stamp;
pub mod stats;
pub mod svg;

use dns::{Name, RType};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::Instant;

pub use stats::Stats;

/// Rate slots due sooner than this are waited for by polling (timers are
/// too coarse for them).
const PACE_SPIN: Duration = Duration::from_millis(2);

/// What to run.
#[derive(Clone, Debug)]
pub struct PerfConfig {
    /// The server.
    pub server: SocketAddr,
    /// Stop sending after this long; `None`: send each query of the file once.
    pub duration: Option<Duration>,
    /// Sockets (UDP) or connections (TCP).
    pub clients: usize,
    /// Queries outstanding at once, over all clients.
    pub outstanding: usize,
    /// Limit on queries sent per second.
    pub max_qps: Option<f64>,
    /// A query without a reply after this long is lost.
    pub timeout: Duration,
    /// Use TCP (one connection per client, pipelined).
    pub tcp: bool,
}

/// The query file, as ready-made messages (ID 0).
pub struct Queries {
    messages: Vec<Box<[u8]>>,
    /// Length of header + question (the part a reply must echo).
    question_end: Vec<u16>,
}

/// How queries are built.
#[derive(Clone, Copy, Debug, Default)]
pub struct QueryOptions {
    /// Add an OPT record.
    pub edns: bool,
    /// Set the DO bit (implies EDNS).
    pub dnssec_ok: bool,
    /// EDNS UDP payload size advertised.
    pub edns_size: u16,
}

/// One query message for `name` / `rtype`.
pub fn build_query(name: &Name, rtype: RType, options: QueryOptions) -> (Vec<u8>, usize) {
    let edns = options.edns || options.dnssec_ok;
    let mut m = Vec::with_capacity(12 + name.wire_len() + 4 + 11);
    m.extend_from_slice(&[0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, u8::from(edns)]);
    m.extend_from_slice(name.as_wire());
    m.extend_from_slice(&rtype.0.to_be_bytes());
    m.extend_from_slice(&1u16.to_be_bytes());
    let question_end = m.len();
    if edns {
        let size = if options.edns_size == 0 {
            4096
        } else {
            options.edns_size
        };
        m.push(0);
        m.extend_from_slice(&41u16.to_be_bytes());
        m.extend_from_slice(&size.to_be_bytes());
        let flags: u16 = if options.dnssec_ok { 0x8000 } else { 0 };
        m.extend_from_slice(&[0, 0]);
        m.extend_from_slice(&flags.to_be_bytes());
        m.extend_from_slice(&[0, 0]);
    }
    (m, question_end)
}

impl Queries {
    /// Reads a dnsperf file: `name [TYPE]` per line (A when no type);
    /// blank lines and lines starting with `;` or `#` are skipped.
    pub fn load(path: &Path, options: QueryOptions) -> Result<Queries, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Self::parse(&text, options).map_err(|e| format!("{}:{e}", path.display()))
    }

    /// Parses the text of a query file.
    pub fn parse(text: &str, options: QueryOptions) -> Result<Queries, String> {
        let mut messages = Vec::new();
        let mut question_end = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with([';', '#']) {
                continue;
            }
            let mut words = line.split_whitespace();
            let name_text = words.next().unwrap_or_default();
            let name: Name = Name::parse(name_text, Some(&Name::root()))
                .map_err(|e| format!("{}: bad name {name_text:?}: {e}", n + 1))?;
            let rtype = match words.next() {
                None => RType::A,
                Some(t) => RType::from_mnemonic(&t.to_ascii_uppercase())
                    .ok_or_else(|| format!("{}: unknown type {t:?}", n + 1))?,
            };
            let (m, q) = build_query(&name, rtype, options);
            messages.push(m.into_boxed_slice());
            question_end.push(q as u16);
        }
        if messages.is_empty() {
            return Err("0: no queries in the file".into());
        }
        Ok(Queries {
            messages,
            question_end,
        })
    }

    /// Number of queries.
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// True when there are none (never, after `load`).
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }
}

/// State shared by the clients.
struct Shared {
    config: PerfConfig,
    queries: Arc<Queries>,
    start: Instant,
    /// Next line of the file to send (wraps when a duration is set).
    next: AtomicU64,
    /// Queries sent by all clients (for the rate limit).
    sent: AtomicU64,
    stop: AtomicBool,
}

impl Shared {
    fn send_deadline(&self) -> Option<Instant> {
        self.config.duration.map(|d| self.start + d)
    }

    /// The next query to send, or `Err(wake)` when the rate limit says to
    /// wait until `wake`, or `Ok(None)` when sending is over.
    fn take(&self, now: Instant) -> Result<Option<usize>, Instant> {
        if self.stop.load(Ordering::Relaxed) {
            return Ok(None);
        }
        if let Some(end) = self.send_deadline() {
            if now >= end {
                self.stop.store(true, Ordering::Relaxed);
                return Ok(None);
            }
        }
        if let Some(q) = self.config.max_qps {
            let sent = self.sent.load(Ordering::Relaxed);
            let allowed = (now - self.start).as_secs_f64() * q;
            if sent as f64 >= allowed {
                return Err(self.start + Duration::from_secs_f64((sent as f64 + 1.0) / q));
            }
        }
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        let n = self.queries.len() as u64;
        if self.config.duration.is_none() && i >= n {
            self.stop.store(true, Ordering::Relaxed);
            return Ok(None);
        }
        self.sent.fetch_add(1, Ordering::Relaxed);
        Ok(Some((i % n) as usize))
    }
}

#[derive(Clone, Copy)]
struct Slot {
    /// Sequence number of the query in it; 0 when free.
    seq: u64,
    sent: Instant,
    /// The send time on CLOCK_REALTIME, to compare with kernel stamps.
    sent_real: u64,
    query: u32,
}

/// The outstanding queries of one client.
struct Window {
    slots: Vec<Slot>,
    free: VecDeque<u16>,
    /// (id, seq, deadline) in send order.
    order: VecDeque<(u16, u64, Instant)>,
    outstanding: usize,
    next_seq: u64,
}

impl Window {
    fn new(now: Instant, salt: usize) -> Window {
        let start = (salt as u32).wrapping_mul(40503) as u16;
        Window {
            slots: vec![
                Slot {
                    seq: 0,
                    sent: now,
                    sent_real: 0,
                    query: 0
                };
                65536
            ],
            free: (0..=u16::MAX).map(|i| i.wrapping_add(start)).collect(),
            order: VecDeque::new(),
            outstanding: 0,
            next_seq: 1,
        }
    }

    fn open(&mut self, query: usize, now: Instant, now_real: u64, timeout: Duration) -> u16 {
        let id = self.free.pop_front().expect("window smaller than 65536");
        let seq = self.next_seq;
        self.next_seq += 1;
        self.slots[id as usize] = Slot {
            seq,
            sent: now,
            sent_real: now_real,
            query: query as u32,
        };
        self.order.push_back((id, seq, now + timeout));
        self.outstanding += 1;
        id
    }

    /// The reply `reply` was read at `now` (and arrived at `arrived`, a
    /// kernel stamp on CLOCK_REALTIME, when there is one): returns the
    /// latency when it matches, measured to the arrival when stamped.
    fn close(
        &mut self,
        reply: &[u8],
        queries: &Queries,
        now: Instant,
        arrived: Option<u64>,
    ) -> Option<Duration> {
        if reply.len() < 12 || reply[2] & 0x80 == 0 {
            return None;
        }
        let id = u16::from_be_bytes([reply[0], reply[1]]);
        let slot = self.slots[id as usize];
        if slot.seq == 0 {
            return None;
        }
        let q = slot.query as usize;
        let qdcount = u16::from_be_bytes([reply[4], reply[5]]);
        if qdcount != 0 {
            let end = queries.question_end[q] as usize;
            let want = &queries.messages[q][12..end];
            let got = reply.get(12..end)?;
            if !want.eq_ignore_ascii_case(got) {
                return None;
            }
        }
        self.slots[id as usize].seq = 0;
        self.free.push_back(id);
        self.outstanding -= 1;
        match arrived {
            // A stamp before the send means the wall clock was stepped.
            Some(at) if at >= slot.sent_real => Some(Duration::from_nanos(at - slot.sent_real)),
            _ => Some(now - slot.sent),
        }
    }

    /// Frees queries past their deadline; returns how many were lost.
    fn expire(&mut self, now: Instant) -> u64 {
        let mut lost = 0;
        while let Some(&(id, seq, deadline)) = self.order.front() {
            if self.slots[id as usize].seq != seq {
                self.order.pop_front();
                continue;
            }
            if deadline > now {
                break;
            }
            self.order.pop_front();
            self.slots[id as usize].seq = 0;
            self.free.push_back(id);
            self.outstanding -= 1;
            lost += 1;
        }
        lost
    }

    /// Counts every outstanding query as lost (a TCP connection broke).
    fn drop_all(&mut self) -> u64 {
        let lost = self.outstanding as u64;
        for (id, seq, _) in self.order.drain(..) {
            if self.slots[id as usize].seq == seq {
                self.slots[id as usize].seq = 0;
                self.free.push_back(id);
            }
        }
        self.outstanding = 0;
        lost
    }

    fn next_deadline(&mut self) -> Option<Instant> {
        while let Some(&(id, seq, deadline)) = self.order.front() {
            if self.slots[id as usize].seq == seq {
                return Some(deadline);
            }
            self.order.pop_front();
        }
        None
    }
}

fn udp_socket(server: SocketAddr) -> std::io::Result<tokio::net::UdpSocket> {
    use socket2::{Domain, Protocol, Socket, Type};
    let domain = if server.is_ipv4() {
        Domain::IPV4
    } else {
        Domain::IPV6
    };
    let s = Socket::new(domain, Type::DGRAM, Some(Protocol::UDP))?;
    // Large buffers so bursts are not dropped by our own socket.
    let _ = s.set_recv_buffer_size(4 << 20);
    let _ = s.set_send_buffer_size(1 << 20);
    // Without stamps latencies are measured to the read (still correct,
    // less exact on a busy client).
    let _ = stamp::enable_rx_timestamps(s.as_raw_fd());
    let any: SocketAddr = if server.is_ipv4() {
        "0.0.0.0:0".parse().expect("literal")
    } else {
        "[::]:0".parse().expect("literal")
    };
    s.bind(&any.into())?;
    s.connect(&server.into())?;
    s.set_nonblocking(true)?;
    tokio::net::UdpSocket::from_std(s.into())
}

enum Conn {
    Udp(tokio::net::UdpSocket),
    Tcp {
        stream: tokio::net::TcpStream,
        buf: Vec<u8>,
        filled: usize,
    },
}

async fn connect(config: &PerfConfig) -> std::io::Result<Conn> {
    if config.tcp {
        let stream = tokio::time::timeout(
            config.timeout,
            tokio::net::TcpStream::connect(config.server),
        )
        .await
        .map_err(|_| std::io::Error::other("TCP connect timed out"))??;
        stream.set_nodelay(true)?;
        Ok(Conn::Tcp {
            stream,
            buf: vec![0; 1 << 17],
            filled: 0,
        })
    } else {
        Ok(Conn::Udp(udp_socket(config.server)?))
    }
}

async fn client(shared: Arc<Shared>, index: usize, window_size: usize) -> Stats {
    let config = &shared.config;
    let queries = shared.queries.clone();
    let mut stats = Stats::new(shared.start);
    let mut window = Window::new(Instant::now(), index);
    let mut conn = match connect(config).await {
        Ok(c) => Some(c),
        Err(e) => {
            eprintln!("mongodns-perf: client {index}: {e}");
            None
        }
    };
    let mut out = Vec::with_capacity(600);
    let mut outgoing = batch::Outgoing::default();
    let mut incoming = batch::Incoming::default();
    let mut sending = true;
    loop {
        let now = Instant::now();
        let mut wake: Option<Instant> = None;
        // Send while the window is open.
        if conn.is_none() {
            // Reconnect (TCP) after a pause.
            tokio::time::sleep(Duration::from_millis(100)).await;
            if shared.stop.load(Ordering::Relaxed) {
                break;
            }
            conn = connect(config).await.ok();
            if conn.is_none() {
                // Nothing to send on (TCP refused): the query due now counts
                // as sent and lost, so a run against a dead server ends (one
                // pass) and reports what it lost instead of waiting for ever.
                match shared.take(Instant::now()) {
                    Ok(Some(q)) => {
                        stats.sent(queries.messages[q].len(), Instant::now());
                        stats.lost += 1;
                    }
                    Ok(None) => break,
                    Err(_) => {}
                }
            }
            continue;
        }
        outgoing.clear();
        while sending && window.outstanding < window_size {
            let q = match shared.take(now) {
                Ok(Some(q)) => q,
                Ok(None) => {
                    sending = false;
                    break;
                }
                Err(at) => {
                    wake = Some(at);
                    break;
                }
            };
            // Each query is stamped as it leaves, not with the loop's start:
            // in a burst the last query would otherwise be charged the time
            // this client spent sending the ones before it.
            let sent_at = Instant::now();
            let id = window.open(q, sent_at, stamp::realtime_ns(), config.timeout);
            let msg = &queries.messages[q];
            let Some(Conn::Tcp { stream, .. }) = conn.as_mut() else {
                // UDP: sent with the rest of this pass, below.
                outgoing.push(msg, id);
                stats.sent(msg.len(), sent_at);
                continue;
            };
            out.clear();
            out.extend_from_slice(&(msg.len() as u16).to_be_bytes());
            out.extend_from_slice(msg);
            out[2..4].copy_from_slice(&id.to_be_bytes());
            match stream.write_all(&out).await {
                Ok(()) => stats.sent(msg.len(), sent_at),
                Err(_) => {
                    stats.sent(msg.len(), now);
                    stats.lost += window.drop_all();
                    conn = None;
                    break;
                }
            }
        }
        if conn.is_none() {
            continue;
        }
        if let Some(Conn::Udp(s)) = conn.as_ref() {
            send_udp(s, &outgoing).await;
        }
        if !sending && window.outstanding == 0 {
            break;
        }
        let mut until = window.next_deadline();
        if sending {
            if let Some(end) = shared.send_deadline() {
                until = Some(until.map_or(end, |u| u.min(end)));
            }
        }
        if let Some(w) = wake {
            until = Some(until.map_or(w, |u| u.min(w)));
        }
        let until = until.unwrap_or_else(|| Instant::now() + Duration::from_millis(50));
        // Paced sending: a rate slot due within PACE_SPIN is waited for by
        // polling, not by a timer.
        let pace = matches!(wake, Some(w) if w < Instant::now() + PACE_SPIN);
        // Wait for replies (or a timeout, or the next rate slot).
        let broken = match conn.as_mut().expect("connected") {
            Conn::Udp(s) => {
                if pace {
                    // The next send is due sooner than a timer can wake us
                    // (tokio's timers tick in milliseconds, which would send
                    // -Q's queries in 1-ms bursts): read what has arrived and
                    // come straight back.
                    if drain_udp(s, &mut incoming, &mut window, &queries, &mut stats) {
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    }
                    tokio::task::yield_now().await;
                    stats.lost += window.expire(Instant::now());
                    continue;
                }
                tokio::select! {
                    r = s.readable() => {
                        let refused = r.is_err()
                            || drain_udp(s, &mut incoming, &mut window, &queries, &mut stats);
                        if refused {
                            // ECONNREFUSED (nothing listens): do not spin.
                            tokio::time::sleep(Duration::from_millis(1)).await;
                        }
                    }
                    _ = tokio::time::sleep_until(until) => {}
                }
                false
            }
            Conn::Tcp {
                stream,
                buf,
                filled,
            } => {
                let mut broken = false;
                tokio::select! {
                    r = stream.read(&mut buf[*filled..]) => match r {
                        Ok(0) | Err(_) => broken = true,
                        Ok(n) => {
                            *filled += n;
                            let now = Instant::now();
                            let mut at = 0;
                            while *filled - at >= 2 {
                                let len = u16::from_be_bytes([buf[at], buf[at + 1]]) as usize;
                                if *filled - at < 2 + len {
                                    break;
                                }
                                take_reply(&mut window, &queries, &buf[at + 2..at + 2 + len], now, None, &mut stats);
                                at += 2 + len;
                            }
                            buf.copy_within(at..*filled, 0);
                            *filled -= at;
                        }
                    },
                    _ = tokio::time::sleep_until(until) => {}
                }
                broken
            }
        };
        if broken {
            stats.lost += window.drop_all();
            conn = None;
        }
        stats.lost += window.expire(Instant::now());
    }
    stats
}

/// Sends the queries of one pass, many a system call. One the kernel
/// refuses (ECONNREFUSED from an earlier ICMP and the like) counts as
/// sent, and will be lost.
async fn send_udp(s: &tokio::net::UdpSocket, out: &batch::Outgoing) {
    let mut done = 0;
    while done < out.len() {
        let sent = s.try_io(tokio::io::Interest::WRITABLE, || {
            batch::send_batch(s.as_raw_fd(), out, done)
        });
        match sent {
            Ok(n) => done += n.max(1),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if s.writable().await.is_err() {
                    return;
                }
            }
            Err(_) => done += 1,
        }
    }
}

/// Reads every reply waiting on `s`, many a system call, each timed to the
/// kernel's arrival stamp (time this client spent elsewhere is not the
/// server's). True when the socket reported an error (ECONNREFUSED:
/// nothing listens).
fn drain_udp(
    s: &tokio::net::UdpSocket,
    incoming: &mut batch::Incoming,
    window: &mut Window,
    queries: &Queries,
    stats: &mut Stats,
) -> bool {
    loop {
        let got = s.try_io(tokio::io::Interest::READABLE, || {
            incoming.recv(s.as_raw_fd())
        });
        match got {
            Ok(n) => {
                let now = Instant::now();
                for i in 0..n {
                    let (reply, arrived) = incoming.reply(i);
                    take_reply(window, queries, reply, now, arrived, stats);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return false,
            Err(_) => return true,
        }
    }
}

fn take_reply(
    window: &mut Window,
    queries: &Queries,
    reply: &[u8],
    now: Instant,
    arrived: Option<u64>,
    stats: &mut Stats,
) {
    if let Some(latency) = window.close(reply, queries, now, arrived) {
        stats.completed(reply, latency, now);
    }
}

/// Runs the load and returns the merged statistics.
pub async fn run(config: PerfConfig, queries: Arc<Queries>) -> Stats {
    let clients = config.clients.max(1);
    let outstanding = config.outstanding.max(1).min(clients * 65000);
    let start = Instant::now();
    let shared = Arc::new(Shared {
        config,
        queries,
        start,
        next: AtomicU64::new(0),
        sent: AtomicU64::new(0),
        stop: AtomicBool::new(false),
    });
    let mut handles = Vec::new();
    for i in 0..clients {
        // Spread the window: the first (outstanding % clients) get one more.
        let w = outstanding / clients + usize::from(i < outstanding % clients);
        handles.push(tokio::spawn(client(shared.clone(), i, w.max(1))));
    }
    let mut total = Stats::new(start);
    for h in handles {
        if let Ok(s) = h.await {
            total.merge(&s);
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_messages_are_well_formed() {
        let q = Queries::parse(
            "# comment\nwww.Example.com A\n\nexample.com. MX\nfoo.example\n",
            QueryOptions {
                dnssec_ok: true,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(q.len(), 3);
        let m = &q.messages[0];
        assert_eq!(&m[4..12], &[0, 1, 0, 0, 0, 0, 0, 1]);
        assert_eq!(&m[12..29], b"\x03www\x07example\x03com\x00");
        assert_eq!(&m[29..33], &[0, 1, 0, 1]);
        assert_eq!(q.question_end[0], 33);
        // OPT: root, type 41, size 4096, DO.
        assert_eq!(&m[33..], &[0, 0, 41, 16, 0, 0, 0, 0x80, 0, 0, 0]);
        assert_eq!(
            &q.messages[1][q.question_end[1] as usize - 4..][..2],
            &[0, 15]
        );
        assert!(Queries::parse("a.example BOGUS\n", QueryOptions::default()).is_err());
    }

    #[test]
    fn window_matches_ids_and_expires_in_order() {
        let queries =
            Queries::parse("a.example A\nb.example A\n", QueryOptions::default()).unwrap();
        let t0 = Instant::now();
        let mut w = Window::new(t0, 0);
        let id0 = w.open(0, t0, 5_000_000, Duration::from_secs(1));
        let id1 = w.open(1, t0, 5_000_000, Duration::from_secs(1));
        let mut reply = queries.messages[1].to_vec();
        reply[..2].copy_from_slice(&id1.to_be_bytes());
        reply[2] |= 0x80;
        // Wrong question for that id: ignored.
        let mut wrong = queries.messages[0].to_vec();
        wrong[..2].copy_from_slice(&id1.to_be_bytes());
        wrong[2] |= 0x80;
        assert!(w.close(&wrong, &queries, t0, None).is_none());
        // A kernel stamp wins over the (later) read time.
        assert_eq!(
            w.close(
                &reply,
                &queries,
                t0 + Duration::from_millis(3),
                Some(5_250_000)
            ),
            Some(Duration::from_micros(250))
        );
        assert!(
            w.close(&reply, &queries, t0, None).is_none(),
            "counted twice"
        );
        assert_eq!(w.outstanding, 1);
        // A stamp before the send (clock stepped back): the read time.
        let mut reply0 = queries.messages[0].to_vec();
        reply0[..2].copy_from_slice(&id0.to_be_bytes());
        reply0[2] |= 0x80;
        let id2 = w.open(0, t0, 9_000_000, Duration::from_secs(1));
        reply0[..2].copy_from_slice(&id2.to_be_bytes());
        assert_eq!(
            w.close(
                &reply0,
                &queries,
                t0 + Duration::from_millis(2),
                Some(1_000)
            ),
            Some(Duration::from_millis(2))
        );
        assert_eq!(w.outstanding, 1);
        assert_eq!(w.expire(t0 + Duration::from_millis(999)), 0);
        assert_eq!(w.expire(t0 + Duration::from_secs(1)), 1);
        assert_eq!(w.outstanding, 0);
        let _ = id0;
    }
}
