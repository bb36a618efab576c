//! What the record cache's detached reads share, and the reads themselves.
//!
//! ```text
//!  Shared { nodes: LRU (apex, ver, name) ─► NodeEntry { node, epoch, expires },
//!           denials: DenialCache, gate: DbGate, TTL caps, counters }
//!  fetch_node / fetch_denial / gated ─► DbGate slot ─► inner backend ─► counted
//!  purge_names (a logged change) ─► the named nodes and the zone's denial
//!     records dropped; name_purges += 1 (reads in flight are not kept)
//!  purge_other_versions (a new version served) ─► every older version's nodes
//! ```
//!
//! A read runs as a task of its own and holds this, not the cache: it
//! fills the cache even when its askers gave up.

use super::super::denial::DenialCache;
use super::super::gate::DbGate;
use super::super::sharded::{ShardedLru, Weigh};
use super::super::Counters;
use crate::backend::Backend;
use crate::backend::{NodeRead, StoreError};
use dns::{Name, Node, ZoneInfo};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A cached node: zone apex, version, owner name.
pub(super) type NodeKey = (Name, i64, Name);
/// A denial lookup: zone apex, version, denial key, wrap.
pub(super) type DenialKey = (Name, i64, String, bool);
/// A zone version: apex, version.
pub(super) type ZoneVer = (Name, i64);

/// One cached node (or known absence).
pub(super) struct NodeEntry {
    pub(super) node: Option<Arc<Node>>,
    /// The zone's node epoch when the read began (see `ZoneState`).
    pub(super) epoch: u64,
    pub(super) expires: Instant,
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

/// What the detached database reads of a [`RecordCache`] need.
pub(super) struct Shared<B> {
    pub(super) inner: B,
    pub(super) nodes: ShardedLru<NodeKey, NodeEntry>,
    /// NSEC/NSEC3 records as intervals (an eighth of the record budget).
    pub(super) denials: DenialCache,
    pub(super) gate: DbGate,
    /// `max_ttl` and `negative_ttl` in ms, changeable (SIGHUP).
    pub(super) ttl_caps_ms: [AtomicU64; 2],
    pub(super) counters: Arc<Counters>,
    /// Moves whenever named nodes are dropped: a read that began before
    /// may have seen the old data, so it is not kept.
    pub(super) name_purges: AtomicU64,
}

impl<B: Backend> Shared<B> {
    /// Drops the nodes `names` of one zone version (a logged change).
    pub(super) fn purge_names(&self, apex: &Name, ver: i64, names: &[Name]) {
        let mut key: NodeKey = (apex.clone(), ver, Name::root());
        for name in names {
            key.2 = name.clone();
            self.nodes.remove(&key);
        }
        self.name_purges.fetch_add(1, Ordering::AcqRel);
        // Which NSEC/NSEC3 intervals moved the names do not say: all go.
        self.denials.void_zone(apex);
    }

    /// Drops the nodes of every version of `apex` but `ver`, the one now
    /// served; returns how many. Without this, each new version (every
    /// `--replace` import, every `secure-zone`) would leave the old one's
    /// nodes in the cache until evicted: memory would grow to the cache's
    /// bound. A read of the old version in flight is not kept either.
    pub(super) fn purge_other_versions(&self, apex: &Name, ver: i64) -> usize {
        self.name_purges.fetch_add(1, Ordering::AcqRel);
        let dropped = self.nodes.retain(|k, _| k.0 != *apex || k.1 == ver);
        self.counters
            .version_drops
            .fetch_add(dropped as u64, Ordering::Relaxed);
        dropped
    }

    pub(super) fn ttl_of(&self, node: &Option<Arc<Node>>) -> Duration {
        let max_ttl = Duration::from_millis(self.ttl_caps_ms[0].load(Ordering::Relaxed));
        match node {
            Some(n) => {
                let min = n.rrsets.iter().map(|r| r.ttl).min().unwrap_or(u32::MAX);
                Duration::from_secs(u64::from(min)).min(max_ttl)
            }
            None => Duration::from_millis(self.ttl_caps_ms[1].load(Ordering::Relaxed)).min(max_ttl),
        }
    }

    /// One database read of a node, through the gate, counted.
    pub(super) async fn fetch_node(&self, zone: &ZoneInfo, name: &Name) -> NodeRead {
        let _slot = self.gate.enter(&self.counters).await?;
        let started = Instant::now();
        self.counters.db_inflight.fetch_add(1, Ordering::Relaxed);
        let result = self.inner.get_node(zone, name).await;
        self.counters.db_inflight.fetch_sub(1, Ordering::Relaxed);
        self.counters.record_db(started.elapsed(), result.is_ok());
        result
    }

    /// One read through the gate, counted (zone lookups, uncached reads).
    pub(super) async fn gated<T>(
        &self,
        read: impl std::future::Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        let _slot = self.gate.enter(&self.counters).await?;
        let started = Instant::now();
        let result = read.await;
        self.counters.record_db(started.elapsed(), result.is_ok());
        result
    }

    /// One denial read, through the gate, counted.
    pub(super) async fn fetch_denial(&self, zone: &ZoneInfo, key: &str, wrap: bool) -> NodeRead {
        let _slot = self.gate.enter(&self.counters).await?;
        let started = Instant::now();
        self.counters.db_inflight.fetch_add(1, Ordering::Relaxed);
        let result = self.inner.denial(zone, key, wrap).await;
        self.counters.db_inflight.fetch_sub(1, Ordering::Relaxed);
        self.counters.record_db(started.elapsed(), result.is_ok());
        result
    }
}
