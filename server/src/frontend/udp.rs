//! UDP: one socket per worker, bound with SO_REUSEPORT to the same address.
//!
//! ```text
//!  bind_udp(addr, workers) ─► [socket; workers]
//!  serve_udp(socket) loop: recv_from ─► spawn(respond ─► send_to)
//! ```

use super::Handler;
use crate::pipeline::Transport;
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
        socket.set_nonblocking(true)?;
        socket.bind(&addr.into())?;
        out.push(UdpSocket::from_std(socket.into())?);
    }
    Ok(out)
}

/// Serves one UDP socket until the task is dropped.
pub async fn serve_udp<H: Handler>(socket: UdpSocket, handler: Arc<H>) {
    let socket = Arc::new(socket);
    let mut buf = vec![0u8; MAX_DATAGRAM];
    loop {
        let (len, peer) = match socket.recv_from(&mut buf).await {
            Ok(x) => x,
            Err(e) => {
                // ICMP errors from earlier sends surface here; keep serving.
                tracing::debug!(error = %e, "udp recv error");
                continue;
            }
        };
        let packet = buf[..len].to_vec();
        let handler = handler.clone();
        let socket = socket.clone();
        tokio::spawn(async move {
            if let Some(reply) = handler.handle(&packet, Transport::Udp).await {
                if let Err(e) = socket.send_to(&reply, peer).await {
                    tracing::debug!(error = %e, %peer, "udp send error");
                }
            }
        });
    }
}
