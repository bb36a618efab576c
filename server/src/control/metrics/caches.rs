//! The caches' metrics: the packet cache (whole replies), the record cache
//! (nodes) and the denial cache (NSEC/NSEC3 records), one table each.
//!
//! ```text
//!  PACKET_CACHE ─► hits, misses, uncacheable, evictions (counters),
//!                  entries, bytes (gauges)            ◄── Control::packets
//!  RECORD_CACHE ─► hits, misses, evictions, version drops (counters),
//!                  entries (gauge)       ◄── Control::counters, ::records
//!  DENIAL_CACHE ─► hits, misses (counters), entries, bytes (gauges),
//!                  evictions (counter)   ◄── Control::counters, ::records
//! ```

use super::{load, Reading};

/// Whole replies kept before parsing.
pub(super) const PACKET_CACHE: &[Reading] = &readings! {
    /// replies served from the packet cache
    packet_cache_hits: Counter = |c| load(&c.packets.stats.hits);
    /// cacheable queries not in the packet cache
    packet_cache_misses: Counter = |c| load(&c.packets.stats.misses);
    /// queries of a shape the packet cache skips
    packet_cache_uncacheable: Counter = |c| load(&c.packets.stats.uncacheable);
    /// replies evicted to stay within bounds
    packet_cache_evictions: Counter = |c| c.packets.evictions();
    /// replies held
    packet_cache_entries: Gauge = |c| c.packets.len() as u64;
    /// approximate bytes held by the packet cache
    packet_cache_bytes: Gauge = |c| c.packets.bytes() as u64;
};

/// Nodes kept in front of the database.
pub(super) const RECORD_CACHE: &[Reading] = &readings! {
    /// node lookups served from the record cache
    record_cache_hits: Counter = |c| load(&c.counters.record_hits);
    /// node lookups that needed the database
    record_cache_misses: Counter = |c| load(&c.counters.record_misses);
    /// nodes evicted to stay within bounds
    record_cache_evictions: Counter = |c| c.records.evictions();
    /// nodes dropped because their zone moved to a new version
    record_cache_version_drops: Counter = |c| load(&c.counters.version_drops);
    /// nodes held
    record_cache_entries: Gauge = |c| c.records.len() as u64;
};

/// NSEC/NSEC3 records kept as intervals.
pub(super) const DENIAL_CACHE: &[Reading] = &readings! {
    /// DNSSEC denial lookups served from the denial cache
    denial_cache_hits: Counter = |c| load(&c.counters.denial_hits);
    /// DNSSEC denial lookups that needed the database
    denial_cache_misses: Counter = |c| load(&c.counters.denial_misses);
    /// NSEC/NSEC3 records held by the denial cache
    denial_cache_entries: Gauge = |c| c.records.denial_len() as u64;
    /// approximate bytes held by the denial cache
    denial_cache_bytes: Gauge = |c| c.records.denial_bytes() as u64;
    /// denial records evicted to stay within bounds
    denial_cache_evictions: Counter = |c| c.records.denial_evictions();
};
