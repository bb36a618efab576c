//! One client of the load: a UDP socket or a TCP connection, sending
//! while its window and the rate allow, matching replies, counting losses.
//!
//! ```text
//!  Client::run: loop
//!     fill_window: shared.take (the next line, or the rate's next slot)
//!        ─► Window::open ─► TCP: write_framed | UDP: gathered, send_udp (sendmmsg)
//!     wait_for_replies until the first deadline, the end or the next slot
//!        (a slot due within PACE_SPIN: polled) ─► drain_udp (recvmmsg, arrival
//!        stamps) | take_framed ─► Window::close ─► Stats
//!     Window::expire ─► lost; a broken TCP connection: all lost, reconnect
//! ```

use super::queries::Queries;
use super::window::Window;
use super::{batch, stamp, PerfConfig, Shared, Stats, PACE_SPIN};
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::Instant;

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

/// One client: its socket or connection, its window of outstanding
/// queries, its statistics.
struct Client {
    shared: Arc<Shared>,
    queries: Arc<Queries>,
    window_size: usize,
    stats: Stats,
    window: Window,
    /// `None` while a TCP connection is down.
    conn: Option<Conn>,
    /// A TCP query being framed.
    out: Vec<u8>,
    /// The UDP queries of one pass.
    outgoing: batch::Outgoing,
    incoming: batch::Incoming,
    /// False once sending is over (the file sent, the duration up).
    sending: bool,
}

/// Runs client `index` with `window_size` queries outstanding at most.
pub(super) async fn client(shared: Arc<Shared>, index: usize, window_size: usize) -> Stats {
    let conn = match connect(&shared.config).await {
        Ok(c) => Some(c),
        Err(e) => {
            eprintln!("mongodns-perf: client {index}: {e}");
            None
        }
    };
    let client = Client {
        queries: shared.queries.clone(),
        stats: Stats::new(shared.start),
        window: Window::new(Instant::now(), index),
        shared,
        window_size,
        conn,
        out: Vec::with_capacity(600),
        outgoing: batch::Outgoing::default(),
        incoming: batch::Incoming::default(),
        sending: true,
    };
    client.run().await
}

impl Client {
    /// Sends while the window is open and the rate allows, waits for
    /// replies, counts timeouts; until sending is over and nothing is
    /// outstanding.
    async fn run(mut self) -> Stats {
        loop {
            if self.conn.is_none() {
                if !self.reconnect().await {
                    break;
                }
                continue;
            }
            let wake = self.fill_window(Instant::now()).await;
            if self.conn.is_none() {
                continue;
            }
            if let Some(Conn::Udp(s)) = self.conn.as_ref() {
                send_udp(s, &self.outgoing).await;
            }
            if !self.sending && self.window.outstanding == 0 {
                break;
            }
            let until = self.wait_until(wake);
            // Paced sending: a rate slot due within PACE_SPIN is waited for
            // by polling, not by a timer.
            let pace = matches!(wake, Some(w) if w < Instant::now() + PACE_SPIN);
            if self.wait_for_replies(pace, until).await {
                self.stats.lost += self.window.drop_all();
                self.conn = None;
            }
            self.stats.lost += self.window.expire(Instant::now());
        }
        self.stats
    }

    /// Reconnects (TCP) after a pause; false when the run is over.
    async fn reconnect(&mut self) -> bool {
        tokio::time::sleep(Duration::from_millis(100)).await;
        if self.shared.stop.load(Ordering::Relaxed) {
            return false;
        }
        self.conn = connect(&self.shared.config).await.ok();
        if self.conn.is_none() {
            // Nothing to send on (TCP refused): the query due now counts as
            // sent and lost, so a run against a dead server ends (one pass)
            // and reports what it lost instead of waiting for ever.
            match self.shared.take(Instant::now()) {
                Ok(Some(q)) => {
                    self.stats
                        .sent(self.queries.messages[q].len(), Instant::now());
                    self.stats.lost += 1;
                }
                Ok(None) => return false,
                Err(_) => {}
            }
        }
        true
    }

