//! The answer pipeline: bytes in, bytes out, in named stages.
//!
//! ```text
//!  parse_query ─► check_question (class, meta types) ─► find_zone
//!     ─► solve_answer ─► solve_authority ─► solve_additional ─► render
//!  AXFR/IXFR over TCP take their own path: transfer.rs (several messages)
//!  A storage fault or a timeout anywhere becomes SERVFAIL; NXDOMAIN,
//!  NODATA and referrals are ordinary outcomes (see `answer::Outcome`).
//! ```

pub mod answer;
pub mod lookup;
pub mod render;
pub mod transfer;

use crate::backend::Backend;
use crate::wire::{parse_query, Query, QueryError, Rcode, CLASS_ANY, CLASS_IN};
use backend_mongo::RType;
use std::net::SocketAddr;
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
    /// Who may transfer zones (AXFR/IXFR over TCP).
    pub axfr_allow: Vec<transfer::Cidr>,
}

impl Default for PipelineConfig {
    fn default() -> Self {
        PipelineConfig {
            max_udp_size: 1232,
            query_timeout: Duration::from_secs(2),
            axfr_allow: transfer::Cidr::loopback(),
        }
    }
}

/// Turns query bytes into reply bytes.
pub struct Responder<B> {
    backend: Arc<B>,
    config: PipelineConfig,
}

impl<B: Backend> Responder<B> {
    /// A responder reading from `backend`.
    pub fn new(backend: Arc<B>, config: PipelineConfig) -> Self {
        Responder { backend, config }
    }

    /// The settings in use.
    pub fn config(&self) -> &PipelineConfig {
        &self.config
    }

    /// Answers a message that arrived over TCP from `peer`: a zone transfer
    /// is several messages, anything else at most one.
    pub async fn respond_tcp(&self, packet: &[u8], peer: SocketAddr) -> Vec<Vec<u8>> {
        if let Ok(query) = parse_query(packet) {
            if matches!(query.qtype, RType::AXFR | RType::IXFR) && query.qclass == CLASS_IN {
                let max_udp = self.config.max_udp_size;
                let allow = &self.config.axfr_allow;
                let work = transfer::transfer(&*self.backend, packet, &query, peer, allow, max_udp);
                return match tokio::time::timeout(TRANSFER_TIMEOUT, work).await {
                    Ok(Ok(messages)) => messages,
                    Ok(Err(fault)) => {
                        tracing::warn!(zone = %query.qname, error = %fault, "transfer failed: SERVFAIL");
                        vec![render::rcode_only(packet, &query, Rcode::SERVFAIL, max_udp)]
                    }
                    Err(_) => {
                        tracing::warn!(zone = %query.qname, "transfer timed out: SERVFAIL");
                        vec![render::rcode_only(packet, &query, Rcode::SERVFAIL, max_udp)]
                    }
                };
            }
        }
        self.respond(packet, Transport::Tcp)
            .await
            .into_iter()
            .collect()
    }

    /// Answers one message; `None` means send nothing.
    pub async fn respond(&self, packet: &[u8], transport: Transport) -> Option<Vec<u8>> {
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
            let work =
                transfer::ixfr_over_udp(&*self.backend, packet, &query, self.config.max_udp_size);
            return match tokio::time::timeout(self.config.query_timeout, work).await {
                Ok(Ok(reply)) => Some(reply),
                _ => Some(render::rcode_only(
                    packet,
                    &query,
                    Rcode::SERVFAIL,
                    self.config.max_udp_size,
                )),
            };
        }
        let limit = render::size_limit(&query, transport, self.config.max_udp_size);
        let solved = tokio::time::timeout(self.config.query_timeout, self.solve(&query)).await;
        match solved {
            Ok(Ok(Some(answer))) => Some(render::render(
                packet,
                &query,
                &answer,
                limit,
                self.config.max_udp_size,
            )),
            Ok(Ok(None)) => Some(render::rcode_with_ede(
                packet,
                &query,
                Rcode::REFUSED,
                Some(render::EDE_NOT_AUTHORITATIVE),
                self.config.max_udp_size,
            )),
            Ok(Err(fault)) => {
                tracing::warn!(qname = %query.qname, error = %fault, "storage fault: SERVFAIL");
                Some(render::rcode_only(
                    packet,
                    &query,
                    Rcode::SERVFAIL,
                    self.config.max_udp_size,
                ))
            }
            Err(_) => {
                tracing::warn!(qname = %query.qname, "query timed out: SERVFAIL");
                Some(render::rcode_only(
                    packet,
                    &query,
                    Rcode::SERVFAIL,
                    self.config.max_udp_size,
                ))
            }
        }
    }

    /// Runs the stages; `None` when no served zone holds the name.
    async fn solve(
        &self,
        query: &Query,
    ) -> Result<Option<answer::Answer>, backend_mongo::StoreError> {
        let backend = &*self.backend;
        let Some(zone) = lookup::zone_for_question(backend, &query.qname, query.qtype).await?
        else {
            return Ok(None);
        };
        let mut answer = answer::solve_answer(backend, zone, &query.qname, query.qtype).await?;
        answer::solve_authority(backend, &mut answer).await?;
        answer::solve_additional(backend, &mut answer).await?;
        Ok(Some(answer))
    }
}

/// Time allowed for reading and packing a whole zone transfer.
const TRANSFER_TIMEOUT: Duration = Duration::from_secs(300);

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
        RType::AXFR | RType::IXFR => Some(Rcode::REFUSED),
        _ => None,
    }
}
