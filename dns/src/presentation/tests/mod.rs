//! Tests of the whole parser: a realistic zone with exact wire bytes,
//! `$INCLUDE`, TTL defaulting, and error reporting.
//!
//! ```text
//!  zone text ─► ZoneFileReader ─► records ─► exact wire bytes, TTLs, lines
//!                              └► errors  ─► file:line and the message
//!  zone.rs     the realistic zone, TTL rules, a large streamed input
//!  rdata.rs    the rdata helpers, SVCB (RFC 9460)
//!  include.rs  $INCLUDE: relative paths, state restored, what may be read
//!  errors.rs   every error case names its line; parsing goes on after one
//! ```
//!
//! This file holds the zone and the helpers every topic shares.

mod errors;
mod include;
mod rdata;
mod zone;

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
