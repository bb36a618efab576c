//! Storage for mongodns: the MongoDB schema, its indexes, and every read and
//! write. See `docs/schema.md` for the contract other programs write to.
//!
//! ```text
//!  server ──reads──► Store (store.rs) ──► zones / nodes / meta
//!  importer, signer ──ZoneWriter (writer/)──┘
//!  the HTTP API's reads: zones and a version's nodes streamed (api_reads.rs)
//!  zone transfers: the nodes of a version streamed from the cursor (transfer.rs)
//!  resident zones: a version with its denial keys, names read again (resident.rs)
//!  keys, signatures, NSEC/NSEC3 chains as documents and their reads:
//!    dnssec_store/ (their writes: writer/signed_nodes.rs, publish_in_place.rs)
//!  key and signing policies, the signing service's reads: policy.rs, signing.rs
//!  documents ◄──► values: schema.rs      writers' lease: lock.rs
//!  job progress documents: progress.rs
//!  the test database: testing.rs (feature `testing`, for tests only)
//!
//!  the values stored (Name, RType, rdata checks, serials, encodings, DNSSEC
//!  wire maths) are the `dns` crate (dns/), re-exported here
//!  so that `backend_mongo::Name` and the old module paths keep working
//! ```
//!
//! This folder holds two crates with a border between them: `dns`
//! (`dns/`, no MongoDB) and this one, which depends on it and
//! on the MongoDB driver. Code that needs only the model depends on `dns`.
#![warn(missing_docs, unreachable_pub)]

pub mod api_reads;
pub mod dnssec_store;
pub mod lock;
pub mod policy;
pub mod progress;
pub mod resident;
pub mod schema;
mod signing;
pub mod store;
#[cfg(feature = "testing")]
pub mod testing;
pub mod transfer;
pub mod writer;

pub use dns::{civil, name, rdata, rtype, serial};

/// The old path of the DNSSEC helpers: the storage of `dnssec_store` and the
/// wire maths and encodings of the `dns` crate, so existing imports compile.
pub mod dnssec {
    pub use crate::dnssec_store::*;
    pub use dns::dnssec::*;
    pub use dns::encoding::{base32hex, from_base32hex, from_hex, to_hex};
}

pub use dns;
pub use mongodb::bson;
pub use name::{Name, NameError};
pub use progress::{JobProgress, ProgressReporter};
pub use rtype::RType;
pub use schema::{ChangeRecord, Node, RRset, ZoneInfo};
pub use store::{ReadFrom, Store, StoreError, POINT_READS_MAX};
pub use writer::{
    BaselineWriter, Collected, DeletedZone, EditSummary, NodeWrite, Switched, WriteMode,
    WriteStats, ZoneContent, ZoneEdit, ZoneSettings, ZoneWriter,
};
