//! The narrow interface between the answer pipeline and storage.
//!
//! ```text
//!  pipeline ──Backend::{find_zone, zones_among, get_node, zone_nodes,
//!            denial}──► Store (MongoDB)
//!            (through cache::RecordCache, which caches all but zone_nodes)
//!  cached_node, known_zone: what the cache knows already, never a read
//!            (the name walk, the zone lookup)
//!  answer_view: the zone as a question is answered from (resident zones:
//!            a copy a little behind, within its lag), never a read
//!  plain_answer: the one RRset (or NODATA) a plain question needs, read
//!            in place from memory (resident zones); never a read
//!  transfers ──Backend::{settle_for_transfer, zone_stream, version_deleting,
//!            journal_chain}──► Store directly (defaults for other backends:
//!            no wait, zone_nodes, never deleting, no journal)
//! ```
//!
//! Four questions are all the answer path ever asks of storage, two more
//! the zone transfers; anything else a store can do stays behind this line.

use backend_mongo::transfer::NodeStream;
use backend_mongo::Store;
/// A backend's fault: a read that failed (the storage layer's error, the
/// one type of it the answer path sees).
pub use backend_mongo::StoreError;

/// What a node read gives: the node (shared), none, or a storage fault.
pub type NodeRead = Result<Option<Arc<Node>>, StoreError>;
use dns::{Name, Node, RType, ZoneInfo};
use futures::future::try_join_all;
use futures::StreamExt;
use std::future::Future;
use std::sync::Arc;

/// What the answer pipeline needs from storage.
pub trait Backend: Send + Sync + 'static {
    /// The zone whose apex is exactly `apex`, if served.
    fn find_zone(
        &self,
        apex: &Name,
    ) -> impl Future<Output = Result<Option<ZoneInfo>, StoreError>> + Send;
    /// The served zones among the candidate apexes `apexes`, in one read
    /// where the store can (the default asks for each, all at once).
    fn zones_among(
        &self,
        apexes: &[Name],
    ) -> impl Future<Output = Result<Vec<ZoneInfo>, StoreError>> + Send {
        async move {
            let found = try_join_all(apexes.iter().map(|a| self.find_zone(a))).await?;
            Ok(found.into_iter().flatten().collect())
        }
    }
    /// The served zone with the longest apex enclosing `qname`, after
    /// [`Backend::known_zone`] did not know it: a cache in front of
    /// storage reads only what it does not know (the default reads every
    /// candidate, through [`Backend::zones_among`]).
    fn enclosing_zone(
        &self,
        qname: &Name,
    ) -> impl Future<Output = Result<Option<ZoneInfo>, StoreError>> + Send {
        async move {
            let candidates: Vec<Name> = qname.ancestors().collect();
            Ok(deepest(self.zones_among(&candidates).await?))
        }
    }
    /// The node `name` of `zone`, if it exists.
    fn get_node(&self, zone: &ZoneInfo, name: &Name) -> impl Future<Output = NodeRead> + Send;
    /// Every node of `zone`, in canonical order, from one consistent version.
    fn zone_nodes(
        &self,
        zone: &ZoneInfo,
    ) -> impl Future<Output = Result<Vec<Node>, StoreError>> + Send;
    /// What a cache in front of storage already knows of the node `name`
    /// of `zone`, without a read (always [`CachedNode::Unknown`] for a
    /// backend without a cache). Lets the name walk skip what is known.
    fn cached_node(&self, _zone: &ZoneInfo, _name: &Name) -> CachedNode {
        CachedNode::Unknown
    }
    /// Hands `f` what memory holds for `qtype` at `name` in `zone`, read in
    /// place, when one RRset (the name's or a wildcard's), a NODATA or an
    /// NXDOMAIN answers it and the name walk meets no cut, DNAME or CNAME
    /// (not for ANY, RRSIG or DS): `None` when that is not known without
    /// the general stages. Never a read; the default knows nothing.
    fn plain_answer<R>(
        &self,
        _zone: &ZoneInfo,
        _name: &Name,
        _qtype: RType,
        _f: impl FnOnce(PlainAnswer<'_>) -> R,
    ) -> Option<R> {
        None
    }
    /// True when [`Backend::plain_answer`] may answer anything at all: the
    /// receive loop parses a question for it only then. The default: never.
    fn answers_plain(&self) -> bool {
        false
    }
    /// What a cache in front of storage already knows of the deepest
    /// served zone enclosing `qname`, without a read: `Some(None)` when it
    /// knows no ancestor is a zone, `None` when a candidate is not known
    /// (then [`Backend::find_zone`] is asked of each). The default knows
    /// nothing.
    fn known_zone(&self, _qname: &Name) -> Option<Option<ZoneInfo>> {
        None
    }
    /// The zone a question is answered from: `zone` itself (the default),
    /// or a view of an older generation or version that a layer in front
    /// of storage holds whole and may still answer from (resident zones
    /// within `--resident-lag-ms`). Replies from such a view are not kept
    /// in the packet cache (their generation is past). Zone transfers
    /// never ask.
    fn answer_view(&self, zone: ZoneInfo) -> ZoneInfo {
        zone
    }
    /// DNSSEC denial: the node owning the NSEC (key = canonical key `ck`)
    /// or NSEC3 (key = base32hex hash) record that matches or covers `key`,
    /// i.e. the greatest denial key not above it; with `wrap`, the greatest
    /// of all when there is none (see `backend_mongo::dnssec`).
    fn denial(
        &self,
        zone: &ZoneInfo,
        key: &str,
        wrap: bool,
    ) -> impl Future<Output = NodeRead> + Send;

    /// Every node of `zone` in canonical order, one at a time as storage
    /// delivers them (zone transfers). The default reads them all first.
    fn zone_stream(
        &self,
        zone: &ZoneInfo,
    ) -> impl Future<Output = Result<NodeStream, StoreError>> + Send {
        async move {
            let nodes = self.zone_nodes(zone).await?;
            Ok(futures::stream::iter(nodes.into_iter().map(Ok)).boxed())
        }
    }

    /// The journal entries that take `zone` (as served now) from serial
    /// `theirs` to its content now, oldest first, one at a time as
    /// storage delivers them; `None` when the journal
    /// does not reach back that far (IXFR then sends the whole zone). The
    /// default: no journal.
    fn journal_chain(
        &self,
        zone: &ZoneInfo,
        theirs: u32,
    ) -> impl Future<Output = Result<JournalChain, StoreError>> + Send {
        let _ = (zone, theirs);
        async { Ok(None) }
    }

    /// Before a zone transfer of `apex`: waits, boundedly, while a layer in
    /// front of storage is about to hold the version served whole (a
    /// resident copy being loaded), so the transfer is sent from memory
    /// rather than read from the database. The default: at once.
    fn settle_for_transfer(&self, apex: &Name) -> impl Future<Output = ()> + Send {
        let _ = apex;
        async {}
    }

    /// True when the version of `zone` began to be deleted (or the zone is
    /// gone): a transfer that read it may have missed nodes. The default:
    /// never.
    fn version_deleting(
        &self,
        zone: &ZoneInfo,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        let _ = zone;
        async { Ok(false) }
    }
}

