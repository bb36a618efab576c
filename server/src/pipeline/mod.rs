//! The answer pipeline: bytes in, bytes out, in named stages.
//!
//! ```text
//!  handle_now (UDP, in the receive loop) ─► a plain question to a resident
//!     zone, answered in one step from its bytes (direct.rs) ─► packet cache
//!  respond ─► TSIG? signed.rs ─► packet cache hit? cached.rs
//!  parse_query ─► check_question (class, meta types)
//!     ─► zone_for_question (lookup.rs)
//!     ─► solve_answer     ─► dnssec::sign_answer     (DO=1)   answer.rs
//!     ─► solve_authority  ─► dnssec::prove_denial    (DO=1)   dnssec.rs
//!     ─► solve_additional ─► dnssec::sign_additional (DO=1)
//!     ─► render (render.rs) ─► packet cache (cached.rs)
//!  the walk's and the answer's rules, once for both paths: rules.rs
//!  AXFR/IXFR over TCP take their own path: crate::xfr (admit, transfer);
//!  IXFR over UDP too, from the cache miss (never cached) or the TSIG path
//!  (xfr's admit checks the TSIG with the client's address)
//!  UPDATE (opcode 5) is not answered here: crate::update applies it
//!  A storage fault, malformed stored data (never a panic) or a timeout
//!  anywhere becomes SERVFAIL, or a stale reply (failure.rs); NXDOMAIN,
//!  NODATA and referrals are ordinary outcomes (see `answer::Outcome`).
//! ```

pub mod answer;
mod cached;
mod direct;
pub mod dnssec;
mod failure;
pub mod lookup;
pub mod render;
pub mod rules;
pub mod section;
mod signed;

use crate::backend::Backend;
use crate::backend::StoreError;
use crate::cache::{Counters, PacketCache, PacketKey};
use crate::edns;
use crate::handler::{Handler, TcpPeer, TcpReply, Transport};
use crate::ratelog::RateLimited;
use crate::tsig;
use crate::wire::{parse_query, Query, Rcode, CLASS_ANY, CLASS_IN};
use crate::zones::ZoneRegistry;
use cached::Cached;
use dns::{RType, ZoneInfo};
use failure::{FailureRecheck, FAULT_LOG_PERIOD};
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// What transfers and UPDATE read from: the store, behind the resident
/// copies (all of it when residency is off).
pub type TransferSource = crate::resident::ResidentZones<backend_mongo::Store>;

/// Settings of the pipeline.
#[derive(Clone, Debug)]
pub struct PipelineConfig {
    /// Largest UDP reply we send, and the size we advertise in OPT.
    pub max_udp_size: u16,
    /// Time allowed for one uncached answer before SERVFAIL.
    pub query_timeout: Duration,
    /// Who may transfer zones (AXFR/IXFR over TCP) without TSIG. The
    /// server's own default (config.rs) is nobody; this default (loopback)
    /// serves in-process rigs.
    pub axfr_allow: Vec<crate::cidr::Cidr>,
    /// TSIG keys: a transfer request signed with one of them is allowed
    /// from anywhere, and its reply is signed (RFC 8945).
    pub tsig_keys: Vec<crate::tsig::TsigKey>,
    /// Shortest truncated TSIG MAC accepted, in bytes (RFC 8945 §5.2.4:
    /// shorter but still within the RFC gets BADTRUNC).
    pub tsig_min_mac: usize,
    /// Zone transfers running at once, server-wide (each holds one
    /// database cursor); more get REFUSED.
    pub max_transfers: usize,
    /// The server's NSID (RFC 5001), sent when a query asks (`--nsid`).
    pub nsid: Option<Vec<u8>>,
}

impl Default for PipelineConfig {
    fn default() -> Self {
        PipelineConfig {
            max_udp_size: 1232,
            query_timeout: Duration::from_secs(2),
            axfr_allow: crate::cidr::Cidr::loopback(),
            tsig_keys: Vec::new(),
            tsig_min_mac: tsig::MIN_MAC_LEN,
            max_transfers: 4,
            nsid: None,
        }
    }
}

