//! Domain names, case-folded by construction.
//!
//! ```text
//!  "WWW.Example.COM." ──parse──► Name { wire: 3www7example3com0 }   (lower case)
//!  wire bytes (query) ──from_wire──► Name                            (lower case)
//!  Name ──Display──► "www.example.com."  (the stored spelling, Escape::Key)
//!  label bytes ──write_label(Escape::Presentation)──► zone-file text (RFC 1035 §5.1)
//!  Name ──Ord──► RFC 4034 §6.1 canonical order (labels compared right to left)
//! ```
//!
//! Every name that crosses a crate boundary is a [`Name`], so no code has to
//! remember to lower-case: two names that DNS considers equal are equal values.

use std::cmp::Ordering;
use std::fmt;

/// Longest name in wire format (RFC 1035 §2.3.4).
pub const MAX_NAME_LEN: usize = 255;
/// Longest label (RFC 1035 §2.3.4).
pub const MAX_LABEL_LEN: usize = 63;

/// Why a name could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// A label is longer than 63 octets.
    #[error("label longer than 63 octets")]
    LabelTooLong,
    /// The whole name is longer than 255 octets in wire format.
    #[error("name longer than 255 octets")]
    NameTooLong,
    /// An empty label in the middle of a name (`a..b`).
    #[error("empty label")]
    EmptyLabel,
    /// A bad `\` escape.
    #[error("bad escape in name")]
    BadEscape,
    /// The wire form is truncated or malformed.
    #[error("malformed wire-format name")]
    Malformed,
    /// A relative name was given where no origin is known.
    #[error("relative name without an origin")]
    NoOrigin,
}

/// A DNS name in uncompressed wire format, ASCII letters folded to lower case.
///
/// Equality, hashing and ordering are those of DNS: case-insensitive, and
/// [`Ord`] is the canonical order of RFC 4034 §6.1.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Name {
    wire: Box<[u8]>,
}

impl Name {
    /// The root name `.`.
    pub fn root() -> Name {
        Name {
            wire: Box::new([0u8]),
        }
    }

    /// Builds a name from labels given left to right (without the root label).
    pub fn from_labels<'a, I: IntoIterator<Item = &'a [u8]>>(labels: I) -> Result<Name, NameError> {
        let mut wire = Vec::with_capacity(32);
        for label in labels {
            push_label(&mut wire, label)?;
        }
        finish_name(wire)
    }

    /// Parses an uncompressed wire-format name that fills `bytes` exactly.
    pub fn from_wire(bytes: &[u8]) -> Result<Name, NameError> {
        let (name, used) = Name::from_wire_prefix(bytes)?;
        if used != bytes.len() {
            return Err(NameError::Malformed);
        }
        Ok(name)
    }

    /// Parses an uncompressed wire-format name at the start of `bytes`;
    /// returns it and the number of bytes it took.
    pub fn from_wire_prefix(bytes: &[u8]) -> Result<(Name, usize), NameError> {
        let mut pos = 0;
        loop {
            let len = *bytes.get(pos).ok_or(NameError::Malformed)? as usize;
            if len == 0 {
                pos += 1;
                break;
            }
            if len > MAX_LABEL_LEN {
                return Err(NameError::Malformed);
            }
            pos += 1 + len;
            // The root octet still follows: the whole wire form, root
            // label included, must fit in MAX_NAME_LEN.
            if pos + 1 > MAX_NAME_LEN {
                return Err(NameError::NameTooLong);
            }
        }
        if pos > bytes.len() {
            return Err(NameError::Malformed);
        }
        let mut wire: Box<[u8]> = bytes[..pos].into();
        lower_labels(&mut wire);
        Ok((Name { wire }, pos))
    }

