//! Serving an axum router with every connection bounded: shared by the
//! control endpoint and the HTTP API.
//!
//! ```text
//!  accept ── error (EMFILE, …) ─► count, log at most once a second, wait
//!                                 100 ms, keep accepting
//!     ─► a task per connection: slots.rs (Slots::new_http)
//!        source prefix (IPv4 /24, IPv6 /56) holds its share already
//!        (a quarter of max_connections)? ── yes ──► close at once (refused)
//!        a slot of max_connections free? ── yes ──► served
//!        none: the oldest connection without a whole request head, of the
//!        prefix holding the most, is evicted (counted) and the newcomer
//!        waits for its slot, at most header_timeout; no such connection (all
//!        mid-request) ──► close at once (refused)
//!     ─► hyper HTTP/1.1, one request per connection: the request's head
//!        within header_timeout, the whole exchange within request_timeout;
//!        until its head is in (HeadMark) the connection listens for its
//!        eviction and closes when told
//!     ─► the router, the peer's address in each request (`Peer`)
//! ```
//!
//! Silent or slow connections (nothing sent, or half a request line) hold
//! at most their source's share, and only until a newcomer needs the slot
//! or header_timeout passes: `/health` from elsewhere (a container's own
//! health check, a load balancer) is still served however many prefixes
//! send them. A request whose head is in is never evicted.

use crate::frontend::slots::{Slot, Slots};
use axum::{Extension, Router};
use hyper::service::Service as _;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};

use crate::guard::bump;

/// How many connections are served at once, and for how long each.
#[derive(Clone, Copy, Debug)]
pub struct HttpLimits {
    /// Connections served at once; more are closed at once.
    pub max_connections: usize,
    /// Time allowed for one whole request and its response.
    pub request_timeout: Duration,
    /// Time allowed from accepting a connection until the request's
    /// line and headers have arrived.
    pub header_timeout: Duration,
}

impl HttpLimits {
    /// Connections one source prefix may hold at once: a quarter of the
    /// slots, at least one.
    pub fn per_source(&self) -> usize {
        (self.max_connections / 4).max(1)
    }
}

/// The counters a listener bumps.
#[derive(Clone, Copy)]
pub struct HttpCounters {
    /// Connections closed at the connection cap or the source's share.
    pub refused: &'static AtomicU64,
    /// Accept errors (the listener backs off and continues).
    pub accept_errors: &'static AtomicU64,
    /// Connections without a whole request head closed for a newcomer,
    /// every slot taken.
    pub evictions: &'static AtomicU64,
}

/// Serves `router` on `listener` until the task is dropped.
pub async fn serve_bounded(
    listener: TcpListener,
    router: Router,
    limits: HttpLimits,
    counters: HttpCounters,
) {
    let max = limits.max_connections.max(1);
    let slots = Slots::new_http(max, limits.per_source(), counters.evictions);
    let mut last_logged: Option<Instant> = None;
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                bump(counters.accept_errors);
                if last_logged.is_none_or(|t| t.elapsed() >= Duration::from_secs(1)) {
                    tracing::warn!(error = %e, "HTTP accept error; backing off and continuing");
                    last_logged = Some(Instant::now());
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let (slots, router) = (slots.clone(), router.clone());
        tokio::spawn(async move {
            // A newcomer that evicted a connection waits for its slot (freed
            // as soon as that connection's task runs), at most as long as
            // its own request head may take.
            let Ok(slot) = slots.admit(peer.ip(), limits.header_timeout).await else {
                bump(counters.refused);
                return; // dropping the stream closes it
            };
            serve_one(stream, peer, router, slot, limits).await;
        });
    }
}

/// One connection holding `slot`: its request served, unless it is told
/// to give the slot up before its head is in.
async fn serve_one(
    stream: TcpStream,
    peer: SocketAddr,
    router: Router,
    slot: Slot,
    limits: HttpLimits,
) {
    let head = slot.head_mark();
    let inner = Arc::new(TowerToHyperService::new(
        router.layer(Extension(Peer(peer))),
    ));
    let service = hyper::service::service_fn(move |request| {
        head.received();
        inner.call(request)
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .keep_alive(false)
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .serve_connection(TokioIo::new(stream), service);
    tokio::select! {
        _ = tokio::time::timeout(limits.request_timeout, connection) => {}
        () = slot.evicted().notified() => {}
    }
    drop(slot);
}

/// The address a request came from (a request extension).
#[derive(Clone, Copy, Debug)]
pub struct Peer(pub std::net::SocketAddr);
