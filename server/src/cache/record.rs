//! The record cache: zones and nodes in front of the database.
//!
//! ```text
//!  find_zone(apex) ─► ZoneRegistry (positive / negative) ─miss─► store
//!  get_node(zone, name) ─► node LRU keyed (apex, ver, name), entry tagged
//!        with the zone generation ─ stale or missing ─► single flight ─► store
//!  Concurrent misses for one key wait for one database query.
//! ```

use super::sharded::{ShardedLru, Weigh};
use super::zones::{Known, ZoneRegistry};
use super::Counters;
use crate::backend::Backend;
use backend_mongo::{Name, Node, StoreError, ZoneInfo};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::OnceCell;

type NodeKey = (Name, i64, Name);

struct NodeEntry {
    node: Option<Arc<Node>>,
    gen: i64,
    expires: Instant,
}

impl Weigh for NodeEntry {
    fn weight(&self) -> usize {
        let data = self.node.as_ref().map_or(0, |n| {
            n.rrsets
                .iter()
                .map(|r| 48 + r.rdata.iter().map(|d| d.len() + 24).sum::<usize>())
                .sum::<usize>()
                + n.name.wire_len()
        });
        160 + data
    }
}

/// Concurrent requests for one key share one database query.
struct SingleFlight<K, V> {
    flights: Mutex<HashMap<K, Arc<OnceCell<V>>>>,
}

impl<K: std::hash::Hash + Eq + Clone, V: Clone> SingleFlight<K, V> {
    fn new() -> Self {
        SingleFlight {
            flights: Mutex::new(HashMap::new()),
        }
    }

    /// Runs `fetch` for `key` unless a run is in flight, whose result is
    /// shared instead. A failed run is not shared: the next waiter retries.
    async fn run<E, F, Fut>(&self, key: &K, fetch: F) -> Result<V, E>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<V, E>>,
    {
        let cell = {
            let mut flights = self.flights.lock().unwrap_or_else(|p| p.into_inner());
            flights.entry(key.clone()).or_default().clone()
        };
        let result = cell.get_or_try_init(fetch).await.cloned();
        let mut flights = self.flights.lock().unwrap_or_else(|p| p.into_inner());
        if flights.get(key).is_some_and(|f| Arc::ptr_eq(f, &cell)) {
            flights.remove(key);
        }
        result
    }
}

/// Settings of the record cache.
#[derive(Clone, Debug)]
pub struct RecordCacheConfig {
    /// Most nodes held.
    pub max_entries: usize,
    /// Most bytes held (approximate).
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
        }
    }
}

/// A [`Backend`] that caches another one.
pub struct RecordCache<B> {
    inner: B,
    zones: Arc<ZoneRegistry>,
    nodes: ShardedLru<NodeKey, NodeEntry>,
    node_flights: SingleFlight<NodeKey, Option<Arc<Node>>>,
    zone_flights: SingleFlight<Name, Option<ZoneInfo>>,
    config: RecordCacheConfig,
    /// `config.max_ttl` and `config.negative_ttl` in ms, changeable (SIGHUP).
    ttl_caps_ms: [AtomicU64; 2],
    counters: Arc<Counters>,
}

impl<B: Backend> RecordCache<B> {
    /// Caches `inner`, with zone freshness from `zones`.
    pub fn new(
        inner: B,
        zones: Arc<ZoneRegistry>,
        config: RecordCacheConfig,
        counters: Arc<Counters>,
    ) -> Self {
        RecordCache {
            inner,
            zones,
            nodes: ShardedLru::new(64, config.max_entries, config.max_bytes),
            node_flights: SingleFlight::new(),
            zone_flights: SingleFlight::new(),
            ttl_caps_ms: [
                AtomicU64::new(config.max_ttl.as_millis() as u64),
                AtomicU64::new(config.negative_ttl.as_millis() as u64),
            ],
            config,
            counters,
        }
    }

    /// The zone registry.
    pub fn zones(&self) -> &Arc<ZoneRegistry> {
        &self.zones
    }

    /// Nodes held.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// True when no node is held.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Nodes evicted to stay within bounds.
    pub fn evictions(&self) -> u64 {
        self.nodes.evictions()
    }

    /// Drops cached nodes named `name` (in any zone); returns how many.
    pub fn purge_name(&self, name: &Name) -> usize {
        self.nodes.retain(|k, _| k.2 != *name)
    }

    /// Drops everything.
    pub fn purge_all(&self) -> usize {
        self.zones.purge_all();
        self.nodes.retain(|_, _| false)
    }

    /// Changes the TTL caps for nodes stored from now on.
    pub fn set_ttl_caps(&self, max_ttl: Duration, negative_ttl: Duration) {
        self.ttl_caps_ms[0].store(max_ttl.as_millis() as u64, Ordering::Relaxed);
        self.ttl_caps_ms[1].store(negative_ttl.as_millis() as u64, Ordering::Relaxed);
    }

