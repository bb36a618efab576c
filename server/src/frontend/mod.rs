//! Sockets and framing; no DNS logic lives here.
//!
//! ```text
//!  UDP: one SO_REUSEPORT socket per worker ─► recvmmsg (a batch) ─► cache
//!       hits answered in the loop, sendmmsg ─ misses ─► task: respond ─► send_to
//!  TCP: accept (bounded) ─► per connection: read 2-byte-framed queries,
//!       answer each in its own task, write replies as they finish
//!       (out of order, RFC 7766 §6.2.1.1), close when idle; a zone
//!       transfer's messages are written back to back
//! ```

#[cfg(target_os = "linux")]
pub mod mmsg;
pub mod tcp;
pub mod udp;

use crate::pipeline::Transport;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

/// Anything that turns a query into a reply; the front end knows no more.
pub trait Handler: Send + Sync + 'static {
    /// Answers `packet`; `None` sends nothing.
    fn handle(
        &self,
        packet: &[u8],
        transport: Transport,
    ) -> impl Future<Output = Option<Vec<u8>>> + Send;

    /// Answers at once from memory if it can (into `out`), without waiting
    /// on anything; false means `handle` must be used.
    fn handle_now(&self, _packet: &[u8], _transport: Transport, _out: &mut Vec<u8>) -> bool {
        false
    }

    /// Told about every query after its reply is ready (`None`: nothing is
    /// sent), on every path, for counters and the query log; must not wait.
    fn observe(
        &self,
        _query: &[u8],
        _reply: Option<&[u8]>,
        _peer: SocketAddr,
        _transport: Transport,
    ) {
    }

    /// [`Handler::observe`] for the `n` queries of one receive batch
    /// answered in the loop, their replies sent (`get(i)`: the i-th query,
    /// its reply, the client). The default observes each one; the query log
    /// reads the clock once for the batch.
    fn observe_batch<'a>(
        &self,
        n: usize,
        get: impl Fn(usize) -> (&'a [u8], &'a [u8], SocketAddr),
        transport: Transport,
    ) {
        for i in 0..n {
            let (query, reply, peer) = get(i);
            self.observe(query, Some(reply), peer, transport);
        }
    }

    /// Answers `packet` received over TCP from `peer`: every message to
    /// send, in order (a zone transfer takes several). The default is what
    /// [`Handler::handle`] gives.
    fn handle_tcp(
        &self,
        packet: &[u8],
        peer: SocketAddr,
    ) -> impl Future<Output = Vec<Vec<u8>>> + Send {
        let _ = peer;
        async move {
            self.handle(packet, Transport::Tcp)
                .await
                .into_iter()
                .collect()
        }
    }
}

impl<B: crate::backend::Backend> Handler for crate::pipeline::Responder<B> {
    fn handle(
        &self,
        packet: &[u8],
        transport: Transport,
    ) -> impl Future<Output = Option<Vec<u8>>> + Send {
        self.respond(packet, transport)
    }

    fn handle_now(&self, packet: &[u8], transport: Transport, out: &mut Vec<u8>) -> bool {
        self.answer_cached(packet, transport, out)
    }

    fn handle_tcp(
        &self,
        packet: &[u8],
        peer: SocketAddr,
    ) -> impl Future<Output = Vec<Vec<u8>>> + Send {
        self.respond_tcp(packet, peer)
    }
}

/// Shared handle to a handler.
pub type SharedHandler<H> = Arc<H>;
