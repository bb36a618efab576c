//! DNS wire format: reading queries and writing replies.
//!
//! ```text
//!  bytes ──parse_query──► Ok(Query) | Err(QueryError::{Drop, Reply(rcode)})
//!  received messages ──walk::{read_name, records}──► names, RecordAt
//!  Query + sections ──MessageWriter──► bytes (compressed, truncated by RRset)
//!  OPT record ──crate::edns──► Query::edns (read once, in parse_query)
//! ```
//!
//! Only what an authoritative server needs: one question, an optional OPT
//! record, and replies built RRset by RRset within a size limit.

pub mod query;
pub mod walk;
pub mod writer;

pub use crate::edns::Edns;
pub use query::{parse_query, Query, QueryError};
pub use walk::read_name;
pub use writer::{MessageWriter, Section};

/// Response codes: the model's one table (`dns::rcode`).
pub use dns::Rcode;

/// Header flag bits (second 16-bit word of the header).
pub mod flags {
    /// This message is a response.
    pub const QR: u16 = 0x8000;
    /// Authoritative answer.
    pub const AA: u16 = 0x0400;
    /// Truncated.
    pub const TC: u16 = 0x0200;
    /// Recursion desired.
    pub const RD: u16 = 0x0100;
    /// Recursion available.
    pub const RA: u16 = 0x0080;
    /// Authentic data.
    pub const AD: u16 = 0x0020;
    /// Checking disabled.
    pub const CD: u16 = 0x0010;
}

/// Class IN.
pub const CLASS_IN: u16 = 1;
/// Class CH (chaos).
pub const CLASS_CH: u16 = 3;
/// Class ANY (query only).
pub const CLASS_ANY: u16 = 255;
/// Size of the DNS header.
pub const HEADER_LEN: usize = 12;
