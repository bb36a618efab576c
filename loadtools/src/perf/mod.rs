//! `mongodns-perf`: a dnsperf-style load generator.
//!
//! ```text
//!  query file ─► Queries (one ready-made wire message per line)
//!        │
//!        ▼                      shared: next line, queries sent (for -Q), stop time
//!  client 0..c (one UDP socket or TCP connection each, window = ceil(q / c))
//!     send while window open and rate allows (a slot due within 2 ms:
//!     poll for it, timers are too coarse) ─► server
//!     (UDP: the queries of one pass by one sendmmsg, replies by recvmmsg;
//!     batch.rs)
//!     recv (UDP: with the kernel's arrival stamp) ─► match id + question
//!        ─► latency (send → arrival) into hdrhistogram, rcode, sizes
//!     timeouts: oldest first (send order), counted lost
//!        │
//!        ▼
//!  Stats (merged) ─► dnsperf-style block, percentiles, --json, --plot SVG
//! ```
//!
//! Matching: a reply counts when its ID is outstanding on that socket and
//! its question section (when present) is the query's, byte for byte. IDs
//! are reused least-recently-freed first, so a very late reply to a query
//! already counted lost is not mistaken for a newer query's reply.

pub mod batch;
mod client;
mod queries;
pub mod stamp;
pub mod stats;
pub mod svg;
mod window;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

pub use queries::{build_query, Queries, QueryOptions};
pub use stats::Stats;

/// Rate slots due sooner than this are waited for by polling (timers are
/// too coarse for them).
const PACE_SPIN: Duration = Duration::from_millis(2);

/// What to run.
#[derive(Clone, Debug)]
pub struct PerfConfig {
    /// The server.
    pub server: SocketAddr,
    /// Stop sending after this long; `None`: send each query of the file once.
    pub duration: Option<Duration>,
    /// Sockets (UDP) or connections (TCP).
    pub clients: usize,
    /// Queries outstanding at once, over all clients.
    pub outstanding: usize,
    /// Limit on queries sent per second.
    pub max_qps: Option<f64>,
    /// A query without a reply after this long is lost.
    pub timeout: Duration,
    /// Use TCP (one connection per client, pipelined).
    pub tcp: bool,
}

/// State shared by the clients.
struct Shared {
    config: PerfConfig,
    queries: Arc<Queries>,
    start: Instant,
    /// Next line of the file to send (wraps when a duration is set).
    next: AtomicU64,
    /// Queries sent by all clients (for the rate limit).
    sent: AtomicU64,
    stop: AtomicBool,
}

impl Shared {
    fn send_deadline(&self) -> Option<Instant> {
        self.config.duration.map(|d| self.start + d)
    }

    /// The next query to send, or `Err(wake)` when the rate limit says to
    /// wait until `wake`, or `Ok(None)` when sending is over.
    fn take(&self, now: Instant) -> Result<Option<usize>, Instant> {
        if self.stop.load(Ordering::Relaxed) {
            return Ok(None);
        }
        if let Some(end) = self.send_deadline() {
            if now >= end {
                self.stop.store(true, Ordering::Relaxed);
                return Ok(None);
            }
        }
        if let Some(q) = self.config.max_qps {
            let sent = self.sent.load(Ordering::Relaxed);
            let allowed = (now - self.start).as_secs_f64() * q;
            if sent as f64 >= allowed {
                return Err(self.start + Duration::from_secs_f64((sent as f64 + 1.0) / q));
            }
        }
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        let n = self.queries.len() as u64;
        if self.config.duration.is_none() && i >= n {
            self.stop.store(true, Ordering::Relaxed);
            return Ok(None);
        }
        self.sent.fetch_add(1, Ordering::Relaxed);
        Ok(Some((i % n) as usize))
    }
}

/// Runs the load and returns the merged statistics.
pub async fn run(config: PerfConfig, queries: Arc<Queries>) -> Stats {
    let clients = config.clients.max(1);
    let outstanding = config.outstanding.max(1).min(clients * 65000);
    let start = Instant::now();
    let shared = Arc::new(Shared {
        config,
        queries,
        start,
        next: AtomicU64::new(0),
        sent: AtomicU64::new(0),
        stop: AtomicBool::new(false),
    });
    let mut handles = Vec::new();
    for i in 0..clients {
        // Spread the window: the first (outstanding % clients) get one more.
        let w = outstanding / clients + usize::from(i < outstanding % clients);
        handles.push(tokio::spawn(client::client(shared.clone(), i, w.max(1))));
    }
    let mut total = Stats::new(start);
    for h in handles {
        if let Ok(s) = h.await {
            total.merge(&s);
        }
    }
    total
}
