//! RDATA: presentation tokens → uncompressed wire format, as the type's
//! descriptor lays it out, plus the RFC 3597 generic form `\# <length> <hex>`.
//!
//! ```text
//!  [Token] ──is "\#"?──yes──► generic (any type, length checked)
//!              │no
//!              └──► the type's descriptor (crate::types): its fields one by one
//!                   (layout.rs), or LOC, SVCB/HTTPS, APL, IPSECKEY's own parser
//!                   (Fields cursor) ──► Vec<u8>
//!                   missing field → "missing …", leftovers → "extra rdata field …"
//!  either form ──► crate::rdata::check_rdata (names ≤ 255 octets,
//!                  layout of known types) ──► NSEC3/NSEC3PARAM iterations ≤ 100
//! ```
//!
//! Names inside rdata keep the letter case they were written in.

use crate::rdata::{check_rdata, nsec3_iterations, MAX_NSEC3_ITERATIONS, MAX_RDATA_LEN};
use crate::types::Rdata;
use crate::{Name, RType};

use super::error::SyntaxError;
use super::fields::Fields;
use super::layout::parse_field;
use super::lexer::{tokenize, Token};
use super::text::{decode_hex, parse_u16};
use super::{apl, ipseckey, loc, svcb};

/// Converts the presentation form of one record's RDATA into wire format.
///
/// `fields` are the tokens after the type (see [`super::tokenize`]); relative
/// names are completed with `origin` and `@` stands for it. Names keep their
/// letter case. The RFC 3597 form `\# <length> <hex>` is accepted for every
/// type. The message of an error names the field at fault.
pub fn rdata_from_text(rtype: RType, fields: &[Token], origin: &Name) -> Result<Vec<u8>, String> {
    if rtype.is_meta() {
        return Err(format!("type {rtype} cannot appear in zone data"));
    }
    let out = match fields.first() {
        Some(first) if first.is_word("\\#") => generic(rtype, &fields[1..])?,
        _ => {
            let mut f = Fields::new(fields, origin);
            let mut out = Vec::with_capacity(64);
            typed(rtype, &mut f, &mut out)?;
            f.end()?;
            out
        }
    };
    if out.len() > MAX_RDATA_LEN {
        return Err(format!(
            "rdata longer than {MAX_RDATA_LEN} octets ({} octets)",
            out.len()
        ));
    }
    // What the server will check again when it reads the record back.
    check_rdata(rtype, &out).map_err(|e| e.to_string())?;
    check_iterations(rtype, &out)?;
    Ok(out)
}

/// NSEC3 and NSEC3PARAM with more hash iterations than
/// [`MAX_NSEC3_ITERATIONS`] are refused (RFC 9276 §3.2; CVE-2023-50868).
fn check_iterations(rtype: RType, rd: &[u8]) -> Result<(), String> {
    if !matches!(rtype, RType::NSEC3 | RType::NSEC3PARAM) {
        return Ok(());
    }
    match nsec3_iterations(rd) {
        Some(n) if n > MAX_NSEC3_ITERATIONS => Err(format!(
            "{rtype} with {n} hash iterations: at most {MAX_NSEC3_ITERATIONS} are accepted (RFC 9276 recommends 0)"
        )),
        _ => Ok(()),
    }
}

/// Parses one record's rdata written as text, such as `"10 mail"` for an
/// MX: [`rdata_from_text`] on the tokens of `text` (quotes, escapes,
/// parentheses and comments as in a zone file). Relative names are
/// completed with `origin`.
pub fn parse_rdata(rtype: RType, text: &str, origin: &Name) -> Result<Vec<u8>, SyntaxError> {
    let tokens = tokenize(text)?;
    Ok(rdata_from_text(rtype, &tokens, origin)?)
}

/// The per-type dispatch, on the type's descriptor.
fn typed(rtype: RType, f: &mut Fields<'_>, out: &mut Vec<u8>) -> Result<(), String> {
    match rtype.info().map(|t| t.rdata) {
        Some(Rdata::Fields(fields)) => {
            for field in fields {
                parse_field(*field, f, out)?;
            }
        }
        Some(Rdata::Loc) => loc::parse(f, out)?,
        Some(Rdata::Svcb) => svcb::parse(f, out)?,
        Some(Rdata::Apl) => apl::parse(f, out)?,
        Some(Rdata::Ipseckey) => ipseckey::parse(f, out)?,
        Some(Rdata::Opaque) | None => {
            return Err(format!(
                "no presentation format known for type {rtype}; use the RFC 3597 form \\# <length> <hex>"
            ))
        }
    }
    Ok(())
}

/// `\# <length> <hex>...` (RFC 3597 §5).
fn generic(rtype: RType, fields: &[Token]) -> Result<Vec<u8>, String> {
    let len_tok = fields
        .first()
        .ok_or("missing rdata field: length after \\#")?;
    let len = parse_u16(len_tok.text(), "\\# rdata length")? as usize;
    let data = decode_hex(fields[1..].iter().map(Token::text))?;
    if data.len() != len {
        return Err(format!(
            "\\# rdata length {len} does not match the {} octets of hex data",
            data.len()
        ));
    }
    check_known_wire(rtype, &data)?;
    Ok(data)
}

/// The sizes of generic-form A and AAAA rdata, with a plain message; every
/// other layout is checked by [`check_rdata`] like all rdata.
fn check_known_wire(rtype: RType, data: &[u8]) -> Result<(), String> {
    let fixed = match rtype.0 {
        1 => 4,
        28 => 16,
        _ => return Ok(()),
    };
    if data.len() != fixed {
        return Err(format!(
            "{rtype} rdata must be {fixed} octets, \\# gives {}",
            data.len()
        ));
    }
    Ok(())
}
