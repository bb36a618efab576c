//! UDP queries the caches did not answer in the receive loop: run in the
//! loop until they first wait, and only then in a task of their own.
//!
//! ```text
//!  start_miss(packet, peer) ─► a permit from the miss limit
//!        (none left: dropped, counted in udp_miss_overflows)
//!     ─► the pipeline's future (it owns a copy of the packet), polled once:
//!          ready   ─► MissStart::Answered(reply): the loop sends it in its
//!                     batch (sendmmsg) and observes it with the hits
//!          waiting ─► spawned: awaited, observed, sent alone (ReplySocket::send_to)
//!          panicked ─► dropped, counted in udp_miss_panics
//! ```
//!
//! Why poll once first: a resident zone, or a record cache holding every
//! node a query needs, answers without waiting on anything; spawning such
//! a query cost a task, a wake-up and a `send_to` of its own per query.
//! The first poll uses a waker that does nothing; that is sound because the
//! spawned task polls the future again at once, and a future registers the
//! waker of each poll (a wait begun before the move is not lost).

use super::udp_lanes::{rate_limit, Lanes};
use crate::guard::{bump, GUARD};
use crate::handler::Handler;
use crate::handler::Transport;
use std::future::Future;
use std::net::SocketAddr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

/// A miss's reply on its way: the future owns the query and gives it back
/// with the reply.
type MissFuture = Pin<Box<dyn Future<Output = (Vec<u8>, Option<Vec<u8>>)> + Send>>;

/// How a miss went at its first poll.
pub(super) enum MissStart {
    /// Answered without waiting: the reply to send (`None`: send nothing),
    /// not yet observed nor rate-limited.
    Answered(Option<Vec<u8>>),
    /// Waiting on something: now in a task that sends its reply itself.
    Spawned,
    /// No miss permit was left, or the answer panicked: nothing is sent
    /// (the client retries), counted.
    Dropped,
}

/// Starts answering `packet` from `peer`: at once when nothing needs
/// waiting for, else in a task of its own.
pub(super) fn start_miss<H: Handler>(
    packet: &[u8],
    peer: SocketAddr,
    lanes: &Lanes<H>,
) -> MissStart {
    let Ok(permit) = lanes.misses.clone().try_acquire_owned() else {
        bump(&GUARD.udp_miss_overflows);
        return MissStart::Dropped;
    };
    let packet = packet.to_vec();
    let handler = lanes.handler.clone();
    let mut answer: MissFuture = Box::pin(async move {
        let reply = handler.handle_from(&packet, Transport::Udp, peer).await;
        (packet, reply)
    });
    let mut cx = Context::from_waker(Waker::noop());
    // A panic stays this query's, as it would in a task of its own.
    match catch_unwind(AssertUnwindSafe(|| answer.as_mut().poll(&mut cx))) {
        Ok(Poll::Ready((_, reply))) => return MissStart::Answered(reply),
        Ok(Poll::Pending) => {}
        Err(_) => {
            bump(&GUARD.udp_miss_panics);
            tracing::error!("udp miss panicked; no reply sent");
            return MissStart::Dropped;
        }
    }
    let (handler, socket, rrl) = (
        lanes.handler.clone(),
        lanes.replies.clone(),
        lanes.rrl.clone(),
    );
    tokio::spawn(async move {
        let _permit = permit;
        let (packet, reply) = answer.await;
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
    MissStart::Spawned
}
