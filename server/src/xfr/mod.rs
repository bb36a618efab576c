//! Zone transfers out of the server: AXFR (RFC 5936) and IXFR (RFC 1995),
//! over TCP and, for IXFR, over UDP.
//!
//! ```text
//!  pipeline (Responder)
//!    ├─ TCP, qtype AXFR/IXFR ─► admit.rs: Responder::transfer
//!    │     TSIG or the access list ─► one per connection ─► a global slot
//!    │     ─► a task of its own: transfer::run ─► TcpReply::Stream
//!    │          settle_for_transfer (a resident copy loading: wait)
//!    │          zone_and_soa ── not an apex ──► NOTAUTH
//!    │          IXFR, up to date ──► our SOA
//!    │          IXFR, the journal reaches their serial ──► journal.rs:
//!    │             SOA, per change (old SOA, removed, new SOA, added), SOA
//!    │          else the whole version, node by node from its cursor
//!    │             (an AXFR's opening SOA alone first) ─► SOA
//!    │          messages filled record by record (packer.rs); the first
//!    │          carries NSID / EXPIRE as asked (crate::edns); each signed
//!    │          when the request was (TSIG)
//!    └─ UDP, qtype IXFR ─► admit.rs: Responder::ixfr_udp_reply
//!          admitted as over TCP ─► udp_ixfr.rs: signed, the journal's
//!          changes in one datagram when they fit; else our SOA alone
//!  reads: the transfer store (the store behind resident copies), never
//!  the query path's database gate; a version deleted meanwhile ─► abort
//! ```

mod admit;
mod journal;
mod packer;
pub mod transfer;
mod udp_ixfr;
