//! Is this rdata well-formed? Checks of uncompressed wire-format rdata, for
//! data that arrives from outside (a zone file's `\#` form) and for data
//! read back from the database, which is never trusted.
//!
//! ```text
//!  check_rdata(rtype, rd)
//!    ├─ longer than 65535 ─► TooLong
//!    ├─ a type whose descriptor (types.rs) has fields ─► walk them in order:
//!    │     Name (uncompressed, ≤ 255 octets with the root, labels ≤ 63),
//!    │     fixed widths, character-strings, salt, hash, bitmap, the rest
//!    │   ─► every field present, nothing left over ─► Ok
//!    └─ any other type: opaque bytes ─► Ok
//! ```
//!
//! A name in rdata must be written in full: compression pointers are not
//! allowed in stored data (RFC 3597 §4: they may not be used for unknown
//! types, and mongodns stores every type uncompressed).

use crate::types::{Field, Rdata};
use crate::RType;

/// Largest rdata: the RDLENGTH field has 16 bits.
pub const MAX_RDATA_LEN: usize = 65_535;

/// Most NSEC3 hash iterations a zone file may ask for (RFC 9276 §3.2 says
/// 0; validators treat more than 100 as insecure or bogus, and 150 is the
/// limit of RFC 9276 §3.2's survey). The server refuses to hash above
/// this too, whatever the database holds.
pub const MAX_NSEC3_ITERATIONS: u16 = 100;

/// Why rdata is not well-formed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RdataError {
    /// More than [`MAX_RDATA_LEN`] octets.
    #[error("rdata longer than 65535 octets ({0})")]
    TooLong(usize),
    /// A field is cut short.
    #[error("{rtype} rdata is truncated at {field}")]
    Truncated {
        /// The record type.
        rtype: RType,
        /// The field that is missing or cut.
        field: &'static str,
    },
    /// A name field is not one uncompressed name of at most 255 octets.
    #[error("{rtype} rdata: bad name in {field}: {why}")]
    BadName {
        /// The record type.
        rtype: RType,
        /// The field holding the name.
        field: &'static str,
        /// What is wrong with it.
        why: crate::NameError,
    },
    /// Bytes after the last field.
    #[error("{rtype} rdata has {extra} octets after its last field")]
    Trailing {
        /// The record type.
        rtype: RType,
        /// How many.
        extra: usize,
    },
    /// A field has a value its type forbids.
    #[error("{rtype} rdata: bad {field}")]
    BadField {
        /// The record type.
        rtype: RType,
        /// The field.
        field: &'static str,
    },
}

/// Checks that `rd` is well-formed rdata of type `rtype` (see the module
/// documentation): the fields of its descriptor (`types.rs`) in order;
/// types without a field layout only have their length checked.
pub fn check_rdata(rtype: RType, rd: &[u8]) -> Result<(), RdataError> {
    if rd.len() > MAX_RDATA_LEN {
        return Err(RdataError::TooLong(rd.len()));
    }
    let Some(Rdata::Fields(fields)) = rtype.info().map(|t| t.rdata) else {
        return Ok(());
    };
    let mut at = 0;
    for field in fields {
        at = field_end(rtype, *field, rd, at)?;
    }
    if at != rd.len() {
        return Err(RdataError::Trailing {
            rtype,
            extra: rd.len() - at,
        });
    }
    Ok(())
}

