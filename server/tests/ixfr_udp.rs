//! IXFR over UDP (RFC 1995 §2): to a TSIG-signed request, the journal's
//! changes in one datagram when they fit in the client's size, else the
//! SOA alone (the client asks over TCP); to an unsigned one from the
//! access list, whose source address UDP cannot prove, the SOA alone, read
//! by the query path (no journal read, no transfer store); admitted as
//! transfers over TCP are.
//!
//! ```text
//!  import ─► AXFR (the old zone, serial S) ─► two record edits
//!  ─► dig -y +notcp IXFR=S ─► one datagram: applied to the old zone == AXFR;
//!     kdig -y +notcp reads it too
//!     now (ixfr_udp);  IXFR=<current> ─► the SOA alone
//!  ─► an edit of a dozen TXT names (about 900 bytes of changes)
//!     ─► +noedns (512) ─► the SOA alone (ixfr_udp_to_tcp); EDNS 1232 ─► all
//!  a serial older than the journal ─► the SOA alone (ixfr_udp_to_tcp)
//!  unsigned from the access list, through a relay that keeps what the
//!     server sends the database: the SOA alone, no journal read; a name
//!     117 labels deep: NOTAUTH after at most one zone read, not one per label
//!  a server whose --axfr-allow leaves loopback out: unsigned ─► REFUSED;
//!     dig -y with its key ─► the changes, signed, verified by dig;
//!     a wrong secret ─► NOTAUTH
//! ```

use dns::edit::{ChangeSet, RecordEdit};
use dns::{Name, RType};
use mongodns_testkit::*;
use std::collections::BTreeSet;
use std::time::Duration;

const ZONE: &str = "ixfr-udp.test.";
const ZONE_TEXT: &str = "$ORIGIN ixfr-udp.test.\n$TTL 300\n\
@ IN SOA ns.ixfr-udp.test. hostmaster.ixfr-udp.test. 1 7200 900 1209600 60\n\
@ IN NS ns.ixfr-udp.test.\n\
ns IN A 192.0.2.53\n\
a IN A 192.0.2.1\n\
b IN TXT \"one\"\n";

/// 32 bytes, base64.
const SECRET: &str = "bW9uZ29kbnMtaXhmci11ZHAtdHNpZy1rZXktMDAwMDE=";
/// Another secret.
const WRONG: &str = "d3Jvbmctc2VjcmV0LWZvci10aGUtaXhmci11ZHAtdGVzdA==";

fn name(text: &str) -> Name {
    text.parse().unwrap()
}

/// A fresh database holding the zone.
fn zone_db(tag: &str) -> TestZoneDb {
    block_on(async {
        let db = TestZoneDb::new(tag).await;
        db.import(ZONE, ZONE_TEXT, true).await;
        db
    })
}

/// Applies `edits` to the zone as one change (one journal entry).
fn edit(db: &TestZoneDb, edits: Vec<RecordEdit>) {
    let change = ChangeSet::new(name(ZONE), edits);
    block_on(signer::edit::apply(&db.store, &change)).expect("the edit succeeds");
}

/// An IXFR from `serial` over UDP by dig, with `extra` options.
fn udp_ixfr(port: u16, serial: u32, extra: &[&str]) -> Vec<String> {
    let kind = format!("IXFR={serial}");
    let args: Vec<&str> = ["+notcp", "+tries=1"]
        .iter()
        .chain(extra)
        .copied()
        .collect();
    transfer_lines(port, ZONE, &kind, &args)
}

/// What dig prints, status included, for an IXFR from `serial` over UDP
/// signed with `key` (as `-y` takes it).
fn signed_udp_ixfr(port: u16, serial: u32, key: &str) -> String {
    let kind = format!("IXFR={serial}");
    let args = ["+notcp", "+tries=1", "+comments", "-y", key];
    dig_transfer_with(port, ZONE, &kind, &args)
}

fn current_serial(port: u16) -> u32 {
    soa_serial(port, ZONE).expect("the zone is served")
}

/// The old zone, patched by a UDP IXFR reply, is the zone now.
fn assert_applies(old: &BTreeSet<String>, ixfr: &[String], port: u16, what: &str) {
    let mut zone = old.clone();
    assert!(apply_ixfr(&mut zone, ixfr), "{what}: incremental: {ixfr:?}");
    assert_eq!(zone, axfr_set(port, ZONE), "{what}: applied == AXFR now");
}

/// The test's TSIG key.
fn test_key() -> SharedKey {
    SharedKey {
        name: "udp-ixfr-key.".into(),
        secret: SECRET.into(),
    }
}

