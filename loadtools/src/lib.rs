//! mongodns load tools: the zone-file parser and the importer.
//!
//! ```text
//!  zonefile (master file ─► Record) ─► import (validate, group, bulk write)
//!                                          └─► backend_mongo::ZoneWriter
//! ```
#![warn(missing_docs)]

pub mod import;
pub mod perf;
pub mod scenario;
pub mod signed_check;
pub mod zonefile;
pub mod zonegen;
