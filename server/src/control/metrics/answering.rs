//! The answer path's metrics: queries answered and dropped, the query log,
//! and how the server is serving (uptime, serve-stale, shedding, timeouts,
//! freshness).
//!
//! ```text
//!  QUERIES   ─► pipeline queries, UDP, TCP, dropped (counters), in flight
//!               (gauge)                ◄── Control::queries, ::counters
//!  QUERY_LOG ─► lines written, dropped, write errors, rotations (counters)
//!                                      ◄── Control::query_log
//!  SERVING   ─► uptime, registry complete, freshness lag (gauges); stale
//!               replies, stale nodes, reads shed, query timeouts
//!               (counters)  ◄── Control::started, ::packets, ::counters,
//!                               ::registry
//! ```
//!
//! Without per-query counters or a query log, their metrics read 0.

use super::{load, Reading};
use crate::control::Control;
use crate::observe::QueryMetrics;
use crate::querylog::QueryLogStats;
use std::sync::atomic::AtomicU64;

/// `f` of the per-query counters, 0 when queries are not counted.
fn queries(c: &Control, f: fn(&QueryMetrics) -> u64) -> u64 {
    c.queries.as_deref().map_or(0, f)
}

/// One counter of the query log, 0 when it is off.
fn query_log(c: &Control, f: fn(&QueryLogStats) -> &AtomicU64) -> u64 {
    c.query_log.as_ref().map_or(0, |q| load(f(q.stats())))
}

/// Queries answered, by transport, and queries dropped.
pub(super) const QUERIES: &[Reading] = &readings! {
    /// queries answered by the full pipeline
    pipeline_queries: Counter = |c| load(&c.counters.pipeline_queries);
    /// queries answered over UDP
    queries_udp: Counter = |c| queries(c, |q| q.total_for("udp"));
    /// queries answered over TCP
    queries_tcp: Counter = |c| queries(c, |q| q.total_for("tcp"));
    /// queries in the answer pipeline now (cache misses in flight)
    queries_inflight: Gauge = |c| queries(c, |q| load(&q.inflight));
    /// queries that got no reply (malformed, not a query)
    dropped_queries: Counter = |c| queries(c, |q| q.dropped().iter().sum());
};

/// The query log's writer.
pub(super) const QUERY_LOG: &[Reading] = &readings! {
    /// query log lines written
    query_log_lines: Counter = |c| query_log(c, |s| &s.written);
    /// query log lines dropped because the writer could not keep up
    query_log_dropped: Counter = |c| query_log(c, |s| &s.dropped);
    /// query log lines lost to write errors
    query_log_write_errors: Counter = |c| query_log(c, |s| &s.write_errors);
    /// query log files rotated or reopened
    query_log_rotations: Counter = |c| query_log(c, |s| &s.rotations);
};

/// Uptime, serve-stale, shedding, timeouts and freshness.
pub(super) const SERVING: &[Reading] = &readings! {
    /// seconds since the server started
    uptime_seconds: Gauge = |c| c.started.elapsed().as_secs();
    /// expired replies served because the database failed (serve-stale)
    stale_replies: Counter = |c| load(&c.packets.stats.stale_hits);
    /// expired records used because the database failed (serve-stale)
    stale_nodes: Counter = |c| load(&c.counters.stale_nodes);
    /// database reads refused at once because too many were waiting (load shedding)
    db_shed: Counter = |c| load(&c.counters.db_shed);
    /// uncached queries that ran out of time (SERVFAIL or stale)
    query_timeouts: Counter = |c| load(&c.counters.query_timeouts);
    /// 1 when every served zone is in memory (names in no zone cost no database read)
    zone_registry_complete: Gauge = |c| u64::from(c.registry.is_complete());
    /// milliseconds since the last successful change poll
    freshness_lag_ms: Gauge = |c| c.registry.poll_age().map_or(u64::MAX, |d| d.as_millis() as u64);
};
