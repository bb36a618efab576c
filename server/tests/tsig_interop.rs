//! TSIG (RFC 8945, hmac-sha256) against implementations nobody here wrote:
//! Knot's `kdig -y` and BIND's `dig -y` sign the requests, the real server
//! binary verifies them, and the tools verify our signed replies.
//!
//! ```text
//!  kdig -y / dig -y ──signed query (UDP, TCP)──► mongodns-server ──► signed reply
//!       └── verdict: status NOERROR, our TSIG shown, no verification warning
//!  kdig -y / dig -y ──signed AXFR──► 3,004 records in many signed messages
//!       (loopback is outside --axfr-allow: only the verified TSIG opens it)
//!  wrong secret / unknown key ──► we answer NOTAUTH (BADSIG / BADKEY), no
//!       data; kdig and dig report that error
//!  control: a relay that flips one byte of our MAC ──► kdig and dig refuse
//!       the reply (so "no warning" above is a real verdict)
//! ```

use mongodns_testkit::*;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::process::Command;
use std::time::Duration;

/// 32 bytes, base64.
const SECRET: &str = "bW9uZ29kbnMtaW50ZXJvcC10c2lnLWtleS0wMDAwMDE=";
/// The same length, another secret.
const WRONG: &str = "d3Jvbmctc2VjcmV0LWZvci10aGUtaW50ZXJvcC10ZXN0";
const KEY: &str = "interop-key";
/// TXT records of the zone, besides its SOA, NS and two A records: enough
/// for a dozen transfer messages.
const TXT_RECORDS: usize = 3000;

/// The zone's head; the TXT records follow.
const HEAD: &str = "$ORIGIN interop.test.
@ 300 IN SOA ns admin 1 3600 600 86400 60
@ 300 IN NS ns
ns 300 IN A 192.0.2.1
www 300 IN A 192.0.2.2
";

fn zone() -> String {
    let txt: String = (0..TXT_RECORDS)
        .map(|i| format!("h{i} 300 IN TXT \"record {i} of a zone that fills many messages\"\n"))
        .collect();
    format!("{HEAD}{txt}")
}

/// The zone in a fresh database and a server holding `KEY`, transfers
/// allowed from 192.0.2.0/24 only: loopback gets one only by TSIG.
fn setup(tag: &str) -> (TestZoneDb, ServerProcess) {
    let db = block_on(async {
        let db = TestZoneDb::new(tag).await;
        db.import("interop.test.", &zone(), false).await;
        db
    });
    let server = ServerProcess::start(
        &db.name,
        &["--tsig-key", &good_key(), "--axfr-allow", "192.0.2.0/24"],
    );
    (db, server)
}

/// Runs `tool` (kdig or dig) at 127.0.0.1:`port` with `key` (as for -y);
/// stdout and stderr together, and whether it exited 0.
fn run(tool: &str, port: u16, key: Option<&str>, args: &[&str]) -> (String, bool) {
    let mut cmd = Command::new(tool);
    cmd.args(["@127.0.0.1", "-p", &port.to_string()]);
    // No recursion asked (dig warns when it is not available); one try,
    // 10 s each (a transfer on the loaded machine takes seconds).
    if tool == "dig" {
        cmd.args(["+norecurse", "+tries=1", "+time=10"]);
    } else {
        cmd.args(["+norecurse", "+retry=0", "+time=10"]);
    }
    if let Some(k) = key {
        cmd.args(["-y", k]);
    }
    let out = cmd.args(args).output().unwrap_or_else(|e| {
        panic!("{tool} cannot be run ({e}): install knot-dnsutils and bind9-dnsutils")
    });
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (text, out.status.success())
}

fn good_key() -> String {
    format!("hmac-sha256:{KEY}:{SECRET}")
}

/// What kdig or dig print when a reply's TSIG does not verify.
fn verification_failed(out: &str) -> bool {
    out.contains("failed to verify")
        || out.contains("Couldn't verify")
        || out.contains("could not be validated")
        || out.contains("tsig verify failure")
}

/// A warning or error line of kdig (";; WARNING", ";; ERROR") or dig.
fn complained(out: &str) -> bool {
    out.lines().any(|l| {
        l.starts_with(";; WARNING") || l.starts_with(";; ERROR") || l.starts_with(";; Couldn't")
    })
}

