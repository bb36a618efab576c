//! The record cache: zones and nodes in front of the database.
//!
//! ```text
//!  find_zone(apex) ─► ZoneRegistry (positive / negative) ─miss─► store
//!  enclosing_zone(qname) ─► the candidate apexes the registry does not
//!        know ─► one read of them all (zones_among) ─► each remembered
//!  get_node(zone, name) ─► node LRU keyed (apex, ver, name), entry tagged
//!        with the zone's node epoch ─ stale or missing ─► single flight ─► store
//!  denial(zone, key, wrap) ─► DenialCache: the NSEC/NSEC3 records read so
//!        far as intervals [dk, next) (see `denial.rs`), tagged with the
//!        zone's version and node epoch ─ not covered ─► single flight ─► store
//!  A logged change (merge writes) drops just its names (and every denial
//!  record of the zone: the names do not say which intervals moved); any
//!  other change moves the zone's node epoch, which voids all its nodes
//!  and denial records.
//!  Concurrent misses for one key wait for one database read, which runs
//!  as a task of its own: it fills the cache even if its askers time out.
//!  Every read passes the DbGate (N at once, M queued, the rest refused at
//!  once with Busy), so an overloaded server with a cold cache still warms.
//! ```
//!
//! Files: this one is the cache itself (its settings, its parts, purges);
//! `shared.rs` what its detached reads share (the node LRU, the denial
//! cache, the gate, the counted reads); `lookups.rs` the [`Backend`] it
//! offers (zones, nodes, denial records: a hit, or one read in a single
//! flight). The single flight is `../single_flight.rs`, the gate
//! `../gate.rs`.

mod lookups;
mod shared;
#[cfg(test)]
mod tests;

use super::denial::DenialCache;
use super::gate::DbGate;
use super::sharded::ShardedLru;
use super::single_flight::Flights;
use super::Counters;
use crate::backend::Backend;
use crate::backend::StoreError;
use crate::zones::{NodePurge, ZoneRegistry};
use dns::{Name, Node, ZoneInfo};
use shared::{DenialKey, NodeKey, Shared, ZoneVer};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Settings of the record cache.
#[derive(Clone, Debug)]
pub struct RecordCacheConfig {
    /// Most nodes and denial records held (an eighth for denial records).
    pub max_entries: usize,
    /// Most bytes held (approximate; an eighth for denial records).
    pub max_bytes: usize,
    /// Longest time a node is kept, whatever its TTLs.
    pub max_ttl: Duration,
    /// How long a missing name is remembered.
    pub negative_ttl: Duration,
    /// False: every node lookup goes to the database (still counted), for
    /// measuring the uncached path. Zone metadata stays in memory (the zone
    /// registry and each apex node: SOA, NS), as PowerDNS keeps its zone
    /// cache with its other caches off.
    pub enabled: bool,
    /// How long after expiry a node may still be used when reading it again
    /// from the database fails (RFC 8767); zero: never.
    pub serve_stale: Duration,
    /// Most database reads at once (see [`DbGate`]).
    pub db_max_inflight: usize,
    /// Most database reads waiting for a slot; more fail at once.
    pub db_max_queued: usize,
}

impl Default for RecordCacheConfig {
    fn default() -> Self {
        RecordCacheConfig {
            max_entries: 1_000_000,
            max_bytes: 512 << 20,
            max_ttl: Duration::from_secs(300),
            negative_ttl: Duration::from_secs(60),
            enabled: true,
            serve_stale: Duration::ZERO,
            db_max_inflight: 64,
            db_max_queued: 1024,
        }
    }
}

/// A [`Backend`] that caches another one.
pub struct RecordCache<B> {
    shared: Arc<Shared<B>>,
    zones: Arc<ZoneRegistry>,
    node_flights: Arc<Flights<NodeKey, Option<Arc<Node>>>>,
    zone_flights: Arc<Flights<Name, Option<ZoneInfo>>>,
    /// Zone lookups of whole names (the deepest zone among the candidates
    /// not known), by name.
    enclosing_flights: Arc<Flights<Name, Option<ZoneInfo>>>,
    denial_flights: Arc<Flights<DenialKey, Option<Arc<Node>>>>,
    /// The first denial read of a zone version while none is in flight;
    /// misses meanwhile wait for it (see `denial`).
    denial_leads: Arc<Flights<ZoneVer, Option<Arc<Node>>>>,
    config: RecordCacheConfig,
}

