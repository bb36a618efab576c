//! The rdata helpers on their own (outside a zone file), and the SVCB
//! rules of RFC 9460.
//!
//! ```text
//!  (type, text or tokens, origin) ─► parse_rdata / rdata_from_text ─► wire
//!     bytes (the RFC 3597 `\#` form too), or the message
//!  SVCB text ─► Appendix D's vectors, keys sorted, its failure cases refused
//! ```

use super::*;

#[test]
fn rdata_helpers_are_reusable() {
    let origin = name("Example.org.");
    assert_eq!(
        rdata_from_str(RType::MX, "5 Mx1", &origin).unwrap(),
        b"\x00\x05\x03Mx1\x07example\x03org\x00"
    );
    let toks = vec![
        Token::bare("0"),
        Token::bare("issue"),
        Token::quoted("ca.example"),
    ];
    assert_eq!(
        rdata_from_text(RType(257), &toks, &origin).unwrap(),
        b"\x00\x05issueca.example"
    );
    assert_eq!(
        rdata_from_str(RType::TXT, r#""a\"b" \255 "" c\;d"#, &origin).unwrap(),
        b"\x03a\"b\x01\xff\x00\x03c;d"
    );
    assert_eq!(
        rdata_from_str(RType::A, r"\# 4 7f000001", &origin).unwrap(),
        [127, 0, 0, 1]
    );
    // A quoted "\#" is text, not the generic form.
    assert_eq!(
        rdata_from_str(RType::TXT, r#""\#""#, &origin).unwrap(),
        b"\x01#"
    );
    assert!(rdata_from_str(RType::SOA, r"\# 1 00", &origin).is_err());
    let aaaa = rdata_from_str(RType::AAAA, "::ffff:192.0.2.1", &origin).unwrap();
    assert_eq!(aaaa[10..], [0xff, 0xff, 192, 0, 2, 1]);
    // Unquoted bytes that are not UTF-8 pass through TXT untouched.
    let recs: Vec<Record> = ZoneFileReader::from_reader(
        PathBuf::from("bin.zone"),
        Box::new(Cursor::new(b"a TXT \"caf\xe9\"\n".to_vec())),
        name("example.com."),
        Some(1),
    )
    .map(Result::unwrap)
    .collect();
    assert_eq!(recs[0].rdata, b"\x04caf\xe9");
}

#[test]
fn svcb_rules_of_rfc9460() {
    let origin = name("example.com.");
    let svcb = |text: &str| rdata_from_str(RType::SVCB, text, &origin);
    // Appendix D figure 4: a generic key with an unquoted value.
    assert_eq!(
        svcb("1 foo.example.com. key667=hello").unwrap(),
        hex("0001 03666f6f 07 6578616d706c65 03 636f6d 00 029b 0005 68656c6c6f")
    );
    // Figure 8's alternative spelling of the escaped alpn.
    assert_eq!(
        svcb(r"16 . alpn=f\\\092oo\092,bar,h2").unwrap(),
        hex("0010 00 0001 000c 08 665c6f6f2c626172 02 6832")
    );
    // Known keys by number use the typed syntax; keys come out sorted.
    assert_eq!(
        svcb("1 . port=53 key1=h2").unwrap(),
        hex("0001 00 0001 0003 02 6832 0003 0002 0035")
    );
    // Appendix D.3 failure cases, and others.
    for (text, needle) in [
        (
            "1 foo.example.com. key1=foo key1=bar",
            "duplicate SvcParamKey",
        ),
        (
            "1 foo.example.com. mandatory=key123",
            "mandatory SvcParamKey 'key123' is missing",
        ),
        (
            "1 foo.example.com. mandatory=mandatory",
            "must not list itself",
        ),
        (
            "1 foo.example.com. mandatory=ipv4hint,ipv4hint ipv4hint=192.0.2.1",
            "duplicate key",
        ),
        (
            "1 foo.example.com. no-default-alpn",
            "no-default-alpn requires alpn",
        ),
        ("1 foo.example.com. key65535", "invalid SvcParamKey"),
        ("1 foo.example.com. foo=bar", "unknown SvcParamKey 'foo'"),
        ("1 foo.example.com. port", "needs a value"),
        ("1 foo.example.com. port=65536", "out of range"),
        ("1 foo.example.com. alpn=h2,,h3", "empty item"),
        (
            "1 foo.example.com. ipv4hint=192.0.2.300",
            "bad IPv4 address",
        ),
        ("1 foo.example.com. ipv6hint=::g", "bad IPv6 address"),
        ("1 foo.example.com. ech=%%%%", "bad base64"),
    ] {
        let err = svcb(text).unwrap_err();
        assert!(err.contains(needle), "{text}: {err}");
    }
}

/// Wire forms of the types the descriptor table added, from their RFCs'
/// examples (the differential suite holds the rest to NSD's reading).
#[test]
fn descriptor_types_have_their_rfc_wire_forms() {
    let origin = name("example.");
    let wire = |t: u16, text: &str| rdata_from_str(RType(t), text, &origin).unwrap();
    // RFC 3123 §4: the address cut after its last non-zero octet, N bit.
    assert_eq!(
        wire(42, "1:192.168.32.0/21 !1:192.168.38.0/28"),
        [0, 1, 21, 3, 192, 168, 32, 0, 1, 28, 0x83, 192, 168, 38]
    );
    assert_eq!(wire(42, "1:0.0.0.0/0"), [0, 1, 0, 0]);
    // RFC 1035 §3.4.2: address, protocol, port bitmap (25 and 80).
    let wks = wire(11, "10.0.0.1 tcp 25 80");
    assert_eq!(&wks[..5], &[10, 0, 0, 1, 6]);
    assert_eq!(wks.len(), 5 + 11);
    assert_eq!((wks[5 + 3], wks[5 + 10]), (0x40, 0x80));
    // RFC 2535 §5.2: NXT types as one bitmap from type 0.
    assert_eq!(wire(30, "a. A MX"), [1, b'a', 0, 0x40, 0x01]);
    // RFC 1706 §5: NSAP as hex after 0x, dots ignored.
    assert_eq!(wire(22, "0x47.0005.80"), [0x47, 0x00, 0x05, 0x80]);
    // RFC 4025 §3: gateway by its type; a name stays uncompressed and as written.
    assert_eq!(wire(45, "10 0 2 . AQID"), [10, 0, 2, 1, 2, 3]);
    assert_eq!(
        wire(45, "10 3 2 Gw AQID"),
        [&[10, 3, 2, 2, b'G', b'w', 7][..], b"example\0", &[1, 2, 3]].concat()
    );
    // RFC 6742: NID and L64 as four 16-bit groups; L32 an IPv4 locator.
    assert_eq!(
        wire(104, "10 0014:4fff:ff20:ee64"),
        [0, 10, 0, 0x14, 0x4f, 0xff, 0xff, 0x20, 0xee, 0x64]
    );
    assert_eq!(wire(105, "10 10.1.2.0"), [0, 10, 10, 1, 2, 0]);
    // ISDN's subaddress may be left out; CERT types by mnemonic.
    assert_eq!(wire(20, "\"1234\""), b"\x041234");
    assert_eq!(wire(37, "PGP 0 0 AQID"), [0, 3, 0, 0, 0, 1, 2, 3]);
    assert!(rdata_from_str(RType(42), "3:1.2.3.4/8", &origin).is_err());
    assert!(rdata_from_str(RType(42), "1:1.2.3.4/33", &origin).is_err());
    assert!(rdata_from_str(RType(30), "a. CAA", &origin).is_err());
    assert!(rdata_from_str(RType(45), "10 0 2 gw AQID", &origin).is_err());
    // NULL has no text form but RFC 3597's.
    assert!(rdata_from_str(RType(10), "01", &origin).is_err());
    assert_eq!(wire(10, r"\# 1 01"), [1]);
}