/// A reply the tool received signed by us (our key's TSIG, no error) and
/// verified (no warning).
fn assert_signed_and_verified(tool: &str, out: &str) {
    assert!(
        out.contains("status: NOERROR"),
        "{tool}: not NOERROR: {out}"
    );
    let tsig = out
        .lines()
        .find(|l| l.starts_with(&format!("{KEY}.")) && l.contains("TSIG"))
        .unwrap_or_else(|| panic!("{tool}: no TSIG of {KEY} in the reply: {out}"));
    assert!(
        tsig.contains("hmac-sha256.") && tsig.contains("NOERROR"),
        "{tool}: {tsig}"
    );
    assert!(
        !verification_failed(out) && !complained(out),
        "{tool} did not verify our reply: {out}"
    );
}

#[test]
fn queries_signed_by_kdig_and_dig_get_replies_they_verify() {
    let (db, server) = setup("tsig_iq");
    let key = good_key();
    for tool in ["kdig", "dig"] {
        for tcp in [false, true] {
            let transport = if tcp { "+tcp" } else { "+notcp" };
            let (out, ok) = run(
                tool,
                server.port,
                Some(&key),
                &[transport, "www.interop.test.", "A"],
            );
            assert!(ok, "{tool} {transport} failed: {out}");
            assert_signed_and_verified(tool, &out);
            assert!(
                out.lines()
                    .any(|l| l.starts_with("www.interop.test.") && l.contains("192.0.2.2")),
                "{tool} {transport}: no answer: {out}"
            );
        }
    }
    drop(server);
    block_on(db.drop_db());
}

/// The figures a tool prints after a transfer: (messages, records).
fn transfer_size(tool: &str, out: &str) -> (usize, usize) {
    let numbers = |line: &str| -> Vec<usize> {
        line.split(|c: char| !c.is_ascii_digit())
            .filter(|s| !s.is_empty())
            .map(|s| s.parse().unwrap())
            .collect()
    };
    if tool == "kdig" {
        // ";; Received 239531 B (15 messages, 3005 records)"
        let line = out
            .lines()
            .find(|l| l.starts_with(";; Received") && l.contains("messages"))
            .unwrap_or_else(|| panic!("kdig printed no transfer size: {out}"));
        let n = numbers(line);
        (n[1], n[2])
    } else {
        // ";; XFR size: 3005 records (messages 15, bytes 239696)"
        let line = out
            .lines()
            .find(|l| l.starts_with(";; XFR size:"))
            .unwrap_or_else(|| panic!("dig printed no transfer size: {out}"));
        let n = numbers(line);
        (n[1], n[0])
    }
}

#[test]
fn axfr_signed_by_kdig_and_dig_comes_whole_in_many_verified_messages() {
    let (db, server) = setup("tsig_ix");
    // Unsigned, loopback is refused: the key is what opens the transfer.
    let (out, _) = run("kdig", server.port, None, &["AXFR", "interop.test."]);
    assert!(out.contains("REFUSED"), "unsigned AXFR: {out}");
    let key = good_key();
    // The zone's records, the closing SOA counted again.
    let want = TXT_RECORDS + 4 + 1;
    for tool in ["kdig", "dig"] {
        let (out, ok) = run(tool, server.port, Some(&key), &["AXFR", "interop.test."]);
        assert!(ok, "{tool} AXFR failed: {out}");
        assert!(
            !verification_failed(&out) && !complained(&out),
            "{tool} did not verify our transfer: {out}"
        );
        assert!(
            !out.contains("Transfer failed"),
            "{tool}: transfer failed: {out}"
        );
        let (messages, records) = transfer_size(tool, &out);
        eprintln!("{tool}: AXFR of {records} records in {messages} signed messages");
        assert!(messages >= 5, "{tool}: only {messages} messages: {out}");
        assert_eq!(records, want, "{tool}: records of the transfer");
        let soas = out
            .lines()
            .filter(|l| l.starts_with("interop.test.") && l.contains("SOA"))
            .count();
        assert_eq!(soas, 2, "{tool}: SOA first and last");
        let tsigs: Vec<&str> = out
            .lines()
            .filter(|l| l.starts_with(&format!("{KEY}.")) && l.contains("TSIG"))
            .collect();
        assert!(
            !tsigs.is_empty() && tsigs.iter().all(|l| l.contains("NOERROR")),
            "{tool}: our TSIGs: {tsigs:?}"
        );
        if tool == "dig" {
            // dig shows each message's TSIG: every one is signed.
            assert_eq!(tsigs.len(), messages, "dig: signed messages");
        }
    }
    drop(server);
    block_on(db.drop_db());
}

