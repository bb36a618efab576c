//! mongodns load tools: the importer, zonegen, perf and the seed scenario —
//! those four jobs only.
//!
//! ```text
//!  importer: dns::presentation (master file ─► Record) ─► import (validate, group,
//!            bulk write) ─► backend_mongo::ZoneWriter     [mongodns-import]
//!  zonegen:  deterministic synthetic zones and query files [mongodns-zonegen]
//!  perf:     a dnsperf-style load generator                [mongodns-perf]
//!  scenario: the seed replayed with all of the above       [mongodns-perf scenario]
//! ```
#![warn(missing_docs, unreachable_pub)]

pub mod import;
pub mod perf;
pub mod scenario;
pub mod zonegen;
