//! The realistic zone (every supported feature) read line by line to
//! exact wire bytes, the TTL defaulting rules, and a large input streamed.
//!
//! ```text
//!  ZONE ─► reader ─► records: counts, lines, TTLs ─► wire bytes as expected
//!  $TTL / previous TTL / SOA minimum ─► each record's TTL
//!  endless-looking input ─► read as a stream, never whole
//! ```

use super::*;

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
