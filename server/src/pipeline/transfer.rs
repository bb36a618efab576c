//! Zone transfer over TCP: AXFR (RFC 5936), and IXFR (RFC 1995) answered
//! with the whole zone.
//!
//! ```text
//!  peer in the access list? ── no ──► REFUSED
//!  qname the apex of a served zone? ── no ──► NOTAUTH
//!  IXFR with a serial not older than ours ──► one message: our SOA
//!  (IXFR over UDP: ixfr_over_udp, our SOA alone: "use TCP")
//!  zone_nodes (one stored version: a consistent snapshot)
//!    ─► messages of up to 16 KiB: SOA, every record but the apex SOA (with
//!       RRSIGs in a signed zone), SOA
//! ```
//!
//! Records go one by one, so an RRset larger than a message spans messages.
//! The whole transfer is built before the first byte is sent; the version
//! read is the one served when the transfer started, whatever an importer
//! writes meanwhile (docs/schema.md, "Writing").

use super::lookup;
use super::render;
use crate::backend::Backend;
use crate::wire::{flags, MessageWriter, Query, Rcode, Section};
use backend_mongo::{Name, Node, RType, StoreError};
use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;

/// Largest message of a transfer (RFC 5936 allows up to 65535).
const MESSAGE_SIZE: usize = 16 * 1024;

/// An address block, `192.0.2.0/24` or `2001:db8::/32`; a bare address
/// is a single host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    addr: IpAddr,
    prefix: u8,
}

impl Cidr {
    /// The blocks allowed to transfer zones by default: loopback only.
    pub fn loopback() -> Vec<Cidr> {
        vec![
            Cidr {
                addr: IpAddr::from([127, 0, 0, 0]),
                prefix: 8,
            },
            Cidr {
                addr: IpAddr::from([0u16, 0, 0, 0, 0, 0, 0, 1]),
                prefix: 128,
            },
        ]
    }

    /// Every address (for a transfer authorised by TSIG).
    pub fn everything() -> Vec<Cidr> {
        vec![
            Cidr {
                addr: IpAddr::from([0, 0, 0, 0]),
                prefix: 0,
            },
            Cidr {
                addr: IpAddr::from([0u16; 8]),
                prefix: 0,
            },
        ]
    }

    /// True if `ip` is inside the block (IPv4-mapped IPv6 counts as IPv4).
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        match (self.addr, ip) {
            (IpAddr::V4(a), IpAddr::V4(b)) => prefix_eq(&a.octets(), &b.octets(), self.prefix),
            (IpAddr::V6(a), IpAddr::V6(b)) => prefix_eq(&a.octets(), &b.octets(), self.prefix),
            _ => false,
        }
    }
}

fn prefix_eq(a: &[u8], b: &[u8], prefix: u8) -> bool {
    let full = usize::from(prefix / 8);
    let rest = prefix % 8;
    if a[..full] != b[..full] {
        return false;
    }
    rest == 0 || {
        let mask = 0xFFu8 << (8 - rest);
        a[full] & mask == b[full] & mask
    }
}

impl FromStr for Cidr {
    type Err = String;

