//! Who may transfer a zone, and how many transfers run at once.
//!
//! ```text
//!  AXFR/IXFR over TCP, IXFR over UDP ─► admit: TSIG (the key known for
//!     this zone and address?): malformed ─► FORMERR; bad ─► NOTAUTH (+ error)
//!     ─► unsigned: peer in axfr_allow? (default: nobody) ── no ──► REFUSED
//!  TCP ─► this connection already transferring? ── yes ──► REFUSED
//!     ─► a transfer slot free (max_transfers)? ── no ──► REFUSED
//!     ─► spawn transfer::run (the transfer store, not the query path's
//!        database gate) ─► TcpReply::Stream: first message, then the rest
//!  UDP ─► ixfr_udp_reply ─► udp_ixfr::ixfr_over_udp:
//!     signed ─► a transfer slot free? ── no ──► REFUSED
//!        ─► the transfer store, within the client's size less the TSIG:
//!           the changes or our SOA alone ─► signed
//!     unsigned (admitted by address) ─► our SOA alone, read by the query
//!        path (packet and record caches, the database gate), no journal
//!     SERVFAIL on a fault or after query_timeout; a reply past the
//!     client's size: the question with TC
//! ```
//!
//! An IXFR over UDP is admitted as one over TCP: the journal's changes are
//! zone content, and a client the access list refuses gets REFUSED over
//! either (as Knot and BIND answer), not our SOA. A UDP source address is
//! not proven, so an unsigned request earns only what an SOA query would
//! (RFC 1995 §2 lets a server answer with its SOA alone: the client asks
//! over TCP, where the address is proven); a signed one takes a transfer
//! slot while its reads run, as a transfer over TCP does.

use super::transfer;
use super::udp_ixfr::{self, Reach, Room};
use crate::backend::Backend;
use crate::guard::{bump, GUARD};
use crate::handler::{TcpPeer, TcpReply, Transport};
use crate::pipeline::{render, Responder};
use crate::tsig::{self, TsigFailure, TsigSigner};
use crate::wire::{flags, Query, Rcode};
use dns::Name;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// Messages of one transfer built ahead of the socket.
const TRANSFER_QUEUE: usize = 4;

/// Time allowed for reading and packing a whole zone transfer.
pub(crate) const TRANSFER_TIMEOUT: Duration = backend_mongo::transfer::TRANSFER_MAX_TIME;

/// Why a transfer request is not served.
enum Refusal {
    /// A misplaced or malformed TSIG: FORMERR.
    Malformed,
    /// A TSIG that does not verify: NOTAUTH with its error (boxed: it is
    /// large, and rare).
    BadTsig(Box<TsigFailure>),
    /// Unsigned, from an address the access list does not hold: REFUSED.
    NotAllowed,
}

impl Refusal {
    fn rcode(&self) -> Rcode {
        match self {
            Refusal::Malformed => Rcode::FORMERR,
            Refusal::BadTsig(_) => Rcode::NOTAUTH,
            Refusal::NotAllowed => Rcode::REFUSED,
        }
    }

    /// Logs the refusal of a transfer over TCP (over UDP, where a spoofed
    /// source costs nothing, they are not logged).
    fn log(&self, peer: SocketAddr, zone: &Name) {
        match self {
            Refusal::BadTsig(f) => {
                tracing::info!(%peer, %zone, error = f.error, "zone transfer with a bad TSIG: NOTAUTH");
            }
            Refusal::NotAllowed => {
                tracing::info!(%peer, %zone, "zone transfer refused by the access list");
            }
            Refusal::Malformed => {}
        }
    }

    /// The reply saying so.
    fn reply(self, packet: &[u8], query: &Query, max_udp: u16) -> Vec<u8> {
        let mut reply = render::rcode_only(packet, query, self.rcode(), max_udp);
        if let Refusal::BadTsig(failure) = self {
            failure.append_to(&mut reply);
        }
        reply
    }

    /// The reply over UDP: as [`Refusal::reply`], or the question alone
    /// with TC when that passes `limit` (a NOTAUTH whose TSIG error does
    /// not fit comes whole over TCP).
    fn udp_reply(self, packet: &[u8], query: &Query, limit: usize, max_udp: u16) -> Vec<u8> {
        let rcode = self.rcode();
        let reply = self.reply(packet, query, max_udp);
        if reply.len() <= limit {
            return reply;
        }
        let mut reply = render::rcode_only(packet, query, rcode, max_udp);
        reply[2] |= (flags::TC >> 8) as u8;
        reply
    }
}

