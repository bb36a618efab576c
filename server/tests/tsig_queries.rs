//! TSIG (RFC 8945) on ordinary queries, checked with the real `dig -y`
//! against the server binary: a signed query gets a signed reply that dig
//! verifies, over UDP and TCP, whether or not the unsigned reply is in the
//! packet cache; a reply too big for UDP with its TSIG is the question, TC
//! and the TSIG; unknown keys, wrong MACs and times outside the fudge get
//! NOTAUTH with BADKEY, BADSIG and BADTIME; unsigned queries never get a
//! TSIG from the cache. RFC 8945 §5.1 and §5.2.2.1: a TSIG that is not the
//! last record is FORMERR; a MAC truncated to 16..31 bytes is accepted
//! (dig's `hmac-sha256-128`), one under 16 bytes is FORMERR, and one under
//! `--tsig-min-mac-bytes` gets NOTAUTH/BADTRUNC. A client's fudge counts
//! for at most 300 s; keys are known only for their zones (and address
//! blocks); hmac-sha384 and hmac-sha512, checked with `dig -y` and
//! `kdig -y` (AXFR).

use hickory_proto::op::Message;
use mongodns_server::tsig::{
    sign_request, sign_request_truncated, sign_request_with_fudge, unix_now, TsigKey,
};
use mongodns_testkit::*;
use std::process::Command;
use std::time::Duration;

const SECRET: &str = "bW9uZ29kbnMtcm9idXN0LXF1ZXJ5LWtleS0wMDAx";

fn zone() -> String {
    let mut z = "$ORIGIN tsigq.test.
@ 300 IN SOA ns admin 1 3600 600 86400 60
@ 300 IN NS ns
ns 300 IN A 192.0.2.1
www 300 IN A 192.0.2.2
"
    .to_string();
    for i in 0..30 {
        z.push_str(&format!("big 300 IN TXT \"{i:02}{}\"\n", "t".repeat(100)));
    }
    z
}

/// Runs dig against the server; stdout and stderr together.
fn dig(port: u16, key: Option<&str>, extra: &[&str], name: &str, qtype: &str) -> String {
    let mut cmd = Command::new("dig");
    cmd.args(["-p", &port.to_string(), "@127.0.0.1", "+tries=1", "+time=5"]);
    if let Some(key) = key {
        cmd.args(["-y", key]);
    }
    output(cmd.args(extra).args([name, qtype]))
}