    fn from_str(text: &str) -> Result<Cidr, String> {
        let (addr, prefix) = match text.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (text, None),
        };
        let addr: IpAddr = addr
            .parse()
            .map_err(|_| format!("{text}: not an IP address"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            Some(p) => p
                .parse::<u8>()
                .ok()
                .filter(|&p| p <= max)
                .ok_or_else(|| format!("{text}: prefix length must be 0..={max}"))?,
            None => max,
        };
        Ok(Cidr { addr, prefix })
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

/// Answers an AXFR or IXFR query from `peer`: the messages to send, in order.
pub async fn transfer<B: Backend>(
    backend: &B,
    packet: &[u8],
    query: &Query,
    peer: SocketAddr,
    allow: &[Cidr],
    max_udp: u16,
) -> Result<Vec<Vec<u8>>, StoreError> {
    let refuse = |rcode| Ok(vec![render::rcode_only(packet, query, rcode, max_udp)]);
    if !allow.iter().any(|c| c.contains(peer.ip())) {
        tracing::info!(%peer, zone = %query.qname, "zone transfer refused by the access list");
        return refuse(Rcode::REFUSED);
    }
    // One stored version, read whole. A version is deleted only a grace
    // period after a newer one replaced it; if ours went away while we read
    // it (no apex SOA in what came back), read the version now served.
    let mut attempt = 0;
    let (zone, soa, nodes) = loop {
        attempt += 1;
        let zone = match lookup::find_zone(backend, &query.qname).await? {
            Some(z) if z.apex == query.qname => z,
            _ => return refuse(Rcode::NOTAUTH),
        };
        let nodes = if query.qtype == RType::IXFR {
            // Up to date? Then the SOA is all we need (RFC 1995 §2).
            let apex = backend.get_node(&zone, &zone.apex).await?;
            let soa = apex.as_ref().and_then(|a| a.rrset(RType::SOA).cloned());
            let current = soa.as_ref().and_then(|s| soa_serial(&s.rdata[0]));
            match (query.ixfr_serial, current, soa) {
                (Some(theirs), Some(ours), Some(soa)) if !serial_lt(theirs, ours) => {
                    let mut out = Transfer::new(packet, query, max_udp);
                    out.push(&zone.apex, RType::SOA, soa.ttl, &soa.rdata[0]);
                    return Ok(out.finish());
                }
                _ => backend.zone_nodes(&zone).await?,
            }
        } else {
            backend.zone_nodes(&zone).await?
        };
        let soa = nodes
            .iter()
            .find(|n| n.name == zone.apex)
            .and_then(|n| n.rrset(RType::SOA).cloned());
        match soa {
            Some(soa) => break (zone, soa, nodes),
            None if attempt < 4 => {
                tokio::time::sleep(std::time::Duration::from_millis(300)).await;
            }
            None => return refuse(Rcode::SERVFAIL),
        }
    };
    let mut out = Transfer::new(packet, query, max_udp);
    out.push(&zone.apex, RType::SOA, soa.ttl, &soa.rdata[0]);
    let mut records = 1;
    for node in &nodes {
        records += push_node(&mut out, &zone.apex, node);
    }
    out.push(&zone.apex, RType::SOA, soa.ttl, &soa.rdata[0]);
    tracing::info!(%peer, zone = %zone.apex, records = records + 1, "zone transferred");
    Ok(out.finish())
}

/// IXFR over UDP: the zone's SOA alone, which tells the client to ask over
/// TCP (RFC 1995 §2); NOTAUTH for a name that is not the apex of a zone.
pub async fn ixfr_over_udp<B: Backend>(
    backend: &B,
    packet: &[u8],
    query: &Query,
    max_udp: u16,
) -> Result<Vec<u8>, StoreError> {
    let zone = match lookup::find_zone(backend, &query.qname).await? {
        Some(z) if z.apex == query.qname => z,
        _ => return Ok(render::rcode_only(packet, query, Rcode::NOTAUTH, max_udp)),
    };
    let soa = match backend.get_node(&zone, &zone.apex).await? {
        Some(apex) => apex.rrset(RType::SOA).cloned(),
        None => None,
    };
    let Some(soa) = soa else {
        return Ok(render::rcode_only(packet, query, Rcode::SERVFAIL, max_udp));
    };
    let mut out = Transfer::new(packet, query, max_udp);
    out.push(&zone.apex, RType::SOA, soa.ttl, &soa.rdata[0]);
    Ok(out.finish().remove(0))
}

/// Every record of `node` except the apex SOA; returns how many.
fn push_node(out: &mut Transfer, apex: &Name, node: &Node) -> usize {
    let mut count = 0;
    let mut sets: Vec<_> = node.rrsets.iter().collect();
    sets.sort_by_key(|r| r.rtype.0);
    for rrset in sets {
        if !(rrset.rtype == RType::SOA && node.name == *apex) {
            for rd in &rrset.rdata {
                out.push(&node.name, rrset.rtype, rrset.ttl, rd);
                count += 1;
            }
        }
        // A signed zone: the RRset's signatures (the apex SOA's included).
        if let Some(sigs) = node.rrsig(rrset.rtype) {
            for rd in &sigs.rdata {
                out.push(&node.name, RType::RRSIG, rrset.ttl, rd);
                count += 1;
            }
        }
    }
    count
}

/// Messages being filled, one record at a time.
struct Transfer<'a> {
    packet: &'a [u8],
    query: &'a Query,
    max_udp: u16,
    current: Option<MessageWriter>,
    done: Vec<Vec<u8>>,
}

impl<'a> Transfer<'a> {
    fn new(packet: &'a [u8], query: &'a Query, max_udp: u16) -> Self {
        Transfer {
            packet,
            query,
            max_udp,
            current: None,
            done: Vec::new(),
        }
    }

