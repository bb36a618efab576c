//! Queries signed with TSIG (RFC 8945): verified, answered unsigned,
//! the reply signed.
//!
//! ```text
//!  has a TSIG? ── no ──► None (the ordinary path)
//!  strip it ─► parse ── not a query ──► the error reply, unsigned
//!  verify_request (keys scoped to zones; no address known here)
//!     malformed ─► FORMERR
//!     bad key, MAC, time, truncation ─► NOTAUTH + TSIG error (TC if too big)
//!     signed ─► respond(unsigned) ─► sign_reply (TC if the TSIG does not fit)
//! ```
//!
//! The packet cache only ever holds and serves unsigned replies.

use super::{render, Responder, Transport};
use crate::backend::Backend;
use crate::tsig;
use crate::wire::{parse_query, Query, Rcode};
use dns::RType;
use std::net::IpAddr;

impl<B: Backend> Responder<B> {
    /// A query with a TSIG record (RFC 8945): verified, answered as the
    /// same query without it (so the packet cache only ever holds and serves
    /// unsigned replies), then the reply signed. A bad TSIG gets NOTAUTH with
    /// BADKEY, BADSIG, BADTIME or BADTRUNC; one that is not the last record,
    /// or whose MAC size the RFC forbids, FORMERR. `None`: no TSIG.
    pub(super) async fn respond_signed(
        &self,
        packet: &[u8],
        transport: Transport,
        peer: Option<IpAddr>,
    ) -> Option<Option<Vec<u8>>> {
        let config = &self.config;
        if !tsig::has_tsig(packet) {
            return None;
        }
        // Misplaced TSIG: the message as it came (its records are skipped).
        let unsigned = tsig::without_tsig(packet).unwrap_or_else(|| packet.to_vec());
        let max_udp = config.max_udp_size;
        let Ok(query) = parse_query(&unsigned) else {
            // Not a query we can answer: the error reply, unsigned.
            return Some(
                self.respond_uncached(&unsigned, transport, None, peer)
                    .await,
            );
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
                Some(notauth_reply(&unsigned, &query, failure, limit, max_udp))
            }
            tsig::Verified::Signed(_)
                if query.qtype == RType::IXFR
                    && transport == Transport::Udp
                    && self.admit_query(&unsigned, transport).is_ok() =>
            {
                // An IXFR for one of our zones: crate::xfr checks the TSIG
                // again and signs its reply itself. (A bad TSIG is NOTAUTH
                // above, for any name, as for every signed query.)
                return Some(self.ixfr_udp_reply(packet, peer).await);
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
}

/// NOTAUTH with the TSIG error of `failure`; over `limit`, the question
/// alone with TC (the whole error comes over TCP).
fn notauth_reply(
    unsigned: &[u8],
    query: &Query,
    failure: tsig::TsigFailure,
    limit: usize,
    max_udp: u16,
) -> Vec<u8> {
    let mut reply = render::rcode_only(unsigned, query, Rcode::NOTAUTH, max_udp);
    failure.append_to(&mut reply);
    if reply.len() > limit {
        reply = render::rcode_only(unsigned, query, Rcode::NOTAUTH, max_udp);
        reply[2] |= (crate::wire::flags::TC >> 8) as u8;
    }
    reply
}
