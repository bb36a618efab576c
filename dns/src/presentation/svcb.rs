//! SVCB and HTTPS (RFC 9460): `priority target key[=value]...`.
//!
//! ```text
//!  "alpn=h2,h3" ─split at '='─► key "alpn", value "h2,h3"
//!      value ─char-string unescape─► bytes ─(list keys) split on unescaped ','─► items
//!  params ─► BTreeMap<key number, wire value> (duplicates rejected) ─► sorted wire
//!  checks: mandatory keys present, no "mandatory" inside mandatory,
//!          no-default-alpn needs alpn, key65535 is invalid
//! ```

use std::collections::BTreeMap;

use super::fields::Fields;
use super::text::{decode_base64, ipv4, ipv6, parse_u16, push_name, show, unescape};

const MANDATORY: u16 = 0;
const ALPN: u16 = 1;
const NO_DEFAULT_ALPN: u16 = 2;

/// Key names of the IANA "Service Parameter Keys" registry that have a
/// presentation syntax here.
const KEYS: &[(&str, u16)] = &[
    ("mandatory", MANDATORY),
    ("alpn", ALPN),
    ("no-default-alpn", NO_DEFAULT_ALPN),
    ("port", 3),
    ("ipv4hint", 4),
    ("ech", 5),
    ("ipv6hint", 6),
    ("dohpath", 7),
    ("ohttp", 8),
];

pub(crate) fn parse(f: &mut Fields<'_>, out: &mut Vec<u8>) -> Result<(), String> {
    let priority = parse_u16(f.raw("SvcPriority")?, "SvcPriority")?;
    out.extend_from_slice(&priority.to_be_bytes());
    push_name(f.raw("TargetName")?, f.origin, out)?;
    let mut params: BTreeMap<u16, Vec<u8>> = BTreeMap::new();
    for tok in f.rest() {
        let raw = tok.text();
        let (key_raw, value) = match raw.iter().position(|&b| b == b'=') {
            Some(i) => (&raw[..i], Some(&raw[i + 1..])),
            None => (raw, None),
        };
        let key = key_number(key_raw)?;
        let wire = value_wire(key, key_raw, value)?;
        if params.insert(key, wire).is_some() {
            return Err(format!("duplicate SvcParamKey '{}'", show(key_raw)));
        }
    }
    if let Some(mandatory) = params.get(&MANDATORY) {
        for pair in mandatory.chunks(2) {
            let key = u16::from_be_bytes([pair[0], pair[1]]);
            if !params.contains_key(&key) {
                return Err(format!(
                    "mandatory SvcParamKey '{}' is missing from the record",
                    key_name(key)
                ));
            }
        }
    }
    if params.contains_key(&NO_DEFAULT_ALPN) && !params.contains_key(&ALPN) {
        return Err("no-default-alpn requires alpn".into());
    }
    for (key, value) in params {
        let len = u16::try_from(value.len())
            .map_err(|_| format!("SvcParam {} value too long", key_name(key)))?;
        out.extend_from_slice(&key.to_be_bytes());
        out.extend_from_slice(&len.to_be_bytes());
        out.extend(value);
    }
    Ok(())
}

/// `alpn` → 1, `key65280` → 65280.
fn key_number(raw: &[u8]) -> Result<u16, String> {
    if let Some((_, n)) = KEYS
        .iter()
        .find(|(name, _)| name.as_bytes().eq_ignore_ascii_case(raw))
    {
        return Ok(*n);
    }
    let digits = raw
        .strip_prefix(b"key")
        .filter(|d| !d.is_empty() && d.len() <= 5 && d.iter().all(u8::is_ascii_digit))
        .ok_or_else(|| format!("unknown SvcParamKey '{}'", show(raw)))?;
    let n = digits
        .iter()
        .fold(0u32, |acc, d| acc * 10 + u32::from(d - b'0'));
    match u16::try_from(n) {
        Ok(n) if n != u16::MAX => Ok(n),
        _ => Err(format!("invalid SvcParamKey '{}'", show(raw))),
    }
}

/// The name of a key: its registry name, else `keyNNNNN`.
pub(super) fn key_name(key: u16) -> String {
    match KEYS.iter().find(|(_, n)| *n == key) {
        Some((name, _)) => (*name).to_string(),
        None => format!("key{key}"),
    }
}

/// The wire value of one parameter.
fn value_wire(key: u16, key_raw: &[u8], value: Option<&[u8]>) -> Result<Vec<u8>, String> {
    let name = show(key_raw);
    let value = value.map(unescape).transpose()?;
    let needs_value = || format!("SvcParam {name} needs a value");
    let mut out = Vec::new();
    match key {
        MANDATORY => {
            let mut keys = Vec::new();
            for item in list(&value.ok_or_else(needs_value)?, &name)? {
                let k = key_number(&item)?;
                if k == MANDATORY {
                    return Err("mandatory must not list itself".into());
                }
                if keys.contains(&k) {
                    return Err(format!("duplicate key '{}' in mandatory", show(&item)));
                }
                keys.push(k);
            }
            keys.sort_unstable();
            for k in keys {
                out.extend_from_slice(&k.to_be_bytes());
            }
        }
        ALPN => {
            for id in list(&value.ok_or_else(needs_value)?, &name)? {
                if id.len() > 255 {
                    return Err("alpn protocol id longer than 255 bytes".into());
                }
                out.push(id.len() as u8);
                out.extend(id);
            }
        }
        // no-default-alpn, ohttp: no value.
        NO_DEFAULT_ALPN | 8 => {
            if value.is_some_and(|v| !v.is_empty()) {
                return Err(format!("SvcParam {name} takes no value"));
            }
        }
        3 => {
            let v = value.ok_or_else(needs_value)?;
            out.extend_from_slice(&parse_u16(&v, "port")?.to_be_bytes());
        }
        4 => {
            for item in list(&value.ok_or_else(needs_value)?, &name)? {
                out.extend_from_slice(&ipv4(&item)?.octets());
            }
        }
        5 => {
            let v = value.ok_or_else(needs_value)?;
            out.extend(decode_base64([&v[..]])?);
        }
        6 => {
            for item in list(&value.ok_or_else(needs_value)?, &name)? {
                out.extend_from_slice(&ipv6(&item)?.octets());
            }
        }
        7 => {
            let v = value.ok_or_else(needs_value)?;
            if std::str::from_utf8(&v).is_err() {
                return Err("dohpath must be UTF-8".into());
            }
            out.extend(v);
        }
        _ => out.extend(value.unwrap_or_default()),
    }
    Ok(out)
}

/// Splits a value-list on commas; `\,` and `\\` are literal (RFC 9460 A.1).
/// Empty items are an error.
fn list(value: &[u8], name: &str) -> Result<Vec<Vec<u8>>, String> {
    let mut items = Vec::new();
    let mut item = Vec::new();
    let mut i = 0;
    while i < value.len() {
        match value[i] {
            b'\\' => {
                let next = *value
                    .get(i + 1)
                    .ok_or_else(|| format!("dangling backslash in SvcParam {name}"))?;
                item.push(next);
                i += 2;
            }
            b',' => {
                items.push(std::mem::take(&mut item));
                i += 1;
            }
            b => {
                item.push(b);
                i += 1;
            }
        }
    }
    items.push(item);
    if items.iter().any(Vec::is_empty) {
        return Err(format!("empty item in SvcParam {name} list"));
    }
    Ok(items)
}