    /// Opens the window as far as it and the rate allow: TCP queries are
    /// written at once, UDP ones gathered for one send. Returns when the
    /// rate limit lets the next one go, if it held one back.
    async fn fill_window(&mut self, now: Instant) -> Option<Instant> {
        self.outgoing.clear();
        let timeout = self.shared.config.timeout;
        while self.sending && self.window.outstanding < self.window_size {
            let q = match self.shared.take(now) {
                Ok(Some(q)) => q,
                Ok(None) => {
                    self.sending = false;
                    return None;
                }
                Err(at) => return Some(at),
            };
            // Each query is stamped as it leaves, not with the loop's start:
            // in a burst the last query would otherwise be charged the time
            // this client spent sending the ones before it.
            let sent_at = Instant::now();
            let id = self.window.open(q, sent_at, stamp::realtime_ns(), timeout);
            let msg = &self.queries.messages[q];
            let Some(Conn::Tcp { stream, .. }) = self.conn.as_mut() else {
                // UDP: sent with the rest of this pass, by the caller.
                self.outgoing.push(msg, id);
                self.stats.sent(msg.len(), sent_at);
                continue;
            };
            if write_framed(stream, &mut self.out, msg, id).await.is_err() {
                self.stats.sent(msg.len(), now);
                self.stats.lost += self.window.drop_all();
                self.conn = None;
                return None;
            }
            self.stats.sent(msg.len(), sent_at);
        }
        None
    }

    /// The time to wait for replies until: the first deadline, the end of
    /// sending, the next rate slot, or 50 ms.
    fn wait_until(&mut self, wake: Option<Instant>) -> Instant {
        let mut until = self.window.next_deadline();
        if self.sending {
            if let Some(end) = self.shared.send_deadline() {
                until = Some(until.map_or(end, |u| u.min(end)));
            }
        }
        if let Some(w) = wake {
            until = Some(until.map_or(w, |u| u.min(w)));
        }
        until.unwrap_or_else(|| Instant::now() + Duration::from_millis(50))
    }

    /// Reads replies until `until` (or at once when `pace`); true when the
    /// TCP connection broke.
    async fn wait_for_replies(&mut self, pace: bool, until: Instant) -> bool {
        let (window, queries, stats) = (&mut self.window, &self.queries, &mut self.stats);
        match self.conn.as_mut().expect("connected") {
            Conn::Udp(s) if pace => {
                // The next send is due sooner than a timer can wake us
                // (tokio's timers tick in milliseconds, which would send -Q's
                // queries in 1-ms bursts): read what has arrived and come
                // straight back.
                if drain_udp(s, &mut self.incoming, window, queries, stats) {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                tokio::task::yield_now().await;
                false
            }
            Conn::Udp(s) => {
                tokio::select! {
                    r = s.readable() => {
                        let refused = r.is_err()
                            || drain_udp(s, &mut self.incoming, window, queries, stats);
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
                tokio::select! {
                    r = stream.read(&mut buf[*filled..]) => match r {
                        Ok(0) | Err(_) => true,
                        Ok(n) => {
                            *filled += n;
                            take_framed(buf, filled, window, queries, stats);
                            false
                        }
                    },
                    _ = tokio::time::sleep_until(until) => false,
                }
            }
        }
    }
}

/// Writes one query over TCP with its length prefix and `id`.
async fn write_framed(
    stream: &mut tokio::net::TcpStream,
    out: &mut Vec<u8>,
    msg: &[u8],
    id: u16,
) -> std::io::Result<()> {
    out.clear();
    out.extend_from_slice(&(msg.len() as u16).to_be_bytes());
    out.extend_from_slice(msg);
    out[2..4].copy_from_slice(&id.to_be_bytes());
    stream.write_all(out).await
}

/// Takes every whole framed reply from the first `filled` bytes of `buf`,
/// keeping a partial one at the start.
fn take_framed(
    buf: &mut [u8],
    filled: &mut usize,
    window: &mut Window,
    queries: &Queries,
    stats: &mut Stats,
) {
    let now = Instant::now();
    let mut at = 0;
    while *filled - at >= 2 {
        let len = u16::from_be_bytes([buf[at], buf[at + 1]]) as usize;
        if *filled - at < 2 + len {
            break;
        }
        take_reply(
            window,
            queries,
            &buf[at + 2..at + 2 + len],
            now,
            None,
            stats,
        );
        at += 2 + len;
    }
    buf.copy_within(at..*filled, 0);
    *filled -= at;
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