/// Where `field` of type `rtype`'s rdata `rd`, starting at `at`, ends.
pub fn field_end(rtype: RType, field: Field, rd: &[u8], at: usize) -> Result<usize, RdataError> {
    let truncated = |field| RdataError::Truncated { rtype, field };
    let rest = rd.get(at..).ok_or(truncated("rdata"))?;
    if let Some(n) = field.width() {
        return (rest.len() >= n)
            .then_some(at + n)
            .ok_or(truncated(field_name(field)));
    }
    match field {
        Field::Name(what) => match crate::Name::from_wire_prefix(rest) {
            Ok((_, used)) => Ok(at + used),
            Err(why) => Err(RdataError::BadName {
                rtype,
                field: what,
                why,
            }),
        },
        Field::Text(what) => char_string(rest)
            .map(|used| at + used)
            .ok_or(truncated(what)),
        Field::OptionalText(what) if !rest.is_empty() => char_string(rest)
            .map(|used| at + used)
            .ok_or(truncated(what)),
        Field::Texts(what) => {
            let mut pos = at;
            loop {
                pos += char_string(&rd[pos..]).ok_or(truncated(what))?;
                if pos == rd.len() {
                    return Ok(pos);
                }
            }
        }
        Field::Salt => char_string(rest)
            .map(|used| at + used)
            .ok_or(truncated("salt")),
        Field::NextHashed => match rest.first() {
            Some(0) => Err(RdataError::BadField {
                rtype,
                field: "next hashed owner length",
            }),
            _ => char_string(rest)
                .map(|used| at + used)
                .ok_or(truncated("next hashed owner")),
        },
        Field::Bitmap => check_bitmap(rtype, rest).map(|()| rd.len()),
        Field::CaaTag => char_string(rest)
            .map(|used| at + used)
            .ok_or(truncated("CAA tag")),
        // The rest of the rdata, whatever it holds.
        _ => Ok(rd.len()),
    }
}

/// The name of a fixed-width field, for messages.
fn field_name(field: Field) -> &'static str {
    match field {
        Field::U8(w) | Field::U16(w) | Field::U32(w) | Field::Period(w) | Field::Time(w) => w,
        Field::Ipv4(w) | Field::Ipv6(w) | Field::Locator64(w) => w,
        Field::Algorithm => "algorithm",
        Field::CertType => "certificate type",
        Field::Covered => "type covered",
        Field::Protocol => "protocol",
        _ => "rdata",
    }
}

/// The names in the rdata `rd` of a type with a field layout, in order,
/// as (offset, length) pairs; after a field that does not parse, its
/// error and nothing more (for the signer's canonical form and tests; the
/// reply writer walks the few compressed layouts itself, allocating
/// nothing).
pub fn names_in(rtype: RType, rd: &[u8]) -> NamesIn<'_> {
    let fields = match rtype.info().map(|t| t.rdata) {
        Some(Rdata::Fields(fields)) => fields,
        _ => &[],
    };
    NamesIn {
        rtype,
        rd,
        fields,
        at: 0,
    }
}

/// The iterator of [`names_in`].
pub struct NamesIn<'a> {
    rtype: RType,
    rd: &'a [u8],
    fields: &'static [Field],
    at: usize,
}

impl Iterator for NamesIn<'_> {
    type Item = Result<(usize, usize), RdataError>;

    fn next(&mut self) -> Option<Self::Item> {
        while let Some((field, rest)) = self.fields.split_first() {
            self.fields = rest;
            let start = self.at;
            match field_end(self.rtype, *field, self.rd, start) {
                Ok(end) => self.at = end,
                Err(e) => {
                    self.fields = &[];
                    return Some(Err(e));
                }
            }
            if matches!(field, Field::Name(_)) {
                return Some(Ok((start, self.at - start)));
            }
        }
        None
    }
}

/// The length of the character string at the start of `bytes`.
fn char_string(bytes: &[u8]) -> Option<usize> {
    let len = usize::from(*bytes.first()?);
    (bytes.len() > len).then_some(1 + len)
}

/// Windows in increasing order, each 1 to 32 octets long, filling `bytes`.
fn check_bitmap(rtype: RType, bytes: &[u8]) -> Result<(), RdataError> {
    let bad = RdataError::BadField {
        rtype,
        field: "type bitmap",
    };
    let mut pos = 0;
    let mut last: Option<u8> = None;
    while pos < bytes.len() {
        let (Some(&window), Some(&len)) = (bytes.get(pos), bytes.get(pos + 1)) else {
            return Err(bad);
        };
        if !(1..=32).contains(&len) || last.is_some_and(|l| l >= window) {
            return Err(bad);
        }
        pos += 2 + usize::from(len);
        if pos > bytes.len() {
            return Err(bad);
        }
        last = Some(window);
    }
    Ok(())
}

