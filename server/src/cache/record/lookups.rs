//! The record cache as a [`Backend`]: each lookup a hit, or one read.
//!
//! ```text
//!  known_zone / find_zone / enclosing_zone ─► ZoneRegistry ─unknown─►
//!        one gated read (single flight) ─► learned by the registry
//!  get_node / cached_node ─► node LRU, entry of the zone's node epoch
//!        ─ stale or missing ─► single flight ─► Shared::fetch_node ─► kept
//!        (unless names were purged meanwhile); a fault ─► serve-stale
//!  denial ─► DenialCache interval ─ not covered ─► wait for the zone
//!        version's read in flight, else one read per key ─► kept
//!  zone_nodes ─► always the database (gated)
//! ```

use super::shared::{DenialKey, NodeEntry, NodeKey, ZoneVer};
use super::RecordCache;
use crate::backend::{deepest, Backend, CachedNode};
use crate::backend::{NodeRead, StoreError};
use crate::cache::denial::{At, Cached};
use crate::zones::Known;
use dns::{Name, Node, ZoneInfo};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

impl<B: Backend> Backend for RecordCache<B> {
    fn known_zone(&self, qname: &Name) -> Option<Option<ZoneInfo>> {
        let found = self.zones.deepest_known(qname);
        if found.is_some() {
            let counters = &self.shared.counters;
            counters.zone_hits.fetch_add(1, Ordering::Relaxed);
        }
        found
    }

    async fn find_zone(&self, apex: &Name) -> Result<Option<ZoneInfo>, StoreError> {
        let counters = &self.shared.counters;
        match self.zones.lookup(apex) {
            Known::Zone(info) => {
                counters.zone_hits.fetch_add(1, Ordering::Relaxed);
                return Ok(Some(info));
            }
            Known::NotAZone => {
                counters.zone_hits.fetch_add(1, Ordering::Relaxed);
                return Ok(None);
            }
            Known::Unknown => {}
        }
        counters.zone_misses.fetch_add(1, Ordering::Relaxed);
        let (shared, zones, key) = (self.shared.clone(), self.zones.clone(), apex.clone());
        let read = async move {
            let epoch = zones.zones_epoch();
            let found = shared.gated(shared.inner.find_zone(&key)).await?;
            zones.learn(&key, found.as_ref(), epoch);
            Ok(found)
        };
        let found = self.zone_flights.run(apex, read).await?;
        // Serve the registry's view: it may carry a purge generation.
        Ok(found.map(|info| self.zones.state(apex).map_or(info, |s| s.info())))
    }

    async fn enclosing_zone(&self, qname: &Name) -> Result<Option<ZoneInfo>, StoreError> {
        let counters = &self.shared.counters;
        let (unknown, known) = self.zones.unknown_candidates(qname);
        if unknown.is_empty() {
            counters.zone_hits.fetch_add(1, Ordering::Relaxed);
            return Ok(known);
        }
        counters.zone_misses.fetch_add(1, Ordering::Relaxed);
        let (shared, zones) = (self.shared.clone(), self.zones.clone());
        let read = async move {
            let epoch = zones.zones_epoch();
            let found = shared.gated(shared.inner.zones_among(&unknown)).await?;
            // Every candidate read is remembered, "not a zone" too: names
            // sharing a suffix then read only the labels they add.
            for apex in &unknown {
                zones.learn(apex, found.iter().find(|z| z.apex == *apex), epoch);
            }
            Ok(deepest(found))
        };
        let found = self.enclosing_flights.run(qname, read).await?;
        // A flight another asker began may have read other candidates:
        // the deeper zone of the two is the one enclosing the name.
        let zone = deepest(found.into_iter().chain(known));
        // Serve the registry's view: it may carry a purge generation.
        Ok(zone.map(|info| self.zones.state(&info.apex).map_or(info, |s| s.info())))
    }

    async fn get_node(&self, zone: &ZoneInfo, name: &Name) -> NodeRead {
        let counters = &self.shared.counters;
        if !self.config.enabled && *name != zone.apex {
            counters.record_misses.fetch_add(1, Ordering::Relaxed);
            return self.shared.fetch_node(zone, name).await;
        }
        let key: NodeKey = (zone.apex.clone(), zone.ver, name.clone());
        // The zone's node epoch; an untracked zone (purged meanwhile) is
        // read but not kept.
        let epoch = self.zones.node_epoch(&zone.apex);
        if let Some(node) = self.fresh(&key, epoch) {
            counters.record_hits.fetch_add(1, Ordering::Relaxed);
            return Ok(node);
        }
        counters.record_misses.fetch_add(1, Ordering::Relaxed);
        // One database read per key at a time, finishing even if we stop
        // waiting; others wait for its result.
        let (shared, zone_c, name_c, key_c) =
            (self.shared.clone(), zone.clone(), name.clone(), key.clone());
        let read = async move {
            let purges = shared.name_purges.load(Ordering::Acquire);
            let node = shared.fetch_node(&zone_c, &name_c).await?;
            let unchanged = shared.name_purges.load(Ordering::Acquire) == purges;
            if let (Some(epoch), true) = (epoch, unchanged) {
                let entry = NodeEntry {
                    node: node.clone(),
                    epoch,
                    expires: Instant::now() + shared.ttl_of(&node),
                };
                shared.nodes.insert(key_c, entry);
            }
            Ok(node)
        };
        let fetched = self.node_flights.run(&key, read).await;
        match fetched {
            Err(fault) if !self.config.serve_stale.is_zero() => {
                // The database failed: an expired node of the current
                // epoch, within the window, is better than nothing.
                let now = Instant::now();
                let window = self.config.serve_stale;
                let stale = epoch.and_then(|epoch| {
                    self.shared.nodes.with(&key, |e| {
                        (e.epoch == epoch && e.expires + window > now).then(|| e.node.clone())
                    })
                });
                match stale {
                    Some(Some(node)) => {
                        counters.stale_nodes.fetch_add(1, Ordering::Relaxed);
                        Ok(node)
                    }
                    _ => Err(fault),
                }
            }
            other => other,
        }
    }