/// The packet cache and what it needs to judge freshness.
pub struct ReplyCache {
    /// Whole replies.
    pub packets: Arc<PacketCache>,
    /// Zone generations.
    pub registry: Arc<ZoneRegistry>,
    /// Longest time a reply without records (REFUSED) is kept.
    pub empty_ttl: Duration,
}

/// Turns query bytes into reply bytes.
pub struct Responder<B> {
    pub(crate) backend: Arc<B>,
    pub(crate) config: PipelineConfig,
    cache: Option<ReplyCache>,
    counters: Option<Arc<Counters>>,
    /// Serve-stale's failure recheck (RFC 8767 §5).
    recheck: FailureRecheck,
    /// Storage faults and malformed data: one warning a second at most.
    fault_log: RateLimited,
    /// Zone transfers running (at most `config.max_transfers`).
    pub(crate) transfers: Arc<tokio::sync::Semaphore>,
    /// Where transfers (and UPDATE) read from, if not the backend: the
    /// store itself, so that they never take the query path's database
    /// slots, behind the resident copies (a transfer of a resident zone
    /// is sent from memory).
    pub(crate) transfer_store: Option<Arc<TransferSource>>,
    /// Signed UPDATEs seen lately (crate::update::replay).
    replays: crate::update::Replays,
}

impl<B: Backend> Responder<B> {
    /// A responder reading from `backend`, without a packet cache.
    pub fn new(backend: Arc<B>, config: PipelineConfig) -> Self {
        Responder {
            transfers: Arc::new(tokio::sync::Semaphore::new(config.max_transfers)),
            backend,
            config,
            cache: None,
            counters: None,
            recheck: FailureRecheck::new(),
            fault_log: RateLimited::new(FAULT_LOG_PERIOD),
            transfer_store: None,
            replays: crate::update::Replays::default(),
        }
    }

    /// Zone transfers read from `store` directly, outside the record
    /// cache's database gate, or from its resident copies.
    pub fn with_transfer_store(mut self, store: TransferSource) -> Self {
        self.transfer_store = Some(Arc::new(store));
        self
    }

    /// Counts pipeline runs in `counters`.
    pub fn count_into(mut self, counters: Arc<Counters>) -> Self {
        self.counters = Some(counters);
        self
    }

    /// A responder with a packet cache in front of the pipeline.
    pub fn with_cache(backend: Arc<B>, config: PipelineConfig, cache: ReplyCache) -> Self {
        Responder {
            cache: Some(cache),
            ..Self::new(backend, config)
        }
    }

    /// The backend behind the pipeline.
    pub fn backend(&self) -> &Arc<B> {
        &self.backend
    }

    /// Answers from memory only, without waiting for anything: a plain
    /// question to a resident zone in one step (direct.rs), else a packet
    /// cache hit. Writes the reply into `out`; false when neither answers.
    pub fn answer_cached(&self, packet: &[u8], transport: Transport, out: &mut Vec<u8>) -> bool {
        if self.answer_direct(packet, transport, out) {
            return true;
        }
        let Some(cache) = &self.cache else {
            return false;
        };
        match cache.packets.key(packet, transport == Transport::Tcp) {
            Some(key) => cache.packets.peek(packet, &key, out),
            None => false,
        }
    }

    /// The settings in use.
    pub fn config(&self) -> &PipelineConfig {
        &self.config
    }

    /// Answers a message that arrived over TCP from `peer`: a zone transfer
    /// is several messages (none if it was aborted), anything else at most one.
    pub async fn respond_tcp(&self, packet: &[u8], peer: SocketAddr) -> Vec<Vec<u8>> {
        let reply = self.respond_tcp_stream(packet, &TcpPeer::new(peer)).await;
        reply.collect().await.unwrap_or_default()
    }