/// The iterations field of NSEC3 or NSEC3PARAM rdata, if it has one.
pub fn nsec3_iterations(rd: &[u8]) -> Option<u16> {
    rd.get(2..4).map(|b| u16::from_be_bytes([b[0], b[1]]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::name::long_wire_name;
    use crate::Name;

    fn name(s: &str) -> Vec<u8> {
        s.parse::<Name>().unwrap().as_wire().to_vec()
    }

    #[test]
    fn names_in_rdata_are_checked() {
        assert!(check_rdata(RType::CNAME, &name("a.example.")).is_ok());
        assert!(check_rdata(RType::CNAME, &long_wire_name(255)).is_ok());
        let too_long = check_rdata(RType::CNAME, &long_wire_name(256));
        assert!(
            matches!(too_long, Err(RdataError::BadName { .. })),
            "{too_long:?}"
        );
        // A compression pointer is not a stored name.
        let pointer = check_rdata(RType::NS, &[0xC0, 0x0C]);
        assert!(matches!(pointer, Err(RdataError::BadName { .. })));
        // Cut short, or followed by more bytes.
        assert!(check_rdata(RType::PTR, b"\x03www").is_err());
        let mut extra = name("a.");
        extra.push(7);
        assert!(matches!(
            check_rdata(RType::DNAME, &extra),
            Err(RdataError::Trailing { extra: 1, .. })
        ));
    }

    #[test]
    fn fixed_layouts_are_checked() {
        let mut soa = name("ns.example.");
        soa.extend(name("admin.example."));
        soa.extend([0; 20]);
        assert!(check_rdata(RType::SOA, &soa).is_ok());
        assert!(check_rdata(RType::SOA, &soa[..soa.len() - 1]).is_err());
        assert!(check_rdata(RType::A, &[1, 2, 3]).is_err());
        assert!(check_rdata(RType::AAAA, &[0; 16]).is_ok());
        let mut mx = vec![0, 10];
        mx.extend(name("mail.example."));
        assert!(check_rdata(RType::MX, &mx).is_ok());
        assert!(check_rdata(RType::MX, &mx[..1]).is_err());
        assert!(check_rdata(RType::TXT, b"\x02hi\x00").is_ok());
        assert!(check_rdata(RType::TXT, b"\x05hi").is_err());
        assert!(check_rdata(RType::TXT, b"").is_err());
        // Unknown layouts: only the length.
        assert!(check_rdata(RType(65280), &[1, 2, 3]).is_ok());
        assert!(check_rdata(RType(65280), &vec![0; 65_536]).is_err());
    }

    #[test]
    fn nsec_and_nsec3_layouts_are_checked() {
        let mut nsec = name("b.example.");
        nsec.extend([0, 1, 0x40]); // window 0: type A
        assert!(check_rdata(RType::NSEC, &nsec).is_ok());
        let mut bad = name("b.example.");
        bad.extend([0, 33]);
        assert!(check_rdata(RType::NSEC, &bad).is_err());
        let mut twice = name("b.example.");
        twice.extend([1, 1, 0x40, 0, 1, 0x40]); // windows out of order
        assert!(check_rdata(RType::NSEC, &twice).is_err());
        // NSEC3: alg 1, flags 0, 10 iterations, salt "ab", 20-octet hash, no types.
        let mut nsec3 = vec![1, 0, 0, 10, 1, 0xab, 20];
        nsec3.extend([7; 20]);
        assert!(check_rdata(RType::NSEC3, &nsec3).is_ok());
        assert_eq!(nsec3_iterations(&nsec3), Some(10));
        assert!(check_rdata(RType::NSEC3, &nsec3[..10]).is_err());
        assert!(check_rdata(RType::NSEC3, &[1, 0, 0, 0, 0, 0]).is_err());
        assert!(check_rdata(RType::NSEC3PARAM, &[1, 0, 0, 0, 0]).is_ok());
        assert!(check_rdata(RType::NSEC3PARAM, &[1, 0, 0, 0, 5, 1]).is_err());
    }
}
