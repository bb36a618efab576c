//! One resource record as text: the fields between the owner and the rdata
//! (a TTL and a class, in either order, then the type), which the zone-file
//! reader shares, and [`parse_record`] for a single line such as the
//! `content` of an API request.
//!
//! ```text
//!  "www 300 IN A 192.0.2.1" ─tokenize─► owner (relative: + origin, @ = origin)
//!        ─► head: [TTL|class]×2, type ─► rdata_from_text ─► Rr
//!  no TTL written: default_ttl, else the MINIMUM of an SOA's own rdata, else an error
//! ```

use std::slice;

use crate::{Name, RType};

use super::error::SyntaxError;
use super::lexer::{tokenize, Token};
use super::rdata::rdata_from_text;
use super::text::{parse_name, parse_ttl, show, MAX_TTL};

/// The class IN, the only one accepted.
pub const CLASS_IN: u16 = 1;

/// One resource record parsed from a line of text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rr {
    /// Owner name (case-folded, absolute).
    pub owner: Name,
    /// TTL in seconds.
    pub ttl: u32,
    /// Class; always [`CLASS_IN`].
    pub class: u16,
    /// Record type.
    pub rtype: RType,
    /// RDATA in uncompressed wire format; names in it keep their letter case.
    pub rdata: Vec<u8>,
}

/// What stands between the owner and the rdata.
pub(crate) struct Head {
    /// The TTL, if one was written.
    pub(crate) ttl: Option<u32>,
    /// The class, if one was written (always IN).
    pub(crate) class: Option<u16>,
    /// The record type.
    pub(crate) rtype: RType,
}

/// Reads up to one TTL and one class, in either order, then the type.
pub(crate) fn head(tokens: &mut slice::Iter<'_, Token>) -> Result<Head, String> {
    let mut ttl = None;
    let mut class = None;
    loop {
        let tok = tokens.next().ok_or("missing record type")?;
        let text = tok.text();
        if !tok.is_quoted() && text.first().is_some_and(u8::is_ascii_digit) {
            if ttl.is_some() {
                return Err(format!("TTL given twice ('{}')", tok.show()));
            }
            ttl = Some(parse_ttl(text)?);
        } else if let Some(c) = class_number(tok) {
            if class.is_some() {
                return Err(format!("class given twice ('{}')", tok.show()));
            }
            if c != Some(CLASS_IN) {
                return Err(format!("only class IN is supported (got '{}')", tok.show()));
            }
            class = c;
        } else {
            let rtype = record_type(tok)?;
            return Ok(Head { ttl, class, rtype });
        }
    }
}

/// A type mnemonic or `TYPEnnn`, written without quotes.
fn record_type(tok: &Token) -> Result<RType, String> {
    std::str::from_utf8(tok.text())
        .ok()
        .filter(|_| !tok.is_quoted())
        .and_then(RType::from_mnemonic)
        .ok_or_else(|| format!("unknown record type '{}'", tok.show()))
}

/// `Some(Some(n))` for a class mnemonic or `CLASSnnn`, `Some(None)` for one
/// out of range, `None` when the token is not a class at all.
fn class_number(tok: &Token) -> Option<Option<u16>> {
    if tok.is_quoted() {
        return None;
    }
    let text = tok.text();
    for (name, n) in [
        ("IN", 1),
        ("CS", 2),
        ("CH", 3),
        ("HS", 4),
        ("NONE", 254),
        ("ANY", 255),
    ] {
        if text.eq_ignore_ascii_case(name.as_bytes()) {
            return Some(Some(n));
        }
    }
    let digits = text
        .get(..5)
        .filter(|p| p.eq_ignore_ascii_case(b"CLASS"))
        .map(|_| &text[5..])?;
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(show(digits).parse::<u16>().ok())
}

/// The MINIMUM field of well-formed SOA rdata, capped at [`MAX_TTL`].
pub(crate) fn soa_minimum(rdata: &[u8]) -> u32 {
    let tail: [u8; 4] = rdata[rdata.len() - 4..].try_into().expect("SOA rdata");
    u32::from_be_bytes(tail).min(MAX_TTL)
}

/// Parses one whole record, `owner [TTL] [class] type rdata` (TTL and class
/// in either order, parentheses and comments allowed), as a zone file
/// would hold it. Relative names are completed with `origin`; a record
/// without a TTL takes `default_ttl`, else (an SOA) its own MINIMUM.
pub fn parse_record(
    text: &str,
    origin: &Name,
    default_ttl: Option<u32>,
) -> Result<Rr, SyntaxError> {
    let tokens = tokenize(text)?;
    let mut tokens = tokens.iter();
    let first = tokens
        .next()
        .ok_or("empty record: expected an owner name")?;
    if !first.is_quoted() && first.text().starts_with(b"$") {
        return Err(format!("'{}' is a directive, not a record", first.show()).into());
    }
    let owner = parse_name(first.text(), origin)?;
    let head = head(&mut tokens)?;
    let rdata = rdata_from_text(head.rtype, tokens.as_slice(), origin)?;
    let soa_ttl = (head.rtype == RType::SOA).then(|| soa_minimum(&rdata));
    let ttl = head
        .ttl
        .or(default_ttl)
        .or(soa_ttl)
        .ok_or("no TTL: give one on the record")?;
    Ok(Rr {
        owner,
        ttl,
        class: head.class.unwrap_or(CLASS_IN),
        rtype: head.rtype,
        rdata,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin() -> Name {
        "example.com.".parse().unwrap()
    }

    #[test]
    fn whole_lines() {
        let rr = parse_record("www 300 IN A 192.0.2.1", &origin(), None).unwrap();
        assert_eq!(rr.owner, "www.example.com.".parse().unwrap());
        assert_eq!((rr.ttl, rr.class, rr.rtype), (300, CLASS_IN, RType::A));
        assert_eq!(rr.rdata, [192, 0, 2, 1]);
        let rr = parse_record("@ in 1h MX ( 10 Mail ) ; c", &origin(), None).unwrap();
        assert_eq!((rr.owner, rr.ttl), (origin(), 3600));
        assert_eq!(rr.rdata, b"\x00\x0a\x04Mail\x07example\x03com\x00");
        let rr = parse_record("x TXT hi", &origin(), Some(60)).unwrap();
        assert_eq!(rr.ttl, 60);
        let soa = "@ SOA ns h 1 2 3 4 500";
        assert_eq!(parse_record(soa, &origin(), None).unwrap().ttl, 500);
    }

    #[test]
    fn errors_name_the_field() {
        let err = |text: &str| parse_record(text, &origin(), None).unwrap_err().message;
        assert!(err("x A 192.0.2.1").contains("no TTL"));
        assert!(err("").contains("empty record"));
        assert!(err("$TTL 300").contains("directive"));
        assert!(err("x 1 CH A 192.0.2.1").contains("only class IN"));
        assert!(err("x 1 1 A 192.0.2.1").contains("TTL given twice"));
        assert!(err("x 1 BOGUS 192.0.2.1").contains("unknown record type"));
        assert!(err("x 1 A").contains("missing rdata field: IPv4 address"));
        assert!(err("x 1 A 192.0.2.1 (").contains("unbalanced"));
    }
}