    /// Answers a message that arrived over the TCP connection `peer`; a
    /// zone transfer's messages are streamed as they are built.
    pub async fn respond_tcp_stream(&self, packet: &[u8], peer: &TcpPeer) -> TcpReply {
        if crate::update::is_update(packet) {
            return TcpReply::Messages(
                self.update(packet, Some(peer.addr), Transport::Tcp)
                    .await
                    .into_iter()
                    .collect(),
            );
        }
        if let Ok(query) = parse_query(packet) {
            if matches!(query.qtype, RType::AXFR | RType::IXFR) && query.qclass == CLASS_IN {
                return self.transfer(packet, &query, peer).await;
            }
        }
        TcpReply::Messages(
            self.respond(packet, Transport::Tcp)
                .await
                .into_iter()
                .collect(),
        )
    }

    /// Answers one message; `None` means send nothing.
    pub async fn respond(&self, packet: &[u8], transport: Transport) -> Option<Vec<u8>> {
        self.respond_peer(packet, transport, None).await
    }

    /// Answers one message from `peer` (UDP): as [`Responder::respond`],
    /// and an UPDATE or an IXFR judged with the client's address too (a
    /// key's `from=`, the transfer access list).
    pub async fn respond_from(
        &self,
        packet: &[u8],
        transport: Transport,
        peer: SocketAddr,
    ) -> Option<Vec<u8>> {
        self.respond_peer(packet, transport, Some(peer)).await
    }

    /// Answers one message from `peer`, when the path knows the client.
    async fn respond_peer(
        &self,
        packet: &[u8],
        transport: Transport,
        peer: Option<SocketAddr>,
    ) -> Option<Vec<u8>> {
        // The rare paths are boxed: their futures are large, and each
        // query's future is as large as its largest path (a miss's future
        // is moved onto the heap whole, udp_miss.rs).
        if crate::update::is_update(packet) {
            return Box::pin(self.update(packet, peer, transport)).await;
        }
        let peer = peer.map(|p| p.ip());
        if tsig::has_tsig(packet) {
            if let Some(signed) = Box::pin(self.respond_signed(packet, transport, peer)).await {
                return signed;
            }
        }
        // An IXFR is never cached: it misses, and respond_uncached sends it
        // to crate::xfr (no extra walk of every query's question here).
        match self.lookup_cached(packet, transport) {
            Cached::Hit(reply) => Some(reply),
            Cached::Miss(key) => self.respond_uncached(packet, transport, key, peer).await,
        }
    }

    /// A DNS UPDATE (crate::update), applied through the direct store;
    /// `peer` when the path knows the client.
    async fn update(
        &self,
        packet: &[u8],
        peer: Option<SocketAddr>,
        transport: Transport,
    ) -> Option<Vec<u8>> {
        let settings = crate::update::UpdateSettings {
            keys: &self.config.tsig_keys,
            min_mac: self.config.tsig_min_mac,
            replays: &self.replays,
            tcp: transport == Transport::Tcp,
            udp_wait: self.config.query_timeout,
        };
        let store = self.transfer_store.as_deref().map(|t| &**t.inner());
        crate::update::answer(store, packet, &settings, peer.map(|p| p.ip())).await
    }

