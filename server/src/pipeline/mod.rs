//! The answer pipeline: bytes in, bytes out, in named stages.
//!
//! ```text
//!  parse_query ─► check_question (class, meta types) ─► find_zone
//!     ─► solve_answer ─► solve_authority ─► solve_additional
//!     ─► dnssec::decorate (DO=1 only) ─► render
//!  AXFR/IXFR over TCP take their own path: transfer.rs (several messages)
//!  A storage fault, malformed stored data (never a panic) or a timeout
//!  anywhere becomes SERVFAIL (warnings: one a second at most); NXDOMAIN,
//!  NODATA and referrals are ordinary outcomes (see `answer::Outcome`).
//!  A query with TSIG is verified, answered without it, and the reply signed
//!  (`respond_signed`); a stale reply (RFC 8767) carries EDE 3 under EDNS.
//! ```

mod admit;
pub mod answer;
pub mod dnssec;
pub mod lookup;
pub mod render;
pub mod transfer;

use crate::backend::Backend;
use crate::cache::{Counters, Dependency, PacketCache, PacketKey, ZoneRegistry};
use crate::frontend::{TcpPeer, TcpReply};
use crate::ratelog::RateLimited;
use crate::tsig;
use crate::wire::{parse_query, Query, QueryError, Rcode, CLASS_ANY, CLASS_IN};
use backend_mongo::{RType, ZoneInfo};
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// How the query arrived; decides the size limit of the reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// UDP: at most the requester's EDNS size (or 512), capped by our limit.
    Udp,
    /// TCP: up to 65535 bytes.
    Tcp,
}

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
    pub axfr_allow: Vec<transfer::Cidr>,
    /// TSIG keys: a transfer request signed with one of them is allowed
    /// from anywhere, and its reply is signed (RFC 8945).
    pub tsig_keys: Vec<crate::tsig::TsigKey>,
    /// Shortest truncated TSIG MAC accepted, in bytes (RFC 8945 §5.2.4:
    /// shorter but still within the RFC gets BADTRUNC).
    pub tsig_min_mac: usize,
    /// Zone transfers running at once, server-wide (each holds one
    /// database cursor); more get REFUSED.
    pub max_transfers: usize,
}

