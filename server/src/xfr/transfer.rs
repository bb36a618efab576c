//! Zone transfer over TCP: AXFR (RFC 5936), and IXFR (RFC 1995) from the
//! zone's journal when it reaches back to the client's serial, else with
//! the whole zone, streamed as the database cursor delivers the nodes.
//!
//! ```text
//!  (access list, TSIG, one transfer per connection, the global cap: admit.rs)
//!  Backend::settle_for_transfer (a resident copy of the version served
//!     being loaded: wait for it, boundedly; not counted in the timeout)
//!  qname the apex of a served zone? (one zone read) ── no ──► NOTAUTH
//!  IXFR with a serial not older than ours ──► one message: our SOA
//!  IXFR from a serial the journal reaches (Backend::journal_chain, its
//!     entries streamed a batch at a time) ──► SOA, per change: old SOA,
//!     removed, new SOA, added; SOA (journal.rs)
//!  (IXFR over UDP: udp_ixfr.rs, the same changes in one datagram or our SOA)
//!  apex SOA (point read) ─► Sink: SOA (AXFR: a first message of the SOA
//!    alone, sent before the cursor is opened)
//!    ─► zone_stream (one stored version) node by node ─► messages of up to
//!       16 KiB (packer.rs) sent as each fills: every record but the apex SOA (with RRSIGs)
//!    ─► version_deleting? ── yes ──► abort: no closing SOA, connection closed
//!    ─► SOA
//!  a record too large for a message, a fault after the first message:
//!  abort (never a transfer that looks complete but is not)
//! ```
//!
//! Records go one by one, so an RRset larger than a message spans messages.
//! Memory holds one cursor batch and one message, whatever the zone's
//! size. The version read is the one served when the transfer started,
//! whatever an importer writes meanwhile (docs/schema.md, "Writing"); if
//! that version began to be deleted while it was read, the transfer is
//! aborted, since the cursor may have missed nodes.

use super::journal::send_journal;
use super::packer::{Packer, MAX_MESSAGE_SIZE};
use crate::backend::Backend;
use crate::backend::StoreError;
use crate::guard::{bump, GUARD};
use crate::handler::Aborted;
use crate::pipeline::render;
use crate::tsig::TsigSigner;
use crate::wire::{Query, Rcode};
use dns::serial::{serial_gt, soa_serial};
use dns::{Name, Node, RRset, RType, ZoneInfo};
use futures::StreamExt;
use tokio::sync::mpsc;

/// Why a transfer stopped before its closing SOA.
#[derive(Debug, thiserror::Error)]
pub enum TransferError {
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A record does not fit in a message of its own.
    #[error("record {owner} {rtype} is too large for a transfer message")]
    Oversized {
        /// Its owner.
        owner: Name,
        /// Its type.
        rtype: RType,
    },
    /// The version being sent began to be deleted meanwhile.
    #[error("the zone version began to be deleted during the transfer")]
    Deleted,
    /// The transfer took longer than allowed.
    #[error("the transfer took too long")]
    TimedOut,
    /// The client went away.
    #[error("the connection closed")]
    Closed,
}

/// Where a transfer's messages go, in order, each signed if the request was.
pub struct Sink {
    tx: mpsc::Sender<Result<Vec<u8>, Aborted>>,
    signer: Option<TsigSigner>,
    /// Messages sent so far.
    pub(super) sent: usize,
    /// NSID / EXPIRE for the first message (edns/options.rs).
    first: FirstOptions,
}

/// What the first message of a transfer carries in its OPT, if asked.
#[derive(Clone, Debug, Default)]
pub struct FirstOptions {
    /// What the request asked for.
    pub asked: crate::edns::Asked,
    /// The server's NSID.
    pub nsid: Option<Vec<u8>>,
    /// The zone's SOA EXPIRE (set once the SOA is read).
    pub expire: Option<u32>,
}

