//! The DNS data model of mongodns, with no storage: what a name, a type and
//! well-formed rdata are, the text encodings, the presentation format (zone
//! files), SOA serials and the DNSSEC wire maths. `backend-mongo` stores
//! these values in MongoDB; crates that need only the model (the load
//! generator, tests) depend on this crate alone and do not link the MongoDB
//! driver.
//!
//! ```text
//!  names: name.rs (Name, the two escapings)   types: rtype.rs   rcodes: rcode.rs
//!  one descriptor per record type (layout, compression, additional): types.rs
//!  rdata well-formed: rdata.rs                SOA serials, RFC 1982: serial.rs
//!  base64 / hex / base32hex: encoding.rs      dates ⇄ Unix days: civil.rs
//!  key tag, DS, NSEC3 hash, type bitmaps, RRSIG fields: dnssec.rs
//!  an RRset: rrset.rs      a name's RRsets and signatures: node.rs
//!  a zone as served, a generation's change: zone.rs
//!  record edits by RFC 2136's rules: edit.rs
//!  presentation format, text ⇄ wire (zone files, one record, one rdata):
//!    presentation/ (parser and printer)
//!
//!  may depend on: std, ring, thiserror — never on backend-mongo or a driver
//! ```
#![warn(missing_docs, unreachable_pub)]

pub mod civil;
pub mod dnssec;
pub mod edit;
pub mod encoding;
pub mod journal;
pub mod name;
pub mod node;
pub mod presentation;
pub mod rcode;
pub mod rdata;
pub mod rrset;
pub mod rtype;
pub mod serial;
pub mod types;
pub mod zone;

pub use name::{Name, NameError};
pub use node::Node;
pub use rcode::Rcode;
pub use rrset::RRset;
pub use rtype::RType;
pub use types::{Field, Rdata, TypeInfo};
pub use zone::{ChangeRecord, ZoneInfo};
