//! Storage for mongodns: the MongoDB schema, its indexes, and every read and
//! write. See `docs/schema.md` for the contract other programs write to.
#![warn(missing_docs)]

pub mod name;
pub mod rtype;

pub use name::{Name, NameError};
pub use rtype::RType;
