//! Counting every query by transport, type and rcode, and feeding the query
//! log, for every answer path: cache hits in the UDP receive loop included.
//!
//! ```text
//!  frontend ─► Observed<H>::handle_now / handle ─► H (the responder)
//!      └─ after the reply: observe(query, reply, peer, transport)
//!         (or observe_batch: a UDP receive batch's answers, sent together)
//!            ─► QueryMetrics (per-thread shards, one relaxed add)
//!            ─► QueryLog::record / record_each (sampled, bounded, never
//!               waits; one clock read per batch)
//! ```
//!
//! The counters are sharded by thread so two workers never write the same
//! cache line; `/metrics` sums the shards when scraped.

use crate::handler::Handler;
use crate::handler::Transport;
use crate::querylog::{question_name_end, QueryLog};
use dns::RType;
use std::cell::Cell;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// Query types counted on their own; everything else is `other`.
const COUNTED: [u16; 21] = [
    1, 2, 5, 6, 12, 15, 16, 28, 33, 35, 39, 43, 48, 50, 51, 64, 65, 251, 252, 255, 257,
];

/// [`COUNTED`] with their mnemonics, from the one type table (`dns::rtype`).
pub const QTYPES: [(u16, &str); 21] = {
    let mut out = [(0, ""); 21];
    let mut i = 0;
    while i < COUNTED.len() {
        out[i] = match RType(COUNTED[i]).name() {
            Some(name) => (COUNTED[i], name),
            None => panic!("a counted type without a mnemonic"),
        };
        i += 1;
    }
    out
};
const OTHER: usize = QTYPES.len();
const TYPE_SLOTS: usize = QTYPES.len() + 1;
const RCODES: usize = 16;
const CELLS: usize = 2 * TYPE_SLOTS * RCODES;
const SHARDS: usize = 16;

/// Transport names, in counter order.
pub const TRANSPORTS: [&str; 2] = ["udp", "tcp"];

#[repr(align(64))]
struct Shard {
    queries: [AtomicU64; CELLS],
    /// Queries that got no reply, by transport.
    dropped: [AtomicU64; 2],
}

/// Per-query counters.
pub struct QueryMetrics {
    shards: Box<[Shard]>,
    /// Queries in the answer pipeline now (not answered from the receive
    /// loop): cache misses waiting on the database, mostly.
    pub inflight: AtomicU64,
}

impl Default for QueryMetrics {
    fn default() -> Self {
        let shards = (0..SHARDS)
            .map(|_| Shard {
                queries: std::array::from_fn(|_| AtomicU64::new(0)),
                dropped: [AtomicU64::new(0), AtomicU64::new(0)],
            })
            .collect();
        QueryMetrics {
            shards,
            inflight: AtomicU64::new(0),
        }
    }
}

static NEXT_SHARD: AtomicUsize = AtomicUsize::new(0);
thread_local! {
    static MY_SHARD: Cell<usize> = const { Cell::new(usize::MAX) };
}

fn my_shard() -> usize {
    MY_SHARD.with(|s| {
        let v = s.get();
        if v != usize::MAX {
            return v;
        }
        let v = NEXT_SHARD.fetch_add(1, Ordering::Relaxed) % SHARDS;
        s.set(v);
        v
    })
}

fn type_slot(qtype: u16) -> usize {
    QTYPES
        .iter()
        .position(|(t, _)| *t == qtype)
        .unwrap_or(OTHER)
}

fn transport_index(t: Transport) -> usize {
    match t {
        Transport::Udp => 0,
        Transport::Tcp => 1,
    }
}

/// One row of the query counters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryCount {
    /// `udp` or `tcp`.
    pub transport: &'static str,
    /// Type mnemonic, or `other`.
    pub qtype: &'static str,
    /// Rcode (header bits only).
    pub rcode: u8,
    /// Queries.
    pub count: u64,
}

impl QueryMetrics {
    /// Counts one query; `reply` is `None` when nothing was sent.
    #[inline]
    pub fn count(&self, query: &[u8], reply: Option<&[u8]>, transport: Transport) {
        let shard = &self.shards[my_shard()];
        let t = transport_index(transport);
        let Some(reply) = reply else {
            shard.dropped[t].fetch_add(1, Ordering::Relaxed);
            return;
        };
        let qtype = question_name_end(query)
            .and_then(|end| query.get(end..end + 2))
            .map_or(0, |b| u16::from_be_bytes([b[0], b[1]]));
        let rcode = reply.get(3).map_or(0, |b| usize::from(b & 0x0f));
        let cell = (t * TYPE_SLOTS + type_slot(qtype)) * RCODES + rcode;
        shard.queries[cell].fetch_add(1, Ordering::Relaxed);
    }