#[test]
fn ixfr_over_udp_sends_the_changes_when_they_fit() {
    let db = zone_db("ixfr_udp");
    let key = test_key().flag();
    let args = ["--axfr-allow", "127.0.0.1/32", "--tsig-key", &key];
    let (ours, control) = start_with_control(&db.name, &args);
    let port = ours.port;
    let udp_ixfr = |port, serial, extra: &[&str]| {
        let signed: Vec<&str> = ["-y", key.as_str()].iter().chain(extra).copied().collect();
        udp_ixfr(port, serial, &signed)
    };
    let oldest = axfr_set(port, ZONE);
    let first = current_serial(port);

    // Two changes: an add and a TXT replaced, then a name gone and a TTL.
    let txt = |s: &[u8]| vec![[&[s.len() as u8], s].concat().into()];
    edit(
        &db,
        vec![
            RecordEdit::add(
                name("c.ixfr-udp.test."),
                RType::A,
                60,
                vec![vec![192, 0, 2, 3].into()],
            ),
            RecordEdit::ReplaceRRset {
                name: name("b.ixfr-udp.test."),
                rrset: dns::RRset {
                    rtype: RType::TXT,
                    ttl: 300,
                    rdata: txt(b"two"),
                },
            },
        ],
    );
    let middle = serial_after(port, ZONE, first);
    edit(
        &db,
        vec![
            RecordEdit::DeleteName {
                name: name("a.ixfr-udp.test."),
            },
            RecordEdit::ReplaceRRset {
                name: name("c.ixfr-udp.test."),
                rrset: dns::RRset {
                    rtype: RType::A,
                    ttl: 120,
                    rdata: vec![vec![192, 0, 2, 3].into()],
                },
            },
        ],
    );
    let now = serial_after(port, ZONE, middle);

    let ixfr = udp_ixfr(port, first, &[]);
    assert_eq!(
        ixfr.iter().filter(|l| is_soa(l)).count(),
        2 * 2 + 2,
        "two changes: {ixfr:?}"
    );
    assert_applies(&oldest, &ixfr, port, "IXFR from the first serial");
    // Small enough for 512 bytes too.
    assert_applies(
        &oldest,
        &udp_ixfr(port, first, &["+noedns"]),
        port,
        "in 512 bytes",
    );
    // Knot's kdig reads the same datagram (its own IXFR parser).
    let kdig = std::process::Command::new("kdig")
        .args(["@127.0.0.1", "-p", &port.to_string(), ZONE])
        .arg(format!("IXFR={first}"))
        .args(["+notcp", "-y", &key])
        .output()
        .expect("kdig runs (Debian: knot-dnsutils)");
    let out = String::from_utf8_lossy(&kdig.stdout);
    assert!(
        out.contains("(UDP)") && out.contains("c.ixfr-udp.test.") && out.contains("1 messages"),
        "kdig got the changes in one UDP message: {out}"
    );
    assert_eq!(stat(control, "ixfr_udp"), 3);
    assert_eq!(stat(control, "ixfr_incremental"), 3);
    // Up to date: the SOA alone, not counted as a fallback.
    let soa = udp_ixfr(port, now, &[]);
    assert_eq!(soa.len(), 1, "up to date: {soa:?}");
    assert_eq!(serial_of(&soa[0]), now);
    assert_eq!(stat(control, "ixfr_udp_to_tcp"), 0);

    // About 900 bytes of changes: over 512, within dig's EDNS 1232.
    let before_big = axfr_set(port, ZONE);
    let filler = b"a text of forty bytes to fill a datagram";
    let adds = (0..12)
        .map(|i| {
            RecordEdit::add(
                name(&format!("t{i:02}.ixfr-udp.test.")),
                RType::TXT,
                300,
                txt(filler),
            )
        })
        .collect();
    edit(&db, adds);
    let big = serial_after(port, ZONE, now);
    let soa = udp_ixfr(port, now, &["+noedns"]);
    assert_eq!(
        soa.len(),
        1,
        "too large for 512 bytes: the SOA alone: {soa:?}"
    );
    assert_eq!(serial_of(&soa[0]), big);
    assert_eq!(stat(control, "ixfr_udp_to_tcp"), 1);
    assert_applies(
        &before_big,
        &udp_ixfr(port, now, &[]),
        port,
        "in 1232 bytes",
    );
    // Over TCP, the same client gets it whole.
    let tcp = transfer_lines(port, ZONE, &format!("IXFR={now}"), &[]);
    assert_applies(&before_big, &tcp, port, "over TCP");

    // Older than the journal: the SOA alone (over TCP: the whole zone).
    let soa = udp_ixfr(port, first.wrapping_sub(1000), &[]);
    assert_eq!(soa.len(), 1, "not in the journal: the SOA alone: {soa:?}");
    assert_eq!(stat(control, "ixfr_udp_to_tcp"), 2);
    assert_eq!(stat(control, "ixfr_udp"), 4);
    drop(ours);
    block_on(db.drop_db());
}

