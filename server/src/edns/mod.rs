//! EDNS (RFC 6891): a query's OPT record read once, a reply's written once.
//!
//! ```text
//!  query bytes
//!    ├─ parse_query's walk ─► request::read_opt ─► Query::edns: Edns
//!    │     { udp_size, version, DO, asked: options::Asked }
//!    │     misplaced, second, cut options ─► FORMERR; version ≠ 0 ─► BADVERS
//!    └─ packet cache (before any parse) ─► request::opt_ending_at: the same
//!          Edns from an OPT ending the query, no allocation, else no key
//!  reply
//!    ├─ MessageWriter::finish ─► reply::write_opt (our UDP size, DO
//!    │     echoed, extended rcode, EDE reserved ahead)
//!    └─ afterwards ─► options::decorate (NSID, EXPIRE as asked) and
//!          options::add_ede (Stale Answer) ─► reply::add_option
//! ```
//!
//! Where to add an option: `options.rs` alone (its code, what the query's
//! option notes, what the reply carries).

pub mod options;
pub mod reply;
pub mod request;
#[cfg(test)]
mod tests;

pub use options::{add_ede, decorate, Asked, Offer};
pub use reply::reply_edns;
pub use request::{Edns, OptHeader};