    /// Every non-zero (transport, type, rcode) count.
    pub fn counts(&self) -> Vec<QueryCount> {
        let mut out = Vec::new();
        for cell in 0..CELLS {
            let count: u64 = self
                .shards
                .iter()
                .map(|s| s.queries[cell].load(Ordering::Relaxed))
                .sum();
            if count == 0 {
                continue;
            }
            let rcode = (cell % RCODES) as u8;
            let slot = cell / RCODES % TYPE_SLOTS;
            let t = cell / RCODES / TYPE_SLOTS;
            out.push(QueryCount {
                transport: TRANSPORTS[t],
                qtype: QTYPES.get(slot).map_or("other", |(_, n)| n),
                rcode,
                count,
            });
        }
        out
    }

    /// Queries answered, all kinds.
    pub fn total(&self) -> u64 {
        self.counts().iter().map(|c| c.count).sum()
    }

    /// Queries answered over `transport` (`udp` or `tcp`).
    pub fn total_for(&self, transport: &str) -> u64 {
        self.counts()
            .iter()
            .filter(|c| c.transport == transport)
            .map(|c| c.count)
            .sum()
    }

    /// Queries that got no reply (malformed, not a query), by transport.
    pub fn dropped(&self) -> [u64; 2] {
        let mut out = [0; 2];
        for s in self.shards.iter() {
            for (i, d) in s.dropped.iter().enumerate() {
                out[i] += d.load(Ordering::Relaxed);
            }
        }
        out
    }
}

/// A handler with counters and the query log around it.
pub struct Observed<H> {
    inner: Arc<H>,
    metrics: Arc<QueryMetrics>,
    log: Option<Arc<QueryLog>>,
}

impl<H> Observed<H> {
    /// Wraps `inner`.
    pub fn new(inner: Arc<H>, metrics: Arc<QueryMetrics>, log: Option<Arc<QueryLog>>) -> Self {
        Observed {
            inner,
            metrics,
            log,
        }
    }
}

struct InflightGuard<'a>(&'a AtomicU64);

impl Drop for InflightGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl<H: Handler> Handler for Observed<H> {
    #[allow(clippy::manual_async_fn)] // the trait asks for a `Send` future
    fn handle(
        &self,
        packet: &[u8],
        transport: Transport,
    ) -> impl Future<Output = Option<Vec<u8>>> + Send {
        async move {
            self.metrics.inflight.fetch_add(1, Ordering::Relaxed);
            let _guard = InflightGuard(&self.metrics.inflight);
            self.inner.handle(packet, transport).await
        }
    }

    #[allow(clippy::manual_async_fn)] // the trait asks for a `Send` future
    fn handle_from(
        &self,
        packet: &[u8],
        transport: Transport,
        peer: SocketAddr,
    ) -> impl Future<Output = Option<Vec<u8>>> + Send {
        async move {
            self.metrics.inflight.fetch_add(1, Ordering::Relaxed);
            let _guard = InflightGuard(&self.metrics.inflight);
            self.inner.handle_from(packet, transport, peer).await
        }
    }

    #[allow(clippy::manual_async_fn)] // the trait asks for a `Send` future
    fn handle_tcp(
        &self,
        packet: &[u8],
        peer: &crate::handler::TcpPeer,
    ) -> impl Future<Output = crate::handler::TcpReply> + Send {
        async move {
            self.metrics.inflight.fetch_add(1, Ordering::Relaxed);
            let _guard = InflightGuard(&self.metrics.inflight);
            self.inner.handle_tcp(packet, peer).await
        }
    }

    #[inline]
    fn handle_now(&self, packet: &[u8], transport: Transport, out: &mut Vec<u8>) -> bool {
        self.inner.handle_now(packet, transport, out)
    }

    #[inline]
    fn observe(&self, query: &[u8], reply: Option<&[u8]>, peer: SocketAddr, transport: Transport) {
        self.metrics.count(query, reply, transport);
        if let Some(log) = &self.log {
            log.record(query, reply, peer, transport);
        }
    }

    #[inline]
    fn observe_batch<'a>(
        &self,
        n: usize,
        get: impl Fn(usize) -> (&'a [u8], &'a [u8], SocketAddr),
        transport: Transport,
    ) {
        for i in 0..n {
            let (query, reply, _) = get(i);
            self.metrics.count(query, Some(reply), transport);
        }
        if let Some(log) = &self.log {
            log.record_each(
                n,
                |i| {
                    let (query, reply, peer) = get(i);
                    (query, Some(reply), peer)
                },
                transport,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_type_and_rcode() {
        let m = QueryMetrics::default();
        let q = [0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, b'a', 0, 0, 28, 0, 1];
        let mut r = q.to_vec();
        r[2] = 0x84;
        r[3] = 0x03;
        m.count(&q, Some(&r), Transport::Udp);
        m.count(&q, Some(&r), Transport::Udp);
        m.count(&q, None, Transport::Tcp);
        assert_eq!(
            m.counts(),
            vec![QueryCount {
                transport: "udp",
                qtype: "AAAA",
                rcode: 3,
                count: 2
            }]
        );
        assert_eq!(m.dropped(), [0, 1]);
    }
}
