//! One owner name's data in one zone version: its RRsets and, in a signed
//! zone, their signatures.
//!
//! ```text
//!  Node { name, rrsets: [RRset…], sigs: [RRSIG RRset per covered type] }
//!     rrset(type) ─► the RRset      rrsig(covered) ─► its signatures
//!     no RRsets ─► an empty non-terminal
//! ```

use crate::{Name, RRset, RType};
use std::sync::Arc;

/// All RRsets at one owner name of one zone version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    /// The owner name.
    pub name: Name,
    /// RRsets, in no particular order. Empty for an empty non-terminal.
    pub rrsets: Vec<Arc<RRset>>,
    /// Signatures (DNSSEC), one RRSIG RRset per covered RRset that has any:
    /// `rtype` is RRSIG, `ttl` the covered RRset's. Empty in unsigned zones.
    pub sigs: Vec<Arc<RRset>>,
}

impl Node {
    /// The RRSIGs covering `covered`, as an RRSIG RRset, if there are any.
    pub fn rrsig(&self, covered: RType) -> Option<&Arc<RRset>> {
        self.sigs.iter().find(|s| {
            s.rdata
                .first()
                .is_some_and(|rd| rd.len() >= 2 && u16::from_be_bytes([rd[0], rd[1]]) == covered.0)
        })
    }

    /// The RRset of `rtype`, if the node has one.
    pub fn rrset(&self, rtype: RType) -> Option<&Arc<RRset>> {
        self.rrsets.iter().find(|r| r.rtype == rtype)
    }

    /// True for an empty non-terminal (a node with no data of its own).
    pub fn is_empty_non_terminal(&self) -> bool {
        self.rrsets.is_empty()
    }
}