    /// Parses presentation format (`www.example.com.`, `a\.b`, `\065`).
    ///
    /// A name without a final dot is relative and is completed with `origin`;
    /// `@` is not handled here (it belongs to the zone-file syntax).
    pub fn parse(text: &str, origin: Option<&Name>) -> Result<Name, NameError> {
        if text == "." {
            return Ok(Name::root());
        }
        if text.is_empty() {
            return Err(NameError::EmptyLabel);
        }
        let bytes = text.as_bytes();
        let mut wire = Vec::with_capacity(bytes.len() + 2);
        let mut label: Vec<u8> = Vec::with_capacity(MAX_LABEL_LEN);
        let mut absolute = false;
        let mut i = 0;
        while i < bytes.len() {
            let c = bytes[i];
            match c {
                b'.' => {
                    if label.is_empty() {
                        return Err(NameError::EmptyLabel);
                    }
                    push_label(&mut wire, &label)?;
                    label.clear();
                    if i + 1 == bytes.len() {
                        absolute = true;
                    }
                    i += 1;
                }
                b'\\' => {
                    let next = *bytes.get(i + 1).ok_or(NameError::BadEscape)?;
                    if next.is_ascii_digit() {
                        let digits = bytes.get(i + 1..i + 4).ok_or(NameError::BadEscape)?;
                        if !digits.iter().all(u8::is_ascii_digit) {
                            return Err(NameError::BadEscape);
                        }
                        let value = digits
                            .iter()
                            .fold(0u32, |acc, d| acc * 10 + u32::from(d - b'0'));
                        if value > 255 {
                            return Err(NameError::BadEscape);
                        }
                        label.push(value as u8);
                        i += 4;
                    } else {
                        label.push(next);
                        i += 2;
                    }
                }
                _ => {
                    label.push(c);
                    i += 1;
                }
            }
            if label.len() > MAX_LABEL_LEN {
                return Err(NameError::LabelTooLong);
            }
        }
        if !label.is_empty() {
            push_label(&mut wire, &label)?;
        }
        if !absolute {
            let origin = origin.ok_or(NameError::NoOrigin)?;
            wire.extend_from_slice(&origin.wire[..origin.wire.len() - 1]);
        }
        finish_name(wire)
    }

    /// The uncompressed wire form, lower case.
    pub fn as_wire(&self) -> &[u8] {
        &self.wire
    }

    /// Length of the wire form in octets.
    pub fn wire_len(&self) -> usize {
        self.wire.len()
    }

    /// True for the root name.
    pub fn is_root(&self) -> bool {
        self.wire.len() == 1
    }

    /// Number of labels, not counting the root label.
    pub fn label_count(&self) -> usize {
        self.labels().count()
    }

    /// Labels from left to right, without the root label.
    pub fn labels(&self) -> Labels<'_> {
        Labels {
            wire: &self.wire,
            pos: 0,
        }
    }

    /// True when the first label is `*`.
    pub fn is_wildcard(&self) -> bool {
        self.wire.len() >= 2 && self.wire[0] == 1 && self.wire[1] == b'*'
    }

    /// The name with its first label removed; `None` for the root.
    pub fn parent(&self) -> Option<Name> {
        if self.is_root() {
            return None;
        }
        let skip = 1 + self.wire[0] as usize;
        Some(Name {
            wire: self.wire[skip..].into(),
        })
    }

    /// `self` and each of its ancestors, ending with the root.
    pub fn ancestors(&self) -> impl Iterator<Item = Name> + '_ {
        let mut offsets = Vec::with_capacity(8);
        let mut pos = 0;
        loop {
            offsets.push(pos);
            let len = self.wire[pos] as usize;
            if len == 0 {
                break;
            }
            pos += 1 + len;
        }
        offsets.into_iter().map(move |o| Name {
            wire: self.wire[o..].into(),
        })
    }

    /// True when `self` equals `other` or lies below it.
    pub fn is_subdomain_of(&self, other: &Name) -> bool {
        if other.wire.len() > self.wire.len() {
            return false;
        }
        let start = self.wire.len() - other.wire.len();
        if self.wire[start..] != other.wire[..] {
            return false;
        }
        // The suffix must begin on a label boundary.
        let mut pos = 0;
        while pos < start {
            pos += 1 + self.wire[pos] as usize;
        }
        pos == start
    }

    /// `label.self`, e.g. the wildcard `*.self` with `label = b"*"`.
    pub fn prepend(&self, label: &[u8]) -> Result<Name, NameError> {
        let mut wire = Vec::with_capacity(self.wire.len() + label.len() + 1);
        push_label(&mut wire, label)?;
        wire.extend_from_slice(&self.wire);
        if wire.len() > MAX_NAME_LEN {
            return Err(NameError::NameTooLong);
        }
        let mut wire: Box<[u8]> = wire.into();
        lower_labels(&mut wire);
        Ok(Name { wire })
    }

    /// `*.self`.
    pub fn wildcard(&self) -> Result<Name, NameError> {
        self.prepend(b"*")
    }

    /// Replaces the suffix `old` (which `self` must be below) with `new`,
    /// as DNAME substitution does (RFC 6672 §2.2).
    pub fn replace_suffix(&self, old: &Name, new: &Name) -> Result<Name, NameError> {
        if !self.is_subdomain_of(old) {
            return Err(NameError::Malformed);
        }
        let keep = self.wire.len() - old.wire.len();
        let mut wire = Vec::with_capacity(keep + new.wire.len());
        wire.extend_from_slice(&self.wire[..keep]);
        wire.extend_from_slice(&new.wire);
        if wire.len() > MAX_NAME_LEN {
            return Err(NameError::NameTooLong);
        }
        let mut wire: Box<[u8]> = wire.into();
        lower_labels(&mut wire);
        Ok(Name { wire })
    }

    /// A string whose byte order is the canonical order of RFC 4034 §6.1:
    /// labels from right to left, each byte as two hex digits with `0x00`
    /// and `0x01` escaped, each label closed by `00`. Stored in the
    /// `ck` field so a database can sort a zone for NSEC.
    pub fn canonical_key(&self) -> String {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let labels: Vec<&[u8]> = self.labels().collect();
        let mut out = String::with_capacity(self.wire.len() * 2 + 8);
        for label in labels.iter().rev() {
            for &b in label.iter() {
                // Escape 0x00 → 01 01 and 0x01 → 01 02 so that 00 only ends a label.
                match b {
                    0 => out.push_str("0101"),
                    1 => out.push_str("0102"),
                    _ => {
                        out.push(HEX[(b >> 4) as usize] as char);
                        out.push(HEX[(b & 15) as usize] as char);
                    }
                }
            }
            out.push_str("00");
        }
        out
    }
}