#[test]
fn bad_keys_are_rejected_by_us_and_the_tools_report_our_error() {
    let (db, server) = setup("tsig_ib");
    let port = server.port;
    let wrong = format!("hmac-sha256:{KEY}:{WRONG}");
    let unknown = format!("hmac-sha256:no-such-key:{SECRET}");
    // A query and a transfer; what must not show up (a record line).
    let asks: [(&[&str], &str); 2] = [
        (&["www.interop.test.", "A"], "www.interop.test."),
        (&["AXFR", "interop.test."], "h1.interop.test."),
    ];
    for tool in ["kdig", "dig"] {
        for (args, leak) in asks {
            // NOTAUTH with the TSIG error (kdig and dig print it), no data.
            for (key, error) in [(&wrong, "BADSIG"), (&unknown, "BADKEY")] {
                let (out, _) = run(tool, port, Some(key), args);
                assert!(
                    out.contains(error),
                    "{tool} {args:?} {key}: {error} not reported: {out}"
                );
                assert!(
                    !out.lines().any(|l| l.starts_with(leak)),
                    "{tool} {args:?} {key}: data despite a bad key: {out}"
                );
            }
        }
    }
    drop(server);
    block_on(db.drop_db());
}

/// Flips the last byte of the MAC of a signed message (the TSIG is the last
/// record; after its MAC come original ID, error and an empty other-data).
fn corrupt_mac(msg: &mut [u8]) {
    let n = msg.len();
    msg[n - 7] ^= 0x01;
}

/// A UDP relay to `server` that corrupts every reply's MAC; its port.
fn udp_corrupting_relay(server: u16) -> u16 {
    let front = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = front.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let back = UdpSocket::bind("127.0.0.1:0").unwrap();
        back.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut buf = [0u8; 65535];
        loop {
            let Ok((n, client)) = front.recv_from(&mut buf) else {
                return;
            };
            back.send_to(&buf[..n], ("127.0.0.1", server)).unwrap();
            if let Ok(n) = back.recv(&mut buf) {
                corrupt_mac(&mut buf[..n]);
                let _ = front.send_to(&buf[..n], client);
            }
        }
    });
    port
}

/// A TCP relay to `server` that corrupts the MAC of the first reply message
/// (RFC 8945 §5.3.1: the first message of a transfer is always signed).
fn tcp_corrupting_relay(server: u16) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { return };
            std::thread::spawn(move || relay_tcp(client, server));
        }
    });
    port
}

/// One connection of [`tcp_corrupting_relay`].
fn relay_tcp(mut client: TcpStream, server: u16) {
    let mut upstream = TcpStream::connect(("127.0.0.1", server)).unwrap();
    let mut to_server = client.try_clone().unwrap();
    let mut from_client = upstream.try_clone().unwrap();
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut to_server, &mut from_client);
    });
    let mut first = true;
    loop {
        let mut len = [0u8; 2];
        if upstream.read_exact(&mut len).is_err() {
            return;
        }
        let mut msg = vec![0u8; u16::from_be_bytes(len) as usize];
        if upstream.read_exact(&mut msg).is_err() {
            return;
        }
        if first {
            corrupt_mac(&mut msg);
            first = false;
        }
        if client.write_all(&len).is_err() || client.write_all(&msg).is_err() {
            return;
        }
    }
}

#[test]
fn kdig_and_dig_refuse_our_replies_when_their_mac_is_corrupted() {
    let (db, server) = setup("tsig_ic");
    let key = good_key();
    let udp = udp_corrupting_relay(server.port);
    let tcp = tcp_corrupting_relay(server.port);
    for tool in ["kdig", "dig"] {
        let (out, _) = run(tool, udp, Some(&key), &["+notcp", "www.interop.test.", "A"]);
        assert!(
            verification_failed(&out),
            "{tool} accepted a reply with a corrupted MAC: {out}"
        );
        // dig prints the records and warns; kdig stops at the bad message.
        let (out, ok) = run(tool, tcp, Some(&key), &["AXFR", "interop.test."]);
        assert!(
            verification_failed(&out),
            "{tool} accepted a transfer with a corrupted MAC: {out}"
        );
        if tool == "kdig" {
            assert!(!ok && !out.contains("messages,"), "kdig finished: {out}");
        }
    }
    drop(server);
    block_on(db.drop_db());
}
