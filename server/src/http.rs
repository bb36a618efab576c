//! Serving an axum router with every connection bounded: shared by the
//! control endpoint and the HTTP API.
//!
//! ```text
//!  accept ── error (EMFILE, …) ─► count, log at most once a second, wait
//!                                 100 ms, keep accepting
//!     ─► a permit of max_connections? ── no ──► close at once (counted)
//!     ─► hyper HTTP/1.1, one request per connection, request_timeout in all
//!     ─► the router
//! ```

use axum::Router;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use crate::guard::bump;

/// How many connections are served at once, and for how long each.
#[derive(Clone, Copy, Debug)]
pub struct HttpLimits {
    /// Connections served at once; more are closed at once.
    pub max_connections: usize,
    /// Time allowed for one whole request and its response.
    pub request_timeout: Duration,
}

/// The counters a listener bumps.
#[derive(Clone, Copy)]
pub struct HttpCounters {
    /// Connections closed at the connection cap.
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
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let mut last_logged: Option<Instant> = None;
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
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
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            bump(counters.refused);
            continue; // dropping the stream closes it
        };
        let service = TowerToHyperService::new(router.clone());
        tokio::spawn(async move {
            let connection = hyper::server::conn::http1::Builder::new()
                .keep_alive(false)
                .serve_connection(TokioIo::new(stream), service);
            let _ = tokio::time::timeout(limits.request_timeout, connection).await;
            drop(permit);
        });
    }
}

/// Equal slices, compared in time that does not depend on where they differ.
pub fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
