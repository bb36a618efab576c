//! Error reporting: every error case names its line, no TTL at all is an
//! error, and parsing goes on after errors.
//!
//! ```text
//!  bad line ─► ParseError { line, message } ─► the next line is read
//! ```

use super::*;

#[test]
fn error_cases_name_the_line() {
    let long_label = "x".repeat(64);
    let long_name = vec!["y".repeat(63); 4].join(".");
    let long_txt = format!("a TXT \"{}\"", "z".repeat(256));
    let cases: Vec<(String, usize, &str)> = vec![
        (
            "a A 192.0.2.256".into(),
            1,
            "bad IPv4 address '192.0.2.256'",
        ),
        ("a A 1.2.3".into(), 1, "bad IPv4 address"),
        ("\n\na AAAA 2001:db8::g".into(), 3, "bad IPv6 address"),
        ("a MX 70000 mx".into(), 1, "MX preference"),
        ("a SRV 1 2 65536 t".into(), 1, "out of range"),
        (
            format!("a A 192.0.2.1\n{long_label} A 192.0.2.1"),
            2,
            "label longer than 63",
        ),
        (format!("a CNAME {long_name}"), 1, "name longer than 255"),
        (long_txt, 1, "longer than 255 bytes"),
        (
            "a A 192.0.2.1\nb SOA ns hm (\n 1 2 3 4 5\n".into(),
            2,
            "unbalanced parentheses",
        ),
        ("a A 192.0.2.1 )".into(), 1, "unbalanced parentheses"),
        ("a TXT \"open".into(), 1, "unterminated quoted string"),
        ("a MX 10".into(), 1, "missing rdata field"),
        (
            "a SOA ns hm 1 2 3 4".into(),
            1,
            "missing rdata field: SOA minimum",
        ),
        (
            "a A 192.0.2.1 192.0.2.2".into(),
            1,
            "extra rdata field '192.0.2.2'",
        ),
        ("a DNSKEY 257 3 8 AwE*".into(), 1, "bad base64"),
        ("a DS 1 8 2 abcdZZ".into(), 1, "bad hex"),
        ("a DS 1 8 2 abc".into(), 1, "odd number"),
        ("$FOO bar".into(), 1, "unknown directive $FOO"),
        (
            "$GENERATE 1-10 h$ A 192.0.2.$".into(),
            1,
            "unsupported directive $GENERATE",
        ),
        ("a CH TXT x".into(), 1, "only class IN is supported"),
        ("a CLASS4 TXT x".into(), 1, "only class IN is supported"),
        ("a FOO 1".into(), 1, "unknown record type 'FOO'"),
        ("a TYPE65280 abcd".into(), 1, "use the RFC 3597 form"),
        (
            "a HIP 2 abcd AwEAAQ==".into(),
            1,
            "no presentation format known for type HIP",
        ),
        ("a AXFR x".into(), 1, "cannot appear in zone data"),
        ("a A \\# 5 c0000201".into(), 1, "does not match"),
        ("a A \\# 3 c00002".into(), 1, "must be 4 octets"),
        (
            format!("x CNAME \\# 256 {}", to_hex(&long_wire_name(256))),
            1,
            "CNAME rdata: bad name in target name: name longer than 255",
        ),
        (
            format!("x MX \\# 258 000a{}", to_hex(&long_wire_name(256))),
            1,
            "name longer than 255",
        ),
        ("a NS \\# 2 c00c".into(), 1, "NS rdata: bad name"),
        (
            "a SOA \\# 10 016100016200 00000001".into(),
            1,
            "SOA rdata is truncated",
        ),
        ("a NSEC3PARAM 1 0 101 -".into(), 1, "101 hash iterations"),
        (
            "a NSEC3 1 0 65535 - 0123456789abcdefghij0123456789ab A".into(),
            1,
            "65535 hash iterations",
        ),
        ("a NSEC3PARAM \\# 5 0100006500".into(), 1, "at most 100"),
        (" A 192.0.2.1".into(), 1, "no owner name"),
        ("a 3600 IN 60 A 192.0.2.1".into(), 1, "TTL given twice"),
        ("a 1x A 192.0.2.1".into(), 1, "bad TTL '1x'"),
        ("$TTL 2147483648".into(), 1, "out of range"),
        ("$ORIGIN".into(), 1, "$ORIGIN needs an argument"),
        ("$INCLUDE a b c".into(), 1, "extra argument 'c'"),
        (
            "a LOC 42 21 54 X 71 06 18 W 0m".into(),
            1,
            "expected N or S",
        ),
        ("a LOC 91 0 0 N 0 0 0 E 0m".into(), 1, "out of range"),
        (
            "a RRSIG A 8 2 60 20241301000000 20240101000000 1 a. AA==".into(),
            1,
            "month out of range",
        ),
        ("a CAA 0 is-sue x".into(), 1, "bad CAA tag"),
        ("a NSEC3 1 0 1 - 0123W A".into(), 1, "bad base32hex"),
        ("a NSEC next FOO".into(), 1, "unknown record type 'FOO'"),
        ("a TXT".into(), 1, "missing rdata field"),
        ("a CNAME a..b".into(), 1, "empty label"),
        ("a TXT \\999".into(), 1, "above 255"),
        (
            "a DNSKEY 257 3 UNKNOWNALG AA==".into(),
            1,
            "unknown DNSSEC algorithm",
        ),
    ];
    for (text, line, needle) in &cases {
        assert_error(text, *line, needle);
    }
    assert!(cases.len() >= 15);
}

#[test]
fn no_ttl_at_all_is_an_error() {
    let errs: Vec<ParseError> = reader("www A 192.0.2.1\n", None)
        .filter_map(Result::err)
        .collect();
    assert_eq!(errs.len(), 1);
    assert_eq!(errs[0].line, 1);
    assert!(errs[0].message.contains("no TTL"));
}

#[test]
fn parsing_goes_on_after_errors() {
    let text = "a A 192.0.2.1\nb A nope\nc TXT ( \"unterminated\n  still c )\nd A 192.0.2.4\ne MX ( 10\n\n  ) ; missing exchange\nf A 192.0.2.6\n";
    let items: Vec<Result<Record, ParseError>> = reader(text, Some(60)).collect();
    let summary: Vec<Result<usize, usize>> = items
        .iter()
        .map(|i| match i {
            Ok(r) => Ok(r.location.line),
            Err(e) => Err(e.line),
        })
        .collect();
    assert_eq!(summary, [Ok(1), Err(2), Err(3), Ok(5), Err(6), Ok(9)]);
}
