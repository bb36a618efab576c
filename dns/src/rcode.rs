//! Response codes: numbers and their mnemonics, one table.
//!
//! ```text
//!  Rcode(3) ──name──► Some("NXDOMAIN")      Rcode(11) ──name──► None
//!  the header's 4 bits ──HEADER_NAMES──► dnsperf's names ("RCODE11" …)
//! ```

/// A response code, including the extended ones carried in OPT.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rcode(pub u16);

const TABLE: &[(u16, &str)] = &[
    (0, "NOERROR"),
    (1, "FORMERR"),
    (2, "SERVFAIL"),
    (3, "NXDOMAIN"),
    (4, "NOTIMP"),
    (5, "REFUSED"),
    (6, "YXDOMAIN"),
    (7, "YXRRSET"),
    (8, "NXRRSET"),
    (9, "NOTAUTH"),
    (10, "NOTZONE"),
    (16, "BADVERS"),
];

impl Rcode {
    /// No error.
    pub const NOERROR: Rcode = Rcode(0);
    /// The query was malformed.
    pub const FORMERR: Rcode = Rcode(1);
    /// The server failed.
    pub const SERVFAIL: Rcode = Rcode(2);
    /// The name does not exist.
    pub const NXDOMAIN: Rcode = Rcode(3);
    /// The opcode is not implemented.
    pub const NOTIMP: Rcode = Rcode(4);
    /// Refused by policy.
    pub const REFUSED: Rcode = Rcode(5);
    /// A DNAME substitution produced a name that is too long.
    pub const YXDOMAIN: Rcode = Rcode(6);
    /// An RRset exists that must not (UPDATE prerequisite, RFC 2136).
    pub const YXRRSET: Rcode = Rcode(7);
    /// An RRset that must exist does not (UPDATE prerequisite, RFC 2136).
    pub const NXRRSET: Rcode = Rcode(8);
    /// Not authoritative for the zone.
    pub const NOTAUTH: Rcode = Rcode(9);
    /// A name outside the zone of an UPDATE (RFC 2136).
    pub const NOTZONE: Rcode = Rcode(10);
    /// Unsupported EDNS version (extended).
    pub const BADVERS: Rcode = Rcode(16);

    /// The mnemonic of a code that has one.
    pub const fn name(self) -> Option<&'static str> {
        crate::rtype::lookup(TABLE, self.0)
    }
}

/// The name of each value of the header's 4-bit RCODE field, as dnsperf
/// prints them: the mnemonic, or `RCODEn`.
pub const HEADER_NAMES: [&str; 16] = {
    const OTHER: [&str; 16] = [
        "RCODE0", "RCODE1", "RCODE2", "RCODE3", "RCODE4", "RCODE5", "RCODE6", "RCODE7", "RCODE8",
        "RCODE9", "RCODE10", "RCODE11", "RCODE12", "RCODE13", "RCODE14", "RCODE15",
    ];
    let mut out = OTHER;
    let mut i = 0;
    while i < 16 {
        if let Some(name) = Rcode(i as u16).name() {
            out[i] = name;
        }
        i += 1;
    }
    out
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_come_from_one_table() {
        assert_eq!(Rcode::NXDOMAIN.name(), Some("NXDOMAIN"));
        assert_eq!(Rcode::BADVERS.name(), Some("BADVERS"));
        assert_eq!(Rcode(11).name(), None);
        assert_eq!(
            HEADER_NAMES,
            [
                "NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED", "YXDOMAIN",
                "YXRRSET", "NXRRSET", "NOTAUTH", "NOTZONE", "RCODE11", "RCODE12", "RCODE13",
                "RCODE14", "RCODE15",
            ]
        );
    }
}
