//! Tests of the whole parser: a realistic zone with exact wire bytes,
//! `$INCLUDE`, TTL defaulting, and error reporting.

use std::io::{BufRead, Cursor, Read};
use std::sync::atomic::{AtomicUsize, Ordering};

use std::path::{Path, PathBuf};

use super::*;
use crate::encoding::to_hex;
use crate::name::long_wire_name;
use crate::{Name, RType};

/// [`parse_rdata`] with the message alone as the error.
fn rdata_from_str(rtype: RType, text: &str, origin: &Name) -> Result<Vec<u8>, String> {
    parse_rdata(rtype, text, origin).map_err(|e| e.message)
}

/// A zone using every supported feature. The expected bytes below were
/// checked against an independent implementation.
const ZONE: &str = r##"; A realistic zone exercising the parser.
$ORIGIN example.com.
$TTL 1h
@   IN  SOA ns1 Hostmaster.Example.COM. (
        2024010101 ; serial
        2h         ; refresh
        15m        ; retry
        2w         ; expire
        300 )      ; minimum
    IN  NS  ns1
    IN  NS  NS2.Example.NET.
    MX  10 Mail
    3600 IN TXT "v=spf1 -all"
    IN 7200 TXT "say \"hi\"; ok" back\\slash "\065\066C" ( two
        lines )
ns1 A 192.0.2.1
    AAAA 2001:db8::1
ns2 300 A 192.0.2.2
www CNAME @
_sip._tcp SRV 10 60 5060 SIP.example.com.
@ CAA 0 issue "letsencrypt.org"
@ CAA 128 iodef "mailto:security@example.com"
_svc SVCB 1 svc.example.net. alpn=h2,h3 port=8443 ipv4hint=192.0.2.10,192.0.2.11
_svc2 HTTPS 16 foo.example.org. (alpn=h2,h3-19 mandatory=ipv4hint,alpn ipv4hint=192.0.2.1)
_svc3 HTTPS 1 . alpn="f\\\\oo\\,bar,h2" no-default-alpn ipv6hint=2001:db8::1,2001:db8::53:1 key667="hello\210qoo" ech=dGVzdA==
loc LOC 42 21 54 N 71 06 18 W -24m 30m
loc2 LOC 42 21 43.952 N 71 5 6.344 W -24m 1m 200m
loc3 LOC 52 14 05 N 00 08 50 E 10m
loc4 LOC 32 7 19 S 116 2 25 E 10m
sec DS 60485 5 1 ( 2BB183AF5F22588179A53B0A98631FAD1A292118 )
cds CDS 0 0 0 00
gen TYPE65280 \# 4 0A000001
gen2 A \# 4 c0000201
gen3 TYPE1 192.0.2.77
empty TYPE65281 \# 0
ptr PTR Host.example.com.
dname DNAME target.example.org.
naptr NAPTR 100 10 "S" "SIP+D2U" "" _sip._udp.example.com.
ssh SSHFP 1 1 dd465c09cfa51fb45020cc83316fff21b9ec74ac
_443._tcp TLSA 3 1 1 ( 0C72AC70B745AC19998811B131D662C9AC69DBDBE7CB23E5B514B566
                       64C5D3D6 )
