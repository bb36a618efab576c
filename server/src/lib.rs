//! mongodns: an authoritative DNS server whose zones live in MongoDB.
//!
//! ```text
//!  frontend (UDP/TCP sockets, framing) ─► pipeline (parse ─► stages ─► render)
//!                                            │ needs data
//!                                            ▼
//!          resident::ResidentZones (whole zones in memory, off by default)
//!                                            ▼
//!                cache::RecordCache ─► backend::Backend ─► backend_mongo::Store
//!                      ▲
//!                zones::ZoneRegistry (which zones, at which generation;
//!                                     polled from the store)
//! ```
#![warn(missing_docs, unreachable_pub)]

pub mod api;
pub mod backend;
pub mod cache;
pub mod catalog;
pub mod cidr;
pub mod config;
pub mod control;
pub mod edns;
pub mod frontend;
pub mod guard;
pub mod handler;
pub mod http;
pub mod notify;
pub mod observe;
pub mod pipeline;
pub mod querylog;
pub mod ratelog;
pub mod resident;
pub mod rrl;
pub mod tsig;
pub mod update;
pub mod wire;
pub mod write_task;
pub mod xfr;
pub mod zones;
