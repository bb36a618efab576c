//! When the pipeline cannot answer: storage faults, timeouts, and
//! serve-stale (RFC 8767) in front of SERVFAIL.
//!
//! ```text
//!  fault or timeout ─► an expired cached reply in the stale window?
//!       ├─ yes ─► that reply + EDE 3 "Stale Answer" (under EDNS)
//!       └─ no  ─► SERVFAIL (fault: one warning a second at most;
//!                 busy and timeout: counted, debug lines only)
//!  after a failed run, for FAILURE_RECHECK: a query with a stale reply gets
//!  it at once (respond) instead of waiting on the failing database; any
//!  success ends that early (note_database)
//! ```

use super::{render, Responder, Transport};
use crate::backend::Backend;
use crate::backend::StoreError;
use crate::cache::PacketKey;
use crate::wire::{parse_query, Query, Rcode};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Shortest time between two "storage fault" warnings (the others are
/// counted into the next one): an outage would otherwise write one line
/// per query.
pub(super) const FAULT_LOG_PERIOD: Duration = Duration::from_secs(1);

/// After a database failure, how long expired replies are served at once
/// without asking the database first; any success ends it early.
const FAILURE_RECHECK: Duration = Duration::from_secs(1);

/// Serve-stale's failure recheck (RFC 8767 §5): until a moment after the
/// last failure, a query with a stale reply gets it at once.
pub(super) struct FailureRecheck {
    /// Until this instant (ms since `epoch`) the database counts as failing.
    failed_until_ms: AtomicU64,
    epoch: Instant,
}

impl FailureRecheck {
    /// No failure seen yet.
    pub(super) fn new() -> Self {
        FailureRecheck {
            failed_until_ms: AtomicU64::new(0),
            epoch: Instant::now(),
        }
    }

    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// True while a recent failure has not been followed by a success.
    pub(super) fn failing(&self) -> bool {
        self.failed_until_ms.load(Ordering::Relaxed) > self.now_ms()
    }

    /// Notes the outcome of a pipeline run.
    pub(super) fn note(&self, ok: bool) {
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
}

impl<B: Backend> Responder<B> {
    /// The reply to a query whose run hit a storage `fault`: stale, or SERVFAIL.
    pub(super) fn fault_reply(
        &self,
        packet: &[u8],
        query: &Query,
        key: Option<&PacketKey>,
        transport: Transport,
        fault: &StoreError,
    ) -> Vec<u8> {
        if let Some(stale) = self.stale(packet, key, transport) {
            tracing::debug!(qname = %query.qname, error = %fault, "storage fault: stale answer");
            return stale;
        }
        if fault.is_busy() {
            // Load shedding: counted (db_shed), not worth a line each.
            tracing::debug!(qname = %query.qname, error = %fault, "database busy: SERVFAIL");
        } else {
            self.warn_fault(query, fault);
        }
        self.servfail(packet, query)
    }

    /// The reply to a query whose run timed out: stale, or SERVFAIL.
    pub(super) fn timeout_reply(
        &self,
        packet: &[u8],
        query: &Query,
        key: Option<&PacketKey>,
        transport: Transport,
    ) -> Vec<u8> {
        if let Some(stale) = self.stale(packet, key, transport) {
            tracing::debug!(qname = %query.qname, "query timed out: stale answer");
            return stale;
        }
        // Counted (query_timeouts); a line each would flood the log
        // exactly when the server is overloaded.
        if let Some(counters) = &self.counters {
            counters.query_timeouts.fetch_add(1, Ordering::Relaxed);
        }
        tracing::debug!(qname = %query.qname, "query timed out: SERVFAIL");
        self.servfail(packet, query)
    }

    /// A SERVFAIL reply to `query`.
    pub(super) fn servfail(&self, packet: &[u8], query: &Query) -> Vec<u8> {
        render::rcode_only(packet, query, Rcode::SERVFAIL, self.config.max_udp_size)
    }

    /// The "storage fault" warning, at most one a second; the next line
    /// says how many were left out.
    pub(super) fn warn_fault(&self, query: &Query, fault: &dyn std::fmt::Display) {
        if let Some(suppressed) = self.fault_log.allow() {
            tracing::warn!(qname = %query.qname, error = %fault, suppressed, "storage fault: SERVFAIL");
        }
    }

    /// Stale nodes served so far (the record cache counts them): a run
    /// that moved it was answered from expired data.
    pub(super) fn stale_nodes(&self) -> u64 {
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
    pub(super) fn mark_stale(&self, reply: &mut Vec<u8>, packet: &[u8], transport: Transport) {
        if let Ok(query) = parse_query(packet) {
            let limit = render::size_limit(&query, transport, self.config.max_udp_size);
            crate::edns::add_ede(reply, crate::edns::options::EDE_STALE_ANSWER, limit);
        }
    }
}