    fn ttl_of(&self, node: &Option<Arc<Node>>) -> Duration {
        let max_ttl = Duration::from_millis(self.ttl_caps_ms[0].load(Ordering::Relaxed));
        match node {
            Some(n) => {
                let min = n.rrsets.iter().map(|r| r.ttl).min().unwrap_or(u32::MAX);
                Duration::from_secs(u64::from(min)).min(max_ttl)
            }
            None => Duration::from_millis(self.ttl_caps_ms[1].load(Ordering::Relaxed)).min(max_ttl),
        }
    }

    async fn fetch_node(
        &self,
        zone: &ZoneInfo,
        name: &Name,
    ) -> Result<Option<Arc<Node>>, StoreError> {
        let started = Instant::now();
        self.counters.db_inflight.fetch_add(1, Ordering::Relaxed);
        let result = self.inner.get_node(zone, name).await;
        self.counters.db_inflight.fetch_sub(1, Ordering::Relaxed);
        self.counters.record_db(started.elapsed(), result.is_ok());
        result
    }
}

impl<B: Backend> Backend for RecordCache<B> {
    async fn find_zone(&self, apex: &Name) -> Result<Option<ZoneInfo>, StoreError> {
        match self.zones.lookup(apex) {
            Known::Zone(info) => {
                self.counters.zone_hits.fetch_add(1, Ordering::Relaxed);
                return Ok(Some(info));
            }
            Known::NotAZone => {
                self.counters.zone_hits.fetch_add(1, Ordering::Relaxed);
                return Ok(None);
            }
            Known::Unknown => {}
        }
        self.counters.zone_misses.fetch_add(1, Ordering::Relaxed);
        let found = self
            .zone_flights
            .run(apex, || async {
                let epoch = self.zones.zones_epoch();
                let started = Instant::now();
                let found = self.inner.find_zone(apex).await;
                self.counters.record_db(started.elapsed(), found.is_ok());
                let found = found?;
                self.zones.learn(apex, found.as_ref(), epoch);
                Ok::<_, StoreError>(found)
            })
            .await?;
        // Serve the registry's view: it may carry a purge generation.
        Ok(found.map(|info| self.zones.state(apex).map_or(info, |s| s.info())))
    }

    async fn get_node(
        &self,
        zone: &ZoneInfo,
        name: &Name,
    ) -> Result<Option<Arc<Node>>, StoreError> {
        if !self.config.enabled && *name != zone.apex {
            self.counters.record_misses.fetch_add(1, Ordering::Relaxed);
            return self.fetch_node(zone, name).await;
        }
        let key: NodeKey = (zone.apex.clone(), zone.ver, name.clone());
        let now = Instant::now();
        let cached = self.nodes.with(&key, |e| {
            (e.gen == zone.gen && e.expires > now).then(|| e.node.clone())
        });
        if let Some(Some(node)) = cached {
            self.counters.record_hits.fetch_add(1, Ordering::Relaxed);
            return Ok(node);
        }
        self.counters.record_misses.fetch_add(1, Ordering::Relaxed);
        // One database query per key at a time; others wait for its result.
        let fetched = self
            .node_flights
            .run(&key, || async {
                let node = self.fetch_node(zone, name).await?;
                let expires = Instant::now() + self.ttl_of(&node);
                self.nodes.insert(
                    key.clone(),
                    NodeEntry {
                        node: node.clone(),
                        gen: zone.gen,
                        expires,
                    },
                );
                Ok::<_, StoreError>(node)
            })
            .await;
        match fetched {
            Err(fault) if !self.config.serve_stale.is_zero() => {
                // The database failed: an expired node of the current
                // generation, within the window, is better than nothing.
                let now = Instant::now();
                let window = self.config.serve_stale;
                let stale = self.nodes.with(&key, |e| {
                    (e.gen == zone.gen && e.expires + window > now).then(|| e.node.clone())
                });
                match stale {
                    Some(Some(node)) => {
                        self.counters.stale_nodes.fetch_add(1, Ordering::Relaxed);
                        Ok(node)
                    }
                    _ => Err(fault),
                }
            }
            other => other,
        }
    }

    async fn zone_nodes(&self, zone: &ZoneInfo) -> Result<Vec<Node>, StoreError> {
        // Whole-zone reads (AXFR) always come from the database.
        let started = Instant::now();
        let result = self.inner.zone_nodes(zone).await;
        self.counters.record_db(started.elapsed(), result.is_ok());
        result
    }

    async fn denial(
        &self,
        zone: &ZoneInfo,
        key: &str,
        wrap: bool,
    ) -> Result<Option<Arc<Node>>, StoreError> {
        // DNSSEC denial lookups (DO=1 negative answers) go to the database:
        // keys are mostly unique per query name, and the packet cache holds
        // the finished replies.
        let started = Instant::now();
        let result = self.inner.denial(zone, key, wrap).await;
        self.counters.record_db(started.elapsed(), result.is_ok());
        result
    }
}
