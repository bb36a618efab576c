//! RDATA wire → text, field by field, for every type whose descriptor
//! (`crate::types`) is a list of fields: one printer per kind of field,
//! none per type; the inverse of `presentation/layout.rs`.
//!
//! ```text
//!  rd, Fields([U16 "MX preference", Name "MX exchange"]) ─► "10" "mail.example." ─► "10 mail.example."
//!  a field cut short, or bytes left after the last ─► None (the caller prints \#)
//! ```

use crate::dnssec::bitmap_types;
use crate::encoding::{base32hex, base64, to_hex};
use crate::types::Field;
use crate::RType;

use super::addresses;
use super::fields::{char_string, hex, name_at, quoted, time_text, uint_at};

/// The text of rdata `rd` laid out as `fields`, or `None` when it does
/// not have that layout.
pub(super) fn fields_text(fields: &[Field], rd: &[u8]) -> Option<String> {
    let mut parts = Vec::with_capacity(fields.len());
    let mut at = 0;
    for field in fields {
        at = field_text(*field, rd, at, &mut parts)?;
    }
    (at == rd.len()).then(|| parts.join(" "))
}

/// Appends the text of `field` at `at` to `parts`; returns where it ends.
fn field_text(field: Field, rd: &[u8], at: usize, parts: &mut Vec<String>) -> Option<usize> {
    let rest = rd.get(at..)?;
    if let Some(width) = field.width() {
        let bytes = rest.get(..width)?;
        let value = uint_at(bytes, 0, width.min(8));
        parts.push(match field {
            Field::Time(_) => time_text(value? as u32),
            Field::Covered => RType(value? as u16).mnemonic().into_owned(),
            Field::Ipv4(_) => addresses::a(bytes)?,
            Field::Ipv6(_) => addresses::aaaa(bytes)?,
            Field::Locator64(_) => addresses::locator64(bytes),
            Field::Eui(_) => addresses::eui(bytes),
            Field::Protocol => match bytes[0] {
                6 => "tcp".into(),
                17 => "udp".into(),
                n => n.to_string(),
            },
            _ => value?.to_string(),
        });
        return Some(at + width);
    }
    let end = match field {
        Field::Name(_) => {
            let (name, end) = name_at(rd, at)?;
            parts.push(name);
            end
        }
        Field::Text(_) => push_string(rd, at, parts)?,
        Field::OptionalText(_) if rest.is_empty() => at,
        Field::OptionalText(_) => push_string(rd, at, parts)?,
        Field::Texts(_) => {
            let mut at = push_string(rd, at, parts)?;
            while at < rd.len() {
                at = push_string(rd, at, parts)?;
            }
            at
        }
        Field::Hex(_) => push_rest(rd, rest, hex, parts)?,
        Field::Base64(_) => push_rest(rd, rest, base64, parts)?,
        Field::Nsap => push_rest(rd, rest, |b| format!("0x{}", to_hex(b)), parts)?,
        Field::Salt => {
            let salt = rest.get(1..1 + usize::from(*rest.first()?))?;
            parts.push(match salt.is_empty() {
                true => "-".into(),
                false => hex(salt),
            });
            at + 1 + salt.len()
        }
        Field::NextHashed => {
            let hash = rest.get(1..1 + usize::from(*rest.first()?))?;
            parts.push(base32hex(hash).to_uppercase());
            at + 1 + hash.len()
        }
        Field::Bitmap => {
            parts.extend(bitmap_types(rest).iter().map(|t| t.mnemonic().into_owned()));
            rd.len()
        }
        Field::NxtBitmap => {
            parts.extend(set_bits(rest).map(|n| RType(n).mnemonic().into_owned()));
            rd.len()
        }
        Field::Ports => {
            parts.extend(set_bits(rest).map(|n| n.to_string()));
            rd.len()
        }
        Field::CaaTag => {
            let tag = rest.get(1..1 + usize::from(*rest.first()?))?;
            let ok = (1..=15).contains(&tag.len()) && tag.iter().all(u8::is_ascii_alphanumeric);
            parts.push(std::str::from_utf8(ok.then_some(tag)?).ok()?.into());
            at + 1 + tag.len()
        }
        Field::Quoted(_, nonempty) => {
            (!nonempty || !rest.is_empty()).then_some(())?;
            parts.push(quoted(rest));
            rd.len()
        }
        _ => return None,
    };
    Some(end)
}

/// A quoted character-string at `at`; returns where it ends.
fn push_string(rd: &[u8], at: usize, parts: &mut Vec<String>) -> Option<usize> {
    let (text, end) = char_string(rd, at)?;
    parts.push(text);
    Some(end)
}

/// The rest of the rdata, not empty, as `text` writes it; returns the end.
fn push_rest(
    rd: &[u8],
    rest: &[u8],
    text: impl Fn(&[u8]) -> String,
    parts: &mut Vec<String>,
) -> Option<usize> {
    (!rest.is_empty()).then_some(())?;
    parts.push(text(rest));
    Some(rd.len())
}

/// The numbers of the bits set in `map`, the first octet's high bit 0.
fn set_bits(map: &[u8]) -> impl Iterator<Item = u16> + '_ {
    map.iter().enumerate().flat_map(|(i, byte)| {
        (0..8u16)
            .filter(move |bit| byte & (0x80 >> bit) != 0)
            .map(move |bit| i as u16 * 8 + bit)
    })
}