impl Sink {
    /// Messages go to `tx`, signed by `signer` if any.
    pub fn new(tx: mpsc::Sender<Result<Vec<u8>, Aborted>>, signer: Option<TsigSigner>) -> Sink {
        Sink {
            tx,
            signer,
            sent: 0,
            first: FirstOptions::default(),
        }
    }

    /// The first message carries `first`'s options (as asked).
    pub fn with_first_options(mut self, first: FirstOptions) -> Sink {
        self.first = first;
        self
    }

    async fn send(&mut self, mut message: Vec<u8>) -> Result<(), TransferError> {
        if self.sent == 0 {
            let f = &self.first;
            let offer = crate::edns::Offer {
                nsid: f.nsid.as_deref(),
                expire: f.expire,
            };
            crate::edns::decorate(&mut message, f.asked, offer, MAX_MESSAGE_SIZE);
        }
        if let Some(signer) = self.signer.as_mut() {
            signer.sign(&mut message);
        }
        self.tx
            .send(Ok(message))
            .await
            .map_err(|_| TransferError::Closed)?;
        self.sent += 1;
        Ok(())
    }

    /// Sends `message`, if there is one.
    pub(super) async fn send_opt(&mut self, message: Option<Vec<u8>>) -> Result<(), TransferError> {
        match message {
            Some(m) => self.send(m).await,
            None => Ok(()),
        }
    }
}

/// Runs an AXFR or IXFR for `query`, sending its messages to `sink`; on a
/// failure, a single SERVFAIL if nothing was sent yet, else an abort.
pub async fn run<B: Backend>(
    backend: &B,
    packet: &[u8],
    query: &Query,
    max_udp: u16,
    timeout: std::time::Duration,
    mut sink: Sink,
) {
    backend.settle_for_transfer(&query.qname).await;
    let work = transfer(backend, packet, query, max_udp, &mut sink);
    let result = match tokio::time::timeout(timeout, work).await {
        Ok(r) => r,
        Err(_) => Err(TransferError::TimedOut),
    };
    let Err(error) = result else { return };
    let zone = &query.qname;
    match &error {
        TransferError::Closed => return,
        TransferError::Deleted => bump(&GUARD.axfr_aborted),
        TransferError::Oversized { .. } => bump(&GUARD.axfr_oversized),
        _ => {}
    }
    if sink.sent == 0 {
        tracing::warn!(%zone, %error, "transfer failed: SERVFAIL");
        let reply = render::rcode_only(packet, query, Rcode::SERVFAIL, max_udp);
        let _ = sink.send(reply).await;
    } else {
        tracing::warn!(%zone, %error, sent = sink.sent, "transfer aborted: connection closed without the closing SOA");
        let _ = sink.tx.send(Err(Aborted)).await;
    }
}

/// The transfer itself: the zone and its SOA, then every node.
async fn transfer<B: Backend>(
    backend: &B,
    packet: &[u8],
    query: &Query,
    max_udp: u16,
    sink: &mut Sink,
) -> Result<(), TransferError> {
    let mut pack = Packer::new(packet, query, max_udp);
    let Some((zone, soa)) = zone_and_soa(backend, query).await? else {
        let reply = render::rcode_only(packet, query, Rcode::NOTAUTH, max_udp);
        return sink.send(reply).await;
    };
    let Some(soa) = soa else {
        let reply = render::rcode_only(packet, query, Rcode::SERVFAIL, max_udp);
        return sink.send(reply).await;
    };
    sink.first.expire = crate::edns::options::soa_expire(&soa.rdata[0]);
    if query.qtype == RType::IXFR {
        // Up to date? Then the SOA is all we need (RFC 1995 §2).
        let current = soa_serial(&soa.rdata[0]);
        if let (Some(theirs), Some(ours)) = (query.ixfr_serial, current) {
            if !serial_gt(ours, theirs) {
                sink.send_opt(pack.push(&zone.apex, RType::SOA, soa.ttl, &soa.rdata[0])?)
                    .await?;
                return sink.send_opt(pack.finish()).await;
            }
            if let Some(chain) = backend.journal_chain(&zone, theirs).await? {
                return send_journal(&zone, &soa, chain, &mut pack, sink).await;
            }
            bump(&GUARD.ixfr_full);
        }
    }
    // An AXFR's opening SOA leaves alone, before the cursor is opened: its
    // first batch may take seconds for a large zone, the SOA is known
    // already. Not in an IXFR answered with the whole zone: there a first
    // message of our SOA alone reads as "up to date" (RFC 1995 §4) to a
    // client that judges by the first message.
    let soa_alone = query.qtype == RType::AXFR;
    let records = stream_zone(backend, &zone, (&soa, soa_alone), &mut pack, sink).await?;
    tracing::info!(zone = %zone.apex, records, messages = sink.sent, "zone transferred");
    Ok(())
}