    fn cached_node(&self, zone: &ZoneInfo, name: &Name) -> CachedNode {
        if !self.config.enabled && *name != zone.apex {
            return CachedNode::Unknown;
        }
        let key: NodeKey = (zone.apex.clone(), zone.ver, name.clone());
        let epoch = self.zones.node_epoch(&zone.apex);
        let now = Instant::now();
        let known = self.shared.nodes.with(&key, |e| match e.node.clone() {
            _ if Some(e.epoch) != epoch => CachedNode::Unknown,
            node if e.expires > now => CachedNode::Fresh(node),
            Some(_) => CachedNode::Expired,
            None => CachedNode::Unknown,
        });
        let known = known.unwrap_or(CachedNode::Unknown);
        if matches!(known, CachedNode::Fresh(_)) {
            let counters = &self.shared.counters;
            counters.record_hits.fetch_add(1, Ordering::Relaxed);
        }
        known
    }

    async fn zone_nodes(&self, zone: &ZoneInfo) -> Result<Vec<Node>, StoreError> {
        // Whole-zone reads (AXFR) always come from the database.
        self.uncached(self.shared.inner.zone_nodes(zone)).await
    }

    async fn denial(&self, zone: &ZoneInfo, key: &str, wrap: bool) -> NodeRead {
        let counters = &self.shared.counters;
        if !self.config.enabled {
            counters.denial_misses.fetch_add(1, Ordering::Relaxed);
            return self.shared.fetch_denial(zone, key, wrap).await;
        }
        let denials = &self.shared.denials;
        // As for nodes: an untracked zone is read but not kept.
        let epoch = self.zones.node_epoch(&zone.apex);
        let cached = |grace| match epoch {
            Some(epoch) => {
                let at = At {
                    apex: &zone.apex,
                    ver: zone.ver,
                    epoch,
                };
                denials.lookup(at, key, wrap, Instant::now(), grace)
            }
            None => Cached::Miss,
        };
        if let Cached::Hit(node) = cached(Duration::ZERO) {
            counters.denial_hits.fetch_add(1, Ordering::Relaxed);
            return Ok(node);
        }
        counters.denial_misses.fetch_add(1, Ordering::Relaxed);
        let (shared, zone_c, key_c) = (self.shared.clone(), zone.clone(), key.to_string());
        let read = move || async move {
            let voids = shared.denials.voids();
            let node = shared.fetch_denial(&zone_c, &key_c, wrap).await?;
            if let (Some(epoch), Some(found)) = (epoch, &node) {
                let expires = Instant::now() + shared.ttl_of(&node);
                let at = At {
                    apex: &zone_c.apex,
                    ver: zone_c.ver,
                    epoch,
                };
                let found = found.clone();
                shared
                    .denials
                    .insert(at, voids, &key_c, wrap, found, expires);
            }
            Ok(node)
        };
        // While a read of this zone version is in flight, wait for it
        // rather than start another: its record often covers our key too
        // (one interval holds many names), and on a database that scans
        // for these reads, parallel scans after a zone change would only
        // slow each other past the query timeout. If it does not cover
        // our key, read our own (in parallel with others, one per key).
        let lead: ZoneVer = (zone.apex.clone(), zone.ver);
        let fetched = match self.denial_leads.lead_or_join(&lead, read.clone()()).await {
            (true, led) => led,
            (false, Err(fault)) => Err(fault),
            (false, Ok(_)) => match cached(Duration::ZERO) {
                Cached::Hit(node) => Ok(node),
                Cached::Miss => {
                    let flight: DenialKey = (zone.apex.clone(), zone.ver, key.to_string(), wrap);
                    self.denial_flights.run(&flight, read()).await
                }
            },
        };
        match fetched {
            Err(fault) if !self.config.serve_stale.is_zero() => {
                // As for nodes: an expired record of the current epoch,
                // within the window, rather than SERVFAIL.
                match cached(self.config.serve_stale) {
                    Cached::Hit(node) => {
                        counters.stale_nodes.fetch_add(1, Ordering::Relaxed);
                        Ok(node)
                    }
                    Cached::Miss => Err(fault),
                }
            }
            other => other,
        }
    }
}