smime SMIMEA 3 0 0 ABCDEF0123
key DNSKEY 257 3 8 AwEAAagAIKlVZrpC6Ia7gEzahOR+9W29euxhJhVVLOyQbSEW0O8gcCjF FVQUTf6v58fLjwBd0YI0EzrAcQqBGCzh/RStIoO8g0NfnfL2MTJRkxoX bfDaUeVPQuYEhg37NZWAJQ9VnMVDxP/VHL496M/QZxkjf5/Efucp2gaD X6RS6CXpoY68LsvPVjR0ZSwzz1apAzvN9dlzEheX7ICJBBtuA6G3LQpz W5hOA2hzCTMjJPJ8LbqF6dsV6DoBQzgul0sGIcGOYl7OyQdXfZ57relS Qageu+ipAdTTJ25AsRTAoub8ONGcLmqrAmRLKBP1dfwhYB4N7knNnulq QxA+Uk1ihz0=
cdnskey CDNSKEY 0 3 0 AA==
hinfo HINFO "PC-Intel" "Linux"
rp RP Admin.example.com. people
nsec NSEC host.example.com. A MX RRSIG NSEC TYPE1234
nsec3 NSEC3 1 1 12 aabbccdd 2T7B4G4VSA5SMI47K61MV5BV1A22BOJR NS SOA MX RRSIG DNSKEY NSEC3PARAM
@ NSEC3PARAM 1 0 12 aabbccdd
@ NSEC3PARAM 1 0 0 -
sig RRSIG A 8 3 86400 20240101000000 20231201000000 12345 example.com. dGVzdA==
uri URI 10 1 "https://www.example.com/"
pgp OPENPGPKEY dGVzdA==
spf SPF "v=spf1 mx -all"
Esc\.aped A 192.0.2.5
afsdb AFSDB 1 afs.example.com.
eui48 EUI48 00-00-5e-00-53-2a
eui64 EUI64 00-00-5e-ef-10-00-00-2a
csync CSYNC 66 3 A NS AAAA
zonemd ZONEMD 2024010101 1 2 ( 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
  0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef )
dhcid DHCID AAIBY2/AuCccgoJbsaxcQc9TUapptP69lOjxfNuVAA2kjEA=
kx KX 10 kx.example.com.
ord1 IN 600 A 192.0.2.20
ord2 600 IN A 192.0.2.21
ord3 A 192.0.2.22
$ORIGIN sub.example.com.
deep A 192.0.2.30
ttl1 1h30m in a 192.0.2.40
ttl2 CLASS1 2d A 192.0.2.41
"##;

fn name(s: &str) -> Name {
    s.parse().unwrap()
}

/// Hex with optional spaces, for readable expectations.
fn hex(s: &str) -> Vec<u8> {
    let digits: Vec<u8> = s.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    text::decode_hex([&digits[..]]).unwrap()
}

fn reader(text: &str, default_ttl: Option<u32>) -> ZoneFileReader {
    ZoneFileReader::from_reader(
        PathBuf::from("test.zone"),
        Box::new(Cursor::new(text.as_bytes().to_vec())),
        name("example.com."),
        default_ttl,
    )
}

fn parse_ok(text: &str, default_ttl: Option<u32>) -> Vec<Record> {
    reader(text, default_ttl)
        .collect::<Result<Vec<_>, _>>()
        .unwrap_or_else(|e| panic!("{e}"))
}

fn errors(text: &str) -> Vec<ParseError> {
    reader(text, Some(3600)).filter_map(Result::err).collect()
}

/// The single error of `text`, which must be at `line` and contain `needle`.
#[track_caller]
fn assert_error(text: &str, line: usize, needle: &str) {
    let errs = errors(text);
    assert_eq!(
        errs.len(),
        1,
        "expected one error for {text:?}, got {errs:?}"
    );
    let e = &errs[0];
    assert_eq!(e.line, line, "wrong line for {text:?}: {e}");
    assert!(
        e.message.contains(needle),
        "message of {text:?} is {:?}, expected to contain {needle:?}",
        e.message
    );
    assert_eq!(e.to_string(), format!("test.zone:{line}: {}", e.message));
}

fn find<'a>(records: &'a [Record], owner: &str, rtype: &str) -> Vec<&'a Record> {
    let owner = name(owner);
    let rtype = RType::from_mnemonic(rtype).unwrap();
    records
        .iter()
        .filter(|r| r.owner == owner && r.rtype == rtype)
        .collect()
}

#[track_caller]
fn one<'a>(records: &'a [Record], owner: &str, rtype: &str) -> &'a Record {
    let found = find(records, owner, rtype);
    assert_eq!(found.len(), 1, "{owner} {rtype}");
    found[0]
}

