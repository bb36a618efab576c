//! Zone transfers, against the real binary: denied by
//! default; streamed, so one can be caught part way; one per connection,
//! a global cap; aborted (no closing SOA) when its version begins to be
//! deleted; a large record sent in a large message, a record no message
//! can hold fails the transfer instead of vanishing from it.

use hickory_proto::op::{Message, ResponseCode};
use hickory_proto::rr::RecordType;
use mongodb::bson::{doc, Document};
use mongodns_testkit::*;
use socket2::{Domain, Socket, Type};
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

const HEAD: &str = "@ 300 IN SOA ns admin 1 3600 600 86400 60
@ 300 IN NS ns
ns 300 IN A 192.0.2.1
";

/// A zone of `names` names with a 120-byte TXT each (about 150 bytes a
/// name in a transfer).
fn big_zone(names: usize) -> String {
    let mut z = HEAD.to_string();
    for i in 0..names {
        z.push_str(&format!("n{i:05} 300 IN TXT \"{}\"\n", "t".repeat(120)));
    }
    z
}

/// A TXT record of `strings` character-strings of 255 octets (and one of
/// `last` octets).
fn txt_of(owner: &str, strings: usize, last: usize) -> String {
    let mut line = format!("{owner} 300 IN TXT");
    for _ in 0..strings {
        line.push_str(&format!(" \"{}\"", "x".repeat(255)));
    }
    line.push_str(&format!(" \"{}\"\n", "x".repeat(last)));
    line
}

/// The rdata of a TXT record of `strings` character-strings of 255
/// octets and one of `last` octets.
fn txt_rdata(strings: usize, last: usize) -> Vec<u8> {
    let mut rd = Vec::new();
    for len in std::iter::repeat_n(255, strings).chain([last]) {
        rd.push(len as u8);
        rd.extend(std::iter::repeat_n(b'x', len));
    }
    rd
}

fn framed(id: u16, name: &str, qtype: u16) -> Vec<u8> {
    let q = build_query(id, name, qtype, None, false);
    let mut f = (q.len() as u16).to_be_bytes().to_vec();
    f.extend_from_slice(&q);
    f
}