/// Iterator over the labels of a [`Name`], left to right.
pub struct Labels<'a> {
    wire: &'a [u8],
    pos: usize,
}

impl<'a> Iterator for Labels<'a> {
    type Item = &'a [u8];
    fn next(&mut self) -> Option<&'a [u8]> {
        let len = *self.wire.get(self.pos)? as usize;
        if len == 0 {
            return None;
        }
        let label = &self.wire[self.pos + 1..self.pos + 1 + len];
        self.pos += 1 + len;
        Some(label)
    }
}

fn push_label(wire: &mut Vec<u8>, label: &[u8]) -> Result<(), NameError> {
    if label.is_empty() {
        return Err(NameError::EmptyLabel);
    }
    if label.len() > MAX_LABEL_LEN {
        return Err(NameError::LabelTooLong);
    }
    wire.push(label.len() as u8);
    wire.extend_from_slice(label);
    Ok(())
}

/// The name whose labels `wire` holds (without the root label): the root
/// label added, the length checked, lower-cased.
fn finish_name(mut wire: Vec<u8>) -> Result<Name, NameError> {
    wire.push(0);
    if wire.len() > MAX_NAME_LEN {
        return Err(NameError::NameTooLong);
    }
    let mut wire: Box<[u8]> = wire.into();
    lower_labels(&mut wire);
    Ok(Name { wire })
}

fn lower_labels(wire: &mut [u8]) {
    let mut pos = 0;
    while pos < wire.len() {
        let len = wire[pos] as usize;
        if len == 0 {
            break;
        }
        wire[pos + 1..pos + 1 + len].make_ascii_lowercase();
        pos += 1 + len;
    }
}

impl Ord for Name {
    fn cmp(&self, other: &Name) -> Ordering {
        let a: Vec<&[u8]> = self.labels().collect();
        let b: Vec<&[u8]> = other.labels().collect();
        for (la, lb) in a.iter().rev().zip(b.iter().rev()) {
            match la.cmp(lb) {
                Ordering::Equal => continue,
                other => return other,
            }
        }
        a.len().cmp(&b.len())
    }
}

impl PartialOrd for Name {
    fn partial_cmp(&self, other: &Name) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Name {
    /// The stored spelling ([`Escape::Key`]), with a final dot.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_root() {
            return f.write_str(".");
        }
        for label in self.labels() {
            write_label(f, label, Escape::Key)?;
            f.write_str(".")?;
        }
        Ok(())
    }
}

/// How the bytes of a label are written as text. Both forms write `.` `\`
/// `"` `(` `)` `;` `@` `$` as `\X`, space and every byte outside printable
/// ASCII as `\DDD`, and both parse back with [`Name::parse`]; they differ
/// only in the other printable characters (`!`, `#`, `/`, `|`, …).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Escape {
    /// RFC 1035 §5.1 presentation form, as zone files and logs show names:
    /// every other printable character as itself.
    Presentation,
    /// The spelling stored in the database (`docs/schema.md`), which is the
    /// [`Name`]'s `Display`: only letters, digits, `-`, `_` and `*` as
    /// themselves, every other printable character as `\DDD`, so a key never
    /// holds a raw `/` or `|` and one name has exactly one spelling.
    Key,
}

