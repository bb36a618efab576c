//! The answer pipeline: bytes in, bytes out, in named stages.
//!
//! ```text
//!  parse_query ─► check_question (class, meta types) ─► find_zone
//!     ─► solve_answer ─► solve_authority ─► solve_additional
//!     ─► dnssec::decorate (DO=1 only) ─► render
//!  A storage fault or a timeout anywhere becomes SERVFAIL; NXDOMAIN,
//!  NODATA and referrals are ordinary outcomes (see `answer::Outcome`).
//! ```

pub mod answer;
pub mod dnssec;
pub mod lookup;
pub mod render;

use crate::backend::Backend;
use crate::wire::{parse_query, Query, QueryError, Rcode, CLASS_IN};
use backend_mongo::RType;
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
}

impl Default for PipelineConfig {
    fn default() -> Self {
        PipelineConfig {
            max_udp_size: 1232,
            query_timeout: Duration::from_secs(2),
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
            Ok(Ok(None)) => Some(render::rcode_only(
                packet,
                &query,
                Rcode::REFUSED,
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
        let Some(zone) = lookup::find_zone(backend, &query.qname).await? else {
            return Ok(None);
        };
        let mut answer = answer::solve_answer(backend, zone, &query.qname, query.qtype).await?;
        answer::solve_authority(backend, &mut answer).await?;
        answer::solve_additional(backend, &mut answer).await?;
        if query.edns.is_some_and(|e| e.dnssec_ok) {
            dnssec::decorate(backend, &mut answer, &query.qname, query.qtype).await?;
        }
        Ok(Some(answer))
    }
}

/// Questions we refuse or reject before looking anything up.
fn check_question(query: &Query, transport: Transport) -> Option<Rcode> {
    if query.qclass != CLASS_IN {
        // CH (version.bind, id.server), HS and ANY: we serve IN only.
        return Some(Rcode::REFUSED);
    }
    match query.qtype {
        RType::OPT => Some(Rcode::FORMERR),
        RType::AXFR | RType::IXFR if transport == Transport::Udp => Some(Rcode::FORMERR),
        // Zone transfer is not served yet (issue 3): refuse rather than mislead.
        RType::AXFR | RType::IXFR => Some(Rcode::REFUSED),
        _ => None,
    }
}