    /// Runs the pipeline; stores the reply in the packet cache under `key`.
    async fn respond_uncached(
        &self,
        packet: &[u8],
        transport: Transport,
        key: Option<PacketKey>,
        peer: Option<IpAddr>,
    ) -> Option<Vec<u8>> {
        if let Some(counters) = &self.counters {
            counters.pipeline_queries.fetch_add(1, Ordering::Relaxed);
        }
        let query = match self.admit_query(packet, transport) {
            Ok(query) => query,
            Err(reply) => return reply,
        };
        if query.qtype == RType::IXFR {
            // Over UDP (over TCP the front end sends it to the transfer).
            return Box::pin(self.ixfr_udp_reply(packet, peer)).await;
        }
        let stale_before = self.stale_nodes();
        // Polled once before the timer is armed: an answer from memory
        // (a resident zone, a warm record cache) is ready at once and
        // needs no clock read nor timer.
        let room = render::size_limit(&query, transport, self.config.max_udp_size);
        let mut solve = std::pin::pin!(self.solve(&query, room));
        let solved = match futures::poll!(solve.as_mut()) {
            std::task::Poll::Ready(solved) => Ok(solved),
            std::task::Poll::Pending => {
                tokio::time::timeout(self.config.query_timeout, solve).await
            }
        };
        let used_stale = self.stale_nodes() != stale_before;
        // Malformed stored data is no sign of a failing database.
        let database_ok = match &solved {
            Ok(Ok(_)) => !used_stale,
            Ok(Err(fault)) => fault.is_malformed(),
            Err(_) => false,
        };
        self.recheck.note(database_ok);
        Some(match solved {
            Ok(Ok(Some((first_zone, answer)))) => {
                let solved = Solved {
                    first_zone,
                    answer,
                    used_stale,
                };
                self.answer_reply(packet, &query, transport, key, solved)
            }
            Ok(Ok(None)) => self.refused(packet, &query, key),
            Ok(Err(fault)) => self.fault_reply(packet, &query, key.as_ref(), transport, &fault),
            Err(_) => self.timeout_reply(packet, &query, key.as_ref(), transport),
        })
    }

    /// Parses `packet` and checks its question: the query, or the reply
    /// that ends it here (`None`: send nothing).
    pub(crate) fn admit_query(
        &self,
        packet: &[u8],
        transport: Transport,
    ) -> Result<Query, Option<Vec<u8>>> {
        let max_udp = self.config.max_udp_size;
        let query = parse_query(packet).map_err(|e| render::error_reply(packet, e, max_udp))?;
        match check_question(&query, transport) {
            Some(rcode) => Err(Some(render::rcode_only(packet, &query, rcode, max_udp))),
            None => Ok(query),
        }
    }

    /// Runs the stages; `None` when no served zone holds the name.
    /// Returns the zone the name was found in, and the answer. `room`:
    /// the reply's size limit, which bounds the additional section's reads.
    async fn solve(
        &self,
        query: &Query,
        room: usize,
    ) -> Result<Option<(ZoneInfo, answer::Answer)>, StoreError> {
        let backend = &*self.backend;
        let Some(zone) = lookup::zone_for_question(backend, &query.qname, query.qtype).await?
        else {
            return Ok(None);
        };
        let (qname, qtype) = (&query.qname, query.qtype);
        let mut answer = answer::solve_answer(backend, zone.clone(), qname, qtype).await?;
        // DO=1: each section's DNSSEC step right after it, as Knot runs them.
        let mut signed = query
            .edns
            .is_some_and(|e| e.dnssec_ok)
            .then(|| dnssec::SignedZones::new(&answer.zone));
        if let Some(zones) = &mut signed {
            dnssec::sign_answer(backend, zones, &mut answer).await?;
        }
        answer::solve_authority(backend, &mut answer).await?;
        if let Some(zones) = &mut signed {
            dnssec::prove_denial(backend, zones, &mut answer).await?;
        }
        answer::solve_additional(backend, &mut answer, room).await?;
        if let Some(zones) = &mut signed {
            dnssec::sign_additional(backend, zones, &mut answer).await?;
        }
        Ok(Some((zone, answer)))
    }

    /// The reply for a solved query, kept in the packet cache unless it was
    /// built from expired records; SERVFAIL when stored data is malformed.
    fn answer_reply(
        &self,
        packet: &[u8],
        query: &Query,
        transport: Transport,
        key: Option<PacketKey>,
        solved: Solved,
    ) -> Vec<u8> {
        let max_udp = self.config.max_udp_size;
        let limit = render::size_limit(query, transport, max_udp);
        let mut reply = match render::render(packet, query, &solved.answer, limit, max_udp) {
            Ok(reply) => reply,
            Err(bad) => {
                self.warn_fault(query, &bad);
                return self.servfail(packet, query);
            }
        };
        self.add_edns_options(query, &solved, &mut reply, limit);
        if solved.used_stale {
            // Built (perhaps) from expired records while the database
            // failed: short TTLs, and not kept (RFC 8767 §4). Another
            // query's stale read can land here too; that only
            // shortens TTLs during an outage.
            crate::cache::packet::cap_ttls(&mut reply, crate::cache::packet::STALE_TTL);
            edns::add_ede(&mut reply, edns::options::EDE_STALE_ANSWER, limit);
        } else {
            self.remember(key, &reply, &solved.answer, &solved.first_zone);
        }
        reply
    }

