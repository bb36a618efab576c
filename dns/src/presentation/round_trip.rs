//! The printer and the parser are inverses: for every type both know,
//! printed rdata parses back to the same wire bytes, and every other type
//! (or rdata the parser would not read back from its own syntax)
//! round-trips through the RFC 3597 form.
//!
//! ```text
//!  sample text ─parse_rdata─► wire ─rdata_text─► text ─parse_rdata─► same wire
//!                                                  └─rdata_text─► same text
//!  wire ─record_text─► line ─parse_record─► same owner, TTL, type, wire
//! ```

use super::*;
use crate::{Name, RType};

/// Types the printer writes in their own syntax, with sample rdata that
/// exercises escapes, letter case and edge values.
const KNOWN: &[(&str, &str)] = &[
    ("A", "192.0.2.1"),
    ("AAAA", "2001:db8::1"),
    ("AAAA", "::ffff:192.0.2.1"),
    ("NS", "Ns1.Example.NET."),
    ("CNAME", r"a\.b\@c\;d\(\)\$x\\y\032z\255.example."),
    ("PTR", "Host"),
    ("DNAME", "."),
    ("SOA", r"ns1 Host\.Master 2024010101 2h 15m 2w 4294967295"),
    ("MX", "10 Mail"),
    ("MX", "0 ."),
    (
        "TXT",
        r#""v=spf1 -all" "say \"hi\"; (ok)" "\000\127\255\\" """#,
    ),
    ("SPF", r#""v=spf1 mx -all""#),
    ("SRV", "65535 60 5060 SIP.example.com."),
    ("DS", "60485 5 1 2BB183AF5F22588179A53B0A98631FAD1A292118"),
    ("CDS", "0 0 0 00"),
    (
        "DNSKEY",
        "257 3 8 AwEAAagAIKlVZrpC6Ia7gEzahOR+9W29euxhJhVVLOyQbSEW0O8gcCjF",
    ),
    ("CDNSKEY", "0 3 0 AA=="),
    (
        "RRSIG",
        "A 8 3 86400 20240101000000 20231201000000 12345 Example.com. dGVzdA==",
    ),
    (
        "RRSIG",
        "TYPE65280 13 0 0 19700101000000 21060207062815 0 . AAECAw==",
    ),
    ("NSEC", "host.example.com. A MX RRSIG NSEC TYPE1234"),
    ("NSEC", "host.example.com."),
    (
        "NSEC3",
        "1 1 12 aabbccdd 2T7B4G4VSA5SMI47K61MV5BV1A22BOJR NS SOA MX RRSIG DNSKEY NSEC3PARAM",
    ),
    ("NSEC3", "1 0 0 - 2t7b4g4vsa5smi47k61mv5bv1a22bojr"),
    ("NSEC3PARAM", "1 0 12 aabbccdd"),
    ("NSEC3PARAM", "1 0 0 -"),
    ("CAA", r#"128 iodef "mailto:security@example.com""#),
    ("CAA", r#"0 issue "ca.example; \"x\" \\ \255""#),
    ("CAA", r#"0 issue """#),
    (
        "TLSA",
        "3 1 1 0C72AC70B745AC19998811B131D662C9AC69DBDBE7CB23E5B514B56664C5D3D6",
    ),
    ("SMIMEA", "3 0 0 ABCDEF0123"),
    ("SSHFP", "1 1 dd465c09cfa51fb45020cc83316fff21b9ec74ac"),
    ("LOC", "42 21 43.952 N 71 5 6.344 W -24m 1m 200m"),
    ("LOC", "42 21 54 N 71 06 18 W -24m 30m"),
    ("LOC", "90 S 180 E 42849672.95m 90000000m 0m 0.01m"),
    ("LOC", "0 N 0 W -100000m"),
    ("SVCB", "0 svc.example.net."),
    (
        "SVCB",
        "1 svc.example.net. alpn=h2,h3 port=8443 ipv4hint=192.0.2.10,192.0.2.11",
    ),
    (
        "HTTPS",
        "16 foo.example.org. (alpn=h2,h3-19 mandatory=ipv4hint,alpn ipv4hint=192.0.2.1)",
    ),
    (
        "HTTPS",
        r#"1 . alpn="f\\\\oo\\,bar,h2" no-default-alpn ipv6hint=2001:db8::1,2001:db8::53:1 key667="hello\210qoo" ech=dGVzdA=="#,
    ),
    (
        "HTTPS",
        r#"1 . dohpath="/q{?dns}" ohttp key65000 key9="x\\000""#,
    ),
    (
        "NAPTR",
        r#"100 10 "S" "SIP+D2U" "!^.*$!sip:\\1@x!" _sip._udp.example.com."#,
    ),
    ("HINFO", r#""PC-Intel" "Linux""#),
    ("RP", "Admin.example.com. people"),
    ("URI", r#"10 1 "https://www.example.com/""#),
    ("AFSDB", "1 afs.example.com."),
    ("KX", "10 kx.example.com."),
    ("OPENPGPKEY", "dGVzdA=="),
    ("DHCID", "AAIBY2/AuCccgoJbsaxcQc9TUapptP69lOjxfNuVAA2kjEA="),
    ("EUI48", "00-00-5e-00-53-2a"),
    ("EUI64", "00-00-5E-EF-10-00-00-2A"),
    ("CSYNC", "66 3 A NS AAAA"),
    ("CSYNC", "66 0"),
    ("ZONEMD", "2024010101 1 2 0123456789abcdef0123456789abcdef"),
    ("MD", "Mail.Example."),
    ("MF", "mail"),
    ("MB", "Mailhost"),
    ("MG", "member"),
    ("MR", "renamed.example."),
    ("MINFO", "Admin errors.example."),
    ("WKS", "192.0.2.2 tcp 25 80 443"),
    ("WKS", "192.0.2.2 udp"),
    ("WKS", "192.0.2.2 99 0 7"),
    ("X25", "311061700956"),
    ("ISDN", r#""150862028003217" "004""#),
    ("ISDN", "150862028003217"),
    ("RT", "10 Relay"),
    ("NSAP", "0x47000580005a0000000001e133ffffff00016100"),
    (
        "SIG",
        "A 8 3 3600 20300101000000 20200101000000 12345 Signer. AQID",
    ),
    ("KEY", "256 3 8 AQID"),
    ("PX", "10 map822 mapx400.example."),
    ("NXT", "Next.example. A NS SOA MX TXT AAAA"),
    ("NXT", "next.example."),
    ("CERT", "1 12345 8 AQID"),
    (
        "APL",
        "1:192.168.32.0/21 !1:192.168.38.0/28 2:2001:db8::/32 1:0.0.0.0/0",
    ),
    ("APL", ""),
    (
        "IPSECKEY",
        "10 0 2 . AQNRU3mG7TVTO2BkR47usntb102uFJtugbo6BSGvgqt4AQ==",
    ),
    ("IPSECKEY", "10 1 2 192.0.2.38 AQID"),
    ("IPSECKEY", "10 2 2 2001:db8::1 AQID"),
    ("IPSECKEY", "10 3 0 Gw.example."),
    ("DHCID", "AAIBY2/AuCccgoJbsaxcQc9TUapptP69lOjxfNuVAA2kjEA="),
    ("OPENPGPKEY", "AQID"),
    ("NID", "10 0014:4fff:ff20:ee64"),
    ("L32", "10 10.1.2.0"),
    ("L64", "10 2001:0db8:1140:1000"),
    ("LP", "10 L64-subnet1"),
    ("URI", r#"10 1 "ftp://ftp1.example.com/public""#),
    ("AVC", r#""app-name:WOLFGANG|app-class:OAM" "x""#),
    ("DLV", "12345 8 2 49FD46E6C4B45C55D4AC69CBD3CD34AC1AFE51DE"),
];

/// Types with no syntax of their own here: always the RFC 3597 form.
const GENERIC: &[(&str, &str)] = &[("TYPE65280", r"\# 4 0A000001"), ("TYPE65281", r"\# 0")];

/// Rdata of known types that the parser would not read back from their
/// own syntax (a LOC size "0e5", SVCB keys out of order or a mandatory key
/// missing, a CAA tag with a dash, an IPSECKEY gateway type with no form): printed in the RFC 3597
/// form.
const ODD_WIRE: &[(&str, &str)] = &[
    ("LOC", r"\# 16 00051613 8b2e8a58 7b7c8f5c 0098967f"),
    ("SVCB", r"\# 16 0001 00 0003 0002 01bb 0001 0003 026832"),
    ("SVCB", r"\# 9 0001 00 0000 0002 0003"),
    ("CAA", r"\# 7 00 04 612d6263 78"),
    ("IPSECKEY", r"\# 4 0a040200"),
];

fn origin() -> Name {
    "Example.com.".parse().unwrap()
}

fn rtype(mnemonic: &str) -> RType {
    RType::from_mnemonic(mnemonic).unwrap()
}

/// Parses `text`, prints the bytes, and checks the print parses back to
/// them and prints the same again; returns the print.
fn round_trip(mnemonic: &str, text: &str) -> String {
    let t = rtype(mnemonic);
    let wire = parse_rdata(t, text, &origin()).unwrap_or_else(|e| panic!("{mnemonic} {text}: {e}"));
    let printed = rdata_text(t, &wire);
    let again = parse_rdata(t, &printed, &origin())
        .unwrap_or_else(|e| panic!("{mnemonic} {printed} (printed from {text}): {e}"));
    assert_eq!(again, wire, "{mnemonic} {text} printed as {printed}");
    assert_eq!(rdata_text(t, &again), printed);
    printed
}

#[test]
fn known_types_print_in_their_own_syntax_and_parse_back() {
    for (mnemonic, text) in KNOWN {
        let printed = round_trip(mnemonic, text);
        assert!(!printed.starts_with("\\#"), "{mnemonic}: {printed}");
    }
}

#[test]
fn other_types_round_trip_through_rfc3597() {
    for (mnemonic, text) in GENERIC {
        let printed = round_trip(mnemonic, text);
        assert!(printed.starts_with("\\# "), "{mnemonic}: {printed}");
    }
}

#[test]
fn odd_rdata_of_a_known_type_prints_as_rfc3597() {
    for (mnemonic, text) in ODD_WIRE {
        let printed = round_trip(mnemonic, text);
        assert!(printed.starts_with("\\# "), "{mnemonic}: {printed}");
    }
}

#[test]
fn malformed_rdata_of_a_known_type_prints_as_rfc3597() {
    // A truncated name, a short A: both printed generically, both refused
    // on the way back as the server would refuse them.
    for (t, wire) in [(RType::NS, &b"\x03ab"[..]), (RType::A, &[1, 2][..])] {
        let printed = rdata_text(t, wire);
        assert_eq!(
            printed,
            format!(
                "\\# {} {}",
                wire.len(),
                crate::encoding::to_hex(wire).to_uppercase()
            )
        );
        assert!(parse_rdata(t, &printed, &origin()).is_err());
    }
}

#[test]
fn whole_records_round_trip() {
    for (mnemonic, text) in KNOWN.iter().chain(GENERIC).chain(ODD_WIRE) {
        let t = rtype(mnemonic);
        let wire = parse_rdata(t, text, &origin()).unwrap();
        let owner: Name = r"a\.b.Example.com.".parse().unwrap();
        let line = record_text(&owner, 3600, t, &wire);
        let rr = parse_record(&line, &Name::root(), None).unwrap_or_else(|e| panic!("{line}: {e}"));
        assert_eq!(
            rr,
            Rr {
                owner,
                ttl: 3600,
                class: CLASS_IN,
                rtype: t,
                rdata: wire
            }
        );
    }
}
