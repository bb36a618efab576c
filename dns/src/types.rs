//! One descriptor per record type: everything mongodns knows about a type,
//! in one table. To add a type, add one entry to [`TYPES`] (its fields from
//! the RFC) and, when it has a number constant elsewhere, nothing else.
//!
//! ```text
//!  RType(n) ─► RType::info(): INDEX[n] for n < 512, else the few above ─► &TYPES[i]
//!  TypeInfo { number, mnemonic, rdata, compress, additional, canonical }
//!    rdata: Rdata::Fields([Field…]) ─┬─► rdata.rs check_rdata (each field's wire shape)
//!                                     ├─► presentation parser, field by field
//!                                     └─► presentation printer, field by field
//!           Rdata::Loc / Svcb / Apl / Ipseckey: their own codecs in presentation/
//!           Rdata::Opaque: RFC 3597 `\#` only (NULL, meta types)
//!    compress ─► server wire/writer.rs: the Name fields written with pointers
//!    additional ─► server pipeline: A/AAAA of the first Name field's target
//!                  (its offset, worked out when the table is built)
//!    canonical ─► signer: the Name fields lower-cased (RFC 4034 §6.2)
//! ```
//!
//! The table covers every type Knot DNS 3.2 or NSD 4.6 reads from a zone
//! file, plus the meta types. The mnemonic is the key of an RRset inside a
//! node document (`docs/schema.md`), so the mnemonics are part of the
//! storage contract: a type once named keeps its name.

/// What the rdata of a type looks like.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rdata {
    /// A sequence of fields, read and written one after the other.
    Fields(&'static [Field]),
    /// LOC (RFC 1876): its own text syntax.
    Loc,
    /// SVCB and HTTPS (RFC 9460): priority, target, parameters.
    Svcb,
    /// APL (RFC 3123): address prefix items.
    Apl,
    /// IPSECKEY (RFC 4025): a gateway whose form the gateway type chooses.
    Ipseckey,
    /// No text syntax but RFC 3597's `\#` (NULL, meta types).
    Opaque,
}

