//! A zone as an RFC 1035 master file, with its DNSSEC records when signed.
//!
//! ```text
//!  FullNode ─► "owner TTL IN TYPE rdata" lines: SOA first, then canonical
//!  order, each RRset followed by its RRSIGs. Each line is
//!  dns::presentation::record_text: well-known types in their usual
//!  presentation, every other type in RFC 3597 form (\# len hex).
//! ```

use backend_mongo::dnssec_store::FullNode;
use dns::presentation::record_text;
use dns::{Name, RType};
use std::fmt::Write as _;

/// Appends one record line.
fn push_line(out: &mut String, owner: &Name, ttl: u32, t: RType, rd: &[u8]) {
    out.push_str(&record_text(owner, ttl, t, rd));
    out.push('\n');
}

/// Appends a node's records and their RRSIGs (its SOA, when `skip_soa`,
/// already written first).
fn push_node(out: &mut String, n: &FullNode, skip_soa: bool) {
    for s in &n.rrsets {
        let t = s.rrset.rtype;
        if skip_soa && t == RType::SOA {
            continue;
        }
        for rd in &s.rrset.rdata {
            push_line(out, &n.name, s.rrset.ttl, t, rd);
        }
        for sig in &s.sigs {
            push_line(out, &n.name, s.rrset.ttl, RType::RRSIG, sig);
        }
    }
}

/// The master file of `nodes` (one version, canonical order) of `apex`.
pub fn master_file(apex: &Name, nodes: &[FullNode]) -> String {
    let mut out = String::with_capacity(nodes.len() * 120);
    let _ = writeln!(out, "$ORIGIN {apex}");
    if let Some(a) = nodes.iter().find(|n| n.name == *apex && !n.nsec3) {
        if let Some(soa) = a.get(RType::SOA) {
            for rd in &soa.rrset.rdata {
                push_line(&mut out, apex, soa.rrset.ttl, RType::SOA, rd);
            }
            for sig in &soa.sigs {
                push_line(&mut out, apex, soa.rrset.ttl, RType::RRSIG, sig);
            }
        }
    }
    for n in nodes {
        push_node(&mut out, n, n.name == *apex && !n.nsec3);
    }
    out
}