/// A connection with a small receive buffer, so the server can get only
/// a little ahead of what the test reads.
fn slow_reader(port: u16) -> TcpStream {
    let s = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    s.set_recv_buffer_size(4096).unwrap();
    let server: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    s.connect_timeout(&server.into(), Duration::from_secs(5))
        .unwrap();
    let s: TcpStream = s.into();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

/// The next framed message, or how the connection ended.
fn read_message(s: &mut TcpStream) -> Result<Message, ErrorKind> {
    let mut len = [0u8; 2];
    s.read_exact(&mut len).map_err(|e| e.kind())?;
    let mut m = vec![0u8; usize::from(u16::from_be_bytes(len))];
    s.read_exact(&mut m).map_err(|e| e.kind())?;
    Ok(Message::from_vec(&m).expect("a message that parses"))
}

fn soa_count(m: &Message) -> usize {
    m.answers
        .iter()
        .filter(|r| r.record_type() == RecordType::SOA)
        .count()
}

/// Reads a transfer to its end: (messages, records, SOAs, how it ended:
/// `None` after the closing SOA).
fn read_transfer(s: &mut TcpStream) -> (usize, usize, usize, Option<ErrorKind>) {
    let (mut messages, mut records, mut soas) = (0, 0, 0);
    loop {
        match read_message(s) {
            Ok(m) => {
                messages += 1;
                records += m.answers.len();
                soas += soa_count(&m);
                if soas >= 2 || m.metadata.response_code != ResponseCode::NoError {
                    return (messages, records, soas, None);
                }
            }
            Err(kind) => return (messages, records, soas, Some(kind)),
        }
    }
}

/// Waits (up to 10 s) for a `/stats` counter to reach `at_least`.
fn wait_stat(control: u16, name: &str, at_least: u64) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let v = stat(control, name);
        if v >= at_least || Instant::now() > deadline {
            return v;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Writes the zone document's `deleting` list, as a writer does before it
/// deletes a version's nodes.
fn set_deleting(db: &TestZoneDb, versions: Vec<i64>) {
    let zones = db.store.database().collection::<Document>("zones");
    block_on(async {
        zones
            .update_one(
                doc! {"_id": "stream.test."},
                doc! {"$set": {"deleting": versions}},
            )
            .await
            .unwrap()
    });
}

#[test]
fn transfers_are_refused_unless_allowed() {
    let db = block_on(async {
        let db = TestZoneDb::new("xfr_default").await;
        db.import("deny.test.", &format!("$ORIGIN deny.test.\n{HEAD}"), false)
            .await;
        db
    });
    let (server, _) = start_with_control(&db.name, &[]);
    let mut s = slow_reader(server.port);
    s.write_all(&framed(1, "deny.test.", 252)).unwrap();
    let m = read_message(&mut s).unwrap();
    assert_eq!(
        m.metadata.response_code,
        ResponseCode::Refused,
        "denied by default"
    );
    drop(server);
    let (server, _) = start_with_control(&db.name, &["--axfr-allow", "127.0.0.1/32"]);
    let mut s = slow_reader(server.port);
    s.write_all(&framed(1, "deny.test.", 252)).unwrap();
    let (_, records, soas, end) = read_transfer(&mut s);
    assert_eq!((records, soas, end), (4, 2, None), "allowed when listed");
    drop(server);
    block_on(db.drop_db());
}

#[test]
fn a_large_record_is_sent_and_one_no_message_holds_fails_the_transfer() {
    let db = block_on(async {
        let db = TestZoneDb::new("xfr_oversized").await;
        // 20 KB: more than the usual 16-KiB message, sent in a larger one.
        let large = format!("$ORIGIN large.test.\n{HEAD}{}", txt_of("big", 79, 10));
        db.import("large.test.", &large, false).await;
        // 65,535 octets of rdata: no DNS message can hold it with a header.
        // Writers refuse it; a program writing the database directly might not.
        db.import("huge.test.", &format!("$ORIGIN huge.test.\n{HEAD}"), false)
            .await;
        let zone: dns::Name = "huge.test.".parse().unwrap();
        let huge = backend_mongo::NodeWrite {
            name: "big.huge.test.".parse().unwrap(),
            rrsets: vec![dns::RRset::of(
                dns::RType::TXT,
                300,
                &[&txt_rdata(255, 254)],
            )],
        };
        merge_as_foreign_writer(&db.store, &zone, &[huge])
            .await
            .unwrap();
        db
    });
    let (server, control) = start_with_control(&db.name, &["--axfr-allow", "127.0.0.1/32"]);
    let mut s = slow_reader(server.port);
    s.write_all(&framed(1, "large.test.", 252)).unwrap();
    let (messages, records, soas, end) = read_transfer(&mut s);
    eprintln!("large.test: {messages} messages, {records} records, end {end:?}");
    assert_eq!(
        (records, soas, end),
        (5, 2, None),
        "the 20-KB TXT is in the transfer"
    );

    let mut s = slow_reader(server.port);
    s.write_all(&framed(2, "huge.test.", 252)).unwrap();
    let (messages, records, soas, end) = read_transfer(&mut s);
    eprintln!("huge.test: {messages} messages, {records} records, {soas} SOA, end {end:?}");
    assert!(soas < 2, "no closing SOA after a record was left out");
    // Nothing sent yet: SERVFAIL (a message of no records); else closed.
    assert!(records == 0 || end.is_some(), "an error, not a transfer");
    assert_eq!(stat(control, "axfr_oversized"), 1);
    drop(server);
    block_on(db.drop_db());
}

#[test]
fn streamed_transfers_are_capped_and_aborted_when_their_version_is_deleted() {
    let names = 4000;
    let db = block_on(async {
        let db = TestZoneDb::new("xfr_stream").await;
        let text = format!("$ORIGIN stream.test.\n{}", big_zone(names));
        db.import("stream.test.", &text, false).await;
        db
    });
    let key = SharedKey {
        name: "stream-key.".into(),
        secret: "c3RyZWFtLXRlc3Qta2V5LXRoaXJ0eS10d28tYnl0ZXM=".into(),
    }
    .flag();
    let (server, control) = start_with_control(
        &db.name,
        &[
            "--axfr-allow",
            "127.0.0.1/32",
            "--axfr-max-concurrent",
            "1",
            "--tcp-io-timeout-ms",
            "20000",
            "--tsig-key",
            &key,
        ],
    );
    // A transfer that has begun: its first message read, the rest waiting
    // for the client (far more than the socket buffers hold).
    let mut a = slow_reader(server.port);
    a.write_all(&framed(1, "stream.test.", 252)).unwrap();
    let first = read_message(&mut a).unwrap();
    assert_eq!(soa_count(&first), 1, "the transfer opens with the SOA");
    // The global cap: another connection's transfer is refused at once.
    let mut b = slow_reader(server.port);
    b.write_all(&framed(2, "stream.test.", 252)).unwrap();
    let refused = read_message(&mut b).unwrap();
    assert_eq!(refused.metadata.response_code, ResponseCode::Refused);
    assert_eq!(stat(control, "axfr_busy_global"), 1);
    // A signed IXFR over UDP takes a transfer slot too: refused.
    let args = ["+notcp", "+tries=1", "+comments", "-y", &key];
    let out = dig_transfer_with(server.port, "stream.test.", "IXFR=1", &args);
    assert!(out.contains("status: REFUSED"), "no slot free: {out}");
    assert_eq!(stat(control, "axfr_busy_global"), 2);
    // One per connection: a second transfer on `a` is refused.
    a.write_all(&framed(3, "stream.test.", 252)).unwrap();
    assert_eq!(wait_stat(control, "axfr_busy_connection", 1), 1);
    // The served version begins to be deleted (docs/schema.md, `deleting`).
    let ver = block_on(db.store.find_zone(&"stream.test.".parse().unwrap()))
        .unwrap()
        .unwrap()
        .ver;
    set_deleting(&db, vec![ver]);
    let (messages, records, soas, end) = read_transfer(&mut a);
    eprintln!(
        "aborted transfer: {messages} more messages, {records} records, {soas} SOA, end {end:?}"
    );
    assert_eq!(soas, 0, "no closing SOA: the zone did not look complete");
    assert!(end.is_some(), "the connection is closed");
    assert_eq!(wait_stat(control, "axfr_aborted", 1), 1);
    assert_eq!(
        stat(control, "tcp_io_timeouts"),
        0,
        "closed by the abort, not a timeout"
    );

    // Once the version is no longer being deleted, the whole zone comes.
    set_deleting(&db, Vec::new());
    let mut c = slow_reader(server.port);
    c.write_all(&framed(4, "stream.test.", 252)).unwrap();
    let (messages, records, soas, end) = read_transfer(&mut c);
    eprintln!("whole transfer: {messages} messages, {records} records");
    assert_eq!((soas, end), (2, None));
    assert_eq!(records, names + 4, "SOA, NS, A, every TXT, SOA");
    drop(server);
    block_on(db.drop_db());
}

/// True when `sent` (commands to the database) holds a sort on `ck`: a
/// read of a version in canonical order.
fn sorts_by_canonical_key(sent: &[u8]) -> bool {
    let sort = b"\x03sort\x00";
    (0..sent.len().saturating_sub(sort.len()))
        .filter(|&at| sent[at..].starts_with(sort))
        .any(|at| {
            let doc = &sent[at + sort.len()..(at + sort.len() + 16).min(sent.len())];
            doc.windows(3).any(|w| w == b"ck\x00")
        })
}

#[test]
fn a_transfer_from_the_database_asks_for_no_order() {
    // Sorting a whole version before its first batch held a large zone's
    // first message back for seconds; AXFR needs no order beyond the SOA
    // first and last (RFC 5936).
    let db = block_on(async {
        let db = TestZoneDb::new("xfr_unsorted").await;
        db.import(
            "big.test.",
            &format!("$ORIGIN big.test.\n{}", big_zone(300)),
            false,
        )
        .await;
        db
    });
    let tap = Relay::tapping_database();
    let server =
        ServerProcess::start_with_uri(&tap.uri(), &db.name, &["--axfr-allow", "127.0.0.1/32"]);
    let before = tap.sent().len();
    let lines = record_lines(&axfr_text(server.port, "big.test."));
    assert_eq!(lines.len(), 300 + 4, "every record, the SOA twice");
    assert!(lines[0].contains(" soa ") && lines[0] == lines[lines.len() - 1]);
    let sent = tap.sent();
    assert!(sent.len() > before, "the transfer read the database");
    assert!(
        !sorts_by_canonical_key(&sent[before..]),
        "the transfer asked the database to sort the version"
    );
    drop(server);
    block_on(db.drop_db());
}

/// The next framed message, waiting up to `limit`.
fn read_message_within(s: &mut TcpStream, limit: Duration) -> Result<Message, ErrorKind> {
    s.set_read_timeout(Some(limit)).unwrap();
    let m = read_message(s);
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    m
}

#[test]
fn the_first_message_leaves_before_the_cursor_delivers_anything() {
    // A large zone's first batch can take seconds on a database without a
    // usable index; the opening SOA, which the server knows already, must
    // not wait for it (RFC 5936 asks nothing more of the first message).
    let names = 3000;
    let db = block_on(async {
        let db = TestZoneDb::new("xfr_first").await;
        let text = format!("$ORIGIN first.test.\n{}", big_zone(names));
        db.import("first.test.", &text, false).await;
        db
    });
    let relay = Relay::to_database();
    let server =
        ServerProcess::start_with_uri(&relay.uri(), &db.name, &["--axfr-allow", "127.0.0.1/32"]);
    // The database link holds back any read of a version's nodes (a
    // filter on `zone` and `ver`): the cursor cannot deliver.
    relay.hold_requests(|r| {
        sent_commands(r, "find", "nodes")
            .iter()
            .any(|c| bson_has_key(c, "zone") && bson_has_key(c, "ver"))
    });
    let mut s = slow_reader(server.port);
    s.write_all(&framed(1, "first.test.", 252)).unwrap();
    let first = read_message_within(&mut s, Duration::from_secs(20));
    let first = first.expect("a first message while the cursor is held back");
    assert_eq!(first.metadata.response_code, ResponseCode::NoError);
    assert_eq!(soa_count(&first), 1, "the first message holds the SOA");
    assert_eq!(first.answers[0].record_type(), RecordType::SOA, "SOA first");
    // The cursor's read reached the relay and is held there (polled).
    let deadline = Instant::now() + Duration::from_secs(20);
    while relay.held() == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(relay.held(), 1, "the cursor's read was held back");
    // Let it through: the rest of the zone and the closing SOA follow.
    relay.release();
    let mut records = first.answers.len();
    loop {
        let m = read_message(&mut s).expect("the rest of the transfer");
        assert_eq!(m.metadata.response_code, ResponseCode::NoError);
        records += m.answers.len();
        if soa_count(&m) > 0 {
            break;
        }
    }
    assert_eq!(records, names + 4, "every record, the closing SOA last");
    drop(server);
    block_on(db.drop_db());
}

#[test]
fn an_ixfr_is_sent_as_its_journal_entries_are_read() {
    // Ten journaled edits of 100 TXT records each (about 13 KB each).
    let (edits, per_edit) = (10, 100);
    let zone: dns::Name = "jnl.test.".parse().unwrap();
    let db = block_on(async {
        let db = TestZoneDb::new("xfr_journal").await;
        db.import("jnl.test.", &format!("$ORIGIN jnl.test.\n{HEAD}"), false)
            .await;
        db
    });
    for e in 0..edits {
        let adds = (0..per_edit)
            .map(|i| {
                let name = format!("e{e}-{i}.jnl.test.").parse().unwrap();
                let rd = txt_rdata(0, 100).into_boxed_slice();
                dns::edit::RecordEdit::add(name, dns::RType::TXT, 300, vec![rd])
            })
            .collect();
        let change = dns::edit::ChangeSet::new(zone.clone(), adds);
        block_on(signer::edit::apply(&db.store, &change)).expect("the edit succeeds");
    }
    let want = block_on(db.store.find_zone(&zone)).unwrap().unwrap().serial;
    let relay = Relay::to_database();
    let server =
        ServerProcess::start_with_uri(&relay.uri(), &db.name, &["--axfr-allow", "127.0.0.1/32"]);
    let deadline = Instant::now() + Duration::from_secs(20);
    while soa_serial(server.port, "jnl.test.") != Some(want) {
        assert!(Instant::now() < deadline, "serial {want} never served");
        std::thread::sleep(Duration::from_millis(50));
    }
    // The journal's next batch is held back: what the first batch holds
    // must be sent without it.
    relay.hold_requests(|r| is_get_more(r, "journal"));
    let mut s = slow_reader(server.port);
    let q = ixfr_query("jnl.test.", 1);
    let mut framed_q = (q.len() as u16).to_be_bytes().to_vec();
    framed_q.extend_from_slice(&q);
    s.write_all(&framed_q).unwrap();
    let count = |m: &Message| {
        let txt = m
            .answers
            .iter()
            .filter(|r| r.record_type() == RecordType::TXT);
        (txt.count(), soa_count(m))
    };
    let first = read_message_within(&mut s, Duration::from_secs(20)).expect("a first message");
    assert_eq!(first.metadata.response_code, ResponseCode::NoError);
    let (mut txt, mut soas) = count(&first);
    while relay.held() == 0 {
        assert!(
            Instant::now() < deadline + Duration::from_secs(20),
            "the journal's next batch was never asked for"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    relay.release();
    // Our SOA, two per change, our SOA.
    let all_soas = 2 + 2 * edits;
    while soas < all_soas {
        let m = read_message(&mut s).expect("the rest of the IXFR");
        assert_eq!(m.metadata.response_code, ResponseCode::NoError);
        let (t, n) = count(&m);
        (txt, soas) = (txt + t, soas + n);
    }
    assert_eq!(
        (txt, soas),
        (edits * per_edit, all_soas),
        "every change once"
    );
    drop(server);
    block_on(db.drop_db());
}
