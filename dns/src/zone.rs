//! What is served of a zone, and what one published generation changed:
//! the values readers and writers pass, with no storage in them.
//!
//! ```text
//!  ZoneInfo { apex, ver (the content version served), gen, serial }
//!  ChangeRecord { zone, names (None: anything), signed }
//!     a writer publishes gen+1 ─► readers drop what the names held
//! ```

use crate::Name;

/// What the server needs of a zone document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZoneInfo {
    /// The apex name.
    pub apex: Name,
    /// The content version currently served (part of every node `_id`).
    pub ver: i64,
    /// The zone's generation: changes whenever any writer changed the zone.
    pub gen: i64,
    /// SOA serial as last written by a mongodns writer.
    pub serial: u32,
}

/// What one published generation changed: a zone and, unless the write was
/// too large to list, the owner names it wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChangeRecord {
    /// The zone written.
    pub zone: Name,
    /// The names written (new, changed, or empty non-terminals); `None`:
    /// anything may have changed.
    pub names: Option<Vec<Name>>,
    /// True when the writer signed what it wrote (a DNSSEC signer, or an
    /// importer signing through the signer library): signatures and the
    /// NSEC/NSEC3 chain around those names are already up to date, so
    /// `mongodns-sign resign --follow` has nothing to re-sign for them.
    pub signed: bool,
}
