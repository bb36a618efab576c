//! UDP: one socket per worker, bound with SO_REUSEPORT to the same address.
//!
//! ```text
//!  bind_udp(addr, workers) ─► [socket; workers]
//!  serve_udp(socket) loop (Linux):
//!     wait readable ─► recvmmsg: up to 32 queries ─► for each:
//!        handle_now (cache hit: reply built in the loop, no task, no
//!        allocation) ─► queued
//!        miss ─► start_miss (udp_miss.rs): the pipeline polled once;
//!                answered without waiting ─► queued | waiting ─► spawned
//!     ─► sendmmsg: every queued reply in one call ─► observe_batch (all of them)
//!  (elsewhere: recv_from ─► handle_now or start_miss ─► send_to, one query at a time)
//!  misses: a permit from the shared miss limit, or dropped and counted
//!  a panic in the loop: caught, counted, the loop restarted on the same socket
//! ```
//!
//! A slow database only delays the spawned misses (at most the miss limit
//! at once); cached answers keep flowing from the receive loop. The loop yields to the runtime every
//! [`YIELD_EVERY`] datagrams so spawned misses and timers on the same
//! worker thread are never starved by a flood.

use super::udp_miss::{start_miss, MissStart};
use super::Handler;
use crate::guard::{bump, GUARD};
use crate::pipeline::Transport;
use crate::rrl::{make_slip, Rrl, Verdict};
use futures::FutureExt;
use socket2::{Domain, Protocol, Socket, Type};
use std::io;
use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::UdpSocket;
use tokio::sync::Semaphore;

/// Largest datagram we read. A DNS query over UDP is far smaller (RFC 6891
/// payload sizes are about what the *reply* may be); a longer datagram is
/// dropped, never answered from a cut copy.
pub const MAX_DATAGRAM: usize = 4096;

/// Datagrams handled between two yields to the runtime.
pub const YIELD_EVERY: usize = 128;

/// Receive buffer asked for when `--udp-rcvbuf` is not set: 1 MiB, enough
/// for ~500-1000 queued queries (the kernel's usual 208 KiB holds ~100-200
/// and drops under a burst of 200 outstanding, `docs/tuning.md`).
pub const DEFAULT_RCVBUF: usize = 1 << 20;

/// Opens `count` UDP sockets on `addr` sharing the port (SO_REUSEPORT),
/// with the requested buffer sizes (the receive buffer defaults to
/// [`DEFAULT_RCVBUF`]). A size above the kernel's `*mem_max` is forced
/// when the process may (`CAP_NET_ADMIN`), as NSD does; otherwise the
/// kernel caps it and a size that was asked for explicitly is warned about.
pub fn bind_udp(
    addr: SocketAddr,
    count: usize,
    rcvbuf: Option<usize>,
    sndbuf: Option<usize>,
) -> io::Result<Vec<UdpSocket>> {
    let mut out = Vec::with_capacity(count);
    for _ in 0..count.max(1) {
        let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
        socket.set_reuse_port(true)?;
        if addr.is_ipv6() {
            socket.set_only_v6(true)?;
        }
        let rcv = rcvbuf.unwrap_or(DEFAULT_RCVBUF);
        socket.set_recv_buffer_size(rcv)?;
        if socket.recv_buffer_size()? / 2 < rcv {
            force_buffer(&socket, BufferKind::Receive, rcv);
        }
        if let Some(size) = sndbuf {
            socket.set_send_buffer_size(size)?;
            if socket.send_buffer_size()? / 2 < size {
                force_buffer(&socket, BufferKind::Send, size);
            }
        }
        if out.is_empty() {
            report_buffer(
                "SO_RCVBUF",
                rcv,
                rcvbuf.is_some(),
                socket.recv_buffer_size()?,
                "/proc/sys/net/core/rmem_max",
            );
            if let Some(size) = sndbuf {
                report_buffer(
                    "SO_SNDBUF",
                    size,
                    true,
                    socket.send_buffer_size()?,
                    "/proc/sys/net/core/wmem_max",
                );
            }
        }
        socket.set_nonblocking(true)?;
        socket.bind(&addr.into())?;
        out.push(UdpSocket::from_std(socket.into())?);
    }
    Ok(out)
}

/// Which socket buffer [`force_buffer`] sets.
enum BufferKind {
    Receive,
    Send,
}

