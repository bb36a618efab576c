//! The zones' and the database's metrics: the zone registry and its change
//! poll, and the reads the answer path sends to the database.
//!
//! ```text
//!  ZONES    ─► zone cache hits, misses, changes, changes waited,
//!              changes unnarrowed (counters), zones known (gauge)
//!                                    ◄── Control::counters, ::registry
//!  DATABASE ─► round trips, errors, latency sum, catalog zone reads
//!              (counters), reads in flight (gauge)  ◄── Control::counters
//! ```

use super::{load, Reading};

/// Which zones are served, and how their changes were taken in.
pub(super) const ZONES: &[Reading] = &readings! {
    /// zone lookups served from memory
    zone_cache_hits: Counter = |c| load(&c.counters.zone_hits);
    /// zone lookups that needed the database
    zone_cache_misses: Counter = |c| load(&c.counters.zone_misses);
    /// zones in the registry
    zones_known: Gauge = |c| c.registry.len() as u64;
    /// zone changes noticed by polling
    zone_changes: Counter = |c| load(&c.counters.zone_changes);
    /// zone changes held back a poll for a generation not yet accounted for
    zone_changes_waited: Counter = |c| c.registry.narrowing_counts().0;
    /// zone changes that dropped every cached node of the zone
    zone_changes_unnarrowed: Counter = |c| c.registry.narrowing_counts().1;
};

/// The database's round trips.
pub(super) const DATABASE: &[Reading] = &readings! {
    /// database round trips
    db_queries: Counter = |c| load(&c.counters.db_queries);
    /// database round trips that failed
    db_errors: Counter = |c| load(&c.counters.db_errors);
    /// total database latency in microseconds
    db_latency_us_sum: Counter = |c| load(&c.counters.db_latency_us);
    /// database reads in flight
    db_inflight: Gauge = |c| load(&c.counters.db_inflight);
    /// zone documents and catalog nodes read to keep the catalog zone
    catalog_zone_reads: Counter = |c| load(&c.counters.catalog_reads);
};
