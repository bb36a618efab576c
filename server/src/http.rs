//! Serving an axum router with every connection bounded: shared by the
//! control endpoint and the HTTP API.
//!
//! ```text
//!  accept ── error (EMFILE, …) ─► count, log at most once a second, wait
//!                                 100 ms, keep accepting
//!     ─► source prefix (IPv4 /24, IPv6 /56) holds its share already
//!        (a quarter of max_connections)? ── yes ──► close at once (counted)
//!     ─► a slot of max_connections free? ── no ──► close at once (counted)
//!     ─► hyper HTTP/1.1, one request per connection: the request's head
//!        within header_timeout, the whole exchange within request_timeout
//!     ─► the router, the peer's address in each request (`Peer`)
//! ```
//!
//! A source that opens connections and sends nothing (or half a request
//! line) holds at most its share of the slots, each for header_timeout,
//! so `/health` from elsewhere (a container's own health check, a load
//! balancer) is still served.

use crate::frontend::slots::Slots;
use axum::{Extension, Router};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};
use tokio::net::TcpListener;

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
}

/// Serves `router` on `listener` until the task is dropped.
pub async fn serve_bounded(
    listener: TcpListener,
    router: Router,
    limits: HttpLimits,
    counters: HttpCounters,
) {
    let slots = Slots::new(limits.max_connections.max(1), limits.per_source());
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
        let Ok(slot) = slots.admit(peer.ip(), Duration::ZERO).await else {
            bump(counters.refused);
            continue; // dropping the stream closes it
        };
        let service = TowerToHyperService::new(router.clone().layer(Extension(Peer(peer))));
        tokio::spawn(async move {
            let connection = hyper::server::conn::http1::Builder::new()
                .keep_alive(false)
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_timeout)
                .serve_connection(TokioIo::new(stream), service);
            let _ = tokio::time::timeout(limits.request_timeout, connection).await;
            drop(slot);
        });
    }
}

/// The address a request came from (a request extension).
#[derive(Clone, Copy, Debug)]
pub struct Peer(pub std::net::SocketAddr);

/// Equal slices, compared in time that does not depend on where they differ.
pub fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
