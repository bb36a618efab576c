//! Resident zones: whole zones held in memory, answering without a
//! database read (`--resident-mb`, `docs/caches.md`).
//!
//! ```text
//!  pipeline ─answer_view─► the zone, or its copy's own generation while
//!           the copy is behind by at most --resident-lag-ms
//!  pipeline ─Backend─► ResidentZones ── copy holds that gen? ──yes──► ZoneCopy
//!                          │                                  (get_node, cached_node,
//!                          │ no (not wanted, loading, too       denial, zone_stream:
//!                          │                                    memory only)
//!                          │ large, behind past its lag)
//!                          ▼
//!                      RecordCache ─► Store              (today's path, for the zone
//!                                                          as the registry serves it)
//!  Residency (keeper.rs): loads wanted zones by one streaming read of their
//!     version, applies merge generations name by name, reloads new versions;
//!     a load yields to the answer path's queued database reads (pacing.rs)
//!  ResidentZones::plain_answer: a question one RRset or a NODATA answers,
//!     read in place from the copy's bytes (plain.rs), for the pipeline's
//!     one-step answers (pipeline/direct.rs)
//!  ZoneCopy / ZoneData (copy.rs): one version's nodes and denial chain, held
//!     as wire bytes in a NodeArena with a NameIndex (arena.rs, node_codec.rs);
//!     while it reads merged names again, other names' point lookups are
//!     still answered from it (pending.rs); a transfer gets a snapshot of
//!     every node (snapshot.rs)
//!  a transfer of a zone whose copy is being loaded waits for it, at most
//!     transfer_wait, then reads the copy (transfer_wait.rs)
//!  ResidentConfig, Residence, ZoneReport (status.rs): settings and state
//!  ResidencySummary (summary.rs): totals, and the largest zones on their
//!     own, for /metrics and /health
//! ```
//!
//! Off (`--resident-mb 0`, the default) nothing is held and every call goes
//! straight to the record cache. find_zone, zone_nodes, the journal and
//! the check that a transferred version was not being deleted always do.

mod arena;
mod copy;
mod keeper;
mod node_codec;
mod pacing;
mod pending;
mod plain;
mod snapshot;
mod status;
mod summary;
mod transfer_wait;

pub use copy::{ZoneCopy, ZoneData};
pub use keeper::{CopyFor, Residency, ResidentCounters};
pub use pacing::{Busy, LoadPacing};
pub use status::{Residence, ResidentConfig, ZoneChoice, ZoneReport};
pub use summary::{ResidencySummary, ZoneFigures};

use crate::backend::StoreError;
use crate::backend::{Backend, CachedNode, JournalChain, PlainAnswer};
use backend_mongo::transfer::NodeStream;
use dns::{Name, Node, RType, ZoneInfo};
use std::borrow::Cow;
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

    /// Where a lookup in `zone` goes: the copy answering it, or today's
    /// path for the zone as asked, or as the registry serves it now when a
    /// copy of another generation was asked for (a view that fell behind
    /// its lag, or was replaced, in the middle of a question).
    /// A point lookup of `name` also goes to a copy catching up by merges
    /// that did not list it (`None`: a denial lookup, never).
    fn route<'z>(&self, zone: &'z ZoneInfo, name: Option<&Name>) -> Route<'z> {
        if !self.enabled {
            return Route::Inner(Cow::Borrowed(zone));
        }
        match self.residency.current(zone, name) {
            CopyFor::Serves(copy) => {
                let counters = &self.residency.counters;
                counters.lookups.fetch_add(1, Ordering::Relaxed);
                Route::Copy(copy)
            }
            // Only a view (lag above 0) can name a generation the registry
            // no longer serves; with no lag the zone is passed on as asked.
            CopyFor::Other if self.residency.config().max_lag.is_zero() => {
                Route::Inner(Cow::Borrowed(zone))
            }
            CopyFor::Other => match self.residency.served(&zone.apex) {
                Some(now) if now.ver != zone.ver || now.gen != zone.gen => {
                    Route::Inner(Cow::Owned(now))
                }
                _ => Route::Inner(Cow::Borrowed(zone)),
            },
            CopyFor::None => Route::Inner(Cow::Borrowed(zone)),
        }
    }
}

/// Where one lookup goes.
enum Route<'z> {
    /// The resident copy.
    Copy(Arc<ZoneCopy>),
    /// Today's path (the record cache), for this zone.
    Inner(Cow<'z, ZoneInfo>),
}

