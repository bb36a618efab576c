//! UDP: one socket per worker, bound with SO_REUSEPORT to the same address.
//!
//! ```text
//!  bind_udp(addr, workers) ─► [socket; workers]
//!  serve_udp_with(socket):
//!     Linux, batch > 1 ─► udp_thread.rs: a thread of its own blocks in
//!        recvmmsg, answers cache hits in place, sendmmsg's the batch
//!     otherwise ─► udp_portable.rs in this task:
//!        recv_from ─► handle_now, or start_miss (udp_miss.rs) ─► send_to
//!  udp_lanes.rs: what a loop and its misses share (reply socket, RRL)
//!  misses: a permit from the shared miss limit, or dropped and counted;
//!     a spawned miss sends its own reply through ReplySocket
//!  a panic in a loop: caught, counted, the loop restarted on the same socket
//! ```
//!
//! A slow database only delays the spawned misses (at most the miss limit
//! at once); cached answers keep flowing from the receive loop.

use super::udp_lanes::{Lanes, ReplySocket};
pub use super::udp_lanes::{UdpSettings, MAX_DATAGRAM};
use super::udp_portable::serve_one_at_a_time;
use crate::guard::{bump, GUARD};
use crate::handler::Handler;
use crate::rrl::Rrl;
use futures::FutureExt;
use socket2::{Domain, Protocol, Socket, Type};
use std::io;
use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::UdpSocket;
use tokio::sync::Semaphore;

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

/// Serves one UDP socket until the task is dropped, with every reply (cache
/// hits too) passed through the
/// response rate limiter when there is one (`crate::rrl`), reading up to
/// `batch` datagrams per system call (1: one at a time, the portable loop),
/// and at most `misses`' permits of cache misses answered at once (more are
/// dropped, counted in `udp_miss_overflows`).
pub async fn serve_udp_limited<H: Handler>(
    socket: UdpSocket,
    handler: Arc<H>,
    rrl: Option<Arc<Rrl>>,
    batch: usize,
    misses: Arc<Semaphore>,
) {
    let settings = UdpSettings {
        rrl,
        batch,
        misses,
        coalesce: Duration::ZERO,
    };
    serve_udp_with(socket, handler, settings).await
}

/// Serves one UDP socket until the task is dropped. On Linux with a batch
/// above 1 the socket is read by a thread of its own (`udp_thread.rs`);
/// otherwise by the portable loop in this task. A panic in a loop is
/// logged, counted (`udp_worker_restarts`) and the loop started again.
pub async fn serve_udp_with<H: Handler>(socket: UdpSocket, handler: Arc<H>, settings: UdpSettings) {
    #[cfg(target_os = "linux")]
    if settings.batch > 1 {
        return super::udp_thread::serve_on_thread(socket, handler, settings).await;
    }
    let socket = Arc::new(socket);
    let lanes = Lanes {
        replies: Arc::new(ReplySocket::Async(socket.clone())),
        handler,
        rrl: settings.rrl,
        misses: settings.misses,
    };
    loop {
        match AssertUnwindSafe(serve_one_at_a_time(&socket, &lanes))
            .catch_unwind()
            .await
        {
            Ok(()) => return,
            Err(_) => {
                bump(&GUARD.udp_worker_restarts);
                tracing::error!("udp worker loop panicked; restarted");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}
