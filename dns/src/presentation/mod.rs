//! Presentation format (RFC 1035 §5 master files, RFC 3597 generic rdata):
//! the parser from text to wire bytes and the printer back, written once
//! for the importer, the signer's export and the server.
//!
//! ```text
//!  text ─► lexer.rs: tokens (quotes, escapes, ( ... ), comments)
//!     zone file:  reader.rs ZoneFileReader ─► Record (+ file:line); $INCLUDE: include.rs
//!     one line:   record.rs parse_record ─► Rr     (owner [TTL] [class] type rdata)
//!     one rdata:  rdata.rs parse_rdata / rdata_from_text ─► wire bytes
//!                   as the type's descriptor (crate::types) says: its fields one by
//!                   one (layout.rs) on a Fields cursor (fields.rs); LOC: loc.rs;
//!                   SVCB/HTTPS: svcb.rs; APL: apl.rs; IPSECKEY: ipseckey.rs;
//!                   names, numbers, TTLs, base16/32/64: text.rs (on crate::encoding)
//!  wire ─► print/ rdata_text / record_text ─► text that parses back the same
//!  errors: error.rs (ParseError with file:line, SyntaxError for one string)
//! ```
//!
//! Nothing here knows about storage: the importer (`loadtools`) and the
//! signer's export (`signer`) turn records into nodes and back.

mod apl;
mod error;
mod fields;
mod include;
mod ipseckey;
mod layout;
mod lexer;
mod loc;
mod print;
mod rdata;
mod reader;
mod record;
#[cfg(test)]
mod round_trip;
mod svcb;
#[cfg(test)]
mod tests;
mod text;

pub use error::{ParseError, SyntaxError};
pub use include::allow_include_dirs;
pub use lexer::{tokenize, Token, MAX_ENTRY_BYTES};
pub use print::{rdata_text, record_text};
pub use rdata::{parse_rdata, rdata_from_text};
pub use reader::{Location, Record, ZoneFileReader, MAX_INCLUDE_DEPTH};
pub use record::{parse_record, Rr, CLASS_IN};
pub use text::MAX_TTL;