/// The zone with the longest apex of `zones` (all enclosing one name).
pub fn deepest(zones: impl IntoIterator<Item = ZoneInfo>) -> Option<ZoneInfo> {
    zones.into_iter().max_by_key(|z| z.apex.label_count())
}

/// The journal's changes that take a zone from one serial to now (IXFR),
/// oldest first, streamed from the database.
pub type JournalChain = Option<backend_mongo::writer::JournalStream>;

/// What a plain question finds (see [`Backend::plain_answer`]).
#[derive(Clone, Copy, Debug)]
pub enum PlainAnswer<'a> {
    /// The name (or the wildcard standing for it) holds the type asked:
    /// this RRset, owned by the name asked, is the answer.
    Records(RecordsView<'a>),
    /// The name exists without the type: the zone's SOA, as stored, for
    /// the authority section.
    NoData(RecordsView<'a>),
    /// Neither the name nor a wildcard for it exists: the zone's SOA, as
    /// stored, for the authority section.
    NxDomain(RecordsView<'a>),
}

/// One RRset read in place from its encoding.
#[derive(Clone, Copy, Debug)]
pub struct RecordsView<'a> {
    /// Its type.
    pub rtype: RType,
    /// Its TTL.
    pub ttl: u32,
    /// How many rdata items it has.
    pub count: u16,
    /// The rdata items, each as `len u16 · rdata`.
    run: &'a [u8],
}

impl<'a> RecordsView<'a> {
    /// A view of `count` rdata items held in `run` as `len u16 · rdata`.
    pub fn new(rtype: RType, ttl: u32, count: u16, run: &'a [u8]) -> Self {
        RecordsView {
            rtype,
            ttl,
            count,
            run,
        }
    }

    /// Each rdata item, in stored order.
    pub fn rdata(&self) -> impl Iterator<Item = &'a [u8]> + Clone {
        let mut run = self.run;
        std::iter::from_fn(move || {
            let (len, rest) = run.split_first_chunk::<2>()?;
            let (rd, rest) = rest.split_at(usize::from(u16::from_be_bytes(*len)));
            run = rest;
            Some(rd)
        })
    }
}

/// What a cache knows of one node, without a read.
#[derive(Clone, Debug)]
pub enum CachedNode {
    /// Known and fresh: the node, or `None` when it does not exist.
    Fresh(Option<Arc<Node>>),
    /// Expired, but it existed when it was last read: worth reading
    /// together with the levels above it.
    Expired,
    /// Nothing known.
    Unknown,
}

impl Backend for Store {
    async fn find_zone(&self, apex: &Name) -> Result<Option<ZoneInfo>, StoreError> {
        Store::find_zone(self, apex).await
    }

    async fn zones_among(&self, apexes: &[Name]) -> Result<Vec<ZoneInfo>, StoreError> {
        self.served_zones_among(apexes).await
    }

    async fn get_node(&self, zone: &ZoneInfo, name: &Name) -> NodeRead {
        Ok(Store::get_node(self, zone, name).await?.map(Arc::new))
    }

    async fn zone_nodes(&self, zone: &ZoneInfo) -> Result<Vec<Node>, StoreError> {
        Store::zone_nodes(self, zone).await
    }

    async fn zone_stream(&self, zone: &ZoneInfo) -> Result<NodeStream, StoreError> {
        self.zone_cursor(zone).await
    }

    async fn version_deleting(&self, zone: &ZoneInfo) -> Result<bool, StoreError> {
        Store::version_deleting(self, zone).await
    }

    async fn journal_chain(
        &self,
        zone: &ZoneInfo,
        theirs: u32,
    ) -> Result<JournalChain, StoreError> {
        Store::journal_chain(self, zone, theirs).await
    }

    async fn denial(&self, zone: &ZoneInfo, key: &str, wrap: bool) -> NodeRead {
        Ok(Store::denial(self, zone, key, wrap).await?.map(Arc::new))
    }
}
