//! Caches in front of the database, and the counters that watch them.
//!
//! ```text
//!  UDP/TCP ─► PacketCache (whole replies) ──hit──► reply
//!                 │ miss
//!                 ▼
//!             pipeline ─► RecordCache (zones, nodes, denial intervals) ──miss──► Store
//!                               ▲
//!  zones::ZoneRegistry ◄─ poll meta.seq / zones{gen > last} every interval
//!  (a zone's generation moves ─► its cached replies and nodes are void,
//!   but those of names the change did not touch)
//! ```
//!
//! Files: `packet.rs` (whole replies), `record/` (the record cache),
//! `denial.rs` (NSEC/NSEC3 intervals), `sharded.rs` (the sharded LRU under
//! both caches), `single_flight.rs` (one detached read per key), `gate.rs`
//! (the database concurrency gate). Which zones are served, and how their
//! changes reach the caches, is `crate::zones`.

pub mod denial;
pub mod gate;
pub mod packet;
pub mod record;
pub mod sharded;
mod single_flight;

pub use gate::DbGate;
pub use packet::{Dependency, NameReach, PacketCache, PacketKey};
pub use record::{RecordCache, RecordCacheConfig};

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds (µs) of the database latency histogram buckets.
pub const DB_LATENCY_BUCKETS_US: [u64; 12] = [
    100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 1_000_000,
];

/// Counters shared by the caches and the database path.
#[derive(Default)]
pub struct Counters {
    /// Zone lookups answered from the registry.
    pub zone_hits: AtomicU64,
    /// Zone lookups that went to the database.
    pub zone_misses: AtomicU64,
    /// Node lookups answered from the record cache.
    pub record_hits: AtomicU64,
    /// Node lookups that needed the database (or waited for a query).
    pub record_misses: AtomicU64,
    /// DNSSEC denial lookups answered from the denial cache.
    pub denial_hits: AtomicU64,
    /// DNSSEC denial lookups that needed the database (or waited for one).
    pub denial_misses: AtomicU64,
    /// Database round trips.
    pub db_queries: AtomicU64,
    /// Database round trips that failed.
    pub db_errors: AtomicU64,
    /// Total database latency in µs.
    pub db_latency_us: AtomicU64,
    /// Database latency histogram (`DB_LATENCY_BUCKETS_US`, plus overflow).
    pub db_latency_buckets: [AtomicU64; 13],
    /// Database reads in flight now.
    pub db_inflight: AtomicU64,
    /// Cached nodes dropped because their zone moved to a new version.
    pub version_drops: AtomicU64,
    /// Zone changes noticed by polling.
    pub zone_changes: AtomicU64,
    /// Queries answered by the full pipeline.
    pub pipeline_queries: AtomicU64,
    /// Expired nodes used because the database failed (serve-stale).
    pub stale_nodes: AtomicU64,
    /// Database reads refused because too many were waiting (load shed).
    pub db_shed: AtomicU64,
    /// Uncached queries that ran out of time (SERVFAIL, or stale).
    pub query_timeouts: AtomicU64,
    /// Zone documents and catalog nodes read to keep the catalog zone.
    pub catalog_reads: AtomicU64,
}

impl Counters {
    /// Records one database round trip.
    pub fn record_db(&self, took: Duration, ok: bool) {
        let us = took.as_micros().min(u128::from(u64::MAX)) as u64;
        self.db_queries.fetch_add(1, Ordering::Relaxed);
        if !ok {
            self.db_errors.fetch_add(1, Ordering::Relaxed);
        }
        self.db_latency_us.fetch_add(us, Ordering::Relaxed);
        let bucket = DB_LATENCY_BUCKETS_US
            .iter()
            .position(|b| us <= *b)
            .unwrap_or(DB_LATENCY_BUCKETS_US.len());
        self.db_latency_buckets[bucket].fetch_add(1, Ordering::Relaxed);
    }
}