/// Writes one label's bytes (no dot) in the form `style`.
pub fn write_label<W: fmt::Write + ?Sized>(
    out: &mut W,
    label: &[u8],
    style: Escape,
) -> fmt::Result {
    for &b in label {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'*' => {
                out.write_char(b as char)?
            }
            b'.' | b'\\' | b'"' | b'(' | b')' | b';' | b'@' | b'$' => {
                out.write_char('\\')?;
                out.write_char(b as char)?
            }
            0x21..=0x7e if style == Escape::Presentation => out.write_char(b as char)?,
            _ => write!(out, "\\{b:03}")?,
        }
    }
    Ok(())
}

/// The uncompressed wire name at `at` in `rd` in presentation form
/// ([`Escape::Presentation`]), letter case kept, with a final dot; returns it
/// and the offset after it. `None` if the name runs past the end.
pub fn wire_name_text(rd: &[u8], at: usize) -> Option<(String, usize)> {
    let mut out = String::new();
    let mut pos = at;
    loop {
        let len = *rd.get(pos)? as usize;
        if len == 0 {
            if out.is_empty() {
                out.push('.');
            }
            return Some((out, pos + 1));
        }
        let label = rd.get(pos + 1..pos + 1 + len)?;
        write_label(&mut out, label, Escape::Presentation).ok()?;
        out.push('.');
        pos += 1 + len;
    }
}

/// A wire-format name of exactly `total` octets (root label included, at
/// least 3), built by hand so that it can be longer than a `Name` allows:
/// hostile data for tests of the 255-octet limit.
pub fn long_wire_name(total: usize) -> Vec<u8> {
    assert!(
        total >= 3,
        "a name of {total} octets has no room for a label"
    );
    let mut w = Vec::with_capacity(total);
    while total - 1 - w.len() > 64 {
        w.push(63);
        w.extend_from_slice(&[b'a'; 63]);
    }
    let last = total - 2 - w.len();
    w.push(last as u8);
    w.extend(std::iter::repeat_n(b'b', last));
    w.push(0);
    w
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Name({self})")
    }
}

