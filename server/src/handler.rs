//! What the front end asks of whatever answers queries, and the words
//! they share: the narrow interface between sockets and DNS.
//!
//! ```text
//!  frontend (udp.rs, tcp.rs) ─► Handler::handle_now / handle_from / handle_tcp
//!     Transport (UDP or TCP), TcpPeer (the connection), TcpReply (messages,
//!     or a transfer's stream that may end Aborted)
//!  pipeline::Responder implements Handler; observe.rs wraps one for counters
//! ```

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::sync::mpsc;

/// How the query arrived; decides the size limit of the reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// UDP: at most the requester's EDNS size (or 512), capped by our limit.
    Udp,
    /// TCP: up to 65535 bytes.
    Tcp,
}

/// A zone transfer was stopped part way: close the connection, send no more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Aborted;

/// What one query over TCP gets.
pub enum TcpReply {
    /// Messages known in full (none: send nothing).
    Messages(Vec<Vec<u8>>),
    /// A zone transfer: its first message, then the others as they are
    /// built; an `Err` means it was aborted (the connection is closed).
    Stream {
        /// The first message.
        first: Vec<u8>,
        /// The rest, in order.
        rest: mpsc::Receiver<Result<Vec<u8>, Aborted>>,
    },
}

impl TcpReply {
    /// The first message, if any (what the counters and query log see).
    pub fn first(&self) -> Option<&[u8]> {
        match self {
            TcpReply::Messages(m) => m.first().map(Vec::as_slice),
            TcpReply::Stream { first, .. } => Some(first),
        }
    }

    /// Every message, waiting for a stream to end; `Err` if it was aborted.
    pub async fn collect(self) -> Result<Vec<Vec<u8>>, Aborted> {
        match self {
            TcpReply::Messages(m) => Ok(m),
            TcpReply::Stream { first, mut rest } => {
                let mut all = vec![first];
                while let Some(piece) = rest.recv().await {
                    all.push(piece?);
                }
                Ok(all)
            }
        }
    }
}

/// A TCP connection as a handler sees it: the client, and whether a zone
/// transfer already runs on it (one at a time per connection).
#[derive(Clone, Debug)]
pub struct TcpPeer {
    /// The client.
    pub addr: SocketAddr,
    transfer: Arc<AtomicBool>,
}

/// The claim on a connection's one transfer; dropping it frees it.
pub struct TransferClaim(Arc<AtomicBool>);

impl TcpPeer {
    /// A new connection from `addr`.
    pub fn new(addr: SocketAddr) -> TcpPeer {
        TcpPeer {
            addr,
            transfer: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Claims the connection's transfer; `None` while another one runs.
    pub fn begin_transfer(&self) -> Option<TransferClaim> {
        self.transfer
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
            .ok()
            .map(|_| TransferClaim(self.transfer.clone()))
    }
}

impl Drop for TransferClaim {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

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

    /// Answers `packet` received over UDP from `peer` (the queries the
    /// caches did not answer in the loop); the default ignores the peer.
    fn handle_from(
        &self,
        packet: &[u8],
        transport: Transport,
        peer: SocketAddr,
    ) -> impl Future<Output = Option<Vec<u8>>> + Send {
        let _ = peer;
        self.handle(packet, transport)
    }

    /// Answers `packet` received over TCP on the connection `peer`: every
    /// message to send, in order (a zone transfer takes several, streamed).
    /// The default is what [`Handler::handle`] gives.
    fn handle_tcp(&self, packet: &[u8], peer: &TcpPeer) -> impl Future<Output = TcpReply> + Send {
        let _ = peer;
        async move {
            TcpReply::Messages(
                self.handle(packet, Transport::Tcp)
                    .await
                    .into_iter()
                    .collect(),
            )
        }
    }
}
