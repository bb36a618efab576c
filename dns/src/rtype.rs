//! Record types: the number, and through it the type's descriptor.
//!
//! ```text
//!  "AAAA" ◄──► RType(28)      "TYPE65280" ◄──► RType(65280)   (RFC 3597 §5)
//!  RType::info ─► &'static TypeInfo (types.rs: mnemonic, rdata fields,
//!                 compression, additional addresses, canonical form)
//!  RType::name: the mnemonic in constants (the server's counter labels)
//! ```
//!
//! The mnemonic is the key of an RRset inside a node document (see
//! `docs/schema.md`), so the table in `types.rs` is part of the storage
//! contract.

use std::fmt;

use crate::types::TypeInfo;

/// A record type (the TYPE field of a resource record).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct RType(pub u16);

impl RType {
    /// Types the signer maintains in a secured zone (RRSIG, NSEC, NSEC3,
    /// NSEC3PARAM, DNSKEY, CDS, CDNSKEY): other writers leave them alone.
    pub fn is_signer_owned(self) -> bool {
        matches!(self.0, 46 | 47 | 48 | 50 | 51 | 59 | 60)
    }

    /// A (IPv4 address).
    pub const A: RType = RType(1);
    /// NS (authoritative name server).
    pub const NS: RType = RType(2);
    /// CNAME (canonical name).
    pub const CNAME: RType = RType(5);
    /// SOA (start of authority).
    pub const SOA: RType = RType(6);
    /// PTR.
    pub const PTR: RType = RType(12);
    /// MX (mail exchange).
    pub const MX: RType = RType(15);
    /// TXT.
    pub const TXT: RType = RType(16);
    /// AAAA (IPv6 address).
    pub const AAAA: RType = RType(28);
    /// SRV (service location).
    pub const SRV: RType = RType(33);
    /// NAPTR.
    pub const NAPTR: RType = RType(35);
    /// DNAME (delegation of a subtree's name).
    pub const DNAME: RType = RType(39);
    /// OPT (EDNS pseudo-record).
    pub const OPT: RType = RType(41);
    /// DS (delegation signer).
    pub const DS: RType = RType(43);
    /// RRSIG.
    pub const RRSIG: RType = RType(46);
    /// NSEC.
    pub const NSEC: RType = RType(47);
    /// DNSKEY.
    pub const DNSKEY: RType = RType(48);
    /// NSEC3.
    pub const NSEC3: RType = RType(50);
    /// NSEC3PARAM.
    pub const NSEC3PARAM: RType = RType(51);
    /// CDS (child DS, RFC 7344).
    pub const CDS: RType = RType(59);
    /// CDNSKEY (child DNSKEY, RFC 7344).
    pub const CDNSKEY: RType = RType(60);
    /// SVCB.
    pub const SVCB: RType = RType(64);
    /// HTTPS.
    pub const HTTPS: RType = RType(65);
    /// IXFR (query type only).
    pub const IXFR: RType = RType(251);
    /// AXFR (query type only).
    pub const AXFR: RType = RType(252);
    /// ANY (query type only).
    pub const ANY: RType = RType(255);

    /// The mnemonic (`"AAAA"`), or `TYPEnnn` for types without one.
    pub fn mnemonic(self) -> std::borrow::Cow<'static, str> {
        match self.name() {
            Some(m) => std::borrow::Cow::Borrowed(m),
            None => std::borrow::Cow::Owned(format!("TYPE{}", self.0)),
        }
    }

    /// The mnemonic of a type that has one (usable in constants).
    pub const fn name(self) -> Option<&'static str> {
        match crate::types::info(self.0) {
            Some(t) => Some(t.mnemonic),
            None => None,
        }
    }

    /// Everything known about this type (`types.rs`), if it is known: an
    /// array look-up, no search.
    #[inline]
    pub const fn info(self) -> Option<&'static TypeInfo> {
        crate::types::info(self.0)
    }

    /// Parses a mnemonic or `TYPEnnn`, case-insensitively.
    pub fn from_mnemonic(text: &str) -> Option<RType> {
        if let Some(t) = crate::types::by_mnemonic(text) {
            return Some(RType(t.number));
        }
        let digits = text
            .get(..4)
            .filter(|p| p.eq_ignore_ascii_case("TYPE"))
            .map(|_| &text[4..])?;
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        digits.parse::<u16>().ok().map(RType)
    }

    /// Types that exist only in queries or messages, never in zone data.
    pub fn is_meta(self) -> bool {
        matches!(self.0, 41 | 128..=255)
    }
}

/// The mnemonic of `n` in a table of numbers and mnemonics (a `const fn`,
/// so tables of names can be built at compile time).
pub(crate) const fn lookup(table: &[(u16, &'static str)], n: u16) -> Option<&'static str> {
    let mut i = 0;
    while i < table.len() {
        if table[i].0 == n {
            return Some(table[i].1);
        }
        i += 1;
    }
    None
}

impl fmt::Display for RType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.mnemonic())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mnemonics_round_trip() {
        assert_eq!(RType::from_mnemonic("aaaa"), Some(RType::AAAA));
        assert_eq!(RType::from_mnemonic("TYPE65280"), Some(RType(65280)));
        assert_eq!(RType::from_mnemonic("type1"), Some(RType::A));
        assert_eq!(RType::from_mnemonic("TYPE"), None);
        assert_eq!(RType::from_mnemonic("TYPE70000"), None);
        assert_eq!(RType::from_mnemonic("BOGUS"), None);
        assert_eq!(RType(65280).mnemonic(), "TYPE65280");
        assert_eq!(RType(65280).name(), None);
        const CAA: Option<&str> = RType(257).name();
        assert_eq!(CAA, Some("CAA"));
        for t in crate::types::TYPES {
            assert_eq!(RType::from_mnemonic(t.mnemonic), Some(RType(t.number)));
        }
    }
}