impl Default for PipelineConfig {
    fn default() -> Self {
        PipelineConfig {
            max_udp_size: 1232,
            query_timeout: Duration::from_secs(2),
            axfr_allow: transfer::Cidr::loopback(),
            tsig_keys: Vec::new(),
            tsig_min_mac: tsig::MIN_MAC_LEN,
            max_transfers: 4,
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
    backend: Arc<B>,
    config: PipelineConfig,
    cache: Option<ReplyCache>,
    counters: Option<Arc<Counters>>,
    /// Serve-stale's failure recheck (RFC 8767 §5): until this instant
    /// (ms since `epoch`), a query with a stale reply gets it at once
    /// instead of waiting on a database that just failed.
    failed_until_ms: std::sync::atomic::AtomicU64,
    epoch: std::time::Instant,
    /// Storage faults and malformed data: one warning a second at most.
    fault_log: RateLimited,
    /// Zone transfers running (at most `config.max_transfers`).
    transfers: Arc<tokio::sync::Semaphore>,
    /// Where transfers read from, if not the backend (the store itself,
    /// so that they never take the query path's database slots).
    transfer_store: Option<Arc<backend_mongo::Store>>,
}

/// Shortest time between two "storage fault" warnings (the others are
/// counted into the next one): an outage would otherwise write one line
/// per query.
const FAULT_LOG_PERIOD: Duration = Duration::from_secs(1);

/// After a database failure, how long expired replies are served at once
/// without asking the database first; any success ends it early.
const FAILURE_RECHECK: Duration = Duration::from_secs(1);

impl<B: Backend> Responder<B> {
    /// A responder reading from `backend`, without a packet cache.
    pub fn new(backend: Arc<B>, config: PipelineConfig) -> Self {
        Responder {
            transfers: Arc::new(tokio::sync::Semaphore::new(config.max_transfers)),
            backend,
            config,
            cache: None,
            counters: None,
            failed_until_ms: Default::default(),
            epoch: std::time::Instant::now(),
            fault_log: RateLimited::new(FAULT_LOG_PERIOD),
            transfer_store: None,
        }
    }

    /// Zone transfers read from `store` directly, outside the record
    /// cache's database gate.
    pub fn with_transfer_store(mut self, store: backend_mongo::Store) -> Self {
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

    /// The packet cache, if any.
    pub fn packet_cache(&self) -> Option<&Arc<PacketCache>> {
        self.cache.as_ref().map(|c| &c.packets)
    }

    /// Answers from the packet cache only, without waiting for anything:
    /// writes the reply into `out` and returns true on a hit.
    pub fn answer_cached(&self, packet: &[u8], transport: Transport, out: &mut Vec<u8>) -> bool {
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
        if let Some(signed) = self.respond_signed(packet, transport).await {
            return signed;
        }
        let key = match &self.cache {
            Some(cache) => {
                let key = cache.packets.key(packet, transport == Transport::Tcp);
                if key.is_none() {
                    cache
                        .packets
                        .stats
                        .uncacheable
                        .fetch_add(1, Ordering::Relaxed);
                }
                if let Some(key) = &key {
                    let mut out = Vec::new();
                    if cache.packets.lookup(packet, key, &mut out) {
                        return Some(out);
                    }
                    if self.database_failing() && cache.packets.lookup_stale(packet, key, &mut out)
                    {
                        self.mark_stale(&mut out, packet, transport);
                        return Some(out);
                    }
                }
                key
            }
            None => None,
        };
        self.respond_uncached(packet, transport, key).await
    }

    /// Runs the pipeline; stores the reply in the packet cache under `key`.
    async fn respond_uncached(
        &self,
        packet: &[u8],
        transport: Transport,
        key: Option<PacketKey>,
    ) -> Option<Vec<u8>> {
        if let Some(counters) = &self.counters {
            counters.pipeline_queries.fetch_add(1, Ordering::Relaxed);
        }
        let query = match parse_query(packet) {
            Ok(q) => q,
            Err(QueryError::Drop) => return None,
            Err(QueryError::Reply {
                rcode,
                id,
                opcode,
                rd,
                question,
                edns,
            }) => {
                return Some(render::error_reply(
                    packet,
                    id,
                    opcode,
                    rd,
                    question,
                    edns,
                    rcode,
                    self.config.max_udp_size,
                ))
            }
        };
        if let Some(rcode) = check_question(&query, transport) {
            return Some(render::rcode_only(
                packet,
                &query,
                rcode,
                self.config.max_udp_size,
            ));
        }
        if query.qtype == RType::IXFR {
            // Over UDP: our SOA alone, "ask again over TCP" (RFC 1995 §2).
            let max_udp = self.config.max_udp_size;
            let work = transfer::ixfr_over_udp(&*self.backend, packet, &query, max_udp);
            return match tokio::time::timeout(self.config.query_timeout, work).await {
                Ok(Ok(reply)) => Some(reply),
                _ => Some(render::rcode_only(packet, &query, Rcode::SERVFAIL, max_udp)),
            };
        }
        let limit = render::size_limit(&query, transport, self.config.max_udp_size);
        let stale_before = self.stale_nodes();
        let solved = tokio::time::timeout(self.config.query_timeout, self.solve(&query)).await;
        let used_stale = self.stale_nodes() != stale_before;
        // Malformed stored data is no sign of a failing database.
        let database_ok = match &solved {
            Ok(Ok(_)) => !used_stale,
            Ok(Err(fault)) => fault.is_malformed(),
            Err(_) => false,
        };
        self.note_database(database_ok);
        match solved {
            Ok(Ok(Some((first_zone, answer)))) => {
                let rendered =
                    render::render(packet, &query, &answer, limit, self.config.max_udp_size);
                let mut reply = match rendered {
                    Ok(reply) => reply,
                    Err(bad) => {
                        self.warn_fault(&query, &bad);
                        return Some(self.servfail(packet, &query));
                    }
                };
                if used_stale {
                    // Built (perhaps) from expired records while the database
                    // failed: short TTLs, and not kept (RFC 8767 §4). Another
                    // query's stale read can land here too; that only
                    // shortens TTLs during an outage.
                    crate::cache::packet::cap_ttls(&mut reply, crate::cache::packet::STALE_TTL);
                    render::add_ede(&mut reply, render::EDE_STALE_ANSWER, limit);
                } else {
                    self.remember(key, &reply, &answer, &first_zone);
                }
                Some(reply)
            }
            Ok(Ok(None)) => {
                // Not in any zone we serve: REFUSED, with the Extended DNS
                // Error "Not Authoritative" as Knot and NSD send.
                let reply = render::rcode_with_ede(
                    packet,
                    &query,
                    Rcode::REFUSED,
                    Some(render::EDE_NOT_AUTHORITATIVE),
                    self.config.max_udp_size,
                );
                if let (Some(cache), Some(key)) = (&self.cache, key) {
                    let deps = vec![Dependency::ZoneSet(cache.registry.zones_epoch())];
                    cache.packets.insert(&key, &reply, cache.empty_ttl, deps);
                }
                Some(reply)
            }
            Ok(Err(fault)) => {
                if let Some(stale) = self.stale(packet, key.as_ref(), transport) {
                    tracing::debug!(qname = %query.qname, error = %fault, "storage fault: stale answer");
                    return Some(stale);
                }
                if fault.is_busy() {
                    // Load shedding: counted (db_shed), not worth a line each.
                    tracing::debug!(qname = %query.qname, error = %fault, "database busy: SERVFAIL");
                } else {
                    self.warn_fault(&query, &fault);
                }
                Some(self.servfail(packet, &query))
            }
            Err(_) => {
                if let Some(stale) = self.stale(packet, key.as_ref(), transport) {
                    tracing::debug!(qname = %query.qname, "query timed out: stale answer");
                    return Some(stale);
                }
                // Counted (query_timeouts); a line each would flood the log
                // exactly when the server is overloaded.
                if let Some(counters) = &self.counters {
                    counters.query_timeouts.fetch_add(1, Ordering::Relaxed);
                }
                tracing::debug!(qname = %query.qname, "query timed out: SERVFAIL");
                Some(render::rcode_only(
                    packet,
                    &query,
                    Rcode::SERVFAIL,
                    self.config.max_udp_size,
                ))
            }
        }
    }

    /// A SERVFAIL reply to `query`.
    fn servfail(&self, packet: &[u8], query: &Query) -> Vec<u8> {
        render::rcode_only(packet, query, Rcode::SERVFAIL, self.config.max_udp_size)
    }

    /// The "storage fault" warning, at most one a second; the next line
    /// says how many were left out.
    fn warn_fault(&self, query: &Query, fault: &dyn std::fmt::Display) {
        if let Some(suppressed) = self.fault_log.allow() {
            tracing::warn!(qname = %query.qname, error = %fault, suppressed, "storage fault: SERVFAIL");
        }
    }

    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    fn database_failing(&self) -> bool {
        self.failed_until_ms.load(Ordering::Relaxed) > self.now_ms()
    }

    /// Notes the outcome of a pipeline run for the failure recheck.
    fn note_database(&self, ok: bool) {
        let until = if ok {
            0
        } else {
            self.now_ms() + FAILURE_RECHECK.as_millis() as u64
        };
        if ok && self.failed_until_ms.load(Ordering::Relaxed) == 0 {
            return; // the common case: no write to a shared line
        }
        self.failed_until_ms.store(until, Ordering::Relaxed);
    }

    fn stale_nodes(&self) -> u64 {
        self.counters
            .as_ref()
            .map_or(0, |c| c.stale_nodes.load(Ordering::Relaxed))
    }

    /// An expired cached reply within the serve-stale window (RFC 8767).
    fn stale(
        &self,
        packet: &[u8],
        key: Option<&PacketKey>,
        transport: Transport,
    ) -> Option<Vec<u8>> {
        let (cache, key) = (self.cache.as_ref()?, key?);
        let mut out = Vec::new();
        if !cache.packets.lookup_stale(packet, key, &mut out) {
            return None;
        }
        self.mark_stale(&mut out, packet, transport);
        Some(out)
    }

    /// Adds EDE 3 "Stale Answer" (RFC 8914) to a stale reply to `packet`
    /// when the query had EDNS and the option fits.
    fn mark_stale(&self, reply: &mut Vec<u8>, packet: &[u8], transport: Transport) {
        if let Ok(query) = parse_query(packet) {
            let limit = render::size_limit(&query, transport, self.config.max_udp_size);
            render::add_ede(reply, render::EDE_STALE_ANSWER, limit);
        }
    }

    /// A query with a TSIG record (RFC 8945): verified, answered as the
    /// same query without it (so the packet cache only ever holds and serves
    /// unsigned replies), then the reply signed. A bad TSIG gets NOTAUTH with
    /// BADKEY, BADSIG, BADTIME or BADTRUNC; one that is not the last record,
    /// or whose MAC size the RFC forbids, FORMERR. `None`: no TSIG.
    async fn respond_signed(&self, packet: &[u8], transport: Transport) -> Option<Option<Vec<u8>>> {
        let config = &self.config;
        if !tsig::has_tsig(packet) {
            return None;
        }
        // Misplaced TSIG: the message as it came (its records are skipped).
        let unsigned = tsig::without_tsig(packet).unwrap_or_else(|| packet.to_vec());
        let max_udp = config.max_udp_size;
        let Ok(query) = parse_query(&unsigned) else {
            // Not a query we can answer: the error reply, unsigned.
            return Some(self.respond_uncached(&unsigned, transport, None).await);
        };
        // Keys are scoped to zones; the client's address is not known here,
        // so a key limited to address blocks does not apply (tsig/key.rs).
        let scope = tsig::Scope {
            qname: Some(&query.qname),
            peer: None,
        };
        let now = tsig::unix_now();
        let verified =
            tsig::verify_request(packet, &config.tsig_keys, now, config.tsig_min_mac, &scope);
        let limit = render::size_limit(&query, transport, max_udp);
        Some(match verified {
            tsig::Verified::Unsigned => return None,
            tsig::Verified::Malformed => {
                tracing::debug!(qname = %query.qname, "query with a misplaced or malformed TSIG: FORMERR");
                Some(render::rcode_only(
                    &unsigned,
                    &query,
                    Rcode::FORMERR,
                    max_udp,
                ))
            }
            tsig::Verified::Failed(failure) => {
                tracing::debug!(qname = %query.qname, error = failure.error, "query with a bad TSIG: NOTAUTH");
                let mut reply = render::rcode_only(&unsigned, &query, Rcode::NOTAUTH, max_udp);
                failure.append_to(&mut reply);
                if reply.len() > limit {
                    reply = render::rcode_only(&unsigned, &query, Rcode::NOTAUTH, max_udp);
                    // TC: the whole error comes over TCP.
                    reply[2] |= (crate::wire::flags::TC >> 8) as u8;
                }
                Some(reply)
            }
            tsig::Verified::Signed(mut signer) => {
                let reply = Box::pin(self.respond(&unsigned, transport)).await?;
                Some(render::sign_reply(
                    reply,
                    &unsigned,
                    &query,
                    &mut signer,
                    limit,
                    max_udp,
                ))
            }
        })
    }

    /// Runs the stages; `None` when no served zone holds the name.
    /// Returns the zone the name was found in, and the answer.
    async fn solve(
        &self,
        query: &Query,
    ) -> Result<Option<(ZoneInfo, answer::Answer)>, backend_mongo::StoreError> {
        let backend = &*self.backend;
        let Some(zone) = lookup::zone_for_question(backend, &query.qname, query.qtype).await?
        else {
            return Ok(None);
        };
        let mut answer =
            answer::solve_answer(backend, zone.clone(), &query.qname, query.qtype).await?;
        answer::solve_authority(backend, &mut answer).await?;
        answer::solve_additional(backend, &mut answer).await?;
        if query.edns.is_some_and(|e| e.dnssec_ok) {
            dnssec::decorate(backend, &mut answer, &query.qname, query.qtype).await?;
        }
        Ok(Some((zone, answer)))
    }

    /// Stores a rendered reply in the packet cache, valid while the zones it
    /// came from keep their generation, for at most its smallest TTL.
    fn remember(
        &self,
        key: Option<PacketKey>,
        reply: &[u8],
        answer: &answer::Answer,
        first_zone: &ZoneInfo,
    ) {
        let (Some(cache), Some(key)) = (&self.cache, key) else {
            return;
        };
        let ttl = answer
            .answer
            .iter()
            .chain(&answer.authority)
            .chain(&answer.additional)
            .map(|p| p.rrset.ttl)
            .min()
            .map_or(cache.empty_ttl, |t| Duration::from_secs(u64::from(t)));
        let mut deps = Vec::with_capacity(2);
        for zone in [first_zone, &answer.zone] {
            match cache.registry.state(&zone.apex) {
                Some(state) => deps.push(Dependency::Zone(state, zone.gen)),
                None => return, // not tracked (purged meanwhile): do not cache
            }
            if first_zone.apex == answer.zone.apex {
                break;
            }
        }
        cache.packets.insert(&key, reply, ttl, deps);
    }
}

/// Time allowed for reading and packing a whole zone transfer.
pub(crate) const TRANSFER_TIMEOUT: Duration = Duration::from_secs(300);

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
