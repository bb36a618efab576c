//! Storage for mongodns: the MongoDB schema, its indexes, and every read and
//! write. See `docs/schema.md` for the contract other programs write to.
//!
//! ```text
//!  server ──reads──► Store (store.rs) ──► zones / nodes / meta
//!  importer, signer ──ZoneWriter (writer.rs)──┘
//!  zone transfers: the nodes of a version streamed from the cursor (transfer.rs)
//!  keys, signatures, NSEC/NSEC3 chains: dnssec.rs
//!  documents ◄──► values: schema.rs     names: name.rs     types: rtype.rs
//!  rdata well-formed (zone files, data read back): rdata.rs
//! ```
#![warn(missing_docs)]

pub mod civil;
pub mod dnssec;
pub mod lock;
pub mod name;
pub mod progress;
pub mod rdata;
pub mod rtype;
pub mod schema;
pub mod serial;
pub mod store;
pub mod testing;
pub mod transfer;
pub mod writer;

pub use mongodb::bson;
pub use name::{Name, NameError};
pub use progress::{JobProgress, ProgressReporter};
pub use rtype::RType;
pub use schema::{ChangeRecord, Node, RRset, ZoneInfo};
pub use store::{ReadFrom, Store, StoreError};
pub use writer::{
    BaselineWriter, Collected, NodeWrite, Switched, WriteMode, WriteStats, ZoneContent, ZoneWriter,
};
