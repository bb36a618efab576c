//! DNS UPDATE (RFC 2136) against FerretDB and the real server, sent by
//! BIND's `nsupdate` and Knot's `knsupdate`, TSIG-signed (RFC 8945):
//! records added and deleted (answered, the median delay within 1 s), prerequisites,
//! what the server must refuse (unsigned, a key without `update`, another
//! zone, a bad MAC, names outside the zone), and a secured zone that
//! verifies after each update.
//!
//! ```text
//!  import ─► server --tsig-key "…:upd:… zones=upd.test. update"
//!  nsupdate -y / knsupdate -y ─► UPDATE over UDP or TCP ─► the tool's status
//!  ─► dig until the answer changes (median ≤ 1 s) ─► AXFR ─► both verifiers
//! ```

use hickory_proto::op::ResponseCode;
use mongodns_testkit::*;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

const ZONE: &str = "upd.test.";
const SECRET: &str = "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LTAxMjM=";
const READER: &str = "cmVhZGVyLXJlYWRlci1yZWFkZXItcmVhZGVyLTAxMjM=";

const ZONE_TEXT: &str = small_zone!("upd.test.", "www IN A 192.0.2.1\n");

/// The keys: `upd` may update upd.test., `reader` may not update.
fn key_args() -> Vec<String> {
    vec![
        "--tsig-key".into(),
        format!("hmac-sha256:upd:{SECRET} zones={ZONE} update"),
        "--tsig-key".into(),
        format!("hmac-sha256:reader:{READER}"),
        "--axfr-allow".into(),
        "127.0.0.1/32".into(),
    ]
}

fn served(tag: &str) -> (TestZoneDb, ServerProcess) {
    let db = zone_db(tag, ZONE, ZONE_TEXT);
    let args = key_args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = ServerProcess::start(&db.name, &args);
    (db, server)
}

/// Secures the zone (ECDSA P-256, NSEC).
async fn secure(db: &TestZoneDb) {
    let zone: dns::Name = ZONE.parse().unwrap();
    let options = signer::SecureOptions::ecdsa(None);
    let secured = signer::secure_zone(&db.store, &zone, &options, &signer::NoProgress);
    secured.await.expect("secure-zone");
}