/// Sets a socket buffer past `net.core.*mem_max` with `SO_*BUFFORCE`, which
/// needs `CAP_NET_ADMIN`; without it the capped size stays (best effort).
#[cfg(target_os = "linux")]
fn force_buffer(socket: &Socket, kind: BufferKind, size: usize) {
    use std::os::fd::AsRawFd;
    let option = match kind {
        BufferKind::Receive => libc::SO_RCVBUFFORCE,
        BufferKind::Send => libc::SO_SNDBUFFORCE,
    };
    let value = libc::c_int::try_from(size).unwrap_or(libc::c_int::MAX);
    // SAFETY: a plain setsockopt with an int argument on a socket we own.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            option,
            &value as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        tracing::debug!(error = %io::Error::last_os_error(), "SO_*BUFFORCE refused");
    }
}

#[cfg(not(target_os = "linux"))]
fn force_buffer(_socket: &Socket, _kind: BufferKind, _size: usize) {}

/// Logs a socket buffer size; Linux reports twice the usable size it granted.
/// A capped size is a warning only when the operator asked for it.
fn report_buffer(what: &str, asked: usize, explicit: bool, granted: usize, limit_file: &str) {
    let usable = granted / 2;
    if usable < asked && explicit {
        let limit = std::fs::read_to_string(limit_file).unwrap_or_default();
        tracing::warn!(
            option = what,
            asked,
            granted = usable,
            limit = limit.trim(),
            "socket buffer capped by the kernel; raise {limit_file} (sysctl) to get the size asked for"
        );
    } else {
        tracing::info!(option = what, asked, bytes = usable, "UDP socket buffer");
    }
}

/// Serves one UDP socket until the task is dropped (batches of 32).
pub async fn serve_udp<H: Handler>(socket: UdpSocket, handler: Arc<H>) {
    let misses = Arc::new(Semaphore::new(Semaphore::MAX_PERMITS));
    serve_udp_limited(socket, handler, None, 32, misses).await
}

