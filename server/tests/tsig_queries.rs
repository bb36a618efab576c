//! TSIG (RFC 8945) on ordinary queries, checked with the real `dig -y`
//! against the server binary: a signed query gets a signed reply that dig
//! verifies, over UDP and TCP, whether or not the unsigned reply is in the
//! packet cache; a reply too big for UDP with its TSIG is the question, TC
//! and the TSIG; unknown keys, wrong MACs and times outside the fudge get
//! NOTAUTH with BADKEY, BADSIG and BADTIME; unsigned queries never get a
//! TSIG from the cache.

mod common;

use common::*;
use hickory_proto::op::Message;
use mongodns_server::tsig::{sign_request, unix_now, TsigKey};
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
    let out = cmd
        .args(extra)
        .args([name, qtype])
        .output()
        .expect("dig runs");
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A reply dig received signed and verified.
fn assert_verified(out: &str, status: &str) {
    assert!(out.contains(&format!("status: {status}")), "{out}");
    assert!(
        out.contains("TSIG PSEUDOSECTION") && out.contains("qkey.\t"),
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