    /// Not in any zone we serve: REFUSED, with the Extended DNS Error "Not
    /// Authoritative" as Knot and NSD send.
    fn refused(&self, packet: &[u8], query: &Query, key: Option<PacketKey>) -> Vec<u8> {
        let mut reply = render::rcode_with_ede(
            packet,
            query,
            Rcode::REFUSED,
            Some(edns::options::EDE_NOT_AUTHORITATIVE),
            self.config.max_udp_size,
        );
        // A REFUSED reply is small; the UDP limit holds for TCP too.
        let limit = render::size_limit(query, Transport::Udp, self.config.max_udp_size);
        let offer = edns::Offer {
            nsid: self.config.nsid.as_deref(),
            expire: None,
        };
        edns::decorate(&mut reply, query.asked(), offer, limit);
        self.remember_refused(key, &reply);
        reply
    }

    /// NSID and EXPIRE (for an SOA at the apex) when the query asks.
    fn add_edns_options(&self, query: &Query, solved: &Solved, reply: &mut Vec<u8>, limit: usize) {
        let expire = (query.qtype == RType::SOA && query.qname == solved.first_zone.apex)
            .then(|| solved.answer.answer.first())
            .flatten()
            .filter(|p| p.rrset.rtype == RType::SOA)
            .and_then(|p| edns::options::soa_expire(p.rrset.rdata.first()?));
        let nsid = self.config.nsid.as_deref();
        edns::decorate(reply, query.asked(), edns::Offer { nsid, expire }, limit);
    }
}

/// A query the stages answered.
struct Solved {
    /// The zone the question was found in (the chain may end in another).
    first_zone: ZoneInfo,
    /// What the reply says.
    answer: answer::Answer,
    /// Expired records were read while it was built.
    used_stale: bool,
}

/// Questions we refuse or reject before looking anything up.
fn check_question(query: &Query, transport: Transport) -> Option<Rcode> {
    if query.qclass != CLASS_IN && query.qclass != CLASS_ANY {
        // CH (version.bind, id.server), HS, NONE: we serve IN only. Class
        // ANY is answered with our IN data, as Knot and NSD do.
        return Some(Rcode::REFUSED);
    }
    match query.qtype {
        // Zone transfers are TCP only (RFC 5936 §4.2), as Knot and NSD say.
        RType::AXFR if transport == Transport::Udp => Some(Rcode::NOTIMP),
        // Over TCP, respond_tcp handles class IN; class ANY is not transferred.
        RType::AXFR | RType::IXFR if query.qclass != CLASS_IN => Some(Rcode::REFUSED),
        _ => None,
    }
}

/// The front end answers through the pipeline.
impl<B: Backend> Handler for Responder<B> {
    fn handle(
        &self,
        packet: &[u8],
        transport: Transport,
    ) -> impl Future<Output = Option<Vec<u8>>> + Send {
        self.respond(packet, transport)
    }

    fn handle_now(&self, packet: &[u8], transport: Transport, out: &mut Vec<u8>) -> bool {
        self.answer_cached(packet, transport, out)
    }

    fn handle_from(
        &self,
        packet: &[u8],
        transport: Transport,
        peer: SocketAddr,
    ) -> impl Future<Output = Option<Vec<u8>>> + Send {
        self.respond_from(packet, transport, peer)
    }

    fn handle_tcp(&self, packet: &[u8], peer: &TcpPeer) -> impl Future<Output = TcpReply> + Send {
        self.respond_tcp_stream(packet, peer)
    }
}
