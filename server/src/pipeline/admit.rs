//! Who may transfer a zone, and how many transfers run at once.
//!
//! ```text
//!  AXFR/IXFR over TCP ─► TSIG (the key known for this zone and address?):
//!     malformed ─► FORMERR; bad ─► NOTAUTH (+ error)
//!     ─► unsigned: peer in axfr_allow? (default: nobody) ── no ──► REFUSED
//!     ─► this connection already transferring? ── yes ──► REFUSED
//!     ─► a transfer slot free (max_transfers)? ── no ──► REFUSED
//!     ─► spawn transfer::run (the transfer store, not the query path's
//!        database gate) ─► TcpReply::Stream: first message, then the rest
//!  IXFR over UDP ─► ixfr_udp_reply: our SOA alone ("ask again over TCP"),
//!     SERVFAIL on a fault or after query_timeout
//! ```

use super::{render, transfer, Responder};
use crate::backend::Backend;
use crate::frontend::{TcpPeer, TcpReply};
use crate::guard::{bump, GUARD};
use crate::tsig;
use crate::wire::{Query, Rcode};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// Messages of one transfer built ahead of the socket.
const TRANSFER_QUEUE: usize = 4;

/// Time allowed for reading and packing a whole zone transfer.
pub(crate) const TRANSFER_TIMEOUT: Duration = Duration::from_secs(300);

impl<B: Backend> Responder<B> {
    /// An IXFR over UDP: our SOA alone, "ask again over TCP" (RFC 1995 §2).
    pub(super) async fn ixfr_udp_reply(&self, packet: &[u8], query: &Query) -> Vec<u8> {
        let max_udp = self.config.max_udp_size;
        let work = transfer::ixfr_over_udp(&*self.backend, packet, query, max_udp);
        match tokio::time::timeout(self.config.query_timeout, work).await {
            Ok(Ok(reply)) => reply,
            _ => render::rcode_only(packet, query, Rcode::SERVFAIL, max_udp),
        }
    }

    /// A zone transfer: admitted here, then streamed by a task of its own.
    pub(super) async fn transfer(&self, packet: &[u8], query: &Query, peer: &TcpPeer) -> TcpReply {
        let max_udp = self.config.max_udp_size;
        let only =
            |rcode| TcpReply::Messages(vec![render::rcode_only(packet, query, rcode, max_udp)]);
        let now = tsig::unix_now();
        let keys = &self.config.tsig_keys;
        let ip = peer.addr.ip();
        let scope = tsig::Scope {
            qname: Some(&query.qname),
            peer: Some(ip),
        };
        let min_mac = self.config.tsig_min_mac;
        let signer = match tsig::verify_request(packet, keys, now, min_mac, &scope) {
            tsig::Verified::Unsigned => None,
            tsig::Verified::Malformed => return only(Rcode::FORMERR),
            tsig::Verified::Signed(signer) => Some(signer),
            tsig::Verified::Failed(failure) => {
                tracing::info!(peer = %peer.addr, zone = %query.qname, error = failure.error, "zone transfer with a bad TSIG: NOTAUTH");
                let mut reply = render::rcode_only(packet, query, Rcode::NOTAUTH, max_udp);
                failure.append_to(&mut reply);
                return TcpReply::Messages(vec![reply]);
            }
        };
        if signer.is_none() && !self.config.axfr_allow.iter().any(|c| c.contains(ip)) {
            tracing::info!(peer = %peer.addr, zone = %query.qname, "zone transfer refused by the access list");
            return only(Rcode::REFUSED);
        }
        let Some(claim) = peer.begin_transfer() else {
            bump(&GUARD.axfr_busy_connection);
            tracing::info!(peer = %peer.addr, zone = %query.qname, "zone transfer refused: one already runs on this connection");
            return only(Rcode::REFUSED);
        };
        let Ok(slot) = self.transfers.clone().try_acquire_owned() else {
            bump(&GUARD.axfr_busy_global);
            tracing::info!(peer = %peer.addr, zone = %query.qname, "zone transfer refused: too many at once");
            return only(Rcode::REFUSED);
        };
        let (tx, mut rx) = mpsc::channel(TRANSFER_QUEUE);
        let first = transfer::FirstOptions {
            asked: super::edns_options::asked(packet),
            nsid: self.config.nsid.clone(),
            expire: None,
        };
        let sink = transfer::Sink::new(tx, signer).with_first_options(first);
        let (packet, query) = (packet.to_vec(), query.clone());
        match &self.transfer_store {
            Some(store) => spawn_run(store.clone(), packet, query, max_udp, sink, (claim, slot)),
            None => spawn_run(
                self.backend.clone(),
                packet,
                query,
                max_udp,
                sink,
                (claim, slot),
            ),
        }
        match rx.recv().await {
            Some(Ok(first)) => TcpReply::Stream { first, rest: rx },
            _ => TcpReply::Messages(Vec::new()),
        }
    }
}

/// Runs the transfer in a task of its own, holding `held` (the
/// connection's claim and the global slot) until it ends.
fn spawn_run<D: Backend, H: Send + 'static>(
    db: Arc<D>,
    packet: Vec<u8>,
    query: Query,
    max_udp: u16,
    sink: transfer::Sink,
    held: H,
) {
    tokio::spawn(async move {
        transfer::run(&*db, &packet, &query, max_udp, TRANSFER_TIMEOUT, sink).await;
        drop(held);
    });
}
