//! A zone as an RFC 1035 master file, with its DNSSEC records when signed.
//!
//! ```text
//!  FullNode ─► "owner TTL IN TYPE rdata" lines: SOA first, then canonical
//!  order, each RRset followed by its RRSIGs. Well-known types in their
//!  usual presentation, every other type in RFC 3597 form (\# len hex).
//! ```

use backend_mongo::dnssec_store::FullNode;
use dns::dnssec::bitmap_types;
use dns::encoding::{base32hex, base64, to_hex};
use dns::name::wire_name_text as name_at;
use dns::{Name, RType};
use std::fmt::Write as _;

fn hex(bytes: &[u8]) -> String {
    to_hex(bytes).to_uppercase()
}

fn char_string(rd: &[u8], at: usize) -> Option<(String, usize)> {
    let len = *rd.get(at)? as usize;
    let s = rd.get(at + 1..at + 1 + len)?;
    let mut out = String::from("\"");
    for &b in s {
        match b {
            b'"' | b'\\' => {
                out.push('\\');
                out.push(b as char);
            }
            0x20..=0x7e => out.push(b as char),
            _ => {
                let _ = write!(out, "\\{b:03}");
            }
        }
    }
    out.push('"');
    Some((out, at + 1 + len))
}

fn u16_at(rd: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*rd.get(at)?, *rd.get(at + 1)?]))
}

fn u32_at(rd: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes([
        *rd.get(at)?,
        *rd.get(at + 1)?,
        *rd.get(at + 2)?,
        *rd.get(at + 3)?,
    ]))
}

fn types_text(bitmap: &[u8]) -> String {
    bitmap_types(bitmap)
        .iter()
        .map(|t| t.mnemonic().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// RRSIG time field as YYYYMMDDHHmmSS (RFC 4034 §3.2).
fn time_text(t: u32) -> String {
    let secs = i64::from(t);
    let days = secs.div_euclid(86400);
    let rem = secs.rem_euclid(86400);
    let (y, m, d) = backend_mongo::civil::civil_from_days(days);
    format!(
        "{y:04}{m:02}{d:02}{:02}{:02}{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The presentation form of `rd` of type `t`.
pub fn rdata_text(t: RType, rd: &[u8]) -> String {
    known_rdata_text(t, rd).unwrap_or_else(|| format!("\\# {} {}", rd.len(), hex(rd)))
}

fn known_rdata_text(t: RType, rd: &[u8]) -> Option<String> {
    Some(match t.0 {
        1 if rd.len() == 4 => format!("{}.{}.{}.{}", rd[0], rd[1], rd[2], rd[3]),
        28 if rd.len() == 16 => {
            let mut b = [0u8; 16];
            b.copy_from_slice(rd);
            std::net::Ipv6Addr::from(b).to_string()
        }
        2 | 5 | 12 | 39 => {
            let (n, end) = name_at(rd, 0)?;
            (end == rd.len()).then_some(n)?
        }
        15 => {
            let (n, end) = name_at(rd, 2)?;
            (end == rd.len()).then(|| format!("{} {n}", u16_at(rd, 0).unwrap_or(0)))?
        }
        6 => {
            let (m, a) = name_at(rd, 0)?;
            let (r, b) = name_at(rd, a)?;
            (rd.len() == b + 20).then_some(())?;
            let f: Vec<String> = (0..5)
                .map(|i| u32_at(rd, b + 4 * i).unwrap_or(0).to_string())
                .collect();
            format!("{m} {r} {}", f.join(" "))
        }
        16 | 99 => {
            let mut parts = Vec::new();
            let mut at = 0;
            while at < rd.len() {
                let (s, next) = char_string(rd, at)?;
                parts.push(s);
                at = next;
            }
            parts.join(" ")
        }
        33 => {
            let (n, end) = name_at(rd, 6)?;
            (end == rd.len()).then(|| {
                format!(
                    "{} {} {} {n}",
                    u16_at(rd, 0).unwrap_or(0),
                    u16_at(rd, 2).unwrap_or(0),
                    u16_at(rd, 4).unwrap_or(0)
                )
            })?
        }
        43 | 59 if rd.len() > 4 => {
            format!("{} {} {} {}", u16_at(rd, 0)?, rd[2], rd[3], hex(&rd[4..]))
        }
        48 | 60 if rd.len() > 4 => {
            format!(
                "{} {} {} {}",
                u16_at(rd, 0)?,
                rd[2],
                rd[3],
                base64(&rd[4..])
            )
        }
        46 if rd.len() > 18 => {
            let (signer, end) = name_at(rd, 18)?;
            format!(
                "{} {} {} {} {} {} {} {signer} {}",
                RType(u16_at(rd, 0)?).mnemonic(),
                rd[2],
                rd[3],
                u32_at(rd, 4)?,
                time_text(u32_at(rd, 8)?),
                time_text(u32_at(rd, 12)?),
                u16_at(rd, 16)?,
                base64(rd.get(end..)?)
            )
        }
        47 => {
            let (next, end) = name_at(rd, 0)?;
            format!("{next} {}", types_text(&rd[end..]))
        }
        50 if rd.len() >= 5 => {
            let salt_len = rd[4] as usize;
            let salt = rd.get(5..5 + salt_len)?;
            let hash_len = *rd.get(5 + salt_len)? as usize;
            let hash = rd.get(6 + salt_len..6 + salt_len + hash_len)?;
            format!(
                "{} {} {} {} {} {}",
                rd[0],
                rd[1],
                u16_at(rd, 2)?,
                if salt.is_empty() {
                    "-".into()
                } else {
                    hex(salt)
                },
                base32hex(hash).to_uppercase(),
                types_text(&rd[6 + salt_len + hash_len..])
            )
        }
        51 if rd.len() >= 5 => {
            let salt = rd.get(5..5 + rd[4] as usize)?;
            format!(
                "{} {} {} {}",
                rd[0],
                rd[1],
                u16_at(rd, 2)?,
                if salt.is_empty() {
                    "-".into()
                } else {
                    hex(salt)
                }
            )
        }
        _ => return None,
    })
}

fn push_line(out: &mut String, owner: &Name, ttl: u32, t: RType, rd: &[u8]) {
    let _ = writeln!(
        out,
        "{owner}\t{ttl}\tIN\t{}\t{}",
        t.mnemonic(),
        rdata_text(t, rd)
    );
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_civil_dates() {
        assert_eq!(time_text(0), "19700101000000");
        assert_eq!(time_text(1_700_000_000), "20231114221320");
    }

    #[test]
    fn rdata_presentation() {
        assert_eq!(rdata_text(RType::A, &[192, 0, 2, 1]), "192.0.2.1");
        assert_eq!(rdata_text(RType::MX, b"\x00\x0a\x04Mail\x00"), "10 Mail.");
        assert_eq!(rdata_text(RType::NS, b"\x04a!b.\x00"), "a!b\\..");
        assert_eq!(rdata_text(RType::TXT, b"\x02a\"\x01b"), "\"a\\\"\" \"b\"");
        assert_eq!(rdata_text(RType(65280), &[1, 2]), "\\# 2 0102");
    }
}
