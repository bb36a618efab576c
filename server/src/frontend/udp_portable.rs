//! The portable UDP loop: one datagram a system call, in a tokio task
//! (other systems than Linux, and `--udp-batch 1`).
//!
//! ```text
//!  recv_from ─► handle_now (a cache hit, in place)
//!     or start_miss (udp_miss.rs): answered now, spawned, or dropped
//!  ─► rate_limit ─► try_send_to (send_to when the buffer is full) ─► observe
//! ```

use super::udp_lanes::{rate_limit, Lanes, MAX_DATAGRAM};
use super::udp_miss::{start_miss, MissStart};
use crate::handler::{Handler, Transport};
use std::io;
use tokio::net::UdpSocket;

/// The portable loop: one `recv_from` and one `send_to` per query.
pub(super) async fn serve_one_at_a_time<H: Handler>(socket: &UdpSocket, lanes: &Lanes<H>) {
    let (handler, rrl) = (&lanes.handler, &lanes.rrl);
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
            match start_miss(packet, peer, lanes) {
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
