//! One RRset as mongodns holds it: a type, one TTL, and each record's rdata
//! in uncompressed wire format.
//!
//! ```text
//!  RRset { rtype: MX, ttl: 300, rdata: [wire bytes, …] }
//!     stored by backend-mongo (docs/schema.md), edited by edit.rs
//! ```

use crate::RType;

/// One RRset: TTL and rdata in uncompressed wire format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RRset {
    /// The record type.
    pub rtype: RType,
    /// TTL in seconds.
    pub ttl: u32,
    /// Each record's rdata, uncompressed wire format.
    pub rdata: Vec<Box<[u8]>>,
}

impl RRset {
    /// An RRset of these records (each rdata copied).
    pub fn of(rtype: RType, ttl: u32, rdata: &[&[u8]]) -> RRset {
        RRset {
            rtype,
            ttl,
            rdata: rdata.iter().map(|r| Box::<[u8]>::from(*r)).collect(),
        }
    }

    /// True when it holds the record `rd`.
    pub fn contains(&self, rd: &[u8]) -> bool {
        self.rdata.iter().any(|r| r[..] == *rd)
    }
}