/// Runs an update tool with `script` on stdin; returns (success, output).
fn run_tool(tool: &str, key: Option<&str>, script: &str) -> (bool, String) {
    let mut words = tool.split(' ');
    let mut cmd = Command::new(words.next().unwrap());
    cmd.args(words);
    if let Some(k) = key {
        cmd.args(["-y", k]);
    }
    let out = run_with_input(cmd, script)
        .unwrap_or_else(|e| panic!("{tool} is needed (bind9-dnsutils / knot-dnsutils): {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// An nsupdate script for the server on `port`: `lines`, then send.
fn script(port: u16, lines: &[&str]) -> String {
    let mut s = format!("server 127.0.0.1 {port}\nzone {ZONE}\n");
    for l in lines {
        s.push_str(l);
        s.push('\n');
    }
    s.push_str("send\n");
    s
}

fn upd_key() -> String {
    format!("hmac-sha256:upd:{SECRET}")
}

/// `nsupdate` with the `upd` key: over UDP, or TCP (`-v`) when `tcp`.
fn nsupdate(port: u16, tcp: bool, lines: &[&str]) -> (bool, String) {
    let tool = if tcp { "nsupdate -v" } else { "nsupdate" };
    run_tool(tool, Some(&upd_key()), &script(port, lines))
}

#[test]
fn nsupdate_and_knsupdate_add_and_delete_records() {
    let (db, server) = served("upd_tools");
    let port = server.port;
    assert_eq!(rcode_udp(port, "new.upd.test.", 1), ResponseCode::NXDomain);
    let mut took = Vec::new();
    // nsupdate over UDP: two records and a deep name.
    let (ok, out) = nsupdate(
        port,
        false,
        &[
            "update add new.upd.test. 300 A 192.0.2.7",
            "update add new.upd.test. 300 A 192.0.2.8",
            "update add mx.deep.upd.test. 300 MX 10 new.upd.test.",
        ],
    );
    assert!(ok, "nsupdate: {out}");
    took.push(answered_after(
        port,
        "new.upd.test.",
        1,
        ResponseCode::NoError,
        2,
    ));
    took.push(answered_after(
        port,
        "mx.deep.upd.test.",
        15,
        ResponseCode::NoError,
        1,
    ));
    // nsupdate over TCP (-v): one record, then a whole name.
    let (ok, out) = nsupdate(port, true, &["update delete new.upd.test. A 192.0.2.7"]);
    assert!(ok, "nsupdate -v: {out}");
    took.push(answered_after(
        port,
        "new.upd.test.",
        1,
        ResponseCode::NoError,
        1,
    ));
    let (ok, out) = nsupdate(port, true, &["update delete mx.deep.upd.test."]);
    assert!(ok, "nsupdate -v: {out}");
    took.push(answered_after(
        port,
        "deep.upd.test.",
        1,
        ResponseCode::NXDomain,
        0,
    ));
    // knsupdate: an RRset deleted, a TXT added.
    let kscript = format!(
        "server 127.0.0.1 {port}\nzone {ZONE}\nupdate delete www.upd.test. A\nupdate add txt.upd.test. 60 TXT \"hello world\"\nsend\n"
    );
    let (ok, out) = run_tool("knsupdate", Some(&upd_key()), &kscript);
    assert!(ok, "knsupdate: {out}");
    took.push(answered_after(
        port,
        "www.upd.test.",
        1,
        ResponseCode::NXDomain,
        0,
    ));
    took.push(answered_after(
        port,
        "txt.upd.test.",
        16,
        ResponseCode::NoError,
        1,
    ));
    println!("updates answered after {took:?}");
    assert_median_within_a_second("updates", &took);
    drop(server);
    block_on(db.drop_db());
}

#[test]
fn prerequisites_decide_and_a_failed_one_changes_nothing() {
    let (db, server) = served("upd_prereq");
    let port = server.port;
    let before = ask_udp(port, ZONE, 6, None);
    // The name must not exist: it does, so YXDOMAIN, and nothing changes.
    let (ok, out) = nsupdate(
        port,
        false,
        &[
            "prereq nxdomain www.upd.test.",
            "update add added.upd.test. 300 A 192.0.2.9",
        ],
    );
    assert!(!ok && out.contains("YXDOMAIN"), "nsupdate: {out}");
    let (ok, out) = nsupdate(
        port,
        false,
        &[
            "prereq yxrrset www.upd.test. MX",
            "update delete www.upd.test.",
        ],
    );
    assert!(!ok && out.contains("NXRRSET"), "nsupdate: {out}");
    let (ok, out) = nsupdate(
        port,
        false,
        &[
            "prereq nxrrset www.upd.test. A",
            "update delete www.upd.test.",
        ],
    );
    assert!(!ok && out.contains("YXRRSET"), "nsupdate: {out}");
    let (ok, out) = nsupdate(
        port,
        false,
        &[
            "prereq yxdomain nothing.upd.test.",
            "update delete www.upd.test.",
        ],
    );
    assert!(!ok && out.contains("NXDOMAIN"), "nsupdate: {out}");
    assert_eq!(ask_udp(port, "www.upd.test.", 1, None).answers.len(), 1);
    assert_eq!(
        lines(&ask_udp(port, ZONE, 6, None).answers),
        lines(&before.answers),
        "the serial did not move"
    );
    // Value-dependent, met: the change goes in.
    let (ok, out) = nsupdate(
        port,
        false,
        &[
            "prereq yxrrset www.upd.test. A 192.0.2.1",
            "update add www.upd.test. 300 A 192.0.2.2",
        ],
    );
    assert!(ok, "nsupdate: {out}");
    answered_after(port, "www.upd.test.", 1, ResponseCode::NoError, 2);
    drop(server);
    block_on(db.drop_db());
}

#[test]
fn the_signers_types_are_refused_in_an_unsigned_zone() {
    let (db, server) = served("update_signer_types");
    let port = server.port;
    let key = "257 3 13 mdsswUyr3DPW132mOi8V9xESWE8jTo0dxCjjnopKl+GqJxpVXckHAeF+KkxLbxILfDLUT0rAK9iUzy1L53eKGQ==";
    for (tcp, line) in [
        (false, format!("update add {ZONE} 300 DNSKEY {key}")),
        (true, format!("update add {ZONE} 300 NSEC3PARAM 1 0 0 -")),
        (false, format!("update add {ZONE} 300 CDS 0 0 0 00")),
    ] {
        let (ok, out) = nsupdate(
            port,
            tcp,
            &[&line, "update add more.upd.test. 60 A 192.0.2.8"],
        );
        assert!(!ok && out.contains("REFUSED"), "{line}: {out}");
    }
    // Nothing of those messages applied; the zone is still served as
    // unsigned: DO=1 answers come with their records and no SERVFAIL.
    answered_after(port, "upd.test.", 48, ResponseCode::NoError, 0);
    answered_after(port, "upd.test.", 51, ResponseCode::NoError, 0);
    answered_after(port, "more.upd.test.", 1, ResponseCode::NXDomain, 0);
    let m = ask_udp(port, "www.upd.test.", 1, Some((1232, true)));
    assert_eq!(m.metadata.response_code, ResponseCode::NoError);
    assert_eq!(lines(&m.answers), ["www.upd.test. 300 A 192.0.2.1"]);
    drop(server);
    block_on(db.drop_db());
}

/// nsupdate lines adding `count` A records at `big.upd.test.`, from `first`.
fn big_adds(first: usize, count: usize) -> Vec<String> {
    (first..first + count)
        .map(|i| format!("update add big.upd.test. 60 A 10.0.{}.{}", i >> 8, i & 255))
        .collect()
}

#[test]
fn an_rrset_is_capped_at_what_one_message_holds() {
    let (db, server) = served("update_rrset_cap");
    let port = server.port;
    let send = |lines: Vec<String>| {
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        nsupdate(port, true, &lines)
    };
    let (ok, out) = send(big_adds(0, 2040));
    assert!(ok, "{out}");
    // 4,080 A records would take 65,280 octets in a message: over the cap.
    let (ok, out) = send(big_adds(2040, 2040));
    assert!(!ok && out.contains("REFUSED"), "{out}");
    let count = || ask_tcp(port, "big.upd.test.", 1, None).answers.len();
    time_until("the first 2,040 records", || count() == 2040);
    // 4,079 fit (65,264 octets).
    let (ok, out) = send(big_adds(2040, 2039));
    assert!(ok, "{out}");
    time_until("4,079 records", || count() == 4079);
    drop(server);
    block_on(db.drop_db());
}

#[test]
fn unauthorised_updates_are_refused() {
    let (db, server) = served("upd_refused");
    let port = server.port;
    let add = "update add evil.upd.test. 300 A 192.0.2.66";
    // Unsigned.
    let (ok, out) = run_tool("nsupdate", None, &script(port, &[add]));
    assert!(!ok && out.contains("REFUSED"), "unsigned: {out}");
    // A key that may not update.
    let (ok, out) = run_tool(
        "nsupdate",
        Some(&format!("hmac-sha256:reader:{READER}")),
        &script(port, &[add]),
    );
    assert!(!ok && out.contains("REFUSED"), "reader key: {out}");
    // The right name, the wrong secret: NOTAUTH (BADSIG), and nsupdate says so.
    let wrong = format!("hmac-sha256:upd:{READER}");
    let (ok, out) = run_tool("nsupdate", Some(&wrong), &script(port, &[add]));
    assert!(
        !ok && (out.contains("NOTAUTH") || out.contains("BADSIG") || out.contains("tsig")),
        "bad MAC: {out}"
    );
    // A name outside the zone: NOTZONE.
    let (ok, out) = nsupdate(
        port,
        false,
        &["update add www.elsewhere.test. 300 A 192.0.2.1"],
    );
    assert!(!ok && out.contains("NOTZONE"), "outside: {out}");
    // A zone the key is not for (and this server does not serve).
    let other = format!("server 127.0.0.1 {port}\nzone other.test.\nupdate add a.other.test. 300 A 192.0.2.1\nsend\n");
    let (ok, out) = run_tool("nsupdate", Some(&upd_key()), &other);
    assert!(!ok, "another zone: {out}");
    assert_eq!(rcode_udp(port, "evil.upd.test.", 1), ResponseCode::NXDomain);
    drop(server);
    block_on(db.drop_db());
}

#[test]
fn updates_keep_a_secured_zone_valid() {
    let (db, server) = served("upd_signed");
    let port = server.port;
    block_on(secure(&db));
    let check = |what: &str| {
        verify_served_zone(port, &db.dir, ZONE);
        println!("{what}: verified");
    };
    let (ok, out) = nsupdate(
        port,
        false,
        &[
            "update add a.b.upd.test. 300 A 192.0.2.10",
            "update add www.upd.test. 300 AAAA 2001:db8::1",
        ],
    );
    assert!(ok, "nsupdate: {out}");
    answered_after(port, "a.b.upd.test.", 1, ResponseCode::NoError, 1);
    check("added");
    let (ok, out) = nsupdate(
        port,
        true,
        &[
            "update delete a.b.upd.test.",
            "update delete www.upd.test. A",
        ],
    );
    assert!(ok, "nsupdate: {out}");
    answered_after(port, "b.upd.test.", 1, ResponseCode::NXDomain, 0);
    check("deleted");
    drop(server);
    block_on(db.drop_db());
}

#[test]
fn an_update_under_dnsperf_load_is_answered_within_a_second() {
    let (db, server) = served("upd_load");
    let port = server.port;
    let queries = db.dir.join("queries.txt");
    std::fs::write(
        &queries,
        "www.upd.test. A\nns.upd.test. A\nupd.test. SOA\nnothing.upd.test. A\n",
    )
    .unwrap();
    let load = Command::new("dnsperf")
        .args([
            "-s",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "-l",
            "6",
            "-c",
            "2",
            "-Q",
            "5000",
        ])
        .arg("-d")
        .arg(&queries)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("dnsperf is needed (Debian's dnsperf)");
    std::thread::sleep(Duration::from_secs(2));
    let mut took = Vec::new();
    for i in 0..5 {
        let add = format!("update add load{i}.upd.test. 60 A 192.0.2.{}", 10 + i);
        let (ok, out) = nsupdate(port, false, &[&add]);
        assert!(ok, "nsupdate under load: {out}");
        let name = format!("load{i}.upd.test.");
        took.push(answered_after(port, &name, 1, ResponseCode::NoError, 1));
    }
    let out = load.wait_with_output().unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    let completed = report
        .lines()
        .find(|l| l.contains("Queries completed:"))
        .and_then(|l| l.split_whitespace().nth(2))
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or(0);
    assert!(completed > 10_000, "the load ran: {report}");
    println!("under {completed} queries of load, updates answered after {took:?}");
    assert_median_within_a_second("updates under load", &took);
    drop(server);
    block_on(db.drop_db());
}

#[test]
fn a_key_bound_to_address_blocks_updates_only_from_them() {
    let db = zone_db("upd_from", ZONE, ZONE_TEXT);
    let inside = format!("hmac-sha256:upd:{SECRET} zones={ZONE} from=127.0.0.0/8 update");
    let outside = format!("hmac-sha256:far:{READER} zones={ZONE} from=192.0.2.0/24 update");
    let server = ServerProcess::start(&db.name, &["--tsig-key", &inside, "--tsig-key", &outside]);
    let port = server.port;
    for tcp in [false, true] {
        let add = format!("update add from{}.upd.test. 60 A 192.0.2.5", u8::from(tcp));
        let (ok, out) = nsupdate(port, tcp, &[&add]);
        assert!(
            ok,
            "a key for 127.0.0.0/8 from 127.0.0.1 (tcp {tcp}): {out}"
        );
        let far = format!("hmac-sha256:far:{READER}");
        let tool = if tcp { "nsupdate -v" } else { "nsupdate" };
        let (ok, out) = run_tool(
            tool,
            Some(&far),
            &script(port, &["update add far.upd.test. 60 A 192.0.2.6"]),
        );
        assert!(
            !ok,
            "a key for 192.0.2.0/24 from 127.0.0.1 (tcp {tcp}): {out}"
        );
    }
    answered_after(port, "from1.upd.test.", 1, ResponseCode::NoError, 1);
    // Over UDP, whose source address proves nothing, the key's `from=`
    // is not judged: TC, nothing applied (nsupdate asks again over TCP).
    let inside_key = format!("hmac-sha256:upd:{SECRET}");
    let add = ["update add udp.upd.test. 60 A 192.0.2.7"];
    let (reply, _, _) = captured_update(port, &inside_key, &add);
    assert_ne!(reply[2] & 0x02, 0, "TC over UDP for a from= key");
    assert!(!stored(&db, "udp.upd.test."), "applied from a UDP source");
    assert_eq!(rcode_udp(port, "far.upd.test.", 1), ResponseCode::NXDomain);
    drop(server);
    block_on(db.drop_db());
}

/// Runs `nsupdate` over UDP with `key` through a socket of the test that
/// passes its datagram to the server and the reply back: the reply, the
/// signed request as it went on the wire, and whether nsupdate succeeded
/// (it asks again over TCP, of the test's port, where nothing listens).
fn captured_update(port: u16, key: &str, lines: &[&str]) -> (Vec<u8>, Vec<u8>, bool) {
    let front = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    front
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let front_port = front.local_addr().unwrap().port();
    let (text, key) = (script(front_port, lines), key.to_string());
    let tool = std::thread::spawn(move || run_tool("nsupdate", Some(&key), &text));
    let mut buf = [0u8; 4096];
    let (n, client) = front
        .recv_from(&mut buf)
        .expect("nsupdate sends its UPDATE");
    let request = buf[..n].to_vec();
    let reply = udp_exchange(port, &request, Duration::from_secs(10)).expect("a reply");
    front.send_to(&reply, client).unwrap();
    let (ok, _) = tool.join().unwrap();
    (reply, request, ok)
}

/// True when the served version of the zone holds `name` (read from the
/// database, not asked of the server).
fn stored(db: &TestZoneDb, name: &str) -> bool {
    block_on(async {
        let zone = db
            .store
            .find_zone(&ZONE.parse().unwrap())
            .await
            .unwrap()
            .unwrap();
        db.store
            .get_node(&zone, &name.parse().unwrap())
            .await
            .unwrap()
            .is_some()
    })
}

#[test]
fn a_replayed_update_is_not_applied_again() {
    let (db, server) = served("upd_replay");
    let port = server.port;
    let add = ["update add replay.upd.test. 60 A 192.0.2.9"];
    let (reply, request, ok) = captured_update(port, &upd_key(), &add);
    assert!(ok && reply[3] & 0x0F == 0, "applied");
    assert!(stored(&db, "replay.upd.test."));
    let (ok, out) = nsupdate(port, true, &["update delete replay.upd.test. A"]);
    assert!(ok, "{out}");
    assert!(!stored(&db, "replay.upd.test."));
    // The captured request again, well within its 300-s fudge: answered
    // (as the first time) or not at all, never applied again.
    let reply = udp_exchange(port, &request, Duration::from_secs(10));
    println!(
        "the replay's reply: {:?}",
        reply.as_ref().map(|r| r[3] & 0x0F)
    );
    assert!(!stored(&db, "replay.upd.test."), "the replay added it back");
    drop(server);
    block_on(db.drop_db());
}

/// The first datagram `nsupdate` sends (with the `upd` key) for `lines`,
/// caught by a socket of the test; nsupdate is then stopped.
fn signed_update_bytes(lines: &[&str]) -> Vec<u8> {
    let front = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    front
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let text = script(front.local_addr().unwrap().port(), lines);
    let mut child = Command::new("nsupdate")
        .args(["-y", &upd_key()])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("nsupdate is needed (bind9-dnsutils)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let mut buf = [0u8; 4096];
    let (n, _) = front
        .recv_from(&mut buf)
        .expect("nsupdate sends its UPDATE");
    let _ = child.kill();
    let _ = child.wait();
    buf[..n].to_vec()
}

#[test]
fn an_update_waiting_for_the_zone_lock_does_not_hold_udp_back() {
    let db = zone_db("upd_lockwait", ZONE, ZONE_TEXT);
    let mut args = key_args();
    args.extend(["--udp-max-misses".into(), "1".into()]);
    args.extend(["--query-timeout-ms".into(), "1000".into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (server, control) = start_with_control(&db.name, &args);
    let port = server.port;
    let request = signed_update_bytes(&["update add waited.upd.test. 60 A 192.0.2.8"]);
    // Another writer holds the zone lock, renewed, for the whole test.
    let zone = ZONE.parse().unwrap();
    let (lock, renewing) = block_on(async {
        let lock = db
            .store
            .lock(
                backend_mongo::lock::ZONE_LOCK,
                &zone,
                "test",
                Duration::from_secs(5),
            )
            .await
            .unwrap();
        let renewing = lock.keep_renewed();
        (lock, renewing)
    });
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    socket.send_to(&request, ("127.0.0.1", port)).unwrap();
    // Misses are asked only once the UPDATE is in the server: asked before,
    // one could take the one permit first and the UPDATE be dropped.
    let started = std::time::Instant::now();
    while stat(control, "updates_in_progress") == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the UPDATE never reached the server"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // The one UDP miss permit is the UPDATE's while it waits; past its
    // deadline the permit is free again and a miss is answered, while the
    // lock is still held.
    let started = std::time::Instant::now();
    let mut asked = 0;
    let answered = loop {
        asked += 1;
        let q = build_query(asked, &format!("miss{asked}.upd.test."), 1, None, false);
        if udp_exchange(port, &q, Duration::from_millis(500)).is_some() {
            break started.elapsed();
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no miss answered while the UPDATE waited"
        );
    };
    println!("timing: a miss answered {answered:?} after the UPDATE, {asked} asked");
    assert!(!stored(&db, "waited.upd.test."), "the lock is still held");
    assert_eq!(
        stat(control, "updates_in_progress"),
        1,
        "the UPDATE still waits for the lock"
    );
    // The lock let go, the update goes on and is applied; the client's
    // retransmission gets its reply.
    drop(renewing);
    block_on(lock.release()).unwrap();
    let started = std::time::Instant::now();
    while !stored(&db, "waited.upd.test.") {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the update was never applied"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Retransmitted as a client does: no reply while the update finishes.
    let started = std::time::Instant::now();
    let reply = loop {
        if let Some(reply) = udp_exchange(port, &request, Duration::from_secs(1)) {
            break reply;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no reply to the retransmission"
        );
    };
    assert_eq!(reply[3] & 0x0F, 0, "NOERROR");
    drop(server);
    block_on(db.drop_db());
}

/// How many whole chain reads (every node's NSEC or NSEC3, by denial key)
/// `sent` holds.
fn chain_reads(sent: &[u8]) -> usize {
    sent_commands(sent, "find", "nodes")
        .iter()
        .filter(|f| bson_has_key(f, "rrsets.NSEC3") && bson_has_key(f, "dk"))
        .count()
}

#[test]
fn a_server_taking_updates_reads_a_secured_zones_chain_at_start_not_at_the_first_update() {
    let db = zone_db("upd_warm", ZONE, ZONE_TEXT);
    block_on(secure(&db));
    let tap = Relay::tapping_database();
    let args = key_args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let log = db.dir.join("server.log");
    let server = ServerProcess::start_logging(&tap.uri(), &db.name, &args, &log);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("signer ready for updates")
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the signer of the zone the update key names was not made ready at start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(chain_reads(&tap.sent()), 1, "the chain read once, at start");
    let (ok, out) = nsupdate(
        server.port,
        true,
        &["update add warm.upd.test. 300 A 192.0.2.9"],
    );
    assert!(ok, "nsupdate: {out}");
    answered_after(server.port, "warm.upd.test.", 1, ResponseCode::NoError, 1);
    assert_eq!(
        chain_reads(&tap.sent()),
        1,
        "the first UPDATE took up the signer made at start, its chain not read again"
    );
    verify_served_zone(server.port, &db.dir, ZONE);
    drop(server);
    block_on(db.drop_db());
}
