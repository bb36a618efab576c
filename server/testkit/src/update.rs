//! DNS UPDATE messages built by hand (RFC 2136 §2), for the tests and
//! benchmarks that send them without nsupdate; the caller signs them.
//!
//! ```text
//!  update_message(id, zone, prerequisites, updates)
//!     ─► header (opcode 5) ─► zone section (zone SOA IN)
//!     ─► prerequisite RRs ─► update RRs ─► bytes (no TSIG yet)
//! ```

use backend_mongo::Name;

/// One record of an UPDATE message, as it goes on the wire.
#[derive(Clone, Debug)]
pub struct UpdateRr {
    /// Its owner, absolute.
    pub owner: String,
    /// TYPE.
    pub rtype: u16,
    /// CLASS: IN adds, NONE deletes records, ANY deletes RRsets or names
    /// (and in prerequisites asks whether they exist).
    pub class: u16,
    /// TTL.
    pub ttl: u32,
    /// RDATA, uncompressed.
    pub rdata: Vec<u8>,
}

fn wire_name(name: &str) -> Vec<u8> {
    let name: Name = name.parse().expect("a valid name");
    name.as_wire().to_vec()
}

/// An UPDATE of `zone` with `prerequisites` and `updates`, unsigned.
pub fn update_message(
    id: u16,
    zone: &str,
    prerequisites: &[UpdateRr],
    updates: &[UpdateRr],
) -> Vec<u8> {
    let count = |n: usize| u16::try_from(n).expect("fewer than 65536 records");
    let mut m = id.to_be_bytes().to_vec();
    m.extend_from_slice(&[0x28, 0, 0, 1]);
    m.extend_from_slice(&count(prerequisites.len()).to_be_bytes());
    m.extend_from_slice(&count(updates.len()).to_be_bytes());
    m.extend_from_slice(&[0, 0]);
    m.extend(wire_name(zone));
    m.extend_from_slice(&[0, 6, 0, 1]);
    for r in prerequisites.iter().chain(updates) {
        m.extend(wire_name(&r.owner));
        m.extend_from_slice(&r.rtype.to_be_bytes());
        m.extend_from_slice(&r.class.to_be_bytes());
        m.extend_from_slice(&r.ttl.to_be_bytes());
        m.extend_from_slice(&count(r.rdata.len()).to_be_bytes());
        m.extend_from_slice(&r.rdata);
    }
    m
}