impl<B: Backend> Responder<B> {
    /// A transfer request from `peer` (`None`: not known, so only a TSIG
    /// admits it): the signer of its reply (`None`: unsigned), or why not.
    fn admit(
        &self,
        packet: &[u8],
        query: &Query,
        peer: Option<IpAddr>,
    ) -> Result<Option<TsigSigner>, Refusal> {
        let scope = tsig::Scope {
            qname: Some(&query.qname),
            peer,
        };
        let (keys, min_mac) = (&self.config.tsig_keys, self.config.tsig_min_mac);
        match tsig::verify_request(packet, keys, tsig::unix_now(), min_mac, &scope) {
            tsig::Verified::Signed(signer) => Ok(Some(signer)),
            tsig::Verified::Malformed => Err(Refusal::Malformed),
            tsig::Verified::Failed(failure) => Err(Refusal::BadTsig(Box::new(failure))),
            tsig::Verified::Unsigned => {
                let allow = &self.config.axfr_allow;
                match peer {
                    Some(ip) if allow.iter().any(|c| c.contains(ip)) => Ok(None),
                    _ => Err(Refusal::NotAllowed),
                }
            }
        }
    }

    /// An IXFR over UDP from `peer`, admitted as a transfer over TCP: the
    /// changes since the client's serial when they fit in one datagram,
    /// else our SOA alone ("ask again over TCP", RFC 1995 §2); signed when
    /// the request was. `None`: send nothing.
    pub(crate) async fn ixfr_udp_reply(
        &self,
        packet: &[u8],
        peer: Option<IpAddr>,
    ) -> Option<Vec<u8>> {
        let query = match self.admit_query(packet, Transport::Udp) {
            Ok(query) => query,
            Err(reply) => return reply,
        };
        let max_udp = self.config.max_udp_size;
        let limit = render::size_limit(&query, Transport::Udp, max_udp);
        let mut signer = match self.admit(packet, &query, peer) {
            Ok(signer) => signer,
            Err(refusal) => {
                return Some(refusal.udp_reply(packet, &query, limit, max_udp));
            }
        };
        let room = Room {
            limit: limit.saturating_sub(signer.as_ref().map_or(0, |s| s.record_len())),
            max_udp,
        };
        let first = transfer::FirstOptions {
            asked: query.asked(),
            nsid: self.config.nsid.clone(),
            expire: None,
        };
        let reply = match signer {
            Some(_) => match self.transfers.clone().try_acquire_owned() {
                Ok(_slot) => self.ixfr_from_store(packet, &query, room, &first).await,
                Err(_) => {
                    bump(&GUARD.axfr_busy_global);
                    render::rcode_only(packet, &query, Rcode::REFUSED, max_udp)
                }
            },
            None => {
                let reach = Reach::SoaAlone;
                let work =
                    udp_ixfr::ixfr_over_udp(&*self.backend, packet, &query, room, &first, reach);
                self.in_time(work, packet, &query).await
            }
        };
        Some(match signer.as_mut() {
            Some(s) => render::sign_reply(reply, packet, &query, s, limit, max_udp),
            None => reply,
        })
    }

    /// A signed IXFR over UDP answered from the transfer store (the journal
    /// included), within the query timeout.
    async fn ixfr_from_store(
        &self,
        packet: &[u8],
        query: &Query,
        room: Room,
        first: &transfer::FirstOptions,
    ) -> Vec<u8> {
        let reach = Reach::Journal;
        match &self.transfer_store {
            Some(store) => {
                let work = udp_ixfr::ixfr_over_udp(&**store, packet, query, room, first, reach);
                self.in_time(work, packet, query).await
            }
            None => {
                let work =
                    udp_ixfr::ixfr_over_udp(&*self.backend, packet, query, room, first, reach);
                self.in_time(work, packet, query).await
            }
        }
    }

    /// The reply `work` builds within the query timeout, else SERVFAIL.
    async fn in_time<E>(
        &self,
        work: impl Future<Output = Result<Vec<u8>, E>>,
        packet: &[u8],
        query: &Query,
    ) -> Vec<u8> {
        match tokio::time::timeout(self.config.query_timeout, work).await {
            Ok(Ok(reply)) => reply,
            _ => render::rcode_only(packet, query, Rcode::SERVFAIL, self.config.max_udp_size),
        }
    }

    /// A zone transfer: admitted here, then streamed by a task of its own.
    pub(crate) async fn transfer(&self, packet: &[u8], query: &Query, peer: &TcpPeer) -> TcpReply {
        let max_udp = self.config.max_udp_size;
        let only =
            |rcode| TcpReply::Messages(vec![render::rcode_only(packet, query, rcode, max_udp)]);
        let signer = match self.admit(packet, query, Some(peer.addr.ip())) {
            Ok(signer) => signer,
            Err(refusal) => {
                refusal.log(peer.addr, &query.qname);
                return TcpReply::Messages(vec![refusal.reply(packet, query, max_udp)]);
            }
        };
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
            asked: query.asked(),
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