#[test]
fn unsigned_ixfr_over_udp_gets_the_soa_alone_without_a_journal_read() {
    let db = zone_db("ixfr_udp_unsigned");
    let tap = Relay::tapping_database();
    let (ours, control) =
        start_with_control_uri(&tap.uri(), &db.name, &["--axfr-allow", "127.0.0.1/32"]);
    let port = ours.port;
    let first = current_serial(port);
    let rdata = vec![vec![198, 51, 100, 8].into()];
    edit(
        &db,
        vec![RecordEdit::add(
            name("u.ixfr-udp.test."),
            RType::A,
            60,
            rdata,
        )],
    );
    let now = serial_after(port, ZONE, first);

    // Behind, unsigned, from the access list: our SOA alone.
    let soa = udp_ixfr(port, first, &[]);
    assert_eq!(soa.len(), 1, "unsigned: the SOA alone: {soa:?}");
    assert_eq!(serial_of(&soa[0]), now);
    assert_eq!(stat(control, "ixfr_udp_to_tcp"), 1);
    assert_eq!(stat(control, "ixfr_udp"), 0);
    let journal_reads = sent_commands(&tap.sent(), "find", "journal").len();
    assert_eq!(journal_reads, 0, "no journal read for an unsigned datagram");

    // A name 115 labels deep below the zone: NOTAUTH after one zone read
    // at most (the exact name), not one per ancestor.
    let deep = format!("{}{ZONE}", "x.".repeat(115));
    let zone_reads = || sent_commands(&tap.sent(), "find", "zones").len();
    let before = zone_reads();
    let raw = udp_exchange(port, &ixfr_query(&deep, first), Duration::from_secs(5)).unwrap();
    assert_eq!(raw[3] & 0x0F, 9, "NOTAUTH");
    let reads = zone_reads() - before;
    println!("a 117-label IXFR over UDP: {reads} zone reads");
    assert!(reads <= 1, "{reads} zone reads for one datagram");
    drop(ours);
    block_on(db.drop_db());
}

#[test]
fn ixfr_over_udp_is_admitted_as_a_transfer() {
    let db = zone_db("ixfr_udp_acl");
    let key = test_key();
    let args = ["--axfr-allow", "192.0.2.0/24", "--tsig-key", &key.flag()];
    let (ours, control) = start_with_control(&db.name, &args);
    let port = ours.port;
    let first = current_serial(port);
    let rdata = vec![vec![198, 51, 100, 7].into()];
    edit(
        &db,
        vec![RecordEdit::add(
            name("new.ixfr-udp.test."),
            RType::A,
            60,
            rdata,
        )],
    );
    serial_after(port, ZONE, first);

    // Unsigned from loopback, which the list leaves out: REFUSED, as TCP.
    let raw = udp_exchange(port, &ixfr_query(ZONE, first), Duration::from_secs(5)).unwrap();
    assert_eq!(raw[3] & 0x0F, 5, "REFUSED");
    assert_eq!(u16::from_be_bytes([raw[6], raw[7]]), 0, "no records");
    let raw = tcp_exchange(port, &ixfr_query(ZONE, first));
    assert_eq!(raw[3] & 0x0F, 5, "REFUSED over TCP too");

    // Signed with the key: the changes, the reply signed and verified.
    let good = key.flag();
    let out = signed_udp_ixfr(port, first, &good);
    assert!(out.contains("status: NOERROR"), "signed: {out}");
    let tsig = record_lines(&out)
        .into_iter()
        .find(|l| l.contains(" tsig "));
    assert!(
        tsig.is_some_and(|l| l.contains("noerror")),
        "a TSIG on the reply: {out}"
    );
    assert!(
        !out.contains("Couldn't verify") && !out.contains("failure"),
        "dig verified it: {out}"
    );
    let lines = udp_ixfr(port, first, &["-y", &good]);
    assert!(
        lines.iter().any(|l| l.starts_with("new.ixfr-udp.test.")),
        "{lines:?}"
    );
    assert_eq!(stat(control, "ixfr_udp"), 2);

    // A wrong secret: NOTAUTH (BADSIG), as TCP.
    let bad = format!("hmac-sha256:{}:{WRONG}", key.name);
    let out = signed_udp_ixfr(port, first, &bad);
    assert!(out.contains("status: NOTAUTH"), "a wrong secret: {out}");
    assert_eq!(stat(control, "ixfr_udp"), 2);
    drop(ours);
    block_on(db.drop_db());
}