/// Runs a tool; its stdout and stderr together.
fn output(cmd: &mut Command) -> String {
    let out = cmd.output().expect("the tool runs (dig, kdig)");
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A reply dig received signed and verified.
fn assert_verified(out: &str, status: &str) {
    assert_signed_by(out, status, "qkey");
}

/// A reply dig received signed with `key` and verified.
fn assert_signed_by(out: &str, status: &str, key: &str) {
    assert!(out.contains(&format!("status: {status}")), "{out}");
    assert!(
        out.contains("TSIG PSEUDOSECTION") && out.contains(&format!("{key}.\t")),
        "the reply is signed: {out}"
    );
    assert!(
        !out.contains("could not be validated") && !out.contains("Couldn't verify"),
        "dig verifies the reply's TSIG: {out}"
    );
}

#[test]
fn signed_queries_get_signed_replies() {
    let db = block_on(async {
        let db = TestZoneDb::new("tsigq").await;
        db.import("tsigq.test.", &zone(), false).await;
        db
    });
    let key = format!("hmac-sha256:qkey:{SECRET}");
    let server = ServerProcess::start(&db.name, &["--tsig-key", &key]);
    let port = server.port;

    // Unsigned first: the reply goes into the packet cache, unsigned.
    let plain = dig(port, None, &[], "www.tsigq.test", "A");
    assert!(plain.contains("192.0.2.2"), "{plain}");
    assert!(!plain.contains("TSIG"), "{plain}");
    // Signed, over UDP (twice: the second may come from the cache) and TCP.
    for extra in [&[][..], &[], &["+tcp"]] {
        let out = dig(port, Some(&key), extra, "www.tsigq.test", "A");
        assert_verified(&out, "NOERROR");
        assert!(out.contains("192.0.2.2"), "{out}");
    }
    // A signed reply never reaches an unsigned asker through the cache.
    let plain = dig(port, None, &[], "www.tsigq.test", "A");
    assert!(
        plain.contains("192.0.2.2") && !plain.contains("TSIG"),
        "{plain}"
    );
    // Negative answers and refusals are signed as well.
    assert_verified(
        &dig(port, Some(&key), &[], "nothing.tsigq.test", "A"),
        "NXDOMAIN",
    );
    assert_verified(
        &dig(port, Some(&key), &[], "www.elsewhere.example", "A"),
        "REFUSED",
    );

    // 30 TXT records do not fit in 1232 bytes: over UDP the signed reply
    // is the question, TC and the TSIG (RFC 8945 §5.3); TCP gets them all.
    let out = dig(
        port,
        Some(&key),
        &["+ignore", "+bufsize=1232"],
        "big.tsigq.test",
        "TXT",
    );
    assert_verified(&out, "NOERROR");
    assert!(out.contains(" tc") && out.contains("ANSWER: 0"), "{out}");
    let out = dig(port, Some(&key), &["+tcp"], "big.tsigq.test", "TXT");
    assert_verified(&out, "NOERROR");
    assert!(out.contains("ANSWER: 30"), "{out}");

    // Wrong secret: NOTAUTH, BADSIG, no data.
    let wrong = dig(
        port,
        Some("hmac-sha256:qkey:d3Jvbmctc2VjcmV0LXdyb25nLXNlY3JldA=="),
        &[],
        "www.tsigq.test",
        "A",
    );
    assert!(
        wrong.contains("status: NOTAUTH") && wrong.contains("BADSIG"),
        "{wrong}"
    );
    assert!(!wrong.contains("192.0.2.2"), "{wrong}");
    // Unknown key: NOTAUTH, BADKEY.
    let unknown = dig(
        port,
        Some(&format!("hmac-sha256:other:{SECRET}")),
        &[],
        "www.tsigq.test",
        "A",
    );
    assert!(
        unknown.contains("status: NOTAUTH") && unknown.contains("BADKEY"),
        "{unknown}"
    );

    // Signed an hour ago (dig cannot do that): NOTAUTH, BADTIME, signed,
    // with our time in the other data (6 bytes at the very end).
    let tsig_key: TsigKey = key.parse().unwrap();
    let mut q = build_query(0x7777, "www.tsigq.test.", 1, Some((1232, false)), false);
    sign_request(&mut q, &tsig_key, unix_now() - 3600);
    let reply = udp_exchange(port, &q, Duration::from_secs(5)).expect("a reply");
    Message::from_vec(&reply).expect("the BADTIME reply parses");
    assert_eq!(reply[3] & 0x0F, 9, "NOTAUTH");
    let n = reply.len();
    assert_eq!(&reply[n - 8..n - 6], &[0, 6], "other data: our time");
    assert_eq!(
        u16::from_be_bytes([reply[n - 10], reply[n - 9]]),
        18,
        "BADTIME"
    );
    let ours = reply[n - 6..]
        .iter()
        .fold(0u64, |acc, b| acc << 8 | u64::from(*b));
    assert!(ours.abs_diff(unix_now()) < 60, "our time: {ours}");
    // The same query signed now is answered.
    let mut q = build_query(0x7778, "www.tsigq.test.", 1, Some((1232, false)), false);
    sign_request(&mut q, &tsig_key, unix_now());
    let reply = udp_exchange(port, &q, Duration::from_secs(5)).expect("a reply");
    let m = Message::from_vec(&reply).expect("the signed reply parses");
    assert_eq!(m.answers.len(), 1);
    assert_eq!(reply[3] & 0x0F, 0);

    drop(server);
    block_on(db.drop_db());
}

/// The rcode of a raw reply (header only).
fn rcode(reply: &[u8]) -> u8 {
    reply[3] & 0x0F
}

/// The TSIG error of a reply whose last record is a TSIG without other data.
fn tsig_error(reply: &[u8]) -> u16 {
    let n = reply.len();
    assert_eq!(&reply[n - 2..], &[0, 0], "no other data");
    u16::from_be_bytes([reply[n - 4], reply[n - 3]])
}

/// ARCOUNT of a raw reply.
fn arcount(reply: &[u8]) -> u16 {
    u16::from_be_bytes([reply[10], reply[11]])
}

#[test]
fn misplaced_tsig_and_truncated_macs() {
    let db = block_on(async {
        let db = TestZoneDb::new("tsigt").await;
        db.import("tsigq.test.", &zone(), false).await;
        db
    });
    let key = format!("hmac-sha256:qkey:{SECRET}");
    let tsig_key: TsigKey = key.parse().unwrap();
    let server = ServerProcess::start(&db.name, &["--tsig-key", &key]);
    let port = server.port;
    let signed = |id: u16, edns: bool| {
        let mut q = build_query(id, "www.tsigq.test.", 1, None, false);
        sign_request(&mut q, &tsig_key, unix_now());
        if edns {
            // An OPT record after the TSIG: the TSIG is no longer last.
            q.extend_from_slice(&[0, 0, 41, 4, 0xD0, 0, 0, 0, 0, 0, 0]);
            q[11] += 1;
        }
        q
    };

    // A TSIG followed by an OPT record: FORMERR, unsigned, over UDP and TCP.
    let q = signed(0x5101, true);
    let reply = udp_exchange(port, &q, Duration::from_secs(5)).expect("a reply");
    Message::from_vec(&reply).expect("the FORMERR reply parses");
    assert_eq!(rcode(&reply), 1, "FORMERR");
    assert_eq!(&reply[0..2], &[0x51, 0x01], "ID echoed");
    assert_eq!(arcount(&reply), 1, "the OPT only: no TSIG");
    assert_eq!(
        &reply[32..35],
        &[0, 0, 41],
        "the additional record is an OPT"
    );
    let reply = tcp_exchange(port, &q);
    assert_eq!(rcode(&reply), 1, "FORMERR over TCP");
    // The TSIG record moved into the answer section: FORMERR.
    let mut q = signed(0x5102, false);
    q[6..12].copy_from_slice(&[0, 1, 0, 0, 0, 0]);
    let reply = udp_exchange(port, &q, Duration::from_secs(5)).expect("a reply");
    assert_eq!(rcode(&reply), 1, "TSIG in the answer section: FORMERR");
    // Two TSIG records.
    let mut q = signed(0x5103, false);
    let question_end = 12 + "www.tsigq.test.".len() + 1 + 4;
    let record = q[question_end..].to_vec();
    q.extend_from_slice(&record);
    q[11] += 1;
    let reply = udp_exchange(port, &q, Duration::from_secs(5)).expect("a reply");
    assert_eq!(rcode(&reply), 1, "two TSIG records: FORMERR");
    // A transfer request with a misplaced TSIG: FORMERR, not NOTAUTH.
    let mut q = build_query(0x5104, "tsigq.test.", 252, None, false);
    sign_request(&mut q, &tsig_key, unix_now());
    q.extend_from_slice(&[0, 0, 41, 4, 0xD0, 0, 0, 0, 0, 0, 0]);
    q[11] += 1;
    let reply = tcp_exchange(port, &q);
    assert_eq!(rcode(&reply), 1, "AXFR with a misplaced TSIG: FORMERR");
    // The well-placed query is still answered, signed.
    let reply = udp_exchange(port, &signed(0x5105, false), Duration::from_secs(5)).unwrap();
    assert_eq!(rcode(&reply), 0);
    assert_eq!(Message::from_vec(&reply).unwrap().answers.len(), 1);

    // Truncated MACs (RFC 8945 §5.2.2.1): 16..=31 bytes accepted, and the
    // reply is signed (TSIG error 0).
    for len in [16, 24, 31] {
        let mut q = build_query(0x5200 + len as u16, "www.tsigq.test.", 1, None, false);
        sign_request_truncated(&mut q, &tsig_key, unix_now(), len);
        let reply = udp_exchange(port, &q, Duration::from_secs(5)).expect("a reply");
        let m = Message::from_vec(&reply).expect("the reply parses");
        assert_eq!(rcode(&reply), 0, "MAC of {len} bytes accepted");
        assert_eq!(m.answers.len(), 1);
        assert_eq!(tsig_error(&reply), 0);
    }
    // dig with a 128-bit MAC verifies our reply (it covers the truncated
    // request MAC).
    let out = dig(
        port,
        Some(&format!("hmac-sha256-128:qkey:{SECRET}")),
        &[],
        "www.tsigq.test",
        "A",
    );
    assert_verified(&out, "NOERROR");
    assert!(out.contains("192.0.2.2"), "{out}");
    // Under max(10 bytes, half the hash) = 16: FORMERR, whatever the MAC.
    for len in [10, 15] {
        let mut q = build_query(0x5300 + len as u16, "www.tsigq.test.", 1, None, false);
        sign_request_truncated(&mut q, &tsig_key, unix_now(), len);
        let reply = udp_exchange(port, &q, Duration::from_secs(5)).expect("a reply");
        Message::from_vec(&reply).expect("the reply parses");
        assert_eq!(rcode(&reply), 1, "MAC of {len} bytes: FORMERR");
        assert_eq!(arcount(&reply), 0, "unsigned");
    }
    drop(server);

    // A local policy of full MACs: 16 bytes is valid but too short, BADTRUNC
    // (NOTAUTH, signed); 32 bytes is answered.
    let server = ServerProcess::start(
        &db.name,
        &["--tsig-key", &key, "--tsig-min-mac-bytes", "32"],
    );
    let mut q = build_query(0x5401, "www.tsigq.test.", 1, None, false);
    sign_request_truncated(&mut q, &tsig_key, unix_now(), 16);
    let reply = udp_exchange(server.port, &q, Duration::from_secs(5)).expect("a reply");
    let m = Message::from_vec(&reply).expect("the BADTRUNC reply parses");
    assert_eq!(rcode(&reply), 9, "NOTAUTH");
    assert!(m.answers.is_empty());
    assert_eq!(tsig_error(&reply), 22, "BADTRUNC");
    let n = reply.len();
    let mac_len = u16::from_be_bytes([reply[n - 40], reply[n - 39]]);
    assert_eq!(mac_len, 32, "the BADTRUNC reply is signed");
    let out = dig(
        server.port,
        Some(&format!("hmac-sha256-128:qkey:{SECRET}")),
        &[],
        "www.tsigq.test",
        "A",
    );
    assert!(out.contains("NOTAUTH") || out.contains("BADTRUNC"), "{out}");
    let reply = udp_exchange(server.port, &signed(0x5402, false), Duration::from_secs(5)).unwrap();
    assert_eq!(rcode(&reply), 0, "a full MAC is answered");

    drop(server);
    block_on(db.drop_db());
}

/// A query for `name` signed with `key` (at `now`, claiming `fudge`), over
/// UDP: (rcode, TSIG error).
fn signed_udp(port: u16, key: &str, name: &str, now: u64, fudge: u16) -> (u8, u16) {
    let key: TsigKey = key.parse().unwrap();
    let mut q = build_query(0x6161, name, 1, None, false);
    sign_request_with_fudge(&mut q, &key, now, fudge);
    let reply = udp_exchange(port, &q, Duration::from_secs(5)).expect("a reply");
    let n = reply.len();
    // The error precedes the other data (empty, or our 6-byte time).
    let other = usize::from(u16::from_be_bytes([reply[n - 8], reply[n - 7]]));
    let error_at = if other == 6 && reply[n - 2..] != [0, 0] {
        n - 10
    } else {
        n - 4
    };
    (
        rcode(&reply),
        u16::from_be_bytes([reply[error_at], reply[error_at + 1]]),
    )
}

#[test]
fn scoped_keys_capped_fudge_and_sha384_sha512() {
    let db = block_on(async {
        let db = TestZoneDb::new("tsigscope").await;
        db.import("tsigq.test.", &zone(), false).await;
        let other = "$ORIGIN other.test.\n@ 300 IN SOA ns admin 1 3600 600 86400 60\n@ 300 IN NS ns\nns 300 IN A 192.0.2.9\nwww 300 IN A 192.0.2.10\n";
        db.import("other.test.", other, false).await;
        db
    });
    let k384 = format!("hmac-sha384:k384:{SECRET}");
    let k512 = format!("hmac-sha512:k512:{SECRET}");
    let kfrom = format!("hmac-sha256:kfrom:{SECRET}");
    let server = ServerProcess::start(
        &db.name,
        &[
            "--tsig-key",
            &format!("{k384} zones=tsigq.test."),
            "--tsig-key",
            &k512,
            "--tsig-key",
            &format!("{kfrom} zones=tsigq.test. from=192.0.2.0/24"),
        ],
    );
    let port = server.port;
    // sha384 and sha512: dig signs, the server verifies and signs back,
    // dig verifies the reply.
    let out = dig(port, Some(&k384), &[], "www.tsigq.test.", "A");
    assert_signed_by(&out, "NOERROR", "k384");
    let out = dig(port, Some(&k512), &["+tcp"], "www.other.test.", "A");
    assert_signed_by(&out, "NOERROR", "k512");
    // A key for tsigq.test. is unknown for other.test.: NOTAUTH, BADKEY.
    let now = unix_now();
    assert_eq!(signed_udp(port, &k384, "www.tsigq.test.", now, 300), (0, 0));
    assert_eq!(
        signed_udp(port, &k384, "www.other.test.", now, 300),
        (9, 17)
    );
    // A key limited to 192.0.2.0/24 is not accepted from 127.0.0.1.
    assert_eq!(
        signed_udp(port, &kfrom, "www.tsigq.test.", now, 300),
        (9, 17)
    );
    // A request signed an hour ago claiming a fudge of ten hours is judged
    // with 300 s: NOTAUTH, BADTIME (a replay window of 5 minutes at most).
    assert_eq!(
        signed_udp(port, &k512, "www.tsigq.test.", now - 3600, 36_000),
        (9, 18)
    );
    assert_eq!(
        signed_udp(port, &k512, "www.tsigq.test.", now - 200, 36_000),
        (0, 0)
    );
    // kdig transfers with sha512 (no --axfr-allow: TSIG alone admits it)
    // and verifies every message; with the zone-scoped sha384 key,
    // other.test. is refused as an unknown key.
    let axfr = |key: &str, zone: &str| {
        output(Command::new("kdig").args([
            "@127.0.0.1",
            "-p",
            &port.to_string(),
            "AXFR",
            zone,
            "-y",
            key,
        ]))
    };
    let out = axfr(&k512, "tsigq.test.");
    assert!(
        out.contains("big.tsigq.test.") && !out.contains("WARNING") && !out.contains("failed"),
        "a whole, verified sha512 transfer: {out}"
    );
    let out = axfr(&k384, "tsigq.test.");
    assert!(
        out.contains("big.tsigq.test.") && !out.contains("WARNING") && !out.contains("failed"),
        "a whole, verified sha384 transfer of the key's own zone: {out}"
    );
    let out = axfr(&k384, "other.test.");
    assert!(
        out.contains("BADKEY") && !out.contains("www.other.test."),
        "sha384 key scoped to tsigq.test.: {out}"
    );
    drop(server);
    block_on(db.drop_db());
}
