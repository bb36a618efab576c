//! UDP: one socket per worker, bound with SO_REUSEPORT to the same address.
//!
//! ```text
//!  bind_udp(addr, workers) ─► [socket; workers]
//!  serve_udp(socket) loop: recv_from ─► handle_now (cache hit: reply from
//!        the loop, no task, no allocation) ─ miss ─► spawn(handle ─► send_to)
//! ```
//!
//! A slow database only delays the spawned tasks; cached answers keep
//! flowing from the receive loop.

use super::Handler;
use crate::pipeline::Transport;
use crate::rrl::{make_slip, Rrl, Verdict};
use socket2::{Domain, Protocol, Socket, Type};
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::UdpSocket;

/// Largest datagram we read.
const MAX_DATAGRAM: usize = 65535;

/// Opens `count` UDP sockets on `addr` sharing the port (SO_REUSEPORT),
/// with the requested buffer sizes. Returns the sockets and the sizes the
/// kernel actually granted.
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
        if let Some(size) = rcvbuf {
            socket.set_recv_buffer_size(size)?;
        }
        if let Some(size) = sndbuf {
            socket.set_send_buffer_size(size)?;
        }
        if out.is_empty() {
            report_buffer(
                "SO_RCVBUF",
                rcvbuf,
                socket.recv_buffer_size()?,
                "/proc/sys/net/core/rmem_max",
            );
            report_buffer(
                "SO_SNDBUF",
                sndbuf,
                socket.send_buffer_size()?,
                "/proc/sys/net/core/wmem_max",
            );
        }
        socket.set_nonblocking(true)?;
        socket.bind(&addr.into())?;
        out.push(UdpSocket::from_std(socket.into())?);
    }
    Ok(out)
}

/// Logs a socket buffer size; Linux reports twice the usable size it granted.
fn report_buffer(what: &str, asked: Option<usize>, granted: usize, limit_file: &str) {
    let usable = granted / 2;
    match asked {
        Some(asked) if usable < asked => {
            let limit = std::fs::read_to_string(limit_file).unwrap_or_default();
            tracing::warn!(
                option = what,
                asked,
                granted = usable,
                limit = limit.trim(),
                "socket buffer capped by the kernel; raise {limit_file} (sysctl) to get the size asked for"
            );
        }
        _ => tracing::info!(option = what, bytes = usable, "UDP socket buffer"),
    }
}

/// Serves one UDP socket until the task is dropped.
pub async fn serve_udp<H: Handler>(socket: UdpSocket, handler: Arc<H>) {
    serve_udp_limited(socket, handler, None).await
}

/// Like [`serve_udp`], with every reply (cache hits too) passed through the
/// response rate limiter when there is one (`crate::rrl`).
pub async fn serve_udp_limited<H: Handler>(
    socket: UdpSocket,
    handler: Arc<H>,
    rrl: Option<Arc<Rrl>>,
) {
    let socket = Arc::new(socket);
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
        if handler.handle_now(&buf[..len], Transport::Udp, &mut out) {
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
            handler.observe(&buf[..len], Some(&out), peer, Transport::Udp);
            continue;
        }
        let packet = buf[..len].to_vec();
        let handler = handler.clone();
        let socket = socket.clone();
        let rrl = rrl.clone();
        tokio::spawn(async move {
            let reply = handler.handle(&packet, Transport::Udp).await;
            handler.observe(&packet, reply.as_deref(), peer, Transport::Udp);
            if let Some(mut reply) = reply {
                if !rate_limit(rrl.as_deref(), peer, &mut reply) {
                    return;
                }
                if let Err(e) = socket.send_to(&reply, peer).await {
                    tracing::debug!(error = %e, %peer, "udp send error");
                }
            }
        });
    }
}

/// Applies the rate limiter to `reply` for `peer`: false means send nothing
/// (the reply may have been cut down to a truncated one).
fn rate_limit(rrl: Option<&Rrl>, peer: SocketAddr, reply: &mut Vec<u8>) -> bool {
    match rrl.map(|r| r.check(peer.ip())) {
        None | Some(Verdict::Send) => true,
        Some(Verdict::Slip) => make_slip(reply),
        Some(Verdict::Drop) => false,
    }
}