    fn writer(&self) -> MessageWriter {
        MessageWriter::new(
            &self.packet[self.query.question.clone()],
            &self.query.qname,
            MESSAGE_SIZE,
            self.query.edns.is_some(),
        )
    }

    fn push(&mut self, owner: &Name, rtype: RType, ttl: u32, rd: &[u8]) {
        let rdata = [Box::<[u8]>::from(rd)];
        let w = match self.current.as_mut() {
            Some(w) => w,
            None => self.current.insert(self.writer()),
        };
        if w.push_records(Section::Answer, owner, rtype, ttl, &rdata)
            .is_ok()
        {
            return;
        }
        self.flush();
        let mut w = self.writer();
        // A record larger than a message cannot be sent; such a zone could
        // not be transferred by anyone, so it is left out with a warning.
        if w.push_records(Section::Answer, owner, rtype, ttl, &rdata)
            .is_err()
        {
            tracing::warn!(%owner, %rtype, "record too large for a transfer message");
        }
        self.current = Some(w);
    }

    fn flush(&mut self) {
        if let Some(w) = self.current.take() {
            // RD is copied into the response (RFC 1035 §4.1.1).
            let rd = if self.query.rd { flags::RD } else { 0 };
            let f = flags::QR | flags::AA | rd;
            let edns = self.query.edns.map(render::reply_edns);
            self.done
                .push(w.finish(self.query.id, f, Rcode::NOERROR, edns, self.max_udp));
        }
    }

    fn finish(mut self) -> Vec<Vec<u8>> {
        self.flush();
        self.done
    }
}

/// The SERIAL field of SOA rdata (uncompressed, as stored).
fn soa_serial(rd: &[u8]) -> Option<u32> {
    let (_, m) = Name::from_wire_prefix(rd).ok()?;
    let (_, r) = Name::from_wire_prefix(rd.get(m..)?).ok()?;
    let s = rd.get(m + r..m + r + 4)?;
    Some(u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
}

/// RFC 1982 serial number arithmetic: `a` is older than `b`.
fn serial_lt(a: u32, b: u32) -> bool {
    a != b && b.wrapping_sub(a) < 0x8000_0000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_blocks_match_by_prefix() {
        let net: Cidr = "192.0.2.0/24".parse().unwrap();
        assert!(net.contains("192.0.2.200".parse().unwrap()));
        assert!(!net.contains("192.0.3.1".parse().unwrap()));
        assert!(net.contains("::ffff:192.0.2.9".parse().unwrap()));
        let odd: Cidr = "10.0.0.0/9".parse().unwrap();
        assert!(odd.contains("10.127.255.255".parse().unwrap()));
        assert!(!odd.contains("10.128.0.0".parse().unwrap()));
        let host: Cidr = "2001:db8::1".parse().unwrap();
        assert!(host.contains("2001:db8::1".parse().unwrap()));
        assert!(!host.contains("2001:db8::2".parse().unwrap()));
        assert!(!host.contains("192.0.2.1".parse().unwrap()));
        let all: Cidr = "0.0.0.0/0".parse().unwrap();
        assert!(all.contains("203.0.113.7".parse().unwrap()));
        assert!("10.0.0.0/33".parse::<Cidr>().is_err());
        assert!("example".parse::<Cidr>().is_err());
        let lo = Cidr::loopback();
        assert!(lo.iter().any(|c| c.contains("127.0.0.1".parse().unwrap())));
        assert!(lo.iter().any(|c| c.contains("::1".parse().unwrap())));
        assert!(!lo.iter().any(|c| c.contains("192.0.2.1".parse().unwrap())));
    }

    #[test]
    fn serials_compare_with_rfc1982_arithmetic() {
        assert!(serial_lt(1, 2));
        assert!(!serial_lt(2, 2));
        assert!(!serial_lt(3, 2));
        assert!(serial_lt(0xFFFF_FFF0, 5)); // wrapped around
        assert!(!serial_lt(5, 0xFFFF_FFF0));
    }

    #[test]
    fn the_serial_is_read_from_soa_rdata() {
        let mut rd = b"\x02ns\x00\x0ahostmaster\x00".to_vec();
        rd.extend_from_slice(&2024010101u32.to_be_bytes());
        rd.extend_from_slice(&[0; 16]);
        assert_eq!(soa_serial(&rd), Some(2024010101));
        assert_eq!(soa_serial(b"\x02ns\x00"), None);
    }
}