/// Like [`serve_udp`], with every reply (cache hits too) passed through the
/// response rate limiter when there is one (`crate::rrl`), reading up to
/// `batch` datagrams per system call (1: one at a time, the portable loop),
/// and at most `misses`' permits of cache misses answered at once (more are
/// dropped, counted in `udp_miss_overflows`). A panic in the loop is
/// logged, counted (`udp_worker_restarts`) and the loop started again.
pub async fn serve_udp_limited<H: Handler>(
    socket: UdpSocket,
    handler: Arc<H>,
    rrl: Option<Arc<Rrl>>,
    batch: usize,
    misses: Arc<Semaphore>,
) {
    let socket = Arc::new(socket);
    loop {
        let run = serve_loop(
            socket.clone(),
            handler.clone(),
            rrl.clone(),
            batch,
            misses.clone(),
        );
        match AssertUnwindSafe(run).catch_unwind().await {
            Ok(()) => return,
            Err(_) => {
                bump(&GUARD.udp_worker_restarts);
                tracing::error!("udp worker loop panicked; restarted");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

async fn serve_loop<H: Handler>(
    socket: Arc<UdpSocket>,
    handler: Arc<H>,
    rrl: Option<Arc<Rrl>>,
    batch: usize,
    misses: Arc<Semaphore>,
) {
    let lanes = Lanes {
        socket,
        handler,
        rrl,
        misses,
    };
    #[cfg(target_os = "linux")]
    if batch > 1 {
        return serve_batched(lanes, batch).await;
    }
    let _ = batch;
    serve_one_at_a_time(lanes).await
}

/// What a receive loop and its miss tasks share.
pub(super) struct Lanes<H> {
    pub(super) socket: Arc<UdpSocket>,
    pub(super) handler: Arc<H>,
    pub(super) rrl: Option<Arc<Rrl>>,
    pub(super) misses: Arc<Semaphore>,
}

/// The Linux loop: `recvmmsg` up to `batch` queries, answer the cached ones
/// in place, `sendmmsg` their replies together.
#[cfg(target_os = "linux")]
async fn serve_batched<H: Handler>(lanes: Lanes<H>, batch: usize) {
    use super::mmsg::{RecvBatch, SendBatch};
    use std::os::fd::AsRawFd;
    use tokio::io::Interest;

    let (socket, handler, rrl) = (&lanes.socket, &lanes.handler, &lanes.rrl);
    let fd = socket.as_raw_fd();
    let mut queries = RecvBatch::new(MAX_DATAGRAM, batch);
    let mut replies = SendBatch::new();
    // Which query each queued reply answers (for `observe` after sending).
    let mut answered = Vec::with_capacity(super::mmsg::BATCH);
    let mut since_yield = 0usize;
    loop {
        if let Err(e) = socket.readable().await {
            tracing::warn!(error = %e, "udp socket failed");
            return;
        }
        let n = match socket.try_io(Interest::READABLE, || queries.recv(fd)) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) => {
                // ICMP errors from earlier sends surface here; keep serving.
                tracing::debug!(error = %e, "udp recv error");
                continue;
            }
        };
        replies.clear();
        answered.clear();
        for i in 0..n {
            let (packet, from, truncated) = queries.get(i);
            if truncated {
                tracing::debug!("udp datagram over {MAX_DATAGRAM} bytes dropped");
                continue;
            }
            let Some(peer) = from.to_socket_addr() else {
                continue;
            };
            let out = replies.next_buffer().expect("one reply slot per query");
            if !handler.handle_now(packet, Transport::Udp, out) {
                match start_miss(packet, peer, &lanes) {
                    MissStart::Answered(Some(reply)) => {
                        out.clear();
                        out.extend_from_slice(&reply);
                    }
                    MissStart::Answered(None) => {
                        handler.observe(packet, None, peer, Transport::Udp);
                        continue;
                    }
                    MissStart::Spawned | MissStart::Dropped => continue,
                }
            }
            if rate_limit(rrl.as_deref(), peer, out) {
                replies.commit(from);
                answered.push((i, peer));
            }
        }
        send_all(socket, &mut replies).await;
        handler.observe_batch(
            answered.len(),
            |k| {
                let (i, peer) = answered[k];
                (queries.get(i).0, replies.get(k).0, peer)
            },
            Transport::Udp,
        );
        since_yield += n;
        if since_yield >= YIELD_EVERY {
            since_yield = 0;
            tokio::task::yield_now().await;
        }
    }
}

/// Sends every queued reply: `sendmmsg` while the kernel takes them, then
/// one awaited `send_to` each if its buffer is full. A reply whose
/// destination fails (e.g. unreachable) is skipped, not retried.
#[cfg(target_os = "linux")]
async fn send_all(socket: &UdpSocket, replies: &mut super::mmsg::SendBatch) {
    use std::os::fd::AsRawFd;
    let mut from = 0;
    while from < replies.len() {
        match replies.send(socket.as_raw_fd(), from) {
            Ok(0) => break,
            Ok(sent) => from += sent,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                for k in from..replies.len() {
                    let (reply, to) = replies.get(k);
                    if let Some(peer) = to.to_socket_addr() {
                        if let Err(e) = socket.send_to(reply, peer).await {
                            tracing::debug!(error = %e, %peer, "udp send error");
                        }
                    }
                }
                return;
            }
            Err(e) => {
                tracing::debug!(error = %e, "udp send error");
                from += 1;
            }
        }
    }
}

/// The portable loop: one `recv_from` and one `send_to` per query.
async fn serve_one_at_a_time<H: Handler>(lanes: Lanes<H>) {
    let (socket, handler, rrl) = (&lanes.socket, &lanes.handler, &lanes.rrl);
    let mut buf = vec![0u8; MAX_DATAGRAM];
    let mut out = Vec::with_capacity(4096);
    loop {
        let (len, peer) = match socket.recv_from(&mut buf).await {
            Ok(x) => x,
            Err(e) => {
                // ICMP errors from earlier sends surface here; keep serving.
                tracing::debug!(error = %e, "udp recv error");
                continue;
            }
        };
        let packet = &buf[..len];
        if !handler.handle_now(packet, Transport::Udp, &mut out) {
            match start_miss(packet, peer, &lanes) {
                MissStart::Answered(Some(reply)) => out = reply,
                MissStart::Answered(None) => {
                    handler.observe(packet, None, peer, Transport::Udp);
                    continue;
                }
                MissStart::Spawned | MissStart::Dropped => continue,
            }
        }
        if !rate_limit(rrl.as_deref(), peer, &mut out) {
            continue;
        }
        let sent = match socket.try_send_to(&out, peer) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => socket.send_to(&out, peer).await,
            other => other,
        };
        if let Err(e) = sent {
            tracing::debug!(error = %e, %peer, "udp send error");
        }
        handler.observe(packet, Some(&out), peer, Transport::Udp);
    }
}

/// Applies the rate limiter to `reply` for `peer`: false means send nothing
/// (the reply may have been cut down to a truncated one).
pub(super) fn rate_limit(rrl: Option<&Rrl>, peer: SocketAddr, reply: &mut Vec<u8>) -> bool {
    match rrl.map(|r| r.check(peer.ip())) {
        None | Some(Verdict::Send) => true,
        Some(Verdict::Slip) => make_slip(reply),
        Some(Verdict::Drop) => false,
    }
}