impl<B: Backend> Backend for ResidentZones<B> {
    async fn find_zone(&self, apex: &Name) -> Result<Option<ZoneInfo>, StoreError> {
        self.inner.find_zone(apex).await
    }

    async fn zones_among(&self, apexes: &[Name]) -> Result<Vec<ZoneInfo>, StoreError> {
        self.inner.zones_among(apexes).await
    }

    async fn enclosing_zone(&self, qname: &Name) -> Result<Option<ZoneInfo>, StoreError> {
        self.inner.enclosing_zone(qname).await
    }

    async fn get_node(
        &self,
        zone: &ZoneInfo,
        name: &Name,
    ) -> Result<Option<Arc<Node>>, StoreError> {
        match self.route(zone, Some(name)) {
            Route::Copy(copy) => Ok(copy.read().node(name)),
            // Boxed: the path to the database is a large future, and
            // every level of a name walk would carry its size.
            Route::Inner(zone) => Box::pin(self.inner.get_node(&zone, name)).await,
        }
    }

    fn answers_plain(&self) -> bool {
        self.enabled
    }

    fn plain_answer<R>(
        &self,
        zone: &ZoneInfo,
        name: &Name,
        qtype: RType,
        f: impl FnOnce(PlainAnswer<'_>) -> R,
    ) -> Option<R> {
        if !self.enabled {
            return None;
        }
        let copy = self.residency.serving(zone)?;
        let data = copy.read();
        // Under the read lock the generation and the data agree.
        if !copy.serves(zone) {
            return None;
        }
        let plain = data.plain(&zone.apex, name, qtype)?;
        let counters = &self.residency.counters;
        counters.plain_answers.fetch_add(1, Ordering::Relaxed);
        Some(f(plain))
    }

    fn known_zone(&self, qname: &Name) -> Option<Option<ZoneInfo>> {
        self.inner.known_zone(qname)
    }

    fn answer_view(&self, zone: ZoneInfo) -> ZoneInfo {
        if !self.enabled {
            return zone;
        }
        self.residency.answer_view(zone)
    }

    async fn zone_nodes(&self, zone: &ZoneInfo) -> Result<Vec<Node>, StoreError> {
        self.inner.zone_nodes(zone).await
    }

    fn cached_node(&self, zone: &ZoneInfo, name: &Name) -> CachedNode {
        match self.route(zone, Some(name)) {
            Route::Copy(copy) => CachedNode::Fresh(copy.read().node(name)),
            Route::Inner(zone) => self.inner.cached_node(&zone, name),
        }
    }

    async fn denial(
        &self,
        zone: &ZoneInfo,
        key: &str,
        wrap: bool,
    ) -> Result<Option<Arc<Node>>, StoreError> {
        match self.route(zone, None) {
            Route::Copy(copy) => Ok(copy.read().denial(key, wrap)),
            Route::Inner(zone) => Box::pin(self.inner.denial(&zone, key, wrap)).await,
        }
    }

    async fn settle_for_transfer(&self, apex: &Name) {
        if self.enabled {
            self.residency.wait_for_load(apex).await;
        }
    }

    async fn zone_stream(&self, zone: &ZoneInfo) -> Result<NodeStream, StoreError> {
        let zone = match self.route(zone, None) {
            Route::Copy(copy) => {
                // Under the read lock the copy's generation and data agree
                // (a merge sets both under the write lock): the snapshot is
                // of `zone`'s generation, whose SOA the transfer has read;
                // if a merge came between, the database is read as asked.
                let data = copy.read();
                if copy.serves(zone) {
                    let snapshot = data.snapshot();
                    drop(data);
                    let counters = &self.residency.counters;
                    counters.transfers.fetch_add(1, Ordering::Relaxed);
                    return Ok(snapshot.into_stream());
                }
                Cow::Borrowed(zone)
            }
            Route::Inner(zone) => zone,
        };
        self.inner.zone_stream(&zone).await
    }

    async fn version_deleting(&self, zone: &ZoneInfo) -> Result<bool, StoreError> {
        self.inner.version_deleting(zone).await
    }

    async fn journal_chain(
        &self,
        zone: &ZoneInfo,
        theirs: u32,
    ) -> Result<JournalChain, StoreError> {
        self.inner.journal_chain(zone, theirs).await
    }
}
