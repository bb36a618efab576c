//! SVCB and HTTPS (RFC 9460) as text, the inverse of `presentation/svcb.rs`.
//!
//! ```text
//!  priority target (key len value)... ─► "priority target key=value ..."
//!    mandatory=alpn,port · alpn="h2,h3" (\, in an id) · no-default-alpn · port=443
//!    ipv4hint=a,b · ech=base64 · ipv6hint=a,b · dohpath="..." · keyNNNNN="..."
//!  kept only if it parses back to the same bytes (the RFC's rules across
//!  parameters: key order, mandatory keys present, ...), else None (\# form)
//! ```

use crate::encoding::base64;
use crate::{Name, RType};

use super::super::parse_rdata;
use super::super::svcb::key_name;
use super::addresses;
use super::fields::{name_at, quoted, u16_at};

/// SVCB or HTTPS rdata of type `rtype`.
pub(super) fn svcb(rtype: RType, rd: &[u8]) -> Option<String> {
    let (target, mut at) = name_at(rd, 2)?;
    let mut out = format!("{} {target}", u16_at(rd, 0)?);
    while at < rd.len() {
        let (key, len) = (u16_at(rd, at)?, usize::from(u16_at(rd, at + 2)?));
        let value = rd.get(at + 4..at + 4 + len)?;
        out.push(' ');
        out.push_str(&param(key, value)?);
        at += 4 + len;
    }
    let reads_back = parse_rdata(rtype, &out, &Name::root()).is_ok_and(|w| w == rd);
    reads_back.then_some(out)
}

/// One `key[=value]`.
fn param(key: u16, value: &[u8]) -> Option<String> {
    let name = key_name(key);
    let text = match key {
        0 => mandatory(value)?,
        1 => alpn(value)?,
        3 if value.len() == 2 => u16_at(value, 0)?.to_string(),
        4 => addresses(value, 4, addresses::a)?,
        5 => base64(value),
        6 => addresses(value, 16, addresses::aaaa)?,
        // no-default-alpn, ohttp, and any key without a value
        _ if value.is_empty() => return Some(name),
        2 | 3 | 8 => return None,
        _ => quoted(value),
    };
    Some(format!("{name}={text}"))
}

/// The key names of a `mandatory` list.
fn mandatory(value: &[u8]) -> Option<String> {
    let keys: Vec<String> = value
        .chunks(2)
        .map(|k| u16_at(k, 0).map(key_name))
        .collect::<Option<_>>()?;
    Some(keys.join(","))
}

/// ALPN ids, quoted, `,` and `\` inside an id escaped for the list.
fn alpn(value: &[u8]) -> Option<String> {
    let mut items = Vec::new();
    let mut at = 0;
    while at < value.len() {
        let len = usize::from(value[at]);
        let id = value.get(at + 1..at + 1 + len)?;
        let mut escaped = Vec::with_capacity(id.len());
        for &b in id {
            if matches!(b, b',' | b'\\') {
                escaped.push(b'\\');
            }
            escaped.push(b);
        }
        items.push(escaped);
        at += 1 + len;
    }
    Some(quoted(&items.join(&b","[..])))
}

/// Addresses of `width` octets, comma-separated; `None` when empty or
/// not a whole number of them.
fn addresses(value: &[u8], width: usize, show: fn(&[u8]) -> Option<String>) -> Option<String> {
    let chunks = value.chunks_exact(width);
    if value.is_empty() || !chunks.remainder().is_empty() {
        return None;
    }
    let texts: Vec<String> = chunks.map(show).collect::<Option<_>>()?;
    Some(texts.join(","))
}
