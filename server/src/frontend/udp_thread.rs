//! The Linux UDP receive loop, on a thread of its own that sleeps in
//! `recvmmsg` instead of in the runtime's `epoll_wait`.
//!
//! ```text
//!  serve_on_thread(socket) ─► the socket made blocking (SO_RCVTIMEO: STOP_CHECK)
//!     ─► thread "mongodns-udp", inside the runtime's context:
//!        loop {
//!          recvmmsg(MSG_WAITFORONE): sleeps until a query, takes the queued ones
//!          each: handle_now (cache hit, in place) ─► queued
//!                miss ─► start_miss: answered at once ─► queued | spawned task
//!          sendmmsg(every queued reply) ─► observe_batch
//!          several but not a full batch, and coalesce > 0 ─► sleep coalesce
//!        }
//!     the task awaiting the thread dropped ─► stop flag + shutdown(SHUT_RD)
//!     a panic ─► counted, the loop started again on the same socket
//! ```
//!
//! Why a thread: a wake-up through the runtime costs an `epoll_wait`, a
//! `recvmmsg` and, every other time, a second `recvmmsg` that finds the
//! socket empty and clears its readiness; here a wake-up is one `recvmmsg`
//! and one `sendmmsg` (`docs/benchmarks.md`, CPU per query). Misses still
//! run on the runtime: the thread enters its context, so a miss that has
//! to wait is spawned there and sends its own reply.

use super::mmsg::{RecvBatch, SendBatch};
use super::udp_lanes::{rate_limit, Lanes, ReplySocket, UdpSettings, MAX_DATAGRAM};
use super::udp_miss::{start_miss, MissStart};
use crate::guard::{bump, GUARD};
use crate::handler::Handler;
use crate::handler::Transport;
use socket2::Socket;
use std::io;
use std::os::fd::AsRawFd;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::UdpSocket;

/// How often an idle receive thread wakes to see whether it should stop
/// (the stop also shuts the socket's reading down, which wakes it at once).
const STOP_CHECK: Duration = Duration::from_millis(200);

/// Serves `socket` from a thread of its own until this future is dropped
/// (the thread then stops) or the socket fails.
pub(super) async fn serve_on_thread<H: Handler>(
    socket: UdpSocket,
    handler: Arc<H>,
    settings: UdpSettings,
) {
    let socket = match blocking(socket) {
        Ok(socket) => Arc::new(socket),
        Err(e) => {
            tracing::warn!(error = %e, "udp socket could not be made blocking");
            return;
        }
    };
    let stop = Stop {
        flag: Arc::new(AtomicBool::new(false)),
        socket: socket.clone(),
    };
    let lanes = Lanes {
        replies: Arc::new(ReplySocket::Blocking(socket.clone())),
        handler,
        rrl: settings.rrl,
        misses: settings.misses,
    };
    let runtime = tokio::runtime::Handle::current();
    let flag = stop.flag.clone();
    let (done, finished) = tokio::sync::oneshot::channel::<()>();
    let loop_ = move || {
        let _context = runtime.enter();
        restart_on_panic(|| {
            serve_batches(&socket, &lanes, settings.batch, settings.coalesce, &flag)
        });
        let _ = done.send(());
    };
    if let Err(e) = std::thread::Builder::new()
        .name("mongodns-udp".into())
        .spawn(loop_)
    {
        tracing::warn!(error = %e, "udp receive thread not started");
        return;
    }
    let _ = finished.await;
    drop(stop);
}

/// Takes the socket from the runtime and makes it blocking, with a receive
/// timeout so an idle thread still sees its stop flag.
fn blocking(socket: UdpSocket) -> io::Result<Socket> {
    let socket = Socket::from(socket.into_std()?);
    socket.set_nonblocking(false)?;
    socket.set_read_timeout(Some(STOP_CHECK))?;
    Ok(socket)
}

/// Stops the receive thread when dropped (its task was aborted or ended).
struct Stop {
    flag: Arc<AtomicBool>,
    socket: Arc<Socket>,
}

impl Drop for Stop {
    fn drop(&mut self) {
        self.flag.store(true, Ordering::Release);
        // Wakes a thread asleep in recvmmsg now rather than at its next
        // timeout (the kernel reports ENOTCONN for an unconnected socket,
        // and shuts reading down anyway).
        let _ = self.socket.shutdown(std::net::Shutdown::Read);
    }
}

/// Runs `body` (the receive loop) until it returns, starting it again after
/// a panic (counted in `udp_worker_restarts`).
fn restart_on_panic(body: impl Fn()) {
    while catch_unwind(AssertUnwindSafe(&body)).is_err() {
        bump(&GUARD.udp_worker_restarts);
        tracing::error!("udp worker loop panicked; restarted");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `recvmmsg` up to `batch` queries, answer the cached ones in place,
/// `sendmmsg` their replies together; until `stop` is set.
fn serve_batches<H: Handler>(
    socket: &Socket,
    lanes: &Lanes<H>,
    batch: usize,
    coalesce: Duration,
    stop: &AtomicBool,
) {
    let fd = socket.as_raw_fd();
    let mut queries = RecvBatch::new(MAX_DATAGRAM, batch);
    let mut replies = SendBatch::new();
    // Which query each queued reply answers (for `observe` after sending).
    let mut answered = Vec::with_capacity(super::mmsg::BATCH);
    while !stop.load(Ordering::Acquire) {
        let n = match queries.recv_waiting(fd) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                // ICMP errors from earlier sends surface here; keep serving.
                tracing::debug!(error = %e, "udp recv error");
                continue;
            }
        };
        answer_batch(&queries, n, lanes, &mut replies, &mut answered);
        send_all(fd, &mut replies);
        lanes.handler.observe_batch(
            answered.len(),
            |k| {
                let (i, peer) = answered[k];
                (queries.get(i).0, replies.get(k).0, peer)
            },
            Transport::Udp,
        );
        if n > 1 && n < queries.capacity() && !coalesce.is_zero() {
            // Under load: let the next wake-up carry more queries.
            std::thread::sleep(coalesce);
        }
    }
}

/// Answers the `n` queries read: cache hits and misses answered without
/// waiting are queued in `replies` (`answered` says which query each
/// answers); misses that wait are spawned on the runtime.
fn answer_batch<H: Handler>(
    queries: &RecvBatch,
    n: usize,
    lanes: &Lanes<H>,
    replies: &mut SendBatch,
    answered: &mut Vec<(usize, std::net::SocketAddr)>,
) {
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
        if !lanes.handler.handle_now(packet, Transport::Udp, out) {
            match start_miss(packet, peer, lanes) {
                MissStart::Answered(Some(reply)) => {
                    out.clear();
                    out.extend_from_slice(&reply);
                }
                MissStart::Answered(None) => {
                    lanes.handler.observe(packet, None, peer, Transport::Udp);
                    continue;
                }
                MissStart::Spawned | MissStart::Dropped => continue,
            }
        }
        if rate_limit(lanes.rrl.as_deref(), peer, out) {
            replies.commit(from);
            answered.push((i, peer));
        }
    }
}

/// Sends every queued reply, waiting for room in the socket's buffer when
/// it is full. A reply whose destination fails (e.g. unreachable) is
/// skipped, not retried.
fn send_all(fd: std::os::fd::RawFd, replies: &mut SendBatch) {
    let mut from = 0;
    while from < replies.len() {
        match replies.send_waiting(fd, from) {
            Ok(0) => break,
            Ok(sent) => from += sent,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                tracing::debug!(error = %e, "udp send error");
                from += 1;
            }
        }
    }
}