/// The zone `query` names (`None`: not the apex of a served zone) and its
/// apex SOA (`None`: none found). One zone read: only a zone whose apex is
/// the name asked can answer, so its ancestors are never looked up. A
/// version is deleted only a grace period after a newer one replaced it;
/// if ours went away meanwhile, the version now served is read.
pub(super) async fn zone_and_soa<B: Backend>(
    backend: &B,
    query: &Query,
) -> Result<Option<(ZoneInfo, Option<std::sync::Arc<RRset>>)>, StoreError> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let Some(zone) = backend.find_zone(&query.qname).await? else {
            return Ok(None);
        };
        let apex = backend.get_node(&zone, &zone.apex).await?;
        let soa = apex.as_ref().and_then(|a| a.rrset(RType::SOA).cloned());
        if soa.is_some() || attempt >= 4 {
            return Ok(Some((zone, soa)));
        }
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    }
}

/// SOA (in a message of its own when `soa_alone`), every node as the
/// cursor delivers it, then — unless the version began to be deleted
/// meanwhile — the closing SOA. Returns the record count.
async fn stream_zone<B: Backend>(
    backend: &B,
    zone: &ZoneInfo,
    (soa, soa_alone): (&RRset, bool),
    pack: &mut Packer<'_>,
    sink: &mut Sink,
) -> Result<usize, TransferError> {
    let apex = &zone.apex;
    sink.send_opt(pack.push(apex, RType::SOA, soa.ttl, &soa.rdata[0])?)
        .await?;
    if soa_alone {
        sink.send_opt(pack.finish()).await?;
    }
    let mut records = 2;
    let mut nodes = backend.zone_stream(zone).await?;
    while let Some(node) = nodes.next().await {
        records += push_node(pack, sink, apex, &node?).await?;
    }
    if backend.version_deleting(zone).await? {
        return Err(TransferError::Deleted);
    }
    sink.send_opt(pack.push(apex, RType::SOA, soa.ttl, &soa.rdata[0])?)
        .await?;
    sink.send_opt(pack.finish()).await?;
    Ok(records)
}

/// Every record of `node` except the apex SOA; returns how many.
async fn push_node(
    pack: &mut Packer<'_>,
    sink: &mut Sink,
    apex: &Name,
    node: &Node,
) -> Result<usize, TransferError> {
    let mut count = 0;
    let mut sets: Vec<_> = node.rrsets.iter().collect();
    sets.sort_by_key(|r| r.rtype.0);
    for rrset in sets {
        if !(rrset.rtype == RType::SOA && node.name == *apex) {
            for rd in &rrset.rdata {
                sink.send_opt(pack.push(&node.name, rrset.rtype, rrset.ttl, rd)?)
                    .await?;
                count += 1;
            }
        }
        // A signed zone: the RRset's signatures (the apex SOA's included).
        if let Some(sigs) = node.rrsig(rrset.rtype) {
            for rd in &sigs.rdata {
                sink.send_opt(pack.push(&node.name, RType::RRSIG, rrset.ttl, rd)?)
                    .await?;
                count += 1;
            }
        }
    }
    Ok(count)
}
