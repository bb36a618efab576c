//! What a UDP receive loop and the miss tasks it spawns share: the
//! settings, the socket replies go out of, the rate limiter.
//!
//! ```text
//!  UdpSettings ─► Lanes { replies: ReplySocket, handler, rrl, misses }
//!  a reply ─► rate_limit (send, slip to TC, or drop) ─► ReplySocket::send_to
//! ```

use crate::rrl::{make_slip, Rrl, Verdict};
#[cfg(target_os = "linux")]
use socket2::Socket;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::UdpSocket;
use tokio::sync::Semaphore;

/// Largest datagram we read. A DNS query over UDP is far smaller (RFC 6891
/// payload sizes are about what the *reply* may be); a longer datagram is
/// dropped, never answered from a cut copy.
pub const MAX_DATAGRAM: usize = 4096;

/// How a UDP socket is served (see [`super::udp::serve_udp_with`]).
pub struct UdpSettings {
    /// The response rate limiter every reply passes through, if any.
    pub rrl: Option<Arc<Rrl>>,
    /// Datagrams per system call, 1 to 32 (1: the portable loop).
    pub batch: usize,
    /// Cache misses answered at once (shared by every socket).
    pub misses: Arc<Semaphore>,
    /// After a batch of several queries but not a full one, how long the
    /// receive thread lets more queue up before it reads again (0: never).
    pub coalesce: Duration,
}

/// What a receive loop and its miss tasks share.
pub(super) struct Lanes<H> {
    pub(super) replies: Arc<ReplySocket>,
    pub(super) handler: Arc<H>,
    pub(super) rrl: Option<Arc<Rrl>>,
    pub(super) misses: Arc<Semaphore>,
}

/// The socket a miss task sends its reply from.
pub(super) enum ReplySocket {
    /// Registered with tokio (the portable loop's).
    Async(Arc<UdpSocket>),
    /// A blocking socket read by a thread of its own: sent to without
    /// blocking, a full buffer retried briefly (then the reply is dropped,
    /// as the kernel would drop it).
    #[cfg(target_os = "linux")]
    Blocking(Arc<Socket>),
}

/// Sends to a blocking socket's full buffer are tried this many times,
/// a millisecond apart.
#[cfg(target_os = "linux")]
const FULL_BUFFER_TRIES: usize = 3;

impl ReplySocket {
    /// Sends `reply` to `peer`.
    pub(super) async fn send_to(&self, reply: &[u8], peer: SocketAddr) -> io::Result<()> {
        match self {
            ReplySocket::Async(socket) => socket.send_to(reply, peer).await.map(drop),
            #[cfg(target_os = "linux")]
            ReplySocket::Blocking(socket) => {
                let to = socket2::SockAddr::from(peer);
                let mut tries = 0;
                loop {
                    match socket.send_to_with_flags(reply, &to, libc::MSG_DONTWAIT) {
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                            tries += 1;
                            if tries == FULL_BUFFER_TRIES {
                                return Err(e);
                            }
                            tokio::time::sleep(Duration::from_millis(1)).await;
                        }
                        other => return other.map(drop),
                    }
                }
            }
        }
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