impl std::str::FromStr for Name {
    type Err = NameError;
    /// Parses an absolute name; a missing final dot is accepted as absolute.
    fn from_str(s: &str) -> Result<Name, NameError> {
        Name::parse(s, Some(&Name::root()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> Name {
        s.parse().unwrap()
    }

    #[test]
    fn case_is_folded_by_the_type() {
        assert_eq!(n("WWW.Example.COM."), n("www.example.com"));
        assert_eq!(n("WWW.Example.COM.").to_string(), "www.example.com.");
        let wire = b"\x03WwW\x07EXAMPLE\x03com\x00";
        assert_eq!(Name::from_wire(wire).unwrap(), n("www.example.com."));
        let built = Name::from_labels([&b"WWW"[..], &b"Example"[..]]).unwrap();
        assert_eq!(built.as_wire(), b"\x03www\x07example\x00");
    }

    #[test]
    fn escapes_round_trip() {
        let name = Name::parse("a\\.b.c\\065\\\\.", None).unwrap();
        let labels: Vec<&[u8]> = name.labels().collect();
        assert_eq!(labels, vec![&b"a.b"[..], &b"ca\\"[..]]);
        assert_eq!(name.to_string(), "a\\.b.ca\\\\.");
        assert_eq!(Name::parse(&name.to_string(), None).unwrap(), name);
        assert_eq!(Name::parse("a\\256.", None), Err(NameError::BadEscape));
        assert_eq!(Name::parse("a\\2x.", None), Err(NameError::BadEscape));
    }

    #[test]
    fn the_two_escapings_differ_only_in_other_printables() {
        let label = b"a!/|\x20.\\\"()\x7f;@$*_-Z";
        let mut key = String::new();
        write_label(&mut key, label, Escape::Key).unwrap();
        assert_eq!(
            key,
            "a\\033\\047\\124\\032\\.\\\\\\\"\\(\\)\\127\\;\\@\\$*_-Z"
        );
        let mut text = String::new();
        write_label(&mut text, label, Escape::Presentation).unwrap();
        assert_eq!(text, "a!/|\\032\\.\\\\\\\"\\(\\)\\127\\;\\@\\$*_-Z");
        for form in [key, text] {
            let name = Name::parse(&format!("{form}."), None).unwrap();
            assert_eq!(name.labels().next().unwrap(), label.to_ascii_lowercase());
        }
        assert_eq!(
            wire_name_text(b"\x01X\x03a.b\x00", 0),
            Some(("X.a\\.b.".to_string(), 7))
        );
        assert_eq!(wire_name_text(b"\x00", 0), Some((".".to_string(), 1)));
        assert_eq!(wire_name_text(b"\x03ab", 0), None);
    }

    #[test]
    fn limits_are_enforced() {
        let long_label = "a".repeat(64);
        assert_eq!(
            Name::parse(&format!("{long_label}."), None),
            Err(NameError::LabelTooLong)
        );
        let long_name = vec!["a".repeat(63); 4].join(".") + ".";
        assert_eq!(Name::parse(&long_name, None), Err(NameError::NameTooLong));
        assert_eq!(Name::parse("a..b.", None), Err(NameError::EmptyLabel));
        assert_eq!(Name::parse("www", None), Err(NameError::NoOrigin));
        assert!(Name::from_wire(b"\x03www").is_err());
        // 255 octets with the root label is the longest name; 256 is not one.
        let wire_of = long_wire_name;
        assert_eq!(Name::from_wire(&wire_of(255)).unwrap().wire_len(), 255);
        assert_eq!(Name::from_wire(&wire_of(256)), Err(NameError::NameTooLong));
        assert_eq!(
            Name::from_wire_prefix(&wire_of(256)),
            Err(NameError::NameTooLong)
        );
        assert!(Name::from_wire(b"\x40aaaa\x00").is_err());
    }

    #[test]
    fn relative_names_take_the_origin() {
        let origin = n("example.com.");
        assert_eq!(
            Name::parse("www", Some(&origin)).unwrap(),
            n("www.example.com.")
        );
        assert_eq!(Name::parse("www.", Some(&origin)).unwrap(), n("www."));
    }

    #[test]
    fn subdomains_respect_label_boundaries() {
        assert!(n("a.example.com").is_subdomain_of(&n("example.com")));
        assert!(n("example.com").is_subdomain_of(&n("example.com")));
        assert!(n("example.com").is_subdomain_of(&Name::root()));
        assert!(!n("xexample.com").is_subdomain_of(&n("example.com")));
        assert!(!n("com").is_subdomain_of(&n("example.com")));
        let anc: Vec<String> = n("a.b.c").ancestors().map(|a| a.to_string()).collect();
        assert_eq!(anc, vec!["a.b.c.", "b.c.", "c.", "."]);
        assert_eq!(n("a.b.c").parent().unwrap(), n("b.c"));
        assert!(n("b.c").wildcard().unwrap().is_wildcard());
        assert_eq!(
            n("x.a.example")
                .replace_suffix(&n("example"), &n("b.org"))
                .unwrap(),
            n("x.a.b.org")
        );
    }

    /// The example of RFC 4034 §6.1, shuffled, must sort back into its order.
    #[test]
    fn canonical_order_matches_rfc4034_example() {
        let ordered = [
            "example.",
            "a.example.",
            "yljkjljk.a.example.",
            "Z.a.example.",
            "zABC.a.EXAMPLE.",
            "z.example.",
            "\\001.z.example.",
            "*.z.example.",
            "\\200.z.example.",
        ];
        let mut names: Vec<Name> = ordered.iter().rev().map(|s| n(s)).collect();
        names.swap(2, 5);
        names.sort();
        let expect: Vec<Name> = ordered.iter().map(|s| n(s)).collect();
        assert_eq!(names, expect);
        // The stored key sorts the same way, byte for byte.
        let mut keys: Vec<(String, Name)> = expect
            .iter()
            .rev()
            .map(|n| (n.canonical_key(), n.clone()))
            .collect();
        keys.sort();
        let by_key: Vec<Name> = keys.into_iter().map(|(_, n)| n).collect();
        assert_eq!(by_key, expect);
    }

    #[test]
    fn canonical_key_handles_zero_octets() {
        // Label "a" < label "a\000": a shorter label that is a prefix sorts first.
        let a = Name::from_labels([&b"z"[..], &b"a"[..]]).unwrap();
        let b = Name::from_labels([&b"b"[..], &b"a\x00"[..]]).unwrap();
        assert!(a < b);
        assert!(a.canonical_key() < b.canonical_key());
    }
}
