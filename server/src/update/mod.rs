//! DNS UPDATE (RFC 2136) over UDP and TCP: authorised by TSIG (RFC 8945),
//! applied as one change-set, the reply signed.
//!
//! ```text
//!  opcode 5 ─► TSIG stripped ─► parse_update (message.rs)  FORMERR / NOTZONE
//!     no key may update (the default) ─► REFUSED
//!     TSIG: none ─► REFUSED │ bad, or a key whose zones= or from= leave this
//!     zone or client out ─► NOTAUTH + TSIG error │ malformed ─► FORMERR
//!     signed by a key with from=, over UDP ─► TC (ask again over TCP)
//!     the same signed request seen in the last 600 s (replay.rs) ─► its
//!        first reply, or none while it is applied; never applied twice
//!     signed by a key without `update`, or not for this zone ─► REFUSED
//!     an update of a type the signer maintains (DNSKEY, NSEC3PARAM, …) ─► REFUSED
//!     an RRset it would make too large for one message ─► REFUSED, nothing written
//!  over UDP the rest runs as a task: no reply within udp_wait (the zone
//!     lock held by another writer) ─► none now, the update goes on
//!     the zone not served here ─► NOTAUTH
//!  signer::edit::apply(ChangeSet) on a task of its own (write_task.rs: a
//!     client that leaves never cuts it): one change-set,
//!     prerequisites checked under the zone lock (NXDOMAIN, YXDOMAIN,
//!     NXRRSET, YXRRSET), signed in it when the zone is secured
//!  reply: header + zone section, TSIG-signed ─► NOERROR
//!  a storage fault ─► SERVFAIL
//!  at start (warm.rs): the signers of the secured zones update keys name,
//!     chains read in the background, for the first UPDATE to take up
//! ```
//!
//! Nothing here knows MongoDB beyond calling the writer: the store is the
//! one zone transfers read from.

pub mod message;
pub mod replay;
pub mod warm;

pub use message::{is_update, parse_update, UpdateRequest};
pub use replay::Replays;

use crate::guard::{InProgress, UPDATES_IN_PROGRESS};
use crate::tsig::{self, TsigKey};
use crate::wire::{Rcode, HEADER_LEN};
use backend_mongo::{Store, StoreError};
use dns::Name;
use replay::Sight;
use std::time::Instant;

/// What an UPDATE handler needs from the server's settings.
pub struct UpdateSettings<'a> {
    /// The TSIG keys; those with `update` may change their zones.
    pub keys: &'a [TsigKey],
    /// Shortest truncated MAC accepted.
    pub min_mac: usize,
    /// Signed requests seen lately (a replay is not applied again).
    pub replays: &'a Replays,
    /// The request came over TCP (its source address proven).
    pub tcp: bool,
    /// Longest wait for the reply to an UPDATE over UDP; the update goes
    /// on past it, and a retransmission gets its reply.
    pub udp_wait: std::time::Duration,
}

/// Answers an UPDATE message from `peer` (when the path knows the client;
/// see the module documentation); `None`: too short to answer at all.
pub async fn answer(
    store: Option<&Store>,
    packet: &[u8],
    settings: &UpdateSettings<'_>,
    peer: Option<std::net::IpAddr>,
) -> Option<Vec<u8>> {
    if packet.len() < HEADER_LEN {
        return None;
    }
    let unsigned = tsig::without_tsig(packet).unwrap_or_else(|| packet.to_vec());
    let request = match parse_update(&unsigned) {
        Ok(r) => r,
        Err(refusal) => {
            tracing::debug!(why = %refusal.why, rcode = refusal.rcode.0, "UPDATE refused");
            return Some(header_reply(&unsigned, None, refusal.rcode));
        }
    };
    if !settings.keys.iter().any(|k| k.update) {
        tracing::debug!(zone = %request.change.zone, "UPDATE refused: no key may update (updates are off)");
        return Some(reply(&unsigned, &request, Rcode::REFUSED));
    }
    // A key limited to address blocks (`from=`) applies only to clients
    // in them: from elsewhere it is unknown here (NOTAUTH, BADKEY).
    let scope = tsig::Scope {
        qname: Some(&request.change.zone),
        peer,
    };
    let mut signer = match tsig::verify_request(
        packet,
        settings.keys,
        tsig::unix_now(),
        settings.min_mac,
        &scope,
    ) {
        tsig::Verified::Signed(signer) => signer,
        tsig::Verified::Unsigned => {
            tracing::debug!(zone = %request.change.zone, "UPDATE refused: not signed");
            return Some(reply(&unsigned, &request, Rcode::REFUSED));
        }
        tsig::Verified::Malformed => return Some(reply(&unsigned, &request, Rcode::FORMERR)),
        tsig::Verified::Failed(failure) => {
            tracing::debug!(zone = %request.change.zone, error = failure.error, "UPDATE with a bad TSIG: NOTAUTH");
            let mut out = reply(&unsigned, &request, Rcode::NOTAUTH);
            failure.append_to(&mut out);
            return Some(out);
        }
    };
    if !signer.key().from.is_empty() && !settings.tcp {
        // The address `from=` judges is proven over TCP only: TC says
        // "ask again over TCP" (RFC 2136 §3.8, RFC 1035 §4.2.1).
        let mut out = reply(&unsigned, &request, Rcode::NOERROR);
        out[2] |= (crate::wire::flags::TC >> 8) as u8;
        signer.sign(&mut out);
        return Some(out);
    }
    let key_name = signer.key().name.as_wire().to_vec();
    let ticket = match settings
        .replays
        .sight(&key_name, signer.request_mac(), Instant::now())
    {
        Sight::New(ticket) => ticket,
        Sight::InFlight => return None,
        Sight::Answered(first) => return Some(first),
        Sight::Full => {
            tracing::warn!(zone = %request.change.zone, "UPDATE refused: too many signed updates in the last 10 minutes");
            let mut out = reply(&unsigned, &request, Rcode::REFUSED);
            signer.sign(&mut out);
            return Some(out);
        }
    };
    let work = finish(store.cloned(), unsigned, request, signer, ticket);
    if settings.tcp {
        return Some(work.await);
    }
    // Over UDP the update runs as a task of its own, and the datagram's
    // handler (holding a UDP miss permit) waits for it at most `udp_wait`:
    // a zone lock held by another writer does not hold UDP back. The
    // client's retransmission then gets the reply once it is known.
    let task = tokio::spawn(work);
    match tokio::time::timeout(settings.udp_wait, task).await {
        Ok(Ok(out)) => Some(out),
        _ => None,
    }
}

