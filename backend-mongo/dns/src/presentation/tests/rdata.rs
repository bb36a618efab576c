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