#[test]
fn realistic_zone_counts_lines_and_ttls() {
    let records = parse_ok(ZONE, None);
    assert_eq!(records.len(), 58);
    assert!(records.iter().all(|r| r.class == CLASS_IN));

    let soa = one(&records, "example.com.", "SOA");
    assert_eq!((soa.location.line, soa.ttl), (4, 3600));
    assert_eq!(soa.location.file.as_path(), Path::new("test.zone"));
    assert_eq!(soa.location.to_string(), "test.zone:4");

    // Owner omitted: the records below the SOA belong to the apex.
    let ns = find(&records, "example.com.", "NS");
    assert_eq!(ns.len(), 2);
    assert_eq!(ns[0].location.line, 10);
    // Case is kept in rdata names (the origin part is lower case).
    assert_eq!(ns[1].rdata, b"\x03NS2\x07Example\x03NET\x00");
    assert_eq!(ns[0].rdata, b"\x03ns1\x07example\x03com\x00");

    // TTL before class and class before TTL; BIND units.
    let txt = find(&records, "example.com.", "TXT");
    assert_eq!((txt[0].ttl, txt[0].location.line), (3600, 13));
    assert_eq!((txt[1].ttl, txt[1].location.line), (7200, 14));
    assert_eq!(one(&records, "ord1.example.com.", "A").ttl, 600);
    assert_eq!(one(&records, "ord2.example.com.", "A").ttl, 600);
    // $TTL wins over the last explicit TTL.
    assert_eq!(one(&records, "ord3.example.com.", "A").ttl, 3600);
    assert_eq!(one(&records, "ns2.example.com.", "A").ttl, 300);
    assert_eq!(one(&records, "ttl1.sub.example.com.", "A").ttl, 5400);
    assert_eq!(one(&records, "ttl2.sub.example.com.", "A").ttl, 172_800);

    // $ORIGIN applies to later names; escaped dots stay inside a label.
    assert_eq!(
        one(&records, "deep.sub.example.com.", "A").location.line,
        68
    );
    let esc = &records
        .iter()
        .find(|r| r.location.line == 55)
        .unwrap()
        .owner;
    let labels: Vec<&[u8]> = esc.labels().collect();
    assert_eq!(labels, [&b"esc.aped"[..], b"example", b"com"]);
    // Records come out in file order.
    let lines: Vec<usize> = records.iter().map(|r| r.location.line).collect();
    assert!(lines.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn realistic_zone_wire_bytes() {
    let records = parse_ok(ZONE, None);
    let rdata = |owner: &str, rtype: &str| one(&records, owner, rtype).rdata.clone();

    assert_eq!(
        rdata("example.com.", "SOA"),
        hex("03 6e7331 07 6578616d706c65 03 636f6d 00
             0a 486f73746d6173746572 07 4578616d706c65 03 434f4d 00
             78a3f175 00001c20 00000384 00127500 0000012c")
    );
    assert_eq!(
        rdata("example.com.", "MX"),
        b"\x00\x0a\x04Mail\x07example\x03com\x00"
    );
    let txt = find(&records, "example.com.", "TXT");
    assert_eq!(txt[0].rdata, b"\x0bv=spf1 -all");
    assert_eq!(
        txt[1].rdata,
        b"\x0csay \"hi\"; ok\x0aback\\slash\x03ABC\x03two\x05lines"
    );
    assert_eq!(
        rdata("ns1.example.com.", "AAAA"),
        hex("20010db8000000000000000000000001")
    );
    assert_eq!(
        rdata("www.example.com.", "CNAME"),
        b"\x07example\x03com\x00"
    );
    assert_eq!(
        rdata("_sip._tcp.example.com.", "SRV"),
        b"\x00\x0a\x00\x3c\x13\xc4\x03SIP\x07example\x03com\x00"
    );
    let caa = find(&records, "example.com.", "CAA");
    assert_eq!(caa[0].rdata, b"\x00\x05issueletsencrypt.org");
    assert_eq!(caa[1].rdata, b"\x80\x05iodefmailto:security@example.com");
    assert_eq!(
        rdata("_svc.example.com.", "SVCB"),
        hex("0001 03737663 07 6578616d706c65 03 6e6574 00
             0001 0006 02 6832 02 6833
             0003 0002 20fb
             0004 0008 c000020a c000020b")
    );
    // RFC 9460 Appendix D, figure 9: keys sorted, mandatory list sorted.
    assert_eq!(
        rdata("_svc2.example.com.", "HTTPS"),
        hex("0010 03 666f6f 07 6578616d706c65 03 6f7267 00
             0000 0004 0001 0004
             0001 0009 02 6832 05 68332d3139
             0004 0004 c0000201")
    );
    // RFC 9460 Appendix D figures 7 and 10 (escaped alpn, key667), plus the rest.
    assert_eq!(
        rdata("_svc3.example.com.", "HTTPS"),
        hex("0001 00
             0001 000c 08 665c6f6f2c626172 02 6832
             0002 0000
             0005 0004 74657374
             0006 0020 20010db8000000000000000000000001 20010db8000000000000000000530001
             029b 0009 68656c6c6fd2716f6f")
    );
    // RFC 1876 examples: version, size, hp, vp, latitude, longitude, altitude.
    assert_eq!(
        rdata("loc.example.com.", "LOC"),
        hex("00 33 16 13 89172dd0 70be15f0 00988d20")
    );
    assert_eq!(
        rdata("loc2.example.com.", "LOC"),
        hex("00 12 24 13 89170690 70bf2dd8 00988d20")
    );
    assert_eq!(
        rdata("loc3.example.com.", "LOC"),
        hex("00 12 16 13 8b3556c8 80081650 00989a68")
    );
    assert_eq!(
        rdata("loc4.example.com.", "LOC"),
        hex("00 12 16 13 791b7d28 98e64868 00989a68")
    );
    assert_eq!(
        rdata("sec.example.com.", "DS"),
        hex("ec45 05 01 2bb183af5f22588179a53b0a98631fad1a292118")
    );
    assert_eq!(rdata("cds.example.com.", "CDS"), hex("0000 00 00 00"));
    assert_eq!(rdata("gen.example.com.", "TYPE65280"), hex("0a000001"));
    assert_eq!(rdata("gen2.example.com.", "A"), hex("c0000201"));
    assert_eq!(rdata("gen3.example.com.", "A"), hex("c000024d"));
    assert_eq!(rdata("empty.example.com.", "TYPE65281"), b"");
    assert_eq!(
        rdata("ptr.example.com.", "PTR"),
        b"\x04Host\x07example\x03com\x00"
    );
    assert_eq!(
        rdata("naptr.example.com.", "NAPTR"),
        hex("0064 000a 01 53 07 5349502b443255 00 04 5f736970 04 5f756470 07 6578616d706c65 03 636f6d 00")
    );
    assert_eq!(
        rdata("_443._tcp.example.com.", "TLSA"),
        hex("03 01 01 0c72ac70b745ac19998811b131d662c9ac69dbdbe7cb23e5b514b56664c5d3d6")
    );
    assert_eq!(
        rdata("cdnskey.example.com.", "CDNSKEY"),
        hex("0000 03 00 00")
    );
    let dnskey = rdata("key.example.com.", "DNSKEY");
    assert_eq!(dnskey.len(), 4 + 260);
    assert_eq!(dnskey[..8], hex("0101 03 08 03010001"));
    assert_eq!(
        rdata("hinfo.example.com.", "HINFO"),
        b"\x08PC-Intel\x05Linux"
    );
    assert_eq!(
        rdata("rp.example.com.", "RP"),
        b"\x05Admin\x07example\x03com\x00\x06people\x07example\x03com\x00"
    );
    // Windows 0 (A MX RRSIG NSEC) and 4 (TYPE1234).
    assert_eq!(
        rdata("nsec.example.com.", "NSEC"),
        hex("04686f7374 07 6578616d706c65 03 636f6d 00
             00 06 40 01 00 00 00 03
             04 1b 000000000000000000000000000000000000000000000000000020")
    );
    assert_eq!(
        rdata("nsec3.example.com.", "NSEC3"),
        hex(
            "01 01 000c 04 aabbccdd 14 174eb2409fe28bcb4887a1836f957f0a8425e27b
             00 07 22 01 00 00 00 02 90"
        )
    );
    let params = find(&records, "example.com.", "NSEC3PARAM");
    assert_eq!(params[0].rdata, hex("01 00 000c 04 aabbccdd"));
    assert_eq!(params[1].rdata, hex("01 00 0000 00"));
    // 2024-01-01 = 0x65920080, 2023-12-01 = 0x65692200.
    assert_eq!(
        rdata("sig.example.com.", "RRSIG"),
        hex("0001 08 03 00015180 65920080 65692200 3039 07 6578616d706c65 03 636f6d 00 74657374")
    );
    assert_eq!(
        rdata("uri.example.com.", "URI"),
        b"\x00\x0a\x00\x01https://www.example.com/"
    );
    assert_eq!(rdata("pgp.example.com.", "OPENPGPKEY"), b"test");
    assert_eq!(rdata("spf.example.com.", "SPF"), b"\x0ev=spf1 mx -all");
    assert_eq!(rdata("eui48.example.com.", "EUI48"), hex("00005e00532a"));
    assert_eq!(
        rdata("csync.example.com.", "CSYNC"),
        hex("00000042 0003 00 04 60000008")
    );
    assert_eq!(
        rdata("smime.example.com.", "SMIMEA"),
        hex("03 00 00 abcdef0123")
    );
    assert_eq!(
        rdata("ssh.example.com.", "SSHFP"),
        hex("01 01 dd465c09cfa51fb45020cc83316fff21b9ec74ac")
    );
    assert_eq!(
        rdata("dname.example.com.", "DNAME"),
        b"\x06target\x07example\x03org\x00"
    );
}

#[test]
fn ttl_defaulting_rules() {
    // No $TTL: the last explicit TTL carries over (RFC 1035).
    let recs = parse_ok(
        "a 1h A 192.0.2.1\nb A 192.0.2.2\nc 2m A 192.0.2.3\nd A 192.0.2.4\n",
        None,
    );
    let ttls: Vec<u32> = recs.iter().map(|r| r.ttl).collect();
    assert_eq!(ttls, [3600, 3600, 120, 120]);
    // A $TTL wins over the last explicit TTL and over the default given.
    let recs = parse_ok("a 1h A 192.0.2.1\n$TTL 1d\nb A 192.0.2.2\n", Some(60));
    assert_eq!(recs[1].ttl, 86_400);
    // The default given acts as a $TTL.
    let recs = parse_ok("a 1h A 192.0.2.1\nb A 192.0.2.2\n", Some(60));
    assert_eq!(recs[1].ttl, 60);
    // Nothing else known: the SOA MINIMUM, for the SOA itself too.
    let recs = parse_ok("@ SOA ns hm 1 2 3 4 1h\nwww A 192.0.2.1\n", None);
    assert_eq!((recs[0].ttl, recs[1].ttl), (3600, 3600));
    // Class and TTL in both orders, with units, in upper and lower case.
    let recs = parse_ok("a IN 1H a 192.0.2.1\nb 1w2d in A 192.0.2.2\n", None);
    assert_eq!((recs[0].ttl, recs[1].ttl), (3600, 9 * 86_400));
}

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

#[test]
fn include_follows_relative_paths_and_restores_state() {
    let dir = TempDir::new();
    dir.write(
        "sub/hosts.inc",
        "host A 192.0.2.2\n$ORIGIN changed.example.com.\nx A 192.0.2.3\n$INCLUDE nested.inc\n",
    );
    dir.write("sub/nested.inc", "\n\nn 5m A 192.0.2.4\n");
    // Starts with a blank owner: the includer's previous owner.
    dir.write("sub/blank.inc", "  TXT inherited\n");
    dir.write(
        "main.zone",
        "$ORIGIN example.com.\n$TTL 300\nwww A 192.0.2.1\n$INCLUDE sub/hosts.inc sub\n  TXT \"owner restored\"\nafter A 192.0.2.9 ; origin restored\n$INCLUDE \"sub/nested.inc\"\n$INCLUDE sub/blank.inc\n",
    );
    let main = dir.path("main.zone");
    let records: Vec<Record> = ZoneFileReader::open(&main, Name::root(), None)
        .unwrap()
        .map(|r| r.unwrap_or_else(|e| panic!("{e}")))
        .collect();
    let summary: Vec<(String, String, usize, u32)> = records
        .iter()
        .map(|r| {
            let file = r.location.file.strip_prefix(&dir.0).unwrap();
            (
                r.owner.to_string(),
                file.display().to_string(),
                r.location.line,
                r.ttl,
            )
        })
        .collect();
    let expect = [
        ("www.example.com.", "main.zone", 3, 300),
        ("host.sub.example.com.", "sub/hosts.inc", 1, 300),
        ("x.changed.example.com.", "sub/hosts.inc", 3, 300),
        ("n.changed.example.com.", "sub/nested.inc", 3, 300),
        ("www.example.com.", "main.zone", 5, 300),
        ("after.example.com.", "main.zone", 6, 300),
        ("n.example.com.", "sub/nested.inc", 3, 300),
        ("after.example.com.", "sub/blank.inc", 1, 300),
    ];
    let expect: Vec<(String, String, usize, u32)> = expect
        .iter()
        .map(|(o, f, l, t)| (o.to_string(), f.to_string(), *l, *t))
        .collect();
    assert_eq!(summary, expect);
    assert_eq!(records[4].rtype, RType::TXT);
    // TTL is 300 even after "n 5m": $TTL wins; the explicit one is kept.
    assert_eq!(records[3].ttl, 300);
}

#[test]
fn include_errors() {
    let dir = TempDir::new();
    dir.write("a.inc", "a A 192.0.2.1\n$INCLUDE b.inc\n");
    dir.write("b.inc", "b A 192.0.2.2\n\n$INCLUDE a.inc\nc A 192.0.2.3\n");
    dir.write(
        "missing.zone",
        "x A 192.0.2.1\n$INCLUDE nowhere.inc\ny A 192.0.2.2\n",
    );
    for i in 0..=MAX_INCLUDE_DEPTH + 1 {
        dir.write(&format!("d{i}.inc"), &format!("$INCLUDE d{}.inc\n", i + 1));
    }
    dir.write(
        &format!("d{}.inc", MAX_INCLUDE_DEPTH + 2),
        "deep A 192.0.2.1\n",
    );
    let origin = name("example.com.");
    let run = |file: &str| -> Vec<Result<Record, ParseError>> {
        ZoneFileReader::open(&dir.path(file), origin.clone(), Some(60))
            .unwrap()
            .collect()
    };

    let items = run("a.inc");
    assert_eq!(items.len(), 4);
    let e = items[2].as_ref().unwrap_err();
    assert_eq!((e.file.as_path(), e.line), (dir.path("b.inc").as_path(), 3));
    assert!(e.message.contains("$INCLUDE loop"), "{e}");
    assert_eq!(items[3].as_ref().unwrap().owner, name("c.example.com."));

    let items = run("missing.zone");
    assert_eq!(items.len(), 3);
    let e = items[1].as_ref().unwrap_err();
    assert_eq!(e.line, 2);
    assert!(e.message.contains("cannot open"), "{e}");

    let items = run("d0.inc");
    assert_eq!(items.len(), 1);
    let e = items[0].as_ref().unwrap_err();
    assert_eq!(e.file, dir.path(&format!("d{MAX_INCLUDE_DEPTH}.inc")));
    assert!(e.message.contains("nested deeper than 16"), "{e}");
    // One level less is fine.
    let items = run("d2.inc");
    assert_eq!(items[0].as_ref().unwrap().owner, name("deep.example.com."));

    let e = ZoneFileReader::open(&dir.path("absent.zone"), origin, None)
        .err()
        .unwrap();
    assert!(e.message.contains("cannot open"));
}

/// The one error of reading `file` in `dir`, which must contain `needle`.
#[track_caller]
fn include_refused(reader: ZoneFileReader, needle: &str) {
    let items: Vec<_> = reader.collect();
    let errors: Vec<&ParseError> = items.iter().filter_map(|r| r.as_ref().err()).collect();
    assert_eq!(errors.len(), 1, "{items:?}");
    assert!(errors[0].message.contains(needle), "{}", errors[0]);
    assert_eq!(errors[0].line, 1, "{}", errors[0]);
    // The records after the refused $INCLUDE are still read.
    assert!(items.iter().any(|r| r
        .as_ref()
        .is_ok_and(|r| r.owner == name("after.example.com."))));
}

#[test]
fn include_reads_only_regular_files_in_allowed_directories() {
    let outside = TempDir::new();
    outside.write("secret.inc", "leak A 192.0.2.66\n");
    let dir = TempDir::new();
    let origin = name("example.com.");
    let zone = |text: &str| {
        dir.write("z.zone", &format!("{text}\nafter A 192.0.2.1\n"));
        ZoneFileReader::open(&dir.path("z.zone"), origin.clone(), Some(60)).unwrap()
    };
    let secret = outside.path("secret.inc");
    // Absolute paths, `..` and symlinks out of the directory.
    include_refused(zone(&format!("$INCLUDE {}", secret.display())), "outside");
    include_refused(zone("$INCLUDE /etc/passwd"), "outside");
    let up = format!(
        "$INCLUDE ../{}/secret.inc",
        outside.0.file_name().unwrap().to_string_lossy()
    );
    include_refused(zone(&up), "outside");
    std::os::unix::fs::symlink(&secret, dir.path("link.inc")).unwrap();
    include_refused(zone("$INCLUDE link.inc"), "outside");
    // Devices, FIFOs and directories are never opened (a FIFO would block).
    std::os::unix::fs::symlink("/dev/zero", dir.path("zero.inc")).unwrap();
    include_refused(zone("$INCLUDE zero.inc"), "not a regular file");
    let fifo = dir.path("fifo.inc");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    include_refused(zone("$INCLUDE fifo.inc"), "not a regular file");
    dir.write("sub/x.inc", "x A 192.0.2.2\n");
    include_refused(zone("$INCLUDE sub"), "not a regular file");
    // A configured directory may be read, absolute or relative to the file.
    let allowed = zone(&format!("$INCLUDE {}", secret.display()))
        .include_from(std::slice::from_ref(&outside.0))
        .unwrap();
    let owners: Vec<Name> = allowed.map(|r| r.unwrap().owner).collect();
    assert_eq!(
        owners,
        vec![name("leak.example.com."), name("after.example.com.")]
    );
    assert!(
        ZoneFileReader::from_reader("x".into(), Box::new(std::io::empty()), origin, None)
            .include_from(&[dir.path("z.zone")])
            .is_err()
    );
}

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
            "a CERT 1 2 3 abcd".into(),
            1,
            "no presentation format known for type CERT",
        ),
        ("a AXFR x".into(), 1, "cannot appear in zone data"),
        ("a A \\# 5 c0000201".into(), 1, "does not match"),
        ("a A \\# 3 c00002".into(), 1, "must be 4 octets"),
        (
            format!("x CNAME \\# 256 {}", to_hex(&long_wire_name(256))),
            1,
            "CNAME rdata: bad name in target: name longer than 255",
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

#[test]
fn streams_large_input() {
    /// Endless-looking input made on the fly: `hN A 192.0.2.1` lines.
    struct Generated {
        next: usize,
        total: usize,
        pending: Vec<u8>,
    }
    impl Read for Generated {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.pending.is_empty() && self.next < self.total {
                self.pending = format!("h{} 1h A 192.0.2.1\n", self.next).into_bytes();
                self.next += 1;
            }
            let n = self.pending.len().min(buf.len());
            buf[..n].copy_from_slice(&self.pending[..n]);
            self.pending.drain(..n);
            Ok(n)
        }
    }
    let total = 200_000;
    let input: Box<dyn BufRead + Send> = Box::new(std::io::BufReader::new(Generated {
        next: 0,
        total,
        pending: Vec::new(),
    }));
    let mut count = 0;
    for (i, rec) in
        ZoneFileReader::from_reader(PathBuf::from("gen"), input, name("example."), None).enumerate()
    {
        let rec = rec.unwrap();
        assert_eq!(rec.location.line, i + 1);
        count += 1;
    }
    assert_eq!(count, total);
}

/// A scratch directory removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "zonefile-test-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.0.join(rel)
    }

    fn write(&self, rel: &str, text: &str) {
        let path = self.path(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