/// Applies an authorised request and builds its signed reply, kept for
/// its replays by `ticket`.
async fn finish(
    store: Option<Store>,
    unsigned: Vec<u8>,
    request: UpdateRequest,
    mut signer: tsig::TsigSigner,
    ticket: replay::Ticket,
) -> Vec<u8> {
    let _counted = InProgress::count(&UPDATES_IN_PROGRESS);
    let rcode = match signer.key().update {
        false => {
            tracing::info!(zone = %request.change.zone, key = %signer.key().name, "UPDATE refused: the key may not update");
            Rcode::REFUSED
        }
        true => match signer_owned(&request) {
            Some(t) => {
                tracing::info!(zone = %request.change.zone, key = %signer.key().name, rtype = %t, "UPDATE refused: the signer maintains that type");
                Rcode::REFUSED
            }
            None => apply(store.as_ref(), &request, &signer.key().name).await,
        },
    };
    let mut out = reply(&unsigned, &request, rcode);
    signer.sign(&mut out);
    ticket.answered(&out);
    out
}

/// The first type among the updates that the signer maintains (RRSIG,
/// NSEC, NSEC3, NSEC3PARAM, DNSKEY, CDS, CDNSKEY): refused in every zone,
/// the whole message with it.
fn signer_owned(request: &UpdateRequest) -> Option<dns::RType> {
    request
        .change
        .edits
        .iter()
        .filter_map(|e| e.rtype())
        .find(|t| t.is_signer_owned())
}

/// Applies the change-set; the reply's rcode.
async fn apply(store: Option<&Store>, request: &UpdateRequest, key: &Name) -> Rcode {
    let Some(store) = store else {
        return Rcode::SERVFAIL;
    };
    let zone = &request.change.zone;
    match store.find_zone(zone).await {
        Ok(Some(_)) => {}
        Ok(None) => return Rcode::NOTAUTH,
        Err(e) => {
            tracing::warn!(%zone, error = %e, "UPDATE: the zone could not be read");
            return Rcode::SERVFAIL;
        }
    }
    // On a task of its own: a client closing its TCP connection never
    // cuts the change-set half written (crate::write_task).
    let (owned, change) = (store.clone(), request.change.clone());
    let applied =
        crate::write_task::to_end(async move { signer::edit::apply(&owned, &change).await }).await;
    let applied = match applied {
        Ok(applied) => applied,
        Err(e) => {
            tracing::error!(%zone, %key, error = %e, "UPDATE: the write's task failed");
            return Rcode::SERVFAIL;
        }
    };
    match applied {
        Ok(summary) => match summary.unmet {
            Some(unmet) => {
                tracing::debug!(%zone, %key, %unmet, "UPDATE: a prerequisite failed");
                Rcode(u16::from(unmet.rcode()))
            }
            None => {
                tracing::info!(%zone, %key, edits = request.change.edits.len(), serial = summary.serial, "UPDATE applied");
                Rcode::NOERROR
            }
        },
        Err(signer::SignError::Store(StoreError::TooLarge(why))) => {
            tracing::info!(%zone, %key, %why, "UPDATE refused");
            Rcode::REFUSED
        }
        Err(e) => {
            tracing::warn!(%zone, %key, error = %e, "UPDATE failed");
            Rcode::SERVFAIL
        }
    }
}

/// The reply to `request`: its header and zone section, `rcode`.
fn reply(unsigned: &[u8], request: &UpdateRequest, rcode: Rcode) -> Vec<u8> {
    header_reply(unsigned, Some(request), rcode)
}

/// A reply header (QR, opcode UPDATE, `rcode`), with the zone section when
/// the request could be read.
fn header_reply(unsigned: &[u8], request: Option<&UpdateRequest>, rcode: Rcode) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    out.extend_from_slice(&unsigned[0..2]);
    let flags: u16 = 0x8000 | (u16::from(message::OPCODE_UPDATE) << 11) | (rcode.0 & 0xF);
    out.extend_from_slice(&flags.to_be_bytes());
    let zocount = u16::from(request.is_some());
    for count in [zocount, 0, 0, 0] {
        out.extend_from_slice(&count.to_be_bytes());
    }
    if let Some(r) = request {
        out.extend_from_slice(&unsigned[r.zone_section.clone()]);
    }
    out
}