/// One field of rdata: its wire form and its presentation syntax. The
/// `&str` is the field's name in error messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    /// An 8-bit number.
    U8(&'static str),
    /// A 16-bit number.
    U16(&'static str),
    /// A 32-bit number.
    U32(&'static str),
    /// A 32-bit number of seconds, written as a number or a TTL (`1h`).
    Period(&'static str),
    /// A 32-bit time, written `YYYYMMDDHHmmSS` or as seconds.
    Time(&'static str),
    /// An 8-bit DNSSEC algorithm, a number or a mnemonic.
    Algorithm,
    /// A 16-bit CERT type (RFC 4398), a number or a mnemonic.
    CertType,
    /// A 16-bit record type, written as its mnemonic.
    Covered,
    /// An IPv4 address.
    Ipv4(&'static str),
    /// An IPv6 address.
    Ipv6(&'static str),
    /// 64 bits written as four groups of hex (RFC 6742 NID, L64).
    Locator64(&'static str),
    /// A domain name.
    Name(&'static str),
    /// One character-string.
    Text(&'static str),
    /// One character-string that may be left out (last field only).
    OptionalText(&'static str),
    /// One or more character-strings, to the end.
    Texts(&'static str),
    /// At least one octet to the end, written as hex.
    Hex(&'static str),
    /// At least one octet to the end, written as base64.
    Base64(&'static str),
    /// NSAP (RFC 1706): the octets to the end, written `0x` and hex.
    Nsap,
    /// An NSEC3 salt: a length octet and the salt, `-` when empty.
    Salt,
    /// An NSEC3 next hashed owner: a length octet and the hash, base32hex.
    NextHashed,
    /// An NSEC/NSEC3/CSYNC type bitmap (RFC 4034 §4.1.2), to the end.
    Bitmap,
    /// An NXT type bitmap (RFC 2535 §5.2: one bitmap of types 1-127), to the end.
    NxtBitmap,
    /// An EUI-48 or EUI-64 address (RFC 7043): octets joined by `-`.
    Eui(usize),
    /// A WKS protocol number (RFC 1035 §3.4.2), `tcp`, `udp` or a number.
    Protocol,
    /// A WKS bitmap of ports, written as port numbers, to the end.
    Ports,
    /// A CAA tag (RFC 8659): a length octet and 1-15 letters and digits.
    CaaTag,
    /// The octets to the end as one quoted string; `true`: not empty.
    Quoted(&'static str, bool),
}

/// Everything mongodns knows about one record type.
#[derive(Debug, PartialEq, Eq)]
pub struct TypeInfo {
    /// The type number.
    pub number: u16,
    /// The mnemonic (`"AAAA"`).
    pub mnemonic: &'static str,
    /// The layout and syntax of the rdata.
    pub rdata: Rdata,
    /// Names in the rdata are compressed in replies (RFC 3597 §4: only the
    /// types of RFC 1035 whose names may be compressed: NS, MD, MF, CNAME,
    /// SOA, MB, MG, MR, PTR, MINFO, MX).
    pub compress: bool,
    /// The offset in the rdata of the name whose addresses (A, AAAA) go to
    /// the additional section: NS (RFC 1035 §3.3.11), MX (§3.3.9), SRV
    /// (RFC 2782), what Knot DNS and NSD both add. Worked out from the
    /// fields when the table is built.
    pub additional: Option<usize>,
    /// Names in the rdata are lower-cased in the canonical form (RFC 4034
    /// §6.2 as RFC 6840 §5.1 amends it).
    pub canonical: bool,
}

impl TypeInfo {
    /// The offset in the rdata of the name whose addresses go to the
    /// additional section, when the type has one ([`TypeInfo::additional`]).
    #[inline]
    pub const fn target_at(&self) -> Option<usize> {
        self.additional
    }
}

impl Field {
    /// The field's size in octets when it is fixed.
    #[inline]
    pub const fn width(&self) -> Option<usize> {
        use Field::*;
        Some(match self {
            U8(_) | Algorithm | Protocol => 1,
            U16(_) | CertType | Covered => 2,
            U32(_) | Period(_) | Time(_) | Ipv4(_) => 4,
            Locator64(_) => 8,
            Ipv6(_) => 16,
            Eui(n) => *n,
            _ => return None,
        })
    }
}

use Field::*;

/// A type described by fields; `c`: names compress, `a`: additional
/// addresses, `l`: names lower-cased in canonical form.
const fn t(number: u16, mnemonic: &'static str, fields: &'static [Field]) -> TypeInfo {
    TypeInfo {
        number,
        mnemonic,
        rdata: Rdata::Fields(fields),
        compress: false,
        additional: None,
        canonical: false,
    }
}

/// A type with its own codec or none.
const fn special(number: u16, mnemonic: &'static str, rdata: Rdata) -> TypeInfo {
    TypeInfo {
        number,
        mnemonic,
        rdata,
        compress: false,
        additional: None,
        canonical: false,
    }
}

impl TypeInfo {
    /// Names compress in replies (and are canonical-lower-cased).
    const fn c(self) -> TypeInfo {
        TypeInfo {
            compress: true,
            canonical: true,
            ..self
        }
    }
    /// Names are lower-cased in canonical form.
    const fn l(self) -> TypeInfo {
        TypeInfo {
            canonical: true,
            ..self
        }
    }
    /// The first name's addresses go to the additional section: its
    /// offset, after fixed-width fields only (the table does not build
    /// otherwise).
    const fn a(self) -> TypeInfo {
        let Rdata::Fields(fields) = self.rdata else {
            panic!("additional addresses need a field layout")
        };
        let mut at = 0;
        let mut i = 0;
        while i < fields.len() {
            if let Field::Name(_) = fields[i] {
                return TypeInfo {
                    additional: Some(at),
                    ..self
                };
            }
            match fields[i].width() {
                Some(n) => at += n,
                None => panic!("a variable field before the target name"),
            }
            i += 1;
        }
        panic!("additional addresses need a name field")
    }
}

const TARGET: &[Field] = &[Name("target name")];
const DS: &[Field] = &[U16("key tag"), Algorithm, U8("digest type"), Hex("digest")];
const DNSKEY: &[Field] = &[
    U16("flags"),
    U8("protocol"),
    Algorithm,
    Base64("public key"),
];
const RRSIG: &[Field] = &[
    Covered,
    Algorithm,
    U8("labels"),
    Period("original TTL"),
    Time("signature expiration"),
    Time("signature inception"),
    U16("key tag"),
    Name("signer name"),
    Base64("signature"),
];
const TLSA: &[Field] = &[
    U8("certificate usage"),
    U8("selector"),
    U8("matching type"),
    Hex("certificate data"),
];
const TEXTS: &[Field] = &[Texts("text string")];
const BASE64: &[Field] = &[Base64("base64 data")];

/// Every type mongodns knows, in increasing number.
pub static TYPES: &[TypeInfo] = &[
    t(1, "A", &[Ipv4("IPv4 address")]),
    t(2, "NS", TARGET).c().a(),
    t(3, "MD", TARGET).c(),
    t(4, "MF", TARGET).c(),
    t(5, "CNAME", TARGET).c(),
    t(
        6,
        "SOA",
        &[
            Name("SOA MNAME"),
            Name("SOA RNAME"),
            U32("SOA serial"),
            Period("SOA refresh"),
            Period("SOA retry"),
            Period("SOA expire"),
            Period("SOA minimum"),
        ],
    )
    .c(),
    t(7, "MB", TARGET).c(),
    t(8, "MG", TARGET).c(),
    t(9, "MR", TARGET).c(),
    special(10, "NULL", Rdata::Opaque),
    t(11, "WKS", &[Ipv4("WKS address"), Protocol, Ports]),
    t(12, "PTR", TARGET).c(),
    t(13, "HINFO", &[Text("HINFO CPU"), Text("HINFO OS")]),
    t(14, "MINFO", &[Name("MINFO RMAILBX"), Name("MINFO EMAILBX")]).c(),
    t(15, "MX", &[U16("MX preference"), Name("MX exchange")])
        .c()
        .a(),
    t(16, "TXT", TEXTS),
    t(17, "RP", &[Name("RP mailbox"), Name("RP TXT name")]).l(),
    t(18, "AFSDB", &[U16("AFSDB subtype"), Name("AFSDB hostname")]).l(),
    t(19, "X25", &[Text("X25 PSDN address")]),
    t(
        20,
        "ISDN",
        &[Text("ISDN address"), OptionalText("ISDN subaddress")],
    ),
    t(
        21,
        "RT",
        &[U16("RT preference"), Name("RT intermediate host")],
    )
    .l(),
    t(22, "NSAP", &[Nsap]),
    t(24, "SIG", RRSIG).l(),
    t(25, "KEY", DNSKEY),
    t(
        26,
        "PX",
        &[U16("PX preference"), Name("PX MAP822"), Name("PX MAPX400")],
    )
    .l(),
    t(28, "AAAA", &[Ipv6("IPv6 address")]),
    special(29, "LOC", Rdata::Loc),
    t(30, "NXT", &[Name("next domain name"), NxtBitmap]).l(),
    t(
        33,
        "SRV",
        &[
            U16("SRV priority"),
            U16("SRV weight"),
            U16("SRV port"),
            Name("SRV target"),
        ],
    )
    .l()
    .a(),
    t(
        35,
        "NAPTR",
        &[
            U16("NAPTR order"),
            U16("NAPTR preference"),
            Text("NAPTR flags"),
            Text("NAPTR services"),
            Text("NAPTR regexp"),
            Name("NAPTR replacement"),
        ],
    )
    .l(),
    t(36, "KX", &[U16("KX preference"), Name("KX exchanger")]).l(),
    t(
        37,
        "CERT",
        &[CertType, U16("key tag"), Algorithm, Base64("certificate")],
    ),
    t(39, "DNAME", TARGET).l(),
    special(41, "OPT", Rdata::Opaque),
    special(42, "APL", Rdata::Apl),
    t(43, "DS", DS),
    t(
        44,
        "SSHFP",
        &[
            U8("SSHFP algorithm"),
            U8("SSHFP fingerprint type"),
            Hex("fingerprint"),
        ],
    ),
    special(45, "IPSECKEY", Rdata::Ipseckey),
    t(46, "RRSIG", RRSIG).l(),
    t(47, "NSEC", &[Name("next domain name"), Bitmap]),
    t(48, "DNSKEY", DNSKEY),
    t(49, "DHCID", BASE64),
    t(
        50,
        "NSEC3",
        &[
            U8("hash algorithm"),
            U8("flags"),
            U16("iterations"),
            Salt,
            NextHashed,
            Bitmap,
        ],
    ),
    t(
        51,
        "NSEC3PARAM",
        &[U8("hash algorithm"), U8("flags"), U16("iterations"), Salt],
    ),
    t(52, "TLSA", TLSA),
    t(53, "SMIMEA", TLSA),
    special(55, "HIP", Rdata::Opaque),
    t(59, "CDS", DS),
    t(60, "CDNSKEY", DNSKEY),
    t(61, "OPENPGPKEY", BASE64),
    t(
        62,
        "CSYNC",
        &[U32("CSYNC serial"), U16("CSYNC flags"), Bitmap],
    ),
    t(
        63,
        "ZONEMD",
        &[
            U32("ZONEMD serial"),
            U8("ZONEMD scheme"),
            U8("ZONEMD hash algorithm"),
            Hex("digest"),
        ],
    ),
    special(64, "SVCB", Rdata::Svcb),
    special(65, "HTTPS", Rdata::Svcb),
    t(99, "SPF", TEXTS),
    t(
        104,
        "NID",
        &[U16("NID preference"), Locator64("NID node ID")],
    ),
    t(105, "L32", &[U16("L32 preference"), Ipv4("L32 locator")]),
    t(
        106,
        "L64",
        &[U16("L64 preference"), Locator64("L64 locator")],
    ),
    t(107, "LP", &[U16("LP preference"), Name("LP FQDN")]),
    t(108, "EUI48", &[Eui(6)]),
    t(109, "EUI64", &[Eui(8)]),
    special(249, "TKEY", Rdata::Opaque),
    special(250, "TSIG", Rdata::Opaque),
    special(251, "IXFR", Rdata::Opaque),
    special(252, "AXFR", Rdata::Opaque),
    special(253, "MAILB", Rdata::Opaque),
    special(254, "MAILA", Rdata::Opaque),
    special(255, "ANY", Rdata::Opaque),
    t(
        256,
        "URI",
        &[
            U16("URI priority"),
            U16("URI weight"),
            Quoted("URI target", true),
        ],
    ),
    t(
        257,
        "CAA",
        &[U8("CAA flags"), CaaTag, Quoted("CAA value", false)],
    ),
    t(258, "AVC", TEXTS),
    t(32769, "DLV", DS),
];

/// Types below this number are found through [`INDEX`]; the few above it
/// by a scan of the table's tail.
const INDEXED: usize = 512;

/// `INDEX[n]` is the position of type `n` in [`TYPES`], or `u8::MAX`.
static INDEX: [u8; INDEXED] = {
    let mut index = [u8::MAX; INDEXED];
    let mut i = 0;
    while i < TYPES.len() {
        let n = TYPES[i].number as usize;
        if n < INDEXED {
            index[n] = i as u8;
        }
        i += 1;
    }
    index
};

/// The descriptor of type `n`, if mongodns knows it: an array look-up
/// (a short scan for the few numbers from 512 up).
#[inline]
pub const fn info(n: u16) -> Option<&'static TypeInfo> {
    if (n as usize) < INDEXED {
        let i = INDEX[n as usize];
        if i == u8::MAX {
            return None;
        }
        return Some(&TYPES[i as usize]);
    }
    let mut i = TYPES.len();
    while i > 0 {
        i -= 1;
        if TYPES[i].number == n {
            return Some(&TYPES[i]);
        }
        if (TYPES[i].number as usize) < INDEXED {
            return None;
        }
    }
    None
}

/// The descriptor whose mnemonic is `text`, case-insensitively.
pub fn by_mnemonic(text: &str) -> Option<&'static TypeInfo> {
    TYPES.iter().find(|t| t.mnemonic.eq_ignore_ascii_case(text))
}

#[cfg(test)]
mod tests;
