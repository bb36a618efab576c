//! Resident zones: whole zones held in memory, answering without a
//! database read (issue 18).
//!
//! ```text
//!  pipeline ─Backend─► ResidentZones ── zone's copy current? ──yes──► ZoneCopy
//!                          │                                  (get_node, cached_node,
//!                          │ no (not wanted, loading, too       denial: memory only)
//!                          │ large, changed and not caught up)
//!                          ▼
//!                      RecordCache ─► Store              (today's path, unchanged)
//!  Residency (keeper.rs): loads wanted zones by one streaming read of their
//!     version, applies merge generations name by name, reloads new versions
//!  ZoneCopy / ZoneData (copy.rs): one version's nodes and denial chain, held
//!     as wire bytes in a NodeArena with a NameIndex (arena.rs, node_codec.rs)
//!  ResidentConfig, Residence, ZoneReport (status.rs): settings and state
//! ```
//!
//! Off (`--resident-mb 0`, the default) nothing is held and every call goes
//! straight to the record cache. find_zone, zone_nodes and the transfer
//! reads always do.

mod arena;
mod copy;
mod keeper;
mod node_codec;
mod status;

pub use copy::{ZoneCopy, ZoneData};
pub use keeper::{Residency, ResidentCounters};
pub use status::{Residence, ResidentConfig, ZoneChoice, ZoneReport};

use crate::backend::{Backend, CachedNode};
use backend_mongo::transfer::NodeStream;
use backend_mongo::{Name, Node, StoreError, ZoneInfo};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// A [`Backend`] answering resident zones from memory and every other
/// question from `inner`.
pub struct ResidentZones<B> {
    inner: Arc<B>,
    residency: Arc<Residency>,
    enabled: bool,
}

impl<B: Backend> ResidentZones<B> {
    /// Resident zones of `residency` in front of `inner`.
    pub fn new(inner: Arc<B>, residency: Arc<Residency>) -> Self {
        let enabled = residency.config().enabled();
        ResidentZones {
            inner,
            residency,
            enabled,
        }
    }

    /// The backend behind (the record cache).
    pub fn inner(&self) -> &Arc<B> {
        &self.inner
    }

    /// The copy answering `zone` now, if any.
    fn copy(&self, zone: &ZoneInfo) -> Option<Arc<ZoneCopy>> {
        if !self.enabled {
            return None;
        }
        let copy = self.residency.current(zone)?;
        let counters = &self.residency.counters;
        counters.lookups.fetch_add(1, Ordering::Relaxed);
        Some(copy)
    }
}

impl<B: Backend> Backend for ResidentZones<B> {
    async fn find_zone(&self, apex: &Name) -> Result<Option<ZoneInfo>, StoreError> {
        self.inner.find_zone(apex).await
    }

    async fn get_node(
        &self,
        zone: &ZoneInfo,
        name: &Name,
    ) -> Result<Option<Arc<Node>>, StoreError> {
        match self.copy(zone) {
            Some(copy) => Ok(copy.read().node(name)),
            None => self.inner.get_node(zone, name).await,
        }
    }

    fn known_zone(&self, qname: &Name) -> Option<Option<ZoneInfo>> {
        self.inner.known_zone(qname)
    }

    async fn zone_nodes(&self, zone: &ZoneInfo) -> Result<Vec<Node>, StoreError> {
        self.inner.zone_nodes(zone).await
    }

    fn cached_node(&self, zone: &ZoneInfo, name: &Name) -> CachedNode {
        match self.copy(zone) {
            Some(copy) => CachedNode::Fresh(copy.read().node(name)),
            None => self.inner.cached_node(zone, name),
        }
    }

    async fn denial(
        &self,
        zone: &ZoneInfo,
        key: &str,
        wrap: bool,
    ) -> Result<Option<Arc<Node>>, StoreError> {
        match self.copy(zone) {
            Some(copy) => Ok(copy.read().denial(key, wrap)),
            None => self.inner.denial(zone, key, wrap).await,
        }
    }

    async fn zone_stream(&self, zone: &ZoneInfo) -> Result<NodeStream, StoreError> {
        self.inner.zone_stream(zone).await
    }

    async fn version_deleting(&self, zone: &ZoneInfo) -> Result<bool, StoreError> {
        self.inner.version_deleting(zone).await
    }
}