impl<B: Backend> RecordCache<B> {
    /// Caches `inner`, with zone freshness from `zones`.
    pub fn new(
        inner: B,
        zones: Arc<ZoneRegistry>,
        config: RecordCacheConfig,
        counters: Arc<Counters>,
    ) -> Self {
        let shared = Arc::new(Shared {
            inner,
            // Denial records get an eighth of the budget, nodes the rest.
            nodes: ShardedLru::new(
                64,
                config.max_entries - config.max_entries / 8,
                config.max_bytes - config.max_bytes / 8,
            ),
            denials: DenialCache::new(config.max_entries / 8, config.max_bytes / 8),
            gate: DbGate::new(config.db_max_inflight, config.db_max_queued),
            ttl_caps_ms: [
                AtomicU64::new(config.max_ttl.as_millis() as u64),
                AtomicU64::new(config.negative_ttl.as_millis() as u64),
            ],
            counters,
            name_purges: AtomicU64::new(0),
        });
        // Logged changes drop only the names they list, a new version
        // drops the old ones' nodes (see ZoneRegistry).
        let purger = Arc::downgrade(&shared);
        zones.set_node_purger(Box::new(move |apex, ver, purge| {
            let Some(shared) = purger.upgrade() else {
                return;
            };
            match purge {
                NodePurge::Names(names) => shared.purge_names(apex, ver, names),
                // A walk over the whole cache: off the async workers.
                NodePurge::OtherVersions => match tokio::runtime::Handle::try_current() {
                    Ok(runtime) => {
                        let apex = apex.clone();
                        runtime.spawn_blocking(move || shared.purge_other_versions(&apex, ver));
                    }
                    Err(_) => {
                        shared.purge_other_versions(apex, ver);
                    }
                },
            }
        }));
        RecordCache {
            shared,
            zones,
            node_flights: Arc::new(Flights::new()),
            zone_flights: Arc::new(Flights::new()),
            enclosing_flights: Arc::new(Flights::new()),
            denial_flights: Arc::new(Flights::new()),
            denial_leads: Arc::new(Flights::new()),
            config,
        }
    }

    /// The zone registry.
    pub fn zones(&self) -> &Arc<ZoneRegistry> {
        &self.zones
    }

    /// Nodes held.
    pub fn len(&self) -> usize {
        self.shared.nodes.len()
    }

    /// True when no node is held.
    pub fn is_empty(&self) -> bool {
        self.shared.nodes.is_empty()
    }

    /// Nodes evicted to stay within bounds.
    pub fn evictions(&self) -> u64 {
        self.shared.nodes.evictions()
    }

    /// NSEC/NSEC3 records held by the denial cache.
    pub fn denial_len(&self) -> usize {
        self.shared.denials.len()
    }

    /// Approximate bytes held by the denial cache.
    pub fn denial_bytes(&self) -> usize {
        self.shared.denials.bytes()
    }

    /// Denial records evicted to stay within bounds.
    pub fn denial_evictions(&self) -> u64 {
        self.shared.denials.evictions()
    }

    /// Database reads waiting for a slot now.
    pub fn db_queued(&self) -> usize {
        self.shared.gate.queued()
    }

    /// Drops cached nodes named `name` (in any zone); returns how many.
    pub fn purge_name(&self, name: &Name) -> usize {
        // The name may be any record's "next": denial records all go.
        self.shared.denials.void_all();
        self.shared.nodes.retain(|k, _| k.2 != *name)
    }

    /// Drops everything.
    pub fn purge_all(&self) -> usize {
        self.zones.purge_all();
        self.shared.denials.void_all();
        self.shared.nodes.retain(|_, _| false)
    }

    /// Changes the TTL caps for nodes stored from now on.
    pub fn set_ttl_caps(&self, max_ttl: Duration, negative_ttl: Duration) {
        let caps = &self.shared.ttl_caps_ms;
        caps[0].store(max_ttl.as_millis() as u64, Ordering::Relaxed);
        caps[1].store(negative_ttl.as_millis() as u64, Ordering::Relaxed);
    }

    /// The cached node (or known absence) under `key`, if it is of the
    /// zone's current node `epoch` and not expired.
    fn fresh(&self, key: &NodeKey, epoch: Option<u64>) -> Option<Option<Arc<Node>>> {
        let now = Instant::now();
        self.shared.nodes.with(key, |e| {
            (Some(e.epoch) == epoch && e.expires > now).then(|| e.node.clone())
        })?
    }

    /// A database read made through the gate but outside the caches.
    async fn uncached<T>(
        &self,
        read: impl std::future::Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        self.shared.gated(read).await
    }
}
